//! The study spec file (docs/STUDY-FORMAT.md): a base scenario and the axes
//! of a grid over its parameters, validated with `file:line:col` errors in
//! the scenario loader's format, because a study is hours of CPU and a typo
//! found after the sweep is hours lost.
//!
//! The file is read with the scenario loader's TOML tree, which keeps
//! every key's and value's byte span (`scenario::raw`), and its
//! `TableReader`, so a problem is reported where it is written; problems
//! with a key as a whole point at the key.

use std::ops::Range;
use std::path::{Path, PathBuf};

use leasesim_core::ExpiryStrategy;

use leasesim_core::duration::{parse_duration, parse_signed_duration};
use leasesim_scenario::error::Diags;
use leasesim_scenario::fields::{TableReader, Val};
use leasesim_scenario::raw::{self, Node, Value};
use leasesim_scenario::suggest::did_you_mean;
use leasesim_scenario::{BeliefFrom, ScenarioError};

/// Every axis a study may vary; each holds the values its cells take.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axes {
    pub lease_expiry: Vec<ExpiryStrategy>,
    /// Clock-rate error of every server (so of whichever leads), from t = 0.
    pub leader_drift: Vec<f64>,
    /// Clock-rate error of every client, from t = 0.
    pub client_drift: Vec<f64>,
    /// s1's wall clock starts this far off (the others at 0).
    pub wall_offset_ns: Vec<i64>,
    /// A wall-clock step of the leader at `jump_at` (0: none).
    pub leader_jump_ns: Vec<i64>,
    pub margin: Vec<f64>,
    pub belief_from: Vec<BeliefFrom>,
    /// Lock TTL (keep-alive every TTL / 3 unless `keepalive` is an axis).
    pub ttl_ns: Vec<u64>,
    /// Lock keep-alive interval (below every cell's TTL).
    pub keepalive_ns: Vec<u64>,
    /// Length of each lock-holder pause (0: none), from `pause_at` every
    /// `pause_every`.
    pub pause_ns: Vec<u64>,
    pub fenced: Vec<bool>,
    /// Check-to-act latency of lock holders (the workload's `hold`, both
    /// ends of its range).
    pub hold_ns: Vec<u64>,
    /// s1's own clock-rate error (applied after `leader_drift`).
    pub s1_drift: Vec<f64>,
    /// A rate error every server takes at `slew_at` and drops again
    /// `slew_for` later (NTP slewing a clock back): two clock faults per server.
    pub server_slew: Vec<f64>,
    /// One pause of whichever server leads at the first pause time (the
    /// phase's `pause_at`), this long (0: none); its clock keeps running.
    pub leader_pause_ns: Vec<u64>,
    /// The cluster's lease checkpoint interval (0: checkpoints off).
    pub checkpoint_ns: Vec<u64>,
    /// The rate error the leader's clock takes at `jump_at` (a clock fault
    /// on `leader`), in (-1, 1).
    pub leader_clock_drift: Vec<f64>,
    /// The cluster's assumed `drift_bound`, in [0, 1), kept as given (not
    /// raised to the cell's drifts): the study breaks it on purpose.
    pub drift_bound: Vec<f64>,
    /// The election timeout's low end; the range is [this, 2 × this].
    pub election_timeout_ns: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StudySpec {
    pub name: String,
    pub description: Option<String>,
    /// The base scenario, resolved against the spec file's folder.
    pub base: PathBuf,
    pub seeds: Range<u64>,
    pub axes: Axes,
    pub jump_at_ns: u64,
    pub pause_at_ns: u64,
    pub pause_every_ns: u64,
    /// `fault_phase = "random"`: each run's faults shift by offsets drawn
    /// from its seed in [0, `phase_window`).
    pub random_phase: bool,
    pub phase_window_ns: u64,
    /// Adaptive seeds: run each cell until the Wilson 95 % interval of its
    /// unsafe-run rate is at most this wide (between `min_seeds` and
    /// `max_seeds` runs). `None`: every cell runs `seeds`.
    pub target_ci_width: Option<f64>,
    pub min_seeds: u64,
    pub max_seeds: u64,
    /// `seeds_per_cell = "distinct"`: cell i runs seeds first + i×stride + k
    /// (stride: the most seeds a cell can run), so no two cells share a run.
    pub distinct_seeds: bool,
    /// How each holder pause's length is drawn (`pause` is then its scale).
    pub pause_distribution: PauseDistribution,
    /// Pareto: the tail index α; lognormal: σ of the logarithm.
    pub pause_shape: f64,
    /// When the `server_slew` axis starts and how long it lasts.
    pub slew_at_ns: u64,
    pub slew_for_ns: u64,
}

/// How the length of each holder pause is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PauseDistribution {
    /// Every pause lasts the cell's `pause`.
    #[default]
    Fixed,
    /// Pareto with minimum `pause` and tail index `pause_shape`:
    /// P(X > x) = (pause / x)^α for x ≥ pause.
    Pareto,
    /// Lognormal with median `pause` and σ = `pause_shape`.
    Lognormal,
}

impl PauseDistribution {
    pub fn name(self) -> &'static str {
        match self {
            PauseDistribution::Fixed => "fixed",
            PauseDistribution::Pareto => "pareto",
            PauseDistribution::Lognormal => "lognormal",
        }
    }
}

const TOP_KEYS: [&str; 18] = [
    "name",
    "description",
    "base",
    "seeds",
    "axes",
    "jump_at",
    "pause_at",
    "pause_every",
    "fault_phase",
    "phase_window",
    "target_ci_width",
    "min_seeds",
    "max_seeds",
    "seeds_per_cell",
    "pause_distribution",
    "pause_shape",
    "slew_at",
    "slew_for",
];
const AXIS_KEYS: [&str; 19] = [
    "lease_expiry",
    "leader_drift",
    "client_drift",
    "wall_offset",
    "leader_jump",
    "margin",
    "belief_from",
    "ttl",
    "keepalive",
    "pause",
    "fenced",
    "hold",
    "s1_drift",
    "server_slew",
    "leader_pause",
    "checkpoint",
    "leader_clock_drift",
    "drift_bound",
    "election_timeout",
];

/// Reads and validates a spec file.
pub fn load(path: &Path) -> Result<StudySpec, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScenarioError::whole_file(&file, format!("cannot read the study spec: {e}"), "check the path"))?;
    let mut spec = parse(&text, &file)?;
    let folder = path.parent().unwrap_or(Path::new("."));
    spec.base = folder.join(&spec.base);
    Ok(spec)
}

/// Parses a spec; `base` stays as written (relative to the spec's folder).
pub fn parse(text: &str, file: &str) -> Result<StudySpec, ScenarioError> {
    let mut d = Diags::new(text);
    let root = match raw::parse_document(text) {
        Ok(root) => root,
        Err(e) => {
            let at = e.span.map(|s| s.start..s.start);
            d.error(at, format!("not valid TOML: {}", e.message), "fix the TOML syntax at this point");
            return Err(d.into_error(file));
        }
    };
    let mut top = TableReader::root(&root);
    let spec = read_spec(&mut top, &mut d, text.len());
    top.finish(&mut d, &TOP_KEYS);
    if d.is_empty() {
        Ok(spec)
    } else {
        Err(d.into_error(file))
    }
}

/// Every top-level key, then the checks between keys.
fn read_spec(top: &mut TableReader<'_>, d: &mut Diags<'_>, text_len: usize) -> StudySpec {
    let (name, description, base, seeds) = read_identity(top, d);
    let (jump_at_ns, pause_at_ns, pause_every_ns, random_phase, phase_window_ns) = read_phase(top, d);
    let (target_ci_width, min_seeds, max_seeds, distinct_seeds) = read_seed_counts(top, d);
    let (pause_distribution, pause_shape) = read_pause_distribution(top, d);
    let slew_at_ns = duration_key(top, d, "slew_at", 5_000_000_000);
    let slew_for_ns = duration_key(top, d, "slew_for", 5_000_000_000);
    let axes = match top.take("axes") {
        Some(v) => {
            v.table(d, "[axes]", "write [axes] and one array per axis below it").map_or_else(Axes::default, |mut t| read_axes(&mut t, d))
        }
        None => {
            let end = Some(text_len..text_len);
            d.error(end, "missing [axes]", "add [axes] with at least one axis, e.g. margin = [0.0, 0.1]");
            Axes::default()
        }
    };
    for key in ["slew_at", "slew_for"] {
        if axes.server_slew.is_empty() {
            if let Some(span) = top.key_span(key) {
                let message = format!("`{key}` has no effect without a `server_slew` axis");
                d.error(Some(span), message, "add server_slew = [ … ] under [axes], or remove it");
            }
        }
    }
    if pause_distribution != PauseDistribution::Fixed && axes.pause_ns.is_empty() {
        d.error(
            top.key_span("pause_distribution"),
            "`pause_distribution` needs a `pause` axis (its scale: Pareto's minimum, lognormal's median)",
            "add pause = [\"100ms\"] under [axes]",
        );
    }
    StudySpec {
        name,
        description,
        base,
        seeds,
        axes,
        jump_at_ns,
        pause_at_ns,
        pause_every_ns,
        random_phase,
        phase_window_ns,
        target_ci_width,
        min_seeds,
        max_seeds,
        distinct_seeds,
        pause_distribution,
        pause_shape,
        slew_at_ns,
        slew_for_ns,
    }
}

/// Reports a problem with a key as a whole, at the key.
fn at_key(d: &mut Diags<'_>, v: &Val<'_>, message: impl Into<String>, fix: impl Into<String>) {
    d.error(v.key_span.clone(), message, fix);
}

/// A string value, or `None` for any other kind.
fn text<'a>(v: &Val<'a>) -> Option<&'a str> {
    match &v.node.value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A number (integers accepted), or `None` for any other kind.
fn number(node: &Node) -> Option<f64> {
    match node.value {
        Value::Float(f) => Some(f),
        Value::Integer(i) => Some(i as f64),
        _ => None,
    }
}

/// `name`, `description`, `base` and `seeds`.
fn read_identity(top: &mut TableReader<'_>, d: &mut Diags<'_>) -> (String, Option<String>, PathBuf, Range<u64>) {
    let kebab = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let name = match top.take("name") {
        Some(v) => match text(&v) {
            Some(s) if kebab(s) => s.to_string(),
            _ => {
                at_key(d, &v, "`name` must be kebab-case", "write e.g. name = \"drift-vs-margin\"");
                String::new()
            }
        },
        None => {
            d.error(Some(0..0), "missing `name`", "add name = \"my-study\" at the top");
            String::new()
        }
    };
    let description = top.take("description").and_then(|v| text(&v).map(str::to_string));
    let base = match top.take("base") {
        Some(v) => text(&v).map(PathBuf::from).unwrap_or_else(|| {
            at_key(d, &v, "`base` must be a string", "write the scenario path, e.g. base = \"base.toml\"");
            PathBuf::new()
        }),
        None => {
            d.error(Some(0..0), "missing `base`", "add base = \"PATH.toml\" (relative to this file)");
            PathBuf::new()
        }
    };
    let seeds = match top.take("seeds") {
        None => 0..8,
        Some(v) => match text(&v).map(|s| (s, leasesim_scenario::seeds::parse(s))) {
            Some((_, Ok(range))) => range,
            Some((s, Err(e))) => {
                let (what, fix) = e.explain(s);
                at_key(d, &v, what, fix);
                0..1
            }
            None => {
                at_key(d, &v, "`seeds` must be a string", "write seeds = \"0..20\"");
                0..1
            }
        },
    };
    (name, description, base, seeds)
}

/// A duration key, `default_ns` when absent (or bad, after reporting it).
fn duration_key(top: &mut TableReader<'_>, d: &mut Diags<'_>, key: &str, default_ns: u64) -> u64 {
    top.take(key).map_or(default_ns, |v| v.duration(d).unwrap_or(default_ns))
}

/// A string key with a few allowed words, mapped to their meaning; the
/// first word is the default.
fn choice<T: Copy>(top: &mut TableReader<'_>, d: &mut Diags<'_>, key: &str, words: &[(&str, T)], fix: &str) -> T {
    let Some(v) = top.take(key) else { return words[0].1 };
    match words.iter().find(|(word, _)| text(&v) == Some(word)) {
        Some(&(_, meaning)) => meaning,
        None => {
            let quoted: Vec<String> = words.iter().map(|(word, _)| format!("\"{word}\"")).collect();
            let listed = match quoted.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            };
            at_key(d, &v, format!("`{key}` must be {listed}"), fix);
            words[0].1
        }
    }
}

/// When the pauses and jumps happen: `jump_at`, `pause_at`, `pause_every`,
/// `fault_phase` and `phase_window`.
fn read_phase(top: &mut TableReader<'_>, d: &mut Diags<'_>) -> (u64, u64, u64, bool, u64) {
    let jump_at_ns = duration_key(top, d, "jump_at", 5_000_000_000);
    let pause_at_ns = duration_key(top, d, "pause_at", 3_000_000_000);
    let pause_every_ns = duration_key(top, d, "pause_every", 6_000_000_000);
    if pause_every_ns == 0 {
        d.error(top.key_span("pause_every"), "`pause_every` must be above zero", "write e.g. pause_every = \"6s\"");
    }
    let fix = "write fault_phase = \"random\" (offsets drawn per seed) or \"fixed\"";
    let random_phase = choice(top, d, "fault_phase", &[("fixed", false), ("random", true)], fix);
    let phase_window_ns = duration_key(top, d, "phase_window", pause_every_ns);
    if let Some(span) = top.key_span("phase_window").filter(|_| !random_phase) {
        d.error(
            Some(span),
            "`phase_window` has no effect without fault_phase = \"random\"",
            "add fault_phase = \"random\" or remove phase_window",
        );
    }
    (jump_at_ns, pause_at_ns, pause_every_ns, random_phase, phase_window_ns)
}

/// How many seeds a cell runs: `target_ci_width`, `min_seeds`,
/// `max_seeds`, `seeds_per_cell` (and their clash with `seeds`).
fn read_seed_counts(top: &mut TableReader<'_>, d: &mut Diags<'_>) -> (Option<f64>, u64, u64, bool) {
    let target_ci_width = top.take("target_ci_width").and_then(|v| match number(v.node) {
        Some(w) if w > 0.0 && w <= 1.0 => Some(w),
        _ => {
            at_key(
                d,
                &v,
                "`target_ci_width` must be a number in (0, 1]",
                "write e.g. target_ci_width = 0.25 (the widest 95 % interval of a cell's unsafe-run rate)",
            );
            None
        }
    });
    let mut count_key = |key: &str, default: u64| match top.take(key) {
        None => default,
        Some(v) => match v.node.value {
            Value::Integer(n) if (1..=100_000).contains(&n) => n as u64,
            _ => {
                at_key(d, &v, format!("`{key}` must be a whole number from 1 to 100000"), format!("write e.g. {key} = {default}"));
                default
            }
        },
    };
    let min_seeds = count_key("min_seeds", 8);
    let max_seeds = count_key("max_seeds", 64);
    for key in ["min_seeds", "max_seeds"] {
        if let Some(span) = top.key_span(key).filter(|_| target_ci_width.is_none()) {
            let fix = "add target_ci_width = 0.25, or use seeds = \"A..B\" for a fixed count";
            d.error(Some(span), format!("`{key}` needs target_ci_width"), fix);
        }
    }
    if min_seeds > max_seeds {
        let message = format!("`max_seeds` ({max_seeds}) is below `min_seeds` ({min_seeds})");
        d.error(top.key_span("max_seeds"), message, "make max_seeds at least min_seeds");
    }
    if let Some(span) = top.key_span("seeds").filter(|_| target_ci_width.is_some()) {
        d.error(
            Some(span),
            "`seeds` and target_ci_width both set how many seeds a cell runs",
            "remove `seeds` (adaptive cells run seeds 0, 1, … up to max_seeds) or remove target_ci_width",
        );
    }
    let fix = "write seeds_per_cell = \"distinct\" (cell i runs first + i × stride + k) or \"shared\" (every cell the same seeds)";
    let distinct_seeds = choice(top, d, "seeds_per_cell", &[("shared", false), ("distinct", true)], fix);
    (target_ci_width, min_seeds, max_seeds, distinct_seeds)
}

/// `pause_distribution` and its `pause_shape`.
fn read_pause_distribution(top: &mut TableReader<'_>, d: &mut Diags<'_>) -> (PauseDistribution, f64) {
    let words = [("fixed", PauseDistribution::Fixed), ("pareto", PauseDistribution::Pareto), ("lognormal", PauseDistribution::Lognormal)];
    let fix = "write pause_distribution = \"pareto\" (with pause_shape = 1.5, the tail index)";
    let distribution = choice(top, d, "pause_distribution", &words, fix);
    let default_shape = if distribution == PauseDistribution::Lognormal { 1.0 } else { 1.5 };
    let Some(v) = top.take("pause_shape") else { return (distribution, default_shape) };
    let shape = match number(v.node) {
        Some(x) if x.is_finite() && x > 0.0 && x <= 10.0 && distribution != PauseDistribution::Fixed => x,
        Some(_) if distribution == PauseDistribution::Fixed => {
            at_key(
                d,
                &v,
                "`pause_shape` has no effect without pause_distribution = \"pareto\" or \"lognormal\"",
                "add pause_distribution = \"pareto\" or remove pause_shape",
            );
            1.5
        }
        _ => {
            let fix = "write e.g. pause_shape = 1.5 (Pareto's tail index α, or lognormal's σ)";
            at_key(d, &v, "`pause_shape` must be a number in (0, 10]", fix);
            1.5
        }
    };
    (distribution, shape)
}

/// Every axis under `[axes]`: each an array of one or more values.
fn read_axes(t: &mut TableReader<'_>, d: &mut Diags<'_>) -> Axes {
    let mut axes = Axes::default();
    for v in t.take_all() {
        let key = v.key;
        if !AXIS_KEYS.contains(&key) {
            let message = format!("unknown axis `{key}`{}", did_you_mean(key, AXIS_KEYS));
            at_key(d, &v, message, format!("use one of: {}", AXIS_KEYS.join(", ")));
            continue;
        }
        let Value::Array(values) = &v.node.value else {
            at_key(d, &v, format!("axis `{key}` must be an array"), format!("write {key} = [ … ] with one or more values"));
            continue;
        };
        if values.is_empty() {
            at_key(d, &v, format!("axis `{key}` is empty"), "give at least one value, or remove the axis");
            continue;
        }
        if let Err(what) = read_axis(&mut axes, key, values) {
            at_key(d, &v, format!("axis `{key}` holds a value that is not {what}"), format!("every value of `{key}` must be {what}"));
        }
    }
    axes
}

/// Sets one axis from its values, or says what every value must be.
fn read_axis(axes: &mut Axes, key: &str, values: &[Node]) -> Result<(), &'static str> {
    let strings = || values.iter().map(|n| if let Value::String(s) = &n.value { Some(s.as_str()) } else { None });
    match key {
        "lease_expiry" => {
            axes.lease_expiry =
                strings().map(|s| strategy(s?)).collect::<Option<_>>().ok_or("leader-monotonic, leader-stamped-wall or writer-clock")?;
        }
        "leader_drift" | "client_drift" | "margin" | "s1_drift" | "server_slew" | "leader_clock_drift" | "drift_bound" => {
            let from_zero = key == "margin" || key == "drift_bound";
            let (lo, what) = if from_zero { (0.0, "a number in [0, 1)") } else { (-1.0, "a number in (-1, 1)") };
            let within = |f: &f64| f.is_finite() && *f >= lo && *f < 1.0 && (from_zero || *f > lo);
            let parsed: Vec<f64> = values.iter().map(|n| number(n).filter(within)).collect::<Option<_>>().ok_or(what)?;
            match key {
                "leader_drift" => axes.leader_drift = parsed,
                "client_drift" => axes.client_drift = parsed,
                "s1_drift" => axes.s1_drift = parsed,
                "server_slew" => axes.server_slew = parsed,
                "leader_clock_drift" => axes.leader_clock_drift = parsed,
                "drift_bound" => axes.drift_bound = parsed,
                _ => axes.margin = parsed,
            }
        }
        "wall_offset" | "leader_jump" => {
            let parsed: Vec<i64> = strings()
                .map(|s| parse_signed_duration(s?).ok())
                .collect::<Option<_>>()
                .ok_or("a signed duration string such as \"+10s\"")?;
            if key == "wall_offset" {
                axes.wall_offset_ns = parsed
            } else {
                axes.leader_jump_ns = parsed
            }
        }
        "ttl" | "pause" | "keepalive" | "hold" | "leader_pause" | "checkpoint" | "election_timeout" => {
            let what = "a duration string such as \"2s\" (a TTL or keep-alive above zero)";
            let parsed: Vec<u64> = strings().map(|s| parse_duration(s?).ok()).collect::<Option<_>>().ok_or(what)?;
            let positive = parsed.iter().all(|t| *t > 0);
            match key {
                "ttl" if positive => axes.ttl_ns = parsed,
                "keepalive" if positive => axes.keepalive_ns = parsed,
                "election_timeout" if positive => axes.election_timeout_ns = parsed,
                "pause" => axes.pause_ns = parsed,
                "hold" => axes.hold_ns = parsed,
                "leader_pause" => axes.leader_pause_ns = parsed,
                "checkpoint" => axes.checkpoint_ns = parsed,
                _ => return Err(what),
            }
        }
        "belief_from" => {
            let belief = |s: &str| match s {
                "send" => Some(BeliefFrom::Send),
                "receipt" => Some(BeliefFrom::Receipt),
                _ => None,
            };
            axes.belief_from = strings().map(|s| belief(s?)).collect::<Option<_>>().ok_or("\"send\" or \"receipt\"")?;
        }
        // `fenced`, the last of AXIS_KEYS (read_axes refuses the others).
        _ => {
            let boolean = |v: &Value| if let Value::Boolean(b) = v { Some(*b) } else { None };
            axes.fenced = values.iter().map(|n| boolean(&n.value)).collect::<Option<_>>().ok_or("true or false")?;
        }
    }
    Ok(())
}

/// Checks what only the base scenario can tell: every cell's keep-alive
/// interval is shorter than its TTL (the error points at the `keepalive`
/// axis of the spec file), and every TTL is one the cluster grants, at
/// least 1.5 × its longest election timeout (the error points at `ttl`;
/// otherwise every grant is refused and the runs end in engine-panic).
pub fn check_cells(spec: &StudySpec, base: &leasesim_scenario::Scenario, text: &str, file: &str) -> Result<(), ScenarioError> {
    let mut d = Diags::new(text);
    for cell in super::grid::cells(spec) {
        let s = super::grid::apply(base, spec, &cell);
        for w in &s.workloads {
            let leasesim_scenario::WorkloadKind::Lock(l) = &w.kind else { continue };
            let label = super::grid::label(&cell);
            if l.keepalive_ns >= l.ttl_ns {
                let (renew_ms, ttl_ms) = (l.keepalive_ns / 1_000_000, l.ttl_ns / 1_000_000);
                d.error(
                    axis_key_span(text, "keepalive"),
                    format!("cell `{label}` renews every {renew_ms} ms, not below its TTL of {ttl_ms} ms"),
                    "give keep-alive intervals below every TTL of the grid (etcd's clients renew at TTL / 3)",
                );
                return Err(d.into_error(file));
            }
            let min_ttl_ns = leasesim_core::service::state_machine::min_ttl_ns(s.cluster.election_timeout_ns.1);
            if l.ttl_ns < min_ttl_ns {
                let (ttl_ms, min_ms) = (l.ttl_ns / 1_000_000, min_ttl_ns / 1_000_000);
                d.error(
                    axis_key_span(text, "ttl"),
                    format!(
                        "cell `{label}` has a TTL of {ttl_ms} ms, below the cluster's minimum of {min_ms} ms (1.5 × the longest election timeout)"
                    ),
                    "give TTLs of at least 1.5 × the longest election timeout, or shorten the base scenario's election_timeout",
                );
                return Err(d.into_error(file));
            }
        }
    }
    Ok(())
}

/// Where `[axes]`'s `axis` is written in the spec's text (`None`, the top
/// of the file, when the text does not hold it).
fn axis_key_span(text: &str, axis: &str) -> Option<Range<usize>> {
    let root = raw::parse_document(text).ok()?;
    let axes = TableReader::root(&root).take("axes")?;
    let Value::Table(entries) = &axes.node.value else { return None };
    entries.iter().find(|entry| entry.key == axis).and_then(|entry| entry.span())
}

fn strategy(name: &str) -> Option<ExpiryStrategy> {
    match name {
        "leader-monotonic" => Some(ExpiryStrategy::LeaderMonotonic),
        "leader-stamped-wall" => Some(ExpiryStrategy::LeaderStampedWall),
        "writer-clock" => Some(ExpiryStrategy::WriterClock),
        _ => None,
    }
}
