//@needs registered.cl
/*
 * worker.cl: a worker workgroup waits for an assignment, runs it, reports.
 *
 * Thread 0 spins on its own coop_worker.state in device memory (relaxed,
 * with a nap, then an acquire fence) until the scheduler or a forking
 * workgroup stores ASSIGNED (release) after writing the payload; a
 * workgroup barrier hands the payload to the other threads. On return,
 * thread 0 decrements the channel's alive count (acq_rel: the last one out
 * knows it is last), writes the results, then stores RETURNED (release)
 * for the scheduler to acquire, then counts itself in dev.returned
 * (release), so that the scheduler knows to look.
 *
 * Completion: the kernel's last workgroup out publishes the task's results
 * and its final state itself (coop__publish), before its RETURNED. When the
 * scheduler did it, at its reap, the host saw a finished task 14-25 us
 * after its end on the H100: the wait for the scheduler's pass
 * to reach the reap, the reap, then the record's stores. The scheduler
 * still reaps every worker (to free it) and then the channel, but writes
 * nothing into a record after RUNNING except its live view, which it
 * writes only while it holds the record (coop_chan.rec, COOP_REC_*):
 *   STARTING --(scheduler: after RUNNING, release)--> OPEN
 *   OPEN --(scheduler: CAS, acq_rel)--> VIEWING --(release)--> OPEN
 *   OPEN --(last workgroup out: CAS, acq_rel)--> CLOSED
 * CLOSED is final until the channel's next start. So RUNNING and every
 * live-view store come before the final state (the CAS acquires them, and
 * the final state is a system-scope release, cumulative), and nothing is
 * written into the record once the host may see it final and reuse it.
 */

/* Thread 0 of a COOP_TF_GATED task's workgroup: wait at its input gate
 * (docs/scheduler.md, "The input gate"). The host submits such a task
 * before it copies the task's input in and stores the record's gate
 * (system scope, release) once the copies are there, so that the copy
 * runs while the scheduler takes, gathers and starts the task. Workgroup
 * 0 alone reads the record across the bus (relaxed, with a nap, then one
 * acquire fence) and passes what it read on in the channel's gate
 * (release); the others wait on that word in device memory (relaxed, a
 * nap, one acquire fence). FAILED: a copy failed; the task runs on what
 * its buffers hold and ends CANCELLED (the channel's cancel, stored
 * before this workgroup's decrement of alive, which the last out
 * acquires). */
#define COOP_GATE_NAP_NS 200u /* workgroup 0's nap between its reads of the record's gate */
COOP_FN void coop__gate(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_chan *ch,
                        coop_u32 vid) {
  if (!(ch->flags & COOP_TF_GATED)) return;
  coop_u32 g;
  if (vid == 0u) {
    COOP_GLOBAL struct coop_task_rec *t = &mb->tasks[ch->task];
    while ((g = coop_sys_ld_rlx(&t->gate)) == COOP_GATE_SHUT) coop_nap(COOP_GATE_NAP_NS);
    coop_sys_fence_acq();
    if (g != COOP_GATE_OPEN) coop_st_rlx(&ch->cancel, 1u);
    coop_st_rel(&ch->gate, g);
    return;
  }
  while (coop_ld_rlx(&ch->gate) == COOP_GATE_SHUT) coop_nap(COOP_IDLE_NAP_NS);
  coop_fence_acq();
}

/* Thread 0, once it has acquired its state st: the assignment into wl,
 * the barrier's state of a workgroup that starts (barrier.cl, from its
 * payload and its channel), and the task's first start. Not inline: with
 * this in coop__next, PoCL's work-item loops failed to compile ("Incoming
 * edges to non-entry block", the daemon's test kernels loaded) once the
 * barrier's state grew. */
COOP_FN0 void coop__took(COOP_GLOBAL struct coop_mailbox *mb, COOP_LOCAL struct coop_wgl *wl,
                         COOP_GLOBAL struct coop_worker *w, COOP_GLOBAL struct coop_dev *dev,
                         coop_u32 st) {
  wl->cmd = st;
  wl->chan = w->chan;
  wl->vid = w->vid;
  wl->forked = w->forked;
  wl->resizes = 0u;
  if (st != COOP_WS_ASSIGNED) return; /* EXIT: no channel */
  COOP_GLOBAL struct coop_chan *ch = &dev->chan[w->chan];
  wl->gen = w->gen;
  wl->base[0] = w->base[0];
  wl->base[1] = w->base[1];
  wl->hold_next = 0u;
  wl->t_offer = coop_clock(); /* its first step's start (primitives.cl) */
  wl->m_ep = ch->m0;          /* used by workgroup 0 only */
  wl->n_max = ch->n_max;
  wl->query = (ch->flags & COOP_TF_QUERY_BARRIER) != 0u;
  wl->sus = 0u;
  wl->want_pre = 0u;
  coop__gate(mb, ch, w->vid); /* before the start's stamp: the run is the kernel's */
  /* The task's first start: a forked workgroup's never is (its forker
   * started before it). Relaxed, a reduction not waited for; the
   * decrement of alive (acq_rel) in coop__report orders it. */
  coop_u64 ts = coop_clock(), tg = w->t_gathered, d = ts > tg ? ts - tg : 0u;
#ifdef COOP_PROF_BAR
  wl->pb_t = wl->pb_c0 = COOP__PB_NOW();
  wl->pb_t0 = ts;
  wl->pb_n = 0u;
  for (coop_u32 k = 0u; k < COOP__PB_LEGS; k++) wl->pb[k] = 0u;
#endif
  if (!w->forked) coop_fmin_rlx(&ch->start_min, d < 0xffffffffu ? (coop_u32)d : 0xffffffffu);
}

/* Thread 0 waits for the next assignment and publishes it in wl. */
COOP_FN coop_u32 coop__next(struct coop_ctx *c, COOP_GLOBAL struct coop_mailbox *mb) {
  if (c->lid == 0u) {
    coop_u32 st;
    /* Relaxed loads and a nap, then one acquire fence: on CUDA an acquire
     * load invalidates the SM's L1, so idle workers spinning with acquire
     * loads slowed every task running beside them on their SMs. */
    while ((st = coop_ld_rlx(&c->self->state)) != COOP_WS_ASSIGNED && st != COOP_WS_EXIT)
      coop_nap(COOP_IDLE_NAP_NS);
    coop_fence_acq();
    coop__took(mb, c->wl, c->self, c->dev, st);
  }
  coop_wg_barrier();
  coop_u32 cmd = c->wl->cmd;
  c->ch = &c->dev->chan[c->wl->chan];
  c->vid = c->wl->vid;
  c->forked = c->wl->forked;
  c->left = 0u;
  c->suspended = 0u;
  c->bslot = 0u;
  /* The arguments into workgroup memory (api.h, wl->args), after thread
   * 0's acquire of the assignment, which the barrier above passes on */
  if (cmd == COOP_WS_ASSIGNED) {
    COOP_GLOBAL const coop_u64 *a = c->dev->sched.t_payload[c->ch->task];
    for (coop_u32 i = c->lid; i < 2u * COOP_MAX_ARGS; i += c->lsize) c->wl->args[i] = a[i];
  }
  /* all have read wl, and the arguments are in, before thread 0 may rewrite it */
  coop_wg_barrier();
  return cmd;
}

/* The last workgroup out: the task's results, then its final state. Every
 * other workgroup's channel updates (kills, forks, M, faults, start_min)
 * came before its own decrement of alive, which this one's acquired. */
COOP_FN void coop__publish(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_chan *ch,
                           coop_u64 finished) {
  coop_u32 open = COOP_REC_OPEN;
  while (!coop_cas(&ch->rec, &open, COOP_REC_CLOSED)) { /* RUNNING or a view is being written */
    open = COOP_REC_OPEN;
    coop_nap(COOP_IDLE_NAP_NS);
  }
  COOP_GLOBAL struct coop_task_rec *t = &mb->tasks[ch->task];
  /* finished was stamped right after this workgroup's decrement of alive,
   * the last: later than every other's end. started is at least gathered
   * by construction (start_min). */
  coop_u32 smin = coop_ld_rlx(&ch->start_min);
  coop_u64 started = smin == 0xffffffffu ? finished : ch->t_gathered + smin;
  /* A task started before it had all its workers (scheduler.cl, "Handing
   * workers over") was gathered when its last id was given (t_full,
   * written before that workgroup's decrement of alive, or by the
   * scheduler before its own), and starts, for the record, no earlier */
  if (started < ch->t_full) started = ch->t_full;
  t->t_started = started;
  t->t_finished = finished < started ? started : finished;
  t->m_min = coop_ld_rlx(&ch->m_min);
  t->m_max = coop_ld_rlx(&ch->m_max);
  t->kills = coop_ld_rlx(&ch->killed);
  t->forks = coop_ld_rlx(&ch->forked);
  t->resizes = coop_ld_rlx(&ch->resizes);
  t->fault = coop_ld_rlx(&ch->fault);
  t->joined = coop_ld_rlx(&ch->joined);
  t->kills_taken = coop_ld_rlx(&ch->taken);
  t->kill_waits = coop_ld_rlx(&ch->waits);
  if (coop_ld_rlx(&ch->suspended)) { /* workgroup 0's, before its decrement of alive */
    for (coop_u32 k = 0u; k < COOP_TRANSMIT_BYTES / 8u; k++) t->resume_state[k] = ch->saved[k];
    t->resume_state[COOP_TRANSMIT_BYTES / 8u] = ch->saved_how;
  }
  /* system scope: the host acquires it, and with it the results and what
   * every workgroup of the kernel wrote (acquired through alive) */
  coop_u32 final = coop_ld_rlx(&ch->cancel)      ? COOP_TS_CANCELLED
                   : coop_ld_rlx(&ch->suspended) ? COOP_TS_SUSPENDED
                                                 : COOP_TS_DONE;
#ifdef COOP_PROF_SUSPEND /* scheduler.cl, "Profile" */
  if (final == COOP_TS_SUSPENDED) {
    mb->prof[3] = finished;
    mb->prof[16] = ch->t_kill_arrive;
    mb->prof[17] = ch->t_kill_held;
  }
  ch->t_kill_arrive = ch->t_kill_held = 0u;
#endif
  coop_sys_st_rel(&t->state, final);
}

/* Thread 0, leaving channel ch for the reason `reason` (its decrement of
 * alive done, and the task published if it was the last): if the
 * scheduler has started a task before it had all its workers and asked
 * this channel's leaving workgroups to join it (ch.handoff), take one of
 * its group ids and run it at once, with no RETURNED, reap and start
 * between (scheduler.cl, "Handing workers over"). Returns 1 if this
 * worker took an id: its own payload is written and its state is
 * ASSIGNED, which coop__next finds at its first look. */
COOP_FN coop_u32 coop__hand_over(struct coop_ctx *c, COOP_GLOBAL struct coop_mailbox *mb,
                                 COOP_GLOBAL struct coop_chan *ch, coop_u32 reason) {
  /* Only cooperative channels are named (coop__post_handoff), and every
   * start clears the word: the workgroups of any other task (every end of
   * a short task) do not wait for its load before their RETURNED. */
  if (!coop__kernel_is_coop(ch->kid)) return 0u;
  coop_u32 to = coop_ld_rlx(&ch->handoff);
  if (to == 0u) return 0u;
  coop_fence_acq(); /* the scheduler stored the task's ticket before it (release) */
  coop_u32 c2 = to - 1u;
  COOP_GLOBAL struct coop_chan *nc = &c->dev->chan[c2];
  /* acq_rel: a later task's ticket on that channel (a handoff read late)
   * is taken with the set-up its release store published */
  coop_u32 tk = coop_fadd(&nc->ticket, 1u), v = tk & 0xffffu;
  if (v >= (tk >> 16)) return 0u; /* every id is given: return as usual */
  /* its own payload, as the scheduler writes a free worker's, and its
   * wstat entry: before its RETURNED at the end of that task, which the
   * reap acquires before it reads the entry */
  coop__assign(c->dev, nc, c2, c->pid, v);
  coop_fadd_rlx(&nc->joined, 1u); /* before its decrement of that task's alive */
  /* the last id: the task is RUNNING now (scheduler.cl, coop__start_late) */
  if (v + 1u == (tk >> 16)) coop__start_late(mb, nc, coop_clock());
  if (reason & COOP_WR_KILLED) coop_fadd_rlx(&ch->handed_kills, 1u);
  coop_fadd_rlx(&ch->handed, 1u | ((reason & COOP_WR_LAST) ? COOP_HANDED_LAST : 0u));
  coop_st_rlx(&c->self->state, COOP_WS_ASSIGNED);
  return 1u;
}

/* Thread 0 reports the end of an assignment. */
COOP_FN void coop__report(struct coop_ctx *c, COOP_GLOBAL struct coop_mailbox *mb) {
  coop_wg_barrier();
  if (c->lid == 0u) {
    COOP_GLOBAL struct coop_chan *ch = c->ch;
    coop_u32 reason =
        c->left && !c->suspended && !coop_ld_rlx(&ch->cancel) ? COOP_WR_KILLED : COOP_WR_FINISHED;
    if (coop_fsub(&ch->alive, 1u) == 1u) {
      reason |= COOP_WR_LAST;
      coop__publish(mb, ch, coop_clock());
    }
#ifdef COOP_PROF_BAR
    /* workgroups 0 and 1: their legs, steps, and device clock (high half)
     * and cycles (low half) since the start, in slots 1-7 and 8-14 */
    if (c->vid < 2u) {
      COOP_GLOBAL coop_u64 *p = mb->prof + 1u + 7u * c->vid;
      for (coop_u32 k = 0u; k < COOP__PB_LEGS; k++) p[k] = c->wl->pb[k];
      p[COOP__PB_LEGS] = c->wl->pb_n;
      p[COOP__PB_LEGS + 1u] =
          ((coop_clock() - c->wl->pb_t0) << 32) | ((COOP__PB_NOW() - c->wl->pb_c0) & 0xffffffffu);
      mb->prof[0] = 1u;
    }
#endif
    if (!coop__hand_over(c, mb, ch, reason)) {
      c->self->reason = reason;
      coop_st_rel(&c->self->state, COOP_WS_RETURNED);
      coop_fadd_rel(&c->dev->returned, 1u); /* after RETURNED: see coop__reap */
    }
  }
}

/* The loop's condition is at its head and every barrier is reached by all
 * threads on every iteration: PoCL's work-item loops need that shape. */
COOP_FN void coop__worker(COOP_GLOBAL struct coop_mailbox *mb, COOP_GLOBAL struct coop_dev *dev,
                          COOP_GLOBAL coop_u8 *arena, COOP_LOCAL struct coop_wgl *wl,
                          coop_u32 pid) {
  struct coop_ctx c;
  c.dev = dev;
  c.arena = arena;
  c.wl = wl;
  c.self = &dev->w[pid];
  c.pid = pid;
  c.lid = coop_local_id();
  c.lsize = coop_local_size();
#ifdef COOP_PROF_KILLS
  c.mb = mb;
#endif
  coop_u32 cmd = coop__next(&c, mb);
  while (cmd != COOP_WS_EXIT) {
    coop__dispatch(&c, c.ch->kid);
    coop__report(&c, mb);
    cmd = coop__next(&c, mb);
  }
}
