//! A lane per process: its role over time (leader with its term, follower,
//! running, crashed), hatched where it was paused, and under it a strip with
//! its clock's error against true time — solid for the wall clock (offset,
//! drift and jumps), dashed for the monotonic clock (drift alone). All
//! strips share one scale so lanes compare at a glance; a process whose
//! clock was exact all run gets no strip (its label says so), which keeps
//! the chart short enough to read without scrolling.

use super::canvas::{at_attr, n, span_attrs, Scale, Svg};
use super::Rows;
use crate::model::{ClockTrace, Lane, LaneKind, Role, RunView};
use crate::units::{percent, secs, signed_duration};

const HEADER_H: f64 = 18.0;
const ROLE_H: f64 = 17.0;
const CLOCK_H: f64 = 13.0;
/// A lane without a clock strip.
const BARE_H: f64 = ROLE_H + 7.0;

/// The largest clock error any lane shows (at least 1 ms, so a run of
/// perfect clocks draws flat lines rather than dividing by zero).
pub fn clock_scale_ns(view: &RunView) -> i64 {
    view.lanes
        .iter()
        .flat_map(|l| &l.clock.points)
        .map(|p| p.wall_error_ns.unsigned_abs().max(p.mono_error_ns.unsigned_abs()))
        .max()
        .unwrap_or(0)
        .max(1_000_000) as i64
}

pub fn draw(svg: &mut Svg, view: &RunView, scale: Scale, top: f64, rows: &mut Rows) -> f64 {
    let clock_max_ns = clock_scale_ns(view);
    svg.open_g("", Some("lanes"), &[("data-clock-scale-ns", clock_max_ns.to_string())]);
    svg.text("section-title", 8.0, top + 13.0, "start", "processes");
    svg.text(
        "section-note",
        scale.x(0),
        top + 13.0,
        "start",
        &format!(
            "role over true time; strip below: clock error (solid wall, dashed monotonic), full height = ±{}",
            signed_duration(clock_max_ns).trim_start_matches('+')
        ),
    );
    let mut y = top + HEADER_H;
    for lane in &view.lanes {
        let height = lane_height(lane);
        draw_lane(svg, lane, scale, y, height, clock_max_ns);
        rows.lanes.insert(lane.name.clone(), (y, height));
        y += height;
    }
    svg.close_g();
    y - top
}

fn kind_class(kind: LaneKind) -> &'static str {
    match kind {
        LaneKind::Server => "server",
        LaneKind::Client => "client",
        LaneKind::Store => "store",
    }
}

fn exact(clock: &ClockTrace) -> bool {
    clock.points.iter().all(|p| p.wall_error_ns == 0 && p.mono_error_ns == 0)
}

fn lane_height(lane: &Lane) -> f64 {
    if exact(&lane.clock) && lane.marks.is_empty() {
        BARE_H
    } else {
        BARE_H + CLOCK_H
    }
}

fn draw_lane(svg: &mut Svg, lane: &Lane, scale: Scale, top: f64, height: f64, clock_max_ns: i64) {
    let id = format!("lane-{}", crate::escape::id_part(&lane.name));
    svg.open_g(&format!("lane {}", kind_class(lane.kind)), Some(&id), &[("data-proc", lane.name.clone())]);
    if lane.kind == LaneKind::Server {
        svg.rect("lane-bg", 0.0, top, super::WIDTH, height, &[], None);
    }
    let summary = clock_summary(&lane.clock);
    if height > BARE_H {
        svg.text("lane-name", 8.0, top + 14.0, "start", &lane.name);
        svg.text("lane-sub", 8.0, top + 27.0, "start", &summary);
    } else {
        svg.text("lane-name", 8.0, top + 15.0, "start", &lane.name);
        // Beside the name: about 8 units per bold character, then a gap.
        let x = 8.0 + lane.name.chars().count() as f64 * 8.0 + 8.0;
        svg.text("lane-sub", x, top + 15.0, "start", &summary);
    }
    let role_y = top + 3.0;
    for span in &lane.roles {
        let (x, w) = (scale.x(span.start_ns), scale.w(span.start_ns, span.end_ns, 0.8));
        let mut attrs = span_attrs(span.start_ns, span.end_ns);
        let (class, label, title) = match span.role {
            Role::Leader { term } => {
                attrs.push(("data-term", term.to_string()));
                let label = if w > 64.0 {
                    format!("leader t{term}")
                } else if w > 20.0 {
                    format!("t{term}")
                } else {
                    String::new()
                };
                ("role leader", label, format!("{} leader in term {term}", lane.name))
            }
            Role::Follower => ("role follower", String::new(), format!("{} follower", lane.name)),
            Role::Up => ("role up", String::new(), format!("{} running", lane.name)),
            Role::Down => ("role down", if w > 50.0 { "crashed".to_string() } else { String::new() }, format!("{} crashed", lane.name)),
        };
        let title = format!("{title}, {} – {}", secs(span.start_ns), secs(span.end_ns));
        svg.rect(class, x, role_y, w, ROLE_H, &attrs, Some(&title));
        if !label.is_empty() {
            svg.text("role-label", x + 4.0, role_y + 12.5, "start", &label);
        }
    }
    for p in &lane.paused {
        let (x, w) = (scale.x(p.start_ns), scale.w(p.start_ns, p.end_ns, 1.5));
        let title = format!("{} paused {} – {} (its clock kept running)", lane.name, secs(p.start_ns), secs(p.end_ns));
        svg.rect("paused", x, role_y - 1.0, w, ROLE_H + 2.0, &span_attrs(p.start_ns, p.end_ns), Some(&title));
        if w > 46.0 {
            svg.text("paused-label", x + 4.0, role_y + 12.5, "start", "paused");
        }
    }
    if height > BARE_H {
        draw_clock(svg, &lane.clock, scale, top + 4.0 + ROLE_H, clock_max_ns);
    }
    for mark in &lane.marks {
        let x = scale.x(mark.at_ns);
        let y = top + 4.0 + ROLE_H;
        let d = format!("M{} {}L{} {}L{} {}L{} {}Z", n(x), n(y), n(x + 5.0), n(y + 6.0), n(x), n(y + 12.0), n(x - 5.0), n(y + 6.0));
        let title = format!("{}: {}", secs(mark.at_ns), mark.label);
        svg.path(&format!("mark {}", mark.kind), &d, &[at_attr(mark.at_ns)], Some(&title));
    }
    svg.close_g();
}

/// "drift +4% · error up to +1.20s": what the reader needs before the
/// strip itself.
fn clock_summary(clock: &ClockTrace) -> String {
    let worst = clock.points.iter().map(|p| p.wall_error_ns).max_by_key(|e| e.unsigned_abs()).unwrap_or(0);
    if clock.max_abs_drift == 0.0 && worst == 0 {
        return "clock exact".to_string();
    }
    format!("drift ≤{} · err {}", percent(clock.max_abs_drift).trim_start_matches('+'), signed_duration(worst))
}

fn draw_clock(svg: &mut Svg, clock: &ClockTrace, scale: Scale, top: f64, clock_max_ns: i64) {
    let mid = top + CLOCK_H / 2.0;
    let y_of = |err_ns: i64| mid - (err_ns as f64 / clock_max_ns as f64) * (CLOCK_H / 2.0 - 1.0);
    svg.line("clock-zero", scale.x(0), mid, scale.x(scale.end_ns), mid, &[]);
    if clock.points.is_empty() {
        return;
    }
    let path = |error: &dyn Fn(&crate::model::ClockPoint) -> i64| -> String {
        let mut d = String::new();
        for (i, p) in clock.points.iter().enumerate() {
            d.push(if i == 0 { 'M' } else { 'L' });
            d.push_str(&format!("{} {}", n(scale.x(p.at_ns)), n(y_of(error(p)))));
        }
        d
    };
    let last = clock.points.last().expect("checked non-empty");
    let wall_title = format!("wall clock error: ends at {}", signed_duration(last.wall_error_ns));
    svg.path("clock wall", &path(&|p| p.wall_error_ns), &[], Some(&wall_title));
    if clock.points.iter().any(|p| p.mono_error_ns != p.wall_error_ns) {
        let mono_title = format!("monotonic clock error (drift alone): ends at {}", signed_duration(last.mono_error_ns));
        svg.path("clock mono", &path(&|p| p.mono_error_ns), &[], Some(&mono_title));
    }
}
