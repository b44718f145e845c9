"""What subscribers that read nothing cost coopd: N connections subscribe to
every event kind and read nothing while J periodic renders run (8 x 8, one
instance every 100 us); coopd's RSS is sampled every 250 ms, and at the end
the first subscriber reads what it was sent. bench/RESULTS.md, "Buffers'
element types; live events for a reader behind; ...".

usage: events_unread.py --socket PATH --pid COOPD_PID [--subscribers N]
                        [--jobs J] [--seconds S]
(PYTHONPATH=python, COOP_LIBRARY=BUILD/lib/libcoop.so.0)
"""
import argparse
import time

import numpy as np

import coop


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--pid", type=int, required=True, help="coopd's pid (its RSS is read)")
    ap.add_argument("--subscribers", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=4)
    o = ap.parse_args()
    subs = [coop.connect(o.socket) for _ in range(o.subscribers)]
    for s in subs:
        s.subscribe(lambda e: None)  # and never read
    c = coop.connect(o.socket)
    n = 8
    a, b, out = (np.zeros(n * n, np.float32) for _ in range(3))
    count = min(int(o.seconds * 10000), 65536)
    r0 = rss(o.pid)
    jobs = [c.submit("render", coop.In(a), coop.In(b), coop.Out(out), n, 1,
                     periodic=dict(period_us=100, count=count)) for _ in range(o.jobs)]
    samples, t0 = [], time.monotonic()
    while time.monotonic() - t0 < o.seconds + 2:
        time.sleep(0.25)
        samples.append(rss(o.pid))
    for j in jobs:
        j.wait()
    kinds = {}
    subs[0].subscribe(lambda e: kinds.__setitem__(e["kind"], kinds.get(e["kind"], 0) + 1))
    while subs[0].poll_events(0.5):
        pass
    print(f"{o.subscribers} subscriber(s) reading nothing, {o.jobs} render(s) of {count} "
          f"instances: coopd RSS {r0} KiB before, peak {max(samples + [r0])} KiB "
          f"(+{max(samples + [r0]) - r0}); every 1 s: {samples[::4]}")
    print("the first subscriber read afterwards:", kinds)


if __name__ == "__main__":
    main()
