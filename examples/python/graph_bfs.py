#!/usr/bin/python3
"""graph_bfs.py: breadth-first search of a SciPy sparse graph as one
cooperative coop job (the bfs application's kernel, kernels/apps/bfs.cl),
checked against scipy.sparse.csgraph.

The graph's CSR arrays go to the device once, as device buffers, and every
source then runs on them: only the levels and the worklist's seed travel
per job. coopd must serve the applications' kernels (coopd --kernels
KERNELS:BUILD/kernels/apps, as `coopctl app` needs).

    examples/python/graph_bfs.py [--socket PATH] [--vertices N] [--sources K]
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

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

UNREACHED = 0xFFFFFFFF


def bfs(c, row, col, scratch, n, source, groups):
    """Levels from source (UNREACHED where none) on the device buffers
    row, col (the CSR) and scratch (the second worklist, n entries)."""
    lev = np.full(n, UNREACHED, np.uint32)
    lev[source] = 0
    q0 = np.zeros(n, np.uint32)
    q0[0] = source
    size = np.array([1, 0], np.uint32)  # entries in worklist 0 and 1
    # args: mode (1: the cooperative form), row, col, lev, q0, q1, size, n;
    # a cooperative job, bfs's own kind (coopd takes it)
    c.run("bfs", 1, row, col, lev, coop.In(q0), scratch, coop.In(size), n, groups=groups)
    return lev


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="coopd's socket (default: as libcoop finds it)")
    ap.add_argument("--vertices", type=at_least(1), default=100000)
    ap.add_argument("--degree", type=at_least(0, float), default=4.0,
                    help="mean out-degree (at most --vertices)")
    ap.add_argument("--sources", type=at_least(0), default=3)
    ap.add_argument("--groups", type=at_least(1), help="workgroups (default: every worker)")
    o = ap.parse_args()
    if o.degree > o.vertices:  # SciPy's density, degree / vertices, is at most 1
        ap.error(f"--degree {o.degree:g} is more than --vertices {o.vertices}")

    n = o.vertices
    g = sp.random(n, n, density=o.degree / n, format="csr", dtype=np.float32,
                  random_state=np.random.default_rng(7))
    g = (g + g.T).tocsr()  # undirected, so that most vertices are reached
    g.sort_indices()
    row = g.indptr.astype(np.uint32)
    col = g.indices.astype(np.uint32) if g.nnz else np.zeros(1, np.uint32)

    with coop.connect(o.socket, name="graph_bfs") as c:
        groups = o.groups or c.info["workers"]
        print(f"{n} vertices, {g.nnz} edges; {c.info['device']}, {groups} workgroups")
        with c.buffer(row) as drow, c.buffer(col) as dcol, c.buffer(4 * n) as q1:
            for s in np.random.default_rng(1).integers(0, n, o.sources):
                t0 = time.monotonic()
                lev = bfs(c, drow, dcol, q1, n, int(s), groups)
                ms = (time.monotonic() - t0) * 1e3
                want = csgraph.shortest_path(g, unweighted=True, indices=int(s))
                want = np.where(np.isinf(want), UNREACHED, want).astype(np.uint32)
                bad = np.count_nonzero(lev != want)
                reached = np.count_nonzero(lev != UNREACHED)
                print(f"source {s}: {reached} reached, depth {lev[lev != UNREACHED].max()}, "
                      f"{ms:.1f} ms, {'matches' if bad == 0 else f'{bad} levels differ from'} "
                      "scipy.sparse.csgraph")
                if bad:
                    raise SystemExit(1)


if __name__ == "__main__":
    main()
