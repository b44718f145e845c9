/*
 * coop_stats_wire.c: STATS_REPLY into coop_stats.h's coop_stats and
 * coop_metrics (coop_prom.h), for libcoop and for coopd's own /metrics.
 */
#include <stdio.h>
#include <string.h>

#include "coop_copy.h"
#include "coop_prom.h"

static void copy_devinfo(struct coop_device *d, const struct coop_wire_devinfo *s) {
  COOP_SCHEMA_DEVINFO(COOP__COPY)
}

static void copy_devmetrics(struct coop_device_metrics *d, const struct coop_wire_devmetrics *s,
                            uint32_t nbounds) {
  COOP_SCHEMA_DEVMETRICS(COOP__COPY)
  memcpy(d->bucket, s->gather_bucket, (nbounds + 1) * sizeof *d->bucket);
  COOP_SCHEMA_DEADLINES(COOP__COPY)
}

void coop__stats_from_wire(struct coop_stats *d, const struct coop_msg_stats_reply *s) {
  COOP_SCHEMA_STATS(COOP__COPY)
  for (unsigned i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++)
    copy_devinfo(&d->devs[i], &s->devs[i]);
}

void coop__metrics_from_wire(struct coop_metrics *d, const struct coop_msg_stats_reply *s) {
  memset(d, 0, sizeof *d);
  if (!s->ext) return;
  d->available = 1;
  COOP_SCHEMA_STATS_EXT(COOP__COPY)
  d->nbounds = s->nbounds < COOP_MAX_BOUNDS ? s->nbounds : COOP_MAX_BOUNDS;
  memcpy(d->bound, s->bound, d->nbounds * sizeof *d->bound);
  for (unsigned i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++)
    copy_devmetrics(&d->devs[i], &s->met[i], d->nbounds);
}
