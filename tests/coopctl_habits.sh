#!/bin/sh
# coopctl_habits.sh: the CLI's habits: --version and -V,
# help, "did you mean" for a mistyped command or option, a compiler error
# in a kernel that names its file and line (coopd --check-config compiles
# the kernels), the daemon's version and uptime in stats, JSON null for
# absent values, cancel of a finished job, top's arena and UTIL%, a done
# job's message (a checkpoint's resumption), an
# output path checked before the job is submitted, the progress line's
# reason for a queued job, within the terminal's width, why a job waited
# for with --timeout had not ended, and a device process started after
# coopd's binary was replaced.
#
# usage: coopctl_habits.sh COOPD COOPCTL KERNEL_DIR VERSION
set -u
coopd=$1 coopctl=$2 kernels=$3 version=$4
. "$(dirname "$0")/coopctl_lib.sh"

expect_out "^coopctl $version\$" "$coopctl" --version
expect_out "^coopctl $version\$" "$coopctl" -V
expect_out "^usage: coopctl .* cancel JOB" "$coopctl" help cancel
expect_out "^usage: coopctl .* stats" "$coopctl" stats -h
expect 2 "unknown command stast (did you mean stats?)" "$coopctl" stast
expect 2 "unknown command frobnicate\$" "$coopctl" frobnicate
expect 2 "unknown option --wgg (did you mean --wg?)" "$coopctl" submit render --wgg 2

# --check-config compiles: a kernel with an error on its line 4
mkdir "$dir/k"
cp "$kernels"/*.cl "$dir/k/"
cat >"$dir/k/bad.cl" <<'CL'
//@coop name=bad kind=noncooperative args=u32
/* a kernel whose line 4 does not compile */
void bad(struct coop_ctx *c) {
  coop_u32 x = undefined_thing + 1;
}
CL
backend=
[ -n "${COOP_BACKEND:-}" ] && backend="--set device.backend=$COOP_BACKEND"
# shellcheck disable=SC2086
expect 1 "bad.cl:4:" "$coopd" --kernels "$dir/k" --socket "$sock" $backend --check-config
if grep -q "tempfile" "$dir/err"; then fail "the log names a temporary file"; fi
rm "$dir/k/bad.cl"
# shellcheck disable=SC2086
expect_out "^kernels compile" "$coopd" --kernels "$dir/k" --socket "$sock" $backend --check-config

start_coopd "$coopd" --kernels "$kernels"
expect_out "^coopd     $version, up 00:00:" "$coopctl" --socket "$sock" stats
expect_out "\"daemon_version\":\"$version\",\"uptime_ns\":[0-9]" "$coopctl" --socket "$sock" \
  --json stats
# no task has run: the percentiles are absent, not -1
expect_out '"gather_p50_ns":null' "$coopctl" --socket "$sock" --json stats
if grep -q ':-1[,}]' "$dir/out"; then fail "stats --json still says -1"; fi

mm="zeros:256 zeros:256 zeros:256 u32:8 u32:1"
# an output coopctl could not write is found before the job runs: nothing
# is submitted (it used to run the whole job, then fail to write)
sub0=$("$coopctl" --socket "$sock" --json stats | sed -n 's/.*"submitted":\([0-9]*\),.*/\1/p')
expect 1 "coopctl: submit: cannot write /nonexistent/x.bin: No such file or directory" \
  "$coopctl" --socket "$sock" submit render --wg 1 --wait zeros:256 zeros:256 \
  out:256:/nonexistent/x.bin u32:8 u32:1
expect 1 "cannot write $dir: Is a directory" "$coopctl" --socket "$sock" submit render --wg 1 \
  --wait zeros:256 zeros:256 "out:256:$dir" u32:8 u32:1
sub1=$("$coopctl" --socket "$sock" --json stats | sed -n 's/.*"submitted":\([0-9]*\),.*/\1/p')
[ "$sub0" = "$sub1" ] || fail "a job with an unwritable output was submitted ($sub0 -> $sub1)"
[ -n "$sub0" ] || fail "no submitted count in stats --json"
expect_out "job [0-9]*: done" "$coopctl" --socket "$sock" submit render --wg 1 --wait \
  zeros:256 zeros:256 "out:256:$dir/c.bin" u32:8 u32:1
[ "$(wc -c <"$dir/c.bin")" -eq 256 ] || fail "the writable output was not written"
# --json: an error found by coopctl itself prints the {"error":...} object
# too (docs/json.md, "Errors")
for args in "submit nosuch" "submit sweep --wait in:/nonexistent/in 4 1" \
  "submit sweep --wait out:16:/nonexistent/o 4 1"; do
  # shellcheck disable=SC2086
  expect 1 "" "$coopctl" --socket "$sock" --json $args
  grep -q '^{"error":{"what":"submit","code":-' "$dir/out" ||
    fail "--json $args: no error object: $(cat "$dir/out")"
done
# a failed write: a message and exit 1 (a double fclose aborted it), and an
# inout: file left whole (it was truncated first): 1 KiB past a 512-byte
# RLIMIT_FSIZE fails with EFBIG (SIGXFSZ ignored)
expect 1 "/dev/full: No space left on device" "$coopctl" --socket "$sock" submit sweep --wait \
  out:16:/dev/full 4 1
head -c 1024 /dev/zero | tr '\0' 'k' >"$dir/keep"
chmod 640 "$dir/keep"
(trap '' XFSZ && ulimit -f 1 && exec "$coopctl" --socket "$sock" submit sweep --wait \
  inout:"$dir/keep" 256 1) >/dev/null 2>"$dir/err"
st=$?
[ $st -eq 1 ] && grep -q "left as it was" "$dir/err" || fail "inout: past RLIMIT_FSIZE: $st $(cat "$dir/err")"
[ "$(tr -d k <"$dir/keep" | wc -c)" -eq 0 ] && [ "$(wc -c <"$dir/keep")" -eq 1024 ] ||
  fail "a failed write changed the inout: file ($(wc -c <"$dir/keep") bytes)"
expect_out "job [0-9]*: done" "$coopctl" --socket "$sock" submit sweep --wait inout:"$dir/keep" 256 1
[ "$(stat -c %a "$dir/keep")" = 640 ] || fail "inout: lost its mode: $(stat -c %a "$dir/keep")"
ls -a "$dir" | grep -q '^\.keep\.' && fail "inout: left its temporary file"
# the same through a symbolic link: the file it names is left whole and
# then replaced, the link kept (written through the link in place, the
# failed write had cut it)
head -c 1024 /dev/zero | tr '\0' 'k' >"$dir/keep"
ln -s keep "$dir/keeplink"
(trap '' XFSZ && ulimit -f 1 && exec "$coopctl" --socket "$sock" submit sweep --wait \
  inout:"$dir/keeplink" 256 1) >/dev/null 2>"$dir/err"
[ "$(tr -d k <"$dir/keep" | wc -c)" -eq 0 ] && [ "$(wc -c <"$dir/keep")" -eq 1024 ] ||
  fail "a failed write through a link changed its file ($(wc -c <"$dir/keep") bytes)"
expect_out "job [0-9]*: done" "$coopctl" --socket "$sock" submit sweep --wait \
  inout:"$dir/keeplink" 256 1
[ -L "$dir/keeplink" ] && [ "$(wc -c <"$dir/keep")" -eq 1024 ] &&
  [ "$(stat -c %a "$dir/keep")" = 640 ] || fail "inout: through a link: not the file it names"
ls -a "$dir" | grep -q '^\.keep\.' && fail "inout: through a link: left its temporary file"
rm -f "$dir/keeplink"
# in: files bounded by the device arena (256 MiB): a bigger regular file
# refused from its size, /dev/zero read no further (ulimit -v: the read
# without a bound grew until allocation failed)
truncate -s 300M "$dir/big"
expect 1 "in:$dir/big: 314572800 bytes, more than 268435456 bytes, coopd's device arena" \
  "$coopctl" --socket "$sock" submit sweep --wait in:"$dir/big" 1 1
rm -f "$dir/big"
(ulimit -v 1500000 && exec "$coopctl" --socket "$sock" submit sweep --wait in:/dev/zero 1 1) \
  >/dev/null 2>"$dir/err"
grep -q "in:/dev/zero: more than 268435456 bytes" "$dir/err" ||
  fail "in:/dev/zero: $(cat "$dir/err")"
# a value that does not fit f32 (it became +inf); negative numbers are
# values, not options
expect 2 "bad argument f32:1e40" "$coopctl" --socket "$sock" submit sweep zeros:256 f32:1e40 20
expect 2 "bad job id -1" "$coopctl" --socket "$sock" wait -1
expect 2 "bad argument -5: sweep's argument 1 is u32" "$coopctl" --socket "$sock" submit sweep \
  zeros:256 -5 20
# --timeout without --wait is refused; with it, the job is cancelled
expect 2 "--timeout needs --wait" "$coopctl" --socket "$sock" submit sweep --timeout 5 \
  zeros:256 64 20
cancelled() { "$coopctl" --socket "$sock" --json stats | sed -n 's/.*"cancelled":\([0-9]*\),.*/\1/p'; }
c0=$(cancelled)
# and says why it had not ended: where it was (running on how many of its
# workgroups, how many it gave back at offer_kill), or what it waited for
# (it said "timed out" alone)
expect 1 "timed out after 300 ms: job [0-9]* cancelled (with --wait a job does not outlive coopctl); it was \(running on 1 of 1 workgroup, 0 given back at offer_kill\|still \)" \
  "$coopctl" --socket "$sock" submit sweep --wg 1 --wait --timeout 300 zeros:256 64 100000000
for _ in $(seq 50); do [ "$(cancelled)" = $((c0 + 1)) ] && break; sleep 0.1; done
[ "$(cancelled)" = $((c0 + 1)) ] || fail "the timed-out job was not cancelled ($c0 -> $(cancelled))"

# shellcheck disable=SC2086
job=$("$coopctl" --socket "$sock" submit render --wg 1 $mm)
expect_out "job $job: done" "$coopctl" --socket "$sock" wait "$job"
expect 1 "job $job has already finished (done); nothing to cancel" \
  "$coopctl" --socket "$sock" cancel "$job"
expect 1 "" "$coopctl" --socket "$sock" --json cancel "$job"
grep -q "{\"job\":$job,\"cancel\":\"finished\",\"state\":\"done\"}" "$dir/out" ||
  fail "cancel --json: $(cat "$dir/out")"
# a job cancelled while queued (a render that does not yield holds both
# workers) was never gathered nor started: null, not -1 or 0
long=$("$coopctl" --socket "$sock" submit render --wg 2 zeros:256 zeros:256 zeros:256 u32:8 \
  u32:2000000000)
running "$long"
# shellcheck disable=SC2086
queued=$("$coopctl" --socket "$sock" submit render --wg 1 $mm)
expect_out "cancellation requested" "$coopctl" --socket "$sock" cancel "$queued"
expect 1 "" "$coopctl" --socket "$sock" --json wait "$queued"
for k in gather_ns exec_ns started gathered; do
  grep -q "\"$k\":null" "$dir/out" || fail "wait --json: no \"$k\":null in $(cat "$dir/out")"
done
expect_out "cancellation requested" "$coopctl" --socket "$sock" cancel "$long"
expect 1 "" "$coopctl" --socket "$sock" wait "$long"

expect_out "^arena     0.0 MiB used, 256.0 MiB free of 256.0 MiB" "$coopctl" --socket "$sock" \
  top --iterations 1
grep -q "WORKERS UTIL%" "$dir/out" || fail "top: no UTIL% column"
expect_out '"job":null' "$coopctl" --socket "$sock" --json top --iterations 1

# coopd knows each kernel's kind: --coop follows from it, and a
# cooperative kernel's --wg defaults to every worker (M max = workers)
workers=$("$coopctl" --socket "$sock" --json stats | sed -n 's/.*"devices":\[{[^]]*"workers":\([0-9]*\),.*/\1/p')
[ -n "$workers" ] || fail "no workers in stats --json"
expect_out "max $workers;" "$coopctl" --socket "$sock" submit sweep --wait zeros:256 u32:64 u32:20
expect_out "job [0-9]*: done" "$coopctl" --socket "$sock" submit sweep --coop --wg 1 --wait \
  zeros:256 u32:64 u32:20
expect 2 "render is not cooperative: drop --coop" "$coopctl" --socket "$sock" submit render --coop \
  $mm
expect 2 "--wg N is required for render (not cooperative)" "$coopctl" --socket "$sock" \
  submit render $mm
expect 1 "coopd has no kernel nosuch (coopctl kernels lists them)" "$coopctl" --socket "$sock" \
  submit nosuch u32:1
# a bare number takes the type the kernel declares there: sweep's two u32s
# (every word grows by 20); refused where it takes a buffer, past its last
# argument, and where the number does not fit
head -c 256 /dev/zero >"$dir/words"
expect_out "job [0-9]*: done" "$coopctl" --socket "$sock" submit sweep --wait inout:"$dir/words" 64 20
[ "$(od -An -tu4 -v "$dir/words" | tr -s ' \n' '\n' | grep -v '^$' | sort -u)" = 20 ] ||
  fail "sweep with bare numbers: words $(od -An -tu4 "$dir/words" | head -2)"
expect 2 "bad argument 64: sweep takes a buffer there" "$coopctl" --socket "$sock" submit sweep \
  64 64 20
expect 2 "bad argument 99999999999: sweep's argument 1 is u32" "$coopctl" --socket "$sock" \
  submit sweep zeros:256 99999999999 20
expect 2 "bad argument 1.5: sweep's argument 2 is u32" "$coopctl" --socket "$sock" \
  submit sweep zeros:256 64 1.5
expect 2 "bad argument 7: sweep takes no argument there" "$coopctl" --socket "$sock" \
  submit sweep zeros:256 64 20 7
stop_coopd

# A cooperative kernel that never yields (spin reaches no offer_kill and no
# barrier for 3 s) on every worker, waited for with --timeout: coopctl says
# it ran on all its workgroups and gave none back, and a render behind it
# who held the workgroup it waited for (each said "timed out" alone)
start_coopd "$coopd" --kernels "$kernels:$kernels/tests/daemon" --set jobs.hang_ms=500
"$coopctl" --socket "$sock" submit spin --wait --timeout 1500 zeros:64 3000000 \
  >"$dir/spin.out" 2>"$dir/spin.err" &
spinpid=$!
kernel_running spin
# shellcheck disable=SC2086
expect 1 "; it was still waiting for its 1 workgroup, held by job [0-9]* (spin) [1-9]" \
  "$coopctl" --socket "$sock" submit render --wg 1 --wait --timeout 300 $mm
wait "$spinpid"
grep -q "timed out after 1500 ms: job [0-9]* cancelled .*; it was running on \([0-9]*\) of \1 workgroups\{0,1\}, 0 given back at offer_kill" \
  "$dir/spin.err" || {
  fail "spin's timeout does not say it ran on all its workgroups and gave none back:"
  cat "$dir/spin.err"
}
stop_coopd

# A job that ends DONE with a message prints it: a checkpointed sweep
# (slowsweep: 40 rounds of at least 1024 kticks, about 2 s on PoCL) whose
# device process is killed resumes from its last checkpoint, and its
# RESULT says so ("resumed from its last checkpoint after 1 device
# restart: N ms of work lost"). coopctl printed no message for a job
# without an error (docs/daemon.md, "Checkpoints").
start_coopd "$coopd" --kernels "$kernels:$kernels/tests/priority" --set jobs.checkpoint_ms=100 \
  --log-level debug
ck=$("$coopctl" --socket "$sock" submit slowsweep --coop --wg 1 zeros:256 u32:64 u32:40 u32:1024)
i=0
until grep -q "job $ck (slowsweep): checkpoint 1: " "$dir/coopd.log" || [ $i -gt 100 ]; do
  i=$((i + 1))
  sleep 0.1
done
dp=
for c in $(cat /proc/"$pid"/task/*/children); do
  [ "$(cat /proc/"$c"/comm 2>/dev/null)" = coopd-device ] && dp=$c
done
kill -9 "$dp" # once: the one started in its place would fail its build, and the device stop
expect_out "^  message    resumed from its last checkpoint after 1 device restart: [0-9]* ms of work lost" \
  "$coopctl" --socket "$sock" wait "$ck"
stop_coopd

# A binary replaced since coopd started (a package's upgrade, a rebuild in
# the build tree): readlink of /proc/self/exe reads "PATH (deleted)", and
# the exec of a device process failed 127, so every author's add (its
# build in a device process of its own), reload and restart failed "the
# device process exited 127 while building" until coopd restarted.
mkdir "$dir/bin"
cp "$coopd" "$dir/bin/coopd"
start_coopd "$dir/bin/coopd" --kernels "$kernels" --set kernels.authors="$(id -u)" \
  --set kernels.authored_dir="$dir/mine" --set kernels.author_reload_interval_ms=0 \
  --set server.journal=off
cp "$coopd" "$dir/bin/coopd.new" && mv "$dir/bin/coopd.new" "$dir/bin/coopd"
printf '//@coop name=mine kind=noncooperative args=u32\nvoid mine(struct coop_ctx *c) {}\n' \
  >"$dir/mine.cl"
expect_out "^added kernel: mine" "$coopctl" --socket "$sock" kernel add "$dir/mine.cl"
stop_coopd

# On a terminal the progress line says why a queued job waits, cut to the
# terminal's width (80 where it says none): here room in the arena, which a
# running sweep's 600 KiB hold in a 1 MiB one (docs/daemon.md, "Room in the
# arena"). `script` gives coopctl a terminal (bsdutils, in every Debian).
if command -v script >/dev/null; then
  start_coopd "$coopd" --kernels "$kernels" --set device.arena_mb=1
  holder=$("$coopctl" --socket "$sock" submit sweep --wg 1 zeros:614400 u32:153600 u32:100000000)
  running "$holder"
  script -qec "'$coopctl' --socket '$sock' submit render --wg 1 --wait --timeout 1500 \
    zeros:160000 zeros:160000 zeros:160000 u32:200 u32:1" /dev/null >"$dir/tty" 2>&1
  tr '\r' '\n' <"$dir/tty" | sed 's/\x1b\[K//g' >"$dir/lines"
  grep -q "^job [0-9]*: queued, [0-9.]* s, waiting for room in the device arena" "$dir/lines" ||
    fail "the progress line does not say why the job waits: $(cat "$dir/lines")"
  if awk '/^job / && length > 79 { bad = 1 } END { exit !bad }' "$dir/lines"; then
    fail "a progress line wider than the terminal: $(cat "$dir/lines")"
  fi
  "$coopctl" --socket "$sock" cancel "$holder" >/dev/null
  stop_coopd
fi

# An author's failed add: the compiler's log, then one line that says the
# kernel was not added (the log's first line came again behind the code's
# words: "megakernel build failed; the compiler log says why: megakernel
# build failed; the compiler log says why: megakernel build failed (OpenCL
# error -11). Compiler log:"); an add that waits out the author's reload
# interval past --timeout says it gave up (it said "too many tasks in
# flight"). Authors are not root: nobody, where the test runs as root.
# Then a device that cannot start (CUDA where there is none) is not put on
# the authors' kernels (coopd tried again without them, saying it was).
if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null; then
  chmod 755 "$dir"
  mkdir -m 700 "$dir/auth"
  cat >"$dir/broken.cl" <<'CL'
//@coop name=brk kind=noncooperative args=out:buf
void brk(struct coop_ctx *c) {
  coop_buf_u32 o = coop_arg_buf_u32(c, 0);
  coop_at(o, 0) = 1u
}
CL
  sed -e 's/brk/good/g' -e 's/1u$/1u;/' "$dir/broken.cl" >"$dir/good.cl"
  chmod 644 "$dir/broken.cl" "$dir/good.cl"
  auth="--set kernels.authors=nobody --set kernels.authored_dir=$dir/auth --set server.journal=off"
  # shellcheck disable=SC2086
  start_coopd "$coopd" --kernels "$kernels" $auth --set kernels.author_reload_interval_ms=2000 \
    --set server.socket_mode=0666
  expect_out "added kernel: good" runuser -u nobody -- "$coopctl" --socket "$sock" kernel add \
    "$dir/good.cl"
  expect 1 "coopctl: kernel add: gave up after --timeout 200 ms: uid [0-9]*'s last kernel reload" \
    runuser -u nobody -- "$coopctl" --socket "$sock" kernel add --timeout 200 "$dir/broken.cl"
  expect 1 "broken.cl:4:" runuser -u nobody -- "$coopctl" --socket "$sock" kernel add "$dir/broken.cl"
  tail -n 1 "$dir/err" | grep -q "^coopctl: kernel add: not added (the log above says why)\$" ||
    fail "a failed add's last line: $(tail -n 1 "$dir/err")"
  grep -q "says why: megakernel build failed" "$dir/err" && fail "the failure said twice: $(cat "$dir/err")"
  stop_coopd
  # shellcheck disable=SC2086
  "$coopd" --socket "$sock" --kernels "$kernels" $auth --backend cuda >/dev/null 2>"$dir/cuda.log" &
  cpid=$!
  i=0
  while kill -0 $cpid 2>/dev/null && [ ! -S "$sock" ] && [ $i -lt 600 ]; do
    i=$((i + 1))
    sleep 0.1
  done
  kill $cpid 2>/dev/null
  wait $cpid 2>/dev/null
  if grep -q "CUDA backend unavailable" "$dir/cuda.log" &&
    grep -q "with the kernels authors added" "$dir/cuda.log"; then
    fail "no CUDA put on the authors' kernels: $(cat "$dir/cuda.log")"
  fi
fi
finish
