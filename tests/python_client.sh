#!/bin/sh
# python_client.sh: the Python package (python/coop) against a coopd on
# PoCL: tests/python/test_client.py, then each example of examples/python
# briefly (and tests/python/test_examples.py: their failed runs) and
# bench/python_submit.py, then tests/python/test_buffer_wait.py
# against a coopd with a small arena, then own_kernel.py and
# tests/python/test_kernel_wait.py against one whose authors wait 2 s
# between reloads. Skipped (exit 77) when PYTHON cannot import numpy.
#
# usage: python_client.sh COOPD KERNEL_DIRS PYTHON LIBCOOP SOURCE_DIR
set -u
coopd=$1 kernels=$2 python=$3 libcoop=$4 src=$5

if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $python cannot import numpy (Debian: apt-get install python3-numpy)"
  exit 77
fi
. "$(dirname "$0")/coopctl_lib.sh"

COOP_LIBRARY=$libcoop PYTHONPATH=$src/python
export COOP_LIBRARY PYTHONPATH
# the caller an author of kernels (Connection.add_kernel), with no wait
# between its reloads
start_coopd "$coopd" --kernels "$kernels" --set kernels.authors="$(id -u)" \
  --set kernels.authored_dir="$dir/authored" --set kernels.author_reload_interval_ms=0

"$python" "$src/tests/python/test_client.py" "$sock" || fail "test_client.py"
if "$python" -c 'import scipy' 2>/dev/null; then
  "$python" "$src/examples/python/graph_bfs.py" --socket "$sock" --vertices 2000 ||
    fail "graph_bfs.py"
else
  echo "skipped graph_bfs.py: no scipy"
fi
"$python" "$src/examples/python/own_kernel.py" --socket "$sock" --n 100000 --groups 2 ||
  fail "own_kernel.py"
"$python" "$src/tests/python/test_examples.py" "$sock" "$src" || fail "test_examples.py"
"$python" "$src/examples/python/render_loop.py" --socket "$sock" --frames 20 ||
  fail "render_loop.py"
"$python" "$src/examples/python/render_loop.py" --socket "$sock" --frames 5 --how inline ||
  fail "render_loop.py --how inline"
# bench/python_submit.py: its rows, stubbed and through this coopd (each
# frame's output checked there)
for how in "" "--socket $sock"; do
  # shellcheck disable=SC2086
  rows=$("$python" "$src/bench/python_submit.py" $how --runs 3 --every-us 0 | grep -c '^python,')
  [ "$rows" = 2 ] || fail "python_submit.py $how: $rows rows"
done
stop_coopd
# Connection.buffer(wait=): a coopd whose 1 MiB arena one running job's
# copy holds (device_mb = 0: on CUDA too the buffers go into the arena);
# its sweep is one of the shipped kernels alone (the applications' too
# were a build of their own for this arena's size, a minute on PoCL)
start_coopd "$coopd" --kernels "$src/kernels" --set device.arena_mb=1 --set device.device_mb=0
"$python" "$src/tests/python/test_buffer_wait.py" "$sock" || fail "test_buffer_wait.py"
stop_coopd
# Connection.add_kernel, remove_kernel and reload wait out coopd's EBUSY
# while the author's last reload is less than [kernels]
# author_reload_interval_ms old (2 s here): examples/python/own_kernel.py's
# add, run and remove, then tests/python/test_kernel_wait.py. Root is not
# bound by the interval, so as root both run as nobody (uid 65534), from
# copies in $dir that it may read, on a socket open to it.
author=$(id -u) ex=$src/examples/python tp=$src/tests/python drop=
if [ "$author" = 0 ]; then
  author=65534 ex=$dir/py tp=$dir/py drop=1
  mkdir "$dir/py"
  cp -RL "$src/python/coop" "$libcoop" "$src/tests/python/checks.py" \
    "$src/tests/python/test_kernel_wait.py" "$src/examples/python/own_kernel.py" "$dir/py/" ||
    fail "copies for uid 65534"
  chmod -R a+rX "$dir"
fi
as_author() {
  if [ -n "$drop" ]; then
    COOP_LIBRARY=$dir/py/${libcoop##*/} PYTHONPATH=$dir/py "$python" -c 'import os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
os.execv(sys.executable, [sys.executable] + sys.argv[1:])' "$@"
  else
    "$python" "$@"
  fi
}
start_coopd "$coopd" --kernels "$src/kernels" --set kernels.authors="$author" \
  --set kernels.authored_dir="$dir/authored-wait" --set kernels.author_reload_interval_ms=2000
chmod 666 "$sock"
as_author "$ex/own_kernel.py" --socket "$sock" --n 1000 || fail "own_kernel.py, 2 s between reloads"
as_author "$tp/test_kernel_wait.py" "$sock" || fail "test_kernel_wait.py"
stop_coopd
finish
