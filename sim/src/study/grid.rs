//! The study's grid: the cross product of the spec's axes, and how one cell
//! turns the base scenario into the scenario it runs. An axis the spec
//! leaves out keeps the base scenario's value, so a cell's parameters say
//! only what the study varied.

use leasesim_core::ExpiryStrategy;
use serde::Serialize;

use super::spec::StudySpec;
use leasesim_scenario::{BeliefFrom, ClockSpec, FaultAction, Process, Scenario, ScheduledFault, Selector, WorkloadKind};

/// One cell's values; `None` keeps the base scenario's.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CellParams {
    pub lease_expiry: Option<&'static str>,
    pub leader_drift: Option<f64>,
    pub client_drift: Option<f64>,
    pub wall_offset_ns: Option<i64>,
    pub leader_jump_ns: Option<i64>,
    pub margin: Option<f64>,
    pub belief_from: Option<&'static str>,
    pub ttl_ns: Option<u64>,
    pub keepalive_ns: Option<u64>,
    pub pause_ns: Option<u64>,
    pub fenced: Option<bool>,
    pub hold_ns: Option<u64>,
    pub s1_drift: Option<f64>,
    pub server_slew: Option<f64>,
    pub leader_pause_ns: Option<u64>,
    pub checkpoint_ns: Option<u64>,
    // The three below are absent from studies that do not vary them, so
    // their results.json reads as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub election_timeout_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift_bound: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader_clock_drift: Option<f64>,
}

pub fn strategy_name(s: ExpiryStrategy) -> &'static str {
    match s {
        ExpiryStrategy::LeaderMonotonic => "leader-monotonic",
        ExpiryStrategy::LeaderStampedWall => "leader-stamped-wall",
        ExpiryStrategy::WriterClock => "writer-clock",
    }
}

/// Every cell of the grid, the last axis varying fastest.
pub fn cells(spec: &StudySpec) -> Vec<CellParams> {
    let a = &spec.axes;
    let mut cells = vec![CellParams::default()];
    fn expand<T: Copy>(cells: Vec<CellParams>, values: &[T], set: impl Fn(&mut CellParams, T)) -> Vec<CellParams> {
        if values.is_empty() {
            return cells;
        }
        cells
            .into_iter()
            .flat_map(|cell| {
                values
                    .iter()
                    .map(|v| {
                        let mut c = cell.clone();
                        set(&mut c, *v);
                        c
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
    cells = expand(cells, &a.lease_expiry, |c, v| c.lease_expiry = Some(strategy_name(v)));
    cells = expand(cells, &a.fenced, |c, v| c.fenced = Some(v));
    cells = expand(cells, &a.belief_from, |c, v| c.belief_from = Some(v.name()));
    cells = expand(cells, &a.ttl_ns, |c, v| c.ttl_ns = Some(v));
    cells = expand(cells, &a.keepalive_ns, |c, v| c.keepalive_ns = Some(v));
    cells = expand(cells, &a.pause_ns, |c, v| c.pause_ns = Some(v));
    cells = expand(cells, &a.hold_ns, |c, v| c.hold_ns = Some(v));
    cells = expand(cells, &a.wall_offset_ns, |c, v| c.wall_offset_ns = Some(v));
    cells = expand(cells, &a.leader_jump_ns, |c, v| c.leader_jump_ns = Some(v));
    cells = expand(cells, &a.client_drift, |c, v| c.client_drift = Some(v));
    cells = expand(cells, &a.leader_drift, |c, v| c.leader_drift = Some(v));
    cells = expand(cells, &a.s1_drift, |c, v| c.s1_drift = Some(v));
    cells = expand(cells, &a.server_slew, |c, v| c.server_slew = Some(v));
    cells = expand(cells, &a.checkpoint_ns, |c, v| c.checkpoint_ns = Some(v));
    cells = expand(cells, &a.leader_pause_ns, |c, v| c.leader_pause_ns = Some(v));
    cells = expand(cells, &a.margin, |c, v| c.margin = Some(v));
    cells = expand(cells, &a.election_timeout_ns, |c, v| c.election_timeout_ns = Some(v));
    cells = expand(cells, &a.drift_bound, |c, v| c.drift_bound = Some(v));
    cells = expand(cells, &a.leader_clock_drift, |c, v| c.leader_clock_drift = Some(v));
    cells
}

/// Where one run's faults fall: the first holder pause, the leader's wall
/// step, and how far every fault of the base scenario moves. Fixed phases
/// put them at the spec's times; random phases add offsets drawn from the
/// run's seed, uniform in [0, `phase_window`), so no zero count rests on
/// one fault timing.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub pause_at_ns: u64,
    pub jump_at_ns: u64,
    pub base_shift_ns: u64,
    /// The run's seed: each pause's length is drawn from it
    /// (`pause_distribution`).
    #[serde(skip)]
    pub seed: u64,
}

/// splitmix64: a small, well-mixed hash of the seed (Steele et al. 2014),
/// for the study's draws from a run's seed (phases here, pause lengths in
/// pauses.rs).
pub(super) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The run's phase: the spec's times, shifted by draws from `seed` when
/// the spec asks for random phases.
pub fn phase(spec: &StudySpec, seed: u64) -> Phase {
    let fixed = Phase { pause_at_ns: spec.pause_at_ns, jump_at_ns: spec.jump_at_ns, base_shift_ns: 0, seed };
    if !spec.random_phase || spec.phase_window_ns == 0 {
        return fixed;
    }
    let draw = |k: u64| splitmix64(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ k) % spec.phase_window_ns;
    Phase { pause_at_ns: spec.pause_at_ns + draw(1), jump_at_ns: spec.jump_at_ns + draw(2), base_shift_ns: draw(3), seed }
}

/// The scenario one cell runs at the spec's fixed fault times.
pub fn apply(base: &Scenario, spec: &StudySpec, cell: &CellParams) -> Scenario {
    apply_phased(base, spec, cell, &Phase { pause_at_ns: spec.pause_at_ns, jump_at_ns: spec.jump_at_ns, base_shift_ns: 0, seed: 0 })
}

/// The scenario the run of `cell` with `seed` ran: its faults at the
/// seed's phase and its pauses of the seed's lengths (what
/// `leasesim study --scenario-of` prints).
pub fn apply_run(base: &Scenario, spec: &StudySpec, cell: &CellParams, seed: u64) -> Scenario {
    apply_phased(base, spec, cell, &phase(spec, seed))
}

/// The scenario one run of a cell runs: the base with the cell's values
/// applied and its faults at `phase`. Faults the cell adds carry line 0
/// (they were written by no file).
pub fn apply_phased(base: &Scenario, spec: &StudySpec, cell: &CellParams, phase: &Phase) -> Scenario {
    let mut s = base.clone();
    if phase.base_shift_ns > 0 {
        for f in &mut s.faults {
            f.at_ns = (f.at_ns + phase.base_shift_ns).min(s.duration_ns);
        }
    }
    if let Some(name) = cell.lease_expiry {
        s.cluster.lease_expiry = match name {
            "leader-stamped-wall" => ExpiryStrategy::LeaderStampedWall,
            "writer-clock" => ExpiryStrategy::WriterClock,
            _ => ExpiryStrategy::LeaderMonotonic,
        };
    }
    // The order of the faults pushed (clocks, then pauses) decides the
    // order of faults at the same instant after the stable sort below.
    apply_clocks(&mut s, spec, cell, phase);
    apply_lock_knobs(&mut s, cell);
    apply_pauses(&mut s, spec, cell, phase);
    apply_leader_pause(&mut s, cell, phase);
    if let Some(every) = cell.checkpoint_ns {
        s.cluster.checkpoint_interval_ns = (every > 0).then_some(every);
    }
    if let Some(min) = cell.election_timeout_ns {
        s.cluster.election_timeout_ns = (min, 2 * min);
    }
    s.faults.sort_by_key(|f| f.at_ns);
    match cell.drift_bound {
        // A study of the bound itself keeps it, so drifts past it are
        // judged "assumption broken".
        Some(bound) => s.cluster.drift_bound = bound,
        None => raise_drift_bound(&mut s),
    }
    s
}

/// The cell's clocks: drifts, the slew's and the jump's clock faults, and
/// s1's wall offset.
fn apply_clocks(s: &mut Scenario, spec: &StudySpec, cell: &CellParams, phase: &Phase) {
    let servers = (1..=s.cluster.servers + s.cluster.spares).map(Process::Server).collect::<Vec<_>>();
    let clients = (1..=s.client_count()).map(Process::Client).collect::<Vec<_>>();
    let zero = ClockSpec { drift: 0.0, offset_ns: 0 };
    if let Some(drift) = cell.leader_drift {
        for p in &servers {
            s.clocks.entry(*p).or_insert(zero).drift = drift;
        }
    }
    if let Some(drift) = cell.client_drift {
        for p in &clients {
            s.clocks.entry(*p).or_insert(zero).drift = drift;
        }
    }
    if let Some(drift) = cell.s1_drift {
        s.clocks.entry(Process::Server(1)).or_insert(zero).drift = drift;
    }
    if let Some(slew) = cell.server_slew.filter(|v| *v != 0.0) {
        // NTP slews a clock by running it at another rate for a while, then
        // back at its own: two clock faults per server.
        let on_ns = spec.slew_at_ns.min(s.duration_ns);
        let off_ns = (spec.slew_at_ns + spec.slew_for_ns).min(s.duration_ns);
        for p in &servers {
            let Process::Server(n) = p else { continue };
            let own = s.clocks.get(p).map_or(0.0, |c| c.drift);
            for (at_ns, drift) in [(on_ns, own + slew), (off_ns, own)] {
                let action = FaultAction::Clock { target: Selector::Server(*n), drift: Some(drift), jump_ns: None };
                s.faults.push(ScheduledFault { at_ns, action, for_ns: None, line: 0, when: None });
            }
        }
    }
    if let Some(offset_ns) = cell.wall_offset_ns {
        s.clocks.entry(Process::Server(1)).or_insert(zero).offset_ns = offset_ns;
    }
    if let Some(jump_ns) = cell.leader_jump_ns.filter(|j| *j != 0) {
        let action = FaultAction::Clock { target: Selector::Leader, drift: None, jump_ns: Some(jump_ns) };
        s.faults.push(ScheduledFault { at_ns: phase.jump_at_ns.min(s.duration_ns), action, for_ns: None, line: 0, when: None });
    }
    if let Some(drift) = cell.leader_clock_drift {
        // Set even at 0: the leader's rate then replaces the servers' own.
        let action = FaultAction::Clock { target: Selector::Leader, drift: Some(drift), jump_ns: None };
        s.faults.push(ScheduledFault { at_ns: phase.jump_at_ns.min(s.duration_ns), action, for_ns: None, line: 0, when: None });
    }
}

/// The cell's values for every lock workload.
fn apply_lock_knobs(s: &mut Scenario, cell: &CellParams) {
    for w in &mut s.workloads {
        if let WorkloadKind::Lock(lock) = &mut w.kind {
            if let Some(m) = cell.margin {
                lock.margin = m;
            }
            if let Some(b) = cell.belief_from {
                lock.belief_from = if b == "receipt" { BeliefFrom::Receipt } else { BeliefFrom::Send };
            }
            if let Some(ttl) = cell.ttl_ns {
                lock.ttl_ns = ttl;
                lock.keepalive_ns = (ttl / 3).max(1);
            }
            if let Some(k) = cell.keepalive_ns {
                lock.keepalive_ns = k;
            }
            if let Some(f) = cell.fenced {
                lock.fenced = f;
            }
            if let Some(h) = cell.hold_ns {
                lock.hold_ns = (h, h);
            }
        }
    }
}

/// The cell's holder pauses, every `pause_every` from the phase's first.
fn apply_pauses(s: &mut Scenario, spec: &StudySpec, cell: &CellParams, phase: &Phase) {
    if let Some(pause_ns) = cell.pause_ns.filter(|p| *p > 0) {
        let keys: Vec<String> = s.lock_keys().into_iter().map(str::to_string).collect();
        let mut at_ns = phase.pause_at_ns;
        let mut k = 0;
        while at_ns < s.duration_ns {
            for key in &keys {
                let action = FaultAction::Pause(Selector::Holder(key.clone()));
                let for_ns = super::pauses::draw(spec.pause_distribution, pause_ns, spec.pause_shape, phase.seed, k, s.duration_ns).max(1);
                s.faults.push(ScheduledFault { at_ns, action, for_ns: Some(for_ns), line: 0, when: None });
                k += 1;
            }
            at_ns += spec.pause_every_ns;
        }
    }
}

/// The cell's one pause of the leader, at the first holder pause's time
/// (pushed after the holder pauses, so at the same instant the holder
/// stops first and its last keep-alive is the one the leader saw).
fn apply_leader_pause(s: &mut Scenario, cell: &CellParams, phase: &Phase) {
    if let Some(pause_ns) = cell.leader_pause_ns.filter(|p| *p > 0) {
        let action = FaultAction::Pause(Selector::Leader);
        s.faults.push(ScheduledFault { at_ns: phase.pause_at_ns.min(s.duration_ns), action, for_ns: Some(pause_ns), line: 0, when: None });
    }
}

fn raise_drift_bound(s: &mut Scenario) {
    // `lease-early-expiry` judges the cluster against `drift_bound`; a
    // cluster told the drift it lives with must still never end a lease
    // sooner than TTL / (1 + that drift), so the bound is raised to the
    // cell's largest clock drift and the invariant keeps its meaning (with
    // the base's 1 % it fired in every drifting cell, whatever the margin).
    // A rate a clock fault sets (a slew) counts as the clock's drift too.
    let set_by_faults = s.faults.iter().filter_map(|f| match f.action {
        FaultAction::Clock { drift: Some(d), .. } => Some(d.abs()),
        _ => None,
    });
    let largest = s.clocks.values().map(|c| c.drift.abs()).chain(set_by_faults).fold(0.0_f64, f64::max);
    s.cluster.drift_bound = s.cluster.drift_bound.max(largest);
}

/// A short label of what a cell varies, e.g. `leader-monotonic drift=0.05 margin=0.1`.
pub fn label(cell: &CellParams) -> String {
    let mut parts = Vec::new();
    if let Some(v) = cell.lease_expiry {
        parts.push(v.to_string());
    }
    let ms = |ns: i128| format!("{}ms", ns / 1_000_000);
    let fields: [(&str, Option<String>); 18] = [
        ("fenced", cell.fenced.map(|v| v.to_string())),
        ("from", cell.belief_from.map(str::to_string)),
        ("ttl", cell.ttl_ns.map(|v| ms(v.into()))),
        ("keepalive", cell.keepalive_ns.map(|v| ms(v.into()))),
        ("pause", cell.pause_ns.map(|v| ms(v.into()))),
        ("hold", cell.hold_ns.map(|v| ms(v.into()))),
        ("offset", cell.wall_offset_ns.map(|v| ms(v.into()))),
        ("jump", cell.leader_jump_ns.map(|v| ms(v.into()))),
        ("client_drift", cell.client_drift.map(|v| v.to_string())),
        ("leader_drift", cell.leader_drift.map(|v| v.to_string())),
        ("s1_drift", cell.s1_drift.map(|v| v.to_string())),
        ("slew", cell.server_slew.map(|v| v.to_string())),
        ("margin", cell.margin.map(|v| v.to_string())),
        ("checkpoint", cell.checkpoint_ns.map(|v| if v == 0 { "off".to_string() } else { ms(v.into()) })),
        ("leader_pause", cell.leader_pause_ns.map(|v| ms(v.into()))),
        ("election_timeout", cell.election_timeout_ns.map(|v| ms(v.into()))),
        ("drift_bound", cell.drift_bound.map(|v| v.to_string())),
        ("leader_clock_drift", cell.leader_clock_drift.map(|v| v.to_string())),
    ];
    for (name, value) in fields {
        if let Some(v) = value {
            parts.push(format!("{name}={v}"));
        }
    }
    parts.join(" ")
}
