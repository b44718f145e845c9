/*
 * dev_room.c: a job whose buffers find no room in the device arena waits
 * for it. A job's buffers are copied into the arena when it starts and
 * freed when it ends (dev_stage.c), so the room a job finds depends on the
 * jobs running beside it: a job that fit the arena alone failed ENOMEM
 * ("raise [device] arena_mb", which only the administrator can) whenever
 * another user's running jobs held the room, and one user's jobs could
 * hold all of it. Now (docs/daemon.md, "Room in the arena"):
 *
 * - a job that finds no room while other jobs' copies are in the arena
 *   (running, or suspended there) waits here, QUEUED, its WAIT saying so,
 *   and is tried again, in order, each time a run ends; with no such copy
 *   it fails ENOMEM as before (nothing that ends would make room: its
 *   buffers and the device buffers do not fit together). Each try is a
 *   device-process request, so a pump tries none larger than one that
 *   just found no room, and a user's waiting tasks count toward its
 *   [jobs] tasks_per_uid (dev_turns.c);
 * - while another user's job waits here, a user whose running jobs'
 *   copies and device buffers (dev__bufs_in_arena) hold more than
 *   [limits] max_buffer_percent_per_uid of what the other users' leave of
 *   the arena (share_of) starts no job with buffers to copy: the room its
 *   ends give back goes to the waiting job, not to its own next one
 *   (without this, a flood of small jobs took each freed piece and a
 *   larger job waited for ever);
 * - and that user's cooperative jobs give their room back: the newest of
 *   them (of the waiting job's priority or lower) is suspended, as for a
 *   job of higher priority (dev_prio.c), its buffers move out of the
 *   arena into a memfd (dev__carry_waiting, as for a move), and it waits
 *   in coop_wait until no other user's job waits for room that it would
 *   take past its share, then resumes where it stopped once its buffers
 *   fit (a resumption that finds no room waits, suspended, for the next
 *   run's end). A job of that user already suspended (for a priority, a
 *   share) with its copies in the arena gives them first, with no
 *   suspension to wait for. One such suspension at a time; a job whose
 *   own user would pass the share takes no room from others. Without this, a
 *   cooperative job of hours held its copies for hours, and another
 *   user's job waited as long;
 * - a job of higher priority that waits for room has cooperative jobs of
 *   lower priority (any user's, as for workers: dev_prio.c) give theirs
 *   the same way, the lowest, newest first; they resume as room comes.
 * A job that gave its room back and resumed runs DEV_ROOM_GAP_NS at least
 * before it is suspended for room again.
 *
 * Device thread only.
 */
#include <stdio.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

/* The arena bytes job j's copies hold now. */
static uint64_t copies_of(const struct job *j) {
  uint64_t n = 0;
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].dev && !j->args[i].devbuf_id) n += j->args[i].size;
  return n;
}

/* The arena bytes held by the copies of d's runs and of its suspended
 * jobs waiting to resume (their copies stay): all of them (uid NULL), or
 * those of *uid's jobs. */
static uint64_t held_bytes(const struct dev *d, const uint32_t *uid) {
  uint64_t n = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    if (!uid || r->j->uid == *uid) n += copies_of(r->j);
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next)
    if (j->dev_run && (!uid || j->uid == *uid)) n += copies_of(j);
  return n;
}

uint64_t dev__room_held(const struct dev *d) { return held_bytes(d, NULL); }

/* The arena bytes uid holds for its share: its jobs' copies and its
 * device buffers there (dev_bufs.c). A device buffer stays until it is
 * freed, so it gives no room back; but without it a user's buffers took
 * half the arena beyond the half its running jobs' copies may hold, and
 * another user's job waited for those jobs' end. */
static uint64_t user_bytes(const struct dev *d, uint32_t uid) {
  return held_bytes(d, &uid) + dev__bufs_in_arena(d, uid);
}

static unsigned kib(uint64_t n) {
  uint64_t k = (n + 1023) >> 10;
  return k > UINT32_MAX ? UINT32_MAX : (unsigned)k;
}

static void publish(struct job *j, uint8_t why, unsigned count, unsigned held, unsigned mine) {
  atomic_store(&j->slot_count, count);
  atomic_store(&j->slot_held, held);
  atomic_store(&j->slot_mine, mine);
  atomic_store(&j->slot_why, why);
  atomic_store(&j->slot_ahead, 1);
}

/* [limits] max_buffer_percent_per_uid of the arena in bytes; 0: no bound. */
static uint64_t share_cap(const struct dev *d) {
  unsigned pct = d->cfg->max_buffer_percent_per_uid;
  return pct && pct < 100 ? dev__arena_bytes(d) * pct / 100 : 0;
}

/* The share of uid, as one that holds room others wait for: that of what
 * the other users' jobs and device buffers leave of the arena (a bound is
 * on: share_cap). Of the whole arena, two users within theirs held all of
 * it (one's device buffer half, the other's buffer and cooperative sweep
 * 456 KiB of 1 MiB), and a third user's job, holding nothing, waited for
 * the sweep's end; as for device buffers (sess_bufs.c, room_refused). */
static uint64_t share_of(const struct dev *d, uint32_t uid) {
  uint64_t arena = dev__arena_bytes(d), mine = user_bytes(d, uid);
  uint64_t all = held_bytes(d, NULL) + dev__bufs_in_arena_all(d);
  uint64_t others = all > mine ? all - mine : 0;
  return others < arena ? (arena - others) * d->cfg->max_buffer_percent_per_uid / 100 : 0;
}

/* Whether j's user, its copies and j's together, would hold more than its
 * share of the arena while another user's job waits for room (itself: not
 * one held back for its own user's share, whose wait is that user's, and
 * would otherwise hold j back for as long) within its own user's share
 * (one past it waits for its user's room, as dev__room_preempt takes
 * nothing from others for it: else one user's job too large for its
 * share held every other user past theirs for as long as it waited). */
static int past_share(const struct dev *d, const struct job *j, uint64_t *mine, uint64_t *cap) {
  *cap = share_cap(d);
  uint64_t want = dev__buf_bytes(j);
  if (!*cap || !want) return 0;
  int other = 0;
  for (const struct job *w = d->room_head; w && !other; w = w->dev_next)
    other = w->uid != j->uid && atomic_load(&w->slot_why) == DEV_SLOT_ROOM &&
            user_bytes(d, w->uid) + dev__buf_bytes(w) <= *cap;
  if (!other) return 0;
  *mine = user_bytes(d, j->uid);
  *cap = share_of(d, j->uid);
  return *mine + want > *cap;
}

int dev__room_gated(struct dev *d, struct job *j) {
  uint64_t mine = 0, cap = 0;
  if (!past_share(d, j, &mine, &cap)) return 0;
  publish(j, DEV_SLOT_ROOM_SHARE, d->cfg->max_buffer_percent_per_uid, kib(mine), kib(cap));
  return 1;
}

int dev__room_holds(const struct dev *d, const struct job *j) {
  const struct run *r = j->dev_run;
  if (!r || r->carry_fd < 0) return 0; /* its buffers are in the arena */
  if (r->room_wait && r->room_seq == d->room_seq) return 1;
  uint64_t mine = 0, cap = 0;
  return past_share(d, j, &mine, &cap);
}

/* The job waiting for room itself (not held back for a share), not
 * cancelled, of the highest priority, the first among equals; NULL: none. */
static const struct job *first_waiting(const struct dev *d) {
  const struct job *best = NULL;
  for (const struct job *w = d->room_head; w; w = w->dev_next)
    if (atomic_load(&w->slot_why) == DEV_SLOT_ROOM && !atomic_load(&w->cancel) &&
        (!best || w->priority > best->priority))
      best = w;
  return best;
}

/* What may give w its room: a job of strictly lower priority (any user's,
 * as for workers: dev_prio.c), or, where w's user stays within its share
 * of the arena (within), one of w's priority or lower of another user
 * whose copies and device buffers hold more than its share of what the
 * others leave (share_of). Its copies in the arena, not cancelled. */
struct room_need {
  const struct job *w;
  uint64_t cap;
  int within;
};

static int gives_room(const struct dev *d, const struct room_need *n, const struct job *j) {
  if (!copies_of(j) || atomic_load(&j->cancel)) return 0;
  if (j->priority < n->w->priority) return 1;
  return n->within && j->uid != n->w->uid && j->priority <= n->w->priority &&
         user_bytes(d, j->uid) > share_of(d, j->uid);
}

/* Whether r's buffers came back into the arena less than DEV_ROOM_GAP_NS
 * ago: it gives no room again yet. */
static int back_lately(const struct run *r) {
  return r->room_back_at && coop__now_ns() - r->room_back_at < DEV_ROOM_GAP_NS;
}

/* The run to suspend for the room: the lowest priority that gives it, the
 * newest started among equals; NULL: none, or one suspends for room
 * already. */
static struct run *room_victim(struct dev *d, const struct room_need *n) {
  struct run *best = NULL;
  for (struct run *r = d->runs; r; r = r->next) {
    const struct job *j = r->j;
    if (r->suspending && (r->room_out || atomic_load(&j->suspended_for) == DEV_FOR_ROOM))
      return NULL;
    if (!dev__may_suspend(r) || !gives_room(d, n, j) || back_lately(r)) continue;
    if (!best || j->priority < best->j->priority ||
        (j->priority == best->j->priority && r->t0 > best->t0))
      best = r;
  }
  return best;
}

/* A job waiting suspended (for a priority, a share) whose copies stay in
 * the arena and that gives the room: its buffers may leave at once, with
 * no suspension to wait for. */
static struct run *suspended_victim(struct dev *d, const struct room_need *n) {
  for (struct job *j = d->coop_wait_head; j; j = j->dev_next) {
    struct run *r = j->dev_run;
    if (r && !r->room_out && !dev__carried(r) && gives_room(d, n, j) && !back_lately(r)) return r;
  }
  return NULL;
}

void dev__room_preempt(struct dev *d) {
  struct room_need n = {.w = first_waiting(d), .cap = share_cap(d)};
  if (!n.w) return;
  /* a job that would itself put its user past the share takes no room
   * from others' jobs of its priority: it waits for their ends */
  n.within = n.cap && user_bytes(d, n.w->uid) + dev__buf_bytes(n.w) <= n.cap;
  struct run *s = suspended_victim(d, &n);
  if (s) { /* out now, and the waiting jobs tried at once */
    s->room_out = 1;
    dev__pump_room(d);
    return;
  }
  struct run *v = room_victim(d, &n);
  if (!v) return;
  char why[192];
  if (v->j->priority < n.w->priority) {
    snprintf(why, sizeof why, "job %llu of priority %d waits for room in the device arena",
             (unsigned long long)n.w->id, (int)n.w->priority);
    dev__suspend(d, v, n.w->priority, why);
    v->room_out = v->suspending; /* its buffers leave once it is suspended */
    return;
  }
  snprintf(why, sizeof why,
           "its user's jobs and device buffers hold %u KiB of the device arena, past [limits] "
           "max_buffer_percent_per_uid, and job %llu of another user waits for room there",
           kib(user_bytes(d, v->j->uid)), (unsigned long long)n.w->id);
  dev__suspend(d, v, DEV_FOR_ROOM, why);
}

/* The buffers of the jobs suspended for room leave the arena for a memfd
 * each (dev__carry_waiting, as for a move): 1 if any did. One that cannot
 * be copied out fails, as a move's would. */
static int evict(struct dev *d) {
  int out = 0;
  if (d->swap_now) return 0; /* a reload carries them: dev_carry.c */
  for (struct job **p = &d->coop_wait_head; *p;) {
    struct job *j = *p;
    struct run *r = j->dev_run;
    if (!r || !d->rt || dev__carried(r) || !copies_of(j) || atomic_load(&j->cancel) ||
        (atomic_load(&j->suspended_for) != DEV_FOR_ROOM && !r->room_out)) {
      p = &j->dev_next;
      continue;
    }
    uint64_t n = copies_of(j);
    if (dev__carry_waiting(d, r, "out of the device arena", NULL)) {
      dev__coop_wait_remove(d, p);
      dev__drop_suspended(d, j); /* failed: its run ends with the job's error */
    } else {
      log_info(
          "job %llu (%s, uid %u): its buffers (%u KiB) moved out of the device arena to "
          "make room for a job waiting there",
          (unsigned long long)j->id, j->kernel, j->uid, kib(n));
      r->room_out = 0;
      p = &j->dev_next;
    }
    out = 1;
  }
  return out;
}

int dev__room_later(struct dev *d, struct job *j) {
  uint64_t held = held_bytes(d, NULL);
  /* one whose bytes alone pass the arena fails now: no end of other jobs
   * gives it room, and it waited for as long as any ran */
  if (!held || dev__buf_bytes(j) > dev__arena_bytes(d)) return 0;
  publish(j, DEV_SLOT_ROOM, d->cfg->arena_mb, kib(held), kib(dev__buf_bytes(j)));
  return 1;
}

void dev__room_wait(struct dev *d, struct job *j) {
  dev__jobq_push(&d->room_head, &d->room_tail, j);
}

void dev__pump_room(struct dev *d) {
  if (evict(d)) {
    d->room_freed = 1;
    d->room_seq++;
  }
  if (!d->room_head) return;
  /* a swap keeps them all: what ended meanwhile is tried after it */
  int retry = d->room_freed && !d->swap_now;
  if (retry) d->room_freed = 0;
  /* the smallest job that found no room in this pump: a larger one would
   * not either, and is not tried (each try is a device-process request) */
  uint64_t none_for = UINT64_MAX;
  struct job *keep = NULL, *keep_tail = NULL, *j = d->room_head;
  d->room_head = d->room_tail = NULL;
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    if (d->stop_now || atomic_load(&j->cancel)) {
      atomic_store(&j->slot_ahead, 0);
      dev__cancel_queued(d, j, "cancelled while waiting for room in the device arena");
      if (!d->swap_now) retry = 1; /* a job it held back (dev__room_gated) may go */
    } else if (retry && dev__buf_bytes(j) < none_for) {
      atomic_store(&j->slot_ahead, 0);
      /* in order, behind the ones kept so far: a start that finds no room
       * (or is held back) comes back to d->room_head, after them */
      d->room_head = keep;
      d->room_tail = keep_tail;
      dev__start_job(d, j);
      if (d->room_tail == j && atomic_load(&j->slot_why) == DEV_SLOT_ROOM)
        none_for = dev__buf_bytes(j);
      keep = d->room_head;
      keep_tail = d->room_tail;
      d->room_head = d->room_tail = NULL;
    } else {
      dev__jobq_push(&keep, &keep_tail, j);
    }
    j = n;
  }
  d->room_head = keep;
  d->room_tail = keep_tail;
}

void dev__room_publish(struct dev *d) {
  uint64_t n = held_bytes(d, NULL);
  for (const struct job *j = d->room_head; j; j = j->dev_next) n += dev__buf_bytes(j);
  atomic_store(&d->room_taken, n);
}

uint64_t dev_room_taken(const struct dev *d) { return atomic_load(&d->room_taken); }

void dev_room_reserve(struct dev *d, uint64_t bytes) { atomic_fetch_add(&d->room_taken, bytes); }
