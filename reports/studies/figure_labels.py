#!/usr/bin/env python3
"""Measures every study figure's text with a real renderer (issue 27,
"clipped labels"): a label that leaves its picture, sits on another label,
or has a line or marker drawn over it is listed.

Estimating a label's width from its character count (what the audit of
clock-skew-study.md did before) cannot say whether a label is cut: the width
depends on the font. This script inlines every committed
reports/studies/*/*.svg into one HTML page whose script asks headless
Chromium for each <text>'s bounding box, maps it into the SVG's own user
coordinates (through the text's transform, so a rotated axis title is
measured as drawn) and writes the boxes back into the page, which
`--dump-dom` prints, with every line, polyline and circle. Python then
compares each box with the picture's extent (its viewBox, else 0..width ×
0..height), with every other box of the same picture, and with every
stroked line and marker (cells' numbers, written on a white halo over the
heatmaps' edge lines by design, are not compared with lines). Python 3
standard library and Chromium only.

    python3 reports/studies/figure_labels.py             # every study figure
    python3 reports/studies/figure_labels.py FILE.svg …  # some figures

Exit status: 0 when no label is clipped, overlapping or drawn over, 1 when
some are (each listed), 2 when Chromium is missing or fails (said why).
`LEASESIM_CHROMIUM` names another Chromium binary. Widths depend on the
font: each pass is printed with its font, and a named font that is not
installed is said to be unmeasured.
"""

import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# A box may touch an edge or its neighbour by this much (px) before it
# counts: sub-pixel antialiasing, not a visible cut or collision.
TOLERANCE = 0.5

# Named fonts the figures are measured in besides the browser's own
# `sans-serif`, where installed: a viewer's `sans-serif` is whatever their
# system maps it to, and these two are the usual Linux ones (Chromium maps
# `sans-serif` to Arial's metrics, i.e. Liberation Sans; fontconfig, hence
# rsvg-convert and Firefox, to DejaVu Sans, which set the heatmaps' x
# title 14 % wider).
FONTS = ["DejaVu Sans", "Liberation Sans"]

# Per font (null: the browser's sans-serif), for every inlined <svg>: its
# extent, and per <text> its box in the SVG's user units (the four corners
# of getBBox() through the text's transform relative to the root, so a
# rotated title counts as drawn) and its text.
PAGE_SCRIPT = r"""
const style = document.getElementById('font');
// Whether a font is installed: a test string's width in it, falling back
// to a generic family, differs from the generic family's own.
function installed(family) {
  const c = document.createElement('canvas').getContext('2d');
  return ['monospace', 'serif'].some(g => {
    c.font = `40px ${g}`;
    const plain = c.measureText('mmmmmmmmmmlli WW 0.123').width;
    c.font = `40px "${family}", ${g}`;
    return c.measureText('mmmmmmmmmmlli WW 0.123').width !== plain;
  });
}
function measureAll(family) {
  style.textContent = family ? `svg, svg text { font-family: "${family}" !important; }` : '';
  const figures = [];
  for (const holder of document.querySelectorAll('div[data-file]')) {
    const svg = holder.querySelector('svg');
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const extent = (vb && vb.width > 0)
      ? [vb.x, vb.y, vb.width, vb.height]
      : [0, 0, svg.width.baseVal.value, svg.height.baseVal.value];
    const rootInverse = svg.getScreenCTM().inverse();
    const texts = [];
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      const m = rootInverse.multiply(t.getScreenCTM());
      const xs = [], ys = [];
      for (const [x, y] of [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]) {
        const p = new DOMPoint(x, y).matrixTransform(m);
        xs.push(p.x); ys.push(p.y);
      }
      texts.push({text: t.textContent, halo: t.getAttribute('paint-order') === 'stroke',
                  box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]});
    }
    // Lines and markers, in root coordinates: segments with half their
    // stroke width, and circles' boxes.
    const segments = [], marks = [];
    for (const g of svg.querySelectorAll('line, polyline, circle')) {
      const m = rootInverse.multiply(g.getScreenCTM());
      const at = (x, y) => { const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; };
      const half = parseFloat(getComputedStyle(g).strokeWidth || '1') / 2;
      if (g.tagName === 'circle') {
        const [cx, cy] = at(g.cx.baseVal.value, g.cy.baseVal.value), r = g.r.baseVal.value;
        marks.push([cx - r, cy - r, cx + r, cy + r]);
      } else if (g.tagName === 'line') {
        segments.push([...at(g.x1.baseVal.value, g.y1.baseVal.value), ...at(g.x2.baseVal.value, g.y2.baseVal.value), half]);
      } else {
        const pts = Array.from(g.points).map(p => at(p.x, p.y));
        for (let i = 1; i < pts.length; i++) segments.push([...pts[i - 1], ...pts[i], half]);
      }
    }
    figures.push({file: holder.dataset.file, extent, texts, segments, marks});
  }
  return figures;
}
const fonts = [null].concat(FONTS.filter(installed));
const out = fonts.map(f => ({font: f, figures: measureAll(f)}));
document.getElementById('out').textContent = JSON.stringify(out);
"""


# Measured with every figure: one label past the left edge, two labels on
# one another, one line through a label. If the measurement does not find
# exactly these, it is broken (no fonts, empty boxes) and nothing is
# reported as passed.
CANARY = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" font-family="sans-serif" font-size="11">'
          '<text x="0" y="20" text-anchor="middle">cut at the left</text>'
          '<text x="100" y="50">one label</text><text x="104" y="52">another</text>'
          '<line x1="0" y1="86" x2="200" y2="86" stroke="#000"/><text x="60" y="90">struck</text></svg>')
CANARY_FINDS = {"clipped": 1, "overlap": 1, "shape": 1}


def study_figures():
    """Every committed study figure, sorted."""
    return sorted(glob.glob(os.path.join(HERE, "*", "*.svg")))


def find_chromium():
    named = os.environ.get("LEASESIM_CHROMIUM")
    if named:
        return named if os.path.isfile(named) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def page(files):
    """The HTML page with every figure inlined (its XML prolog dropped)."""
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><style id='font'></style></head><body>"]
    for f in files:
        with open(f, encoding="utf-8") as fh:
            svg = re.sub(r"^\s*<\?xml[^>]*\?>", "", fh.read())
        parts.append(f"<div data-file='{html.escape(os.path.relpath(f, ROOT))}'>{svg}</div>")
    parts.append(f"<div data-file='(canary)'>{CANARY}</div>")
    script = f"const FONTS = {json.dumps(FONTS)};" + PAGE_SCRIPT
    parts.append("<pre id='out'></pre><script>" + script + "</script></body></html>")
    return "".join(parts)


def measure(files, chromium):
    """Runs Chromium on the page; returns the script's list, or raises
    RuntimeError saying why there is none."""
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "figures.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page(files))
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--force-device-scale-factor=1",
                f"--user-data-dir={os.path.join(work, 'profile')}", "--virtual-time-budget=5000", "--dump-dom",
                "file://" + path]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RuntimeError(f"{chromium} could not run: {e}")
    found = re.search(r"<pre id=\"out\">(.*?)</pre>", done.stdout, re.S)
    if done.returncode != 0 or not found or not found.group(1):
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"{chromium} exited {done.returncode} without the page's measurements: {tail}")
    return json.loads(html.unescape(found.group(1)))


def outside(box, extent):
    """How far (px) a box leaves the extent on each side it leaves."""
    x, y, w, h = extent
    sides = {"left": x - box[0], "top": y - box[1], "right": box[2] - (x + w), "bottom": box[3] - (y + h)}
    return {k: v for k, v in sides.items() if v > TOLERANCE}


def overlap(a, b):
    """The overlap of two boxes (width, height), both above the tolerance, or None."""
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    return (w, h) if w > TOLERANCE and h > TOLERANCE else None


def crosses(segment, box):
    """Whether a stroked segment enters a box by more than the tolerance
    (Liang–Barsky clipping of the segment against the box grown by half
    the stroke and shrunk by the tolerance)."""
    x1, y1, x2, y2, half = segment
    grow = half - TOLERANCE
    lo_x, lo_y, hi_x, hi_y = box[0] - grow, box[1] - grow, box[2] + grow, box[3] + grow
    if lo_x >= hi_x or lo_y >= hi_y:
        return False
    t0, t1 = 0.0, 1.0
    for p, q in ((x1 - x2, x1 - lo_x), (x2 - x1, hi_x - x1), (y1 - y2, y1 - lo_y), (y2 - y1, hi_y - y1)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
    return t0 < t1


def problems(figure):
    """Every clipped label, every overlapping pair of labels, and every
    line or marker drawn over a label (cells' numbers, written on a white
    halo over the edges by design, excepted) or leaving the picture."""
    found = []
    texts = figure["texts"]
    for t in texts:
        cut = outside(t["box"], figure["extent"])
        if cut:
            sides = ", ".join(f"{k} {v:.1f} px" for k, v in sorted(cut.items()))
            found.append(("clipped", f"clipped ({sides} outside): {t['text']!r}"))
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            o = overlap(a["box"], b["box"])
            if o:
                found.append(("overlap", f"overlap ({o[0]:.1f} × {o[1]:.1f} px): {a['text']!r} and {b['text']!r}"))
    plain = [t for t in texts if not t["halo"]]
    for s in figure["segments"]:
        ends = [s[0] - s[4], s[1] - s[4], s[0] + s[4], s[1] + s[4]], [s[2] - s[4], s[3] - s[4], s[2] + s[4], s[3] + s[4]]
        if any(outside(e, figure["extent"]) for e in ends):
            found.append(("shape", f"line ({s[0]:.1f}, {s[1]:.1f})–({s[2]:.1f}, {s[3]:.1f}) leaves the picture"))
        for t in plain:
            if crosses(s, t["box"]):
                found.append(("shape", f"line ({s[0]:.1f}, {s[1]:.1f})–({s[2]:.1f}, {s[3]:.1f}) over {t['text']!r}"))
    for m in figure["marks"]:
        for t in plain:
            if overlap(m, t["box"]):
                found.append(("shape", f"marker at ({(m[0] + m[2]) / 2:.1f}, {(m[1] + m[3]) / 2:.1f}) over {t['text']!r}"))
    return found


def check(files=None, out=sys.stdout):
    """Measures `files` (every study figure by default) in every font and
    prints each problem; returns the exit status (0 none, 1 some, 2 not
    measured)."""
    files = files or study_figures()
    chromium = find_chromium()
    if not chromium:
        print("figure labels: NOT MEASURED: no Chromium found (install Debian's `chromium`, "
              "or set LEASESIM_CHROMIUM to a Chromium binary)", file=out)
        return 2
    try:
        passes = measure(files, chromium)
    except RuntimeError as e:
        print(f"figure labels: NOT MEASURED: {e}", file=out)
        return 2
    if any(len(p["figures"]) != len(files) + 1 for p in passes):
        print(f"figure labels: NOT MEASURED: {len(files)} figures inlined but fewer measured", file=out)
        return 2
    status = 0
    for one in passes:
        font = f'"{one["font"]}"' if one["font"] else "the browser's sans-serif"
        canary = one["figures"].pop()
        found = {k: sum(kind == k for kind, _ in problems(canary)) for k in CANARY_FINDS}
        if found != CANARY_FINDS:
            print(f"figure labels: NOT MEASURED in {font}: the canary figure gave {found}, not {CANARY_FINDS}", file=out)
            return 2
        counts = {"clipped": 0, "overlap": 0, "shape": 0}
        with_problems = 0
        for figure in one["figures"]:
            found = problems(figure)
            with_problems += bool(found)
            for kind, what in found:
                counts[kind] += 1
                print(f"{figure['file']} [{font}]: {what}", file=out)
        labels = sum(len(f["texts"]) for f in one["figures"])
        print(f"figure labels in {font}: {len(files)} figures, {labels} labels: {counts['clipped']} clipped, "
              f"{counts['overlap']} overlapping pairs, {counts['shape']} lines or markers over a label or out of the picture, "
              f"in {with_problems} figures", file=out)
        status = max(status, 1 if any(counts.values()) else 0)
    missing = [f for f in FONTS if f not in [p["font"] for p in passes]]
    print(f"figure labels: measured by {chromium}" + (f"; not installed, not measured: {', '.join(missing)}" if missing else ""), file=out)
    return status


if __name__ == "__main__":
    sys.exit(check([os.path.abspath(f) for f in sys.argv[1:]]))
