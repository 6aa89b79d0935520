"""Tables and calibration plot of reports/leader-lease-reads.md from the
committed study output (reports/studies/leader-lease-reads/) and the frozen
forecast (reports/studies/leader-lease-reads-forecast.csv, committed at
7bea2c5 before any seed ran). Standard library only:

    python3 reports/studies/leader-lease-reads.py

prints the calibration table (markdown) and the invariants that fired per
cell, and writes reports/studies/leader-lease-reads/calibration.svg.
Observed values are measured; forecast values are the frozen model's.
"""
import csv, gzip, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "leader-lease-reads")
# One Wilson interval for every report: tables.py's (importing it runs
# nothing; no bytecode is left beside it).
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from tables import undecided, wilson  # noqa: E402

NOT_INVARIANTS = {"cell", "seed", "pause_at_ms", "jump_at_ms", "base_shift_ms", "unsafe", "lease_hours", "min_margin_ms",
                  "handovers", "handovers_release", "handovers_expiry", "handovers_overlapping", "max_overlap_ms",
                  "stale_rejected", "stale_accepted", "unavailability_samples", "unavailability_mean_ms", "false_expiries",
                  "predicted_gap_ms", "modelled", "predicted_overlap", "measured_overlap", "observed_delay_ms",
                  "max_renewal_lag_ms", "longest_pause_ms", "leaders", "digest", "not_judged"}

forecast = {int(r["cell"]): r for r in csv.DictReader(l for l in open(os.path.join(HERE, "leader-lease-reads-forecast.csv")) if not l.startswith("#"))}
results = json.load(open(os.path.join(OUT, "results.json")))
runs = list(csv.DictReader(gzip.open(os.path.join(OUT, "runs.csv.gz"), "rt")))
invariants = [k for k in runs[0] if k not in NOT_INVARIANTS]
print(f"build {results['build']}; runs {len(runs)}; distinct seeds {len({r['seed'] for r in runs})}")

print("\n| cell | T | leader drift | forecast p(stale) | observed k/n (measured) | Wilson 95 % | forecast inside | `linearizable` undecided (measured) |")
print("|---|---|---|---|---|---|---|---|")
points = []
for c in sorted(forecast):
    f = forecast[c]
    rs = [r for r in runs if int(r["cell"]) == c]
    n, k = len(rs), sum(int(r["linearizable"]) > 0 for r in rs)
    lo, hi = wilson(k, n)
    p = float(f["p_stale_run"])
    inside = "yes" if lo <= p <= hi else "**no**"
    points.append((p, k / n, lo, hi, c))
    print(f"| {c} | {f['election_timeout_ms']} ms | {float(f['leader_clock_drift']):g} | {p:.4f} | {k}/{n} = {k / n:.3f} | {lo:.3f}–{hi:.3f} | {inside} | {undecided(rs)} |")

print("\nInvariants that fired (runs of 60, measured):")
for c in sorted(forecast):
    rs = [r for r in runs if int(r["cell"]) == c]
    fired = {i: sum(int(r[i]) > 0 for r in rs) for i in invariants}
    fired = {i: n for i, n in fired.items() if n}
    seeds = [r["seed"] for r in rs if any(int(r[i]) > 0 for i in invariants)]
    print(f"  cell {c}: {fired or 'none'}; seeds {' '.join(seeds[:12])}{' …' if len(seeds) > 12 else ''}")


def cell_ranges(cells):
    """Cell numbers as runs: [0, 1, 2, 3, 6, 7] -> "0–3, 6–7"."""
    runs = []
    for c in sorted(cells):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs)


def point_labels(points, x, y):
    """One label per drawn point: cells drawn at the same spot (eight sit
    at the origin) share one label, and a label that would sit on an
    earlier label, a point, a whisker or the diagonal moves up a line and right, joined
    to its point by a thin line (figure_labels.py measured the labels:
    before this, 36 pairs of cell numbers were written on one another)."""
    spots, taken = {}, []
    for p, o, lo, hi, c in points:
        colour = "#1f77b4" if lo <= p <= hi else "#d62728"
        spots.setdefault((round(x(p), 1), round(y(o), 1), colour), []).append(c)
        taken.append((x(p) - 3.5, y(o) - 3.5, x(p) + 3.5, y(o) + 3.5))
        taken.append((x(p) - 1, y(hi), x(p) + 1, y(lo)))
    out = []
    for (px, py, colour), cells in sorted(spots.items(), key=lambda s: (-s[0][1], s[0][0])):
        text = cell_ranges(cells)
        # A generous box: 0.62 em per character at 11 px, 12 px tall.
        w = 0.62 * 11 * len(text)
        # The diagonal is x + y = x(0) + y(0) in pixels (the axes share a
        # scale, W == H): a label's box must lie wholly on one side of it.
        diagonal = x(0) + y(0)
        free = lambda lx, ly: (not any(lx < b[2] and b[0] < lx + w and ly - 12 < b[3] and b[1] < ly for b in taken)
                               and not lx + ly - 13 < diagonal < lx + w + ly + 1)
        lx, ly = next((px + 6 + dx, py - 4 - dy) for dy in range(0, 120, 12) for dx in range(0, 40, 8) if free(px + 6 + dx, py - 4 - dy))
        taken.append((lx, ly - 12, lx + w, ly))
        if ly != py - 4:
            out.append(f'<line x1="{px + 2.5}" y1="{py - 2.5}" x2="{lx - 1}" y2="{ly - 4}" stroke="{colour}" stroke-width="0.6"/>')
        out.append(f'<text x="{lx}" y="{ly}" fill="{colour}">{text}</text>')
    return out


def svg(points):
    """Forecast (x) against observed frequency (y) with Wilson bars and the
    diagonal; every point labelled with its cells."""
    W, H, M = 420, 420, 50
    x = lambda v: M + v * (W - 2 * M)
    y = lambda v: H - M - v * (H - 2 * M)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#999" stroke-dasharray="4 3"/>',
           f'<rect x="{x(0)}" y="{y(1)}" width="{x(1) - x(0)}" height="{y(0) - y(1)}" fill="none" stroke="#333"/>']
    for t in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<text x="{x(t)}" y="{y(0) + 15}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{x(0) - 6}" y="{y(t) + 4}" text-anchor="end">{t:g}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">forecast p(stale read) per run (frozen-v1-lease-read)</text>')
    out.append(f'<text x="14" y="{H / 2}" text-anchor="middle" transform="rotate(-90 14 {H / 2})">observed frequency, 60 runs, Wilson 95 %</text>')
    for p, o, lo, hi, c in points:
        colour = "#1f77b4" if lo <= p <= hi else "#d62728"
        out.append(f'<line x1="{x(p)}" y1="{y(lo)}" x2="{x(p)}" y2="{y(hi)}" stroke="{colour}"/>')
        out.append(f'<circle cx="{x(p)}" cy="{y(o)}" r="3.5" fill="{colour}"/>')
    out.extend(point_labels(points, x, y))
    out.append(f'<text x="{x(0) + 4}" y="{y(1) + 14}">blue: forecast inside the interval; red: outside</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


with open(os.path.join(OUT, "calibration.svg"), "w") as f:
    f.write(svg(points))
print(f"\nwrote {os.path.join(OUT, 'calibration.svg')}")
