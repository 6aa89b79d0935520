//! `keepalive-after-revoke`: no keep-alive is answered with a live TTL after
//! the lease was revoked or expired anywhere (etcd's lessor refuses renewals
//! of revoked leases; a stale leader that still answers breaks the lease's
//! promise to the next holder).

use leasesim_core::server::ServerEvent;

use super::facts::{lease_ends, server_events};
use super::{RunRecord, Violation};

pub fn check(run: &RunRecord<'_>) -> Vec<Violation> {
    let ends = lease_ends(run);
    let mut violations = Vec::new();
    for (at_ns, server, event) in server_events(run.obs) {
        let ServerEvent::KeepAliveAnswered { lease, client, ttl_ns, .. } = event else { continue };
        let Some(end) = ends.get(lease) else { continue };
        if at_ns > end.at_ns && *ttl_ns > 0 {
            violations.push(run.violation(
                "keepalive-after-revoke",
                at_ns,
                format!(
                    "s{server} answered c{client}'s keep-alive of lease {lease} live (TTL {}) after s{} ended it at {}",
                    leasesim_core::fmt_secs(*ttl_ns),
                    end.server,
                    leasesim_core::fmt_secs(end.at_ns)
                ),
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use leasesim_core::server::ServerEvent;
    use leasesim_core::service::RevokeCause;

    use crate::checkers::testing::{Fixture, S};

    #[test]
    fn a_live_answer_after_the_revoke_fires() {
        let mut run = Fixture::new();
        let answer = ServerEvent::KeepAliveAnswered { lease: 7, client: 1, seq: 4, ttl_ns: 2 * S };
        run.server(S, 1, answer.clone());
        run.everywhere(2 * S, ServerEvent::LeaseRevoked { lease: 7, index: 9, cause: RevokeCause::Expire, deleted_keys: vec![] });
        assert!(run.fired().is_empty());
        run.server(3 * S, 2, answer);
        assert_eq!(run.fired(), vec!["keepalive-after-revoke"]);
    }
}
