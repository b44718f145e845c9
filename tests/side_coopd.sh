#!/bin/sh
# side_coopd.sh SIDE COOPD: coop-bench-side's setup (g), a frame client
# through a coopd the bench starts, on PoCL at a tiny size (the test hook
# COOP_SIDE_BACKEND=opencl; without a CUDA driver the plain setups are
# skipped). The run must exit 0 and its CSV hold the three rows of (g)
# with sane values: frames counted beside the long kernel with a latency,
# a device execution and a gather; the long kernel's runs through coopd
# all checked against the CPU; coopd's CPU over each frame window; and the
# table the ratio of the frame client beside the long kernel to it alone,
# again when --report reads the CSV back. Then (0c) and (c) with
# --frame-io, (g) with --coopd-frame job, (g) at K = N with
# --coopd-priority, and a run whose (g) fails after the long kernel's
# setup: that setup's rows kept in the CSV.
side=$1 coopd=$2
dir=$(mktemp -d /tmp/side-coopd-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

COOP_TRACE_FILE="$dir/trace.csv" COOP_SIDE_BACKEND=opencl "$side" --setups long,coopd \
  --coopd "$coopd" --scale 4 --input 1 --exec-ms 0.5 --period 10 --window 0.5 --min-runs 2 \
  --timeout 120 --csv "$dir/side.csv" --coopd-client-trace "$dir/client.csv" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[ "$rc" -eq 0 ] || fail "coop-bench-side exited $rc"
csv=$dir/side.csv
[ -s "$csv" ] || { fail "no CSV"; exit 1; }

# setup,k,klabel,kind,index,start_ns,time_ns,exec_ns,gather_ns,period_ns,missed,in_run,
# counted,check,kills,forks,launch_ns,cpu_ns
awk -F, '
  /^#/ || $1 == "setup" { next }
  NF != 18 { print "line of " NF " fields: " $0; bad = 1 }
  $4 == "window" { win[$1] = 1; if ($1 ~ /^coopd(-alone)?$/ && $18 + 0 <= 0) { print $1 ": no CPU"; bad = 1 } }
  $4 == "run" && $1 ~ /^coopd/ {
    runs[$1]++
    if ($14 != 1) { print $1 " run " $5 " not checked"; bad = 1 }
    if ($7 + 0 <= 0) { print $1 " run " $5 ": time " $7; bad = 1 }
  }
  $4 == "task" && $1 ~ /^coopd/ && $13 == 1 {
    tasks[$1]++
    # exec may read 0: coopd puts the device stamps of a job in the order
    # the host saw (daemon/device/dev_run.c, host_order), and on a loaded
    # VM the start and end of a 0.1 ms job came out equal; not every one
    if ($8 + 0 > 0) execd[$1]++
    if ($7 + 0 <= 0 || $8 + 0 < 0 || $9 == "" || $9 + 0 < 0 || $7 + 0 < $8 + 0) {
      print $1 " task " $5 ": latency " $7 ", exec " $8 ", gather " $9; bad = 1
    }
  }
  END {
    split("coopd coopd-alone coopd-long", s, " ")
    for (i = 1; i <= 3; i++) if (!(s[i] in win)) { print "no row " s[i]; bad = 1 }
    if (runs["coopd-long"] < 2 || runs["coopd"] < 2) { print "too few long-kernel runs"; bad = 1 }
    if (tasks["coopd-alone"] < 1 || tasks["coopd"] < 1) { print "no frame counted"; bad = 1 }
    if (execd["coopd-alone"] < 1 || execd["coopd"] < 1) { print "no execution measured"; bad = 1 }
    exit bad
  }' "$csv" || fail "the CSV"

# the frame client beside the long kernel against itself alone: a ratio, not "-"
grep -E '^\| \(g\) frame client through coopd, K=[0-9]+ \(N/2\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' \
  "$dir/out" >/dev/null || fail "no ratio to the frame client alone in the table"
grep -q 'WRONG' "$dir/out" && fail "a wrong result"
# the frame client waits as the other setups do: spinning (--coopd-spin-us)
grep -q 'its waits spin up to 1000000 us' "$dir/out" || fail "the frame client's spin not in the header"
# --coopd-client-trace: a line per frame, its stamps in order; joined with
# coopd's trace, every frame but the check found there, each leg counted
awk -F, 'NR == 1 { if ($0 != "id,release,launch,submit,submitted,wait,done,chk") bad = 1; next }
  { n++; for (i = 3; i <= 7; i++) if ($i + 0 < $(i - 1) + 0 || $i + 0 <= 0) bad = 1 }
  END { exit !(n >= 2 && !bad) }' "$dir/client.csv" || fail "--coopd-client-trace: its lines"
frames=$(awk -F, 'NR > 1 && $8 == 0' "$dir/client.csv" | wc -l)
sh "$(dirname "$0")/../bench/side_client_legs.sh" "$dir/client.csv" "$dir/trace.csv" >"$dir/legs" ||
  fail "side_client_legs.sh exited non-zero"
cat "$dir/legs"
awk -v want="$frames" '$1 ~ /release->done$/ { n += substr($4, 2) + 0 } END { exit n != want }' \
  "$dir/legs" || fail "side_client_legs.sh: not every frame ($frames) joined"
# bench/frame_guess.sh: every frame but the checks counted once, in the
# window its check frame began
sh "$(dirname "$0")/../bench/frame_guess.sh" "$dir/client.csv" "$dir/trace.csv" >"$dir/guess" ||
  fail "frame_guess.sh exited non-zero"
cat "$dir/guess"
awk -v want="$frames" '$1 == "window" { n += $3; w++ } $1 == "frames" { bad = 1 }
  END { exit !(n == want && w >= 1 && !bad) }' "$dir/guess" ||
  fail "frame_guess.sh: not every frame ($frames) counted in a window"
# bench/frame_path.sh: the trace's frames in two halves that hold them
# all, each with its four medians
sh "$(dirname "$0")/../bench/frame_path.sh" "$dir/trace.csv" >"$dir/path" ||
  fail "frame_path.sh exited non-zero"
cat "$dir/path"
awk '$1 == "alone" || $1 == "beside" {
    h++; n += $3 + 0
    if ($3 + 0 < 1 || $0 !~ /outside the run [0-9.]+, the task.s run [0-9.]+$/) bad = 1
  }
  END { exit !(h == 2 && n >= 2 && !bad) }' "$dir/path" ||
  fail "frame_path.sh: not two halves of frames with their medians"
# bench/late_ends.sh: every job that moved its bytes counted once, on one
# of the two paths, and both legs' quantiles of each path listed
moved=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $c["io_sent"] + 0 > 0 && $c["finished"] + 0 > 0' "$dir/trace.csv" | wc -l)
sh "$(dirname "$0")/../bench/late_ends.sh" "$dir/trace.csv" 50 >"$dir/late" ||
  fail "late_ends.sh exited non-zero"
cat "$dir/late"
awk -v want="$moved" '$1 ~ /^(submit|wait):$/ { n += $2; paths++ }
  $1 ~ /finished->seen$|handed_back->loop_got$/ { legs++ }
  END { exit !(n == want && want > 0 && legs == 2 * paths) }' "$dir/late" ||
  fail "late_ends.sh: not every job that moved its bytes ($moved) counted"
# --report reads the CSV back: the same row, coopd's CPU per task included
"$side" --report "$csv" >"$dir/report" 2>&1 || fail "--report exited non-zero"
grep -E '^\| \(g\) frame client through coopd.* \| [0-9.]+ \|$' "$dir/report" >/dev/null ||
  fail "--report: no row of (g) with coopd's CPU"

# --frame-io: (0c) and (c) copy each frame's input in and output out; the
# run checks what the last frame copied out against the CPU (exit 1 if not)
COOP_SIDE_BACKEND=opencl "$side" --setups coop-alone,coop --frame-io --scale 4 --input 1 \
  --exec-ms 0.5 --period 10 --window 0.3 --min-runs 2 --timeout 120 --csv "$dir/io.csv" \
  >"$dir/io" 2>&1 || { cat "$dir/io"; fail "--frame-io: coop-bench-side exited non-zero"; }
grep -q 'every frame copies a in and its output out' "$dir/io" || fail "--frame-io: not in the header"

# --coopd-frame job: each frame one job carrying its input and bringing its
# output back in its RESULT; every frame's c[0] is checked (exit 1 if not).
# With --max-registers, which (g) hands its coopd as [device] max_registers
# (a setting coopd refuses to start with if it is not one of its own), and
# --coopd-set, a setting of its own after the bench's (said in the header)
COOP_SIDE_BACKEND=opencl "$side" --setups coopd --coopd "$coopd" --coopd-frame job --scale 4 \
  --max-registers 64 --coopd-set device.warm_early_us=0 --coopd-set device.park_ms=50 \
  --input 1 --exec-ms 0.5 --period 10 --window 0.3 --min-runs 2 --timeout 120 \
  --csv "$dir/job.csv" >"$dir/job" 2>&1 || { cat "$dir/job"; fail "--coopd-frame job: exited non-zero"; }
grep -q 'each frame is one job' "$dir/job" || fail "--coopd-frame job: not in the header"
grep -q 'coopd (g) settings: device.warm_early_us=0, device.park_ms=50$' "$dir/job" ||
  fail "--coopd-set: not in the header"
# a --coopd-set that is no setting: refused by the option's parse, or by
# coopd, which does not start with it
COOP_SIDE_BACKEND=opencl "$side" --setups coopd --coopd "$coopd" --coopd-set nonsense \
  >"$dir/set1" 2>&1 && fail "--coopd-set nonsense: exited 0"
grep -q "'nonsense' is not SECTION.KEY=VALUE" "$dir/set1" || fail "--coopd-set nonsense: not said"
COOP_SIDE_BACKEND=opencl "$side" --setups coopd --coopd "$coopd" --coopd-set device.nosuch=1 \
  --scale 4 --input 1 --exec-ms 0.5 --period 10 --window 0.3 --min-runs 2 --timeout 30 \
  >"$dir/set2" 2>&1 && fail "--coopd-set device.nosuch=1: exited 0"
grep -qF 'unknown key [device] nosuch' "$dir/set2" || fail "--coopd-set device.nosuch=1: coopd's refusal not shown"
grep -qE '^\| \(g\) frame client through coopd, K=[0-9]+ \(N/2\) \| [0-9.]+ \|' "$dir/job" ||
  fail "--coopd-frame job: no row of (g)"
# --coopd-priority: frames of K = N at priority 5 beside the long kernel's
# jobs (0), every frame's job done and every run checked. A frame has the
# running job suspended, or its window holds the next job back until the
# frame's task ends (docs/daemon.md, "Priority"): with this graph's runs
# of about 0.5 ms, either may come, so neither kills nor frames released
# during a run are certain here (the row's p50 may be "-")
COOP_SIDE_BACKEND=opencl "$side" --setups coopd --coopd "$coopd" --k N --coopd-priority 5 \
  --scale 4 --input 1 --exec-ms 0.5 --period 60 --window 0.6 --min-runs 2 --timeout 120 \
  --csv "$dir/prio.csv" >"$dir/prio" 2>&1 || { cat "$dir/prio"; fail "--coopd-priority: exited non-zero"; }
grep -q 'its priority 5 (the long kernel' "$dir/prio" || fail "--coopd-priority: not in the header"
grep -qE '^\| \(g\) frame client through coopd, K=[0-9]+ \(N\) \| ([0-9.]+|-) \|' "$dir/prio" ||
  fail "--coopd-priority: no row of (g) at K = N"
awk -F, '$1 == "coopd" && $4 == "run" { n++; if ($14 != 1) bad = 1 }
  END { exit !(n >= 2 && !bad) }' "$dir/prio.csv" ||
  fail "--coopd-priority: the long kernel's runs unchecked or too few"
# A setup that fails (here (g), its coopd not found) after another ran:
# the bench exits non-zero, and the CSV still holds the setup before it,
# written after each setup, which --report draws again
COOP_SIDE_BACKEND=opencl "$side" --setups long,coopd --coopd "$dir/no-such-coopd" --scale 4 \
  --input 1 --exec-ms 0.5 --period 10 --window 0.3 --min-runs 2 --timeout 120 \
  --csv "$dir/cut.csv" >"$dir/cut" 2>&1 && fail "a missing coopd: exited 0"
awk -F, '$1 == "long" && $4 == "run" { n++ } END { exit !(n >= 2) }' "$dir/cut.csv" ||
  { cat "$dir/cut"; fail "a failed setup: the rows of the one before it lost"; }
"$side" --report "$dir/cut.csv" >"$dir/cut-report" 2>&1 &&
  grep -qE '^\| long kernel alone \| [0-9]+ \([0-9]+\) \|' "$dir/cut-report" ||
  fail "--report of a cut run: no long kernel row"
# a cap out of range: refused before anything runs
"$side" --max-registers 8 --setups alone >"$dir/regs" 2>&1
[ $? -eq 2 ] && grep -q 'max-registers' "$dir/regs" || { cat "$dir/regs"; fail "--max-registers 8 not refused"; }
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
