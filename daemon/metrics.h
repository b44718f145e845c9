/*
 * metrics.h: what STATS_REPLY's tail carries beyond the counters (coopctl
 * metrics, Prometheus): per device, a cumulative histogram of gather times,
 * the deadline instances and misses, the workers in use and the arena's
 * use; and the daemon's version and uptime. Loop thread only.
 */
#ifndef COOPD_METRICS_H
#define COOPD_METRICS_H

#include <stdint.h>

#include "wire.h"

struct daemon;
struct job;

/* The gather histogram's upper bounds: 1-2-5 steps from 100 ns (PoCL's
 * gathers) to 5 s. */
#define METRICS_NBOUNDS 24u

struct metrics {
  int64_t started_ns; /* CLOCK_MONOTONIC at start, for the uptime */
  struct metrics_dev {
    uint64_t bucket[METRICS_NBOUNDS + 1];
    int64_t gather_sum_ns;
    uint64_t deadline_instances, deadline_misses;
  } dev[COOP_WIRE_MAX_DEVICES];
};

void metrics_start(struct metrics *m);
/* One finished task of j (the job's, or one periodic instance's) on j's
 * device: its gather (gather_ns < 0: none) and, for a job with a
 * deadline, one deadline instance. */
void metrics_count_task(struct metrics *m, const struct job *j, int64_t gather_ns);
/* n more deadline misses of j. */
void metrics_count_misses(struct metrics *m, const struct job *j, uint32_t n);
/* STATS_REPLY's tail (st->ext and what follows) from m and the daemon's
 * devices and running jobs. */
void metrics_stats(struct daemon *dm, const struct metrics *m, struct coop_msg_stats_reply *st);

#endif /* COOPD_METRICS_H */
