//! etcd's authentication and role-based access, run with etcdctl against
//! real etcd 3.4 and against leasesim-node, side by side: the same
//! commands (users, roles, a `--prefix` permission, `auth enable`, puts
//! without credentials, with a wrong password, by a user lacking the
//! permission and by one holding it, a denied watch and lock, `auth
//! disable`) must print the same and exit the same on both. The gRPC
//! codes and messages of the refusals are compared too, through a Rust
//! client. Then, on leasesim-node alone: users and roles survive every
//! member being SIGKILLed and restarted, and a member that restarts from a
//! snapshot.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{have_etcd, have_etcdctl, Kind, ProcessCluster};
use leasesim_node::pb::etcdserverpb::auth_client::AuthClient;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{AuthenticateRequest, PutRequest, RangeRequest};

/// One etcdctl run against `endpoint`: stdin fed, killed if it runs past
/// 30 s. Returns what it printed (etcd client's JSON log lines left out:
/// they carry times and ids) and its exit code.
fn ctl(endpoint: &str, args: &[&str], stdin: &str) -> (String, i32) {
    let mut child = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={endpoint}"))
        .arg("--command-timeout=20s")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run etcdctl");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write etcdctl's stdin");
    let started = Instant::now();
    while child.try_wait().expect("etcdctl status").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("etcdctl output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("{\"level\"")).collect();
    (kept.join("\n"), out.status.code().unwrap_or(-1))
}

/// The commands, each with its stdin (`txn` reads its ops there).
const SCRIPT: &[(&[&str], &str)] = &[
    (&["auth", "enable"], ""),
    (&["user", "add", "root", "--new-user-password=rootpw"], ""),
    (&["user", "add", "alice", "--new-user-password=alicepw"], ""),
    (&["user", "add", "bob", "--new-user-password=bobpw"], ""),
    (&["user", "add", "bob", "--new-user-password=bobpw"], ""),
    (&["role", "add", "app"], ""),
    (&["role", "grant-permission", "app", "readwrite", "app/", "--prefix=true"], ""),
    (&["role", "grant-permission", "app", "read", "cfg"], ""),
    (&["user", "grant-role", "alice", "app"], ""),
    (&["user", "grant-role", "alice", "nope"], ""),
    // etcdctl meets "root user does not have root role", adds the role
    // root and grants it to root, and enables again.
    (&["auth", "enable"], ""),
    (&["user", "list"], ""),
    (&["--user", "root:rootpw", "role", "get", "root"], ""),
    (&["--user", "root:rootpw", "user", "get", "root"], ""),
    (&["put", "app/x", "1"], ""),
    (&["--user", "alice:wrong", "put", "app/x", "1"], ""),
    (&["--user", "nobody:x", "put", "app/x", "1"], ""),
    (&["--user", "bob:bobpw", "put", "app/x", "1"], ""),
    (&["--user", "root:rootpw", "get", "app/x"], ""),
    (&["--user", "alice:alicepw", "put", "app/x", "1"], ""),
    (&["--user", "alice:alicepw", "get", "app/", "--prefix"], ""),
    (&["--user", "alice:alicepw", "get", "a", "--prefix"], ""),
    (&["--user", "alice:alicepw", "put", "cfg", "1"], ""),
    (&["--user", "alice:alicepw", "get", "cfg"], ""),
    (&["--user", "alice:alicepw", "txn"], "\nput app/y 2\n\n\n"),
    (&["--user", "alice:alicepw", "txn"], "value(\"cfg\") = \"1\"\n\nput k 3\n\n\n"),
    (&["--user", "alice:alicepw", "del", "app/y"], ""),
    (&["--user", "bob:bobpw", "watch", "app/x"], ""),
    (&["watch", "app/x"], ""),
    (&["--user", "bob:bobpw", "lock", "app/lk", "echo", "held"], ""),
    (&["--user", "alice:alicepw", "lock", "app/lk", "echo", "held"], ""),
    (&["--user", "alice:alicepw", "user", "list"], ""),
    (&["--user", "alice:alicepw", "member", "remove", "1"], ""),
    (&["defrag"], ""),
    (&["--user", "alice:alicepw", "defrag"], ""),
    (&["--user", "root:rootpw", "defrag"], ""),
    (&["--user", "root:rootpw", "user", "list"], ""),
    (&["--user", "root:rootpw", "role", "list"], ""),
    (&["--user", "root:rootpw", "user", "get", "alice"], ""),
    (&["--user", "root:rootpw", "role", "get", "app"], ""),
    (&["--user", "root:rootpw", "role", "revoke-permission", "app", "nothing"], ""),
    (&["--user", "root:rootpw", "user", "delete", "root"], ""),
    (&["--user", "root:rootpw", "user", "revoke-role", "alice", "app"], ""),
    (&["--user", "alice:alicepw", "put", "app/x", "2"], ""),
    (&["--user", "root:rootpw", "user", "passwd", "bob", "--interactive=false"], "bobpw2\n"),
    (&["--user", "bob:bobpw", "get", "k"], ""),
    (&["--user", "alice:alicepw", "auth", "disable"], ""),
    (&["--user", "root:rootpw", "auth", "disable"], ""),
    (&["put", "k", "v"], ""),
    (&["user", "list"], ""),
];

/// Runs the script against `kind`'s cluster (through one member; for
/// leasesim-node a follower, so that forwarding is exercised too).
fn transcript(kind: Kind) -> Vec<String> {
    let mut cluster = ProcessCluster::start_kind(kind, 3, 100, 1000);
    let leader = cluster.wait_for_leader();
    let endpoint = cluster.endpoint((leader + 1) % 3);
    SCRIPT
        .iter()
        .map(|(args, stdin)| {
            let (out, code) = ctl(&endpoint, args, stdin);
            let out = out.replace(&endpoint, "ENDPOINT");
            format!("$ etcdctl {} -> exit {code}\n{out}", args.join(" "))
        })
        .collect()
}

#[test]
fn etcdctl_auth_matches_etcd() {
    if !have_etcdctl() || !have_etcd() {
        return;
    }
    let etcd = transcript(Kind::Etcd);
    let ours = transcript(Kind::Leasesim);
    for (theirs, mine) in etcd.iter().zip(&ours) {
        println!("{mine}");
        assert_eq!(theirs, mine, "etcd 3.4 and leasesim-node differ");
    }
}

/// The code and message of each refusal, as a Rust gRPC client sees them.
async fn refusals(url: String) -> Vec<String> {
    let channel = common::channel(&url).await;
    let mut kv = KvClient::new(channel.clone());
    let mut auth = AuthClient::new(channel);
    let put = || PutRequest { key: b"app/z".to_vec(), value: b"1".to_vec(), ..Default::default() };
    let with_token = |token: &str, req: PutRequest| {
        let mut req = tonic::Request::new(req);
        req.metadata_mut().insert("token", token.parse().expect("ASCII token"));
        req
    };
    let mut seen = Vec::new();
    let mut note = |what: &str, r: Result<(), tonic::Status>| {
        seen.push(match r {
            Ok(()) => format!("{what}: ok"),
            Err(e) => format!("{what}: {:?} {}", e.code(), e.message()),
        })
    };
    note("no token", kv.put(put()).await.map(drop));
    note("forged token", kv.put(with_token("abc.def", put())).await.map(drop));
    let login = |name: &str, password: &str| AuthenticateRequest { name: name.into(), password: password.into() };
    note("wrong password", auth.authenticate(login("bob", "nope")).await.map(drop));
    let bob = auth.authenticate(login("bob", "bobpw")).await.expect("bob logs in").into_inner().token;
    note("bob puts", kv.put(with_token(&bob, put())).await.map(drop));
    let range = RangeRequest { key: b"app/z".to_vec(), ..Default::default() };
    let mut read = tonic::Request::new(range);
    read.metadata_mut().insert("token", bob.parse().expect("ASCII token"));
    note("bob reads", kv.range(read).await.map(drop));
    seen
}

#[test]
fn refusals_carry_etcds_grpc_codes() {
    if !have_etcdctl() || !have_etcd() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut seen = Vec::new();
    for kind in [Kind::Etcd, Kind::Leasesim] {
        let mut cluster = ProcessCluster::start_kind(kind, 3, 100, 1000);
        let leader = cluster.wait_for_leader();
        let at = cluster.endpoint(leader);
        for (args, stdin) in [
            (&["user", "add", "root", "--new-user-password=rootpw"][..], ""),
            (&["user", "add", "bob", "--new-user-password=bobpw"], ""),
            (&["auth", "enable"], ""),
        ] {
            let (out, code) = ctl(&at, args, stdin);
            assert_eq!(code, 0, "{args:?}: {out}");
        }
        seen.push(runtime.block_on(refusals(cluster.url(leader))));
    }
    println!("{:#?}", seen[1]);
    assert_eq!(seen[0], seen[1], "etcd 3.4 and leasesim-node refuse differently");
}

/// Waits until `args` (run against every member) succeeds and prints `want`.
fn eventually(cluster: &ProcessCluster, args: &[&str], want: &str) {
    let started = Instant::now();
    loop {
        let (out, code) = ctl(&cluster.endpoints(), args, "");
        if code == 0 && out.trim() == want {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "etcdctl {args:?} printed {out} (exit {code}), not {want}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn users_and_roles_survive_sigkill_and_snapshots() {
    if !have_etcdctl() {
        return;
    }
    let mut cluster = ProcessCluster::start(3);
    cluster.wait_for_leader();
    let at = cluster.endpoints();
    for args in [
        &["user", "add", "root", "--new-user-password=rootpw"][..],
        &["user", "grant-role", "root", "root"],
        &["user", "add", "alice", "--new-user-password=alicepw"],
        &["role", "add", "app"],
        &["role", "grant-permission", "app", "readwrite", "app/", "--prefix=true"],
        &["user", "grant-role", "alice", "app"],
        &["auth", "enable"],
    ] {
        let (out, code) = ctl(&at, args, "");
        assert_eq!(code, 0, "{args:?}: {out}");
    }
    // Past --snapshot-count (200) entries, so restarts load a snapshot
    // holding the auth store rather than replaying its entries.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let channel = common::channel(&cluster.url(0)).await;
        let login = AuthenticateRequest { name: "alice".into(), password: "alicepw".into() };
        let token = AuthClient::new(channel.clone()).authenticate(login).await.expect("alice logs in").into_inner().token;
        let mut kv = KvClient::new(channel);
        for i in 0..260 {
            let mut put =
                tonic::Request::new(PutRequest { key: format!("app/{i}").into_bytes(), value: b"v".to_vec(), ..Default::default() });
            put.metadata_mut().insert("token", token.parse().expect("ASCII token"));
            kv.put(put).await.expect("alice may write under app/");
        }
    });
    for i in 0..3 {
        cluster.kill(i);
    }
    for i in 0..3 {
        cluster.launch(i);
    }
    cluster.wait_for_leader();
    eventually(&cluster, &["--user", "alice:alicepw", "get", "app/259", "--print-value-only"], "v");
    eventually(&cluster, &["--user", "root:rootpw", "user", "get", "alice"], "User: alice\nRoles: app");
    let (out, code) = ctl(&cluster.endpoints(), &["put", "app/x", "1"], "");
    assert_eq!((out.as_str(), code), ("Error: etcdserver: user name is empty", 1));
    let (out, code) = ctl(&cluster.endpoints(), &["--user", "alice:wrong", "get", "app/x"], "");
    assert_eq!((out.as_str(), code), ("Error: etcdserver: authentication failed, invalid user ID or password", 2));
    // Every member, each from its own data directory, holds the store.
    for i in 0..3 {
        let (out, code) = ctl(&cluster.endpoint(i), &["--user", "alice:alicepw", "put", "app/from", &i.to_string()], "");
        assert_eq!((out.as_str(), code), ("OK", 0), "member {i}");
    }
}
