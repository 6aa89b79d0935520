//! Removing clients and servers from a scenario while keeping it valid.
//!
//! Clients are numbered across workloads in file order and spares after the
//! voters, so dropping one renames the ones after it. Every place that names
//! a process — fault selectors, partition groups, `[clocks.X]` — is mapped
//! to the new names; a fault whose target is gone is dropped (a partition
//! keeps its remaining members if two groups are left), and so is a
//! `holder:KEY` whose key no workload uses any more.

use std::collections::{BTreeMap, BTreeSet};

use leasesim_scenario::{FaultAction, Process, Scenario, ScheduledFault, Selector, Workload};

/// Old number → new number, `None` when the process is gone.
type Map<'a> = &'a dyn Fn(u64) -> Option<u64>;

/// The scenario with workload `index` keeping only its first `keep` clients
/// (`keep == 0` drops the workload). `None` when nothing would change.
pub fn keep_clients(s: &Scenario, index: usize, keep: u64) -> Option<Scenario> {
    let target = s.workloads.get(index)?;
    if keep >= target.clients {
        return None;
    }
    let mut workloads: Vec<Workload> = Vec::new();
    let mut map: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next = 1;
    for (i, w) in s.workloads.iter().enumerate() {
        let kept = if i == index { keep } else { w.clients };
        if kept == 0 {
            continue;
        }
        for (offset, old) in w.client_ids().take(kept as usize).enumerate() {
            map.insert(old, next + offset as u64);
        }
        workloads.push(Workload { first_client: next, clients: kept, kind: w.kind.clone() });
        next += kept;
    }
    let mut out = s.clone();
    out.workloads = workloads;
    let client = |n: u64| map.get(&n).copied();
    let server = |n: u64| Some(n);
    Some(remap(&out, &client, &server))
}

/// The scenario with `voters` voters instead of its own count (spares are
/// kept and renamed to follow the voters). `None` when nothing would change.
pub fn keep_voters(s: &Scenario, voters: u64) -> Option<Scenario> {
    let old = s.cluster.servers;
    if voters == 0 || voters >= old {
        return None;
    }
    let mut out = s.clone();
    out.cluster.servers = voters;
    let server = move |n: u64| match n {
        n if n <= voters => Some(n),
        n if n <= old => None,
        spare => Some(spare - (old - voters)),
    };
    let client = |n: u64| Some(n);
    Some(remap(&out, &client, &server))
}

/// The scenario without spares (and so without membership changes that add
/// them). `None` when it has none.
pub fn without_spares(s: &Scenario) -> Option<Scenario> {
    if s.cluster.spares == 0 {
        return None;
    }
    let mut out = s.clone();
    let voters = s.cluster.servers;
    out.cluster.spares = 0;
    let server = move |n: u64| (n <= voters).then_some(n);
    let client = |n: u64| Some(n);
    Some(remap(&out, &client, &server))
}

/// Applies the renaming to faults and clocks of `s` (whose workloads and
/// cluster already have their new shape).
fn remap(s: &Scenario, client: Map<'_>, server: Map<'_>) -> Scenario {
    let keys: BTreeSet<String> = s.lock_keys().iter().chain(s.singleton_roles().iter()).map(|k| k.to_string()).collect();
    let has_clients = s.client_count() > 0;
    let selector = |sel: &Selector| -> Option<Selector> {
        match sel {
            Selector::Server(n) => server(*n).map(Selector::Server),
            Selector::Client(n) => client(*n).map(Selector::Client),
            Selector::Holder(key) => keys.contains(key).then(|| sel.clone()),
            Selector::RandomClient => has_clients.then(|| sel.clone()),
            Selector::Store | Selector::Leader | Selector::Follower | Selector::RandomServer => Some(sel.clone()),
        }
    };
    let mut out = s.clone();
    out.faults = s.faults.iter().filter_map(|f| fault(f, &selector, server)).collect();
    out.clocks = s
        .clocks
        .iter()
        .filter_map(|(p, spec)| {
            let p = match p {
                Process::Server(n) => Process::Server(server(*n)?),
                Process::Client(n) => Process::Client(client(*n)?),
                Process::Store => Process::Store,
            };
            Some((p, *spec))
        })
        .collect();
    out
}

fn fault(f: &ScheduledFault, selector: &dyn Fn(&Selector) -> Option<Selector>, server: Map<'_>) -> Option<ScheduledFault> {
    let action = match &f.action {
        FaultAction::Partition(groups) => {
            let groups: Vec<Vec<Selector>> =
                groups.iter().map(|g| g.iter().filter_map(selector).collect::<Vec<_>>()).filter(|g| !g.is_empty()).collect();
            if groups.len() < 2 {
                return None;
            }
            FaultAction::Partition(groups)
        }
        FaultAction::Isolate(sel) => FaultAction::Isolate(selector(sel)?),
        FaultAction::Crash(sel) => FaultAction::Crash(selector(sel)?),
        FaultAction::Pause(sel) => FaultAction::Pause(selector(sel)?),
        FaultAction::Remove(sel) => FaultAction::Remove(selector(sel)?),
        FaultAction::Block { from, to } => {
            let to: Vec<Selector> = to.iter().filter_map(selector).collect();
            if to.is_empty() {
                return None;
            }
            FaultAction::Block { from: selector(from)?, to }
        }
        FaultAction::Delay { from, to, by_ns } => {
            let to: Vec<Selector> = to.iter().filter_map(selector).collect();
            if to.is_empty() {
                return None;
            }
            FaultAction::Delay { from: selector(from)?, to, by_ns: *by_ns }
        }
        FaultAction::Clock { target, drift, jump_ns } => FaultAction::Clock { target: selector(target)?, drift: *drift, jump_ns: *jump_ns },
        FaultAction::Loss(p) => FaultAction::Loss(*p),
        FaultAction::Messages(m) => FaultAction::Messages(*m),
        FaultAction::Add(n) => FaultAction::Add(server(*n)?),
    };
    Some(ScheduledFault { action, ..f.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = "name = \"r\"\nduration = \"10s\"\n[cluster]\nservers = 5\nspares = 1\n\
                    [[workload]]\nkind = \"lock\"\nclients = 3\nkeys = [\"a\"]\nttl = \"1s\"\n\
                    [[workload]]\nkind = \"kv\"\nclients = 2\n\
                    [clocks.c4]\ndrift = 0.01\n[clocks.s6]\ndrift = 0.02\n\
                    [[fault]]\nat = \"1s\"\npause = \"c2\"\nfor = \"1s\"\n\
                    [[fault]]\nat = \"2s\"\ncrash = \"c5\"\n\
                    [[fault]]\nat = \"3s\"\npartition = [[\"s1\", \"s5\"], [\"s2\", \"c3\"]]\n\
                    [[fault]]\nat = \"4s\"\nadd = \"s6\"\n\
                    [[fault]]\nat = \"5s\"\npause = \"holder:a\"\n";
        leasesim_scenario::parse(text, "r.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn reparses(s: &Scenario) {
        let text = leasesim_scenario::to_toml(s);
        if let Err(e) = leasesim_scenario::parse(&text, "again.toml") {
            panic!("{e}\n{text}");
        }
    }

    #[test]
    fn dropping_clients_renames_the_later_ones() {
        let s = keep_clients(&scenario(), 0, 1).expect("fewer clients");
        assert_eq!(s.client_count(), 3);
        // c2 is gone (its pause goes), c5 became c3, c4 became c2.
        let actions: Vec<String> = s.faults.iter().map(|f| format!("{:?}", f.action)).collect();
        assert!(!actions.iter().any(|a| a.contains("Pause(Client")), "{actions:?}");
        assert!(s.faults.iter().any(|f| f.action == FaultAction::Crash(Selector::Client(3))));
        assert!(s.clocks.contains_key(&Process::Client(2)));
        reparses(&s);
    }

    #[test]
    fn dropping_a_lock_workload_drops_its_holder_faults() {
        let s = keep_clients(&scenario(), 0, 0).expect("no lock workload");
        assert!(!s.faults.iter().any(|f| matches!(f.action, FaultAction::Pause(Selector::Holder(_)))));
        reparses(&s);
    }

    #[test]
    fn fewer_voters_rename_spares_and_trim_partitions() {
        let s = keep_voters(&scenario(), 3).expect("fewer voters");
        assert!(s.faults.iter().any(|f| f.action == FaultAction::Add(4)), "s6 became s4");
        assert!(s.clocks.contains_key(&Process::Server(4)));
        let partition = s.faults.iter().find(|f| matches!(f.action, FaultAction::Partition(_))).expect("kept");
        assert_eq!(
            partition.action,
            FaultAction::Partition(vec![vec![Selector::Server(1)], vec![Selector::Server(2), Selector::Client(3)]])
        );
        reparses(&s);
        let s = without_spares(&scenario()).expect("spares");
        assert!(!s.faults.iter().any(|f| matches!(f.action, FaultAction::Add(_))));
        reparses(&s);
    }
}
