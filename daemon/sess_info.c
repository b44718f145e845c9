/* sess_info.c: what a client may ask of coopd itself: HELLO, STATS, TOP,
 * KERNELS, SUBSCRIBE (session.h); kernel records (kdef_wire). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session.h"

void sess_hello(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                unsigned nfds) {
  const struct coop_msg_hello *h = &msg->hello;
  if (s->hello) {
    sess_error_last(s, seq, COOP_EPROTO, "HELLO twice");
    return;
  }
  if (h->min_version > COOP_WIRE_VERSION || h->max_version < COOP_WIRE_VERSION) {
    sess_error_last(
        s, seq, COOP_EVERSION,
        "this coopd speaks protocol version %u (8: a SUBMIT may leave the kernel's kind and "
        "width to coopd; 7: buffers' element types in KERNEL_LIST; 6: a device buffer's range "
        "moved with the job, devbuf_io; 5: the shared ring, RING_OPEN; 4: job priorities, "
        "kernel authors); the client %u..%u%s",
        COOP_WIRE_VERSION, h->min_version, h->max_version,
        h->max_version < COOP_WIRE_VERSION ? ": use the libcoop and coopctl of this coopd" : "");
    return;
  }
  s->hello = 1;
  uv_timer_stop(&s->hello_timer);
  /* The name goes into log lines (and journald): a newline or an escape
   * from a client would forge lines or drive a terminal. */
  snprintf(s->name, sizeof s->name, "%s", h->name);
  for (char *p = s->name; *p; p++)
    if (*p < 0x20 || *p > 0x7e) *p = '?';
  union coop_msg m;
  memset(&m, 0, sizeof m);
  struct coop_msg_welcome *w = &m.welcome;
  w->version = COOP_WIRE_VERSION;
  snprintf(w->daemon_version, sizeof w->daemon_version, "%s", COOP_VERSION);
  struct dev *d0 = s->dm->devs[0];
  dev_backend(d0, w->backend, sizeof w->backend);
  dev_name(d0, w->device, sizeof w->device);
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

/* STATS' device records, and the watchdog's counts over every device (the
 * latest event: the first device that has one). */
static void stats_devices(struct daemon *dm, uint32_t viewer, struct coop_msg_stats_reply *st) {
  st->ndevices = (uint8_t)dm->ndev;
  for (unsigned i = 0; i < dm->ndev; i++) {
    struct dev *d = dm->devs[i];
    struct coop_wire_devinfo *o = &st->devs[i];
    dev_name(d, o->device, sizeof o->device);
    dev_backend(d, o->backend, sizeof o->backend);
    o->compute_units = dev_compute_units(d);
    o->workers = dev_workers(d);
    o->jobs = dm->dev_jobs[i];
    o->parked = dev_parked(d); /* before the count, which is published first */
    o->parks = dev_parks(d);
    o->unpark_ns = dev_unpark_ns(d);
    struct dev_watch wd;
    dev_watch_get(d, viewer, &wd);
    o->lost_workers = wd.lost_workers;
    st->gather_timeouts += wd.gather_timeouts;
    st->hung += wd.hung;
    if (i == 0) st->lost_workers = wd.lost_workers;
    if (!st->watchdog[0] && wd.last[0])
      snprintf(st->watchdog, sizeof st->watchdog, "device %u: %.1000s", i, wd.last);
  }
}

void session_stats(struct daemon *dm, uint32_t viewer, struct coop_msg_stats_reply *st) {
  memset(st, 0, sizeof *st);
  struct dev *d0 = dm->devs[0];
  dev_backend(d0, st->backend, sizeof st->backend);
  dev_backend_note(d0, st->backend_note, sizeof st->backend_note);
  dev_name(d0, st->device, sizeof st->device);
  st->compute_units = dev_compute_units(d0);
  st->workers = dev_workers(d0);
  stats_devices(dm, viewer, st);
  st->clients = dm->nsessions;
  for (struct job *j = dm->live; j; j = j->live_next) jobs_count_instances(dm, j);
  jobs_stats(dm, st);
  metrics_stats(dm, &dm->met, st);
}

void sess_stats(struct session *s, uint32_t seq, const union coop_msg *m, int *fds, unsigned nfds) {
  union coop_msg r;
  memset(&r, 0, sizeof r);
  session_stats(s->dm, s->uid, &r.stats);
  sess_send(s, COOP_MSG_STATS_REPLY, seq, &r);
}

/* TOP: the device thread's last live view, filtered to what the client
 * may see (PROTOCOL.md). */
void sess_top(struct session *s, uint32_t seq, const union coop_msg *m, int *fds, unsigned nfds) {
  unsigned device = m->top_req.device;
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
    t.priority = vj->priority;
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

void kdef_wire(const struct kdef *k, struct coop_wire_kernel *w) {
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "%s", k->name);
  w->cooperative = (uint8_t)k->cooperative;
  w->owner = k->owner;
  w->nargs = (uint8_t)k->nargs;
  memcpy(w->types, k->types, k->nargs);
  memcpy(w->elems, k->elems, k->nargs);
  for (unsigned i = 0; i < k->nargs; i++)
    snprintf(w->argnames[i], sizeof w->argnames[i], "%s", k->argnames[i]);
  w->nrules = (uint8_t)k->nrules;
  for (unsigned i = 0; i < k->nrules; i++)
    snprintf(w->rules[i], sizeof w->rules[i], "%s", k->rules[i].text);
}

void sess_kernels(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                  unsigned nfds) {
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  for (unsigned i = 0; i < s->dm->ks->n; i++) {
    struct coop_wire_kernel wk;
    kdef_wire(&s->dm->ks->k[i], &wk);
    coop_wire_kernel_put(&recs, &wk);
  }
  r.kernels.n = s->dm->ks->n;
  r.kernels.recs = recs.p;
  r.kernels.recs_len = (uint32_t)recs.len;
  sess_send(s, COOP_MSG_KERNEL_LIST, seq, &r);
  coop_wire_buf_free(&recs);
}

void sess_subscribe(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                    unsigned nfds) {
  s->sub_mask = m->subscribe.mask;
  union coop_msg r;
  memset(&r, 0, sizeof r);
  sess_send(s, COOP_MSG_OK, seq, &r);
}
