//! YAML for Kubernetes objects, written from their JSON form: block style, keys in the order the
//! map holds them, every string double-quoted (YAML's double-quoted strings are JSON's), so the
//! text is deterministic and needs no YAML library.

use std::fmt::Write as _;

use serde_json::Value;

/// The YAML documents of `objects`, each opened by `---`.
pub(super) fn documents(objects: &[Value]) -> String {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        block(&mut out, object, 0);
    }
    out
}

/// `value` as the lines of a block at `indent` (a map's entries or a list's items).
fn block(out: &mut String, value: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let _ = write!(out, "{pad}{}:", key_text(key));
                nested(out, v, indent + 2);
            }
        }
        Value::Array(items) => {
            for item in items {
                // An item's first line follows its dash; the rest keep the item's indentation.
                let mut inner = String::new();
                block(&mut inner, item, indent + 2);
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        let _ = write!(out, "{pad}- {}", &inner[indent + 2..]);
                    }
                    _ => {
                        let _ = writeln!(out, "{pad}- {}", scalar(item));
                    }
                }
            }
        }
        _ => {
            let _ = writeln!(out, "{pad}{}", scalar(value));
        }
    }
}

/// What follows a key: a scalar on its line, or a non-empty map or list on the next lines.
fn nested(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block(out, v, indent);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block(out, v, indent);
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(v));
        }
    }
}

/// A value on one line: a scalar, or a list or map in flow style (JSON's, which YAML reads).
fn scalar(v: &Value) -> String {
    v.to_string()
}

/// A key as it stands: plain when it is a simple name (`app.kubernetes.io/managed-by`), else
/// quoted.
fn key_text(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if plain {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_lists_and_scalars_in_block_style() {
        let doc = json!({
            "kind": "Service",
            "spec": {"clusterIP": "None", "empty": {}, "ports": [{"name": "mongodb", "port": 27017}]},
            "args": ["mongod", "--port", "27017"],
            "nested": [[1, 2]],
            "odd key": true,
        });
        let text = documents(&[doc]);
        assert!(text.starts_with("---\n"), "{text}");
        assert!(text.contains("\nspec:\n  clusterIP: \"None\"\n  empty: {}\n  ports:\n    - name: \"mongodb\"\n      port: 27017\n"), "{text}");
        assert!(
            text.contains("args:\n  - \"mongod\"\n  - \"--port\"\n  - \"27017\"\n"),
            "{text}"
        );
        assert!(text.contains("\"odd key\": true\n"), "{text}");
        assert!(text.contains("nested:\n  - [1,2]\n"), "{text}");
    }
}
