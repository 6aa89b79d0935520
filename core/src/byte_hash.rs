//! A `Hasher` that gathers the bytes `Hash` writes and digests them with
//! one XXH3 call at the end. XXH3 streaming is defined to equal the
//! one-shot hash of the same bytes, so this gives exactly what feeding an
//! `Xxh3` would; but `xxh3::Xxh3::update` costs tens of instructions per
//! call and derived `Hash` makes one call per field, which made hashing
//! (the applied-state chain, entry fingerprints, the trace digest) a tenth
//! of a simulated run.

use std::hash::Hasher;

/// Collects written bytes; `finish` is XXH3-64 of all of them.
#[derive(Clone, Debug)]
pub struct ByteHasher {
    bytes: Vec<u8>,
}

/// Room for an entry's or a step's fields without growing the buffer
/// (growing it field by field cost more than the hashing saved).
const INITIAL_BYTES: usize = 512;

impl Default for ByteHasher {
    fn default() -> Self {
        ByteHasher { bytes: Vec::with_capacity(INITIAL_BYTES) }
    }
}

impl ByteHasher {
    pub fn new() -> Self {
        ByteHasher::default()
    }

    /// The bytes gathered so far.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Forgets the bytes gathered, keeping the buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
    }
}

impl Hasher for ByteHasher {
    fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&self.bytes)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }
}

/// Bytes gathered before they are fed to a streaming XXH3: large enough
/// that the per-call cost of `Xxh3::update` vanishes, small enough that
/// hashing a whole state of many megabytes never builds a copy of it.
const CHUNK_BYTES: usize = 64 * 1024;

/// A [`ByteHasher`] for values of any size: it gathers up to
/// [`CHUNK_BYTES`] and streams each full chunk into XXH3, so `finish` is
/// the same XXH3-64 of all the bytes written, without ever holding them
/// all. The applied-state digest hashes the whole state (keys, their
/// history) every few entries; gathering that in one buffer cost a copy of
/// the state, and the page faults of growing it, each time.
#[derive(Clone)]
pub struct ChunkedHasher {
    pending: Vec<u8>,
    streamed: Option<xxhash_rust::xxh3::Xxh3>,
}

impl Default for ChunkedHasher {
    fn default() -> Self {
        ChunkedHasher { pending: Vec::with_capacity(INITIAL_BYTES), streamed: None }
    }
}

impl ChunkedHasher {
    pub fn new() -> Self {
        ChunkedHasher::default()
    }

    /// `write`, for a slice that may be long (a cache of many values'
    /// bytes): from [`CHUNK_BYTES`] on, the bytes pending and then the
    /// slice itself go straight to the stream instead of being copied into
    /// the chunk first (copying a long slice cost more than hashing it).
    /// The digest is the same either way.
    pub fn write_long(&mut self, bytes: &[u8]) {
        if bytes.len() < CHUNK_BYTES {
            self.write(bytes);
            return;
        }
        let stream = self.streamed.get_or_insert_with(xxhash_rust::xxh3::Xxh3::new);
        stream.update(&self.pending);
        stream.update(bytes);
        self.pending.clear();
    }
}

impl Hasher for ChunkedHasher {
    fn finish(&self) -> u64 {
        match &self.streamed {
            // Nothing spilled: the one-shot hash, as `ByteHasher` gives.
            None => xxhash_rust::xxh3::xxh3_64(&self.pending),
            Some(streamed) => {
                let mut streamed = streamed.clone();
                streamed.update(&self.pending);
                streamed.digest()
            }
        }
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= CHUNK_BYTES {
            self.streamed.get_or_insert_with(xxhash_rust::xxh3::Xxh3::new).update(&self.pending);
            self.pending.clear();
        }
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
        for (before, long, after) in
            [(0, CHUNK_BYTES, 0), (5, CHUNK_BYTES, 3), (300, CHUNK_BYTES + 5000, 17), (7, 300_000, 250), (9, 4095, 9)]
        {
            let bytes = |n: usize, salt: usize| (0..n).map(|i| (i * 31 + salt) as u8).collect::<Vec<u8>>();
            let (head, body, tail) = (bytes(before, 1), bytes(long, 2), bytes(after, 3));
            let (mut copied, mut streamed) = (ByteHasher::new(), ChunkedHasher::new());
            copied.write(&head);
            streamed.write(&head);
            copied.write(&body);
            streamed.write_long(&body);
            // A long slice goes to the stream, not through the chunk.
            assert_eq!(streamed.pending.is_empty(), long >= CHUNK_BYTES, "{long} bytes");
            copied.write(&tail);
            streamed.write(&tail);
            assert_eq!(copied.finish(), streamed.finish(), "{before} + {long} + {after} bytes");
            assert_eq!(copied.finish(), xxhash_rust::xxh3::xxh3_64(&[head, body, tail].concat()));
        }
    }

    #[test]
    fn chunked_gives_what_gathering_gives() {
        // Below, at and well past one chunk, written in uneven pieces.
        for len in [0, 100, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 777] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
            let (mut chunked, mut gathered) = (ChunkedHasher::new(), ByteHasher::new());
            for piece in bytes.chunks(1000) {
                chunked.write(piece);
                gathered.write(piece);
            }
            assert_eq!(chunked.finish(), gathered.finish(), "{len} bytes");
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
