#!/usr/bin/env bash
# Shrinks the unexpected runs of a sweep so a CI failure comes with small,
# readable scenarios next to the raw seeds.
#
# usage: shrink-failures.sh LEASESIM RESULTS.jsonl... OUT_DIR
# Reads the JSON lines `leasesim sweep --json` printed, takes every run whose
# `expected` is false (at most MAX_SHRINKS of them, default 6), writes
# OUT_DIR/failing-seeds.txt (one `file seed` per line) and runs
# `leasesim shrink` on each; a seed that cannot be shrunk keeps its raw line.
# If the sweep ran with planted bugs, pass the same flags in BUG_FLAGS
# (e.g. BUG_FLAGS="--bug stale-follower-reads").
set -euo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: $0 LEASESIM RESULTS.jsonl... OUT_DIR" >&2
  exit 2
fi
leasesim="$1"; shift
out="${!#}"
results=("${@:1:$#-1}")
mkdir -p "$out"
cat "${results[@]}" | jq -r 'select(.expected == false) | "\(.file) \(.seed) \(.scenario)"' | sort -u > "$out/failing-seeds.txt"
echo "$(wc -l < "$out/failing-seeds.txt") unexpected run(s); see $out/failing-seeds.txt"
head -n "${MAX_SHRINKS:-6}" "$out/failing-seeds.txt" | while read -r file seed name; do
  target="$out/${name}-seed-${seed}.toml"
  echo "== shrink $file --seed $seed"
  # shellcheck disable=SC2086 # BUG_FLAGS holds several words on purpose
  "$leasesim" shrink "$file" --seed "$seed" --out "$target" --budget-runs "${SHRINK_BUDGET_RUNS:-150}" --jobs 2 ${BUG_FLAGS:-} \
    || echo "could not shrink $file seed $seed; replay it with: leasesim replay $file --seed $seed"
done
