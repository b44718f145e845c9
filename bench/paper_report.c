/*
 * paper_report.c: what every experiment of coop-bench-paper shares on the
 * output side: samples and their quantiles, the header (machine, device,
 * backend, compute units, workers, local size, commit), the CSV and
 * Markdown files, and gnuplot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "paper.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

/* ------------------------------------------------------------ samples */

/* ------------------------------------------------------------- header */

static void params(const struct popts *o, coop_rt *rt, char *p, size_t n) {
  int len = snprintf(p, n, "mode: %s; scale %ld, apps %s, max inputs ", o->quick ? "quick" : "full",
                     o->scale, o->apps ? o->apps : "all");
  len += o->max_inputs ? snprintf(p + len, n - (size_t)len, "%ld", o->max_inputs)
                       : snprintf(p + len, n - (size_t)len, "all");
  len += snprintf(p + len, n - (size_t)len, "; arena %ld MiB", o->arena_mb);
  if (o->exp == EXP_OVERHEAD) snprintf(p + len, n - (size_t)len, "; runs %ld per form", o->runs);
  if (o->exp == EXP_RESPONSIVE)
    snprintf(p + len, n - (size_t)len, "; class %s, time scale %g, %ld samples, barrier %s", o->cls,
             o->time_scale, o->samples,
             o->barrier == 3   ? "both"
             : o->barrier == 2 ? "query"
                               : "plain");
  if (o->exp == EXP_MULTITASK)
    snprintf(p + len, n - (size_t)len, "; time scale %g, runs %ld, periods %ld, barrier %s",
             o->time_scale, o->runs, o->periods,
             o->barrier == 3   ? "both"
             : o->barrier == 2 ? "query"
                               : "plain");
  if (o->exp != EXP_OVERHEAD)
    snprintf(p + strlen(p), n - strlen(p), "\ngraphics task: E calibrated %s",
             gfx_calibrate_one(o, rt) ? "on one workgroup to N x E (--calibrate one)"
                                      : "on all N workers (--calibrate all)");
}

static void make_header(const struct popts *o, coop_rt *rt, unsigned workers, char *h, size_t n) {
  char date[64], cus[64] = "", par[768], load[64];
  struct machine mc;
  machine_of(&mc);
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
  const char *pocl = getenv("POCL_MAX_PTHREAD_COUNT");
  if (pocl && !strcmp(coop_rt_backend(rt), "opencl"))
    snprintf(cus, sizeof cus, " (POCL_MAX_PTHREAD_COUNT=%s)", pocl);
  params(o, rt, par, sizeof par);
  load_avg(load, sizeof load);
  snprintf(h, n,
           "machine: %s, %s, %s, %ld cores online, load average %s at start\n"
           "device: %s\n"
           "backend: %s (%s)\n"
           "compute units %u%s, launched %u workgroups, %u participants (1 scheduler + %u "
           "workers), local size %ld, device clock %.4f ns/tick (first application's "
           "megakernel)\n"
           "commit: %s (at build time); run %s\n"
           "%s\n",
           mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), load, coop_rt_device_name(rt),
           coop_rt_backend(rt), coop_rt_backend_note(rt), coop_rt_compute_units(rt), cus,
           coop_rt_launched_groups(rt), coop_rt_participants(rt), workers, o->local_size,
           coop_rt_tick_ns(rt), COOP_BENCH_COMMIT, date, par);
}

/* -------------------------------------------------------------- files */

static void paths(struct out *w, const struct popts *o, const char *backend) {
  char base[1000];
  if (o->csv) {
    size_t len = strlen(o->csv);
    int cut = len > 4 && !strcmp(o->csv + len - 4, ".csv");
    snprintf(base, sizeof base, "%.*s", (int)(cut ? len - 4 : len), o->csv);
    snprintf(w->csv_path, sizeof w->csv_path, "%s", o->csv);
  } else {
    snprintf(base, sizeof base, "bench/out/%s-%s", exp_name(o->exp), backend);
    snprintf(w->csv_path, sizeof w->csv_path, "%s.csv", base);
  }
  snprintf(w->md_path, sizeof w->md_path, "%s.md", base);
  snprintf(w->png_path, sizeof w->png_path, "%s.png", base);
}

static void put_comment(FILE *f, const char *h) {
  for (const char *l = h; *l;) {
    size_t len = strcspn(l, "\n");
    fprintf(f, "# %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
}

static FILE *open_file(const char *path) {
  make_parent(path);
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, PB ": %s: %s\n", path, strerror(errno));
  return f;
}

int out_open(struct out *w, const struct popts *o, coop_rt *rt, unsigned workers) {
  paths(w, o, coop_rt_backend(rt));
  make_header(o, rt, workers, w->header, sizeof w->header);
  printf(PB " %s\n%s", exp_name(o->exp), w->header);
  snprintf(w->cmd, sizeof w->cmd, "%s", o->cmd);
  printf("command: %s\ncsv: %s\nmd: %s\npng: %s\n", w->cmd, w->csv_path, w->md_path, w->png_path);
  fflush(stdout);
  w->csv = open_file(w->csv_path);
  w->md = w->csv ? open_file(w->md_path) : NULL;
  if (!w->md) return 1;
  put_comment(w->csv, w->header);
  return 0;
}

int out_close(struct out *w) {
  int rc = 0;
  if (w->csv && fclose(w->csv)) rc = 1;
  if (w->md && fclose(w->md)) rc = 1;
  w->csv = w->md = NULL;
  return rc;
}

void md_header(struct out *w, const char *title) {
  fprintf(w->md, "# %s\n\n```\n%s```\n\nCommand: `%s`\n\nCSV: `%s`; plot: `%s`.\n\n", title,
          w->header, w->cmd, w->csv_path, w->png_path);
}

void plain_label(char *dst, size_t n, const char *src) {
  size_t j = 0;
  for (size_t i = 0; src[i] && j + 1 < n; i++)
    dst[j++] = (src[i] == '\'' || src[i] == '|' || src[i] == '_') ? '-' : src[i];
  dst[j] = 0;
}

/* ------------------------------------------------------------ gnuplot */

int plot(const struct out *w, const char *script) {
  if (!have_gnuplot()) {
    printf(
        "png: not written: gnuplot is not installed (apt-get install gnuplot-nox); "
        "the CSV and Markdown files are\n");
    return 1;
  }
  FILE *p = popen("gnuplot", "w");
  if (!p) return 1;
  fprintf(p,
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1400,900 "
          "font ',10' } else { set terminal png size 1400,900 }\n"
          "set output '%s'\n%s",
          w->png_path, script);
  int rc = pclose(p);
  if (rc) printf("png: gnuplot failed (status %d); the CSV and Markdown files are written\n", rc);
  return rc != 0;
}
