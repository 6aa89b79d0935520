//! How times and rates are written on the pages: seconds with millisecond
//! precision, the way the terminal and the checkers write them, and signed
//! errors with a unit that fits their size.

pub const NS_PER_SEC: u64 = 1_000_000_000;

/// `12.481s`, as `leasesim_core::fmt_secs` writes it.
pub fn secs(ns: u64) -> String {
    format!("{}.{:03}s", ns / NS_PER_SEC, (ns % NS_PER_SEC) / 1_000_000)
}

/// A signed clock error: `+1.20s`, `-35.0ms`, `+0.8µs`.
pub fn signed_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    let sign = if ns < 0 { "-" } else { "+" };
    let abs = ns.unsigned_abs() as f64;
    if abs >= 1e9 {
        format!("{sign}{:.2}s", abs / 1e9)
    } else if abs >= 1e6 {
        format!("{sign}{:.1}ms", abs / 1e6)
    } else {
        format!("{sign}{:.1}µs", abs / 1e3)
    }
}

/// A rate error as a percentage: `+4%`, `-0.1%`.
pub fn percent(rate: f64) -> String {
    let p = rate * 100.0;
    let text = if p.abs() >= 1.0 || p == 0.0 { format!("{p:+.0}%") } else { format!("{p:+.2}%") };
    text.replace("+0%", "0%")
}

/// A short duration for tables: `0.21s`, `3m 05s`.
pub fn seconds_f(seconds: f64) -> String {
    if seconds >= 120.0 {
        let whole = seconds.round() as u64;
        format!("{}m {:02}s", whole / 60, whole % 60)
    } else if seconds >= 10.0 {
        format!("{seconds:.1}s")
    } else {
        format!("{seconds:.2}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_like_the_terminal() {
        assert_eq!(secs(12_481_356_000), "12.481s");
        assert_eq!(signed_duration(1_200_000_000), "+1.20s");
        assert_eq!(signed_duration(-35_000_000), "-35.0ms");
        assert_eq!(signed_duration(0), "0s");
        assert_eq!(percent(0.04), "+4%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(-0.001), "-0.10%");
        assert_eq!(seconds_f(185.0), "3m 05s");
    }
}
