//! A direct test for the commonest way a KV history fails to be
//! linearizable, a **stale read**, in one pass and a map per key, before
//! the segment search of `linearizable` runs.
//!
//! Why it exists: the search is exact but can give up. A read fence
//! needs an instant with nothing else open on the key, and readers that
//! keep up to 16 operations open (reports/leader-lease-reads.md) leave
//! none for as long as they run, so a segment grows to 300–600
//! operations, the search spends its 2,000,000 steps and answers
//! "unknown", which fires nothing (the run says "not judged"). On the 12 seeds of
//! sim/tests/it/lease_reads.rs's drift scenario the search alone fired in 5;
//! the 7 others each ended in such a segment (measured with a debug print
//! of each segment's verdict, not committed), and 6 of them held a stale
//! read this test finds. It needs no search, so long segments cost it
//! nothing.
//!
//! The rule (sound: it fires only on histories no order explains). A get
//! G that returned `v` is stale when some write W (a put or delete that
//! returned ok, a compare-and-set that succeeded) returned before G was
//! called, and every operation that could have written `v` (a put or
//! compare-and-set of `v`, unless it answered that it did not write)
//! returned before W was called. Then every order puts each writer of `v`
//! before W, W before G, and nothing after W writes `v` (W's own value is
//! not `v`, or W would be one of them): G cannot have read `v`. A get of a
//! value nothing wrote before it returned is caught too. Reads of an absent
//! key are left to the search (lease expiry deletes at times no client
//! sees).

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;
use leasesim_history::{KvInput, KvOutput};

/// The writes of one value.
#[derive(Default)]
struct Writers {
    /// Called, and not yet known to have written or not (pending, or
    /// never to be known: timed out, client crashed).
    open: u32,
    /// The latest return among those that wrote, if any did.
    last_return_ns: Option<u64>,
}

/// What one key's history has shown so far.
#[derive(Default)]
pub(super) struct KeyReads {
    /// Every value called to be written, with its writers. Values known to
    /// be overwritten before every get still open are dropped (see
    /// [`KeyReads::forget_overwritten`]): a later read of one is stale, and
    /// so is a read of a value never written, so the two need no telling
    /// apart beyond the wording.
    writers: BTreeMap<String, Writers>,
    /// The latest call among completed writes: (returned at, called at),
    /// kept for the writes returned at the latest instant apart, since a
    /// get called at that same instant must not count them as before it.
    latest_write: LatestWrite,
    /// Open gets: (client, seq) → the latest call among writes that
    /// returned before it was called.
    open_gets: BTreeMap<(u64, u64), u64>,
    /// Values dropped as overwritten, counted for the wording.
    forgotten: u64,
    /// The map's size at which it is next pruned.
    prune_at: usize,
}

/// The smallest map worth pruning.
const PRUNE_FLOOR: usize = 64;

/// The latest call among the writes that returned, with the writes
/// returned at the most recent instant kept apart.
#[derive(Default)]
struct LatestWrite {
    /// Over writes that returned strictly before `now_ns`.
    settled_call_ns: Option<u64>,
    /// Over writes that returned at `now_ns`.
    now_ns: u64,
    now_call_ns: Option<u64>,
}

impl LatestWrite {
    fn returned(&mut self, call_ns: u64, return_ns: u64) {
        if return_ns > self.now_ns {
            self.settled_call_ns = self.settled_call_ns.max(self.now_call_ns.take());
            self.now_ns = return_ns;
        }
        self.now_call_ns = self.now_call_ns.max(Some(call_ns));
    }

    /// The latest call among writes that returned strictly before `at_ns`.
    fn before(&self, at_ns: u64) -> Option<u64> {
        if self.now_ns < at_ns {
            self.settled_call_ns.max(self.now_call_ns)
        } else {
            self.settled_call_ns
        }
    }
}

/// A stale read found: what to say and when it happened.
pub(super) struct Stale {
    pub at_ns: u64,
    pub detail: String,
}

impl KeyReads {
    /// An operation `(client, seq)` on this key called at `at_ns`.
    pub fn call(&mut self, client: u64, seq: u64, at_ns: u64, input: &KvInput) {
        match input {
            KvInput::Get { .. } => {
                let fence = self.latest_write.before(at_ns).unwrap_or(0);
                self.open_gets.insert((client, seq), fence);
            }
            KvInput::Put { value, .. } | KvInput::Cas { value, .. } => self.writers.entry(value.clone()).or_default().open += 1,
            _ => {}
        }
    }

    /// The answer to operation `(client, seq)`, called at `call_ns` with
    /// `input`; `output` is `None` when the answer says nothing certain.
    /// Returns the stale read it shows, if it is one.
    pub fn answer(&mut self, client: u64, seq: u64, call_ns: u64, input: &KvInput, at_ns: u64, output: Option<&KvOutput>) -> Option<Stale> {
        if let KvInput::Get { key } = input {
            let fence_ns = self.open_gets.remove(&(client, seq))?;
            let Some(KvOutput::Value(Some(value))) = output else { return None };
            let stale = self.judge_read(key, value, call_ns, fence_ns, at_ns);
            self.forget_overwritten();
            return stale;
        }
        let wrote = match (input, output) {
            (KvInput::Put { .. } | KvInput::Delete { .. }, Some(KvOutput::Ok)) => true,
            (KvInput::Cas { .. }, Some(KvOutput::Cas { succeeded })) => *succeeded,
            _ => false,
        };
        if wrote {
            self.latest_write.returned(call_ns, at_ns);
        }
        if let (KvInput::Put { value, .. } | KvInput::Cas { value, .. }, Some(_)) = (input, output) {
            // A known answer closes the writer; an unknown one leaves it
            // open for good (it may land at any time).
            if let Some(w) = self.writers.get_mut(value) {
                w.open -= 1;
                if wrote {
                    w.last_return_ns = w.last_return_ns.max(Some(at_ns));
                }
            }
        }
        self.forget_overwritten();
        None
    }

    /// A crashed client's open get will never return.
    pub fn crashed(&mut self, client: u64) {
        self.open_gets.retain(|(c, _), _| *c != client);
    }

    fn judge_read(&self, key: &str, value: &str, call_ns: u64, fence_ns: u64, at_ns: u64) -> Option<Stale> {
        let span = format!("[{} .. {}]", fmt_secs(call_ns), fmt_secs(at_ns));
        let detail = match self.writers.get(value) {
            Some(Writers { open: 0, last_return_ns: Some(last) }) if *last < fence_ns => format!(
                "a get of {key} {span} read {value}, whose last write returned at {}, but a write of {key} called at {} \
                 after that returned before the get was called (a stale read)",
                fmt_secs(*last),
                fmt_secs(fence_ns)
            ),
            Some(Writers { open: 0, last_return_ns: None }) => {
                format!("a get of {key} {span} read {value}, which every operation that tried to write it answered that it did not")
            }
            Some(_) => return None,
            None if self.forgotten > 0 => format!(
                "a get of {key} {span} read {value}: either no operation wrote it, or every write of it returned \
                 before a write of {key} that returned before this get was called (a stale read)"
            ),
            None => format!("a get of {key} {span} read {value}, which no operation wrote"),
        };
        Some(Stale { at_ns, detail })
    }

    /// Drops the values every open get (and every later one) would read
    /// stale, or could never read: all their writers answered, and none
    /// wrote or the last returned before the call of a write that returned
    /// before each open get was called (later gets are called after it).
    /// This keeps the map to the values still readable, however long the
    /// run; done when the map has doubled since, so its cost per operation
    /// stays constant.
    fn forget_overwritten(&mut self) {
        if self.writers.len() < self.prune_at.max(PRUNE_FLOOR) {
            return;
        }
        let settled = self.latest_write.settled_call_ns.unwrap_or(0);
        let horizon = self.open_gets.values().copied().min().map_or(settled, |oldest| oldest.min(settled));
        let before = self.writers.len();
        self.writers.retain(|_, w| w.open > 0 || w.last_return_ns.is_some_and(|last| last >= horizon));
        self.forgotten += (before - self.writers.len()) as u64;
        self.prune_at = (2 * self.writers.len()).max(PRUNE_FLOOR);
    }
}
