//! The space a data directory keeps back for a full disk: a file of zeros
//! (`space.reserve`) written when the member starts. When a log or
//! snapshot write meets ENOSPC the storage deletes it and tries again, so
//! that the write the member was in the middle of, and the few small ones
//! that raise and disarm its NOSPACE alarm, still find room; the member
//! then refuses new writes (etcd's NOSPACE alarm) instead of dying.
//! Disarming the alarm takes the reserve back, which fails, and so raises
//! the alarm again, while the disk is still full.
//!
//! The reserve does not cover a snapshot larger than itself: a member
//! whose disk stays full until then stops as before (exit 3).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The reserve a member keeps (1 MiB): room for its alarm and a few
/// hundred small log records.
pub const RESERVE_BYTES: u64 = 1024 * 1024;
const RESERVE: &str = "space.reserve";

/// Whether `e` says the disk is full.
pub fn is_full(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::StorageFull || e.raw_os_error() == Some(libc::ENOSPC)
}

/// The reserve file and whether it was given up.
pub struct Reserve {
    path: PathBuf,
    bytes: u64,
    released: bool,
}

impl Reserve {
    /// Writes the reserve in `dir` (`bytes` 0: keep none). A disk too full
    /// for it counts as a reserve already given up.
    pub fn open(dir: &Path, bytes: u64) -> io::Result<Reserve> {
        let mut reserve = Reserve { path: dir.join(RESERVE), bytes, released: false };
        if bytes == 0 {
            let _ = fs::remove_file(&reserve.path);
            return Ok(reserve);
        }
        if let Err(e) = reserve.restore() {
            if !is_full(&e) {
                return Err(e);
            }
            tracing::error!("no room for the {bytes}-byte disk reserve in {}: the disk is full", dir.display());
            reserve.released = true;
        }
        Ok(reserve)
    }

    pub fn released(&self) -> bool {
        self.released
    }

    /// Deletes the reserve; false when there is none left to give.
    pub fn release(&mut self) -> io::Result<bool> {
        if self.released || self.bytes == 0 {
            return Ok(false);
        }
        fs::remove_file(&self.path)?;
        self.released = true;
        tracing::error!("the disk is full: gave up the {}-byte reserve", self.bytes);
        Ok(true)
    }

    /// Writes the reserve back (real zeros, not a sparse file, so the space
    /// is really taken); on failure nothing of it is left behind.
    pub fn restore(&mut self) -> io::Result<()> {
        let written = (|| {
            let mut file = File::create(&self.path)?;
            let zeros = vec![0u8; 64 * 1024];
            let mut left = self.bytes;
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                file.write_all(&zeros[..n])?;
                left -= n as u64;
            }
            file.sync_all()
        })();
        match written {
            Ok(()) => {
                self.released = false;
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&self.path);
                Err(e)
            }
        }
    }
}
