//! What a study measures in one run, computed from its observations in true
//! time (never from a node's clock), and the sum over a cell's seeds.
//!
//! It exists beside the checkers because a checker answers "did it break",
//! while a study needs "how close, how often, at what cost": the smallest
//! gap between one holder's belief and the next grant, violations per hour
//! of held lock, stale writes stopped by fencing or let through without it,
//! the wait for a new grant after a holder crashed, and expiries of holders
//! that were alive and renewing.

use std::collections::BTreeMap;

use leasesim_core::server::ServerEvent;
use leasesim_core::service::ServiceEvent;
use serde::Serialize;

use crate::run::RunOutcome;
use leasesim_judge::checkers::belief_windows;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;

/// One hand-over of a key from one client to another, counted once however
/// many belief windows or checker reports it produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Handover {
    pub key: String,
    pub from_client: u64,
    pub to_client: u64,
    /// Next grant (first server to apply it) − the previous holder's belief
    /// end, in true ns; negative: granted while the previous holder believed.
    pub gap_ns: i64,
    /// How long both clients believed at once (previous belief end − next
    /// belief start, at least 0), in true ns.
    pub overlap_ns: u64,
    /// Why the servers let the previous holder's lock go: `release` (its
    /// own release), `expiry` (its lease ended: expiry or revoke) or
    /// `unknown` (no release entry observed).
    pub cause: &'static str,
    /// The server that led when the next grant was first applied (the one
    /// whose clock timed the previous lease out); `None`: no leader then.
    pub leader: Option<u64>,
    /// How much later the cluster last renewed the previous holder's lease
    /// than the renewal its belief counts from, in true ns: a holder paused
    /// after sending a keep-alive never reads the reply, so the leader
    /// renews from that send while the belief keeps the older anchor.
    pub renewal_lag_ns: u64,
    /// When the previous holder's belief ended (true ns).
    #[serde(skip)]
    pub prev_end_ns: u64,
    /// Since when `leader` had led at the grant (true ns): a leader that
    /// took over while the lease lived re-armed it (etcd's Promote).
    #[serde(skip)]
    pub leader_since_ns: Option<u64>,
}

/// One run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunMetrics {
    /// Violations by invariant id.
    pub invariants: BTreeMap<String, u64>,
    /// Hours of held lock: the sum of every belief window, in true time.
    pub lease_hours: f64,
    /// Smallest (next grant − previous holder's belief end) over hand-overs
    /// between different clients, in ns; negative: the grant came while the
    /// previous holder still believed. `None`: no hand-over.
    pub min_margin_ns: Option<i64>,
    pub stale_rejected: u64,
    /// Writes the store accepted with a token below one it had accepted.
    pub stale_accepted: u64,
    /// Every hand-over between different clients, in order of the next
    /// belief's start.
    pub handovers: Vec<Handover>,
    /// Every belief window (start, end) in true ns, for the theory's
    /// per-run prediction (was anyone holding when a clock stepped?).
    #[serde(skip)]
    pub belief_windows: Vec<(u64, u64)>,
    /// Crash of a holder → next grant of its key to another client, in ns.
    pub unavailability_ns: Vec<u64>,
    /// Keep-alives refused to a client that had renewed within its TTL
    /// (true time since the send of its last acknowledged renewal) and was
    /// neither paused nor crashed meanwhile.
    pub false_expiries: u64,
    /// Every server that led during the run, in the order they first led.
    pub leaders: Vec<u64>,
    /// The longest pause of any client (Paused → Resumed, true ns).
    pub longest_pause_ns: u64,
}

pub fn measure(outcome: &RunOutcome, ttl_ns: u64) -> RunMetrics {
    let mut m = RunMetrics::default();
    for v in &outcome.violations {
        *m.invariants.entry(v.invariant.clone()).or_default() += 1;
    }
    let end_ns = (outcome.sim_seconds * 1e9) as u64;
    let windows = belief_windows(&outcome.obs, &outcome.clocks, end_ns);
    m.belief_windows = windows.values().flatten().map(|w| (w.start_ns, w.end_ns)).collect();
    m.lease_hours = windows.values().flatten().map(|w| w.end_ns.saturating_sub(w.start_ns) as f64).sum::<f64>() / 3.6e12;
    let scan = Scan::of(outcome, end_ns, &mut m);
    let released = release_causes(outcome);
    for (key, list) in &windows {
        let mut list = list.clone();
        list.sort_by_key(|w| w.start_ns);
        for pair in list.windows(2) {
            let (prev, next) = (&pair[0], &pair[1]);
            if prev.client == next.client {
                continue;
            }
            let grant_ns = scan.granted_at.get(&(key.clone(), next.token)).map_or(next.start_ns, |g| g.0);
            let renewal_lag_ns =
                scan.lease_of.get(&(key.clone(), prev.token)).map_or(0, |l| scan.renewal_lag(prev.client, *l, prev.end_ns, grant_ns));
            let margin = grant_ns as i64 - prev.end_ns as i64;
            m.min_margin_ns = Some(m.min_margin_ns.map_or(margin, |old| old.min(margin)));
            m.handovers.push(Handover {
                key: key.clone(),
                from_client: prev.client,
                to_client: next.client,
                gap_ns: margin,
                overlap_ns: prev.end_ns.saturating_sub(next.start_ns),
                cause: released.get(&(key.clone(), prev.token)).copied().unwrap_or("unknown"),
                leader: scan.leader_at(grant_ns),
                renewal_lag_ns,
                prev_end_ns: prev.end_ns,
                leader_since_ns: scan.leader_since(grant_ns),
            });
        }
    }

    count_store_writes(outcome, &mut m);
    m.unavailability_ns = unavailability(outcome, &scan.granted_at);
    m.false_expiries = false_expiries(outcome, ttl_ns);
    m
}

/// What one pass over a run's observations gathers for its hand-overs.
#[derive(Default)]
struct Scan {
    /// The first time any server applied each grant (the hand-over
    /// instant), and to whom: by (key, token).
    granted_at: BTreeMap<(String, u64), (u64, u64)>,
    lease_of: BTreeMap<(String, u64), u64>,
    /// Who led when: (from, server or none), in order.
    leadership: Vec<(u64, Option<u64>)>,
    /// Per lease: when the leader answered a keep-alive for it (true ns).
    answered: BTreeMap<u64, Vec<u64>>,
    /// Per client: (received at, lease, sent at, keep-alive?) of every ack.
    acks: BTreeMap<u64, Vec<(u64, u64, u64, bool)>>,
}

impl Scan {
    /// Scans the run; records the leaders and the longest pause in `m`.
    fn of(outcome: &RunOutcome, end_ns: u64, m: &mut RunMetrics) -> Scan {
        let mut scan = Scan::default();
        let (granted_at, lease_of, leadership) = (&mut scan.granted_at, &mut scan.lease_of, &mut scan.leadership);
        let (answered, acks) = (&mut scan.answered, &mut scan.acks);
        let mut leader: Option<u64> = None;
        let mut paused_at: BTreeMap<Proc, u64> = BTreeMap::new();
        for o in &outcome.obs {
            match (&o.event, o.proc) {
                (
                    Event::Server {
                        event: ServerEvent::Service { event: ServiceEvent::LockGranted { key, token, client, lease, .. }, .. },
                    },
                    _,
                ) => {
                    granted_at.entry((key.clone(), *token)).or_insert((o.at_ns, *client));
                    lease_of.entry((key.clone(), *token)).or_insert(*lease);
                }
                (Event::Server { event: ServerEvent::Raft(leasesim_core::raft::RaftEvent::BecameLeader { .. }) }, Proc::Server(n)) => {
                    leader = Some(n);
                    leadership.push((o.at_ns, leader));
                    if !m.leaders.contains(&n) {
                        m.leaders.push(n);
                    }
                }
                (Event::Server { event: ServerEvent::Raft(leasesim_core::raft::RaftEvent::SteppedDown { .. }) }, Proc::Server(n))
                | (Event::Crashed, Proc::Server(n))
                    if leader == Some(n) =>
                {
                    leader = None;
                    leadership.push((o.at_ns, None));
                }
                (Event::Server { event: ServerEvent::KeepAliveAnswered { lease, .. } }, _) => {
                    answered.entry(*lease).or_default().push(o.at_ns);
                }
                (Event::LeaseAcked { lease, sent_at_ns, keepalive, .. }, Proc::Client(c)) => {
                    acks.entry(c).or_default().push((o.at_ns, *lease, *sent_at_ns, *keepalive));
                }
                (Event::Paused, p @ Proc::Client(_)) => {
                    paused_at.insert(p, o.at_ns);
                }
                (Event::Resumed, p @ Proc::Client(_)) => {
                    if let Some(at) = paused_at.remove(&p) {
                        m.longest_pause_ns = m.longest_pause_ns.max(o.at_ns - at);
                    }
                }
                _ => {}
            }
        }
        for at in paused_at.values() {
            m.longest_pause_ns = m.longest_pause_ns.max(end_ns.saturating_sub(*at));
        }
        for at in paused_at.values() {
            m.longest_pause_ns = m.longest_pause_ns.max(end_ns.saturating_sub(*at));
        }
        scan
    }

    /// The leader at true time `t`, if any.
    fn leader_at(&self, t: u64) -> Option<u64> {
        self.leadership.iter().take_while(|(at, _)| *at <= t).last().and_then(|(_, l)| *l)
    }

    /// Since when the leader at `t` has led.
    fn leader_since(&self, t: u64) -> Option<u64> {
        self.leadership.iter().take_while(|(at, _)| *at <= t).last().filter(|(_, l)| l.is_some()).map(|(at, _)| *at)
    }

    /// The renewal lag of a belief of `client` in `lease` that ended at
    /// `end_ns`, the next grant coming at `grant_ns`: the last answer to a
    /// keep-alive of that lease before the grant, against the answer the
    /// belief counted from (for a belief anchored at the grant itself, its
    /// send).
    fn renewal_lag(&self, client: u64, lease: u64, end_ns: u64, grant_ns: u64) -> u64 {
        let Some(anchor) = self.acks.get(&client).and_then(|list| list.iter().rfind(|a| a.1 == lease && a.0 <= end_ns)) else {
            return 0;
        };
        let times = self.answered.get(&lease).map(Vec::as_slice).unwrap_or(&[]);
        let anchor_answer = if anchor.3 { times.iter().copied().find(|t| *t >= anchor.2).unwrap_or(anchor.2) } else { anchor.2 };
        let last = times.iter().copied().filter(|t| *t < grant_ns).max().unwrap_or(0);
        last.saturating_sub(anchor_answer)
    }
}

/// Why each token's lock went: the first server to apply its release.
fn release_causes(outcome: &RunOutcome) -> BTreeMap<(String, u64), &'static str> {
    let mut released: BTreeMap<(String, u64), &'static str> = BTreeMap::new();
    for o in &outcome.obs {
        if let Event::Server { event: ServerEvent::Service { event: ServiceEvent::LockReleased { key, token, cause, .. }, .. } } = &o.event
        {
            let why = match cause {
                leasesim_core::service::ReleaseCause::Release { .. } => "release",
                leasesim_core::service::ReleaseCause::LeaseEnded => "expiry",
            };
            released.entry((key.clone(), *token)).or_insert(why);
        }
    }
    released
}

/// Counts the data store's refused writes, and the writes it accepted with
/// a token below one it had accepted for the key.
fn count_store_writes(outcome: &RunOutcome, m: &mut RunMetrics) {
    let mut highest: BTreeMap<String, u64> = BTreeMap::new();
    for o in &outcome.obs {
        match &o.event {
            Event::StoreRejected { .. } => m.stale_rejected += 1,
            Event::StoreAccepted { key, token, .. } => {
                let h = highest.entry(key.clone()).or_default();
                if *token < *h {
                    m.stale_accepted += 1;
                }
                *h = (*h).max(*token);
            }
            _ => {}
        }
    }
}

/// For each crash of a client while it believed it held a key: the time to
/// the next grant of that key to another client.
fn unavailability(outcome: &RunOutcome, granted_at: &BTreeMap<(String, u64), (u64, u64)>) -> Vec<u64> {
    let mut believing: BTreeMap<u64, String> = BTreeMap::new();
    let mut out = Vec::new();
    for o in &outcome.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::BeliefStarted { key, .. } => {
                believing.insert(client, key.clone());
            }
            Event::BeliefEnded { .. } => {
                believing.remove(&client);
            }
            Event::Crashed => {
                if let Some(key) = believing.remove(&client) {
                    let next = granted_at
                        .iter()
                        .filter(|((k, _), (at, c))| *k == key && *at > o.at_ns && *c != client)
                        .map(|(_, (at, _))| *at)
                        .min();
                    if let Some(at) = next {
                        out.push(at - o.at_ns);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn false_expiries(outcome: &RunOutcome, ttl_ns: u64) -> u64 {
    // Per client: send time of the last acknowledged renewal, and the last
    // time it stopped (pause or crash).
    let mut last_ack: BTreeMap<u64, u64> = BTreeMap::new();
    let mut last_stop: BTreeMap<u64, u64> = BTreeMap::new();
    let mut count = 0;
    for o in &outcome.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::LeaseAcked { sent_at_ns, .. } => {
                last_ack.insert(client, *sent_at_ns);
            }
            Event::Paused | Event::Crashed => {
                last_stop.insert(client, o.at_ns);
            }
            Event::KeepAliveRefused { .. } => {
                let renewed = last_ack.get(&client).is_some_and(|sent| o.at_ns < sent + ttl_ns);
                let stopped = last_stop.get(&client).is_some_and(|at| *at + ttl_ns > o.at_ns);
                if renewed && !stopped {
                    count += 1;
                }
            }
            _ => {}
        }
    }
    count
}

pub use leasesim_judge::rate::{wilson, Rate};

/// A cell's figures over its seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CellMetrics {
    pub runs: u64,
    /// Runs in which any invariant fired (liveness included).
    pub runs_with_violation: u64,
    /// Runs in which any safety invariant fired (`scenario::is_safety`).
    pub runs_unsafe: u64,
    pub invariants: BTreeMap<String, u64>,
    /// Runs in which each invariant fired at least once.
    pub invariant_runs: BTreeMap<String, u64>,
    pub handovers: u64,
    pub handovers_by_release: u64,
    pub handovers_by_expiry: u64,
    /// Hand-overs during which both clients believed (overlap > 0).
    pub handovers_overlapping: u64,
    pub handovers_overlapping_by_expiry: u64,
    pub max_overlap_ns: u64,
    pub lease_hours: f64,
    /// Per lease-hour, for the two invariants the clock-skew study is about.
    pub belief_overlap_per_lease_hour: f64,
    pub early_expiry_per_lease_hour: f64,
    pub min_margin_ns: Option<i64>,
    pub stale_rejected: u64,
    pub stale_accepted: u64,
    pub unavailability_samples: u64,
    pub unavailability_mean_ns: Option<u64>,
    pub unavailability_min_ns: Option<u64>,
    pub unavailability_max_ns: Option<u64>,
    pub false_expiries: u64,
    pub panics: u64,
}

impl CellMetrics {
    pub fn add(&mut self, run: &RunMetrics, panicked: bool) {
        self.runs += 1;
        self.panics += u64::from(panicked);
        if !run.invariants.is_empty() {
            self.runs_with_violation += 1;
        }
        if run.invariants.keys().any(|id| leasesim_scenario::is_safety(id)) {
            self.runs_unsafe += 1;
        }
        for (id, n) in &run.invariants {
            *self.invariants.entry(id.clone()).or_default() += n;
            *self.invariant_runs.entry(id.clone()).or_default() += 1;
        }
        for h in &run.handovers {
            self.handovers += 1;
            self.handovers_by_release += u64::from(h.cause == "release");
            self.handovers_by_expiry += u64::from(h.cause == "expiry");
            if h.overlap_ns > 0 {
                self.handovers_overlapping += 1;
                self.handovers_overlapping_by_expiry += u64::from(h.cause == "expiry");
                self.max_overlap_ns = self.max_overlap_ns.max(h.overlap_ns);
            }
        }
        self.lease_hours += run.lease_hours;
        if let Some(m) = run.min_margin_ns {
            self.min_margin_ns = Some(self.min_margin_ns.map_or(m, |old| old.min(m)));
        }
        self.stale_rejected += run.stale_rejected;
        self.stale_accepted += run.stale_accepted;
        let n = self.unavailability_samples;
        let total = self.unavailability_mean_ns.unwrap_or(0) as u128 * n as u128;
        let added: u128 = run.unavailability_ns.iter().map(|v| *v as u128).sum();
        self.unavailability_samples += run.unavailability_ns.len() as u64;
        if self.unavailability_samples > 0 {
            self.unavailability_mean_ns = Some(((total + added) / self.unavailability_samples as u128) as u64);
        }
        if let Some(min) = run.unavailability_ns.iter().min() {
            self.unavailability_min_ns = Some(self.unavailability_min_ns.map_or(*min, |m| m.min(*min)));
        }
        if let Some(max) = run.unavailability_ns.iter().max() {
            self.unavailability_max_ns = Some(self.unavailability_max_ns.map_or(*max, |m| m.max(*max)));
        }
        self.false_expiries += run.false_expiries;
        let rate = |id: &str| {
            let n = self.invariants.get(id).copied().unwrap_or(0) as f64;
            if self.lease_hours > 0.0 {
                n / self.lease_hours
            } else {
                0.0
            }
        };
        self.belief_overlap_per_lease_hour = rate("lock-belief-overlap");
        self.early_expiry_per_lease_hour = rate("lease-early-expiry");
    }

    /// Runs with any safety invariant, out of all runs.
    pub fn unsafe_runs(&self) -> Rate {
        Rate::of(self.runs_unsafe, self.runs)
    }

    /// Hand-overs with overlapping beliefs, out of all hand-overs.
    pub fn overlapping_handovers(&self) -> Rate {
        Rate::of(self.handovers_overlapping, self.handovers)
    }

    /// Per invariant that fired: the runs it fired in, out of all runs.
    pub fn invariant_rates(&self) -> BTreeMap<String, Rate> {
        self.invariant_runs.iter().map(|(id, k)| (id.clone(), Rate::of(*k, self.runs))).collect()
    }
}
