//! `sweep --resume DIR`: a sweep cut short (Ctrl-C, a dead member) measures what it has not
//! measured yet — the curves not stored, and the thread counts a curve cut short did not reach —
//! keeping every point it has. The request is stored with the sweep
//! (`sweep-request.json`, secrets redacted); the stored request wins over the flags given again,
//! except the servers' binaries and ports, a URI and `-p` (to restore a redacted secret).

use super::{
    ExperimentDir, Lab, Resolved, Session, SweepCommand, SweepTarget, Swept, run_sweep,
    sweep_label, variant_label,
};
use crate::error::bad_input;
use crate::experiment::results::{read_json, redact_overrides, write_json_atomic};

/// The file holding what a sweep was asked to do.
pub(crate) const REQUEST_FILE: &str = "sweep-request.json";

/// Stores the request in a new sweep's directory: the workload file's absolute path (so a
/// resume from another directory finds it), secrets in `-p` values and the URI redacted.
pub(super) fn store_request(dir: &ExperimentDir, cfg: &SweepCommand) -> anyhow::Result<()> {
    let mut stored = cfg.clone();
    let given = std::path::Path::new(cfg.workload());
    if given.is_file()
        && let Ok(abs) = std::path::absolute(given)
    {
        stored.workload = Some(abs.display().to_string());
    }
    if let SweepTarget::Uri(u) = &mut stored.target {
        *u = crate::redact::redact_uri(u);
    }
    redact_overrides(&mut stored.workload_flags.overrides);
    write_json_atomic(&dir.path().join(REQUEST_FILE), &stored)?;
    Ok(())
}

/// Reads a sweep's directory back for `--resume` (its schema and writability checked by the
/// caller): the directory and its request with the flags `given` again applied (the servers'
/// binaries, settled by the caller, and ports, `--uri`, `-p` replacing the stored value of its
/// key). A compare experiment, or a sweep an older microshard wrote without its request, is
/// refused with what to do instead.
pub(crate) fn reopen(
    path: &std::path::Path,
    given: &SweepCommand,
) -> anyhow::Result<(ExperimentDir, SweepCommand)> {
    let shown = path.display();
    let dir = ExperimentDir::open(path).map_err(|e| bad_input(format!("--resume {shown}: {e}")))?;
    if !dir.is_sweep() {
        return Err(bad_input(format!(
            "--resume {shown}: this is a compare experiment, not a sweep; resume it with `microshard compare --resume {shown}`"
        )));
    }
    let mut cfg = read_request(&dir).map_err(|_| {
        bad_input(format!(
            "--resume {shown}: this sweep was written by a microshard that did not store its request; run the sweep again"
        ))
    })?;
    let servers = &mut cfg.servers;
    servers.bin_dir = given.servers.bin_dir.clone().or(servers.bin_dir.take());
    servers.base_port = given.servers.base_port.or(servers.base_port);
    if let Some(uri) = &given.uri {
        cfg.target = SweepTarget::Uri(uri.clone());
    }
    let (flags, again) = (&mut cfg.workload_flags, &given.workload_flags);
    flags.warmup_s = again.warmup_s.or(flags.warmup_s);
    flags.wait_quiet_s = again.wait_quiet_s.or(flags.wait_quiet_s);
    let overrides = &mut flags.overrides;
    for o in again.overrides.iter().cloned() {
        let key = o.split_once('=').map(|(k, _)| k.to_string());
        overrides.retain(|x| x.split_once('=').map(|(k, _)| k.to_string()) != key);
        overrides.push(o);
    }
    Ok((dir, cfg))
}

/// A sweep's stored request. Those written before the request was `sweep`'s command line kept
/// the servers' binaries, arguments and port apart, under `servers`: read as the flat record.
fn read_request(dir: &ExperimentDir) -> anyhow::Result<SweepCommand> {
    let mut stored: serde_json::Value = read_json(&dir.path().join(REQUEST_FILE))?;
    let earlier = stored.as_object_mut().and_then(|o| o.remove("servers"));
    if let Some(serde_json::Value::Object(servers)) = earlier {
        for (key, value) in servers {
            stored[key.replace("mongod_args", "extra_mongod_args")] = value;
        }
    }
    Ok(serde_json::from_value(stored)?)
}

/// The curves of a stored sweep still to measure: not stored, or stored without every thread
/// count. 0 means there is nothing to resume.
pub(crate) fn remaining_curves(
    dir: &ExperimentDir,
    cfg: &SweepCommand,
    resolved: &Resolved,
) -> usize {
    let where_ = cfg.where_();
    resolved
        .variants
        .iter()
        .filter(|(v, _)| {
            let file = sweep_label(&variant_label(&where_, cfg.vary.as_ref(), v, cfg.repeat));
            dir.read_sweep(&file)
                .is_none_or(|s| s.points.len() != cfg.threads.len())
        })
        .count()
}

/// Resumes a sweep read back by [`reopen`]: one more session in its record, the data loaded
/// again on a topology brought up again (a server at `--uri` keeps what the first invocation
/// loaded once a curve was stored), then every curve not finished.
pub(crate) async fn resume_with<L: Lab>(
    s: &mut Session<'_, L>,
    cfg: &SweepCommand,
    resolved: &Resolved,
    dir: ExperimentDir,
) -> anyhow::Result<Swept> {
    let progress = s.progress;
    let mut config = dir.config()?;
    if config.sessions.is_empty() {
        config.begin_session(false, Default::default());
    }
    let session = config.begin_session(true, Default::default());
    dir.write_config(&config)?;
    progress.line(&format!(
        "microshard: resuming {} as session {session}: {} of {} curve(s) to measure (its stored request wins over other flags)",
        dir.path().display(),
        remaining_curves(&dir, cfg, resolved),
        resolved.variants.len()
    ));
    let any_stored = !dir.sweeps().is_empty();
    let load = match &cfg.target {
        SweepTarget::Topology(_) => !cfg.no_load,
        SweepTarget::Uri(_) => !cfg.no_load && !any_stored,
    };
    if !load && !cfg.no_load {
        progress.line("microshard: not loading again: the server at --uri holds what the first invocation loaded");
    }
    run_sweep(s, cfg, resolved, (dir, config, load)).await
}

/// A stored sweep's curves as its outcome (what `sweep` prints), for a sweep with nothing left
/// to resume.
pub(crate) fn stored_outcome(
    dir: &ExperimentDir,
    cfg: &SweepCommand,
    resolved: &Resolved,
) -> super::SweepOutcome {
    let variants: Vec<super::Variant> = resolved.variants.iter().map(|(v, _)| v.clone()).collect();
    super::SweepOutcome {
        property: cfg.vary.as_ref().map(|v| v.property.clone()),
        threads: cfg.threads.clone(),
        curves: super::stored_curves(
            dir,
            &variants,
            (cfg.vary.as_ref(), cfg.repeat),
            &cfg.where_(),
            sweep_label,
        ),
        topology: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Curve;
    use super::*;
    use crate::experiment::lab::{Deployment, Measured};
    use crate::experiment::progress::Progress;
    use crate::runner::Phase;
    use crate::workload::Properties;
    use tokio_util::sync::CancellationToken;

    /// [`Curve`], with Ctrl-C pressed while the run phase numbered `cut_at` (1-based) runs.
    struct Cutting {
        curve: Curve,
        runs: usize,
        cut_at: usize,
        cancel: CancellationToken,
    }

    impl Lab for Cutting {
        type Handle = ();
        async fn up(&mut self, t: &str, c: &CancellationToken) -> anyhow::Result<(Deployment, ())> {
            self.curve.up(t, c).await
        }
        async fn run(
            &mut self,
            d: &Deployment,
            props: &Properties,
            phase: Phase,
            c: &CancellationToken,
        ) -> anyhow::Result<Measured> {
            if phase == Phase::Run {
                self.runs += 1;
                if self.runs == self.cut_at {
                    self.cancel.cancel();
                }
            }
            self.curve.run(d, props, phase, c).await
        }
        async fn down(&mut self, h: ()) -> anyhow::Result<()> {
            self.curve.down(h).await
        }
        fn collects_server_metrics(&self) -> bool {
            false
        }
    }

    fn lab(cut_at: usize, cancel: &CancellationToken) -> Cutting {
        Cutting {
            curve: Curve { loads: 0, downs: 0 },
            runs: 0,
            cut_at,
            cancel: cancel.clone(),
        }
    }

    #[tokio::test]
    async fn a_sweep_cut_short_resumes_keeping_every_point_it_measured() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let wl = tmp.path().join("W");
        std::fs::write(&wl, "recordcount=10\n")?;
        let results = tmp.path().join("results");
        let cfg = super::super::tests::command(&[
            &format!("-P{}", wl.display()),
            "--threads=1,2,4,8",
            "--topology=single",
            "--duration=1s",
            "-pmongodb.url=mongodb://alice:s3cret@localhost:1/ycsb",
            "--records=10",
            &format!("--out={}", results.display()),
        ])
        .checked()?;
        // Ctrl-C during the third point: the first two are kept, the third is not.
        let cancel = CancellationToken::new();
        let mut first = lab(3, &cancel);
        let resolved = super::super::resolve(&cfg)?;
        let silent = Progress::silent();
        let mut session = Session::new(&mut first, &cancel, &silent);
        let swept = super::super::sweep_with(&mut session, &cfg, &resolved).await?;
        assert_eq!(swept.outcome.curves[0].1.points.len(), 2);
        let said = swept.interrupted().to_string();
        assert!(
            said.contains("after 0 of 1 curves")
                && said.contains(&format!(
                    "microshard sweep --resume {}",
                    swept.dir.path().display()
                )),
            "{said}"
        );
        let stored = std::fs::read_to_string(swept.dir.path().join(REQUEST_FILE))?;
        assert!(!stored.contains("s3cret"), "{stored}");

        // The resume measures the two thread counts left, on data loaded again.
        let given = super::super::tests::command(&["--resume=x"]);
        let (dir, again) = reopen(swept.dir.path(), &given)?;
        let resolved = super::super::resolve(&again)?;
        assert_eq!(remaining_curves(&dir, &again, &resolved), 1);
        let cancel = CancellationToken::new();
        let mut second = lab(0, &cancel);
        let mut session = Session::new(&mut second, &cancel, &silent);
        let resumed = resume_with(&mut session, &again, &resolved, dir).await?;
        assert_eq!(
            (second.runs, second.curve.loads, second.curve.downs),
            (2, 1, 1)
        );
        let curve = &resumed.outcome.curves[0].1;
        let threads: Vec<u32> = curve.points.iter().map(|p| p.threads).collect();
        assert_eq!(threads, [1, 2, 4, 8]);
        assert_eq!(curve.max_threads, Some(8));
        assert_eq!(
            remaining_curves(&resumed.dir, &again, &resolved),
            0,
            "nothing left to resume"
        );
        let sessions = resumed.dir.config()?.sessions;
        assert_eq!(sessions.len(), 2);
        assert!(sessions[1].resumed);

        // A compare experiment is not resumed as a sweep.
        let mut compare = resumed.dir.config()?;
        compare.command.name = "compare".into();
        resumed.dir.write_config(&compare)?;
        let refused = reopen(resumed.dir.path(), &given).unwrap_err().to_string();
        assert!(refused.contains("microshard compare --resume"), "{refused}");
        Ok(())
    }

    #[test]
    fn a_request_stored_before_it_was_the_command_line_still_reads() -> anyhow::Result<()> {
        // `sweep-request.json` as microshard wrote it before `SweepCommand`: the servers apart.
        let tmp = tempfile::tempdir()?;
        let dir = ExperimentDir::create(tmp.path(), "sweep-S5")?;
        let text = include_str!("../../../tests/data/sweep-request-servers-apart.json");
        std::fs::write(dir.path().join(REQUEST_FILE), text)?;
        let cfg = read_request(&dir)?;
        assert!(matches!(&cfg.target, SweepTarget::Topology(t) if t == "single"));
        assert_eq!(cfg.threads, [1, 2]);
        assert_eq!(cfg.duration, std::time::Duration::from_secs(1));
        assert_eq!(cfg.workload_flags.laptop_records(), 200);
        assert_eq!(cfg.workload_flags.clients(), 1);
        let bin_dir = cfg
            .servers
            .bin_dir
            .as_ref()
            .map(|d| d.ends_with("standin-bin"));
        assert_eq!(bin_dir, Some(true));
        assert_eq!(cfg.servers.backend, crate::topology::BackendKind::Process);
        assert_eq!(cfg.servers.mongod_args, ["--workers=2"]);
        assert_eq!(cfg.servers.base_port, Some(31_000));
        assert_eq!(cfg.workload_flags.overrides, ["recordcount=200"]);
        assert_eq!(cfg.results_root, std::path::Path::new("/tmp/sw-old2"));
        Ok(())
    }
}
