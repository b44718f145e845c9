//@coop name=psssp kind=cooperative args=mode:u32,row:buf<u32>,src:buf<u32>,w:buf<u32>,d:buf<u32>,nd:buf<u32>,flag:buf<u32>,n:u32
//@coop require (n+1)*4 <= len(row)
//@coop require len(src) <= len(w)
//@coop require n*4 <= len(d)
//@coop require n*4 <= len(nd)
//@coop require 2*4 <= len(flag)
/*
 * psssp.cl: Pannotia single-source shortest paths (004 Table 1 "p-sssp";
 * 000 Sec. 3.6.2), as one cooperative kernel. Bellman-Ford in the form of
 * Pannotia's sparse (min, +) matrix-vector product: every round, every
 * vertex pulls over its in-edges, nd[v] = min(d[v], min over u->v of
 * d[u] + w); the round is repeated until no distance changes.
 *
 * Pannotia's host loop launches three kernels per round; here they are
 * three steps, each ending in a global barrier (original form) or a
 * resizing barrier (cooperative form):
 *   phase 0: nd[v] := min(d[v], d[u] + w(u, v) over in-edges)      barrier
 *   phase 1: the round's flag := 1 if some nd[v] != d[v]           barrier
 *   phase 2: leave if the flag is clear; d[v] := nd[v]; clear the
 *            next round's flag                                      barrier
 * d is read across vertices only in phase 0 and written only in phase 2,
 * nd is written only in phase 0: every array access is separated from
 * conflicting ones by a barrier.
 *
 * args: 0 mode, 1 row[n+1], 2 src[m], 3 w[m] (in-edges: the transposed
 *       graph), 4 d[n] (0xffffffff = unreached; out), 5 nd[n], 6 flag[2],
 *       7 n. The require lines are checked at admission; and every access
 *       goes through a view, so a vertex id >= n or an edge range past src
 *       in a hostile graph faults the job (EFAULT) instead of reaching
 *       memory outside its buffers.
 */
#define PSSSP_INF 0xffffffffu

struct psssp_state {
  coop_u32 round;
  coop_u32 phase; /* which step comes next: 0, 1 or 2 */
};

void psssp_init(struct coop_ctx *c, struct psssp_state *s) {
  s->round = 0u;
  s->phase = 0u;
}

COOP_FN coop_u32 psssp_barrier(struct coop_ctx *c) {
  return coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
}

coop_u32 psssp_step(struct coop_ctx *c, struct psssp_state *s) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), src = coop_arg_buf_u32(c, 2);
  coop_buf_u32 w = coop_arg_buf_u32(c, 3), d = coop_arg_buf_u32(c, 4), nd = coop_arg_buf_u32(c, 5);
  coop_buf_atomic_u32 flag = coop_arg_buf_atomic_u32(c, 6);
  coop_u32 n = coop_arg_u32(c, 7);
  /* M is stable until the barrier that ends this step */
  coop_u32 stride = coop_global_size(c);

  if (s->phase == 0u) { /* the (min, +) product */
    /* the edge loop's work is client data's (any row may span every edge):
     * cancelled, it leaves for the barrier (coop_poll_cancel, once per
     * vertex and per chunk of edges) */
    coop_u32 work = 0u;
    for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
      if (coop_poll_cancel(c, &work, 1u)) break;
      coop_u32 best = coop_at(d, v);
      coop_u32 end = coop_cap_at(src, coop_at(row, v + 1u)); /* client data: cut, a fault */
      for (coop_u32 e = coop_at(row, v); e < end;) {
        coop_u32 stop = coop_poll_chunk(e, end);
        if (coop_poll_cancel(c, &work, stop - e)) break;
        for (; e < stop; e++) {
          coop_u32 u = coop_at(src, e), du = coop_at(d, u);
          if (du == PSSSP_INF) continue;
          coop_u32 x = du + coop_at(w, e);
          if (x >= du && x < best) best = x; /* x < du: overflow, ignored */
        }
      }
      coop_at(nd, v) = best;
    }
    s->phase = 1u;
    return psssp_barrier(c);
  }

  if (s->phase == 1u) { /* vector difference: did anything change? */
    coop_u32 changed = 0u;
    for (coop_u32 v = coop_global_id(c); v < n; v += stride)
      if (coop_at(nd, v) != coop_at(d, v)) changed = 1u;
    if (changed) coop_st_rlx(coop_ptr(flag, s->round & 1u), 1u);
    s->phase = 2u;
    return psssp_barrier(c);
  }

  /* phase 2: the flag was set before the barrier and nobody writes it now;
   * thread 0 reads it so that the return value is uniform */
  coop_u32 more = coop_wg_ld_rlx(c, coop_ptr(flag, s->round & 1u));
  if (!more) return COOP_DONE; /* a fixed point: all groups leave here */
  for (coop_u32 v = coop_global_id(c); v < n; v += stride)
    coop_at(d, v) = coop_at(nd, v); /* assignment */
  /* last read in the previous round's phase 2, next set in phase 1 */
  if (coop_global_id(c) == 0u) coop_st_rlx(coop_ptr(flag, (s->round + 1u) & 1u), 0u);
  s->round++;
  s->phase = 0u;
  return psssp_barrier(c);
}
