#!/usr/bin/env bash
# bench/checkpoint_gpu.sh: what checkpoints cost a long cooperative job, and
# what moving one to another device costs (docs/daemon.md, "Checkpoints",
# "Moving jobs between devices").
#   bench/checkpoint_gpu.sh [--build-dir DIR] [--graph WxH] [--runs N] [--periods "0 1000 250"]
#                           [--snapshot PERCENT] [--migrate] [--widths "1 5 64 264 527"]
# For each period P (ms; 0: no checkpoints) starts a coopd of its own with
# [jobs] checkpoint_ms = P and runs bfs (cooperative, query barrier) on a
# road graph of WxH (4096x4096 by default) from vertex 0, N times (3), each
# checked against the CPU. Prints one CSV line per run: period, run, the
# job's time through coopd (finished - submitted, ms), its checkpoints, and
# the checkpoints' median and largest cost (ms the job was off the GPU:
# the copy of its state and buffers plus the resumption, from coopd's log);
# then per period the median time and its overhead against period 0.
# --snapshot: [jobs] checkpoint_snapshot_percent (default coopd's, 25 of
# the arena: the job waits only for a copy on the device; 0: for the copy
# to host memory).
# --migrate (two devices: [device] devices = 0,1): the same bfs on device 0,
# moved by `coopctl migrate` to device 1 half a second in; prints how long
# the move took (MIGRATE -> running on device 1), the job's time and its
# check, beside a run that stays on device 0.
# --widths: whether checkpoints are taken of a kernel at each width, with
# the plain and the query resizing barrier: slowsweep (kernels/tests/priority,
# 150 rounds of 9400 kticks: about 10 ms a round on an H200) with
# checkpoint_ms = 200; prints width, barrier and the checkpoints taken.
# Needs an NVIDIA GPU and a build with -DCOOP_CUDA=ON (default build-cuda);
# on PoCL (COOP_BACKEND unset, any build dir) it runs as well, slower.
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)
bdir=$repo/build-cuda graph=4096x4096 runs=3 periods="0 1000 250" migrate=0 widths= snap=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --graph) graph=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --periods) periods=$2; shift 2 ;;
    --snapshot) snap=(--set "jobs.checkpoint_snapshot_percent=$2"); shift 2 ;;
    --migrate) migrate=1; shift ;;
    --widths) widths=$2; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "checkpoint_gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$runs" in '' | *[!0-9]*) echo "checkpoint_gpu.sh: '$runs' is not a whole number" >&2; exit 2 ;; esac
name=checkpoint_gpu.sh
# shellcheck source=bench/gpu_daemon.sh
. "$repo/bench/gpu_daemon.sh"
# room for bfs's graph (a 16.8M-vertex road graph: 502 MB of buffers)
big=(--set device.arena_mb=4096 --set limits.max_bytes_per_client=4G --set limits.max_bytes_per_uid=4G)
bfs() { ctl --json app bfs --gen "road:$graph" --query-barrier --source 0 --check "$@"; }

if [ -n "$widths" ]; then
  start_daemon --set jobs.checkpoint_ms=200
  head -c 4096 /dev/zero >"$tmp/data"
  echo "workgroups,barrier,checkpoints"
  for q in plain query; do
    flag=
    [ "$q" = query ] && flag=--query-barrier
    for w in $widths; do
      n=$(grep -c "checkpoint .*: suspended" "$tmp/coopd.log" || true)
      # shellcheck disable=SC2086 # flag: one word or none
      timeout 60 "$ctl" --socket "$sock" submit slowsweep --coop $flag --wg "$w" --wait \
        inout:"$tmp/data" u32:1024 u32:150 u32:9400 >/dev/null 2>&1 || true
      m=$(grep -c "checkpoint .*: suspended" "$tmp/coopd.log" || true)
      echo "$w,$q,$((m - n))"
    done
  done
  stop_daemon
elif [ "$migrate" = 0 ]; then
  echo "period_ms,run,job_ms,checkpoints,ckpt_p50_ms,ckpt_max_ms,check"
  for p in $periods; do
    start_daemon "${big[@]}" "${snap[@]}" --set "jobs.checkpoint_ms=$p"
    for r in $(seq 1 "$runs"); do
      before=$(wc -l <"$tmp/coopd.log")
      bfs >"$tmp/r.json" 2>"$tmp/r.err" || { cat "$tmp/r.err" >&2; exit 1; }
      # the checkpoints of this run: "copied [on the device] in X us, resumed in Y us"
      tail -n +"$((before + 1))" "$tmp/coopd.log" |
        sed -n 's/.*copied\( on the device\)\{0,1\} in \([0-9]*\) us, resumed in \([0-9]*\) us.*/\2 \3/p' |
        awk '{ print ($1 + $2) / 1000 }' >"$tmp/ck"
      n=$(wc -l <"$tmp/ck")
      ck=$(sed -n 's/.*"check":"\([a-zA-Z]*\)".*/\1/p' "$tmp/r.json")
      echo "$p,$r,$(took "$tmp/r.json"),$n,$(quant 0.5 <"$tmp/ck"),$(quant 1 <"$tmp/ck"),$ck"
    done
    grep -m1 "bytes copied" "$tmp/coopd.log" | sed 's/^.*checkpoint/one checkpoint:/' >&2 || true
    grep -m1 "bytes drained" "$tmp/coopd.log" | sed 's/^.*checkpoint/its drain:/' >&2 || true
    stop_daemon
  done > >(tee "$tmp/runs.csv") # not a pipe: the loop runs in this shell, whose EXIT trap stops its coopd
  wait "$!" # tee's last line, before runs.csv is read
  base=$(awk -F, '$1 == 0 { print $3 }' "$tmp/runs.csv" | quant 0.5)
  for p in $periods; do
    m=$(awk -F, -v p="$p" '$1 == p { print $3 }' "$tmp/runs.csv" | quant 0.5)
    awk -v p="$p" -v m="$m" -v b="$base" 'BEGIN {
      printf "checkpoint_ms %s: job p50 %.1f ms", p, m
      if (b > 0) printf " (%+.2f%% against no checkpoints)", (m - b) * 100 / b
      printf "\n" }'
  done
else
  start_daemon "${big[@]}" --set "device.devices=${COOP_BENCH_DEVICES:-0,1}" # 0,0 on PoCL
  echo "run,moved,migrate_ms,job_ms,device,check"
  for r in $(seq 1 "$runs"); do
    bfs --device 0 >"$tmp/stay.json" 2>"$tmp/r.err" || { cat "$tmp/r.err" >&2; exit 1; }
    echo "$r,no,,$(took "$tmp/stay.json"),$(sed -n 's/.*"device":\([0-9]*\).*/\1/p' "$tmp/stay.json" | head -1),$(sed -n 's/.*"check":"\([a-zA-Z]*\)".*/\1/p' "$tmp/stay.json")"
    bfs --device 0 >"$tmp/moved.json" 2>"$tmp/r.err" &
    app=$!
    job=$(running_job bfs "$app")
    sleep 0.5
    ctl --json migrate "$job" 1 >"$tmp/m.json"
    wait "$app" || { cat "$tmp/r.err" >&2; exit 1; }
    ms=$(sed -n 's/.*"ms":\([0-9.]*\).*/\1/p' "$tmp/m.json")
    echo "$r,yes,$ms,$(took "$tmp/moved.json"),$(sed -n 's/.*"device":\([0-9]*\).*/\1/p' "$tmp/moved.json" | head -1),$(sed -n 's/.*"check":"\([a-zA-Z]*\)".*/\1/p' "$tmp/moved.json")"
  done
  grep "handed to device\|moved here\|for its move" "$tmp/coopd.log" | tail -3 >&2 || true
  stop_daemon
fi
machine_line
echo "graph: road:$graph"
