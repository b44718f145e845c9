#!/bin/sh
# bench/buf_legs.sh TRACE [SKIP]: the legs of coopd's device-buffer
# operations from its COOP_TRACE_FILE (the "buf," lines, daemon/trace.h's
# COOP_BUFTRACE_MAP): per kind (create, write, read), each leg's median and
# p90 in us, and the bytes, over the operations after the first SKIP of
# each kind (default 10). The client's own time (libcoop to coopd and
# back) is what coop-bench-rtt --frame's write and read times hold beyond
# recv -> answered. Two rows in parentheses are beside the path: where the
# request came in the device thread's warm window for the next frame
# (after its start, before its end: both > 0 when the thread was warm).
set -eu
[ $# -ge 1 ] || { sed -n '2,8p' "$0"; exit 2; }
trace=$1 skip=${2:-10}
[ -r "$trace" ] || { echo "buf_legs.sh: $trace: cannot read" >&2; exit 2; }
header=$(grep -m1 '^bufop,' "$trace") || { echo "buf_legs.sh: $trace: no bufop header" >&2; exit 1; }
tmp=$(mktemp -d /tmp/buf-legs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# one file per kind and leg: the leg's us, one per line
grep '^buf,' "$trace" | awk -F, -v h="$header" -v skip="$skip" -v dir="$tmp" '
  BEGIN {
    m = split(h, name, ",")
    for (i = 1; i <= m; i++) col[name[i]] = i
    n = col["answered"] # the path ends there; the warm window follows
  }
  {
    if (++seen[$2] <= skip) next
    bytes[$2] = $3
    for (i = 5; i <= n; i++)
      if ($i > 0 && $(i - 1) > 0)
        print ($i - $(i - 1)) / 1000 > (dir "/" $2 "." sprintf("%02d", i) "." name[i - 1] "->" name[i])
    print ($n - $4) / 1000 > (dir "/" $2 ".99.recv->answered")
    # where the request came in the device thread warm window: after its
    # start (> 0: the thread was spinning), before its end (> 0)
    w = col["warm_from"]
    if (w && $w > 0) {
      print ($4 - $w) / 1000 > (dir "/" $2 ".97.(warm_from->recv)")
      print ($(w + 1) - $4) / 1000 > (dir "/" $2 ".98.(recv->warm_until)")
    }
  }
  END { for (k in bytes) print k, bytes[k] > (dir "/bytes") }'
[ -s "$tmp/bytes" ] || { echo "buf_legs.sh: fewer than $skip operations of any kind" >&2; exit 1; }
printf '%-6s %-26s %9s %9s %6s\n' kind leg median p90 ops
for f in "$tmp"/*.*.*; do
  b=$(basename "$f")
  kind=${b%%.*}
  leg=${b#*.*.}
  sort -g "$f" | awk -v k="$kind" -v l="$leg" '{ v[NR] = $1 }
    END { m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.9 + 0.999)]; printf "%-6s %-26s %9.2f %9.2f %6d\n", k, l, m, p, NR }'
done
while read -r kind bytes; do echo "$kind: $bytes bytes each"; done <"$tmp/bytes"
