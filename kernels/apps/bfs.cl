//@coop name=bfs kind=cooperative args=mode:u32,row:buf<u32>,col:buf<u32>,lev:buf<u32>,q0:buf<u32>,q1:buf<u32>,size:buf<u32>,n:u32
//@coop require (n+1)*4 <= len(row)
//@coop require n*4 <= len(lev)
//@coop require n*4 <= len(q0)
//@coop require n*4 <= len(q1)
//@coop require 2*4 <= len(size)
/*
 * bfs.cl: Lonestar GPU style breadth-first search (004 Table 1 "bfs",
 * Fig. 3 / Fig. 4), as one cooperative kernel.
 *
 * Worklist based: the vertices of the current level are in the input
 * worklist; every thread takes input entries strided by the global size,
 * claims each unvisited neighbour for level + 1 with a compare-and-swap on
 * its level (so every vertex enters a worklist exactly once) and pushes it
 * on the output worklist. Then the two worklists swap roles (frontier swap).
 *
 * The loop body has the two barriers of Fig. 3: after the level is processed
 * and swapped (line 12), and after the new output worklist is reset (line
 * 15). Each barrier ends a step, so the body is two steps and `phase` says
 * which comes next. The original form (mode 0) returns COOP_GLOBAL_BARRIER
 * at both; the cooperative form (mode 1) returns COOP_RESIZING_BARRIER at
 * both (Table 1: 2 / 2 converted, no kill, no fork). Only resizing barriers
 * are used, so M (and the stride) is stable from one barrier to the next.
 *
 * args: 0 mode, 1 row[n+1], 2 col[m], 3 lev[n]: the levels (0xFFFFFFFF =
 *       unreached, lev[source] = 0 set by the host), 4 q0, 5 q1: the
 *       worklists (n entries each; q0 holds the source), 6 size[2]
 *       (size[0] = 1), 7 n. The require lines are checked at admission; and
 *       every access goes through a view, so a vertex id >= n or an edge
 *       range past col in a hostile graph faults the job (EFAULT) instead
 *       of reaching memory outside its buffers.
 */
#define BFS_UNREACHED 0xFFFFFFFFu

/* Transmitted (004 Table 1 counts 4 for bfs: level, in/out worklists, and
 * the resume point that the prototype encoded as a program counter). */
struct bfs_state {
  coop_u32 level; /* level of the vertices in the input worklist */
  coop_u32 in;    /* which worklist is the input: in_nodes / out_nodes */
  coop_u32 phase; /* 0: process the level (lines 8-12); 1: reset (lines 13-15) */
};

COOP_FN void bfs_init(struct coop_ctx *c, struct bfs_state *s) {
  (void)c;
  s->level = 0u;
  s->in = 0u;
  s->phase = 0u;
}

/* process_node: claim v's unreached neighbours for level + 1 and push them
 * on the output worklist `out`. work: the step's cancellation poll count
 * (coop_poll_cancel), polled once per chunk of edges: a hostile worklist
 * may name the vertex with every edge in each of its entries, one step's
 * work growing as their product. Returns 1 when cancelled. */
COOP_FN coop_u32 bfs_visit(struct coop_ctx *c, coop_u32 v, coop_u32 level, coop_u32 out,
                           coop_u32 *work) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), col = coop_arg_buf_u32(c, 2);
  coop_buf_atomic_u32 lev = coop_arg_buf_atomic_u32(c, 3);
  coop_buf_u32 q = coop_arg_buf_u32(c, 4u + out);
  coop_buf_atomic_u32 size = coop_arg_buf_atomic_u32(c, 6);
  coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
  for (coop_u32 e = coop_at(row, v); e < end;) {
    coop_u32 stop = coop_poll_chunk(e, end);
    if (coop_poll_cancel(c, work, stop - e)) return 1u;
    for (; e < stop; e++) {
      coop_u32 u = coop_at(col, e);
      if (coop_ld_rlx(coop_ptr(lev, u)) != BFS_UNREACHED) continue; /* cheap test first */
      coop_u32 expected = BFS_UNREACHED;
      if (coop_cas(coop_ptr(lev, u), &expected, level + 1u)) {
        coop_u32 slot = coop_fadd(coop_ptr(size, out), 1u);
        coop_at(q, slot) = u;
      }
    }
  }
  return 0u;
}

COOP_FN coop_u32 bfs_step(struct coop_ctx *c, struct bfs_state *s) {
  coop_u32 bar = coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
  coop_buf_atomic_u32 size = coop_arg_buf_atomic_u32(c, 6);
  if (s->phase == 0u) {
    /* Nothing writes size[in] in this interval, so every thread of every
     * workgroup reads the same value: the DONE decision is uniform. */
    coop_u32 n = coop_ld_acq(coop_ptr(size, s->in));
    if (n == 0u) return COOP_DONE; /* line 8: while (in_nodes.size > 0) */
    coop_buf_u32 q = coop_arg_buf_u32(c, 4u + s->in);
    coop_u32 stride = coop_global_size(c); /* lines 6-7, recomputed after every barrier */
    n = coop_cap_at(q, n);                 /* client data: cut, a fault */
    coop_u32 work = 0u;
    for (coop_u32 i = coop_global_id(c); i < n; i += stride) /* cancelled: to the barrier */
      if (coop_poll_cancel(c, &work, 1u) ||
          bfs_visit(c, coop_at(q, i), s->level, 1u - s->in, &work))
        break;
    s->in = 1u - s->in; /* line 11: swap */
    s->phase = 1u;
    return bar; /* line 12 */
  }
  /* line 13: reset(out_nodes): the old input, read by nobody any more */
  if (coop_global_id(c) == 0u) coop_st_rlx(coop_ptr(size, 1u - s->in), 0u);
  s->level++; /* line 14 */
  s->phase = 0u;
  return bar; /* line 15 */
}
