#!/usr/bin/env python3
"""Prints reports/sim-vs-real.md's tables from the compare outputs.

Reads every data/<target>/<scenario>.json (one `leasesim-real compare
--json` output each) under the directory given (default: this script's
data/), and prints one markdown table per target: per scenario, every
invariant that fired in either world with its count, Wilson 95 % interval
and whether the intervals are disjoint, every invariant the real run could
not judge, and the two timing figures. Nothing here is typed by hand: the
report's tables are this script's output, pasted.
"""
import json
import pathlib
import sys


def rate(r):
    if r is None:
        return "not judged"
    return f"{r['k']}/{r['n']} ({100 * r['lo']:.0f}–{100 * r['hi']:.0f} %)"


def ms(x):
    return "-" if x is None else f"{x:.0f}"


def timing(d, figure):
    for t in d["timings"]:
        if t["figure"] == figure:
            return t
    return None


def rows(d):
    fired = [i for i in d["invariants"] if (i["sim"] and i["sim"]["k"]) or (i["real"] and i["real"]["k"])]
    unjudged = [i["invariant"] for i in d["invariants"] if i["real"] is None]
    hold = timing(d, "holder-outlived")
    stall = timing(d, "failover-stall")
    times = [
        f"{ms(hold['sim']['p50_ms'])} (n={hold['sim']['n']}) / {ms(hold['real']['p50_ms'])} (n={hold['real']['n']})",
        f"{ms(stall['sim']['p50_ms'])} (n={stall['sim']['n']}) / {ms(stall['real']['p50_ms'])} (n={stall['real']['n']})",
        f"{ms(stall['sim']['p90_ms'])} / {ms(stall['real']['p90_ms'])}",
    ]
    name = d["scenario"]
    nj = ", ".join(unjudged) if unjudged else "none"
    if not fired:
        yield [name, "none fired", "none fired", "", *times, nj]
        return
    for k, inv in enumerate(fired):
        first = k == 0
        cells = [
            name if first else "",
            f"{inv['invariant']}: {rate(inv['sim'])}",
            rate(inv["real"]),
            "yes" if inv["disagree"] else "",
        ]
        yield cells + (times + [nj] if first else ["", "", "", ""])


def main():
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "data"
    # leasesim-node first, then etcd.
    for target_dir in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name != "node"):
        files = sorted(target_dir.glob("*.json"))
        if not files:
            continue
        first = json.loads(files[0].read_text())
        print(f"### Against {'leasesim-node' if target_dir.name == 'node' else 'etcd 3.4'}\n")
        print(
            f"| scenario | invariant fired: sim ({first['sim_runs']} seeds) | real ({first['real_runs']} runs) | disagree "
            "| holder-outlived p50 sim / real (ms) | failover-stall p50 sim / real (ms) | stall p90 sim / real | not judged for real |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for f in files:
            for row in rows(json.loads(f.read_text())):
                print("| " + " | ".join(row) + " |")
        print()


if __name__ == "__main__":
    main()
