"""The examples of examples/python against a running coopd whose
[kernels] authors names the caller (python_client.sh starts it) where
their own runs do not reach: a run that fails, and numbers they cannot
run with.

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

# numbers the examples cannot run with: argparse's usage error (exit 2),
# before anything is sent. render_loop.py --frames 0 said "the last frame
# differs from a @ b", --fps 0 raised ZeroDivisionError and --fps -5 ran
# at "-5 fps"; graph_bfs.py --vertices 0 raised ZeroDivisionError and
# --vertices 1 SciPy's "density expected to be 0 <= density <= 1"
for name, args in (("render_loop.py", ["--frames", "0"]), ("render_loop.py", ["--fps", "0"]),
                   ("render_loop.py", ["--fps", "-5"]), ("render_loop.py", ["--fps", "nan"]),
                   ("render_loop.py", ["--n", "0"]), ("render_loop.py", ["--groups", "0"]),
                   ("graph_bfs.py", ["--vertices", "0"]), ("graph_bfs.py", ["--vertices", "1"]),
                   ("graph_bfs.py", ["--sources", "-1"]), ("graph_bfs.py", ["--groups", "0"]),
                   ("own_kernel.py", ["--n", "0"]), ("own_kernel.py", ["--groups", "-1"])):
    if name == "graph_bfs.py" and "--vertices" not in args:
        args = args + ["--vertices", "10"]
    rc, err = example(name, "--socket", sock, *args)
    check(rc == 2 and args[0] in err, f"{name} {' '.join(args)}: exit {rc}, "
          f"{err.strip().splitlines()[-1] if err.strip() else ''}")
finish()
