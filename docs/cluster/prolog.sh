#!/bin/sh
# Slurm TaskProlog (slurm.conf: TaskProlog=/etc/slurm/coop-prolog.sh):
# points every task at its node's coopd. Lines "export NAME=VALUE" on
# stdout become the task's environment (slurm.conf(5), TaskProlog).
sock=/run/coop/coop.sock
if [ -S "$sock" ]; then
  echo "export COOP_SOCKET=$sock"
else
  echo "print coop: no coopd socket at $sock on $(hostname)"
fi
