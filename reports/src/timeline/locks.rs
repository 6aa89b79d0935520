//! A track per lock key. Top row: who the cluster says holds the lock (from
//! the grant's first apply to its release or lease end) with the fencing
//! token. Then one row per client: when that client believed it held the
//! lock, in true time — red shading where two clients believed at once.
//! Last row: the data store's writes to the key, accepted (filled) or
//! rejected (cross), ringed red where an accepted token went backwards.
//! Rows with nothing to show are left out (a key only the store saw is
//! drawn as a "store key", not as a lock).

use std::collections::BTreeSet;

use super::canvas::{at_attr, n, span_attrs, Scale, Svg};
use super::palette;
use super::Rows;
use crate::model::{Belief, LockTrack, RunView};
use crate::units::secs;

const HEADER_H: f64 = 18.0;
const HOLD_H: f64 = 20.0;
const BELIEF_H: f64 = 16.0;
const WRITES_H: f64 = 24.0;
/// Token labels closer than this would overprint each other.
const LABEL_GAP: f64 = 26.0;

pub fn draw(svg: &mut Svg, view: &RunView, scale: Scale, top: f64, rows: &mut Rows) -> f64 {
    if view.locks.is_empty() {
        return 0.0;
    }
    svg.open_g("", Some("locks"), &[]);
    let mut y = top;
    for track in &view.locks {
        let height = draw_track(svg, track, scale, y);
        rows.keys.insert(track.key.clone(), (y, height));
        y += height;
    }
    svg.close_g();
    y - top
}

fn draw_track(svg: &mut Svg, track: &LockTrack, scale: Scale, top: f64) -> f64 {
    let id = format!("lock-{}", crate::escape::id_part(&track.key));
    svg.open_g("lock", Some(&id), &[("data-key", track.key.clone())]);
    let is_lock = !track.holds.is_empty() || !track.beliefs.is_empty();
    let (title, note) = if is_lock {
        (format!("lock {}", track.key), "holder per the cluster, each client's belief (red: two at once), store writes with tokens")
    } else {
        (format!("store key {}", track.key), "the data store's writes, with the writer's token")
    };
    svg.text("section-title", 8.0, top + 13.0, "start", &title);
    svg.text("section-note", scale.x(0), top + 13.0, "start", note);
    let mut y = top + HEADER_H;
    if !track.holds.is_empty() {
        draw_holds(svg, track, scale, y);
        y += HOLD_H;
    }
    let clients: BTreeSet<u64> = track.beliefs.iter().map(|b| b.client).collect();
    let beliefs_top = y;
    let beliefs_h = clients.len() as f64 * BELIEF_H;
    for client in &clients {
        draw_beliefs(svg, track, *client, scale, y);
        y += BELIEF_H;
    }
    // Over the beliefs, so the red reads through whatever colours lie below.
    draw_overlaps(svg, &track.beliefs, scale, beliefs_top, beliefs_h);
    if !track.writes.is_empty() {
        draw_writes(svg, track, scale, y);
        y += WRITES_H;
    }
    svg.close_g();
    y - top
}

fn draw_holds(svg: &mut Svg, track: &LockTrack, scale: Scale, top: f64) {
    svg.open_g("holds", None, &[]);
    svg.text("row-label", 16.0, top + 14.0, "start", "holder (cluster)");
    let mut last_label_x = f64::MIN;
    for h in &track.holds {
        let (x, w) = (scale.x(h.start_ns), scale.w(h.start_ns, h.end_ns, 1.0));
        let mut attrs = span_attrs(h.start_ns, h.end_ns);
        attrs.extend([
            ("data-client", h.client.to_string()),
            ("data-token", h.token.to_string()),
            ("fill", palette::client(h.client).to_string()),
        ]);
        let title = format!(
            "c{} holds {} with token {} (lease {}): granted {}, {} {}",
            h.client,
            track.key,
            h.token,
            h.lease,
            secs(h.start_ns),
            h.end,
            secs(h.end_ns)
        );
        svg.rect("hold", x, top + 3.0, w, HOLD_H - 6.0, &attrs, Some(&title));
        let grant = format!("M{} {}L{} {}L{} {}Z", n(x), n(top), n(x + 4.0), n(top + 3.0), n(x), n(top + 6.0));
        svg.path("grant", &grant, &[at_attr(h.start_ns)], None);
        if w > 30.0 && x - last_label_x > LABEL_GAP {
            svg.text("bar-label", x + 3.0, top + 13.5, "start", &format!("c{} #{}", h.client, h.token));
            last_label_x = x;
        }
    }
    svg.close_g();
}

/// Instants where beliefs of two different clients overlap, merged.
pub fn overlaps(beliefs: &[Belief]) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for (i, a) in beliefs.iter().enumerate() {
        for b in &beliefs[i + 1..] {
            if a.client == b.client {
                continue;
            }
            let (start, end) = (a.start_ns.max(b.start_ns), a.end_ns.min(b.end_ns));
            if start < end {
                spans.push((start, end));
            }
        }
    }
    spans.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn draw_overlaps(svg: &mut Svg, beliefs: &[Belief], scale: Scale, top: f64, height: f64) {
    for (start, end) in overlaps(beliefs) {
        let title = format!("two clients believe they hold the lock: {} – {}", secs(start), secs(end));
        svg.rect("overlap", scale.x(start), top, scale.w(start, end, 2.0), height, &span_attrs(start, end), Some(&title));
    }
}

fn draw_beliefs(svg: &mut Svg, track: &LockTrack, client: u64, scale: Scale, top: f64) {
    svg.open_g("belief-row", None, &[("data-client", client.to_string())]);
    svg.text("row-label", 16.0, top + 12.0, "start", &format!("c{client} believes"));
    let color = palette::client(client);
    let mut last_label_x = f64::MIN;
    for b in track.beliefs.iter().filter(|b| b.client == client) {
        let (x, w) = (scale.x(b.start_ns), scale.w(b.start_ns, b.end_ns, 1.0));
        let mut attrs = span_attrs(b.start_ns, b.end_ns);
        attrs.extend([("data-token", b.token.to_string()), ("fill", color.to_string()), ("stroke", color.to_string())]);
        let title = format!(
            "c{client} believes it holds {} with token {}: {} – {} ({})",
            track.key,
            b.token,
            secs(b.start_ns),
            secs(b.end_ns),
            b.end
        );
        svg.rect("belief", x, top + 2.0, w, BELIEF_H - 4.0, &attrs, Some(&title));
        if w > 22.0 && x - last_label_x > LABEL_GAP {
            svg.text("belief-label", x + 3.0, top + 11.0, "start", &format!("#{}", b.token));
            last_label_x = x;
        }
    }
    svg.close_g();
}

fn draw_writes(svg: &mut Svg, track: &LockTrack, scale: Scale, top: f64) {
    svg.open_g("writes", None, &[]);
    svg.text("row-label", 16.0, top + 15.0, "start", "store writes");
    let mut highest_accepted = 0u64;
    let mut last_label_x = f64::MIN;
    let mut last_label_token = None;
    let cy = top + 15.0;
    for w in &track.writes {
        let x = scale.x(w.at_ns);
        let backwards = w.accepted && w.token < highest_accepted;
        let class = match (w.accepted, backwards) {
            (true, false) => "write accepted",
            (true, true) => "write accepted backwards",
            (false, _) => "write rejected",
        };
        let attrs = vec![at_attr(w.at_ns), ("data-client", w.client.to_string()), ("data-token", w.token.to_string())];
        let title = match (w.accepted, w.highest) {
            (true, _) if backwards => format!(
                "{}: store ACCEPTED c{}'s write with token {} after token {}: fencing went backwards",
                secs(w.at_ns),
                w.client,
                w.token,
                highest_accepted
            ),
            (true, _) => format!("{}: store accepted c{}'s write with token {}", secs(w.at_ns), w.client, w.token),
            (false, Some(h)) => {
                format!("{}: store rejected c{}'s write with token {} (highest accepted {h})", secs(w.at_ns), w.client, w.token)
            }
            (false, None) => format!("{}: store rejected c{}'s write with token {}", secs(w.at_ns), w.client, w.token),
        };
        svg.open_g(class, None, &attrs);
        svg.title(&title);
        if w.accepted {
            svg.circle("write-dot", x, cy, 4.5, &[("fill", palette::client(w.client).to_string())], None);
            if backwards {
                svg.circle("write-ring", x, cy, 7.5, &[], None);
            }
        } else {
            let d = format!(
                "M{} {}L{} {}M{} {}L{} {}",
                n(x - 4.5),
                n(cy - 4.5),
                n(x + 4.5),
                n(cy + 4.5),
                n(x - 4.5),
                n(cy + 4.5),
                n(x + 4.5),
                n(cy - 4.5)
            );
            svg.path("write-x", &d, &[], None);
        }
        svg.close_g();
        // Alerts always get their token; a repeat of the last label does not.
        let alert = backwards || !w.accepted;
        if alert || (x - last_label_x > LABEL_GAP && last_label_token != Some(w.token)) {
            svg.text(if alert { "write-label alert" } else { "write-label" }, x, top + 6.0, "middle", &w.token.to_string());
            last_label_x = x;
            last_label_token = Some(w.token);
        }
        if w.accepted {
            highest_accepted = highest_accepted.max(w.token);
        }
    }
    svg.close_g();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn belief(client: u64, start_ns: u64, end_ns: u64) -> Belief {
        Belief { client, token: client, start_ns, end_ns, end: "released".into() }
    }

    #[test]
    fn overlaps_are_between_different_clients_only() {
        let beliefs = [belief(1, 0, 10), belief(1, 5, 12), belief(2, 8, 20), belief(3, 9, 11), belief(2, 30, 40)];
        assert_eq!(overlaps(&beliefs), vec![(8, 12)]);
        assert!(overlaps(&[belief(1, 0, 10), belief(2, 10, 20)]).is_empty(), "back to back is fine");
    }
}
