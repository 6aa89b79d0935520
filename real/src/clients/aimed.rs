//! `messages` faults aimed at kinds that travel between a client and a
//! member or the data store (keep-alive answers, grant answers, store
//! writes…), played on the runner's side of the client.
//!
//! Those messages ride gRPC or HTTP streams in which no proxy can hold one
//! message back or drop it whole (`faults/proxy.rs`). But the runner's
//! clients are its own tasks: a reply the client received can be held
//! before the client acts on it (and stamped when it acts, as if it had
//! arrived then), or treated as never received (the client waits out its
//! timeout and tries again, as the simulator's client does for a lost
//! answer); a write can be held before it is sent, or not sent. The
//! effects add up as the simulator's network adds them
//! (`sim/src/world/network.rs`).
//!
//! What is refused and why (see `refuse.rs`): `duplicate` on these kinds
//! (a client waits for one answer per request, and a copy would reach a
//! client that already moved on: the simulator's client would see it, a
//! real one never can), and kinds no runner client sends or reads in one
//! place (`request` and `client-reply` are every request and answer;
//! `watch-reply` has no runner client yet).

use std::sync::Mutex;
use std::time::Duration;

use leasesim_scenario::{MessageEffect, MessageFault, WireKind};
use rand::Rng;

/// The kinds a runner client plays itself, and where.
pub const PLAYED: [WireKind; 5] =
    [WireKind::KeepAlive, WireKind::KeepAliveReply, WireKind::GrantReply, WireKind::StoreWrite, WireKind::StoreReply];

/// Why the runner cannot play `fault` on its clients (`None`: it can).
pub fn unplayable(fault: &MessageFault) -> Option<String> {
    if !PLAYED.contains(&fault.kind) {
        let played = PLAYED.map(WireKind::name).join(", ");
        return Some(format!(
            "`messages` aimed at {}: it travels between clients and members over gRPC, and the runner plays only {played} on its clients' side",
            fault.kind
        ));
    }
    if let MessageEffect::Duplicate(_) = fault.effect {
        return Some(format!(
            "`duplicate` of {}: a real client waits for one answer per request over TCP, which never delivers a message twice",
            fault.kind
        ));
    }
    None
}

/// The `messages` faults in force on the clients, by the fault's order.
#[derive(Default)]
pub struct ClientAims {
    faults: Mutex<Vec<(usize, MessageFault)>>,
}

impl ClientAims {
    pub fn aim(&self, order: usize, fault: MessageFault) {
        self.faults.lock().expect("aims").push((order, fault));
    }

    pub fn stop(&self, order: usize) {
        self.faults.lock().expect("aims").retain(|(o, _)| *o != order);
    }

    /// What the faults in force do to one message of `kind`: how much
    /// longer it takes, or `None` when it is lost.
    pub fn fate(&self, kind: WireKind) -> Option<Duration> {
        let faults = self.faults.lock().expect("aims");
        let mut rng = rand::thread_rng();
        let mut extra_ns = 0;
        for (_, fault) in faults.iter().filter(|(_, f)| f.kind == kind) {
            match fault.effect {
                MessageEffect::Drop(p) if rng.gen_bool(p) => return None,
                MessageEffect::Drop(_) | MessageEffect::Duplicate(_) => {}
                MessageEffect::Delay(ns) => extra_ns += ns,
                MessageEffect::Reorder(ns) => extra_ns += rng.gen_range(0..=ns),
            }
        }
        Some(Duration::from_nanos(extra_ns))
    }

    /// Plays one message of `kind`: waits out its delay, or, when it is
    /// lost, the client's `timeout` (no answer came); whether it arrived.
    pub async fn deliver(&self, kind: WireKind, timeout: Duration) -> bool {
        match self.fate(kind) {
            Some(extra) if extra.is_zero() => true,
            Some(extra) => {
                tokio::time::sleep(extra).await;
                true
            }
            None => {
                tokio::time::sleep(timeout).await;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aims_add_up_drop_and_stop_like_the_simulators() {
        let aims = ClientAims::default();
        assert_eq!(aims.fate(WireKind::KeepAliveReply), Some(Duration::ZERO), "nothing aimed");
        aims.aim(1, MessageFault { kind: WireKind::KeepAliveReply, effect: MessageEffect::Delay(400_000_000) });
        aims.aim(2, MessageFault { kind: WireKind::KeepAliveReply, effect: MessageEffect::Delay(100_000_000) });
        aims.aim(3, MessageFault { kind: WireKind::GrantReply, effect: MessageEffect::Drop(1.0) });
        assert_eq!(aims.fate(WireKind::KeepAliveReply), Some(Duration::from_millis(500)));
        assert_eq!(aims.fate(WireKind::GrantReply), None);
        assert_eq!(aims.fate(WireKind::StoreWrite), Some(Duration::ZERO), "other kinds untouched");
        aims.stop(1);
        aims.stop(3);
        assert_eq!(aims.fate(WireKind::KeepAliveReply), Some(Duration::from_millis(100)));
        assert_eq!(aims.fate(WireKind::GrantReply), Some(Duration::ZERO));
        aims.aim(4, MessageFault { kind: WireKind::StoreWrite, effect: MessageEffect::Reorder(10_000_000) });
        assert!((0..50).all(|_| aims.fate(WireKind::StoreWrite).is_some_and(|d| d <= Duration::from_millis(10))));
    }

    #[test]
    fn what_the_runner_cannot_play_on_its_clients_says_why() {
        let dup = MessageFault { kind: WireKind::KeepAliveReply, effect: MessageEffect::Duplicate(1) };
        assert!(unplayable(&dup).unwrap().contains("never delivers a message twice"));
        let every = MessageFault { kind: WireKind::ClientReply, effect: MessageEffect::Delay(1) };
        assert!(unplayable(&every).unwrap().contains("client-reply"));
        assert_eq!(unplayable(&MessageFault { kind: WireKind::StoreWrite, effect: MessageEffect::Drop(0.5) }), None);
    }
}
