#!/bin/sh
# Plays every run of a study spec on real processes (leasesim-node, or etcd
# 3.4 with TARGET=etcd): for each
# cell and seed of the spec (seeds_per_cell = "distinct", a fixed `seeds`
# range), prints the run's scenario with `leasesim study --scenario-of` and
# plays it with `leasesim-real run --target $TARGET --seed SEED --json`,
# appending one JSON line per run (with its cell) to OUT. Runs one at a time.
# A seed already in OUT is skipped (so an interrupted series resumes). A
# cluster that fails to start (the runner prints no outcome: on a loaded
# machine a member's control URL can refuse the first clock change) is not
# a run: the same seed is tried again, up to three times, and each failed
# start is appended to OUT.failed-starts with the runner's message.
#
#   sh reports/studies/real-runs.sh reports/studies/real-drift-margin.toml CELLS RUNS OUT
#   TARGET=etcd sh reports/studies/real-runs.sh reports/studies/real-paused-holder.toml CELLS RUNS OUT
#
# CELLS is the number of cells and RUNS the runs per cell (the spec's
# seeds); the seed of run k of cell i is FIRST + i·RUNS + k, FIRST the
# start of the spec's `seeds`.
set -eu
spec=$1 cells=$2 runs=$3 out=$4
bin=${BIN:-target/release}
target=${TARGET:-node}
# ONLY_CELL=i plays cell i alone (run one script per cell to play cells at once).
only=${ONLY_CELL:-}
first=$(sed -n 's/^seeds = "\([0-9]*\)\.\..*/\1/p' "$spec")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ "$i" -lt "$cells" ]; do
  if [ -n "$only" ] && [ "$i" != "$only" ]; then i=$((i + 1)); continue; fi
  k=0
  while [ "$k" -lt "$runs" ]; do
    seed=$((first + i * runs + k))
    k=$((k + 1))
    if [ -f "$out" ] && grep -q "\"seed\":$seed," "$out"; then continue; fi
    "$bin/leasesim" study "$spec" --scenario-of "$i:$seed" > "$tmp/run.toml"
    for attempt in 1 2 3; do
      line=$("$bin/leasesim-real" run "$tmp/run.toml" --target "$target" --seed "$seed" --json 2> "$tmp/err" || true)
      if [ -n "$line" ]; then
        printf '{"cell":%s,"real":%s}\n' "$i" "$line" >> "$out"
        break
      fi
      printf 'seed %s attempt %s: %s\n' "$seed" "$attempt" "$(tail -1 "$tmp/err")" >> "$out.failed-starts"
    done
  done
  i=$((i + 1))
done
