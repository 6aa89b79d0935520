//! One real run, start to verdict: load and check the scenario, refuse
//! what the target cannot play, start the cluster, run the clients and the
//! fault timeline side by side for `duration + settle`, judge, print.
//! Ctrl-C or SIGTERM drops the run, and with it every process it started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasesim_judge::checkers::ViolationJson;
use leasesim_judge::observe::ObsLog;
use leasesim_judge::vocab::{Proc as JudgeProc, SimClock};
use leasesim_node::driver::NODE_BUGS;
use leasesim_node::tools::load::observed::Recorder;
use leasesim_scenario::{self as scenario, Process, Scenario, WorkloadKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clients::clock::{self, ClientClock};
use crate::clients::tasks::Clients;
use crate::clients::{timeout_of, Ctx};
use crate::cluster::{base_link, Binaries, Cluster};
use crate::final_state::{Finals, MemberAtEnd};
use crate::gate::{gate, Gate, Pass};
use crate::history::Committed;
use crate::schedule::Player;
use crate::sites::Sites;
use crate::timer_points::TimerPoints;
use crate::verdict::{self, Judging, Outcome};
use crate::{RunArgs, Target};

/// Runs until the run ends or a signal comes; the exit code.
pub async fn run_or_interrupt(args: RunArgs) -> i32 {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            eprintln!("leasesim-real: cannot watch for SIGTERM: {e}");
            return 2;
        }
    };
    tokio::select! {
        code = run(args) => code,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("leasesim-real: interrupted; every process it started was killed");
            130
        }
        _ = term.recv() => {
            eprintln!("leasesim-real: terminated; every process it started was killed");
            143
        }
    }
}

/// A refusal or a failure before the run, already printed: exit code 2.
struct BadInput;

fn bad(message: impl std::fmt::Display) -> BadInput {
    eprintln!("{message}");
    BadInput
}

async fn run(args: RunArgs) -> i32 {
    match prepare(&args) {
        Ok((scenario, notes, bins)) => play(&args, &scenario, notes, &bins).await.unwrap_or(2),
        Err(BadInput) => 2,
    }
}

/// The scenario, the target's notes on it, and the binaries, or the reason
/// the run cannot start.
fn prepare(args: &RunArgs) -> Result<(Scenario, Vec<String>, Binaries), BadInput> {
    let mut s = scenario::load(&args.file).map_err(bad)?;
    let text = std::fs::read_to_string(&args.file).map_err(|e| bad(format!("{}: {e}", args.file.display())))?;
    let mut node_bugs = Vec::new();
    for name in &args.bugs {
        if args.target == Target::Etcd {
            return Err(bad(format!("--bug {name}: planted bugs live in leasesim's engine, not in etcd (use --target node)")));
        }
        // leasesim-node's own bugs (its driver's) go to its members only.
        match NODE_BUGS.contains(&name.as_str()) {
            true => node_bugs.push(name.clone()),
            false => {
                s.bugs.enable(name).map_err(|e| bad(format!("--bug {name}: {e} (or leasesim-node's own: {})", NODE_BUGS.join(", "))))?
            }
        }
    }
    let sites = Sites::find(&text);
    // A chaos scenario runs as the simulator runs it: the faults, drifts and
    // knobs the seed draws, written out as plain scenario parts.
    let seed = args.seed.unwrap_or(s.seeds.start);
    let chaotic = s.chaos.is_some();
    let s = scenario::chaos_draw::explicit(&s, seed);
    let mut notes = crate::refuse::check(&s, &sites, args.target, chaotic.then_some(seed)).map_err(bad)?;
    if sites.network.is_none() {
        notes.push("network: loopback's own latency (the file sets no [network])".into());
    }
    // The data store is leasesim-node's, whatever the members are.
    let node = match &args.node_bin {
        Some(path) if path.is_file() => vec![path.to_string_lossy().into_owned()],
        Some(path) => return Err(bad(format!("--node-bin {}: no such file", path.display()))),
        None => {
            let exe = std::env::current_exe().map_err(|e| bad(format!("cannot find this binary: {e}")))?;
            vec![exe.to_string_lossy().into_owned(), crate::NODE_COMMAND.to_string()]
        }
    };
    if args.target == Target::Etcd && !args.etcd_bin.is_file() {
        return Err(bad(format!("{}: no etcd binary (Debian: apt-get install etcd-server; or pass --etcd-bin)", args.etcd_bin.display())));
    }
    let bins = Binaries { node, etcd: args.etcd_bin.to_string_lossy().into_owned(), node_bugs };
    Ok((s, notes, bins))
}

/// Where the members' data and logs go: `--keep-dir`, or a temporary
/// directory removed when the returned guard drops.
fn run_dir(args: &RunArgs) -> Result<(PathBuf, Option<tempfile::TempDir>), BadInput> {
    match &args.keep_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| bad(format!("--keep-dir {}: {e}", dir.display())))?;
            Ok((dir.clone(), None))
        }
        None => {
            let temp =
                tempfile::Builder::new().prefix("leasesim-real-").tempdir().map_err(|e| bad(format!("no temporary directory: {e}")))?;
            Ok((temp.path().to_path_buf(), Some(temp)))
        }
    }
}

/// Every client's gate and pass, and the faults waiting at their timers
/// (`timer_points.rs`); the routes, if any, close the gates at a client's
/// `after-send:request`.
fn client_gates(ctx: &Ctx, cluster: &Cluster, timer_points: &Arc<TimerPoints>) -> Result<(Vec<Gate>, Vec<Pass>), BadInput> {
    let gated = ctx.clocks.iter().enumerate().map(|(i, clock)| gate(i as u64 + 1, clock.clone(), timer_points.clone()));
    let (gates, passes): (Vec<Gate>, Vec<Pass>) = gated.unzip();
    if let Some(routes) = &cluster.routes {
        routes.pause_with(gates.clone()).map_err(bad)?;
    }
    Ok((gates, passes))
}

async fn play(args: &RunArgs, s: &Scenario, notes: Vec<String>, bins: &Binaries) -> Result<i32, BadInput> {
    let seed = args.seed.unwrap_or(s.seeds.start);
    let (dir, _temp) = run_dir(args)?;
    let text = std::fs::read_to_string(&s.path).unwrap_or_default();
    let base = base_link(s, Sites::find(&text).network.is_some());
    let mut cluster = Cluster::start(s, args.target, bins, &dir, base)
        .await
        .map_err(|e| bad(format!("{}: the cluster did not start: {e} (logs in {})", s.path.display(), dir.display())))?;
    if crate::routes::needed(s) {
        let routes = crate::routes::Routes::start(s.client_count(), &cluster.endpoints(), &cluster.store_addr).await;
        cluster.routes = Some(routes.map_err(|e| bad(format!("{}: the clients' routes did not start: {e}", s.path.display())))?);
    }
    let started = Instant::now();
    let ctx = Arc::new(context(s, args.target, &cluster, seed, started)?);
    let timer_points = Arc::new(TimerPoints::default());
    let (gates, passes) = client_gates(&ctx, &cluster, &timer_points)?;
    let mut clients = Clients::start(s, &ctx, passes);
    let rng = ChaCha8Rng::seed_from_u64(seed);
    let members = cluster.members.len();
    let player = Player {
        scenario: s,
        cluster: &mut cluster,
        ctx: &ctx,
        gates: &gates,
        timer_points: &timer_points,
        rng,
        clocks: initial_clocks(s),
        resolved: Vec::new(),
        armed: Vec::new(),
        aimed: Vec::new(),
        clients: &mut clients,
        asked: Vec::new(),
        deferred_clocks: Vec::new(),
        clock_lines_read: vec![0; members],
    };
    let clocks = player
        .play()
        .await
        .map_err(|e| bad(format!("{}: a fault could not be played: {e} (logs in {})", s.path.display(), dir.display())))?;
    drain(clients, ctx.until + ctx.timeout * 4).await;
    let real_seconds = started.elapsed().as_secs_f64();
    let history = match s.workloads.iter().any(|w| matches!(w.kind, WorkloadKind::Watch(_))) {
        true => Some(crate::history::committed_changes(&ctx.endpoints).await),
        false => None,
    };
    // The members' logs are read from here on: an entry applied later
    // cannot be in them, so its `applied` event is left out (`server_events.rs`).
    let read_from_ns = ctx.seen.now_ns();
    let finals = crate::final_state::read(&members_at_end(&cluster)).await;
    let event_logs: Vec<Option<PathBuf>> = cluster.members.iter().map(|m| m.events.clone()).collect();
    drop(cluster);
    let ctx = Arc::try_unwrap(ctx).map_err(|_| bad("a client task outlived the run"))?;
    let origin_ns = ctx.seen.origin_ns();
    let log = ctx.seen.into_log();
    let log = with_server_events(log, &event_logs, origin_ns, read_from_ns).map_err(|e| bad(format!("a member's event log: {e}")))?;
    if let Some(path) = &args.trace {
        write_trace(path, &log).map_err(|e| bad(format!("--trace {}: {e}", path.display())))?;
    }
    let outcome = judge(args, s, seed, &log, (clocks.clone(), history, finals), real_seconds, notes);
    if args.json {
        println!("{}", serde_json::to_string(&outcome).expect("outcomes serialize"));
    } else {
        verdict::print(&outcome);
    }
    if let Some(dir) = &args.report {
        let path = crate::report::write(dir, args, s, &log, &clocks, &outcome).map_err(bad)?;
        eprintln!("report: {}", path.display());
    }
    Ok(if outcome.expected { 0 } else { 1 })
}

/// What the run's clients share, from the run's start.
fn context(s: &Scenario, target: Target, cluster: &Cluster, seed: u64, started: Instant) -> Result<Ctx, BadInput> {
    let seen = Recorder::default();
    let clocks = client_clocks(s, seen.origin_ns()).map_err(|e| bad(format!("{}: [clocks]: {e}", s.path.display())))?;
    Ok(Ctx {
        seen,
        endpoints: cluster.endpoints(),
        dials: (1..=s.client_count()).map(|c| cluster.dial(c)).collect(),
        until: started + Duration::from_nanos(s.duration_ns + s.settle_ns),
        timeout: timeout_of(s),
        holders: Mutex::default(),
        seed,
        aims: Default::default(),
        clocks,
        lock_seqs: (target == Target::Node).then(|| (0..s.client_count()).map(|_| Default::default()).collect()),
    })
}

/// Each member's API and whether its process runs, as the run ends.
fn members_at_end(cluster: &Cluster) -> Vec<MemberAtEnd> {
    let running = |m: &crate::cluster::Member| m.proc.is_running() && !m.proc.is_paused();
    cluster
        .members
        .iter()
        .map(|m| MemberAtEnd { client_addr: m.client_addr.clone(), lock_addr: m.lock_addr, running: running(m) })
        .collect()
}

/// Waits for every client task to end by `grace` (each stops at the run's
/// end, but a request in flight may take a few timeouts), aborting those
/// that do not.
async fn drain(clients: Clients, grace: Instant) {
    for task in clients.into_tasks() {
        let left = grace.saturating_duration_since(Instant::now());
        let abort = task.abort_handle();
        if tokio::time::timeout(left, task).await.is_err() {
            abort.abort();
        }
    }
}

/// The run's log with the members' own events merged in (leasesim-node
/// members write them; etcd members write none).
fn with_server_events(log: ObsLog, files: &[Option<PathBuf>], origin_ns: u64, read_from_ns: u64) -> Result<ObsLog, String> {
    let mut events = crate::server_events::ServerEvents::default();
    for (i, file) in files.iter().enumerate() {
        if let Some(file) = file {
            events.read(file, i as u64 + 1, origin_ns)?;
        }
    }
    events.drop_applied_after(read_from_ns);
    Ok(events.merge_into(log))
}

/// The judge's verdict on the run's log, as its outcome.
fn judge(
    args: &RunArgs,
    s: &Scenario,
    seed: u64,
    log: &ObsLog,
    (clocks, history, finals): (BTreeMap<JudgeProc, SimClock>, Option<Committed>, Finals),
    real_seconds: f64,
    notes: Vec<String>,
) -> Outcome {
    let judging = Judging { scenario: s, target: args.target, clocks, history, finals: finals.servers, log_gaps: finals.log_gaps };
    let (violations, not_judged) = verdict::judge(log, &judging);
    Outcome {
        scenario: s.name.clone(),
        file: s.path.display().to_string(),
        seed,
        target: args.target.name(),
        verdict: if violations.is_empty() { "ok" } else { "violation" },
        expected: s.expect.verdict.allows(violations.iter().map(|v| v.invariant)),
        violations: violations.iter().map(ViolationJson::from).collect(),
        expected_violations: s.expect.verdict.expected_ids(),
        not_judged,
        stamp_error_ns: log.stamp_error_ns(),
        real_seconds,
        observations: log.iter().count(),
        bugs: s
            .bugs
            .enabled()
            .iter()
            .map(|b| b.to_string())
            .chain(args.bugs.iter().filter(|b| NODE_BUGS.contains(&b.as_str())).cloned())
            .collect(),
        faults: verdict::faults_played(log),
        notes,
        measures: leasesim_judge::measures::measure(log),
    }
}

/// Every server's and client's clock at the start, as the file's
/// `[clocks]` set them, in the judge's model.
fn initial_clocks(s: &Scenario) -> BTreeMap<JudgeProc, SimClock> {
    s.clocks
        .iter()
        .filter_map(|(p, spec)| match p {
            Process::Server(n) => Some((JudgeProc::Server(*n), clock::judged(Some(spec)))),
            Process::Client(c) => Some((JudgeProc::Client(*c), clock::judged(Some(spec)))),
            Process::Store => None,
        })
        .collect()
}

/// Each client's own clock, skewed from the start by its `[clocks.cN]`.
fn client_clocks(s: &Scenario, origin_ns: u64) -> Result<Vec<Arc<ClientClock>>, String> {
    (1..=s.client_count()).map(|c| Ok(Arc::new(ClientClock::new(origin_ns, s.clocks.get(&Process::Client(c)))?))).collect()
}

fn write_trace(path: &std::path::Path, log: &ObsLog) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for obs in log.iter() {
        serde_json::to_writer(&mut out, &*obs)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
