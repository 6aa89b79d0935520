//! Duration strings: `"250ms"`, `"2s"`, `"1m"`, signed where a sign makes
//! sense (`"-2s"`).
//!
//! The one duration reader of the workspace: scenario and study files, the
//! engine's transcript tests, and any flag that takes a time. It lives in
//! core, which reads no clock and does no IO, because it is pure text to
//! nanoseconds and every program links core (the real node cannot link the
//! simulator).
//!
//! Scenario files never hold bare numbers for time, so a reader always sees
//! the unit. Parsing is exact integer arithmetic (a decimal like `"1.5s"` is
//! exactly 1 500 000 000 ns, never a float rounding), and formatting picks
//! the largest unit that divides the value, so `format` then `parse` gives
//! back the same nanoseconds for every value: `to_toml` relies on that.

/// Units a duration may carry, with their length in nanoseconds. `ms`, `s`
/// and `m` are the documented ones; `ns`, `us` and `h` exist so that every
/// nanosecond value can be written back exactly.
const UNITS: [(&str, u64); 7] =
    [("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000)];

/// Why a string is not a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Not `<number><unit>`.
    Syntax,
    /// A minus sign where only forward time makes sense.
    Negative,
    /// Does not fit in 64 bits of nanoseconds.
    TooLong,
    /// A fraction finer than one nanosecond.
    TooFine,
}

impl std::fmt::Display for DurationError {
    /// What is wrong, for a reader without a better place to say it (a
    /// scenario's loader words its own, with the key and a fix).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DurationError::Syntax => "expected a number directly followed by its unit (ms, s, m, or ns, us, h), e.g. 500ms, 5s or 1m",
            DurationError::Negative => "a duration cannot be negative here",
            DurationError::TooLong => "too long for 64-bit nanoseconds",
            DurationError::TooFine => "finer than one nanosecond",
        })
    }
}

impl std::error::Error for DurationError {}

/// Parses an unsigned duration into nanoseconds.
pub fn parse_duration(text: &str) -> Result<u64, DurationError> {
    let (negative, magnitude_ns) = parse_magnitude(text)?;
    if negative && magnitude_ns != 0 {
        return Err(DurationError::Negative);
    }
    u64::try_from(magnitude_ns).map_err(|_| DurationError::TooLong)
}

/// Parses a signed duration (`"-2s"`, `"+1s"`, `"3ms"`) into nanoseconds.
pub fn parse_signed_duration(text: &str) -> Result<i64, DurationError> {
    let (negative, magnitude_ns) = parse_magnitude(text)?;
    let magnitude_ns = i128::try_from(magnitude_ns).map_err(|_| DurationError::TooLong)?;
    let ns = if negative { -magnitude_ns } else { magnitude_ns };
    i64::try_from(ns).map_err(|_| DurationError::TooLong)
}

/// Writes nanoseconds in the largest unit that divides them exactly.
pub fn format_duration(ns: u64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    // Largest unit first; `µs` is skipped in favour of the ASCII `us`.
    for (unit, unit_ns) in UNITS.iter().rev().filter(|(unit, _)| *unit != "µs") {
        if ns.is_multiple_of(*unit_ns) {
            return format!("{}{unit}", ns / unit_ns);
        }
    }
    format!("{ns}ns")
}

/// Writes signed nanoseconds, with a leading `-` when negative.
pub fn format_signed_duration(ns: i64) -> String {
    let magnitude = format_duration(ns.unsigned_abs());
    if ns < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// Splits `[sign] digits [. digits] unit` and computes the magnitude exactly.
fn parse_magnitude(text: &str) -> Result<(bool, u128), DurationError> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, unit) = rest.split_at(number_len);
    let unit_ns = UNITS.iter().find(|(name, _)| *name == unit).map(|&(_, ns)| u128::from(ns)).ok_or(DurationError::Syntax)?;
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) || (number.contains('.') && fraction.is_empty()) {
        return Err(DurationError::Syntax);
    }
    // 39 digits overflow u128; anything near that is far beyond u64 anyway.
    let whole = whole.trim_start_matches('0');
    if whole.len() > 30 {
        return Err(DurationError::TooLong);
    }
    let whole_value: u128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| DurationError::Syntax)? };
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 20 {
        return Err(DurationError::TooFine);
    }
    let fraction_value: u128 = if fraction.is_empty() { 0 } else { fraction.parse().map_err(|_| DurationError::Syntax)? };
    let scale = 10u128.pow(fraction.len() as u32);
    let fraction_ns = fraction_value * unit_ns;
    if !fraction_ns.is_multiple_of(scale) {
        return Err(DurationError::TooFine);
    }
    let total = whole_value.checked_mul(unit_ns).and_then(|ns| ns.checked_add(fraction_ns / scale)).ok_or(DurationError::TooLong)?;
    Ok((negative, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_documented_units() {
        assert_eq!(parse_duration("250ms"), Ok(250_000_000));
        assert_eq!(parse_duration("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert_eq!(parse_duration("0ms"), Ok(0));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("7us"), Ok(7_000));
        assert_eq!(parse_duration("7µs"), Ok(7_000));
        assert_eq!(parse_duration("3ns"), Ok(3));
        assert_eq!(parse_duration("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_signed_duration("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse_signed_duration("+2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration("-0s"), Ok(0));
    }

    #[test]
    fn rejects_what_is_not_a_duration() {
        for text in ["2 s", "2", "s", "", "2sec", "1.s", ".5s", "1..5s", "2S", " 2s", "--2s", "1e3ms"] {
            assert_eq!(parse_duration(text), Err(DurationError::Syntax), "{text:?}");
        }
        assert_eq!(parse_duration("-2s"), Err(DurationError::Negative));
        assert_eq!(parse_duration("0.1ns"), Err(DurationError::TooFine));
        assert_eq!(parse_duration("6000000h"), Err(DurationError::TooLong));
        assert_eq!(parse_signed_duration("3000000h"), Err(DurationError::TooLong));
    }

    #[test]
    fn errors_say_what_a_duration_looks_like() {
        assert_eq!(
            parse_duration("5 s").unwrap_err().to_string(),
            "expected a number directly followed by its unit (ms, s, m, or ns, us, h), e.g. 500ms, 5s or 1m"
        );
        assert_eq!(parse_duration("-1s").unwrap_err().to_string(), "a duration cannot be negative here");
        assert_eq!(parse_duration("0.5ns").unwrap_err().to_string(), "finer than one nanosecond");
        assert_eq!(parse_duration("9999999h").unwrap_err().to_string(), "too long for 64-bit nanoseconds");
    }

    #[test]
    fn formats_in_the_largest_exact_unit() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(250_000_000), "250ms");
        assert_eq!(format_duration(90_000_000_000), "90s");
        assert_eq!(format_duration(120_000_000_000), "2m");
        assert_eq!(format_duration(1_500), "1500ns");
        assert_eq!(format_signed_duration(-2_000_000_000), "-2s");
        assert_eq!(format_signed_duration(i64::MIN), "-9223372036854775808ns");
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(ns in any::<u64>()) {
            prop_assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
        }

        #[test]
        fn signed_format_then_parse_is_identity(ns in any::<i64>()) {
            prop_assert_eq!(parse_signed_duration(&format_signed_duration(ns)), Ok(ns));
        }
    }
}
