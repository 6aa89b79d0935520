#!/bin/sh
# Regenerates reports/sim-vs-real.md's table: every bundled scenario that
# plays unchanged on a target, in both worlds, with `leasesim-real compare`
# (20 simulated seeds, 20 real runs; real run i plays seed i), then prints
# the tables with table.py. Run from the repository root:
#
#   cargo build --release -p leasesim -p leasesim-real
#   sh reports/sim-vs-real/regenerate.sh
#
# The two targets run at once (PARALLEL_NODE leasesim-node clusters and
# PARALLEL_ETCD etcd clusters at a time). Real runs take their timing from
# the machine: note its load when you publish. OUT (default
# reports/sim-vs-real/data) receives <target>/<scenario>.json (the compare
# output) and <target>/<scenario>/{sim,real}.jsonl (every run's line).
#
# SIM_ONLY=REAL_DIR re-runs only the simulated side (a simulator change;
# the real runs are not redone): every row of REAL_DIR keeps its real
# runs, its 20 seeds are run again with $BIN/leasesim, into OUT
# (resim.py; `python3 reports/sim-vs-real/resim.py --check DIR` shows its
# arithmetic is compare's):
#
#   cargo build --release -p leasesim
#   SIM_ONLY=reports/sim-vs-real/data OUT=reports/sim-vs-real/data-simfix sh reports/sim-vs-real/regenerate.sh
set -eu
out=${OUT:-reports/sim-vs-real/data}
bin=${BIN:-target/release}
if [ -n "${SIM_ONLY:-}" ]; then
  [ "$SIM_ONLY" != "$out" ] || { echo "SIM_ONLY and OUT must differ (the real runs are read from SIM_ONLY)" >&2; exit 2; }
  python3 reports/sim-vs-real/resim.py "$bin" "$SIM_ONLY" "$out"
  python3 reports/sim-vs-real/table.py "$out"
  exit 0
fi
pn=${PARALLEL_NODE:-5}
pe=${PARALLEL_ETCD:-3}
# Every bundled scenario leasesim-real plays unchanged, per target: 24 of
# the 26 on leasesim-node (chaos-watch-txn and task-singleton-nemesis since
# the clients' own routes, real/src/routes.rs), 4 on etcd (the others are
# refused at their file:line; `leasesim-real run FILE` says why).
NODE="baseline chaos-aimed-messages holder-pause-fenced holder-pause-unfenced
leader-clock-too-fast leader-crash-locks-held leader-isolated-keepalive
registry-client-crash singleton-failover txn-split-entries
vote-reply-across-terms wall-jump-leader-monotonic wall-jump-stamped-wall
watch-skip-leader-change chaos-swarm chaos-tasks membership-change
singleton-slow-clock task-completion-unfenced task-worker-slow-clock
task-workers-crash-pause wall-jump-writer-clock chaos-watch-txn
task-singleton-nemesis"
ETCD="holder-pause-fenced holder-pause-unfenced leader-crash-locks-held registry-client-crash"
mkdir -p "$out/node" "$out/etcd"
compare() { # target parallel name
  "$bin/leasesim-real" compare "scenarios/$3.toml" --sim-seeds 0..20 --real-runs 20 --target "$1" \
    --parallel "$2" --json --raw "$out/$1/$3" > "$out/$1/$3.json" || echo "$1 $3: compare failed (exit $?)" >&2
}
(for name in $NODE; do compare node "$pn" "$name"; done) &
(for name in $ETCD; do compare etcd "$pe" "$name"; done) &
wait
python3 reports/sim-vs-real/table.py "$out"
