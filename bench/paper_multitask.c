/*
 * paper_multitask.c: 004 Figure 6 and Table 3, the cost of multitasking.
 * Per application and input, the cooperative form first runs alone (R runs),
 * then back to back in a window of at least R runs and W periods beside
 * periodic graphics tasks of each class (light P 70 ms E 3 ms, medium 40 / 3,
 * heavy 40 / 10; E calibrated on all N workers of the idle megakernel) on
 * K = 1, N/4, N/2, N-1 workgroups. Reported per configuration:
 *   slowdown  mean run time in the window / mean run time alone (the
 *             per-run ratios' p10 and p90 beside it)
 *   period    the median over the tasks released within the window (the
 *             runs are back to back: the gaps between them are the host's
 *             share of each run) of the interval from a task's release to
 *             the next one's, which is due at release + P, or when the task
 *             finishes if it is late: max(P, its response time)
 *   misses    tasks of the window that finished later than their release
 *             + P (host clock: due time to coop_rt_wait's return)
 *   gather, exec  medians over the tasks released during a run
 * and, as 004 Figure 6, their medians over applications and inputs per K;
 * as Table 3, the slowdown at the smallest K at which at most 10% of the
 * tasks (pooled) missed, against the kernel-level preemption model P/(P-E).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper.h"

struct mt_row {
  char app[32], input[64], variant[8];
  int cls;
  unsigned workers, k, mask;
  size_t runs, tasks, misses, checked, resized, resized_checked;
  double slowdown, r10, r90, period, period_mean, gather, exec, wall_s;
};

struct mt {
  const struct popts *o;
  struct out w;
  int opened;
  double period_ms[3], exec_ms[3];
  struct mt_row *rows;
  size_t n, cap;
};

static double model(const struct mt *v, int c) {
  return v->period_ms[c] / (v->period_ms[c] - v->exec_ms[c]);
}

static void mt_print_head(void) {
  printf(
      "\nFigure 6: the cooperative form beside periodic graphics tasks (slowdown = mean run\n"
      "time / mean alone [p10, p90 of the per-run ratios]; period = median of max(P, release\n"
      "to finish), the interval to the next release, ms; missed = finish > release + P; both\n"
      "over the tasks released in the window; gather and exec p50 over the tasks released\n"
      "during a run, ms; chkd: outputs checked)\n");
  printf("%-7s %-20s %-5s %-6s %4s %-13s %4s %4s | %8s %7s %7s %7s | %8s %5s %6s | %8s %8s | %6s\n",
         "app", "input", "var", "class", "K", "fraction", "runs", "chkd", "slowdown", "p10", "p90",
         "model", "period", "tasks", "missed", "gath p50", "exec p50", "wall s");
}

static void mt_print_row(const struct mt *v, const struct mt_row *r) {
  char m[32];
  mask_label(r->mask, m, sizeof m);
  printf(
      "%-7s %-20s %-5s %-6s %4u %-13s %4zu %4zu | %8.3f %7.3f %7.3f %7.3f | %8.2f %5zu %6zu | "
      "%8.3f %8.3f | %6.1f\n",
      r->app, r->input, r->variant, gclasses[r->cls].name, r->k, m, r->runs, r->checked,
      r->slowdown, r->r10, r->r90, model(v, r->cls), r->period, r->tasks, r->misses, r->gather,
      r->exec, r->wall_s);
  fflush(stdout);
}

/* ------------------------------------------------------------ samples */

struct mt_cfg {
  struct appctx *x;
  const struct coop_app_input *in;
  const char *var;
  int query, cls;
  unsigned k, mask;
  double alone_mean; /* ns */
  int64_t t0;        /* host clock when the configuration started */
};

static void mt_csv_runs(struct mt *v, const struct mt_cfg *c, const char *kind,
                        const struct window *w) {
  char m[32];
  mask_label(c->mask, m, sizeof m);
  for (size_t i = 0; i < w->app_ns.n; i++)
    fprintf(v->w.csv, "%s,%s,%s,%u,%s,%s,%u,%s,%s,%zu,%.0f,,,,,,,,%d,%d\n",
            coop_rt_backend(c->x->rt), c->x->a->name, c->in->label, c->x->workers, c->var,
            c->cls < 0 ? "-" : gclasses[c->cls].name, c->k, c->k ? m : "-", kind, i, w->app_ns.v[i],
            w->touched[i], !w->outs[i]);
}

static void mt_csv_tasks(struct mt *v, const struct mt_cfg *c, const struct gfx *g,
                         const struct window *w) {
  char m[32];
  mask_label(c->mask, m, sizeof m);
  int64_t p = (int64_t)(v->period_ms[c->cls] * 1e6);
  for (size_t i = 0; i < g->n; i++) {
    const struct gfx_sample *s = &g->s[i];
    int64_t resp = s->t_done - s->t_release;
    fprintf(v->w.csv, "%s,%s,%s,%u,%s,%s,%u,%s,task,%zu,%lld,%lld,%lld,%lld,%lld,%d,%d,%d,,\n",
            coop_rt_backend(c->x->rt), c->x->a->name, c->in->label, c->x->workers, c->var,
            gclasses[c->cls].name, c->k, m, i, (long long)(s->t_release - w->t0),
            (long long)s->ti.gather_ns, (long long)(s->ti.t_finished - s->ti.t_started),
            (long long)resp, (long long)(s->t_next - s->t_release), s->in_app, in_window(s, w),
            resp > p);
  }
}

/* The task figures of a row: period and misses over the tasks released
 * within the window, gather and exec medians over those released during a
 * run. */
static void mt_tasks(const struct mt *v, struct mt_row *r, const struct gfx *g,
                     const struct window *w) {
  struct series per = {0}, gath = {0}, ex = {0};
  int64_t p = (int64_t)(v->period_ms[r->cls] * 1e6);
  for (size_t i = 0; i < g->n; i++) {
    const struct gfx_sample *s = &g->s[i];
    if (!in_window(s, w)) continue;
    r->tasks++;
    r->misses += s->t_done - s->t_release > p;
    push(&per, (double)(s->t_next - s->t_release) / 1e6);
    if (!s->in_app) continue;
    push(&gath, (double)s->ti.gather_ns / 1e6);
    push(&ex, (double)(s->ti.t_finished - s->ti.t_started) / 1e6);
  }
  r->period = quantile(&per, .5);
  r->period_mean = mean_of(&per);
  r->gather = quantile(&gath, .5);
  r->exec = quantile(&ex, .5);
  series_free(&per);
  series_free(&gath);
  series_free(&ex);
}

static void mt_fill(struct mt *v, const struct mt_cfg *c, const struct gfx *g,
                    const struct window *w) {
  struct mt_row *r = ROW_ADD(v);
  struct series ratio = {0};
  snprintf(r->app, sizeof r->app, "%.31s", c->x->a->name);
  snprintf(r->input, sizeof r->input, "%.63s", c->in->label);
  snprintf(r->variant, sizeof r->variant, "%s", c->var);
  r->cls = c->cls;
  r->workers = c->x->workers;
  r->k = c->k;
  r->mask = c->mask;
  r->runs = w->runs;
  r->checked = w->checked;
  r->resized = w->ntouched;
  r->resized_checked = w->touched_checked;
  for (size_t i = 0; i < w->app_ns.n; i++) push(&ratio, w->app_ns.v[i] / c->alone_mean);
  r->slowdown = mean_of(&w->app_ns) / c->alone_mean;
  r->r10 = quantile(&ratio, .1);
  r->r90 = quantile(&ratio, .9);
  series_free(&ratio);
  mt_tasks(v, r, g, w);
  r->wall_s = (double)(now_ns() - c->t0) / 1e9;
  mt_print_row(v, r);
}

/* ----------------------------------------------------------- windows */

static int mt_config(struct mt *v, struct mt_cfg *c, uint32_t reps) {
  struct gfx g;
  struct window w;
  double min_ms = (double)v->o->periods * v->period_ms[c->cls];
  double cap = 4 * min_ms + 10.0 * (double)v->o->runs * c->alone_mean / 1e6;
  struct window_spec ws = {c->in, c->query, v->o->runs, 0, min_ms, cap};
  c->x->mm.reps = reps;
  c->t0 = now_ns();
  int rc = gfx_start(&g, c->x, c->k, v->period_ms[c->cls]);
  int rw = rc ? 1 : window_run(c->x, &ws, &g, &w);
  rc |= gfx_stop(&g) | rw;
  if (!rc) {
    mark_in_app(&g, &w);
    mt_csv_runs(v, c, "app", &w);
    mt_csv_tasks(v, c, &g, &w);
    mt_fill(v, c, &g, &w);
  }
  if (!rw) window_free(&w);
  gfx_free(&g);
  return rc;
}

static int mt_variant(struct mt *v, struct mt_cfg *c, const uint32_t *reps) {
  struct window alone;
  struct window_spec ws = {c->in, c->query, v->o->runs, 0, 0.0, 1e12};
  if (window_run(c->x, &ws, NULL, &alone)) return 1;
  c->cls = -1;
  c->k = c->mask = 0;
  mt_csv_runs(v, c, "alone", &alone);
  c->alone_mean = mean_of(&alone.app_ns);
  printf("%-7s %-20s %-5s alone: %zu runs (%zu checked), mean %.3f ms, median %.3f ms\n",
         c->x->a->name, c->in->label, c->var, alone.runs, alone.checked, c->alone_mean / 1e6,
         quantile(&alone.app_ns, .5) / 1e6);
  window_free(&alone);
  unsigned ks[NFRAC], mask[NFRAC];
  int nk = k_list(c->x->workers, ks, mask), rc = 0;
  for (int cls = 0; cls < 3 && !rc; cls++)
    for (int i = 0; i < nk && !rc; i++) {
      c->cls = cls;
      c->k = ks[i];
      c->mask = mask[i];
      rc = mt_config(v, c, reps[cls]);
    }
  return rc;
}

static int mt_input(struct mt *v, struct appctx *x, const struct coop_app_input *in,
                    const uint32_t *reps) {
  int rc = 0;
  for (int q = 0; q < 2 && !rc; q++) {
    int bars = app_uses_barriers(x->a);
    if (bars && !(v->o->barrier & (1 << q))) continue;
    if (!bars && q == 0) continue;
    struct mt_cfg c = {.x = x, .in = in, .var = !bars ? "-" : q ? "query" : "plain", .query = q};
    rc = mt_variant(v, &c, reps);
  }
  return rc;
}

/* reps for each class's E (light and medium share E = 3 ms). */
static int mt_calibrate(struct mt *v, struct appctx *x, uint32_t *reps) {
  int64_t t0 = now_ns();
  for (int c = 0; c < 3; c++) {
    double e;
    if (c && v->exec_ms[c] == v->exec_ms[c - 1]) {
      reps[c] = reps[c - 1];
      continue;
    }
    if (gfx_prepare(x, v->exec_ms[c], &e)) return 1;
    reps[c] = x->mm.reps;
    printf(
        "%s: N = %u workers; matmul %ux%u x %u reps: %.3f ms on all workers (E target "
        "%.3f ms); calibration so far %.1f s\n",
        x->a->name, x->workers, x->mm.n, x->mm.n, reps[c], e, v->exec_ms[c],
        (double)(now_ns() - t0) / 1e9);
  }
  return 0;
}

static int mt_app(struct mt *v, const struct coop_app *a) {
  struct appctx x;
  uint32_t reps[3];
  if (app_open(&x, v->o, a)) return 1;
  int rc = 0;
  if (!v->opened) {
    rc = out_open(&v->w, v->o, x.rt, x.workers);
    if (!rc)
      fprintf(v->w.csv,
              "backend,app,input,workers,variant,class,k,fractions,kind,index,time_ns,"
              "gather_ns,exec_ns,response_ns,period_ns,in_app,in_window,missed,resized,checked\n");
    v->opened = !rc;
    if (!rc) mt_print_head();
  }
  if (!rc) rc = mt_calibrate(v, &x, reps);
  for (int i = 0; i < app_inputs(v->o, a) && !rc; i++) {
    struct coop_app_input in;
    rc = coop_app_input(a, (unsigned)i, (unsigned)v->o->scale, &in);
    if (rc) fprintf(stderr, PB ": %s: input %d: %s\n", a->name, i, coop_strerror(rc));
    if (!rc) rc = mt_input(v, &x, &in, reps);
    coop_app_input_free(&in);
  }
  app_close(&x);
  return rc ? 1 : 0;
}

/* ------------------------------------------------------------ summary */

#define MISS_OK 0.10 /* Table 3: "meets its deadlines" = at most 10% missed */

struct mt_agg {
  double slowdown, period, period_mean, missrate;
  size_t n;
};

/* Medians over applications, inputs and variants of class c at fraction j
 * (of the slowdowns, the median periods and the mean periods); the miss
 * rate pooled over their tasks. */
static struct mt_agg mt_aggregate(const struct mt *v, int c, int j) {
  struct series sl = {0}, pe = {0}, pm = {0};
  size_t tasks = 0, misses = 0;
  for (size_t i = 0; i < v->n; i++) {
    const struct mt_row *r = &v->rows[i];
    if (r->cls != c || !(r->mask & (1u << j))) continue;
    push(&sl, r->slowdown);
    if (!isnan(r->period)) push(&pe, r->period);
    if (!isnan(r->period_mean)) push(&pm, r->period_mean);
    tasks += r->tasks;
    misses += r->misses;
  }
  struct mt_agg a = {quantile(&sl, .5), quantile(&pe, .5), quantile(&pm, .5),
                     tasks ? (double)misses / (double)tasks : NAN, sl.n};
  series_free(&sl);
  series_free(&pe);
  series_free(&pm);
  return a;
}

/* The smallest fraction whose tasks missed at most MISS_OK; -1 if none. */
static int mt_meets(const struct mt *v, int c) {
  for (int j = 0; j < NFRAC; j++) {
    struct mt_agg a = mt_aggregate(v, c, j);
    if (a.n && a.missrate <= MISS_OK) return j;
  }
  return -1;
}

static void mt_fig6(const struct mt *v, FILE *f, int md) {
  fprintf(f, md ? "\n## Figure 6: medians over applications and inputs\n\n| class | K | "
                  "configurations | slowdown | model P/(P-E) | period ms (median) | period ms "
                  "(mean) | P ms | miss rate |\n| --- | --- | --- | --- | --- | --- | --- | --- | "
                  "--- |\n"
                : "\nFigure 6 (medians over applications, inputs and variants; period: of the "
                  "configurations'\nmedians and means; miss rate pooled):\n"
                  "class   K      n  slowdown  model   period ms  mean ms    P ms  miss rate\n");
  for (int c = 0; c < 3; c++)
    for (int j = 0; j < NFRAC; j++) {
      struct mt_agg a = mt_aggregate(v, c, j);
      fprintf(f,
              md ? "| %s | %s | %zu | %.3f | %.3f | %.2f | %.2f | %.1f | %.3f |\n"
                 : "%-7s %-4s %3zu  %8.3f  %5.3f  %9.2f  %7.2f  %6.1f  %9.3f\n",
              gclasses[c].name, frac_label[j], a.n, a.slowdown, model(v, c), a.period,
              a.period_mean, v->period_ms[c], a.missrate);
    }
}

static void mt_table3(const struct mt *v, FILE *f, int md) {
  const char *sep = md ? " | " : "  ";
  fprintf(f, md ? "\n## Table 3: slowdown at the smallest K that meets the deadlines (at most "
                  "10%% of the tasks missed)\n\n| class | P ms | E ms | kernel-level model "
                  "P/(P-E) | this run | K | 004 measured | 004 K |\n| --- | --- | --- | --- | --- "
                  "| --- | --- | --- |\n"
                : "\nTable 3 (slowdown at the smallest K at which at most 10%% of the tasks "
                  "missed):\n");
  for (int c = 0; c < 3; c++) {
    int j = mt_meets(v, c);
    struct mt_agg a = j >= 0 ? mt_aggregate(v, c, j) : (struct mt_agg){NAN, NAN, NAN, NAN, 0};
    fprintf(f, "%s%s%s%.1f%s%.2f%s%.3f%s%.3f%s%s%s%.2f%s%s%s\n", md ? "| " : "", gclasses[c].name,
            sep, v->period_ms[c], sep, v->exec_ms[c], sep, model(v, c), sep, a.slowdown, sep,
            j >= 0 ? frac_label[j] : "none met", sep, gclasses[c].paper_slowdown, sep,
            gclasses[c].paper_k, md ? " |" : "");
  }
  if (!md) printf("(columns: class, P ms, E ms, model, this run, K, 004 measured, 004 K)\n");
}

static void mt_summary(const struct mt *v, FILE *f, int md) {
  mt_fig6(v, f, md);
  mt_table3(v, f, md);
}

static void mt_md(struct mt *v) {
  FILE *f = v->w.md;
  md_header(&v->w, "004 Figure 6 / Table 3: the cost of multitasking");
  fprintf(f,
          "Slowdown = mean run time beside the tasks / mean alone (p10, p90 of the per-run "
          "ratios); period = median (and mean) over the tasks released within the window (runs "
          "back to back) of the interval from a task's release to the next release, which is "
          "due at release + P or, if the task is late, when it finishes; missed = finish "
          "(coop_rt_wait returns) > release + P, of the same tasks; gather and exec p50 over the "
          "tasks released while a run was in progress. Checked: runs whose output was checked "
          "against the CPU reference (first, last, resized ones first; see bench/README.md); "
          "resized: runs the scheduler resized (kill, fork, or fewer than N groups at start).\n\n");
  fprintf(f,
          "| application | input | variant | class | K | fraction | runs | checked | resized "
          "(checked) | slowdown | p10 | p90 | model | period ms | mean | tasks | missed | gather "
          "p50 ms "
          "| exec p50 ms |\n");
  fprintf(f,
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < v->n; i++) {
    const struct mt_row *r = &v->rows[i];
    char m[32];
    mask_label(r->mask, m, sizeof m);
    fprintf(f,
            "| %s | %s | %s | %s | %u | %s | %zu | %zu | %zu (%zu) | %.3f | %.3f | %.3f | %.3f | "
            "%.2f | %.2f | %zu | %zu | %.3f | %.3f |\n",
            r->app, r->input, r->variant, gclasses[r->cls].name, r->k, m, r->runs, r->checked,
            r->resized, r->resized_checked, r->slowdown, r->r10, r->r90, model(v, r->cls),
            r->period, r->period_mean, r->tasks, r->misses, r->gather, r->exec);
  }
  mt_summary(v, f, 1);
}

static void mt_plot(const struct mt *v) {
  char s[8192];
  size_t len = (size_t)snprintf(s, sizeof s, "$d << EOD\n");
  for (int j = 0; j < NFRAC; j++) {
    len += (size_t)snprintf(s + len, sizeof s - len, "%d", j);
    for (int c = 0; c < 3; c++) {
      struct mt_agg a = mt_aggregate(v, c, j);
      len += (size_t)snprintf(s + len, sizeof s - len, " %g %g", a.slowdown, a.period_mean);
    }
    len += (size_t)snprintf(s + len, sizeof s - len, "\n");
  }
  snprintf(s + len, sizeof s - len,
           "EOD\nset termoption noenhanced\nset datafile missing 'nan'\nset grid\nset xtics "
           "('1' 0, 'N/4' 1, 'N/2' 2, 'N-1' 3)\nset xrange [-0.3:3.3]\nset xlabel 'K "
           "(workgroups of the graphics task)'\nset multiplot layout 1,2 title 'Figure 6: "
           "medians over applications and inputs'\nset title 'slowdown of the cooperative "
           "kernel'\nset key top left\nplot $d using 1:2 w lp pt 7 lc 1 t 'light', $d using "
           "1:4 w lp pt 7 lc 2 t 'medium', $d using 1:6 w lp pt 7 lc 3 t 'heavy', %g w l dt 2 "
           "lc 1 t 'model light', %g w l dt 2 lc 2 t 'model medium', %g w l dt 2 lc 3 t 'model "
           "heavy'\nset title 'period of the graphics task (ms, median of the means)'\nset "
           "logscale y\nplot $d using "
           "1:3 w lp pt 7 lc 1 t 'light', $d using 1:5 w lp pt 7 lc 2 t 'medium', $d using 1:7 "
           "w lp pt 7 lc 3 t 'heavy', %g w l dt 2 lc 1 t 'P light', %g w l dt 2 lc 2 t 'P "
           "medium/heavy'\nunset multiplot\n",
           model(v, 0), model(v, 1), model(v, 2), v->period_ms[0], v->period_ms[1]);
  plot(&v->w, s);
}

int run_multitask(const struct popts *o) {
  struct mt v = {.o = o};
  for (int c = 0; c < 3; c++) {
    v.period_ms[c] = gclasses[c].period_ms * o->time_scale;
    v.exec_ms[c] = gclasses[c].exec_ms * o->time_scale;
  }
  int rc = 0;
  for (unsigned i = 0; i < coop_napps && !rc; i++)
    if (app_selected(o, coop_apps[i])) rc = mt_app(&v, coop_apps[i]);
  if (!v.opened) rc = 1;
  if (!rc && v.n) {
    mt_summary(&v, stdout, 0);
    mt_md(&v);
    mt_plot(&v);
  }
  if (v.opened && out_close(&v.w)) rc = 1;
  free(v.rows);
  return rc;
}
