/*
 * coop_stats_wire.c: STATS_REPLY into coop.h's coop_stats and coop_metrics
 * (coop_prom.h), for libcoop and for coopd's own /metrics.
 */
#include <stdio.h>
#include <string.h>

#include "coop_prom.h"

void coop__stats_from_wire(struct coop_stats *d, const struct coop_msg_stats_reply *s) {
  snprintf(d->backend, sizeof d->backend, "%s", s->backend);
  snprintf(d->device, sizeof d->device, "%s", s->device);
  snprintf(d->backend_note, sizeof d->backend_note, "%s", s->backend_note);
  d->compute_units = s->compute_units;
  d->workers = s->workers;
  d->clients = s->clients;
  d->queued = s->queued;
  d->running = s->running;
  d->submitted = s->submitted;
  d->done = s->done;
  d->cancelled = s->cancelled;
  d->refused = s->refused;
  d->failed = s->failed;
  d->samples = s->samples;
  d->gather_p50 = s->gather_p50;
  d->gather_p90 = s->gather_p90;
  d->gather_p99 = s->gather_p99;
  d->gather_max = s->gather_max;
  d->gather_timeouts = s->gather_timeouts;
  d->hung = s->hung;
  d->lost_workers = s->lost_workers;
  snprintf(d->watchdog, sizeof d->watchdog, "%s", s->watchdog);
  d->ndevices = s->ndevices;
  for (unsigned i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++) {
    snprintf(d->devs[i].device, sizeof d->devs[i].device, "%s", s->devs[i].device);
    snprintf(d->devs[i].backend, sizeof d->devs[i].backend, "%s", s->devs[i].backend);
    d->devs[i].compute_units = s->devs[i].compute_units;
    d->devs[i].workers = s->devs[i].workers;
    d->devs[i].lost_workers = s->devs[i].lost_workers;
    d->devs[i].jobs = s->devs[i].jobs;
    d->devs[i].parked = s->devs[i].parked;
    d->devs[i].parks = s->devs[i].parks;
    d->devs[i].unpark_ns = s->devs[i].unpark_ns;
  }
}

void coop__metrics_from_wire(struct coop_metrics *d, const struct coop_msg_stats_reply *s) {
  memset(d, 0, sizeof *d);
  if (!s->ext) return;
  d->available = 1;
  snprintf(d->daemon_version, sizeof d->daemon_version, "%s", s->daemon_version);
  d->uptime_ns = s->uptime_ns;
  d->nbounds = s->nbounds < COOP_MAX_BOUNDS ? s->nbounds : COOP_MAX_BOUNDS;
  memcpy(d->bound, s->bound, d->nbounds * sizeof *d->bound);
  for (unsigned i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++) {
    const struct coop_wire_devmetrics *w = &s->met[i];
    struct coop_device_metrics *o = &d->devs[i];
    o->busy_workers = w->busy_workers;
    o->arena_bytes = w->arena_bytes;
    o->arena_used = w->arena_used;
    o->gather_sum_ns = w->gather_sum_ns;
    memcpy(o->bucket, w->gather_bucket, (d->nbounds + 1) * sizeof *o->bucket);
    o->deadline_instances = w->deadline_instances;
    o->deadline_misses = w->deadline_misses;
  }
}
