#!/bin/sh
# bench/late_ends.sh TRACE [US]: how late the end of each job that moved
# its own bytes (io_sent set: a frame client's jobs) in a COOP_TRACE_FILE
# was seen, split by the wait that saw it: "submit", DP_SUBMIT's own wait
# (a one-task job alone on the device: dp_seen set), or "wait", a DP_WAIT
# of the device thread's pass (a job beside another, held or suspended for
# it). Per path: the jobs, how many had finished -> seen or handed_back ->
# loop_got over US microseconds (default 50), and both legs' p50 and p90;
# then each such job: its id, path, both legs and whether another task was
# suspended at its submit (preempt). bench/RESULTS.md, "Where the last
# suspensions and the late ends came from".
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] && [ -r "$1" ] ||
  { echo "usage: bench/late_ends.sh TRACE.csv [US]" >&2; exit 2; }
us=${2:-50}
case $us in '' | *[!0-9]*) echo "late_ends.sh: US is a whole number of microseconds" >&2; exit 2 ;; esac
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk -F, -v dir="$d" -v us="$us" '
  $1 == "id" { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $1 == "bufop" || $1 == "buf" || $1 == "dpcall" || $1 == "window" { next }
  {
    if (!("io_sent" in col) || $col["io_sent"] + 0 <= 0 || $col["finished"] + 0 <= 0) next
    path = $col["dp_seen"] + 0 > 0 ? "submit" : "wait"
    seen = ($col["seen"] - $col["finished"]) / 1000
    loop = ($col["loop_got"] - $col["handed_back"]) / 1000
    n[path]++
    print seen > (dir "/" path ".1.finished->seen")
    print loop > (dir "/" path ".2.handed_back->loop_got")
    if (seen > us) ns[path]++
    if (loop > us) nl[path]++
    if (seen > us || loop > us)
      late[++nlate] = sprintf("  %-8s %-6s %10.1f %10.1f %s", $1, path, seen, loop,
                              $col["preempt"] + 0 > 0 ? "yes" : "no")
  }
  END {
    for (p in n) printf "%s: %d jobs, %d seen over %s us late, %d handed back over %s us late\n",
                        p, n[p], ns[p] + 0, us, nl[p] + 0, us
    if (nlate) printf "  %-8s %-6s %10s %10s %s\n", "id", "path", "seen", "loop", "preempt"
    for (i = 1; i <= nlate; i++) print late[i]
  }' "$1"
. "$(dirname "$0")/legs_quantiles.sh"
legs_quantiles "$d" || { echo "late_ends.sh: no job in $1 moved its own bytes" >&2; exit 1; }
