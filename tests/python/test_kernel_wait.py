"""Connection.add_kernel, remove_kernel and reload against a coopd whose
[kernels] author_reload_interval_ms is 2000 (python_client.sh starts it,
after examples/python/own_kernel.py's add, run and remove there): coopd's
EBUSY, the user's last reload too recent, is waited out as coopctl waits
it, up to a timeout after which the EBUSY says how long it waited; Ctrl-C
ends the wait.

usage: test_kernel_wait.py SOCKET   (COOP_LIBRARY and PYTHONPATH set by the caller)
"""
import os
import signal
import sys
import threading
import time

import coop
from checks import check, finish, raises

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "python"))
from own_kernel import SOURCE  # noqa: E402

INTERVAL = 2.0  # python_client.sh's author_reload_interval_ms, in seconds
sock = sys.argv[1]
c = coop.connect(sock)
# the example's remove has just ended a reload: within the interval, a
# bounded wait gives up, saying how long it waited and coopd's reason
t0 = time.monotonic()
e = raises(coop.Error, lambda: c.add_kernel(source=SOURCE, file="axpy_u32.cl", timeout=0.3),
           "add_kernel within the interval, timeout 0.3 s")
took = time.monotonic() - t0
check(e is not None and e.code == coop.EBUSY and not isinstance(e, coop.Timeout)
      and e.message.startswith("gave up after 0.3 s: ")
      and "author_reload_interval_ms = 2000 ms" in e.message,
      f"EBUSY, how long it waited and coopd's reason: {e and e.name}: {e and e.message!r}")
check(0.3 <= took < INTERVAL, f"it gave up after {took:.2f} s")
e = raises(coop.Error, lambda: c.reload(timeout=0), "reload within the interval, timeout 0")
check(e is not None and e.code == coop.EBUSY and e.message.startswith("uid ")
      and "author_reload_interval_ms" in e.message,
      f"asked once: coopd's EBUSY as it is: {e and e.message!r}")
check("axpy_u32" not in c.kernels(), "nothing was added")
# a wrong timeout, before anything is sent
before = c.kernel_info()
e = raises(ValueError, lambda: c.remove_kernel("axpy_u32", timeout=-1), "timeout -1")
check(e is not None and str(e).startswith("timeout must be "), f"it names timeout: {e}")
e = raises(TypeError, lambda: c.add_kernel(source=SOURCE, timeout="5"), "timeout of a str")
check(e is not None and str(e).startswith("timeout must be "), f"it names timeout: {e}")
raises(TypeError, lambda: c.reload(timeout=True), "timeout of a bool")
check(c.kernel_info() == before, "no reload for those")

# by default the wait lasts as long as coopd asks: add, then remove at
# once, as the example does
k = c.add_kernel(source=SOURCE, file="axpy_u32.cl")
check(k["name"] == "axpy_u32", f"add_kernel waited out the interval: {k['name']}")
t0 = time.monotonic()
c.remove_kernel("axpy_u32")
took = time.monotonic() - t0
check("axpy_u32" not in c.kernels() and took > INTERVAL / 2,
      f"remove_kernel right after the add: removed after {took:.1f} s, the interval waited out")

# Ctrl-C ends the wait between two asks
signal.signal(signal.SIGINT, signal.default_int_handler)  # ignored when started in the background
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
raises(KeyboardInterrupt, lambda: c.reload(), "Ctrl-C while reload() waits")
took = time.monotonic() - t0
check(took < 1, f"it ended the wait after {took:.2f} s")
c.close()
finish()
