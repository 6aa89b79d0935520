//! The simulated network: every message between processes goes through one
//! deterministic queue per receiver, on madsim's executor and timers.
//!
//! Why not madsim's own sockets: each of its sends formats the destination
//! address, draws two random in-process delays and arms two or three timers,
//! and a receiver needs a task and a channel of its own (its `recv_from` is
//! not cancellation-safe). That machinery was the largest single cost of a
//! run. Here a send is a push into the receiver's inbox, and the receiver's
//! host loop sleeps until the earliest of its next delivery and its own
//! timer, woken early only when a new message lands before that instant.
//!
//! The meaning is the one the scenario format states, all decided at send
//! time from the run's seed: a one-way latency drawn uniformly from the
//! range (so messages reorder), loss and duplication per message, directed
//! links cut by partitions, isolations and one-way blocks. A message to a
//! process that is down is lost, and a crash loses everything in flight to
//! the crashed process. A paused process's inbox keeps filling; it reads the
//! backlog, in delivery order, when it resumes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::task::{Poll, Waker};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::wire::Wire;
use super::wire_kind::is_of_kind;
use crate::vocab::ProcMap;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::{MessageEffect, MessageFault};

/// One message on its way: ordered by delivery time, then by send order.
/// The message itself waits in the inbox's slots: a `Wire` is large, and a
/// heap moves its elements on every push and pop.
struct Parcel {
    deliver_at_ns: u64,
    seq: u64,
    slot: usize,
}

impl PartialEq for Parcel {
    fn eq(&self, other: &Self) -> bool {
        (self.deliver_at_ns, self.seq) == (other.deliver_at_ns, other.seq)
    }
}

impl Eq for Parcel {}

impl PartialOrd for Parcel {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Parcel {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deliver_at_ns, self.seq).cmp(&(other.deliver_at_ns, other.seq))
    }
}

/// What wakes a receiver's sleeping host loop early. It keeps the contract
/// of the `tokio::sync::Notify` it replaced, used with one waiter and
/// `notify_one` only, to the letter: a ring with nobody waiting leaves a
/// permit that the next wait takes at once; a ring while the loop waits
/// wakes it and leaves no permit, so a second ring before the loop runs
/// does; a wait dropped after it was rung but before it saw the ring hands
/// the ring on as a permit. Any difference would change when loops run and
/// so every run's schedule; the gain is the cost: tokio's atomics, waiter
/// list and its own lock, and an `Arc` clone per sleep, were about 3% of a
/// run (callgrind, baseline seed 1), where this is a few field writes under
/// the network's lock, which the loop holds anyway.
#[derive(Default)]
pub struct Doorbell {
    /// Rung while nobody waited: the next wait returns at once.
    permit: bool,
    /// The waiting loop's waker, until a ring takes it.
    waiter: Option<Waker>,
    /// Rung while the loop waited, and not yet seen by it.
    rung: bool,
    /// Bumped by a crash: waits of a dead incarnation no longer count
    /// (tokio's `Notify` was replaced whole).
    incarnation: u64,
}

/// Where one wait on a doorbell is (the `Notified` future's states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Not polled yet.
    Init,
    /// Registered with the doorbell of this incarnation.
    Waiting(u64),
    Done,
}

impl Doorbell {
    fn ring(&mut self) {
        match self.waiter.take() {
            Some(waker) => {
                self.rung = true;
                waker.wake();
            }
            None => self.permit = true,
        }
    }

    fn poll(&mut self, wait: &mut Wait, waker: &Waker) -> Poll<()> {
        match *wait {
            Wait::Init if std::mem::take(&mut self.permit) => *wait = Wait::Done,
            Wait::Init => {
                self.waiter = Some(waker.clone());
                *wait = Wait::Waiting(self.incarnation);
            }
            Wait::Waiting(incarnation) if incarnation != self.incarnation => {}
            Wait::Waiting(_) if std::mem::take(&mut self.rung) => *wait = Wait::Done,
            Wait::Waiting(_) => match &mut self.waiter {
                Some(waiting) if waiting.will_wake(waker) => {}
                waiting => *waiting = Some(waker.clone()),
            },
            Wait::Done => {}
        }
        if *wait == Wait::Done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    fn drop_wait(&mut self, wait: Wait) {
        if wait == Wait::Waiting(self.incarnation) {
            self.waiter = None;
            if std::mem::take(&mut self.rung) {
                self.permit = true;
            }
        }
    }

    fn crash(&mut self) {
        *self = Doorbell { incarnation: self.incarnation + 1, ..Doorbell::default() };
    }
}

/// A receiver's queue and how to wake it.
#[derive(Default)]
struct Inbox {
    queue: BinaryHeap<Reverse<Parcel>>,
    /// Messages by slot; `free` lists the empty slots for reuse.
    slots: Vec<Option<(Proc, Wire)>>,
    free: Vec<usize>,
    doorbell: Doorbell,
    /// The true instant its host loop sleeps until, if it sleeps: a message
    /// due earlier must wake it; one due later will be found when it wakes.
    sleeping_until_ns: Option<u64>,
}

/// The network's settings and state (the world holds it behind a mutex).
pub struct Network {
    latency_ns: (u64, u64),
    loss: f64,
    duplicate: f64,
    /// Directed links that active faults cut, with how many faults cut each.
    cut: BTreeMap<(Proc, Proc), u32>,
    /// Directed links that active faults slow: each message on one takes
    /// up to this much longer (drawn per message, so the link reorders).
    slow: BTreeMap<(Proc, Proc), Vec<u64>>,
    /// Active `messages` faults, by fault number, in the order they fired.
    aimed: Vec<(usize, MessageFault)>,
    inboxes: ProcMap<Inbox>,
    rng: ChaCha8Rng,
    sent: u64,
}

/// What the active `messages` faults do to one send.
#[derive(Default)]
struct Aim {
    dropped: bool,
    /// Added to the drawn latency.
    extra_ns: u64,
    /// A copy arrives this much after the message.
    again_ns: Option<u64>,
}

/// What became of one send (for the step's counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Queued,
    Lost,
    Cut,
    ReceiverDown,
}

impl Network {
    pub fn new(latency_ns: (u64, u64), loss: f64, duplicate: f64, procs: impl IntoIterator<Item = Proc>, rng: ChaCha8Rng) -> Self {
        assert!(latency_ns.0 <= latency_ns.1, "latency range {latency_ns:?} is not ordered");
        let inboxes = procs.into_iter().map(|p| (p, Inbox::default())).collect();
        Network { latency_ns, loss, duplicate, cut: BTreeMap::new(), slow: BTreeMap::new(), aimed: Vec::new(), inboxes, rng, sent: 0 }
    }

    /// Sends `wire` from `from` to `to` at true time `now_ns`. `to_up` says
    /// whether the receiver is running (a message to a dead process is lost).
    pub fn send(&mut self, now_ns: u64, from: Proc, to: Proc, wire: Wire, to_up: bool) -> Fate {
        if !to_up {
            return Fate::ReceiverDown;
        }
        if self.cut.contains_key(&(from, to)) {
            return Fate::Cut;
        }
        if self.loss > 0.0 && self.rng.gen_bool(self.loss) {
            return Fate::Lost;
        }
        // No draw is added for a run without `messages` faults, so such
        // runs keep their schedules.
        let aim = if self.aimed.is_empty() { Aim::default() } else { self.aim(&wire) };
        if aim.dropped {
            return Fate::Lost;
        }
        if self.duplicate > 0.0 && self.rng.gen_bool(self.duplicate) {
            self.push(now_ns, from, to, wire.clone(), aim.extra_ns);
        }
        if let Some(again_ns) = aim.again_ns {
            self.push(now_ns, from, to, wire.clone(), aim.extra_ns + again_ns);
        }
        self.push(now_ns, from, to, wire, aim.extra_ns);
        Fate::Queued
    }

    /// What the active `messages` faults do to `wire`: each matching one
    /// in turn (a drop ends it; delays and reorderings add up).
    fn aim(&mut self, wire: &Wire) -> Aim {
        let mut aim = Aim::default();
        for (_, fault) in self.aimed.iter().filter(|(_, f)| is_of_kind(wire, f.kind)) {
            match fault.effect {
                MessageEffect::Drop(p) => {
                    if self.rng.gen_bool(p) {
                        aim.dropped = true;
                        return aim;
                    }
                }
                MessageEffect::Delay(ns) => aim.extra_ns += ns,
                MessageEffect::Reorder(ns) => aim.extra_ns += self.rng.gen_range(0..=ns),
                MessageEffect::Duplicate(ns) => aim.again_ns = Some(aim.again_ns.unwrap_or(0).max(ns)),
            }
        }
        aim
    }

    fn push(&mut self, now_ns: u64, from: Proc, to: Proc, wire: Wire, extra_ns: u64) {
        let mut latency_ns = self.rng.gen_range(self.latency_ns.0..=self.latency_ns.1) + extra_ns;
        if let Some(extra_ns) = self.slow.get(&(from, to)).and_then(|e| e.iter().max()) {
            latency_ns += self.rng.gen_range(0..=*extra_ns);
        }
        let deliver_at_ns = now_ns + latency_ns;
        self.sent += 1;
        let inbox = self.inboxes.get_mut(to).expect("every process has an inbox");
        let slot = match inbox.free.pop() {
            Some(slot) => {
                inbox.slots[slot] = Some((from, wire));
                slot
            }
            None => {
                inbox.slots.push(Some((from, wire)));
                inbox.slots.len() - 1
            }
        };
        inbox.queue.push(Reverse(Parcel { deliver_at_ns, seq: self.sent, slot }));
        if inbox.sleeping_until_ns.is_some_and(|until_ns| deliver_at_ns < until_ns) {
            // Wake it once; it re-arms for the new earliest instant.
            inbox.sleeping_until_ns = None;
            inbox.doorbell.ring();
        }
    }

    /// The next message for `proc` due at or before `now_ns`, if any.
    pub fn take_due(&mut self, proc: Proc, now_ns: u64) -> Option<(Proc, Wire)> {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        if inbox.queue.peek().is_some_and(|p| p.0.deliver_at_ns <= now_ns) {
            let Reverse(parcel) = inbox.queue.pop().expect("peeked");
            inbox.free.push(parcel.slot);
            return inbox.slots[parcel.slot].take();
        }
        None
    }

    /// When `proc`'s next message is due.
    pub fn next_delivery_ns(&self, proc: Proc) -> Option<u64> {
        self.inboxes[proc].queue.peek().map(|p| p.0.deliver_at_ns)
    }

    /// `proc`'s loop goes to sleep until the earlier of `timer_ns` and its
    /// next delivery (None: until a message), which it returns; a message
    /// due before then rings its doorbell (`poll_doorbell`).
    pub fn sleep(&mut self, proc: Proc, timer_ns: Option<u64>) -> Option<u64> {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        let until_ns = match (timer_ns, inbox.queue.peek().map(|p| p.0.deliver_at_ns)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // No instant: it waits for a message, so any message wakes it.
        inbox.sleeping_until_ns = Some(until_ns.unwrap_or(u64::MAX));
        until_ns
    }

    /// Polls `proc`'s loop's `wait` on its doorbell.
    pub fn poll_doorbell(&mut self, proc: Proc, wait: &mut Wait, waker: &Waker) -> Poll<()> {
        self.inboxes.get_mut(proc).expect("every process has an inbox").doorbell.poll(wait, waker)
    }

    /// `proc`'s loop gave up `wait` (it woke for another reason).
    pub fn drop_doorbell_wait(&mut self, proc: Proc, wait: Wait) {
        if let Some(inbox) = self.inboxes.get_mut(proc) {
            inbox.doorbell.drop_wait(wait);
        }
    }

    /// Wakes `proc`'s loop if it sleeps (its clock changed: its timer must
    /// be re-armed), or makes its next sleep return at once.
    pub fn wake(&mut self, proc: Proc) {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        inbox.sleeping_until_ns = None;
        inbox.doorbell.ring();
    }

    /// `proc`'s loop is awake: it reads its inbox before it sleeps again.
    pub fn awake(&mut self, proc: Proc) {
        self.inboxes.get_mut(proc).expect("every process has an inbox").sleeping_until_ns = None;
    }

    /// A crash: what was in flight to `proc` is lost, and its next
    /// incarnation starts awake with an empty inbox.
    pub fn crash(&mut self, proc: Proc) {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        inbox.queue.clear();
        inbox.slots.clear();
        inbox.free.clear();
        inbox.sleeping_until_ns = None;
        // A permit left by a wake-up for the dead incarnation would only
        // cost the next one a spurious turn; a fresh doorbell drops it.
        inbox.doorbell.crash();
    }

    /// One more fault cuts each of `links`.
    pub fn cut(&mut self, links: &[(Proc, Proc)]) {
        for link in links {
            *self.cut.entry(*link).or_insert(0) += 1;
        }
    }

    /// One fault fewer cuts each of `links`.
    pub fn mend(&mut self, links: &[(Proc, Proc)]) {
        for link in links {
            if let Some(count) = self.cut.get_mut(link) {
                *count -= 1;
                if *count == 0 {
                    self.cut.remove(link);
                }
            }
        }
    }

    /// Slows each of `links` by up to `extra_ns` per message.
    pub fn slow(&mut self, links: &[(Proc, Proc)], extra_ns: u64) {
        for link in links {
            self.slow.entry(*link).or_default().push(extra_ns);
        }
    }

    /// Undoes one `slow` of each of `links`.
    pub fn unslow(&mut self, links: &[(Proc, Proc)], extra_ns: u64) {
        for link in links {
            if let Some(all) = self.slow.get_mut(link) {
                if let Some(at) = all.iter().position(|e| *e == extra_ns) {
                    all.remove(at);
                }
                if all.is_empty() {
                    self.slow.remove(link);
                }
            }
        }
    }

    pub fn mend_all(&mut self) {
        self.cut.clear();
        self.slow.clear();
        self.aimed.clear();
    }

    /// Fault number `id` aims `fault` at every message of its kind.
    pub fn aim_at(&mut self, id: usize, fault: MessageFault) {
        self.aimed.push((id, fault));
    }

    /// Fault number `id` is undone.
    pub fn stop_aiming(&mut self, id: usize) {
        self.aimed.retain(|(i, _)| *i != id);
    }

    pub fn loss(&self) -> f64 {
        self.loss
    }

    pub fn set_loss(&mut self, loss: f64) {
        self.loss = loss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn net(loss: f64, duplicate: f64) -> Network {
        let procs = [Proc::Server(1), Proc::Server(2), Proc::Client(0)];
        Network::new((1_000_000, 10_000_000), loss, duplicate, procs, ChaCha8Rng::seed_from_u64(7))
    }

    fn ping() -> Wire {
        Wire::Admin(leasesim_core::raft::ConfChange::AddServer(9))
    }

    #[test]
    fn messages_arrive_within_the_latency_range_in_delivery_order() {
        let mut n = net(0.0, 0.0);
        for _ in 0..50 {
            assert_eq!(n.send(0, Proc::Server(1), Proc::Server(2), ping(), true), Fate::Queued);
        }
        assert!(n.take_due(Proc::Server(2), 999_999).is_none(), "nothing is due before the minimum latency");
        let mut last_ns = 0;
        let mut got = 0;
        while let Some(at_ns) = n.next_delivery_ns(Proc::Server(2)) {
            assert!((1_000_000..=10_000_000).contains(&at_ns));
            assert!(at_ns >= last_ns);
            last_ns = at_ns;
            assert!(n.take_due(Proc::Server(2), at_ns).is_some());
            got += 1;
        }
        assert_eq!(got, 50);
    }

    #[test]
    fn cut_links_are_directed_and_counted() {
        let mut n = net(0.0, 0.0);
        let link = (Proc::Server(1), Proc::Server(2));
        n.cut(&[link]);
        n.cut(&[link]);
        assert_eq!(n.send(0, link.0, link.1, ping(), true), Fate::Cut);
        assert_eq!(n.send(0, link.1, link.0, ping(), true), Fate::Queued, "the other direction still works");
        n.mend(&[link]);
        assert_eq!(n.send(0, link.0, link.1, ping(), true), Fate::Cut, "a second fault still cuts it");
        n.mend(&[link]);
        assert_eq!(n.send(0, link.0, link.1, ping(), true), Fate::Queued);
    }

    #[test]
    fn loss_duplication_and_dead_receivers() {
        let mut n = net(0.5, 0.0);
        let lost = (0..1000).filter(|_| n.send(0, Proc::Server(1), Proc::Client(0), ping(), true) == Fate::Lost).count();
        assert!((400..600).contains(&lost), "about half lost, got {lost}");
        let mut n = net(0.0, 1.0);
        n.send(0, Proc::Server(1), Proc::Client(0), ping(), true);
        assert!(n.take_due(Proc::Client(0), u64::MAX).is_some());
        assert!(n.take_due(Proc::Client(0), u64::MAX).is_some(), "duplicated");
        assert!(n.take_due(Proc::Client(0), u64::MAX).is_none());
        assert_eq!(n.send(0, Proc::Server(1), Proc::Client(0), ping(), false), Fate::ReceiverDown);
        n.send(0, Proc::Server(1), Proc::Server(2), ping(), true);
        n.crash(Proc::Server(2));
        assert!(n.take_due(Proc::Server(2), u64::MAX).is_none(), "a crash loses what was in flight");
    }

    #[test]
    fn aimed_faults_touch_only_their_kind_and_stop_when_undone() {
        use leasesim_core::raft::Message;
        use leasesim_scenario::WireKind;
        let vote = || Wire::Peer(Message::VoteResponse { term: 2, pre_vote: false, granted: true });
        let append = || {
            Wire::Peer(Message::AppendResponse {
                term: 2,
                success: true,
                match_index: 1,
                conflict_index: 0,
                conflict_term: None,
                read_ctx: 0,
            })
        };
        let (s1, s2) = (Proc::Server(1), Proc::Server(2));
        let mut n = Network::new((5, 5), 0.0, 0.0, [s1, s2], ChaCha8Rng::seed_from_u64(1));
        n.aim_at(3, MessageFault { kind: WireKind::VoteReply, effect: MessageEffect::Delay(1_000) });
        n.aim_at(4, MessageFault { kind: WireKind::AppendReply, effect: MessageEffect::Duplicate(500) });
        n.send(0, s1, s2, vote(), true);
        n.send(0, s1, s2, append(), true);
        let due: Vec<u64> = std::iter::from_fn(|| n.next_delivery_ns(s2).inspect(|&at| drop(n.take_due(s2, at)))).collect();
        assert_eq!(due, vec![5, 505, 1_005], "append at 5 and its copy at 505; the vote held back to 1005");
        n.stop_aiming(3);
        n.send(0, s1, s2, vote(), true);
        assert_eq!(n.next_delivery_ns(s2), Some(5), "undone: the vote is on time again");
        n.aim_at(5, MessageFault { kind: WireKind::VoteReply, effect: MessageEffect::Drop(1.0) });
        assert_eq!(n.send(0, s1, s2, vote(), true), Fate::Lost);
        assert_eq!(n.send(0, s1, s2, append(), true), Fate::Queued);
        n.mend_all();
        assert_eq!(n.send(0, s1, s2, vote(), true), Fate::Queued, "the settle phase heals aimed faults too");
    }

    #[test]
    fn a_sleeping_receiver_is_woken_only_by_an_earlier_message() {
        let mut n = Network::new((5, 5), 0.0, 0.0, [Proc::Server(1), Proc::Server(2)], ChaCha8Rng::seed_from_u64(1));
        assert_eq!(n.sleep(Proc::Server(2), Some(100)), Some(100));
        n.send(200, Proc::Server(1), Proc::Server(2), ping(), true);
        assert_eq!(n.inboxes[Proc::Server(2)].sleeping_until_ns, Some(100), "due at 205: no wake-up");
        n.send(10, Proc::Server(1), Proc::Server(2), ping(), true);
        assert_eq!(n.inboxes[Proc::Server(2)].sleeping_until_ns, None, "due at 15: woken");
        assert_eq!(n.sleep(Proc::Server(2), Some(100)), Some(15), "it sleeps until its next delivery, sooner than its timer");
        assert_eq!(n.sleep(Proc::Server(2), None), Some(15));
        assert_eq!(n.sleep(Proc::Server(1), None), None, "no timer, no message: until a message");
        assert_eq!(n.inboxes[Proc::Server(1)].sleeping_until_ns, Some(u64::MAX));
    }

    /// Counts the wake-ups of a waker.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn counting_waker() -> (std::sync::Arc<Wakes>, Waker) {
        let wakes = std::sync::Arc::new(Wakes(0.into()));
        (wakes.clone(), Waker::from(wakes))
    }

    fn wakes(w: &Wakes) -> usize {
        w.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The doorbell keeps `tokio::sync::Notify`'s contract (one waiter,
    /// `notify_one`): a schedule depends on every one of these cases.
    #[test]
    fn the_doorbell_keeps_the_contract_of_a_notify_with_one_waiter() {
        let (count, waker) = counting_waker();
        let mut bell = Doorbell::default();
        // Rung with nobody waiting: a permit, taken by the next wait at once.
        bell.ring();
        let mut wait = Wait::Init;
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Ready(()));
        let mut wait = Wait::Init;
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Pending, "the permit was used up");
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Pending, "polled again, still waiting");
        // Rung while waiting: one wake-up, no permit left over.
        bell.ring();
        assert_eq!(wakes(&count), 1);
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Ready(()));
        let mut wait = Wait::Init;
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Pending, "the ring was the waiter's, not a permit");
        // Rung twice before the loop runs: the second is a permit.
        bell.ring();
        bell.ring();
        assert_eq!(wakes(&count), 2, "the waiter is woken once");
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Ready(()));
        assert_eq!(bell.poll(&mut Wait::Init, &waker), Poll::Ready(()), "the second ring waited as a permit");
        // A wait given up after it was rung, unseen, hands the ring on.
        let mut wait = Wait::Init;
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Pending);
        bell.ring();
        bell.drop_wait(wait);
        assert_eq!(bell.poll(&mut Wait::Init, &waker), Poll::Ready(()));
        // A wait given up unrung leaves nothing: a later ring is a permit.
        let mut wait = Wait::Init;
        assert_eq!(bell.poll(&mut wait, &waker), Poll::Pending);
        bell.drop_wait(wait);
        bell.ring();
        assert_eq!(wakes(&count), 3, "nobody was waiting to be woken");
        assert_eq!(bell.poll(&mut Wait::Init, &waker), Poll::Ready(()));
    }

    #[test]
    fn a_crash_forgets_the_doorbells_permit_and_its_dead_waiter() {
        let (count, waker) = counting_waker();
        let mut n = Network::new((5, 5), 0.0, 0.0, [Proc::Server(1)], ChaCha8Rng::seed_from_u64(1));
        let s1 = Proc::Server(1);
        let mut dead = Wait::Init;
        assert_eq!(n.poll_doorbell(s1, &mut dead, &waker), Poll::Pending);
        n.crash(s1);
        n.wake(s1);
        assert_eq!(wakes(&count), 0, "the dead incarnation's wait is not woken");
        n.drop_doorbell_wait(s1, dead);
        let mut wait = Wait::Init;
        assert_eq!(n.poll_doorbell(s1, &mut wait, &waker), Poll::Ready(()), "the ring after the crash is the new one's permit");
        n.wake(s1);
        n.crash(s1);
        assert_eq!(n.poll_doorbell(s1, &mut Wait::Init, &waker), Poll::Pending, "a permit from before the crash is gone");
    }
}
