#!/usr/bin/env bash
# The GPU batch behind bench/RESULTS.md "A small task through coopd, on
# device buffers": one small task's round trip through coopd with its
# buffers sent with each job (inline) and on the device (--resident), before (OLD_DIR's
# coopd and coop-bench-rtt, protocol 2) and after, alternating, beside a
# plain CUDA launch's round trip in the same run; the legs of the resident
# round trip (COOP_TRACE_FILE); and bfs from 16 sources on road 1024 x 1024:
# the graph uploaded once (coopctl app --sources) against 16 runs that each
# send it, and against the in-process cooperative form. Part "spin" (not
# in the default): the idle spins, coopd's ([device] idle_spin_us 0 or the
# backend's choice) by the client's (coop-bench-rtt --spin-us 0 or 200),
# for the render and the nop task (kernels/probe/nop.cl), with coopd's CPU
# time per job, then the legs of the nop task with and without them.
# Part "cold": the same tasks one every 16667 us (--every-us, as a 60 fps
# frame loop submits), against back to back, and a frame's write, render
# and read (--frame, n = 264, every worker) both ways; traced at 60 fps.
#
#   bench/resident_gpu.sh [OLD_DIR]
#   PARTS="native rtt legs sources" bench/resident_gpu.sh   # the default: all
#   PARTS="native spin" bench/resident_gpu.sh
#
# Run from the repository root on the GPU machine with build-cuda built here
# (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/native_gpu.sh. OLD_DIR (default .devold/old) holds coopd,
# coop-bench-rtt and libcoop.so.0 of the commit before. Outputs go to $OUT.
set -o pipefail
old=${1:-.devold/old}
parts=" ${PARTS:-native rtt legs sources} "
part() { [[ $parts == *" $1 "* ]]; }
. "$(dirname "$0")/gpu_prelude.sh" ""
b=build-cuda/bin

start_coopd() { # BINARY [--set ...]
  cd_dir=$(mktemp -d)
  "$1" --socket "$cd_dir/s" --kernels kernels:kernels/probe:build-cuda/kernels/apps --backend cuda \
    --set server.journal=off "${@:2}" --log-level warn 2>"$cd_dir/log" &
  cd_pid=$!
  for _ in $(seq 600); do [[ -S $cd_dir/s ]] && break; sleep 0.2; done
}
stop_coopd() { kill "$cd_pid"; wait "$cd_pid"; }

if part native; then
echo "== a plain CUDA launch's round trip (coop-bench-native --barriers)"
timeout 150 $b/coop-bench-native --barriers >"$out/native.txt" 2>&1
sed -n '/plain launch round trip/,/^$/p' "$out/native.txt" | head -12
fi

if part rtt; then
echo "== coopd round trips (us), two rounds, old and new alternating"
start_coopd $b/coopd
w=$($b/coopctl --socket "$cd_dir/s" --json stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])')
stop_coopd
echo "workers: $w"
for i in 1 2; do
  start_coopd "$old/coopd"
  for k in 1 "$w"; do
    LD_LIBRARY_PATH=$old:$LD_LIBRARY_PATH timeout 100 "$old/coop-bench-rtt" --socket "$cd_dir/s" --runs 1000 --groups "$k" \
      --label "old-inline-k$k" | tail -1 | tee -a "$out/rtt.csv"
  done
  stop_coopd
  start_coopd $b/coopd
  for k in 1 "$w"; do
    for r in "" --resident; do
      timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 1000 --groups $k $r \
        --label "new${r:+-resident}-k$k" | tail -1 | tee -a "$out/rtt.csv"
    done
  done
  stop_coopd
done
fi

# CPU time (clock ticks) of coopd and its device processes so far
cpu_ticks() {
  local t=0 p
  for p in "$cd_pid" $(pgrep -P "$cd_pid"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo $t
}

if part spin; then
echo "== idle spins: coopd's (idle_spin_us) by the client's (--spin-us), us; coopd's CPU us per job"
hz=$(getconf CLK_TCK)
w=
for round in 1 2; do
  for isp in 0 -1; do
    start_coopd $b/coopd --set device.idle_spin_us=$isp
    [ -n "$w" ] || w=$($b/coopctl --socket "$cd_dir/s" --json stats |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])')
    echo "workers: $w"
    for cs in 0 200; do
      for task in "--resident" "--resident --nop" "--nop"; do
        for k in 1 "$w"; do
          c0=$(cpu_ticks)
          row=$(timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 2000 --groups $k $task \
            --spin-us $cs --label "r$round-isp$isp-cs$cs-k$k" | tail -1)
          c1=$(cpu_ticks)
          echo "$row,$(( (c1 - c0) * 1000000 / hz / 2010 ))" | tee -a "$out/spin.csv"
        done
      done
    done
    stop_coopd
  done
done
echo "== the legs of the nop task on a device buffer, K = 1: no spins; every spin"
export COOP_TRACE_FILE=$out/trace-spin.csv
for isp in 0 -1; do
  cs=$([ "$isp" = 0 ] && echo 0 || echo 200)
  rm -f "$COOP_TRACE_FILE"
  start_coopd $b/coopd --set device.idle_spin_us=$isp
  timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 2000 --groups 1 --resident --nop \
    --spin-us $cs --label "nop-traced-isp$isp-cs$cs" --trace "$COOP_TRACE_FILE" 2>&1 |
    tee "$out/legs-spin$isp.txt" | head -40
  stop_coopd
done
unset COOP_TRACE_FILE
fi

if part cold; then
echo "== cold: one task every 16667 us against back to back; coopd idle_spin_us 0 and default"
for isp in 0 -1; do
  start_coopd $b/coopd --set device.idle_spin_us=$isp
  w=$($b/coopctl --socket "$cd_dir/s" --json stats |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"])')
  for every in 0 16667; do
    for cs in 0 200; do
      timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 300 --groups 1 --resident --nop \
        --spin-us $cs --every-us $every --label "cold-isp$isp" | tail -1 | tee -a "$out/cold.csv"
    done
    timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 300 --n 264 --groups "$w" \
      --resident --frame --every-us $every --label "cold-frame-isp$isp" | tail -1 |
      tee -a "$out/cold.csv"
  done
  stop_coopd
done
echo "== the legs of one nop task every 16667 us (default spins, client 200)"
export COOP_TRACE_FILE=$out/trace-cold.csv
rm -f "$COOP_TRACE_FILE"
start_coopd $b/coopd
timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 300 --groups 1 --resident --nop \
  --spin-us 200 --every-us 16667 --label nop-traced-cold --trace "$COOP_TRACE_FILE" 2>&1 |
  tee "$out/legs-cold.txt" | head -40
stop_coopd
unset COOP_TRACE_FILE
fi

if part legs; then
echo "== the legs of the resident round trip, K = 1"
export COOP_TRACE_FILE=$out/trace.csv
start_coopd $b/coopd
timeout 100 $b/coop-bench-rtt --socket "$cd_dir/s" --runs 1000 --groups 1 --resident \
  --label resident-traced --trace "$COOP_TRACE_FILE" 2>&1 | tee "$out/legs.txt" | head -40
stop_coopd
unset COOP_TRACE_FILE
fi

part sources || exit 0
echo "== bfs, road 1024 x 1024, 16 sources"
srcs=0,1000,65536,131071,200000,300000,400000,500000,524288,600000,700000,800000,900000,1000000,1048000,1048575
timeout 200 $b/coop-bench-native --app bfs --scale 12 --input 1 >"$out/bfs-native.txt" 2>&1
grep -iE "coop|native|ms" "$out/bfs-native.txt" | head -8
start_coopd $b/coopd
t0=$(date +%s%N)
timeout 300 $b/coopctl --socket "$cd_dir/s" app bfs --scale 12 --input 1 --sources $srcs \
  >"$out/bfs-sources.txt" 2>&1
echo "sources rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
tail -3 "$out/bfs-sources.txt"
t0=$(date +%s%N)
for s in ${srcs//,/ }; do
  timeout 100 $b/coopctl --socket "$cd_dir/s" app bfs --scale 12 --input 1 --source "$s" \
    >>"$out/bfs-each.txt" 2>&1 || echo "source $s failed"
done
echo "16 separate coopctl runs (each generates the graph and sends it): wall" \
  "$(( ($(date +%s%N) - t0) / 1000000 )) ms"
grep -h "execution" "$out/bfs-each.txt" | head -3
stop_coopd
