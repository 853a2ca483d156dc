//! `microshard load` and `microshard run`.

use std::path::PathBuf;

use clap::Args;

use crate::error::as_bad_input;
use crate::runner::{ExecuteOptions, Phase};
use crate::workload::{Origin, Properties};

/// Arguments shared by `load` and `run` (and produced by `microshard ycsb`).
#[derive(Debug, Default, Args)]
pub struct PhaseArgs {
    /// A property file (Java `.properties`, e.g. `workloads/S1`); repeatable, later files override earlier ones.
    #[arg(short = 'P', value_name = "FILE")]
    pub property_files: Vec<PathBuf>,
    /// A property override `name=value`; repeatable, applied after every file.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    pub properties: Vec<String>,
    /// Print YCSB's status line to stderr every `status.interval` seconds.
    #[arg(short = 's', long = "status")]
    pub status: bool,
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
    /// `load` only: drop the benchmark database first, so the load does not collide with keys an
    /// earlier load left (the seed procedure drops it by hand).
    #[arg(long)]
    pub drop: bool,
}

/// Builds the run's properties with YCSB's precedence: every `-P` file in order, then every `-p`,
/// then the flags (which name themselves as the origin in error messages).
pub fn build_properties(args: &PhaseArgs) -> anyhow::Result<Properties> {
    let mut props = Properties::new();
    for file in &args.property_files {
        props.load_file(file).map_err(as_bad_input)?;
    }
    for kv in &args.properties {
        props.apply_override(kv).map_err(as_bad_input)?;
    }
    let flag = |name: &str| Origin::Flag(name.to_string());
    if let Some(n) = args.threads {
        props.set("threadcount", n.to_string(), flag("--threads"));
    }
    if let Some(n) = args.target {
        props.set("target", n.to_string(), flag("--target"));
    }
    if let Some(uri) = &args.uri {
        props.set("mongodb.url", uri.clone(), flag("--uri"));
    }
    if let Some(label) = &args.label {
        props.set("label", label.clone(), flag("--label"));
    }
    if args.status {
        props.set("status", "true", flag("-s"));
    }
    if let Some(rate) = &args.max_error_rate {
        props.set(
            "microshard.maxerrorrate",
            rate.clone(),
            flag("--max-error-rate"),
        );
    }
    Ok(props)
}

/// Runs one phase of the workload: status lines on stderr with `-s`, YCSB's report on stdout.
pub async fn run(phase: Phase, args: PhaseArgs) -> anyhow::Result<()> {
    let props = build_properties(&args)?;
    let opts = ExecuteOptions {
        cancel: crate::signals::install(),
        status: args.status,
        print_report: true,
        json: args.json.clone(),
        uri: None,
        quiet: false,
        drop_database: args.drop,
        ..Default::default()
    };
    if args.drop && phase != Phase::Load {
        return Err(crate::error::bad_input(
            "--drop: only `load` drops the database",
        ));
    }
    let doc = crate::runner::execute(&props, phase, &opts).await?;
    if opts.cancel.is_cancelled() {
        anyhow::bail!("interrupted: the report covers only the operations done before Ctrl-C");
    }
    crate::error::verdict_exit(&doc.validity, "the result")
}
