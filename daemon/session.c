/*
 * session.c: one client connection: framing, the hello handshake, requests
 * and replies, and the edge checks (protocol/PROTOCOL.md).
 *
 * Trust: everything a client sends is checked here before it reaches the
 * device thread. A malformed, truncated, oversized or wrong-version frame
 * gets an ERROR and closes this connection only. Credentials come from
 * SO_PEERCRED; a client sees and cancels only its own uid's jobs unless it
 * is root.
 *
 * Resources (issue 20, docs/faults.md "Resources a client can exhaust"):
 * every one a client can make coopd hold is bounded, per connection and per
 * user (struct uid_use, counted over all of a uid's connections, so that
 * reconnecting escapes nothing; root has its own caps like anyone):
 *   connections  max_clients_per_uid, refused with an ERROR; a connection
 *                that sends no HELLO within hello_timeout_ms is closed;
 *   replies      the bytes queued and not yet written (out.len - out_off;
 *                the written prefix is dropped as it goes, so memory
 *                follows them): past SESS_OUT_PAUSE no more requests are
 *                read until they drain; past SESS_MAX_OUT the connection
 *                is dropped (results and events that come unasked);
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "journal.h"
#include "log.h"

#define SESS_MAX_OUT (64u << 20)  /* replies pending: dropped past this */
#define SESS_OUT_PAUSE (8u << 20) /* replies pending: no requests read past this */
#define SESS_OUT_KEEP (1u << 20)  /* an output buffer larger is freed once drained */
#define SESS_LOG_MS 10000         /* a refusal of connections logged once per 10 s */
#define SESS_RECV_CHUNK 65536u
#define SESS_FRAMES_PER_WAKE 64 /* then yield to other clients (level-triggered) */
#define SESS_INLINE_OUT_MAX (1u << 20)
#define SESS_MAX_WAITERS 4096u /* WAITs pending on one connection (issue 20 #2) */

struct waiter {
  uv_timer_t timer; /* unused when waiting forever */
  struct session *s;
  uint64_t job;
  uint32_t seq;
  int timed;
  struct waiter *next, **pprev; /* in the session's list: O(1) removal */
};

struct session {
  struct daemon *dm;
  struct uid_use *use; /* its user's counts */
  int fd;
  uv_poll_t poll;
  uv_timer_t hello_timer; /* the handshake deadline */
  int handles;            /* of the two above, not yet closed: free at 0 */
  int events;
  int stalled; /* whole frames wait in rd while the replies drain */
  struct coop_wire_reader rd;
  struct coop_wire_buf out;
  size_t out_off;
  uint32_t uid, pid;
  char name[COOP_WIRE_NAME_MAX];
  int hello;
  int closing;
  unsigned inflight, finished;
  uint64_t bytes; /* buffer bytes of its jobs in flight */
  uint32_t sub_mask;
  struct waiter *waiters;
  unsigned nwaiters;
  struct session *next;
};

static void sess_close(struct session *s);

/* closing: 0 open, 1 to close, 2 to close once the last ERROR is out,
 * 3 closed (the handle is closing; never downgraded). */
static void close_after_error(struct session *s) {
  if (s->closing != 3) s->closing = 2;
}

/* ---- output ---- */

static void sess_flush(struct session *s);

static void sess_send(struct session *s, uint16_t type, uint32_t seq, const union coop_msg *m) {
  if (s->closing) return;
  int e = coop_wire_encode(&s->out, type, seq, m);
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
  sess_flush(s);
}

static void sess_error(struct session *s, uint32_t seq, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void sess_error(struct session *s, uint32_t seq, int code, const char *fmt, ...) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.error.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m.error.message, sizeof m.error.message, fmt, ap);
  va_end(ap);
  log_debug("client %u/%s: error %s: %s", s->pid, s->name, coop_err_name(code), m.error.message);
  sess_send(s, COOP_MSG_ERROR, seq, &m);
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

static void sess_flush(struct session *s) {
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
     * steadily behind 32 MiB grew it by 2 GB a minute: issue 20 #3), and
     * each byte moves at most once on average. */
    memmove(s->out.p, s->out.p + s->out_off, pending(s));
    s->out.len -= s->out_off;
    s->out_off = 0;
  }
  /* WRITABLE also while frames stall: on_io then answers them once the
   * replies have drained (no READABLE comes for bytes already read). */
  sess_want(s, (out_paused(s) ? 0 : UV_READABLE) |
                   (s->out_off < s->out.len || s->stalled ? UV_WRITABLE : 0));
}

/* ---- jobs visible to a session ---- */

static int may_see(const struct session *s, const struct job *j) {
  return s->uid == 0 || j->uid == s->uid;
}

static struct job *find_job(struct daemon *dm, uint64_t id) {
  for (struct job *j = dm->jobs; j; j = j->next)
    if (j->id == id) return j;
  return NULL;
}

/* ENOJOB, worded the same whether no job has that id or another user's
 * does: a different answer would tell any client who runs what. */
static void no_job(struct session *s, uint32_t seq, uint64_t id) {
  sess_error(s, seq, COOP_ENOJOB,
             "no job %llu (finished jobs are kept until their client disconnects, at most "
             "max_finished_per_client; detached ones after that at most max_detached_kept_per_uid)",
             (unsigned long long)id);
}

/* The job, or an ERROR sent and NULL. */
static struct job *lookup(struct session *s, uint32_t seq, uint64_t id) {
  struct job *j = find_job(s->dm, id);
  const struct journal_lost *l = j ? NULL : journal_find_lost(s->dm->journal, id);
  if (l && s->uid != 0 && l->uid != s->uid) {
    no_job(s, seq, id);
    return NULL;
  }
  if (l) {
    sess_error(s, seq, COOP_ELOST,
               "job %llu (%s) was lost: an earlier coopd stopped before it finished; submit it "
               "again",
               (unsigned long long)id, l->kernel);
    return NULL;
  }
  if (!j || !may_see(s, j)) {
    no_job(s, seq, id);
    return NULL;
  }
  return j;
}

static void unlink_job(struct daemon *dm, struct job *j) {
  for (struct job **p = &dm->jobs; *p; p = &(*p)->next)
    if (*p == j) {
      *p = j->next;
      return;
    }
}

/* ---- users: what each uid holds, over all its connections ---- */

static struct uid_use *uid_find(struct daemon *dm, uint32_t uid) {
  for (struct uid_use *u = dm->uids; u; u = u->next)
    if (u->uid == uid) return u;
  return NULL;
}

/* The user's entry, made if need be; NULL if out of memory. */
static struct uid_use *uid_get(struct daemon *dm, uint32_t uid) {
  struct uid_use *u = uid_find(dm, uid);
  if (u) return u;
  u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->uid = uid;
  u->next = dm->uids;
  dm->uids = u;
  return u;
}

/* Frees the entry once nothing is counted in it. Called at the end of
 * each operation, never inside a walk that still uses u. */
static void uid_put(struct daemon *dm, struct uid_use *u) {
  if (!u || u->conns || u->live || u->kept || u->bytes) return;
  for (struct uid_use **p = &dm->uids; *p; p = &(*p)->next)
    if (*p == u) {
      *p = u->next;
      free(u);
      return;
    }
}

/* A finished DETACHED job whose client has gone: kept for a later WAIT. */
static int is_kept(const struct job *j) {
  return j->finished && !j->owner && (j->flags & COOP_SUBMIT_DETACHED);
}

/* Frees a finished job (already unlinked), taking it off its user's
 * counts; the entry itself stays (uid_put). */
static void release_job(struct daemon *dm, struct job *j) {
  struct uid_use *u = uid_find(dm, j->uid);
  if (u) {
    u->bytes -= j->bytes;
    if (is_kept(j)) {
      u->kept--;
      dm->kept--;
    }
  }
  job_free(j);
}

static void drop_job(struct daemon *dm, struct job *j) {
  unlink_job(dm, j);
  release_job(dm, j);
}

/* n of u's jobs have just become kept (is_kept). The user keeps at most
 * max_detached_kept_per_uid; and while all users' kept jobs together pass
 * max_detached_kept, this user's go too, since jobs of theirs just joined:
 * the oldest first. Another user's are never touched (one user's 1100
 * detached jobs evicted a victim's result: issue 20 #7). */
static void keep_jobs(struct daemon *dm, struct uid_use *u, unsigned n) {
  const struct config *c = &dm->cfg;
  u->kept += n;
  dm->kept += n;
  while (u->kept && (u->kept > c->max_detached_kept_per_uid || dm->kept > c->max_detached_kept)) {
    struct job *old = NULL;
    for (struct job *x = dm->jobs; x; x = x->next)
      if (x->uid == u->uid && is_kept(x)) old = x; /* the list is newest first */
    if (!old) break;
    log_debug(
        "job %llu (%s, uid %u): finished detached, dropped: %s reached",
        (unsigned long long)old->id, old->kernel, old->uid,
        u->kept > c->max_detached_kept_per_uid ? "max_detached_kept_per_uid" : "max_detached_kept");
    drop_job(dm, old);
  }
}

/* ---- RESULT ---- */

static void send_result(struct session *s, uint32_t seq, struct job *j) {
  union coop_msg *m = calloc(1, sizeof *m);
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  if (!m) return sess_close(s);
  struct coop_msg_result *r = &m->result;
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
  sess_send(s, COOP_MSG_RESULT, seq, m);
  coop_wire_buf_free(&recs);
  free(m);
}

/* ---- requests ---- */

static void on_hello(struct session *s, uint32_t seq, const struct coop_msg_hello *h) {
  if (h->min_version > COOP_WIRE_VERSION || h->max_version < COOP_WIRE_VERSION) {
    sess_error(s, seq, COOP_EVERSION, "this coopd speaks protocol version %u; the client %u..%u",
               COOP_WIRE_VERSION, h->min_version, h->max_version);
    close_after_error(s);
    return;
  }
  s->hello = 1;
  uv_timer_stop(&s->hello_timer);
  /* The name goes into log lines (and journald): a newline or an escape
   * from a client would forge lines or drive a terminal (issue 20 #13). */
  snprintf(s->name, sizeof s->name, "%s", h->name);
  for (char *p = s->name; *p; p++)
    if (*p < 0x20 || *p > 0x7e) *p = '?';
  union coop_msg m;
  memset(&m, 0, sizeof m);
  struct coop_msg_welcome *w = &m.welcome;
  w->version = COOP_WIRE_VERSION;
  snprintf(w->daemon_version, sizeof w->daemon_version, "%s", COOP_VERSION);
  struct dev *d0 = s->dm->devs[0];
  snprintf(w->backend, sizeof w->backend, "%s", dev_backend(d0));
  snprintf(w->device, sizeof w->device, "%s", dev_name(d0));
  w->compute_units = dev_compute_units(d0);
  w->workers = dev_workers(d0);
  w->ndevices = (uint8_t)s->dm->ndev;
  w->max_payload = COOP_WIRE_MAX_PAYLOAD;
  w->inline_max = COOP_WIRE_INLINE_MAX;
  w->uid = s->uid;
  w->pid = s->pid;
  log_debug("client %u/%s (uid %u) connected", s->pid, s->name, s->uid);
  sess_send(s, COOP_MSG_WELCOME, seq, &m);
}

/* The device a SUBMIT goes to: the one it names, or the least loaded (fewest
 * jobs, then the lowest index) of those with the workers it asks for;
 * device 0 when none has them (its checks then say why). -1: ERROR sent. */
static int pick_device(struct session *s, uint32_t seq, const struct coop_msg_submit *m) {
  struct daemon *dm = s->dm;
  if (m->device != COOP_WIRE_ANY_DEVICE) {
    if (m->device < dm->ndev) return m->device;
    sess_error(s, seq, COOP_EINVAL, "no device %u: this coopd runs %u (0..%u, or any)", m->device,
               dm->ndev, dm->ndev - 1);
    return -1;
  }
  int coop = !!(m->flags & COOP_SUBMIT_COOPERATIVE), best = -1;
  for (unsigned i = 0; i < dm->ndev; i++) {
    if (m->groups > dev_workers(dm->devs[i]) || !dev_fits(dm->devs[i], m->groups, coop)) continue;
    if (best < 0 || dm->dev_jobs[i] < dm->dev_jobs[best]) best = (int)i;
  }
  return best < 0 ? 0 : best;
}

/* Checks a SUBMIT against the kernel, the device and the limits. Returns 0,
 * or sends the ERROR and returns -1. fds: the descriptors of this frame. */
static int check_submit(struct session *s, uint32_t seq, const struct coop_msg_submit *m,
                        const struct kdef *k, struct dev *dev, const int *fds, unsigned nfds,
                        uint64_t *bytes) {
  struct daemon *dm = s->dm;
  unsigned w = dev_workers(dev);
  int coop = !!(m->flags & COOP_SUBMIT_COOPERATIVE);
  if (!k) {
    sess_error(s, seq, COOP_ENOKERNEL, "no kernel named \"%s\" (coopctl kernels lists them)",
               m->kernel);
    return -1;
  }
  if (coop != k->cooperative) {
    sess_error(s, seq, COOP_EARGS, "kernel %s is %scooperative: submit it %s the cooperative flag",
               k->name, k->cooperative ? "" : "non-", k->cooperative ? "with" : "without");
    return -1;
  }
  if ((m->flags & COOP_SUBMIT_QUERY_BARRIER) && !coop) {
    sess_error(s, seq, COOP_EINVAL, "the query-barrier flag is for cooperative kernels");
    return -1;
  }
  if (m->groups == 0 || m->groups > w) {
    sess_error(s, seq, COOP_EINVAL, "groups must be 1..%u (the workers discovery found); got %u", w,
               m->groups);
    return -1;
  }
  if (m->period_us == 0 && (m->count || m->duration_ms)) {
    sess_error(s, seq, COOP_EINVAL, "count and duration need a period");
    return -1;
  }
  if (m->period_us && !m->count && !m->duration_ms) {
    sess_error(s, seq, COOP_EINVAL, "a periodic job needs a count or a duration");
    return -1;
  }
  uint64_t ninst = m->count       ? m->count
                   : m->period_us ? (uint64_t)m->duration_ms * 1000 / m->period_us + 1
                                  : 1;
  if (ninst > COOP_WIRE_MAX_INST) {
    sess_error(s, seq, COOP_EINVAL, "at most %u instances per periodic job", COOP_WIRE_MAX_INST);
    return -1;
  }
  if (m->nargs != k->nargs) {
    sess_error(s, seq, COOP_EARGS, "kernel %s takes %u arguments; got %u", k->name, k->nargs,
               m->nargs);
    return -1;
  }
  uint64_t total = 0, inline_out = 0;
  for (unsigned i = 0; i < m->nargs; i++) {
    const struct coop_wire_arg *a = &m->args[i];
    if (a->type != k->types[i]) {
      sess_error(s, seq, COOP_EARGS, "argument %u of %s is %s; got %s", i, k->name,
                 coop_arg_type_name(k->types[i]), coop_arg_type_name(a->type));
      return -1;
    }
    if (a->type != COOP_ARG_BUF) continue;
    if (a->size == 0 || a->size > ((uint64_t)dm->cfg.arena_mb << 20)) {
      sess_error(s, seq, COOP_EINVAL, "buffer argument %u: size %llu not in 1..arena (%u MiB)", i,
                 (unsigned long long)a->size, dm->cfg.arena_mb);
      return -1;
    }
    if (a->fd != COOP_WIRE_FD_NONE) {
      struct stat st;
      if (a->fd >= nfds || fstat(fds[a->fd], &st) < 0 || !S_ISREG(st.st_mode) ||
          (uint64_t)st.st_size < a->size) {
        sess_error(s, seq, COOP_EINVAL,
                   "buffer argument %u: descriptor %u missing, not a regular file (memfd), or "
                   "shorter than %llu bytes",
                   i, a->fd, (unsigned long long)a->size);
        return -1;
      }
    } else if (a->dir & COOP_BUF_OUT) {
      inline_out += a->size;
    }
    total += a->size;
  }
  {
    /* The kernel's own rules relate scalars to buffer sizes (require.h):
     * what keeps a client's n from sending the kernel past its buffers. */
    uint64_t bits[COOP_WIRE_MAX_ARGS] = {0}, lens[COOP_WIRE_MAX_ARGS] = {0};
    for (unsigned i = 0; i < m->nargs; i++) {
      bits[i] = m->args[i].bits;
      lens[i] = m->args[i].type == COOP_ARG_BUF ? m->args[i].size : 0;
    }
    char why[320];
    if (kdef_admit(k, bits, lens, why, sizeof why)) {
      sess_error(s, seq, COOP_EARGS, "kernel %s: %s", k->name, why);
      return -1;
    }
  }
  if (inline_out > SESS_INLINE_OUT_MAX) {
    sess_error(s, seq, COOP_ETOOBIG, "inline output buffers above %u bytes: pass a memfd",
               SESS_INLINE_OUT_MAX);
    return -1;
  }
  if (s->inflight >= dm->cfg.max_jobs_per_client) {
    sess_error(s, seq, COOP_ELIMIT,
               "at most %u jobs in flight per client ([limits] max_jobs_per_client)",
               dm->cfg.max_jobs_per_client);
    return -1;
  }
  if (s->bytes + total > dm->cfg.max_bytes_per_client) {
    sess_error(s, seq, COOP_ELIMIT,
               "at most %llu buffer bytes in flight per client ([limits] max_bytes_per_client)",
               dm->cfg.max_bytes_per_client);
    return -1;
  }
  const struct uid_use *u = s->use;
  if (u->live >= dm->cfg.max_jobs_per_uid) {
    sess_error(s, seq, COOP_ELIMIT,
               "at most %u jobs queued or running per user, over all its connections, detached "
               "jobs included ([limits] max_jobs_per_uid)",
               dm->cfg.max_jobs_per_uid);
    return -1;
  }
  if (u->bytes + total > dm->cfg.max_bytes_per_uid) {
    sess_error(s, seq, COOP_ELIMIT,
               "at most %llu buffer bytes per user ([limits] max_bytes_per_uid): its jobs in "
               "flight and the inline results kept for it hold %llu, this job %llu more; results "
               "go when their connection closes",
               dm->cfg.max_bytes_per_uid, (unsigned long long)u->bytes, (unsigned long long)total);
    return -1;
  }
  *bytes = total;
  return 0;
}

/* Takes the frame's descriptors it uses (sets them to -1 in fds). */
static struct job *make_job(struct session *s, const struct coop_msg_submit *m,
                            const struct kdef *k, int *fds, uint64_t bytes) {
  struct job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->id = ++s->dm->next_job;
  j->uid = s->uid;
  j->pid = s->pid;
  j->kernel_index = (int)(k - s->dm->ks->k);
  snprintf(j->kernel, sizeof j->kernel, "%s", k->name);
  j->flags = m->flags;
  j->groups = m->groups;
  j->period_us = m->period_us;
  j->count = m->count;
  j->duration_ms = m->duration_ms;
  j->deadline_us = m->deadline_us;
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
    if (a->type != COOP_ARG_BUF) continue;
    if (a->fd != COOP_WIRE_FD_NONE) {
      ja->fd = fds[a->fd]; /* on_submit refused two arguments naming one */
      fds[a->fd] = -1;
    } else if (a->dir & COOP_BUF_IN) {
      ja->data = malloc(a->size);
      if (!ja->data) {
        job_free(j);
        return NULL;
      }
      memcpy(ja->data, a->data, a->size);
    }
  }
  return j;
}

static void on_submit(struct session *s, uint32_t seq, const struct coop_msg_submit *m, int *fds,
                      unsigned nfds) {
  struct daemon *dm = s->dm;
  if (dm->stopping) return sess_error(s, seq, COOP_ESHUTDOWN, "coopd is shutting down");
  const struct kdef *k = kset_find(dm->ks, m->kernel);
  uint64_t bytes = 0;
  for (unsigned a = 0; a < m->nargs; a++) /* one descriptor per argument */
    for (unsigned b = a + 1; k && b < m->nargs; b++)
      if (m->args[a].type == COOP_ARG_BUF && m->args[b].type == COOP_ARG_BUF &&
          m->args[a].fd != COOP_WIRE_FD_NONE && m->args[a].fd == m->args[b].fd)
        return sess_error(s, seq, COOP_EINVAL, "arguments %u and %u name the same descriptor", a,
                          b);
  int dev = pick_device(s, seq, m);
  if (dev < 0 || check_submit(s, seq, m, k, dm->devs[dev], fds, nfds, &bytes)) return;
  struct job *j = make_job(s, m, k, fds, bytes);
  if (!j) return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  j->device = (uint8_t)dev;
  dm->dev_jobs[dev]++;
  j->owner = s;
  j->next = dm->jobs;
  dm->jobs = j;
  s->inflight++;
  s->bytes += bytes;
  s->use->live++;
  s->use->bytes += bytes;
  dm->submitted++;
  journal_accepted(dm->journal, j->id, j->uid, j->kernel);
  log_info("job %llu submitted: %s x%u%s on device %u, uid %u (client %u/%s)",
           (unsigned long long)j->id, j->kernel, j->groups,
           (j->flags & COOP_SUBMIT_COOPERATIVE) ? " cooperative" : "", j->device, s->uid, s->pid,
           s->name);
  /* submitted before the reply: if sending fails and closes the session,
   * its cleanup finds the job where it expects it (cancelled, freed later) */
  dev_submit(dm->devs[j->device], j);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  r.job.job = j->id;
  sess_send(s, COOP_MSG_ACCEPTED, seq, &r);
}

static void on_wait_timer(uv_timer_t *t);

static void on_waiter_closed(uv_handle_t *h) { free(h->data); }

static void waiter_free(struct waiter *w) {
  if (w->timed)
    uv_close((uv_handle_t *)&w->timer, on_waiter_closed);
  else
    free(w);
}

static void on_wait(struct session *s, uint32_t seq, const struct coop_msg_job *m) {
  struct job *j = lookup(s, seq, m->job);
  if (!j) return;
  if (j->finished) return send_result(s, seq, j);
  if (m->timeout_ms == 0) return sess_error(s, seq, COOP_ETIMEDOUT, "job still running");
  if (s->nwaiters >= SESS_MAX_WAITERS)
    return sess_error(s, seq, COOP_ELIMIT, "at most %u WAITs pending per connection",
                      SESS_MAX_WAITERS);
  struct waiter *w = calloc(1, sizeof *w);
  if (!w) return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  w->s = s;
  w->job = j->id;
  w->seq = seq;
  if (m->timeout_ms != COOP_WAIT_FOREVER) {
    w->timed = 1;
    uv_timer_init(s->dm->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, on_wait_timer, m->timeout_ms, 0);
  }
  w->next = s->waiters;
  if (w->next) w->next->pprev = &w->next;
  w->pprev = &s->waiters;
  s->waiters = w;
  s->nwaiters++;
}

static void remove_waiter(struct session *s, struct waiter *w) {
  *w->pprev = w->next;
  if (w->next) w->next->pprev = w->pprev;
  w->next = NULL;
  w->pprev = NULL;
  s->nwaiters--;
}

static void on_wait_timer(uv_timer_t *t) {
  struct waiter *w = t->data;
  remove_waiter(w->s, w);
  sess_error(w->s, w->seq, COOP_ETIMEDOUT, "job %llu still running", (unsigned long long)w->job);
  waiter_free(w);
}

static void on_cancel(struct session *s, uint32_t seq, const struct coop_msg_job *m) {
  struct job *j = lookup(s, seq, m->job);
  if (!j) return;
  if (!j->finished) dev_cancel(s->dm->devs[j->device], j);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  sess_send(s, COOP_MSG_OK, seq, &r);
}

static void put_status(struct coop_wire_buf *b, const struct job *j) {
  struct coop_wire_status st;
  memset(&st, 0, sizeof st);
  st.job = j->id;
  st.state = atomic_load(&j->state);
  st.flags = j->flags;
  snprintf(st.kernel, sizeof st.kernel, "%s", j->kernel);
  st.groups = j->groups;
  st.uid = j->uid;
  st.pid = j->pid;
  st.instances_done = atomic_load(&j->instances_done);
  st.misses = atomic_load(&j->misses_so_far);
  coop_wire_status_put(b, &st);
}

static void on_status(struct session *s, uint32_t seq, const struct coop_msg_job *m) {
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  if (m->job) {
    struct job *j = lookup(s, seq, m->job);
    if (!j) return;
    put_status(&recs, j);
    r.status_reply.n = 1;
  } else {
    for (struct job *j = s->dm->jobs; j && r.status_reply.n < COOP_WIRE_MAX_STATUS; j = j->next)
      if (may_see(s, j)) {
        put_status(&recs, j);
        r.status_reply.n++;
      }
  }
  r.status_reply.recs = recs.p;
  r.status_reply.recs_len = (uint32_t)recs.len;
  sess_send(s, COOP_MSG_STATUS_REPLY, seq, &r);
  coop_wire_buf_free(&recs);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* STATS' device records, and the watchdog's counts over every device (the
 * latest event: the first device that has one). */
static void stats_devices(struct daemon *dm, struct coop_msg_stats_reply *st) {
  st->ndevices = (uint8_t)dm->ndev;
  for (unsigned i = 0; i < dm->ndev; i++) {
    struct dev *d = dm->devs[i];
    struct coop_wire_devinfo *o = &st->devs[i];
    snprintf(o->device, sizeof o->device, "%s", dev_name(d));
    snprintf(o->backend, sizeof o->backend, "%s", dev_backend(d));
    o->compute_units = dev_compute_units(d);
    o->workers = dev_workers(d);
    o->jobs = dm->dev_jobs[i];
    o->parked = dev_parked(d);
    o->parks = dev_parks(d);
    o->unpark_ns = dev_unpark_ns(d);
    struct dev_watch wd;
    dev_watch_get(d, &wd);
    o->lost_workers = wd.lost_workers;
    st->gather_timeouts += wd.gather_timeouts;
    st->hung += wd.hung;
    if (i == 0) st->lost_workers = wd.lost_workers;
    if (!st->watchdog[0] && wd.last[0])
      snprintf(st->watchdog, sizeof st->watchdog, "device %u: %.1000s", i, wd.last);
  }
}

void session_stats(struct daemon *dm, struct coop_msg_stats_reply *st) {
  memset(st, 0, sizeof *st);
  struct dev *d0 = dm->devs[0];
  snprintf(st->backend, sizeof st->backend, "%s", dev_backend(d0));
  snprintf(st->backend_note, sizeof st->backend_note, "%s", dev_backend_note(d0));
  snprintf(st->device, sizeof st->device, "%s", dev_name(d0));
  st->compute_units = dev_compute_units(d0);
  st->workers = dev_workers(d0);
  stats_devices(dm, st);
  st->clients = dm->nsessions;
  for (struct job *j = dm->jobs; j; j = j->next) {
    uint8_t x = atomic_load(&j->state);
    st->queued += x == COOP_JOB_QUEUED;
    st->running += x == COOP_JOB_RUNNING;
  }
  st->submitted = dm->submitted;
  st->done = dm->done;
  st->cancelled = dm->cancelled;
  st->refused = dm->refused;
  st->failed = dm->failed;
  st->samples = dm->ngather;

  st->gather_p50 = st->gather_p90 = st->gather_p99 = st->gather_max = -1;
  if (dm->ngather) {
    int64_t v[DM_GATHER_SAMPLES];
    memcpy(v, dm->gather, dm->ngather * sizeof *v);
    qsort(v, dm->ngather, sizeof *v, cmp_i64);
    uint32_t n = dm->ngather;
    st->gather_p50 = v[(n - 1) * 50 / 100];
    st->gather_p90 = v[(n - 1) * 90 / 100];
    st->gather_p99 = v[(n - 1) * 99 / 100];
    st->gather_max = v[n - 1];
  }
  metrics_stats(dm, &dm->met, st);
}

static void on_stats(struct session *s, uint32_t seq) {
  union coop_msg r;
  memset(&r, 0, sizeof r);
  session_stats(s->dm, &r.stats);
  sess_send(s, COOP_MSG_STATS_REPLY, seq, &r);
}

/* TOP: the device thread's last live view, filtered to what the client
 * may see (PROTOCOL.md). */
static void on_top(struct session *s, uint32_t seq, unsigned device) {
  static struct dev_view v; /* loop thread only; large */
  if (device >= s->dm->ndev)
    return sess_error(s, seq, COOP_EINVAL, "no device %u: this coopd runs %u", device, s->dm->ndev);
  dev_view_get(s->dm->devs[device], &v);
  struct coop_wire_buf wgs, jobs;
  coop_wire_buf_init(&wgs);
  coop_wire_buf_init(&jobs);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  for (unsigned i = 0; i < v.nwg; i++) {
    struct coop_wire_wg w = {COOP_WG_FREE, 0};
    if (v.wg_job[i] && (s->uid == 0 || v.wg_uid[i] == s->uid)) {
      w.state = v.wg_reserved[i] ? COOP_WG_RESERVED : COOP_WG_RUNNING;
      w.job = v.wg_job[i];
    } else if (v.wg_job[i]) {
      w.state = COOP_WG_OTHER;
    }
    coop_wire_wg_put(&wgs, &w);
  }
  for (unsigned i = 0; i < v.njobs; i++) {
    const struct dev_view_job *vj = &v.jobs[i];
    if (s->uid != 0 && vj->uid != s->uid) continue;
    struct coop_wire_topjob t;
    memset(&t, 0, sizeof t);
    t.job = vj->job;
    snprintf(t.kernel, sizeof t.kernel, "%s", vj->kernel);
    t.cooperative = vj->cooperative;
    t.groups = vj->groups;
    t.m = vj->m;
    t.workers = vj->workers;
    t.kills = vj->kills;
    t.forks = vj->forks;
    coop_wire_topjob_put(&jobs, &t);
    r.top.njobs++;
  }
  r.top.nwg = v.nwg;
  r.top.wgs = wgs.p;
  r.top.wgs_len = (uint32_t)wgs.len;
  r.top.jobs = jobs.p;
  r.top.jobs_len = (uint32_t)jobs.len;
  sess_send(s, COOP_MSG_TOP_REPLY, seq, &r);
  coop_wire_buf_free(&wgs);
  coop_wire_buf_free(&jobs);
}

static void on_kernels(struct session *s, uint32_t seq) {
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  for (unsigned i = 0; i < s->dm->ks->n; i++) {
    const struct kdef *k = &s->dm->ks->k[i];
    struct coop_wire_kernel wk;
    memset(&wk, 0, sizeof wk);
    snprintf(wk.name, sizeof wk.name, "%s", k->name);
    wk.cooperative = (uint8_t)k->cooperative;
    wk.nargs = (uint8_t)k->nargs;
    memcpy(wk.types, k->types, k->nargs);
    coop_wire_kernel_put(&recs, &wk);
  }
  r.kernels.n = s->dm->ks->n;
  r.kernels.recs = recs.p;
  r.kernels.recs_len = (uint32_t)recs.len;
  sess_send(s, COOP_MSG_KERNEL_LIST, seq, &r);
  coop_wire_buf_free(&recs);
}

static void on_frame(struct session *s, const struct coop_wire_hdr *h, const uint8_t *payload,
                     int *fds, unsigned nfds) {
  union coop_msg *m = malloc(sizeof *m);
  if (!m) return sess_close(s);
  int e = coop_wire_decode(h, payload, m);
  if (e == 0 && !s->hello && h->type != COOP_MSG_HELLO) e = COOP_EPROTO;
  if (e == 0 && s->hello && h->version != COOP_WIRE_VERSION) e = COOP_EVERSION;
  if (e == 0 && h->type >= COOP_MSG_WELCOME) e = COOP_EPROTO; /* a reply type from a client */
  if (e) {
    log_warn("client %u/%s: bad %s frame (%s): closing", s->pid, s->name,
             coop_wire_type_name(h->type), coop_strerror(e));
    sess_error(s, h->seq, e, "bad %s frame: %s", coop_wire_type_name(h->type), coop_strerror(e));
    close_after_error(s);
    free(m);
    return;
  }
  switch (h->type) {
    case COOP_MSG_HELLO:
      if (s->hello) {
        sess_error(s, h->seq, COOP_EPROTO, "HELLO twice");
        close_after_error(s);
      } else {
        on_hello(s, h->seq, &m->hello);
      }
      break;
    case COOP_MSG_SUBMIT:
      on_submit(s, h->seq, &m->submit, fds, nfds);
      break;
    case COOP_MSG_STATUS:
      on_status(s, h->seq, &m->job);
      break;
    case COOP_MSG_WAIT:
      on_wait(s, h->seq, &m->job);
      break;
    case COOP_MSG_CANCEL:
      on_cancel(s, h->seq, &m->job);
      break;
    case COOP_MSG_TOP:
      on_top(s, h->seq, m->top_req.device);
      break;
    case COOP_MSG_STATS:
      on_stats(s, h->seq);
      break;
    case COOP_MSG_KERNELS:
      on_kernels(s, h->seq);
      break;
    case COOP_MSG_SUBSCRIBE: {
      s->sub_mask = m->subscribe.mask;
      union coop_msg r;
      memset(&r, 0, sizeof r);
      sess_send(s, COOP_MSG_OK, h->seq, &r);
      break;
    }
  }
  free(m);
}

/* ---- input ---- */

static void bad_header(struct session *s, int e) {
  log_warn("client %u/%s: bad frame header (%s): closing", s->pid, s->name, coop_strerror(e));
  sess_error(s, 0, e, "bad frame header: %s", coop_strerror(e));
  close_after_error(s);
}

/* Answers the whole frames rd holds, until the replies pending pass
 * SESS_OUT_PAUSE: then s->stalled, and on_io goes on once they drain.
 * Returns how many it answered. */
static int sess_frames(struct session *s) {
  int n = 0;
  s->stalled = 0;
  while (!s->closing) {
    if (out_paused(s)) {
      s->stalled = 1; /* perhaps none is left: on_io then finds so */
      break;
    }
    struct coop_wire_hdr h;
    const uint8_t *payload;
    int ffds[COOP_WIRE_MAX_FDS];
    unsigned nf = 0;
    int e = coop_wire_reader_next(&s->rd, &h, &payload, ffds, &nf);
    if (e < 0) bad_header(s, e);
    if (e <= 0) break;
    on_frame(s, &h, payload, ffds, nf);
    for (unsigned i = 0; i < nf; i++)
      if (ffds[i] >= 0) close(ffds[i]); /* those no argument took */
    n++;
  }
  return n;
}

static void sess_read(struct session *s) {
  uint8_t *buf = malloc(SESS_RECV_CHUNK);
  if (!buf) return sess_close(s);
  for (int frames = 0; !s->closing && !s->stalled && frames < SESS_FRAMES_PER_WAKE;) {
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nfds = COOP_WIRE_MAX_FDS;
    long n = coop_wire_recv(s->fd, buf, SESS_RECV_CHUNK, fds, &nfds);
    if (n == COOP_ETIMEDOUT) break; /* drained */
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
  if (!s->closing && s->stalled && !out_paused(s)) {
    sess_frames(s);
    if (s->closing) return sess_close(s);
    sess_flush(s); /* the events wanted, now that it may no longer stall */
  }
  if (!s->closing && !s->stalled && !out_paused(s) && (events & UV_READABLE)) sess_read(s);
}

/* ---- life cycle ---- */

static void on_closed(uv_handle_t *h) {
  struct session *s = h->data;
  if (--s->handles) return;
  close(s->fd);
  coop_wire_reader_free(&s->rd);
  coop_wire_buf_free(&s->out);
  free(s);
}

static void sess_close(struct session *s) {
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
    s->waiters = w->next;
    waiter_free(w);
  }
  /* Its jobs: detached ones stay (any connection of the uid may wait for
   * them; finished ones are now kept, within the user's caps); others, if
   * running, are cancelled (nobody will read them) and freed when handed
   * back; finished ones are freed now. */
  unsigned kept = 0; /* finished detached jobs that become kept */
  for (struct job **p = &dm->jobs; *p;) {
    struct job *j = *p;
    if (j->owner != s) {
      p = &j->next;
      continue;
    }
    j->owner = NULL;
    if (j->flags & COOP_SUBMIT_DETACHED) {
      kept += j->finished;
      p = &j->next;
    } else if (j->finished) {
      *p = j->next;
      release_job(dm, j);
    } else {
      dev_cancel(dm->devs[j->device], j);
      p = &j->next;
    }
  }
  /* Jobs waited for before the disconnect are kept too, so the caps hold
   * for them (2560 kept, 664 MB, with no client: issue 20 #8). The caps
   * are applied once, after counting them all. */
  if (kept) keep_jobs(dm, s->use, kept);
  s->use->conns--;
  uid_put(dm, s->use);
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
  sess_error(s, 0, COOP_ETIMEDOUT,
             "no HELLO within %u ms of connecting ([server] hello_timeout_ms): closing",
             s->dm->cfg.hello_timeout_ms);
  close_after_error(s);
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

void session_accept(struct daemon *dm, int fd) {
  if (dm->nsessions >= dm->cfg.max_clients || dm->stopping) {
    log_warn("refusing a client: %s", dm->stopping ? "shutting down" : "max_clients reached");
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
  struct uid_use *u = uid_get(dm, cr.uid);
  if (!u) {
    session_refuse(fd, COOP_ENOMEM, "coopd is out of memory");
    return;
  }
  /* Root too: its cap is its own, and it counts no one else's (64 idle
   * sockets of one uid locked everyone out: issue 20 #4). */
  if (u->conns >= dm->cfg.max_clients_per_uid) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "at most %u connections per user ([limits] max_clients_per_uid); close one first",
             dm->cfg.max_clients_per_uid);
    log_refusal(dm, cr.uid, "max_clients_per_uid reached");
    session_refuse(fd, COOP_ELIMIT, msg);
    uid_put(dm, u);
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
  u->conns++;
  s->fd = fd;
  s->uid = cr.uid;
  s->pid = (uint32_t)cr.pid;
  snprintf(s->name, sizeof s->name, "?");
  coop_wire_reader_init(&s->rd);
  coop_wire_buf_init(&s->out);
  uv_poll_init(dm->loop, &s->poll, fd);
  s->poll.data = s;
  uv_timer_init(dm->loop, &s->hello_timer);
  s->hello_timer.data = s;
  s->handles = 2;
  if (dm->cfg.hello_timeout_ms)
    uv_timer_start(&s->hello_timer, on_hello_timer, dm->cfg.hello_timeout_ms, 0);
  s->next = dm->sessions;
  dm->sessions = s;
  dm->nsessions++;
  sess_want(s, UV_READABLE);
}

/* RELEASED and GATHERED, sent as the device thread sees them. */
void session_job_event(struct daemon *dm, const struct dev_event *e) {
  for (struct session *s = dm->sessions; s; s = s->next) {
    if (s->closing || !(s->sub_mask & (1u << e->kind)) || (s->uid != 0 && s->uid != e->uid))
      continue;
    union coop_msg m;
    memset(&m, 0, sizeof m);
    m.event.job = e->job;
    m.event.kind = e->kind;
    m.event.state = COOP_JOB_RUNNING;
    m.event.instance = e->instance;
    m.event.t_ns = e->t_ns;
    m.event.gather_ns = e->gather_ns;
    sess_send(s, COOP_MSG_EVENT, 0, &m);
  }
}

/* STARTED and FINISHED of a finished job (RELEASED and GATHERED went out
 * live, session_job_event), one per instance, in time order. */
static void send_events(struct session *s, const struct job *j) {
  uint32_t n = j->period_us ? j->ninst : 1;
  for (uint32_t i = 0; i < n; i++) {
    const struct coop_wire_times *t = j->period_us ? &j->inst[i].t : &j->t;
    uint8_t st = j->period_us ? j->inst[i].state : atomic_load(&j->state);
    int64_t when[5] = {0, t->released, t->gathered, t->started, t->finished};
    for (uint8_t kind = COOP_EV_STARTED; kind <= COOP_EV_FINISHED; kind++) {
      if (!(s->sub_mask & (1u << kind)) || (when[kind] == 0 && kind != COOP_EV_FINISHED)) continue;
      union coop_msg m;
      memset(&m, 0, sizeof m);
      m.event.job = j->id;
      m.event.kind = kind;
      m.event.state = kind == COOP_EV_FINISHED ? st : COOP_JOB_RUNNING;
      m.event.instance = i;
      m.event.t_ns = when[kind];
      m.event.gather_ns = kind >= COOP_EV_GATHERED ? t->gather_ns : -1;
      sess_send(s, COOP_MSG_EVENT, 0, &m);
    }
  }
}

static void count_gathers(struct daemon *dm, const struct job *j) {
  metrics_count(&dm->met, j);
  if (j->flags & COOP_SUBMIT_COOPERATIVE) return;
  uint32_t n = j->period_us ? j->ninst : 1;
  for (uint32_t i = 0; i < n; i++) {
    int64_t g = j->period_us ? j->inst[i].t.gather_ns : j->t.gather_ns;
    if (g < 0) continue;
    dm->gather[dm->gather_pos] = g;
    dm->gather_pos = (dm->gather_pos + 1) % DM_GATHER_SAMPLES;
    if (dm->ngather < DM_GATHER_SAMPLES) dm->ngather++;
  }
}

/* Drop the owner's oldest finished jobs beyond the limit. */
static void trim_finished(struct daemon *dm, struct session *s) {
  while (s->finished > dm->cfg.max_finished_per_client) {
    struct job *last = NULL;
    for (struct job *j = dm->jobs; j; j = j->next)
      if (j->owner == s && j->finished) last = j; /* list is newest first */
    if (!last) return;
    drop_job(dm, last);
    s->finished--;
  }
}

void session_job_done(struct daemon *dm, struct job *j) {
  uint8_t st = atomic_load(&j->state);
  dm->done += st == COOP_JOB_DONE;
  dm->cancelled += st == COOP_JOB_CANCELLED;
  dm->refused += st == COOP_JOB_REFUSED;
  dm->failed += st == COOP_JOB_FAILED;
  count_gathers(dm, j);
  journal_finished(dm->journal, j->id);
  dm->dev_jobs[j->device]--;
  /* done, cancelled, refused or failed: one line, with the reason if any */
  log_info("job %llu (%s, uid %u) %s%s%s", (unsigned long long)j->id, j->kernel, j->uid,
           coop_job_state_name(st), j->message[0] ? ": " : "", j->message);
  /* j->finished is set only after the sends: a session that a failed send
   * closes meanwhile then treats j as running (owner := NULL) rather than
   * freeing it under us. */
  for (struct session *s = dm->sessions; s; s = s->next) {
    if (s->sub_mask && may_see(s, j)) send_events(s, j);
    /* The waiters of j leave the list first, in one walk; then they are
     * answered. A failed send may close s (and free its list), never these. */
    struct waiter *mine = NULL;
    for (struct waiter *w = s->waiters, *n; w; w = n) {
      n = w->next;
      if (w->job != j->id) continue;
      remove_waiter(s, w);
      w->next = mine;
      mine = w;
    }
    for (struct waiter *w = mine, *n; w; w = n) {
      n = w->next;
      if (s->closing != 3) send_result(s, w->seq, j);
      waiter_free(w);
    }
  }
  j->finished = 1;
  /* Its inline IN copies are not needed any more (RESULT carries OUT
   * buffers only): finished renders kept 1.58 GB of them (issue 20 #9).
   * They live until here rather than until staging, because a device
   * restart stages again, from them, a job that never got a workgroup
   * (device.c). What stays, the OUT bytes for RESULT, counts toward the
   * user's bytes (max_bytes_per_uid) for as long as the job is kept. */
  uint64_t held = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->data && !(a->dir & COOP_BUF_OUT)) {
      free(a->data);
      a->data = NULL;
    }
    if (a->data) held += a->size;
  }
  uint64_t was = j->bytes;
  j->bytes = held;
  struct uid_use *u = uid_find(dm, j->uid); /* there: the job is counted */
  if (u) {
    u->live--;
    u->bytes = u->bytes - was + held;
  }
  struct session *o = j->owner;
  if (!o) {
    if (u && (j->flags & COOP_SUBMIT_DETACHED))
      keep_jobs(dm, u, 1); /* kept for a later WAIT */
    else
      drop_job(dm, j);
    uid_put(dm, u);
    return;
  }
  o->inflight--;
  o->bytes -= was;
  o->finished++;
  trim_finished(dm, o);
}

void session_shutdown_all(struct daemon *dm) {
  while (dm->sessions) {
    struct session *s = dm->sessions;
    sess_error(s, 0, COOP_ESHUTDOWN, "coopd is shutting down");
    close_after_error(s);
    sess_close(s);
  }
}
