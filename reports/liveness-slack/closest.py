#!/usr/bin/env python3
"""Closest liveness margins per scenario, from `leasesim sweep --json` lines.

Prints the Markdown table of reports/liveness-slack.md: per scenario, the
runs read, the seeds they cover, the run closest to its stated slack
(margin minus slack: negative means met by luck), that run's margin,
slack, seed and deadline, how many runs met a deadline by less than the
slack, the smallest margin in absolute terms, and unexpected runs.
Each run's line carries only its closest margin (`liveness_margin`).
With --csv, the same per-scenario figures as CSV (the compact record kept
in the repository instead of the raw JSON lines).
Usage: closest.py [--csv] RESULTS.jsonl...
"""
import collections
import csv
import json
import sys


def kind(deadline):
    if deadline.startswith("a leader"):
        return "leader"
    if "acquire" in deadline:
        return "acquire"
    if "lease" in deadline:
        return "lease end"
    return deadline


def cover(seeds):
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1] + 1}"
    return f"{len(seeds)} of {seeds[0]}..{seeds[-1] + 1}"


def load(paths):
    runs = collections.defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a shard cut mid-line
                runs[r["scenario"]][r["seed"]] = r
    return runs


def rows(runs):
    """Per scenario: (name, runs, seeds, closest margin's run or None, its seed,
    smallest margin's run, its seed, runs below slack, unexpected runs)."""
    for name in sorted(runs):
        rs = runs[name]
        ms = [(r["liveness_margin"], s) for s, r in rs.items() if r.get("liveness_margin")]
        below = sum(1 for m, _ in ms if m["margin_ns"] < m["slack_ns"])
        unexpected = sum(1 for r in rs.values() if not r.get("expected", True))
        m, seed = min(ms, key=lambda x: (x[0]["margin_ns"] - x[0]["slack_ns"], x[1])) if ms else (None, None)
        am, aseed = min(ms, key=lambda x: (x[0]["margin_ns"], x[1])) if ms else (None, None)
        yield name, len(rs), cover(sorted(rs)), m, seed, am, aseed, below, unexpected


def main(paths):
    runs = load(paths)
    print("| scenario | runs | seeds | closest: margin − slack | margin | slack | seed | deadline | runs below slack | smallest margin (seed) | unexpected |")
    print("|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    total = below_total = 0
    for name, n, seeds, m, seed, am, aseed, below, unexpected in rows(runs):
        total += n
        below_total += below
        if m is None:
            print(f"| {name} | {n} | {seeds} | – | – | – | – | – | 0 | – | {unexpected} |")
            continue
        print(
            f"| {name} | {n} | {seeds} | {(m['margin_ns'] - m['slack_ns']) / 1e9:+.3f} s "
            f"| {m['margin_ns'] / 1e9:.3f} s | {m['slack_ns'] / 1e9:.3f} s | {seed} | {kind(m['deadline'])}: {m['deadline']} "
            f"| {below} | {am['margin_ns'] / 1e9:.3f} s ({aseed}) | {unexpected} |"
        )
    print(f"\n{total} runs; {below_total} met a liveness deadline by less than the stated slack.")


def main_csv(paths):
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["scenario", "runs", "seeds", "closest_margin_minus_slack_ns", "margin_ns", "slack_ns", "seed", "deadline",
                  "runs_below_slack", "smallest_margin_ns", "smallest_margin_seed", "unexpected"])
    for name, n, seeds, m, seed, am, aseed, below, unexpected in rows(load(paths)):
        if m is None:
            out.writerow([name, n, seeds, "", "", "", "", "", below, "", "", unexpected])
            continue
        out.writerow([name, n, seeds, m["margin_ns"] - m["slack_ns"], m["margin_ns"], m["slack_ns"], seed, m["deadline"],
                      below, am["margin_ns"], aseed, unexpected])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--csv"]:
        main_csv(sys.argv[2:])
    else:
        main(sys.argv[1:])
