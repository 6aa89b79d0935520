//! A client's pause: the runner's clients are tasks of one process, so
//! SIGSTOP cannot stop one of them alone. Each client passes its gate
//! before every step it takes (a request, a store write, a keep-alive) and
//! its sleeps end only once the gate is open, so a paused client does
//! nothing until it is resumed, and then carries on with what it was doing
//! — a process stopped and continued does the same. What it cannot do is
//! stop a request already on the wire: a pause lands between two steps.
//! An answer that arrives during a pause is handed to the client only once
//! it is resumed ([`Pass::answered`]), as a stopped process reads the bytes
//! waiting in its socket only when it is continued: a client acting on an
//! answer while paused (extending its belief, releasing its lock, taking a
//! role) would do what the simulator's paused clients, and stopped
//! processes, cannot. A client's sleeps are on its own clock
//! (`clients/clock.rs`).
//!
//! Two holds close a gate: a pause of the whole client (`pause = "c3"`,
//! from the runner's timeline) and a pause at the client's own point
//! (`pause = "random-client"` with `when = "after-send:request"`, closed by
//! its route the moment the request has left: `routes.rs`). Each opens on
//! its own end, and the client passes only when neither holds, as in the
//! simulator, where a process sleeping at its point (`host::reach`) and a
//! process paused by the node's handle are two separate stops. A third
//! hold is a crash at a point: the client stops there and stays stopped
//! until the runner kills its task (a poll later) and a fresh one resets
//! the gate.
//!
//! Every timer of a client ends at its `timer` point ([`Pass::timer`],
//! `timer_points.rs`), where a fault armed for it closes one of those
//! holds, or changes its clock, before the client reads it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::clients::clock::ClientClock;
use crate::timer_points::{TimerAction, TimerPoints};

/// What holds a gate closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Held {
    /// A pause of the whole client, from the timeline.
    whole: bool,
    /// A pause at the client's point, from the moment its request left
    /// or its timer fired.
    at_point: bool,
    /// A crash at the client's point: stopped until its task is killed.
    crashed: bool,
}

impl Held {
    fn open(&self) -> bool {
        !self.whole && !self.at_point && !self.crashed
    }

    /// Stopped at a point, paused or crashed there.
    fn at_a_point(&self) -> bool {
        self.at_point || self.crashed
    }
}

/// The runner's side: pause and resume one client.
#[derive(Clone)]
pub struct Gate {
    paused: watch::Sender<Held>,
}

/// The client's side.
#[derive(Clone)]
pub struct Pass {
    paused: watch::Receiver<Held>,
    clock: Arc<ClientClock>,
    /// Its own gate, which a fault at its timer closes.
    gate: Gate,
    client: u64,
    points: Arc<TimerPoints>,
}

/// Client `client`'s gate, and its pass, which sleeps on `clock` and
/// reaches its timer point among `points`.
pub fn gate(client: u64, clock: Arc<ClientClock>, points: Arc<TimerPoints>) -> (Gate, Pass) {
    let (tx, rx) = watch::channel(Held::default());
    let gate = Gate { paused: tx };
    (gate.clone(), Pass { paused: rx, clock, gate, client, points })
}

impl Gate {
    /// Pauses or resumes the whole client (a pause at its point, if one
    /// holds, holds on).
    pub fn set_paused(&self, paused: bool) {
        self.paused.send_modify(|held| held.whole = paused);
    }

    /// Closes the gate at the client's point; false if a pause or crash
    /// at a point holds it already (a client stopped at one reaches no
    /// other: in the simulator it sleeps there, or is dead, and sends
    /// nothing).
    pub fn hold_at_point(&self) -> bool {
        self.paused.send_if_modified(|held| !held.at_a_point() && !std::mem::replace(&mut held.at_point, true))
    }

    /// Closes the gate for a crash at the client's point, until a restart
    /// resets it; false if a point holds it already.
    pub fn hold_crashed(&self) -> bool {
        self.paused.send_if_modified(|held| !held.at_a_point() && !std::mem::replace(&mut held.crashed, true))
    }

    /// Ends the pause at the client's point; false if none held it (a
    /// crash and restart cleared it meanwhile).
    pub fn release_point(&self) -> bool {
        self.paused.send_if_modified(|held| std::mem::replace(&mut held.at_point, false))
    }

    /// Whether a pause or a crash at the client's point holds it now.
    pub fn held_at_point(&self) -> bool {
        self.paused.borrow().at_a_point()
    }

    /// A fresh client: nothing holds its gate (the simulator's restart
    /// starts a process neither paused nor sleeping at a point).
    pub fn reset(&self) {
        self.paused.send_replace(Held::default());
    }
}

impl Pass {
    /// Returns once the client is not paused.
    pub async fn pass(&mut self) {
        // The sender lives as long as the run: an error means the run ended.
        let _ = self.paused.wait_for(Held::open).await;
    }

    /// Awaits `answer` (a request on the wire), then waits until the
    /// client is not paused: what arrived during a pause waits, as bytes
    /// wait in a stopped process's socket, and the client reads its clock
    /// and acts on the answer only after it is resumed.
    pub async fn answered<T>(&mut self, answer: impl std::future::Future<Output = T>) -> T {
        self.answered_at(answer).await.0
    }

    /// [`Pass::answered`], with the true time the answer arrived (since the
    /// run began), before any pause held its reading back: what the answer
    /// shows happened before that instant, so it is stamped then
    /// (`Recorder::answered_at`), and a pause never counts as round trip.
    pub async fn answered_at<T>(&mut self, answer: impl std::future::Future<Output = T>) -> (T, u64) {
        let answer = answer.await;
        let arrived_ns = self.clock.true_ns();
        self.pass().await;
        (answer, arrived_ns)
    }

    /// Sleeps `d` by the client's own clock: a timer of the client, which
    /// ends at its `timer` point ([`Pass::timer`]).
    pub async fn sleep(&mut self, d: Duration) {
        self.clock.sleep(d).await;
        self.timer().await;
    }

    /// A timer of the client fired: once it runs (a paused process fires
    /// no timer), it reaches its `timer` point, where a fault armed for it
    /// acts before it reads its clock (`timer_points.rs`); then it waits
    /// until nothing holds it.
    pub async fn timer(&mut self) {
        self.pass().await;
        if self.points.any_armed() {
            self.reach_timer();
            self.pass().await;
        }
    }

    /// Carries out the first fault armed at this client's timer, if any.
    fn reach_timer(&self) -> bool {
        let (gate, clock) = (&self.gate, &self.clock);
        self.points.reach(self.client, |point| match point.action {
            // A client held at a point (another of its tasks got there
            // first) reaches no other: the fault waits for the next.
            TimerAction::Pause => gate.hold_at_point().then(|| (clock.true_ns(), None)),
            TimerAction::Crash => gate.hold_crashed().then(|| (clock.true_ns(), None)),
            TimerAction::Clock { .. } if gate.held_at_point() => None,
            TimerAction::Clock { drift, jump_ns } => Some(match clock.apply_fault(drift, jump_ns) {
                Ok(at_ns) => (at_ns, None),
                Err(why) => (clock.true_ns(), Some(why)),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_paused_client_passes_only_once_resumed() {
        let clock = ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap();
        let (gate, mut pass) = gate(1, Arc::new(clock), Arc::default());
        gate.set_paused(true);
        let waiter = tokio::spawn(async move {
            pass.sleep(Duration::from_millis(10)).await;
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "a paused client must not pass");
        gate.set_paused(false);
        tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("a resumed client passes").unwrap();
    }

    /// Counts scheduler turns, not time: on a current-thread runtime the
    /// waiter runs only when this task yields, so 100 turns in which the
    /// answer (ready at once) stays unread show the pause holds it back.
    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_that_arrives_during_a_pause_is_read_only_once_resumed() {
        let clock = ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap();
        let (gate, mut pass) = gate(1, Arc::new(clock), Arc::default());
        let (read_tx, mut read_rx) = tokio::sync::mpsc::unbounded_channel();
        gate.set_paused(true);
        let reader = tokio::spawn(async move {
            let answer = pass.answered(async { 7 }).await;
            read_tx.send(answer).unwrap();
        });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(read_rx.try_recv().is_err(), "a paused client must not read an answer");
        assert!(!reader.is_finished());
        gate.set_paused(false);
        reader.await.unwrap();
        assert_eq!(read_rx.try_recv().ok(), Some(7), "the resumed client reads the answer that waited");
    }

    /// The stamp of an answer held back by a pause is the instant it
    /// arrived, before the resume (ordered by the clock's own readings, so
    /// no duration is assumed).
    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_held_by_a_pause_is_stamped_when_it_arrived_not_when_read() {
        let clock = Arc::new(ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap());
        let (gate, mut pass) = gate(1, clock.clone(), Arc::default());
        gate.set_paused(true);
        let sent_ns = clock.true_ns();
        let reader = tokio::spawn(async move { pass.answered_at(async { 7 }).await });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(!reader.is_finished(), "a paused client must not read an answer");
        let resumed_ns = clock.true_ns();
        gate.set_paused(false);
        let (answer, arrived_ns) = reader.await.unwrap();
        assert_eq!(answer, 7);
        assert!(sent_ns <= arrived_ns && arrived_ns <= resumed_ns, "arrived {arrived_ns}, sent {sent_ns}, resumed {resumed_ns}");
    }

    /// The two holds are separate stops: a whole pause that ends while
    /// the client sleeps at its point leaves it stopped, and the other way
    /// round; a restart clears both. Counted in scheduler turns.
    #[tokio::test(flavor = "current_thread")]
    async fn a_pause_at_a_point_and_a_whole_pause_each_hold_the_gate_until_each_ends() {
        let clock = ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap();
        let (gate, pass) = gate(1, Arc::new(clock), Arc::default());
        let passes = |mut pass: Pass| tokio::spawn(async move { pass.pass().await });
        let blocked = |task: &tokio::task::JoinHandle<()>| !task.is_finished();
        assert!(gate.hold_at_point() && !gate.hold_at_point(), "held once at a time");
        gate.set_paused(true);
        let waiter = passes(pass.clone());
        turns(100).await;
        gate.set_paused(false);
        turns(100).await;
        assert!(blocked(&waiter), "still held at its point");
        gate.set_paused(true);
        assert!(gate.release_point());
        turns(100).await;
        assert!(blocked(&waiter), "still paused whole");
        gate.set_paused(false);
        waiter.await.unwrap();
        assert!(gate.hold_at_point());
        gate.set_paused(true);
        gate.reset();
        assert!(!gate.held_at_point() && !gate.release_point(), "a restart clears both");
        passes(pass).await.unwrap();
    }

    /// A client's timer reaches its point: a pause there holds it until
    /// released, a crash until a restart resets the gate, a clock jump
    /// changes its clock and lets it go on; a fault for another client is
    /// left armed. Counted in scheduler turns (the timeouts are hang
    /// guards only).
    #[tokio::test(flavor = "current_thread")]
    async fn a_fault_armed_at_a_clients_timer_acts_when_its_sleep_ends() {
        use crate::timer_points::TimerPoint;
        let clock = Arc::new(ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap());
        let points = Arc::new(TimerPoints::default());
        let (gate, pass) = gate(2, clock.clone(), points.clone());
        let arm = |order, client, action| points.arm(TimerPoint { order, line: 0, client, for_ns: None, action });
        let sleeps = |mut pass: Pass| tokio::spawn(async move { pass.sleep(Duration::from_millis(1)).await });
        let guard = Duration::from_secs(10);
        arm(1, Some(3), TimerAction::Pause);
        tokio::time::timeout(guard, sleeps(pass.clone())).await.expect("no fault for c2: it goes on").unwrap();
        assert!(points.take_reached().is_empty() && points.any_armed(), "c3's fault waits for c3");
        points.disarm();
        for (order, action) in [(2, TimerAction::Pause), (3, TimerAction::Crash)] {
            arm(order, None, action);
            let sleeper = sleeps(pass.clone());
            // Until it reached its point: its 1 ms sleep has ended.
            let mut reached = Vec::new();
            for _ in 0..100_000 {
                reached = points.take_reached();
                if !reached.is_empty() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert_eq!(reached.iter().map(|r| (r.point.order, r.client)).collect::<Vec<_>>(), [(order, 2)]);
            turns(100).await;
            assert!(!sleeper.is_finished() && gate.held_at_point(), "{action:?} holds it at its point");
            if action == TimerAction::Pause {
                assert!(gate.release_point());
            } else {
                assert!(!gate.release_point(), "a crash is not a pause: only a restart ends it");
                turns(100).await;
                assert!(!sleeper.is_finished());
                gate.reset();
            }
            tokio::time::timeout(guard, sleeper).await.expect("released").unwrap();
        }
        let wall_before = clock.wall_ns();
        arm(4, Some(2), TimerAction::Clock { drift: None, jump_ns: Some(-5_000_000_000) });
        tokio::time::timeout(guard, sleeps(pass)).await.expect("a clock fault holds nothing").unwrap();
        let reached = points.take_reached();
        assert_eq!((reached.len(), reached[0].refused.as_ref()), (1, None));
        assert!(clock.wall_ns() + 4_000_000_000 < wall_before, "its wall clock went 5 s back");
        assert_eq!(clock.faults(), [(reached[0].at_ns, None, Some(-5_000_000_000))], "logged at its stamp");
    }

    async fn turns(n: usize) {
        for _ in 0..n {
            tokio::task::yield_now().await;
        }
    }
}
