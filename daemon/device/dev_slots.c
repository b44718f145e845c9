/*
 * dev_slots.c: the cooperative slots (docs/faults.md, "Isolation").
 *
 * A running cooperative kernel keeps at least one workgroup: the scheduler
 * never asks for its last. So cooperative jobs could pin every worker at
 * M = 1 and starve every non-cooperative task. They therefore run on at
 * most dev__coop_slots() workers: the usable ones less [jobs] reserve_percent of
 * them (rounded up), at least one. Beyond that a cooperative job waits in
 * `coop_wait`.
 *
 * A slot, once given, is held until the job ends or is suspended
 * (dev_prio.c: for a job of higher priority, or for a user below its
 * share), so what one user may hold is bounded when it is given
 * (docs/daemon.md, "Cooperative slots"):
 *  - a waiting job starts only while its user holds fewer than its share,
 *    ceil(slots / users with cooperative jobs running or waiting);
 *  - a user alone never takes the last free slot, so another user's job
 *    finds one at once (with one slot there is nothing to keep); once
 *    several users want slots, one below its share may take it, and a
 *    user who finds every slot held has the newest job of a user above
 *    its share suspended (dev_prio.c).
 * Of the jobs that may start, the one whose user holds the fewest goes
 * first, then the one whose user was served longest ago, then the oldest.
 * The width is shared as well: while several users' cooperative jobs run
 * or wait, each running one is capped at its user's share (share_width).
 * Each waiting job is told (the job's slot_* atomics, dev_slot_wait) how
 * many jobs go before it in that order and who holds the slots; a WAIT
 * that times out says so. Device thread only, but dev_slot_wait.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dev_internal.h"

/* Workers cooperative jobs may run on together (see the top). */
unsigned dev__coop_slots(const struct dev *d) {
  unsigned usable = atomic_load(&d->workers);
  unsigned reserve = (usable * d->cfg->reserve_percent + 99) / 100;
  return usable > reserve ? usable - reserve : 1;
}

unsigned dev__runs_of(const struct dev *d, const uint32_t *uid, int coop) {
  unsigned n = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    n += dev__is_coop(r->j) == coop && (!uid || r->j->uid == *uid);
  return n;
}

unsigned dev__coop_running(const struct dev *d, const uint32_t *uid) {
  return dev__runs_of(d, uid, 1);
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
    if (dev__is_coop(r->j)) add_user(users, &nu, r->j->uid);
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next) add_user(users, &nu, j->uid);
  return nu;
}

/* A user's share of the slots: ceil(slots / users with cooperative jobs
 * running or waiting), at least 1. */
unsigned dev__coop_share(const struct dev *d) {
  unsigned nu = wanting_users(d), slots = dev__coop_slots(d);
  return nu ? (slots + nu - 1) / nu : slots;
}

/* The highest priority of other users' cooperative jobs running or
 * waiting here (COOP_PRIORITY_MIN - 1: none). */
static int32_t others_priority(const struct dev *d, uint32_t uid) {
  int32_t p = COOP_PRIORITY_MIN - 1;
  for (const struct run *r = d->runs; r; r = r->next)
    if (dev__is_coop(r->j) && r->j->uid != uid && r->j->priority > p) p = r->j->priority;
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next)
    if (j->uid != uid && j->priority > p) p = j->priority;
  return p;
}

/* Whether uid runs a periodic cooperative job here. Such a job is never
 * suspended (its instances are not: dev_prio.c), so the slot it holds is
 * out of the share's reach for up to [jobs] max_series_ms; one at a time a
 * user, the share takes back any other (docs/daemon.md, "Cooperative
 * slots"). */
static int runs_periodic(const struct dev *d, uint32_t uid) {
  for (const struct run *r = d->runs; r; r = r->next)
    if (r->j->uid == uid && dev__is_coop(r->j) && dev__periodic(r->j)) return 1;
  return 0;
}

int dev__periodic_held(const struct dev *d, const struct job *j) {
  return dev__periodic(j) && runs_periodic(d, j->uid);
}

/* Why a job of a user holding `mine` may not take a slot now (a
 * DEV_SLOT_* code), or 0 when it may. */
static unsigned slot_refusal(const struct dev *d, const struct job *j, unsigned running,
                             unsigned mine, unsigned share) {
  unsigned slots = dev__coop_slots(d);
  if (d->swap_now) return DEV_SLOT_RELOAD;
  if (dev__prio_blocked(d, j->priority)) return DEV_SLOT_PRIORITY;
  if (dev__periodic_held(d, j)) return DEV_SLOT_PERIODIC;
  if (running >= slots) return DEV_SLOT_FULL;
  /* alone, a user keeps off the last slot; with others, a user below its
   * share takes it, and one who comes later has a job of a user above its
   * share suspended for it (dev_prio.c) */
  unsigned why = mine >= share                                              ? DEV_SLOT_SHARE
                 : mine > 0 && running + 1 == slots && wanting_users(d) < 2 ? DEV_SLOT_KEPT
                                                                            : 0;
  if (!why) return 0;
  /* the share and the kept slot hold between jobs of one priority: a job
   * above every other user's cooperative jobs (there being some) takes a
   * free slot */
  int32_t others = others_priority(d, j->uid);
  return others >= COOP_PRIORITY_MIN && j->priority > others ? 0 : why;
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
  if (dev__is_coop(j)) { /* through the queue: it decides in FIFO and fair order */
    dev__jobq_push(&d->coop_wait_head, &d->coop_wait_tail, j);
    d->slots_seq++;
    return;
  }
  if (!dev__turn_waits(d, j)) dev__start_now(d, j);
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
      u[k].mine = dev__coop_running(d, &j->uid);
      u[k].at = last_served(d, j->uid);
      u[k].next = i;
      nu++;
    }
    q[i] = j;
    who[i] = (unsigned char)(k < 64 ? k : 63); /* past 64 users: counted as the 64th */
  }
  unsigned running = dev__coop_running(d, NULL), share = dev__coop_share(d),
           slots = dev__coop_slots(d);
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
    unsigned mine = dev__coop_running(d, &j->uid);
    atomic_store(&j->slot_held, running);
    atomic_store(&j->slot_mine, mine);
    atomic_store(&j->slot_count, slots);
    atomic_store(&j->slot_why, slot_refusal(d, j, running, mine, share));
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
    if (!dev__is_coop(r->j)) continue;
    unsigned mine = dev__coop_running(d, &r->j->uid);
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

void dev__coop_wait_push_front(struct dev *d, struct job *j) {
  j->dev_next = d->coop_wait_head;
  d->coop_wait_head = j;
  if (!d->coop_wait_tail) d->coop_wait_tail = j;
  d->slots_seq++;
}

void dev__coop_wait_remove(struct dev *d, struct job **p) {
  struct job *j = *p;
  *p = j->dev_next;
  if (d->coop_wait_tail == j) {
    d->coop_wait_tail = NULL;
    for (struct job *q = d->coop_wait_head; q; q = q->dev_next) d->coop_wait_tail = q;
  }
  j->dev_next = NULL;
  atomic_store(&j->slot_ahead, 0);
  d->slots_seq++;
}

/* A job taken from the queue to run: a suspended one resumes (its run
 * back on d->runs, resumed by its next pass), any other starts. */
static void start_waiting(struct dev *d, struct job *j) {
  note_served(d, j->uid);
  struct run *r = j->dev_run;
  if (!r) {
    dev__start_now(d, j);
    return;
  }
  j->dev_run = NULL;
  r->resuming = 1;
  r->next = d->runs;
  d->runs = r;
}

/* Starts the waiting cooperative jobs that may start, higher priorities
 * first, then as the top of this file says; hands back the ones cancelled
 * (or all, at a stop) while waiting. What the others lack is suspended
 * once a pass, after the runs' steps (dev__preempt, device.c). */
void dev__pump_coop_wait(struct dev *d) {
  /* none into a device process that died: the restart, later in this
   * pass, launches the one they go to (one resumed into the dead one went
   * back to wait and counted that restart twice: dev_carry.c) */
  if (d->rt && !dp_alive(d->rt)) return;
  for (;;) {
    struct job **best = NULL;
    unsigned share = dev__coop_share(d), running = dev__coop_running(d, NULL), best_n = 0;
    uint64_t best_at = 0;
    for (struct job **p = &d->coop_wait_head; *p; p = &(*p)->dev_next) {
      struct job *j = *p;
      if (d->stop_now || atomic_load(&j->cancel)) {
        best = p;
        break;
      }
      unsigned mine = dev__coop_running(d, &j->uid);
      if (slot_refusal(d, j, running, mine, share) || dev__room_holds(d, j)) continue;
      uint64_t at = last_served(d, j->uid);
      int32_t bp = best ? (*best)->priority : 0;
      if (!best || j->priority > bp ||
          (j->priority == bp && (mine < best_n || (mine == best_n && at < best_at))))
        best = p, best_n = mine, best_at = at;
    }
    if (!best) break;
    struct job *j = *best;
    dev__coop_wait_remove(d, best);
    if (d->stop_now || atomic_load(&j->cancel)) {
      if (j->dev_run)
        dev__drop_suspended(d, j);
      else
        dev__cancel_queued(d, j, "cancelled while waiting for a cooperative slot");
    } else {
      start_waiting(d, j);
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

/* What a waiting job's WAIT says (dev_slot_wait), one writer per reason
 * (job.slot_why): the numbers the device thread published for it. */
struct slot_said {
  const struct job *j;
  unsigned ahead, held, mine, count;
};
typedef void (*slot_say_fn)(const struct slot_said *s, char *buf, size_t n);

static const char *plural(unsigned k) { return k == 1 ? "" : "s"; }

/* Why a suspended job waits, by job.suspended_for, where that is no
 * priority (dev_internal.h); the count of jobs ahead follows each. */
static const struct {
  int32_t why;
  const char *says;
} suspended_says[] = {
    {DEV_FOR_RESTART, "its device process was restarted: it resumes from its last checkpoint"},
    {DEV_FOR_RESTART_AT,
     "its device process died as it resumed: it resumes where it was suspended in the next"},
    {DEV_FOR_MOVE,
     "suspended, moved to this device: it resumes where it stopped when a cooperative slot is "
     "free here"},
    {DEV_FOR_ROOM,
     "suspended, its buffers moved out of the device arena: another user's job waited for room "
     "there while its user's jobs and device buffers held more than [limits] "
     "max_buffer_percent_per_uid of it; it "
     "resumes where it stopped once that job has started and its buffers fit again"},
    {DEV_FOR_ROOM_BACK,
     "suspended, waiting for room in the device arena to resume: its buffers do not fit beside "
     "the running jobs' now; it is tried again as they end"},
    {DEV_FOR_SHARE,
     "suspended: its user held more than its share of the cooperative slots while another "
     "user's job waited; it resumes where it stopped"},
};

static void say_suspended(const struct slot_said *s, char *buf, size_t n) {
  int32_t p = atomic_load(&s->j->suspended_for);
  for (size_t i = 0; i < sizeof suspended_says / sizeof *suspended_says; i++)
    if (suspended_says[i].why == p) {
      snprintf(buf, n, "%s (%u job%s ahead of it)", suspended_says[i].says, s->ahead,
               plural(s->ahead));
      return;
    }
  snprintf(buf, n,
           "suspended for a job of priority %d (its own is %d); it resumes where it stopped "
           "when that job ends (%u job%s ahead of it)",
           (int)p, (int)s->j->priority, s->ahead, plural(s->ahead));
}

static void say_turn(const struct slot_said *s, char *buf, size_t n) {
  snprintf(buf, n,
           "waiting for its turn: its user runs %u job%s on the device that %s not cooperative "
           "([jobs] tasks_per_uid = %u, so that other users' tasks do not queue behind all of "
           "them); %u more of its user's waiting ahead of it",
           s->mine, plural(s->mine), s->mine == 1 ? "is" : "are", s->count, s->ahead);
}

static void say_turn_wide(const struct slot_said *s, char *buf, size_t n) {
  snprintf(buf, n,
           "waiting for its turn: its user's %u job%s on the device that %s not cooperative "
           "hold %u workgroups, and with it would hold more than twice the megakernel's %u "
           "workers (so that other users' tasks do not queue behind them); %u more of its "
           "user's waiting ahead of it",
           s->mine, plural(s->mine), s->mine == 1 ? "is" : "are", s->held, s->count, s->ahead);
}

static void say_task_share(const struct slot_said *s, char *buf, size_t n) {
  snprintf(buf, n,
           "waiting for its user's share of the device: its user's tasks took more than "
           "[jobs] task_percent_per_uid = %u%% of the device's worker time while another "
           "user's cooperative job runs here; about %u ms more",
           s->count, s->mine);
}

static void say_room(const struct slot_said *s, char *buf, size_t n) {
  snprintf(buf, n,
           "waiting for room in the device arena: its buffers (%u KiB) do not fit beside the "
           "%u KiB the running jobs hold ([device] arena_mb = %u); it is tried again as they end",
           s->mine, s->held, s->count);
}

static void say_room_share(const struct slot_said *s, char *buf, size_t n) {
  snprintf(buf, n,
           "waiting for room in the device arena: another user's job waits for room there, and "
           "its user's running jobs and device buffers hold %u KiB of it, past [limits] "
           "max_buffer_percent_per_uid = %u%% of what other users' leave (%u KiB); it is tried "
           "again as they end",
           s->held, s->count, s->mine);
}

/* A cooperative job waiting for a slot (slot_why 0, DEV_SLOT_FULL ..
 * DEV_SLOT_PRIORITY or DEV_SLOT_PERIODIC): its place, the slots, and what keeps it back. */
static void say_slot(const struct slot_said *s, char *buf, size_t n) {
  const char *why = "";
  switch (atomic_load(&s->j->slot_why)) {
    case DEV_SLOT_SHARE:
      why = "; its user holds its share while other users wait";
      break;
    case DEV_SLOT_KEPT:
      why = "; the last free slot is kept for a user who holds none";
      break;
    case DEV_SLOT_RELOAD:
      why = "; the kernels are being reloaded";
      break;
    case DEV_SLOT_PRIORITY:
      why = "; a job of higher priority needs the workers";
      break;
    case DEV_SLOT_PERIODIC:
      why =
          "; its user runs a periodic cooperative job here already (one at a time: such a job "
          "is never suspended)";
      break;
  }
  unsigned others = s->held > s->mine ? s->held - s->mine : 0;
  snprintf(buf, n,
           "waiting for a cooperative slot: %u job%s ahead of it; %u of %u slot%s held, %u by "
           "other users%s",
           s->ahead, plural(s->ahead), s->held, s->count, plural(s->count), others, why);
}

static const struct {
  uint8_t why;
  slot_say_fn say;
} slot_says[] = {
    {DEV_SLOT_TURN, say_turn},
    {DEV_SLOT_TURN_WIDE, say_turn_wide},
    {DEV_SLOT_TASKSHARE, say_task_share},
    {DEV_SLOT_ROOM, say_room},
    {DEV_SLOT_ROOM_SHARE, say_room_share},
};

int dev_slot_wait(const struct job *j, char *buf, size_t n) {
  unsigned place = atomic_load(&j->slot_ahead);
  if (!place) return 0;
  struct slot_said s = {j, place - 1, atomic_load(&j->slot_held), atomic_load(&j->slot_mine),
                        atomic_load(&j->slot_count)};
  slot_say_fn say = say_slot;
  uint8_t why = atomic_load(&j->slot_why);
  for (size_t i = 0; i < sizeof slot_says / sizeof slot_says[0]; i++)
    if (slot_says[i].why == why) say = slot_says[i].say;
  if (atomic_load(&j->suspended)) say = say_suspended;
  say(&s, buf, n);
  return 1;
}
