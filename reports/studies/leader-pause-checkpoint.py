"""Tables of reports/leader-pause-checkpoint.md from the committed study
output (reports/studies/leader-pause-checkpoint/) and the frozen forecast
(reports/studies/leader-pause-checkpoint-forecast.csv, committed before the
seeds ran). Standard library only: python3 reports/studies/leader-pause-checkpoint.py
"""
import csv, gzip, json, math, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "leader-pause-checkpoint")
# One Wilson interval for every report: tables.py's (importing it runs
# nothing; no bytecode is left beside it).
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from tables import wilson  # noqa: E402


def fisher(k1, n1, k2, n2):
    """Two-sided Fisher exact p (sum of tables no likelier than observed)."""
    K, N = k1 + k2, n1 + n2
    pr = lambda a: math.comb(n1, a) * math.comb(n2, K - a) / math.comb(N, K)
    obs = pr(k1)
    lo, hi = max(0, K - n2), min(K, n1)
    return min(1.0, sum(pr(a) for a in range(lo, hi + 1) if pr(a) <= obs * (1 + 1e-9)))


def quantile(xs, p):
    xs = sorted(xs)
    return xs[round((len(xs) - 1) * p)] if xs else float("nan")


forecast = {int(r["cell"]): r for r in csv.DictReader(l for l in open(os.path.join(HERE, "leader-pause-checkpoint-forecast.csv")) if not l.startswith("#"))}
results = json.load(open(os.path.join(OUT, "results.json")))
runs = list(csv.DictReader(gzip.open(os.path.join(OUT, "runs.csv.gz"), "rt")))
hand = list(csv.DictReader(gzip.open(os.path.join(OUT, "handovers.csv.gz"), "rt")))
print(f"build {results['build']}; runs {len(runs)}")

# The paused holder's hand-over: the first by expiry after its pause.
pause_at = {(r["cell"], r["seed"]): float(r["pause_at_ms"]) for r in runs}
by_run = {}
for h in hand:
    if h["cause"] == "expiry":
        by_run.setdefault((h["cell"], h["seed"]), []).append(h)

cells = sorted({int(r["cell"]) for r in runs})
obs = {}
print("\n| cell | leader pause | checkpoint | figure | forecast | observed k/n | Wilson 95 % | inside |")
print("|---|---|---|---|---|---|---|---|")
for c in cells:
    rs = [r for r in runs if int(r["cell"]) == c]
    n = len(rs)
    f = forecast[c]
    elected = sum(1 for r in rs if len(r["leaders"].split()) > 1)
    expiry = sum(1 for r in rs if (r["cell"], r["seed"]) in by_run)
    overlap = sum(1 for r in rs if int(r["lock_belief_overlap"]) > 0)
    early = sum(1 for r in rs if int(r["lease_early_expiry"]) > 0)
    unsafe = sum(1 for r in rs if int(r["unsafe"]) > 0)
    obs[c] = dict(n=n, elected=elected, expiry=expiry, overlap=overlap, early=early, unsafe=unsafe)
    for name, key, k in [("new leader", "p_election", elected), ("hand-over by expiry", "p_expiry_handover", expiry),
                         ("lock-belief-overlap", "p_overlap_run", overlap), ("lease-early-expiry", "p_early_expiry_run", early)]:
        p = float(f[key])
        lo, hi = wilson(k, n)
        inside = "yes" if lo - 1e-12 <= p <= hi + 1e-12 else "**no**"
        print(f"| {c} | {f['leader_pause_ms']} ms | {f['checkpoint_ms'] or 'off'} | {name} | {p:.4f} | {k}/{n} | [{lo:.3f}, {hi:.3f}] | {inside} |")

print("\nFired invariants per cell (runs): ")
for cell in results["cells"]:
    print(cell["index"], cell["params"].get("leader_pause_ns"), cell["params"].get("checkpoint_ns"), cell["metrics"]["invariant_runs"])

print("\n| cell | leader pause | checkpoint | gap forecast p10 / p50 / p90 / mean (ms) | observed p10 / p50 / p90 / mean (ms) | hand-overs | observed in forecast's 10-90 % |")
print("|---|---|---|---|---|---|---|")
gaps = {}
for c in cells:
    g = []
    for (cc, seed), hs in by_run.items():
        if int(cc) != c:
            continue
        after = [h for h in hs]
        g.append(float(after[0]["gap_ms"]))
    gaps[c] = g
    f = forecast[c]
    p10, p90 = float(f["gap_p10_ms"]), float(f["gap_p90_ms"])
    within = sum(1 for x in g if p10 <= x <= p90)
    mean = sum(g) / len(g) if g else float("nan")
    print(f"| {c} | {f['leader_pause_ms']} ms | {f['checkpoint_ms'] or 'off'} | {f['gap_p10_ms']} / {f['gap_p50_ms']} / {f['gap_p90_ms']} / {f['gap_mean_ms']} | "
          f"{quantile(g, .1):.1f} / {quantile(g, .5):.1f} / {quantile(g, .9):.1f} / {mean:.1f} | {len(g)} | {within}/{len(g)} |")

print("\nCheckpoint off against on, same leader pause (Fisher exact, two-sided):")
for off, on in [(0, 4), (1, 5), (2, 6), (3, 7)]:
    for key in ["early", "overlap", "unsafe"]:
        a, b = obs[off], obs[on]
        print(f"  pause cell {off} vs {on} {key}: {a[key]}/{a['n']} vs {b[key]}/{b['n']}  p = {fisher(a[key], a['n'], b[key], b['n']):.4f}")
pooled = lambda cs, key: (sum(obs[c][key] for c in cs), sum(obs[c]['n'] for c in cs))
k1, n1 = pooled([1, 2, 3], "early"); k2, n2 = pooled([5, 6, 7], "early")
print(f"  leader paused (200 ms, 1 s, 3 s) early expiry, off {k1}/{n1} vs on {k2}/{n2}: p = {fisher(k1, n1, k2, n2):.4f}  (pools the pause axis: a summary, not a panel)")

print("\nGap medians, checkpoint off vs on (Mann-Whitney U, normal approximation):")
def mwu(x, y):
    allv = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks = {}
    i = 0
    r = [0.0] * len(allv)
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        for k in range(i, j + 1):
            r[k] = (i + j) / 2 + 1
        i = j + 1
    r1 = sum(rk for rk, (v, g) in zip(r, allv) if g == 0)
    n1, n2 = len(x), len(y)
    u = r1 - n1 * (n1 + 1) / 2
    mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    z = (u - mu) / sd
    return u, 2 * (1 - 0.5 * (1 + math.erf(abs(z) / math.sqrt(2))))
for off, on in [(0, 4), (1, 5), (2, 6), (3, 7)]:
    u, p = mwu(gaps[off], gaps[on])
    print(f"  cells {off} vs {on}: median {quantile(gaps[off], .5):.1f} vs {quantile(gaps[on], .5):.1f} ms, U = {u:.0f}, p = {p:.2g}")

# After the Promote fix: the three checkpoint-on leader-pause cells on fresh
# seeds (fix 1: leader-pause-checkpoint-fresh.toml; fix 2:
# leader-pause-checkpoint-fresh2.toml), against the same cells of the study
# above. The labels name each side's build from its results.json: the
# study ran before the fix (8b1e4e1) until regenerate.sh reran everything
# with one build, after which both sides are the same fixed engine on
# different seeds, not a before/after comparison.
for FRESH in [os.path.join(HERE, d) for d in ("leader-pause-checkpoint-fresh", "leader-pause-checkpoint-fresh2")]:
    print(f"\n== {os.path.basename(FRESH)}")
    if os.path.exists(os.path.join(FRESH, "results.json")):
        fres = json.load(open(os.path.join(FRESH, "results.json")))
        fruns = list(csv.DictReader(gzip.open(os.path.join(FRESH, "runs.csv.gz"), "rt")))
        fhand = [h for h in csv.DictReader(gzip.open(os.path.join(FRESH, "handovers.csv.gz"), "rt")) if h["cause"] == "expiry"]
        print(f"\nFresh seeds, fixed engine: build {fres['build']}; runs {len(fruns)}")
        fby_run = {}
        for h in fhand:
            fby_run.setdefault((h["cell"], h["seed"]), []).append(h)
        print(f"\n| leader pause | figure | cells 5–7, seeds 350300..350480 (build {results['build']}) | Wilson 95 % | fresh seeds (build {fres['build']}) | Wilson 95 % |")
        print("|---|---|---|---|---|---|")
        fgaps = {}
        for fc, oc in [(0, 5), (1, 6), (2, 7)]:
            rs = [r for r in fruns if int(r["cell"]) == fc]
            n = len(rs)
            new = dict(elected=sum(1 for r in rs if len(r["leaders"].split()) > 1),
                       expiry=sum(1 for r in rs if (r["cell"], r["seed"]) in fby_run),
                       overlap=sum(1 for r in rs if int(r["lock_belief_overlap"]) > 0),
                       early=sum(1 for r in rs if int(r["lease_early_expiry"]) > 0),
                       unsafe=sum(1 for r in rs if int(r["unsafe"]) > 0))
            pause = forecast[oc]["leader_pause_ms"]
            for name, key in [("new leader", "elected"), ("hand-over by expiry", "expiry"), ("lease-early-expiry", "early"),
                              ("lock-belief-overlap", "overlap"), ("any unsafe invariant", "unsafe")]:
                a, b = obs[oc][key], new[key]
                (alo, ahi), (blo, bhi) = wilson(a, obs[oc]["n"]), wilson(b, n)
                print(f"| {pause} ms | {name} | {a}/{obs[oc]['n']} | [{alo:.3f}, {ahi:.3f}] | {b}/{n} | [{blo:.3f}, {bhi:.3f}] |")
            fgaps[fc] = [float(hs[0]["gap_ms"]) for (cc, _), hs in fby_run.items() if int(cc) == fc]
        k = sum(1 for r in fruns if int(r["lease_early_expiry"]) > 0)
        lo, hi = wilson(k, len(fruns))
        print(f"\nPooled over the three cells: lease-early-expiry {k}/{len(fruns)}, Wilson 95 % [{lo:.3f}, {hi:.3f}]")
        print(f"\nGap (ms), same cells, seeds 350300.. (build {results['build']}) against fresh seeds (build {fres['build']}) (Mann-Whitney U, normal approximation):")
        for fc, oc in [(0, 5), (1, 6), (2, 7)]:
            g, og = fgaps[fc], gaps[oc]
            u, p = mwu(og, g)
            q = lambda xs: f"{quantile(xs, .1):.1f} / {quantile(xs, .5):.1f} / {quantile(xs, .9):.1f}"
            print(f"  {forecast[oc]['leader_pause_ms']} ms: 350300..: {q(og)} (n {len(og)}), fresh: {q(g)} (n {len(g)}), U = {u:.0f}, p = {p:.2g}")
        print("\nFired invariants per fresh cell (runs):")
        for cell in fres["cells"]:
            print(cell["index"], cell["params"].get("leader_pause_ns"), cell["params"].get("checkpoint_ns"), cell["metrics"]["invariant_runs"])
