"""The examples of examples/python against a running coopd whose
[kernels] authors names the caller (python_client.sh starts it) where
their own runs do not reach: a run that fails.

usage: test_examples.py SOCKET SOURCE_DIR   (COOP_LIBRARY and PYTHONPATH set)
"""
import os
import subprocess
import sys

import coop
from checks import check, finish

sock, src = sys.argv[1], sys.argv[2]
ex = os.path.join(src, "examples", "python")


def example(name, *args):
    """(exit status, stderr) of examples/python/NAME with args."""
    p = subprocess.run([sys.executable, os.path.join(ex, name), *args], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, p.stderr


# own_kernel.py whose run fails (coopd refuses more workgroups than it has)
# after the add: the kernel stayed added, in coopd's store across its
# restarts, counted against the author's kernels
with coop.connect(sock) as c:
    groups = str(c.info["workers"] + 1)
rc, err = example("own_kernel.py", "--socket", sock, "--n", "1000", "--groups", groups)
check(rc != 0 and "groups must be" in err, f"own_kernel.py --groups {groups}: exit {rc}")
with coop.connect(sock) as c:
    left = "axpy_u32" in c.kernels()
check(not left, "own_kernel.py removed its kernel after the failed run")
if left:
    with coop.connect(sock) as c:
        c.remove_kernel("axpy_u32")
finish()
