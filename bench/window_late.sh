#!/bin/sh
# bench/window_late.sh TRACE...: how late coopd's threads began a frame
# loop's warm windows, from the `window` lines of COOP_TRACE_FILE traces
# (docs/daemon.md, "The path of one job, leg by leg"): per trace and per
# thread (loop, device0, ...), the count and BEGAN - FROM at p50, p90, p99
# and max, in us: "TRACE WHO: n N, p50 A, p90 B, p99 C, max D". A trace
# with no window line (no idle spin: PoCL) prints "TRACE: no window".
# bench/RESULTS.md, "A frame's window opened ahead of a late wake".
set -eu
case "${1:-}" in
  -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
  '') sed -n '2,8p' "$0" >&2; exit 2 ;;
esac
for t in "$@"; do
  [ -r "$t" ] || { echo "window_late.sh: cannot read $t" >&2; exit 1; }
  awk -F, '$1 == "window" && $2 != "who" { print $2, $4 - $3 }' "$t" | sort -k1,1 -k2,2n |
    awk -v t="$t" '
      function out() {
        if (n) printf "%s %s: n %d, p50 %.0f, p90 %.0f, p99 %.0f, max %.0f\n", t, who, n,
          v[int(n * 0.5) + 1] / 1e3, v[int(n * 0.9) + 1] / 1e3, v[int(n * 0.99) + 1] / 1e3, v[n] / 1e3
      }
      $1 != who { out(); who = $1; n = 0 }
      { v[++n] = $2 }
      END { out(); if (!NR) print t ": no window" }'
done
