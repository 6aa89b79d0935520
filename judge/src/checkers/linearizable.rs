//! `linearizable`: the KV workload's history — each operation with the true
//! times of its call and return — must be linearizable (Herlihy & Wing 1990),
//! judged as Jepsen and etcd's robustness tests judge it, by the checker in
//! `leasesim-history` (Wing & Gong's search with porcupine's
//! improvements). An operation still pending when the run ended, or whose
//! client crashed, has an unknown outcome: it may have taken effect at any
//! point after its call, or never. A spent step budget answers "unknown":
//! it fires nothing, and the run says which segments went unjudged
//! ([`NotJudged`], in its text and JSON), never a silent "ok". Stale reads, the commonest failure,
//! are tested first without a search ([`stale_reads`]), so a search that
//! gives up no longer hides them.
//!
//! The history is judged as it is read, one key and one segment at a time,
//! cut at read fences ([`Segment`]): memory stays that of a segment however
//! long the run, and each search is small.

use std::collections::BTreeMap;

use leasesim_core::fmt_secs;
use leasesim_core::service::{Op, Response, ServiceError};

use super::{Judgement, NotJudged, RunRecord, Violation};
use crate::observe::Event;
use crate::vocab::Proc;
use leasesim_history::{check_kv, CheckOptions, History, KvInput, KvOutput, Operation, Verdict};
use stale_reads::KeyReads;

mod stale_reads;

/// Enough for one segment of the simulator's histories (a few hundred
/// operations on one key between two read fences) in well under a second;
/// beyond it the segment's answer is "unknown", never a guess.
const BUDGET_STEPS: u64 = 2_000_000;

/// The client id of the put that stands for a key's state at a cut.
const AT_THE_CUT: u64 = u64::MAX;

/// The violations alone (the unit tests' view).
#[cfg(test)]
fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    judge_run(run).violations
}

/// Judges the run's KV history: its first violation, or what the search
/// could not decide.
pub fn judge_run(run: &RunRecord<'_>) -> Judgement {
    judge_within(run, BUDGET_STEPS)
}

/// [`judge_run`] with each segment's search given `budget_steps`.
fn judge_within(run: &RunRecord<'_>, budget_steps: u64) -> Judgement {
    let mut undecided = Undecided::default();
    let mut keys: BTreeMap<String, Segment> = BTreeMap::new();
    let mut reads: BTreeMap<String, KeyReads> = BTreeMap::new();
    let mut open: BTreeMap<(u64, u64), (String, usize)> = BTreeMap::new();
    for o in run.obs {
        let Proc::Client(client) = o.proc else { continue };
        match &o.event {
            Event::KvCall { seq, op } => {
                let Some(input) = input(op) else { continue };
                let key = input_key(&input).to_string();
                reads.entry(key.clone()).or_default().call(client, *seq, o.at_ns, &input);
                let segment = keys.entry(key.clone()).or_default();
                open.insert((client, *seq), (key, segment.call(client, o.at_ns, input)));
            }
            Event::KvReturn { seq, response } => {
                let Some((key, i)) = open.remove(&(client, *seq)) else { continue };
                let segment = keys.get_mut(&key).expect("a call opened this key's segment");
                let output = output(response);
                let op = &segment.ops[i];
                let key_reads = reads.get_mut(&key).expect("a call opened this key's reads");
                // The direct test first: it needs no search, so it also
                // judges the segments a search would give up on.
                if let Some(stale) = key_reads.answer(client, *seq, op.call_ns, &op.input, o.at_ns, output.as_ref()) {
                    return vec![run.violation("linearizable", stale.at_ns, stale.detail)].into();
                }
                if let Some(fence) = segment.answer(i, o.at_ns, output) {
                    if let Some(violation) = judge(run, &key, segment.cut(fence, o.at_ns), budget_steps, &mut undecided) {
                        return vec![violation].into();
                    }
                }
            }
            // A crashed client's pending operation stays unknown: it keeps
            // its key's segment open until the run ends.
            Event::Crashed => {
                open.retain(|(c, _), _| *c != client);
                reads.values_mut().for_each(|r| r.crashed(client));
            }
            _ => {}
        }
    }
    let violations: Vec<Violation> =
        keys.iter_mut().find_map(|(key, segment)| judge(run, key, segment.take(), budget_steps, &mut undecided)).into_iter().collect();
    Judgement { not_judged: undecided.not_judged("operations").into_iter().collect(), violations }
}

/// The segments a search gave up on (its step budget spent), told in one
/// line however many there were, so a long run's output stays bounded.
#[derive(Default)]
pub(super) struct Undecided {
    segments: usize,
    ops: usize,
    first: Option<String>,
}

impl Undecided {
    /// Notes a segment of `ops` operations (of `what`, e.g. key `a`) between
    /// `from_ns` and `to_ns` left undecided.
    pub(super) fn note(&mut self, what: &str, ops: usize, from_ns: u64, to_ns: u64) {
        self.segments += 1;
        self.ops += ops;
        self.first.get_or_insert_with(|| format!("{what}, {ops} of them, {} .. {}", fmt_secs(from_ns), fmt_secs(to_ns)));
    }

    /// What the run could not judge, if anything (`unit`: what an
    /// operation is, "operations" or "txns").
    pub(super) fn not_judged(self, unit: &str) -> Option<NotJudged> {
        let first = self.first?;
        let needs = format!(
            "a longer search: {} segment(s) ({} {unit}) spent the step budget without an answer (first: {first}); \
             stale reads were checked there without a search",
            self.segments, self.ops
        );
        Some(NotJudged { invariant: "linearizable", needs })
    }
}

/// One key's operations since its last read fence.
///
/// Why segments: the history of a long run is too long to keep and search
/// whole (a simulated hour of the baseline holds about 230,000 KV
/// operations), and it need not be. A *read fence* is a get called while no
/// other operation on its key was pending (every earlier one had returned,
/// with a known outcome) and during which no other operation on the key was
/// called. Everything before it is then ordered before it and everything
/// after it after it, in any linearization, and it is ordered after every
/// write before it: the key's state there is exactly the value it read. So
/// the history is linearizable if and only if each segment is, started
/// from the value read at the fence before it (a put that returns before
/// the segment's first call stands for that value). An operation whose
/// outcome is unknown — its client crashed, or the answer said nothing
/// certain — may take effect at any later time, so while one is in a
/// segment no fence closes it.
#[derive(Default)]
struct Segment {
    /// The key's state at the cut that opened the segment (`None`: absent,
    /// as at the start), and when that cut was.
    start_value: Option<String>,
    start_ns: u64,
    ops: Vec<Operation>,
    /// Operations of the segment without a known outcome yet (or ever).
    pending: usize,
    /// A get that may become a fence: called while nothing else was
    /// pending, and nothing called since.
    fence: Option<usize>,
}

impl Segment {
    fn call(&mut self, client: u64, at_ns: u64, input: KvInput) -> usize {
        let is_get = matches!(input, KvInput::Get { .. });
        self.fence = (is_get && self.pending == 0).then_some(self.ops.len());
        self.pending += 1;
        self.ops.push(Operation { client, call_ns: at_ns, return_ns: None, input, output: None });
        self.ops.len() - 1
    }

    /// Records the answer to operation `i`; returns it if it makes a fence.
    fn answer(&mut self, i: usize, at_ns: u64, output: Option<KvOutput>) -> Option<usize> {
        let output = output?;
        self.ops[i].return_ns = Some(at_ns);
        self.ops[i].output = Some(output);
        self.pending -= 1;
        (self.fence == Some(i) && self.pending == 0).then_some(i)
    }

    /// Closes the segment at the fence `i` (which returned at `at_ns`) and
    /// opens the next one from the value it read; returns the closed one.
    fn cut(&mut self, i: usize, at_ns: u64) -> History {
        let Some(KvOutput::Value(read)) = self.ops[i].output.clone() else { unreachable!("a fence is an answered get") };
        let closed = self.take();
        self.start_value = read;
        self.start_ns = at_ns;
        closed
    }

    /// The segment as a history of its own, leaving it empty.
    fn take(&mut self) -> History {
        let mut ops = Vec::with_capacity(self.ops.len() + 1);
        if let (Some(value), Some(first)) = (&self.start_value, self.ops.first()) {
            let key = input_key(&first.input).to_string();
            let at_ns = self.start_ns.min(first.call_ns).saturating_sub(1);
            let input = KvInput::Put { key, value: value.clone(), lease: None };
            ops.push(Operation { client: AT_THE_CUT, call_ns: at_ns, return_ns: Some(at_ns), input, output: Some(KvOutput::Ok) });
        }
        ops.append(&mut self.ops);
        self.pending = 0;
        self.fence = None;
        History { ops }
    }
}

/// Checks one segment of `key`'s history; the violation if it fails (a
/// search that gives up is noted in `undecided`).
fn judge(run: &RunRecord<'_>, key: &str, history: History, budget_steps: u64, undecided: &mut Undecided) -> Option<Violation> {
    if history.ops.iter().all(|op| op.client == AT_THE_CUT) {
        return None;
    }
    let options = CheckOptions { budget_steps, shrink_budget_steps: budget_steps };
    let report = match check_kv(&history, &options) {
        Ok(report) => report,
        Err(e) => {
            return Some(run.violation("linearizable", run.end_ns, format!("the recorded KV history of {key} is malformed: {e}")));
        }
    };
    let window = match report.verdict {
        Verdict::Linearizable => return None,
        Verdict::Unknown => {
            let from_ns = history.ops.first().map_or(0, |op| op.call_ns);
            let to_ns = history.ops.iter().map(|op| op.return_ns.unwrap_or(op.call_ns)).max().unwrap_or(from_ns);
            undecided.note(&format!("key {key}"), history.ops.len(), from_ns, to_ns);
            return None;
        }
        Verdict::NotLinearizable { window } => window,
    };
    let ops: Vec<&Operation> = window.iter().map(|&i| &history.ops[i]).collect();
    let at_ns = ops.iter().map(|op| op.return_ns.unwrap_or(op.call_ns)).max().unwrap_or(run.end_ns);
    let shown: Vec<String> = ops.iter().map(|op| describe(op)).collect();
    // Operations before the segment are not shown: say what they settled.
    let cut = match history.ops.first() {
        Some(Operation { client: AT_THE_CUT, call_ns, input: KvInput::Put { key, value, .. }, .. }) => {
            format!(" (judged from a read fence at {} that saw {key} = {value})", fmt_secs(call_ns + 1))
        }
        _ => String::new(),
    };
    Some(run.violation(
        "linearizable",
        at_ns,
        format!("no order of these {} operations explains their results{cut}: {}", ops.len(), shown.join("; ")),
    ))
}

fn describe(op: &Operation) -> String {
    if op.client == AT_THE_CUT {
        return format!("{} (the value a read fence saw at {})", op.input, fmt_secs(op.call_ns + 1));
    }
    let returned = op.return_ns.map_or("never returned".to_string(), leasesim_core::fmt_secs);
    let output = op.output.as_ref().map_or("unknown".to_string(), |o| format!("{o:?}"));
    format!("c{} {:?} → {output} [{} .. {returned}]", op.client, op.input, leasesim_core::fmt_secs(op.call_ns))
}

fn input_key(input: &KvInput) -> &str {
    match input {
        KvInput::Get { key } | KvInput::Put { key, .. } | KvInput::Delete { key } | KvInput::Cas { key, .. } => key,
        other => unreachable!("the KV workload sends no {other:?}"),
    }
}

fn input(op: &Op) -> Option<KvInput> {
    Some(match op {
        Op::Get { key } => KvInput::Get { key: key.clone() },
        Op::Put { key, value, lease } => KvInput::Put { key: key.clone(), value: value.clone(), lease: *lease },
        Op::Delete { key } => KvInput::Delete { key: key.clone() },
        Op::Cas { key, expected, value, lease } => {
            KvInput::Cas { key: key.clone(), expected: expected.clone(), value: value.clone(), lease: *lease }
        }
        _ => return None,
    })
}

/// What the answer says happened; `None` when it says nothing certain.
fn output(response: &Response) -> Option<KvOutput> {
    Some(match response {
        Response::Done { .. } => KvOutput::Ok,
        Response::Value { value, .. } => KvOutput::Value(value.clone()),
        Response::Cas { succeeded, .. } => KvOutput::Cas { succeeded: *succeeded },
        Response::Error(ServiceError::LeaseNotFound { .. }) => KvOutput::LeaseNotFound,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use leasesim_core::service::{Op, Response};

    use crate::checkers::testing::{Fixture, MS, S};
    use crate::observe::Event;
    use crate::vocab::Proc;

    fn call(run: &mut Fixture, at_ns: u64, client: u64, seq: u64, op: Op) {
        run.push(at_ns, Proc::Client(client), Event::KvCall { seq, op });
    }

    fn ret(run: &mut Fixture, at_ns: u64, client: u64, seq: u64, response: Response) {
        run.push(at_ns, Proc::Client(client), Event::KvReturn { seq, response });
    }

    fn write_then_read(read_value: &str) -> Fixture {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 5 });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 2 * S + 10 * MS, 2, 1, Response::Value { value: Some(read_value.into()), revision: 5 });
        run
    }

    #[test]
    fn a_read_of_the_last_write_is_fine() {
        assert!(super::check(&write_then_read("a").record()).is_empty());
    }

    #[test]
    fn a_read_of_a_value_never_written_fires() {
        let violations = super::check(&write_then_read("zzz").record());
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("zzz"), "{}", violations[0].detail);
    }

    #[test]
    fn a_stale_read_after_a_completed_write_fires() {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 5 });
        call(&mut run, 2 * S, 1, 2, Op::Put { key: "k0".into(), value: "b".into(), lease: None });
        ret(&mut run, 2 * S + 10 * MS, 1, 2, Response::Done { revision: 6 });
        call(&mut run, 3 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 3 * S + 10 * MS, 2, 1, Response::Value { value: Some("a".into()), revision: 5 });
        assert_eq!(super::check(&run.record()).len(), 1);
    }

    /// A run cut into many segments: a put and a lone get, over and over.
    fn fenced_rounds(run: &mut Fixture, rounds: u64) {
        for r in 0..rounds {
            let at_ns = S + r * 100 * MS;
            call(run, at_ns, 1, 2 * r, Op::Put { key: "k0".into(), value: format!("v{r}"), lease: None });
            ret(run, at_ns + 10 * MS, 1, 2 * r, Response::Done { revision: r + 1 });
            call(run, at_ns + 20 * MS, 2, 2 * r + 1, Op::Get { key: "k0".into() });
            ret(run, at_ns + 30 * MS, 2, 2 * r + 1, Response::Value { value: Some(format!("v{r}")), revision: r + 1 });
        }
    }

    #[test]
    fn a_stale_read_many_fences_later_still_fires() {
        let mut run = Fixture::new();
        fenced_rounds(&mut run, 50);
        assert!(super::check(&run.record()).is_empty(), "fifty fenced rounds are linearizable");
        // After the fences, a read of a value overwritten long ago: only
        // the value carried across the cut can show it is stale.
        call(&mut run, 20 * S, 3, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 20 * S + 10 * MS, 3, 1, Response::Value { value: Some("v3".into()), revision: 4 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("v3") && violations[0].detail.contains("stale read"), "{}", violations[0].detail);
    }

    #[test]
    fn a_read_of_an_absent_key_many_fences_later_is_judged_from_the_cut() {
        // The direct stale-read test leaves reads of an absent key to the
        // search (lease expiry deletes unseen): only the value carried
        // across the cut shows this one is impossible.
        let mut run = Fixture::new();
        fenced_rounds(&mut run, 50);
        call(&mut run, 20 * S, 3, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 20 * S + 10 * MS, 3, 1, Response::Value { value: None, revision: 4 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("read fence") && violations[0].detail.contains("v49"), "{}", violations[0].detail);
    }

    /// `readers` clients each keep a get open at every instant from 1 s to
    /// 1 s + `rounds` × 10 ms (each called 5 ms before the previous one
    /// returns), so no read fence cuts the key's history there; they read
    /// "a" (written at 1 s) throughout.
    fn overlapping_reads(run: &mut Fixture, readers: u64, rounds: u64, value: &str) {
        for r in 0..rounds {
            for c in 0..readers {
                let at_ns = S + 20 * MS + r * 10 * MS + c * MS;
                call(run, at_ns, 10 + c, r, Op::Get { key: "k0".into() });
                ret(run, at_ns + 15 * MS, 10 + c, r, Response::Value { value: Some(value.into()), revision: 1 });
            }
        }
    }

    #[test]
    fn a_stale_read_inside_an_unfenced_stretch_fires_with_its_writes_named() {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 1 });
        call(&mut run, S + 50 * MS, 2, 1, Op::Put { key: "k0".into(), value: "b".into(), lease: None });
        ret(&mut run, S + 60 * MS, 2, 1, Response::Done { revision: 2 });
        // Reads of "a" go on after "b" returned at 1.06 s: the first get
        // called after it is stale, and fires when it returns.
        overlapping_reads(&mut run, 3, 20, "a");
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        let detail = &violations[0].detail;
        assert!(detail.contains("read a") && detail.contains("1.010s") && detail.contains("1.050s"), "{detail}");
        assert!(detail.contains("stale read"), "{detail}");
    }

    #[test]
    fn a_read_of_a_value_whose_write_is_still_open_is_not_stale() {
        // "b" is written by a put that never answers: it may have landed
        // at any time after its call, so reads of "b" after a completed
        // write of "a" are fine, not stale.
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 1 });
        call(&mut run, S + 15 * MS, 2, 1, Op::Put { key: "k0".into(), value: "b".into(), lease: None });
        overlapping_reads(&mut run, 2, 10, "b");
        assert!(super::check(&run.record()).is_empty());
    }

    #[test]
    fn a_failed_compare_and_set_writes_nothing() {
        // The cas of "z" failed, so a read of "z" is of a value never
        // written.
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Cas { key: "k0".into(), expected: Some("q".into()), value: "z".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Cas { succeeded: false, current: None, revision: 1 });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 2 * S + 10 * MS, 2, 1, Response::Value { value: Some("z".into()), revision: 1 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("did not"), "{}", violations[0].detail);
    }

    #[test]
    fn overwritten_values_are_forgotten_and_their_stale_reads_still_fire() {
        // 300 rounds: far past the map's pruning floor, so "v3" has been
        // dropped as overwritten by the time it is read.
        let mut run = Fixture::new();
        fenced_rounds(&mut run, 300);
        assert!(super::check(&run.record()).is_empty());
        call(&mut run, 40 * S, 3, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 40 * S + 10 * MS, 3, 1, Response::Value { value: Some("v3".into()), revision: 4 });
        let violations = super::check(&run.record());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("either no operation wrote it"), "{}", violations[0].detail);
    }

    #[test]
    fn a_get_overlapped_by_a_write_is_no_fence() {
        // The get at 2 s overlaps the put of "b": it may read "a" or "b",
        // so the state after it is not known and no cut may be made there.
        // If a cut were made from its value "a", the later read of "b"
        // would look impossible; the whole history is linearizable (put b
        // lands after the get).
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        ret(&mut run, S + 10 * MS, 1, 1, Response::Done { revision: 1 });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        call(&mut run, 2 * S + MS, 1, 2, Op::Put { key: "k0".into(), value: "b".into(), lease: None });
        ret(&mut run, 2 * S + 5 * MS, 2, 1, Response::Value { value: Some("a".into()), revision: 1 });
        ret(&mut run, 2 * S + 9 * MS, 1, 2, Response::Done { revision: 2 });
        call(&mut run, 3 * S, 3, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 3 * S + 10 * MS, 3, 1, Response::Value { value: Some("b".into()), revision: 2 });
        assert!(super::check(&run.record()).is_empty());
        // And a read of "a" at 3 s is stale (b returned before it).
        call(&mut run, 4 * S, 3, 2, Op::Get { key: "k0".into() });
        ret(&mut run, 4 * S + 10 * MS, 3, 2, Response::Value { value: Some("a".into()), revision: 1 });
        assert_eq!(super::check(&run.record()).len(), 1);
    }

    #[test]
    fn a_crashed_clients_write_keeps_its_segment_open() {
        // c1's put of "x" never answered (c1 crashed): it may land at any
        // later time, so a read of "x" long after the fences is fine.
        let mut run = Fixture::new();
        call(&mut run, S / 2, 4, 1, Op::Put { key: "k0".into(), value: "x".into(), lease: None });
        run.push(S / 2 + MS, Proc::Client(4), Event::Crashed);
        fenced_rounds(&mut run, 20);
        call(&mut run, 20 * S, 3, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 20 * S + 10 * MS, 3, 1, Response::Value { value: Some("x".into()), revision: 99 });
        assert!(super::check(&run.record()).is_empty());
    }

    #[test]
    fn an_unanswered_write_may_or_may_not_have_happened() {
        let mut run = Fixture::new();
        call(&mut run, S, 1, 1, Op::Put { key: "k0".into(), value: "a".into(), lease: None });
        call(&mut run, 2 * S, 2, 1, Op::Get { key: "k0".into() });
        ret(&mut run, 2 * S + 10 * MS, 2, 1, Response::Value { value: Some("a".into()), revision: 5 });
        call(&mut run, 3 * S, 2, 2, Op::Get { key: "k0".into() });
        ret(&mut run, 3 * S + 10 * MS, 2, 2, Response::Value { value: Some("a".into()), revision: 5 });
        assert!(super::check(&run.record()).is_empty());
    }

    /// Concurrent puts and gets on one key, never fenced: a search must
    /// order them.
    fn concurrent_writes_and_reads() -> Fixture {
        let mut run = Fixture::new();
        for client in 1..=4 {
            let at_ns = S + client * MS;
            call(&mut run, at_ns, client, 1, Op::Put { key: "k0".into(), value: format!("v{client}"), lease: None });
            call(&mut run, at_ns + MS / 2, 10 + client, 1, Op::Get { key: "k0".into() });
        }
        for client in 1..=4 {
            let at_ns = S + 20 * MS + client * MS;
            ret(&mut run, at_ns, client, 1, Response::Done { revision: 4 + client });
            let read = Some(format!("v{}", 5 - client));
            ret(&mut run, at_ns + MS / 2, 10 + client, 1, Response::Value { value: read, revision: 8 });
        }
        run
    }

    /// A search that spends its budget says "not judged", with what it
    /// gave up on, instead of passing the run in silence; given the steps,
    /// the same history is judged and passes.
    #[test]
    fn a_search_that_gives_up_says_not_judged() {
        let run = concurrent_writes_and_reads();
        let cut_short = super::judge_within(&run.record(), 1);
        assert!(cut_short.violations.is_empty(), "{:?}", cut_short.violations);
        assert_eq!(cut_short.not_judged.len(), 1, "{cut_short:?}");
        assert_eq!(cut_short.not_judged[0].invariant, "linearizable");
        assert!(cut_short.not_judged[0].needs.contains("1 segment(s) (8 operations)"), "{cut_short:?}");
        let judged = super::judge_run(&run.record());
        assert_eq!(judged, super::Judgement::default(), "a linearizable history, judged whole");
    }
}
