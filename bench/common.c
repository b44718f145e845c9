/* common.c: see common.h. */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void push(struct series *s, double x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) {
      fprintf(stderr, "coop-bench: out of memory\n");
      exit(1);
    }
  }
  s->v[s->n++] = x;
}

void series_free(struct series *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double quantile(const struct series *s, double q) {
  if (!s->n) return NAN;
  double *v = malloc(s->n * sizeof *v);
  if (!v) return NAN;
  memcpy(v, s->v, s->n * sizeof *v);
  qsort(v, s->n, sizeof *v, cmp_dbl);
  size_t i = (size_t)ceil(q * (double)s->n);
  double r = v[i ? i - 1 : 0];
  free(v);
  return r;
}

double mean_of(const struct series *s) {
  double sum = 0;
  for (size_t i = 0; i < s->n; i++) sum += s->v[i];
  return s->n ? sum / (double)s->n : NAN;
}

void *grow_rows(void *rows, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return rows;
  *cap = *cap ? 2 * *cap : 32;
  rows = realloc(rows, *cap * size);
  if (!rows) {
    fprintf(stderr, "coop-bench: out of memory\n");
    exit(1);
  }
  return rows;
}

double max_of(const struct series *s) { return quantile(s, 1.0); }
double min_of(const struct series *s) { return quantile(s, 0.0); }

static void cpu_model(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (colon && !strncmp(line, "model name", 10)) {
      colon += 1 + (colon[1] == ' ');
      colon[strcspn(colon, "\n")] = 0;
      snprintf(out, n, "%s", colon);
      break;
    }
  }
  fclose(f);
}

void machine_of(struct machine *m) {
  struct utsname u;
  if (gethostname(m->host, sizeof m->host)) snprintf(m->host, sizeof m->host, "unknown");
  m->host[sizeof m->host - 1] = 0;
  snprintf(m->arch, sizeof m->arch, "%s", uname(&u) ? "unknown" : u.machine);
  cpu_model(m->cpu, sizeof m->cpu);
}

void load_avg(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  double a, b, c;
  if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(out, n, "%.2f %.2f %.2f", a, b, c);
  fclose(f);
}

void make_parent(const char *path) {
  char d[4096];
  snprintf(d, sizeof d, "%s", path);
  char *slash = strrchr(d, '/');
  if (!slash) return;
  *slash = 0;
  for (char *p = d + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(d, 0777);
      *p = '/';
    }
  mkdir(d, 0777);
}

int have_gnuplot(void) {
  const char *path = getenv("PATH");
  char dir[4096];
  for (const char *p = path ? path : ""; *p;) {
    size_t len = strcspn(p, ":");
    snprintf(dir, sizeof dir, "%.*s/gnuplot", (int)len, p);
    if (!access(dir, X_OK)) return 1;
    p += len + (p[len] == ':');
  }
  return 0;
}

const char *inexact_option(int argc, char **argv, const struct option *lo) {
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
    if (strncmp(argv[i], "--", 2)) continue;
    size_t len = strcspn(argv[i] + 2, "=");
    const struct option *x = lo;
    while (x->name && (strlen(x->name) != len || strncmp(x->name, argv[i] + 2, len))) x++;
    if (!x->name) return argv[i];
    if (x->has_arg) i += !strchr(argv[i], '='); /* skip its value */
  }
  return NULL;
}

void bench_usage_error(const char *prog, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\ntry: %s --help\n", prog);
  va_end(ap);
  exit(2);
}

long bench_parse_num(const char *prog, const char *name, const char *s, long lo, long hi) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    bench_usage_error(prog, "--%s: '%s' is not an integer in %ld..%ld", name, s, lo, hi);
  return v;
}
