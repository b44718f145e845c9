//@needs primitives.cl registered.cl
/*
 * scheduler.cl: the scheduler workgroup (004 Sec. 4.2): thread 0 decides,
 * and on CUDA the threads past its first warp carry out the wide parts of a
 * start and of a large reap (see "Helper warps").
 *
 * It is the only workgroup that reads host memory (the mailbox) in a loop.
 * One pass of its loop:
 *   1. read ping, shutdown, sub_head and cancel_seq (relaxed, then one
 *      acquire fence); answer a clock ping; note a shutdown request;
 *   2. pass cancel requests, caps and suspensions of running tasks to
 *      their channels (first: they wait for nothing else of the pass);
 *   3. take new tasks from the submit ring; each entry's kernel, flags,
 *      size and deadline are copied to scheduler memory (sched.t_*), and
 *      the helpers stage its arguments from the record;
 *   4. reconcile forks: reserved workers a kernel has forked become busy;
 *   5. reap workers that returned (acquire on their state): a finished
 *      kernel's task record is completed (results, then state release);
 *   6. serve the head of the FIFO: start it if enough workers are free,
 *      else take back reservations and ask cooperative kernels to surrender
 *      workgroups (want_kill, under the channel lock);
 *   7. with nothing waiting, offer free workers to cooperative kernels below
 *      their N (reserve them for the next request_fork or resizing barrier),
 *      except those held for a periodic task due soon ("Gathering ahead");
 *   8. refresh a slice of the live view (last, so that a task taken in at
 *      step 3 is started first).
 * Worker status lives in sched.wstat: FREE, RESERVED|chan, or chan (busy).
 */

#define COOP_RESV_BIT 0x80000000u
/* Trace marks of a pass that starts a task (COOP_PROF_TASKS, "Profile"
 * below): 0 the pass's top, 1 the host words read, 2 released, 3 the
 * entry validated, 4 intake done, 5 forks, reap and cancels done,
 * 6 the head chosen, 7 gathered, 8 the id map done (help_wait), 9 the
 * workers released, 10 RUNNING stored, 11 serving done, 12 the pass's end. */
#ifdef COOP_PROF_TASKS
#define COOP_TRACE_AT(k, t) (s->trace[k] = (t))
#define COOP_TRACE_LAST 12u
#else
#define COOP_TRACE_AT(k, t)
#endif
#define COOP_TRACE(k) COOP_TRACE_AT(k, coop_clock())
#define COOP_REAP_BATCH 4u /* worker states loaded together by the reap */
/* Batches thread 0 scans alone before it hands the reap to the helpers
 * (coop__reap) */
#define COOP_REAP_ALONE_MAX 8u

COOP_FN COOP_GLOBAL struct coop_task_rec *coop__task(COOP_GLOBAL struct coop_mailbox *mb,
                                                     coop_u32 slot) {
  return &mb->tasks[slot];
}

/* Validate a new task against the registered kernel table. */
COOP_FN coop_u32 coop__validate(coop_u32 kid, coop_u32 flags, coop_u32 groups, coop_u32 nworkers) {
  if (kid >= COOP_NKERNELS) return COOP_TR_BAD_KERNEL;
  coop_u32 coop = (flags & COOP_TF_COOPERATIVE) != 0u;
  if (coop != coop__kernel_is_coop(kid)) return COOP_TR_KIND;
  if (coop && (flags & COOP_TF_GATED)) return COOP_TR_KIND; /* a gate is a short task's */
  if (groups == 0u) return COOP_TR_ZERO_GROUPS;
  if (groups > nworkers) return COOP_TR_TOO_MANY_GROUPS;
  return COOP_TR_OK;
}

COOP_FN void coop__finish_task(COOP_GLOBAL struct coop_mailbox *mb, coop_u32 slot, coop_u32 st) {
  coop_sys_st_rel(&coop__task(mb, slot)->state, st);
}

/* ---------------------------------------------------------- Helper warps
 * On CUDA (COOP_SCHED_HELPERS) the scheduler workgroup's threads past its
 * first warp serve thread 0: the work of a start that is many independent
 * memory operations, each a bus or L2 round trip when one thread does them
 * in turn, is spread over them. Measured with one thread on the H100: the
 * task record's 32 argument words read across PCIe one after the other, 54
 * us from intake to gather; one store per worker to release 527 workers,
 * 107 us. Spread over 224 threads, each is about one round trip.
 *
 * Protocol (state in coop_sched, device memory, device scope): thread 0
 * zeroes help_done (relaxed), then stores the order in help_gen (release):
 * its op and operands packed in the one word, with a count of orders in
 * its top bits (COOP_HELP_WORD). A helper that acquires a new help_gen
 * does its share (threads h, h + nhelpers, ...) with no load of the
 * order's fields after its acquire fence (that load was a dependent L2
 * round trip before every share), and adds 1 to help_done (release).
 * Thread 0 acquires help_done == nhelpers before it reads what helpers
 * wrote or writes another order, so an order is never rewritten while a
 * helper reads it; while an order is out, thread 0 touches none of the
 * state the order names. START: each free worker a helper finds takes a
 * ticket (relaxed add on help_ticket, which starts at the number of
 * workers thread 0 mapped itself) as its group id until g are given out:
 * ids v..g-1, each once, in no particular order of pids. REAP: a helper
 * reaps the returned workers among its pids as the one-thread reap does,
 * with atomic adds on the counters it shares with other helpers. RELEASE:
 * the helper issues a release fence after its acquire of help_gen, then
 * relaxed ASSIGNED stores; thread 0 wrote the channel and id map before
 * its release of help_gen, so a worker that acquires ASSIGNED sees them
 * (causality is transitive through the helper's acquire and release). */
#define COOP_HELP_START 1u   /* the id map of the order's channel */
#define COOP_HELP_RELEASE 2u /* ASSIGNED to the order's n workers of its channel */
#define COOP_HELP_REAP 3u    /* reap every worker that has returned */
#define COOP_HELP_EXIT 4u
#define COOP_HELP_STAGE 5u /* the order's task's arguments, from its record -> sched.t_payload */
#define COOP_HELP_START_RELEASE 6u /* START, each helper releasing each batch it mapped */
#define COOP_HELP_MIN_RELEASE 8u   /* fewer workers: thread 0 maps and releases them itself */
/* The order word: op (3 bits), channel (4), task slot (8), n (12), and the
 * order's count modulo 32, which tells it from the order before (a helper
 * carries out each order before thread 0 posts the next: coop__help_wait) */
#define COOP_HELP_WORD(gen, op, slot, c, n) \
  ((((gen)&31u) << 27) | ((n) << 15) | ((slot) << 7) | ((c) << 3) | (op))
#define COOP_HELP_OP(w) ((w)&7u)
#define COOP_HELP_CHAN(w) (((w) >> 3) & 0xfu)
#define COOP_HELP_SLOT(w) (((w) >> 7) & 0xffu)
#define COOP_HELP_N(w) (((w) >> 15) & 0xfffu)
#define COOP_HELP_GEN(w) ((w) >> 27)
#if COOP_MAX_CHANNELS > 16 || COOP_RING > 256 || COOP_MAX_WG > 4095
#error "the helpers' order word (COOP_HELP_WORD) is too narrow for these limits"
#endif
#ifndef COOP_T0_SCAN     /* a test of the helpers finishing a map sets it (COOP_DEVICE_DEFINES) */
#define COOP_T0_SCAN 64u /* ... looking at this many workers at most */
#endif
#define COOP_HELP_FIRST 32u  /* helpers: local ids from here (warp 0 is thread 0's) */
#define COOP_HELP_NAP_NS 64u /* a helper's nap between looks at help_gen */

/* A task's arguments then lengths (2 * COOP_MAX_ARGS words: the record's
 * args and lens and sched.t_payload are each laid out so), words i,
 * i + step, ... */
COOP_FN void coop__copy_payload(COOP_GLOBAL coop_u64 *to, COOP_GLOBAL const coop_u64 *from,
                                coop_u32 i, coop_u32 step) {
  for (; i < 2u * COOP_MAX_ARGS; i += step) to[i] = from[i];
}

COOP_FN void coop__release_workers(COOP_GLOBAL struct coop_dev *dev,
                                   COOP_GLOBAL struct coop_chan *ch, coop_u32 v, coop_u32 g,
                                   coop_u32 step) {
  for (; v < g; v += step) coop_st_rlx(&dev->w[ch->pid_of[v]].state, COOP_WS_ASSIGNED);
}

/* A start's id map entry: free worker pid becomes group v of channel c
 * (its payload, pid_of, wstat); released later, with the whole map. */
COOP_FN void coop__assign(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL struct coop_chan *ch,
                          coop_u32 c, coop_u32 pid, coop_u32 v) {
  COOP_GLOBAL struct coop_worker *w = &dev->w[pid];
  w->chan = c;
  w->vid = v;
  w->forked = 0u;
  w->gen = 0u;
  w->base[0] = w->base[1] = 0u;
  w->t_gathered = ch->t_gathered;
  ch->pid_of[v] = pid;
  dev->sched.wstat[pid] = c;
}

#ifdef COOP_SCHED_HELPERS
/* START's id map: free workers among pids 1 + h, 1 + h + step, ...,
 * COOP_MAP_BATCH of them at a time: their states loaded together, then one
 * ticket add for the free ones among them (ids v, v + 1, ... in pid order),
 * each id below g mapped. With one add per free worker, each after its
 * state's load, a helper made two dependent round trips a worker: at 1087
 * workers (about five a helper) gathered -> started took 14.6 us p50 on an
 * H200 against 12.3 so, and the last start came 3.9 us later
 * (bench/RESULTS.md, "A start's id map in batches"). The ranges the adds
 * hand out partition the ids from the start value up, so each id below g
 * goes to one worker; a helper whose range starts at g or above has
 * nothing left to map, and every other one looks at all its workers, so
 * at least g free workers (the scheduler's precondition) are counted.
 * With `release` (START_RELEASE) each batch's mapped workers are released
 * as soon as they are mapped, after a release fence of their own (their
 * payloads, and what thread 0 released, first), not once the helper's
 * whole share is mapped: the first batches hold the lowest ids (each
 * helper's first add comes before its second), which a task split by
 * group id over fewer rows than workers (the matmul of 264 rows on 1087
 * workers) runs on, and they no longer wait for the helper's four more
 * batches. */
#define COOP_MAP_BATCH 8u
COOP_FN void coop__map_share(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL struct coop_chan *ch,
                             coop_u32 c, coop_u32 g, coop_u32 h, coop_u32 step, coop_u32 release) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 nw = s->nworkers;
  for (coop_u32 base = 1u + h; base <= nw; base += COOP_MAP_BATCH * step) {
    coop_u32 mask = 0u, nfree = 0u; /* bit k: pid base + k * step is free */
    for (coop_u32 k = 0u; k < COOP_MAP_BATCH; k++) {
      coop_u32 pid = base + k * step;
      if (pid <= nw && s->wstat[pid] == COOP_SW_FREE) {
        mask |= 1u << k;
        nfree++;
      }
    }
    if (nfree == 0u) continue;
    coop_u32 v = coop_fadd_rlx(&s->help_ticket, nfree);
    if (v >= g) return;
    coop_u32 took = 0u; /* bit k: pid base + k * step mapped here */
    for (coop_u32 k = 0u; k < COOP_MAP_BATCH && v < g; k++)
      if ((mask >> k) & 1u) {
        coop__assign(dev, ch, c, base + k * step, v++);
        took |= 1u << k;
      }
    if (!release) continue;
    coop_fence_rel();
    for (coop_u32 k = 0u; k < COOP_MAP_BATCH; k++)
      if ((took >> k) & 1u) coop_st_rlx(&dev->w[base + k * step].state, COOP_WS_ASSIGNED);
  }
}

/* REAP, one returned worker of channel c (wstat), after the acquire fence
 * that follows its RETURNED: the counters it shares with other helpers
 * by atomic adds. */
COOP_FN void coop__reap_one(COOP_GLOBAL struct coop_dev *dev, coop_u32 pid, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_worker *w = &dev->w[pid];
  coop_u32 why = w->reason;
  if (why & COOP_WR_KILLED) coop_fadd_rlx(&s->chan_killed_reaped[c], 1u);
  if (why & COOP_WR_LAST) coop_st_rlx(&s->chan_last[c], 1u);
  s->wstat[pid] = COOP_SW_FREE;
  coop_fadd_rlx(&s->nfree, 1u);
  coop_fadd_rlx(&s->reaped, 1u);
  coop_fadd_rlx(&s->chan_workers[c], ~0u); /* minus one */
  coop_st_rlx(&w->state, COOP_WS_IDLE);
}

/* REAP: the returned workers among pids 1 + h, 1 + h + step, ...,
 * COOP_HELP_REAP_BATCH at a time: their states and scheduler entries
 * loaded together, one acquire fence, the reasons of those of the batch's
 * first channel loaded together and that channel's counters added once
 * (the rest, a second channel in one batch, one by one). Worker by worker
 * (two dependent round trips and a fence each, four adds on words every
 * helper adds to), 526 workers that left at one suspension took 6.9-7.3
 * us to reap on an H200 (so: 4.8-6.0), the larger part of a priority
 * task's wait after the last of them left (bench/RESULTS.md, "The reap of
 * a whole kernel"). */
#define COOP_HELP_REAP_BATCH 8u
COOP_FN void coop__reap_share(COOP_GLOBAL struct coop_dev *dev, coop_u32 h, coop_u32 step) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 nw = s->nworkers;
  for (coop_u32 base = 1u + h; base <= nw; base += COOP_HELP_REAP_BATCH * step) {
    coop_u32 ret = 0u; /* bit k: pid base + k * step has RETURNED */
    for (coop_u32 k = 0u; k < COOP_HELP_REAP_BATCH; k++) {
      coop_u32 pid = base + k * step;
      if (pid > nw) break;
      if (coop_ld_rlx(&dev->w[pid].state) == COOP_WS_RETURNED) ret |= 1u << k;
    }
    if (!ret) continue;
    coop_fence_acq(); /* acquires what those workers wrote before RETURNED */
    /* Their channels and reasons together, after the fence: a worker
     * handed over to another task wrote its entry itself ("Handing
     * workers over"). Bit k: of channel c0 (mine) or of another (other);
     * a fork not yet reconciled (no channel) waits. */
    coop_u32 mine = 0u, other = 0u, n0 = 0u, c0 = COOP_MAX_CHANNELS, killed = 0u, last = 0u;
    for (coop_u32 k = 0u; k < COOP_HELP_REAP_BATCH; k++) {
      if (!((ret >> k) & 1u)) continue;
      coop_u32 pid = base + k * step, c = s->wstat[pid], why = dev->w[pid].reason;
      if (c >= COOP_MAX_CHANNELS) continue;
      if (c0 == COOP_MAX_CHANNELS) c0 = c;
      if (c == c0) {
        mine |= 1u << k;
        n0++;
        killed += (why & COOP_WR_KILLED) ? 1u : 0u;
        last |= why & COOP_WR_LAST;
      } else {
        other |= 1u << k;
      }
    }
    if (!(mine | other)) continue;
    for (coop_u32 k = 0u; k < COOP_HELP_REAP_BATCH; k++)
      if ((mine >> k) & 1u) {
        coop_u32 pid = base + k * step;
        s->wstat[pid] = COOP_SW_FREE;
        coop_st_rlx(&dev->w[pid].state, COOP_WS_IDLE);
      }
    /* mine holds the first returned one: n0 >= 1 */
    if (killed) coop_fadd_rlx(&s->chan_killed_reaped[c0], killed);
    if (last) coop_st_rlx(&s->chan_last[c0], 1u);
    coop_fadd_rlx(&s->nfree, n0);
    coop_fadd_rlx(&s->reaped, n0);
    coop_fadd_rlx(&s->chan_workers[c0], 0u - n0);
    for (coop_u32 k = 0u; k < COOP_HELP_REAP_BATCH; k++)
      if ((other >> k) & 1u) coop__reap_one(dev, base + k * step, s->wstat[base + k * step]);
  }
}
#endif

/* Thread 0: wait until every helper has carried out the last order. */
COOP_FN void coop__help_wait(COOP_GLOBAL struct coop_sched *s) {
  if (!s->help_pending) return;
  while (coop_ld_rlx(&s->help_done) != s->nhelpers) {
  }
  coop_fence_acq();
  s->help_pending = 0u;
}

COOP_FN void coop__help_post(COOP_GLOBAL struct coop_sched *s, coop_u32 op, coop_u32 slot,
                             coop_u32 c, coop_u32 n) {
  coop__help_wait(s);
  coop_u32 gen = COOP_HELP_GEN(coop_ld_rlx(&s->help_gen)) + 1u;
  coop_st_rlx(&s->help_done, 0u);
  coop_st_rel(&s->help_gen, COOP_HELP_WORD(gen, op, slot, c, n));
  s->help_pending = 1u;
}

/* Before the scheduler workgroup splits (megakernel.cl): a relaunch after
 * parking finds the previous launch's orders. */
COOP_FN void coop__help_init(COOP_GLOBAL struct coop_sched *s) {
  coop_st_rlx(&s->help_gen, 0u);
  coop_st_rlx(&s->help_done, 0u);
  s->help_pending = 0u;
}

COOP_FN coop_u32 coop__nhelpers(void) {
#ifdef COOP_SCHED_HELPERS
  if (coop_local_size() > COOP_HELP_FIRST) return coop_local_size() - COOP_HELP_FIRST;
#endif
  return 0u;
}

#ifdef COOP_SCHED_HELPERS
/* A helper thread's loop: h is its index among the helpers. */
COOP_FN void coop__sched_helper(COOP_GLOBAL struct coop_mailbox *mb,
                                COOP_GLOBAL struct coop_dev *dev, coop_u32 h) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 seen = 0u;
  for (;;) {
    coop_u32 gen = coop_ld_rlx(&s->help_gen); /* relaxed: see worker.cl */
    if (gen == seen) {
      coop_nap(COOP_HELP_NAP_NS);
      continue;
    }
    seen = gen;
    coop_fence_acq(); /* acquires thread 0's release of help_gen */
    coop_u32 op = COOP_HELP_OP(gen), c = COOP_HELP_CHAN(gen), slot = COOP_HELP_SLOT(gen);
    coop_u32 hn = COOP_HELP_N(gen), n = coop__nhelpers();
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    if (op == COOP_HELP_STAGE) coop__copy_payload(s->t_payload[slot], mb->tasks[slot].args, h, n);
    if (op == COOP_HELP_START || op == COOP_HELP_START_RELEASE)
      coop__map_share(dev, ch, c, hn, h, n, op == COOP_HELP_START_RELEASE);
    if (op == COOP_HELP_REAP) coop__reap_share(dev, h, n);
    if (op == COOP_HELP_RELEASE) {
      coop_fence_rel();
      coop__release_workers(dev, ch, h, hn, n);
    }
    coop_fadd_rel(&s->help_done, 1u);
    if (op == COOP_HELP_EXIT) return;
  }
}
#endif

/* Lock held: reservations the kernel consumed by forking (it takes them
 * from the top of resv[], lowering n_resv) are busy workers now. This must
 * run under the same lock hold as any change the scheduler makes to resv[]:
 * a fork may land between two of the scheduler's passes, and overwriting
 * resv[] above n_resv would lose a running worker (never reaped). Returns
 * n_resv. */
COOP_FN coop_u32 coop__reconcile_locked(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  coop_u32 n = coop_ld_rlx(&ch->n_resv);
  for (coop_u32 i = n; i < s->chan_resv[c]; i++) {
    s->wstat[ch->resv[i]] = c;
    s->chan_workers[c]++;
  }
  s->chan_resv[c] = n;
  return n;
}

/* Give a channel's unused reservations back to the free pool. */
COOP_FN void coop__unreserve(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  if (s->chan_resv[c] == 0u) return;
  coop__lock(&ch->lock);
  coop_u32 n = coop__reconcile_locked(dev, c);
  for (coop_u32 i = 0; i < n; i++) {
    s->wstat[ch->resv[i]] = COOP_SW_FREE;
    s->nfree++;
  }
  coop_st_rlx(&ch->n_resv, 0u);
  coop__unlock(&ch->lock);
  s->chan_resv[c] = 0u;
}

/* Every cooperative channel's unused reservations back to the free pool:
 * before a gather asks for kills (serve_head, idle_workers). */
COOP_FN void coop__unreserve_all(COOP_GLOBAL struct coop_dev *dev) {
  for (coop_u32 c = 0, bits = dev->sched.coopm; bits != 0u; c++, bits >>= 1)
    if (bits & 1u) coop__unreserve(dev, c);
}

/* Step 4. */
COOP_FN void coop__reconcile_forks(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  if (s->chan_resv[c] == 0u || coop_ld_acq(&ch->n_resv) == s->chan_resv[c]) return;
  coop__lock(&ch->lock);
  coop__reconcile_locked(dev, c);
  coop__unlock(&ch->lock);
}

/* The channel's last worker is reaped: the channel is free. Its last
 * workgroup out has already published the task (worker.cl, "Completion"). */
COOP_FN void coop__free_chan(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop__unreserve(dev, c);
  s->busy &= ~(1u << c);
  s->coopm &= ~(1u << c);
  s->susm &= ~(1u << c);
}

/* Step 5 by the helpers: every returned worker, each helper scanning its
 * share of the ids (coop__reap_share); then the channels whose last worker
 * is reaped are freed. */
COOP_FN void coop__reap_helped(COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop__help_post(s, COOP_HELP_REAP, 0u, 0u, 0u);
  coop__help_wait(s);
  for (coop_u32 c = 0, bits = s->busy; bits != 0u; c++, bits >>= 1)
    if ((bits & 1u) && s->chan_last[c]) {
      coop__reconcile_forks(dev, c);
      if (s->chan_workers[c] == 0u) coop__free_chan(dev, c);
    }
}

/* Step 5. */
COOP_FN void coop__reap(COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  /* Nobody returned since the last reap: no scan (one thread
   * loading 264 to 1056 worker states made every pass, and so every
   * gather, tens to hundreds of us long on the H100). The acquire (a
   * relaxed load, then a fence only when the count moved) pairs
   * with each worker's release add, which follows its RETURNED store: a
   * count above `reaped` means those stores are visible to the scan. A
   * forked worker that returned before its fork was reconciled is skipped
   * by this scan (not yet marked busy) and keeps the counts apart, so the
   * next pass scans again. */
  coop_u32 returned = coop_ld_rlx(&dev->returned);
  if (returned == s->reaped) return;
  coop_fence_acq(); /* only now: an acquire load cost every idle pass */
  if (s->nhelpers && returned - s->reaped > COOP_REAP_BATCH) {
    coop__reap_helped(dev);
    return;
  }
  /* Batches of COOP_REAP_BATCH: their states loaded together (in flight at
   * once; few, to keep registers and so occupancy), one acquire fence per
   * batch that has a RETURNED one, then each returned worker's results
   * loaded together. Loaded one after the other
   * (a fence per worker, which also emptied the cache the next loads
   * needed), 527 workers took 1.25 ms to reap on the H100. */
  /* The scan stops once it has reaped all that had returned: a task of
   * one workgroup is reaped in one batch, not a walk over every worker
   * (which held the next task's intake ~100 us on the H100). But the first
   * few of many to return (a kill of hundreds, a wide task's end) may have
   * high ids: after COOP_REAP_ALONE_MAX batches the helpers take the rest
   * of the scan. Walking alone to the top of 1087 workers, a batch a round
   * trip, held a gather 430-640 us, one to four frames of ninety beside
   * bfs on an H200 (bench/RESULTS.md, "The reap handed to the helpers"). */
  coop_u32 batches = 0u;
  for (coop_u32 base = 1u; base <= s->nworkers && s->reaped != returned; base += COOP_REAP_BATCH) {
    if (s->nhelpers && ++batches > COOP_REAP_ALONE_MAX) {
      coop__reap_helped(dev);
      return;
    }
    coop_u32 ret = 0u; /* bit k: worker base + k has RETURNED */
    for (coop_u32 k = 0u; k < COOP_REAP_BATCH; k++)
      if (base + k <= s->nworkers && coop_ld_rlx(&dev->w[base + k].state) == COOP_WS_RETURNED)
        ret |= 1u << k;
    if (!ret) continue;
    coop_fence_acq(); /* acquires what those workers wrote before RETURNED */
    for (coop_u32 k = 0u; k < COOP_REAP_BATCH; k++) {
      coop_u32 pid = base + k, c = (ret >> k) & 1u ? s->wstat[pid] : COOP_SW_FREE;
      if (c >= COOP_MAX_CHANNELS) continue; /* not returned, free or reserved */
      COOP_GLOBAL struct coop_worker *w = &dev->w[pid];
      coop_u32 why = w->reason;
      if (why & COOP_WR_KILLED) s->chan_killed_reaped[c]++;
      s->wstat[pid] = COOP_SW_FREE;
      s->nfree++;
      s->reaped++;
      /* mark reaped: the worker spins for ASSIGNED, so IDLE is invisible to it */
      coop_st_rlx(&w->state, COOP_WS_IDLE);
      s->chan_workers[c]--;
      if (why & COOP_WR_LAST) s->chan_last[c] = 1u;
      /* Complete only once every worker of the kernel is reaped: one that
       * left before the last may not have stored RETURNED yet, and must not
       * be counted for the next task on this channel. Forks not yet
       * reconciled are counted first (they were alive, so they have left
       * too). */
      if (s->chan_last[c]) {
        coop__reconcile_forks(dev, c);
        if (s->chan_workers[c] == 0u) coop__free_chan(dev, c);
      }
    }
  }
}

/* The id map by thread 0 alone: ids v.. to the free workers among pids
 * 1..scan, until id g - 1 is mapped. Returns the next id not mapped. */
COOP_FN coop_u32 coop__map_ids(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL struct coop_chan *ch,
                               coop_u32 c, coop_u32 v, coop_u32 g, coop_u32 scan) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  for (coop_u32 pid = 1u; pid <= s->nworkers && pid <= scan && v < g; pid++) {
    if (s->wstat[pid] != COOP_SW_FREE) continue;
    coop__assign(dev, ch, c, pid, v++);
  }
  return v;
}

/* A start's fields of the task record (host memory). After the workers'
 * release, since they need none of them (before it, the H100 showed no
 * difference: gathered -> started 6.1-6.2 us against 6.0-6.2); before
 * RUNNING, which publishes them. No workgroup writes the record before it
 * is OPEN, after RUNNING (worker.cl, "Completion"). */
COOP_FN void coop__start_rec(COOP_GLOBAL struct coop_task_rec *t, COOP_GLOBAL struct coop_chan *ch,
                             coop_u32 g) {
  t->fault = 0u;
  t->m_initial = g;
  t->t_gathered = ch->t_gathered;
  t->status = COOP_TR_OK;
}

/* A resumed task's g workgroups (mapped: g = 1, or more where its state
 * says COOP_RS_WIDE): each starts from the record's state as a forked
 * workgroup from its forker's ("Suspension"). Four words at a time are
 * read from the record into registers and stored to every payload: a load
 * per word per worker, each from L2 behind the store before it, made a
 * wide resume of 526 workers take 430 us to full width on an H200 (and
 * the whole state in registers would weigh on the megakernel's count).
 * Before the workers' release, which publishes it. */
typedef char coop__state_in_fours[(COOP_TRANSMIT_BYTES / 8) % 4 == 0 ? 1 : -1];
COOP_FN void coop__resume_state(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL struct coop_chan *ch,
                                COOP_GLOBAL struct coop_task_rec *t, coop_u32 g) {
  for (coop_u32 k = 0u; k < COOP_TRANSMIT_BYTES / 8u; k += 4u) {
    coop_u64 a = t->resume_state[k], b = t->resume_state[k + 1u];
    coop_u64 d = t->resume_state[k + 2u], e = t->resume_state[k + 3u];
    for (coop_u32 v = 0u; v < g; v++) {
      COOP_GLOBAL coop_u64 *x = dev->w[ch->pid_of[v]].transmit + k;
      x[0] = a;
      x[1] = b;
      x[2] = d;
      x[3] = e;
    }
  }
  for (coop_u32 v = 0u; v < g; v++) dev->w[ch->pid_of[v]].forked = 1u;
  coop_st_rlx(&ch->start_min,
              0u); /* a forked start is not counted (worker.cl): started = gathered */
}

/* Start task slot on channel c with g workgroups, ids 0..g-1, capped at
 * cap workgroups ("Caps"; N when uncapped), on n <= g free workers now,
 * ids 0..n-1: the rest join as workers are handed over or freed
 * ("Handing workers over"; n < g only for a task that is not
 * cooperative). */
COOP_FN void coop__start(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_dev *dev,
                         coop_u32 slot, coop_u32 c, coop_u32 g, coop_u32 n, coop_u32 cap) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, slot);
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  /* The arguments cross the bus once, into t_payload[slot], where the
   * kernel reads them: with helpers, at intake (STAGE), each word read by
   * its own helper thread while thread 0 queues the task; without, field by field here (loading all
   * into registers first took 32 more registers, which halved the megakernel's occupancy at 256
   * threads: 527 to 263 workers on the H100). */
  if (!s->nhelpers) coop__copy_payload(s->t_payload[slot], t->args, 0u, 1u);
  ch->kid = s->t_kid[slot];
  ch->flags = s->t_flags[slot];
  ch->n_max = s->t_groups[slot];
  ch->task = slot;
  ch->m0 = g;
  coop_st_rlx(&ch->fault, 0u);
  coop_st_rlx(&ch->lock, 0u);
  coop_st_rlx(&ch->m, g);
  coop_st_rlx(&ch->want_kill, 0u);
  coop_st_rlx(&ch->n_resv, 0u);
  coop_st_rlx(&ch->alive, g);
  coop_st_rlx(&ch->killed, 0u);
  coop_st_rlx(&ch->forked, 0u);
  coop_st_rlx(&ch->resizes, 0u);
  coop_st_rlx(&ch->ep_killed, 0u);
  coop_st_rlx(&ch->ep_hold, 0u);
  coop_st_rlx(&ch->bar_delta[0], 0u);
  coop_st_rlx(&ch->bar_delta[1], 0u);
  coop_st_rlx(&ch->bar_delta[2], 0u);
  coop_st_rlx(&ch->bar_delta[3], 0u);
  coop_st_rlx(&ch->cancel, 0u);
  coop_st_rlx(&ch->suspend, 0u);
  coop_st_rlx(&ch->suspended, 0u);
  coop_st_rlx(&ch->gate, COOP_GATE_SHUT);
  coop_st_rlx(&ch->m_min, g);
  coop_st_rlx(&ch->m_max, g);
  coop_st_rlx(&ch->handoff, 0u);
  coop_st_rlx(&ch->handed, 0u);
  coop_st_rlx(&ch->handed_kills, 0u);
  coop_st_rlx(&ch->joined, 0u);
  coop_st_rlx(&ch->taken, 0u);
  coop_st_rlx(&ch->waits, 0u);
  ch->t_full = 0u;
  s->chan_handed[c] = s->chan_handed_kills[c] = 0u;
  s->susm &= ~(1u << c);
  /* episodes 0 and 1 have base 0; the master's first add of episode 0 is
   * made here, of episode 1 at the master's first arrival (barrier.cl) */
  coop_st_rlx(&ch->bar_arrive, COOP__BAR_EP - ch->n_max);
  coop_st_rlx(&ch->bar_arrive_odd, 0u);
  coop_st_rlx(&ch->bar_rel, 0u);
  s->busy |= 1u << c;
  if (ch->flags & COOP_TF_COOPERATIVE) s->coopm |= 1u << c;
  s->chan_resv[c] = 0u;
  s->chan_killed_reaped[c] = 0u;
  s->chan_workers[c] = g;
  s->chan_last[c] = 0u;
  s->chan_cap[c] = cap;
  s->chan_pub[c][0] = COOP_SW_FREE; /* the live counters go at the next refresh */
  coop_st_rlx(&ch->rec, COOP_REC_STARTING);
  coop_st_rlx(&ch->start_min, 0xffffffffu);
  ch->t_gathered = coop_clock();
  coop_u32 resume = (ch->flags & COOP_TF_RESUME) != 0u;
  COOP_TRACE(7);
  /* The whole id map before any release: a resize reads it. */
  if (s->nhelpers) {
    /* A few workers: this thread maps them, looking at most at
     * COOP_T0_SCAN workers, without an order to the helpers and back (that
     * round took 3.2 of the 6 us from gathered to started at K = 1 on the
     * H100). The helpers map what it did not find. */
    coop_u32 v = n <= COOP_HELP_MIN_RELEASE ? coop__map_ids(dev, ch, c, 0u, n, COOP_T0_SCAN) : 0u;
    /* More: each helper releases the workers it maps at once, in the same
     * order (START_RELEASE), rather than all of them after the whole map
     * (START, then RELEASE): one round of orders fewer, and the first
     * workers start while the others are mapped. Nothing a started
     * workgroup does reads the map: kills take no pid, forks write ids
     * from g up, and the scheduler's own reads wait for the order. */
    coop_u32 direct = n > COOP_HELP_MIN_RELEASE && !resume;
    if (v < n) {
      coop_st_rlx(&s->help_ticket, v); /* map_share skips the workers mapped */
      coop__help_post(s, direct ? COOP_HELP_START_RELEASE : COOP_HELP_START, slot, c, n);
    }
    /* the id map, and the last order before it (this task's STAGE, maybe):
     * the helpers' writes acquired here, passed on by a release fence */
    coop__help_wait(s);
    if (resume) coop__resume_state(dev, ch, t, g);
    COOP_TRACE(8);
    s->nfree -= n;
    if (direct) {
      /* released by the helpers */
    } else if (n > COOP_HELP_MIN_RELEASE) {
      coop__help_post(s, COOP_HELP_RELEASE, slot, c, n);
    } else {
      coop_fence_rel();
      coop__release_workers(dev, ch, 0u, n, 1u);
    }
  } else {
    coop__map_ids(dev, ch, c, 0u, n, s->nworkers);
    if (resume) coop__resume_state(dev, ch, t, g);
    COOP_TRACE(8);
    s->nfree -= n;
    /* channel, payload and id map before: one release fence for all n */
    coop_fence_rel();
    coop__release_workers(dev, ch, 0u, n, 1u);
  }
  /* A task still short of workers is QUEUED to the host until its last id
   * is given (coop__start_late stores RUNNING), and before any id can be
   * taken, so that RUNNING comes after it */
  if (n < g && !s->t_queued[slot]) {
    s->t_queued[slot] = 1u;
    coop_sys_st_rel(&t->state, COOP_TS_QUEUED);
  }
  /* The ids still to give, after the channel's set-up (release: whoever
   * takes one acquires it); 0 (none) for a task that has all its
   * workers. The word a task before it left is spent (its next id at or
   * past its size), so a late add to it gives no id. */
  coop_st_rel(&ch->ticket, n < g ? (g << 16) | n : 0u);
  COOP_TRACE(9);
  /* A task still short of workers is RUNNING once its last id is given
   * (coop__start_late): until then the host sees it wait, as it does. */
  if (n < g) return;
  coop__start_rec(t, ch, g);
  /* RUNNING (with t_gathered, t_released and status) only after the
   * release: the host only reads it, and a system-scope release waits for
   * every earlier store to host memory, which the workers need not wait
   * for. */
  coop_sys_st_rel(&t->state, COOP_TS_RUNNING);
  COOP_TRACE(10);
  /* only now may the last workgroup out write the final state (worker.cl) */
  coop_st_rel(&ch->rec, COOP_REC_OPEN);
}

/* ----------------------------------------------------------------- Caps
 * The host may cap a cooperative task's workgroups below its N: the
 * record's cap (0 = none). coopd does so to share the device's width
 * between users (docs/daemon.md, "Cooperative slots"). The host writes
 * the cap with the task, or while it runs followed by a move of
 * cancel_seq (release), as for a cancel; so the scheduler reads a cap
 * where it reads cancel flags: at a start (serve_head, after the pass's
 * acquire fence) and in step 2 when cancel_seq moved. sched.chan_cap[c]
 * holds it (N when uncapped). A capped channel is offered no reservation
 * past its cap (offer_forks), keeps a standing request for M - cap kills
 * (want_kill: offer_kill and the resizing barrier act on it as for a
 * gather) and never goes below one workgroup. Thread 0 only; want_kill
 * under the channel lock, as everywhere. */

/* A record's cap against the task's N. */
COOP_FN coop_u32 coop__cap_of(coop_u32 cap, coop_u32 n) { return cap != 0u && cap < n ? cap : n; }

/* Lock held: the kills a cap asks for (M - cap; M >= 1 stays). */
COOP_FN coop_u32 coop__cap_excess_locked(COOP_GLOBAL struct coop_chan *ch, coop_u32 cap) {
  coop_u32 m = coop_ld_rlx(&ch->m);
  return m > cap ? m - cap : 0u;
}

/* Channel c's cap lowered to k (sched.chan_cap[c] already k): its
 * reservations back, and the kills down to k asked, under the lock. */
COOP_FN void coop__cap_kills(COOP_GLOBAL struct coop_dev *dev, coop_u32 c, coop_u32 k) {
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  coop__unreserve(dev, c);
  coop__lock(&ch->lock);
  coop_u32 excess = coop__cap_excess_locked(ch, k);
  if (excess > coop_ld_rlx(&ch->want_kill)) coop_st_rel(&ch->want_kill, excess);
  coop__unlock(&ch->lock);
}

/* Step 2: channel c's task has the record's cap `cap` now. A lower cap
 * takes back the reservations (offer_forks offers again up to the cap)
 * and asks for the kills down to it; a higher one is met by the next
 * offer of free workers. */
COOP_FN void coop__set_cap(COOP_GLOBAL struct coop_dev *dev, coop_u32 c, coop_u32 cap) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  coop_u32 k = coop__cap_of(cap, ch->n_max);
  if (k == s->chan_cap[c]) return;
  coop_u32 lower = k < s->chan_cap[c];
  s->chan_cap[c] = k;
  if (lower) coop__cap_kills(dev, c, k);
}

/* ----------------------------------------------------------- Suspension
 * A host may suspend a running cooperative task (the record's suspend, 1;
 * written like cancel, and read where cancel flags and caps are read). The
 * scheduler stores ch.suspend and caps the channel at one workgroup
 * (above: every other one leaves at its next offer_kill or resizing
 * barrier, and none is forked).
 * Workgroup 0, at its first primitive after a step once it is alone
 * (M = 1), stores its thread 0's state in
 * ch.saved, then suspended, and leaves (barrier.cl, coop__after_step); the
 * last workgroup out copies ch.saved into the record's resume_state and
 * publishes SUSPENDED instead of DONE (worker.cl). A task submitted with
 * COOP_TF_RESUME starts on one workgroup, workgroup 0, which starts from
 * the record's resume_state exactly as a forked workgroup starts from its
 * forker's (coop__start copies it into the worker's transmit[]), and
 * grows by forks as any cooperative task. Where workgroup 0 saved its
 * state right after a resizing barrier or a fork (ch.saved_how, the
 * record's last resume_state word, COOP_RS_WIDE, which the host keeps
 * with the state), that barrier could have forked from the same state:
 * the task then starts on every worker it is given, each from that state
 * as if forked there, so that its next step runs at full width (the
 * resumed step on one workgroup was a whole round of a sweep). Workgroup
 * 0 is never killed, so it is the one that carries the state. So a
 * resumed workgroup 0's threads all start from thread 0's state, as forked
 * ones do, and scratch memory is not saved (docs/kernels.md,
 * "Suspension"). Called for a channel not suspending yet (its caller
 * knows: coop__pass_cap read the flag, coop__start has just cleared it). */
COOP_FN void coop__suspend(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  /* The flag first, relaxed, before the cap's reservations and lock hold
   * (about 1.2 us on the H200): the barrier's holds read it as a hint (the
   * master beside its arrival and in its spin; every workgroup of a query
   * kernel before its step's workgroup barrier, with want_kill), and a
   * held release that reads it takes every workgroup but 0 whatever
   * want_kill asks yet (barrier.cl, coop__release_held). Stored in the
   * lock hold, after want_kill, it was the last word a hold waited for. */
  coop_st_rlx(&dev->chan[c].suspend, 1u);
  s->susm |= 1u << c; /* its workgroup 0 leaves too: coop__gatherable */
  /* a test: the cap's request this many ticks after the flag (no clock, no
   * gap: the loop would never end) */
#if defined(COOP_TEST_SUSPEND_GAP) && COOP_HAVE_CLOCK
  for (coop_u64 t0_ = coop_clock(); coop_clock() - t0_ < COOP_TEST_SUSPEND_GAP;) {
  }
#endif
  if (s->chan_cap[c] > 1u) {
    s->chan_cap[c] = 1u;
    coop__cap_kills(dev, c, 1u);
  }
}

/* Ask cooperative kernels for `need` more workgroups than are already on
 * their way (requested, or killed but not yet reaped). */
COOP_FN void coop__request_kills(COOP_GLOBAL struct coop_dev *dev, coop_u32 need) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 coming = 0u;
  for (coop_u32 c = 0, bits = s->coopm; bits != 0u; c++, bits >>= 1) {
    if (!(bits & 1u)) continue;
    coming += coop_ld_acq(&dev->chan[c].want_kill);
    coming += coop_ld_acq(&dev->chan[c].killed) - s->chan_killed_reaped[c];
  }
  if (coming >= need) return;
  need -= coming;
  for (coop_u32 c = 0, bits = s->coopm; bits != 0u && need != 0u; c++, bits >>= 1) {
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    if (!(bits & 1u)) continue;
    coop__lock(&ch->lock);
    coop_u32 m = coop_ld_rlx(&ch->m), want = coop_ld_rlx(&ch->want_kill);
    coop_u32 can = m - 1u > want ? m - 1u - want : 0u;
    if (can > need) can = need;
#ifdef COOP_PROF_KILLS /* the cascade's clock (primitives.cl, coop__prof_top) */
    if (want == 0u && can != 0u) ch->t_kill_arrive = coop_clock();
#endif
    coop_st_rel(&ch->want_kill, want + can);
    coop__unlock(&ch->lock);
    need -= can;
  }
}

/* Nothing waits: withdraw kill requests, offer up to `spare` free workers
 * for forks (the rest are held for a task due soon: "Gathering ahead"). */
COOP_FN void coop__offer_forks(COOP_GLOBAL struct coop_dev *dev, coop_u32 spare) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  for (coop_u32 c = 0, bits = s->coopm; bits != 0u; c++, bits >>= 1) {
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    if (!(bits & 1u)) continue;
    coop_u32 cap = s->chan_cap[c];
    /* What a cap still asks for stays asked ("Caps"); the rest is
     * withdrawn, under the lock, unless the request is that excess
     * already. A kill takes one from want_kill and M together, and no fork
     * can come while more than the excess is asked (the reservations went
     * back first: serve_head, idle_workers), so want_kill read before M
     * shows the excess only if it is (docs/scheduler.md, "Caps"). Taken
     * in every pass of a suspension, the lock was half of the idle step's
     * 1.8 us on an H200, and held the barrier's own resize off it. */
    coop_u32 want = coop_ld_acq(&ch->want_kill), m = coop_ld_acq(&ch->m);
    if (want != (m > cap ? m - cap : 0u)) {
      coop__lock(&ch->lock);
      coop_st_rel(&ch->want_kill, coop__cap_excess_locked(ch, cap));
      coop__unlock(&ch->lock);
    }
    /* lock-free hint first (the M read above); M + n_resv is unchanged by
     * a fork */
    if (spare == 0u || m + s->chan_resv[c] >= cap) continue;
    coop__lock(&ch->lock);
    coop_u32 n = coop__reconcile_locked(dev, c);
    coop_u32 have = coop_ld_rlx(&ch->m) + n;
    coop_u32 deficit = have < cap ? cap - have : 0u;
    if (deficit > spare) deficit = spare;
    for (coop_u32 pid = 1u; pid <= s->nworkers && deficit != 0u; pid++) {
      if (s->wstat[pid] != COOP_SW_FREE) continue;
      s->wstat[pid] = COOP_RESV_BIT | c;
      ch->resv[n++] = pid;
      s->nfree--;
      spare--;
      deficit--;
    }
    s->chan_resv[c] = n;
    coop_st_rel(&ch->n_resv, n);
    coop__unlock(&ch->lock);
  }
}

/* ------------------------------------------------------ Gathering ahead
 * A periodic task's instances come every period, and each needs its K
 * workgroups at once. Beside a cooperative kernel that holds the rest of
 * the device, every gather waited for that kernel's next resizing barrier:
 * one step of it (bfs on a road graph, H100: 72 us p50). The
 * host knows when the next instance comes, and gives each instance a
 * window round that time (record: hold_from, hold_to, device ticks). When
 * the instance starts, its window is armed as a hold. From hold_from the
 * scheduler keeps K workers free: it offers cooperative kernels only the
 * rest, takes back their reservations, and asks them to surrender what is
 * still missing, as a gather would, but before the instance is due. The
 * next task of the same kernel and size to start takes the hold (and its
 * free workers); at hold_to an untaken hold lapses. So cooperative kernels
 * lose at most K workgroups for at most the window, once per period. A
 * hold binds only cooperative kernels' forks: queued tasks are served as
 * before. Thread 0 only, scheduler-private memory. */

/* After a start of task slot (g workgroups) at time now: take the hold
 * this task was due under, then arm its own. */
COOP_FN void coop__hold_started(COOP_GLOBAL struct coop_sched *s, coop_u32 slot, coop_u32 g,
                                coop_u64 now) {
  coop_u32 kid = s->t_kid[slot], take = COOP_HOLDS, arm = COOP_HOLDS;
  for (coop_u32 h = 0u; h < COOP_HOLDS; h++) {
    if (!((s->holds >> h) & 1u) || s->hold_to[h] <= now) {
      s->holds &= ~(1u << h); /* free, or lapsed */
      if (arm == COOP_HOLDS) arm = h;
      continue;
    }
    if (s->hold_kid[h] == kid && s->hold_n[h] == g &&
        (take == COOP_HOLDS || s->hold_from[h] < s->hold_from[take]))
      take = h;
  }
  if (take != COOP_HOLDS) {
    s->holds &= ~(1u << take);
    arm = take;
  }
  if (s->t_hold_to[slot] <= now || (s->t_flags[slot] & COOP_TF_COOPERATIVE)) return;
  if (arm == COOP_HOLDS) return; /* every entry armed: this instance gathers as before */
  s->hold_from[arm] = s->t_hold_from[slot];
  s->hold_to[arm] = s->t_hold_to[slot];
  s->hold_n[arm] = g;
  s->hold_kid[arm] = kid;
  s->holds |= 1u << arm;
}

/* Workers the holds keep free now; lapsed holds are dropped. */
COOP_FN coop_u32 coop__hold_need(COOP_GLOBAL struct coop_sched *s) {
  coop_u64 now = coop_clock();
  coop_u32 need = 0u;
  for (coop_u32 h = 0u, bits = s->holds; bits != 0u; h++, bits >>= 1) {
    if (!(bits & 1u)) continue;
    if (s->hold_to[h] <= now)
      s->holds &= ~(1u << h);
    else if (s->hold_from[h] <= now)
      need += s->hold_n[h];
  }
  return need;
}

/* The most workers a gather can have while the cooperative kernels now
 * running run on: all but one of each, whose workgroup 0 is never killed
 * (docs/scheduler.md Sec. 5), but of a suspending one, whose workgroup 0
 * leaves too ("Handing workers over"). A task that needs more waits for a kernel's
 * end whatever is asked; kills asked for it meanwhile shrank the kernels
 * to one workgroup each, which then ran the rest of their jobs so (bfs
 * 4.3x slower beside a task of every worker on an H200, the task waiting
 * for it all the same). */
COOP_FN coop_u32 coop__gatherable(COOP_GLOBAL const struct coop_sched *s) {
  coop_u32 n = 0u;
  for (coop_u32 bits = s->coopm & ~s->susm; bits != 0u; bits &= bits - 1u) n++;
  return s->nworkers > n ? s->nworkers - n : 0u;
}

/* Workers the holds keep free now, once `starting` more cooperative
 * kernels run beside those running (each keeps its workgroup 0:
 * coop__gatherable); 0 for a hold no gather could meet then. */
COOP_FN coop_u32 coop__hold_kept(COOP_GLOBAL struct coop_sched *s, coop_u32 starting) {
  if (!s->holds) return 0u;
  coop_u32 hold = coop__hold_need(s);
  return hold + starting <= coop__gatherable(s) ? hold : 0u;
}

/* Step 7 with nothing waiting: free workers beyond the holds are offered
 * for forks; short of the holds, reservations come back and kills are
 * asked for (never more than leaves each kernel one workgroup). A hold no
 * gather could meet while the kernels run holds nothing. */
COOP_FN void coop__idle_workers(COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 hold = coop__hold_kept(s, 0u);
  if (hold > s->nfree) coop__unreserve_all(dev);
  if (hold > s->nfree) /* again: the reservations came back */
    coop__request_kills(dev, hold - s->nfree);
  else
    coop__offer_forks(dev, s->nfree - hold);
}

/* The live view for monitoring (shared.h: wg_view, live_*). Relaxed
 * system-scope stores: the host only displays these, so no ordering is
 * needed, and a view torn across workers is acceptable. Only changed
 * entries are written, because each store to host memory crosses the bus
 * on a GPU. The map is refreshed COOP_VIEW_SLICE workers per pass, round
 * robin (view_pass is the cursor): the whole map at once cost one thread
 * two loads per worker, 527 workers on an H100, every 64 passes, which
 * made the idle scheduler spend most of its time here and notice a new
 * task 140 us late. The channels' counters (at most COOP_MAX_CHANNELS,
 * four loads each) go at every refresh, written only when they changed:
 * they went once the cursor wrapped, every 8 x 66 passes at 527 workers,
 * about a millisecond on an H200, so a kernel's M was seen that late
 * (a resumed kernel's regrowth read 1.2 ms by it). */
#define COOP_VIEW_SLICE 8u
COOP_FN void coop__publish_counters(COOP_GLOBAL struct coop_mailbox *mb,
                                    COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  for (coop_u32 c = 0, bits = s->busy; bits != 0u; c++, bits >>= 1) {
    if (!(bits & 1u)) continue;
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    coop_u32 m = coop_ld_rlx(&ch->m), wk = s->chan_workers[c];
    coop_u32 kills = coop_ld_rlx(&ch->killed), forks = coop_ld_rlx(&ch->forked);
    COOP_GLOBAL coop_u32 *pub = s->chan_pub[c];
    if (m == pub[0] && wk == pub[1] && kills == pub[2] && forks == pub[3]) continue;
    /* Only while it holds the record: once the last workgroup out has
     * closed it, the host may see the task final and reuse its slot. */
    coop_u32 open = COOP_REC_OPEN;
    if (!coop_cas(&ch->rec, &open, COOP_REC_VIEWING)) continue;
    COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, ch->task);
    coop_sys_st_rlx(&t->live_m, m);
    coop_sys_st_rlx(&t->live_workers, wk);
    coop_sys_st_rlx(&t->live_kills, kills);
    coop_sys_st_rlx(&t->live_forks, forks);
    coop_st_rel(&ch->rec, COOP_REC_OPEN);
    pub[0] = m, pub[1] = wk, pub[2] = kills, pub[3] = forks;
  }
}

COOP_FN void coop__publish_view(COOP_GLOBAL struct coop_mailbox *mb,
                                COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 pid = s->view_pass + 1u;
  for (coop_u32 k = 0u; k < COOP_VIEW_SLICE && pid <= s->nworkers; k++, pid++) {
    coop_u32 w = s->wstat[pid], v = 0u;
    if (w != COOP_SW_FREE) {
      coop_u32 c = w & ~COOP_RESV_BIT;
      v = (dev->chan[c].task + 1u) | ((w & COOP_RESV_BIT) ? COOP_VIEW_RESERVED : 0u);
    }
    if (v != s->wpub[pid]) {
      s->wpub[pid] = v;
      coop_sys_st_rlx(&mb->wg_view[pid], v);
    }
  }
  s->view_pass = pid > s->nworkers ? 0u : pid - 1u; /* from the top once the map is done */
  coop__publish_counters(mb, dev);
}

/* Deadline-aware dispatch: the queued task with the earliest
 * deadline moves to the head, so a render that is due is gathered before
 * a cooperative kernel or a large task that queued earlier (which would
 * otherwise hold the head while kills are requested for it). Tasks
 * without a deadline count as the latest; equal deadlines keep their
 * order, because the tasks passed over each move back one place (a stable
 * move). A task without a deadline waits while tasks with one keep
 * coming: coopd gives every task that is not cooperative a deadline
 * ([jobs] undated_due_ms after its submit where it asked for none), so
 * that wait ends. Scheduler-private memory only: the
 * deadlines were copied from the task records at intake. */
COOP_FN void coop__edf_head(COOP_GLOBAL struct coop_sched *s) {
  coop_u32 best = s->q_head;
  coop_u64 bd = s->q_deadline[best % COOP_RING];
  for (coop_u32 i = s->q_head + 1u; i != s->q_tail; i++) {
    coop_u64 d = s->q_deadline[i % COOP_RING];
    if (d != 0u && (bd == 0u || d < bd)) {
      bd = d;
      best = i;
    }
  }
  if (best == s->q_head) return;
  coop_u32 slot = s->queue[best % COOP_RING];
  for (coop_u32 i = best; i != s->q_head; i--) {
    s->queue[i % COOP_RING] = s->queue[(i - 1u) % COOP_RING];
    s->q_deadline[i % COOP_RING] = s->q_deadline[(i - 1u) % COOP_RING];
  }
  s->queue[s->q_head % COOP_RING] = slot;
  s->q_deadline[s->q_head % COOP_RING] = bd;
}

/* ------------------------------------------------ Handing workers over
 * A task that is not cooperative and needs more workers than are free
 * beside cooperative kernels used to wait at the head of the queue while
 * the kernels' killed (or suspended) workgroups left, stored RETURNED,
 * and were reaped, and only then started on all of them: the scheduler's
 * next pass to see them, a reap of hundreds of workers (4.6-4.8 us with
 * the helpers on an H200) and the start's map and release, between the
 * last workgroup out and the task's start. Now it starts at once on the
 * free workers (ids 0..n-1; possibly none), its channel's ticket word
 * holds its size and the next id, and every cooperative channel's
 * handoff names it: a workgroup that leaves such a channel takes the next
 * id itself (worker.cl, coop__hand_over) and runs the task's workgroup of
 * that id on the spot, and workers freed otherwise (a workgroup that
 * left before the handoff, a kernel that ended) are given the rest by
 * this thread, pass by pass (coop__pending). Until the task has every id,
 * nothing else is served and no worker is offered for forks (it is the
 * head still, in all but name), and kills are asked for the ids missing.
 * A worker that left this way never returns to its old channel: it
 * counts itself in that channel's handed (and handed_kills), which this
 * thread reads in every pass until every handed-over worker is counted
 * (coop__count_handed), taking it off the channel's workers and counting
 * its kill as reaped; the kernel's last workgroup may be among them
 * (COOP_HANDED_LAST). Its wstat entry it writes itself, before the
 * RETURNED that ends the task it joined, which the reap acquires before
 * it reads the entry. Ids are taken by adds to the ticket word (acq_rel),
 * whoever takes them, so each id below the size goes to one worker; the
 * word keeps its size, so a late add (a handoff read just before it was
 * withdrawn, or the word of a task since ended) takes no id. */

/* Channel ch's task, started before it had all its workers, has every
 * id given now (by whoever gave the last: a leaving worker in
 * coop__hand_over, or thread 0): the record gets what coop__start gives a
 * task that has them all, t_gathered the time now, then RUNNING, and is
 * open to its last workgroup out, which waits for that (worker.cl,
 * "Completion"). t_full is for that workgroup: the record's start is no
 * earlier. */
COOP_FN void coop__start_late(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_chan *ch,
                              coop_u64 now) {
  COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, ch->task);
  ch->t_full = now > ch->t_gathered ? now : ch->t_gathered;
  coop__start_rec(t, ch, ch->n_max);
  t->t_gathered = ch->t_full;
  coop_sys_st_rel(&t->state, COOP_TS_RUNNING);
  coop_st_rel(&ch->rec, COOP_REC_OPEN);
}

COOP_FN void coop__publish(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_chan *ch,
                           coop_u64 finished); /* worker.cl */

/* The task waiting on channel c was cancelled (ch.cancel): no id is given
 * any more. The ticket word is closed at the next id (a compare-and-swap
 * against leaving workers' adds), the ids never given come off alive and
 * off the channel's workers, and if no workgroup of it is left running,
 * this thread publishes it (CANCELLED), as its last workgroup out would
 * have. Returns the ids it had been given. */
COOP_FN coop_u32 coop__close_ids(COOP_GLOBAL struct coop_mailbox *mb,
                                 COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
  coop_u32 cur = coop_ld_rlx(&ch->ticket);
  while ((cur & 0xffffu) < (cur >> 16) &&
         !coop_cas(&ch->ticket, &cur, ((cur & 0xffffu) << 16) | (cur & 0xffffu))) {
  }
  coop_u32 v = cur & 0xffffu, size = cur >> 16;
  if (v >= size) return size; /* every id was given before the close: nothing to undo */
  coop_u32 gone = size - v;
  s->chan_workers[c] -= gone;
  coop__start_late(mb, ch, coop_clock());
  if (coop_fsub(&ch->alive, gone) == gone) {
    coop__publish(mb, ch, coop_clock());
    s->chan_last[c] = 1u;
    if (s->chan_workers[c] == 0u) coop__free_chan(dev, c);
  }
  return v;
}

/* A benchmark's knob (COOP_DEVICE_DEFINES=COOP_GATHER_WHOLE): every task
 * waits at the head for all its workers, as before this section. */
#ifdef COOP_GATHER_WHOLE
#define COOP__GATHER_WHOLE 1
#else
#define COOP__GATHER_WHOLE 0
#endif

/* Channel c's task starts on n free workers (ids 0..n-1, by coop__start)
 * and waits for the rest: thread 0's account of it. */
COOP_FN void coop__hand_to(COOP_GLOBAL struct coop_dev *dev, coop_u32 c, coop_u32 n) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  s->pend = c + 1u;
  s->pend_own = n;
}

/* After coop__start published channel c's ticket (release): every
 * cooperative channel's leaving workgroups may join its task. */
COOP_FN void coop__post_handoff(COOP_GLOBAL struct coop_dev *dev, coop_u32 c) {
  for (coop_u32 k = 0, bits = dev->sched.coopm; bits != 0u; k++, bits >>= 1)
    if (bits & 1u) coop_st_rel(&dev->chan[k].handoff, c + 1u);
}

/* The workers handed over from cooperative channels since the last look:
 * off their old channels' counts (chan_workers, and their kills as
 * reaped); a channel whose last workgroup has left and whose every worker
 * is counted is free. An acquire fence after loads that moved: the
 * channel's next start rewrites the words those workers wrote. */
COOP_FN void coop__count_handed(COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  for (coop_u32 c = 0, bits = s->coopm; bits != 0u; c++, bits >>= 1) {
    if (!(bits & 1u)) continue;
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    coop_u32 h = coop_ld_rlx(&ch->handed), hk = coop_ld_rlx(&ch->handed_kills);
    if (h == s->chan_handed[c]) continue;
    coop_fence_acq();
    coop_u32 d = (h & ~COOP_HANDED_LAST) - (s->chan_handed[c] & ~COOP_HANDED_LAST);
    s->chan_handed[c] = h;
    s->chan_workers[c] -= d;
    s->handed_seen += d;
    s->chan_killed_reaped[c] += hk - s->chan_handed_kills[c];
    s->chan_handed_kills[c] = hk;
    if (h & COOP_HANDED_LAST) s->chan_last[c] = 1u;
    if (s->chan_last[c]) {
      coop__reconcile_forks(dev, c);
      if (s->chan_workers[c] == 0u) coop__free_chan(dev, c);
    }
  }
}

/* COOP_DEVICE_DEFINES=COOP_PROF_KILLS (docs/scheduler.md, "Profile"; not
 * with the other profiles, whose slots it shares): how a task started
 * before it had all its workers got the rest, in device ticks from the
 * first pass that saw it pending. prof[0] counts such tasks; prof[1] sums
 * the time until an id was first taken after that pass (a leaving
 * workgroup's, or a free worker's), prof[2] until half its ids were taken,
 * prof[3] until all were, prof[4] is the longest of the latter. State in
 * sched.trace (that profile's, unused here): [0] the start, 0 = none;
 * [1] the ids taken then; [2] the marks passed. */
#ifdef COOP_PROF_KILLS
COOP_FN void coop__prof_kills(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_sched *s,
                              coop_u32 v, coop_u32 size) {
  coop_u64 now = coop_clock();
  if (s->trace[0] == 0u) {
    s->trace[0] = now;
    s->trace[1] = v;
    s->trace[2] = 0u;
  }
  coop_u64 d = now - s->trace[0];
  if (!(s->trace[2] & 1u) && v > s->trace[1]) {
    mb->prof[1] += d;
    s->trace[2] |= 1u;
  }
  if (!(s->trace[2] & 2u) && 2u * v >= size) {
    mb->prof[2] += d;
    s->trace[2] |= 2u;
  }
  if (v < size) return;
  mb->prof[3] += d;
  if (d > mb->prof[4]) mb->prof[4] = d;
  mb->prof[0] += 1u;
  s->trace[0] = 0u;
}
#define COOP_PROF_KILLS_AT(v, size) coop__prof_kills(mb, s, (v), (size))
#define COOP_PROF_KILLS_DONE(size) \
  if (s->trace[0] != 0u) coop__prof_kills(mb, s, (size), (size))
#else
#define COOP_PROF_KILLS_AT(v, size)
#define COOP_PROF_KILLS_DONE(size)
#endif

/* Step 5, after the reap: the task waiting for handed-over workers gets
 * the free ones (ids taken from its ticket word like a leaving worker's,
 * released at once) and kills are asked for the ids still missing; once
 * it has every id the handoffs are withdrawn and the task is no longer
 * pending. Then the handed-over workers are counted. */
COOP_FN void coop__pending(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  if (s->pend) {
    coop_u32 c = s->pend - 1u;
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    coop_u32 tk = coop_ld_rlx(&ch->ticket), size = tk >> 16, v = tk & 0xffffu;
    if (v < size && coop_ld_rlx(&ch->cancel)) size = v = coop__close_ids(mb, dev, c);
    COOP_PROF_KILLS_AT(v < size ? v : size, size);
    if (v < size && s->nfree) {
      coop_u32 k = size - v < s->nfree ? size - v : s->nfree;
      v = coop_fadd(&ch->ticket, k) & 0xffffu;
      coop_u32 got = v < size ? (size - v < k ? size - v : k) : 0u;
      if (got > COOP_HELP_MIN_RELEASE && s->nhelpers) {
        /* many: the helpers map and release them as a start's (a loop of
         * this thread over hundreds of workers took 72 us on an H200) */
        coop_st_rlx(&s->help_ticket, v);
        coop__help_post(s, COOP_HELP_START_RELEASE, ch->task, c, v + got);
        coop__help_wait(s);
      } else if (got) {
        /* ids v..v+got-1 to free workers (found: nfree >= k >= got) */
        coop__map_ids(dev, ch, c, v, v + got, s->nworkers);
        coop_fence_rel();
        coop__release_workers(dev, ch, v, v + got, 1u);
      }
      if (got) {
        s->nfree -= got;
        s->pend_own += got;
        if (v + got == size) coop__start_late(mb, ch, coop_clock());
      }
      v += k;
    }
    if (v >= size) {
      COOP_PROF_KILLS_DONE(size);
      for (coop_u32 k = 0, bits = s->coopm; bits != 0u; k++, bits >>= 1)
        if (bits & 1u) coop_st_rlx(&dev->chan[k].handoff, 0u);
      s->handed_owed += size - s->pend_own;
      s->pend = 0u;
    } else {
      coop__request_kills(dev, size - v);
    }
  }
  if (s->pend || s->handed_owed != s->handed_seen) coop__count_handed(dev);
}

/* The workgroups a cooperative task with cap `cap` starts on: the free
 * workers but those a hold keeps for a task due soon ("Gathering ahead"),
 * at least one. A hold that no gather could meet once it runs (more than
 * all but one of each cooperative kernel's, this one's too) keeps none
 * (coop__hold_kept, as for coop__idle_workers). Started on every free
 * worker, a kernel that began just before a periodic task's release (a
 * game run's 3 ms, back to back) took the held workers back, and the
 * task waited for its kills or the kernel's end: 3 ms at p99 on an H200. */
COOP_FN coop_u32 coop__coop_width(COOP_GLOBAL struct coop_sched *s, coop_u32 cap) {
  /* this kernel's workgroup 0 is not killed either; nfree >= 1 here */
  coop_u32 hold = coop__hold_kept(s, 1u), free = s->nfree > hold ? s->nfree - hold : 1u;
  return cap < free ? cap : free;
}

/* Step 6: returns 1 if the head task started (try the next one too). */
COOP_FN coop_u32 coop__serve_head(COOP_GLOBAL struct coop_mailbox *mb,
                                  COOP_GLOBAL struct coop_dev *dev) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  if (s->q_head == s->q_tail) return 0u;
  /* a task that started before it had all its workers gets every worker
   * that comes first (coop__pending) */
  if (s->pend) return 0u;
  coop__edf_head(s);
  coop_u32 slot = s->queue[s->q_head % COOP_RING];
  COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, slot);
  COOP_TRACE(6);
  /* The cancel flag, read only if a cancel came since two passes before
   * the intake (mailbox.cancel_seq moved: see the intake). Read as 0, it is 0
   * as of this pass's cancel_seq, whose move came after the flag of any
   * cancel it counts and was acquired before this load (the fence of the
   * pass that first saw it): t_cseq moves up, and a head that waits reads
   * it again only after the next request of any task. Read in every pass
   * a head waited (a task of every worker behind a suspension, whose
   * request had moved cancel_seq after its intake), it cost each of those
   * passes a bus round trip. */
  if (s->t_cseq[slot] != s->cseq) {
    if (coop_sys_ld_rlx(&t->cancel) != 0u) {
      s->q_head++;
      coop__finish_task(mb, slot, COOP_TS_CANCELLED);
      return 1u;
    }
    s->t_cseq[slot] = s->cseq;
  }
  coop_u32 coop = (s->t_flags[slot] & COOP_TF_COOPERATIVE) != 0u, groups = s->t_groups[slot];
  coop_u32 need = coop ? 1u : groups;
  if (need > coop__gatherable(s)) {
    /* it waits for a cooperative kernel's end: the kernels run as wide as
     * they may meanwhile, and end sooner (coop__gatherable) */
    coop__offer_forks(dev, s->nfree);
    return 0u;
  }
  if (s->nfree < need) coop__unreserve_all(dev);
  coop_u32 c = 0u;
  while (c < COOP_MAX_CHANNELS && ((s->busy >> c) & 1u)) c++;
  if (c == COOP_MAX_CHANNELS) return 0u; /* wait for a channel to free */
  coop_u32 n = need;                     /* the workers it starts on now */
  if (s->nfree < need) {
    coop__request_kills(dev, need - s->nfree);
    /* Beside cooperative kernels, a task that is not cooperative starts
     * now on the free workers, and the rest come from the kernels'
     * leaving workgroups ("Handing workers over"). */
    if (coop || !s->coopm || COOP__GATHER_WHOLE) return 0u;
    n = s->nfree;
  }
  /* A cooperative task's cap ("Caps"): one load of its record, after the
   * pass's acquire fence (which any cap written before this pass's view
   * of cancel_seq or sub_head happens before). */
  coop_u32 cap = coop ? coop__cap_of(coop_sys_ld_rlx(&t->cap), groups) : groups;
  coop_u32 g = coop ? coop__coop_width(s, cap) : groups;
  /* A resumed task: its workgroup 0 alone carries the saved state, unless
   * it was saved where a fork was allowed (COOP_RS_WIDE): then all g start
   * from it, as if forked there, and its next step runs at full width (a
   * sweep resumed on one workgroup ran a whole round on it first: 160 ms
   * of 1.3 s on an H200). */
  if ((s->t_flags[slot] & COOP_TF_RESUME) &&
      !(t->resume_state[COOP_TRANSMIT_BYTES / 8u] & COOP_RS_WIDE)) /* one load, resumes only */
    g = 1u;
  if (coop) n = g; /* a cooperative task starts on what it gets, and grows by forks */
  if (n < g) coop__hand_to(dev, c, n);
  s->q_head++;
  coop__start(mb, dev, slot, c, g, n, cap);
  if (n < g) coop__post_handoff(dev, c);
  /* suspended before it started ("Suspension") */
  if (coop && coop_sys_ld_rlx(&t->suspend) != 0u) coop__suspend(dev, c);
  if (s->holds || s->t_hold_to[slot]) coop__hold_started(s, slot, g, dev->chan[c].t_gathered);
  return 1u;
}

/* Profile (built with COOP_PROF): device ns per step of the pass, summed
 * in thread 0's registers and stored to mailbox.prof every
 * COOP_PROF_EVERY passes (docs/scheduler.md, "Profile"). Built with
 * COOP_PROF_TASKS instead: only the passes that took a task in and
 * started it count, and mailbox.prof[k] sums the ns from trace mark k - 1
 * to mark k (COOP_TRACE, sched.trace), stored after each such pass. */
#if defined(COOP_PROF_TASKS)
#define COOP_PROF_DECL coop_u64 prof_acc[COOP_PROF_SLOTS] = {0};
#define COOP_PROF_MARK(k)
#define COOP_PROF_PASS()                                                              \
  do {                                                                                \
    coop_u32 ok_ = took;                                                              \
    for (coop_u32 k_ = 1u; k_ <= COOP_TRACE_LAST; k_++)                               \
      if (s->trace[k_] < s->trace[k_ - 1u]) ok_ = 0u;                                 \
    if (ok_) {                                                                        \
      prof_acc[0]++;                                                                  \
      for (coop_u32 k_ = 1u; k_ <= COOP_TRACE_LAST; k_++)                             \
        prof_acc[k_] += s->trace[k_] - s->trace[k_ - 1u];                             \
      for (coop_u32 k_ = 0u; k_ < COOP_PROF_SLOTS; k_++) mb->prof[k_] = prof_acc[k_]; \
    }                                                                                 \
  } while (0)
#elif defined(COOP_PROF)
#define COOP_PROF_DECL coop_u64 prof_t = coop_clock(), prof_acc[COOP_PROF_SLOTS] = {0};
#define COOP_PROF_MARK(k)         \
  do {                            \
    coop_u64 now_ = coop_clock(); \
    prof_acc[k] += now_ - prof_t; \
    prof_t = now_;                \
  } while (0)
#define COOP_PROF_PASS()                                                              \
  do {                                                                                \
    if ((++prof_acc[0] % COOP_PROF_EVERY) == 0u)                                      \
      for (coop_u32 k_ = 0u; k_ < COOP_PROF_SLOTS; k_++) mb->prof[k_] = prof_acc[k_]; \
  } while (0)
#else
#define COOP_PROF_DECL
#define COOP_PROF_MARK(k)
#define COOP_PROF_PASS()
#endif
/* Built with COOP_PROF_SUSPEND instead (COOP_DEVICE_DEFINES; not with the
 * two above, whose slots it shares): where a suspension's time goes, in
 * device ticks. prof[0] counts the suspensions the scheduler passed on;
 * prof[1] is when it passed on the last one (step 2), prof[2] when it
 * next reaped a worker (the first to leave, at its barrier), prof[3] when
 * that task's last workgroup left (worker.cl, coop__publish), prof[4]
 * when the pass that passed it on began (its doorbell's load); and inside
 * each pass where cancel_seq moved (in coop-bench-suspend, the suspension's
 * own), prof[5] after the doorbell's acquire fence, prof[7] as step 2
 * begins, prof[8] once the record's words are in (each stamp taken under
 * a branch on the value it waits for, so that the clock is not read
 * before the load returns); with prof[2], prof[6] counts the passes that
 * began between the pass-on and that reap, prof[9] is the longest of them
 * but the reap's own, prof[10] that pass's start -> its reap's start and
 * prof[11] the reap itself, in ticks (a late reap with many short passes
 * is workers late to report, with few long ones a slow scheduler);
 * prof[12..15] the steps of the longest pass since the pass-on (steps 1
 * to 8 of the pass as COOP_PROF_MARK splits it, two 32-bit tick counts a
 * slot, the earlier step low; written as each longest pass ends, read
 * with prof[9]).
 * coop-bench-suspend reads them, and spins on prof[0] after its request:
 * the system-scope fence after the count waits for both stores to reach
 * host memory, so that the host sees the pass-on then, not whenever a
 * weak store to host memory leaves the GPU's caches. */
#ifdef COOP_PROF_SUSPEND
#define COOP_PROF_SUSPEND_DECL                                  \
  coop_u32 prof_armed = 0u, prof_reaped = 0u, prof_passes = 0u; \
  coop_u64 prof_pass = 0u, prof_long = 0u, prof_r0 = 0u, prof_m[9];
#define COOP_PROF_SUSPEND_PASS()                                                      \
  do {                                                                                \
    coop_u64 now_ = coop_clock();                                                     \
    if (prof_armed) {                                                                 \
      prof_passes++;                                                                  \
      if (now_ - prof_pass > prof_long) {                                             \
        prof_long = now_ - prof_pass;                                                 \
        prof_m[0] = prof_pass;                                                        \
        for (coop_u32 k_ = 0u; k_ < 4u; k_++)                                         \
          mb->prof[12u + k_] = (prof_m[2u * k_ + 1u] - prof_m[2u * k_]) |             \
                               ((prof_m[2u * k_ + 2u] - prof_m[2u * k_ + 1u]) << 32); \
      }                                                                               \
    }                                                                                 \
    prof_pass = now_;                                                                 \
  } while (0)
#undef COOP_PROF_MARK
#define COOP_PROF_MARK(k) prof_m[k] = coop_clock()
#define COOP_PROF_SUSPEND_NOTICED(n) \
  if (n) {                           \
    mb->prof[1] = coop_clock();      \
    mb->prof[4] = prof_pass;         \
    mb->prof[0] += (n);              \
    coop_sys_fence_acq_rel();        \
    prof_armed = 1u;                 \
    prof_reaped = s->reaped;         \
    prof_passes = 0u;                \
    prof_long = 0u;                  \
  }
#define COOP_PROF_SUSPEND_REAP() prof_r0 = coop_clock()
#define COOP_PROF_SUSPEND_REAPED()              \
  if (prof_armed && s->reaped != prof_reaped) { \
    coop_u64 now_ = coop_clock();               \
    mb->prof[6] = prof_passes;                  \
    mb->prof[9] = prof_long;                    \
    mb->prof[10] = prof_r0 - prof_pass;         \
    mb->prof[11] = now_ - prof_r0;              \
    mb->prof[2] = now_;                         \
    prof_armed = 0u;                            \
  }
#define COOP_PROF_SUSPEND_AT(k, cond) \
  if (cond) mb->prof[k] = coop_clock()
#else
#define COOP_PROF_SUSPEND_AT(k, cond)
#define COOP_PROF_SUSPEND_DECL
#define COOP_PROF_SUSPEND_PASS()
#define COOP_PROF_SUSPEND_NOTICED(n) (void)(n)
#define COOP_PROF_SUSPEND_REAP()
#define COOP_PROF_SUSPEND_REAPED()
#endif
/* The live view is refreshed every COOP_VIEW_EVERY passes: it is for the
 * eye (coopctl top), and its loads lengthen the pass that every new task
 * and every completion waits on. */
#ifndef COOP_VIEW_EVERY
#define COOP_VIEW_EVERY 8u
#endif

/* Ring entry index i (its COOP_RING_WORDS words) into e: one load. */
COOP_FN void coop__ring_load(COOP_GLOBAL struct coop_mailbox *mb, coop_u32 i, coop_u32 *e) {
  coop_sys_ld4_rlx(&mb->ring[i % COOP_RING][0], e);
}

/* 1 if every word of e carries index i's lap (shared.h, COOP_RING_TAG4). */
COOP_FN coop_u32 coop__ring_fresh(const coop_u32 *e, coop_u32 i) {
  coop_u32 ok = (e[0] >> 8) == COOP_RING_TAG(i);
  for (coop_u32 k = 1u; k < COOP_RING_WORDS; k++) ok &= (e[k] & 0xfu) == COOP_RING_TAG4(i);
  return ok;
}

/* Step 3: take new tasks from the submit ring up to head. Neither QUEUED
 * nor anything else is stored to the record here: a task started in this
 * pass goes straight to RUNNING (one system-scope release less). e is the
 * entry at the tail, loaded with sub_head before the fence; cseq_before is
 * mailbox.cancel_seq as read two passes ago (step 1). */
COOP_FN void coop__intake(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_sched *s,
                          coop_u32 head, coop_u32 *e, coop_u32 cseq_before) {
  coop_u32 first = 1u;
  while (s->sub_tail != head) {
    /* The first entry is taken as loaded if every word carries this
     * index's lap, else loaded again now (after the fence, so it is this
     * lap's). Saves a dependent bus round trip per task (~2.5 us on the
     * H100); what the entry carries saves loading the record (3.2 us). */
    if (!first || !coop__ring_fresh(e, s->sub_tail)) coop__ring_load(mb, s->sub_tail, e);
    first = 0u;
    coop_u32 slot = COOP_RING_SLOT(e[0]);
    s->sub_tail++;
    COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, slot);
    /* the helpers stage the arguments (the record's only words a start
     * needs) while this thread queues the task */
    if (s->nhelpers) coop__help_post(s, COOP_HELP_STAGE, slot, 0u, 0u);
    coop_u32 kid = COOP_RING_KID(e), flags = COOP_RING_TFLAGS(e), groups = COOP_RING_GROUPS(e);
    coop_u64 now = coop_clock();
    coop_u32 status = coop__validate(kid, flags, groups, s->nworkers);
    COOP_TRACE_AT(2, now);
    t->t_released = now;
    t->status = status;
    if (status != COOP_TR_OK) {
      coop__finish_task(mb, slot, COOP_TS_REFUSED);
      continue;
    }
    COOP_TRACE(3);
    s->t_kid[slot] = kid;
    s->t_flags[slot] = flags;
    s->t_groups[slot] = groups;
    /* Its cancel flag is not read here: it is taken as 0 as of cancel_seq
     * two passes ago, so a cancel that came since (the host sets the flag,
     * then moves cancel_seq) has the flag read when it is served. */
    s->t_cseq[slot] = cseq_before;
    s->t_queued[slot] = 0u;
    /* a window (periodic jobs, coopd) is the only field read from the
     * record here: a bus round trip, after the fence, so this lap's */
    coop_u32 hold = (e[1] & COOP_RING_HOLD) != 0u;
    s->t_hold_from[slot] = hold ? t->hold_from : 0u;
    s->t_hold_to[slot] = hold ? t->hold_to : 0u;
    s->queue[s->q_tail % COOP_RING] = slot;
    s->q_deadline[s->q_tail % COOP_RING] = COOP_RING_DEADLINE(e);
    s->q_tail++;
  }
}

/* After serving: QUEUED (release, with t_released and status) for each
 * task still waiting that has not had it. */
COOP_FN void coop__mark_queued(COOP_GLOBAL struct coop_mailbox *mb,
                               COOP_GLOBAL struct coop_sched *s) {
  for (coop_u32 i = s->q_head; i != s->q_tail; i++) {
    coop_u32 slot = s->queue[i % COOP_RING];
    if (s->t_queued[slot]) continue;
    s->t_queued[slot] = 1u;
    coop_sys_st_rel(&coop__task(mb, slot)->state, COOP_TS_QUEUED);
  }
}

/* Step 2: channel ch's task is cancelled. */
COOP_FN void coop__pass_cancel(COOP_GLOBAL struct coop_chan *ch) {
  if (coop_ld_rlx(&ch->cancel) != 0u) return;
  coop_st_rel(&ch->cancel, 1u);
  /* seen by barrier spinners as a release, after the flag (barrier.cl) */
  coop_fadd_rel(&ch->bar_arrive, COOP__BAR_CANCEL);
  coop_fadd_rel(&ch->bar_arrive_odd, COOP__BAR_CANCEL);
}

/* Step 2: cooperative channel c's task is to be suspended (suspend != 0)
 * or has the record's cap `cap`. Returns 1 if the suspension is new. */
COOP_FN coop_u32 coop__pass_cap(COOP_GLOBAL struct coop_dev *dev, coop_u32 c, coop_u32 cap,
                                coop_u32 suspend) {
  coop_u32 suspending = coop_ld_rlx(&dev->chan[c].suspend);
  /* a suspending task keeps its cap of 1 whatever the record's says,
   * and one that suspends now takes it at once (coop__suspend) */
  if (suspend != 0u) {
    if (!suspending) coop__suspend(dev, c);
  } else if (!suspending)
    coop__set_cap(dev, c, cap);
  return suspend != 0u && !suspending;
}

/* Step 2: cancel requests, caps and suspensions to running tasks'
 * channels, read only when mailbox.cancel_seq moved since the last read
 * (or at shutdown): an idle or busy pass reads no task record across the
 * bus. When it moved by exactly one request, a cancel or a suspension,
 * the word names its slot (COOP_CTL_*), and that request alone is passed
 * on, with no record read: requests before it were passed on by the passes
 * that saw them. Returns the suspensions it passed on first
 * (COOP_PROF_SUSPEND counts them). */
COOP_FN coop_u32 coop__pass_cancels(COOP_GLOBAL struct coop_mailbox *mb,
                                    COOP_GLOBAL struct coop_dev *dev, coop_u32 stopping) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  coop_u32 noticed = 0u, w = s->cseq;
  if (!stopping && w == s->cseq_seen) return 0u;
  /* the count is bits 31..10: one request more wraps as the word does */
  coop_u32 one = !stopping &&
                 ((w & ~(COOP_CTL_SEQ_ONE - 1u)) - (s->cseq_seen & ~(COOP_CTL_SEQ_ONE - 1u))) ==
                     COOP_CTL_SEQ_ONE &&
                 COOP_CTL_OP(w) != COOP_CTL_CAP;
  s->cseq_seen = w;
  COOP_PROF_SUSPEND_AT(7, 1);
  for (coop_u32 c = 0, bits = s->busy; bits != 0u; c++, bits >>= 1) {
    if (!(bits & 1u)) continue;
    COOP_GLOBAL struct coop_chan *ch = &dev->chan[c];
    coop_u32 coop = !stopping && ((s->coopm >> c) & 1u);
    /* The named request: to every channel running its slot. A task that
     * has published its end (so its slot may hold the host's next task,
     * already running on another channel) keeps its channel busy until
     * its workers are reaped (step 5, after this one): stopping at the
     * first channel of the slot could give a cancel to the ended task's
     * channel alone (harmless there: the next start resets it) and lose
     * it for the running one. */
    if (one) {
      if (ch->task != COOP_CTL_SLOT(w)) continue;
      COOP_PROF_SUSPEND_AT(8, 1);
      if (COOP_CTL_OP(w) == COOP_CTL_CANCEL)
        coop__pass_cancel(ch);
      else if (coop) /* a suspension (the host refuses one of another kind) */
        noticed += coop__pass_cap(dev, c, 0u, 1u);
      continue;
    }
    COOP_GLOBAL struct coop_task_rec *t = coop__task(mb, ch->task);
    /* The record's words, state, cancel, cap and suspend, in one vector
     * load: the bus serves this thread's loads of host memory one at a
     * time (about 0.6 us each on the H100), so three loads of the flags
     * were three round trips. Relaxed: a flag carries no data, and an
     * acquire would hold back the next load. A cap or a suspension moves
     * cancel_seq as a cancel does ("Caps", "Suspension"). */
    coop_u32 r[4];
    coop_sys_ld4_rlx(&t->state, r);
    coop_u32 cancel = r[1], cap = coop ? r[2] : 0u, suspend = coop ? r[3] : 0u;
    COOP_PROF_SUSPEND_AT(8, (cancel | cap | suspend) != 0xffffffffu);
    if (stopping || cancel != 0u) coop__pass_cancel(ch);
    if (coop) noticed += coop__pass_cap(dev, c, cap, suspend);
  }
  return noticed;
}

COOP_FN void coop__scheduler(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_dev *dev,
                             coop_u32 participants) {
  COOP_GLOBAL struct coop_sched *s = &dev->sched;
  s->nworkers = participants - 1u;
  s->nfree = s->nworkers;
  for (coop_u32 pid = 0; pid <= s->nworkers; pid++) {
    s->wstat[pid] = COOP_SW_FREE;
    s->wpub[pid] = 0u; /* the host zeroed wg_view */
  }
  s->view_pass = 0u;
  s->pass = 0u;
  s->busy = s->coopm = s->susm = 0u;
  s->holds = 0u;
  s->pend = s->pend_own = s->handed_owed = s->handed_seen = 0u;
#ifdef COOP_PROF_KILLS
  s->trace[0] = 0u;
#endif
  s->reaped = coop_ld_rlx(&dev->returned); /* 0: the host zeroed coop_dev */
  s->nhelpers = coop__nhelpers();
  coop_u32 last_ping = coop_sys_ld_acq(&mb->ping);
  s->cseq = s->cseq_prev = s->cseq_seen = coop_sys_ld_acq(&mb->cancel_seq);
  coop_u32 stopping = 0u;
  coop_sys_st_rel(&mb->participants, participants);
  coop_sys_st_rel(&mb->sched_state, 1u);
  COOP_PROF_DECL
  COOP_PROF_SUSPEND_DECL
  for (;;) {
    COOP_PROF_SUSPEND_PASS();
    COOP_TRACE(0);
    /* Step 1. The doorbell (the host's four words) and the next ring
     * entry, a 16-byte load each, in flight together, then, only if a
     * word moved, one acquire fence (pairs with the host's release store
     * of each): a pass where nothing came pays no system-scope fence. */
    coop_u32 db[4], e[COOP_RING_WORDS];
/* a test: sub_head, a pause of this many ticks, the rest (no clock: no
 * pause, else the loop would never end) */
#if defined(COOP_TEST_DOORBELL_GAP) && COOP_HAVE_CLOCK
    db[2] = coop_sys_ld_rlx(&mb->sub_head);
    for (coop_u64 t0_ = coop_clock(); coop_clock() - t0_ < COOP_TEST_DOORBELL_GAP;) {
    }
    db[0] = coop_sys_ld_rlx(&mb->ping);
    db[1] = coop_sys_ld_rlx(&mb->shutdown);
    db[3] = coop_sys_ld_rlx(&mb->cancel_seq);
#else
    coop_sys_ld4_rlx(&mb->ping, db); /* the doorbell: ping, shutdown, sub_head, cancel_seq */
#endif
    coop__ring_load(mb, s->sub_tail, e);
    coop_u32 p = db[0], down = db[1], head = db[2], cseq = db[3];
    if (p != last_ping || head != s->sub_tail || cseq != s->cseq || (down != 0u && !stopping))
      coop_sys_fence_acq();
    COOP_PROF_SUSPEND_AT(5, cseq != s->cseq);
    /* Tasks taken in now are taken as not cancelled as of cancel_seq two
     * doorbells ago (t_cseq; the intake reads no cancel flag): a task
     * submitted before a cancel that this pass sees may be missing from
     * this doorbell's sub_head (its words are separate loads), but the next
     * pass's doorbell, loaded after this pass's acquire fence, has it.
     * Taken in by this pass or the next, it gets a cancel_seq older than
     * the cancel's, so its flag is read when it is served. (With the
     * previous pass's value the next pass would take it in as of the
     * cancel's own cancel_seq, never read its flag, and a kernel that
     * never ends ran on; a second, acquire load of sub_head here closed
     * that too, at a bus round trip in every pass that sees a cancel, a
     * cap or a suspension: docs/scheduler.md, step 3.) */
    coop_u32 cseq_before = s->cseq_prev;
    s->cseq_prev = s->cseq;
    s->cseq = cseq;
    if (p != last_ping) {
      mb->pong_clock = coop_clock();
      coop_sys_st_rel(&mb->pong, p);
      last_ping = p;
    }
    if (!stopping && down != 0u) stopping = 1u;
    COOP_PROF_MARK(1);
    COOP_TRACE(1);
    /* Step 2, right after the fence: a cancel or a suspension waits for
     * nothing else of the pass (the intake's, the forks' and the reap's
     * loads before it were 1.0 us of the pass that passed a suspension on,
     * on the H200). It touches only running tasks' channels; one whose
     * last workgroup has left but that is not reaped yet may be given a
     * request, which its next start resets. */
    coop_u32 noticed = coop__pass_cancels(mb, dev, stopping);
    COOP_PROF_SUSPEND_NOTICED(noticed);
    COOP_PROF_MARK(2);
#ifdef COOP_PROF_TASKS
    coop_u32 took = head != s->sub_tail;
#endif
    coop__intake(mb, s, head, e, cseq_before);
    COOP_PROF_MARK(3);
    COOP_TRACE(4);
    for (coop_u32 c = 0, bits = s->coopm; bits != 0u; c++, bits >>= 1)
      if (bits & 1u) coop__reconcile_forks(dev, c);
    COOP_PROF_MARK(4);
    COOP_PROF_SUSPEND_REAP();
    coop__reap(dev);
    if (s->pend || s->handed_owed != s->handed_seen) coop__pending(mb, dev);
    COOP_PROF_SUSPEND_REAPED();
    COOP_PROF_MARK(5);
    COOP_TRACE(5);
    if (stopping) {
      while (s->q_head != s->q_tail) {
        coop__finish_task(mb, s->queue[s->q_head % COOP_RING], COOP_TS_CANCELLED);
        s->q_head++;
      }
      if (!s->busy) break;
      continue;
    }
    while (coop__serve_head(mb, dev)) {
    }
    coop__mark_queued(mb, s);
    COOP_PROF_MARK(6);
    COOP_TRACE(11);
    if (s->q_head == s->q_tail && !s->pend) coop__idle_workers(dev);
    COOP_PROF_MARK(7);
    /* last: a task taken in at the top is started before the view's loads */
    if (++s->pass % COOP_VIEW_EVERY == 0u) coop__publish_view(mb, dev);
    COOP_PROF_MARK(8);
    COOP_TRACE(12);
    COOP_PROF_PASS();
  }
  if (s->nhelpers) coop__help_post(s, COOP_HELP_EXIT, 0u, 0u, 0u);
  coop__help_wait(s);
  for (coop_u32 pid = 1u; pid <= s->nworkers; pid++) coop_st_rel(&dev->w[pid].state, COOP_WS_EXIT);
  coop_sys_st_rel(&mb->sched_state, 2u);
}
