#!/usr/bin/env bash
# bench/parked_gpu.sh: what an idle, parked coopd costs a plain CUDA kernel
# beside it, and whether its megakernel parks again after a reload (SIGHUP).
#   bench/parked_gpu.sh [--build-dir DIR] [--rounds R] [--window S]
# Each round runs `coop-bench-side --setups alone` (a plain matmul of about
# 2 ms at 60 Hz, alone on the GPU) three times, in turn: with no coopd; with
# a coopd (CUDA backend, default park_ms) whose megakernel has parked; and
# with the same coopd after a SIGHUP reload, once `coopctl stats` says it
# parked again (the reload is timed; "no" if it did not park within 30 s).
# The rounds interleave the cases so that drift of the GPU's clocks falls on
# all of them. Prints one CSV line per run: round, case, the matmul's
# latency p50 and p99 in ms (from coop-bench-side's "(0) matmul alone" row),
# the GPU's utilization as nvidia-smi saw it just before the run, and
# whether the megakernel was parked before and after it; then the machine,
# the GPU and the commit. Needs an NVIDIA GPU and a build with
# -DCOOP_CUDA=ON (default build dir: build-cuda).
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)
bdir=$repo/build-cuda rounds=4 window=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "parked_gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$rounds" "$window"; do
  case "$v" in '' | *[!0-9]*) echo "parked_gpu.sh: '$v' is not a whole number" >&2; exit 2 ;; esac
done
side=$bdir/bin/coop-bench-side coopd=$bdir/bin/coopd ctl=$bdir/bin/coopctl
for b in "$side" "$coopd" "$ctl"; do
  [ -x "$b" ] || { echo "parked_gpu.sh: no $b (build with -DCOOP_CUDA=ON, or --build-dir)" >&2; exit 1; }
done
command -v nvidia-smi >/dev/null || { echo "parked_gpu.sh: no nvidia-smi: no NVIDIA GPU here" >&2; exit 1; }

tmp=$(mktemp -d /tmp/coop-parked.XXXXXX)
daemon=
stop_daemon() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon"
    wait "$daemon" 2>/dev/null || true
  fi
  daemon=
}
trap 'stop_daemon; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
export COOP_SOCKET=$tmp/coop.sock

# 1 when every device of the running coopd is parked.
parked() {
  "$ctl" stats 2>/dev/null | grep -q "megakernel parked" && echo 1 || echo 0
}
wait_parked() { # up to $1 s
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    [ "$(parked)" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}
util() { nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits | head -1; }
# The matmul's p50 and p99 (ms) from coop-bench-side's table row.
one_run() {
  local out row
  out=$("$side" --setups alone --window "$window" 2>"$tmp/side.err") || {
    cat "$tmp/side.err" >&2
    return 1
  }
  echo "$out" >>"${OUT:-$tmp}/parked-side.txt"
  row=$(grep -m1 "^| (0) matmul alone |" <<<"$out") || { echo "$out" >&2; return 1; }
  # | name | p50 | p90 | p99 | ...: the numbers after the name, in order
  awk -F'|' '{gsub(/ /, "", $3); gsub(/ /, "", $5); printf "%s,%s", $3, $5}' <<<"$row"
}

echo "round,case,p50_ms,p99_ms,gpu_util_before,parked_before,parked_after,reload_s"
for ((r = 1; r <= rounds; r++)); do
  u=$(util)
  echo "$r,none,$(one_run),$u,-,-,-"
  "$coopd" --backend cuda --socket "$COOP_SOCKET" --kernels "$repo/kernels" --set server.journal=off \
    2>"$tmp/coopd.log" &
  daemon=$!
  for ((i = 0; i < 600; i++)); do
    [ -S "$COOP_SOCKET" ] && break
    sleep 0.1
  done
  wait_parked 60 || { echo "parked_gpu.sh: coopd did not park within 60 s" >&2; tail "$tmp/coopd.log" >&2; exit 1; }
  u=$(util)
  p0=$(parked)
  res=$(one_run)
  echo "$r,parked,$res,$u,$p0,$(parked),-"
  n0=$(grep -c "reload: done" "$tmp/coopd.log" || true)
  t0=$EPOCHREALTIME
  kill -HUP "$daemon"
  for ((i = 0; i < 1200; i++)); do
    [ "$(grep -c "reload: done" "$tmp/coopd.log" || true)" -gt "$n0" ] && break
    sleep 0.05
  done
  rs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  if wait_parked 30; then
    u=$(util)
    p0=$(parked)
    res=$(one_run)
    echo "$r,after-reload,$res,$u,$p0,$(parked),$rs"
  else
    sleep 2
    echo "$r,after-reload,not parked within 30 s,$(util),0,0,$rs"
  fi
  stop_daemon
done
echo "# machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
. "$repo/bench/build_commit.sh"
echo "# commit: $(build_commit "$bdir" "$repo")"
