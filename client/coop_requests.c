/*
 * coop_requests.c: WAIT, CANCEL, STATUS, STATS, KERNELS and TOP, their replies
 * copied into the public structs, and the names of the public enums.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_copy.h"
#include "coop_internal.h"
#include "coop_prom.h"

/* coop.h repeats the wire's enum values so that it need not include wire.h
 * (the limits it shares: coop_limits.h). */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(COOP_STATE_QUEUED, COOP_JOB_QUEUED) &&
                   SAME(COOP_STATE_RUNNING, COOP_JOB_RUNNING) &&
                   SAME(COOP_STATE_DONE, COOP_JOB_DONE) &&
                   SAME(COOP_STATE_CANCELLED, COOP_JOB_CANCELLED) &&
                   SAME(COOP_STATE_REFUSED, COOP_JOB_REFUSED) &&
                   SAME(COOP_STATE_FAILED, COOP_JOB_FAILED),
               "job states");
_Static_assert(SAME(COOP_TYPE_U32, COOP_ARG_U32) && SAME(COOP_TYPE_I32, COOP_ARG_I32) &&
                   SAME(COOP_TYPE_U64, COOP_ARG_U64) && SAME(COOP_TYPE_I64, COOP_ARG_I64) &&
                   SAME(COOP_TYPE_F32, COOP_ARG_F32) && SAME(COOP_TYPE_F64, COOP_ARG_F64) &&
                   SAME(COOP_TYPE_BUF, COOP_ARG_BUF),
               "argument types");
_Static_assert(SAME(COOP_EVENT_RELEASED, COOP_EV_RELEASED) &&
                   SAME(COOP_EVENT_GATHERED, COOP_EV_GATHERED) &&
                   SAME(COOP_EVENT_STARTED, COOP_EV_STARTED) &&
                   SAME(COOP_EVENT_FINISHED, COOP_EV_FINISHED) && COOP_EVENTS_ALL == COOP_EV_ALL,
               "event kinds");
_Static_assert(SAME(COOP_WORKER_FREE, COOP_WG_FREE) && SAME(COOP_WORKER_RUNNING, COOP_WG_RUNNING) &&
                   SAME(COOP_WORKER_RESERVED, COOP_WG_RESERVED) &&
                   SAME(COOP_WORKER_OTHER, COOP_WG_OTHER),
               "workgroup states");

/* ---- WAIT ---- */

static void copy_inst(struct coop_instance *d, const struct coop_wire_inst *s) {
  COOP_SCHEMA_INST(COOP__COPY)
}

static int copy_result(struct coop_result *d, const struct coop_msg_result *s) {
  COOP_SCHEMA_RESULT(COOP__COPY)
  if (!s->ninst) return 0;
  d->inst = calloc(s->ninst, sizeof *d->inst);
  if (!d->inst) return coop__fail(COOP_ENOMEM, "out of memory");
  d->ninst = s->ninst;
  for (uint32_t i = 0; i < s->ninst; i++) {
    struct coop_wire_inst w;
    if (coop_wire_inst_get(s, i, &w)) return coop__fail(COOP_EPROTO, "bad instance record");
    copy_inst(&d->inst[i], &w);
  }
  return 0;
}

/* The daemon answers a WAIT by its own timeout; ours only covers a daemon
 * that does not answer at all. */
static int reply_timeout(int timeout_ms, int grace_ms) {
  if (timeout_ms < 0 || grace_ms < 0) return -1;
  return timeout_ms > INT_MAX - grace_ms ? INT_MAX : timeout_ms + grace_ms;
}

int coop_wait(coop_conn *c, uint64_t job, int timeout_ms, struct coop_result *r) {
  coop__clear_msg();
  if (!c || !r) return coop__fail(COOP_EINVAL, "wait: no connection or result");
  memset(r, 0, sizeof *r);
  union coop_msg *m = malloc(2 * sizeof *m); /* request and reply: see coop_submit */
  if (!m) return coop__fail(COOP_ENOMEM, "out of memory");
  memset(&m[0].job, 0, sizeof m[0].job);
  m[0].job.job = job;
  m[0].job.timeout_ms = timeout_ms < 0 ? COOP_WAIT_FOREVER : (uint32_t)timeout_ms;
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_WAIT, &m[0], NULL, 0,
                        reply_timeout(timeout_ms, coop__timeout(c)), COOP_MSG_RESULT, &m[1], &f);
  if (!e) e = coop__result_writeback(c, &m[1].result);
  if (!e) e = copy_result(r, &m[1].result);
  if (e) coop_result_free(r);
  coop__frame_free(f);
  free(m);
  return e;
}

void coop_result_free(struct coop_result *r) {
  if (!r) return;
  free(r->inst);
  r->inst = NULL;
  r->ninst = 0;
}

/* ---- simple requests ---- */

/* A request whose payload is just a job id (or empty). */
static int ask(coop_conn *c, uint16_t type, uint64_t job, uint16_t want, union coop_msg *reply,
               struct coop_frame **f) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  return coop__request(c, type, &m, NULL, 0, coop__timeout(c), want, reply, f);
}

int coop_cancel(coop_conn *c, uint64_t job) {
  coop__clear_msg();
  if (!c) return coop__fail(COOP_EINVAL, "cancel: no connection");
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = ask(c, COOP_MSG_CANCEL, job, COOP_MSG_OK, &r, &f);
  coop__frame_free(f);
  return e;
}

int coop_migrate(coop_conn *c, uint64_t job, unsigned device) {
  coop__clear_msg();
  if (!c) return coop__fail(COOP_EINVAL, "migrate: no connection");
  if (device >= COOP_WIRE_ANY_DEVICE)
    return coop__fail(COOP_EINVAL, "migrate: no device %u", device);
  union coop_msg m, r;
  memset(&m, 0, sizeof m);
  m.migrate.job = job;
  m.migrate.device = (uint8_t)device;
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_MIGRATE, &m, NULL, 0, coop__timeout(c), COOP_MSG_OK, &r, &f);
  coop__frame_free(f);
  return e;
}

static void copy_status(struct coop_job_status *d, const struct coop_wire_status *s) {
  COOP_SCHEMA_STATUS(COOP__COPY)
  d->cooperative = !!(s->flags & COOP_SUBMIT_COOPERATIVE);
  d->query_barrier = !!(s->flags & COOP_SUBMIT_QUERY_BARRIER);
}

static int status_list(const struct coop_msg_status_reply *m, struct coop_job_status **list,
                       size_t *n) {
  if (!m->n) return 0;
  struct coop_job_status *l = calloc(m->n, sizeof *l);
  if (!l) return coop__fail(COOP_ENOMEM, "out of memory");
  uint32_t off = 0;
  for (uint32_t i = 0; i < m->n; i++) {
    struct coop_wire_status s;
    if (coop_wire_status_next(m, &off, &s)) {
      free(l);
      return coop__fail(COOP_EPROTO, "bad status record");
    }
    copy_status(&l[i], &s);
  }
  *list = l;
  *n = m->n;
  return 0;
}

int coop_status(coop_conn *c, uint64_t job, struct coop_job_status **list, size_t *n) {
  coop__clear_msg();
  if (!c || !list || !n) return coop__fail(COOP_EINVAL, "status: no connection or list");
  *list = NULL;
  *n = 0;
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = ask(c, COOP_MSG_STATUS, job, COOP_MSG_STATUS_REPLY, &r, &f);
  if (!e) e = status_list(&r.status_reply, list, n);
  coop__frame_free(f);
  return e;
}

int coop_stats(coop_conn *c, struct coop_stats *s) {
  coop__clear_msg();
  if (!c || !s) return coop__fail(COOP_EINVAL, "stats: no connection or stats");
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = ask(c, COOP_MSG_STATS, 0, COOP_MSG_STATS_REPLY, &r, &f);
  if (!e) coop__stats_from_wire(s, &r.stats);
  coop__frame_free(f);
  return e;
}

int coop_metrics(coop_conn *c, struct coop_stats *s, struct coop_metrics *m) {
  coop__clear_msg();
  if (!c || !m) return coop__fail(COOP_EINVAL, "metrics: no connection or metrics");
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = ask(c, COOP_MSG_STATS, 0, COOP_MSG_STATS_REPLY, &r, &f);
  if (!e && s) coop__stats_from_wire(s, &r.stats);
  if (!e) coop__metrics_from_wire(m, &r.stats);
  coop__frame_free(f);
  return e;
}

static void copy_kernel(struct coop_kernel *d, const struct coop_wire_kernel *s) {
  snprintf(d->name, sizeof d->name, "%s", s->name); /* owner: coop_kernels_info */
  d->cooperative = s->cooperative;
  d->nargs = s->nargs;
  for (unsigned a = 0; a < s->nargs && a < COOP_MAX_ARGS; a++) d->types[a] = s->types[a];
}

static int kernel_list(const struct coop_msg_kernel_list *m, struct coop_kernel **list, size_t *n) {
  if (!m->n) return 0;
  struct coop_kernel *l = calloc(m->n, sizeof *l);
  if (!l) return coop__fail(COOP_ENOMEM, "out of memory");
  uint32_t off = 0;
  for (uint32_t i = 0; i < m->n; i++) {
    struct coop_wire_kernel k;
    if (coop_wire_kernel_next(m, &off, &k)) {
      free(l);
      return coop__fail(COOP_EPROTO, "bad kernel record");
    }
    copy_kernel(&l[i], &k);
  }
  *list = l;
  *n = m->n;
  return 0;
}

int coop_kernels(coop_conn *c, struct coop_kernel **list, size_t *n) {
  coop__clear_msg();
  if (!c || !list || !n) return coop__fail(COOP_EINVAL, "kernels: no connection or list");
  *list = NULL;
  *n = 0;
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = ask(c, COOP_MSG_KERNELS, 0, COOP_MSG_KERNEL_LIST, &r, &f);
  if (!e) e = kernel_list(&r.kernels, list, n);
  coop__frame_free(f);
  return e;
}

/* ---- TOP ---- */

static void copy_wg(struct coop_wg *d, const struct coop_wire_wg *s) { COOP_SCHEMA_WG(COOP__COPY) }

static void copy_topjob(struct coop_topjob *d, const struct coop_wire_topjob *s) {
  COOP_SCHEMA_TOPJOB(COOP__COPY)
}

static int wg_list(const struct coop_msg_top_reply *m, struct coop_wg **list, size_t *n) {
  if (!m->nwg) return 0;
  struct coop_wg *l = calloc(m->nwg, sizeof *l);
  if (!l) return coop__fail(COOP_ENOMEM, "out of memory");
  uint32_t off = 0;
  for (uint32_t i = 0; i < m->nwg; i++) {
    struct coop_wire_wg w;
    if (coop_wire_wg_next(m, &off, &w)) {
      free(l);
      return coop__fail(COOP_EPROTO, "bad workgroup record");
    }
    copy_wg(&l[i], &w);
  }
  *list = l;
  *n = m->nwg;
  return 0;
}

static int topjob_list(const struct coop_msg_top_reply *m, struct coop_topjob **list, size_t *n) {
  if (!m->njobs) return 0;
  struct coop_topjob *l = calloc(m->njobs, sizeof *l);
  if (!l) return coop__fail(COOP_ENOMEM, "out of memory");
  uint32_t off = 0;
  for (uint32_t i = 0; i < m->njobs; i++) {
    struct coop_wire_topjob j;
    if (coop_wire_topjob_next(m, &off, &j)) {
      free(l);
      return coop__fail(COOP_EPROTO, "bad top job record");
    }
    copy_topjob(&l[i], &j);
  }
  *list = l;
  *n = m->njobs;
  return 0;
}

int coop_top(coop_conn *c, struct coop_wg **wgs, size_t *nwg, struct coop_topjob **jobs,
             size_t *njobs) {
  return coop_top_device(c, 0, wgs, nwg, jobs, njobs);
}

int coop_top_device(coop_conn *c, int device, struct coop_wg **wgs, size_t *nwg,
                    struct coop_topjob **jobs, size_t *njobs) {
  coop__clear_msg();
  if (!c || !wgs || !nwg || !jobs || !njobs)
    return coop__fail(COOP_EINVAL, "top: no connection or lists");
  if (device < 0 || device >= (int)COOP_MAX_DEVICES)
    return coop__fail(COOP_EINVAL, "top: device %d: want 0..%u", device, COOP_MAX_DEVICES - 1);
  *wgs = NULL;
  *jobs = NULL;
  *nwg = *njobs = 0;
  union coop_msg r;
  struct coop_frame *f = NULL;
  union coop_msg q;
  memset(&q, 0, sizeof q);
  q.top_req.device = (uint8_t)device;
  int e = coop__request(c, COOP_MSG_TOP, &q, NULL, 0, coop__timeout(c), COOP_MSG_TOP_REPLY, &r, &f);
  if (!e) e = wg_list(&r.top, wgs, nwg);
  if (!e) e = topjob_list(&r.top, jobs, njobs);
  if (e) {
    free(*wgs);
    *wgs = NULL;
    *nwg = 0;
  }
  coop__frame_free(f);
  return e;
}

/* ---- names ---- */

const char *coop_state_name(int state) {
  static const char *const n[] = {"?",         "queued",  "running", "done",
                                  "cancelled", "refused", "failed"};
  return state >= COOP_STATE_QUEUED && state <= COOP_STATE_FAILED ? n[state] : "unknown";
}

const char *coop_type_name(int type) {
  static const char *const n[] = {"?", "u32", "i32", "u64", "i64", "f32", "f64", "buf"};
  return type >= COOP_TYPE_U32 && type <= COOP_TYPE_BUF ? n[type] : "unknown";
}

const char *coop_elem_name(int elem) {
  return elem >= COOP_ELEM_ANY && elem <= COOP_ELEM_F64 ? coop_elem_type_name((uint8_t)elem)
                                                        : "unknown";
}

const char *coop_event_name(int kind) {
  static const char *const n[] = {"?", "released", "gathered", "started", "finished"};
  return kind >= COOP_EVENT_RELEASED && kind <= COOP_EVENT_FINISHED ? n[kind] : "unknown";
}

const char *coop_worker_state_name(int state) {
  static const char *const n[] = {"free", "running", "reserved", "other"};
  return state >= COOP_WORKER_FREE && state <= COOP_WORKER_OTHER ? n[state] : "unknown";
}
