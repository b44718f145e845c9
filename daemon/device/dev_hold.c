/*
 * dev_hold.c: users held back after their jobs made the device restart
 * (dev_watch.c). A kernel that never reaches a primitive cannot be taken
 * off the device but by ending its device process, which costs every other
 * job on it; a user who can do that at will could keep the device
 * restarting. So a uid whose job caused a restart has its next jobs on
 * this device held (queued, not started) for [jobs] restart_hold_ms, doubling
 * with each further restart it causes, up to DEV_HOLD_MAX_MS (or the first
 * hold, if the administrator set it longer); a uid that
 * caused none for DEV_HOLD_FORGIVE_NS starts over. Held jobs keep their
 * place and their owner's bounds; a cancel or a stop ends them as it does
 * a queued job. docs/faults.md, "What coopd can and cannot recover".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

#define DEV_HOLD_MAX_MS 300000u
#define DEV_HOLD_FORGIVE_NS (600ll * 1000000000ll)

static struct dev_hold *find(struct dev *d, uint32_t uid) {
  for (unsigned i = 0; i < d->nholds; i++)
    if (d->holds[i].uid == uid) return &d->holds[i];
  return NULL;
}

int64_t dev__hold(struct dev *d, uint32_t uid, int64_t now) {
  struct dev_hold *h = find(d, uid);
  if (!h) {
    unsigned at = 0; /* full: the entry whose hold ended longest ago goes */
    if (d->nholds < DEV_MAX_HOLDS)
      at = d->nholds++;
    else
      for (unsigned i = 1; i < DEV_MAX_HOLDS; i++)
        if (d->holds[i].until < d->holds[at].until) at = i;
    h = &d->holds[at];
    memset(h, 0, sizeof *h);
    h->uid = uid;
  }
  if (h->restarts && now - h->last > DEV_HOLD_FORGIVE_NS) h->restarts = 0;
  unsigned shift = h->restarts < 20 ? h->restarts : 20;
  uint64_t ms = (uint64_t)d->cfg->restart_hold_ms << shift;
  uint64_t cap =
      d->cfg->restart_hold_ms > DEV_HOLD_MAX_MS ? d->cfg->restart_hold_ms : DEV_HOLD_MAX_MS;
  if (ms > cap) ms = cap; /* a first hold set above the cap is the cap */
  h->restarts++;
  h->last = now;
  h->until = now + (int64_t)ms * 1000000;
  return (int64_t)ms;
}

unsigned dev__hold_restarts(struct dev *d, uint32_t uid) {
  struct dev_hold *h = find(d, uid);
  return h ? h->restarts : 0;
}

int dev__held(struct dev *d, uint32_t uid, int64_t now) {
  struct dev_hold *h = find(d, uid);
  return h && now < h->until;
}

void dev__queue_held(struct dev *d, struct job *j) {
  dev__jobq_push(&d->held_head, &d->held_tail, j);
}

void dev__pump_held(struct dev *d, int64_t now, int64_t *wake) {
  struct job *keep = NULL, *keep_tail = NULL, *j = d->held_head;
  d->held_head = d->held_tail = NULL;
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    struct dev_hold *h = find(d, j->uid);
    if (d->stop_now || atomic_load(&j->cancel)) {
      dev__cancel_queued(d, j, "cancelled while held back after a device restart");
    } else if (dev__move_queued(d, j)) {
      /* MIGRATE's: the hold is this device's */
    } else if ((!h || now >= h->until) && !d->swap_now) {
      dev__start_job(d, j);
    } else { /* still held, or a reload keeps it queued until the swap */
      if (h && now < h->until && h->until < *wake) *wake = h->until;
      dev__jobq_push(&keep, &keep_tail, j);
    }
    j = n;
  }
  /* jobs held while this pass ran (none: the device thread alone queues) */
  d->held_head = keep;
  d->held_tail = keep_tail;
}
