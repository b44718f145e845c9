#!/usr/bin/env bash
# The GPU batch "how far ahead to gather": a 0.3 ms matmul at 60 fps, K =
# N/2, beside game (scale 2, 112 registers) with gathering ahead of each
# of AHEADS (us; default "100 200 500", 500 the runtime's default) and,
# in the first run of each round, without (coop-ahead0). Each run prints
# its coop rows: task latency, gather, and game's slowdown against its run
# alone in the same call. ROUNDS=R rounds (default 2), WINDOW=S seconds a
# row (default 3), about 45 s a run on an H200.
#
#   [ROUNDS=R] [WINDOW=S] [AHEADS="A B ..."] [APP=game|bfs] bench/ahead_gpu.sh [DIR]
#
# Run from the repository root on the GPU machine with build-cuda built
# here (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/sharing_gpu.sh. Outputs (ahead-APP-A-R.csv and .txt) go to DIR,
# else $OUT, else ./out.
set -o pipefail
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
b=build-cuda/bin
app=${APP:-game}
case "$app" in
  game) input=0 scale=2 ;;
  bfs) input=1 scale=12 ;;
  *) echo "ahead_gpu.sh: APP is game or bfs" >&2; exit 2 ;;
esac
t0=$(date +%s)
for r in $(seq 1 "${ROUNDS:-2}"); do
  first=1
  for a in ${AHEADS:-100 200 500}; do
    setups=alone,long,coop
    [ $first = 1 ] && setups=alone,long,coop-ahead0,coop
    first=0
    name=ahead-$app-$a-$r
    timeout 150 $b/coop-bench-side --app "$app" --input "$input" --scale "$scale" --exec-ms 0.3 \
      --setups "$setups" --k N/2 --window "${WINDOW:-3}" --ahead "$a" --min-runs 2 --timeout 30 \
      --max-registers 112 --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
    echo "== $name rc=$? at $(($(date +%s) - t0)) s"
    grep -E '^\| \((0|c)\)' "$out/$name.txt"
  done
done
