//! `microshard ceiling`: arguments and dispatch of the ceiling search (`experiment::ceiling`).

use clap::Args;

use crate::experiment::ceiling::{self, CeilingCommand, Outcome};
use crate::experiment::checked::Checked;
use crate::experiment::lab::Session;
use crate::experiment::live::LiveLab;
use crate::output;

use super::progress::ProgressDisplay;

/// Arguments of `ceiling`: its record (the servers and the workload flags are `sweep`'s, said
/// of its steps), and how the command line shows it.
#[derive(Debug, Args)]
pub(crate) struct CeilingArgs {
    #[command(flatten)]
    pub asked: CeilingCommand,
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
    let mut cfg = args.asked.checked()?;
    crate::writable::dir("--out", &cfg.results_root)?;
    cfg.servers.take_standin(false)?;
    let one = ceiling::resolve(&cfg)?;
    let specs = super::experiment_cmd::target_preflight(
        &cfg.target,
        &cfg.servers,
        args.quiet,
        args.dry_run,
    )
    .await?;
    let checked = Checked::new(cfg, specs);
    let cfg = checked.record();
    if args.dry_run {
        output::println(&plan(cfg, &one.name, &one.scale_note))?;
        return Ok(());
    }
    let mut lab = LiveLab::of(&checked);
    lab.events = progress.events();
    let mut session = Session::new(&mut lab, &cancel, &progress);
    let (dir, records) = ceiling::ceiling_with(&mut session, cfg, one).await?;
    let text = crate::report::ceiling::render_all(&records);
    output::println(text.trim_end())?;
    crate::report::ceiling_dir::write_files(&dir, &records)?;
    output::eprintln(&format!(
        "microshard: steps, finding, chart and page in {}",
        dir.path().display()
    ));
    if records
        .iter()
        .any(|r| matches!(r.outcome, Some(Outcome::Interrupted { .. }) | None))
    {
        return Err(crate::error::interrupted(format!(
            "the steps measured are kept in {}",
            dir.path().display()
        )));
    }
    super::verdicts::verdicts_exit(verdict_lines(&records), false)
}

/// Each search's caveat: a ceiling found on degraded steps or near the noise, or a lower bound
/// the client set, is a figure to quote with it (exit 0, said on stderr).
fn verdict_lines(records: &[ceiling::CeilingRecord]) -> crate::experiment::model::VerdictLines {
    let mut lines = crate::experiment::model::VerdictLines::default();
    for r in records {
        let caveat = match &r.outcome {
            Some(Outcome::Found { caveats, .. }) if !caveats.is_empty() => caveats.join("; "),
            Some(Outcome::ClientLimited { .. }) => r.finding(),
            _ => continue,
        };
        let mut v = crate::measure::validity::Validity::valid();
        v.degrade(caveat.clone());
        let what = ceiling::shown_repeat(
            &format!("the ceiling of {} on {}", r.workload, r.topology),
            r.repeat,
            records.len() as u32,
        );
        let caveat = caveat.strip_prefix("degraded: ").unwrap_or(&caveat);
        lines.push(&v, &format!("{what} is degraded: {caveat}"));
    }
    lines
}

/// The dry run's plan: what is searched, how, and at most how long it measures.
fn plan(cfg: &CeilingCommand, workload: &str, scale_note: &str) -> String {
    let steps = 1 + ceiling::search::MAX_STEPS;
    format!(
        "ceiling search: {workload} on {} at {} (intended latency)\nsizes: {scale_note}\nsteps: a closed-loop probe, then open-loop rates climbing ×1.5 from half its rate, a failing rate tried again before it counts, bisected to {} with each step longer than the last (up to 4×); {} whole search(es); at most {steps} steps per search of {} s to {} s each after a warm-up, at most {} threads",
        cfg.target.shown(),
        cfg.spec.bounds_shown(),
        cfg.spec.precision_shown(),
        cfg.repeat,
        cfg.spec.step_s,
        cfg.spec.step_s * 4,
        cfg.spec.max_threads
    )
}
