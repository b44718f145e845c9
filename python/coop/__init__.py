"""coop: drive coopd from Python with NumPy arrays (docs/python.md).

    import coop, numpy as np
    c = coop.connect()
    a = np.zeros(4096, np.uint32)
    c.run("sweep", a, a.size, 7, groups=1)

A thin layer over libcoop (ctypes): every call maps to one libcoop call
(a job's numbers take the widths coopd's kernel list declares, asked once),
errors raise coop.Error with libcoop's negative code and the daemon's
message.
"""
import ctypes
import fcntl
import functools
import math
import mmap
import os
import threading
import time
from collections.abc import Mapping

import numpy as np

from . import _capi

__all__ = ["connect", "socket_path", "empty", "zeros", "Connection", "Prepared", "Job", "Result",
           "Buffer", "In", "Out", "InOut", "SharedArray", "Error", "Timeout", "BuildError", "STATES",
           "EVENTS_ALL", "ANY_DEVICE"]

_lib = _capi.load()

ANY_DEVICE = -1
EVENTS_ALL = 0x1E
BUFFER_KEEP = 0x1
EVENT_RELEASED, EVENT_GATHERED, EVENT_STARTED, EVENT_FINISHED = 1, 2, 3, 4
STATE_QUEUED, STATE_RUNNING, STATE_DONE, STATE_CANCELLED, STATE_REFUSED, STATE_FAILED = range(1, 7)
STATES = {s: _lib.coop_state_name(s).decode() for s in range(1, 7)}


def _s(b):
    return b.decode("utf-8", "replace") if b else ""


class Error(Exception):
    """A libcoop or daemon error: code is negative, as in C (coop.ENOKERNEL,
    ...), name its symbol ("ENOKERNEL") and message the daemon's or
    libcoop's explanation (coop_errmsg), else coop_strerror's text."""

    def __init__(self, code, message=""):
        self.code = code
        self.name = _s(_lib.coop_err_name(code))
        self.message = message or _s(_lib.coop_strerror(code))
        super().__init__(f"{self.name} ({code}): {self.message}")


class Timeout(Error, TimeoutError):
    """COOP_ETIMEDOUT: a wait ran out before the job ended (Job.wait,
    run's timeout), a buffer(wait=) found no room in time, or a request
    had no reply within connect's timeout."""


class BuildError(Error):
    """A kernel add, remove or reload that coopd refused with a log: log is
    the checker's or compiler's whole text, at the author's file and line."""

    def __init__(self, code, message="", log=""):
        super().__init__(code, message)
        self.log = log

    def __str__(self):
        # message is the log's first line alone ("megakernel build failed
        # (OpenCL error -11). Compiler log:"): an uncaught BuildError's
        # traceback showed that and not the file and line; the whole log
        # follows it, as coopctl prints it
        s = super().__str__()
        rest = self.log[len(self.message):] if self.log.startswith(self.message) else self.log
        rest = rest.strip("\n")
        return f"{s}\n{rest}" if rest else s


# The codes of protocol/coop_errno.h as module constants, read from libcoop
# itself (coop_err_name) so that the list cannot fall behind the C one.
ERRORS = {}
for _code in range(-1, -128, -1):
    _name = _s(_lib.coop_err_name(_code))
    if not _name.startswith("E"):
        break
    globals()[_name] = _code
    ERRORS[_code] = _name
del _code, _name


# coopd's messages point its users at coopctl ("no kernel named x (coopctl
# kernels lists them)"): from Python the same list is Connection.kernels(),
# and the cooperative flag is submit's cooperative=.
_FOR_PYTHON = (("(coopctl kernels lists them)", "(Connection.kernels() lists them)"),
               ("`coopctl kernels` lists it", "Connection.kernels() lists it"),
               ("(coopctl sends the file's base name)",
                "(add_kernel's file=, or the base name of its path)"),
               ("submit it with the cooperative flag", "submit it with cooperative=True"),
               ("submit it without the cooperative flag", "submit it with cooperative=False"),
               ("check --socket or COOP_SOCKET", "check connect()'s path or COOP_SOCKET"))


def _errmsg(conn):
    """coop_errmsg, with coopctl's commands named as this package's calls."""
    msg = _s(_lib.coop_errmsg(conn))
    for ctl, py in _FOR_PYTHON:
        msg = msg.replace(ctl, py)
    return msg


def _check(rc, conn=None):
    if rc < 0:
        msg = _errmsg(conn)
        raise (Timeout if ERRORS.get(rc) == "ETIMEDOUT" else Error)(rc, msg)
    return rc


def _fn(name):
    """libcoop's function name, or Error naming the library that lacks it."""
    f = getattr(_lib, name, None)
    if f is None:
        raise Error(globals()["EVERSION"], f"{_lib._name} has no {name}: a newer libcoop is "
                    "needed")
    return f


def _check_log(rc, conn, log):
    """_check for the calls that return a log in *log (freed here): an error
    with a log raises BuildError carrying it."""
    text = ""
    if log.value:
        text = _s(ctypes.string_at(log.value))
        _lib.libc_free(log)
    if rc < 0 and text:
        raise BuildError(rc, _errmsg(conn), text)
    return _check(rc, conn)


def _with_elems(types, elems):
    """Type names with their element types: "buf" and "f32" give
    "buf<f32>"; elems None (not known) or shorter: as they are."""
    elems = elems if elems and len(elems) == len(types) else [""] * len(types)
    return [f"{t}<{e}>" if e else t for t, e in zip(types, elems)]


def _kernel_dict(ki, elems=None):
    """A coop_kernel_info as a dict; elems: its element type names."""
    k = ki.k
    types = _with_elems([_s(_lib.coop_type_name(k.types[a])) for a in range(k.nargs)], elems)
    return {"name": _s(k.name), "cooperative": bool(k.cooperative),
            "args": [(_s(ki.argnames[a].value), types[a]) for a in range(k.nargs)],
            "rules": [_s(ki.rules[r].value) for r in range(ki.nrules)],
            "owner": None if ki.owner == _capi.SHIPPED else ki.owner}


def _path(path, what):
    """path (str, bytes or os.PathLike) as the bytes C takes, None for
    None; TypeError naming what for another type. An empty path, or one
    with a NUL byte, is a ValueError, as os.open refuses them: libcoop took
    "" for the default socket (connect("") from a script's unset variable
    reached another coopd than the one meant) and C read a path up to its
    NUL ("coop.sock\\0x" was coop.sock)."""
    if path is None:
        return None
    try:
        b = os.fsencode(path)
    except TypeError:
        raise TypeError(f"{what} must be a str, bytes or os.PathLike path, not "
                        f"{type(path).__name__} {path!r}") from None
    if not b:
        raise ValueError(f"{what} is empty")
    if b"\0" in b:
        raise ValueError(f"{what} holds a NUL byte: {path!r}")
    return b


def _text(v, what):
    """str v as the bytes C takes; TypeError naming what otherwise,
    ValueError for a NUL in it (C read the name up to it)."""
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str, not {type(v).__name__} {v!r}")
    if "\0" in v:
        raise ValueError(f"{what} holds a NUL byte: {v!r}")
    return v.encode()


def socket_path(path=None):
    """The socket path connect(path) would use (coop_socket_path); path:
    str, bytes or os.PathLike."""
    buf = ctypes.create_string_buffer(4096)
    _check(_lib.coop_socket_path(_path(path, "path"), buf, len(buf)))
    return os.fsdecode(buf.value)


class _Dir:
    def __init__(self, array):
        self.array = array


class In(_Dir):
    """An array the kernel only reads: copied when the job is submitted (a
    coop.empty array: its memfd passed, nothing copied)."""


class Out(_Dir):
    """An array the kernel writes: filled when wait() sees the job DONE."""


class InOut(_Dir):
    """An array read and written (what a bare array means)."""


class _Memfd:
    """A memfd and its shared mapping: the memory of coop.empty's arrays."""

    def __init__(self, nbytes):
        self.size = max(1, nbytes)
        self.fd = os.memfd_create("coop-array", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)
            # sealed against shrinking: coopd's device process may then map
            # and pin it once (docs/daemon.md, "Device buffers")
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
            self.map = mmap.mmap(self.fd, self.size)
        except BaseException:
            # __del__ closes it too unless told: it ran when the exception
            # went, and closed whatever file had the number by then
            fd, self.fd = self.fd, -1
            os.close(fd)
            raise
        self.addr = np.frombuffer(self.map, np.uint8).ctypes.data

    def __del__(self):
        # the mapping goes with the last array that uses it
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1


class SharedArray(np.ndarray):
    """An array in a memfd (coop.empty): passed to a job as the memfd itself,
    without a copy, when it starts at the memfd's first byte."""

    def __array_finalize__(self, obj):
        self._coop_mem = getattr(obj, "_coop_mem", None)


def _memory():
    """This machine's memory and swap in bytes (None where not known)."""
    try:
        room = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
    try:
        with open("/proc/meminfo") as f:
            room += sum(int(line.split()[1]) * 1024 for line in f
                        if line.startswith("SwapTotal:"))
    except (OSError, ValueError, IndexError):
        pass
    return room


def empty(shape, dtype=np.float32):
    """An uninitialised array whose memory is a memfd shared with coopd:
    as a job argument (the whole array, or a view that starts at its first
    byte) libcoop passes the memfd itself (coop_job_buf_fd) and nothing is
    copied on this side; the daemon writes a job's output straight into it.
    Falls back to the copying path where libcoop lacks coop_job_buf_fd.
    More bytes than this machine's memory and swap is a MemoryError, as
    np.empty's: the memfd takes pages only as they are written, so it was
    made and mapped, and writing it ran the machine out of memory."""
    dtype = np.dtype(dtype)
    # NumPy's frombuffer reads a negative count as "all of it"
    shape = tuple(_int(d, "shape", (0, np.iinfo(np.intp).max))
                  for d in (shape if hasattr(shape, "__iter__") else (shape,)))
    # in Python's integers: NumPy's int64 product wrapped, and (3, 2**62)
    # failed "cannot reshape array of size 1 into shape"
    count = math.prod(shape)
    if count * dtype.itemsize > np.iinfo(np.intp).max:
        raise ValueError(f"shape {shape} of {dtype} is {count * dtype.itemsize} bytes, more than "
                         "an array can hold")
    room = _memory()
    if room is not None and count * dtype.itemsize > room:
        raise MemoryError(f"shape {shape} of {dtype} is {count * dtype.itemsize} bytes "
                          f"({count * dtype.itemsize / 2**30:.1f} GiB), more than this machine's "
                          f"memory and swap ({room / 2**30:.1f} GiB)")
    m = _Memfd(count * dtype.itemsize)
    a = np.frombuffer(m.map, dtype=dtype, count=count).reshape(shape).view(SharedArray)
    a._coop_mem = m
    return a


def zeros(shape, dtype=np.float32):
    """coop.empty, filled with zeros (a new memfd reads as zeros)."""
    return empty(shape, dtype)


def _memfd_of(a):
    m = getattr(a, "_coop_mem", None)
    if m is None or not hasattr(_lib, "coop_job_buf_fd") or a.ctypes.data != m.addr:
        return None
    return m


_SCALARS = {np.uint32: "u32", np.int32: "i32", np.uint64: "u64", np.int64: "i64",
            np.float32: "f32", np.float64: "f64"}


def _array(what, a, writable):
    """Array a as the bytes libcoop takes; what names it in messages: a
    job's "argument 2", or the device buffer call that has it ("write"),
    since "argument 0" sent a user of buffer() or read() looking for a
    kernel's argument."""
    arg = what.startswith("argument ")
    if not isinstance(a, np.ndarray):
        if arg:
            raise TypeError(f"{what}: In/Out/InOut take a NumPy array, not {type(a).__name__}")
        raise TypeError(f"{what} takes a NumPy array (the kernel sees its bytes: choose its "
                        f"dtype), not {type(a).__name__} {a!r:.60}")
    if not a.flags.c_contiguous:
        raise TypeError(f"{what}: the array is not C-contiguous (use np.ascontiguousarray)")
    # its bytes are pointers to Python objects: written, they gave the
    # kernel (and a buffer's reader) the interpreter's addresses; read
    # into, the device's bytes became pointers, and Python crashed
    if a.dtype.hasobject:
        raise TypeError(f"{what}: an array of dtype {a.dtype} holds Python objects, not bytes "
                        "(choose a numeric dtype)")
    if writable and not a.flags.writeable:
        raise TypeError(f"{what}: the array is read-only, and a bare array, Out or InOut "
                        "is written back (coop.In(a) passes it for the kernel to read only)"
                        if arg else f"{what}: the array is read-only, and it is written into")
    if a.nbytes == 0:
        raise ValueError(f"{what}: an empty array (buffers need at least one byte)")
    return a


def _bytes_of(what, a):
    """Array a (or a NumPy scalar: its dtype says its bytes, or an object
    with bytes of its own: bytes, bytearray, memoryview, array.array) that
    a device buffer's write takes. Anything else went through np.asarray:
    a list [1, 2, 3] wrote 24 bytes of int64, which a u32 kernel read as
    1, 0, 2, 0, 3, 0, and an int 8 bytes, as buffer() refuses them. The
    bytes of a bytes or a memoryview are what they hold, and were written
    so before: they still are."""
    if isinstance(a, np.generic):
        a = np.asarray(a)
    elif not isinstance(a, np.ndarray):
        try:
            m = memoryview(a)
        except TypeError:
            m = None  # no bytes of its own: _array says what it takes
        if m is not None:
            try:
                a = np.asarray(m)
            except ValueError:
                # a format NumPy does not read ('P', 'n', 'N': ctypes'
                # pointers and sizes): NumPy's "not a valid PEP 3118 buffer
                # format string" refused bytes the object holds all the same
                if not m.c_contiguous:
                    raise TypeError(f"{what}: the memoryview is not C-contiguous") from None
                a = np.frombuffer(m.cast("B"), np.uint8)
    return _array(what, a, False)


# The NumPy type a plain Python number takes where the kernel's signature
# declares a scalar.
_WIDTHS = {v: k for k, v in _SCALARS.items()}
_RANGES = {t: (int(np.iinfo(t).min), int(np.iinfo(t).max))
           for t in _SCALARS if issubclass(t, np.integer)}


def _scalar(i, a, kernel, types):
    """Number a (Python's or NumPy's, not already the NumPy scalar the
    kernel's signature declares at argument i: _describe passes that one as
    it is) as that scalar: its width is the kernel's, its value checked
    against it (an integer type takes integers only)."""
    if i >= len(types):
        raise TypeError(f"argument {i}: {kernel} takes {len(types)} arguments")
    t = types[i]
    dt = _WIDTHS.get(t)
    if dt is None:
        raise TypeError(f"argument {i}: {kernel} takes a buffer ({t}) there, not "
                        f"{type(a).__name__} {a!r}")
    if isinstance(a, (bool, np.bool_)):
        raise TypeError(f"argument {i}: {kernel} takes {t} there, not bool {a!r}")
    lim = _RANGES.get(dt)
    if lim:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"argument {i}: {kernel} takes {t} there, not "
                            f"{type(a).__name__} {a!r} (pass an int)")
        if not lim[0] <= int(a) <= lim[1]:
            raise OverflowError(f"argument {i}: {int(a)} does not fit {kernel}'s {t} "
                                f"({lim[0]}..{lim[1]})")
        return dt(int(a))
    v = float(a)
    if np.isfinite(v) and abs(v) > float(np.finfo(dt).max):
        raise OverflowError(f"argument {i}: {v!r} does not fit {kernel}'s {t}")
    return dt(v)


_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)

# A buffer's element type as the kernel declares it (`args=x:buf<f32>`,
# in the type names Connection.kernels() gives) -> the NumPy type its
# array must hold.
_ELEMS = {f"buf<{n}>": t for n, t in
          (("u8", np.uint8), ("i8", np.int8), ("u16", np.uint16), ("i16", np.int16),
           ("u32", np.uint32), ("i32", np.int32), ("u64", np.uint64), ("i64", np.int64),
           ("f32", np.float32), ("f64", np.float64))}


def _elem_fits(dt, want):
    """Whether an array of dtype dt holds the elements a buffer of want
    takes: that type, or an integer of the same width and either sign (the
    kernel reads the same bits), in this machine's byte order."""
    want = np.dtype(want)
    if dt == want:
        return True
    return (dt.isnative and dt.kind in "iu" and want.kind in "iu"
            and dt.itemsize == want.itemsize)


def _elem_check(i, a, kernel, types):
    """TypeError unless array a (argument i) holds the element type the
    kernel declares for its buffer there, if it declares one. types(fresh):
    the kernel's type names, asked again (fresh) before refusing, since an
    author may have changed the kernel since they were asked."""
    for fresh in (False, True):
        tl = types(fresh)
        want = _ELEMS.get(tl[i]) if i < len(tl) else None
        if want is None or _elem_fits(a.dtype, want):
            return
    w = want.__name__
    raise TypeError(f"argument {i}: {kernel} takes {tl[i]} there, not an array of {a.dtype} "
                    f"(a.astype(np.{w}) converts it; a.view(np.{w}) passes its bytes as they are)")


def _describe(args, kernel, types, fresh=False):
    """[(kind, value)] for args, checked before anything is sent; raises
    TypeError naming the argument's index. types(fresh=False): the
    kernel's argument type names (the connection keeps them; fresh: asked
    again). fresh: the kept ones were just asked again."""
    out = []
    tl = None
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            if a.ndim:
                out.append(("inout", _array(f"argument {i}", a, True)))
                _elem_check(i, a, kernel, types)
                continue
            a = a[()]  # a 0-d array: its scalar
        if isinstance(a, _NUMBERS):
            if tl is None:
                tl = types(False)
            # the NumPy scalar the kernel takes there, as it is (the
            # common case, kept short), else converted and checked
            v = a if i < len(tl) and _WIDTHS.get(tl[i]) is type(a) else None
            try:
                v = _scalar(i, a, kernel, tl) if v is None else v
            except (TypeError, OverflowError):
                # the kept signature may be older than the kernel, which its
                # author changed from another connection: every later call
                # was refused by the old one until coopd refused one. Only
                # coopd's own refuses; every argument again against it.
                if fresh or types(True) == tl:
                    raise
                return _describe(args, kernel, types, True)
            out.append((_SCALARS[type(v)], v))
        elif isinstance(a, Buffer):
            if a.id is None:
                raise ValueError(f"argument {i}: the device buffer was freed")
            out.append(("buffer", a))
        elif isinstance(a, _BufferIO):
            if a.buf.id is None:
                raise ValueError(f"argument {i}: the device buffer was freed")
            out.append(("buffer_io", a))
            # the arrays it moves hold what the kernel reads there, as a
            # bare array's do
            for arr in (a.write, a.read):
                if arr is not None:
                    _elem_check(i, arr, kernel, types)
        elif isinstance(a, _Dir):
            kind = {In: "in", Out: "out", InOut: "inout"}[type(a)]
            out.append((kind, _array(f"argument {i}", a.array, kind != "in")))
            _elem_check(i, a.array, kernel, types)
        else:
            raise TypeError(f"argument {i}: cannot pass {type(a).__name__} to a kernel "
                            "(numbers, NumPy arrays, In/Out/InOut, device buffers)")
    return out


def _bits(t):
    """The range of C integer type t (a ctypes type) as (lo, hi)."""
    n = 8 * ctypes.sizeof(t)
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t(-1).value < 0 else (0, (1 << n) - 1)


# The ranges of the C types an integer argument goes to: ctypes would
# silently keep its low bits.
_C_INT, _C_UINT = _bits(ctypes.c_int), _bits(ctypes.c_uint)
_U32, _U64, _SIZE = _bits(ctypes.c_uint32), _bits(ctypes.c_uint64), _bits(ctypes.c_size_t)


def _int(v, what, lim):
    """v as an int in lim, (lo, hi), the range of the C type it goes to;
    TypeError naming what for another type (bool included: True is not a
    count), ValueError naming what and the range for a value C would
    wrap."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(v).__name__} {v!r}")
    v = int(v)
    if not lim[0] <= v <= lim[1]:
        raise ValueError(f"{what} must be in {lim[0]}..{lim[1]}, not {v}")
    return v


def _count(v, what, lim=_U64):
    """v as an int that goes to a C unsigned (a job id or buffer id, u64
    by default; a size or an offset, size_t; a u32): _int."""
    return _int(v, what, lim)


def _ms(timeout, what="timeout", lim=None, positive=False):
    """A timeout in seconds (None or inf: forever) as libcoop's
    milliseconds (-1: forever; a positive one at least 1); lim: the most
    milliseconds the C call takes (None: the caller waits in slices, any
    finite number). positive: 0 is refused too, and None is libcoop's
    default (connect's timeout, which every request waits: 0 ms timed each
    of them out at once)."""
    if timeout is None:
        return -1
    none = "None (the default, 30 s), inf (forever)" if positive else "None (forever)"
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, (int, float, np.integer,
                                                                          np.floating)):
        raise TypeError(f"{what} must be {none} or a number of seconds, not "
                        f"{type(timeout).__name__} {timeout!r}")
    if not (timeout > 0 if positive else timeout >= 0):
        raise ValueError(f"{what} must be {none} or {'>' if positive else '>='} 0 seconds, not "
                         f"{timeout!r}")
    if timeout == float("inf"):
        return -1
    # a positive timeout below 1 ms is 1 ms: cut to 0 it was "ask once"
    # (buffer(wait=0.0004) never asked again)
    ms = max(int(timeout * 1000), 1 if timeout > 0 else 0)
    if lim is not None and ms > lim:
        raise ValueError(f"{what} must be {none} or 0..{lim / 1000} seconds"
                         f"{' (0 excluded)' if positive else ''}, not {timeout!r}")
    return ms


class Result:
    """How a job ended (struct coop_result): state ("done", "cancelled",
    "refused", "failed"), error (0 or a negative code) and message, the
    timestamps (ns, daemon's CLOCK_MONOTONIC) and the cooperative counters."""

    def __init__(self, r):
        self.job = r.job
        self.state = STATES.get(r.state, str(r.state))
        self.state_code = r.state
        self.device = r.device
        self.error = r.error
        self.message = _s(r.message)
        self.times = {n: getattr(r.t, n) for n, _ in _capi.Times._fields_}
        for n in ("m_initial", "m_min", "m_max", "kills", "forks", "resizes", "instances",
                  "misses"):
            setattr(self, n, getattr(r, n))
        self.instances_list = [
            (STATES.get(r.inst[k].state, str(r.inst[k].state)),
             {n: getattr(r.inst[k].t, n) for n, _ in _capi.Times._fields_})
            for k in range(r.ninst)]

    @property
    def ok(self):
        """Whether the job ended DONE."""
        return self.state_code == STATE_DONE

    def raise_for_state(self):
        """Error unless the job ended DONE (ECANCELED for a cancelled one)."""
        if not self.ok:
            code = self.error or (globals()["ECANCELED"] if self.state_code == STATE_CANCELLED
                                  else globals()["EFAILED"])
            raise Error(code, self.message or f"job {self.job} {self.state}")
        return self

    def __repr__(self):
        return f"<coop.Result job={self.job} {self.state} error={self.error}>"


# How many fork()s separate this process from the one that imported coop.
# A child shares its parent's connections as they were at the fork: their
# socket, the ring shared with coopd and libcoop's state. A child's job ran
# on them and the parent's next call failed EPROTO ("sending to the daemon
# failed"), so a connection serves the process that made it (Connection._call).
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))

# The longest one coop_wait of Job.wait: how soon Ctrl-C ends a wait.
_WAIT_SLICE_MS = 200
# How long a kernel add, remove or reload that coopd answered EBUSY sleeps
# before it asks again (coopctl's busy_again sleeps as long).
_AUTHOR_RETRY_S = 0.2


class _Deadline:
    """When a wait of timeout seconds ends: every call that takes a timeout
    or a wait (a job's wait, run, poll_events, buffer's wait=, add_kernel,
    remove_kernel and reload) counts it so. The value is _ms's: None or inf
    for ever, 0 "ask once", a positive one below 1 ms 1 ms; a negative or
    NaN one a ValueError naming what. left() rounds up, as _ms does: the
    wait's first slice took the 1 ms down to 0 again (wait(0.0004) asked
    once, as wait(0)), and buffer(wait=0.0004) slept its 50 ms between two
    asks."""

    def __init__(self, timeout, what="timeout"):
        self.ms = _ms(timeout, what)
        self.end = None if self.ms < 0 else time.monotonic() + self.ms / 1000

    def left(self):
        """The whole milliseconds left (None: for ever; 0: none)."""
        if self.end is None:
            return None
        return max(0, math.ceil((self.end - time.monotonic()) * 1000))

    def again(self, every):
        """After an ask that is to be repeated: sleeps until the next one,
        every seconds or what is left, and True; False once no time is
        left (at once for 0)."""
        left = self.left()
        if left == 0:
            return False
        time.sleep(every if left is None else min(every, left / 1000))
        return True


def _in_slices(timeout, call, again):
    """call(ms) with ms at most _WAIT_SLICE_MS, again while again(its
    result) says so and timeout (seconds; None: for ever) has time left;
    the last result. Python runs its signal handlers only between two
    calls into libcoop, and one call that waited for ever kept Ctrl-C out."""
    d = _Deadline(timeout)
    left = None if d.ms < 0 else d.ms  # the first slice: as asked
    while True:
        r = call(_WAIT_SLICE_MS if left is None else min(left, _WAIT_SLICE_MS))
        if not again(r) or (left is not None and left <= _WAIT_SLICE_MS):
            return r
        left = d.left()


def _run(conn, submit, timeout):
    """The Result of the job submit(jid) submits on conn (its id written
    into the c_uint64 jid as soon as coopd has it) once it ended DONE, else
    coop.Error; a wait cut short (Ctrl-C, the timeout) cancels it first, as
    subprocess.run ends its child: the caller of run() never had the job to
    cancel. The timeout's coop.Timeout then says so ("timed out after 0.5
    s: job 7 cancelled"), not the wait's "job 7 still running", unless the
    job had ended by itself before the cancel reached it: then its Result,
    or its Error, as a wait that saw it end.
    A Ctrl-C anywhere from coopd's reply to the submit on is the wait's:
    one that came before run() held the Job (as the reply was read, or
    between the submit and the wait) left the job running, never cancelled
    and never asked for again, and one in the cancel left it unregistered
    (_abandoned) with its arrays kept until the connection closed.
    A negative or NaN timeout is refused before anything is submitted: its
    wait's ValueError left the job running and its arrays kept."""
    _ms(timeout)
    jid = ctypes.c_uint64()
    try:
        r = submit(jid).wait(timeout)
    except (KeyboardInterrupt, Timeout) as e:
        if not jid.value:  # nothing submitted (the submit's own ETIMEDOUT)
            raise
        conn._abandoned.add(jid.value)  # first: its arrays let go once it ends (_reap)
        job = Job(conn, jid.value)
        try:
            job.cancel()
            what = "cancelled"
        except Error as c:  # the connection failed, say
            what = f"not cancelled: {c.message}"
        if isinstance(e, Timeout):  # only a finite timeout ends a wait so
            # coopd answers the cancel of a job that has ended as it answers
            # any other: one that ended DONE between the wait's last slice
            # and the cancel was reported cancelled, its output not written
            try:
                r = job.wait(0)
                conn._abandoned.discard(job.id)
            except Error:  # still running: it leaves at its next offer or poll
                r = None
            if r is None or r.state_code == STATE_CANCELLED:
                raise Timeout(e.code, f"timed out after {timeout:g} s: job {job.id} "
                              f"{what}") from None
            return r.raise_for_state()
        raise
    return r.raise_for_state()


def _when_open(method):
    """method, which first raises the ValueError of a closed connection (or
    of one made before a fork) and only then looks at its arguments: a bad
    one was refused by its own error before (status(0) on a closed
    connection was coop.Error ENOJOB, buffer([1]) a TypeError), which sent
    its caller to fix an argument of a call that could not run at all."""

    @functools.wraps(method)
    def call(self, *args, **kw):
        getattr(self, "conn", self)._open()
        return method(self, *args, **kw)
    return call


class Job:
    """A submitted job. Its arrays are kept alive by its connection until a
    wait() has received its result (libcoop writes the output into them
    then), even when the Job object itself is dropped."""

    def __init__(self, conn, job_id):
        self.conn = conn
        self.id = _count(job_id, "a job id")
        self.result = None

    def wait(self, timeout=None):
        """The Result once the job has ended; timeout in seconds (None:
        forever, 0: just ask). coop.Timeout while it runs. Ctrl-C
        (KeyboardInterrupt) ends the wait within _WAIT_SLICE_MS; the job
        runs on (cancel() ends it)."""
        if self.result is not None:
            return self.result
        self.conn._open()  # closed: ValueError, before the timeout is looked at
        r = _capi.Result()
        timedout = globals()["ETIMEDOUT"]
        rc = _in_slices(timeout, lambda ms: self.conn._call(_lib.coop_wait, self.id, ms,
                                                            ctypes.byref(r)),
                        lambda rc: rc == timedout)
        _check(rc)
        try:
            self.result = Result(r)
        finally:
            _lib.coop_result_free(ctypes.byref(r))
        self.conn._pending.pop(self.id, None)
        return self.result

    @_when_open
    def cancel(self):
        """Asks coopd to cancel the job (coop_cancel) and returns: it leaves
        the device at its next offer or poll, and wait() then gives its
        cancelled Result. A job that has ended already stays as it ended,
        and the cancel returns all the same: wait() says how it ended."""
        _check(self.conn._call(_lib.coop_cancel, self.id))

    @_when_open
    def status(self):
        """Its status now, as Connection.status describes it (coop_status)."""
        return self.conn.status(self.id)

    @_when_open
    def migrate(self, device):
        """Moves this cooperative job to another device: it resumes there
        where it stopped, once a cooperative slot is free there, and stays
        there (docs/daemon.md, "Moving jobs between devices"). Returns once
        the move is asked."""
        device = _count(device, "device", _C_UINT)
        _check(self.conn._call(_lib.coop_migrate, self.id, device))

    def __repr__(self):
        return f"<coop.Job {self.id}>"


class Buffer:
    """Memory on a device that stays there between jobs (coop_buffer_*).
    Pass it as a job argument: the kernel uses it in place."""

    def __init__(self, conn, buffer_id, size, device, keep=False):
        self.conn = conn
        self.id = _count(buffer_id, "a buffer id")
        self.size = _count(size, "a buffer's size", _SIZE)
        self.device = device
        self.keep = keep  # it outlives its connection (COOP_BUFFER_KEEP)

    @_when_open
    def write(self, array, offset=0):
        """Writes the bytes of array at offset (coop_buffer_write): a NumPy
        array or scalar (its dtype says its bytes), or bytes, a bytearray or
        a memoryview (theirs); a list or an int is a TypeError."""
        a = _bytes_of("write", array)
        offset = self._range(offset, a.nbytes)
        _check(self.conn._call(_lib.coop_buffer_write, self._live(), offset, a.ctypes.data,
                               a.nbytes))

    @_when_open
    def read(self, out=None, nbytes=None, offset=0):
        """Into out (a C-contiguous array, its whole size), or a new uint8
        array of nbytes (default: the rest of the buffer)."""
        offset = _count(offset, "offset", _SIZE)
        n = None if nbytes is None else _count(nbytes, "nbytes", _SIZE)
        if out is None:
            n = self.size - offset if n is None else n
            self._range(offset, n)  # before the allocation
            out = np.empty(n, np.uint8)
        else:
            _array("read's out", out, True)
            # out's size is the read's: an nbytes beside it was passed over
            if n is not None and n != out.nbytes:
                raise ValueError(f"read: nbytes is {n}, out has {out.nbytes} bytes (the read "
                                 "fills out; give one of them)")
            self._range(offset, out.nbytes)
        _check(self.conn._call(_lib.coop_buffer_read, self._live(), offset, out.ctypes.data,
                               out.nbytes))
        return out

    @_when_open
    def io(self, write=None, read=None, offset=0):
        """This buffer as a job argument whose job moves bytes offset.. of
        it itself (coop_job_buffer_io): array `write` written there before
        the job's first task, and the same range read into array `read`
        when wait() sees the job DONE; one request each way for a frame's
        input and output instead of write(), the job and read()."""
        if write is None and read is None:
            raise ValueError("io: an array to write, to read into, or both")
        w = None if write is None else _bytes_of("io's write", write)
        r = None if read is None else _array("io's read", read, True)
        if w is not None and r is not None and w.nbytes != r.nbytes:
            raise ValueError(f"io: write has {w.nbytes} bytes, read {r.nbytes}: one range")
        offset = self._range(offset, (w if w is not None else r).nbytes)
        return _BufferIO(self, w, r, offset)

    def free(self):
        """Frees it. Once its connection has closed, one not kept went with
        it (nothing to do); a kept one stays until a free() on a connection
        of this user's: ValueError saying so, the id kept (a silent return
        forgot the id and left the buffer counted against the user's
        limits)."""
        if self.id is None:
            return
        if not self.conn._h:
            if self.keep:
                dev = f", {self.device}" if self.device else ""
                raise ValueError(f"the connection is closed and device buffer {self.id} was kept: "
                                 f"free it from another connection, c.open_buffer({self.id}, "
                                 f"{self.size}{dev}).free()")
            self.id = None
            return
        bid, self.id = self.id, None
        _check(self.conn._call(_lib.coop_buffer_free, bid))

    def _range(self, offset, nbytes):
        """offset, once offset..offset + nbytes lies in the buffer."""
        offset = _count(offset, "offset", _SIZE)
        if offset > self.size:
            raise ValueError(f"offset {offset} is past the device buffer's end ({self.size} "
                             "bytes)")
        if nbytes > self.size - offset:
            raise ValueError(f"bytes {offset}..{offset + nbytes} are outside the device buffer "
                             f"({self.size} bytes)")
        return offset

    def _live(self):
        if self.id is None:
            raise ValueError("the device buffer was freed")
        return self.id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        return f"<coop.Buffer {self.id} {self.size} bytes>"


def _io_memfd(v):
    """(memfd, offset) when every array of a Buffer.io lies in one memfd at
    one offset (write and read the same coop.empty array), else None."""
    arrs = [a for a in (v.write, v.read) if a is not None]
    ms = [_memfd_of(a) for a in arrs]
    if any(m is None for m in ms) or len({id(m) for m in ms}) != 1:
        return None
    offs = {a.ctypes.data - ms[0].addr for a in arrs}
    return (ms[0], offs.pop()) if len(offs) == 1 else None


class _BufferIO:
    """A device buffer with a range its job moves (Buffer.io)."""

    def __init__(self, buf, write, read, offset):
        self.buf, self.write, self.read, self.offset = buf, write, read, int(offset)
        self.nbytes = (write if write is not None else read).nbytes


class _Closing:
    """close() at the end of a with block and when collected."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Prepared(_Closing):
    """A job described once (Connection.prepare), submitted as often as
    wanted: each submit() is one libcoop call, where Connection.submit()
    checks and describes every argument again. It holds its arrays and its
    connection; close() (or a with block) frees the description."""

    def __init__(self, conn, kernel, args, kw):
        self.conn = conn
        self.kernel = kernel
        self._j = None
        self._j, self._keep = conn._job(kernel, args, **kw)

    @_when_open
    def submit(self):
        """Submits the job again; its Job. A second submit before the first
        one's result writes its output arrays again as it ends."""
        return self._submit()

    def _submit(self, jid=None):
        if not self._j:
            raise ValueError("the prepared job was closed")
        return self.conn._submit(self._j, self._keep, jid)

    @_when_open
    def run(self, timeout=None):
        """submit() then wait(); raises coop.Error unless the job ends DONE.
        A wait cut short (Ctrl-C, the timeout) cancels the job; one that
        the timeout's cancel found ended is reported as it ended (its
        Result if DONE)."""
        return _run(self.conn, self._submit, timeout)

    def close(self):
        """Frees the description (coop_job_free); jobs submitted from it run
        on, and their wait() still fills the arrays."""
        if self._j:
            _lib.coop_job_free(self._j)
            self._j = None

    def __repr__(self):
        return f"<coop.Prepared {self.kernel}{'' if self._j else ' closed'}>"


class Connection(_Closing):
    """One connection to coopd (coop_connect). Usable from several threads."""

    _h = None  # the coop_conn; None once closed
    _interrupted = False  # a Ctrl-C inside an event callback, for _call to raise

    @property
    def _c(self):
        if not self._h:
            raise ValueError("the connection is closed")
        return self._h

    def _call(self, fn, *args):
        """fn(the coop_conn, *args): one libcoop call on this connection.
        A close() meanwhile, from another thread or from an event callback
        inside it, leaves coop_disconnect to the end of the last such call:
        it freed what a call in flight was using (a wait on one thread, a
        close on another: the process aborted, "free(): corrupted unsorted
        chunks"). The next call raises ValueError, as does any call in a
        process forked after the connection was made (before the lock,
        which another thread may have held at the fork)."""
        self._open()  # forked: ValueError
        with self._lock:
            h = self._c  # closed: ValueError
            self._calls += 1
        try:
            r = fn(h, *args)
            if self._interrupted:  # a Ctrl-C inside an event callback of this call
                self._interrupted = False
                raise KeyboardInterrupt
            return r
        finally:
            with self._lock:
                self._calls -= 1
                h = None
                if not self._calls:
                    h, self._closing = self._closing, None
            if h:
                self._disconnect(h)

    def _open(self):
        """ValueError unless the connection is open and serves this process
        (what _call checks; the public calls check it first, @_when_open)."""
        if self._fork != _forks[0]:
            raise ValueError(f"the connection was made by process {self._pid}, before a fork: "
                             "connect again in this process (coop.connect)")
        return self._c

    def _disconnect(self, h):
        _lib.coop_disconnect(h)
        self._pending.clear()  # no call of libcoop's writes into them any more
        self._abandoned.clear()

    def __init__(self, path=None, name="python", timeout=None, spin_us=None):
        # every argument checked before the connection is made
        path = _path(path, "path")
        name = _text(name, "name")
        timeout_ms = None if timeout is None else _ms(timeout, "timeout", _C_INT[1], True)
        spin_us = None if spin_us is None else _count(spin_us, "spin_us", _C_UINT)
        self._lock = threading.Lock()
        self._fork, self._pid = _forks[0], os.getpid()  # the process it serves (_call)
        self._calls = 0  # libcoop calls in flight (_call)
        self._closing = None  # the coop_conn close() left to the last of them
        c = ctypes.c_void_p()
        rc = _lib.coop_connect(ctypes.byref(c), path, name)
        if rc < 0:
            _check(rc, None)
        self._h = c
        self._event_fn = None
        self._pending = {}  # job id -> the arrays libcoop may still write
        self._abandoned = set()  # ids run() cancelled and stopped waiting for (_reap)
        self._sigs = None  # kernel name -> (cooperative, argument type names), asked once (_sig)
        if timeout_ms is not None:
            _lib.coop_set_timeout(c, timeout_ms)
        if spin_us is not None:  # coop_set_spin: watch the socket this long before sleeping
            _lib.coop_set_spin(c, spin_us)
        i = _lib.coop_info(c).contents
        self.info = {n: (_s(getattr(i, n)) if isinstance(getattr(i, n), bytes) else getattr(i, n))
                     for n, _ in _capi.Info._fields_}

    def close(self):
        """Disconnects (coopd then cancels this connection's running jobs).
        A call in flight on another thread (a wait's slice, at most
        _WAIT_SLICE_MS; an add_kernel's build) ends first, and the
        disconnect follows it; that thread's next call on the connection
        raises ValueError."""
        if not self._h:
            return
        if self._fork != _forks[0]:  # a forked child's copy: the parent's to close
            self._h = None
            return
        with self._lock:
            h, self._h = self._h, None
            if not h:
                return
            if self._calls:
                self._closing, h = h, None
        if h:
            self._disconnect(h)

    @_when_open
    def submit(self, kernel, *args, groups=None, cooperative=None, device=ANY_DEVICE,
               query_barrier=False, detached=False, periodic=None, priority=0):
        """Submits kernel(*args) on `groups` workgroups and returns its Job.
        cooperative: None (the default) is the kernel's own kind, which
        coopd takes as it admits the job; True or False must match it
        (coop.Error EARGS "submit it with cooperative=True" otherwise).
        groups: None (the default) is every worker of the device the job
        runs on for a cooperative kernel, and 1 for a non-cooperative one
        (coopd's choice too).
        periodic: dict(period_us=, count=, duration_ms=, deadline_us=).
        An int past its C type's range (priority: past -100..100) is a
        ValueError naming it, one of another type a TypeError.
        priority: -100..100; above 0 as far as coopd allows this user (else
        coop.Error EPERM); a job that cannot get its workers (or its room) has running
        cooperative jobs of lower priority suspended until it ends."""
        kw = dict(groups=groups, cooperative=cooperative, device=device,
                  query_barrier=query_barrier, detached=detached, periodic=periodic,
                  priority=priority)
        return self._submit_new(kernel, args, kw, None)

    @_when_open
    def prepare(self, kernel, *args, **kw):
        """A job described once, to submit many times (Prepared.submit()):
        the same arguments as submit(). Its arrays are read at each submit
        (In, InOut and a Buffer.io's write) and written at each result (Out,
        InOut, a Buffer.io's read), as a frame loop wants; the description's
        work, the argument checks and a libcoop call per argument, is done
        here once."""
        self._options(kw, "prepare")
        return Prepared(self, kernel, args, kw)

    # submit()'s options, which run() and prepare() take as keywords
    _OPTIONS = ("groups", "cooperative", "device", "query_barrier", "detached", "periodic",
                "priority")

    @classmethod
    def _options(cls, kw, where):
        """kw checked against submit()'s options, a misspelt one named with
        the call it was given to (it was "_job() got an unexpected keyword
        argument", naming a function the user never called)."""
        bad = [k for k in kw if k not in cls._OPTIONS]
        if bad:
            opts = (("timeout",) if where == "run" else ()) + cls._OPTIONS
            raise TypeError(f"{where}() got an unexpected keyword argument {bad[0]!r} (its "
                            f"options are {', '.join(opts)})")

    def _job(self, kernel, args, groups=None, cooperative=None, device=ANY_DEVICE,
             query_barrier=False, detached=False, periodic=None, priority=0):
        """(coop_job, the arrays it points into) for kernel(*args)."""
        self._c  # closed: ValueError
        # every TypeError and ValueError before anything is sent
        name = _text(kernel, "kernel")
        if groups is not None:
            groups = _count(groups, "groups", _U32)
        # a device past a C int here; one coopd does not run, coop.Error
        # EINVAL at submit
        device = _int(device, "device", _C_INT)
        priority = _int(priority, "priority", (_capi.PRIORITY_MIN, _capi.PRIORITY_MAX))
        if periodic is not None and not isinstance(periodic, Mapping):
            # a list or a tuple of the values failed "sequence item 0:
            # expected str instance, int found" below
            raise TypeError(f"periodic must be a dict (period_us=, count=, duration_ms=, "
                            f"deadline_us=), not {type(periodic).__name__} {periodic!r:.60}")
        if periodic:
            keys = ("period_us", "count", "duration_ms", "deadline_us")
            bad = [k for k in periodic if k not in keys]
            if bad:  # a misspelt key made a job that ran once
                raise TypeError(f"periodic: unknown {', '.join(map(repr, bad))} (it takes "
                                f"{', '.join(keys)})")
            periodic = [_count(periodic.get(k, 0), f"periodic {k}", _U32) for k in keys]
        if cooperative is not None and not isinstance(cooperative, (bool, np.bool_)):
            # a 1 or a "yes" was taken as True, a "no" too
            raise TypeError(f"cooperative must be True, False or None (the kernel's own kind), "
                            f"not {type(cooperative).__name__} {cooperative!r:.60}")
        desc = _describe(args, kernel, lambda fresh: self._types(kernel, fresh))
        # left out, the kind and width are the kernel's own, which coopd
        # takes from the kernel it runs (a sweep run without cooperative=True
        # was refused; one without groups= ran on one workgroup of hundreds)
        j = _lib.coop_job_new(name, 0 if groups is None else groups)
        if not j:
            raise MemoryError("coop_job_new")
        keep = []
        try:
            _lib.coop_job_cooperative(j, -1 if cooperative is None else 1 if cooperative else 0)
            _lib.coop_job_query_barrier(j, 1 if query_barrier else 0)
            _lib.coop_job_detached(j, 1 if detached else 0)
            _lib.coop_job_device(j, device)
            _lib.coop_job_priority(j, priority)
            if periodic:
                _lib.coop_job_periodic(j, *periodic)
            for kind, v in desc:
                if kind == "buffer":
                    _lib.coop_job_buffer(j, v.id)
                elif kind == "buffer_io":
                    m = _io_memfd(v)
                    if m is not None:  # coop.empty arrays: their memfd, no copy
                        _lib.coop_job_buffer_io_fd(j, v.buf.id, v.offset, m[0].fd, m[1], v.nbytes,
                                                   (1 if v.write is not None else 0)
                                                   | (2 if v.read is not None else 0))
                    else:
                        _lib.coop_job_buffer_io(
                            j, v.buf.id, v.offset,
                            None if v.write is None else v.write.ctypes.data,
                            None if v.read is None else v.read.ctypes.data, v.nbytes)
                    keep.append(v)
                elif kind in ("in", "out", "inout"):
                    m = _memfd_of(v)
                    if m is not None:
                        _lib.coop_job_buf_fd(j, m.fd, v.nbytes,
                                             {"in": 1, "out": 2, "inout": 3}[kind])
                    else:
                        getattr(_lib, "coop_job_buf_" + kind)(j, v.ctypes.data, v.nbytes)
                    keep.append(v)
                else:
                    getattr(_lib, "coop_job_" + kind)(j, v.item())
        except BaseException:
            _lib.coop_job_free(j)
            raise
        return j, keep

    def _sig(self, kernel, fresh=False):
        """(cooperative, argument type names) of kernel, from coopd's list,
        asked once and again when kernel is not in it (added since) or when
        fresh."""
        sigs = self._sigs
        if fresh or sigs is None or kernel not in sigs:
            sigs = self._sigs = dict(self.kernels())
        if kernel not in sigs:
            raise Error(globals()["ENOKERNEL"],
                        f'no kernel named "{kernel}" (Connection.kernels() lists them)')
        return sigs[kernel]

    def _types(self, kernel, fresh=False):
        """kernel's argument type names (_sig)."""
        return self._sig(kernel, fresh)[1]

    def _reap(self):
        """The jobs run() cancelled and stopped waiting for (its timeout,
        Ctrl-C), asked once more each, a few at a time: one that has ended
        lets its arrays go (Job.wait's pop). Nothing else would ever ask,
        and a long-lived connection that timed out many runs kept every
        one's arrays until it closed."""
        for jid in list(self._abandoned)[:8]:
            try:
                Job(self, jid).wait(0)
            except Timeout:
                continue  # still leaving the device
            except Error as e:
                if e.code != globals()["ENOJOB"]:
                    continue  # the connection failed, say: asked again next time
                self._pending.pop(jid, None)  # coopd forgot it: no RESULT comes
            self._abandoned.discard(jid)

    def _submit(self, j, keep, jid=None):
        """coop_submit of job j; keep: its arrays, alive until its result;
        jid: the c_uint64 its id goes into (run's), else a new one."""
        if self._abandoned:
            self._reap()
        jid = ctypes.c_uint64() if jid is None else jid
        try:
            rc = self._call(_lib.coop_submit, j, ctypes.byref(jid))
        finally:
            # its arrays kept from the moment coopd has the job (libcoop
            # writes the id only then), a Ctrl-C as the reply is read too
            if jid.value:
                self._pending[jid.value] = keep
        if rc < 0 and ERRORS.get(rc) in ("EARGS", "ENOKERNEL"):
            self._sigs = None  # a reload changed the kernels: ask again next time
        _check(rc)
        return Job(self, jid.value)

    def _submit_new(self, kernel, args, kw, jid):
        """submit(kernel, *args, **kw) with its id into jid (run's, else
        None)."""
        j, keep = self._job(kernel, args, **kw)
        try:
            return self._submit(j, keep, jid)
        finally:
            _lib.coop_job_free(j)

    @_when_open
    def run(self, kernel, *args, timeout=None, **kw):
        """submit() then wait(); raises coop.Error unless the job ends DONE.
        A wait cut short (Ctrl-C, the timeout) cancels the job; one that
        the timeout's cancel found ended is reported as it ended (its
        Result if DONE)."""
        self._options(kw, "run")
        return _run(self, lambda jid: self._submit_new(kernel, args, kw, jid), timeout)

    @_when_open
    def wait(self, job_id, timeout=None):
        """Waits for a job by id (a detached one, say): its Result. Only
        the connection that submitted it writes the output into its arrays;
        from another the output is not had (a coop.empty array holds it
        all the same: coopd writes into its memfd)."""
        return Job(self, job_id).wait(timeout)

    @_when_open
    def cancel(self, job_id):
        """Job.cancel of the job job_id (coop_cancel): coop.Error ENOJOB for
        an id coopd does not know."""
        _check(self._call(_lib.coop_cancel, _count(job_id, "a job id")))

    @_when_open
    def buffer(self, data, device=ANY_DEVICE, keep=False, wait=0):
        """A device buffer holding a copy of array `data`, or of `data`
        bytes of zeros when data is an int. While running jobs' copies hold
        the room it needs in the device's arena (coopd's EBUSY), it asks
        again every 50 ms for up to `wait` seconds (None: until it fits;
        below 1 ms: 1 ms; negative or NaN: ValueError); then coop.Error
        EBUSY (coop.Timeout once a wait > 0 ran out).
        ENOMEM: it does not fit beside the device buffers there at all.
        keep: the buffer outlives this connection (COOP_BUFFER_KEEP) until
        a free() on any connection of this user (open_buffer reaches it),
        counted against the user's [limits] max_bytes_per_uid and
        max_buffers_per_uid meanwhile; otherwise it goes with the
        connection."""
        d = _Deadline(wait, "wait")
        device = _int(device, "device", _C_INT)
        if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
            size, ptr = _count(data, "a buffer's size", _SIZE), None
            if not size:
                raise ValueError("a device buffer needs at least one byte")
        elif not isinstance(data, np.ndarray):
            # a list went through np.asarray: [1, 2, 3] made 24 bytes of
            # int64, where a kernel reading u32 saw 1, 0, 2, 0, 3, 0 (a job's
            # argument refuses it: In/Out/InOut take a NumPy array)
            raise TypeError(f"buffer takes a NumPy array (the kernel sees its bytes: choose "
                            f"its dtype) or a size in bytes (int), not "
                            f"{type(data).__name__} {data!r:.60}")
        else:
            a = _array("buffer", data, False)
            size, ptr = a.nbytes, a.ctypes.data
        bid = ctypes.c_uint64()
        while True:
            rc = self._call(_lib.coop_buffer_create, device, size, ptr,
                            BUFFER_KEEP if keep else 0, ctypes.byref(bid))
            if rc != globals()["EBUSY"] or not d.ms:
                break
            if not d.again(0.05):
                raise Timeout(globals()["ETIMEDOUT"], f"no room for a buffer of {size} bytes "
                              f"within {wait} s: {_errmsg(None)}")
        _check(rc)
        # COOP_ANY_DEVICE puts a buffer on device 0 (coop.h): buf.device names
        # it, as open_buffer takes it
        return Buffer(self, bid.value, size, 0 if device == ANY_DEVICE else device, bool(keep))

    @_when_open
    def open_buffer(self, id, size, device=0):
        """The device buffer `id` of `size` bytes on `device` that this
        user made with keep=True (on any connection: an earlier one, another
        process's), as a Buffer of this connection: for jobs, read(), write()
        and free(). Nothing is sent: an id that names no buffer of this
        user's is coop.Error ENOJOB at its first use, and a read or write
        past the buffer's real end EINVAL."""
        buffer_id = _count(id, "a buffer id")
        size = _count(size, "a buffer's size", _SIZE)
        if not size:
            raise ValueError("a device buffer needs at least one byte")
        return Buffer(self, buffer_id, size, _int(device, "device", (0, _C_INT[1])), True)

    @_when_open
    def stats(self):
        """coopd's counters as a dict (coop_stats: struct coop_stats's
        fields; devs: one dict per device)."""
        s = _capi.Stats()
        _check(self._call(_lib.coop_stats, ctypes.byref(s)))
        d = {}
        for n, _ in _capi.Stats._fields_:
            v = getattr(s, n)
            if n == "devs":
                v = [{m: (_s(getattr(v[k], m)) if isinstance(getattr(v[k], m), bytes)
                          else getattr(v[k], m)) for m, _ in _capi.Device._fields_}
                     for k in range(s.ndevices)]
            elif isinstance(v, bytes):
                v = _s(v)
            d[n] = v
        return d

    @_when_open
    def kernels(self):
        """{name: (cooperative, [argument type names])}: "u32", ...,
        "buf", or with the element type the kernel declares for a buffer,
        "buf<f32>" (what an array passed there must hold)."""
        lst = ctypes.POINTER(_capi.Kernel)()
        n = ctypes.c_size_t()
        _check(self._call(_lib.coop_kernels, ctypes.byref(lst), ctypes.byref(n)))
        try:
            ks = {_s(lst[k].name): (bool(lst[k].cooperative),
                                    [_s(_lib.coop_type_name(lst[k].types[a]))
                                     for a in range(lst[k].nargs)])
                  for k in range(n.value)}
        finally:
            _lib.libc_free(ctypes.cast(lst, ctypes.c_void_p))
        el = self._elems()
        return {k: (v[0], _with_elems(v[1], el.get(k))) for k, v in ks.items()}

    def _elems(self):
        """{kernel name: [element type names]} (coop_kernels_elems: "" where
        the kernel declares none); {} from a libcoop without it."""
        f = getattr(_lib, "coop_kernels_elems", None)
        if f is None:
            return {}
        lst = ctypes.POINTER(_capi.KernelElems)()
        n = ctypes.c_size_t()
        _check(self._call(f, ctypes.byref(lst), ctypes.byref(n)))
        try:
            return {_s(lst[k].name): [_s(_lib.coop_elem_name(lst[k].elems[a]))
                                      for a in range(lst[k].nargs)]
                    for k in range(n.value)}
        finally:
            _lib.libc_free(ctypes.cast(lst, ctypes.c_void_p))

    @_when_open
    def status(self, job_id=None):
        """coop_status: the status of job job_id as a dict (job, state,
        kernel, cooperative, query_barrier, groups, uid, pid,
        instances_done, misses, priority, suspended, device: where it is
        now), or without one a list of every job this client may see. An id
        that names no job it may see, 0 included, is coop.Error ENOJOB, as
        wait() and cancel() answer it."""
        every = job_id is None
        job_id = 0 if every else _count(job_id, "a job id")
        if not job_id and not every:
            # coop_status reads 0 as "every job": status(0) returned the
            # list, where coopd answers a WAIT or CANCEL of job 0 ENOJOB
            raise Error(globals()["ENOJOB"], "no job 0 (job ids start at 1; status() without "
                        "an id lists every job)")
        lst = ctypes.POINTER(_capi.JobStatus)()
        n = ctypes.c_size_t()
        _check(self._call(_lib.coop_status, job_id, ctypes.byref(lst), ctypes.byref(n)))
        try:
            out = []
            for k in range(n.value):
                s = lst[k]
                d = {f: getattr(s, f) for f, _ in _capi.JobStatus._fields_}
                d["state"] = STATES.get(s.state, str(s.state))
                d["kernel"] = _s(s.kernel)
                for f in ("cooperative", "query_barrier", "suspended"):
                    d[f] = bool(d[f])
                out.append(d)
        finally:
            _lib.libc_free(ctypes.cast(lst, ctypes.c_void_p))
        return out if every else out[0]

    @_when_open
    def top(self, device=0):
        """coop_top_device: what the device's worker workgroups do now, as
        {"workers": [(state, job)], "jobs": [dict]}: each worker's state
        ("free", "running", "reserved", "other": another user's) and job id
        (0 for free and other), in the megakernel's order; each running job
        this client may see with its kernel, cooperative, groups (asked), m
        (its active count now), workers (held now), kills, forks and
        priority."""
        wgs = ctypes.POINTER(_capi.Wg)()
        jobs = ctypes.POINTER(_capi.TopJob)()
        nwg, njobs = ctypes.c_size_t(), ctypes.c_size_t()
        device = _int(device, "device", _C_INT)
        _check(self._call(_lib.coop_top_device, device, ctypes.byref(wgs), ctypes.byref(nwg),
                          ctypes.byref(jobs), ctypes.byref(njobs)))
        try:
            workers = [(_s(_lib.coop_worker_state_name(wgs[k].state)), wgs[k].job)
                       for k in range(nwg.value)]
            js = []
            for k in range(njobs.value):
                d = {f: getattr(jobs[k], f) for f, _ in _capi.TopJob._fields_}
                d["kernel"] = _s(jobs[k].kernel)
                d["cooperative"] = bool(d["cooperative"])
                js.append(d)
        finally:
            _lib.libc_free(ctypes.cast(wgs, ctypes.c_void_p))
            _lib.libc_free(ctypes.cast(jobs, ctypes.c_void_p))
        return {"workers": workers, "jobs": js}

    @_when_open
    def kernel_info(self):
        """{name: dict} of every registered kernel (coop_kernels_info): its
        cooperative flag, args as [(name, type name)] (name "" where the
        directive names none; type names as kernels() gives them), its
        `//@coop require` rules as written, and
        owner: None for one of coopd's own, else the uid of the author who
        added it."""
        lst = ctypes.POINTER(_capi.KernelInfo)()
        n = ctypes.c_size_t()
        _check(self._call(_fn("coop_kernels_info"), ctypes.byref(lst), ctypes.byref(n)))
        try:
            ks = {_s(lst[k].k.name): lst[k] for k in range(n.value)}
            el = self._elems()
            return {name: _kernel_dict(ki, el.get(name)) for name, ki in ks.items()}
        finally:
            _lib.libc_free(ctypes.cast(lst, ctypes.c_void_p))

    def _author(self, call, timeout):
        """call(log) (coop_kernel_add, _remove or coop_reload; its log into
        *log) asked again while coopd answers EBUSY (another reload runs, or
        the user's last one ended less than [kernels]
        author_reload_interval_ms ago), every _AUTHOR_RETRY_S, as coopctl
        waits it out, for up to timeout seconds (None: as long as it takes;
        0: once); then coop.Error EBUSY saying how long it waited and coopd's
        reason. Ctrl-C (KeyboardInterrupt) ends the wait between two asks."""
        d = _Deadline(timeout)
        busy = globals()["EBUSY"]
        while True:
            log = ctypes.c_void_p()
            self._sigs = None
            rc = call(ctypes.byref(log))
            if rc != busy or not d.ms:
                return _check_log(rc, None, log)
            if log.value:
                _lib.libc_free(log)
            if not d.again(_AUTHOR_RETRY_S):
                raise Error(busy, f"gave up after {timeout:g} s: {_errmsg(None)}")

    @_when_open
    def add_kernel(self, path=None, source=None, file=None, timeout=None):
        """Adds a kernel of the caller's, or replaces the caller's own of that
        name (coop_kernel_add; docs/kernels.md, "Adding a kernel without
        root"): from the .cl file at path (str, bytes or os.PathLike: its
        text and base name), or from source (str or bytes) with file the
        name its messages give it ("kernel.cl" when not given; with path,
        file= is a TypeError: its base name is the file's).
        Returns once coopd runs it, as kernel_info() describes it. While
        coopd answers EBUSY (another reload runs, or this user's last ended
        less than [kernels] author_reload_interval_ms ago) it asks again for
        up to timeout seconds (None: as long as it takes), as coopctl does;
        then EBUSY. Raises BuildError (its log: the checker's or compiler's
        text at the file and line) when the kernel does not pass, Error
        otherwise (EPERM: not an author; EEXIST: the name is taken)."""
        _ms(timeout)  # checked before the file is read
        if path is None and source is None:
            raise TypeError("add_kernel: give path or source")
        if path is not None and source is not None:
            raise TypeError("add_kernel: give path or source, not both")
        if path is not None and file is not None:
            raise TypeError("add_kernel: file= goes with source=; a path's messages name its "
                            "base name")
        if path is None and file is None:
            file = "kernel.cl"
        if path is not None:
            path = _path(path, "path")
            # the kernel's text where its path goes, c.add_kernel(SOURCE):
            # open() named the whole source as a missing file
            if b"\n" in path:
                raise TypeError("add_kernel: path holds a line break: a kernel's text goes as "
                                "add_kernel(source=text, file=\"NAME.cl\")")
            with open(path, "rb") as f:
                source = f.read()
            file = os.path.basename(path)
        else:
            file = _path(file, "file")
            if isinstance(source, str):
                source = source.encode()
            elif not isinstance(source, bytes):
                raise TypeError(f"source must be a str or bytes, not {type(source).__name__}")
        info = _capi.KernelInfo()
        add = _fn("coop_kernel_add")
        self._author(lambda log: self._call(add, file, source, len(source), ctypes.byref(info),
                                            log), timeout)
        return _kernel_dict(info, self._elems().get(_s(info.k.name)))

    @_when_open
    def remove_kernel(self, name, timeout=None):
        """Removes a kernel the caller added (root: any author's;
        coop_kernel_remove); EBUSY waited out as add_kernel does."""
        name = _text(name, "name")
        remove = _fn("coop_kernel_remove")
        self._author(lambda log: self._call(remove, name, log), timeout)

    @_when_open
    def reload(self, timeout=None):
        """Reads the kernels again and builds them, as SIGHUP does (authors
        and root; coop_reload); returns when coopd runs the new set. EBUSY
        waited out as add_kernel does."""
        reload = _fn("coop_reload")
        self._author(lambda log: self._call(reload, log), timeout)

    @_when_open
    def subscribe(self, callback, mask=EVENTS_ALL):
        """callback(event dict) for each event of mask (coop_subscribe; a
        kind k's bit is 1 << k: EVENT_RELEASED .. EVENT_FINISHED), called
        from whichever call on this connection reads it. An exception it
        raises does not leave that call: ctypes prints it ("Exception
        ignored on calling ctypes callback function") and the call goes
        on. A Ctrl-C (KeyboardInterrupt) that comes while it runs is raised
        again once that call returns: ctypes dropped it too, and a run()
        whose Ctrl-C landed in a callback waited on for the job's end."""
        if not callable(callback):
            # every event printed "'str' object is not callable" instead
            raise TypeError(f"subscribe: callback must be callable, not "
                            f"{type(callback).__name__} {callback!r:.60}")

        def tramp(ev, _user):
            try:
                e = ev.contents
                callback({"job": e.job, "kind": _s(_lib.coop_event_name(e.kind)),
                          "state": STATES.get(e.state, str(e.state)), "instance": e.instance,
                          "t_ns": e.t_ns, "gather_ns": e.gather_ns})
            except KeyboardInterrupt:
                self._interrupted = True
        mask = _count(mask, "mask", _U32)
        fn = _capi.EVENT_FN(tramp)
        _check(self._call(_lib.coop_subscribe, mask, fn, None))
        self._event_fn = fn  # libcoop holds the pointer: keep it alive

    @_when_open
    def poll_events(self, timeout=0):
        """Dispatches pending events (waits up to timeout s, None: until
        one comes); their count. Ctrl-C ends the wait, as Job.wait's."""
        return _in_slices(timeout, lambda ms: _check(self._call(_lib.coop_poll_events, ms)),
                          lambda n: n == 0)


def connect(path=None, name="python", timeout=None, spin_us=None):
    """A Connection to the coopd at path (str, bytes or os.PathLike;
    default: coop_socket_path's: $COOP_SOCKET, $XDG_RUNTIME_DIR/coop.sock
    where a socket is there (not for root), else /run/coop/coop.sock); name: the client
    in coopd's log; timeout: seconds a request waits for its reply
    (coop_set_timeout; None: the default, 30; inf: forever), more than 0
    (0, a negative or NaN: ValueError); spin_us: coop_set_spin's
    (default: $COOP_SPIN_US, else 0)."""
    return Connection(path, name, timeout, spin_us)
