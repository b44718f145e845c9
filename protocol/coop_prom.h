/*
 * coop_prom.h: the daemon's STATS as Prometheus text (not installed).
 * Shared by coopctl (`coopctl metrics`) and coopd (its optional HTTP
 * /metrics, daemon/metrics_http.c) so that both print the same families
 * from the same numbers: coopd fills a STATS_REPLY as for a client, turns
 * it into coop.h's structs like libcoop does, and writes the same text.
 */
#ifndef COOP_PROM_H
#define COOP_PROM_H

#include <stdio.h>

#include "coop_stats.h"
#include "wire.h"

/* STATS_REPLY into coop_stats.h's structs (coop_stats(), coop_metrics()). m is
 * zeroed, and left so when the reply has no metrics tail (ext == 0). */
void coop__stats_from_wire(struct coop_stats *d, const struct coop_msg_stats_reply *s);
void coop__metrics_from_wire(struct coop_metrics *d, const struct coop_msg_stats_reply *s);

/* The Prometheus text exposition format, version 0.0.4. Metrics the
 * daemon did not send (m->available == 0: an older coopd) are left out,
 * not written as zeros. */
void coop__prom_write(FILE *f, const struct coop_stats *s, const struct coop_metrics *m);

#endif /* COOP_PROM_H */
