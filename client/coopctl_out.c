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

/* ---- results ---- */

static void json_times(FILE *f, const struct coop_times *t) {
  fprintf(f,
          "{\"submitted\":%lld,\"released\":%lld,\"gathered\":%lld,\"started\":%lld,"
          "\"finished\":%lld,\"gather_ns\":%lld,\"exec_ns\":%lld}",
          (long long)t->submitted, (long long)t->released, (long long)t->gathered,
          (long long)t->started, (long long)t->finished, (long long)t->gather_ns,
          (long long)t->exec_ns);
}

void json_result_fields(FILE *f, const struct coop_result *r) {
  fprintf(f, "\"job\":%llu,\"state\":", (unsigned long long)r->job);
  json_str(f, coop_state_name(r->state));
  fprintf(f, ",\"error\":%d,\"error_name\":", r->error);
  json_str(f, coop_err_name(r->error));
  fprintf(f, ",\"message\":");
  json_str(f, r->message);
  fprintf(f, ",\"gather_ns\":%lld,\"exec_ns\":%lld,\"times\":", (long long)r->t.gather_ns,
          (long long)r->t.exec_ns);
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

void print_result(const struct ctl *x, const struct coop_result *r) {
  char a[32], b[32];
  if (x->json) {
    putchar('{');
    json_result_fields(stdout, r);
    puts("}");
    return;
  }
  printf("job %llu: %s\n", (unsigned long long)r->job, coop_state_name(r->state));
  if (r->error)
    printf("  error      %s: %s%s%s\n", coop_err_name(r->error), coop_strerror(r->error),
           r->message[0] ? ": " : "", r->message);
  printf("  gather     %s\n  execution  %s\n", ms(a, sizeof a, r->t.gather_ns),
         ms(b, sizeof b, r->t.exec_ns));
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

void print_kernels(const struct ctl *x, const struct coop_kernel *k, size_t n) {
  if (x->json) printf("{\"kernels\":[");
  for (size_t i = 0; i < n; i++) {
    if (x->json) {
      printf("%s{\"name\":", i ? "," : "");
      json_str(stdout, k[i].name);
      printf(",\"cooperative\":%s,\"args\":[", k[i].cooperative ? "true" : "false");
      for (unsigned a = 0; a < k[i].nargs; a++)
        printf("%s\"%s\"", a ? "," : "", coop_type_name(k[i].types[a]));
      printf("]}");
      continue;
    }
    printf("%s %s ", k[i].name, k[i].cooperative ? "cooperative" : "noncooperative");
    for (unsigned a = 0; a < k[i].nargs; a++)
      printf("%s%s", a ? "," : "", coop_type_name(k[i].types[a]));
    puts(k[i].nargs ? "" : "-");
  }
  if (x->json) puts("]}");
}

static void json_status(const struct coop_job_status *s) {
  printf("{\"job\":%llu,\"state\":", (unsigned long long)s->job);
  json_str(stdout, coop_state_name(s->state));
  printf(",\"kernel\":");
  json_str(stdout, s->kernel);
  printf(
      ",\"cooperative\":%s,\"query_barrier\":%s,\"groups\":%u,\"uid\":%u,\"pid\":%u,"
      "\"instances_done\":%u,\"misses\":%u}",
      s->cooperative ? "true" : "false", s->query_barrier ? "true" : "false", s->groups, s->uid,
      s->pid, s->instances_done, s->misses);
}

static void status_table(const struct coop_job_status *s, size_t n, int active_only) {
  printf("%-8s %-9s %-20s %6s %-17s %9s %6s %6s %7s\n", "JOB", "STATE", "KERNEL", "GROUPS", "KIND",
         "INSTANCES", "MISSES", "UID", "PID");
  for (size_t i = 0; i < n; i++) {
    if (active_only && s[i].state != COOP_STATE_QUEUED && s[i].state != COOP_STATE_RUNNING)
      continue;
    printf("%-8llu %-9s %-20s %6u %-17s %9u %6u %6u %7u\n", (unsigned long long)s[i].job,
           coop_state_name(s[i].state), s[i].kernel, s[i].groups,
           kind(s[i].cooperative, s[i].query_barrier), s[i].instances_done, s[i].misses, s[i].uid,
           s[i].pid);
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

static void json_stats(const struct coop_stats *s) {
  printf("{\"backend\":");
  json_str(stdout, s->backend);
  printf(",\"device\":");
  json_str(stdout, s->device);
  printf(
      ",\"compute_units\":%u,\"workers\":%u,\"clients\":%u,\"queued\":%u,\"running\":%u,"
      "\"submitted\":%llu,\"done\":%llu,\"cancelled\":%llu,\"refused\":%llu,\"failed\":%llu,"
      "\"samples\":%u,\"gather_p50_ns\":%lld,\"gather_p90_ns\":%lld,\"gather_p99_ns\":%lld,"
      "\"gather_max_ns\":%lld}",
      s->compute_units, s->workers, s->clients, s->queued, s->running,
      (unsigned long long)s->submitted, (unsigned long long)s->done,
      (unsigned long long)s->cancelled, (unsigned long long)s->refused,
      (unsigned long long)s->failed, s->samples, (long long)s->gather_p50, (long long)s->gather_p90,
      (long long)s->gather_p99, (long long)s->gather_max);
}

static void stats_text(const struct coop_stats *s) {
  char a[32], b[32], c[32], d[32];
  printf("device    %s (%s), %u compute units, %u workers\n", s->device, s->backend,
         s->compute_units, s->workers);
  printf("clients   %u\njobs      %u running, %u queued\n", s->clients, s->running, s->queued);
  printf("total     %llu submitted, %llu done, %llu cancelled, %llu refused, %llu failed\n",
         (unsigned long long)s->submitted, (unsigned long long)s->done,
         (unsigned long long)s->cancelled, (unsigned long long)s->refused,
         (unsigned long long)s->failed);
  printf("gather    p50 %s, p90 %s, p99 %s, max %s (last %u non-cooperative tasks)\n",
         ms(a, sizeof a, s->gather_p50), ms(b, sizeof b, s->gather_p90),
         ms(c, sizeof c, s->gather_p99), ms(d, sizeof d, s->gather_max), s->samples);
}

void print_stats(const struct ctl *x, const struct coop_stats *s) {
  if (x->json) {
    json_stats(s);
    putchar('\n');
  } else {
    stats_text(s);
  }
}

void print_top(const struct ctl *x, const struct coop_stats *s, const struct coop_job_status *j,
               size_t n) {
  if (!x->json) {
    stats_text(s);
    putchar('\n');
    status_table(j, n, 1);
    return;
  }
  printf("{\"stats\":");
  json_stats(s);
  printf(",\"jobs\":[");
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (j[i].state != COOP_STATE_QUEUED && j[i].state != COOP_STATE_RUNNING) continue;
    if (!first) putchar(',');
    json_status(&j[i]);
    first = 0;
  }
  puts("]}");
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
