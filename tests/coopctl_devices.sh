#!/bin/sh
# coopctl_devices.sh: coopctl's --device through coopd with two devices
# (docs/daemon.md, "Several devices"). PoCL has one device, so coopd runs
# two megakernels on it ([device] devices = 0,0, one worker each). Checks
# that submit, render and top reach the device named, that the result says
# where a job ran, and the errors for a device coopd does not have and a
# malformed index, and coopctl migrate moving a cooperative job from one
# to the other.
#
# usage: coopctl_devices.sh COOPD COOPCTL KERNEL_DIR
set -u
coopd=$1 coopctl=$2 kernels=$3
. "$(dirname "$0")/coopctl_lib.sh"

expect 2 "bad --device" "$coopctl" --socket "$sock" submit render --wg 1 --device one
expect 2 "bad --device" "$coopctl" --socket "$sock" top --device 8
expect 2 "bad --device" "$coopctl" --socket "$sock" render --class light --wg 1 --for 1 \
  --device -1

start_coopd "$coopd" --kernels "$kernels" --set device.devices=0,0 \
  --set device.max_workgroups=2

expect_out "^device 1 " "$coopctl" --socket "$sock" stats
# render: c = a x b, 8 x 8 floats, 1 repetition
mm="zeros:256 zeros:256 out:256:$dir/c u32:8 u32:1"
# shellcheck disable=SC2086
expect_out "device     1" "$coopctl" --socket "$sock" submit render --wg 1 --device 1 --wait $mm
# shellcheck disable=SC2086
expect_out '"device":0,' "$coopctl" --socket "$sock" --json submit render --wg 1 --device 0 \
  --wait $mm
# shellcheck disable=SC2086
expect 1 "device" "$coopctl" --socket "$sock" submit render --wg 1 --device 2 --wait $mm
expect_out "1 workgroups on device 1" "$coopctl" --socket "$sock" render --class light --wg 1 \
  --for 0.3 --device 1
expect_out '"top":{"device":1,"map":"' "$coopctl" --socket "$sock" --json top --device 1 \
  --iterations 1
expect_out "map of    device 1" "$coopctl" --socket "$sock" top --device 1 --iterations 1
expect 1 "" "$coopctl" --socket "$sock" top --device 2 --iterations 1

# migrate: a long cooperative sweep on device 0 moves to device 1 and runs
# there (docs/daemon.md, "Moving jobs between devices")
expect 2 "want JOB DEVICE" "$coopctl" --socket "$sock" migrate 1
"$coopctl" --socket "$sock" submit sweep --coop --wg 1 --device 0 zeros:256 u32:64 \
  u32:100000000 >"$dir/sub" 2>&1
job=$(grep -o '[0-9][0-9]*' "$dir/sub" | head -1)
if [ -z "$job" ]; then
  fail "the sweep was not submitted: $(cat "$dir/sub")"
else
  expect 1 "no device 5" "$coopctl" --socket "$sock" migrate "$job" 5
  expect_out "job $job: running on device 1 after" "$coopctl" --socket "$sock" migrate "$job" 1
  expect_out '"device":1}' "$coopctl" --socket "$sock" --json status "$job"
  expect 1 "already on device 1" "$coopctl" --socket "$sock" migrate "$job" 1
  # a second one moved there waits for the slot the first holds, and
  # coopctl says why when its --timeout passes (it said "suspended for a
  # job of priority -2147483646"); the move keeps it there
  job2=$("$coopctl" --socket "$sock" submit sweep --coop --wg 1 --device 0 zeros:256 u32:64 \
    u32:100000000)
  expect_out "still suspended: job $job2 is suspended, moved to this device" "$coopctl" \
    --socket "$sock" migrate "$job2" 1 --timeout 1000
  expect_out '"device":1}' "$coopctl" --socket "$sock" --json status "$job2"
  "$coopctl" --socket "$sock" cancel "$job2" >/dev/null 2>&1
  "$coopctl" --socket "$sock" cancel "$job" >/dev/null 2>&1
  "$coopctl" --socket "$sock" --json wait "$job" --timeout 30000 >"$dir/w" 2>&1
  grep -q '"device":1,"state":"cancelled"' "$dir/w" || fail "the moved sweep: $(cat "$dir/w")"
fi

stop_coopd
finish
