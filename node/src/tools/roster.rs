//! The roster of a local cluster (`DIR/members.json`): each member's name,
//! client URL, process id and command line. `leasesim-node local` writes
//! it; `leasesim-node load --nemesis … --cluster-dir DIR` reads it to find
//! the processes it kills, pauses and restarts (and records the new process
//! ids, so `local` stops the right ones at the end).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

const FILE: &str = "members.json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RosterEntry {
    pub name: String,
    pub client_url: String,
    pub pid: u32,
    /// The program and its arguments, to restart it the same way.
    pub argv: Vec<String>,
    /// Where its stderr goes (appended to on restart).
    pub log: PathBuf,
}

pub fn load(dir: &Path) -> Result<Vec<RosterEntry>, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn save(dir: &Path, roster: &[RosterEntry]) -> Result<(), String> {
    let path = dir.join(FILE);
    let tmp = dir.join(format!("{FILE}.tmp"));
    let text = serde_json::to_string_pretty(roster).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Starts `argv` with stderr appended to `log`.
pub fn spawn(argv: &[String], log: &Path) -> Result<std::process::Child, String> {
    let (program, args) = argv.split_first().ok_or("an empty command line")?;
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("starting {program}: {e}"))
}

/// Sends `signal` (KILL, STOP, CONT, TERM) to `pid` with kill(1).
pub fn signal(pid: u32, signal: &str) -> Result<(), String> {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{signal} {pid} failed"))
    }
}
