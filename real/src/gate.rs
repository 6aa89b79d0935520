//! A client's pause: the runner's clients are tasks of one process, so
//! SIGSTOP cannot stop one of them alone. Each client passes its gate
//! before every step it takes (a request, a store write, a keep-alive) and
//! its sleeps end only once the gate is open, so a paused client does
//! nothing until it is resumed, and then carries on with what it was doing
//! — a process stopped and continued does the same. What it cannot do is
//! stop a request already on the wire: a pause lands between two steps.
//! A client's sleeps are on its own clock (`clients/clock.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::clients::clock::ClientClock;

/// The runner's side: pause and resume one client.
#[derive(Clone)]
pub struct Gate {
    paused: watch::Sender<bool>,
}

/// The client's side.
#[derive(Clone)]
pub struct Pass {
    paused: watch::Receiver<bool>,
    clock: Arc<ClientClock>,
}

/// A client's gate, and its pass, which sleeps on `clock`.
pub fn gate(clock: Arc<ClientClock>) -> (Gate, Pass) {
    let (tx, rx) = watch::channel(false);
    (Gate { paused: tx }, Pass { paused: rx, clock })
}

impl Gate {
    pub fn set_paused(&self, paused: bool) {
        self.paused.send_replace(paused);
    }
}

impl Pass {
    /// Returns once the client is not paused.
    pub async fn pass(&mut self) {
        // The sender lives as long as the run: an error means the run ended.
        let _ = self.paused.wait_for(|paused| !paused).await;
    }

    /// Sleeps `d` by the client's own clock, then waits until the client
    /// is not paused.
    pub async fn sleep(&mut self, d: Duration) {
        self.clock.sleep(d).await;
        self.pass().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_paused_client_passes_only_once_resumed() {
        let clock = ClientClock::new(leasesim_node::faults::event_log::monotonic_ns(), None).unwrap();
        let (gate, mut pass) = gate(Arc::new(clock));
        gate.set_paused(true);
        let waiter = tokio::spawn(async move {
            pass.sleep(Duration::from_millis(10)).await;
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "a paused client must not pass");
        gate.set_paused(false);
        tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("a resumed client passes").unwrap();
    }
}
