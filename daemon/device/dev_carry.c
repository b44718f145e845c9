/*
 * dev_carry.c: cooperative jobs carried across a kernel reload
 * (docs/daemon.md, "Kernel reload").
 *
 * Once a reload's megakernel is built, each running cooperative job whose
 * kernel the new set has unchanged is suspended (dp_suspend: it shrinks to
 * workgroup 0, which saves its threads' state; docs/scheduler.md,
 * "Suspension"). When its task is SUSPENDED, its state and every buffer's
 * contents leave the old device process for two memfds, and the run leaves
 * d->runs for d->carried, so that the swap need not wait for it. After the
 * swap its buffers are staged into the new device process and its task
 * resumed from the state (dp_resume): nothing is lost, and its client sees
 * it run on. A reload in place (dev_next_build) keeps the device process:
 * the state alone leaves it, the buffers stay. A job that cannot be carried
 * (a periodic one, whose kernel is gone or changed; one with device
 * buffers unless in place) drains as before: the grace period, then
 * cancelled. Device thread only.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev_internal.h"
#include "log.h"

/* The same kernel in both sets: name, kind, signature and source. */
static int same_kernel(const struct kdef *a, const struct kdef *b) {
  return a && b && a->cooperative == b->cooperative && a->nargs == b->nargs &&
         !memcmp(a->types, b->types, sizeof a->types) && a->source && b->source &&
         !strcmp(a->source, b->source);
}

/* Whether j's kernel is the same in the set the reload brings. */
static int kernel_stays(struct dev *d, const struct job *j) {
  pthread_mutex_lock(&d->mu);
  const struct kset *next = d->swap_ks;
  pthread_mutex_unlock(&d->mu);
  return next && same_kernel(kset_find(d->ks, j->kernel), kset_find(next, j->kernel));
}

/* A reload that swaps in place (dev_next_build): the device process, and
 * with it the buffers, stay. */
static int in_place(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  int in = d->swapping && d->swap_inplace;
  pthread_mutex_unlock(&d->mu);
  return in;
}

/* In place, a job on device buffers of its own is carried too: they stay
 * with the device process. */
static int carriable(struct dev *d, const struct run *r) {
  const struct job *j = r->j;
  if (!(j->flags & COOP_SUBMIT_COOPERATIVE) || dev__periodic(j) || r->ninflight != 1) return 0;
  return (!job_has_devbufs(j) || in_place(d)) && kernel_stays(d, j);
}

/* j's buffers as dev__carry_bufs lays them out: their bytes in all, and
 * their count added to *nbufs. */
static uint64_t laid_out(struct job *j, unsigned *nbufs) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  unsigned n = dev__carry_bufs(j, b, -1, 1);
  *nbufs += n;
  return n ? b[n - 1].off + b[n - 1].size : 0;
}

/* The bytes and buffers a reload will carry on the device: those of the
 * carriable runs and of the suspended jobs waiting their turn. */
static uint64_t carry_bytes(struct dev *d, unsigned *nbufs) {
  uint64_t bytes = 0;
  *nbufs = 0;
  for (struct run *r = d->runs; r; r = r->next)
    if (carriable(d, r)) bytes += laid_out(r->j, nbufs);
  for (struct job *j = d->coop_wait_head; j; j = j->dev_next)
    if (j->dev_run && kernel_stays(d, j)) bytes += laid_out(j, nbufs);
  return bytes;
}

/* The new device process makes its arena (2 ms for a managed 4 GiB) and
 * places room for the carried buffers on the device (3 ms for 250 MB)
 * while those jobs still run: their time off the GPU is then the copies
 * and the launch alone (docs/daemon.md, "Kernel reload"). What fails here
 * is tried again at the swap (dev__carry_prestage), when the old arena
 * may be gone. */
void dev__carry_prepare(struct dev *d) {
  if (!d->swap_now || d->swap_prepared || d->stop_now) return;
  pthread_mutex_lock(&d->mu);
  struct dp *next = d->swap_rt;
  pthread_mutex_unlock(&d->mu);
  if (!next) return;
  char err[256];
  unsigned nbufs = 0;
  uint64_t bytes =
      dev__carry_into(d) ? carry_bytes(d, &nbufs) : 0; /* else a memfd, staged after the launch */
  int64_t t0 = coop__now_ns();
  int e = dp_prepare(next, bytes, nbufs, err, sizeof err);
  d->swap_prepared = e ? -1 : 1;
  log_info(
      "%s: reload: the new megakernel's arena %s in %.1f ms before the swap, %.1f MB "
      "placed for its carried buffers%s%s",
      d->logname, e ? "not made" : "made", (double)(coop__now_ns() - t0) / 1e6, (double)bytes / 1e6,
      e ? ": " : "", e ? err : "");
}

void dev__carry_request(struct dev *d, struct run *r) {
  /* one suspending for a job of higher priority waits in coop_wait, and
   * dev__carry_suspended takes it across from there */
  if (r->moving || r->suspending || r->ckpting || r->migrating || !d->rt || !carriable(d, r))
    return;
  if (dp_suspend(d->rt, r->task[0]) == 0) r->moving = 1;
}

struct dp *dev__carry_into(struct dev *d) {
  /* tests only: the memfd, as where no share can be made (docs/faults.md) */
  if (getenv("COOP_TEST_NO_SHARE")) return NULL;
  pthread_mutex_lock(&d->mu);
  struct dp *next = d->swapping && !d->stopping ? d->swap_rt : NULL;
  pthread_mutex_unlock(&d->mu);
  return next;
}

int dev__carried(const struct run *r) { return r->carry_fd >= 0 || r->carry_share != 0; }

/* A share of `into` for n buffers laid out in b (dev__carry_bufs), opened
 * in the old device process; b then names its addresses there. 0, or no
 * share (the bytes go through a memfd). */
static int share_out(struct dev *d, struct dp *into, struct dp_buf *b, unsigned n,
                     uint64_t *there) {
  uint64_t total = b[n - 1].off + b[n - 1].size, here = 0;
  struct coop_rt_share h;
  if (total == 0 || dp_share(into, total, &h, there)) return -1;
  if (dp_share_open(d->rt, &h, &here)) {
    dp_share_free(into, *there);
    *there = 0;
    return -1;
  }
  for (unsigned i = 0; i < n; i++) b[i].share = here + b[i].off;
  return 0;
}

/* j's buffers out of the old device process and freed there (its task
 * `release` released first, 0: none): into a share of `into` (on the
 * device: r->carry_share) where there is one, else into a new memfd
 * (r->carry_fd). 0, or a coop code; *breach as dp_unstage's. */
static int bufs_out(struct dev *d, struct run *r, struct dp *into, coop_task_id release,
                    int *breach) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  unsigned n = dev__carry_bufs(r->j, b, -1, 0);
  *breach = -1;
  if (n && into && share_out(d, into, b, n, &r->carry_share) == 0) {
    int e = dp_unstage(d->rt, b, n, release, breach);
    if (e) {
      dp_share_free(into, r->carry_share);
      r->carry_share = 0;
    }
    return e;
  }
  r->carry_fd = memfd_create("coopd-carry-buffers", MFD_CLOEXEC);
  if (r->carry_fd < 0) return COOP_ENOMEM;
  n = dev__carry_bufs(r->j, b, r->carry_fd, 0);
  return n || release ? dp_unstage(d->rt, b, n, release, breach) : 0;
}

/* r's buffers no longer carried: the memfd closed, or the share freed
 * (its process holds it until its launch or close otherwise). */
void dev__carry_drop(struct dev *d, struct run *r) {
  if (r->carry_fd >= 0) close(r->carry_fd);
  struct dp *into = dev__carry_into(d);
  if (r->carry_share && into) dp_share_free(into, r->carry_share);
  r->carry_fd = -1;
  r->carry_share = 0;
}

int dev__carry_out(struct dev *d, struct run *r, const char *where) {
  struct job *j = r->j;
  dev__ckpt_drop(d, r);
  struct dp *into = r->moving ? dev__carry_into(d) : NULL; /* a move: the next device's own */
  int stay = r->moving && !r->migrating && in_place(d);    /* its buffers where they are */
  r->state_fd = memfd_create("coopd-carry-state", MFD_CLOEXEC);
  int e = r->state_fd < 0 ? COOP_ENOMEM : dp_saved(d->rt, r->task[0], r->state_fd);
  int breach = -1;
  if (e == 0) dev__segment_end(d, r);
  if (e == 0 && stay) e = dp_task_release(d->rt, r->task[0]);
  if (e == 0 && !stay) e = bufs_out(d, r, into, r->task[0], &breach); /* and the task released */
  if (e || breach >= 0) {
    dev__fail(j, e ? e : COOP_EFAULT, "could not carry it %s: %s", where,
              e ? coop_strerror(e) : "a guard zone was overwritten");
    if (r->state_fd >= 0) close(r->state_fd);
    r->state_fd = -1;
    dev__carry_drop(d, r);
    r->moving = 0;
    return -1;
  }
  if (!stay)
    for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
  r->ninflight = 0;
  r->moving = 2;
  log_info("job %llu (%s): suspended %s%s", (unsigned long long)j->id, j->kernel, where,
           stay             ? " (its buffers stay where they are)"
           : r->carry_share ? " (its buffers through device memory)"
                            : "");
  return 0;
}

int dev__resume_task(struct dev *d, struct run *r, int state_fd) {
  struct coop_rt_task_desc td;
  dev__task_desc(d, r->j, r, &td);
  coop_task_id id = 0;
  int e = dp_resume(d->rt, &td, state_fd, &id);
  if (e) return e;
  r->task[0] = id;
  r->ninflight = 1;
  r->moving = 0;
  r->cap_told = r->cap;
  return 0;
}

/* The device process died as r resumed, with r's state and every buffer
 * still in memfds (carried across a reload, out of the arena for room, or
 * a checkpoint's copies): its job back in coop_wait, first, suspended as
 * it was, so that the device process the restart launches resumes it from
 * exactly there. Nothing is lost, and the restart counts against the job
 * (DEV_MAX_RERUNS) as one that takes it from a checkpoint does. Failed at
 * once, a job carried across a reload said "could not resume it: the job
 * was lost" (docs/faults.md). 0 where it may not: it fails as before. */
static int resume_again(struct dev *d, struct run *r) {
  struct job *j = r->j;
  if (dev__restart_refused(d, r)) return 0;
  dev__wait_after_restart(d, r, coop__now_ns(), DEV_FOR_RESTART_AT);
  log_warn(
      "job %llu (%s): its device process died as it resumed: it resumes in the next one "
      "from where it was suspended",
      (unsigned long long)j->id, j->kernel);
  return 1;
}

int dev__resume_run(struct dev *d, struct run *r, int how) {
  struct job *j = r->j;
  /* failed while it waited (a carry that could not be staged): its
   * buffers are nowhere, so nothing may run */
  if (j->error || dev__resolve(d, j)) return j->error;
  /* its device buffers where they are now, or lost with a device process
   * replaced meanwhile (a clear error, never another buffer) */
  if (dev__check_bufs(d, j)) return j->error;
  int e = 0;
  if (r->carry_staged || r->carry_share) /* staged before the launch (dev__carry_prestage) */
    e = r->carry_staged == d->rt ? 0 : COOP_ELOST;
  r->carry_staged = NULL;
  r->carry_share = 0;
  if (e) {
    dev__fail(j, e, "%s",
              "could not resume it: its buffers were carried into a device process "
              "that did not launch");
  } else if (r->carry_fd >= 0) { /* its buffers left the old device process */
    struct dp_buf b[COOP_WIRE_MAX_ARGS];
    unsigned n = dev__carry_bufs(j, b, r->carry_fd, 1);
    e = n ? dp_stage(d->rt, b, n) : 0;
    if (e == COOP_ENOMEM && dev__ckpt_evict(d, dev__dp_bytes(b, n))) e = dp_stage(d->rt, b, n);
    /* no room while other jobs' copies hold it: it waits as a start
     * would (dev_room.c), its state and buffers where they are */
    if (e == COOP_ENOMEM && (how & DEV_RESUME_MAY_WAIT) && dev__room_held(d)) return DEV_ROOM_WAIT;
    if (e == 0) dev__staged_args(j, b);
  }
  if (e == 0) e = dev__resume_task(d, r, r->state_fd);
  int lost = e == COOP_ELOST && (how & DEV_RESUME_MAY_LOSE) && !j->error && !dp_alive(d->rt);
  if (lost && r->state_fd >= 0 && r->carry_fd >= 0 && resume_again(d, r)) {
    for (unsigned i = 0; i < j->nargs; i++)
      if (j->args[i].type == COOP_ARG_BUF && !j->args[i].devbuf_id) j->args[i].dev = 0;
    return DEV_RESUME_AGAIN;
  }
  close(r->state_fd);
  if (r->carry_fd >= 0) close(r->carry_fd);
  r->state_fd = r->carry_fd = -1;
  if (e) {
    /* the device process died under it: the restart, later in this pass,
     * takes the run as a submit's loss is taken (dev__step_run): from its
     * last checkpoint again, or failed naming why not. Failed here, it said
     * "could not resume it: the job was lost" and its checkpoint was never
     * looked at (docs/faults.md). */
    if (lost) return DEV_RESUME_LOST;
    if (!j->error) dev__fail(j, e, "could not resume it: %s", coop_strerror(e));
    return e;
  }
  return 0;
}

/* One carried run into the new device process: 0; 1, its job back in
 * coop_wait (the new process died: resume_again); or -1, the job failed. */
static int carry_in_one(struct dev *d, struct run *r) {
  struct job *j = r->j;
  if (d->stop_now || !d->rt) {
    dev__fail(j, COOP_ESHUTDOWN, "%s", "cancelled: the daemon is shutting down");
    return -1;
  }
  int e = dev__resume_run(d, r, DEV_RESUME_MAY_LOSE);
  if (e == DEV_RESUME_AGAIN) return 1;
  if (e) return -1;
  log_info("job %llu (%s): resumed in the new megakernel", (unsigned long long)j->id, j->kernel);
  return 0;
}

/* A suspended job's buffers out of the old device process into a memfd
 * (dev__resume_run stages them into the new one): 0, or -1 (the job
 * failed). One whose buffers are out already (moved here, back from a
 * checkpoint, or out of the arena for room) is checked alike: its state
 * is its kernel's as it was, which a changed source need not read. */
static int carry_suspended_one(struct dev *d, struct run *r) {
  struct job *j = r->j;
  int devbufs = job_has_devbufs(j) && !in_place(d);
  if (devbufs || !kernel_stays(d, j)) {
    atomic_store(&j->state, COOP_JOB_CANCELLED);
    j->error = COOP_ECANCELED;
    snprintf(j->message, sizeof j->message,
             "cancelled: suspended when the daemon reloaded its kernels, and %s",
             devbufs ? "its device buffers do not move to the new megakernel"
                     : "the new set changed or removed its kernel");
    return -1;
  }
  if (in_place(d) || r->carry_fd >= 0) return 0; /* its buffers stay where they are */
  return dev__carry_waiting(d, r, "across the kernel reload", dev__carry_into(d));
}

int dev__carry_waiting(struct dev *d, struct run *r, const char *where, struct dp *into) {
  struct job *j = r->j;
  int breach = -1;
  int e = bufs_out(d, r, into, 0, &breach);
  if (e || breach >= 0) {
    dev__fail(j, e ? e : COOP_EFAULT, "could not carry it %s: %s", where,
              e ? coop_strerror(e) : "a guard zone was overwritten");
    return -1;
  }
  for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
  return 0;
}

/* One pass of dev__carry_prestage over the carried runs. soft: the first,
 * beside the old device process's close, where its arena may not yet fit
 * beside the old one: what fails there is left for the second. */
struct prestage {
  struct dp *next;
  int soft, prepared; /* prepared: 1 done, -1 failed */
  uint64_t bytes;
  int64_t prep_ns;
};

/* The buffers of one carried run, in a share of next, staged into next's
 * arena (their bytes counted in ps): 0, or a coop code (the share kept
 * when soft). */
static int prestage_one(struct prestage *ps, struct run *r) {
  struct job *j = r->j;
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  unsigned n = dev__carry_bufs(j, b, -1, 1);
  for (unsigned i = 0; i < n; i++) b[i].share = r->carry_share + b[i].off;
  int e = dp_stage(ps->next, b, n);
  if (e && ps->soft) return e;
  if (e == 0) {
    dev__staged_args(j, b);
    r->carry_staged = ps->next;
    for (unsigned i = 0; i < n; i++) ps->bytes += b[i].size;
  }
  dp_share_free(ps->next, r->carry_share); /* before the launch: nothing waits */
  r->carry_share = 0;
  return e;
}

static void prestage(struct prestage *ps, struct run *r) {
  struct job *j = r->j;
  if (!r->carry_share) return;
  char err[256];
  int64_t t0 = coop__now_ns();
  int e = ps->prepared ? 0 : dp_prepare(ps->next, 0, 0, err, sizeof err);
  if (!ps->prepared) ps->prep_ns = coop__now_ns() - t0;
  ps->prepared = e ? -1 : 1;
  if (e && ps->soft) return;
  if (e) log_error("reload: the new device process could not prepare its arena: %s", err);
  if (e == 0) e = prestage_one(ps, r);
  if (e && ps->soft) return;
  if (e) dev__fail(j, e, "could not carry it across the kernel reload: %s", coop_strerror(e));
}

int dev__carry_prestage(struct dev *d, struct dp *next, int soft) {
  /* prepared while the jobs still ran (dev__carry_prepare), or now */
  struct prestage ps = {.next = next, .soft = soft, .prepared = d->swap_prepared > 0};
  int64_t t0 = coop__now_ns();
  char arena[64] = "its arena made before the swap";
  for (struct run *r = d->carried; r && ps.prepared >= 0; r = r->next) prestage(&ps, r);
  for (struct job *j = d->coop_wait_head; j && ps.prepared >= 0; j = j->dev_next)
    if (j->dev_run) prestage(&ps, j->dev_run);
  if (ps.prep_ns)
    snprintf(arena, sizeof arena, "its arena made in %.1f ms of it", (double)ps.prep_ns / 1e6);
  if (ps.bytes)
    log_info(
        "%s: reload: %.1f MB of carried buffers staged in the new megakernel's arena in %.1f "
        "ms, on the device (%s)%s",
        d->logname, (double)ps.bytes / 1e6, (double)(coop__now_ns() - t0) / 1e6, arena,
        soft ? ", beside the old one's close" : "");
  int left = 0;
  for (struct run *r = d->carried; r; r = r->next) left += r->carry_share != 0;
  for (struct job *j = d->coop_wait_head; j; j = j->dev_next)
    left += j->dev_run && j->dev_run->carry_share;
  return left;
}

void dev__carry_suspended(struct dev *d) {
  for (struct job **p = &d->coop_wait_head; *p;) {
    struct job *j = *p;
    struct run *r = j->dev_run;
    if (!r || r->carry_share || !d->rt || carry_suspended_one(d, r) == 0) {
      p = &j->dev_next;
      continue;
    }
    dev__coop_wait_remove(d, p);
    dev__drop_suspended(d, j);
  }
}

void dev__carry_in(struct dev *d) {
  /* suspended jobs that wait their turn: buffers staged in this device
   * process are simply its own now; staged in one that did not launch,
   * they are lost */
  for (struct job **p = &d->coop_wait_head; *p;) {
    struct job *j = *p;
    struct run *r = j->dev_run;
    if (r && (r->carry_share || (r->carry_staged && r->carry_staged != d->rt))) {
      dev__fail(j, COOP_ELOST, "%s",
                "could not resume it: its buffers were carried into a device "
                "process that did not launch");
      r->carry_share = 0;
      r->carry_staged = NULL;
      dev__coop_wait_remove(d, p);
      dev__drop_suspended(d, j);
      continue;
    }
    if (r) r->carry_staged = NULL;
    p = &j->dev_next;
  }
  while (d->carried) {
    struct run *r = d->carried;
    d->carried = r->next;
    int e = carry_in_one(d, r);
    if (e > 0) { /* in coop_wait, with its memfds */
      r->next = NULL;
      continue;
    }
    if (r->state_fd >= 0) close(r->state_fd);
    if (r->carry_fd >= 0) close(r->carry_fd);
    r->state_fd = r->carry_fd = -1;
    if (e) {
      dev__finish_job(d, r);
      dev__run_free(r);
      continue;
    }
    r->next = d->runs;
    d->runs = r;
  }
}
