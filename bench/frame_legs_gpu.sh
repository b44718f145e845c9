#!/usr/bin/env bash
# bench/frame_legs_gpu.sh: where a frame client's time goes through coopd.
# coop-bench-rtt --resident --frame (each run writes the render's first
# input into a device buffer, renders n x n on K workgroups, reads the
# output back), one run every 16667 us (60 fps: coopd's threads asleep or
# warm ahead between frames) and back to back, each against a coopd of its
# own with COOP_TRACE_FILE set; prints the bench's CSV row, the job's legs
# and the buffer operations' legs (bench/buf_legs.sh).
#
#   bench/frame_legs_gpu.sh [--build-dir DIR] [--runs N] [--n N] [--groups K|all]
#                           [--io] [--keep DIR]
#
# --io: each frame is one job that moves its input and output itself
# (coop-bench-rtt --frame-io, coop_job_buffer_io), not a write, a job and
# a read.
# --keep DIR: the traces (trace-EVERY.csv) and coopd's logs are left there.
# Set COOP_BACKEND etc. as for any coopd; COOP_LOG_LEVEL=debug logs each
# warm window armed and entered.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/coopd_traced.sh"
bdir=$repo/build-cuda runs=300 n=264 groups=all keep= how=--frame
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) bdir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --groups) groups=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --io) how=--frame-io; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "frame_legs_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d /tmp/coop-frame-legs.XXXXXX)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$tmp"' EXIT
echo "machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
. "$repo/bench/build_commit.sh"
echo "commit: $(build_commit "$bdir" "$repo")"
for every in 16667 0; do
  sock=$tmp/s.sock trace=$tmp/trace-$every.csv
  coopd_traced "$bdir/bin/coopd" "$repo/kernels" "$sock" "$trace" "$tmp/coopd.log" \
    ${COOP_LOG_LEVEL:+--log-level "$COOP_LOG_LEVEL"}
  echo "== one frame every $every us"
  "$bdir/bin/coop-bench-rtt" --socket "$sock" --resident "$how" --n "$n" --groups "$groups" \
    --spin-us 200 --every-us "$every" --runs "$runs" --label "frame-every$every" --trace "$trace" 2>&1
  sh "$repo/bench/buf_legs.sh" "$trace" 10 || echo "(no buffer operations' lines: a coopd before them)"
  kill "$daemon"; wait "$daemon" 2>/dev/null || true
  daemon=
  if [ -n "$keep" ]; then cp "$trace" "$keep/" && cp "$tmp/coopd.log" "$keep/coopd-$every.log"; fi
done
