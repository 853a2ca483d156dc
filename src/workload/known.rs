//! The properties microshard knows about: YCSB CoreWorkload, YCSB client, the MongoDB binding, and our own.
//!
//! Used to fill in defaults for `resolved()` (what a run really used) and to suggest corrections for typos.

/// One documented property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownProperty {
    /// Property name, exactly as YCSB spells it.
    pub name: &'static str,
    /// Default value, or `None` when the default is computed from other properties (or there is none).
    pub default: Option<&'static str>,
    /// One line saying what it does.
    pub description: &'static str,
}

const fn p(
    name: &'static str,
    default: Option<&'static str>,
    description: &'static str,
) -> KnownProperty {
    KnownProperty {
        name,
        default,
        description,
    }
}

/// Every known property, grouped: CoreWorkload, client, MongoDB binding, microshard.
pub const KNOWN_PROPERTIES: &[KnownProperty] = &[
    // CoreWorkload
    p(
        "table",
        Some("usertable"),
        "collection name for every operation",
    ),
    p(
        "recordcount",
        Some("0"),
        "records in the data set (0 = 2147483647 inside the workload)",
    ),
    p(
        "operationcount",
        Some("0"),
        "run-phase operations in total (0 = unlimited)",
    ),
    p("fieldcount", Some("10"), "fields per record"),
    p(
        "fieldnameprefix",
        Some("field"),
        "field names are prefix + 0..fieldcount-1",
    ),
    p(
        "fieldlength",
        Some("100"),
        "field value length (maximum for uniform/zipfian)",
    ),
    p(
        "minfieldlength",
        Some("1"),
        "minimum field length for uniform/zipfian lengths",
    ),
    p(
        "fieldlengthdistribution",
        Some("constant"),
        "constant, uniform, zipfian or histogram",
    ),
    p(
        "fieldlengthhistogram",
        Some("hist.txt"),
        "histogram file for fieldlengthdistribution=histogram",
    ),
    p(
        "readallfields",
        Some("true"),
        "reads and scans return all fields (else one random field)",
    ),
    p(
        "readallfieldsbyname",
        Some("false"),
        "with readallfields, reads name every field explicitly",
    ),
    p(
        "writeallfields",
        Some("false"),
        "updates write all fields (else one random field)",
    ),
    p(
        "dataintegrity",
        Some("false"),
        "deterministic values, verified on read (needs constant field length)",
    ),
    p("readproportion", Some("0.95"), "share of READ operations"),
    p(
        "updateproportion",
        Some("0.05"),
        "share of UPDATE operations",
    ),
    p(
        "insertproportion",
        Some("0.0"),
        "share of INSERT operations",
    ),
    p("scanproportion", Some("0.0"), "share of SCAN operations"),
    p(
        "readmodifywriteproportion",
        Some("0.0"),
        "share of READ-MODIFY-WRITE operations",
    ),
    p(
        "requestdistribution",
        Some("uniform"),
        "uniform, zipfian, latest, hotspot, sequential or exponential",
    ),
    p(
        "hotspotdatafraction",
        Some("0.2"),
        "hotspot: fraction of the key range that is hot",
    ),
    p(
        "hotspotopnfraction",
        Some("0.8"),
        "hotspot: fraction of operations on the hot set",
    ),
    p(
        "exponential.percentile",
        Some("95"),
        "exponential: percentile of operations within exponential.frac",
    ),
    p(
        "exponential.frac",
        Some("0.8571428571"),
        "exponential: fraction of records holding that percentile",
    ),
    p("minscanlength", Some("1"), "shortest scan"),
    p("maxscanlength", Some("1000"), "longest scan"),
    p(
        "scanlengthdistribution",
        Some("uniform"),
        "uniform or zipfian scan lengths",
    ),
    p(
        "insertorder",
        Some("hashed"),
        "hashed keys (exactly 'hashed') or ordered keys (anything else)",
    ),
    p(
        "insertstart",
        Some("0"),
        "first key number this client loads / lowest key chosen",
    ),
    p(
        "insertcount",
        None,
        "records this client loads (default recordcount - insertstart)",
    ),
    p(
        "zeropadding",
        Some("1"),
        "minimum digits after the 'user' prefix",
    ),
    p(
        "core_workload_insertion_retry_limit",
        Some("0"),
        "retries of a failed load insert",
    ),
    p(
        "core_workload_insertion_retry_interval",
        Some("3"),
        "seconds between load insert retries (±20 % jitter)",
    ),
    p(
        "core_workload_insertion_keep_going_on_error",
        Some("false"),
        "load continues after a failed insert",
    ),
    // Client
    p(
        "workload",
        None,
        "workload class (site.ycsb.workloads.CoreWorkload)",
    ),
    p("db", Some("site.ycsb.BasicDB"), "database binding class"),
    p("threadcount", Some("1"), "client threads (-threads)"),
    p(
        "target",
        Some("0"),
        "target operations per second for the whole client, 0 = unthrottled (-target)",
    ),
    p(
        "dotransactions",
        Some("true"),
        "true = run phase (-t), false = load phase (-load)",
    ),
    p(
        "status",
        Some("false"),
        "periodic status line on stderr (-s)",
    ),
    p(
        "label",
        Some(""),
        "prefix of the status line timestamp (-l)",
    ),
    p(
        "status.interval",
        Some("10"),
        "seconds between status lines",
    ),
    p(
        "maxexecutiontime",
        Some("0"),
        "stop after this many seconds, 0 = no limit",
    ),
    p(
        "exporter",
        Some("site.ycsb.measurements.exporter.TextMeasurementsExporter"),
        "final report format",
    ),
    p(
        "exportfile",
        None,
        "write the final report to this file instead of stdout",
    ),
    p(
        "spin.sleep",
        Some("false"),
        "busy-wait instead of sleeping when throttled",
    ),
    p(
        "measurementtype",
        Some("hdrhistogram"),
        "hdrhistogram, histogram, hdrhistogram+histogram, hdrhistogram+raw, timeseries or raw",
    ),
    p(
        "measurement.interval",
        Some("op"),
        "op, intended or both (coordinated-omission correction)",
    ),
    p(
        "measurement.trackjvm",
        Some("false"),
        "JVM statistics in status lines (no effect here)",
    ),
    p(
        "hdrhistogram.percentiles",
        Some("50,95,99"),
        "percentiles in the final report",
    ),
    p(
        "hdrhistogram.fileoutput",
        Some("false"),
        "write HdrHistogram interval logs",
    ),
    p(
        "hdrhistogram.output.path",
        Some(""),
        "prefix of the HdrHistogram log files",
    ),
    p(
        "measurement.histogram.verbose",
        Some("false"),
        "dump histogram buckets",
    ),
    p(
        "histogram.buckets",
        Some("1000"),
        "1 ms buckets of the histogram measurement",
    ),
    p(
        "timeseries.granularity",
        Some("1000"),
        "milliseconds per timeseries point",
    ),
    p(
        "measurement.raw.output_file",
        Some(""),
        "raw measurement output file",
    ),
    p(
        "measurement.raw.no_summary",
        Some("false"),
        "raw measurement without summary",
    ),
    p(
        "reportlatencyforeacherror",
        Some("false"),
        "separate latency measurement per error status",
    ),
    p(
        "latencytrackederrors",
        None,
        "statuses that get their own latency measurement",
    ),
    // MongoDB binding
    p(
        "mongodb.url",
        Some("mongodb://localhost:27017/ycsb?w=1"),
        "connection string (database from the path, else ycsb)",
    ),
    p(
        "batchsize",
        Some("1"),
        "inserts per insertMany (sync binding name)",
    ),
    p(
        "mongodb.batchsize",
        None,
        "alias of batchsize (async binding name); batchsize wins when both are set",
    ),
    p("mongodb.upsert", Some("false"), "inserts become upserts"),
    p(
        "mongodb.maxconnections",
        None,
        "legacy: becomes maxPoolSize in the URL",
    ),
    p(
        "mongodb.threadsAllowedToBlockForConnectionMultiplier",
        None,
        "legacy: becomes waitQueueMultiple in the URL",
    ),
    p(
        "mongodb.writeConcern",
        None,
        "legacy: errors_ignored, unacknowledged, acknowledged, journaled, replica_acknowledged, majority",
    ),
    p(
        "mongodb.readPreference",
        None,
        "legacy: primary, primary_preferred, secondary, secondary_preferred, nearest",
    ),
    // microshard's own
    p(
        "readbatchsize",
        Some("1"),
        "keys per READ (one $in query over distinct keys when > 1)",
    ),
    p(
        "microshard.maxerrorrate",
        Some("0.01"),
        "a larger fraction of failed operations makes the result invalid (set explicitly, it also stops the run)",
    ),
    p(
        "microshard.stallseconds",
        Some("2"),
        "no completed operation, or a member not answering its probe, for this long makes the result invalid",
    ),
    p(
        "microshard.warmup",
        Some("0"),
        "seconds at the start left out of every measurement",
    ),
    p(
        "microshard.insertstride",
        Some("1"),
        "run-phase inserts of N clients: keys recordcount + k*stride + offset, so clients never collide",
    ),
    p(
        "microshard.insertoffset",
        Some("0"),
        "this client's offset among microshard.insertstride clients",
    ),
];

/// The entry for `name`, if known.
pub fn lookup(name: &str) -> Option<&'static KnownProperty> {
    KNOWN_PROPERTIES.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = KNOWN_PROPERTIES.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
