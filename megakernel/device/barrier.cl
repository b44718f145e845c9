/*
 * barrier.cl: global_barrier and the two resizing barriers of 004 Sec. 4.2.
 *
 * A counter barrier with a master (docs/scheduler.md, "Barriers"): its cost
 * does not grow with M. Per channel, bar_count counts the slaves that have
 * arrived in this episode and bar_gen counts the episodes completed; thread
 * 0 of every workgroup keeps the generation it is in (coop_worker.gen).
 *   slave:  fetch_add(bar_count, 1) (release); spin until bar_gen != gen
 *           (relaxed loads, then an acquire fence); gen += 1; leave if its
 *           own worker's flag says KILL, else go on.
 *   master (workgroup 0, never killed): spin until bar_count == M - 1
 *           (acquire load, M read after it); bar_count
 *           := 0; apply a resize if one is due (KILL to the flags of the ids
 *           it removes, or fork); bar_gen := gen + 1 (release).
 * Happens-before: every slave's step -> its release add -> the master's
 * acquire of the count (the adds form one release sequence, so the last
 * value read synchronises with every add before it) -> the master's release
 * of bar_gen -> every slave's acquire fence. grid.sync does the same with
 * a counter: one atomic per workgroup at the same address and one word all
 * of them read, about 1.3 us for 264 workgroups on the H100 (FACTS.md). The
 * design this replaces had workgroup 0's thread 0 read one flag and write
 * one flag per workgroup: 62 us at 264, linear in M.
 *
 * Why the generation is kept per workgroup and not read from bar_gen on
 * arrival: a workgroup forked inside a resizing barrier starts before the
 * master's release and could arrive at the next barrier while bar_gen still
 * holds the old value; it would then pass the next barrier on this one's
 * release. The generation lives in the worker (coop_worker.gen, written by
 * thread 0 alone once the worker runs), not in coop_ctx: a write to the
 * context from the barrier, a noinline function, made PoCL reload the
 * context around every call (the M = 1 barrier went from 130 to 210 ns). A forked workgroup gets
 * the generation it starts in with its payload (coop_worker.gen): the forker's own for
 * request_fork, gen + 1 for the master's fork inside a resizing barrier. bar_gen can be at most one
 * ahead of a waiting slave's gen (it is counted, so the next episode cannot
 * complete without it), so the comparison has no ABA.
 *
 * Why bar_count is reset before a fork: the new workgroups may arrive at
 * the next barrier at once; their adds must follow the reset (the master's
 * release fence before their ASSIGNED orders it).
 *
 * global_barrier: M may change while it gathers, because workgroups that
 * have not arrived may still be killed at an offer_kill (M shrinks: only
 * id M-1, and only by itself, so never one that arrived) or fork (M grows;
 * the fork happened before the forker's add, so the master's acquire of a
 * count that includes the forker shows the new M). Hence the master reads
 * the count first and M after it.
 *
 * resizing_global_barrier: M changes only after every active workgroup has
 * arrived and before any leaves, so M is constant between resizing barriers.
 *   plain (Sec. 4.2, first design): each slave offers itself once, on
 *     arrival: accepted only if it is then the highest id not yet doomed in
 *     this episode, so how many go depends on arrival order. The doomed
 *     still arrive and wait for the release, so M changes inside it.
 *   query (Sec. 4.2, second design): the master asks query() how many the
 *     scheduler wants, and releases the highest W ids with KILL at once.
 * In both, the master first forks (fork before kill, Appendix A), only when
 * no kill is due in this episode, transmitting workgroup 0's state. When
 * nothing is due (the common case) the master takes no lock and the
 * resizing barrier costs what global_barrier costs.
 *
 * Cancellation: every spin also watches chan.cancel, so a cancelled kernel
 * leaves its barriers instead of waiting for workgroups that have gone.
 */

COOP_FN coop_u32 coop__cancelled(struct coop_ctx *c) { return coop_ld_acq(&c->ch->cancel); }

/* Master, thread 0: wait until every slave of this episode has arrived,
 * then reset the count for the next. Returns M, or 0 if cancelled. An
 * acquire load, not relaxed loads and a fence: with nobody to wait for (M =
 * 1) the fence alone doubled the barrier's cost on PoCL (mfence). */
COOP_FN coop_u32 coop__master_gather(struct coop_ctx *c) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  /* Alone (M = 1), nobody else can fork or arrive: M is exact. */
  if (coop_ld_rlx(&ch->m) <= 1u) return 1u;
  for (;;) {
    coop_u32 n = coop_ld_acq(&ch->bar_count); /* acquires every add counted in n */
    coop_u32 m = coop_ld_rlx(&ch->m);         /* after the count: shows its forks */
    if (n + 1u >= m) {
      /* released by the fence of the fork or by bar_gen */
      if (n != 0u) coop_st_rlx(&ch->bar_count, 0u);
      return m;
    }
    if (coop_ld_rlx(&ch->cancel)) return 0u;
  }
}

/* KILL to ids m_new..m_old-1 (relaxed: the release of bar_gen publishes
 * them), then the release of the episode. With no slave before or after
 * (M was and is 1) there is nobody to release: bar_gen and gen stay equal,
 * which is all a later fork relies on. */
COOP_FN void coop__master_release(struct coop_ctx *c, coop_u32 m_old, coop_u32 m_new) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  if (m_old <= 1u && coop_ld_rlx(&ch->m) <= 1u) return;
  for (coop_u32 i = m_new; i < m_old; i++) coop_st_rlx(&c->dev->w[ch->pid_of[i]].bar, COOP_BF_KILL);
  c->self->gen += 1u;
  coop_st_rel(&ch->bar_gen, c->self->gen);
}

/* Slave, thread 0: returns GO, KILL, or NONE if cancelled. */
COOP_FN coop_u32 coop__slave_wait(struct coop_ctx *c) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 g = c->self->gen;
  coop_fadd_rel(&ch->bar_count, 1u);
  while (coop_ld_rlx(&ch->bar_gen) == g)
    if (coop_ld_rlx(&ch->cancel)) return COOP_BF_NONE;
  coop_fence_acq(); /* acquires the master's release of bar_gen */
  c->self->gen = g + 1u;
  return coop_ld_rlx(&c->self->bar) == COOP_BF_KILL ? COOP_BF_KILL : COOP_BF_GO;
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
  coop_u32 m_new = m;
  /* Anything due? Stale zeros only delay a kill or a fork to the next
   * episode (offer_kill may be a no-op, k = 0 a valid fork); ep_killed was
   * written before the adds the gather acquired, so it is exact. */
  if (coop_ld_rlx(&ch->ep_killed) != 0u || (query && coop_ld_acq(&ch->want_kill) != 0u) ||
      (m < ch->n_max && coop_ld_acq(&ch->n_resv) != 0u)) {
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
    m_new = m - w;
    if (w != 0u) {
      coop_st_rlx(&ch->killed, coop_ld_rlx(&ch->killed) + w);
      coop_st_rel(&ch->m, m_new);
      coop__track_m(ch, m_new);
    } else {
      /* the new workgroups start in the generation this release opens */
      coop__fork_locked(c->dev, (coop_u32)(ch - c->dev->chan), st, st_size, c->self->gen + 1u);
    }
    coop__unlock(&ch->lock);
  }
  /* the master is the only writer of resizes while the kernel runs */
  coop_st_rlx(&ch->resizes, coop_ld_rlx(&ch->resizes) + 1u);
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
