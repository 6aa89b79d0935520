#!/usr/bin/env bash
# Calibration against a real etcd: how long after the leader is killed does
# a key held by a lease disappear? Starts a 3-member etcd cluster on
# loopback ports, grants a lease with TTL T, puts a key under it, renews it
# once, SIGKILLs the leader and polls the survivors until the key is gone.
# Prints one CSV row per run: etcd version, TTL, heartbeat, election
# timeout, run, seconds from the kill to the key's removal.
#
#   reports/calibration/etcd-failover.sh [RUNS] [TTLS] [ELECTIONS_MS]
#   e.g. reports/calibration/etcd-failover.sh 3 "2 5" "500 1000"
#
# Needs etcd and etcdctl 3.4 (Debian: apt-get install etcd-server
# etcd-client). Uses ports 23791-23793 and 23801-23803 on 127.0.0.1 and a
# temporary data directory, removed at exit. Heartbeat is election / 10.
set -euo pipefail

RUNS=${1:-3}
TTLS=${2:-"2 5"}
ELECTIONS=${3:-"500 1000"}
ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
export ETCDCTL_API=3

command -v "$ETCD" >/dev/null || { echo "etcd not found (apt-get install etcd-server)" >&2; exit 2; }
command -v "$ETCDCTL" >/dev/null || { echo "etcdctl not found (apt-get install etcd-client)" >&2; exit 2; }
VERSION=$("$ETCD" --version | awk '/etcd Version/ {print $3}')

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

CLUSTER="m1=http://127.0.0.1:23801,m2=http://127.0.0.1:23802,m3=http://127.0.0.1:23803"
ALL="127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793"

now() { date +%s.%N; }

start_cluster() { # $1 heartbeat ms, $2 election ms
  PIDS=()
  rm -rf "$WORK"/m*
  local token="cal-$RANDOM-$RANDOM"
  for i in 1 2 3; do
    "$ETCD" --name "m$i" --data-dir "$WORK/m$i" \
      --listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
      --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
      --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "$token" \
      --heartbeat-interval "$1" --election-timeout "$2" >"$WORK/m$i.log" 2>&1 &
    PIDS[$i]=$!
  done
  for _ in $(seq 100); do
    "$ETCDCTL" --endpoints "$ALL" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the cluster did not become healthy; logs in $WORK" >&2
  exit 1
}

stop_cluster() {
  for i in 1 2 3; do kill -9 "${PIDS[$i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

leader_index() { # which of m1..m3 leads
  for i in 1 2 3; do
    if "$ETCDCTL" --endpoints "127.0.0.1:2379$i" endpoint status -w json 2>/dev/null |
      python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["Status"]; sys.exit(0 if s["header"]["member_id"]==s["leader"] else 1)'; then
      echo "$i"; return 0
    fi
  done
  return 1
}

echo "etcd_version,ttl_s,heartbeat_ms,election_ms,run,kill_to_removal_s"
for election in $ELECTIONS; do
  heartbeat=$((election / 10))
  for ttl in $TTLS; do
    for run in $(seq "$RUNS"); do
      start_cluster "$heartbeat" "$election"
      lease=$("$ETCDCTL" --endpoints "$ALL" lease grant "$ttl" | awk '{print $2}')
      "$ETCDCTL" --endpoints "$ALL" put holder "run$run" --lease="$lease" >/dev/null
      "$ETCDCTL" --endpoints "$ALL" lease keep-alive --once "$lease" >/dev/null
      leader=$(leader_index)
      survivors=$(for i in 1 2 3; do if [ "$i" != "$leader" ]; then printf '127.0.0.1:2379%s,' "$i"; fi; done)
      survivors=${survivors%,}
      t0=$(now)
      kill -9 "${PIDS[$leader]}"
      # Poll the survivors (serializable reads answer without a leader)
      # until the key is gone; a failed read (no answer) does not count.
      while :; do
        if out=$("$ETCDCTL" --endpoints "$survivors" --command-timeout=1s get holder --consistency=s -w json 2>/dev/null) &&
          ! grep -q '"kvs"' <<<"$out"; then
          break
        fi
        sleep 0.02
      done
      t1=$(now)
      printf '%s,%s,%s,%s,%s,%.3f\n' "$VERSION" "$ttl" "$heartbeat" "$election" "$run" "$(echo "$t1 - $t0" | bc -l)"
      stop_cluster
    done
  done
done
