#!/usr/bin/env bash
# The GPU batch behind bench/RESULTS.md "Tails: the first tasks after a
# launch are the slow ones": the dispatch legs in-process
# (coop-bench-micro --quick) and one small task's round trip through coopd (coop-bench-rtt, buffers inline and
# on the device), for each placement of the CUDA arena's managed pages
# (COOP_CUDA_ARENA: host, where first touched; device, prefetched; advise, device
# preferred and mapped by the CPU), in one lease.
#
#   bench/arena_gpu.sh
#
# Run from the repository root on the GPU machine with build-cuda built here
# and its shared libraries in .devlibs/ (bench/native_gpu.sh). Outputs go to
# $OUT: micro-PLACEMENT.csv, rtt.csv.
set -o pipefail
. "$(dirname "$0")/gpu_prelude.sh" ""
b=build-cuda/bin
for place in host device advise; do
  export COOP_CUDA_ARENA=$place
  echo "== $place: coop-bench-micro --quick (dispatch legs, us: p50 p99 max)"
  timeout 150 $b/coop-bench-micro --quick --csv "$out/micro-$place.csv" >"$out/micro-$place.txt" 2>&1
  python3 - "$out/micro-$place.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))
        if r['section'] == 'dispatch']
legs = {}
for r in rows:
    legs.setdefault((r['quantity'], r['groups']), []).append(float(r['value_ns']) / 1e3)
for (q, g), v in sorted(legs.items()):
    v.sort()
    print(f"{q:24s} K={g:4s} p50 {v[len(v)//2]:8.1f} p99 {v[min(len(v)-1, int(.99*len(v)))]:8.1f} max {v[-1]:8.1f}")
PY
  d=$(mktemp -d)
  $b/coopd --socket "$d/s" --kernels kernels --backend cuda --set server.journal=off \
    --log-level warn 2>"$d/log" &
  pid=$!
  for _ in $(seq 600); do [[ -S $d/s ]] && break; sleep 0.2; done
  for r in "" --resident; do
    timeout 100 $b/coop-bench-rtt --socket "$d/s" --runs 1000 --groups 1 $r \
      --label "$place${r:+-resident}-k1" | tail -1 | tee -a "$out/rtt.csv"
  done
  kill $pid; wait $pid
done
