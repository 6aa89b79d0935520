//! Violations, where they happened: a numbered badge in their own row (red
//! for a bug, orange for an assumption broken), a dashed line down through
//! every row at that instant, and a marker on each lane and lock track the
//! explanation names. The badge's hover text is the explanation; its number
//! matches the list on the page.

use super::canvas::{at_attr, n, Scale, Svg};
use super::Rows;
use crate::model::RunView;
use crate::units::secs;

const ROW_H: f64 = 22.0;

pub fn row_height(view: &RunView) -> f64 {
    if view.violations.is_empty() {
        0.0
    } else {
        ROW_H
    }
}

pub fn draw(svg: &mut Svg, view: &RunView, scale: Scale, top: f64, height: f64, rows: &Rows) {
    if view.violations.is_empty() {
        return;
    }
    svg.open_g("", Some("violations"), &[]);
    svg.text("gutter-title", 8.0, top + 15.0, "start", "violations");
    let mut last_badge_x = f64::MIN;
    let mut lane = 0.0;
    for (i, v) in view.violations.iter().enumerate() {
        let number = i + 1;
        let kind = if v.assumptions_held { "bug" } else { "broken" };
        let x = scale.x(v.at_ns);
        let attrs = [at_attr(v.at_ns), ("data-invariant", v.invariant.clone()), ("data-n", number.to_string())];
        svg.open_g(&format!("violation {kind}"), Some(&format!("v{number}")), &attrs);
        svg.title(&format!("#{number} {} at {} [{}]: {}", v.invariant, secs(v.at_ns), v.kind(), v.detail));
        svg.line("violation-line", x, top + ROW_H, x, height, &[]);
        // Badges at one instant would hide each other: step them sideways.
        lane = if x - last_badge_x < 16.0 { lane + 1.0 } else { 0.0 };
        last_badge_x = x;
        let bx = x + lane * 14.0;
        svg.circle("violation-badge", bx, top + 11.0, 8.0, &[], None);
        svg.text("violation-number", bx, top + 14.5, "middle", &number.to_string());
        for proc in &v.procs {
            if let Some(&(y, _)) = rows.lanes.get(proc) {
                marker(svg, x, y + 12.0, proc);
            }
        }
        for key in &v.keys {
            if let Some(&(y, _)) = rows.keys.get(key) {
                marker(svg, x, y + 9.0, key);
            }
        }
        svg.close_g();
    }
    svg.close_g();
}

/// A diamond on a row the explanation names.
fn marker(svg: &mut Svg, x: f64, y: f64, on: &str) {
    let d = format!("M{} {}L{} {}L{} {}L{} {}Z", n(x), n(y - 7.0), n(x + 6.0), n(y), n(x), n(y + 7.0), n(x - 6.0), n(y));
    svg.path("violation-marker", &d, &[("data-on", on.to_string())], None);
}
