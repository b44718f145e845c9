/*
 * dev_watch.c: the watchdog, and restarting a device.
 *
 * A workgroup cannot be preempted: a kernel that
 * reaches no offer_kill or resizing barrier keeps its workgroups until it
 * returns by itself. What the device thread does about it:
 *   a non-cooperative task running longer than [jobs] task_max_ms fails
 *     its job with COOP_ETIMEDOUT and the job is cancelled: such tasks are
 *     short by design, and one that ran on (render with reps = 2^32 - 1,
 *     detached) held its workers until coopd stopped;
 *   a task waiting for workgroups longer than [jobs] gather_budget_ms fails
 *     with COOP_EHUNG, its message naming the jobs that hold the workers
 *     (holders(): the caller's own by id and kernel, another user's only as
 *     "another user's job"), and is cancelled (it leaves the scheduler's
 *     queue);
 *   a job cancelled (by its client, watchdog_ms, a stop or a reload) whose
 *     tasks still run hang_ms later fails with COOP_EHUNG, and the device
 *     is restarted: its device process (devproc.h) is killed, every other
 *     job on it fails with COOP_ELOST, and a new one is built and launched.
 *     The same happens when the device process dies by itself (a crash in a
 *     kernel on PoCL, the driver). Jobs not yet on the device wait.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

/* The latest event, for STATS: fmt in full for root and for uid (whose
 * job it names), public (no job id, kernel or uid of another user) for
 * every other user, as ENOJOB hides another user's jobs. */
static void watch_event(struct dev *d, uint32_t uid, const char *public, const char *fmt, ...) {
  char b[COOP_WIRE_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  log_warn("watchdog: %s", b);
  pthread_mutex_lock(&d->mu);
  memcpy(d->watch_last, b, sizeof b);
  snprintf(d->watch_public, sizeof d->watch_public, "%s", public);
  d->watch_uid = uid;
  pthread_mutex_unlock(&d->mu);
}

/* Workers owned now by any of tasks[0..n), from the scheduler's view. */
static unsigned count_owned(const coop_task_id *owner, unsigned nwg, const coop_task_id *tasks,
                            unsigned n) {
  unsigned c = 0;
  for (unsigned i = 0; i < nwg; i++)
    for (unsigned t = 0; t < n; t++) c += owner[i] && owner[i] == tasks[t];
  return c;
}

/* Who holds the workers, in words, for a task of uid's that waited too
 * long: cooperative jobs first (they were asked to give workers back and
 * did not reach offer_kill), then non-cooperative tasks (which keep theirs
 * until they end). A job uid may not see (jobs.h, job_may_see) is "another
 * user's job", with no id or kernel: STATUS, WAIT and CANCEL answer ENOJOB
 * for it so as not to tell who runs what, and this message must not
 * either. */
static void holders(struct dev *d, uint32_t uid, char *out, size_t len) {
  coop_task_id *owner = d->wg_owner;
  int n = dp_view(d->rt, owner, d->wg_resv, COOP_WIRE_MAX_WG);
  unsigned nwg = n > 0 ? (unsigned)n : 0;
  size_t at = 0;
  out[0] = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (struct run *r = d->runs; r; r = r->next) {
      int coop = !!(r->j->flags & COOP_SUBMIT_COOPERATIVE);
      unsigned c = count_owned(owner, nwg, r->task, r->ninflight);
      if (!c || coop != (pass == 0) || at >= len) continue;
      /* A cooperative kernel holding more than one workgroup per task was
       * asked for them and reached no offer_kill or resizing barrier; at
       * one it is at its minimum, which the scheduler never takes. */
      const char *why = c > r->ninflight ? "cooperative, did not offer kills when asked"
                                         : "cooperative, at its last workgroup";
      const char *what = coop ? why : "non-cooperative, still running";
      if (job_may_see(uid, r->j))
        at += (size_t)snprintf(out + at, len - at, "%sjob %llu (%s, %s) %u", at ? "; " : "",
                               (unsigned long long)r->j->id, r->j->kernel, what, c);
      else
        at += (size_t)snprintf(out + at, len - at, "%sanother user's job (%s) %u", at ? "; " : "",
                               what, c);
    }
  }
  if (!out[0]) snprintf(out, len, "no job (the scheduler is serving earlier tasks)");
}

/* A task of r waited gather_budget_ms for its workgroups: the job fails. */
static void gather_timeout(struct dev *d, struct run *r, int64_t waited_ns) {
  struct job *j = r->j;
  char who[200];
  holders(d, j->uid, who, sizeof who);
  dev__fail(j, COOP_EHUNG, "waited %lld ms for %u workgroups; held by %s",
            (long long)(waited_ns / 1000000), j->groups, who);
  atomic_store(&j->cancel, 1);
  atomic_fetch_add(&d->gather_timeouts, 1);
  watch_event(d, j->uid, "a task failed: it waited too long for workgroups",
              "job %llu (%s) failed: %s", (unsigned long long)j->id, j->kernel, j->message);
}

/* r was cancelled hang_ms ago and still has tasks on the device: no way
 * to take its workgroups back but to end the device process. Its job fails
 * with EHUNG; dev_main then restarts the device (restart_device). */
static void declare_hung(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  atomic_fetch_add(&d->hung, 1);
  if (atomic_load(&j->state) != COOP_JOB_FAILED) {
    dev__fail(j, COOP_EHUNG,
              "kernel %s still ran %lld ms after its cancellation: it reached no offer_kill or "
              "resizing barrier; coopd restarted the device to take its workgroups back",
              j->kernel, (long long)((now - r->cancel_seen) / 1000000));
  }
  if (!d->restart_why[0]) {
    snprintf(d->restart_why, sizeof d->restart_why,
             "job %llu (%s) still ran %u ms after its cancellation", (unsigned long long)j->id,
             j->kernel, d->cfg->hang_ms);
    d->hung_job = j->id;
  }
}

/* A non-cooperative task of r (slot) has run past [jobs] task_max_ms: the
 * job fails with ETIMEDOUT and is cancelled. render polls its cancellation
 * and returns at its next row; a kernel that does not is declared hung
 * hang_ms later, as any cancelled one (its job keeps this message). The
 * bound is each task's: a periodic job's instances have it one by one,
 * never the series as a whole. */
static void task_overran(struct dev *d, struct run *r, unsigned slot, int64_t ran_ns) {
  struct job *j = r->j;
  unsigned max = d->cfg->task_max_ms;
  log_warn(
      "job %llu (%s, uid %u): a task ran %lld ms, past the [jobs] task_max_ms bound of %u "
      "ms: cancelling",
      (unsigned long long)j->id, j->kernel, j->uid, (long long)(ran_ns / 1000000), max);
  if (dev__periodic(j))
    dev__fail(j, COOP_ETIMEDOUT,
              "instance %u of kernel %s ran past the [jobs] task_max_ms bound of %u ms: the job "
              "was cancelled (a non-cooperative task must be short; see docs/daemon.md)",
              r->task_inst[slot], j->kernel, max);
  else
    dev__fail(j, COOP_ETIMEDOUT,
              "kernel %s ran past the [jobs] task_max_ms bound of %u ms: the job was cancelled "
              "(a non-cooperative task must be short; see docs/daemon.md)",
              j->kernel, max);
  atomic_store(&j->cancel, 1);
}

/* Whether r, cancelled at r->cancel_seen, may be hung by now: one of its
 * tasks in flight runs (or its state cannot be read), hang_ms after the
 * cancellation. A task still queued in the megakernel cannot hang: the
 * scheduler ends it CANCELLED when it reaches the head, and a head that
 * cannot gather fails its gather_budget_ms. Such a run is called hung
 * only past that (2 hang_ms + gather_budget_ms): then the megakernel
 * itself no longer serves its queue. One that ended since the poll is
 * not hung (the next poll records it). */
static int may_be_hung(struct dev *d, const struct run *r, int64_t now) {
  int64_t hang = (int64_t)d->cfg->hang_ms * 1000000, since = now - r->cancel_seen;
  if (!d->cfg->hang_ms || !r->ninflight || since <= hang) return 0;
  if (since > 2 * hang + (int64_t)d->cfg->gather_budget_ms * 1000000) return 1;
  for (unsigned i = 0; i < r->ninflight; i++) {
    struct coop_rt_task_info ti;
    if (dp_task_info(d->rt, r->task[i], &ti) != 0 || ti.state == COOP_TASK_RUNNING ||
        ti.state == COOP_TASK_SUSPENDED)
      return 1;
  }
  return 0;
}

/* The watchdog's look at one run. */
void dev__watch_run(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  if (atomic_load(&j->cancel)) {
    if (!r->cancel_seen) r->cancel_seen = now;
    /* a task cancelled while queued (its gather's timeout, another user's
     * tasks ahead of it) was declared hung hang_ms later: the device
     * restarted, every job on it lost, its user held back */
    if (may_be_hung(d, r, now)) declare_hung(d, r, now);
    return;
  }
  if (d->cfg->task_max_ms && !(j->flags & COOP_SUBMIT_COOPERATIVE))
    for (unsigned i = 0; i < r->ninflight; i++)
      if (r->task_ran[i] && now - r->task_ran[i] > (int64_t)d->cfg->task_max_ms * 1000000) {
        task_overran(d, r, i, now - r->task_ran[i]);
        return;
      }
  if (!d->cfg->gather_budget_ms) return;
  for (unsigned i = 0; i < r->ninflight; i++) {
    struct coop_rt_task_info ti;
    if (dp_task_info(d->rt, r->task[i], &ti) == 0 && ti.state == COOP_TASK_PENDING &&
        now - ti.t_submitted > (int64_t)d->cfg->gather_budget_ms * 1000000) {
      gather_timeout(d, r, now - ti.t_submitted);
      break;
    }
  }
}

void dev_watch_get(struct dev *d, uint32_t viewer, struct dev_watch *w) {
  w->gather_timeouts = atomic_load(&d->gather_timeouts);
  w->hung = atomic_load(&d->hung);
  pthread_mutex_lock(&d->mu);
  int all = viewer == 0 || viewer == d->watch_uid;
  memcpy(w->last, all ? d->watch_last : d->watch_public, sizeof w->last);
  pthread_mutex_unlock(&d->mu);
  /* After the event, not before: a restart sets rt before its "restarted"
   * event (under mu), so a caller that sees the event sees no lost
   * workers. Read first, rt could be from before the relaunch and the
   * event from after (lost_workers 2 beside "restarted": a test saw it
   * under load, 2026-11-25). rt itself is the device thread's: this
   * thread reads rt_up, which the device thread stores (release) with
   * each change of rt. The mutex above already orders the event after
   * the store; acquire keeps that so without it. */
  int up = atomic_load_explicit(&d->rt_up, memory_order_acquire);
  w->lost_workers = up ? 0 : atomic_load(&d->workers); /* while it restarts */
}

/* A one-task job whose task no workgroup ever touched (the last poll saw it
 * waiting): nothing of it ran, so after a restart it can run as if new. */
static int never_gathered(const struct run *r) {
  if (dev__periodic(r->j) || r->j->error || r->released > 1 || r->lost_running) return 0;
  if (r->suspended_at) return 0; /* it ran before its suspension (dev_prio.c) */
  for (unsigned i = 0; i < r->ninflight; i++)
    if (r->task_seen[i] & (1u << COOP_EV_GATHERED)) return 0;
  return 1;
}

/* A job the restart took that can run again from the start, as if new:
 * one task (not periodic), not the cause, not cancelled or failed, its
 * buffers only inputs and outputs (an INOUT buffer's arena copy may have
 * been half written, and its input is gone with the arena), and not yet
 * run again DEV_MAX_RERUNS times (a job that crashes its device itself
 * must not restart it for ever; restarts another job caused are not
 * counted, dev__restart_charged). Its inputs are still the client's. */
int dev__runs_again(const struct dev *d, const struct run *r) {
  const struct job *j = r->j;
  if (j->id == d->hung_job || dev__periodic(j) || j->error || r->released > 1 ||
      atomic_load(&j->cancel) || j->reruns >= DEV_MAX_RERUNS)
    return 0;
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF &&
        (j->args[i].dir == COOP_BUF_INOUT || j->args[i].devbuf_id)) /* a device buffer is lost */
      return 0;
  return 1;
}

int dev__restart_charged(const struct dev *d, const struct job *j) {
  return d->hung_job == 0 || d->hung_job == j->id;
}

/* The result fields a run fills in, back to a new job's. */
static void forget_run(const struct dev *d, struct job *j) {
  memset(&j->t, 0, sizeof j->t);
  j->t.gather_ns = j->t.exec_ns = -1;
  j->m_initial = j->m_min = j->m_max = j->kills = j->forks = j->resizes = 0;
  j->misses = 0;
  j->reruns += dev__restart_charged(d, j);
}

/* The user whose job (hung, the run that caused the restart) is held back
 * (dev_hold.c); note says so, for the watchdog's event ("" if no job
 * caused it). */
static void hold_culprit(struct dev *d, const struct run *hung, const char *label, char *note,
                         size_t len) {
  note[0] = '\0';
  if (!hung || !d->cfg->restart_hold_ms) return; /* [jobs] restart_hold_ms = 0: no hold */
  const struct job *j = hung->j;
  int64_t ms = dev__hold(d, j->uid, coop__now_ns());
  unsigned n = dev__hold_restarts(d, j->uid);
  log_warn("%s: uid %u caused %u restart%s (job %llu, %s): its jobs are held back for %lld ms",
           label, j->uid, n, n == 1 ? "" : "s", (unsigned long long)j->id, j->kernel,
           (long long)ms);
  snprintf(note, len, "; uid %u held back %lld ms (restart %u it caused)", j->uid, (long long)ms,
           n);
}

/* Jobs that run again after a restart during a reload, to the front of
 * the queue, which the swap keeps until the new set runs. */
static void requeue_front(struct dev *d, struct job *again) {
  pthread_mutex_lock(&d->mu);
  while (again) {
    struct job *j = again;
    again = j->dev_next;
    j->dev_next = d->in_head;
    d->in_head = j;
    if (!d->in_tail) d->in_tail = j;
  }
  pthread_mutex_unlock(&d->mu);
}

/* The device process died, or a hung kernel made dev_main ask for this:
 * kill it, fail every job that was on it (ELOST; the hung one keeps its
 * EHUNG), then build and launch a new one with the same kernels. Jobs not
 * yet on the device (queued, waiting for a cooperative slot) stay and run
 * on the new one. */
void dev__restart(struct dev *d) {
  char why[300];
  if (d->restart_why[0])
    snprintf(why, sizeof why, "%s", d->restart_why);
  else
    snprintf(why, sizeof why, "its device process %s", d->rt ? dp_death(d->rt) : "is gone");
  dev__unsuspend_lost(d); /* suspended jobs' buffers were in it too */
  pthread_mutex_lock(&d->mu);
  int inplace = d->swapping && d->swap_inplace && !d->swap_rebuilt;
  pthread_mutex_unlock(&d->mu);
  while (inplace && d->carried) { /* so were the buffers of those a reload in place carries */
    struct run *r = d->carried;
    d->carried = r->next;
    r->next = d->runs;
    d->runs = r;
  }
  unsigned nlost = 0, nagain = 0, nckpt = 0;
  for (struct run *r = d->runs; r; r = r->next) {
    int ckpt = !never_gathered(r) && !dev__ckpt_refused(d, r);
    int again = never_gathered(r) || ckpt || dev__runs_again(d, r);
    nlost += r->j->id != d->hung_job && !again;
    nagain += again && !never_gathered(r) && !ckpt;
    nckpt += ckpt;
  }
  /* what clients read says "the device" where coopd has one; the log
   * names it by its number, as every device line does */
  char label[32];
  snprintf(label, sizeof label, d->index < 0 ? "the device" : "device %u", d->place);
  log_error(
      "%s: %s: restarting it (%u other jobs lost, %u to run again, %u to resume from a "
      "checkpoint)",
      d->logname, why, nlost, nagain, nckpt);
  const struct run *hung = NULL; /* the run whose job caused it, if one did */
  for (const struct run *r = d->runs; r; r = r->next)
    if (r->j->id == d->hung_job) hung = r;
  char held[96];
  hold_culprit(d, hung, d->logname, held, sizeof held);
  /* what users other than the culprit's (and root) may read of why */
  uint32_t culprit = hung ? hung->j->uid : UINT32_MAX;
  char pub_why[300], pub[COOP_WIRE_TEXT_MAX];
  snprintf(pub_why, sizeof pub_why, "%s",
           culprit == UINT32_MAX ? why : "another user's job still ran after its cancellation");
  snprintf(pub, sizeof pub, "%s restarted: %.150s", label, pub_why);
  if (d->rt) dp_kill(d->rt);
  d->rt = NULL;
  atomic_store_explicit(&d->rt_up, 0, memory_order_release); /* dev_watch_get says why */
  d->parked = 0;
  atomic_store(&d->parked_pub, 0);
  struct job *again = NULL; /* jobs that never got a workgroup: run them anew */
  int64_t now = coop__now_ns();
  while (d->runs) {
    struct run *r = d->runs;
    struct job *j = r->j;
    d->runs = r->next;
    for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0; /* the arena is gone */
    dev__ckpt_forget(r);                                        /* its snapshot too */
    if (r->state_fd >= 0) close(r->state_fd); /* a suspension's state: no task to resume */
    if (r->carry_fd >= 0) close(r->carry_fd);
    r->state_fd = r->carry_fd = -1;
    int fresh = never_gathered(r);
    if (!fresh && dev__ckpt_restore(d, r, now)) continue; /* back in coop_wait */
    if (fresh || dev__runs_again(d, r)) {
      if (!fresh) forget_run(d, j);
      atomic_store(&j->state, COOP_JOB_QUEUED);
      dev__run_free(r);
      j->dev_next = again;
      again = j;
      continue;
    }
    if (j->error != COOP_EHUNG) {
      int mine = j->uid == culprit || j->uid == 0 || culprit == UINT32_MAX;
      char unused[160] = "";
      if (r->ckpt_state_fd >= 0)
        snprintf(unused, sizeof unused, "; its last checkpoint was not used: %s",
                 dev__ckpt_refused(d, r));
      dev__fail(j, COOP_ELOST, "the job was lost: coopd restarted %s (%.100s)%s; submit it again",
                label, mine ? why : pub_why, unused);
    }
    r->ninflight = 0;
    dev__finish_job(d, r);
    dev__run_free(r);
  }
  d->restart_why[0] = '\0';
  d->hung_job = 0;
  d->room_freed = 1; /* a new arena: the jobs waiting for room try it */
  d->room_seq++;
  if (d->stop_now) { /* closing anyway: what would have run again is cancelled */
    while (again) {
      struct job *j = again;
      again = j->dev_next;
      dev__cancel_queued(d, j, "cancelled"); /* stop_now: "the daemon is shutting down" */
    }
    return;
  }
  pthread_mutex_lock(&d->mu);
  int swap = d->swapping && d->swap_rt;
  pthread_mutex_unlock(&d->mu);
  if (swap) {
    /* A reload waits to swap (device.c, do_swap): its new megakernel is
     * built, so the device comes back with it rather than with the old set
     * built again (seconds) and then replaced. The jobs to run again go to
     * the front of the queue, which the swap keeps until the new set runs,
     * and each is resolved there by name. */
    log_info("%s: the reload's new megakernel replaces the one killed", d->logname);
    watch_event(d, culprit, pub, "%s restarted: %.200s%s", label, why, held);
    requeue_front(d, again);
    return;
  }
  /* A reload in place waits to swap: its set was built in the process
   * that is gone, so the new one is built with it (the swap then only
   * adopts it: swap_rebuilt), and what runs again waits for the swap, as
   * above. */
  struct dp *rt = NULL;
  char err[1024];
  const struct kset *ks = d->ks;
  if (inplace) {
    pthread_mutex_lock(&d->mu);
    ks = d->swap_ks;
    pthread_mutex_unlock(&d->mu);
  }
  int e = dp_build(&rt, d->cfg, d->index, ks, err, sizeof err);
  if (e == 0 && (e = dev__launch(d, rt, err, sizeof err)) != 0) dp_close(rt, DP_CLOSE_MS);
  if (e) {
    snprintf(d->broken, sizeof d->broken, "restart after %.200s: %.250s", why, err);
    log_error("the device is unavailable: %s", d->broken);
  }
  if (inplace && e == 0) {
    d->swap_rebuilt = 1;
    log_info("%s: the reload's new kernel set is built into the new device process", d->logname);
  }
  watch_event(d, culprit, pub, "%s restarted: %.200s%s", label, why, held);
  if (inplace) {
    requeue_front(d, again);
    return;
  }
  while (again) { /* their IN data is still the client's (memfd or inline copy) */
    struct job *j = again;
    again = j->dev_next;
    j->dev_next = NULL;
    dev__start_job(d, j);
  }
}
