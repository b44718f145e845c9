#!/usr/bin/env bash
# bench/reload_gpu.sh: what a kernel reload costs a cooperative job that runs
# through it (docs/daemon.md, "Kernel reload": such a job is suspended,
# carried into the new megakernel and resumed, not cancelled).
#   bench/reload_gpu.sh [--build-dir DIR] [--graph WxH | --sweep N,ROUNDS] [--runs N]
#                       [--after-ms MS] [--in-place yes|no] [--arena-mb MB]
# Starts a coopd of its own and, N times (3): runs bfs (cooperative, query
# barrier) on a road graph of WxH (65536x128 by default: about 1.4 s on an
# H200, longer than a reload's build) from vertex 0 uninterrupted, then
# again with a SIGHUP MS ms (100) after its job is running, each checked
# against the CPU and their outputs compared byte for byte. Prints one CSV
# line per run: the two job times through coopd (finished - submitted, ms),
# the time the reload added, the swap's two legs (the old megakernel left
# the device, or before 2026-11-29 closed with its process; the new one
# launched; coopd's log), the carried buffers' staging between
# them (through a share of the new device process; "-" where they went
# through a memfd, as before 2026-11-29), how long the job was off the GPU (its
# suspension across the reload -> resumed in the new megakernel, from the
# log's millisecond stamps), the jobs cancelled (the target is 0), the
# check, whether the outputs are identical, and how long the new device
# process took to make its arena and place the carried buffers' room on
# the device while the job still ran ("-" before 2026-11-29), and the
# swap in place (park, the new program in, relaunch; "-" where a new
# device process built the set). Then the medians.
# --in-place yes|no: [kernels] reload_in_place (default yes: the running
# device process builds and swaps the set; no: a new device process, the
# buffers carried across). --arena-mb: the arena (default 4096; PoCL on a
# small host may refuse that much fine-grained SVM: 512 does there).
# Needs an NVIDIA GPU and a build with -DCOOP_CUDA=ON (default build-cuda);
# on PoCL (COOP_BACKEND unset, any build dir) it runs as well, slower: the
# job must still run when the reload's build ends (about 0.5 s on two
# cores), so keep the graph and ask early (--graph 65536x128 --after-ms 10
# runs 0.6 s there).
# --sweep N,ROUNDS: the job is the sample kernel sweep instead (cooperative,
# query barrier) on N u32 elements for ROUNDS rounds, its output compared
# in the same way: a job whose run time varies far less than bfs's (whose
# runs spread by 10% on an H200), so that what a reload adds is seen.
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)
bdir=$repo/build-cuda graph=65536x128 runs=3 after=100 sweep= inplace=yes arena=4096
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --graph) graph=$2; shift 2 ;;
    --sweep) sweep=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --after-ms) after=$2; shift 2 ;;
    --in-place) inplace=$2; shift 2 ;;
    --arena-mb) arena=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "reload_gpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$inplace" in yes | no) ;; *) echo "reload_gpu.sh: --in-place yes or no" >&2; exit 2 ;; esac
n=${sweep%%,*} rounds=${sweep#*,}
[ -n "$sweep" ] || n=0 rounds=0
for v in "$runs" "$after" "$n" "$rounds" "$arena"; do
  case "$v" in '' | *[!0-9]*) echo "reload_gpu.sh: '$v' is not a whole number" >&2; exit 2 ;; esac
done
name=reload_gpu.sh
# shellcheck source=bench/gpu_daemon.sh
. "$repo/bench/gpu_daemon.sh"
start_daemon --set device.arena_mb="$arena" --set limits.max_bytes_per_client=4G \
  --set limits.max_bytes_per_uid=4G --set kernels.reload_in_place=$inplace
kernel=bfs
[ -n "$sweep" ] && kernel=sweep
# job --out PATH: the job, its result JSON on stdout, its output in PATH
job() {
  if [ -z "$sweep" ]; then
    ctl --json app bfs --gen "road:$graph" --query-barrier --source 0 --check "$@"
  else
    ctl --json submit sweep --coop --query-barrier --wait "out:$((n * 4)):$2" "u32:$n" "u32:$rounds"
  fi
}
# ms since midnight of a coopd log line's stamp (2026-11-29 09:32:43.719 ...)
stamp_ms() { awk '{ split($2, t, ":"); printf "%.0f\n", ((t[1] * 60 + t[2]) * 60 + t[3]) * 1000 }'; }
reloads() { grep -c "reload: done" "$tmp/coopd.log" || true; }

echo "run,base_ms,reload_ms,added_ms,closed_ms,launched_ms,staged_ms,off_gpu_ms,cancelled,check,identical,ahead_ms,in_place_ms"
for r in $(seq 1 "$runs"); do
  job --out "$tmp/base.out" >"$tmp/base.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  before=$(wc -l <"$tmp/coopd.log")
  n0=$(reloads)
  job --out "$tmp/reload.out" >"$tmp/reload.json" 2>"$tmp/err" &
  app=$!
  id=$(running_job "$kernel" "$app")
  sleep "$(awk -v m="$after" 'BEGIN { print m / 1000 }')"
  kill -HUP "$daemon"
  wait "$app" || { cat "$tmp/err" >&2; exit 1; }
  for _ in $(seq 1 600); do # the reload's end, before the next run
    [ "$(reloads)" -gt "$n0" ] && break
    sleep 0.05
  done
  log=$(tail -n +"$((before + 1))" "$tmp/coopd.log")
  legs=$(sed -n 's/.*\(closed\|left the device\) in \([0-9]*\) ms, the new one launched in \([0-9]*\) ms.*/\2,\3/p' <<<"$log" | head -1)
  staged=$(sed -n "s/.*MB of carried buffers staged in the new megakernel's arena in \([0-9.]*\) ms.*/\1/p" <<<"$log" | head -1)
  ahead=$(sed -n "s/.*the new megakernel's arena made in \([0-9.]*\) ms before the swap.*/\1/p" <<<"$log" | head -1)
  swapped=$(sed -n "s/.*reload: swapped in place in \([0-9.]*\) ms.*/\1/p" <<<"$log" | head -1)
  out=$(grep -m1 "job $id ($kernel): suspended across the kernel reload" <<<"$log" | stamp_ms || true)
  in=$(grep -m1 "job $id ($kernel): resumed in the new megakernel" <<<"$log" | stamp_ms || true)
  off=-
  [ -n "$out" ] && [ -n "$in" ] && off=$((in - out))
  cancelled=$(grep -c "job [0-9]* .*cancel" <<<"$log" || true)
  same=no
  cmp -s "$tmp/base.out" "$tmp/reload.out" && same=yes
  b=$(took "$tmp/base.json") t=$(took "$tmp/reload.json")
  echo "$r,$b,$t,$(awk -v a="$t" -v b="$b" 'BEGIN { printf "%.3f", a - b }'),${legs:--,-},${staged:--},$off,$cancelled,$(chk=$(field check "$tmp/reload.json"); echo "${chk:--}"),$same,${ahead:--},${swapped:--}"
done | tee "$tmp/runs.csv"
for c in 2 3 4 5 6 7 8 13; do
  h=$(head -1 <<<"run,base_ms,reload_ms,added_ms,closed_ms,launched_ms,staged_ms,off_gpu_ms,cancelled,check,identical,ahead_ms,in_place_ms" | cut -d, -f"$c")
  printf "%s p50 %s; " "$h" "$(cut -d, -f"$c" "$tmp/runs.csv" | grep -v '^-$' | quant 0.5)"
done
echo
machine_line
if [ -n "$sweep" ]; then
  echo "job: sweep of $n u32 x $rounds rounds; SIGHUP $after ms after the job runs; in place: $inplace"
else
  echo "graph: road $graph; SIGHUP $after ms after the job runs; in place: $inplace"
fi
