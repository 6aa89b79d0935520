//! The txn workload for real (the simulator's `workload/txn.rs`): each
//! client sends etcd Txns over several of the keys `t0`, `t1`, …, one at a
//! time, `interval` apart, and records each call and answer for the
//! judge's multi-key linearizability check. Two kinds, drawn half and half
//! as the simulator draws them:
//!
//! - a conditional write: compare one of the chosen keys with the value
//!   this client last read there (or its absence), then put one new value
//!   into every chosen key; else delete the compared key;
//! - a read of several keys as one txn (one revision: an atomic snapshot).
//!
//! Both worlds draw them with `leasesim_scenario::txn_draw`.
//!
//! A txn without an answer in time has an unknown outcome and no return
//! (the checker lets it have happened or not); the client then goes on at
//! the next member. The keys are the simulator's own names: every real run
//! starts a fresh cluster, so they start absent as the checker assumes.

use leasesim_core::service::Op;
use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_scenario::txn_draw::{draw_txn, note_reads, LastRead};
use leasesim_scenario::TxnWorkload;

use super::{draw, wire, Shared};
use crate::gate::Pass;

pub async fn run(ctx: Shared, client: u64, spec: TxnWorkload, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(client, attempt).await);
    let mut last_read = LastRead::new();
    let (mut seq, mut writes) = (0u64, 0u64);
    // Values stay unique if this client is started again (a crash).
    let writer = format!("c{client}.{}", ctx.seen.now_ns());
    while ctx.running() {
        pass.sleep(draw(&mut rng, spec.interval_ns)).await;
        seq += 1;
        let txn = draw_txn(&mut rng, spec.keys, &writer, &mut writes, &last_read);
        let request = wire::txn_request(&txn);
        let call_ns = ctx.seen.record(client, Event::KvCall { seq, op: Op::Txn(txn.clone()) });
        match ctx.ask(kv.txn(request)).await {
            Some(answer) => {
                let response = wire::txn_response(answer.get_ref());
                note_reads(&mut last_read, &txn, &response);
                ctx.seen.answered(client, call_ns, Event::KvReturn { seq, response });
            }
            None => {
                attempt += 1;
                kv = KvClient::new(ctx.channel(client, attempt).await);
            }
        }
    }
}
