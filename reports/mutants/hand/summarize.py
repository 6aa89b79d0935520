#!/usr/bin/env python3
"""Summaries for reports/mutants/hand.sh (not meant to be run by hand).

  summarize.py header
  summarize.py row NAME RUNS.jsonl BUILD CORE_TESTS [PATCH]   -> one CSV row
  summarize.py table RESULTS.csv COMMIT SEEDS CHAOS_SEEDS [relaxed]  -> Markdown

A run "catches" the mutation when it is unexpected (`"expected": false` in
`leasesim sweep --json`: an invariant outside the scenario's `[expect]`
fired). "Runs to first catch" counts runs in seed-major order, as `leasesim
hunt` sweeps: seed A of every scenario (in the sweep's file order), then
A+1, … (the chaos files' extra seeds come after the bundled ones).
"""
import csv
import io
import json
import re
import sys

FIELDS = [
    "patch", "kind", "caught_by_sim", "first_scenario", "first_seed", "first_invariants",
    "runs_to_first_catch", "runs", "unexpected_runs", "unexpected_invariants", "engine_panic_only",
    "first_checker_catch", "runs_to_first_checker_catch", "core_tests",
]


def kind_of(patch):
    if not patch:
        return ""
    with open(patch) as f:
        for line in f:
            m = re.search(r"kind:\s*(.+)$", line)
            if m:
                return m.group(1).strip()
    return ""


def unexpected_ids(run):
    expected = set(run.get("expected_violations") or [])
    ids = []
    for v in run.get("violations") or []:
        if v["invariant"] not in expected and v["invariant"] not in ids:
            ids.append(v["invariant"])
    return ids


def row(name, path, build, core_tests, patch=None):
    runs, first, first_checker, fired, unexpected = 0, None, None, [], 0
    if build == "built":
        all_runs, scenario_rank = [], {}
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                run = json.loads(line)
                if "seed" not in run:
                    continue
                scenario_rank.setdefault(run["scenario"], len(scenario_rank))
                all_runs.append(run)
        # Seed-major order, as `leasesim hunt` sweeps: seed A of every
        # scenario, then A+1, … (the sweep itself streams file by file).
        all_runs.sort(key=lambda r: (r["seed"], scenario_rank[r["scenario"]]))
        for run in all_runs:
                runs += 1
                if run.get("expected", True):
                    continue
                unexpected += 1
                ids = unexpected_ids(run) or ["(expectation)"]
                for i in ids:
                    if i not in fired:
                        fired.append(i)
                if first is None:
                    first = (run["scenario"], run["seed"], ids, runs)
                if first_checker is None and any(i != "engine-panic" for i in ids):
                    first_checker = (run["scenario"], run["seed"], ids, runs)
    caught = "unviable" if build != "built" else ("yes" if first else "no")
    out = {
        "patch": name,
        "kind": kind_of(patch),
        "caught_by_sim": caught,
        "first_scenario": first[0] if first else "",
        "first_seed": first[1] if first else "",
        "first_invariants": ";".join(first[2]) if first else "",
        "runs_to_first_catch": first[3] if first else "",
        "runs": runs,
        "unexpected_runs": unexpected,
        "unexpected_invariants": ";".join(fired),
        "engine_panic_only": ("yes" if fired == ["engine-panic"] else "no") if first else "",
        "first_checker_catch": f"{first_checker[0]}:{first_checker[1]}:{';'.join(first_checker[2])}" if first_checker else "",
        "runs_to_first_checker_catch": first_checker[3] if first_checker else "",
        "core_tests": core_tests,
    }
    buf = io.StringIO()
    csv.DictWriter(buf, FIELDS, lineterminator="\n").writerow(out)
    return buf.getvalue().rstrip("\n")


def table(path, commit, seeds, chaos_seeds, relaxed=False):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    print(f"Commit `{commit[:12]}`; sweep seeds {seeds} (hand.sh's HAND_SCENARIOS, default scenarios/), "
          f"chaos files seeds {chaos_seeds or 'none'}"
          + ("; engine `invariant!` assertions compiled out (--relax)" if relaxed else ""))
    print()
    print("| mutation | kind | caught by sim | first catch (scenario, seed: invariants) | runs to first catch | unexpected runs / runs | invariants seen | engine-panic only | first checker catch (runs) | core tests |")
    print("|---|---|---|---|---:|---:|---|---|---|---|")
    for r in rows:
        first = f"{r['first_scenario']} {r['first_seed']}: {r['first_invariants']}" if r["first_scenario"] else "—"
        checker = f"{r['first_checker_catch']} ({r['runs_to_first_checker_catch']})" if r["first_checker_catch"] else "—"
        print(f"| {r['patch']} | {r['kind']} | {r['caught_by_sim']} | {first} | {r['runs_to_first_catch'] or '—'} | "
              f"{r['unexpected_runs']} / {r['runs']} | {r['unexpected_invariants'].replace(';', ', ') or '—'} | "
              f"{r['engine_panic_only'] or '—'} | {checker} | {r['core_tests']} |")
    caught = sum(r["caught_by_sim"] == "yes" for r in rows)
    by_checker = sum(bool(r["first_checker_catch"]) for r in rows)
    viable = sum(r["caught_by_sim"] != "unviable" for r in rows)
    core = sum(r["core_tests"] == "caught" for r in rows)
    core_run = sum(r["core_tests"] not in ("skipped", "") for r in rows)
    print()
    print(f"Caught by the simulator: {caught}/{viable} viable; by an invariant checker (not only engine-panic): "
          f"{by_checker}/{viable}; by core's tests: " + (f"{core}/{core_run}." if core_run else "not run."))


def main(argv):
    if argv[1] == "header":
        print(",".join(FIELDS))
    elif argv[1] == "row":
        print(row(*argv[2:]))
    elif argv[1] == "table":
        table(argv[2], argv[3], argv[4], argv[5], len(argv) > 6 and argv[6] == "relaxed")
    else:
        sys.exit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
