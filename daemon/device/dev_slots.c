/*
 * dev_slots.c: the cooperative slots (docs/faults.md, "Isolation").
 *
 * A running cooperative kernel keeps at least one workgroup: the scheduler
 * never asks for its last. So cooperative jobs could pin every worker at
 * M = 1 and starve every non-cooperative task. They therefore run on at
 * most coop_slots() workers: the usable ones less [jobs] reserve_percent of
 * them (rounded up), at least one. Beyond that a cooperative job waits in
 * `coop_wait`.
 *
 * A slot, once given, is held until the job ends (taking it back would need
 * the kernel suspended), so what one user may hold is bounded when it is
 * given (docs/daemon.md, "Cooperative slots"):
 *  - a waiting job starts only while its user holds fewer than its share,
 *    ceil(slots / users with cooperative jobs running or waiting);
 *  - the last free slot goes only to a user who holds none: a user alone
 *    never takes every slot, so another user's job finds one at once
 *    (with one slot there is nothing to keep).
 * Of the jobs that may start, the one whose user holds the fewest goes
 * first, then the one whose user was served longest ago, then the oldest.
 * The width is shared as well: while several users' cooperative jobs run
 * or wait, each running one is capped at its user's share (share_width).
 * Each waiting job is told (the job's slot_* atomics, dev_slot_wait) how
 * many jobs go before it in that order and who holds the slots; a WAIT
 * that times out says so. Device thread only, but dev_slot_wait.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dev_internal.h"

static int is_coop(const struct job *j) { return !!(j->flags & COOP_SUBMIT_COOPERATIVE); }

/* Workers cooperative jobs may run on together (see the top). */
static unsigned coop_slots(const struct dev *d) {
  unsigned usable = atomic_load(&d->workers);
  unsigned reserve = (usable * d->cfg->reserve_percent + 99) / 100;
  return usable > reserve ? usable - reserve : 1;
}

static unsigned coop_running(const struct dev *d, const uint32_t *uid) {
  unsigned n = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    n += is_coop(r->j) && (!uid || r->j->uid == *uid);
  return n;
}

static void add_user(uint32_t *users, unsigned *nu, uint32_t uid) {
  unsigned i = 0;
  while (i < *nu && users[i] != uid) i++;
  if (i == *nu && *nu < 64) users[(*nu)++] = uid;
}

/* The users with cooperative jobs running or waiting here (at most 64). */
static unsigned wanting_users(const struct dev *d) {
  uint32_t users[64];
  unsigned nu = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    if (is_coop(r->j)) add_user(users, &nu, r->j->uid);
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next) add_user(users, &nu, j->uid);
  return nu;
}

/* A user's share of the slots: ceil(slots / users with cooperative jobs
 * running or waiting), at least 1. */
static unsigned coop_share(const struct dev *d) {
  unsigned nu = wanting_users(d), slots = coop_slots(d);
  return nu ? (slots + nu - 1) / nu : slots;
}

/* Why a job of a user holding `mine` may not take a slot now (a
 * DEV_SLOT_* code), or 0 when it may. */
static unsigned slot_refusal(const struct dev *d, unsigned running, unsigned mine, unsigned share) {
  unsigned slots = coop_slots(d);
  if (d->swap_now) return DEV_SLOT_RELOAD;
  if (running >= slots) return DEV_SLOT_FULL;
  if (mine >= share) return DEV_SLOT_SHARE;
  if (mine > 0 && running + 1 == slots) return DEV_SLOT_KEPT;
  return 0;
}

/* When uid last started a cooperative job here (0: never), and noting that
 * it does now: ties between users go to the one served longest ago. */
static uint64_t last_served(const struct dev *d, uint32_t uid) {
  for (unsigned i = 0; i < d->nserved; i++)
    if (d->served[i].uid == uid) return d->served[i].at;
  return 0;
}

static void note_served(struct dev *d, uint32_t uid) {
  unsigned i = 0, oldest = 0;
  while (i < d->nserved && d->served[i].uid != uid) {
    if (d->served[i].at < d->served[oldest].at) oldest = i;
    i++;
  }
  if (i == d->nserved) i = d->nserved < 64 ? d->nserved++ : oldest; /* forget the oldest */
  d->served[i].uid = uid;
  d->served[i].at = ++d->serve_seq;
}

void dev__start_job(struct dev *d, struct job *j) {
  if (is_coop(j)) { /* through the queue: it decides in FIFO and fair order */
    if (d->coop_wait_tail)
      d->coop_wait_tail->dev_next = j;
    else
      d->coop_wait_head = j;
    d->coop_wait_tail = j;
    j->dev_next = NULL;
    d->slots_seq++;
    return;
  }
  dev__start_now(d, j);
}

/* Each waiting job's place: the order the pump below would start them in
 * if slots kept freeing, one at a time (each user's jobs stay in FIFO
 * order, so users are merged: the one holding the fewest next, then the
 * one served longest ago, then the one whose next job is oldest), and who
 * holds the slots now. Redone only when the queue, the runs or the
 * workers changed (slots_seq). */
static void publish_places(struct dev *d) {
  unsigned workers = atomic_load(&d->workers);
  if (d->slots_seq == d->places_seq && workers == d->places_workers) return;
  d->places_seq = d->slots_seq;
  d->places_workers = workers;
  unsigned n = 0;
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next) n++;
  if (!n) return;
  struct job **q = malloc(n * sizeof *q);
  unsigned char *who = malloc(n);
  if (!q || !who) { /* the places are for the eye: they stay as they were */
    free(q);
    free(who);
    d->places_seq--;
    return;
  }
  struct {
    uint32_t uid;
    unsigned mine, next;
    uint64_t at;
  } u[64];
  unsigned nu = 0, i = 0;
  for (struct job *j = d->coop_wait_head; j; j = j->dev_next, i++) {
    unsigned k = 0;
    while (k < nu && u[k].uid != j->uid) k++;
    if (k == nu && nu < 64) {
      u[k].uid = j->uid;
      u[k].mine = coop_running(d, &j->uid);
      u[k].at = last_served(d, j->uid);
      u[k].next = i;
      nu++;
    }
    q[i] = j;
    who[i] = (unsigned char)(k < 64 ? k : 63); /* past 64 users: counted as the 64th */
  }
  unsigned running = coop_running(d, NULL), share = coop_share(d), slots = coop_slots(d);
  uint64_t seq = d->serve_seq;
  for (unsigned place = 0; place < n; place++) {
    unsigned best = nu;
    for (unsigned k = 0; k < nu; k++) {
      if (u[k].next >= n) continue;
      if (best == nu || u[k].mine < u[best].mine ||
          (u[k].mine == u[best].mine &&
           (u[k].at < u[best].at || (u[k].at == u[best].at && u[k].next < u[best].next))))
        best = k;
    }
    if (best == nu) break;
    struct job *j = q[u[best].next];
    unsigned mine = coop_running(d, &j->uid);
    atomic_store(&j->slot_held, running);
    atomic_store(&j->slot_mine, mine);
    atomic_store(&j->slot_count, slots);
    atomic_store(&j->slot_why, slot_refusal(d, running, mine, share));
    atomic_store(&j->slot_ahead, place + 1);
    u[best].mine++;
    u[best].at = ++seq;
    unsigned nx = u[best].next + 1;
    while (nx < n && who[nx] != best) nx++;
    u[best].next = nx;
  }
  free(q);
  free(who);
}

/* The width between users (docs/daemon.md, "Cooperative slots"): while
 * cooperative jobs of more than one user run or wait here, each of those
 * users may hold floor(workers / users) workgroups (at least one), split
 * evenly over its running cooperative jobs (at least one each): a job's
 * cap (coop_rt_cap). Alone, a user's jobs run uncapped. So a user whose
 * job waits for a slot finds the holder shrunk to its share at the
 * holder's next offer_kill or resizing barrier, and two users' kernels
 * side by side each get half the device, where the first to fork took
 * it all. Redone when the queue, the runs or the workers changed; a
 * task is told only a cap that changed. */
static void share_width(struct dev *d) {
  unsigned workers = atomic_load(&d->workers);
  if (d->slots_seq == d->caps_seq && workers == d->caps_workers) return;
  d->caps_seq = d->slots_seq;
  d->caps_workers = workers;
  unsigned nu = wanting_users(d);
  unsigned share = nu > 1 ? (workers / nu ? workers / nu : 1) : 0;
  for (struct run *r = d->runs; r; r = r->next) {
    if (!is_coop(r->j)) continue;
    unsigned mine = coop_running(d, &r->j->uid);
    unsigned cap = share ? (share / mine ? share / mine : 1) : 0;
    if (cap >= r->j->groups) cap = 0; /* asks no more than that: nothing to cap */
    r->cap = cap;
    atomic_store(&r->j->slot_cap, cap);
    atomic_store(&r->j->slot_users, nu);
    /* a task not yet submitted takes r->cap with it (dev_run.c) */
    if (r->ninflight && cap != r->cap_told && d->rt && dp_cap(d->rt, r->task[0], cap) == 0)
      r->cap_told = cap;
  }
}

/* Starts the waiting cooperative jobs that may start; hands back the ones
 * cancelled (or all, at a stop) while waiting. */
void dev__pump_coop_wait(struct dev *d) {
  for (;;) {
    struct job **best = NULL;
    unsigned share = coop_share(d), running = coop_running(d, NULL), best_n = 0;
    uint64_t best_at = 0;
    for (struct job **p = &d->coop_wait_head; *p; p = &(*p)->dev_next) {
      struct job *j = *p;
      if (d->stop_now || atomic_load(&j->cancel)) {
        best = p;
        break;
      }
      unsigned mine = coop_running(d, &j->uid);
      if (slot_refusal(d, running, mine, share)) continue;
      uint64_t at = last_served(d, j->uid);
      if (!best || mine < best_n || (mine == best_n && at < best_at))
        best = p, best_n = mine, best_at = at;
    }
    if (!best) break;
    struct job *j = *best;
    *best = j->dev_next;
    if (d->coop_wait_tail == j) {
      d->coop_wait_tail = NULL;
      for (struct job *q = d->coop_wait_head; q; q = q->dev_next) d->coop_wait_tail = q;
    }
    j->dev_next = NULL;
    atomic_store(&j->slot_ahead, 0);
    d->slots_seq++;
    if (d->stop_now || atomic_load(&j->cancel)) {
      dev__cancel_queued(d, j, "cancelled while waiting for a cooperative slot");
    } else {
      note_served(d, j->uid);
      dev__start_now(d, j);
    }
  }
  publish_places(d);
  share_width(d);
}

int dev_slot_cap(const struct job *j, char *buf, size_t n) {
  unsigned cap = atomic_load(&j->slot_cap), users = atomic_load(&j->slot_users);
  if (!cap) return 0;
  snprintf(buf, n,
           "held at %u workgroup%s (of %u) while %u users' cooperative jobs share the device", cap,
           cap == 1 ? "" : "s", j->groups, users);
  return 1;
}

int dev_slot_wait(const struct job *j, char *buf, size_t n) {
  unsigned place = atomic_load(&j->slot_ahead);
  if (!place) return 0;
  unsigned ahead = place - 1, held = atomic_load(&j->slot_held), mine = atomic_load(&j->slot_mine),
           slots = atomic_load(&j->slot_count);
  unsigned others = held > mine ? held - mine : 0;
  const char *why = "";
  switch (atomic_load(&j->slot_why)) {
    case DEV_SLOT_SHARE:
      why = "; its user holds its share while other users wait";
      break;
    case DEV_SLOT_KEPT:
      why = "; the last free slot is kept for a user who holds none";
      break;
    case DEV_SLOT_RELOAD:
      why = "; the kernels are being reloaded";
      break;
  }
  snprintf(buf, n,
           "waiting for a cooperative slot: %u job%s ahead of it; %u of %u slot%s held, %u by "
           "other users%s",
           ahead, ahead == 1 ? "" : "s", held, slots, slots == 1 ? "" : "s", others, why);
  return 1;
}
