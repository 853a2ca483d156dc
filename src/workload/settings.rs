//! The core workload's settings, read from its properties section by section in YCSB's order:
//! the key range, the fields, the operation mix, the keys and their chooser, the scans. Each
//! check names the property at fault (`docs/engine.md`, bad input); `CoreWorkload::from_properties`
//! assembles the sections.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::WorkloadError;
use super::generators::{
    AcknowledgedCounter, Discrete, Exponential, Histogram, Hotspot, OpKind, ScrambledZipfian,
    Sequential, SkewedLatest, UniformLong, Zipfian,
};
use super::keys::java_int;
use super::prop::{self, Prop};
use super::properties::{Properties, PropertyError};
use super::values::java_hashmap_order;

/// MongoDB's maximum BSON document size.
pub(crate) const MONGODB_MAX_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;

/// How read/update/scan keys are chosen (`requestdistribution`).
#[derive(Debug)]
pub(super) enum KeyChooser {
    Uniform(UniformLong),
    Zipfian(ScrambledZipfian),
    /// The template each client copies (the zeta sum is computed once).
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Sequential(Sequential),
    Exponential(Exponential),
}

/// `fieldlengthdistribution`.
#[derive(Debug)]
pub(super) enum FieldLength {
    Constant(i64),
    Uniform(UniformLong),
    Zipfian(Zipfian),
    Histogram(Histogram),
}

/// `scanlengthdistribution`.
#[derive(Debug)]
pub(super) enum ScanLength {
    Uniform(UniformLong),
    Zipfian(Zipfian),
}

/// Reads a proportion: a finite, non-negative double.
pub(super) fn proportion(props: &Properties, prop: &Prop<f64>) -> Result<f64, PropertyError> {
    let (key, v) = (prop.name, props.value(prop)?);
    if !v.is_finite() || v < 0.0 {
        return Err(props.invalid(key, format!("{v} is not a proportion (must be 0 or more)")));
    }
    Ok(v)
}

/// Reads a fraction in [0, 1].
pub(super) fn fraction(props: &Properties, prop: &Prop<f64>) -> Result<f64, PropertyError> {
    let (key, v) = (prop.name, props.value(prop)?);
    if !(0.0..=1.0).contains(&v) {
        return Err(props.invalid(key, format!("{v} is outside [0, 1]")));
    }
    Ok(v)
}

/// The keys a phase works on: `recordcount` (0 means Integer.MAX_VALUE inside the workload, as
/// in YCSB), and the `insertstart`/`insertcount` window within it.
#[derive(Debug)]
pub(super) struct KeyRange {
    pub(super) recordcount: i64,
    pub(super) insertstart: i64,
    pub(super) insertcount: i64,
}

impl KeyRange {
    pub(super) fn read(props: &Properties) -> Result<KeyRange, PropertyError> {
        let mut recordcount = props.value_in(&prop::RECORDCOUNT, 0..)?;
        if recordcount > i64::from(i32::MAX) {
            return Err(props.invalid(
                prop::RECORDCOUNT.name,
                format!(
                    "{recordcount} is above 2147483647; YCSB key numbers are 32-bit ints, keys would repeat"
                ),
            ));
        }
        if recordcount == 0 {
            recordcount = i64::from(i32::MAX);
        }
        let insertstart = props.value_in(&prop::INSERTSTART, 0..)?;
        let insertcount =
            props.parse_or::<i64>(prop::INSERTCOUNT.name, recordcount - insertstart)?;
        if insertcount < 1 {
            return Err(props.invalid(
                if props.contains(prop::INSERTCOUNT.name) {
                    prop::INSERTCOUNT.name
                } else {
                    prop::INSERTSTART.name
                },
                format!("the key range has {insertcount} keys; it needs at least one"),
            ));
        }
        if insertstart
            .checked_add(insertcount)
            .is_none_or(|end| end > recordcount)
        {
            return Err(props.invalid(
                prop::INSERTCOUNT.name,
                format!(
                    "insertstart ({insertstart}) + insertcount ({insertcount}) is more than recordcount ({recordcount})"
                ),
            ));
        }
        Ok(KeyRange {
            recordcount,
            insertstart,
            insertcount,
        })
    }
}

/// The fields of a record: how many, their names (and Java's HashMap order of them), their
/// length, and which of them reads and updates touch.
#[derive(Debug)]
pub(crate) struct Fields {
    pub(super) count: i64,
    pub(super) names: Vec<Arc<str>>,
    pub(super) map_order: Vec<usize>,
    pub(super) length: FieldLength,
    pub(super) readallfields: bool,
    pub(super) readallfieldsbyname: bool,
    pub(super) writeallfields: bool,
    pub(crate) dataintegrity: bool,
}

impl Fields {
    pub(super) fn read(props: &Properties) -> Result<Fields, WorkloadError> {
        let count = props.value_in(&prop::FIELDCOUNT, 1..)?;
        let prefix = props.text(&prop::FIELDNAMEPREFIX);
        let fieldlength = props.value_in(&prop::FIELDLENGTH, 0..)?;
        let length = field_length(props, fieldlength)?;
        let max_field_len = match &length {
            FieldLength::Histogram(h) => h.max_value(),
            _ => fieldlength,
        };
        check_document_size(props, count, prefix, max_field_len)?;
        let names: Vec<Arc<str>> = (0..count)
            .map(|i| Arc::from(format!("{prefix}{i}")))
            .collect();
        let map_order = java_hashmap_order(&names);
        let readallfields = props.value(&prop::READALLFIELDS)?;
        let readallfieldsbyname = props.value(&prop::READALLFIELDSBYNAME)?;
        let writeallfields = props.value(&prop::WRITEALLFIELDS)?;
        let dataintegrity = props.value(&prop::DATAINTEGRITY)?;
        if dataintegrity && !matches!(length, FieldLength::Constant(_)) {
            let why = "needs fieldlengthdistribution=constant (values are checked by length)";
            return Err(props.invalid(prop::DATAINTEGRITY.name, why).into());
        }
        Ok(Fields {
            count,
            names,
            map_order,
            length,
            readallfields,
            readallfieldsbyname,
            writeallfields,
            dataintegrity,
        })
    }
}

/// `fieldlengthdistribution` with its bounds (`minfieldlength` up to `fieldlength`).
pub(super) fn field_length(
    props: &Properties,
    fieldlength: i64,
) -> Result<FieldLength, WorkloadError> {
    let minfieldlength = props.value(&prop::MINFIELDLENGTH)?;
    let dist = props.text(&prop::FIELDLENGTHDISTRIBUTION);
    Ok(match dist {
        "constant" => FieldLength::Constant(java_int(fieldlength)),
        "uniform" | "zipfian" => {
            if minfieldlength < 0 || minfieldlength > fieldlength {
                let range = crate::props::between(0, format!("fieldlength ({fieldlength})"));
                let why = format!("{minfieldlength} {range}");
                return Err(props.invalid(prop::MINFIELDLENGTH.name, why).into());
            }
            if dist == "uniform" {
                FieldLength::Uniform(
                    UniformLong::new(minfieldlength, fieldlength).ok_or_else(|| {
                        props.invalid(prop::FIELDLENGTH.name, "empty length range")
                    })?,
                )
            } else {
                FieldLength::Zipfian(Zipfian::new(minfieldlength, fieldlength))
            }
        }
        "histogram" => FieldLength::Histogram(load_histogram(props)?),
        other => {
            let why = format!(
                "unknown field length distribution {other:?} (expected constant, uniform, zipfian or histogram)"
            );
            let key = prop::FIELDLENGTHDISTRIBUTION.name;
            return Err(props.invalid(key, why).into());
        }
    })
}

/// The operation mix, in YCSB's fixed order, and the insert proportion (the zipfian key
/// chooser sizes its range by it).
pub(super) fn operation_mix(props: &Properties) -> Result<(Discrete, f64), WorkloadError> {
    let weights = [
        (OpKind::Read, proportion(props, &prop::READPROPORTION)?),
        (OpKind::Update, proportion(props, &prop::UPDATEPROPORTION)?),
        (OpKind::Insert, proportion(props, &prop::INSERTPROPORTION)?),
        (OpKind::Scan, proportion(props, &prop::SCANPROPORTION)?),
        (
            OpKind::ReadModifyWrite,
            proportion(props, &prop::READMODIFYWRITEPROPORTION)?,
        ),
    ];
    let chooser = Discrete::new(&weights).ok_or_else(|| {
        props.invalid(
            prop::READPROPORTION.name,
            "all operation proportions (read, update, insert, scan, readmodifywrite) are zero",
        )
    })?;
    Ok((chooser, weights[2].1))
}

/// How keys are made and chosen: their order and padding, the inserts' stride and offset (a
/// client of several), and `requestdistribution`.
#[derive(Debug)]
pub(super) struct Keys {
    pub(super) ordered: bool,
    pub(super) zeropadding: i32,
    pub(super) insert_keys: AcknowledgedCounter,
    pub(super) insert_stride: i64,
    pub(super) insert_offset: i64,
    pub(super) chooser: KeyChooser,
}

impl Keys {
    pub(super) fn read(
        props: &Properties,
        range: &KeyRange,
        insertproportion: f64,
    ) -> Result<Keys, PropertyError> {
        let ordered = props.text(&prop::INSERTORDER) != "hashed";
        let zeropadding = props.value(&prop::ZEROPADDING)?;
        let insert_keys = AcknowledgedCounter::new(range.recordcount);
        let insert_stride: i64 = props.value(&prop::INSERTSTRIDE)?;
        let insert_offset: i64 = props.value(&prop::INSERTOFFSET)?;
        if insert_stride < 1 || !(0..insert_stride).contains(&insert_offset) {
            return Err(props.invalid(
                prop::INSERTOFFSET.name,
                format!("must be in 0..microshard.insertstride ({insert_stride})"),
            ));
        }
        let chooser = key_chooser(props, range, insertproportion, &insert_keys)?;
        Ok(Keys {
            ordered,
            zeropadding,
            insert_keys,
            insert_stride,
            insert_offset,
            chooser,
        })
    }
}

/// `requestdistribution` over the key range.
pub(super) fn key_chooser(
    props: &Properties,
    range: &KeyRange,
    insertproportion: f64,
    insert_keys: &AcknowledgedCounter,
) -> Result<KeyChooser, PropertyError> {
    let KeyRange {
        recordcount,
        insertstart,
        insertcount,
    } = *range;
    let last_key = insertstart + insertcount - 1;
    Ok(match props.text(&prop::REQUESTDISTRIBUTION) {
        "uniform" => KeyChooser::Uniform(
            UniformLong::new(insertstart, last_key)
                .ok_or_else(|| props.invalid(prop::INSERTCOUNT.name, "empty key range"))?,
        ),
        "sequential" => KeyChooser::Sequential(
            Sequential::new(insertstart, last_key)
                .ok_or_else(|| props.invalid(prop::INSERTCOUNT.name, "empty key range"))?,
        ),
        "zipfian" => {
            // YCSB reads operationcount without a default here and crashes when it is absent; 0 instead.
            let opcount = props.value(&prop::OPERATIONCOUNT)?;
            let expectednewkeys = (opcount as f64 * insertproportion * 2.0) as i32 as i64;
            KeyChooser::Zipfian(ScrambledZipfian::new(
                insertstart,
                insertstart + insertcount + expectednewkeys,
            ))
        }
        "latest" => KeyChooser::Latest(SkewedLatest::new(insert_keys.last_value())),
        "hotspot" => {
            let data = fraction(props, &prop::HOTSPOTDATAFRACTION)?;
            let opn = fraction(props, &prop::HOTSPOTOPNFRACTION)?;
            KeyChooser::Hotspot(Hotspot::new(insertstart, last_key, data, opn).ok_or_else(|| {
                props.invalid(prop::HOTSPOTDATAFRACTION.name,
                    format!(
                        "{data} of {insertcount} keys leaves the hot or the cold set empty while hotspotopnfraction ({opn}) sends operations to it"
                    ),
                )
            })?)
        }
        "exponential" => {
            let percentile = props.value(&prop::EXPONENTIAL_PERCENTILE)?;
            if !(percentile > 0.0 && percentile < 100.0) {
                return Err(props.invalid(
                    prop::EXPONENTIAL_PERCENTILE.name,
                    format!("{percentile} {} (exclusive)", crate::props::between(0, 100)),
                ));
            }
            let frac = props.value(&prop::EXPONENTIAL_FRAC)?;
            if !(frac > 0.0 && frac.is_finite()) {
                return Err(props.invalid(
                    prop::EXPONENTIAL_FRAC.name,
                    format!("{frac} must be more than 0"),
                ));
            }
            KeyChooser::Exponential(Exponential::new(percentile, recordcount as f64, frac))
        }
        other => {
            return Err(props.invalid(
                prop::REQUESTDISTRIBUTION.name,
                format!(
                    "unknown request distribution {other:?} (expected uniform, zipfian, latest, hotspot, sequential or exponential)"
                ),
            ));
        }
    })
}

/// `scanlengthdistribution` between `minscanlength` and `maxscanlength`.
pub(super) fn scan_length(props: &Properties) -> Result<ScanLength, PropertyError> {
    let minscan = props.value(&prop::MINSCANLENGTH)?;
    let maxscan = props.value(&prop::MAXSCANLENGTH)?;
    if minscan < 1 {
        return Err(props.invalid(
            prop::MINSCANLENGTH.name,
            format!("{minscan} {}", crate::props::at_least(1)),
        ));
    }
    if minscan > maxscan {
        return Err(props.invalid(
            prop::MINSCANLENGTH.name,
            format!("{minscan} is more than maxscanlength ({maxscan})"),
        ));
    }
    let (minscan, maxscan) = (i64::from(minscan), i64::from(maxscan));
    Ok(match props.text(&prop::SCANLENGTHDISTRIBUTION) {
        "uniform" => {
            ScanLength::Uniform(UniformLong::new(minscan, maxscan).ok_or_else(|| {
                props.invalid(prop::MAXSCANLENGTH.name, "empty scan length range")
            })?)
        }
        "zipfian" => ScanLength::Zipfian(Zipfian::new(minscan, maxscan)),
        other => {
            return Err(props.invalid(
                prop::SCANLENGTHDISTRIBUTION.name,
                format!("unknown scan length distribution {other:?} (expected uniform or zipfian)"),
            ));
        }
    })
}

/// Reads the `fieldlengthhistogram` file.
pub(super) fn load_histogram(props: &Properties) -> Result<Histogram, WorkloadError> {
    let path = PathBuf::from(props.text(&prop::FIELDLENGTHHISTOGRAM));
    let text = std::fs::read_to_string(&path).map_err(|e| WorkloadError::HistogramFile {
        path: path.clone(),
        line: None,
        message: e.to_string(),
    })?;
    Histogram::parse(&text).map_err(|(line, message)| WorkloadError::HistogramFile {
        path,
        line: Some(line),
        message,
    })
}

/// Refuses records MongoDB could never store (BSON documents are limited to 16 MiB).
pub(super) fn check_document_size(
    props: &Properties,
    fieldcount: i64,
    prefix: &str,
    max_field_len: i64,
) -> Result<(), PropertyError> {
    // Per field: type byte, name, NUL, binary length, subtype, bytes. Plus _id (key ≤ 4 + 20 digits + padding).
    let digits = (fieldcount.max(1) as f64).log10() as u64 + 1;
    let per_field = 1 + prefix.len() as u64 + digits + 1 + 4 + 1 + max_field_len.max(0) as u64;
    let key_len = 4 + 20u64.max(props.value(&prop::ZEROPADDING)?.max(0) as u64);
    let id = 1 + 4 + 4 + key_len + 1;
    let total = (fieldcount as u64)
        .saturating_mul(per_field)
        .saturating_add(4 + id + 1);
    if total > MONGODB_MAX_DOCUMENT_BYTES {
        let key =
            if props.contains(prop::FIELDLENGTH.name) || !props.contains(prop::FIELDCOUNT.name) {
                prop::FIELDLENGTH.name
            } else {
                prop::FIELDCOUNT.name
            };
        return Err(props.invalid(
            key,
            format!(
                "fieldcount ({fieldcount}) x fieldlength ({max_field_len}) makes documents of about {total} bytes, over MongoDB's 16 MiB ({MONGODB_MAX_DOCUMENT_BYTES}-byte) limit"
            ),
        ));
    }
    Ok(())
}
