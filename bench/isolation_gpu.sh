#!/usr/bin/env bash
# The GPU batch behind bench/HISTORY.md "Isolation": the tests
# labelled device through CUDA, the kernel fuzzer under compute-sanitizer's
# memcheck, and coop-bench-rtt against two coopd builds, one after the
# other in one sitting.
#
#   bench/isolation_gpu.sh [tests|extra|all] BEFORE_COOPD BEFORE_KERNELS
#
# Run from the repository root on the GPU machine, with build-cuda built
# here (cmake -DCOOP_CUDA=ON) at the same path (/work/main is linked to the
# checkout when missing, since the tests carry absolute paths), the shared
# libraries it links in .devlibs/ (libuv, libinih, libOpenCL, libsubunit),
# and BEFORE_COOPD / BEFORE_KERNELS a coopd of the commit to compare with
# and its kernel directory. Outputs go to $OUT (or ./out).
set -o pipefail
part=${1:-all}
before=${2:-}
before_kernels=${3:-}
. "$(dirname "$0")/gpu_prelude.sh" ""
export COOP_LOCAL_SIZE=64
if [[ $part == all || $part == tests ]]; then
  ctest --test-dir build-cuda -L device --output-on-failure --timeout 280 ${CTEST_EXTRA:-} 2>&1 |
    tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|F:"
fi
if [[ $part == all || $part == extra ]]; then
  cs=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  COOP_FUZZ_TIME_SCALE=4 timeout 200 "${cs:-compute-sanitizer}" --tool memcheck --print-limit 20 \
    build-cuda/bin/fuzz_kernels --no-fork --seconds 60 >"$out/memcheck.log" 2>&1
  echo "memcheck rc=$?"
  tail -20 "$out/memcheck.log"
  rtt() { # coopd kernels label
    local d pid
    d=$(mktemp -d)
    "$1" --socket "$d/s" --kernels "$2" --backend cuda --log-level warn 2>"$d/log" &
    pid=$!
    for _ in $(seq 300); do [ -S "$d/s" ] && break; sleep 0.2; done
    build-cuda/bin/coop-bench-rtt --socket "$d/s" --runs 1000 --label "$3" | tail -1
    kill "$pid"
    wait "$pid"
  }
  echo "label,runs,n,groups,median_us,p10_us,p90_us,max_us,host,cpu,commit" >"$out/rtt.csv"
  for _ in 1 2 3; do
    [[ -n $before ]] && rtt "$before" "$before_kernels" before | tee -a "$out/rtt.csv"
    rtt build-cuda/bin/coopd kernels after | tee -a "$out/rtt.csv"
  done
fi
