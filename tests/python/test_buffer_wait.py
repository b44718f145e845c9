"""Connection.buffer(wait=) against a coopd with a 1 MiB arena
(python_client.sh starts it): a device buffer that finds the arena's room
held by a running job's copies is refused with EBUSY, waits a bounded time
and raises coop.Timeout, or waits until the job ends and is made then.

usage: test_buffer_wait.py SOCKET   (COOP_LIBRARY and PYTHONPATH set by the caller)
"""
import sys
import time

import numpy as np

import coop
from checks import check, finish, raises

sock = sys.argv[1]
c = coop.connect(sock)
WORDS = 150 * 1024  # the sweep's 600 KiB of the 1 MiB arena
BUF = 120 * 1024  # 480 KiB: within a user's half for device buffers, not beside the sweep
data = np.zeros(WORDS, np.uint32)
r = c.run("sweep", data, WORDS, 20, groups=1)  # one workgroup: its rounds time alike
per_round = max(r.times["exec_ns"] / 20, 1e4)
rounds = int(3e9 / per_round) + 20  # about 3 s
data[:] = 0
t0 = time.monotonic()
j = c.submit("sweep", data, WORDS, rounds, groups=1)
while j.status()["state"] == "queued":
    time.sleep(0.01)
e = raises(coop.Error, lambda: c.buffer(BUF * 4), "a buffer while the sweep's copy holds the room")
check(e is not None and e.code == coop.EBUSY
      and e.message.startswith("buffer create: no room for the buffer in the device arena now"),
      f"its code and message (no id of a buffer never made): {e and e.name}, {e and e.message}")
e = raises(coop.Timeout, lambda: c.buffer(BUF * 4, wait=0.3), "the same, waiting 0.3 s")
check(e is not None and "0.3 s" in str(e), f"it says how long it waited: {e}")
# a positive wait below 1 ms is 1 ms: cut to 0, it asked once and raised
# EBUSY as wait=0 does
raises(coop.Timeout, lambda: c.buffer(BUF * 4, wait=0.0004), "the same, waiting 0.4 ms")
b = c.buffer(np.full(BUF, 9, np.uint32), wait=120)
waited = time.monotonic() - t0
res = j.wait(timeout=0)
check(res.state == "done", f"the buffer was made once the sweep ended ({waited:.1f} s, "
      f"{rounds} rounds)")
check(bool((data == rounds).all()), "the sweep's rounds are all in its array")
check(bool((b.read(np.empty(BUF, np.uint32)) == 9).all()), "the buffer holds its data")
for w in (-1, float("nan")):
    e = raises(ValueError, lambda: c.buffer(64, wait=w), f"wait {w}")
    check(e is not None and str(e).startswith("wait must be "), f"it names wait: {e}")
b.free()
c.close()
finish()
