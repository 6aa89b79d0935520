#!/usr/bin/env bash
# Hand-written mutations of the engine and the data store, measured from
# outside: does the simulator itself catch each one (an invariant checker, or
# only the engine's own assertions as `engine-panic`), and do core's tests?
#
#   reports/mutants/hand.sh [--relax] [PATCH…]
#
# For every patch (default: reports/mutants/hand/[0-9]*.patch) it applies the
# patch to a scratch worktree of this commit, builds `leasesim` with the
# `mutants` profile (one persistent CARGO_TARGET_DIR, so builds are
# incremental), sweeps every bundled scenario for HAND_SEEDS and the chaos
# scenarios for HAND_CHAOS_SEEDS more, runs core's tests
# (`cargo test -p leasesim-core --profile mutants`), and reverts the patch.
# An unmutated baseline runs first and must be clean.
#
# --relax also applies hand/relax-invariants.patch (core's `invariant!` and
# `invariant_eq!` compiled out: the engine's own self-checks off; plain
# `assert!`s stay) and skips core's tests: which checker, if any, sees a
# mutation the engine's assertions would otherwise stop first.
#
# Writes reports/mutants/hand/results.csv (results-relaxed.csv with --relax)
# and prints a Markdown table. Per-run JSON lines stay in HAND_OUT (not
# committed).
#
# Environment: HAND_SCRATCH (/tmp/hand-scratch), CARGO_TARGET_DIR
# (/tmp/hand-target), HAND_OUT (/tmp/hand-out), HAND_SEEDS (0..16),
# HAND_CHAOS_SEEDS (16..48; empty: none), HAND_JOBS (2), HAND_CORE_TESTS (1;
# 0 skips core's tests), HAND_SCENARIOS (the sweep's files or folders,
# space-separated; default scenarios/), HAND_CHAOS_FILES (the files swept for
# HAND_CHAOS_SEEDS; default the four chaos scenarios), HAND_CSV (the results
# file; default hand/results.csv or hand/results-relaxed.csv).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
commit=$(git -C "$root" rev-parse HEAD)
scratch=${HAND_SCRATCH:-/tmp/hand-scratch}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/hand-target}
out=${HAND_OUT:-/tmp/hand-out}
seeds=${HAND_SEEDS:-0..16}
chaos_seeds=${HAND_CHAOS_SEEDS-16..48}
jobs=${HAND_JOBS:-2}
core_tests=${HAND_CORE_TESTS:-1}
read -r -a scenario_paths <<<"${HAND_SCENARIOS:-scenarios/}"
read -r -a chaos_files <<<"${HAND_CHAOS_FILES:-scenarios/chaos-nemesis.toml scenarios/chaos-swarm.toml scenarios/chaos-tasks.toml scenarios/task-singleton-nemesis.toml}"

relax=0
if [[ ${1:-} == --relax ]]; then
    relax=1
    core_tests=0
    shift
fi
patches=("$@")
if [[ ${#patches[@]} -eq 0 ]]; then
    patches=("$here"/hand/[0-9]*.patch)
fi
suffix=$([[ $relax == 1 ]] && echo -relaxed || true)
csv=${HAND_CSV:-$here/hand/results$suffix.csv}
mkdir -p "$out"

if [[ ! -e $scratch/.git ]]; then
    git -C "$root" worktree add --detach "$scratch" "$commit" >/dev/null
fi
git -C "$scratch" checkout -q -- .
git -C "$scratch" checkout -q --detach "$commit"

log() { echo "[hand $(date -u +%H:%M:%S)] $*" >&2; }

# build NAME: builds leasesim in the scratch tree; 0 on success.
build() {
    (cd "$scratch" && nice -n 10 cargo build --profile mutants -p leasesim -q) >"$out/$1.build.log" 2>&1
}

# sweep NAME: the bundled sweep, then the chaos files for more seeds.
sweep() {
    local bin=$CARGO_TARGET_DIR/mutants/leasesim
    (cd "$scratch" && nice -n 10 timeout 1800 "$bin" sweep "${scenario_paths[@]}" --seeds "$seeds" --jobs "$jobs" --json) \
        >"$out/$1.jsonl" 2>"$out/$1.sweep.err" || true
    if [[ -n $chaos_seeds ]]; then
        (cd "$scratch" && nice -n 10 timeout 1800 "$bin" sweep "${chaos_files[@]}" --seeds "$chaos_seeds" --jobs "$jobs" --json) \
            >>"$out/$1.jsonl" 2>>"$out/$1.sweep.err" || true
    fi
}

# tests NAME: core's tests; prints caught / missed / timeout.
tests() {
    if [[ $core_tests != 1 ]]; then
        echo skipped
        return
    fi
    local rc=0
    (cd "$scratch" && nice -n 10 timeout 1200 cargo test -p leasesim-core --profile mutants --no-fail-fast -q) \
        >"$out/$1.tests.log" 2>&1 || rc=$?
    case $rc in
        0) echo missed ;;
        124) echo timeout ;;
        *) if grep -q 'error\[E\|could not compile' "$out/$1.tests.log"; then echo unviable; else echo caught; fi ;;
    esac
}

apply() {
    git -C "$scratch" checkout -q -- .
    if [[ $relax == 1 ]]; then
        git -C "$scratch" apply "$here/hand/relax-invariants.patch"
    fi
    if [[ -n ${1:-} ]]; then
        git -C "$scratch" apply "$1"
    fi
}

rows=()
log "commit $commit, seeds $seeds (+ chaos $chaos_seeds), relax=$relax, target $CARGO_TARGET_DIR"
apply ""
log "baseline: build"
build baseline$suffix || { log "baseline build failed: $out/baseline$suffix.build.log"; exit 2; }
log "baseline: sweep"
sweep baseline$suffix
base=$(python3 "$here/hand/summarize.py" row baseline "$out/baseline$suffix.jsonl" built skipped)
log "baseline: $base"
if [[ $(cut -d, -f3 <<<"$base") != no ]]; then
    log "the unmutated sweep is not clean: stop"
    exit 2
fi
if [[ $core_tests == 1 ]]; then
    log "baseline: core tests"
    t=$(tests baseline)
    if [[ $t != missed ]]; then
        log "core's tests do not pass unmutated ($t): $out/baseline.tests.log"
        exit 2
    fi
fi
for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    log "$name: apply + build"
    apply "$p"
    if build "$name$suffix"; then
        log "$name: sweep"
        sweep "$name$suffix"
        log "$name: core tests"
        t=$(tests "$name")
        row=$(python3 "$here/hand/summarize.py" row "$name" "$out/$name$suffix.jsonl" built "$t" "$p")
    else
        row=$(python3 "$here/hand/summarize.py" row "$name" /dev/null unviable skipped "$p")
    fi
    log "$row"
    rows+=("$row")
done
git -C "$scratch" checkout -q -- .

{
    python3 "$here/hand/summarize.py" header
    printf '%s\n' "${rows[@]}"
} >"$csv"
python3 "$here/hand/summarize.py" table "$csv" "$commit" "$seeds" "$chaos_seeds" $([[ $relax == 1 ]] && echo relaxed)
