//! What every frozen forecast model shares, in one place: the per-cell CSV
//! loop (`leasesim study SPEC --forecast…` prints one line per cell of the
//! grid, or the reason the model does not cover it) and, for the Monte
//! Carlo models, the per-cell loop of modelled runs drawn from the model's
//! own fixed generator. The models differ only in what one cell or one run
//! computes; before this module each repeated the loops, and a fix to one
//! copy would have left the others behind. Their output must not change by
//! a byte (sim/tests/it/forecast_frozen.rs compares each with the forecast
//! committed before its study ran).

use std::fmt::Write as _;

use super::grid::CellParams;
use super::spec::StudySpec;
use leasesim_scenario::Scenario;

/// `header` (the comment and column lines), then one line per cell of
/// `spec`'s grid: its index, a comma, and what `row` makes of the cell and
/// its scenario (the base with the cell's parameters applied).
pub(super) fn cells_csv(
    spec: &StudySpec,
    base: &Scenario,
    header: String,
    mut row: impl FnMut(&CellParams, &Scenario) -> String,
) -> String {
    let mut out = header;
    for (i, cell) in super::grid::cells(spec).iter().enumerate() {
        let s = super::grid::apply(base, spec, cell);
        let _ = writeln!(out, "{i},{}", row(cell, &s));
    }
    out
}

/// Runs `samples` modelled runs of one cell, each drawing from one
/// generator seeded with the model's own `seed` (never a run's), so the
/// same inputs give the same forecast, to the last digit, on every machine.
pub(super) fn for_each_run(seed: u64, samples: u32, mut one_run: impl FnMut(&mut SplitMix)) {
    let mut rng = SplitMix(seed);
    for _ in 0..samples {
        one_run(&mut rng);
    }
}

/// splitmix64: the models' own fixed generator (no crate whose output may
/// change between versions).
pub(super) struct SplitMix(pub(super) u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }

    pub(super) fn hop(&mut self, (lo, hi): (f64, f64)) -> f64 {
        self.uniform(lo, hi)
    }

    pub(super) fn index(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_uniform_and_fixed() {
        let seed = 0x2710_0027_0002;
        let mut draws = Vec::new();
        for_each_run(seed, 10_000, |rng| draws.push(rng.uniform(0.0, 1.0)));
        assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = draws.iter().sum::<f64>() / 1e4;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        assert_eq!(SplitMix(seed).next(), SplitMix(seed).next());
        // splitmix64's first output from state 0 (Vigna's reference code).
        assert_eq!(SplitMix(0).next(), 0xE220_A839_7B1D_CDAF);
    }
}
