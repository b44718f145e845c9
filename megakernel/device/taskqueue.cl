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
 * survivors. Only thread 0 calls these (but coop_tq_look, the whole
 * workgroup's), and each takes and releases the mutex within the call: a
 * kill happens only between steps, so no workgroup ever leaves holding a
 * mutex.
 *
 * Memory orders: the mutex is acquire on taking, release on giving back
 * (as the runtime's coop__lock), so queue words and items written under it
 * are seen by the next holder; the "looks empty" peek outside it is a
 * relaxed hint only, rechecked under the mutex.
 *
 * The mutex word is in a client's buffer: a hostile one holds it for ever.
 * Waiting for it therefore watches the task's cancellation (c), and a
 * cancelled task gives up: a pop finds nothing, a push pushes nothing.
 * The looked pop's steals do not wait at all: one exchange (acquire, as
 * the lock's), and a mutex found held is passed over.
 */
#define COOP_TQ_NONE 0xffffffffu /* nothing found now: try again */
#define COOP_TQ_END 0xfffffffeu  /* no task queued or running anywhere */
#define COOP_TQ_WORDS 4u

/* Takes the mutex at l: 1, or 0 once the task is cancelled (not taken). */
COOP_FN coop_u32 coop__tq_lock(const struct coop_ctx *c, COOP_GLOBAL coop_atomic_u32 *l) {
  while (coop_xchg_acq(l, 1u) != 0u) {
    while (coop_ld_rlx(l) != 0u)
      if (coop_cancel_requested(c)) return 0u;
  }
  return 1u;
}

/* Queue k places after self: its newest task when k is 0 (the owner's
 * pop), else its oldest (a steal). A steal passes over a queue whose mutex
 * another holds (pass: COOP_TQ_NONE at once) where the owner waits for
 * its own. COOP__TQ_CANCELLED when the task was cancelled while it waited. */
#define COOP__TQ_CANCELLED 0xfffffffdu
COOP_FN coop_u32 coop__tq_take(const struct coop_ctx *c, coop_buf_atomic_u32 qctl,
                               coop_buf_u32 items, coop_u32 nq, coop_u32 qcap, coop_u32 self,
                               coop_u32 k, coop_u32 pass) {
  coop_u32 q = (self + k) % nq;
  coop_buf_atomic_u32 qc;
  coop_buf_u32 qi;
  coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * q, COOP_TQ_WORDS);
  coop_sub(qi, items, (coop_u64)q * qcap, qcap);
  if (coop_ld_rlx(coop_ptr(qc, 1)) == coop_ld_rlx(coop_ptr(qc, 2)))
    return COOP_TQ_NONE; /* looks empty */
  if (pass && k != 0u) {
    if (coop_xchg_acq(coop_ptr(qc, 0), 1u) != 0u) return COOP_TQ_NONE; /* another takes from it */
  } else if (!coop__tq_lock(c, coop_ptr(qc, 0))) {
    return COOP__TQ_CANCELLED;
  }
  coop_u32 t = COOP_TQ_NONE, head = coop_ld_rlx(coop_ptr(qc, 1)),
           tail = coop_ld_rlx(coop_ptr(qc, 2));
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
  return t;
}

/* None found: COOP_TQ_END once outstanding[0] (tasks queued or running,
 * kept by the kernel) is 0, else COOP_TQ_NONE. */
COOP_FN coop_u32 coop__tq_none(coop_buf_atomic_u32 outstanding) {
  return coop_ld_acq(coop_ptr(outstanding, 0)) == 0u ? COOP_TQ_END : COOP_TQ_NONE;
}

/* Pops from queue `self`, else steals from the others in turn, from the
 * queue `from` places after self (0: self first; coop_tq_first). With none
 * found: COOP_TQ_END once outstanding[0] (tasks queued or running, kept by
 * the kernel) is 0, else COOP_TQ_NONE; COOP_TQ_NONE too when the task was
 * cancelled while it waited for a mutex. */
COOP_FN0 coop_u32 coop_tq_pop_or_steal_from(const struct coop_ctx *c, coop_buf_atomic_u32 qctl,
                                            coop_buf_atomic_u32 outstanding, coop_buf_u32 items,
                                            coop_u32 nq, coop_u32 qcap, coop_u32 self,
                                            coop_u32 from) {
  for (coop_u32 k = from; k < nq; k++) {
    coop_u32 t = coop__tq_take(c, qctl, items, nq, qcap, self, k, 0u);
    if (t == COOP__TQ_CANCELLED) return COOP_TQ_NONE;
    if (t != COOP_TQ_NONE) return t;
  }
  return coop__tq_none(outstanding);
}

COOP_FN0 coop_u32 coop_tq_pop_or_steal(const struct coop_ctx *c, coop_buf_atomic_u32 qctl,
                                       coop_buf_atomic_u32 outstanding, coop_buf_u32 items,
                                       coop_u32 nq, coop_u32 qcap, coop_u32 self) {
  return coop_tq_pop_or_steal_from(c, qctl, outstanding, items, nq, qcap, self, 0u);
}

#define COOP_TQ_LOOKERS 64u /* coop_tq_look's threads, at most */
/* The threads that look: COOP_TQ_LOOKERS, or every thread of a smaller
 * workgroup. */
COOP_FN coop_u32 coop__tq_lookers(coop_u32 lsize) {
  return lsize < COOP_TQ_LOOKERS ? lsize : COOP_TQ_LOOKERS;
}

/* The workgroup's look over the queues, for a pop or steal that would
 * otherwise peek at them one by one in thread 0: one load round trip a
 * queue, nq of them where most are empty (a run's end, a forked
 * workgroup's first steps, survivors stealing the tasks a killed
 * workgroup gave back). Threads i < L (L = COOP_TQ_LOOKERS, at most the
 * local size) each peek at the queues i, i + L, i + 2L ... places after
 * self and store in look[i] the first that looks non-empty, nq if none;
 * every thread calls it, then a workgroup barrier, then thread 0's
 * coop_tq_first gives the pop its start. About nq / L round trips, each
 * thread's loads in flight beside the others'. The peeks are relaxed
 * hints, as the pop's own: a queue that fills after its look is found by
 * a later step, as one that filled behind the old scan was. */
COOP_FN void coop_tq_look(coop_buf_atomic_u32 qctl, coop_u32 nq, coop_u32 self, coop_u32 lid,
                          coop_u32 lsize, coop_lbuf_u32 look) {
  coop_u32 lookers = coop__tq_lookers(lsize);
  if (lid >= lookers) return;
  coop_u32 first = nq;
  /* k never wraps: a client's nq may be near 2^32 (its sub-views fault first) */
  for (coop_u32 k = lid; k<nq; k = nq - k> lookers ? k + lookers : nq) {
    coop_buf_atomic_u32 qc;
    coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * ((self + k) % nq), COOP_TQ_WORDS);
    if (coop_ld_rlx(coop_ptr(qc, 1)) != coop_ld_rlx(coop_ptr(qc, 2))) {
      first = k;
      break;
    }
  }
  coop_at(look, lid) = first;
}

/* Thread 0, after the barrier that follows coop_tq_look: the nearest
 * queue any looker saw non-empty (nq: none). */
COOP_FN0 coop_u32 coop_tq_first(coop_lbuf_u32 look, coop_u32 nq, coop_u32 lsize) {
  coop_u32 lookers = coop__tq_lookers(lsize), m = nq;
  for (coop_u32 i = 0u; i < lookers; i++)
    if (coop_at(look, i) < m) m = coop_at(look, i);
  return m;
}

/* Thread 0, after the barrier that follows coop_tq_look: a pop or steal
 * from the queues the look saw non-empty only, the nearest first (its own
 * when it has tasks), then each looker's in turn, a steal passing over a
 * queue whose mutex another holds. No scan of the nq queues one by one:
 * when the tasks are few (a run's start or end, 1055 workgroups on an
 * H200 after a dozen tasks) the steal that lost its queue to another went
 * on peeking at every queue after it, about a millisecond where nothing
 * polls (coop_kill_wanted), and a kill of it waited that long. Nothing
 * found: as coop_tq_pop_or_steal_from; the next step looks again. */
COOP_FN0 coop_u32 coop_tq_pop_or_steal_looked(const struct coop_ctx *c, coop_buf_atomic_u32 qctl,
                                              coop_buf_atomic_u32 outstanding, coop_buf_u32 items,
                                              coop_u32 nq, coop_u32 qcap, coop_u32 self,
                                              coop_lbuf_u32 look, coop_u32 lsize) {
  coop_u32 lookers = coop__tq_lookers(lsize);
  coop_u32 first = coop_tq_first(look, nq, lsize), t = COOP_TQ_NONE;
  if (first < nq) t = coop__tq_take(c, qctl, items, nq, qcap, self, first, 1u);
  for (coop_u32 i = 0u; t == COOP_TQ_NONE && i < lookers; i++) {
    coop_u32 k = coop_at(look, i);
    if (k < nq && k != first) t = coop__tq_take(c, qctl, items, nq, qcap, self, k, 1u);
  }
  if (t == COOP__TQ_CANCELLED) return COOP_TQ_NONE;
  return t != COOP_TQ_NONE ? t : coop__tq_none(outstanding);
}

/* 1 when queue q has room for one more task. Only q's owner pushes on it
 * and pops its tail; others only take from its head: the answer holds
 * until the owner's own next push (a stale head only says "full" early).
 * Relaxed loads. */
COOP_FN0 coop_u32 coop_tq_room(coop_buf_atomic_u32 qctl, coop_u32 qcap, coop_u32 q) {
  coop_buf_atomic_u32 qc;
  coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * q, COOP_TQ_WORDS);
  return coop_ld_rlx(coop_ptr(qc, 2)) - coop_ld_rlx(coop_ptr(qc, 1)) < qcap ? 1u : 0u;
}

/* Pushes the k tasks first..first+k-1 on queue q; returns how many fitted
 * (all of them unless the queue is full; none when the task was cancelled
 * while it waited for the mutex). */
COOP_FN0 coop_u32 coop_tq_push(const struct coop_ctx *c, coop_buf_atomic_u32 qctl,
                               coop_buf_u32 items, coop_u32 qcap, coop_u32 q, coop_u32 first,
                               coop_u32 k) {
  coop_buf_atomic_u32 qc;
  coop_buf_u32 qi;
  coop_sub(qc, qctl, (coop_u64)COOP_TQ_WORDS * q, COOP_TQ_WORDS);
  coop_sub(qi, items, (coop_u64)q * qcap, qcap);
  if (!coop__tq_lock(c, coop_ptr(qc, 0))) return 0u;
  coop_u32 head = coop_ld_rlx(coop_ptr(qc, 1)), tail = coop_ld_rlx(coop_ptr(qc, 2)), i = 0u;
  for (; i < k && tail - head < qcap; i++, tail++) coop_at(qi, tail & (qcap - 1u)) = first + i;
  coop_st_rlx(coop_ptr(qc, 2), tail);
  coop__unlock(coop_ptr(qc, 0));
  return i;
}
