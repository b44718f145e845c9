/*
 * wire.c: the coop wire codec (wire.h, PROTOCOL.md). Fields are written and
 * read byte by byte with shifts, so the host's byte order and alignment never
 * matter; the decoder checks every byte it reads against what is left, so no
 * input can make it read past the payload.
 */
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC; must precede every include */
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ==== encoding ==== */

/* An encoding in progress. `start` is where the frame (or the record buffer)
 * begins and `limit` its size at most: the limit is checked before each
 * append, so a bogus length can never make the buffer ask for gigabytes. */
struct enc {
  struct coop_wire_buf *b;
  size_t start, limit;
  int err;
};

void coop_wire_buf_init(struct coop_wire_buf *b) { memset(b, 0, sizeof *b); }

void coop_wire_buf_free(struct coop_wire_buf *b) {
  free(b->p);
  coop_wire_buf_init(b);
}

static void efail(struct enc *e, int err) {
  if (!e->err) e->err = err;
}

static int grow(struct coop_wire_buf *b, size_t need) {
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < need) {
    if (cap > SIZE_MAX / 2) return COOP_ENOMEM;
    cap *= 2;
  }
  uint8_t *p = realloc(b->p, cap);
  if (!p) return COOP_ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

/* Reserves n > 0 bytes at the end of the buffer, or NULL after an error.
 * Every put_* goes through here, so after the first error the rest of an
 * encoder runs as no-ops and need not test for it. */
static uint8_t *put(struct enc *e, size_t n) {
  struct coop_wire_buf *b = e->b;
  if (!e->err && n > e->limit - (b->len - e->start)) e->err = COOP_ETOOBIG;
  if (!e->err && n > b->cap - b->len) e->err = grow(b, n);
  if (e->err) return NULL;
  uint8_t *d = b->p + b->len;
  b->len += n;
  return d;
}

static void put_be(struct enc *e, uint64_t v, unsigned w) {
  uint8_t *d = put(e, w);
  for (unsigned i = 0; d && i < w; i++) d[i] = (uint8_t)(v >> (8 * (w - 1 - i)));
}

static void put_u8(struct enc *e, uint8_t v) { put_be(e, v, 1); }
static void put_u16(struct enc *e, uint16_t v) { put_be(e, v, 2); }
static void put_u32(struct enc *e, uint32_t v) { put_be(e, v, 4); }
static void put_u64(struct enc *e, uint64_t v) { put_be(e, v, 8); }
/* Conversion to unsigned is defined modulo 2^N: two's complement bits. */
static void put_i32(struct enc *e, int32_t v) { put_be(e, (uint32_t)v, 4); }
static void put_i64(struct enc *e, int64_t v) { put_be(e, (uint64_t)v, 8); }

static void put_mem(struct enc *e, const void *s, size_t n) {
  if (!n) return; /* memcpy from NULL is undefined even for 0 bytes */
  if (!s) efail(e, COOP_EINVAL);
  uint8_t *d = put(e, n);
  if (d) memcpy(d, s, n);
}

/* A string field must be NUL-terminated inside its array: strnlen never
 * reads past `max`, so an unterminated array is refused, not overrun. */
static void put_str(struct enc *e, const char *s, size_t max) {
  size_t n = strnlen(s, max);
  if (n >= max) efail(e, COOP_ETOOBIG);
  put_u16(e, (uint16_t)n);
  put_mem(e, s, n);
}

static void put_blob(struct enc *e, const uint8_t *p, uint32_t n) {
  put_u32(e, n);
  put_mem(e, p, n);
}

static void put_times(struct enc *e, const struct coop_wire_times *t) {
  const int64_t v[] = {t->submitted, t->released,  t->gathered, t->started,
                       t->finished,  t->gather_ns, t->exec_ns};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) put_i64(e, v[i]);
}

static void enc_hello(struct enc *e, const struct coop_msg_hello *m) {
  put_u16(e, m->min_version);
  put_u16(e, m->max_version);
  put_str(e, m->name, sizeof m->name);
}

static void enc_welcome(struct enc *e, const struct coop_msg_welcome *m) {
  put_u16(e, m->version);
  put_str(e, m->daemon_version, sizeof m->daemon_version);
  put_str(e, m->backend, sizeof m->backend);
  put_str(e, m->device, sizeof m->device);
  const uint32_t u[] = {m->compute_units, m->workers, m->max_payload,
                        m->inline_max,    m->uid,     m->pid};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(e, u[i]);
  put_u8(e, m->ndevices);
}

static void enc_arg(struct enc *e, const struct coop_wire_arg *a) {
  put_u8(e, a->type);
  if (a->type != COOP_ARG_BUF) {
    put_u64(e, a->bits);
    return;
  }
  put_u8(e, a->dir);
  put_u8(e, a->fd);
  put_u64(e, a->size);
  put_blob(e, a->data, a->data_len);
}

static void enc_submit(struct enc *e, const struct coop_msg_submit *m) {
  put_str(e, m->kernel, sizeof m->kernel);
  put_u8(e, m->flags);
  const uint32_t u[] = {m->groups, m->period_us, m->count, m->duration_ms, m->deadline_us};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(e, u[i]);
  put_u8(e, m->device);
  /* the loop stops at the error: args[] has only COOP_WIRE_MAX_ARGS entries */
  if (m->nargs > COOP_WIRE_MAX_ARGS) efail(e, COOP_ETOOBIG);
  put_u8(e, m->nargs);
  for (unsigned i = 0; i < m->nargs && !e->err; i++) enc_arg(e, &m->args[i]);
}

static void enc_error(struct enc *e, const struct coop_msg_error *m) {
  put_i32(e, m->code);
  put_str(e, m->message, sizeof m->message);
}

static void enc_result(struct enc *e, const struct coop_msg_result *m) {
  put_u64(e, m->job);
  put_u8(e, m->state);
  put_u8(e, m->device);
  put_i32(e, m->error);
  put_str(e, m->message, sizeof m->message);
  put_times(e, &m->t);
  const uint32_t u[] = {m->m_initial, m->m_min,     m->m_max,  m->kills, m->forks,
                        m->resizes,   m->instances, m->misses, m->ninst};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(e, u[i]);
  if (m->ninst > COOP_WIRE_MAX_INST || m->nbuf > COOP_WIRE_MAX_ARGS) efail(e, COOP_ETOOBIG);
  put_mem(e, m->inst, (size_t)m->ninst * COOP_WIRE_INST_BYTES);
  put_u8(e, m->nbuf);
  for (unsigned i = 0; i < m->nbuf && !e->err; i++) {
    put_u8(e, m->bufs[i].arg);
    put_blob(e, m->bufs[i].data, m->bufs[i].len);
  }
}

/* STATS_REPLY's tail: version, uptime and the metrics (coopctl metrics). */
static void enc_stats_ext(struct enc *e, const struct coop_msg_stats_reply *m) {
  put_str(e, m->daemon_version, sizeof m->daemon_version);
  put_u64(e, m->uptime_ns);
  if (m->nbounds > COOP_WIRE_MAX_BOUNDS) efail(e, COOP_ETOOBIG);
  put_u8(e, m->nbounds);
  for (unsigned i = 0; i < m->nbounds && !e->err; i++) {
    if (i && m->bound[i] <= m->bound[i - 1]) efail(e, COOP_EINVAL);
    put_i64(e, m->bound[i]);
  }
  for (unsigned i = 0; i < m->ndevices && !e->err; i++) {
    const struct coop_wire_devmetrics *d = &m->met[i];
    put_u32(e, d->busy_workers);
    put_u64(e, d->arena_bytes);
    put_u64(e, d->arena_used);
    put_i64(e, d->gather_sum_ns);
    for (unsigned k = 0; k <= m->nbounds; k++) put_u64(e, d->gather_bucket[k]);
    put_u64(e, d->deadline_instances);
    put_u64(e, d->deadline_misses);
  }
}

static void enc_stats(struct enc *e, const struct coop_msg_stats_reply *m) {
  put_str(e, m->backend, sizeof m->backend);
  put_str(e, m->device, sizeof m->device);
  const uint32_t u[] = {m->compute_units, m->workers, m->clients, m->queued, m->running};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(e, u[i]);
  const uint64_t c[] = {m->submitted, m->done, m->cancelled, m->refused, m->failed};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) put_u64(e, c[i]);
  put_u32(e, m->samples);
  put_i64(e, m->gather_p50);
  put_i64(e, m->gather_p90);
  put_i64(e, m->gather_p99);
  put_i64(e, m->gather_max);
  put_str(e, m->backend_note, sizeof m->backend_note);
  put_u32(e, m->gather_timeouts);
  put_u32(e, m->hung);
  put_u32(e, m->lost_workers);
  put_str(e, m->watchdog, sizeof m->watchdog);
  if (m->ndevices > COOP_WIRE_MAX_DEVICES) efail(e, COOP_ETOOBIG);
  put_u8(e, m->ndevices);
  for (unsigned i = 0; i < m->ndevices && !e->err; i++) {
    const struct coop_wire_devinfo *d = &m->devs[i];
    put_str(e, d->device, sizeof d->device);
    put_str(e, d->backend, sizeof d->backend);
    const uint32_t v[] = {d->compute_units, d->workers, d->lost_workers,
                          d->jobs,          d->parked,  d->parks};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) put_u32(e, v[k]);
    put_i64(e, d->unpark_ns);
  }
  if (m->ext) enc_stats_ext(e, m);
}

/* A workgroup record's size: its records are fixed-size, and njobs follows
 * them, so a count that does not match them is refused here (the decoder
 * could read njobs out of a stray record instead). */
#define WG_BYTES 9u

static void enc_top(struct enc *e, const struct coop_msg_top_reply *m) {
  if (m->nwg > COOP_WIRE_MAX_WG)
    efail(e, COOP_ETOOBIG);
  else if ((uint64_t)m->nwg * WG_BYTES != m->wgs_len)
    efail(e, COOP_EINVAL);
  put_u32(e, m->nwg);
  put_mem(e, m->wgs, m->wgs_len);
  put_u32(e, m->njobs);
  put_mem(e, m->jobs, m->jobs_len);
}

static void enc_event(struct enc *e, const struct coop_msg_event *m) {
  put_u64(e, m->job);
  put_u8(e, m->kind);
  put_u8(e, m->state);
  put_u32(e, m->instance);
  put_i64(e, m->t_ns);
  put_i64(e, m->gather_ns);
}

/* 0 when encoded (errors are in e->err), COOP_EINVAL for an unknown type. */
static int enc_payload(struct enc *e, uint16_t type, const union coop_msg *m) {
  if (type == COOP_MSG_STATS || type == COOP_MSG_KERNELS || type == COOP_MSG_OK) return 0;
  if (type == COOP_MSG_TOP) /* without a message: device 0 */
    return put_u8(e, m ? m->top_req.device : 0), 0;
  if (!m) return COOP_EINVAL;
  switch (type) {
    case COOP_MSG_HELLO:
      return enc_hello(e, &m->hello), 0;
    case COOP_MSG_WELCOME:
      return enc_welcome(e, &m->welcome), 0;
    case COOP_MSG_SUBMIT:
      return enc_submit(e, &m->submit), 0;
    case COOP_MSG_ACCEPTED:
    case COOP_MSG_STATUS:
    case COOP_MSG_CANCEL:
      return put_u64(e, m->job.job), 0;
    case COOP_MSG_WAIT:
      put_u64(e, m->job.job);
      return put_u32(e, m->job.timeout_ms), 0;
    case COOP_MSG_SUBSCRIBE:
      return put_u32(e, m->subscribe.mask), 0;
    case COOP_MSG_ERROR:
      return enc_error(e, &m->error), 0;
    case COOP_MSG_STATUS_REPLY:
      put_u32(e, m->status_reply.n);
      return put_mem(e, m->status_reply.recs, m->status_reply.recs_len), 0;
    case COOP_MSG_KERNEL_LIST:
      put_u32(e, m->kernels.n);
      return put_mem(e, m->kernels.recs, m->kernels.recs_len), 0;
    case COOP_MSG_RESULT:
      return enc_result(e, &m->result), 0;
    case COOP_MSG_STATS_REPLY:
      return enc_stats(e, &m->stats), 0;
    case COOP_MSG_EVENT:
      return enc_event(e, &m->event), 0;
    case COOP_MSG_TOP_REPLY:
      return enc_top(e, &m->top), 0;
  }
  return COOP_EINVAL;
}

/* Ends an encoding: on error the partial frame or record is dropped, so the
 * buffer holds only whole ones, and the error is kept (sticky). */
static int enc_end(struct coop_wire_buf *b, size_t mark, int r) {
  if (r) {
    b->len = mark;
    b->err = r;
  }
  return r;
}

/* A message the encoder was handed but the decoder would refuse (an unknown
 * state, a record count that does not match its records) is the caller's
 * mistake: COOP_EINVAL rather than the peer-facing COOP_EPROTO. */
static int as_caller_error(int r) { return r == COOP_EPROTO ? COOP_EINVAL : r; }

/* Patches the payload length into the header, then decodes the frame just
 * built: checking it with the decoder itself guarantees that the encoder
 * never sends what a peer would reject. */
static int seal(struct coop_wire_buf *b, size_t start) {
  uint8_t *f = b->p + start;
  size_t len = b->len - start - COOP_WIRE_HDR;
  for (unsigned i = 0; i < 4; i++) f[12 + i] = (uint8_t)(len >> (8 * (3 - i)));
  struct coop_wire_hdr h;
  union coop_msg chk;
  int r = coop_wire_hdr_decode(f, &h);
  if (!r) r = coop_wire_decode(&h, f + COOP_WIRE_HDR, &chk);
  return as_caller_error(r);
}

int coop_wire_encode(struct coop_wire_buf *b, uint16_t type, uint32_t seq,
                     const union coop_msg *m) {
  if (b->err) return b->err;
  struct enc e = {b, b->len, COOP_WIRE_HDR + COOP_WIRE_MAX_PAYLOAD, 0};
  put_u32(&e, COOP_WIRE_MAGIC);
  put_u16(&e, COOP_WIRE_VERSION);
  put_u16(&e, type);
  put_u32(&e, seq);
  put_u32(&e, 0); /* the length, patched by seal() */
  int r = enc_payload(&e, type, m);
  if (!r) r = e.err;
  if (!r) r = seal(b, e.start);
  return enc_end(b, e.start, r);
}

/* ==== decoding ==== */

/* A read cursor over a payload. The first error sticks and makes every later
 * read return zeros, so the field-by-field decoders need not test each. */
struct cur {
  const uint8_t *p;
  size_t n;
  int err;
};

static void cfail(struct cur *c, int err) {
  if (!c->err) c->err = err;
}

static void want(struct cur *c, int ok) {
  if (!ok) cfail(c, COOP_EPROTO);
}

static const uint8_t *take(struct cur *c, size_t n) {
  if (n > c->n) cfail(c, COOP_EPROTO);
  if (c->err) return NULL;
  const uint8_t *p = c->p;
  if (n) { /* NULL + 0 is undefined: an empty payload may have no pointer */
    c->p += n;
    c->n -= n;
  }
  return p;
}

static uint64_t get_be(struct cur *c, unsigned w) {
  const uint8_t *p = take(c, w);
  uint64_t v = 0;
  for (unsigned i = 0; p && i < w; i++) v = v << 8 | p[i];
  return v;
}

static uint8_t get_u8(struct cur *c) { return (uint8_t)get_be(c, 1); }
static uint16_t get_u16(struct cur *c) { return (uint16_t)get_be(c, 2); }
static uint32_t get_u32(struct cur *c) { return (uint32_t)get_be(c, 4); }
static uint64_t get_u64(struct cur *c) { return get_be(c, 8); }

/* Two's complement without the implementation-defined unsigned-to-signed
 * conversion of out-of-range values. */
static int32_t get_i32(struct cur *c) {
  uint32_t v = get_u32(c);
  return v <= INT32_MAX ? (int32_t)v : -(int32_t)~v - 1;
}

static int64_t get_i64(struct cur *c) {
  uint64_t v = get_u64(c);
  return v <= INT64_MAX ? (int64_t)v : -(int64_t)~v - 1;
}

/* A string into its array of `max` bytes: shorter than max, no NUL inside
 * (a NUL would silently cut it on the C side), always NUL-terminated. */
static void get_str(struct cur *c, char *dst, size_t max) {
  uint16_t n = get_u16(c);
  if (n >= max) cfail(c, COOP_ETOOBIG);
  const uint8_t *p = take(c, n);
  if (!c->err && n) want(c, !memchr(p, 0, n));
  if (c->err) return;
  if (n) memcpy(dst, p, n);
  dst[n] = '\0';
}

static void get_blob(struct cur *c, const uint8_t **p, uint32_t *n) {
  *n = get_u32(c);
  *p = take(c, *n);
}

static void get_times(struct cur *c, struct coop_wire_times *t) {
  int64_t *v[] = {&t->submitted, &t->released,  &t->gathered, &t->started,
                  &t->finished,  &t->gather_ns, &t->exec_ns};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) *v[i] = get_i64(c);
}

static int state_ok(unsigned s) { return s >= COOP_JOB_QUEUED && s <= COOP_JOB_FAILED; }
static int type_ok(unsigned t) { return t >= COOP_ARG_U32 && t <= COOP_ARG_BUF; }

static uint8_t get_state(struct cur *c) {
  uint8_t s = get_u8(c);
  want(c, state_ok(s));
  return s;
}

static void get_status(struct cur *c, struct coop_wire_status *s) {
  s->job = get_u64(c);
  s->state = get_state(c);
  s->flags = get_u8(c);
  want(c, !(s->flags & ~COOP_SUBMIT_FLAGS_ALL));
  get_str(c, s->kernel, sizeof s->kernel);
  uint32_t *u[] = {&s->groups, &s->uid, &s->pid, &s->instances_done, &s->misses};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
}

static void get_kernel(struct cur *c, struct coop_wire_kernel *k) {
  get_str(c, k->name, sizeof k->name);
  k->cooperative = get_u8(c);
  want(c, k->cooperative <= 1);
  k->nargs = get_u8(c);
  if (k->nargs > COOP_WIRE_MAX_ARGS) cfail(c, COOP_ETOOBIG);
  for (unsigned i = 0; i < k->nargs && !c->err; i++) {
    k->types[i] = get_u8(c);
    want(c, type_ok(k->types[i]));
  }
}

/* Job 0 unless RUNNING or RESERVED: a free workgroup has no job, and OTHER
 * hides whose it is (the encoder refuses to leak another user's job id). */
static void get_wg(struct cur *c, struct coop_wire_wg *w) {
  w->state = get_u8(c);
  want(c, w->state <= COOP_WG_OTHER);
  w->job = get_u64(c);
  if (w->state == COOP_WG_FREE || w->state == COOP_WG_OTHER) want(c, w->job == 0);
}

static void get_topjob(struct cur *c, struct coop_wire_topjob *j) {
  j->job = get_u64(c);
  get_str(c, j->kernel, sizeof j->kernel);
  j->cooperative = get_u8(c);
  want(c, j->cooperative <= 1);
  uint32_t *u[] = {&j->groups, &j->m, &j->workers, &j->kills, &j->forks};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
}

static void get_inst(struct cur *c, struct coop_wire_inst *i) {
  i->state = get_state(c);
  get_times(c, &i->t);
}

static int is_32bit(uint8_t type) {
  return type == COOP_ARG_U32 || type == COOP_ARG_I32 || type == COOP_ARG_F32;
}

static void get_arg(struct cur *c, struct coop_wire_arg *a) {
  a->type = get_u8(c);
  want(c, type_ok(a->type));
  if (a->type != COOP_ARG_BUF) {
    a->bits = get_u64(c);
    /* 32-bit values travel zero-extended: one encoding per value, and a
     * sign-extended i32 (a client bug) is caught here, not on the device */
    if (is_32bit(a->type)) want(c, !(a->bits >> 32));
    return;
  }
  a->dir = get_u8(c);
  want(c, a->dir >= COOP_BUF_IN && a->dir <= COOP_BUF_INOUT);
  a->fd = get_u8(c);
  want(c, a->fd < COOP_WIRE_MAX_FDS || a->fd == COOP_WIRE_FD_NONE);
  a->size = get_u64(c);
  get_blob(c, &a->data, &a->data_len);
  if (c->err) return;
  if (a->fd != COOP_WIRE_FD_NONE)
    want(c, a->data_len == 0); /* its contents are in the descriptor */
  else if (a->size > COOP_WIRE_INLINE_MAX)
    cfail(c, COOP_ETOOBIG);
  else
    want(c, a->data_len == ((a->dir & COOP_BUF_IN) ? a->size : 0));
}

static void dec_hello(struct cur *c, struct coop_msg_hello *m) {
  m->min_version = get_u16(c);
  m->max_version = get_u16(c);
  get_str(c, m->name, sizeof m->name);
}

static void dec_welcome(struct cur *c, struct coop_msg_welcome *m) {
  m->version = get_u16(c);
  get_str(c, m->daemon_version, sizeof m->daemon_version);
  get_str(c, m->backend, sizeof m->backend);
  get_str(c, m->device, sizeof m->device);
  uint32_t *u[] = {&m->compute_units, &m->workers, &m->max_payload,
                   &m->inline_max,    &m->uid,     &m->pid};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
  m->ndevices = get_u8(c);
  want(c, m->ndevices >= 1 && m->ndevices <= COOP_WIRE_MAX_DEVICES);
}

static void dec_submit(struct cur *c, struct coop_msg_submit *m) {
  get_str(c, m->kernel, sizeof m->kernel);
  m->flags = get_u8(c);
  want(c, !(m->flags & ~COOP_SUBMIT_FLAGS_ALL));
  uint32_t *u[] = {&m->groups, &m->period_us, &m->count, &m->duration_ms, &m->deadline_us};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
  m->device = get_u8(c);
  m->nargs = get_u8(c);
  if (m->nargs > COOP_WIRE_MAX_ARGS) cfail(c, COOP_ETOOBIG);
  for (unsigned i = 0; i < m->nargs && !c->err; i++) get_arg(c, &m->args[i]);
}

static void dec_error(struct cur *c, struct coop_msg_error *m) {
  m->code = get_i32(c);
  want(c, m->code < 0); /* an ERROR always carries a failure */
  get_str(c, m->message, sizeof m->message);
}

/* Record lists are validated whole here, so that iterating them later
 * cannot fail. */
static void dec_status_reply(struct cur *c, struct coop_msg_status_reply *m) {
  struct coop_wire_status s;
  m->n = get_u32(c);
  if (m->n > COOP_WIRE_MAX_STATUS) cfail(c, COOP_ETOOBIG);
  size_t before = c->n;
  m->recs = c->p;
  for (uint32_t i = 0; i < m->n && !c->err; i++) get_status(c, &s);
  m->recs_len = (uint32_t)(before - c->n);
}

static void dec_kernel_list(struct cur *c, struct coop_msg_kernel_list *m) {
  struct coop_wire_kernel k;
  m->n = get_u32(c);
  if (m->n > COOP_WIRE_MAX_KERNELS) cfail(c, COOP_ETOOBIG);
  size_t before = c->n;
  m->recs = c->p;
  for (uint32_t i = 0; i < m->n && !c->err; i++) get_kernel(c, &k);
  m->recs_len = (uint32_t)(before - c->n);
}

static void dec_top_reply(struct cur *c, struct coop_msg_top_reply *m) {
  struct coop_wire_wg w;
  struct coop_wire_topjob j;
  m->nwg = get_u32(c);
  if (m->nwg > COOP_WIRE_MAX_WG) cfail(c, COOP_ETOOBIG);
  size_t before = c->n;
  m->wgs = c->p;
  for (uint32_t i = 0; i < m->nwg && !c->err; i++) get_wg(c, &w);
  m->wgs_len = (uint32_t)(before - c->n);
  m->njobs = get_u32(c);
  if (m->njobs > COOP_WIRE_MAX_TOPJOBS) cfail(c, COOP_ETOOBIG);
  before = c->n;
  m->jobs = c->p;
  for (uint32_t i = 0; i < m->njobs && !c->err; i++) get_topjob(c, &j);
  m->jobs_len = (uint32_t)(before - c->n);
}

static void dec_outbufs(struct cur *c, struct coop_msg_result *m) {
  m->nbuf = get_u8(c);
  if (m->nbuf > COOP_WIRE_MAX_ARGS) cfail(c, COOP_ETOOBIG);
  for (unsigned i = 0; i < m->nbuf && !c->err; i++) {
    struct coop_wire_outbuf *o = &m->bufs[i];
    o->arg = get_u8(c);
    want(c, o->arg < COOP_WIRE_MAX_ARGS);
    get_blob(c, &o->data, &o->len);
    if (o->len > COOP_WIRE_INLINE_MAX) cfail(c, COOP_ETOOBIG);
  }
}

static void dec_result(struct cur *c, struct coop_msg_result *m) {
  m->job = get_u64(c);
  m->state = get_state(c);
  m->device = get_u8(c);
  m->error = get_i32(c);
  get_str(c, m->message, sizeof m->message);
  get_times(c, &m->t);
  uint32_t *u[] = {&m->m_initial, &m->m_min,     &m->m_max,  &m->kills, &m->forks,
                   &m->resizes,   &m->instances, &m->misses, &m->ninst};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
  if (m->ninst > COOP_WIRE_MAX_INST) cfail(c, COOP_ETOOBIG);
  m->inst = c->p;
  struct coop_wire_inst in;
  for (uint32_t i = 0; i < m->ninst && !c->err; i++) get_inst(c, &in);
  dec_outbufs(c, m);
}

static void dec_stats_ext(struct cur *c, struct coop_msg_stats_reply *m) {
  get_str(c, m->daemon_version, sizeof m->daemon_version);
  m->uptime_ns = get_u64(c);
  m->nbounds = get_u8(c);
  if (m->nbounds > COOP_WIRE_MAX_BOUNDS) cfail(c, COOP_ETOOBIG);
  for (unsigned i = 0; i < m->nbounds && !c->err; i++) {
    m->bound[i] = get_i64(c);
    want(c, i == 0 || m->bound[i] > m->bound[i - 1]); /* ascending: buckets are ranges */
  }
  for (unsigned i = 0; i < m->ndevices && !c->err; i++) {
    struct coop_wire_devmetrics *d = &m->met[i];
    d->busy_workers = get_u32(c);
    d->arena_bytes = get_u64(c);
    d->arena_used = get_u64(c);
    d->gather_sum_ns = get_i64(c);
    for (unsigned k = 0; k <= m->nbounds; k++) d->gather_bucket[k] = get_u64(c);
    d->deadline_instances = get_u64(c);
    d->deadline_misses = get_u64(c);
  }
}

static void dec_stats(struct cur *c, struct coop_msg_stats_reply *m) {
  get_str(c, m->backend, sizeof m->backend);
  get_str(c, m->device, sizeof m->device);
  uint32_t *u[] = {&m->compute_units, &m->workers, &m->clients, &m->queued, &m->running};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) *u[i] = get_u32(c);
  uint64_t *n[] = {&m->submitted, &m->done, &m->cancelled, &m->refused, &m->failed};
  for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) *n[i] = get_u64(c);
  m->samples = get_u32(c);
  m->gather_p50 = get_i64(c);
  m->gather_p90 = get_i64(c);
  m->gather_p99 = get_i64(c);
  m->gather_max = get_i64(c);
  get_str(c, m->backend_note, sizeof m->backend_note);
  m->gather_timeouts = get_u32(c);
  m->hung = get_u32(c);
  m->lost_workers = get_u32(c);
  get_str(c, m->watchdog, sizeof m->watchdog);
  m->ndevices = get_u8(c);
  if (m->ndevices > COOP_WIRE_MAX_DEVICES) cfail(c, COOP_ETOOBIG);
  for (unsigned i = 0; i < m->ndevices && !c->err; i++) {
    struct coop_wire_devinfo *d = &m->devs[i];
    get_str(c, d->device, sizeof d->device);
    get_str(c, d->backend, sizeof d->backend);
    uint32_t *v[] = {&d->compute_units, &d->workers, &d->lost_workers,
                     &d->jobs,          &d->parked,  &d->parks};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) *v[k] = get_u32(c);
    d->unpark_ns = get_i64(c);
  }
  m->ext = c->n > 0; /* a daemon before the tail ends here */
  if (m->ext && !c->err) dec_stats_ext(c, m);
}

static void dec_event(struct cur *c, struct coop_msg_event *m) {
  m->job = get_u64(c);
  m->kind = get_u8(c);
  want(c, m->kind >= COOP_EV_RELEASED && m->kind <= COOP_EV_FINISHED);
  m->state = get_state(c);
  m->instance = get_u32(c);
  m->t_ns = get_i64(c);
  m->gather_ns = get_i64(c);
}

/* 0 for an unknown type; otherwise 1, with errors in c->err. */
static int dec_payload(struct cur *c, uint16_t type, union coop_msg *m) {
  switch (type) {
    case COOP_MSG_STATS:
    case COOP_MSG_KERNELS:
    case COOP_MSG_OK:
      return 1; /* empty: any byte is trailing */
    case COOP_MSG_TOP:
      return m->top_req.device = get_u8(c), 1;
    case COOP_MSG_HELLO:
      return dec_hello(c, &m->hello), 1;
    case COOP_MSG_WELCOME:
      return dec_welcome(c, &m->welcome), 1;
    case COOP_MSG_SUBMIT:
      return dec_submit(c, &m->submit), 1;
    case COOP_MSG_ACCEPTED:
    case COOP_MSG_STATUS:
    case COOP_MSG_CANCEL:
      return m->job.job = get_u64(c), 1;
    case COOP_MSG_WAIT:
      m->job.job = get_u64(c);
      return m->job.timeout_ms = get_u32(c), 1;
    case COOP_MSG_SUBSCRIBE:
      m->subscribe.mask = get_u32(c);
      return want(c, !(m->subscribe.mask & ~COOP_EV_ALL)), 1;
    case COOP_MSG_ERROR:
      return dec_error(c, &m->error), 1;
    case COOP_MSG_STATUS_REPLY:
      return dec_status_reply(c, &m->status_reply), 1;
    case COOP_MSG_KERNEL_LIST:
      return dec_kernel_list(c, &m->kernels), 1;
    case COOP_MSG_RESULT:
      return dec_result(c, &m->result), 1;
    case COOP_MSG_STATS_REPLY:
      return dec_stats(c, &m->stats), 1;
    case COOP_MSG_EVENT:
      return dec_event(c, &m->event), 1;
    case COOP_MSG_TOP_REPLY:
      return dec_top_reply(c, &m->top), 1;
  }
  return 0;
}

int coop_wire_hdr_decode(const uint8_t *b, struct coop_wire_hdr *h) {
  struct cur c = {b, COOP_WIRE_HDR, 0};
  uint32_t magic = get_u32(&c);
  h->version = get_u16(&c);
  h->type = get_u16(&c);
  h->seq = get_u32(&c);
  h->len = get_u32(&c);
  if (magic != COOP_WIRE_MAGIC) return COOP_EPROTO;
  return h->len > COOP_WIRE_MAX_PAYLOAD ? COOP_ETOOBIG : 0;
}

int coop_wire_decode(const struct coop_wire_hdr *h, const uint8_t *payload, union coop_msg *m) {
  if (h->len > COOP_WIRE_MAX_PAYLOAD) return COOP_ETOOBIG;
  if (h->len && !payload) return COOP_EINVAL;
  struct cur c = {payload, h->len, 0};
  /* fields that are not on the wire (a scalar's dir...) read as zero, so a
   * decoded message re-encodes to the same bytes */
  memset(m, 0, sizeof *m);
  if (!dec_payload(&c, h->type, m)) return COOP_EPROTO;
  if (c.n) cfail(&c, COOP_EPROTO); /* trailing bytes */
  return c.err;
}

/* ==== records ==== */

/* Record encoders share one shape: append, then decode the record back so a
 * record the decoder would refuse never enters the buffer. */
static int rec_begin(struct coop_wire_buf *b, struct enc *e) {
  *e = (struct enc){b, 0, COOP_WIRE_MAX_PAYLOAD, b->err};
  return b->err;
}

/* A cursor over the record just appended (none after an append error). */
static struct cur rec_cur(const struct coop_wire_buf *b, size_t mark, int err) {
  if (err) return (struct cur){NULL, 0, err};
  return (struct cur){b->p + mark, b->len - mark, 0};
}

int coop_wire_status_put(struct coop_wire_buf *recs, const struct coop_wire_status *s) {
  struct enc e;
  size_t mark = recs->len;
  if (rec_begin(recs, &e)) return recs->err;
  put_u64(&e, s->job);
  put_u8(&e, s->state);
  put_u8(&e, s->flags);
  put_str(&e, s->kernel, sizeof s->kernel);
  const uint32_t u[] = {s->groups, s->uid, s->pid, s->instances_done, s->misses};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(&e, u[i]);
  struct cur c = rec_cur(recs, mark, e.err);
  struct coop_wire_status chk;
  get_status(&c, &chk);
  return enc_end(recs, mark, as_caller_error(c.err));
}

int coop_wire_kernel_put(struct coop_wire_buf *recs, const struct coop_wire_kernel *k) {
  struct enc e;
  size_t mark = recs->len;
  if (rec_begin(recs, &e)) return recs->err;
  put_str(&e, k->name, sizeof k->name);
  put_u8(&e, k->cooperative);
  if (k->nargs > COOP_WIRE_MAX_ARGS) efail(&e, COOP_ETOOBIG);
  put_u8(&e, k->nargs);
  put_mem(&e, k->types, k->nargs); /* a no-op after the error above */
  struct cur c = rec_cur(recs, mark, e.err);
  struct coop_wire_kernel chk;
  get_kernel(&c, &chk);
  return enc_end(recs, mark, as_caller_error(c.err));
}

int coop_wire_inst_put(struct coop_wire_buf *recs, const struct coop_wire_inst *i) {
  struct enc e;
  size_t mark = recs->len;
  if (rec_begin(recs, &e)) return recs->err;
  put_u8(&e, i->state);
  put_times(&e, &i->t);
  struct cur c = rec_cur(recs, mark, e.err);
  struct coop_wire_inst chk;
  get_inst(&c, &chk);
  return enc_end(recs, mark, as_caller_error(c.err));
}

int coop_wire_wg_put(struct coop_wire_buf *recs, const struct coop_wire_wg *w) {
  struct enc e;
  size_t mark = recs->len;
  if (rec_begin(recs, &e)) return recs->err;
  put_u8(&e, w->state);
  put_u64(&e, w->job);
  struct cur c = rec_cur(recs, mark, e.err);
  struct coop_wire_wg chk;
  get_wg(&c, &chk);
  return enc_end(recs, mark, as_caller_error(c.err));
}

int coop_wire_topjob_put(struct coop_wire_buf *recs, const struct coop_wire_topjob *j) {
  struct enc e;
  size_t mark = recs->len;
  if (rec_begin(recs, &e)) return recs->err;
  put_u64(&e, j->job);
  put_str(&e, j->kernel, sizeof j->kernel);
  put_u8(&e, j->cooperative);
  const uint32_t u[] = {j->groups, j->m, j->workers, j->kills, j->forks};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) put_u32(&e, u[i]);
  struct cur c = rec_cur(recs, mark, e.err);
  struct coop_wire_topjob chk;
  get_topjob(&c, &chk);
  return enc_end(recs, mark, as_caller_error(c.err));
}

int coop_wire_status_next(const struct coop_msg_status_reply *r, uint32_t *off,
                          struct coop_wire_status *s) {
  if (*off >= r->recs_len) return COOP_EPROTO;
  struct cur c = {r->recs + *off, r->recs_len - *off, 0};
  get_status(&c, s);
  if (!c.err) *off = r->recs_len - (uint32_t)c.n;
  return c.err;
}

int coop_wire_kernel_next(const struct coop_msg_kernel_list *r, uint32_t *off,
                          struct coop_wire_kernel *k) {
  if (*off >= r->recs_len) return COOP_EPROTO;
  struct cur c = {r->recs + *off, r->recs_len - *off, 0};
  get_kernel(&c, k);
  if (!c.err) *off = r->recs_len - (uint32_t)c.n;
  return c.err;
}

int coop_wire_wg_next(const struct coop_msg_top_reply *r, uint32_t *off, struct coop_wire_wg *w) {
  if (*off >= r->wgs_len) return COOP_EPROTO;
  struct cur c = {r->wgs + *off, r->wgs_len - *off, 0};
  get_wg(&c, w);
  if (!c.err) *off = r->wgs_len - (uint32_t)c.n;
  return c.err;
}

int coop_wire_topjob_next(const struct coop_msg_top_reply *r, uint32_t *off,
                          struct coop_wire_topjob *j) {
  if (*off >= r->jobs_len) return COOP_EPROTO;
  struct cur c = {r->jobs + *off, r->jobs_len - *off, 0};
  get_topjob(&c, j);
  if (!c.err) *off = r->jobs_len - (uint32_t)c.n;
  return c.err;
}

int coop_wire_inst_get(const struct coop_msg_result *r, uint32_t i, struct coop_wire_inst *out) {
  if (i >= r->ninst || !r->inst) return COOP_EPROTO;
  struct cur c = {r->inst + (size_t)i * COOP_WIRE_INST_BYTES, COOP_WIRE_INST_BYTES, 0};
  get_inst(&c, out);
  return c.err;
}

/* ==== names ==== */

const char *coop_wire_type_name(uint16_t type) {
  static const char *const req[] = {"?",      "HELLO", "SUBMIT",  "STATUS",    "WAIT",
                                    "CANCEL", "STATS", "KERNELS", "SUBSCRIBE", "TOP"};
  static const char *const rep[] = {"WELCOME",     "ACCEPTED",    "STATUS_REPLY", "RESULT",   "OK",
                                    "STATS_REPLY", "KERNEL_LIST", "EVENT",        "TOP_REPLY"};
  if (type >= COOP_MSG_HELLO && type <= COOP_MSG_TOP) return req[type];
  if (type >= COOP_MSG_WELCOME && type <= COOP_MSG_TOP_REPLY) return rep[type - COOP_MSG_WELCOME];
  return type == COOP_MSG_ERROR ? "ERROR" : "UNKNOWN";
}

const char *coop_job_state_name(uint8_t state) {
  static const char *const n[] = {"?",         "queued",  "running", "done",
                                  "cancelled", "refused", "failed"};
  return state_ok(state) ? n[state] : "unknown";
}

const char *coop_arg_type_name(uint8_t type) {
  static const char *const n[] = {"?", "u32", "i32", "u64", "i64", "f32", "f64", "buf"};
  return type_ok(type) ? n[type] : "unknown";
}

/* ==== frame reader ==== */

void coop_wire_reader_init(struct coop_wire_reader *r) { memset(r, 0, sizeof *r); }

static void close_fds(const int *fds, unsigned n) {
  for (unsigned i = 0; i < n; i++) close(fds[i]);
}

void coop_wire_reader_free(struct coop_wire_reader *r) {
  close_fds(r->fds, r->nfds);
  free(r->buf);
  coop_wire_reader_init(r);
}

/* Records a failure for good; the descriptors of the failed call are closed
 * because the caller handed them over. */
static int rfail(struct coop_wire_reader *r, int err, const int *fds, unsigned nfds) {
  close_fds(fds, nfds);
  if (!r->err) r->err = err;
  return r->err;
}

/* Drops the bytes already handed out, then makes room for n more. */
static int reader_room(struct coop_wire_reader *r, size_t n) {
  if (r->off) {
    memmove(r->buf, r->buf + r->off, r->len - r->off);
    r->len -= r->off;
    r->off = 0;
  }
  if (n <= r->cap - r->len) return 0;
  if (n > SIZE_MAX / 2 - r->len) return COOP_ENOMEM;
  size_t cap = r->cap ? r->cap : 4096;
  while (cap - r->len < n) cap *= 2;
  uint8_t *p = realloc(r->buf, cap);
  if (!p) return COOP_ENOMEM;
  r->buf = p;
  r->cap = cap;
  return 0;
}

/* The ordinal of the last frame that starts at or after byte `from` of the
 * buffer, or -1. The descriptors of a recvmsg() belong to that frame: the
 * kernel may glue earlier bytes in front of the sendmsg() that carried them
 * but ends the read with it, and the sender starts that sendmsg() with the
 * frame's first byte and puts no later frame in it. */
static int64_t last_start(const struct coop_wire_reader *r, size_t from) {
  int64_t owner = -1;
  uint64_t ord = r->frame;
  size_t pos = r->off;
  while (pos < r->len) {
    struct coop_wire_hdr h;
    if (pos >= from) owner = (int64_t)ord;
    if (r->len - pos < COOP_WIRE_HDR || coop_wire_hdr_decode(r->buf + pos, &h)) break;
    pos += COOP_WIRE_HDR + h.len;
    ord++;
  }
  return owner;
}

int coop_wire_reader_feed(struct coop_wire_reader *r, const uint8_t *bytes, size_t n,
                          const int *fds, unsigned nfds) {
  if (!fds) nfds = 0;
  if (r->err) return rfail(r, r->err, fds, nfds);
  if (nfds > COOP_WIRE_MAX_FDS * 4 - r->nfds) return rfail(r, COOP_ETOOBIG, fds, nfds);
  if (n && !bytes) return rfail(r, COOP_EINVAL, fds, nfds);
  int err = reader_room(r, n);
  if (err) return rfail(r, err, fds, nfds);
  size_t from = r->len;
  if (n) memcpy(r->buf + r->len, bytes, n);
  r->len += n;
  if (!nfds) return 0;
  int64_t owner = last_start(r, from);
  if (owner < 0) return rfail(r, COOP_EPROTO, fds, nfds); /* no frame began here */
  for (unsigned i = 0; i < nfds; i++) {
    r->fds[r->nfds] = fds[i];
    r->fd_frame[r->nfds++] = (uint64_t)owner;
  }
  return 0;
}

/* Moves the descriptors of frame r->frame out of the queue, keeping the
 * others in order; past COOP_WIRE_MAX_FDS (or with no room) they are closed,
 * as no SUBMIT can name them. */
static void hand_fds(struct coop_wire_reader *r, int *fds, unsigned *nfds) {
  unsigned kept = 0, given = 0;
  for (unsigned i = 0; i < r->nfds; i++) {
    if (r->fd_frame[i] != r->frame) {
      r->fds[kept] = r->fds[i];
      r->fd_frame[kept++] = r->fd_frame[i];
    } else if (fds && given < COOP_WIRE_MAX_FDS) {
      fds[given++] = r->fds[i];
    } else {
      close(r->fds[i]);
    }
  }
  r->nfds = kept;
  if (nfds) *nfds = given;
}

int coop_wire_reader_next(struct coop_wire_reader *r, struct coop_wire_hdr *h,
                          const uint8_t **payload, int *fds, unsigned *nfds) {
  if (nfds) *nfds = 0;
  if (r->err) return r->err;
  size_t avail = r->len - r->off;
  if (avail < COOP_WIRE_HDR) return 0;
  int err = coop_wire_hdr_decode(r->buf + r->off, h);
  if (err) return rfail(r, err, NULL, 0);
  if (avail - COOP_WIRE_HDR < h->len) return 0;
  *payload = r->buf + r->off + COOP_WIRE_HDR;
  hand_fds(r, fds, nfds);
  /* the bytes stay where they are until the next feed, so *payload lives
   * until the next call on r */
  r->off += COOP_WIRE_HDR + h->len;
  r->frame++;
  return 1;
}

/* ==== sockets ==== */

/* Whether buf is exactly one frame: descriptors may only travel with a frame
 * sent alone, or the receiver could not tell which frame owns them. */
static int one_frame(const uint8_t *buf, size_t len) {
  struct coop_wire_hdr h;
  return buf && len >= COOP_WIRE_HDR && !coop_wire_hdr_decode(buf, &h) &&
         len - COOP_WIRE_HDR == h.len;
}

static ssize_t send_chunk(int sock, const uint8_t *p, size_t n, const int *fds, unsigned nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * COOP_WIRE_MAX_FDS)];
    struct cmsghdr align;
  } u;
  struct iovec io = {(void *)p, n};
  struct msghdr msg = {.msg_iov = &io, .msg_iovlen = 1};
  if (nfds) {
    memset(&u, 0, sizeof u);
    msg.msg_control = u.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

static int sock_error(int e) { return e == EPIPE || e == ECONNRESET ? COOP_ECLOSED : COOP_EIO; }

int coop_wire_send(int sock, const uint8_t *buf, size_t len, const int *fds, unsigned nfds,
                   size_t *sent) {
  size_t done = 0;
  int r = 0;
  if (sent) *sent = 0;
  if (nfds > COOP_WIRE_MAX_FDS) return COOP_ETOOBIG;
  if ((len && !buf) || (nfds && (!fds || !one_frame(buf, len)))) return COOP_EINVAL;
  while (done < len && !r) {
    ssize_t k = send_chunk(sock, buf + done, len - done, fds, done ? 0 : nfds);
    if (k > 0)
      done += (size_t)k;
    else if (k == 0)
      r = COOP_EIO; /* a stream socket never accepts 0 of n > 0 bytes */
    else if (errno == EAGAIN || errno == EWOULDBLOCK)
      r = sent ? 1 : COOP_ETIMEDOUT; /* 1: stop, the caller waits for POLLOUT */
    else if (errno != EINTR)
      r = sock_error(errno);
  }
  if (sent) *sent = done;
  return r == 1 ? 0 : r;
}

/* Collects SCM_RIGHTS descriptors; any beyond COOP_WIRE_MAX_FDS are closed
 * (the kernel already closed those that did not fit the control buffer). */
static void take_fds(struct msghdr *msg, int *fds, unsigned *nfds) {
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (*nfds < COOP_WIRE_MAX_FDS)
        fds[(*nfds)++] = fd;
      else
        close(fd);
    }
  }
}

long coop_wire_recv(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * COOP_WIRE_MAX_FDS)];
    struct cmsghdr align;
  } u;
  if (nfds) *nfds = 0;
  if (!buf || !cap) return COOP_EINVAL;
  if (cap > (1u << 30)) cap = 1u << 30; /* keeps the count within a long */
  struct iovec io = {buf, cap};
  struct msghdr msg = {.msg_iov = &io, .msg_iovlen = 1};
  if (fds && nfds) { /* without a control buffer the kernel drops descriptors */
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
  }
  ssize_t k;
  do k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (k < 0 && errno == EINTR);
  if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? COOP_ETIMEDOUT : sock_error(errno);
  if (msg.msg_control) take_fds(&msg, fds, nfds);
  return (long)k;
}
