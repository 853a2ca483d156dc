//! Several client processes for one phase (`--clients N`): when one client machine or process is
//! not enough, N ordinary `microshard load|run` processes each take a slice of the work, start
//! together at a barrier, and their result documents are merged exactly — histograms added, never
//! percentiles averaged (`docs/engine.md`, "Several clients").
//!
//! The work is split as YCSB documents for several clients: a load gives each client a disjoint
//! `insertstart`/`insertcount` slice so the union is exactly the data set; a run splits
//! `operationcount` and `threadcount`; run-phase inserts are spread with
//! `microshard.insertstride`/`insertoffset` so clients never insert the same key.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use super::{ExecuteOptions, Phase};
use crate::error::bad_input;
use crate::measure::{ClientEntry, ResultDocument};
use crate::workload::{Properties, prop};

/// The line a client prints on stderr when it is connected and waits for the start.
pub const BARRIER_READY: &str = "microshard: client ready, waiting for the start";

/// How long every client gets to connect and reach the start barrier.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(60);

/// One client's slice of the work: the properties it overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Property overrides for this client.
    pub overrides: Vec<(String, String)>,
}

/// Splits `total` as YCSB splits operations over threads: `total / n` each, the first
/// `total % n` one more.
fn split(total: u64, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| total / n + u64::from(i < total % n))
        .collect()
}

/// The slices of `clients` clients for a phase with these properties.
pub fn slices(props: &Properties, phase: Phase, clients: usize) -> anyhow::Result<Vec<Slice>> {
    let n = clients as u64;
    let threads: u64 = props
        .value(&prop::THREADCOUNT)
        .map_err(crate::error::as_bad_input)?;
    if n == 0 {
        return Err(bad_input("--clients: must be at least 1"));
    }
    if n > threads {
        return Err(bad_input(format!(
            "--clients {n}: more clients than threads (threadcount={threads} is the total, split across clients)"
        )));
    }
    let thread_split = split(threads, n);
    let mut out: Vec<Slice> = thread_split
        .iter()
        .map(|t| Slice {
            overrides: vec![(prop::THREADCOUNT.name.into(), t.to_string())],
        })
        .collect();
    match phase {
        Phase::Load => {
            let start: u64 = props
                .parse_or(prop::INSERTSTART.name, prop::INSERTSTART.default as u64)
                .map_err(crate::error::as_bad_input)?;
            let count =
                crate::workload::load_operation_count(props).map_err(crate::error::as_bad_input)?;
            let mut next = start;
            for (slice, c) in out.iter_mut().zip(split(count, n)) {
                slice
                    .overrides
                    .push((prop::INSERTSTART.name.into(), next.to_string()));
                slice
                    .overrides
                    .push((prop::INSERTCOUNT.name.into(), c.to_string()));
                next += c;
            }
        }
        Phase::Run => {
            let ops =
                crate::workload::run_operation_count(props).map_err(crate::error::as_bad_input)?;
            let ops_split = if ops == 0 {
                vec![0; out.len()]
            } else {
                split(ops, n)
            };
            for (i, (slice, o)) in out.iter_mut().zip(ops_split).enumerate() {
                slice
                    .overrides
                    .push((prop::OPERATIONCOUNT.name.into(), o.to_string()));
                slice
                    .overrides
                    .push((prop::INSERTSTRIDE.name.into(), n.to_string()));
                slice
                    .overrides
                    .push((prop::INSERTOFFSET.name.into(), i.to_string()));
            }
        }
    }
    Ok(out)
}

/// One running client.
struct Client {
    index: usize,
    child: Child,
    json: PathBuf,
}

fn write_properties(path: &Path, props: &Properties, slice: &Slice) -> anyhow::Result<()> {
    let mut map: std::collections::HashMap<String, String> = props
        .iter()
        .filter(|(k, _, _)| ![prop::EXPORTFILE.name, prop::STATUS.name].contains(k))
        .map(|(k, v, _)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in &slice.overrides {
        map.insert(k.clone(), v.clone());
    }
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    java_properties::write(&mut w, &map)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    w.flush()?;
    Ok(())
}

/// Runs the phase with `clients` client processes and returns the merged result.
pub async fn execute_clients(
    props: &Properties,
    phase: Phase,
    opts: &ExecuteOptions,
    clients: usize,
) -> anyhow::Result<ResultDocument> {
    let slices = slices(props, phase, clients)?;
    let exe = std::env::current_exe().context("cannot find the microshard binary")?;
    let dir = tempfile::Builder::new()
        .prefix("microshard-clients-")
        .tempdir()
        .context("cannot create a directory for the clients' results")?;
    let notify = opts
        .notify
        .clone()
        .unwrap_or_else(super::watch::Notify::stderr);
    if opts.drop_database && phase == Phase::Load {
        let settings = crate::db::BindingSettings::from_properties(props, 1, opts.uri.as_deref())
            .map_err(crate::error::as_bad_input)?;
        let binding = crate::db::MongoBinding::connect_with(settings)
            .await
            .map_err(crate::error::as_bad_input)?;
        binding.drop_database().await?;
    }
    let mut running: Vec<Client> = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    for (index, slice) in slices.iter().enumerate() {
        let file = dir.path().join(format!("client-{index}.properties"));
        write_properties(&file, props, slice)?;
        let json = dir.path().join(format!("client-{index}.json"));
        let mut cmd = Command::new(&exe);
        cmd.arg(match phase {
            Phase::Load => "load",
            Phase::Run => "run",
        })
        .arg("-P")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .arg("--barrier")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        if let Some(uri) = &opts.uri {
            cmd.arg("--uri").arg(uri);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start client {index}"))?;
        if let Some(stderr) = child.stderr.take() {
            let tx = ready_tx.clone();
            let notify = notify.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if line == BARRIER_READY {
                        let _ = tx.send(index);
                        continue;
                    }
                    // Findings and errors of a client, named; the banner and reports are not repeated.
                    if line.starts_with("microshard:") || line.starts_with("warning") {
                        notify.say(&format!("client {index}: {line}"));
                    }
                }
            });
        }
        running.push(Client { index, child, json });
    }
    drop(ready_tx);

    // Start barrier: every client connected, or none starts.
    let mut ready = vec![false; running.len()];
    let deadline = tokio::time::Instant::now() + BARRIER_TIMEOUT;
    while ready.iter().any(|r| !r) {
        tokio::select! {
            got = ready_rx.recv() => match got {
                Some(i) => ready[i] = true,
                None => break,
            },
            _ = tokio::time::sleep_until(deadline) => break,
            _ = opts.cancel.cancelled() => break,
        }
    }
    if let Some(missing) = ready.iter().position(|r| !r) {
        stop_all(&mut running).await;
        let host = hostname();
        anyhow::bail!(
            "client {missing} on {host} did not reach the start barrier within {} s (it exited or could not connect); every client was stopped",
            BARRIER_TIMEOUT.as_secs()
        );
    }
    for c in &mut running {
        if let Some(stdin) = c.child.stdin.as_mut() {
            let _ = stdin.write_all(b"go\n").await;
            let _ = stdin.flush().await;
        }
    }
    notify.say(&format!(
        "microshard: {} clients started together",
        running.len()
    ));

    // Wait for every client; the first one that fails stops the others.
    let mut failures: Vec<String> = Vec::new();
    let mut statuses: Vec<Option<i32>> = vec![None; running.len()];
    let mut pending: Vec<usize> = (0..running.len()).collect();
    while !pending.is_empty() {
        let mut progressed = false;
        for &i in &pending.clone() {
            if let Ok(Some(status)) = running[i].child.try_wait() {
                statuses[i] = status.code();
                pending.retain(|&p| p != i);
                progressed = true;
                if !matches!(status.code(), Some(0) | Some(3)) {
                    failures.push(format!(
                        "client {i} on {} {}",
                        hostname(),
                        match status.code() {
                            Some(c) => format!("failed (exit status {c})"),
                            None => "was killed".to_string(),
                        }
                    ));
                    for &j in &pending {
                        terminate(&running[j].child);
                    }
                }
            }
        }
        if !progressed {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = opts.cancel.cancelled() => {
                    for &j in &pending {
                        terminate(&running[j].child);
                    }
                }
            }
        }
    }

    let mut docs: Vec<(usize, ResultDocument)> = Vec::new();
    for c in &running {
        match std::fs::read_to_string(&c.json)
            .ok()
            .and_then(|t| serde_json::from_str::<ResultDocument>(&t).ok())
        {
            Some(d) => docs.push((c.index, d)),
            None if statuses[c.index].is_some_and(|s| s == 0 || s == 3) => failures.push(format!(
                "client {} on {} wrote no result document",
                c.index,
                hostname()
            )),
            None => {}
        }
    }
    if docs.is_empty() {
        anyhow::bail!("no client finished: {}", failures.join("; "));
    }
    let mut merged = merge_clients(docs)?;
    for f in &failures {
        merged.validity.invalid(f.clone());
    }
    if opts.cancel.is_cancelled() {
        merged.validity.invalid("the run was interrupted");
    }
    Ok(merged)
}

/// Merges the documents of clients that ran at the same time into one: histograms and counts
/// added, timelines added second by second, verdicts folded (each reason naming its client), and
/// a `clients` entry per client.
pub fn merge_clients(docs: Vec<(usize, ResultDocument)>) -> anyhow::Result<ResultDocument> {
    let host = hostname();
    let entries: Vec<ClientEntry> = docs
        .iter()
        .map(|(i, d)| ClientEntry::of(*i, &host, d))
        .collect();
    let mut prefixed: Vec<ResultDocument> = Vec::with_capacity(docs.len());
    for (i, mut d) in docs {
        for r in &mut d.validity.reasons {
            r.message = format!("client {i}: {}", r.message);
        }
        prefixed.push(d);
    }
    let mut merged = ResultDocument::merge_clients(&prefixed)?;
    merged.clients = entries;
    Ok(merged)
}

/// Properties each client of one run may set differently (its slice, its connection).
const PER_CLIENT: &[&str] = &[
    prop::THREADCOUNT.name,
    prop::INSERTSTART.name,
    prop::INSERTCOUNT.name,
    prop::OPERATIONCOUNT.name,
    prop::MONGODB_URL.name,
    prop::LABEL.name,
    prop::EXPORTFILE.name,
    prop::STATUS.name,
    prop::INSERTSTRIDE.name,
    prop::INSERTOFFSET.name,
];

/// Refuses documents that are not parts of one run: another phase, or a workload property
/// (anything but a client's slice) that differs, naming the file and the property.
pub fn check_mergeable(docs: &[(String, ResultDocument)]) -> Result<(), String> {
    let Some((first_name, first)) = docs.first() else {
        return Err("nothing to merge".into());
    };
    let value = |d: &ResultDocument, key: &str| {
        d.properties
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.value.clone())
    };
    for (name, d) in docs.iter().skip(1) {
        if d.phase != first.phase {
            return Err(format!(
                "{name}: phase {} differs from {first_name} ({})",
                d.phase, first.phase
            ));
        }
        let keys: std::collections::BTreeSet<&str> = first
            .properties
            .iter()
            .chain(d.properties.iter())
            .map(|p| p.key.as_str())
            .filter(|k| !PER_CLIENT.contains(k))
            .collect();
        for key in keys {
            let (a, b) = (value(first, key), value(d, key));
            if a != b {
                return Err(format!(
                    "{name}: property {key}={} differs from {first_name} ({})",
                    b.unwrap_or_else(|| "(unset)".into()),
                    a.unwrap_or_else(|| "(unset)".into())
                ));
            }
        }
    }
    Ok(())
}

fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on a client process this coordinator started and has not reaped.
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
    }
}

async fn stop_all(running: &mut [Client]) {
    for c in running.iter() {
        terminate(&c.child);
    }
    for c in running.iter_mut() {
        if tokio::time::timeout(Duration::from_secs(5), c.child.wait())
            .await
            .is_err()
        {
            let _ = c.child.kill().await;
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Origin;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let mut p = Properties::new();
        for (k, v) in pairs {
            p.set(*k, *v, Origin::Override);
        }
        p
    }

    fn get<'a>(s: &'a Slice, key: &str) -> &'a str {
        s.overrides
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    #[test]
    fn a_load_is_split_into_disjoint_slices_covering_every_key() {
        let p = props(&[("recordcount", "3001"), ("threadcount", "8")]);
        let s = slices(&p, Phase::Load, 3).unwrap_or_default();
        let ranges: Vec<(u64, u64)> = s
            .iter()
            .map(|s| {
                (
                    get(s, "insertstart").parse().unwrap_or(0),
                    get(s, "insertcount").parse().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(ranges, vec![(0, 1001), (1001, 1000), (2001, 1000)]);
        let threads: Vec<&str> = s.iter().map(|s| get(s, "threadcount")).collect();
        assert_eq!(threads, vec!["3", "3", "2"]);
    }

    #[test]
    fn a_run_splits_operations_and_spreads_inserts() {
        let p = props(&[
            ("recordcount", "100"),
            ("operationcount", "10"),
            ("threadcount", "3"),
        ]);
        let s = slices(&p, Phase::Run, 3).unwrap_or_default();
        let ops: Vec<&str> = s.iter().map(|s| get(s, "operationcount")).collect();
        assert_eq!(ops, vec!["4", "3", "3"]);
        let offsets: Vec<&str> = s
            .iter()
            .map(|s| get(s, "microshard.insertoffset"))
            .collect();
        assert_eq!(offsets, vec!["0", "1", "2"]);
        assert!(s.iter().all(|s| get(s, "microshard.insertstride") == "3"));
    }

    #[test]
    fn more_clients_than_threads_is_bad_input() {
        let p = props(&[("threadcount", "2")]);
        let e = slices(&p, Phase::Run, 3).err();
        assert!(e.is_some_and(|e| crate::error::is_bad_input(&e)));
    }
}
