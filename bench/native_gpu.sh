#!/usr/bin/env bash
# The GPU batch behind bench/HISTORY.md "Native speed": coop's
# barriers and applications beside plain CUDA on the same GPU, in one run.
#
#   bench/native_gpu.sh [tests|bench|all] [OLD_DIR]
#
# Run from the repository root on the GPU machine, with build-cuda built
# here (cmake -DCOOP_CUDA=ON) at the same path (/work/main is linked to the
# checkout when missing, since the tests carry absolute paths) and the
# shared libraries it links in .devlibs/. OLD_DIR, when given, holds
# micro-old and side-old: coop-bench-micro and coop-bench-side of the commit
# to compare with (the "before" rows). Outputs go to $OUT (or ./out).
set -o pipefail
part=${1:-all}
old=${2:-}
. "$(dirname "$0")/gpu_prelude.sh" ""
# NVRTC needs <cooperative_groups.h> for the native baselines
if [[ ! -e /usr/local/cuda/include/cooperative_groups.h && -n $old && -e $old/cuda-include.tar.xz ]]; then
  mkdir -p /tmp/cuda && tar -C /tmp/cuda -xJf "$old/cuda-include.tar.xz"
  export COOP_CUDA_INCLUDE=/tmp/cuda/include:/tmp/cuda/include/cccl
fi
nvidia-smi -L
b=build-cuda/bin
if [[ $part == all || $part == bench ]]; then
  micro() { # binary label local rounds
    timeout 150 "$1" --local-size "$3" --reps 200 --rounds "$4" --tasks 3 \
      --csv "$out/micro-$2.csv" >"$out/micro-$2.txt" 2>&1
    echo "micro $2 rc=$?"
    grep -E "^(launched|compute units|backend)" "$out/micro-$2.txt"
    sed -n '/^Barriers/,$p' "$out/micro-$2.txt" | head -50
  }
  # barriers: grid.sync at each launch shape, then coop's at every M
  timeout 120 $b/coop-bench-native --barriers --csv "$out/native-barriers.csv" 2>&1 |
    tee "$out/native-barriers.txt" | tail -40
  micro $b/coop-bench-micro new-256 256 1000
  # applications: native cooperative kernel vs the coop form, one run
  # NATIVE_ARGS: which jobs (default: bfs on road-1024x1024; game's CPU
  # check at scale 6 alone outlasts a 10-minute device call)
  timeout 240 $b/coop-bench-native ${NATIVE_ARGS:---app bfs --scale 12 --input 1} \
    --csv "$out/native-apps.csv" 2>&1 |
    tee "$out/native-apps.txt" | tail -80
  micro $b/coop-bench-micro new-64 64 1000
  if [[ -n $old ]]; then
    micro "$old/micro-old" old-64 64 300
    timeout 100 "$old/side-old" --setups long --min-runs 3 --window 1 >"$out/side-old.txt" 2>&1
    echo "side old rc=$?"
    grep -iE "long" "$out/side-old.txt" | head -20
  fi
fi
if [[ $part == all || $part == tests ]]; then
  ctest --test-dir build-cuda -L device --output-on-failure --timeout 200 ${CTEST_EXTRA:-} 2>&1 |
    tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|F:"
fi
