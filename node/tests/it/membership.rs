//! Membership through etcd's Cluster API: `MemberAdd` asked of a follower
//! (forwarded to the leader), the new server started with
//! `--initial-cluster-state existing` catches up through the log, and
//! `MemberRemove` takes it out again.

use crate::common;

use std::time::{Duration, Instant};

use common::{free_port, ProcessCluster};
use leasesim_node::pb::etcdserverpb::cluster_client::ClusterClient;
use leasesim_node::pb::etcdserverpb::kv_client::KvClient;
use leasesim_node::pb::etcdserverpb::{MemberAddRequest, MemberListRequest, MemberRemoveRequest, PutRequest, RangeRequest};

#[test]
fn a_member_is_added_catches_up_and_is_removed() {
    let mut cluster = ProcessCluster::start(3);
    let leader = cluster.wait_for_leader();
    let follower = (leader + 1) % 3;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let peer_port = free_port();
    let new_id = runtime.block_on(async {
        let mut kv = KvClient::new(common::channel(&cluster.url(follower)).await);
        kv.put(PutRequest { key: b"before-join".to_vec(), value: b"1".to_vec(), ..Default::default() }).await.unwrap();
        let mut members = ClusterClient::new(common::channel(&cluster.url(follower)).await);
        let added = members
            .member_add(MemberAddRequest { peer_ur_ls: vec![format!("http://127.0.0.1:{peer_port}")], is_learner: false })
            .await
            .expect("member add through a follower")
            .into_inner();
        assert_eq!(added.members.len(), 4);
        added.member.unwrap().id
    });

    let joined = cluster.join("s4", peer_port);
    let leader_url = cluster.url(leader);
    let url = cluster.url(joined);
    runtime.block_on(async {
        // The new member serves the data written before it joined.
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < Duration::from_secs(60), "s4 never served the old key");
            if let Ok(mut kv) = KvClient::connect(url.clone()).await {
                let range = RangeRequest { key: b"before-join".to_vec(), ..Default::default() };
                if let Ok(r) = kv.range(range).await {
                    if r.into_inner().kvs.len() == 1 {
                        break;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut members = ClusterClient::new(common::channel(&url).await);
        let list = members.member_list(MemberListRequest { linearizable: false }).await.unwrap().into_inner();
        assert!(list.members.iter().any(|m| m.id == new_id && m.name == "s4"), "{list:?}");
        // Every member now knows the others' client URLs (s4 said hello).
        assert!(list.members.iter().all(|m| !m.client_ur_ls.is_empty()), "{list:?}");
        members.member_remove(MemberRemoveRequest { id: new_id }).await.expect("member remove");
        // The removed member may never hear of its removal: ask the leader.
        let mut members = ClusterClient::new(common::channel(&leader_url).await);
        let list = members.member_list(MemberListRequest { linearizable: false }).await.unwrap().into_inner();
        assert_eq!(list.members.len(), 3, "{list:?}");
    });
    for i in 0..3 {
        assert!(cluster.running(i), "member {i} crashed; see {}", cluster.log_path(i).display());
    }
}
