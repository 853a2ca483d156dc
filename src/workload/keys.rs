//! YCSB record keys (`user` + number), byte-identical to Java YCSB so data sets and results are interchangeable.
//!
//! Integer-width quirks kept on purpose: YCSB passes load-phase key numbers and the key chooser's
//! values through `intValue()`, so they are truncated to 32 bits and sign-extended before hashing. The callers in
//! `core.rs` do that truncation with [`java_int`]; run-phase inserts use the full 64-bit counter value.

/// FNV-1a 64 over the 8 little-endian bytes of `value` (YCSB's `Utils.fnvhash64`), made non-negative with Java's
/// `Math.abs` semantics: `i64::MIN` stays negative.
pub(crate) fn fnvhash64(value: i64) -> i64 {
    const OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut v = value;
    let mut h = OFFSET_BASIS;
    for _ in 0..8 {
        let octet = (v & 0xFF) as u64;
        v >>= 8; // arithmetic shift, as Java's `>>` on a long
        h ^= octet;
        h = h.wrapping_mul(PRIME);
    }
    (h as i64).wrapping_abs()
}

/// Java's `long.intValue()`: keep the low 32 bits, sign-extend.
pub(crate) fn java_int(value: i64) -> i64 {
    value as i32 as i64
}

/// YCSB's `buildKeyName`: `user` + zeros up to `zeropadding` characters (the `-` sign counts) + the decimal number,
/// hashed with [`fnvhash64`] first unless `ordered`.
pub fn build_key_name(keynum: i64, zeropadding: i32, ordered: bool) -> String {
    let mut key = String::with_capacity(24);
    write_key_name(&mut key, keynum, zeropadding, ordered);
    key
}

/// Like [`build_key_name`] but appends into `out` (lets callers reuse a buffer).
pub fn write_key_name(out: &mut String, keynum: i64, zeropadding: i32, ordered: bool) {
    let n = if ordered { keynum } else { fnvhash64(keynum) };
    // Decimal digits into a stack buffer (i64::MIN has 20 characters with its sign).
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        pos -= 1;
        buf[pos] = b'-';
    }
    let len = buf.len() - pos;
    out.reserve(4 + len.max(zeropadding.max(0) as usize));
    out.push_str("user");
    for _ in len..zeropadding.max(0) as usize {
        out.push('0');
    }
    // Only ASCII digits and '-' were written, so this is always valid UTF-8; one copy instead
    // of a char-by-char push.
    if let Ok(digits) = std::str::from_utf8(&buf[pos..]) {
        out.push_str(digits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_vectors_hashed_and_ordered() {
        let hashed = [
            (0, "user6284781860667377211"),
            (1, "user8517097267634966620"),
            (2, "user1820151046732198393"),
            (3, "user4052466453699787802"),
            (4, "user3232700585171816769"),
            (5, "user1000385178204227360"),
            (13, "user412164360235391016"),
            (100, "user879817313296471393"),
            (1000, "user5952875239596136740"),
            (999999, "user2744965632448235251"),
            (2147483647, "user627943977067101855"),
            (-1, "user8289690350564177859"),
        ];
        for (n, key) in hashed {
            assert_eq!(build_key_name(n, 1, false), key, "keynum {n}");
        }
        for n in [0, 1, 2, 3, 4, 5] {
            assert_eq!(build_key_name(n, 1, true), format!("user{n}"));
        }
        assert_eq!(build_key_name(-1, 1, true), "user-1");
        assert_eq!(build_key_name(5, 8, true), "user00000005");
    }

    #[test]
    fn padding_counts_sign_and_goes_before_it() {
        assert_eq!(build_key_name(-5, 4, true), "user00-5");
        assert_eq!(build_key_name(12345, 3, true), "user12345");
        assert_eq!(build_key_name(7, -3, true), "user7");
        assert_eq!(
            build_key_name(i64::MIN, 1, true),
            "user-9223372036854775808"
        );
        assert_eq!(build_key_name(0, 3, true), "user000");
        assert_eq!(build_key_name(13, 20, false), "user00412164360235391016");
    }

    #[test]
    fn min_value_corner_keeps_java_abs() {
        // Java Math.abs(Long.MIN_VALUE) is negative; wrapping_abs reproduces it instead of panicking.
        assert_eq!(i64::MIN.wrapping_abs(), i64::MIN);
        assert!(fnvhash64(123) >= 0);
    }

    #[test]
    fn int_truncation() {
        assert_eq!(java_int(2147483648), -2147483648);
        assert_eq!(java_int(4294967297), 1);
        assert_eq!(java_int(-1), -1);
    }
}
