"""The coop Python package against a running coopd (python_client.sh starts
it): sweep and render checked against what their kernels compute, a device
buffer's life cycle, errors, cancel, events, stats.

usage: test_client.py SOCKET   (COOP_LIBRARY and PYTHONPATH set by the caller)
"""
import errno
import mmap
import os
import pathlib
import re
import signal
import sys
import tempfile
import threading
import time

import numpy as np

import coop
from checks import check, finish, raises

sock = sys.argv[1]
t0 = time.monotonic()
c = coop.connect(sock)
check(c.info["workers"] >= 1, f"connected: {c.info['backend']}, {c.info['workers']} workers")
check(coop.socket_path(sock) == sock, "socket_path")
# help() says what each public call does: Buffer.write, Job.cancel,
# Connection.cancel and .stats, Prepared.close and Result.ok said nothing
undocumented = []
for name in coop.__all__:
    obj = getattr(coop, name)
    calls = [(name, obj)] if callable(obj) else []
    if isinstance(obj, type):
        calls += [(f"{name}.{m}", v) for m, v in vars(obj).items() if not m.startswith("_")]
    undocumented += [what for what, v in calls
                     if not (v.fget if isinstance(v, property) else v).__doc__]
check(not undocumented, f"every public call has a docstring: {undocumented or 'yes'}")
k = c.kernels()
check(k.get("sweep") == (True, ["buf<u32>", "u32", "u32"]), f"kernels: sweep {k.get('sweep')}")

# sweep: every element grows by `rounds` (kernels/sweep.cl)
a = np.arange(4096, dtype=np.uint32)
r = c.run("sweep", a, np.uint32(a.size), np.uint32(7), groups=1, cooperative=True)
check(r.state == "done" and np.array_equal(a, np.arange(4096, dtype=np.uint32) + 7),
      f"sweep inout: {r}")
# a connection that spins 2 ms before it sleeps for a reply (coop_set_spin)
with coop.connect(sock, spin_us=2000) as sc:
    sa = np.zeros(64, np.uint32)
    r = sc.run("sweep", sa, np.uint32(sa.size), np.uint32(2), groups=1, cooperative=True)
    check(r.state == "done" and bool((sa == 2).all()), f"sweep on a spinning connection: {r}")
big = np.zeros(1 << 20, np.uint32)  # 4 MiB: goes by memfd, not inline
c.run("sweep", coop.InOut(big), np.uint32(big.size), np.uint32(3), groups=2, cooperative=True)
check(bool((big == 3).all()), "sweep of 4 MiB (memfd)")

# arrays in memfds (coop.empty): passed as the memfd, the output written
# straight into them; the 4 MiB one and a small one that would travel inline
for size in (256, 1 << 20):
    sa = coop.zeros(size, np.uint32)
    check(isinstance(sa, coop.SharedArray) and not sa.any(), f"coop.zeros({size})")
    sa[:] = np.arange(size, dtype=np.uint32)
    r = c.run("sweep", sa, np.uint32(size), np.uint32(5), groups=1, cooperative=True)
    check(np.array_equal(sa, np.arange(size, dtype=np.uint32) + 5), f"sweep of coop.zeros({size})")
# a coop.empty whose memfd cannot be mapped (mmap's ENOMEM, stubbed): its
# memfd was closed at the error and again when the exception went,
# closing the file that had taken its number meanwhile (here the pipe's
# read end)


def no_room(*args, **kw):
    raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))


def pipe_after_failed_empty():
    real_mmap, mmap.mmap = mmap.mmap, no_room
    try:
        coop.empty(4096, np.uint8)
    except OSError:
        return os.pipe()
    finally:
        mmap.mmap = real_mmap
    return None


fds = pipe_after_failed_empty()
check(fds is not None, "coop.empty whose mapping fails: OSError")
if fds:
    try:
        os.write(fds[1], b"x")
        got = os.read(fds[0], 1)
    except OSError as ex:
        got = ex
    check(got == b"x", f"a pipe made after it works: {got!r}")
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
# more than this machine's memory and swap (2**40 float32: 4 TiB): its
# memfd takes pages only as they are written, so it was made and mapped,
# and filling it ran the machine out of memory, where np.empty refuses it
# at once. Now a MemoryError, before any memfd is made (nothing allocated)
nfd = len(os.listdir("/proc/self/fd"))
for what, fn in (("coop.empty(2**40)", lambda: coop.empty(1 << 40)),
                 ("coop.zeros((2**20, 2**20), np.uint32)",
                  lambda: coop.zeros((1 << 20, 1 << 20), np.uint32))):
    e = raises(MemoryError, fn, what)
    check(e is not None and "4398046511104 bytes (4096.0 GiB), more than this machine's memory "
          "and swap" in str(e), f"it says why: {e}")
check(len(os.listdir("/proc/self/fd")) == nfd, "no memfd left open")
# a shape whose size wraps NumPy's int64 product: "cannot reshape array of
# size 0 into shape" (or of size 1), not why
for shape in ((1 << 32, 1 << 32), (3, 1 << 62)):
    e = raises(ValueError, lambda: coop.empty(shape, np.float32), f"coop.empty({shape})")
    check(e is not None and "bytes, more than an array can hold" in str(e), f"it says why: {e}")
sm = coop.empty((8, 8), np.float32)
sm[:] = np.eye(8, dtype=np.float32) * 2
so = coop.empty((8, 8), np.float32)
sb = np.arange(64, dtype=np.float32).reshape(8, 8)
c.run("render", coop.In(sm), coop.In(sb), coop.Out(so), np.uint32(8), np.uint32(1))
check(np.array_equal(so, sb * 2), "render with coop.empty In and Out arrays")
part = sa[1:]  # not at the memfd's start: copied as an ordinary array
c.run("sweep", part, np.uint32(part.size), np.uint32(1), groups=1, cooperative=True)
check(sa[0] == 5 and sa[1] == 7, "a view past the memfd's start (the copying path)")

# render: out = a x b, n x n float32 (kernels/render.cl)
n = 16
rng = np.random.default_rng(1)
ma = rng.random((n, n), dtype=np.float32)
mb = rng.random((n, n), dtype=np.float32)
out = np.zeros((n, n), np.float32)
r = c.run("render", coop.In(ma), coop.In(mb), coop.Out(out), np.uint32(n), np.uint32(1),
          groups=2)
check(np.allclose(out, ma @ mb, rtol=1e-4), f"render in/in/out: {r.state}")

# device buffers: create from an array, sweep in place twice, read back, write, free
with c.buffer(np.full(1024, 5, np.uint32)) as buf:
    for _ in range(2):
        c.run("sweep", buf, np.uint32(1024), np.uint32(10), groups=1, cooperative=True)
    got = buf.read(np.empty(1024, np.uint32))
    check(bool((got == 25).all()), f"buffer: two sweeps in place -> {got[:3]}")
    buf.write(np.array([100, 200], np.uint32), offset=8)
    raw = buf.read(nbytes=16)
    check(np.array_equal(raw.view(np.uint32), [25, 25, 100, 200]), "buffer write at offset")
    bid = buf.id
    # a range moved by the job itself: written before it, read after it
    back = np.zeros(1024, np.uint32)
    c.run("sweep", buf.io(write=np.full(1024, 7, np.uint32), read=back), np.uint32(1024),
          np.uint32(3), groups=1, cooperative=True)
    check(bool((back == 10).all()), f"buffer io: written, swept, read -> {back[:3]}")
    e = raises(ValueError, lambda: buf.io(write=np.zeros(4, np.uint32), read=back), "io sizes")
    # the same with a coop.empty array: its memfd goes as it is (no copy)
    sh = coop.empty(1024, np.uint32)
    sh[:] = 20
    c.run("sweep", buf.io(write=sh, read=sh), np.uint32(1024), np.uint32(2), groups=1,
          cooperative=True)
    check(bool((sh == 22).all()), f"buffer io through a coop.empty memfd -> {sh[:3]}")
e = raises(ValueError, lambda: buf.read(), "read of a freed buffer")
z = c.buffer(64)
check(bool((z.read() == 0).all()) and z.size == 64, "buffer of zeros")
# made on ANY_DEVICE (the default), it names the device it is on (0), so
# that open_buffer(buf.id, buf.size, buf.device) reaches it
check(z.device == 0, f"buffer's device: {z.device}")
try:
    got = c.open_buffer(z.id, z.size, z.device).read(nbytes=4).tolist()
except (ValueError, coop.Error) as ex:
    got = ex
check(got == [0] * 4, f"open_buffer(buf.id, buf.size, buf.device): {got}")
z.free()
stale = c.open_buffer(bid, 1024)
e = raises(coop.Error, lambda: stale.read(nbytes=4), "read of a freed buffer id")
check(e is not None and e.code == coop.ENOJOB, f"its code: {e and e.name}")
# a kept buffer (keep=True) outlives its connection: a later one reaches it
# by its id and size (open_buffer), runs a job on it and frees it; one not
# kept went with its connection
with coop.connect(sock) as kc:
    kept = kc.buffer(np.full(256, 4, np.uint32), keep=True)
    gone = kc.buffer(np.full(256, 4, np.uint32))
    kid, ksize, gid = kept.id, kept.size, gone.id
# free() of the kept one through its closed connection says so (it did
# nothing and forgot the id: the buffer stayed, counted against the user's
# limits); of the other, nothing to do: it went with its connection
e = raises(ValueError, kept.free, "free() of a kept buffer whose connection closed")
check(e is not None and kept.id == kid and f"c.open_buffer({kid}, {ksize}).free()" in str(e),
      f"it keeps the id and says how to free it: {e}")
gone.free()
check(gone.id is None, "free() of a buffer not kept whose connection closed: nothing to do")
with coop.connect(sock) as kc:
    kb = kc.open_buffer(kid, ksize)
    check((kb.id, kb.size, kb.device) == (kid, 1024, 0), f"open_buffer: {kb}")
    kc.run("sweep", kb, 256, 3, cooperative=True)
    got = kb.read(np.empty(256, np.uint32))
    check(bool((got == 7).all()), f"a kept buffer, after its connection closed: a sweep on it "
          f"-> {got[:3]}")
    e = raises(coop.Error, lambda: kc.open_buffer(gid, 1024).read(nbytes=4),
               "a buffer not kept, after its connection closed")
    check(e is not None and e.code == coop.ENOJOB, f"its code: {e and e.name}")
    kb.free()
    e = raises(coop.Error, lambda: kc.open_buffer(kid, ksize).read(nbytes=4),
               "the kept buffer once freed")
    check(e is not None and e.code == coop.ENOJOB, f"its code: {e and e.name}")
    e = raises(ValueError, lambda: kc.open_buffer(kid, 0), "open_buffer of 0 bytes")
    check(e is not None and str(e) == "a device buffer needs at least one byte",
          f"its message: {e}")
raises(ValueError, lambda: kc.open_buffer(kid, ksize), "open_buffer on a closed connection")

# a prepared job (Connection.prepare): described once, submitted as a frame
# loop does; its arrays read at each submit and written at each result:
# plain arrays (copied) and a Buffer.io range through a coop.empty memfd
pa, pb, po = (np.zeros((n, n), np.float32) for _ in range(3))
pb[:] = mb
with c.prepare("render", coop.In(pa), coop.In(pb), coop.Out(po), np.uint32(n), np.uint32(1),
               groups=2) as frame:
    for f in range(3):
        pa[:] = ma * (f + 1)
        r = frame.run(timeout=20)
        check(r.ok and np.allclose(po, pa @ pb, rtol=1e-4), f"prepared render, frame {f}")
    jobs = {frame.submit().id for _ in range(2)}
    check(len(jobs) == 2, f"two submits of one prepared job: two jobs {sorted(jobs)}")
    for jid in jobs:
        c.wait(jid, timeout=20)
e = raises(ValueError, frame.submit, "submit of a closed prepared job")
with c.buffer(np.zeros(256, np.uint32)) as pbuf:
    io = coop.empty(256, np.uint32)
    frame = c.prepare("sweep", pbuf.io(write=io, read=io), np.uint32(256), np.uint32(4),
                      groups=1, cooperative=True)
    for f in range(3):
        io[:] = f * 10
        frame.run(timeout=20)
        check(bool((io == f * 10 + 4).all()), f"prepared sweep through Buffer.io, frame {f}")
    frame.close()

# numbers take the width the kernel's signature declares (docs/python.md,
# "Arguments"): plain ints, NumPy's int64 (what its arithmetic gives) and a
# 0-d array as sweep's u32s; a value that does not fit, a float or a bool
# for an integer, a number where a buffer goes, refused before anything is
# sent, naming the argument
w = np.arange(64, dtype=np.uint32)
c.run("sweep", w, w.size, 2, groups=1, cooperative=True)
check(np.array_equal(w, np.arange(64) + 2), "plain ints as sweep's u32s")
c.run("sweep", w, np.int64(64), np.array(3), groups=1, cooperative=True)
check(np.array_equal(w, np.arange(64) + 5), "np.int64 and a 0-d array as u32s")
before = c.stats()["submitted"]
e = raises(OverflowError, lambda: c.submit("sweep", w, 1 << 32, 1), "an int past u32")
check(e is not None and "argument 1" in str(e) and "u32" in str(e),
      "the OverflowError names argument 1 and its type")
raises(OverflowError, lambda: c.submit("sweep", w, -1, 1), "a negative int for a u32")
raises(TypeError, lambda: c.submit("sweep", w, 64, 1.5), "a float for a u32")
raises(TypeError, lambda: c.submit("sweep", w, 64, np.float32(1)), "np.float32 for a u32")
raises(TypeError, lambda: c.submit("sweep", w, 64, True), "a bool for a u32")
raises(TypeError, lambda: c.submit("sweep", 64, 64, 1), "a number where a buffer goes")
raises(TypeError, lambda: c.submit("sweep", w, 64, 1, 1), "a number past the last argument")
raises(OverflowError, lambda: c.prepare("sweep", w, 64, 1 << 40), "prepare: an int past u32")
# a misspelt option is named with the call it went to (it said "_job() got
# an unexpected keyword argument 'grups'")
for name, fn in (("run", lambda: c.run("sweep", w, 64, 1, grups=1)),
                 ("prepare", lambda: c.prepare("sweep", w, 64, 1, grups=1))):
    e = raises(TypeError, fn, f"{name}: a misspelt option")
    check(e is not None and str(e).startswith(f"{name}() got an unexpected keyword argument "
                                              "'grups' (its options are ")
          and "groups" in str(e), f"{name}'s TypeError names {name}() and the options: {e}")
check(c.stats()["submitted"] == before, "nothing was submitted for those")
# connect's timeout is how long every request waits for its reply: 0 was
# taken, and each request then failed ETIMEDOUT ("no reply to STATS within
# 0 ms"); None is the default (30 s), not forever
for t in (0, 0.0, -1, float("nan")):
    e = raises(ValueError, lambda: coop.connect(sock, timeout=t), f"connect's timeout {t}")
    check(e is not None and str(e).startswith("timeout must be None (the default, 30 s), inf "
                                              "(forever) or > 0 seconds"), f"it says why: {e}")
with coop.connect(sock, timeout=float("inf")) as ic:
    check(ic.stats()["ndevices"] >= 1, "connect's timeout inf: forever")
# a float type (no shipped kernel takes one: the conversion itself)
check(coop._scalar(0, 3, "k", ["f32"]) == np.float32(3.0)
      and type(coop._scalar(0, 0.1, "k", ["f64"])) is np.float64, "numbers as f32 and f64")
raises(OverflowError, lambda: coop._scalar(0, 1e39, "k", ["f32"]), "1e39 for an f32")
e = raises(coop.Error, lambda: c.submit("nosuchkernel", 1), "a number for no such kernel")
check(e is not None and e.code == coop.ENOKERNEL, f"its code: {e and e.name}")

# errors
e = raises(coop.Error, lambda: c.run("nosuchkernel", np.uint32(1)), "unknown kernel")
check(e is not None and e.code == coop.ENOKERNEL and e.code < 0 and e.message,
      f"its code {e and e.code} ({e and e.name}), message {e and e.message!r}")
before = c.stats()["submitted"]
raises(TypeError, lambda: c.submit("sweep", a[::2], np.uint32(1), np.uint32(1)),
       "non-contiguous array")
raises(TypeError, lambda: c.submit("sweep", "x", np.uint32(1), np.uint32(1)), "a str")
ro = np.zeros(4, np.uint32)
ro.flags.writeable = False
e = raises(TypeError, lambda: c.submit("sweep", ro, np.uint32(4), np.uint32(1)),
           "read-only inout")
check(e is not None and "coop.In(a)" in str(e), "it says how to pass it for reading")
# the element type the kernel declares (`args=data:buf<u32>`): np.arange's
# int64 or a float array would have been read as other words
e = raises(TypeError, lambda: c.submit("sweep", np.arange(64), 64, 1), "int64 for buf<u32>")
check(e is not None and "argument 0" in str(e) and "buf<u32>" in str(e)
      and "astype(np.uint32)" in str(e), f"its message: {e}")
raises(TypeError, lambda: c.submit("render", coop.In(np.zeros(64)), coop.In(np.zeros(64)),
                                   coop.Out(np.zeros(64, np.float32)), 4, 1), "f64 for buf<f32>")
raises(TypeError, lambda: c.submit("sweep", np.zeros(64, ">u4"), 64, 1), "big-endian words")
with c.buffer(np.zeros(64, np.uint32)) as iob:  # a Buffer.io's arrays are the kernel's too
    raises(TypeError, lambda: c.submit("sweep", iob.io(write=np.arange(32)), 64, 1),
           "an io's int64 write for buf<u32>")
    raises(TypeError, lambda: c.submit("sweep", iob.io(read=np.zeros(64, np.float32)), 64, 1),
           "an io's f32 read for buf<u32>")
check(c.stats()["submitted"] == before, "nothing was submitted for the argument errors")
s32 = np.zeros(64, np.int32)  # the same width, either sign: the same bits
c.run("sweep", s32, 64, 2, groups=1, cooperative=True)
check(bool((s32 == 2).all()), "an int32 array for buf<u32>")
raises(TypeError, lambda: c.submit("render", coop.In(sm), coop.In(sb), coop.Out(so), 8, 1,
                                   periodic=dict(period=100000, count=3)),
       "periodic with a misspelt key")
# its values without their names, or a key not a str: "sequence item 0:
# expected str instance, int found", naming no argument
for p in ((100000, 3), [100000, 3], {1: 2}):
    e = raises(TypeError, lambda: c.submit("render", coop.In(sm), coop.In(sb), coop.Out(so), 8, 1,
                                           periodic=p), f"periodic={p!r}")
    check(e is not None and str(e).startswith("periodic"), f"it names periodic: {e}")
raises(ValueError, lambda: c.submit("render", coop.In(sm), coop.In(sb), coop.Out(so), 8, 1,
                                    periodic=dict(period_us=-1, count=3)),
       "periodic with a negative period")
# ids, sizes, offsets and timeouts that C would wrap to huge unsigned ones
raises(ValueError, lambda: c.wait(-1), "wait for job -1")
raises(TypeError, lambda: c.cancel("1"), "cancel of a str")
raises(ValueError, lambda: c.run("sweep", w, 64, 1, groups=-1), "groups -1")
# the kernel's own kind when cooperative= is left out, taken by coopd (a
# sweep without cooperative=True was refused EARGS)
w[:] = 0
r = c.run("sweep", w, 64, 4)
check(r.state == "done" and (w == 4).all() and r.resizes > 0,
      f"sweep without cooperative= runs as a cooperative job: {r.state}, {w[:4]}")
# and without groups= on every worker of its device (it ran on one, never more)
check(r.m_initial == c.info["workers"] > 1,
      f"on every worker: {r.m_initial} of {c.info['workers']}")
r = c.run("sweep", w, 64, 1, device=0)
check(r.m_initial == c.info["workers"], f"device 0's workers: {r.m_initial}")
# a device coopd does not run: coopd's refusal
e = raises(coop.Error, lambda: c.run("sweep", w, 64, 1, device=c.stats()["ndevices"]),
           "a cooperative run on a device past the last")
check(e is not None and e.code == coop.EINVAL, f"its code: {e and e.name} {e}")
r = c.run("sweep", w, 64, 1, groups=1)
check(r.m_initial == 1, f"groups=1 given: {r.m_initial}")
r = c.run("render", np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32),
          8, 1)
check(r.state == "done" and r.m_initial == 1,
      f"render without cooperative= or groups= runs on one workgroup: {r.state}, {r.m_initial}")
# given, it must match: coopd's "submit it with the cooperative flag" in Python's words
e = raises(coop.Error, lambda: c.run("sweep", w, 64, 1, cooperative=False),
           "sweep with cooperative=False")
check(e is not None and e.code == coop.EARGS and "cooperative=True" in e.message,
      f"it names the argument: {e}")
raises(TypeError, lambda: c.run("sweep", w, 64, 1, cooperative="no"), 'cooperative="no"')
# a kind kept from an older list (an author's reload changed the kernel
# since; here the kept entry made stale by hand, where a real change costs
# a megakernel build) is not the kind the job runs as: coopd takes the
# kernel's own as it admits the job (it was refused "submit it with
# cooperative=True", a flag its caller never gave)
c5 = coop.connect(sock)
c5._sigs = dict(c5.kernels(), sweep=(False, ["buf<u32>", "u32", "u32"]))
w[:] = 0
r = c5.run("sweep", w, 64, 2)
check(r.state == "done" and (w == 2).all() and r.m_initial == c5.info["workers"],
      f"a stale kind kept: {r.state}, {r.m_initial} workgroups")
e = raises(coop.Error, lambda: c5.run("sweep", w, 64, 2, cooperative=False),
           "cooperative=False given: refused")
check(e is not None and e.code == coop.EARGS, f"its code: {e and e.name}")
c5.close()
# no coopd there: libcoop's hint names connect()'s path, not coopctl's --socket
e = raises(coop.Error, lambda: coop.connect("/nonexistent/coop.sock"), "connect to no socket")
check(e is not None and e.code == coop.ECONN and "check connect()'s path or COOP_SOCKET" in str(e)
      and "--socket" not in str(e), f"its message: {e}")
raises(ValueError, lambda: c.buffer(-5), "a buffer of -5 bytes")
raises(ValueError, lambda: c.buffer(0), "a buffer of 0 bytes")
raises(TypeError, lambda: c.buffer(3.5), "a buffer of a float")
# a list made int64 bytes (24 for [1, 2, 3]), which a u32 kernel read as 1, 0, 2, 0, 3, 0
e = raises(TypeError, lambda: c.buffer([1, 2, 3]), "a buffer of a list")
check(e is not None and "NumPy array" in str(e), f"it asks for an array: {e}")
# so does a device buffer's write (and io's write): [1, 2, 3] wrote 24
# bytes of int64, read back as u32 1, 0, 2, 0, 3, 0; an int wrote 8 bytes
wb = c.buffer(16)
for what, v in (("a list", [1, 2, 3]), ("an int", 5)):
    e = raises(TypeError, lambda: wb.write(v), f"write of {what}")
    check(e is not None and "NumPy array" in str(e) and "argument" not in str(e),
          f"it asks for an array, not as a job's argument: {e}")
    raises(TypeError, lambda: wb.io(write=v), f"io(write=) of {what}")
check(wb.read().view(np.uint32).tolist() == [0] * 4, "nothing written")
# bytes, a bytearray and a memoryview have bytes of their own: written as
# they are, as before lists were refused (they raised TypeError since)
for v in (b"\x01\0\0\0", bytearray(b"\x02\0\0\0"), memoryview(b"\x03\0\0\0")):
    wb.write(v, offset=4)
    check(wb.read().view(np.uint32).tolist() == [0, v[0], 0, 0], f"write of {type(v).__name__}")
    wb.write(np.zeros(4, np.uint32))
# read(out=, nbytes=) read out.nbytes and left nbytes unsaid
raises(ValueError, lambda: wb.read(out=np.zeros(2, np.uint8), nbytes=8), "read: out and nbytes")
e = raises(TypeError, lambda: wb.read(out=np.zeros(8, np.uint32)[::2]), "read into a strided out")
check(e is not None and "argument" not in str(e), f"not named a job's argument: {e}")
# an array of Python objects: its bytes are the interpreter's pointers
# (written, the device had the addresses; read into, Python crashed)
objs = np.array([object(), None], dtype=object)
for what, fn in (("write", lambda: wb.write(objs)), ("read", lambda: wb.read(out=objs)),
                 ("buffer", lambda: c.buffer(objs)),
                 ("argument", lambda: c.submit("sweep", objs, 2, 1, cooperative=True))):
    e = raises(TypeError, fn, f"{what} of an object array")
    check(e is not None and "Python objects" in str(e), f"it says why: {e}")
check(objs[1] is None and wb.read().view(np.uint32).tolist() == [0] * 4, "nothing moved")
# a memoryview of a format NumPy does not read ('N' a size_t, 'P' a
# pointer, as a ctypes array of c_void_p has): its bytes, not ValueError
for fmt in ("N", "P"):
    wb.write(memoryview(bytearray(np.array([7, fmt == "P"], np.uint64).tobytes())).cast(fmt))
    check(wb.read().view(np.uint64).tolist() == [7, fmt == "P"], f"write of a memoryview of {fmt}")
wb.free()
# an int past the range of the C type it goes to, where ctypes kept its low
# bits (groups 2**32 + 1 ran on 1 workgroup, a buffer of 2**64 + 64 bytes
# had 64, status of id 2**64 + 1 was job 1's), or a priority past
# -100..100: a ValueError naming the argument and the range; a wrong type
# (a bool included) a TypeError naming it, where ctypes raised its
# ArgumentError; a path an os.PathLike too
before = c.stats()["submitted"]
for what, fn in [
        ("groups", lambda: c.submit("sweep", w, 64, 1, cooperative=True, groups=(1 << 32) + 1)),
        ("priority", lambda: c.submit("sweep", w, 64, 1, cooperative=True,
                                      priority=(1 << 32) - 5)),
        ("device", lambda: c.submit("sweep", w, 64, 1, cooperative=True, device=1 << 32)),
        ("periodic period_us", lambda: c.submit("render", coop.In(sm), coop.In(sb), coop.Out(so),
                                                8, 1, periodic=dict(period_us=(1 << 32) + 1000,
                                                                    count=3))),
        ("a buffer's size", lambda: c.buffer((1 << 64) + 64)),
        ("a buffer's size", lambda: c.buffer(1 << 64)),
        ("device", lambda: c.buffer(64, device=1 << 32)),
        ("a buffer id", lambda: coop.Buffer(c, (1 << 64) + bid, 1024, 0)),
        ("a buffer id", lambda: c.open_buffer(-1, 1024)),
        ("a buffer's size", lambda: c.open_buffer(bid, 1 << 64)),
        ("device", lambda: c.open_buffer(bid, 1024, device=-1)),
        ("device", lambda: c.open_buffer(bid, 1024, device=1 << 31)),
        ("a job id", lambda: c.status(-1)),
        ("a job id", lambda: c.status((1 << 64) + 1)),
        ("a job id", lambda: c.cancel(1 << 64)),
        ("a job id", lambda: c.wait(1 << 64, timeout=0)),
        ("device", lambda: c.top(1 << 32)),
        ("mask", lambda: c.subscribe(print, mask=1 << 32)),
        ("spin_us", lambda: coop.connect(sock, spin_us=1 << 32)),
        ("timeout", lambda: coop.connect(sock, timeout=1e10)),
        ("shape", lambda: coop.empty(-4))]:
    e = raises(ValueError, fn, f"{what} out of its range")
    check(e is not None and str(e).startswith(what + " must be ") and ".." in str(e),
          f"it names {what} and the range")
for what, fn in [
        ("a job id", lambda: c.status("x")),
        ("device", lambda: c.submit("sweep", w, 64, 1, cooperative=True, device="0")),
        ("device", lambda: c.submit("sweep", w, 64, 1, cooperative=True, device=True)),
        ("priority", lambda: c.submit("sweep", w, 64, 1, cooperative=True, priority=-1.5)),
        ("kernel", lambda: c.submit(b"sweep", w, 64, 1, cooperative=True)),
        ("device", lambda: c.buffer(64, device="0")),
        ("device", lambda: c.top("0")),
        ("a buffer id", lambda: c.open_buffer("1", 1024)),
        ("a buffer's size", lambda: c.open_buffer(bid, 1024.0)),
        ("device", lambda: c.open_buffer(bid, 1024, device=None)),
        ("name", lambda: c.remove_kernel(b"sweep")),
        ("path", lambda: coop.connect(5))]:
    e = raises(TypeError, fn, f"{what} of a wrong type")
    check(e is not None and str(e).startswith(what + " must be "), f"it names {what}")
check(c.stats()["submitted"] == before, "nothing was submitted for those")
# a path as an os.PathLike too (a pathlib.Path)
check(coop.socket_path(pathlib.Path(sock)) == sock, "socket_path of a pathlib.Path")
with coop.connect(pathlib.Path(sock)) as pc:
    check(pc.info["workers"] == c.info["workers"], "connect to a pathlib.Path")
with c.buffer(64) as small:
    raises(ValueError, lambda: small.write(np.zeros(4, np.uint32), offset=-4), "a write at -4")
    raises(ValueError, lambda: small.write(np.zeros(32, np.uint32)), "a write past the end")
    e = raises(ValueError, lambda: small.read(offset=100), "a read past the end")
    check(e is not None and "100" in str(e), f"it names the offset: {e}")
    check(small.read(offset=60).size == 4, "a read of the last 4 bytes")
    raises(ValueError, lambda: small.io(write=np.zeros(4, np.uint32), offset=-8),
           "io at offset -8")
    raises(ValueError, lambda: small.io(read=np.zeros(4, np.uint32), offset=60),
           "io past the end")
e = raises(coop.Error, lambda: c.run("sweep", a, np.uint32(1), groups=1, cooperative=True),
           "too few arguments")
check(e is not None and e.code == coop.EARGS, f"its code: {e and e.name}")

# priority: lower for anyone, higher only as coopd allows (max_priority 0
# here), -100..100 at all
low = np.zeros(64, np.uint32)
c.run("sweep", low, np.uint32(low.size), np.uint32(3), groups=1, cooperative=True, priority=-5)
check(int(low[0]) == 3, f"a job of priority -5 ran: {low[0]}")
e = raises(coop.Error, lambda: c.run("sweep", low, np.uint32(low.size), np.uint32(1), groups=1,
                                     cooperative=True, priority=3), "priority above the bound")
check(e is not None and e.code == coop.EPERM and "at most 0" in e.message,
      f"its code {e and e.name}, message {e and e.message!r}")
e = raises(ValueError, lambda: c.run("sweep", low, np.uint32(low.size), np.uint32(1), groups=1,
                                     cooperative=True, priority=101), "priority 101")
check(e is not None and "-100..100" in str(e), f"it names the range: {e}")

# a timeout or wait below 1 ms is 1 ms in every call that takes one, as
# _ms says: a wait's first slice took it down to 0 again (wait(0.0004) and
# poll_events(0.0004) asked once, as 0 does), buffer(wait=0.0004) slept
# 50 ms between its asks. coopd's answers stubbed: a job still running, no
# event, no room, another reload running.
asked, slept, real_sleep = [], [], time.sleep


MS_ARG = {"coop_wait": 1, "coop_poll_events": 0}  # where the call's milliseconds go


def stub_call(fn, *args):
    name = fn.__name__
    asked.append((name, args[MS_ARG[name]] if name in MS_ARG else None))
    return {"coop_wait": coop.ETIMEDOUT, "coop_poll_events": 0}.get(name, coop.EBUSY)


def stub_sleep(s):
    slept.append(s)
    real_sleep(s)


c._call, time.sleep = stub_call, stub_sleep
try:
    for what, fn, exc, first in (
            ("wait(1, timeout=0.0004)", lambda: c.wait(1, timeout=0.0004), coop.Timeout,
             ("coop_wait", 1)),
            ("poll_events(0.0004)", lambda: c.poll_events(0.0004), None, ("coop_poll_events", 1)),
            ("buffer(64, wait=0.0004)", lambda: c.buffer(64, wait=0.0004), coop.Timeout,
             ("coop_buffer_create", None)),
            ("add_kernel(timeout=0.0004)", lambda: c.add_kernel(source="x", timeout=0.0004),
             coop.Error, ("coop_kernel_add", None))):
        del asked[:], slept[:]
        if exc is None:
            fn()
        else:
            e = raises(exc, fn, what)
            if first[0] != "coop_wait":
                check(e is not None and "0.0004 s" in e.message, f"it says how long: {e}")
        check(asked[:1] == [first] and all(0 < s <= 0.001 for s in slept),
              f"{what}: asked {asked[:3]}, slept {slept[:3]} (1 ms at most)")
finally:
    del c._call
    time.sleep = real_sleep
# run()'s negative or NaN timeout: its wait's ValueError came once the job
# was submitted, which ran on, its arrays kept
before = c.stats()["submitted"]
for t in (-1, float("nan")):
    e = raises(ValueError, lambda: c.run("sweep", np.zeros(64, np.uint32), 64, 1,
                                         cooperative=True, timeout=t), f"run(timeout={t})")
    check(e is not None and str(e).startswith("timeout must be "), f"it names timeout: {e}")
check(c.stats()["submitted"] == before, "nothing was submitted for them")

# a call on a closed connection says so before it looks at its arguments:
# status(0) was coop.Error ENOJOB, buffer([1]) a TypeError, wait(1,
# timeout=-1) "timeout must be ...": an argument to fix in a call that
# could not run at all
cx = coop.connect(sock)
xb = cx.buffer(64)
xj = cx.submit("sweep", np.zeros(64, np.uint32), 64, 1, cooperative=True)
xp = cx.prepare("sweep", np.zeros(64, np.uint32), 64, 1, cooperative=True)
cx.close()
for what, fn in (("status(0)", lambda: cx.status(0)), ("status('1')", lambda: cx.status("1")),
                 ("wait(1, timeout=-1)", lambda: cx.wait(1, timeout=-1)),
                 ("cancel(-1)", lambda: cx.cancel(-1)), ("submit(5)", lambda: cx.submit(5)),
                 ("run('sweep', timeout=-1)", lambda: cx.run("sweep", timeout=-1)),
                 ("prepare(5)", lambda: cx.prepare(5)), ("buffer([1])", lambda: cx.buffer([1])),
                 ("buffer(64, wait=-1)", lambda: cx.buffer(64, wait=-1)),
                 ("open_buffer(-1, 0)", lambda: cx.open_buffer(-1, 0)),
                 ("top('0')", lambda: cx.top("0")), ("stats()", cx.stats),
                 ("kernels()", cx.kernels), ("kernel_info()", cx.kernel_info),
                 ("add_kernel()", lambda: cx.add_kernel()),
                 ("remove_kernel(5)", lambda: cx.remove_kernel(5)),
                 ("reload(timeout=-1)", lambda: cx.reload(timeout=-1)),
                 ("subscribe(5)", lambda: cx.subscribe(5)),
                 ("poll_events(-1)", lambda: cx.poll_events(-1)),
                 ("job.wait(timeout=-1)", lambda: xj.wait(timeout=-1)),
                 ("job.cancel()", xj.cancel), ("job.status()", xj.status),
                 ("job.migrate('0')", lambda: xj.migrate("0")),
                 ("buffer.write([1])", lambda: xb.write([1])),
                 ("buffer.read(nbytes=-1)", lambda: xb.read(nbytes=-1)),
                 ("buffer.io()", xb.io), ("prepared.submit()", xp.submit),
                 ("prepared.run(timeout=-1)", lambda: xp.run(timeout=-1))):
    e = raises(ValueError, fn, f"{what} on a closed connection")
    check(e is not None and str(e) == "the connection is closed", f"it says so first: {e}")
xp.close()

# cancel: a sweep that would run for long, cancelled while it runs
events = []
# a callback that cannot be called: each event printed "'list' object is
# not callable" from inside whichever call read it
e = raises(TypeError, lambda: c.subscribe(events), "subscribe of a list")
check(e is not None and "callable" in str(e), f"its message: {e}")
c.subscribe(events.append)
long = np.zeros(1 << 16, np.uint32)
j = c.submit("sweep", long, np.uint32(long.size), np.uint32(1 << 30), groups=1,
             cooperative=True)
e = raises(coop.Timeout, lambda: j.wait(timeout=0.2), "wait with a timeout")
check(e is not None and e.code == coop.ETIMEDOUT, "Timeout carries ETIMEDOUT")
# status and top of the running sweep
st = j.status()
check(st["job"] == j.id and st["state"] == "running" and st["kernel"] == "sweep"
      and st["cooperative"] and not st["suspended"] and st["groups"] == 1 and st["device"] == 0
      and st["uid"] == os.getuid(), f"job.status: {st}")
check(any(s["job"] == j.id for s in c.status()), "status() lists it")
top = c.top()
check(len(top["workers"]) == c.info["workers"]
      and ("running", j.id) in top["workers"]
      and [(t["job"], t["kernel"], t["workers"]) for t in top["jobs"]] == [(j.id, "sweep", 1)],
      f"top: {top}")
e = raises(coop.Error, lambda: c.status(1 << 40), "status of no such job")
check(e is not None and e.code == coop.ENOJOB, f"its code: {e and e.name}")
# coop_status reads id 0 as "every job": status(0) returned the list, where
# wait(0) and cancel(0) get coopd's ENOJOB
for what, fn in (("status", lambda: c.status(0)), ("wait", lambda: c.wait(0, timeout=0)),
                 ("cancel", lambda: c.cancel(0))):
    e = raises(coop.Error, fn, f"{what} of job 0")
    check(e is not None and e.code == coop.ENOJOB and e.message.startswith("no job 0 "),
          f"its code and message: {e and e.name}, {e and e.message!r}")
# its id plus 2**64 is not its id (it was, kept to 64 bits)
raises(ValueError, lambda: c.cancel(j.id + (1 << 64)), "cancel of its id + 2**64")
raises(ValueError, lambda: c.status(j.id + (1 << 64)), "status of its id + 2**64")
raises(ValueError, lambda: j.migrate((1 << 32) + 1), "migrate to device 2**32 + 1")
raises(TypeError, lambda: j.migrate("1"), "migrate to a str")
check(j.status()["state"] == "running", "it runs on")
# migrate: this coopd runs one device, so there is nowhere to move it
e = raises(coop.Error, lambda: j.migrate(1), "migrate to a device coopd does not run")
check(e is not None and e.code == coop.EINVAL and "no device 1" in e.message,
      f"its code {e and e.name}, message {e and e.message!r}")
e = raises(coop.Error, lambda: j.migrate(0), "migrate to the device it is on")
check(e is not None and e.code == coop.ESTATE and "already on device 0" in e.message,
      f"its code {e and e.name}, message {e and e.message!r}")
j.cancel()
r = j.wait(timeout=20)
check(r.state == "cancelled", f"cancelled: {r}")
e = raises(coop.Error, r.raise_for_state, "raise_for_state of a cancelled job")
c.poll_events(0.1)
kinds = {ev["kind"] for ev in events if ev["job"] == j.id}
check("finished" in kinds, f"events of the cancelled job: {sorted(kinds)}")
s = c.stats()
check(s["cancelled"] >= 1 and s["ndevices"] == len(s["devs"]), "stats")

# Ctrl-C during run(): the wait ends within its slice and run() cancels the
# job it made; run()'s timeout cancels it too, as subprocess.run ends its
# child. A watchdog cancels the sweep from another connection after 10 s,
# so that a wait Ctrl-C cannot end fails here instead of hanging.
signal.signal(signal.SIGINT, signal.default_int_handler)  # ignored when started in the background
guard = coop.connect(sock)


def running_sweeps(conn):
    return [x["job"] for x in conn.status() if x["kernel"] == "sweep" and x["state"] == "running"]


def watchdog():
    for job in running_sweeps(guard):
        guard.cancel(job)


before = c.stats()["cancelled"]
dog = threading.Timer(10, watchdog)
dog.start()
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
raises(KeyboardInterrupt, lambda: c.run("sweep", long, long.size, 1 << 30, cooperative=True),
       "Ctrl-C during run()")
took = time.monotonic() - t0
check(took < 3, f"it ended the wait after {took:.1f} s")
e = raises(coop.Timeout, lambda: c.run("sweep", long, long.size, 1 << 30, cooperative=True,
                                       timeout=0.3), "run() past its timeout")
# it says what run() did: the job was cancelled, not left running
check(e is not None and isinstance(e, TimeoutError) and e.code == coop.ETIMEDOUT
      and re.fullmatch(r"timed out after 0\.3 s: job \d+ cancelled", e.message) is not None,
      f"a TimeoutError saying the job was cancelled: {e and e.message!r}")
dog.cancel()
for _ in range(100):
    if c.stats()["cancelled"] == before + 2:
        break
    time.sleep(0.1)
check(c.stats()["cancelled"] == before + 2 and not running_sweeps(c),
      f"run() cancelled both sweeps ({c.stats()['cancelled'] - before} cancelled)")
# the timed-out sweep's arrays: kept while libcoop might still write them,
# let go by the next submit once it has ended (nothing asked for it again,
# so a long-lived connection kept every timed-out run's arrays until closed)
gone = e is not None and int(re.search(r"job (\d+)", e.message).group(1))
check(gone in c._pending, "the timed-out job's arrays kept after run()")
c.run("sweep", np.zeros(64, np.uint32), 64, 1, cooperative=True)
check(gone not in c._pending and not c._abandoned,
      "the next submit let the cancelled job's arrays go")
# the same for poll_events(None) with no event coming (a job of c's after
# 10 s would end a wait Ctrl-C cannot)
guard.subscribe(lambda ev: None)
dog = threading.Timer(10, lambda: c.run("sweep", np.zeros(64, np.uint32), 64, 1,
                                        cooperative=True))
dog.start()
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
raises(KeyboardInterrupt, lambda: guard.poll_events(None), "Ctrl-C during poll_events(None)")
took = time.monotonic() - t0
check(took < 3, f"it ended the wait after {took:.1f} s")
dog.cancel()
guard.close()

# run()'s timeout against the job's end: a sweep that ends DONE between the
# wait's last slice and run()'s cancel (here: its first wait returns only
# once the job is done, as a timed out one). coopd answers that cancel OK,
# and run() said "job N cancelled", the output not written
real_wait, waits = coop.Job.wait, []


def late_wait(job, timeout=None):
    waits.append(timeout)
    if len(waits) > 1:
        return real_wait(job, timeout)
    for _ in range(1000):
        if job.status()["state"] not in ("queued", "running"):
            break
        time.sleep(0.01)
    raise coop.Timeout(coop.ETIMEDOUT, f"job {job.id} still running")


coop.Job.wait = late_wait
ra = np.zeros(64, np.uint32)
try:
    r = c.run("sweep", ra, 64, 4, cooperative=True, timeout=0.3)
except coop.Error as ex:
    r = ex
finally:
    coop.Job.wait = real_wait
check(isinstance(r, coop.Result) and r.state == "done" and bool((ra == 4).all()),
      f"a run whose job ended before its timeout's cancel: {r!r}, {ra[:2]}")

# Ctrl-C after coopd took run()'s job but before run() held it (here: as
# its Job is made, which the reply's id goes into), or again in the cancel
# that the first one's wait led to: the first left the job running, never
# cancelled or asked for again, the second left it out of the jobs the
# next submits ask for, its arrays kept until the connection closed
real_job, real_cancel = coop.Job, coop.Job.cancel


def job_interrupted(conn, job_id):
    coop.Job = real_job
    raise KeyboardInterrupt


def wait_interrupted(job, timeout=None):
    raise KeyboardInterrupt


def cancel_interrupted(job):
    real_cancel(job)
    raise KeyboardInterrupt


def interrupted_run(what, patch, unpatch):
    pend = set(c._pending)
    patch()
    try:
        raises(KeyboardInterrupt, lambda: c.run("sweep", long, long.size, 1 << 30,
                                                cooperative=True), what)
    finally:
        unpatch()
    new = set(c._pending) - pend
    jid = new.pop() if len(new) == 1 else None
    check(jid is not None and jid in c._abandoned,
          f"{what}: its job {jid} left to the next submits ({sorted(c._abandoned)})")
    if jid is None:
        return
    try:
        state = c.wait(jid, timeout=5).state
    except coop.Timeout:
        state = "still running"
        c.cancel(jid)
        c.wait(jid, timeout=20)
    check(state == "cancelled", f"{what}: run() cancelled its job: {state}")
    c.run("sweep", np.zeros(64, np.uint32), 64, 1, cooperative=True)
    check(not c._abandoned, f"{what}: the next submit let it go: {sorted(c._abandoned)}")


interrupted_run("Ctrl-C as run()'s Job is made",
                lambda: setattr(coop, "Job", job_interrupted),
                lambda: setattr(coop, "Job", real_job))


def patch_wait_cancel(w, k):
    coop.Job.wait, coop.Job.cancel = w, k


interrupted_run("Ctrl-C again in run()'s cancel",
                lambda: patch_wait_cancel(wait_interrupted, cancel_interrupted),
                lambda: patch_wait_cancel(real_wait, real_cancel))

# Ctrl-C while an event callback runs (here: the callback raises it, as
# Python's handler does when the signal lands there): ctypes printed it and
# dropped it, and run() waited on for the job's end; now the call that ran
# the callback raises it, and run() cancels its job (a watchdog cancels it
# from another connection after 10 s, so that the old way fails, not hangs)
with coop.connect(sock) as kc, coop.connect(sock) as kguard:
    dog = threading.Timer(10, lambda: [kguard.cancel(j) for j in running_sweeps(kguard)])
    dog.start()
    hit = []

    def interrupting(ev):
        if not hit:  # once: the wait below dispatches the job's last events
            hit.append(ev)
            raise KeyboardInterrupt

    kc.subscribe(interrupting)
    t0 = time.monotonic()
    raises(KeyboardInterrupt, lambda: kc.run("sweep", long, long.size, 1 << 30, cooperative=True),
           "Ctrl-C in an event callback during run()")
    took = time.monotonic() - t0
    dog.cancel()
    check(took < 3, f"it ended the wait after {took:.1f} s")
    kj = sorted(kc._abandoned)
    check(len(kj) == 1, f"run() left its job to the next submits: {kj}")
    if kj:
        check(kc.wait(kj[0], timeout=20).state == "cancelled", "run() cancelled its job")


# output; the submitting process's ordinary array stays as it was, a
# coop.empty one has it (coopd wrote into its memfd); the submitting
# connection, while open, still writes its array at its own wait
da, de, db = np.zeros(64, np.uint32), coop.zeros(64, np.uint32), np.zeros(64, np.uint32)
with coop.connect(sock) as dc:
    dj = dc.submit("sweep", da, 64, 5, cooperative=True, detached=True)
    dje = dc.submit("sweep", de, 64, 5, cooperative=True, detached=True)
with coop.connect(sock) as dc, coop.connect(sock) as dw:
    djb = dc.submit("sweep", db, 64, 5, cooperative=True, detached=True)
    got = [dw.wait(x.id, timeout=20).state for x in (dj, dje, djb)]
    check(got == ["done"] * 3 and not da.any() and bool((de == 5).all()) and not db.any(),
          f"detached jobs waited for from a new connection: {got}, {da[0]} {de[0]} {db[0]}")
    dc.wait(djb.id, timeout=20)
    check(bool((db == 5).all()), "the submitting connection's own wait writes its array")
# close() on one thread while another waits on the connection: the wait
# raises ValueError at its next slice. coop_disconnect freed what the wait
# was using: the waiter hung and the process aborted ("free(): corrupted
# unsorted chunks").
cc = coop.connect(sock)
cj = cc.submit("sweep", np.zeros(64, np.uint32), 64, 1 << 30, cooperative=True)
got = []
th = threading.Thread(target=lambda: got.append(
    raises(ValueError, cj.wait, "a wait whose connection another thread closes")))
th.start()
time.sleep(0.3)
cc.close()
th.join(5)
check(not th.is_alive() and got and got[0] is not None
      and str(got[0]) == "the connection is closed", f"the waiter ended: {got}")

# a connection inherited through fork(): the child's call raises ValueError
# and the parent's connection goes on. The child's job ran on it, and the
# parent's next call failed EPROTO ("sending to the daemon failed").
fc = coop.connect(sock)
pid = os.fork()
if pid == 0:
    code = 1
    try:
        fc.run("sweep", np.zeros(64, np.uint32), 64, 1, cooperative=True)
    except ValueError as ex:
        code = 0 if "fork" in str(ex) else 2
    except BaseException:  # noqa: BLE001
        code = 3
    os._exit(code)
check(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0,
      "a forked child's call on its parent's connection: ValueError naming the fork")
fa = np.zeros(64, np.uint32)
try:
    got = fc.run("sweep", fa, 64, 2, cooperative=True, timeout=30).state
except coop.Error as ex:
    got = ex
check(got == "done" and bool((fa == 2).all()), f"the parent's connection after it: {got}")
fc.close()

# a kernel of the caller's (python_client.sh names it an author): added from
# its source, described, run, refused with the compiler's log when broken,
# removed (docs/kernels.md, "Adding a kernel without root")
info = c.kernel_info()
check(info["sweep"]["owner"] is None and info["sweep"]["cooperative"]
      and [t for _, t in info["sweep"]["args"]] == ["buf<u32>", "u32", "u32"],
      f"kernel_info: sweep {info['sweep']}")
# the kernel of examples/python/own_kernel.py (y = a x + y over n words),
# from the file itself: the example's own add, run after this test, then
# builds the same kernel set (a cached build on PoCL)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "python"))
from own_kernel import SOURCE  # noqa: E402

k = c.add_kernel(source=SOURCE, file="axpy_u32.cl")
check(k == {"name": "axpy_u32", "cooperative": False,
            "args": [("y", "buf"), ("x", "buf"), ("a", "u32"), ("n", "u32")],
            "rules": ["n*4 <= len(y)", "n*4 <= len(x)"], "owner": os.getuid()},
      f"add_kernel: {k}")
check(c.kernel_info()["axpy_u32"] == k, "kernel_info lists it as added")
ty, tx = np.array([1, 2, 5], np.uint32), np.array([10, 20, 30], np.uint32)
c.run("axpy_u32", ty, coop.In(tx), np.uint32(3), np.uint32(3))
check(ty.tolist() == [31, 62, 95], f"the added kernel ran: {ty.tolist()}")
e = raises(coop.Error, lambda: c.run("axpy_u32", ty, coop.In(tx), np.uint32(3), np.uint32(4)),
           "its require rule")
check(e is not None and e.code == coop.EARGS and "n*4 <= len(y)" in e.message,
      f"its code: {e and e.name}")
broken = SOURCE.replace("name=axpy_u32", "name=broken").replace("void axpy_u32", "void broken")
broken = broken.replace("coop_at(y, i);", "coop_at(y, i)")
e = raises(coop.BuildError,
           lambda: c.add_kernel(source=broken, file=pathlib.PurePath("broken.cl")),
           "a kernel that does not compile (its file name a PurePath)")
# the author's file and line: broken.cl:10:.. from clang (PoCL), broken.cl(11) from NVRTC
at_file = re.compile(r"broken\.cl(:\d+|\(\d+\))")
check(e is not None and e.code == coop.EBUILD and at_file.search(e.log),
      f"its code {e and e.name}, a log at its file: {e and e.log[:200]!r}")
# uncaught, its text is what a traceback shows: the file and line too,
# not the log's first line alone ("... Compiler log:")
check(e is not None and at_file.search(str(e)), f"its text names its file: {str(e)[:200]!r}")
check("broken" not in c.kernels(), "the broken kernel is not registered")
# a file without its directive line, or with its rules before it: the log
# says what line 1 must be (the second read '"require" is not key=value')
for what, src in (("no directive", SOURCE.split("\n", 3)[3]),
                  ("its rules first", SOURCE.split("\n", 1)[1])):
    e = raises(coop.BuildError, lambda: c.add_kernel(source=src, file="nodir.cl"),
               f"a kernel file with {what}")
    check(e is not None and "nodir.cl:1: " in e.log and "//@coop name=NAME kind=" in e.log,
          f"its log says what line 1 must be: {e and e.log!r}")
# its signature changed by its author while another connection had asked
# for it: that connection's number goes as the old u32, coopd refuses it
# (EARGS) and the connection asks again, so the next submit takes the new
# u64; the author's own connection asks again at once
c2 = coop.connect(sock)
ty = np.array([1, 2, 5], np.uint32)
c2.run("axpy_u32", ty, coop.In(tx), 3, 3)
check(ty.tolist() == [31, 62, 95], f"plain ints for the added kernel's u32s: {ty.tolist()}")
c3, t3 = coop.connect(sock), np.zeros(3, np.uint32)
c3.run("axpy_u32", t3, coop.In(tx), 0, 3)
wide = SOURCE.replace("a:u32", "a:u64").replace(
    "coop_u32 a = coop_arg_u32(c, 2), n =", "coop_u64 a = coop_arg_u64(c, 2);\n  coop_u32 n =")
# from a file, its path a pathlib.Path
with tempfile.TemporaryDirectory() as td:
    (pathlib.Path(td) / "axpy_u32.cl").write_text(wide)
    c.add_kernel(pathlib.Path(td) / "axpy_u32.cl")
c.run("axpy_u32", ty, coop.In(tx), (1 << 32) + 1, 3)
check(ty.tolist() == [41, 82, 125], f"an int past u32 for its new u64: {ty.tolist()}")
# a number the old signature refuses and the new one takes: the kept one
# is asked again before refusing (an OverflowError "does not fit
# axpy_u32's u32" for every later call of that connection)
c3.run("axpy_u32", t3, coop.In(tx), (1 << 32) + 1, 3)
check(t3.tolist() == [10, 20, 30], f"another connection's int past the old u32: {t3.tolist()}")
e = raises(OverflowError, lambda: c3.run("axpy_u32", t3, coop.In(tx), 1 << 64, 3),
           "an int past the new u64 too")
check(e is not None and "axpy_u32's u64" in str(e), f"its message: {e}")
c3.close()
e = raises(coop.Error, lambda: c2.run("axpy_u32", ty, coop.In(tx), 1, 3),
           "the other connection's number as the old u32")
check(e is not None and e.code == coop.EARGS, f"its code: {e and e.name}")
c2.run("axpy_u32", ty, coop.In(tx), 1, 3)
check(ty.tolist() == [51, 102, 155], f"the other connection's next submit: {ty.tolist()}")
c2.close()
raises(ValueError, lambda: c2.kernels(), "a call on a closed connection")
c.remove_kernel("axpy_u32")
check("axpy_u32" not in c.kernels(), "remove_kernel")
e = raises(coop.Error, lambda: c.remove_kernel("axpy_u32"), "remove it again")
check(e is not None and e.code == coop.ENOKERNEL, f"its code: {e and e.name}")
# coopd's message names coopctl's list; from Python it names this package's
check(e is not None and "(Connection.kernels() lists them)" in e.message
      and "coopctl" not in str(e), f"its message: {e}")
e = raises(TypeError, lambda: c.add_kernel(), "add_kernel without path or source")
check(e is not None and str(e) == "add_kernel: give path or source", f"its message: {e}")
# the kernel's text where its path goes: "No such file or directory"
# naming the whole source as a file
e = raises(TypeError, lambda: c.add_kernel(SOURCE), "add_kernel of a source as its path")
check(e is not None and "source=" in str(e), f"it names source=: {e}")
e = raises(TypeError, lambda: c.add_kernel("x.cl", source=SOURCE), "add_kernel with both")
raises(TypeError, lambda: c.add_kernel("x.cl", file="y.cl"), "add_kernel with a path and file=")
check(e is not None and str(e) == "add_kernel: give path or source, not both",
      f"its message: {e}")
# a file= that is a path: coopd's message named coopctl, which sends a base
# name itself, not the argument to change
e = raises(coop.Error, lambda: c.add_kernel(source=SOURCE, file="sub/axpy_u32.cl"),
           "add_kernel with a file= that is a path")
check(e is not None and e.code == coop.EINVAL and "coopctl" not in str(e)
      and "add_kernel's file=" in e.message, f"its message: {e}")
c.reload()
check("sweep" in c.kernels(), "reload")

# A CSR whose last row ends past its edge array (row[5] = 9, four edges):
# the shipped graph kernels fail EFAULT naming that array. They cut such a
# row silently before, and ended DONE on the edges that fitted.
check("bfs" in c.kernels() and "psssp" in c.kernels(), "the graph kernels are loaded")
n, row = 5, np.array([0, 1, 2, 3, 4, 9], np.uint32)
edges, far = np.array([1, 2, 3, 4], np.uint32), 0xFFFFFFFF
e = raises(coop.Error, lambda: c.run(
    "bfs", 1, row, edges, np.array([0] + [far] * 4, np.uint32), coop.In(np.zeros(n, np.uint32)),
    np.zeros(n, np.uint32), coop.In(np.array([1, 0], np.uint32)), n, groups=2,
    cooperative=True), "bfs on a row past its edges")
check(e is not None and e.code == coop.EFAULT and "(col)" in e.message,
      f"bfs: {e and e.name}: {e and e.message}")
d = np.array([0] + [far] * 4, np.uint32)
e = raises(coop.Error, lambda: c.run(
    "psssp", 1, row, edges, np.ones(4, np.uint32), d, coop.In(d.copy()),
    coop.In(np.zeros(2, np.uint32)), n, groups=2, cooperative=True), "psssp on the same")
check(e is not None and e.code == coop.EFAULT and "(src)" in e.message,
      f"psssp: {e and e.name}: {e and e.message}")

# an empty path, or one with a NUL byte: libcoop took "" for the default
# socket ($COOP_SOCKET here: another coopd than a script's unset variable
# meant) and C read a path, or a kernel's name, up to its NUL
os.environ["COOP_SOCKET"] = sock
before = c.stats()["submitted"]
for what, fn in (("connect('')", lambda: coop.connect("")),
                 ("connect(b'')", lambda: coop.connect(b"")),
                 ("socket_path('')", lambda: coop.socket_path("")),
                 ("connect of a path with a NUL", lambda: coop.connect(sock + "\0.old")),
                 ("socket_path of a path with a NUL", lambda: coop.socket_path(sock + "\0.old")),
                 ("add_kernel(source=, file='')", lambda: c.add_kernel(source=SOURCE, file="")),
                 ("a kernel's name with a NUL",
                  lambda: c.submit("sweep\0x", np.zeros(64, np.uint32), 64, 1, cooperative=True))):
    e = raises(ValueError, fn, what)
    check(e is not None and ("empty" in str(e) or "NUL" in str(e)), f"it says why: {e}")
del os.environ["COOP_SOCKET"]
check(c.stats()["submitted"] == before, "nothing was submitted for them")

c.close()
e = raises(coop.Error, lambda: coop.connect(sock + ".none"), "connect to no daemon")
check(e is not None and e.code == coop.ECONN and sock in e.message, f"its code: {e and e.name}")
finish(f"{time.monotonic() - t0:.1f} s")
