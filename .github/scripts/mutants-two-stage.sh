#!/usr/bin/env bash
# The mutation score in two stages (reports/mutants.md):
#
#   1. every selected mutant of leasesim-core against core's own tests
#      (.cargo/mutants.toml: test_package = leasesim-core, dev profile; a
#      build and a test run take seconds);
#   2. only the mutants stage 1 missed, against the bounded simulator sweep
#      sim/tests/mutant_sweep.rs (every bundled scenario, seeds 0..8), built
#      with the `mutants` profile (Cargo.toml: opt-level 1, incremental): a
#      full release rebuild of the simulator per mutant took minutes, an
#      incremental one takes seconds.
#
# usage: mutants-two-stage.sh OUT_DIR [cargo-mutants selection args...]
#   e.g. mutants-two-stage.sh out --shard 3/8
#        mutants-two-stage.sh out --re '^core/src/raft/log\.rs:12:5: ...$'
# Writes OUT_DIR/core/mutants.out and OUT_DIR/sim/mutants.out. A mutant is
# killed if stage 1 caught it (or timed out) or stage 2 did; it survives if
# both missed it. Extra cargo-mutants arguments for both stages (e.g.
# `--jobserver-tasks 1` on a shared machine) go in MUTANTS_ARGS.
# Exits non-zero only when cargo-mutants itself failed (a failing baseline,
# bad arguments): surviving mutants are a measurement, not an error.
#
# Stage 2 runs with --baseline=skip: cargo-mutants 27.1 runs the baseline on
# the mutated package (leasesim-core), not on --test-package, so its
# baseline would look for mutant_sweep in the wrong package and fail. The
# script runs the unmutated sweep itself first instead, and gives stage 2 a
# fixed timeout (the sweep takes 6 to 30 s, by the machine's load). `--test
# mutant_sweep` is given to every cargo call (--cargo-arg), not only to the
# test run: otherwise the build phase builds all of leasesim's test targets
# in release for every mutant.
set -uo pipefail
if [ "$#" -lt 1 ]; then
  echo "usage: $0 OUT_DIR [cargo-mutants selection args...]" >&2
  exit 2
fi
out="$1"; shift
mkdir -p "$out"
# shellcheck disable=SC2206 # MUTANTS_ARGS holds several words on purpose
extra=(${MUTANTS_ARGS:-})

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
echo "== stage 2 baseline: the unmutated sweep must pass"
cargo test --profile mutants -p leasesim --test mutant_sweep || { echo "stage 2: the unmutated sweep fails" >&2; exit 4; }
echo "== stage 2: $(wc -l < "$missed") mutant(s) against sim/tests/mutant_sweep.rs"
cargo mutants --output "$out/sim" "${extra[@]}" \
  --baseline=skip --timeout "${MUTANTS_SIM_TIMEOUT:-120}" \
  --test-package leasesim --profile mutants \
  --cargo-arg=--test --cargo-arg=mutant_sweep \
  "${re[@]}"
code=$?
ok_code "$code" || { echo "stage 2: cargo-mutants failed ($code)" >&2; exit "$code"; }
exit 0
