/*
 * sess_bufs.c: a client's device buffers: BUF_CREATE, BUF_WRITE, BUF_READ
 * and BUF_FREE (PROTOCOL.md, "Device buffers"; the table: bufs.h). CREATE,
 * WRITE and READ go to the device thread (dev_buf_op) and are answered
 * when it has done them; a connection that closes meanwhile gets no
 * answer, and what it created is freed.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bufs.h"
#include "fdio.h"
#include "fdref.h"
#include "log.h"
#include "session.h"

/* An operation in flight for a client: on its session's list until done. */
struct sess_bufop {
  struct dev_bufop op;
  struct session *s; /* NULL once the connection has closed */
  struct daemon *dm;
  uint32_t seq;
  struct dbuf *b;
  int keep_fd; /* READ inline: the memfd the device process writes, read back here */
  struct sess_bufop *next;
};

/* The buffer, or an ERROR sent and NULL. */
static struct dbuf *lookup(struct session *s, uint32_t seq, uint64_t id) {
  struct job_err e;
  struct dbuf *b = dbuf_lookup(s->dm, s->uid, id, &e);
  if (!b) sess_error(s, seq, e.code, "%s", e.message);
  return b;
}

/* The frame's descriptor `fd`, taken (fds[fd] = -1) when it is a regular
 * file of at least `need` bytes; else -1 with the ERROR sent. */
static int take_fd(struct session *s, uint32_t seq, int *fds, unsigned nfds, uint8_t fd,
                   uint64_t need, int out) {
  struct stat st;
  char why[160];
  if (fd >= nfds || fds[fd] < 0) {
    sess_error(s, seq, COOP_EINVAL, "descriptor %u missing: the frame carries %u", fd, nfds);
    return -1;
  }
  int r = out ? fdio_client_out(fds[fd], s->pid, &st, why, sizeof why)
              : fdio_client_file(fds[fd], s->pid, &st, why, sizeof why);
  if (r == FDIO_DISK) {
    sess_error(s, seq, COOP_EPERM, "descriptor %u: %s; " FDIO_DISK_DO, fd, why);
    return -1;
  }
  if (r) {
    sess_error(s, seq, COOP_EINVAL,
               "descriptor %u: %s; a memfd (or a regular file of tmpfs or a local disk) is "
               "wanted",
               fd, why);
    return -1;
  }
  if ((uint64_t)st.st_size < need) {
    sess_error(s, seq, COOP_EINVAL, "descriptor %u: %llu bytes, shorter than the %llu wanted", fd,
               (unsigned long long)st.st_size, (unsigned long long)need);
    return -1;
  }
  int f = fds[fd];
  fds[fd] = -1;
  return f;
}

/* A memfd holding n bytes of p (p NULL: n zero bytes), or -1. */
static int memfd_with(const void *p, uint64_t n) {
  int fd = memfd_create("coopd-buffer", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)n) || (p && fdio_pwrite(fd, p, n, 0))) {
    close(fd);
    return -1;
  }
  return fd;
}

static void on_done(struct dev_bufop *op);

/* The operation on its way: b is in use until it is done. */
static void start(struct session *s, uint32_t seq, struct dbuf *b, struct sess_bufop *o) {
  o->s = s;
  o->dm = s->dm;
  o->seq = seq;
  o->b = b;
  o->op.done = on_done;
  o->op.arg = b->arg;
  o->op.gen = b->gen;
  o->next = s->bufops;
  s->bufops = o;
  s->nbufops++;
  b->users++;
  TRACE_STAMP(&o->op, queued);
  dev_buf_op(s->dm->devs[b->device], &o->op);
  loopspin_for(&s->dm->spin, dev_idle_spin_ns(s->dm->devs[b->device])); /* its answer */
}

static struct sess_bufop *new_op(struct session *s, uint32_t seq, int kind) {
  if (s->nbufops >= SESS_MAX_BUFOPS) {
    sess_error(s, seq, COOP_ELIMIT,
               "at most %u device buffer operations in flight per connection: wait for their "
               "answers",
               SESS_MAX_BUFOPS);
    return NULL;
  }
  struct sess_bufop *o = calloc(1, sizeof *o);
  if (!o) {
    sess_error(s, seq, COOP_ENOMEM, "out of memory");
    return NULL;
  }
  o->op.kind = kind;
  o->op.fd = -1;
  o->op.owner = s->uid + 1;
  TRACE_STAMP(&o->op, recv);
  o->keep_fd = -1;
  return o;
}

static void answer(struct sess_bufop *o) {
  struct session *s = o->s;
  struct dbuf *b = o->b;
  union coop_msg r;
  memset(&r, 0, sizeof r);
  uint8_t *data = NULL;
  /* a create that failed made no buffer: its id, never answered, is not
   * named ("device buffer 8: no room" read as a buffer of the caller's) */
  if (o->op.err && o->op.kind == DEV_BUF_CREATE)
    return sess_error(s, o->seq, o->op.err, "buffer create: %s", o->op.message);
  if (o->op.err)
    return sess_error(s, o->seq, o->op.err, "device buffer %llu: %s", (unsigned long long)b->id,
                      o->op.message);
  switch (o->op.kind) {
    case DEV_BUF_CREATE:
      r.buffer.buffer = b->id;
      r.buffer.device = b->device;
      r.buffer.size = b->size;
      return sess_send(s, COOP_MSG_BUFFER, o->seq, &r);
    case DEV_BUF_WRITE:
      return sess_send(s, COOP_MSG_OK, o->seq, &r);
    case DEV_BUF_READ:
      if (o->keep_fd >= 0) {
        data = malloc(o->op.size ? o->op.size : 1);
        if (!data || fdio_pread(o->keep_fd, data, o->op.size, 0)) {
          free(data);
          return sess_error(s, o->seq, COOP_ENOMEM, "could not read the bytes back");
        }
        r.buf_data.data = data;
        r.buf_data.data_len = (uint32_t)o->op.size;
      }
      sess_send(s, COOP_MSG_BUF_DATA, o->seq, &r);
      free(data);
      return;
  }
}

static void on_done(struct dev_bufop *op) {
  struct sess_bufop *o = (struct sess_bufop *)op; /* op is its first member */
  struct dbuf *b = o->b;
  struct daemon *dm = o->dm;
  TRACE_STAMP(op, loop_got);
  if (o->s) {
    for (struct sess_bufop **p = &o->s->bufops; *p; p = &(*p)->next)
      if (*p == o) {
        *p = o->next;
        o->s->nbufops--;
        break;
      }
  }
  if (op->kind == DEV_BUF_CREATE && op->err == 0) {
    b->arg = op->arg;
    b->gen = op->gen;
    b->ready = 1;
  }
  if (b->device < dm->ndev) /* the client's next request (loopspin.h) */
    loopspin_for(&dm->spin, dev_idle_spin_ns(dm->devs[b->device]));
  if (o->s) answer(o); /* may close the session: o->s is not used after */
  if (coopd_tracing) {
    TRACE_STAMP(op, answered);
    trace_buf_write(op->kind == DEV_BUF_CREATE  ? "create"
                    : op->kind == DEV_BUF_WRITE ? "write"
                                                : "read",
                    op->size, &op->tr);
  }
  if (o->keep_fd >= 0) close(o->keep_fd);
  if (op->kind == DEV_BUF_CREATE && op->err) dbuf_release(dm, b); /* never given out */
  if (op->kind == DEV_BUF_CREATE && !b->owner && !(b->flags & COOP_BUFFER_KEEP))
    dbuf_release(dm, b); /* its connection went before the answer */
  dbuf_unuse(dm, b);
  free(o);
}

void sess_bufs_closed(struct session *s) {
  for (struct sess_bufop *o = s->bufops; o; o = o->next) o->s = NULL;
  s->bufops = NULL;
  s->nbufops = 0;
  dbuf_session_closed(s->dm, s);
}

/* [limits] max_buffer_percent_per_uid: a device buffer stays until it is
 * freed, so one user's could fill the device's room for them, and every
 * other user's job then failed for want of arena ("no room in the device
 * arena"). A user's device buffers on a device may take that share of what
 * the other users' there leave of its arena and, on CUDA, of its device
 * memory beside it ([device] device_mb, where they go first). A share of
 * the whole room let two users at their shares fill it, and a third, who
 * held none, was refused ENOMEM for any buffer and any job with buffers;
 * of what the others leave, k users' buffers leave at least (1 - share)^k
 * of it to the rest (a quarter beside two users at 50%). 1 with the ERROR
 * sent if size more would pass it. */
static int room_refused(struct session *s, uint32_t seq, unsigned dev, uint64_t size) {
  struct daemon *dm = s->dm;
  unsigned pct = dm->cfg.max_buffer_percent_per_uid;
  if (!pct || pct >= 100) return 0;
  char backend[16];
  dev_backend(dm->devs[dev], backend, sizeof backend);
  uint64_t room = (uint64_t)dm->cfg.arena_mb << 20;
  if (!strcmp(backend, "cuda")) room += (uint64_t)dm->cfg.device_mb << 20;
  uint64_t others, held = dbuf_bytes_on(dm, s->uid, (uint8_t)dev, &others);
  uint64_t left = others < room ? room - others : 0, cap = left * pct / 100;
  if (held + size <= cap) return 0;
  /* in KiB: 50% of a 1 MiB arena read "0 of 1 MiB" in MiB */
  sess_error(s, seq, COOP_ELIMIT,
             "at most %u%% per user of the room for device buffers that other users' leave on "
             "device %u (%llu of the %llu KiB they leave; theirs hold %llu KiB) ([limits] "
             "max_buffer_percent_per_uid): yours there hold %llu bytes, this one %llu more",
             pct, dev, (unsigned long long)(cap >> 10), (unsigned long long)(left >> 10),
             (unsigned long long)(others >> 10), (unsigned long long)held,
             (unsigned long long)size);
  return 1;
}

void sess_buf_create(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                     unsigned nfds) {
  const struct coop_msg_buf_create *m = &msg->buf_create;
  struct daemon *dm = s->dm;
  struct uid_use *u = s->use;
  uint64_t arena = (uint64_t)dm->cfg.arena_mb << 20;
  unsigned dev = m->device == COOP_WIRE_ANY_DEVICE ? 0 : m->device;
  if (dm->stopping) return sess_error(s, seq, COOP_ESHUTDOWN, "coopd is shutting down");
  if (dev >= dm->ndev)
    return sess_error(s, seq, COOP_EINVAL, "no device %u: this coopd runs %u", dev, dm->ndev);
  if (m->size > arena)
    return sess_error(s, seq, COOP_EINVAL,
                      "a buffer of %llu bytes is larger than the arena (%u MiB)",
                      (unsigned long long)m->size, dm->cfg.arena_mb);
  if (u->bufs >= dm->cfg.max_buffers_per_uid)
    return sess_error(s, seq, COOP_ELIMIT,
                      "at most %u device buffers per user ([limits] max_buffers_per_uid)",
                      dm->cfg.max_buffers_per_uid);
  if (u->bytes + m->size > dm->cfg.max_bytes_per_uid)
    return sess_error(s, seq, COOP_ELIMIT,
                      "at most %llu buffer bytes per user ([limits] max_bytes_per_uid): its jobs, "
                      "results and device buffers hold %llu, this buffer %llu more",
                      dm->cfg.max_bytes_per_uid, (unsigned long long)u->bytes,
                      (unsigned long long)m->size);
  if (room_refused(s, seq, dev, m->size)) return;
  struct sess_bufop *o = new_op(s, seq, DEV_BUF_CREATE);
  if (!o) return;
  o->op.size = m->size;
  if (m->fd != COOP_WIRE_FD_NONE) {
    o->op.fd = take_fd(s, seq, fds, nfds, m->fd, m->size, 0);
  } else if (m->data_len) {
    o->op.fd = memfd_with(m->data, m->size);
    if (o->op.fd < 0) sess_error(s, seq, COOP_ENOMEM, "could not hold the bytes");
  }
  if ((m->fd != COOP_WIRE_FD_NONE || m->data_len) && o->op.fd < 0) return free(o);
  struct dbuf *b = dbuf_new(dm, u, s, (uint8_t)dev, m->flags, m->size);
  if (!b) {
    if (o->op.fd >= 0) close(o->op.fd);
    free(o);
    return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  }
  start(s, seq, b, o);
}

/* WRITE and READ: the buffer, and the range inside it; or NULL with the
 * ERROR sent. */
static struct dbuf *range(struct session *s, uint32_t seq, const struct coop_msg_buf_range *m) {
  struct dbuf *b = lookup(s, seq, m->buffer);
  if (b && (m->offset > b->size || m->len > b->size - m->offset)) {
    sess_error(s, seq, COOP_EINVAL, "bytes %llu..%llu are outside device buffer %llu (%llu bytes)",
               (unsigned long long)m->offset, (unsigned long long)(m->offset + m->len),
               (unsigned long long)b->id, (unsigned long long)b->size);
    return NULL;
  }
  return b;
}

void sess_buf_write(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                    unsigned nfds) {
  const struct coop_msg_buf_range *m = &msg->buf_range;
  struct dbuf *b = range(s, seq, m);
  if (!b) return;
  if (m->len == 0) return sess_send(s, COOP_MSG_OK, seq, &(union coop_msg){0});
  struct sess_bufop *o = new_op(s, seq, DEV_BUF_WRITE);
  if (!o) return;
  o->op.size = m->len;
  o->op.at = m->offset;
  if (m->fd != COOP_WIRE_FD_NONE) {
    o->op.fd = take_fd(s, seq, fds, nfds, m->fd, m->len, 0);
  } else {
    o->op.fd = memfd_with(m->data, m->len);
    if (o->op.fd < 0) sess_error(s, seq, COOP_ENOMEM, "could not hold the bytes");
  }
  if (o->op.fd < 0) return free(o);
  start(s, seq, b, o);
}

void sess_buf_read(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                   unsigned nfds) {
  const struct coop_msg_buf_range *m = &msg->buf_range;
  struct dbuf *b = range(s, seq, m);
  if (!b) return;
  if (m->len == 0) return sess_send(s, COOP_MSG_BUF_DATA, seq, &(union coop_msg){0});
  struct sess_bufop *o = new_op(s, seq, DEV_BUF_READ);
  if (!o) return;
  o->op.size = m->len;
  o->op.at = m->offset;
  if (m->fd != COOP_WIRE_FD_NONE) {
    o->op.fd = take_fd(s, seq, fds, nfds, m->fd, 0, 1); /* written, grown if need be */
  } else {
    o->keep_fd = memfd_with(NULL, m->len);
    o->op.fd = o->keep_fd >= 0 ? dup(o->keep_fd) : -1;
    if (o->op.fd < 0) sess_error(s, seq, COOP_ENOMEM, "could not make room for the bytes");
  }
  if (o->op.fd < 0) {
    if (o->keep_fd >= 0) close(o->keep_fd);
    return free(o);
  }
  start(s, seq, b, o);
}

void sess_buf_free(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                   unsigned nfds) {
  struct dbuf *b = lookup(s, seq, msg->buf_free.buffer);
  if (!b) return;
  dbuf_release(s->dm, b);
  sess_send(s, COOP_MSG_OK, seq, &(union coop_msg){0});
}

void sess_xfer_drop(struct session *s) {
  int fd = s->xfer ? fdref_drop(s->xfer) : -1;
  if (fd >= 0) close(fd);
  s->xfer = NULL;
}

/* XFER: the frame's one descriptor becomes the connection's transfer
 * memfd, replacing any earlier one (a job in flight keeps its reference
 * to that: fdref.h), until the connection closes: at most one per
 * connection, which its user's connection bound bounds. */
void sess_xfer(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
               unsigned nfds) {
  (void)msg;
  struct stat st;
  char why[160] = "";
  /* ranges of frames are written into it too */
  int r = nfds == 1 && fds[0] >= 0 ? fdio_client_out(fds[0], s->pid, &st, why, sizeof why) : -1;
  if (r == FDIO_DISK)
    return sess_error(s, seq, COOP_EPERM, "XFER's descriptor: %s; " FDIO_DISK_DO, why);
  if (r)
    return sess_error(s, seq, COOP_EINVAL,
                      "XFER carries exactly one descriptor, a memfd (regular file); it came "
                      "with %u%s%s",
                      nfds, why[0] ? ": " : "", why);
  struct fdref *x = fdref_new(fds[0]);
  if (!x) return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  sess_xfer_drop(s);
  s->xfer = x;
  s->xfer_ino = (uint64_t)st.st_ino;
  s->xfer_devno = (uint64_t)st.st_dev;
  int seals = fcntl(fds[0], F_GET_SEALS);
  s->xfer_size = seals >= 0 && (seals & F_SEAL_SHRINK) ? (uint64_t)st.st_size : 0;
  fds[0] = -1; /* taken */
  sess_send(s, COOP_MSG_OK, seq, &(union coop_msg){0});
}
