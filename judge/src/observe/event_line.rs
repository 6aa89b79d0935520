//! One line of a real member's event log (`leasesim-node
//! --unsafe-test-event-log FILE`), defined once: the node writes it and the
//! real runner reads it, so the two cannot drift apart (they used to be a
//! `json!` literal on one side and a private struct on the other).
//!
//! A line is an [`Event`] of the judge's own vocabulary stamped with
//! `CLOCK_MONOTONIC` (`mono_ns`, when the line was written: true time for
//! every process on one machine) and the error of that stamp (`error_ns`:
//! the event happened within `[mono_ns - error_ns, mono_ns]`). The format
//! is one JSON object per line: `{"mono_ns":…,"error_ns":…,"event":{"kind":…}}`.

use serde::{Deserialize, Serialize};

use super::Event;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    pub mono_ns: u64,
    pub error_ns: u64,
    pub event: Event,
}

impl EventLine {
    /// The line as written to the file: JSON and its newline.
    pub fn to_json_line(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).expect("an event line always serializes");
        bytes.push(b'\n');
        bytes
    }

    /// Parses one line (without its newline).
    pub fn parse(text: &str) -> Result<EventLine, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;

    #[test]
    fn a_line_round_trips_and_keeps_the_files_field_names() {
        let line = EventLine {
            mono_ns: 1_500,
            error_ns: 40,
            event: Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term: 3 }) },
        };
        let bytes = line.to_json_line();
        assert_eq!(bytes.last(), Some(&b'\n'));
        let text = std::str::from_utf8(&bytes).expect("UTF-8");
        let value: serde_json::Value = serde_json::from_str(text.trim_end()).expect("JSON");
        assert_eq!((value["mono_ns"].as_u64(), value["error_ns"].as_u64()), (Some(1_500), Some(40)));
        assert_eq!(value["event"]["kind"], "server");
        assert_eq!(EventLine::parse(text.trim_end()), Ok(line));
        let vote = EventLine::parse(r#"{"mono_ns":2,"error_ns":0,"event":{"kind":"vote-granted","term":3,"candidate":1}}"#);
        assert_eq!(vote.map(|l| l.event), Ok(Event::VoteGranted { term: 3, candidate: 1 }));
        assert!(EventLine::parse(r#"{"mono_ns":2,"event":{"kind":"crashed"}}"#).expect_err("no error_ns").contains("error_ns"));
    }
}
