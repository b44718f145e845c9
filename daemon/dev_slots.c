/*
 * dev_slots.c: the cooperative slots (docs/faults.md, "Isolation").
 *
 * A running cooperative kernel keeps at least one workgroup: the scheduler
 * kernel keeps at least one workgroup: the scheduler never asks for its
 * last. So cooperative jobs could pin every worker at M = 1 and starve
 * every non-cooperative task. They therefore run on at most coop_slots()
 * workers: the usable ones less [jobs] reserve_percent of them (rounded
 * up), at least one. Beyond that a cooperative job waits in `coop_wait`
 * and a waiting job starts only while its user runs fewer than an even
 * share of the slots (slots / users with cooperative jobs running or
 * waiting, at least 1). Of the jobs that may start, the one whose user runs
 * the fewest goes first, then the one whose user was served longest ago,
 * then the oldest: one user's queue cannot take every slot while another's
 * waits. Device thread only.
 */
#include <stdio.h>

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

/* An even share of the slots among the users with cooperative jobs. */
static unsigned coop_share(const struct dev *d) {
  uint32_t users[64];
  unsigned nu = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    if (is_coop(r->j)) add_user(users, &nu, r->j->uid);
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next) add_user(users, &nu, j->uid);
  unsigned share = nu ? coop_slots(d) / nu : coop_slots(d);
  return share ? share : 1;
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
    return;
  }
  dev__start_now(d, j);
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
      if (d->swap_now || running >= coop_slots(d)) continue;
      unsigned mine = coop_running(d, &j->uid);
      uint64_t at = last_served(d, j->uid);
      if (mine < share && (!best || mine < best_n || (mine == best_n && at < best_at)))
        best = p, best_n = mine, best_at = at;
    }
    if (!best) return;
    struct job *j = *best;
    *best = j->dev_next;
    if (d->coop_wait_tail == j) {
      d->coop_wait_tail = NULL;
      for (struct job *q = d->coop_wait_head; q; q = q->dev_next) d->coop_wait_tail = q;
    }
    j->dev_next = NULL;
    if (d->stop_now || atomic_load(&j->cancel)) {
      atomic_store(&j->state, COOP_JOB_CANCELLED);
      j->error = COOP_ECANCELED;
      snprintf(j->message, sizeof j->message, "%s",
               d->stop_now ? "cancelled: the daemon is shutting down"
                           : "cancelled while waiting for a cooperative slot");
      dev__hand_back(d, j);
    } else {
      note_served(d, j->uid);
      dev__start_now(d, j);
    }
  }
}
