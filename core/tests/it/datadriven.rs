//! Core's stories as transcripts: every `testdata/*.txt` file is a list of
//! commands, each followed by `----` and what the cluster did (its trace),
//! in the style of etcd-io/raft's testdata. Reading one top to bottom tells
//! the story; a change in behaviour shows up as a diff of the story.
//!
//! A transcript's first command picks its cluster:
//!   `raft voters=3 seed=1` — the Raft testkit (`leasesim_testkit::RaftCluster`),
//!     driven by hand: `campaign N`, `elect N`, `deliver`, `drop`, `tick N`,
//!     `advance DURATION` (every clock), `propose N CMD`, `isolate N`, `partition 1,2 3`, `heal`, `crash N`,
//!     `restart N`, `status`.
//!   `service servers=3 seed=1` — servers with leases (the service
//!     harness, `service_harness/`), driven in harness time: `run DURATION`,
//!     `grant TTL`, `keepalive LEASE`, `put KEY [lease=LEASE]`, `get KEY`,
//!     `crash N`, `restart N`, `isolate N`, `heal`, `status`.
//!
//! Format: a command line, `----`, then the expected output up to a blank
//! line; lines starting with `#` and blank lines between cases are
//! comments. To accept an intended change, re-bless every transcript:
//! `LEASESIM_BLESS=1 cargo test -p leasesim-core --test it datadriven::`.

use crate::service_harness;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use leasesim_core::raft::{RaftEvent, Role};
use leasesim_core::server::ServerEvent;
use leasesim_core::service::{Op, ServiceEvent};
use leasesim_core::{fmt_secs, NodeId, NS_PER_SEC};
use leasesim_testkit::{RaftCluster, RaftClusterOptions};

// ----- the transcript format -----

/// One command of a transcript and the output it expects.
#[derive(Debug)]
struct Case {
    /// Comments and blank lines before the command, verbatim.
    prefix: Vec<String>,
    /// 1-based line of the command in its file.
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn parse(path: &Path, text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut prefix = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            prefix.push(line.to_string());
            continue;
        }
        let separator = lines.next().map(|(_, l)| l);
        assert_eq!(separator, Some("----"), "{}:{}: `{line}` must be followed by a `----` line", path.display(), n + 2);
        let mut expected = Vec::new();
        while let Some((_, l)) = lines.next_if(|(_, l)| !l.trim().is_empty()) {
            expected.push(l.to_string());
        }
        cases.push(Case { prefix: std::mem::take(&mut prefix), line: n + 1, command: line.to_string(), expected });
    }
    cases
}

/// The transcript with `outputs` in place of what it expected.
fn render(cases: &[Case], outputs: &[Vec<String>]) -> String {
    let mut text = String::new();
    for (case, output) in cases.iter().zip(outputs) {
        for line in &case.prefix {
            writeln!(text, "{line}").unwrap();
        }
        writeln!(text, "{}\n----", case.command).unwrap();
        for line in output {
            writeln!(text, "{line}").unwrap();
        }
    }
    text
}

/// A line diff (longest common subsequence): `-` expected, `+` got.
fn diff(expected: &[String], got: &[String]) -> String {
    let (n, m) = (expected.len(), got.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == got[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && expected[i] == got[j] {
            writeln!(out, "    {}", expected[i]).unwrap();
            (i, j) = (i + 1, j + 1);
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            writeln!(out, "  + {}", got[j]).unwrap();
            j += 1;
        } else {
            writeln!(out, "  - {}", expected[i]).unwrap();
            i += 1;
        }
    }
    out
}

/// A command line: its name, positional arguments and `key=value` ones.
struct Command<'a> {
    name: &'a str,
    args: Vec<&'a str>,
    named: Vec<(&'a str, &'a str)>,
}

impl<'a> Command<'a> {
    fn parse(line: &'a str) -> Self {
        let mut words = line.split_whitespace();
        let name = words.next().expect("a command");
        let (mut args, mut named) = (Vec::new(), Vec::new());
        for word in words {
            match word.split_once('=') {
                Some((key, value)) => named.push((key, value)),
                None => args.push(word),
            }
        }
        Command { name, args, named }
    }

    fn arg(&self, at: usize) -> &'a str {
        self.args.get(at).unwrap_or_else(|| panic!("`{}` needs argument {}", self.name, at + 1))
    }

    fn node(&self, at: usize) -> NodeId {
        self.arg(at).parse().unwrap_or_else(|_| panic!("`{}`: `{}` is not a node id", self.name, self.arg(at)))
    }

    fn named(&self, key: &str) -> Option<&'a str> {
        self.named.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn named_u64(&self, key: &str, default: u64) -> u64 {
        self.named(key).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("`{key}={v}` is not a number")))
    }
}

/// `1s`, `250ms`: the workspace's one duration reader.
fn duration_ns(text: &str) -> u64 {
    leasesim_core::duration::parse_duration(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

// ----- the clusters -----

enum Engine {
    Raft(RaftStory),
    Service(ServiceStory),
}

impl Engine {
    fn new(command: &Command<'_>) -> Self {
        match command.name {
            "raft" => Engine::Raft(RaftStory::new(command)),
            "service" => Engine::Service(ServiceStory::new(command)),
            other => panic!("a transcript starts with `raft` or `service`, not `{other}`"),
        }
    }

    fn run(&mut self, command: &Command<'_>) -> Vec<String> {
        match self {
            Engine::Raft(story) => story.run(command),
            Engine::Service(story) => story.run(command),
        }
    }
}

/// Core's Raft testkit, driven by hand; its output is the testkit's trace.
struct RaftStory {
    cluster: RaftCluster,
    /// Trace lines already shown.
    shown: usize,
    /// Node events already shown.
    events_shown: usize,
}

impl RaftStory {
    fn new(command: &Command<'_>) -> Self {
        let options = RaftClusterOptions::new(command.named_u64("voters", 3) as usize).seed(command.named_u64("seed", 1)).trace(true);
        RaftStory { cluster: RaftCluster::new(options), shown: 0, events_shown: 0 }
    }

    fn run(&mut self, command: &Command<'_>) -> Vec<String> {
        let mut out = Vec::new();
        match command.name {
            "campaign" => self.cluster.fire_timeout(command.node(0)),
            "elect" => {
                self.cluster.elect(command.node(0));
            }
            "deliver" => self.cluster.deliver_all(),
            "drop" => out.push(format!("dropped {}", self.cluster.drop_where(|_| true))),
            "tick" => self.cluster.tick(command.node(0)),
            "advance" => {
                let by_ns = duration_ns(command.arg(0));
                for id in self.cluster.ids() {
                    self.cluster.advance_clock(id, by_ns);
                }
                out.push(format!("every clock moves {} forward", fmt_secs(by_ns)));
            }
            "propose" => {
                let value = command.arg(1).parse().expect("a command is a number");
                match self.cluster.propose(command.node(0), value) {
                    Ok(index) => out.push(format!("appended at index {index}")),
                    Err(e) => out.push(format!("refused: {e:?}")),
                }
            }
            "isolate" => self.cluster.isolate(command.node(0)),
            "partition" => {
                let groups: Vec<Vec<NodeId>> =
                    command.args.iter().map(|g| g.split(',').map(|n| n.parse().expect("a node id")).collect()).collect();
                let groups: Vec<&[NodeId]> = groups.iter().map(Vec::as_slice).collect();
                self.cluster.partition(&groups);
            }
            "heal" => self.cluster.heal(),
            "crash" => self.cluster.crash(command.node(0)),
            "restart" => self.cluster.restart(command.node(0)),
            "status" => {}
            other => panic!("unknown raft command `{other}`"),
        }
        let trace = self.cluster.trace();
        let lines: Vec<&str> = trace.lines().collect();
        // Each trace line starts with the true time; the story shows order.
        out.splice(0..0, lines[self.shown..].iter().map(|l| l.trim_start().split_once(' ').map_or(*l, |(_, rest)| rest).to_string()));
        self.shown = lines.len();
        // The trace tells who came to lead; the events the rest.
        for (id, event) in &self.cluster.events[self.events_shown..] {
            match event {
                RaftEvent::BecameLeader { .. } => {}
                RaftEvent::SteppedDown { term } => out.push(format!("node {id} steps down in term {term}")),
                RaftEvent::ConfigChanged { voters } => out.push(format!("node {id} has voters {voters:?}")),
            }
        }
        self.events_shown = self.cluster.events.len();
        if command.name == "status" {
            out.extend(self.status());
        }
        out
    }

    /// One line per node: role, term, vote, log, commit, applied, and what
    /// its disk holds.
    fn status(&self) -> Vec<String> {
        self.cluster
            .ids()
            .into_iter()
            .map(|id| {
                let disk = &self.cluster.disk(id).persisted.hard_state;
                let on_disk = format!("disk: term {} vote {:?}, log to {}", disk.term, disk.voted_for, self.cluster.disk(id).last_index());
                match self.cluster.try_node(id) {
                    None => format!("node {id}: down; {on_disk}"),
                    Some(n) => format!(
                        "node {id}: {} term {} vote {:?} log {}/{} commit {} applied {}; {on_disk}",
                        role(n.role()),
                        n.term(),
                        n.voted_for(),
                        n.last_index(),
                        n.last_term(),
                        n.commit_index(),
                        self.cluster.state(id).applied_index
                    ),
                }
            })
            .collect()
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::Leader => "leader",
        Role::Candidate => "candidate",
        Role::PreCandidate => "pre-candidate",
        Role::Follower => "follower",
    }
}

/// Servers with leases, in harness time; its output is what the servers
/// decided (elections, grants, keep-alives, expiries) and what the client
/// was answered.
struct ServiceStory {
    cluster: service_harness::ServiceCluster,
    /// Server events already shown.
    shown: usize,
}

/// The one client of a service transcript.
const CLIENT: u64 = 1;

impl ServiceStory {
    fn new(command: &Command<'_>) -> Self {
        let config = service_harness::ServiceClusterConfig::new(command.named_u64("servers", 3), command.named_u64("seed", 1));
        let mut cluster = service_harness::ServiceCluster::new(config);
        cluster.record_events = true;
        cluster.add_manual_client(CLIENT);
        ServiceStory { cluster, shown: 0 }
    }

    fn call(&mut self, op: Op) -> String {
        match self.cluster.call(CLIENT, op, 5 * NS_PER_SEC) {
            Some(answer) => format!("answer: {:?}", answer.body),
            None => "no answer within 5 s".to_string(),
        }
    }

    fn run(&mut self, command: &Command<'_>) -> Vec<String> {
        let mut answer = None;
        match command.name {
            "run" => {
                let until = self.cluster.now_ns + duration_ns(command.arg(0));
                self.cluster.run_until(until);
            }
            "grant" => answer = Some(self.call(Op::LeaseGrant { ttl_ns: duration_ns(command.arg(0)), id: None })),
            "keepalive" => answer = Some(self.call(Op::LeaseKeepAlive { lease: command.arg(0).parse().expect("a lease id") })),
            "put" => {
                let lease = command.named("lease").map(|l| l.parse().expect("a lease id"));
                let key = command.arg(0).to_string();
                answer = Some(self.call(Op::Put { value: format!("{key}-value"), key, lease }));
            }
            "get" => answer = Some(self.call(Op::Get { key: command.arg(0).to_string() })),
            "crash" => self.cluster.crash(command.node(0)),
            "restart" => self.cluster.restart(command.node(0)),
            "isolate" => self.cluster.isolate(command.node(0), true),
            "heal" => self.cluster.heal(),
            "status" => {}
            other => panic!("unknown service command `{other}`"),
        }
        let mut out: Vec<String> =
            self.cluster.events[self.shown..].iter().filter_map(|(at, server, event)| story_line(*at, *server, event)).collect();
        self.shown = self.cluster.events.len();
        out.extend(answer);
        if command.name == "status" {
            out.push(format!("{}: leader {:?}", fmt_secs(self.cluster.now_ns), self.cluster.leader()));
            for (id, sm) in self.cluster.state_machines() {
                let leases: Vec<u64> = sm.leases().iter().map(|lease| lease.id).collect();
                let keys: Vec<String> = sm.kv().iter().map(|(key, _)| String::from_utf8_lossy(key).into_owned()).collect();
                out.push(format!("s{id}: leases {leases:?} keys {keys:?}"));
            }
        }
        out
    }
}

/// How a server event reads in a story; `None` for bookkeeping (every
/// applied entry, deduplication, snapshots).
fn story_line(at_ns: u64, server: NodeId, event: &ServerEvent) -> Option<String> {
    let what = match event {
        ServerEvent::Applied { .. }
        | ServerEvent::Service { event: ServiceEvent::RequestApplied { .. }, .. }
        | ServerEvent::Service { event: ServiceEvent::RequestDeduplicated { .. }, .. }
        | ServerEvent::SnapshotInstalled { .. }
        | ServerEvent::CheckpointProposed { .. } => return None,
        ServerEvent::Service { index, event } => format!("{event:?} at index {index}"),
        event => format!("{event:?}"),
    };
    Some(format!("{} s{server} {what}", fmt_secs(at_ns)))
}

// ----- the test -----

fn transcripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    files.sort();
    files
}

/// Runs one transcript; returns its mismatches as readable diffs (or
/// rewrites it when blessing: the test's own file, not core's IO).
#[allow(clippy::disallowed_methods)]
fn run_transcript(path: &Path, bless: bool) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases = parse(path, &text);
    let first = cases.first().unwrap_or_else(|| panic!("{} has no commands", path.display()));
    let mut engine = Engine::new(&Command::parse(&first.command));
    let mut outputs = vec![Vec::new()];
    for case in &cases[1..] {
        outputs.push(engine.run(&Command::parse(&case.command)));
    }
    if bless {
        std::fs::write(path, render(&cases, &outputs)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return Vec::new();
    }
    cases
        .iter()
        .zip(&outputs)
        .filter(|(case, output)| case.expected != **output)
        .map(|(case, output)| {
            format!(
                "{}:{}: `{}` did something else (- expected, + got):\n{}",
                path.display(),
                case.line,
                case.command,
                diff(&case.expected, output)
            )
        })
        .collect()
}

#[test]
fn transcripts_tell_what_the_cluster_does() {
    let bless = std::env::var_os("LEASESIM_BLESS").is_some();
    let files = transcripts();
    assert!(files.len() >= 4, "core/tests/testdata holds the transcripts");
    let mismatches: Vec<String> = files.iter().flat_map(|path| run_transcript(path, bless)).collect();
    assert!(
        mismatches.is_empty(),
        "{}\n(LEASESIM_BLESS=1 cargo test -p leasesim-core --test it datadriven:: rewrites the transcripts)",
        mismatches.join("\n")
    );
}

#[test]
fn a_diff_shows_what_changed() {
    let lines = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert_eq!(diff(&lines("a b c"), &lines("a x c")), "    a\n  + x\n  - b\n    c\n");
}
