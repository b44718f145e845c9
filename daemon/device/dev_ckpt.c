/*
 * dev_ckpt.c: checkpoints of cooperative jobs, and their use after a
 * device-process restart (docs/daemon.md, "Checkpoints").
 *
 * Every [jobs] checkpoint_ms, a running cooperative job (one task, no
 * device buffers) is suspended as a reload or a priority would suspend it
 * (docs/scheduler.md, "Suspension": every workgroup but 0 leaves at its
 * offer_kill, workgroup 0 saves its threads' state structs after a step).
 * While it is suspended nothing writes its buffers, so its state and the
 * contents of every buffer (a copy, the buffers stay in the arena) form
 * one consistent point; they go to two memfds, which replace the run's
 * previous checkpoint only once both are complete, and the task is resumed
 * from the state, in the same megakernel.
 *
 * The copy to host memory runs at the host link's speed (about 3 GB/s
 * through the arena's bounce buffer: 160 ms for 500 MB), and a job waiting
 * for it does no work. So where [jobs] checkpoint_snapshot_percent allows
 * it, the job's buffers are first copied on the device, while it is
 * suspended, into one snapshot buffer in the arena (allocated before the
 * first checkpoint is asked, kept while the task runs here): the task
 * resumes as soon as that copy is done, and the snapshot drains into the
 * pending memfd DEV_DRAIN_CHUNK bytes a pass of the device thread
 * (dev__ckpt_drain) while the job runs on. Nothing writes the snapshot in
 * the meantime, so what drains is the suspended point; the pending pair
 * becomes the checkpoint when the last byte is there. A restart or a
 * suspension before that abandons the drain, and the previous checkpoint
 * stays the one to resume from. Snapshots are a cache: when a job's or a
 * device buffer's staging finds the arena full, every snapshot is freed
 * and the staging tried again (dev__ckpt_evict), so one user's
 * checkpoints never cost another user's job its room.
 *
 * When the device process dies or is restarted (dev_watch.c), a run with
 * a checkpoint does not fail with ELOST: its job goes back to coop_wait,
 * first, as a suspended job whose saved state and carried buffers are
 * copies of the checkpoint's, and it resumes in the new device process
 * when its turn comes, as a job carried across a reload does. The work
 * since the checkpoint is done again; its RESULT's message says how much.
 * Not restored: the job whose kernel caused the restart (it would hang
 * again), one cancelled or failed, one already run again DEV_MAX_RERUNS
 * times, and any while a reload's swap is pending (its kernel may change).
 * Device thread only.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "log.h"

unsigned dev__carry_bufs(struct job *j, struct dp_buf *b, int fd, int in) {
  unsigned n = 0;
  uint64_t off = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF || a->devbuf_id) continue;
    struct dp_buf *x = &b[n++];
    memset(x, 0, sizeof *x);
    x->size = a->size;
    x->arg = a->dev ? a->dev - 1 : 0;
    x->in = (uint8_t)in;
    x->out = (uint8_t)!in;
    x->fd = fd;
    x->off = off;
    off += a->size;
  }
  if (!in && fd >= 0 && ftruncate(fd, (off_t)off)) return 0;
  return n;
}

void dev__staged_args(struct job *j, const struct dp_buf *b) {
  for (unsigned i = 0, k = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF && !j->args[i].devbuf_id) j->args[i].dev = b[k++].arg + 1;
}

static int checkpointable(const struct dev *d, const struct run *r) {
  const struct job *j = r->j;
  return d->cfg->checkpoint_ms && d->rt && !d->swap_now && !d->stop_now && dev__may_suspend(r) &&
         !j->error && !job_has_devbufs(j) && !r->draining;
}

uint64_t dev__buf_bytes(const struct job *j) {
  uint64_t n = 0;
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF && !j->args[i].devbuf_id) n += j->args[i].size;
  return n;
}

/* r's snapshot buffer, allocated (zeroed, in the arena) before the first
 * checkpoint of its task is asked, while the task runs: 1 when it has one.
 * None beyond [jobs] checkpoint_snapshot_percent of the arena, where the
 * arena has no room now, or while a job waits for room (dev_room.c: a
 * cache must not take what a job waits for); tried again at the next
 * checkpoint. */
static int snapshot_ready(struct dev *d, struct run *r) {
  if (r->snap_arg) return 1;
  uint64_t n = dev__buf_bytes(r->j);
  uint64_t most = dev__arena_bytes(d) / 100 * d->cfg->snapshot_percent;
  if (n == 0 || n > most || d->room_head) return 0;
  /* zeroed, though a save writes it all: zeroing touches every managed page
   * while the job runs; untouched, the first copy on the device took 75 ms
   * instead of 1.4 (502 MB, H200) while the job waited for it */
  struct dp_buf b = {.size = n, .fd = -1};
  if (dp_stage(d->rt, &b, 1)) return 0;
  r->snap_arg = b.arg;
  r->snap_bytes = n;
  return 1;
}

void dev__ckpt_request(struct dev *d, struct run *r, int64_t now) {
  if (!checkpointable(d, r)) return;
  int64_t last = r->ckpt_at ? r->ckpt_at : r->task_ran[0];
  if (now - last < (int64_t)d->cfg->checkpoint_ms * 1000000) return;
  snapshot_ready(d, r);
  int e = dp_suspend(d->rt, r->task[0]);
  if (e == 0) r->ckpting = 1, r->ckpt_asked_at = coop__now_ns(); /* after the allocation */
  log_debug("job %llu (%s): checkpoint asked: %s", (unsigned long long)r->j->id, r->j->kernel,
            e ? coop_strerror(e) : "suspending");
}

/* A memfd to write a checkpoint into: the spare one, or a new one. */
static int target(int *spare, const char *name) {
  int fd = *spare;
  *spare = -1;
  return fd >= 0 ? fd : memfd_create(name, MFD_CLOEXEC);
}

/* The suspended task's state and a copy of its buffers into *sfd and *bfd
 * (the spare pair, or new memfds): 0, or a coop code (the pair kept as the
 * spare). *bytes: the buffers' size. With `to_snap`, the buffers go into
 * r's snapshot on the device instead, laid out as in the memfd (sized):
 * the pair is pending until dev__ckpt_drain has filled it. */
static int save(struct dev *d, struct run *r, int to_snap, int *sfd, int *bfd, uint64_t *bytes) {
  struct job *j = r->j;
  *sfd = target(&r->spare_state_fd, "coopd-checkpoint-state");
  *bfd = target(&r->spare_buf_fd, "coopd-checkpoint-buffers");
  int e = *sfd < 0 || *bfd < 0 ? COOP_ENOMEM : dp_saved(d->rt, r->task[0], *sfd);
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  unsigned n = e ? 0 : dev__carry_bufs(j, b, *bfd, 0);
  *bytes = 0;
  for (unsigned i = 0; i < n; i++) {
    if (to_snap)
      b[i].at = b[i].off, b[i].fd = -1;
    else
      b[i].keep = 1; /* copied, not freed */
    *bytes += b[i].size;
  }
  int breach = -1;
  if (e == 0 && to_snap && (!n || *bytes != r->snap_bytes)) e = COOP_EINVAL; /* not its snapshot */
  if (e == 0 && n)
    e = to_snap ? dp_dup(d->rt, r->snap_arg, b, n, &breach) : dp_unstage(d->rt, b, n, 0, &breach);
  if (e == 0 && breach >= 0) e = COOP_EFAULT;
  if (e) {
    r->spare_state_fd = *sfd;
    r->spare_buf_fd = *bfd;
    *sfd = *bfd = -1;
  }
  return e;
}

int dev__ckpt_take(struct dev *d, struct run *r) {
  struct job *j = r->j;
  int64_t t0 = coop__now_ns();
  r->ckpting = 0;
  int sfd, bfd;
  uint64_t bytes;
  int e = r->snap_arg ? save(d, r, 1, &sfd, &bfd, &bytes) : COOP_EINVAL;
  int snapped = e == 0;
  if (e && e != COOP_EFAULT && e != COOP_ELOST) e = save(d, r, 0, &sfd, &bfd, &bytes);
  /* The device process died under the checkpoint: not the job's failure.
   * The run stays as it is, and the restart (dev_watch.c) resumes it from
   * its last checkpoint; failing it here lost the job instead. */
  if (e == COOP_ELOST) return -1;
  if (snapped) { /* the pair waits for the drain; the task resumes now */
    r->draining = 1;
    r->drained = 0;
    r->pend_state_fd = sfd;
    r->pend_buf_fd = bfd;
    r->drain_t0 = t0;
  } else if (e == COOP_EFAULT) { /* a guard zone written: the job wrote outside its buffer */
    dev__fail(j, e, "%s", "a guard zone was overwritten (found at a checkpoint)");
    atomic_store(&j->cancel, 1);
  } else if (e) { /* the job runs on, with its previous checkpoint */
    log_warn("job %llu (%s): checkpoint failed: %s", (unsigned long long)j->id, j->kernel,
             coop_strerror(e));
  } else { /* the new pair is the checkpoint, the old one the spare */
    r->spare_state_fd = r->ckpt_state_fd;
    r->spare_buf_fd = r->ckpt_buf_fd;
    r->ckpt_state_fd = sfd;
    r->ckpt_buf_fd = bfd;
    r->ckpt_at = t0;
    j->checkpoints++;
  }
  /* its own state, not the checkpoint's copy: the same bytes either way */
  int fd = snapped ? r->pend_state_fd
           : e     ? memfd_create("coopd-checkpoint-state", MFD_CLOEXEC)
                   : r->ckpt_state_fd;
  int re = fd < 0 ? COOP_ENOMEM : e ? dp_saved(d->rt, r->task[0], fd) : 0;
  dev__segment_end(d, r);
  dp_task_release(d->rt, r->task[0]);
  r->ninflight = 0;
  int64_t t1 = coop__now_ns();
  if (re == 0 && !j->error) re = dev__resume_task(d, r, fd);
  if (e && fd >= 0) close(fd);
  if (re == COOP_ELOST && !j->error) {
    r->ninflight = 1; /* as above: the restart takes the run as it was */
    return -1;
  }
  if (j->error) return -1;
  if (re) {
    dev__fail(j, re, "could not resume it after a checkpoint: %s", coop_strerror(re));
    return -1;
  }
  int64_t t2 = coop__now_ns();
  /* a snapshot's checkpoint counts once drained (dev__ckpt_drain) */
  log_debug(
      "job %llu (%s): checkpoint %u: suspended %lld us after the request, %llu bytes "
      "copied%s in %lld us, resumed in %lld us%s",
      (unsigned long long)j->id, j->kernel, j->checkpoints + (snapped ? 1u : 0u),
      (long long)((t0 - r->ckpt_asked_at) / 1000), (unsigned long long)bytes,
      snapped ? " on the device" : "", (long long)((t1 - t0) / 1000), (long long)((t2 - t1) / 1000),
      snapped ? "; draining" : "");
  return 0;
}

void dev__ckpt_drain(struct dev *d, struct run *r, int64_t now, int64_t *wake) {
  if (!r->draining || !d->rt) return;
  uint64_t k = r->snap_bytes - r->drained;
  if (k > DEV_DRAIN_CHUNK) k = DEV_DRAIN_CHUNK;
  struct dp_buf b = {
      .size = k, .arg = r->snap_arg, .at = r->drained, .off = r->drained, .fd = r->pend_buf_fd};
  int e = dp_copy(d->rt, &b, 0);
  if (e) { /* the job runs on, with its previous checkpoint */
    log_warn("job %llu (%s): checkpoint failed: its snapshot could not be copied out: %s",
             (unsigned long long)r->j->id, r->j->kernel, coop_strerror(e));
    if (e == COOP_ELOST) return; /* the restart forgets the drain */
    dev__ckpt_drop(d, r);
    return;
  }
  r->drained += k;
  if (r->drained < r->snap_bytes) {
    *wake = now;
    return;
  }
  /* the pending pair is the checkpoint, the old one the spare */
  r->spare_state_fd = r->ckpt_state_fd;
  r->spare_buf_fd = r->ckpt_buf_fd;
  r->ckpt_state_fd = r->pend_state_fd;
  r->ckpt_buf_fd = r->pend_buf_fd;
  r->pend_state_fd = r->pend_buf_fd = -1;
  r->ckpt_at = r->drain_t0;
  r->draining = 0;
  r->j->checkpoints++;
  log_debug("job %llu (%s): checkpoint %u: %llu bytes drained in %lld us while it ran",
            (unsigned long long)r->j->id, r->j->kernel, r->j->checkpoints,
            (unsigned long long)r->snap_bytes, (long long)((coop__now_ns() - r->drain_t0) / 1000));
}

void dev__ckpt_forget(struct run *r) {
  r->snap_arg = r->snap_bytes = 0;
  if (!r->draining) return;
  r->draining = 0; /* the pair goes back as the spare (taken from it: none there now) */
  int *spare[] = {&r->spare_state_fd, &r->spare_buf_fd},
      *pend[] = {&r->pend_state_fd, &r->pend_buf_fd};
  for (unsigned i = 0; i < 2; i++) {
    if (*spare[i] >= 0) close(*spare[i]);
    *spare[i] = *pend[i];
    *pend[i] = -1;
  }
}

uint64_t dev__dp_bytes(const struct dp_buf *b, unsigned n) {
  uint64_t t = 0;
  for (unsigned i = 0; i < n; i++) t += b[i].size;
  return t;
}

unsigned dev__ckpt_evict(struct dev *d, uint64_t need) {
  /* where the arena less the jobs' copies and the device buffers cannot
   * hold it, freeing them makes no room: another user's create sized to
   * fail, again and again, freed every user's snapshots for nothing */
  uint64_t taken = dev__room_held(d) + dev__bufs_in_arena_all(d), arena = dev__arena_bytes(d);
  if (need > arena || taken > arena - need) return 0;
  unsigned n = 0;
  for (struct run *r = d->runs; r; r = r->next)
    if (r->snap_arg) {
      dev__ckpt_drop(d, r);
      n++;
    }
  if (n)
    log_info("%s: the arena is full: %u checkpoint snapshot%s freed for a job's buffers",
             d->logname, n, n == 1 ? "" : "s");
  return n;
}

void dev__ckpt_drop(struct dev *d, struct run *r) {
  if (r->snap_arg && d->rt) {
    struct dp_buf b = {.size = r->snap_bytes, .arg = r->snap_arg, .fd = -1};
    int breach;
    dp_unstage(d->rt, &b, 1, 0, &breach); /* nothing but coopd writes it */
  }
  dev__ckpt_forget(r);
}

const char *dev__restart_refused(struct dev *d, const struct run *r) {
  const struct job *j = r->j;
  if (j->id == d->hung_job) return "its kernel caused the restart";
  if (j->error || atomic_load(&j->cancel)) return "it was cancelled or failed";
  /* named: it said only that the job was lost, and the log counted it
   * among those to resume */
  if (j->reruns >= DEV_MAX_RERUNS)
    return "it had been resumed or run again after " DEV_MAX_RERUNS_S
           " device restarts already, the most a job may";
  if (d->stop_now) return "the daemon is shutting down";
  return NULL;
}

const char *dev__ckpt_refused(struct dev *d, const struct run *r) {
  if (r->ckpt_state_fd < 0) return "it has none";
  const char *why = dev__restart_refused(d, r);
  if (why) return why;
  pthread_mutex_lock(&d->mu);
  int swap = d->swapping;
  pthread_mutex_unlock(&d->mu);
  return swap ? "a kernel reload was about to swap the megakernel (its kernel may change)" : NULL;
}

/* j's RESULT message after a device restart it resumed after (restores,
 * restarts_survived, lost_ns counted). */
static void restored_message(struct job *j) {
  unsigned n = j->restarts_survived;
  if (j->restores)
    snprintf(j->message, sizeof j->message,
             "resumed from its last checkpoint after %u device restart%s: %lld ms of work lost", n,
             n == 1 ? "" : "s", (long long)(j->lost_ns / 1000000));
  else
    snprintf(j->message, sizeof j->message,
             "resumed where it was suspended after %u device restart%s: no work lost", n,
             n == 1 ? "" : "s");
}

void dev__wait_after_restart(struct dev *d, struct run *r, int64_t now, int32_t why) {
  struct job *j = r->j;
  j->reruns += dev__restart_charged(d, j);
  j->restarts_survived++;
  restored_message(j);
  r->ninflight = 0;
  r->moving = r->suspending = r->resuming = r->ckpting = r->preempting = 0;
  r->room_wait = 0; /* room is judged again in the next device process */
  r->suspended_at = now;
  atomic_store(&j->suspended_for, why);
  atomic_store(&j->suspended, 1);
  j->dev_run = r; /* r->next as it was: a caller stepping d->runs unlinks r */
  dev__coop_wait_push_front(d, j);
}

int dev__ckpt_restore(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  if (dev__ckpt_refused(d, r)) return 0;
  r->state_fd = dup(r->ckpt_state_fd); /* dev__resume_run closes these */
  r->carry_fd = dup(r->ckpt_buf_fd);
  if (r->state_fd < 0 || r->carry_fd < 0) {
    if (r->state_fd >= 0) close(r->state_fd);
    if (r->carry_fd >= 0) close(r->carry_fd);
    r->state_fd = r->carry_fd = -1;
    return 0;
  }
  /* the work since the checkpoint: to the restart, or to its suspension
   * if it was suspended then (a job suspended for 2 s, 200 ms of work
   * after its checkpoint, said "2229 ms of work lost") */
  int64_t end = r->lost_from ? r->lost_from : now;
  int64_t lost = end > r->ckpt_at ? end - r->ckpt_at : 0;
  r->lost_from = 0;
  j->restores++;
  j->lost_ns += lost;
  dev__wait_after_restart(d, r, now, DEV_FOR_RESTART);
  log_warn("job %llu (%s): resumes from its checkpoint of %lld ms before the restart",
           (unsigned long long)j->id, j->kernel, (long long)(lost / 1000000));
  return 1;
}

void dev__run_free(struct run *r) {
  int *fds[] = {&r->state_fd,       &r->carry_fd,     &r->ckpt_state_fd, &r->ckpt_buf_fd,
                &r->spare_state_fd, &r->spare_buf_fd, &r->pend_state_fd, &r->pend_buf_fd};
  for (unsigned i = 0; i < sizeof fds / sizeof *fds; i++)
    if (*fds[i] >= 0) close(*fds[i]);
  free(r);
}
