//@needs api.h
/*
 * primitives.cl: offer_kill and request_fork (004 Sec. 3.1, Appendix A).
 *
 * Every change of M happens with the channel lock held, so that "only the
 * workgroup with id M-1 can be killed" and "forked ids are M..M+k-1" are
 * decided against one value of M. Thread 0 of the workgroup decides; the
 * decision is broadcast through workgroup memory and a workgroup barrier,
 * which makes these workgroup-level functions uniform.
 *
 * Lock: a test-and-set spin lock on chan.lock; acquire on taking (exchange,
 * acquire), release on giving back, both device scope. The lock-free fast
 * paths read want_kill / n_resv relaxed (the lock, taken after them,
 * acquires what is decided under it): a stale zero only delays the
 * surrender or the fork to the next primitive, which the semantics allow
 * (offer_kill may always be a no-op; k = 0 is always a valid fork).
 */

COOP_FN void coop__lock(COOP_GLOBAL coop_atomic_u32 *l) {
  while (coop_xchg_acq(l, 1u) != 0u) {
    while (coop_ld_rlx(l) != 0u) {
    }
  }
}

COOP_FN void coop__unlock(COOP_GLOBAL coop_atomic_u32 *l) { coop_st_rel(l, 0u); }

/* With the lock held: record M in the channel's min/max. */
COOP_FN void coop__track_m(COOP_GLOBAL struct coop_chan *ch, coop_u32 m) {
  if (m < coop_ld_rlx(&ch->m_min)) coop_st_rlx(&ch->m_min, m);
  if (m > coop_ld_rlx(&ch->m_max)) coop_st_rlx(&ch->m_max, m);
}

/* COOP_KILL_TAKE_BELOW=0 (COOP_DEVICE_DEFINES): each waiter goes in its
 * own kill, one after the other, for comparison. */
#ifndef COOP_KILL_TAKE_BELOW
#define COOP_KILL_TAKE_BELOW 1
#endif

/* Lock held: 1 and its bit cleared when workgroup id waits at its offer
 * (coop__kill_turn): cleared by the kill above it, that clear is its kill;
 * by itself, the end of its wait. */
COOP_FN coop_u32 coop__kwait_take(COOP_GLOBAL struct coop_chan *ch, coop_u32 id) {
  coop_u32 bit = 1u << (id & 31u);
  if (!(coop_ld_rlx(&ch->kwait[id >> 5]) & bit)) return 0u;
  coop_fand(&ch->kwait[id >> 5], ~bit);
  return 1u;
}

/* COOP_KILL_TAKE_WORDS=0 (COOP_DEVICE_DEFINES): the take below goes one
 * bit at a time (coop__kwait_take), for comparison. */
#ifndef COOP_KILL_TAKE_WORDS
#define COOP_KILL_TAKE_WORDS 1
#endif

/* Lock held: takes the waiters at ids top, top - 1, ... (never id 0)
 * while their bits in kw (ch->kwait) are set, at most n of them, a word at
 * a time: one load and one atomic and for each word's run of set bits,
 * where coop__kwait_take makes those two dependent round trips for every
 * waiter, all inside the lock hold (a block of 500 waiters: 1000 of them).
 * Returns how many it took. A word is loaded once: a waiter that sets its
 * bit after that load (it does so without the lock; only a lock holder
 * clears another's bit) is left waiting and ends the run, as one that
 * came a moment later would have; the and clears only the bits the load
 * saw set, which nobody else can clear meanwhile. */
COOP_FN coop_u32 coop__kwait_take_run(COOP_GLOBAL coop_atomic_u32 *kw, coop_u32 top, coop_u32 n) {
  coop_u32 k = 0u;
  while (k < n && top >= 1u) {
    coop_u32 hi = top & 31u, w = coop_ld_rlx(&kw[top >> 5]), run = 0u;
    /* the set bits from hi down: ids top - run >= 1, at most n - k */
    while (run <= hi && run < top && k + run < n && ((w >> (hi - run)) & 1u) != 0u) run++;
    if (run == 0u) break;
    coop_u32 ones = run == 32u ? 0xffffffffu : (1u << run) - 1u;
    coop_fand(&kw[top >> 5], ~(ones << (hi + 1u - run)));
    k += run;
    if (run <= hi) break; /* it stopped inside the word */
    top -= run;
  }
  return k;
}

/* Thread 0, lock held: the offer of workgroup vid, judged against M. The
 * episode it is in (ep) loses it from the next on (bar_delta); in this one
 * its arrival is made for it by the caller, once the lock is given back.
 * Accepted, it takes in the same hold those waiting right below it, while
 * kills are still wanted (their bits, coop__kwait_take): each then sees
 * its kill and makes its own arrival. No waiter is in another episode: a
 * waiter is in episode 0 and has not arrived, so no episode 1 exists. */
COOP_FN coop_u32 coop__kill_locked(COOP_GLOBAL struct coop_chan *ch, coop_u32 vid, coop_u32 ep) {
  coop_u32 m = coop_ld_rlx(&ch->m);
  coop_u32 want = coop_ld_rlx(&ch->want_kill);
  if (want == 0u || vid == 0u || m <= 1u || vid != m - 1u) return 0u;
  coop_u32 k = 1u;
#if COOP_KILL_TAKE_BELOW && COOP_KILL_TAKE_WORDS
  k += coop__kwait_take_run(ch->kwait, m - 2u, want - 1u);
#elif COOP_KILL_TAKE_BELOW
  while (k < want && m - k > 1u && coop__kwait_take(ch, m - k - 1u)) k++;
#endif
  coop_st_rlx(&ch->want_kill, want - k);
  coop_st_rlx(&ch->killed, coop_ld_rlx(&ch->killed) + k);
  if (k > 1u) coop_st_rlx(&ch->taken, coop_ld_rlx(&ch->taken) + k - 1u);
  coop_st_rel(&ch->m, m - k);
  coop_fadd_rlx(&ch->bar_delta[ep & 3u], 0u - k);
  coop__track_m(ch, m - k);
  return 1u;
}

/* Thread 0, lock held: take up to n_max - M reserved workers as ids
 * M..M+k-1, each to start with the state bytes st in barrier episode gen
 * with the bases base0, base1 (barrier.cl), and write their payloads and
 * M. Nothing starts yet (coop__fork_start). Returns k. */
COOP_FN coop_u32 coop__fork_locked(COOP_GLOBAL struct coop_dev *dev, coop_u32 chan,
                                   const coop_u8 *st, coop_u32 st_size, coop_u32 gen,
                                   coop_u32 base0, coop_u32 base1) {
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[chan];
  coop_u32 m = coop_ld_rlx(&ch->m);
  coop_u32 nr = coop_ld_rlx(&ch->n_resv);
  coop_u32 k = ch->n_max - m;
  if (nr < k) k = nr;
  if (k == 0u) return 0u;
  for (coop_u32 a = 0; a < k; a++) ch->pid_of[m + a] = ch->resv[nr - 1u - a];
  coop_st_rel(&ch->m, m + k);
  coop_fadd(&ch->alive, k); /* atomic: leaving workgroups decrement without the lock */
  for (coop_u32 a = 0; a < k; a++) {
    COOP_GLOBAL struct coop_worker *w = &dev->w[ch->pid_of[m + a]];
    COOP_GLOBAL coop_u8 *t = (COOP_GLOBAL coop_u8 *)w->transmit;
    for (coop_u32 b = 0; b < st_size; b++) t[b] = st[b];
    w->chan = chan;
    w->vid = m + a;
    w->forked = 1u;
    w->gen = gen;
    w->base[0] = base0;
    w->base[1] = base1;
  }
  coop_st_rlx(&ch->n_resv, nr - k);
  coop_st_rlx(&ch->forked, coop_ld_rlx(&ch->forked) + k);
  coop__track_m(ch, m + k);
  return k;
}

/* Thread 0, lock held: start the k workgroups coop__fork_locked took, ids
 * m0..m0+k-1. The payloads and M before any of them starts: a release
 * fence, then relaxed stores (the new worker acquires its state). */
COOP_FN void coop__fork_start(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL struct coop_chan *ch,
                              coop_u32 m0, coop_u32 k) {
  coop_fence_rel();
  for (coop_u32 a = 0; a < k; a++) coop_st_rlx(&dev->w[ch->pid_of[m0 + a]].state, COOP_WS_ASSIGNED);
}

/* Broadcast thread 0's value v to the whole workgroup, with one workgroup
 * barrier. Every thread calls it the same number of times (it holds a
 * barrier), so each keeps the same bslot; calls use the two slots in turn.
 * Slot k is written again two calls later, after the next call's barrier,
 * which each thread reaches only once it has read slot k: no second
 * barrier is needed to keep the value until all have read it (a step
 * then costs two workgroup barriers, as grid.sync's own). */
COOP_FN coop_u32 coop__bcast(struct coop_ctx *c, coop_u32 v) {
  coop_u32 k = c->bslot;
  c->bslot = k ^ 1u;
  if (c->lid == 0u) c->wl->decision[k] = v;
  coop_wg_barrier();
  return c->wl->decision[k];
}

/* COOP_DEVICE_DEFINES=COOP_PROF_BAR (docs/scheduler.md, "Profile"): thread
 * 0 of every workgroup sums, in workgroup memory, the cycles of each leg
 * of its step loop (SM cycles on CUDA, the device clock elsewhere): 0 the
 * broadcast and the loop back to the step, 1 the step and the workgroup
 * barrier after it, 2 the call and the barrier arrival's add, 3 the wait
 * for the release, 4 the rest of the primitive; the report of workgroups
 * 0 and 1 stores them in mailbox.prof (worker.cl, coop__report). */
#ifdef COOP_PROF_BAR
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define COOP__PB_NOW() ((coop_u64)clock64())
#else
#define COOP__PB_NOW() coop_clock()
#endif
#define COOP__PB(wl_, k)              \
  do {                                \
    coop_u64 n_ = COOP__PB_NOW();     \
    (wl_)->pb[k] += n_ - (wl_)->pb_t; \
    (wl_)->pb_t = n_;                 \
  } while (0)
#else
#define COOP__PB(wl_, k) ((void)0)
#endif

/* Calls out of line. Thread 0's primitives (coop__primitive0) and the
 * global barrier (coop__global_barrier0) are one noinline function each,
 * shared by every kernel (PoCL needs the call; on CUDA, inlined into every
 * kernel's step loop they doubled NVRTC's time for the shipped set). A
 * pointer to the context or to the kernel's state passed to such a call
 * keeps that variable in local memory for the whole loop, and each step
 * after a barrier, whose acquire fence empties the SM's L1 on CUDA, read
 * it again from L2. So on CUDA (COOP__CALLS_BY_VALUE) the call takes the
 * context by value and the state from a copy in workgroup memory
 * (wl->st), made by thread 0 before the call, so that the compiler may
 * keep both in registers (a state too large for them stays in local
 * memory still; micro_bar's loop has no local access left). */
#if COOP__CALLS_BY_VALUE
#define COOP__CTX_PARAM struct coop_ctx
#define COOP__CTX_ARG(c) (*(c))
#define COOP__CTX_OF(p) (&(p))
COOP_FN const coop_u8 *coop__state_out(struct coop_ctx *c, const coop_u8 *st, coop_u32 n) {
  coop_u8 *d = (coop_u8 *)c->wl->st;
  for (coop_u32 b = 0; b < n; b++) d[b] = st[b];
  return d;
}
#else
#define COOP__CTX_PARAM struct coop_ctx *
#define COOP__CTX_ARG(c) (c)
#define COOP__CTX_OF(p) (p)
COOP_FN const coop_u8 *coop__state_out(struct coop_ctx *c, const coop_u8 *st, coop_u32 n) {
  (void)c;
  (void)n;
  return st;
}
#endif

/* The primitives below run on thread 0 only, with no workgroup barrier:
 * coop__after_step broadcasts their outcome once per step. Keeping every
 * iteration of the step loop to the same barriers is what PoCL's work-item
 * loops need (barriers reached on different paths miscompile there). */

/* The kill cascade (docs/scheduler.md, "Kills without a barrier"). Only
 * id M-1 can be killed, so a kernel without barriers gives back W
 * workgroups one at a time, each when the new top next offers: W times
 * half a step, where the others' offers, made meanwhile, are refused. A
 * workgroup whose offer finds itself among the W to go (M-W <= vid < M-1)
 * waits at the offer for those above it to leave, and is then the top:
 * the W leave within about one step. A waiter sets its bit in ch->kwait,
 * and the kill of the top takes, in the same lock hold, every waiter right
 * below it while kills are wanted (coop__kill_locked): a block of waiters
 * leaves in one hold, not in one hold and one look at M each (543 of them
 * took 1 to 3 ms on an H200). The wait is bounded (COOP_KILL_WAIT_
 * TICKS plus twice the workgroup's last step, at most 32 times the
 * former), for the kernels whose workgroups above wait for this one
 * inside a step (a blocking kernel may: they are active, and so promised
 * progress), and ends at once when no kill is wanted any more, when the
 * task is cancelled, or when workgroups arrive at a barrier of the
 * episode (the word moves by more than the kills: those above may wait
 * there for this one). Only for a kernel in its first episode (no barrier
 * passed yet) whose step asked for no barrier: a kernel with barriers is
 * resized at them. Relaxed loads, and the bit's atomic or: the kill
 * itself is decided under the lock (coop__kill_locked) against the M and
 * want_kill it reads there; a stale value only makes a workgroup wait when
 * it need not (to the end of the cascade at most) or not wait. */
#define COOP__KILL_WAIT_SLACK 4
#ifndef COOP_KILL_WAIT_TICKS
#define COOP_KILL_WAIT_TICKS 262144u /* 262 us of CUDA's globaltimer; ~100 us of a 2.6 GHz TSC */
#endif

/* coop__kill_turn's answers: not to go; id M-1 at once (try the kill);
 * waited with its bit set (settle under the lock: coop__offer_kill0);
 * taken by the kill above it (its bit cleared: no lock needed, since only
 * a kill clears another's bit, under the lock, and that is final). */
#define COOP__TURN_NO 0u
#define COOP__TURN_TOP 1u
#define COOP__TURN_WAITED 2u
#define COOP__TURN_TAKEN 3u

/* Thread 0: whether workgroup c tries its kill (above). step: its last
 * step's length in ticks (0: not known, or no wait). A wait ends when its
 * bit was cleared (the kill above it took it: TAKEN), when it is id M-1,
 * or as the rules above say; the offer then settles under the lock. */
COOP_FN coop_u32 coop__kill_turn(struct coop_ctx *c, coop_u64 step) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  coop_u32 vid = c->vid, m0 = coop_ld_rlx(&ch->m);
  if (m0 == vid + 1u) return COOP__TURN_TOP;
#if COOP_HAVE_CLOCK
  coop_u32 want = coop_ld_rlx(&ch->want_kill);
  /* want_kill and M each lose one at a kill, in one lock hold, but two
   * loads may see a kill by halves: one more counts the lowest wanted in */
  if (step == 0u || vid >= m0 || vid + want + 1u < m0) return COOP__TURN_NO;
  coop_u64 bound = (coop_u64)COOP_KILL_WAIT_TICKS + 2u * step;
  if (bound > 32u * (coop_u64)COOP_KILL_WAIT_TICKS) bound = 32u * (coop_u64)COOP_KILL_WAIT_TICKS;
  COOP_GLOBAL coop_atomic_u32 *w = COOP__BAR_WORD(ch, c->wl->gen);
  COOP_GLOBAL coop_atomic_u32 *kw = &ch->kwait[vid >> 5];
  coop_u32 bit = 1u << (vid & 31u);
  coop_u32 w0 = coop_ld_rlx(w);
  coop_u64 t0 = coop_clock();
  coop_for(kw, bit); /* from here the kill above may take it too */
  for (;;) {
    coop_u32 m = coop_ld_rlx(&ch->m);
    /* each kill above takes one from M (under the lock), then adds its
     * arrival to the word, so that a few kills may be half seen, here or
     * in the snapshot: more adds than kills by more than those are
     * arrivals */
    if (!(coop_ld_rlx(kw) & bit)) return COOP__TURN_TAKEN;
    if (m == vid + 1u || coop_ld_rlx(&ch->want_kill) == 0u ||
        (coop_i32)((coop_ld_rlx(w) - w0) - (m0 - m)) > COOP__KILL_WAIT_SLACK ||
        coop_ld_rlx(&ch->cancel) != 0u || coop_clock() - t0 > bound)
      return COOP__TURN_WAITED;
    coop_nap(COOP_IDLE_NAP_NS);
  }
#else
  (void)step;
  return COOP__TURN_NO;
#endif
}

/* Thread 0, a step without a barrier (may_wait) in a kernel's first
 * episode: the length of its last step, and now its last offer's time;
 * else 0 (no wait). */
COOP_FN coop_u64 coop__offer_step(struct coop_ctx *c, coop_u32 may_wait) {
#if COOP_HAVE_CLOCK && COOP_KILL_WAIT_TICKS != 0
  if (!may_wait || c->wl->gen != 0u) return 0u;
  coop_u64 now = coop_clock(), last = c->wl->t_offer;
  c->wl->t_offer = now;
  return last != 0u && now > last ? now - last : 0u;
#else
  (void)c;
  (void)may_wait;
  return 0u;
#endif
}

/* COOP_PROF_KILLS (scheduler.cl, coop__prof_kills): lock held, a kill made
 * by workgroup c's own offer, taking k workgroups (itself and the waiters
 * below it), its last step `step` ticks long, the offer's turn. Timed from
 * when the scheduler last raised the channel's want_kill from 0
 * (ch.t_kill_arrive, COOP_PROF_SUSPEND's word, written in the lock hold
 * that raised it): prof[5] counts such kills, prof[6] sums their delays,
 * prof[7] their k; of those more than COOP_PROF_KILLS_LATE ticks late,
 * prof[8] counts them, prof[9] sums their delays, prof[10] their k,
 * prof[11] the killers' steps, prof[12] those whose offer found them the
 * top at once (not after a wait). */
#ifdef COOP_PROF_KILLS
#define COOP_PROF_KILLS_LATE 100000u
COOP_FN void coop__prof_top(struct coop_ctx *c, coop_u32 turn, coop_u32 k, coop_u64 step) {
  COOP_GLOBAL coop_u64 *p = c->mb->prof;
  coop_u64 t = c->ch->t_kill_arrive, now = coop_clock();
  coop_u64 d = t != 0u && now > t ? now - t : 0u;
  p[5] += 1u;
  p[6] += d;
  p[7] += k;
  if (d <= COOP_PROF_KILLS_LATE) return;
  p[8] += 1u;
  p[9] += d;
  p[10] += k;
  p[11] += step;
  p[12] += turn == COOP__TURN_TOP ? 1u : 0u;
}
#endif

/* offer_kill: returns 1 if the offer was accepted (the workgroup must
 * leave). may_wait: its step asked for no barrier (coop__kill_turn). */
COOP_FN coop_u32 coop__offer_kill0(struct coop_ctx *c, coop_u32 may_wait) {
  coop_u32 d = 0u;
  coop_u64 step = coop__offer_step(c, may_wait);
  /* Only id M-1 can be killed (with those waiting right below it), and M
   * drops only by such a kill, so a workgroup that sees another M-1 here,
   * and waits for none, need not take the lock:
   * without this hint all N workgroups queue on the lock at every offer
   * while a kill is wanted, and on the H100 (264 workgroups) the one that
   * could accept starved behind them for minutes. A stale M only delays
   * the kill to the next offer. */
  coop_u32 turn = c->vid != 0u && coop_ld_rlx(&c->ch->want_kill) != 0u ? coop__kill_turn(c, step)
                                                                       : COOP__TURN_NO;
  if (turn == COOP__TURN_TAKEN) {
    d = 1u;
  } else if (turn != COOP__TURN_NO) {
    coop__lock(&c->ch->lock);
#ifdef COOP_PROF_KILLS
    coop_u32 taken0 = coop_ld_rlx(&c->ch->taken);
#endif
    /* a waiter clears its own bit (its wait is over) and tries its own
     * kill; a bit already cleared under the lock by another was its kill */
    if (turn == COOP__TURN_WAITED && !coop__kwait_take(c->ch, c->vid)) {
      d = 1u;
    } else {
      d = coop__kill_locked(c->ch, c->vid, c->wl->gen);
      if (turn == COOP__TURN_WAITED && !d) coop_fadd_rlx(&c->ch->waits, 1u);
#ifdef COOP_PROF_KILLS
      if (d) coop__prof_top(c, turn, coop_ld_rlx(&c->ch->taken) - taken0 + 1u, step);
#endif
    }
    coop__unlock(&c->ch->lock);
    /* Its arrival in this episode, made now (barrier.cl, "Episodes"); a
     * release, after its step's writes and the kill's. */
    if (d) coop_fadd_rel(COOP__BAR_WORD(c->ch, c->wl->gen), 1u);
  }
  return d;
}

/* request_fork: thread 0's state st is transmitted to the new workgroups,
 * which start in the forker's episode (not at a barrier). This episode now
 * waits for k more arrivals: the count goes k back before any of them can
 * arrive, and the next episodes count them (bar_delta). */
COOP_FN void coop__request_fork0(struct coop_ctx *c, const coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL struct coop_chan *ch = c->ch;
  if (coop_ld_rlx(&ch->n_resv) == 0u) return;
  coop__lock(&ch->lock);
  coop_u32 m = coop_ld_rlx(&ch->m);
  coop_u32 k = coop__fork_locked(c->dev, (coop_u32)(ch - c->dev->chan), st, st_size, c->wl->gen,
                                 c->wl->base[0], c->wl->base[1]);
  if (k) {
    coop_fadd_rlx(COOP__BAR_WORD(ch, c->wl->gen), 0u - k);
    coop_fadd_rlx(&ch->bar_delta[c->wl->gen & 3u], k);
    coop__fork_start(c->dev, ch, m, k);
  }
  coop__unlock(&ch->lock);
}

/* A forked workgroup's threads load the transmitted state (written by the
 * forker before it released this worker; thread 0 acquired that release and
 * the workgroup barrier in the worker loop passed it on). */
COOP_FN void coop__load_state(struct coop_ctx *c, coop_u8 *st, coop_u32 st_size) {
  COOP_GLOBAL const coop_u8 *t = (COOP_GLOBAL const coop_u8 *)c->self->transmit;
  for (coop_u32 b = 0; b < st_size; b++) st[b] = t[b];
}
