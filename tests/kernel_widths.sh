#!/bin/sh
# kernel_widths.sh: the megakernel's width report (docs/kernels.md, "The
# megakernel's width"): coopd --check-config prints a row per kernel
# (measured alone) and the merged megakernel's, with sane figures, and the
# bound, its rows aligned past a kernel name longer than 20 characters; a coopd with [device] kernel_widths = yes logs a line per kernel
# and `coopctl stats` shows them in the backend note, one without does
# not; [device] max_registers is ignored with a log line where the
# backend has no register cap (OpenCL).
#
# usage: kernel_widths.sh COOPD COOPCTL KERNEL_DIR
set -u
coopd=$1 coopctl=$2 kernels=$3
. "$(dirname "$0")/coopctl_lib.sh"

backend=
[ -n "${COOP_BACKEND:-}" ] && backend="--set device.backend=$COOP_BACKEND"
names=$(sed -n '1s/^\/\/@coop name=\([a-z_0-9]*\) .*/\1/p' "$kernels"/*.cl)
[ -n "$names" ] || fail "no kernel names in $kernels"

# --check-config: the table, one row per kernel, each measured
# shellcheck disable=SC2086
expect_out "^kernels compile" "$coopd" --kernels "$kernels" --socket "$sock" $backend --check-config
cp "$dir/out" "$dir/check.txt"
grep -q "^  (megakernel) .* registers/thread, [1-9][0-9]* B shared/block" "$dir/check.txt" ||
  fail "no merged megakernel row with its shared memory"
for k in $names; do
  grep -q "^  $k  *.* registers/thread, [1-9][0-9]* B shared/block, [0-9][0-9]* B local/thread" \
    "$dir/check.txt" || fail "--check-config: no measured row for kernel $k"
done
grep -q "not measured" "$dir/check.txt" && fail "a kernel was not measured alone"
grep -q "^  bound" "$dir/check.txt" || fail "--check-config names no bound"
cat "$dir/check.txt"

# a kernel name past 20 characters widens the name column: every row's
# figures start in one column (they started one name's excess further right)
mkdir "$dir/long"
cp "$kernels"/*.cl "$dir/long/"
long=a_kernel_named_past_twenty_chars
printf '//@coop name=%s kind=noncooperative args=u32\nvoid %s(struct coop_ctx *c) {}\n' \
  "$long" "$long" >"$dir/long/long.cl"
# shellcheck disable=SC2086
expect_out "^kernels compile" "$coopd" --kernels "$dir/long" --socket "$sock" $backend --check-config
grep -q "^  $long  *[^ ]* registers/thread" "$dir/out" || fail "--check-config: no row for $long"
starts=$(grep "registers/thread" "$dir/out" | awk '{ match($0, /^  [^ ]+ +/); print RLENGTH }' |
  sort -u)
[ "$(echo "$starts" | wc -l)" -eq 1 ] || {
  fail "--check-config: the width table's rows start their figures at columns $(echo "$starts" | tr "\n" " ")"
  cat "$dir/out"
}

# a start with kernel_widths: a log line per kernel, and the widths in stats
start_coopd "$coopd" --kernels "$kernels" --set device.kernel_widths=yes \
  --set device.max_registers=64 --log-level info
expect_out "^backend .*widths alone:" "$coopctl" --socket "$sock" stats
for k in $names; do
  grep -q "widths alone:.* $k " "$dir/out" || fail "stats: no width for kernel $k"
  grep -q "kernel $k alone: .*registers/thread" "$dir/coopd.log" ||
    fail "the log has no width line for kernel $k"
done
grep -q "megakernel width: " "$dir/coopd.log" || fail "the log has no merged width line"
if grep -q "backend opencl" "$dir/out"; then
  grep -q "max_registers = 64 is ignored" "$dir/coopd.log" ||
    fail "OpenCL: max_registers not said to be ignored"
fi
stop_coopd
cp "$dir/coopd.log" "$dir/with.log"

# without it (the default): no lone build, nothing in stats, a hint in the log
start_coopd "$coopd" --kernels "$kernels" --log-level info
expect_out "^backend " "$coopctl" --socket "$sock" stats
grep -q "widths alone" "$dir/out" && fail "stats shows widths that were not measured"
grep -q "alone: " "$dir/coopd.log" && fail "a start without kernel_widths measured kernels alone"
grep -q "each kernel's width: coopd --check-config" "$dir/coopd.log" ||
  fail "no hint where the widths are"
stop_coopd
cat "$dir/with.log" >>"$dir/coopd.log"
finish
