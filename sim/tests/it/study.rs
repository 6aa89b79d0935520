//! `leasesim study` on a small grid whose extreme cells have known answers:
//! no drift with a margin ⇒ no overlap; a leader clock far faster than the
//! margin allows ⇒ overlaps; a large wall-clock step breaks
//! leader-stamped-wall but not leader-monotonic or writer-clock. Also the
//! spec loader's errors and the outputs the command writes.

#![cfg(madsim)]

use std::path::{Path, PathBuf};

use leasesim::study::{grid, output, run_study, spec, CellResult, StudyResults};

fn base_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/studies/base-lock.toml")
}

fn study(axes: &str, seeds: std::ops::Range<u64>) -> StudyResults {
    let text =
        format!("name = \"t\"\nbase = \"base-lock.toml\"\npause_at = \"3s\"\npause_every = \"6s\"\njump_at = \"5s\"\n[axes]\n{axes}");
    let mut s = spec::parse(&text, "t.toml").expect("a valid spec");
    s.base = base_path();
    let base = leasesim_scenario::load(&s.base).expect("the base scenario loads");
    run_study(&s, &base, seeds, 2)
}

/// A file's text, gunzipped when its name ends in `.gz`.
fn read_text(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).expect("gzip");
        text
    } else {
        String::from_utf8(bytes).expect("utf-8")
    }
}

fn overlaps(c: &CellResult) -> u64 {
    c.metrics.invariants.get("lock-belief-overlap").copied().unwrap_or(0)
}

fn cell<'a>(r: &'a StudyResults, label: &str) -> &'a CellResult {
    r.cells
        .iter()
        .find(|c| c.label == label)
        .unwrap_or_else(|| panic!("no cell {label}: {:?}", r.cells.iter().map(|c| &c.label).collect::<Vec<_>>()))
}

#[test]
fn drift_against_margin_extremes_match_theory() {
    let r = study(
        "lease_expiry = [\"leader-monotonic\", \"writer-clock\"]\npause = [\"2500ms\"]\nleader_drift = [0.0, 0.4]\nmargin = [0.1]\n",
        0..2,
    );
    assert_eq!(r.cells.len(), 4);
    for strategy in ["leader-monotonic", "writer-clock"] {
        let calm = cell(&r, &format!("{strategy} pause=2500ms leader_drift=0 margin=0.1"));
        assert_eq!(overlaps(calm), 0, "{strategy}: no drift with a margin");
        assert_eq!((calm.measured, calm.agreement), ("safe", "agree"));
        assert!(calm.metrics.lease_hours > 0.0 && calm.metrics.min_margin_ns.is_some_and(|m| m > 0));
        let fast = cell(&r, &format!("{strategy} pause=2500ms leader_drift=0.4 margin=0.1"));
        assert!(overlaps(fast) > 0, "{strategy}: a 40% fast leader beats a 10% margin");
        assert_eq!((fast.measured, fast.prediction.as_ref().unwrap().verdict), ("unsafe", "unsafe"));
        // The refined theory predicts each run: overlap in both cells' runs
        // exactly where it happened.
        assert_eq!(fast.consistency_check.verdict, "agree", "{:?}", fast.consistency_check);
        assert_eq!(fast.consistency_check.predicted_overlap_runs, 2);
        assert_eq!(calm.consistency_check.predicted_overlap_runs, 0);
        assert!(fast.metrics.handovers_overlapping > 0 && fast.metrics.handovers_overlapping_by_expiry > 0);
        assert!(fast.rates.overlapping_handovers.lo > 0.0);
        assert!(fast.metrics.min_margin_ns.is_some_and(|m| m < 0), "the next grant came before the belief ended");
        assert!(fast.metrics.stale_rejected > 0, "fencing stopped the paused holders' late writes");
        assert_eq!(fast.metrics.stale_accepted, 0);
    }
}

#[test]
fn the_forecast_is_set_against_the_runs_and_strategies_are_compared() {
    let r = study(
        "lease_expiry = [\"leader-monotonic\", \"writer-clock\", \"leader-stamped-wall\"]\npause = [\"2500ms\"]\nleader_drift = [0.0, 0.4]\nmargin = [0.1]\n",
        0..3,
    );
    // The frozen model covers leader-monotonic and writer-clock only, and
    // says why not for leader-stamped-wall.
    let lsw = cell(&r, "leader-stamped-wall pause=2500ms leader_drift=0 margin=0.1");
    assert!(lsw.forecast.is_none() && lsw.forecast_scope.is_some_and(|w| w.contains("strategy")));
    let calm = cell(&r, "leader-monotonic pause=2500ms leader_drift=0 margin=0.1");
    let fast = cell(&r, "leader-monotonic pause=2500ms leader_drift=0.4 margin=0.1");
    assert!(calm.forecast.as_ref().unwrap().p_overlap_run < 1e-9);
    assert!(fast.forecast.as_ref().unwrap().p_overlap_run > 0.9);
    let table = leasesim::study::calibration::calibration_csv(&r).expect("forecast cells");
    assert_eq!(table.lines().count(), 1 + 4, "a header and the four forecast cells:\n{table}");
    let s = leasesim::study::calibration::summary(&r).expect("a summary");
    assert_eq!((s.cells, s.observed_runs), (4, 6), "the two fast cells overlapped in all 3 runs each");
    assert!(s.inside == 4 && s.brier < 0.01, "{s:?}");
    // Pairs differing only in the strategy: lm–wc, lm–lsw, wc–lsw per drift.
    let pairs = leasesim::study::calibration::comparisons_csv(&r).expect("pairs");
    assert_eq!(pairs.lines().count(), 1 + 6, "{pairs}");
    assert!(leasesim::study::calibration::calibration_svg(&r).is_some_and(|svg| svg.contains("y = x")));
}

#[test]
fn a_wall_clock_jump_breaks_only_the_strategy_that_compares_wall_clocks() {
    let r = study(
        "lease_expiry = [\"leader-monotonic\", \"leader-stamped-wall\", \"writer-clock\"]\nleader_jump = [\"+10s\"]\nmargin = [0.1]\n",
        0..2,
    );
    let stamped = cell(&r, "leader-stamped-wall jump=10000ms margin=0.1");
    // The leader judges every stamp expired at once: leases of holders that
    // were alive and renewing end early (their next keep-alive is refused).
    assert!(stamped.metrics.invariants.get("lease-early-expiry").is_some_and(|n| *n > 0), "{:?}", stamped.metrics);
    assert!(stamped.metrics.false_expiries > 0, "{:?}", stamped.metrics);
    assert_eq!(stamped.prediction.as_ref().unwrap().verdict, "unsafe");
    for strategy in ["leader-monotonic", "writer-clock"] {
        let c = cell(&r, &format!("{strategy} jump=10000ms margin=0.1"));
        assert_eq!(overlaps(c), 0, "{strategy} never compares wall clocks");
        assert_eq!(c.metrics.invariants.get("lease-early-expiry"), None);
        assert_eq!(c.metrics.false_expiries, 0);
        assert_eq!(c.agreement, "agree");
    }
}

#[test]
fn outputs_are_written_and_the_csv_has_a_row_per_cell() {
    let r = study("lease_expiry = [\"writer-clock\"]\nleader_drift = [0.0, 0.4]\nmargin = [0.0, 0.2]\npause = [\"2500ms\"]\n", 0..1);
    let dir = std::env::temp_dir().join(format!("leasesim-study-test-{}", std::process::id()));
    let files = output::write_all(&dir, &r).expect("writes");
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.contains(&"results.json".to_string()) && names.contains(&"results.csv".to_string()));
    assert!(names.iter().any(|n| n.starts_with("heatmap-writer-clock") && n.ends_with(".svg")), "{names:?}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4);
    // Every row has as many fields as the header, in every CSV written.
    for name in ["results.csv", "runs.csv.gz", "handovers.csv.gz"] {
        let text = read_text(&dir.join(name));
        let width = text.lines().next().unwrap().split(',').count();
        for line in text.lines().skip(1) {
            assert_eq!(line.split(',').count(), width, "{name}: {line}");
        }
    }
    let runs = read_text(&dir.join("runs.csv.gz"));
    assert_eq!(runs.lines().count(), 1 + 4, "one row per run (4 cells × 1 seed)");
    assert!(runs.lines().next().unwrap().contains("replica_divergence"), "every invariant has a column");
    let handovers = read_text(&dir.join("handovers.csv.gz"));
    assert!(handovers.lines().skip(1).any(|l| l.contains(",expiry,")), "paused holders' leases expire");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), 4);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn spec_errors_name_the_line_and_the_fix() {
    let text = "name = \"t\"\nbase = \"b.toml\"\n[axes]\nmargin = [0.1, 1.5]\nleader_drfit = [0.1]\n";
    let e = spec::parse(text, "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:4:1: axis `margin` holds a value that is not a number in [0, 1)"), "{e}");
    assert!(e.contains("s.toml:5:1: unknown axis `leader_drfit`"), "{e}");
    assert!(e.contains("fix:"), "{e}");
    let e = spec::parse("name = \"t\"\n[axes]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("missing `base`"), "{e}");
    let e = spec::parse("name = \n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:1:") && e.contains("not valid TOML"), "{e}");
}

#[test]
fn a_typo_in_a_study_file_is_reported_at_its_line_with_the_key_meant() {
    let text = "name = \"t\"\nbase = \"b.toml\"\n\npause_evrey = \"6s\"\n[axes]\nmarign = [0.1]\n";
    let e = spec::parse(text, "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:4:1: unknown key `pause_evrey` at the top level; did you mean `pause_every`?"), "{e}");
    assert!(e.contains("s.toml:6:1: unknown axis `marign`; did you mean `margin`?"), "{e}");
}

#[test]
fn errors_point_at_the_key_itself_not_at_its_name_inside_a_string() {
    // A scan of the text for `pause_every =` would stop at line 4, inside
    // the description; the parser's spans know the key is on line 6.
    let text = "name = \"t\"\nbase = \"b.toml\"\ndescription = \"\"\"\npause_every = \"0s\" is refused\n\"\"\"\npause_every = \"0s\"\n[axes]\nmargin = [0.1]\n";
    let e = spec::parse(text, "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:6:1: `pause_every` must be above zero"), "{e}");
    // A bad duration is reported at the value, with how to write it.
    let e = spec::parse("name = \"t\"\nbase = \"b\"\njump_at = \"5 s\"\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:3:11: `5 s`: a duration is a number with a unit") && e.contains("write `\"5s\"`"), "{e}");
}

#[test]
fn the_grid_is_the_cross_product_and_cells_change_only_their_axes() {
    let text = "name = \"t\"\nbase = \"b\"\n[axes]\nlease_expiry = [\"writer-clock\", \"leader-monotonic\"]\nttl = [\"1s\", \"3s\"]\nfenced = [false]\n";
    let s = spec::parse(text, "s.toml").unwrap();
    let cells = grid::cells(&s);
    assert_eq!(cells.len(), 4);
    let base = leasesim_scenario::load(&base_path()).unwrap();
    let applied = grid::apply(&base, &s, &cells[1]);
    assert_eq!(applied.cluster.lease_expiry, leasesim_core::ExpiryStrategy::WriterClock);
    let leasesim_scenario::WorkloadKind::Lock(lock) = &applied.workloads[0].kind else { panic!("a lock workload") };
    assert_eq!((lock.ttl_ns, lock.keepalive_ns, lock.fenced), (3_000_000_000, 1_000_000_000, false));
    assert_eq!(applied.faults, base.faults, "no pause or jump axis: no faults added");
}

#[test]
fn a_cell_is_unsafe_when_any_safety_invariant_fires_not_only_overlap() {
    // A 10 s backward step of the leader's wall clock under
    // leader-stamped-wall, fenced: no two believers and no stale write
    // taken, yet the cluster misbehaves (early expiries, keep-alives
    // answered for revoked leases). The verdict must say unsafe and name
    // what fired.
    let r = study(
        "lease_expiry = [\"leader-stamped-wall\", \"leader-monotonic\"]\nleader_jump = [\"-10s\"]\npause = [\"2500ms\"]\nmargin = [0.1]\n",
        0..2,
    );
    let stamped = cell(&r, "leader-stamped-wall pause=2500ms jump=-10000ms margin=0.1");
    assert_eq!(overlaps(stamped), 0, "{:?}", stamped.metrics.invariants);
    assert_eq!(stamped.metrics.invariants.get("fencing-order"), None);
    assert_eq!(stamped.measured, "unsafe", "{:?}", stamped.metrics.invariants);
    assert!(!stamped.unsafe_invariants.is_empty());
    assert!(stamped.unsafe_invariants.iter().all(|id| id != "lock-belief-overlap" && id != "fencing-order"));
    let calm = cell(&r, "leader-monotonic pause=2500ms jump=-10000ms margin=0.1");
    assert_eq!((calm.measured, calm.unsafe_invariants.len()), ("safe", 0), "{:?}", calm.metrics.invariants);
    assert_eq!(r.build, leasesim::study::BUILD_COMMIT);
    assert_eq!(calm.setup.keepalive_ns, calm.setup.ttl_ns / 3);
    assert!(calm.setup.heartbeat_ns > 0 && calm.setup.latency_ns.1 >= calm.setup.latency_ns.0);
    assert!(!leasesim_scenario::is_safety("liveness") && leasesim_scenario::is_safety("fifo-order"));
}

#[test]
fn wilson_intervals_match_known_values() {
    use leasesim::study::metrics::{wilson, Rate};
    // Newcombe (1998), Table I: 81 of 263 → 0.2553–0.3662; 5 of 10 →
    // 0.2366–0.7634; 0 of n → [0, z²/(n + z²)].
    let close = |a: f64, b: f64| (a - b).abs() < 5e-4;
    let (lo, hi) = wilson(81, 263);
    assert!(close(lo, 0.2553) && close(hi, 0.3662), "{lo} {hi}");
    let (lo, hi) = wilson(5, 10);
    assert!(close(lo, 0.2366) && close(hi, 0.7634), "{lo} {hi}");
    let (lo, hi) = wilson(0, 10);
    assert!(lo == 0.0 && close(hi, 0.2775), "{hi}");
    let (lo, hi) = wilson(10, 10);
    assert!(close(lo, 0.7225) && close(hi, 1.0), "{lo} {hi}");
    assert_eq!(wilson(0, 0), (0.0, 1.0));
    assert!(Rate::of(0, 40).width() < Rate::of(0, 10).width());
    // The ends are exact, so a forecast of exactly 0 or 1 lies inside.
    for n in 1..200 {
        assert_eq!(wilson(0, n).0, 0.0, "0/{n}");
        assert_eq!(wilson(n, n).1, 1.0, "{n}/{n}");
    }
}

#[test]
fn adaptive_seeds_double_until_the_interval_is_narrow_enough() {
    // Width of 0 of n (and of n of n) is z²/(n + z²): 0.66 at 2 runs, 0.49
    // at 4. With a 0.5 target, a cell that is always safe or always unsafe
    // stops at 4 runs; none runs past max_seeds.
    let text = "name = \"t\"\nbase = \"base-lock.toml\"\ntarget_ci_width = 0.5\nmin_seeds = 2\nmax_seeds = 16\n\
fault_phase = \"random\"\n[axes]\nlease_expiry = [\"leader-monotonic\"]\npause = [\"2500ms\"]\nleader_drift = [0.0, 0.4]\nmargin = [0.1]\n";
    let mut s = spec::parse(text, "t.toml").expect("a valid spec");
    s.base = base_path();
    let base = leasesim_scenario::load(&s.base).unwrap();
    let r = run_study(&s, &base, leasesim::study::SeedPlan::of(&s), 2);
    for c in &r.cells {
        let u = &c.rates.unsafe_runs;
        assert!(u.k == 0 || u.k == u.n, "{}: {u:?}", c.label);
        assert_eq!(c.metrics.runs, 4, "{}", c.label);
        assert!(u.width() <= 0.5);
    }
    assert_eq!(r.runs.len(), 8, "every run is kept for runs.csv");
    // Random phases: drawn from the seed, inside the window, not all equal.
    let pauses: Vec<u64> = r.runs.iter().map(|run| run.phase.pause_at_ns).collect();
    assert!(pauses.iter().all(|p| (3_000_000_000..9_000_000_000).contains(p)), "{pauses:?}");
    assert!(pauses.iter().any(|p| *p != pauses[0]), "{pauses:?}");
    assert_eq!(grid::phase(&s, 7), grid::phase(&s, 7));
    let fixed = spec::parse("name = \"t\"\nbase = \"b\"\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap();
    assert_eq!(grid::phase(&fixed, 7).pause_at_ns, 3_000_000_000);
}

#[test]
fn new_spec_keys_are_checked_with_line_and_fix() {
    let e = spec::parse("name = \"t\"\nbase = \"b\"\ntarget_ci_width = 2\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:3:1: `target_ci_width` must be a number in (0, 1]") && e.contains("fix:"), "{e}");
    let e = spec::parse("name = \"t\"\nbase = \"b\"\nmin_seeds = 4\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:3:1: `min_seeds` needs target_ci_width"), "{e}");
    let e = spec::parse("name = \"t\"\nbase = \"b\"\nfault_phase = \"often\"\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:3:1: `fault_phase` must be \"fixed\" or \"random\""), "{e}");
    let e =
        spec::parse("name = \"t\"\nbase = \"b\"\ntarget_ci_width = 0.2\nmin_seeds = 9\nmax_seeds = 3\n[axes]\nmargin = [0.1]\n", "s.toml")
            .unwrap_err()
            .to_string();
    assert!(e.contains("s.toml:5:1: `max_seeds` (3) is below `min_seeds` (9)"), "{e}");
    let e = spec::parse("name = \"t\"\nbase = \"b\"\nseed_stride = 3\n[axes]\nmargin = [0.1]\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:3:1: unknown key `seed_stride`"), "{e}");
}

#[test]
fn the_refined_theory_predicts_the_edge_from_each_clock_and_the_fixed_delay() {
    use leasesim::study::theory::{check_run, fixed_hops};
    let text = "name = \"t\"\nbase = \"b\"\n[axes]\nlease_expiry = [\"leader-monotonic\", \"leader-stamped-wall\"]\nleader_drift = [0.2]\nclient_drift = [0.0, -0.1]\nmargin = [0.1]\n";
    let s = spec::parse(text, "s.toml").unwrap();
    let base = leasesim_scenario::load(&base_path()).unwrap();
    let cells = grid::cells(&s);
    let m = leasesim::study::metrics::RunMetrics::default();
    // Base: TTL 2 s, latency 1–10 ms, so a hop costs at least 3 ms.
    let edge = |i: usize| check_run(&grid::apply(&base, &s, &cells[i]), &m).unwrap();
    let mono = edge(0);
    assert_eq!(mono.fixed_delay_ns, 3 * 3_000_000);
    assert_eq!(fixed_hops(leasesim_core::ExpiryStrategy::LeaderMonotonic), 3);
    // ρ/(1+ρ) − δ/T = 0.2/1.2 − 0.009/2
    assert!((mono.edge_margin - (0.2 / 1.2 - 0.0045)).abs() < 1e-9, "{}", mono.edge_margin);
    // A 10 % slow client stretches its belief: the edge moves up.
    let slow_client = edge(1);
    assert!((slow_client.edge_margin - (1.0 - 0.9 * (1.0 / 1.2 + 0.0045))).abs() < 1e-9, "{}", slow_client.edge_margin);
    // Stamped at proposal: one hop of delay, so a higher edge than monotonic.
    let stamped = edge(2);
    assert_eq!(stamped.fixed_delay_ns, 3_000_000);
    assert!(stamped.edge_margin > mono.edge_margin);
    // No hand-over by expiry, no predicted overlap, whatever the gap.
    assert!(!mono.predicted_overlap && mono.expiry_handovers == 0);
}

#[test]
fn the_keepalive_axis_sets_the_interval_and_must_stay_below_the_ttl() {
    let text = "name = \"t\"\nbase = \"b\"\n[axes]\nttl = [\"2s\"]\nkeepalive = [\"100ms\", \"2s\"]\n";
    let s = spec::parse(text, "s.toml").unwrap();
    let base = leasesim_scenario::load(&base_path()).unwrap();
    let cells = grid::cells(&s);
    assert_eq!(cells.len(), 2);
    let applied = grid::apply(&base, &s, &cells[0]);
    let leasesim_scenario::WorkloadKind::Lock(lock) = &applied.workloads[0].kind else { panic!("a lock workload") };
    assert_eq!((lock.ttl_ns, lock.keepalive_ns), (2_000_000_000, 100_000_000));
    assert_eq!(grid::label(&cells[0]), "ttl=2000ms keepalive=100ms");
    let e = spec::check_cells(&s, &base, text, "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:5:1: cell `ttl=2000ms keepalive=2000ms` renews every 2000 ms, not below its TTL of 2000 ms"), "{e}");
    assert!(e.contains("fix:"), "{e}");
    let ok = spec::parse("name = \"t\"\nbase = \"b\"\n[axes]\nkeepalive = [\"300ms\"]\n", "s.toml").unwrap();
    assert!(spec::check_cells(&ok, &base, "", "s.toml").is_ok());
}

#[test]
fn a_ttl_axis_below_the_clusters_minimum_is_refused_before_any_run() {
    // The base cluster's election timeout is the default 150–300 ms, so the
    // shortest TTL a leader grants is 450 ms.
    let text = "name = \"t\"\nbase = \"b\"\n[axes]\nttl = [\"300ms\", \"2s\"]\n";
    let s = spec::parse(text, "s.toml").unwrap();
    let base = leasesim_scenario::load(&base_path()).unwrap();
    let e = spec::check_cells(&s, &base, text, "s.toml").unwrap_err().to_string();
    assert!(e.contains("s.toml:4:1: cell `ttl=300ms` has a TTL of 300 ms, below the cluster's minimum of 450 ms"), "{e}");
    assert!(e.contains("fix:"), "{e}");
    let ok = spec::parse("name = \"t\"\nbase = \"b\"\n[axes]\nttl = [\"450ms\"]\n", "s.toml").unwrap();
    assert!(spec::check_cells(&ok, &base, "", "s.toml").is_ok());
}
