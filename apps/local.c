/*
 * local.c: the in-process executor of an application's task (app.h): its
 * buffers in the runtime's arena, the one cooperative task submitted and
 * waited for, the OUT/INOUT contents copied back to the task's host copies,
 * then collect. Every app's run is this (COOP_APP_RUN). coopapps only.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "coop_util.h"

/* After a resume: when every one of `groups` workgroups runs again (the
 * live view, polled), ns from t0; -1 if the task ended first. */
static int64_t regrown(coop_rt *rt, coop_task_id id, unsigned groups, int64_t t0) {
  for (;;) {
    struct coop_rt_live l;
    if (coop_rt_task_live(rt, id, &l) || l.m >= groups) return coop__now_ns() - t0;
    if (coop_rt_wait(rt, id, 0) == 0) return -1;
  }
}

/* Device ticks from -> to in ns (tick ns a tick), or -1 unless ok and the
 * two stamps are in order. */
static int64_t span_ns(int ok, uint64_t from, uint64_t to, double tick) {
  return ok && to >= from ? (int64_t)((double)(to - from) * tick) : -1;
}

/* The pass that passed a suspension on, from its stamps p (scheduler.cl,
 * COOP_PROF_SUSPEND): start p[4], fence p[5], step 2 p[7], the record's
 * words p[8], the pass-on p[1]; a leg whose stamps are out of order (one
 * not taken in that pass) is -1. */
static void in_pass_legs(const uint64_t *p, int prof, double tick, int64_t *legs) {
  static const unsigned at[COOP_APP_SUSPEND_LEGS + 1] = {4, 5, 7, 8, 1};
  for (unsigned k = 0; k < COOP_APP_SUSPEND_LEGS; k++) {
    uint64_t a = p[at[k]], b = p[at[k + 1]];
    legs[k] = span_ns(prof && a && a >= p[4] && b <= p[1], a, b, tick);
  }
}

/* The preempting task of log (app.h, preempt_groups): submitted. */
static int preempt_submit(coop_rt *rt, const struct coop_app_suspend_log *log, coop_task_id *id) {
  struct coop_rt_task_desc d = {
      .kernel = log->preempt_kernel, .groups = log->preempt_groups, .nargs = 2};
  d.args[0] = log->preempt_out;
  d.args[1] = 1u;
  return coop_rt_submit(rt, &d, id);
}

/* ... waited for, its times in *ti, released. */
static int preempt_wait(coop_rt *rt, coop_task_id id, int timeout_ms,
                        struct coop_rt_task_info *ti) {
  int r = coop_rt_wait(rt, id, timeout_ms);
  if (r == 0) r = coop_rt_task_info(rt, id, ti);
  if (r == 0 && ti->state != COOP_TASK_DONE) r = COOP_EFAULT;
  if (r) {
    coop_rt_cancel(rt, id);
    coop_rt_wait(rt, id, -1);
  }
  coop_rt_task_release(rt, id);
  return r;
}

/* Until the task ends: a random pause, a suspension, and if it was
 * suspended, a resume (*id becomes the resumed task). */
static int suspend_resume(coop_rt *rt, coop_task_id *id, const struct coop_app_opts *o,
                          unsigned groups) {
  struct coop_app_suspend_log *log = o->suspend_log;
  for (;;) {
    long us = (long)(rand() % (2 * (int)o->suspend_every_us + 1));
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    uint64_t p0[1] = {0}, pn[1];
    int on_host = log && log->passon_ns; /* prof[0] read even while 0 (none passed on yet) */
    if (on_host) coop_rt_sched_profile(rt, p0, 1);
    int64_t t0 = coop__now_ns(), passon = -1;
    int r = coop_rt_suspend(rt, *id);
    if (r == COOP_ESTATE) return 0; /* it ended */
    if (r) return r;
    coop_task_id pid;
    int preempt = log && log->preempt_groups;
    if (preempt && (r = preempt_submit(rt, log, &pid))) return r;
    /* COOP_PROF_SUSPEND: the pass-on, seen on this clock (100 ms at most) */
    while (on_host && passon < 0 && coop__now_ns() - t0 < 100000000) {
      coop_rt_sched_profile(rt, pn, 1); /* fills pn even while the count is 0 */
      if (pn[0] != p0[0]) passon = coop__now_ns() - t0;
    }
    struct coop_rt_task_info pi = {0};
    if (preempt && (r = preempt_wait(rt, pid, o->timeout_ms, &pi))) return r;
    if ((r = coop_rt_wait(rt, *id, o->timeout_ms))) return r;
    int64_t t1 = coop__now_ns();
    struct coop_rt_task_info ti;
    if ((r = coop_rt_task_info(rt, *id, &ti))) return r;
    if (ti.state != COOP_TASK_SUSPENDED) return 0; /* it ended first */
    if ((r = coop_rt_resume(rt, *id, id))) return r;
    if (o->suspensions) (*o->suspensions)++;
    if (log && log->n < log->cap) {
      log->suspend_ns[log->n] = t1 - t0;
      if (log->left_ns) log->left_ns[log->n] = ti.t_finished ? ti.t_finished - t0 : -1;
      uint64_t p[COOP_APP_PROF_SLOTS];
      int prof = log->reaped_ns && log->last_ns &&
                 coop_rt_sched_profile(rt, p, COOP_APP_PROF_SLOTS) == COOP_APP_PROF_SLOTS && p[1];
      /* the reap that follows the pass-on may come after the host saw the
       * end: waited for (1 ms at most), so that it is this suspension's */
      for (int64_t w0 = coop__now_ns(); prof && p[2] < p[1] && coop__now_ns() - w0 < 1000000;)
        coop_rt_sched_profile(rt, p, COOP_APP_PROF_SLOTS);
      double tick = coop_rt_tick_ns(rt);
      int reaped = prof && p[2] >= p[1];
      if (log->reap_passes) log->reap_passes[log->n] = reaped ? (int64_t)p[6] : -1;
      if (log->reap_longest_ns) log->reap_longest_ns[log->n] = span_ns(reaped, 0, p[9], tick);
      if (log->reap_pass_ns) log->reap_pass_ns[log->n] = span_ns(reaped, 0, p[10], tick);
      if (log->reap_ns) log->reap_ns[log->n] = span_ns(reaped, 0, p[11], tick);
      for (unsigned k = 0; log->long_steps_ns && k < COOP_APP_SUSPEND_STEPS; k++)
        log->long_steps_ns[log->n * COOP_APP_SUSPEND_STEPS + k] =
            span_ns(reaped, 0, (p[12 + k / 2] >> (32 * (k % 2))) & 0xffffffffu, tick);
      if (log->reaped_ns) log->reaped_ns[log->n] = span_ns(prof, p[1], p[2], tick);
      if (log->last_ns) log->last_ns[log->n] = span_ns(prof, p[1], p[3], tick);
      if (log->kill_arrive_ns) log->kill_arrive_ns[log->n] = span_ns(prof, p[1], p[16], tick);
      if (log->kill_held_ns) log->kill_held_ns[log->n] = span_ns(prof, p[1], p[17], tick);
      if (log->kill_out_ns)
        log->kill_out_ns[log->n] = span_ns(prof && p[17] >= p[1], p[17], p[3], tick);
      if (log->passon_ns) log->passon_ns[log->n] = passon;
      if (log->inpass_ns) log->inpass_ns[log->n] = span_ns(prof && p[4], p[4], p[1], tick);
      if (log->legs_ns) in_pass_legs(p, prof, tick, &log->legs_ns[log->n * COOP_APP_SUSPEND_LEGS]);
      if (log->gather_ns) log->gather_ns[log->n] = preempt ? pi.gather_ns : -1;
      if (log->joined) log->joined[log->n] = preempt ? (int64_t)pi.joined : -1;
      if (log->request_gathered_ns)
        log->request_gathered_ns[log->n] = preempt && pi.t_gathered ? pi.t_gathered - t0 : -1;
      log->regrow_ns[log->n++] = regrown(rt, *id, groups, t1);
    }
  }
}

int coop_app_submit_wait(coop_rt *rt, const struct coop_app *a, const struct coop_app_opts *o,
                         unsigned nargs, const uint64_t *args, struct coop_rt_task_info *info) {
  if (nargs == 0 || nargs > COOP_RT_MAX_ARGS || args[0] != o->mode) return COOP_EINVAL;
  int k = coop_rt_kernel_index(rt, a->kernel);
  if (k < 0) return k;
  struct coop_rt_task_desc d = {.kernel = k,
                                .groups = o->groups ? o->groups : coop_rt_workers(rt),
                                .cooperative = 1,
                                .query_barrier = o->query_barrier,
                                .nargs = nargs};
  memcpy(d.args, args, nargs * sizeof *args);
  coop_task_id id;
  int r = coop_rt_submit(rt, &d, &id);
  if (r) return r;
  r = o->suspend_every_us ? suspend_resume(rt, &id, o, d.groups) : 0;
  if (r == 0) r = coop_rt_wait(rt, id, o->timeout_ms);
  if (r) {
    /* still running: cancel, and wait for the cancellation to land so that
     * the caller may free the task's buffers */
    coop_rt_cancel(rt, id);
    coop_rt_wait(rt, id, -1);
  }
  struct coop_rt_task_info ti;
  int ri = coop_rt_task_info(rt, id, &ti);
  coop_rt_task_release(rt, id);
  if (r) return r;
  if (ri) return ri;
  if (info) *info = ti;
  if (ti.state == COOP_TASK_REFUSED) return COOP_EREFUSED;
  if (ti.state == COOP_TASK_CANCELLED) return COOP_ECANCELED;
  if (ti.fault) return COOP_EFAULT; /* a view stopped an access: the output is garbage */
  return 0;
}

int coop_app_task_run(coop_rt *rt, const struct coop_app *a, struct coop_app_task *t,
                      const struct coop_app_opts *o,
                      int (*filled)(void *user, void *buf, size_t size), void *user,
                      struct coop_rt_task_info *info) {
  void *dev[COOP_RT_MAX_ARGS] = {NULL};
  uint64_t args[COOP_RT_MAX_ARGS];
  int r = 0;
  for (unsigned i = 0; i < t->nargs && r == 0; i++) {
    const struct coop_app_arg *g = &t->arg[i];
    if (!g->buf) {
      args[i] = g->value;
      continue;
    }
    if (g->init_len == g->size) /* a small one's data in its guards' copy */
      r = coop_rt_alloc_from(rt, g->size, g->init, &dev[i]);
    else if (!(dev[i] = coop_rt_alloc(rt, g->size))) /* zeroed */
      r = COOP_ENOMEM;
    else if (g->init_len)
      r = coop_rt_arena_copy(rt, dev[i], g->init, g->init_len, 1);
    if (dev[i]) args[i] = coop_rt_buf_arg(rt, dev[i]);
    if (r == 0 && filled) r = filled(user, dev[i], g->size);
  }
  if (r == 0) r = coop_app_submit_wait(rt, a, o, t->nargs, args, info);
  for (unsigned i = 0; i < t->nargs && r == 0; i++)
    if (t->arg[i].buf && (t->arg[i].dir & COOP_APP_OUT))
      r = coop_rt_arena_copy(rt, t->arg[i].host, dev[i], t->arg[i].size, 0);
  for (unsigned i = 0; i < t->nargs; i++) coop_rt_free(rt, dev[i]);
  return r;
}

int coop_app_run_local(const struct coop_app *a, coop_rt *rt, const struct coop_app_input *in,
                       const struct coop_app_opts *o, void **out, struct coop_rt_task_info *info) {
  *out = NULL;
  struct coop_app_task t;
  int r = coop_app_task_prepare(&t, a, in, o, o->groups ? o->groups : coop_rt_workers(rt));
  if (r) return r;
  r = coop_app_task_run(rt, a, &t, o, NULL, NULL, info);
  size_t bytes;
  if (r == 0) r = coop_app_task_collect(&t, in, out, &bytes);
  coop_app_task_free(&t);
  return r;
}
