#!/usr/bin/env bash
# bench/bufcopy_gpu.sh [--old COOPD] [--bytes N] [--rounds R] [DIR]: large
# device-buffer copies through coopd and a frame client beside them
# (coop-bench-bufcopy), this build's coopd and, with --old, another build's
# in turns (old, new, old, new...) so that a lease's drift falls on both:
# what the slices of docs/daemon.md "Device buffers" cost a copy and what
# they save a frame beside one. Each coopd loads kernels/ only. CSV rows go
# to DIR/bufcopy.csv (DIR, else $OUT, else ./out), one table per run on
# stdout.
set -o pipefail
old="" bytes=67108864 rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "bufcopy_gpu.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -z "$old" ] || [ -x "$old" ] || { echo "bufcopy_gpu.sh: --old $old: not a program" >&2; exit 2; }
[ -z "$old" ] || old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
. "$(dirname "$0")/gpu_prelude.sh" "${1:-}"
bdir=build-cuda repo=$PWD name=bufcopy_gpu kernels=$PWD/kernels
. "$(dirname "$0")/gpu_daemon.sh"
new=$coopd csv=$out/bufcopy.csv
. bench/build_commit.sh
echo "commit: $(build_commit "$bdir" "$repo"); old: ${old:-none}; bytes: $bytes"
rm -f "$csv"
for r in $(seq 1 "$rounds"); do
  for v in ${old:+old} new; do
    coopd=$new
    [ "$v" = old ] && coopd=$old
    start_daemon
    timeout 120 "$bdir/bin/coop-bench-bufcopy" --socket "$sock" --bytes "$bytes" --label "$v-$r" \
      >"$tmp/rows.csv" || { echo "== $v-$r failed"; tail -5 "$tmp/coopd.log"; }
    stop_daemon
    echo "== $v-$r"
    cut -d, -f1-9 "$tmp/rows.csv"
    if [ -s "$csv" ]; then tail -n +2 "$tmp/rows.csv" >>"$csv"; else cat "$tmp/rows.csv" >"$csv"; fi
  done
done
