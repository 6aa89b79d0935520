//! Golden test of the timeline's structure: the small hand-built run's SVG,
//! reduced to its element outline (tags, ids, classes, data attributes,
//! text; no geometry), must match `golden/small-run.outline`. A change to
//! the drawing that alters structure shows up as a readable diff.
//!
//! To accept an intended change: `LEASESIM_BLESS=1 cargo test -p
//! leasesim-reports --test it timeline_golden::`, then review the file's diff.

use crate::common;

use leasesim_reports::timeline_svg;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/small-run.outline");

#[test]
fn the_small_runs_timeline_matches_its_golden_outline() {
    let svg = timeline_svg(&common::small_run());
    let outline = common::outline(&svg);
    if std::env::var_os("LEASESIM_BLESS").is_some() {
        std::fs::write(GOLDEN, &outline).expect("write the golden file");
    }
    let golden = std::fs::read_to_string(GOLDEN).expect("the golden file exists (LEASESIM_BLESS=1 writes it)");
    if outline != golden {
        let first =
            outline.lines().zip(golden.lines()).position(|(a, b)| a != b).unwrap_or(outline.lines().count().min(golden.lines().count()));
        panic!(
            "the timeline's structure changed at line {}:\n  now:    {:?}\n  golden: {:?}\n(LEASESIM_BLESS=1 rewrites {GOLDEN})",
            first + 1,
            outline.lines().nth(first),
            golden.lines().nth(first)
        );
    }
}

/// The parts a reader relies on, named outright so a golden re-bless
/// cannot quietly drop one.
#[test]
fn every_part_of_the_run_is_drawn() {
    let outline = common::outline(&timeline_svg(&common::small_run()));
    let has = |needle: &str| outline.lines().any(|l| l.contains(needle));
    for lane in ["#lane-s1", "#lane-s2", "#lane-s3", "#lane-c1", "#lane-c2", "#lane-store"] {
        assert!(has(lane), "{lane} lane");
    }
    assert!(has(".role.leader data-end-ns=4000000000 data-start-ns=200000000 data-term=1"), "s1 leads term 1");
    assert!(has(".role.down"), "s1's crash");
    assert!(has(".paused data-end-ns=8000000000 data-start-ns=5000000000"), "c1's pause");
    assert!(has("#fault-0 .fault.link.partition"), "the partition band");
    assert!(has(".cut data-end-ns=3500000000 data-fault=fault-0 data-proc=s3"), "s3 shaded as cut off");
    assert!(has(".fault.note.skipped"), "the skipped fault");
    assert!(has("path .mark.jump data-at-ns=3000000000"), "s3's clock jump");
    assert!(has("path .mark.drift data-at-ns=5000000000"), "s3's drift change");
    assert!(has("path .clock.wall") && has("path .clock.mono"), "clock error lines");
    assert!(has("#lock-orders .lock data-key=orders"), "the lock track");
    assert!(has(".hold data-client=1") && has(".hold data-client=2"), "both holders");
    assert!(has(".overlap data-end-ns=8200000000 data-start-ns=6700000000"), "the overlapping beliefs");
    assert!(has(".write.accepted.backwards data-at-ns=8300000000"), "the backwards write");
    assert!(has(".write.rejected data-at-ns=9500000000"), "the rejected write");
    assert!(has("#v1 .violation.bug data-at-ns=6700000000 data-invariant=lock-belief-overlap"), "violation 1 (bug)");
    assert!(has("#v2 .violation.broken data-at-ns=8300000000 data-invariant=fencing-order"), "violation 2 (assumption broken)");
    assert!(has("path .violation-marker data-on=orders"), "violations marked on the lock track");
    assert!(has("line .settle-line data-at-ns=10000000000"), "the settle line");
    assert!(has("line #cursor .cursor"), "the hover cursor");
}

#[test]
fn an_empty_run_still_draws_an_axis() {
    let view = leasesim_reports::RunView { scenario: "empty".into(), verdict: "ok".into(), ..Default::default() };
    let outline = common::outline(&timeline_svg(&view));
    assert!(outline.contains("#axis"), "{outline}");
    assert!(!outline.contains("#violations"), "no violations, no row");
}
