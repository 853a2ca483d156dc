//! The command line: the subcommands, their dispatch and how each ends (exit status).
//!
//! Each group of subcommands lives in its own file and calls into the library; the flags of
//! `load`/`run` are `runner::command_line`'s and those of `compare`/`sweep` `experiment::flags`'. No
//! benchmark, topology or server logic lives here. `main` maps errors to exit statuses
//! (see [`crate::exit`]).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) mod ceiling_cmd;
pub(crate) mod cluster_cmd;
pub(crate) mod experiment_cmd;
pub(crate) mod merge_cmd;
pub(crate) mod progress;
pub(crate) mod rerun_cmd;
pub(crate) mod resume_cmd;
pub(crate) mod standin_cmd;
pub(crate) mod verdicts;
pub(crate) mod workload_cmd;
pub(crate) mod ycsb_cmd;

/// MongoDB sharding experiments: a YCSB-compatible workload engine, micro-shard topologies
/// and comparisons against the single-node ceiling.
#[derive(Debug, Parser)]
#[command(
    name = "microshard",
    version,
    about,
    propagate_version = true,
    after_help = "Exit status: 0 done, every result valid or degraded (stderr lists degraded results and why: one on the last line, several each on a 'microshard: degraded:' line above it); 1 could not run; 2 bad input (one line names the file, line, property, flag or host); 3 a result is invalid, a cell was not run or Ctrl-C interrupted the run (the last stderr line says which and why). --strict makes a degraded result exit 3 too. Verdicts: docs/result-schema.md, \"Validity\".\n\nTerms (cell, verdict, valid/degraded/invalid, knee, laptop scale, client CPU %, client ceiling, capacity model): README.md, section \"Glossary\"."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    /// The subcommand to run.
    pub command: Command,
}

/// Every subcommand; the argument types live beside their implementation.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Load phase: insert the data set (YCSB `load`).
    Load(crate::runner::command_line::LoadArgs),
    /// Run phase: execute the workload's operation mix (YCSB `run`).
    Run(crate::runner::command_line::PhaseArgs),
    /// Accept a YCSB command line as pasted: `microshard ycsb load|run mongodb -P ... -threads 32 -s`.
    Ycsb(ycsb_cmd::YcsbArgs),
    /// Bring up a topology and leave it running.
    Up(cluster_cmd::UpArgs),
    /// Tear down a topology started by `up` (or everything microshard left behind with --all).
    Down(cluster_cmd::DownArgs),
    /// Show the topologies microshard is running.
    Status(cluster_cmd::StatusArgs),
    /// Tell which backends (process, docker, existing) are usable here, and why not.
    Doctor(cluster_cmd::DoctorArgs),
    /// Run scenarios against topologies and compare them with the single-node ceiling.
    Compare(Box<experiment_cmd::CompareArgs>),
    /// Sweep thread counts to find the knee.
    Sweep(experiment_cmd::SweepArgs),
    /// Find a topology's ceiling: the highest rate it sustains with intended latency within a bound (`--slo p99=10ms`).
    Ceiling(ceiling_cmd::CeilingArgs),
    /// Print the comparison table of a finished (or interrupted) experiment.
    Report(experiment_cmd::ReportArgs),
    /// Compare two experiments cell by cell.
    Diff(experiment_cmd::DiffArgs),
    /// Measure an experiment again from its own record and say whether it reproduced.
    Rerun(rerun_cmd::RerunArgs),
    /// Measure this client's own ceiling against a stand-in server on this machine (not kept when measured on a busy host).
    Calibrate(experiment_cmd::CalibrateArgs),
    /// The whole compare pipeline on stand-in servers (no MongoDB needed); figures are stand-in figures.
    Demo(experiment_cmd::DemoArgs),
    /// Run the stand-in MongoDB-wire-protocol server as `mongod` or `mongos` (for tests and demos).
    Standin(standin_cmd::StandinArgs),
    /// Merge the result documents of clients that ran at the same time into one (histograms added, never percentiles averaged).
    Merge(merge_cmd::MergeArgs),
}

/// Parses the command line, runs the command and maps the outcome to an exit status.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Invoked as `mongod` or `mongos` (a symlink or a copy in a container image): be the stand-in.
    if let Some(role) = standin_cmd::role_from_argv0(args.first()) {
        let rest: Vec<String> = args
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return finish(block_on(standin_cmd::run_as(role, rest)));
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    finish(block_on(dispatch(cli.command)))
}

/// Help and version print as clap renders them; a wrong command line becomes one line on stderr
/// (the error and clap's tips, naming the flag) with exit status 2, like every other bad input.
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if !err.use_stderr() || err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = err.print();
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    }
    let text = err.render().to_string();
    let skipped = |l: &str| l.starts_with("Usage:") || l.starts_with("For more information");
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !skipped(l))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    let message = match parts.is_empty() {
        true => "invalid command line".to_string(),
        false => parts.join("; "),
    };
    crate::output::eprintln(&format!("microshard: error: {message} (see --help)"));
    ExitCode::from(2)
}

async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Load(args) => {
            workload_cmd::run(crate::runner::Phase::Load, args.into_phase()).await
        }
        Command::Run(args) => workload_cmd::run(crate::runner::Phase::Run, args).await,
        Command::Ycsb(args) => ycsb_cmd::run(args).await,
        Command::Up(args) => cluster_cmd::up(args).await,
        Command::Down(args) => cluster_cmd::down(args).await,
        Command::Status(args) => cluster_cmd::status(args).await,
        Command::Doctor(args) => cluster_cmd::doctor(args).await,
        Command::Compare(args) => experiment_cmd::compare(*args).await,
        Command::Sweep(args) => experiment_cmd::sweep(args).await,
        Command::Ceiling(args) => ceiling_cmd::ceiling(args).await,
        Command::Report(args) => experiment_cmd::report(args).await,
        Command::Diff(args) => experiment_cmd::diff(args).await,
        Command::Rerun(args) => rerun_cmd::rerun(args).await,
        Command::Calibrate(args) => experiment_cmd::calibrate(args).await,
        Command::Demo(args) => experiment_cmd::demo(args).await,
        Command::Standin(args) => standin_cmd::run(args).await,
        Command::Merge(args) => merge_cmd::merge(args).await,
    }
}

fn block_on(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    runtime.block_on(fut)
}

/// Maps the outcome to an exit status. A write to a closed pipe (`microshard report DIR | head -1`)
/// is a normal end: the reader has what it wanted (see [`crate::output`]).
fn finish(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if crate::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let message = crate::redact::redact_text(&format!("{err:#}"));
            let status = crate::exit::status(&err);
            // Exit 3 is not an error of the tool: the run finished and its verdict says why
            // its figures must not be published as normal results (invalid, not run, or
            // degraded under --strict; README, "Results you can trust"); Ctrl-C says so itself.
            let what = match status {
                3 if crate::exit::is_interrupted(&err) => "",
                3 => "verdict: ",
                _ => "error: ",
            };
            crate::output::eprintln(&format!("microshard: {what}{}", message.replace('\n', " ")));
            ExitCode::from(status)
        }
    }
}
