//! What CI fuzzing and bug reports rely on, tried as a user would: a sweep
//! streams JSON lines in a stable order whatever `--jobs` is; a sweep cut
//! short resumes without re-running what it finished; `--json` output is
//! JSON and nothing else; the replay command a failing run prints
//! reproduces it, planted bugs included; and the README's commands that
//! claim to fail do fail.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(root()).output().expect("run leasesim")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// (scenario, seed, digest) of every JSON line, in the order printed.
fn runs_in_order(json_lines: &str) -> Vec<(String, u64, String)> {
    json_lines
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            (v["scenario"].as_str().unwrap().to_string(), v["seed"].as_u64().unwrap(), v["trace_digest"].as_str().unwrap().to_string())
        })
        .collect()
}

const TWO: [&str; 2] = ["scenarios/registry-client-crash.toml", "scenarios/holder-pause-unfenced.toml"];

#[test]
fn json_lines_come_in_work_order_whatever_the_jobs() {
    let sweep = |jobs: &str| leasesim(&["sweep", TWO[0], TWO[1], "--seeds", "0..5", "--jobs", jobs, "--json"]);
    let one = sweep("1");
    let three = sweep("3");
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    let one = runs_in_order(&text(&one.stdout));
    let three = runs_in_order(&text(&three.stdout));
    let expected_order: Vec<(String, u64)> = ["registry-client-crash", "holder-pause-unfenced"]
        .iter()
        .flat_map(|name| (0..5).map(move |seed| (name.to_string(), seed)))
        .collect();
    let order: Vec<(String, u64)> = one.iter().map(|(n, s, _)| (n.clone(), *s)).collect();
    assert_eq!(order, expected_order, "scenario by scenario, seed by seed");
    assert_eq!(one, three, "the same lines, digests included, in the same order");
}

#[test]
fn a_sweep_cut_short_resumes_without_rerunning_its_finished_runs() {
    let full = leasesim(&["sweep", TWO[0], TWO[1], "--seeds", "0..4", "--json"]);
    let full_text = text(&full.stdout);
    let all = runs_in_order(&full_text);
    assert_eq!(all.len(), 8);

    // What a sweep killed mid-write leaves: three whole lines and half of one.
    let dir = std::env::temp_dir().join(format!("leasesim-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("partial.jsonl");
    let lines: Vec<&str> = full_text.lines().collect();
    let cut = format!("{}\n{}\n{}\n{}", lines[0], lines[1], lines[2], &lines[3][..lines[3].len() / 2]);
    std::fs::write(&file, cut).unwrap();

    let resumed = leasesim(&["sweep", TWO[0], TWO[1], "--seeds", "0..4", "--resume", file.to_str().unwrap()]);
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("resume: 3 finished run(s)"), "{stderr}");
    assert!(stderr.contains("cut short"), "the half line is named: {stderr}");
    assert!(text(&resumed.stdout).contains("8 runs, 5 of them made now"), "{}", text(&resumed.stdout));
    let mut after = runs_in_order(&std::fs::read_to_string(&file).unwrap());
    let mut all_sorted = all.clone();
    after.sort();
    all_sorted.sort();
    assert_eq!(after, all_sorted, "every run once, each with the digest a full sweep gives it");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_run_with_a_planted_bug_prints_json_only_and_a_replay_that_reproduces_it() {
    let run = leasesim(&["run", "scenarios/chaos-swarm.toml", "--seed", "1", "--bug", "no-truncate-conflict", "--json"]);
    assert_eq!(run.status.code(), Some(1), "the planted bug fires");
    let stdout = text(&run.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("stdout is one JSON object ({e}): {stdout}"));
    let replay = v["replay"].as_str().unwrap().to_string();
    let digest = v["trace_digest"].as_str().unwrap().to_string();
    assert!(replay.ends_with("--bug no-truncate-conflict"), "{replay}");
    assert!(text(&run.stderr).contains(&format!("replay: {replay}")), "the hint goes to stderr");

    // Paste the printed command.
    let words: Vec<&str> = replay.split_whitespace().collect();
    assert_eq!(words[0], "leasesim");
    let replayed = leasesim(&words[1..]);
    assert_eq!(replayed.status.code(), Some(1), "the replay fails too");
    assert!(text(&replayed.stdout).contains(&format!("digest {digest}")), "same digest: {}", text(&replayed.stdout));

    // The sweep's JUnit carries the same command.
    let junit = std::env::temp_dir().join(format!("leasesim-junit-{}.xml", std::process::id()));
    let sweep = leasesim(&[
        "sweep",
        "scenarios/chaos-swarm.toml",
        "--seeds",
        "1..2",
        "--bug",
        "no-truncate-conflict",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(sweep.status.code(), Some(1));
    assert!(text(&sweep.stdout).contains(&format!("replay: {replay}")));
    assert!(std::fs::read_to_string(&junit).unwrap().contains(&format!("replay: {replay}")));
    std::fs::remove_file(&junit).unwrap();
}

#[test]
fn readme_planted_bug_examples_fail_as_they_claim() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let examples: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("leasesim run ") && l.contains("--bug "))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert!(!examples.is_empty(), "README shows a planted-bug run");
    for example in examples {
        let words: Vec<&str> = example.split_whitespace().collect();
        let out = leasesim(&words[1..]);
        assert_eq!(out.status.code(), Some(1), "`{example}` claims to fail: {}", text(&out.stdout));
    }
}

/// `leasesim sweep ... | head -1`: the reader goes away after one line. The
/// sweep must end quietly (killed by SIGPIPE, as `seq 1 1000000 | head -1`
/// is), never print a Rust panic about a broken pipe.
#[test]
fn a_reader_that_stops_early_ends_the_sweep_without_a_panic() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(["sweep", TWO[0], "--seeds", "0..400", "--json"])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run leasesim");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with('{'), "a JSON line first: {first}");
    // Dropping the reader closed the pipe; the next line the sweep writes fails.
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "no panic on a closed pipe:\n{stderr}");
    assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "ended by SIGPIPE: {:?}", output.status);
}
