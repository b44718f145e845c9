#!/bin/sh
# coopctl_apps.sh: every application through coopd from `coopctl app`,
# checked against its CPU reference. Starts one coopd on a
# socket in a temporary directory with the runtime's and the applications'
# kernels, then for each application NAME given:
#   coopctl app NAME --check                    (its test input 0)
#   coopctl app NAME --graph FILE --check ...   (graph apps: a file of tests/data/graphs)
# and the error paths: a malformed graph file, --source out of range, an
# unknown application (exit status and message). Exit 0 when all pass.
#
# usage: coopctl_apps.sh COOPD COOPCTL KERNEL_DIRS GRAPH_DIR NAME...
# $COOP_BACKEND (scripts/test --backend) is passed to coopd as device.backend.
set -u
coopd=$1 coopctl=$2 kernels=$3 graphs=$4
shift 4

. "$(dirname "$0")/coopctl_lib.sh"

# ---- help, and errors found before the daemon is asked

expect_out "app " "$coopctl" --help
expect_out "truth:" "$coopctl" app --help
for app in "$@"; do
  expect_out "\"kernel\":\"$app\"" "$coopctl" --json app --list
done

expect 1 "line\|end of file" "$coopctl" --socket "$sock" app bfs --graph "$graphs/bad_count.gr"
expect 1 "out of range" "$coopctl" --socket "$sock" app color --graph "$graphs/bad_range.mtx"
expect 2 "out of range" "$coopctl" --socket "$sock" app bfs --graph "$graphs/grid8x6.gr" \
  --source 48
expect 2 "unknown application" "$coopctl" --socket "$sock" app nosuchapp
expect 2 "out of range" "$coopctl" --socket "$sock" app bfs --graph "$graphs/grid8x6.gr" \
  --sources 0,48
expect 2 "bad --sources" "$coopctl" --socket "$sock" app bfs --sources 0,x
expect 2 "an empty element in 1,,2" "$coopctl" --socket "$sock" app bfs --sources 1,,2
expect 2 "an empty element in 1," "$coopctl" --socket "$sock" app bfs --sources 1,
expect 2 "no vertex" "$coopctl" --socket "$sock" app bfs --sources ""
expect 2 "exclude" "$coopctl" --socket "$sock" app bfs --source 1 --sources 0,2
expect 2 "takes no --sources" "$coopctl" --socket "$sock" app color --sources 0
expect 1 "connect" "$coopctl" --socket "$sock" app bfs --check
# a generator's sizes out of range name the bounds (docs/inputs.md); an
# input error prints the --json error object too
expect 2 "rmat:0: a size out of range (1 <= SCALE <= 30" "$coopctl" --socket "$sock" app bfs \
  --gen rmat:0
expect 2 "road:0x5: a size out of range (W, H >= 1" "$coopctl" --socket "$sock" app bfs \
  --gen road:0x5
expect 1 "rmat:31: too large (1 <= SCALE <= 30" "$coopctl" --socket "$sock" --json app bfs \
  --gen rmat:31
grep -q '^{"error":{"what":"app","code":-18,' "$dir/out" || fail "rmat:31 --json: $(cat "$dir/out")"
expect 1 "/dev/null: malformed input file" "$coopctl" --socket "$sock" --json app bfs \
  --graph /dev/null
grep -q '^{"error":{"what":"app","code":-28,' "$dir/out" || fail "/dev/null --json: $(cat "$dir/out")"
# SSSP paths that reach 2^32 - 1, the 32-bit "unreached" value
# (p-sssp's own --check failed), refused before anything runs
for app in "$@"; do
  case $app in
    lsssp | psssp) expect 1 "paths can be as long as 4294967295" "$coopctl" --socket "$sock" \
      app "$app" --graph "$graphs/long_paths.gr" --source 0 --check ;;
  esac
done

# ---- the daemon

# spin (tests/daemon), a cooperative kernel that never yields, for --timeout below
start_coopd "$coopd" --kernels "$kernels:${kernels%%:*}/tests/daemon"

# the graph files, in turn: each format, with a source where the app has one
n=0
for app in "$@"; do
  expect 0 "" "$coopctl" --socket "$sock" app "$app" --check
  case $app in
    bfs | lsssp | l-sssp | psssp | p-sssp) src="--source 5" ;;
    color | mis | bc) src= ;;
    *) continue ;;
  esac
  case $((n % 3)) in
    0) file=grid8x6.gr extra= ;;
    1) file=grid8x6.mtx extra=--query-barrier ;;
    *) file=grid8x6.txt extra=--original ;;
  esac
  n=$((n + 1))
  # shellcheck disable=SC2086
  expect 0 "" "$coopctl" --socket "$sock" app "$app" --graph "$graphs/$file" $src $extra \
    --groups 2 --check --out "$dir/$app.out"
  [ -s "$dir/$app.out" ] || fail "$app: --out wrote nothing"
done

# an arc given one way: color and mis once coloured both ends alike
# (exit 0 without --check); its input now gets both directions
for app in "$@"; do
  case $app in
    color | mis) expect 0 "" "$coopctl" --socket "$sock" app "$app" --graph "$graphs/one_way.gr" \
      --check ;;
  esac
done

# bc on a 128 x 128 grid: up to 1e75 shortest paths between corners, past
# a float's range (bc.cl scales sigma per level; before it gave NaN)
for app in "$@"; do
  [ "$app" = bc ] && expect 0 "" "$coopctl" --socket "$sock" app bc --scale 6 --input 1 --check
done

# --sources: the graph uploaded once as device buffers (PROTOCOL.md,
# "Device buffers"), one job per source, each checked against the CPU
for app in "$@"; do
  case $app in
    bfs | lsssp | l-sssp | psssp | p-sssp)
      expect_out "4 of 4 sources done" "$coopctl" --socket "$sock" app "$app" \
        --graph "$graphs/grid8x6.gr" --sources 0,5,17,47 --check
      grep -q "check ok" "$dir/out" || fail "$app --sources: no check line"
      expect_out "uploaded once" "$coopctl" --socket "$sock" app "$app" \
        --graph "$graphs/grid8x6.gr" --sources 3,3 --check ;;
  esac
done

# --timeout passing: the job is cancelled, and coopctl says so
expect 1 "timed out after 1 ms: job [0-9]* cancelled" "$coopctl" --socket "$sock" app "$1" \
  --timeout 1
# and why it had not ended: behind spin on every worker, it was still queued
# (it said "timed out" alone)
"$coopctl" --socket "$sock" submit spin --wait --timeout 1500 zeros:64 3000000 \
  >"$dir/spin.out" 2>&1 &
spinpid=$!
kernel_running spin
expect 1 "timed out after 300 ms: job [0-9]* cancelled; it was still \(queued\|waiting\)" \
  "$coopctl" --socket "$sock" app "$1" --timeout 300
wait "$spinpid"

# one workgroup on device 0; a device it does not have; the daemon's own
# message for more workgroups than it has
expect 0 "" "$coopctl" --socket "$sock" app "$1" --device 0 --groups 1 --check
expect 2 "device" "$coopctl" --socket "$sock" app "$1" --device 7
expect 1 "groups" "$coopctl" --socket "$sock" app "$1" --groups 100000

stop_coopd

# --sources while a running job's copies hold the arena (a sweep's 900 KiB
# of 1 MiB): the upload waits for room (EBUSY, PROTOCOL.md "Device
# buffers"), says so once, and gives up at --timeout; once the sweep is
# cancelled it goes on, and every source is done (before: it failed at once,
# "no room for the buffer in the device arena now"). device_mb = 0: on CUDA
# too the input's device buffers go into the arena.
case " $* " in
  *" bfs "*)
    start_coopd "$coopd" --kernels "$kernels" --set device.arena_mb=1 --set device.device_mb=0
    holder=$("$coopctl" --socket "$sock" submit sweep --wg 1 zeros:921600 u32:230400 u32:100000000)
    running "$holder"
    expect 1 "waiting for room to upload the input" "$coopctl" --socket "$sock" app bfs \
      --gen road:100x100 --sources 0,1 --timeout 1000
    grep -q "timed out" "$dir/err" || fail "--timeout: no \"timed out\": $(cat "$dir/err")"
    (sleep 1 && "$coopctl" --socket "$sock" cancel "$holder" >/dev/null) &
    canceller=$!
    expect_out "2 of 2 sources done" "$coopctl" --socket "$sock" app bfs --gen road:100x100 \
      --sources 0,1 --check
    grep -q "waiting for room to upload the input" "$dir/err" ||
      fail "the upload did not say it waited: $(cat "$dir/err")"
    wait "$canceller"
    stop_coopd
    ;;
esac
finish
