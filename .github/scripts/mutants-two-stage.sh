#!/usr/bin/env bash
# The mutation score in two stages (reports/mutants.md):
#
#   1. every selected mutant of leasesim-core against core's own tests
#      (.cargo/mutants.toml: test_package = leasesim-core, dev profile; a
#      build and a test run take seconds);
#   2. only the mutants stage 1 missed, against the bounded simulator sweep
#      sim/tests/mutant_sweep.rs (every bundled scenario, seeds 0..8, in
#      release: a mutant here costs a release build of core and sim).
#
# usage: mutants-two-stage.sh OUT_DIR [cargo-mutants selection args...]
#   e.g. mutants-two-stage.sh out --shard 3/8
#        mutants-two-stage.sh out --re '^core/src/raft/log\.rs:12:5: ...$'
# Writes OUT_DIR/core/mutants.out and OUT_DIR/sim/mutants.out. A mutant is
# killed if stage 1 caught it (or timed out) or stage 2 did; it survives if
# both missed it. Extra cargo arguments (e.g. -j1) go in MUTANTS_CARGO_ARGS.
# Exits non-zero only when cargo-mutants itself failed (a failing baseline,
# bad arguments): surviving mutants are a measurement, not an error.
set -uo pipefail
if [ "$#" -lt 1 ]; then
  echo "usage: $0 OUT_DIR [cargo-mutants selection args...]" >&2
  exit 2
fi
out="$1"; shift
mkdir -p "$out"
# shellcheck disable=SC2206 # MUTANTS_CARGO_ARGS holds several words on purpose
cargo_args=(${MUTANTS_CARGO_ARGS:-})
extra=()
for a in "${cargo_args[@]}"; do extra+=("--cargo-arg=$a"); done

ok_code() { [ "$1" -eq 0 ] || [ "$1" -eq 2 ] || [ "$1" -eq 3 ]; }

echo "== stage 1: core's tests"
cargo mutants --output "$out/core" "${extra[@]}" "$@"
code=$?
ok_code "$code" || { echo "stage 1: cargo-mutants failed ($code)" >&2; exit "$code"; }

missed="$out/core/mutants.out/missed.txt"
if [ ! -s "$missed" ]; then
  echo "== stage 2 skipped: stage 1 missed no mutant"
  exit 0
fi
# One anchored, escaped regex per missed mutant (as reports/mutants/sample.sh).
re=()
while IFS= read -r name; do
  re+=(--re "^$(printf '%s' "$name" | sed -e 's/[][\\.+*?(){}|^$#&~-]/\\&/g')\$")
done < "$missed"
echo "== stage 2: $(wc -l < "$missed") mutant(s) against sim/tests/mutant_sweep.rs"
cargo mutants --output "$out/sim" "${extra[@]}" \
  --test-package leasesim --profile release \
  --cargo-test-arg=--test --cargo-test-arg=mutant_sweep \
  "${re[@]}"
code=$?
ok_code "$code" || { echo "stage 2: cargo-mutants failed ($code)" >&2; exit "$code"; }
exit 0
