//! The task generator of a `kind = "task"` workload for real (its first
//! client; the simulator's `workload/task_generator.rs`): every
//! `task_every` it puts `/tasks/<n>` and then moves `/tasks/count` to `n`,
//! which makes task `n` visible to the workers (observation
//! `task-created`), until it has made `tasks` tasks. A restarted generator
//! reads the count back, says the last task exists (an earlier incarnation
//! may have made it visible without living to say so) and goes on from
//! there. The keys are the simulator's, so a run's KV reads alike in both
//! worlds.

use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{PutRequest, RangeRequest};
use leasesim_scenario::TaskWorkload;
use tonic::transport::Channel;

use super::{draw, Shared};
use crate::gate::Pass;

/// How many tasks the generator has made visible (a decimal number).
pub const COUNT_KEY: &str = "/tasks/count";

/// Task `n`'s payload.
fn task_key(task: u64) -> String {
    format!("/tasks/{task}")
}

/// The count of visible tasks (0 while there is none); `None`: no answer.
pub async fn read_count(ctx: &Shared, kv: &mut KvClient<Channel>) -> Option<u64> {
    let answer = ctx.ask(kv.range(RangeRequest { key: COUNT_KEY.into(), ..Default::default() })).await?.into_inner();
    let value = answer.kvs.first().map(|kv| String::from_utf8_lossy(&kv.value).into_owned());
    Some(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Puts `value` at `key` (no lease); whether it was answered.
pub async fn put(ctx: &Shared, kv: &mut KvClient<Channel>, key: String, value: String) -> bool {
    let put = PutRequest { key: key.into_bytes(), value: value.into_bytes(), ..Default::default() };
    ctx.ask(kv.put(put)).await.is_some()
}

/// Runs the generator, client `client`, until it made every task or the run ends.
pub async fn run(ctx: Shared, client: u64, spec: TaskWorkload, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(client, attempt).await);
    let mut count = loop {
        if !ctx.running() {
            return;
        }
        pass.pass().await;
        match read_count(&ctx, &mut kv).await {
            Some(count) => break count,
            None => {
                attempt += 1;
                kv = KvClient::new(ctx.channel(client, attempt).await);
                pass.sleep(super::RETRY_PAUSE).await;
            }
        }
    };
    if count > 0 {
        ctx.seen.record(client, Event::TaskCreated { task: count });
    }
    while ctx.running() && count < spec.tasks {
        pass.sleep(draw(&mut rng, spec.task_every_ns)).await;
        let task = count + 1;
        // A put without an answer: the same task again after the next pause.
        let mut answered = put(&ctx, &mut kv, task_key(task), format!("task {task} from c{client}")).await;
        let sent_ns = ctx.seen.now_ns();
        answered = answered && put(&ctx, &mut kv, COUNT_KEY.into(), task.to_string()).await;
        if answered {
            count = task;
            ctx.seen.answered(client, sent_ns, Event::TaskCreated { task });
        } else {
            attempt += 1;
            kv = KvClient::new(ctx.channel(client, attempt).await);
        }
    }
}
