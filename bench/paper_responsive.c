/*
 * paper_responsive.c: 004 Figure 5, responsiveness. While an application's
 * cooperative form runs (back to back, each run checked), matmul graphics
 * tasks of one class (default medium: every P = 40 ms, work calibrated to
 * E = 3 ms on all N workers) ask for K = 1, N/4, N/2, N-1 workgroups, with
 * the plain and the query resizing barrier. Reported per (application,
 * input, variant, K), over the tasks released while a run was in progress:
 * gather time (the runtime's gather_ns, device clock) and execution time
 * (t_finished - t_started), p50 / p90 / p99 / max.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper.h"

struct rs_row {
  char app[32], input[64], variant[8];
  unsigned workers, k, mask;
  size_t n, runs, checked, resized, resized_checked;
  double g[4], e[4]; /* ms: p50, p90, p99, max */
  double wall_s;     /* the configuration's wall time */
};

struct rs {
  const struct popts *o;
  const struct gclass *c;
  double period_ms, exec_ms;
  struct out w;
  int opened;
  struct rs_row *rows;
  size_t n, cap;
};

static const double qs[4] = {.5, .9, .99, 1.0};

static void rs_print_head(const struct rs *v) {
  printf(
      "\nFigure 5: %s graphics tasks (P %.1f ms, E %.2f ms) while the cooperative form\n"
      "runs back to back (runs; chkd: outputs checked); ms over the n tasks released\n"
      "during a run\n",
      v->c->name, v->period_ms, v->exec_ms);
  printf("%-7s %-20s %-5s %4s %-13s %5s %4s %4s | %8s %8s %8s %8s | %8s %8s %8s %8s | %6s\n", "app",
         "input", "var", "K", "fraction", "runs", "chkd", "n", "gath p50", "p90", "p99", "max",
         "exec p50", "p90", "p99", "max", "wall s");
}

static void rs_print_row(const struct rs_row *r) {
  char m[32];
  mask_label(r->mask, m, sizeof m);
  printf(
      "%-7s %-20s %-5s %4u %-13s %5zu %4zu %4zu | %8.3f %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f "
      "%8.3f | %6.1f\n",
      r->app, r->input, r->variant, r->k, m, r->runs, r->checked, r->n, r->g[0], r->g[1], r->g[2],
      r->g[3], r->e[0], r->e[1], r->e[2], r->e[3], r->wall_s);
  fflush(stdout);
}

static void rs_csv(struct rs *v, struct appctx *x, const struct coop_app_input *in, const char *var,
                   const struct gfx *g, unsigned mask) {
  char m[32];
  mask_label(mask, m, sizeof m);
  for (size_t i = 0; i < g->n; i++) {
    const struct gfx_sample *s = &g->s[i];
    fprintf(v->w.csv, "%s,%s,%s,%u,%s,%u,%s,%zu,%d,%lld,%lld,%lld\n", coop_rt_backend(x->rt),
            x->a->name, in->label, x->workers, var, g->k, m, i, s->in_app,
            (long long)s->ti.gather_ns, (long long)(s->ti.t_finished - s->ti.t_started),
            (long long)(s->t_done - s->t_release));
  }
}

static void rs_fill(struct rs_row *r, const struct gfx *g, const struct window *w) {
  struct series gs = {0}, es = {0};
  for (size_t i = 0; i < g->n; i++)
    if (g->s[i].in_app) {
      push(&gs, (double)g->s[i].ti.gather_ns / 1e6);
      push(&es, (double)(g->s[i].ti.t_finished - g->s[i].ti.t_started) / 1e6);
    }
  r->n = gs.n;
  r->runs = w->runs;
  r->checked = w->checked;
  r->resized = w->ntouched;
  r->resized_checked = w->touched_checked;
  for (int q = 0; q < 4; q++) {
    r->g[q] = quantile(&gs, qs[q]);
    r->e[q] = quantile(&es, qs[q]);
  }
  series_free(&gs);
  series_free(&es);
}

/* One configuration: the application beside tasks of k groups. */
static int rs_config(struct rs *v, struct appctx *x, const struct coop_app_input *in, int query,
                     const char *var, unsigned k, unsigned mask) {
  struct gfx g;
  struct window w;
  double cap = fmax(2000.0, 4.0 * (double)v->o->samples * v->period_ms);
  struct window_spec ws = {in, query, 1, v->o->samples, 0.0, cap};
  int64_t t0 = now_ns();
  int rc = gfx_start(&g, x, k, v->period_ms);
  int rw = rc ? 1 : window_run(x, &ws, &g, &w);
  rc |= gfx_stop(&g) | rw;
  if (!rc) {
    mark_in_app(&g, &w);
    rs_csv(v, x, in, var, &g, mask);
    struct rs_row *r = ROW_ADD(v);
    snprintf(r->app, sizeof r->app, "%.31s", x->a->name);
    snprintf(r->input, sizeof r->input, "%.63s", in->label);
    snprintf(r->variant, sizeof r->variant, "%s", var);
    r->workers = x->workers;
    r->k = k;
    r->mask = mask;
    rs_fill(r, &g, &w);
    r->wall_s = (double)(now_ns() - t0) / 1e9;
    rs_print_row(r);
  }
  if (!rw) window_free(&w);
  gfx_free(&g);
  return rc;
}

static int rs_input(struct rs *v, struct appctx *x, const struct coop_app_input *in) {
  unsigned ks[NFRAC], mask[NFRAC];
  int nk = k_list(x->workers, ks, mask), rc = 0;
  for (int q = 0; q < 2 && !rc; q++) {
    int bars = app_uses_barriers(x->a);
    if (bars && !(v->o->barrier & (1 << q))) continue;
    if (!bars && q == 0) continue; /* work stealing: no resizing barrier, run once */
    const char *var = !bars ? "-" : q ? "query" : "plain";
    for (int i = 0; i < nk && !rc; i++) rc = rs_config(v, x, in, q, var, ks[i], mask[i]);
  }
  return rc;
}

static int rs_app(struct rs *v, const struct coop_app *a) {
  struct appctx x;
  double e_meas;
  int64_t t0 = now_ns();
  if (app_open(&x, v->o, a)) return 1;
  int rc = gfx_prepare(&x, v->exec_ms, &e_meas);
  if (!rc && !v->opened) {
    rc = out_open(&v->w, v->o, x.rt, x.workers);
    if (!rc)
      fprintf(v->w.csv,
              "backend,app,input,workers,variant,k,fractions,task,in_app,gather_ns,"
              "exec_ns,response_ns\n");
    v->opened = !rc;
    if (!rc) rs_print_head(v);
  }
  if (!rc)
    printf(
        "%s: N = %u workers; matmul %ux%u x %u reps: %.3f ms on all workers (target %.3f); "
        "launch and calibration %.1f s\n",
        a->name, x.workers, x.mm.n, x.mm.n, x.mm.reps, e_meas, v->exec_ms,
        (double)(now_ns() - t0) / 1e9);
  for (int i = 0; i < app_inputs(v->o, a) && !rc; i++) {
    struct coop_app_input in;
    rc = coop_app_input(a, (unsigned)i, (unsigned)v->o->scale, &in);
    if (rc) fprintf(stderr, PB ": %s: input %d: %s\n", a->name, i, coop_strerror(rc));
    if (!rc) rc = rs_input(v, &x, &in);
    coop_app_input_free(&in);
  }
  app_close(&x);
  return rc ? 1 : 0;
}

/* ------------------------------------------------------------ report */

static void rs_md(struct rs *v) {
  FILE *f = v->w.md;
  md_header(&v->w, "004 Figure 5: responsiveness (gather and execution time)");
  fprintf(f,
          "Graphics class %s: a matmul task every P = %.1f ms, calibrated to E = %.2f ms (how: "
          "see the header). The application runs back to back; times in ms over the n tasks "
          "released while a run was in progress. Runs: application runs; checked: their outputs "
          "checked against the CPU reference; resized: runs the scheduler resized (kill, fork, "
          "or fewer than N groups at start), and of those checked (see bench/README.md).\n\n",
          v->c->name, v->period_ms, v->exec_ms);
  fprintf(f,
          "| application | input | variant | K | fraction | runs | checked | resized (checked) | n "
          "| gather p50 | p90 | p99 | max | exec p50 | p90 | p99 | max |\n");
  fprintf(f,
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
          "--- | --- | --- |\n");
  for (size_t i = 0; i < v->n; i++) {
    const struct rs_row *r = &v->rows[i];
    char m[32];
    mask_label(r->mask, m, sizeof m);
    fprintf(f,
            "| %s | %s | %s | %u | %s | %zu | %zu | %zu (%zu) | %zu | %.3f | %.3f | %.3f | %.3f | "
            "%.3f | %.3f | %.3f | %.3f |\n",
            r->app, r->input, r->variant, r->k, m, r->runs, r->checked, r->resized,
            r->resized_checked, r->n, r->g[0], r->g[1], r->g[2], r->g[3], r->e[0], r->e[1], r->e[2],
            r->e[3]);
  }
}

/* Median over an application's inputs of a p50 (gather: variant var; exec:
 * var NULL, both variants pooled). */
static double rs_median(const struct rs *v, const char *app, unsigned k, const char *var) {
  struct series s = {0};
  for (size_t i = 0; i < v->n; i++) {
    const struct rs_row *r = &v->rows[i];
    if (strcmp(r->app, app) || r->k != k || (var && strcmp(r->variant, var)) || !r->n) continue;
    push(&s, var ? r->g[0] : r->e[0]);
  }
  double m = quantile(&s, .5);
  series_free(&s);
  return m;
}

/* Figure 5 in numbers: per application and K, the medians over its inputs
 * of the p50 gather time (by variant) and execution time. */
static void rs_summary(const struct rs *v, FILE *f, int md) {
  if (md)
    fprintf(f,
            "\n## Figure 5: per application, medians over its inputs of the p50s (ms)\n\n"
            "| application | K | fraction | gather plain | gather query | gather (work "
            "stealing) | execution |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  else
    fprintf(f,
            "\nFigure 5 (per application, medians over its inputs of the p50s, ms):\n"
            "%-7s %4s %-13s %12s %12s %12s %10s\n",
            "app", "K", "fraction", "gather plain", "gather query", "gather (ws)", "execution");
  unsigned last = 0;
  const char *app = "";
  for (size_t i = 0; i < v->n; i++) {
    const struct rs_row *r = &v->rows[i];
    if (!strcmp(r->app, app) && r->k <= last) continue;
    app = r->app;
    last = r->k;
    char m[32];
    mask_label(r->mask, m, sizeof m);
    fprintf(f,
            md ? "| %s | %u | %s | %.3f | %.3f | %.3f | %.3f |\n"
               : "%-7s %4u %-13s %12.3f %12.3f %12.3f %10.3f\n",
            r->app, r->k, m, rs_median(v, r->app, r->k, "plain"),
            rs_median(v, r->app, r->k, "query"), rs_median(v, r->app, r->k, "-"),
            rs_median(v, r->app, r->k, NULL));
  }
}

/* The datablock of one application: K, gather plain, gather query, gather
 * (work stealing), exec; medians over its inputs of the p50s. */
static size_t rs_block(const struct rs *v, const char *app, int idx, char *s, size_t cap) {
  size_t len = (size_t)snprintf(s, cap, "$a%d << EOD\n", idx);
  unsigned last = 0;
  for (size_t i = 0; i < v->n; i++) {
    const struct rs_row *r = &v->rows[i];
    if (strcmp(r->app, app) || r->k <= last) continue;
    last = r->k;
    len += (size_t)snprintf(s + len, len < cap ? cap - len : 0, "%u %g %g %g %g\n", r->k,
                            rs_median(v, app, r->k, "plain"), rs_median(v, app, r->k, "query"),
                            rs_median(v, app, r->k, "-"), rs_median(v, app, r->k, NULL));
  }
  return len + (size_t)snprintf(s + len, len < cap ? cap - len : 0, "EOD\n");
}

/* The plot command of one application's panel: gather by variant (plain
 * and query for the graph applications, one for work stealing), execution,
 * and the period. */
static size_t rs_panel(const struct rs *v, const char *app, int a, char *s, size_t cap) {
  int ws = !isnan(rs_median(v, app, 1, "-"));
  size_t len = (size_t)snprintf(s, cap, "set title '%s'\nplot ", app);
  if (ws)
    len += (size_t)snprintf(s + len, cap - len,
                            "$a%d using 1:4 with linespoints pt 9 lc 3 title 'gather', ", a);
  else
    len += (size_t)snprintf(s + len, cap - len,
                            "$a%d using 1:2 with linespoints pt 7 lc 1 title 'gather, plain', $a%d "
                            "using 1:3 with linespoints pt 5 lc 2 title 'gather, query', ",
                            a, a);
  return len +
         (size_t)snprintf(s + len, cap - len,
                          "$a%d using 1:5 with linespoints pt 13 lw 2 lc 4 title 'execution', "
                          "%g with lines dt 2 lc 'gray' title 'P'\n",
                          a, v->period_ms);
}

static void rs_plot(const struct rs *v) {
  size_t cap = 65536, len = 0;
  char *s = malloc(cap);
  const char *apps[32];
  int na = 0;
  if (!s) return;
  for (size_t i = 0; i < v->n && na < 32; i++)
    if (!na || strcmp(apps[na - 1], v->rows[i].app)) apps[na++] = v->rows[i].app;
  for (int a = 0; a < na; a++) len += rs_block(v, apps[a], a, s + len, cap - len);
  len += (size_t)snprintf(s + len, cap - len,
                          "set termoption noenhanced\nset logscale y\nset logscale x 2\nset "
                          "offsets graph 0.05, graph 0.05, 0, 0\nset grid\nset key bottom "
                          "right font ',8'\nset xlabel 'K (workgroups of the task)'\nset ylabel "
                          "'ms (median over inputs of p50)'\nset datafile missing 'nan'\nset "
                          "multiplot layout %d,%d title 'Figure 5: %s tasks, P = %.1f ms'\n",
                          na > 1 ? 2 : 1, (na + 1) / 2, v->c->name, v->period_ms);
  for (int a = 0; a < na; a++) len += rs_panel(v, apps[a], a, s + len, cap - len);
  snprintf(s + len, cap - len, "unset multiplot\n");
  plot(&v->w, s);
  free(s);
}

int run_responsive(const struct popts *o) {
  struct rs v = {.o = o, .c = gclass_find(o->cls)};
  v.period_ms = v.c->period_ms * o->time_scale;
  v.exec_ms = v.c->exec_ms * o->time_scale;
  int rc = 0;
  for (unsigned i = 0; i < coop_napps && !rc; i++)
    if (app_selected(o, coop_apps[i])) rc = rs_app(&v, coop_apps[i]);
  if (!v.opened) rc = 1;
  if (!rc && v.n) {
    rs_summary(&v, stdout, 0);
    rs_md(&v);
    rs_summary(&v, v.w.md, 1);
    rs_plot(&v);
  }
  if (v.opened && out_close(&v.w)) rc = 1;
  free(v.rows);
  return rc;
}
