//! Process names (`s1`, `c2`, `store`) and fault selectors (those, plus
//! `leader`, `holder:KEY`, `follower`, `random-server`, `random-client`).
//!
//! Parsing only knows the spelling; whether `s7` or `holder:orders` can
//! match anything depends on the rest of the file, which `ScenarioFacts` describes.
//! Selectors that can only be resolved while the run goes on (`leader`…)
//! are kept symbolic for the simulator.

use std::collections::BTreeSet;
use std::fmt;

use leasesim_core::{ClientId, NodeId};

use super::suggest;

/// A concrete process: what `[clocks.NAME]` and partitions name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Process {
    /// `sN`, N from 1 (voters first, then spares).
    Server(NodeId),
    /// `cN`, N from 1, numbered across workloads in file order.
    Client(ClientId),
    /// The data store that checks fencing tokens.
    Store,
}

/// What a fault acts on; dynamic ones are resolved when the fault fires.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Selector {
    Server(NodeId),
    Client(ClientId),
    Store,
    /// The leader at the moment the fault fires.
    Leader,
    /// The client holding this key's lock then.
    Holder(String),
    /// A follower, drawn from the seed.
    Follower,
    RandomServer,
    RandomClient,
}

/// The bare words a selector may be, for suggestions.
const WORDS: [&str; 5] = ["store", "leader", "follower", "random-server", "random-client"];

impl Selector {
    /// Whether it names one process whatever happens (`sN`, `cN`, `store`),
    /// not a role resolved when a fault fires.
    pub fn is_fixed(&self) -> bool {
        matches!(self, Selector::Server(_) | Selector::Client(_) | Selector::Store)
    }
}

impl Process {
    /// Parses `s3`, `c12` or `store`.
    pub fn parse(text: &str) -> Result<Process, String> {
        match Selector::parse(text)? {
            Selector::Server(n) => Ok(Process::Server(n)),
            Selector::Client(n) => Ok(Process::Client(n)),
            Selector::Store => Ok(Process::Store),
            dynamic => Err(format!("`{dynamic}` is not one fixed process; name one: s1…, c1… or store")),
        }
    }
}

impl Selector {
    /// Parses any selector; the error says what selectors look like.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let numbered = |prefix: char| -> Option<u64> {
            let digits = text.strip_prefix(prefix)?;
            let valid = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
            valid.then(|| digits.parse().ok()).flatten()
        };
        if let Some(n) = numbered('s') {
            return Ok(Selector::Server(n));
        }
        if let Some(n) = numbered('c') {
            return Ok(Selector::Client(n));
        }
        if let Some(key) = text.strip_prefix("holder:") {
            return if key.is_empty() {
                Err("`holder:` needs a lock key, e.g. `holder:orders`".to_string())
            } else {
                Ok(Selector::Holder(key.to_string()))
            };
        }
        match text {
            "store" => Ok(Selector::Store),
            "leader" => Ok(Selector::Leader),
            "follower" => Ok(Selector::Follower),
            "random-server" => Ok(Selector::RandomServer),
            "random-client" => Ok(Selector::RandomClient),
            _ => Err(format!("`{text}` is not a process or selector{}", suggest::did_you_mean(text, WORDS))),
        }
    }

    /// The process it names, if it names exactly one by itself.
    pub fn process(&self) -> Option<Process> {
        match self {
            Selector::Server(n) => Some(Process::Server(*n)),
            Selector::Client(n) => Some(Process::Client(*n)),
            Selector::Store => Some(Process::Store),
            _ => None,
        }
    }

    /// Whether it always resolves to a server.
    pub fn is_server(&self) -> bool {
        matches!(self, Selector::Server(_) | Selector::Leader | Selector::Follower | Selector::RandomServer)
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Server(n) => write!(f, "s{n}"),
            Process::Client(n) => write!(f, "c{n}"),
            Process::Store => f.write_str("store"),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Server(n) => write!(f, "s{n}"),
            Selector::Client(n) => write!(f, "c{n}"),
            Selector::Store => f.write_str("store"),
            Selector::Leader => f.write_str("leader"),
            Selector::Holder(key) => write!(f, "holder:{key}"),
            Selector::Follower => f.write_str("follower"),
            Selector::RandomServer => f.write_str("random-server"),
            Selector::RandomClient => f.write_str("random-client"),
        }
    }
}

/// What exists in this scenario (the facts selectors, keys and TTLs are
/// checked against), as far as validation got; `None` where the
/// file's own value was bad (then checks against it are skipped instead of
/// piling up follow-on errors).
#[derive(Clone, Debug, Default)]
pub(crate) struct ScenarioFacts {
    pub(crate) servers: Option<u64>,
    pub(crate) spares: Option<u64>,
    pub(crate) clients: Option<u64>,
    pub(crate) lock_keys: Option<BTreeSet<String>>,
    /// The longest election timeout: a lease's TTL must be at least 1.5
    /// times it (core's `min_ttl_ns`), or every grant is refused.
    pub(crate) election_timeout_max_ns: Option<u64>,
}

/// A problem and its fix.
pub(crate) type Problem = (String, String);

/// `s1…s5`, `s1` or `none`.
pub(crate) fn name_range(prefix: &str, first: u64, last: u64) -> String {
    match last.cmp(&first) {
        std::cmp::Ordering::Less => "none".to_string(),
        std::cmp::Ordering::Equal => format!("{prefix}{first}"),
        std::cmp::Ordering::Greater => format!("{prefix}{first}…{prefix}{last}"),
    }
}

impl ScenarioFacts {
    /// "s1…s5" or "s1…s3 and spares s4…s5".
    fn servers_text(&self, servers: u64, spares: u64) -> String {
        let voters = name_range("s", 1, servers);
        if spares == 0 {
            voters
        } else {
            format!("{voters} and spares {}", name_range("s", servers + 1, servers + spares))
        }
    }

    pub(crate) fn check_process(&self, process: Process) -> Result<(), Problem> {
        match process {
            Process::Server(n) => {
                let (Some(servers), Some(spares)) = (self.servers, self.spares) else { return Ok(()) };
                if n <= servers + spares {
                    return Ok(());
                }
                Err((
                    format!("`s{n}` names no server: the cluster has {}", self.servers_text(servers, spares)),
                    format!("use one of {}, or raise `servers` or `spares` in [cluster]", name_range("s", 1, servers + spares)),
                ))
            }
            Process::Client(n) => {
                let Some(clients) = self.clients else { return Ok(()) };
                if n <= clients {
                    return Ok(());
                }
                let have = if clients == 0 {
                    "there are no clients".to_string()
                } else {
                    format!("the workloads have {}", name_range("c", 1, clients))
                };
                Err((
                    format!("`c{n}` names no client: {have}"),
                    "clients are numbered c1… across [[workload]]s in file order; use an existing one or add clients".to_string(),
                ))
            }
            Process::Store => Ok(()),
        }
    }

    pub(crate) fn check_selector(&self, selector: &Selector) -> Result<(), Problem> {
        if let Some(process) = selector.process() {
            return self.check_process(process);
        }
        match selector {
            Selector::Holder(key) => {
                let Some(keys) = &self.lock_keys else { return Ok(()) };
                if keys.contains(key) {
                    return Ok(());
                }
                let fix = if keys.is_empty() {
                    format!("add a [[workload]] with kind = \"lock\" and keys = [\"{key}\"]")
                } else {
                    let known: Vec<&str> = keys.iter().map(String::as_str).collect();
                    format!("lock keys in this file: {}{}", known.join(", "), suggest::did_you_mean(key, known.iter().copied()))
                };
                Err((format!("`holder:{key}`: no lock workload has key `{key}`"), fix))
            }
            Selector::RandomClient if self.clients == Some(0) => {
                Err(("`random-client`: there are no clients".to_string(), "add a [[workload]], or pick a server".to_string()))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selector_spelling_round_trips() {
        for text in ["s1", "s12", "c3", "store", "leader", "holder:orders", "holder:a:b", "follower", "random-server", "random-client"] {
            let selector = Selector::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(selector.to_string(), text);
        }
        assert_eq!(Process::parse("c2"), Ok(Process::Client(2)));
    }

    #[test]
    fn bad_spellings_say_what_is_wrong() {
        assert!(Selector::parse("s0").is_err());
        assert!(Selector::parse("s01").is_err());
        assert!(Selector::parse("holder:").unwrap_err().contains("needs a lock key"));
        assert!(Selector::parse("leeder").unwrap_err().contains("did you mean `leader`"));
        assert!(Selector::parse("random_server").unwrap_err().contains("did you mean `random-server`"));
        assert!(Process::parse("leader").unwrap_err().contains("not one fixed process"));
    }

    #[test]
    fn world_checks_bounds() {
        let facts = ScenarioFacts {
            servers: Some(3),
            spares: Some(2),
            clients: Some(4),
            lock_keys: Some(["orders".to_string()].into()),
            election_timeout_max_ns: None,
        };
        assert!(facts.check_process(Process::Server(5)).is_ok());
        let (message, _) = facts.check_process(Process::Server(6)).unwrap_err();
        assert_eq!(message, "`s6` names no server: the cluster has s1…s3 and spares s4…s5");
        assert!(facts.check_selector(&Selector::Client(5)).is_err());
        assert!(facts.check_selector(&Selector::Holder("order".into())).unwrap_err().1.contains("did you mean `orders`"));
        assert!(ScenarioFacts::default().check_selector(&Selector::Server(99)).is_ok());
    }
}
