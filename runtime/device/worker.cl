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
 */

/* Thread 0 waits for the next assignment and publishes it in wl. */
COOP_FN coop_u32 coop__next(struct coop_ctx *c) {
  if (c->lid == 0u) {
    coop_u32 st;
    /* Relaxed loads and a nap, then one acquire fence: on CUDA an acquire
     * load invalidates the SM's L1, so idle workers spinning with acquire
     * loads slowed every task running beside them on their SMs. */
    while ((st = coop_ld_rlx(&c->self->state)) != COOP_WS_ASSIGNED && st != COOP_WS_EXIT)
      coop_nap(COOP_IDLE_NAP_NS);
    coop_fence_acq();
    c->wl->cmd = st;
    c->wl->chan = c->self->chan;
    c->wl->vid = c->self->vid;
    c->wl->forked = c->self->forked;
    c->wl->gen = c->self->gen; /* thread 0's from here on (barrier.cl) */
    c->wl->resizes = 0u;
    c->self->t_start = coop_clock();
  }
  coop_wg_barrier();
  coop_u32 cmd = c->wl->cmd;
  c->ch = &c->dev->chan[c->wl->chan];
  c->vid = c->wl->vid;
  c->forked = c->wl->forked;
  c->left = 0u;
  coop_wg_barrier(); /* all have read wl before thread 0 may rewrite it */
  return cmd;
}

/* Thread 0 reports the end of an assignment. */
COOP_FN void coop__report(struct coop_ctx *c) {
  coop_wg_barrier();
  if (c->lid == 0u) {
    COOP_GLOBAL struct coop_chan *ch = c->ch;
    coop_u32 reason = c->left && !coop_ld_rlx(&ch->cancel) ? COOP_WR_KILLED : COOP_WR_FINISHED;
    if (coop_fsub(&ch->alive, 1u) == 1u) reason |= COOP_WR_LAST;
    c->self->reason = reason;
    c->self->t_end = coop_clock();
    coop_st_rel(&c->self->state, COOP_WS_RETURNED);
    coop_fadd_rel(&c->dev->returned, 1u); /* after RETURNED: see coop__reap */
  }
}

/* The loop's condition is at its head and every barrier is reached by all
 * threads on every iteration: PoCL's work-item loops need that shape. */
COOP_FN void coop__worker(COOP_GLOBAL struct coop_dev *dev, COOP_GLOBAL coop_u8 *arena,
                          COOP_LOCAL struct coop_wgl *wl, coop_u32 pid) {
  struct coop_ctx c;
  c.dev = dev;
  c.arena = arena;
  c.wl = wl;
  c.self = &dev->w[pid];
  c.pid = pid;
  c.lid = coop_local_id();
  c.lsize = coop_local_size();
  coop_u32 cmd = coop__next(&c);
  while (cmd != COOP_WS_EXIT) {
    coop__dispatch(&c, c.ch->kid);
    coop__report(&c);
    cmd = coop__next(&c);
  }
}
