//! `--unsafe-test-client-ids`: a Lock or Unlock call may name the client
//! identity it runs under, `(client id, sequence number)`, in its gRPC
//! metadata ([`HEADER`]: `ID/SEQ`), instead of one checked out of the
//! member's pool (`front.rs`). A test runner gives each of its clients a
//! fixed id this way, so the lock table's events name the same client for
//! its acquire and for its release, and a judge can tell whether the
//! client that released a lock is the one that held it
//! (`release-by-owner`). Without the flag the metadata is ignored: any
//! caller could otherwise read another's recorded answers or retire its
//! sequence numbers, which is why the flag is for tests only.
//!
//! The caller owns the sequence numbers: each call takes a new one, never
//! reused (a retry under the same pair is answered from the session record,
//! as a member's own retries are). Ids below [`MAX_ID`] only, clear of the
//! pooled ids (above 2^40).

use tonic::metadata::MetadataMap;

/// The metadata key a call names its identity under.
pub const HEADER: &str = "leasesim-test-client";

/// Ids a caller may name: below the pool's (`front.rs` draws them above
/// 2^40), and not 0.
pub const MAX_ID: u64 = 1 << 40;

/// The metadata value for `(client, seq)`.
pub fn value(client: u64, seq: u64) -> String {
    format!("{client}/{seq}")
}

/// The identity a call names, if it names one: `Err` says what is wrong
/// with a value that is there but not `ID/SEQ` (both above 0, the id
/// below [`MAX_ID`]).
pub fn named(metadata: &MetadataMap) -> Result<Option<(u64, u64)>, String> {
    let Some(raw) = metadata.get(HEADER) else { return Ok(None) };
    let text = raw.to_str().map_err(|_| format!("{HEADER}: not ASCII"))?;
    let bad = || format!("{HEADER}: `{text}` is not ID/SEQ (both above 0, ID below 2^40)");
    let (client, seq) = text.split_once('/').ok_or_else(bad)?;
    let (client, seq): (u64, u64) = (client.parse().map_err(|_| bad())?, seq.parse().map_err(|_| bad())?);
    if client == 0 || client >= MAX_ID || seq == 0 {
        return Err(bad());
    }
    Ok(Some((client, seq)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> MetadataMap {
        let mut map = MetadataMap::new();
        map.insert(HEADER, value.parse().expect("ASCII"));
        map
    }

    #[test]
    fn an_identity_round_trips_and_a_bad_one_says_why() {
        assert_eq!(named(&MetadataMap::new()), Ok(None));
        assert_eq!(named(&with(&value(3, 17))), Ok(Some((3, 17))));
        for bad in ["3", "3/", "x/1", "0/1", "3/0", "1099511627776/1", "-1/2"] {
            let err = named(&with(bad)).expect_err(bad);
            assert!(err.contains(HEADER) && err.contains(bad), "{err}");
        }
    }
}
