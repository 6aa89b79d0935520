//! The data store of the Raft lock-service design: accepts a write only if its
//! fencing token is at least the highest it has accepted for that key (when the
//! key is fenced; an unfenced key accepts everything, the hazard fencing exists
//! for). Its accepts and rejects are what `fencing-order` judges.
//!
//! It also keeps the multi-instance lease design's task rows (`task_table`):
//! task workers' fenced starts and completions, which `task-once` judges.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::task_table::TaskTable;
use super::{Actor, Step};
use crate::world::wire::{StoreReply, StoreWrite, Wire};
use crate::world::wire::{TaskReply, TaskWrite};
use leasesim_judge::observe::Event;
use leasesim_judge::vocab::Proc;
use leasesim_judge::vocab::TaskVerdict;

pub struct StoreActor {
    /// Key → whether writes to it are checked against their token.
    fenced: BTreeMap<String, bool>,
    /// Highest accepted token per key; owned by the simulator so that it
    /// survives the store's crash (a real store keeps it on disk).
    highest_token: Arc<Mutex<BTreeMap<String, u64>>>,
    tasks: TaskTable,
}

impl StoreActor {
    pub fn new(fenced: BTreeMap<String, bool>, highest_token: Arc<Mutex<BTreeMap<String, u64>>>, tasks: TaskTable) -> Self {
        StoreActor { fenced, highest_token, tasks }
    }

    fn on_write(&mut self, step: &mut Step<'_>, from: Proc, write: StoreWrite) {
        let mut highest_token = self.highest_token.lock().expect("single-threaded simulation");
        let highest = highest_token.get(&write.key).copied().unwrap_or(0);
        let fenced = self.fenced.get(&write.key).copied().unwrap_or(true);
        let accepted = !fenced || write.token >= highest;
        if accepted {
            highest_token.insert(write.key.clone(), highest.max(write.token));
            step.record(Event::StoreAccepted { client: write.client, key: write.key, token: write.token });
        } else {
            step.record(Event::StoreRejected { client: write.client, key: write.key, token: write.token, highest });
        }
        step.send(from, Wire::StoreReply(StoreReply { request_id: write.request_id, accepted }));
    }

    fn on_task_write(&mut self, step: &mut Step<'_>, from: Proc, write: TaskWrite) {
        let verdict = self.tasks.apply(&write);
        let (client, task, token, step_kind) = (write.client, write.task, write.token, write.step);
        match verdict {
            TaskVerdict::Accepted => step.record(Event::TaskWriteAccepted { client, task, token, step: step_kind }),
            refused => step.record(Event::TaskWriteRefused { client, task, token, step: step_kind, verdict: refused }),
        }
        step.send(from, Wire::TaskReply(TaskReply { request_id: write.request_id, task, verdict }));
    }
}

impl Actor for StoreActor {
    fn start(&mut self, _step: &mut Step<'_>) {}

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        match wire {
            Wire::StoreWrite(write) => self.on_write(step, from, write),
            Wire::TaskWrite(write) => self.on_task_write(step, from, write),
            wire => panic!("the store got an unexpected message from {from}: {wire:?}"),
        }
    }

    fn on_timer(&mut self, _step: &mut Step<'_>) {}

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        None
    }
}
