#!/usr/bin/env bash
# The GPU batch "a gather beside game": the kill cascade's take of the
# waiters below a kill a word of their bits at a time (the default) against
# one bit at a time (COOP_KILL_TAKE_WORDS=0), both built with
# COOP_PROF_KILLS (docs/scheduler.md, "Profile"), in turns: a 0.3 ms
# matmul at K = N/2 beside game (scale 2, 112 registers) with and without
# gathering ahead, and beside bfs on road 1024 x 1024 without. Each run
# prints its coop rows and the profile's two lines. ROUNDS=R rounds of the
# four runs (default 2), about 45 s a run on an H200.
#
#   [ROUNDS=R] bench/kills_gpu.sh [DIR]
#
# Run from the repository root on the GPU machine with build-cuda built here
# (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/sharing_gpu.sh. Outputs (kills-wW-APP-R.csv and .txt, W 1 for the
# word take, 0 for one bit at a time) go to DIR, else $OUT, else ./out.
set -o pipefail
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
b=build-cuda/bin
t0=$(date +%s)
run() { # words app input scale setups round
  local name=kills-w$1-$2-$6
  COOP_DEVICE_DEFINES="COOP_PROF_KILLS COOP_KILL_TAKE_WORDS=$1" timeout 120 $b/coop-bench-side \
    --app "$2" --input "$3" --scale "$4" --exec-ms 0.3 --setups "$5" --k N/2 --window 2 \
    --min-runs 2 --timeout 30 --max-registers 112 --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
  echo "== $name rc=$? at $(($(date +%s) - t0)) s"
  grep -E '^\| \(c\)|COOP_PROF_KILLS|made by an offer|waits at an offer' "$out/$name.txt"
}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for w in 1 0; do
    run "$w" game 0 2 alone,long,coop-ahead0,coop "$r"
    run "$w" bfs 1 12 alone,long,coop-ahead0 "$r"
  done
done
