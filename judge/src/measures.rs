//! The timing figures both worlds measure, from what the clients saw and
//! the faults as carried out (never from the servers' own events, which
//! etcd and leasesim-node do not report): so a simulated run and a real one
//! give the same figures in the same sense, and `leasesim-real compare`
//! can set their distributions side by side.
//!
//! - `holder_outlived_ms`: a client that held a lock was paused or crashed;
//!   how long until another client believed it held that key (the dead
//!   holder's lease outliving it, plus the next acquire).
//! - `failover_stall_ms`: a server was crashed or paused; how long until
//!   the first lease acknowledgement of a request sent after that instant
//!   (a leader's loss stalls every client for an election and more; a
//!   follower's costs at most the next keep-alive's round trip).
//!
//! An event with no answer before the run ended gives no figure (it is
//! counted in `*_unanswered`): the run's end is not a measurement.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observe::{Event, ObsLog};
use crate::vocab::Proc;

/// One run's timing figures, in milliseconds of true time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measures {
    pub holder_outlived_ms: Vec<f64>,
    pub holder_outlived_unanswered: u64,
    pub failover_stall_ms: Vec<f64>,
    pub failover_stall_unanswered: u64,
}

fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e6 * 1000.0).round() / 1000.0
}

/// Measures one run's log.
pub fn measure(log: &ObsLog) -> Measures {
    let mut m = Measures::default();
    // Per client, the key it believes it holds.
    let mut believing: BTreeMap<u64, String> = BTreeMap::new();
    // Open holder deaths (since, dead client, key) and server faults (since).
    let mut dead_holders: Vec<(u64, u64, String)> = Vec::new();
    let mut server_faults: Vec<u64> = Vec::new();
    for o in log.iter() {
        match (&o.proc, &o.event) {
            (Proc::Client(c), Event::BeliefStarted { key, .. }) => {
                dead_holders.retain(|(since_ns, dead, k)| {
                    let answered = k == key && dead != c;
                    if answered {
                        m.holder_outlived_ms.push(ms(o.at_ns - since_ns));
                    }
                    !answered
                });
                believing.insert(*c, key.clone());
            }
            (Proc::Client(c), Event::BeliefEnded { .. }) => {
                believing.remove(c);
            }
            (Proc::Client(c), Event::Paused | Event::Crashed) => {
                if let Some(key) = believing.get(c) {
                    dead_holders.push((o.at_ns, *c, key.clone()));
                }
            }
            (Proc::Server(_), Event::Crashed | Event::Paused) => server_faults.push(o.at_ns),
            (Proc::Client(_), Event::LeaseAcked { sent_at_ns, .. }) => {
                server_faults.retain(|since_ns| {
                    let answered = sent_at_ns >= since_ns;
                    if answered {
                        m.failover_stall_ms.push(ms(o.at_ns - since_ns));
                    }
                    !answered
                });
            }
            _ => {}
        }
    }
    m.holder_outlived_unanswered = dead_holders.len() as u64;
    m.failover_stall_unanswered = server_faults.len() as u64;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Obs;

    fn at(at_ms: u64, proc: Proc, event: Event) -> Obs {
        Obs { at_ns: at_ms * 1_000_000, proc, event }
    }

    fn belief(key: &str) -> Event {
        Event::BeliefStarted { key: key.into(), lease: 1, token: 1, until_mono_ns: 0 }
    }

    fn ack(sent_ms: u64) -> Event {
        Event::LeaseAcked { lease: 1, ttl_ns: 1, sent_at_ns: sent_ms * 1_000_000, keepalive: true }
    }

    #[test]
    fn a_paused_holder_is_outlived_until_another_client_believes() {
        let log: ObsLog = vec![
            at(100, Proc::Client(1), belief("k")),
            at(200, Proc::Client(1), Event::Paused),
            at(900, Proc::Client(1), belief("k")), // itself again: no answer
            at(1700, Proc::Client(2), belief("other")),
            at(2300, Proc::Client(2), belief("k")),
            at(2400, Proc::Client(3), Event::Paused), // held nothing
        ]
        .into();
        let m = measure(&log);
        assert_eq!(m.holder_outlived_ms, vec![2100.0]);
        assert_eq!(m.holder_outlived_unanswered, 0);
        assert!(m.failover_stall_ms.is_empty());
    }

    #[test]
    fn a_server_fault_stalls_until_a_request_sent_after_it_is_acknowledged() {
        let log: ObsLog = vec![
            at(1000, Proc::Server(2), Event::Crashed),
            at(1100, Proc::Client(1), ack(900)), // sent before the crash
            at(1500, Proc::Client(1), ack(1200)),
            at(3000, Proc::Server(1), Event::Paused),
        ]
        .into();
        let m = measure(&log);
        assert_eq!(m.failover_stall_ms, vec![500.0]);
        assert_eq!(m.failover_stall_unanswered, 1);
    }
}
