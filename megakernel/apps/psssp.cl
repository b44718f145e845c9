//@coop name=psssp kind=cooperative args=u32,buf,buf,buf,buf,buf,buf,u32
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
 * args: 0 mode, 1 in_row[n+1], 2 in_src[m], 3 in_w[m] (in-edges: the
 *       transposed graph), 4 d[n] (0xffffffff = unreached; out), 5 nd[n],
 *       6 flag[2], 7 n
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
  COOP_GLOBAL const coop_u32 *row = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 1);
  COOP_GLOBAL const coop_u32 *src = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 2);
  COOP_GLOBAL const coop_u32 *w = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_u32 *d = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL coop_u32 *nd = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 5);
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 6);
  coop_u32 n = coop_arg_u32(c, 7);
  /* M is stable until the barrier that ends this step */
  coop_u32 stride = coop_global_size(c);

  if (s->phase == 0u) { /* the (min, +) product */
    for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
      coop_u32 best = d[v];
      for (coop_u32 e = row[v]; e < row[v + 1u]; e++) {
        coop_u32 du = d[src[e]];
        if (du == PSSSP_INF) continue;
        coop_u32 x = du + w[e];
        if (x >= du && x < best) best = x; /* x < du: overflow, ignored */
      }
      nd[v] = best;
    }
    s->phase = 1u;
    return psssp_barrier(c);
  }

  if (s->phase == 1u) { /* vector difference: did anything change? */
    coop_u32 changed = 0u;
    for (coop_u32 v = coop_global_id(c); v < n; v += stride)
      if (nd[v] != d[v]) changed = 1u;
    if (changed) coop_st_rlx(&flag[s->round & 1u], 1u);
    s->phase = 2u;
    return psssp_barrier(c);
  }

  /* phase 2: the flag was set before the barrier and nobody writes it now;
   * thread 0 reads it so that the return value is uniform */
  COOP_LOCAL coop_u32 *b = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  if (coop_local_id_c(c) == 0u) b[0] = coop_ld_rlx(&flag[s->round & 1u]);
  coop_wg_barrier();
  coop_u32 more = b[0];
  coop_wg_barrier();
  if (!more) return COOP_DONE; /* a fixed point: all groups leave here */
  for (coop_u32 v = coop_global_id(c); v < n; v += stride) d[v] = nd[v]; /* assignment */
  /* last read in the previous round's phase 2, next set in phase 1 */
  if (coop_global_id(c) == 0u) coop_st_rlx(&flag[(s->round + 1u) & 1u], 0u);
  s->round++;
  s->phase = 0u;
  return psssp_barrier(c);
}
