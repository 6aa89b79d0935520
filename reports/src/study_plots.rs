//! SVG figures for `leasesim study`: a heatmap of a rate over two grid axes
//! with a theoretical boundary drawn on top, and a line chart. Pure
//! functions from plain numbers to a self-contained SVG string, so the
//! study's figures are tested without the simulator and regenerate byte for
//! byte from the same results.

use std::fmt::Write;

use crate::escape::xml;

/// A proportion per grid cell over two categorical axes: `values[row][col]`
/// in [0, 1] for `ys[row]`, `xs[col]` (`None`: the cell was not run), with
/// two lines of text per cell (e.g. `k/n` and the 95 % interval) and edges
/// drawn per column at their exact value.
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub values: Vec<Vec<Option<f64>>>,
    /// Per cell: the text lines written in it.
    pub text: Vec<Vec<Vec<String>>>,
    /// What the colour means, with its unit (the legend's label).
    pub value_label: String,
    /// A second legend line under `value_label`, for what some cells add
    /// (`None`: no such line).
    pub value_note: Option<String>,
    pub edges: Vec<Edge>,
}

/// A boundary in y per column (x category), drawn as a short horizontal
/// mark across that column with its value written beside it.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub label: String,
    /// A few words naming it in the table of values under the axis.
    pub short: String,
    /// One y per column (`None`: no mark).
    pub ys: Vec<Option<f64>>,
    pub dashed: bool,
    pub colour: &'static str,
}

const CELL_W: f64 = 96.0;
/// Rows are at least this tall, and the grid at least `MIN_GRID_H`, so
/// the rotated y-axis label fits beside it.
const CELL_H_MIN: f64 = 44.0;
const MIN_GRID_H: f64 = 200.0;
const LEFT_PX: f64 = 84.0;
/// Above the grid: the title and a band for edges above the top row.
const TOP_PX: f64 = 74.0;

/// Where a y value falls in row units (0 = centre of the first row):
/// linear between neighbouring row values, and beyond the ends at the
/// slope of the outermost pair, so a value outside the grid is drawn
/// outside it, not clamped onto its edge.
pub fn position(axis: &[f64], v: f64) -> f64 {
    match axis {
        [] | [_] => 0.0,
        _ => {
            let n = axis.len();
            let seg = if v <= axis[1] { 0 } else { axis.windows(2).position(|p| v <= p[1]).unwrap_or(n - 2) };
            let (a, b) = (axis[seg], axis[seg + 1]);
            let span = b - a;
            seg as f64 + if span > 0.0 { (v - a) / span } else { 0.0 }
        }
    }
}

/// White (0) to red (1); grey for "not run".
fn colour(v: Option<f64>) -> String {
    match v {
        None => "#dddddd".to_string(),
        Some(v) => {
            let f = v.clamp(0.0, 1.0);
            let g = (250.0 - 190.0 * f) as u8;
            format!("#{:02x}{:02x}{:02x}", 250, g, g)
        }
    }
}

fn short(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() < 0.01 {
        // ppm-scale values (0.0005): shortest exact decimal, never "0.00".
        format!("{v}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A heatmap's axis value as the grid gave it: the shortest decimal that
/// reads back as the same number, so a 0.005-step grid is never rounded to
/// two decimals and two rows never share a label.
fn grid_value(v: f64) -> String {
    format!("{v}")
}

/// A generous estimate of a text's width in pixels at a font size
/// (sans-serif averages about half an em per character; wide glyphs and
/// bold titles need more), so the picture is made wide enough for it.
fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.62
}

/// The note over the band above the grid.
const BAND_NOTE: &str =
    "(band above the top row: edges beyond the grid, placed by extrapolation up to this band; exact values in the table under the axis)";

fn edge_text(v: f64) -> String {
    format!("{v:.3}")
}

/// Where a heatmap's parts go: the grid's size, the legend's top, the
/// picture's size.
struct HeatmapLayout {
    cols: usize,
    rows: usize,
    grid_w: f64,
    cell_h: f64,
    grid_h: f64,
    legend_top: f64,
    width: f64,
    height: f64,
}

/// The widest legend line for an edge: its swatch and its label.
fn edge_legend_width(h: &Heatmap) -> f64 {
    h.edges.iter().map(|e| 38.0 + text_width(&e.label, 11.0)).fold(0.0, f64::max)
}

impl HeatmapLayout {
    fn of(h: &Heatmap) -> HeatmapLayout {
        let (cols, rows) = (h.xs.len(), h.ys.len());
        let grid_w = CELL_W * cols as f64;
        let cell_h = CELL_H_MIN.max(MIN_GRID_H / rows.max(1) as f64);
        let grid_h = cell_h * rows as f64;
        let legend_top = TOP_PX + grid_h + 62.0 + 14.0 * h.edges.len() as f64;
        // Wide enough for the grid and for every line of text, so none is
        // clipped at the right edge.
        let texts = [
            10.0 + text_width(&h.title, 14.0),
            LEFT_PX + text_width(BAND_NOTE, 11.0),
            LEFT_PX + 170.0 + text_width(&h.value_label, 11.0),
            LEFT_PX + 170.0 + h.value_note.as_deref().map_or(0.0, |n| text_width(n, 10.0)),
            LEFT_PX + edge_legend_width(h),
            // The x-axis title, when moved right of a narrow grid's centre.
            10.0 + text_width(&h.x_label, 11.0),
        ];
        let width = texts.into_iter().fold((LEFT_PX + grid_w + 30.0).max(780.0), f64::max).ceil() + 10.0;
        let height = legend_top + 26.0 + 18.0 * h.edges.len() as f64 + 40.0;
        HeatmapLayout { cols, rows, grid_w, cell_h, grid_h, legend_top, width, height }
    }

    /// The pixel y of a position in row units (0 = centre of the first row).
    fn row_y(&self, pos: f64) -> f64 {
        TOP_PX + self.grid_h - self.cell_h * (pos + 0.5)
    }
}

pub fn heatmap_svg(h: &Heatmap) -> String {
    let l = HeatmapLayout::of(h);
    let mut s = String::new();
    let (width, height) = (l.width, l.height);
    let _ =
        write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#);
    let _ = write!(s, r##"<rect width="{width}" height="{height}" fill="#ffffff"/>"##);
    let _ = write!(s, r#"<text x="10" y="18" font-size="13" font-weight="bold">{}</text>"#, xml(&h.title));
    let _ = write!(s, r##"<text x="{LEFT_PX}" y="{}" fill="#666666">{BAND_NOTE}</text>"##, TOP_PX - 34.0);
    let _ = write!(
        s,
        r##"<line x1="{LEFT_PX}" y1="{TOP_PX}" x2="{}" y2="{TOP_PX}" stroke="#bbbbbb" stroke-dasharray="2 2"/>"##,
        LEFT_PX + l.grid_w
    );
    // The cells' text is written after the edges, on a white halo, so a
    // line never runs through a number.
    let texts = heatmap_cells(&mut s, h, &l);
    heatmap_axes(&mut s, h, &l);
    heatmap_edges(&mut s, h, &l);
    s.push_str(&texts);
    heatmap_edge_table(&mut s, h, &l);
    heatmap_legend(&mut s, h, &l);
    s.push_str("</svg>\n");
    s
}

/// The cells, rows with the largest y at the top, each with its row's
/// label; returns the cells' text, to be written last.
fn heatmap_cells(s: &mut String, h: &Heatmap, l: &HeatmapLayout) -> String {
    let cell_h = l.cell_h;
    let mut texts = String::new();
    for (r, y) in h.ys.iter().enumerate() {
        let top = TOP_PX + cell_h * (l.rows - 1 - r) as f64;
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, LEFT_PX - 6.0, top + cell_h / 2.0 + 4.0, grid_value(*y));
        for c in 0..l.cols {
            let v = h.values.get(r).and_then(|row| row.get(c)).copied().flatten();
            let left = LEFT_PX + CELL_W * c as f64;
            let _ = write!(s, r##"<rect x="{left}" y="{top}" width="{CELL_W}" height="{cell_h}" fill="{}" stroke="#ffffff"/>"##, colour(v));
            let lines: Vec<String> = match h.text.get(r).and_then(|row| row.get(c)) {
                Some(lines) if v.is_some() => lines.clone(),
                _ => vec!["not run".to_string()],
            };
            for (k, line) in lines.iter().enumerate() {
                // The first (11 px) line's baseline, 13 px to the second and
                // 11 px to each 9 px line after, so three lines fit a 44 px row.
                let ty = top + 16.0 + 13.0 * k.min(1) as f64 + 11.0 * k.saturating_sub(1) as f64;
                let size = if k == 0 { 11 } else { 9 };
                let _ = write!(
                    texts,
                    r##"<text x="{}" y="{ty}" text-anchor="middle" font-size="{size}" stroke="#ffffff" stroke-width="3" stroke-opacity="0.85" paint-order="stroke">{}</text>"##,
                    left + CELL_W / 2.0,
                    xml(line)
                );
            }
        }
    }
    texts
}

/// The columns' labels and both axes' names.
fn heatmap_axes(s: &mut String, h: &Heatmap, l: &HeatmapLayout) {
    let grid_h = l.grid_h;
    for (c, x) in h.xs.iter().enumerate() {
        let centre = LEFT_PX + CELL_W * c as f64 + CELL_W / 2.0;
        let _ = write!(s, r#"<text x="{centre}" y="{}" text-anchor="middle">{}</text>"#, TOP_PX + grid_h + 14.0, grid_value(*x));
    }
    let _ =
        write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, x_title_centre(h, l), TOP_PX + grid_h + 32.0, xml(&h.x_label));
    let _ = write!(
        s,
        r#"<text x="16" y="{0}" transform="rotate(-90 16 {0})" text-anchor="middle">{1}</text>"#,
        TOP_PX + grid_h / 2.0,
        xml(&h.y_label)
    );
}

/// Where the x-axis title is centred: under the grid, unless the title is
/// wider than that leaves room for at the left; then moved right just
/// enough. A one-column grid's centre is 132 px from the left, and the
/// title in DejaVu Sans (fontconfig's usual sans-serif) is about 340 px
/// wide, so centred there it began 16.5 px left of the picture, measured
/// by `reports/studies/figure_labels.py`.
fn x_title_centre(h: &Heatmap, l: &HeatmapLayout) -> f64 {
    (LEFT_PX + l.grid_w / 2.0).max(10.0 + text_width(&h.x_label, 11.0) / 2.0)
}

/// Edges: in each column a thin line at the exact value with thick stubs
/// at both sides (clear of the centred cell text); the values are written
/// in a table under the axis (`heatmap_edge_table`), so no number sits on
/// a cell or on another.
fn heatmap_edges(s: &mut String, h: &Heatmap, l: &HeatmapLayout) {
    for edge in &h.edges {
        let dash = if edge.dashed { r#" stroke-dasharray="5 3""# } else { "" };
        for (c, y) in edge.ys.iter().enumerate().take(l.cols) {
            let Some(y) = y else { continue };
            // Beyond the grid: up to the band above it, or just under its
            // bottom edge (below are the column labels, the edge table and
            // the legend, which an extrapolated mark was drawn over).
            let py = l.row_y(position(&h.ys, *y)).clamp(TOP_PX - 26.0, TOP_PX + l.grid_h + 2.0);
            let left = LEFT_PX + CELL_W * c as f64;
            let _ = write!(
                s,
                r#"<line x1="{:.1}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="{}" stroke-width="1"{dash}/>"#,
                left + 2.0,
                left + CELL_W - 2.0,
                edge.colour
            );
            for (x1, x2) in [(left + 2.0, left + 14.0), (left + CELL_W - 14.0, left + CELL_W - 2.0)] {
                let _ =
                    write!(s, r#"<line x1="{x1:.1}" y1="{py:.1}" x2="{x2:.1}" y2="{py:.1}" stroke="{}" stroke-width="3.5"/>"#, edge.colour);
            }
        }
    }
}

/// Under the axis, one row per edge: its short name and its value in each
/// column.
fn heatmap_edge_table(s: &mut String, h: &Heatmap, l: &HeatmapLayout) {
    for (e, edge) in h.edges.iter().enumerate() {
        let y = TOP_PX + l.grid_h + 50.0 + 14.0 * e as f64;
        let _ = write!(
            s,
            r#"<text x="{}" y="{y}" text-anchor="end" font-size="9" fill="{}">{}</text>"#,
            LEFT_PX - 6.0,
            edge.colour,
            xml(&edge.short)
        );
        for (c, v) in edge.ys.iter().enumerate().take(l.cols) {
            if let Some(v) = v {
                let centre = LEFT_PX + CELL_W * c as f64 + CELL_W / 2.0;
                let _ = write!(
                    s,
                    r#"<text x="{centre}" y="{y}" text-anchor="middle" font-size="10" fill="{}">{}</text>"#,
                    edge.colour,
                    edge_text(*v)
                );
            }
        }
    }
}

/// Legend: the colour scale with its unit, then one line per edge.
fn heatmap_legend(s: &mut String, h: &Heatmap, l: &HeatmapLayout) {
    let legend_top = l.legend_top;
    let bar_w = 160.0;
    for k in 0..=20 {
        let f = k as f64 / 20.0;
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{legend_top}" width="{:.1}" height="10" fill="{}"/>"#,
            LEFT_PX + bar_w * f,
            bar_w / 20.0 + 0.5,
            colour(Some(f))
        );
    }
    let _ = write!(s, r##"<rect x="{LEFT_PX}" y="{legend_top}" width="{bar_w}" height="10" fill="none" stroke="#999999"/>"##);
    for (f, t) in [(0.0, "0"), (0.5, "0.5"), (1.0, "1")] {
        let _ =
            write!(s, r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="9">{t}</text>"#, LEFT_PX + bar_w * f, legend_top + 21.0);
    }
    let _ = write!(s, r#"<text x="{}" y="{}">{}</text>"#, LEFT_PX + bar_w + 10.0, legend_top + 9.0, xml(&h.value_label));
    if let Some(note) = &h.value_note {
        let _ = write!(s, r#"<text x="{}" y="{}" font-size="10">{}</text>"#, LEFT_PX + bar_w + 10.0, legend_top + 23.0, xml(note));
    }
    for (e, edge) in h.edges.iter().enumerate() {
        let y = legend_top + 40.0 + 18.0 * e as f64;
        let dash = if edge.dashed { r#" stroke-dasharray="6 3""# } else { "" };
        let _ = write!(
            s,
            r#"<line x1="{LEFT_PX}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.5"{dash}/>"#,
            y - 4.0,
            LEFT_PX + 30.0,
            y - 4.0,
            edge.colour
        );
        let _ = write!(s, r#"<text x="{}" y="{y}">{}</text>"#, LEFT_PX + 38.0, xml(&edge.label));
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point, a (low, high) range drawn as a whisker (empty: none).
    pub spread: Vec<(f64, f64)>,
    /// Whether a line joins the points (a trend); `false` for points that
    /// are separate cells, as in a calibration plot.
    pub joined: bool,
}

const PALETTE: [&str; 6] = ["#1f4e9c", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#2c3e50"];

/// A line chart of several series on shared linear axes from 0, with
/// whiskers where a series has a spread, an optional y = x reference line,
/// and the legend in its own column right of the plot (never over a line).
pub fn line_chart_svg(title: &str, x_label: &str, y_label: &str, series: &[Series], reference: Option<&str>, note: &str) -> String {
    let c = Chart::fitting(series, reference.is_some());
    let (w, h) = (c.legend_x + 230.0, c.top + c.plot_h + 70.0);
    let mut s = String::new();
    let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#);
    let _ = write!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let _ = write!(s, r#"<text x="10" y="18" font-size="13" font-weight="bold">{}</text>"#, xml(title));
    c.axes(&mut s, x_label, y_label);
    let mut legend_y = c.top + 6.0;
    if let Some(label) = reference {
        c.reference(&mut s, label, legend_y);
        legend_y += 18.0;
    }
    for (i, one) in series.iter().enumerate() {
        c.series(&mut s, one, i, series.len(), legend_y);
        legend_y += 18.0;
    }
    let legend_x = c.legend_x;
    for (k, line) in note.lines().enumerate() {
        let _ = write!(
            s,
            r##"<text x="{legend_x}" y="{}" font-size="10" fill="#555555">{}</text>"##,
            legend_y + 8.0 + 14.0 * k as f64,
            xml(line)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A line chart's plot area and its axes' ranges and ticks.
struct Chart {
    plot_w: f64,
    plot_h: f64,
    left: f64,
    top: f64,
    legend_x: f64,
    x_max: f64,
    y_max: f64,
    x_step: f64,
    y_step: f64,
}

impl Chart {
    /// Axes from 0 past every point and whisker (and, with a y = x
    /// reference, as high as they are wide), each rounded up to four ticks
    /// of a 1, 2 or 5 step.
    fn fitting(series: &[Series], reference: bool) -> Chart {
        let (plot_w, plot_h, left, top) = (380.0, 240.0, 70.0, 40.0);
        let all = series.iter().flat_map(|s| s.points.iter().copied().chain(s.spread.iter().map(|(lo, hi)| (lo.min(*hi), lo.max(*hi)))));
        let mut x_max = all.clone().map(|p| p.0).fold(0.0_f64, f64::max).max(1e-9);
        let mut y_max = all.map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9);
        if reference {
            y_max = y_max.max(x_max);
        }
        let (x_step, y_step) = (nice_step(x_max / 4.0), nice_step(y_max / 4.0));
        x_max = (x_max / x_step).ceil().max(1.0) * x_step;
        y_max = (y_max / y_step).ceil().max(1.0) * y_step;
        Chart { plot_w, plot_h, left, top, legend_x: left + plot_w + 24.0, x_max, y_max, x_step, y_step }
    }

    fn px(&self, x: f64) -> f64 {
        self.left + self.plot_w * x / self.x_max
    }

    fn py(&self, y: f64) -> f64 {
        self.top + self.plot_h * (1.0 - y / self.y_max)
    }

    /// Both axes with their ticks, grid lines and names.
    fn axes(&self, s: &mut String, x_label: &str, y_label: &str) {
        let (left, x_max, y_max) = (self.left, self.x_max, self.y_max);
        let _ = write!(s, r##"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="#333"/>"##, self.py(0.0), self.px(x_max), self.py(0.0));
        let _ = write!(s, r##"<line x1="{left}" y1="{}" x2="{left}" y2="{}" stroke="#333"/>"##, self.py(0.0), self.py(y_max));
        for k in 0..=((x_max / self.x_step).round() as usize) {
            let xv = self.x_step * k as f64;
            let _ = write!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, self.px(xv), self.py(0.0) + 14.0, short(xv));
        }
        for k in 0..=((y_max / self.y_step).round() as usize) {
            let yv = self.y_step * k as f64;
            let _ = write!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#, left - 6.0, self.py(yv) + 4.0, short(yv));
            let _ = write!(s, r##"<line x1="{left}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#eeeeee"/>"##, self.py(yv), self.px(x_max));
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            self.px(x_max / 2.0),
            self.py(0.0) + 32.0,
            xml(x_label)
        );
        let _ = write!(
            s,
            r#"<text x="16" y="{0:.1}" transform="rotate(-90 16 {0:.1})" text-anchor="middle">{1}</text>"#,
            self.py(y_max / 2.0),
            xml(y_label)
        );
    }

    /// The y = x line, dashed, and its legend line at `legend_y`.
    fn reference(&self, s: &mut String, label: &str, legend_y: f64) {
        let (legend_x, end) = (self.legend_x, self.x_max.min(self.y_max));
        let _ = write!(
            s,
            r##"<line x1="{}" y1="{}" x2="{:.1}" y2="{:.1}" stroke="#888888" stroke-dasharray="5 4"/>"##,
            self.px(0.0),
            self.py(0.0),
            self.px(end),
            self.py(end)
        );
        let _ = write!(
            s,
            r##"<line x1="{legend_x}" y1="{0}" x2="{1}" y2="{0}" stroke="#888888" stroke-dasharray="5 4"/>"##,
            legend_y - 4.0,
            legend_x + 24.0
        );
        let _ = write!(s, r#"<text x="{}" y="{legend_y}">{}</text>"#, legend_x + 30.0, xml(label));
    }

    /// Series `i` of `n`, with its whiskers and its legend line at
    /// `legend_y`. Series sit side by side, a small x offset each, so
    /// whiskers do not overlap.
    fn series(&self, s: &mut String, series: &Series, i: usize, n: usize, legend_y: f64) {
        let colour = PALETTE[i % PALETTE.len()];
        let n = n.max(1) as f64;
        let dx = (i as f64 - (n - 1.0) / 2.0) * 5.0;
        let points: Vec<String> = series.points.iter().map(|(x, y)| format!("{:.1},{:.1}", self.px(*x) + dx, self.py(*y))).collect();
        if series.joined {
            let _ = write!(s, r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#, points.join(" "));
        }
        for (k, (x, y)) in series.points.iter().enumerate() {
            let x = self.px(*x) + dx;
            if let Some((lo, hi)) = series.spread.get(k) {
                let _ = write!(
                    s,
                    r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="{colour}" stroke-width="1.2"/>"#,
                    x,
                    self.py(*lo),
                    self.py(*hi)
                );
                for yy in [lo, hi] {
                    let _ = write!(
                        s,
                        r#"<line x1="{0:.1}" y1="{1:.1}" x2="{2:.1}" y2="{1:.1}" stroke="{colour}" stroke-width="1.2"/>"#,
                        x - 3.0,
                        self.py(*yy),
                        x + 3.0
                    );
                }
            }
            let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#, x, self.py(*y));
        }
        let legend_x = self.legend_x;
        let _ = write!(
            s,
            r#"<line x1="{legend_x}" y1="{0}" x2="{1}" y2="{0}" stroke="{colour}" stroke-width="2"/>"#,
            legend_y - 4.0,
            legend_x + 24.0
        );
        let _ = write!(s, r#"<text x="{}" y="{legend_y}" fill="{colour}">{}</text>"#, legend_x + 30.0, xml(&series.name));
    }
}

/// The smallest step of 1, 2 or 5 × 10^k at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Heatmap {
        Heatmap {
            title: "t <1>".into(),
            x_label: "drift".into(),
            y_label: "margin".into(),
            xs: vec![0.0, 0.1],
            ys: vec![0.0, 0.2],
            values: vec![vec![Some(0.0), Some(1.0)], vec![None, Some(0.0)]],
            text: vec![vec![vec!["0/10".into()], vec!["10/10".into()]], vec![vec![], vec!["0/10".into()]]],
            value_label: "fraction of runs (0–1)".into(),
            value_note: None,
            edges: vec![Edge { label: "edge".into(), short: "e".into(), ys: vec![Some(0.0), Some(0.5)], dashed: false, colour: "#000000" }],
        }
    }

    #[test]
    fn heatmap_has_a_cell_per_value_a_legend_and_the_edges() {
        let svg = heatmap_svg(&sample());
        // 4 cells + background + 21 legend swatches + the legend frame.
        assert_eq!(svg.matches("<rect").count(), 4 + 1 + 21 + 1);
        assert!(svg.contains("t &lt;1&gt;") && svg.contains("fraction of runs (0–1)"));
        assert!(svg.contains("#dddddd") && svg.contains("not run"), "a cell not run is grey and says so");
        assert!(svg.contains(">0.500<"), "an edge off the grid is drawn with its exact value");
    }

    #[test]
    fn small_values_are_written_exactly() {
        assert_eq!(short(0.0005), "0.0005");
        assert_eq!(short(0.001), "0.001");
        assert_eq!(short(0.05), "0.05");
    }

    #[test]
    fn heatmap_labels_keep_the_grids_precision_and_fit_the_picture() {
        let edge = sample().edges[0].clone();
        let long = "x".repeat(200);
        let h = Heatmap { ys: vec![0.025, 0.03, 0.035], edges: vec![Edge { label: long.clone(), ..edge }], ..sample() };
        let svg = heatmap_svg(&h);
        for label in [">0.025<", ">0.03<", ">0.035<"] {
            assert!(svg.contains(label), "{label}: a 0.005 grid is labelled to its own precision");
        }
        let width: f64 = svg.split("width=\"").nth(1).and_then(|w| w.split('"').next()).and_then(|w| w.parse().ok()).unwrap();
        assert!(width >= LEFT_PX + text_width(&long, 11.0), "the longest legend line fits: width {width}");
    }

    #[test]
    fn a_one_column_heatmaps_x_title_starts_inside_the_picture() {
        let title = "leader (server) clock drift ρ — categories, not to scale";
        let one = Heatmap {
            x_label: title.into(),
            xs: vec![0.1],
            values: vec![vec![Some(0.5)], vec![Some(0.0)]],
            text: vec![vec![vec!["1/2".into()]], vec![vec!["0/2".into()]]],
            edges: Vec::new(),
            ..sample()
        };
        let svg = heatmap_svg(&one);
        let before = svg.split(&format!(">{title}<")).next().unwrap();
        let x: f64 = before.rsplit("<text x=\"").next().and_then(|t| t.split('"').next()).and_then(|x| x.parse().ok()).unwrap();
        let start = x - text_width(title, 11.0) / 2.0;
        assert!(start >= 10.0, "the centred title starts at {start} px by the generous estimate");
        assert_eq!(
            x_title_centre(&sample(), &HeatmapLayout::of(&sample())),
            LEFT_PX + CELL_W,
            "a short title stays centred under the grid"
        );
    }

    #[test]
    fn an_edge_below_the_grid_is_drawn_just_under_it_not_over_the_legend() {
        let edge = Edge { ys: vec![Some(-1.0), Some(-0.5)], ..sample().edges[0].clone() };
        let h = Heatmap { edges: vec![edge], ..sample() };
        let l = HeatmapLayout::of(&h);
        let svg = heatmap_svg(&h);
        let marks: Vec<f64> = svg
            .split("<line ")
            .skip(1)
            .filter(|t| t.contains("stroke=\"#000000\"") && !t.contains("stroke-width=\"2.5\""))
            .filter_map(|t| t.split("y1=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(marks.len(), 2 * 3, "a line and two stubs per column (the legend's line left out)");
        assert!(marks.iter().all(|y| *y == TOP_PX + l.grid_h + 2.0), "{marks:?}");
        assert!(svg.contains(">-1.000<") && svg.contains(">-0.500<"), "the exact values stay in the table");
    }

    #[test]
    fn axis_steps_are_round() {
        assert_eq!(nice_step(1.1), 2.0);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(5.0), 5.0);
    }

    #[test]
    fn positions_extrapolate_beyond_the_grid_instead_of_clamping() {
        assert_eq!(position(&[0.0, 0.1, 0.3], 0.2), 1.5);
        assert_eq!(position(&[0.0, 0.1], 0.2), 2.0);
        assert_eq!(position(&[0.0, 0.1], -0.05), -0.5);
    }

    #[test]
    fn line_chart_draws_each_series_with_whiskers_and_a_legend_beside_the_plot() {
        let series =
            [Series { name: "a".into(), points: vec![(1.0, 2.0), (2.0, 3.0)], spread: vec![(1.5, 2.5), (2.0, 4.0)], joined: true }];
        let svg = line_chart_svg("u", "ttl", "s", &series, Some("y = TTL"), "note");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(svg.matches(r#"stroke-width="1.2""#).count(), 6, "a whisker and two caps per point");
        assert!(svg.contains("y = TTL") && svg.contains(">note<"));
        assert_eq!(svg.matches("<polyline").count(), 1, "a joined series draws its line");
        let apart = [Series { joined: false, ..series[0].clone() }];
        let svg = line_chart_svg("u", "ttl", "s", &apart, None, "");
        assert_eq!(svg.matches("<polyline").count(), 0, "separate cells are not joined");
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
