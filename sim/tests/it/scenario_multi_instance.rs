//! The task and singleton workload tables (the multi-instance lease design's
//! multi-instance pattern) load with their documented defaults, are rejected
//! with
//! `file:line:col` and a fix when bad, and come back equal from `to_toml`.

use leasesim_scenario::*;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const HEAD: &str = "name = \"x\"\nduration = \"10s\"\n";

fn parsed(text: &str) -> Scenario {
    parse(text, "t.toml").unwrap_or_else(|error| panic!("rejected:\n{error}"))
}

/// Asserts the file is rejected with exactly one diagnostic at `at`
/// (`line:col`) saying `message`; returns its fix.
#[track_caller]
fn assert_one(text: &str, at: &str, message: &str) -> String {
    let error = match parse(text, "t.toml") {
        Ok(scenario) => panic!("accepted a bad file as {scenario:#?}"),
        Err(error) => error,
    };
    assert_eq!(error.diagnostics.len(), 1, "expected one diagnostic, got:\n{error}");
    let headline = error.headline();
    assert!(headline.starts_with(&format!("t.toml:{at}: ")), "expected t.toml:{at}: …, got {headline:?}");
    assert!(headline.contains(message), "expected {message:?} in {headline:?}");
    let fix = error.diagnostics[0].fix.clone();
    assert!(!fix.is_empty(), "no fix for {headline:?}");
    fix
}

#[track_caller]
fn assert_round_trip(scenario: &Scenario) {
    let text = to_toml(scenario);
    let again =
        parse(&text, "written.toml").unwrap_or_else(|error| panic!("to_toml wrote a file that does not parse:\n{error}\n---\n{text}"));
    assert_eq!(&again, scenario, "written as:\n{text}");
}

#[test]
fn a_task_workload_gets_the_documented_defaults() {
    let s = parsed(&format!("{HEAD}[[workload]]\nkind = \"task\"\nclients = 3\nttl = \"3s\"\n"));
    let expected = TaskWorkload {
        ttl_ns: 3 * SEC,
        keepalive_ns: SEC,
        tasks: 20,
        task_every_ns: (100 * MS, 500 * MS),
        work_ns: (100 * MS, SEC),
        poll_ns: (50 * MS, 200 * MS),
        margin: 0.1,
        belief_from: BeliefFrom::Send,
    };
    assert_eq!(s.workloads[0].kind, WorkloadKind::Task(expected));
    assert_eq!(s.workloads[0].kind.name(), "task");
}

#[test]
fn a_singleton_workload_gets_the_documented_defaults() {
    let s = parsed(&format!("{HEAD}[[workload]]\nkind = \"singleton\"\nclients = 2\nttl = \"2s\"\n"));
    let expected = SingletonWorkload {
        role: "singleton".to_string(),
        ttl_ns: 2 * SEC,
        keepalive_ns: 2 * SEC / 3,
        interval_ns: (100 * MS, 300 * MS),
        poll_ns: (100 * MS, 300 * MS),
        margin: 0.1,
        belief_from: BeliefFrom::Send,
    };
    assert_eq!(s.workloads[0].kind, WorkloadKind::Singleton(expected));
    assert_eq!(s.singleton_roles().into_iter().collect::<Vec<_>>(), vec!["singleton"]);
}

#[test]
fn every_key_lands_in_the_model_and_round_trips() {
    let text = format!(
        "{HEAD}\
         [[workload]]\nkind = \"task\"\nclients = 4\nttl = \"2s\"\nkeepalive = \"400ms\"\ntasks = 7\ntask_every = \"1s\"\n\
         work = [\"10ms\", \"20ms\"]\npoll = [\"1ms\", \"2ms\"]\nmargin = 0.25\nbelief_from = \"receipt\"\n\
         [[workload]]\nkind = \"singleton\"\nclients = 2\nrole = \"gen/1\"\nttl = \"5s\"\nkeepalive = \"1s\"\n\
         interval = \"50ms\"\npoll = [\"20ms\", \"40ms\"]\nmargin = 0.0\nbelief_from = \"receipt\"\n\
         [[fault]]\nat = \"1s\"\npause = \"holder:gen/1\"\nfor = \"3s\"\n"
    );
    let s = parsed(&text);
    let WorkloadKind::Task(task) = &s.workloads[0].kind else { panic!("not a task workload") };
    assert_eq!((task.keepalive_ns, task.tasks, task.task_every_ns, task.work_ns), (400 * MS, 7, (SEC, SEC), (10 * MS, 20 * MS)));
    assert_eq!((task.poll_ns, task.margin, task.belief_from), ((MS, 2 * MS), 0.25, BeliefFrom::Receipt));
    let WorkloadKind::Singleton(singleton) = &s.workloads[1].kind else { panic!("not a singleton workload") };
    assert_eq!((singleton.role.as_str(), s.workloads[1].first_client), ("gen/1", 5));
    assert_eq!((singleton.interval_ns, singleton.poll_ns, singleton.margin), ((50 * MS, 50 * MS), (20 * MS, 40 * MS), 0.0));
    assert_eq!(s.faults[0].action, FaultAction::Pause(Selector::Holder("gen/1".to_string())));
    assert_round_trip(&s);
}

#[test]
fn a_task_workload_needs_a_generator_and_a_worker() {
    let fix = assert_one(
        &format!("{HEAD}[[workload]]\nkind = \"task\"\nclients = 1\nttl = \"2s\"\n"),
        "5:11",
        "`clients` = 1: a task workload needs a generator and at least one worker",
    );
    assert!(fix.contains("the first client generates"), "{fix}");
}

#[test]
fn a_second_task_workload_is_rejected_at_its_kind() {
    let task = "[[workload]]\nkind = \"task\"\nclients = 2\nttl = \"2s\"\n";
    let fix = assert_one(&format!("{HEAD}{task}{task}"), "8:8", "a second task workload");
    assert!(fix.contains("one [[workload]] with kind = \"task\""), "{fix}");
}

#[test]
fn singleton_roles_are_unique_and_apart_from_lock_keys() {
    let singleton = |role: &str| format!("[[workload]]\nkind = \"singleton\"\nclients = 2\nttl = \"2s\"\nrole = \"{role}\"\n");
    assert_one(&format!("{HEAD}{}{}", singleton("gen"), singleton("gen")), "12:8", "role `gen` is already a singleton role");
    let lock = "[[workload]]\nkind = \"lock\"\nclients = 1\nkeys = [\"gen\"]\nttl = \"2s\"\n";
    assert_one(&format!("{HEAD}{}{lock}", singleton("gen")), "7:8", "role `gen` is also a lock key");
    // Two singletons left at the default role collide at their headers.
    let default = "[[workload]]\nkind = \"singleton\"\nclients = 1\nttl = \"2s\"\n";
    assert_one(&format!("{HEAD}{default}{default}"), "7:1", "role `singleton` is already a singleton role");
}

#[test]
fn bad_values_say_what_is_wrong() {
    let task = format!("{HEAD}[[workload]]\nkind = \"task\"\nclients = 2\nttl = \"2s\"\n");
    assert_one(&format!("{task}tasks = 0\n"), "7:9", "`tasks` = 0 is outside 1..=100000");
    assert_one(&format!("{task}poll = [\"0ms\", \"10ms\"]\n"), "7:8", "`poll` must be longer than zero");
    assert_one(&format!("{task}work = [\"2s\", \"1s\"]\n"), "7:8", "low is above high");
    assert_one(&format!("{task}keepalive = \"2s\"\n"), "7:13", "is not shorter than `ttl`");
    assert_one(&format!("{task}hold = \"1s\"\n"), "7:1", "unknown key `hold` in [[workload]] #1 (kind = \"task\")");
    let singleton = format!("{HEAD}[[workload]]\nkind = \"singleton\"\nclients = 2\nttl = \"2s\"\n");
    assert_one(&format!("{singleton}role = \"a b\"\n"), "7:8", "`role` = \"a b\" is not a usable name");
    assert_one(&format!("{singleton}interval = \"0s\"\n"), "7:12", "`interval` must be longer than zero");
    assert_one(&format!("{singleton}tasks = 3\n"), "7:1", "unknown key `tasks` in [[workload]] #1 (kind = \"singleton\")");
    assert_one(&format!("{HEAD}[[workload]]\nkind = \"singelton\"\nclients = 1\n"), "4:8", "did you mean `singleton`?");
}

#[test]
fn holder_selects_a_singleton_role_and_only_an_existing_one() {
    let singleton = "[[workload]]\nkind = \"singleton\"\nclients = 2\nttl = \"2s\"\nrole = \"gen\"\n";
    parsed(&format!("{HEAD}{singleton}[[fault]]\nat = \"1s\"\ncrash = \"holder:gen\"\n"));
    assert_one(&format!("{HEAD}{singleton}[[fault]]\nat = \"1s\"\ncrash = \"holder:gne\"\n"), "10:9", "`holder:gne`");
}

#[test]
fn the_new_invariant_ids_are_known() {
    for id in ["task-once", "task-lost", "singleton-overlap"] {
        assert!(is_known_invariant(id), "{id}");
    }
}
