//! `microshard ceiling`: arguments and dispatch of the ceiling search (`experiment::ceiling`).

use std::path::PathBuf;

use clap::Args;

use crate::error::bad_input;
use crate::experiment::ceiling::{self, CeilingConfig, Outcome};
use crate::experiment::flags::{SearchFlags, ServerFlags, WorkloadFlags};
use crate::experiment::live::LiveLab;
use crate::experiment::sweep::SweepTarget;
use crate::output;
use crate::preflight;

use super::progress::ProgressDisplay;

/// Arguments of `ceiling`: the servers and the workload flags are `sweep`'s, said of its steps.
#[derive(Debug, Args)]
#[command(
    mut_arg("backend", |a| a.help("Backend for `--topology`: process, docker or existing")),
    mut_arg("overrides", |a| a.help("Set a workload property (repeatable)")),
    mut_arg("warmup", |a| a.help("Leave the first DURATION of every step out of its measurement (`microshard.warmup`)")),
    mut_arg("clients", |a| a.help("Drive every step with N client processes (`threadcount` split across them)")),
    mut_arg("full", |a| a.help("Use the file's record count instead of the laptop scale")),
)]
pub(crate) struct CeilingArgs {
    /// Workload file (or a name in `workloads/`).
    #[arg(short = 'P', value_name = "FILE")]
    pub workload: String,
    /// Bring this topology up for the search and tear it down after.
    #[arg(long, conflicts_with = "uri")]
    pub topology: Option<String>,
    /// Search against a server that already runs.
    #[arg(long)]
    pub uri: Option<String>,
    #[command(flatten)]
    pub search: SearchFlags,
    #[command(flatten)]
    pub servers: ServerFlags,
    #[command(flatten)]
    pub workload_flags: WorkloadFlags,
    /// Confirmations of the rate found (its spread).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Do not load: the data is already there.
    #[arg(long)]
    pub no_load: bool,
    /// Where the run directory is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Check every input, print the plan and start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs a ceiling search: prints every step and the finding; exit 3 when no server ceiling could
/// be measured (the client could not offer the rate, or Ctrl-C).
pub(crate) async fn ceiling(args: CeilingArgs) -> anyhow::Result<()> {
    let cancel = crate::signals::install();
    let progress = ProgressDisplay::auto(args.quiet);
    let (mut cfg, bin_dir) = args.config()?;
    let (name, _, scale_note) = ceiling::resolve(&cfg)?;
    let specs = super::experiment_cmd::target_preflight(
        &cfg.target,
        &args.servers,
        bin_dir.as_deref(),
        args.quiet,
        args.dry_run,
    )
    .await?;
    cfg.topology_name = cfg.target.loaded_name(&specs);
    if args.dry_run {
        output::println(&plan(&cfg, &name, &scale_note))?;
        return Ok(());
    }
    let mut lab = LiveLab::new(
        args.servers.backend,
        bin_dir,
        cfg.target.topologies(),
        specs,
    );
    lab.events = progress.events();
    lab.clients = args.workload_flags.clients();
    let (dir, record) = ceiling::ceiling_with(&mut lab, &cfg, &cancel, &progress).await?;
    let text = crate::report::ceiling::render(&record);
    std::fs::write(dir.path().join("ceiling.txt"), &text)?;
    output::println(text.trim_end())?;
    output::eprintln(&format!(
        "microshard: steps and finding in {}",
        dir.path().display()
    ));
    match record.outcome {
        Some(Outcome::Found { .. } | Outcome::NoRateMetBound { .. }) => Ok(()),
        Some(Outcome::Interrupted { .. }) => Err(crate::error::interrupted(format!(
            "the steps measured are kept in {}",
            dir.path().display()
        ))),
        _ => crate::cli::verdicts::verdicts_exit(vec![record.finding()], Vec::new(), false),
    }
}

/// The dry run's plan: what is searched, how, and at most how long it measures.
fn plan(cfg: &CeilingConfig, workload: &str, scale_note: &str) -> String {
    let steps = 1 + ceiling::search::MAX_STEPS + cfg.repeat as usize;
    format!(
        "ceiling search: {workload} on {} at {} (intended latency)\nsizes: {scale_note}\nsteps: a closed-loop probe, then open-loop rates climbing ×1.5 from half its rate and bisected to {:.0} %, then {} confirmation(s); at most {steps} steps of {} s each, at most {} threads",
        cfg.target.shown(),
        cfg.spec.bounds_shown(),
        cfg.spec.precision * 100.0,
        cfg.repeat,
        cfg.spec.step_s,
        cfg.spec.max_threads
    )
}

impl CeilingArgs {
    /// The search this command line asks for, and the binaries directory; each bad flag is one
    /// line naming it (exit 2).
    fn config(&self) -> anyhow::Result<(CeilingConfig, Option<PathBuf>)> {
        let target = match (&self.topology, &self.uri) {
            (Some(t), None) => SweepTarget::Topology(t.clone()),
            (None, Some(u)) => SweepTarget::Uri(u.clone()),
            _ => return Err(bad_input("ceiling: give --topology NAME or --uri URI")),
        };
        preflight::writable_dir("--out", &self.out)?;
        let bin_dir = self.servers.clone().checked()?.standin_to_link()?;
        let cfg = CeilingConfig {
            workload: self.workload.clone(),
            target,
            spec: self.search.spec()?,
            repeat: self.repeat,
            overrides: self.workload_flags.overrides(),
            full: self.workload_flags.full,
            records: self.workload_flags.laptop_records(),
            no_load: self.no_load,
            results_root: self.out.clone(),
            topology_name: None,
        };
        Ok((cfg, bin_dir))
    }
}
