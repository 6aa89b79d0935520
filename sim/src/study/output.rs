//! Writes a study's results: `results.json` (everything), `results.csv`
//! (one row per cell, for spreadsheets and the report's tables) and the SVG
//! figures (heatmaps of violation rate over leader drift × margin per
//! strategy with the theoretical boundary; unavailability after a holder
//! crash over TTL), whichever the study's axes allow.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use leasesim_reports::study_plots::{heatmap_svg, line_chart_svg, Edge, Heatmap, Series};

use super::metrics::Rate;

use super::{CellResult, StudyResults};

/// Writes every output into `dir`; returns the files written.
pub fn write_all(dir: &Path, results: &StudyResults) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> std::io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    put("results.json", serde_json::to_string_pretty(results).expect("results serialize") + "\n")?;
    put("results.csv", csv(results))?;
    // Per-run and per-hand-over rows are many (a study has thousands of
    // runs and tens of thousands of hand-overs): gzip keeps them a tenth
    // the size (`zcat`, or Python's gzip module, reads them).
    let mut put_gz = |name: &str, text: String| -> std::io::Result<()> {
        let path = dir.join(name);
        let mut z = flate2::write::GzEncoder::new(std::fs::File::create(&path)?, flate2::Compression::best());
        std::io::Write::write_all(&mut z, text.as_bytes())?;
        z.finish()?;
        written.push(path);
        Ok(())
    };
    put_gz("runs.csv.gz", runs_csv(results))?;
    put_gz("handovers.csv.gz", handovers_csv(results))?;
    let mut put = |name: &str, text: String| -> std::io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    for (name, svg) in heatmaps(&figure_cells(results)) {
        put(&name, svg)?;
    }
    if let Some(svg) = unavailability_chart(results) {
        put("unavailability-vs-ttl.svg", svg)?;
    }
    // The frozen model against the runs, where the model reaches.
    if let Some(text) = super::calibration::calibration_csv(results) {
        put("calibration.csv", text)?;
    }
    if let Some(svg) = super::calibration::calibration_svg(results) {
        put("calibration.svg", svg)?;
    }
    if let Some(text) = super::calibration::comparisons_csv(results) {
        put("comparisons.csv", text)?;
    }
    Ok(written)
}

const CSV_PARAMS: &str = "cell,lease_expiry,fenced,belief_from,ttl_ms,keepalive_ms,pause_ms,hold_ms,wall_offset_ms,leader_jump_ms,\
client_drift,leader_drift,s1_drift,server_slew,margin";
const CSV_FIGURES: &str = "runs_unsafe,unsafe_rate,unsafe_lo,unsafe_hi,handovers,handovers_release,handovers_expiry,\
handovers_overlapping,overlap_rate,overlap_lo,overlap_hi,max_overlap_ms,edge_margin,fixed_delay_ms,observed_delay_ms,\
runs_modelled,runs_not_modelled,runs_predicted_overlap,runs_measured_overlap,runs_agree,run_agreement,lease_hours,overlap_per_lease_hour,early_expiry_per_lease_hour,min_margin_ms,stale_rejected,stale_accepted,\
unavailability_samples,unavailability_mean_ms,unavailability_max_ms,false_expiries,predicted,measured,unsafe_invariants,agreement";

/// Every invariant id a run can report, in a fixed order: one CSV column
/// each, so an invariant that fires is never folded into "other".
pub fn invariant_columns() -> Vec<&'static str> {
    leasesim_scenario::invariant_ids().chain(["engine-panic"]).collect()
}

pub fn csv(results: &StudyResults) -> String {
    let ids = invariant_columns();
    let mut out = format!("{CSV_PARAMS},runs,runs_with_violation");
    for id in &ids {
        let _ = write!(out, ",{}", id.replace('-', "_"));
    }
    let _ = writeln!(out, ",{CSV_FIGURES}");
    for c in &results.cells {
        let m = &c.metrics;
        let mut fields = cell_params_fields(c);
        fields.extend(ids.iter().map(|id| m.invariants.get(*id).copied().unwrap_or(0).to_string()));
        fields.extend(cell_figure_fields(c));
        let _ = writeln!(out, "{}", fields.join(","));
    }
    out
}

/// Milliseconds with three decimals, for the CSV files.
fn ms(ns: i128) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// An optional CSV field: empty when absent.
fn opt(v: Option<String>) -> String {
    v.unwrap_or_default()
}

/// A cell's row of `csv` up to its invariant counts: `CSV_PARAMS`, runs,
/// runs_with_violation.
fn cell_params_fields(c: &CellResult) -> Vec<String> {
    let (p, m) = (&c.params, &c.metrics);
    vec![
        c.index.to_string(),
        opt(p.lease_expiry.map(str::to_string)),
        opt(p.fenced.map(|v| v.to_string())),
        opt(p.belief_from.map(str::to_string)),
        opt(p.ttl_ns.map(|v| ms(v.into()))),
        opt(p.keepalive_ns.map(|v| ms(v.into()))),
        opt(p.pause_ns.map(|v| ms(v.into()))),
        opt(p.hold_ns.map(|v| ms(v.into()))),
        opt(p.wall_offset_ns.map(|v| ms(v.into()))),
        opt(p.leader_jump_ns.map(|v| ms(v.into()))),
        opt(p.client_drift.map(|v| v.to_string())),
        opt(p.leader_drift.map(|v| v.to_string())),
        opt(p.s1_drift.map(|v| v.to_string())),
        opt(p.server_slew.map(|v| v.to_string())),
        opt(p.margin.map(|v| v.to_string())),
        m.runs.to_string(),
        m.runs_with_violation.to_string(),
    ]
}

/// A cell's row of `csv` after its invariant counts: `CSV_FIGURES`.
fn cell_figure_fields(c: &CellResult) -> Vec<String> {
    let m = &c.metrics;
    let (u, o, a) = (&c.rates.unsafe_runs, &c.rates.overlapping_handovers, &c.consistency_check);
    vec![
        m.runs_unsafe.to_string(),
        format!("{:.4}", u.p),
        format!("{:.4}", u.lo),
        format!("{:.4}", u.hi),
        m.handovers.to_string(),
        m.handovers_by_release.to_string(),
        m.handovers_by_expiry.to_string(),
        m.handovers_overlapping.to_string(),
        format!("{:.4}", o.p),
        format!("{:.4}", o.lo),
        format!("{:.4}", o.hi),
        ms(m.max_overlap_ns.into()),
        opt(a.edge_margin.map(|v| format!("{v:.4}"))),
        opt(a.fixed_delay_ns.map(|v| ms(v.into()))),
        opt(a.observed_delay_ns.map(|v| ms(v.into()))),
        a.runs.to_string(),
        a.not_modelled_runs.to_string(),
        a.predicted_overlap_runs.to_string(),
        a.measured_overlap_runs.to_string(),
        a.agree_runs.to_string(),
        a.verdict.to_string(),
        format!("{:.4}", m.lease_hours),
        format!("{:.2}", m.belief_overlap_per_lease_hour),
        format!("{:.2}", m.early_expiry_per_lease_hour),
        opt(m.min_margin_ns.map(|v| ms(v.into()))),
        m.stale_rejected.to_string(),
        m.stale_accepted.to_string(),
        m.unavailability_samples.to_string(),
        opt(m.unavailability_mean_ns.map(|v| ms(v.into()))),
        opt(m.unavailability_max_ns.map(|v| ms(v.into()))),
        m.false_expiries.to_string(),
        opt(c.prediction.as_ref().map(|p| p.verdict.to_string())),
        c.measured.to_string(),
        c.unsafe_invariants.join(" "),
        c.agreement.to_string(),
    ]
}

/// One row per run: its cell, seed, fault times, every invariant's count
/// and every figure, the refined prediction beside what it measured, and
/// last `not_judged`: the invariants its checkers left undecided, space
/// separated (empty when every one was judged). It is the last column so
/// that readers of files written before it, which index by name, keep
/// working.
pub fn runs_csv(results: &StudyResults) -> String {
    let ids = invariant_columns();
    let mut out = String::from("cell,seed,pause_at_ms,jump_at_ms,base_shift_ms");
    for id in &ids {
        let _ = write!(out, ",{}", id.replace('-', "_"));
    }
    out.push_str(
        ",unsafe,lease_hours,min_margin_ms,handovers,handovers_release,handovers_expiry,handovers_overlapping,max_overlap_ms,\
stale_rejected,stale_accepted,unavailability_samples,unavailability_mean_ms,false_expiries,\
predicted_gap_ms,modelled,predicted_overlap,measured_overlap,observed_delay_ms,max_renewal_lag_ms,longest_pause_ms,leaders,digest,not_judged\n",
    );
    for r in &results.runs {
        let m = &r.metrics;
        let mut f = vec![
            r.cell.to_string(),
            r.seed.to_string(),
            ms(r.phase.pause_at_ns.into()),
            ms(r.phase.jump_at_ns.into()),
            ms(r.phase.base_shift_ns.into()),
        ];
        f.extend(ids.iter().map(|id| m.invariants.get(*id).copied().unwrap_or(0).to_string()));
        let unav = &m.unavailability_ns;
        let p = r.predicted.as_ref();
        f.extend([
            u8::from(m.invariants.keys().any(|id| leasesim_scenario::is_safety(id))).to_string(),
            format!("{:.6}", m.lease_hours),
            m.min_margin_ns.map(|v| ms(v.into())).unwrap_or_default(),
            m.handovers.len().to_string(),
            m.handovers.iter().filter(|h| h.cause == "release").count().to_string(),
            m.handovers.iter().filter(|h| h.cause == "expiry").count().to_string(),
            m.handovers.iter().filter(|h| h.overlap_ns > 0).count().to_string(),
            ms(m.handovers.iter().map(|h| h.overlap_ns).max().unwrap_or(0).into()),
            m.stale_rejected.to_string(),
            m.stale_accepted.to_string(),
            unav.len().to_string(),
            if unav.is_empty() { String::new() } else { ms((unav.iter().map(|v| *v as u128).sum::<u128>() / unav.len() as u128) as i128) },
            m.false_expiries.to_string(),
            p.map(|p| ms(p.predicted_gap_ns.into())).unwrap_or_default(),
            p.map(|p| u8::from(p.modelled).to_string()).unwrap_or_default(),
            p.map(|p| u8::from(p.predicted_overlap).to_string()).unwrap_or_default(),
            p.map(|p| u8::from(p.measured_overlap).to_string()).unwrap_or_default(),
            p.and_then(|p| p.observed_delay_ns).map(|v| ms(v.into())).unwrap_or_default(),
            p.map(|p| ms(p.max_renewal_lag_ns.into())).unwrap_or_default(),
            ms(m.longest_pause_ns.into()),
            m.leaders.iter().map(|n| format!("s{n}")).collect::<Vec<_>>().join(" "),
            r.digest.clone(),
            r.not_judged.join(" "),
        ]);
        let _ = writeln!(out, "{}", f.join(","));
    }
    out
}

/// One row per hand-over episode (a key passing between two clients),
/// counted once, with its gap, overlap and cause.
pub fn handovers_csv(results: &StudyResults) -> String {
    let mut out = String::from("cell,seed,key,from_client,to_client,cause,gap_ms,overlap_ms,leader,renewal_lag_ms\n");
    for r in &results.runs {
        for h in &r.metrics.handovers {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{:.3},{:.3},{},{:.3}",
                r.cell,
                r.seed,
                h.key,
                h.from_client,
                h.to_client,
                h.cause,
                h.gap_ns as f64 / 1e6,
                h.overlap_ns as f64 / 1e6,
                h.leader.map(|n| format!("s{n}")).unwrap_or_default(),
                h.renewal_lag_ns as f64 / 1e6
            );
        }
    }
    out
}

fn sorted_unique(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// What the heatmaps read of a cell: the fields they draw, deserialized
/// from the cell's JSON. A study run converts its own cells through JSON
/// too (`figure_cells`), so `--redraw` from a committed results.json draws
/// exactly what the run drew.
#[derive(Debug, Deserialize)]
struct FigureCell {
    /// Every grid axis by name (`CellParams`' fields): `null` where the
    /// study keeps the base scenario's value.
    params: BTreeMap<String, serde_json::Value>,
    metrics: FigureMetrics,
    consistency_check: FigureCheck,
    prediction: Option<FigurePrediction>,
}

#[derive(Debug, Deserialize)]
struct FigureMetrics {
    runs: u64,
    runs_unsafe: u64,
    /// Runs per invariant that fired: the edges bound `lock-belief-overlap`
    /// only, so a cell says how many of its unsafe runs had one.
    invariant_runs: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct FigureCheck {
    edge_margin: Option<f64>,
    fixed_delay_ns: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct FigurePrediction {
    rho: f64,
    ttl_ns: u64,
    delay_ns: u64,
}

impl FigureCell {
    fn num(&self, axis: &str) -> Option<f64> {
        self.params.get(axis).and_then(serde_json::Value::as_f64)
    }
    fn text(&self, axis: &str) -> Option<&str> {
        self.params.get(axis).and_then(serde_json::Value::as_str)
    }
}

/// The part of results.json that `--redraw` reads.
#[derive(Debug, Deserialize)]
struct FigureInput {
    name: String,
    build: String,
    cells: Vec<FigureCell>,
}

fn figure_cells(results: &StudyResults) -> Vec<FigureCell> {
    let json = serde_json::to_value(&results.cells).expect("cells serialize");
    serde_json::from_value(json).expect("a cell's JSON has the figures' fields")
}

/// `leasesim study SPEC --redraw DIR`: reads `DIR/results.json` and
/// rewrites the heatmaps only (no run, so results.json keeps the build
/// that ran the study). Old `heatmap-*.svg` files are removed first, so a
/// panel the new layout no longer draws does not linger. `study` is the
/// spec's name, which the file must carry. Returns the build recorded in
/// the file and the files written; an error names the file.
pub fn redraw(dir: &Path, study: &str) -> Result<(String, Vec<PathBuf>), String> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: cannot read the study's results: {e}", path.display()))?;
    let input: FigureInput = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: not a study's results.json: {e}", path.display(), e.line(), e.column()))?;
    if input.name != study {
        return Err(format!("{}: the results of study `{}`, not of `{study}` (the spec's name)", path.display(), input.name));
    }
    let cannot = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    for entry in std::fs::read_dir(dir).map_err(|e| cannot(dir, e))? {
        let old = entry.map_err(|e| cannot(dir, e))?.path();
        let name = old.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("heatmap-") && name.ends_with(".svg") {
            std::fs::remove_file(&old).map_err(|e| cannot(&old, e))?;
        }
    }
    let mut written = Vec::new();
    for (name, svg) in heatmaps(&input.cells) {
        let file = dir.join(name);
        std::fs::write(&file, svg).map_err(|e| cannot(&file, e))?;
        written.push(file);
    }
    Ok((input.build, written))
}

/// The invariant the theory's edges bound.
const BELIEF_OVERLAP: &str = "lock-belief-overlap";

/// Axes a heatmap never pools: its own two, and the three that name a
/// panel even when a study does not vary them (the file names the report
/// links to).
const PANEL_AXES: [&str; 3] = ["lease_expiry", "fenced", "belief_from"];
const PLANE_AXES: [&str; 2] = ["leader_drift", "margin"];

/// One heatmap per strategy (and fencing / belief start) and per value of
/// every other axis the study varied, over leader drift × margin: cells
/// are never pooled over a hidden axis. Each cell shows the fraction of
/// runs with any safety violation, k/n and its Wilson 95 % interval, with
/// the refined edge and the classic symmetric bound drawn per column at
/// their exact values.
fn heatmaps(all: &[FigureCell]) -> Vec<(String, String)> {
    let cells: Vec<&FigureCell> = all.iter().filter(|c| c.num("leader_drift").is_some() && c.num("margin").is_some()).collect();
    if cells.is_empty() {
        return Vec::new();
    }
    let xs = sorted_unique(cells.iter().filter_map(|c| c.num("leader_drift")));
    let ys = sorted_unique(cells.iter().filter_map(|c| c.num("margin")));
    let hidden = hidden_axes(&cells);
    let mut groups: Vec<(String, String)> = cells.iter().map(|c| group_of(c, &hidden)).collect();
    groups.sort();
    groups.dedup();
    let mut out = Vec::new();
    for (title, slug) in groups {
        let mine: Vec<&FigureCell> = cells.iter().copied().filter(|c| group_of(c, &hidden).1 == slug).collect();
        let heatmap = group_heatmap(&title, &mine, &xs, &ys);
        out.push((format!("heatmap-{slug}.svg"), heatmap_svg(&heatmap)));
    }
    out
}

/// Every axis other than the plane's and the panel-naming ones that takes
/// more than one value among `cells`, with whether any of its values is
/// negative (then positive ones are written with a `+`).
fn hidden_axes(cells: &[&FigureCell]) -> Vec<(String, bool)> {
    let mut names: Vec<&String> = cells.iter().flat_map(|c| c.params.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| !PANEL_AXES.contains(&n.as_str()) && !PLANE_AXES.contains(&n.as_str()))
        .filter(|n| {
            let mut values: Vec<String> = cells.iter().map(|c| c.params.get(*n).map(|v| v.to_string()).unwrap_or_default()).collect();
            values.sort();
            values.dedup();
            values.len() > 1
        })
        .map(|n| (n.clone(), cells.iter().any(|c| c.num(n).is_some_and(|v| v < 0.0))))
        .collect()
}

/// A hidden axis's value as the grid wrote it: durations (`*_ns`) in ms,
/// numbers in their shortest exact decimal (0.005 stays 0.005), `base`
/// where the cell keeps the base scenario's value.
fn axis_value(name: &str, v: Option<&serde_json::Value>, signed: bool) -> String {
    let Some(v) = v.filter(|v| !v.is_null()) else { return "base".into() };
    let Some(n) = v.as_f64() else { return v.as_str().map_or_else(|| v.to_string(), str::to_string) };
    let (n, unit) = if name.ends_with("_ns") { (n / 1e6, " ms") } else { (n, "") };
    let sign = if signed && n > 0.0 { "+" } else { "" };
    format!("{sign}{n}{unit}")
}

/// A panel's title part and file-name part: the strategy (and fencing,
/// belief start) and `axis value` for every hidden axis.
fn group_of(c: &FigureCell, hidden: &[(String, bool)]) -> (String, String) {
    let mut parts = vec![c.text("lease_expiry").unwrap_or("base").to_string()];
    if let Some(f) = c.params.get("fenced").and_then(serde_json::Value::as_bool) {
        parts.push(if f { "fenced".into() } else { "unfenced".into() });
    }
    if let Some(b) = c.text("belief_from") {
        parts.push(format!("from-{b}"));
    }
    let mut title = parts.join(" ");
    let mut slug = title.replace(' ', "-");
    for (name, signed) in hidden {
        let axis = name.trim_end_matches("_ns").replace('_', "-");
        let value = axis_value(name, c.params.get(name), *signed);
        let _ = write!(title, ", {} {value}", axis.replace('-', " "));
        let _ = write!(slug, "-{axis}_{}", value.replace(' ', ""));
    }
    (title, slug)
}

/// One group's heatmap of unsafe-run rates over drift × margin, with the
/// theory's edges.
fn group_heatmap(group: &str, mine: &[&FigureCell], xs: &[f64], ys: &[f64]) -> Heatmap {
    let rate_at = |x: f64, y: f64| -> Option<Rate> {
        let here: Vec<&&FigureCell> = mine.iter().filter(|c| c.num("leader_drift") == Some(x) && c.num("margin") == Some(y)).collect();
        if here.is_empty() {
            return None;
        }
        Some(Rate::of(here.iter().map(|c| c.metrics.runs_unsafe).sum(), here.iter().map(|c| c.metrics.runs).sum()))
    };
    // Runs with a belief overlap, the only invariant the edges bound.
    let overlap_at = |x: f64, y: f64| -> u64 {
        let here = mine.iter().filter(|c| c.num("leader_drift") == Some(x) && c.num("margin") == Some(y));
        here.map(|c| c.metrics.invariant_runs.get(BELIEF_OVERLAP).copied().unwrap_or(0)).sum()
    };
    let values = ys.iter().map(|y| xs.iter().map(|x| rate_at(*x, *y).map(|r| r.p)).collect()).collect();
    let text: Vec<Vec<Vec<String>>> = ys
        .iter()
        .map(|y| {
            xs.iter()
                .map(|x| match rate_at(*x, *y) {
                    Some(r) => {
                        let mut lines = vec![format!("{}/{}", r.k, r.n), format!("[{:.2}, {:.2}]", r.lo, r.hi)];
                        // Where other invariants made runs unsafe, the colour is not
                        // what the edges bound: say how many runs had an overlap.
                        let overlap = overlap_at(*x, *y);
                        if overlap != r.k {
                            lines.push(format!("overlap {overlap}/{}", r.n));
                        }
                        lines
                    }
                    None => Vec::new(),
                })
                .collect()
        })
        .collect();
    let has_overlap_line = text.iter().flatten().any(|lines| lines.len() > 2);
    Heatmap {
        title: format!("{group}: runs with any safety violation"),
        x_label: "leader (server) clock drift ρ — categories, not to scale".into(),
        y_label: "client margin m — categories".into(),
        xs: xs.to_vec(),
        ys: ys.to_vec(),
        values,
        text,
        value_label: "fraction of runs with any safety violation (0–1); cell: k/n [95% Wilson]".into(),
        value_note: has_overlap_line
            .then(|| "cell's \"overlap j/n\": only j of its k unsafe runs had a belief overlap, the one invariant the edges bound".into()),
        edges: theory_edges(mine, xs),
    }
}

/// The refined edge (this project's, per column from the runs' figures)
/// and the classic one (Gray & Cheriton, or Chubby's when the timer starts
/// at receipt). Both bound only where two holders' beliefs overlap
/// (lock-belief-overlap), not every invariant the colour counts: the
/// legend says so.
fn theory_edges(mine: &[&FigureCell], xs: &[f64]) -> Vec<Edge> {
    let from_receipt = mine.iter().any(|c| c.text("belief_from") == Some("receipt"));
    let column = |x: f64| mine.iter().copied().filter(move |c| c.num("leader_drift") == Some(x));
    // The refined edge per column, from the theory's per-run figures.
    let refined: Vec<Option<f64>> = xs.iter().map(|x| column(*x).find_map(|c| c.consistency_check.edge_margin)).collect();
    let delay_ms = mine.iter().find_map(|c| c.consistency_check.fixed_delay_ns).map_or(0.0, |d| d as f64 / 1e6);
    let delay_over_ttl = mine.iter().find_map(|c| c.prediction.as_ref().map(|p| p.delay_ns as f64 / p.ttl_ns.max(1) as f64)).unwrap_or(0.0);
    // The classic bound at the ρ the cell's prediction used (the largest
    // drift of any clock, so a client drift counts), else the column's.
    let classic: Vec<Option<f64>> = xs
        .iter()
        .map(|x| {
            let rho = column(*x).find_map(|c| c.prediction.as_ref().map(|p| p.rho)).unwrap_or(*x);
            Some(if from_receipt { 1.0 - (1.0 - rho) * (1.0 / (1.0 + rho) - delay_over_ttl) } else { 2.0 * rho / (1.0 + rho) })
        })
        .collect();
    let classic_label = if from_receipt {
        "- - Chubby-style (timer from receipt, one ρ for all): beliefs cannot overlap above"
    } else {
        "- - Gray & Cheriton 1989 (one ρ for all clocks): m ≥ 2ρ/(1+ρ), beliefs cannot overlap above"
    };
    let receipt = if from_receipt { " net of a reply round trip" } else { "" };
    vec![
        Edge {
            label: format!(
                "— refined (this project): m ≥ 1 − (1+ρ_c)(1/(1+ρ_s) + δ/T), δ = {delay_ms:.0} ms{receipt}: beliefs cannot overlap above"
            ),
            short: "refined edge".into(),
            ys: refined,
            dashed: false,
            colour: "#111111",
        },
        Edge {
            label: classic_label.into(),
            short: if from_receipt { "Chubby".into() } else { "Gray–Cheriton".into() },
            ys: classic,
            dashed: true,
            colour: "#1f4e9c",
        },
    ]
}

/// Mean unavailability after a holder crash over TTL, one line per
/// strategy, whiskers from the shortest to the longest wait, and y = TTL.
fn unavailability_chart(results: &StudyResults) -> Option<String> {
    let cells: Vec<&CellResult> =
        results.cells.iter().filter(|c| c.params.ttl_ns.is_some() && c.metrics.unavailability_mean_ns.is_some()).collect();
    if cells.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = cells.iter().map(|c| c.params.lease_expiry.unwrap_or("base")).collect();
    names.sort();
    names.dedup();
    let mut samples_total = 0;
    let series: Vec<Series> = names
        .iter()
        .map(|name| {
            let mut points: Vec<(f64, f64)> = Vec::new();
            let mut spread = Vec::new();
            let mine = |c: &&&CellResult| c.params.lease_expiry.unwrap_or("base") == *name;
            let ttls = sorted_unique(cells.iter().filter(mine).filter_map(|c| c.params.ttl_ns.map(|t| t as f64)));
            for ttl in ttls {
                let here: Vec<_> = cells.iter().filter(mine).filter(|c| c.params.ttl_ns.map(|t| t as f64) == Some(ttl)).collect();
                let samples: u64 = here.iter().map(|c| c.metrics.unavailability_samples).sum();
                samples_total += samples;
                let total: f64 = here
                    .iter()
                    .map(|c| c.metrics.unavailability_mean_ns.unwrap_or(0) as f64 * c.metrics.unavailability_samples as f64)
                    .sum();
                if samples > 0 {
                    points.push((ttl / 1e9, total / samples as f64 / 1e9));
                    let lo = here.iter().filter_map(|c| c.metrics.unavailability_min_ns).min().unwrap_or(0) as f64 / 1e9;
                    let hi = here.iter().filter_map(|c| c.metrics.unavailability_max_ns).max().unwrap_or(0) as f64 / 1e9;
                    spread.push((lo, hi));
                }
            }
            Series { name: name.to_string(), points, spread, joined: true }
        })
        .collect();
    let note = format!(
        "dots: mean; whiskers: shortest to longest\nwait over {samples_total} crashes of a holder\n(all cells; series offset sideways)"
    );
    Some(line_chart_svg(
        "Unavailability after a holder crash (crash → next grant to another client)",
        "lease TTL T (s)",
        "wait (s, true time)",
        &series,
        Some("y = T (the TTL)"),
        &note,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results.json whose heatmap plane (leader drift × margin) hides a
    /// third axis, the leader's wall-clock step: one cell per step value.
    fn results_with_a_hidden_axis() -> String {
        let cell = |jump_ns: i64, unsafe_runs: u64| {
            serde_json::json!({
                "params": {"lease_expiry": "leader-stamped-wall", "leader_drift": 0.0, "margin": 0.005,
                           "leader_jump_ns": jump_ns, "pause_ns": 2_500_000_000u64, "client_drift": null},
                "metrics": {"runs": 10, "runs_unsafe": unsafe_runs,
                            "invariant_runs": {"lock-belief-overlap": unsafe_runs.min(3), "replica-divergence": unsafe_runs}},
                "consistency_check": {"edge_margin": 0.001, "fixed_delay_ns": 9_000_000},
                "prediction": {"rho": 0.0, "ttl_ns": 2_000_000_000u64, "delay_ns": 12_000_000}
            })
        };
        let cells = vec![cell(0, 0), cell(128_000_000, 3), cell(-128_000_000, 7)];
        serde_json::json!({"name": "steps", "build": "abc1234", "cells": cells}).to_string()
    }

    #[test]
    fn redraw_draws_one_panel_per_value_of_a_hidden_axis_and_removes_stale_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.json"), results_with_a_hidden_axis()).unwrap();
        std::fs::write(dir.path().join("heatmap-leader-stamped-wall.svg"), "pooled").unwrap();
        let (build, files) = redraw(dir.path(), "steps").unwrap();
        assert_eq!(build, "abc1234");
        let mut names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        names.sort();
        let want = ["leader-jump_+128ms", "leader-jump_-128ms", "leader-jump_0ms"].map(|v| format!("heatmap-leader-stamped-wall-{v}.svg"));
        assert_eq!(names, want);
        assert!(!dir.path().join("heatmap-leader-stamped-wall.svg").exists(), "the pooled figure is gone");
        let svg = std::fs::read_to_string(dir.path().join(&want[0])).unwrap();
        assert!(svg.contains("leader jump +128 ms"), "the panel's title names its value");
        assert!(svg.contains(">3/10<") && !svg.contains(">10/30<"), "the cell counts this panel's runs only");
        assert!(!svg.contains(">overlap 3/10<"), "a cell whose unsafe runs all overlapped says nothing more");
        let minus = std::fs::read_to_string(dir.path().join(&want[1])).unwrap();
        assert!(minus.contains(">7/10<") && minus.contains(">overlap 3/10<"), "7 unsafe runs, 3 of them with a belief overlap");
        assert!(
            minus.contains("only j of its k unsafe runs") && !svg.contains("only j of its k"),
            "the legend explains it where it is drawn"
        );
        assert!(svg.contains(">0.005<"), "the margin keeps the grid's precision");
    }

    #[test]
    fn redraw_names_the_file_it_cannot_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json").display().to_string();
        let missing = redraw(dir.path(), "steps").unwrap_err();
        assert!(missing.starts_with(&path) && missing.contains("cannot read"), "{missing}");
        std::fs::write(dir.path().join("results.json"), "{\n  \"name\": 3\n}").unwrap();
        let bad = redraw(dir.path(), "steps").unwrap_err();
        assert!(bad.starts_with(&format!("{path}:2:")), "{bad}");
        std::fs::write(dir.path().join("results.json"), results_with_a_hidden_axis()).unwrap();
        let other = redraw(dir.path(), "ntp-step").unwrap_err();
        assert!(other.contains("study `steps`, not of `ntp-step`"), "{other}");
    }
}
