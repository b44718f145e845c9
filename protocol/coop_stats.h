/*
 * coop_stats.h: the daemon's counters and metrics as libcoop returns them
 * (coop.h: coop_stats(), coop_metrics()). Installed with coop.h, which
 * includes it; it lives with the protocol, as coop_errno.h and
 * coop_limits.h do, because coopd fills the same structs for its own
 * /metrics (coop_prom.h) without the client library.
 */
#ifndef COOP_STATS_H
#define COOP_STATS_H

#include <stdint.h>

#include "coop_limits.h" /* COOP_NAME_MAX, COOP_TEXT_MAX, COOP_MAX_DEVICES, COOP_MAX_BOUNDS */

#ifdef __cplusplus
extern "C" {
#endif

/* The daemon's counters (coop_stats). Gather percentiles are over the last
 * `samples` non-cooperative task instances, in ns; -1 when there are none. */
struct coop_stats {
  char backend[COOP_NAME_MAX];
  char device[COOP_TEXT_MAX];
  uint32_t compute_units, workers, clients, queued, running;
  uint64_t submitted, done, cancelled, refused, failed;
  uint32_t samples;
  int64_t gather_p50, gather_p90, gather_p99, gather_max;
  char backend_note[COOP_TEXT_MAX]; /* the device in use, and why that backend */
  /* The watchdog (coopd.ini [jobs]): tasks that waited gather_budget_ms for
   * workgroups, jobs whose kernel outlived its cancellation by hang_ms, the
   * workers such hung kernels hold now, and the latest such event. */
  uint32_t gather_timeouts, hung, lost_workers;
  char watchdog[COOP_TEXT_MAX];
  /* Every device (the fields above from backend to workers are device 0's). */
  uint32_t ndevices;
  struct coop_device {
    char device[COOP_TEXT_MAX];
    char backend[COOP_NAME_MAX];
    uint32_t compute_units, workers, lost_workers;
    uint32_t jobs; /* queued or running on it */
    /* idle parking ([device] park_ms): 1 while the megakernel is off the
     * device; how often it parked; the last relaunch's cost in ns (0: none) */
    uint32_t parked, parks;
    int64_t unpark_ns;
  } devs[COOP_MAX_DEVICES];
};

/* What coop_metrics() adds to the counters (PROTOCOL.md, STATS_REPLY's
 * tail). `available` is 0 from a coopd older than these fields; the rest is
 * then zero. */
struct coop_metrics {
  int available;
  char daemon_version[COOP_NAME_MAX];
  uint64_t uptime_ns;
  /* Gather time histogram: upper bounds in ns, ascending; each device's
   * bucket[i] counts the gathers in (bound[i-1], bound[i]], and
   * bucket[nbounds] those above the last bound (not cumulative). */
  uint32_t nbounds;
  int64_t bound[COOP_MAX_BOUNDS];
  struct coop_device_metrics {
    uint32_t busy_workers;            /* running or reserved for a job now */
    uint64_t arena_bytes, arena_used; /* used: the buffers of its running jobs */
    int64_t gather_sum_ns;
    uint64_t bucket[COOP_MAX_BOUNDS + 1];
    uint64_t deadline_instances, deadline_misses; /* periodic instances with a deadline */
  } devs[COOP_MAX_DEVICES];
};

#ifdef __cplusplus
}
#endif

#endif /* COOP_STATS_H */
