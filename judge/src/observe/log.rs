//! The observation log of one run, with memory that does not grow with
//! simulated time: past a set number of observations held in memory, the
//! oldest are written out to an anonymous temporary file in chunks (one
//! JSON object a line, the trace's own form) and read back, a chunk at a
//! time, whenever a checker walks the log.
//!
//! Why a file and not a smaller in-memory form: the checkers judge the
//! whole run after it ends, and a long run's log is most of its memory (a
//! simulated hour of the baseline kept about 1.2 million observations, 190
//! MB). Any in-memory form still grows with the run; a file does not.
//! Short runs — every bundled scenario, every sweep — never reach the
//! threshold and pay nothing: their observations stay in memory and are
//! lent out without copying.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;

use super::Obs;
use crate::checkers::facts::Memo;

/// How many observations a log holds in memory before it starts to spill
/// (about 40 MB of them). A bundled scenario keeps at most a few tens of
/// thousands, so sweeps never spill.
pub const IN_MEMORY_DEFAULT: usize = 256 * 1024;

/// Observations per spilled chunk (a few MB): what a walk of the log holds
/// decoded at once, and what the log keeps in memory once it has spilled.
const CHUNK: usize = 16 * 1024;

/// A run's kept observations, in the order they were recorded (true time).
pub struct ObsLog {
    /// The newest observations (all of them until the log first spills).
    memory: Vec<Obs>,
    /// Spill when `memory` holds this many.
    in_memory_max: usize,
    spill: Option<Spill>,
    /// Observations written to the spill file.
    spilled: usize,
    /// How long after it happened an observation may have been recorded
    /// (see [`ObsLog::with_stamp_error`]).
    stamp_error_ns: u64,
    /// The checkers' shared readings of this log (see [`Memo`]).
    memo: Memo,
}

/// The spill file and where each chunk sits in it.
struct Spill {
    file: File,
    /// (offset, length in bytes) of each chunk, in order.
    chunks: Vec<(u64, usize)>,
    end: u64,
}

impl Default for ObsLog {
    fn default() -> Self {
        ObsLog::new(IN_MEMORY_DEFAULT)
    }
}

impl From<Vec<Obs>> for ObsLog {
    /// A log held wholly in memory (checkers' tests, reports).
    fn from(memory: Vec<Obs>) -> Self {
        ObsLog { memory, in_memory_max: usize::MAX, spill: None, spilled: 0, stamp_error_ns: 0, memo: Memo::default() }
    }
}

impl ObsLog {
    /// A log that spills once it holds `in_memory_max` observations in
    /// memory (`usize::MAX`: never).
    pub fn new(in_memory_max: usize) -> Self {
        assert!(in_memory_max > 0, "a log must hold at least one observation in memory");
        ObsLog { memory: Vec::new(), in_memory_max, spill: None, spilled: 0, stamp_error_ns: 0, memo: Memo::default() }
    }

    /// States the log's stamping error: each observation happened at most
    /// `stamp_error_ns` before its `at_ns` (and not after it). The
    /// simulator stamps an event as it happens (error 0, the default); a
    /// real run's recorder stamps it a little after, when the process that
    /// saw it reads the shared monotonic clock. Checkers that compare
    /// instants judge conservatively within this bound: a violation is
    /// reported only if it holds for every placement of the events in
    /// `[at_ns - stamp_error_ns, at_ns]`.
    pub fn with_stamp_error(mut self, stamp_error_ns: u64) -> Self {
        self.stamp_error_ns = stamp_error_ns;
        self
    }

    pub fn stamp_error_ns(&self) -> u64 {
        self.stamp_error_ns
    }

    /// The checkers' shared readings of the log as it stands.
    pub(crate) fn memo(&self) -> &Memo {
        &self.memo
    }

    pub fn push(&mut self, obs: Obs) {
        debug_assert!(self.memory.last().is_none_or(|last| last.at_ns <= obs.at_ns), "observations are recorded in true-time order");
        self.memo.forget();
        self.memory.push(obs);
        // Until the first spill the log may hold `in_memory_max`; after it,
        // a chunk: memory stays flat however long the run.
        // (`usize::MAX`: never spill, or spilling failed.)
        let limit = match self.in_memory_max {
            usize::MAX => usize::MAX,
            max if self.spilled > 0 => CHUNK.min(max),
            max => max,
        };
        if self.memory.len() >= limit {
            self.spill_memory();
        }
    }

    /// Inserts `obs` after every observation at or before its time (for
    /// checkers' fixtures, which write histories out of order).
    #[cfg(test)]
    pub fn insert_in_time_order(&mut self, obs: Obs) {
        assert!(self.spill.is_none(), "a fixture's log stays in memory");
        let at = self.memory.partition_point(|o| o.at_ns <= obs.at_ns);
        self.memo.forget();
        self.memory.insert(at, obs);
    }

    pub fn len(&self) -> usize {
        self.spilled + self.memory.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many observations live in the spill file (0: none).
    pub fn spilled(&self) -> usize {
        self.spilled
    }

    /// Every observation in order: spilled ones decoded a chunk at a time
    /// (owned), the in-memory ones lent.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        let chunks = self.spill.as_ref().map_or(0, |spill| spill.chunks.len());
        Iter { log: self, chunk: 0, chunks, in_memory: chunks == 0, decoded: Vec::new().into_iter(), memory: self.memory.iter() }
    }

    /// The whole log in memory (for traces and reports of a kept run).
    pub fn into_vec(self) -> Vec<Obs> {
        if self.spill.is_none() {
            return self.memory;
        }
        let mut all: Vec<Obs> = self.iter().map(Cow::into_owned).collect();
        all.shrink_to_fit();
        all
    }

    /// Writes the in-memory observations out, in chunks of `CHUNK`. If the
    /// file cannot be made or written, the log keeps everything in memory
    /// from then on: a run must not fail because the temporary directory is
    /// full; it only costs memory, which the warning says.
    fn spill_memory(&mut self) {
        let mut bytes = Vec::new();
        let mut written = 0;
        while written < self.memory.len() {
            let end = self.memory.len().min(written + CHUNK);
            bytes.clear();
            for obs in &self.memory[written..end] {
                serde_json::to_writer(&mut bytes, obs).expect("an observation always serializes");
                bytes.push(b'\n');
            }
            let spill = match self.spill_file() {
                Ok(spill) => spill,
                Err(error) => return self.stop_spilling(written, error),
            };
            if let Err(error) = spill.file.write_all(&bytes) {
                return self.stop_spilling(written, error);
            }
            spill.chunks.push((spill.end, bytes.len()));
            spill.end += bytes.len() as u64;
            written = end;
        }
        self.spilled += written;
        self.memory.clear();
        // The first spill empties a large vector: give its memory back.
        self.memory.shrink_to(CHUNK);
    }

    /// Keeps in memory what was not written (a chunk cut short by a failed
    /// write is not recorded in `chunks`, so it is never read back).
    fn stop_spilling(&mut self, written: usize, error: std::io::Error) {
        tracing::warn!("cannot spill observations to a temporary file ({error}); keeping them in memory");
        self.spilled += written;
        self.memory.drain(..written);
        self.in_memory_max = usize::MAX;
    }

    fn spill_file(&mut self) -> std::io::Result<&mut Spill> {
        if self.spill.is_none() {
            self.spill = Some(Spill { file: tempfile::tempfile()?, chunks: Vec::new(), end: 0 });
        }
        Ok(self.spill.as_mut().expect("made above"))
    }

    /// Decodes chunk `index` of the spill file.
    fn read_chunk(&self, index: usize) -> Vec<Obs> {
        let spill = self.spill.as_ref().expect("a spilled chunk has a spill file");
        let (offset, len) = spill.chunks[index];
        let mut bytes = vec![0; len];
        read_exact_at(&spill.file, &mut bytes, offset)
            .unwrap_or_else(|error| panic!("reading back spilled observations (chunk {index} at byte {offset}): {error}"));
        bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).expect("a spilled observation reads back as written"))
            .collect()
    }
}

/// Reads at an offset without moving a shared cursor, so that two walks of
/// the log may be under way at once.
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// A walk of the log: the spilled chunks, then the in-memory tail.
pub struct Iter<'a> {
    log: &'a ObsLog,
    /// The next spilled chunk to decode.
    chunk: usize,
    /// How many chunks the file held when the walk began.
    chunks: usize,
    /// Every spilled chunk has been walked (from the start, for a log that
    /// never spilled): only the in-memory tail is left.
    in_memory: bool,
    decoded: std::vec::IntoIter<Obs>,
    memory: std::slice::Iter<'a, Obs>,
}

impl<'a> Iter<'a> {
    /// The next observation while spilled chunks remain (kept out of line,
    /// so the in-memory path below inlines into the checkers' loops).
    #[cold]
    #[inline(never)]
    fn next_spilled(&mut self) -> Option<Cow<'a, Obs>> {
        loop {
            if let Some(obs) = self.decoded.next() {
                return Some(Cow::Owned(obs));
            }
            if self.chunk < self.chunks {
                self.decoded = self.log.read_chunk(self.chunk).into_iter();
                self.chunk += 1;
                continue;
            }
            self.in_memory = true;
            return self.memory.next().map(Cow::Borrowed);
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cow<'a, Obs>;

    #[inline]
    fn next(&mut self) -> Option<Cow<'a, Obs>> {
        // The checkers walk a run's log some thirty times, so this is the
        // judge's hottest loop: an unspilled log (every sweep's) lends its
        // observations without asking about chunks each time (that asking
        // was 3% of a baseline run's instructions).
        if self.in_memory {
            return self.memory.next().map(Cow::Borrowed);
        }
        self.next_spilled()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let memory = self.memory.len();
        if self.in_memory {
            return (memory, Some(memory));
        }
        (memory + self.decoded.len(), None)
    }
}

impl<'a> IntoIterator for &'a ObsLog {
    type Item = Cow<'a, Obs>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Event;
    use crate::vocab::Proc;
    use leasesim_core::raft::RaftEvent;
    use leasesim_core::server::ServerEvent;

    fn sample(n: u64) -> Obs {
        let event = match n % 4 {
            0 => Event::Server { event: ServerEvent::Raft(RaftEvent::BecameLeader { term: n }) },
            1 => Event::BeliefStarted { key: format!("k{n}"), lease: n, token: n * 2, until_mono_ns: n * 1000 },
            2 => Event::Server { event: ServerEvent::Applied { index: n, term: 1, fingerprint: u64::MAX - n, state: n } },
            _ => Event::Crashed,
        };
        Obs { at_ns: n * 10, proc: if n.is_multiple_of(2) { Proc::Server(n % 5) } else { Proc::Client(n) }, event }
    }

    #[test]
    fn a_spilling_log_walks_back_exactly_what_was_pushed() {
        let all: Vec<Obs> = (0..1_003).map(sample).collect();
        let mut log = ObsLog::new(100);
        for obs in all.clone() {
            log.push(obs);
        }
        assert_eq!(log.len(), 1_003);
        assert_eq!(log.spilled(), 1_000, "ten chunks of 100 spilled, three held in memory");
        let walked: Vec<Obs> = log.iter().map(Cow::into_owned).collect();
        assert_eq!(walked, all);
        // Two walks at once (nested) read the file independently.
        let pairs = log.iter().zip(log.iter().skip(1)).filter(|(a, b)| a.at_ns < b.at_ns).count();
        assert_eq!(pairs, 1_002);
        assert_eq!(log.into_vec(), all);
    }

    #[test]
    fn a_log_below_its_threshold_never_touches_disk() {
        let mut log = ObsLog::new(10);
        for n in 0..9 {
            log.push(sample(n));
        }
        assert_eq!(log.spilled(), 0);
        assert!(log.spill.is_none());
        assert!(log.iter().all(|o| matches!(o, Cow::Borrowed(_))));
    }
}
