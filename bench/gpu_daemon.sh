# shellcheck shell=bash disable=SC2154 # bdir, repo, name: the caller's
# bench/gpu_daemon.sh: sourced by the *_gpu.sh benches that drive a coopd of
# their own: its start and stop, coopctl on its socket, and the small
# readers of coopctl's JSON. The caller sets bdir (the build dir), repo and
# name (its own name, for messages), and may set kernels (coopd's
# --kernels; default: the shipped kernels, the applications and the
# priority test kernels).
coopd=$bdir/bin/coopd ctl=$bdir/bin/coopctl
for b in "$coopd" "$ctl"; do
  [ -x "$b" ] || { echo "$name: no $b (build with -DCOOP_CUDA=ON, or --build-dir)" >&2; exit 1; }
done
kernels=${kernels:-$repo/kernels:$bdir/kernels/apps:$repo/kernels/tests/priority}
tmp=$(mktemp -d "/tmp/coop-$name.XXXXXX")
daemon=
stop_daemon() {
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  daemon=
}
trap 'stop_daemon; [ -n "${COOP_BENCH_KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 143' TERM INT # a timeout's signal still runs the EXIT trap
sock=$tmp/coop.sock
# start_daemon [--set ...]...: a coopd on $sock logging to $tmp/coopd.log,
# returned once it answers stats.
start_daemon() {
  rm -f "$sock"
  "$coopd" --socket "$sock" --kernels "$kernels" --set device.park_ms=0 \
    --set server.journal=off --set log.level=debug --set jobs.watchdog_ms=0 "$@" \
    2>"$tmp/coopd.log" &
  daemon=$!
  for _ in $(seq 1 3000); do # the megakernel's build: seconds (minutes on PoCL)
    [ -S "$sock" ] && "$ctl" --socket "$sock" stats >/dev/null 2>&1 && return 0
    kill -0 "$daemon" 2>/dev/null || { cat "$tmp/coopd.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name: coopd did not start" >&2
  exit 1
}
ctl() { "$ctl" --socket "$sock" "$@"; }
# the job's finished - submitted (ms) from coopctl app's JSON
took() { sed -n 's/.*"submitted":\([0-9]*\).*"finished":\([0-9]*\).*/\1 \2/p' "$1" | head -1 |
  awk '{ printf "%.3f", ($2 - $1) / 1e6 }'; }
# quant F: the F-quantile (nearest rank) of the numbers on stdin
quant() { sort -g | awk -v f="$1" '{ v[NR] = $1 } END { i = int(f * NR + 0.999); if (i < 1) i = 1; if (NR) print v[i] }'; }
# running_job KERNEL [PID]: the id of a job of KERNEL once `coopctl status`
# says it runs (60 s at most; a job that starts with its input made first),
# or exits; PID: the coopctl that submitted it, whose exit before the job
# was seen running means that it ended too soon to be caught
running_job() {
  local job=
  for _ in $(seq 1 6000); do
    job=$(ctl --json status | grep -o "\"job\":[0-9]*,\"state\":\"running\",\"kernel\":\"$1\"" |
      head -1 | sed 's/"job":\([0-9]*\).*/\1/' || true)
    [ -n "$job" ] && { echo "$job"; return 0; }
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
      echo "$name: the $1 job ended before it was seen running: it must run for longer (a larger --graph)" >&2
      exit 1
    fi
    sleep 0.01
  done
  echo "$name: the $1 job never ran" >&2
  exit 1
}
# field NAME FILE: a string or number field of coopctl's JSON
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([a-zA-Z0-9.]*\\).*/\\1/p" "$2" | head -1; }
. "$repo/bench/build_commit.sh"
machine_line() {
  echo "machine: $(uname -n), $(nproc) cores; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
  echo "commit: $(build_commit "$bdir" "$repo")"
}
