//! A phase's command line: the flags of `microshard load|run` ([`PhaseArgs`]), YCSB's own
//! command line as users paste it translated into them ([`translate`]), and the properties they
//! make with YCSB's precedence ([`build_properties`]): every `-P` file in order, then `-p` and
//! the flag-derived properties.

use std::path::PathBuf;

use clap::Args;

use super::Phase;
use crate::runner::RunError;
use crate::workload::{Properties, prop};

/// Arguments shared by `load` and `run` (and produced by `microshard ycsb`).
#[derive(Debug, Default, Args)]
pub(crate) struct PhaseArgs {
    /// A property file (Java `.properties`, e.g. `workloads/S1`); repeatable, later files override earlier ones.
    #[arg(short = 'P', value_name = "FILE")]
    pub property_files: Vec<PathBuf>,
    /// A property override `name=value`; repeatable, applied after every file.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
    /// Print YCSB's status line to stderr every `status.interval` seconds.
    #[arg(short = 's', long = "status")]
    pub status_line: bool,
    /// Number of client tasks (`threadcount`).
    #[arg(long, value_name = "N")]
    pub threads: Option<u64>,
    /// Target throughput for the whole run in ops/s (`target`); 0 = as fast as possible.
    #[arg(long, value_name = "OPS")]
    pub target: Option<u64>,
    /// The MongoDB connection string (`mongodb.url`).
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,
    /// A label glued before the status-line timestamp (`label`).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Also write the result document (properties, server facts, measurements) to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Stop a run whose share of failed operations exceeds this fraction (0..1), checked every
    /// second after 100 operations (`microshard.maxerrorrate`).
    #[arg(long, value_name = "FRACTION")]
    pub max_error_rate: Option<String>,
    /// Set by `load --drop` ([`LoadArgs`]); `run` has no such flag.
    #[arg(skip)]
    pub drop: bool,
    /// Leave the first DURATION out of every measurement (`microshard.warmup`); with
    /// `maxexecutiontime` the run lasts warm-up + that bound.
    #[arg(long, value_name = "DURATION", value_parser = crate::props::flag_values::parse_duration)]
    pub warmup: Option<std::time::Duration>,
    /// Drive the phase with N client processes on this machine (`threadcount` is the total,
    /// split across them); their results are merged exactly into one.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub clients: u64,
    /// Internal: a client of `--clients` waits at the start barrier once connected.
    #[arg(long, hide = true)]
    pub barrier: bool,
    /// Exit 3 for a degraded result too (by default a degraded result is a caveat, exit 0).
    #[arg(long)]
    pub strict: bool,
    /// Not a flag of `load`/`run` (they drive a server that runs): refused with what to do.
    #[arg(long, hide = true)]
    pub standin: bool,
}

/// `load`'s arguments: those of every phase, and `--drop`.
#[derive(Debug, Default, Args)]
pub(crate) struct LoadArgs {
    #[command(flatten)]
    pub phase: PhaseArgs,
    /// Drop the benchmark database first, so the load does not collide with keys an earlier
    /// load left (the seed procedure drops it by hand).
    #[arg(long)]
    pub drop: bool,
}

impl LoadArgs {
    /// The phase's arguments with `--drop` in them.
    pub(crate) fn into_phase(self) -> PhaseArgs {
        PhaseArgs {
            drop: self.drop,
            ..self.phase
        }
    }
}

/// Builds the run's properties with YCSB's precedence: every `-P` file in order, then every `-p`,
/// then the flags (which name themselves as the origin in error messages).
pub(crate) fn build_properties(args: &PhaseArgs) -> Result<Properties, RunError> {
    let flags = [
        (
            prop::THREADCOUNT.name,
            args.threads.map(|n| n.to_string()),
            "--threads",
        ),
        (
            prop::TARGET.name,
            args.target.map(|n| n.to_string()),
            "--target",
        ),
        (prop::MONGODB_URL.name, args.uri.clone(), "--uri"),
        (prop::LABEL.name, args.label.clone(), "--label"),
        (
            prop::STATUS.name,
            args.status_line.then(|| "true".into()),
            "-s",
        ),
        (
            prop::WARMUP.name,
            args.warmup.map(|w| w.as_secs_f64().to_string()),
            "--warmup",
        ),
        (
            prop::MAXERRORRATE.name,
            args.max_error_rate.clone(),
            "--max-error-rate",
        ),
    ];
    Properties::from_command_line(&args.property_files, &args.properties, &flags)
        .map_err(RunError::as_bad_input)
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
fn check_binding(name: &str, what: &str, notes: &mut Vec<String>) -> Result<(), RunError> {
    match crate::db::ycsb_binding_is_async(name) {
        Some(false) => Ok(()),
        Some(true) => {
            notes.push(format!(
                "note: {what} {name} is run with microshard's MongoDB binding (the same as `mongodb`); YCSB's async driver does not work with MongoDB 5.1+"
            ));
            Ok(())
        }
        None => Err(RunError::bad_input(format!(
            "{what} {name:?}: microshard only drives MongoDB (use `mongodb`)"
        ))),
    }
}

fn value_of<'a>(
    it: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> Result<&'a String, RunError> {
    it.next()
        .ok_or_else(|| RunError::bad_input(format!("YCSB option {flag} needs a value")))
}

fn parse_int<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, RunError> {
    value
        .parse::<T>()
        .map_err(|_| RunError::bad_input(format!("YCSB option {flag} {value:?}: not an integer")))
}

/// Translates `load|run <binding> [YCSB options]` (what follows `bin/ycsb`).
pub(crate) fn translate(args: &[String]) -> Result<Translated, RunError> {
    let mut it = args.iter();
    let mut out = Translated {
        phase: leading_phase(it.next())?,
        args: PhaseArgs::default(),
        notes: Vec::new(),
    };
    match it.next() {
        Some(b) if !b.starts_with('-') => check_binding(b, "binding", &mut out.notes)?,
        Some(b) => {
            return Err(RunError::bad_input(format!(
                "ycsb: expected the binding name (`mongodb`) after the phase, got {b:?}"
            )));
        }
        None => {
            return Err(RunError::bad_input(
                "ycsb: expected the binding name (`mongodb`)",
            ));
        }
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
fn leading_phase(word: Option<&String>) -> Result<Phase, RunError> {
    match word.map(String::as_str) {
        Some("load") => Ok(Phase::Load),
        Some("run") => Ok(Phase::Run),
        Some(other) => Err(RunError::bad_input(format!(
            "ycsb: expected `load` or `run`, got {other:?}"
        ))),
        None => Err(RunError::bad_input(
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
    ) -> Result<(), RunError> {
        let p = if arg == "-load" {
            Phase::Load
        } else {
            Phase::Run
        };
        if let Some((prev, prev_phase)) = *earlier
            && prev_phase != p
        {
            return Err(RunError::bad_input(format!(
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
    ) -> Result<(), RunError> {
        let out = &mut self.args;
        match arg {
            "-P" => out.property_files.push(value_of(it, "-P")?.clone().into()),
            "-p" => {
                let kv = value_of(it, "-p")?;
                if !kv.contains('=') {
                    return Err(RunError::bad_input(format!(
                        "YCSB option -p {kv:?}: expected name=value"
                    )));
                }
                out.properties.push(kv.clone());
            }
            "-threads" => out.threads = Some(parse_int(arg, value_of(it, arg)?)?),
            "-target" => out.target = Some(parse_int(arg, value_of(it, arg)?)?),
            "-s" => out.status_line = true,
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
                return Err(RunError::bad_input(format!(
                    "YCSB option {other:?} is not supported (known: -P -p -threads -target -s -l -db -load -t; -jvm-args is ignored)"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(line: &str) -> Result<Translated, RunError> {
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
        assert!(a.status_line);
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
        assert!(tr.args.status_line && tr.notes.len() == 1, "{:?}", tr.notes);
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
            assert!(err.is_bad_input(), "{line}");
            assert!(err.to_string().contains(culprit), "{line}: {err}");
        }
    }
}
