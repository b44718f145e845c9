/*
 * dev_move.c: cooperative jobs that move to another device (docs/daemon.md,
 * "Moving jobs between devices").
 *
 * A job moves when MIGRATE asks it to (job.move_to, set by the loop), or
 * by itself when it waits suspended (for a job of higher priority, a
 * share, or after a restart) while another device has a free cooperative
 * slot and nothing waiting for it (hooks->move_target, which reads what
 * each device thread publishes in dev_free_slots), unless it works on
 * device buffers, which stay on their device, or its SUBMIT named its
 * device or MIGRATE moved it, to stay where its user put it. The mechanism is the
 * reload's (dev_carry.c): a running job's task is suspended (every
 * workgroup but 0 leaves at its offer_kill; workgroup 0 saves its state,
 * docs/scheduler.md "Suspension"), its state and every buffer's contents
 * leave this device process for two memfds, and the job with its run goes
 * to the other device thread's in queue (dev__adopt), which puts it first
 * in its slot queue as a suspended job; when a slot is free there, its
 * buffers are staged into that device process and its task resumes from
 * the state (dev__resume_run). A job waiting suspended has only its
 * buffers to copy out; one waiting that never ran moves as it is, from the
 * slot queue, and from the queues of jobs waiting for room or held back
 * after a restart too (dev__move_queued): MIGRATE answered OK for such a
 * job and it stayed there, until it started here.
 *
 * A job that never started and waits for room in this device's arena
 * moves, once, to a device whose arena has room for its copies now
 * (hooks->room_target, which reads what each device thread publishes in
 * dev_room_taken), unless its SUBMIT named its device (docs/daemon.md,
 * "Room in the arena").
 *
 * Ownership: the run and the job belong to this device thread until
 * dev__adopt links them into the other's in queue under its mutex; from
 * then on to the other's. job.device is stored before that link, so that
 * the loop, which reads it for STATUS and CANCEL, sees the new device no
 * later than the new device thread owns it (a CANCEL sent to the old one
 * in between is a flag on the job: the new thread sees it on its pass).
 * Device thread only.
 */
#include <stdio.h>
#include <unistd.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

int dev__move_claim(struct job *j, struct dev *to, unsigned index) {
  uint8_t none = 0;
  if (!atomic_compare_exchange_strong(&j->move_to, &none, JOB_MOVE_CLAIMED)) return -1;
  atomic_store(&j->move_dev, to); /* before the index: whoever sees it sees move_dev */
  atomic_store(&j->move_to, (uint8_t)(index + 1));
  return 0;
}

unsigned dev__move_asked(const struct job *j) {
  uint8_t v = atomic_load(&j->move_to);
  return v == JOB_MOVE_CLAIMED ? 0 : v;
}

void dev__move_request(struct dev *d, struct run *r) {
  /* not yet running, or a reload's carry, a priority's suspension or a
   * checkpoint first: the move waits for a later pass */
  if (!d->rt || !dev__may_suspend(r)) return;
  int e = dp_suspend(d->rt, r->task[0]);
  if (e == 0) r->migrating = 1;
  log_debug("job %llu (%s): to move: %s", (unsigned long long)r->j->id, r->j->kernel,
            e ? coop_strerror(e) : "suspending");
}

/* Hands j (and its run, if any, in j->dev_run) to the device it moves to;
 * if that one is stopping, the job ends here (cancelled, as the stop
 * would have). */
static void hand_over(struct dev *d, struct job *j) {
  unsigned index = dev__move_asked(j) - 1u; /* asked wholly: moves() or move_room_waiters */
  struct dev *to = atomic_load(&j->move_dev);
  atomic_store(&j->move_dev, NULL);
  atomic_store(&j->move_to, 0); /* last: a new move may be asked from here on */
  d->slots_seq++;
  if (dev__adopt(to, j, index) == 0) {
    log_info("job %llu (%s): handed to device %u", (unsigned long long)j->id, j->kernel, index);
    return;
  }
  if (j->dev_run) {
    dev__drop_suspended(d, j); /* CANCELLED */
  } else {
    dev__cancel_queued(d, j, "cancelled: the daemon is shutting down");
  }
}

void dev__move_out(struct dev *d, struct run *r) {
  struct job *j = r->j;
  r->migrating = 0;
  r->moving = 0;
  r->next = NULL;
  r->suspended_at = coop__now_ns();
  j->dev_run = r;
  hand_over(d, j);
}

/* Whether waiting j moves: asked to, or suspended with a device free for it. */
static int moves(struct dev *d, struct job *j) {
  struct run *r = j->dev_run;
  if (r && r->carry_fd < 0 && !d->rt) return 0; /* its buffers come back with the device */
  if (dev__move_asked(j)) return 1;
  if (atomic_load(&j->move_to)) return 0; /* the loop is asking one now: the next pass */
  if (!r || !d->hooks->move_target || atomic_load(&j->cancel) || d->stop_now) return 0;
  /* its device buffers stay on this device (MIGRATE refuses it so): moved,
   * its task named no buffer of its own there, and its own missed every
   * round after the suspension */
  if (job_has_devbufs(j)) return 0;
  /* moved by hand: to a device whose slots were all held, it went back to
   * the one it left at once, and never ran where MIGRATE put it; and one
   * whose SUBMIT named its device runs there, as its user asked */
  if (atomic_load(&j->moved_by_hand) || j->device_named) return 0;
  struct dev *to = NULL;
  int index = d->hooks->move_target(d->user, d, j, &to);
  if (index < 0 || !to || dev__move_claim(j, to, (unsigned)index)) return 0;
  log_info("job %llu (%s): suspended here while device %d has a free slot: it moves there",
           (unsigned long long)j->id, j->kernel, index);
  return 1;
}

void dev__move_waiting(struct dev *d) {
  for (struct job **p = &d->coop_wait_head; *p;) {
    struct job *j = *p;
    struct run *r = j->dev_run;
    /* its buffers in a share of this device's next process (a reload in
     * progress): it moves once they are staged there */
    if (!moves(d, j) || (r && r->carry_share)) {
      p = &j->dev_next;
      continue;
    }
    dev__coop_wait_remove(d, p);
    if (r && r->carry_fd < 0 && dev__carry_waiting(d, r, "for its move to another device", NULL)) {
      atomic_store(&j->move_to, 0);
      dev__drop_suspended(d, j); /* failed: its run ends with the job's error */
      continue;
    }
    hand_over(d, j);
  }
  unsigned slots = dev__coop_slots(d), running = dev__coop_running(d, NULL);
  int open = d->rt && !d->swap_now && !d->stop_now && !d->broken[0] && !d->coop_wait_head;
  atomic_store(&d->free_slots, open && slots > running ? slots - running : 0);
}

/* Whether j, waiting here for room in the arena, may move to a device that
 * has it: a true room waiter (not one held back for its user's share,
 * whose wait is that user's), never started, for any device, on no device
 * buffer of this one, and not moved for room before (the room a device
 * publishes may be gone by the time the job is there: it then waits there,
 * and does not go back and forth). */
static int may_move_for_room(const struct dev *d, const struct job *j) {
  return d->hooks->room_target && !j->dev_run && !j->device_named && !j->moved_for_room &&
         !atomic_load(&j->moved_by_hand) && !atomic_load(&j->cancel) && !d->stop_now &&
         atomic_load(&j->slot_why) == DEV_SLOT_ROOM && !job_has_devbufs(j);
}

int dev__move_queued(struct dev *d, struct job *j) {
  if (!dev__move_asked(j)) return 0;
  log_info("job %llu (%s, uid %u): asked to move while it waited to start: it moves now",
           (unsigned long long)j->id, j->kernel, j->uid);
  atomic_store(&j->slot_ahead, 0);
  hand_over(d, j);
  return 1;
}

void dev__move_room_waiters(struct dev *d) {
  struct job *keep = NULL, *keep_tail = NULL, *j = d->room_head;
  d->room_head = d->room_tail = NULL;
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    /* MIGRATE's first: it waited here for this arena's room, the device
     * it was sent to idle, until the jobs holding that room ended */
    if (dev__move_queued(d, j)) {
      j = n;
      continue;
    }
    struct dev *to = NULL;
    uint64_t bytes = dev__buf_bytes(j);
    int index = may_move_for_room(d, j) ? d->hooks->room_target(d->user, d, j, bytes, &to) : -1;
    if (index < 0 || !to || dev__move_claim(j, to, (unsigned)index)) {
      dev__jobq_push(&keep, &keep_tail, j);
    } else {
      log_info(
          "job %llu (%s, uid %u): no room for its %llu bytes in device %u's arena, room in "
          "device %d's: it moves there",
          (unsigned long long)j->id, j->kernel, j->uid, (unsigned long long)bytes,
          (unsigned)atomic_load(&j->device), index);
      j->moved_for_room = 1;
      atomic_store(&j->slot_ahead, 0);
      hand_over(d, j);
    }
    j = n;
  }
  d->room_head = keep;
  d->room_tail = keep_tail;
}

unsigned dev_free_slots(const struct dev *d) { return atomic_load(&d->free_slots); }
