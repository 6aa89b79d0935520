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
//!
//! Waking: a sleeping receiver is not woken to re-arm its timer when a
//! message due sooner lands. The send itself asks the world to arm one
//! madsim timer for the delivery instant with the receiver's waker
//! (`arm_requests`), and each inbox remembers the timers armed for its
//! process, so a loop that goes back to sleep until an instant a timer is
//! already armed for arms no other. Every wake-up is then a delivery or a
//! deadline, not a turn of the loop to re-arm (two task polls and two
//! timers per message before).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::task::Waker;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::wire::{Proc, Wire};
use crate::vocab::ProcMap;

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

/// A receiver's queue and how to wake it.
#[derive(Default)]
struct Inbox {
    queue: BinaryHeap<Reverse<Parcel>>,
    /// Messages by slot; `free` lists the empty slots for reuse.
    slots: Vec<Option<(Proc, Wire)>>,
    free: Vec<usize>,
    /// The true instant its host loop sleeps until, if it sleeps: a message
    /// due earlier must wake it; one due later will be found when it wakes.
    sleeping_until_ns: Option<u64>,
    /// Its loop's waker, as of its last sleep.
    waker: Option<Waker>,
    /// Woken (its clock changed) while it was not asleep: its next sleep
    /// returns at once.
    woken: bool,
    /// True instants of the madsim timers armed with `waker` that have not
    /// fired yet.
    armed_ns: Vec<u64>,
}

/// madsim never lets a sleep end sooner than this after it starts.
pub const MIN_SLEEP_NS: u64 = 1_000_000;

impl Inbox {
    /// Whether a timer armed for this process fires after `now_ns` and by
    /// `until_ns` (or madsim's shortest sleep from now), waking it in time.
    fn covered(&mut self, now_ns: u64, until_ns: u64) -> bool {
        self.armed_ns.retain(|t| *t > now_ns);
        let by_ns = until_ns.max(now_ns + MIN_SLEEP_NS);
        self.armed_ns.iter().any(|t| *t <= by_ns)
    }
}

/// Wakes the inbox's process now if it sleeps, else ends its next sleep at once.
fn wake(inbox: &mut Inbox) {
    inbox.woken = true;
    if inbox.sleeping_until_ns.take().is_some() {
        if let Some(waker) = &inbox.waker {
            waker.wake_by_ref();
        }
    }
}

/// What a sleeping process's loop learns when it looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slumber {
    /// Its instant has come, or it was woken: it runs.
    Over,
    /// It sleeps on; a timer must be armed for this true instant first.
    Arm(u64),
    /// It sleeps on; a timer armed before wakes it in time.
    Armed,
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
    inboxes: ProcMap<Inbox>,
    rng: ChaCha8Rng,
    sent: u64,
    /// (receiver, true instant): timers the world must arm with the
    /// receiver's waker, because a message due sooner landed while it slept.
    arm_requests: Vec<(Proc, u64)>,
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
        Network {
            latency_ns,
            loss,
            duplicate,
            cut: BTreeMap::new(),
            slow: BTreeMap::new(),
            inboxes,
            rng,
            sent: 0,
            arm_requests: Vec::new(),
        }
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
        if self.duplicate > 0.0 && self.rng.gen_bool(self.duplicate) {
            self.push(now_ns, from, to, wire.clone());
        }
        self.push(now_ns, from, to, wire);
        Fate::Queued
    }

    fn push(&mut self, now_ns: u64, from: Proc, to: Proc, wire: Wire) {
        let mut latency_ns = self.rng.gen_range(self.latency_ns.0..=self.latency_ns.1);
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
        if deliver_at_ns <= now_ns && inbox.sleeping_until_ns.is_some() {
            // Due at once (no latency): woken now, as a timer could not be.
            wake(inbox);
        } else if inbox.sleeping_until_ns.is_some_and(|until_ns| deliver_at_ns < until_ns) {
            // It now sleeps until this delivery; a timer must wake it then.
            inbox.sleeping_until_ns = Some(deliver_at_ns);
            if !inbox.covered(now_ns, deliver_at_ns) {
                self.arm_requests.push((to, deliver_at_ns));
            }
        }
    }

    /// The next timer to arm for a receiver a send moved (see `push`), with
    /// the waker to arm it with.
    pub fn take_arm_request(&mut self) -> Option<(Proc, u64, Waker)> {
        while let Some((proc, at_ns)) = self.arm_requests.pop() {
            if let Some(waker) = self.inboxes.get(proc).and_then(|i| i.waker.clone()) {
                return Some((proc, at_ns, waker));
            }
        }
        None
    }

    /// A timer firing at true instant `at_ns` was armed with `proc`'s waker.
    pub fn armed(&mut self, proc: Proc, at_ns: u64) {
        self.inboxes.get_mut(proc).expect("every process has an inbox").armed_ns.push(at_ns);
    }

    /// `proc`'s sleeping loop looks at true time `now_ns`, its task's
    /// waker in hand.
    pub fn slumber(&mut self, proc: Proc, now_ns: u64, waker: &Waker) -> Slumber {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        if std::mem::take(&mut inbox.woken) {
            return Slumber::Over;
        }
        let Some(until_ns) = inbox.sleeping_until_ns else { return Slumber::Over };
        if now_ns >= until_ns {
            return Slumber::Over;
        }
        if !inbox.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            // A new task (a restart): timers armed for the last one wake
            // nobody that sleeps here.
            inbox.waker = Some(waker.clone());
            inbox.armed_ns.clear();
        }
        if until_ns == u64::MAX || inbox.covered(now_ns, until_ns) {
            Slumber::Armed
        } else {
            Slumber::Arm(until_ns)
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

    /// `proc`'s loop goes to sleep at `now_ns` until `until_ns` (None:
    /// until a message), and, as a madsim sleep does, for at least
    /// `MIN_SLEEP_NS`; a message due before then moves the instant earlier.
    pub fn sleep(&mut self, proc: Proc, now_ns: u64, until_ns: Option<u64>) {
        let inbox = self.inboxes.get_mut(proc).expect("every process has an inbox");
        inbox.sleeping_until_ns = Some(until_ns.map_or(u64::MAX, |u| u.max(now_ns + MIN_SLEEP_NS)));
    }

    /// Wakes `proc`'s loop if it sleeps (its clock changed: its timer must
    /// be re-armed), or makes its next sleep return at once.
    pub fn wake(&mut self, proc: Proc) {
        wake(self.inboxes.get_mut(proc).expect("every process has an inbox"));
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
        // Timers armed for the dead incarnation wake nobody; a wake-up
        // left for it would only cost the next one a spurious turn.
        inbox.waker = None;
        inbox.woken = false;
        inbox.armed_ns.clear();
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

    /// A waker that wakes nothing: these tests drive the inbox by hand.
    fn waker() -> Waker {
        struct Nobody;
        impl std::task::Wake for Nobody {
            fn wake(self: std::sync::Arc<Self>) {}
        }
        Waker::from(std::sync::Arc::new(Nobody))
    }

    #[test]
    fn a_sleeping_receiver_gets_a_timer_only_for_an_earlier_message() {
        let mut n = Network::new((5, 5), 0.0, 0.0, [Proc::Server(1), Proc::Server(2)], ChaCha8Rng::seed_from_u64(1));
        let (s2, waker) = (Proc::Server(2), waker());
        n.sleep(s2, 0, Some(3_000_000));
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Arm(3_000_000), "nothing armed yet");
        n.armed(s2, 3_000_000);
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Armed, "a spurious look arms nothing more");
        n.send(3_000_000, Proc::Server(1), s2, ping(), true);
        assert_eq!(n.inboxes[s2].sleeping_until_ns, Some(3_000_000), "due at 3.000005 ms: sleeps on");
        assert!(n.take_arm_request().is_none());
        n.send(0, Proc::Server(1), s2, ping(), true);
        assert_eq!(n.inboxes[s2].sleeping_until_ns, Some(5), "due sooner: sleeps until it");
        let (to, at_ns, _) = n.take_arm_request().expect("a timer for the earlier delivery");
        assert_eq!((to, at_ns), (s2, 5));
        // madsim fires it no sooner than its shortest sleep.
        n.armed(s2, MIN_SLEEP_NS);
        assert_eq!(n.slumber(s2, 4, &waker), Slumber::Armed);
        assert_eq!(n.slumber(s2, MIN_SLEEP_NS, &waker), Slumber::Over, "its instant came");
    }

    #[test]
    fn a_loop_sleeps_at_least_madsims_shortest_sleep_and_a_due_message_wakes_it_at_once() {
        let mut n = Network::new((0, 0), 0.0, 0.0, [Proc::Server(1), Proc::Server(2)], ChaCha8Rng::seed_from_u64(1));
        let (s2, waker) = (Proc::Server(2), waker());
        n.sleep(s2, 10, Some(11));
        assert_eq!(n.slumber(s2, 10, &waker), Slumber::Arm(10 + MIN_SLEEP_NS));
        n.send(10, Proc::Server(1), s2, ping(), true);
        assert_eq!(n.slumber(s2, 10, &waker), Slumber::Over, "no latency: woken at once");
        assert!(n.take_arm_request().is_none());
    }

    #[test]
    fn a_clock_change_wakes_a_sleeper_now_and_a_runner_at_its_next_sleep() {
        let mut n = net(0.0, 0.0);
        let (s2, waker) = (Proc::Server(2), waker());
        n.wake(s2);
        n.sleep(s2, 0, Some(50_000_000));
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Over, "woken while running: the next sleep ends at once");
        n.sleep(s2, 0, Some(50_000_000));
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Arm(50_000_000));
        n.wake(s2);
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Over);
        n.sleep(s2, 0, Some(50_000_000));
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Arm(50_000_000));
        n.armed(s2, 50_000_000);
        n.crash(s2);
        n.sleep(s2, 0, Some(50_000_000));
        assert_eq!(n.slumber(s2, 0, &waker), Slumber::Arm(50_000_000), "a crash forgets the timers armed for the dead");
    }
}
