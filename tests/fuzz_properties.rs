//! Property-based fuzzing of everything that reads workload properties: the `.properties` parser,
//! `-p` overrides, the typed getters, `CoreWorkload::from_properties` (plus a few generated
//! operations when it accepts the map), the measurement settings and the binding's URL handling.
//!
//! Invariants: nothing panics, and every error is one line (the CLI prints errors on one line and
//! exits 2). Case counts are small so CI runs this in seconds; a longer campaign:
//! `PROPTEST_CASES=100000 cargo test --test fuzz_properties` (see docs/reliability.md).

use std::path::Path;

use microshard::workload::{
    CoreWorkload, KNOWN_PROPERTIES, Origin, Properties, load_operation_count, run_operation_count,
    split_operations,
};
use proptest::prelude::*;

use crate::util::proptest_config as config;

fn assert_one_line(what: &str, message: &str) {
    assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{what}: error message is not one line: {message:?}"
    );
    assert!(!message.trim().is_empty(), "{what}: empty error message");
}

/// Values chosen to hit edges: signs, overflow, floats, Java spellings, whitespace, junk.
fn tricky_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("-1".to_string()),
        Just("2".to_string()),
        Just("+7".to_string()),
        Just("2147483647".to_string()),
        Just("2147483648".to_string()),
        Just("-2147483648".to_string()),
        Just("9223372036854775807".to_string()),
        Just("9223372036854775808".to_string()),
        Just("99999999999999999999999999999999999999999".to_string()),
        Just("0.5".to_string()),
        Just("1.0".to_string()),
        Just("1e308".to_string()),
        Just("1e309".to_string()),
        Just("-0.0".to_string()),
        Just("NaN".to_string()),
        Just("Infinity".to_string()),
        Just("-Infinity".to_string()),
        Just("1.5d".to_string()),
        Just(" 3 ".to_string()),
        Just("true".to_string()),
        Just("FALSE".to_string()),
        Just("yes".to_string()),
        Just("uniform".to_string()),
        Just("zipfian".to_string()),
        Just("latest".to_string()),
        Just("hotspot".to_string()),
        Just("sequential".to_string()),
        Just("exponential".to_string()),
        Just("constant".to_string()),
        Just("histogram".to_string()),
        Just("hashed".to_string()),
        Just("ordered".to_string()),
        Just("hdrhistogram".to_string()),
        Just("histogram,hdrhistogram".to_string()),
        Just("timeseries".to_string()),
        Just("raw".to_string()),
        Just("op".to_string()),
        Just("intended".to_string()),
        Just("both".to_string()),
        Just("mongodb://127.0.0.1:1/ycsb?w=1".to_string()),
        Just("mongodb://u:p@127.0.0.1:1/ycsb".to_string()),
        Just("http://x".to_string()),
        Just("no-such-file.hist".to_string()),
        (0u32..200).prop_map(|n| n.to_string()),
        (-5i64..5).prop_map(|n| n.to_string()),
        (0.0f64..1.0).prop_map(|f| f.to_string()),
        "[ -~]{0,12}",
        "\\PC{0,8}",
    ]
}

/// A property name: mostly known ones (so the workload really reads them), some random.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::sample::select(KNOWN_PROPERTIES).prop_map(|k| k.name.to_string()),
        1 => "[a-z.]{1,20}",
    ]
}

/// Keys that would make the workload precompute over billions of items (zeta sums) are kept
/// small; the fuzzer looks for panics and message shape, not for slow but valid workloads.
fn bounded(props: &mut Properties) {
    for k in [
        "recordcount",
        "insertcount",
        "insertstart",
        "operationcount",
        "fieldlength",
        "minfieldlength",
        "maxscanlength",
        "minscanlength",
        "fieldcount",
        "readbatchsize",
        "zeropadding",
    ] {
        if let Ok(Some(v)) = props.parse::<i64>(k)
            && v.abs() > 10_000
        {
            props.set(k, "10000", Origin::Override);
        }
    }
}

fn file() -> &'static Path {
    Path::new("fuzz.properties")
}

proptest! {
    #![proptest_config(config(256))]

    /// Arbitrary bytes as a `-P` file: parse or a one-line error naming the file.
    #[test]
    fn properties_parser_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut p = Properties::new();
        if let Err(e) = p.load_reader(bytes.as_slice(), file()) {
            let msg = e.to_string();
            assert_one_line("load_reader", &msg);
            prop_assert!(msg.contains("fuzz.properties"), "{msg}");
        }
    }

    /// Text shaped like properties (separators, escapes, continuations, comments).
    #[test]
    fn properties_parser_survives_structured_text(
        lines in proptest::collection::vec(
            (
                "[a-z.\\\\ ]{0,10}",
                prop_oneof![Just("="), Just(":"), Just(" "), Just("\t"), Just("")],
                prop_oneof![
                    "[ -~]{0,16}",
                    Just("\\u00e9".to_string()),
                    Just("\\uZZ".to_string()),
                    Just("\\u12".to_string()),
                    Just("\\".to_string()),
                    Just("a\\\\".to_string()),
                    Just("x\\n\\t\\r".to_string()),
                ],
                prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("\\\n"), Just("")],
                prop_oneof![4 => Just(""), 1 => Just("#"), 1 => Just("!"), 1 => Just("   ")],
            ),
            0..12,
        )
    ) {
        let text: String = lines
            .iter()
            .map(|(k, sep, v, eol, lead)| format!("{lead}{k}{sep}{v}{eol}"))
            .collect();
        let mut p = Properties::new();
        match p.load_reader(text.as_bytes(), file()) {
            Ok(()) => {
                for (k, _, origin) in p.iter() {
                    // Every value remembers a file:line origin.
                    prop_assert!(
                        matches!(origin, Origin::File { line, .. } if *line >= 1),
                        "{k}: {origin:?}"
                    );
                }
            }
            Err(e) => assert_one_line("load_reader", &e.to_string()),
        }
    }

    /// `-p` overrides: anything with a name before its first `=` is accepted (split there);
    /// anything else (no `=`, or `=value` with no name) is a one-line error naming the argument.
    #[test]
    fn overrides_split_at_the_first_equals(arg in "\\PC{0,24}") {
        let mut p = Properties::new();
        match p.apply_override(&arg) {
            Ok(()) => {
                let (k, v) = arg.split_once('=').expect("accepted only with '='");
                prop_assert_eq!(p.get(k), Some(v));
                prop_assert_eq!(p.origin(k), Some(&Origin::Override));
            }
            Err(e) => {
                let named = arg.split_once('=').is_some_and(|(k, _)| !k.trim().is_empty());
                prop_assert!(!named, "{arg:?} has a name and '=' but was refused");
                let msg = e.to_string();
                assert_one_line("apply_override", &msg);
                prop_assert!(msg.contains(arg.as_str()), "{msg}");
            }
        }
    }

    /// Every typed getter on every value: a value or a one-line error naming key and origin.
    #[test]
    fn typed_getters_never_panic(value in prop_oneof![tricky_value(), "\\PC{0,20}"], line in 1usize..1000) {
        let mut p = Properties::new();
        p.set("k", value.clone(), Origin::File { path: file().into(), line });
        let check = |r: Result<(), microshard::workload::PropertyError>| {
            if let Err(e) = r {
                let msg = e.to_string();
                assert_one_line("typed getter", &msg);
                assert!(msg.contains("'k'"), "{msg}");
                assert!(msg.contains(&format!("fuzz.properties:{line}")), "{msg}");
            }
        };
        check(p.parse::<i32>("k").map(drop));
        check(p.parse::<i64>("k").map(drop));
        check(p.parse::<u32>("k").map(drop));
        check(p.parse::<u64>("k").map(drop));
        check(p.parse::<usize>("k").map(drop));
        check(p.parse::<f64>("k").map(drop));
        check(p.parse::<bool>("k").map(drop));
        // Counts are never negative once parsed.
        if let Ok(Some(n)) = p.parse::<u64>("k") {
            prop_assert!(!value.trim_start().starts_with('-') || n == 0, "{value:?} -> {n}");
        }
    }

    /// Random property maps into the workload: it either builds (and then generates operations
    /// without panicking) or explains itself on one line.
    #[test]
    fn core_workload_from_random_maps(
        entries in proptest::collection::vec((key(), tricky_value()), 0..16),
        ops in 1usize..40,
    ) {
        let mut p = Properties::new();
        for (k, v) in &entries {
            p.set(k.clone(), v.clone(), Origin::Override);
        }
        bounded(&mut p);
        for r in [load_operation_count(&p), run_operation_count(&p)] {
            match r {
                Ok(n) => {
                    let (split, _) = split_operations(n.min(1_000_000), 4);
                    prop_assert_eq!(split.iter().sum::<u64>(), n.min(1_000_000));
                }
                Err(e) => assert_one_line("operation count", &e.to_string()),
            }
        }
        match CoreWorkload::from_properties(&p) {
            Ok(w) => {
                let mut state = w.client_state(0);
                for _ in 0..ops {
                    let op = w.next_transaction_op(&mut state);
                    state.recycle(op);
                }
                let op = w.next_load_op(&mut state);
                state.recycle(op);
            }
            Err(e) => assert_one_line("CoreWorkload::from_properties", &e.to_string()),
        }
        let lookup = |k: &str| p.get(k).map(str::to_string);
        if let Err(e) = microshard::measure::MeasurementConfig::from_lookup(&lookup) {
            assert_one_line("MeasurementConfig", &e.to_string());
        }
        if let Err(e) = microshard::db::BindingSettings::from_properties(&p, 4, None) {
            assert_one_line("BindingSettings", &e.to_string());
        }
    }

    /// Connection strings: the binding's URL handling accepts or refuses on one line.
    #[test]
    fn binding_url_handling_never_panics(
        url in prop_oneof![
            "mongodb://[ -~]{0,30}",
            "mongodb\\+srv://[ -~]{0,30}",
            "[ -~]{0,30}",
            Just("mongodb://".to_string()),
            Just("mongodb://h:99999/x?maxPoolSize=-1".to_string()),
            Just("mongodb://h/x?serverSelectionTimeoutMS=abc&w=".to_string()),
        ],
        threads in 0usize..100_000,
    ) {
        let get = |_: &str| -> Option<String> { None };
        if let Err(e) = microshard::db::BindingSettings::from_lookup(&get, threads, Some(&url)) {
            assert_one_line("BindingSettings::from_lookup", &e.to_string());
        }
    }
}

/// Regression: a file whose last line ends in a lone backslash (a continuation into nothing).
#[test]
fn trailing_continuation_is_not_a_crash() {
    let mut p = Properties::new();
    let r = p.load_reader("a=1\\".as_bytes(), file());
    if let Err(e) = r {
        assert_one_line("load_reader", &e.to_string());
    }
}

/// A password made of characters a MongoDB URI may carry unescaped in its user info (RFC 3986
/// unreserved and sub-delims; the driver only requires `: / ? # [ ] @ %` to be escaped).
fn uri_password() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._~!$&'()*+,;=-]{8,16}".prop_filter("distinct from the rest of the URI", |p| {
        !"mongodb://bench:@127.0.0.1:27017/ycsb?w=1".contains(p.as_str())
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// `redact_uri` never lets the password through, whatever characters it holds.
    #[test]
    fn redaction_hides_every_password(pw in uri_password()) {
        let uri = format!("mongodb://bench:{pw}@127.0.0.1:27017/ycsb?w=1");
        let shown = microshard::redact::redact_uri(&uri);
        prop_assert!(!shown.contains(pw.as_str()), "{uri} -> {shown}");
        let text = microshard::redact::redact_text(&format!("cannot reach {uri}: refused"));
        prop_assert!(!text.contains(pw.as_str()), "{text}");
    }

    /// The same without quote characters: passes today.
    #[test]
    fn redaction_hides_passwords_without_quotes(pw in uri_password().prop_filter("no quote", |p| !p.contains('\''))) {
        let uri = format!("mongodb://bench:{pw}@127.0.0.1:27017/ycsb?w=1");
        let shown = microshard::redact::redact_uri(&uri);
        prop_assert!(!shown.contains(pw.as_str()), "{uri} -> {shown}");
        prop_assert!(shown.contains("bench:****@127.0.0.1:27017"), "{shown}");
    }
}

/// Regression found by `redaction_hides_every_password`.
#[test]
fn redaction_of_a_password_with_a_quote() {
    let shown = microshard::redact::redact_uri("mongodb://bench:Sup3r'Secr3t@h:27017/ycsb");
    assert!(!shown.contains("Secr3t"), "{shown}");
}
