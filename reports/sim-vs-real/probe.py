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

  probe.py stalls TRACE.jsonl...
      Per server crash or pause (the failover-stall's start): when a new
      leader took office, which acknowledged lease request ended the
      stall (client, first sent, answered, which member logged the
      answer), and when that client's previous acknowledged request had
      been sent (its keep-alive phase against the fault).

  probe.py sessions TRACE.jsonl DEBUG.log [CLIENT]
      A simulated client's session, request by request (sends, timeouts,
      redirects), from the stderr of a `leasesim` built with
      session-debug.patch, in true time: each line's client clock is
      mapped to true time by the offset that matches the most of the
      client's acknowledged lease requests in TRACE (the client's
      `lease-acked` stamps). CLIENT defaults to the one whose
      acknowledgement ended the first failover-stall; the lines shown run
      from 50 ms before that fault to the stall's end.

  probe.py points REAL.jsonl | probe.py points TRACE.jsonl...
      Server crash points: armed, reached (the member crashed there) and
      never reached, per selector (leader, follower, random-server), and
      the faults skipped for want of a leader ("crash leader", "block
      leader"); for real runs also timed server crashes and server pauses.
      REAL.jsonl: a compare's real.jsonl (its runs'
      `faults`); TRACE.jsonl: simulated traces (`leasesim run --trace`,
      the Admin `arm #N` and `crash sK at P (fault #N)` notes). Real runs
      before 368d045 carry no entry numbers, so only their other faults
      are counted. Since f139ea3 a real `random-server` point is armed in
      every member ("crash random-server armed at P (#N)") and one never
      reached is skipped as "no member reached P".

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


def stalls(paths):
    for path in paths:
        obs = [json.loads(line) for line in open(path)]
        kind = lambda o: o["event"]["kind"]
        server = lambda o: o["proc"].get("Server") if isinstance(o["proc"], dict) else None
        for fault in (o for o in obs if server(o) is not None and kind(o) in ("crashed", "paused")):
            t0 = fault["at_ns"]
            elected = next((o for o in obs if o["at_ns"] > t0 and "BecameLeader" in json.dumps(o["event"])), None)
            ack = next((o for o in obs if kind(o) == "lease-acked" and o["event"]["sent_at_ns"] >= t0), None)
            if ack is None:
                print(f"{path}: s{server(fault)} {kind(fault)} at {t0 / 1e9:.3f}s: no acknowledgement after it")
                continue
            c = client(ack["proc"])
            before = [o["event"]["sent_at_ns"] for o in obs if kind(o) == "lease-acked" and client(o["proc"]) == c and o["event"]["sent_at_ns"] < t0]
            answered = next((o for o in reversed(obs) if o["at_ns"] <= ack["at_ns"] and server(o) is not None and "KeepAliveAnswered" in json.dumps(o["event"])), None)
            print(
                f"{path}: s{server(fault)} {kind(fault)} at {t0 / 1e9:.3f}s; "
                f"new leader {('s%d at %.3fs' % (server(elected), elected['at_ns'] / 1e9)) if elected else 'none'}; "
                f"stall {(ack['at_ns'] - t0) / 1e6:.0f} ms, ended by c{c}'s request first sent at {ack['event']['sent_at_ns'] / 1e9:.3f}s "
                f"(+{(ack['event']['sent_at_ns'] - t0) / 1e6:.0f} ms), answered at {ack['at_ns'] / 1e9:.3f}s "
                f"({(ack['at_ns'] - ack['event']['sent_at_ns']) / 1e6:.0f} ms after its first send; last keep-alive answer logged by "
                f"{('s%d' % server(answered)) if answered else '-'}); c{c}'s previous acknowledged request sent at "
                f"{(max(before) / 1e9) if before else float('nan'):.3f}s"
            )


def sessions(trace, debug, who=None):
    obs = [json.loads(line) for line in open(trace)]
    kind = lambda o: o["event"]["kind"]
    fault = next(o["at_ns"] for o in obs if isinstance(o["proc"], dict) and "Server" in o["proc"] and kind(o) in ("crashed", "paused"))
    ack = next(o for o in obs if kind(o) == "lease-acked" and o["event"]["sent_at_ns"] >= fault)
    c = int(who) if who else client(ack["proc"])
    sends = [o["event"]["sent_at_ns"] for o in obs if kind(o) == "lease-acked" and client(o["proc"]) == c]
    stamp = re.compile(r" t=(\d+) ")
    lines = [line.rstrip() for line in open(debug) if line.startswith(f"DBG c{c} ")]
    monos = {int(stamp.search(line).group(1)) for line in lines if " send " in line}
    offsets = collections.Counter(m - t for m in monos for t in sends)
    offset, matched = offsets.most_common(1)[0]
    end = ack["at_ns"] if client(ack["proc"]) == c else fault + 3_000_000_000
    print(f"c{c}: clock offset matches {matched} of {len(sends)} acknowledged requests; fault at {fault / 1e9:.3f}s")
    for line in lines:
        t = int(stamp.search(line).group(1)) - offset
        if fault - 50_000_000 <= t <= end + 10_000_000:
            print(f"{t / 1e9:.4f}s {stamp.sub(' ', line)}")


SERVER_SELECTORS = ("leader", "follower", "random-server", "s")


def points_real(path, armed, reached, other):
    for run in runs(path):
        selector = {}
        for fault in run["faults"]:
            text = fault.split(": ", 1)[1]
            m = re.search(r"crash (\S+?)(=s\d+)? armed at \S+ \(#(\d+)\)", text)
            if m and m.group(1).startswith(SERVER_SELECTORS) and not m.group(1).startswith("the"):
                selector[m.group(3)] = m.group(1)
                armed[m.group(1)] += 1
            elif m := re.search(r"\(failpoint #(\d+)\)", text):
                reached[selector[m.group(1)]] += 1
            elif "claimed" in text and "stopped by another fault" in text:
                other["claimed, its member stopped by another fault first"] += 1
            elif text.startswith("skipped") and "never reached" not in text and "no member reached" not in text:
                other["skipped: " + re.sub(r"^skipped (\[chaos\]|line \d+): ", "", text).split(":")[0]] += 1
            elif not text.startswith("skipped") and re.search(r"crash (\S+=)?s\d+ for", text):
                other["timed server crash"] += 1
            elif re.search(r"pause (\S+=)?s\d+", text):
                other["server pause"] += 1


def points_sim(path, armed, reached, other):
    selector = {}
    for line in open(path):
        o = json.loads(line)
        if o["proc"] != "Admin" or o["event"].get("kind") not in ("fault", "fault-skipped"):
            continue
        text = o["event"]["action"]
        if o["event"]["kind"] == "fault-skipped":
            other["skipped: " + text.split(":")[0]] += 1
        elif m := re.match(r"arm #(\d+): crash (\S+) when", text):
            if m.group(2).startswith(SERVER_SELECTORS):
                selector[m.group(1)] = m.group(2)
                armed[m.group(2)] += 1
        elif m := re.search(r"crash s\d+ at \S+ \(fault #(\d+)\)", text):
            if m.group(1) in selector:
                reached[selector[m.group(1)]] += 1


def points(paths):
    armed, reached, other = collections.Counter(), collections.Counter(), collections.Counter()
    for path in paths:
        if path.endswith("real.jsonl"):
            points_real(path, armed, reached, other)
        else:
            points_sim(path, armed, reached, other)
    for selector in sorted(armed):
        print(f"{selector}: reached {reached[selector]} of {armed[selector]} armed")
    total = sum(armed.values())
    print(f"all: reached {sum(reached.values())} of {total} armed, never reached {total - sum(reached.values())}")
    for key in sorted(other):
        print(f"{key}: {other[key]}")


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "sessions":
        sessions(*sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "stalls":
        stalls(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "pauses":
        pauses(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif len(sys.argv) >= 3 and sys.argv[1] == "points":
        points(sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "early-by":
        early_by(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
