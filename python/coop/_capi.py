"""The C side of coop: libcoop's structs and functions through ctypes.

Every struct layout the package relies on is declared here and nowhere
else; tests/python/layout.c prints the same layouts from client/coop.h and
tests/python/test_layout.py compares the two, so they cannot drift apart.
"""
import ctypes
import ctypes.util
import os
import warnings

# protocol/coop_limits.h (tests/python/layout.c prints them: LIMITS)
NAME_MAX = 64
TEXT_MAX = 1024
MAX_ARGS = 16
MAX_DEVICES = 8
PRIORITY_MIN = -100
PRIORITY_MAX = 100
LIMITS = {"COOP_NAME_MAX": NAME_MAX, "COOP_TEXT_MAX": TEXT_MAX, "COOP_MAX_ARGS": MAX_ARGS,
          "COOP_MAX_DEVICES": MAX_DEVICES, "COOP_PRIORITY_MIN": PRIORITY_MIN,
          "COOP_PRIORITY_MAX": PRIORITY_MAX}

c_int = ctypes.c_int
c_u32 = ctypes.c_uint32
c_u64 = ctypes.c_uint64
c_i64 = ctypes.c_int64


class Info(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("daemon_version", ctypes.c_char * NAME_MAX),
                ("backend", ctypes.c_char * NAME_MAX), ("device", ctypes.c_char * TEXT_MAX),
                ("compute_units", c_u32), ("workers", c_u32), ("max_payload", c_u32),
                ("inline_max", c_u32), ("uid", c_u32), ("pid", c_u32), ("ndevices", c_u32)]


class Times(ctypes.Structure):
    _fields_ = [(n, c_i64) for n in ("submitted", "released", "gathered", "started",
                                     "finished", "gather_ns", "exec_ns")]


class Instance(ctypes.Structure):
    _fields_ = [("state", c_int), ("t", Times)]


class Result(ctypes.Structure):
    _fields_ = [("job", c_u64), ("state", c_int), ("device", c_int), ("error", c_int),
                ("message", ctypes.c_char * TEXT_MAX), ("t", Times),
                ("m_initial", c_u32), ("m_min", c_u32), ("m_max", c_u32),
                ("kills", c_u32), ("forks", c_u32), ("resizes", c_u32),
                ("instances", c_u32), ("misses", c_u32), ("ninst", c_u32),
                ("inst", ctypes.POINTER(Instance))]


class Device(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char * TEXT_MAX), ("backend", ctypes.c_char * NAME_MAX),
                ("compute_units", c_u32), ("workers", c_u32), ("lost_workers", c_u32),
                ("jobs", c_u32), ("parked", c_u32), ("parks", c_u32), ("unpark_ns", c_i64)]


class Stats(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char * NAME_MAX), ("device", ctypes.c_char * TEXT_MAX),
                ("compute_units", c_u32), ("workers", c_u32), ("clients", c_u32),
                ("queued", c_u32), ("running", c_u32),
                ("submitted", c_u64), ("done", c_u64), ("cancelled", c_u64),
                ("refused", c_u64), ("failed", c_u64), ("samples", c_u32),
                ("gather_p50", c_i64), ("gather_p90", c_i64), ("gather_p99", c_i64),
                ("gather_max", c_i64), ("backend_note", ctypes.c_char * TEXT_MAX),
                ("gather_timeouts", c_u32), ("hung", c_u32), ("lost_workers", c_u32),
                ("watchdog", ctypes.c_char * TEXT_MAX), ("ndevices", c_u32),
                ("devs", Device * MAX_DEVICES)]


class Kernel(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_MAX), ("cooperative", c_int),
                ("nargs", ctypes.c_uint), ("types", c_int * MAX_ARGS)]


class JobStatus(ctypes.Structure):
    _fields_ = [("job", c_u64), ("state", c_int), ("cooperative", c_int),
                ("query_barrier", c_int), ("kernel", ctypes.c_char * NAME_MAX),
                ("groups", c_u32), ("uid", c_u32), ("pid", c_u32), ("instances_done", c_u32),
                ("misses", c_u32), ("priority", ctypes.c_int32), ("suspended", c_int),
                ("device", c_u32)]


class Wg(ctypes.Structure):
    _fields_ = [("state", c_int), ("job", c_u64)]


class TopJob(ctypes.Structure):
    _fields_ = [("job", c_u64), ("kernel", ctypes.c_char * NAME_MAX), ("cooperative", c_int),
                ("groups", c_u32), ("m", c_u32), ("workers", c_u32), ("kills", c_u32),
                ("forks", c_u32), ("priority", ctypes.c_int32)]


# coop_kernel_info's owner for one of coopd's own kernels
SHIPPED = 0xFFFFFFFF


class KernelInfo(ctypes.Structure):
    _fields_ = [("k", Kernel), ("owner", c_u32), ("argnames", (ctypes.c_char * 32) * MAX_ARGS),
                ("nrules", ctypes.c_uint), ("rules", (ctypes.c_char * 160) * 16)]


class KernelElems(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_MAX), ("nargs", ctypes.c_uint),
                ("elems", c_int * MAX_ARGS)]


class Event(ctypes.Structure):
    _fields_ = [("job", c_u64), ("kind", c_int), ("state", c_int), ("instance", c_u32),
                ("t_ns", c_i64), ("gather_ns", c_i64)]


# The structs tests/python/layout.c describes: C name -> ctypes class.
STRUCTS = {"coop_info": Info, "coop_times": Times, "coop_instance": Instance,
           "coop_result": Result, "coop_device": Device, "coop_stats": Stats,
           "coop_kernel": Kernel, "coop_kernel_info": KernelInfo, "coop_event": Event,
           "coop_kernel_elems": KernelElems,
           "coop_job_status": JobStatus, "coop_wg": Wg, "coop_topjob": TopJob}

EVENT_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(Event), ctypes.c_void_p)

_P = ctypes.c_void_p


def _prefix():
    """The prefix this package was installed under: the folder above
    lib[64]/[<multiarch>/]python3*/(dist|site)-packages/coop, else None (a
    source tree, a copy elsewhere: COOP_LIBRARY names the library)."""
    parts = os.path.dirname(os.path.abspath(__file__)).split(os.sep)
    if (len(parts) < 5 or parts[-1] != "coop"
            or parts[-2] not in ("dist-packages", "site-packages")
            or not parts[-3].startswith("python3")):
        return None
    rest = parts[:-3]
    if rest[-1] not in ("lib", "lib64"):
        rest = rest[:-1]  # lib/<multiarch>/python3...
    if len(rest) < 2 or rest[-1] not in ("lib", "lib64"):
        return None
    return os.sep.join(rest[:-1]) or os.sep


def _distrust(path):
    """Why a library at path may not be loaded, or None: it and its folder
    must be root's or this user's and writable by nobody else, since a
    library there runs as the caller the moment it loads."""
    for p in (path, os.path.dirname(path)):
        try:
            st = os.stat(p)
        except OSError as e:
            return f"{p}: {e.strerror}"
        if st.st_uid not in (0, os.geteuid()):
            return f"{p} belongs to uid {st.st_uid}"
        if st.st_mode & 0o022:
            return f"{p} is writable by its group or others (mode {st.st_mode & 0o777:o})"
    return None


def _find_library():
    """COOP_LIBRARY, else the libcoop.so.0 of the prefix this package was
    installed under, else the dynamic linker's search. Only the prefix:
    the folders above it were looked in too, six of them, so that a
    checkout under /tmp loaded /tmp/lib/libcoop.so.0, anyone's, at import."""
    env = os.environ.get("COOP_LIBRARY")
    if env:
        return env
    prefix = _prefix()
    if prefix:
        cands = [os.path.join(prefix, sub, "libcoop.so.0") for sub in ("lib", "lib64")]
        for p in cands + _glob_multiarch(prefix):
            if not os.path.exists(p):
                continue
            why = _distrust(p)
            if why is None:
                return p
            # Said, not silent: the linker's search may then find another
            # libcoop, or none, and the user would not know why.
            warnings.warn(f"coop: not loading {p}: {why}; set COOP_LIBRARY to load it anyway",
                          RuntimeWarning, stacklevel=3)
    return ctypes.util.find_library("coop") or "libcoop.so.0"


def _glob_multiarch(d):
    libdir = os.path.join(d, "lib")
    try:
        names = os.listdir(libdir)
    except OSError:
        return []
    return [os.path.join(libdir, n, "libcoop.so.0") for n in sorted(names)
            if os.path.exists(os.path.join(libdir, n, "libcoop.so.0"))]


def load():
    path = _find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"coop: cannot load libcoop ({e}); set COOP_LIBRARY to the path of "
                          "libcoop.so.0") from e
    sigs = {
        "coop_socket_path": (c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "coop_connect": (c_int, [ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_char_p]),
        "coop_disconnect": (None, [_P]),
        "coop_info": (ctypes.POINTER(Info), [_P]),
        "coop_set_timeout": (None, [_P, c_int]),
        "coop_set_spin": (None, [_P, c_u32]),
        "coop_errmsg": (ctypes.c_char_p, [_P]),
        "coop_strerror": (ctypes.c_char_p, [c_int]),
        "coop_err_name": (ctypes.c_char_p, [c_int]),
        "coop_job_new": (_P, [ctypes.c_char_p, c_u32]),
        "coop_job_free": (None, [_P]),
        "coop_job_cooperative": (c_int, [_P, c_int]),
        "coop_job_query_barrier": (c_int, [_P, c_int]),
        "coop_job_detached": (c_int, [_P, c_int]),
        "coop_job_device": (c_int, [_P, c_int]),
        "coop_job_priority": (c_int, [_P, c_int]),
        "coop_job_periodic": (c_int, [_P, c_u32, c_u32, c_u32, c_u32]),
        "coop_job_u32": (c_int, [_P, c_u32]),
        "coop_job_i32": (c_int, [_P, ctypes.c_int32]),
        "coop_job_u64": (c_int, [_P, c_u64]),
        "coop_job_i64": (c_int, [_P, c_i64]),
        "coop_job_f32": (c_int, [_P, ctypes.c_float]),
        "coop_job_f64": (c_int, [_P, ctypes.c_double]),
        "coop_job_buf_in": (c_int, [_P, _P, ctypes.c_size_t]),
        "coop_job_buf_out": (c_int, [_P, _P, ctypes.c_size_t]),
        "coop_job_buf_inout": (c_int, [_P, _P, ctypes.c_size_t]),
        "coop_job_buffer": (c_int, [_P, c_u64]),
        "coop_job_buffer_io": (c_int, [_P, c_u64, ctypes.c_size_t, _P, _P, ctypes.c_size_t]),
        "coop_job_buffer_io_fd": (c_int, [_P, c_u64, ctypes.c_size_t, c_int, ctypes.c_size_t,
                                          ctypes.c_size_t, ctypes.c_uint]),
        "coop_buffer_create": (c_int, [_P, c_int, ctypes.c_size_t, _P, ctypes.c_uint,
                                       ctypes.POINTER(c_u64)]),
        "coop_buffer_write": (c_int, [_P, c_u64, ctypes.c_size_t, _P, ctypes.c_size_t]),
        "coop_buffer_read": (c_int, [_P, c_u64, ctypes.c_size_t, _P, ctypes.c_size_t]),
        "coop_buffer_free": (c_int, [_P, c_u64]),
        "coop_submit": (c_int, [_P, _P, ctypes.POINTER(c_u64)]),
        "coop_wait": (c_int, [_P, c_u64, c_int, ctypes.POINTER(Result)]),
        "coop_result_free": (None, [ctypes.POINTER(Result)]),
        "coop_cancel": (c_int, [_P, c_u64]),
        "coop_migrate": (c_int, [_P, c_u64, ctypes.c_uint]),
        "coop_stats": (c_int, [_P, ctypes.POINTER(Stats)]),
        "coop_kernels": (c_int, [_P, ctypes.POINTER(ctypes.POINTER(Kernel)),
                                 ctypes.POINTER(ctypes.c_size_t)]),
        "coop_subscribe": (c_int, [_P, c_u32, EVENT_FN, _P]),
        "coop_poll_events": (c_int, [_P, c_int]),
        "coop_state_name": (ctypes.c_char_p, [c_int]),
        "coop_type_name": (ctypes.c_char_p, [c_int]),
        "coop_event_name": (ctypes.c_char_p, [c_int]),
        "coop_status": (c_int, [_P, c_u64, ctypes.POINTER(ctypes.POINTER(JobStatus)),
                                ctypes.POINTER(ctypes.c_size_t)]),
        "coop_top_device": (c_int, [_P, c_int, ctypes.POINTER(ctypes.POINTER(Wg)),
                                    ctypes.POINTER(ctypes.c_size_t),
                                    ctypes.POINTER(ctypes.POINTER(TopJob)),
                                    ctypes.POINTER(ctypes.c_size_t)]),
        "coop_worker_state_name": (ctypes.c_char_p, [c_int]),
    }
    # newer than libcoop.so.0's first release: absent from an older one
    optional = {
        "coop_job_buf_fd": (c_int, [_P, c_int, ctypes.c_size_t, ctypes.c_uint]),
        "coop_kernels_info": (c_int, [_P, ctypes.POINTER(ctypes.POINTER(KernelInfo)),
                                      ctypes.POINTER(ctypes.c_size_t)]),
        "coop_kernel_add": (c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                    ctypes.POINTER(KernelInfo), ctypes.POINTER(_P)]),
        "coop_kernel_remove": (c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
        "coop_reload": (c_int, [_P, ctypes.POINTER(_P)]),
        "coop_kernels_elems": (c_int, [_P, ctypes.POINTER(ctypes.POINTER(KernelElems)),
                                       ctypes.POINTER(ctypes.c_size_t)]),
        "coop_elem_name": (ctypes.c_char_p, [c_int]),
    }
    for name, (res, args) in list(sigs.items()) + list(optional.items()):
        f = getattr(lib, name, None)
        if f is None and name in optional:
            continue
        f.restype = res
        f.argtypes = args
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [_P]
    libc.free.restype = None
    lib.libc_free = libc.free
    return lib
