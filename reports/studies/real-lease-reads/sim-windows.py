#!/usr/bin/env python3
"""The stale-read windows of real-lease-reads' simulated runs, from traces.

Why it exists: the frozen forecast (frozen-v1-lease-read) is a product of
two factors, p(window) (the old leader's lease outlasts the first write
the new leader commits) and P(stale | window) (a Get reaches the old
leader inside that window). In this shape no run read stale, so the
report must say which factor failed; that needs each run's window and the
Gets called in it, which only a trace shows. The first count of these
(sim-windows.txt before this script) was made by a script that was not
committed; this one is, and rewrites sim-windows.txt.

For each seed of cells 2, 4 and 5 (the cells played on real processes with
the drift outside the bound; or of the study and cells named on the command
line, e.g. `leader-lease-reads 11`) it prints the run's scenario
(`leasesim study SPEC --scenario-of CELL:SEED`), replays it with `leasesim
run --trace`, and reads from the trace (true times, in s):
- partition: the partition fault; the old leader: the server whose clock
  took the `leader` drift fault (it leads at the partition);
- elected: the first `BecameLeader` of another server after the partition;
- first_write: the first write (put or delete done, cas that succeeded)
  returning after `elected`, i.e. committed by the new leader (no leader
  can commit between the partition and `elected`);
- lease_end<=: the latest end of the old leader's lease, the partition
  plus L / (1 + drift) with L = T (1 - b) / (1 + b) on its clock: the
  last round it could have had acknowledged started at the partition at
  the latest, so this is an upper bound;
- window: first_write < lease_end<=; gets_in_window: Gets called in
  [first_write, lease_end<=), with the count per client in brackets
  (c1, c2 are the first kv workload's clients); stale: those of them that returned a value
  older than the first write (a revision below its revision, same key);
  stale_gets: every Get of the run that returned such a value, wherever it
  was called (the window bound above may be loose), and last_stale_call:
  the call time of the last of them, a lower bound on the old lease's
  real end.

    python3 reports/studies/real-lease-reads/sim-windows.py > reports/studies/real-lease-reads/sim-windows.txt
    python3 reports/studies/real-lease-reads/sim-windows.py leader-lease-reads 11   # another study's cells

LEASESIM names the binary (default target/release/leasesim, from the
repository root). Standard library only; the traces go to a temporary
directory and are removed.
"""

import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

STUDIES = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ROOT = os.path.abspath(os.path.join(STUDIES, "..", ".."))


def lease_end_bound_s(partition_ns, cell):
    """The old lease's latest end (true s): partition + L / (1 + drift)."""
    t_s = cell["params"]["election_timeout_ns"] / 1e9
    drift = cell["params"]["leader_clock_drift"]
    drift_bound = cell["params"]["drift_bound"]
    lease_s = t_s * (1 - drift_bound) / (1 + drift_bound)
    return partition_ns / 1e9 + lease_s / (1 + drift)


def write_revision(op, response):
    """The revision a call wrote at, or None if it wrote nothing."""
    if "Done" in response and ("Put" in op or "Delete" in op):
        return response["Done"]["revision"]
    if "Cas" in response and response["Cas"]["succeeded"]:
        return response["Cas"]["revision"]
    return None


def key_of(op):
    return next(iter(op.values())).get("key")


def calls(events):
    """Every KV call, in order of return: (client, called s, returned s,
    op, response); calls without a return are left out."""
    open_calls, done = {}, []
    for e in events:
        ev, proc = e["event"], e["proc"]
        if ev["kind"] == "kv-call":
            open_calls[(proc["Client"], ev["seq"])] = (e["at_ns"] / 1e9, ev["op"])
        elif ev["kind"] == "kv-return":
            called, op = open_calls.pop((proc["Client"], ev["seq"]))
            done.append((proc["Client"], called, e["at_ns"] / 1e9, op, ev["response"]))
    return done


def analyse(events, cell):
    """One run's line: partition, election, first write, window, Gets."""
    faults = [e for e in events if e["event"]["kind"] == "fault"]
    partition_ns = next(e["at_ns"] for e in faults if e["event"]["action"].startswith("partition"))
    old = next(e["event"]["action"] for e in faults if "leader drift" in e["event"]["action"])
    old_leader = int(old.split("clock of s", 1)[1].split(":", 1)[0])
    elected = next(
        (e["at_ns"] / 1e9 for e in events
         if e["at_ns"] > partition_ns and e["event"]["kind"] == "server" and e["proc"] != {"Server": old_leader}
         and "BecameLeader" in e["event"]["event"].get("Raft", {})),
        None,
    )
    end = lease_end_bound_s(partition_ns, cell)
    done = calls(events)
    writes = [(ret, write_revision(op, resp), key_of(op)) for _, _, ret, op, resp in done if elected is not None and ret > elected]
    first = next(((ret, rev, key) for ret, rev, key in writes if rev is not None), None)
    window = first is not None and first[0] < end
    gets = [(c, called, resp) for c, called, _, op, resp in done if "Get" in op and window and first[0] <= called < end and key_of(op) == first[2]]
    older = lambda op, resp: first is not None and key_of(op) == first[2] and "Value" in resp and resp["Value"]["revision"] < first[1]
    stale = sum(1 for _, _, resp in gets if older({"Get": {"key": first[2]}}, resp))
    by_client = {}
    for c, _, _ in gets:
        by_client[c] = by_client.get(c, 0) + 1
    stale_calls = [called for _, called, _, op, resp in done if "Get" in op and first and called > first[0] and older(op, resp)]
    return {
        "partition": partition_ns / 1e9,
        "elected": elected,
        "first_write": first[0] if first else None,
        "end": end,
        "window": window,
        "gets": len(gets),
        "by_client": " ".join(f"c{c}:{n}" for c, n in sorted(by_client.items())) or "-",
        "stale": stale,
        "stale_gets": len(stale_calls),
        "last_stale_call": max(stale_calls, default=None),
    }


def trace(binary, spec, tmp, cell, seed):
    """The run's observations, from a replay with --trace."""
    scenario = os.path.join(tmp, f"c{cell}-{seed}.toml")
    with open(scenario, "w") as f:
        subprocess.run([binary, "study", spec, "--scenario-of", f"{cell}:{seed}"], stdout=f, check=True)
    path = os.path.join(tmp, f"c{cell}-{seed}.jsonl")
    run = subprocess.run([binary, "run", scenario, "--seed", str(seed), "--trace", path], capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 1: an invariant fired, still a trace
        sys.exit(f"{scenario}: leasesim run failed: {run.stderr}")
    with open(path) as f:
        events = [json.loads(line) for line in f]
    os.remove(path)
    return events, run.stdout.split(";")[1].split()[-1]


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def build_of(binary, tmp):
    """The build BINARY records (regenerate.sh's probe: two runs of the
    smallest study, whose results.json names it)."""
    out = os.path.join(tmp, "probe")
    spec = os.path.join(STUDIES, "heavy-pauses-lognormal.toml")
    subprocess.run([binary, "study", spec, "--seeds", "0..1", "--out", out, "--jobs", "1"], capture_output=True, check=True)
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)["build"]


def committed_runs(study):
    """The study's committed runs: cell -> [(seed, digest, linearizable fired)]."""
    runs = {}
    with gzip.open(os.path.join(STUDIES, study, "runs.csv.gz"), "rt") as f:
        for r in csv.DictReader(f):
            runs.setdefault(int(r["cell"]), []).append((int(r["seed"]), r["digest"], int(r["linearizable"]) > 0))
    return runs


def main():
    binary = os.environ.get("LEASESIM", os.path.join(ROOT, "target", "release", "leasesim"))
    study = sys.argv[1] if len(sys.argv) > 1 else "real-lease-reads"
    cells = [int(c) for c in sys.argv[2:]] or [2, 4, 5]
    with open(os.path.join(STUDIES, study, "results.json")) as f:
        res = json.load(f)
    runs = committed_runs(study)
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"# sim-windows.py {study} {' '.join(map(str, cells))}: results.json of build {res['build']}; replayed by build {build_of(binary, tmp)}")
        for c in cells:
            t = {"runs": 0, "window": 0, "with_gets": 0, "gets": 0, "stale": 0, "stale_runs": 0, "fired": 0}
            for seed, committed, fired in runs[c]:
                events, digest = trace(binary, os.path.join(STUDIES, study + ".toml"), tmp, c, seed)
                if digest != committed:
                    sys.exit(f"cell {c} seed {seed}: digest {digest}, runs.csv.gz has {committed}: not the committed run")
                a = analyse(events, res["cells"][c])
                for k, v in [("runs", 1), ("window", a["window"]), ("with_gets", a["gets"] > 0), ("gets", a["gets"]),
                             ("stale", a["stale"]), ("stale_runs", a["stale_gets"] > 0), ("fired", fired)]:
                    t[k] += v
                print(
                    f"cell {c} seed {seed} partition {a['partition']:.3f} elected {fmt(a['elected'])} first_write {fmt(a['first_write'])} "
                    f"lease_end<= {a['end']:.3f} window {a['window']} gets_in_window {a['gets']} ({a['by_client']}) stale {a['stale']} "
                    f"stale_gets {a['stale_gets']} last_stale_call {fmt(a['last_stale_call'])} linearizable_fired {int(fired)}"
                )
            summary.append(
                f"# cell {c}: window in {t['window']}/{t['runs']} runs; a Get called in the window in {t['with_gets']}/{t['runs']} runs "
                f"({t['gets']} Gets, {t['stale']} stale); a stale Get anywhere in {t['stale_runs']}/{t['runs']} runs; "
                f"`linearizable` fired in {t['fired']}/{t['runs']} (runs.csv.gz)"
            )
    print("\n".join(summary))


if __name__ == "__main__":
    main()
