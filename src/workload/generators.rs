//! YCSB's number generators, with the same formulas, constants and summation order.
//!
//! Java YCSB draws from `ThreadLocalRandom`, which cannot be seeded, so random sequences cannot match bit for bit;
//! what must match is the mapping from a uniform draw to a value. Every generator therefore has a pure
//! `value_for(u)`-style function (tested against the spec's tables) and a `next(rng)` that draws `u` from the
//! client's own RNG. Expensive parts (zeta sums) are computed once at construction; per-client state is a cheap copy.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use rand::Rng;

use super::keys::fnvhash64;

/// Java `Math.abs(rng.nextLong())`: `i64::MIN` stays negative.
#[inline]
fn abs_next_long<R: Rng + ?Sized>(rng: &mut R) -> i64 {
    rng.random::<i64>().wrapping_abs()
}

/// Java `nextDouble()`: 53 random bits in [0, 1).
#[inline]
pub fn next_double<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    rng.random::<f64>()
}

// ---------------------------------------------------------------------------------------------------------------
// Uniform
// ---------------------------------------------------------------------------------------------------------------

/// `UniformLongGenerator`: `lb + |nextLong()| % (ub - lb + 1)`, inclusive bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformLong {
    lb: i64,
    interval: i64,
}

impl UniformLong {
    /// Inclusive bounds; `None` when the range is empty (YCSB would divide by zero on the first draw).
    pub fn new(lb: i64, ub: i64) -> Option<Self> {
        let interval = ub.checked_sub(lb)?.checked_add(1)?;
        (interval > 0).then_some(Self { lb, interval })
    }

    /// The value for a given `|nextLong()|`.
    #[inline]
    pub(crate) fn value_for(&self, abs_long: i64) -> i64 {
        self.lb + abs_long % self.interval
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.value_for(abs_next_long(rng))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Zipfian
// ---------------------------------------------------------------------------------------------------------------

/// YCSB's `ZIPFIAN_CONSTANT` (θ); not configurable in YCSB either.
pub(crate) const ZIPFIAN_CONSTANT: f64 = 0.99;

/// `Σ_{i=st}^{n-1} 1/(i+1)^θ` added to `initial`, in ascending order exactly as YCSB's `zeta`.
pub(crate) fn zeta_from(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    (st..n).fold(initial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// `zetastatic(n, θ)`: the full sum from 0.
pub(crate) fn zeta(n: i64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// YCSB's η for `items` items and the zeta sum `zetan`.
fn eta(items: i64, theta: f64, zeta2theta: f64, zetan: f64) -> f64 {
    (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan)
}

/// `ZipfianGenerator` over `[min, max]` (Gray et al.). `Copy`: the zeta sum is computed once and each client keeps
/// its own copy of these few numbers (needed because `latest` extends the sum as inserts are acknowledged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipfian {
    base: i64,
    items: i64,
    theta: f64,
    zeta2theta: f64,
    /// `1 + 0.5^θ`, the second branch's bound (YCSB recomputes it per draw; same value).
    second_bound: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    countforzeta: i64,
    /// YCSB's `lastValue`, only updated in the third branch of the draw (quirk kept).
    last_value: i64,
}

impl Zipfian {
    /// Over `[min, max]` with θ = 0.99, computing `zetan` (O(max - min)).
    pub fn new(min: i64, max: i64) -> Self {
        let items = max - min + 1;
        Self::with_zetan(min, max, zeta(items, ZIPFIAN_CONSTANT))
    }

    /// Over `[min, max]` with a precomputed `zetan` (ScrambledZipfian passes its constant).
    ///
    /// Like YCSB's constructor this performs one throw-away draw; YCSB's draw only advances `ThreadLocalRandom`
    /// and maybe `lastValue`, so here it is a draw at `u = 0.5` whose only effect is on `last_value`.
    pub(crate) fn with_zetan(min: i64, max: i64, zetan: f64) -> Self {
        let theta = ZIPFIAN_CONSTANT;
        let items = max - min + 1;
        let zeta2theta = zeta(2, theta);
        let mut z = Self {
            base: min,
            items,
            theta,
            zeta2theta,
            second_bound: 1.0 + 0.5f64.powf(theta),
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: eta(items, theta, zeta2theta, zetan),
            countforzeta: items,
            last_value: 0,
        };
        z.next_long_for(0.5, items);
        z
    }

    /// The value for a uniform draw `u` with the current zeta sum (no state change).
    #[inline]
    pub(crate) fn value_for(&self, u: f64, itemcount: i64) -> i64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < self.second_bound {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    /// Grows the zeta sum when `itemcount` exceeds what it covers. η is recomputed with the constructor's `items`,
    /// not the new count (YCSB quirk, kept). Decreases are ignored, as in YCSB.
    pub(crate) fn extend_to(&mut self, itemcount: i64) {
        if itemcount > self.countforzeta {
            self.zetan = zeta_from(self.countforzeta, itemcount, self.theta, self.zetan);
            self.countforzeta = itemcount;
            self.eta = eta(self.items, self.theta, self.zeta2theta, self.zetan);
        }
    }

    /// `nextLong(itemcount)` for a given `u`: extends, draws, updates `last_value` like YCSB.
    pub(crate) fn next_long_for(&mut self, u: f64, itemcount: i64) -> i64 {
        self.extend_to(itemcount);
        let v = self.value_for(u, itemcount);
        if u * self.zetan >= self.second_bound {
            self.last_value = v;
        }
        v
    }

    /// `nextLong(itemcount)`.
    #[inline]
    pub fn next_long<R: Rng + ?Sized>(&mut self, rng: &mut R, itemcount: i64) -> i64 {
        self.next_long_for(next_double(rng), itemcount)
    }

    /// `nextValue()` without touching state (for generators shared read-only by all clients).
    #[inline]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.value_for(next_double(rng), self.items)
    }
}

/// `ScrambledZipfianGenerator`'s precomputed zeta for 1e10 items (used literally, as YCSB uses it).
pub(crate) const SCRAMBLED_ZETAN: f64 = 26.46902820178302;
/// `ScrambledZipfianGenerator`'s inner item range upper bound (inclusive, so 1e10 + 1 items).
pub(crate) const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;

/// `ScrambledZipfianGenerator`: a zipfian over 1e10+1 ranks, hashed onto `[min, max]` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScrambledZipfian {
    min: i64,
    itemcount: i64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    /// Over `[min, max]`, inclusive; O(1) thanks to the constant zeta.
    pub fn new(min: i64, max: i64) -> Self {
        Self {
            min,
            itemcount: max - min + 1,
            inner: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETAN),
        }
    }

    /// The inner (unscrambled) rank for `u`.
    pub(crate) fn rank_for(&self, u: f64) -> i64 {
        self.inner.value_for(u, self.inner.items)
    }

    /// The key number for `u`.
    #[inline]
    pub(crate) fn value_for(&self, u: f64) -> i64 {
        self.min + fnvhash64(self.rank_for(u)) % self.itemcount
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.value_for(next_double(rng))
    }
}

/// `SkewedLatestGenerator`: the newest acknowledged key is the most popular. Per-client copy; `max` is the
/// acknowledged counter's current limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// `initial_last` is the acknowledged counter's initial `lastValue()` (recordcount - 1); O(initial_last).
    pub fn new(initial_last: i64) -> Self {
        Self {
            zipf: Zipfian::new(0, initial_last - 1),
        }
    }

    /// The value for `u` when the limit is `max` (extends the zeta sum as YCSB does).
    pub(crate) fn next_for(&mut self, u: f64, max: i64) -> i64 {
        max - self.zipf.next_long_for(u, max)
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, max: i64) -> i64 {
        self.next_for(next_double(rng), max)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Hotspot, exponential
// ---------------------------------------------------------------------------------------------------------------

/// `HotspotIntegerGenerator`: the lowest `hot` key numbers get `hotopn` of the draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hotspot {
    lower: i64,
    hot: i64,
    cold: i64,
    hotopn: f64,
}

impl Hotspot {
    /// `hot = (int)(n * datafraction)` as YCSB; `None` when a set that can be drawn from is empty (YCSB divides by 0).
    pub fn new(lower: i64, upper: i64, datafraction: f64, opnfraction: f64) -> Option<Self> {
        let (lower, upper) = (lower.min(upper), lower.max(upper));
        let n = upper - lower + 1;
        let hot = (n as f64 * datafraction) as i32 as i64;
        let cold = n - hot;
        if (hot <= 0 && opnfraction > 0.0) || (cold <= 0 && opnfraction < 1.0) {
            return None;
        }
        Some(Self {
            lower,
            hot,
            cold,
            hotopn: opnfraction,
        })
    }

    /// The value for a uniform `u` (hot or cold) and a `|nextLong()|`.
    pub(crate) fn value_for(&self, u: f64, abs_long: i64) -> i64 {
        if u < self.hotopn {
            self.lower + abs_long % self.hot
        } else {
            self.lower + self.hot + abs_long % self.cold
        }
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        let u = next_double(rng);
        self.value_for(u, abs_next_long(rng))
    }
}

/// `ExponentialGenerator`: distance back from the newest key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    /// `gamma = -ln(1 - percentile/100) / (range * frac)`.
    pub fn new(percentile: f64, range: f64, frac: f64) -> Self {
        Self {
            gamma: -(1.0 - percentile / 100.0).ln() / (range * frac),
        }
    }

    /// The sample for `u`.
    pub(crate) fn value_for(&self, u: f64) -> f64 {
        -u.ln() / self.gamma
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.value_for(next_double(rng))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Shared counters
// ---------------------------------------------------------------------------------------------------------------

/// `SequentialGenerator`: all clients walk `[start, start+n-1]` together, wrapping around.
#[derive(Debug)]
pub struct Sequential {
    start: i64,
    n: i64,
    counter: AtomicI64,
}

impl Sequential {
    /// `None` for an empty range.
    pub fn new(start: i64, end_inclusive: i64) -> Option<Self> {
        let n = end_inclusive - start + 1;
        (n > 0).then(|| Self {
            start,
            n,
            counter: AtomicI64::new(0),
        })
    }

    /// The next value.
    #[inline]
    pub fn next(&self) -> i64 {
        self.start
            + self
                .counter
                .fetch_add(1, Ordering::Relaxed)
                .rem_euclid(self.n)
    }
}

/// `CounterGenerator`: a shared counter (the load phase's key sequence).
#[derive(Debug)]
pub(crate) struct Counter {
    next: AtomicI64,
}

impl Counter {
    /// Starting at `start`.
    pub(crate) fn new(start: i64) -> Self {
        Self {
            next: AtomicI64::new(start),
        }
    }

    /// `getAndIncrement`.
    #[inline]
    pub(crate) fn next(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The value `next` would hand out now, without taking it.
    pub(crate) fn peek(&self) -> i64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// Window of YCSB's `AcknowledgedCounterGenerator`: at most this many run-phase inserts may be unacknowledged.
pub(crate) const ACK_WINDOW: i64 = 1 << 20;

/// The condition YCSB raises as `RuntimeException("Too many unacknowledged insertion keys.")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "Too many unacknowledged insertion keys: key number {keynum} is {ACK_WINDOW} or more ahead of the acknowledged limit"
)]
pub struct TooManyUnacknowledged {
    /// The key number whose acknowledgement found its window slot still taken.
    pub keynum: i64,
}

/// `AcknowledgedCounterGenerator`: run-phase insert keys; readers only see keys up to the contiguously
/// acknowledged limit. Acknowledging marks a slot; whoever gets the try-lock advances the limit over marked slots.
#[derive(Debug)]
pub(crate) struct AcknowledgedCounter {
    counter: Counter,
    limit: AtomicI64,
    /// One bit per window slot (YCSB uses a `boolean[]`; a bitmap is 8× smaller and cheaper to build).
    window: Box<[AtomicU64]>,
    advance: Mutex<()>,
}

impl AcknowledgedCounter {
    /// Starting at `start` (YCSB: recordcount); the limit starts at `start - 1`.
    pub(crate) fn new(start: i64) -> Self {
        Self {
            counter: Counter::new(start),
            limit: AtomicI64::new(start - 1),
            window: (0..ACK_WINDOW / 64).map(|_| AtomicU64::new(0)).collect(),
            advance: Mutex::new(()),
        }
    }

    /// The next key number to insert.
    #[inline]
    pub(crate) fn next(&self) -> i64 {
        self.counter.next()
    }

    /// The key number `next` would hand out now, without taking it.
    pub(crate) fn peek(&self) -> i64 {
        self.counter.peek()
    }

    /// YCSB's `lastValue()`: the highest key number below which every insert has been acknowledged.
    #[inline]
    pub(crate) fn last_value(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }

    #[inline]
    fn slot(masked: i64) -> (usize, u64) {
        ((masked >> 6) as usize, 1u64 << (masked & 63))
    }

    /// Marks `value` as done; advances the limit if no other client is advancing it right now (YCSB's try-lock:
    /// a mark left behind is picked up by a later acknowledgement).
    pub(crate) fn acknowledge(&self, value: i64) -> Result<(), TooManyUnacknowledged> {
        let mask = ACK_WINDOW - 1;
        let (word, bit) = Self::slot(value & mask);
        if self.window[word].fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return Err(TooManyUnacknowledged { keynum: value });
        }
        // A poisoned lock only means another client panicked while advancing; the data is atomics, keep going.
        let guard = match self.advance.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(_guard) = guard {
            let limit = self.limit.load(Ordering::Acquire);
            let mut index = limit + 1;
            let end = index + ACK_WINDOW;
            while index < end {
                let (word, bit) = Self::slot(index & mask);
                if self.window[word].load(Ordering::Acquire) & bit == 0 {
                    break;
                }
                self.window[word].fetch_and(!bit, Ordering::AcqRel);
                index += 1;
            }
            self.limit.store(index - 1, Ordering::Release);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Operation chooser
// ---------------------------------------------------------------------------------------------------------------

/// The five CoreWorkload operation kinds, in YCSB's fixed chooser order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// READ
    Read,
    /// UPDATE
    Update,
    /// INSERT
    Insert,
    /// SCAN
    Scan,
    /// READMODIFYWRITE
    ReadModifyWrite,
}

/// `DiscreteGenerator` for the operation chooser: entries with weight > 0, in the order added, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Discrete {
    /// `weight / sum` per entry, computed once (YCSB divides on every draw; the quotients are identical).
    shares: Vec<(OpKind, f64)>,
}

impl Discrete {
    /// Adds entries with positive weight in the given order; `None` when none is positive.
    pub fn new(weights: &[(OpKind, f64)]) -> Option<Self> {
        let entries: Vec<_> = weights.iter().copied().filter(|(_, w)| *w > 0.0).collect();
        let sum: f64 = entries.iter().map(|(_, w)| w).sum();
        let shares = entries.iter().map(|(k, w)| (*k, w / sum)).collect();
        (!entries.is_empty()).then_some(Self { shares })
    }

    /// The choice for `u` in [0, 1): walk entries subtracting normalised weights.
    #[inline]
    pub(crate) fn value_for(&self, mut u: f64) -> OpKind {
        for &(kind, p) in &self.shares {
            if u < p {
                return kind;
            }
            u -= p;
        }
        // Only reachable through rounding (YCSB asserts); the last entry is the sensible answer.
        self.shares[self.shares.len() - 1].0
    }

    /// The normalised shares, in chooser order.
    #[cfg(test)]
    pub(crate) fn shares(&self) -> &[(OpKind, f64)] {
        &self.shares
    }

    /// One draw.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> OpKind {
        self.value_for(next_double(rng))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Histogram (field lengths)
// ---------------------------------------------------------------------------------------------------------------

/// `HistogramGenerator` for `fieldlengthdistribution=histogram`: bucket i (0-based) has weight `counts[i]` and
/// yields `(i + 1) * block_size`, except that draws falling in the last bucket yield `last * block_size` (YCSB's
/// loop stops one bucket early; kept).
///
/// File format: first line `BlockSize<TAB>n`, then `bucket<TAB>count` lines numbered 0, 1, 2, ...
/// Quirk kept: a draw of 0 returns `block_size` even when bucket 0 is empty (YCSB tests `number <= 0`).
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    block_size: i64,
    counts: Vec<i64>,
    area: i64,
}

impl Histogram {
    /// Parses the file text; errors are `(line, message)` for the caller to prefix with the path.
    pub(crate) fn parse(text: &str) -> Result<Self, (usize, String)> {
        let mut lines = text.lines().enumerate();
        let (_, first) = lines
            .next()
            .ok_or((1, "empty histogram file".to_string()))?;
        let mut cols = first.split('\t');
        if cols.next() != Some("BlockSize") {
            return Err((1, "first line must be BlockSize<TAB>n".to_string()));
        }
        let block_size: i64 = cols
            .next()
            .and_then(|v| v.trim().parse().ok())
            .filter(|v| *v > 0)
            .ok_or((1, "BlockSize must be a positive whole number".to_string()))?;
        // YCSB does `list.add(bucket, count)`: an insertion at that position, so buckets are expected in order.
        let mut counts: Vec<i64> = Vec::new();
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let mut cols = line.split('\t');
            let bucket = cols.next().and_then(|v| v.trim().parse::<usize>().ok());
            let count = cols.next().and_then(|v| v.trim().parse::<i64>().ok());
            match (bucket, count) {
                (Some(b), Some(c)) if c >= 0 && b <= counts.len() => counts.insert(b, c),
                (Some(b), Some(_)) if b > counts.len() => {
                    let msg = "skips ahead; buckets must be numbered 0, 1, 2, ... in order";
                    return Err((i + 1, format!("bucket {b} {msg}")));
                }
                _ => {
                    let msg = "expected bucket<TAB>count with whole, non-negative numbers";
                    return Err((i + 1, msg.to_string()));
                }
            }
        }
        let area: i64 = counts.iter().sum();
        if area <= 0 || area > i64::from(i32::MAX) {
            return Err((
                2,
                "the bucket counts must add up to between 1 and 2147483647".to_string(),
            ));
        }
        Ok(Self {
            block_size,
            counts,
            area,
        })
    }

    /// The length for a number drawn uniformly from `[0, area)`.
    pub(crate) fn value_for(&self, mut number: i64) -> i64 {
        let last = self.counts.len() - 1;
        for (i, c) in self.counts[..last].iter().enumerate() {
            number -= c;
            if number <= 0 {
                return (i as i64 + 1) * self.block_size;
            }
        }
        last as i64 * self.block_size
    }

    /// One draw.
    pub(crate) fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.value_for(rng.random_range(0..self.area))
    }

    /// The largest length it can produce.
    pub(crate) fn max_value(&self) -> i64 {
        (self.counts.len() as i64 - 1).max(1) * self.block_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    /// The draws `u` of the spec's zipfian tables.
    const ZIPF_DRAWS: [f64; 11] = [
        0.0, 0.02, 0.0378, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999999,
    ];

    /// Checks `Zipfian::new(min, max)`'s constants and its value for each of [`ZIPF_DRAWS`].
    fn check_zipf_table(min: i64, max: i64, zetan: f64, eta: f64, want: [i64; 11]) {
        let z = Zipfian::new(min, max);
        assert!(close(z.zetan, zetan), "{}", z.zetan);
        assert!(close(z.eta, eta), "{}", z.eta);
        for (u, want) in ZIPF_DRAWS.into_iter().zip(want) {
            assert_eq!(z.value_for(u, z.items), want, "u={u}");
        }
    }

    #[test]
    fn zipf_0_999_table() {
        let want = [0, 0, 0, 0, 0, 3, 22, 151, 471, 927, 999];
        check_zipf_table(0, 999, 7.728953217284729, 0.07480608670689805, want);
    }

    #[test]
    fn zipf_1_100_table() {
        let want = [1, 1, 1, 1, 1, 2, 7, 26, 59, 95, 100];
        check_zipf_table(1, 100, 5.294568831377164, 0.05357974299304715, want);
    }

    #[test]
    fn zeta2theta_and_alpha_constants() {
        assert_eq!(zeta(2, ZIPFIAN_CONSTANT), 1.5034777750283594);
        assert_eq!(1.0 / (1.0 - ZIPFIAN_CONSTANT), 99.99999999999991);
        assert_eq!(1.0 + 0.5f64.powf(ZIPFIAN_CONSTANT), 1.5034777750283594);
    }

    #[test]
    fn scrambled_zipfian_0_1000_table() {
        let s = ScrambledZipfian::new(0, 1000);
        assert_eq!(s.inner.items, 10_000_000_001);
        assert!(close(s.inner.eta, 0.21220003380967406), "{}", s.inner.eta);
        let table = [
            (0.01, 0, 144),
            (0.0378, 1, 610),
            (0.05, 1, 610),
            (0.1, 6, 942),
            (0.25, 296, 809),
            (0.5, 134552, 367),
            (0.75, 42924421, 767),
            (0.9, 1170869537, 991),
            (0.99, 8086205587, 745),
            (0.999999, 9999787803, 383),
        ];
        for (u, rank, key) in table {
            assert_eq!(s.rank_for(u), rank, "rank u={u}");
            assert_eq!(s.value_for(u), key, "key u={u}");
        }
    }

    #[test]
    fn last_value_only_in_third_branch() {
        let mut z = Zipfian::new(0, 999);
        let before = z.last_value;
        assert_eq!(z.next_long_for(0.01, 1000), 0);
        assert_eq!(z.last_value, before, "first branch leaves lastValue");
        assert_eq!(z.next_long_for(0.5, 1000), 22);
        assert_eq!(z.last_value, 22);
        assert_eq!(z.next_long_for(0.15, 1000), 1);
        assert_eq!(z.last_value, 22, "second branch leaves lastValue");
    }

    #[test]
    fn extension_uses_constructor_items_for_eta() {
        let mut z = Zipfian::new(0, 99);
        z.extend_to(200);
        let zetan = zeta(200, ZIPFIAN_CONSTANT);
        assert!(close(z.zetan, zetan));
        let eta = (1.0 - (2.0f64 / 100.0).powf(0.01)) / (1.0 - zeta(2, 0.99) / zetan);
        assert!(close(z.eta, eta));
        z.extend_to(150); // decreases ignored
        assert!(close(z.zetan, zetan));
    }

    #[test]
    fn skewed_latest_never_returns_zero_and_favours_newest() {
        let mut s = SkewedLatest::new(999);
        assert_eq!(s.next_for(0.01, 999), 999);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..10_000 {
            let v = s.next(&mut rng, 999);
            assert!((1..=999).contains(&v), "{v}");
        }
        // the limit grows: values follow it
        assert_eq!(s.next_for(0.01, 1500), 1500);
    }

    #[test]
    fn uniform_inclusive_and_empty() {
        let u = UniformLong::new(5, 7).unwrap();
        assert_eq!(u.value_for(0), 5);
        assert_eq!(u.value_for(2), 7);
        assert_eq!(u.value_for(3), 5);
        assert!(UniformLong::new(5, 4).is_none());
    }

    #[test]
    fn hotspot_split() {
        let h = Hotspot::new(0, 99, 0.2, 0.8).unwrap();
        assert_eq!(h.value_for(0.1, 25), 5);
        assert_eq!(h.value_for(0.9, 25), 45);
        assert!(Hotspot::new(0, 3, 0.1, 0.5).is_none(), "hot set of 0 keys");
        assert!(Hotspot::new(0, 9, 1.0, 0.5).is_none(), "cold set of 0 keys");
        assert!(Hotspot::new(0, 9, 1.0, 1.0).is_some());
    }

    #[test]
    fn exponential_matches_formula() {
        let e = Exponential::new(95.0, 1000.0, 0.8571428571);
        let gamma = -(0.05f64).ln() / (1000.0 * 0.8571428571);
        assert!(close(e.value_for(0.5), -(0.5f64).ln() / gamma));
    }

    #[test]
    fn sequential_wraps() {
        let s = Sequential::new(10, 12).unwrap();
        let v: Vec<_> = (0..5).map(|_| s.next()).collect();
        assert_eq!(v, [10, 11, 12, 10, 11]);
    }

    #[test]
    fn acknowledged_counter_advances_over_contiguous_marks() {
        let a = AcknowledgedCounter::new(100);
        assert_eq!(a.last_value(), 99);
        let k: Vec<_> = (0..4).map(|_| a.next()).collect();
        assert_eq!(k, [100, 101, 102, 103]);
        a.acknowledge(101).unwrap();
        assert_eq!(a.last_value(), 99, "gap at 100 blocks the limit");
        a.acknowledge(100).unwrap();
        assert_eq!(a.last_value(), 101);
        a.acknowledge(103).unwrap();
        assert_eq!(a.last_value(), 101);
        a.acknowledge(102).unwrap();
        assert_eq!(a.last_value(), 103);
    }

    #[test]
    fn acknowledged_counter_concurrent_clients_lose_no_marks() {
        let a = std::sync::Arc::new(AcknowledgedCounter::new(1000));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    let mut last_seen = 999;
                    for _ in 0..5000 {
                        let k = a.next();
                        a.acknowledge(k).unwrap();
                        let limit = a.last_value();
                        assert!(limit >= last_seen, "the limit never moves back");
                        last_seen = limit;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(a.last_value() < 1000 + 20_000);
        // Marks left behind by failed try-locks are picked up by the next acknowledgement.
        let k = a.next();
        assert_eq!(k, 21_000);
        a.acknowledge(k).unwrap();
        assert_eq!(a.last_value(), 21_000);
    }

    #[test]
    fn acknowledged_counter_window_overflow_is_an_error() {
        let a = AcknowledgedCounter::new(0);
        a.acknowledge(1).unwrap(); // 0 never acknowledged: the limit stays at -1
        let err = a.acknowledge(1 + ACK_WINDOW).unwrap_err();
        assert_eq!(err.keynum, 1 + ACK_WINDOW);
        assert!(
            err.to_string()
                .starts_with("Too many unacknowledged insertion keys")
        );
    }

    #[test]
    fn acknowledged_counter_leftover_mark_is_picked_up_later() {
        let a = AcknowledgedCounter::new(0);
        // Simulate a mark set while another client held the lock.
        let guard = a.advance.lock().unwrap();
        a.acknowledge(0).unwrap();
        assert_eq!(a.last_value(), -1);
        drop(guard);
        a.acknowledge(1).unwrap();
        assert_eq!(a.last_value(), 1);
    }

    #[test]
    fn discrete_fixed_order_and_normalisation() {
        let d = Discrete::new(&[
            (OpKind::Read, 1.0),
            (OpKind::Update, 0.0),
            (OpKind::Insert, 3.0),
        ])
        .unwrap();
        assert_eq!(d.shares.len(), 2);
        assert_eq!(d.value_for(0.0), OpKind::Read);
        assert_eq!(d.value_for(0.2499), OpKind::Read);
        assert_eq!(d.value_for(0.25), OpKind::Insert);
        assert_eq!(d.value_for(0.9999999999), OpKind::Insert);
        assert!(Discrete::new(&[(OpKind::Read, 0.0)]).is_none());
    }

    #[test]
    fn histogram_file() {
        let h = Histogram::parse("BlockSize\t10\n0\t1\n1\t0\n2\t3\n").unwrap();
        assert_eq!(h.value_for(0), 10);
        assert_eq!(h.value_for(1), 10);
        // YCSB's loop stops before the last bucket and returns `last * block_size` (quirk kept).
        assert_eq!(h.value_for(2), 20);
        assert_eq!(h.max_value(), 20);
        assert_eq!(Histogram::parse("Block\t10\n").unwrap_err().0, 1);
        assert_eq!(Histogram::parse("BlockSize\t10\n0\tx\n").unwrap_err().0, 2);
        assert_eq!(
            Histogram::parse("BlockSize\t10\n0\t1\n5\t1\n")
                .unwrap_err()
                .0,
            3
        );
    }
}
