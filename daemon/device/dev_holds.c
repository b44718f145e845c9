/*
 * dev_holds.c: the holds a user's tasks ask of the scheduler (docs/daemon.md,
 * "Device buffers"; docs/scheduler.md, "Gathering ahead").
 *
 * A task that names when the next one of its kind comes (coop_rt_task_desc
 * .next_ns: a periodic job's next instance, a frame loop's next frame) has
 * the scheduler arm a hold for it: workers kept free round that time, so
 * that the next one starts without a gather. The scheduler arms at most
 * COOP_HOLDS (16, DEV_HOLD_ASKS here) at once, first come, and an instance
 * that finds every entry armed simply gathers when it comes. Each hold
 * lasts until its window's end, a period on; so one user's frame loops or
 * periodic jobs could keep every entry armed, and every other user's
 * gathered as if no one had known they were coming. So a user's tasks ask
 * for at most DEV_HOLDS_PER_UID holds at a time on a device; past that a
 * task names no next one and its successor gathers as it comes (test
 * a_users_holds_leave_others_theirs). Four users at that bound fill every
 * entry, first come, and a fifth who held none was refused; so a user who
 * finds none free takes one from the user holding the most, where that
 * user holds at least two more than the asker (the entry that lapses
 * first): up to 16 users each keep one, whoever came first (test
 * a_fifth_users_hold_is_not_refused). The scheduler's entry of the chain
 * taken from lapses when that chain's next task starts, which asks again
 * and is refused. One entry a chain: a periodic job's
 * (its id), a frame loop's (its client's connection), replaced as
 * each task asks for its successor's. Device thread only.
 */
#include <stdio.h>

#include "coop_rt.h"
#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

/* The chain job j's hold belongs to: a periodic job's id, a frame loop's
 * connection (job ids and connection serials both count from 1, far below
 * bit 63). Not the loop's process: one process may run a loop on each of
 * many connections, and every loop's task asks a hold of the scheduler. */
static uint64_t chain_of(const struct job *j) {
  return dev__periodic(j) ? j->id : j->conn | 1ull << 63;
}

static unsigned asks_of(const struct dev *d, uint32_t uid, int64_t now) {
  unsigned n = 0;
  for (const struct dev_hold_ask *a = d->hold_asks; a < d->hold_asks + DEV_HOLD_ASKS; a++)
    n += a->until > now && a->uid == uid;
  return n;
}

/* Every entry armed, and uid's asker holds `have`: the entry, lapsing
 * first, of the user holding the most where that is at least have + 2
 * (so that the two never take one back and forth), or NULL. */
static struct dev_hold_ask *take_from_most(struct dev *d, uint32_t uid, unsigned have,
                                           int64_t now) {
  struct dev_hold_ask *take = NULL;
  unsigned most = have + 1;
  for (struct dev_hold_ask *a = d->hold_asks; a < d->hold_asks + DEV_HOLD_ASKS; a++) {
    if (a->until <= now || a->uid == uid) continue;
    unsigned n = asks_of(d, a->uid, now);
    if (n > most || (n == most && take && take->uid == a->uid && a->until < take->until)) {
      most = n;
      take = a;
    }
  }
  if (take)
    log_debug("%s: uid %u's hold (%u of them) given to uid %u, who holds %u", d->logname, take->uid,
              most, uid, have);
  return take;
}

int64_t dev__hold_ask(struct dev *d, const struct job *j, int64_t next_ns) {
  if (!next_ns) return 0;
  int64_t now = coop__now_ns(), until = next_ns + COOP_RT_AHEAD_NS;
  uint64_t chain = chain_of(j);
  struct dev_hold_ask *free = NULL, *mine = NULL;
  unsigned of_uid = 0;
  for (struct dev_hold_ask *a = d->hold_asks; a < d->hold_asks + DEV_HOLD_ASKS; a++) {
    if (a->until <= now) { /* lapsed, or never asked */
      a->until = 0;
      if (!free) free = a;
      continue;
    }
    if (a->chain == chain)
      mine = a;
    else if (a->uid == j->uid)
      of_uid++;
  }
  if (!mine && of_uid < DEV_HOLDS_PER_UID && !free) free = take_from_most(d, j->uid, of_uid, now);
  if (!mine && (of_uid >= DEV_HOLDS_PER_UID || !free)) {
    if (!d->hold_refusing)
      log_debug("%s: no hold for the task after job %llu's (uid %u asks %u already)", d->logname,
                (unsigned long long)j->id, j->uid, of_uid);
    d->hold_refusing = 1;
    return 0;
  }
  d->hold_refusing = 0;
  if (!mine) mine = free;
  *mine = (struct dev_hold_ask){.chain = chain, .uid = j->uid, .until = until};
  return next_ns;
}
