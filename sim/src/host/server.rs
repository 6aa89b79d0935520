//! A Raft server process: restores its core from its disk, then feeds it
//! peer messages, client requests and timer firings with its own clocks.
//!
//! The core lives in a slot the run also holds, so that when the run ends
//! the judge can read every server's final log and state directly
//! (`run::final_state`).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use leasesim_core::raft::ConfChange;
use leasesim_core::server::{Clocks, Server, ServerConfig, ServerEvent, ServerOutput};
use leasesim_core::NodeId;

use super::watch_serve::WatchTable;
use super::{Actor, Step};
use crate::world::wire::{WatchRequest, Wire};
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::{Proc, ServerProbe};

/// A server's core, shared between its process and the judge.
pub type ServerSlot = Arc<Mutex<Option<Server>>>;

pub struct ServerActor {
    id: NodeId,
    config: ServerConfig,
    rng_seed: u64,
    slot: ServerSlot,
    /// The watch streams this process serves (lost when it restarts).
    watches: RefCell<WatchTable>,
    /// The core's last output, drained: handed back to it to collect the
    /// next one in (`Server::swap_output`), so a step grows no fresh vectors.
    spare: ServerOutput,
}

impl ServerActor {
    pub fn new(id: NodeId, config: ServerConfig, rng_seed: u64, slot: ServerSlot) -> Self {
        ServerActor { id, config, rng_seed, slot, watches: RefCell::default(), spare: ServerOutput::default() }
    }

    fn server(&self) -> MutexGuard<'_, Option<Server>> {
        self.slot.lock().expect("single-threaded simulation")
    }

    fn clocks(step: &Step<'_>) -> Clocks {
        Clocks { mono_ns: step.mono_ns, wall_ns: step.wall_ns }
    }

    /// Feeds one input to the core and moves its output into the step, in
    /// the durability order.
    fn drive(&mut self, step: &mut Step<'_>, input: impl FnOnce(&mut Server, Clocks)) {
        let clocks = Self::clocks(step);
        let mut output = std::mem::take(&mut self.spare);
        let mut guard = self.server();
        let server = guard.as_mut().expect("started");
        let started = step.world.phases.start();
        input(server, clocks);
        server.swap_output(&mut output);
        step.world.phases.add_engine(started);
        let probe = ServerProbe::of(server.raft());
        let mut watch_out = Vec::new();
        let mut watches = self.watches.borrow_mut();
        if !watches.is_empty() {
            let installed = output.events.iter().any(|e| matches!(e, ServerEvent::SnapshotInstalled { .. }));
            watches.on_applied(server, &output.changes, installed, &mut watch_out);
        }
        drop(watches);
        drop(guard);
        step.persist(&mut output.persist);
        for (to, message) in output.messages.drain(..) {
            step.send(Proc::Server(to), Wire::Peer(message));
        }
        for reply in output.replies.drain(..) {
            step.send(Proc::Client(reply.client), Wire::Response(reply));
        }
        for (client, reply) in watch_out {
            step.send(Proc::Client(client), Wire::WatchReply(reply));
        }
        for event in output.events.drain(..) {
            step.record(Event::Server { event });
        }
        output.changes.clear();
        self.spare = output;
        step.world.set_probe(self.id, probe);
    }

    /// A watch request is the host's business: it reads the core's state
    /// and history but changes nothing in it.
    fn serve_watch(&self, step: &mut Step<'_>, client: u64, request: WatchRequest) {
        let mut out = Vec::new();
        if let Some(server) = self.server().as_ref() {
            self.watches.borrow_mut().on_request(server, client, request, &mut out);
        }
        for (client, reply) in out {
            step.send(Proc::Client(client), Wire::WatchReply(reply));
        }
    }

    fn propose_change(&mut self, step: &mut Step<'_>, change: ConfChange) {
        let mut result = None;
        self.drive(step, |server, clocks| result = Some(server.propose_conf_change(clocks, change)));
        let action = format!("{change:?} via s{}", self.id);
        match result.expect("driven") {
            Ok(index) => step.record(Event::Fault { action: format!("{action} proposed at index {index}") }),
            Err(e) => step.record(Event::FaultSkipped { action, why: format!("the cluster refused: {e:?}") }),
        }
    }
}

impl Actor for ServerActor {
    fn start(&mut self, step: &mut Step<'_>) {
        let image = {
            let mut disk = step.world.disk(self.id);
            disk.crash();
            disk.image()
        };
        let server = Server::new(self.config.clone(), image, self.rng_seed, Self::clocks(step));
        *self.server() = Some(server);
        self.drive(step, |_, _| {});
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        match (from, wire) {
            (Proc::Server(peer), Wire::Peer(message)) => self.drive(step, |s, c| s.handle_peer(c, peer, message)),
            (Proc::Client(_), Wire::Request(request)) => self.drive(step, |s, c| s.handle_client(c, request)),
            (Proc::Admin, Wire::Admin(change)) => self.propose_change(step, change),
            (Proc::Client(client), Wire::Watch(request)) => self.serve_watch(step, client, request),
            (from, wire) => panic!("s{} got an unexpected message from {from}: {wire:?}", self.id),
        }
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        self.drive(step, |s, c| s.tick(c));
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        self.server().as_ref().map(|s| s.next_deadline_ns())
    }
}
