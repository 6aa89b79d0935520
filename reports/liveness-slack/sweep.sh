#!/bin/bash
# The liveness-slack sweep behind reports/liveness-slack.md: every bundled
# scenario over seeds FROM..TO, in passes of STEP seeds (each pass covers
# every scenario, so a sweep stopped early still covers all of them on a
# prefix of seeds), two shards at a time at low priority. Each shard's JSON
# lines go to OUT/pass-A..B-I.jsonl; summarize with
#   python3 reports/liveness-slack/closest.py OUT/*.jsonl
#   target/release/leasesim merge OUT/*.jsonl
# Usage: reports/liveness-slack/sweep.sh OUT [FROM TO STEP]   (default 0 2000 100)
set -euo pipefail
out=${1:?usage: sweep.sh OUT [FROM TO STEP]}
from=${2:-0}
to=${3:-2000}
step=${4:-100}
bin=${LEASESIM:-target/release/leasesim}
mkdir -p "$out"
for ((a = from; a < to; a += step)); do
  b=$((a + step < to ? a + step : to))
  for i in 1 2; do
    nice -n 10 "$bin" sweep scenarios/ --seeds "$a..$b" --jobs 1 --shard "$i/2" --json \
      > "$out/pass-$a..$b-$i.jsonl" 2> "$out/pass-$a..$b-$i.err" &
  done
  wait
done
