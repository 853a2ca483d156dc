//! `microshard ycsb load|run mongodb <YCSB arguments>`: YCSB's own command line, as users paste it.
//!
//! The arguments are translated into the same request `microshard load|run` builds, with YCSB's
//! precedence: all `-P` files in order, then `-p` and flag-derived properties.

use clap::Args;

use super::workload_cmd::PhaseArgs;
use crate::error::bad_input;
use crate::runner::Phase;

/// The raw YCSB arguments.
#[derive(Debug, Args)]
pub(crate) struct YcsbArgs {
    /// `load` or `run`, the binding name, then YCSB's flags (`-P`, `-p`, `-threads`, `-target`, `-s`, `-l`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// A YCSB command line translated into microshard's terms.
#[derive(Debug)]
pub(crate) struct Translated {
    /// The phase (`load`/`run`, or `-load`/`-t`).
    pub phase: Phase,
    /// The equivalent `microshard load|run` arguments.
    pub args: PhaseArgs,
    /// Notes for stderr (e.g. `mongodb-async` treated as `mongodb`).
    pub notes: Vec<String>,
}

/// Accepts YCSB's MongoDB bindings (a note for the asynchronous one, run as the synchronous
/// one); any other database is bad input naming it.
fn check_binding(name: &str, what: &str, notes: &mut Vec<String>) -> anyhow::Result<()> {
    match crate::db::ycsb_binding_is_async(name) {
        Some(false) => Ok(()),
        Some(true) => {
            notes.push(format!(
                "note: {what} {name} is run with microshard's MongoDB binding (the same as `mongodb`); YCSB's async driver does not work with MongoDB 5.1+"
            ));
            Ok(())
        }
        None => Err(bad_input(format!(
            "{what} {name:?}: microshard only drives MongoDB (use `mongodb`)"
        ))),
    }
}

fn value_of<'a>(
    it: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> anyhow::Result<&'a String> {
    it.next()
        .ok_or_else(|| bad_input(format!("YCSB option {flag} needs a value")))
}

fn parse_int<T: std::str::FromStr>(flag: &str, value: &str) -> anyhow::Result<T> {
    value
        .parse::<T>()
        .map_err(|_| bad_input(format!("YCSB option {flag} {value:?}: not an integer")))
}

/// Translates `load|run <binding> [YCSB options]` (what follows `bin/ycsb`).
pub(crate) fn translate(args: &[String]) -> anyhow::Result<Translated> {
    let mut it = args.iter();
    let mut out = Translated {
        phase: leading_phase(it.next())?,
        args: PhaseArgs::default(),
        notes: Vec::new(),
    };
    match it.next() {
        Some(b) if !b.starts_with('-') => check_binding(b, "binding", &mut out.notes)?,
        Some(b) => {
            return Err(bad_input(format!(
                "ycsb: expected the binding name (`mongodb`) after the phase, got {b:?}"
            )));
        }
        None => return Err(bad_input("ycsb: expected the binding name (`mongodb`)")),
    }
    let mut phase_flag: Option<(&str, Phase)> = None;
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-load" | "-t" => out.phase_option(arg, &mut phase_flag)?,
            _ => out.option(arg, &mut it)?,
        }
    }
    Ok(out)
}

/// The phase YCSB's first word names (`load` or `run`).
fn leading_phase(word: Option<&String>) -> anyhow::Result<Phase> {
    match word.map(String::as_str) {
        Some("load") => Ok(Phase::Load),
        Some("run") => Ok(Phase::Run),
        Some(other) => Err(bad_input(format!(
            "ycsb: expected `load` or `run`, got {other:?}"
        ))),
        None => Err(bad_input(
            "ycsb: expected `load` or `run`, then `mongodb`, then YCSB options",
        )),
    }
}

impl Translated {
    /// `-load` or `-t`: the phase, overriding the first word; the two together contradict.
    fn phase_option<'a>(
        &mut self,
        arg: &'a str,
        earlier: &mut Option<(&'a str, Phase)>,
    ) -> anyhow::Result<()> {
        let p = if arg == "-load" {
            Phase::Load
        } else {
            Phase::Run
        };
        if let Some((prev, prev_phase)) = *earlier
            && prev_phase != p
        {
            return Err(bad_input(format!(
                "YCSB options {prev} and {arg} contradict each other"
            )));
        }
        *earlier = Some((arg, p));
        self.phase = p;
        Ok(())
    }

    /// One YCSB option other than the phase flags, taking its value from `it` when it has one.
    fn option<'a>(
        &mut self,
        arg: &str,
        it: &mut impl Iterator<Item = &'a String>,
    ) -> anyhow::Result<()> {
        let out = &mut self.args;
        match arg {
            "-P" => out.property_files.push(value_of(it, "-P")?.clone().into()),
            "-p" => {
                let kv = value_of(it, "-p")?;
                if !kv.contains('=') {
                    return Err(bad_input(format!(
                        "YCSB option -p {kv:?}: expected name=value"
                    )));
                }
                out.properties.push(kv.clone());
            }
            "-threads" => out.threads = Some(parse_int(arg, value_of(it, arg)?)?),
            "-target" => out.target = Some(parse_int(arg, value_of(it, arg)?)?),
            "-s" => out.status = true,
            "-l" => out.label = Some(value_of(it, arg)?.clone()),
            "-db" => check_binding(value_of(it, arg)?, "-db", &mut self.notes)?,
            // The JVM's options mean nothing to microshard: said, then ignored.
            other if other.starts_with("-jvm-args") => {
                if !other.contains('=') {
                    let _ = it.next();
                }
                self.notes.push(format!(
                    "YCSB option {other} ignored: microshard is not a JVM program"
                ));
            }
            other => {
                return Err(bad_input(format!(
                    "YCSB option {other:?} is not supported (known: -P -p -threads -target -s -l -db -load -t; -jvm-args is ignored)"
                )));
            }
        }
        Ok(())
    }
}

/// Translates and runs a YCSB command line.
pub(crate) async fn run(args: YcsbArgs) -> anyhow::Result<()> {
    let translated = translate(&args.args)?;
    for note in &translated.notes {
        crate::output::eprintln(note);
    }
    super::workload_cmd::run(translated.phase, translated.args).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(line: &str) -> anyhow::Result<Translated> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        translate(&args)
    }

    #[test]
    fn translates_a_pasted_command_line() {
        let tr = t(
            "load mongodb -P workloads/S1 -P extra.properties -p recordcount=1000 -p mongodb.url=mongodb://h:1/ycsb?w=1 -threads 32 -target 500 -s -l lbl",
        )
        .unwrap();
        assert_eq!(tr.phase, Phase::Load);
        let a = tr.args;
        assert_eq!(a.property_files.len(), 2);
        assert_eq!(a.property_files[1].to_str(), Some("extra.properties"));
        assert_eq!(
            a.properties,
            ["recordcount=1000", "mongodb.url=mongodb://h:1/ycsb?w=1"]
        );
        assert_eq!(a.threads, Some(32));
        assert_eq!(a.target, Some(500));
        assert!(a.status);
        assert_eq!(a.label.as_deref(), Some("lbl"));
        assert!(tr.notes.is_empty());
    }

    #[test]
    fn jvm_args_are_ignored_with_a_note() {
        let tr = t("run mongodb -P workloads/S5 -jvm-args=-Xmx4g -threads 4").unwrap();
        assert_eq!(tr.args.threads, Some(4));
        assert!(
            tr.notes
                .iter()
                .any(|n| n.contains("-jvm-args=-Xmx4g ignored")),
            "{:?}",
            tr.notes
        );
        let tr = t("run mongodb -jvm-args -Xmx4g -s").unwrap();
        assert!(tr.args.status && tr.notes.len() == 1, "{:?}", tr.notes);
    }

    #[test]
    fn async_binding_is_accepted_with_a_note() {
        let tr = t("run mongodb-async -P w").unwrap();
        assert_eq!(tr.phase, Phase::Run);
        assert_eq!(tr.notes.len(), 1);
    }

    #[test]
    fn phase_flags_and_db_class() {
        let tr = t("run mongodb -db site.ycsb.db.MongoDbClient -load").unwrap();
        assert_eq!(tr.phase, Phase::Load);
        assert!(t("run mongodb -load -t").is_err());
    }

    #[test]
    fn errors_name_the_argument() {
        let cases = [
            ("load cassandra -P w", "cassandra"),
            ("load mongodb -threads many", "-threads"),
            ("load mongodb -p recordcount", "recordcount"),
            ("load mongodb -x", "-x"),
            ("load mongodb -P", "-P"),
            ("loadd mongodb", "loadd"),
            ("run mongodb -db site.ycsb.BasicDB", "BasicDB"),
        ];
        for (line, culprit) in cases {
            let err = t(line).unwrap_err();
            assert!(crate::error::is_bad_input(&err), "{line}");
            assert!(err.to_string().contains(culprit), "{line}: {err}");
        }
    }
}
