"""prom_check.py's command line: a FILE argument is read, not the standard
input (it was ignored: a bad file passed as an empty text, a good one
failed its --require); more than one FILE, an unknown option, --require
without a family and a file that cannot be read are bad usage (status 2).

usage: test_prom_check.py PROM_CHECK_PY
"""
import os
import subprocess
import sys
import tempfile

from checks import check, finish

prom_check = sys.argv[1]


def run(*args):
    """prom_check.py's status, with an empty standard input."""
    return subprocess.run([sys.executable, prom_check, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True).returncode


with tempfile.TemporaryDirectory() as d:
    good, bad = os.path.join(d, "good.prom"), os.path.join(d, "bad.prom")
    with open(good, "w") as f:
        f.write("# TYPE coop_jobs_finished_total counter\ncoop_jobs_finished_total 3\n")
    with open(bad, "w") as f:
        f.write("# TYPE coop_jobs counter\ncoop_jobs 1\n")  # a counter without _total
    check(run(bad) == 1, "a bad FILE is refused")
    check(run("--require", "coop_jobs_finished_total", good) == 0,
          "a good FILE passes, with its family required")
    check(run(good, "--require", "coop_info") == 1, "a family FILE lacks is missing")
    check(run("-") == 0, "- is the standard input (empty: no samples)")
    check(run(good, bad) == 2, "two FILEs: bad usage")
    check(run("--bogus", good) == 2, "an unknown option: bad usage")
    check(run(good, "--require") == 2, "--require without a family: bad usage")
    check(run(os.path.join(d, "none.prom")) == 2, "a FILE that cannot be read: status 2")
finish("prom_check.py's command line")
