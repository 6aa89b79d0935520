//! A short scheduling slice for the server's threads, so that a thread
//! woken for a request gets a CPU now rather than at the kernel's next
//! tick.
//!
//! A request crosses threads: a gRPC worker hands it to the driver, the
//! driver sleeps in its fdatasync, and its answer wakes a worker again.
//! Under Linux's EEVDF scheduler (6.6 on) a woken thread does not preempt
//! a thread of another process that is still inside its slice (1.4 ms on
//! this 2-CPU machine), and the kernel notices that slice's end only at its
//! next tick (4 ms at HZ=250). `perf sched timehist` at one put client
//! showed it: in 2 s, 229 of the driver's wake-ups (about one put in five)
//! waited 2–5 ms for a CPU that a compiler held, each ending on a tick,
//! which is the 4 ms mode of put's p90 (reports/node-conformance.md,
//! 2026-11-27, branch s21-put25). Since 6.12 a thread may ask for a shorter
//! slice (`sched_setattr`'s `sched_runtime` under SCHED_OTHER, no privilege
//! needed), and a woken thread with a shorter slice than the running one
//! preempts it at once if it has not used up its fair share. Only latency
//! changes: EEVDF still gives every thread its weight's share of the CPU.
//! New threads inherit the slice, so asking on the main thread before the
//! runtime starts covers every thread of the server.

use std::io;

/// The slice asked for: the shortest the kernel takes (it clamps custom
/// slices to 0.1–100 ms).
pub const SLICE_NS: u64 = 100_000;

const SCHED_OTHER: u32 = 0;
const SCHED_BATCH: u32 = 3;

/// The kernel's `struct sched_attr`, first version (48 bytes).
#[repr(C)]
#[derive(Debug, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

const ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

/// The calling thread's scheduling attributes.
fn this_thread() -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most ATTR_SIZE bytes into `attr`, which
    // is that large; tid 0 is the calling thread.
    let done = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr as *mut SchedAttr, ATTR_SIZE, 0) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}

/// Asks for [`SLICE_NS`] on the calling thread (and so on every thread it
/// starts from now on), keeping its policy and nice value. Returns the
/// slice in force as the kernel reports it afterwards: 0 on a kernel
/// before 6.12, which has no custom slices and ignores the request.
/// Threads under a policy without slices (real-time, idle) are left alone.
pub fn shorten() -> io::Result<u64> {
    let now = this_thread()?;
    if now.policy != SCHED_OTHER && now.policy != SCHED_BATCH {
        return Ok(now.runtime);
    }
    let wanted = SchedAttr { size: ATTR_SIZE, policy: now.policy, nice: now.nice, runtime: SLICE_NS, ..SchedAttr::default() };
    // SAFETY: `wanted` is a valid sched_attr of ATTR_SIZE bytes that the
    // kernel only reads.
    let done = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &wanted as *const SchedAttr, 0) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(this_thread()?.runtime)
}

/// [`shorten`] for a server process, logged; a kernel that refuses only
/// costs latency, so the server goes on.
pub fn shorten_for_server() {
    match shorten() {
        Ok(SLICE_NS) => tracing::debug!("scheduling slice {} µs for every thread", SLICE_NS / 1000),
        Ok(other) => tracing::debug!("this kernel keeps its scheduling slice ({other} ns reported)"),
        Err(e) => tracing::debug!("cannot shorten the scheduling slice: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Major and minor of the running kernel, from /proc.
    fn kernel_version() -> (u32, u32) {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut parts = release.trim().split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// On a kernel with custom slices (6.12 on, as this machine's) the
    /// slice is taken, kept with the nice value, and inherited by a thread
    /// started afterwards; before 6.12 the request is ignored (0 reported).
    #[test]
    fn the_slice_is_taken_and_inherited_by_new_threads() {
        let (slice, nice, child) = std::thread::spawn(|| {
            let nice = this_thread().unwrap().nice;
            let slice = shorten().unwrap();
            let child = std::thread::spawn(|| this_thread().unwrap()).join().unwrap();
            (slice, nice, child)
        })
        .join()
        .unwrap();
        if kernel_version() < (6, 12) {
            assert_eq!(slice, 0, "a kernel before 6.12 reports no custom slice");
            return;
        }
        assert_eq!(slice, SLICE_NS);
        assert_eq!(child.runtime, SLICE_NS, "a thread started afterwards inherits the slice: {child:?}");
        assert_eq!(child.nice, nice, "the nice value is kept");
    }
}
