#!/usr/bin/env bash
# bench/rtt_ab_gpu.sh: two coopd builds side by side in one lease, the nop
# task through coopd (coop-bench-rtt --nop --resident), K = 1 and K = all
# workers, rounds alternating old, new, then new with its client's frames
# on the socket alone (COOP_RING=0: what the shared ring saves, PROTOCOL.md
# "The shared ring"), so that a lease's drift falls on all three. Each run has its own coopd (COOP_TRACE_FILE set, so the new build's
# rows come with the legs of the path: docs/daemon.md, "The path of one
# job, leg by leg").
#
#   bench/rtt_ab_gpu.sh --old DIR [--old-kernels DIR] [--build-dir DIR] [--rounds N] [--runs N] [--args "ARGS"]
#
# --old DIR: the other build's coopd, coop-bench-rtt and libcoop.so.0, in
# one folder. --old-kernels DIR: that build's kernels/ folder (default this
# checkout's; an older coopd refuses directives it does not know).
# --build-dir: the new build (default build-cuda). --args: more of
# coop-bench-rtt's options for every run (e.g. "--every-us 16667": a run
# every 60th of a second, coopd's threads asleep between). Prints each
# run's CSV row (label old-K, new-K or noring-K) and the new build's legs;
# set COOP_BACKEND etc. as for any coopd.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/coopd_traced.sh"
bdir=$repo/build-cuda old= okern=$repo/kernels rounds=2 runs=2000 args=
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --old-kernels) okern=$2; shift 2 ;;
    --build-dir) bdir=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --args) args=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "rtt_ab_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
[ -n "$old" ] && [ -x "$old/coopd" ] && [ -x "$old/coop-bench-rtt" ] ||
  { echo "rtt_ab_gpu.sh: --old DIR must hold coopd and coop-bench-rtt" >&2; exit 2; }
tmp=$(mktemp -d /tmp/coop-rtt-ab.XXXXXX)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$tmp"' EXIT
echo "machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
# the commit the new build was built from (bench/CMakeLists.txt stamps it)
. "$repo/bench/build_commit.sh"
commit=$(build_commit "$bdir" "$repo")
echo "commit: $commit (the new build's); old: $old"
# one SIDE (old|new|noring) K run: a coopd of its own, then the bench against it
one() {
  local side=$1 k=$2 coopd rtt libs ring=1 kern=$repo/kernels
  if [ "$side" = old ]; then coopd=$old/coopd rtt=$old/coop-bench-rtt libs=$old:${LD_LIBRARY_PATH:-} kern=$okern
  else coopd=$bdir/bin/coopd rtt=$bdir/bin/coop-bench-rtt libs=${LD_LIBRARY_PATH:-}; fi
  [ "$side" = noring ] && ring=0
  local sock=$tmp/s.sock trace=$tmp/$side-$k.trace
  LD_LIBRARY_PATH=$libs coopd_traced "$coopd" "$kern" "$sock" "$trace" "$tmp/coopd.log"
  COOP_RING=$ring LD_LIBRARY_PATH=$libs "$rtt" --socket "$sock" --nop --resident --spin-us 200 --runs "$runs" \
    --groups "$k" --label "$side-$k" --trace "$trace" $args 2>&1
  kill "$daemon"; wait "$daemon" 2>/dev/null || true
  daemon=
}
for r in $(seq 1 "$rounds"); do
  echo "== round $r"
  for k in 1 all; do one old "$k"; one new "$k"; one noring "$k"; done
done
