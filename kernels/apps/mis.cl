//@coop name=mis kind=cooperative args=mode:u32,row:buf<u32>,col:buf<u32>,prio:buf<u32>,st:buf<u32>,cand:buf<u32>,flag:buf<u32>,n:u32
//@coop require (n+1)*4 <= len(row)
//@coop require n*4 <= len(prio)
//@coop require n*4 <= len(st)
//@coop require n*4 <= len(cand)
//@coop require 2*4 <= len(flag)
/*
 * mis.cl: Pannotia maximal independent set (004 Table 1 "mis"; 000
 * Sec. 3.6.2), as one cooperative kernel. Luby-style rounds with
 * priorities from the host (prio[], a hash of the vertex id; ties to the
 * larger id): an undecided vertex whose priority beats that of each
 * undecided neighbour joins the set, and its neighbours leave the race.
 *
 * Pannotia's host loop launches three kernels per round; here they are
 * three steps, each ending in a global barrier (original form) or a
 * resizing barrier (cooperative form):
 *   phase 0: cand[v] := v beats every undecided neighbour; the round's
 *            flag := 1 if some vertex is undecided;                   barrier
 *   phase 1: leave if none was undecided; st[v] := IN for each candidate;
 *            clear the next round's flag;                             barrier
 *   phase 2: an undecided vertex with a neighbour IN becomes OUT;     barrier
 * In phase 2 a vertex reads its neighbours' st while their owners may write
 * them (UNDECIDED -> OUT), so st is accessed with relaxed atomics.
 *
 * args: 0 mode, 1 row[n+1], 2 col[m], 3 prio[n], 4 st[n] (0 undecided,
 *       1 in, 2 out; out), 5 cand[n], 6 flag[2], 7 n. The require lines
 *       are checked at admission; and every access goes through a view, so
 *       a vertex id >= n or an edge range past col in a hostile graph
 *       faults the job (EFAULT) instead of reaching memory outside its
 *       buffers.
 */
#define MIS_UNDECIDED 0u
#define MIS_IN 1u
#define MIS_OUT 2u

struct mis_state {
  coop_u32 round;
  coop_u32 phase; /* which step comes next: 0, 1 or 2 */
};

void mis_init(struct coop_ctx *c, struct mis_state *s) {
  s->round = 0u;
  s->phase = 0u;
}

COOP_FN coop_u32 mis_barrier(struct coop_ctx *c) {
  return coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
}

coop_u32 mis_step(struct coop_ctx *c, struct mis_state *s) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), col = coop_arg_buf_u32(c, 2);
  coop_buf_u32 prio = coop_arg_buf_u32(c, 3);
  coop_buf_atomic_u32 st = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_u32 cand = coop_arg_buf_u32(c, 5);
  coop_buf_atomic_u32 flag = coop_arg_buf_atomic_u32(c, 6);
  coop_u32 n = coop_arg_u32(c, 7);
  /* M is stable until the barrier that ends this step */
  coop_u32 stride = coop_global_size(c);

  /* the edge loops' work is client data's (any row may span every edge):
   * cancelled, they leave for the barrier (coop_poll_cancel, once per
   * vertex and per chunk of edges) */
  coop_u32 work = 0u;
  if (s->phase == 0u) {
    coop_u32 any = 0u;
    for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
      if (coop_poll_cancel(c, &work, 1u)) break;
      if (coop_ld_rlx(coop_ptr(st, v)) != MIS_UNDECIDED) continue;
      any = 1u;
      coop_u32 win = 1u;
      coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
      for (coop_u32 e = coop_at(row, v); e < end && win;) {
        coop_u32 stop = coop_poll_chunk(e, end);
        if (coop_poll_cancel(c, &work, stop - e)) break;
        for (; e < stop && win; e++) {
          coop_u32 u = coop_at(col, e);
          if (u != v && coop_ld_rlx(coop_ptr(st, u)) == MIS_UNDECIDED &&
              coop_prio_beats(prio, u, v))
            win = 0u;
        }
      }
      coop_at(cand, v) = win;
    }
    if (any) coop_st_rlx(coop_ptr(flag, s->round & 1u), 1u);
    s->phase = 1u;
    return mis_barrier(c);
  }

  if (s->phase == 1u) {
    /* the flag was set before the barrier and nobody writes it now; thread
     * 0 reads it so that the return value is uniform */
    coop_u32 more = coop_wg_ld_rlx(c, coop_ptr(flag, s->round & 1u));
    if (!more) return COOP_DONE; /* every vertex decided: all groups leave here */
    for (coop_u32 v = coop_global_id(c); v < n; v += stride)
      if (coop_ld_rlx(coop_ptr(st, v)) == MIS_UNDECIDED && coop_at(cand, v))
        coop_st_rlx(coop_ptr(st, v), MIS_IN);
    /* last read in the previous round's phase 1, next set in phase 0 */
    if (coop_global_id(c) == 0u) coop_st_rlx(coop_ptr(flag, (s->round + 1u) & 1u), 0u);
    s->phase = 2u;
    return mis_barrier(c);
  }

  /* phase 2: the neighbours of the new members leave the race */
  for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
    if (coop_poll_cancel(c, &work, 1u)) break;
    if (coop_ld_rlx(coop_ptr(st, v)) != MIS_UNDECIDED) continue;
    coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
    coop_u32 out = 0u;
    for (coop_u32 e = coop_at(row, v); e < end && !out;) {
      coop_u32 stop = coop_poll_chunk(e, end);
      if (coop_poll_cancel(c, &work, stop - e)) break;
      for (; e < stop && !out; e++) {
        coop_u32 u = coop_at(col, e);
        if (u != v && coop_ld_rlx(coop_ptr(st, u)) == MIS_IN) out = 1u;
      }
    }
    if (out) coop_st_rlx(coop_ptr(st, v), MIS_OUT);
  }
  s->round++;
  s->phase = 0u;
  return mis_barrier(c);
}
