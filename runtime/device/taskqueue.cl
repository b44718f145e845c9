//@needs primitives.cl
/*
 * taskqueue.cl: per-workgroup task queues guarded by mutexes, for
 * work-stealing cooperative kernels (004 Sec. 3.2, Table 1: octree, game).
 *
 * A kernel keeps N queues, one per workgroup id it may ever have, in two
 * views (api.h): queue q is the COOP_TQ_WORDS control words of qctl from
 * COOP_TQ_WORDS * q (mutex, head, tail, spare; zeroed by the host) and the
 * qcap items (a power of two) of items from q * qcap. Both are taken as
 * sub-views, so neither a client's nq or qcap nor a group id past nq
 * reaches outside the job's buffers: such an access faults the job
 * instead. The owner pops its newest task; others steal the oldest (the
 * largest subtree), so a killed workgroup's queue is drained by the
 * survivors. Only thread 0 calls these, and each takes and releases the
 * mutex within the call: a kill happens only between steps, so no
 * workgroup ever leaves holding a mutex.
 *
 * Memory orders: the mutex is acquire on taking, release on giving back
 * (the runtime's coop__lock), so queue words and items written under it are
 * seen by the next holder; the "looks empty" peek outside it is a relaxed
 * hint only, rechecked under the mutex.
 */
#define COOP_TQ_NONE 0xffffffffu /* nothing found now: try again */
#define COOP_TQ_END 0xfffffffeu  /* no task queued or running anywhere */
#define COOP_TQ_WORDS 4u

/* Pops from queue `self`, else steals from the others in turn. With none
 * found: COOP_TQ_END once outstanding[0] (tasks queued or running, kept by
 * the kernel) is 0, else COOP_TQ_NONE. */
COOP_FN0 coop_u32 coop_tq_pop_or_steal(coop_buf_atomic_u32 qctl, coop_buf_atomic_u32 outstanding,
                                       coop_buf_u32 items, coop_u32 nq, coop_u32 qcap,
                                       coop_u32 self) {
  for (coop_u32 k = 0u; k < nq; k++) {
    coop_u32 q = (self + k) % nq;
    coop_buf_atomic_u32 qc;
    coop_buf_u32 qi;
    coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * q, COOP_TQ_WORDS);
    coop_sub(qi, items, (coop_u64)q * qcap, qcap);
    if (coop_ld_rlx(coop_ptr(qc, 1)) == coop_ld_rlx(coop_ptr(qc, 2))) continue; /* looks empty */
    coop_u32 t = COOP_TQ_NONE;
    coop__lock(coop_ptr(qc, 0));
    coop_u32 head = coop_ld_rlx(coop_ptr(qc, 1)), tail = coop_ld_rlx(coop_ptr(qc, 2));
    if (head != tail) {
      if (k == 0u) { /* own queue: newest first */
        tail--;
        t = coop_at(qi, tail & (qcap - 1u));
        coop_st_rlx(coop_ptr(qc, 2), tail);
      } else { /* steal the oldest */
        t = coop_at(qi, head & (qcap - 1u));
        coop_st_rlx(coop_ptr(qc, 1), head + 1u);
      }
    }
    coop__unlock(coop_ptr(qc, 0));
    if (t != COOP_TQ_NONE) return t;
  }
  return coop_ld_acq(coop_ptr(outstanding, 0)) == 0u ? COOP_TQ_END : COOP_TQ_NONE;
}

/* Pushes the k tasks first..first+k-1 on queue q; returns how many fitted
 * (all of them unless the queue is full). */
COOP_FN0 coop_u32 coop_tq_push(coop_buf_atomic_u32 qctl, coop_buf_u32 items, coop_u32 qcap,
                               coop_u32 q, coop_u32 first, coop_u32 k) {
  coop_buf_atomic_u32 qc;
  coop_buf_u32 qi;
  coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * q, COOP_TQ_WORDS);
  coop_sub(qi, items, (coop_u64)q * qcap, qcap);
  coop__lock(coop_ptr(qc, 0));
  coop_u32 head = coop_ld_rlx(coop_ptr(qc, 1)), tail = coop_ld_rlx(coop_ptr(qc, 2)), i = 0u;
  for (; i < k && tail - head < qcap; i++, tail++) coop_at(qi, tail & (qcap - 1u)) = first + i;
  coop_st_rlx(coop_ptr(qc, 2), tail);
  coop__unlock(coop_ptr(qc, 0));
  return i;
}
