//! The run timeline as one SVG: rows stacked top to bottom over a shared
//! true-time axis — faults, violations, a lane per process (role, pauses,
//! clock error) and a track per lock key (the cluster's holder, each
//! client's belief, the data store's accepts and rejects).
//!
//! Each row painter lives in its own file and reports the height it used;
//! this file stacks them, then draws what spans every row (grid, settle
//! line, violation lines, the hover cursor).

mod axis;
mod canvas;
mod faults;
mod lanes;
mod locks;
mod palette;
mod violations;

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::RunView;
use canvas::{n, Svg};
pub use canvas::{Scale, LEFT, RIGHT, WIDTH};

/// Where each named row ended up, so later painters can mark on it
/// (link-fault shading on lanes, violation markers on lanes and keys).
#[derive(Default)]
pub struct Rows {
    /// Lane name → (top, height).
    pub lanes: BTreeMap<String, (f64, f64)>,
    /// Lock key → (top, height) of its whole track.
    pub keys: BTreeMap<String, (f64, f64)>,
}

const STYLE: &str = include_str!("../../assets/timeline.css");

/// Renders the run's timeline as a standalone SVG document fragment
/// (`<svg …>…</svg>`), usable inline in HTML or saved as a `.svg` file.
pub fn timeline_svg(view: &RunView) -> String {
    let scale = Scale::new(view.end_ns);
    let mut body = Svg::default();
    let mut rows = Rows::default();
    let mut y = 0.0;
    y += axis::draw_ticks(&mut body, scale, y);
    y += axis::draw_phases(&mut body, view, scale, y);
    y += faults::draw(&mut body, view, scale, y);
    let violations_top = y;
    y += violations::row_height(view);
    y += lanes::draw(&mut body, view, scale, y, &mut rows);
    y += locks::draw(&mut body, view, scale, y, &mut rows);
    let height = y + 8.0;
    faults::shade_lanes(&mut body, view, scale, &rows);
    axis::draw_settle(&mut body, view, scale, height);
    violations::draw(&mut body, view, scale, violations_top, height, &rows);

    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\" class=\"timeline\" viewBox=\"0 0 {w} {h}\" \
         width=\"{w}\" height=\"{h}\" data-end-ns=\"{end}\" data-left=\"{left}\" data-plot-width=\"{pw}\" \
         font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">",
        w = n(WIDTH),
        h = n(height),
        end = scale.end_ns,
        left = n(LEFT),
        pw = n(scale.plot_width()),
    );
    let _ = write!(out, "<style>{STYLE}</style>");
    out.push_str(DEFS);
    let mut grid = Svg::default();
    axis::draw_grid(&mut grid, scale, height);
    out.push_str(&grid.out);
    out.push_str(&body.out);
    let _ = write!(
        out,
        "<line id=\"cursor\" class=\"cursor\" x1=\"{l}\" y1=\"0\" x2=\"{l}\" y2=\"{h}\" visibility=\"hidden\"/>",
        l = n(LEFT),
        h = n(height)
    );
    out.push_str("</svg>");
    out
}

/// Fill patterns: hatching for paused and crashed spans, so they read as
/// "not running" over whatever role colour lies beneath.
const DEFS: &str = "<defs>\
<pattern id=\"hatch-paused\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(45)\">\
<rect width=\"6\" height=\"6\" fill=\"#fbd38d\" fill-opacity=\"0.55\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c05621\" stroke-width=\"2.5\"/></pattern>\
<pattern id=\"hatch-down\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(-45)\">\
<rect width=\"6\" height=\"6\" fill=\"#2d3748\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#718096\" stroke-width=\"2\"/></pattern>\
</defs>";
