//! Fisher's exact test on two rates k1/n1 and k2/n2: the one test the
//! studies use wherever the report compares two rates (overlapping Wilson
//! intervals are not a test). Written once here; `leasesim study` writes
//! its p-values for pairs of cells (`comparisons.csv`) and
//! `leasesim fisher K1/N1 K2/N2` prints one for any two counts in the text.

/// The two-sided p-value of Fisher's exact test on the 2×2 table
/// [[k1, n1 − k1], [k2, n2 − k2]]: the probability, under the
/// hypergeometric null with the margins fixed, of every table at most as
/// likely as the observed one (R's `fisher.test` convention, with its
/// relative tolerance of 1e-7).
///
/// Panics when k1 > n1 or k2 > n2 (callers pass counts of runs).
pub fn fisher_exact_two_sided(k1: u64, n1: u64, k2: u64, n2: u64) -> f64 {
    assert!(k1 <= n1 && k2 <= n2, "counts above their totals: {k1}/{n1}, {k2}/{n2}");
    let n = n1 + n2;
    let successes = k1 + k2;
    let ln_fact = ln_factorials(n);
    let ln_choose = |a: u64, b: u64| ln_fact[a as usize] - ln_fact[b as usize] - ln_fact[(a - b) as usize];
    let ln_total = ln_choose(n, successes);
    // P(first row holds x of the successes).
    let ln_p = |x: u64| ln_choose(n1, x) + ln_choose(n2, successes - x) - ln_total;
    let low = successes.saturating_sub(n2);
    let high = successes.min(n1);
    let observed = ln_p(k1);
    let threshold = observed + (1.0 + 1e-7_f64).ln();
    let p: f64 = (low..=high).map(ln_p).filter(|lp| *lp <= threshold).map(f64::exp).sum();
    p.min(1.0)
}

/// ln(k!) for k = 0..=n.
fn ln_factorials(n: u64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n as usize + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for k in 1..=n {
        acc += (k as f64).ln();
        out.push(acc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn matches_r_fisher_test_on_known_tables() {
        // Fisher's tea tasting, [[3, 1], [1, 3]]: R gives 0.4857143.
        assert!(close(fisher_exact_two_sided(3, 4, 1, 4), 0.485_714_3, 1e-6));
        // [[1, 9], [11, 3]]: R gives 0.002759456.
        assert!(close(fisher_exact_two_sided(1, 10, 11, 14), 0.002_759_456, 1e-6));
        // [[10, 0], [0, 10]]: the two extreme tables, 2 / C(20, 10).
        assert!(close(fisher_exact_two_sided(10, 10, 0, 10), 2.0 / 184_756.0, 1e-9));
        // [[7, 53], [0, 60]]: the two extreme tables are the only ones as
        // unlikely, so p = 2·C(60, 7)/C(120, 7) = 0.012984458.
        assert!(close(fisher_exact_two_sided(7, 60, 0, 60), 0.012_984_458, 1e-6));
    }

    #[test]
    fn equal_rates_give_one_and_the_test_is_symmetric() {
        assert_eq!(fisher_exact_two_sided(0, 5, 0, 5), 1.0);
        assert!(close(fisher_exact_two_sided(20, 40, 20, 40), 1.0, 1e-9));
        let (a, b) = (fisher_exact_two_sided(12, 60, 3, 60), fisher_exact_two_sided(3, 60, 12, 60));
        assert!(close(a, b, 1e-12));
        assert!(a < 0.05);
    }
}
