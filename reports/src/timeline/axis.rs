//! The time axis: tick labels at a round step, faint grid lines through
//! every row, the fault phase / settle phase bar and the settle line.

use super::canvas::{span_attrs, Scale, Svg, LEFT};
use crate::model::RunView;
use crate::units::secs;

const TICKS_H: f64 = 24.0;
const PHASES_H: f64 = 16.0;

/// A round tick step giving at most about 16 ticks.
pub fn tick_step_ns(end_ns: u64) -> u64 {
    const MS: u64 = 1_000_000;
    const STEPS_NS: [u64; 18] = [
        MS,
        2 * MS,
        5 * MS,
        10 * MS,
        20 * MS,
        50 * MS,
        100 * MS,
        200 * MS,
        500 * MS,
        1000 * MS,
        2000 * MS,
        5000 * MS,
        10_000 * MS,
        15_000 * MS,
        30_000 * MS,
        60_000 * MS,
        300_000 * MS,
        600_000 * MS,
    ];
    STEPS_NS.into_iter().find(|step| end_ns / step <= 16).unwrap_or(3_600_000 * MS)
}

fn tick_label(at_ns: u64, step_ns: u64) -> String {
    if step_ns >= 1_000_000_000 {
        format!("{}s", at_ns / 1_000_000_000)
    } else {
        secs(at_ns)
    }
}

pub fn draw_ticks(svg: &mut Svg, scale: Scale, top: f64) -> f64 {
    let step = tick_step_ns(scale.end_ns);
    svg.open_g("", Some("axis"), &[("data-step-ns", step.to_string())]);
    svg.text("gutter-title", 8.0, top + 15.0, "start", "true time");
    let mut at = 0;
    while at <= scale.end_ns {
        let x = scale.x(at);
        svg.line("tick", x, top + TICKS_H - 6.0, x, top + TICKS_H, &[]);
        svg.text("tick-label", x, top + 14.0, "middle", &tick_label(at, step));
        at += step;
    }
    svg.line("axis-line", LEFT, top + TICKS_H, scale.x(scale.end_ns), top + TICKS_H, &[]);
    svg.close_g();
    TICKS_H
}

pub fn draw_grid(svg: &mut Svg, scale: Scale, height: f64) {
    let step = tick_step_ns(scale.end_ns);
    svg.open_g("", Some("grid"), &[]);
    let mut at = 0;
    while at <= scale.end_ns {
        let x = scale.x(at);
        svg.line("grid", x, TICKS_H, x, height, &[]);
        at += step;
    }
    svg.close_g();
}

/// The fault phase, then the settle phase (every fault healed, liveness
/// checked).
pub fn draw_phases(svg: &mut Svg, view: &RunView, scale: Scale, top: f64) -> f64 {
    let settle = view.settle_at_ns.min(scale.end_ns);
    svg.open_g("", Some("phases"), &[]);
    svg.text("gutter-title", 8.0, top + 11.0, "start", "phase");
    let (x0, x1, x2) = (scale.x(0), scale.x(settle), scale.x(scale.end_ns));
    svg.rect("phase fault-phase", x0, top + 3.0, x1 - x0, 10.0, &span_attrs(0, settle), Some("fault phase: scenario faults and chaos"));
    if settle < scale.end_ns {
        svg.rect(
            "phase settle-phase",
            x1,
            top + 3.0,
            x2 - x1,
            10.0,
            &span_attrs(settle, scale.end_ns),
            Some("settle phase: every fault healed; liveness is checked"),
        );
    }
    if x1 - x0 > 80.0 {
        svg.text("phase-label", x0 + 4.0, top + 11.5, "start", "fault phase");
    }
    if x2 - x1 > 50.0 {
        svg.text("phase-label", x1 + 4.0, top + 11.5, "start", "settle");
    }
    svg.close_g();
    PHASES_H
}

pub fn draw_settle(svg: &mut Svg, view: &RunView, scale: Scale, height: f64) {
    if view.settle_at_ns < scale.end_ns {
        let x = scale.x(view.settle_at_ns);
        svg.line("settle-line", x, TICKS_H, x, height, &[("data-at-ns", view.settle_at_ns.to_string())]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round_and_few() {
        assert_eq!(tick_step_ns(28_000_000_000), 2_000_000_000);
        assert_eq!(tick_step_ns(40_000_000_000), 5_000_000_000);
        assert_eq!(tick_step_ns(1_000_000_000), 100_000_000);
        assert_eq!(tick_label(4_000_000_000, 2_000_000_000), "4s");
        assert_eq!(tick_label(300_000_000, 100_000_000), "0.300s");
    }
}
