/*
 * dev_stage.c: a job's buffers through the device process: staged into
 * the arena before its first task, and back out (OUT data, guard zones
 * checked) when it ends; a large buffer's bytes in slices between them.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev_internal.h"
#include "fdio.h"
#include "log.h"

/* A memfd of at least n bytes for the inline bytes of one staging (IN
 * data, written here) or unstaging (OUT data, written by the device
 * process): the device thread's kept one, grown as needed. A fresh memfd
 * each time cost its creation and the kernel's allocation of its pages,
 * twice for every job with inline buffers. The device process is done
 * with it when its request returns, and only the ranges a request wrote
 * are read back, so the next job may use it at once. -1 on failure. */
static int inline_fd(struct dev *d, uint64_t n) {
  if (d->inl_fd < 0) { /* its creation at the device's start failed */
    d->inl_fd = memfd_create("coopd-inline", MFD_CLOEXEC);
    d->inl_size = 0;
  }
  if (d->inl_fd >= 0 && n > d->inl_size && ftruncate(d->inl_fd, (off_t)n) == 0) d->inl_size = n;
  return d->inl_fd >= 0 && d->inl_size >= n ? d->inl_fd : -1;
}

/* Whether argument a's bytes move in slices apart from its staging or
 * unstaging (docs/daemon.md, "Large buffers in slices"): a buffer of more
 * than one slice, filled (dir COOP_BUF_IN) from the client's descriptor,
 * or from zeroes where it holds no IN data; emptied (COOP_BUF_OUT) into
 * the client's descriptor. */
static int sliced(const struct job_arg *a, unsigned dir) {
  if (a->type != COOP_ARG_BUF || a->devbuf_id || a->size <= DEV_SLICE) return 0;
  if (dir == COOP_BUF_IN) return a->fd >= 0 || !(a->dir & COOP_BUF_IN);
  return a->fd >= 0 && (a->dir & COOP_BUF_OUT);
}

int dev__sliced(const struct job *j, unsigned dir) {
  for (unsigned i = 0; i < j->nargs; i++)
    if (sliced(&j->args[i], dir)) return 1;
  return 0;
}

/* The job's buffers as the device process moves them (dp_buf), in argument
 * order: a client's memfd where it sent one, else `inl`, one memfd for all
 * the inline bytes (IN data at staging, room for OUT data at unstaging),
 * each buffer at its offset there. Device buffers are not staged, and at
 * unstaging only checked (keep). A sliced IN buffer is staged as room
 * only (DP_IN_LATER), a sliced OUT one's bytes are not read back where
 * `emptied` (they went by slices). Returns how many; *inl_len their total. */
static unsigned job_bufs(struct job *j, struct dp_buf *b, int inl, int unstage, int out,
                         int emptied, uint64_t *inl_len) {
  unsigned n = 0;
  *inl_len = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF || (a->devbuf_id && !unstage)) continue;
    struct dp_buf *x = &b[n++];
    memset(x, 0, sizeof *x);
    x->size = a->size;
    x->arg = a->dev ? a->dev - 1 : 0;
    /* a device buffer stays: its guards are checked, unless the kernel
     * reaches it only through views (kset.h, kdef.views) */
    x->keep = a->devbuf_id ? (j->views ? 2 : 1) : 0;
    if (x->keep) {
      x->fd = -1;
      continue;
    }
    x->in = !out && (a->dir & COOP_BUF_IN);
    x->out = out && (a->dir & COOP_BUF_OUT);
    x->fd = a->fd >= 0 ? a->fd : inl;
    if (!unstage && sliced(a, COOP_BUF_IN)) {
      x->in = DP_IN_LATER;
      x->fd = -1;
    }
    if (x->out && emptied && sliced(a, COOP_BUF_OUT)) x->out = 0;
    x->owner = a->fd >= 0 ? j->uid + 1 : 0; /* the client's own descriptor */
    x->off = 0;
    if (a->fd < 0 && (x->in || x->out)) {
      x->off = *inl_len;
      *inl_len += a->size;
    }
  }
  return n;
}

/* Arena copies of the job's buffers, IN data copied in by the device
 * process in one request. 0, DEV_ROOM_WAIT (no room yet: dev_room.c, the
 * job not failed) or a coop error (failed). */
int dev__stage_in(struct dev *d, struct job *j) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  uint64_t inl_len;
  unsigned n = job_bufs(j, b, -1, 0, 0, 0, &inl_len);
  if (!n) return 0;
  if (dev__room_gated(d, j)) return DEV_ROOM_WAIT;
  int inl = -1;
  if (inl_len) { /* the inline IN bytes, one after another */
    inl = inline_fd(d, inl_len);
    int bad = inl < 0;
    uint64_t at = 0;
    for (unsigned i = 0; !bad && i < j->nargs; i++) {
      const struct job_arg *a = &j->args[i];
      if (a->type != COOP_ARG_BUF || a->fd >= 0 || !(a->dir & COOP_BUF_IN)) continue;
      bad = fdio_pwrite(inl, a->data, a->size, at);
      at += a->size;
    }
    if (bad) {
      dev__fail(j, COOP_ENOMEM, "%s", "could not stage the inline buffers");
      return j->error;
    }
    n = job_bufs(j, b, inl, 0, 0, 0, &inl_len);
  }
  int e = dp_stage(d->rt, b, n);
  if (e == COOP_ENOMEM && dev__ckpt_evict(d, dev__dp_bytes(b, n))) e = dp_stage(d->rt, b, n);
  if (e == COOP_ENOMEM && dev__room_later(d, j)) return DEV_ROOM_WAIT;
  if (e == COOP_ENOMEM) {
    dev__fail(j, COOP_ENOMEM, "no room for the buffers in the device arena (%s)",
              "raise [device] arena_mb");
    return j->error;
  }
  if (e == COOP_ELOST && !dp_alive(d->rt))
    return e; /* not failed: nothing of it ran, the restart runs it (dev__start_now) */
  if (e) {
    dev__fail(j, e, "%s",
              e == COOP_ELOST ? "the device process died while the job was staged"
                              : "could not read a buffer's descriptor to its declared size");
    return j->error;
  }
  dev__staged_args(j, b);
  return 0;
}

static void breached(struct job *j, int breach, int devbufs_only);

/* OUT data back (when `out`: into the client's memfd, or into a[i].data
 * for RESULT) and every arena copy freed, in one request. A guard zone
 * found overwritten (arena.c) means the kernel wrote outside this job's
 * buffers: the job fails with EFAULT and the log names it (the views keep
 * shipped kernels from ever getting here). */
int dev__unstage(struct dev *d, struct job *j, int out, int emptied, coop_task_id release) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  uint64_t inl_len;
  unsigned n = job_bufs(j, b, -1, 1, out, emptied, &inl_len);
  int any = 0;
  for (unsigned i = 0; i < j->nargs; i++) any |= j->args[i].dev != 0;
  if (!n || !any || !d->rt) {
    for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
    if (release && d->rt) dp_task_release(d->rt, release); /* no buffers to go with */
    return 0;
  }
  int inl = inl_len ? inline_fd(d, inl_len) : -1;
  if (inl_len && inl < 0) {
    out = 0;
    if (j->error == 0) dev__fail(j, COOP_ENOMEM, "%s", "could not copy a result back");
  }
  n = job_bufs(j, b, inl, 1, out, emptied, &inl_len);
  int breach = -1;
  int e = dp_unstage(d->rt, b, n, release, &breach);
  for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
  if (e == COOP_ELOST && d->rt && !dp_alive(d->rt)) return e; /* the caller's to say */
  if (e && j->error == 0)
    dev__fail(j, e == COOP_ELOST ? e : COOP_EIO, "%s", "could not write a result back");
  for (unsigned i = 0, k = 0; e == 0 && inl >= 0 && i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF) continue;
    const struct dp_buf *x = &b[k++];
    if (!x->out || a->fd >= 0) continue;
    free(a->data);
    a->data = malloc(a->size);
    if (!a->data || fdio_pread(inl, a->data, a->size, x->off)) {
      free(a->data);
      a->data = NULL;
      if (j->error == 0) dev__fail(j, COOP_ENOMEM, "%s", "could not copy a result back");
    }
  }
  if (breach >= 0) breached(j, breach, 0);
  return 0;
}

void dev__unstage_ended(struct job *j, int breach) {
  for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
  if (breach >= 0) breached(j, breach, 1);
}

/* A guard zone of the job's buffer argument number `breach` (counting
 * buffers, or device buffers only) was found overwritten. */
static void breached(struct job *j, int breach, int devbufs_only) {
  unsigned argi = 0;
  for (unsigned i = 0, k = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF && (!devbufs_only || j->args[i].devbuf_id) &&
        k++ == (unsigned)breach)
      argi = i;
  log_error("job %llu (%s, uid %u): the guard zone of buffer argument %u was overwritten",
            (unsigned long long)j->id, j->kernel, j->uid, argi);
  if (j->error == COOP_EFAULT) return; /* the views' message says more */
  dev__fail(j, COOP_EFAULT,
            "kernel %s wrote outside buffer argument %u (its guard zone was overwritten); the "
            "result is not to be trusted",
            j->kernel, argi);
}

int dev__slice(struct dev *d, struct run *r, int in) {
  struct job *j = r->j;
  unsigned dir = in ? COOP_BUF_IN : COOP_BUF_OUT;
  while (r->slice_arg < j->nargs && !sliced(&j->args[r->slice_arg], dir)) r->slice_arg++;
  if (r->slice_arg == j->nargs) return 0;
  struct job_arg *a = &j->args[r->slice_arg];
  if (d->rt && !a->dev && !dp_alive(d->rt)) return COOP_ELOST; /* its staging was lost */
  if (!d->rt || !a->dev) {
    dev__fail(j, COOP_ELOST, "%s", "the device is unavailable");
    return j->error;
  }
  uint64_t k = a->size - r->slice_at < DEV_SLICE ? a->size - r->slice_at : DEV_SLICE;
  /* a client's descriptor holds the buffer from its offset 0 (job_bufs);
   * a buffer without IN data is filled with zeroes, coopd's own */
  int zeros = in && !(a->dir & COOP_BUF_IN);
  if (zeros && d->zero_fd < 0) d->zero_fd = dev__zeros_make();
  struct dp_buf b = {.size = k,
                     .arg = a->dev - 1,
                     .at = r->slice_at,
                     .off = zeros ? 0 : r->slice_at,
                     .fd = zeros ? d->zero_fd : a->fd,
                     .owner = zeros ? 0 : j->uid + 1};
  if (b.fd < 0) {
    dev__fail(j, COOP_ENOMEM, "%s", "could not zero a buffer (no memfd)");
    return j->error;
  }
  int64_t t0 = coop__now_ns();
  int e = dp_copy(d->rt, &b, in);
  if (e == COOP_ELOST && !dp_alive(d->rt)) return e;
  int64_t took = coop__now_ns() - t0, *mean = &d->slice_ns[in ? 1 : 0];
  *mean = *mean ? (3 * *mean + took) / 4 : took; /* what slice_held expects of the next */
  if (e) {
    dev__fail(j, e == COOP_ELOST ? e : COOP_EIO, "%s",
              in ? "could not read a buffer's descriptor to its declared size"
                 : "could not write a result back");
    return j->error;
  }
  r->slice_at += k;
  if (r->slice_at == a->size) {
    r->slice_arg++;
    r->slice_at = 0;
  }
  return 1;
}

int dev__zeros_make(void) {
  int fd = memfd_create("coopd-zeros", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd >= 0 &&
      (ftruncate(fd, DEV_SLICE) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
    close(fd);
    fd = -1;
  }
  return fd;
}
