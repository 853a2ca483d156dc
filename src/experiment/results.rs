//! The results directory: one directory per experiment, its configuration written first and
//! every cell written the moment it finishes (temp file + rename), so nothing measured is lost.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::model::{
    CELL_SCHEMA, CONFIG_SCHEMA, CellFile, CellId, ExperimentConfig, NotRun, SweepFile,
};
use crate::error::bad_input;

/// File name of the experiment's configuration inside its directory.
pub(crate) const CONFIG_FILE: &str = "experiment.json";
/// Sub-directory holding one JSON file per measured cell.
pub(crate) const CELLS_DIR: &str = "cells";
/// Sub-directory holding thread sweeps.
pub(crate) const SWEEPS_DIR: &str = "sweeps";
/// Where `compare --ceiling` keeps each cell's search: `ceilings/<topology>/<scenario>.json`
/// and its steps in `ceilings/<topology>/<scenario>-steps/NN.json`.
pub(crate) const CEILINGS_DIR: &str = "ceilings";
/// The cells not run because their topology had a dead member (`docs/result-schema.md`).
pub(crate) const NOT_RUN_FILE: &str = "not-run.json";
/// Beside a topology's cells: earlier attempts set aside by `--resume --remeasure-invalid`.
pub(crate) const EARLIER_DIR: &str = "earlier";

/// Failures reading or writing a results directory.
#[derive(Debug, Error)]
pub enum ResultsError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A file exists but is not what microshard wrote.
    #[error("{path}: not a microshard result file: {message}")]
    Parse {
        /// The file concerned.
        path: PathBuf,
        /// What was wrong with it.
        message: String,
    },
    /// The directory has no experiment configuration.
    #[error("{0}: not an experiment directory (no {CONFIG_FILE})")]
    NotAnExperiment(PathBuf),
    /// A name that is neither a directory nor an experiment under the results root.
    #[error("{}: no such experiment under {}/{}", given.display(), root.display(), known_names(known, name))]
    NoSuchExperiment {
        /// What was asked for, as given.
        given: PathBuf,
        /// Its last part: the name looked for.
        name: String,
        /// Where experiments were looked for.
        root: PathBuf,
        /// The experiment names found there, newest first.
        known: Vec<String>,
    },
}

/// The tail of a `NoSuchExperiment` message: a "did you mean" and what exists.
fn known_names(known: &[String], name: &str) -> String {
    if known.is_empty() {
        return " (it holds no experiment yet)".into();
    }
    let guess = crate::suggest::closest(name, known, |k| k.as_str())
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    let names: Vec<&str> = known
        .iter()
        .map(String::as_str)
        .filter(|k| seen.insert(*k))
        .collect();
    format!(
        " ({guess}there: {}, or `latest`, `previous`, or a directory)",
        names.join(", ")
    )
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A directory under `results/` holding one experiment; the unit that `report`, `diff` and `--resume` read.
#[derive(Debug, Clone)]
pub struct ExperimentDir {
    path: PathBuf,
}

impl ExperimentDir {
    /// Creates `<root>/<YYYY-MM-DD-HHMMSS>-<name>` (with a numeric suffix if it already exists).
    pub fn create(root: &Path, name: &str) -> Result<ExperimentDir, ResultsError> {
        fs::create_dir_all(root).map_err(io_err(root))?;
        let stamp = chrono::Utc::now().format("%Y-%m-%d-%H%M%S");
        let base = format!("{stamp}-{}", keep_chars(name, "-_"));
        for attempt in 0..1000u32 {
            let candidate = match attempt {
                0 => root.join(&base),
                n => root.join(format!("{base}.{n}")),
            };
            match fs::create_dir(&candidate) {
                Ok(()) => {
                    let dir = ExperimentDir { path: candidate };
                    let cells = dir.path.join(CELLS_DIR);
                    fs::create_dir_all(&cells).map_err(io_err(&cells))?;
                    point_latest_at(root, &dir.path);
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&candidate)(e)),
            }
        }
        Err(ResultsError::Io {
            path: root.join(base),
            source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, "too many runs"),
        })
    }

    /// Opens an existing experiment directory (it must hold a configuration).
    pub(crate) fn open(path: &Path) -> Result<ExperimentDir, ResultsError> {
        if !path.join(CONFIG_FILE).is_file() {
            return Err(ResultsError::NotAnExperiment(path.to_path_buf()));
        }
        Ok(ExperimentDir {
            path: path.to_path_buf(),
        })
    }

    /// A standalone search's run directory (`ceiling`: no `experiment.json`), for writing its
    /// report files beside its records.
    pub(crate) fn of_search(path: &Path) -> ExperimentDir {
        ExperimentDir {
            path: path.to_path_buf(),
        }
    }

    /// Finds the experiment a user named (`docs/result-schema.md` "Naming an experiment"): its
    /// directory; `latest` or `previous` (the newest and the one before it) under a results
    /// root; or an experiment's name (`compare`, `sweep-S2`), meaning the newest directory
    /// `<stamp>-<name>`. A bare word is looked up under `results/`, `ROOT/word` under `ROOT`.
    pub fn find(given: &Path) -> Result<ExperimentDir, ResultsError> {
        if given.is_dir() {
            return Self::open(given);
        }
        let root = match given.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("results"),
        };
        let newest_first = experiments_under(&root);
        let name = given
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into());
        let found = match name.as_str() {
            "latest" => newest_first.first(),
            "previous" => newest_first.get(1),
            _ => newest_first.iter().find(|d| experiment_name(d) == name),
        };
        match found {
            Some(dir) => Self::open(dir),
            None => Err(ResultsError::NoSuchExperiment {
                given: given.to_path_buf(),
                name,
                root,
                known: newest_first.iter().map(|d| experiment_name(d)).collect(),
            }),
        }
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the configuration (before anything is measured).
    ///
    /// Property values are redacted on the way to disk (passwords, credentials in URIs); the
    /// in-memory configuration keeps them for the runs.
    pub fn write_config(&self, config: &ExperimentConfig) -> Result<(), ResultsError> {
        let mut stored = config.clone();
        for props in stored.properties.values_mut() {
            *props = crate::workload::Properties::from_pairs(
                props.iter().map(|(k, v, _)| (k, redact_property(k, v))),
            );
        }
        redact_overrides(&mut stored.command.workload.overrides);
        write_json_atomic(&self.path.join(CONFIG_FILE), &stored)
    }

    /// Whether this is the directory of a `sweep` (its record is named `sweep-WORKLOAD`, it
    /// measures one workload on one target and its `cells/` is empty), which `compare --resume`
    /// must not write into: its reports would replace the sweep's.
    pub(crate) fn is_sweep(&self) -> bool {
        let Ok(c) = self.config() else {
            return false;
        };
        let cmd = &c.command;
        cmd.sweep
            && cmd.name.starts_with("sweep-")
            && cmd.topologies.len() == 1
            && cmd.scenarios.len() == 1
            && fs::read_dir(self.path.join(CELLS_DIR))
                .map(|mut d| d.next().is_none())
                .unwrap_or(true)
    }

    /// Reads the configuration.
    pub fn config(&self) -> Result<ExperimentConfig, ResultsError> {
        read_json(&self.path.join(CONFIG_FILE))
    }

    /// The name a topology of this experiment is shown by and its cells are filed under: the one
    /// its record stored when the topology loaded (`CompareCommand::topology_name`).
    fn topology_name(&self, given: &str) -> String {
        (self.config().map(|c| c.command.topology_name(given)))
            .unwrap_or_else(|_| crate::topology::topology_label(given, None))
    }

    /// Where the file of one cell lives. Cells are filed under the topology's stored name; a
    /// cell an earlier version filed under the path as given is still found there, so
    /// `--resume` and `report` read older runs.
    pub(crate) fn cell_path(&self, id: &CellId) -> PathBuf {
        let file = format!("{}-r{}.json", sanitize(&id.scenario), id.repeat);
        let cells = self.path.join(CELLS_DIR);
        let named = (cells.join(sanitize(&self.topology_name(&id.topology)))).join(&file);
        let as_given = cells.join(sanitize(&id.topology)).join(&file);
        if !named.exists() && as_given.exists() {
            return as_given;
        }
        named
    }

    /// Writes one cell's result the moment it is measured.
    pub fn write_cell(&self, cell: &CellFile) -> Result<(), ResultsError> {
        write_json_atomic(&self.cell_path(&cell.cell), cell)
    }

    /// Reads one cell; `Ok(None)` when it was never written or is unreadable (then it is measured again).
    pub(crate) fn read_cell(&self, id: &CellId) -> Option<CellFile> {
        let path = self.cell_path(id);
        let cell: CellFile = read_json(&path).ok()?;
        (cell.cell == *id).then_some(cell)
    }

    /// A cell is finished iff its file exists and parses.
    pub(crate) fn is_finished(&self, id: &CellId) -> bool {
        self.read_cell(id).is_some()
    }

    /// Every cell that parses, in no particular order.
    pub(crate) fn cells(&self) -> Result<Vec<CellFile>, ResultsError> {
        let root = self.path.join(CELLS_DIR);
        let mut out = Vec::new();
        if !root.is_dir() {
            return Ok(out);
        }
        for topo in fs::read_dir(&root).map_err(io_err(&root))? {
            let topo = topo.map_err(io_err(&root))?.path();
            if !topo.is_dir() {
                continue;
            }
            for entry in fs::read_dir(&topo).map_err(io_err(&topo))? {
                let file = entry.map_err(io_err(&topo))?.path();
                if file.extension().and_then(|e| e.to_str()) != Some("json") {
                    continue;
                }
                if let Ok(cell) = read_json::<CellFile>(&file) {
                    out.push(cell);
                }
            }
        }
        Ok(out)
    }

    /// Where a thread sweep for `label` is stored.
    pub(crate) fn sweep_path(&self, label: &str) -> PathBuf {
        self.path
            .join(SWEEPS_DIR)
            .join(format!("{}.json", sanitize(label)))
    }

    /// Stores a thread sweep.
    pub fn write_sweep(&self, label: &str, sweep: &SweepFile) -> Result<(), ResultsError> {
        write_json_atomic(&self.sweep_path(label), sweep)
    }

    /// Reads a stored thread sweep, if there is one that parses.
    pub(crate) fn read_sweep(&self, label: &str) -> Option<SweepFile> {
        read_json(&self.sweep_path(label)).ok()
    }

    /// Every stored sweep, keyed by label.
    pub fn sweeps(&self) -> Vec<(String, SweepFile)> {
        let root = self.path.join(SWEEPS_DIR);
        let Ok(entries) = fs::read_dir(&root) else {
            return Vec::new();
        };
        let mut out: Vec<(String, SweepFile)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let p = e.path();
                let label = p.file_stem()?.to_str()?.to_string();
                let sweep = read_json(&p).ok()?;
                Some((label, sweep))
            })
            .collect();
        // Numbers in labels in numeric order: readbatchsize=1, 10, 20, not 10, 1, 20 (#25).
        out.sort_by(|a, b| natural_order(&a.0, &b.0));
        out
    }

    /// Where the ceiling search of a `compare --ceiling` cell is kept: one per repetition.
    pub(crate) fn ceiling_path(&self, id: &CellId) -> PathBuf {
        self.path
            .join(CEILINGS_DIR)
            .join(sanitize(&self.topology_name(&id.topology)))
            .join(format!("{}-r{}.json", sanitize(&id.scenario), id.repeat))
    }

    /// The cells recorded as not run, in the order recorded (none when the file is absent).
    pub(crate) fn not_run(&self) -> Vec<NotRun> {
        read_json(&self.path.join(NOT_RUN_FILE)).unwrap_or_default()
    }

    /// The cells of the matrix never run: no file (parsing or not) and not recorded as not run,
    /// so the experiment stopped before them (Ctrl-C, a failure). None in a
    /// sweep's directory, which has no cells.
    pub(crate) fn never_run(&self, config: &ExperimentConfig) -> Vec<CellId> {
        if self.is_sweep() {
            return Vec::new();
        }
        let not_run = self.not_run();
        let cmd = &config.command;
        let cells = (1..=cmd.repeat).flat_map(|repeat| {
            cmd.topologies.iter().flat_map(move |t| {
                cmd.scenarios.iter().map(move |s| CellId {
                    topology: t.clone(),
                    scenario: s.clone(),
                    repeat,
                })
            })
        });
        cells
            .filter(|id| !self.cell_path(id).exists() && !not_run.iter().any(|n| n.cell == *id))
            .collect()
    }

    /// Records cells as not run (replacing an earlier record of the same cell).
    pub(crate) fn record_not_run(&self, cells: &[NotRun]) -> Result<(), ResultsError> {
        let mut all = self.not_run();
        all.retain(|n| !cells.iter().any(|c| c.cell == n.cell));
        all.extend(cells.iter().cloned());
        write_json_atomic(&self.path.join(NOT_RUN_FILE), &all)
    }

    /// Forgets a cell's not-run record once it has been measured.
    pub(crate) fn clear_not_run(&self, id: &CellId) -> Result<(), ResultsError> {
        let all = self.not_run();
        if !all.iter().any(|n| n.cell == *id) {
            return Ok(());
        }
        let rest: Vec<NotRun> = all.into_iter().filter(|n| n.cell != *id).collect();
        write_json_atomic(&self.path.join(NOT_RUN_FILE), &rest)
    }

    /// Moves a cell's file into `earlier/` beside it (named after the session that measured it),
    /// so the cell is measured again while the earlier attempt is kept.
    pub(crate) fn set_aside(&self, cell: &CellFile) -> Result<(), ResultsError> {
        let path = self.cell_path(&cell.cell);
        let earlier = path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(EARLIER_DIR);
        fs::create_dir_all(&earlier).map_err(io_err(&earlier))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("cell");
        let to = earlier.join(format!("{stem}.session{}.json", cell.session));
        fs::rename(&path, &to).map_err(io_err(&path))
    }

    /// Writes any text file (a report, a chart) atomically inside the directory.
    pub(crate) fn write_text(&self, name: &str, text: &str) -> Result<PathBuf, ResultsError> {
        let path = self.path.join(name);
        write_bytes_atomic(&path, text.as_bytes())?;
        Ok(path)
    }
}

/// A property's value as it may be written to disk: passwords hidden, credentials in URIs
/// redacted.
pub(crate) fn redact_property(key: &str, value: &str) -> String {
    if key.to_ascii_lowercase().contains("password") {
        "****".to_string()
    } else {
        crate::redact::redact_text(value)
    }
}

/// `-p KEY=VALUE` overrides as they may be written to disk ([`redact_property`]).
pub(crate) fn redact_overrides(overrides: &mut [String]) {
    for o in overrides {
        if let Some((k, v)) = o.split_once('=') {
            *o = format!("{k}={}", redact_property(k, v));
        }
    }
}

/// The name of the link under the results root that points at the newest experiment directory,
/// so a write-up's commands can say `results/latest` instead of a dated name.
pub(crate) const LATEST_LINK: &str = "latest";

/// Points `<root>/latest` at `dir` (a relative link, replaced atomically by a rename). Best effort:
/// a file system without symbolic links only loses the convenience, never the experiment.
fn point_latest_at(root: &Path, dir: &Path) {
    let Some(name) = dir.file_name() else {
        return;
    };
    let temporary = root.join(format!(".{LATEST_LINK}.{}", std::process::id()));
    let _ = fs::remove_file(&temporary);
    #[cfg(unix)]
    let linked = std::os::unix::fs::symlink(name, &temporary);
    #[cfg(not(unix))]
    let linked: std::io::Result<()> = Err(std::io::ErrorKind::Unsupported.into());
    if linked.is_ok() && fs::rename(&temporary, root.join(LATEST_LINK)).is_err() {
        let _ = fs::remove_file(&temporary);
    }
}

/// Every experiment directory under `root` (those holding a configuration; the `latest` link
/// left out), newest first by the time their record says they were created (two made in the
/// same second have names that do not sort by age).
fn experiments_under(root: &Path) -> Vec<PathBuf> {
    #[derive(Deserialize)]
    struct Created {
        created: String,
    }
    let created = |dir: &Path| {
        let record: Created = read_json(&dir.join(CONFIG_FILE)).ok()?;
        chrono::DateTime::parse_from_rfc3339(&record.created).ok()
    };
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<(Option<_>, PathBuf)> = (entries.flatten())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.join(CONFIG_FILE).is_file())
        .map(|p| (created(&p), p))
        .collect();
    dirs.sort_by(|a, b| (&b.0, b.1.file_name()).cmp(&(&a.0, a.1.file_name())));
    dirs.into_iter().map(|(_, p)| p).collect()
}

/// An experiment directory's name without its time stamp and numeric suffix:
/// `2026-12-02-093715-sweep-S2.1` is `sweep-S2`.
fn experiment_name(dir: &Path) -> String {
    let file = dir.file_name().unwrap_or_default().to_string_lossy();
    let stamp_len = "2026-12-02-093715-".len();
    let name = file.get(stamp_len..).unwrap_or(&file);
    match name.rsplit_once('.') {
        Some((head, n)) if n.chars().all(|c| c.is_ascii_digit()) => head.to_string(),
        _ => name.to_string(),
    }
}

/// Keeps a name to characters every file system accepts (cell and chart file names).
/// Compares two labels with their runs of digits as numbers (`x_2` before `x_10`).
pub(crate) fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(rb.iter()) {
        let order = match (x, y) {
            ((true, dx), (true, dy)) => {
                let (tx, ty) = (dx.trim_start_matches('0'), dy.trim_start_matches('0'));
                tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
            }
            ((_, sx), (_, sy)) => sx.cmp(sy),
        };
        if order.is_ne() {
            return order;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

pub(crate) fn sanitize(name: &str) -> String {
    keep_chars(name, "-_.").trim_start_matches('.').to_string()
}

/// `name` with every character but ASCII letters, digits and those of `keep` made `_`.
pub(crate) fn keep_chars(name: &str, keep: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || keep.contains(c);
    name.chars()
        .map(|c| if keep(c) { c } else { '_' })
        .collect()
}

/// Serialises `value` as pretty JSON to `path` through a temporary file and a rename.
pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), ResultsError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| ResultsError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    text.push('\n');
    write_bytes_atomic(path, text.as_bytes())
}

/// Writes bytes so that a reader sees either the old file, or the whole new one, never a part.
pub(crate) fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), ResultsError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| ResultsError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

/// Reads and parses a JSON file.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ResultsError> {
    let text = fs::read_to_string(path).map_err(io_err(path))?;
    serde_json::from_str(&text).map_err(|e| ResultsError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

// ----- checks before a command reads or resumes a directory ------------------------------

/// Cell files of an experiment that `report` and `--resume` cannot use: unparsable, or written
/// with a schema this version does not know. One line each, naming the file.
pub(crate) fn damaged_cells(dir: &ExperimentDir) -> Vec<String> {
    let files = json_files_by_topology(&dir.path().join(CELLS_DIR));
    let damaged = files.iter().filter_map(|f| Some((f, check_cell(f).err()?)));
    damaged
        .map(|(f, why)| format!("{}: {why}", f.display()))
        .collect()
}

/// The `*.json` files of every directory in `root` (`cells/<topology>/`,
/// `ceilings/<topology>/`), sorted; what cannot be read is left out.
pub(crate) fn json_files_by_topology(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (fs::read_dir(root).into_iter().flatten().flatten())
        .filter_map(|t| fs::read_dir(t.path()).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// The JSON of `file` when its `schema` is `known`, or why not.
fn with_schema(file: &Path, known: &str) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON ({e})"))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    match schema == known {
        true => Ok(value),
        false => Err(format!(
            "unknown schema {schema:?} (this microshard reads {known})"
        )),
    }
}

fn check_cell(file: &Path) -> Result<(), String> {
    serde_json::from_value::<CellFile>(with_schema(file, CELL_SCHEMA)?)
        .map(drop)
        .map_err(|e| format!("not a cell file this microshard can read ({e})"))
}

/// Refuses an experiment whose configuration has a schema this version does not know.
pub(crate) fn known_schema(dir: &ExperimentDir) -> anyhow::Result<()> {
    let path = dir.path().join(CONFIG_FILE);
    with_schema(&path, CONFIG_SCHEMA)
        .map(drop)
        .map_err(|why| bad_input(format!("{}: {why}", path.display())))
}

/// Everything `compare --resume DIR` needs of its directory: an experiment of a known schema,
/// every existing cell readable (a damaged one would be measured again and overwrite what the
/// user may want to keep), and the directory writable.
pub(crate) fn resumable(path: &Path) -> anyhow::Result<ExperimentDir> {
    let dir = ExperimentDir::open(path)
        .map_err(|e| bad_input(format!("--resume {}: {e}", path.display())))?;
    known_schema(&dir).map_err(|e| bad_input(format!("--resume: {e}")))?;
    if dir.is_sweep() {
        return Err(bad_input(format!(
            "--resume {shown}: this is a sweep, not a compare experiment (nothing was touched); \
             resume it with `microshard sweep --resume {shown}`",
            shown = path.display()
        )));
    }
    let damaged = damaged_cells(&dir);
    if let Some(first) = damaged.first() {
        return Err(bad_input(format!(
            "--resume: {first}{}; move it away to measure that cell again",
            match damaged.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            }
        )));
    }
    crate::writable::dir("--resume", path)?;
    let cells = path.join(CELLS_DIR);
    if cells.exists() {
        crate::writable::dir("--resume", &cells)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_listed_with_their_numbers_in_numeric_order() {
        // A vary sweep's curves read 1, 10, 20, not 10, 1, 20.
        let mut labels = vec![
            "single_readbatchsize_20",
            "single_readbatchsize_10",
            "single_readbatchsize_1",
            "microshard-2_x",
            "single_readbatchsize_1__2",
        ];
        labels.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            labels,
            [
                "microshard-2_x",
                "single_readbatchsize_1",
                "single_readbatchsize_1__2",
                "single_readbatchsize_10",
                "single_readbatchsize_20",
            ]
        );
    }

    /// Cells are filed under the name stored when the topology loaded: the file, renamed or
    /// deleted since, is not read, so a resume finds (and names) its cells as they were.
    #[test]
    fn cells_are_filed_under_the_stored_topology_name_and_older_runs_are_still_found()
    -> Result<(), ResultsError> {
        let root = tempfile::tempdir().map_err(io_err(Path::new("tempdir")))?;
        let file = root.path().join("my-lab.toml").display().to_string();
        let dir = ExperimentDir::create(&root.path().join("results"), "compare")?;
        let mut config = crate::report::tests::config(false);
        config.command.topologies = vec![file.clone()];
        config.command.scenarios = vec!["S1".into()];
        config.command.repeat = 1;
        (config.command.topology_names).insert(file.clone(), "big-box".into());
        dir.write_config(&config)?;
        let id = CellId {
            topology: file,
            scenario: "S1".into(),
            repeat: 1,
        };
        let named = dir
            .path()
            .join(CELLS_DIR)
            .join("big-box")
            .join("S1-r1.json");
        assert_eq!(dir.cell_path(&id), named);
        assert_eq!(
            dir.ceiling_path(&id),
            dir.path().join("ceilings/big-box/S1-r1.json")
        );
        assert_eq!(dir.never_run(&config), vec![id.clone()]);
        let mut cell = crate::report::tests::cell(&id.topology, "S1", 1, 1000.0);
        cell.topology = None;
        dir.write_cell(&cell)?;
        assert!(named.is_file() && dir.never_run(&config).is_empty());
        // A cell an earlier version filed under the path as given is found where it is.
        fs::remove_file(&named).map_err(io_err(&named))?;
        let old = dir
            .path()
            .join(CELLS_DIR)
            .join(sanitize(&id.topology))
            .join("S1-r1.json");
        fs::create_dir_all(old.parent().unwrap_or(dir.path())).map_err(io_err(&old))?;
        fs::write(&old, "{}").map_err(io_err(&old))?;
        assert_eq!(dir.cell_path(&id), old);
        Ok(())
    }

    #[test]
    fn latest_points_at_the_newest_experiment() -> Result<(), ResultsError> {
        let root = tempfile::tempdir().map_err(io_err(Path::new("tempdir")))?;
        let first = ExperimentDir::create(root.path(), "compare")?;
        let link = root.path().join(LATEST_LINK);
        assert_eq!(
            fs::canonicalize(&link).ok(),
            fs::canonicalize(first.path()).ok()
        );
        let second = ExperimentDir::create(root.path(), "compare")?;
        assert_ne!(first.path(), second.path());
        assert_eq!(
            fs::canonicalize(&link).ok(),
            fs::canonicalize(second.path()).ok()
        );
        // The link is relative, so a results tree that is moved or copied keeps it working.
        let target = fs::read_link(&link).map_err(io_err(&link))?;
        assert!(target.is_relative(), "{}", target.display());
        // Only the two experiments and the link remain: no temporary link is left behind.
        assert_eq!(
            fs::read_dir(root.path())
                .map_err(io_err(root.path()))?
                .count(),
            3
        );
        Ok(())
    }

    /// Writes a record holding only the creation time, as far as `find` reads it.
    fn experiment(root: &Path, name: &str, created: &str) -> Result<ExperimentDir, ResultsError> {
        let dir = ExperimentDir::create(root, name)?;
        let record = serde_json::json!({ "created": created });
        write_json_atomic(&dir.path().join(CONFIG_FILE), &record)?;
        Ok(dir)
    }

    #[test]
    fn experiments_are_found_by_name_latest_and_previous() -> Result<(), ResultsError> {
        let tmp = tempfile::tempdir().map_err(io_err(Path::new("tempdir")))?;
        let root = tmp.path();
        let first = experiment(root, "compare", "2026-01-01T00:00:00.1Z")?;
        let sweep = experiment(root, "sweep-S2", "2026-01-01T00:00:00.2Z")?;
        let second = experiment(root, "compare", "2026-01-01T00:00:00.3Z")?;
        let found = |name: &str| ExperimentDir::find(&root.join(name)).map(|d| d.path);
        assert_eq!(found("compare")?, second.path);
        assert_eq!(found("sweep-S2")?, sweep.path);
        assert_eq!(found("previous")?, sweep.path);
        assert_eq!(
            fs::canonicalize(found("latest")?).ok(),
            fs::canonicalize(&second.path).ok()
        );
        assert_eq!(found(first.path.to_str().unwrap_or_default())?, first.path);
        let wrong = found("compar").unwrap_err().to_string();
        assert!(
            wrong.contains("compar: no such experiment under"),
            "{wrong}"
        );
        assert!(wrong.contains("did you mean `compare`?"), "{wrong}");
        assert!(wrong.contains("there: compare, sweep-S2, or"), "{wrong}");
        Ok(())
    }
}
