//! etcd's data model through etcdctl, on real etcd 3.4 and on leasesim-node
//! side by side: versions after put/put/delete/put, `get --rev`, a txn of
//! several compares and ops (atomic: one revision), etcd's txn checks,
//! compaction and its errors. Both must print the same transcript;
//! revision numbers, which differ between the two (leasesim's are log
//! indices), are replaced by their role.

use crate::common;

use common::{have_etcd, have_etcdctl, Kind, ProcessCluster};

/// The value of `"Name" : value` in etcdctl's `-w fields` output.
fn field(out: &str, name: &str) -> String {
    let prefix = format!("\"{name}\" : ");
    out.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {name} in {out}")).to_string()
}

/// etcdctl's stdout, or `ERR <last stderr line>` when it fails.
fn run(cluster: &ProcessCluster, args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut cmd = std::process::Command::new("etcdctl");
    cmd.env("ETCDCTL_API", "3").arg(format!("--endpoints={}", cluster.endpoints())).arg("--command-timeout=20s").args(args);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("run etcdctl");
    child.stdin.take().expect("stdin").write_all(stdin.unwrap_or("").as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("etcdctl output");
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        format!("ERR {}", String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or(""))
    }
}

fn transcript(kind: Kind) -> Vec<String> {
    let mut cluster = ProcessCluster::start_kind(kind, 1, 50, 500);
    cluster.wait_for_leader();
    let mut t = Vec::new();
    let first = field(&run(&cluster, &["put", "k", "v1", "-w", "fields"], None), "Revision");
    let second = field(&run(&cluster, &["put", "k", "v2", "-w", "fields"], None), "Revision");
    t.push(format!("version after put,put: {}", field(&run(&cluster, &["get", "k", "-w", "fields"], None), "Version")));
    t.push(run(&cluster, &["del", "k"], None));
    run(&cluster, &["put", "k", "v3"], None);
    let got = run(&cluster, &["get", "k", "-w", "fields"], None);
    t.push(format!(
        "after del,put: version {} created at mod {}",
        field(&got, "Version"),
        field(&got, "CreateRevision") == field(&got, "ModRevision")
    ));
    t.push(run(&cluster, &["get", "k", &format!("--rev={second}")], None));
    t.push(run(&cluster, &["get", "k", &format!("--rev={first}")], None));
    let compares_then_else =
        "value(\"k\") = \"v3\"\nversion(\"k\") = \"1\"\ncreate(\"none\") = \"0\"\n\nput a 1\nput b 2\ndel k\nget a\n\nput else x\n\n";
    t.push(run(&cluster, &["txn"], Some(compares_then_else)));
    let (a, b) = (run(&cluster, &["get", "a", "-w", "fields"], None), run(&cluster, &["get", "b", "-w", "fields"], None));
    t.push(format!("a and b at one revision: {}", field(&a, "ModRevision") == field(&b, "ModRevision")));
    t.push(run(&cluster, &["txn"], Some("version(\"a\") = \"7\"\n\nput then x\n\nput else y\n\n")));
    t.push(run(&cluster, &["txn"], Some("\nput d 1\nput d 2\n\n\n")));
    t.push(run(&cluster, &["get", "d"], None));
    t.push(run(&cluster, &["compaction", &second], None).replace(&second, "SECOND"));
    t.push(run(&cluster, &["get", "k", &format!("--rev={first}")], None));
    t.push(run(&cluster, &["get", "k", &format!("--rev={second}")], None));
    t.push(run(&cluster, &["get", "k", "--rev=100000"], None));
    t.push(run(&cluster, &["get", "", "--prefix", "--keys-only", "--limit=2", "--sort-by=MODIFY", "--order=DESCEND"], None));
    t
}

#[test]
fn etcdctl_sees_the_same_data_model_on_etcd_and_leasesim() {
    if !have_etcd() || !have_etcdctl() {
        return;
    }
    let etcd = transcript(Kind::Etcd);
    let ours = transcript(Kind::Leasesim);
    assert_eq!(etcd[4], "k\nv1\n", "etcd reads the first put at its revision: {etcd:?}");
    for (i, (e, o)) in etcd.iter().zip(&ours).enumerate() {
        assert_eq!(o, e, "step {i}: leasesim-node printed {o:?}, etcd {e:?}");
    }
    assert_eq!(etcd.len(), ours.len());
}
