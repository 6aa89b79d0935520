//! The registry workload (the consistent-core lease design's service
//! discovery): each client registers `/services/<client>` attached to its lease
//! and keeps the lease alive. When the client crashes, the lease expires and
//! the key must disappear on every server (checked by `liveness`).

use leasesim_core::client::{BeliefFrom, Session};
use leasesim_core::service::{ClientResponse, Op, Response};
use leasesim_core::{ClientId, LeaseId};

use super::keeper::{LeaseKeeper, LeaseNews};
use super::ClientStart;
use crate::host::{Actor, Step};
use crate::world::wire::Wire;
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::registry_key;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::RegistryWorkload;

pub struct RegistryClient {
    id: ClientId,
    spec: RegistryWorkload,
    incarnation: u64,
    session: Session,
    keeper: Option<LeaseKeeper>,
    /// The put in flight, with the lease it attaches to.
    registering: Option<(u64, LeaseId)>,
}

impl RegistryClient {
    pub fn new(start: ClientStart, spec: RegistryWorkload) -> Self {
        RegistryClient { id: start.id, spec, incarnation: start.incarnation, session: start.session(), keeper: None, registering: None }
    }

    fn flush(&mut self, step: &mut Step<'_>) {
        for (server, request) in self.session.take_sends() {
            step.send(Proc::Server(server), Wire::Request(request));
        }
    }

    fn register(&mut self, step: &mut Step<'_>, lease: LeaseId) {
        let key = registry_key(self.id);
        step.record(Event::RegisterSent { key: key.clone(), lease });
        let op = Op::Put { key, value: format!("c{}@{}", self.id, self.incarnation), lease: Some(lease) };
        let seq = self.session.submit(step.mono_ns, op);
        self.registering = Some((seq, lease));
    }

    fn on_response(&mut self, step: &mut Step<'_>, response: ClientResponse) {
        let session = &mut self.session;
        let Some(done) = session.on_response(step.mono_ns, response) else { return };
        if let Some(news) = self.keeper.as_mut().expect("started").on_completion(step, session, &done) {
            match news {
                LeaseNews::Granted { lease } => self.register(step, lease),
                LeaseNews::Renewed { .. } | LeaseNews::Lost { .. } => {}
            }
            return;
        }
        if let Some((seq, lease)) = self.registering {
            if seq == done.seq {
                self.registering = None;
                if let Response::Done { revision } = done.response {
                    step.record(Event::Registered { key: registry_key(self.id), lease, revision });
                }
            }
        }
    }
}

impl Actor for RegistryClient {
    fn start(&mut self, step: &mut Step<'_>) {
        let belief = LeaseKeeper::new_belief(0.0, BeliefFrom::Send, false);
        self.keeper = Some(LeaseKeeper::start(&mut self.session, step.mono_ns, self.spec.ttl_ns, self.spec.keepalive_ns, belief));
        self.flush(step);
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        match wire {
            Wire::Response(response) => self.on_response(step, response),
            other => panic!("c{} got an unexpected message from {from}: {other:?}", self.id),
        }
        self.flush(step);
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        let session = &mut self.session;
        session.tick(step.mono_ns);
        self.keeper.as_mut().expect("started").on_timer(session, step.mono_ns);
        self.flush(step);
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let session_ns = self.session.next_deadline_ns();
        let keeper_ns = self.keeper.as_ref().and_then(|k| k.next_deadline_mono_ns());
        session_ns.into_iter().chain(keeper_ns).min()
    }
}
