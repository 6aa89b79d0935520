//! Heavy-tailed holder pauses (`pause_distribution`): each pause's length
//! is drawn from the run's seed, the draws follow the distribution's tail,
//! runs record their longest pause, and the `hold` axis sets the
//! check-to-act latency.

#![cfg(madsim)]

use std::path::Path;

use leasesim::study::pauses::{draw, tail};
use leasesim::study::spec::{self, PauseDistribution};
use leasesim::study::{grid, run_study, SeedPlan};
use leasesim_scenario::{FaultAction, WorkloadKind};

const MS: u64 = 1_000_000;

/// The share of draws at least x against the formula, at several x deep
/// into the tail: 40,000 draws put the binomial's standard error below
/// 0.0025, so a tolerance of 4 of those fails a wrong exponent or σ.
#[test]
fn pause_lengths_follow_the_tail_of_their_distribution() {
    let n = 40_000_u64;
    for (dist, shape) in [(PauseDistribution::Pareto, 1.5), (PauseDistribution::Pareto, 1.1), (PauseDistribution::Lognormal, 1.0)] {
        let draws: Vec<u64> = (0..n).map(|i| draw(dist, 100 * MS, shape, i / 16, i % 16, u64::MAX)).collect();
        for x in [50 * MS, 100 * MS, 200 * MS, 500 * MS, 1_332 * MS, 3_000 * MS] {
            let measured = draws.iter().filter(|d| **d >= x).count() as f64 / n as f64;
            let predicted = tail(dist, 100 * MS, shape, x);
            let se = (predicted * (1.0 - predicted) / n as f64).sqrt().max(1e-4);
            assert!((measured - predicted).abs() <= 4.0 * se, "{dist:?} α/σ={shape} x={x}: measured {measured}, predicted {predicted}");
        }
    }
    // Pareto's minimum is its scale: no draw below it.
    assert!((0..1000).all(|i| draw(PauseDistribution::Pareto, 100 * MS, 1.5, 3, i, u64::MAX) >= 100 * MS));
}

fn parse(text: &str) -> spec::StudySpec {
    let mut s = spec::parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    s.base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/studies/base-lock.toml");
    s
}

#[test]
fn each_run_draws_its_own_pauses_and_records_the_longest() {
    let s = parse(
        "name = \"t\"\nbase = \"b.toml\"\nseeds = \"0..4\"\npause_distribution = \"pareto\"\npause_shape = 1.5\npause_every = \"1s\"\n\
         [axes]\npause = [\"100ms\"]\nhold = [\"250ms\"]\nfenced = [false]\nmargin = [0.1]\n",
    );
    let base = leasesim_scenario::load(&s.base).unwrap();
    let cells = grid::cells(&s);
    assert_eq!(cells.len(), 1);
    let pauses = |seed: u64| -> Vec<u64> {
        let sc = grid::apply_run(&base, &s, &cells[0], seed);
        let lock = sc.workloads.iter().find_map(|w| match &w.kind {
            WorkloadKind::Lock(l) => Some(l.clone()),
            _ => None,
        });
        assert_eq!(lock.unwrap().hold_ns, (250 * MS, 250 * MS), "the hold axis sets the check-to-act latency");
        sc.faults.iter().filter(|f| matches!(f.action, FaultAction::Pause(_))).map(|f| f.for_ns.unwrap()).collect()
    };
    let (a, b) = (pauses(0), pauses(1));
    assert!(a.len() >= 15 && a.iter().all(|p| *p >= 100 * MS), "{a:?}");
    assert_ne!(a, b, "two seeds draw different pauses");
    assert_eq!(a, pauses(0), "the same seed draws the same pauses");
    assert!(a.windows(2).any(|w| w[0] != w[1]), "pauses within a run differ: {a:?}");
    let r = run_study(&s, &base, SeedPlan::of(&s), 2);
    assert_eq!(r.pause_distribution, "pareto");
    for run in &r.runs {
        let drawn = pauses(run.seed);
        // A pause fires only when the key has a holder, so the longest
        // observed is one of the drawn lengths (or cut by the run's end).
        assert!(run.metrics.longest_pause_ns >= 100 * MS, "seed {}: {}", run.seed, run.metrics.longest_pause_ns);
        assert!(run.metrics.longest_pause_ns <= *drawn.iter().max().unwrap() + MS, "seed {}", run.seed);
    }
}

#[test]
fn pause_keys_are_checked() {
    for (text, at, fix) in [
        ("pause_shape = 1.5\n[axes]\npause = [\"1s\"]\n", "t.toml:3:1", "pause_distribution"),
        ("pause_distribution = \"zipf\"\n[axes]\npause = [\"1s\"]\n", "t.toml:3:1", "pareto"),
        ("pause_distribution = \"pareto\"\npause_shape = -1\n[axes]\npause = [\"1s\"]\n", "t.toml:4:1", "(0, 10]"),
        ("pause_distribution = \"pareto\"\n[axes]\nmargin = [0.1]\n", "t.toml:3:1", "`pause` axis"),
        ("[axes]\nhold = [\"soon\"]\n", "t.toml:4:1", "duration"),
    ] {
        let e = spec::parse(&format!("name = \"t\"\nbase = \"b.toml\"\n{text}"), "t.toml").expect_err(text).to_string();
        assert!(e.contains(at) && e.contains(fix), "{text}: {e}");
    }
}

/// The `leader_pause` and `checkpoint` axes: one pause of the leader at the
/// holder's pause time, and the checkpoint knob reaching the servers (the
/// same seed runs differently with checkpoints, which are log entries).
#[test]
fn leader_pauses_elect_a_new_leader_and_checkpoints_reach_the_servers() {
    let s = parse(
        "name = \"t\"\nbase = \"b.toml\"\nseeds = \"0..3\"\npause_at = \"5s\"\npause_every = \"30s\"\n\
         [axes]\npause = [\"15s\"]\ncheckpoint = [\"0s\", \"250ms\"]\nleader_pause = [\"1s\"]\n",
    );
    let base = leasesim_scenario::load(&s.base).unwrap();
    let cells = grid::cells(&s);
    assert_eq!(cells.len(), 2);
    for (cell, every) in cells.iter().zip([None, Some(250 * MS)]) {
        let sc = grid::apply_run(&base, &s, cell, 0);
        assert_eq!(sc.cluster.checkpoint_interval_ns, every);
        let leader: Vec<_> =
            sc.faults.iter().filter(|f| matches!(f.action, FaultAction::Pause(leasesim_scenario::Selector::Leader))).collect();
        assert_eq!(leader.len(), 1);
        assert_eq!((leader[0].at_ns, leader[0].for_ns), (5_000 * MS, Some(1_000 * MS)));
    }
    let r = run_study(&s, &base, SeedPlan::of(&s), 2);
    for run in &r.runs {
        // 1 s is past every election timeout (150-300 ms): a new leader.
        assert!(run.metrics.leaders.len() >= 2, "cell {} seed {}: {:?}", run.cell, run.seed, run.metrics.leaders);
    }
    for seed in 0..3 {
        let digest = |cell: usize| r.runs.iter().find(|x| x.cell == cell && x.seed == seed).map(|x| x.digest.clone()).unwrap();
        assert_ne!(digest(0), digest(1), "seed {seed}: checkpoints on ran the same trace as off");
    }
}
