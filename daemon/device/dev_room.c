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
 * - while another user's job waits here, a user whose running jobs hold
 *   more than [limits] max_buffer_percent_per_uid of the arena starts no
 *   job with buffers to copy: the room its ends give back goes to the
 *   waiting job, not to its own next one (without this, a flood of small
 *   jobs took each freed piece and a larger job waited for ever).
 *
 * Device thread only.
 */
#include "dev_internal.h"

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

unsigned dev__room_waiting(const struct dev *d, uint32_t uid) {
  unsigned n = 0;
  for (const struct job *j = d->room_head; j; j = j->dev_next)
    n += j->uid == uid && !dev__is_coop(j);
  return n;
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

int dev__room_gated(struct dev *d, struct job *j) {
  unsigned pct = d->cfg->max_buffer_percent_per_uid;
  if (!pct || pct >= 100 || !d->room_head) return 0;
  int other = 0;
  for (const struct job *w = d->room_head; w && !other; w = w->dev_next) other = w->uid != j->uid;
  uint64_t want = dev__buf_bytes(j);
  if (!other || !want) return 0;
  uint64_t cap = ((uint64_t)d->cfg->arena_mb << 20) * pct / 100, mine = held_bytes(d, &j->uid);
  if (mine + want <= cap) return 0;
  publish(j, DEV_SLOT_ROOM_SHARE, pct, kib(mine), kib(cap));
  return 1;
}

int dev__room_later(struct dev *d, struct job *j) {
  uint64_t held = held_bytes(d, NULL);
  if (!held) return 0;
  publish(j, DEV_SLOT_ROOM, d->cfg->arena_mb, kib(held), kib(dev__buf_bytes(j)));
  return 1;
}

void dev__room_wait(struct dev *d, struct job *j) {
  dev__jobq_push(&d->room_head, &d->room_tail, j);
}

void dev__pump_room(struct dev *d) {
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
