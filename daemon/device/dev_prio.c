/*
 * dev_prio.c: priority and the slots taken back (docs/daemon.md,
 * "Priority").
 *
 * A cooperative job keeps its slot until it ends, unless it is suspended
 * (docs/scheduler.md, "Suspension": it shrinks to workgroup 0, which saves
 * its state and leaves). Three needs suspend one:
 *  - a waiting cooperative job finds every slot held (DEV_SLOT_FULL) and a
 *    running one has a lower priority: the lowest, newest such is
 *    suspended;
 *  - the same, with no lower priority running, while its user holds fewer
 *    than its share of the slots and another user more: that user's
 *    newest job of the same priority is suspended (the fair share made
 *    real: before, a job started first held its slot for ever), unless
 *    one of that user's jobs resumed less than DEV_SHARE_GAP_NS ago;
 *  - a non-cooperative run needs more workgroups than the workers less one
 *    per running cooperative job (each keeps at least one), and some of
 *    those have a lower priority: the lowest, newest is suspended, one
 *    more each pass until the task fits; the run is `preempting` until it
 *    ends, and no cooperative job below its priority starts or resumes
 *    until then (DEV_SLOT_PRIORITY);
 *  - the same need, of a frame loop's next task, ahead of it: a one-task
 *    job handed back whose next task is expected at next_ns (its
 *    session's cadence, sess_jobs.c) arms a window of DEV_PRE_AHEAD_NS
 *    either side; inside it what that task would suspend is suspended
 *    (the window is "on"), and stays so until the loop's next task is
 *    submitted, whose run then preempts as if it had asked (it ends, they
 *    resume), or until the window ends (they resume). Each loop (its
 *    client's connection: one process may run many) has a window of its
 *    own (struct dev_pre, DEV_PRE_MAX, DEV_PRE_PER_UID a uid): with one
 *    for the device, a
 *    loop's frame, as it ended, replaced another's window before it
 *    opened, and a loop of priority 5 beside one of priority 0 never had
 *    its own (test a_lower_frame_loop_leaves_a_higher_ones_window).
 *    Beside a 60 fps client whose every task needs all the workers, each
 *    task's gather waited for the suspension it asked at its submit: 52
 *    us p50 of a 0.5 ms frame on the H200 (bench/RESULTS.md, "A kernel
 *    reload in place on the GPU"). The cost: the suspended job is off the
 *    device up to DEV_PRE_AHEAD_NS sooner per task (a lapsed window's
 *    whole width when the guess is wrong). While the window is open no
 *    cooperative job below that priority starts, not even one taken
 *    before whose buffers were still filling: started in the window, it
 *    would be suspended again by the very task, which would wait for that
 *    (docs/daemon.md, "Priority").
 * A suspension in flight counts as done: nothing more is suspended for the
 * same need until it lands (a kernel that never shrinks is never
 * suspended: its slot comes back when it ends). A suspended job's task is
 * released, its state kept in a memfd, its buffers where they were; its
 * job waits in coop_wait, first, and takes a slot again by the same rules
 * as any waiting job, higher priorities first. Only jobs of strictly lower
 * priority are suspended for a priority, and only of the same priority
 * for a share. Device thread only.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"
#include "trace.h"

/* A suspension not done this long after it was asked is not counted on
 * to free a slot: a kernel whose step takes seconds (a hostile input, a
 * spinning kernel) leaves only when that step ends, and while its run
 * counted as leaving no other run was suspended for anyone. */
#define DEV_SUSPEND_STALE_NS 200000000L

/* Cooperative runs not on their way out (suspending, asked lately). */
static unsigned coop_staying(const struct dev *d) {
  unsigned n = 0;
  int64_t now = coop__now_ns();
  for (const struct run *r = d->runs; r; r = r->next)
    n += dev__is_coop(r->j) && (!r->suspending || now - r->suspend_asked_at > DEV_SUSPEND_STALE_NS);
  return n;
}

/* Whether a cooperative job of uid resumed here less than
 * DEV_SHARE_GAP_NS ago: the share takes none of uid's slots back until
 * then, and the job that waits for one waits that long at most (a
 * priority may take them). Per user, not per job: skipping only the job
 * that resumed had the user's next newest suspended instead, and each of
 * its jobs in turn, once a gap each. */
static int resumed_lately(const struct dev *d, uint32_t uid) {
  int64_t now = coop__now_ns();
  for (const struct run *r = d->runs; r; r = r->next)
    if (r->j->uid == uid && r->resumed_at && now - r->resumed_at < DEV_SHARE_GAP_NS) return 1;
  return 0;
}

/* The run to suspend for a need of priority p: the lowest priority below
 * p (same = 1: equal to p, of a user holding more than share, none of
 * whose jobs resumed lately), the newest started among equals; NULL:
 * none. */
static struct run *victim(struct dev *d, int32_t p, int same, unsigned share) {
  struct run *best = NULL;
  for (struct run *r = d->runs; r; r = r->next) {
    const struct job *j = r->j;
    if (!dev__may_suspend(r)) continue;
    if (same ? j->priority != p || dev__coop_running(d, &j->uid) <= share ||
                   resumed_lately(d, j->uid)
             : j->priority >= p)
      continue;
    if (!best || j->priority < best->j->priority ||
        (j->priority == best->j->priority && r->t0 > best->t0))
      best = r;
  }
  return best;
}

void dev__suspend(struct dev *d, struct run *r, int32_t p, const char *why) {
  if (dp_suspend(d->rt, r->task[0])) return; /* the next pass tries again */
  r->suspending = 1;
  r->suspend_asked_at = coop__now_ns();
  atomic_store(&r->j->suspended_for, p); /* read only once suspended is 1 */
  log_info("job %llu (%s, uid %u, priority %d): suspending it: %s", (unsigned long long)r->j->id,
           r->j->kernel, r->j->uid, (int)r->j->priority, why);
}

/* The first waiting job that finds every slot held, highest priority
 * first (a periodic one whose user runs another waits for that: a job
 * suspended for it would find its slot untaken, and be suspended again
 * each pass; one on its way to another device is not here to run).
 * `suspended`: a suspended one too. It has its priority: one moved here
 * by MIGRATE (or by itself, or back from a checkpoint) waited behind a
 * job of lower priority for as long as that one ran. It waits for its own
 * turn by the share, not to suspend others: a job suspended for its
 * user's share that took a slot back by the same rule would have the
 * other user's suspended again, back and forth. */
static struct job *first_blocked(struct dev *d, int suspended) {
  if (coop_staying(d) < dev__coop_slots(d)) return NULL; /* a slot is, or will be, free */
  struct job *best = NULL;
  for (struct job *j = d->coop_wait_head; j; j = j->dev_next)
    if ((suspended || !j->dev_run) && !atomic_load(&j->cancel) && !atomic_load(&j->move_to) &&
        !dev__prio_blocked(d, j->priority) && !dev__periodic_held(d, j) &&
        (!best || j->priority > best->priority))
      best = j;
  return best;
}

/* A slot for the first blocked waiting job, by priority or by share. */
static void preempt_for_slot(struct dev *d) {
  struct job *w = first_blocked(d, 1);
  if (!w) return;
  struct run *v = victim(d, w->priority, 0, 0);
  if (v) {
    char why[96];
    snprintf(why, sizeof why, "job %llu of priority %d waits for a cooperative slot",
             (unsigned long long)w->id, (int)w->priority);
    dev__suspend(d, v, w->priority, why);
    return;
  }
  if (!(w = first_blocked(d, 0))) return;
  unsigned share = dev__coop_share(d);
  if (dev__coop_running(d, &w->uid) >= share) return;
  v = victim(d, w->priority, 1, share);
  if (v)
    dev__suspend(d, v, DEV_FOR_SHARE,
                 "its user holds more than its share of the cooperative slots");
}

/* The run to suspend for a non-cooperative task of priority p on `groups`
 * workgroups, which it cannot get while every cooperative job keeps one;
 * NULL: it can, or none may be suspended for it. */
static struct run *lacking(struct dev *d, uint32_t groups, int32_t p) {
  if (groups + coop_staying(d) <= atomic_load(&d->workers)) return NULL;
  return victim(d, p, 0, 0);
}

/* Workers for a non-cooperative run of higher priority that cannot get
 * them while every cooperative job keeps one. */
static void preempt_run(struct dev *d, struct run *r) {
  struct job *j = r->j;
  if (dev__is_coop(j) || atomic_load(&j->cancel)) return;
  struct run *v = lacking(d, j->groups, j->priority);
  if (!v) return;
  unsigned workers = atomic_load(&d->workers);
  r->preempting = 1;
  char why[96];
  snprintf(why, sizeof why, "job %llu of priority %d needs %u of the %u workers",
           (unsigned long long)j->id, (int)j->priority, j->groups, workers);
  TRACE_STAMP(j, preempt);
  dev__suspend(d, v, j->priority, why);
}

static void preempt_for_task(struct dev *d) {
  for (struct run *r = d->runs; r; r = r->next)
    if (r->ninflight) preempt_run(d, r);
}

/* Whether window w (suspending ahead) is open at now. */
static int pre_open(const struct dev *d, const struct dev_pre *w, int64_t now) {
  return w->at && now >= w->at - d->pre_ahead_ns && now < w->at + d->pre_ahead_ns;
}

/* A window ended or met its task. */
static void pre_clear(struct dev_pre *w) {
  w->at = 0;
  w->on = 0;
}

/* Whether j is of the loop that window w is for (a task of its client). */
static int pre_loop(const struct dev_pre *w, const struct job *j) {
  return w->at && w->conn == j->conn;
}

void dev__preempt_before_submit(struct dev *d, struct run *r) {
  if (!d->rt || d->swap_now || d->stop_now || r->ninflight) return;
  const struct job *j = r->j;
  int64_t now = coop__now_ns();
  for (struct dev_pre *w = d->pre; w < d->pre + DEV_PRE_MAX && !dev__is_coop(j); w++) {
    if (!pre_loop(w, j)) continue;
    /* the task the window was for: what was suspended ahead for it, and
     * what the open window held back, wait for this run, as for its own */
    if (j->priority >= w->priority && (w->on || pre_open(d, w, now))) r->preempting = 1;
    pre_clear(w);
  }
  preempt_run(d, r);
}

/* The entry for j's window: its loop's own (NULL while that one holds
 * a suspension: its task ends it), else a free one, else, where j's user
 * has DEV_PRE_PER_UID already, the one of them expected last, else the
 * one of lowest priority if below j's; NULL: none for j. */
static struct dev_pre *pre_slot(struct dev *d, const struct job *j) {
  struct dev_pre *free = NULL, *mine = NULL, *lowest = NULL;
  unsigned of_uid = 0;
  for (struct dev_pre *w = d->pre; w < d->pre + DEV_PRE_MAX; w++) {
    if (pre_loop(w, j)) return w->on ? NULL : w;
    if (!w->at) {
      if (!free) free = w;
      continue;
    }
    if (w->uid == j->uid && (of_uid++, !mine || w->at > mine->at)) mine = w;
    if (!w->on && (!lowest || w->priority < lowest->priority)) lowest = w;
  }
  if (of_uid >= DEV_PRE_PER_UID) return mine && !mine->on ? mine : NULL;
  if (free) return free;
  return lowest && lowest->priority < j->priority ? lowest : NULL;
}

void dev__preempt_arm(struct dev *d, const struct job *j) {
  if (dev__is_coop(j) || dev__periodic(j) || !j->next_ns) return;
  if (atomic_load(&j->state) != COOP_JOB_DONE) return; /* a frame that failed or was cancelled */
  struct dev_pre *w = pre_slot(d, j);
  if (!w) return;
  *w = (struct dev_pre){.at = j->next_ns,
                        .priority = j->priority,
                        .groups = j->groups,
                        .uid = j->uid,
                        .conn = j->conn};
}

/* One window's pass (dev__preempt_ahead). */
static void pre_pass(struct dev *d, struct dev_pre *w, int64_t now, int64_t *wake) {
  int64_t from = w->at - d->pre_ahead_ns, until = w->at + d->pre_ahead_ns;
  if (now >= until) { /* it did not come: what waited for it goes on */
    if (w->on)
      log_debug("%s: the task expected of a frame loop of priority %d did not come", d->logname,
                (int)w->priority);
    *wake = now; /* the next pass resumes or starts them (dev__pump_coop_wait, dev__step_run) */
    pre_clear(w);
    return;
  }
  if (now < from) {
    if (from < *wake) *wake = from;
    return;
  }
  if (until < *wake) *wake = until;
  if (!d->rt || d->swap_now || d->stop_now) return;
  struct run *v = lacking(d, w->groups, w->priority);
  if (!v) return;
  char why[128];
  snprintf(why, sizeof why,
           "ahead of a task of priority %d on %u workers, expected of a frame loop in %.0f us",
           (int)w->priority, w->groups, (double)(w->at - now) / 1e3);
  dev__suspend(d, v, w->priority, why);
  w->on = 1;
}

void dev__preempt_ahead(struct dev *d, int64_t now, int64_t *wake) {
  for (struct dev_pre *w = d->pre; w < d->pre + DEV_PRE_MAX; w++)
    if (w->at) pre_pass(d, w, now, wake);
}

void dev__preempt_due(const struct dev *d, int64_t now, int64_t *wake) {
  for (const struct dev_pre *w = d->pre; w < d->pre + DEV_PRE_MAX; w++) {
    int64_t from = w->at - d->pre_ahead_ns;
    if (w->at && now < from && from < *wake) *wake = from;
  }
}

void dev__preempt(struct dev *d) {
  if (!d->rt || d->swap_now || d->stop_now) return;
  preempt_for_task(d);
  preempt_for_slot(d);
  dev__room_preempt(d);
}

int dev__prio_blocked(const struct dev *d, int32_t p) {
  /* the window open, whether or not it found a job to suspend: a job that
   * started in it (one filling its buffers, or queued just then) would be
   * suspended again by the very task it was opened for, whose gather would
   * then wait for that suspension (the top of this file) */
  int64_t now = coop__now_ns();
  for (const struct dev_pre *w = d->pre; w < d->pre + DEV_PRE_MAX; w++)
    if (w->at && w->priority > p && (w->on || pre_open(d, w, now))) return 1;
  for (const struct run *r = d->runs; r; r = r->next)
    if (r->preempting && r->j->priority > p) return 1;
  return 0;
}

int dev__suspend_out(struct dev *d, struct run *r) {
  struct job *j = r->j;
  dev__ckpt_drop(d, r); /* taken again at the next checkpoint after it resumes */
  r->state_fd = memfd_create("coopd-suspended-state", MFD_CLOEXEC);
  int e = r->state_fd < 0 ? COOP_ENOMEM : dp_saved(d->rt, r->task[0], r->state_fd);
  r->suspending = 0;
  if (e) {
    if (r->state_fd >= 0) close(r->state_fd);
    r->state_fd = -1;
    dev__fail(j, e, "could not suspend it for a job of higher priority: %s", coop_strerror(e));
    return -1;
  }
  dev__segment_end(d, r);
  dp_task_release(d->rt, r->task[0]);
  r->ninflight = 0;
  r->suspended_at = coop__now_ns();
  atomic_store(&j->suspended, 1);
  j->dev_run = r;
  dev__coop_wait_push_front(d, j);
  log_info("job %llu (%s): suspended", (unsigned long long)j->id, j->kernel);
  return 0;
}

/* A run taken from coop_wait runs on (dev_slots.c put it on d->runs with
 * `resuming`): its task from the saved state. 0, or the job failed. */
int dev__resume_suspended(struct dev *d, struct run *r) {
  struct job *j = r->j;
  r->resuming = 0;
  atomic_store(&j->suspended, 0);
  /* the watchdog counts the time it ran, not the time it waited */
  if (r->started_ns) r->started_ns += coop__now_ns() - r->suspended_at;
  int out = r->carry_fd >= 0; /* its buffers come back from a memfd */
  int e = dev__resume_run(d, r, DEV_RESUME_MAY_WAIT | DEV_RESUME_MAY_LOSE);
  if (e == DEV_RESUME_AGAIN) return e;
  if (e == DEV_ROOM_WAIT) { /* back to wait, suspended, until runs end */
    r->room_wait = 1;
    r->room_seq = d->room_seq;
    r->suspended_at = coop__now_ns();
    atomic_store(&j->suspended_for, DEV_FOR_ROOM_BACK);
    atomic_store(&j->suspended, 1);
    j->dev_run = r;
    dev__coop_wait_push_front(d, j);
    log_info("job %llu (%s): its buffers found no room in the device arena to resume: it waits",
             (unsigned long long)j->id, j->kernel);
    return e;
  }
  if (e == DEV_RESUME_LOST) return e; /* in d->runs for the restart */
  if (e) return -1;
  r->resumed_at = coop__now_ns();           /* DEV_SHARE_GAP_NS */
  if (out) r->room_back_at = r->resumed_at; /* dev_room.c: DEV_ROOM_GAP_NS */
  r->room_wait = 0;
  log_info("job %llu (%s): resumed", (unsigned long long)j->id, j->kernel);
  return 0;
}

void dev__drop_suspended(struct dev *d, struct job *j) {
  struct run *r = j->dev_run;
  j->dev_run = NULL;
  atomic_store(&j->suspended, 0);
  if (r->state_fd >= 0) close(r->state_fd);
  r->state_fd = -1;
  dev__carry_drop(d, r);
  dev__finish_job(d, r); /* CANCELLED unless it failed; its buffers back */
  dev__run_free(r);
}

void dev__unsuspend_lost(struct dev *d) {
  for (struct job **p = &d->coop_wait_head; *p;) {
    struct job *j = *p;
    struct run *r = j->dev_run;
    if (!r || dev__carried(r)) { /* carried: its buffers are elsewhere, not lost */
      p = &j->dev_next;
      continue;
    }
    dev__coop_wait_remove(d, p);
    j->dev_run = NULL;
    atomic_store(&j->suspended, 0);
    r->lost_from = r->suspended_at;
    close(r->state_fd);
    r->state_fd = -1;
    r->next = d->runs;
    d->runs = r;
  }
}
