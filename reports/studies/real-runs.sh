#!/bin/sh
# Plays every run of a study spec on real leasesim-node processes: for each
# cell and seed of the spec (seeds_per_cell = "distinct", a fixed `seeds`
# range), prints the run's scenario with `leasesim study --scenario-of` and
# plays it with `leasesim-real run --target node --seed SEED --json`,
# appending one JSON line per run (with its cell) to OUT. Runs one at a time.
#
#   sh reports/studies/real-runs.sh reports/studies/real-drift-margin.toml CELLS RUNS OUT
#
# CELLS is the number of cells and RUNS the runs per cell (the spec's
# seeds); the seed of run k of cell i is FIRST + i·RUNS + k, FIRST the
# start of the spec's `seeds`.
set -eu
spec=$1 cells=$2 runs=$3 out=$4
bin=${BIN:-target/release}
first=$(sed -n 's/^seeds = "\([0-9]*\)\.\..*/\1/p' "$spec")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ "$i" -lt "$cells" ]; do
  k=0
  while [ "$k" -lt "$runs" ]; do
    seed=$((first + i * runs + k))
    "$bin/leasesim" study "$spec" --scenario-of "$i:$seed" > "$tmp/run.toml"
    line=$("$bin/leasesim-real" run "$tmp/run.toml" --target node --seed "$seed" --json || true)
    printf '{"cell":%s,"real":%s}\n' "$i" "$line" >> "$out"
    k=$((k + 1))
  done
  i=$((i + 1))
done
