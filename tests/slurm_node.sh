#!/bin/sh
# slurm_node.sh: coop under a real one-node Slurm (docs/cluster.md, "Slurm").
# Starts, all in a temporary directory and on free ports: munged with a key
# of its own, slurmctld and slurmd for this host (proctrack/linuxproc and
# task/none: no cgroups, no systemd) with docs/cluster/gres.conf as it is and
# docs/cluster/prolog.sh as the TaskProlog (its socket path replaced by this
# test's), and a coopd on PoCL. Then runs, through Slurm:
#   - the srun and sbatch lines of docs/cluster.md as written (sbatch with
#     --wait): bfs's check passes, the render job ends done and writes its
#     output, the batch job ends COMPLETED with exit code 0 and the GRES;
#   - a task's COOP_SOCKET is coopd's socket, set by the TaskProlog alone;
#   - more of the GRES than the node has is refused;
#   - with coopd stopped, the TaskProlog says so in the task's output and
#     sets no COOP_SOCKET.
# Everything is stopped and removed at exit; every wait has a timeout.
# Exit 77 (skipped) when not root or without Debian's slurmd, slurmctld,
# slurm-client and munge (scripts/deps --slurm installs them).
#
# usage: slurm_node.sh SOURCE_DIR COOPD COOPCTL KERNEL_DIRS
set -u
src=$1 coopd=$2 coopctl=$3 kernels=$4

skip() {
  echo "skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd runs each job as its user)"
PATH=$PATH:/usr/sbin:/sbin
for c in munged mungekey slurmctld slurmd srun sbatch scontrol scancel python3 timeout; do
  command -v "$c" >/dev/null 2>&1 || skip "no $c (as root: scripts/deps --slurm)"
done

. "$(dirname "$0")/coopctl_lib.sh"

# cleanup (called by coopctl_lib.sh's trap): the jobs, the daemons started
# here, then what coopctl_lib.sh's own cleanup does
munged_pid='' ctld_pid='' slurmd_pid='' watchdog=''
stop() { # PID: SIGTERM, then SIGKILL after 10 s
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null
  i=0
  while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}
lib_cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
cleanup() {
  kill "$watchdog" 2>/dev/null
  if [ -n "$ctld_pid" ]; then
    timeout 5 scancel --full --quiet --user=root 2>/dev/null
    # a job's processes belong to slurmstepd, not to this script: let
    # them go before slurmd does
    i=0
    while [ -n "$(timeout 5 squeue -h 2>/dev/null)" ] && [ $i -lt 50 ]; do
      sleep 0.1
      i=$((i + 1))
    done
  fi
  stop "$slurmd_pid"
  stop "$ctld_pid"
  stop "$munged_pid"
  lib_cleanup
}

logs() {
  for f in munged.log munged.err slurmctld.log slurmctld.err slurmd.log slurmd.err; do
    [ -s "$dir/$f" ] || continue
    echo "$f:"
    sed 's/^/    /' "$dir/$f"
  done
}

give_up() {
  fail "$*"
  logs
  finish
  exit 1
}

# until CMD succeeds, up to SECONDS; a failure naming WHAT otherwise, or as
# soon as a daemon started here has exited
wait_for() {
  secs=$1 what=$2
  shift 2
  i=0
  until "$@" >/dev/null 2>&1; do
    for d in "munged $munged_pid" "slurmctld $ctld_pid" "slurmd $slurmd_pid" "coopd $pid"; do
      p=${d#* }
      [ -z "$p" ] || kill -0 "$p" 2>/dev/null || give_up "${d% *} exited while waiting for $what"
    done
    i=$((i + 1))
    [ $i -le $((secs * 10)) ] || give_up "$what not within $secs s"
    sleep 0.1
  done
}

# the whole test gives up after 80 s (a wait of its own ends within 30 s
# more), so that its clean-up runs before ctest's limit kills it. The trap
# may run inside a command's redirection: it writes to the test's own
# stdout (3) and stderr (4).
exec 3>&1 4>&2
trap 'exec >&3 2>&4
echo "FAIL: stopped by SIGTERM after $(($(date +%s) - t0)) s (the limit is 80 s)"
logs
exit 1' TERM
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep 80 &
  s=$!
  wait "$s" && kill -TERM $$
) >/dev/null 2>&1 &
watchdog=$!

host=$(hostname -s)
# nothing of a Slurm this may run under, nor a coopd of the caller's
# shellcheck disable=SC2046
unset COOP_SOCKET XDG_RUNTIME_DIR $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\|SBATCH_[A-Za-z0-9_]*\|SRUN_[A-Za-z0-9_]*\|SALLOC_[A-Za-z0-9_]*\)=.*/\1/p')
# the task finds coopctl by name, as in docs/cluster.md
PATH=$(cd "$(dirname "$coopctl")" && pwd):$PATH
export PATH

# coopd first: PoCL builds the kernels while Slurm comes up
"$coopd" --socket "$sock" --log-level warn --kernels "$kernels" 2>"$dir/coopd.log" &
pid=$!

# ---- munge: a key and a socket of its own
mkdir -m 700 "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key" || give_up "mungekey failed"
munged --foreground --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock" \
  --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" \
  --log-file="$dir/munged.log" 2>"$dir/munged.err" &
munged_pid=$!
wait_for 10 "munged's socket" test -S "$dir/munge/sock"

# ---- Slurm: one node, this host, with docs/cluster's GRES and TaskProlog
etc=$dir/etc
mkdir "$etc" "$dir/ctld" "$dir/slurmd"
cp "$src/docs/cluster/gres.conf" "$etc/gres.conf"
gres=$(sed -n 's/^Name=\([^ ]*\) .*/\1/p' "$etc/gres.conf")
count=$(sed -n 's/^Name=.* Count=\([0-9]*\).*/\1/p' "$etc/gres.conf")
if [ -z "$gres" ] || [ -z "$count" ]; then
  give_up "docs/cluster/gres.conf: no line Name=... Count=N"
fi
sed "s|^sock=/run/coop/coop.sock\$|sock=$sock|" "$src/docs/cluster/prolog.sh" >"$etc/coop-prolog.sh"
grep -q "^sock=$sock\$" "$etc/coop-prolog.sh" ||
  give_up "docs/cluster/prolog.sh: no line sock=/run/coop/coop.sock to point elsewhere"
chmod 755 "$etc/coop-prolog.sh"
ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])') || give_up "no free ports"
ctld_port=${ports% *} slurmd_port=${ports#* }
# the node's CPUs as slurmd finds them (fewer configured: an error in its
# log; more: the node is drained)
hw=$(slurmd -C | sed -n 's/^NodeName=[^ ]* \(CPUs=.* ThreadsPerCore=[0-9]*\).*/\1/p')
[ -n "$hw" ] || give_up "slurmd -C: no CPUs=... ThreadsPerCore=N"
cat >"$etc/slurm.conf" <<EOF
ClusterName=cooptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
GresTypes=$gres
TaskProlog=$etc/coop-prolog.sh
NodeName=$host NodeAddr=127.0.0.1 $hw Gres=$gres:$count State=UNKNOWN
PartitionName=coop Nodes=$host Default=YES MaxTime=5 State=UP
EOF
export SLURM_CONF=$etc/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" 2>"$dir/slurmctld.err" &
ctld_pid=$!
slurmd -D -f "$SLURM_CONF" -N "$host" 2>"$dir/slurmd.err" &
slurmd_pid=$!
node_idle() { [ "$(timeout 5 sinfo -h -n "$host" -o %t)" = idle ]; }
wait_for 30 "node $host idle" node_idle
echo "slurm up after $(($(date +%s) - t0)) s"
expect_out "Gres=$gres:$count" timeout 10 scontrol show node "$host"

wait_for 60 "coopd's socket" test -S "$sock"
echo "coopd up after $(($(date +%s) - t0)) s"

# ---- jobs through Slurm
cd "$dir" || exit 1
srun() { timeout 30 srun "$@" </dev/null; }
sbatch() { timeout 30 sbatch --wait --parsable --output="$dir/batch.out" "$@"; }

expect_out "^$sock\$" srun --gres="$gres:1" printenv COOP_SOCKET
echo "    COOP_SOCKET=$(cat "$dir/out")"
expect 1 "" srun --immediate=10 --gres="$gres:$((count + 1))" true

line=$(grep "^srun --gres=" "$src/docs/cluster.md")
[ "$(echo "$line" | wc -l)" -eq 1 ] || fail "docs/cluster.md: want one srun line, found: $line"
expect_out "^check: ok" eval "$line"
sed -n 's/^\(bfs on\|check:\)/    \1/p' "$dir/out"

line=$(grep "^sbatch --gres=" "$src/docs/cluster.md")
[ "$(echo "$line" | wc -l)" -eq 1 ] || fail "docs/cluster.md: want one sbatch line, found: $line"
if eval "$line" >"$dir/out" 2>"$dir/err"; then
  echo "ok: $line"
else
  fail "$line exited non-zero"
  cat "$dir/out" "$dir/err"
fi
job=$(head -n1 "$dir/out")
grep -q "^job [0-9]*: done" "$dir/batch.out" || { fail "batch job's output:"; cat "$dir/batch.out"; }
timeout 10 scontrol show job "$job" >"$dir/job" 2>&1
for want in JobState=COMPLETED " ExitCode=0:0" "TresPerNode=.*gres:$gres:1"; do
  grep -q "$want" "$dir/job" || fail "batch job $job: no $want"
done
[ -s "$dir/c.bin" ] || fail "batch job wrote no c.bin in its directory"
# shellcheck disable=SC2046
echo "    job $job:" $(grep -o "JobState=[A-Z]*\| ExitCode=[0-9:]*\|TresPerNode=[^ ]*" "$dir/job")

# ---- the TaskProlog without coopd
stop_coopd
[ ! -e "$sock" ] || fail "coopd left its socket"
expect_out "coop: no coopd socket at $sock on " srun --gres="$gres:1" \
  sh -c 'echo "COOP_SOCKET=${COOP_SOCKET-unset}"'
grep -q "^COOP_SOCKET=unset\$" "$dir/out" || { fail "the TaskProlog set COOP_SOCKET:"; cat "$dir/out"; }

[ "$fails" -eq 0 ] || logs
finish
