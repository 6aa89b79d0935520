//! The watch workload: each client watches the keys under a prefix, as an
//! etcd client library does. It keeps one stream open at one server, asks
//! that server every `check_every` whether the stream is alive and who
//! leads, and resumes — on a new stream, from its last seen revision + 1 —
//! when the server stays silent for `client_timeout` (crashed, paused, cut
//! off), forgot the stream (restarted), has no leader (etcd's
//! `WithRequireLeader`) or reports another leader than before. Every event
//! it receives is recorded for `watch-delivery`.
//!
//! Stream messages carry their position: the simulated network reorders
//! messages, a gRPC stream does not, so the client reassembles them; a gap
//! that outlasts two checks (a lost message) is a broken stream, resumed.

use std::collections::BTreeMap;

use leasesim_core::service::kv::{Change, KeyRange};
use leasesim_core::{ClientId, LogIndex, NodeId};

use super::ClientStart;
use crate::host::{Actor, Step};
use crate::world::wire::{StreamBody, WatchReply, WatchRequest, Wire};
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_scenario::{WatchStart, WatchWorkload};

pub struct WatchClient {
    id: ClientId,
    spec: WatchWorkload,
    start: ClientStart,
    range: KeyRange,
    /// The watch (judged as one) and how many this incarnation opened.
    watch: u64,
    watches: u64,
    /// The watch's start, once a server named it (`None`: not yet open).
    opened_from: Option<LogIndex>,
    last_seen: LogIndex,
    /// The current stream, its server, and how many streams were opened.
    stream: u64,
    streams: u64,
    server: usize,
    next_seq: u64,
    held: BTreeMap<u64, StreamBody>,
    /// Checks in a row that found a gap in the stream.
    gap_checks: u32,
    leader: Option<NodeId>,
    next_check_mono_ns: u64,
    /// When the unanswered check was sent.
    check_sent_mono_ns: Option<u64>,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl WatchClient {
    pub fn new(start: ClientStart, spec: WatchWorkload) -> Self {
        let range = KeyRange::prefix(spec.prefix.as_bytes());
        let server = start.id as usize % start.servers.len().max(1);
        WatchClient {
            id: start.id,
            spec,
            start,
            range,
            watch: 0,
            watches: 0,
            opened_from: None,
            last_seen: 0,
            stream: 0,
            streams: 0,
            server,
            next_seq: 0,
            held: BTreeMap::new(),
            gap_checks: 0,
            leader: None,
            next_check_mono_ns: 0,
            check_sent_mono_ns: None,
        }
    }

    fn server_id(&self) -> NodeId {
        self.start.servers[self.server]
    }

    /// Starts a new watch (the first, or after a compacted resume).
    fn new_watch(&mut self, step: &mut Step<'_>, start_revision: LogIndex) {
        self.watches += 1;
        self.watch = (self.start.incarnation << 32) | self.watches;
        self.opened_from = None;
        self.last_seen = 0;
        self.open_stream(step, start_revision);
    }

    fn open_stream(&mut self, step: &mut Step<'_>, start_revision: LogIndex) {
        self.streams += 1;
        self.stream = (self.start.incarnation << 32) | self.streams;
        self.next_seq = 0;
        self.held.clear();
        self.gap_checks = 0;
        self.check_sent_mono_ns = None;
        let (range, prev_kv) = (self.range.clone(), self.spec.prev_kv);
        let create = WatchRequest::Create { stream: self.stream, range, start_revision, prev_kv };
        step.send(Proc::Server(self.server_id()), Wire::Watch(create));
    }

    /// Leaves the current stream and goes on at `server` from the last
    /// seen revision + 1 (or the watch's start).
    fn resume(&mut self, step: &mut Step<'_>, server: usize, why: &str) {
        step.send(Proc::Server(self.server_id()), Wire::Watch(WatchRequest::Cancel { stream: self.stream }));
        self.server = server % self.start.servers.len();
        self.leader = None;
        let from = match self.opened_from {
            None => return self.open_stream(step, self.first_start()),
            Some(start) if self.last_seen == 0 => start,
            Some(_) => self.last_seen + 1,
        };
        let (watch, server, why) = (self.watch, self.server_id(), why.to_string());
        step.record(Event::WatchResumed { watch, server, from_revision: from, why });
        self.open_stream(step, from);
    }

    fn first_start(&self) -> LogIndex {
        match self.spec.start {
            WatchStart::Now => 0,
            WatchStart::First => 1,
        }
    }

    fn deliver(&mut self, step: &mut Step<'_>, body: StreamBody) {
        match body {
            StreamBody::Created { start_revision } => {
                if self.opened_from.is_none() {
                    self.opened_from = Some(start_revision);
                    let (key, range_end) = (text(&self.range.key), text(&self.range.range_end));
                    let (watch, prev_kv, server) = (self.watch, self.spec.prev_kv, self.server_id());
                    step.record(Event::WatchOpened { watch, key, range_end, start_revision, prev_kv, server });
                }
            }
            StreamBody::Events(changes) => changes.into_iter().for_each(|c| self.record_event(step, c)),
            StreamBody::Compacted { compact_revision } => {
                step.record(Event::WatchCompacted { watch: self.watch, compact_revision });
                self.new_watch(step, 0);
            }
        }
    }

    fn record_event(&mut self, step: &mut Step<'_>, change: Change) {
        self.last_seen = change.revision;
        let value = change.current.map(|v| text(&v.value));
        let prev = change.prev.map(|v| text(&v.value));
        step.record(Event::WatchEvent { watch: self.watch, revision: change.revision, key: text(&change.key), value, prev });
    }

    fn on_status(&mut self, step: &mut Step<'_>, known: bool, leader: Option<NodeId>) {
        self.check_sent_mono_ns = None;
        let here = self.server;
        if !known {
            return self.resume(step, here, "the server does not know the stream");
        }
        let Some(leader) = leader else { return self.resume(step, here + 1, "the server has no leader") };
        if self.leader.is_some_and(|before| before != leader) {
            let at = self.start.servers.iter().position(|s| *s == leader).unwrap_or(here);
            return self.resume(step, at, "the leader changed");
        }
        self.leader = Some(leader);
    }
}

impl Actor for WatchClient {
    fn start(&mut self, step: &mut Step<'_>) {
        self.next_check_mono_ns = step.mono_ns + self.spec.check_every_ns;
        self.new_watch(step, self.first_start());
    }

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        match wire {
            Wire::WatchReply(WatchReply::Stream { stream, seq, body }) if stream == self.stream => {
                // A duplicated message of the stream is dropped, as TCP would.
                if seq >= self.next_seq {
                    self.held.insert(seq, body);
                }
                while let Some(body) = self.held.remove(&self.next_seq) {
                    self.next_seq += 1;
                    let stream = self.stream;
                    self.deliver(step, body);
                    if self.stream != stream {
                        break;
                    }
                }
            }
            Wire::WatchReply(WatchReply::Status { stream, known, leader }) if stream == self.stream => {
                self.on_status(step, known, leader);
            }
            // Messages of a stream already left.
            Wire::WatchReply(_) => {}
            wire => panic!("c{} got an unexpected message from {from}: {wire:?}", self.id),
        }
    }

    fn on_timer(&mut self, step: &mut Step<'_>) {
        let now = step.mono_ns;
        if self.check_sent_mono_ns.is_some_and(|sent| now >= sent + self.start.request_timeout_ns) {
            self.resume(step, self.server + 1, "the server did not answer");
        }
        if now >= self.next_check_mono_ns {
            self.next_check_mono_ns = now + self.spec.check_every_ns;
            self.gap_checks = if self.held.is_empty() { 0 } else { self.gap_checks + 1 };
            if self.gap_checks >= 2 {
                return self.resume(step, self.server, "a message of the stream was lost");
            }
            if self.check_sent_mono_ns.is_none() {
                self.check_sent_mono_ns = Some(now);
                step.send(Proc::Server(self.server_id()), Wire::Watch(WatchRequest::Check { stream: self.stream }));
            }
        }
    }

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        let answer_ns = self.check_sent_mono_ns.map(|sent| sent + self.start.request_timeout_ns);
        Some(answer_ns.map_or(self.next_check_mono_ns, |a| a.min(self.next_check_mono_ns)))
    }
}
