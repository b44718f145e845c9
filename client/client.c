/*
 * client.c: a libcoop connection: socket path, connect and handshake, and
 * the engine that sends requests and hands replies and events out.
 *
 * Several threads may use one connection. Each request registers a waiter
 * under its sequence number before it is sent. Whichever waiting thread
 * finds nobody receiving takes the reader role: it receives without the
 * lock, then delivers each complete frame to the waiter of its seq (replies
 * nobody waits for any more, e.g. after a timeout, are dropped), queues
 * EVENTs, and wakes the others. Events are dispatched outside the lock, one
 * thread at a time, so the callback may itself call libcoop.
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "coop_copy.h"
#include "coop_internal.h"

#define RECV_CHUNK 65536u
#define DEFAULT_TIMEOUT_MS 30000
/* The user coopd runs as when installed as a service (conf/coop.sysusers,
 * conf/coopd.service's User=): the server libcoop trusts besides root and
 * the caller, unless COOP_SERVER_USER names another. */
#ifndef COOP_SERVICE_USER
#define COOP_SERVICE_USER "coop"
#endif

struct coop_waiter {
  struct coop_waiter *next;
  uint32_t seq;
  struct coop_frame *got;
};

/* Per thread, so that concurrent calls do not overwrite each other's. */
static _Thread_local char tls_msg[COOP_WIRE_TEXT_MAX];

int coop__fail(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
  va_end(ap);
  return err;
}

void coop__clear_msg(void) { tls_msg[0] = '\0'; }

const char *coop_errmsg(const coop_conn *c) {
  (void)c;
  return tls_msg;
}

/* ---- time ---- */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An absolute deadline in ms, or -1 for none. */
static int64_t deadline_after(int timeout_ms) {
  return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

static int ms_left(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t r = deadline - now_ms();
  return r <= 0 ? 0 : r > INT_MAX ? INT_MAX : (int)r;
}

static void cond_wait_until(coop_conn *c, int64_t deadline) {
  if (deadline < 0) {
    pthread_cond_wait(&c->cv, &c->mu);
    return;
  }
  struct timespec ts = {.tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000};
  pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

/* ---- frames ---- */

void coop__frame_free(struct coop_frame *f) {
  while (f) {
    struct coop_frame *n = f->next;
    if (f->fd >= 0) close(f->fd);
    free(f->payload);
    free(f);
    f = n;
  }
}

/* The connection is unusable from now on; the first cause is kept. */
static void conn_kill(coop_conn *c, int err, const char *msg) {
  if (c->dead) return;
  c->dead = err;
  snprintf(c->dead_msg, sizeof c->dead_msg, "%s", msg);
}

/* A frame of its own: header h, a copy of its payload, descriptor fd
 * (-1: none; closed on failure). NULL when out of memory. */
static struct coop_frame *frame_new(const struct coop_wire_hdr *h, const uint8_t *payload, int fd) {
  struct coop_frame *f = calloc(1, sizeof *f);
  uint8_t *copy = malloc(h->len ? h->len : 1);
  if (!f || !copy) {
    free(f);
    free(copy);
    if (fd >= 0) close(fd);
    return NULL;
  }
  memcpy(copy, payload, h->len);
  f->h = *h;
  f->payload = copy;
  f->fd = fd;
  return f;
}

/* Whether coopd let the ring go: it frees the ring's pages as it closes
 * the connection, and the client's mapping then reads zeros, its magic
 * too (a close's ERROR comes by the socket). The ring is then unmapped and
 * every frame read from the socket; a ring broken otherwise is EPROTO.
 * Called in the reader's role, the only one that reads the down ring; a
 * sender reads c->ring under send_mu, so it is let go under that lock. */
static int ring_let_go(coop_conn *c) {
  if (*(volatile const uint32_t *)&c->ring->magic != 0) return 0;
  pthread_mutex_lock(&c->send_mu);
  struct coop_sring *r = c->ring;
  c->ring = NULL;
  pthread_mutex_unlock(&c->send_mu);
  coop_sring_unmap(r);
  return 1;
}

/* Appends at *tail the ring's records that are due: written before the
 * socket frame that comes next (protocol/sring.h). Moves *tail on. */
static int take_ring(coop_conn *c, struct coop_frame ***tail) {
  uint8_t buf[COOP_SRING_FRAME_MAX];
  struct coop_wire_hdr h;
  int r;
  while (c->ring && (r = coop_sring_next(&c->down, c->sock_in, buf, &h)) != 0) {
    if (r < 0 && ring_let_go(c)) return 0;
    if (r < 0) return COOP_EPROTO;
    struct coop_frame *f = frame_new(&h, buf + COOP_WIRE_HDR, -1);
    if (!f) return COOP_ENOMEM; /* the record is gone: the connection dies of it */
    **tail = f;
    *tail = &f->next;
  }
  return 0;
}

/* Moves the complete frames out of the reader into *out (copies: the
 * reader's buffer is reused), each after the ring's records written
 * before it. The daemon sends a descriptor only with RING_OPEN's OK: the
 * first kept with its frame, any other closed. */
static int take_frames(coop_conn *c, struct coop_frame **out) {
  for (;;) {
    int e = take_ring(c, &out);
    if (e) return e;
    struct coop_wire_hdr h;
    const uint8_t *p = NULL;
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nfds = 0;
    int r = coop_wire_reader_next(&c->rd, &h, &p, fds, &nfds);
    for (unsigned i = 1; i < nfds; i++) close(fds[i]);
    if (r <= 0) {
      if (nfds) close(fds[0]);
      return r;
    }
    c->sock_in++;
    struct coop_frame *f = frame_new(&h, p, nfds ? fds[0] : -1);
    if (!f) return COOP_ENOMEM;
    *out = f;
    out = &f->next;
  }
}

/* CLOCK_MONOTONIC in ns (libcoop.a carries no coop_util). */
static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins up to spin_us (at most wait_ms) for the socket or the ring:
 * the socket's bytes in *k (COOP_ETIMEDOUT: none), the ring's records at
 * *tail. The ring's reader is awake only while it spins. */
static int spin_for(coop_conn *c, unsigned spin, int *wait_ms, long *k, int *fds, unsigned *nfds,
                    struct coop_frame ***tail) {
  int64_t t0 = mono_ns(), end = t0 + (int64_t)spin * 1000;
  if (*wait_ms > 0 && (int64_t)*wait_ms * 1000000 < end - t0)
    end = t0 + (int64_t)*wait_ms * 1000000;
  struct coop_frame **start = *tail;
  int e = 0;
  if (c->ring) coop_sring_awake(&c->down);
  /* with a ring, the socket every 16th look: a recvmsg costs a microsecond,
   * a look at the ring a load, and replies come by the ring but for the
   * long ones (the device process's own spin: docs/daemon.md, "Spinning") */
  for (unsigned look = 0;; look++) {
    *k = COOP_ETIMEDOUT;
    if ((!c->ring || look % 16 == 0) &&
        (*k = coop_wire_try_recv(c->fd, c->rbuf, RECV_CHUNK, fds, nfds)) != COOP_ETIMEDOUT)
      break;
    if ((e = take_ring(c, tail)) || *start) break;
    if (mono_ns() >= end) break;
  }
  /* asleep again, then a last look (the Dekker pair of sring.h) */
  if (c->ring && coop_sring_sleep(&c->down) && !e && !*start) e = take_ring(c, tail);
  if (*k == COOP_ETIMEDOUT && *wait_ms > 0) *wait_ms -= (int)((mono_ns() - t0) / 1000000);
  if (*wait_ms < 0) *wait_ms = 0;
  return e;
}

/* Receives once, waiting up to wait_ms for something to arrive, and returns
 * the frames completed by it in *out, with the ring's records in their
 * order. Called by the reader, unlocked. */
static int pump(coop_conn *c, int wait_ms, struct coop_frame **out) {
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  int fds[COOP_WIRE_MAX_FDS];
  unsigned nfds = 0;
  long k = COOP_ETIMEDOUT;
  struct coop_frame **tail = out;
  int e = take_ring(c, &tail); /* what came while nobody read */
  if (e || *out) return e;
  unsigned spin = atomic_load_explicit(&c->spin_us, memory_order_relaxed);
  if (spin && wait_ms != 0) { /* coop_set_spin: read without waiting before sleeping */
    e = spin_for(c, spin, &wait_ms, &k, fds, &nfds, &tail);
    if (e || (*out && k == COOP_ETIMEDOUT)) return e;
  }
  if (k == COOP_ETIMEDOUT && !*out) {
    /* asleep (sring.h): a record written from now on comes with a RING_WAKE */
    int n = poll(&p, 1, wait_ms);
    if (n < 0) return errno == EINTR ? 0 : COOP_EIO;
    if (n == 0) return take_ring(c, &tail);
    k = coop_wire_recv(c->fd, c->rbuf, RECV_CHUNK, fds, &nfds);
  }
  if (k == COOP_ETIMEDOUT) return 0; /* nothing after all */
  if (k == 0) return COOP_ECLOSED;
  if (k < 0) return (int)k;
  e = coop_wire_reader_feed(&c->rd, c->rbuf, (size_t)k, fds, nfds);
  if (e) return e;
  return take_frames(c, tail);
}

static struct coop_waiter *find_waiter(coop_conn *c, uint32_t seq) {
  for (struct coop_waiter *w = c->waiters; w; w = w->next)
    if (w->seq == seq) return w;
  return NULL;
}

/* A seq-0 ERROR speaks for the whole connection (e.g. shutting down). */
static void conn_error_frame(coop_conn *c, struct coop_frame *f) {
  union coop_msg m;
  if (coop_wire_decode(&f->h, f->payload, &m) == 0 && m.error.code < 0)
    conn_kill(c, m.error.code, m.error.message);
  else
    conn_kill(c, COOP_EPROTO, "malformed ERROR frame from the daemon");
}

static void queue_event(coop_conn *c, struct coop_frame *f) {
  if (!c->ev_fn) {
    coop__frame_free(f);
    return;
  }
  if (c->ev_tail)
    c->ev_tail->next = f;
  else
    c->ev_head = f;
  c->ev_tail = f;
}

/* Hands each frame to its waiter or the event queue (locked). */
static void deliver(coop_conn *c, struct coop_frame *f) {
  while (f) {
    struct coop_frame *next = f->next;
    f->next = NULL;
    struct coop_waiter *w = f->h.seq ? find_waiter(c, f->h.seq) : NULL;
    if (f->h.version != COOP_WIRE_VERSION) {
      char msg[96];
      snprintf(msg, sizeof msg, "the daemon speaks protocol version %u; libcoop speaks %u",
               f->h.version, COOP_WIRE_VERSION);
      conn_kill(c, COOP_EVERSION, msg);
      coop__frame_free(f);
    } else if (f->h.type == COOP_MSG_EVENT) {
      queue_event(c, f);
    } else if (f->h.seq == 0 && f->h.type == COOP_MSG_ERROR) {
      conn_error_frame(c, f);
      coop__frame_free(f);
    } else if (w && !w->got) {
      w->got = f;
    } else {
      coop__frame_free(f); /* its request gave up waiting */
    }
    f = next;
  }
}

static int decode_event(const struct coop_frame *f, struct coop_event *ev) {
  union coop_msg m;
  if (coop_wire_decode(&f->h, f->payload, &m)) return -1;
  struct coop_event *d = ev;
  const struct coop_msg_event *s = &m.event;
  memset(d, 0, sizeof *d);
  COOP_SCHEMA_EVENT(COOP__COPY)
  return 0;
}

/* Calls the callback for queued events, unlocked, unless another thread
 * already is (it will take these too). Returns how many. */
static int dispatch_events(coop_conn *c) {
  int n = 0;
  while (c->ev_head && !c->dispatching) {
    struct coop_frame *f = c->ev_head;
    c->ev_head = f->next;
    if (!c->ev_head) c->ev_tail = NULL;
    f->next = NULL;
    coop_event_fn fn = c->ev_fn;
    void *user = c->ev_user;
    c->dispatching = 1;
    pthread_mutex_unlock(&c->mu);
    struct coop_event ev;
    if (fn && decode_event(f, &ev) == 0) {
      fn(&ev, user);
      n++;
    }
    coop__frame_free(f);
    pthread_mutex_lock(&c->mu);
    c->dispatching = 0;
  }
  return n;
}

/* Takes the reader role once (locked on entry and exit). */
static void read_once(coop_conn *c, int wait_ms) {
  c->reading = 1;
  pthread_mutex_unlock(&c->mu);
  struct coop_frame *got = NULL;
  int e = pump(c, wait_ms, &got);
  pthread_mutex_lock(&c->mu);
  c->reading = 0;
  deliver(c, got);
  if (e) conn_kill(c, e, e == COOP_ECLOSED ? "" : "receiving from the daemon failed");
  pthread_cond_broadcast(&c->cv);
}

/* Waits (locked) until w has its reply (w NULL: until an event has been
 * dispatched), the connection dies, or the deadline passes. */
static int await(coop_conn *c, struct coop_waiter *w, int64_t deadline, int *dispatched) {
  for (;;) {
    int n = dispatch_events(c);
    *dispatched += n;
    if (w ? w->got != NULL : *dispatched > 0) return 0;
    if (c->dead) return c->dead;
    int left = ms_left(deadline);
    if (left == 0) return COOP_ETIMEDOUT;
    if (c->reading)
      cond_wait_until(c, deadline);
    else
      read_once(c, left);
  }
}

/* ---- requests ---- */

static void remove_waiter(coop_conn *c, struct coop_waiter *w) {
  for (struct coop_waiter **p = &c->waiters; *p; p = &(*p)->next)
    if (*p == w) {
      *p = w->next;
      return;
    }
}

/* Decodes a reply: the wanted type, or an ERROR's code and message. */
static int take_reply(const struct coop_frame *f, uint16_t want, union coop_msg *m) {
  int e = coop_wire_decode(&f->h, f->payload, m);
  if (e)
    return coop__fail(COOP_EPROTO, "malformed %s frame from the daemon: %s",
                      coop_wire_type_name(f->h.type), coop_strerror(e));
  if (f->h.type == COOP_MSG_ERROR)
    return coop__fail(m->error.code < 0 ? m->error.code : COOP_EPROTO, "%s", m->error.message);
  if (f->h.type != want)
    return coop__fail(COOP_EPROTO, "the daemon answered %s with %s", coop_wire_type_name(want),
                      coop_wire_type_name(f->h.type));
  return 0;
}

/* By the ring when it has one, the frame carries no descriptor and fits
 * (then a RING_BELL if coopd may be asleep), else by the socket; the
 * socket's frames are counted (protocol/sring.h). */
static int send_frame(coop_conn *c, const struct coop_wire_buf *b, const int *fds, unsigned nfds) {
  pthread_mutex_lock(&c->send_mu);
  int r = c->ring && !nfds ? coop_sring_put(&c->up, b->p, (uint32_t)b->len, c->sock_out) : 0;
  int e = r < 0 ? r : 0;
  if (r == 1 && coop_sring_reader_asleep(&c->up)) {
    e = coop_wire_send(c->fd, c->bell, sizeof c->bell, NULL, 0, NULL);
    c->sock_out++;
  } else if (r == 0) {
    e = coop_wire_send(c->fd, b->p, b->len, fds, nfds, NULL);
    c->sock_out++;
  }
  pthread_mutex_unlock(&c->send_mu);
  return e;
}

/* Why a request got no reply (locked): the message goes to this thread. */
static int no_reply(coop_conn *c, int e, uint16_t type, int timeout_ms) {
  if (e == COOP_ETIMEDOUT)
    return coop__fail(e, "no reply to %s within %d ms", coop_wire_type_name(type), timeout_ms);
  return coop__fail(e, "%s", c->dead == e ? c->dead_msg : "");
}

static uint32_t next_seq(coop_conn *c) {
  uint32_t s = c->next_seq++;
  if (c->next_seq == 0) c->next_seq = 1; /* seq 0 is the daemon's own */
  return s;
}

/* A SUBMIT that carries no buffer's bytes in its frame (each buffer by
 * descriptor or on the device): only then do its fields say all it holds. */
static int submit_keepable(const struct coop_msg_submit *s) {
  for (unsigned i = 0; i < s->nargs && i < COOP_WIRE_MAX_ARGS; i++)
    if (s->args[i].data_len) return 0;
  return 1;
}

/* Encodes a request into b. A frame loop submits one description every
 * frame, each time with cold caches, where the encoder and its check (the
 * decoder run on its output) took 7-9 us p50 of a 2-core VM at 60 fps
 * (bench/RESULTS.md, "The SUBMIT's frame kept"); so the last SUBMIT's
 * frame is kept beside its message, and a SUBMIT equal to that message in
 * every byte the encoder reads is that frame with the new seq, 3-4 us:
 * the encoding is a function of those bytes alone. coop_submit zeroes the
 * message before it fills it; padding that differed would only make a
 * miss. A message with inline bytes is never kept (its pointer says
 * nothing of the bytes). Called with mu held (docs/daemon.md, "The
 * client's ring"). */
int coop__encode_request(coop_conn *c, struct coop_wire_buf *b, uint16_t type, uint32_t seq,
                         const union coop_msg *m) {
  if (type != COOP_MSG_SUBMIT) return coop_wire_encode(b, type, seq, m);
  const struct coop_msg_submit *s = &m->submit;
  /* the fields up to its last argument: all the encoder reads (the kept
   * message's count is among them, so its tail is never read) */
  size_t used = offsetof(struct coop_msg_submit, args) +
                (s->nargs < COOP_WIRE_MAX_ARGS ? s->nargs : COOP_WIRE_MAX_ARGS) * sizeof s->args[0];
  if (c->sub_frame.len && !memcmp(s, c->sub_msg, used)) {
    b->p = malloc(c->sub_frame.len);
    if (!b->p) return COOP_ENOMEM;
    memcpy(b->p, c->sub_frame.p, c->sub_frame.len);
    b->len = b->cap = c->sub_frame.len;
    coop_wire_set_seq(b->p, seq);
    return 0;
  }
  int e = coop_wire_encode(b, type, seq, m);
  if (e || !submit_keepable(s)) return e;
  c->sub_frame.len = 0; /* nothing kept until both are */
  if (!c->sub_msg) c->sub_msg = calloc(1, sizeof *c->sub_msg);
  uint8_t *f = c->sub_msg ? realloc(c->sub_frame.p, b->len) : NULL;
  if (!f) return 0; /* sent all the same, only not kept */
  memcpy(f, b->p, b->len);
  memcpy(c->sub_msg, s, used);
  c->sub_frame.p = f;
  c->sub_frame.len = c->sub_frame.cap = b->len;
  return 0;
}

int coop__request(coop_conn *c, uint16_t type, const union coop_msg *m, const int *fds,
                  unsigned nfds, int timeout_ms, uint16_t want, union coop_msg *reply,
                  struct coop_frame **frame) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  struct coop_waiter w = {0};
  pthread_mutex_lock(&c->mu);
  w.seq = next_seq(c);
  int e = c->dead, bad = 0;
  if (!e) bad = (e = coop__encode_request(c, &b, type, w.seq, m)) != 0;
  if (bad)
    coop__fail(e, "cannot encode the %s request: %s", coop_wire_type_name(type), coop_strerror(e));
  else if (!e) {
    w.next = c->waiters; /* before sending: the reply may come at once */
    c->waiters = &w;
    pthread_mutex_unlock(&c->mu);
    e = send_frame(c, &b, fds, nfds);
    pthread_mutex_lock(&c->mu);
    /* A daemon that closed says why first (a seq-0 ERROR: a connection
     * refused at max_clients_per_uid, one evicted, a shutdown): read it,
     * where a refused connect whose HELLO met the close was "the daemon
     * closed the connection" and a guess */
    if (e == COOP_ECLOSED && !c->reading) read_once(c, 0);
    if (e) conn_kill(c, e, "sending to the daemon failed");
    if (e) e = c->dead;
    int dispatched = 0;
    if (!e) e = await(c, &w, deadline_after(timeout_ms), &dispatched);
    remove_waiter(c, &w);
    if (w.got) e = 0;
  }
  if (e && !bad) no_reply(c, e, type, timeout_ms);
  pthread_mutex_unlock(&c->mu);
  coop_wire_buf_free(&b);
  if (e) return e;
  e = take_reply(w.got, want, reply);
  if (e)
    coop__frame_free(w.got);
  else
    *frame = w.got;
  return e;
}

/* ---- connection ---- */

/* Whether a user's own coopd has its socket in dir ($XDG_RUNTIME_DIR):
 * else the system's is meant. A login that sets XDG_RUNTIME_DIR
 * (pam_systemd) sent every user of the system coopd to a path where
 * nothing listened ("cannot connect to /run/user/UID/coop.sock"). */
static int own_socket_at(const char *dir) {
  char p[PATH_MAX];
  struct stat st;
  int n = snprintf(p, sizeof p, "%s/coop.sock", dir);
  return n > 0 && (size_t)n < sizeof p && lstat(p, &st) == 0 && S_ISSOCK(st.st_mode);
}

int coop_socket_path(const char *path, char *buf, size_t len) {
  const char *env = getenv("COOP_SOCKET"), *xdg = getenv("XDG_RUNTIME_DIR");
  int n;
  if (path && *path)
    n = snprintf(buf, len, "%s", path);
  else if (env && *env)
    n = snprintf(buf, len, "%s", env);
  else if (geteuid() != 0 && xdg && *xdg && own_socket_at(xdg))
    n = snprintf(buf, len, "%s/coop.sock", xdg);
  else
    n = snprintf(buf, len, "/run/coop/coop.sock");
  return n < 0 || (size_t)n >= len ? COOP_EINVAL : 0;
}

static coop_conn *conn_new(void) {
  coop_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->fd = -1;
  c->xfd = -1;
  pthread_mutex_init(&c->xreg_mu, NULL);
  c->rbuf = malloc(RECV_CHUNK);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines come from it */
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->send_mu, NULL);
  coop_wire_reader_init(&c->rd);
  c->next_seq = 1;
  c->timeout_ms = DEFAULT_TIMEOUT_MS;
  const char *spin = getenv("COOP_SPIN_US"); /* coop_set_spin; a bad value is none */
  if (spin && *spin >= '0' && *spin <= '9') coop_set_spin(c, (unsigned)strtoul(spin, NULL, 10));
  if (!c->rbuf) {
    coop_disconnect(c);
    return NULL;
  }
  return c;
}

/* The name of group gid into name, or its number. */
static void group_name(gid_t gid, char *name, size_t len) {
  char buf[4096];
  struct group g, *gp = NULL;
  if (getgrgid_r(gid, &g, buf, sizeof buf, &gp) == 0 && gp)
    snprintf(name, len, "%s", gp->gr_name);
  else
    snprintf(name, len, "%u", (unsigned)gid);
}

/* The first directory of path, from the top, that this user may not
 * search (connect(2) checks with the effective ids), into dir: 0, or -1
 * when each one lets the user through. */
static int first_closed_dir(const char *path, char *dir, size_t len) {
  if (snprintf(dir, len, "%s", path) >= (int)len) return -1;
  for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    int closed = faccessat(AT_FDCWD, dir, X_OK, AT_EACCESS) < 0 && errno == EACCES;
    if (closed) return 0;
    *s = '/';
  }
  return -1;
}

/* ECONN for a connect(2) refused by a directory above the socket, worded
 * as the socket's own refusal: under systemd /run/coop is mode 0750,
 * group coop (RuntimeDirectoryMode), so a user outside group coop stops
 * there, and is told which group lets them through. */
static int dir_refused(const char *path, int err) {
  char dir[PATH_MAX], name[64];
  struct stat st;
  if (first_closed_dir(path, dir, sizeof dir) < 0 || stat(dir, &st) < 0)
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: %s (a directory above the socket does not let this "
                      "user through)",
                      path, strerror(err));
  unsigned mode = (unsigned)(st.st_mode & 07777);
  if (!(st.st_mode & S_IXGRP))
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: permission denied: the directory %s above it (mode "
                      "%04o) lets only its owner (uid %u) through; ask the administrator",
                      path, dir, mode, (unsigned)st.st_uid);
  if (st.st_gid == 0)
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: permission denied: the directory %s above it (mode "
                      "%04o) lets through only its owner and group root; ask the administrator",
                      path, dir, mode);
  group_name(st.st_gid, name, sizeof name);
  return coop__fail(COOP_ECONN,
                    "cannot connect to %s: permission denied: the directory %s above it (mode "
                    "%04o) lets through only its owner and the members of group %s; join it "
                    "(usermod -aG %s USER, then log in again) or ask the administrator",
                    path, dir, mode, name, name);
}

/* ECONN for a failed connect(2), worded for what the user can do: a
 * socket that refuses this user names the group that may use it (mode
 * 0660, group coop under systemd: docs/daemon.md "Running under systemd");
 * no socket, or no one listening on it, asks whether coopd runs. */
static int connect_failed(const char *path, int err) {
  struct stat st;
  if ((err == EACCES || err == EPERM) && stat(path, &st) == 0 && !(st.st_mode & S_IWGRP))
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: permission denied: the socket (mode %04o) lets "
                      "only its owner (uid %u) in; ask the administrator",
                      path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
  if ((err == EACCES || err == EPERM) && stat(path, &st) == 0 && st.st_gid == 0)
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: permission denied: the socket (mode %04o) is for "
                      "group root (coopd started by root outside systemd: coop.service gives "
                      "it group coop); ask the administrator, who may widen [server] "
                      "socket_mode",
                      path, (unsigned)(st.st_mode & 07777));
  if ((err == EACCES || err == EPERM) && stat(path, &st) == 0) {
    char name[64];
    group_name(st.st_gid, name, sizeof name);
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: permission denied: the socket (mode %04o) is for "
                      "the members of group %s; join it (usermod -aG %s USER, then log in "
                      "again) or ask the administrator",
                      path, (unsigned)(st.st_mode & 07777), name, name);
  }
  if (err == EACCES || err == EPERM) return dir_refused(path, err);
  if (err == ENOENT || err == ECONNREFUSED)
    return coop__fail(COOP_ECONN,
                      "cannot connect to %s: %s (is coopd running? check --socket or COOP_SOCKET)",
                      path, strerror(err));
  return coop__fail(COOP_ECONN, "cannot connect to %s: %s", path, strerror(err));
}

static int conn_open(coop_conn *c, const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path)
    return coop__fail(COOP_ECONN, "socket path too long: %s", path);
  strcpy(a.sun_path, path);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return coop__fail(COOP_ECONN, "socket: %s", strerror(errno));
  if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) return connect_failed(path, errno);
  coop_set_timeout(c, c->timeout_ms);
  return 0;
}

/* The uid of a user name, or of a number: 0 with *uid, or -1. */
static int user_uid(const char *name, uid_t *uid) {
  if (*name >= '0' && *name <= '9') {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(name, &end, 10);
    if (errno || *end || v >= (uid_t)-1) return -1;
    *uid = (uid_t)v;
    return 0;
  }
  size_t len = 16384;
  char *buf = malloc(len);
  struct passwd pw, *res = NULL;
  int e = buf ? getpwnam_r(name, &pw, buf, len, &res) : ENOMEM;
  if (!e && res) *uid = res->pw_uid;
  free(buf);
  return !e && res ? 0 : -1;
}

/* Whether the server that took the connection may be told anything: it
 * runs as root, as the caller, or as coopd's service user ($COOP_SERVER_USER,
 * a name or a uid; else COOP_SERVICE_USER); the kernel says which uid it is
 * (SO_PEERCRED: who called listen). Anyone else listening at the path (a
 * directory above it writable by them, a socket left by an old server)
 * would be handed the HELLO, then the jobs' inline data and memfds.
 * $COOP_TRUST_ANY_SERVER=1 skips the check. 0, or an error with its
 * message. */
static int check_server(coop_conn *c, const char *path) {
  const char *any = getenv("COOP_TRUST_ANY_SERVER");
  if (any && !strcmp(any, "1")) return 0;
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
    return coop__fail(COOP_ECONN, "%s: cannot learn which user the server runs as: %s", path,
                      strerror(errno));
  if (cr.uid == 0 || cr.uid == geteuid() || cr.uid == getuid()) return 0;
  const char *env = getenv("COOP_SERVER_USER");
  const char *svc = env && *env ? env : COOP_SERVICE_USER;
  uid_t su = 0;
  int known = user_uid(svc, &su) == 0;
  if (known && cr.uid == su) return 0;
  char who[160];
  if (known)
    snprintf(who, sizeof who, "%.100s (uid %u)", svc, (unsigned)su);
  else
    snprintf(who, sizeof who, "%.100s (no such user)", svc);
  return coop__fail(COOP_EUNTRUSTED,
                    "%s: the server there runs as uid %u (pid %d), which is neither root, nor "
                    "you (uid %u), nor coopd's service user %s; nothing was sent to it. If "
                    "coopd runs as uid %u, set COOP_SERVER_USER=%u (COOP_TRUST_ANY_SERVER=1 "
                    "turns the check off)",
                    path, (unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid(), who, (unsigned)cr.uid,
                    (unsigned)cr.uid);
}

static void copy_welcome(struct coop_info *d, const struct coop_msg_welcome *s) {
  COOP_SCHEMA_WELCOME(COOP__COPY)
}

static int handshake(coop_conn *c, const char *name) {
  union coop_msg m, r;
  memset(&m, 0, sizeof m);
  m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
  snprintf(m.hello.name, sizeof m.hello.name, "%s", name && *name ? name : "libcoop");
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_HELLO, &m, NULL, 0, coop__timeout(c), COOP_MSG_WELCOME, &r, &f);
  if (e == COOP_ECLOSED)
    return coop__fail(e, "during the handshake (too many clients, or shutting down?)");
  if (e) return e;
  if (r.welcome.version != COOP_WIRE_VERSION)
    e = coop__fail(COOP_EVERSION, "the daemon chose protocol version %u; libcoop speaks %u",
                   r.welcome.version, COOP_WIRE_VERSION);
  else
    copy_welcome(&c->info, &r.welcome);
  coop__frame_free(f);
  return e;
}

/* Asks coopd for the shared ring (protocol/sring.h); without one (refused,
 * or $COOP_RING=0) every frame goes by the socket. Before the connection
 * is handed out: one thread. */
static void open_ring(coop_conn *c) {
  const char *env = getenv("COOP_RING");
  if (env && !strcmp(env, "0")) return;
  union coop_msg m, r;
  memset(&m, 0, sizeof m);
  struct coop_frame *f = NULL;
  struct coop_wire_buf bell;
  coop_wire_buf_init(&bell);
  if (coop__request(c, COOP_MSG_RING_OPEN, &m, NULL, 0, coop__timeout(c), COOP_MSG_OK, &r, &f) ||
      coop_wire_encode(&bell, COOP_MSG_RING_BELL, 0, NULL) || bell.len != sizeof c->bell) {
    coop__frame_free(f);
    coop_wire_buf_free(&bell);
    coop__clear_msg();
    return;
  }
  memcpy(c->bell, bell.p, sizeof c->bell);
  coop_wire_buf_free(&bell);
  c->ring = f->fd >= 0 ? coop_sring_map(f->fd) : NULL;
  coop__frame_free(f); /* the mapping stays */
  if (!c->ring) return;
  c->up = (struct coop_sring_end){&c->ring->up, 0};
  c->down = (struct coop_sring_end){&c->ring->down, 0};
}

int coop_connect(coop_conn **out, const char *path, const char *name) {
  coop__clear_msg();
  if (!out) return coop__fail(COOP_EINVAL, "coop_connect: out is NULL");
  *out = NULL;
  char p[sizeof(((struct sockaddr_un *)0)->sun_path)];
  if (coop_socket_path(path, p, sizeof p))
    return coop__fail(COOP_ECONN, "socket path too long (at most %zu bytes)", sizeof p - 1);
  coop_conn *c = conn_new();
  if (!c) return coop__fail(COOP_ENOMEM, "out of memory");
  int e = conn_open(c, p);
  if (!e) e = check_server(c, p);
  if (!e) e = handshake(c, name);
  if (!e) open_ring(c);
  if (e) {
    coop_disconnect(c);
    return e;
  }
  *out = c;
  return 0;
}

void coop_disconnect(coop_conn *c) {
  if (!c) return;
  if (c->fd >= 0) close(c->fd);
  if (c->xmem) munmap(c->xmem, c->xmapped);
  if (c->xfd >= 0) close(c->xfd);
  coop_sring_unmap(c->ring);
  free(c->sub_msg);
  coop_wire_buf_free(&c->sub_frame);
  pthread_mutex_destroy(&c->xreg_mu);
  coop__frame_free(c->ev_head);
  coop__pending_free_all(c);
  coop_wire_reader_free(&c->rd);
  free(c->rbuf);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->send_mu);
  free(c);
}

const struct coop_info *coop_info(const coop_conn *c) { return c ? &c->info : NULL; }

void coop_set_spin(coop_conn *c, unsigned spin_us) {
  if (c) atomic_store(&c->spin_us, spin_us > 1000000u ? 1000000u : spin_us);
}

void coop_set_timeout(coop_conn *c, int timeout_ms) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->timeout_ms = timeout_ms;
  pthread_mutex_unlock(&c->mu);
  /* a daemon that stops reading must not block a sender for ever */
  struct timeval tv = {0};
  if (timeout_ms > 0) {
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
  }
  if (c->fd >= 0) setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int coop__timeout(coop_conn *c) {
  pthread_mutex_lock(&c->mu);
  int t = c->timeout_ms;
  pthread_mutex_unlock(&c->mu);
  return t;
}

/* ---- events ---- */

int coop_subscribe(coop_conn *c, uint32_t mask, coop_event_fn fn, void *user) {
  coop__clear_msg();
  if (!c || (mask && !fn) || (mask & ~COOP_EVENTS_ALL))
    return coop__fail(COOP_EINVAL, "subscribe: a mask of COOP_EVENT_BIT()s and a callback");
  /* Set before asking: the first events may come right behind the OK.
   * Cleared before asking to stop: events already on their way are dropped. */
  pthread_mutex_lock(&c->mu);
  c->ev_fn = mask ? fn : NULL;
  c->ev_user = mask ? user : NULL;
  pthread_mutex_unlock(&c->mu);
  union coop_msg m, r;
  memset(&m, 0, sizeof m);
  m.subscribe.mask = mask;
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_SUBSCRIBE, &m, NULL, 0, coop__timeout(c), COOP_MSG_OK, &r, &f);
  coop__frame_free(f);
  return e;
}

int coop_poll_events(coop_conn *c, int timeout_ms) {
  coop__clear_msg();
  if (!c) return coop__fail(COOP_EINVAL, "poll_events: no connection");
  int dispatched = 0;
  pthread_mutex_lock(&c->mu);
  int e = await(c, NULL, deadline_after(timeout_ms), &dispatched);
  if (e && e != COOP_ETIMEDOUT) no_reply(c, e, COOP_MSG_EVENT, timeout_ms);
  pthread_mutex_unlock(&c->mu);
  return e && e != COOP_ETIMEDOUT ? e : dispatched;
}
