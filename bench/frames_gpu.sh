#!/usr/bin/env bash
# The GPU batch behind bench/RESULTS.md "A frame client through coopd,
# beside bfs": coop-bench-frames (a 60 fps renderer outside coopd, its
# input written into device buffers each frame, beside bfs run by another
# client of the same coopd) for a 2 ms and a 0.3 ms task, then
# coop-bench-side's driver setups (a second process: time slicing; a
# second stream) and the in-process coop task for the same task times, in
# the same lease.
#
#   bench/frames_gpu.sh
#
# Run from the repository root on the GPU machine with build-cuda built here
# and its shared libraries in .devlibs/, as bench/native_gpu.sh. Outputs go
# to $OUT.
set -o pipefail
. "$(dirname "$0")/gpu_prelude.sh" ""
b=build-cuda/bin
d=$(mktemp -d)
$b/coopd --socket "$d/s" --kernels kernels:build-cuda/kernels/apps --backend cuda \
  --set server.journal=off --log-level warn 2>"$d/log" &
pid=$!
for _ in $(seq 600); do [[ -S $d/s ]] && break; sleep 0.2; done
timeout 200 $b/coop-bench-frames --socket "$d/s" --exec-ms 2,0.3 --fps 60 --seconds 5 \
  --groups 16 --coopd-pid $pid --csv "$out/frames.csv"
echo "frames rc=$?"
kill $pid; wait $pid
for e in 2 0.3; do
  timeout 150 $b/coop-bench-side --exec-ms $e --setups alone,process,stream,coop \
    --csv "$out/side-$e.csv" >"$out/side-$e.txt" 2>&1
  echo "side $e rc=$?"
  grep -E "^\| *\(|setup|latency|slowdown" "$out/side-$e.txt" | head -14
done
