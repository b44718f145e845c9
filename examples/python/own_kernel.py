#!/usr/bin/python3
"""own_kernel.py: a kernel of your own from Python, without root: added to
coopd (its [kernels] authors must name you), run on NumPy arrays, checked
against NumPy, and removed (docs/python.md, "Kernels of your own").

    examples/python/own_kernel.py [--socket PATH] [--n N] [--groups K] [--keep]

The kernel, axpy_u32, computes y = a * x + y over n unsigned words
(wrapping, as NumPy's uint32 does), its words split over the K workgroups
of the task. Its source is below: the //@coop line gives its name, kind
and signature, the require rules are checked at every submission, and its
buffers are reached through views (docs/kernels.md). A mistake in it is
reported at its own line (coop.BuildError's log).

coopd spaces an author's kernel reloads (each add or remove is one):
[kernels] author_reload_interval_ms, 10 s by default, from the end of the
last. add_kernel and remove_kernel wait that out, as coopctl does, so the
remove here returns about that long after the add.
"""
import argparse
import sys
import time

import numpy as np

import coop


def at_least(lo, kind=int):
    """An argparse type: a number of kind, lo or more (argparse's exit 2
    otherwise, before anything is sent)."""
    def parse(text):
        v = kind(text)
        if not v >= lo:  # NaN too
            raise argparse.ArgumentTypeError(f"{text}: not a number >= {lo}")
        return v
    parse.__name__ = kind.__name__
    return parse


SOURCE = r"""//@coop name=axpy_u32 kind=noncooperative args=y:buf,x:buf,a:u32,n:u32
//@coop require n*4 <= len(y)
//@coop require n*4 <= len(x)
void axpy_u32(struct coop_ctx *c) {
  coop_buf_u32 y = coop_arg_buf_u32(c, 0), x = coop_arg_buf_u32(c, 1);
  coop_u32 a = coop_arg_u32(c, 2), n = coop_arg_u32(c, 3);
  coop_u32 step = coop_num_groups(c) * coop_local_size_c(c);
  for (coop_u32 i = coop_group_id(c) * coop_local_size_c(c) + coop_local_id_c(c); i < n;
       i += step)
    coop_at(y, i) = a * coop_at(x, i) + coop_at(y, i);
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="coopd's socket (default: as libcoop finds it)")
    ap.add_argument("--n", type=at_least(1), default=1 << 20, help="words")
    ap.add_argument("--groups", type=at_least(1), default=1, help="workgroups of the task")
    ap.add_argument("--keep", action="store_true", help="leave the kernel added")
    o = ap.parse_args()

    c = coop.connect(o.socket)
    t0 = time.monotonic()
    try:
        k = c.add_kernel(source=SOURCE, file="axpy_u32.cl")
    except coop.BuildError as e:  # the checker's or compiler's text, at this file's lines
        print(e.log, file=sys.stderr)
        return 1
    except coop.Error as e:
        hint = " (ask the administrator to add you to [kernels] authors)" \
            if e.code == coop.EPERM else ""
        print(f"own_kernel.py: {e}{hint}", file=sys.stderr)
        return 1
    print(f"added {k['name']}({', '.join(f'{n}:{t}' for n, t in k['args'])}) "
          f"in {time.monotonic() - t0:.1f} s; rules: {'; '.join(k['rules'])}")

    # removed however the run ends (an error, Ctrl-C): the kernel stays in
    # coopd's store otherwise, across its restarts, counted against the
    # author's kernels
    try:
        rng = np.random.default_rng(0)
        x = rng.integers(0, 1 << 32, o.n, dtype=np.uint32)
        y = rng.integers(0, 1 << 32, o.n, dtype=np.uint32)
        want = np.uint32(7) * x + y
        r = c.run("axpy_u32", coop.InOut(y), coop.In(x), 7, o.n,  # numbers: its u32s
                  groups=o.groups)
        ok = np.array_equal(y, want)
        print(f"{o.n} words on {o.groups} workgroup(s): {r.times['exec_ns'] / 1e6:.3f} ms on "
              f"the device, {'matches' if ok else 'DIFFERS FROM'} NumPy")
    finally:
        if not o.keep:
            t0 = time.monotonic()
            c.remove_kernel("axpy_u32")  # waits out [kernels] author_reload_interval_ms
            print(f"removed it in {time.monotonic() - t0:.1f} s")
    c.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
