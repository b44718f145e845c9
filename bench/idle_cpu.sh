#!/usr/bin/env bash
# bench/idle_cpu.sh: the CPU an idle coopd uses (the bound: an idle coopd
# must use <= 1% of a core on PoCL, 10 s sample), with idle parking on
# ([device] park_ms, default 100) and off (park_ms = 0, "never park").
#   bench/idle_cpu.sh [--build-dir DIR] [--seconds S] [--settle S]
#                     [--park-ms MS] [--backend opencl|auto|cuda] [--no-job]
#                     [--user NAME]
# For each case, it starts coopd from the build tree (default build) on a
# socket in a temporary directory, with a private config file that sets the
# backend (default opencl: PoCL here) and park_ms; submits one small job
# (coopctl render --class light --wg 1 --for 1) so that the megakernel has
# run a job (--no-job skips it); waits --settle seconds (default 1) so that
# it parks; then samples utime+stime (/proc/PID/stat) of coopd and of its
# device processes (each device's megakernel runs in a child, `coopd
# --device-process`) over --seconds (default 10), and each thread's
# (/proc/PID/task/TID/stat, and schedstat's run time in ns). Whether the
# megakernel was parked is `coopctl --json stats`'s device state, before and
# after the window (yes: parked at both ends, no relaunch between).
# Prints the per-thread figures, then a CSV line per case (case, seconds,
# cpu_percent_of_one_core, parked), the machine, the commit, and whether the
# parked figure meets that bound (<= 1% of one core).
# Run as root, coopd and coopctl run as --user (default nobody) through
# setpriv, so the figures are those of a non-root daemon. POCL_MAX_PTHREAD_COUNT
# is passed through as set (unset: PoCL's default, one unit per core).
set -euo pipefail
export LC_ALL=C
repo=$(cd "$(dirname "$0")/.." && pwd -P)

bdir=$repo/build secs=10 settle=1 park_ms=100 backend=opencl job=1 user=nobody
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) bdir=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --park-ms) park_ms=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --no-job) job=0; shift ;;
    --user) user=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "idle_cpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$backend" in
  auto | opencl | cuda) ;;
  *) echo "idle_cpu.sh: --backend: '$backend' is not one of auto, opencl, cuda" >&2; exit 2 ;;
esac
for v in "$secs" "$park_ms"; do
  case "$v" in '' | *[!0-9]*) echo "idle_cpu.sh: '$v' is not a whole number" >&2; exit 2 ;; esac
done
[ "$secs" -gt 0 ] || { echo "idle_cpu.sh: --seconds must be > 0" >&2; exit 2; }
[ "$park_ms" -gt 0 ] || { echo "idle_cpu.sh: --park-ms must be > 0 (0 is the never-park case, run anyway)" >&2; exit 2; }
coopd_bin=$bdir/bin/coopd
ctl_bin=$bdir/bin/coopctl
for b in "$coopd_bin" "$ctl_bin"; do
  [ -x "$b" ] || { echo "idle_cpu.sh: no $b (build first, or --build-dir)" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/coop-idlecpu.XXXXXX)
chmod 755 "$tmp"
as=()
if [ "$(id -u)" -eq 0 ]; then
  uid=$(id -u "$user") gid=$(id -g "$user")
  [ "$uid" -ne 0 ] || { echo "idle_cpu.sh: --user $user is root" >&2; exit 2; }
  chown "$uid:$gid" "$tmp"
  as=(setpriv --reuid="$uid" --regid="$gid" --clear-groups)
fi
runas=$(if [ ${#as[@]} -gt 0 ]; then echo "$user (uid $uid, via setpriv)"; else id -un; fi)

daemon=
stop_daemon() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon"
    wait "$daemon" 2>/dev/null || true
  fi
  daemon=
}
cleanup() {
  stop_daemon
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Run a command as the daemon's user, with its HOME and PoCL cache in $tmp.
run_as() {
  "${as[@]}" env HOME="$tmp" XDG_CACHE_HOME="$tmp/cache" "$@"
}

# utime+stime (ticks) of one /proc stat file, into $tk (builtins only: the
# snapshots must be quick); the comm field may hold spaces and parentheses,
# so the fields are counted after the last ')'. 0 if it has gone.
tk=0
ticks() {
  local s f
  tk=0
  read -r s 2>/dev/null <"$1" || return 0
  s=${s##*) }
  read -r -a f <<<"$s"
  tk=$((f[11] + f[12]))
}

# coopd's pid and those of its descendants (the device processes).
procs() {
  local todo=("$1") p st pp
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    echo "$p"
    for st in /proc/[0-9]*/stat; do
      pp=$(cat "$st" 2>/dev/null) || continue
      pp=${pp##*) }
      pp=${pp#* }
      pp=${pp%% *}
      [ "$pp" = "$p" ] || continue
      st=${st#/proc/}
      todo+=("${st%/stat}")
    done
  done
}

# One snapshot of the processes named: a line per process "P pid ticks"
# and per thread "T pid/tid ticks ns comm" (ns: schedstat's run time).
snapshot() {
  local p t comm ns
  for p in "$@"; do
    ticks "/proc/$p/stat"
    echo "P $p $tk"
    for t in /proc/"$p"/task/*; do
      [ -e "$t/stat" ] || continue
      read -r comm 2>/dev/null <"$t/comm" || comm='?'
      read -r ns _ 2>/dev/null <"$t/schedstat" || ns=0
      ticks "$t/stat"
      echo "T $p/${t##*/} $tk ${ns:-0} $comm"
    done
  done
}

# Device states from `coopctl --json stats`: "state:parks" per device.
dev_states() {
  run_as "$ctl_bin" --socket "$tmp/coop.sock" --json stats |
    grep -o '"state":"[a-z]*","parks":[0-9]*' | sed 's/"state":"\([a-z]*\)","parks":/\1:/' |
    tr '\n' ' '
}

csv=()
verdict=
run_case() {
  local name=$1 pms=$2 conf=$tmp/$1.ini log=$tmp/$1.log
  cat >"$conf" <<EOF
[device]
backend = $backend
park_ms = $pms
[server]
socket = $tmp/coop.sock
[kernels]
dirs = $repo/kernels
[log]
level = warn
EOF
  rm -f "$tmp/coop.sock" "$tmp/coop.sock.jobs"
  echo "== $name: coopd --config $conf (park_ms = $pms, backend $backend), as $runas"
  # not through run_as: $! must be coopd itself (setpriv and env exec it)
  "${as[@]}" env HOME="$tmp" XDG_CACHE_HOME="$tmp/cache" "$coopd_bin" --config "$conf" 2>"$log" &
  daemon=$!
  local i=0
  while [ ! -S "$tmp/coop.sock" ]; do
    if ! kill -0 "$daemon" 2>/dev/null; then
      echo "idle_cpu.sh: coopd exited at start-up:" >&2
      cat "$log" >&2
      exit 1
    fi
    i=$((i + 1))
    [ $i -le 1800 ] || { echo "idle_cpu.sh: no socket within 180 s" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  run_as "$ctl_bin" --socket "$tmp/coop.sock" stats | sed -n 's/^\(device\|backend\) /   &/p'
  if [ "$job" = 1 ]; then
    echo "   job first: coopctl render --class light --wg 1 --for 1"
    run_as "$ctl_bin" --socket "$tmp/coop.sock" render --class light --wg 1 --for 1 |
      grep '^instances' | sed 's/^/   /'
  fi
  sleep "$settle"

  # the processes (coopd, its device processes) are listed before the
  # window; each snapshot reads /proc with builtins, t0 and t1 taken just
  # before each, so that t1 - t0 is the window between matching reads
  local s0 s1 t0 t1 a b pids
  s0=$(dev_states)
  mapfile -t pids < <(procs "$daemon")
  t0=$EPOCHREALTIME
  a=$(snapshot "${pids[@]}")
  sleep "$secs"
  t1=$EPOCHREALTIME
  b=$(snapshot "${pids[@]}")
  s1=$(dev_states)

  # yes: every device parked at both ends, with the same park count
  local parked=yes tok
  [ -n "$s0" ] && [ "$s0" = "$s1" ] || parked=no
  for tok in $s0; do
    case $tok in parked:*) ;; *) parked=no ;; esac
  done
  echo "   device state (state:parks) before the window: $s0; after: $s1"

  # per process and per thread: ticks and ns used in the window
  local res
  res=$(awk -v hz="$hz" -v t0="$t0" -v t1="$t1" '
    NR == FNR { if ($1 == "P") p0[$2] = $3; else { k0[$2] = $3; n0[$2] = $4 } next }
    $1 == "P" { dp = $3 - p0[$2]; tot += dp; pl[$2] = dp; order[++np] = $2; next }
    { comm = $5; for (i = 6; i <= NF; i++) comm = comm " " $i
      dk = $3 - k0[$2]; dn = $4 - n0[$2]; ns += dn
      th[++nt] = sprintf("   thread %-13s %-16s %6d ticks  %12.3f ms  %7.3f%%", $2, comm, dk,
                         dn / 1e6, 100 * dn / 1e9 / (t1 - t0)) }
    END {
      w = t1 - t0
      for (i = 1; i <= np; i++)
        printf "   process %-7s %6d ticks  %7.3f%% of one core\n", order[i], pl[order[i]],
               100 * pl[order[i]] / hz / w
      for (i = 1; i <= nt; i++) print th[i]
      printf "RESULT %.3f %.3f %.3f\n", w, 100 * tot / hz / w, 100 * ns / 1e9 / w
    }' <(echo "$a") <(echo "$b"))
  grep -v '^RESULT' <<<"$res"
  local w pct nspct load
  read -r _ w pct nspct < <(grep '^RESULT' <<<"$res")
  read -r load _ </proc/loadavg
  echo "   total: $pct% of one core over $w s (utime+stime, $hz ticks/s; the threads'" \
    "schedstat run time: $nspct%), parked: $parked; 1-min load average after: $load"
  csv+=("$name,$w,$pct,$parked")
  [ "$pms" -eq 0 ] || verdict="parked coopd: $pct% of one core; bound 1%: $(
    awk -v p="$pct" 'BEGIN { print (p <= 1 ? "met" : "NOT met") }')"
  stop_daemon
  if [ -s "$log" ]; then
    echo "   coopd's log:"
    sed 's/^/     /' "$log"
  fi
}

run_case "park_ms=$park_ms" "$park_ms"
run_case "park_ms=0" 0

echo "== results"
echo "case,seconds,cpu_percent_of_one_core,parked"
printf '%s\n' "${csv[@]}"
echo "machine: nproc $(nproc), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
  "POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-unset}, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
. "$repo/bench/build_commit.sh"
echo "commit: $(build_commit "$bdir" "$repo")"
echo "$verdict"
