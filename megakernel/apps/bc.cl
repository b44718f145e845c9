//@coop name=bc kind=cooperative args=u32,buf,buf,buf,buf,buf,buf,buf,u32,u32,u32,buf
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

COOP_FN void bc_fadd(COOP_GLOBAL coop_atomic_u32 *p, float x) {
  coop_u32 old = coop_ld_rlx(p);
  while (!coop_cas(p, &old, coop_f2u(coop_u2f(old) + x))) {
  }
}

/* *p = max(*p, x); for non-negative floats the order of the bits is the
 * order of the values. */
COOP_FN void bc_umax(COOP_GLOBAL coop_atomic_u32 *p, coop_u32 x) {
  coop_u32 old = coop_ld_rlx(p);
  while (old < x && !coop_cas(p, &old, x)) {
  }
}

/* p(L): the power of two at or below scale[L] (at least the smallest
 * normal float, so never 0). */
COOP_FN float bc_pow2(COOP_GLOBAL coop_atomic_u32 *scale) {
  coop_u32 e = coop_ld_rlx(scale) & 0x7F800000u;
  return coop_u2f(e ? e : 0x00800000u);
}

/* Reset the per-batch arrays and place the sources. */
COOP_FN void bc_reset(struct coop_ctx *c, coop_u32 first) {
  COOP_GLOBAL coop_atomic_u32 *dist = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *sigma = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL float *delta = (COOP_GLOBAL float *)coop_arg_buf(c, 5);
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 7);
  COOP_GLOBAL coop_atomic_u32 *scale = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  for (coop_u32 v = coop_global_id(c); v <= n; v += stride) {
    coop_st_rlx(&flag[v], 0u);
    if (v == n) continue;
    for (coop_u32 b = 0u; b < nb; b++) {
      coop_u32 i = b * n + v, src = v == first + b;
      coop_st_rlx(&dist[i], src ? 0u : BC_INF);
      coop_st_rlx(&sigma[i], coop_f2u(src ? 1.0f : 0.0f));
      coop_st_rlx(&scale[i], 0u); /* scale[b * n + L], L < n */
      delta[i] = 0.0f;
    }
  }
}

/* Forward pass: expand the vertices at `level` of every source of the
 * batch, scaling their sigmas first (see the top of this file). */
COOP_FN void bc_forward(struct coop_ctx *c, coop_u32 first, coop_u32 level) {
  COOP_GLOBAL const coop_u32 *row = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 1);
  COOP_GLOBAL const coop_u32 *col = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 2);
  COOP_GLOBAL coop_atomic_u32 *dist = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *sigma = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 7);
  COOP_GLOBAL coop_atomic_u32 *scale = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  coop_u32 next = level + 1u;
  for (coop_u32 v = coop_global_id(c); v < n; v += stride)
    for (coop_u32 b = 0u; b < nb; b++) {
      COOP_GLOBAL coop_atomic_u32 *d = dist + b * n, *sg = sigma + b * n, *sc = scale + b * n;
      if (coop_ld_rlx(&d[v]) != level) continue;
      float sv = coop_u2f(coop_ld_rlx(&sg[v])); /* final: level's adds ended at the barrier */
      if (level > 0u) {
        /* scale[level - 1] is final too; only this thread touches sg[v] now */
        sv = sv / bc_pow2(&sc[level - 1u]);
        coop_st_rlx(&sg[v], coop_f2u(sv));
      }
      bc_umax(&sc[level], coop_f2u(sv));
      coop_u32 end = row[v + 1u];
      for (coop_u32 e = row[v]; e < end; e++) {
        coop_u32 w = col[e], dw = coop_ld_rlx(&d[w]);
        if (dw == BC_INF) {
          if (coop_cas(&d[w], &dw, next)) {
            coop_st_rlx(&flag[next], 1u);
            dw = next;
          } /* else dw now holds the level another thread claimed */
        }
        if (dw == next) bc_fadd(&sg[w], sv);
      }
    }
}

/* Backward pass for level >= 1: delta of the vertices at `level`. */
COOP_FN void bc_backward(struct coop_ctx *c, coop_u32 first, coop_u32 level) {
  COOP_GLOBAL const coop_u32 *row = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 1);
  COOP_GLOBAL const coop_u32 *col = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 2);
  COOP_GLOBAL coop_atomic_u32 *dist = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *sigma = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL float *delta = (COOP_GLOBAL float *)coop_arg_buf(c, 5);
  COOP_GLOBAL float *bc = (COOP_GLOBAL float *)coop_arg_buf(c, 6);
  COOP_GLOBAL coop_atomic_u32 *scale = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 11);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  coop_u32 next = level + 1u;
  for (coop_u32 v = coop_global_id(c); v < n; v += stride) {
    float sum = 0.0f;
    coop_u32 any = 0u;
    for (coop_u32 b = 0u; b < nb; b++) {
      COOP_GLOBAL coop_atomic_u32 *d = dist + b * n, *sg = sigma + b * n;
      COOP_GLOBAL float *dl = delta + b * n;
      if (coop_ld_rlx(&d[v]) != level) continue;
      float sv = coop_u2f(coop_ld_rlx(&sg[v])), acc = 0.0f;
      float p = bc_pow2(&scale[b * n + level]); /* sigma(w) = sigma'(w) * p * P(level) */
      coop_u32 end = row[v + 1u];
      for (coop_u32 e = row[v]; e < end; e++) {
        coop_u32 w = col[e];
        if (coop_ld_rlx(&d[w]) == next)
          acc += sv / (coop_u2f(coop_ld_rlx(&sg[w])) * p) * (1.0f + dl[w]);
      }
      dl[v] = acc;
      sum += acc;
      any = 1u;
    }
    if (any) bc[v] += sum; /* level >= 1: v is not the source */
  }
}

COOP_FN coop_u32 bc_step(struct coop_ctx *c, struct bc_state *s) {
  coop_u32 bar = coop_arg_u32(c, 0) == 0u ? COOP_GLOBAL_BARRIER : COOP_RESIZING_BARRIER;
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 7);
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
    if (s->level > 0u && coop_ld_rlx(&flag[s->level]) == 0u) {
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
