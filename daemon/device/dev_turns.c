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
 * many of each other user's. A waiting job's WAIT says so (dev_slot_wait).
 * Cooperative jobs have their slots instead (dev_slots.c). Device thread
 * only.
 */
#include "dev_internal.h"

/* A user's non-cooperative runs on d, and its jobs kept waiting so far in
 * a pump: counted once a pump, a user at a time (at most DEV_TURN_USERS;
 * past that many, a user's count is taken afresh). */
#define DEV_TURN_USERS 64
struct turn_count {
  uint32_t uid;
  unsigned running, waiting;
};

static struct turn_count *count_of(const struct dev *d, struct turn_count *t, unsigned *n,
                                   struct turn_count *spare, uint32_t uid) {
  for (unsigned i = 0; i < *n; i++)
    if (t[i].uid == uid) return &t[i];
  struct turn_count *c = *n < DEV_TURN_USERS ? &t[(*n)++] : spare;
  *c = (struct turn_count){.uid = uid, .running = dev__runs_of(d, &uid, 0)};
  return c;
}

static void publish(struct job *j, unsigned ahead, unsigned mine, unsigned limit) {
  atomic_store(&j->slot_count, limit);
  atomic_store(&j->slot_mine, mine);
  atomic_store(&j->slot_why, DEV_SLOT_TURN);
  atomic_store(&j->slot_ahead, ahead + 1);
}

int dev__turn_waits(struct dev *d, struct job *j) {
  unsigned limit = d->cfg->tasks_per_uid;
  if (!limit || dev__is_coop(j) || (!d->turn_head && dev__runs_of(d, &j->uid, 0) < limit)) return 0;
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
    } else if (!d->swap_now && !c->waiting && (!limit || c->running < limit)) {
      atomic_store(&j->slot_ahead, 0);
      dev__start_now(d, j); /* on d->runs now (or handed back, failed) */
      c->running++;
    } else { /* its place among its user's waiting jobs, for its WAIT */
      publish(j, c->waiting++, c->running, limit);
      dev__jobq_push(&keep, &keep_tail, j);
    }
    j = n;
  }
  d->turn_head = keep;
  d->turn_tail = keep_tail;
}
