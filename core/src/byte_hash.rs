//! A `Hasher` that gathers the bytes `Hash` writes and digests them with
//! one XXH3 call at the end. XXH3 streaming is defined to equal the
//! one-shot hash of the same bytes, so this gives exactly what feeding an
//! `Xxh3` would; but `xxh3::Xxh3::update` costs tens of instructions per
//! call and derived `Hash` makes one call per field, which made hashing
//! (the applied-state chain, entry fingerprints, the trace digest) a tenth
//! of a simulated run.

use std::hash::Hasher;

use xxhash_rust::xxh3::Xxh3;

/// Collects written bytes; `finish` is XXH3-64 of all of them.
#[derive(Clone)]
pub struct ByteHasher {
    bytes: Vec<u8>,
    /// After a [`ByteHasher::write_long`]: every byte before `bytes`,
    /// already fed to a streaming XXH3.
    streamed: Option<Box<Xxh3>>,
}

impl std::fmt::Debug for ByteHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteHasher").field("bytes", &self.bytes).field("streamed", &self.streamed.is_some()).finish()
    }
}

/// From this length on, `write_long` streams a slice instead of copying it.
const LONG_BYTES: usize = 4096;

/// Room for an entry's or a step's fields without growing the buffer
/// (growing it field by field cost more than the hashing saved).
const INITIAL_BYTES: usize = 512;

impl Default for ByteHasher {
    fn default() -> Self {
        ByteHasher { bytes: Vec::with_capacity(INITIAL_BYTES), streamed: None }
    }
}

impl ByteHasher {
    pub fn new() -> Self {
        ByteHasher::default()
    }

    /// The bytes gathered so far (since the last [`ByteHasher::write_long`]
    /// that streamed).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Forgets the bytes gathered, keeping the buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.streamed = None;
    }

    /// `write`, for a slice that may be long (a cache of many values'
    /// bytes): from [`LONG_BYTES`] on, the bytes gathered so far and then
    /// the slice itself go to a streaming XXH3 instead of being copied into
    /// the buffer (copying a long slice, and growing the buffer for it, cost
    /// more than hashing it). The digest is the same either way.
    pub fn write_long(&mut self, bytes: &[u8]) {
        if bytes.len() < LONG_BYTES {
            self.bytes.extend_from_slice(bytes);
            return;
        }
        let stream = self.streamed.get_or_insert_with(|| Box::new(Xxh3::new()));
        stream.update(&self.bytes);
        stream.update(bytes);
        self.bytes.clear();
    }
}

impl Hasher for ByteHasher {
    fn finish(&self) -> u64 {
        match &self.streamed {
            None => xxhash_rust::xxh3::xxh3_64(&self.bytes),
            Some(stream) => {
                let mut stream = Xxh3::clone(stream);
                stream.update(&self.bytes);
                stream.digest()
            }
        }
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::hash::Hash;

    use xxhash_rust::xxh3::Xxh3;

    use super::*;

    fn both<T: Hash>(value: &T) -> (u64, u64) {
        let (mut streamed, mut gathered) = (Xxh3::new(), ByteHasher::new());
        value.hash(&mut streamed);
        value.hash(&mut gathered);
        (streamed.finish(), gathered.finish())
    }

    #[test]
    fn gives_what_streaming_into_xxh3_gives() {
        // Lengths around XXH3's internal boundaries (16, 128, 240 bytes and
        // its 256-byte stripes) and a derived-Hash value of many fields.
        for len in [0, 1, 3, 16, 17, 128, 129, 240, 241, 255, 256, 1024, 5000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let (streamed, gathered) = both(&bytes);
            assert_eq!(streamed, gathered, "{len} bytes");
        }
        let map: BTreeMap<String, (u64, Option<i32>)> = (0..300).map(|i| (format!("/k{i}"), (i, (i % 3 == 0).then_some(-1)))).collect();
        let (streamed, gathered) = both(&map);
        assert_eq!(streamed, gathered);
    }

    #[test]
    fn a_long_write_streamed_gives_what_copying_it_gives() {
        for (before, long, after) in [(0, 4096, 0), (5, 4096, 3), (300, 5000, 17), (7, 100_000, 250), (9, 4095, 9)] {
            let bytes = |n: usize, salt: usize| (0..n).map(|i| (i * 31 + salt) as u8).collect::<Vec<u8>>();
            let (head, body, tail) = (bytes(before, 1), bytes(long, 2), bytes(after, 3));
            let (mut copied, mut streamed) = (ByteHasher::new(), ByteHasher::new());
            for h in [&mut copied, &mut streamed] {
                h.write(&head);
            }
            copied.write(&body);
            streamed.write_long(&body);
            for h in [&mut copied, &mut streamed] {
                h.write(&tail);
            }
            assert_eq!(streamed.streamed.is_some(), long >= LONG_BYTES, "{long}");
            assert_eq!(copied.finish(), streamed.finish(), "{before} + {long} + {after} bytes");
            assert_eq!(copied.finish(), xxhash_rust::xxh3::xxh3_64(&[head, body, tail].concat()));
        }
    }

    #[test]
    fn clear_starts_afresh() {
        let mut h = ByteHasher::new();
        h.write_u64(7);
        h.clear();
        h.write_u64(9);
        let mut fresh = ByteHasher::new();
        fresh.write_u64(9);
        assert_eq!(h.finish(), fresh.finish());
        assert_eq!(h.bytes(), 9u64.to_ne_bytes());
    }
}
