//! Every property microshard reads, declared once: its name, its typed default, the default as `resolved()`
//! prints it, and one line saying what it does.
//!
//! Call sites read `props.value(&prop::FIELDCOUNT)` (or use `prop::FIELDCOUNT.name` in messages) instead of
//! writing `"fieldcount"` and `10` again, and [`KNOWN_PROPERTIES`] (defaults for `resolved()`, "did you mean"
//! suggestions) is generated from the same declarations, so a name, its default and the list cannot drift apart.
//! The properties are YCSB's (CoreWorkload, client, MongoDB binding) plus microshard's own; `docs/engine.md`
//! says where microshard reads them differently ("Binding", "Runner", "Several clients").

/// One documented property, as listed for `resolved()` and for typo suggestions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownProperty {
    /// Property name, exactly as YCSB spells it.
    pub name: &'static str,
    /// Default value, or `None` when the default is computed from other properties (or there is none).
    pub default: Option<&'static str>,
    /// One line saying what it does.
    pub description: &'static str,
}

/// A property's name with its typed default, so a call site never repeats either.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prop<T> {
    /// Property name, exactly as YCSB spells it.
    pub name: &'static str,
    /// The value used when the property is not set.
    pub default: T,
}

/// A property without a fixed default (computed from others, or simply absent), so only its name is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Name {
    /// Property name, exactly as YCSB spells it.
    pub name: &'static str,
}

/// Declares each property once; generates its constant and its [`KNOWN_PROPERTIES`] entry.
///
/// `NAME: Type = "name", default, "default as printed"` for a typed default; `NAME = "name"` for none.
macro_rules! properties {
    ($(
        $(#[doc = $about:literal])+
        $konst:ident $(: $ty:ty = $name:literal, $default:expr, $text:literal)? $(= $bare:literal)?;
    )*) => {
        $(properties!(@one [$($about)+] $konst $(: $ty = $name, $default, $text)? $(= $bare)?);)*

        /// Every known property, in declaration order: CoreWorkload, client, MongoDB binding, microshard.
        pub const KNOWN_PROPERTIES: &[KnownProperty] = &[$(
            KnownProperty {
                name: $konst.name,
                default: properties!(@default $($text)?),
                description: properties!(@line [$($about)+]),
            },
        )*];

        /// Every declaration as (constant, property name), for the test that no declared property
        /// is accepted and silently ignored (`workload::java_only`).
        #[cfg(test)]
        pub(crate) const DECLARED: &[(&str, &str)] = &[$((stringify!($konst), $konst.name),)*];

        /// Whether every typed default agrees with the text `resolved()` prints for it (checked by a test).
        #[cfg(test)]
        fn defaults_agree() -> Vec<(&'static str, bool)> {
            vec![$($(($name, Agree::agrees(&$konst.default, $text)),)?)*]
        }
    };
    (@one [$($about:literal)+] $konst:ident : $ty:ty = $name:literal, $default:expr, $text:literal) => {
        $(#[doc = $about])+
        pub(crate) const $konst: Prop<$ty> = Prop { name: $name, default: $default };
    };
    (@one [$($about:literal)+] $konst:ident = $bare:literal) => {
        $(#[doc = $about])+
        pub(crate) const $konst: Name = Name { name: $bare };
    };
    (@default $text:literal) => { Some($text) };
    (@default) => { None };
    // The description is the first doc line, without its leading space.
    (@line [$first:literal $($rest:literal)*]) => { $first.trim_ascii_start() };
}

properties! {
    // CoreWorkload
    /// collection name for every operation
    TABLE: &'static str = "table", "usertable", "usertable";
    /// records in the data set (0 = 2147483647 inside the workload)
    RECORDCOUNT: i64 = "recordcount", 0, "0";
    /// run-phase operations in total (0 = unlimited)
    OPERATIONCOUNT: u64 = "operationcount", 0, "0";
    /// fields per record
    FIELDCOUNT: i64 = "fieldcount", 10, "10";
    /// field names are prefix + 0..fieldcount-1
    FIELDNAMEPREFIX: &'static str = "fieldnameprefix", "field", "field";
    /// field value length (maximum for uniform/zipfian)
    FIELDLENGTH: i64 = "fieldlength", 100, "100";
    /// minimum field length for uniform/zipfian lengths
    MINFIELDLENGTH: i64 = "minfieldlength", 1, "1";
    /// constant, uniform, zipfian or histogram
    FIELDLENGTHDISTRIBUTION: &'static str = "fieldlengthdistribution", "constant", "constant";
    /// histogram file for fieldlengthdistribution=histogram
    FIELDLENGTHHISTOGRAM: &'static str = "fieldlengthhistogram", "hist.txt", "hist.txt";
    /// reads and scans return all fields (else one random field)
    READALLFIELDS: bool = "readallfields", true, "true";
    /// with readallfields, reads name every field explicitly
    READALLFIELDSBYNAME: bool = "readallfieldsbyname", false, "false";
    /// updates write all fields (else one random field)
    WRITEALLFIELDS: bool = "writeallfields", false, "false";
    /// deterministic values, verified on read (needs constant field length)
    DATAINTEGRITY: bool = "dataintegrity", false, "false";
    /// share of READ operations
    READPROPORTION: f64 = "readproportion", 0.95, "0.95";
    /// share of UPDATE operations
    UPDATEPROPORTION: f64 = "updateproportion", 0.05, "0.05";
    /// share of INSERT operations
    INSERTPROPORTION: f64 = "insertproportion", 0.0, "0.0";
    /// share of SCAN operations
    SCANPROPORTION: f64 = "scanproportion", 0.0, "0.0";
    /// share of READ-MODIFY-WRITE operations
    READMODIFYWRITEPROPORTION: f64 = "readmodifywriteproportion", 0.0, "0.0";
    /// uniform, zipfian, latest, hotspot, sequential or exponential
    REQUESTDISTRIBUTION: &'static str = "requestdistribution", "uniform", "uniform";
    /// hotspot: fraction of the key range that is hot
    HOTSPOTDATAFRACTION: f64 = "hotspotdatafraction", 0.2, "0.2";
    /// hotspot: fraction of operations on the hot set
    HOTSPOTOPNFRACTION: f64 = "hotspotopnfraction", 0.8, "0.8";
    /// exponential: percentile of operations within exponential.frac
    EXPONENTIAL_PERCENTILE: f64 = "exponential.percentile", 95.0, "95";
    /// exponential: fraction of records holding that percentile
    EXPONENTIAL_FRAC: f64 = "exponential.frac", 0.8571428571, "0.8571428571";
    /// shortest scan
    MINSCANLENGTH: i32 = "minscanlength", 1, "1";
    /// longest scan
    MAXSCANLENGTH: i32 = "maxscanlength", 1000, "1000";
    /// uniform or zipfian scan lengths
    SCANLENGTHDISTRIBUTION: &'static str = "scanlengthdistribution", "uniform", "uniform";
    /// hashed keys (exactly 'hashed') or ordered keys (anything else)
    INSERTORDER: &'static str = "insertorder", "hashed", "hashed";
    /// first key number this client loads / lowest key chosen
    INSERTSTART: i64 = "insertstart", 0, "0";
    /// records this client loads (default recordcount - insertstart)
    INSERTCOUNT = "insertcount";
    /// minimum digits after the 'user' prefix
    ZEROPADDING: i32 = "zeropadding", 1, "1";
    /// retries of a failed load insert
    CORE_WORKLOAD_INSERTION_RETRY_LIMIT: u32 = "core_workload_insertion_retry_limit", 0, "0";
    /// seconds between load insert retries (±20 % jitter)
    CORE_WORKLOAD_INSERTION_RETRY_INTERVAL: i64 = "core_workload_insertion_retry_interval", 3, "3";
    /// load continues after a failed insert
    CORE_WORKLOAD_INSERTION_KEEP_GOING_ON_ERROR: bool =
        "core_workload_insertion_keep_going_on_error", false, "false";
    // Client
    /// workload class (site.ycsb.workloads.CoreWorkload)
    WORKLOAD = "workload";
    /// database binding class (no effect here: always the MongoDB binding)
    DB: &'static str = "db", "site.ycsb.BasicDB", "site.ycsb.BasicDB";
    /// client threads (-threads)
    THREADCOUNT: u64 = "threadcount", 1, "1";
    /// target operations per second for the whole client, 0 = unthrottled (-target)
    TARGET: i64 = "target", 0, "0";
    /// true = run phase (-t), false = load phase (-load)
    DOTRANSACTIONS: bool = "dotransactions", true, "true";
    /// periodic status line on stderr (-s)
    STATUS: bool = "status", false, "false";
    /// prefix of the status line timestamp (-l)
    LABEL: &'static str = "label", "", "";
    /// seconds between status lines
    STATUS_INTERVAL: u64 = "status.interval", 10, "10";
    /// stop after this many seconds, 0 = no limit
    MAXEXECUTIONTIME: u64 = "maxexecutiontime", 0, "0";
    /// final report format
    EXPORTER: &'static str = "exporter",
        "site.ycsb.measurements.exporter.TextMeasurementsExporter",
        "site.ycsb.measurements.exporter.TextMeasurementsExporter";
    /// write the final report to this file instead of stdout
    EXPORTFILE = "exportfile";
    /// busy-wait instead of sleeping when throttled
    SPIN_SLEEP: bool = "spin.sleep", false, "false";
    /// hdrhistogram, histogram, hdrhistogram+histogram, hdrhistogram+raw, timeseries or raw
    MEASUREMENTTYPE: &'static str = "measurementtype", "hdrhistogram", "hdrhistogram";
    /// op, intended or both (coordinated-omission correction)
    MEASUREMENT_INTERVAL: &'static str = "measurement.interval", "op", "op";
    /// JVM statistics in status lines (no effect here: no JVM)
    MEASUREMENT_TRACKJVM: bool = "measurement.trackjvm", false, "false";
    /// percentiles in the final report
    HDRHISTOGRAM_PERCENTILES: &'static str = "hdrhistogram.percentiles", "50,95,99", "50,95,99";
    /// write HdrHistogram interval logs
    HDRHISTOGRAM_FILEOUTPUT: bool = "hdrhistogram.fileoutput", false, "false";
    /// prefix of the HdrHistogram log files
    HDRHISTOGRAM_OUTPUT_PATH: &'static str = "hdrhistogram.output.path", "", "";
    /// dump histogram buckets
    MEASUREMENT_HISTOGRAM_VERBOSE: bool = "measurement.histogram.verbose", false, "false";
    /// 1 ms buckets of the histogram measurement
    HISTOGRAM_BUCKETS: usize = "histogram.buckets", 1000, "1000";
    /// milliseconds per timeseries point
    TIMESERIES_GRANULARITY: u64 = "timeseries.granularity", 1000, "1000";
    /// raw measurement output file
    MEASUREMENT_RAW_OUTPUT_FILE: &'static str = "measurement.raw.output_file", "", "";
    /// raw measurement without summary
    MEASUREMENT_RAW_NO_SUMMARY: bool = "measurement.raw.no_summary", false, "false";
    /// separate latency measurement per error status
    REPORTLATENCYFOREACHERROR: bool = "reportlatencyforeacherror", false, "false";
    /// statuses that get their own latency measurement
    LATENCYTRACKEDERRORS = "latencytrackederrors";
    // MongoDB binding
    /// connection string (database from the path, else ycsb)
    MONGODB_URL: &'static str = "mongodb.url",
        "mongodb://localhost:27017/ycsb?w=1", "mongodb://localhost:27017/ycsb?w=1";
    /// inserts per insertMany (sync binding name)
    BATCHSIZE: usize = "batchsize", 1, "1";
    /// alias of batchsize (async binding name); batchsize wins when both are set
    MONGODB_BATCHSIZE = "mongodb.batchsize";
    /// inserts become upserts
    MONGODB_UPSERT: bool = "mongodb.upsert", false, "false";
    /// legacy: becomes maxPoolSize in the URL
    MONGODB_MAXCONNECTIONS = "mongodb.maxconnections";
    /// legacy: becomes waitQueueMultiple in the URL
    MONGODB_THREADS_ALLOWED_TO_BLOCK = "mongodb.threadsAllowedToBlockForConnectionMultiplier";
    /// legacy: errors_ignored, unacknowledged, acknowledged, journaled, replica_acknowledged, majority
    MONGODB_WRITE_CONCERN = "mongodb.writeConcern";
    /// legacy: primary, primary_preferred, secondary, secondary_preferred, nearest
    MONGODB_READ_PREFERENCE = "mongodb.readPreference";
    // microshard's own (docs/engine.md, "Runner" and "Several clients")
    /// keys per READ (one $in query over distinct keys when > 1)
    READBATCHSIZE: usize = "readbatchsize", 1, "1";
    /// a larger fraction of failed operations makes the result invalid (set explicitly, it also stops the run)
    MAXERRORRATE: f64 = "microshard.maxerrorrate", 0.01, "0.01";
    /// a member not answering its probe this long makes the result invalid; no completed operation this long while every member answers is a server stall (degraded)
    STALLSECONDS: f64 = "microshard.stallseconds", 2.0, "2";
    /// a member silent this long is dead: the cell ends at once and the topology's later cells are not run (at least microshard.stallseconds)
    DEADSECONDS: f64 = "microshard.deadseconds", 10.0, "10";
    /// seconds at the start left out of every measurement
    WARMUP: f64 = "microshard.warmup", 0.0, "0";
    /// other processes (or CPU steal) using more than this share of the machine's cores during a run make its result degraded ("busy host")
    BUSYHOST: f64 = "microshard.busyhost", 0.25, "0.25";
    /// seconds a run may wait, before it starts, for other processes to leave the host quiet (within microshard.busyhost); 0 does not wait
    WAITQUIET: f64 = "microshard.waitquiet", 0.0, "0";
    /// run-phase inserts of N clients: keys recordcount + k*stride + offset, so clients never collide
    INSERTSTRIDE: i64 = "microshard.insertstride", 1, "1";
    /// this client's offset among microshard.insertstride clients
    INSERTOFFSET: i64 = "microshard.insertoffset", 0, "0";
}

/// The entry for `name`, if known.
pub(crate) fn lookup(name: &str) -> Option<&'static KnownProperty> {
    KNOWN_PROPERTIES.iter().find(|k| k.name == name)
}

/// Whether a typed default and the text `resolved()` prints for it mean the same value.
#[cfg(test)]
trait Agree {
    fn agrees(&self, text: &str) -> bool;
}

#[cfg(test)]
macro_rules! agree_by_parsing {
    ($($t:ty),*) => {$(
        impl Agree for $t {
            fn agrees(&self, text: &str) -> bool {
                <$t as super::PropertyValue>::parse_property(text).is_ok_and(|v| v == *self)
            }
        }
    )*};
}

#[cfg(test)]
agree_by_parsing!(i32, i64, u32, u64, usize, f64, bool);

#[cfg(test)]
impl Agree for &'static str {
    fn agrees(&self, text: &str) -> bool {
        *self == text
    }
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

    /// The known list is generated from the declarations: every typed default is listed with the text that parses
    /// back to it, and the untyped ones are listed without a default.
    #[test]
    fn known_list_is_the_declarations() {
        let checks = defaults_agree();
        for (name, ok) in &checks {
            assert!(ok, "{name}: typed default and listed default differ");
            assert!(lookup(name).is_some_and(|k| k.default.is_some()), "{name}");
        }
        let untyped = [
            INSERTCOUNT,
            WORKLOAD,
            EXPORTFILE,
            LATENCYTRACKEDERRORS,
            MONGODB_BATCHSIZE,
        ];
        for n in untyped {
            assert_eq!(lookup(n.name).map(|k| k.default), Some(None), "{}", n.name);
        }
        let without_default = KNOWN_PROPERTIES
            .iter()
            .filter(|k| k.default.is_none())
            .count();
        assert_eq!(checks.len() + without_default, KNOWN_PROPERTIES.len());
        assert_eq!(lookup(THREADCOUNT.name).and_then(|k| k.default), Some("1"));
        assert_eq!(
            lookup(STALLSECONDS.name).map(|k| k.description),
            Some(
                "a member not answering its probe this long makes the result invalid; no completed operation this long while every member answers is a server stall (degraded)"
            )
        );
    }
}
