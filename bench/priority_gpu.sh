#!/usr/bin/env bash
# bench/priority_gpu.sh: what a job of higher priority that needs every
# worker waits for beside a running cooperative job (docs/daemon.md,
# "Priority").
#   bench/priority_gpu.sh [--build-dir DIR] [--tasks N] [--barrier query|plain] [--graph WxH]
#                         [--only-used 0|1]
# Starts a coopd of its own (max_priority 10, never parked), runs bfs on a
# road graph of WxH (2048x2048 by default) through it as cooperative jobs
# on every worker (one job per source, `coopctl app bfs --sources`, in the
# background), and, while they run, N non-cooperative render tasks (n = 64,
# one rep) on every worker, one at a time: N at priority 5, then N at
# priority 0. A task of priority 5 has the running bfs job suspended (it keeps one workgroup at
# its barriers, so the task cannot otherwise get every worker); one of
# priority 0 waits for that bfs job to end. Prints one CSV line per task:
# priority, gather (released -> gathered, ns, the device's clock),
# end-to-end latency (ms, coopctl's wall clock, process start included),
# whether it had bfs suspended (a task that came between two bfs jobs finds
# every worker free); then p50/p99 per priority, the machine, GPU and commit,
# and the step of that bfs run alone (execution / resizing barriers, us).
# --only-used 1: coopd loads only the two kernels used (bfs, render), not
# every shipped one: a megakernel of fewer registers, so more workers.
# Needs an NVIDIA GPU and a build with -DCOOP_CUDA=ON (default build-cuda);
# on PoCL (COOP_BACKEND unset, any build dir) it runs as well, slower.
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)
bdir=$repo/build-cuda tasks=20 barrier=query graph=2048x2048 only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --barrier) barrier=$2; shift 2 ;;
    --graph) graph=$2; shift 2 ;;
    --only-used) only=$2; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "priority_gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$tasks" in '' | *[!0-9]*) echo "priority_gpu.sh: '$tasks' is not a whole number" >&2; exit 2 ;; esac
case "$only" in 0 | 1) ;; *) echo "priority_gpu.sh: --only-used 0 or 1" >&2; exit 2 ;; esac
case "$barrier" in query) bflag=--query-barrier ;; plain) bflag= ;;
  *) echo "priority_gpu.sh: --barrier query or plain" >&2; exit 2 ;; esac
coopd=$bdir/bin/coopd ctl=$bdir/bin/coopctl
for b in "$coopd" "$ctl"; do
  [ -x "$b" ] || { echo "priority_gpu.sh: no $b (build with -DCOOP_CUDA=ON, or --build-dir)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/coop-priority.XXXXXX)
daemon= apps=
cleanup() {
  [ -n "$apps" ] && kill "$apps" 2>/dev/null || true
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
sock=$tmp/coop.sock
kernels=$repo/kernels:$bdir/kernels/apps
if [ "$only" = 1 ]; then
  mkdir "$tmp/k" && cp "$repo/kernels/render.cl" "$bdir/kernels/apps/bfs.cl" "$tmp/k/"
  kernels=$tmp/k
fi
"$coopd" --socket "$sock" --kernels "$kernels" --set limits.max_priority=10 \
  --set device.park_ms=0 --set jobs.gather_budget_ms=60000 --set server.journal=off \
  2>"$tmp/coopd.log" &
daemon=$!
for _ in $(seq 1 3000); do # the megakernel's build: seconds (minutes on PoCL)
  [ -S "$sock" ] && "$ctl" --socket "$sock" stats >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$tmp/coopd.log" >&2; exit 1; }
  sleep 0.1
done
ctl() { "$ctl" --socket "$sock" "$@"; }
# the first "workers": field of STATS (device 0's)
workers=$(ctl --json stats | sed -n 's/.*"workers":\([0-9]*\).*/\1/p' | head -1)
head -c $((64 * 64 * 4)) /dev/zero >"$tmp/m"

# the yardstick: a step of that bfs alone through coopd (execution /
# resizing barriers, one job from source 0)
ctl app bfs --gen "road:$graph" $bflag >"$tmp/one.out" 2>&1 || true
step=$(awk '/^  execution/ { e = $2; u = $3 } /resizes/ { r = $NF }
  END { if (r > 0) printf "%.1f", (u == "ms" ? e * 1000 : e) / r; else print "-" }' "$tmp/one.out")

# bfs for long enough: 20 x tasks sources (about 45 ms each on an H100)
sources=$(seq -s, 0 $((20 * tasks - 1)))
ctl app bfs --gen "road:$graph" $bflag --sources "$sources" >"$tmp/bfs.out" 2>&1 &
apps=$!
sleep 3 # the graph is uploaded and the first jobs run

echo "priority,gather_ns,latency_ms,suspended"
for p in 5 0; do
  for _ in $(seq 1 "$tasks"); do
    kill -0 "$apps" 2>/dev/null || { echo "priority_gpu.sh: bfs ended before the tasks did" >&2; exit 1; }
    t0=$(date +%s%N)
    ctl --json submit render --wg "$workers" --priority "$p" --wait \
      in:"$tmp/m" in:"$tmp/m" out:$((64 * 64 * 4)):/dev/null u32:64 u32:1 >"$tmp/r.json"
    t1=$(date +%s%N)
    g=$(sed -n 's/.*"gather_ns":\([0-9null]*\).*/\1/p' "$tmp/r.json" | head -1)
    id=$(sed -n 's/^{"job":\([0-9]*\).*/\1/p' "$tmp/r.json" | head -1)
    sus=$(grep -c "suspending it: job $id of" "$tmp/coopd.log" || true)
    echo "$p,$g,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'),$sus"
    sleep 0.05
  done
done | tee "$tmp/tasks.csv"
# quantile F of a column of numbers, one per line (nearest rank)
quant() { sort -g | awk -v f="$1" '{ v[NR] = $1 } END { i = int(f * NR + 0.999); if (i < 1) i = 1; if (NR) print v[i] }'; }
# per priority; for priority 5 also the tasks that had bfs suspended (the
# others found it between two jobs, every worker free)
for sel in "5 any" "5 1" "0 any"; do
  set -- $sel
  # tasks.csv has no header (it is echoed before the pipe into tee): every
  # line is a task (NR > 1 dropped the first priority-5 task of every run)
  col() { awk -F, -v p="$1" -v s="$2" -v c="$3" '$1 == p && (s == "any" || $4 == s) && $2 != "null" && $2 != "" { print $c }' "$tmp/tasks.csv"; }
  n=$(col "$1" "$2" 2 | wc -l)
  [ "$n" -gt 0 ] || continue
  what="priority $1"
  [ "$2" = any ] || what="priority $1, bfs suspended"
  echo "$what ($n tasks): gather p50 $(col "$1" "$2" 2 | quant 0.5) ns p99 $(col "$1" "$2" 2 | quant 0.99) ns;" \
    "latency p50 $(col "$1" "$2" 3 | quant 0.5) ms p99 $(col "$1" "$2" 3 | quant 0.99) ms"
done
grep -c "suspending it" "$tmp/coopd.log" | sed 's/^/suspensions: /'
kill "$apps" 2>/dev/null || true
echo "machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
# the commit the binaries were built from (bench/CMakeLists.txt stamps it):
# the tree's HEAD may be another
. "$repo/bench/build_commit.sh"
commit=$(build_commit "$bdir" "$repo")
echo "commit: $commit (the build's); workers: $workers; barrier: $barrier"
echo "bfs's step alone (execution / resizing barriers): $step us"
grep -m1 -o "megakernel width: .*" "$tmp/coopd.log" || true
