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

/* A count of what follows it: past its bound the message is refused before
 * the arrays it counts are read (they have only `max` entries). */
static void put_count(struct enc *e, uint32_t v, uint32_t max, unsigned w) {
  if (v > max) efail(e, COOP_ETOOBIG);
  put_be(e, v, w);
}

static void put_times(struct enc *e, const struct coop_wire_times *t) {
#define PUT_TIME(name) put_i64(e, t->name);
  COOP_TIMES_MAP(PUT_TIME)
#undef PUT_TIME
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
#define GET_TIME(name) t->name = get_i64(c);
  COOP_TIMES_MAP(GET_TIME)
#undef GET_TIME
}

/* A u8 or u32 (w bytes) in [lo, hi], or only the bits of mask: an unknown
 * enum or flag is malformed (COOP_EPROTO). */
static uint32_t get_in(struct cur *c, unsigned w, uint32_t lo, uint32_t hi) {
  uint32_t v = (uint32_t)get_be(c, w);
  want(c, v >= lo && v <= hi);
  return v;
}

static uint32_t get_bits(struct cur *c, unsigned w, uint32_t mask) {
  uint32_t v = (uint32_t)get_be(c, w);
  want(c, !(v & ~mask));
  return v;
}

/* A count above its bound is too big (COOP_ETOOBIG), not malformed. */
static uint32_t get_count(struct cur *c, uint32_t max, unsigned w) {
  uint32_t v = (uint32_t)get_be(c, w);
  if (v > max) cfail(c, COOP_ETOOBIG);
  return v;
}

static int state_ok(unsigned s) { return s >= COOP_JOB_QUEUED && s <= COOP_JOB_FAILED; }
static int type_ok(unsigned t) { return t >= COOP_ARG_U32 && t <= COOP_ARG_BUF; }

/* ==== the schema's lists (coop_schema.h) ==== */

/* How each kind of field is written and read: ENC_<kind>(e, field, arg)
 * and DEC_<kind>(c, field, arg); arg is a count's bound. */
#define ENC_U8(e, v, arg) put_u8(e, v)
#define ENC_U16(e, v, arg) put_u16(e, v)
#define ENC_U32(e, v, arg) put_u32(e, v)
#define ENC_U64(e, v, arg) put_u64(e, v)
#define ENC_I32(e, v, arg) put_i32(e, v)
#define ENC_I64(e, v, arg) put_i64(e, v)
#define ENC_NAME(e, v, arg) put_str(e, v, sizeof(v))
#define ENC_TEXT ENC_NAME
#define ENC_TIMES(e, v, arg) put_times(e, &(v))
#define ENC_STATE ENC_U8
#define ENC_FLAGS ENC_U8
#define ENC_BUFFLAGS ENC_U8
#define ENC_BOOL ENC_U8
#define ENC_EVKIND ENC_U8
#define ENC_WGSTATE ENC_U8
#define ENC_NDEV ENC_U8
#define ENC_EVMASK ENC_U32
#define ENC_ERRCODE ENC_I32
#define ENC_COUNT8(e, v, max) put_count(e, v, max, 1)
#define ENC_COUNT32(e, v, max) put_count(e, v, max, 4)

#define DEC_U8(c, v, arg) ((v) = get_u8(c))
#define DEC_U16(c, v, arg) ((v) = get_u16(c))
#define DEC_U32(c, v, arg) ((v) = get_u32(c))
#define DEC_U64(c, v, arg) ((v) = get_u64(c))
#define DEC_I32(c, v, arg) ((v) = get_i32(c))
#define DEC_I64(c, v, arg) ((v) = get_i64(c))
#define DEC_NAME(c, v, arg) get_str(c, v, sizeof(v))
#define DEC_TEXT DEC_NAME
#define DEC_TIMES(c, v, arg) get_times(c, &(v))
#define DEC_STATE(c, v, arg) ((v) = (uint8_t)get_in(c, 1, COOP_JOB_QUEUED, COOP_JOB_FAILED))
#define DEC_FLAGS(c, v, arg) ((v) = (uint8_t)get_bits(c, 1, COOP_SUBMIT_FLAGS_ALL))
#define DEC_BUFFLAGS(c, v, arg) ((v) = (uint8_t)get_bits(c, 1, COOP_BUFFER_FLAGS_ALL))
#define DEC_BOOL(c, v, arg) ((v) = (uint8_t)get_in(c, 1, 0, 1))
#define DEC_EVKIND(c, v, arg) ((v) = (uint8_t)get_in(c, 1, COOP_EV_RELEASED, COOP_EV_FINISHED))
#define DEC_WGSTATE(c, v, arg) ((v) = (uint8_t)get_in(c, 1, COOP_WG_FREE, COOP_WG_OTHER))
#define DEC_NDEV(c, v, arg) ((v) = (uint8_t)get_in(c, 1, 1, COOP_MAX_DEVICES))
#define DEC_EVMASK(c, v, arg) ((v) = get_bits(c, 4, COOP_EV_ALL))
#define DEC_ERRCODE(c, v, arg) ((v) = get_i32(c), want(c, (v) < 0)) /* ERROR carries a failure */
#define DEC_COUNT8(c, v, max) ((v) = (uint8_t)get_count(c, max, 1))
#define DEC_COUNT32(c, v, max) ((v) = get_count(c, max, 4))

#define ENC_FIELD(kind, name, arg) ENC_##kind(e, m->name, arg);
#define DEC_FIELD(kind, name, arg) DEC_##kind(c, m->name, arg);

/* put_<list> and get_<list>: the list's fields, in order. */
#define LIST_CODEC(list, LIST, type)                                       \
  static void put_##list(struct enc *e, const type *m) { LIST(ENC_FIELD) } \
  static void get_##list(struct cur *c, type *m) { LIST(DEC_FIELD) }

LIST_CODEC(hello, COOP_SCHEMA_HELLO, struct coop_msg_hello)
LIST_CODEC(welcome, COOP_SCHEMA_WELCOME, struct coop_msg_welcome)
LIST_CODEC(submit, COOP_SCHEMA_SUBMIT, struct coop_msg_submit)
LIST_CODEC(job, COOP_SCHEMA_JOB, struct coop_msg_job)
LIST_CODEC(wait, COOP_SCHEMA_WAIT, struct coop_msg_job)
LIST_CODEC(subscribe, COOP_SCHEMA_SUBSCRIBE, struct coop_msg_subscribe)
LIST_CODEC(top, COOP_SCHEMA_TOP, struct coop_msg_top)
LIST_CODEC(error, COOP_SCHEMA_ERROR, struct coop_msg_error)
LIST_CODEC(status_reply, COOP_SCHEMA_STATUS_REPLY, struct coop_msg_status_reply)
LIST_CODEC(status, COOP_SCHEMA_STATUS, struct coop_wire_status)
LIST_CODEC(result, COOP_SCHEMA_RESULT, struct coop_msg_result)
LIST_CODEC(inst, COOP_SCHEMA_INST, struct coop_wire_inst)
LIST_CODEC(stats, COOP_SCHEMA_STATS, struct coop_msg_stats_reply)
LIST_CODEC(devinfo, COOP_SCHEMA_DEVINFO, struct coop_wire_devinfo)
LIST_CODEC(stats_ext, COOP_SCHEMA_STATS_EXT, struct coop_msg_stats_reply)
LIST_CODEC(devmetrics, COOP_SCHEMA_DEVMETRICS, struct coop_wire_devmetrics)
LIST_CODEC(deadlines, COOP_SCHEMA_DEADLINES, struct coop_wire_devmetrics)
LIST_CODEC(kernel_list, COOP_SCHEMA_KERNEL_LIST, struct coop_msg_kernel_list)
LIST_CODEC(kernel, COOP_SCHEMA_KERNEL, struct coop_wire_kernel)
LIST_CODEC(event, COOP_SCHEMA_EVENT, struct coop_msg_event)
LIST_CODEC(wg, COOP_SCHEMA_WG, struct coop_wire_wg)
LIST_CODEC(topjob, COOP_SCHEMA_TOPJOB, struct coop_wire_topjob)
LIST_CODEC(buf_create, COOP_SCHEMA_BUF_CREATE, struct coop_msg_buf_create)
LIST_CODEC(buf_range, COOP_SCHEMA_BUF_RANGE, struct coop_msg_buf_range)
LIST_CODEC(buf_free, COOP_SCHEMA_BUF_FREE, struct coop_msg_buf_free)
LIST_CODEC(buffer, COOP_SCHEMA_BUFFER, struct coop_msg_buffer)
LIST_CODEC(kernel_add, COOP_SCHEMA_KERNEL_ADD, struct coop_msg_kernel_add)
LIST_CODEC(kernel_remove, COOP_SCHEMA_KERNEL_REMOVE, struct coop_msg_kernel_remove)
LIST_CODEC(kernel_done, COOP_SCHEMA_KERNEL_DONE, struct coop_msg_kernel_done)
LIST_CODEC(migrate, COOP_SCHEMA_MIGRATE, struct coop_msg_migrate)

/* A fixed-size record's bytes: its records are fixed-size, and njobs
 * follows them, so a count that does not match them is refused (the decoder
 * could read njobs out of a stray record instead). */
#define WG_BYTES (0u COOP_SCHEMA_WG(COOP_SCHEMA_LEN))
_Static_assert(COOP_WIRE_INST_BYTES == 57u && WG_BYTES == 9u, "record lengths are on the wire");

/* ==== what follows a list: arguments, records, buffers ==== */

static void enc_arg(struct enc *e, const struct coop_wire_arg *a) {
  put_u8(e, a->type);
  if (a->type == COOP_ARG_DEVBUF_IO) {
    put_u64(e, a->bits);
    put_u8(e, a->dir);
    put_u8(e, a->fd);
    put_u64(e, a->at);
    put_u64(e, a->size);
    put_u64(e, a->off);
    return;
  }
  if (a->type != COOP_ARG_BUF) {
    put_u64(e, a->bits);
    return;
  }
  put_u8(e, a->dir);
  put_u8(e, a->fd);
  put_u64(e, a->size);
  put_blob(e, a->data, a->data_len);
}

static int is_32bit(uint8_t type) {
  return type == COOP_ARG_U32 || type == COOP_ARG_I32 || type == COOP_ARG_F32;
}

/* A device buffer's range through a descriptor: a real descriptor index,
 * a length > 0, and neither range past 2^64 (the daemon checks them
 * against the buffer and the file). */
static void dec_devbuf_io(struct cur *c, struct coop_wire_arg *a) {
  a->bits = get_u64(c);
  want(c, a->bits != 0); /* ids start at 1 */
  a->dir = (uint8_t)get_in(c, 1, COOP_BUF_IN, COOP_BUF_INOUT);
  a->fd = get_u8(c);
  want(c, a->fd < COOP_WIRE_MAX_FDS || a->fd == COOP_WIRE_FD_XFER);
  a->at = get_u64(c);
  a->size = get_u64(c);
  a->off = get_u64(c);
  want(c, a->size != 0 && a->at <= UINT64_MAX - a->size && a->off <= UINT64_MAX - a->size);
}

static void dec_arg(struct cur *c, struct coop_wire_arg *a) {
  a->type = get_u8(c);
  want(c, type_ok(a->type) || a->type == COOP_ARG_DEVBUF || a->type == COOP_ARG_DEVBUF_IO);
  if (a->type == COOP_ARG_DEVBUF_IO) return dec_devbuf_io(c, a);
  if (a->type != COOP_ARG_BUF) {
    a->bits = get_u64(c);
    /* 32-bit values travel zero-extended: one encoding per value, and a
     * sign-extended i32 (a client bug) is caught here, not on the device */
    if (is_32bit(a->type)) want(c, !(a->bits >> 32));
    if (a->type == COOP_ARG_DEVBUF) want(c, a->bits != 0); /* ids start at 1 */
    return;
  }
  a->dir = (uint8_t)get_in(c, 1, COOP_BUF_IN, COOP_BUF_INOUT);
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

/* The loops stop at the first error: a count past its bound is one, and
 * the arrays have only that many entries. */
static void enc_submit(struct enc *e, const struct coop_msg_submit *m) {
  put_submit(e, m);
  for (unsigned i = 0; i < m->nargs && !e->err; i++) enc_arg(e, &m->args[i]);
}

static void dec_submit(struct cur *c, struct coop_msg_submit *m) {
  get_submit(c, m);
  for (unsigned i = 0; i < m->nargs && !c->err; i++) dec_arg(c, &m->args[i]);
}

/* A kernel record: its list, each argument's type and name, its rules. */
static void enc_kernel(struct enc *e, const struct coop_wire_kernel *k) {
  put_kernel(e, k);
  for (unsigned i = 0; i < k->nargs && !e->err; i++) { /* none after a bad count */
    put_u8(e, k->types[i]);
    put_str(e, k->argnames[i], sizeof k->argnames[i]);
    put_u8(e, k->elems[i]);
  }
  put_count(e, k->nrules, COOP_WIRE_MAX_RULES, 1);
  for (unsigned i = 0; i < k->nrules && !e->err; i++) put_str(e, k->rules[i], sizeof k->rules[i]);
}

static void dec_kernel(struct cur *c, struct coop_wire_kernel *k) {
  get_kernel(c, k);
  for (unsigned i = 0; i < k->nargs && !c->err; i++) {
    k->types[i] = get_u8(c);
    want(c, type_ok(k->types[i]));
    get_str(c, k->argnames[i], sizeof k->argnames[i]);
    k->elems[i] = get_u8(c);
    want(c, k->elems[i] <= COOP_WIRE_ELEM_LAST &&
                (k->elems[i] == COOP_WIRE_ELEM_ANY || k->types[i] == COOP_ARG_BUF));
  }
  k->nrules = (uint8_t)get_count(c, COOP_WIRE_MAX_RULES, 1);
  for (unsigned i = 0; i < k->nrules && !c->err; i++) get_str(c, k->rules[i], sizeof k->rules[i]);
}

/* Job 0 unless RUNNING or RESERVED: a free workgroup has no job, and OTHER
 * hides whose it is (the encoder refuses to leak another user's job id). */
static void dec_wg(struct cur *c, struct coop_wire_wg *w) {
  get_wg(c, w);
  if (w->state == COOP_WG_FREE || w->state == COOP_WG_OTHER) want(c, w->job == 0);
}

/* Record lists are validated whole when decoded, so that iterating them
 * later cannot fail: list_<rec> checks n records and says where they lie. */
#define RECORD_LIST(rec, get_rec)                                                          \
  static void list_##rec(struct cur *c, uint32_t n, const uint8_t **recs, uint32_t *len) { \
    struct coop_wire_##rec r;                                                              \
    size_t before = c->n;                                                                  \
    *recs = c->p;                                                                          \
    for (uint32_t i = 0; i < n && !c->err; i++) get_rec(c, &r);                            \
    *len = (uint32_t)(before - c->n);                                                      \
  }
RECORD_LIST(status, get_status)
RECORD_LIST(kernel, dec_kernel)
RECORD_LIST(inst, get_inst)
RECORD_LIST(wg, dec_wg)
RECORD_LIST(topjob, get_topjob)

static void dec_status_reply(struct cur *c, struct coop_msg_status_reply *m) {
  get_status_reply(c, m);
  list_status(c, m->n, &m->recs, &m->recs_len);
}

static void dec_kernel_list(struct cur *c, struct coop_msg_kernel_list *m) {
  get_kernel_list(c, m);
  list_kernel(c, m->n, &m->recs, &m->recs_len);
}

static void enc_top(struct enc *e, const struct coop_msg_top_reply *m) {
  put_count(e, m->nwg, COOP_WIRE_MAX_WG, 4);
  if ((uint64_t)m->nwg * WG_BYTES != m->wgs_len) efail(e, COOP_EINVAL);
  put_mem(e, m->wgs, m->wgs_len);
  put_count(e, m->njobs, COOP_WIRE_MAX_TOPJOBS, 4);
  put_mem(e, m->jobs, m->jobs_len);
}

static void dec_top(struct cur *c, struct coop_msg_top_reply *m) {
  m->nwg = get_count(c, COOP_WIRE_MAX_WG, 4);
  list_wg(c, m->nwg, &m->wgs, &m->wgs_len);
  m->njobs = get_count(c, COOP_WIRE_MAX_TOPJOBS, 4);
  list_topjob(c, m->njobs, &m->jobs, &m->jobs_len);
}

/* RESULT: the list, its instance records (built with coop_wire_inst_put),
 * then the contents of inline OUT buffers. */
static void enc_result(struct enc *e, const struct coop_msg_result *m) {
  if (m->nbuf > COOP_WIRE_MAX_ARGS) efail(e, COOP_ETOOBIG);
  put_result(e, m);
  put_mem(e, m->inst, (size_t)m->ninst * COOP_WIRE_INST_BYTES);
  put_u8(e, m->nbuf);
  for (unsigned i = 0; i < m->nbuf && !e->err; i++) {
    put_u8(e, m->bufs[i].arg);
    put_blob(e, m->bufs[i].data, m->bufs[i].len);
  }
}

static void dec_result(struct cur *c, struct coop_msg_result *m) {
  uint32_t len;
  get_result(c, m);
  list_inst(c, m->ninst, &m->inst, &len);
  m->nbuf = (uint8_t)get_count(c, COOP_WIRE_MAX_ARGS, 1);
  for (unsigned i = 0; i < m->nbuf && !c->err; i++) {
    struct coop_wire_outbuf *o = &m->bufs[i];
    o->arg = (uint8_t)get_in(c, 1, 0, COOP_WIRE_MAX_ARGS - 1);
    get_blob(c, &o->data, &o->len);
    if (o->len > COOP_WIRE_INLINE_MAX) cfail(c, COOP_ETOOBIG);
  }
}

/* STATS_REPLY: the list, the devices, and the tail (version, uptime and
 * the metrics of coopctl metrics) from a daemon that sends it. */
static void enc_stats(struct enc *e, const struct coop_msg_stats_reply *m) {
  put_stats(e, m);
  for (unsigned i = 0; i < m->ndevices && !e->err; i++) put_devinfo(e, &m->devs[i]);
  if (!m->ext) return;
  put_stats_ext(e, m);
  for (unsigned i = 0; i < m->nbounds && !e->err; i++) {
    if (i && m->bound[i] <= m->bound[i - 1]) efail(e, COOP_EINVAL);
    put_i64(e, m->bound[i]);
  }
  for (unsigned i = 0; i < m->ndevices && !e->err; i++) {
    put_devmetrics(e, &m->met[i]);
    for (unsigned k = 0; k <= m->nbounds; k++) put_u64(e, m->met[i].gather_bucket[k]);
    put_deadlines(e, &m->met[i]);
  }
}

static void dec_stats(struct cur *c, struct coop_msg_stats_reply *m) {
  get_stats(c, m);
  for (unsigned i = 0; i < m->ndevices && !c->err; i++) get_devinfo(c, &m->devs[i]);
  m->ext = c->n > 0; /* a daemon before the tail ends here */
  if (!m->ext || c->err) return;
  get_stats_ext(c, m);
  for (unsigned i = 0; i < m->nbounds && !c->err; i++) {
    m->bound[i] = get_i64(c);
    want(c, i == 0 || m->bound[i] > m->bound[i - 1]); /* ascending: buckets are ranges */
  }
  for (unsigned i = 0; i < m->ndevices && !c->err; i++) {
    get_devmetrics(c, &m->met[i]);
    for (unsigned k = 0; k <= m->nbounds; k++) m->met[i].gather_bucket[k] = get_u64(c);
    get_deadlines(c, &m->met[i]);
  }
}

/* ==== device buffers ==== */

/* A descriptor index, or none. */
static void want_fd(struct cur *c, uint8_t fd) {
  want(c, fd < COOP_WIRE_MAX_FDS || fd == COOP_WIRE_FD_NONE);
}

/* Inline bytes: exactly `len` of them (or, where zeros are allowed, none),
 * and none beside a descriptor. */
static void want_bytes(struct cur *c, uint8_t fd, uint64_t len, uint32_t data_len, int none_ok) {
  if (c->err) return;
  if (fd != COOP_WIRE_FD_NONE)
    want(c, data_len == 0);
  else if (data_len > COOP_WIRE_INLINE_MAX)
    cfail(c, COOP_ETOOBIG);
  else
    want(c, data_len == len || (none_ok && data_len == 0));
}

static void enc_buf_create(struct enc *e, const struct coop_msg_buf_create *m) {
  put_buf_create(e, m);
  put_blob(e, m->data, m->data_len);
}

static void dec_buf_create(struct cur *c, struct coop_msg_buf_create *m) {
  get_buf_create(c, m);
  want_fd(c, m->fd);
  want(c, m->size != 0);
  get_blob(c, &m->data, &m->data_len);
  want_bytes(c, m->fd, m->size, m->data_len, 1);
}

static void enc_buf_write(struct enc *e, const struct coop_msg_buf_range *m) {
  put_buf_range(e, m);
  put_blob(e, m->data, m->data_len);
}

static void dec_buf_write(struct cur *c, struct coop_msg_buf_range *m) {
  get_buf_range(c, m);
  want_fd(c, m->fd);
  get_blob(c, &m->data, &m->data_len);
  want_bytes(c, m->fd, m->len, m->data_len, 0);
}

/* READ: inline replies carry at most COOP_WIRE_INLINE_MAX bytes. */
static void dec_buf_read(struct cur *c, struct coop_msg_buf_range *m) {
  get_buf_range(c, m);
  want_fd(c, m->fd);
  if (!c->err && m->fd == COOP_WIRE_FD_NONE && m->len > COOP_WIRE_INLINE_MAX)
    cfail(c, COOP_ETOOBIG);
}

static void enc_buf_data(struct enc *e, const struct coop_msg_buf_data *m) {
  put_blob(e, m->data, m->data_len);
}

static void dec_buf_data(struct cur *c, struct coop_msg_buf_data *m) {
  get_blob(c, &m->data, &m->data_len);
  if (!c->err && m->data_len > COOP_WIRE_INLINE_MAX) cfail(c, COOP_ETOOBIG);
}

/* ==== kernel authors ==== */

static void enc_kernel_add(struct enc *e, const struct coop_msg_kernel_add *m) {
  if (m->source_len > COOP_WIRE_SOURCE_MAX) efail(e, COOP_ETOOBIG);
  put_kernel_add(e, m);
  put_blob(e, m->source, m->source_len);
}

/* The source's bound is checked before its bytes are taken: a length past
 * it is too big, not a short payload. */
static void dec_kernel_add(struct cur *c, struct coop_msg_kernel_add *m) {
  get_kernel_add(c, m);
  m->source_len = get_u32(c);
  if (m->source_len > COOP_WIRE_SOURCE_MAX) cfail(c, COOP_ETOOBIG);
  m->source = take(c, m->source_len);
}

static void enc_kernel_done(struct enc *e, const struct coop_msg_kernel_done *m) {
  if (m->log_len > COOP_WIRE_LOG_MAX) efail(e, COOP_ETOOBIG);
  put_kernel_done(e, m);
  put_blob(e, m->log, m->log_len);
  if (m->has_kernel) enc_kernel(e, &m->kernel);
}

static void dec_kernel_done(struct cur *c, struct coop_msg_kernel_done *m) {
  get_kernel_done(c, m);
  want(c, m->error <= 0);
  m->log_len = get_u32(c);
  if (m->log_len > COOP_WIRE_LOG_MAX) cfail(c, COOP_ETOOBIG);
  m->log = take(c, m->log_len);
  if (m->has_kernel) dec_kernel(c, &m->kernel);
}

/* ==== messages ==== */

/* The list replies: their count, then the records built beforehand. */
static void enc_status_reply(struct enc *e, const struct coop_msg_status_reply *m) {
  put_status_reply(e, m);
  put_mem(e, m->recs, m->recs_len);
}

static void enc_kernel_list(struct enc *e, const struct coop_msg_kernel_list *m) {
  put_kernel_list(e, m);
  put_mem(e, m->recs, m->recs_len);
}

/* The messages with a payload: type, member of union coop_msg, encoder,
 * decoder. */
#define MESSAGES(XX)                                                     \
  XX(HELLO, hello, put_hello, get_hello)                                 \
  XX(WELCOME, welcome, put_welcome, get_welcome)                         \
  XX(SUBMIT, submit, enc_submit, dec_submit)                             \
  XX(ACCEPTED, job, put_job, get_job)                                    \
  XX(STATUS, job, put_job, get_job)                                      \
  XX(CANCEL, job, put_job, get_job)                                      \
  XX(WAIT, job, put_wait, get_wait)                                      \
  XX(SUBSCRIBE, subscribe, put_subscribe, get_subscribe)                 \
  XX(TOP, top_req, put_top, get_top)                                     \
  XX(ERROR, error, put_error, get_error)                                 \
  XX(STATUS_REPLY, status_reply, enc_status_reply, dec_status_reply)     \
  XX(KERNEL_LIST, kernels, enc_kernel_list, dec_kernel_list)             \
  XX(RESULT, result, enc_result, dec_result)                             \
  XX(STATS_REPLY, stats, enc_stats, dec_stats)                           \
  XX(EVENT, event, put_event, get_event)                                 \
  XX(TOP_REPLY, top, enc_top, dec_top)                                   \
  XX(BUF_CREATE, buf_create, enc_buf_create, dec_buf_create)             \
  XX(BUF_WRITE, buf_range, enc_buf_write, dec_buf_write)                 \
  XX(BUF_READ, buf_range, put_buf_range, dec_buf_read)                   \
  XX(BUF_FREE, buf_free, put_buf_free, get_buf_free)                     \
  XX(BUFFER, buffer, put_buffer, get_buffer)                             \
  XX(BUF_DATA, buf_data, enc_buf_data, dec_buf_data)                     \
  XX(KERNEL_ADD, kernel_add, enc_kernel_add, dec_kernel_add)             \
  XX(KERNEL_REMOVE, kernel_remove, put_kernel_remove, get_kernel_remove) \
  XX(KERNEL_DONE, kernel_done, enc_kernel_done, dec_kernel_done)         \
  XX(MIGRATE, migrate, put_migrate, get_migrate)

static int empty(uint16_t type) {
  return type == COOP_MSG_STATS || type == COOP_MSG_KERNELS || type == COOP_MSG_OK ||
         type == COOP_MSG_RELOAD || type == COOP_MSG_RING_OPEN || type == COOP_MSG_RING_BELL ||
         type == COOP_MSG_RING_WAKE || type == COOP_MSG_XFER;
}

/* 0 when encoded (errors are in e->err), COOP_EINVAL for an unknown type. */
static int enc_payload(struct enc *e, uint16_t type, const union coop_msg *m) {
  if (empty(type)) return 0;
  if (type == COOP_MSG_TOP && !m) /* without a message: device 0 */
    return put_top(e, &(struct coop_msg_top){0}), 0;
  if (!m) return COOP_EINVAL;
#define ENC_CASE(name, member, enc, dec) \
  case COOP_MSG_##name:                  \
    return enc(e, &m->member), 0;
  switch (type) { MESSAGES(ENC_CASE) }
#undef ENC_CASE
  return COOP_EINVAL;
}

/* 0 for an unknown type; otherwise 1, with errors in c->err. */
static int dec_payload(struct cur *c, uint16_t type, union coop_msg *m) {
  if (empty(type)) return 1; /* any byte is trailing */
#define DEC_CASE(name, member, enc, dec) \
  case COOP_MSG_##name:                  \
    return dec(c, &m->member), 1;
  switch (type) { MESSAGES(DEC_CASE) }
#undef DEC_CASE
  return 0;
}

/* ==== frames ==== */

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

void coop_wire_set_seq(uint8_t *f, uint32_t seq) {
  for (unsigned i = 0; i < 4; i++) f[8 + i] = (uint8_t)(seq >> (8 * (3 - i)));
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

/* The bytes of a message of this type: its member of the union. A small
 * task's messages each zeroed all 15 KB (STATS_REPLY's size) twice, at
 * the decode and at the encoder's own check: nine times a round trip,
 * most of them on its path. An empty or unknown type's handler reads no
 * member; a job's few bytes are zeroed anyway. */
static size_t member_bytes(uint16_t type) {
#define SIZE_CASE(name, member, enc, dec) \
  case COOP_MSG_##name:                   \
    return sizeof(((union coop_msg *)0)->member);
  switch (type) { MESSAGES(SIZE_CASE) }
#undef SIZE_CASE
  return sizeof(struct coop_msg_job);
}

int coop_wire_decode(const struct coop_wire_hdr *h, const uint8_t *payload, union coop_msg *m) {
  if (h->len > COOP_WIRE_MAX_PAYLOAD) return COOP_ETOOBIG;
  if (h->len && !payload) return COOP_EINVAL;
  struct cur c = {payload, h->len, 0};
  /* fields that are not on the wire (a scalar's dir...) read as zero, so a
   * decoded message re-encodes to the same bytes; the union's other bytes
   * are left as they were (only the type's member is the message) */
  memset(m, 0, member_bytes(h->type));
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

#define RECORD_PUT(rec, put_rec, get_rec)                                                  \
  int coop_wire_##rec##_put(struct coop_wire_buf *recs, const struct coop_wire_##rec *m) { \
    struct enc e;                                                                          \
    size_t mark = recs->len;                                                               \
    if (rec_begin(recs, &e)) return recs->err;                                             \
    put_rec(&e, m);                                                                        \
    struct cur c = rec_cur(recs, mark, e.err);                                             \
    struct coop_wire_##rec chk;                                                            \
    get_rec(&c, &chk);                                                                     \
    return enc_end(recs, mark, as_caller_error(c.err));                                    \
  }
RECORD_PUT(status, put_status, get_status)
RECORD_PUT(kernel, enc_kernel, dec_kernel)
RECORD_PUT(inst, put_inst, get_inst)
RECORD_PUT(wg, put_wg, dec_wg)
RECORD_PUT(topjob, put_topjob, get_topjob)

/* The record at *off of a list the decoder validated, *off moved past it. */
#define RECORD_NEXT(rec, get_rec, reply, field)                                                 \
  int coop_wire_##rec##_next(const struct reply *r, uint32_t *off, struct coop_wire_##rec *m) { \
    if (*off >= r->field##_len) return COOP_EPROTO;                                             \
    struct cur c = {r->field + *off, r->field##_len - *off, 0};                                 \
    get_rec(&c, m);                                                                             \
    if (!c.err) *off = r->field##_len - (uint32_t)c.n;                                          \
    return c.err;                                                                               \
  }
RECORD_NEXT(status, get_status, coop_msg_status_reply, recs)
RECORD_NEXT(kernel, dec_kernel, coop_msg_kernel_list, recs)
RECORD_NEXT(wg, dec_wg, coop_msg_top_reply, wgs)
RECORD_NEXT(topjob, get_topjob, coop_msg_top_reply, jobs)

int coop_wire_inst_get(const struct coop_msg_result *r, uint32_t i, struct coop_wire_inst *out) {
  if (i >= r->ninst || !r->inst) return COOP_EPROTO;
  struct cur c = {r->inst + (size_t)i * COOP_WIRE_INST_BYTES, COOP_WIRE_INST_BYTES, 0};
  get_inst(&c, out);
  return c.err;
}

/* ==== names ==== */

const char *coop_wire_type_name(uint16_t type) {
  static const char *const req[] = {
      "?",          "HELLO",         "SUBMIT", "STATUS",     "WAIT",      "CANCEL",    "STATS",
      "KERNELS",    "SUBSCRIBE",     "TOP",    "BUF_CREATE", "BUF_WRITE", "BUF_READ",  "BUF_FREE",
      "KERNEL_ADD", "KERNEL_REMOVE", "RELOAD", "MIGRATE",    "RING_OPEN", "RING_BELL", "XFER"};
  static const char *const rep[] = {"WELCOME",   "ACCEPTED",    "STATUS_REPLY", "RESULT",
                                    "OK",        "STATS_REPLY", "KERNEL_LIST",  "EVENT",
                                    "TOP_REPLY", "BUFFER",      "BUF_DATA",     "KERNEL_DONE",
                                    "RING_WAKE"};
  if (type >= COOP_MSG_HELLO && type <= COOP_MSG_XFER) return req[type];
  if (type >= COOP_MSG_WELCOME && type <= COOP_MSG_RING_WAKE) return rep[type - COOP_MSG_WELCOME];
  return type == COOP_MSG_ERROR ? "ERROR" : "UNKNOWN";
}

const char *coop_job_state_name(uint8_t state) {
  static const char *const n[] = {"?",         "queued",  "running", "done",
                                  "cancelled", "refused", "failed"};
  return state_ok(state) ? n[state] : "unknown";
}

const char *coop_arg_type_name(uint8_t type) {
  static const char *const n[] = {"?",   "u32", "i32", "u64",    "i64",
                                  "f32", "f64", "buf", "devbuf", "devbuf_io"};
  return type_ok(type) || type == COOP_ARG_DEVBUF || type == COOP_ARG_DEVBUF_IO ? n[type]
                                                                                : "unknown";
}

static const char *const elem_names[] = {"",    "u8",  "i8",  "u16", "i16", "u32",
                                         "i32", "u64", "i64", "f32", "f64"};

const char *coop_elem_type_name(uint8_t elem) {
  return elem <= COOP_WIRE_ELEM_LAST ? elem_names[elem] : "unknown";
}

int coop_elem_type_of(const char *name) {
  for (int e = 1; e <= (int)COOP_WIRE_ELEM_LAST; e++)
    if (!strcmp(name, elem_names[e])) return e;
  return -1;
}

/* ==== frame reader ==== */

void coop_wire_reader_init(struct coop_wire_reader *r) { memset(r, 0, sizeof *r); }

static void close_fd(const struct coop_wire_reader *r, int fd) {
  if (r->close_fd)
    r->close_fd(fd, r->close_arg);
  else
    close(fd);
}

static void close_fds(const struct coop_wire_reader *r, const int *fds, unsigned n) {
  for (unsigned i = 0; i < n; i++) close_fd(r, fds[i]);
}

void coop_wire_reader_free(struct coop_wire_reader *r) {
  close_fds(r, r->fds, r->nfds);
  free(r->buf);
  void (*hook)(int, void *) = r->close_fd;
  void *arg = r->close_arg;
  coop_wire_reader_init(r);
  r->close_fd = hook, r->close_arg = arg;
}

/* Records a failure for good; the descriptors of the failed call are closed
 * because the caller handed them over. */
static int rfail(struct coop_wire_reader *r, int err, const int *fds, unsigned nfds) {
  close_fds(r, fds, nfds);
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
      close_fd(r, r->fds[i]);
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

static long recv_flags(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds, int flags) {
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
  do k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
  while (k < 0 && errno == EINTR);
  if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? COOP_ETIMEDOUT : sock_error(errno);
  if (msg.msg_control) take_fds(&msg, fds, nfds);
  return (long)k;
}

long coop_wire_recv(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds) {
  return recv_flags(sock, buf, cap, fds, nfds, 0);
}

long coop_wire_try_recv(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds) {
  return recv_flags(sock, buf, cap, fds, nfds, MSG_DONTWAIT);
}
