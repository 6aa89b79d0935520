//! The memo of configurations the search has entered.
//!
//! Lowe (2017) and porcupine memoize (set of linearized operations, model
//! state) pairs: a configuration reached again by another order leads
//! nowhere new. We keep that, exactly (a hash to find the bucket, equality to
//! decide), for the operations that must be linearized. For the optional
//! ones (unknown outcomes, relaxed operations of a window) we compare by
//! inclusion instead: a configuration that agrees on the required operations
//! and the state, but has consumed (linearized or dropped) a superset of the
//! optional ones, can only continue with moves the other could also make,
//! since an optional operation may always be dropped. So it is pruned. That
//! collapses the 2^k subsets of k pending unknown operations that plain
//! memoization keeps apart; each entry keeps only its minimal consumed sets.
//!
//! The required set is kept as a `PrefixSet`: numbered in call order, the
//! linearized operations are nearly always "everything up to some point plus
//! a few concurrent ones", so a key is the length of that prefix plus the
//! words after it. Keys stay a few words long however long the history,
//! where porcupine's full bitsets cost n/64 words to hash and store at
//! every step.
//!
//! Lookups only: no iteration order reaches a result, so the search stays
//! deterministic.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// End of an intrusive list.
const NONE: u32 = u32::MAX;

/// The memo. Everything lives in a few flat vectors (an arena) linked by
/// indices: the search inserts once per step, and one allocation per entry
/// cost more than the search itself.
#[derive(Default)]
pub(crate) struct Visited {
    /// Hash of (state id, required set) to the first entry with that hash.
    buckets: FxMap<u64, u32>,
    entries: Vec<Entry>,
    /// Consumed optional sets, chained per entry; each is as many words long
    /// as the `optional` bitset `insert` takes (the same at every call).
    optional_sets: Vec<OptionalSet>,
    /// The words of required sets and optional sets.
    words: Vec<u64>,
}

/// One (required set, state) pair entered.
struct Entry {
    state: u32,
    /// Index of the first word of the required key: every bit before it is set.
    required_from: u32,
    /// Where the key's words are in `words`, and how many.
    required_at: u32,
    required_len: u32,
    /// First of this entry's optional sets (an antichain: none includes
    /// another).
    first_optional: u32,
    /// Next entry in the same bucket.
    next: u32,
}

struct OptionalSet {
    /// Where its words are in `words`.
    at: u32,
    next: u32,
}

impl Visited {
    /// Records a configuration: the required operations linearized, a
    /// bitset of the optional ones linearized or dropped (the same length at
    /// every call), and the state's number (`super::states`: equal states
    /// have equal numbers). Returns false when it, or one at least as good,
    /// was entered before.
    pub(crate) fn insert(&mut self, required: &PrefixSet, optional: &[u64], state: u32) -> bool {
        let (required_from, required) = required.key();
        let mut hasher = FxHasher::default();
        hasher.write_u32(state);
        hasher.write_usize(required_from);
        required.hash(&mut hasher);
        let hash = hasher.finish();

        // A hash collision only costs a comparison: equality decides.
        let mut at = self.buckets.get(&hash).copied().unwrap_or(NONE);
        while at != NONE {
            let e = &self.entries[at as usize];
            let words = &self.words[e.required_at as usize..][..e.required_len as usize];
            if e.state == state && e.required_from as usize == required_from && words == required {
                return self.add_optional(at as usize, optional);
            }
            at = e.next;
        }
        let entry = Entry {
            state,
            required_from: required_from as u32,
            required_at: self.words.len() as u32,
            required_len: required.len() as u32,
            first_optional: NONE,
            next: self.buckets.get(&hash).copied().unwrap_or(NONE),
        };
        self.words.extend_from_slice(required);
        self.buckets.insert(hash, self.entries.len() as u32);
        self.entries.push(entry);
        self.add_optional(self.entries.len() - 1, optional)
    }

    /// Adds `optional` to the entry's antichain unless a member is included
    /// in it; drops the members it is included in.
    fn add_optional(&mut self, entry: usize, optional: &[u64]) -> bool {
        let len = optional.len();
        let mut link = self.entries[entry].first_optional;
        let mut previous = NONE;
        while link != NONE {
            let set = &self.optional_sets[link as usize];
            let words = &self.words[set.at as usize..][..len];
            let next = set.next;
            if is_subset(words, optional) {
                return false;
            }
            if is_subset(optional, words) {
                // Unlink: the new set is at least as good. (Its slot is not
                // reused; the memo only grows during one search.)
                match previous {
                    NONE => self.entries[entry].first_optional = next,
                    p => self.optional_sets[p as usize].next = next,
                }
            } else {
                previous = link;
            }
            link = next;
        }
        let set = OptionalSet { at: self.words.len() as u32, next: self.entries[entry].first_optional };
        self.words.extend_from_slice(optional);
        self.entries[entry].first_optional = self.optional_sets.len() as u32;
        self.optional_sets.push(set);
        true
    }
}

/// A set of operation numbers that is mostly a prefix `0..low`.
pub(crate) struct PrefixSet {
    words: Vec<u64>,
    /// The smallest number not in the set.
    low: usize,
    /// One past the largest number in the set (0 when empty).
    high: usize,
}

/// What [`PrefixSet::insert`] returns to give to [`PrefixSet::remove`].
#[derive(Clone, Copy)]
pub(crate) struct Marks {
    low: usize,
    high: usize,
}

impl PrefixSet {
    pub(crate) fn new(len: usize) -> Self {
        PrefixSet { words: vec![0; len.div_ceil(64)], low: 0, high: 0 }
    }

    pub(crate) fn contains(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// Adds `i` (absent); returns the marks that undo it.
    pub(crate) fn insert(&mut self, i: usize) -> Marks {
        let marks = Marks { low: self.low, high: self.high };
        self.words[i / 64] |= 1 << (i % 64);
        self.high = self.high.max(i + 1);
        while self.low < self.high && self.contains(self.low) {
            self.low += 1;
        }
        marks
    }

    /// Removes `i`, which the insert that returned `marks` added; removals
    /// must come in reverse order of insertion (the search's stack order).
    pub(crate) fn remove(&mut self, i: usize, marks: Marks) {
        self.words[i / 64] &= !(1 << (i % 64));
        (self.low, self.high) = (marks.low, marks.high);
    }

    /// A canonical key: the first word not all set, and the words from it to
    /// the last word with a member.
    fn key(&self) -> (usize, &[u64]) {
        let from = self.low / 64;
        let to = self.high.div_ceil(64).max(from);
        (from, &self.words[from..to])
    }
}

fn is_subset(small: &[u64], large: &[u64]) -> bool {
    small.iter().zip(large).all(|(s, l)| s & !l == 0)
}

/// The multiply-rotate hash rustc uses (FxHash): the keys are machine words,
/// for which SipHash's DoS resistance buys nothing and costs most of a lookup.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i.into());
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i.into());
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // Spread the high bits into the low ones the table indexes by.
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(members: &[usize]) -> PrefixSet {
        let mut s = PrefixSet::new(200);
        for &m in members {
            s.insert(m);
        }
        s
    }

    #[test]
    fn antichain_unlinks_every_superset() {
        let mut v = Visited::default();
        let none = set(&[]);
        assert!(v.insert(&none, &[0b0110], 1));
        assert!(v.insert(&none, &[0b1010], 1));
        assert!(v.insert(&none, &[0b0101], 1));
        assert!(v.insert(&none, &[0b0010], 1), "included in the first two");
        assert!(!v.insert(&none, &[0b1110], 1));
        assert!(!v.insert(&none, &[0b0111], 1));
        assert!(v.insert(&none, &[0b1001], 1), "incomparable with 0b0010 and 0b0101");
    }

    #[test]
    fn exact_on_required_and_state_inclusive_on_optional() {
        let mut v = Visited::default();
        let one = set(&[0]);
        assert!(v.insert(&one, &[0b010], 7));
        assert!(!v.insert(&one, &[0b010], 7), "the same configuration");
        assert!(!v.insert(&one, &[0b110], 7), "more optional operations consumed: no better");
        assert!(v.insert(&one, &[0b100], 7), "incomparable optional set");
        assert!(v.insert(&one, &[0b000], 7), "fewer consumed: better");
        assert!(!v.insert(&one, &[0b100], 7), "now subsumed by the empty set");
        assert!(v.insert(&set(&[0, 1]), &[0b000], 7), "other required set");
        assert!(v.insert(&one, &[0b010], 8), "other state");
    }

    #[test]
    fn prefix_set_keys_are_canonical_and_undo_exactly() {
        let in_order = set(&(0..130).collect::<Vec<_>>());
        let shuffled = set(&(0..130).rev().collect::<Vec<_>>());
        assert_eq!(in_order.key(), shuffled.key());
        assert_eq!(in_order.key(), (2, &[0b11u64][..]));
        assert_ne!(set(&[0, 1, 3]).key(), set(&[0, 1, 2]).key());
        assert_eq!(set(&[]).key(), (0, &[][..]));

        let mut s = set(&[0, 1, 5]);
        let before = (s.key().0, s.key().1.to_vec());
        let marks = s.insert(2);
        assert!(s.contains(2));
        let marks_3 = s.insert(3);
        assert_eq!((s.low, s.high), (4, 6));
        s.remove(3, marks_3);
        s.remove(2, marks);
        assert_eq!((s.key().0, s.key().1.to_vec()), before);
        assert_eq!((s.low, s.high), (2, 6));
    }
}
