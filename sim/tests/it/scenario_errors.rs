//! Every kind of bad scenario file is rejected with `file:line:col`, a
//! message naming the problem, and a fix. Each test writes its file inline
//! so the expected line and column can be checked by eye.

use leasesim_scenario::{self as scenario, parse, ScenarioError};

/// Parses text that must be rejected.
fn rejected(text: &str) -> ScenarioError {
    match parse(text, "t.toml") {
        Ok(scenario) => panic!("accepted a bad file as {scenario:#?}"),
        Err(error) => error,
    }
}

/// Asserts the file is rejected with exactly one diagnostic, at `at`
/// (`line:col`), whose message contains `message`; returns its fix.
#[track_caller]
fn assert_one(text: &str, at: &str, message: &str) -> String {
    let error = rejected(text);
    assert_eq!(error.diagnostics.len(), 1, "expected one diagnostic, got:\n{error}");
    let headline = error.headline();
    let prefix = format!("t.toml:{at}: ");
    assert!(headline.starts_with(&prefix), "expected {prefix:?}…, got {headline:?}");
    assert!(headline.contains(message), "expected {message:?} in {headline:?}");
    let fix = error.diagnostics[0].fix.clone();
    assert!(!fix.is_empty(), "no fix for {headline:?}");
    fix
}

/// Asserts some diagnostic (of possibly several) is at `at` and says `message`.
#[track_caller]
fn assert_has(error: &ScenarioError, at: &str, message: &str) {
    let prefix = format!("t.toml:{at}: ");
    let found = error.diagnostics.iter().map(|d| d.headline(&error.file)).any(|h| h.starts_with(&prefix) && h.contains(message));
    assert!(found, "expected {prefix}…{message}… in:\n{error}");
}

#[test]
fn toml_syntax_error() {
    assert_one("name = \"x\"\nduration = 30s\n", "2:14", "TOML syntax error");
    assert_one("name = \"x\"\nname = \"y\"\n", "2:1", "TOML syntax error");
}

#[test]
fn date_times_are_a_wrong_type_not_a_crash() {
    assert_one("name = \"x\"\nduration = 1979-05-27\n", "2:12", "`duration` must be a duration string with a unit, found a date-time");
}

#[test]
fn unknown_key_in_network_suggests_the_closest() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[network]\nlaetncy = [\"1ms\", \"10ms\"]\n",
        "4:1",
        "unknown key `laetncy` in [network]; did you mean `latency`?",
    );
    assert_eq!(fix, "valid keys in [network]: latency, loss, duplicate");
}

#[test]
fn unknown_keys_at_every_level() {
    let head = "name = \"x\"\nduration = \"10s\"\n";
    let cases = [
        ("nmae2 = 1\n", "3:1", "unknown key `nmae2` at the top level"),
        ("durration = \"1s\"\n", "3:1", "unknown key `durration` at the top level; did you mean `duration`?"),
        ("[cluster]\nserver = 3\n", "4:1", "unknown key `server` in [cluster]; did you mean `servers`?"),
        ("[clocks.s1]\ndrfit = 0.1\n", "4:1", "unknown key `drfit` in [clocks.s1]; did you mean `drift`?"),
        (
            "[[workload]]\nkind = \"lock\"\nclients = 1\nkeys = [\"k\"]\nttl = \"1s\"\nhlod = \"1s\"\n",
            "8:1",
            "unknown key `hlod` in [[workload]] #1 (kind = \"lock\"); did you mean `hold`?",
        ),
        (
            "[[workload]]\nkind = \"registry\"\nclients = 1\nttl = \"1s\"\nkeys = 3\n",
            "7:1",
            "unknown key `keys` in [[workload]] #1 (kind = \"registry\")",
        ),
        ("[[workload]]\nkind = \"kv\"\nclients = 1\nintervall = \"1s\"\n", "6:1", "did you mean `interval`?"),
        ("[[fault]]\nat = \"1s\"\ncrash = \"s1\"\nfro = \"1s\"\n", "6:1", "unknown key `fro` in [[fault]] #1; did you mean `for`?"),
        ("[[fault]]\nat = \"1s\"\nblock = { from = \"s1\", too = [\"s2\"] }\n", "5:24", "unknown key `too` in `block`; did you mean `to`?"),
        ("[chaos]\ncrashs = \"1s\"\n", "4:1", "unknown key `crashs` in [chaos]; did you mean `crashes`?"),
        ("[expect]\nverdict = \"safe\"\nviolation = []\n", "5:1", "unknown key `violation` in [expect]; did you mean `violations`?"),
    ];
    for (tail, at, message) in cases {
        let error = rejected(&format!("{head}{tail}"));
        assert_has(&error, at, message);
    }
}

#[test]
fn wrong_types() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = \"5\"\n",
        "4:11",
        "`servers` must be an integer, found a string",
    );
    assert_eq!(fix, "write e.g. `servers = 1`");
    let fix = assert_one("name = \"x\"\nduration = 30\n", "2:12", "`duration` must be a duration string with a unit, found an integer");
    assert!(fix.contains("\"30s\""), "{fix}");
    assert_one("name = 5\nduration = \"1s\"\n", "1:8", "`name` must be a string, found an integer");
    assert_one("name = \"x\"\nduration = \"1s\"\n[network]\nloss = \"1%\"\n", "4:8", "`loss` must be a number, found a string");
    assert_one("name = \"x\"\nduration = \"1s\"\nnetwork = 3\n", "3:11", "`network` must be a table, found an integer");
    assert_one(
        "name = \"x\"\nduration = \"1s\"\n[workload]\nkind = \"kv\"\n",
        "3:1",
        "`workload` must be an array of tables, found a table",
    );
    assert_one("name = \"x\"\nduration = \"1s\"\n[chaos]\nswarm = 1\n", "4:9", "`swarm` must be true or false, found an integer");
    assert_one("name = \"x\"\nduration = \"1s\"\nworkload = [1]\n", "3:13", "`workload` must be a table, found an integer");
    assert_one("name = \"x\"\nduration = \"1s\"\n[clocks]\ns1 = 0.5\n", "4:6", "`s1` must be a table, found a float");
}

#[test]
fn bad_duration_strings() {
    let fix = assert_one("name = \"x\"\nduration = \"2 s\"\n", "2:12", "`2 s`: a duration is a number with a unit: ms, s, m");
    assert_eq!(fix, "write `\"2s\"`");
    assert_one("name = \"x\"\nduration = \"2sec\"\n", "2:12", "`2sec`: a duration is a number with a unit");
    assert_one("name = \"x\"\nduration = \"0.1ns\"\n", "2:12", "`0.1ns`: finer than one nanosecond");
    assert_one("name = \"x\"\nduration = \"99999999h\"\n", "2:12", "too long");
}

#[test]
fn unsigned_durations_cannot_be_negative() {
    assert_one("name = \"x\"\nduration = \"10s\"\nsettle = \"-2s\"\n", "3:10", "`-2s`: `settle` cannot be negative");
    assert_one("name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"-1s\"\ncrash = \"s1\"\n", "4:6", "`-1s`: `at` cannot be negative");
}

#[test]
fn signed_durations_accept_a_sign() {
    let scenario =
        parse("name = \"x\"\nduration = \"10s\"\n[clocks.store]\noffset = \"-2s\"\n", "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.clocks.values().next().map(|c| c.offset_ns), Some(-2_000_000_000));
}

#[test]
fn unordered_ranges() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nelection_timeout = [\"300ms\",\"150ms\"]\n",
        "4:20",
        "[\"300ms\",\"150ms\"]: low is above high",
    );
    assert_eq!(fix, "write the low end first: `election_timeout = [\"150ms\", \"300ms\"]`");
    assert_one("name = \"x\"\nduration = \"10s\"\n[chaos]\nclock_jumps = \"1s\"\njump = [\"1s\", \"-1s\"]\n", "5:8", "low is above high");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[network]\nlatency = [\"1ms\"]\n",
        "4:11",
        "`latency` has 1 values; a range is two values [low, high]",
    );
}

#[test]
fn probabilities_outside_zero_to_one() {
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[network]\nloss = 1.5\n",
        "4:8",
        "`loss` = 1.5 is not a probability: it must be within [0, 1]",
    );
    assert_one("name = \"x\"\nduration = \"10s\"\n[network]\nduplicate = -0.1\n", "4:13", "`duplicate` = -0.1 is not a probability");
    assert_one("name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nloss = 2\n", "5:8", "`loss` = 2 is not a probability");
    assert_one("name = \"x\"\nduration = \"10s\"\n[network]\nloss = nan\n", "4:8", "`loss` = nan is not a finite number");
}

#[test]
fn drift_outside_minus_one_to_one() {
    let fix = assert_one("name = \"x\"\nduration = \"10s\"\n[clocks.s1]\ndrift = 1.0\n", "4:9", "`drift` = 1.0 is outside (-1, 1)");
    assert!(fix.contains("0.05 runs 5% fast"), "{fix}");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nclock = \"s1\"\ndrift = -1\n",
        "6:9",
        "`drift` = -1 is outside (-1, 1)",
    );
    assert_one("name = \"x\"\nduration = \"10s\"\n[cluster]\ndrift_bound = 1.0\n", "4:15", "`drift_bound` = 1.0 is outside [0, 1)");
    assert_one("name = \"x\"\nduration = \"10s\"\n[chaos]\ndrift = -0.1\n", "4:9", "`drift` = -0.1 is outside [0, 1)");
}

#[test]
fn servers_outside_one_to_nine() {
    assert_one("name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = 10\n", "4:11", "`servers` = 10 is outside 1..=9");
    assert_one("name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = 0\n", "4:11", "`servers` = 0 is outside 1..=9");
    assert_one("name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = -3\n", "4:11", "`servers` = -3 is outside 1..=9");
}

#[test]
fn server_selector_beyond_servers_and_spares() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = 5\nspares = 1\n[[fault]]\nat = \"1s\"\ncrash = \"s7\"\n",
        "8:9",
        "`s7` names no server: the cluster has s1…s5 and spares s6",
    );
    assert_eq!(fix, "use one of s1…s6, or raise `servers` or `spares` in [cluster]");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[clocks.s4]\ndrift = 0.1\n",
        "3:9",
        "[clocks.s4]: `s4` names no server: the cluster has s1…s3",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\npartition = [[\"s1\"], [\"s2\", \"s9\"]]\n",
        "5:29",
        "`s9` names no server",
    );
}

#[test]
fn client_selector_beyond_clients() {
    let text = "name = \"x\"\nduration = \"10s\"\n\
                [[workload]]\nkind = \"kv\"\nclients = 3\n\
                [[workload]]\nkind = \"registry\"\nclients = 1\nttl = \"1s\"\n\
                [[fault]]\nat = \"1s\"\nblock = { from = \"c12\", to = [\"s1\"] }\n";
    let fix = assert_one(text, "12:18", "`c12` names no client: the workloads have c1…c4");
    assert!(fix.contains("numbered c1… across [[workload]]s"), "{fix}");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\npause = \"c1\"\n",
        "5:9",
        "`c1` names no client: there are no clients",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\npause = \"random-client\"\n",
        "5:9",
        "`random-client`: there are no clients",
    );
}

#[test]
fn holder_of_a_key_no_lock_workload_has() {
    let text = "name = \"x\"\nduration = \"10s\"\n\
                [[workload]]\nkind = \"lock\"\nclients = 2\nkeys = [\"orders\"]\nttl = \"2s\"\n\
                [[fault]]\nat = \"1s\"\npause = \"holder:order\"\n";
    let fix = assert_one(text, "10:9", "`holder:order`: no lock workload has key `order`");
    assert_eq!(fix, "lock keys in this file: orders; did you mean `orders`?");
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nisolate = \"holder:k\"\n",
        "5:11",
        "no lock workload has key `k`",
    );
    assert!(fix.contains("kind = \"lock\""), "{fix}");
}

#[test]
fn add_needs_a_spare() {
    let head = "name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = 3\nspares = 2\n[[fault]]\nat = \"1s\"\n";
    let fix = assert_one(&format!("{head}add = \"s2\"\n"), "8:7", "`add = \"s2\"`: s2 is already a voter (servers = 3)");
    assert_eq!(fix, "`add` takes a spare; spares here: s4…s5");
    assert_one(&format!("{head}add = \"s6\"\n"), "8:7", "`s6` names no server");
    assert_one(&format!("{head}add = \"leader\"\n"), "8:7", "`add = \"leader\"`: `add` takes a spare server by name");
    let fix = assert_one("name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nadd = \"s4\"\n", "5:7", "`s4` names no server");
    assert!(fix.contains("raise `servers` or `spares`"), "{fix}");
    let scenario = parse(&format!("{head}add = \"s5\"\n"), "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.faults[0].action, leasesim_scenario::FaultAction::Add(5));
}

#[test]
fn remove_needs_a_server() {
    let head = "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"kv\"\nclients = 1\n[[fault]]\nat = \"1s\"\n";
    for selector in ["c1", "store", "random-client"] {
        let error = rejected(&format!("{head}remove = \"{selector}\"\n"));
        assert_has(&error, "8:10", &format!("`remove = \"{selector}\"`: only a server can be removed"));
    }
    assert!(parse(&format!("{head}remove = \"follower\"\n"), "t.toml").is_ok());
}

#[test]
fn unknown_selector_spelling() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\ncrash = \"leeder\"\n",
        "5:9",
        "`leeder` is not a process or selector; did you mean `leader`?",
    );
    assert!(fix.starts_with("selectors: s1…, c1…, store, leader, holder:KEY"), "{fix}");
    assert_one("name = \"x\"\nduration = \"10s\"\n[clocks.leader]\ndrift = 0.1\n", "3:9", "`leader` is not one fixed process");
}

#[test]
fn fault_at_beyond_duration() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"30s\"\n[[fault]]\nat = \"40s\"\ncrash = \"s1\"\n",
        "4:6",
        "`at` = 40s is beyond `duration` = 30s",
    );
    assert!(fix.contains("at most 30s"), "{fix}");
    assert!(parse("name = \"x\"\nduration = \"30s\"\n[[fault]]\nat = \"30s\"\ncrash = \"s1\"\n", "t.toml").is_ok());
}

#[test]
fn missing_required_keys() {
    let error = rejected("description = \"no name, no duration\"\n");
    assert_has(&error, "1:1", "missing key `name` at the top level");
    assert_has(&error, "1:1", "missing key `duration` at the top level");
    assert_eq!(error.diagnostics.len(), 2, "{error}");
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"lock\"\nclients = 1\nttl = \"1s\"\n",
        "3:1",
        "missing key `keys` in [[workload]] #1",
    );
    assert_eq!(fix, "add `keys = [\"orders\"]`");
    assert_one("name = \"x\"\nduration = \"10s\"\n[[workload]]\nclients = 1\n", "3:1", "missing key `kind` in [[workload]] #1");
    assert_one("name = \"x\"\nduration = \"10s\"\n[[fault]]\ncrash = \"s1\"\n", "3:1", "missing key `at` in [[fault]] #1");
    assert_one("name = \"x\"\nduration = \"10s\"\n[expect]\n", "3:1", "missing key `verdict` in [expect]");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nblock = { to = [\"s2\"] }\n",
        "5:9",
        "missing key `from` in `block`",
    );
}

#[test]
fn bad_seed_ranges() {
    let fix = assert_one("name = \"x\"\nduration = \"10s\"\nseeds = \"5..2\"\n", "3:9", "`5..2`: low is above high");
    assert_eq!(fix, "write the low end first: \"2..5\"");
    assert_one("name = \"x\"\nduration = \"10s\"\nseeds = \"5..5\"\n", "3:9", "`5..5` is empty");
    assert_one("name = \"x\"\nduration = \"10s\"\nseeds = \"0-100\"\n", "3:9", "`0-100` is not a seed range");
    assert_one("name = \"x\"\nduration = \"10s\"\nseeds = \"-1..5\"\n", "3:9", "is not a seed range");
}

#[test]
fn unknown_workload_kind() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"locks\"\nclients = 1\n",
        "4:8",
        "unknown workload kind `locks`; did you mean `lock`?",
    );
    assert_eq!(fix, "kinds: lock, registry, kv, task, singleton, watch, txn");
}

#[test]
fn unknown_invariant_id_in_expect() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"violation\"\nviolations = [\"liveness\", \"fencing\"]\n",
        "5:27",
        "unknown invariant id `fencing`; did you mean `fencing-order`?",
    );
    assert!(fix.starts_with("invariant ids: election-safety,"), "{fix}");
    assert!(fix.ends_with("task-once, task-lost, singleton-overlap, watch-delivery, holder-lease, promote-extension"), "{fix}");
}

#[test]
fn violation_verdict_needs_known_ids() {
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"violation\"\n",
        "4:11",
        "verdict = \"violation\" needs `violations = [..]`",
    );
    assert_one("name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"violation\"\nviolations = []\n", "5:14", "`violations` is empty");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"safe\"\nviolations = [\"liveness\"]\n",
        "5:1",
        "`violations` is only for verdict = \"violation\"",
    );
    assert_one("name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"unsafe\"\n", "4:11", "unknown verdict `unsafe`");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"violation\"\nviolations = [\"liveness\", \"liveness\"]\n",
        "5:27",
        "`liveness` is listed twice in `violations`",
    );
    let reserved = parse("name = \"x\"\nduration = \"10s\"\n[expect]\nverdict = \"violation\"\nviolations = [\"task-once\"]\n", "t.toml");
    assert!(reserved.is_ok(), "reserved ids are valid: {reserved:?}");
}

#[test]
fn fault_with_zero_actions() {
    let fix = assert_one("name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\nfor = \"1s\"\n", "3:1", "[[fault]] #1 has no action");
    assert_eq!(fix, "add exactly one of: partition, isolate, block, delay, crash, pause, clock, loss, add, remove, messages");
}

#[test]
fn fault_with_two_actions() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\ncrash = \"s1\"\n[[fault]]\nat = \"2s\"\npause = \"s1\"\nisolate = \"s2\"\n",
        "9:1",
        "[[fault]] #2 has two actions, `pause` and `isolate`",
    );
    assert!(fix.starts_with("a fault does one thing"), "{fix}");
}

#[test]
fn fault_shapes() {
    let head = "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\n";
    let cases = [
        ("partition = [[\"s1\", \"s2\", \"s3\"]]\n", "5:13", "`partition` has 1 group(s); it needs at least two"),
        ("partition = [[\"s1\"], []]\n", "5:22", "a group of `partition` is empty"),
        ("partition = [[\"s1\"], [\"s2\", \"s1\"]]\n", "5:29", "`s1` is in `partition` twice"),
        ("partition = [[\"s1\"], \"s2\"]\n", "5:22", "each group of `partition` must be an array of processes, found a string"),
        ("block = { from = \"s1\", to = [] }\n", "5:29", "`to` is empty"),
        ("clock = \"s1\"\n", "5:1", "a clock fault needs `drift` and/or `jump`"),
        ("clock = \"s1\"\njump = \"1s\"\nfor = \"1s\"\n", "7:1", "`for` has no meaning with `clock`"),
        ("crash = \"s1\"\nfor = \"0s\"\n", "6:7", "`for` must be longer than zero"),
        ("crash = \"s1\"\njump = \"1s\"\n", "6:1", "`jump` belongs to a clock fault"),
        ("remove = \"s1\"\nfor = \"1s\"\n", "6:1", "`for` has no meaning with `remove`"),
    ];
    for (tail, at, message) in cases {
        assert_one(&format!("{head}{tail}"), at, message);
    }
}

#[test]
fn lock_workload_values() {
    let head = "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"lock\"\nclients = 2\n";
    let cases = [
        ("keys = []\nttl = \"1s\"\n", "6:8", "`keys` is empty"),
        ("keys = [\"a\", \"a\"]\nttl = \"1s\"\n", "6:14", "`a` is listed twice in `keys`"),
        ("keys = [\"a\"]\nttl = \"1s\"\nkeepalive = \"1s\"\n", "8:13", "`keepalive` = 1s is not shorter than `ttl` = 1s"),
        ("keys = [\"a\"]\nttl = \"0s\"\n", "7:7", "`ttl` must be longer than zero"),
        ("keys = [\"a\"]\nttl = \"1s\"\nmargin = 1\n", "8:10", "`margin` = 1 is outside [0, 1)"),
        (
            "keys = [\"a\"]\nttl = \"1s\"\nbelief_from = \"reciept\"\n",
            "8:15",
            "unknown `belief_from` = \"reciept\"; did you mean `receipt`?",
        ),
        ("keys = [\"a\"]\nttl = \"1s\"\nfenced = \"yes\"\n", "8:10", "`fenced` must be true or false"),
    ];
    for (tail, at, message) in cases {
        assert_one(&format!("{head}{tail}"), at, message);
    }
    assert_one("name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"kv\"\nclients = 0\n", "5:11", "`clients` = 0 is outside 1..=1000");
}

#[test]
fn chaos_length_without_its_rate() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[chaos]\npause_for = [\"1s\", \"2s\"]\n",
        "4:1",
        "`pause_for` has no effect without `pauses`",
    );
    assert!(fix.starts_with("add `pauses = \"10s\"`"), "{fix}");
}

#[test]
fn chaos_kinds_aimed_at_roles_need_their_targets() {
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[chaos]\nholder_pauses = \"5s\"\n",
        "4:1",
        "`holder_pauses` needs a lock or singleton workload",
    );
    assert!(fix.contains("kind = \"lock\""), "{fix}");
    let fix = assert_one("name = \"x\"\nduration = \"10s\"\n[chaos]\nmembership = \"5s\"\n", "4:1", "`membership` needs spare servers");
    assert!(fix.starts_with("add `spares = 2`"), "{fix}");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[chaos]\nleader_crash_for = [\"1s\", \"2s\"]\n",
        "4:1",
        "`leader_crash_for` has no effect without `leader_crashes`",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nspares = 1\n[chaos]\nmembership = \"0s\"\n",
        "6:14",
        "`membership` must be longer than zero",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nspares = 1\n[chaos]\npartition_replacements = 0.5\n",
        "6:1",
        "has no effect without `partitions`",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[chaos]\npartitions = \"2s\"\npartition_replacements = 0.5\n",
        "5:1",
        "`partition_replacements` needs spare servers",
    );
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nspares = 1\n[chaos]\npartitions = \"2s\"\npartition_replacements = 2\n",
        "7:26",
        "is not a probability",
    );
}

#[test]
fn bad_names_and_bugs() {
    let fix = assert_one("name = \"Holder Pause\"\nduration = \"10s\"\n", "1:8", "`Holder Pause` is not a kebab-case name");
    assert!(fix.ends_with("e.g. \"holder-pause\""), "{fix}");
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\nbugs = [\"no-promote\"]\n",
        "3:9",
        "unknown bug `no-promote`; did you mean `no-promote-extension`?",
    );
    assert!(fix.starts_with("known bugs: vote-without-log-check,"), "{fix}");
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nlease_expiry = \"leader-wall\"\n",
        "4:16",
        "unknown `lease_expiry` = \"leader-wall\"",
    );
}

#[test]
fn several_errors_are_reported_together_in_file_order() {
    let error = rejected("name = \"x\"\nduration = \"2 s\"\n[network]\nloss = 2.0\nlaetncy = 1\n[cluster]\nservers = 11\n");
    let headlines: Vec<String> = error.diagnostics.iter().map(|d| d.headline("t.toml")).collect();
    assert_eq!(headlines.len(), 4, "{error}");
    assert!(headlines[0].starts_with("t.toml:2:12: `2 s`"), "{headlines:?}");
    assert!(headlines[1].starts_with("t.toml:4:8: `loss`"), "{headlines:?}");
    assert!(headlines[2].starts_with("t.toml:5:1: unknown key `laetncy`"), "{headlines:?}");
    assert!(headlines[3].starts_with("t.toml:7:11: `servers`"), "{headlines:?}");
}

#[test]
fn display_points_at_the_value_and_says_how_to_fix_it() {
    let error = rejected("name = \"x\"\nduration = \"10s\"\n[network]\nloss = 1.5\n");
    assert_eq!(
        error.to_string(),
        "t.toml:4:8: `loss` = 1.5 is not a probability: it must be within [0, 1]\n 4 | loss = 1.5\n   |        ^^^\n  fix: write a number from 0 to 1, e.g. `loss = 0.01` for 1%"
    );
}

#[test]
fn a_bad_value_is_never_replaced_by_its_default() {
    // `servers` is bad, so the selector checks that depend on it are
    // skipped rather than run against the default of 3.
    let error = rejected("name = \"x\"\nduration = \"10s\"\n[cluster]\nservers = \"five\"\n[[fault]]\nat = \"1s\"\ncrash = \"s5\"\n");
    assert_eq!(error.diagnostics.len(), 1, "{error}");
}

const POINT_BASE: &str = "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"kv\"\nclients = 1\n[[fault]]\nat = \"1s\"\n";

#[test]
fn an_unknown_fault_point_suggests_the_closest() {
    let text = format!("{POINT_BASE}crash = \"s1\"\nwhen = \"after-send:vote-replay\"\n");
    let fix = assert_one(&text, "9:8", "unknown fault point `after-send:vote-replay`");
    assert!(fix.starts_with("did you mean `after-send:vote-reply`?"), "{fix}");
}

#[test]
fn a_fault_point_needs_a_crash_pause_or_clock() {
    let text = format!("{POINT_BASE}loss = 0.5\nwhen = \"timer\"\n");
    assert_one(&text, "9:8", "`when` applies to crash, pause and clock faults, not to `loss`");
}

#[test]
fn a_fault_point_the_selector_never_reaches_is_refused() {
    let text = format!("{POINT_BASE}crash = \"c1\"\nwhen = \"after-write\"\n");
    let fix = assert_one(&text, "9:8", "`c1` never reaches `after-write`: only servers do");
    assert!(fix.contains("leader"), "{fix}");
    let text = format!("{POINT_BASE}pause = \"leader\"\nwhen = \"after-send:request\"\n");
    assert_one(&text, "9:8", "`leader` never reaches `after-send:request`: only clients send requests");
}

#[test]
fn a_fault_point_and_the_new_cluster_knobs_load() {
    let text = format!("{POINT_BASE}crash = \"follower\"\nwhen = \"after-send:vote-reply\"\nfor = \"2ms\"\n[cluster]\nmax_append_entries = 1\nsnapshot_every = 8\nkeepalive_read_index = false\n");
    let s = scenario::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.faults[0].when, Some(scenario::Point::AfterSend(scenario::MessageKind::VoteReply)));
    assert_eq!((s.cluster.max_append_entries, s.cluster.snapshot_every, s.cluster.keepalive_read_index), (1, 8, false));
}

#[test]
fn a_delay_needs_its_bound_and_knows_its_keys() {
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\ndelay = { from = \"s1\", to = [\"s2\"] }\n",
        "5:9",
        "missing key `by` in `delay`",
    );
    // A misspelt key is reported, and so is the bound it did not give.
    let error =
        rejected("name = \"x\"\nduration = \"10s\"\n[[fault]]\nat = \"1s\"\ndelay = { from = \"s1\", to = [\"s2\"], bye = \"1s\" }\n");
    assert_has(&error, "5:37", "unknown key `bye` in `delay`; did you mean `by`?");
    assert_has(&error, "5:9", "missing key `by` in `delay`");
}

#[test]
fn a_ttl_the_cluster_would_refuse_is_an_error_not_an_engine_panic() {
    // 1.5 × the longest election timeout (1 s … 2 s) is 3 s: a 2 s lease is
    // refused by every leader, so the file is refused instead.
    let fix = assert_one(
        "name = \"x\"\nduration = \"10s\"\n[cluster]\nelection_timeout = [\"1s\", \"2s\"]\n[[workload]]\nkind = \"lock\"\nclients = 2\nkeys = [\"k\"]\nttl = \"2s\"\n",
        "9:7",
        "`ttl` = 2s is shorter than the cluster's minimum lease TTL, 3s (1.5 × the longest election timeout, 2s)",
    );
    assert_eq!(fix, "use a ttl of at least 3s, or shorten [cluster] election_timeout");
    // The default election timeout (150–300 ms) allows down to 450 ms.
    assert_one(
        "name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"registry\"\nclients = 1\nttl = \"400ms\"\n",
        "6:7",
        "minimum lease TTL, 450ms",
    );
    assert!(parse("name = \"x\"\nduration = \"10s\"\n[[workload]]\nkind = \"registry\"\nclients = 1\nttl = \"450ms\"\n", "t.toml").is_ok());
}

#[test]
fn an_unknown_message_kind_suggests_the_closest() {
    let text = format!("{POINT_BASE}messages = {{ kind = \"vote-replies\", delay = \"300ms\" }}\n");
    let fix = assert_one(&text, "8:21", "unknown message kind `vote-replies`");
    assert!(fix.starts_with("did you mean `vote-reply`?"), "{fix}");
    assert!(fix.contains("keepalive-reply"), "the fix lists every kind: {fix}");
    let text = format!("{POINT_BASE}messages = {{ kind = \"keepalive-rpely\", drop = 0.5 }}\n");
    let fix = assert_one(&text, "8:21", "unknown message kind `keepalive-rpely`");
    assert!(fix.starts_with("did you mean `keepalive-reply`?"), "{fix}");
}

#[test]
fn a_message_fault_does_exactly_one_thing() {
    let text = format!("{POINT_BASE}messages = {{ kind = \"vote-reply\" }}\n");
    assert_one(&text, "8:12", "`messages` says which messages but not what happens to them");
    let text = format!("{POINT_BASE}messages = {{ kind = \"vote-reply\", delay = \"1s\", drop = 0.5 }}\n");
    assert_one(&text, "8:56", "`messages` has two effects, `delay` and `drop`");
    let text = format!("{POINT_BASE}messages = {{ kind = \"vote-reply\", drop = 1.5 }}\n");
    assert_one(&text, "8:42", "drop");
    let text = format!("{POINT_BASE}messages = {{ kind = \"append\", delay = \"300ms\" }}\nwhen = \"timer\"\n");
    assert_one(&text, "9:8", "`when` applies to crash, pause and clock faults, not to `messages`");
}

#[test]
fn a_message_fault_loads_and_writes_back() {
    let text = format!("{POINT_BASE}for = \"2s\"\nmessages = {{ kind = \"append-reply\", duplicate = \"250ms\" }}\n");
    let loaded = parse(&text, "t.toml").expect("a valid message fault");
    let fault = &loaded.faults[0];
    let scenario::FaultAction::Messages(m) = fault.action else { panic!("{fault:?}") };
    assert_eq!((m.kind, m.effect), (scenario::WireKind::AppendReply, scenario::MessageEffect::Duplicate(250_000_000)));
    let again = parse(&scenario::to_toml(&loaded), "t.toml").expect("written back, it loads");
    assert_eq!(again.faults[0].action, fault.action);
}
