#!/usr/bin/env bash
# bench/rtt_builds_gpu.sh: the nop task through coopd (coop-bench-rtt --nop
# --resident, K = 1) for several builds in one lease, alternating build by
# build for ROUNDS rounds, each run its own coopd with COOP_TRACE_FILE set:
# a bisection of the daemon path across commits (bench/RESULTS.md, "The
# frame client ahead of both streams ...": the legs where the loop notices
# work spread over coopds of one build, so each build runs every round).
#
#   bench/rtt_builds_gpu.sh [--rounds N] [--runs N] DIR...
#
# DIR: a folder holding one build's coopd, coop-bench-rtt, libcoop.so.0
# and its kernels/ folder (an older coopd refuses directives it does not
# know), or `head` for build-cuda with this checkout's kernels. Prints for
# each run its CSV row (label, p50, p99) and the medians of the legs that
# moved before (the SUBMIT's crossing, admission, the hand-back to the
# loop, the RESULT). Set COOP_BACKEND etc. as for any coopd.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/coopd_traced.sh"
rounds=2 runs=2000
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "rtt_builds_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "rtt_builds_gpu.sh: name at least one DIR (--help)" >&2; exit 2; }
for dir in "$@"; do
  if [ "$dir" != head ] && { [ ! -x "$dir/coopd" ] || [ ! -x "$dir/coop-bench-rtt" ]; }; then
    echo "rtt_builds_gpu.sh: $dir holds no coopd and coop-bench-rtt" >&2
    exit 2
  fi
done
tmp=$(mktemp -d /tmp/coop-rtt-builds.XXXXXX)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$tmp"' EXIT
echo "machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
for r in $(seq 1 "$rounds"); do
  for dir in "$@"; do
    if [ "$dir" = head ]; then bd=$repo/build-cuda/bin lib=$repo/build-cuda/lib kern=$repo/kernels lab=head
    else bd=$(cd "$dir" && pwd) lib=$(cd "$dir" && pwd) kern=$(cd "$dir" && pwd)/kernels lab=$(basename "$dir"); fi
    LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} coopd_traced "$bd/coopd" "$kern" "$tmp/s.sock" \
      "$tmp/t" "$tmp/coopd.log"
    LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} "$bd/coop-bench-rtt" --socket "$tmp/s.sock" --nop \
      --resident --spin-us 200 --runs "$runs" --groups 1 --label "$lab-r$r" --trace "$tmp/t" \
      >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    grep -E "^$lab-r$r," "$tmp/out" | cut -d, -f1,5,12
    grep -E "^(c_send->recv|recv->admitted|handed_back->loop_got|result_sent->c_recv)," "$tmp/out" |
      cut -d, -f1,2 | tr '\n' ' '
    echo
    kill "$daemon"; wait "$daemon" 2>/dev/null || true
    daemon=
  done
done
