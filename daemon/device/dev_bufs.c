/*
 * dev_bufs.c: device buffers on the device thread (device.h, dev_buf_op;
 * docs/daemon.md, "Device buffers"). A device buffer is a block of the
 * device process's arena, like a job's staged buffer, that outlives the
 * jobs using it. The loop owns the table of them (bufs.c); this file only
 * does the device's part of each operation and hands it back, so every
 * call to the device process stays on this thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev_internal.h"
#include "log.h"

void dev_buf_op(struct dev *d, struct dev_bufop *op) {
  op->next = NULL;
  pthread_mutex_lock(&d->mu);
  if (d->bufin_tail)
    d->bufin_tail->next = op;
  else
    d->bufin_head = op;
  d->bufin_tail = op;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d); /* ends a dp_wait or an idle spin at once */
}

static int lost(struct dev *d, struct dev_bufop *op) {
  snprintf(op->message, sizeof op->message,
           "the device buffer was lost: its device process %s (a restart or a reload); "
           "create it again",
           d->rt ? "has been replaced since" : "is not running");
  return COOP_ELOST;
}

/* A write or a read copies this much a request, so that a pass can stop
 * between two slices of one (dev__do_bufops). */
#define DEV_BUFOP_SLICE (4u << 20)

static int sliced(const struct dev_bufop *op) {
  return (op->kind == DEV_BUF_WRITE || op->kind == DEV_BUF_READ || op->filling) && !op->err &&
         op->copied < op->size;
}

/* Whether op has had its first request (its trace's taken and copy_start
 * stamped then). */
static int begun(const struct dev_bufop *op) { return op->copied || op->filling; }

/* The next slice of a write or a read, or of a filling create's contents:
 * the descriptor's bytes from 0, the buffer's from at; a create without
 * contents (no descriptor) is filled with zeros. */
static int copy_slice(struct dev *d, struct dev_bufop *op, struct dp_buf *b, int in) {
  uint64_t left = op->size - op->copied;
  b->zero = in && op->fd < 0;
  b->size = left < DEV_BUFOP_SLICE ? left : DEV_BUFOP_SLICE;
  b->at = op->at + op->copied;
  b->off = op->copied;
  int e = dp_copy(d->rt, b, in);
  if (e == 0) op->copied += b->size;
  return e;
}

/* ---- the arena bytes of each user's device buffers ----
 *
 * The room's share ([limits] max_buffer_percent_per_uid, dev_room.c)
 * counts a user's device buffers in the arena beside its jobs' copies:
 * without them a user could hold half the arena with device buffers and
 * half with a running job's copies, and another user's job waited for
 * room until that job ended. A buffer's argument value tells where it
 * went: a block of the arena lies below the arena's size, one of the
 * device zone (CUDA, coop_rt_alloc_device) past it (megakernel/arena.c). */
static int in_arena(const struct dev *d, uint64_t arg) { return arg < dev__arena_bytes(d); }

uint64_t dev__bufs_in_arena(const struct dev *d, uint32_t uid) {
  if (d->bufuse_gen != d->gen) return 0; /* they went with their process */
  for (unsigned i = 0; i < d->nbufuse; i++)
    if (d->bufuse[i].uid == uid) return d->bufuse[i].bytes;
  return 0;
}

uint64_t dev__bufs_in_arena_all(const struct dev *d) {
  uint64_t n = 0;
  if (d->bufuse_gen != d->gen) return 0;
  for (unsigned i = 0; i < d->nbufuse; i++) n += d->bufuse[i].bytes;
  return n;
}

/* size bytes more (add) or fewer at arg for owner (uid + 1). A table that
 * cannot grow leaves the user uncounted: the share's bound is lost for it,
 * nothing else. */
static void bufuse_count(struct dev *d, uint32_t owner, uint64_t arg, uint64_t size, int add) {
  if (!owner || !size || !in_arena(d, arg)) return;
  if (d->bufuse_gen != d->gen) d->nbufuse = 0, d->bufuse_gen = d->gen;
  unsigned i = 0;
  while (i < d->nbufuse && d->bufuse[i].uid != owner - 1) i++;
  if (i == d->nbufuse) {
    if (!add) return;
    if (d->nbufuse == d->capbufuse) {
      unsigned cap = d->capbufuse ? 2 * d->capbufuse : 8;
      struct dev_bufuse *t = realloc(d->bufuse, cap * sizeof *t);
      if (!t) return;
      d->bufuse = t;
      d->capbufuse = cap;
    }
    d->bufuse[d->nbufuse++] = (struct dev_bufuse){.uid = owner - 1};
  }
  struct dev_bufuse *e = &d->bufuse[i];
  e->bytes = add ? e->bytes + size : e->bytes > size ? e->bytes - size : 0;
  if (!e->bytes) *e = d->bufuse[--d->nbufuse];
}

/* A create whose contents did not all arrive: the buffer it made freed
 * (unless it went with its process), its error kept. */
static void unmake(struct dev *d, struct dev_bufop *op) {
  op->filling = 0;
  if (op->gen != d->gen || !d->rt || !dp_alive(d->rt)) return;
  struct dp_buf b = {.arg = op->arg, .fd = -1, .owner = op->owner};
  int breach = -1;
  if (dp_unstage(d->rt, &b, 1, 0, &breach) == 0) bufuse_count(d, op->owner, op->arg, op->size, 0);
}

static int do_op(struct dev *d, struct dev_bufop *op) {
  if (op->kind == DEV_BUF_FREE && op->gen != d->gen) return 0; /* went with its process */
  if (!d->rt || !dp_alive(d->rt)) return lost(d, op);
  if (op->kind != DEV_BUF_CREATE && op->gen != d->gen) return lost(d, op);
  struct dp_buf b = {
      .size = op->size, .arg = op->arg, .at = op->at, .fd = op->fd, .owner = op->owner};
  int e;
  uint64_t held; /* the arena bytes the jobs there hold, when a create finds no room */
  if (!begun(op)) TRACE_STAMP(op, copy_start);
  switch (op->kind) {
    case DEV_BUF_CREATE:
      if (op->filling) return op->gen == d->gen ? copy_slice(d, op, &b, 1) : lost(d, op);
      /* more than a slice: made first (DP_IN_LATER: neither zeroed nor read), then
       * filled in slices with its contents, or zeroed so, so that a pass can stop between
       * two as for a write (a buffer's zeros are a copy too: 500 MB took 140 ms on an
       * H200, arena.c) */
      b.in = op->size > DEV_BUFOP_SLICE ? DP_IN_LATER : op->fd >= 0;
      b.keep = 1; /* a device buffer: into device memory where there is room (devproc_child.c) */
      if (b.in == DP_IN_LATER) b.fd = -1;
      e = dp_stage(d->rt, &b, 1);
      if (e == COOP_ENOMEM && dev__ckpt_evict(d, b.size)) e = dp_stage(d->rt, &b, 1);
      if (e == 0) {
        op->arg = b.arg;
        op->gen = d->gen;
        op->filling = b.in == DP_IN_LATER;
        bufuse_count(d, op->owner, op->arg, op->size, 1);
      } else if (e == COOP_ENOMEM && (held = dev__room_held(d))) {
        /* not for good: EBUSY, which a client may ask again (coopctl
         * app waits), where ENOMEM says the buffer never fits beside the
         * device buffers there */
        e = COOP_EBUSY;
        snprintf(op->message, sizeof op->message,
                 "no room for the buffer in the device arena now: the jobs there hold %llu KiB "
                 "of it; ask again as they end (or raise [device] arena_mb)",
                 (unsigned long long)((held + 1023) >> 10));
      } else if (e == COOP_ENOMEM) {
        snprintf(op->message, sizeof op->message, "%s",
                 "no room for the buffer in the device arena (raise [device] arena_mb)");
      }
      return e;
    case DEV_BUF_WRITE:
    case DEV_BUF_READ:
      return copy_slice(d, op, &b, op->kind == DEV_BUF_WRITE);
    case DEV_BUF_FREE: {
      int breach = -1;
      b.size = 0;
      e = dp_unstage(d->rt, &b, 1, 0, &breach);
      if (breach >= 0) /* a job wrote outside it: that job already failed EFAULT */
        log_warn("%s: a device buffer's guard zone was overwritten", d->logname);
      if (e == 0) { /* room: what waits for it is tried again (dev_room.c) */
        bufuse_count(d, op->owner, op->arg, op->size, 0);
        d->room_freed = 1;
        d->room_seq++;
      }
      return e;
    }
  }
  return COOP_EINVAL;
}

/* A pass's operations, in turns. Each one is a copy of up to a buffer's
 * size (the arena's, hundreds of MiB), done before the pass takes its jobs,
 * and a connection may have 64 of them in flight: one user's flood of
 * writes (16 connections of 64) held every other user's jobs, and their
 * results, for as long as they all took, and one write of 192 MiB for as
 * long as it took. So a write or a read goes in slices of DEV_BUFOP_SLICE,
 * and once a pass has spent DEV_BUFOP_PASS_NS on operations it does only
 * one slice of each user (owner) not yet served in it, and leaves the
 * rest, in order, at the queue's head for the next pass, after this one's
 * jobs: each user's operations keep their order (once one of its
 * operations waits, every later one of that user waits too; the protocol
 * orders a SUBMIT only after its write's OK), and another user's job
 * waits behind at most one slice of each user's. */
#define DEV_BUFOP_PASS_NS 2000000
#define DEV_BUFOP_OWNERS 64

/* Whether owner is among the n of owners (past DEV_BUFOP_OWNERS users,
 * every one is taken as there). */
static int waits(const uint32_t *owners, unsigned n, uint32_t owner) {
  for (unsigned i = 0; i < n; i++)
    if (owners[i] == owner) return 1;
  return n == DEV_BUFOP_OWNERS;
}

/* The same, and if not, owner added. */
static int among(uint32_t *owners, unsigned *n, uint32_t owner) {
  if (waits(owners, *n, owner)) return 1;
  owners[(*n)++] = owner;
  return 0;
}

/* Operations in order: the first and the last. */
struct oplist {
  struct dev_bufop *head, *last;
};

static void push(struct oplist *l, struct dev_bufop *op) {
  op->next = NULL;
  if (l->last)
    l->last->next = op;
  else
    l->head = op;
  l->last = op;
}

/* l back at the head of d's queue, before what came meanwhile. */
static void keep_for_next(struct dev *d, const struct oplist *l) {
  pthread_mutex_lock(&d->mu);
  l->last->next = d->bufin_head;
  if (!d->bufin_head) d->bufin_tail = l->last;
  d->bufin_head = l->head;
  pthread_mutex_unlock(&d->mu);
}

/* op's slices while the pass may (all of them with all), from t0. */
static void run_op(struct dev *d, struct dev_bufop *op, int64_t t0, int all) {
  op->message[0] = '\0';
  if (!begun(op)) TRACE_STAMP(op, taken);
  if (coopd_tracing) { /* the window open now, or the next */
    op->tr.warm_from = 0;
    op->tr.warm_until = dev__warm_within(d, coop__now_ns(), INT64_MAX, &op->tr.warm_from);
  }
  do op->err = do_op(d, op);
  while (sliced(op) && (all || coop__now_ns() - t0 < DEV_BUFOP_PASS_NS));
}

/* op done: its message, and its descriptor closed. */
static void end_op(struct dev *d, struct dev_bufop *op) {
  TRACE_STAMP(op, copy_end);
  if (op->filling && op->err) unmake(d, op);
  op->filling = 0;
  if (op->err && !op->message[0])
    snprintf(op->message, sizeof op->message, "%s",
             op->err == COOP_EINVAL  ? "the range is outside the buffer"
             : op->err == COOP_ELOST ? "the device process died during the operation"
                                     : "could not copy the bytes (a short descriptor?)");
  if (op->fd >= 0) close(op->fd);
  op->fd = -1;
}

void dev__do_bufops(struct dev *d, int all) {
  pthread_mutex_lock(&d->mu);
  struct dev_bufop *op = d->bufin_head;
  d->bufin_head = d->bufin_tail = NULL;
  pthread_mutex_unlock(&d->mu);
  d->bufops_left = 0;
  if (!op) return;
  struct oplist done = {0}, later = {0};
  uint32_t served[DEV_BUFOP_OWNERS], held[DEV_BUFOP_OWNERS];
  unsigned nserved = 0, nheld = 0;
  int64_t t0 = coop__now_ns();
  while (op) {
    struct dev_bufop *n = op->next;
    int spent = coop__now_ns() - t0 >= DEV_BUFOP_PASS_NS;
    int wait =
        !all && (waits(held, nheld, op->owner) || (among(served, &nserved, op->owner) && spent));
    if (!wait) run_op(d, op, t0, all);
    if (wait || sliced(op)) { /* its user's turn comes again next pass; its later ones wait */
      among(held, &nheld, op->owner);
      push(&later, op);
    } else {
      end_op(d, op);
      push(&done, op);
    }
    op = n;
  }
  d->bufops_left = later.head != NULL;
  if (later.head) keep_for_next(d, &later);
  if (!done.head) return;
  pthread_mutex_lock(&d->mu);
  struct dev_bufop **p = &d->bufout;
  while (*p) p = &(*p)->next;
  if (coopd_tracing)
    for (struct dev_bufop *o = done.head; o; o = o->next) TRACE_STAMP(o, handed_back);
  *p = done.head;
  pthread_mutex_unlock(&d->mu);
  dev__announce(d);
  dev__spin_after(d); /* a frame's write comes before its submit, a read after its end */
}

int dev__check_bufs(struct dev *d, struct job *j) {
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (!a->devbuf_id) continue;
    if (a->devbuf_gen != d->gen) {
      dev__fail(j, COOP_ELOST,
                "device buffer %llu (argument %u) was lost when its device process was replaced "
                "(a restart or a reload): create it again",
                (unsigned long long)a->devbuf_id, i);
      return j->error;
    }
    a->dev = a->devbuf_arg + 1;
  }
  return 0;
}

/* Job j's range a (COOP_ARG_DEVBUF_IO) as the device process is asked to
 * move it: by dp_copy through its descriptor, or named with the task
 * (dev__io_with_submit: fd -1, the file the device process holds). */
static struct dp_buf io_range(const struct job *j, const struct job_arg *a) {
  return (struct dp_buf){.size = a->io_len,
                         .arg = a->devbuf_arg,
                         .at = a->io_at,
                         .off = a->io_off,
                         .fd = a->io_fd1 - 1,
                         .in = !!(a->io_dir & COOP_BUF_IN),
                         .out = !!(a->io_dir & COOP_BUF_OUT),
                         .owner = j->uid + 1,
                         .ino = a->io_ino,
                         .devno = a->io_devno};
}

void dev__trace_copy(struct dev *d, struct job *j, int in) {
  int64_t t[4];
  dp_last_call(d->rt, t);
  dev__trace_copy_at(j, in, t);
}

void dev__trace_copy_at(struct job *j, int in, const int64_t t[4]) {
  if (in) {
    j->tr.io_sent = t[0];
    j->tr.io_took = t[1];
    j->tr.io_replied = t[2];
    j->tr.io_back = t[3];
  } else {
    j->tr.out_sent = t[0];
    j->tr.out_took = t[1];
    j->tr.out_replied = t[2];
    j->tr.out_back = t[3];
  }
}

/* One range of a device buffer between it and the client's descriptor,
 * for a job that moves it (COOP_ARG_DEVBUF_IO): the device process maps
 * and pins the descriptor once when it can (xmap.h), as for BUF_WRITE. */
static int io_copy(struct dev *d, struct job *j, struct job_arg *a, int in) {
  struct dp_buf b = io_range(j, a);
  int e = dp_copy(d->rt, &b, in);
  if (coopd_tracing) dev__trace_copy(d, j, in);
  /* what dp_copy learned of the file, for this job's next copy through it
   * (its output, a frame's other range): one fstat a frame, not one a copy */
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *o = &j->args[i];
    if (o->io_fd1 == a->io_fd1) {
      o->io_ino = b.ino;
      o->io_devno = b.devno;
    }
  }
  return e;
}

int dev__io_with_submit(struct dev *d, const struct job *j, struct dp_buf *b, unsigned *n) {
  if (!d->rt || dev__periodic(j) || (j->flags & COOP_SUBMIT_COOPERATIVE)) return 0;
  const struct job_arg *first = NULL;
  unsigned k = 0, nin = 0, nout = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct job_arg *a = &j->args[i];
    if (a->type == COOP_ARG_BUF && !a->devbuf_id) return 0; /* staged: its copies go so */
    if (!a->io_fd1 || !(a->io_dir & (COOP_BUF_IN | COOP_BUF_OUT))) continue;
    if (!first) first = a;
    if (a->io_fd1 != first->io_fd1 || !a->io_ino) return 0;
    nin += !!(a->io_dir & COOP_BUF_IN);
    nout += !!(a->io_dir & COOP_BUF_OUT);
    if (b) {
      b[k] = io_range(j, a);
      b[k].fd = -1; /* named: the device process holds the file */
    }
    k++;
  }
  if (!first || nin > COOP_RT_IO_MAX || nout > COOP_RT_IO_MAX || k > COOP_RT_MAX_ARGS) return 0;
  if (!dp_io_mapped(d->rt, first->io_devno, first->io_ino, j->uid + 1)) return 0;
  if (n) *n = k;
  return 1;
}

int dev__io(struct dev *d, struct job *j, int in) {
  unsigned want = in ? COOP_BUF_IN : COOP_BUF_OUT;
  int woke = in; /* the hand-back follows the OUT copies: the loop woken before the first */
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (!a->io_fd1 || !(a->io_dir & want)) continue;
    if (!woke) {
      dev__prewake(d);
      woke = 1;
    }
    int e = d->rt ? io_copy(d, j, a, in) : COOP_ELOST;
    if (e == COOP_ELOST && (!d->rt || !dp_alive(d->rt)))
      return e; /* the job not failed: the caller says what a restart does */
    if (e) {
      dev__fail(j, e == COOP_EINVAL ? e : COOP_EIO,
                "could not %s device buffer %llu (argument %u) %s its descriptor: %s",
                in ? "write" : "read", (unsigned long long)a->devbuf_id, i, in ? "from" : "into",
                e == COOP_EINVAL ? "the range is outside the buffer"
                                 : "the descriptor is shorter than the range (truncated?)");
      return j->error;
    }
  }
  return 0;
}
