#!/bin/sh
# bench_cpu_pairs.sh BIN: coop-bench-cpu-pairs on two CPUs prints its
# header and one row for the pair, a round trip of at least 1 ns; a bad
# --trips is usage (exit 2); one CPU is no pair (exit 1, said).
set -eu
bin=$1
# the first two CPUs this shell may run on (a cpuset may start past 0)
# shellcheck disable=SC2046 # split on purpose: one CPU a word
set -- $(awk '/^Cpus_allowed_list/ { n = split($2, r, ",")
  for (i = 1; i <= n && k < 2; i++) { m = split(r[i], e, "-"); hi = m > 1 ? e[2] : e[1]
    for (c = e[1]; c <= hi && k < 2; c++) { printf "%d ", c; k++ } } }' /proc/self/status)
[ $# -eq 2 ] || { echo "bench_cpu_pairs: fewer than two CPUs here: skipped"; exit 0; }
a=$1 b=$2
out=$(taskset -c "$a,$b" "$bin" --trips 2000 2>/dev/null)
printf '%s\n' "$out" | awk -F, -v a="$a" -v b="$b" '
  NR == 1 && $0 != "a,b,trip_ns" { print "bad header: " $0; bad = 1 }
  NR == 2 && !($1 == a && $2 == b && $3 + 0 >= 1) { print "bad row: " $0; bad = 1 }
  END { if (NR != 2) { print NR " lines, want 2"; bad = 1 } exit bad }'
rc=0; "$bin" --trips 0 2>/dev/null || rc=$?
[ "$rc" -eq 2 ] || { echo "--trips 0: exit $rc, want 2"; exit 1; }
rc=0; msg=$(taskset -c "$a" "$bin" 2>&1 >/dev/null) || rc=$?
[ "$rc" -eq 1 ] || { echo "one CPU: exit $rc, want 1"; exit 1; }
case $msg in *"no pair"*) ;; *) echo "one CPU: said '$msg'"; exit 1 ;; esac
echo "bench_cpu_pairs: ok ($out)" | tr '\n' ' '; echo
