/*
 * coopctl_out.c: coopctl's output, as text for people or as one JSON
 * object for scripts (--json). Times: ms with three decimals in text, the
 * daemon's ns in JSON.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coopctl.h"

void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f); /* UTF-8 passes through */
  }
  fputc('"', f);
}

/* ns in a readable unit ("148 ns", "2.500 us", "1.234 ms"), "-" when not
 * measured: PoCL gathers take nanoseconds, GPU tasks milliseconds. */
static const char *ms(char *buf, size_t n, int64_t ns) {
  if (ns < 0)
    snprintf(buf, n, "-");
  else if (ns < 1000)
    snprintf(buf, n, "%lld ns", (long long)ns);
  else if (ns < 1000000)
    snprintf(buf, n, "%.3f us", ns / 1e3);
  else
    snprintf(buf, n, "%.3f ms", ns / 1e6);
  return buf;
}

/* The span between two timestamps, -1 when either did not happen. */
static int64_t span(int64_t from, int64_t to) { return from && to && to >= from ? to - from : -1; }

static const char *kind(int cooperative, int query) {
  return !cooperative ? "noncooperative" : query ? "cooperative+query" : "cooperative";
}

/* ---- JSON values that may be absent (docs/json.md: null, never -1) ---- */

/* A duration or measurement: null when negative (not measured). */
static void json_ns(FILE *f, const char *key, int64_t v) {
  if (v < 0)
    fprintf(f, "\"%s\":null", key);
  else
    fprintf(f, "\"%s\":%lld", key, (long long)v);
}

/* A timestamp: null when 0 (did not happen). */
static void json_ts(FILE *f, const char *key, int64_t v) { json_ns(f, key, v ? v : -1); }

/* gather_ns and exec_ns: null when not measured (-1), and when 0 for a
 * task that was never gathered or started (coopd sends 0 for a job
 * cancelled before it reached the device). */
static int64_t gather_of(const struct coop_times *t) {
  return t->gather_ns == 0 && !t->gathered ? -1 : t->gather_ns;
}

static int64_t exec_of(const struct coop_times *t) {
  return t->exec_ns == 0 && !t->started ? -1 : t->exec_ns;
}

/* ---- results ---- */

static void json_times(FILE *f, const struct coop_times *t) {
  fputc('{', f);
  json_ts(f, "submitted", t->submitted), fputc(',', f);
  json_ts(f, "released", t->released), fputc(',', f);
  json_ts(f, "gathered", t->gathered), fputc(',', f);
  json_ts(f, "started", t->started), fputc(',', f);
  json_ts(f, "finished", t->finished), fputc(',', f);
  json_ns(f, "gather_ns", gather_of(t)), fputc(',', f);
  json_ns(f, "exec_ns", exec_of(t)), fputc('}', f);
}

void json_result_fields(FILE *f, const struct coop_result *r) {
  fprintf(f, "\"job\":%llu,\"device\":%d,\"state\":", (unsigned long long)r->job, r->device);
  json_str(f, coop_state_name(r->state));
  fprintf(f, ",\"error\":%d,\"error_name\":", r->error);
  json_str(f, coop_err_name(r->error));
  fprintf(f, ",\"message\":");
  json_str(f, r->message);
  fputc(',', f);
  json_ns(f, "gather_ns", gather_of(&r->t)), fputc(',', f);
  json_ns(f, "exec_ns", exec_of(&r->t));
  fprintf(f, ",\"times\":");
  json_times(f, &r->t);
  fprintf(f,
          ",\"m_initial\":%u,\"m_min\":%u,\"m_max\":%u,\"kills\":%u,\"forks\":%u,"
          "\"resizes\":%u,\"instances\":%u,\"misses\":%u,\"instance_records\":[",
          r->m_initial, r->m_min, r->m_max, r->kills, r->forks, r->resizes, r->instances,
          r->misses);
  for (uint32_t i = 0; i < r->ninst; i++) {
    fprintf(f, "%s{\"state\":", i ? "," : "");
    json_str(f, coop_state_name(r->inst[i].state));
    fprintf(f, ",\"times\":");
    json_times(f, &r->inst[i].t);
    fputc('}', f);
  }
  fputc(']', f);
}

int ctl_message_says_it(int err, const char *message) {
  const char *gen = coop_strerror(err), *colon = strchr(gen, ':');
  size_t n = colon ? (size_t)(colon - gen) : strlen(gen);
  return n && !strncmp(message, gen, n);
}

void print_result(const struct ctl *x, const struct coop_result *r) {
  char a[32], b[32];
  if (x->json) {
    putchar('{');
    json_result_fields(stdout, r);
    puts("}");
    return;
  }
  printf("job %llu: %s\n  device     %d\n", (unsigned long long)r->job, coop_state_name(r->state),
         r->device);
  if (r->error && ctl_message_says_it(r->error, r->message))
    printf("  error      %s: %s\n", coop_err_name(r->error), r->message);
  else if (r->error)
    printf("  error      %s: %s%s%s\n", coop_err_name(r->error), coop_strerror(r->error),
           r->message[0] ? ": " : "", r->message);
  else if (r->message[0]) /* a job that ended well: "resumed from its last checkpoint ..." */
    printf("  message    %s\n", r->message);
  printf("  gather     %s\n  execution  %s\n", ms(a, sizeof a, gather_of(&r->t)),
         ms(b, sizeof b, exec_of(&r->t)));
  printf("  queued     %s (submitted to released)\n  total      %s (submitted to finished)\n",
         ms(a, sizeof a, span(r->t.submitted, r->t.released)),
         ms(b, sizeof b, span(r->t.submitted, r->t.finished)));
  if (r->m_initial || r->kills || r->forks || r->resizes)
    printf("  workgroups M initial %u, min %u, max %u; kills %u, forks %u, resizes %u\n",
           r->m_initial, r->m_min, r->m_max, r->kills, r->forks, r->resizes);
  if (r->ninst || r->instances)
    printf("  instances  %u, deadline misses %u\n", r->instances, r->misses);
}

/* ---- kernels, status, stats ---- */

/* The element types of kernel k->k.name in el (n of them; NULL when
 * unknown: every one is then COOP_ELEM_ANY). */
static const int *elems_of(const struct coop_kernel_info *k, const struct coop_kernel_elems *el,
                           size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(el[i].name, k->k.name) && el[i].nargs == k->k.nargs) return el[i].elems;
  return NULL;
}

/* A buffer's type with its element type, "buf<f32>"; the type's name
 * otherwise. */
static const char *arg_type(const struct coop_kernel_info *k, const int *elems, unsigned a, char *b,
                            size_t len) {
  if (!elems || !elems[a]) return coop_type_name(k->k.types[a]);
  snprintf(b, len, "%s<%s>", coop_type_name(k->k.types[a]), coop_elem_name(elems[a]));
  return b;
}

/* One kernel as a JSON object. "args" stays the list of types it was;
 * "argnames" ("" for an unnamed one), "rules" and "owner" (null for one of
 * coopd's own) came with the authors' protocol, "elems" (a buffer's
 * element type, "" where the kernel declares none and for a scalar) with
 * version 7. */
static void json_kernel(const struct coop_kernel_info *k, const int *elems) {
  printf("{\"name\":");
  json_str(stdout, k->k.name);
  printf(",\"cooperative\":%s,\"args\":[", k->k.cooperative ? "true" : "false");
  for (unsigned a = 0; a < k->k.nargs; a++)
    printf("%s\"%s\"", a ? "," : "", coop_type_name(k->k.types[a]));
  printf("],\"argnames\":[");
  for (unsigned a = 0; a < k->k.nargs; a++) {
    printf("%s", a ? "," : "");
    json_str(stdout, k->argnames[a]);
  }
  printf("],\"elems\":[");
  for (unsigned a = 0; a < k->k.nargs; a++)
    printf("%s\"%s\"", a ? "," : "", elems ? coop_elem_name(elems[a]) : "");
  printf("],\"rules\":[");
  for (unsigned i = 0; i < k->nrules; i++) {
    printf("%s", i ? "," : "");
    json_str(stdout, k->rules[i]);
  }
  if (k->owner == COOP_SHIPPED)
    printf("],\"owner\":null}");
  else
    printf("],\"owner\":%u}", k->owner);
}

/* NAME KIND a:buf<f32>,n:u32, then a line per rule and the author. */
static void text_kernel(const struct coop_kernel_info *k, const int *elems) {
  printf("%s %s ", k->k.name, k->k.cooperative ? "cooperative" : "noncooperative");
  char b[32];
  for (unsigned a = 0; a < k->k.nargs; a++)
    printf("%s%s%s%s", a ? "," : "", k->argnames[a], k->argnames[a][0] ? ":" : "",
           arg_type(k, elems, a, b, sizeof b));
  puts(k->k.nargs ? "" : "-");
  for (unsigned i = 0; i < k->nrules; i++) printf("  require %s\n", k->rules[i]);
  if (k->owner != COOP_SHIPPED) printf("  added by uid %u\n", k->owner);
}

void print_kernels(const struct ctl *x, const struct coop_kernel_info *k, size_t n,
                   const struct coop_kernel_elems *el, size_t nel) {
  if (x->json) printf("{\"kernels\":[");
  for (size_t i = 0; i < n; i++) {
    if (x->json) {
      printf("%s", i ? "," : "");
      json_kernel(&k[i], elems_of(&k[i], el, nel));
    } else {
      text_kernel(&k[i], elems_of(&k[i], el, nel));
    }
  }
  if (x->json) puts("]}");
}

void print_added(const struct ctl *x, const struct coop_kernel_info *k,
                 const struct coop_kernel_elems *el, size_t nel) {
  if (x->json) {
    printf("{\"added\":");
    json_kernel(k, elems_of(k, el, nel));
    puts("}");
    return;
  }
  printf("added kernel: ");
  text_kernel(k, elems_of(k, el, nel));
}

static void json_status(const struct coop_job_status *s) {
  printf("{\"job\":%llu,\"state\":", (unsigned long long)s->job);
  json_str(stdout, coop_state_name(s->state));
  printf(",\"kernel\":");
  json_str(stdout, s->kernel);
  printf(
      ",\"cooperative\":%s,\"query_barrier\":%s,\"groups\":%u,\"uid\":%u,\"pid\":%u,"
      "\"instances_done\":%u,\"misses\":%u,\"priority\":%d,\"suspended\":%s,\"device\":%u}",
      s->cooperative ? "true" : "false", s->query_barrier ? "true" : "false", s->groups, s->uid,
      s->pid, s->instances_done, s->misses, (int)s->priority, s->suspended ? "true" : "false",
      s->device);
}

static void status_table(const struct coop_job_status *s, size_t n, int active_only) {
  printf("%-8s %-9s %-20s %6s %-17s %4s %9s %6s %6s %7s %3s\n", "JOB", "STATE", "KERNEL", "GROUPS",
         "KIND", "PRI", "INSTANCES", "MISSES", "UID", "PID", "DEV");
  for (size_t i = 0; i < n; i++) {
    if (active_only && s[i].state != COOP_STATE_QUEUED && s[i].state != COOP_STATE_RUNNING)
      continue;
    printf("%-8llu %-9s %-20s %6u %-17s %4d %9u %6u %6u %7u %3u\n", (unsigned long long)s[i].job,
           s[i].suspended ? "suspended" : coop_state_name(s[i].state), s[i].kernel, s[i].groups,
           kind(s[i].cooperative, s[i].query_barrier), (int)s[i].priority, s[i].instances_done,
           s[i].misses, s[i].uid, s[i].pid, s[i].device);
  }
}

void print_status(const struct ctl *x, const struct coop_job_status *s, size_t n) {
  if (!x->json) {
    status_table(s, n, 0);
    return;
  }
  printf("{\"jobs\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) putchar(',');
    json_status(&s[i]);
  }
  puts("]}");
}

/* A device's metrics in its JSON record: null from an older coopd. */
static void json_dev_metrics(const struct coop_metrics *m, unsigned i) {
  if (!m->available) {
    printf(",\"busy_workers\":null,\"arena_bytes\":null,\"arena_used\":null");
    return;
  }
  const struct coop_device_metrics *d = &m->devs[i];
  printf(",\"busy_workers\":%u,\"arena_bytes\":%llu,\"arena_used\":%llu", d->busy_workers,
         (unsigned long long)d->arena_bytes, (unsigned long long)d->arena_used);
}

static void json_stats(const struct coop_stats *s, const struct coop_metrics *m) {
  printf("{\"daemon_version\":");
  if (m->available)
    json_str(stdout, m->daemon_version);
  else
    printf("null");
  putchar(',');
  json_ns(stdout, "uptime_ns", m->available ? (int64_t)m->uptime_ns : -1);
  printf(",\"backend\":");
  json_str(stdout, s->backend);
  printf(",\"device\":");
  json_str(stdout, s->device);
  printf(
      ",\"compute_units\":%u,\"workers\":%u,\"clients\":%u,\"queued\":%u,\"running\":%u,"
      "\"submitted\":%llu,\"done\":%llu,\"cancelled\":%llu,\"refused\":%llu,\"failed\":%llu,"
      "\"samples\":%u,",
      s->compute_units, s->workers, s->clients, s->queued, s->running,
      (unsigned long long)s->submitted, (unsigned long long)s->done,
      (unsigned long long)s->cancelled, (unsigned long long)s->refused,
      (unsigned long long)s->failed, s->samples);
  json_ns(stdout, "gather_p50_ns", s->gather_p50), putchar(',');
  json_ns(stdout, "gather_p90_ns", s->gather_p90), putchar(',');
  json_ns(stdout, "gather_p99_ns", s->gather_p99), putchar(',');
  json_ns(stdout, "gather_max_ns", s->gather_max);
  printf(",\"backend_note\":");
  json_str(stdout, s->backend_note);
  printf(",\"gather_timeouts\":%u,\"hung\":%u,\"lost_workers\":%u,\"watchdog\":",
         s->gather_timeouts, s->hung, s->lost_workers);
  json_str(stdout, s->watchdog);
  printf(",\"devices\":[");
  for (uint32_t i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++) {
    printf("%s{\"device\":", i ? "," : "");
    json_str(stdout, s->devs[i].device);
    printf(",\"backend\":");
    json_str(stdout, s->devs[i].backend);
    printf(",\"compute_units\":%u,\"workers\":%u,\"lost_workers\":%u,\"jobs\":%u",
           s->devs[i].compute_units, s->devs[i].workers, s->devs[i].lost_workers, s->devs[i].jobs);
    printf(",\"state\":\"%s\",\"parks\":%u,\"unpark_ns\":",
           s->devs[i].parked ? "parked" : "running", s->devs[i].parks);
    if (s->devs[i].unpark_ns) /* 0: never relaunched (absent is null, docs/json.md) */
      printf("%lld", (long long)s->devs[i].unpark_ns);
    else
      printf("null");
    json_dev_metrics(m, i);
    putchar('}');
  }
  printf("]}");
}

/* "3 d 04:05:06", "04:05:06" */
static const char *uptime(char *buf, size_t n, uint64_t ns) {
  uint64_t s = ns / 1000000000u;
  if (s >= 86400)
    snprintf(buf, n, "%llu d %02u:%02u:%02u", (unsigned long long)(s / 86400),
             (unsigned)(s % 86400 / 3600), (unsigned)(s % 3600 / 60), (unsigned)(s % 60));
  else
    snprintf(buf, n, "%02u:%02u:%02u", (unsigned)(s / 3600), (unsigned)(s % 3600 / 60),
             (unsigned)(s % 60));
  return buf;
}

static void mib(char *buf, size_t n, uint64_t bytes) {
  snprintf(buf, n, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

static void stats_text(const struct coop_stats *s, const struct coop_metrics *m) {
  char a[32], b[32], c[32], d[32];
  if (m->available)
    printf("coopd     %s, up %s\n", m->daemon_version, uptime(a, sizeof a, m->uptime_ns));
  else
    printf("coopd     (an older daemon: no version or uptime)\n");
  printf("device    %s (%s), %u compute units, %u workers\n", s->device, s->backend,
         s->compute_units, s->workers);
  if (s->backend_note[0]) printf("backend   %s\n", s->backend_note);
  printf("clients   %u\njobs      %u running, %u queued\n", s->clients, s->running, s->queued);
  printf("total     %llu submitted, %llu done, %llu cancelled, %llu refused, %llu failed\n",
         (unsigned long long)s->submitted, (unsigned long long)s->done,
         (unsigned long long)s->cancelled, (unsigned long long)s->refused,
         (unsigned long long)s->failed);
  printf("gather    p50 %s, p90 %s, p99 %s, max %s (last %u non-cooperative tasks)\n",
         ms(a, sizeof a, s->gather_p50), ms(b, sizeof b, s->gather_p90),
         ms(c, sizeof c, s->gather_p99), ms(d, sizeof d, s->gather_max), s->samples);
  printf("watchdog  %u gather timeouts, %u hung, %u workers lost\n", s->gather_timeouts, s->hung,
         s->lost_workers);
  if (s->watchdog[0]) printf("          latest: %s\n", s->watchdog);
  for (uint32_t i = 0; i < s->ndevices && i < COOP_MAX_DEVICES; i++) {
    const struct coop_device *v = &s->devs[i];
    printf("megakernel %s, parked %u times", v->parked ? "parked (idle)" : "running", v->parks);
    if (v->unpark_ns) printf(", last relaunch %s", ms(a, sizeof a, v->unpark_ns));
    if (s->ndevices > 1) printf(" (device %u)", i);
    putchar('\n');
  }
  for (uint32_t i = 0; s->ndevices > 1 && i < s->ndevices && i < COOP_MAX_DEVICES; i++)
    printf("device %u  %s (%s), %u compute units, %u workers (%u lost), %u jobs\n", i,
           s->devs[i].device, s->devs[i].backend, s->devs[i].compute_units, s->devs[i].workers,
           s->devs[i].lost_workers, s->devs[i].jobs);
}

void print_stats(const struct ctl *x, const struct coop_stats *s, const struct coop_metrics *m) {
  if (x->json) {
    json_stats(s, m);
    putchar('\n');
  } else {
    stats_text(s, m);
  }
}

/* ---- top ---- */

/* Jobs get a letter in the map: TOP's jobs first, then any the map names
 * that the list does not (none, unless the two disagree). */
#define NMARKS 26
struct marks {
  uint64_t job[NMARKS];
  unsigned n;
};

static int mark_of(const struct marks *mk, uint64_t job) {
  for (unsigned i = 0; i < mk->n; i++)
    if (mk->job[i] == job) return (int)i;
  return -1;
}

static void mark_add(struct marks *mk, uint64_t job) {
  if (job && mk->n < NMARKS && mark_of(mk, job) < 0) mk->job[mk->n++] = job;
}

static void marks_build(struct marks *mk, const struct top_view *v) {
  mk->n = 0;
  for (size_t i = 0; i < v->njobs; i++) mark_add(mk, v->jobs[i].job);
  for (size_t i = 0; i < v->nwg; i++)
    if (v->wg[i].state == COOP_WORKER_RUNNING || v->wg[i].state == COOP_WORKER_RESERVED)
      mark_add(mk, v->wg[i].job);
}

static char wg_char(const struct marks *mk, const struct coop_wg *w) {
  int i = w->job ? mark_of(mk, w->job) : -1;
  switch (w->state) {
    case COOP_WORKER_FREE:
      return '.';
    case COOP_WORKER_RUNNING:
      return i < 0 ? '*' : (char)('A' + i);
    case COOP_WORKER_RESERVED:
      return i < 0 ? '~' : (char)('a' + i);
    case COOP_WORKER_OTHER:
      return '#';
  }
  return '?';
}

/* A job's mark for the table and JSON: its letter, '*' past the 26th. */
static char job_mark(const struct marks *mk, uint64_t job) {
  int i = mark_of(mk, job);
  return i < 0 ? '*' : (char)('A' + i);
}

static const struct coop_job_status *status_of(const struct top_view *v, uint64_t job) {
  for (size_t i = 0; i < v->nstatus; i++)
    if (v->status[i].job == job) return &v->status[i];
  return NULL;
}

static const struct coop_topjob *topjob_of(const struct top_view *v, uint64_t job) {
  for (size_t i = 0; i < v->njobs; i++)
    if (v->jobs[i].job == job) return &v->jobs[i];
  return NULL;
}

static int active(const struct coop_job_status *s) {
  return s->state == COOP_STATE_QUEUED || s->state == COOP_STATE_RUNNING;
}

static void top_map(const struct top_view *v, const struct marks *mk) {
  size_t count[4] = {0};
  for (size_t i = 0; i < v->nwg; i++)
    if (v->wg[i].state >= COOP_WORKER_FREE && v->wg[i].state <= COOP_WORKER_OTHER)
      count[v->wg[i].state]++;
  if (v->stats->ndevices > 1) printf("map of    device %d\n", v->device);
  printf("workers   %zu: %zu running, %zu reserved, %zu another user's, %zu free\n", v->nwg,
         count[COOP_WORKER_RUNNING], count[COOP_WORKER_RESERVED], count[COOP_WORKER_OTHER],
         count[COOP_WORKER_FREE]);
  unsigned w = v->map_width ? v->map_width : 64;
  for (size_t i = 0; i < v->nwg; i++) {
    if (i % w == 0) printf("%s%8zu  ", i ? "\n" : "", i);
    putchar(wg_char(mk, &v->wg[i]));
  }
  if (v->nwg) putchar('\n');
  /* the legend: each lettered job, wrapped like the map */
  fputs("legend    ", stdout);
  size_t col = 0;
  for (unsigned i = 0; i < mk->n; i++) {
    const struct coop_topjob *t = topjob_of(v, mk->job[i]);
    char item[128];
    int k = snprintf(item, sizeof item, "%c job %llu%s%s", 'A' + i, (unsigned long long)mk->job[i],
                     t ? " " : "", t ? t->kernel : "");
    size_t len = k > 0 ? (size_t)k : 0;
    if (col && col + 2 + len > w) {
      fputs("\n          ", stdout);
      col = 0;
    } else if (col) {
      fputs("  ", stdout);
      col += 2;
    }
    fputs(item, stdout);
    col += len;
  }
  if (mk->n) fputs("\n          ", stdout);
  printf("a-z reserved for A-Z, # another user's, . free%s\n",
         mk->n == NMARKS ? ", * ~ jobs past Z" : "");
}

/* A job's share of the device's worker workgroups, in percent. */
static double util(const struct top_view *v, const struct coop_topjob *t) {
  return v->nwg ? 100.0 * t->workers / (double)v->nwg : 0;
}

static int by_workers(const void *a, const void *b) {
  const struct coop_topjob *x = a, *y = b;
  if (x->workers != y->workers) return x->workers < y->workers ? 1 : -1; /* most first */
  return (x->job > y->job) - (x->job < y->job);
}

static int by_kernel(const void *a, const void *b) {
  const struct coop_topjob *x = a, *y = b;
  int c = strcmp(x->kernel, y->kernel);
  return c ? c : (x->job > y->job) - (x->job < y->job);
}

static int by_job(const void *a, const void *b) {
  const struct coop_topjob *x = a, *y = b;
  return (x->job > y->job) - (x->job < y->job);
}

const char *top_sort_name(int sort) {
  return sort == TOP_SORT_WORKERS ? "workers" : sort == TOP_SORT_KERNEL ? "kernel" : "job";
}

static void top_table(const struct top_view *v, const struct marks *mk) {
  printf("%-8s %-2s %-9s %-20s %-7s %4s %6s %6s %7s %5s %6s %6s\n", "JOB", "WG", "STATE", "KERNEL",
         "KIND", "PRI", "N", "M", "WORKERS", "UTIL%", "KILLS", "FORKS");
  struct coop_topjob *sorted = v->njobs ? malloc(v->njobs * sizeof *sorted) : NULL;
  if (sorted) {
    memcpy(sorted, v->jobs, v->njobs * sizeof *sorted);
    qsort(sorted, v->njobs, sizeof *sorted,
          v->sort == TOP_SORT_WORKERS  ? by_workers
          : v->sort == TOP_SORT_KERNEL ? by_kernel
                                       : by_job);
  }
  for (size_t i = 0; i < v->njobs; i++) {
    const struct coop_topjob *t = sorted ? &sorted[i] : &v->jobs[i];
    const struct coop_job_status *s = status_of(v, t->job);
    printf("%-8llu %-2c %-9s %-20s %-7s %4d %6u %6u %7u %5.1f %6u %6u\n",
           (unsigned long long)t->job, job_mark(mk, t->job),
           coop_state_name(s ? s->state : COOP_STATE_RUNNING), t->kernel,
           t->cooperative ? "coop" : "noncoop", (int)t->priority, t->groups, t->m, t->workers,
           util(v, t), t->kills, t->forks);
  }
  free(sorted);
  /* queued jobs, and running ones TOP does not list (or no TOP at all) */
  for (size_t i = 0; i < v->nstatus; i++) {
    const struct coop_job_status *s = &v->status[i];
    if (!active(s) || (v->have_top && topjob_of(v, s->job))) continue;
    printf("%-8llu %-2s %-9s %-20s %-7s %4d %6u %6s %7s %5s %6s %6s\n", (unsigned long long)s->job,
           "-", s->suspended ? "suspended" : coop_state_name(s->state), s->kernel,
           s->cooperative ? "coop" : "noncoop", (int)s->priority, s->groups, "-", "-", "-", "-",
           "-");
  }
}

static void json_top(const struct top_view *v, const struct marks *mk) {
  if (!v->have_top) {
    printf(",\"top\":null,\"note\":");
    json_str(stdout, v->note ? v->note : "");
    return;
  }
  printf(",\"top\":{\"device\":%d,\"map\":\"", v->device);
  for (size_t i = 0; i < v->nwg; i++) putchar(wg_char(mk, &v->wg[i]));
  printf("\",\"workgroups\":[");
  for (size_t i = 0; i < v->nwg; i++)
    if (v->wg[i].job)
      printf("%s{\"state\":\"%s\",\"job\":%llu}", i ? "," : "",
             coop_worker_state_name(v->wg[i].state), (unsigned long long)v->wg[i].job);
    else
      printf("%s{\"state\":\"%s\",\"job\":null}", i ? "," : "",
             coop_worker_state_name(v->wg[i].state));
  printf("],\"jobs\":[");
  for (size_t i = 0; i < v->njobs; i++) {
    const struct coop_topjob *t = &v->jobs[i];
    printf("%s{\"job\":%llu,\"mark\":\"%c\",\"kernel\":", i ? "," : "", (unsigned long long)t->job,
           job_mark(mk, t->job));
    json_str(stdout, t->kernel);
    printf(
        ",\"cooperative\":%s,\"groups\":%u,\"m\":%u,\"workers\":%u,\"util_percent\":%.1f,"
        "\"kills\":%u,\"forks\":%u,\"priority\":%d}",
        t->cooperative ? "true" : "false", t->groups, t->m, t->workers, util(v, t), t->kills,
        t->forks, (int)t->priority);
  }
  printf("]}");
}

/* The map's device's arena, when the daemon says. */
static void top_arena(const struct top_view *v) {
  if (!v->metrics->available || v->device < 0 || v->device >= COOP_MAX_DEVICES) return;
  const struct coop_device_metrics *d = &v->metrics->devs[v->device];
  char a[32], b[32], c[32];
  uint64_t used = d->arena_used < d->arena_bytes ? d->arena_used : d->arena_bytes;
  mib(a, sizeof a, used);
  mib(b, sizeof b, d->arena_bytes - used);
  mib(c, sizeof c, d->arena_bytes);
  printf("arena     %s used, %s free of %s (device %d's running jobs' buffers)\n", a, b, c,
         v->device);
}

void print_top(const struct ctl *x, const struct top_view *v) {
  struct marks mk;
  marks_build(&mk, v);
  if (!x->json) {
    stats_text(v->stats, v->metrics);
    top_arena(v);
    putchar('\n');
    if (v->have_top)
      top_map(v, &mk);
    else
      printf("note: %s\n", v->note ? v->note : "no workgroup map");
    putchar('\n');
    top_table(v, &mk);
    return;
  }
  printf("{\"stats\":");
  json_stats(v->stats, v->metrics);
  printf(",\"jobs\":[");
  int first = 1;
  for (size_t i = 0; i < v->nstatus; i++) {
    if (!active(&v->status[i])) continue;
    if (!first) putchar(',');
    json_status(&v->status[i]);
    first = 0;
  }
  putchar(']');
  json_top(v, &mk);
  puts("}");
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void sort_doubles(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double percentile(const double *v, size_t n, double p) {
  if (!n) return NAN;
  size_t rank = (size_t)ceil(p / 100.0 * (double)n);
  return v[rank ? rank - 1 : 0];
}
