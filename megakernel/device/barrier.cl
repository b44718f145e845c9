/*
 * barrier.cl: global_barrier and the two resizing barriers of 004 Sec. 4.2.
 *
 * Master/slave (XF) barrier over cooperative ids, one flag per worker
 * (coop_worker.bar, device memory), found by id through chan.pid_of (see
 * shared.h for why not per id). Workgroup 0 is the master: never killed.
 *   slave:  own flag := ARRIVED (release); spin until it is != ARRIVED
 *           (acquire); GO = continue, KILL = leave.
 *   master: for each id 1..M-1 wait until its flag == ARRIVED (relaxed
 *           loads in batches, each batch followed by an acquire fence),
 *           re-reading M (acquire) per batch, then a release fence and
 *           GO/KILL (relaxed stores) to every slave.
 * The acquire/release pairs give the barrier's happens-before web: every
 * slave's accesses before the barrier -> master -> every slave after it.
 *
 * global_barrier: M may change while it gathers, because workgroups that have
 * not arrived may still be killed at an offer_kill (M shrinks, the master
 * stops waiting for them) or fork (M grows; the fork happened before the
 * forker's ARRIVED, so the master's acquire of that flag shows the new M).
 *
 * resizing_global_barrier: M changes only after every active workgroup has
 * arrived and before any leaves, so M is constant between resizing barriers.
 *   plain (Sec. 4.2, first design): each slave offers itself once, on
 *     arrival: accepted only if it is then the highest id not yet doomed in
 *     this episode, so how many go depends on arrival order. The doomed
 *     still wait for the release, so M changes inside the barrier.
 *   query (Sec. 4.2, second design): the master asks query() how many the
 *     scheduler wants, and releases the highest W ids with KILL at once.
 * In both, the master first forks (fork before kill, Appendix A), only when
 * no kill is due in this episode, transmitting workgroup 0's state.
 *
 * Cancellation: every spin also watches chan.cancel, so a cancelled kernel
 * leaves its barriers instead of waiting for workgroups that have gone.
 */

COOP_FN coop_u32 coop__cancelled(struct coop_ctx *c) { return coop_ld_acq(&c->ch->cancel); }

/* Master, thread 0: wait for all slaves. Returns M, or 0 if cancelled.
 * The flags are read in batches of independent relaxed loads, then one
 * acquire fence: a GPU keeps the batch in flight at once, where a loop of
 * acquire loads waits out each one in turn (H100, 264 workgroups: 272 us
 * per barrier that way, about 1 us per workgroup). */
#define COOP__GATHER_BATCH 16u
COOP_FN coop_u32 coop__master_gather(struct coop_ctx *c) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 i = 1u;
  for (;;) {
    coop_u32 m = coop_ld_acq(&ch->m); /* ids < m are in pid_of */
    if (i >= m) return m;
    coop_u32 n = m - i < COOP__GATHER_BATCH ? m - i : COOP__GATHER_BATCH;
    coop_u32 f[COOP__GATHER_BATCH];
    for (coop_u32 k = 0u; k < COOP__GATHER_BATCH; k++)
      f[k] = k < n ? coop_ld_rlx(&c->dev->w[ch->pid_of[i + k]].bar) : COOP_BF_NONE;
    coop_u32 k = 0u;
    while (k < n && f[k] == COOP_BF_ARRIVED) k++;
    coop_fence_acq(); /* acquires what the ARRIVED flags released */
    i += k;
    if (k < n && coop__cancelled(c)) return 0u;
  }
}

/* One release fence, then relaxed stores: each slave's acquire of its flag
 * synchronises with the fence (a release store per flag costs a fence
 * each). */
COOP_FN void coop__master_release(struct coop_ctx *c, coop_u32 m_old, coop_u32 m_new) {
  coop_fence_rel();
  for (coop_u32 i = 1u; i < m_old; i++)
    coop_st_rlx(&c->dev->w[c->ch->pid_of[i]].bar, i < m_new ? COOP_BF_GO : COOP_BF_KILL);
}

/* Slave, thread 0: returns GO, KILL, or NONE if cancelled. */
COOP_FN coop_u32 coop__slave_wait(struct coop_ctx *c) {
  COOP_GLOBAL coop_atomic_u32 *f = &c->self->bar;
  coop_st_rel(f, COOP_BF_ARRIVED);
  for (;;) {
    coop_u32 v = coop_ld_acq(f);
    if (v != COOP_BF_ARRIVED) return v;
    if (coop__cancelled(c)) return COOP_BF_NONE;
  }
}

/* global_barrier, thread 0. Returns 1 if the kernel was cancelled. */
COOP_FN0 coop_u32 coop__global_barrier0(struct coop_ctx *c) {
  if (c->vid != 0u) return coop__slave_wait(c) != COOP_BF_GO;
  coop_u32 m = coop__master_gather(c);
  if (m == 0u) return 1u;
  coop__master_release(c, m, m);
  return 0u;
}

/* global_barrier, callable from any function by every active workgroup
 * (all threads). Returns 1 if the kernel was cancelled meanwhile: the
 * caller must return from its step. */
COOP_FN coop_u32 coop_global_barrier(struct coop_ctx *c) {
  coop_wg_barrier(); /* every thread's writes before thread 0's release (ARRIVED) */
  coop_u32 left = coop__bcast(c, c->lid == 0u ? coop__global_barrier0(c) : 0u);
  if (left) c->left = 1u;
  return left;
}

/* resizing_global_barrier, thread 0. Returns 1 if this workgroup must leave
 * (killed or cancelled). st is thread 0's transmitted state. */
COOP_FN coop_u32 coop__resizing_barrier0(struct coop_ctx *c, const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 query = (ch->flags & COOP_TF_QUERY_BARRIER) != 0u;
  if (c->vid != 0u) {
    if (!query && coop_ld_acq(&ch->want_kill) != 0u) {
      /* plain: this slave's one offer_kill, judged now, applied at release */
      coop__lock(&ch->lock);
      coop_u32 m = coop_ld_rlx(&ch->m), ek = coop_ld_rlx(&ch->ep_killed);
      coop_u32 want = coop_ld_rlx(&ch->want_kill);
      if (want != 0u && c->vid == m - ek - 1u) {
        coop_st_rlx(&ch->want_kill, want - 1u);
        coop_st_rlx(&ch->ep_killed, ek + 1u);
      }
      coop__unlock(&ch->lock);
    }
    return coop__slave_wait(c) != COOP_BF_GO;
  }
  coop_u32 m = coop__master_gather(c);
  if (m == 0u) return 1u;
  coop__lock(&ch->lock);
  coop_u32 w;
  if (query) {
    w = coop_ld_rlx(&ch->want_kill); /* query() */
    if (w > m - 1u) w = m - 1u;
    coop_st_rlx(&ch->want_kill, coop_ld_rlx(&ch->want_kill) - w);
  } else {
    w = coop_ld_rlx(&ch->ep_killed);
    coop_st_rlx(&ch->ep_killed, 0u);
  }
  coop_u32 m_new = m - w;
  if (w != 0u) {
    coop_st_rlx(&ch->killed, coop_ld_rlx(&ch->killed) + w);
    coop_st_rel(&ch->m, m_new);
    coop__track_m(ch, m_new);
  } else {
    coop__fork_locked(c->dev, (coop_u32)(ch - c->dev->chan), st, st_size);
  }
  coop_st_rlx(&ch->resizes, coop_ld_rlx(&ch->resizes) + 1u);
  coop__unlock(&ch->lock);
  coop__master_release(c, m, m_new);
  return 0u;
}

/* Thread 0: the primitive(s) a step asked for, in the order kill, fork,
 * barrier. Returns 0 to go on, 1 when done, 2 when killed or cancelled. */
COOP_FN0 coop_u32 coop__primitive0(struct coop_ctx *c, coop_u32 r, const coop_u8 *st,
                                   coop_u32 st_size) {
  if (c->left) return 2u; /* cancelled inside a direct coop_global_barrier */
  if (r & COOP_DONE) return 1u;
  if ((r & COOP_OFFER_KILL) && coop__offer_kill0(c)) return 2u;
  /* A fork beside a barrier would start its workgroups past a barrier they
   * never passed: it forks nothing (k = 0 is always valid; docs/kernels.md). */
  if ((r & COOP_REQUEST_FORK) && !(r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)))
    coop__request_fork0(c, st, st_size);
  if ((r & COOP_GLOBAL_BARRIER) && coop__global_barrier0(c)) return 2u;
  if ((r & COOP_RESIZING_BARRIER) && coop__resizing_barrier0(c, st, st_size)) return 2u;
  /* Cancellation is honoured at every primitive; barrier spins watch it too. */
  if (r != COOP_CONTINUE && coop__cancelled(c)) return 2u;
  return 0u;
}

/* Runs the primitive a step asked for; the same two workgroup barriers on
 * every step, whatever it returned. Returns 1 if the workgroup leaves. */
COOP_FN coop_u32 coop__after_step(struct coop_ctx *c, coop_u32 r, const coop_u8 *st,
                                  coop_u32 st_size) {
  if (c->left || (r & COOP_DONE)) return 1u; /* uniform: no broadcast needed */
  if (r == COOP_CONTINUE) return 0u;
  /* Thread 0 alone publishes the step's end: ARRIVED at a barrier, the
   * lower M of a kill, the state of a fork, each a release. A release orders
   * only what its thread has seen, so every thread's writes of the step
   * must be behind this workgroup barrier first. (Missing, it showed on the
   * H100 as bc's deltas read stale across barriers, 1 in 10^4 off, only
   * when the kernel shrank to one workgroup and grew back.) */
  coop_wg_barrier();
  coop_u32 v = 0u;
  if (c->lid == 0u) v = coop__primitive0(c, r, st, st_size);
  v = coop__bcast(c, v);
  if (v == 2u) c->left = 1u;
  return v != 0u;
}
