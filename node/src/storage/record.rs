//! The write-ahead log's record framing: `[len: u32 LE][crc32: u32 LE][payload]`.
//!
//! It exists so that a crash in the middle of a write is recognised on
//! restart: a record whose bytes run past the end of the file, or whose
//! checksum fails while nothing follows it, is a torn tail (the write that
//! was in progress at the crash, never acknowledged) and is cut off; a bad
//! record with more data after it is corruption, and recovery refuses to
//! guess.

use std::fmt;

/// Bytes before a record's payload.
pub const HEADER_BYTES: usize = 8;
/// Refuse records larger than this on read (a garbage length field).
pub const MAX_RECORD_BYTES: usize = 256 * 1024 * 1024;

/// Frames `payload` as one record.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// What a scan of a log file found.
#[derive(Debug, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The payloads of every intact record, in order.
    pub payloads: Vec<&'a [u8]>,
    /// Length of the intact prefix: the file should be truncated to this.
    pub valid_len: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt {
    /// Offset of the bad record.
    pub offset: usize,
    pub why: &'static str,
}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt write-ahead log record at byte {}: {}", self.offset, self.why)
    }
}

impl std::error::Error for Corrupt {}

/// Reads every record of `bytes`. A torn tail ends the scan (`valid_len`
/// says where); a bad record followed by more bytes is an error.
pub fn scan(bytes: &[u8]) -> Result<Scan<'_>, Corrupt> {
    let mut payloads = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        if rest.len() < HEADER_BYTES {
            break; // torn header
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len > MAX_RECORD_BYTES {
            return Err(Corrupt { offset, why: "length field out of range" });
        }
        if rest.len() < HEADER_BYTES + len {
            break; // torn payload: the record runs past the end of the file
        }
        let payload = &rest[HEADER_BYTES..HEADER_BYTES + len];
        if crc32fast::hash(payload) != crc {
            if rest.len() == HEADER_BYTES + len {
                break; // the last record: a torn write of the right length
            }
            return Err(Corrupt { offset, why: "checksum mismatch with records after it" });
        }
        payloads.push(payload);
        offset += HEADER_BYTES + len;
    }
    Ok(Scan { payloads, valid_len: offset })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_records() -> Vec<u8> {
        let mut bytes = encode(b"first");
        bytes.extend(encode(b"second"));
        bytes
    }

    #[test]
    fn intact_records_round_trip() {
        let bytes = two_records();
        let scan = scan(&bytes).unwrap();
        assert_eq!(scan.payloads, vec![&b"first"[..], &b"second"[..]]);
        assert_eq!(scan.valid_len, bytes.len());
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_length() {
        let bytes = two_records();
        let first_len = encode(b"first").len();
        for cut in first_len..bytes.len() {
            let scan = scan(&bytes[..cut]).unwrap();
            assert_eq!(scan.payloads, vec![&b"first"[..]], "cut at {cut}");
            assert_eq!(scan.valid_len, first_len);
        }
    }

    #[test]
    fn a_garbled_last_record_is_a_torn_tail() {
        let mut bytes = two_records();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let scan = scan(&bytes).unwrap();
        assert_eq!(scan.payloads.len(), 1);
    }

    #[test]
    fn corruption_before_good_records_is_refused() {
        let mut bytes = two_records();
        bytes[HEADER_BYTES] ^= 0xff; // inside "first"
        let err = scan(&bytes).unwrap_err();
        assert_eq!(err.offset, 0);
        assert!(err.to_string().contains("checksum"));
    }
}
