#!/usr/bin/env python3
"""The checks behind reports/sim-vs-real.md's explanations, from run lines
(`leasesim run --json`, `leasesim-real run --json`, or a compare's --raw
sim.jsonl / real.jsonl) and traces (`--trace`), the same in both worlds.

  probe.py pauses RUNS.jsonl [TRACE_DIR]
      Per client pause of a lock scenario: whether a lock-belief-overlap
      naming the paused client as the earlier holder followed (within 5 s),
      and, with TRACE_DIR/<seed>.jsonl, what the client was doing when the
      pause began (holding: a belief open; waiting: an acquire sent and not
      granted; released: neither), whether a member granted it the lock
      during the pause, and which of its own events were stamped inside it.

  probe.py early-by RUNS.jsonl
      Per clock fault instant (whole second of the expiry): lease-early-
      expiry margins, and where the lease's last acknowledged renewal was
      sent relative to the fault (before it, or in the same second).

Kept beside table.py so that every figure the report quotes from traces
comes from one script, run the same way on both worlds' files.
"""
import collections
import json
import pathlib
import re
import sys


def runs(path):
    for line in open(path):
        if line.strip():
            yield json.loads(line)


def client(proc):
    return proc.get("Client") if isinstance(proc, dict) else None


def pause_states(trace):
    """(client, paused_at_ns, resumed_at_ns, state, granted_in_pause, own events inside)."""
    obs = [json.loads(line) for line in open(trace)]
    for o in obs:
        if o["event"]["kind"] != "paused" or client(o["proc"]) is None:
            continue
        c, t0 = client(o["proc"]), o["at_ns"]
        t1 = min((r["at_ns"] for r in obs if r["event"]["kind"] == "resumed" and client(r["proc"]) == c and r["at_ns"] > t0), default=None)
        if t1 is None:
            continue
        state = "released"
        for e in obs:
            if e["at_ns"] >= t0:
                break
            kind = e["event"]["kind"] if client(e["proc"]) == c else None
            state = {"belief-started": "holding", "belief-ended": "released", "acquire-sent": "waiting"}.get(kind, state)
        granted = any(
            e["event"]["kind"] == "server" and t0 <= e["at_ns"] < t1 and f'"client": {c},' in json.dumps(e["event"]) and '"LockGranted"' in json.dumps(e["event"])
            for e in obs
        )
        inside = collections.Counter(e["event"]["kind"] for e in obs if client(e["proc"]) == c and t0 < e["at_ns"] < t1)
        yield c, t0, t1, state, granted, dict(inside)


def pauses(path, trace_dir=None):
    total = collections.Counter()
    for run in runs(path):
        overlaps = [v for v in run["violations"] if v["invariant"] == "lock-belief-overlap"]
        if trace_dir is None:
            continue
        for c, t0, t1, state, granted, inside in pause_states(pathlib.Path(trace_dir) / f"{run['seed']}.jsonl"):
            mine = any(v["detail"].startswith(f"c{c} ") and t0 <= v["at_ns"] < t0 + 5_000_000_000 for v in overlaps)
            total[(state, mine)] += 1
            print(f"seed {run['seed']}: c{c} paused at {t0 / 1e9:.3f}s while {state}; granted during the pause: {granted}; overlap: {mine}; own events inside: {inside or 'none'}")
    fired = sum(1 for run in runs(path) if any(v["invariant"] == "lock-belief-overlap" for v in run["violations"]))
    print(f"runs with lock-belief-overlap: {fired}/{sum(1 for _ in runs(path))}")
    for (state, mine), n in sorted(total.items()):
        print(f"pauses while {state}, {'with' if mine else 'without'} an overlap: {n}")


EARLY = re.compile(r"expired on s\d at ([\d.]+)s, ([\d.]+)s before .*last acknowledged renewal sent at ([\d.]+)s")


def early_by(path):
    seen = collections.defaultdict(list)
    for run in runs(path):
        for v in run["violations"]:
            m = v["invariant"] == "lease-early-expiry" and EARLY.search(v["detail"])
            if m:
                at, by, sent = map(float, m.groups())
                seen[int(at)].append((by, int(sent) == int(at)))
    for second, rows in sorted(seen.items()):
        bys = sorted(b for b, _ in rows)
        same = sum(1 for _, s in rows if s)
        print(
            f"expiries in second {second}: n={len(rows)}, early by min/p50/max {bys[0]:.3f}/{bys[len(bys) // 2]:.3f}/{bys[-1]:.3f} s; "
            f"last renewal sent in that same second (after the fault) for {same}, a second earlier for {len(rows) - same}"
        )


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "pauses":
        pauses(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif len(sys.argv) == 3 and sys.argv[1] == "early-by":
        early_by(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
