//! Writes a study's results: `results.json` (everything), `results.csv`
//! (one row per cell, for spreadsheets and the report's tables) and the SVG
//! figures (heatmaps of violation rate over leader drift × margin per
//! strategy with the theoretical boundary; unavailability after a holder
//! crash over TTL), whichever the study's axes allow.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
    for (name, svg) in heatmaps(results) {
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
/// and every figure, and the refined prediction beside what it measured.
pub fn runs_csv(results: &StudyResults) -> String {
    let ids = invariant_columns();
    let mut out = String::from("cell,seed,pause_at_ms,jump_at_ms,base_shift_ms");
    for id in &ids {
        let _ = write!(out, ",{}", id.replace('-', "_"));
    }
    out.push_str(
        ",unsafe,lease_hours,min_margin_ms,handovers,handovers_release,handovers_expiry,handovers_overlapping,max_overlap_ms,\
stale_rejected,stale_accepted,unavailability_samples,unavailability_mean_ms,false_expiries,\
predicted_gap_ms,modelled,predicted_overlap,measured_overlap,observed_delay_ms,max_renewal_lag_ms,longest_pause_ms,leaders,digest\n",
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

/// One heatmap per strategy (and fencing / belief start, if varied) over
/// leader drift × margin: the fraction of runs with any safety violation,
/// k/n and its Wilson 95 % interval in each cell, with the refined edge
/// and the classic symmetric bound drawn per column at their exact values.
fn heatmaps(results: &StudyResults) -> Vec<(String, String)> {
    let cells: Vec<&CellResult> = results.cells.iter().filter(|c| c.params.leader_drift.is_some() && c.params.margin.is_some()).collect();
    if cells.is_empty() {
        return Vec::new();
    }
    let xs = sorted_unique(cells.iter().filter_map(|c| c.params.leader_drift));
    let ys = sorted_unique(cells.iter().filter_map(|c| c.params.margin));
    let mut groups: Vec<String> = cells.iter().map(|c| group_of(c)).collect();
    groups.sort();
    groups.dedup();
    let mut out = Vec::new();
    for group in groups {
        let mine: Vec<&CellResult> = cells.iter().copied().filter(|c| group_of(c) == group).collect();
        let heatmap = group_heatmap(&group, &mine, &xs, &ys);
        let file = format!("heatmap-{}.svg", group.replace([' ', '='], "-"));
        out.push((file, heatmap_svg(&heatmap)));
    }
    out
}

/// One group's heatmap of unsafe-run rates over drift × margin, with the
/// theory's edges.
fn group_heatmap(group: &str, mine: &[&CellResult], xs: &[f64], ys: &[f64]) -> Heatmap {
    let at = |x: f64, y: f64| -> Vec<&&CellResult> {
        mine.iter().filter(|c| c.params.leader_drift == Some(x) && c.params.margin == Some(y)).collect()
    };
    let rate_at = |x: f64, y: f64| -> Option<Rate> {
        let here = at(x, y);
        if here.is_empty() {
            return None;
        }
        Some(Rate::of(here.iter().map(|c| c.metrics.runs_unsafe).sum(), here.iter().map(|c| c.metrics.runs).sum()))
    };
    let values = ys.iter().map(|y| xs.iter().map(|x| rate_at(*x, *y).map(|r| r.p)).collect()).collect();
    let text = ys
        .iter()
        .map(|y| {
            xs.iter()
                .map(|x| match rate_at(*x, *y) {
                    Some(r) => vec![format!("{}/{}", r.k, r.n), format!("[{:.2}, {:.2}]", r.lo, r.hi)],
                    None => Vec::new(),
                })
                .collect()
        })
        .collect();
    Heatmap {
        title: format!("{group}: runs with any safety violation"),
        x_label: "leader (server) clock drift ρ — categories, not to scale".into(),
        y_label: "client margin m — categories".into(),
        xs: xs.to_vec(),
        ys: ys.to_vec(),
        values,
        text,
        value_label: "fraction of runs with a safety violation (0–1); cell: k/n [95% Wilson]".into(),
        edges: theory_edges(mine, xs),
    }
}

/// The refined edge (this project's, per column from the runs' figures)
/// and the classic one (Gray & Cheriton, or Chubby's when the timer starts
/// at receipt).
fn theory_edges(mine: &[&CellResult], xs: &[f64]) -> Vec<Edge> {
    let from_receipt = mine.iter().any(|c| c.params.belief_from == Some("receipt"));
    // The refined edge per column, from the theory's per-run figures.
    let refined: Vec<Option<f64>> =
        xs.iter().map(|x| mine.iter().find(|c| c.params.leader_drift == Some(*x)).and_then(|c| c.consistency_check.edge_margin)).collect();
    let delay_ms = mine.iter().find_map(|c| c.consistency_check.fixed_delay_ns).map_or(0.0, |d| d as f64 / 1e6);
    let delay_over_ttl = mine.iter().find_map(|c| c.prediction.as_ref().map(|p| p.delay_ns as f64 / p.ttl_ns.max(1) as f64)).unwrap_or(0.0);
    let classic: Vec<Option<f64>> = xs
        .iter()
        .map(|rho| Some(if from_receipt { 1.0 - (1.0 - rho) * (1.0 / (1.0 + rho) - delay_over_ttl) } else { 2.0 * rho / (1.0 + rho) }))
        .collect();
    let classic_label = if from_receipt {
        "- - Chubby-style (timer from receipt, one ρ for all): safe above"
    } else {
        "- - Gray & Cheriton 1989 (one ρ for all clocks): m ≥ 2ρ/(1+ρ), safe above"
    };
    vec![
        Edge {
            label: if from_receipt {
                format!("— refined (this project): m ≥ 1 − (1+ρ_c)(1/(1+ρ_s) + δ/T), δ = {delay_ms:.0} ms net of a reply round trip: safe above")
            } else {
                format!("— refined (this project): m ≥ 1 − (1+ρ_c)(1/(1+ρ_s) + δ/T), δ = {delay_ms:.0} ms: safe above")
            },
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

fn group_of(c: &CellResult) -> String {
    let mut parts = vec![c.params.lease_expiry.unwrap_or("base").to_string()];
    if let Some(f) = c.params.fenced {
        parts.push(if f { "fenced".into() } else { "unfenced".into() });
    }
    if let Some(b) = c.params.belief_from {
        parts.push(format!("from-{b}"));
    }
    parts.join(" ")
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
