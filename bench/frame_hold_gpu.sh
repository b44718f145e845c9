#!/usr/bin/env bash
# bench/frame_hold_gpu.sh --old COOPD [DIR]: the frame client through coopd
# (coop-bench-side's row (g), --frame-io) beside a bfs job of road
# 1024 x 1024 (--app bfs --input 1 --scale 12), K = N/2, two coopd builds
# in turns (old, new, old, new...) so that a lease's drift falls on both:
# what holds a frame beside a large job (bench/RESULTS.md, "What holds a
# frame beside a large job"). Each run is traced (COOP_TRACE_FILE, and the
# client's own stamps); after each: its rows (0), (b) and (g), the frames
# whose queued -> taken passed 100 us (bench/frame_waits.sh), (g)'s legs
# (bench/side_client_legs.sh, its rows alone and beside bfs together),
# how coopd's guess at each frame came out, window by window
# (bench/frame_guess.sh), coopd's path alone and beside bfs
# (bench/frame_path.sh), and how late its threads began the windows
# (bench/window_late.sh).
#
#   bench/frame_hold_gpu.sh --old COOPD [--old-set S.K=V]... [--new-set S.K=V]...
#                           [--runs "0.3:1 0.3:2 2:1"] [DIR]
#
# --old: the other build's coopd binary (built here and carried), or this
# build's own for an A/B of settings; --old-set, --new-set: a setting of
# that coopd's (coop-bench-side --coopd-set; up to 4 each). --runs:
# E:N pairs, E the task in ms, N a label; default two runs at 0.3 ms and
# one at 2. Outputs (S-*.txt/csv, T-* traces, C-* client stamps) go to DIR,
# else $OUT, else ./out, and all of them into r.tgz there.
set -o pipefail
old="" runs="0.3:1 0.3:2 2:1" old_sets=() new_sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --old-set) old_sets+=(--coopd-set "$2"); shift 2 ;;
    --new-set) new_sets+=(--coopd-set "$2"); shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "frame_hold_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ -z "$old" ] || [ ! -x "$old" ]; then
  echo "frame_hold_gpu.sh: --old COOPD must name a coopd binary" >&2; exit 2
fi
old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
b=build-cuda/bin
. bench/build_commit.sh
echo "commit: $(build_commit build-cuda .); old: $old ${old_sets[*]}; new: ${new_sets[*]}"
for spec in $runs; do
  e=${spec%%:*} r=${spec#*:}
  for v in old new; do
    c=$b/coopd sets=("${new_sets[@]}")
    [ $v = old ] && c=$old sets=("${old_sets[@]}")
    n=$v-$e-$r
    COOP_TRACE_FILE=$out/T-$n.csv timeout 200 $b/coop-bench-side --app bfs --input 1 --scale 12 \
      --exec-ms "$e" --setups alone,long,stream,coopd --k N/2 --window 2 --min-runs 2 --timeout 30 \
      --frame-io --coopd "$c" "${sets[@]}" --coopd-client-trace "$out/C-$n.csv" --csv "$out/S-$n.csv" >"$out/S-$n.txt" 2>&1
    echo "== $n rc=$? $(date +%T)"
    grep -E '^\| \((0|b|g)\) ' "$out/S-$n.txt" | cut -d'|' -f2-9
    bench/frame_waits.sh "$out/T-$n.csv" 100
    bench/side_client_legs.sh "$out/C-$n.csv" "$out/T-$n.csv" || true
    bench/frame_guess.sh "$out/C-$n.csv" "$out/T-$n.csv" || true
    bench/frame_path.sh "$out/T-$n.csv" || true
    bench/window_late.sh "$out/T-$n.csv" || true
  done
done
(cd "$out" && tar -czf r.tgz S-*.txt S-*.csv T-*.csv C-*.csv)
