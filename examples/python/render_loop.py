#!/usr/bin/python3
"""render_loop.py: a 60 fps loop of small render tasks (kernels/render.cl,
an n x n matrix product) on coopd, as a game or a UI would submit its
frames, printing the latency percentiles: submit to result in the client,
and the daemon's gather time (how long each frame waited for workgroups).

    examples/python/render_loop.py [--socket PATH] [--frames N] [--fps F] [--n N]
                                   [--how resident|inline]

--how resident (the default): the scene (b) is a device buffer, uploaded
once; each frame's input (a) is produced in a coop.empty array and its
output read from another, both moved by the frame's job itself
(Buffer.io): one request and one reply a frame, no copy in this process.
--how inline: every frame sends a, b and room for the output with its job.
Either way the frame's job is described once (Connection.prepare) and
submitted every frame.
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="coopd's socket (default: as libcoop finds it)")
    ap.add_argument("--frames", type=at_least(1), default=600)
    ap.add_argument("--fps", type=at_least(1e-3, float), default=60.0)
    ap.add_argument("--n", type=at_least(1), default=32, help="matrix size")
    ap.add_argument("--groups", type=at_least(1), default=1)
    ap.add_argument("--how", choices=("resident", "inline"), default="resident")
    o = ap.parse_args()

    rng = np.random.default_rng(0)
    b = rng.random((o.n, o.n), dtype=np.float32)
    # resident: the input and output live in memfds the daemon maps
    a = coop.empty((o.n, o.n)) if o.how == "resident" else np.empty((o.n, o.n), np.float32)
    out = coop.empty((o.n, o.n)) if o.how == "resident" else np.empty((o.n, o.n), np.float32)
    a[:] = rng.random((o.n, o.n), dtype=np.float32)
    period = 1.0 / o.fps
    lat, gather, late = [], [], 0
    with coop.connect(o.socket, name="render_loop") as c:
        # the frame's job, described once (docs/python.md, "A frame loop:
        # prepare once"): each run reads a and writes out again
        if o.how == "resident":
            da, db, dout = c.buffer(a.nbytes), c.buffer(b), c.buffer(out.nbytes)
            frame = c.prepare("render", da.io(write=a), db, dout.io(read=out), np.uint32(o.n),
                              np.uint32(1), groups=o.groups)
        else:
            frame = c.prepare("render", coop.In(a), coop.In(b), coop.Out(out), np.uint32(o.n),
                              np.uint32(1), groups=o.groups)
        start = time.monotonic()
        for f in range(o.frames):
            due = start + f * period
            now = time.monotonic()
            if now < due:
                time.sleep(due - now)
            elif now - due > period:
                late += 1
            a[0, 0] = f % 7  # this frame's input
            t0 = time.monotonic()
            r = frame.run()
            lat.append(time.monotonic() - t0)
            if r.times["gather_ns"] >= 0:
                gather.append(r.times["gather_ns"] / 1e9)
        frame.close()
        if not np.allclose(out, np.asarray(a) @ b, rtol=1e-4):
            raise SystemExit("the last frame differs from a @ b")

    def pct(xs):
        if not xs:
            return "-"
        p = np.percentile(np.array(xs) * 1e3, [50, 90, 99, 100])
        return "p50 {:.3f} p90 {:.3f} p99 {:.3f} max {:.3f} ms".format(*p)

    print(f"{o.frames} frames at {o.fps:g} fps, {o.n}x{o.n}, {o.groups} workgroup(s), {o.how}, "
          f"{late} started more than a frame late")
    print(f"latency  {pct(lat)}")
    print(f"gather   {pct(gather)}")


if __name__ == "__main__":
    main()
