/*
 * dev_run.c: a job's run on the device (dev_internal.h): resolved and
 * started, its instances submitted and released on time, each task's
 * times and counts recorded as it ends, and the job finished.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

void dev__fail(struct job *j, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(j->message, sizeof j->message, fmt, ap);
  va_end(ap);
  j->error = code;
  atomic_store(&j->state, COOP_JOB_FAILED);
}

/* A task whose bounds-checked views caught an access outside its buffers
 * (device/api.h): nothing outside the job was touched, but its output is
 * garbage, so the job fails with EFAULT, naming the argument. */
static void fault(struct dev *d, struct job *j, unsigned tag) {
  if (j->error == COOP_EFAULT) return;
  char what[64];
  const struct kdef *k = kset_find(d->ks, j->kernel);
  if (tag == COOP_RT_FAULT_SCRATCH)
    snprintf(what, sizeof what, "its workgroup scratch memory");
  else if (k && tag - 1 < k->nargs && k->argnames[tag - 1][0])
    snprintf(what, sizeof what, "buffer argument %u (%s)", tag - 1, k->argnames[tag - 1]);
  else
    snprintf(what, sizeof what, "buffer argument %u", tag - 1);
  log_warn("job %llu (%s, uid %u): out-of-bounds access to %s stopped", (unsigned long long)j->id,
           j->kernel, j->uid, what);
  dev__fail(j, COOP_EFAULT,
            "kernel %s indexed %s out of bounds (the access was kept inside the job's buffers; "
            "check the arguments against the data)",
            j->kernel, what);
}

/* When a periodic job releases the instance after the one being submitted
 * (instance r->released), so that the scheduler gathers its workgroups
 * ahead of it; 0 when this is the last. */
static int64_t next_instance_ns(const struct run *r) {
  const struct job *j = r->j;
  uint64_t next = (uint64_t)r->released + 1;
  if (!dev__periodic(j) || atomic_load(&j->cancel)) return 0;
  if (j->count && next >= j->count) return 0;
  if (j->duration_ms && (int64_t)next * j->period_us * 1000 >= (int64_t)j->duration_ms * 1000000)
    return 0;
  return r->t0 + (int64_t)next * j->period_us * 1000;
}

/* How long dp_submit may wait for the task to end: a one-task job alone on
 * the device is submitted and seen ended in one round trip to the device
 * process. Never when other runs need the pass (a periodic release, another
 * job's end), nor jobs or buffer operations waiting their turn: they would
 * wait behind it. Until `wake` at most. */
static int64_t submit_wait_ns(const struct dev *d, const struct run *r, int64_t wake) {
  if (dev__periodic(r->j) || d->runs != r || r->next || d->coop_wait_head || d->held_head ||
      d->turn_head || d->bufops_left)
    return 0;
  /* and the windows as they are now: a frame that ended earlier in this
   * pass armed its next ones after the pass set `wake` (a bfs job that
   * waited for that frame, started right after its end, held the device
   * thread in this wait until the next frame's own submit, which then
   * waited for its suspension: a frame in ten on an H200) */
  int64_t now = coop__now_ns();
  dev__windows_due(d, now, &wake);
  int64_t left = wake - now;
  return left > 0 ? left : 0;
}

void dev__task_desc(struct dev *d, const struct job *j, const struct run *r,
                    struct coop_rt_task_desc *td) {
  memset(td, 0, sizeof *td);
  td->kernel = j->kernel_index;
  td->groups = j->groups;
  /* a cooperative N is the most it may hold: after a reload or a restart
   * the megakernel may have fewer workers than at its submission (another
   * kernel set, another occupancy; seen on an H200) */
  unsigned w = atomic_load(&d->workers);
  if ((j->flags & COOP_SUBMIT_COOPERATIVE) && w && td->groups > w) td->groups = w;
  td->cooperative = !!(j->flags & COOP_SUBMIT_COOPERATIVE);
  td->query_barrier = !!(j->flags & COOP_SUBMIT_QUERY_BARRIER);
  td->nargs = j->nargs;
  td->cap = r->cap;
  for (unsigned i = 0; i < j->nargs; i++) {
    int buf = j->args[i].type == COOP_ARG_BUF;
    td->args[i] = buf ? j->args[i].dev - 1 : j->args[i].bits;
    /* The views' bound: the client's declared size, never a scalar. A
     * scalar's length is 1 so that the runtime does not look it up. */
    td->lens[i] = buf ? j->args[i].size : 1;
  }
}

/* The trace of a job whose ranges went with its submit (trace.h, io_with):
 * the copies' stamps are that request's. */
static void trace_with_submit(struct dev *d, struct job *j, int out_done) {
  dev__trace_copy(d, j, 1);
  j->tr.io_with = j->tr.io_sent;
  if (out_done) dev__trace_copy(d, j, 0);
}

/* dp_submit_io for run r's task td: with its job's ranges where they go
 * with it (dev__io_with_submit), else after they went in apart (the device
 * process no longer holds the file: a park; or said so); `end`: the task
 * ended with the submit where it can (dp_submit_end). */
static int submit_ranges(struct dev *d, struct run *r, const struct coop_rt_task_desc *td,
                         int64_t wait_ns, int end, uint64_t devbufs, coop_task_id *id) {
  struct job *j = r->j;
  struct dp_buf b[COOP_RT_MAX_ARGS];
  struct dp_io io = {b, 0, 0, 0};
  int with = r->io_submit && dev__io_with_submit(d, j, b, &io.n);
  if (r->io_submit && !with) {
    int e = dev__io(d, j, 1);
    if (e) return e;
    r->io_submit = 0; /* in: a submit tried again (no free slot) does not copy again */
  }
  int *ended = end ? &r->ended : NULL, *breach = end ? &r->breach : NULL;
  struct coop_rt_task_info *info = end ? &r->end_info : NULL;
  uint64_t bufs = end ? devbufs : 0;
  int e = dp_submit_io(d->rt, td, wait_ns, bufs, with ? &io : NULL, id, ended, breach, info);
  if (!e && with && io.unmapped) {
    with = 0;
    e = dev__io(d, j, 1);
    if (!e) r->io_submit = 0;
    if (!e) e = dp_submit_io(d->rt, td, wait_ns, bufs, NULL, id, ended, breach, info);
  }
  if (e) return e;
  r->io_submit = 0;
  r->io_with = with;
  r->io_out_done = with && io.out_done;
  if (coopd_tracing && with) trace_with_submit(d, j, io.out_done);
  return 0;
}

static int submit_instance(struct dev *d, struct run *r, int64_t wake) {
  struct job *j = r->j;
  struct coop_rt_task_desc td;
  dev__task_desc(d, j, r, &td);
  r->cap_told = r->cap;
  /* due: its deadline after release, else (periodic) its next release,
   * no sooner than [jobs] min_deadline_us (the floor a deadline asked for
   * is held to: a period of 1 us was a deadline of 1 us). A periodic
   * instance released a period or more after its place (its job behind,
   * catching up) has none: a job whose instances took longer than its
   * period kept DEV_MAX_INFLIGHT of them queued, each due before any task
   * without a deadline, which then never reached the queue's head
   * (another user's render waited seconds, then failed EHUNG;
   * docs/scheduler.md, Sec. 5). Behind, it runs in turn with those tasks.
   * A task without a deadline that is not cooperative is due [jobs]
   * undated_due_ms after its submit: tasks with deadlines pass it only
   * until then. Before, they passed it for ever: one user who kept
   * one-instance periodic renders in flight (each due 1 ms after its
   * release, none ever behind) held another user's render back until its
   * gather budget ran out (EHUNG). */
  uint64_t due_us = j->deadline_us ? j->deadline_us : j->period_us;
  if (due_us && due_us < d->cfg->min_deadline_us) due_us = d->cfg->min_deadline_us;
  int64_t now = coop__now_ns(), period_ns = (int64_t)j->period_us * 1000;
  int behind = dev__periodic(j) && now - (r->t0 + (int64_t)r->released * period_ns) >= period_ns;
  if (due_us && !behind)
    td.deadline_ns = now + (int64_t)due_us * 1000;
  else if (!td.cooperative && d->cfg->undated_due_ms)
    td.deadline_ns = now + (int64_t)d->cfg->undated_due_ms * 1000000;
  /* a frame loop's, or the next instance's; a hold within its user's
   * bound (dev_holds.c) */
  td.next_ns = dev__hold_ask(d, j, dev__periodic(j) ? next_instance_ns(r) : j->next_ns);
  coop_task_id id;
  int64_t wait_ns = submit_wait_ns(d, r, wake);
  uint64_t devbufs = 0; /* nothing to copy back: the end may come with the submit */
  int copies = 0;
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF) {
      if (j->args[i].devbuf_id)
        devbufs |= j->views ? 0 : 1ull << i; /* guards checked at the end (kset.h, views) */
      else
        copies = 1;
    }
  /* ended by the device process when nothing comes back by other ways:
   * in its wait, or, not cooperative nor periodic, at the poll that finds
   * it final (dp_task_ended; a periodic job releases each instance itself) */
  int end = !copies && (wait_ns || (!td.cooperative && !dev__periodic(j)));
  if (wait_ns) dev__wait_begin(d);
  int e = submit_ranges(d, r, &td, wait_ns, end, devbufs, &id);
  if (wait_ns) dev__wait_end(d);
  if (e) return e;
  TRACE_STAMP(j, submit_ret);
  r->end_seen = r->ended ? dp_end_seen(d->rt) : 0;
  TRACE_SET(j, dp_seen, r->end_seen);
  r->task[r->ninflight] = id;
  r->task_inst[r->ninflight] = r->released++;
  r->task_seen[r->ninflight] = 0;
  r->task_ran[r->ninflight] = 0;
  r->task_next[r->ninflight] = td.next_ns;
  r->ninflight++;
  return 0;
}

static void push_event(struct dev *d, const struct job *j, uint32_t inst, uint8_t kind, int64_t t,
                       int64_t gather_ns) {
  pthread_mutex_lock(&d->mu);
  if (d->nev == d->cap_ev) {
    size_t cap = d->cap_ev ? d->cap_ev * 2 : 16;
    struct dev_event *p = realloc(d->ev, cap * sizeof *p);
    if (!p) { /* events are best effort: the RESULT still has every time */
      pthread_mutex_unlock(&d->mu);
      return;
    }
    d->ev = p;
    d->cap_ev = cap;
  }
  d->ev[d->nev++] = (struct dev_event){j->id, j->uid, inst, kind, t, gather_ns};
  pthread_mutex_unlock(&d->mu);
  dev__announce(d);
}

/* RELEASED and GATHERED as soon as the task record shows them (or, for a
 * task that finished between two polls, just before its end). */
static void live_events(struct dev *d, struct run *r, unsigned slot,
                        const struct coop_rt_task_info *ti) {
  uint8_t *seen = &r->task_seen[slot];
  if (ti->t_released && !(*seen & (1u << COOP_EV_RELEASED))) {
    *seen |= 1u << COOP_EV_RELEASED;
    push_event(d, r->j, r->task_inst[slot], COOP_EV_RELEASED, ti->t_released, -1);
  }
  if (ti->t_gathered && !(*seen & (1u << COOP_EV_GATHERED))) {
    *seen |= 1u << COOP_EV_GATHERED;
    push_event(d, r->j, r->task_inst[slot], COOP_EV_GATHERED, ti->t_gathered, ti->gather_ns);
  }
}

/* Whether a periodic job has released everything it will. */
static int releases_done(const struct run *r) {
  const struct job *j = r->j;
  if (atomic_load(&j->cancel)) return 1;
  if (!dev__periodic(j)) return r->released == 1;
  if (j->count && r->released >= j->count) return 1;
  if (j->duration_ms &&
      (int64_t)r->released * j->period_us * 1000 >= (int64_t)j->duration_ms * 1000000)
    return 1;
  return 0;
}

/* j's kernel in d's set, admitted there at its start (a reload may have
 * removed or changed it, a restart left fewer workers); NULL, e filled,
 * if not. */
static const struct kdef *admit_at_start(struct dev *d, const struct job *j, struct job_err *e) {
  const struct kdef *k = kset_find(d->ks, j->kernel);
  struct job_req req;
  job_req_from_job(&req, j);
  return job_admit(k, &req, atomic_load(&d->workers), JOB_AT_START, e, NULL, NULL) ? NULL : k;
}

/* The job's kernel in the running set, by name: after a reload the index
 * the loop computed may name another kernel, or none. 0, or the coop
 * code the job failed with. */
int dev__resolve(struct dev *d, struct job *j) {
  if (d->broken[0]) {
    dev__fail(j, COOP_EFAILED, "the device is unavailable: %.200s", d->broken);
    return j->error;
  }
  struct job_err e;
  const struct kdef *k = admit_at_start(d, j, &e);
  if (!k) {
    dev__fail(j, e.code, "%s", e.message);
    return j->error;
  }
  j->kernel_index = (int)(k - d->ks->k); /* registered in kset order */
  return 0;
}

/* A frame's path on the device thread, run dry at its warm window's start
 * on a copy of the last frame's job (dev_warm.c, keep_job): as
 * dev__resolve, dev__start_now and submit_instance would run it, with
 * nothing failed, made or sent. A path run once a frame finds its code and
 * data cold: on an H200 the device thread took 10.2-11.2 us at p50 from
 * taking a 60 fps frame's job (the device otherwise idle) to sending its
 * request, and 5.5-6.9 with this run ahead (bench/RESULTS.md, "A frame
 * loop's SUBMIT checked ahead"). */
int dev__warm_path(struct dev *d, const struct job *j) {
  struct job_err e;
  if (!d->rt || !admit_at_start(d, j, &e)) return 0;
  struct run *r = calloc(1, sizeof *r); /* the allocator's path, as a start's */
  if (!r) return 0;
  struct coop_rt_task_desc td;
  dev__task_desc(d, j, r, &td);
  free(r);
  struct dp_buf b[COOP_RT_MAX_ARGS];
  struct dp_io io = {b, 0, 0, 0};
  return dev__io_with_submit(d, j, b, &io.n) && dp_submit_io_dry(d->rt, &td, &io) > 0;
}

void dev__start_now(struct dev *d, struct job *j) {
  if (dev__resolve(d, j)) {
    dev__hand_back(d, j);
    return;
  }
  struct run *r = calloc(1, sizeof *r);
  if (!r) {
    dev__fail(j, COOP_ENOMEM, "%s", "out of memory");
    dev__hand_back(d, j);
    return;
  }
  r->j = j;
  r->state_fd = r->carry_fd = -1; /* none: dev_carry.c, dev_prio.c, dev_ckpt.c */
  r->ckpt_state_fd = r->ckpt_buf_fd = r->spare_state_fd = r->spare_buf_fd = -1;
  r->pend_state_fd = r->pend_buf_fd = -1;
  r->t0 = r->next_release = coop__now_ns();
  j->m_min = UINT32_MAX;
  j->t.gather_ns = j->t.exec_ns = -1;
  if (dev__periodic(j)) {
    uint64_t n = j->count ? j->count : (uint64_t)j->duration_ms * 1000 / j->period_us + 1;
    j->inst = calloc(n, sizeof *j->inst);
    j->inst_order = calloc(n, sizeof *j->inst_order);
    if (!j->inst || !j->inst_order) {
      dev__fail(j, COOP_ENOMEM, "%s", "out of memory");
      free(r);
      dev__hand_back(d, j);
      return;
    }
  }
  int e = dev__check_bufs(d, j);
  r->io_submit = !e && dev__io_with_submit(d, j, NULL, NULL); /* then in with its submit */
  if (!e && !r->io_submit) e = dev__io(d, j, 1);
  if (!e) e = dev__stage_in(d, j);
  if (e == DEV_ROOM_WAIT) { /* nothing of it on the device: it starts afresh */
    free(j->inst);
    free(j->inst_order);
    j->inst = NULL;
    j->inst_order = NULL;
    free(r);
    dev__room_wait(d, j);
    return;
  }
  if (e == COOP_ELOST && !j->error && j->reruns++ >= DEV_MAX_RERUNS)
    dev__fail(j, e, "the device process died while the job was staged, %u times", j->reruns);
  if (e && !(e == COOP_ELOST && !j->error)) {
    free(r);
    dev__hand_back(d, j);
    return;
  }
  /* e: its device process died while it was staged. The run joins the
   * others with nothing in flight, and the restart that comes next pass
   * runs it again as new (dev__restart: never_gathered), at most
   * DEV_MAX_RERUNS times: a job whose staging kills the device process
   * must not restart it for ever. */
  r->filling = !e && dev__sliced(j, COOP_BUF_IN); /* staged when its slices are in */
  if (!r->filling) TRACE_STAMP(j, staged);
  r->next = d->runs;
  d->runs = r;
}

/* Another run's frame in flight, or due now (its release come, not yet
 * submitted): a task that is not cooperative and that a deadline, a
 * period or a frame loop's guess at its next (j->next_ns) marks as one
 * that someone waits for. New runs go first in d->runs, so a frame taken
 * in this pass was submitted before r's turn. */
static int short_busy(const struct dev *d, const struct run *r, int64_t now) {
  for (const struct run *o = d->runs; o; o = o->next) {
    const struct job *j = o->j;
    if (o == r || (j->flags & COOP_SUBMIT_COOPERATIVE)) continue;
    if (!j->deadline_us && !j->next_ns && !dev__periodic(j)) continue;
    if (o->ninflight || (!releases_done(o) && !o->filling && now >= o->next_release)) return 1;
  }
  return 0;
}

/* Whether r's next slice waits: one holds the device thread for its whole
 * copy (0.25 to 0.5 ms a MiB on an H200), so that a frame that came
 * meanwhile waited for it at its submit, and a short task that ended
 * meanwhile was seen late (bench/RESULTS.md, "What holds a frame beside
 * a large job"). So no slice starts while another run's short task is in
 * flight or due, nor where it would reach into a frame's warm window
 * (dev_warm.c) before that window ends; for at most
 * DEV_SLICE_HOLD_NS in a row, after which one slice goes whatever comes
 * (a flood of short tasks slows a large job's bytes, never stops them).
 * When held, r->slice_wake is when to look again: a task's end or a kick
 * ends the pass's wait before it. */
static int slice_held(struct dev *d, struct run *r, int in, int64_t now) {
  int64_t est = d->slice_ns[in ? 1 : 0] ? d->slice_ns[in ? 1 : 0] : DEV_SLICE_GUESS_NS;
  int64_t until = dev__warm_within(d, now, now + est, NULL);
  if (!until && short_busy(d, r, now))
    until = now + est; /* its end, or a kick, ends the pass's wait first */
  if (!until) {
    r->slice_held_since = 0;
    return 0;
  }
  if (!r->slice_held_since) {
    r->slice_held_since = now;
    log_debug("job %llu (%s): its slices held for a frame", (unsigned long long)r->j->id,
              r->j->kernel);
  }
  int64_t last = r->slice_held_since + DEV_SLICE_HOLD_NS;
  if (now >= last) { /* held long enough: this one goes */
    r->slice_held_since = 0;
    return 0;
  }
  r->slice_wake = until < last ? until : last;
  return 1;
}

/* A sliced job's next slices (dev__slice): one after another while it is
 * the only run and nothing new is queued; else one a pass, so that what
 * came meanwhile is taken, and other runs' ends are seen, between two
 * (docs/daemon.md, "Large buffers in slices"). dev__slice's answer for the
 * last: 1 while slices are left, 0 when all are through; COOP_ELOST, the
 * job not failed, when the device process died under one (the restart at
 * the end of this pass decides); else the job failed, and is cancelled:
 * no task of it runs on room not filled. */
static int slice_on(struct dev *d, struct run *r, int in) {
  int e;
  r->slice_wake = 0;
  do {
    if (slice_held(d, r, in, coop__now_ns())) return 1;
    e = dev__slice(d, r, in);
  } while (e == 1 && d->runs == r && !r->next && !dev__new_work(d));
  if (e < 0 && r->j->error) atomic_store(&r->j->cancel, 1);
  return e;
}

/* The next pass for r's next slice: at once, or where slice_held held it,
 * at its r->slice_wake (a task's end or a kick comes before). */
static void slice_wake(const struct run *r, int64_t now, int64_t *wake) {
  int64_t at = r->slice_wake ? r->slice_wake : now;
  if (at < *wake) *wake = at;
}

/* The fill of a run's sliced buffers before its first release: 1 while it
 * goes on (the pass comes back at once, or at r->slice_wake), 0 once it is over (done, or the
 * job failed). A device process lost under a slice is the restart's,
 * which runs the job again from its staging (it never gathered), at most
 * DEV_MAX_RERUNS times, as a loss inside its staging. */
static int fill(struct dev *d, struct run *r) {
  struct job *j = r->j;
  int e = slice_on(d, r, 1);
  if (e == COOP_ELOST && !j->error && j->reruns++ >= DEV_MAX_RERUNS) {
    dev__fail(j, e, "the device process died while the job was staged, %u times", j->reruns);
    atomic_store(&j->cancel, 1);
  }
  if (e == 1 || (e == COOP_ELOST && !j->error)) return 1;
  r->filling = 0;
  if (!j->error) TRACE_STAMP(j, staged);
  return 0;
}

/* The emptying of a DONE run's sliced OUT buffers after its end: as fill.
 * A device process lost under a slice lost the task's results, which ran:
 * the restart runs the job again only by dev__runs_again's rules (an
 * INOUT buffer's bytes in the client's descriptor may be half written). */
static int empty(struct dev *d, struct run *r) {
  int e = slice_on(d, r, 0);
  if (e == COOP_ELOST && !r->j->error) r->lost_running = 1;
  if (e == 1 || (e == COOP_ELOST && !r->j->error)) return 1;
  r->emptying = 0;
  r->emptied = !r->j->error;
  return 0;
}

int dev__may_suspend(const struct run *r) {
  const struct job *j = r->j;
  return (j->flags & COOP_SUBMIT_COOPERATIVE) && !dev__periodic(j) && r->ninflight == 1 &&
         r->task_ran[0] && !r->moving && !r->suspending && !r->resuming && !r->ckpting &&
         !r->migrating && !atomic_load(&j->cancel);
}

/* A task's times in the order the host saw them. The device stamps
 * released, gathered, started and finished with its own clock, mapped to
 * the host's by a fit (runtime.c, "the device clock"); submitted and `seen`
 * (now, after the task was seen final) are the host's own. However far a
 * fit is off, submitted <= released <= gathered <= started <= finished <=
 * seen holds, so queued, execution and total stay inside the host's
 * interval (a loaded start once made a 12 ms job 1093 ms long;
 * docs/scheduler.md, "7. Timestamps").
 * Times not stamped (0) stay 0.
 * Before that clamp, the device's times move together by the least shift
 * that brings them into the interval: the fit's error is an offset, and
 * the gaps between them (device clock alone) are exact. Clamped one by
 * one, a short task's started and finished both became `submitted` when
 * the fit ran early, and its execution 0 (coopctl render's calibration
 * probe then failed: coopctl_devices in CI). */
static void host_order(struct coop_wire_times *t, int64_t seen) {
  int64_t *v[] = {&t->released, &t->gathered, &t->started, &t->finished};
  int64_t first = 0, last = 0, shift = 0;
  for (unsigned i = 0; i < 4; i++)
    if (*v[i]) {
      if (!first) first = *v[i];
      last = *v[i];
    }
  if (first && first < t->submitted)
    shift = t->submitted - first;
  else if (first && last > seen)
    shift = last - seen < first - t->submitted ? seen - last : t->submitted - first;
  for (unsigned i = 0; i < 4; i++)
    if (*v[i]) *v[i] += shift;
  int64_t lo = t->submitted;
  for (unsigned i = 0; i < 4; i++) {
    if (!*v[i]) continue;
    if (*v[i] < lo) *v[i] = lo;
    if (*v[i] > seen) *v[i] = seen;
    lo = *v[i];
  }
}

/* A task's stamps (times unset: 0) in the order the host saw them. */
static struct coop_wire_times task_times(const struct coop_rt_task_info *ti, int64_t seen) {
  struct coop_wire_times t = {.gather_ns = -1, .exec_ns = -1};
#define FROM_INFO(name) t.name = ti->t_##name;
  COOP_STAMPS_MAP(FROM_INFO) /* coop_schema.h */
#undef FROM_INFO
  host_order(&t, seen);
  return t;
}

/* A task that reached a final state, as the device thread saw at `seen`:
 * its times into the job. */
static void record(struct dev *d, struct run *r, unsigned slot, int64_t seen) {
  struct job *j = r->j;
  struct coop_rt_task_info ti;
  coop_task_id id = r->task[slot];
  if (r->ended) /* the device process has forgotten it */
    ti = r->end_info;
  else
    dp_task_info(d->rt, id, &ti);
  /* A periodic job's slot is needed by its next instances at once; a
   * one-task job's goes back with its buffers (dev__unstage): one round
   * trip to the device process fewer (docs/daemon.md, the path of a job). */
  if (dev__periodic(j))
    dp_task_release(d->rt, id);
  else if (!r->ended) /* else the device process released it already */
    r->release = id;
  TRACE_SET(j, seen, seen);
  TRACE_STAMP(j, task_released);
  live_events(d, r, slot, &ti);
  /* the device's stamps end no later than the device process saw the task
   * final, when it did (inside DP_SUBMIT's wait): a tighter bound than the
   * device thread's sight, which a late fit of the device clock moved
   * `finished` to, after that moment (coop-bench-rtt's finished->dp_seen
   * came out negative on 2 loaded cores) */
  int64_t bound = r->end_seen > 0 && r->end_seen < seen ? r->end_seen : seen;
  struct coop_wire_times t = task_times(&ti, bound);
  uint8_t st = ti.state == COOP_TASK_DONE        ? COOP_JOB_DONE
               : ti.state == COOP_TASK_CANCELLED ? COOP_JOB_CANCELLED
                                                 : COOP_JOB_REFUSED;
  if (st == COOP_JOB_DONE || (st == COOP_JOB_CANCELLED && ti.t_gathered)) {
    t.gather_ns = ti.gather_ns < 0 ? 0 : ti.gather_ns;
    if (t.gather_ns > t.finished - t.released) t.gather_ns = t.finished - t.released;
    t.exec_ns = t.started ? t.finished - t.started : 0;
  }
  if (r->segs) { /* resumed: from its first task's start, suspensions included */
    t.submitted = r->first.submitted;
    t.released = r->first.released;
    t.gathered = r->first.gathered;
    t.started = r->first.started;
    t.gather_ns = r->first.gather_ns;
    if (t.finished && t.started) t.exec_ns = t.finished - t.started;
  }
  if (!dev__is_coop(j) && t.started && t.finished)
    dev__share_charge(d, j, j->groups, t.started, t.finished, r->task_next[slot]);
  if (ti.fault) fault(d, j, ti.fault);
  if (st == COOP_JOB_REFUSED && j->error == 0) {
    j->error = COOP_EREFUSED;
    snprintf(j->message, sizeof j->message, "refused by the scheduler (reason %d)", ti.refusal);
  }
  if (st == COOP_JOB_DONE && j->deadline_us &&
      ti.t_finished - ti.t_released > (int64_t)j->deadline_us * 1000) {
    j->misses++;
    atomic_store(&j->misses_so_far, j->misses);
  }
  j->t = t; /* the job's times: its last instance's (periodic: see inst[]) */
#define MERGE(kind, name, rule) COOP_MERGE_##rule(j->name, ti.name);
  COOP_COUNTERS_MAP(MERGE)
#undef MERGE
  if (r->segs) j->m_initial = r->first_m;
  if (dev__periodic(j)) {
    struct coop_wire_inst *in = &j->inst[r->task_inst[slot]];
    in->state = st;
    in->t = t;
    if (r->task_inst[slot] + 1 > j->ninst) j->ninst = r->task_inst[slot] + 1;
    /* published by the add below: STATS counts it now (jobs_count_instances) */
    j->inst_order[atomic_load(&j->instances_done)] = r->task_inst[slot];
  } else if (atomic_load(&j->state) != COOP_JOB_FAILED) { /* keep a failure's reason */
    atomic_store(&j->state, st);
  }
  atomic_fetch_add(&j->instances_done, 1);
  r->ninflight--;
  r->task[slot] = r->task[r->ninflight];
  r->task_inst[slot] = r->task_inst[r->ninflight];
  r->task_seen[slot] = r->task_seen[r->ninflight];
  r->task_ran[slot] = r->task_ran[r->ninflight];
  r->task_next[slot] = r->task_next[r->ninflight];
}

void dev__segment_end(struct dev *d, struct run *r) {
  struct job *j = r->j;
  struct coop_rt_task_info ti;
  if (dp_task_info(d->rt, r->task[0], &ti)) return;
  if (!r->segs) {
    struct coop_wire_times t = task_times(&ti, coop__now_ns());
    t.gather_ns = ti.gather_ns < 0 ? 0 : ti.gather_ns;
    r->first = t;
    r->first_m = ti.m_initial;
  }
  r->segs++;
#define MERGE(kind, name, rule) COOP_MERGE_##rule(j->name, ti.name);
  COOP_COUNTERS_MAP(MERGE)
#undef MERGE
}

static int finish(struct dev *d, struct run *r, int may_keep);

void dev__finish_job(struct dev *d, struct run *r) { finish(d, r, 0); }

int dev__finish_or_keep(struct dev *d, struct run *r) { return finish(d, r, 1); }

static int finish(struct dev *d, struct run *r, int may_keep) {
  struct job *j = r->j;
  dev__ckpt_drop(d, r);
  /* idle from now: a job started and ended within one pass (its end came
   * with its submit) is never seen by maybe_park, which then parked the
   * megakernel after every such job, and the next paid the relaunch */
  d->idle_since = coop__now_ns();
  if (j->flags & COOP_SUBMIT_COOPERATIVE) d->slots_seq++; /* a slot is free: new places */
  if (j->m_min == UINT32_MAX) j->m_min = 0;
  uint8_t now = atomic_load(&j->state);
  if (now == COOP_JOB_FAILED) {
    /* keep the failure */
  } else if (r->released == 0 || (!dev__periodic(j) && now < COOP_JOB_DONE)) {
    /* never released, or lost while still queued */
    atomic_store(&j->state, COOP_JOB_CANCELLED);
  } else if (dev__periodic(j)) {
    uint8_t st = COOP_JOB_DONE;
    for (uint32_t i = 0; i < j->ninst; i++)
      if (j->inst[i].state != COOP_JOB_DONE) st = j->inst[i].state;
    if (atomic_load(&j->cancel)) st = COOP_JOB_CANCELLED;
    atomic_store(&j->state, st);
    if (j->ninst) j->t.submitted = j->inst[0].t.submitted;
  }
  if (atomic_load(&j->state) == COOP_JOB_CANCELLED && j->error == 0) {
    j->error = COOP_ECANCELED;
    if (r->watchdog) /* else its client could not tell this from its own CANCEL */
      snprintf(j->message, sizeof j->message,
               "cancelled by the watchdog: it ran longer than [jobs] watchdog_ms = %u ms",
               d->cfg->watchdog_ms);
    else
      snprintf(j->message, sizeof j->message, "%s",
               d->stop_now   ? "cancelled: the daemon is shutting down"
               : d->swap_now ? "cancelled: the daemon reloaded its kernels (grace period over)"
                             : "cancelled");
  }
  /* A job the views stopped still gets its own output back: it can only
   * hold what the job read from its own buffers and the sink. */
  int e = 0;
  if (r->ended)
    dev__unstage_ended(j, r->breach);
  else
    e = dev__unstage(d, j, atomic_load(&j->state) == COOP_JOB_DONE || j->error == COOP_EFAULT,
                     r->emptied, r->release);
  if (!e && atomic_load(&j->state) == COOP_JOB_DONE && !r->io_out_done)
    e = dev__io(d, j, 0); /* its ranges out, unless they came with its submit */
  if (e && may_keep && dev__runs_again(d, r)) {
    r->lost_running = 1; /* its results went with the device process */
    return 1;
  }
  if (e && j->error == 0) dev__fail(j, e, "%s", "could not write a result back");
  TRACE_STAMP(j, unstaged);
  dev__hand_back(d, j);
  return 0;
}

/* Its task ended by the device process at the poll that found it final
 * (dp_task_ended): released there, its guard zones whole, and, ended
 * DONE, its ranges out copied where they went with its submit. */
static void ended_there(struct run *r, const struct coop_rt_task_info *ti, const int64_t t[4]) {
  r->ended = 1;
  r->breach = -1;
  r->end_info = *ti;
  r->end_seen = 0;
  log_debug("job %llu (%s): its task ended in the device process at the poll that saw it final",
            (unsigned long long)r->j->id, r->j->kernel);
  if (r->io_with && ti->state == COOP_TASK_DONE) {
    r->io_out_done = 1;
    TRACE_SET(r->j, out_with, t[0]); /* the copy out: that poll's stamps */
    if (coopd_tracing) dev__trace_copy_at(r->j, 0, t);
  }
}

/* One pass over a run: cancel, watchdog, release, poll. 1 when finished,
 * 2 when suspended to be carried across a reload (dev_carry.c), 3 when
 * suspended for a job of higher priority or a share (dev_prio.c: its job
 * waits in coop_wait), 4 when suspended to move to another device
 * (dev_move.c), 5 when its resumption found no room (its job back in
 * coop_wait, suspended: dev_room.c). */
int dev__step_run(struct dev *d, struct run *r, int64_t now, int64_t *wake) {
  struct job *j = r->j;
  if (r->resuming) {
    int e = dev__resume_suspended(d, r);
    if (e == DEV_RESUME_LOST) return 0; /* the restart, later in this pass, takes it */
    if (e) return e == DEV_ROOM_WAIT || e == DEV_RESUME_AGAIN ? 5 : 1;
  }
  if (d->stop_now && now >= d->stop_at) atomic_store(&j->cancel, 1);
  if (d->swap_now) dev__carry_request(d, r);
  if (d->swap_now && now >= d->swap_at && !r->moving) atomic_store(&j->cancel, 1);
  if (d->cfg->watchdog_ms && r->started_ns &&
      now - r->started_ns > (int64_t)d->cfg->watchdog_ms * 1000000 && !atomic_load(&j->cancel)) {
    log_warn("job %llu (%s) ran past the watchdog budget of %u ms: cancelling",
             (unsigned long long)j->id, j->kernel, d->cfg->watchdog_ms);
    atomic_store(&j->cancel, 1);
    r->watchdog = 1;
  }
  dev__ckpt_request(d, r, now);
  if (dev__move_asked(j)) dev__move_request(d, r);
  if (atomic_load(&j->cancel))
    for (unsigned i = 0; i < r->ninflight; i++) dp_cancel(d->rt, r->task[i]);
  if (r->filling && !atomic_load(&j->cancel) && fill(d, r)) {
    slice_wake(r, now, wake); /* the next slice comes next pass */
    return 0;
  }
  int held = 0; /* its user's tasks past their share (dev_turns.c): *wake set for it */
  while (!releases_done(r) && now >= r->next_release && r->ninflight < DEV_MAX_INFLIGHT &&
         dev__turn_room(d, r)) {
    /* a cooperative job's start held while a task of higher priority has
     * its workers or is due (dev_prio.c): taken before, it filled its
     * buffers meanwhile; the task's end or the window's passes again */
    if ((j->flags & COOP_SUBMIT_COOPERATIVE) && !r->started_ns && dev__prio_blocked(d, j->priority))
      break;
    if ((held = dev__share_holds(d, r, now, wake))) break;
    dev__preempt_before_submit(d, r);
    int alive = dp_alive(d->rt);
    int e = submit_instance(d, r, *wake);
    if (e == COOP_EBUSY) break; /* no free slot: try on the next pass */
    if (e == COOP_ELOST && !dp_alive(d->rt)) {
      /* the restart (next pass) decides: dev__restart, dev__runs_again */
      r->lost_running = alive;
      break;
    }
    if (e) {
      dev__fail(j, e, "could not submit: %s", coop_strerror(e));
      atomic_store(&j->cancel, 1);
      break;
    }
    atomic_store(&j->state, COOP_JOB_RUNNING);
    log_debug("job %llu (%s): task %u submitted", (unsigned long long)j->id, j->kernel,
              r->released - 1);
    if (!r->started_ns) r->started_ns = now;
    r->next_release = r->t0 + (int64_t)r->released * j->period_us * 1000;
  }
  if (!releases_done(r) && !held && r->next_release < *wake) *wake = r->next_release;
  for (unsigned i = 0; i < r->ninflight;) {
    struct coop_rt_task_info ti;
    int got = r->ended ? (ti = r->end_info, 1) : dp_task_info(d->rt, r->task[i], &ti) == 0;
    int64_t t[4];
    if (got && !r->ended && dp_task_ended(d->rt, r->task[i], t)) ended_there(r, &ti, t);
    if (got && ti.state == COOP_TASK_SUSPENDED && r->moving == 1 &&
        dev__carry_out(d, r, "across the kernel reload") == 0)
      return 2; /* carried across the reload */
    if (got && ti.state == COOP_TASK_SUSPENDED && r->migrating &&
        dev__carry_out(d, r, "for its move to another device") == 0)
      return 4; /* to another device (dev_move.c) */
    if (got && ti.state == COOP_TASK_SUSPENDED && r->suspending && dev__suspend_out(d, r) == 0)
      return 3; /* back in coop_wait */
    if (got && ti.state == COOP_TASK_SUSPENDED && r->ckpting) {
      if (dev__ckpt_take(d, r)) break; /* the job failed: no task left */
      i++;                             /* its resumed task: polled on the next pass */
      continue;
    }
    if (got && ti.state >= COOP_TASK_DONE) {
      record(d, r, i, coop__now_ns()); /* moves the last slot into i */
    } else {
      /* task_max_ms counts from here (dev_watch.c): the host's clock, not
       * the device's fitted one, and a poll at most DEV_WAIT_NS late */
      if (got && ti.state == COOP_TASK_RUNNING && !r->task_ran[i]) {
        r->task_ran[i] = now;
        log_debug("job %llu (%s): task %u runs", (unsigned long long)j->id, j->kernel, i);
      }
      live_events(d, r, i, &ti);
      i++;
    }
  }
  if (r->ninflight) dev__ckpt_drain(d, r, now, wake); /* a snapshot's next chunk */
  dev__watch_run(d, r, now); /* after the poll: only tasks still on the device */
  if (!releases_done(r) || r->ninflight) return 0;
  /* ended: a done job's sliced OUT buffers emptied before its unstage */
  if (!r->emptying && !r->emptied && !r->ended && !j->error &&
      atomic_load(&j->state) == COOP_JOB_DONE && dev__sliced(j, COOP_BUF_OUT)) {
    r->emptying = 1;
    r->slice_arg = 0;
    r->slice_at = 0;
  }
  if (r->emptying && empty(d, r)) {
    slice_wake(r, now, wake);
    return 0;
  }
  return 1;
}
