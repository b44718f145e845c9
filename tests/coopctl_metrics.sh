#!/bin/sh
# coopctl_metrics.sh: `coopctl metrics` parsed by a strict
# checker of the Prometheus text format (prom_check.py, which first checks
# itself on texts it must refuse), before and after periodic tasks with a
# deadline; the counts must move with the tasks run, and --out must write
# the same text through a rename (a FIFO written in place).
#
# usage: coopctl_metrics.sh COOPD COOPCTL KERNEL_DIR PYTHON
set -u
coopd=$1 coopctl=$2 kernels=$3 python=$4
. "$(dirname "$0")/coopctl_lib.sh"
check="$python $(dirname "$0")/prom_check.py"

$check --self-test || fail "prom_check.py's self-test"
start_coopd "$coopd" --kernels "$kernels"

fams="--require coop_info --require coop_jobs --require coop_jobs_finished_total
  --require coop_device_workers --require coop_device_workers_busy
  --require coop_device_arena_bytes --require coop_device_arena_used_bytes
  --require coop_gather_seconds --require coop_deadline_misses_total
  --require coop_device_parked --require coop_device_parks_total"
"$coopctl" --socket "$sock" metrics >"$dir/m0" || fail "metrics exited non-zero"
# shellcheck disable=SC2086
$check $fams <"$dir/m0" || fail "the first metrics do not parse"
grep -q '^coop_gather_seconds_count{device="0"} 0$' "$dir/m0" || fail "gathers before any task"

# 10 render instances, period 20 ms, deadline 20 ms
expect_out "instances  *10," "$coopctl" --socket "$sock" submit render --wg 1 --period 20000 \
  --count 10 --deadline 20000 --wait zeros:256 zeros:256 zeros:256 u32:8 u32:1
"$coopctl" --socket "$sock" metrics --out "$dir/m1.prom" || fail "metrics --out"
# shellcheck disable=SC2086
$check $fams <"$dir/m1.prom" || fail "the metrics after the tasks do not parse"
grep -q '^coop_gather_seconds_count{device="0"} 10$' "$dir/m1.prom" || fail "not 10 gathers"
grep -q '^coop_gather_seconds_bucket{device="0",le="+Inf"} 10$' "$dir/m1.prom" ||
  fail "the +Inf bucket is not 10"
grep -q '^coop_deadline_instances_total{device="0"} 10$' "$dir/m1.prom" ||
  fail "not 10 deadline instances"
grep -q '^coop_jobs_finished_total{state="done"} 1$' "$dir/m1.prom" || fail "not 1 job done"
ls -a "$dir" | grep -q '^\.m1\.prom\.' && fail "--out left its temporary file"
# --out through a link another user left in a sticky directory, naming a
# file of this user's: refused as a write through it would be
# (fs.protected_symlinks, set to 1 for the check and set back); coopctl
# followed it by realpath, a readlink, and replaced the file it named.
ps=/proc/sys/fs/protected_symlinks
if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null && [ -w "$ps" ]; then
  chmod 755 "$dir"
  mkdir -m 1777 "$dir/sticky"
  echo precious >"$dir/precious"
  runuser -u nobody -- ln -s "$dir/precious" "$dir/sticky/out"
  was=$(cat "$ps")
  echo 1 >"$ps"
  "$coopctl" --socket "$sock" metrics --out "$dir/sticky/out" 2>"$dir/err"
  st=$?
  echo "$was" >"$ps"
  [ $st -ne 0 ] && [ "$(cat "$dir/precious")" = precious ] ||
    fail "--out followed another user's link in a sticky directory: $st, $(head -c 80 "$dir/precious")"
  grep -q "Permission denied" "$dir/err" || fail "--out through that link: $(cat "$dir/err")"
fi
# --out to a FIFO writes into it: it stays a FIFO (it was renamed over,
# leaving a regular file and the reader waiting)
mkfifo "$dir/fifo"
cat "$dir/fifo" >"$dir/fifo.out" &
reader=$!
"$coopctl" --socket "$sock" metrics --out "$dir/fifo" || fail "metrics --out FIFO"
if [ -p "$dir/fifo" ]; then
  wait "$reader"
  grep -q '^coop_info{' "$dir/fifo.out" || fail "metrics --out FIFO: nothing read"
else
  fail "metrics --out replaced the FIFO"
  kill "$reader"
fi
# the same through a link, its reader opening it a little later: written
# into it once it does (followed by an open for writing without waiting,
# the link failed ENXIO: no reader yet)
ln -s fifo "$dir/fifolink"
(sleep 0.5 && cat "$dir/fifo" >"$dir/fifo.out") &
reader=$!
"$coopctl" --socket "$sock" metrics --out "$dir/fifolink" 2>"$dir/err" ||
  fail "metrics --out a link to a FIFO: $(cat "$dir/err")"
wait "$reader"
[ -p "$dir/fifo" ] && grep -q '^coop_info{' "$dir/fifo.out" ||
  fail "metrics --out a link to a FIFO: not written into it"

# A periodic job's instances count as each one ends, not all at the job's
# end (docs/faults.md): 150 instances at 20 ms (3 s), detached; metrics and
# stats read while the job still runs show more than the first job's 10
# gathers and deadline instances. Once it ends, every instance counts once:
# 160, not more.
job=$("$coopctl" --socket "$sock" submit render --wg 1 --period 20000 --count 150 \
  --deadline 20000 zeros:256 zeros:256 zeros:256 u32:8 u32:1) || fail "the periodic submit"
seen=
for _ in $(seq 60); do
  "$coopctl" --socket "$sock" metrics >"$dir/m3" || fail "metrics exited non-zero"
  grep -q '^coop_jobs{state="\(queued\|running\)"} 1$' "$dir/m3" || break # it ended
  n=$(sed -n 's/^coop_deadline_instances_total{device="0"} //p' "$dir/m3")
  g=$(sed -n 's/^coop_gather_seconds_count{device="0"} //p' "$dir/m3")
  "$coopctl" --socket "$sock" --json stats >"$dir/s3" || fail "stats exited non-zero"
  s=$(sed -n 's/.*"samples":\([0-9]*\),.*/\1/p' "$dir/s3")
  if [ "${n:-0}" -gt 10 ] && [ "$n" -lt 160 ] && [ "${g:-0}" -gt 10 ] && [ "${s:-0}" -gt 10 ] &&
    grep -q '"queued":1,\|"running":1,' "$dir/s3"; then
    seen="$n deadline instances, $g gathers, stats: $s samples"
    break
  fi
  sleep 0.1
done
[ -n "$seen" ] || fail "no instance of the running periodic job counted while it ran"
[ -n "$seen" ] && echo "ok: counted while running: $seen"
expect_out "instances  *150," "$coopctl" --socket "$sock" wait "$job"
"$coopctl" --socket "$sock" metrics >"$dir/m4" || fail "metrics exited non-zero"
grep -q '^coop_deadline_instances_total{device="0"} 160$' "$dir/m4" ||
  fail "not 160 deadline instances after the periodic job: $(grep deadline "$dir/m4")"
grep -q '^coop_gather_seconds_count{device="0"} 160$' "$dir/m4" ||
  fail "not 160 gathers after the periodic job"
"$coopctl" --socket "$sock" --json stats >"$dir/s4" || fail "stats exited non-zero"
grep -q '"samples":160,' "$dir/s4" || fail "stats: not 160 samples: $(cat "$dir/s4")"
# idle for park_ms (100 ms by default): the megakernel is parked, and says so
for _ in $(seq 100); do
  "$coopctl" --socket "$sock" metrics >"$dir/m2" || fail "metrics exited non-zero"
  grep -q '^coop_device_parked{device="0"} 1$' "$dir/m2" && break
  sleep 0.1
done
grep -q '^coop_device_parked{device="0"} 1$' "$dir/m2" || fail "not parked after 10 s idle"
grep -Eq '^coop_device_parks_total\{device="0"\} [1-9]' "$dir/m2" || fail "no park counted"
expect 2 "Prometheus text" "$coopctl" --socket "$sock" --json metrics

stop_coopd
finish
