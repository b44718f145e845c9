//@coop name=bc kind=cooperative args=u32,buf,buf,buf,buf,buf,buf,buf,u32,u32,u32
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
 * args: 0 mode, 1 row[n+1], 2 col[m], 3 dist[B*n], 4 sigma[B*n] (float
 *       bits), 5 delta[B*n] (float), 6 bc[n] (float, zeroed), 7 flag[n+1],
 *       8 n, 9 S (sources are vertices 0..S-1, S <= n), 10 B.
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

/* Reset the per-batch arrays and place the sources. */
COOP_FN void bc_reset(struct coop_ctx *c, coop_u32 first) {
  COOP_GLOBAL coop_atomic_u32 *dist = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *sigma = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL float *delta = (COOP_GLOBAL float *)coop_arg_buf(c, 5);
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 7);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  for (coop_u32 v = coop_global_id(c); v <= n; v += stride) {
    coop_st_rlx(&flag[v], 0u);
    if (v == n) continue;
    for (coop_u32 b = 0u; b < nb; b++) {
      coop_u32 i = b * n + v, src = v == first + b;
      coop_st_rlx(&dist[i], src ? 0u : BC_INF);
      coop_st_rlx(&sigma[i], coop_f2u(src ? 1.0f : 0.0f));
      delta[i] = 0.0f;
    }
  }
}

/* Forward pass: expand the vertices at `level` of every source of the batch. */
COOP_FN void bc_forward(struct coop_ctx *c, coop_u32 first, coop_u32 level) {
  COOP_GLOBAL const coop_u32 *row = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 1);
  COOP_GLOBAL const coop_u32 *col = (COOP_GLOBAL const coop_u32 *)coop_arg_buf(c, 2);
  COOP_GLOBAL coop_atomic_u32 *dist = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *sigma = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 7);
  coop_u32 n = coop_arg_u32(c, 8), nb = bc_batch(c, first), stride = coop_global_size(c);
  coop_u32 next = level + 1u;
  for (coop_u32 v = coop_global_id(c); v < n; v += stride)
    for (coop_u32 b = 0u; b < nb; b++) {
      COOP_GLOBAL coop_atomic_u32 *d = dist + b * n, *sg = sigma + b * n;
      if (coop_ld_rlx(&d[v]) != level) continue;
      float sv = coop_u2f(coop_ld_rlx(&sg[v])); /* final: level's adds ended at the barrier */
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
      coop_u32 end = row[v + 1u];
      for (coop_u32 e = row[v]; e < end; e++) {
        coop_u32 w = col[e];
        if (coop_ld_rlx(&d[w]) == next) acc += sv / coop_u2f(coop_ld_rlx(&sg[w])) * (1.0f + dl[w]);
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
