/*
 * paper_overhead.c: 004 Table 2, the overhead of cooperative kernels
 * without multitasking. Per application and input, the original form
 * (plain global barriers, no primitives) and the cooperative form run
 * alternately on every worker, R times each, with nothing else submitted,
 * so the scheduler never resizes. Reported: the median time of each form,
 * and slowdown = cooperative / original as the median of the per-run
 * ratios with their min and max; over all applications and inputs the
 * geometric mean (as 004) and the max, overall, for the barrier (graph)
 * applications and for the work-stealing ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper.h"

struct ov_row {
  char app[32], input[64];
  unsigned workers;
  int barriers;
  double orig_ms, coop_ms, ratio, rmin, rmax;
};

struct ov {
  const struct popts *o;
  struct out w;
  int opened, query;
  struct ov_row *rows;
  size_t n, cap;
};

static void ov_print_head(void) {
  printf(
      "\nTable 2: original vs cooperative form on every worker, no multitasking (ms;\n"
      "slowdown = median of the per-run ratios cooperative / original, [min, max])\n");
  printf("%-8s %-22s %4s %11s %11s %9s %9s %9s\n", "app", "input", "N", "original", "coop",
         "slowdown", "min", "max");
}

static void ov_print_row(const struct ov_row *r) {
  printf("%-8s %-22s %4u %11.3f %11.3f %9.3f %9.3f %9.3f\n", r->app, r->input, r->workers,
         r->orig_ms, r->coop_ms, r->ratio, r->rmin, r->rmax);
  fflush(stdout);
}

/* One pair of runs (order alternating with r); 0 if both correct. */
static int ov_pair(struct ov *v, struct appctx *x, const struct coop_app_input *in, long r,
                   double *orig, double *coop) {
  struct coop_rt_task_info ti;
  unsigned first = r % 2 ? COOP_APP_MODE_COOPERATIVE : COOP_APP_MODE_ORIGINAL;
  unsigned second =
      first == COOP_APP_MODE_ORIGINAL ? COOP_APP_MODE_COOPERATIVE : COOP_APP_MODE_ORIGINAL;
  double t1, t2;
  if (app_run(x, in, first, v->query, &ti, &t1) || app_run(x, in, second, v->query, &ti, &t2))
    return 1;
  *orig = first == COOP_APP_MODE_ORIGINAL ? t1 : t2;
  *coop = first == COOP_APP_MODE_ORIGINAL ? t2 : t1;
  return 0;
}

static int ov_input(struct ov *v, struct appctx *x, const struct coop_app_input *in) {
  struct series orig = {0}, coop = {0}, ratio = {0};
  double a, b;
  int rc = ov_pair(v, x, in, 0, &a, &b); /* warm-up, not recorded */
  for (long r = 0; r < v->o->runs && !rc; r++) {
    if ((rc = ov_pair(v, x, in, r, &a, &b))) break;
    push(&orig, a);
    push(&coop, b);
    push(&ratio, b / a);
    fprintf(v->w.csv, "%s,%s,%s,%u,%s,%ld,%.0f,%.0f,%.6f\n", coop_rt_backend(x->rt), x->a->name,
            in->label, x->workers, v->query ? "query" : "plain", r, a, b, b / a);
  }
  if (!rc) {
    struct ov_row *row = ROW_ADD(v);
    snprintf(row->app, sizeof row->app, "%.31s", x->a->name);
    snprintf(row->input, sizeof row->input, "%.63s", in->label);
    row->workers = x->workers;
    row->barriers = app_uses_barriers(x->a);
    row->orig_ms = quantile(&orig, .5) / 1e6;
    row->coop_ms = quantile(&coop, .5) / 1e6;
    row->ratio = quantile(&ratio, .5);
    row->rmin = min_of(&ratio);
    row->rmax = max_of(&ratio);
    ov_print_row(row);
  }
  series_free(&orig);
  series_free(&coop);
  series_free(&ratio);
  return rc;
}

static int ov_app(struct ov *v, const struct coop_app *a) {
  struct appctx x;
  if (app_open(&x, v->o, a)) return 1;
  int rc = 0;
  if (!v->opened) {
    rc = out_open(&v->w, v->o, x.rt, x.workers);
    if (!rc)
      fprintf(v->w.csv,
              "backend,app,input,workers,variant,run,original_ns,"
              "cooperative_ns,ratio\n");
    if (!rc) ov_print_head();
    v->opened = !rc;
  }
  for (int i = 0; i < app_inputs(v->o, a) && !rc; i++) {
    struct coop_app_input in;
    rc = coop_app_input(a, (unsigned)i, (unsigned)v->o->scale, &in);
    if (rc) fprintf(stderr, PB ": %s: input %d: %s\n", a->name, i, coop_strerror(rc));
    if (!rc) rc = ov_input(v, &x, &in);
    coop_app_input_free(&in);
  }
  app_close(&x);
  return rc ? 1 : 0;
}

/* ------------------------------------------------------------ summary */

struct ov_sum {
  double geo, max;
  size_t n;
  const struct ov_row *worst;
};

/* which: -1 all, 1 barrier applications, 0 work stealing. */
static struct ov_sum ov_summary(const struct ov *v, int which) {
  struct ov_sum s = {NAN, NAN, 0, NULL};
  double logsum = 0;
  for (size_t i = 0; i < v->n; i++) {
    const struct ov_row *r = &v->rows[i];
    if (which >= 0 && r->barriers != which) continue;
    logsum += log(r->ratio);
    if (!s.worst || r->ratio > s.max) {
      s.max = r->ratio;
      s.worst = r;
    }
    s.n++;
  }
  if (s.n) s.geo = exp(logsum / (double)s.n);
  return s;
}

/* "mean SEP max (where) END" */
static void ov_cell(FILE *f, struct ov_sum s, const char *sep, const char *end) {
  if (!s.n)
    fprintf(f, "-%s-%s", sep, end);
  else
    fprintf(f, "%.3f%s%.3f (%s %s)%s", s.geo, sep, s.max, s.worst->app, s.worst->input, end);
}

static void ov_report(struct ov *v) {
  struct ov_sum all = ov_summary(v, -1), bar = ov_summary(v, 1), ws = ov_summary(v, 0);
  printf(
      "\nTable 2 summary over %zu application/input pairs (geometric mean of the median\n"
      "slowdowns, as 004; max and where):\n",
      all.n);
  printf("overall   mean ");
  ov_cell(stdout, all, "  max ", "\n");
  printf("barrier   mean ");
  ov_cell(stdout, bar, "  max ", "\n");
  printf("wk.steal  mean ");
  ov_cell(stdout, ws, "  max ", "\n");
  printf(
      "paper (004 Table 2, Intel Iris 6100): overall 1.07 / 1.23 (octree), barrier "
      "1.06 / 1.20 (color G3 circuit), wk.steal 1.12 / 1.23 (octree)\n");
  FILE *f = v->w.md;
  md_header(&v->w, "004 Table 2: overhead of cooperative kernels without multitasking");
  fprintf(f, "## Per application and input (%s variant of the resizing barrier)\n\n",
          v->query ? "query" : "plain");
  fprintf(f,
          "| application | input | N | original ms (median) | cooperative ms (median) | "
          "slowdown (median) | min | max |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < v->n; i++) {
    const struct ov_row *r = &v->rows[i];
    fprintf(f, "| %s | %s | %u | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r->app, r->input,
            r->workers, r->orig_ms, r->coop_ms, r->ratio, r->rmin, r->rmax);
  }
  fprintf(f,
          "\n## Summary (geometric mean of the medians, and max)\n\n"
          "| | overall mean | overall max | barrier mean | barrier max | wk.steal mean | "
          "wk.steal max |\n| --- | --- | --- | --- | --- | --- | --- |\n| this run | ");
  ov_cell(f, all, " | ", " | ");
  ov_cell(f, bar, " | ", " | ");
  ov_cell(f, ws, " | ", " |\n");
  fprintf(f,
          "| 004 Table 2 | 1.07 | 1.23 (octree) | 1.06 | 1.20 (color G3 circuit) | 1.12 | "
          "1.23 (octree) |\n");
}

static void ov_plot(const struct ov *v) {
  size_t len = 0, cap = 4096 + v->n * 128;
  char *s = malloc(cap);
  if (!s) return;
  len += (size_t)snprintf(s + len, cap - len, "$d << EOD\n");
  for (size_t i = 0; i < v->n; i++) {
    char lab[128];
    snprintf(lab, sizeof lab, "%s %s", v->rows[i].app, v->rows[i].input);
    len += (size_t)snprintf(s + len, cap - len, "\"%s\" %g %g %g\n", lab, v->rows[i].ratio,
                            v->rows[i].rmin, v->rows[i].rmax);
  }
  snprintf(s + len, cap - len,
           "EOD\nset termoption noenhanced\nset offsets 0.5, 0.5, 0, 0\nset title 'Table 2: "
           "cooperative / original "
           "(median, min-max of %ld runs)'\nset ylabel 'slowdown'\nset xtics rotate by -60 "
           "font ',8'\nset grid y\nset bmargin 12\nset key top left\n"
           "plot $d using 0:2:3:4:xtic(1) with yerrorbars pt 7 title 'this run', "
           "1 with lines dt 2 lc 'black' title 'no overhead', 1.07 with lines dt 3 lc 'red' "
           "title '004 mean 1.07'\n",
           v->o->runs);
  plot(&v->w, s);
  free(s);
}

int run_overhead(const struct popts *o) {
  struct ov v = {.o = o};
  v.query = o->barrier == 2;
  int rc = 0;
  for (unsigned i = 0; i < coop_napps && !rc; i++)
    if (app_selected(o, coop_apps[i])) rc = ov_app(&v, coop_apps[i]);
  if (!v.opened) rc = 1;
  if (!rc && v.n) {
    ov_report(&v);
    ov_plot(&v);
  }
  if (v.opened && out_close(&v.w)) rc = 1;
  free(v.rows);
  return rc;
}
