//! YCSB's `CoreWorkload`: decides every operation (kind, keys, fields, values) exactly as Java YCSB does.
//!
//! One `CoreWorkload` is built per run and shared by all clients through `Arc`; everything a draw touches is either
//! immutable or per client ([`ClientState`]), except the shared counters YCSB also shares (load key sequence,
//! sequential chooser, acknowledged insert counter).
//!
//! Deliberate differences from Java YCSB, all documented:
//! * `requestdistribution=zipfian` without `operationcount` crashes YCSB (YCSB#1099); here it counts as 0.
//! * Inputs YCSB accepts and then crashes on or silently replaces (hotspot fractions outside [0,1], empty key
//!   ranges, `dataintegrity` with variable lengths, `insertstart + insertcount > recordcount`) are errors naming
//!   the property, before anything runs.
//! * "Too many unacknowledged insertion keys" is a [`WorkloadError`] from [`CoreWorkload::acknowledge_insert`].
//! * `readbatchsize` (microshard's own) turns a READ into one multi-key read of distinct keys.

use std::collections::HashSet;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::error::WorkloadError;
use super::generators::{Counter, Discrete, OpKind, SkewedLatest, UniformLong};
use super::keys::{build_key_name, fnvhash64, java_int};
use super::operation::{FieldSelection, FieldValue, Operation};
use super::prop;
use super::properties::{Properties, PropertyError};
use super::settings::{
    FieldLength, Fields, KeyChooser, KeyRange, Keys, ScanLength, operation_mix, scan_length,
};
use super::values::{deterministic_value, fill_random_bytes};
use crate::measure::Status;

/// The text YCSB prints when it caps the thread count to the operation count.
pub(crate) const THREADS_CAPPED_WARNING: &str =
    "Warning: the threadcount is bigger than recordcount, the threadcount will be recordcount!";

/// The whole workload definition; `Send + Sync`, shared by every client of a run.
#[derive(Debug)]
pub struct CoreWorkload {
    table: String,
    pub(crate) fields: Fields,
    keys: Keys,
    range: KeyRange,
    chooser: Discrete,
    field_chooser: UniformLong,
    scan_length: ScanLength,
    load_keys: Counter,
    readbatchsize: usize,
    /// `core_workload_insertion_retry_limit`: retries of a failed load insert.
    pub(crate) retry_limit: u32,
    retry_interval_secs: i64,
    /// `core_workload_insertion_keep_going_on_error`: whether a load client continues after a
    /// failed insert.
    pub(crate) keep_going_on_error: bool,
    seed: u64,
}

/// A client's private state: its RNG and reusable scratch space. Create one per client task.
#[derive(Debug)]
pub struct ClientState {
    rng: SmallRng,
    latest: Option<SkewedLatest>,
    seen: HashSet<i64>,
    spare: Vec<Vec<u8>>,
}

impl ClientState {
    /// Gives the value buffers of a finished operation back for reuse (optional; saves allocations).
    pub fn recycle(&mut self, op: Operation) {
        let values = match op {
            Operation::Insert { values, .. }
            | Operation::Update { values, .. }
            | Operation::ReadModifyWrite { values, .. } => values,
            Operation::Read { .. } | Operation::Scan { .. } => return,
        };
        for v in values {
            if self.spare.len() < 64 {
                self.spare.push(v.bytes);
            }
        }
    }

    fn buffer(&mut self, len: usize) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.resize(len, 0);
        b
    }
}

/// SplitMix64 finaliser: turns (seed, client index) into well-spread RNG seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl CoreWorkload {
    /// Reads and validates every CoreWorkload property; computes zeta sums once. The sections
    /// follow YCSB's own order: the key range, the fields, the operation mix, the keys, the scans
    /// and the inserts' retries.
    pub fn from_properties(props: &Properties) -> Result<CoreWorkload, WorkloadError> {
        let table = props.text(&prop::TABLE).to_string();
        if table.is_empty() {
            return Err(props.invalid(prop::TABLE.name, "must not be empty").into());
        }
        let range = KeyRange::read(props)?;
        let fields = Fields::read(props)?;
        let (chooser, insertproportion) = operation_mix(props)?;
        let keys = Keys::read(props, &range, insertproportion)?;
        let field_chooser = UniformLong::new(0, fields.count - 1)
            .ok_or_else(|| props.invalid(prop::FIELDCOUNT.name, crate::props::at_least(1)))?;
        let scan_length = scan_length(props)?;

        let readbatchsize = props.value_in(&prop::READBATCHSIZE, 1..)?;
        if readbatchsize as u64 > range.insertcount as u64 {
            let only = range.insertcount;
            let msg = format!("{readbatchsize} distinct keys per read, but only {only} records");
            return Err(props.invalid(prop::READBATCHSIZE.name, msg).into());
        }
        let retry_limit = props.value(&prop::CORE_WORKLOAD_INSERTION_RETRY_LIMIT)?;
        let retry_interval_secs =
            props.value_in(&prop::CORE_WORKLOAD_INSERTION_RETRY_INTERVAL, 0..)?;
        let keep_going_on_error =
            props.value(&prop::CORE_WORKLOAD_INSERTION_KEEP_GOING_ON_ERROR)?;

        Ok(CoreWorkload {
            table,
            fields,
            load_keys: Counter::new(range.insertstart),
            keys,
            range,
            chooser,
            field_chooser,
            scan_length,
            readbatchsize,
            retry_limit,
            retry_interval_secs,
            keep_going_on_error,
            seed: rand::random(),
        })
    }

    /// Fixes the RNG seed (tests, reproducible demos); by default each run is seeded randomly, like YCSB.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Per-client state; `client_index` only varies the RNG seed.
    pub fn client_state(&self, client_index: usize) -> ClientState {
        ClientState {
            rng: SmallRng::seed_from_u64(mix(self.seed ^ mix(client_index as u64))),
            latest: match &self.keys.chooser {
                KeyChooser::Latest(template) => Some(*template),
                _ => None,
            },
            seen: HashSet::new(),
            spare: Vec::new(),
        }
    }

    /// The operation mix as YCSB's chooser sees it: names in chooser order with normalised shares (sum 1).
    #[cfg(test)]
    pub(crate) fn operation_mix(&self) -> Vec<(&'static str, f64)> {
        self.chooser
            .shares()
            .iter()
            .map(|(kind, w)| {
                let name = match kind {
                    OpKind::Read => "READ",
                    OpKind::Update => "UPDATE",
                    OpKind::Insert => "INSERT",
                    OpKind::Scan => "SCAN",
                    OpKind::ReadModifyWrite => "READMODIFYWRITE",
                };
                (name, *w)
            })
            .collect()
    }

    /// The `requestdistribution` in effect.
    #[cfg(test)]
    pub(crate) fn request_distribution(&self) -> &'static str {
        match self.keys.chooser {
            KeyChooser::Uniform(_) => "uniform",
            KeyChooser::Zipfian(_) => "zipfian",
            KeyChooser::Latest(_) => "latest",
            KeyChooser::Hotspot(_) => "hotspot",
            KeyChooser::Sequential(_) => "sequential",
            KeyChooser::Exponential(_) => "exponential",
        }
    }

    /// The collection every operation uses (`table`).
    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// Field names in the order YCSB's HashMap hands them to the binding (document field order after `_id`).
    pub(crate) fn field_names_in_map_order(&self) -> Vec<Arc<str>> {
        let f = &self.fields;
        f.map_order.iter().map(|&i| f.names[i].clone()).collect()
    }

    /// YCSB's retry sleep: `(int)(1000 * interval * (0.8 + 0.4 * random))` milliseconds.
    pub(crate) fn insertion_retry_sleep(&self, state: &mut ClientState) -> std::time::Duration {
        let r = super::generators::next_double(&mut state.rng);
        let ms = (1000.0 * self.retry_interval_secs as f64 * (0.8 + 0.4 * r)) as i32;
        std::time::Duration::from_millis(ms.max(0) as u64)
    }

    /// The build key for a key number, with this workload's `insertorder` and `zeropadding`.
    pub(crate) fn key_name(&self, keynum: i64) -> String {
        let k = &self.keys;
        build_key_name(self.spread(keynum), k.zeropadding, k.ordered)
    }

    /// Where a run-phase insert number lands when several clients share the data: number
    /// `recordcount + k` of this client becomes `recordcount + k × stride + offset`, so the
    /// clients' inserts never collide and each one reads back only inserts it acknowledged
    /// (`docs/engine.md`, "Several clients").
    fn spread(&self, keynum: i64) -> i64 {
        if self.keys.insert_stride <= 1 || keynum < self.range.recordcount {
            return keynum;
        }
        let k = keynum - self.range.recordcount;
        (self.range.recordcount)
            .saturating_add(k.saturating_mul(self.keys.insert_stride))
            .saturating_add(self.keys.insert_offset)
    }

    /// The key numbers this workload handed out to inserts so far: a load's from `insertstart`
    /// on, a run's from `recordcount` on (spread as [`Self::spread`] places them). A key counts
    /// once taken, whether its insert succeeded, failed or fell in the warm-up, so whoever
    /// removes a run's inserts afterwards misses none (`docs/engine.md`, "Inserted keys").
    pub(crate) fn inserted_keys(&self, phase_is_load: bool) -> Option<crate::measure::KeySpan> {
        let (first, next) = match phase_is_load {
            true => (self.range.insertstart, self.load_keys.peek()),
            false => (self.range.recordcount, self.keys.insert_keys.peek()),
        };
        (next > first).then(|| crate::measure::KeySpan {
            first: self.spread(first),
            end: self.spread(next - 1).saturating_add(1),
        })
    }

    /// The next load-phase insert: key number from the counter shared by all clients (truncated to int, as YCSB).
    pub fn next_load_op(&self, state: &mut ClientState) -> Operation {
        let keynum = java_int(self.load_keys.next());
        self.insert_op(state, keynum, false)
    }

    /// An insert of key number `keynum` with freshly built values; `acknowledge` is set for the
    /// run phase's inserts, whose completion moves the acknowledged-key window (`latest`).
    fn insert_op(&self, state: &mut ClientState, keynum: i64, acknowledge: bool) -> Operation {
        let key = self.key_name(keynum);
        let values = self.build_values(state, &key);
        Operation::Insert {
            keynum,
            key,
            values,
            acknowledge,
        }
    }

    /// The next run-phase operation, chosen by the operation mix.
    pub fn next_transaction_op(&self, state: &mut ClientState) -> Operation {
        match self.chooser.next(&mut state.rng) {
            OpKind::Read => {
                let keys = if self.readbatchsize > 1 {
                    self.distinct_keys(state)
                } else {
                    let keynum = self.next_keynum(state);
                    vec![self.key_name(keynum)]
                };
                let fields = self.read_fields(state);
                Operation::Read { keys, fields }
            }
            OpKind::Update => {
                let key = self.key_name(self.next_keynum(state));
                let values = self.update_values(state, &key);
                Operation::Update { key, values }
            }
            OpKind::Insert => self.insert_op(state, self.keys.insert_keys.next(), true),
            OpKind::Scan => {
                let start_key = self.key_name(self.next_keynum(state));
                let count = java_int(match &self.scan_length {
                    ScanLength::Uniform(u) => u.next(&mut state.rng),
                    ScanLength::Zipfian(z) => z.sample(&mut state.rng),
                })
                .max(0) as u64;
                let fields = self.one_field_unless_all(state);
                Operation::Scan {
                    start_key,
                    count,
                    fields,
                }
            }
            OpKind::ReadModifyWrite => {
                let key = self.key_name(self.next_keynum(state));
                let read_fields = self.one_field_unless_all(state);
                let values = self.update_values(state, &key);
                Operation::ReadModifyWrite {
                    key,
                    read_fields,
                    values,
                }
            }
        }
    }

    /// Marks a run-phase insert as done (call after every `acknowledge: true` insert, even a failed one).
    ///
    /// The error is YCSB's "Too many unacknowledged insertion keys": the run cannot continue correctly.
    pub(crate) fn acknowledge_insert(&self, keynum: i64) -> Result<(), WorkloadError> {
        self.keys.insert_keys.acknowledge(keynum)?;
        Ok(())
    }

    /// The highest key number reads may target (YCSB's acknowledged limit).
    #[cfg(test)]
    pub(crate) fn acknowledged_limit(&self) -> i64 {
        self.keys.insert_keys.last_value()
    }

    /// Data-integrity check of a read result: `OK`, `UNEXPECTED_STATE` (a field differs) or `ERROR` (no fields).
    pub(crate) fn verify<N: AsRef<str>, B: AsRef<[u8]>>(
        &self,
        key: &str,
        cells: &[(N, B)],
    ) -> Status {
        if cells.is_empty() {
            return Status::Error;
        }
        let len = match self.fields.length {
            FieldLength::Constant(l) => l.max(0) as usize,
            // from_properties refuses dataintegrity with other distributions
            _ => return Status::UnexpectedState,
        };
        for (name, bytes) in cells {
            if deterministic_value(key, name.as_ref(), len).as_bytes() != bytes.as_ref() {
                return Status::UnexpectedState;
            }
        }
        Status::Ok
    }

    /// YCSB's `nextKeynum`: a key number no higher than the acknowledged limit (redrawn until it is).
    fn next_keynum(&self, state: &mut ClientState) -> i64 {
        let rng = &mut state.rng;
        match &self.keys.chooser {
            KeyChooser::Exponential(e) => loop {
                let k = self.keys.insert_keys.last_value() - i64::from(e.next(rng) as i32);
                if k >= 0 {
                    return k;
                }
            },
            KeyChooser::Latest(_) => {
                // Always <= the limit by construction.
                let max = self.keys.insert_keys.last_value();
                match state.latest.as_mut() {
                    Some(latest) => java_int(latest.next(rng, max)),
                    None => max,
                }
            }
            chooser => loop {
                let k = java_int(match chooser {
                    KeyChooser::Uniform(u) => u.next(rng),
                    KeyChooser::Zipfian(z) => z.next(rng),
                    KeyChooser::Hotspot(h) => h.next(rng),
                    KeyChooser::Sequential(s) => s.next(),
                    KeyChooser::Exponential(_) | KeyChooser::Latest(_) => 0,
                });
                if k <= self.keys.insert_keys.last_value() {
                    return k;
                }
            },
        }
    }

    /// `readbatchsize` distinct keys. Distinctness is on the number that becomes the key (the hash when hashed).
    /// After many repeated draws (extreme skew with a batch close to the key count) the remaining keys are taken
    /// in order from the start of the key range, so the call always ends.
    fn distinct_keys(&self, state: &mut ClientState) -> Vec<String> {
        let want = self.readbatchsize;
        let mut keys = Vec::with_capacity(want);
        state.seen.clear();
        let identity = |k: i64| if self.keys.ordered { k } else { fnvhash64(k) };
        let mut attempts = 0usize;
        let max_attempts = want.saturating_mul(64).saturating_add(1024);
        while keys.len() < want && attempts < max_attempts {
            attempts += 1;
            let k = self.next_keynum(state);
            if state.seen.insert(identity(k)) {
                keys.push(self.key_name(k));
            }
        }
        let mut k = self.range.insertstart;
        while keys.len() < want && k <= self.keys.insert_keys.last_value() {
            if state.seen.insert(identity(k)) {
                keys.push(self.key_name(k));
            }
            k += 1;
        }
        keys
    }

    /// Fields for a READ: all (`None`), all by name (dataintegrity / readallfieldsbyname), or one random field.
    fn read_fields(&self, state: &mut ClientState) -> FieldSelection {
        if !self.fields.readallfields {
            Some(vec![self.random_field(state)])
        } else if self.fields.dataintegrity || self.fields.readallfieldsbyname {
            Some(self.field_names_in_map_order())
        } else {
            None
        }
    }

    /// Fields for SCAN and READ-MODIFY-WRITE's read: all, or one random field.
    fn one_field_unless_all(&self, state: &mut ClientState) -> FieldSelection {
        if self.fields.readallfields {
            None
        } else {
            Some(vec![self.random_field(state)])
        }
    }

    fn random_field(&self, state: &mut ClientState) -> Arc<str> {
        let i = self.field_chooser.next(&mut state.rng) as usize;
        self.fields.names[i].clone()
    }

    fn update_values(&self, state: &mut ClientState, key: &str) -> Vec<FieldValue> {
        if self.fields.writeallfields {
            self.build_values(state, key)
        } else {
            let i = self.field_chooser.next(&mut state.rng) as usize;
            vec![self.field_value(state, key, i)]
        }
    }

    /// Every field, in Java HashMap order.
    fn build_values(&self, state: &mut ClientState, key: &str) -> Vec<FieldValue> {
        let order = self.fields.map_order.iter();
        order.map(|&i| self.field_value(state, key, i)).collect()
    }

    fn field_value(&self, state: &mut ClientState, key: &str, index: usize) -> FieldValue {
        let name = self.fields.names[index].clone();
        let len = java_int(match &self.fields.length {
            FieldLength::Constant(l) => *l,
            FieldLength::Uniform(u) => u.next(&mut state.rng),
            FieldLength::Zipfian(z) => z.sample(&mut state.rng),
            FieldLength::Histogram(h) => h.next(&mut state.rng),
        })
        .max(0) as usize;
        let bytes = if self.fields.dataintegrity {
            deterministic_value(key, &name, len).into_bytes()
        } else {
            let mut b = state.buffer(len);
            fill_random_bytes(&mut state.rng, &mut b);
            b
        };
        FieldValue { name, bytes }
    }
}

/// Load-phase operation count: `insertcount` if the property is present (any value), else `recordcount`.
pub fn load_operation_count(props: &Properties) -> Result<u64, PropertyError> {
    if props.contains(prop::INSERTCOUNT.name) {
        props.parse_or::<u64>(prop::INSERTCOUNT.name, 0)
    } else {
        props.parse_or::<u64>(prop::RECORDCOUNT.name, prop::RECORDCOUNT.default as u64)
    }
}

/// Run-phase operation count: `operationcount`, 0 (the default) meaning unlimited.
pub fn run_operation_count(props: &Properties) -> Result<u64, PropertyError> {
    props.value(&prop::OPERATIONCOUNT)
}

/// Splits `total` operations over `threads` clients like YCSB: `total / threads` each, the first `total % threads`
/// get one more. With `0 < total < threads` the thread count is capped to `total` and YCSB's warning is returned.
/// `total == 0` (unlimited) gives every thread 0 (= unlimited).
pub fn split_operations(total: u64, threads: usize) -> (Vec<u64>, Option<String>) {
    if total > 0 && (threads as u64) > total {
        let warning = Some(THREADS_CAPPED_WARNING.to_string());
        return (split_evenly(total, total), warning);
    }
    (split_evenly(total, threads as u64), None)
}

/// Splits `total` as YCSB splits operations over threads: `total / n` each, the first
/// `total % n` one more (none at all for `n == 0`).
pub(crate) fn split_evenly(total: u64, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| total / n + u64::from(i < total % n))
        .collect()
}
