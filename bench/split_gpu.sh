#!/usr/bin/env bash
# The GPU batch "game's stopped searches split": a 0.3 ms matmul at 60
# fps, K = N/2, beside game (scale 2, 112 registers), with gathering ahead
# (500 us) and without, game built as shipped (a task whose search stopped
# for a kill is split into its children, keeping the searches that ended:
# game.cl, game_give_split) and with GAME_GIVE_SPLIT=0 (given back whole),
# in turns; then game's run alone in each build. ROUNDS=R rounds (default
# 2), WINDOW=S seconds a row (default 2), about 45 s a run on an H200.
#
#   [ROUNDS=R] [WINDOW=S] bench/split_gpu.sh [DIR]
#
# Run from the repository root on the GPU machine with build-cuda built
# here (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/sharing_gpu.sh. Outputs (split-S-R.csv and .txt, S 1 split, 0
# whole) go to DIR, else $OUT, else ./out.
set -o pipefail
out=${1:-${OUT:-$PWD/out}}
mkdir -p "$out" /work || exit 1
out=$(cd "$out" && pwd)
[ -e /work/main ] || ln -s "$PWD" /work/main
cd /work/main || exit 1
export LD_LIBRARY_PATH=$PWD/.devlibs COOP_BACKEND=cuda
nvidia-smi -L
b=build-cuda/bin
t0=$(date +%s)
for r in $(seq 1 "${ROUNDS:-2}"); do
  for sp in 1 0; do
    name=split-$sp-$r
    COOP_DEVICE_DEFINES="GAME_GIVE_SPLIT=$sp" timeout 150 $b/coop-bench-side --app game --input 0 \
      --scale 2 --exec-ms 0.3 --setups alone,long,coop-ahead0,coop --k N/2 --window "${WINDOW:-2}" \
      --min-runs 2 --timeout 30 --max-registers 112 --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
    echo "== $name rc=$? at $(($(date +%s) - t0)) s"
    grep -E '^\| \((0|c)\)|^\| long kernel alone \|' "$out/$name.txt"
  done
done
