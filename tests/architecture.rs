//! `docs/architecture.md` matches the code: every module path it names exists (in brace lists
//! too), every arrow of its flow diagram joins two modules that import one another, its table of
//! imports between top-level modules is the import graph of `src/` as it is (production code,
//! tests left out), and the engines it says return typed errors never mention `anyhow`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn doc() -> String {
    std::fs::read_to_string(repo().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// The top-level modules `src/lib.rs` declares.
fn top_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(repo().join("src/lib.rs")).expect("src/lib.rs");
    let decl = regex::Regex::new(r"(?m)^\s*(?:pub(?:\(crate\))?\s+)?mod\s+(\w+);").unwrap();
    decl.captures_iter(&lib).map(|c| c[1].to_string()).collect()
}

/// The file of module `path` (`["runner", "watch"]`), if it exists.
fn module_file(path: &[&str]) -> Option<PathBuf> {
    let base = repo().join("src").join(path.join("/"));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Production source of a top-level module (its `#[cfg(test)] mod tests` left out).
fn sources(module: &str) -> Vec<String> {
    let mut files: Vec<PathBuf> = module_file(&[module]).into_iter().collect();
    let dir = repo().join("src").join(module);
    files.extend(
        walkdir::WalkDir::new(&dir)
            .into_iter()
            .flatten()
            .map(walkdir::DirEntry::into_path)
            .filter(|p| p.extension().is_some_and(|x| x == "rs")),
    );
    files.sort();
    files.dedup();
    files
        .iter()
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("tests"))
        })
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("source");
            // A test module, private or shared with its siblings' tests.
            let tests = [
                "#[cfg(test)]\nmod tests",
                "#[cfg(test)]\npub(crate) mod tests",
            ];
            match tests.iter().find_map(|m| text.find(m)) {
                Some(at) => text[..at].to_string(),
                None => text,
            }
        })
        .collect()
}

/// Which top-level modules each top-level module imports (`crate::x`, `crate::{x, y}`).
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_modules();
    let single = regex::Regex::new(r"crate::(\w+)").unwrap();
    let group = regex::Regex::new(r"crate::\{([^}]*)\}").unwrap();
    let word = regex::Regex::new(r"(?:^|,)\s*(\w+)").unwrap();
    modules
        .iter()
        .map(|m| {
            let mut deps = BTreeSet::new();
            for text in sources(m) {
                deps.extend(single.captures_iter(&text).map(|c| c[1].to_string()));
                for g in group.captures_iter(&text) {
                    deps.extend(word.captures_iter(&g[1]).map(|c| c[1].to_string()));
                }
            }
            deps.retain(|d| d != m && modules.contains(d));
            (m.clone(), deps)
        })
        .collect()
}

/// Whether the module path `segments` exists: a module, or an item (`fn`, `struct`, `mod`, …) of
/// the module before it.
fn path_exists(segments: &[&str]) -> bool {
    module_file(segments).is_some()
        || module_file(&segments[..segments.len() - 1]).is_some_and(|file| {
            let item = segments[segments.len() - 1];
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let def =
                format!(r"\b(fn|struct|enum|trait|type|const|static|mod|use)\b[^;{{]*\b{item}\b");
            regex::Regex::new(&def).unwrap().is_match(&text)
        })
}

#[test]
fn every_module_path_the_architecture_page_names_exists() {
    let modules = top_modules();
    let path = regex::Regex::new(r"`((?:[a-z_]+::)*[a-z_]+)(?:::\{[^}`]*\})?`").unwrap();
    let mut missing = Vec::new();
    for c in path.captures_iter(&doc()) {
        let segments: Vec<&str> = c[1].split("::").collect();
        if !modules.contains(segments[0]) || segments.len() > 3 {
            continue; // a crate, a field, a relative path or an item deep in a module
        }
        if !path_exists(&segments) {
            missing.push(c[1].to_string());
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "named in docs/architecture.md, not in src/: {missing:?}"
    );
}

#[test]
fn every_module_path_in_a_brace_list_exists() {
    let modules = top_modules();
    let list = regex::Regex::new(r"`((?:[a-z_]+::)*[a-z_]+)::\{([^}`]*)\}`").unwrap();
    let item = regex::Regex::new(r"^[a-z_]+(?:::[a-z_]+)*$").unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for c in list.captures_iter(&doc()) {
        if !modules.contains(c[1].split("::").next().unwrap_or_default()) {
            continue;
        }
        for name in c[2].split(',').map(str::trim) {
            // A module or a function; a type's variants (`Event::{Note, …}`) are not paths.
            let name = name.split('(').next().unwrap_or_default().trim();
            if !item.is_match(name) {
                continue;
            }
            let full = format!("{}::{name}", &c[1]);
            let segments: Vec<&str> = full.split("::").collect();
            checked += 1;
            if !path_exists(&segments) {
                missing.push(full);
            }
        }
    }
    assert!(checked >= 20, "only {checked} brace-list paths found");
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "named in a brace list of docs/architecture.md, not in src/: {missing:?}"
    );
}

/// The engines, which return their own typed errors (`src/error.rs`, `docs/architecture.md`
/// "Conventions"): `anyhow` is for `cli` and `experiment`.
const TYPED_ERROR_MODULES: [&str; 5] = ["runner", "backend", "cluster", "db", "report"];

#[test]
fn the_engines_never_mention_anyhow() {
    let mut found = Vec::new();
    for module in TYPED_ERROR_MODULES {
        let mut files: Vec<PathBuf> = module_file(&[module]).into_iter().collect();
        files.extend(
            walkdir::WalkDir::new(repo().join("src").join(module))
                .into_iter()
                .flatten()
                .map(walkdir::DirEntry::into_path)
                .filter(|p| p.extension().is_some_and(|x| x == "rs")),
        );
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source");
            if text.contains("anyhow") {
                found.push(
                    file.strip_prefix(repo())
                        .unwrap_or(&file)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "anyhow in an engine, which returns its own typed errors: {found:?}"
    );
}

#[test]
fn every_arrow_of_the_flow_diagram_is_an_import() {
    let modules = top_modules();
    let graph = import_graph();
    let imports = |a: &str, b: &str| graph[a].contains(b) || graph[b].contains(a);
    let arrow = regex::Regex::new(r"(\w+)(?:\s*\([^)]*\))?\s*──►\s*(\w+)").unwrap();
    let mut drawn = 0;
    let mut wrong = Vec::new();
    for line in doc().lines() {
        // Overlapping pairs: `a ──► b ──► c` is a → b and b → c.
        let mut at = 0;
        while let Some(c) = arrow.captures_at(line, at) {
            let (a, b) = (&c[1], &c[2]);
            if modules.contains(a) && modules.contains(b) {
                drawn += 1;
                if !imports(a, b) {
                    wrong.push(format!("{a} ──► {b}"));
                }
            }
            at = c.get(2).expect("second module").start();
        }
    }
    assert!(
        drawn >= 5,
        "the diagram draws {drawn} arrows between modules"
    );
    assert!(
        wrong.is_empty(),
        "drawn, but neither imports the other: {wrong:?}"
    );
}

#[test]
fn the_table_of_imports_is_the_import_graph() {
    let text = doc();
    let section = text
        .split("## Imports between top-level modules")
        .nth(1)
        .expect("docs/architecture.md has a section \"Imports between top-level modules\"");
    let row = regex::Regex::new(r"(?m)^\| `(\w+)` \| ([^|]*) \|$").unwrap();
    let name = regex::Regex::new(r"`(\w+)`").unwrap();
    let documented: BTreeMap<String, BTreeSet<String>> = row
        .captures_iter(section)
        .map(|c| {
            let deps = name
                .captures_iter(&c[2])
                .map(|d| d[1].to_string())
                .collect();
            (c[1].to_string(), deps)
        })
        .collect();
    assert_eq!(
        documented,
        import_graph(),
        "docs/architecture.md, \"Imports between top-level modules\", against the code"
    );
}
