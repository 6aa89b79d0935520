//! Heavy-tailed holder pauses (`pause_distribution`, docs/STUDY-FORMAT.md).
//! A GC or VM pause is rarely one fixed length: measured pause times have
//! long tails (most are short, a few are far longer than a lease), which is
//! what breaks an unfenced lock. Each pause of a run draws its length from
//! the run's seed and the pause's number, so the run stays deterministic
//! and a cell's runs see independent lengths.

use super::grid::splitmix64 as mix;
use super::spec::PauseDistribution;

/// A uniform draw in (0, 1] for pause `k` of the run with `seed` (`lane`
/// separates independent draws of one pause).
fn uniform(seed: u64, k: u64, lane: u64) -> f64 {
    let bits = mix(mix(seed ^ 0x7061_7573_6573_0000) ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ lane) >> 11;
    (bits as f64 + 1.0) / (1u64 << 53) as f64
}

/// The length of pause `k` of the run with `seed`, in ns: `scale_ns` for
/// `fixed`; Pareto with minimum `scale_ns` and tail index `shape`;
/// lognormal with median `scale_ns` and σ = `shape`. At most `cap_ns`.
pub fn draw(dist: PauseDistribution, scale_ns: u64, shape: f64, seed: u64, k: u64, cap_ns: u64) -> u64 {
    let scale = scale_ns as f64;
    let x = match dist {
        PauseDistribution::Fixed => scale,
        // Inverse transform: P(X > x) = (scale/x)^α, so X = scale · U^(−1/α).
        PauseDistribution::Pareto => scale * uniform(seed, k, 1).powf(-1.0 / shape),
        // Box–Muller: a standard normal z from two uniforms.
        PauseDistribution::Lognormal => {
            let z = (-2.0 * uniform(seed, k, 1).ln()).sqrt() * (std::f64::consts::TAU * uniform(seed, k, 2)).cos();
            scale * (shape * z).exp()
        }
    };
    (x.min(cap_ns as f64).max(0.0)) as u64
}

/// P(a pause lasts at least `x_ns`), by the distribution's formula.
pub fn tail(dist: PauseDistribution, scale_ns: u64, shape: f64, x_ns: u64) -> f64 {
    let (scale, x) = (scale_ns as f64, x_ns as f64);
    match dist {
        PauseDistribution::Fixed => f64::from(u8::from(x <= scale)),
        PauseDistribution::Pareto if x <= scale => 1.0,
        PauseDistribution::Pareto => (scale / x).powf(shape),
        PauseDistribution::Lognormal if x <= 0.0 => 1.0,
        PauseDistribution::Lognormal => 0.5 * erfc((x / scale).ln() / (shape * std::f64::consts::SQRT_2)),
    }
}

/// The complementary error function (Numerical Recipes' erfcc: Chebyshev
/// fit, relative error below 1.2e-7 everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07 + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [(0.0, 1.0), (0.5, 0.479_500_122), (1.0, 0.157_299_207), (2.0, 0.004_677_735), (-1.0, 1.842_700_793)] {
            assert!((erfc(x) - want).abs() < 1e-6, "erfc({x}) = {} want {want}", erfc(x));
        }
    }

    #[test]
    fn draws_are_deterministic_and_differ_between_pauses() {
        let a = draw(PauseDistribution::Pareto, 100_000_000, 1.5, 7, 3, u64::MAX);
        assert_eq!(a, draw(PauseDistribution::Pareto, 100_000_000, 1.5, 7, 3, u64::MAX));
        assert_ne!(a, draw(PauseDistribution::Pareto, 100_000_000, 1.5, 7, 4, u64::MAX));
        assert_ne!(a, draw(PauseDistribution::Pareto, 100_000_000, 1.5, 8, 3, u64::MAX));
        assert_eq!(draw(PauseDistribution::Fixed, 5, 1.5, 7, 3, u64::MAX), 5);
        assert_eq!(draw(PauseDistribution::Pareto, 100, 0.1, 7, 3, 1_000), 1_000, "capped");
    }

    #[test]
    fn the_mix_is_splitmix64() {
        // The first outputs of SplitMix64 from state 0 (Vigna's reference
        // implementation): the draws above depend on these exact bits.
        assert_eq!(mix(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(mix(0x9e37_79b9_7f4a_7c15), 0x6e78_9e6a_a1b9_65f4);
    }
}
