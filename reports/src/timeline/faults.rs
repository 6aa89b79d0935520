//! Fault rows: link faults (partition, isolate, block) as labelled bands,
//! packed into as few rows as overlap allows, and the instants that affect
//! no lane (membership asks, loss changes, skipped faults) as ticks. Link
//! faults also shade the lanes of the processes they cut off.

use super::canvas::{at_attr, n, span_attrs, Scale, Svg};
use super::Rows;
use crate::model::{LinkFault, RunView};

const ROW_H: f64 = 18.0;
const NOTES_H: f64 = 16.0;

/// Assigns each band to the first row where it overlaps nothing.
pub fn pack(faults: &[LinkFault]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..faults.len()).collect();
    order.sort_by_key(|&i| (faults[i].start_ns, faults[i].end_ns));
    let mut row_ends: Vec<u64> = Vec::new();
    let mut rows = vec![0; faults.len()];
    for i in order {
        let f = &faults[i];
        let row = match row_ends.iter().position(|&end| end <= f.start_ns) {
            Some(r) => r,
            None => {
                row_ends.push(0);
                row_ends.len() - 1
            }
        };
        row_ends[row] = f.end_ns.max(f.start_ns + 1);
        rows[i] = row;
    }
    rows
}

pub fn draw(svg: &mut Svg, view: &RunView, scale: Scale, top: f64) -> f64 {
    if view.link_faults.is_empty() && view.fault_notes.is_empty() {
        return 0.0;
    }
    let rows = pack(&view.link_faults);
    let row_count = rows.iter().max().map_or(0, |m| m + 1);
    svg.open_g("", Some("faults"), &[]);
    svg.text("gutter-title", 8.0, top + 13.0, "start", "faults");
    for (i, (f, row)) in view.link_faults.iter().zip(&rows).enumerate() {
        let y = top + *row as f64 * ROW_H + 2.0;
        let (x, w) = (scale.x(f.start_ns), scale.w(f.start_ns, f.end_ns, 2.0));
        let kind = f.label.split_whitespace().next().unwrap_or("fault");
        let mut attrs = span_attrs(f.start_ns, f.end_ns);
        attrs.push(("data-procs", f.procs.join(",")));
        svg.open_g(&format!("fault link {kind}"), Some(&format!("fault-{i}")), &attrs);
        let title = format!("{} from {} to {}", f.label, crate::units::secs(f.start_ns), crate::units::secs(f.end_ns));
        svg.rect("fault-band", x, y, w, ROW_H - 4.0, &[], Some(&title));
        if w > f.label.len() as f64 * 5.6 + 8.0 {
            svg.text("fault-label", x + 4.0, y + 10.5, "start", &f.label);
        } else if w > 40.0 {
            svg.text("fault-label", x + 4.0, y + 10.5, "start", kind);
        }
        svg.close_g();
    }
    let notes_top = top + row_count as f64 * ROW_H;
    if !view.fault_notes.is_empty() {
        for note in &view.fault_notes {
            let x = scale.x(note.at_ns);
            let class = if note.skipped { "fault note skipped" } else { "fault note" };
            svg.open_g(class, None, &[at_attr(note.at_ns)]);
            let y = notes_top + 3.0;
            let d = format!("M{} {}L{} {}L{} {}Z", n(x - 5.0), n(y), n(x + 5.0), n(y), n(x), n(y + 9.0));
            let title = format!("{}: {}", crate::units::secs(note.at_ns), note.label);
            svg.path("fault-note", &d, &[], Some(&title));
            svg.close_g();
        }
    }
    svg.close_g();
    row_count as f64 * ROW_H + if view.fault_notes.is_empty() { 0.0 } else { NOTES_H }
}

/// Shades, on each cut-off process's lane, the time its links were cut.
pub fn shade_lanes(svg: &mut Svg, view: &RunView, scale: Scale, rows: &Rows) {
    svg.open_g("", Some("link-shading"), &[]);
    for (i, f) in view.link_faults.iter().enumerate() {
        for proc in &f.procs {
            let Some(&(y, h)) = rows.lanes.get(proc) else { continue };
            let mut attrs = span_attrs(f.start_ns, f.end_ns);
            attrs.push(("data-proc", proc.clone()));
            attrs.push(("data-fault", format!("fault-{i}")));
            svg.rect(
                "cut",
                scale.x(f.start_ns),
                y + 1.0,
                scale.w(f.start_ns, f.end_ns, 2.0),
                h - 2.0,
                &attrs,
                Some(&format!("{proc} cut off: {}", f.label)),
            );
        }
    }
    svg.close_g();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(start_ns: u64, end_ns: u64) -> LinkFault {
        LinkFault { start_ns, end_ns, label: "partition".into(), procs: vec![] }
    }

    #[test]
    fn overlapping_bands_get_their_own_rows() {
        let faults = [band(0, 10), band(5, 20), band(10, 12), band(21, 30)];
        assert_eq!(pack(&faults), vec![0, 1, 0, 0]);
    }
}
