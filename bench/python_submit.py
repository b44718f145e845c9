#!/usr/bin/python3
"""python_submit.py: what a Python frame loop pays to submit its frame,
Connection.submit (the job described every frame) against a prepared job
(Connection.prepare, then Prepared.submit: docs/python.md, "A frame loop:
prepare once"), the two in turns.

    bench/python_submit.py [--socket PATH] [--runs N] [--every-us US] [--label L]

The frame is a render of 264 x 264 (kernels/render.cl) on device buffers:
its input written and its output read by the job itself through
coop.empty arrays (Buffer.io), as examples/python/render_loop.py does.

Without --socket no daemon is needed: libcoop's coop_submit is replaced by
a stub that only takes the time, so the figure is the Python side alone
(argument checks, the ctypes calls that describe the job) up to
coop_submit. With --socket PATH (a coopd that has kernels/render.cl) each
frame is submitted and waited for, and the figure is the whole frame:
submit -> result, as the loop sees it.

--every-us US: one frame every US us, the thread asleep in between, as a
frame loop's (default 16667: 60 fps; 0: back to back). Prints CSV: a
header, then one row per way: label, way, runs, p50, p90, p99, max (us),
every_us, daemon (0: the stub), host, Python and NumPy versions.
"""
import argparse
import ctypes
import os
import platform
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "python"))

import numpy as np  # noqa: E402

import coop  # noqa: E402

N = 264


class _Stub:
    """coop's libcoop handle with coop_submit answering at once."""

    def __init__(self, lib, stamps):
        self._lib, self._stamps = lib, stamps

    def coop_submit(self, conn, job, jid):
        self._stamps.append(time.perf_counter_ns())
        return 0

    def __getattr__(self, name):
        return getattr(self._lib, name)


def stub_connection():
    """A Connection that never connected, render's signature as coopd would
    list it, and device buffers by id alone."""
    c = coop.Connection.__new__(coop.Connection)
    c._h, c._pending, c._abandoned, c._event_fn, c.info = ctypes.c_void_p(1), {}, set(), None, {}
    c._lock, c._calls, c._closing = threading.Lock(), 0, None
    c._fork, c._pid = coop._forks[0], os.getpid()
    c._sigs = {"render": (False, ["buf", "buf", "buf", "u32", "u32"])}
    return (c, *(coop.Buffer(c, i, 4 * N * N, 0) for i in (1, 2, 3)))


def quantiles(xs):
    xs = sorted(xs)
    return [xs[min(len(xs) - 1, int(q * len(xs)))] for q in (0.5, 0.9, 0.99)] + [xs[-1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--socket", help="a coopd to submit to (default: none, coop_submit stubbed)")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--every-us", type=int, default=16667)
    ap.add_argument("--label", default="python")
    o = ap.parse_args()
    if o.runs < 1 or o.every_us < 0:
        ap.error("--runs must be at least 1 and --every-us at least 0")

    a, out = coop.empty((N, N)), coop.empty((N, N))
    a[:] = np.random.default_rng(0).random((N, N), dtype=np.float32)
    b = np.eye(N, dtype=np.float32)
    stamps = []
    if o.socket:
        c = coop.connect(o.socket, name="python_submit")
        da, db, dout = c.buffer(a.nbytes), c.buffer(b), c.buffer(out.nbytes)
    else:
        c, da, db, dout = stub_connection()
        real = coop._lib
        coop._lib = _Stub(real, stamps)
    args = (da.io(write=a), db, dout.io(read=out), np.uint32(N), np.uint32(1))
    prepared = c.prepare("render", *args)
    ways = {"submit": lambda: c.submit("render", da.io(write=a), db, dout.io(read=out),
                                       np.uint32(N), np.uint32(1)),
            "prepared": prepared.submit}
    times = {w: [] for w in ways}
    nxt = time.monotonic()
    for i in range(2 * o.runs + 2):  # the first of each way is not counted
        way = "submit" if i % 2 == 0 else "prepared"
        if o.every_us:
            nxt += o.every_us / 1e6
            time.sleep(max(0.0, nxt - time.monotonic()))
        a[0, 0] = i % 7
        t0 = time.perf_counter_ns()
        job = ways[way]()
        if o.socket:
            job.wait(timeout=60).raise_for_state()
            t1 = time.perf_counter_ns()
            if out[0, 0] != a[0, 0]:
                sys.exit(f"python_submit.py: frame {i}: the output is not the input's")
        else:
            t1 = stamps[-1]
        if i >= 2:
            times[way].append((t1 - t0) / 1e3)
    prepared.close()
    if o.socket:
        for d in (da, db, dout):
            d.free()
        c.close()
    else:
        coop._lib = real
        c._h = None
    print("label,way,runs,p50_us,p90_us,p99_us,max_us,every_us,daemon,host,python,numpy")
    for way, xs in times.items():
        q = quantiles(xs)
        print(f"{o.label},{way},{len(xs)},{q[0]:.1f},{q[1]:.1f},{q[2]:.1f},{q[3]:.1f},"
              f"{o.every_us},{1 if o.socket else 0},{platform.node()},"
              f"{platform.python_version()},{np.__version__}")


if __name__ == "__main__":
    main()
