#!/usr/bin/env bash
# bench/flood_turns.sh: how long one user's render waits behind another
# user's flood of them, with [jobs] tasks_per_uid off (0) and at its default
# (4) (docs/daemon.md, "Tasks in turn").
#   bench/flood_turns.sh [--build-dir DIR] [--flood N] [--reps R] [--n N]
#                        [--rounds K] [--settings "0 4"] [--user NAME]
# For each round and each setting, in turns, it starts coopd from the build
# tree (default build) on the kernels/ directory, on a socket in a
# temporary directory, with tasks_per_uid set; root submits --flood renders
# (default 60; coopctl submit render, detached, on every worker, an n x n
# product, default n = 96, --reps times, default 20: about 20 ms each on
# PoCL's 2 workers of a 2-core machine); then --user (default nobody)
# submits one render like them and waits for it. Prints a CSV line per run:
# setting, round, the victim's total (submitted to finished) and gather ms
# as coopctl printed them, and the seconds its coopctl took; then the
# machine and the commit. Run as root (the second user is setpriv's).
# POCL_MAX_PTHREAD_COUNT is passed through (unset: 3, two workers).
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)

bdir=$repo/build flood=60 reps=20 n=96 rounds=3 settings="0 4" user=nobody
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --flood) flood=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --user) user=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "flood_turns.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "flood_turns.sh: run as root (the victim runs as --user)" >&2; exit 2; }
coopd=$bdir/bin/coopd coopctl=$bdir/bin/coopctl
[ -x "$coopd" ] && [ -x "$coopctl" ] || { echo "flood_turns.sh: no $coopd or $coopctl" >&2; exit 2; }
. "$repo/bench/build_commit.sh"
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-3}

dir=$(mktemp -d /tmp/coop-flood-XXXXXX)
chmod 0755 "$dir"
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop; rm -rf "$dir"' EXIT
bytes=$((n * n * 4))
render() { "$coopctl" submit render --wg "$workers" "$@" "zeros:$bytes" "zeros:$bytes" \
  "zeros:$bytes" "u32:$n" "u32:$reps"; }

echo "setting,round,victim_total_ms,victim_gather_ms,victim_seconds"
for r in $(seq "$rounds"); do
  for s in $settings; do
    export COOP_SOCKET=$dir/coop.sock
    "$coopd" --socket "$COOP_SOCKET" --kernels "$repo/kernels" --set "jobs.tasks_per_uid=$s" \
      --set server.socket_mode=0666 >"$dir/coopd-$s-$r.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -S "$COOP_SOCKET" ] && break; sleep 0.1; done
    workers=$("$coopctl" --json stats | sed -n 's/.*"workers":\([0-9]*\).*/\1/p')
    for _ in $(seq "$flood"); do render >/dev/null; done
    t0=$(date +%s.%N)
    out=$(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups \
      "$coopctl" submit render \
      --wg "$workers" --wait "zeros:$bytes" "zeros:$bytes" "zeros:$bytes" "u32:$n" "u32:$reps")
    t1=$(date +%s.%N)
    total=$(sed -n 's/^ *total *\([0-9.]*\) ms.*/\1/p' <<<"$out")
    gather=$(sed -n 's/^ *gather *\([0-9.]*\) ms.*/\1/p' <<<"$out")
    awk -v s="$s" -v r="$r" -v t="$total" -v g="$gather" -v a="$t0" -v b="$t1" \
      'BEGIN { printf "%s,%s,%s,%s,%.3f\n", s, r, t, g, b - a }'
    stop
    rm -f "$COOP_SOCKET"
  done
done
echo "# machine: $(nproc) cores, $(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1);" \
  "POCL_MAX_PTHREAD_COUNT=$POCL_MAX_PTHREAD_COUNT; commit $(build_commit "$bdir" "$repo")"
