//! `seeds_per_cell = "distinct"` gives every cell its own runs (cell i runs
//! first + i × stride + k), and `leasesim study --scenario-of CELL:SEED`
//! prints the scenario one study run used, which `leasesim run` replays to
//! the same trace digest and verdict.

#![cfg(madsim)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use leasesim::study::{run_study, spec, SeedPlan};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn parse(text: &str) -> spec::StudySpec {
    let mut s = spec::parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    s.base = root().join("reports/studies/base-lock.toml");
    s
}

fn seeds_of(r: &leasesim::study::StudyResults, cell: usize) -> BTreeSet<u64> {
    r.runs.iter().filter(|x| x.cell == cell).map(|x| x.seed).collect()
}

#[test]
fn distinct_seeds_give_each_cell_its_own_runs() {
    let s = parse("name = \"t\"\nbase = \"b.toml\"\nseeds = \"5..7\"\nseeds_per_cell = \"distinct\"\n[axes]\nmargin = [0.0, 0.1, 0.2]\n");
    let base = leasesim_scenario::load(&s.base).unwrap();
    let r = run_study(&s, &base, SeedPlan::of(&s), 2);
    assert_eq!(r.seeds_per_cell, "distinct");
    assert_eq!(seeds_of(&r, 0), BTreeSet::from([5, 6]));
    assert_eq!(seeds_of(&r, 1), BTreeSet::from([7, 8]));
    assert_eq!(seeds_of(&r, 2), BTreeSet::from([9, 10]));
    assert_eq!(r.seeds, [5, 11], "the seeds span every cell's range");

    let shared = parse("name = \"t\"\nbase = \"b.toml\"\nseeds = \"5..7\"\n[axes]\nmargin = [0.0, 0.1]\n");
    let r = run_study(&shared, &base, SeedPlan::of(&shared), 2);
    assert_eq!(r.seeds_per_cell, "shared");
    assert_eq!(seeds_of(&r, 0), seeds_of(&r, 1));
}

#[test]
fn adaptive_distinct_seeds_stride_by_the_most_a_cell_can_run() {
    let s = parse(
        "name = \"t\"\nbase = \"b.toml\"\ntarget_ci_width = 0.5\nmin_seeds = 2\nmax_seeds = 8\nseeds_per_cell = \"distinct\"\n[axes]\nmargin = [0.0, 0.1]\n",
    );
    let plan = SeedPlan::of(&s);
    assert_eq!(leasesim::study::cell_seed(&s, &plan, 0, 0), 0);
    assert_eq!(leasesim::study::cell_seed(&s, &plan, 1, 0), 8);
    assert_eq!(leasesim::study::cell_seed(&s, &plan, 3, 5), 29);
}

#[test]
fn a_bad_seeds_per_cell_names_the_line_and_the_fix() {
    let text = "name = \"t\"\nbase = \"b.toml\"\nseeds_per_cell = \"unique\"\n[axes]\nmargin = [0.0]\n";
    let e = spec::parse(text, "t.toml").expect_err("refused").to_string();
    assert!(e.contains("t.toml:3:1"), "{e}");
    assert!(e.contains("\"distinct\""), "{e}");
}

fn leasesim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(root()).output().expect("run leasesim")
}

/// The scenario `--scenario-of` prints replays the study's run bit for
/// bit: a random fault phase, a pause drawn per seed and distinct seeds,
/// all taken from the seed.
#[test]
fn scenario_of_prints_a_scenario_that_replays_the_study_run() {
    let dir = std::env::temp_dir().join(format!("leasesim-scenario-of-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec_path = dir.join("spec.toml");
    let base = root().join("reports/studies/base-lock.toml");
    std::fs::write(
        &spec_path,
        format!(
            "name = \"t\"\nbase = \"{}\"\nseeds = \"30..32\"\nseeds_per_cell = \"distinct\"\nfault_phase = \"random\"\n\
             pause_distribution = \"pareto\"\npause_shape = 1.2\npause_every = \"2s\"\n\
             [axes]\nlease_expiry = [\"leader-monotonic\", \"leader-stamped-wall\"]\npause = [\"300ms\"]\nleader_drift = [0.2]\nmargin = [0.0]\n",
            base.display()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let run = leasesim(&["study", spec_path.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "1"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut runs = String::new();
    let bytes = std::fs::read(out.join("runs.csv.gz")).unwrap();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut runs).unwrap();
    let header: Vec<&str> = runs.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let rows: Vec<Vec<String>> = runs.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect();
    assert_eq!(rows.len(), 4);
    let mut unsafe_seen = BTreeSet::new();
    for row in &rows {
        let (cell, seed, digest) = (&row[col("cell")], &row[col("seed")], &row[col("digest")]);
        let printed = leasesim(&["study", spec_path.to_str().unwrap(), "--scenario-of", &format!("{cell}:{seed}")]);
        assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
        let file = dir.join(format!("cell{cell}-seed{seed}.toml"));
        std::fs::write(&file, &printed.stdout).unwrap();
        let replay = leasesim(&["run", file.to_str().unwrap(), "--seed", seed, "--json"]);
        let json: serde_json::Value = serde_json::from_slice(&replay.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", String::from_utf8_lossy(&replay.stdout), String::from_utf8_lossy(&replay.stderr)));
        assert_eq!(json["trace_digest"].as_str(), Some(digest.as_str()), "cell {cell} seed {seed}");
        let unsafe_run = row[col("unsafe")] == "1";
        assert_eq!(json["verdict"] == "violation", unsafe_run || row[col("liveness")] != "0", "cell {cell} seed {seed}");
        unsafe_seen.insert(unsafe_run);
    }
    // A bad CELL:SEED is an error that says what is expected.
    let bad = leasesim(&["study", spec_path.to_str().unwrap(), "--scenario-of", "9:1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("CELL:SEED"));
    std::fs::remove_dir_all(&dir).ok();
}
