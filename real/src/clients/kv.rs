//! The kv workload for real: reads, writes and compare-and-sets on a few
//! keys of this run's own prefix (so the history starts from absent keys,
//! as the linearizability checker assumes), one operation open at a time,
//! `interval` apart. Each call is stamped before it leaves and each answer
//! when it came; an operation without an answer has an unknown outcome and
//! no return, which the checker allows to have happened or not.

use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::tools::load::{kv_input, kv_send, observed};
use leasesim_scenario::KvWorkload;
use rand::Rng;

use super::{draw, Shared};
use crate::gate::Pass;

pub async fn run(ctx: Shared, client: u64, spec: KvWorkload, prefix: String, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(client, attempt).await);
    let mut seen: Option<String> = None;
    let mut n = 0u64;
    while ctx.running() {
        pass.sleep(draw(&mut rng, spec.interval_ns)).await;
        n += 1;
        let key = format!("{prefix}{}", rng.gen_range(0..spec.keys));
        let input = kv_input(n, client, key, &seen);
        let op = observed::kv_op(&input).expect("kv_input makes KV operations");
        let call_ns = ctx.seen.record(client, Event::KvCall { seq: n, op });
        match ctx.ask(kv_send(&mut kv, &input)).await {
            Some(output) => {
                if let leasesim_history::KvOutput::Value(value) = &output {
                    seen = value.clone();
                }
                let response = observed::kv_response(&output).expect("a KV answer");
                ctx.seen.answered(client, call_ns, Event::KvReturn { seq: n, response });
            }
            None => {
                attempt += 1;
                kv = KvClient::new(ctx.channel(client, attempt).await);
            }
        }
    }
}
