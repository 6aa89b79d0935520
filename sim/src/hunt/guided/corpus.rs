//! The guided hunt's corpus: the genomes whose runs reached a coverage
//! feature no earlier run had, each written out as a scenario file with the
//! command that replays it, and the choice of which one to mutate next.

use std::collections::BTreeSet;
use std::path::PathBuf;

use rand::distributions::{Distribution, WeightedIndex};
use rand_chacha::ChaCha8Rng;

use leasesim_core::bugs::Bugs;
use leasesim_scenario::{to_toml, Scenario};

use super::coverage::Feature;
use super::genome::Genome;
use crate::run::outcome::replay_command;

/// A genome that reached something new.
#[derive(Clone, Debug)]
pub struct Entry {
    pub genome: Genome,
    /// How many features its run was the first to reach.
    pub new_features: usize,
    /// Times it was picked as a parent so far.
    pub picked: usize,
    /// Its scenario file, when the corpus is written out.
    pub file: Option<PathBuf>,
    /// Its run's trace digest (the bug on), which the file's replay repeats.
    pub digest: String,
}

#[derive(Debug, Default)]
pub struct Corpus {
    pub entries: Vec<Entry>,
    /// Every feature some run reached.
    pub seen: BTreeSet<Feature>,
}

impl Corpus {
    /// Whether a run with `features` reached something no run before it did.
    pub fn would_grow(&self, features: &BTreeSet<Feature>) -> bool {
        features.iter().any(|f| !self.seen.contains(f))
    }

    /// Merges a run's features; true (and the genome kept, with its file)
    /// if any was new.
    pub fn offer(&mut self, genome: &Genome, digest: &str, features: BTreeSet<Feature>, file: Option<PathBuf>) -> bool {
        let before = self.seen.len();
        self.seen.extend(features);
        let new_features = self.seen.len() - before;
        if new_features == 0 {
            return false;
        }
        self.entries.push(Entry { genome: genome.clone(), new_features, picked: 0, file, digest: digest.to_string() });
        true
    }

    /// The next parent, among the entries of scenario `base`: an entry that
    /// reached more new features is picked more often, and each pick halves
    /// its weight again, so every entry is mutated in turn (AFL's favouring
    /// of fresh, productive inputs). `None` if `base` has no entry.
    pub fn pick(&mut self, base: usize, rng: &mut ChaCha8Rng) -> Option<usize> {
        let weight = |e: &Entry| if e.genome.base == base { e.new_features as f64 / (1u64 << e.picked.min(30)) as f64 } else { 0.0 };
        let weights: Vec<f64> = self.entries.iter().map(weight).collect();
        let index = WeightedIndex::new(&weights).ok()?.sample(rng);
        self.entries[index].picked += 1;
        Some(index)
    }

    /// The scenario whose entries were mutated least so far (the lowest
    /// index on a tie), among those with an entry: mutations are spread
    /// over the scenarios as evenly as the random search spreads its seeds,
    /// so a corpus that one scenario's rich runs dominate cannot starve the
    /// scenario a bug needs.
    pub fn next_base(&self, mutated: &[usize]) -> Option<usize> {
        let present: BTreeSet<usize> = self.entries.iter().map(|e| e.genome.base).collect();
        present.into_iter().min_by_key(|&b| (mutated.get(b).copied().unwrap_or(0), b))
    }

    /// Another entry of the same scenario than `parent`, to splice from.
    pub fn donor(&self, parent: usize, rng: &mut ChaCha8Rng) -> Option<&Genome> {
        use rand::seq::IteratorRandom;
        let base = self.entries[parent].genome.base;
        self.entries.iter().enumerate().filter(|(i, e)| *i != parent && e.genome.base == base).map(|(_, e)| &e.genome).choose(rng)
    }
}

/// Writes `scenario` (a genome's, its path already `path`) to `path`, with
/// the command that replays its run with `bugs` on and the digest that
/// replay prints, then how the genome was made.
pub fn write(scenario: &mut Scenario, genome: &Genome, bugs: &Bugs, digest: &str, note: &str) -> Result<(), String> {
    let path = scenario.path.clone();
    scenario.description = Some(format!("Guided hunt: {note}.\nMade by: {}.", genome.lineage.join("; then ")));
    let mut text = format!("# Replay: {}\n# Digest: {digest}\n", replay_command(scenario, genome.seed, bugs));
    text.push_str(&to_toml(scenario));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}
