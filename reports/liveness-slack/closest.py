#!/usr/bin/env python3
"""Closest liveness margins per scenario, from `leasesim sweep --json` lines.

Prints the Markdown table of reports/liveness-slack.md: per scenario, the
runs read, the seeds they cover, the run closest to its stated slack
(margin minus slack: negative means met by luck), that run's margin,
slack, seed and deadline, how many runs met a deadline by less than the
slack, the smallest margin in absolute terms, and unexpected runs.
Each run's line carries only its closest margin (`liveness_margin`).
Usage: closest.py RESULTS.jsonl...
"""
import collections
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


def main(paths):
    runs = collections.defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a shard cut mid-line
                runs[r["scenario"]][r["seed"]] = r
    print("| scenario | runs | seeds | closest: margin − slack | margin | slack | seed | deadline | runs below slack | smallest margin (seed) | unexpected |")
    print("|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    total = below_total = 0
    for name in sorted(runs):
        rs = runs[name]
        ms = [(r["liveness_margin"], s) for s, r in rs.items() if r.get("liveness_margin")]
        below = sum(1 for m, _ in ms if m["margin_ns"] < m["slack_ns"])
        unexpected = sum(1 for r in rs.values() if not r.get("expected", True))
        total += len(rs)
        below_total += below
        if not ms:
            print(f"| {name} | {len(rs)} | {cover(sorted(rs))} | – | – | – | – | – | 0 | – | {unexpected} |")
            continue
        m, seed = min(ms, key=lambda x: (x[0]["margin_ns"] - x[0]["slack_ns"], x[1]))
        am, aseed = min(ms, key=lambda x: (x[0]["margin_ns"], x[1]))
        print(
            f"| {name} | {len(rs)} | {cover(sorted(rs))} | {(m['margin_ns'] - m['slack_ns']) / 1e9:+.3f} s "
            f"| {m['margin_ns'] / 1e9:.3f} s | {m['slack_ns'] / 1e9:.3f} s | {seed} | {kind(m['deadline'])}: {m['deadline']} "
            f"| {below} | {am['margin_ns'] / 1e9:.3f} s ({aseed}) | {unexpected} |"
        )
    print(f"\n{total} runs; {below_total} met a liveness deadline by less than the stated slack.")


if __name__ == "__main__":
    main(sys.argv[1:])
