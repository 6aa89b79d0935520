//! The bytes a [`ServiceEvent`] feeds a hasher inside an [`Effect`] (the
//! replicas' applied-state chain) and inside a `ServerEvent` (the
//! simulator's trace digest).
//!
//! Why by hand: both digests are compared against earlier runs (same seed ⇒
//! same digest), and they were defined when `Effect` and `ServerEvent` each
//! listed these facts flat, `ServerEvent`'s with an `index` field placed
//! among the others. Derived `Hash` on the nested form would write the
//! wrapper's variant number, then the inner one, then the fields, and every
//! digest of every run would change. So the wrappers write the flat
//! variant number they had and the fields in their old order, index
//! included; the tests pin the bytes.

use std::hash::{Hash, Hasher};

use crate::service::ServiceEvent;
use crate::types::LogIndex;

/// Feeds `event` as derived `Hash` fed the flat variant of `Effect`.
pub(crate) fn hash_in_effect<H: Hasher>(event: &ServiceEvent, state: &mut H) {
    let own = own_discriminant(event);
    // `Effect` listed `Reply` first, and `WriterWrote` and `LeaseRenewed`
    // between `LeaseRefreshed` and `LockQueued`.
    state.write_isize(if own >= 5 { own + 3 } else { own + 1 });
    hash_fields(event, None, state);
}

/// Feeds `event`, caused by the entry at `index`, as derived `Hash` fed the
/// flat variant of `ServerEvent`.
pub(crate) fn hash_in_server_event<H: Hasher>(event: &ServiceEvent, index: LogIndex, state: &mut H) {
    // `ServerEvent` listed `Raft`, `Applied` and `SnapshotInstalled` first.
    state.write_isize(own_discriminant(event) + 3);
    hash_fields(event, Some(index), state);
}

fn own_discriminant(event: &ServiceEvent) -> isize {
    match event {
        ServiceEvent::RequestApplied { .. } => 0,
        ServiceEvent::RequestDeduplicated { .. } => 1,
        ServiceEvent::LeaseGranted { .. } => 2,
        ServiceEvent::LeaseRevoked { .. } => 3,
        ServiceEvent::LeaseRefreshed { .. } => 4,
        ServiceEvent::LockQueued { .. } => 5,
        ServiceEvent::LockGranted { .. } => 6,
        ServiceEvent::LockReleased { .. } => 7,
        ServiceEvent::LockWaiterDropped { .. } => 8,
    }
}

/// The fields in the flat variant's order, with `index` (a `ServerEvent`)
/// where that variant declared it, or without (an `Effect`).
fn hash_fields<H: Hasher>(event: &ServiceEvent, index: Option<LogIndex>, state: &mut H) {
    let put_index = |state: &mut H| {
        if let Some(index) = index {
            index.hash(state);
        }
    };
    match event {
        ServiceEvent::RequestApplied { client, seq } | ServiceEvent::RequestDeduplicated { client, seq } => {
            (client, seq).hash(state);
            put_index(state);
        }
        ServiceEvent::LeaseGranted { lease, ttl_ns } => {
            (lease, ttl_ns).hash(state);
            put_index(state);
        }
        ServiceEvent::LeaseRevoked { lease, cause, deleted_keys } => {
            lease.hash(state);
            put_index(state);
            cause.hash(state);
            if index.is_some() {
                deleted_keys.hash(state);
            } else {
                // `Effect` held the keys as bytes (`Vec<Vec<u8>>`): each a
                // length, then its bytes; text writes the bytes, then 0xff.
                deleted_keys.len().hash(state);
                for key in deleted_keys {
                    key.as_bytes().hash(state);
                }
            }
        }
        ServiceEvent::LeaseRefreshed { lease, expiry_wall_ns } => {
            lease.hash(state);
            put_index(state);
            expiry_wall_ns.hash(state);
        }
        ServiceEvent::LockQueued { key, client, seq, lease } | ServiceEvent::LockWaiterDropped { key, client, seq, lease } => {
            (key, client, seq, lease).hash(state);
            put_index(state);
        }
        ServiceEvent::LockGranted { key, client, seq, lease, token } => {
            (key, client, seq, lease, token).hash(state);
            put_index(state);
        }
        ServiceEvent::LockReleased { key, client, token, cause } => {
            (key, client, token).hash(state);
            put_index(state);
            cause.hash(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::byte_hash::ByteHasher;
    use crate::raft::RaftEvent;
    use crate::server::ServerEvent;
    use crate::service::{Effect, ReleaseCause, Response, RevokeCause, ServiceError};

    fn digest(value: &impl Hash) -> u64 {
        let mut hasher = ByteHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    fn lock_events() -> [ServiceEvent; 4] {
        [
            ServiceEvent::LockQueued { key: "k".into(), client: 15, seq: 16, lease: 17 },
            ServiceEvent::LockGranted { key: "k".into(), client: 19, seq: 20, lease: 21, token: 22 },
            ServiceEvent::LockReleased { key: "k".into(), client: 24, token: 25, cause: ReleaseCause::Release { by: 27 } },
            ServiceEvent::LockWaiterDropped { key: "k".into(), client: 28, seq: 29, lease: 30 },
        ]
    }

    fn lease_events() -> [ServiceEvent; 5] {
        [
            ServiceEvent::RequestApplied { client: 1, seq: 2 },
            ServiceEvent::RequestDeduplicated { client: 4, seq: 5 },
            ServiceEvent::LeaseGranted { lease: 7, ttl_ns: 8 },
            ServiceEvent::LeaseRevoked { lease: 10, cause: RevokeCause::Expire, deleted_keys: vec!["a".into(), "bc".into()] },
            ServiceEvent::LeaseRefreshed { lease: 12, expiry_wall_ns: 14 },
        ]
    }

    /// The values are what derived `Hash` gave the flat `ServerEvent` (with
    /// the same fields and an `index` in each service variant) before the
    /// service's events were defined once; a change here changes every
    /// simulated run's trace digest.
    #[test]
    fn server_events_feed_the_bytes_the_flat_enum_fed() {
        let indices = [3, 6, 9, 11, 13, 18, 23, 26, 31];
        let service = lease_events().into_iter().chain(lock_events()).zip(indices);
        let mut events = vec![
            ServerEvent::Raft(RaftEvent::BecameLeader { term: 3 }),
            ServerEvent::Applied { index: 7, term: 2, fingerprint: 11, state: 13 },
            ServerEvent::SnapshotInstalled { index: 17 },
        ];
        events.extend(service.map(|(event, index)| ServerEvent::Service { index, event }));
        events.extend([
            ServerEvent::KeepAliveAnswered { lease: 32, client: 33, seq: 34, ttl_ns: 35, index: Some(36) },
            ServerEvent::ExpiryProposed { lease: 37 },
            ServerEvent::CheckpointProposed { leases: 38 },
        ]);
        let digests: Vec<u64> = events.iter().map(digest).collect();
        assert_eq!(
            digests,
            [
                0x8bd29e31a1a181f7,
                0x05a82a724453c37a,
                0x740bd160cc5ec59b,
                0x36cfb5c60962d4a5,
                0x53bf26db8b7c98c8,
                0x7a4d271df6d9b630,
                0x17f77068214190e4,
                0x8ac6e4f22e4a0056,
                0xe4c6a4a61373b52a,
                0x5c49f3b58d84a8c6,
                0x9eec0a93aaa8094a,
                0x5e346c94069991a8,
                0xd7b379dc18045d2e,
                0x642122516902e7b0,
                0x7861350f74d2a51f,
            ]
        );
    }

    /// The values are what derived `Hash` gave the flat `Effect` (with
    /// `deleted_keys` as bytes) before; a change here changes every
    /// server's applied-state chain, and so every trace digest.
    #[test]
    fn effects_feed_the_bytes_the_flat_enum_fed() {
        let [applied, deduplicated, granted, revoked, refreshed] = lease_events();
        let [queued, lock_granted, released, dropped] = lock_events();
        let effects = [
            Effect::Reply { client: 1, seq: 2, body: Response::Error(ServiceError::Retry) },
            Effect::Event(applied),
            Effect::Event(deduplicated),
            Effect::Event(granted),
            Effect::Event(revoked),
            Effect::Event(refreshed),
            Effect::WriterWrote { client: 3 },
            Effect::LeaseRenewed { lease: 5 },
            Effect::Event(queued),
            Effect::Event(lock_granted),
            Effect::Event(released),
            Effect::Event(dropped),
        ];
        let digests: Vec<u64> = effects.iter().map(digest).collect();
        assert_eq!(
            digests,
            [
                0x227e515096436d8c,
                0xc39bb013b9a666f2,
                0x0badffb13d77a6b6,
                0xa086141515de2efe,
                0x5c17e512aad313ee,
                0xf0ccfb49da4f88a4,
                0x7e142e568ae2cb81,
                0xd947481440ec474b,
                0x7d3596ef32f7d97d,
                0x03a12d77c70094e6,
                0x9cc654b193c2c8ff,
                0xc6bb5f3697a1b283,
            ]
        );
    }
}
