//! What a run reached, as a set of coverage features read from its
//! observations (the judge's vocabulary), so the guided hunt can tell a run
//! that did something new from one that repeated what the corpus already
//! holds. Nothing here looks inside the engine: the features come from what
//! servers and clients report, so `core` stays pure and unchanged.
//!
//! The features, and why each (docs: reports/hunt.md, "Guided search"):
//! - `raft`: a server's previous Raft event and this one, with how far the
//!   term moved (0, 1, 2, 3+). Bugs of elections and commitment live in
//!   unusual successions — deposed in the term it won, leader again two
//!   terms on — that a count of elections does not tell apart.
//! - `fault`: a crash, pause, restart or resume, by whom it hit: a leader,
//!   a follower, or a client that believed it held a lock. The same crash
//!   means a different run depending on the role it hits.
//! - `service`: a lease or lock transition a server applied, whether it
//!   led and whether its term moved since its previous one. Lease bugs show
//!   when a lease changes state across a change of leader.
//! - `client`: a client's previous observation and this one (a lease's and
//!   a lock's life as the client saw it: acked, refused, belief lapsed…).
//! - `across`: a client's observation with how many leader changes
//!   happened since its previous one (0, 1, 2+): the answers and refusals a
//!   client gets across a change of term, the nearest the observations come
//!   to "messages delivered across a term change" (the wire itself is not
//!   observed).
//!
//! - `near`: a fault, a lease or lock transition a server applied, or a
//!   client's belief starting or ending, with how long after the latest
//!   change of leader it came (under 100 ms, 300 ms, 1 s, later, or before
//!   any leader): for a transition a leader applied, how long after it
//!   itself took office. The other families say *that* a crash hit a
//!   follower or a lease was revoked after a change of leader, not *how
//!   soon*; the bugs the random hunt finds slowest need the fault inside an
//!   election's aftermath (a voter crashing before it persisted its vote, a
//!   lease expiring on a leader that has just taken office, a new leader
//!   crashing with entries of an older term uncommitted), and the buckets
//!   give the search a gradient towards that window. The limits span the
//!   chaos scenarios' election timeouts (100–200 ms) up to their lease TTLs
//!   (1 s and more).
//!
//! Counts are bucketed only where repetition is the point (`raft`'s term
//! steps); elsewhere a feature is reached or not, which keeps the corpus
//! small enough that a budget of a few hundred runs still mutates each
//! entry several times.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_core::raft::RaftEvent;
use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use leasesim_judge::observe::{BeliefEnd, Event, Obs};
use leasesim_judge::vocab::Proc;

/// One thing a run reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Feature {
    pub family: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    pub bucket: u8,
}

/// The features of one run, from its observations in time order.
pub fn features(obs: &[Obs]) -> BTreeSet<Feature> {
    let mut walk = Walk::default();
    for o in obs {
        walk.observe(o);
    }
    walk.found
}

/// What the walk over a run remembers between observations.
#[derive(Default)]
struct Walk {
    found: BTreeSet<Feature>,
    /// Each server's last Raft event and the term it named.
    raft: BTreeMap<u64, (&'static str, u64)>,
    /// Servers that lead now (by their own last Raft event).
    leading: BTreeSet<u64>,
    /// The term each server named when it last applied a service event.
    service_term: BTreeMap<u64, u64>,
    /// Leader changes (any server becoming leader) so far.
    elections: u64,
    /// Each client's last observation and the elections count then.
    client: BTreeMap<u64, (&'static str, u64)>,
    /// Clients that believe they hold some lock.
    believing: BTreeSet<u64>,
    /// When some server last became leader.
    last_election_ns: Option<u64>,
    /// When each server that leads now took office.
    led_since_ns: BTreeMap<u64, u64>,
    /// The observation being walked's time.
    now_ns: u64,
}

impl Walk {
    fn add(&mut self, family: &'static str, from: &'static str, to: &'static str, bucket: u8) {
        self.found.insert(Feature { family, from, to, bucket });
    }

    /// How long ago `since_ns` was, as a `near` bucket (4: never).
    fn since(&self, since_ns: Option<u64>) -> u8 {
        let Some(since_ns) = since_ns else { return 4 };
        match self.now_ns.saturating_sub(since_ns) / 1_000_000 {
            0..100 => 0,
            100..300 => 1,
            300..1000 => 2,
            _ => 3,
        }
    }

    fn observe(&mut self, o: &Obs) {
        self.now_ns = o.at_ns;
        match (&o.proc, &o.event) {
            (Proc::Server(s), Event::Server { event: ServerEvent::Raft(r) }) => self.raft_event(*s, r),
            (Proc::Server(s), Event::Server { event: ServerEvent::Service { event, .. } }) => self.service_event(*s, event),
            (Proc::Server(s), e) if lifecycle(e).is_some() => {
                let role = if self.leading.contains(s) { "leader" } else { "server" };
                self.add("fault", lifecycle(e).unwrap_or_default(), role, 0);
                self.add("near", lifecycle(e).unwrap_or_default(), role, self.since(self.last_election_ns));
                if matches!(e, Event::Crashed) {
                    self.leading.remove(s);
                    self.led_since_ns.remove(s);
                }
            }
            (Proc::Client(c), e) => self.client_event(*c, e),
            _ => {}
        }
    }

    fn raft_event(&mut self, server: u64, event: &RaftEvent) {
        let (kind, term) = match event {
            RaftEvent::BecameLeader { term } => ("became-leader", *term),
            RaftEvent::SteppedDown { term } => ("stepped-down", *term),
            RaftEvent::ConfigChanged { .. } => ("config-changed", self.raft.get(&server).map_or(0, |r| r.1)),
        };
        let (previous, previous_term) = self.raft.get(&server).copied().unwrap_or(("start", 0));
        self.add("raft", previous, kind, term.saturating_sub(previous_term).min(3) as u8);
        self.raft.insert(server, (kind, term));
        match event {
            RaftEvent::BecameLeader { .. } => {
                self.leading.insert(server);
                self.elections += 1;
                self.last_election_ns = Some(self.now_ns);
                self.led_since_ns.insert(server, self.now_ns);
            }
            RaftEvent::SteppedDown { .. } => {
                self.leading.remove(&server);
                self.led_since_ns.remove(&server);
            }
            RaftEvent::ConfigChanged { .. } => {}
        }
    }

    fn service_event(&mut self, server: u64, event: &ServiceEvent) {
        let kind = service_kind(event);
        if matches!(kind, "request-applied" | "request-deduplicated") {
            return;
        }
        let term = self.raft.get(&server).map_or(0, |r| r.1);
        let moved = self.service_term.insert(server, term).is_some_and(|t| t != term);
        let role = if self.leading.contains(&server) { "leader" } else { "follower" };
        self.add("service", role, kind, u8::from(moved));
        let since_ns = self.led_since_ns.get(&server).copied().or(self.last_election_ns);
        self.add("near", role, kind, self.since(since_ns));
    }

    fn client_event(&mut self, client: u64, event: &Event) {
        let Some(kind) = client_kind(event) else { return };
        if let Some(life) = lifecycle(event) {
            let role = if self.believing.contains(&client) { "holder" } else { "client" };
            self.add("fault", life, role, 0);
            self.add("near", life, role, self.since(self.last_election_ns));
        }
        if matches!(event, Event::BeliefStarted { .. } | Event::BeliefEnded { .. } | Event::KeepAliveRefused { .. }) {
            self.add("near", kind, "client", self.since(self.last_election_ns));
        }
        match event {
            Event::BeliefStarted { .. } => {
                self.believing.insert(client);
            }
            Event::BeliefEnded { .. } | Event::Crashed => {
                self.believing.remove(&client);
            }
            _ => {}
        }
        let (previous, elections_then) = self.client.get(&client).copied().unwrap_or(("start", self.elections));
        self.add("client", previous, kind, 0);
        self.add("across", kind, "", self.elections.saturating_sub(elections_then).min(2) as u8);
        self.client.insert(client, (kind, self.elections));
    }
}

/// A process's lifecycle step, as a fault carried it out.
fn lifecycle(event: &Event) -> Option<&'static str> {
    match event {
        Event::Crashed => Some("crashed"),
        Event::Restarted => Some("restarted"),
        Event::Paused => Some("paused"),
        Event::Resumed => Some("resumed"),
        _ => None,
    }
}

fn service_kind(event: &ServiceEvent) -> &'static str {
    match event {
        ServiceEvent::RequestApplied { .. } => "request-applied",
        ServiceEvent::RequestDeduplicated { .. } => "request-deduplicated",
        ServiceEvent::LeaseGranted { .. } => "lease-granted",
        ServiceEvent::LeaseRevoked { .. } => "lease-revoked",
        ServiceEvent::LeaseRefreshed { .. } => "lease-refreshed",
        ServiceEvent::LockQueued { .. } => "lock-queued",
        ServiceEvent::LockGranted { .. } => "lock-granted",
        ServiceEvent::LockReleased { .. } => "lock-released",
        ServiceEvent::LockWaiterDropped { .. } => "lock-waiter-dropped",
    }
}

/// The client-side observations that make up a lease's and a lock's life
/// (KV calls and watch deliveries are left out: there are thousands of
/// them and their order is the workload's, not the faults').
fn client_kind(event: &Event) -> Option<&'static str> {
    Some(match event {
        Event::Crashed => "crashed",
        Event::Restarted => "restarted",
        Event::Paused => "paused",
        Event::Resumed => "resumed",
        Event::LeaseAcked { keepalive: false, .. } => "lease-acked",
        Event::LeaseAcked { keepalive: true, .. } => "keepalive-acked",
        Event::KeepAliveRefused { .. } => "keepalive-refused",
        Event::BeliefStarted { .. } => "belief-started",
        Event::BeliefEnded { why, .. } => match why {
            BeliefEnd::Released => "belief-released",
            BeliefEnd::KeepAliveRefused => "belief-refused",
            BeliefEnd::TimerLapsed => "belief-lapsed",
            BeliefEnd::Crashed => "belief-crashed",
        },
        Event::WorkStarted { .. } => "work-started",
        Event::Registered { .. } => "registered",
        Event::TaskClaimed { .. } => "task-claimed",
        Event::TaskAbandoned { .. } => "task-abandoned",
        Event::SingletonStarted { .. } => "singleton-started",
        Event::SingletonEnded { .. } => "singleton-ended",
        Event::LeaseSeenGone { .. } => "lease-seen-gone",
        _ => return None,
    })
}
