#!/usr/bin/env bash
# bench/share_gpu.sh [--graph WxH] [--bfs N] [--flood N] [--render-ms MS]
#                    [--settle MS] [--settings "0 60"] [--rounds R]
#                    [--user NAME] [DIR]:
# what one user's flood of renders costs another user's bfs, with [jobs]
# task_percent_per_uid off (0) and set (docs/daemon.md, "A user's share of
# the worker time"). For each round and setting, in turns, a coopd of this
# build (gpu_daemon.sh, its socket open to --user, default nobody) with the
# setting; --user runs bfs on road WxH (default 512x512, query barrier,
# checked) --bfs times (default 3) alone; root then submits --flood renders
# (default 120, detached; 128 is [limits] max_jobs_per_uid) of 256 x 256 on
# every worker but one, each about --render-ms (default 10; reps calibrated
# per coopd in two steps, the second at the first's estimate, since a short
# render's time is mostly its fixed cost), waits --settle ms (default 300:
# the flood past the burst the share allows), and --user runs the same bfs
# --bfs times again while they go. Prints CSV lines: setting, round, phase
# (alone, flood), the bfs times (submitted -> finished) p50 and max in ms,
# root's renders finished by the end (the flood must outlast the bfs runs:
# fewer than --flood) and one render's measured time at the reps used. Run
# as root; DIR (else $OUT, else ./out) gets share.csv.
set -o pipefail
graph=512x512 nbfs=3 flood=120 render_ms=10 settle=300 settings="0 60" rounds=2 user=nobody
while [ $# -gt 0 ]; do
  case $1 in
    --graph) graph=$2; shift 2 ;;
    --bfs) nbfs=$2; shift 2 ;;
    --flood) flood=$2; shift 2 ;;
    --render-ms) render_ms=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --user) user=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "share_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
bdir=${COOP_BENCH_BUILD:-build-cuda} repo=$PWD name=share_gpu
. "$(dirname "$0")/gpu_daemon.sh"
chmod 0755 "$tmp"
csv=$out/share.csv
as_user() { setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups "$@"; }
# bfs_runs PHASE: --bfs runs as --user, their p50 and max (ms) as "p50,max"
bfs_runs() {
  for _ in $(seq "$nbfs"); do
    as_user "$ctl" --socket "$sock" --json app bfs --gen "road:$graph" --query-barrier --check \
      >"$tmp/bfs.json" 2>"$tmp/bfs.err" || { cat "$tmp/bfs.err" >&2; return 1; }
    took "$tmp/bfs.json"; echo
  done | sort -g | awk '{ v[NR] = $1 } END { printf "%s,%s", v[int((NR + 1) / 2)], v[NR] }'
}
bytes=$((256 * 256 * 4))
echo "setting,round,phase,bfs_p50_ms,bfs_max_ms,renders_done,render_ms" | tee "$csv"
for r in $(seq "$rounds"); do
  for s in $settings; do
    start_daemon --set "jobs.task_percent_per_uid=$s" --set server.socket_mode=0666
    workers=$(ctl --json stats | sed -n 's/.*"workers":\([0-9]*\).*/\1/p')
    [ "${workers:-0}" -ge 2 ] || { echo "$name: $workers workers: the renders need 2 or more" >&2; exit 1; }
    # render_ns REPS: one render of every worker but one, its exec_ns
    render_ns() {
      ctl --json submit render --wg $((workers - 1)) --wait "zeros:$bytes" "zeros:$bytes" \
        "zeros:$bytes" u32:256 "u32:$1" | sed -n 's/.*"exec_ns":\([0-9]*\).*/\1/p'
    }
    # scale REPS NS: the reps that take --render-ms if NS grows with them
    scale() { awk -v r="$1" -v e="$2" -v ms="$render_ms" \
      'BEGIN { n = int(r * ms * 1e6 / e + 0.5); print n < 1 ? 1 : n }'; }
    reps=$(scale 2 "$(render_ns 2)")
    reps=$(scale "$reps" "$(render_ns "$reps")")
    rms=$(awk -v e="$(render_ns "$reps")" 'BEGIN { printf "%.2f", e / 1e6 }')
    a=$(bfs_runs) || exit 1
    echo "$s,$r,alone,$a,0,$rms" | tee -a "$csv"
    for _ in $(seq "$flood"); do ctl submit render --wg $((workers - 1)) "zeros:$bytes" \
      "zeros:$bytes" "zeros:$bytes" u32:256 "u32:$reps" >/dev/null || exit 1; done
    sleep "$(awk -v ms="$settle" 'BEGIN { print ms / 1000 }')"
    f=$(bfs_runs) || exit 1
    done_n=$(ctl --json status | grep -o '"state":"done","kernel":"render"' | wc -l)
    echo "$s,$r,flood,$f,$done_n,$rms" | tee -a "$csv"
    stop_daemon
  done
done
echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); workers $workers; render reps $reps; commit $(build_commit "$bdir" "$repo")"
