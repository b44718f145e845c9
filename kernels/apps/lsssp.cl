//@coop name=lsssp kind=cooperative args=mode:u32,row:buf<u32>,col:buf<u32>,w:buf<u32>,dist:buf<u32>,q0:buf<u32>,q1:buf<u32>,size:buf<u32>,stamp:buf<u32>,n:u32
//@coop require (n+1)*4 <= len(row)
//@coop require len(col) <= len(w)
//@coop require n*4 <= len(dist)
//@coop require n*4 <= len(q0)
//@coop require n*4 <= len(q1)
//@coop require 2*4 <= len(size)
//@coop require n*4 <= len(stamp)
/*
 * lsssp.cl: Lonestar GPU worklist SSSP (004 Table 1 "l-sssp", thesis 000
 * Table 5.2 "SSSP_lonestar"), as one cooperative kernel.
 *
 * Bellman-Ford over a worklist: every thread takes input-worklist entries
 * strided by the global size and relaxes the out-edges of each: an atomic
 * min on the target's distance, and when that improved it, a push of the
 * target on the output worklist. Pushes are deduplicated per iteration with
 * a stamp per vertex (atomic max of iteration + 1: only the first improver
 * of an iteration pushes), so a worklist holds each vertex at most once and
 * n entries suffice. Then the worklists swap roles.
 *
 * Same loop structure as bfs (004 Fig. 3 / Fig. 4): two barriers per
 * iteration, after relaxing and swapping (line 12) and after resetting the
 * new output worklist (line 15); each ends a step, `phase` says which comes
 * next. Original form (mode 0): COOP_GLOBAL_BARRIER at both; cooperative
 * form (mode 1): COOP_RESIZING_BARRIER at both (Table 1: 2 / 2, no kill, no
 * fork). Only resizing barriers, so M is stable between two of them.
 *
 * args: 0 mode, 1 row[n+1], 2 col[m], 3 w[m], 4 dist[n] (0xFFFFFFFF =
 *       unreached; dist[source] = 0 by the host), 5 q0, 6 q1: the
 *       worklists (n entries each; q0 holds the source), 7 size[2]
 *       (size[0] = 1), 8 stamp[n] (zeroed), 9 n. The require lines are
 *       checked at admission; and every access goes through a view, so a
 *       vertex id >= n or an edge range past col in a hostile graph faults
 *       the job (EFAULT) instead of reaching memory outside its buffers.
 */
#define LSSSP_INF 0xFFFFFFFFu

/* Transmitted (Table 1 counts 4: iteration, in/out worklists, resume point) */
struct lsssp_state {
  coop_u32 iter;  /* iteration: pushes of this one carry stamp iter + 1 */
  coop_u32 in;    /* which worklist is the input */
  coop_u32 phase; /* 0: relax (lines 8-12); 1: reset (lines 13-15) */
};

COOP_FN void lsssp_init(struct coop_ctx *c, struct lsssp_state *s) {
  (void)c;
  s->iter = 0u;
  s->in = 0u;
  s->phase = 0u;
}

/* Relax v's out-edges; push improved targets on worklist `out`. work: the
 * step's cancellation poll count (coop_poll_cancel, once per chunk of
 * edges; as in bfs, a hostile worklist makes one step's work the product
 * of two buffer lengths). Returns 1 when cancelled. */
COOP_FN coop_u32 lsssp_relax(struct coop_ctx *c, coop_u32 v, coop_u32 stamp, coop_u32 out,
                             coop_u32 *work) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), col = coop_arg_buf_u32(c, 2);
  coop_buf_u32 w = coop_arg_buf_u32(c, 3);
  coop_buf_atomic_u32 dist = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_u32 q = coop_arg_buf_u32(c, 5u + out);
  coop_buf_atomic_u32 size = coop_arg_buf_atomic_u32(c, 7), mark = coop_arg_buf_atomic_u32(c, 8);
  /* the current distance: possibly already lower than when v was pushed */
  coop_u32 d = coop_ld_rlx(coop_ptr(dist, v));
  coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
  for (coop_u32 e = coop_at(row, v); e < end;) {
    coop_u32 stop = coop_poll_chunk(e, end);
    if (coop_poll_cancel(c, work, stop - e)) return 1u;
    for (; e < stop; e++) {
      coop_u32 u = coop_at(col, e), nd = d + coop_at(w, e);
      if (nd < d) continue;                               /* overflow: no shorter than unreached */
      if (coop_ld_rlx(coop_ptr(dist, u)) <= nd) continue; /* cheap test first */
      if (coop_fmin(coop_ptr(dist, u), nd) <= nd) continue;
      if (coop_fmax(coop_ptr(mark, u), stamp) < stamp) {
        coop_u32 slot = coop_fadd(coop_ptr(size, out), 1u);
        coop_at(q, slot) = u;
      }
    }
  }
  return 0u;
}

COOP_FN coop_u32 lsssp_step(struct coop_ctx *c, struct lsssp_state *s) {
  coop_u32 bar = coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
  coop_buf_atomic_u32 size = coop_arg_buf_atomic_u32(c, 7);
  if (s->phase == 0u) {
    /* nothing writes size[in] in this interval: a uniform DONE decision */
    coop_u32 n = coop_ld_acq(coop_ptr(size, s->in));
    if (n == 0u) return COOP_DONE; /* line 8 */
    coop_buf_u32 q = coop_arg_buf_u32(c, 5u + s->in);
    coop_u32 stride = coop_global_size(c); /* recomputed after every barrier */
    n = coop_cap_at(q, n);                 /* client data: cut, a fault */
    coop_u32 work = 0u;
    for (coop_u32 i = coop_global_id(c); i < n; i += stride) /* cancelled: to the barrier */
      if (coop_poll_cancel(c, &work, 1u) ||
          lsssp_relax(c, coop_at(q, i), s->iter + 1u, 1u - s->in, &work))
        break;
    s->in = 1u - s->in; /* line 11: swap */
    s->phase = 1u;
    return bar; /* line 12 */
  }
  if (coop_global_id(c) == 0u) coop_st_rlx(coop_ptr(size, 1u - s->in), 0u); /* line 13 */
  s->iter++;                                                                /* line 14 */
  s->phase = 0u;
  return bar; /* line 15 */
}
