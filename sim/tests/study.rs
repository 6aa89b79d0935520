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
    let base = leasesim::scenario::load(&s.base).expect("the base scenario loads");
    run_study(&s, &base, seeds, 2)
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
        assert!(fast.metrics.min_margin_ns.is_some_and(|m| m < 0), "the next grant came before the belief ended");
        assert!(fast.metrics.stale_rejected > 0, "fencing stopped the paused holders' late writes");
        assert_eq!(fast.metrics.stale_accepted, 0);
    }
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
fn the_grid_is_the_cross_product_and_cells_change_only_their_axes() {
    let text = "name = \"t\"\nbase = \"b\"\n[axes]\nlease_expiry = [\"writer-clock\", \"leader-monotonic\"]\nttl = [\"1s\", \"3s\"]\nfenced = [false]\n";
    let s = spec::parse(text, "s.toml").unwrap();
    let cells = grid::cells(&s);
    assert_eq!(cells.len(), 4);
    let base = leasesim::scenario::load(&base_path()).unwrap();
    let applied = grid::apply(&base, &s, &cells[1]);
    assert_eq!(applied.cluster.lease_expiry, leasesim_core::ExpiryStrategy::WriterClock);
    let leasesim::scenario::WorkloadKind::Lock(lock) = &applied.workloads[0].kind else { panic!("a lock workload") };
    assert_eq!((lock.ttl_ns, lock.keepalive_ns, lock.fenced), (3_000_000_000, 1_000_000_000, false));
    assert_eq!(applied.faults, base.faults, "no pause or jump axis: no faults added");
}
