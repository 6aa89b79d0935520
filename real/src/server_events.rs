//! The members' own events, read from the files leasesim-node writes under
//! `--unsafe-test-event-log` (Raft's leaders and applied entries, granted
//! votes, the lease and lock tables' changes, keep-alive answers, the
//! instant a failpoint killed it) and merged into the run's observation
//! log, so that the judge can judge the invariants that need a server's
//! view (`verdict.rs` lists them).
//!
//! The runner reads the files once the run is over: the judge works after
//! the run anyway, and a file outlives a SIGKILLed member. Each line is
//! stamped with `CLOCK_MONOTONIC` (shared by every process here) and the
//! error of that stamp (the event happened at most that long before, in
//! the batch that produced it); the log's stated stamping error becomes
//! the larger of the clients' and the members'.

use std::path::Path;

use leasesim_core::server::ServerEvent;
use leasesim_judge::observe::{Event, EventLine, Obs, ObsLog};
use leasesim_judge::vocab::Proc;

/// What the members' files held.
#[derive(Default)]
pub struct ServerEvents {
    pub obs: Vec<Obs>,
    /// The largest stamping error of any line.
    pub error_ns: u64,
}

impl ServerEvents {
    /// Reads member `server`'s (1-based) event log, placing its stamps on
    /// the run's timeline (`origin_ns`: CLOCK_MONOTONIC at true time 0). A
    /// missing file is a member that never wrote one (an error); a line cut
    /// short at the very end is a write a SIGKILL tore, and is dropped; any
    /// other bad line is an error naming file:line.
    pub fn read(&mut self, path: &Path, server: u64, origin_ns: u64) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (n, raw) in lines.iter().enumerate() {
            if !raw.ends_with('\n') && n + 1 == lines.len() {
                break; // torn by a kill mid-write
            }
            let line = EventLine::parse(raw.trim_end()).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
            self.error_ns = self.error_ns.max(line.error_ns);
            // An event before the run began (the first election) is placed
            // at its start: the judge's timeline starts at 0.
            self.obs.push(Obs { at_ns: line.mono_ns.saturating_sub(origin_ns), proc: Proc::Server(server), event: line.event });
        }
        Ok(())
    }

    /// Leaves out the `applied` events stamped after `cutoff_ns`: the
    /// members' logs were read from then on (`final_state.rs`), so an entry
    /// applied later may be missing from them, and `durability` would take
    /// it for lost. The simulator's run ends where it reads its servers'
    /// logs; this ends the real run's applied entries there too. A stamp is
    /// late, never early: an event stamped before the cutoff happened
    /// before it.
    pub fn drop_applied_after(&mut self, cutoff_ns: u64) {
        self.obs.retain(|o| o.at_ns <= cutoff_ns || !matches!(o.event, Event::Server { event: ServerEvent::Applied { .. } }));
    }

    /// `log` with these events merged in true-time order (a stable sort:
    /// one process's events keep their order), its stamping error the
    /// larger of the two.
    pub fn merge_into(self, log: ObsLog) -> ObsLog {
        let error_ns = log.stamp_error_ns().max(self.error_ns);
        let mut all = log.into_vec();
        all.extend(self.obs);
        all.sort_by_key(|o| o.at_ns);
        ObsLog::from(all).with_stamp_error(error_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::raft::RaftEvent;

    #[test]
    fn lines_land_on_the_runs_timeline_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("s2.events.jsonl");
        let leader = serde_json::json!({ "kind": "server", "event": ServerEvent::Raft(RaftEvent::BecameLeader { term: 3 }) });
        let text = format!(
            "{}\n{}\n{{\"mono_ns\":12",
            serde_json::json!({ "mono_ns": 1_500, "error_ns": 40, "event": leader }),
            serde_json::json!({ "mono_ns": 2_000, "error_ns": 70, "event": { "kind": "vote-granted", "term": 3, "candidate": 1 } }),
        );
        std::fs::write(&path, text).expect("writes");
        let mut events = ServerEvents::default();
        events.read(&path, 2, 1_000).expect("reads");
        assert_eq!(events.error_ns, 70);
        assert_eq!(events.obs.len(), 2);
        assert_eq!((events.obs[0].at_ns, events.obs[0].proc), (500, Proc::Server(2)));
        assert_eq!(events.obs[1].event, Event::VoteGranted { term: 3, candidate: 1 });
        let client = Obs { at_ns: 700, proc: Proc::Client(1), event: Event::Crashed };
        let merged = events.merge_into(ObsLog::from(vec![client]).with_stamp_error(50));
        assert_eq!(merged.stamp_error_ns(), 70);
        assert_eq!(merged.iter().map(|o| o.at_ns).collect::<Vec<_>>(), vec![500, 700, 1_000]);
    }

    #[test]
    fn applied_entries_stamped_after_the_logs_were_read_are_left_out() {
        let applied = |at_ns, index| Obs {
            at_ns,
            proc: Proc::Server(1),
            event: Event::Server { event: ServerEvent::Applied { index, term: 1, fingerprint: 0, state: 0 } },
        };
        let leader = Obs {
            at_ns: 900,
            proc: Proc::Server(1),
            event: Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term: 2 }) },
        };
        let mut events = ServerEvents { obs: vec![applied(100, 1), applied(500, 2), applied(501, 3), leader], error_ns: 0 };
        events.drop_applied_after(500);
        let kept: Vec<u64> = events.obs.iter().map(|o| o.at_ns).collect();
        assert_eq!(kept, vec![100, 500, 900], "entry 3 went, the later leader event stayed");
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_at_its_line() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("s1.events.jsonl");
        std::fs::write(&path, "{\"mono_ns\":1,\"error_ns\":0,\"event\":{\"kind\":\"nonsense\"}}\n").expect("writes");
        let err = ServerEvents::default().read(&path, 1, 0).expect_err("refused");
        assert!(err.contains("s1.events.jsonl:1:"), "{err}");
    }
}
