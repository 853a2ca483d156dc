//! The result document: microshard's own `--json` output and every experiment cell.
//!
//! Unlike YCSB's exports it keeps the whole latency histogram (HdrHistogram V2 + DEFLATE,
//! base64), so repeats and clients can be merged later and any percentile recomputed exactly.
//! The schema is documented in `docs/result-schema.md`; a test keeps the two in step.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, SecondsFormat, Utc};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use super::export::Overall;
use super::registry::{MapKind, OpMeasurement, RunMeasurements};
use super::{Status, hdr, order};

/// Version of the document layout; bump it when a field changes meaning or is removed.
pub(crate) const SCHEMA_VERSION: u32 = 2;

/// Why a result document could not be built or merged.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// The histogram could not be encoded.
    #[error("cannot encode the {measurement} histogram: {reason}")]
    Encode {
        /// The measurement's name.
        measurement: String,
        /// The encoder's message.
        reason: String,
    },
    /// A stored histogram is not valid base64 / V2 data.
    #[error("cannot decode the {measurement} histogram: {reason}")]
    Decode {
        /// The measurement's name.
        measurement: String,
        /// The decoder's message.
        reason: String,
    },
    /// The documents cannot be merged.
    #[error("cannot merge result documents: {0}")]
    Merge(String),
    /// The properties a report is rendered with do not read.
    #[error("cannot render the report: {0}")]
    Properties(String),
}

/// The tool that produced a document.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolInfo {
    /// Always `microshard`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

impl Default for ToolInfo {
    fn default() -> Self {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// One resolved property of the run (callers redact URIs before storing them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PropertyEntry {
    /// Property name.
    pub key: String,
    /// Value as used.
    pub value: String,
    /// Where it came from (`file:line`, `-p`, `default`, ...).
    pub origin: String,
    /// Set but read by nothing in microshard: it had no effect on this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unused: bool,
}

/// Facts about the machine the client ran on, so numbers can be compared honestly: stored in
/// every result document and in every experiment's configuration.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HostFacts {
    /// Host name (/proc/sys/kernel/hostname).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// CPUs this process may use.
    pub cpu_count: u64,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// MemTotal from /proc/meminfo, in bytes.
    pub memory_bytes: Option<u64>,
    /// Kernel release (/proc/sys/kernel/osrelease).
    pub kernel: Option<String>,
    /// The selected transparent-hugepage mode (`always`, `madvise`, `never`).
    pub transparent_hugepage: Option<String>,
    /// Operating system family (`linux`, ...).
    pub os: String,
}

impl HostFacts {
    /// Reads the facts from /proc and /sys; anything unreadable is left empty.
    pub(crate) fn collect() -> HostFacts {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        HostFacts {
            hostname: read("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()),
            cpu_count: std::thread::available_parallelism()
                .map(|n| n.get() as u64)
                .unwrap_or(0),
            cpu_model: read("/proc/cpuinfo").and_then(|s| parse_cpu_model(&s)),
            memory_bytes: total_memory_bytes(),
            kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
            transparent_hugepage: read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|s| parse_bracketed(&s)),
            os: std::env::consts::OS.to_string(),
        }
    }
}

fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    })
}

/// This machine's RAM (MemTotal in /proc/meminfo), in bytes; `None` when it cannot be read.
/// Shared by the result's host facts and the topology planner's memory split.
pub(crate) fn total_memory_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| parse_mem_total(&s))
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemTotal:")?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// The `[selected]` word of a sysfs choice list such as `always [madvise] never`.
fn parse_bracketed(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

/// CPU time used by this process (user and system), to be diffed around a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientCpu {
    /// User CPU time in µs.
    pub user_us: u64,
    /// System CPU time in µs.
    pub system_us: u64,
}

impl ClientCpu {
    /// The process's CPU time so far (`getrusage(RUSAGE_SELF)`: every thread, so an in-process
    /// stand-in server counts too); zeros if unavailable.
    pub fn now() -> ClientCpu {
        // SAFETY: getrusage only writes into the zeroed struct we pass.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        if rc != 0 {
            return ClientCpu::default();
        }
        let us =
            |tv: libc::timeval| (tv.tv_sec.max(0) as u64) * 1_000_000 + tv.tv_usec.max(0) as u64;
        ClientCpu {
            user_us: us(usage.ru_utime),
            system_us: us(usage.ru_stime),
        }
    }

    /// CPU time used since `earlier`.
    pub fn since(&self, earlier: &ClientCpu) -> ClientCpu {
        ClientCpu {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            system_us: self.system_us.saturating_sub(earlier.system_us),
        }
    }

    /// User + system µs.
    pub(crate) fn total_us(&self) -> u64 {
        self.user_us + self.system_us
    }
}

/// A status and how often it was reported.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StatusCount {
    /// YCSB status name.
    pub status: Status,
    /// Number of operations with that status.
    pub count: u64,
}

/// One measurement (`READ`, `READ-FAILED`, `Intended-READ`, ...) with YCSB-exact statistics.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeasurementResult {
    /// Printed name.
    pub name: String,
    /// `actual` or `intended` latency.
    pub kind: MapKind,
    /// Latencies recorded.
    pub count: u64,
    /// µs, YCSB's MinLatency.
    pub min: u64,
    /// µs, YCSB's MaxLatency.
    pub max: u64,
    /// µs, YCSB's AverageLatency (bucket medians).
    pub mean: f64,
    /// µs percentiles, YCSB's method.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
    /// `Return=` counts in YCSB's order.
    pub statuses: Vec<StatusCount>,
    /// The histogram: HdrHistogram V2 + DEFLATE ("compressed") encoding, base64 (standard alphabet, padded).
    pub histogram: String,
}

impl MeasurementResult {
    /// Summarises and encodes one measurement.
    pub(crate) fn from_measurement(m: &OpMeasurement) -> Result<MeasurementResult, ResultError> {
        let statuses = m
            .statuses
            .iter()
            .map(|&(status, count)| StatusCount { status, count })
            .collect();
        Self::from_parts(&m.name, m.kind, &m.histogram, statuses)
    }

    fn from_parts(
        name: &str,
        kind: MapKind,
        h: &Histogram<u64>,
        statuses: Vec<StatusCount>,
    ) -> Result<MeasurementResult, ResultError> {
        Ok(MeasurementResult {
            name: name.to_string(),
            kind,
            count: h.len(),
            min: hdr::min(h),
            max: hdr::max(h),
            mean: hdr::mean(h),
            p50: hdr::percentile(h, 50.0),
            p90: hdr::percentile(h, 90.0),
            p95: hdr::percentile(h, 95.0),
            p99: hdr::percentile(h, 99.0),
            p99_9: hdr::percentile(h, 99.9),
            p99_99: hdr::percentile(h, 99.99),
            statuses,
            histogram: encode_histogram(name, h)?,
        })
    }

    /// Decodes the stored histogram.
    pub(crate) fn decode_histogram(&self) -> Result<Histogram<u64>, ResultError> {
        decode_histogram(&self.name, &self.histogram)
    }
}

/// Encodes a histogram as base64 of the V2 + DEFLATE format.
pub(crate) fn encode_histogram(name: &str, h: &Histogram<u64>) -> Result<String, ResultError> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| ResultError::Encode {
            measurement: name.to_string(),
            reason: format!("{e:?}"),
        })?;
    Ok(BASE64.encode(buf))
}

/// Decodes base64 of any HdrHistogram V2 encoding (compressed or not).
pub fn decode_histogram(name: &str, encoded: &str) -> Result<Histogram<u64>, ResultError> {
    let err = |reason: String| ResultError::Decode {
        measurement: name.to_string(),
        reason,
    };
    let bytes = BASE64.decode(encoded).map_err(|e| err(e.to_string()))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| err(format!("{e:?}")))?;
    h.auto(true);
    Ok(h)
}

/// The heading every stand-in figure carries, wherever it is shown or stored ([`ServerFacts::standin`]).
pub(crate) const STANDIN_MARKER: &str = "STAND-IN FIGURES — not MongoDB";

/// Server-side facts and how the client talked to them, filled by the runner: what the server
/// said it is (version, role, whether it is the stand-in) and what was really in force (the URI,
/// write concern, read preference, threads). Typed so that "stand-in figures are labelled" is
/// checked by the compiler, not by a string key.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerFacts {
    /// True when the stand-in server, not MongoDB, answered: the figures are not MongoDB's.
    #[serde(default)]
    pub standin: bool,
    /// A sentence saying so, when `standin` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `buildInfo.version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `buildInfo.gitVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_version: Option<String>,
    /// Why `buildInfo` failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_info_error: Option<String>,
    /// `mongos`, `mongod`, `replica_set_primary` or `replica_set_secondary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The replica set's name, for a replica-set member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_set: Option<String>,
    /// `hello.maxWireVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wire_version: Option<i32>,
    /// Why `hello` failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hello_error: Option<String>,
    /// The connection string's seed hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<String>,
    /// The connection string the client really used (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_url: Option<String>,
    /// The driver pool's `maxPoolSize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_max_pool_size: Option<u32>,
    /// The database the benchmark collection lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_database: Option<String>,
    /// The write concern in force (`w=1`), or `server default` when the URL set none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<String>,
    /// The read preference in force (`primary` unless the URL says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_preference: Option<String>,
    /// Client threads that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    /// Failed operations by error class (timeouts, not-primary, network, server codes).
    #[serde(default)]
    pub error_classes: std::collections::BTreeMap<String, u64>,
    /// Why the run stopped before its end (`interrupted`, the error-rate guard), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_stopped: Option<String>,
}

/// One client process of a run: its own window and figures, so a merged result still shows
/// each client (`--clients`, `microshard merge`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientEntry {
    /// The client's index (0-based).
    pub index: usize,
    /// The machine it ran on.
    pub host: String,
    /// Start of its timed window (RFC 3339).
    pub started: String,
    /// End of its timed window.
    pub ended: String,
    /// Its run time, ms.
    pub runtime_ms: u64,
    /// Operations it completed.
    pub operations: u64,
    /// Its own throughput, ops/s.
    pub throughput: Option<f64>,
    /// Client threads it ran.
    pub threads: Option<u64>,
    /// Its CPU time.
    pub client_cpu: ClientCpu,
    /// Its own verdict.
    pub verdict: super::validity::Verdict,
    /// Where it ran when it was a client pod (its node, image digest and CPU limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<super::ClientPod>,
}

impl ClientEntry {
    /// The entry describing `doc` as client `index` on `host`.
    pub(crate) fn of(index: usize, host: &str, doc: &RunDocument) -> ClientEntry {
        ClientEntry {
            index,
            host: doc
                .host
                .hostname
                .clone()
                .unwrap_or_else(|| host.to_string()),
            started: doc.started.clone(),
            ended: doc.ended.clone(),
            runtime_ms: doc.runtime_ms,
            operations: doc.operations,
            throughput: doc.throughput,
            threads: doc.server.threads,
            client_cpu: doc.client_cpu,
            verdict: doc.validity.verdict,
            pod: None,
        }
    }
}

/// One run's (or several merged runs') results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunDocument {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The producing tool.
    pub tool: ToolInfo,
    /// `load` or `run`.
    pub phase: String,
    /// RFC 3339 UTC start of the timed window.
    pub started: String,
    /// RFC 3339 UTC end of the timed window.
    pub ended: String,
    /// YCSB's RunTime(ms).
    pub runtime_ms: u64,
    /// Operations done by all clients.
    pub operations: u64,
    /// ops/sec as YCSB computes it; `null` when the runtime is 0.
    pub throughput: Option<f64>,
    /// How many runs this document aggregates (1 unless merged).
    pub runs: u32,
    /// Resolved properties with their origin (URIs redacted by the caller).
    pub properties: Vec<PropertyEntry>,
    /// The client machine.
    pub host: HostFacts,
    /// The servers and what was in force (the runner fills it; carries `standin`).
    #[serde(default)]
    pub server: ServerFacts,
    /// Whether the figures can be trusted, and why not (`docs/result-schema.md`).
    #[serde(default)]
    pub validity: super::validity::Validity,
    /// Seconds left out of the measurement at the start (`--warmup`).
    #[serde(default)]
    pub warmup_s: f64,
    /// Per second: operations, errors and which members answered; outages and stalls.
    #[serde(default)]
    pub timeline: super::timeline::Timeline,
    /// Every client process that contributed (one for an ordinary run).
    #[serde(default)]
    pub clients: Vec<ClientEntry>,
    /// CPU time the client process used during the run.
    pub client_cpu: ClientCpu,
    /// How quiet the machine was over the window: other processes' CPU, steal, load average,
    /// the CPU of each server member on this machine (`None`: not measured, e.g. off Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<super::host_load::HostLoad>,
    /// How well the clients kept a `target` rate's schedule; `None` for an unthrottled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// The key numbers the run handed out to inserts, warm-up included; `None` when it
    /// inserted nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserted_keys: Option<KeySpan>,
    /// Per-measurement results in YCSB's export order.
    pub measurements: Vec<MeasurementResult>,
}

/// How far a throttled run's clients fell behind their schedule: the client's side of an
/// open-loop step, measured rather than predicted (`docs/engine.md`, "Keeping the schedule").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Schedule {
    /// Operations that started more than [`Schedule::LATE_US`] after their intended start.
    pub late: u64,
    /// Operations whose intended start fell before the run's end but that were never sent
    /// (every thread was still busy); each is recorded as intended latency under `UNSENT`.
    pub unsent: u64,
}

impl Schedule {
    /// An operation starting later than this after its intended start is late: more than the
    /// timer's own jitter (`docs/engine.md`, "Keeping the schedule").
    pub const LATE_US: u64 = 2_000;
}

impl std::ops::Add for Schedule {
    type Output = Schedule;

    /// Both counts added (clients of one run).
    fn add(self, other: Schedule) -> Schedule {
        Schedule {
            late: self.late + other.late,
            unsent: self.unsent + other.unsent,
        }
    }
}

/// Key numbers `[first, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeySpan {
    /// The lowest key number.
    pub first: i64,
    /// One past the highest.
    pub end: i64,
}

impl KeySpan {
    /// The smallest span holding both (clients of one run took interleaved keys).
    pub fn hull(self, other: KeySpan) -> KeySpan {
        KeySpan {
            first: self.first.min(other.first),
            end: self.end.max(other.end),
        }
    }
}

fn rfc3339(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn throughput_of(operations: u64, runtime_ms: u64) -> Option<f64> {
    if operations == 0 {
        // Nothing done is 0 ops/s, even over a window too short to measure (never NaN).
        return Some(0.0);
    }
    let t = Overall {
        runtime_ms,
        operations,
    }
    .throughput();
    t.is_finite().then_some(t)
}

impl RunDocument {
    /// Operations that found no record, over every measurement (`Return=NOT_FOUND`): a load of
    /// another size, or keys a failover rolled back.
    pub fn not_found(&self) -> u64 {
        (self.measurements.iter())
            .flat_map(|m| &m.statuses)
            .filter(|s| s.status == super::Status::NotFound)
            .map(|s| s.count)
            .sum()
    }

    /// A document for one run: tool, times, totals and measurements filled; host facts
    /// collected now; properties, server facts and client CPU left for the runner to set.
    pub fn new(
        phase: &str,
        started: DateTime<Utc>,
        ended: DateTime<Utc>,
        overall: &Overall,
        run: &RunMeasurements,
    ) -> Result<RunDocument, ResultError> {
        let measurements = run
            .measurements
            .iter()
            .map(MeasurementResult::from_measurement)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RunDocument {
            schema_version: SCHEMA_VERSION,
            phase: phase.to_string(),
            started: rfc3339(&started),
            ended: rfc3339(&ended),
            runtime_ms: overall.runtime_ms,
            operations: overall.operations,
            throughput: throughput_of(overall.operations, overall.runtime_ms),
            runs: 1,
            host: HostFacts::collect(),
            measurements,
            // This tool, a valid verdict, no warm-up, and nothing yet of what the runner adds.
            ..RunDocument::default()
        })
    }

    /// YCSB's report of this document as the exporter `props` names renders it: a merged run's
    /// report, a compare cell's `exportfile`. Beside it, YCSB's line for an unknown exporter.
    pub(crate) fn ycsb_report(
        &self,
        props: &crate::props::properties::Properties,
    ) -> Result<(String, Option<String>), ResultError> {
        let run = self.to_run_measurements()?;
        let config = super::MeasurementConfig::from_properties(props)
            .map_err(|e| ResultError::Properties(e.to_string()))?;
        let (exporter, warning) =
            super::ExporterKind::for_class(props.text(&crate::props::prop::EXPORTER));
        let overall = Overall {
            runtime_ms: self.runtime_ms,
            operations: self.operations,
        };
        Ok((exporter.render(&run, &overall, &config), warning))
    }

    /// The measurements with their histograms decoded, as the YCSB exporters take them (to
    /// print the YCSB report of a merged document).
    pub(crate) fn to_run_measurements(&self) -> Result<RunMeasurements, ResultError> {
        let measurements = self
            .measurements
            .iter()
            .map(|m| {
                Ok(super::registry::OpMeasurement {
                    name: m.name.clone(),
                    key: map_key(&m.name).to_string(),
                    kind: m.kind,
                    histogram: m.decode_histogram()?,
                    buckets: None,
                    series: None,
                    raw: None,
                    statuses: m.statuses.iter().map(|s| (s.status, s.count)).collect(),
                })
            })
            .collect::<Result<Vec<_>, ResultError>>()?;
        Ok(RunMeasurements {
            measurements,
            log_problems: Vec::new(),
        })
    }

    /// The measurement named `name`.
    pub fn measurement(&self, name: &str) -> Option<&MeasurementResult> {
        self.measurements.iter().find(|m| m.name == name)
    }

    /// Merges repeats of the same run (run one after another): histograms and counts are
    /// added, run times and operations summed, throughput = all operations / all run time.
    pub fn merge(docs: &[RunDocument]) -> Result<RunDocument, ResultError> {
        let mut out = merge_measurements(docs)?;
        out.runtime_ms = docs.iter().map(|d| d.runtime_ms).sum();
        out.throughput = throughput_of(out.operations, out.runtime_ms);
        Ok(out)
    }

    /// Merges documents of clients started together at one barrier (`--clients`): histograms
    /// and counts added, timelines added second by second, run time the longest (the common
    /// window), throughput = all operations / that window.
    pub(crate) fn merge_clients(docs: &[RunDocument]) -> Result<RunDocument, ResultError> {
        let mut out = merge_measurements(docs)?;
        out.runtime_ms = docs.iter().map(|d| d.runtime_ms).max().unwrap_or(0);
        for d in docs.iter().skip(1) {
            out.timeline.merge_concurrent(&d.timeline);
        }
        out.throughput = throughput_of(out.operations, out.runtime_ms);
        out.server.threads = docs.iter().map(|d| d.server.threads).sum();
        Ok(out)
    }
}

/// Shared part of both merges: everything except run time and throughput.
fn merge_measurements(docs: &[RunDocument]) -> Result<RunDocument, ResultError> {
    let first = mergeable(docs)?;
    let measurements = in_ycsb_order(&summed_measurements(docs)?)?;
    let started = docs.iter().map(|d| d.started.as_str()).min().unwrap_or("");
    let ended = docs.iter().map(|d| d.ended.as_str()).max().unwrap_or("");
    Ok(RunDocument {
        schema_version: first.schema_version,
        tool: first.tool.clone(),
        phase: first.phase.clone(),
        started: started.to_string(),
        ended: ended.to_string(),
        runtime_ms: first.runtime_ms,
        operations: docs.iter().map(|d| d.operations).sum(),
        throughput: first.throughput,
        runs: docs.iter().map(|d| d.runs).sum(),
        properties: first.properties.clone(),
        host: first.host.clone(),
        server: first.server.clone(),
        validity: docs
            .iter()
            .fold(super::validity::Validity::valid(), |mut acc, d| {
                acc.merge(&d.validity);
                acc
            }),
        warmup_s: first.warmup_s,
        timeline: first.timeline.clone(),
        clients: docs
            .iter()
            .flat_map(|d| d.clients.iter().cloned())
            .collect(),
        host_load: first.host_load.clone(),
        client_cpu: docs.iter().fold(ClientCpu::default(), |acc, d| ClientCpu {
            user_us: acc.user_us + d.client_cpu.user_us,
            system_us: acc.system_us + d.client_cpu.system_us,
        }),
        schedule: docs.iter().filter_map(|d| d.schedule).reduce(|a, b| a + b),
        inserted_keys: docs
            .iter()
            .filter_map(|d| d.inserted_keys)
            .reduce(KeySpan::hull),
        measurements,
    })
}

/// The first document, once every document is known to share its schema version and phase
/// (documents of different shapes do not merge).
fn mergeable(docs: &[RunDocument]) -> Result<&RunDocument, ResultError> {
    let first = docs
        .first()
        .ok_or_else(|| ResultError::Merge("no documents".to_string()))?;
    for d in docs {
        if d.schema_version != first.schema_version {
            return Err(ResultError::Merge(format!(
                "schema versions differ ({} vs {})",
                first.schema_version, d.schema_version
            )));
        }
        if d.phase != first.phase {
            return Err(ResultError::Merge(format!(
                "phases differ ({} vs {})",
                first.phase, d.phase
            )));
        }
    }
    Ok(first)
}

/// One measurement summed over the documents: its histograms added, its status counts added.
struct SummedMeasurement {
    name: String,
    kind: MapKind,
    hist: Histogram<u64>,
    statuses: Vec<StatusCount>,
}

/// Every measurement of the documents (by name and kind), summed, in order of first appearance.
fn summed_measurements(docs: &[RunDocument]) -> Result<Vec<SummedMeasurement>, ResultError> {
    let mut accs: Vec<SummedMeasurement> = Vec::new();
    for d in docs {
        for m in &d.measurements {
            let h = m.decode_histogram()?;
            let pos = accs
                .iter()
                .position(|a| a.name == m.name && a.kind == m.kind);
            let p = pos.unwrap_or_else(|| {
                accs.push(SummedMeasurement {
                    name: m.name.clone(),
                    kind: m.kind,
                    hist: hdr::new_histogram(),
                    statuses: Vec::new(),
                });
                accs.len() - 1
            });
            let acc = &mut accs[p];
            acc.hist
                .add(&h)
                .map_err(|e| ResultError::Merge(format!("{e:?}")))?;
            for s in &m.statuses {
                match acc.statuses.iter_mut().find(|x| x.status == s.status) {
                    Some(x) => x.count += s.count,
                    None => acc.statuses.push(s.clone()),
                }
            }
        }
    }
    Ok(accs)
}

/// The map key of a printed measurement name: the name without its `Intended-` prefix.
fn map_key(name: &str) -> &str {
    name.strip_prefix("Intended-").unwrap_or(name)
}

/// The summed measurements as results: actual measurements first, then intended, each in
/// YCSB's map order of first appearance, their statuses in YCSB's order.
fn in_ycsb_order(accs: &[SummedMeasurement]) -> Result<Vec<MeasurementResult>, ResultError> {
    let mut measurements = Vec::with_capacity(accs.len());
    for kind in [MapKind::Actual, MapKind::Intended] {
        let idx: Vec<usize> = (0..accs.len()).filter(|&i| accs[i].kind == kind).collect();
        let keys: Vec<&str> = idx.iter().map(|&i| map_key(&accs[i].name)).collect();
        for j in order::order_names(&keys) {
            let a = &accs[idx[j]];
            let seen: Vec<Status> = a.statuses.iter().map(|s| s.status).collect();
            let statuses = order::order_statuses(&seen)
                .into_iter()
                .map(|k| a.statuses[k].clone())
                .collect();
            measurements.push(MeasurementResult::from_parts(
                &a.name, a.kind, &a.hist, statuses,
            )?);
        }
    }
    Ok(measurements)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{MeasurementConfig, Measurements};

    fn run_with(values: &[u64], fail: u64) -> RunMeasurements {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for &v in values {
            c.record("READ", v, None, Status::Ok);
        }
        for _ in 0..fail {
            c.record("READ", 50, None, Status::NotFound);
        }
        c.record_without_status("CLEANUP", 3, None);
        m.finish()
    }

    fn doc(values: &[u64], fail: u64, runtime_ms: u64) -> RunDocument {
        let t0 = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
        let t1 = DateTime::from_timestamp_millis(1_700_000_000_000 + runtime_ms as i64).unwrap();
        let overall = Overall {
            runtime_ms,
            operations: values.len() as u64 + fail,
        };
        RunDocument::new("run", t0, t1, &overall, &run_with(values, fail)).unwrap()
    }

    /// The status counts `pairs`, as a document lists them.
    fn counts(pairs: &[(Status, u64)]) -> Vec<StatusCount> {
        let count = |&(status, count)| StatusCount { status, count };
        pairs.iter().map(count).collect()
    }

    #[test]
    fn document_stats_match_ycsb() {
        let d = doc(
            &[
                120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
            ],
            1,
            1849,
        );
        assert_eq!(d.started, "2023-11-14T22:13:20.000Z");
        assert_eq!(d.throughput, Some(1000.0 * 13.0 / 1849.0));
        let r = d.measurement("READ").unwrap();
        assert_eq!(
            (r.count, r.min, r.max, r.p50, r.p95),
            (12, 120, 123519, 2047, 123519)
        );
        assert_eq!(r.mean, 12487.916666666666);
        assert_eq!(
            r.statuses,
            counts(&[(Status::Ok, 12), (Status::NotFound, 1)])
        );
        let names: Vec<&str> = d.measurements.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["READ", "CLEANUP", "READ-FAILED"]);
        // The histogram round-trips through the document.
        let json = serde_json::to_string(&d).unwrap();
        let back: RunDocument = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
        let h = back
            .measurement("READ")
            .unwrap()
            .decode_histogram()
            .unwrap();
        assert_eq!(h.len(), 12);
        assert_eq!(hdr::percentile(&h, 99.0), 123519);
    }

    #[test]
    fn merge_adds_histograms_and_recomputes() {
        let a = doc(&(1..=50).map(|i| i * 100).collect::<Vec<_>>(), 1, 1000);
        let b = doc(&(51..=100).map(|i| i * 100).collect::<Vec<_>>(), 2, 3000);
        let m = RunDocument::merge(&[a.clone(), b.clone()]).unwrap();
        let u = m.measurement("READ").unwrap();
        // Same numbers as recording 100..10000 in one histogram (the spec's UPDATE example).
        assert_eq!((u.count, u.min, u.max), (100, 100, 10007));
        assert_eq!(u.mean, 5051.42);
        assert_eq!((u.p50, u.p95, u.p99), (5003, 9503, 9903));
        assert_eq!(
            u.statuses,
            counts(&[(Status::Ok, 100), (Status::NotFound, 3)])
        );
        assert_eq!(m.measurement("READ-FAILED").unwrap().count, 3);
        assert_eq!(m.runs, 2);
        assert_eq!(m.operations, 103);
        assert_eq!(m.runtime_ms, 4000);
        assert_eq!(m.throughput, Some(1000.0 * 103.0 / 4000.0));
        let c = RunDocument::merge_clients(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(c.runtime_ms, 3000);
        assert_eq!(c.throughput, Some(1000.0 * 103.0 / 3000.0));
        assert_eq!(c.measurements, m.measurements);
    }

    #[test]
    fn merge_refuses_bad_input() {
        assert!(RunDocument::merge(&[]).is_err());
        let mut a = doc(&[1, 2], 0, 10);
        let b = doc(&[1, 2], 0, 10);
        a.phase = "load".into();
        assert!(RunDocument::merge(&[a.clone(), b.clone()]).is_err());
        let mut c = b.clone();
        c.measurements[0].histogram = "not base64!".into();
        let e = RunDocument::merge(&[b, c]).unwrap_err();
        assert!(e.to_string().contains("READ"), "{e}");
    }

    /// The documented field table of docs/result-schema.md: path → allowed types.
    fn documented_fields() -> Vec<(String, Vec<String>)> {
        let doc = include_str!("../../docs/result-schema.md");
        let start = doc.find("<!-- fields:start -->").expect("start marker");
        let end = doc.find("<!-- fields:end -->").expect("end marker");
        doc[start..end]
            .lines()
            .filter_map(|l| {
                // | `path` | type | meaning |  (alternatives inside a cell are written `\|`)
                let row = l.replace("\\|", "\u{1}");
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                let path = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                Some((
                    path.to_string(),
                    cells
                        .get(2)?
                        .split('\u{1}')
                        .map(|t| t.trim().to_string())
                        .collect(),
                ))
            })
            .collect()
    }

    fn json_type(v: &serde_json::Value) -> &'static str {
        match v {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "boolean",
            serde_json::Value::Number(n) if n.is_f64() => "float",
            serde_json::Value::Number(_) => "integer",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Array(_) => "array",
            serde_json::Value::Object(_) => "object",
        }
    }

    /// Every (path, type) in a JSON value; free-form (`any`) paths are not descended.
    fn flatten(
        v: &serde_json::Value,
        path: &str,
        free_form: &[String],
        out: &mut Vec<(String, &'static str)>,
    ) {
        if !path.is_empty() {
            out.push((path.to_string(), json_type(v)));
            if free_form.iter().any(|f| f == path) {
                return;
            }
        }
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    flatten(child, &join(k), free_form, out);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    let p = format!("{path}[]");
                    if let serde_json::Value::Object(map) = item {
                        for (k, child) in map {
                            flatten(child, &format!("{p}.{k}"), free_form, out);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    #[test]
    fn schema_doc_matches_serialized_document() {
        let mut d = doc(
            &[
                120, 250, 250, 999, 1500, 2047, 2048, 2049, 3001, 4097, 10000, 123456,
            ],
            1,
            1849,
        );
        d.properties.push(PropertyEntry {
            key: "recordcount".into(),
            value: "1000".into(),
            origin: "workloads/workloada:17".into(),
            unused: false,
        });
        d.properties.push(PropertyEntry {
            key: "mycompany.tag".into(),
            value: "x".into(),
            origin: "-p".into(),
            unused: true,
        });
        d.host = HostFacts {
            hostname: Some("bench-1".into()),
            cpu_count: 2,
            cpu_model: Some("Test CPU".into()),
            memory_bytes: Some(1 << 30),
            kernel: Some("6.1.0".into()),
            transparent_hugepage: Some("madvise".into()),
            os: "linux".into(),
        };
        d.server = ServerFacts {
            standin: true,
            note: Some("measured against the microshard stand-in, not MongoDB".into()),
            version: Some("7.0.0-standin".into()),
            git_version: Some("abc".into()),
            build_info_error: Some("e".into()),
            role: Some("mongos".into()),
            replica_set: Some("rs0".into()),
            max_wire_version: Some(21),
            hello_error: Some("e".into()),
            hosts: Some("localhost:27017".into()),
            client_url: Some("mongodb://localhost:27017/ycsb?w=1".into()),
            client_max_pool_size: Some(8),
            client_database: Some("ycsb".into()),
            write_concern: Some("w=1".into()),
            read_preference: Some("primary".into()),
            threads: Some(8),
            error_classes: [("timeout".to_string(), 3u64)].into_iter().collect(),
            run_stopped: Some("was interrupted".into()),
        };
        d.client_cpu = ClientCpu {
            user_us: 5,
            system_us: 6,
        };
        d.validity
            .invalid("sh0 (localhost:41110) stopped answering at 5.2 s for 20.1 s");
        d.warmup_s = 0.0;
        let outage = crate::measure::timeline::Outage {
            subject: "sh0 (localhost:41110)".into(),
            from_s: 5.2,
            duration_s: 20.1,
            ongoing: false,
        };
        d.timeline = crate::measure::timeline::Timeline {
            seconds: vec![crate::measure::timeline::TimelineSecond {
                second: 0,
                operations: [("READ".to_string(), 10u64)].into_iter().collect(),
                errors: [("READ".to_string(), 1u64)].into_iter().collect(),
                answered: vec!["mongos (localhost:27017)".into()],
                silent: vec!["sh0 (localhost:41110)".into()],
                probe_ms: [("mongos (localhost:27017)".to_string(), 3u32)]
                    .into_iter()
                    .collect(),
            }],
            probed: vec!["sh0 (localhost:41110)".into()],
            member_outages: vec![outage.clone()],
            stalls: vec![outage.clone()],
            dead_member: Some(outage),
            no_primary: vec![
                crate::measure::timeline::NoPrimary {
                    set: "sh0".into(),
                    from_s: 12.1,
                    duration_s: 10.8,
                    ongoing: false,
                    new_primary: Some("sh0-1 (localhost:41111)".into()),
                    config_server: false,
                },
                crate::measure::timeline::NoPrimary {
                    set: "cfg".into(),
                    from_s: 30.0,
                    duration_s: 1.5,
                    ongoing: false,
                    new_primary: Some("cfg-1 (localhost:41120)".into()),
                    config_server: true,
                },
            ],
        };
        d.validity.server_stalls = Some(crate::measure::timeline::StallCount {
            count: 1,
            longest_s: 20.1,
            total_s: 20.1,
        });
        d.host_load = Some(crate::measure::host_load::HostLoad {
            cores: 2,
            other_cores: Some(0.1),
            steal_cores: 0.0,
            client_cores: 0.8,
            busy_cores: 1.8,
            server_cpu_us: [("single".to_string(), 900_000u64)].into_iter().collect(),
            server_cpu_missing: vec!["cfg0".into()],
            load_before: Some(0.4),
            load_after: Some(1.2),
        });
        d.schedule = Some(Schedule {
            late: 12,
            unsent: 3,
        });
        d.inserted_keys = Some(KeySpan {
            first: 1_000,
            end: 1_900,
        });
        d.clients = vec![ClientEntry::of(0, "bench-1", &d)];
        // A client pod's entry says where it ran: every field shown.
        d.clients[0].pod = Some(super::super::ClientPod {
            pod: "r-run-clients-0-abcde".into(),
            node: "load-1".into(),
            image_digest: "ghcr.io/o/microshard@sha256:0f1e".into(),
            cpu_limit: Some("2".into()),
            colocated: false,
        });
        let value = serde_json::to_value(&d).unwrap();

        let documented = documented_fields();
        assert!(documented.len() > 30, "field table not found or too short");
        let free_form: Vec<String> = documented
            .iter()
            .filter(|(_, t)| t.iter().any(|t| t == "any"))
            .map(|(p, _)| p.clone())
            .collect();
        let mut observed = Vec::new();
        flatten(&value, "", &free_form, &mut observed);

        for (path, ty) in &observed {
            let Some((_, allowed)) = documented.iter().find(|(p, _)| p == path) else {
                panic!("field {path} is serialized but not documented in docs/result-schema.md");
            };
            let ok = allowed.iter().any(|a| {
                a == ty || a == "any" || (a == "number" && (*ty == "float" || *ty == "integer"))
            });
            assert!(ok, "field {path} is {ty}, documented as {allowed:?}");
        }
        for (path, _) in &documented {
            assert!(
                observed.iter().any(|(p, _)| p == path),
                "field {path} is documented but not serialized"
            );
        }
        // The histogram is the compressed V2 encoding, as the document says.
        assert!(d.measurements[0].histogram.starts_with("HISTF"));
    }

    #[test]
    fn host_fact_parsers() {
        assert_eq!(
            parse_cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: x\n"),
            Some("AMD EPYC 7B13".to_string())
        );
        assert_eq!(
            parse_mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        assert_eq!(
            parse_bracketed("always [madvise] never\n"),
            Some("madvise".to_string())
        );
        assert_eq!(parse_bracketed("none"), None);
        let facts = HostFacts::collect();
        assert!(facts.cpu_count >= 1);
    }

    #[test]
    fn client_cpu_advances() {
        let before = ClientCpu::now();
        // Burn a little CPU deterministically.
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        assert_ne!(x, 1);
        let used = ClientCpu::now().since(&before);
        assert!(used.total_us() > 0);
    }
}

#[cfg(test)]
mod merge_props {
    use super::*;
    use crate::measure::{MeasurementConfig, Measurements};
    use proptest::prelude::*;

    fn doc_of(values: &[u64]) -> RunDocument {
        let m = Measurements::new(MeasurementConfig::default());
        let c = m.client();
        for &v in values {
            c.record("READ", v, None, Status::Ok);
        }
        let t0 = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap_or_default();
        let overall = Overall {
            runtime_ms: 1000,
            operations: values.len() as u64,
        };
        RunDocument::new("run", t0, t0, &overall, &m.finish()).unwrap_or_else(|e| panic!("{e}"))
    }

    proptest! {
        /// Merging clients adds histograms: every statistic of the merge equals that of one
        /// histogram fed every client's values (never an average of percentiles).
        #[test]
        fn merged_percentiles_equal_one_histogram_of_all_values(
            clients in proptest::collection::vec(
                proptest::collection::vec(1u64..5_000_000, 1..200), 1..6)
        ) {
            let docs: Vec<RunDocument> = clients.iter().map(|v| doc_of(v)).collect();
            let merged = RunDocument::merge_clients(&docs).unwrap_or_else(|e| panic!("{e}"));
            let all: Vec<u64> = clients.iter().flatten().copied().collect();
            let one = doc_of(&all);
            let (Some(m), Some(o)) = (merged.measurement("READ"), one.measurement("READ")) else {
                return Err(TestCaseError::fail("no READ measurement"));
            };
            prop_assert_eq!(
                (m.count, m.min, m.max, m.p50, m.p90, m.p95, m.p99, m.p99_9, m.p99_99),
                (o.count, o.min, o.max, o.p50, o.p90, o.p95, o.p99, o.p99_9, o.p99_99)
            );
            prop_assert!((m.mean - o.mean).abs() < 1e-6 * o.mean.max(1.0));
            prop_assert_eq!(merged.operations, all.len() as u64);
        }
    }
}
