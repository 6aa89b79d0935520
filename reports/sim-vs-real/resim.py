#!/usr/bin/env python3
"""Re-runs the simulated side of the sim-vs-real table and keeps the real side.

`leasesim-real compare` always plays both worlds; a change to the simulator
alone (a new `leasesim`) needs only its 20 seeds per row re-run, not the
20 real runs, which take the machine for an hour and whose timings are a
loaded machine's. This script reads every REAL/<target>/<scenario>.json (a
compare output) and its real.jsonl, runs `leasesim sweep FILE --seeds A..B
--json --jobs 1` with the compare's own seeds (as `compare` does,
real/src/compare/worlds.rs `simulate`), and writes OUT/<target>/<scenario>.json
with the simulated rates, spreads and "disagree" recomputed and the real side
copied, plus OUT/<target>/<scenario>/{sim,real}.jsonl.

The recomputation repeats real/src/compare/table.rs (Wilson 95 % interval as
judge/src/rate.rs, nearest-rank percentiles, an invariant counted once per
run); `resim.py --check REAL` recomputes REAL's objects from their own
sim.jsonl and exits 1 unless every field comes out equal, so the copy cannot
drift from the Rust unnoticed.

    python3 reports/sim-vs-real/resim.py --check reports/sim-vs-real/data
    python3 reports/sim-vs-real/resim.py BIN_DIR REAL_DIR OUT_DIR
"""
import json
import math
import pathlib
import shutil
import subprocess
import sys

Z = 1.959_963_984_540_054


def wilson(k, n):
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1.0 + Z * Z / n
    centre = (p + Z * Z / (2.0 * n)) / denom
    half = Z * math.sqrt(p * (1.0 - p) / n + Z * Z / (4.0 * n * n)) / denom
    lo = 0.0 if k == 0 else max(centre - half, 0.0)
    hi = 1.0 if k == n else min(centre + half, 1.0)
    return lo, hi


def rate(k, n):
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "p": 0.0 if n == 0 else k / n, "lo": lo, "hi": hi}


def disjoint(a, b):
    return a["hi"] < b["lo"] or b["hi"] < a["lo"]


def percentile(values, q):
    if not values:
        return None
    return values[min(max(math.ceil(q * len(values)) - 1, 0), len(values) - 1)]


FIGURES = {"holder-outlived": "holder_outlived", "failover-stall": "failover_stall"}


def spread(runs, figure):
    key = FIGURES[figure]
    values = sorted(v for r in runs for v in r.get("measures", {}).get(f"{key}_ms", []))
    return {
        "n": len(values),
        "unanswered": sum(r.get("measures", {}).get(f"{key}_unanswered", 0) for r in runs),
        "p10_ms": percentile(values, 0.1),
        "p50_ms": percentile(values, 0.5),
        "p90_ms": percentile(values, 0.9),
        "max_ms": values[-1] if values else None,
    }


def fired(run):
    return {v["invariant"] for v in run.get("violations", [])}


def recompute(comparison, sim_runs):
    """`comparison` with its simulated side taken from `sim_runs`."""
    out = json.loads(json.dumps(comparison))
    ids = [row["invariant"] for row in out["invariants"]]
    extra = sorted(set().union(*map(fired, sim_runs)) - set(ids)) if sim_runs else []
    if extra:
        # compare appends an invariant outside the checkers (engine-panic)
        # only when a run fired it; its real column would be a zero.
        real_n = out["real_runs"]
        out["invariants"] += [{"invariant": i, "sim": None, "real": rate(0, real_n), "disagree": False} for i in extra]
    for row in out["invariants"]:
        row["sim"] = rate(sum(row["invariant"] in fired(r) for r in sim_runs), len(sim_runs))
        row["disagree"] = row["real"] is not None and disjoint(row["real"], row["sim"])
    for t in out["timings"]:
        t["sim"] = spread(sim_runs, t["figure"])
    out["sim_runs"] = len(sim_runs)
    return out


def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.lstrip().startswith("{")]


def check(real_dir):
    bad = 0
    for f in sorted(real_dir.glob("*/*.json")):
        want = json.loads(f.read_text())
        got = recompute(want, lines(f.with_suffix("") / "sim.jsonl"))
        if got != want:
            bad += 1
            print(f"{f}: recomputed simulated side differs", file=sys.stderr)
    print(f"{len(list(real_dir.glob('*/*.json')))} compare outputs checked, {bad} differ")
    return 1 if bad else 0


def resim(bin_dir, real_dir, out_dir):
    for f in sorted(real_dir.glob("*/*.json")):
        comparison = json.loads(f.read_text())
        raw = out_dir / f.parent.name / f.stem
        raw.mkdir(parents=True, exist_ok=True)
        cmd = [str(bin_dir / "leasesim"), "sweep", comparison["file"], "--seeds", comparison["sim_seeds"], "--json", "--jobs", "1"]
        sweep = subprocess.run(cmd, capture_output=True, text=True)
        sim_lines = [l for l in sweep.stdout.splitlines() if l.lstrip().startswith("{")]
        lo, hi = map(int, comparison["sim_seeds"].split(".."))
        if len(sim_lines) != hi - lo:
            sys.exit(f"{' '.join(cmd)}: {len(sim_lines)} of {hi - lo} runs came back: {sweep.stderr.strip()}")
        (raw / "sim.jsonl").write_text("\n".join(sim_lines) + "\n")
        shutil.copyfile(f.with_suffix("") / "real.jsonl", raw / "real.jsonl")
        out = recompute(comparison, [json.loads(l) for l in sim_lines])
        (out_dir / f.parent.name / f.name).write_text(json.dumps(out, separators=(",", ":")) + "\n")
        print(f"{f.parent.name}/{f.stem}: {len(sim_lines)} simulated runs", file=sys.stderr)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--check":
        sys.exit(check(pathlib.Path(args[1])))
    if len(args) != 3:
        sys.exit(__doc__)
    resim(*map(pathlib.Path, args))


if __name__ == "__main__":
    main()
