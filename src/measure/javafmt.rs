//! Java number formatting, so that our report lines are byte-identical to YCSB's.
//!
//! YCSB prints doubles with `Double.toString` (export files) and `DecimalFormat("#.##")` (status
//! lines); Rust's `Display` differs from both (`3` instead of `3.0`, no `E` notation, different
//! rounding), so we reproduce the Java rules here.

/// Java `Double.toString` as a modern JDK (19+) prints it: the shortest decimal that reads back
/// as the same double, plain notation for `1e-3 <= |x| < 1e7`, otherwise `d.dddE±n`.
pub(crate) fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let (digits, exp) = shortest_digits(x.abs());
    let mut out = String::new();
    if x.is_sign_negative() {
        out.push('-');
    }
    let abs = x.abs();
    if (1e-3..1e7).contains(&abs) {
        // Plain notation; `exp` is the power of ten of the first digit.
        if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        let fraction = if digits.len() > 1 { &digits[1..] } else { "0" };
        out.push_str(&format!("{}.{fraction}E{exp}", &digits[..1]));
    }
    out
}

/// Shortest round-trip significant digits (no trailing zeros) and the decimal exponent of the
/// first digit, for a finite positive `x`.
///
/// Rust's `{:e}` gives the shortest representation; the JDK additionally prefers a two-digit
/// decimal when it is closer to `x` than the one-digit shortest (this only happens for
/// subnormals, e.g. `4.9E-324`).
fn shortest_digits(x: f64) -> (String, i32) {
    let (digits, exp) = split_sci(&format!("{x:e}"));
    if digits.len() == 1 {
        let two = format!("{x:.1e}");
        if two.parse::<f64>().ok() == Some(x) {
            return split_sci(&two);
        }
    }
    (digits, exp)
}

/// Splits Rust's `d.ddde±n` into the digit string (trailing zeros trimmed) and the exponent.
fn split_sci(s: &str) -> (String, i32) {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exp.parse().unwrap_or(0))
}

/// Java `String.format("%.2f", x)` for a non-negative finite `x`: HALF_UP on the exact binary
/// value. Rust rounds an exact tie (a value ending in .125, .375, .625 or .875) to even instead,
/// so ties are nudged up first; every other value rounds the same in both.
pub(crate) fn format_2f(x: f64) -> String {
    let frac = x.fract();
    if x.is_finite() && x < 1e15 && [0.125, 0.375, 0.625, 0.875].contains(&frac) {
        return format!("{:.2}", x + 0.001);
    }
    format!("{x:.2}")
}

/// Java `new DecimalFormat("#.##").format(x)` (default HALF_EVEN rounding on the exact binary
/// value, no grouping, at most two fraction digits), as YCSB's status line prints numbers.
///
/// Faithful quirks: a pattern with no `0` digit gets one integer digit when it is applied
/// (`DecimalFormat.applyPattern` turns `#.##` into `0.##`), so `0.5` prints as `0.5`, never `.5`;
/// a negative value that rounds to zero prints as `-0`; NaN prints `NaN` and infinities `∞`/`-∞`
/// (the JDK's CLDR symbols). Known difference: for magnitudes ≥ 1e17 the JDK prints the shortest
/// round-trip digits padded with zeros, we print the exact integer (never reached by latencies or
/// rates).
pub(crate) fn decimal_2(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    let negative = x.is_sign_negative();
    let sign = if negative { "-" } else { "" };
    if x.is_infinite() {
        return format!("{sign}∞");
    }
    // The exact decimal expansion of the double: 1100 fraction digits cover every f64.
    let exact = format!("{:.1100}", x.abs());
    let (int_part, frac_part) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut int_digits: Vec<u8> = int_part.bytes().map(|b| b - b'0').collect();
    let frac: Vec<u8> = frac_part.bytes().map(|b| b - b'0').collect();
    let mut kept: Vec<u8> = (0..2).map(|i| frac.get(i).copied().unwrap_or(0)).collect();
    let rest = frac.get(2..).unwrap_or(&[]);
    if rounds_up_half_even(rest, kept[1]) && add_one(&mut kept) && add_one(&mut int_digits) {
        int_digits.insert(0, 1);
    }
    while kept.last() == Some(&0) {
        kept.pop();
    }
    // Leading zeros are dropped, but one integer digit always stays (see above): `0.5`, `0`.
    let mut int_str: String = int_digits
        .iter()
        .skip_while(|&&d| d == 0)
        .map(|d| char::from(b'0' + d))
        .collect();
    if int_str.is_empty() {
        int_str.push('0');
    }
    let frac_str: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
    if frac_str.is_empty() {
        format!("{sign}{int_str}")
    } else {
        format!("{sign}{int_str}.{frac_str}")
    }
}

/// Whether dropping the digits `rest` rounds the last kept digit (`last`) up: HALF_EVEN, on the
/// exact value (more than half up, less than half down, exactly half to the even digit).
fn rounds_up_half_even(rest: &[u8], last: u8) -> bool {
    match rest.first() {
        None => false,
        Some(&d) if d > 5 => true,
        Some(&d) if d < 5 => false,
        // More than half up; exactly half to the even digit.
        Some(_) => rest[1..].iter().any(|&d| d != 0) || last % 2 == 1,
    }
}

/// Adds one to the decimal number `digits` (most significant first); true when it carries out
/// of the first digit (every digit was 9, and is now 0).
fn add_one(digits: &mut [u8]) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return false;
        }
    }
    true
}

/// YCSB's `ordinal()` for percentile labels: integral values get English suffixes
/// (`50th`, `1st`, `2nd`, `3rd`, `11th`, `21st`), others print as Java doubles (`99.9`).
pub(crate) fn percentile_label(p: f64) -> String {
    if p.is_finite() && p % 1.0 == 0.0 {
        // Java: `Integer j = i.intValue()` (saturating), then `j % 100` / `j % 10` (sign kept).
        let j = p as i32;
        let suffix = match j % 100 {
            11..=13 => "th",
            _ => match (j % 10).abs() {
                1 => "st",
                2 => "nd",
                3 => "rd",
                _ => "th",
            },
        };
        format!("{j}{suffix}")
    } else {
        java_double(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_spec_examples() {
        for (value, java) in [
            (3.0, "3.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (540.8328826392644, "540.8328826392644"),
            (1e7, "1.0E7"),
            (1e-4, "1.0E-4"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (12487.916666666666, "12487.916666666666"),
            (61.11411573823688, "61.11411573823688"),
            (5051.42, "5051.42"),
        ] {
            assert_eq!(java_double(value), java, "{value:?}");
        }
    }

    #[test]
    fn double_boundaries_and_shapes() {
        for (value, java) in [
            (9999999.0, "9999999.0"),
            (12345678.9, "1.23456789E7"),
            (0.001, "0.001"),
            (0.000999, "9.99E-4"),
            (100.0, "100.0"),
            (0.1, "0.1"),
            (0.0123, "0.0123"),
            (-2.5, "-2.5"),
            (1e23, "1.0E23"),
            (1.0E-10, "1.0E-10"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            // JDK 19+ picks the closer two-digit decimal for the smallest subnormal.
            (f64::from_bits(1), "4.9E-324"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0 * 1e7, "6666666.666666666"),
            (1234567.125, "1234567.125"),
        ] {
            assert_eq!(java_double(value), java, "{value:?}");
        }
    }

    #[test]
    fn decimal_2_spec_examples() {
        for (value, java) in [
            (8506.365, "8506.36"),
            (8506.375, "8506.38"),
            (1.005, "1"),
            (0.0, "0"),
            (1545.1, "1545.1"),
            (2312.2099999, "2312.21"),
        ] {
            assert_eq!(decimal_2(value), java, "{value:?}");
        }
    }

    #[test]
    fn decimal_2_edges() {
        // Exact ties round to even.
        for (value, java) in [
            (0.125, "0.12"),
            (0.375, "0.38"),
            (2.5, "2.5"),
            // Carries through the integer part.
            (9.999, "10"),
            (99.995_000_1, "100"),
            // `#.##` is applied as `0.##`: one integer digit below 1, as JDK 17 prints.
            (0.5, "0.5"),
            (0.12, "0.12"),
            (0.999, "1"),
            (-0.5, "-0.5"),
            (0.001, "0"),
            (-1.25, "-1.25"),
            (-0.001, "-0"),
            (1e20, "100000000000000000000"),
            (123456789.0, "123456789"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "∞"),
        ] {
            assert_eq!(decimal_2(value), java, "{value:?}");
        }
    }

    #[test]
    fn percentile_labels() {
        let cases = [
            (50.0, "50th"),
            (1.0, "1st"),
            (2.0, "2nd"),
            (3.0, "3rd"),
            (4.0, "4th"),
            (11.0, "11th"),
            (12.0, "12th"),
            (13.0, "13th"),
            (21.0, "21st"),
            (22.0, "22nd"),
            (95.0, "95th"),
            (99.0, "99th"),
            (100.0, "100th"),
            (111.0, "111th"),
            (0.0, "0th"),
            (99.9, "99.9"),
            (50.5, "50.5"),
            (99.99, "99.99"),
        ];
        for (p, label) in cases {
            assert_eq!(percentile_label(p), label, "percentile {p}");
        }
    }

    proptest::proptest! {
        #[test]
        fn java_double_round_trips(bits in proptest::num::u64::ANY) {
            let x = f64::from_bits(bits);
            proptest::prop_assume!(x.is_finite());
            let s = java_double(x);
            let back: f64 = s.replace('E', "e").parse().unwrap();
            proptest::prop_assert_eq!(back.to_bits(), x.to_bits(), "{}", s);
            let plain = (1e-3..1e7).contains(&x.abs());
            proptest::prop_assert_eq!(!s.contains('E'), plain || x == 0.0, "{}", s);
            // Always a fraction part: `d.d...` before any exponent.
            let mantissa = s.split('E').next().unwrap_or("");
            proptest::prop_assert!(mantissa.contains('.') && !mantissa.ends_with('.'), "{}", s);
        }

        #[test]
        fn decimal_2_is_within_half_a_cent(x in -1e9f64..1e9) {
            let s = decimal_2(x);
            // Always an integer digit before the point.
            proptest::prop_assert!(!s.starts_with('.') && !s.starts_with("-."), "{}", s);
            let back: f64 = s.parse().unwrap();
            proptest::prop_assert!((back - x).abs() <= 0.005 + 1e-9 * x.abs(), "{} -> {}", x, s);
            let frac = s.split('.').nth(1).unwrap_or("");
            proptest::prop_assert!(frac.len() <= 2 && !frac.ends_with('0'), "{}", s);
        }
    }

    #[test]
    fn format_2f_rounds_ties_up_as_java() {
        assert_eq!(format_2f(0.125), "0.13");
        assert_eq!(format_2f(150.875), "150.88");
        assert_eq!(format_2f(2.5), "2.50");
        assert_eq!(format_2f(12484.833333333334), "12484.83");
        assert_eq!(format_2f(0.124), "0.12");
    }
}
