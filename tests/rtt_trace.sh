#!/bin/sh
# rtt_trace.sh COOPD RTT KERNELS: coop-bench-rtt --trace against a coopd
# with COOP_TRACE_FILE set (docs/daemon.md, "The path of one job, leg by
# leg"). Every job of the run must have its line, every stamp set (not 0)
# and in the order of the path, and the bench's legs must add up to no
# more than its round trip; a trace with a hole fails. Then a run of frames
# (--resident --frame): every device-buffer operation has its "buf," line,
# every stamp set and in order, and bench/buf_legs.sh reads them.
coopd=$1 rtt=$2 kernels=$3
. "$(dirname "$0")/coopctl_lib.sh"
mkdir "$dir/k" && cp "$kernels/render.cl" "$dir/k/" || exit 1 # one kernel: a quick build
# a bad number is a usage error before any connection (strtoul took "-1"
# for 2^32 - 1 runs, whose count + 10 wrapped: a row of nan, exit 0; "5x"
# for 5, "abc" for 0); the socket need not exist
for bad in "--runs -1" "--runs 5x" "--runs 4294967297" "--groups -1" "--spin-us abc" \
  "--every-us 1ms" "--n 0"; do
  # shellcheck disable=SC2086
  expect 2 "is not an integer in" "$rtt" --socket "$dir/none.sock" $bad
done
expect 2 "unexpected argument 'extra'" "$rtt" --socket "$dir/none.sock" extra
trace=$dir/trace.csv
COOP_TRACE_FILE=$trace
export COOP_TRACE_FILE
start_coopd "$coopd" --kernels "$dir/k"
unset COOP_TRACE_FILE

# The coopd side of every line: each stamp set, the path's in order. The
# copies of a job that moves its bytes (io_*, out_*) only with io=1, and
# then each set and in order inside its staging and its unstaging; the
# lines before line $4 are not looked at (earlier runs' jobs).
check_trace() {
  awk -F, -v want="$2" -v io="${3:-0}" -v from="${4:-0}" '
    NR == 1 && $1 != "id" { print "no header: " $0; bad = 1; exit }
    $1 == "id" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == "bufop" || $1 == "buf" || $1 == "dpcall" || $1 == "window" || NR < from { next } # buffer operations: check_bufs; requests: check_calls
    {
      n++
      for (i = 3; i <= NF; i++)
        if ($i + 0 <= 0 && i != col["dp_seen"] && i != col["preempt"] && i != col["loop_spun"] && i != col["io_with"] && i != col["expected"] && i != col["out_with"] && (io || hdr(i) !~ /^(io|out)_/)) { print "job " $1 ": no stamp " hdr(i); bad = 1 }
      if (io) {
        # ranges that went with the submit (io_with): the copies stamped
        # as that request, inside staged..submit_ret; else apart, before
        # staged and after task_released
        with = $col["io_with"] + 0 > 0
        if (with && $col["io_with"] != $col["io_sent"]) { print "job " $1 ": io_with is not io_sent"; bad = 1 }
        if (with) split("staged io_sent io_took io_replied io_back submit_ret", a, " ")
        else split("taken io_sent io_took io_replied io_back staged", a, " ")
        # or with the poll that found the task final, where the device
        # process ended it (out_with): inside submit_ret..seen
        owith = ("out_with" in col) && $col["out_with"] + 0 > 0
        if (owith && (!with || $col["out_with"] != $col["out_sent"])) { print "job " $1 ": out_with is not out_sent, or without io_with"; bad = 1 }
        if (with && $col["out_sent"] == $col["io_sent"]) split("staged out_sent out_took out_replied out_back submit_ret", b, " ")
        else if (owith) split("submit_ret out_sent out_took out_replied out_back seen", b, " ")
        else split("task_released out_sent out_took out_replied out_back unstaged", b, " ")
        for (k = 2; k <= 6; k++)
          if ($col[a[k]] + 0 < $col[a[k - 1]] + 0 || $col[b[k]] + 0 < $col[b[k - 1]] + 0) {
            print "job " $1 ": a copy'"'"'s stamps out of order at " a[k] " or " b[k]; bad = 1
          }
      }
      # loop_spun only where the loop spun when it took the SUBMIT: begun before
      if ($col["loop_spun"] + 0 > $col["admitted"] + 0) {
        print "job " $1 ": loop_spun after admitted"; bad = 1
      }
      # dp_seen only where the wait of DP_SUBMIT saw the end; then inside it
      if ($col["dp_seen"] + 0 > 0 && ($col["dp_seen"] + 0 < $col["submitted"] + 0 ||
                                      $col["dp_seen"] + 0 > $col["submit_ret"] + 0)) {
        print "job " $1 ": dp_seen outside submitted..submit_ret"; bad = 1
      }
      split("recv decoded checked admitted queued taken staged submitted released gathered started " \
            "finished seen task_released unstaged handed_back loop_got result_sent", path, " ")
      for (k = 2; k in path; k++) {
        if (!(path[k] in col)) { print "no column " path[k]; bad = 1; exit }
        if ($col[path[k]] + 0 < $col[path[k - 1]] + 0) {
          print "job " $1 ": " path[k] " before " path[k - 1]; bad = 1
        }
      }
      if ($col["submit_ret"] + 0 < $col["submitted"] + 0 || $col["wait"] + 0 > $col["result_sent"] + 0 ||
          $col["accepted"] + 0 < $col["queued"] + 0) {
        print "job " $1 ": submit_ret, wait or accepted out of place"; bad = 1
      }
    }
    function hdr(i,   k) { for (k in col) if (col[k] == i) return k; return "#" i }
    END {
      if (!bad && n < want) { print n " lines, expected " want; bad = 1 }
      exit bad
    }' "$1"
}

if "$rtt" --socket "$sock" --runs 20 --trace "$trace" >"$dir/out" 2>"$dir/err"; then
  echo "ok: coop-bench-rtt --runs 20 --trace"
else
  fail "coop-bench-rtt --trace exited non-zero"
fi
cat "$dir/out" "$dir/err"
# 10 warm-up rounds and 20 measured: 30 lines, all whole
if check_trace "$trace" 30; then echo "ok: every line whole and in order"; else fail "the trace"; fi
legs=$(grep -c '^[a-z_]*->[a-z_]*,' "$dir/out")
[ "$legs" -eq 17 ] || fail "$legs leg rows in the CSV, expected 17"
if ! grep -q '^sum_of_legs,' "$dir/out" || ! grep -q '^round_trip,' "$dir/out"; then
  fail "no sum or round trip row"
fi
awk -F, 'NF == 5 && $1 ~ /^[a-z_:]+->[a-z_]+$/ && ($2 < 0 || $3 < $2 || $4 < $3) { print "leg " $1 ": " $0; bad = 1 } END { exit bad }' \
  "$dir/out" || fail "a leg's median, p90, p99 out of order"

# The checks can fail: a stamp zeroed, an empty file.
awk -F, -v OFS=, '!done && $1 ~ /^[0-9]+$/ { $3 = 0; done = 1 } 1' "$trace" >"$dir/hole.csv"
if check_trace "$dir/hole.csv" 30 >/dev/null; then fail "a zeroed stamp passed"; else echo "ok: a zeroed stamp fails"; fi
: >"$dir/empty.csv"
if check_trace "$dir/empty.csv" 30 >/dev/null; then fail "an empty trace passed"; else echo "ok: an empty trace fails"; fi
expect 1 "no trace header" "$rtt" --socket "$sock" --runs 2 --trace "$dir/empty.csv"

# The requests that held the device thread 100 us or more (dpcall lines):
# the megakernel's build and launch at least; each one's four stamps
# in order and at least 100 us apart end to end.
check_calls() {
  awk -F, '
    $1 == "dpcall" && $2 == "op" { hdr = 1; next }
    $1 != "dpcall" { next }
    {
      n++
      if (NF != 6 || $2 !~ /^[a-z-]+$/) { print "dpcall " NR ": malformed: " $0; bad = 1 }
      if (!($3 > 0 && $4 >= $3 && $5 >= $4 && $6 >= $5)) { print "dpcall " NR ": stamps out of order: " $0; bad = 1 }
      if ($6 - $3 < 100000) { print "dpcall " NR ": under 100 us: " $0; bad = 1 }
    }
    END {
      if (!hdr) { print "no dpcall header"; bad = 1 }
      if (!n) { print "no dpcall line"; bad = 1 }
      exit bad
    }' "$1"
}
if check_calls "$trace"; then echo "ok: the slow requests' lines whole and in order"; else fail "the dpcall lines"; fi
awk -F, -v OFS=, '$1 == "dpcall" && $2 != "op" && !done { $4 = 1; done = 1 } 1' "$trace" >"$dir/callhole.csv"
if check_calls "$dir/callhole.csv" >/dev/null; then fail "a request taken before it was sent passed"; else echo "ok: a request taken before it was sent fails"; fi
# bench/frame_waits.sh counts them by op: every dpcall line once
waits=$(sh "$kernels/../bench/frame_waits.sh" "$trace" 100) || fail "frame_waits.sh"
want=$(awk -F, '$1 == "dpcall" && $2 != "op"' "$trace" | wc -l)
got=$(printf '%s\n' "$waits" | awk '/^requests of 100 us or more:/ { for (i = 8; i <= NF; i += 2) s += $i } END { print s + 0 }')
if [ "$got" -eq "$want" ] && [ "$want" -gt 0 ]; then echo "ok: frame_waits.sh counts the $got slow requests"; else fail "frame_waits.sh counted $got of $want slow requests"; fi
# The warm windows' lines (none on PoCL, which does not spin: the header
# only) and bench/window_late.sh's quantiles of their lateness per thread
grep -qx 'window,who,from,began' "$trace" || fail "no window header"
if [ "$(sh "$kernels/../bench/window_late.sh" "$trace")" = "$trace: no window" ]; then
  echo "ok: no window on PoCL"
else
  fail "window_late.sh on a trace without windows"
fi
printf '%s\n' 'window,who,from,began' 'window,loop,1000,61000' 'window,device0,5000,405000' \
  'window,loop,2000,3000' >"$dir/windows.csv"
late=$(sh "$kernels/../bench/window_late.sh" "$dir/windows.csv") || fail "window_late.sh"
case "$late" in
  *"device0: n 1, p50 400, p90 400, p99 400, max 400"*"loop: n 2, p50 60, p90 60, p99 60, max 60"*)
    echo "ok: window_late.sh's quantiles per thread" ;;
  *) fail "window_late.sh said: $late" ;;
esac

# The buffer operations of frames: 3 creates, then a write and a read a
# run (10 warm-up and 12 measured), each line whole and in order (the
# same file: the first run wrote no "buf," line).
check_bufs() {
  awk -F, -v want="$2" '
    $1 == "bufop" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 != "buf" { next }
    {
      n[$2]++
      split("recv queued taken copy_start copy_end handed_back loop_got answered", path, " ")
      for (k = 1; k in path; k++) {
        if (!(path[k] in col)) { print "no column " path[k]; bad = 1; exit }
        if ($col[path[k]] + 0 <= 0) { print $2 " " NR ": no stamp " path[k]; bad = 1 }
        if (k > 1 && $col[path[k]] + 0 < $col[path[k - 1]] + 0) {
          print $2 " " NR ": " path[k] " before " path[k - 1]; bad = 1
        }
      }
    }
    END {
      if (!bad && (n["create"] < 3 || n["write"] < want || n["read"] < want)) {
        print n["create"] + 0 " creates, " n["write"] + 0 " writes, " n["read"] + 0 " reads, expected 3, " want ", " want; bad = 1
      }
      exit bad
    }' "$1"
}
"$rtt" --socket "$sock" --runs 12 --resident --frame --n 48 >"$dir/frame" 2>&1 ||
  { cat "$dir/frame"; fail "coop-bench-rtt --resident --frame exited non-zero"; }
if check_bufs "$trace" 22; then echo "ok: every buffer operation's line whole and in order"; else fail "the buffer lines"; fi
awk -F, -v OFS=, '$1 == "bufop" { for (i = 1; i <= NF; i++) if ($i == "answered") a = i }
  $1 == "buf" && $2 == "write" && !done { $a = 0; done = 1 } 1' "$trace" >"$dir/bufhole.csv"
if check_bufs "$dir/bufhole.csv" 22 >/dev/null; then fail "a zeroed buffer stamp passed"; else echo "ok: a zeroed buffer stamp fails"; fi
legs=$(sh "$kernels/../bench/buf_legs.sh" "$trace" 10) || fail "bench/buf_legs.sh failed"
echo "$legs"
for k in write read; do
  echo "$legs" | awk -v k="$k" '$1 == k && $2 == "recv->answered" && $3 > 0 && $4 >= $3 && $5 >= 12 { ok = 1 } END { exit !ok }' ||
    fail "buf_legs.sh: no $k total over 12 operations or more"
done

# Frames as one job each that moves its input and output itself
# (--frame-io, devbuf_io): every output checked by the bench, every
# job's legs whole and in order (--trace exits 1 otherwise).
from=$(($(wc -l <"$trace") + 1))
"$rtt" --socket "$sock" --runs 12 --resident --frame-io --n 48 --trace "$trace" >"$dir/frameio" 2>&1 ||
  { cat "$dir/frameio"; fail "coop-bench-rtt --resident --frame-io exited non-zero"; }
grep -q '^staged->submitted,' "$dir/frameio" || fail "no legs for the --frame-io jobs"
grep -q '^side:io_took->io_replied,' "$dir/frameio" || fail "no legs for the --frame-io jobs' copies"
if check_trace "$trace" 12 1 "$from"; then echo "ok: the copies' stamps set and in order"; else fail "the --frame-io trace"; fi
# From the second frame on the device process holds the memfd mapped, and
# a frame's ranges go with its submit: one request (DP_SUBMIT_IO).
counts=$(awk -F, -v from="$from" '$1 == "id" { for (i = 1; i <= NF; i++) col[$i] = i; next }
  NR >= from && $1 ~ /^[0-9]+$/ { n++; if (("io_with" in col) && $col["io_with"] + 0 > 0) w++ }
  END { print w + 0, n + 0 }' "$trace")
w=${counts% *} n=${counts#* }
[ "$n" -ge 12 ] && [ "$w" -ge $((n - 1)) ] && echo "ok: $w of $n frames' ranges went with their submit" ||
  fail "only $w of $n frames' ranges went with their submit"

echo "ok: frames as one job each (--frame-io): outputs right, legs whole"

stop_coopd
finish
