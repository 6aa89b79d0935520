//! etcd's auto-compaction (`--auto-compaction-mode periodic|revision`,
//! `--auto-compaction-retention`): without it the KV history (one record
//! per change, kept for reads at past revisions and watch replays) grows
//! until a client calls Compact, so a long-running member's memory grows
//! with every write. The leader proposes core's `Compact` through the log,
//! as etcd's leader-only compactor does; a follower's task idles.
//!
//! The flags take etcd 3.4's values (`embed.parseCompactionRetention`): a
//! bare integer is a revision count in `revision` mode and hours in
//! `periodic` mode; otherwise a duration (`30m`, `1.5h`); `0` turns it off.
//!
//! - `periodic` P: as etcd 3.4's `compactor.Periodic`, the revision is
//!   sampled every min(P, 1h)/10; once P has passed since the last
//!   compaction (then every min(P, 1h)), the store is compacted at the
//!   revision sampled P ago. Time is the member's monotonic clock
//!   ([`ClockSource`], which a test can run fast), not the wall clock.
//! - `revision` R: the store is compacted at `revision - R` once that is
//!   at least max(1, R/10) past the last compaction, checked at every
//!   applied change (etcd's `compactor.Revision` checks every 5 minutes),
//!   so the history never holds much more than R revisions, whatever the
//!   write rate.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use leasesim_core::raft::Role;
use leasesim_core::service::{Op, Response};

use crate::faults::clock::ClockSource;
use crate::front::{CallError, Front};

/// The flags, as etcd spells them.
#[derive(Args, Clone, Debug)]
pub struct AutoCompactionArgs {
    /// `periodic` (retention is a duration; a bare integer is hours) or
    /// `revision` (retention is a count of revisions), as etcd's flag.
    #[arg(long = "auto-compaction-mode", value_name = "MODE", default_value = "periodic")]
    pub mode: String,
    /// How much history auto-compaction keeps (etcd's flag; `0`: off),
    /// e.g. `1h`, `30m`, `1` (an hour, periodic) or `1000` (revisions).
    #[arg(long = "auto-compaction-retention", value_name = "RETENTION", default_value = "0", allow_hyphen_values = true)]
    pub retention: String,
}

/// What to keep, parsed from the flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Keep the revisions of the last period.
    Periodic(Duration),
    /// Keep this many revisions below the current one.
    Revisions(u64),
}

impl AutoCompactionArgs {
    /// The retention the flags ask for (None: off), or etcd's error for a
    /// bad value.
    pub fn retention(&self) -> Result<Option<Retention>, String> {
        let periodic = match self.mode.as_str() {
            "periodic" => true,
            "revision" => false,
            other => return Err(format!("unknown auto-compaction-mode {other:?}")),
        };
        let retention = parse_retention(periodic, &self.retention)?;
        Ok(match retention {
            Retention::Periodic(d) if d.is_zero() => None,
            Retention::Revisions(0) => None,
            r => Some(r),
        })
    }
}

/// etcd's `parseCompactionRetention`: a non-negative integer is revisions
/// or hours; anything else must be a duration. etcd would read a duration
/// in `revision` mode as that many nanoseconds' worth of revisions; that is
/// refused here as the mistake it must be.
fn parse_retention(periodic: bool, text: &str) -> Result<Retention, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(if periodic { Retention::Periodic(Duration::from_secs(n.saturating_mul(3600))) } else { Retention::Revisions(n) });
    }
    if !periodic {
        return Err(format!(
            "error parsing CompactionRetention: {text:?} is not a revision count (auto-compaction-mode revision takes an integer)"
        ));
    }
    let ns = leasesim_core::duration::parse_duration(text).map_err(|e| format!("error parsing CompactionRetention: {e}"))?;
    Ok(Retention::Periodic(Duration::from_nanos(ns)))
}

/// Runs the compactor for this member until the process ends.
pub async fn run(front: Front, clocks: Arc<ClockSource>, retention: Retention) {
    match retention {
        Retention::Revisions(keep) => by_revision(front, keep).await,
        Retention::Periodic(period) => periodic(front, clocks, period).await,
    }
}

/// Asks the cluster to compact at `revision`; an older compaction already
/// there (another leader's) counts as done, as in etcd.
async fn compact(front: &Front, revision: u64) -> bool {
    match front.call(Op::Compact { revision }).await {
        Ok(Response::Compacted { .. }) => {
            tracing::info!(revision, "auto-compaction finished");
            true
        }
        Err(CallError::Service(e)) => {
            tracing::debug!(revision, "auto-compaction refused: {e:?}");
            true
        }
        other => {
            tracing::warn!(revision, "auto-compaction failed: {other:?}");
            false
        }
    }
}

async fn by_revision(front: Front, keep: u64) {
    let step = (keep / 10).max(1);
    let mut status = front.status_watch();
    loop {
        let (leader, revision, compacted) = {
            let s = status.borrow_and_update();
            (s.role == Some(Role::Leader), s.revision, s.compact_revision)
        };
        let target = revision.saturating_sub(keep);
        if leader && target > 0 && target >= compacted + step {
            if !compact(&front, target).await {
                // No answer in time (leadership moving): ask again later,
                // not in a tight loop.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            continue;
        }
        if status.changed().await.is_err() {
            return;
        }
    }
}

/// etcd 3.4's retry interval: a tenth of min(period, 1h).
fn sample_interval(period: Duration) -> Duration {
    period.min(Duration::from_secs(3600)) / 10
}

async fn periodic(front: Front, clocks: Arc<ClockSource>, period: Duration) {
    let interval_ns = sample_interval(period).as_nanos().max(1) as u64;
    let period_ns = period.as_nanos() as u64;
    let every_ns = period.min(Duration::from_secs(3600)).as_nanos() as u64;
    // revisions[0] is the revision sampled a period ago (etcd's pc.revs).
    let keep = (period_ns / interval_ns) as usize + 1;
    let mut revisions = VecDeque::with_capacity(keep + 1);
    let mut last_success_ns = clocks.now().mono_ns;
    let mut wait_ns = period_ns;
    loop {
        revisions.push_back(front.status().revision);
        if revisions.len() > keep {
            revisions.pop_front();
        }
        sleep_on(&clocks, clocks.now().mono_ns + interval_ns).await;
        let status = front.status();
        let now_ns = clocks.now().mono_ns;
        // A follower's samples are kept, as etcd's paused compactor keeps
        // its own, so that a new leader compacts by its history.
        if status.role != Some(Role::Leader) || now_ns.saturating_sub(last_success_ns) < wait_ns {
            continue;
        }
        wait_ns = every_ns;
        let target = revisions[0];
        if target == 0 || target <= status.compact_revision || compact(&front, target).await {
            last_success_ns = clocks.now().mono_ns;
        }
    }
}

/// Sleeps until the member's monotonic clock reads `mono_ns`, working the
/// instant out again whenever a test changes the clock's skew.
async fn sleep_on(clocks: &ClockSource, mono_ns: u64) {
    let mut changes = clocks.subscribe();
    loop {
        let until = clocks.instant_of(mono_ns);
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {
                if clocks.now().mono_ns >= mono_ns {
                    return;
                }
            }
            _ = changes.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mode: &str, retention: &str) -> Result<Option<Retention>, String> {
        AutoCompactionArgs { mode: mode.into(), retention: retention.into() }.retention()
    }

    #[test]
    fn takes_etcds_values() {
        assert_eq!(args("periodic", "0"), Ok(None));
        assert_eq!(args("revision", "0"), Ok(None));
        assert_eq!(args("periodic", "1"), Ok(Some(Retention::Periodic(Duration::from_secs(3600)))));
        assert_eq!(args("periodic", "30m"), Ok(Some(Retention::Periodic(Duration::from_secs(1800)))));
        assert_eq!(args("periodic", "1.5h"), Ok(Some(Retention::Periodic(Duration::from_secs(5400)))));
        assert_eq!(args("revision", "1000"), Ok(Some(Retention::Revisions(1000))));
    }

    #[test]
    fn refuses_bad_values_as_etcd_does() {
        assert_eq!(args("hourly", "1"), Err("unknown auto-compaction-mode \"hourly\"".into()));
        for bad in ["-1", "abc", "5x", ""] {
            let err = args("periodic", bad).unwrap_err();
            assert!(err.starts_with("error parsing CompactionRetention: "), "{bad}: {err}");
        }
        assert!(args("revision", "5m").unwrap_err().starts_with("error parsing CompactionRetention: "));
        assert!(args("revision", "-3").is_err());
    }

    #[test]
    fn samples_a_tenth_of_at_most_an_hour() {
        assert_eq!(sample_interval(Duration::from_secs(600)), Duration::from_secs(60));
        assert_eq!(sample_interval(Duration::from_secs(5 * 3600)), Duration::from_secs(360));
    }
}
