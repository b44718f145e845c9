//@coop name=octree kind=cooperative args=mode:u32,pts:buf<f32>,perm0:buf<u32>,perm1:buf<u32>,out:buf<u32>,nodes:buf<u32>,ctl:buf<u32>,items:buf<u32>,n:u32,thresh:u32,maxdepth:u32,nq:u32,qcap:u32,nodecap:u32
//@coop require n*12 <= len(pts)
//@coop require n*4 <= len(perm0)
//@coop require n*4 <= len(perm1)
//@coop require n*4 <= len(out)
//@coop require nodecap*24 <= len(nodes)
//@coop require (4+nq*4)*4 <= len(ctl)
//@coop require nq*qcap*4 <= len(items)
//@coop require maxdepth <= 10
//@coop require nq >= 1
//@coop require qcap >= 1
//@coop require nodecap >= 1
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
 * Each of the N requested groups owns one mutex-guarded queue (the task
 * queues of device/taskqueue.cl); a group pops its own queue (LIFO) and
 * steals from the others (FIFO), all N of them, so that tasks left in the
 * queue of a killed group are still found. A mutex is taken and released
 * inside one call of thread 0 (never across a step boundary, where a kill
 * may happen). Cooperative form (004 Sec. 3.2): each step is one iteration
 * of the main loop and ends with offer_kill and request_fork, i.e. they sit
 * at the top of the next iteration; the queue id is the group id read
 * inside the step, after the fork point. Nothing is transmitted.
 *
 * args: 0 mode, 1 pts (float x,y,z per point), 2 perm0, 3 perm1 (u32 n),
 *       4 out (u32 n), 5 nodes (u32 x OCTREE_NODE_WORDS x nodecap),
 *       6 ctl (atomics: [0] nodes used, [1] pending, [2] overflow,
 *       then 4 per queue: lock, head, tail, unused), 7 queue items (u32 x
 *       nq x qcap), 8 n, 9 thresh, 10 maxdepth, 11 nq, 12 qcap (power of
 *       two), 13 nodecap
 * node record: parent, depth, path (3 bits per level, octant of level 0
 * highest), begin, end, nchild (0 = leaf, ~0 = not processed yet)
 *
 * The require lines are checked at admission; every buffer and scratch
 * access goes through a view, so a point index, a node range or a queue
 * word of a hostile client (past its buffer) faults the job instead of
 * reaching other memory.
 */
#define OCTREE_NODE_WORDS 6u
#define OCTREE_NONE COOP_TQ_NONE
#define OCTREE_END COOP_TQ_END
#define OCTREE_CTL_QUEUES 4u
#define OCTREE_MAX_LANES 64u /* 8 x 64 counters, 9 child bounds, 1 task: in scratch */
#define OCTREE_MAX_DEPTH 10u /* octree.c's limit: 3 bits of path per level in a u32 */

struct octree_state {
  coop_u32 unused; /* nothing to transmit (004 Table 1: 0) */
};

void octree_init(struct coop_ctx *c, struct octree_state *s) { s->unused = 0u; }

/* Octant of point p in the cell (ix, iy, iz) of side 2^-depth: one bit per
 * axis, set when the coordinate is at or above the cell's midpoint (exact:
 * dyadic midpoints are floats). */
COOP_FN coop_u32 octree_octant(coop_buf_f32 pts, coop_u32 p, float mx, float my, float mz) {
  coop_u64 x = 3u * (coop_u64)p;
  return (coop_at(pts, x) >= mx ? 1u : 0u) | (coop_at(pts, x + 1u) >= my ? 2u : 0u) |
         (coop_at(pts, x + 2u) >= mz ? 4u : 0u);
}

/* Thread 0, after the partition: allocates the non-empty children of node
 * t (child o spans [cr[o], cr[o + 1])), records them, pushes them on queue
 * q; or marks t a leaf. Then t is done. */
COOP_FN0 void octree_finish(const struct coop_ctx *c, coop_buf_u32 nodes, coop_buf_atomic_u32 ctl,
                            coop_buf_u32 items, coop_u32 qcap, coop_u32 nodecap, coop_u32 q,
                            coop_u32 t, coop_u32 split, coop_lbuf_u32 cr) {
  coop_buf_u32 rec;
  coop_sub(rec, nodes, (coop_u64)OCTREE_NODE_WORDS * t, OCTREE_NODE_WORDS);
  coop_u32 k = 0u;
  if (split) {
    for (coop_u32 o = 0u; o < 8u; o++) k += coop_at(cr, o + 1u) > coop_at(cr, o) ? 1u : 0u;
    coop_u32 first = coop_fadd(coop_ptr(ctl, 0), k);
    if (first + k > nodecap) {
      coop_for(coop_ptr(ctl, 2), 1u); /* out of node records: the check reports it */
      k = 0u;
    }
    coop_u32 j = 0u;
    for (coop_u32 o = 0u; o < 8u && k > 0u; o++)
      if (coop_at(cr, o + 1u) > coop_at(cr, o)) {
        coop_buf_u32 ch;
        coop_sub(ch, nodes, (coop_u64)OCTREE_NODE_WORDS * (first + j), OCTREE_NODE_WORDS);
        j++;
        coop_at(ch, 0) = t;
        coop_at(ch, 1) = coop_at(rec, 1) + 1u;
        coop_at(ch, 2) = (coop_at(rec, 2) << 3) | o;
        coop_at(ch, 3) = coop_at(cr, o);
        coop_at(ch, 4) = coop_at(cr, o + 1u);
        coop_at(ch, 5) = OCTREE_NONE;
      }
    coop_fadd(coop_ptr(ctl, 1), k); /* before the push: pending must not reach 0 early */
    coop_buf_atomic_u32 qctl;
    coop_sub(qctl, ctl, OCTREE_CTL_QUEUES, coop_len(ctl));
    coop_u32 pushed = k > 0u ? coop_tq_push(c, qctl, items, qcap, q, first, k) : 0u;
    if (pushed < k) {
      coop_for(coop_ptr(ctl, 2), 2u); /* queue full */
      coop_fsub(coop_ptr(ctl, 1), k - pushed);
    }
  }
  coop_at(rec, 5) = k;             /* 0: a leaf */
  coop_fsub(coop_ptr(ctl, 1), 1u); /* this task is done */
}

/* One iteration of the main loop: take a task (pop or steal), process it.
 * PoCL's work-item loops want every thread to pass the same barriers on
 * every step, so the barriers below are unconditional and each phase's
 * work is guarded instead. Cancellation: thread 0 takes no task once the
 * task is cancelled and the step returns COOP_DONE (the original form's
 * COOP_CONTINUE is no primitive, where the runtime would see it); a node's
 * range is client data up to the permutation's length, so the loops over
 * it poll too (coop_poll_cancel). */
coop_u32 octree_step(struct coop_ctx *c, struct octree_state *s) {
  coop_buf_f32 pts = coop_arg_buf_f32(c, 1);
  coop_buf_u32 nodes = coop_arg_buf_u32(c, 5);
  coop_buf_atomic_u32 ctl = coop_arg_buf_atomic_u32(c, 6);
  coop_buf_u32 items = coop_arg_buf_u32(c, 7);
  coop_u32 thresh = coop_arg_u32(c, 9), maxdepth = coop_arg_u32(c, 10);
  coop_u32 nq = coop_arg_u32(c, 11), qcap = coop_arg_u32(c, 12), nodecap = coop_arg_u32(c, 13);
  coop_u32 lid = coop_local_id_c(c), lsize = coop_local_size_c(c);
  coop_u32 lanes = lsize < OCTREE_MAX_LANES ? lsize : OCTREE_MAX_LANES;
  coop_lbuf_u32 scr = coop_scratch_u32(c), h, cr, sh;
  coop_sub(h, scr, 0u, 8u * OCTREE_MAX_LANES);       /* 8 x lanes counters */
  coop_sub(cr, scr, 8u * OCTREE_MAX_LANES, 9u);      /* 9 child bounds */
  coop_sub(sh, scr, 8u * OCTREE_MAX_LANES + 9u, 1u); /* the task */
  coop_u32 q = coop_group_id(c); /* after the fork point: a forked group uses its own queue */

  coop_wg_barrier(); /* scratch of the previous step is free again */
  if (lid == 0u) {
    coop_buf_atomic_u32 qctl, pending;
    coop_sub(qctl, ctl, OCTREE_CTL_QUEUES, coop_len(ctl));
    coop_sub(pending, ctl, 1u, 1u);
    coop_at(sh, 0) = coop_cancel_requested(c)
                         ? OCTREE_END
                         : coop_tq_pop_or_steal(c, qctl, pending, items, nq, qcap, q);
  }
  coop_wg_barrier();
  coop_u32 t = coop_at(sh, 0);
  coop_u32 valid = t != OCTREE_NONE && t != OCTREE_END;
  coop_u32 depth = 0u, path = 0u, b = 0u, e = 0u;
  if (valid) {
    coop_buf_u32 rec;
    coop_sub(rec, nodes, (coop_u64)OCTREE_NODE_WORDS * t, OCTREE_NODE_WORDS);
    depth = coop_at(rec, 1);
    path = coop_at(rec, 2);
    b = coop_at(rec, 3);
    e = coop_at(rec, 4);
  }
  /* client data: the cell loop and shifts below take at most the maximum
   * depth, the partition and copy loops at most the permutation's length */
  depth = coop_cap(depth, OCTREE_MAX_DEPTH);
  maxdepth = coop_cap(maxdepth, OCTREE_MAX_DEPTH); /* so a clamped depth is a leaf */
  coop_buf_u32 src = coop_arg_buf_u32(c, 2u + (depth & 1u));
  coop_buf_u32 dst = coop_arg_buf_u32(c, 2u + ((depth + 1u) & 1u));
  e = coop_cap(e, coop_len(src));
  b = coop_cap(b, e);
  coop_u32 split = valid && e - b > thresh && depth < maxdepth;

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
  coop_u32 chunk = (e - b + lanes - 1u) / lanes, work = 0u;
  coop_u32 cb = b + lid * chunk, ce = cb + chunk;
  if (!split || lid >= lanes || cb > e) cb = e;
  if (ce > e) ce = e;
  if (split && lid < lanes) {
    for (coop_u32 o = 0u; o < 8u; o++) coop_at(h, o * lanes + lid) = 0u;
    for (coop_u32 i = cb; i < ce;) {
      coop_u32 stop = coop_poll_chunk(i, ce);
      if (coop_poll_cancel(c, &work, stop - i)) break;
      for (; i < stop; i++) {
        coop_u32 hi = octree_octant(pts, coop_at(src, i), mx, my, mz) * lanes + lid;
        coop_at(h, hi)++;
      }
    }
  }
  if (valid && !split) { /* a leaf: its points go to the output */
    coop_buf_u32 out = coop_arg_buf_u32(c, 4);
    for (coop_u32 i = b + lid; i < e; i += lsize) {
      if (coop_poll_cancel(c, &work, 1u)) break;
      coop_at(out, i) = coop_at(src, i);
    }
  }
  coop_wg_barrier();
  if (split && lid == 0u) { /* exclusive prefix in (octant, lane) order */
    coop_u32 off = b;
    for (coop_u32 o = 0u; o < 8u; o++) {
      coop_at(cr, o) = off;
      for (coop_u32 l = 0u; l < lanes; l++) {
        coop_u32 n = coop_at(h, o * lanes + l);
        coop_at(h, o * lanes + l) = off;
        off += n;
      }
    }
    coop_at(cr, 8) = off;
  }
  coop_wg_barrier();
  for (coop_u32 i = cb; i < ce;) {
    coop_u32 stop = coop_poll_chunk(i, ce);
    if (coop_poll_cancel(c, &work, stop - i)) break;
    for (; i < stop; i++) {
      coop_u32 p = coop_at(src, i), hi = octree_octant(pts, p, mx, my, mz) * lanes + lid;
      coop_u32 d = coop_at(h, hi)++;
      coop_at(dst, d) = p;
    }
  }
  coop_wg_barrier(); /* the partition is written before the children are pushed */
  if (valid && lid == 0u) octree_finish(c, nodes, ctl, items, qcap, nodecap, q, t, split, cr);
  if (t == OCTREE_END) return COOP_DONE;
  /* the original form (mode 0) never offers a kill nor asks for a fork */
  return coop_arg_u32(c, 0) == 0u ? COOP_CONTINUE : (COOP_OFFER_KILL | COOP_REQUEST_FORK);
}
