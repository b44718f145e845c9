/*
 * metrics.c: the counters behind STATS_REPLY's tail (metrics.h). Counted
 * on the loop thread when a job is handed back, and a periodic job's
 * instances also as they end (jobs_count_instances, at each STATS), so a
 * STATS answer costs one pass over the running jobs and one copy of each
 * device's live view.
 */
#include "metrics.h"

#include <string.h>
#include <time.h>

#include "coop_util.h"
#include "daemon.h"

/* arena.c's blocks: the request rounded up to 64 bytes, a 64-byte guard
 * zone on each side (megakernel/rt_internal.h, COOP__ARENA_GUARD). */
#define ARENA_ALIGN 64u
#define ARENA_GUARD 64u

static const int64_t bounds[METRICS_NBOUNDS] = {
    100,      200,      500,       1000,      2000,      5000,       10000,      20000,
    50000,    100000,   200000,    500000,    1000000,   2000000,    5000000,    10000000,
    20000000, 50000000, 100000000, 200000000, 500000000, 1000000000, 2000000000, 5000000000};

void metrics_start(struct metrics *m) {
  memset(m, 0, sizeof *m);
  m->started_ns = coop__now_ns();
}

static void count_gather(struct metrics_dev *d, int64_t g) {
  unsigned b = 0;
  while (b < METRICS_NBOUNDS && g > bounds[b]) b++;
  d->bucket[b]++;
  d->gather_sum_ns += g;
}

void metrics_count_task(struct metrics *m, const struct job *j, int64_t gather_ns) {
  if (j->device >= COOP_WIRE_MAX_DEVICES) return;
  struct metrics_dev *d = &m->dev[j->device];
  if (j->deadline_us) d->deadline_instances++;
  /* gathers are non-cooperative tasks' */
  if (!(j->flags & COOP_SUBMIT_COOPERATIVE) && gather_ns >= 0) count_gather(d, gather_ns);
}

void metrics_count_misses(struct metrics *m, const struct job *j, uint32_t n) {
  if (j->device >= COOP_WIRE_MAX_DEVICES || !j->deadline_us) return;
  m->dev[j->device].deadline_misses += n;
}

/* The arena bytes a running job's buffers take, as arena.c lays them out. */
static uint64_t job_arena(const struct job *j) {
  uint64_t n = 0;
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF)
      n += (j->args[i].size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN + 2 * ARENA_GUARD;
  return n;
}

static unsigned busy_workers(struct dev *d) {
  static struct dev_view v; /* large; the loop thread is the only caller */
  dev_view_get(d, &v);
  unsigned n = 0;
  for (unsigned i = 0; i < v.nwg && i < COOP_WIRE_MAX_WG; i++) n += v.wg_job[i] != 0;
  return n;
}

void metrics_stats(struct daemon *dm, const struct metrics *m, struct coop_msg_stats_reply *st) {
  st->ext = 1;
  snprintf(st->daemon_version, sizeof st->daemon_version, "%s", COOP_VERSION);
  st->uptime_ns = (uint64_t)(coop__now_ns() - m->started_ns);
  st->nbounds = METRICS_NBOUNDS;
  memcpy(st->bound, bounds, sizeof bounds);
  for (unsigned i = 0; i < dm->ndev && i < COOP_WIRE_MAX_DEVICES; i++) {
    struct coop_wire_devmetrics *o = &st->met[i];
    const struct metrics_dev *d = &m->dev[i];
    o->busy_workers = busy_workers(dm->devs[i]);
    o->arena_bytes = (uint64_t)dm->cfg.arena_mb << 20;
    memcpy(o->gather_bucket, d->bucket, sizeof d->bucket);
    o->gather_sum_ns = d->gather_sum_ns;
    o->deadline_instances = d->deadline_instances;
    o->deadline_misses = d->deadline_misses;
  }
  for (struct job *j = dm->live; j; j = j->live_next)
    if (atomic_load(&j->state) == COOP_JOB_RUNNING && j->device < dm->ndev)
      st->met[j->device].arena_used += job_arena(j);
}
