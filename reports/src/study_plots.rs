//! SVG figures for `leasesim study`: a heatmap of a rate over two grid axes
//! with a theoretical boundary drawn on top, and a line chart. Pure
//! functions from plain numbers to a self-contained SVG string, so the
//! study's figures are tested without the simulator and regenerate byte for
//! byte from the same results.

use std::fmt::Write;

use crate::escape::xml;

/// A rate per grid cell: `values[row][col]` for `ys[row]`, `xs[col]`
/// (`None`: the cell was not run).
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub values: Vec<Vec<Option<f64>>>,
    /// The theoretical boundary in data coordinates (x, y), drawn as a line
    /// over the cells; cells are placed evenly, so the line is interpolated
    /// between cell centres.
    pub boundary: Vec<(f64, f64)>,
    pub boundary_label: String,
}

const CELL_PX: f64 = 56.0;
const LEFT_PX: f64 = 70.0;
const TOP_PX: f64 = 40.0;

/// Where a data value falls on evenly spaced category centres (clamped).
fn position(axis: &[f64], v: f64) -> f64 {
    match axis {
        [] => 0.0,
        [_] => 0.0,
        _ => {
            if v <= axis[0] {
                return 0.0;
            }
            for (i, pair) in axis.windows(2).enumerate() {
                if v <= pair[1] {
                    let span = pair[1] - pair[0];
                    let f = if span > 0.0 { (v - pair[0]) / span } else { 0.0 };
                    return i as f64 + f;
                }
            }
            (axis.len() - 1) as f64
        }
    }
}

/// White (0) to red (the largest value); grey for "not run".
fn colour(v: Option<f64>, max: f64) -> String {
    match v {
        None => "#dddddd".to_string(),
        Some(v) if v <= 0.0 || max <= 0.0 => "#f7fbf7".to_string(),
        Some(v) => {
            let f = (v / max).clamp(0.0, 1.0).sqrt();
            let g = (235.0 - 200.0 * f) as u8;
            format!("#{:02x}{:02x}{:02x}", 250, g, g)
        }
    }
}

fn short(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub fn heatmap_svg(h: &Heatmap) -> String {
    let (cols, rows) = (h.xs.len(), h.ys.len());
    let width = LEFT_PX + CELL_PX * cols as f64 + 20.0;
    let height = TOP_PX + CELL_PX * rows as f64 + 60.0;
    let max = h.values.iter().flatten().flatten().copied().fold(0.0_f64, f64::max);
    let mut s = String::new();
    let _ =
        write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#);
    let _ = write!(s, r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#, LEFT_PX, xml(&h.title));
    // Rows are drawn with the largest y at the top.
    for (r, y) in h.ys.iter().enumerate() {
        let top = TOP_PX + CELL_PX * (rows - 1 - r) as f64;
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, LEFT_PX - 6.0, top + CELL_PX / 2.0 + 4.0, short(*y));
        for c in 0..cols {
            let v = h.values.get(r).and_then(|row| row.get(c)).copied().flatten();
            let left = LEFT_PX + CELL_PX * c as f64;
            let _ = write!(
                s,
                r##"<rect x="{left}" y="{top}" width="{CELL_PX}" height="{CELL_PX}" fill="{}" stroke="#ffffff"/>"##,
                colour(v, max)
            );
            let text = v.map_or("–".to_string(), short);
            let _ =
                write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, left + CELL_PX / 2.0, top + CELL_PX / 2.0 + 4.0, text);
        }
    }
    for (c, x) in h.xs.iter().enumerate() {
        let left = LEFT_PX + CELL_PX * c as f64 + CELL_PX / 2.0;
        let _ = write!(s, r#"<text x="{left}" y="{}" text-anchor="middle">{}</text>"#, TOP_PX + CELL_PX * rows as f64 + 14.0, short(*x));
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT_PX + CELL_PX * cols as f64 / 2.0,
        TOP_PX + CELL_PX * rows as f64 + 32.0,
        xml(&h.x_label)
    );
    let _ = write!(
        s,
        r#"<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>"#,
        TOP_PX + CELL_PX * rows as f64 / 2.0,
        TOP_PX + CELL_PX * rows as f64 / 2.0,
        xml(&h.y_label)
    );
    if h.boundary.len() >= 2 && cols > 0 && rows > 0 {
        let points: Vec<String> = h
            .boundary
            .iter()
            .map(|(x, y)| {
                let px = LEFT_PX + CELL_PX * (position(&h.xs, *x) + 0.5);
                let py = TOP_PX + CELL_PX * ((rows - 1) as f64 - position(&h.ys, *y) + 0.5);
                format!("{px:.1},{py:.1}")
            })
            .collect();
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#1f4e9c" stroke-width="2.5" stroke-dasharray="6 3"/>"##,
            points.join(" ")
        );
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" fill="#1f4e9c">{}</text>"##,
            LEFT_PX,
            TOP_PX + CELL_PX * rows as f64 + 50.0,
            xml(&h.boundary_label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const PALETTE: [&str; 6] = ["#1f4e9c", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#2c3e50"];

/// A line chart of several series on shared linear axes from 0.
pub fn line_chart_svg(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let (w, h, left, top) = (520.0, 300.0, 70.0, 40.0);
    let all = series.iter().flat_map(|s| s.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(0.0_f64, f64::max).max(1e-9);
    let y_max = all.map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9);
    let px = |x: f64| left + (w - left - 130.0) * x / x_max;
    let py = |y: f64| top + (h - top - 50.0) * (1.0 - y / y_max);
    let mut s = String::new();
    let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#);
    let _ = write!(s, r#"<text x="{left}" y="18" font-size="13" font-weight="bold">{}</text>"#, xml(title));
    let _ = write!(s, r##"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="#333"/>"##, py(0.0), px(x_max), py(0.0));
    let _ = write!(s, r##"<line x1="{left}" y1="{}" x2="{left}" y2="{}" stroke="#333"/>"##, py(0.0), py(y_max));
    for k in 0..=4 {
        let (xv, yv) = (x_max * k as f64 / 4.0, y_max * k as f64 / 4.0);
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, px(xv), py(0.0) + 14.0, short(xv));
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, left - 6.0, py(yv) + 4.0, short(yv));
    }
    let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, px(x_max / 2.0), py(0.0) + 32.0, xml(x_label));
    let _ =
        write!(s, r#"<text x="14" y="{0}" transform="rotate(-90 14 {0})" text-anchor="middle">{1}</text>"#, py(y_max / 2.0), xml(y_label));
    for (i, series) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let points: Vec<String> = series.points.iter().map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y))).collect();
        let _ = write!(s, r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#, points.join(" "));
        for (x, y) in &series.points {
            let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#, px(*x), py(*y));
        }
        let _ = write!(s, r#"<text x="{}" y="{}" fill="{colour}">{}</text>"#, w - 125.0, top + 16.0 * i as f64, xml(&series.name));
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heatmap_has_a_cell_per_value_and_the_boundary() {
        let h = Heatmap {
            title: "t <1>".into(),
            x_label: "drift".into(),
            y_label: "margin".into(),
            xs: vec![0.0, 0.1],
            ys: vec![0.0, 0.2],
            values: vec![vec![Some(0.0), Some(3.0)], vec![None, Some(0.0)]],
            boundary: vec![(0.0, 0.0), (0.1, 0.2)],
            boundary_label: "bound".into(),
        };
        let svg = heatmap_svg(&h);
        assert_eq!(svg.matches("<rect").count(), 4);
        assert!(svg.contains("<polyline") && svg.contains("t &lt;1&gt;"));
        assert!(svg.contains("#dddddd"), "a cell not run is grey");
    }

    #[test]
    fn boundary_positions_interpolate_between_cells() {
        assert_eq!(position(&[0.0, 0.1, 0.3], 0.2), 1.5);
        assert_eq!(position(&[0.0, 0.1], 5.0), 1.0);
    }

    #[test]
    fn line_chart_draws_each_series() {
        let svg = line_chart_svg("u", "ttl", "s", &[Series { name: "a".into(), points: vec![(1.0, 2.0), (2.0, 3.0)] }]);
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
