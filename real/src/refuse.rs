//! What a target cannot play, refused before anything starts, at the line
//! of the file a person has to change and with the reason. A scenario is
//! played whole or not at all: a fault or workload the runner silently left
//! out would turn "no violation" into a claim nobody tested.
//!
//! Differences that belong to the target itself and that no file can
//! change (etcd draws its election timeout in [t, 2t], loopback has its own
//! latency) are not refusals: they are printed as notes with the outcome.

use leasesim_core::duration::format_duration;
use leasesim_core::ExpiryStrategy;
use leasesim_scenario::{
    Diagnostic, FaultAction, Location, Process, Scenario, ScenarioError, Selector, WorkloadKind, DEFAULT_MAX_APPEND_ENTRIES,
    DEFAULT_MAX_IN_FLIGHT_APPENDS,
};

use leasesim_node::faults::aimed::FrameKind;

use crate::sites::Sites;
use crate::Target;

/// Why the simulator's spares and membership changes cannot be played on
/// etcd 3.4 (`membership.rs` says how they are played on leasesim-node).
const ETCD_MEMBERSHIP: &str = "the simulator's spare runs from the start, passive, and a removed server keeps running and can be \
     added again; an etcd member can only be started after `member add` (which picks its id), and a removed one stops for \
     good (its data directory can never rejoin)";

/// Collects refusals and notes for one scenario on one target.
struct Check<'a> {
    target: Target,
    sites: &'a Sites,
    /// The seed whose `[chaos]` draw the scenario carries, if it had one:
    /// drawn faults have no line of their own and are refused at `[chaos]`.
    drawn_for: Option<u64>,
    refusals: Vec<Diagnostic>,
    notes: Vec<String>,
}

impl Check<'_> {
    /// Where a fault is written: its own line, or `[chaos]` for one drawn
    /// there (line 0).
    fn line_of(&self, fault: &leasesim_scenario::ScheduledFault) -> Option<usize> {
        if fault.line == 0 && self.drawn_for.is_some() {
            self.sites.chaos
        } else {
            Some(fault.line)
        }
    }

    fn refuse(&mut self, line: Option<usize>, message: String, fix: &str) {
        let location = line.map(|line| Location { line, col: 1 });
        let message = match self.drawn_for {
            Some(seed) if line.is_some() && line == self.sites.chaos => format!("(drawn for seed {seed}) {message}"),
            _ => message,
        };
        let message = format!("leasesim-real --target {} cannot play this: {message}", self.target.name());
        self.refusals.push(Diagnostic { location, message, fix: fix.to_string(), snippet: None });
    }
}

/// The notes to print with the outcome, or every refusal as one error
/// (displayed like the scenario crate's `file:line:col` errors).
///
/// `drawn_for`: the seed, when `scenario` is a chaos scenario's explicit
/// form for it (`chaos_draw::explicit`).
pub fn check(scenario: &Scenario, sites: &Sites, target: Target, drawn_for: Option<u64>) -> Result<Vec<String>, ScenarioError> {
    let mut c = Check { target, sites, drawn_for, refusals: Vec::new(), notes: Vec::new() };
    cluster(&mut c, scenario);
    workloads(&mut c, scenario);
    for fault in &scenario.faults {
        self::fault(&mut c, fault);
    }
    if let Some(seed) = drawn_for {
        c.notes.push(format!("[chaos]: played the {} faults the simulator draws for seed {seed}", scenario.faults.len()));
    }
    if c.refusals.is_empty() {
        Ok(c.notes)
    } else {
        Err(ScenarioError { file: scenario.path.display().to_string(), diagnostics: c.refusals })
    }
}

fn cluster(c: &mut Check<'_>, s: &Scenario) {
    let spec = &s.cluster;
    let line = c.sites.cluster;
    let (lo_ns, hi_ns) = spec.election_timeout_ns;
    if c.target == Target::Etcd {
        c.notes.push(etcd_election_note(lo_ns, hi_ns, spec.heartbeat_ns));
    } else if hi_ns != 2 * lo_ns {
        c.notes.push(format!(
            "election timeout: the members draw in [{}, {}] (the file says [{}, {}]; they take one value t and draw in [t, 2t])",
            format_duration(lo_ns),
            format_duration(2 * lo_ns),
            format_duration(lo_ns),
            format_duration(hi_ns)
        ));
    }
    if !lo_ns.is_multiple_of(1_000_000) || !spec.heartbeat_ns.is_multiple_of(1_000_000) {
        c.refuse(line, "heartbeat and election timeout must be whole milliseconds (the members' flags are in ms)".into(), "round them");
    }
    if s.network.duplicate > 0.0 && c.target == Target::Etcd {
        let why = "`duplicate`: etcd dials the peer URLs its members advertise, so no proxy can sit on one link";
        c.refuse(c.sites.network, why.into(), "remove `duplicate`, or use --target node");
    } else if s.network.duplicate > 0.0 {
        c.notes.push(format!(
            "[network] duplicate = {}: played on the members' Raft messages only; clients and forwarded requests ride TCP streams, which never deliver a message twice",
            s.network.duplicate
        ));
    }
    if spec.lease_expiry == ExpiryStrategy::WriterClock && c.target == Target::Node {
        c.notes.push(
            "lease_expiry = \"writer-clock\": the clients speak etcd's lease API, which carries no writer wall stamp, so every \
             lease is measured by the leader (as a plain keep-alive is); the clients' wall clocks change nothing they send"
                .into(),
        );
    }
    if spec.checkpoint_interval_ns.is_some() {
        // leasesim-node takes no checkpoint flag yet, and etcd 3.4's
        // checkpoints are behind an experimental flag the runner does not
        // pass: playing the file without them would test something else.
        let why = "`checkpoint_interval`: lease checkpoints are a simulator knob so far (no member flag carries them)";
        c.refuse(line, why.into(), "remove `checkpoint_interval`, or run the file in the simulator");
    }
    if spec.lease_reads && c.target == Target::Etcd {
        // etcd 3.4 confirms every linearizable read by its ReadIndex
        // (its lease-based reads are behind no flag the runner could
        // pass): played without them, the file would test the read index.
        let why = "`lease_reads`: etcd 3.4 serves linearizable reads through its read index only, never from a leader lease";
        c.refuse(line, why.into(), "remove `lease_reads`, or use --target node (leasesim-node --lease-reads)");
    }
    if s.clocks.contains_key(&Process::Store) {
        // As in the simulator: the data store decides nothing by its clock.
        c.notes.push("[clocks] for the store: the data store reads no clock (as in the simulator), so its skew changes nothing".into());
    }
    if c.target == Target::Etcd {
        etcd_cluster(c, s);
    }
}

fn etcd_cluster(c: &mut Check<'_>, s: &Scenario) {
    let spec = &s.cluster;
    let line = c.sites.cluster;
    if spec.spares > 0 {
        c.refuse(line, format!("spare servers: {ETCD_MEMBERSHIP}"), "remove `spares`, or use --target node");
    }
    if spec.max_append_entries != DEFAULT_MAX_APPEND_ENTRIES || spec.max_in_flight_appends != DEFAULT_MAX_IN_FLIGHT_APPENDS {
        let why = "`max_append_entries` / `max_in_flight_appends`: etcd 3.4 sizes its AppendEntries by bytes and takes no flag for them";
        c.refuse(line, why.into(), "remove them, or use --target node");
    }
    if 5 * spec.heartbeat_ns > spec.election_timeout_ns.0 {
        let why = format!(
            "etcd refuses an election timeout ({}) under 5 heartbeats ({})",
            format_duration(spec.election_timeout_ns.0),
            format_duration(5 * spec.heartbeat_ns)
        );
        c.refuse(line, why, "raise `election_timeout` to at least five times `heartbeat`");
    }
    if spec.lease_expiry != ExpiryStrategy::LeaderMonotonic {
        c.refuse(line, "etcd expires leases on its leader's monotonic clock only".into(), "use lease_expiry = \"leader-monotonic\"");
    }
    if let Some((process, _)) = s.clocks.iter().find(|(p, _)| matches!(p, Process::Server(_))) {
        let why = format!("[clocks] for {process}: etcd (Go) reads the kernel's clock directly, nothing can skew it");
        // Without a [clocks] table, the drift was drawn by [chaos].
        c.refuse(c.sites.clocks.or(c.sites.chaos), why, "give clock specs to clients only (or `drift = 0` under [chaos])");
    }
    // The data store's own bug is the runner's process whatever the target.
    if s.bugs.enabled().iter().any(|bug| *bug != crate::cluster::STORE_BUG) {
        c.refuse(c.sites.bugs, "planted bugs live in leasesim's engine, not in etcd".into(), "remove `bugs`, or use --target node");
    }
    if c.sites.network.is_some() && (s.network.loss > 0.0 || s.network.latency_ns != (1_000_000, 10_000_000)) {
        let why = "[network] latency or loss: etcd dials the peer URLs its members advertise, so no proxy can sit on one link";
        c.refuse(c.sites.network, why.into(), "remove [network], or use --target node");
    }
    c.notes.push("keep-alives: etcd's lessor answers at once, without a read-index round".into());
    if s.workloads.iter().any(|w| matches!(w.kind, WorkloadKind::Watch(_))) {
        let why = "watch-delivery: judged for order, uniqueness and values against the history etcd gives after the run; \
                   not for completeness (a change applied before the settle phase must reach every watch), which needs \
                   the members' applied entries";
        c.notes.push(why.into());
    }
}

/// How the file's election timeout range maps onto etcd's one flag: etcd's
/// raft counts heartbeat ticks and draws its timeout in [T, 2T) ticks
/// (`resetRandomizedElectionTimeout`: T + rand(T)), T being
/// `--election-timeout` / `--heartbeat-interval`; the runner passes the
/// range's low end as `--election-timeout`.
fn etcd_election_note(lo_ns: u64, hi_ns: u64, heartbeat_ns: u64) -> String {
    let ticks = lo_ns / heartbeat_ns.max(1);
    let top_ns = (2 * ticks).saturating_sub(1) * heartbeat_ns;
    format!(
        "election timeout: etcd takes --election-timeout {} and draws in [{}, {}] in steps of one heartbeat ({}; {ticks} to {} ticks); the file says [{}, {}]",
        format_duration(lo_ns),
        format_duration(ticks * heartbeat_ns),
        format_duration(top_ns),
        format_duration(heartbeat_ns),
        (2 * ticks).saturating_sub(1),
        format_duration(lo_ns),
        format_duration(hi_ns)
    )
}

fn workloads(c: &mut Check<'_>, s: &Scenario) {
    for (i, workload) in s.workloads.iter().enumerate() {
        let line = c.sites.workloads.get(i).copied();
        if let Some(ttl_ns) = workload.kind.lease_ttl_ns().filter(|ttl_ns| !ttl_ns.is_multiple_of(1_000_000_000)) {
            let why = format!("`ttl` = {}: the etcd API grants leases in whole seconds", format_duration(ttl_ns));
            c.refuse(line, why, "use a TTL of whole seconds (\"1s\", \"2s\"…)");
        }
    }
}

fn fault(c: &mut Check<'_>, fault: &leasesim_scenario::ScheduledFault) {
    let line = c.line_of(fault);
    let etcd = c.target == Target::Etcd;
    if let Some(point) = fault.when {
        crash_point(c, fault, point);
    }
    let clientish = crate::routes::is_clientish;
    match &fault.action {
        // The data store is leasesim-node's own process whatever the target:
        // SIGKILL and a restart on its files, or SIGSTOP/SIGCONT.
        FaultAction::Crash(s) | FaultAction::Pause(s) if matches!(s, Selector::Store) => {}
        FaultAction::Crash(_) | FaultAction::Pause(_) | FaultAction::Loss(_) if !etcd => {}
        FaultAction::Crash(_) | FaultAction::Pause(_) => {}
        // A client's links are cut on its own routes (`routes.rs`).
        FaultAction::Partition(_) | FaultAction::Isolate(_) | FaultAction::Block { .. } if !etcd => {}
        FaultAction::Delay { from, to, .. } if !etcd && !clientish(from) && !to.iter().any(clientish) => {}
        FaultAction::Delay { .. } if !etcd => {
            // A client's connection is one byte stream, which a relay can
            // only slow in order; the simulator draws each message's delay
            // apart, so its messages overtake each other.
            let why = "a delay on a client's or the store's link: a client's connection is one byte stream, slowed only in order, \
                       while the simulator delays each message apart (they overtake each other)";
            c.refuse(line, why.into(), "delay links between servers only");
        }
        FaultAction::Partition(_)
        | FaultAction::Isolate(_)
        | FaultAction::Block { .. }
        | FaultAction::Delay { .. }
        | FaultAction::Loss(_) => {
            let why = format!("`{}`: etcd dials the peer URLs its members advertise, so no proxy can sit on one link", fault.action.name());
            c.refuse(line, why, "use --target node for network faults");
        }
        FaultAction::Clock { target, .. } if etcd && !clientish(target) => {
            let why = format!("a clock fault on {target}: etcd (Go) reads the kernel's clock directly, and nothing here can skew it");
            c.refuse(line, why, "aim clock faults at clients, or use --target node");
        }
        FaultAction::Clock { target: Selector::Store, .. } => {
            c.notes.push(format!("line {}: a clock fault on the store changes nothing (the data store reads no clock)", fault.line));
        }
        FaultAction::Clock { .. } => {}
        FaultAction::Add(_) | FaultAction::Remove(_) if etcd => {
            c.refuse(line, format!("a membership change: {ETCD_MEMBERSHIP}"), "remove the add/remove fault, or use --target node");
        }
        FaultAction::Add(_) | FaultAction::Remove(_) => {}
        FaultAction::Messages(_) if etcd => {
            let why = "`messages`: etcd dials the peer URLs its members advertise, so no proxy can read a message's kind";
            c.refuse(line, why.into(), "use --target node for message faults");
        }
        FaultAction::Messages(m) if FrameKind::parse(m.kind.name()).is_some() => {}
        FaultAction::Messages(m) => match crate::clients::aimed::unplayable(m) {
            Some(why) => c.refuse(line, why, "aim it at a Raft kind, or at one the runner's clients play"),
            None => c.notes.push(format!(
                "line {}: {} {} is played on the runner's side of its clients (held or lost before the client acts on it)",
                fault.line,
                m.kind,
                m.effect.key()
            )),
        },
    }
}

/// A fault waiting for a point: leasesim-node arms crash, pause and clock
/// points as failpoints (`crash_points.rs`); a client's crash or pause at
/// `after-send:request` is seen on its routes (`routes.rs`), and its
/// crash, pause or clock fault at `timer` where its own timers end
/// (`timer_points.rs`); nothing else can be.
fn crash_point(c: &mut Check<'_>, fault: &leasesim_scenario::ScheduledFault, point: leasesim_scenario::Point) {
    let line = c.line_of(fault);
    let fix = "remove `when` (the fault then fires at `at`)";
    let crash = matches!(fault.action, FaultAction::Crash(_));
    let selector = match &fault.action {
        FaultAction::Crash(s) | FaultAction::Pause(s) | FaultAction::Clock { target: s, .. } => Some(s),
        _ => None,
    };
    // The loader lets `when` only on crashes, pauses and clock faults, and
    // leasesim-node's failpoints carry out all three (`crash_points::arm`).
    let store = matches!(
        fault.action,
        FaultAction::Crash(Selector::Store) | FaultAction::Pause(Selector::Store) | FaultAction::Clock { target: Selector::Store, .. }
    );
    if store {
        c.refuse(line, format!("`when = \"{point}\"` on the data store: it has no failpoints"), fix);
    } else if point == crate::crash_points::CLIENT_POINT && crash {
        // The clients' routes see it, whatever the members are (`routes.rs`).
        c.notes.push(format!(
            "{}: {point} is seen on the client's routes: it is cut off once a whole request has left it, and its task is killed within 10 ms",
            crate::schedule::origin(fault)
        ));
    } else if point == crate::crash_points::CLIENT_POINT && matches!(fault.action, FaultAction::Pause(_)) {
        // The route closes the client's gate there (`routes.rs`, `gate.rs`).
        c.notes.push(format!(
            "{}: a pause at {point} is carried out by the client's route: its gate closes once a whole request has left it, \
             what is answered meanwhile is read only after the resume, and a request another of its tasks was already writing still leaves",
            crate::schedule::origin(fault)
        ));
    } else if point == crate::crash_points::CLIENT_POINT {
        let why = format!(
            "`when = \"{point}\"` on a {}: the runner carries out a client's point as a crash or a pause only (on its routes)",
            fault.action.name()
        );
        c.refuse(line, why, fix);
    } else if point == leasesim_scenario::Point::Timer && selector.is_some_and(crate::routes::is_clientish) {
        // The clients' own timers end at the point (`timer_points.rs`):
        // the runner's clients, whatever the members are.
        let holder = matches!(selector, Some(Selector::Holder(_)));
        c.notes.push(format!(
            "{}: a {} of a client at {point} is played where the runner's client's timer fires (the end of a sleep on its own \
             clock, a watch's check), not where a request times out{}",
            crate::schedule::origin(fault),
            fault.action.name(),
            if holder { "; its holder is resolved when it is armed" } else { "" }
        ));
    } else if c.target == Target::Etcd {
        c.refuse(line, format!("`when = \"{point}\"`: Debian's etcd is built without gofail failpoints"), fix);
    } else if matches!(
        fault.action,
        FaultAction::Crash(Selector::Leader | Selector::Follower)
            | FaultAction::Pause(Selector::Leader | Selector::Follower)
            | FaultAction::Clock { target: Selector::Leader | Selector::Follower, .. }
    ) {
        // `sN` names one member either way, and `random-server` waits in
        // every member for the first to reach it, as in the simulator.
        c.notes.push(format!(
            "{}: the {} point's selector is resolved when it is armed (at `at`), not when a process reaches {point}",
            crate::schedule::origin(fault),
            fault.action.name()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `check` says of `text` on `target`.
    fn checked(text: &str, target: Target) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clocks.toml");
        std::fs::write(&path, text).unwrap();
        let scenario = leasesim_scenario::load(&path).unwrap();
        check(&scenario, &Sites::find(text), target, None).map_err(|e| e.to_string())
    }

    #[test]
    fn client_clocks_are_played_on_both_targets_and_server_clocks_only_on_node() {
        let clients =
            "name = \"c\"\nduration = \"4s\"\n[cluster]\nservers = 3\nheartbeat = \"30ms\"\nelection_timeout = [\"150ms\", \"300ms\"]\n\
                       [clocks.c1]\ndrift = -0.5\n[[workload]]\nkind = \"registry\"\nclients = 2\nttl = \"2s\"\n\
                       [[fault]]\nat = \"1s\"\nclock = \"c2\"\njump = \"-5s\"\n";
        assert!(checked(clients, Target::Node).is_ok());
        assert!(checked(clients, Target::Etcd).is_ok(), "the clients' clocks are the runner's, on etcd too");
        let servers = clients.replace("[clocks.c1]", "[clocks.s1]").replace("clock = \"c2\"", "clock = \"leader\"");
        assert!(checked(&servers, Target::Node).is_ok());
        let refused = checked(&servers, Target::Etcd).unwrap_err();
        assert!(refused.contains(":7:1:") && refused.contains("[clocks] for s1: etcd (Go)"), "{refused}");
        assert!(refused.contains(":13:1:") && refused.contains("a clock fault on leader: etcd (Go)"), "{refused}");
    }

    #[test]
    fn lease_checkpoints_are_refused_on_both_targets_and_lease_reads_on_etcd_at_the_cluster_line() {
        let text =
            "name = \"c\"\nduration = \"4s\"\n[cluster]\nservers = 3\nheartbeat = \"30ms\"\nelection_timeout = [\"150ms\", \"300ms\"]\n\
                    [[workload]]\nkind = \"registry\"\nclients = 2\nttl = \"2s\"\n";
        assert!(checked(text, Target::Node).is_ok());
        let with = |line: &str| text.replace("servers = 3\n", &format!("servers = 3\n{line}"));
        let checkpoints = with("checkpoint_interval = \"250ms\"\n");
        for target in [Target::Node, Target::Etcd] {
            let refused = checked(&checkpoints, target).unwrap_err();
            assert!(refused.contains(":3:1:") && refused.contains("`checkpoint_interval`"), "{refused}");
        }
        let lease_reads = with("lease_reads = true\ndrift_bound = 0.1\n");
        assert!(checked(&lease_reads, Target::Node).is_ok(), "leasesim-node plays them (--lease-reads)");
        let refused = checked(&lease_reads, Target::Etcd).unwrap_err();
        assert!(refused.contains(":3:1:") && refused.contains("`lease_reads`: etcd 3.4 serves linearizable reads"), "{refused}");
    }

    #[test]
    fn etcds_election_timeout_counts_whole_heartbeat_ticks_from_t_to_2t() {
        let ms = 1_000_000;
        let note = etcd_election_note(150 * ms, 300 * ms, 30 * ms);
        assert!(note.contains("--election-timeout 150ms and draws in [150ms, 270ms]"), "{note}");
        assert!(note.contains("5 to 9 ticks") && note.ends_with("the file says [150ms, 300ms]"), "{note}");
        // etcd divides whole milliseconds: 150 ms of 40 ms ticks is 3 ticks.
        let note = etcd_election_note(150 * ms, 300 * ms, 40 * ms);
        assert!(note.contains("draws in [120ms, 200ms]") && note.contains("3 to 5 ticks"), "{note}");
    }

    #[test]
    fn kv_clients_with_several_operations_open_are_played_on_both_targets() {
        let text =
            "name = \"c\"\nduration = \"4s\"\n[cluster]\nservers = 3\nheartbeat = \"30ms\"\nelection_timeout = [\"150ms\", \"300ms\"]\n\
                    [[workload]]\nkind = \"kv\"\nclients = 2\nkeys = 3\nin_flight = 4\n";
        assert!(checked(text, Target::Node).is_ok(), "{:?}", checked(text, Target::Node));
        assert!(checked(text, Target::Etcd).is_ok(), "{:?}", checked(text, Target::Etcd));
    }

    #[test]
    fn a_pause_at_a_members_point_is_played_on_node_and_what_no_failpoint_does_is_refused_at_its_line() {
        let text =
            "name = \"c\"\nduration = \"4s\"\n[cluster]\nservers = 3\nheartbeat = \"30ms\"\nelection_timeout = [\"150ms\", \"300ms\"]\n\
                    [[workload]]\nkind = \"registry\"\nclients = 2\nttl = \"2s\"\n\
                    [[fault]]\nat = \"1s\"\npause = \"random-server\"\nwhen = \"after-sync\"\nfor = \"500ms\"\n";
        assert!(checked(text, Target::Node).is_ok(), "{:?}", checked(text, Target::Node));
        let refused = checked(text, Target::Etcd).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("built without gofail failpoints"), "{refused}");
        let leader = text.replace("random-server", "leader");
        let notes = checked(&leader, Target::Node).expect("played");
        assert!(notes.iter().any(|n| n.contains("the pause point's selector is resolved when it is armed")), "{notes:?}");
        // The store has no failpoints; a client's point is seen only as a
        // crash; a clock fault at a point no failpoint carries out.
        let store = text.replace("random-server", "store").replace("after-sync", "timer");
        let refused = checked(&store, Target::Node).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("on the data store: it has no failpoints"), "{refused}");
        // A pause at a client's point is played (`a_pause_at_a_clients_point…`).
        // A clock fault at a member's point is the member's own change.
        let clock = text
            .replace("pause = \"random-server\"", "clock = \"s1\"\njump = \"1s\"")
            .replace("after-sync", "timer")
            .replace("for = \"500ms\"\n", "");
        assert!(checked(&clock, Target::Node).is_ok(), "{:?}", checked(&clock, Target::Node));
        let refused = checked(&clock, Target::Etcd).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("built without gofail failpoints"), "{refused}");
        let refused = checked(&clock.replace("clock = \"s1\"", "clock = \"store\""), Target::Node).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("on the data store: it has no failpoints"), "{refused}");
    }

    #[test]
    fn a_pause_at_a_clients_point_is_played_on_both_targets_and_a_clock_fault_there_is_refused_but_played_at_its_timer() {
        let text =
            "name = \"c\"\nduration = \"4s\"\n[cluster]\nservers = 3\nheartbeat = \"30ms\"\nelection_timeout = [\"150ms\", \"300ms\"]\n\
                    [[workload]]\nkind = \"registry\"\nclients = 2\nttl = \"2s\"\n\
                    [[fault]]\nat = \"1s\"\npause = \"random-client\"\nwhen = \"after-send:request\"\nfor = \"500ms\"\n";
        // The clients and their routes are the runner's whatever the members are.
        for target in [Target::Node, Target::Etcd] {
            let notes = checked(text, target).unwrap_or_else(|e| panic!("{target:?}: {e}"));
            assert!(
                notes.iter().any(|n| n.starts_with("line 11: a pause at after-send:request is carried out by the client's route")),
                "{notes:?}"
            );
            let one = text.replace("random-client", "c2");
            assert!(checked(&one, target).is_ok(), "{target:?}: {:?}", checked(&one, target));
        }
        let clock = text.replace("pause = \"random-client\"", "clock = \"c1\"\njump = \"1s\"").replace("for = \"500ms\"\n", "");
        let refused = checked(&clock, Target::Node).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("a client's point as a crash or a pause only"), "{refused}");
        // A client at its timer: played on both targets, a crash, a pause
        // or a clock fault (the clients and their clocks are the runner's).
        let timer = text.replace("after-send:request", "timer");
        let clock_at_timer = clock.replace("after-send:request", "timer");
        let crash_at_timer = timer.replace("pause = \"random-client\"", "crash = \"c2\"");
        for target in [Target::Node, Target::Etcd] {
            for (file, verb) in [(&timer, "pause"), (&clock_at_timer, "clock"), (&crash_at_timer, "crash")] {
                let notes = checked(file, target).unwrap_or_else(|e| panic!("{target:?} {verb}: {e}"));
                let said = format!("line 11: a {verb} of a client at timer is played where the runner's client's timer fires");
                assert!(notes.iter().any(|n| n.starts_with(&said)), "{notes:?}");
            }
        }
        // The store still has no failpoints, a pause or not.
        let store = text.replace("random-client", "store");
        let refused = checked(&store, Target::Node).unwrap_err();
        assert!(refused.contains(":11:1:") && refused.contains("on the data store: it has no failpoints"), "{refused}");
    }
}
