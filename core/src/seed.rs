//! One random stream per purpose: every random draw of a run comes from a
//! stream named by what it is for (the network, chaos, server 3's election
//! timeouts in its second life, client 3's think times…), and every stream's
//! seed is derived from the run's seed and that name alone.
//!
//! Before this, server N and client N both seeded with
//! `seed ^ N * 0x9e37…` at incarnation 0: the same ChaCha sequence, so
//! server 3's election timeouts moved with client 3's think times and a
//! whole family of interleavings was never drawn. A derivation through a
//! real hash (XXH3 over the stream's tag, id and incarnation) keeps streams
//! independent, and adding a stream never shifts another.

use std::hash::Hasher;

use xxhash_rust::xxh3::Xxh3;

/// What a random stream is for. The tag numbers are part of the
/// determinism contract: changing one changes every run that uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The run's set-up draws (clock offsets and drifts) and the fault
    /// injector's choices (`random-server`, `follower`).
    Setup,
    /// Message fates: loss, duplication, latency.
    Network,
    /// `[chaos]`: which faults, when, on whom; the swarm's draws.
    Chaos,
    /// The engine-knob swarm's draws (`[chaos] knobs`).
    Knobs,
    /// A server's core (election timeouts).
    Server(u64),
    /// A client's workload choices.
    Client(u64),
    /// Narrow-window faults: which crash points a seed arms.
    CrashPoints,
}

impl Stream {
    fn tag(self) -> (u64, u64) {
        match self {
            Stream::Setup => (1, 0),
            Stream::Network => (2, 0),
            Stream::Chaos => (3, 0),
            Stream::Knobs => (4, 0),
            Stream::Server(id) => (5, id),
            Stream::Client(id) => (6, id),
            Stream::CrashPoints => (7, 0),
        }
    }
}

/// The seed of `stream` in a run seeded `run_seed`, for the process's
/// `incarnation`-th life (0 for streams that live once per run).
pub fn derive_seed(run_seed: u64, stream: Stream, incarnation: u64) -> u64 {
    let (tag, id) = stream.tag();
    let mut hasher = Xxh3::new();
    hasher.write_u64(run_seed);
    hasher.write_u64(tag);
    hasher.write_u64(id);
    hasher.write_u64(incarnation);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_and_client_of_one_number_draw_different_streams() {
        for n in 1..10 {
            for incarnation in 0..3 {
                assert_ne!(derive_seed(42, Stream::Server(n), incarnation), derive_seed(42, Stream::Client(n), incarnation));
            }
        }
    }

    #[test]
    fn every_stream_differs_and_repeats() {
        let streams =
            [Stream::Setup, Stream::Network, Stream::Chaos, Stream::Knobs, Stream::CrashPoints, Stream::Server(1), Stream::Client(1)];
        let mut seen = std::collections::BTreeSet::new();
        for s in streams {
            for run_seed in 0..50 {
                for incarnation in 0..3 {
                    let seed = derive_seed(run_seed, s, incarnation);
                    assert_eq!(seed, derive_seed(run_seed, s, incarnation), "one derivation, one seed");
                    assert!(seen.insert(seed), "{s:?} seed {run_seed} life {incarnation} collides");
                }
            }
        }
    }
}
