//@coop name=octree kind=cooperative args=u32,buf,buf,buf,buf,buf,buf,buf,u32,u32,u32,u32,u32,u32
/*
 * octree.cl: octree partitioning with work stealing (004 Table 1 "octree",
 * after Cederman and Tsigas' load-balancing benchmark). A task is a node:
 * a range [begin, end) of point indices in the permutation buffer of its
 * depth's parity. A node with more than `thresh` points (and depth below
 * `maxdepth`) partitions its range by octant into the other buffer (stable:
 * a per-lane histogram and prefix in scratch), allocates its non-empty
 * children (atomic node counter) and pushes them as tasks; a leaf copies its
 * range into the output permutation. `pending` counts tasks pushed and not
 * yet finished: 0 means the tree is built.
 *
 * Each of the N requested groups owns one mutex-guarded queue; a group pops
 * its own queue (LIFO) and steals from the others (FIFO), all N of them, so
 * that tasks left in the queue of a killed group are still found. A mutex is
 * taken and released inside one call of thread 0 (never across a step
 * boundary, where a kill may happen). Cooperative form (004 Sec. 3.2): each
 * step is one iteration of the main loop and ends with offer_kill and
 * request_fork, i.e. they sit at the top of the next iteration; the queue
 * id is the group id read inside the step, after the fork point. Nothing is
 * transmitted.
 *
 * args: 0 mode, 1 pts (float x,y,z per point), 2 perm0, 3 perm1 (u32 n),
 *       4 out (u32 n), 5 nodes (u32 x OCTREE_NODE_WORDS x nodecap),
 *       6 ctl (atomics: [0] nodes used, [1] pending, [2] overflow,
 *       then 4 per queue: lock, head, tail, unused), 7 queue items (u32 x
 *       nq x qcap), 8 n, 9 thresh, 10 maxdepth, 11 nq, 12 qcap (power of
 *       two), 13 nodecap
 * node record: parent, depth, path (3 bits per level, octant of level 0
 * highest), begin, end, nchild (0 = leaf, ~0 = not processed yet)
 */
#define OCTREE_NODE_WORDS 6u
#define OCTREE_NONE COOP_TQ_NONE
#define OCTREE_END COOP_TQ_END
#define OCTREE_CTL_QUEUES 4u
#define OCTREE_MAX_LANES 64u /* 8 x 64 counters, 9 child bounds, 1 task: in scratch */

struct octree_state {
  coop_u32 unused; /* nothing to transmit (004 Table 1: 0) */
};

void octree_init(struct coop_ctx *c, struct octree_state *s) { s->unused = 0u; }

/* Octant of point p in the cell (ix, iy, iz) of side 2^-depth: one bit per
 * axis, set when the coordinate is at or above the cell's midpoint (exact:
 * dyadic midpoints are floats). */
COOP_FN coop_u32 octree_octant(COOP_GLOBAL const float *pts, coop_u32 p, float mx, float my,
                               float mz) {
  return (pts[3u * p] >= mx ? 1u : 0u) | (pts[3u * p + 1u] >= my ? 2u : 0u) |
         (pts[3u * p + 2u] >= mz ? 4u : 0u);
}

/* Thread 0, after the partition: allocates the non-empty children of node
 * t (child o spans [cr[o], cr[o + 1])), records them, pushes them on queue
 * q; or marks t a leaf. Then t is done. */
COOP_FN0 void octree_finish(COOP_GLOBAL coop_u32 *nodes, COOP_GLOBAL coop_atomic_u32 *ctl,
                            COOP_GLOBAL coop_u32 *items, coop_u32 qcap, coop_u32 nodecap,
                            coop_u32 q, coop_u32 t, coop_u32 split, COOP_LOCAL const coop_u32 *cr) {
  COOP_GLOBAL coop_u32 *rec = nodes + OCTREE_NODE_WORDS * t;
  coop_u32 k = 0u;
  if (split) {
    for (coop_u32 o = 0u; o < 8u; o++) k += cr[o + 1u] > cr[o] ? 1u : 0u;
    coop_u32 first = coop_fadd(&ctl[0], k);
    if (first + k > nodecap) {
      coop_for(&ctl[2], 1u); /* out of node records: the check reports it */
      k = 0u;
    }
    coop_u32 j = 0u;
    for (coop_u32 o = 0u; o < 8u && k > 0u; o++)
      if (cr[o + 1u] > cr[o]) {
        COOP_GLOBAL coop_u32 *ch = nodes + OCTREE_NODE_WORDS * (first + j++);
        ch[0] = t;
        ch[1] = rec[1] + 1u;
        ch[2] = (rec[2] << 3) | o;
        ch[3] = cr[o];
        ch[4] = cr[o + 1u];
        ch[5] = OCTREE_NONE;
      }
    coop_fadd(&ctl[1], k); /* before the push: pending must not reach 0 early */
    coop_u32 pushed = k > 0u ? coop_tq_push(ctl + OCTREE_CTL_QUEUES, items, qcap, q, first, k) : 0u;
    if (pushed < k) {
      coop_for(&ctl[2], 2u); /* queue full */
      coop_fsub(&ctl[1], k - pushed);
    }
  }
  rec[5] = k;             /* 0: a leaf */
  coop_fsub(&ctl[1], 1u); /* this task is done */
}

/* One iteration of the main loop: take a task (pop or steal), process it.
 * PoCL's work-item loops want every thread to pass the same barriers on
 * every step, so the barriers below are unconditional and each phase's
 * work is guarded instead. */
coop_u32 octree_step(struct coop_ctx *c, struct octree_state *s) {
  COOP_GLOBAL const float *pts = (COOP_GLOBAL const float *)coop_arg_buf(c, 1);
  COOP_GLOBAL coop_u32 *nodes = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 5);
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 6);
  COOP_GLOBAL coop_u32 *items = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 7);
  coop_u32 thresh = coop_arg_u32(c, 9), maxdepth = coop_arg_u32(c, 10);
  coop_u32 nq = coop_arg_u32(c, 11), qcap = coop_arg_u32(c, 12), nodecap = coop_arg_u32(c, 13);
  coop_u32 lid = coop_local_id_c(c), lsize = coop_local_size_c(c);
  coop_u32 lanes = lsize < OCTREE_MAX_LANES ? lsize : OCTREE_MAX_LANES;
  COOP_LOCAL coop_u32 *h = (COOP_LOCAL coop_u32 *)coop_scratch(c); /* 8 x lanes counters */
  COOP_LOCAL coop_u32 *cr = h + 8u * OCTREE_MAX_LANES;             /* 9 child bounds */
  COOP_LOCAL coop_u32 *sh = cr + 9u;                               /* the task */
  coop_u32 q = coop_group_id(c); /* after the fork point: a forked group uses its own queue */

  coop_wg_barrier(); /* scratch of the previous step is free again */
  if (lid == 0u) sh[0] = coop_tq_pop_or_steal(ctl + OCTREE_CTL_QUEUES, &ctl[1], items, nq, qcap, q);
  coop_wg_barrier();
  coop_u32 t = sh[0];
  coop_u32 valid = t != OCTREE_NONE && t != OCTREE_END;
  coop_u32 depth = 0u, path = 0u, b = 0u, e = 0u;
  if (valid) {
    COOP_GLOBAL const coop_u32 *rec = nodes + OCTREE_NODE_WORDS * t;
    depth = rec[1];
    path = rec[2];
    b = rec[3];
    e = rec[4];
  }
  coop_u32 split = valid && e - b > thresh && depth < maxdepth;
  COOP_GLOBAL coop_u32 *src = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 2u + (depth & 1u));
  COOP_GLOBAL coop_u32 *dst = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 2u + ((depth + 1u) & 1u));

  /* the cell's integer coordinates from its octant path; its midpoint */
  coop_u32 ix = 0u, iy = 0u, iz = 0u;
  for (coop_u32 l = 0u; l < depth; l++) {
    coop_u32 o = (path >> (3u * (depth - 1u - l))) & 7u;
    ix = 2u * ix + (o & 1u);
    iy = 2u * iy + ((o >> 1) & 1u);
    iz = 2u * iz + ((o >> 2) & 1u);
  }
  float hside = 1.0f / (float)(1u << (depth + 1u)); /* exact: a power of two */
  float mx = (float)(2u * ix + 1u) * hside, my = (float)(2u * iy + 1u) * hside,
        mz = (float)(2u * iz + 1u) * hside;

  /* stable partition: lane l owns a contiguous chunk; h[o * lanes + l]
   * counts, then becomes the lane's cursor for octant o */
  coop_u32 chunk = (e - b + lanes - 1u) / lanes;
  coop_u32 cb = b + lid * chunk, ce = cb + chunk;
  if (!split || lid >= lanes || cb > e) cb = e;
  if (ce > e) ce = e;
  if (split && lid < lanes) {
    for (coop_u32 o = 0u; o < 8u; o++) h[o * lanes + lid] = 0u;
    for (coop_u32 i = cb; i < ce; i++) h[octree_octant(pts, src[i], mx, my, mz) * lanes + lid]++;
  }
  if (valid && !split) { /* a leaf: its points go to the output */
    COOP_GLOBAL coop_u32 *out = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 4);
    for (coop_u32 i = b + lid; i < e; i += lsize) out[i] = src[i];
  }
  coop_wg_barrier();
  if (split && lid == 0u) { /* exclusive prefix in (octant, lane) order */
    coop_u32 off = b;
    for (coop_u32 o = 0u; o < 8u; o++) {
      cr[o] = off;
      for (coop_u32 l = 0u; l < lanes; l++) {
        coop_u32 n = h[o * lanes + l];
        h[o * lanes + l] = off;
        off += n;
      }
    }
    cr[8] = off;
  }
  coop_wg_barrier();
  for (coop_u32 i = cb; i < ce; i++) {
    coop_u32 p = src[i], o = octree_octant(pts, p, mx, my, mz);
    dst[h[o * lanes + lid]++] = p;
  }
  coop_wg_barrier(); /* the partition is written before the children are pushed */
  if (valid && lid == 0u) octree_finish(nodes, ctl, items, qcap, nodecap, q, t, split, cr);
  if (t == OCTREE_END) return COOP_DONE;
  /* the original form (mode 0) never offers a kill nor asks for a fork */
  return coop_arg_u32(c, 0) == 0u ? COOP_CONTINUE : (COOP_OFFER_KILL | COOP_REQUEST_FORK);
}
