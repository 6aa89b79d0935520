//! Splitting a history into independent sub-histories (P-compositionality).
//!
//! Linearizability is compositional (Herlihy & Wing 1990): a history over
//! independent objects is linearizable exactly when each object's
//! sub-history is. Lowe (2017) and porcupine exploit this by checking each
//! key on its own, which turns one exponential search into many small ones.
//! For leasesim's KV an operation may touch a key and a lease, and a revoke
//! deletes every key attached to its lease, so the independent objects are
//! the connected components of the "touches the same key or lease" relation:
//! a union-find over the resources each operation names.

use std::collections::BTreeMap;

/// Groups operation indices `0..resources.len()` so that two operations
/// naming a common resource (transitively) share a group. An operation that
/// names nothing forms a group of its own. Groups are ordered by their first
/// operation and each lists its operations in ascending order, so the result
/// never depends on hash order.
pub fn connected_components<R: Ord>(resources: &[Vec<R>]) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..resources.len()).collect();
    // The first operation that named each resource stands for it.
    let mut owner: BTreeMap<&R, usize> = BTreeMap::new();
    for (op, names) in resources.iter().enumerate() {
        for r in names {
            match owner.get(r) {
                Some(&other) => union(&mut parent, op, other),
                None => {
                    owner.insert(r, op);
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for op in 0..resources.len() {
        let root = find(&mut parent, op);
        groups.entry(root).or_default().push(op);
    }
    let mut out: Vec<Vec<usize>> = groups.into_values().collect();
    out.sort_by_key(|g| g[0]);
    out
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        // Path halving keeps the trees shallow without recursion.
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        // The smaller index becomes the root: deterministic and stable.
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        parent[hi] = lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_keys_split_and_shared_leases_join() {
        // 0: put a, 1: put b with lease 7, 2: get c, 3: put a with lease 7,
        // 4: revoke 7, 5: grant with no recorded id.
        let r: Vec<Vec<&str>> = vec![vec!["a"], vec!["b", "L7"], vec!["c"], vec!["a", "L7"], vec!["L7"], vec![]];
        assert_eq!(connected_components(&r), vec![vec![0, 1, 3, 4], vec![2], vec![5]]);
    }

    #[test]
    fn empty_history_has_no_groups() {
        assert!(connected_components::<u8>(&[]).is_empty());
    }
}
