#!/usr/bin/env bash
# The GPU batch behind bench/HISTORY.md "Dispatch and idle": the
# dispatch legs, the round trip through coopd, a plain CUDA kernel beside an
# idle coopd, and a graphics kernel beside bfs, before and after, one run.
#
#   bench/dispatch_gpu.sh tests|micro|side|legs [OLD_DIR]
#
# legs: the dispatch legs of coop-bench-micro, this build against
# OLD_DIR/micro-$PREV (default PREV=prev: the commit before the change),
# twice each, alternating, and a plain CUDA launch's round trip
# (coop-bench-native --barriers) in the same run.
#
# Run from the repository root on the GPU machine with build-cuda built here
# (cmake -DCOOP_CUDA=ON) and its shared libraries in .devlibs/, as
# bench/native_gpu.sh. OLD_DIR holds the "before" binaries: micro-old,
# side-old, coopd and kernels/ of an earlier commit. Outputs go to $OUT.
set -o pipefail
part=${1:-micro}
old=${2:-.devold}
. "$(dirname "$0")/gpu_prelude.sh" ""
if [[ ! -e /usr/local/cuda/include/cooperative_groups.h && -e $old/cuda-include.tar.xz ]]; then
  mkdir -p /tmp/cuda && tar -C /tmp/cuda -xJf "$old/cuda-include.tar.xz"
  export COOP_CUDA_INCLUDE=/tmp/cuda/include:/tmp/cuda/include/cccl
fi
nvidia-smi -L
b=build-cuda/bin

# coopd in the background on a fresh socket: start_coopd BINARY KERNELS [--set ...]
start_coopd() {
  cd_dir=$(mktemp -d)
  "$1" --socket "$cd_dir/s" --kernels "$2" --backend cuda "${@:3}" \
    --log-level warn 2>"$cd_dir/log" &
  cd_pid=$!
  for _ in $(seq 600); do [[ -S $cd_dir/s ]] && break; sleep 0.2; done
}
stop_coopd() { kill "$cd_pid"; wait "$cd_pid"; }
# the plain matmul's line of coop-bench-side --setups alone
plain_alone() { timeout 120 $b/coop-bench-side --setups alone --csv "$out/$1.csv" >"$out/$1.txt" 2>&1
  echo "$1 rc=$?"; grep -iE "alone|\(0\)" "$out/$1.txt" | head -6; }

case $part in
  tests)
    ctest --test-dir build-cuda -L device --output-on-failure --timeout 200 2>&1 |
      tee "$out/ctest.log" | grep -E "Test +#|tests passed|FAILED|F:"
    ;;
  micro)
    for v in new old; do
      bin=$b/coop-bench-micro
      [[ $v == old ]] && bin=$old/micro-old
      timeout 100 "$bin" --local-size 256 --reps 200 --rounds 100 --tasks 1 \
        --csv "$out/micro-$v.csv" >"$out/micro-$v.txt" 2>&1
      echo "micro $v rc=$?"
      sed -n '/^Dispatch/,/^Barriers/p' "$out/micro-$v.txt" | head -30
    done
    echo "label,runs,n,groups,median_us,p10_us,p90_us,max_us,host,cpu,commit" >"$out/rtt.csv"
    for i in 1 2; do
      for v in before after; do
        if [[ $v == before ]]; then start_coopd "$old/coopd" "$old/kernels"
        else start_coopd $b/coopd kernels; fi
        for k in 1 64; do
          $b/coop-bench-rtt --socket "$cd_dir/s" --runs 1000 --groups $k --label "$v-k$k" |
            tail -1 | tee -a "$out/rtt.csv"
        done
        sleep 2 # idle: the new coopd parks after 100 ms
        ps -o pid,time,comm --ppid "$cd_pid" --pid "$cd_pid" | tail -n +2 | tr '\n' ' '; echo
        stop_coopd
      done
    done
    # a plain kernel beside an idle coopd: none, parked (default), spinning
    plain_alone idle-none
    start_coopd $b/coopd kernels; sleep 2; plain_alone idle-parked; stop_coopd
    start_coopd $b/coopd kernels --set device.park_ms=0; sleep 2
    plain_alone idle-spinning; stop_coopd
    start_coopd "$old/coopd" "$old/kernels"; sleep 2; plain_alone idle-old; stop_coopd
    ;;
  legs)
    for i in 1 2; do
      for v in new "${PREV:-prev}"; do
        bin=$b/coop-bench-micro
        [[ $v != new ]] && bin=$old/micro-$v
        timeout 100 "$bin" --local-size 256 --reps 200 --rounds 20 --tasks 1 \
          --csv "$out/legs-$v-$i.csv" >"$out/legs-$v-$i.txt" 2>&1
        echo "== micro $v run $i rc=$?"
        sed -n '/^Dispatch/,/^Barriers/p' "$out/legs-$v-$i.txt" | grep -E "K|->|error" | head -20
      done
    done
    COOP_DEVICE_DEFINES=COOP_PROF timeout 100 $b/coop-bench-micro --local-size 256 --reps 200 \
      --rounds 20 --tasks 1 --csv "$out/legs-prof.csv" >"$out/legs-prof.txt" 2>&1
    echo "== micro new, COOP_PROF rc=$?"
    grep -E "ping|profile" "$out/legs-prof.txt"
    timeout 200 $b/coop-bench-native --barriers --local-size 256 \
      --csv "$out/native-trip.csv" >"$out/native-trip.txt" 2>&1
    echo "== native rc=$?"
    sed -n '/^grid sync/,$p' "$out/native-trip.txt"
    ;;
  side)
    s="--setups alone,long,process,stream,coop --window 2 --min-runs 3"
    timeout 170 $b/coop-bench-side $s --csv "$out/side-new.csv" >"$out/side-new.txt" 2>&1
    echo "side new rc=$?"
    timeout 170 "$old/side-${PREV:-old}" $s --csv "$out/side-old.csv" >"$out/side-old.txt" 2>&1
    echo "side old rc=$?"
    timeout 200 $b/coop-bench-side $s --launch-groups 1088 \
      --csv "$out/side-full.csv" >"$out/side-full.txt" 2>&1
    echo "side full rc=$?"
    for f in new old full; do echo "== side $f"; grep -E "^\|" "$out/side-$f.txt" | head -30; done
    ;;
esac
