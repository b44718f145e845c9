"""Compares python/coop/_capi.py's ctypes structs with client/coop.h's, as
layout.c prints them: every size and every field offset, and every field
of each ctypes struct must be one layout.c names (a field added on one side
only fails too); and the limits of coop_limits.h it restates (LIMITS).

usage: test_layout.py LAYOUT_PROGRAM PYTHON_PACKAGE_DIR
"""
import subprocess
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: {sys.executable} cannot import numpy (Debian: apt-get install python3-numpy)")
    sys.exit(77)
sys.path.insert(0, sys.argv[2])
from coop import _capi  # noqa: E402

c = {}
for line in subprocess.run([sys.argv[1]], check=True, capture_output=True,
                           text=True).stdout.splitlines():
    key, *rest = line.split()
    c[key if len(rest) == 1 else key + ":size"] = int(rest[-1])

fails = 0
for name, cls in _capi.STRUCTS.items():
    want = c.get(name + ":size")
    if want != _capi.ctypes.sizeof(cls):
        print(f"FAIL: sizeof {name}: C {want}, ctypes {_capi.ctypes.sizeof(cls)}")
        fails += 1
    for f, _ in cls._fields_:
        off = getattr(cls, f).offset
        if c.get(f"{name}.{f}") != off:
            print(f"FAIL: {name}.{f}: C {c.get(name + '.' + f)}, ctypes {off}")
            fails += 1
    cfields = {k.split(".", 1)[1] for k in c if k.startswith(name + ".")}
    for f in cfields - {f for f, _ in cls._fields_}:
        print(f"FAIL: {name}.{f} is in coop.h but not in _capi.py")
        fails += 1
for name, v in _capi.LIMITS.items():
    if c.get(name) != v:
        print(f"FAIL: {name}: C {c.get(name)}, _capi.py {v}")
        fails += 1
print(f"{len(_capi.STRUCTS)} structs, {len(_capi.LIMITS)} limits, {fails} failures")
sys.exit(1 if fails else 0)
