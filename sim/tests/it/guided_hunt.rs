//! The guided hunt (`leasesim hunt --guided`): an unmutated genome is its
//! seed's run, the corpus grows only on new coverage, every corpus entry
//! and the failure replay from their files with the digest the search saw,
//! and a planted bug is found within a run budget. Budgets count runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use leasesim::hunt::guided::{self, corpus::Corpus, coverage, genome::Genome, GuidedOptions};
use leasesim::run::{run_seed, RunOptions};
use leasesim_core::bugs::Bugs;
use leasesim_scenario::{self as scenario, Scenario};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn failover() -> Vec<Scenario> {
    vec![scenario::load(&root().join("scenarios/chaos-failover.toml")).unwrap_or_else(|e| panic!("{e}"))]
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasesim-guided-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs the `# Replay:` line of `file` and returns (exit code, the digest
/// it printed, the digest the file's `# Digest:` line records).
fn replay_file(file: &Path) -> (i32, String, String) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let line = |prefix: &str| {
        text.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("{}: no `{prefix}` line", file.display()))
    };
    let command: Vec<&str> = line("# Replay: ").split_whitespace().collect();
    assert_eq!(command[..2], ["leasesim", "replay"], "{}", file.display());
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(&command[1..])
        .env("RUST_LOG", "off")
        .current_dir(root())
        .output()
        .expect("run leasesim");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let printed = stdout.split("digest ").nth(1).and_then(|s| s.split(';').next()).unwrap_or_else(|| panic!("no digest in {stdout}"));
    (out.status.code().unwrap_or(-1), printed.to_string(), line("# Digest: ").to_string())
}

#[test]
fn an_unmutated_genome_runs_exactly_its_seed() {
    let scenarios = failover();
    let genome = Genome::from_seed(&scenarios, 0, 2).expect("chaos-failover has [chaos]");
    let explicit = genome.scenario(&scenarios, "any-name");
    assert_eq!(explicit.chaos, None, "a genome's scenario has its chaos written out");
    let direct = run_seed(&scenarios[0], 2, &RunOptions::default());
    let through = run_seed(&explicit, 2, &RunOptions::default());
    assert_eq!(direct.trace_digest, through.trace_digest);
}

#[test]
fn the_corpus_grows_only_on_new_coverage_and_each_entry_replays_from_its_file() {
    let scenarios = failover();
    let dir = temp_dir("corpus");
    let options = GuidedOptions { seeds: 0..1, max_runs: 8, budget: None, explore: 0.0, corpus_dir: Some(dir.clone()) };
    let result = guided::first_failure(&scenarios, Bugs::default(), &options);
    assert!(result.search.found.is_none(), "no bug on, chaos-failover expects safe");
    assert_eq!(result.search.runs, 8);
    let corpus = &result.corpus;
    // Each feature is credited to the one entry that reached it first.
    assert_eq!(corpus.entries.iter().map(|e| e.new_features).sum::<usize>(), corpus.seen.len());
    assert!(corpus.entries.iter().all(|e| e.new_features > 0));
    assert!(corpus.entries.len() < 8, "every run counted as new: {} entries", corpus.entries.len());
    let files = std::fs::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(files, corpus.entries.len(), "one file per entry, none for runs that reached nothing new");
    let mutated = corpus.entries.iter().find(|e| e.genome.lineage.len() > 1).expect("a mutated genome reached something new");
    let (code, printed, recorded) = replay_file(mutated.file.as_ref().expect("written"));
    assert_eq!(code, 0);
    assert_eq!(printed, mutated.digest);
    assert_eq!(recorded, mutated.digest);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_reaches_nothing_new_is_not_kept() {
    let scenarios = failover();
    let genome = Genome::from_seed(&scenarios, 0, 0).expect("chaos");
    let options = RunOptions { keep_observations: true, ..RunOptions::default() };
    let features = coverage::features(&run_seed(&scenarios[0], 0, &options).obs);
    assert!(features.iter().any(|f| f.family == "raft"), "a chaos run elects leaders: {features:?}");
    let mut corpus = Corpus::default();
    assert!(corpus.offer(&genome, "d", features.clone(), None));
    assert!(!corpus.would_grow(&features));
    assert!(!corpus.offer(&genome, "d", features.clone(), None));
    let mut one_more = features;
    one_more.insert(coverage::Feature { family: "raft", from: "start", to: "unseen", bucket: 9 });
    assert!(corpus.would_grow(&one_more));
    assert!(corpus.offer(&genome, "d", one_more, None));
    assert_eq!(corpus.entries.iter().map(|e| e.new_features).collect::<Vec<_>>(), [corpus.seen.len() - 1, 1]);
}

#[test]
fn the_guided_hunt_finds_a_planted_bug_within_its_run_budget_and_the_failure_replays() {
    let scenarios = failover();
    let dir = temp_dir("found");
    let mut bugs = Bugs::default();
    bugs.enable("follower-expires-leases").expect("a planted bug");
    let options = GuidedOptions { seeds: 0..10, max_runs: 10, budget: None, explore: 0.2, corpus_dir: Some(dir.clone()) };
    let result = guided::first_failure(&scenarios, bugs, &options);
    let (_, outcome) = result.search.found.expect("found within 10 runs");
    assert!(result.search.runs <= 10);
    assert!(outcome.fired().contains(&"lease-early-expiry"), "{:?}", outcome.fired());
    let file = result.found_file.expect("the failure is written");
    let (code, printed, recorded) = replay_file(&file);
    assert_eq!(code, 1, "the replay fails as the search's run did");
    assert_eq!(printed, outcome.trace_digest);
    assert_eq!(recorded, outcome.trace_digest);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_guided_flags_are_refused_by_name() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(root()).output().expect("run leasesim");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&["hunt", "--guided", "--explore", "1.5"]);
    assert_eq!(code, 2);
    assert!(err.contains("`1.5` is not a probability"), "{err}");
    let (code, err) = run(&["hunt", "--corpus-dir", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--guided"), "{err}");
}

#[test]
fn a_fault_soon_after_a_change_of_leader_is_told_apart_from_a_late_one() {
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;
    use leasesim_judge::observe::{Event, Obs};
    use leasesim_judge::vocab::Proc;
    let ms = 1_000_000;
    let elected = Obs {
        at_ns: 1000 * ms,
        proc: Proc::Server(1),
        event: Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term: 2 }) },
    };
    let crash_at = |at_ms: u64| Obs { at_ns: at_ms * ms, proc: Proc::Server(2), event: Event::Crashed };
    let near = |obs: Vec<Obs>| -> Vec<(&str, &str, u8)> {
        coverage::features(&obs).into_iter().filter(|f| f.family == "near").map(|f| (f.from, f.to, f.bucket)).collect()
    };
    assert_eq!(near(vec![elected.clone(), crash_at(1050)]), [("crashed", "server", 0)]);
    assert_eq!(near(vec![elected.clone(), crash_at(1150)]), [("crashed", "server", 1)]);
    assert_eq!(near(vec![elected.clone(), crash_at(1500)]), [("crashed", "server", 2)]);
    assert_eq!(near(vec![elected.clone(), crash_at(3000)]), [("crashed", "server", 3)]);
    assert_eq!(near(vec![crash_at(500)]), [("crashed", "server", 4)], "before any leader");
    let crash_leader = Obs { at_ns: 1050 * ms, proc: Proc::Server(1), event: Event::Crashed };
    assert_eq!(near(vec![elected, crash_leader]), [("crashed", "leader", 0)]);
}

/// A corpus of chaos-failover genomes, the `i`th relabelled as drawn from
/// scenario `bases[i]`, each with a feature of its own.
fn corpus_of(bases: &[usize]) -> Corpus {
    let scenarios = failover();
    let mut corpus = Corpus::default();
    for (i, &base) in bases.iter().enumerate() {
        let mut genome = Genome::from_seed(&scenarios, 0, i as u64).expect("chaos");
        genome.base = base;
        let feature = coverage::Feature { family: "test", from: "entry", to: "", bucket: i as u8 };
        assert!(corpus.offer(&genome, "d", [feature].into(), None));
    }
    corpus
}

#[test]
fn mutations_are_spread_over_the_scenarios_whatever_each_one_holds() {
    use rand::SeedableRng;
    // Scenario 0 has three entries, scenario 2 one, scenario 1 none.
    let mut corpus = corpus_of(&[0, 0, 0, 2]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut mutated = vec![0; 3];
    let mut order = Vec::new();
    for _ in 0..6 {
        let base = corpus.next_base(&mutated).expect("a scenario with entries");
        mutated[base] += 1;
        let parent = corpus.pick(base, &mut rng).expect("an entry of that scenario");
        assert_eq!(corpus.entries[parent].genome.base, base, "the parent comes from the chosen scenario");
        order.push(base);
    }
    assert_eq!(order, [0, 2, 0, 2, 0, 2], "the scenario with one entry gets as many mutations as the one with three");
    assert_eq!(corpus.pick(1, &mut rng), None, "no entry of scenario 1");
}

#[test]
fn a_graft_brings_in_faults_the_parent_lacks_and_leaves_membership_changes_alone() {
    use leasesim::hunt::guided::{genome::movable, mutate};
    use rand::SeedableRng;
    let scenarios = failover();
    let parent = Genome::from_seed(&scenarios, 0, 3).expect("chaos");
    let fixed = |g: &Genome| g.decided.faults.iter().filter(|f| !movable(f)).cloned().collect::<Vec<_>>();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut grafted_new = 0;
    for _ in 0..200 {
        let child = mutate::mutate(&parent, None, &scenarios, &mut rng);
        assert_eq!(fixed(&child), fixed(&parent), "membership changes stay as drawn: {:?}", child.lineage);
        assert!(child.decided.faults.iter().all(|f| f.at_ns <= scenarios[0].duration_ns));
        let last = child.lineage.last().expect("lineage");
        // One mutation, a graft: any fault the parent lacks came from it.
        if last.starts_with("graft") && !last.contains(", ") && child.decided.faults.iter().any(|f| !parent.decided.faults.contains(f)) {
            grafted_new += 1;
        }
    }
    assert!(grafted_new > 0, "no graft brought in a fault the parent did not hold");
}
