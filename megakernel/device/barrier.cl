//@needs primitives.cl
/*
 * barrier.cl: global_barrier and the two resizing barriers of 004 Sec. 4.2.
 *
 * A counter barrier whose count is its own release, as grid.sync's
 * (docs/scheduler.md section 6): every workgroup adds to one word and spins
 * on it; the last add is the release, seen by every spinner on its next
 * load. One L2 round trip after the last arrival, where a master that
 * polls the count and then stores a release flag takes two.
 *
 * Episodes. Episodes use two count words in turn, bar_arrive for even ones
 * and bar_arrive_odd for odd ones (COOP__BAR_WORD), so that the master can
 * make its first add for the next episode while this one is still open.
 * Thread 0 of every workgroup keeps, in workgroup memory, the episode it is
 * in (wl->gen, e) and the base of the next episode on each word
 * (wl->base[2]): a write to the context or to device memory costs a reload
 * or a round trip on every barrier. Every episode adds exactly COOP__BAR_EP
 * (EP) to its word in all, so its target t = base + EP is reached at its
 * last arrival and not before:
 *   the master (workgroup 0, never killed): EP - N on the next episode's
 *     word, right after its arrival (N = n_max; episode 0's is the word's
 *     initial value), then 1 + N - P at its arrival, in one add when
 *     P = N, P the number of workgroups in the episode at its start ("The
 *     master's count").
 *   a slave (id != 0): 1 at its arrival.
 *   a workgroup killed at offer_kill: 1 as it leaves, its arrival.
 *   request_fork of k: -k before the k new workgroups start; they start in
 *     the forker's episode and each adds 1 at its arrival.
 * Each spins until d = word - t, a signed wrapping difference, is >= 0.
 * Until every arrival is in, d < 0: the only add that is not positive, a
 * fork's -k, comes before the k arrivals it pays for, and the master's
 * first add leaves the count N short of the target.
 *
 * The master's count. Kills and forks outside a resize add their change of
 * P to bar_delta[e mod 4]. At its arrival the master loads
 * bar_delta[(e - 1) mod 4] beside its add of 1 (loaded before the add, a
 * release, it would cost a round trip), adds N - P when P < N (a second add
 * only while the kernel is narrower than N), and subtracts what it read
 * (atomic: a later episode's changes commute). The load is exact: the
 * changes of episode e - 1 came before its completion, which the master
 * acquired, and episode e + 3, the next to write that slot, cannot start
 * before this one completes.
 *
 * Holding an episode (resizes). A resize must come after every arrival and
 * before anyone leaves, and only the master makes it (its state is what
 * forks transmit). Whoever wants one (the master for a kill the query
 * barrier asks for, a fork or a suspension; a slave of the plain barrier
 * whose offer is accepted) takes the lock and, unless ep_hold says the
 * episode is held already, subtracts COOP__BAR_HOLD (H) with a
 * compare-and-swap that succeeds only while d < 0: a released episode
 * cannot be held. The query variant holds without the lock, ep_hold its
 * guard: a slave with its arrival's add, the master by a subtraction that
 * it adds back if the episode was released first or another holds it
 * (coop__bar_hold_sub). With every arrival in, the word then stops at
 * t - H. The master spins until d >= 0 or d == -H; at -H it resizes
 * under the lock, stores bar_rel = (e + 1) << 11 | M', and adds H +
 * COOP__BAR_HELD (X), which releases. The workgroups a resize forks start
 * after that add, in episode e + 1.
 *
 * Ranges (N <= 2047 <= H, EP = 8192, X = 16384). While an episode is
 * incomplete, d is in [-EP - N - H, -1]; the master, which spins only after
 * its own arrival, reads [-N, -1], or [-N - H, -H] once held, so d == -H is
 * a held episode complete (the query master's subtraction added back reads
 * as [-N - 2H, -1] to others for a round trip, never to itself). Once an
 * episode is released its word changes only by the master's first add for
 * the episode after next (+EP - N), and for a round trip by a query
 * master's subtraction that found it released (a spinner not yet out reads
 * [-H, -1] and spins one round more), until every workgroup kept has
 * passed the next episode, so a reader, however late, reads d in [0, EP)
 * after a plain episode (or in [-H, -1] for that round trip: no plain
 * offer reads it, a query kernel makes none), and d >= X - N - H > EP
 * after a held one (a removed workgroup may read even later, when that
 * episode's forks and holds are in). A late offer therefore finds its
 * episode released, never the next one's count. A slave that saw a held
 * release reads bar_rel: it was removed if bar_rel's generation is not
 * e + 1 (it read so late that later resizes happened, which no kept slave
 * can: the next episode waits for it) or if its id >= M'. Exact for readers
 * fewer than 2^31 / (EP + X) = 87381 held episodes of its word late.
 *
 * Memory orders (device scope). Every arrival is a release add by thread
 * 0, after the workgroup barrier that orders every thread's writes of the
 * step. The others spin with relaxed loads. The read that shows the
 * release (a spin's load, or the add that completed the episode) is
 * followed by the acquire (coop__bar_acquire): the light acquire fence
 * where there is one, else an acquire load of the word (the master's goes
 * out beside its add, with its hint loads), which reads the last add or a
 * later one in the word's chain of read-modify-writes. Either way it
 * synchronises with every add before it. The held release's add orders
 * bar_rel and the resize before it. (The design
 * before this one had the master poll the count and store a release flag:
 * 2.3x grid.sync on the H200. The one before that had the master's thread
 * 0 read one flag and write one flag per workgroup: 62 us at 264 on the
 * H100.)
 *
 * Cancellation: every spin watches chan.cancel, and the master reads it on
 * every barrier, so a cancelled kernel leaves its barriers instead of
 * waiting for workgroups that have gone.
 */

COOP_FN coop_u32 coop__cancelled(struct coop_ctx *c) { return coop_ld_acq(&c->ch->cancel); }

/* Lock held: hold the episode of count word w and target t for a resize,
 * unless it is held already or released. Returns 1 if it is held. */
COOP_FN coop_u32 coop__bar_hold(COOP_GLOBAL struct coop_chan *ch, COOP_GLOBAL coop_atomic_u32 *w,
                                coop_u32 t) {
  if (coop_ld_rlx(&ch->ep_hold) != 0u) return 1u;
  coop_u32 v = coop_ld_rlx(w);
  while ((coop_i32)(v - t) < 0) {
    if (coop_cas(w, &v, v - COOP__BAR_HOLD)) {
      coop_st_rlx(&ch->ep_hold, 1u);
      return 1u;
    }
  }
  return 0u;
}

/* The query variant's guard: moves ep_hold from 0 to 1 (the load first: a
 * compare-and-swap bound to fail costs the line's ownership). Relaxed: it
 * orders nothing, and the hold after it is a count. Returns 1 if this
 * thread took it, and with it the one hold of the episode. */
COOP_FN coop_u32 coop__ep_hold_take(COOP_GLOBAL struct coop_chan *ch) {
  coop_u32 z = 0u;
  return coop_ld_rlx(&ch->ep_hold) == 0u && coop_cas_rlx(&ch->ep_hold, &z, 1u);
}

/* The query variant, thread 0: what the subtraction of H from an episode's
 * word w (target t) found, pre its value before it, made after or beside
 * taking ep_hold (took). The episode open (d < 0 before it) and ep_hold
 * this thread's: held. Otherwise H goes back, and so does ep_hold if this
 * thread took it; returns 1 if another holds the episode (which may yet
 * fail: coop__master_wait then holds the next episode first), 0 if it was
 * released first.
 * Between the subtraction and its add back the word reads H lower: an open
 * episode at most 2H short (d in [-N - k - 2H, -1], where it read [-N - k
 * - H, -1]), a released one open (d in [-H, -1]) for a round trip, to a
 * slave still spinning on it, which spins one round more. Only the master
 * judges d == -H, and it subtracts and adds back itself, so it reads the
 * word again only after its add back (coherence: a thread's later load of
 * a word reads its own add or a later one). */
COOP_FN coop_u32 coop__bar_hold_sub(COOP_GLOBAL struct coop_chan *ch,
                                    COOP_GLOBAL coop_atomic_u32 *w, coop_u32 t, coop_u32 pre,
                                    coop_u32 took) {
  if (took && (coop_i32)(pre - t) < 0) return 1u;
  coop_fadd_rlx(w, COOP__BAR_HOLD);
  if (took) coop_st_rlx(&ch->ep_hold, 0u);
  return !took;
}

/* The query variant's hold by the master after its arrival, without the
 * lock (slaves hold with their arrival: coop__slave_wait), from v, a value
 * of w it has just read (its own add's or a spin round's), and eh, ep_hold
 * loaded beside it. The compare-and-swap of ep_hold and the subtraction
 * of H go out together, both relaxed: one round trip, where a load of w,
 * a load and a compare-and-swap of ep_hold, a load and a compare-and-swap
 * of w (both acq_rel) went in turn, and a request that came about a
 * microsecond before an episode's last arrival waited for the next one
 * (bench/RESULTS.md, "Where a suspension's kills wait"). Returns 1 if the
 * episode is held or another is holding it, 0 if it was released. */
COOP_FN coop_u32 coop__bar_claim(COOP_GLOBAL struct coop_chan *ch, COOP_GLOBAL coop_atomic_u32 *w,
                                 coop_u32 t, coop_u32 v, coop_u32 eh) {
  if ((coop_i32)(v - t) >= 0) return 0u; /* a claim then would only delay */
  if (eh != 0u) return 1u;
  coop_u32 z = 0u;
  coop_u32 took = coop_cas_rlx(&ch->ep_hold, &z, 1u);
  coop_u32 pre = coop_fadd_rlx(w, 0u - COOP__BAR_HOLD);
  return coop__bar_hold_sub(ch, w, t, pre, took);
}

/* Master, thread 0: hold its episode, v and eh as coop__bar_claim's (the
 * plain variant reads them again under the lock). Returns 1 if it is held
 * (or another is holding it), 0 if it was released first. */
COOP_FN coop_u32 coop__bar_hold_now(COOP_GLOBAL struct coop_chan *ch,
                                    COOP_GLOBAL coop_atomic_u32 *w, coop_u32 t, coop_u32 query,
                                    coop_u32 v, coop_u32 eh) {
  if (query) return coop__bar_claim(ch, w, t, v, eh);
  coop__lock(&ch->lock);
  coop_u32 h = coop__bar_hold(ch, w, t);
  coop__unlock(&ch->lock);
  return h;
}

/* Master, thread 0, before its own arrival (wl->hold_next): hold its
 * episode, which cannot complete before that arrival. Returns 1 once the
 * word shows a hold (its own or another's), 0 if the episode was released
 * (a cancellation's add) or a claim found it so.
 * Query variant: a hold in flight by another (ep_hold set: a slave between
 * taking it and its arrival's add) is waited for until the word shows it,
 * or until ep_hold is given back (a claim for an episode already
 * released), and then made here. Taking "another holds" for a hold let the
 * master add its arrival while a slave's claim, a compare-and-swap after
 * its own add, was still losing to the other arrivals' adds: it landed only
 * once the adds stopped, at the last arrival, too late, and at 1087
 * workgroups on an H200 the query barrier made no kill in 3000 episodes
 * (test_runtime `resizing_query`; slaves now hold with their arrival,
 * coop__slave_wait). Before the master's arrival the count stays short of
 * its target, so a hold in flight lands and this wait ends. Values (Ranges
 * above): d in [-N - k, -1] unheld, k a fork's workgroups not yet arrived,
 * [-N - k - H, -H - 1] held. A fork in flight with N + k >= H reads as a
 * hold: the episode then completes plain and coop__master_wait holds the
 * next one (after the master's arrival d >= 1 - N: no false resize). */
COOP_FN coop_u32 coop__bar_hold_first(COOP_GLOBAL struct coop_chan *ch,
                                      COOP_GLOBAL coop_atomic_u32 *w, coop_u32 t, coop_u32 query) {
  if (!query) return coop__bar_hold_now(ch, w, t, 0u, 0u, 0u); /* under the lock */
  for (;;) {
    coop_i32 d = (coop_i32)(coop_ld_rlx(w) - t);
    if (d >= 0) return 0u;
    if (d <= -(coop_i32)COOP__BAR_HOLD) return 1u;
    if (coop__ep_hold_take(ch))
      return coop__bar_hold_sub(ch, w, t, coop_fadd_rlx(w, 0u - COOP__BAR_HOLD), 1u);
  }
}

/* Thread 0: the acquire of a released episode (or one complete while
 * held) of the count word w, target t, that this thread saw as v by a
 * relaxed load or by its own release add. Where the acquire fence is light
 * (COOP_FENCE_ACQ_LIGHT: fence.acquire.gpu, CUDA 12.8 on sm_90), that
 * fence: v was read before it, so the fence acquires every add before
 * v's, and d is v's. Elsewhere an acquire load of w: it reads v's add or
 * a later one in the word's chain of read-modify-writes (coherence), so
 * it synchronises with every add before it; a device-scope acquire fence
 * there is fence.acq_rel, MEMBAR.ALL.GPU plus the L1 invalidation an
 * acquire load has too (CCTL.IVALL), and the MEMBAR cost the step loop
 * about 0.3 us a barrier on the H200, the load one L2 round trip, the
 * light fence neither (docs/scheduler.md section 6, "The acquire").
 * Returns its d, for the ranges of a reader however late (header). */
COOP_FN coop_i32 coop__bar_acquire(COOP_GLOBAL coop_atomic_u32 *w, coop_u32 t, coop_u32 v) {
#if COOP_FENCE_ACQ_LIGHT
  (void)w;
  coop_fence_acq();
  return (coop_i32)(v - t);
#else
  (void)v;
  return (coop_i32)(coop_ld_acq(w) - t);
#endif
}

/* Whether d (read with an acquire) is a cancellation's add, not a release. */
COOP_FN coop_u32 coop__bar_cancel_seen(COOP_GLOBAL struct coop_chan *ch, coop_i32 d) {
  return d >= (coop_i32)(COOP__BAR_CANCEL / 2u) && coop_ld_rlx(&ch->cancel) != 0u;
}

/* Thread 0: spin on the count word w until its episode (target t) is
 * released or, for the master (master = 1), complete while held. Returns d
 * (the word - t) after the acquire, or sets *cancelled. A cancellation
 * adds COOP__BAR_CANCEL to both count words (scheduler.cl) after its flag,
 * so a spinner sees it as a release and then reads the flag: the spin
 * loads one word, not two (with the flag beside it, every spin round was
 * two loads for L2 to serve from every waiter). The flag is also read
 * every 64th round, for a removed workgroup reading so late that the
 * count has wrapped past it. watch (the master of a resizing barrier, not
 * yet held): every round it also reads the hints for a hold, and holds
 * while the word does not show one, so that a kill, fork or suspension
 * asked for while it waits is made at this episode unless the episode
 * completes first (bit 0: query variant; the master's count P is
 * watch >> 1).
 * The acquire (docs/scheduler.md section 6): the rounds are relaxed
 * loads and one acquire (coop__bar_acquire: the light fence, else a load)
 * follows the round that sees the release. An acquire, load or fence,
 * empties the SM's L1 (CCTL.IVALL on CUDA) for every
 * workgroup on it: spinning with acquire loads, as grid.sync does, took
 * 0.1 us more off the H200's barrier, but slowed mis 1.12x -> 1.29x
 * (its own workgroups' steps lost their L1) and a matmul beside bfs. */
COOP_FN coop_i32 coop__bar_spin(COOP_GLOBAL struct coop_chan *ch, COOP_GLOBAL coop_atomic_u32 *w,
                                coop_u32 t, coop_u32 master, coop_u32 watch, coop_u32 *cancelled) {
  for (coop_u32 round = 1u;; round++) {
    coop_u32 v = coop_ld_rlx(w);
    coop_u32 cancel = (round & 63u) ? 0u : coop_ld_rlx(&ch->cancel);
    coop_u32 hint = 0u, eh = 0u;
    if (watch) {
      coop_u32 want = coop_ld_rlx(&ch->want_kill), sus = coop_ld_rlx(&ch->suspend);
      coop_u32 nr = coop_ld_rlx(&ch->n_resv), p = watch >> 1;
      eh = (watch & 1u) ? coop_ld_rlx(&ch->ep_hold) : 0u;
      hint = ((watch & 1u) && want != 0u) || (sus != 0u && p > 1u) || (nr != 0u && p < ch->n_max);
    }
    coop_i32 d = (coop_i32)(v - t);
    if (d >= 0 || (master && d == -(coop_i32)COOP__BAR_HOLD)) {
      d = coop__bar_acquire(w, t, v);
      if (coop__bar_cancel_seen(ch, d)) *cancelled = 1u;
      return d;
    }
    if (cancel) {
      *cancelled = 1u;
      return d;
    }
    /* until the word shows the hold (a claim by another may fail) */
    if (hint && d > -(coop_i32)COOP__BAR_HOLD) coop__bar_hold_now(ch, w, t, watch & 1u, v, eh);
  }
}

/* The plain resizing barrier: this slave's offer_kill, made once an
 * episode, applied at the release, which the accepted offer holds.
 * Accepted only if it is the highest id not yet doomed in this episode, so
 * how many go depends on arrival order. Returns 2 if it came too late (the
 * episode was released), else 0. */
COOP_FN coop_u32 coop__plain_offer(struct coop_ctx *c, COOP_GLOBAL coop_atomic_u32 *w, coop_u32 t) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 r = 0u;
  /* Only that one id can be accepted: the others need not queue on the
   * lock (a suspension's cap asks every workgroup but 0 at once, and 526
   * slaves took the lock one after the other: 0.6 ms on the H200). Stale
   * hints only delay the offer to the next episode. */
  coop_u32 mh = coop_ld_rlx(&ch->m), ekh = coop_ld_rlx(&ch->ep_killed);
  if (c->vid != mh - ekh - 1u) return 0u;
  coop__lock(&ch->lock);
  coop_u32 m = coop_ld_rlx(&ch->m), ek = coop_ld_rlx(&ch->ep_killed);
  coop_u32 want = coop_ld_rlx(&ch->want_kill);
  if (want != 0u && c->vid == m - ek - 1u) {
    if (coop__bar_hold(ch, w, t)) {
      coop_st_rlx(&ch->want_kill, want - 1u);
      coop_st_rlx(&ch->ep_killed, ek + 1u);
    } else {
      r = 2u;
    }
  }
  coop__unlock(&ch->lock);
  return r;
}

/* Slave, thread 0: arrive, wait, and learn whether a held release removed
 * it. offer: 2 in the query resizing barrier, where a slave that read
 * want_kill non-zero before its step's workgroup barrier (wl->want_pre,
 * coop__after_step) holds the episode for the master with its arrival:
 * one add of 1 - H, which cannot come too late (the episode waits for
 * that very arrival), where a compare-and-swap after the add lost to the
 * other arrivals' adds until the last was in (at 1087 workgroups on an
 * H200, always). ep_hold, taken first, makes it one hold an episode; if
 * another has it, the master's hold covers the episode
 * (coop__bar_hold_first). 1 in the plain one: its offer is judged after
 * the add, with want_kill read beside it (a hint: a stale zero only delays
 * the surrender); an offer that comes too late, the episode released by
 * then, is made before the next arrival, where it cannot be. Returns GO,
 * KILL (removed), or NONE if cancelled. */
COOP_FN coop_u32 coop__slave_wait(struct coop_ctx *c, coop_u32 offer) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  COOP_LOCAL struct coop_wgl *wl = c->wl;
  coop_u32 e = wl->gen, t = wl->base[e & 1u] + COOP__BAR_EP;
  COOP_GLOBAL coop_atomic_u32 *word = COOP__BAR_WORD(ch, e);
  coop_u32 early = offer == 1u && wl->hold_next;
  if (early) coop__plain_offer(c, word, t);
  wl->hold_next = 0u;
  coop_u32 add = 1u;
  if (offer == 2u && wl->want_pre != 0u && coop__ep_hold_take(ch)) add = 1u - COOP__BAR_HOLD;
  /* The acquire: a release add; only the add that completes the episode
   * is followed by an acquire (coop__bar_acquire). An acquire load in
   * flight with every slave's add, the last arrival's acquire at no wait,
   * slowed the barrier at 512 workgroups on the H200, its loads beside
   * the adds. */
  coop_u32 v = coop_fadd_rel(word, add) + add;
  COOP__PB(wl, 2);
  if (offer == 1u && !early && coop_ld_rlx(&ch->want_kill) != 0u) {
    wl->hold_next = coop__plain_offer(c, word, t) == 2u;
    v = t - 1u; /* read the word again */
  }
  coop_i32 d = (coop_i32)(v - t);
  if (d >= 0) { /* this add completed the episode (or met a cancellation) */
    d = coop__bar_acquire(word, t, v);
    if (coop__bar_cancel_seen(ch, d)) return COOP_BF_NONE;
  } else {
    coop_u32 cancelled = 0u;
    d = coop__bar_spin(ch, word, t, 0u, 0u, &cancelled);
    if (cancelled) return COOP_BF_NONE;
  }
  COOP__PB(wl, 3);
  wl->gen = e + 1u;
  if (d < (coop_i32)COOP__BAR_EP) {
    wl->base[e & 1u] = t;
    return COOP_BF_GO;
  }
  coop_u32 rel = coop_ld_rlx(&ch->bar_rel); /* after the acquire: the held release's */
  if ((rel >> COOP__REL_SHIFT) != ((e + 1u) & (0xffffffffu >> COOP__REL_SHIFT)) ||
      c->vid >= COOP__REL_M(rel))
    return COOP_BF_KILL;
  wl->base[e & 1u] = t + COOP__BAR_HELD;
  return COOP_BF_GO;
}

/* Master, thread 0: its arrival ("The master's count"), the first add of
 * the next episode on the other word, the hold it asks for in a resizing
 * barrier, and the wait. The hints for a hold are read beside the add;
 * stale, they only delay a resize. A hold asked for after the master's add
 * fails if that add completed the episode; it is then made before the next
 * arrival, where it cannot fail. A hold for a fork never fails: P < N, so
 * the count waits for the master's second add. Returns 0 if cancelled, 1
 * after a plain episode, 2 when the episode is held and complete: every
 * arrival is in and nobody has left, and the caller resizes and releases
 * it (coop__release_held). */
COOP_FN coop_u32 coop__master_wait(struct coop_ctx *c, coop_u32 resizing) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  COOP_LOCAL struct coop_wgl *wl = c->wl;
  coop_u32 e = wl->gen, n = wl->n_max, t = wl->base[e & 1u] + COOP__BAR_EP, slot = (e - 1u) & 3u;
  COOP_GLOBAL coop_atomic_u32 *word = COOP__BAR_WORD(ch, e);
  coop_u32 held = 0u;
#ifdef COOP_PROF_SUSPEND /* scheduler.cl, "Profile" */
  wl->t_arrive = coop_clock();
#endif
  /* A hold asked for at the episode before, or a kill the master read
   * asked for before its step's workgroup barrier (wl->want_pre): when
   * the master ended its step last, a hold asked for beside its own add
   * came after that add had completed the episode */
  if (resizing && (wl->hold_next || (wl->want_pre != 0u && wl->m_ep > 1u)))
    held = coop__bar_hold_first(ch, word, t, wl->query);
  wl->hold_next = 0u;
  coop_u32 v = coop_fadd_rel(word, 1u) + 1u;
  COOP__PB(wl, 2);
  /* The next episode's first add: in flight with this one, it has landed
   * long before the release of the next arrival, which waits for it
   * (made after the completion, it cost that release a round trip). */
  coop_fadd_rlx(COOP__BAR_WORD(ch, e + 1u), COOP__BAR_EP - n);
  coop_u32 dd = coop_ld_rlx(&ch->bar_delta[slot]), cancel = coop_ld_rlx(&ch->cancel);
  coop_u32 sus = coop_ld_rlx(&ch->suspend), want = 0u, nr = 0u, eh = 0u;
  if (resizing) {
    want = coop_ld_rlx(&ch->want_kill);
    nr = coop_ld_rlx(&ch->n_resv);
    if (wl->query) eh = coop_ld_rlx(&ch->ep_hold);
  }
  /* The acquire: the master's add stays a release (an acquire would hold
   * back the loads above until it returned). Where the acquire is a load,
   * that load follows them, in flight with the add: one workgroup's, where
   * every slave's beside its add slowed the barrier at 512 workgroups.
   * Where it is the light fence, the fence goes after the add that
   * completes the episode, below: here it would wait for the add, and
   * empty the SM's L1 once more whenever the master then spins. */
  coop_i32 da = COOP_FENCE_ACQ_LIGHT ? 0 : coop__bar_acquire(word, t, v);
  wl->sus = sus; /* for coop__primitive0's suspension, without a load of its own */
  coop_u32 p = wl->m_ep + dd;
  wl->m_ep = p;
  if (dd != 0u) coop_fadd_rlx(&ch->bar_delta[slot], 0u - dd);
  if (resizing && !held) {
    coop_u32 hold = (wl->query && want != 0u) || (sus != 0u && p > 1u);
    if (hold || (nr != 0u && p < n)) {
      held = 1u;
      if (!coop__bar_hold_now(ch, word, t, wl->query, v, eh)) wl->hold_next = 1u;
    }
  }
  if (p != n) {
    v = coop_fadd_rel(word, n - p) + (n - p);
    if (!COOP_FENCE_ACQ_LIGHT && (coop_i32)(v - t) >= 0)
      da = coop__bar_acquire(word, t, v); /* after this add */
  }
  if (cancel) return 0u;
  coop_i32 d = (coop_i32)(v - t);
  if (d >= 0) { /* this add completed the episode (or met a cancellation) */
    d = COOP_FENCE_ACQ_LIGHT ? coop__bar_acquire(word, t, v) : da;
    if (coop__bar_cancel_seen(ch, d)) return 0u;
  } else {
    coop_u32 cancelled = 0u;
    d = coop__bar_spin(ch, word, t, 1u, resizing && !held ? (p << 1) | wl->query : 0u, &cancelled);
    if (cancelled) return 0u;
  }
  COOP__PB(wl, 3);
  if (d < 0) return 2u;
  /* A hold asked for (held), the episode released plain: another's claim
   * lost to the arrivals (coop__bar_hold_first). Hold the next one first. */
  if (held) wl->hold_next = 1u;
  wl->gen = e + 1u;
  wl->base[e & 1u] = t;
  return 1u;
}

/* Master, thread 0, a held episode complete: resize under the lock and
 * release. Kill w of M (the highest ids) or, when none is due and st is
 * given, fork, transmitting workgroup 0's state st; the new workgroups
 * start after the release, in the episode it opens. */
COOP_FN void coop__release_held(struct coop_ctx *c, const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  COOP_LOCAL struct coop_wgl *wl = c->wl;
  coop_u32 e = wl->gen, t = wl->base[e & 1u] + COOP__BAR_EP;
  coop_u32 query = wl->query;
#ifdef COOP_PROF_SUSPEND /* scheduler.cl, "Profile" */
  coop_u64 held_at = coop_clock();
#endif
  coop__lock(&ch->lock);
  /* Every word the release may need, loaded together, in flight at once:
   * under the lock none of them moves. Loaded as each was needed, a kill
   * waited for three round trips in turn before the release, while every
   * slave spun. */
  coop_u32 m = coop_ld_rlx(&ch->m), sus = coop_ld_rlx(&ch->suspend);
  coop_u32 want = coop_ld_rlx(&ch->want_kill), w = query ? want : coop_ld_rlx(&ch->ep_killed);
  coop_u32 killed = coop_ld_rlx(&ch->killed);
  /* The flag as of this release, for coop__primitive0: the one read at the
   * arrival may be older than the kills this release makes for it, and
   * workgroup 0 would then run a whole step alone before it saves. */
  wl->sus |= sus;
  /* A suspension (scheduler.cl, "Suspension") takes every workgroup but 0
   * at this episode: the plain barrier's offers claim kills only from the
   * top id down in arrival order, one or two an episode when hundreds
   * arrive, and a kernel of 10 ms steps at full width did not shrink in
   * seconds. Every slave has arrived, so any top set may leave, whatever
   * want_kill asks yet: the scheduler stores the flag before it asks for
   * the cap's kills, and asks, under this lock, only for M - 1 less what
   * is asked already. want_kill keeps what this release does not meet. */
  if (query) {
    if (sus != 0u || w > m - 1u) w = m - 1u; /* query() */
    coop_st_rlx(&ch->want_kill, want > w ? want - w : 0u);
  } else {
    if (m > 1u && sus != 0u) {
      coop_u32 more = m - 1u - w;
      coop_st_rlx(&ch->want_kill, want > more ? want - more : 0u);
      w += more;
    }
    coop_st_rlx(&ch->ep_killed, 0u);
  }
  /* the bases the new workgroups start from: this word's after the release */
  coop_u32 k = 0u, m_new = m - w, rb = t + COOP__BAR_HELD;
  if (w == 0u && st && !sus) { /* a suspending kernel forks nothing */
    k = coop__fork_locked(c->dev, (coop_u32)(ch - c->dev->chan), st, st_size, e + 1u,
                          e & 1u ? wl->base[0] : rb, e & 1u ? rb : wl->base[1]);
    m_new = m + k;
  } else if (w != 0u) {
#ifdef COOP_PROF_SUSPEND
    if (sus != 0u) {
      ch->t_kill_arrive = wl->t_arrive;
      ch->t_kill_held = held_at;
    }
#endif
    coop_st_rlx(&ch->killed, killed + w);
    coop_st_rel(&ch->m, m_new);
  }
  /* This episode's kills and forks are in M' now */
  coop_st_rlx(&ch->bar_delta[e & 3u], 0u);
  coop_st_rlx(&ch->ep_hold, 0u);
  coop_st_rlx(&ch->bar_rel, ((e + 1u) << COOP__REL_SHIFT) | m_new);
  coop_fadd_rel(COOP__BAR_WORD(ch, e), COOP__BAR_HOLD + COOP__BAR_HELD);
  /* M's low and high marks, after the release: only the last workgroup
   * out reads them, after its acquire of alive (a fork tracks its own) */
  if (w != 0u) coop__track_m(ch, m_new);
  if (k) coop__fork_start(c->dev, ch, m, k);
  coop__unlock(&ch->lock);
  wl->m_ep = m_new;
  wl->gen = e + 1u;
  wl->base[e & 1u] = rb;
}

/* global_barrier, thread 0. Returns 1 if the kernel was cancelled. An
 * episode held by a late plain offer (coop__bar_hold) is released with its
 * kills, never a fork: a global barrier transmits no state. */
COOP_FN coop_u32 coop__global_barrier_t0(struct coop_ctx *c) {
  if (c->vid != 0u) return coop__slave_wait(c, 0u) != COOP_BF_GO;
  coop_u32 r = coop__master_wait(c, 0u);
  if (r == 2u) coop__release_held(c, (const coop_u8 *)0, 0u);
  return r == 0u;
}
COOP_FN0 coop_u32 coop__global_barrier0(COOP__CTX_PARAM cp) {
  return coop__global_barrier_t0(COOP__CTX_OF(cp));
}

/* global_barrier, callable from any function by every active workgroup
 * (all threads). Returns 1 if the kernel was cancelled meanwhile: the
 * caller must return from its step. */
COOP_FN coop_u32 coop_global_barrier(struct coop_ctx *c) {
  coop_wg_barrier(); /* every thread's writes before thread 0's release (its add) */
  coop_u32 left = coop__bcast(c, c->lid == 0u ? coop__global_barrier0(COOP__CTX_ARG(c)) : 0u);
  if (left) c->left = 1u;
  return left;
}

/* resizing_global_barrier, thread 0. Returns 1 if this workgroup must leave
 * (killed or cancelled). st is thread 0's transmitted state.
 *   plain (Sec. 4.2, first design): each slave offers itself once, on
 *     arrival (coop__plain_offer); the doomed wait for the release, which
 *     removes them.
 *   query (Sec. 4.2, second design): the master asks query() how many the
 *     scheduler wants, and releases the highest W ids as removed.
 * In both, the master forks (fork before kill, Appendix A) only when no
 * kill is due in this episode. When nothing is due (the common case)
 * nobody takes a lock and the barrier is a global_barrier. */
COOP_FN coop_u32 coop__resizing_barrier0(struct coop_ctx *c, const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  if (c->vid != 0u) return coop__slave_wait(c, c->wl->query ? 2u : 1u) != COOP_BF_GO;
  coop_u32 r = coop__master_wait(c, 1u);
  if (r == 0u) return 1u;
  if (r == 2u) coop__release_held(c, st, st_size);
  /* the master is the only writer of resizes while the kernel runs */
  c->wl->resizes += 1u;
  coop_st_rlx(&ch->resizes, c->wl->resizes);
  return 0u;
}

/* Thread 0: the primitive(s) a step asked for, in the order kill, fork,
 * barrier. Returns 0 to go on, 1 when done, 2 when killed or cancelled. */
COOP_FN0 coop_u32 coop__primitive0(COOP__CTX_PARAM cp, coop_u32 r, const coop_u8 *st,
                                   coop_u32 st_size) {
  struct coop_ctx *c = COOP__CTX_OF(cp);
  if (c->left) return 2u; /* cancelled inside a direct coop_global_barrier */
  if (r & COOP_DONE) return 1u;
  if ((r & COOP_OFFER_KILL) &&
      coop__offer_kill0(c, (r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)) == 0u))
    return 2u;
  /* A fork beside a barrier would start its workgroups past a barrier they
   * never passed: it forks nothing (k = 0 is always valid; docs/kernels.md). */
  if ((r & COOP_REQUEST_FORK) && !(r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)))
    coop__request_fork0(c, st, st_size);
  if ((r & COOP_GLOBAL_BARRIER) && coop__global_barrier_t0(c)) return 2u;
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
   * alive (acq_rel) orders it. After a barrier it goes by the flag it read
   * beside its arrival: a load here, after the barrier's acquire, cost the
   * master a round trip before every step, and so every barrier one. */
  coop_u32 barrier = (r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)) != 0u;
  if (c->vid == 0u && (barrier ? c->wl->sus : coop_ld_rlx(&c->ch->suspend)) != 0u &&
      coop_ld_rlx(&c->ch->m) == 1u) {
    COOP_GLOBAL coop_u8 *d = (COOP_GLOBAL coop_u8 *)c->ch->saved;
    for (coop_u32 b = 0; b < st_size; b++) d[b] = st[b];
    /* where this primitive could fork, so may a resume (scheduler.cl):
     * a resizing barrier, or a fork not beside a global barrier (above) */
    coop_u32 forks =
        (r & COOP_RESIZING_BARRIER) || ((r & COOP_REQUEST_FORK) && !(r & COOP_GLOBAL_BARRIER));
    c->ch->saved_how = forks ? COOP_RS_WIDE : 0u;
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
  /* A step's return must be uniform, but its data may not be: a client may
   * write a device buffer while its job runs, or name one buffer as two
   * arguments, so that threads that read one word at different times (bfs's
   * size[in]) disagree. A thread that left on its own DONE while thread 0
   * went on to the workgroup barrier below would meet it at another
   * barrier, and the workgroup would run two ways at once. So thread 0's
   * return decides for all: DONE too goes through the barrier and the
   * broadcast (once per workgroup and task); only CONTINUE, which passes no
   * barrier, is each thread's, and a thread that went on alone meets the
   * others at this same barrier after its next step (docs/kernels.md,
   * "Rules for a step"). */
  if (c->left) return 1u;
  if (r == COOP_CONTINUE) return 0u;
  /* Thread 0 alone publishes the step's end: its arrival at a barrier, the
   * lower M of a kill, the state of a fork, each a release. A release orders
   * only what its thread has seen, so every thread's writes of the step
   * must be behind this workgroup barrier first. (Missing, it showed on the
   * H100 as bc's deltas read stale across barriers, 1 in 10^4 off, only
   * when the kernel shrank to one workgroup and grew back.) */
  /* Thread 0 of the query barrier reads want_kill and the suspension flag
   * here, their round trip beside the workgroup barrier's wait; if either
   * is non-zero a slave holds the episode with its arrival
   * (coop__slave_wait), the master before its own (coop__master_wait) */
  if (c->lid == 0u)
    c->wl->want_pre = (r & COOP_RESIZING_BARRIER) && c->wl->query
                          ? coop_ld_rlx(&c->ch->want_kill) | coop_ld_rlx(&c->ch->suspend)
                          : 0u;
  coop_wg_barrier();
  coop_u32 v = 0u;
  if (c->lid == 0u) {
#ifdef COOP_PROF_BAR
    if (!(r & COOP_DONE)) COOP__PB(c->wl, 1); /* legs: the steps that end in a primitive */
#endif
    v = coop__primitive0(COOP__CTX_ARG(c), r, coop__state_out(c, st, st_size), st_size);
#ifdef COOP_PROF_BAR
    if (!(r & COOP_DONE)) {
      COOP__PB(c->wl, 4);
      c->wl->pb_n += 1u;
    }
#endif
  }
  v = coop__bcast(c, v);
  /* Without branches: with the two ifs here, LLVM merged their stores into
   * a block that PoCL's parallel regions could not take ("Incoming edges
   * to non-entry block"), for some sets of kernels (the daemon's tests). */
  c->left |= (coop_u32)(v >= 2u);
  c->suspended |= (coop_u32)(v == 3u); /* suspended: thread 0's state is saved */
  return v != 0u;
}
