//@needs primitives.cl
/*
 * barrier.cl: global_barrier and the two resizing barriers of 004 Sec. 4.2.
 *
 * A counter barrier with a master (docs/scheduler.md section 6): its cost
 * does not grow with M. Two words per channel, each on its own line:
 *   bar_arrive = M << 16 | slaves arrived in this episode. Arrivals add 1;
 *     forks add k << 16 and offer_kill's kills subtract 1 << 16 (under the
 *     lock, beside ch.m), so one load tells the master both how many have
 *     arrived and how many it waits for, consistently.
 *   bar_rel = generation << 11 | M after the release: the master's release
 *     of an episode. A slave learns from the same word both that it may go
 *     and whether the release removed it (ids >= M are removed: a resize
 *     always removes the highest ids).
 * Thread 0 of every workgroup keeps the generation it is in, g, in
 * workgroup memory (wl->gen: a write to the context or to device memory
 * costs a reload or a round trip on every barrier).
 *   slave:  fetch_add(bar_arrive, 1) (release); spin while bar_rel's
 *           generation is not past g (relaxed loads, then an acquire
 *           fence); removed if the generation moved by more than one or its
 *           id >= the released M; g += 1.
 *   master (workgroup 0, never killed): spin until the count = M - 1
 *           (acquire); bar_arrive := M << 16; apply a resize if one is due;
 *           bar_rel := (g + 1) << 11 | M' (release); g += 1.
 * Happens-before: every slave's step -> its release add -> the master's
 * acquire of the count (the adds are read-modify-writes, so the value read
 * synchronises with every add before it) -> the master's release of
 * bar_rel -> every slave's acquire fence. grid.sync does the same with a
 * counter and a flag. The design this replaced had the master's thread 0
 * read one flag and write one flag per workgroup: 62 us at 264 on the H100.
 *
 * Generations. A workgroup forked by request_fork starts in its forker's
 * generation (the forker is between barriers); one forked by the master
 * inside a resizing barrier starts in g + 1, the generation that barrier's
 * release opens, and starts at once: it may finish its first step and
 * arrive at the next barrier while bar_rel still holds generation g. A
 * slave waiting in generation g therefore sees g - 1 (that case), g
 * (waiting), g + 1 (released), or more than g + 1 (it was removed, later
 * episodes no longer count it and it read late). It waits while the
 * signed, wrapping difference is <= 0. The generation field has 21 bits,
 * so this is exact for slaves fewer than 2^20 episodes late. (Spinning
 * while "== g" let a forked workgroup through its first barrier at once;
 * spinning until "== g + 1" left a removed slave that read late spinning
 * for ever. test_runtime's resizing case at 8 units, ctest resizing_cu8,
 * catches both.)
 *
 * global_barrier: M may change while the master waits: a workgroup that has not
 * arrived may be killed at an offer_kill (M shrinks: only id M-1, only by
 * itself, so never one that arrived) or fork (M grows; the forker adds its
 * k << 16 before its own arrival, in the same word, so any count that
 * includes the forker includes its fork).
 *
 * resizing_global_barrier: M changes only after every active workgroup has
 * arrived and before any leaves.
 *   plain (Sec. 4.2, first design): each slave offers itself once, on
 *     arrival: accepted only if it is then the highest id not yet doomed in
 *     this episode, so how many go depends on arrival order. The doomed
 *     still arrive and wait for the release, which removes them.
 *   query (Sec. 4.2, second design): the master asks query() how many the
 *     scheduler wants, and releases the highest W ids as removed.
 * In both, the master first forks (fork before kill, Appendix A), only when
 * no kill is due in this episode, transmitting workgroup 0's state. When
 * nothing is due (the common case) the master takes no lock and reads its
 * hints while it spins: the query resizing barrier costs about 0.3 us more
 * than global_barrier on the H100; the plain one 0.5 us more, a round trip
 * more on each side (a slave reads want_kill before it arrives, the master
 * ep_killed after its wait, where it is exact).
 *
 * Cancellation: every spin watches chan.cancel, and the master reads it on
 * every barrier, so a cancelled kernel leaves its barriers instead of
 * waiting for workgroups that have gone.
 */

COOP_FN coop_u32 coop__cancelled(struct coop_ctx *c) { return coop_ld_acq(&c->ch->cancel); }

/* Master, thread 0 (the master's step of every barrier; no relation to a
 * task's gather): wait until every slave of this episode has arrived,
 * then reset the count for the next. Returns M, or 0 if cancelled. hints,
 * when not NULL, gets want_kill and n_resv, read beside the count: they
 * are hints that only delay a resize when stale. The cancel flag is read
 * on every call, before the count (a relaxed load before an acquire one
 * overlaps it): a barrier that completes at once still sees a cancel. */
COOP_FN coop_u32 coop__master_wait(struct coop_ctx *c, coop_u32 *hints) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  for (;;) {
    coop_u32 cancel = coop_ld_rlx(&ch->cancel);
    if (hints) {
      hints[0] = coop_ld_rlx(&ch->want_kill);
      hints[1] = coop_ld_rlx(&ch->n_resv);
    }
    coop_u32 v = coop_ld_rlx(&ch->bar_arrive);
    if (cancel) return 0u;
    coop_u32 m = COOP__ARR_M(v), n = COOP__ARR_N(v);
    if (n + 1u >= m) {
      coop_fence_acq(); /* acquires every add it counted */
      /* Nobody can add before the release (all M - 1 wait; forks of a
       * resize follow the reset through the fork's release fence). */
      if (n != 0u) coop_st_rlx(&ch->bar_arrive, m * COOP__ARR_M_ONE);
      return m;
    }
  }
}

/* The release of an episode: the generation it opens and the M it leaves.
 * With no slave before or after (M was and is 1) there is nobody to
 * release: bar_rel and gen stay equal, which is all a later fork relies
 * on. */
COOP_FN void coop__master_release(struct coop_ctx *c, coop_u32 m_old, coop_u32 m_new) {
  if (m_old <= 1u && m_new <= 1u) return;
  coop_u32 g = c->wl->gen + 1u;
  c->wl->gen = g;
  coop_st_rel(&c->ch->bar_rel, (g << COOP__REL_SHIFT) | m_new);
}

/* Slave, thread 0: returns GO, KILL (removed), or NONE if cancelled. */
COOP_FN coop_u32 coop__slave_wait(struct coop_ctx *c) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 g = c->wl->gen << COOP__REL_SHIFT;
  coop_fadd_rel(&ch->bar_arrive, 1u);
  /* d = (generation difference) << 11 | released M: the generation has
   * moved past g exactly when d >= 1 << 11 as a signed number */
  coop_i32 d;
  for (;;) {
    /* Both words loaded before either is used: in flight together, so a
     * spin round is one round trip to L2, not two (the cancel flag's load
     * once waited for the compare of bar_rel's), and the release is seen
     * sooner. */
    coop_u32 rel = coop_ld_rlx(&ch->bar_rel), cancel = coop_ld_rlx(&ch->cancel);
    d = (coop_i32)(rel - g);
    if (d >= (coop_i32)(1u << COOP__REL_SHIFT)) break;
    if (cancel) return COOP_BF_NONE;
  }
  coop_fence_acq(); /* acquires the master's release of bar_rel */
  if (d >= (coop_i32)(2u << COOP__REL_SHIFT) || c->vid >= COOP__REL_M((coop_u32)d))
    return COOP_BF_KILL;
  c->wl->gen += 1u;
  return COOP_BF_GO;
}

/* global_barrier, thread 0. Returns 1 if the kernel was cancelled. */
COOP_FN0 coop_u32 coop__global_barrier0(struct coop_ctx *c) {
  if (c->vid != 0u) return coop__slave_wait(c) != COOP_BF_GO;
  coop_u32 m = coop__master_wait(c, (coop_u32 *)0);
  if (m == 0u) return 1u;
  coop__master_release(c, m, m);
  return 0u;
}

/* global_barrier, callable from any function by every active workgroup
 * (all threads). Returns 1 if the kernel was cancelled meanwhile: the
 * caller must return from its step. */
COOP_FN coop_u32 coop_global_barrier(struct coop_ctx *c) {
  coop_wg_barrier(); /* every thread's writes before thread 0's release (its add) */
  coop_u32 left = coop__bcast(c, c->lid == 0u ? coop__global_barrier0(c) : 0u);
  if (left) c->left = 1u;
  return left;
}

/* The plain resizing barrier: this slave's one offer_kill, judged on
 * arrival, applied at the release. A stale zero of want_kill only delays
 * the surrender. */
COOP_FN void coop__plain_offer(struct coop_ctx *c) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  if (coop_ld_rlx(&ch->want_kill) == 0u) return;
  coop__lock(&ch->lock);
  coop_u32 m = coop_ld_rlx(&ch->m), ek = coop_ld_rlx(&ch->ep_killed);
  coop_u32 want = coop_ld_rlx(&ch->want_kill);
  if (want != 0u && c->vid == m - ek - 1u) {
    coop_st_rlx(&ch->want_kill, want - 1u);
    coop_st_rlx(&ch->ep_killed, ek + 1u);
  }
  coop__unlock(&ch->lock);
}

/* Master, lock held: kill w of m (the highest ids) or fork. Returns M'. */
COOP_FN coop_u32 coop__resize_locked(struct coop_ctx *c, coop_u32 query, coop_u32 m,
                                     const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 w;
  if (query) {
    w = coop_ld_rlx(&ch->want_kill); /* query() */
    if (w > m - 1u) w = m - 1u;
    coop_st_rlx(&ch->want_kill, coop_ld_rlx(&ch->want_kill) - w);
  } else {
    w = coop_ld_rlx(&ch->ep_killed);
    coop_st_rlx(&ch->ep_killed, 0u);
  }
  if (w == 0u) /* the new workgroups start in the generation this release opens */
    return m +
           coop__fork_locked(c->dev, (coop_u32)(ch - c->dev->chan), st, st_size, c->wl->gen + 1u);
  coop_st_rlx(&ch->killed, coop_ld_rlx(&ch->killed) + w);
  coop_st_rel(&ch->m, m - w);
  /* the wait's reset wrote m << 16; nobody adds before the release */
  coop_st_rlx(&ch->bar_arrive, (m - w) * COOP__ARR_M_ONE);
  coop__track_m(ch, m - w);
  return m - w;
}

/* resizing_global_barrier, thread 0. Returns 1 if this workgroup must leave
 * (killed or cancelled). st is thread 0's transmitted state. */
COOP_FN coop_u32 coop__resizing_barrier0(struct coop_ctx *c, const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 query = (ch->flags & COOP_TF_QUERY_BARRIER) != 0u;
  if (c->vid != 0u) {
    if (!query) coop__plain_offer(c);
    return coop__slave_wait(c) != COOP_BF_GO;
  }
  coop_u32 hints[2];
  coop_u32 m = coop__master_wait(c, hints);
  if (m == 0u) return 1u;
  coop_u32 m_new = m;
  /* A suspension (scheduler.cl, "Suspension") takes every workgroup but 0
   * at this episode, as the query barrier would: the plain barrier's
   * offers claim kills only from the top id down in arrival order, one or
   * two an episode when hundreds arrive, and a kernel of 10 ms steps at
   * full width did not shrink in seconds. Every slave has arrived (this is
   * the master's wait), so any top set may leave: ep_killed becomes the
   * claims so far plus what want_kill still asks (the suspension's cap of
   * one asked for m - 1). Relaxed, under the channel's lock, as the
   * offers' own updates. */
  if (!query && m > 1u && coop_ld_rlx(&ch->suspend) != 0u) {
    coop__lock(&ch->lock);
    coop_u32 ek = coop_ld_rlx(&ch->ep_killed), want = coop_ld_rlx(&ch->want_kill);
    coop_u32 more = want < m - 1u - ek ? want : m - 1u - ek;
    coop_st_rlx(&ch->want_kill, want - more);
    coop_st_rlx(&ch->ep_killed, ek + more);
    coop__unlock(&ch->lock);
  }
  /* Anything due? ep_killed was written before the adds the wait
   * acquired, so it is exact; the hints may be stale, which only delays a
   * kill or a fork to the next episode (offer_kill may be a no-op, k = 0 a
   * valid fork). */
  if ((query ? hints[0] != 0u : coop_ld_rlx(&ch->ep_killed) != 0u) ||
      (m < ch->n_max && hints[1] != 0u)) {
    coop__lock(&ch->lock);
    m_new = coop__resize_locked(c, query, m, st, st_size);
    coop__unlock(&ch->lock);
  }
  /* the master is the only writer of resizes while the kernel runs */
  c->wl->resizes += 1u;
  coop_st_rlx(&ch->resizes, c->wl->resizes);
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
  /* Cancellation is honoured at every primitive. A barrier has watched it
   * already (the master reads it on every barrier, slaves while they spin):
   * one more load here would add a round trip to every barrier. */
  if (!(r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)) && r != COOP_CONTINUE &&
      coop__cancelled(c))
    return 2u;
  /* Suspension (scheduler.cl): workgroup 0, once alone (relaxed: M = 1
   * can only stay so, the cap forks nothing), stores its thread 0's state
   * where the last workgroup out copies it from, before its decrement of
   * alive (acq_rel) orders it. */
  if (c->vid == 0u && coop_ld_rlx(&c->ch->suspend) != 0u && coop_ld_rlx(&c->ch->m) == 1u) {
    COOP_GLOBAL coop_u8 *d = (COOP_GLOBAL coop_u8 *)c->ch->saved;
    for (coop_u32 b = 0; b < st_size; b++) d[b] = st[b];
    coop_st_rlx(&c->ch->suspended, 1u);
    return 3u;
  }
  return 0u;
}

/* Runs the primitive a step asked for; the same two workgroup barriers on
 * every step, whatever it returned. Returns 1 if the workgroup leaves
 * (done, killed, cancelled or suspended). */
COOP_FN coop_u32 coop__after_step(struct coop_ctx *c, coop_u32 r, const coop_u8 *st,
                                  coop_u32 st_size) {
  if (c->left || (r & COOP_DONE)) return 1u; /* uniform: no broadcast needed */
  if (r == COOP_CONTINUE) return 0u;
  /* Thread 0 alone publishes the step's end: its arrival at a barrier, the
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
  if (v == 3u) c->left = c->suspended = 1u; /* suspended: thread 0's state is saved */
  return v != 0u;
}
