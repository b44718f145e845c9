#!/usr/bin/env bash
# bench/widths_gpu.sh: what a register cap buys and costs, with every
# shipped kernel loaded (docs/kernels.md, "The megakernel's width").
#   bench/widths_gpu.sh [--build-dir DIR] [--caps "0 96 80 72 64"] [--apps "bfs bc game mis"]
#                       [--scale S] [--runs N] [--arena-mb MB]
# For each cap R ([device] max_registers = R; 0: none): the width report of
# `coopd --check-config` (the merged megakernel's registers, spills and
# workgroups, and the kernel that bounds it), then a coopd of its own with
# that cap, and in it each application as one cooperative job on every
# worker (`coopctl app NAME --scale S --check`, N runs each, every output
# checked against the CPU), and the SUBMIT -> RESULT round trip of a small
# render on 1 and on every worker (coop-bench-rtt, 300 runs). Prints CSV
# (cap, what, value) and per cap and application the median job time
# against cap 0. --arena-mb: coopd's [device] arena_mb (1024; the byte
# bounds per client and uid follow it).
# Needs an NVIDIA GPU and a build with -DCOOP_CUDA=ON (default build-cuda);
# on PoCL (COOP_BACKEND unset) the caps change nothing (OpenCL has none).
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)
bdir=$repo/build-cuda caps="0 96 80 72 64" apps="bfs bc game mis" scale=4 runs=3 arena=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --caps) caps=$2; shift 2 ;;
    --apps) apps=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --arena-mb) arena=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "widths_gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$runs" "$scale" "$arena" $caps; do
  case "$v" in '' | *[!0-9]*) echo "widths_gpu.sh: '$v' is not a whole number" >&2; exit 2 ;; esac
done
name=widths_gpu.sh # for gpu_daemon.sh
# shellcheck source=bench/gpu_daemon.sh
. "$repo/bench/gpu_daemon.sh"
rtt=$bdir/bin/coop-bench-rtt
big=(--set "device.arena_mb=$arena" --set "limits.max_bytes_per_client=${arena}M" --set "limits.max_bytes_per_uid=${arena}M")

echo "cap,what,value"
for r in $caps; do
  "$coopd" --check-config --kernels "$kernels" --set device.max_registers="$r" \
    --set device.kernel_widths=yes >"$tmp/check.txt" 2>&1 ||
    { cat "$tmp/check.txt" >&2; exit 1; }
  grep -E '\(megakernel\)|^ *(bc|bfs|game|mis|lsssp|render|sweep) |bound by' "$tmp/check.txt" |
    sed 's/^ *//; s/,/;/g' | while IFS= read -r l; do echo "$r,report,$l"; done
  start_daemon "${big[@]}" --set device.max_registers="$r"
  w=$(ctl --json stats | sed -n 's/.*"workers":\([0-9]*\).*/\1/p')
  echo "$r,workers,$w"
  for a in $apps; do
    for _ in $(seq 1 "$runs"); do
      if ctl --json app "$a" --scale "$scale" --check >"$tmp/r.json" 2>"$tmp/r.err"; then
        echo "$r,$a,$(took "$tmp/r.json"),$(field check "$tmp/r.json")"
      else # a finding, not the end of the run: say what coopd saw
        echo "$r,$a,,failed"
        { cat "$tmp/r.err"; grep -E ' (error|warning|crit)' "$tmp/coopd.log" | tail -5; } >&2
      fi
    done
  done
  for k in 1 all; do
    "$rtt" --socket "$sock" --runs 300 --groups "$k" --label "cap$r" | tail -1 |
      sed "s/^/$r,rtt_k$k,/"
  done
  stop_daemon
done > >(tee "$tmp/runs.csv") # not a pipe: the loop runs in this shell, whose EXIT trap stops its coopd
wait "$!" # tee's last line, before runs.csv is read
for a in $apps; do
  base=$(awk -F, -v a="$a" '$1 == 0 && $2 == a { print $3 }' "$tmp/runs.csv" | quant 0.5)
  for r in $caps; do
    m=$(awk -F, -v a="$a" -v r="$r" '$1 == r && $2 == a { print $3 }' "$tmp/runs.csv" | quant 0.5)
    awk -v a="$a" -v r="$r" -v m="$m" -v b="$base" 'BEGIN {
      printf "%s, cap %s: p50 %.2f ms", a, r, m
      if (b > 0) printf " (%.3fx cap 0)", m / b
      printf "\n" }'
  done
done
machine_line
echo "scale: $scale; runs: $runs"
