//@coop name=bc kind=cooperative args=mode:u32,row:buf<u32>,col:buf<u32>,dist:buf<u32>,sigma:buf<u32>,delta:buf<f32>,bc:buf<f32>,flag:buf<u32>,n:u32,S:u32,B:u32,scale:buf<u32>
//@coop require (n+1)*4 <= len(row)
//@coop require B*n*4 <= len(dist)
//@coop require B*n*4 <= len(sigma)
//@coop require B*n*4 <= len(delta)
//@coop require n*4 <= len(bc)
//@coop require (n+1)*4 <= len(flag)
//@coop require B*n*4 <= len(scale)
//@coop require S <= n
//@coop require B >= 1
/*
 * bc.cl: Pannotia betweenness centrality (thesis 000 Table 5.2 "BC", 004
 * Sec. 5), Brandes' algorithm on an unweighted graph, as one cooperative
 * kernel. bc[v] = sum over the sources s != v of delta_s(v), where
 * delta_s(v) = sum over the successors w of v in s's shortest-path DAG of
 * sigma_s(v) / sigma_s(w) * (1 + delta_s(w)).
 *
 * Sources are taken in batches of B (the host picks B; B = 1 is Pannotia's
 * one source at a time): the B traversals of a batch advance level by level
 * together, so a batch costs the barriers of its deepest source instead of
 * the sum over its sources. Row b of dist, sigma, delta belongs to source
 * first + b. Like Pannotia the passes are topology driven: they stride over
 * all vertices and work on those at the current level. Per batch:
 *   init      reset dist, sigma, delta and the level flags; place sources.
 *   forward   one pass per level L: a vertex at level L claims its unvisited
 *             out-neighbours for L + 1 (compare-and-swap on dist), marks
 *             flag[L + 1], and adds its sigma to every neighbour at L + 1
 *             (float atomic add); the pass for L + 1 first reads flag[L + 1]
 *             and, when no vertex reached that level, turns to backward.
 *   backward  one pass per level L from depth - 1 down to 1: a vertex at
 *             level L pulls delta from its out-neighbours at L + 1, and the
 *             thread that owns v adds v's deltas of the whole batch to bc[v]
 *             (a pull: no atomics, one writer per vertex).
 * Every pass ends in a barrier and is one step; `phase` and `level` say
 * which pass comes next. The prototype of 000 converted 3 of BC's 6
 * barriers, the others being deeper in the call stack; here every barrier
 * is a step's return value, so all of them are converted: the original form
 * (mode 0) returns COOP_GLOBAL_BARRIER, the cooperative form (mode 1)
 * COOP_RESIZING_BARRIER, at each. Only resizing barriers, so M is stable
 * between two of them and the strided passes cover every vertex once.
 *
 * Sigma is scaled per level. The number of shortest paths grows
 * exponentially with depth (C(2k-2, k-1) between opposite corners of a k x k
 * grid: 1e75 at k = 128), far past a float's 3.4e38, and an overflowed
 * sigma makes every delta inf / inf = NaN. Only the ratio
 * sigma(v) / sigma(w) of neighbouring levels is ever used, so the forward
 * pass of level L stores sigma'(v) = sigma(v) / P(L), where P(0) = 1 and
 * P(L + 1) = P(L) * p(L), p(L) the power of two at or below the largest
 * sigma' of level L (scale[L]: an atomic max over the float bits, final at
 * the pass's barrier). Then sigma'(w) < 2 * indegree(w), and the backward
 * pass uses sigma(v) / sigma(w) = sigma'(v) / (sigma'(w) * p(L)). Dividing
 * by a power of two is exact, so the roundings are those of the unscaled
 * sums (bc.c derives the check's tolerance from them).
 *
 * args: 0 mode, 1 row[n+1], 2 col[m], 3 dist[B*n], 4 sigma[B*n] (float
 *       bits), 5 delta[B*n] (float), 6 bc[n] (float, zeroed), 7 flag[n+1],
 *       8 n, 9 S (sources are vertices 0..S-1, S <= n), 10 B,
 *       11 scale[B*n] (float bits, the largest sigma' of each level).
 *       The require lines are checked at admission; and every access goes
 *       through a view (a source's row of dist, sigma, delta, scale through
 *       a sub-view of n elements), so a vertex id >= n or an edge range
 *       past col in a hostile graph faults the job (EFAULT) instead of
 *       reaching another row or memory outside its buffers.
 */
#define BC_INF 0xFFFFFFFFu
#define BC_INIT 0u
#define BC_FWD 1u
#define BC_BWD 2u

/* Transmitted (000 Table 5.2 counts 3 for BC; the resume point is the 4th,
 * a program counter in the prototype). */
struct bc_state {
  coop_u32 first; /* first source of the current batch */
  coop_u32 level; /* level of the next forward or backward pass */
  coop_u32 phase; /* BC_INIT, BC_FWD or BC_BWD */
};

COOP_FN void bc_init(struct coop_ctx *c, struct bc_state *s) {
  (void)c;
  s->first = 0u;
  s->level = 0u;
  s->phase = BC_INIT;
}

/* Sources in the batch starting at first. */
COOP_FN coop_u32 bc_batch(struct coop_ctx *c, coop_u32 first) {
  coop_u32 nsrc = coop_arg_u32(c, 9), b = coop_arg_u32(c, 10);
  return nsrc - first < b ? nsrc - first : b;
}

/* v[i] += x, v holding float bits */
COOP_FN void bc_fadd(coop_buf_atomic_u32 v, coop_u32 i, float x) {
  coop_u32 old = coop_ld_rlx(coop_ptr(v, i));
  while (!coop_cas(coop_ptr(v, i), &old, coop_f2u(coop_u2f(old) + x))) {
  }
}

/* v[i] = max(v[i], x); for non-negative floats the order of the bits is the
 * order of the values. */
COOP_FN void bc_umax(coop_buf_atomic_u32 v, coop_u32 i, coop_u32 x) {
  coop_u32 old = coop_ld_rlx(coop_ptr(v, i));
  while (old < x && !coop_cas(coop_ptr(v, i), &old, x)) {
  }
}

/* p(L): the power of two at or below sc[L] (at least the smallest normal
 * float, so never 0); sc is one source's row of scale. */
COOP_FN float bc_pow2(coop_buf_atomic_u32 sc, coop_u32 level) {
  coop_u32 e = coop_ld_rlx(coop_ptr(sc, level)) & 0x7F800000u;
  return coop_u2f(e ? e : 0x00800000u);
}

/* Reset the per-batch arrays and place the sources. */
COOP_FN void bc_reset(struct coop_ctx *c, coop_u32 first) {
  coop_buf_atomic_u32 dist = coop_arg_buf_atomic_u32(c, 3), sigma = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_f32 delta = coop_arg_buf_f32(c, 5);
  coop_buf_atomic_u32 flag = coop_arg_buf_atomic_u32(c, 7), scale = coop_arg_buf_atomic_u32(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  for (coop_u32 v = coop_global_id(c); v <= n; v += stride) {
    coop_st_rlx(coop_ptr(flag, v), 0u);
    if (v == n) continue;
    for (coop_u32 b = 0u; b < nb; b++) {
      coop_u64 i = (coop_u64)b * n + v;
      coop_u32 src = v == first + b;
      coop_st_rlx(coop_ptr(dist, i), src ? 0u : BC_INF);
      coop_st_rlx(coop_ptr(sigma, i), coop_f2u(src ? 1.0f : 0.0f));
      coop_st_rlx(coop_ptr(scale, i), 0u); /* scale[b * n + L], L < n */
      coop_at(delta, i) = 0.0f;
    }
  }
}

/* Forward pass: expand the vertices at `level` of every source of the
 * batch, scaling their sigmas first (see the top of this file). Row b of
 * dist, sigma and scale is a sub-view of n elements: a vertex id >= n from
 * a hostile graph faults instead of reaching another source's row. Both
 * passes poll their cancellation (coop_poll_cancel) once per vertex, per
 * source and per chunk of edges: rows that all span every edge make one
 * pass n x B x m long. */
COOP_FN void bc_forward(struct coop_ctx *c, coop_u32 first, coop_u32 level) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), col = coop_arg_buf_u32(c, 2);
  coop_buf_atomic_u32 dist = coop_arg_buf_atomic_u32(c, 3), sigma = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_atomic_u32 flag = coop_arg_buf_atomic_u32(c, 7), scale = coop_arg_buf_atomic_u32(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  coop_u32 next = level + 1u, work = 0u;
  for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
    if (coop_poll_cancel(c, &work, 1u)) break;
    for (coop_u32 b = 0u; b < nb; b++) {
      if (coop_poll_cancel(c, &work, 1u)) break;
      coop_buf_atomic_u32 d, sg, sc;
      coop_sub(d, dist, (coop_u64)b * n, n);
      coop_sub(sg, sigma, (coop_u64)b * n, n);
      coop_sub(sc, scale, (coop_u64)b * n, n);
      if (coop_ld_rlx(coop_ptr(d, v)) != level) continue;
      /* final: level's adds ended at the barrier */
      float sv = coop_u2f(coop_ld_rlx(coop_ptr(sg, v)));
      if (level > 0u) {
        /* sc[level - 1] is final too; only this thread touches sg[v] now */
        sv = sv / bc_pow2(sc, level - 1u);
        coop_st_rlx(coop_ptr(sg, v), coop_f2u(sv));
      }
      bc_umax(sc, level, coop_f2u(sv));
      coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
      for (coop_u32 e = coop_at(row, v); e < end;) {
        coop_u32 stop = coop_poll_chunk(e, end);
        if (coop_poll_cancel(c, &work, stop - e)) break;
        for (; e < stop; e++) {
          coop_u32 w = coop_at(col, e), dw = coop_ld_rlx(coop_ptr(d, w));
          if (dw == BC_INF) {
            if (coop_cas(coop_ptr(d, w), &dw, next)) {
              coop_st_rlx(coop_ptr(flag, next), 1u);
              dw = next;
            } /* else dw now holds the level another thread claimed */
          }
          if (dw == next) bc_fadd(sg, w, sv);
        }
      }
    }
  }
}

/* Backward pass for level >= 1: delta of the vertices at `level`. */
COOP_FN void bc_backward(struct coop_ctx *c, coop_u32 first, coop_u32 level) {
  coop_buf_u32 row = coop_arg_buf_u32(c, 1), col = coop_arg_buf_u32(c, 2);
  coop_buf_atomic_u32 dist = coop_arg_buf_atomic_u32(c, 3), sigma = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_f32 delta = coop_arg_buf_f32(c, 5), bc = coop_arg_buf_f32(c, 6);
  coop_buf_atomic_u32 scale = coop_arg_buf_atomic_u32(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  coop_u32 next = level + 1u, work = 0u;
  for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
    if (coop_poll_cancel(c, &work, 1u)) break;
    float sum = 0.0f;
    coop_u32 any = 0u;
    for (coop_u32 b = 0u; b < nb; b++) {
      if (coop_poll_cancel(c, &work, 1u)) break;
      coop_buf_atomic_u32 d, sg, sc;
      coop_buf_f32 dl;
      coop_sub(d, dist, (coop_u64)b * n, n);
      coop_sub(sg, sigma, (coop_u64)b * n, n);
      coop_sub(sc, scale, (coop_u64)b * n, n);
      coop_sub(dl, delta, (coop_u64)b * n, n);
      if (coop_ld_rlx(coop_ptr(d, v)) != level) continue;
      float sv = coop_u2f(coop_ld_rlx(coop_ptr(sg, v))), acc = 0.0f;
      float p = bc_pow2(sc, level); /* sigma(w) = sigma'(w) * p * P(level) */
      coop_u32 end = coop_cap_at(col, coop_at(row, v + 1u)); /* client data: cut, a fault */
      for (coop_u32 e = coop_at(row, v); e < end;) {
        coop_u32 stop = coop_poll_chunk(e, end);
        if (coop_poll_cancel(c, &work, stop - e)) break;
        for (; e < stop; e++) {
          coop_u32 w = coop_at(col, e);
          if (coop_ld_rlx(coop_ptr(d, w)) == next)
            acc += sv / (coop_u2f(coop_ld_rlx(coop_ptr(sg, w))) * p) * (1.0f + coop_at(dl, w));
        }
      }
      coop_at(dl, v) = acc;
      sum += acc;
      any = 1u;
    }
    if (any) coop_at(bc, v) += sum; /* level >= 1: v is not the source */
  }
}

COOP_FN coop_u32 bc_step(struct coop_ctx *c, struct bc_state *s) {
  coop_u32 bar = coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
  coop_buf_atomic_u32 flag = coop_arg_buf_atomic_u32(c, 7);
  if (s->phase == BC_INIT) {
    if (s->first >= coop_arg_u32(c, 9)) return COOP_DONE;
    bc_reset(c, s->first);
    s->level = 0u;
    s->phase = BC_FWD;
    return bar; /* barrier 1: arrays reset */
  }
  if (s->phase == BC_FWD) {
    /* Did the last pass reach `level`? flag[level] is not written in this
     * interval (this pass writes flag[level + 1]), so all threads agree. */
    if (s->level > 0u && coop_ld_rlx(coop_ptr(flag, s->level)) == 0u) {
      coop_u32 depth = s->level - 1u; /* deepest level reached */
      if (depth >= 2u) {
        /* this step wrote nothing since the barrier: go straight on */
        s->level = depth - 1u; /* vertices at depth have delta 0 */
        s->phase = BC_BWD;
        return COOP_CONTINUE;
      }
      s->first += coop_arg_u32(c, 10); /* no successor below level 1: no delta */
      s->phase = BC_INIT;
      return bar;
    }
    bc_forward(c, s->first, s->level);
    s->level++;
    return bar; /* barrier 2: level expanded, its sigmas complete */
  }
  bc_backward(c, s->first, s->level);
  if (s->level == 1u) {
    s->first += coop_arg_u32(c, 10);
    s->phase = BC_INIT;
  } else {
    s->level--;
  }
  return bar; /* barrier 3: the deltas of level complete */
}
