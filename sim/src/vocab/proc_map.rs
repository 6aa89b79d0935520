//! A map keyed by process, held as vectors indexed by server and client
//! number: the world looks up a process's clock, inbox and up/down state
//! several times per simulated step, and a B-tree search per lookup was a
//! tenth of a run's instructions (callgrind on the baseline). Iteration is
//! in `Proc` order, the order a `BTreeMap<Proc, _>` has, so whatever is
//! built from it comes out the same.

use leasesim_core::{ClientId, NodeId};

use leasesim_judge::vocab::Proc;

/// Servers and clients are numbered densely from 0 or 1 by the scenario;
/// an id past this is a bug in the caller, not a reason to allocate
/// gigabytes.
const MAX_ID: u64 = 1 << 20;

#[derive(Clone, Debug)]
pub struct ProcMap<T> {
    servers: Vec<Option<T>>,
    clients: Vec<Option<T>>,
    store: Option<T>,
    admin: Option<T>,
}

impl<T> Default for ProcMap<T> {
    fn default() -> Self {
        ProcMap { servers: Vec::new(), clients: Vec::new(), store: None, admin: None }
    }
}

fn index(id: u64, proc: Proc) -> usize {
    assert!(id < MAX_ID, "{proc}: process number {id} is past {MAX_ID}");
    id as usize
}

impl<T> ProcMap<T> {
    pub fn get(&self, proc: Proc) -> Option<&T> {
        match proc {
            Proc::Server(n) => self.servers.get(n as usize)?.as_ref(),
            Proc::Client(n) => self.clients.get(n as usize)?.as_ref(),
            Proc::Store => self.store.as_ref(),
            Proc::Admin => self.admin.as_ref(),
        }
    }

    pub fn get_mut(&mut self, proc: Proc) -> Option<&mut T> {
        match proc {
            Proc::Server(n) => self.servers.get_mut(n as usize)?.as_mut(),
            Proc::Client(n) => self.clients.get_mut(n as usize)?.as_mut(),
            Proc::Store => self.store.as_mut(),
            Proc::Admin => self.admin.as_mut(),
        }
    }

    /// Inserts or replaces `proc`'s value; returns the one it replaced.
    pub fn insert(&mut self, proc: Proc, value: T) -> Option<T> {
        fn grown<T>(slots: &mut Vec<Option<T>>, at: usize) -> &mut Option<T> {
            if slots.len() <= at {
                slots.resize_with(at + 1, || None);
            }
            &mut slots[at]
        }
        let slot = match proc {
            Proc::Server(n) => grown(&mut self.servers, index(n, proc)),
            Proc::Client(n) => grown(&mut self.clients, index(n, proc)),
            Proc::Store => &mut self.store,
            Proc::Admin => &mut self.admin,
        };
        slot.replace(value)
    }

    /// Every (process, value), in `Proc` order: servers, clients, the
    /// store, the operator.
    pub fn iter(&self) -> impl Iterator<Item = (Proc, &T)> {
        fn numbered<T>(slots: &[Option<T>], of: fn(u64) -> Proc) -> impl Iterator<Item = (Proc, &T)> {
            slots.iter().enumerate().filter_map(move |(n, v)| v.as_ref().map(|v| (of(n as u64), v)))
        }
        let servers = numbered(&self.servers, |n: NodeId| Proc::Server(n));
        let clients = numbered(&self.clients, |n: ClientId| Proc::Client(n));
        let store = self.store.as_ref().map(|v| (Proc::Store, v));
        let admin = self.admin.as_ref().map(|v| (Proc::Admin, v));
        servers.chain(clients).chain(store).chain(admin)
    }

    pub fn keys(&self) -> impl Iterator<Item = Proc> + '_ {
        self.iter().map(|(p, _)| p)
    }
}

impl<T> std::ops::Index<Proc> for ProcMap<T> {
    type Output = T;

    fn index(&self, proc: Proc) -> &T {
        self.get(proc).unwrap_or_else(|| panic!("{proc} is not a process of this run"))
    }
}

impl<T> FromIterator<(Proc, T)> for ProcMap<T> {
    fn from_iter<I: IntoIterator<Item = (Proc, T)>>(iter: I) -> Self {
        let mut map = ProcMap::default();
        for (proc, value) in iter {
            map.insert(proc, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn iterates_in_the_order_a_btree_map_of_the_same_processes_has() {
        let procs = [Proc::Admin, Proc::Client(3), Proc::Server(5), Proc::Store, Proc::Client(0), Proc::Server(1), Proc::Server(0)];
        let map: ProcMap<u32> = procs.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
        let btree: BTreeMap<Proc, u32> = procs.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
        let ours: Vec<(Proc, u32)> = map.iter().map(|(p, v)| (p, *v)).collect();
        let theirs: Vec<(Proc, u32)> = btree.into_iter().collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn absent_processes_are_none_and_insert_replaces() {
        let mut map = ProcMap::default();
        assert_eq!(map.get(Proc::Server(2)), None);
        assert_eq!(map.insert(Proc::Server(2), 'a'), None);
        assert_eq!(map.insert(Proc::Server(2), 'b'), Some('a'));
        assert_eq!(map.get(Proc::Server(1)), None, "a hole below an inserted id stays absent");
        assert_eq!(map.get(Proc::Client(2)), None, "servers and clients are numbered apart");
        *map.get_mut(Proc::Server(2)).expect("present") = 'c';
        assert_eq!(map[Proc::Server(2)], 'c');
        assert_eq!(map.keys().collect::<Vec<_>>(), vec![Proc::Server(2)]);
    }
}
