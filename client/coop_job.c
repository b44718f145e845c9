/*
 * coop_job.c: job descriptions, SUBMIT, and the jobs' output written back.
 *
 * A buffer travels inline in the SUBMIT (and its output inline in the
 * RESULT) when it is small and both frames stay under the daemon's limits;
 * otherwise in a memfd passed with SCM_RIGHTS, which the daemon reads and
 * writes in place. The memfds of OUT/INOUT buffers are kept with the job id
 * until coop_wait() receives its RESULT.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_internal.h"

/* Room for everything of a SUBMIT or RESULT frame but buffers and
 * instance records (strings at their maximum, every argument). */
#define FRAME_OVERHEAD 4096u
/* coopd refuses more inline output than this per job; WELCOME does not
 * announce it (see the report on wire.h), so it is assumed here. */
#define INLINE_OUT_MAX (1u << 20)

struct jarg {
  uint8_t type, dir;
  uint64_t bits;    /* scalars; a device buffer's id */
  uint64_t at;      /* coop_job_buffer_io: the range's start in the buffer */
  const void *data; /* IN bytes */
  void *mem;        /* OUT destination */
  size_t size;
  int fd1;       /* coop_job_buf_fd, coop_job_buffer_io_fd: the caller's descriptor + 1 (0: none) */
  size_t fd_off; /* coop_job_buffer_io_fd: where the range is in it */
  dev_t fd_dev;  /* and its file's identity, looked at then (the submit's, no */
  ino_t fd_ino;  /* second fstat: put_io_fds) */
};

struct coop_job {
  char kernel[COOP_WIRE_NAME_MAX];
  uint8_t flags;
  uint32_t groups, period_us, count, duration_ms, deadline_us;
  uint8_t device; /* COOP_WIRE_ANY_DEVICE or an index */
  int32_t priority;
  unsigned nargs;
  struct jarg a[COOP_WIRE_MAX_ARGS];
  int err; /* the first error of a setter */
  char errmsg[128];
};

static int job_fail(coop_job *j, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int job_fail(coop_job *j, int err, const char *fmt, ...) {
  if (j->err) return err;
  j->err = err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(j->errmsg, sizeof j->errmsg, fmt, ap);
  va_end(ap);
  return err;
}

coop_job *coop_job_new(const char *kernel, uint32_t groups) {
  coop_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->groups = groups;
  j->flags = COOP_SUBMIT_OWN_KIND;
  j->device = COOP_WIRE_ANY_DEVICE;
  size_t n = kernel ? strlen(kernel) : 0;
  if (n == 0 || n >= sizeof j->kernel)
    job_fail(j, COOP_EINVAL, "a kernel name of 1..%u bytes", COOP_WIRE_NAME_MAX - 1);
  else
    memcpy(j->kernel, kernel, n + 1);
  return j;
}

void coop_job_free(coop_job *j) { free(j); }

static int set_flag(coop_job *j, uint8_t flag, int on) {
  if (!j) return COOP_EINVAL;
  j->flags = (uint8_t)(on ? j->flags | flag : j->flags & ~flag);
  return 0;
}

int coop_job_cooperative(coop_job *j, int on) {
  if (!j) return COOP_EINVAL;
  set_flag(j, COOP_SUBMIT_OWN_KIND, on < 0);
  return set_flag(j, COOP_SUBMIT_COOPERATIVE, on > 0);
}

int coop_job_groups(coop_job *j, uint32_t groups) {
  if (!j) return COOP_EINVAL;
  j->groups = groups;
  return 0;
}

int coop_job_detached(coop_job *j, int on) { return set_flag(j, COOP_SUBMIT_DETACHED, on); }

int coop_job_device(coop_job *j, int device) {
  if (!j) return COOP_EINVAL;
  if (device != COOP_ANY_DEVICE && (device < 0 || device >= (int)COOP_MAX_DEVICES))
    return job_fail(j, COOP_EINVAL, "device %d: want 0..%u or COOP_ANY_DEVICE", device,
                    COOP_MAX_DEVICES - 1);
  j->device = device == COOP_ANY_DEVICE ? COOP_WIRE_ANY_DEVICE : (uint8_t)device;
  return 0;
}

int coop_job_priority(coop_job *j, int priority) {
  if (!j) return COOP_EINVAL;
  if (priority < COOP_PRIORITY_MIN || priority > COOP_PRIORITY_MAX)
    return job_fail(j, COOP_EINVAL, "priority %d: want %d..%d", priority, COOP_PRIORITY_MIN,
                    COOP_PRIORITY_MAX);
  j->priority = priority;
  return 0;
}

int coop_job_query_barrier(coop_job *j, int on) {
  return set_flag(j, COOP_SUBMIT_QUERY_BARRIER, on);
}

int coop_job_periodic(coop_job *j, uint32_t period_us, uint32_t count, uint32_t duration_ms,
                      uint32_t deadline_us) {
  if (!j) return COOP_EINVAL;
  if (period_us && !count && !duration_ms)
    return job_fail(j, COOP_EINVAL, "a periodic job needs a count or a duration");
  if (!period_us && (count || duration_ms || deadline_us))
    return job_fail(j, COOP_EINVAL, "count, duration and deadline need a period");
  uint64_t n = period_us ? (count ? count : (uint64_t)duration_ms * 1000 / period_us + 1) : 1;
  if (n > COOP_WIRE_MAX_INST)
    return job_fail(j, COOP_EINVAL, "%llu instances: at most %u per periodic job",
                    (unsigned long long)n, COOP_WIRE_MAX_INST);
  j->period_us = period_us;
  j->count = count;
  j->duration_ms = duration_ms;
  j->deadline_us = deadline_us;
  return 0;
}

static struct jarg *new_arg(coop_job *j, uint8_t type) {
  if (j->nargs == COOP_WIRE_MAX_ARGS) {
    job_fail(j, COOP_EARGS, "more than %u arguments", COOP_WIRE_MAX_ARGS);
    return NULL;
  }
  struct jarg *a = &j->a[j->nargs++];
  a->type = type;
  return a;
}

static int scalar(coop_job *j, uint8_t type, uint64_t bits) {
  if (!j) return COOP_EINVAL;
  struct jarg *a = new_arg(j, type);
  if (!a) return j->err;
  a->bits = bits;
  return 0;
}

int coop_job_u32(coop_job *j, uint32_t v) { return scalar(j, COOP_ARG_U32, v); }
int coop_job_i32(coop_job *j, int32_t v) { return scalar(j, COOP_ARG_I32, (uint32_t)v); }
int coop_job_u64(coop_job *j, uint64_t v) { return scalar(j, COOP_ARG_U64, v); }
int coop_job_i64(coop_job *j, int64_t v) { return scalar(j, COOP_ARG_I64, (uint64_t)v); }

int coop_job_f32(coop_job *j, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return scalar(j, COOP_ARG_F32, bits);
}

int coop_job_f64(coop_job *j, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return scalar(j, COOP_ARG_F64, bits);
}

static int buffer(coop_job *j, uint8_t dir, const void *data, void *mem, size_t size) {
  if (!j) return COOP_EINVAL;
  if (size == 0 || (!data && !mem))
    return job_fail(j, COOP_EINVAL, "argument %u: a buffer needs memory and a size > 0", j->nargs);
  struct jarg *a = new_arg(j, COOP_ARG_BUF);
  if (!a) return j->err;
  a->dir = dir;
  a->data = data;
  a->mem = mem;
  a->size = size;
  return 0;
}

int coop_job_buf_in(coop_job *j, const void *data, size_t size) {
  return buffer(j, COOP_BUF_IN, data, NULL, size);
}
int coop_job_buf_out(coop_job *j, void *mem, size_t size) {
  return buffer(j, COOP_BUF_OUT, NULL, mem, size);
}
int coop_job_buf_inout(coop_job *j, void *mem, size_t size) {
  return buffer(j, COOP_BUF_INOUT, mem, mem, size);
}

_Static_assert(COOP_JOB_IN == COOP_BUF_IN && COOP_JOB_OUT == COOP_BUF_OUT &&
                   COOP_JOB_INOUT == COOP_BUF_INOUT,
               "coop.h's directions are the wire's");

int coop_job_buf_fd(coop_job *j, int fd, size_t size, unsigned dir) {
  if (!j) return COOP_EINVAL;
  struct stat st;
  if (dir < COOP_JOB_IN || dir > COOP_JOB_INOUT)
    return job_fail(j, COOP_EINVAL, "argument %u: direction %u is not IN, OUT or INOUT", j->nargs,
                    dir);
  if (size == 0 || fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size < size)
    return job_fail(j, COOP_EINVAL,
                    "argument %u: a buffer descriptor must be a memfd or file of at least %zu "
                    "bytes (and size > 0)",
                    j->nargs, size);
  struct jarg *a = new_arg(j, COOP_ARG_BUF);
  if (!a) return j->err;
  a->dir = (uint8_t)dir;
  a->size = size;
  a->fd1 = fd + 1;
  return 0;
}

int coop_job_buffer(coop_job *j, uint64_t buffer) {
  if (!j) return COOP_EINVAL;
  if (buffer == 0) return job_fail(j, COOP_EINVAL, "argument %u: device buffer 0", j->nargs);
  return scalar(j, COOP_ARG_DEVBUF, buffer);
}

int coop_job_buffer_io(coop_job *j, uint64_t buffer, size_t offset, const void *in, void *out,
                       size_t len) {
  if (!j) return COOP_EINVAL;
  if (buffer == 0) return job_fail(j, COOP_EINVAL, "argument %u: device buffer 0", j->nargs);
  if (len == 0 || (!in && !out))
    return job_fail(j, COOP_EINVAL,
                    "argument %u: a device buffer's range needs a length > 0 and bytes in or "
                    "memory for them out",
                    j->nargs);
  if (offset > UINT64_MAX - len)
    return job_fail(j, COOP_EINVAL, "argument %u: offset %zu + %zu bytes overflows", j->nargs,
                    offset, len);
  struct jarg *a = new_arg(j, COOP_ARG_DEVBUF_IO);
  if (!a) return j->err;
  a->bits = buffer;
  a->at = offset;
  a->dir = (uint8_t)((in ? COOP_BUF_IN : 0) | (out ? COOP_BUF_OUT : 0));
  a->data = in;
  a->mem = out;
  a->size = len;
  return 0;
}

int coop_job_buffer_io_fd(coop_job *j, uint64_t buffer, size_t offset, int fd, size_t fd_off,
                          size_t len, unsigned dir) {
  if (!j) return COOP_EINVAL;
  struct stat st;
  if (buffer == 0) return job_fail(j, COOP_EINVAL, "argument %u: device buffer 0", j->nargs);
  if (dir < COOP_JOB_IN || dir > COOP_JOB_INOUT)
    return job_fail(j, COOP_EINVAL, "argument %u: direction %u is not IN, OUT or INOUT", j->nargs,
                    dir);
  if (len == 0 || offset > UINT64_MAX - len || fd_off > UINT64_MAX - len || fd < 0 ||
      fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < fd_off + len)
    return job_fail(j, COOP_EINVAL,
                    "argument %u: a range of %zu bytes > 0 at %zu of a memfd of at least %zu "
                    "bytes",
                    j->nargs, len, fd_off, fd_off + len);
  struct jarg *a = new_arg(j, COOP_ARG_DEVBUF_IO);
  if (!a) return j->err;
  a->bits = buffer;
  a->at = offset;
  a->dir = (uint8_t)dir;
  a->size = len;
  a->fd1 = fd + 1;
  a->fd_off = fd_off;
  a->fd_dev = st.st_dev;
  a->fd_ino = st.st_ino;
  return 0;
}

/* ---- placement ---- */

/* Instance records the RESULT will carry (57 bytes each). */
static uint64_t result_records(const coop_job *j) {
  if (!j->period_us) return 0;
  uint64_t n = j->count ? j->count : (uint64_t)j->duration_ms * 1000 / j->period_us + 1;
  return n < COOP_WIRE_MAX_INST ? n : COOP_WIRE_MAX_INST;
}

/* inl[i] = 1 for the buffers that travel inline: greedily in argument
 * order, while SUBMIT's IN bytes and RESULT's OUT bytes both fit. */
static void place(const coop_conn *c, const coop_job *j, int *inl) {
  uint64_t max = c->info.max_payload > FRAME_OVERHEAD ? c->info.max_payload - FRAME_OVERHEAD : 0;
  uint64_t rec = result_records(j) * COOP_WIRE_INST_BYTES;
  uint64_t in_room = max, out_room = max > rec ? max - rec : 0;
  if (out_room > INLINE_OUT_MAX) out_room = INLINE_OUT_MAX;
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct jarg *a = &j->a[i];
    inl[i] = 0;
    if (a->type != COOP_ARG_BUF || a->fd1 || a->size > c->info.inline_max) continue;
    uint64_t in = a->dir & COOP_BUF_IN ? a->size : 0, out = a->dir & COOP_BUF_OUT ? a->size : 0;
    if (in > in_room || out > out_room) continue;
    in_room -= in;
    out_room -= out;
    inl[i] = 1;
  }
}

/* ---- memfds ---- */

#define ZERO_RUN 4096u /* a page: what a hole saves */

/* n bytes between p and the file's bytes from offset base. */
static int fd_io_base(int fd, void *p, size_t n, size_t base, int writing) {
  for (size_t off = 0; off < n;) {
    ssize_t k = writing ? pwrite(fd, (const char *)p + off, n - off, (off_t)(base + off))
                        : pread(fd, (char *)p + off, n - off, (off_t)(base + off));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0)
      return coop__fail(COOP_EIO, "memfd %s: %s", writing ? "write" : "read", strerror(errno));
    if (k == 0) return coop__fail(COOP_EIO, "memfd shorter than the buffer (%zu bytes)", n);
    off += (size_t)k;
  }
  return 0;
}

static int fd_io(int fd, void *p, size_t n, int writing) {
  return fd_io_base(fd, p, n, 0, writing);
}

static int fd_io_at(int fd, void *p, size_t n, size_t base) {
  return fd_io_base(fd, p, n, base, 1);
}

/* Whether the n bytes at p are all zero. */
static int all_zero(const uint8_t *p, size_t n) {
  static const uint8_t zeros[ZERO_RUN];
  return memcmp(p, zeros, n) == 0;
}

/* The n bytes at p into fd, a fresh memfd of n bytes, but for the runs of
 * ZERO_RUN bytes that are all zero: those stay holes, which read as
 * zeros. Writing a page of a memfd costs the kernel its allocation and
 * zeroing: a job's scratch or mostly-zero input of 4 MiB took 2.5 ms a
 * buffer (bench/RESULTS.md, "Many sources through coopd"). Runs of
 * nonzero pages go in one write each. */
static int write_sparse(int fd, const uint8_t *p, size_t n) {
  size_t run = 0; /* start of the pending run of data */
  for (size_t at = 0; at < n; at += ZERO_RUN) {
    size_t len = n - at < ZERO_RUN ? n - at : ZERO_RUN;
    if (!all_zero(p + at, len)) continue;
    if (run < at) {
      int e = fd_io_at(fd, (void *)(p + run), at - run, run);
      if (e) return e;
    }
    run = at + len;
  }
  return run < n ? fd_io_at(fd, (void *)(p + run), n - run, run) : 0;
}

static int make_memfd(const struct jarg *a, int *out) {
  int fd = memfd_create("coop-buffer", MFD_CLOEXEC);
  if (fd < 0) return coop__fail(COOP_EIO, "memfd_create: %s", strerror(errno));
  int e = 0;
  if (ftruncate(fd, (off_t)a->size) < 0)
    e = coop__fail(COOP_EIO, "memfd of %zu bytes: %s", a->size, strerror(errno));
  else if (a->dir & COOP_BUF_IN)
    e = write_sparse(fd, a->data, a->size);
  if (e) {
    close(fd);
    return e;
  }
  *out = fd;
  return 0;
}

/* ---- SUBMIT ---- */

static struct coop_pending *pending_new(void) {
  struct coop_pending *p = calloc(1, sizeof *p);
  if (p) p->iofd = -1;
  return p;
}

/* failed: the job's request failed, so the daemon may still use the
 * connection's transfer memfd: it is dropped (coop__xfer_give) */
static void pending_free(coop_conn *c, struct coop_pending *p, int failed) {
  for (unsigned i = 0; p && i < p->n; i++)
    if (p->b[i].fd >= 0) close(p->b[i].fd);
  if (p && p->iofd >= 0) close(p->iofd);
  if (p && p->xfer) coop__xfer_give(c, failed);
  free(p);
}

void coop__pending_free_all(coop_conn *c) {
  while (c->pending) {
    struct coop_pending *p = c->pending;
    c->pending = p->next;
    pending_free(c, p, 1);
  }
}

/* One buffer argument into the SUBMIT; memfds go to fds[] and, for
 * output, to p (which then owns them; fds[] keeps IN-only ones). */
static int put_buffer(const struct jarg *a, unsigned i, int inl, struct coop_wire_arg *w, int *fds,
                      unsigned *nfds, struct coop_pending *p) {
  w->dir = a->dir;
  w->size = a->size;
  w->fd = COOP_WIRE_FD_NONE;
  int fd = -1;
  if (a->fd1) {
    /* the caller's own: sent as it is (a duplicate, closed once sent); the
     * daemon writes the output there, nothing to copy back */
    fd = fcntl(a->fd1 - 1, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return coop__fail(COOP_EIO, "argument %u: dup: %s", i, strerror(errno));
    w->fd = (uint8_t)*nfds;
    fds[(*nfds)++] = fd;
    return 0;
  }
  if (inl && (a->dir & COOP_BUF_IN)) {
    w->data = a->data;
    w->data_len = (uint32_t)a->size;
  } else if (!inl) {
    int e = make_memfd(a, &fd);
    if (e) return e;
    w->fd = (uint8_t)*nfds;
    fds[(*nfds)++] = fd;
  }
  if (a->dir & COOP_BUF_OUT) {
    p->b[p->n] = (struct coop_outbuf){.arg = (uint8_t)i, .mem = a->mem, .size = a->size, .fd = fd};
    p->n++;
  }
  return 0;
}

/* Where each range a job moves sits in its transfer memfd. */
#define IO_ALIGN 64u

static size_t io_layout(const coop_job *j, size_t *off) {
  size_t total = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    if (j->a[i].type != COOP_ARG_DEVBUF_IO || j->a[i].fd1) continue;
    off[i] = total;
    total += (j->a[i].size + IO_ALIGN - 1) / IO_ALIGN * IO_ALIGN;
  }
  return total;
}

/* XFER: fd becomes the connection's transfer memfd in coopd. */
static int xfer_register(coop_conn *c, int fd) {
  union coop_msg m, r;
  memset(&m, 0, sizeof m);
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_XFER, &m, &fd, 1, coop__timeout(c), COOP_MSG_OK, &r, &f);
  coop__frame_free(f);
  return e;
}

/* How a job's range names memfd fd on the wire: COOP_WIRE_FD_XFER when
 * coopd holds it as the connection's transfer memfd (sent by XFER when the
 * job's first memfd is the last job's first too: a frame loop's, from its
 * second frame on), so that the SUBMIT carries no descriptor and may go by
 * the shared ring; else a duplicate appended to fds. *first: the job's
 * first memfd was looked at. known: fd's identity where it is known (this
 * connection's own transfer memfd, which the job holds; a caller's memfd,
 * looked at when its range was named: no fstat a frame), else NULL.
 * Called with xreg_mu held. */
static int io_fd_name(coop_conn *c, int fd, const struct stat *known, int *fds, unsigned *nfds,
                      int *first, uint8_t *name) {
  struct stat st;
  if (known) st = *known;
  if (known || fstat(fd, &st) == 0) {
    if (c->xreg && st.st_dev == c->xreg_dev && st.st_ino == c->xreg_ino) {
      /* and no other memfd of this job may replace it now: that would
       * change what this name means to coopd */
      *first = 1;
      *name = COOP_WIRE_FD_XFER;
      return 0;
    }
    int again = c->xlast && st.st_dev == c->xlast_dev && st.st_ino == c->xlast_ino;
    if (!*first && again && xfer_register(c, fd) == 0) {
      *first = 1;
      c->xreg = 1;
      c->xreg_dev = st.st_dev;
      c->xreg_ino = st.st_ino;
      *name = COOP_WIRE_FD_XFER;
      return 0;
    }
    coop__clear_msg(); /* a refused XFER only costs the descriptor's crossing */
    if (!*first) {
      c->xlast = 1;
      c->xlast_dev = st.st_dev;
      c->xlast_ino = st.st_ino;
    }
  }
  *first = 1;
  if (*nfds == COOP_WIRE_MAX_FDS)
    return coop__fail(COOP_EARGS, "more than %u descriptors in one job", COOP_WIRE_MAX_FDS);
  int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) return coop__fail(COOP_EIO, "dup: %s", strerror(errno));
  *name = (uint8_t)*nfds;
  fds[(*nfds)++] = d; /* closed once sent (close_sent) */
  return 0;
}

/* The ranges in the caller's own memfds (coop_job_buffer_io_fd), named as
 * io_fd_name says: nothing copied here. */
static int put_io_fds(coop_conn *c, const coop_job *j, struct coop_msg_submit *s, int *fds,
                      unsigned *nfds, int *first) {
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct jarg *a = &j->a[i];
    if (a->type != COOP_ARG_DEVBUF_IO || !a->fd1) continue;
    struct coop_wire_arg *w = &s->args[i];
    struct stat known = {.st_dev = a->fd_dev, .st_ino = a->fd_ino}; /* coop_job_buffer_io_fd's */
    int e = io_fd_name(c, a->fd1 - 1, &known, fds, nfds, first, &w->fd);
    if (e) return e;
    w->dir = a->dir;
    w->at = a->at;
    w->size = a->size;
    w->off = a->fd_off;
  }
  return 0;
}

/* The ranges of device buffers the job moves (coop_job_buffer_io and
 * _fd): those in the caller's memfds as they are; every other IN range
 * copied into one memfd, the connection's when it is free (held by p until
 * the RESULT) or a fresh one, sent as one descriptor; p learns where each
 * OUT range will be. */
static int put_io(coop_conn *c, const coop_job *j, struct coop_msg_submit *s, int *fds,
                  unsigned *nfds, struct coop_pending *p) {
  int first = 0;
  int e = put_io_fds(c, j, s, fds, nfds, &first);
  if (e) return e;
  size_t off[COOP_WIRE_MAX_ARGS] = {0};
  size_t total = io_layout(j, off);
  if (!total) return 0;
  uint8_t *mem = NULL, name = 0;
  int fd = coop__xfer_take(c, total, &mem), out = 0;
  p->xfer = fd >= 0;
  p->iomem = mem;
  if (fd < 0) { /* a fresh one, its own: sent, never registered */
    fd = coop__memfd_of(NULL, total);
    if (fd < 0) return fd;
    if (*nfds == COOP_WIRE_MAX_FDS) {
      close(fd);
      return coop__fail(COOP_EARGS, "more than %u descriptors in one job", COOP_WIRE_MAX_FDS);
    }
    name = (uint8_t)*nfds;
    fds[(*nfds)++] = fd; /* closed once sent (close_sent) */
  } else {
    struct stat own = {.st_dev = c->xfd_dev, .st_ino = c->xfd_ino}; /* held: coop__xfer_take */
    e = io_fd_name(c, fd, &own, fds, nfds, &first, &name);
    if (e) return e;
    fd = -1; /* written through mem */
  }
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct jarg *a = &j->a[i];
    if (a->type != COOP_ARG_DEVBUF_IO || a->fd1) continue;
    struct coop_wire_arg *w = &s->args[i];
    w->dir = a->dir;
    w->fd = name;
    w->at = a->at;
    w->size = a->size;
    w->off = off[i];
    if ((a->dir & COOP_BUF_IN) && mem) memcpy(mem + off[i], a->data, a->size);
    if ((a->dir & COOP_BUF_IN) && !mem) {
      e = fd_io_at(fd, (void *)a->data, a->size, off[i]);
      if (e) return e;
    }
    if (a->dir & COOP_BUF_OUT) {
      p->b[p->n++] = (struct coop_outbuf){
          .arg = (uint8_t)i, .mem = a->mem, .size = a->size, .fd = -1, .io = 1, .off = off[i]};
      out = 1;
    }
  }
  if (!mem && out) { /* its own memfd: read back at the RESULT */
    p->iofd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (p->iofd < 0) return coop__fail(COOP_EIO, "dup: %s", strerror(errno));
  }
  return 0;
}

static int build_submit(coop_conn *c, const coop_job *j, struct coop_msg_submit *s, int *fds,
                        unsigned *nfds, struct coop_pending *p) {
  int inl[COOP_WIRE_MAX_ARGS];
  place(c, j, inl);
  memcpy(s->kernel, j->kernel, sizeof s->kernel);
  s->flags = j->flags;
  s->groups = j->groups;
  s->period_us = j->period_us;
  s->count = j->count;
  s->duration_ms = j->duration_ms;
  s->deadline_us = j->deadline_us;
  s->device = j->device;
  s->priority = j->priority;
  s->nargs = (uint8_t)j->nargs;
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct jarg *a = &j->a[i];
    s->args[i].type = a->type;
    s->args[i].bits = a->bits;
    if (a->type != COOP_ARG_BUF) continue;
    int e = put_buffer(a, i, inl[i], &s->args[i], fds, nfds, p);
    if (e) return e;
  }
  return put_io(c, j, s, fds, nfds, p);
}

/* Closes the descriptors of fds[] that p does not keep. */
static void close_sent(const int *fds, unsigned nfds, const struct coop_pending *p) {
  for (unsigned i = 0; i < nfds; i++) {
    int kept = 0;
    for (unsigned k = 0; k < p->n; k++) kept |= p->b[k].fd == fds[i];
    if (!kept) close(fds[i]);
  }
}

static void pending_add(coop_conn *c, struct coop_pending *p) {
  pthread_mutex_lock(&c->mu);
  p->next = c->pending;
  c->pending = p;
  pthread_mutex_unlock(&c->mu);
}

int coop_submit(coop_conn *c, const coop_job *j, uint64_t *job) {
  coop__clear_msg();
  if (!c || !j || !job) return coop__fail(COOP_EINVAL, "submit: no connection, job or id");
  if (j->err) return coop__fail(j->err, "job description: %s", j->errmsg);
  /* request and reply: large; the encoder reads the request's submit only,
   * and the decoder writes the reply's member only (wire.h) */
  union coop_msg *m = malloc(2 * sizeof *m);
  if (m) memset(&m[0].submit, 0, sizeof m[0].submit);
  struct coop_pending *p = pending_new();
  int fds[COOP_WIRE_MAX_FDS];
  unsigned nfds = 0;
  struct coop_frame *f = NULL;
  int e = m && p ? 0 : coop__fail(COOP_ENOMEM, "out of memory");
  int io = 0;
  for (unsigned i = 0; i < j->nargs; i++) io |= j->a[i].type == COOP_ARG_DEVBUF_IO;
  if (io) pthread_mutex_lock(&c->xreg_mu); /* its XFER, if any, and its SUBMIT together */
  if (!e) e = build_submit(c, j, &m[0].submit, fds, &nfds, p);
  if (!e)
    e = coop__request(c, COOP_MSG_SUBMIT, &m[0], fds, nfds, coop__timeout(c), COOP_MSG_ACCEPTED,
                      &m[1], &f);
  if (io) pthread_mutex_unlock(&c->xreg_mu);
  if (p) close_sent(fds, nfds, p); /* sent: the daemon holds its own copies */
  if (!e) {
    *job = p->job = m[1].job.job;
    if (p->n || p->xfer) { /* output to copy, or the transfer memfd held */
      pending_add(c, p);
      p = NULL;
    }
  }
  pending_free(c, p, e != 0);
  coop__frame_free(f);
  free(m);
  return e;
}

/* ---- output ---- */

static struct coop_pending *pending_take(coop_conn *c, uint64_t job) {
  pthread_mutex_lock(&c->mu);
  struct coop_pending *p = NULL;
  for (struct coop_pending **q = &c->pending; *q; q = &(*q)->next)
    if ((*q)->job == job) {
      p = *q;
      *q = p->next;
      break;
    }
  pthread_mutex_unlock(&c->mu);
  return p;
}

static int copy_inline(const struct coop_msg_result *r, const struct coop_outbuf *b) {
  for (unsigned k = 0; k < r->nbuf; k++) {
    if (r->bufs[k].arg != b->arg) continue;
    if (r->bufs[k].len != b->size) break;
    memcpy(b->mem, r->bufs[k].data, b->size);
    return 0;
  }
  return coop__fail(COOP_EPROTO, "the RESULT of job %llu lacks the %zu output bytes of argument %u",
                    (unsigned long long)r->job, b->size, b->arg);
}

int coop__result_writeback(coop_conn *c, const struct coop_msg_result *r) {
  struct coop_pending *p = pending_take(c, r->job);
  int e = 0;
  /* a job that did not finish left nothing worth copying over the caller's */
  for (unsigned i = 0; p && r->state == COOP_JOB_DONE && i < p->n && !e; i++) {
    const struct coop_outbuf *b = &p->b[i];
    if (b->io && p->iomem)
      memcpy(b->mem, p->iomem + b->off, b->size);
    else if (b->io)
      e = fd_io_base(p->iofd, b->mem, b->size, b->off, 0);
    else
      e = b->fd >= 0 ? fd_io(b->fd, b->mem, b->size, 0) : copy_inline(r, b);
  }
  pending_free(c, p, 0);
  return e;
}
