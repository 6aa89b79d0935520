//! The processes the runner starts: spawning one with its output in a log
//! file, signalling it, and the ports they listen on.
//!
//! Children die with the runner (`PR_SET_PDEATHSIG`; the runner starts
//! them all from the thread that runs the whole run, so that thread's exit
//! is the process's). Every child is a [`Proc`] whose `Drop` resumes it if it was paused (so
//! that nothing is left stopped should the kill fail) and SIGKILLs and
//! reaps it, so a run that ends in any way, an error or an interrupt
//! included, leaves no member behind.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// One started process and how to start it again.
pub struct Proc {
    pub argv: Vec<String>,
    pub log: PathBuf,
    child: Option<Child>,
    paused: bool,
}

impl Proc {
    /// Starts `argv`, its stdout and stderr appended to `log`.
    pub fn spawn(argv: Vec<String>, log: PathBuf) -> Result<Proc, String> {
        let mut proc = Proc { argv, log, child: None, paused: false };
        proc.start()?;
        Ok(proc)
    }

    fn start(&mut self) -> Result<(), String> {
        let open = || std::fs::OpenOptions::new().create(true).append(true).open(&self.log);
        let out = open().map_err(|e| format!("{}: {e}", self.log.display()))?;
        let err = open().map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut command = Command::new(&self.argv[0]);
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls prctl(2), which is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                // Should the runner die without cleaning up (SIGKILL, an
                // abort), the kernel kills its members with it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .args(&self.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.argv[0]))?;
        self.child = Some(child);
        self.paused = false;
        Ok(())
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL, and reaped: the process is gone, its data directory stays.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused = false;
    }

    /// Starts it again with the same arguments (and so the same data dir).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.start()
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`).
    pub fn set_paused(&mut self, paused: bool) -> Result<(), String> {
        let Some(child) = &self.child else { return Err("the process is not running".into()) };
        let signal = if paused { libc::SIGSTOP } else { libc::SIGCONT };
        // SAFETY: kill(2) on our own child's pid; it has not been reaped
        // (we hold its Child), so the pid names it.
        if unsafe { libc::kill(child.id() as libc::pid_t, signal) } != 0 {
            return Err(format!("kill({}): {}", child.id(), std::io::Error::last_os_error()));
        }
        self.paused = paused;
        Ok(())
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether it stopped itself (SIGSTOP at a pause failpoint) and the
    /// runner has not yet taken it for paused: the kernel's state for it
    /// (`/proc/PID/stat`) is `T`. False for one the runner paused, and for
    /// one gone or unreadable (`exited` tells those apart).
    pub fn stopped_itself(&self) -> bool {
        let Some(child) = &self.child else { return false };
        if self.paused {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", child.id())) else { return false };
        state_of(&stat) == Some('T')
    }

    /// The runner takes a process that stopped itself for paused: its
    /// resume (`set_paused(false)`) sends SIGCONT, and `Drop` resumes it.
    pub fn take_as_paused(&mut self) {
        if self.child.is_some() {
            self.paused = true;
        }
    }

    /// Whether it runs: started, not killed, and not exited by itself.
    pub fn alive(&mut self) -> bool {
        self.is_running() && self.exited().is_none()
    }

    /// Whether it exited by itself (a member that failed to start).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// The last lines of its log, for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.paused {
            let _ = self.set_paused(false);
        }
        self.kill();
    }
}

/// The state letter of a `/proc/PID/stat` line: the field after the
/// command name, which is in parentheses and may itself hold spaces and
/// parentheses (so the last `)` ends it).
fn state_of(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// A free loopback port below the kernel's ephemeral range, so that no
/// `:0` bind (a proxy, an outgoing connection) can take it between now and
/// the member's own bind: leasesim-node's one picker, shared so that the
/// runner's members and `leasesim-node local`'s draw from one counter
/// (`leasesim_node::tools::local::free_port` explains the race).
pub fn free_port() -> Result<u16, String> {
    leasesim_node::tools::local::free_port(std::net::Ipv4Addr::LOCALHOST)
}

/// `dir/name`, as a string argument.
pub fn arg_path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_stops_itself_is_seen_stopped_until_taken_for_paused() {
        assert_eq!(state_of("42 (leasesim-node) T 1 42"), Some('T'));
        assert_eq!(state_of("42 (a (b) c) S 1 42"), Some('S'), "the last `)` ends the name");
        assert_eq!(state_of("garbage"), None);
        let dir = tempfile::tempdir().expect("a temp dir");
        let argv = ["sh", "-c", "kill -STOP $$; sleep 30"].map(String::from).to_vec();
        let mut proc = Proc::spawn(argv, dir.path().join("sh.log")).expect("starts");
        // Bounded by tries, not by speed: 500 looks 10 ms apart.
        let stopped = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            proc.stopped_itself()
        });
        assert!(stopped, "sh stopped itself");
        proc.take_as_paused();
        assert!(proc.is_paused() && !proc.stopped_itself(), "the runner's now");
        proc.set_paused(false).expect("SIGCONT");
        let running = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", proc.child.as_ref().unwrap().id())).unwrap_or_default();
            state_of(&stat).is_some_and(|c| c != 'T')
        });
        assert!(running && !proc.stopped_itself(), "resumed");
        proc.kill();
        assert!(!proc.stopped_itself() && !proc.alive());
    }
}
