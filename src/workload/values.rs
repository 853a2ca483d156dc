//! Field values and field order, as YCSB produces them: `RandomByteIterator` bytes, data-integrity strings, and
//! the Java `HashMap` iteration order in which the binding (and so MongoDB's document) sees the fields.

use rand::Rng;

use crate::measure::order::{java_hash_continue, java_string_hash};

/// Fills `buf` like YCSB's `RandomByteIterator`: each 32-bit draw gives 6 bytes `0x20 + ((r >> s) & m)` with
/// `(s, m)` = (0,31), (5,63), (10,95), (15,31), (20,63), (25,95); the last group is cut to fit.
///
/// The 32-bit draws are the two halves of one 64-bit draw (each half is as uniform as Java's
/// `nextInt()`): the RNG step, not the byte arithmetic, was most of the cost of a batched load.
pub(crate) fn fill_random_bytes<R: Rng + ?Sized>(rng: &mut R, buf: &mut [u8]) {
    let mut pairs = buf.chunks_exact_mut(12);
    for pair in &mut pairs {
        let r = rng.next_u64();
        let (low, high) = pair.split_at_mut(6);
        low.copy_from_slice(&group(r as u32 as i32));
        high.copy_from_slice(&group((r >> 32) as u32 as i32));
    }
    for rest in pairs.into_remainder().chunks_mut(6) {
        fill_group(rng.random(), rest);
    }
}

/// The six bytes of one full group.
#[inline]
fn group(r: i32) -> [u8; 6] {
    [
        0x20 + (r & 31) as u8,
        0x20 + ((r >> 5) & 63) as u8,
        0x20 + ((r >> 10) & 95) as u8,
        0x20 + ((r >> 15) & 31) as u8,
        0x20 + ((r >> 20) & 63) as u8,
        0x20 + ((r >> 25) & 95) as u8,
    ]
}

/// One (possibly short) 6-byte group from one draw `r` (Java `>>` on an int is arithmetic, as here).
#[inline]
pub(crate) fn fill_group(r: i32, out: &mut [u8]) {
    let full = group(r);
    let n = out.len().min(6);
    out[..n].copy_from_slice(&full[..n]);
}

/// YCSB's `buildDeterministicValue` for `dataintegrity=true`: `key:field`, then repeatedly `:` + the Java hash of
/// the whole buffer so far (including that colon), cut to `len` characters.
pub(crate) fn deterministic_value(key: &str, field: &str, len: usize) -> String {
    let mut sb = String::with_capacity(len + 12);
    sb.push_str(key);
    sb.push(':');
    sb.push_str(field);
    let mut h = java_string_hash(&sb);
    // Lengths count UTF-16 units in Java; keys and generated parts are ASCII, field names nearly always are.
    let mut units = sb.encode_utf16().count();
    while units < len {
        sb.push(':');
        h = java_hash_continue(h, ":");
        let digits = h.to_string();
        h = java_hash_continue(h, &digits);
        sb.push_str(&digits);
        units += 1 + digits.len();
    }
    truncate_units(&mut sb, len);
    sb
}

/// `StringBuilder.setLength(len)` for strings (cuts at a char boundary when the field name is non-ASCII).
fn truncate_units(s: &mut String, len: usize) {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > len {
            s.truncate(i);
            return;
        }
        units += c.len_utf16();
    }
}

fn recount(spread: &[u32], capacity: usize) -> Vec<usize> {
    let mut per_bucket = vec![0usize; capacity];
    for &h in spread {
        per_bucket[h as usize & (capacity - 1)] += 1;
    }
    per_bucket
}

/// The order in which Java's `HashMap<String, _>` iterates `names` when they are `put` in the given order
/// (YCSB's `buildValues` does exactly that), returned as indices into `names`.
///
/// Model: the table starts at 16 buckets and doubles whenever the size exceeds 3/4 of it (and, as Java does, when
/// one bucket would hold a 9th entry while the table is smaller than 64). Iteration is by bucket index
/// `(h ^ (h >>> 16)) & (capacity - 1)` where `h` is `String.hashCode`, and within a bucket in insertion order
/// (resizing keeps relative order). Java turns a bucket holding 9+ entries into a tree once the table has 64+
/// buckets, which can reorder that one bucket; that needs thousands of fields with colliding hashes and is not modelled.
pub(crate) fn java_hashmap_order<S: AsRef<str>>(names: &[S]) -> Vec<usize> {
    let spread: Vec<u32> = names
        .iter()
        .map(|n| {
            let h = java_string_hash(n.as_ref()) as u32;
            h ^ (h >> 16)
        })
        .collect();
    let mut capacity: usize = 16;
    let mut per_bucket = vec![0usize; capacity];
    for (i, &h) in spread.iter().enumerate() {
        let size_after = i + 1;
        let bucket = h as usize & (capacity - 1);
        per_bucket[bucket] += 1;
        // Java's treeifyBin resizes instead of treeifying while the table is small; then the size check follows.
        if per_bucket[bucket] >= 9 && capacity < 64 {
            capacity *= 2;
            per_bucket = recount(&spread[..size_after], capacity);
        }
        if size_after > capacity * 3 / 4 {
            capacity *= 2;
            per_bucket = recount(&spread[..size_after], capacity);
        }
    }
    let mut order: Vec<usize> = (0..names.len()).collect();
    // Stable sort: equal buckets keep insertion order.
    order.sort_by_key(|&i| spread[i] as usize & (capacity - 1));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};

    #[test]
    fn hashmap_order_for_ten_fields() {
        let names: Vec<String> = (0..10).map(|i| format!("field{i}")).collect();
        let order: Vec<&str> = java_hashmap_order(&names)
            .into_iter()
            .map(|i| names[i].as_str())
            .collect();
        assert_eq!(
            order,
            [
                "field1", "field0", "field7", "field6", "field9", "field8", "field3", "field2",
                "field5", "field4"
            ]
        );
    }

    #[test]
    fn hashmap_order_for_eight_fields_and_resize() {
        let names: Vec<String> = (0..8).map(|i| format!("field{i}")).collect();
        let order: Vec<usize> = java_hashmap_order(&names);
        // Same bucket pattern as ten fields, without 8 and 9 (capacity 16, no resize).
        assert_eq!(order, [1, 0, 7, 6, 3, 2, 5, 4]);
        // 13 entries exceed 12 = 0.75 * 16: capacity 32; still a permutation.
        let names: Vec<String> = (0..13).map(|i| format!("field{i}")).collect();
        let mut order = java_hashmap_order(&names);
        order.sort_unstable();
        assert_eq!(order, (0..13).collect::<Vec<_>>());
    }

    #[test]
    fn hashmap_order_matches_java_for_many_sizes() {
        let data = include_str!("testdata/java_hashmap_order.txt");
        let mut checked = 0;
        for line in data.lines().filter(|l| !l.starts_with('#')) {
            let (label, order) = line.split_once(':').unwrap();
            let (prefix, n) = match label.strip_prefix('f') {
                Some(n) => ("f", n.parse::<usize>().unwrap()),
                None => ("field", label.parse::<usize>().unwrap()),
            };
            let want: Vec<usize> = order
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
            assert_eq!(java_hashmap_order(&names), want, "{label}");
            checked += 1;
        }
        assert_eq!(checked, 14);
    }

    #[test]
    fn java_hash_code() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("field0"), -1274708362);
        assert_eq!(java_string_hash("hello world"), 1794106052);
    }

    #[test]
    fn deterministic_value_spec_example() {
        assert_eq!(
            deterministic_value("user6284781860667377211", "field0", 100),
            "user6284781860667377211:field0:-56807877:2032869390:-165488160:1762371712:-169193395:-1039977118:-10"
        );
        assert_eq!(deterministic_value("user1", "field0", 5), "user1");
        assert_eq!(deterministic_value("user1", "field0", 12).len(), 12);
    }

    #[test]
    fn groups_come_from_both_halves_of_each_64_bit_draw_then_one_draw_per_tail_group() {
        let mut a = rand::rngs::SmallRng::seed_from_u64(9);
        let mut b = a.clone();
        // 2 pairs of groups (24 bytes), then a full and a short group from single draws.
        let mut buf = [0u8; 24 + 6 + 4];
        fill_random_bytes(&mut a, &mut buf);
        let mut want = [0u8; 34];
        for pair in want[..24].chunks_mut(12) {
            let r = b.next_u64();
            fill_group(r as u32 as i32, &mut pair[..6]);
            fill_group((r >> 32) as u32 as i32, &mut pair[6..]);
        }
        for tail in want[24..].chunks_mut(6) {
            fill_group(b.random(), tail);
        }
        assert_eq!(buf, want);
        // Both halves matter: the two groups of a pair differ (equal only with chance 2^-32).
        assert_ne!(buf[..6], buf[6..12]);
    }

    #[test]
    fn random_bytes_alphabet_by_position() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut buf = vec![0u8; 60_000];
        fill_random_bytes(&mut rng, &mut buf);
        for (i, b) in buf.iter().enumerate() {
            match i % 6 {
                0 | 3 => assert!((0x20..=0x3F).contains(b)),
                1 | 4 => assert!((0x20..=0x5F).contains(b)),
                _ => assert!((0x20..=0x3F).contains(b) || (0x60..=0x7F).contains(b)),
            }
        }
        let mut one = [0u8; 6];
        fill_group(-1, &mut one);
        assert_eq!(one, [0x3F, 0x5F, 0x7F, 0x3F, 0x5F, 0x7F]);
        fill_group(0, &mut one);
        assert_eq!(one, [0x20; 6]);
    }
}
