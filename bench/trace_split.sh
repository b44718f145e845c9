#!/bin/sh
# bench/trace_split.sh TRACE: the legs of the jobs in a COOP_TRACE_FILE
# that moved their own bytes (io_sent set: a frame client's jobs; their
# copies apart, or with their submit where io_with is set), split
# into those that had another task suspended for them (preempt > 0,
# "beside") and those that did not ("alone"): each leg's p50 and p90 in
# us and its count, then the whole SUBMIT read -> RESULT sent, and how
# many found the loop spinning (loop_spun set: a warm window's spin or a
# spin after the last reply) with how long it had spun.
set -eu
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: bench/trace_split.sh TRACE.csv" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk -F, -v dir="$d" '
  $1 == "id" { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $1 == "bufop" || $1 == "buf" || $1 == "dpcall" || $1 == "window" { next }
  {
    if (!("io_sent" in col) || $col["io_sent"] + 0 <= 0) next
    g = ($col["preempt"] + 0 > 0) ? "beside" : "alone"
    # ranges that went with the submit (io_with): the copies are the
    # stamps of that request, the task inside it, and its end too where
    # the ranges out came with it (out_sent = io_sent)
    with = ("io_with" in col) && $col["io_with"] + 0 > 0
    if (with && $col["out_sent"] == $col["io_sent"])
      np = split("recv decoded checked admitted queued taken staged io_sent io_took submitted released gathered started finished io_replied io_back task_released unstaged handed_back loop_got result_sent", p, " ")
    else if (with && ("out_with" in col) && $col["out_with"] + 0 > 0) # ended in the device process at a poll
      np = split("recv decoded checked admitted queued taken staged io_sent io_took submitted io_replied io_back released gathered started finished out_replied out_back seen task_released unstaged handed_back loop_got result_sent", p, " ")
    else if (with)
      np = split("recv decoded checked admitted queued taken staged io_sent io_took submitted io_replied io_back released gathered started finished seen task_released out_sent out_took out_replied out_back unstaged handed_back loop_got result_sent", p, " ")
    else
      np = split("recv decoded checked admitted queued taken io_sent io_took io_replied io_back staged submitted released gathered started finished seen task_released out_sent out_took out_replied out_back unstaged handed_back loop_got result_sent", p, " ")
    # the stamps this coopd wrote (an older trace lacks decoded, checked)
    m = 0
    for (k = 1; k <= np; k++) if (p[k] in col) q[++m] = p[k]
    np = m
    for (k = 1; k <= np; k++) p[k] = q[k]
    for (k = 2; k <= np; k++)
      print ($col[p[k]] - $col[p[k - 1]]) / 1000 > (dir "/" g "." sprintf("%02d", k) "." p[k - 1] "->" p[k])
    print ($col["result_sent"] - $col["recv"]) / 1000 > (dir "/" g ".99.total")
    # how far the SUBMIT came from the guess of warm ahead (+: later)
    if (("expected" in col) && $col["expected"] + 0 > 0) {
      k = ($col["loop_spun"] + 0 > 0) ? "spun" : "asleep"
      print ($col["recv"] - $col["expected"]) / 1000 > (dir "/" g ".97.expected->recv, loop " k)
    }
    if ("loop_spun" in col) {
      n[g]++
      if ($col["loop_spun"] + 0 > 0) { spun[g]++; print ($col["recv"] - $col["loop_spun"]) / 1000 > (dir "/" g ".98.loop_spun->recv") }
    }
  }
  END { for (g in n) printf "  %s: the loop spinning at the SUBMIT in %d of %d\n", g, spun[g], n[g] > "/dev/stderr" }' "$1"
. "$(dirname "$0")/legs_quantiles.sh"
legs_quantiles "$d" || { echo "trace_split.sh: no job in $1 moved its own bytes" >&2; exit 1; }
