# coopctl_lib.sh: what the coopctl shell tests share (sourced, not run).
# Sets $dir (a temporary directory, removed at exit) and $sock, and gives:
#   fail MSG                      count a failure
#   expect STATUS PATTERN CMD...  CMD exits STATUS and its stderr matches PATTERN
#   expect_out PATTERN CMD...     CMD exits 0 and its stdout matches PATTERN
#   running JOB                   wait until job JOB runs (a failure after 30 s)
#   kernel_running NAME           the same for a job of kernel NAME
#   start_coopd COOPD ARGS...     coopd on $sock (plus device.backend from
#                                 $COOP_BACKEND); exits 1 if it does not come up
#   stop_coopd                    SIGTERM, and a failure unless it exits 0
#   finish                        coopd's log, the count; exit status 0 if none failed
dir=$(mktemp -d /tmp/coopctl-test-XXXXXX) || exit 1
sock=$dir/coop.sock
pid=
fails=0
t0=$(date +%s)

cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

expect() {
  want=$1 pattern=$2
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$* exited $got, expected $want"
    cat "$dir/out" "$dir/err"
  elif [ -n "$pattern" ] && ! grep -q -- "$pattern" "$dir/err"; then
    fail "$*: no \"$pattern\" in its message:"
    cat "$dir/err"
  else
    echo "ok ($got): $*"
    [ -s "$dir/err" ] && sed 's/^/    /' "$dir/err"
  fi
}

# status_shows WHAT PATTERN [ARGS...]: until a line of `coopctl status
# ARGS` matches PATTERN (30 s at most; else a failure, "WHAT did not
# start"); $coopctl is the caller's
status_shows() {
  what=$1 pattern=$2
  shift 2
  i=0
  until "$coopctl" --socket "$sock" status "$@" | grep -q "$pattern"; do
    i=$((i + 1))
    [ $i -gt 300 ] && fail "$what did not start" && break
    sleep 0.1
  done
}

# running JOB: until coopctl status shows JOB running
running() { status_shows "job $1" " running " "$1"; }

# until a job of kernel $1 runs (STATUS lists it running): one submitted
# with --wait, whose id coopctl prints only at its end
kernel_running() { status_shows "$1" " running  *$1 "; }

expect_out() {
  pattern=$1
  shift
  if ! "$@" >"$dir/out" 2>"$dir/err"; then
    fail "$* exited non-zero"
    cat "$dir/err"
  elif ! grep -q -- "$pattern" "$dir/out"; then
    fail "$*: no \"$pattern\" in its output:"
    cat "$dir/out"
  else
    echo "ok: $*"
  fi
}

# PoCL builds every kernel at start: up to minutes on a loaded machine.
start_coopd() {
  coopd_bin=$1
  shift
  backend=
  [ -n "${COOP_BACKEND:-}" ] && backend="--set device.backend=$COOP_BACKEND"
  started=$(date +%s)
  # shellcheck disable=SC2086
  "$coopd_bin" --socket "$sock" --log-level warn $backend "$@" 2>"$dir/coopd.log" &
  pid=$!
  i=0
  while [ ! -S "$sock" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "FAIL: coopd exited at start-up:"
      cat "$dir/coopd.log"
      pid=
      exit 1
    fi
    i=$((i + 1))
    if [ $i -gt 1800 ]; then
      echo "FAIL: coopd did not create its socket within 180 s"
      cat "$dir/coopd.log"
      exit 1
    fi
    sleep 0.1
  done
  echo "coopd up after $(($(date +%s) - started)) s"
}

stop_coopd() {
  kill "$pid"
  wait "$pid"
  st=$?
  pid=
  [ "$st" -eq 0 ] || fail "coopd exited $st"
}

finish() {
  if [ -s "$dir/coopd.log" ]; then
    echo "coopd's log:"
    sed 's/^/    /' "$dir/coopd.log"
  fi
  echo "$fails failures, $(($(date +%s) - t0)) s"
  [ "$fails" -eq 0 ]
}
