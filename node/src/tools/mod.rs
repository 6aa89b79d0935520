//! The operator's and tester's tools that drive members from outside:
//! `local` (a whole cluster on this machine), `load` (a client workload
//! with its own checks), `bench` (leasesim-node and etcd side by side), `nemesis` (faults during a load) and `roster`
//! (the member list those tools share). They live apart from the server
//! so that nothing a member runs imports them: a member's code path never
//! depends on test tooling, and the tools reach members only through the
//! public APIs a user's client would use.
pub mod bench;
pub mod load;
pub mod local;
pub mod nemesis;
pub mod roster;
