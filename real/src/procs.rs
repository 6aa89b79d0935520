//! The processes the runner starts: spawning one with its output in a log
//! file, signalling it, and the ports they listen on.
//!
//! Children die with the runner (`PR_SET_PDEATHSIG`; the runner starts
//! them all from the thread that runs the whole run, so that thread's exit
//! is the process's). Every child is a [`Proc`] whose `Drop` resumes it if it was paused (so
//! that nothing is left stopped should the kill fail) and SIGKILLs and
//! reaps it, so a run that ends in any way, an error or an interrupt
//! included, leaves no member behind.

use std::net::TcpListener;
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

/// A free loopback port below the kernel's ephemeral range, so that no
/// `:0` bind (a proxy, an outgoing connection) can take it between now and
/// the member's own bind (node/tests/it/common/mod.rs explains the race).
pub fn free_port() -> Result<u16, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let below = ephemeral_range_start().max(2048);
    let span = below - 1024;
    let offset = std::process::id() % span * 97 % span;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        if n >= span {
            return Err(format!("no free loopback port below {below}"));
        }
        let port = 1024 + (offset + n) % span;
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return Ok(port as u16);
        }
    }
}

fn ephemeral_range_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(32768)
}

/// `dir/name`, as a string argument.
pub fn arg_path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}
