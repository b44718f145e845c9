/*
 * coop_prom.c: STATS as Prometheus text (coop_prom.h), for `coopctl
 * metrics` and coopd's HTTP /metrics. Names follow Prometheus'
 * conventions: base units (seconds, bytes), _total for counters, one
 * histogram per device for gather times.
 */
#include "coop_prom.h"

#include <stdint.h>

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void u64_line(FILE *f, const char *name, int dev, unsigned long long v) {
  if (dev < 0)
    fprintf(f, "%s %llu\n", name, v);
  else
    fprintf(f, "%s{device=\"%d\"} %llu\n", name, dev, v);
}

static void daemon_metrics(FILE *f, const struct coop_stats *s, const struct coop_metrics *m) {
  if (m->available) {
    head(f, "coop_info", "gauge", "coopd's version (the value is always 1).");
    fprintf(f, "coop_info{version=");
    label(f, m->daemon_version);
    fprintf(f, "} 1\n");
    head(f, "coop_uptime_seconds", "gauge", "Seconds since coopd started.");
    fprintf(f, "coop_uptime_seconds %.3f\n", m->uptime_ns / 1e9);
  }
  head(f, "coop_clients", "gauge", "Connected clients.");
  u64_line(f, "coop_clients", -1, s->clients);
  head(f, "coop_jobs", "gauge", "Jobs by state now (every device).");
  fprintf(f, "coop_jobs{state=\"queued\"} %u\ncoop_jobs{state=\"running\"} %u\n", s->queued,
          s->running);
  head(f, "coop_jobs_submitted_total", "counter", "Jobs accepted since coopd started.");
  u64_line(f, "coop_jobs_submitted_total", -1, s->submitted);
  head(f, "coop_jobs_finished_total", "counter", "Jobs finished since coopd started, by state.");
  const char *st[] = {"done", "cancelled", "refused", "failed"};
  const uint64_t n[] = {s->done, s->cancelled, s->refused, s->failed};
  for (int i = 0; i < 4; i++)
    fprintf(f, "coop_jobs_finished_total{state=\"%s\"} %llu\n", st[i], (unsigned long long)n[i]);
  head(f, "coop_watchdog_gather_timeouts_total", "counter",
       "Tasks failed after waiting [jobs] gather_budget_ms for workgroups.");
  u64_line(f, "coop_watchdog_gather_timeouts_total", -1, s->gather_timeouts);
  head(f, "coop_watchdog_hung_total", "counter",
       "Jobs failed because their kernel outlived its cancellation by hang_ms.");
  u64_line(f, "coop_watchdog_hung_total", -1, s->hung);
}

static void device_info(FILE *f, const struct coop_stats *s, unsigned nd) {
  head(f, "coop_device_info", "gauge", "Each device's name and backend (the value is always 1).");
  for (unsigned i = 0; i < nd; i++) {
    fprintf(f, "coop_device_info{device=\"%u\",name=", i);
    label(f, s->devs[i].device);
    fprintf(f, ",backend=");
    label(f, s->devs[i].backend);
    fprintf(f, "} 1\n");
  }
  head(f, "coop_device_compute_units", "gauge", "Compute units of the device.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_compute_units", (int)i, s->devs[i].compute_units);
  head(f, "coop_device_workers", "gauge", "Worker workgroups of the device's megakernel.");
  for (unsigned i = 0; i < nd; i++) u64_line(f, "coop_device_workers", (int)i, s->devs[i].workers);
  head(f, "coop_device_workers_lost", "gauge", "Worker workgroups held by hung kernels.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_workers_lost", (int)i, s->devs[i].lost_workers);
  head(f, "coop_device_jobs", "gauge", "Jobs queued or running on the device.");
  for (unsigned i = 0; i < nd; i++) u64_line(f, "coop_device_jobs", (int)i, s->devs[i].jobs);
  head(f, "coop_device_parked", "gauge",
       "1 while the idle megakernel is off the device ([device] park_ms), else 0.");
  for (unsigned i = 0; i < nd; i++) u64_line(f, "coop_device_parked", (int)i, s->devs[i].parked);
  head(f, "coop_device_parks_total", "counter", "Times the idle megakernel was parked.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_parks_total", (int)i, s->devs[i].parks);
}

/* The gather histogram of device d: cumulative buckets, as Prometheus
 * wants them, from the daemon's per-range counts. */
static void gather_histogram(FILE *f, const struct coop_metrics *m, unsigned d) {
  const struct coop_device_metrics *x = &m->devs[d];
  unsigned long long cum = 0;
  for (uint32_t b = 0; b <= m->nbounds; b++) {
    cum += x->bucket[b];
    if (b < m->nbounds)
      fprintf(f, "coop_gather_seconds_bucket{device=\"%u\",le=\"%.9g\"} %llu\n", d,
              m->bound[b] / 1e9, cum);
    else
      fprintf(f, "coop_gather_seconds_bucket{device=\"%u\",le=\"+Inf\"} %llu\n", d, cum);
  }
  fprintf(f, "coop_gather_seconds_sum{device=\"%u\"} %.9f\n", d, x->gather_sum_ns / 1e9);
  fprintf(f, "coop_gather_seconds_count{device=\"%u\"} %llu\n", d, cum);
}

static void device_metrics(FILE *f, const struct coop_metrics *m, unsigned nd) {
  head(f, "coop_device_workers_busy", "gauge",
       "Worker workgroups running or reserved for a job now.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_workers_busy", (int)i, m->devs[i].busy_workers);
  head(f, "coop_device_arena_bytes", "gauge", "Size of the device's buffer arena.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_arena_bytes", (int)i, m->devs[i].arena_bytes);
  head(f, "coop_device_arena_used_bytes", "gauge",
       "Arena bytes the buffers of running jobs take (guard zones included).");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_device_arena_used_bytes", (int)i, m->devs[i].arena_used);
  head(f, "coop_gather_seconds", "histogram",
       "Gather time of non-cooperative task instances: from release until their workgroups "
       "are gathered.");
  for (unsigned i = 0; i < nd; i++) gather_histogram(f, m, i);
  head(f, "coop_deadline_instances_total", "counter",
       "Periodic task instances with a deadline that finished.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_deadline_instances_total", (int)i, m->devs[i].deadline_instances);
  head(f, "coop_deadline_misses_total", "counter",
       "Periodic task instances that finished after their deadline.");
  for (unsigned i = 0; i < nd; i++)
    u64_line(f, "coop_deadline_misses_total", (int)i, m->devs[i].deadline_misses);
}

void coop__prom_write(FILE *f, const struct coop_stats *s, const struct coop_metrics *m) {
  unsigned nd = s->ndevices < COOP_MAX_DEVICES ? s->ndevices : COOP_MAX_DEVICES;
  daemon_metrics(f, s, m);
  device_info(f, s, nd);
  if (m->available)
    device_metrics(f, m, nd);
  else
    fprintf(f, "# this coopd sends no histograms, arena or busy workers (an older daemon)\n");
}
