//! The kv workload for real: reads, writes and compare-and-sets on a few
//! keys of this run's own prefix (so the history starts from absent keys,
//! as the linearizability checker assumes), up to `in_flight` operations
//! open at once. As the simulator's kv client (`sim/src/workload/kv.rs`)
//! does, a client calls the next operation `interval` after its last call
//! while fewer than `in_flight` are unanswered, and `interval` after an
//! answer frees a slot of a full client; with `in_flight = 1` that is one
//! operation at a time, `interval` after each answer. Each call is stamped
//! before it leaves and each answer when it came (by the operation's own
//! task, so an answer is never stamped late because the client was busy
//! calling); an operation without an answer has an unknown outcome and no
//! return, which the checker allows to have happened or not. The open
//! operations share the client's one gRPC channel (HTTP/2 streams, as
//! etcd's Go client multiplexes them).

use leasesim_judge::observe::Event;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::tools::load::{kv_input, kv_send, observed};
use leasesim_scenario::KvWorkload;
use rand::Rng;
use tokio::task::JoinSet;
use tonic::transport::Channel;

use super::{draw, Shared};
use crate::gate::Pass;

/// What an operation's task hands back: the value a read saw (absent
/// included: the next CAS expects it), an answer that read nothing, or
/// that no answer came (the client dials again).
enum Done {
    Read(Option<String>),
    Answered,
    Unanswered,
}

pub async fn run(ctx: Shared, client: u64, spec: KvWorkload, prefix: String, mut pass: Pass) {
    let mut rng = ctx.rng(client);
    let mut attempt = client as usize;
    let mut kv = KvClient::new(ctx.channel(client, attempt).await);
    let mut seen: Option<String> = None;
    let mut n = 0u64;
    let in_flight = spec.in_flight.max(1) as usize;
    let mut open: JoinSet<Done> = JoinSet::new();
    while ctx.running() {
        if open.len() >= in_flight {
            // Full: the next call waits for an answer, then `interval`.
            let done = open.join_next().await;
            take(&ctx, client, done, &mut seen, &mut attempt, &mut kv).await;
            continue;
        }
        // Answers that come while it waits are taken as they come.
        let sleep = pass.sleep(draw(&mut rng, spec.interval_ns));
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => break,
                done = open.join_next(), if !open.is_empty() => take(&ctx, client, done, &mut seen, &mut attempt, &mut kv).await,
            }
        }
        n += 1;
        let key = format!("{prefix}{}", rng.gen_range(0..spec.keys));
        let input = kv_input(n, client, key, &seen);
        let op = observed::kv_op(&input).expect("kv_input makes KV operations");
        let call_ns = ctx.seen.record(client, Event::KvCall { seq: n, op });
        let (ctx, mut kv) = (ctx.clone(), kv.clone());
        open.spawn(async move {
            let Some(output) = ctx.ask(kv_send(&mut kv, &input)).await else { return Done::Unanswered };
            let response = observed::kv_response(&output).expect("a KV answer");
            ctx.seen.answered(client, call_ns, Event::KvReturn { seq: n, response });
            match output {
                leasesim_history::KvOutput::Value(value) => Done::Read(value),
                _ => Done::Answered,
            }
        });
    }
    // The last operations finish (or time out) as the last one did when
    // only one was open.
    while let Some(done) = open.join_next().await {
        take(&ctx, client, Some(done), &mut seen, &mut attempt, &mut kv).await;
    }
}

/// Takes one finished operation: a value it read is what the next CAS
/// expects; no answer makes the client dial again (the member it talked
/// to may be down), as it did with one operation open.
async fn take(
    ctx: &Shared,
    client: u64,
    done: Option<Result<Done, tokio::task::JoinError>>,
    seen: &mut Option<String>,
    attempt: &mut usize,
    kv: &mut KvClient<Channel>,
) {
    match done {
        Some(Ok(Done::Read(value))) => *seen = value,
        Some(Ok(Done::Answered)) | None => {}
        Some(Ok(Done::Unanswered)) | Some(Err(_)) => {
            *attempt += 1;
            *kv = KvClient::new(ctx.channel(client, *attempt).await);
        }
    }
}
