/*
 * session.c: one client connection: framing, the hello handshake's
 * deadline, and the dispatch of requests through one table (cmds[]) to
 * their handlers in sess_jobs.c, sess_info.c, sess_bufs.c and kadd.c
 * (protocol/PROTOCOL.md).
 *
 * Trust: everything a client sends is checked here before it reaches the
 * device thread. A malformed, truncated, oversized or wrong-version frame
 * gets an ERROR and closes this connection only. Credentials come from
 * SO_PEERCRED; a client sees and cancels only its own uid's jobs unless it
 * is root.
 *
 * Resources (docs/faults.md, "Resources a client can exhaust"):
 * every one a client can make coopd hold is bounded, per connection and per
 * user (struct uid_use, counted over all of a uid's connections, so that
 * reconnecting escapes nothing; root has its own caps like anyone):
 *   connections  max_clients_per_uid, refused with an ERROR; a connection
 *                that sends no HELLO within hello_timeout_ms is closed; at
 *                max_clients, a user holding fewer still gets in, and the
 *                user holding the most loses a connection (evict_pick);
 *   replies      the bytes queued and not yet written (out.len - out_off;
 *                the written prefix is dropped as it goes, so memory
 *                follows them): past SESS_OUT_PAUSE no more requests are
 *                read until they drain; past SESS_MAX_OUT the connection
 *                is dropped (events that come unasked); past
 *                SESS_RESULT_BEHIND the RESULTs of WAITs whose job ends
 *                are built only as the client reads (sess_jobs.c,
 *                defer_result);
 *   jobs         max_jobs_per_client and max_jobs_per_uid live jobs
 *                (detached ones included: they outlive the connection);
 *   bytes        max_bytes_per_client in flight on a connection, and
 *                max_bytes_per_uid in flight plus the inline result bytes
 *                coopd keeps for the user (a finished job's inline IN copies
 *                are freed when it finishes);
 *   results      max_finished_per_client per connection, and finished
 *                DETACHED jobs whose client has gone: max_detached_kept_per_uid
 *                per user and max_detached_kept in all, the oldest of the
 *                same user dropped first, so one user never evicts another's;
 *   waiters      SESS_MAX_WAITERS per connection.
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "log.h"
#include "bufs.h"
#include "fdclose.h"
#include "fdref.h"
#include "session.h"

#define SESS_MAX_OUT (64u << 20)  /* replies pending: dropped past this */
#define SESS_OUT_PAUSE (8u << 20) /* replies pending: no requests read past this */
#define SESS_OUT_KEEP (1u << 20)  /* an output buffer larger is freed once drained */
/* replies pending: a RESULT that comes unasked waits for them to drain */
#define SESS_RESULT_BEHIND (1u << 20)
#define SESS_LOG_MS 10000       /* a refusal of connections logged once per 10 s */
#define SESS_STOP_FLUSH_MS 2000 /* a stop's last replies, every connection's together */
#define SESS_RECV_CHUNK 65536u
/* socket frames answered in one turn, then the loop serves others (the
 * rest, read already, next turn: docs/daemon.md, "The client's ring") */
#define SESS_FRAMES_PER_WAKE 64
/* ring records taken in one turn: then the loop turns (sess_ring_input) */
#define SESS_RING_PER_TURN SESS_FRAMES_PER_WAKE
/* socket frames and ring records of one user's connections together in
 * one turn (user_may), but at least one a connection: each connection's
 * bound alone let one user's 15 fed rings have 960 records answered each
 * turn before another user's STATS, 1.0-2.5 ms at the median (0.2-0.4
 * now: docs/daemon.md, "The client's ring") */
#define SESS_USER_PER_TURN SESS_FRAMES_PER_WAKE
#define SESS_RING_MORE_NS 100000 /* the spin that brings the loop back for the rest */
/* replies encoded in one turn's frames, then the loop serves others: a
 * frame's cost follows its reply's size, and one user's 16 connections
 * of STATUS of all its 4096 jobs (80 KiB each), 64 a connection a turn,
 * held another user's STATUS 376 ms at the median. The first frame of a
 * turn is answered whatever its size. */
#define SESS_TURN_BYTES (64u << 10)

void sess_close_after_error(struct session *s) {
  if (s->closing != 3) s->closing = 2;
}

/* ---- output ---- */

/* The frame just encoded at out[mark..] goes by the ring if the client
 * uses it and it has room (then a RING_WAKE follows on the socket if the
 * client may be asleep), else by the socket; the socket's frames are
 * counted (sring.h). A client that could not map the ring never writes
 * to it, and gets every reply by the socket. */
static void sess_route(struct session *s, size_t mark) {
  if (s->ring && s->down_used && !s->down_off && s->out.len > mark) {
    int r = coop_sring_put(&s->down, s->out.p + mark, (uint32_t)(s->out.len - mark), s->sock_out);
    if (r == 1) {
      s->out.len = mark;
      if (!coop_sring_reader_asleep(&s->down)) return;
      if (coop_wire_encode(&s->out, COOP_MSG_RING_WAKE, 0, NULL)) return; /* out of memory */
    } else if (r < 0) {
      log_warn("client %u/%s: its ring's head is impossible: replies go by the socket", s->pid,
               s->name);
      s->down_off = 1;
    }
  }
  if (s->out.len > mark) s->sock_out++;
}

void sess_send(struct session *s, uint16_t type, uint32_t seq, const union coop_msg *m) {
  if (s->closing) return;
  sess_queue(s, type, seq, m);
  sess_flush(s);
}

void sess_queue(struct session *s, uint16_t type, uint32_t seq, const union coop_msg *m) {
  if (s->closing) return;
  size_t mark = s->out.len;
  int e = coop_wire_encode(&s->out, type, seq, m);
  s->turn_bytes += s->out.len - mark;
  if (e) {
    /* only a reply too large for a frame; say so instead */
    log_warn("client %u/%s: reply %s not sent: %s", s->pid, s->name, coop_wire_type_name(type),
             coop_strerror(e));
    s->out.err = 0;
    union coop_msg er;
    memset(&er, 0, sizeof er);
    er.error.code = e;
    snprintf(er.error.message, sizeof er.error.message, "the reply would be too large");
    coop_wire_encode(&s->out, COOP_MSG_ERROR, seq, &er);
  }
  sess_route(s, mark);
  s->last_task.last_io = coop__now_ns(); /* a reply: the client's burst goes on (burst) */
}

/* One ERROR, its message formatted from fmt and ap. */
static void send_error(struct session *s, uint32_t seq, int code, const char *fmt, va_list ap) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.error.code = code;
  vsnprintf(m.error.message, sizeof m.error.message, fmt, ap);
  log_debug("client %u/%s: error %s: %s", s->pid, s->name, coop_err_name(code), m.error.message);
  sess_send(s, COOP_MSG_ERROR, seq, &m);
}

void sess_error(struct session *s, uint32_t seq, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  send_error(s, seq, code, fmt, ap);
  va_end(ap);
}

void sess_error_last(struct session *s, uint32_t seq, int code, const char *fmt, ...) {
  s->down_off = 1; /* by the socket: the ring's pages go with the connection (sess_ring_free) */
  va_list ap;
  va_start(ap, fmt);
  send_error(s, seq, code, fmt, ap);
  va_end(ap);
  sess_close_after_error(s);
}

static void on_io(uv_poll_t *p, int status, int events);

static void sess_want(struct session *s, int events) {
  if (s->closing || events == s->events) return;
  s->events = events;
  uv_poll_start(&s->poll, events, on_io);
}

static size_t pending(const struct session *s) { return s->out.len - s->out_off; }

/* Replies enough queued: read no more requests until they drain. */
static int out_paused(const struct session *s) { return pending(s) > SESS_OUT_PAUSE; }

int sess_behind(const struct session *s) { return pending(s) > SESS_RESULT_BEHIND; }

void sess_flush(struct session *s) {
  while (s->out_off < s->out.len) {
    size_t sent = 0;
    int e = coop_wire_send(s->fd, s->out.p + s->out_off, s->out.len - s->out_off, NULL, 0, &sent);
    s->out_off += sent;
    if (e) {
      log_info("client %u/%s: send failed (%s): closing", s->pid, s->name, coop_strerror(e));
      sess_close(s);
      return;
    }
    if (sent == 0) break; /* would block */
  }
  if (s->out_off == s->out.len) {
    s->out.len = s->out_off = 0;
    if (s->out.cap > SESS_OUT_KEEP) coop_wire_buf_free(&s->out);
  } else if (pending(s) > SESS_MAX_OUT) {
    log_warn("client %u/%s: %zu bytes of replies unread: closing", s->pid, s->name, pending(s));
    sess_close(s);
    return;
  } else if (s->out_off >= pending(s)) {
    /* The written prefix goes once it is as long as what is left: the
     * buffer then holds at most twice the pending bytes (a client reading
     * steadily behind 32 MiB grew it by 2 GB a minute), and
     * each byte moves at most once on average. */
    memmove(s->out.p, s->out.p + s->out_off, pending(s));
    s->out.len -= s->out_off;
    s->out_off = 0;
  }
  /* WRITABLE also while frames stall: on_io then answers them once the
   * replies have drained (no READABLE comes for bytes already read). */
  sess_want(s, (out_paused(s) ? 0 : UV_READABLE) |
                   (s->out_off < s->out.len || s->stalled || s->ready ? UV_WRITABLE : 0));
}

/* ---- RESULT ---- */

void sess_send_result(struct session *s, uint32_t seq, struct job *j) {
  union coop_msg *m = malloc(sizeof *m); /* the encoder reads its result only */
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  if (!m) return sess_close(s);
  struct coop_msg_result *r = &m->result;
  memset(r, 0, sizeof *r);
  r->job = j->id;
  r->state = atomic_load(&j->state);
  r->device = j->device;
  r->error = j->error;
  snprintf(r->message, sizeof r->message, "%s", j->message);
  r->t = j->t;
#define COPY(kind, name, rule) r->name = j->name;
  COOP_COUNTERS_MAP(COPY) /* coop_schema.h */
#undef COPY
  r->instances = atomic_load(&j->instances_done);
  r->misses = j->misses;
  for (uint32_t i = 0; i < j->ninst; i++) coop_wire_inst_put(&recs, &j->inst[i]);
  r->ninst = j->ninst;
  r->inst = recs.p;
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF || !(a->dir & COOP_BUF_OUT) || a->fd >= 0 || !a->data) continue;
    r->bufs[r->nbuf].arg = (uint8_t)i;
    r->bufs[r->nbuf].data = a->data;
    r->bufs[r->nbuf].len = (uint32_t)a->size;
    r->nbuf++;
  }
  /* before the send: its client may read the RESULT before send returns,
   * and a failed send may free j */
  struct trace_rec tr;
  int trace = coopd_tracing && trace_take(j, &tr);
  struct daemon *dm = s->dm;
  int64_t spin = j->device < dm->ndev ? dev_idle_spin_ns(dm->devs[j->device]) : 0;
  sess_send(s, COOP_MSG_RESULT, seq, m);
  loopspin_for(&dm->spin, spin); /* the client's next SUBMIT (loopspin.h) */
  coop_wire_buf_free(&recs);
  free(m);
  jobpool_ahead(&dm->jobpool); /* the next jobs' pages, while the client reads */
  if (trace) trace_write(&tr);
}

int sess_io_fd(const struct session *s, const struct coop_wire_arg *a, const int *fds,
               unsigned nfds) {
  if (a->fd == COOP_WIRE_FD_XFER) return s->xfer ? s->xfer->fd : -1;
  return a->fd < nfds ? fds[a->fd] : -1;
}

/* Takes the frame's descriptors it uses (sets them to -1 in fds). NULL
 * with errno set (ENOMEM; EMFILE or ENFILE: no descriptor for a range's
 * duplicate). */
struct job *sess_make_job(struct session *s, const struct coop_msg_submit *m, const struct kdef *k,
                          int *fds, uint64_t bytes) {
  struct job *j = s->spare; /* zeroed, and in the cache: session_warm_frame */
  s->spare = NULL;
  if (!j) j = jobpool_get(&s->dm->jobpool); /* zeroed, its pages touched (jobpool.h) */
  if (!j) return NULL;
  /* before any argument is filled: a failure part way frees the job, and
   * job_free closes every argument's descriptor (calloc's 0 was coopd's
   * standard input, or whatever took that number since) */
  for (unsigned i = 0; i < COOP_WIRE_MAX_ARGS; i++) j->args[i].fd = -1;
  j->id = ++s->dm->next_job;
  j->uid = s->uid;
  j->pid = s->pid;
  j->conn = s->serial;
  j->kernel_index = (int)(k - s->dm->ks->k);
  snprintf(j->kernel, sizeof j->kernel, "%s", k->name);
  j->flags = m->flags;
  j->views = (uint8_t)k->views;
  j->groups = m->groups;
  j->period_us = m->period_us;
  j->count = m->count;
  j->duration_ms = m->duration_ms;
  j->deadline_us = m->deadline_us;
  j->priority = m->priority;
  j->nargs = m->nargs;
  j->bytes = bytes;
  for (unsigned i = 0; i < m->nargs; i++) {
    const struct coop_wire_arg *a = &m->args[i];
    struct job_arg *ja = &j->args[i];
    ja->type = a->type;
    ja->bits = a->bits;
    ja->dir = a->dir;
    ja->size = a->size;
    ja->fd = -1;
    if (a->type == COOP_ARG_DEVBUF || a->type == COOP_ARG_DEVBUF_IO) {
      /* resolved and checked by sess_submit; a range moved with the job
       * keeps its descriptor: a reference to the connection's transfer
       * memfd (fdref.h: no system call a frame), else a duplicate of its
       * frame's. Ranges that name one descriptor share it (a frame's input
       * and output) */
      struct job_err e;
      struct dbuf *b = dbuf_lookup(s->dm, s->uid, a->bits, &e);
      if (a->type == COOP_ARG_DEVBUF_IO) {
        int src = sess_io_fd(s, a, fds, COOP_WIRE_MAX_FDS); /* checked by sess_submit */
        int fd = -1;
        for (unsigned p = 0; p < i && fd < 0; p++)
          if (m->args[p].type == COOP_ARG_DEVBUF_IO && j->args[p].io_owns &&
              sess_io_fd(s, &m->args[p], fds, COOP_WIRE_MAX_FDS) == src)
            fd = j->args[p].io_fd1 - 1;
        ja->io_owns = fd < 0;
        if (fd < 0 && a->fd == COOP_WIRE_FD_XFER && s->xfer) {
          fdref_hold(s->xfer);
          ja->io_ref = s->xfer;
          fd = s->xfer->fd;
        } else if (fd < 0 && src >= 0) {
          fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
        }
        if (fd < 0) {
          int err = src < 0 ? EBADF : errno;
          dbuf_job_done(s->dm, j);
          job_free(s->dm, j);
          errno = err;
          return NULL;
        }
        ja->io_fd1 = fd + 1;
        if (a->fd == COOP_WIRE_FD_XFER) { /* its identity known: no fstat in dp_copy */
          ja->io_ino = s->xfer_ino;
          ja->io_devno = s->xfer_devno;
        }
        ja->io_dir = a->dir;
        ja->io_at = a->at;
        ja->io_len = a->size;
        ja->io_off = a->off;
      }
      ja->type = COOP_ARG_BUF;
      ja->dir = 0; /* nothing is copied in or out: every copy's loop passes it by */
      ja->bits = 0;
      ja->size = b->size;
      ja->devbuf_id = b->id;
      ja->devbuf_arg = b->arg;
      ja->devbuf_gen = b->gen;
      ja->devbuf = b;
      b->users++;
      continue;
    }
    if (a->type != COOP_ARG_BUF) continue;
    if (a->fd != COOP_WIRE_FD_NONE) {
      ja->fd = fds[a->fd]; /* on_submit refused two arguments naming one */
      fds[a->fd] = -1;
    } else if (a->dir & COOP_BUF_IN) {
      ja->data = malloc(a->size);
      if (!ja->data) {
        dbuf_job_done(s->dm, j);
        job_free(s->dm, j);
        errno = ENOMEM;
        return NULL;
      }
      memcpy(ja->data, a->data, a->size);
    }
  }
  return j;
}

/* ---- requests: one row per message type a client may send ---- */

#define SESS_NEEDS_HELLO 1u /* refused (EPROTO) before the handshake */

static const struct sess_cmd {
  uint16_t type;
  sess_handler *fn;
  unsigned flags;
} cmds[] = {
    {COOP_MSG_HELLO, sess_hello, 0},
    {COOP_MSG_SUBMIT, sess_submit, SESS_NEEDS_HELLO},
    {COOP_MSG_STATUS, sess_status, SESS_NEEDS_HELLO},
    {COOP_MSG_WAIT, sess_wait, SESS_NEEDS_HELLO},
    {COOP_MSG_CANCEL, sess_cancel, SESS_NEEDS_HELLO},
    {COOP_MSG_TOP, sess_top, SESS_NEEDS_HELLO},
    {COOP_MSG_STATS, sess_stats, SESS_NEEDS_HELLO},
    {COOP_MSG_KERNELS, sess_kernels, SESS_NEEDS_HELLO},
    {COOP_MSG_SUBSCRIBE, sess_subscribe, SESS_NEEDS_HELLO},
    {COOP_MSG_BUF_CREATE, sess_buf_create, SESS_NEEDS_HELLO},
    {COOP_MSG_BUF_WRITE, sess_buf_write, SESS_NEEDS_HELLO},
    {COOP_MSG_BUF_READ, sess_buf_read, SESS_NEEDS_HELLO},
    {COOP_MSG_BUF_FREE, sess_buf_free, SESS_NEEDS_HELLO},
    {COOP_MSG_KERNEL_ADD, sess_kernel_add, SESS_NEEDS_HELLO},
    {COOP_MSG_KERNEL_REMOVE, sess_kernel_remove, SESS_NEEDS_HELLO},
    {COOP_MSG_RELOAD, sess_reload, SESS_NEEDS_HELLO},
    {COOP_MSG_MIGRATE, sess_migrate, SESS_NEEDS_HELLO},
    {COOP_MSG_RING_OPEN, sess_ring_open, SESS_NEEDS_HELLO},
    {COOP_MSG_RING_BELL, sess_ring_bell, SESS_NEEDS_HELLO},
    {COOP_MSG_XFER, sess_xfer, SESS_NEEDS_HELLO},
};

/* The row of a message type, or NULL (a reply type, or none). */
static const struct sess_cmd *find_cmd(uint16_t type) {
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (cmds[i].type == type) return &cmds[i];
  return NULL;
}

/* A frame loop's SUBMIT without descriptors, kept as it came for its dry
 * run at the connection's next frame window (sess_jobs.c,
 * session_warm_frame); after its handler, which its reply does not wait
 * for, and only while the connection's frames are expected
 * (frame_next_ns, which that handler set): other SUBMITs have no window. */
static void keep_submit(struct session *s, const struct coop_wire_hdr *h, const uint8_t *payload) {
  s->warm_len = 0;
  if (s->closing || !s->frame_next_ns || h->len > SESS_WARM_FRAME_MAX - sizeof *h) return;
  if (!s->warm_frame && !(s->warm_frame = malloc(SESS_WARM_FRAME_MAX))) return;
  memcpy(s->warm_frame, h, sizeof *h);
  memcpy(s->warm_frame + sizeof *h, payload, h->len);
  s->warm_len = (uint32_t)(sizeof *h + h->len);
}

static void on_frame(struct session *s, const struct coop_wire_hdr *h, const uint8_t *payload,
                     int *fds, unsigned nfds) {
  union coop_msg *m = malloc(sizeof *m);
  if (!m) return sess_close(s);
  const struct sess_cmd *c = find_cmd(h->type);
  int e = coop_wire_decode(h, payload, m);
  if (e == 0 && !s->hello && (!c || (c->flags & SESS_NEEDS_HELLO))) e = COOP_EPROTO;
  if (e == 0 && s->hello && h->version != COOP_WIRE_VERSION) e = COOP_EVERSION;
  if (e == 0 && h->type >= COOP_MSG_WELCOME) e = COOP_EPROTO; /* a reply type from a client */
  if (e) {
    log_warn("client %u/%s: bad %s frame (%s): closing", s->pid, s->name,
             coop_wire_type_name(h->type), coop_strerror(e));
    sess_error_last(s, h->seq, e, "bad %s frame: %s", coop_wire_type_name(h->type),
                    coop_strerror(e));
    free(m);
    return;
  }
  s->active_ms = uv_now(s->dm->loop);
  if (c) c->fn(s, h->seq, m, fds, nfds);
  free(m);
  if (h->type == COOP_MSG_SUBMIT && !nfds) keep_submit(s, h, payload);
}

/* ---- input ---- */

static void bad_header(struct session *s, int e) {
  log_warn("client %u/%s: bad frame header (%s): closing", s->pid, s->name, coop_strerror(e));
  sess_error_last(s, 0, e, "bad frame header: %s", coop_strerror(e));
}

/* A frame loop's requests come in bursts (write, submit, wait, read),
 * one a frame: the burst's start is when the next frame's work begins
 * (sess_jobs.c, expected_next). The gap that ends a burst runs from the
 * last request or reply, whichever came later: a frame's write answered
 * after a millisecond, then its SUBMIT, is one burst. */
#define SESS_BURST_GAP_NS 2000000
static void burst(struct session *s, int64_t now) {
  if (now - s->last_task.last_io > SESS_BURST_GAP_NS) s->last_task.burst_at = now;
  s->last_task.last_io = now;
}

/* May s answer one more frame or record this turn? Its user's connections
 * share SESS_USER_PER_TURN a turn, but the first of each sess_frames is
 * answered whatever the user took: none of a user's connections starves,
 * even behind the first of them in the list, which may take the share
 * (each of the others has its next request answered each turn). */
static int user_may(struct session *s) {
  struct uid_use *u = s->use;
  if (u->turn != s->dm->turn) {
    u->turn = s->dm->turn;
    u->turn_used = 0;
  }
  return !s->turn_taken || u->turn_used < SESS_USER_PER_TURN;
}

static void user_took(struct session *s) {
  s->turn_taken++;
  s->use->turn_used++;
}

/* Answers the ring's records that are due: written before the socket
 * frame the connection sent next, that is after the sock_in frames taken
 * (sring.h), at most *left of them. 1 when none due is left; 0 when it
 * stopped: the replies pending passed SESS_OUT_PAUSE (then s->stalled),
 * the connection closes, or *left or its user's share ran out (then
 * s->input_more). A ring refilled as fast as it is read (records that
 * need no reply, or whose replies the client drains) never runs dry:
 * without the bound the loop stayed here, and no other connection, timer
 * or device hand-back was served (docs/daemon.md, "The client's ring").
 * The rest waits one turn: the spin asked for polls every ring each turn
 * (sess_ring.c). */
static int sess_ring_input(struct session *s, int *left) {
  while (s->ring && !s->closing) {
    if (out_paused(s)) {
      s->stalled = 1;
      return 0;
    }
    /* without a spin, nothing would come back */
    if ((*left <= 0 || s->turn_bytes > SESS_TURN_BYTES || !user_may(s)) && s->dm->spin.ready) {
      s->input_more = 1;
      loopspin_for(&s->dm->spin, SESS_RING_MORE_NS);
      return 0;
    }
    uint8_t frame[COOP_SRING_FRAME_MAX];
    struct coop_wire_hdr h;
    int r = coop_sring_next(&s->up, s->sock_in, frame, &h);
    if (r == 0) return 1;
    if (r < 0) {
      bad_header(s, r);
      return 0;
    }
    s->down_used = 1;
    --*left;
    user_took(s);
    int64_t now = coop__now_ns();
    if (coopd_tracing) s->rx_ns = now;
    burst(s, now);
    on_frame(s, &h, frame + COOP_WIRE_HDR, NULL, 0);
  }
  return !s->closing;
}

/* Answers the whole frames rd holds (SESS_FRAMES_PER_WAKE of them at
 * most), and the ring's records before, between and after them
 * (SESS_RING_PER_TURN of those at most; SESS_USER_PER_TURN of both
 * over all the user's connections, user_may), until the replies pending pass
 * SESS_OUT_PAUSE: then s->stalled, and on_io goes on once they drain.
 * Where a bound ran out, s->input_more: the loop's next turn goes on
 * (session_poll_rings). One read of 64 KiB held 4096 STATS frames, all
 * answered before any other client's: a user's flood of them, each read's
 * replies read back, held another's STATS 251 ms at the median (5.4 s
 * beside sixteen such connections). Returns how many socket frames it answered. */
static int sess_frames(struct session *s) {
  int n = 0, ring_left = SESS_RING_PER_TURN;
  s->stalled = s->input_more = 0;
  s->turn_bytes = 0;
  s->turn_taken = 0;
  while (!s->closing) {
    if (!sess_ring_input(s, &ring_left)) break;
    if (out_paused(s)) {
      s->stalled = 1; /* perhaps none is left: on_io then finds so */
      break;
    }
    /* the spin brings the loop back */
    if ((n >= SESS_FRAMES_PER_WAKE || s->turn_bytes > SESS_TURN_BYTES || !user_may(s)) &&
        s->dm->spin.ready) {
      s->input_more = 1;
      loopspin_for(&s->dm->spin, SESS_RING_MORE_NS);
      break;
    }
    struct coop_wire_hdr h;
    const uint8_t *payload;
    int ffds[COOP_WIRE_MAX_FDS];
    unsigned nf = 0;
    int e = coop_wire_reader_next(&s->rd, &h, &payload, ffds, &nf);
    if (e < 0) bad_header(s, e);
    if (e <= 0) break;
    s->sock_in++;
    user_took(s);
    on_frame(s, &h, payload, ffds, nf);
    for (unsigned i = 0; i < nf; i++)
      fdclose_client(ffds[i], s->uid, s->pid); /* those no argument took */
    n++;
  }
  return n;
}

void sess_input(struct session *s) {
  if (s->closing || s->stalled) return;
  sess_frames(s);
  if (s->closing) sess_close(s);
}

static void sess_read(struct session *s) {
  uint8_t *buf = malloc(SESS_RECV_CHUNK);
  if (!buf) return sess_close(s);
  for (int frames = 0;
       !s->closing && !s->stalled && !s->input_more && frames < SESS_FRAMES_PER_WAKE;) {
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nfds = COOP_WIRE_MAX_FDS;
    /* while a close of this user's waits, its descriptors are not taken:
     * the kernel drops them unopened (fdclose.h) */
    long n =
        coop_wire_recv(s->fd, buf, SESS_RECV_CHUNK, fdclose_pending(s->uid) ? NULL : fds, &nfds);
    if (n == COOP_ETIMEDOUT) break; /* drained */
    int64_t now = coop__now_ns();
    if (coopd_tracing) s->rx_ns = now; /* the frames it completes were read now */
    if (n > 0) burst(s, now);
    if (n <= 0) {
      if (n < 0) log_info("client %u/%s: receive failed: closing", s->pid, s->name);
      s->closing = 1;
      break;
    }
    int e = coop_wire_reader_feed(&s->rd, buf, (size_t)n, fds, nfds);
    if (e < 0) {
      bad_header(s, e);
      break;
    }
    /* every whole frame buffered now: none may wait for more bytes (but
     * for the replies to drain: sess_frames) */
    frames += sess_frames(s);
  }
  free(buf);
  if (s->closing) sess_close(s);
}

static void on_io(uv_poll_t *p, int status, int events) {
  struct session *s = p->data;
  if (status < 0) return sess_close(s);
  if (events & UV_WRITABLE) sess_flush(s);
  if (!s->closing && s->ready) sess_results_ready(s);
  if (!s->closing && s->stalled && !out_paused(s)) {
    sess_frames(s);
    if (s->closing) return sess_close(s);
    sess_flush(s); /* the events wanted, now that it may no longer stall */
  }
  if (!s->closing && !s->stalled && !s->input_more && !out_paused(s) && (events & UV_READABLE))
    sess_read(s);
}

/* ---- life cycle ---- */

static void on_closed(uv_handle_t *h) {
  struct session *s = h->data;
  if (--s->handles) return;
  close(s->fd);
  sess_xfer_drop(s);
  if (s->spare) jobpool_put(&s->dm->jobpool, s->spare);
  free(s->warm_frame);
  sess_ring_free(s);
  coop_wire_reader_free(&s->rd);
  coop_wire_buf_free(&s->out);
  free(s);
}

void sess_close(struct session *s) {
  if (s->closing == 3) return;
  if (s->closing == 2 && s->out_off < s->out.len) { /* best effort: the last ERROR */
    size_t sent = 0;
    coop_wire_send(s->fd, s->out.p + s->out_off, s->out.len - s->out_off, NULL, 0, &sent);
  }
  s->closing = 3;
  struct daemon *dm = s->dm;
  for (struct session **p = &dm->sessions; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      dm->nsessions--;
      break;
    }
  while (s->waiters) {
    struct waiter *w = s->waiters;
    sess_waiter_remove(s, w); /* out of its job's list too */
    sess_waiter_free(w);
  }
  while (s->ready) {
    struct waiter *w = s->ready;
    s->ready = w->next;
    job_unpin(dm, w->j);
    sess_waiter_free(w);
  }
  s->ready_last = NULL;
  /* Its jobs: detached ones stay (any connection of the uid may wait for
   * them; finished ones are now kept, within the user's caps); others, if
   * running, are cancelled (nobody will read them) and freed when handed
   * back; finished ones are freed now. */
  unsigned kept = 0; /* finished detached jobs that become kept */
  while (s->jobs) {
    struct job *j = s->jobs;
    sess_disown(s, j);
    if (j->flags & COOP_SUBMIT_DETACHED)
      kept += j->finished;
    else if (j->finished)
      job_drop(dm, j);
    else
      dev_cancel(dm->devs[j->device], j);
  }
  /* Jobs waited for before the disconnect are kept too, so the caps hold
   * for them (2560 kept, 664 MB, with no client, before they counted). The caps
   * are applied once, after counting them all. */
  if (kept) jobs_keep(dm, s->use, kept);
  sess_bufs_closed(s);
  reload_forget(dm, s);        /* a KERNEL_ADD's answer goes to nobody */
  loopspin_drop(&dm->spin, s); /* its next frame's window: none comes */
  s->use->conns--;
  uid_put(dm, s->use);
  if (s->ev_dropped)
    log_info("client %u/%s: %llu live events not sent: it was behind with its replies", s->pid,
             s->name, (unsigned long long)s->ev_dropped);
  log_debug("client %u/%s disconnected", s->pid, s->name);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_closed);
  uv_close((uv_handle_t *)&s->hello_timer, on_closed);
}

static void on_hello_timer(uv_timer_t *t) {
  struct session *s = t->data;
  if (s->hello || s->closing) return;
  /* Timers run before the poll in a loop iteration: after a slow one, a
   * HELLO that came in time may still wait unread. It counts. */
  sess_read(s);
  if (s->hello || s->closing) return;
  /* debug: a client could write a line every hello_timeout_ms per socket */
  log_debug("client %u (uid %u): no HELLO within %u ms: closing", s->pid, s->uid,
            s->dm->cfg.hello_timeout_ms);
  sess_error_last(s, 0, COOP_ETIMEDOUT,
                  "no HELLO within %u ms of connecting ([server] hello_timeout_ms): closing",
                  s->dm->cfg.hello_timeout_ms);
  sess_close(s);
}

void session_refuse(int fd, int code, const char *message) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.error.code = code;
  snprintf(m.error.message, sizeof m.error.message, "%s", message);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  size_t sent = 0;
  if (coop_wire_encode(&b, COOP_MSG_ERROR, 0, &m) == 0)
    coop_wire_send(fd, b.p, b.len, NULL, 0, &sent); /* non-blocking: a new socket has room */
  coop_wire_buf_free(&b);
  close(fd);
}

/* A refusal's log line: the first, then at most one per SESS_LOG_MS with
 * how many were refused meanwhile (a client retrying in a loop would
 * otherwise write one line each time). */
static void log_refusal(struct daemon *dm, uint32_t uid, const char *why) {
  static uint64_t last_ms, since;
  uint64_t now = uv_now(dm->loop) + 1;
  since++;
  if (last_ms && now - last_ms < SESS_LOG_MS) return;
  log_warn("refusing a client of uid %u: %s (%llu refused since the last such line)", uid, why,
           (unsigned long long)since);
  last_ms = now;
  since = 0;
}

/* How much closing s would cost its user, lowest first: no HELLO yet;
 * nothing pending (no job in flight on it, no WAIT, no subscription); only
 * WAITs or a subscription (a detached job runs on without them); jobs in
 * flight, which the close cancels. */
static int evict_cost(const struct session *s) {
  if (!s->hello) return 0;
  if (s->inflight) return 3;
  return s->nwaiters || s->sub_mask ? 2 : 1;
}

/* max_clients is reached and a connection of a user holding `have` comes.
 * The user holding the most connections gives one up if it holds at least
 * two more (so that the two do not take turns): the one that would cost it
 * least, the one quiet longest among those. Without this, four users with
 * max_clients_per_uid each filled max_clients and locked everyone else out,
 * root included (docs/daemon.md, "Connections"). NULL: nobody holds more. */
static struct session *evict_pick(struct daemon *dm, unsigned have) {
  unsigned most = 0;
  for (struct uid_use *u = dm->uids; u; u = u->next)
    if (u->conns > most) most = u->conns;
  if (most < have + 2) return NULL;
  struct session *pick = NULL;
  /* newest first: on a tie in time, the older connection goes */
  for (struct session *s = dm->sessions; s; s = s->next) {
    if (s->use->conns != most || s->closing) continue;
    int c = pick ? evict_cost(s) - evict_cost(pick) : -1;
    if (c < 0 || (c == 0 && s->active_ms <= pick->active_ms)) pick = s;
  }
  return pick;
}

/* Closes s to make room for a connection of uid (max_clients reached), with
 * an ERROR that says why; logged at most once per SESS_LOG_MS. */
static void evict(struct daemon *dm, struct session *s, uint32_t uid) {
  static uint64_t last_ms, since;
  uint64_t now = uv_now(dm->loop) + 1;
  since++;
  if (!last_ms || now - last_ms >= SESS_LOG_MS) {
    log_warn(
        "max_clients (%u) reached: closing connection %u/%s of uid %u, which holds %u, "
        "for one of uid %u (%llu closed so since the last such line)",
        dm->cfg.max_clients, s->pid, s->name, s->uid, s->use->conns, uid,
        (unsigned long long)since);
    last_ms = now;
    since = 0;
  }
  sess_error_last(s, 0, COOP_ELIMIT,
                  "closed to make room for another user: coopd serves at most %u connections "
                  "([server] max_clients) and your uid %u held %u of them, the most of any user",
                  dm->cfg.max_clients, s->uid, s->use->conns);
  sess_close(s);
}

/* The wire reader's close_fd hook: the descriptors of a frame it drops. */
static void close_client_fd(int fd, void *arg) {
  struct session *s = arg;
  fdclose_client(fd, s->uid, s->pid);
}

void session_accept(struct daemon *dm, int fd) {
  if (dm->stopping) {
    log_warn("refusing a client: shutting down");
    close(fd);
    return;
  }
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
    log_warn("SO_PEERCRED: %s: refusing the client", strerror(errno));
    close(fd);
    return;
  }
  /* a subordinate id is its range's user (subids.h) */
  cr.uid = subids_user(&dm->subids, cr.uid);
  struct uid_use *u = uid_find(dm, cr.uid);
  unsigned have = u ? u->conns : 0;
  /* Root too: its cap is its own, and it counts no one else's (64 idle
   * sockets of one uid once locked everyone out). */
  if (have >= dm->cfg.max_clients_per_uid) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "at most %u connections per user ([limits] max_clients_per_uid); close one first",
             dm->cfg.max_clients_per_uid);
    log_refusal(dm, cr.uid, "max_clients_per_uid reached");
    session_refuse(fd, COOP_ELIMIT, msg);
    return;
  }
  if (dm->nsessions >= dm->cfg.max_clients) {
    struct session *victim = evict_pick(dm, have);
    if (!victim) {
      log_warn("refusing a client: max_clients reached");
      close(fd);
      return;
    }
    evict(dm, victim, cr.uid);
  }
  u = uid_get(dm, cr.uid);
  if (!u) {
    session_refuse(fd, COOP_ENOMEM, "coopd is out of memory");
    return;
  }
  struct session *s = calloc(1, sizeof *s);
  if (!s) {
    uid_put(dm, u);
    session_refuse(fd, COOP_ENOMEM, "coopd is out of memory");
    return;
  }
  s->dm = dm;
  s->use = u;
  s->jobs_tail = &s->jobs;
  u->conns++;
  s->fd = fd;
  s->uid = cr.uid;
  s->pid = (uint32_t)cr.pid;
  s->serial = ++dm->next_conn;
  s->active_ms = uv_now(dm->loop);
  snprintf(s->name, sizeof s->name, "?");
  coop_wire_reader_init(&s->rd);
  s->rd.close_fd = close_client_fd; /* a FUSE file's close may wait (fdclose.h) */
  s->rd.close_arg = s;
  coop_wire_buf_init(&s->out);
  uv_poll_init(dm->loop, &s->poll, fd);
  s->poll.data = s;
  uv_timer_init(dm->loop, &s->hello_timer);
  s->hello_timer.data = s;
  s->handles = 2;
  /* From now, not from the loop's cached time: after a slow iteration (a
   * reload, a device opening) that time is old, and the timer would fire
   * before the client had a chance to send its HELLO (daemon_systemd saw
   * a connection closed at once after a SIGHUP). */
  uv_update_time(dm->loop);
  if (dm->cfg.hello_timeout_ms)
    uv_timer_start(&s->hello_timer, on_hello_timer, dm->cfg.hello_timeout_ms, 0);
  s->next = dm->sessions;
  dm->sessions = s;
  dm->nsessions++;
  sess_want(s, UV_READABLE);
}

/* What s has queued, written until deadline (ms, the loop's clock): poll
 * for room while the client reads. A RESULT larger than the socket's
 * buffer (256 KiB inline) queued at the stop went in one send of what
 * fitted: the client read part of a frame, then EOF. The deadline is all
 * connections' together, so clients that read nothing hold the exit up
 * for SESS_STOP_FLUSH_MS in all. */
static void flush_until(struct session *s, uint64_t deadline) {
  while (s->out_off < s->out.len) {
    size_t sent = 0;
    int e = coop_wire_send(s->fd, s->out.p + s->out_off, s->out.len - s->out_off, NULL, 0, &sent);
    s->out_off += sent;
    if (e || s->out_off == s->out.len) return;
    uv_update_time(s->dm->loop);
    uint64_t now = uv_now(s->dm->loop);
    if (sent == 0 && now >= deadline) return;
    struct pollfd p = {.fd = s->fd, .events = POLLOUT};
    if (sent == 0 && poll(&p, 1, (int)(deadline - now)) <= 0) return;
  }
}

/* The RESULTs still to build (s->ready), each once the replies before it
 * are written, until the stop's deadline. */
static void results_until(struct session *s, uint64_t deadline) {
  while (s->ready && !s->closing) {
    flush_until(s, deadline);
    uv_update_time(s->dm->loop);
    if (sess_behind(s) || uv_now(s->dm->loop) >= deadline) return;
    sess_results_ready(s);
  }
}

void session_shutdown_all(struct daemon *dm) {
  uv_update_time(dm->loop);
  uint64_t deadline = uv_now(dm->loop) + SESS_STOP_FLUSH_MS;
  while (dm->sessions) {
    struct session *s = dm->sessions;
    results_until(s, deadline);
    if (s->closing == 3) continue; /* a failed send closed it: off the list */
    sess_error_last(s, 0, COOP_ESHUTDOWN, "coopd is shutting down");
    flush_until(s, deadline);
    sess_close(s);
  }
}
