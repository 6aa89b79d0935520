//! The data store of seed 001: accepts a write only if its fencing token is
//! at least the highest it has accepted for that key (when the key is
//! fenced; an unfenced key accepts everything, the hazard fencing exists
//! for). Its accepts and rejects are what `fencing-order` judges.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Actor, Step};
use crate::observe::Event;
use crate::world::wire::{Proc, StoreReply, Wire};

pub struct StoreActor {
    /// Key → whether writes to it are checked against their token.
    fenced: BTreeMap<String, bool>,
    /// Highest accepted token per key; owned by the simulator so that it
    /// survives the store's crash (a real store keeps it on disk).
    highest_token: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl StoreActor {
    pub fn new(fenced: BTreeMap<String, bool>, highest_token: Arc<Mutex<BTreeMap<String, u64>>>) -> Self {
        StoreActor { fenced, highest_token }
    }
}

impl Actor for StoreActor {
    fn start(&mut self, _step: &mut Step<'_>) {}

    fn on_message(&mut self, step: &mut Step<'_>, from: Proc, wire: Wire) {
        let Wire::StoreWrite(write) = wire else {
            panic!("the store got an unexpected message from {from}: {wire:?}");
        };
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

    fn on_timer(&mut self, _step: &mut Step<'_>) {}

    fn next_deadline_mono_ns(&self) -> Option<u64> {
        None
    }
}
