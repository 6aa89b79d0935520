//! The study spec file (docs/STUDY-FORMAT.md): a base scenario and the axes
//! of a grid over its parameters, validated with `file:line:col` errors in
//! the scenario loader's format, because a study is hours of CPU and a typo
//! found after the sweep is hours lost.
//!
//! Line numbers come from a scan of the source for the key (the `toml`
//! crate's `Table` keeps no spans); syntax errors carry the parser's span.

use std::ops::Range;
use std::path::{Path, PathBuf};

use leasesim_core::ExpiryStrategy;
use toml::{Table, Value};

use crate::scenario::duration::{parse_duration, parse_signed_duration};
use crate::scenario::{BeliefFrom, Diagnostic, Location, ScenarioError, Snippet};

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
const AXIS_KEYS: [&str; 14] = [
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
    let mut d = Diags { text, file, list: Vec::new() };
    let table: Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            d.at_offset(at, format!("not valid TOML: {}", e.message().trim()), "fix the TOML syntax at this point");
            return Err(d.finish());
        }
    };
    for key in table.keys().filter(|k| !TOP_KEYS.contains(&k.as_str())) {
        d.key(None, key, format!("unknown key `{key}`"), format!("use one of: {}", TOP_KEYS.join(", ")));
    }
    let name = match table.get("name") {
        Some(Value::String(s)) if !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') => s.clone(),
        Some(_) => {
            d.key(None, "name", "`name` must be kebab-case", "write e.g. name = \"drift-vs-margin\"");
            String::new()
        }
        None => {
            d.at_offset(0, "missing `name`", "add name = \"my-study\" at the top");
            String::new()
        }
    };
    let description = table.get("description").and_then(Value::as_str).map(str::to_string);
    let base = match table.get("base") {
        Some(Value::String(s)) => PathBuf::from(s),
        Some(_) => {
            d.key(None, "base", "`base` must be a string", "write the scenario path, e.g. base = \"base.toml\"");
            PathBuf::new()
        }
        None => {
            d.at_offset(0, "missing `base`", "add base = \"PATH.toml\" (relative to this file)");
            PathBuf::new()
        }
    };
    let seeds = match table.get("seeds") {
        None => 0..8,
        Some(Value::String(s)) => match crate::scenario::seeds::parse(s) {
            Ok(r) => r,
            Err(e) => {
                let (what, fix) = e.explain(s);
                d.key(None, "seeds", what, fix);
                0..1
            }
        },
        Some(_) => {
            d.key(None, "seeds", "`seeds` must be a string", "write seeds = \"0..20\"");
            0..1
        }
    };
    let jump_at_ns = d.duration_key(None, table.get("jump_at"), "jump_at", 5_000_000_000);
    let pause_at_ns = d.duration_key(None, table.get("pause_at"), "pause_at", 3_000_000_000);
    let pause_every_ns = d.duration_key(None, table.get("pause_every"), "pause_every", 6_000_000_000);
    if pause_every_ns == 0 {
        d.key(None, "pause_every", "`pause_every` must be above zero", "write e.g. pause_every = \"6s\"");
    }
    let random_phase = match table.get("fault_phase") {
        None => false,
        Some(Value::String(v)) if v == "fixed" => false,
        Some(Value::String(v)) if v == "random" => true,
        Some(_) => {
            d.key(
                None,
                "fault_phase",
                "`fault_phase` must be \"fixed\" or \"random\"",
                "write fault_phase = \"random\" (offsets drawn per seed) or \"fixed\"",
            );
            false
        }
    };
    let phase_window_ns = d.duration_key(None, table.get("phase_window"), "phase_window", pause_every_ns);
    if table.contains_key("phase_window") && !random_phase {
        d.key(
            None,
            "phase_window",
            "`phase_window` has no effect without fault_phase = \"random\"",
            "add fault_phase = \"random\" or remove phase_window",
        );
    }
    let target_ci_width = match table.get("target_ci_width") {
        None => None,
        Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
            Some(w) if w > 0.0 && w <= 1.0 => Some(w),
            _ => {
                d.key(
                    None,
                    "target_ci_width",
                    "`target_ci_width` must be a number in (0, 1]",
                    "write e.g. target_ci_width = 0.25 (the widest 95 % interval of a cell's unsafe-run rate)",
                );
                None
            }
        },
    };
    let mut count_key = |key: &str, default: u64| match table.get(key) {
        None => default,
        Some(Value::Integer(n)) if *n >= 1 && *n <= 100_000 => *n as u64,
        Some(_) => {
            d.key(None, key, format!("`{key}` must be a whole number from 1 to 100000"), format!("write e.g. {key} = {default}"));
            default
        }
    };
    let min_seeds = count_key("min_seeds", 8);
    let max_seeds = count_key("max_seeds", 64);
    for key in ["min_seeds", "max_seeds"] {
        if table.contains_key(key) && target_ci_width.is_none() {
            d.key(
                None,
                key,
                format!("`{key}` needs target_ci_width"),
                "add target_ci_width = 0.25, or use seeds = \"A..B\" for a fixed count",
            );
        }
    }
    if min_seeds > max_seeds {
        d.key(
            None,
            "max_seeds",
            format!("`max_seeds` ({max_seeds}) is below `min_seeds` ({min_seeds})"),
            "make max_seeds at least min_seeds",
        );
    }
    if target_ci_width.is_some() && table.contains_key("seeds") {
        d.key(
            None,
            "seeds",
            "`seeds` and target_ci_width both set how many seeds a cell runs",
            "remove `seeds` (adaptive cells run seeds 0, 1, … up to max_seeds) or remove target_ci_width",
        );
    }
    let distinct_seeds = match table.get("seeds_per_cell") {
        None => false,
        Some(Value::String(v)) if v == "shared" => false,
        Some(Value::String(v)) if v == "distinct" => true,
        Some(_) => {
            d.key(
                None,
                "seeds_per_cell",
                "`seeds_per_cell` must be \"shared\" or \"distinct\"",
                "write seeds_per_cell = \"distinct\" (cell i runs first + i × stride + k) or \"shared\" (every cell the same seeds)",
            );
            false
        }
    };
    let pause_distribution = match table.get("pause_distribution") {
        None => PauseDistribution::Fixed,
        Some(Value::String(v)) if v == "fixed" => PauseDistribution::Fixed,
        Some(Value::String(v)) if v == "pareto" => PauseDistribution::Pareto,
        Some(Value::String(v)) if v == "lognormal" => PauseDistribution::Lognormal,
        Some(_) => {
            d.key(
                None,
                "pause_distribution",
                "`pause_distribution` must be \"fixed\", \"pareto\" or \"lognormal\"",
                "write pause_distribution = \"pareto\" (with pause_shape = 1.5, the tail index)",
            );
            PauseDistribution::Fixed
        }
    };
    let pause_shape = match table.get("pause_shape") {
        None => match pause_distribution {
            PauseDistribution::Lognormal => 1.0,
            _ => 1.5,
        },
        Some(v) => match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
            Some(x) if x.is_finite() && x > 0.0 && x <= 10.0 && pause_distribution != PauseDistribution::Fixed => x,
            Some(_) if pause_distribution == PauseDistribution::Fixed => {
                d.key(
                    None,
                    "pause_shape",
                    "`pause_shape` has no effect without pause_distribution = \"pareto\" or \"lognormal\"",
                    "add pause_distribution = \"pareto\" or remove pause_shape",
                );
                1.5
            }
            _ => {
                d.key(
                    None,
                    "pause_shape",
                    "`pause_shape` must be a number in (0, 10]",
                    "write e.g. pause_shape = 1.5 (Pareto's tail index α, or lognormal's σ)",
                );
                1.5
            }
        },
    };
    let slew_at_ns = d.duration_key(None, table.get("slew_at"), "slew_at", 5_000_000_000);
    let slew_for_ns = d.duration_key(None, table.get("slew_for"), "slew_for", 5_000_000_000);
    let axes = match table.get("axes") {
        Some(Value::Table(t)) => parse_axes(t, &mut d),
        Some(_) => {
            d.key(None, "axes", "`axes` must be a table", "write [axes] and one array per axis below it");
            Axes::default()
        }
        None => {
            d.at_offset(text.len(), "missing [axes]", "add [axes] with at least one axis, e.g. margin = [0.0, 0.1]");
            Axes::default()
        }
    };
    for key in ["slew_at", "slew_for"] {
        if table.contains_key(key) && axes.server_slew.is_empty() {
            d.key(
                None,
                key,
                format!("`{key}` has no effect without a `server_slew` axis"),
                "add server_slew = [ … ] under [axes], or remove it",
            );
        }
    }
    if pause_distribution != PauseDistribution::Fixed && axes.pause_ns.is_empty() {
        d.key(
            None,
            "pause_distribution",
            "`pause_distribution` needs a `pause` axis (its scale: Pareto's minimum, lognormal's median)",
            "add pause = [\"100ms\"] under [axes]",
        );
    }
    if !d.list.is_empty() {
        return Err(d.finish());
    }
    Ok(StudySpec {
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
    })
}

fn parse_axes(t: &Table, d: &mut Diags<'_>) -> Axes {
    let mut axes = Axes::default();
    for (key, value) in t {
        let Some(values) = value.as_array() else {
            if AXIS_KEYS.contains(&key.as_str()) {
                d.key(Some("axes"), key, format!("axis `{key}` must be an array"), format!("write {key} = [ … ] with one or more values"));
            } else {
                d.key(Some("axes"), key, format!("unknown axis `{key}`"), format!("use one of: {}", AXIS_KEYS.join(", ")));
            }
            continue;
        };
        if values.is_empty() {
            d.key(Some("axes"), key, format!("axis `{key}` is empty"), "give at least one value, or remove the axis");
            continue;
        }
        let bad = |d: &mut Diags<'_>, what: &str| {
            d.key(
                Some("axes"),
                key,
                format!("axis `{key}` holds a value that is not {what}"),
                format!("every value of `{key}` must be {what}"),
            );
        };
        match key.as_str() {
            "lease_expiry" => {
                let parsed: Option<Vec<ExpiryStrategy>> = values.iter().map(|v| strategy(v.as_str()?)).collect();
                match parsed {
                    Some(v) => axes.lease_expiry = v,
                    None => bad(d, "leader-monotonic, leader-stamped-wall or writer-clock"),
                }
            }
            "leader_drift" | "client_drift" | "margin" | "s1_drift" | "server_slew" => {
                let (lo, hi, what) = if key == "margin" { (0.0, 1.0, "a number in [0, 1)") } else { (-1.0, 1.0, "a number in (-1, 1)") };
                let parsed: Option<Vec<f64>> = values
                    .iter()
                    .map(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                    .map(|f| f.filter(|f| f.is_finite() && *f >= lo && *f < hi && (key == "margin" || *f > lo)))
                    .collect();
                match (parsed, key.as_str()) {
                    (Some(v), "leader_drift") => axes.leader_drift = v,
                    (Some(v), "client_drift") => axes.client_drift = v,
                    (Some(v), "s1_drift") => axes.s1_drift = v,
                    (Some(v), "server_slew") => axes.server_slew = v,
                    (Some(v), _) => axes.margin = v,
                    (None, _) => bad(d, what),
                }
            }
            "wall_offset" | "leader_jump" => {
                let parsed: Option<Vec<i64>> = values.iter().map(|v| parse_signed_duration(v.as_str()?).ok()).collect();
                match (parsed, key.as_str()) {
                    (Some(v), "wall_offset") => axes.wall_offset_ns = v,
                    (Some(v), _) => axes.leader_jump_ns = v,
                    (None, _) => bad(d, "a signed duration string such as \"+10s\""),
                }
            }
            "ttl" | "pause" | "keepalive" | "hold" => {
                let parsed: Option<Vec<u64>> = values.iter().map(|v| parse_duration(v.as_str()?).ok()).collect();
                match (parsed, key.as_str()) {
                    (Some(v), "ttl") if v.iter().all(|t| *t > 0) => axes.ttl_ns = v,
                    (Some(v), "keepalive") if v.iter().all(|t| *t > 0) => axes.keepalive_ns = v,
                    (Some(v), "pause") => axes.pause_ns = v,
                    (Some(v), "hold") => axes.hold_ns = v,
                    _ => bad(d, "a duration string such as \"2s\" (a TTL or keep-alive above zero)"),
                }
            }
            "belief_from" => {
                let parsed: Option<Vec<BeliefFrom>> = values
                    .iter()
                    .map(|v| match v.as_str()? {
                        "send" => Some(BeliefFrom::Send),
                        "receipt" => Some(BeliefFrom::Receipt),
                        _ => None,
                    })
                    .collect();
                match parsed {
                    Some(v) => axes.belief_from = v,
                    None => bad(d, "\"send\" or \"receipt\""),
                }
            }
            "fenced" => match values.iter().map(Value::as_bool).collect::<Option<Vec<bool>>>() {
                Some(v) => axes.fenced = v,
                None => bad(d, "true or false"),
            },
            _ => d.key(Some("axes"), key, format!("unknown axis `{key}`"), format!("use one of: {}", AXIS_KEYS.join(", "))),
        }
    }
    axes
}

/// Checks what only the base scenario can tell: every cell's keep-alive
/// interval is shorter than its TTL (the error points at the `keepalive`
/// axis of the spec file), and every TTL is one the cluster grants, at
/// least 1.5 × its longest election timeout (the error points at `ttl`;
/// otherwise every grant is refused and the runs end in engine-panic).
pub fn check_cells(spec: &StudySpec, base: &crate::scenario::Scenario, text: &str, file: &str) -> Result<(), ScenarioError> {
    let mut d = Diags { text, file, list: Vec::new() };
    for cell in super::grid::cells(spec) {
        let s = super::grid::apply(base, spec, &cell);
        for w in &s.workloads {
            if let crate::scenario::WorkloadKind::Lock(l) = &w.kind {
                if l.keepalive_ns >= l.ttl_ns {
                    d.key(
                        Some("axes"),
                        "keepalive",
                        format!(
                            "cell `{}` renews every {} ms, not below its TTL of {} ms",
                            super::grid::label(&cell),
                            l.keepalive_ns / 1_000_000,
                            l.ttl_ns / 1_000_000
                        ),
                        "give keep-alive intervals below every TTL of the grid (etcd's clients renew at TTL / 3)",
                    );
                    return Err(d.finish());
                }
                let min_ttl_ns = leasesim_core::service::state_machine::min_ttl_ns(s.cluster.election_timeout_ns.1);
                if l.ttl_ns < min_ttl_ns {
                    d.key(
                        Some("axes"),
                        "ttl",
                        format!(
                            "cell `{}` has a TTL of {} ms, below the cluster's minimum of {} ms (1.5 × the longest election timeout)",
                            super::grid::label(&cell),
                            l.ttl_ns / 1_000_000,
                            min_ttl_ns / 1_000_000
                        ),
                        "give TTLs of at least 1.5 × the longest election timeout, or shorten the base scenario's election_timeout",
                    );
                    return Err(d.finish());
                }
            }
        }
    }
    Ok(())
}

fn strategy(name: &str) -> Option<ExpiryStrategy> {
    match name {
        "leader-monotonic" => Some(ExpiryStrategy::LeaderMonotonic),
        "leader-stamped-wall" => Some(ExpiryStrategy::LeaderStampedWall),
        "writer-clock" => Some(ExpiryStrategy::WriterClock),
        _ => None,
    }
}

/// Diagnostics for one spec file, located by scanning the source.
struct Diags<'a> {
    text: &'a str,
    file: &'a str,
    list: Vec<Diagnostic>,
}

impl Diags<'_> {
    fn at_offset(&mut self, offset: usize, message: impl Into<String>, fix: impl Into<String>) {
        let offset = offset.min(self.text.len());
        let line = self.text[..offset].matches('\n').count() + 1;
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let col = self.text[line_start..offset].chars().count() + 1;
        self.push(line, col, message.into(), fix.into());
    }

    /// An error at `key = …`, inside `[section]` if given (the first
    /// occurrence after the section header).
    fn key(&mut self, section: Option<&str>, key: &str, message: impl Into<String>, fix: impl Into<String>) {
        let mut in_section = section.is_none();
        let mut found = (1, 1);
        for (n, line) in self.text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                in_section = section.is_some_and(|s| trimmed.trim_end() == format!("[{s}]"));
                continue;
            }
            let is_key = trimmed.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='));
            if in_section && is_key {
                found = (n + 1, line.len() - trimmed.len() + 1);
                break;
            }
        }
        self.push(found.0, found.1, message.into(), fix.into());
    }

    fn duration_key(&mut self, section: Option<&str>, value: Option<&Value>, key: &str, default_ns: u64) -> u64 {
        match value {
            None => default_ns,
            Some(v) => match v.as_str().map(parse_duration) {
                Some(Ok(ns)) => ns,
                _ => {
                    self.key(section, key, format!("`{key}` must be a duration string"), format!("write e.g. {key} = \"5s\""));
                    default_ns
                }
            },
        }
    }

    fn push(&mut self, line: usize, col: usize, message: String, fix: String) {
        let text = self.text.lines().nth(line - 1).unwrap_or("").to_string();
        let width = text.chars().count().saturating_sub(col - 1).max(1);
        let snippet = Some(Snippet { text, width });
        self.list.push(Diagnostic { location: Some(Location { line, col }), message, fix, snippet });
    }

    fn finish(mut self) -> ScenarioError {
        self.list.sort_by_key(|d| d.location);
        ScenarioError { file: self.file.to_string(), diagnostics: self.list }
    }
}
