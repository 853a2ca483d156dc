//! YCSB properties: Java `.properties` files and `-p name=value` overrides, merged with YCSB's precedence,
//! each value remembering where it came from so that errors can name `FILE:LINE` or the flag.
//!
//! Precedence (as YCSB's `Client`): the caller first calls [`Properties::load_file`] for every `-P` file in
//! command-line order (a later file overrides an earlier one), and only then [`Properties::apply_override`] /
//! [`Properties::set`] for every `-p` and flag-derived property, whatever their position on the command line.
//! Among repeated settings of one name, the last call wins.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use java_properties::{LineContent, PropertiesIter};

use super::prop::{self, KnownProperty, Prop};

/// Where a property value came from, so messages can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A `-P` properties file, with the 1-based line the value starts on.
    File {
        /// The file as the user named it.
        path: PathBuf,
        /// 1-based line number of the key.
        line: usize,
    },
    /// A `-p name=value` override.
    Override,
    /// Derived from a command-line flag (`-threads`, `-target`, ...); holds the flag as typed.
    Flag(String),
    /// Not set anywhere: the built-in default.
    Default,
    /// Set by an experiment (a cell's threads or record count, a sweep point), or read back from
    /// its record (`experiment.json`), where the properties are stored as resolved text.
    Experiment,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{}", path.display(), line),
            Origin::Override => f.write_str("-p"),
            Origin::Flag(flag) => f.write_str(flag),
            Origin::Default => f.write_str("default"),
            Origin::Experiment => f.write_str("experiment"),
        }
    }
}

/// Everything that can go wrong reading or interpreting properties; every message names the culprit.
#[derive(Debug, thiserror::Error)]
pub enum PropertyError {
    /// A `-P` file could not be opened or read.
    #[error("{}: cannot read properties file: {source}", path.display())]
    Io {
        /// The file as named.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A `-P` file is not valid Java properties syntax (e.g. a bad `\u` escape).
    #[error("{}:{line}: {message}", path.display())]
    Syntax {
        /// The file as named.
        path: PathBuf,
        /// 1-based line, 0 if unknown.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A `-p` argument without `=`, or without a name before it.
    #[error("-p {0}: expected name=value")]
    MissingEquals(String),
    /// A `-P` file that is not text (NUL or control bytes, invalid UTF-8): surely the wrong file.
    #[error("{}:{line}: not a text file ({what}); is this the right -P file?", path.display())]
    NotText {
        /// The file as named.
        path: PathBuf,
        /// 1-based line of the first offending byte.
        line: usize,
        /// What was found.
        what: String,
    },
    /// A value that is not acceptable for its property.
    #[error("{}property '{key}': {message}", origin_prefix(origin))]
    Invalid {
        /// Where the offending value came from.
        origin: Origin,
        /// The property name.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

fn origin_prefix(origin: &Origin) -> String {
    match origin {
        Origin::Default => String::new(),
        other => format!("{other}: "),
    }
}

/// One property value with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    value: String,
    origin: Origin,
}

/// A property as it will be used: set, or filled in from the default table (for `workload show` and result files).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResolvedProperty {
    /// Property name.
    pub key: String,
    /// Effective value.
    pub value: String,
    /// Where the value came from.
    #[serde(serialize_with = "serialize_origin")]
    pub origin: Origin,
    /// True when nothing set it and `value` is the documented default.
    pub is_default: bool,
}

fn serialize_origin<S: serde::Serializer>(origin: &Origin, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&origin.to_string())
}

/// Ordered property map (first-set order) with the origin of every value.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    /// A flag that replaced a different `-p` value: said, since YCSB would keep the later one.
    flag_wins: Vec<String>,
}

impl Properties {
    /// A `name → value` lookup over `pairs`, for code that reads through one (unit tests).
    #[cfg(test)]
    pub(crate) fn lookup_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let p = Properties::from_pairs(pairs.iter().copied());
        move |k| p.get(k).map(str::to_string)
    }

    /// An empty set: every property takes its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// The properties of a command line, with YCSB's precedence: every file in order, then every
    /// `name=value` override, then each flag that sets a property (`(property, value, flag)`;
    /// the flag is the origin error messages name). A near miss of a known name is refused.
    pub(crate) fn from_command_line(
        files: &[std::path::PathBuf],
        overrides: &[String],
        flags: &[(&str, Option<String>, &str)],
    ) -> Result<Properties, PropertyError> {
        let mut props = Properties::new();
        for file in files {
            props.load_file(file)?;
        }
        for kv in overrides {
            props.apply_override(kv)?;
        }
        for (key, value, flag) in flags {
            if let Some(value) = value {
                let from_p = props
                    .index
                    .get(*key)
                    .map(|&i| &props.entries[i])
                    .filter(|e| e.origin == Origin::Override && e.value != *value);
                if let Some(given) = from_p.map(|e| e.value.clone()) {
                    props.flag_wins.push(format!(
                        "{flag} {value} is used, not {key}={given}: in microshard a flag always wins (YCSB would keep whichever came last)"
                    ));
                }
                props.set(*key, value.clone(), Origin::Flag(flag.to_string()));
            }
        }
        props.refuse_near_misses()?;
        Ok(props)
    }

    /// Merges one `-P` file (Java syntax); its values override earlier ones (see
    /// [`Properties::load_reader`]).
    pub fn load_file(&mut self, path: &Path) -> Result<(), PropertyError> {
        let file = File::open(path).map_err(|source| PropertyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        self.load_reader(BufReader::new(file), path)
    }

    /// Merges properties text read from `reader`, attributing lines to `path`.
    ///
    /// The bytes must be text: UTF-8 without NUL or other control bytes (tabs, form feeds and line
    /// ends are fine). A binary file given by mistake is refused naming it, instead of being read
    /// as a handful of odd properties, and bytes the parser's decoder would panic on (a UTF-16
    /// byte-order mark, found by `tests/fuzz_properties.rs`) never reach it. Bytes are then
    /// decoded as windows-1252 (the crate's choice; Java uses ISO-8859-1), so, like Java,
    /// non-ASCII characters read as two or more characters.
    pub fn load_reader<R: Read>(
        &mut self,
        mut reader: R,
        path: &Path,
    ) -> Result<(), PropertyError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| PropertyError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        check_text(&bytes, path)?;
        for line in PropertiesIter::new(bytes.as_slice()) {
            let line = line.map_err(|err| {
                let line = err.line_number().unwrap_or(0);
                // The crate's Display appends "(line_number = N)"; we print the line ourselves.
                let text = err.to_string();
                let message = match text.rfind(" (line_number") {
                    Some(cut) => text[..cut].to_string(),
                    None => text,
                };
                // The bytes are in memory: the parser's only errors are the text's.
                PropertyError::Syntax {
                    path: path.to_path_buf(),
                    line,
                    message,
                }
            })?;
            let number = line.line_number();
            if let LineContent::KVPair(key, value) = line.consume_content() {
                self.set(
                    key,
                    value,
                    Origin::File {
                        path: path.to_path_buf(),
                        line: number,
                    },
                );
            }
        }
        Ok(())
    }

    /// Applies one `-p name=value` (split at the first `=`; the value may be empty or contain `=`,
    /// the name may not be empty).
    pub fn apply_override(&mut self, arg: &str) -> Result<(), PropertyError> {
        match arg.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                self.set(key, value, Origin::Override);
                Ok(())
            }
            _ => Err(PropertyError::MissingEquals(arg.to_string())),
        }
    }

    /// Properties from resolved `key → value` pairs (an experiment's scenario, a unit test's
    /// list), each with origin `-p`, in order: what a run of them is given.
    pub(crate) fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut props = Properties::new();
        for (k, v) in pairs {
            props.set(k.as_ref(), v.as_ref(), Origin::Override);
        }
        props
    }

    /// Sets a value, replacing any earlier one (the key keeps its first position).
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>, origin: Origin) {
        let key = key.into();
        let value = value.into();
        match self.index.get(&key) {
            Some(&i) => {
                self.entries[i].value = value;
                self.entries[i].origin = origin;
            }
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push(Entry { key, value, origin });
            }
        }
    }

    /// A declared property set to `value` (an experiment's scale, a sweep point's threads).
    pub(crate) fn set_value<T>(
        &mut self,
        prop: &Prop<T>,
        value: impl fmt::Display,
        origin: Origin,
    ) {
        self.set(prop.name, value.to_string(), origin);
    }

    /// Unsets a value (it takes its default again).
    pub(crate) fn remove(&mut self, key: &str) {
        if let Some(i) = self.index.remove(key) {
            self.entries.remove(i);
            for at in self.index.values_mut().filter(|at| **at > i) {
                *at -= 1;
            }
        }
    }

    /// The raw value, if set (YCSB's `getProperty(key)`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.index.get(key).map(|&i| self.entries[i].value.as_str())
    }

    /// True when the property was set anywhere (YCSB distinguishes "absent" from any value, e.g. `insertcount`).
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Where the value came from, if set.
    pub fn origin(&self, key: &str) -> Option<&Origin> {
        self.index.get(key).map(|&i| &self.entries[i].origin)
    }

    /// The origin for messages: the real one if set, else [`Origin::Default`].
    pub(crate) fn origin_or_default(&self, key: &str) -> Origin {
        self.origin(key).cloned().unwrap_or(Origin::Default)
    }

    /// Iterates the set properties in first-set order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &Origin)> {
        self.entries
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str(), &e.origin))
    }

    /// The set properties by name: the text an experiment stores and shows.
    pub(crate) fn by_name(&self) -> std::collections::BTreeMap<&str, &str> {
        self.iter().map(|(k, v, _)| (k, v)).collect()
    }

    /// Parses the value with Java's strict rules, or returns `default` when unset.
    pub fn parse_or<T: PropertyValue>(&self, key: &str, default: T) -> Result<T, PropertyError> {
        self.parse(key).map(|v| v.unwrap_or(default))
    }

    /// A declared property parsed with Java's strict rules, or its declared default when unset (`src/props/prop.rs`).
    pub(crate) fn value<T: PropertyValue + Copy>(
        &self,
        prop: &Prop<T>,
    ) -> Result<T, PropertyError> {
        self.parse_or(prop.name, prop.default)
    }

    /// A declared property that lies in `range` (from `range.start` up): the error names the
    /// property, where it was set and the lowest value allowed ([`at_least`]). Every such check
    /// of a property reads through here, so the rule is stated once.
    pub(crate) fn value_in<T>(
        &self,
        prop: &Prop<T>,
        range: std::ops::RangeFrom<T>,
    ) -> Result<T, PropertyError>
    where
        T: PropertyValue + Copy + PartialOrd + fmt::Display,
    {
        let value = self.value(prop)?;
        if range.contains(&value) {
            return Ok(value);
        }
        Err(self.invalid(prop.name, at_least(range.start)))
    }

    /// A declared text property, or its declared default when unset, so the default is written only in `prop.rs`.
    pub(crate) fn text<'a>(&'a self, prop: &Prop<&'static str>) -> &'a str {
        self.get(prop.name).unwrap_or(prop.default)
    }

    /// Parses the value if set (`Ok(None)` when unset).
    pub fn parse<T: PropertyValue>(&self, key: &str) -> Result<Option<T>, PropertyError> {
        match self.index.get(key) {
            None => Ok(None),
            Some(&i) => {
                let entry = &self.entries[i];
                T::parse_property(&entry.value)
                    .map(Some)
                    .map_err(|message| PropertyError::Invalid {
                        origin: entry.origin.clone(),
                        key: key.to_string(),
                        message,
                    })
            }
        }
    }

    /// Refuses a seconds property that becomes a timer period (`status.interval`) above 30 days,
    /// as the duration flags are bounded: `u64::MAX` seconds overflows the status task's clock.
    pub(crate) fn periods_bounded(&self) -> Result<(), PropertyError> {
        let max = super::flag_values::MAX_DURATION.as_secs();
        let key = super::prop::STATUS_INTERVAL.name;
        match self.parse::<u64>(key) {
            Ok(Some(v)) if v > max => {
                Err(self.invalid(key, format!("{v} seconds is more than 30 days")))
            }
            _ => Ok(()),
        }
    }

    /// Builds an error about `key` carrying its origin (for checks that involve more than parsing).
    pub(crate) fn invalid(&self, key: &str, message: impl Into<String>) -> PropertyError {
        PropertyError::Invalid {
            origin: self.origin_or_default(key),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// Every known property with its effective value (default filled in) plus every set one, sorted by name.
    ///
    /// Known properties whose default is computed from others (e.g. `insertcount`) appear only when set.
    pub(crate) fn resolved(&self) -> Vec<ResolvedProperty> {
        let mut out: Vec<ResolvedProperty> = self
            .entries
            .iter()
            .map(|e| ResolvedProperty {
                key: e.key.clone(),
                value: e.value.clone(),
                origin: e.origin.clone(),
                is_default: false,
            })
            .collect();
        for known in prop::KNOWN_PROPERTIES {
            if let (false, Some(default)) = (self.contains(known.name), known.default) {
                out.push(ResolvedProperty {
                    key: known.name.to_string(),
                    value: default.to_string(),
                    origin: Origin::Default,
                    is_default: true,
                });
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// One line per set property that nothing reads: a likely typo (within two edits of a known
    /// name, or abbreviating one) with its suggestion, any other with the fact that it has no
    /// effect. YCSB keeps such names silently for other bindings; microshard has one binding, so a
    /// name it does not read is said, never dropped without a word (`docs/engine.md`).
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = self.flag_wins.clone();
        for entry in &self.entries {
            if prop::lookup(&entry.key).is_some() {
                continue;
            }
            out.push(match suggest(&entry.key) {
                Some(best) => format!(
                    "unknown property '{}' (did you mean '{}'?)",
                    entry.key, best.name
                ),
                None => format!(
                    "property '{}' ({}) is read by nothing in microshard: it has no effect here",
                    entry.key, entry.origin
                ),
            });
        }
        out
    }

    /// Whether `key` is set but read by nothing in microshard (recorded as `unused` in results).
    pub(crate) fn is_unused(key: &str) -> bool {
        prop::lookup(key).is_none()
    }
}

/// At the file boundary (`experiment.json`) the properties are YCSB's text: a map of name to
/// value in name order, without origins.
impl serde::Serialize for Properties {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.by_name().serialize(s)
    }
}

/// Reads the text map back, every value from [`Origin::Experiment`].
impl<'de> serde::Deserialize<'de> for Properties {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, String>::deserialize(d)?;
        let mut props = Properties::new();
        for (k, v) in map {
            props.set(k, v, Origin::Experiment);
        }
        Ok(props)
    }
}

impl Properties {
    /// Refuses the first set property that is not known but within edit distance 2 of a known
    /// name (`recordcout`): a misspelt size or mix would be ignored and the run would use the
    /// default (millions of records, or a meaningless experiment). Names further from every known
    /// one are kept, as YCSB does (bindings read their own properties).
    pub(crate) fn refuse_near_misses(&self) -> Result<(), PropertyError> {
        let found = (self.entries.iter()).find_map(|e| Some((&e.key, near_miss(&e.key)?)));
        found.map_or(Ok(()), |(key, best)| {
            let why = "(a misspelt name would be ignored)";
            let message = format!("not a known property; did you mean '{best}'? {why}");
            Err(self.invalid(key, message))
        })
    }
}

/// The closest known property within `key`'s near-miss distance (2 edits), if `key` is unknown.
pub(crate) fn near_miss(key: &str) -> Option<&'static str> {
    match prop::lookup(key) {
        Some(_) => None,
        None => suggest(key).map(|k| k.name),
    }
}

/// The closest known property (`suggest::closest`), else the known property `key` abbreviates
/// (`requestdistrib` for `requestdistribution`: a shortened name is as surely meant as a misspelt
/// one, and would be ignored just the same).
fn suggest(key: &str) -> Option<&'static KnownProperty> {
    crate::suggest::closest(key, prop::KNOWN_PROPERTIES.iter(), |k| k.name).or_else(|| {
        let lower = key.to_lowercase();
        (lower.len() >= MIN_ABBREVIATION)
            .then(|| {
                prop::KNOWN_PROPERTIES
                    .iter()
                    .filter(|k| k.name.to_lowercase().starts_with(&lower))
                    .min_by_key(|k| k.name.len())
            })
            .flatten()
    })
}

/// The shortest unknown name taken as an abbreviation of a known one (`read` abbreviates too many).
const MIN_ABBREVIATION: usize = 6;

/// Refuses bytes that are not text, naming the line of the first offending byte.
fn check_text(bytes: &[u8], path: &Path) -> Result<(), PropertyError> {
    let line_of = |at: usize| bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    let not_text = |at: usize, what: String| PropertyError::NotText {
        path: path.to_path_buf(),
        line: line_of(at),
        what,
    };
    if let Some(at) = bytes
        .iter()
        .position(|b| b.is_ascii_control() && !matches!(b, b'\t' | b'\n' | b'\r' | b'\x0c'))
    {
        return Err(not_text(at, format!("byte 0x{:02x}", bytes[at])));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(not_text(e.valid_up_to(), "invalid UTF-8".into()));
    }
    Ok(())
}

/// A type a property can be parsed into, with Java's parsing rules; the error is the message after the property name.
pub trait PropertyValue: Sized {
    /// Parses `text` or explains (without naming the property) why it is not acceptable.
    fn parse_property(text: &str) -> Result<Self, String>;
}

/// `Integer.parseInt`/`Long.parseLong`: optional sign, ASCII digits only, no whitespace.
fn parse_java_integer(text: &str) -> Result<i128, String> {
    let digits = text
        .strip_prefix('-')
        .or_else(|| text.strip_prefix('+'))
        .unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a whole number"));
    }
    // More than 38 digits cannot fit any target type; avoid i128 overflow while keeping "out of range".
    let trimmed = digits.trim_start_matches('0');
    if trimmed.len() > 38 {
        return Err(format!("{text:?} is out of range"));
    }
    let magnitude: i128 = trimmed.parse().unwrap_or(0);
    Ok(if text.starts_with('-') {
        -magnitude
    } else {
        magnitude
    })
}

macro_rules! signed_value {
    ($t:ty, $java:literal) => {
        impl PropertyValue for $t {
            fn parse_property(text: &str) -> Result<Self, String> {
                let v = parse_java_integer(text)?;
                <$t>::try_from(v).map_err(|_| {
                    format!(
                        "{text:?} is out of range for a Java {} ({}..={})",
                        $java,
                        <$t>::MIN,
                        <$t>::MAX
                    )
                })
            }
        }
    };
}

macro_rules! count_value {
    ($t:ty) => {
        impl PropertyValue for $t {
            fn parse_property(text: &str) -> Result<Self, String> {
                let v = parse_java_integer(text)?;
                if v < 0 {
                    return Err(format!("{text:?} is negative; a count is expected"));
                }
                <$t>::try_from(v).map_err(|_| format!("{text:?} is too large (max {})", <$t>::MAX))
            }
        }
    };
}

signed_value!(i32, "int");
signed_value!(i64, "long");
count_value!(u32);
count_value!(u64);
count_value!(usize);

impl PropertyValue for f64 {
    /// `Double.parseDouble`: surrounding whitespace (chars ≤ U+0020) ignored, optional sign, decimal digits with
    /// optional fraction and exponent, optional `f`/`F`/`d`/`D` suffix, `NaN`, `Infinity`. Hexadecimal floating
    /// literals (`0x1p3`) are not accepted (Java does); nobody writes them in workload files.
    fn parse_property(text: &str) -> Result<Self, String> {
        let err = || format!("{text:?} is not a number");
        let t = text.trim_matches(|c: char| c <= ' ');
        let (negative, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let signed = |v: f64| if negative { -v } else { v };
        match body {
            "NaN" => return Ok(f64::NAN),
            "Infinity" => return Ok(signed(f64::INFINITY)),
            _ => {}
        }
        let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
        let mantissa_end = body.find(['e', 'E']).unwrap_or(body.len());
        let (mantissa, exponent) = body.split_at(mantissa_end);
        let mantissa_ok = mantissa.bytes().filter(|b| *b == b'.').count() <= 1
            && mantissa.bytes().any(|b| b.is_ascii_digit())
            && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let exponent_ok = exponent.is_empty() || {
            let e = &exponent[1..];
            let e = e
                .strip_prefix('-')
                .or_else(|| e.strip_prefix('+'))
                .unwrap_or(e);
            !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
        };
        if !mantissa_ok || !exponent_ok {
            return Err(err());
        }
        body.parse::<f64>().map(signed).map_err(|_| err())
    }
}

impl PropertyValue for bool {
    /// `true` or `false`, in any case. Java's `Boolean.parseBoolean` reads anything else as false;
    /// that turns a typo (`readallfields=ture`, `=yes`) into a silent change of the workload, so
    /// it is refused instead (`docs/reliability.md` §1).
    fn parse_property(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if text.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(format!("{text:?} is not a boolean (true or false)"))
        }
    }
}

impl PropertyValue for String {
    fn parse_property(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
}

/// The one wording of a lower bound in an error message (after the flag, property or
/// `file:line: key` it names): every range check of an input says it through here.
pub(crate) fn at_least(low: impl fmt::Display) -> String {
    format!("must be at least {low}")
}

/// The one wording of a closed range in an error message, as [`at_least`] is of a lower bound.
pub(crate) fn between(low: impl fmt::Display, high: impl fmt::Display) -> String {
    format!("must be between {low} and {high}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(text: impl AsRef<[u8]>) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_ref()).unwrap();
        f
    }

    #[test]
    fn precedence_file_then_later_file_then_override() {
        let a = file_with("recordcount=10\nfieldcount=3\nthreadcount=4\n");
        let b = file_with("# comment\nrecordcount = 20\n");
        let mut p = Properties::new();
        p.load_file(a.path()).unwrap();
        p.load_file(b.path()).unwrap();
        assert_eq!(p.get("recordcount"), Some("20"));
        assert_eq!(
            p.origin("recordcount"),
            Some(&Origin::File {
                path: b.path().to_path_buf(),
                line: 2
            })
        );
        p.apply_override("recordcount=30").unwrap();
        p.set("threadcount", "8", Origin::Flag("-threads".into()));
        assert_eq!(p.get("recordcount"), Some("30"));
        assert_eq!(p.origin("recordcount"), Some(&Origin::Override));
        assert_eq!(p.get("fieldcount"), Some("3"));
        assert_eq!(p.parse_or::<u32>("threadcount", 1).unwrap(), 8);
        // first-set order is kept
        let keys: Vec<_> = p.iter().map(|(k, _, _)| k).collect();
        assert_eq!(keys, ["recordcount", "fieldcount", "threadcount"]);
    }

    #[test]
    fn java_syntax_continuations_escapes_separators() {
        let f = file_with("a:1\nb 2\nc = x\\\n    y\n! bang comment\nd=\\u0041  \n");
        let mut p = Properties::new();
        p.load_file(f.path()).unwrap();
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("2"));
        assert_eq!(p.get("c"), Some("xy"));
        assert_eq!(p.get("d"), Some("A  "), "trailing whitespace is kept");
    }

    #[test]
    fn missing_file_names_path() {
        let mut p = Properties::new();
        let err = p
            .load_file(Path::new("/nonexistent/workloads/S9"))
            .unwrap_err();
        assert!(
            err.to_string().starts_with("/nonexistent/workloads/S9: "),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let err = p.load_file(dir.path()).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: ", dir.path().display())),
            "{err}"
        );
    }

    #[test]
    fn syntax_error_names_file_and_line() {
        let f = file_with("a=1\n# ok\nb=\\uZZZZ\n");
        let mut p = Properties::new();
        let err = p.load_file(f.path()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{}:3: ", f.path().display())),
            "{msg}"
        );
        assert!(!msg.contains("line_number"), "{msg}");
    }

    #[test]
    fn override_without_equals_names_argument() {
        let mut p = Properties::new();
        let err = p.apply_override("recordcount").unwrap_err();
        assert_eq!(err.to_string(), "-p recordcount: expected name=value");
        p.apply_override("mongodb.url=mongodb://h/?w=1").unwrap();
        assert_eq!(p.get("mongodb.url"), Some("mongodb://h/?w=1"));
    }

    #[test]
    fn parse_errors_name_origin_and_property() {
        let f = file_with("a=1\nb=2\nc=3\nrecordcount=5x\n");
        let mut p = Properties::new();
        p.load_file(f.path()).unwrap();
        let err = p.parse_or::<u64>("recordcount", 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}:4: property 'recordcount': \"5x\" is not a whole number",
                f.path().display()
            )
        );
        p.apply_override("threadcount=-3").unwrap();
        let err = p.parse_or::<usize>("threadcount", 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-p: property 'threadcount': \"-3\" is negative; a count is expected"
        );
    }

    #[test]
    fn java_integer_rules() {
        assert_eq!(i32::parse_property("+12"), Ok(12));
        assert_eq!(i32::parse_property("-12"), Ok(-12));
        assert_eq!(i32::parse_property("007"), Ok(7));
        assert!(i32::parse_property(" 1").is_err());
        assert!(i32::parse_property("1 ").is_err());
        assert!(i32::parse_property("").is_err());
        assert!(i32::parse_property("-").is_err());
        assert!(i32::parse_property("1e3").is_err());
        assert!(i32::parse_property("2147483648").is_err());
        assert_eq!(i32::parse_property("-2147483648"), Ok(i32::MIN));
        assert_eq!(i64::parse_property("9223372036854775807"), Ok(i64::MAX));
        assert!(i64::parse_property("9223372036854775808").is_err());
        assert!(u64::parse_property("99999999999999999999999999999999999999999").is_err());
        assert_eq!(u64::parse_property("0"), Ok(0));
    }

    #[test]
    fn java_double_rules() {
        assert_eq!(f64::parse_property("5e6"), Ok(5e6));
        assert_eq!(f64::parse_property(" 0.5 "), Ok(0.5));
        assert_eq!(f64::parse_property(".5"), Ok(0.5));
        assert_eq!(f64::parse_property("1."), Ok(1.0));
        assert_eq!(f64::parse_property("-2.5E-1"), Ok(-0.25));
        assert_eq!(f64::parse_property("1d"), Ok(1.0));
        assert_eq!(f64::parse_property("-Infinity"), Ok(f64::NEG_INFINITY));
        assert!(f64::parse_property("NaN").unwrap().is_nan());
        // These and the rejections below were checked against OpenJDK 17's Double.parseDouble.
        assert_eq!(f64::parse_property("+.5e-3"), Ok(5e-4));
        assert_eq!(f64::parse_property("\t1\n"), Ok(1.0));
        assert_eq!(f64::parse_property("1e+5"), Ok(1e5));
        assert_eq!(f64::parse_property("1.e5"), Ok(1e5));
        assert_eq!(f64::parse_property("1e5d"), Ok(1e5));
        assert_eq!(f64::parse_property("1f"), Ok(1.0));
        assert_eq!(f64::parse_property("Infinity "), Ok(f64::INFINITY));
        for bad in [
            "", "inf", "nan", "infinity", "1e", "e5", "0.5x", "1..2", ".", ".e5", "0x10", "+",
            "-.", "1_0",
        ] {
            assert!(
                f64::parse_property(bad).is_err(),
                "{bad:?} must be rejected"
            );
        }
    }

    #[test]
    fn booleans_are_true_or_false_only() {
        assert_eq!(bool::parse_property("TRUE"), Ok(true));
        assert_eq!(bool::parse_property("True"), Ok(true));
        assert_eq!(bool::parse_property("false"), Ok(false));
        assert_eq!(bool::parse_property("FALSE"), Ok(false));
        for bad in ["yes", "1", " true", "maybe", ""] {
            assert!(
                bool::parse_property(bad).is_err(),
                "{bad:?} must be refused"
            );
        }
        let mut p = Properties::new();
        p.apply_override("readallfields=maybe").unwrap();
        let e = p.parse::<bool>("readallfields").unwrap_err().to_string();
        assert!(
            e.contains("-p") && e.contains("readallfields") && e.contains("maybe"),
            "{e}"
        );
    }

    #[test]
    fn an_override_needs_a_name() {
        let mut p = Properties::new();
        let e = p.apply_override("=5").unwrap_err().to_string();
        assert!(e.contains("-p =5"), "{e}");
        assert!(p.apply_override(" =5").is_err());
        assert_eq!(p.iter().count(), 0);
    }

    #[test]
    fn a_file_that_is_not_text_is_refused_naming_it() {
        let nul = file_with("recordcount=10\nfield\0count=2\n");
        let e = Properties::new()
            .load_file(nul.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("{}:2", nul.path().display())), "{e}");
        let f = file_with(b"recordcount=10\n\xff\xfe\x80garbage\n");
        let e = Properties::new()
            .load_file(f.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("{}:2", f.path().display())), "{e}");
        assert!(e.contains("not a text file"), "{e}");
        // A UTF-16 byte-order mark made the parser's decoder panic when read unchecked.
        let bom = Properties::new().load_reader(&b"\xfe\xff"[..], Path::new("u16.properties"));
        let e = bom.unwrap_err().to_string();
        assert!(e.starts_with("u16.properties:1: not a text file"), "{e}");
        let ok = file_with("# caf\u{e9}\nrecordcount=10\r\n\tfieldcount = 2\n");
        let mut p = Properties::new();
        p.load_file(ok.path()).unwrap();
        assert_eq!(p.get("fieldcount"), Some("2"));
    }

    #[test]
    fn warnings_suggest_close_names_and_say_every_other_unread_one() {
        let mut p = Properties::new();
        p.apply_override("recordcout=5").unwrap();
        p.apply_override("mycompany.custom=1").unwrap();
        p.apply_override("recordcount=5").unwrap();
        assert_eq!(
            p.warnings(),
            vec![
                "unknown property 'recordcout' (did you mean 'recordcount'?)".to_string(),
                "property 'mycompany.custom' (-p) is read by nothing in microshard: it has no effect here"
                    .to_string(),
            ]
        );
        assert!(Properties::is_unused("mycompany.custom"));
        assert!(!Properties::is_unused("recordcount"));
    }

    #[test]
    fn a_flag_that_replaces_a_different_p_value_is_said() {
        // `-threads 8 -p threadcount=16` ran 8 threads without a word.
        let flags = [("threadcount", Some("8".to_string()), "--threads")];
        let p = Properties::from_command_line(&[], &["threadcount=16".into()], &flags).unwrap();
        assert_eq!(p.get("threadcount"), Some("8"));
        assert_eq!(
            p.warnings(),
            [
                "--threads 8 is used, not threadcount=16: in microshard a flag always wins (YCSB would keep whichever came last)"
            ]
        );
        let same = Properties::from_command_line(&[], &["threadcount=8".into()], &flags).unwrap();
        assert!(same.warnings().is_empty());
    }

    #[test]
    fn an_abbreviated_known_name_is_a_near_miss_and_a_short_stem_is_not() {
        // `requestdistrib=uniform` ran zipfian without a word.
        assert_eq!(near_miss("requestdistrib"), Some("requestdistribution"));
        assert_eq!(near_miss("RequestDistrib"), Some("requestdistribution"));
        assert_eq!(near_miss("readprop"), Some("readproportion"));
        assert_eq!(near_miss("read"), None);
        assert_eq!(near_miss("mycompany.custom"), None);
    }

    #[test]
    fn a_near_miss_of_a_known_name_is_refused_naming_its_origin() {
        let mut p = Properties::new();
        p.apply_override("mycompany.custom=1").unwrap();
        assert!(p.refuse_near_misses().is_ok());
        p.apply_override("recordcout=1000").unwrap();
        let e = p.refuse_near_misses().unwrap_err().to_string();
        assert!(
            e.starts_with(
                "-p: property 'recordcout': not a known property; did you mean 'recordcount'?"
            ),
            "{e}"
        );
        assert_eq!(near_miss("readbachsize"), Some("readbatchsize"));
        assert_eq!(near_miss("readbatchsize"), None);
    }

    #[test]
    fn resolved_fills_defaults_keeps_unknown_sorted() {
        let mut p = Properties::new();
        p.apply_override("fieldcount=8").unwrap();
        p.apply_override("zzz.custom=1").unwrap();
        let r = p.resolved();
        let fc = r.iter().find(|r| r.key == "fieldcount").unwrap();
        assert_eq!((fc.value.as_str(), fc.is_default), ("8", false));
        let fl = r.iter().find(|r| r.key == "fieldlength").unwrap();
        assert_eq!(
            (fl.value.as_str(), fl.is_default, &fl.origin),
            ("100", true, &Origin::Default)
        );
        assert!(r.iter().any(|r| r.key == "zzz.custom"));
        assert!(r.windows(2).all(|w| w[0].key < w[1].key));
    }
}
