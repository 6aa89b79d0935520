//! The drawing surface: true time to x, and a small writer of SVG elements
//! so the row painters say what they draw, not how SVG spells it.
//!
//! Every element carries a `class` (what it is) and, where it marks time,
//! `data-*-ns` attributes in exact nanoseconds: the page's script and the
//! structural tests read those, never the rounded geometry.

use std::fmt::Write;

use crate::escape::xml;

/// Width of the drawing in SVG user units; the page scales it to fit.
pub const WIDTH: f64 = 1400.0;
/// The gutter on the left holds lane names.
pub const LEFT: f64 = 180.0;
pub const RIGHT: f64 = 24.0;

/// Maps true time onto the plot.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub end_ns: u64,
}

impl Scale {
    pub fn new(end_ns: u64) -> Self {
        // An empty run still gets a drawable axis.
        Scale { end_ns: end_ns.max(1) }
    }

    pub fn plot_width(&self) -> f64 {
        WIDTH - LEFT - RIGHT
    }

    pub fn x(&self, at_ns: u64) -> f64 {
        LEFT + (at_ns.min(self.end_ns) as f64 / self.end_ns as f64) * self.plot_width()
    }

    /// Width of a span, at least `min` so an instant-long span stays visible.
    pub fn w(&self, start_ns: u64, end_ns: u64, min: f64) -> f64 {
        (self.x(end_ns) - self.x(start_ns)).max(min)
    }
}

/// Rounds geometry to 0.1 unit: enough for the eye, short in the file.
pub fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// An SVG document being written.
#[derive(Default)]
pub struct Svg {
    pub out: String,
}

impl Svg {
    /// Opens `<g>` with a class, an optional id and extra attributes
    /// (name, unescaped value).
    pub fn open_g(&mut self, class: &str, id: Option<&str>, attrs: &[(&str, String)]) {
        self.out.push_str("<g");
        if let Some(id) = id {
            let _ = write!(self.out, " id=\"{}\"", xml(id));
        }
        if !class.is_empty() {
            let _ = write!(self.out, " class=\"{}\"", xml(class));
        }
        self.attrs(attrs);
        self.out.push('>');
    }

    pub fn close_g(&mut self) {
        self.out.push_str("</g>");
    }

    fn attrs(&mut self, attrs: &[(&str, String)]) {
        for (name, value) in attrs {
            let _ = write!(self.out, " {name}=\"{}\"", xml(value));
        }
    }

    /// A rectangle; `title` becomes its hover text.
    #[allow(clippy::too_many_arguments)]
    pub fn rect(&mut self, class: &str, x: f64, y: f64, w: f64, h: f64, attrs: &[(&str, String)], title: Option<&str>) {
        let _ = write!(self.out, "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", xml(class), n(x), n(y), n(w), n(h));
        self.attrs(attrs);
        self.end("rect", title);
    }

    pub fn line(&mut self, class: &str, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &[(&str, String)]) {
        let _ = write!(self.out, "<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"", xml(class), n(x1), n(y1), n(x2), n(y2));
        self.attrs(attrs);
        self.out.push_str("/>");
    }

    pub fn path(&mut self, class: &str, d: &str, attrs: &[(&str, String)], title: Option<&str>) {
        let _ = write!(self.out, "<path class=\"{}\" d=\"{}\"", xml(class), d);
        self.attrs(attrs);
        self.end("path", title);
    }

    pub fn circle(&mut self, class: &str, cx: f64, cy: f64, r: f64, attrs: &[(&str, String)], title: Option<&str>) {
        let _ = write!(self.out, "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\"", xml(class), n(cx), n(cy), n(r));
        self.attrs(attrs);
        self.end("circle", title);
    }

    /// Text anchored at (x, y); `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, class: &str, x: f64, y: f64, anchor: &str, body: &str) {
        let _ =
            write!(self.out, "<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>", xml(class), n(x), n(y), xml(body));
    }

    pub fn title(&mut self, title: &str) {
        let _ = write!(self.out, "<title>{}</title>", xml(title));
    }

    /// Ends the element opened as `tag`: empty, or holding its hover title.
    fn end(&mut self, tag: &str, title: Option<&str>) {
        match title {
            Some(t) => {
                let _ = write!(self.out, "><title>{}</title></{tag}>", xml(t));
            }
            None => self.out.push_str("/>"),
        }
    }
}

/// Data attributes for a span or an instant, in exact nanoseconds.
pub fn span_attrs(start_ns: u64, end_ns: u64) -> Vec<(&'static str, String)> {
    vec![("data-start-ns", start_ns.to_string()), ("data-end-ns", end_ns.to_string())]
}

pub fn at_attr(at_ns: u64) -> (&'static str, String) {
    ("data-at-ns", at_ns.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_maps_onto_the_plot() {
        let s = Scale::new(10);
        assert_eq!(s.x(0), LEFT);
        assert_eq!(s.x(10), WIDTH - RIGHT);
        assert_eq!(s.x(99), WIDTH - RIGHT, "clamped to the end");
        assert_eq!(s.w(5, 5, 2.0), 2.0);
    }

    #[test]
    fn elements_with_titles_close_themselves() {
        let mut svg = Svg::default();
        svg.rect("role", 1.0, 2.0, 3.25, 4.0, &[("data-term", "3".into())], Some("leader <t3>"));
        assert_eq!(
            svg.out,
            "<rect class=\"role\" x=\"1\" y=\"2\" width=\"3.3\" height=\"4\" data-term=\"3\"><title>leader &lt;t3&gt;</title></rect>"
        );
        assert_eq!(n(-0.04), "0");
    }
}
