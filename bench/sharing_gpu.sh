#!/usr/bin/env bash
# The GPU batch "sharing one GPU": coop-bench-side's setups side by side for
# one short periodic task (the matmul, every 16.7 ms) beside one long
# kernel: coop with gathering ahead on and off, driver time slicing (a
# second process), a second stream at the default and at the highest
# priority, green contexts and MPS (no limits, 90/10), for tasks of 0.1,
# 0.3, 2 and 8 ms beside bfs on road 1024 x 1024 (barrier-bound) and beside
# game (Connect Four search, compute-bound; scale GAME_SCALE, default 2;
# its megakernel built under 112 registers in every setup: at the 119 of
# the room's cap the streams' plain matmul never starts beside it,
# docs/kernels.md "The megakernel's width").
# Beside bfs at 0.3 and 2 ms also coopd: a frame client of a coopd the
# bench starts (build-cuda/bin/coopd), its input written and its output
# read through device buffers every frame, beside bfs as a coopd job.
# Eight runs of coop-bench-side with 1 s windows (WINDOW=S for S seconds:
# p99 of 1 s is about the slowest of 45 frames), K = N/2, about 9 minutes
# on an H100 for bfs's half and as long for game's (LONGS= splits them).
#
#   [WINDOW=S] [LONGS=bfs|game] [SIZES="0.3 2"] bench/sharing_gpu.sh [DIR]
#
# Run from the repository root on the GPU machine with build-cuda built here
# (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/native_gpu.sh. Outputs (side-APP-E.csv, .md and .txt per run) go to
# DIR, else $OUT, else ./out. mps starts and quits an MPS control daemon of
# its own when nvidia-cuda-mps-control is on PATH, and is skipped (a line
# says so) when it is not; green is skipped on a driver without green
# contexts.
set -o pipefail
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
command -v nvidia-cuda-mps-control || echo "no nvidia-cuda-mps-control on PATH: mps will be skipped"
b=build-cuda/bin
window=${WINDOW:-1}
setups=alone,long,coop-alone,coop-alone-ahead0,process,stream,prio,coop,coop-ahead0,green,mps
t0=$(date +%s)
longs=("bfs 1 12" "game 0 ${GAME_SCALE:-2}")
case ${LONGS:-all} in # LONGS=bfs or game: that half alone
  bfs) longs=("${longs[0]}") ;;
  game) longs=("${longs[1]}") ;;
esac
for long in "${longs[@]}"; do
  read -r app input scale <<<"$long"
  for e in ${SIZES:-0.1 0.3 2 8}; do
    name=side-$app-$e
    s=$setups limit=$((110 * window))
    # game: every process setup's client generates game's input first
    # (seconds each; MPS starts four), so its sizes take longer (130 s on
    # an H100 at 1 s windows), with no hang
    [ "$app" = game ] && limit=$((240 * window))
    # the frame client through coopd: its own daemon, three more windows
    if [ "$app" = bfs ] && { [ "$e" = 0.3 ] || [ "$e" = 2 ]; }; then s=$setups,coopd limit=$((170 * window)); fi
    regs=()
    [ "$app" = game ] && regs=(--max-registers 112)
    timeout $limit $b/coop-bench-side --app "$app" --input "$input" --scale "$scale" --exec-ms "$e" \
      --setups "$s" --k N/2 --window "$window" --min-runs 2 --timeout 30 "${regs[@]}" \
      --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
    echo "== $name rc=$? at $(($(date +%s) - t0)) s"
    grep -E "matmul n |long kernel alone: |skipped|green contexts|mps:|coopd \(g\)|WRONG|FAILED" \
      "$out/$name.txt"
    sed -n '/^### Side by side/,/^### Graphics/p' "$out/$name.txt" | grep -E '^\| [(l]'
  done
done
