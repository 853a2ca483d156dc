//! Scenario files and the properties an experiment resolves for them: the file's values, the
//! laptop or full scale, the run bound and the user's `-p` overrides, in that order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{as_bad_input, bad_input};
use crate::workload::{Origin, Properties, prop};

/// Record count used when `--full` is not given (fits a laptop; stated in every report).
pub(crate) const LAPTOP_RECORDS: u64 = 100_000;

/// Finds a scenario file: a path as given, else `<dir>/<name>` for `workloads/` beside the
/// current directory or beside the sources.
pub(crate) fn locate(name: &str, workload_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let direct = Path::new(name);
    if direct.is_file() {
        return Ok(direct.to_path_buf());
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = workload_dir {
        dirs.push(d.to_path_buf());
    }
    dirs.push(PathBuf::from("workloads"));
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads"));
    for d in &dirs {
        let p = d.join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    let known = known_workloads(&dirs);
    let base = direct
        .file_name()
        .map_or(name.into(), |f| f.to_string_lossy().into_owned());
    let hint = crate::suggest::closest(&base, &known, |k| k.as_str())
        .map(|k| format!("did you mean {k}? "))
        .unwrap_or_default();
    Err(bad_input(format!(
        "no workload file {name:?}: {hint}known: {} (looked in {})",
        known.join(", "),
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The workload files in `dirs` (no README), sorted, each once.
fn known_workloads(dirs: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.contains('.') && !n.starts_with('.'))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Splits `-p key=value` overrides, naming the flag on error.
pub(crate) fn parse_overrides(overrides: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    overrides
        .iter()
        .map(|o| match o.split_once('=') {
            Some((k, _)) if let Some(known) = crate::workload::properties::near_miss(k.trim()) => {
                Err(bad_input(format!(
                    "-p {o}: '{}' is not a known property; did you mean '{known}'? (a misspelt name would be ignored)",
                    k.trim()
                )))
            }
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(bad_input(format!("-p {o}: expected key=value"))),
        })
        .collect()
}

/// The lines to say once per experiment for `-p` names that nothing reads
/// (`Properties::warnings`): the cells' own runs keep them in their results as `unused`.
pub(crate) fn unread_override_warnings(overrides: &[String]) -> Vec<String> {
    let mut props = crate::workload::Properties::new();
    for o in overrides {
        let _ = props.apply_override(o);
    }
    props.warnings()
}

/// The YCSB output properties (interval logs, raw data points, `exportfile`) any scenario asks
/// for: a run's own files, which an experiment's cells or points would each overwrite.
pub(crate) fn outputs_asked(scenarios: &BTreeMap<String, Properties>) -> Vec<&'static str> {
    let asks = |p: &Properties, key: &str| match p.get(key) {
        Some(v) if key == prop::HDRHISTOGRAM_FILEOUTPUT.name => v.eq_ignore_ascii_case("true"),
        found => found.is_some(),
    };
    [
        prop::HDRHISTOGRAM_FILEOUTPUT.name,
        prop::MEASUREMENT_RAW_OUTPUT_FILE.name,
        prop::EXPORTFILE.name,
    ]
    .into_iter()
    .filter(|key| scenarios.values().any(|p| asks(p, key)))
    .collect()
}

/// Refuses the YCSB outputs a workload asks for where `in_what` (a sweep, a ceiling search) would
/// have each of its runs overwrite the last one's files; nothing is created before.
pub(crate) fn refuse_outputs(
    scenarios: &BTreeMap<String, Properties>,
    in_what: &str,
) -> anyhow::Result<()> {
    let asked = outputs_asked(scenarios);
    match asked.is_empty() {
        true => Ok(()),
        false => Err(bad_input(format!(
            "{}: not available in {in_what}",
            asked.join(", ")
        ))),
    }
}

/// One `-P` workload, as `sweep`, `ceiling` and `calibrate` take it: located (bad input naming
/// `-P`), named by its file, resolved at `scaling` with `-p` applied.
pub(crate) struct OneWorkload {
    /// The file's name.
    pub name: String,
    /// Its resolved properties (the one scenario, under `name`).
    pub props: BTreeMap<String, Properties>,
    /// What scale the sizes are.
    pub scale_note: String,
    /// The `-p` overrides, parsed.
    pub overrides: Vec<(String, String)>,
}

impl OneWorkload {
    /// Resolves `workload` at `scaling` with the `-p` overrides.
    pub(crate) fn resolve(
        workload: &str,
        scaling: &Scaling,
        overrides: &[String],
    ) -> anyhow::Result<OneWorkload> {
        let path = locate(workload, None).map_err(|e| bad_input(format!("-P {workload}: {e}")))?;
        let name: String = path
            .file_name()
            .map_or(workload.into(), |n| n.to_string_lossy().into());
        let overrides = parse_overrides(overrides)?;
        let (props, scale_note) = resolve(&[(name.clone(), path)], scaling, &overrides)?;
        Ok(OneWorkload {
            name,
            props,
            scale_note,
            overrides,
        })
    }

    /// Its properties.
    pub(crate) fn base(&self) -> Properties {
        self.props.get(&self.name).cloned().unwrap_or_default()
    }
}

/// Where a compare puts the YCSB outputs its scenarios ask for, said once at its start: beside
/// each cell file, never at the path given, which every cell would overwrite.
pub(crate) fn outputs_note(scenarios: &BTreeMap<String, Properties>) -> Option<String> {
    let asked = outputs_asked(scenarios);
    (!asked.is_empty()).then(|| {
        format!(
            "{} written per cell beside its cell file (cells/TOPOLOGY/SCENARIO-rN.hdr/, .raw.txt, .export.EXT), not at the path given",
            asked.join(", ")
        )
    })
}

/// How an experiment scales and bounds its scenarios.
#[derive(Debug, Clone)]
pub(crate) struct Scaling {
    /// Use the files' record counts (the seed's sizes).
    pub full: bool,
    /// Records when not `full`.
    pub records: u64,
    /// Run-phase bound in seconds (`maxexecutiontime`).
    pub duration_s: Option<u64>,
    /// Client threads, when fixed.
    pub threads: Option<u32>,
}

/// Resolves every scenario's properties. The first scenario is the load phase; all share the
/// record count it loads, so run phases read the data that exists.
pub(crate) fn resolve(
    files: &[(String, PathBuf)],
    scaling: &Scaling,
    overrides: &[(String, String)],
) -> anyhow::Result<(BTreeMap<String, Properties>, String)> {
    let mut out = BTreeMap::new();
    let mut load_records: Option<(String, Origin)> = None;
    for (i, (name, path)) in files.iter().enumerate() {
        // Each value remembers its `FILE:LINE`, read as `microshard run -P` reads it.
        let mut props = Properties::new();
        props.load_file(path).map_err(as_bad_input)?;
        if !scaling.full {
            // The load inserts `recordcount` documents (YCSB's load count when `insertcount`
            // is not set), so a `-p recordcount=N` below means exactly N documents loaded and
            // N keys read by every run phase; an explicit `-p insertcount` still wins.
            props.set_value(&prop::RECORDCOUNT, scaling.records, flag("--records"));
            props.remove(prop::INSERTCOUNT.name);
        }
        if let (true, Some(d)) = (i > 0, scaling.duration_s) {
            props.set_value(&prop::MAXEXECUTIONTIME, d, flag("--duration"));
        }
        if let Some(t) = scaling.threads {
            props.set_value(&prop::THREADCOUNT, t, flag("--threads"));
        }
        for (k, v) in overrides {
            props.set(k.clone(), v.clone(), Origin::Override);
        }
        match (&load_records, props.get(prop::RECORDCOUNT.name)) {
            (None, Some(r)) => {
                load_records = Some((
                    r.to_string(),
                    props.origin_or_default(prop::RECORDCOUNT.name),
                ))
            }
            (Some((r, origin)), _) => props.set(prop::RECORDCOUNT.name, r.clone(), origin.clone()),
            _ => {}
        }
        check(name, &props)?;
        out.insert(name.clone(), props);
    }
    let records = load_records.map_or_else(|| "?".into(), |(r, _)| r);
    let note = if scaling.full {
        format!("full size: {records} records per the scenario files (the seed's sizes)")
    } else {
        format!(
            "laptop scale: {records} records (scenario files say more; --full for the seed's sizes){}",
            scaling
                .duration_s
                .map(|d| format!(", run phases bounded to {d}s each"))
                .unwrap_or_default()
        )
    };
    Ok((out, note))
}

/// The origin of a value an experiment flag sets.
fn flag(name: &str) -> Origin {
    Origin::Flag(name.into())
}

/// Checks resolved properties the way the runner will, naming the scenario `what` in the error
/// (its name, a `--vary` value), so that a bad `-p` or file is refused before any topology is
/// brought up.
pub(crate) fn check(what: &str, props: &Properties) -> anyhow::Result<()> {
    crate::workload::CoreWorkload::from_properties(props)
        .map_err(|e| bad_input(format!("scenario {what}: {e}")))?;
    crate::measure::MeasurementConfig::from_properties(props)
        .map_err(|e| bad_input(format!("scenario {what}: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A load scenario `S1` of 5 million inserts and a run scenario `S2` of `s2` in `dir`.
    fn scenario_files(dir: &Path, s2: &str) -> Vec<(String, PathBuf)> {
        [
            ("S1", "recordcount=5000000\ninsertproportion=1\n"),
            ("S2", s2),
        ]
        .map(|(name, text)| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            (name.to_string(), p)
        })
        .to_vec()
    }

    #[test]
    fn a_p_name_nothing_reads_is_said_once() {
        let lines = unread_override_warnings(&["foo.bar=1".into(), "recordcount=5".into()]);
        assert_eq!(
            lines,
            ["property 'foo.bar' (-p) is read by nothing in microshard: it has no effect here"]
        );
    }

    #[test]
    fn laptop_scale_bounds_and_overrides() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let files = scenario_files(
            dir.path(),
            "recordcount=5000000\noperationcount=100000000\nreadproportion=0.1\n",
        );
        let scaling = Scaling {
            full: false,
            records: 1000,
            duration_s: Some(7),
            threads: Some(4),
        };
        let ov = parse_overrides(&["readproportion=0.5".into()]).unwrap_or_default();
        let (props, note) = resolve(&files, &scaling, &ov).unwrap_or_default();
        let s1 = &props["S1"];
        assert_eq!(s1.get("recordcount"), Some("1000"));
        assert!(!s1.contains("insertcount"));
        assert!(!s1.contains("maxexecutiontime"));
        let s2 = &props["S2"];
        assert_eq!(s2.get("recordcount"), Some("1000"));
        assert_eq!(s2.get("maxexecutiontime"), Some("7"));
        assert_eq!(s2.get("threadcount"), Some("4"));
        assert_eq!(s2.get("readproportion"), Some("0.5"));
        assert_eq!(s2.get("operationcount"), Some("100000000"));
        assert!(note.contains("1000 records"), "{note}");
        let full = Scaling {
            full: true,
            ..scaling
        };
        let (props, note) = resolve(&files, &full, &[]).unwrap_or_default();
        assert_eq!(props["S2"].get("recordcount"), Some("5000000"));
        assert!(note.contains("full size"));
    }

    #[test]
    fn an_explicit_record_count_wins_over_laptop_scaling_for_load_and_runs() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let files = scenario_files(dir.path(), "recordcount=5000000\nreadproportion=1\n");
        let scaling = Scaling {
            full: false,
            records: 300,
            duration_s: None,
            threads: None,
        };
        let ov = parse_overrides(&["recordcount=200".into()]).unwrap_or_default();
        let (props, _) = resolve(&files, &scaling, &ov).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            crate::workload::load_operation_count(&props["S1"]).ok(),
            Some(200)
        );
        assert_eq!(props["S2"].get("recordcount"), Some("200"));
    }

    #[test]
    fn bad_override_is_bad_input() {
        let e = parse_overrides(&["nokey".into()]).err();
        assert!(e.is_some_and(|e| crate::exit::is_bad_input(&e)));
    }

    #[test]
    fn missing_scenario_is_bad_input() {
        let e = locate("S-does-not-exist", None).err();
        assert!(e.is_some_and(
            |e| crate::exit::is_bad_input(&e) && format!("{e}").contains("S-does-not-exist")
        ));
        let e = locate("s1", None).map(|_| ()).unwrap_err().to_string();
        assert!(
            e.contains("did you mean S1?") && e.contains("known: Q20M, S1, S2"),
            "{e}"
        );
        let e = locate("workloads/workloadz", None)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean workloada?"), "{e}");
    }
}
