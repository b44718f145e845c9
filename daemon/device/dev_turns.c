/*
 * dev_turns.c: a user's non-cooperative jobs in turn with other users'.
 * The megakernel serves its task queue in order (docs/scheduler.md), and a
 * non-cooperative job's task goes there when the device thread starts it:
 * a user who submitted a flood of them (up to [limits] max_jobs_per_uid,
 * each up to [jobs] task_max_ms) had every other user's task queued
 * behind all of them (a 20 ms render waited 0.9 s behind 60 others on
 * PoCL). So a user runs at most [jobs] tasks_per_uid non-cooperative jobs
 * on a device at once (from their start, staging included, to their end;
 * a periodic job counts as one); its next ones wait here, in order, and
 * start as those end, and another user's task waits behind at most that
 * many of each other user's. Those jobs together also hold at most
 * DEV_TURN_DEPTH megakernels' worth of workgroups (a user's first one
 * always starts): four renders of every worker kept four whole-device
 * tasks queued ahead of another user's task or cooperative job, where
 * two, one running and the next behind it, keep the device as busy. A
 * waiting job's WAIT says so (dev_slot_wait).
 * Cooperative jobs have their slots instead (dev_slots.c). Device thread
 * only.
 */
#include "dev_internal.h"

/* A user's non-cooperative runs on d, and its jobs kept waiting so far in
 * a pump: counted once a pump, a user at a time (at most DEV_TURN_USERS;
 * past that many, a user's count is taken afresh). */
#define DEV_TURN_USERS 64
#define DEV_TURN_DEPTH 2
struct turn_count {
  uint32_t uid;
  unsigned running, waiting;
  uint64_t groups; /* the workgroups of those running */
};

/* A user's non-cooperative jobs on d, and their workgroups: its runs, and
 * its jobs that wait for room in the arena (dev_room.c), each of which is
 * tried again at every run's end: without them in the count, a user's
 * flood of jobs that did not fit went to wait there all at once, and each
 * end cost a device process request for every one. */
static struct turn_count use_of(const struct dev *d, uint32_t uid) {
  struct turn_count c = {.uid = uid};
  for (const struct run *r = d->runs; r; r = r->next)
    if (!dev__is_coop(r->j) && r->j->uid == uid) c.running++, c.groups += r->j->groups;
  for (const struct job *j = d->room_head; j; j = j->dev_next)
    if (!dev__is_coop(j) && j->uid == uid) c.running++, c.groups += j->groups;
  return c;
}

/* The workgroups a user's non-cooperative work may hold on d (0: the
 * workers are not known yet, no bound). */
static uint64_t turn_depth(const struct dev *d) {
  return (uint64_t)DEV_TURN_DEPTH * atomic_load(&d->workers);
}

/* Whether a user's next job of `groups` may start beside the `running`
 * ones holding `held` workgroups: within [jobs] tasks_per_uid (limit; 0:
 * no bound) and DEV_TURN_DEPTH times the device's workers. */
static int turn_free(const struct dev *d, unsigned limit, unsigned running, uint64_t held,
                     unsigned groups) {
  if (!limit) return 1;
  uint64_t depth = turn_depth(d);
  return running < limit && (!running || !depth || held + groups <= depth);
}

static struct turn_count *count_of(const struct dev *d, struct turn_count *t, unsigned *n,
                                   struct turn_count *spare, uint32_t uid) {
  for (unsigned i = 0; i < *n; i++)
    if (t[i].uid == uid) return &t[i];
  struct turn_count *c = *n < DEV_TURN_USERS ? &t[(*n)++] : spare;
  *c = use_of(d, uid);
  return c;
}

/* Why j waits for its turn, for its WAIT: its user's `limit` jobs, or
 * (slot_held) the workgroups of those it runs. */
static void publish(const struct dev *d, struct job *j, unsigned ahead, const struct turn_count *c,
                    unsigned limit) {
  int wide = c->running < limit;
  atomic_store(&j->slot_count, wide ? atomic_load(&d->workers) : limit);
  atomic_store(&j->slot_mine, c->running);
  atomic_store(&j->slot_held,
               wide ? (unsigned)(c->groups > UINT32_MAX ? UINT32_MAX : c->groups) : 0);
  atomic_store(&j->slot_why, wide ? DEV_SLOT_TURN_WIDE : DEV_SLOT_TURN);
  atomic_store(&j->slot_ahead, ahead + 1);
}

/* The workgroups of a user's non-cooperative tasks in flight on d, every
 * job's together. */
static uint64_t inflight_groups(const struct dev *d, uint32_t uid) {
  uint64_t g = 0;
  for (const struct run *q = d->runs; q; q = q->next)
    if (!dev__is_coop(q->j) && q->j->uid == uid) g += (uint64_t)q->ninflight * q->j->groups;
  return g;
}

/* A job behind its period released up to DEV_MAX_INFLIGHT instances of
 * every worker, all queued in the megakernel ahead of another user's task
 * (counted once, as one job, above): eight whole-device tasks ahead where
 * the turns allow two. So its next instance goes while its user's tasks in
 * flight, every job's together, stay within DEV_TURN_DEPTH times the
 * workers: counted a job at a time, four periodic jobs of half the workers
 * behind their periods kept sixteen instances (eight devices' worth) ahead
 * of another user's task. A job's first instance always goes. */
int dev__turn_room(const struct dev *d, const struct run *r) {
  uint64_t depth = turn_depth(d);
  return r->ninflight == 0 || dev__is_coop(r->j) || !depth || !d->cfg->tasks_per_uid ||
         inflight_groups(d, r->j->uid) + r->j->groups <= depth;
}

int dev__turn_waits(struct dev *d, struct job *j) {
  unsigned limit = d->cfg->tasks_per_uid;
  if (!limit || dev__is_coop(j)) return 0;
  if (!d->turn_head) {
    struct turn_count c = use_of(d, j->uid);
    if (turn_free(d, limit, c.running, c.groups, j->groups)) return 0;
  }
  /* behind every job waiting already, its user's or not: the pump below
   * starts each in order as soon as its own user may */
  dev__jobq_push(&d->turn_head, &d->turn_tail, j);
  dev__pump_turns(d);
  return 1;
}

void dev__pump_turns(struct dev *d) {
  if (!d->turn_head) return;
  unsigned limit = d->cfg->tasks_per_uid, nt = 0;
  struct turn_count t[DEV_TURN_USERS], spare;
  struct job *keep = NULL, *keep_tail = NULL, *j = d->turn_head;
  d->turn_head = d->turn_tail = NULL;
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    struct turn_count *c = count_of(d, t, &nt, &spare, j->uid);
    if (d->stop_now || atomic_load(&j->cancel)) {
      atomic_store(&j->slot_ahead, 0);
      dev__cancel_queued(d, j, "cancelled while waiting for its turn");
    } else if (!d->swap_now && !c->waiting &&
               turn_free(d, limit, c->running, c->groups, j->groups)) {
      atomic_store(&j->slot_ahead, 0);
      dev__start_now(d, j); /* on d->runs now (or handed back, failed) */
      c->running++;
      c->groups += j->groups;
    } else { /* its place among its user's waiting jobs, for its WAIT */
      publish(d, j, c->waiting++, c, limit);
      dev__jobq_push(&keep, &keep_tail, j);
    }
    j = n;
  }
  d->turn_head = keep;
  d->turn_tail = keep_tail;
}

/* ---- a user's tasks' share of the device's worker time ----
 *
 * A task that is not cooperative takes its workgroups from the cooperative
 * kernels running beside it (they give them back at offer_kill), which is
 * the paper's bargain for one user's short graphics-like tasks. Across
 * users it had no bound: one user's renders of every worker, back to back
 * (tasks_per_uid in flight keep the queue full), held another user's bfs
 * at one workgroup for as long as they came. So while another user's
 * cooperative job runs or waits on the device, a user's tasks together may
 * take [jobs] task_percent_per_uid of its worker time (workgroups x time):
 * each task's workgroups x its start -> finish, and the hold ahead of its
 * user's next task that it armed (held_ahead), is charged to its user at
 * its end, the charge beyond the share (debt) decays at the share's rate
 * (percent x workers), and while a user's debt exceeds the share of
 * DEV_SHARE_BURST_NS its next task (a periodic job's next instance) is
 * held until it no longer does. Without a competing user nothing is held,
 * and the debt kept is at most that burst, so a user who had the device
 * alone is not held for what it took then. A 60 fps frame of 8 ms on every
 * worker takes 48%, 51-54% with the hold ahead of the next one: the
 * default of 60 leaves the paper's heavy class alone. */
#define DEV_SHARE_BURST_NS 250000000ll

/* The worker-ns the share allows in dt ns. */
static int64_t allowance(const struct dev *d, int64_t dt) {
  if (dt > 1000000000000ll) dt = 1000000000000ll; /* no overflow: the debt is gone by then */
  return dt * (int64_t)atomic_load(&d->workers) * d->cfg->task_percent_per_uid / 100;
}

/* uid's entry, its debt brought up to now; a full table reuses the entry
 * of least debt. */
static struct dev_share *share_of(struct dev *d, uint32_t uid, int64_t now) {
  struct dev_share *e = NULL;
  for (unsigned i = 0; i < d->nshare && !e; i++)
    if (d->share[i].uid == uid) e = &d->share[i];
  if (!e && d->nshare < sizeof d->share / sizeof d->share[0]) e = &d->share[d->nshare++];
  if (!e) {
    e = &d->share[0];
    for (unsigned i = 1; i < d->nshare; i++)
      if (d->share[i].debt < e->debt) e = &d->share[i];
  }
  if (e->uid != uid || !e->at) *e = (struct dev_share){.uid = uid, .at = now};
  e->debt -= allowance(d, now - e->at);
  if (e->debt < 0) e->debt = 0;
  e->at = now;
  return e;
}

/* Whether a user other than uid has a cooperative job running or waiting
 * (for a slot, or suspended) on d. */
static int others_coop(const struct dev *d, uint32_t uid) {
  for (const struct run *r = d->runs; r; r = r->next)
    if (dev__is_coop(r->j) && r->j->uid != uid) return 1;
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next)
    if (j->uid != uid) return 1;
  return 0;
}

static int share_on(const struct dev *d) {
  unsigned p = d->cfg->task_percent_per_uid;
  return p && p < 100 && atomic_load(&d->workers);
}

/* What the hold ahead of a task due at next_ns may take after a task that
 * ended at finished: the scheduler keeps its groups free from next_ns -
 * COOP_RT_AHEAD_NS (docs/scheduler.md, "Gathering ahead") until that task
 * starts, at most until next_ns + COOP_RT_AHEAD_NS. The whole window is
 * charged: a task on time had half of it (a 60 fps frame on half the
 * workers is charged 1.5% more), and one late, the share's own holds
 * included, all. */
static int64_t held_ahead(int64_t finished, int64_t next_ns) {
  if (!next_ns) return 0;
  int64_t from = next_ns - COOP_RT_AHEAD_NS, to = next_ns + COOP_RT_AHEAD_NS;
  if (from < finished) from = finished;
  return to > from ? to - from : 0;
}

void dev__share_charge(struct dev *d, const struct job *j, unsigned groups, int64_t started,
                       int64_t finished, int64_t next_ns) {
  if (!share_on(d) || !started || finished <= started) return;
  struct dev_share *e = share_of(d, j->uid, coop__now_ns());
  e->debt += (finished - started + held_ahead(finished, next_ns)) * (int64_t)groups;
  int64_t burst = allowance(d, DEV_SHARE_BURST_NS);
  if (e->debt > burst && !others_coop(d, j->uid)) e->debt = burst;
}

int dev__share_holds(struct dev *d, struct run *r, int64_t now, int64_t *wake) {
  struct job *j = r->j;
  int64_t over = share_on(d) && !dev__is_coop(j) && others_coop(d, j->uid)
                     ? share_of(d, j->uid, now)->debt - allowance(d, DEV_SHARE_BURST_NS)
                     : 0;
  if (over <= 0) { /* free to go: a wait it said it had is over */
    if (atomic_load(&j->slot_why) == DEV_SLOT_TASKSHARE) atomic_store(&j->slot_ahead, 0);
    return 0;
  }
  int64_t per_ms = allowance(d, 1000000), ms = (over + per_ms - 1) / per_ms;
  if (now + ms * 1000000 < *wake) *wake = now + ms * 1000000;
  if (!r->released) { /* a job not yet begun says why it waits (a WAIT that times out) */
    atomic_store(&j->slot_count, d->cfg->task_percent_per_uid);
    atomic_store(&j->slot_mine, (unsigned)(ms > 3600000 ? 3600000 : ms));
    atomic_store(&j->slot_why, DEV_SLOT_TASKSHARE);
    atomic_store(&j->slot_ahead, 1);
  }
  return 1;
}
