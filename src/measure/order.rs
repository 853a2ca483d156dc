//! YCSB's export order: the iteration order of `java.util.concurrent.ConcurrentHashMap`.
//!
//! YCSB keeps measurements (and each measurement's status counts) in ConcurrentHashMaps and
//! prints them in iteration order, which is bin order of a hash table that starts at 16 bins and
//! doubles when the element count reaches 3/4 of the size. We simulate the table, including the
//! way a resize splits a bin (nodes before the bin's "last run" are re-linked in reverse).

use super::Status;

/// Java `String.hashCode` over UTF-16 code units, continuing from `h` (so a growing buffer can
/// be hashed as it grows).
#[inline]
pub(crate) fn java_hash_continue(mut h: i32, s: &str) -> i32 {
    for unit in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    h
}

/// Java `String.hashCode`.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    java_hash_continue(0, s)
}

/// ConcurrentHashMap's `spread(h)`.
pub(crate) fn spread(h: i32) -> i32 {
    (h ^ ((h as u32) >> 16) as i32) & 0x7FFF_FFFF
}

/// Orders items the way a ConcurrentHashMap created with the default constructor iterates them,
/// given their spread hashes in insertion order. Returns indices into `hashes`.
pub(crate) fn chm_order(hashes: &[i32]) -> Vec<usize> {
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); 16];
    let mut count = 0usize;
    for (i, &h) in hashes.iter().enumerate() {
        let n = table.len();
        table[(h as usize) & (n - 1)].push(i);
        count += 1;
        // sizeCtl = n - n/4; resize once the count reaches it.
        if count >= n - (n >> 2) {
            table = resize(&table, hashes);
        }
    }
    table.into_iter().flatten().collect()
}

/// `ConcurrentHashMap.transfer` for plain linked bins.
fn resize(table: &[Vec<usize>], hashes: &[i32]) -> Vec<Vec<usize>> {
    let n = table.len();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n * 2];
    for (i, bin) in table.iter().enumerate() {
        if bin.is_empty() {
            continue;
        }
        // Which half a node goes to: 0 stays at `i`, 1 moves to `i + n`.
        let half = |idx: usize| usize::from((hashes[idx] as usize) & n != 0);
        // The last run: the longest tail whose nodes all go to the same half.
        let mut last_run = 0;
        let mut run_half = half(bin[0]);
        for (pos, &idx) in bin.iter().enumerate().skip(1) {
            if half(idx) != run_half {
                run_half = half(idx);
                last_run = pos;
            }
        }
        let mut halves: [Vec<usize>; 2] = Default::default();
        halves[run_half].extend_from_slice(&bin[last_run..]);
        // Nodes before the last run are prepended one by one (so they end up reversed).
        for &idx in &bin[..last_run] {
            halves[half(idx)].insert(0, idx);
        }
        let [low, high] = halves;
        next[i] = low;
        next[i + n] = high;
    }
    next
}

/// Orders measurement names (given in first-measured order) as YCSB prints them.
pub(crate) fn order_names<S: AsRef<str>>(names: &[S]) -> Vec<usize> {
    let hashes: Vec<i32> = names
        .iter()
        .map(|n| spread(java_string_hash(n.as_ref())))
        .collect();
    chm_order(&hashes)
}

/// The bin a status lands in (table of 16; YCSB's `Status.hashCode` mixes name and description,
/// values taken from the reference). With at most nine statuses the table never grows.
pub(crate) fn status_bin(status: Status) -> usize {
    match status {
        Status::Ok | Status::NotImplemented => 5,
        Status::BadRequest | Status::Forbidden => 6,
        Status::UnexpectedState => 8,
        Status::ServiceUnavailable | Status::BatchedOk => 9,
        Status::NotFound => 11,
        Status::Error => 15,
    }
}

/// Orders statuses (given in first-reported order) as YCSB prints their `Return=` lines.
pub(crate) fn order_statuses(statuses: &[Status]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..statuses.len()).collect();
    // Stable sort keeps first-reported order within a bin.
    idx.sort_by_key(|&i| status_bin(statuses[i]));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ordered(names: &[&str]) -> Vec<String> {
        order_names(names)
            .into_iter()
            .map(|i| names[i].to_string())
            .collect()
    }

    #[test]
    fn spec_bins() {
        let bins = [
            ("READ", 0),
            ("UPDATE-FAILED", 0),
            ("SCAN-FAILED", 1),
            ("DELETE", 2),
            ("READ-MODIFY-WRITE", 3),
            ("CLEANUP", 8),
            ("SCAN-LATENCY-PER-RECORD", 9),
            ("UPDATE", 10),
            ("INSERT", 10),
            ("READ-FAILED", 10),
            ("VERIFY", 10),
            ("SCAN", 11),
            ("INSERT-FAILED", 15),
        ];
        for (name, bin) in bins {
            assert_eq!(spread(java_string_hash(name)) & 15, bin, "{name}");
        }
    }

    #[test]
    fn java_hash_values() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        // "READ".hashCode() in Java.
        assert_eq!(java_string_hash("READ"), 2511254);
    }

    #[test]
    fn spec_order_examples() {
        assert_eq!(ordered(&["INSERT", "CLEANUP"]), ["CLEANUP", "INSERT"]);
        assert_eq!(
            ordered(&["READ", "UPDATE", "CLEANUP"]),
            ["READ", "CLEANUP", "UPDATE"]
        );
        assert_eq!(
            ordered(&["READ", "READ-MODIFY-WRITE", "UPDATE", "CLEANUP"]),
            ["READ", "READ-MODIFY-WRITE", "CLEANUP", "UPDATE"]
        );
        assert_eq!(
            ordered(&["SCAN", "INSERT", "SCAN-LATENCY-PER-RECORD", "CLEANUP"]),
            ["CLEANUP", "SCAN-LATENCY-PER-RECORD", "INSERT", "SCAN"]
        );
    }

    #[test]
    fn ties_keep_first_measured_order() {
        assert_eq!(
            ordered(&["READ-FAILED", "UPDATE", "READ"]),
            ["READ", "READ-FAILED", "UPDATE"]
        );
        assert_eq!(
            ordered(&["UPDATE", "READ-FAILED", "READ"]),
            ["READ", "UPDATE", "READ-FAILED"]
        );
    }

    #[test]
    fn resize_splits_bins_like_java() {
        // Synthetic hashes: 12 inserts trigger the 16 -> 32 resize.
        // Bin 0 holds hashes 0, 16, 32, 48 in that order: bits (h & 16) = 0,1,0,1 so the last
        // run is just [48]; the nodes before it are prepended: low = [32, 0], high = [16, 48].
        let mut hashes = vec![0, 16, 32, 48];
        hashes.extend(1..=8); // bins 1..8, no split effects
        let order = chm_order(&hashes);
        let values: Vec<i32> = order.iter().map(|&i| hashes[i]).collect();
        assert_eq!(values, vec![32, 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 48]);
        // Below the threshold there is no resize: bin order, insertion order within a bin.
        let small = chm_order(&[0, 16, 32, 48, 1]);
        assert_eq!(small, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn status_order_is_bin_order() {
        let seen = [
            Status::Error,
            Status::NotFound,
            Status::Ok,
            Status::BatchedOk,
        ];
        let order: Vec<Status> = order_statuses(&seen).into_iter().map(|i| seen[i]).collect();
        assert_eq!(
            order,
            [
                Status::Ok,
                Status::BatchedOk,
                Status::NotFound,
                Status::Error
            ]
        );
        let tie = [Status::NotImplemented, Status::Ok];
        let order: Vec<Status> = order_statuses(&tie).into_iter().map(|i| tie[i]).collect();
        assert_eq!(order, [Status::NotImplemented, Status::Ok]);
    }
}
