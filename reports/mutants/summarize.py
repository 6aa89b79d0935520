#!/usr/bin/env python3
"""Folds the two stages' cargo-mutants outcomes into one verdict per mutant.

usage: summarize.py --sample SAMPLE.re --core OUTCOMES.json... --sim OUTCOMES.json... --csv OUT.csv

SAMPLE.re is what reports/mutants/sample.sh printed (one anchored, escaped
name a line): exactly those mutants are reported, each must have a stage 1
outcome, and outcomes of other mutants in the files are left out.

Stage 1 (--core) ran every sampled mutant against leasesim-core's tests;
stage 2 (--sim) ran the ones stage 1 missed against the simulator sweep
(sim/tests/mutant_sweep.rs). A mutant is
  killed      stage 1 or stage 2 caught it (a test failed),
  timeout     caught by the test timeout (stage 1, or stage 2 after a miss),
  survived    missed by both stages,
  unviable    did not build (stage 1).
killed_by says which suite: core-tests or sim-sweep. Prints the table per
folder with 95% Wilson intervals on the killed fraction, killed / viable, and on
the score, (killed + timeout) / viable (viable = not unviable).
"""

import argparse
import csv
import json
import math
import re
import sys
from collections import OrderedDict

FOLDERS = ["core/src/raft", "core/src/service", "core/src/server", "core/src/client"]


def outcomes(paths):
    out = OrderedDict()
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for o in data["outcomes"]:
            scenario = o["scenario"]
            if not isinstance(scenario, dict) or "Mutant" not in scenario:
                continue  # the baseline
            m = scenario["Mutant"]
            out[m["name"]] = (m, o["summary"])
    return out


def wilson(k, n, z=1.959964):
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", required=True)
    ap.add_argument("--core", nargs="+", required=True)
    ap.add_argument("--sim", nargs="*", default=[])
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    with open(args.sample) as f:
        sample = [re.sub(r"\\(.)", r"\1", line.strip()[1:-1]) for line in f if line.strip()]
    core = outcomes(args.core)
    sim = outcomes(args.sim)
    missing = [n for n in sample if n not in core]
    if missing:
        sys.exit(f"{len(missing)} sampled mutant(s) have no stage 1 outcome, e.g. {missing[0]!r}")
    rows = []
    for name in sample:
        m, summary = core[name]
        line = m["span"]["start"]["line"]
        if summary == "CaughtMutant":
            outcome, by = "killed", "core-tests"
        elif summary == "Timeout":
            outcome, by = "timeout", "core-tests"
        elif summary == "Unviable":
            outcome, by = "unviable", ""
        elif summary == "MissedMutant":
            if name not in sim:
                sys.exit(f"stage 1 missed {name!r} but stage 2 did not run it")
            s = sim[name][1]
            if s == "CaughtMutant":
                outcome, by = "killed", "sim-sweep"
            elif s == "Timeout":
                outcome, by = "timeout", "sim-sweep"
            elif s == "MissedMutant":
                outcome, by = "survived", ""
            else:
                sys.exit(f"stage 2 outcome {s!r} for {name!r}")
        else:
            sys.exit(f"stage 1 outcome {summary!r} for {name!r}")
        rows.append((name, m["file"], line, outcome, by))
    print(f"{len(sample)} sampled; left out of the files: {len(set(core) - set(sample))} stage 1 and {len(set(sim) - set(sample))} stage 2 outcome(s) of unsampled mutants", file=sys.stderr)
    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["mutant", "file", "line", "outcome", "killed_by"])
        for r in sorted(rows, key=lambda r: (r[1], r[2], r[0])):
            w.writerow(r)

    def folder(path):
        for fo in FOLDERS:
            if path.startswith(fo + "/"):
                return fo
        return "other"

    print("| folder | sampled | killed by core tests | killed only by the sim sweep | caught by timeout | survived | unviable | killed / viable (95% Wilson) | score = (killed + timeout) / viable (95% Wilson) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for fo in FOLDERS + ["all"]:
        sel = [r for r in rows if fo == "all" or folder(r[1]) == fo]
        kc = sum(1 for r in sel if r[3] == "killed" and r[4] == "core-tests")
        ks = sum(1 for r in sel if r[3] == "killed" and r[4] == "sim-sweep")
        t = sum(1 for r in sel if r[3] == "timeout")
        s = sum(1 for r in sel if r[3] == "survived")
        u = sum(1 for r in sel if r[3] == "unviable")
        viable = kc + ks + t + s
        label = f"`{fo}`" if fo != "all" else "**all four**"

        def frac(k):
            lo, hi = wilson(k, viable)
            return f"{k}/{viable} = {100 * k / viable:.1f}% ({100 * lo:.1f}–{100 * hi:.1f}%)" if viable else "n/a"

        print(f"| {label} | {len(sel)} | {kc} | {ks} | {t} | {s} | {u} | {frac(kc + ks)} | {frac(kc + ks + t)} |")


if __name__ == "__main__":
    main()
