#!/bin/sh
# bench/side_client_legs.sh CLIENT.csv COOPD_TRACE.csv: where a frame of
# coop-bench-side's frame client (g) goes, the client's stamps
# (--coopd-client-trace) joined by job id with coopd's (COOP_TRACE_FILE),
# one clock (CLOCK_MONOTONIC): each leg's p50 and p90 in us and its count,
# for the frames that had another task suspended for them (coopd's
# preempt > 0, "beside") and the others ("alone"). The check frame is
# left out.
set -eu
[ $# -eq 2 ] && [ -r "$1" ] && [ -r "$2" ] ||
  { echo "usage: bench/side_client_legs.sh CLIENT.csv COOPD_TRACE.csv" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk -F, -v dir="$d" '
  FNR == 1 { file++ }
  file == 1 && $1 == "id" { for (i = 1; i <= NF; i++) cc[$i] = i; next }
  file == 1 { if ($cc["chk"] == 0) for (k in cc) c[$1, k] = $cc[k]; next }
  $1 == "id" { for (i = 1; i <= NF; i++) dc[$i] = i; next }
  $1 == "bufop" || $1 == "buf" || $1 == "dpcall" || $1 == "window" { next }
  !(($1, "release") in c) { next }
  {
    id = $1; g = ($dc["preempt"] + 0 > 0) ? "beside" : "alone"
    n = split("release:c submit:c recv:d accepted:d submitted:c wait:c result_sent:d done:c", p, " ")
    for (k = 1; k <= n; k++) {
      split(p[k], nw, ":"); name[k] = nw[1]
      t[k] = nw[2] == "c" ? c[id, nw[1]] : $dc[nw[1]]
    }
    for (k = 2; k <= n; k++)
      print (t[k] - t[k - 1]) / 1000 > (dir "/" g "." sprintf("%02d", k) "." name[k - 1] "->" name[k])
    print ($dc["result_sent"] - $dc["recv"]) / 1000 > (dir "/" g ".90.coopd:recv->result_sent")
    print (t[n] - t[1]) / 1000 > (dir "/" g ".99.release->done")
  }' "$1" "$2"
. "$(dirname "$0")/legs_quantiles.sh"
legs_quantiles "$d" || { echo "side_client_legs.sh: no job of $1 in $2" >&2; exit 1; }
