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
 * at once from the state, in the same megakernel.
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
  if (!in && ftruncate(fd, (off_t)off)) return 0;
  return n;
}

static int checkpointable(const struct dev *d, const struct run *r) {
  const struct job *j = r->j;
  return d->cfg->checkpoint_ms && d->rt && !d->swap_now && !d->stop_now && dev__may_suspend(r) &&
         !j->error && !job_has_devbufs(j);
}

void dev__ckpt_request(struct dev *d, struct run *r, int64_t now) {
  if (!checkpointable(d, r)) return;
  int64_t last = r->ckpt_at ? r->ckpt_at : r->task_ran[0];
  if (now - last < (int64_t)d->cfg->checkpoint_ms * 1000000) return;
  int e = dp_suspend(d->rt, r->task[0]);
  if (e == 0) r->ckpting = 1, r->ckpt_asked_at = now;
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
 * spare). *bytes: the buffers' size. */
static int save(struct dev *d, struct run *r, int *sfd, int *bfd, uint64_t *bytes) {
  struct job *j = r->j;
  *sfd = target(&r->spare_state_fd, "coopd-checkpoint-state");
  *bfd = target(&r->spare_buf_fd, "coopd-checkpoint-buffers");
  int e = *sfd < 0 || *bfd < 0 ? COOP_ENOMEM : dp_saved(d->rt, r->task[0], *sfd);
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  unsigned n = e ? 0 : dev__carry_bufs(j, b, *bfd, 0);
  *bytes = 0;
  for (unsigned i = 0; i < n; i++) {
    b[i].keep = 1; /* copied, not freed */
    *bytes += b[i].size;
  }
  int breach = -1;
  if (e == 0 && n) e = dp_unstage(d->rt, b, n, 0, &breach);
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
  int e = save(d, r, &sfd, &bfd, &bytes);
  if (e == COOP_EFAULT) { /* a guard zone written: the job wrote outside its buffer */
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
  int fd = e ? memfd_create("coopd-checkpoint-state", MFD_CLOEXEC) : r->ckpt_state_fd;
  int re = fd < 0 ? COOP_ENOMEM : e ? dp_saved(d->rt, r->task[0], fd) : 0;
  dev__segment_end(d, r);
  dp_task_release(d->rt, r->task[0]);
  r->ninflight = 0;
  int64_t t1 = coop__now_ns();
  if (re == 0 && !j->error) re = dev__resume_task(d, r, fd);
  if (e && fd >= 0) close(fd);
  if (j->error) return -1;
  if (re) {
    dev__fail(j, re, "could not resume it after a checkpoint: %s", coop_strerror(re));
    return -1;
  }
  int64_t t2 = coop__now_ns();
  log_debug(
      "job %llu (%s): checkpoint %u: suspended %lld us after the request, %llu bytes "
      "copied in %lld us, resumed in %lld us",
      (unsigned long long)j->id, j->kernel, j->checkpoints,
      (long long)((t0 - r->ckpt_asked_at) / 1000), (unsigned long long)bytes,
      (long long)((t1 - t0) / 1000), (long long)((t2 - t1) / 1000));
  return 0;
}

int dev__ckpt_restore(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  if (r->ckpt_state_fd < 0 || j->id == d->hung_job || j->error || atomic_load(&j->cancel) ||
      j->reruns >= DEV_MAX_RERUNS || d->stop_now)
    return 0;
  pthread_mutex_lock(&d->mu);
  int swap = d->swapping;
  pthread_mutex_unlock(&d->mu);
  if (swap) return 0;
  r->state_fd = dup(r->ckpt_state_fd); /* dev__resume_run closes these */
  r->carry_fd = dup(r->ckpt_buf_fd);
  if (r->state_fd < 0 || r->carry_fd < 0) {
    if (r->state_fd >= 0) close(r->state_fd);
    if (r->carry_fd >= 0) close(r->carry_fd);
    r->state_fd = r->carry_fd = -1;
    return 0;
  }
  int64_t lost = now - r->ckpt_at;
  j->reruns++;
  j->restores++;
  j->lost_ns += lost;
  snprintf(j->message, sizeof j->message,
           "resumed from its last checkpoint after %u device restart%s: %lld ms of work lost",
           j->restores, j->restores == 1 ? "" : "s", (long long)(j->lost_ns / 1000000));
  r->ninflight = 0;
  r->moving = r->suspending = r->resuming = r->ckpting = r->preempting = 0;
  r->suspended_at = now;
  atomic_store(&j->suspended_for, DEV_FOR_RESTART);
  atomic_store(&j->suspended, 1);
  j->dev_run = r;
  dev__coop_wait_push_front(d, j);
  log_warn("job %llu (%s): resumes from its checkpoint of %lld ms before the restart",
           (unsigned long long)j->id, j->kernel, (long long)(lost / 1000000));
  return 1;
}

void dev__run_free(struct run *r) {
  int *fds[] = {&r->state_fd,    &r->carry_fd,       &r->ckpt_state_fd,
                &r->ckpt_buf_fd, &r->spare_state_fd, &r->spare_buf_fd};
  for (unsigned i = 0; i < sizeof fds / sizeof *fds; i++)
    if (*fds[i] >= 0) close(*fds[i]);
  free(r);
}
