/*
 * test_wire.c: the wire codec (protocol/wire.h): every message round-trips
 * with boundary values, the decoder refuses each malformed input with the
 * documented code, truncations never decode, the reader rebuilds frames from
 * any chunking, and descriptors reach the frame they were sent with.
 * Payloads under test are copied into exact-size heap blocks so that
 * AddressSanitizer sees any read past them.
 */
#define _GNU_SOURCE /* memfd_create */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wire.h"
#include "wire_types.h"
#include "check_run.h"
#include "xorshift.h"

/* ---- helpers ---- */

static const uint16_t all_types[] = COOP_TEST_MSG_TYPES;
#define NTYPES (sizeof all_types / sizeof all_types[0])

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return coop_xorshift64(&rng_state); }

/* Fills a string field to its longest legal length. */
static void fill(char *dst, size_t max, char c) {
  memset(dst, c, max - 1);
  dst[max - 1] = '\0';
}

static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Storage behind the pointers of the sample messages. */
struct store {
  struct coop_wire_buf status, kernels, inst, wgs, topjobs;
  uint8_t out[COOP_WIRE_INLINE_MAX];
};

static void store_free(struct store *s) {
  coop_wire_buf_free(&s->status);
  coop_wire_buf_free(&s->kernels);
  coop_wire_buf_free(&s->inst);
  coop_wire_buf_free(&s->wgs);
  coop_wire_buf_free(&s->topjobs);
}

static struct coop_wire_arg buf_arg(uint8_t dir, uint8_t fd, uint64_t size, const void *data,
                                    uint32_t len) {
  return (struct coop_wire_arg){
      .type = COOP_ARG_BUF, .dir = dir, .fd = fd, .size = size, .data = data, .data_len = len};
}

static void sample_submit(struct coop_msg_submit *s) {
  fill(s->kernel, sizeof s->kernel, 'k');
  s->flags = COOP_SUBMIT_FLAGS_ALL;
  s->groups = 1;
  s->period_us = 1000;
  s->count = UINT32_MAX;
  s->deadline_us = 500;
  s->device = COOP_WIRE_ANY_DEVICE;
  s->nargs = COOP_WIRE_MAX_ARGS;
  const uint64_t scalars[][2] = {
      {COOP_ARG_U32, UINT32_MAX},     {COOP_ARG_I32, (uint32_t)-5},
      {COOP_ARG_U64, UINT64_MAX},     {COOP_ARG_I64, (uint64_t)INT64_MIN},
      {COOP_ARG_F32, f32_bits(1.5f)}, {COOP_ARG_F64, f64_bits(-3.25)}};
  for (unsigned i = 0; i < 6; i++)
    s->args[i] = (struct coop_wire_arg){.type = (uint8_t)scalars[i][0], .bits = scalars[i][1]};
  s->args[6] = buf_arg(COOP_BUF_IN, COOP_WIRE_FD_NONE, 3, "abc", 3);
  s->args[7] = buf_arg(COOP_BUF_INOUT, COOP_WIRE_FD_NONE, 0, NULL, 0);
  s->args[8] = buf_arg(COOP_BUF_OUT, COOP_WIRE_FD_NONE, COOP_WIRE_INLINE_MAX, NULL, 0);
  s->args[9] = buf_arg(COOP_BUF_IN, 0, 4096, NULL, 0);
  s->args[10] = buf_arg(COOP_BUF_OUT, COOP_WIRE_MAX_FDS - 1, UINT64_MAX, NULL, 0);
  s->args[11] = buf_arg(COOP_BUF_INOUT, 1, 8, NULL, 0);
  for (unsigned i = 12; i < COOP_WIRE_MAX_ARGS; i++)
    s->args[i] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = i};
}

static void sample_status_reply(struct coop_msg_status_reply *r, struct coop_wire_buf *b) {
  struct coop_wire_status s = {
      .job = UINT64_MAX, .state = COOP_JOB_FAILED, .flags = COOP_SUBMIT_FLAGS_ALL};
  fill(s.kernel, sizeof s.kernel, 's');
  s.groups = s.uid = s.pid = s.instances_done = s.misses = UINT32_MAX;
  ck_assert_int_eq(coop_wire_status_put(b, &s), 0);
  struct coop_wire_status t = {.job = 7, .state = COOP_JOB_QUEUED, .kernel = "ids", .groups = 2};
  ck_assert_int_eq(coop_wire_status_put(b, &t), 0);
  struct coop_wire_status u = {.job = 0, .state = COOP_JOB_RUNNING, .flags = 1, .misses = 1};
  ck_assert_int_eq(coop_wire_status_put(b, &u), 0);
  *r = (struct coop_msg_status_reply){3, b->p, (uint32_t)b->len};
}

static void sample_kernel_list(struct coop_msg_kernel_list *r, struct coop_wire_buf *b) {
  struct coop_wire_kernel k = {.cooperative = 1, .nargs = COOP_WIRE_MAX_ARGS};
  fill(k.name, sizeof k.name, 'n');
  for (unsigned i = 0; i < COOP_WIRE_MAX_ARGS; i++) k.types[i] = (uint8_t)(1 + i % 7);
  ck_assert_int_eq(coop_wire_kernel_put(b, &k), 0);
  struct coop_wire_kernel e = {.name = "", .cooperative = 0, .nargs = 0};
  ck_assert_int_eq(coop_wire_kernel_put(b, &e), 0);
  *r = (struct coop_msg_kernel_list){2, b->p, (uint32_t)b->len};
}

/* Every workgroup state, job ids at their edges; a job of each kind. */
static void sample_top_reply(struct coop_msg_top_reply *r, struct store *st) {
  const struct coop_wire_wg w[] = {
      {COOP_WG_RUNNING, UINT64_MAX}, {COOP_WG_RESERVED, 1}, {COOP_WG_OTHER, 0}, {COOP_WG_FREE, 0},
      {COOP_WG_RUNNING, 0},          {COOP_WG_RESERVED, 0}};
  for (unsigned i = 0; i < 6; i++) ck_assert_int_eq(coop_wire_wg_put(&st->wgs, &w[i]), 0);
  struct coop_wire_topjob j = {.job = UINT64_MAX, .cooperative = 1};
  fill(j.kernel, sizeof j.kernel, 't');
  j.groups = j.m = j.workers = j.kills = j.forks = UINT32_MAX;
  ck_assert_int_eq(coop_wire_topjob_put(&st->topjobs, &j), 0);
  struct coop_wire_topjob k = {.job = 1, .kernel = "", .groups = 4, .m = 4, .workers = 0};
  ck_assert_int_eq(coop_wire_topjob_put(&st->topjobs, &k), 0);
  *r = (struct coop_msg_top_reply){6, st->wgs.p,     (uint32_t)st->wgs.len,
                                   2, st->topjobs.p, (uint32_t)st->topjobs.len};
}

static const struct coop_wire_times edge_times = {INT64_MIN, -1, 0, 1, INT64_MAX, -1, 123456789};

static void sample_result(struct coop_msg_result *r, struct store *st) {
  r->job = 42;
  r->state = COOP_JOB_DONE;
  r->device = 7;
  r->error = COOP_EFAILED;
  fill(r->message, sizeof r->message, 'm');
  r->t = edge_times;
  r->m_initial = 1, r->m_min = 2, r->m_max = 3, r->kills = 4, r->forks = 5, r->resizes = 6;
  r->instances = UINT32_MAX, r->misses = 9;
  for (unsigned i = 0; i < 3; i++) {
    struct coop_wire_inst in = {.state = (uint8_t)(COOP_JOB_DONE + i), .t = edge_times};
    in.t.exec_ns = i;
    ck_assert_int_eq(coop_wire_inst_put(&st->inst, &in), 0);
  }
  r->ninst = 3;
  r->inst = st->inst.p;
  for (size_t i = 0; i < sizeof st->out; i++) st->out[i] = (uint8_t)(i * 7);
  r->nbuf = 3;
  r->bufs[0] = (struct coop_wire_outbuf){0, (const uint8_t *)"xyz", 3};
  r->bufs[1] = (struct coop_wire_outbuf){15, NULL, 0};
  r->bufs[2] = (struct coop_wire_outbuf){8, st->out, 1000};
}

static void sample_misc(uint16_t type, union coop_msg *m) {
  switch (type) {
    case COOP_MSG_HELLO:
      m->hello.min_version = 0, m->hello.max_version = UINT16_MAX;
      fill(m->hello.name, sizeof m->hello.name, 'h');
      return;
    case COOP_MSG_WELCOME:
      m->welcome = (struct coop_msg_welcome){1,        "0.1.0",  "",   "", UINT32_MAX, 7,
                                             4u << 20, 1u << 18, 1000, 0,  8};
      fill(m->welcome.backend, sizeof m->welcome.backend, 'b');
      fill(m->welcome.device, sizeof m->welcome.device, 'd');
      return;
    case COOP_MSG_STATUS:
    case COOP_MSG_CANCEL:
      m->job.job = 0;
      return;
    case COOP_MSG_ACCEPTED:
      m->job.job = 0x0102030405060708u;
      return;
    case COOP_MSG_WAIT:
      m->job = (struct coop_msg_job){UINT64_MAX, COOP_WAIT_FOREVER};
      return;
    case COOP_MSG_SUBSCRIBE:
      m->subscribe.mask = COOP_EV_ALL;
      return;
    case COOP_MSG_ERROR:
      m->error.code = COOP_EVERSION;
      fill(m->error.message, sizeof m->error.message, 'e');
      return;
    case COOP_MSG_EVENT:
      m->event = (struct coop_msg_event){UINT64_MAX, COOP_EV_FINISHED, COOP_JOB_CANCELLED,
                                         UINT32_MAX, INT64_MAX,        -1};
      return;
  }
}

static void sample_stats(struct coop_msg_stats_reply *s) {
  fill(s->backend, sizeof s->backend, 'B');
  fill(s->device, sizeof s->device, 'D');
  s->compute_units = 2, s->workers = 4, s->clients = 0, s->queued = UINT32_MAX, s->running = 1;
  s->submitted = UINT64_MAX, s->done = 1, s->cancelled = 2, s->refused = 3, s->failed = 4;
  s->samples = 0;
  s->gather_p50 = s->gather_p90 = s->gather_p99 = -1;
  s->gather_max = INT64_MIN;
  fill(s->backend_note, sizeof s->backend_note, 'N');
  s->gather_timeouts = UINT32_MAX, s->hung = 7, s->lost_workers = 1;
  fill(s->watchdog, sizeof s->watchdog, 'W');
  s->ndevices = COOP_WIRE_MAX_DEVICES;
  for (unsigned i = 0; i < COOP_WIRE_MAX_DEVICES; i++) {
    fill(s->devs[i].device, sizeof s->devs[i].device, (char)('a' + i));
    fill(s->devs[i].backend, sizeof s->devs[i].backend, 'b');
    s->devs[i].compute_units = i, s->devs[i].workers = UINT32_MAX, s->devs[i].jobs = 3;
    s->devs[i].lost_workers = 1;
  }
  s->ext = 1;
  fill(s->daemon_version, sizeof s->daemon_version, 'V');
  s->uptime_ns = UINT64_MAX;
  s->nbounds = COOP_WIRE_MAX_BOUNDS;
  for (unsigned i = 0; i < COOP_WIRE_MAX_BOUNDS; i++) s->bound[i] = i ? INT64_MAX - 40 + i : -1;
  for (unsigned i = 0; i < COOP_WIRE_MAX_DEVICES; i++) {
    struct coop_wire_devmetrics *d = &s->met[i];
    d->busy_workers = UINT32_MAX, d->arena_bytes = UINT64_MAX, d->arena_used = i;
    d->gather_sum_ns = INT64_MIN + i, d->deadline_instances = 9, d->deadline_misses = UINT64_MAX;
    for (unsigned k = 0; k <= COOP_WIRE_MAX_BOUNDS; k++) d->gather_bucket[k] = k * i;
  }
}

/* A message of `type` with boundary values in every field. */
static void sample(uint16_t type, union coop_msg *m, struct store *st) {
  memset(m, 0, sizeof *m);
  if (type == COOP_MSG_SUBMIT)
    sample_submit(&m->submit);
  else if (type == COOP_MSG_STATUS_REPLY)
    sample_status_reply(&m->status_reply, &st->status);
  else if (type == COOP_MSG_KERNEL_LIST)
    sample_kernel_list(&m->kernels, &st->kernels);
  else if (type == COOP_MSG_RESULT)
    sample_result(&m->result, st);
  else if (type == COOP_MSG_STATS_REPLY)
    sample_stats(&m->stats);
  else if (type == COOP_MSG_TOP_REPLY)
    sample_top_reply(&m->top, st);
  else
    sample_misc(type, m);
}

static void encode_ok(struct coop_wire_buf *b, uint16_t type, uint32_t seq,
                      const union coop_msg *m) {
  int r = coop_wire_encode(b, type, seq, m);
  ck_assert_msg(r == 0, "encode %s: %s", coop_wire_type_name(type), coop_strerror(r));
}

/* Decodes n bytes as a payload of `type` from an exact-size copy. */
static int decode_raw(uint16_t type, const uint8_t *p, size_t n, union coop_msg *m,
                      uint8_t **keep) {
  uint8_t *copy = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(copy);
  if (n) memcpy(copy, p, n);
  struct coop_wire_hdr h = {COOP_WIRE_VERSION, type, 0, (uint32_t)n};
  int r = coop_wire_decode(&h, copy, m);
  if (keep)
    *keep = copy; /* the decoded pointers point into it */
  else
    free(copy);
  return r;
}

/* ---- a payload builder for hand-made (mostly malformed) input ---- */

struct pb {
  uint8_t *b;
  size_t n, cap;
};

static void pb_mem(struct pb *p, const void *s, size_t n) {
  if (p->n + n > p->cap) {
    p->cap = (p->n + n) * 2 + 64;
    p->b = realloc(p->b, p->cap);
    ck_assert_ptr_nonnull(p->b);
  }
  if (n) memcpy(p->b + p->n, s, n);
  p->n += n;
}

static void pb_be(struct pb *p, uint64_t v, unsigned w) {
  uint8_t d[8];
  for (unsigned i = 0; i < w; i++) d[i] = (uint8_t)(v >> (8 * (w - 1 - i)));
  pb_mem(p, d, w);
}

static void pb_str(struct pb *p, const char *s, size_t n) {
  pb_be(p, n, 2);
  pb_mem(p, s, n);
}

/* n copies of c as a str field */
static void pb_rep(struct pb *p, char c, size_t n) {
  char *s = malloc(n + 1);
  memset(s, c, n);
  pb_str(p, s, n);
  free(s);
}

/* Decodes the built payload as `type`, frees it, returns the code. */
static int pb_decode(struct pb *p, uint16_t type) {
  union coop_msg m;
  int r = decode_raw(type, p->b, p->n, &m, NULL);
  free(p->b);
  *p = (struct pb){0};
  return r;
}

/* ---- round trips ---- */

/* Expressions (check's asserts are statements), so a line can hold several. */
static void chk(int same, const char *field) { ck_assert_msg(same, "field %s differs", field); }
static void chk_str(const char *a, const char *b, const char *field) {
  ck_assert_msg(!strcmp(a, b), "field %s differs: \"%s\" vs \"%s\"", field, a, b);
}
#define EQ(a, b, f) chk((a)->f == (b)->f, #f)
#define SEQ(a, b, f) chk_str((a)->f, (b)->f, #f)

static void eq_times(const struct coop_wire_times *a, const struct coop_wire_times *b) {
  EQ(a, b, submitted), EQ(a, b, released), EQ(a, b, gathered), EQ(a, b, started);
  EQ(a, b, finished), EQ(a, b, gather_ns), EQ(a, b, exec_ns);
}

static void eq_mem(const uint8_t *a, const uint8_t *b, size_t n) {
  if (n) ck_assert_mem_eq(a, b, n);
}

static void eq_submit(const struct coop_msg_submit *a, const struct coop_msg_submit *b) {
  SEQ(a, b, kernel), EQ(a, b, flags), EQ(a, b, groups), EQ(a, b, period_us);
  EQ(a, b, count), EQ(a, b, duration_ms), EQ(a, b, deadline_us), EQ(a, b, nargs);
  EQ(a, b, device);
  for (unsigned i = 0; i < a->nargs; i++) {
    const struct coop_wire_arg *x = &a->args[i], *y = &b->args[i];
    EQ(x, y, type), EQ(x, y, bits), EQ(x, y, dir), EQ(x, y, fd), EQ(x, y, size);
    EQ(x, y, data_len);
    eq_mem(x->data, y->data, x->data_len);
  }
}

static void eq_result(const struct coop_msg_result *a, const struct coop_msg_result *b) {
  EQ(a, b, job), EQ(a, b, state), EQ(a, b, device), EQ(a, b, error), SEQ(a, b, message);
  eq_times(&a->t, &b->t);
  EQ(a, b, m_initial), EQ(a, b, m_min), EQ(a, b, m_max), EQ(a, b, kills), EQ(a, b, forks);
  EQ(a, b, resizes), EQ(a, b, instances), EQ(a, b, misses), EQ(a, b, ninst), EQ(a, b, nbuf);
  eq_mem(a->inst, b->inst, (size_t)a->ninst * COOP_WIRE_INST_BYTES);
  for (unsigned i = 0; i < a->nbuf; i++) {
    EQ(&a->bufs[i], &b->bufs[i], arg), EQ(&a->bufs[i], &b->bufs[i], len);
    eq_mem(a->bufs[i].data, b->bufs[i].data, a->bufs[i].len);
  }
}

static void eq_stats(const struct coop_msg_stats_reply *a, const struct coop_msg_stats_reply *b) {
  SEQ(a, b, backend), SEQ(a, b, device), EQ(a, b, compute_units), EQ(a, b, workers);
  EQ(a, b, clients), EQ(a, b, queued), EQ(a, b, running), EQ(a, b, submitted), EQ(a, b, done);
  EQ(a, b, cancelled), EQ(a, b, refused), EQ(a, b, failed), EQ(a, b, samples);
  EQ(a, b, gather_p50), EQ(a, b, gather_p90), EQ(a, b, gather_p99), EQ(a, b, gather_max);
  SEQ(a, b, backend_note), EQ(a, b, gather_timeouts), EQ(a, b, hung), EQ(a, b, lost_workers);
  SEQ(a, b, watchdog), EQ(a, b, ndevices);
  for (unsigned i = 0; i < a->ndevices; i++) {
    SEQ(&a->devs[i], &b->devs[i], device), SEQ(&a->devs[i], &b->devs[i], backend);
    EQ(&a->devs[i], &b->devs[i], compute_units), EQ(&a->devs[i], &b->devs[i], workers);
    EQ(&a->devs[i], &b->devs[i], lost_workers), EQ(&a->devs[i], &b->devs[i], jobs);
  }
  EQ(a, b, ext), SEQ(a, b, daemon_version), EQ(a, b, uptime_ns), EQ(a, b, nbounds);
  for (unsigned i = 0; i < a->nbounds; i++) EQ(a, b, bound[i]);
  for (unsigned i = 0; i < a->ndevices; i++) {
    const struct coop_wire_devmetrics *x = &a->met[i], *y = &b->met[i];
    EQ(x, y, busy_workers), EQ(x, y, arena_bytes), EQ(x, y, arena_used);
    EQ(x, y, gather_sum_ns), EQ(x, y, deadline_instances), EQ(x, y, deadline_misses);
    for (unsigned k = 0; k <= a->nbounds; k++) EQ(x, y, gather_bucket[k]);
  }
}

static void eq_welcome(const struct coop_msg_welcome *a, const struct coop_msg_welcome *b) {
  EQ(a, b, version), SEQ(a, b, daemon_version), SEQ(a, b, backend), SEQ(a, b, device);
  EQ(a, b, compute_units), EQ(a, b, workers), EQ(a, b, max_payload), EQ(a, b, inline_max);
  EQ(a, b, uid), EQ(a, b, pid), EQ(a, b, ndevices);
}

/* Every field of a decoded message equals the original's. */
static void eq_msg(uint16_t type, const union coop_msg *a, const union coop_msg *b) {
  switch (type) {
    case COOP_MSG_HELLO:
      EQ(&a->hello, &b->hello, min_version), EQ(&a->hello, &b->hello, max_version);
      SEQ(&a->hello, &b->hello, name);
      return;
    case COOP_MSG_WELCOME:
      eq_welcome(&a->welcome, &b->welcome);
      return;
    case COOP_MSG_SUBMIT:
      eq_submit(&a->submit, &b->submit);
      return;
    case COOP_MSG_ACCEPTED:
    case COOP_MSG_STATUS:
    case COOP_MSG_CANCEL:
    case COOP_MSG_WAIT:
      EQ(&a->job, &b->job, job), EQ(&a->job, &b->job, timeout_ms);
      return;
    case COOP_MSG_SUBSCRIBE:
      EQ(&a->subscribe, &b->subscribe, mask);
      return;
    case COOP_MSG_ERROR:
      EQ(&a->error, &b->error, code), SEQ(&a->error, &b->error, message);
      return;
    case COOP_MSG_STATUS_REPLY:
      EQ(&a->status_reply, &b->status_reply, n), EQ(&a->status_reply, &b->status_reply, recs_len);
      eq_mem(a->status_reply.recs, b->status_reply.recs, a->status_reply.recs_len);
      return;
    case COOP_MSG_KERNEL_LIST:
      EQ(&a->kernels, &b->kernels, n), EQ(&a->kernels, &b->kernels, recs_len);
      eq_mem(a->kernels.recs, b->kernels.recs, a->kernels.recs_len);
      return;
    case COOP_MSG_RESULT:
      eq_result(&a->result, &b->result);
      return;
    case COOP_MSG_STATS_REPLY:
      eq_stats(&a->stats, &b->stats);
      return;
    case COOP_MSG_EVENT:
      EQ(&a->event, &b->event, job), EQ(&a->event, &b->event, kind);
      EQ(&a->event, &b->event, state), EQ(&a->event, &b->event, instance);
      EQ(&a->event, &b->event, t_ns), EQ(&a->event, &b->event, gather_ns);
      return;
    case COOP_MSG_TOP_REPLY:
      EQ(&a->top, &b->top, nwg), EQ(&a->top, &b->top, wgs_len);
      EQ(&a->top, &b->top, njobs), EQ(&a->top, &b->top, jobs_len);
      eq_mem(a->top.wgs, b->top.wgs, a->top.wgs_len);
      eq_mem(a->top.jobs, b->top.jobs, a->top.jobs_len);
      return;
  }
}

START_TEST(round_trip_every_type) {
  for (size_t i = 0; i < NTYPES; i++) {
    uint16_t type = all_types[i];
    struct store *st = calloc(1, sizeof *st);
    union coop_msg m, d;
    struct coop_wire_buf a, b;
    coop_wire_buf_init(&a), coop_wire_buf_init(&b);
    sample(type, &m, st);
    encode_ok(&a, type, 0xfffffff0u + (uint32_t)i, &m);
    struct coop_wire_hdr h;
    ck_assert_int_eq(coop_wire_hdr_decode(a.p, &h), 0);
    ck_assert_uint_eq(h.version, COOP_WIRE_VERSION);
    ck_assert_uint_eq(h.type, type);
    ck_assert_uint_eq(h.seq, (uint32_t)(0xfffffff0u + i)); /* wraps to 0 */
    ck_assert_uint_eq(h.len + COOP_WIRE_HDR, a.len);
    uint8_t *keep;
    int r = decode_raw(type, a.p + COOP_WIRE_HDR, h.len, &d, &keep);
    ck_assert_msg(r == 0, "decode %s: %s", coop_wire_type_name(type), coop_strerror(r));
    eq_msg(type, &m, &d);
    encode_ok(&b, type, h.seq, &d);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_mem_eq(a.p, b.p, a.len);
    free(keep);
    coop_wire_buf_free(&a), coop_wire_buf_free(&b);
    store_free(st);
    free(st);
  }
}
END_TEST

START_TEST(empty_payloads_are_headers_only) {
  const uint16_t empty[] = {COOP_MSG_STATS, COOP_MSG_KERNELS, COOP_MSG_OK};
  for (unsigned i = 0; i < 3; i++) {
    struct coop_wire_buf b;
    coop_wire_buf_init(&b);
    encode_ok(&b, empty[i], 5, NULL);
    ck_assert_uint_eq(b.len, COOP_WIRE_HDR);
    union coop_msg m;
    ck_assert_int_eq(decode_raw(empty[i], NULL, 0, &m, NULL), 0);
    coop_wire_buf_free(&b);
  }
}
END_TEST

/* The worked example of PROTOCOL.md, byte for byte. */
START_TEST(hello_bytes) {
  union coop_msg m = {.hello = {8, 8, "coopctl"}};
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_HELLO, 1, &m);
  const uint8_t want[] = {0x43, 0x4f, 0x4f, 0x50, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00,
                          0x00, 0x01, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x08, 0x00, 0x08,
                          0x00, 0x07, 'c',  'o',  'o',  'p',  'c',  't',  'l'};
  ck_assert_uint_eq(b.len, sizeof want);
  ck_assert_mem_eq(b.p, want, sizeof want);
  coop_wire_buf_free(&b);
}
END_TEST

/* Big-endian and two's complement, checked on the bytes. */
START_TEST(event_bytes) {
  union coop_msg m = {.event = {0x0102030405060708u, COOP_EV_GATHERED, COOP_JOB_RUNNING,
                                0x0a0b0c0du, -2, INT64_MIN}};
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_EVENT, 0, &m);
  const uint8_t want[] = {1,    2,    3,    4,  5,    6,    7,    8,    2,    2,
                          10,   11,   12,   13, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                          0xff, 0xfe, 0x80, 0,  0,    0,    0,    0,    0,    0};
  ck_assert_uint_eq(b.len, COOP_WIRE_HDR + sizeof want);
  ck_assert_mem_eq(b.p + COOP_WIRE_HDR, want, sizeof want);
  coop_wire_buf_free(&b);
}
END_TEST

START_TEST(records_iterate) {
  struct store *st = calloc(1, sizeof *st);
  union coop_msg m, d;
  sample(COOP_MSG_STATUS_REPLY, &m, st);
  uint8_t *keep;
  ck_assert_int_eq(decode_raw(COOP_MSG_STATUS_REPLY, NULL, 0, &d, NULL), COOP_EPROTO);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_STATUS_REPLY, 1, &m);
  ck_assert_int_eq(decode_raw(COOP_MSG_STATUS_REPLY, b.p + 16, b.len - 16, &d, &keep), 0);
  uint32_t off = 0;
  struct coop_wire_status s;
  ck_assert_int_eq(coop_wire_status_next(&d.status_reply, &off, &s), 0);
  ck_assert_uint_eq(s.job, UINT64_MAX);
  ck_assert_uint_eq(strlen(s.kernel), COOP_WIRE_NAME_MAX - 1);
  ck_assert_uint_eq(s.misses, UINT32_MAX);
  ck_assert_int_eq(coop_wire_status_next(&d.status_reply, &off, &s), 0);
  ck_assert_str_eq(s.kernel, "ids");
  ck_assert_uint_eq(s.groups, 2);
  ck_assert_int_eq(coop_wire_status_next(&d.status_reply, &off, &s), 0);
  ck_assert_uint_eq(s.state, COOP_JOB_RUNNING);
  ck_assert_uint_eq(off, d.status_reply.recs_len);
  ck_assert_int_eq(coop_wire_status_next(&d.status_reply, &off, &s), COOP_EPROTO);
  free(keep);
  coop_wire_buf_free(&b);

  coop_wire_buf_init(&b);
  sample(COOP_MSG_KERNEL_LIST, &m, st);
  encode_ok(&b, COOP_MSG_KERNEL_LIST, 1, &m);
  ck_assert_int_eq(decode_raw(COOP_MSG_KERNEL_LIST, b.p + 16, b.len - 16, &d, &keep), 0);
  struct coop_wire_kernel k;
  off = 0;
  ck_assert_int_eq(coop_wire_kernel_next(&d.kernels, &off, &k), 0);
  ck_assert_uint_eq(k.nargs, COOP_WIRE_MAX_ARGS);
  ck_assert_uint_eq(k.types[15], 1 + 15 % 7);
  ck_assert_uint_eq(k.cooperative, 1);
  ck_assert_int_eq(coop_wire_kernel_next(&d.kernels, &off, &k), 0);
  ck_assert_str_eq(k.name, "");
  ck_assert_uint_eq(k.nargs, 0);
  ck_assert_int_eq(coop_wire_kernel_next(&d.kernels, &off, &k), COOP_EPROTO);
  free(keep);
  coop_wire_buf_free(&b);

  coop_wire_buf_init(&b);
  sample(COOP_MSG_RESULT, &m, st);
  encode_ok(&b, COOP_MSG_RESULT, 1, &m);
  ck_assert_int_eq(decode_raw(COOP_MSG_RESULT, b.p + 16, b.len - 16, &d, &keep), 0);
  struct coop_wire_inst in;
  for (uint32_t i = 0; i < 3; i++) {
    ck_assert_int_eq(coop_wire_inst_get(&d.result, i, &in), 0);
    ck_assert_uint_eq(in.state, COOP_JOB_DONE + i);
    ck_assert_int_eq(in.t.submitted, INT64_MIN);
    ck_assert_int_eq(in.t.exec_ns, i);
  }
  ck_assert_int_eq(coop_wire_inst_get(&d.result, 3, &in), COOP_EPROTO);
  free(keep);
  coop_wire_buf_free(&b);

  coop_wire_buf_init(&b);
  sample(COOP_MSG_TOP_REPLY, &m, st);
  encode_ok(&b, COOP_MSG_TOP_REPLY, 1, &m);
  ck_assert_int_eq(decode_raw(COOP_MSG_TOP_REPLY, b.p + 16, b.len - 16, &d, &keep), 0);
  ck_assert_uint_eq(d.top.wgs_len, 6 * 9);
  struct coop_wire_wg w;
  const uint8_t states[] = {COOP_WG_RUNNING, COOP_WG_RESERVED, COOP_WG_OTHER,
                            COOP_WG_FREE,    COOP_WG_RUNNING,  COOP_WG_RESERVED};
  const uint64_t jobs[] = {UINT64_MAX, 1, 0, 0, 0, 0};
  off = 0;
  for (unsigned i = 0; i < 6; i++) {
    ck_assert_int_eq(coop_wire_wg_next(&d.top, &off, &w), 0);
    ck_assert_uint_eq(w.state, states[i]);
    ck_assert_uint_eq(w.job, jobs[i]);
  }
  ck_assert_uint_eq(off, d.top.wgs_len);
  ck_assert_int_eq(coop_wire_wg_next(&d.top, &off, &w), COOP_EPROTO);
  struct coop_wire_topjob j;
  off = 0;
  ck_assert_int_eq(coop_wire_topjob_next(&d.top, &off, &j), 0);
  ck_assert_uint_eq(j.job, UINT64_MAX);
  ck_assert_uint_eq(strlen(j.kernel), COOP_WIRE_NAME_MAX - 1);
  ck_assert_uint_eq(j.cooperative, 1);
  ck_assert_uint_eq(j.groups, UINT32_MAX);
  ck_assert_uint_eq(j.forks, UINT32_MAX);
  ck_assert_int_eq(coop_wire_topjob_next(&d.top, &off, &j), 0);
  ck_assert_uint_eq(j.job, 1);
  ck_assert_str_eq(j.kernel, "");
  ck_assert_uint_eq(j.cooperative, 0);
  ck_assert_uint_eq(j.m, 4);
  ck_assert_uint_eq(j.workers, 0);
  ck_assert_uint_eq(off, d.top.jobs_len);
  ck_assert_int_eq(coop_wire_topjob_next(&d.top, &off, &j), COOP_EPROTO);
  free(keep);
  coop_wire_buf_free(&b);

  /* an empty device view: no records at all */
  memset(&m, 0, sizeof m);
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_TOP_REPLY, 1, &m);
  ck_assert_uint_eq(b.len, COOP_WIRE_HDR + 8);
  ck_assert_int_eq(decode_raw(COOP_MSG_TOP_REPLY, b.p + 16, b.len - 16, &d, NULL), 0);
  off = 0;
  ck_assert_int_eq(coop_wire_wg_next(&d.top, &off, &w), COOP_EPROTO);
  ck_assert_int_eq(coop_wire_topjob_next(&d.top, &off, &j), COOP_EPROTO);
  coop_wire_buf_free(&b);
  store_free(st);
  free(st);
}
END_TEST

/* The TOP_REPLY example of PROTOCOL.md, byte for byte. */
START_TEST(top_reply_bytes) {
  struct coop_wire_buf w, j, b;
  coop_wire_buf_init(&w), coop_wire_buf_init(&j), coop_wire_buf_init(&b);
  const struct coop_wire_wg wg[] = {
      {COOP_WG_RUNNING, 3}, {COOP_WG_RESERVED, 3}, {COOP_WG_OTHER, 0}, {COOP_WG_FREE, 0}};
  for (unsigned i = 0; i < 4; i++) ck_assert_int_eq(coop_wire_wg_put(&w, &wg[i]), 0);
  struct coop_wire_topjob tj = {3, "bfs", 1, 2, 1, 2, 1, 0, 0};
  ck_assert_int_eq(coop_wire_topjob_put(&j, &tj), 0);
  union coop_msg m = {.top = {4, w.p, (uint32_t)w.len, 1, j.p, (uint32_t)j.len}};
  encode_ok(&b, COOP_MSG_TOP_REPLY, 5, &m);
  const uint8_t want[] = {
      0x43, 0x4f, 0x4f, 0x50, 0x00, 0x08, 0x00, 0x48, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00,
      0x00, 0x52, 0x00, 0x00, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x03,
      'b',  'f',  's',  0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  ck_assert_uint_eq(b.len, sizeof want);
  ck_assert_mem_eq(b.p, want, sizeof want);
  /* TOP itself is the header and the device */
  coop_wire_buf_free(&b);
  encode_ok(&b, COOP_MSG_TOP, 5, NULL);
  const uint8_t top[] = {0x43, 0x4f, 0x4f, 0x50, 0, 8, 0, 9, 0, 0, 0, 5, 0, 0, 0, 1, 0};
  ck_assert_uint_eq(b.len, sizeof top);
  ck_assert_mem_eq(b.p, top, sizeof top);
  coop_wire_buf_free(&w), coop_wire_buf_free(&j), coop_wire_buf_free(&b);
}
END_TEST

START_TEST(names) {
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_HELLO), "HELLO");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_SUBSCRIBE), "SUBSCRIBE");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_KERNEL_LIST), "KERNEL_LIST");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_EVENT), "EVENT");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_ERROR), "ERROR");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_TOP), "TOP");
  ck_assert_str_eq(coop_wire_type_name(COOP_MSG_TOP_REPLY), "TOP_REPLY");
  ck_assert_str_eq(coop_wire_type_name(0), "UNKNOWN");
  ck_assert_str_eq(coop_wire_type_name(10), "BUF_CREATE");
  ck_assert_str_eq(coop_wire_type_name(74), "BUF_DATA");
  ck_assert_str_eq(coop_wire_type_name(14), "KERNEL_ADD");
  ck_assert_str_eq(coop_wire_type_name(16), "RELOAD");
  ck_assert_str_eq(coop_wire_type_name(75), "KERNEL_DONE");
  ck_assert_str_eq(coop_wire_type_name(17), "MIGRATE");
  ck_assert_str_eq(coop_wire_type_name(18), "RING_OPEN");
  ck_assert_str_eq(coop_wire_type_name(19), "RING_BELL");
  ck_assert_str_eq(coop_wire_type_name(20), "XFER");
  ck_assert_str_eq(coop_wire_type_name(21), "UNKNOWN");
  ck_assert_str_eq(coop_wire_type_name(63), "UNKNOWN");
  ck_assert_str_eq(coop_wire_type_name(76), "RING_WAKE");
  ck_assert_str_eq(coop_wire_type_name(77), "UNKNOWN");
  ck_assert_str_eq(coop_job_state_name(COOP_JOB_CANCELLED), "cancelled");
  ck_assert_str_eq(coop_job_state_name(7), "unknown");
  ck_assert_str_eq(coop_arg_type_name(COOP_ARG_F64), "f64");
  ck_assert_str_eq(coop_arg_type_name(0), "unknown");
}
END_TEST

/* ---- header ---- */

static void put_hdr(uint8_t *b, uint32_t magic, uint16_t ver, uint16_t type, uint32_t len) {
  struct pb p = {0};
  pb_be(&p, magic, 4), pb_be(&p, ver, 2), pb_be(&p, type, 2), pb_be(&p, 9, 4);
  pb_be(&p, len, 4);
  memcpy(b, p.b, COOP_WIRE_HDR);
  free(p.b);
}

START_TEST(header_errors) {
  uint8_t b[COOP_WIRE_HDR];
  struct coop_wire_hdr h;
  put_hdr(b, COOP_WIRE_MAGIC, 7, 300, COOP_WIRE_MAX_PAYLOAD);
  ck_assert_int_eq(coop_wire_hdr_decode(b, &h), 0);
  ck_assert_uint_eq(h.version, 7); /* unchecked: the caller answers EVERSION */
  ck_assert_uint_eq(h.type, 300);
  ck_assert_uint_eq(h.seq, 9);
  ck_assert_uint_eq(h.len, COOP_WIRE_MAX_PAYLOAD);
  put_hdr(b, COOP_WIRE_MAGIC, 1, 1, COOP_WIRE_MAX_PAYLOAD + 1);
  ck_assert_int_eq(coop_wire_hdr_decode(b, &h), COOP_ETOOBIG);
  put_hdr(b, 0x434f4f51u, 1, 1, 0);
  ck_assert_int_eq(coop_wire_hdr_decode(b, &h), COOP_EPROTO);
  put_hdr(b, 0x504f4f43u, 1, 1, 0); /* little-endian magic */
  ck_assert_int_eq(coop_wire_hdr_decode(b, &h), COOP_EPROTO);
  union coop_msg m;
  h = (struct coop_wire_hdr){1, COOP_MSG_OK, 0, COOP_WIRE_MAX_PAYLOAD + 1};
  ck_assert_int_eq(coop_wire_decode(&h, b, &m), COOP_ETOOBIG);
}
END_TEST

/* ---- decoder rejections, one rule at a time ---- */

static void hello_with(struct pb *p, const char *name, size_t n) {
  pb_be(p, 1, 2), pb_be(p, 1, 2);
  pb_str(p, name, n);
}

START_TEST(reject_short_and_trailing) {
  struct pb p = {0};
  hello_with(&p, "abc", 3);
  p.n--;
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_EPROTO);
  hello_with(&p, "abc", 3);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_EPROTO);
  pb_be(&p, 1, 8), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ACCEPTED), COOP_EPROTO);
  pb_be(&p, 1, 8);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_WAIT), COOP_EPROTO); /* needs the timeout */
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_OK), COOP_EPROTO);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATS), COOP_EPROTO);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNELS), COOP_EPROTO);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP), COOP_EPROTO); /* needs the device */
  pb_be(&p, 0, 8);                                            /* what a STATUS would carry */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP), COOP_EPROTO);
}
END_TEST

/* Device buffers' messages (PROTOCOL.md, "Device buffers"): round trips,
 * and what a decoder refuses. */
static int buf_create(uint8_t flags, uint64_t size, uint8_t fd, uint32_t data_len) {
  struct pb p = {0};
  pb_be(&p, 0, 1), pb_be(&p, flags, 1), pb_be(&p, size, 8), pb_be(&p, fd, 1);
  pb_be(&p, data_len, 4);
  for (uint32_t i = 0; i < data_len; i++) pb_be(&p, 'x', 1);
  return pb_decode(&p, COOP_MSG_BUF_CREATE);
}

static int buf_range(uint16_t type, uint64_t len, uint8_t fd, uint32_t data_len) {
  struct pb p = {0};
  pb_be(&p, 1, 8), pb_be(&p, 0, 8), pb_be(&p, len, 8), pb_be(&p, fd, 1);
  if (type == COOP_MSG_BUF_WRITE) pb_be(&p, data_len, 4);
  for (uint32_t i = 0; type == COOP_MSG_BUF_WRITE && i < data_len; i++) pb_be(&p, 'x', 1);
  return pb_decode(&p, type);
}

START_TEST(buffer_messages) {
  union coop_msg m, out;
  memset(&m, 0, sizeof m);
  uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  m.buf_create = (struct coop_msg_buf_create){.device = 1,
                                              .flags = COOP_BUFFER_KEEP,
                                              .size = 8,
                                              .fd = COOP_WIRE_FD_NONE,
                                              .data = bytes,
                                              .data_len = 8};
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_BUF_CREATE, 5, &m);
  struct coop_wire_hdr h;
  ck_assert_int_eq(coop_wire_hdr_decode(b.p, &h), 0);
  ck_assert_int_eq(coop_wire_decode(&h, b.p + COOP_WIRE_HDR, &out), 0);
  ck_assert(out.buf_create.device == 1 && out.buf_create.flags == COOP_BUFFER_KEEP &&
            out.buf_create.size == 8 && out.buf_create.data_len == 8);
  ck_assert_mem_eq(out.buf_create.data, bytes, 8);
  coop_wire_buf_free(&b);
  /* create: zeros (no bytes), bytes by descriptor, exactly size inline */
  ck_assert_int_eq(buf_create(0, 64, COOP_WIRE_FD_NONE, 0), 0);
  ck_assert_int_eq(buf_create(0, 64, 3, 0), 0);
  ck_assert_int_eq(buf_create(0, 64, COOP_WIRE_FD_NONE, 64), 0);
  ck_assert_int_eq(buf_create(0, 64, COOP_WIRE_FD_NONE, 63), COOP_EPROTO);
  ck_assert_int_eq(buf_create(0, 64, 3, 64), COOP_EPROTO); /* bytes beside a descriptor */
  ck_assert_int_eq(buf_create(0, 0, COOP_WIRE_FD_NONE, 0), COOP_EPROTO);  /* size 0 */
  ck_assert_int_eq(buf_create(2, 64, COOP_WIRE_FD_NONE, 0), COOP_EPROTO); /* unknown flag */
  ck_assert_int_eq(buf_create(0, 64, 16, 0), COOP_EPROTO);                /* fd index */
  ck_assert_int_eq(buf_create(0, (256u << 10) + 1, COOP_WIRE_FD_NONE, (256u << 10) + 1),
                   COOP_ETOOBIG);
  /* write: len bytes inline, none beside a descriptor; read: inline up to 256 KiB */
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_WRITE, 16, COOP_WIRE_FD_NONE, 16), 0);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_WRITE, 16, COOP_WIRE_FD_NONE, 15), COOP_EPROTO);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_WRITE, 16, 0, 16), COOP_EPROTO);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_WRITE, 1u << 20, 0, 0), 0);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_READ, 256u << 10, COOP_WIRE_FD_NONE, 0), 0);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_READ, (256u << 10) + 1, COOP_WIRE_FD_NONE, 0),
                   COOP_ETOOBIG);
  ck_assert_int_eq(buf_range(COOP_MSG_BUF_READ, 1u << 30, 1, 0), 0);
  /* BUFFER and BUF_DATA */
  memset(&m, 0, sizeof m);
  m.buffer = (struct coop_msg_buffer){.buffer = 42, .device = 0, .size = 4096};
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_BUFFER, 5, &m);
  ck_assert_int_eq(coop_wire_hdr_decode(b.p, &h), 0);
  ck_assert_int_eq(coop_wire_decode(&h, b.p + COOP_WIRE_HDR, &out), 0);
  ck_assert(out.buffer.buffer == 42 && out.buffer.size == 4096);
  coop_wire_buf_free(&b);
}
END_TEST

START_TEST(reject_unknown_type) {
  const uint16_t bad[] = {0, 21, 63, 77, 126, 128, 0xffff};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    union coop_msg m;
    ck_assert_int_eq(decode_raw(bad[i], NULL, 0, &m, NULL), COOP_EPROTO);
    struct coop_wire_buf b;
    coop_wire_buf_init(&b);
    ck_assert_int_eq(coop_wire_encode(&b, bad[i], 0, &m), COOP_EINVAL);
    coop_wire_buf_free(&b);
  }
}
END_TEST

START_TEST(reject_long_strings) {
  struct pb p = {0};
  pb_be(&p, 1, 2), pb_be(&p, 1, 2), pb_rep(&p, 'x', COOP_WIRE_NAME_MAX - 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), 0);
  pb_be(&p, 1, 2), pb_be(&p, 1, 2), pb_rep(&p, 'x', COOP_WIRE_NAME_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_ETOOBIG);
  pb_be(&p, 1, 2), pb_be(&p, 1, 2), pb_be(&p, 0xffff, 2); /* no bytes follow */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_ETOOBIG);
  pb_be(&p, (uint32_t)COOP_EIO, 4), pb_rep(&p, 'x', COOP_WIRE_TEXT_MAX - 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ERROR), 0);
  pb_be(&p, (uint32_t)COOP_EIO, 4), pb_rep(&p, 'x', COOP_WIRE_TEXT_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ERROR), COOP_ETOOBIG);
  /* a NAME field is not a TEXT field: the welcome's backend is < 64 */
  pb_be(&p, 1, 2), pb_rep(&p, 'v', 5), pb_rep(&p, 'b', COOP_WIRE_NAME_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_WELCOME), COOP_ETOOBIG);
}
END_TEST

START_TEST(reject_nul_in_string) {
  struct pb p = {0};
  hello_with(&p, "ab\0c", 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_EPROTO);
  hello_with(&p, "\0", 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), COOP_EPROTO);
  hello_with(&p, "", 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_HELLO), 0);
}
END_TEST

static void submit_head(struct pb *p, uint8_t flags, uint8_t nargs) {
  pb_str(p, "k", 1), pb_be(p, flags, 1);
  for (int i = 0; i < 5; i++) pb_be(p, 1, 4);
  pb_be(p, COOP_WIRE_ANY_DEVICE, 1), pb_be(p, 0, 4) /* priority */, pb_be(p, nargs, 1);
}

static void buf_arg_pb(struct pb *p, uint8_t dir, uint8_t fd, uint64_t size, uint32_t len) {
  pb_be(p, COOP_ARG_BUF, 1), pb_be(p, dir, 1), pb_be(p, fd, 1), pb_be(p, size, 8);
  pb_be(p, len, 4);
  for (uint32_t i = 0; i < len; i++) pb_be(p, i & 0xff, 1);
}

/* A SUBMIT with one argument, decoded. */
static int one_buf(uint8_t dir, uint8_t fd, uint64_t size, uint32_t len) {
  struct pb p = {0};
  submit_head(&p, 0, 1);
  buf_arg_pb(&p, dir, fd, size, len);
  return pb_decode(&p, COOP_MSG_SUBMIT);
}

static int one_scalar(uint8_t type, uint64_t bits) {
  struct pb p = {0};
  submit_head(&p, 0, 1);
  pb_be(&p, type, 1), pb_be(&p, bits, 8);
  return pb_decode(&p, COOP_MSG_SUBMIT);
}

/* A devbuf_io argument: id, dir, fd, at, len, off. */
static int one_io(uint64_t id, uint8_t dir, uint8_t fd, uint64_t at, uint64_t len, uint64_t off) {
  struct pb p = {0};
  submit_head(&p, 0, 1);
  pb_be(&p, COOP_ARG_DEVBUF_IO, 1), pb_be(&p, id, 8), pb_be(&p, dir, 1), pb_be(&p, fd, 1);
  pb_be(&p, at, 8), pb_be(&p, len, 8), pb_be(&p, off, 8);
  return pb_decode(&p, COOP_MSG_SUBMIT);
}

/* A device buffer's range moved with the job: a real id, direction and
 * descriptor index, a length > 0, neither range past 2^64; its fields
 * come back as sent. */
START_TEST(devbuf_io_arguments) {
  ck_assert_int_eq(one_io(1, COOP_BUF_IN, 0, 0, 16, 0), 0);
  ck_assert_int_eq(one_io(7, COOP_BUF_INOUT, 15, 1u << 20, 4096, 64), 0);
  ck_assert_int_eq(one_io(0, COOP_BUF_IN, 0, 0, 16, 0), COOP_EPROTO); /* ids start at 1 */
  ck_assert_int_eq(one_io(1, 0, 0, 0, 16, 0), COOP_EPROTO);
  ck_assert_int_eq(one_io(1, 4, 0, 0, 16, 0), COOP_EPROTO);
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, COOP_WIRE_MAX_FDS, 0, 16, 0), COOP_EPROTO);
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, COOP_WIRE_FD_NONE, 0, 16, 0), COOP_EPROTO);
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, 0, 0, 0, 0), COOP_EPROTO); /* nothing to move */
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, 0, UINT64_MAX - 15, 16, 0), COOP_EPROTO);
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, 0, UINT64_MAX - 16, 16, 0), 0);
  ck_assert_int_eq(one_io(1, COOP_BUF_OUT, 0, 0, 16, UINT64_MAX - 15), COOP_EPROTO);
  union coop_msg m, out;
  memset(&m, 0, sizeof m);
  snprintf(m.submit.kernel, sizeof m.submit.kernel, "render");
  m.submit.groups = 1;
  m.submit.nargs = 1;
  m.submit.args[0] = (struct coop_wire_arg){.type = COOP_ARG_DEVBUF_IO,
                                            .bits = 42,
                                            .dir = COOP_BUF_INOUT,
                                            .fd = 3,
                                            .at = 128,
                                            .size = 999,
                                            .off = 4096};
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_SUBMIT, 1, &m);
  uint8_t *keep = NULL;
  ck_assert_int_eq(
      decode_raw(COOP_MSG_SUBMIT, b.p + COOP_WIRE_HDR, b.len - COOP_WIRE_HDR, &out, &keep), 0);
  const struct coop_wire_arg *a = &out.submit.args[0];
  ck_assert(a->type == COOP_ARG_DEVBUF_IO && a->bits == 42 && a->dir == COOP_BUF_INOUT &&
            a->fd == 3 && a->at == 128 && a->size == 999 && a->off == 4096);
  free(keep);
  coop_wire_buf_free(&b);
}
END_TEST

START_TEST(reject_submit_enums_and_flags) {
  ck_assert_int_eq(one_scalar(COOP_ARG_U64, 1), 0);
  ck_assert_int_eq(one_scalar(0, 1), COOP_EPROTO);
  ck_assert_int_eq(one_scalar(COOP_ARG_DEVBUF, 1), 0);
  ck_assert_int_eq(one_scalar(COOP_ARG_DEVBUF, 0), COOP_EPROTO); /* ids start at 1 */
  ck_assert_int_eq(one_scalar(10, 1), COOP_EPROTO);
  ck_assert_int_eq(one_scalar(0xff, 1), COOP_EPROTO);
  ck_assert_int_eq(one_buf(0, COOP_WIRE_FD_NONE, 0, 0), COOP_EPROTO);
  ck_assert_int_eq(one_buf(4, COOP_WIRE_FD_NONE, 0, 0), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_OUT, COOP_WIRE_FD_NONE, 0, 0), 0);
  struct pb p = {0};
  submit_head(&p, COOP_SUBMIT_FLAGS_ALL, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), 0);
  submit_head(&p, COOP_SUBMIT_FLAGS_ALL + 1, 0); /* the first bit past the flags */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_EPROTO);
  submit_head(&p, 0x80, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_EPROTO);
}
END_TEST

START_TEST(reject_scalar_high_bits) {
  ck_assert_int_eq(one_scalar(COOP_ARG_U32, 0xffffffffu), 0);
  ck_assert_int_eq(one_scalar(COOP_ARG_U32, 0x100000000u), COOP_EPROTO);
  ck_assert_int_eq(one_scalar(COOP_ARG_I32, 0xfffffffffffffffbu), COOP_EPROTO);
  ck_assert_int_eq(one_scalar(COOP_ARG_F32, 1ull << 63), COOP_EPROTO);
  ck_assert_int_eq(one_scalar(COOP_ARG_I64, 0xfffffffffffffffbu), 0);
  ck_assert_int_eq(one_scalar(COOP_ARG_F64, 1ull << 63), 0);
}
END_TEST

START_TEST(reject_too_many_args) {
  struct pb p = {0};
  submit_head(&p, 0, COOP_WIRE_MAX_ARGS);
  for (unsigned i = 0; i < COOP_WIRE_MAX_ARGS; i++) pb_be(&p, COOP_ARG_U32, 1), pb_be(&p, i, 8);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), 0);
  submit_head(&p, 0, COOP_WIRE_MAX_ARGS + 1);
  for (unsigned i = 0; i <= COOP_WIRE_MAX_ARGS; i++) pb_be(&p, COOP_ARG_U32, 1), pb_be(&p, i, 8);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_ETOOBIG);
  submit_head(&p, 0, 0xff);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_ETOOBIG);
  submit_head(&p, 0, 2); /* fewer args than nargs */
  pb_be(&p, COOP_ARG_U32, 1), pb_be(&p, 0, 8);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_EPROTO);
}
END_TEST

START_TEST(reject_inline_data_rules) {
  const uint8_t none = COOP_WIRE_FD_NONE;
  ck_assert_int_eq(one_buf(COOP_BUF_IN, none, 4, 4), 0);
  ck_assert_int_eq(one_buf(COOP_BUF_IN, none, 4, 3), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, none, 4, 5), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, none, 4, 0), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_IN, none, COOP_WIRE_INLINE_MAX, COOP_WIRE_INLINE_MAX), 0);
  ck_assert_int_eq(one_buf(COOP_BUF_IN, none, COOP_WIRE_INLINE_MAX + 1, 0), COOP_ETOOBIG);
  ck_assert_int_eq(one_buf(COOP_BUF_OUT, none, COOP_WIRE_INLINE_MAX + 1, 0), COOP_ETOOBIG);
  ck_assert_int_eq(one_buf(COOP_BUF_OUT, none, 100, 0), 0);
  ck_assert_int_eq(one_buf(COOP_BUF_OUT, none, 1, 1), COOP_EPROTO);
  /* a descriptor buffer carries its contents in the descriptor */
  ck_assert_int_eq(one_buf(COOP_BUF_IN, 0, UINT64_MAX, 0), 0);
  ck_assert_int_eq(one_buf(COOP_BUF_IN, 0, 1, 1), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_OUT, 3, 0, 2), COOP_EPROTO);
  /* the blob length is checked against what is there */
  struct pb p = {0};
  submit_head(&p, 0, 1);
  buf_arg_pb(&p, COOP_BUF_IN, none, 4, 0);
  p.n -= 4;
  pb_be(&p, 4, 4), pb_be(&p, 0, 3);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBMIT), COOP_EPROTO);
}
END_TEST

START_TEST(reject_fd_index) {
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, COOP_WIRE_MAX_FDS - 1, 8, 0), 0);
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, COOP_WIRE_MAX_FDS, 8, 0), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, 0xfe, 8, 0), COOP_EPROTO);
  ck_assert_int_eq(one_buf(COOP_BUF_INOUT, COOP_WIRE_FD_NONE, 0, 0), 0);
}
END_TEST

static void status_rec(struct pb *p, uint8_t state, uint8_t flags) {
  pb_be(p, 5, 8), pb_be(p, state, 1), pb_be(p, flags, 1), pb_str(p, "k", 1);
  for (int i = 0; i < 5; i++) pb_be(p, 1, 4);
  pb_be(p, 0xfffffffbu, 4), pb_be(p, 1, 1); /* priority -5, suspended */
  pb_be(p, 1, 1);                           /* on device 1 */
}

START_TEST(reject_status_records) {
  struct pb p = {0};
  pb_be(&p, 2, 4), status_rec(&p, COOP_JOB_QUEUED, 0),
      status_rec(&p, COOP_JOB_FAILED, COOP_SUBMIT_FLAGS_ALL);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), 0);
  pb_be(&p, 2, 4), status_rec(&p, COOP_JOB_QUEUED, 0), status_rec(&p, 7, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), COOP_EPROTO);
  pb_be(&p, 1, 4), status_rec(&p, 0, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), COOP_EPROTO);
  pb_be(&p, 1, 4), status_rec(&p, COOP_JOB_DONE, 0x80);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), COOP_EPROTO);
  pb_be(&p, 2, 4), status_rec(&p, COOP_JOB_DONE, 0); /* one record short */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), COOP_EPROTO);
  pb_be(&p, COOP_WIRE_MAX_STATUS + 1, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), COOP_ETOOBIG);
  pb_be(&p, COOP_WIRE_MAX_STATUS, 4);
  for (unsigned i = 0; i < COOP_WIRE_MAX_STATUS; i++) status_rec(&p, COOP_JOB_DONE, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_STATUS_REPLY), 0);
}
END_TEST

/* A kernel record: name "k", cooperative, owner, nargs u32 arguments
 * named "a" (the last one unnamed), nrules rules "a<=1". */
static void kernel_rec(struct pb *p, uint8_t coop, unsigned nargs, unsigned nrules) {
  pb_str(p, "k", 1), pb_be(p, coop, 1), pb_be(p, 1000, 4), pb_be(p, nargs, 1);
  for (unsigned i = 0; i < nargs; i++) {
    pb_be(p, COOP_ARG_U32, 1), i + 1 < nargs ? pb_str(p, "a", 1) : pb_str(p, "", 0);
    pb_be(p, COOP_WIRE_ELEM_ANY, 1);
  }
  pb_be(p, nrules, 1);
  for (unsigned i = 0; i < nrules; i++) pb_str(p, "a<=1", 4);
}

START_TEST(reject_kernel_records) {
  struct pb p = {0};
  pb_be(&p, 1, 4), kernel_rec(&p, 1, 2, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), 0);
  pb_be(&p, 1, 4), kernel_rec(&p, 2, 0, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_EPROTO); /* cooperative 2 */
  pb_be(&p, 1, 4), pb_str(&p, "k", 1), pb_be(&p, 0, 1), pb_be(&p, 0, 4), pb_be(&p, 1, 1);
  pb_be(&p, 8, 1), pb_str(&p, "", 0), pb_be(&p, 0, 1), pb_be(&p, 0, 1); /* devbuf: SUBMIT's */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_EPROTO);
  /* element types: a buffer's 0..COOP_WIRE_ELEM_LAST, a scalar's 0 only */
  for (unsigned e = 0; e <= COOP_WIRE_ELEM_LAST + 1; e++)
    for (unsigned t = COOP_ARG_U32; t <= COOP_ARG_BUF; t += COOP_ARG_BUF - COOP_ARG_U32) {
      pb_be(&p, 1, 4), pb_str(&p, "k", 1), pb_be(&p, 0, 1), pb_be(&p, 0, 4), pb_be(&p, 1, 1);
      pb_be(&p, t, 1), pb_str(&p, "", 0), pb_be(&p, e, 1), pb_be(&p, 0, 1);
      int ok = e == COOP_WIRE_ELEM_ANY || (t == COOP_ARG_BUF && e <= COOP_WIRE_ELEM_LAST);
      ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), ok ? 0 : COOP_EPROTO);
    }
  pb_be(&p, 1, 4), kernel_rec(&p, 0, 17, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_ETOOBIG);
  /* rules: 16 at most, each shorter than COOP_WIRE_RULE_MAX; names than 32 */
  pb_be(&p, 1, 4), kernel_rec(&p, 0, 16, 16);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), 0);
  pb_be(&p, 1, 4), kernel_rec(&p, 0, 1, 17);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_ETOOBIG);
  char rule[COOP_WIRE_RULE_MAX];
  memset(rule, 'a', sizeof rule);
  pb_be(&p, 1, 4), kernel_rec(&p, 0, 0, 0), p.n--, pb_be(&p, 1, 1);
  pb_str(&p, rule, COOP_WIRE_RULE_MAX - 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), 0);
  pb_be(&p, 1, 4), kernel_rec(&p, 0, 0, 0), p.n--, pb_be(&p, 1, 1);
  pb_str(&p, rule, COOP_WIRE_RULE_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_ETOOBIG);
  pb_be(&p, 1, 4), pb_str(&p, "k", 1), pb_be(&p, 0, 1), pb_be(&p, 0, 4), pb_be(&p, 1, 1);
  pb_be(&p, COOP_ARG_U32, 1), pb_str(&p, rule, COOP_WIRE_ARGNAME_MAX - 1), pb_be(&p, 0, 1);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), 0);
  pb_be(&p, 1, 4), pb_str(&p, "k", 1), pb_be(&p, 0, 1), pb_be(&p, 0, 4), pb_be(&p, 1, 1);
  pb_be(&p, COOP_ARG_U32, 1), pb_str(&p, rule, COOP_WIRE_ARGNAME_MAX), pb_be(&p, 0, 1);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_ETOOBIG);
  pb_be(&p, COOP_WIRE_MAX_KERNELS + 1, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), COOP_ETOOBIG);
  pb_be(&p, COOP_WIRE_MAX_KERNELS, 4);
  for (unsigned i = 0; i < COOP_WIRE_MAX_KERNELS; i++) kernel_rec(&p, 0, 0, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_LIST), 0);
}
END_TEST

/* Kernel authors' messages: round trips, and every length checked at its
 * edge: the source (COOP_WIRE_SOURCE_MAX), the log (COOP_WIRE_LOG_MAX),
 * the file and kernel names (< 64), RELOAD's empty payload. */
START_TEST(kernel_author_messages) {
  static char src[COOP_WIRE_SOURCE_MAX + 1];
  memset(src, 'x', sizeof src);
  struct pb p = {0};
  pb_str(&p, "my.cl", 5), pb_be(&p, COOP_WIRE_SOURCE_MAX, 4);
  pb_mem(&p, src, COOP_WIRE_SOURCE_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), 0);
  pb_str(&p, "my.cl", 5), pb_be(&p, COOP_WIRE_SOURCE_MAX + 1, 4);
  pb_mem(&p, src, COOP_WIRE_SOURCE_MAX + 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), COOP_ETOOBIG);
  pb_str(&p, "my.cl", 5), pb_be(&p, 10, 4), pb_mem(&p, src, 9); /* short */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), COOP_EPROTO);
  pb_str(&p, "my.cl", 5), pb_be(&p, 1, 4), pb_mem(&p, src, 2); /* trailing */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), COOP_EPROTO);
  pb_str(&p, src, 63), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), 0);
  pb_str(&p, src, 64), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_ADD), COOP_ETOOBIG);
  pb_str(&p, src, 63);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_REMOVE), 0);
  pb_str(&p, src, 64);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_REMOVE), COOP_ETOOBIG);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RELOAD), 0);
  pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RELOAD), COOP_EPROTO);
  /* MIGRATE: u64 job, u8 device, exactly */
  pb_be(&p, 7, 8), pb_be(&p, 1, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_MIGRATE), 0);
  pb_be(&p, 7, 8);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_MIGRATE), COOP_EPROTO);
  pb_be(&p, 7, 8), pb_be(&p, 1, 1), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_MIGRATE), COOP_EPROTO);
  /* KERNEL_DONE: the log's edge, a failure's code, the kernel record */
  pb_be(&p, (uint32_t)COOP_EBUILD, 4), pb_be(&p, 3, 4), pb_be(&p, 0, 1);
  pb_be(&p, COOP_WIRE_LOG_MAX, 4), pb_mem(&p, src, COOP_WIRE_LOG_MAX);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_DONE), 0);
  pb_be(&p, (uint32_t)COOP_EBUILD, 4), pb_be(&p, 3, 4), pb_be(&p, 0, 1);
  pb_be(&p, COOP_WIRE_LOG_MAX + 1, 4), pb_mem(&p, src, COOP_WIRE_LOG_MAX + 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_DONE), COOP_ETOOBIG);
  pb_be(&p, 1, 4), pb_be(&p, 3, 4), pb_be(&p, 0, 1), pb_be(&p, 0, 4); /* error > 0 */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_DONE), COOP_EPROTO);
  pb_be(&p, 0, 4), pb_be(&p, 3, 4), pb_be(&p, 1, 1), pb_be(&p, 0, 4), kernel_rec(&p, 1, 2, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_DONE), 0);
  pb_be(&p, 0, 4), pb_be(&p, 3, 4), pb_be(&p, 1, 1), pb_be(&p, 0, 4); /* no record */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_KERNEL_DONE), COOP_EPROTO);
  /* round trips through the encoder, which refuses what the decoder would */
  union coop_msg m, out;
  memset(&m, 0, sizeof m);
  snprintf(m.kernel_add.file, sizeof m.kernel_add.file, "my.cl");
  m.kernel_add.source = (const uint8_t *)src;
  m.kernel_add.source_len = COOP_WIRE_SOURCE_MAX;
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_KERNEL_ADD, 9, &m);
  ck_assert_int_eq(
      decode_raw(COOP_MSG_KERNEL_ADD, b.p + COOP_WIRE_HDR, b.len - COOP_WIRE_HDR, &out, NULL), 0);
  ck_assert_str_eq(out.kernel_add.file, "my.cl");
  ck_assert_uint_eq(out.kernel_add.source_len, COOP_WIRE_SOURCE_MAX);
  b.len = 0;
  m.kernel_add.source_len = COOP_WIRE_SOURCE_MAX + 1;
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_KERNEL_ADD, 9, &m), COOP_ETOOBIG);
  b.err = 0, b.len = 0;
  memset(&m, 0, sizeof m);
  struct coop_wire_kernel *k = &m.kernel_done.kernel;
  m.kernel_done.has_kernel = 1;
  m.kernel_done.nkernels = 4;
  snprintf(k->name, sizeof k->name, "mine");
  k->cooperative = 1, k->owner = 1000, k->nargs = 2, k->nrules = 1;
  k->types[0] = COOP_ARG_BUF, k->types[1] = COOP_ARG_U32;
  k->elems[0] = COOP_WIRE_ELEM_F32;
  snprintf(k->argnames[0], sizeof k->argnames[0], "data");
  snprintf(k->argnames[1], sizeof k->argnames[1], "n");
  snprintf(k->rules[0], sizeof k->rules[0], "n*4 <= len(data)");
  encode_ok(&b, COOP_MSG_KERNEL_DONE, 9, &m);
  ck_assert_int_eq(
      decode_raw(COOP_MSG_KERNEL_DONE, b.p + COOP_WIRE_HDR, b.len - COOP_WIRE_HDR, &out, NULL), 0);
  ck_assert_str_eq(out.kernel_done.kernel.argnames[0], "data");
  ck_assert_uint_eq(out.kernel_done.kernel.elems[0], COOP_WIRE_ELEM_F32);
  ck_assert_uint_eq(out.kernel_done.kernel.elems[1], COOP_WIRE_ELEM_ANY);
  ck_assert_str_eq(coop_elem_type_name(COOP_WIRE_ELEM_F32), "f32");
  ck_assert_int_eq(coop_elem_type_of("u16"), COOP_WIRE_ELEM_U16);
  ck_assert_int_eq(coop_elem_type_of("buf"), -1);
  ck_assert_str_eq(out.kernel_done.kernel.rules[0], "n*4 <= len(data)");
  ck_assert_uint_eq(out.kernel_done.kernel.owner, 1000);
  coop_wire_buf_free(&b);
  free(p.b);
}
END_TEST

static void wg_rec(struct pb *p, uint8_t state, uint64_t job) {
  pb_be(p, state, 1), pb_be(p, job, 8);
}

static void topjob_rec(struct pb *p, const char *kernel, size_t n, uint8_t coop) {
  pb_be(p, 9, 8), pb_str(p, kernel, n), pb_be(p, coop, 1);
  for (int i = 0; i < 6; i++) pb_be(p, 2, 4); /* groups, m, workers, kills, forks, priority */
}

/* A TOP_REPLY whose workgroup records are fine: a free one and a job's. */
static void top_wgs(struct pb *p) {
  pb_be(p, 2, 4), wg_rec(p, COOP_WG_FREE, 0), wg_rec(p, COOP_WG_RUNNING, 9);
}

START_TEST(reject_top_records) {
  struct pb p = {0};
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, "k", 1, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), 0);
  pb_be(&p, 0, 4), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), 0); /* nothing to show */
  /* workgroup states: 0..3, and job 0 for FREE and OTHER */
  for (unsigned st = 0; st < 256; st++) {
    pb_be(&p, 1, 4), wg_rec(&p, (uint8_t)st, 0), pb_be(&p, 0, 4);
    ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), st <= COOP_WG_OTHER ? 0 : COOP_EPROTO);
  }
  pb_be(&p, 1, 4), wg_rec(&p, COOP_WG_FREE, 1), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  pb_be(&p, 1, 4), wg_rec(&p, COOP_WG_OTHER, 1ull << 63), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  pb_be(&p, 1, 4), wg_rec(&p, COOP_WG_RESERVED, UINT64_MAX), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), 0);
  /* counts that do not match the records */
  pb_be(&p, 3, 4), wg_rec(&p, COOP_WG_FREE, 0), wg_rec(&p, COOP_WG_FREE, 0), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* njobs read as a wg */
  pb_be(&p, 1, 4), wg_rec(&p, COOP_WG_FREE, 0), wg_rec(&p, COOP_WG_FREE, 0), pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* trailing */
  top_wgs(&p), pb_be(&p, 2, 4), topjob_rec(&p, "k", 1, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* one job short */
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, "k", 1, 0), topjob_rec(&p, "k", 1, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  top_wgs(&p), pb_be(&p, 0, 4), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* a trailing byte */
  top_wgs(&p);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* no njobs */
  top_wgs(&p), pb_be(&p, 0, 3);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* half an njobs */
  pb_be(&p, 1, 4), pb_be(&p, COOP_WG_RUNNING, 1), pb_be(&p, 0, 7);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO); /* short wg record */
  /* job records: cooperative 0 or 1, the kernel a name */
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, "k", 1, 2);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, "a\0b", 3, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  char name[COOP_WIRE_NAME_MAX];
  memset(name, 'n', sizeof name);
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, name, COOP_WIRE_NAME_MAX - 1, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), 0);
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, name, COOP_WIRE_NAME_MAX, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_ETOOBIG);
  top_wgs(&p), pb_be(&p, 1, 4), topjob_rec(&p, "k", 1, 0);
  p.n -= 1; /* forks cut short */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_EPROTO);
  /* the limits, exactly and one past */
  pb_be(&p, COOP_WIRE_MAX_WG, 4);
  for (unsigned i = 0; i < COOP_WIRE_MAX_WG; i++) wg_rec(&p, (uint8_t)(i % 4), i % 4 % 3 ? i : 0);
  pb_be(&p, COOP_WIRE_MAX_TOPJOBS, 4);
  for (unsigned i = 0; i < COOP_WIRE_MAX_TOPJOBS; i++) topjob_rec(&p, "k", 1, i & 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), 0);
  pb_be(&p, COOP_WIRE_MAX_WG + 1, 4);
  for (unsigned i = 0; i <= COOP_WIRE_MAX_WG; i++) wg_rec(&p, COOP_WG_FREE, 0);
  pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_ETOOBIG);
  pb_be(&p, UINT32_MAX, 4); /* no records behind it */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_ETOOBIG);
  top_wgs(&p), pb_be(&p, COOP_WIRE_MAX_TOPJOBS + 1, 4);
  for (unsigned i = 0; i <= COOP_WIRE_MAX_TOPJOBS; i++) topjob_rec(&p, "k", 1, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_ETOOBIG);
  top_wgs(&p), pb_be(&p, UINT32_MAX, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_TOP_REPLY), COOP_ETOOBIG);
}
END_TEST

/* RESULT up to its instance count (ninst itself not included). */
static void result_head(struct pb *p, uint8_t state) {
  pb_be(p, 1, 8), pb_be(p, state, 1), pb_be(p, 0, 1), pb_be(p, 0, 4), pb_str(p, "m", 1);
  for (int i = 0; i < 7; i++) pb_be(p, (uint64_t)-1, 8);
  for (int i = 0; i < 8; i++) pb_be(p, 1, 4);
}

static void inst_rec(struct pb *p, uint8_t state) {
  pb_be(p, state, 1);
  for (int i = 0; i < 7; i++) pb_be(p, (uint64_t)INT64_MIN, 8);
}

START_TEST(reject_result) {
  struct pb p = {0};
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 1, 4), inst_rec(&p, COOP_JOB_FAILED);
  pb_be(&p, 1, 1), pb_be(&p, 15, 1), pb_be(&p, 2, 4), pb_be(&p, 0xabcd, 2);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), 0);
  result_head(&p, 0), pb_be(&p, 0, 4), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_EPROTO);
  result_head(&p, COOP_JOB_FAILED + 1), pb_be(&p, 0, 4), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_EPROTO);
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 2, 4), inst_rec(&p, COOP_JOB_DONE);
  inst_rec(&p, 9), pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_EPROTO);
  result_head(&p, COOP_JOB_DONE), pb_be(&p, COOP_WIRE_MAX_INST + 1, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_ETOOBIG);
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 0, 4), pb_be(&p, COOP_WIRE_MAX_ARGS + 1, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_ETOOBIG);
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 0, 4), pb_be(&p, 1, 1), pb_be(&p, 16, 1);
  pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_EPROTO); /* arg index */
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 0, 4), pb_be(&p, 1, 1), pb_be(&p, 0, 1);
  pb_be(&p, COOP_WIRE_INLINE_MAX + 1, 4);
  for (unsigned i = 0; i <= COOP_WIRE_INLINE_MAX; i++) pb_be(&p, 0, 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_ETOOBIG);
  result_head(&p, COOP_JOB_DONE), pb_be(&p, 0, 4); /* no nbuf */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_RESULT), COOP_EPROTO);
}
END_TEST

static void event_pb(struct pb *p, uint8_t kind, uint8_t state) {
  pb_be(p, 1, 8), pb_be(p, kind, 1), pb_be(p, state, 1), pb_be(p, 0, 4);
  pb_be(p, 0, 8), pb_be(p, (uint64_t)-1, 8);
}

START_TEST(reject_event_subscribe_error) {
  struct pb p = {0};
  event_pb(&p, COOP_EV_RELEASED, COOP_JOB_QUEUED);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_EVENT), 0);
  event_pb(&p, 0, COOP_JOB_QUEUED);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_EVENT), COOP_EPROTO);
  event_pb(&p, COOP_EV_FINISHED + 1, COOP_JOB_QUEUED);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_EVENT), COOP_EPROTO);
  event_pb(&p, COOP_EV_STARTED, 0);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_EVENT), COOP_EPROTO);
  pb_be(&p, 0, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBSCRIBE), 0);
  pb_be(&p, COOP_EV_ALL, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBSCRIBE), 0);
  pb_be(&p, 1, 4); /* bit 0: no kind 0 */
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBSCRIBE), COOP_EPROTO);
  pb_be(&p, 1u << 5, 4);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_SUBSCRIBE), COOP_EPROTO);
  pb_be(&p, 0, 4), pb_str(&p, "x", 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ERROR), COOP_EPROTO); /* code 0 */
  pb_be(&p, 5, 4), pb_str(&p, "x", 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ERROR), COOP_EPROTO);
  pb_be(&p, (uint32_t)INT32_MIN, 4), pb_str(&p, "x", 1);
  ck_assert_int_eq(pb_decode(&p, COOP_MSG_ERROR), 0);
}
END_TEST

/* Every proper prefix of every valid payload must fail to decode. */
/* STATS_REPLY's length without its optional tail (ext), else 0. */
static size_t stats_without_tail(uint16_t type, const union coop_msg *m) {
  if (type != COOP_MSG_STATS_REPLY) return 0;
  union coop_msg o = *m;
  o.stats.ext = 0;
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, type, 1, &o);
  size_t n = b.len;
  coop_wire_buf_free(&b);
  return n;
}

/* Only the tail of STATS_REPLY is optional; its bounds must ascend. */
START_TEST(stats_tail) {
  union coop_msg m, d;
  sample(COOP_MSG_STATS_REPLY, &m, NULL);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  m.stats.bound[3] = m.stats.bound[2];
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_STATS_REPLY, 1, &m), COOP_EINVAL);
  coop_wire_buf_free(&b);
  coop_wire_buf_init(&b);
  m.stats.nbounds = 3;
  m.stats.bound[0] = 1, m.stats.bound[1] = 5, m.stats.bound[2] = 7;
  encode_ok(&b, COOP_MSG_STATS_REPLY, 1, &m);
  /* where bound[0] is: the device records of the tail follow the bounds */
  size_t at = b.len - (size_t)m.stats.ndevices * (4 + 8 + 8 + 8 + 4 * 8 + 8 + 8) - 3 * 8;
  ck_assert_int_eq(
      decode_raw(COOP_MSG_STATS_REPLY, b.p + COOP_WIRE_HDR, b.len - COOP_WIRE_HDR, &d, NULL), 0);
  ck_assert_uint_eq(d.stats.ext, 1);
  ck_assert_int_eq(d.stats.bound[2], 7);
  b.p[at + 8 + 7] = 9; /* bound[1] = 9 > bound[2] = 7 */
  ck_assert_int_eq(
      decode_raw(COOP_MSG_STATS_REPLY, b.p + COOP_WIRE_HDR, b.len - COOP_WIRE_HDR, &d, NULL),
      COOP_EPROTO);
  coop_wire_buf_free(&b);
}
END_TEST

START_TEST(truncation_never_decodes) {
  for (size_t i = 0; i < NTYPES; i++) {
    uint16_t type = all_types[i];
    struct store *st = calloc(1, sizeof *st);
    union coop_msg m, d;
    struct coop_wire_buf b;
    coop_wire_buf_init(&b);
    sample(type, &m, st);
    if (type == COOP_MSG_RESULT) m.result.bufs[2].len = 40; /* keeps the loop quick */
    encode_ok(&b, type, 1, &m);
    struct coop_wire_reader r;
    coop_wire_reader_init(&r);
    size_t old_len = stats_without_tail(type, &m);
    for (size_t len = 0; len < b.len; len++) {
      if (len >= COOP_WIRE_HDR && len == old_len) { /* a daemon before STATS_REPLY's tail */
        ck_assert_int_eq(decode_raw(type, b.p + COOP_WIRE_HDR, len - COOP_WIRE_HDR, &d, NULL), 0);
        ck_assert_uint_eq(d.stats.ext, 0);
      } else if (len >= COOP_WIRE_HDR) {
        int e = decode_raw(type, b.p + COOP_WIRE_HDR, len - COOP_WIRE_HDR, &d, NULL);
        ck_assert_msg(e < 0, "%s decoded from %zu of %zu bytes", coop_wire_type_name(type), len,
                      b.len);
      }
      /* fed one byte at a time: no frame until the last byte */
      if (len) ck_assert_int_eq(coop_wire_reader_feed(&r, b.p + len - 1, 1, NULL, 0), 0);
      struct coop_wire_hdr h;
      const uint8_t *pl;
      ck_assert_int_eq(coop_wire_reader_next(&r, &h, &pl, NULL, NULL), 0);
    }
    coop_wire_reader_free(&r);
    coop_wire_buf_free(&b);
    store_free(st);
    free(st);
  }
}
END_TEST

/* ---- encoder errors ---- */

START_TEST(encode_refuses_and_sticks) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  union coop_msg m = {.hello = {1, 1, "ok"}};
  encode_ok(&b, COOP_MSG_HELLO, 1, &m);
  size_t good = b.len;
  memset(m.hello.name, 'a', sizeof m.hello.name); /* unterminated */
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_HELLO, 2, &m), COOP_ETOOBIG);
  ck_assert_uint_eq(b.len, good); /* the partial frame is gone */
  ck_assert_int_eq(b.err, COOP_ETOOBIG);
  strcpy(m.hello.name, "fine");
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_HELLO, 3, &m), COOP_ETOOBIG); /* sticky */
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_OK, 3, NULL), COOP_ETOOBIG);
  ck_assert_uint_eq(b.len, good);
  b.err = 0;
  encode_ok(&b, COOP_MSG_HELLO, 3, &m);
  ck_assert_uint_gt(b.len, good);
  struct coop_wire_hdr h;
  ck_assert_int_eq(coop_wire_hdr_decode(b.p + good, &h), 0);
  ck_assert_uint_eq(h.seq, 3);
  coop_wire_buf_free(&b);
}
END_TEST

/* Each refusal leaves the buffer as it was and sticks; returns the code. */
static int encode_err(uint16_t type, const union coop_msg *m) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  int r = coop_wire_encode(&b, type, 1, m);
  ck_assert_uint_eq(b.len, 0);
  ck_assert_int_eq(b.err, r);
  coop_wire_buf_free(&b);
  return r;
}

START_TEST(encode_refuses_invalid_messages) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_int_eq(encode_err(COOP_MSG_HELLO, NULL), COOP_EINVAL);
  m.submit.nargs = COOP_WIRE_MAX_ARGS + 1;
  ck_assert_int_eq(encode_err(COOP_MSG_SUBMIT, &m), COOP_ETOOBIG);
  m.submit.nargs = 1;
  m.submit.args[0] = buf_arg(COOP_BUF_IN, COOP_WIRE_FD_NONE, 4, "abc", 3);
  ck_assert_int_eq(encode_err(COOP_MSG_SUBMIT, &m), COOP_EINVAL);
  m.submit.args[0] = buf_arg(COOP_BUF_IN, COOP_WIRE_FD_NONE, 4, NULL, 4);
  ck_assert_int_eq(encode_err(COOP_MSG_SUBMIT, &m), COOP_EINVAL);
  memset(&m, 0, sizeof m);
  m.event = (struct coop_msg_event){1, 9, COOP_JOB_DONE, 0, 0, 0};
  ck_assert_int_eq(encode_err(COOP_MSG_EVENT, &m), COOP_EINVAL);
  memset(&m, 0, sizeof m);
  m.error.code = 0;
  ck_assert_int_eq(encode_err(COOP_MSG_ERROR, &m), COOP_EINVAL);
  memset(&m, 0, sizeof m);
  m.status_reply.n = 1; /* no records behind the count */
  ck_assert_int_eq(encode_err(COOP_MSG_STATUS_REPLY, &m), COOP_EINVAL);
  memset(&m, 0, sizeof m);
  m.result.state = COOP_JOB_DONE;
  m.result.ninst = COOP_WIRE_MAX_INST + 1;
  ck_assert_int_eq(encode_err(COOP_MSG_RESULT, &m), COOP_ETOOBIG);
  m.result.ninst = 0;
  m.result.nbuf = COOP_WIRE_MAX_ARGS + 1;
  ck_assert_int_eq(encode_err(COOP_MSG_RESULT, &m), COOP_ETOOBIG);

  /* TOP_REPLY: each count must match its records */
  struct store *st = calloc(1, sizeof *st);
  sample(COOP_MSG_TOP_REPLY, &m, st);
  union coop_msg t = m;
  t.top.nwg++; /* a wg count that does not match the records */
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.nwg--;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.wgs_len--; /* a record cut short */
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.nwg = COOP_WIRE_MAX_WG + 1;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_ETOOBIG);
  t = m, t.top.njobs++;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.njobs--;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.jobs_len -= 3;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  t = m, t.top.njobs = COOP_WIRE_MAX_TOPJOBS + 1;
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_ETOOBIG);
  t = m, t.top.jobs = NULL; /* records behind a NULL pointer */
  ck_assert_int_eq(encode_err(COOP_MSG_TOP_REPLY, &t), COOP_EINVAL);
  store_free(st);
  free(st);
}
END_TEST

/* A payload of exactly COOP_WIRE_MAX_PAYLOAD bytes is fine; one more is not. */
START_TEST(encode_payload_limit) {
  static uint8_t data[COOP_WIRE_INLINE_MAX];
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.result.state = COOP_JOB_DONE;
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_RESULT, 1, &m);
  size_t fixed = b.len - COOP_WIRE_HDR; /* everything but the buffers */
  coop_wire_buf_free(&b);
  size_t left = COOP_WIRE_MAX_PAYLOAD - fixed;
  m.result.nbuf = COOP_WIRE_MAX_ARGS;
  for (unsigned i = 0; i < COOP_WIRE_MAX_ARGS; i++) {
    size_t len = left - 5 < COOP_WIRE_INLINE_MAX ? left - 5 : COOP_WIRE_INLINE_MAX;
    if (i == COOP_WIRE_MAX_ARGS - 1) ck_assert_uint_lt(len, COOP_WIRE_INLINE_MAX);
    m.result.bufs[i] = (struct coop_wire_outbuf){(uint8_t)i, data, (uint32_t)len};
    left -= 5 + len;
  }
  ck_assert_uint_eq(left, 0);
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_RESULT, 1, &m);
  ck_assert_uint_eq(b.len, COOP_WIRE_HDR + COOP_WIRE_MAX_PAYLOAD);
  coop_wire_buf_free(&b);
  m.result.bufs[COOP_WIRE_MAX_ARGS - 1].len++;
  ck_assert_int_eq(encode_err(COOP_MSG_RESULT, &m), COOP_ETOOBIG);
}
END_TEST

START_TEST(record_puts_refuse) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  struct coop_wire_status s = {.job = 1, .state = COOP_JOB_DONE, .kernel = "k"};
  ck_assert_int_eq(coop_wire_status_put(&b, &s), 0);
  size_t one = b.len;
  s.state = 0;
  ck_assert_int_eq(coop_wire_status_put(&b, &s), COOP_EINVAL);
  ck_assert_uint_eq(b.len, one);
  s.state = COOP_JOB_DONE;
  ck_assert_int_eq(coop_wire_status_put(&b, &s), COOP_EINVAL); /* sticky */
  ck_assert_uint_eq(b.len, one);
  coop_wire_buf_free(&b);

  struct coop_wire_kernel k = {.name = "k", .nargs = COOP_WIRE_MAX_ARGS + 1};
  ck_assert_int_eq(coop_wire_kernel_put(&b, &k), COOP_ETOOBIG);
  ck_assert_uint_eq(b.len, 0);
  coop_wire_buf_free(&b);
  k.nargs = 1, k.types[0] = 0;
  ck_assert_int_eq(coop_wire_kernel_put(&b, &k), COOP_EINVAL);
  coop_wire_buf_free(&b);
  memset(k.name, 'n', sizeof k.name);
  k.types[0] = COOP_ARG_BUF;
  ck_assert_int_eq(coop_wire_kernel_put(&b, &k), COOP_ETOOBIG);
  coop_wire_buf_free(&b);

  /* records past one payload's worth */
  struct coop_wire_inst in = {.state = COOP_JOB_DONE};
  unsigned fit = COOP_WIRE_MAX_PAYLOAD / COOP_WIRE_INST_BYTES, n = 0;
  while (n < fit && coop_wire_inst_put(&b, &in) == 0) n++;
  ck_assert_uint_eq(n, fit);
  ck_assert_int_eq(coop_wire_inst_put(&b, &in), COOP_ETOOBIG);
  ck_assert_uint_eq(b.len, (size_t)fit * COOP_WIRE_INST_BYTES);
  coop_wire_buf_free(&b);
  in.state = 42;
  ck_assert_int_eq(coop_wire_inst_put(&b, &in), COOP_EINVAL);
  coop_wire_buf_free(&b);

  /* workgroup records: a known state, no job for FREE and OTHER */
  struct coop_wire_wg w = {COOP_WG_RUNNING, 5};
  ck_assert_int_eq(coop_wire_wg_put(&b, &w), 0);
  ck_assert_uint_eq(b.len, 9);
  w = (struct coop_wire_wg){COOP_WG_OTHER + 1, 0};
  ck_assert_int_eq(coop_wire_wg_put(&b, &w), COOP_EINVAL);
  ck_assert_uint_eq(b.len, 9);
  w = (struct coop_wire_wg){COOP_WG_FREE, 0};
  ck_assert_int_eq(coop_wire_wg_put(&b, &w), COOP_EINVAL); /* sticky */
  ck_assert_uint_eq(b.len, 9);
  coop_wire_buf_free(&b);
  w = (struct coop_wire_wg){COOP_WG_FREE, 7};
  ck_assert_int_eq(coop_wire_wg_put(&b, &w), COOP_EINVAL);
  coop_wire_buf_free(&b);
  w = (struct coop_wire_wg){COOP_WG_OTHER, 7}; /* would leak another user's job */
  ck_assert_int_eq(coop_wire_wg_put(&b, &w), COOP_EINVAL);
  ck_assert_uint_eq(b.len, 0);
  coop_wire_buf_free(&b);

  /* job records */
  struct coop_wire_topjob j = {.job = 1, .kernel = "k", .cooperative = 2};
  ck_assert_int_eq(coop_wire_topjob_put(&b, &j), COOP_EINVAL);
  ck_assert_uint_eq(b.len, 0);
  ck_assert_int_eq(coop_wire_topjob_put(&b, &j), COOP_EINVAL);
  coop_wire_buf_free(&b);
  j.cooperative = 1;
  memset(j.kernel, 'n', sizeof j.kernel); /* unterminated */
  ck_assert_int_eq(coop_wire_topjob_put(&b, &j), COOP_ETOOBIG);
  ck_assert_uint_eq(b.len, 0);
  coop_wire_buf_free(&b);
  strcpy(j.kernel, "bfs");
  ck_assert_int_eq(coop_wire_topjob_put(&b, &j), 0);
  ck_assert_uint_eq(b.len, 8 + 2 + 3 + 1 + 24);
  coop_wire_buf_free(&b);
}
END_TEST

/* ---- the reader ---- */

/* One frame of every type, back to back; offsets of each frame in off[]. */
static void stream(struct coop_wire_buf *b, size_t *off) {
  coop_wire_buf_init(b);
  for (size_t i = 0; i < NTYPES; i++) {
    struct store *st = calloc(1, sizeof *st);
    union coop_msg m;
    sample(all_types[i], &m, st);
    off[i] = b->len;
    encode_ok(b, all_types[i], (uint32_t)i, &m);
    store_free(st);
    free(st);
  }
  off[NTYPES] = b->len;
}

/* Takes every complete frame, checking each against the stream. */
static size_t drain(struct coop_wire_reader *r, const struct coop_wire_buf *s, const size_t *off,
                    size_t got) {
  struct coop_wire_hdr h;
  const uint8_t *p;
  int k;
  while ((k = coop_wire_reader_next(r, &h, &p, NULL, NULL)) == 1) {
    ck_assert_uint_lt(got, NTYPES);
    ck_assert_uint_eq(h.type, all_types[got]);
    ck_assert_uint_eq(h.seq, got);
    ck_assert_uint_eq(COOP_WIRE_HDR + h.len, off[got + 1] - off[got]);
    ck_assert_mem_eq(p, s->p + off[got] + COOP_WIRE_HDR, h.len);
    got++;
  }
  ck_assert_int_eq(k, 0);
  return got;
}

static void feed_in_chunks(size_t maxchunk) {
  struct coop_wire_buf s;
  size_t off[NTYPES + 1], got = 0;
  stream(&s, off);
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  for (size_t pos = 0; pos < s.len;) {
    size_t n = maxchunk == 1 ? 1 : 1 + rnd() % maxchunk;
    if (n > s.len - pos) n = s.len - pos;
    ck_assert_int_eq(coop_wire_reader_feed(&r, s.p + pos, n, NULL, 0), 0);
    pos += n;
    got = drain(&r, &s, off, got);
  }
  ck_assert_uint_eq(got, NTYPES);
  coop_wire_reader_free(&r);
  coop_wire_buf_free(&s);
}

START_TEST(reader_byte_at_a_time) { feed_in_chunks(1); }
END_TEST

START_TEST(reader_random_chunks) {
  const size_t sizes[] = {2, 7, 16, 17, 100, 1000, 5000, 1u << 20};
  for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int rep = 0; rep < 5; rep++) feed_in_chunks(sizes[i]);
}
END_TEST

START_TEST(reader_bad_header_sticks) {
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  uint8_t b[COOP_WIRE_HDR];
  put_hdr(b, COOP_WIRE_MAGIC, 1, COOP_MSG_OK, 0);
  b[0] ^= 0x20;
  struct coop_wire_hdr h;
  const uint8_t *p;
  ck_assert_int_eq(coop_wire_reader_feed(&r, b, COOP_WIRE_HDR - 1, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), 0); /* not whole yet */
  ck_assert_int_eq(coop_wire_reader_feed(&r, b + COOP_WIRE_HDR - 1, 1, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), COOP_EPROTO);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), COOP_EPROTO);
  put_hdr(b, COOP_WIRE_MAGIC, 1, COOP_MSG_OK, 0);
  ck_assert_int_eq(coop_wire_reader_feed(&r, b, COOP_WIRE_HDR, NULL, 0), COOP_EPROTO);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), COOP_EPROTO);
  coop_wire_reader_free(&r);

  coop_wire_reader_init(&r);
  put_hdr(b, COOP_WIRE_MAGIC, 1, COOP_MSG_SUBMIT, COOP_WIRE_MAX_PAYLOAD);
  ck_assert_int_eq(coop_wire_reader_feed(&r, b, COOP_WIRE_HDR, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), 0); /* waits for 4 MiB */
  coop_wire_reader_free(&r);
  coop_wire_reader_init(&r);
  put_hdr(b, COOP_WIRE_MAGIC, 1, COOP_MSG_SUBMIT, COOP_WIRE_MAX_PAYLOAD + 1);
  ck_assert_int_eq(coop_wire_reader_feed(&r, b, COOP_WIRE_HDR, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), COOP_ETOOBIG);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), COOP_ETOOBIG);
  coop_wire_reader_free(&r);
}
END_TEST

static int is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

static int new_fd(void) {
  int fd = memfd_create("test_wire", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  return fd;
}

static ino_t ino(int fd) {
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  return st.st_ino;
}

/* Two OK frames a and b in buf; returns the frame size. */
static size_t two_frames(uint8_t *buf) {
  put_hdr(buf, COOP_WIRE_MAGIC, 1, COOP_MSG_STATUS, 8);
  memset(buf + COOP_WIRE_HDR, 0, 8);
  memcpy(buf + 24, buf, 24);
  buf[24 + 11] = 10; /* the second frame's seq */
  return 24;
}

START_TEST(reader_fds_follow_their_frame) {
  uint8_t f[48];
  two_frames(f);
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  int fd = new_fd(), got[COOP_WIRE_MAX_FDS];
  ino_t want = ino(fd);
  unsigned n = 99;
  struct coop_wire_hdr h;
  const uint8_t *p;
  /* the chunk with the descriptor holds the end of frame 1 and the start of 2 */
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 10, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_feed(&r, f + 10, 20, &fd, 1), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(h.seq, 9);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 0);
  ck_assert_int_eq(coop_wire_reader_feed(&r, f + 30, 18, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(h.seq, 10);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(ino(got[0]), want);
  close(got[0]);
  coop_wire_reader_free(&r);

  /* both frames glued in front of nothing: the last start owns it */
  coop_wire_reader_init(&r);
  fd = new_fd();
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 48, &fd, 1), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(got[0], fd);
  close(fd);
  coop_wire_reader_free(&r);
}
END_TEST

START_TEST(reader_fds_errors_close) {
  uint8_t f[48];
  two_frames(f);
  struct coop_wire_reader r;
  struct coop_wire_hdr h;
  const uint8_t *p;
  int fds[COOP_WIRE_MAX_FDS + 4], got[COOP_WIRE_MAX_FDS];
  unsigned n;
  /* descriptors with bytes in the middle of a frame */
  coop_wire_reader_init(&r);
  fds[0] = new_fd();
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 5, NULL, 0), 0);
  ck_assert_int_eq(coop_wire_reader_feed(&r, f + 5, 5, fds, 1), COOP_EPROTO);
  ck_assert(!is_open(fds[0]));
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), COOP_EPROTO);
  coop_wire_reader_free(&r);

  /* 4 frames of 16 descriptors pending fill the queue; a 65th is refused */
  coop_wire_reader_init(&r);
  for (int k = 0; k < 4; k++) {
    for (unsigned i = 0; i < COOP_WIRE_MAX_FDS; i++) fds[i] = new_fd();
    ck_assert_int_eq(coop_wire_reader_feed(&r, f, 24, fds, COOP_WIRE_MAX_FDS), 0);
  }
  int last = fds[0], extra = new_fd();
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 24, &extra, 1), COOP_ETOOBIG);
  ck_assert(!is_open(extra));
  ck_assert(is_open(last));
  coop_wire_reader_free(&r); /* closes the queued ones */
  ck_assert(!is_open(last));

  /* more than COOP_WIRE_MAX_FDS with one frame: the rest are closed */
  coop_wire_reader_init(&r);
  for (unsigned i = 0; i < COOP_WIRE_MAX_FDS + 4; i++) fds[i] = new_fd();
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 48, fds, COOP_WIRE_MAX_FDS + 4), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, got, &n), 1);
  ck_assert_uint_eq(n, COOP_WIRE_MAX_FDS);
  for (unsigned i = 0; i < COOP_WIRE_MAX_FDS; i++) {
    ck_assert_int_eq(got[i], fds[i]);
    close(got[i]);
  }
  for (unsigned i = COOP_WIRE_MAX_FDS; i < COOP_WIRE_MAX_FDS + 4; i++) ck_assert(!is_open(fds[i]));
  coop_wire_reader_free(&r);

  /* a caller that takes no descriptors gets them closed */
  coop_wire_reader_init(&r);
  fds[0] = new_fd();
  ck_assert_int_eq(coop_wire_reader_feed(&r, f, 24, fds, 1), 0);
  ck_assert_int_eq(coop_wire_reader_next(&r, &h, &p, NULL, NULL), 1);
  ck_assert(!is_open(fds[0]));
  coop_wire_reader_free(&r);
}
END_TEST

/* ---- sockets ---- */

struct taken {
  uint16_t type[8];
  unsigned nfds[8];
  int fds[8][COOP_WIRE_MAX_FDS];
  unsigned n;
};

/* Reads the socket until EOF through a reader, cap bytes per recv. */
static void read_all(int sock, size_t cap, struct taken *t) {
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  uint8_t *buf = malloc(cap);
  long k;
  t->n = 0;
  for (;;) {
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nfds;
    k = coop_wire_recv(sock, buf, cap, fds, &nfds);
    ck_assert_int_ge(k, 0);
    if (k == 0) break;
    ck_assert_int_eq(coop_wire_reader_feed(&r, buf, (size_t)k, fds, nfds), 0);
    struct coop_wire_hdr h;
    const uint8_t *p;
    while (t->n < 8 && coop_wire_reader_next(&r, &h, &p, t->fds[t->n], &t->nfds[t->n]) == 1)
      t->type[t->n++] = h.type;
  }
  free(buf);
  coop_wire_reader_free(&r);
}

static void send_frame(int sock, const struct coop_wire_buf *b, const int *fds, unsigned n) {
  size_t sent = 0;
  ck_assert_int_eq(coop_wire_send(sock, b->p, b->len, fds, n, &sent), 0);
  ck_assert_uint_eq(sent, b->len);
}

static void fds_over_socket(size_t cap) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int mem[2] = {new_fd(), new_fd()};
  ck_assert_int_eq(write(mem[1], "payload", 7), 7);
  ino_t inos[2] = {ino(mem[0]), ino(mem[1])};
  union coop_msg m = {.hello = {1, 1, "t"}};
  struct coop_wire_buf a, s, c;
  coop_wire_buf_init(&a), coop_wire_buf_init(&s), coop_wire_buf_init(&c);
  encode_ok(&a, COOP_MSG_HELLO, 1, &m);
  memset(&m, 0, sizeof m);
  strcpy(m.submit.kernel, "k");
  m.submit.nargs = 2;
  m.submit.args[0] = buf_arg(COOP_BUF_IN, 0, 8, NULL, 0);
  m.submit.args[1] = buf_arg(COOP_BUF_INOUT, 1, 7, NULL, 0);
  encode_ok(&s, COOP_MSG_SUBMIT, 2, &m);
  encode_ok(&c, COOP_MSG_STATS, 3, NULL);
  send_frame(sv[0], &a, NULL, 0);
  send_frame(sv[0], &s, mem, 2);
  send_frame(sv[0], &c, NULL, 0);
  send_frame(sv[0], &a, NULL, 0);
  close(mem[0]), close(mem[1]), close(sv[0]);
  struct taken t;
  read_all(sv[1], cap, &t);
  close(sv[1]);
  ck_assert_uint_eq(t.n, 4);
  const uint16_t types[] = {COOP_MSG_HELLO, COOP_MSG_SUBMIT, COOP_MSG_STATS, COOP_MSG_HELLO};
  const unsigned nfds[] = {0, 2, 0, 0};
  for (unsigned i = 0; i < 4; i++) {
    ck_assert_uint_eq(t.type[i], types[i]);
    ck_assert_uint_eq(t.nfds[i], nfds[i]);
  }
  for (unsigned i = 0; i < 2; i++) {
    ck_assert_uint_eq(ino(t.fds[1][i]), inos[i]);
    ck_assert_int_ne(fcntl(t.fds[1][i], F_GETFD) & FD_CLOEXEC, 0);
  }
  char got[8] = {0};
  ck_assert_int_eq(pread(t.fds[1][1], got, 7, 0), 7);
  ck_assert_str_eq(got, "payload");
  close(t.fds[1][0]), close(t.fds[1][1]);
  coop_wire_buf_free(&a), coop_wire_buf_free(&s), coop_wire_buf_free(&c);
}

START_TEST(socket_fds_reach_their_frame) {
  fds_over_socket(65536); /* the kernel glues the HELLO in front of the SUBMIT */
  fds_over_socket(7);
  fds_over_socket(1);
}
END_TEST

START_TEST(socket_send_checks) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  encode_ok(&b, COOP_MSG_OK, 1, NULL);
  encode_ok(&b, COOP_MSG_OK, 2, NULL);
  int fd = new_fd(), many[COOP_WIRE_MAX_FDS + 1] = {0};
  size_t sent = 99;
  /* descriptors need exactly one frame */
  ck_assert_int_eq(coop_wire_send(sv[0], b.p, b.len, &fd, 1, &sent), COOP_EINVAL);
  ck_assert_uint_eq(sent, 0);
  ck_assert_int_eq(coop_wire_send(sv[0], b.p, 10, &fd, 1, &sent), COOP_EINVAL);
  ck_assert_int_eq(coop_wire_send(sv[0], b.p, 16, many, COOP_WIRE_MAX_FDS + 1, &sent),
                   COOP_ETOOBIG);
  ck_assert_int_eq(coop_wire_send(sv[0], b.p, 16, &fd, 1, &sent), 0);
  ck_assert_uint_eq(sent, 16);
  /* a reader that accepts no descriptors: the bytes still arrive */
  uint8_t in[64];
  ck_assert_int_eq(coop_wire_recv(sv[1], in, sizeof in, NULL, NULL), 16);
  ck_assert_mem_eq(in, b.p, 16);
  ck_assert_int_eq(coop_wire_recv(sv[1], in, 0, NULL, NULL), COOP_EINVAL);
  close(fd);
  /* the peer is gone: ECLOSED, and no SIGPIPE (MSG_NOSIGNAL) */
  close(sv[1]);
  ck_assert_int_eq(coop_wire_send(sv[0], b.p, b.len, NULL, 0, &sent), COOP_ECLOSED);
  close(sv[0]);
  coop_wire_buf_free(&b);
}
END_TEST

START_TEST(socket_nonblocking) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  uint8_t in[16];
  int fds[COOP_WIRE_MAX_FDS];
  unsigned n = 7;
  ck_assert_int_eq(coop_wire_recv(sv[1], in, sizeof in, fds, &n), COOP_ETIMEDOUT);
  ck_assert_uint_eq(n, 0);
  size_t len = 16u << 20, sent = 0;
  uint8_t *big = calloc(1, len);
  ck_assert_int_eq(coop_wire_send(sv[0], big, len, NULL, 0, &sent), 0);
  ck_assert_uint_gt(sent, 0); /* partial: the caller waits for POLLOUT */
  ck_assert_uint_lt(sent, len);
  size_t more = 99;
  ck_assert_int_eq(coop_wire_send(sv[0], big + sent, len - sent, NULL, 0, &more), 0);
  ck_assert_uint_eq(more, 0);
  ck_assert_int_eq(coop_wire_send(sv[0], big, len, NULL, 0, NULL), COOP_ETIMEDOUT);
  close(sv[0]);
  size_t total = 0;
  long k;
  while ((k = coop_wire_recv(sv[1], big, len, NULL, NULL)) > 0) total += (size_t)k;
  ck_assert_int_eq(k, 0); /* EOF after the bytes that were sent */
  ck_assert_uint_eq(total, sent);
  close(sv[1]);
  free(big);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("wire");
  TCase *c = tcase_create("codec");
  tcase_set_timeout(c, 120);
  tcase_add_test(c, round_trip_every_type);
  tcase_add_test(c, empty_payloads_are_headers_only);
  tcase_add_test(c, hello_bytes);
  tcase_add_test(c, event_bytes);
  tcase_add_test(c, top_reply_bytes);
  tcase_add_test(c, records_iterate);
  tcase_add_test(c, names);
  tcase_add_test(c, header_errors);
  tcase_add_test(c, truncation_never_decodes);
  tcase_add_test(c, stats_tail);
  tcase_add_test(c, buffer_messages);
  suite_add_tcase(s, c);
  TCase *d = tcase_create("reject");
  tcase_add_test(d, reject_short_and_trailing);
  tcase_add_test(d, reject_unknown_type);
  tcase_add_test(d, reject_long_strings);
  tcase_add_test(d, reject_nul_in_string);
  tcase_add_test(d, reject_submit_enums_and_flags);
  tcase_add_test(d, devbuf_io_arguments);
  tcase_add_test(d, reject_scalar_high_bits);
  tcase_add_test(d, reject_too_many_args);
  tcase_add_test(d, reject_inline_data_rules);
  tcase_add_test(d, reject_fd_index);
  tcase_add_test(d, reject_status_records);
  tcase_add_test(d, reject_kernel_records);
  tcase_add_test(d, kernel_author_messages);
  tcase_add_test(d, reject_top_records);
  tcase_add_test(d, reject_result);
  tcase_add_test(d, reject_event_subscribe_error);
  suite_add_tcase(s, d);
  TCase *e = tcase_create("encode");
  tcase_set_timeout(e, 60);
  tcase_add_test(e, encode_refuses_and_sticks);
  tcase_add_test(e, encode_refuses_invalid_messages);
  tcase_add_test(e, encode_payload_limit);
  tcase_add_test(e, record_puts_refuse);
  suite_add_tcase(s, e);
  TCase *r = tcase_create("reader");
  tcase_set_timeout(r, 120);
  tcase_add_test(r, reader_byte_at_a_time);
  tcase_add_test(r, reader_random_chunks);
  tcase_add_test(r, reader_bad_header_sticks);
  tcase_add_test(r, reader_fds_follow_their_frame);
  tcase_add_test(r, reader_fds_errors_close);
  suite_add_tcase(s, r);
  TCase *k = tcase_create("socket");
  tcase_add_test(k, socket_fds_reach_their_frame);
  tcase_add_test(k, socket_send_checks);
  tcase_add_test(k, socket_nonblocking);
  suite_add_tcase(s, k);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
