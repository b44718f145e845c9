/*
 * side_report.c: coop-bench-side's rows and what is made of them: the
 * figures per row (latency percentiles against the matmul alone, misses,
 * gather, the long kernel's slowdown against running alone), the tables on
 * stdout and in the .md, the CSV (every sample) and its reading back for
 * --report, and the plot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "side_setup.h"

struct result results[MAXRESULTS];
int nresults;
char header[4096];
char title[160];

void add_run(struct result *x, const struct coop_rt_task_info *ti) {
  if (x->nr == x->capr) {
    x->capr = x->capr ? 2 * x->capr : 32;
    x->r = realloc(x->r, x->capr * sizeof *x->r);
    if (!x->r) {
      fprintf(stderr, SB ": out of memory\n");
      exit(1);
    }
  }
  struct run *r = &x->r[x->nr++];
  memset(r, 0, sizeof *r);
  r->t_started = ti->t_started;
  r->t_finished = ti->t_finished;
  r->kills = ti->kills;
  r->forks = ti->forks;
  r->m_min = ti->m_min;
  r->taken = ti->kills_taken;
  r->waits = ti->kill_waits;
}

/* The tasks a setup's figures are taken over: not the check task, released
 * in the window and, beside a long kernel, during one of its runs. */
int counted(const struct result *x, const struct sample *s) {
  return !s->chk && s->t_release >= x->t0 && s->t_release < x->t1 && (!x->has_long || s->in_run);
}

void mark_in_run(struct result *x) {
  for (size_t i = 0; i < x->ns; i++) {
    struct sample *s = &x->s[i];
    s->in_run = 0;
    for (size_t j = 0; j < x->nr && !s->in_run; j++)
      s->in_run = s->t_release >= x->r[j].t_started && s->t_release < x->r[j].t_finished;
  }
}

struct result *new_result(int setup, unsigned k, const char *klabel) {
  if (nresults == MAXRESULTS) {
    fprintf(stderr, SB ": internal: more than %d rows\n", MAXRESULTS);
    exit(1);
  }
  struct result *x = &results[nresults++];
  memset(x, 0, sizeof *x);
  x->setup = setup;
  x->k = k;
  snprintf(x->klabel, sizeof x->klabel, "%s", klabel ? klabel : "");
  x->has_long = (side_setups[setup].flags & SETUP_LONG) != 0;
  if (side_setups[setup].flags & SETUP_PER_K)
    snprintf(x->name, sizeof x->name, "%s, K=%u (%s)", side_setups[setup].label, k,
             klabel ? klabel : "");
  else
    snprintf(x->name, sizeof x->name, "%s", side_setups[setup].label);
  return x;
}

void free_results(void) {
  for (int i = 0; i < nresults; i++) {
    free(results[i].s);
    free(results[i].r);
  }
  nresults = 0;
}

void take_samples(struct result *x, struct gfx *g) {
  x->s = g->s;
  x->ns = g->n;
  g->s = NULL;
  g->n = g->cap = 0;
}

/* ------------------------------------------------------------ report */

struct gstat {
  size_t n, nwin, miss;
  double p50, p90, p99, max, exec50, gather50, gather99, per50, permean, launch99;
};

static void gfx_stats(const struct result *x, const struct sopts *o, struct gstat *g) {
  struct series lat = {0}, ex = {0}, ga = {0}, per = {0}, la = {0};
  memset(g, 0, sizeof *g);
  int64_t P = (int64_t)(o->period_ms * 1e6);
  for (size_t i = 0; i < x->ns; i++) {
    const struct sample *s = &x->s[i];
    if (!s->chk && s->t_release >= x->t0 && s->t_release < x->t1) g->nwin++;
    if (!counted(x, s)) continue;
    g->n++;
    push(&lat, (double)(s->t_done - s->t_release) / 1e6);
    push(&ex, (double)s->exec_ns / 1e6);
    if (side_setups[x->setup].flags & SETUP_GATHER) push(&ga, (double)s->gather_ns / 1e6);
    push(&per, (double)(s->t_next - s->t_release) / 1e6);
    push(&la, (double)(s->t_launch - s->t_release) / 1e6);
    g->miss += s->t_done > s->t_release + P;
  }
  g->p50 = quantile(&lat, .5);
  g->p90 = quantile(&lat, .9);
  g->p99 = quantile(&lat, .99);
  g->max = quantile(&lat, 1);
  g->exec50 = quantile(&ex, .5);
  g->gather50 = quantile(&ga, .5);
  g->gather99 = quantile(&ga, .99);
  g->per50 = quantile(&per, .5);
  g->permean = mean_of(&per);
  g->launch99 = quantile(&la, .99);
  series_free(&la);
  series_free(&lat);
  series_free(&ex);
  series_free(&ga);
  series_free(&per);
}

/* A launch this late after its release is counted as late. */
#define LATE_LAUNCH_NS 50000

/* Of x's counted tasks (*n), those launched over LATE_LAUNCH_NS after
 * their release (*late), and of those the ones woken from a nap that ended
 * after the release (*late_nap); 0 when the samples do not know their naps. */
static int late_launches(const struct result *x, size_t *n, size_t *late, size_t *late_nap) {
  int known = 0;
  *n = *late = *late_nap = 0;
  for (size_t i = 0; i < x->ns; i++) {
    const struct sample *s = &x->s[i];
    if (!counted(x, s)) continue;
    (*n)++;
    known |= s->nap_end != 0;
    if (s->t_launch - s->t_release <= LATE_LAUNCH_NS) continue;
    (*late)++;
    *late_nap += s->nap_end > s->t_release;
  }
  return known;
}

struct lstat {
  size_t runs, checked;
  double p50, p10, p90, mean, rps;
  unsigned kills, forks, taken, waits;
};

static void long_stats(const struct result *x, struct lstat *l) {
  struct series t = {0};
  memset(l, 0, sizeof *l);
  for (size_t i = 0; i < x->nr; i++) {
    push(&t, (double)(x->r[i].t_finished - x->r[i].t_started) / 1e6);
    l->checked += (size_t)x->r[i].checked;
    l->kills += x->r[i].kills;
    l->forks += x->r[i].forks;
    l->taken += x->r[i].taken;
    l->waits += x->r[i].waits;
  }
  l->runs = x->nr;
  l->p50 = quantile(&t, .5);
  l->p10 = quantile(&t, .1);
  l->p90 = quantile(&t, .9);
  l->mean = mean_of(&t);
  l->rps = x->t1 > x->t0 ? (double)x->nr / ((double)(x->t1 - x->t0) / 1e9) : NAN;
  series_free(&t);
}

/* Per-run ratio range against the alone mean. */
static void run_ratio_range(const struct result *x, double alone_mean, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (size_t i = 0; i < x->nr; i++) {
    double r = (double)(x->r[i].t_finished - x->r[i].t_started) / 1e6 / alone_mean;
    if (r < *lo) *lo = r;
    if (r > *hi) *hi = r;
  }
  if (!x->nr) *lo = *hi = NAN;
}

static void fmt(char *d, size_t n, double v, const char *f) {
  if (isnan(v))
    snprintf(d, n, "-");
  else
    snprintf(d, n, f, v);
}

static int has_gfx(const struct result *x) { return !(side_setups[x->setup].flags & SETUP_NO_GFX); }

/* The row x's ratios are against (side_setups.c: gfx_base, long_base), at
 * x's K where that setup has one row per K; NULL if it did not run. */
static const struct result *base_row(const struct result *x, int of_long) {
  const struct side_setup *s = &side_setups[x->setup];
  int st = of_long ? (s->long_base ? s->long_base : S_LONG) : s->gfx_base;
  int per_k = (side_setups[st].flags & SETUP_PER_K) != 0;
  for (int i = 0; i < nresults; i++)
    if (results[i].setup == st && (!per_k || results[i].k == x->k)) return &results[i];
  return NULL;
}

/* The latency percentiles x is against ((0) for most rows), NAN without. */
static void gfx_base(const struct result *x, const struct sopts *o, double *p50, double *p99) {
  const struct result *a = base_row(x, 0);
  struct gstat g;
  if (a) gfx_stats(a, o, &g);
  *p50 = a ? g.p50 : NAN;
  *p99 = a ? g.p99 : NAN;
}

/* The long kernel's mean run time x is against (alone), and its runs/s. */
static void long_base(const struct result *x, double *mean, double *rps) {
  const struct result *a = base_row(x, 1);
  struct lstat l;
  if (a) long_stats(a, &l);
  *mean = a ? l.mean : NAN;
  if (rps) *rps = a ? l.rps : NAN;
}

/* CPU that coopd and its device process spent per task of the window, us. */
static double cpu_per_task(const struct result *x) {
  return x->has_cpu && x->ns ? x->cpu_s * 1e6 / (double)x->ns : NAN;
}

/* The tables, to each of the streams given. */
static void tables(FILE **fs, int nf, const struct sopts *o) {
  char b[16][32];
  for (int f = 0; f < nf; f++) {
    FILE *s = fs[f];
    fprintf(s,
            "\n### Side by side\n\n"
            "Graphics task latency = release -> the host sees it done (ms), over the tasks "
            "released during a long-kernel run (all tasks of the window for the alone "
            "rows); x alone = against (0), and for (g) against (g) alone at the same K. "
            "Long kernel: mean run time / alone, and throughput (runs/s over the window) "
            "alone / here; alone = the long kernel alone, and for (g) the long kernel "
            "alone in coopd. coopd CPU: utime + stime of coopd and its device process over "
            "the window, per task released.\n\n"
            "| setup | latency p50 | p90 | p99 | max | p50 x alone | p99 x alone | missed | "
            "period p50 | long kernel slowdown | throughput cost | coopd CPU per task (us) |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      struct gstat g;
      struct lstat l;
      if (has_gfx(x)) gfx_stats(x, o, &g);
      if (x->has_long) long_stats(x, &l);
      int G = has_gfx(x);
      double base50, base99, lmean, lrps;
      gfx_base(x, o, &base50, &base99);
      long_base(x, &lmean, &lrps);
      fmt(b[0], 32, G ? g.p50 : NAN, "%.3f");
      fmt(b[1], 32, G ? g.p90 : NAN, "%.3f");
      fmt(b[2], 32, G ? g.p99 : NAN, "%.3f");
      fmt(b[3], 32, G ? g.max : NAN, "%.3f");
      fmt(b[4], 32, G ? g.p50 / base50 : NAN, "%.2f");
      fmt(b[5], 32, G ? g.p99 / base99 : NAN, "%.2f");
      if (G)
        snprintf(b[6], 32, "%zu / %zu", g.miss, g.n);
      else
        snprintf(b[6], 32, "-");
      fmt(b[7], 32, G ? g.per50 : NAN, "%.2f");
      fmt(b[8], 32, x->has_long ? l.mean / lmean : NAN, "%.3f");
      fmt(b[9], 32, x->has_long ? lrps / l.rps : NAN, "%.3f");
      fmt(b[10], 32, cpu_per_task(x), "%.1f");
      fprintf(s, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x->name, b[0],
              b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10]);
    }
    fprintf(s,
            "\n### Graphics task (ms)\n\n"
            "tasks: counted (released during a long-kernel run) / released in the window "
            "(less the check task); exec: on the device (CUDA events around the launch; "
            "coop: started -> finished); gather: coop only (released -> gathered); "
            "period: r(i+1) - r(i) = max(P, response); missed: done after release + P; "
            "launch p99: release -> the launch or submit call (the host thread's wake-up).\n\n"
            "| setup | tasks | p50 | p90 | p99 | max | exec p50 | gather p50 | gather p99 | "
            "period p50 | period mean | missed | launch p99 |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      if (!has_gfx(x)) continue;
      struct gstat g;
      gfx_stats(x, o, &g);
      fmt(b[0], 32, g.p50, "%.3f");
      fmt(b[1], 32, g.p90, "%.3f");
      fmt(b[2], 32, g.p99, "%.3f");
      fmt(b[3], 32, g.max, "%.3f");
      fmt(b[4], 32, g.exec50, "%.3f");
      fmt(b[5], 32, g.gather50, "%.3f");
      fmt(b[6], 32, g.per50, "%.2f");
      fmt(b[7], 32, g.permean, "%.2f");
      fmt(b[8], 32, g.launch99, "%.3f");
      fmt(b[9], 32, g.gather99, "%.3f");
      fprintf(s, "| %s | %zu / %zu | %s | %s | %s | %s | %s | %s | %s | %s | %s | %zu | %s |\n",
              x->name, g.n, g.nwin, b[0], b[1], b[2], b[3], b[4], b[5], b[9], b[6], b[7], g.miss,
              b[8]);
    }
    /* the host's part of a late launch: the thread naps until 1 ms before
     * each release, then spins (side_gfx.c) */
    int said = 0;
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      size_t n, late, late_nap;
      if (!has_gfx(x) || !late_launches(x, &n, &late, &late_nap) || !late) continue;
      fprintf(s,
              "%s%s: %zu of %zu tasks launched over %d us after their release, %zu of them "
              "woken from a nap that ended after it (the rest: the spinning thread taken off "
              "its core)\n",
              said++ ? "" : "\n", x->name, late, n, LATE_LAUNCH_NS / 1000, late_nap);
    }
    fprintf(s,
            "\n### Long kernel (ms)\n\n"
            "run time = t_finished - t_started of the cooperative task (device clock); "
            "slowdown = mean / mean alone, with the range of run / mean alone; runs/s over "
            "the window (host gaps between runs included); checked: runs compared with the "
            "CPU reference.\n\n"
            "| setup | runs (checked) | p50 | p10 | p90 | mean | slowdown | per-run range | "
            "runs/s | kills / forks |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      if (!x->has_long) continue;
      struct lstat l;
      long_stats(x, &l);
      double lo, hi, lmean;
      long_base(x, &lmean, NULL);
      run_ratio_range(x, lmean, &lo, &hi);
      fmt(b[0], 32, l.p50, "%.2f");
      fmt(b[1], 32, l.p10, "%.2f");
      fmt(b[2], 32, l.p90, "%.2f");
      fmt(b[3], 32, l.mean, "%.2f");
      fmt(b[4], 32, l.mean / lmean, "%.3f");
      if (isnan(lo))
        snprintf(b[5], 32, "-");
      else
        snprintf(b[5], 32, "%.3f - %.3f", lo, hi);
      fmt(b[6], 32, l.rps, "%.2f");
      fprintf(s, "| %s | %zu (%zu) | %s | %s | %s | %s | %s | %s | %s | %u / %u |\n", x->name,
              l.runs, l.checked, b[0], b[1], b[2], b[3], b[4], b[5], b[6], l.kills, l.forks);
    }
    /* the kill cascade of a kernel without barriers (docs/scheduler.md):
     * not in the CSV, so a report redrawn from it has none */
    for (int i = 0; i < nresults; i++) {
      struct lstat l;
      if (!results[i].has_long) continue;
      long_stats(&results[i], &l);
      if (l.taken || l.waits)
        fprintf(s,
                "\n%s: of its kills %u taken by the kill above in one lock hold; %u waits at "
                "an offer ended without a kill\n",
                results[i].name, l.taken, l.waits);
    }
  }
}

static void write_csv(FILE *f, const struct sopts *o) {
  int64_t P = (int64_t)(o->period_ms * 1e6);
  for (const char *l = header; *l;) {
    size_t len = strcspn(l, "\n");
    fprintf(f, "# %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
  fprintf(f, "# period_ns: %lld\n# title: %s\n", (long long)P, title);
  fprintf(f,
          "setup,k,klabel,kind,index,start_ns,time_ns,exec_ns,gather_ns,period_ns,missed,"
          "in_run,counted,check,kills,forks,launch_ns,cpu_ns\n");
  for (int i = 0; i < nresults; i++) {
    const struct result *x = &results[i];
    const char *id = side_setups[x->setup].id, *kl = x->klabel[0] ? x->klabel : "-";
    fprintf(f, "%s,%u,%s,window,0,0,%lld,,,,,,,,,,,", id, x->k, kl, (long long)(x->t1 - x->t0));
    if (x->has_cpu) fprintf(f, "%lld", (long long)llround(x->cpu_s * 1e9));
    fprintf(f, "\n");
    for (size_t j = 0; j < x->nr; j++) {
      const struct run *r = &x->r[j];
      fprintf(f, "%s,%u,%s,run,%zu,%lld,%lld,,,,,,1,%d,%u,%u,,\n", id, x->k, kl, j,
              (long long)(r->t_started - x->t0), (long long)(r->t_finished - r->t_started),
              r->checked, r->kills, r->forks);
    }
    for (size_t j = 0; j < x->ns; j++) {
      const struct sample *s = &x->s[j];
      fprintf(f, "%s,%u,%s,task,%zu,%lld,%lld,%lld,", id, x->k, kl, j,
              (long long)(s->t_release - x->t0), (long long)(s->t_done - s->t_release),
              (long long)s->exec_ns);
      if (side_setups[x->setup].flags & SETUP_GATHER) fprintf(f, "%lld", (long long)s->gather_ns);
      fprintf(f, ",%lld,%d,%d,%d,%d,,,%lld,\n", (long long)(s->t_next - s->t_release),
              s->t_done > s->t_release + P, s->in_run, counted(x, s), s->chk,
              (long long)(s->t_launch - s->t_release));
    }
  }
}

/* --report: the results back from a CSV written by write_csv (times
 * relative to each window's start). 0, or 1 with a message. */
int read_csv(const char *path, struct sopts *o) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, SB ": %s: %s\n", path, strerror(errno));
    return 1;
  }
  char line[4096];
  size_t hl = 0, lineno = 0;
  int bad_line = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = 0;
    if (!strncmp(line, "# period_ns: ", 13)) {
      o->period_ms = (double)strtoll(line + 13, NULL, 10) / 1e6;
      continue;
    }
    if (!strncmp(line, "# title: ", 9)) {
      snprintf(title, sizeof title, "%.159s", line + 9);
      continue;
    }
    if (!strncmp(line, "# ", 2)) {
      hl += (size_t)snprintf(header + hl, hl < sizeof header ? sizeof header - hl : 0, "%s\n",
                             line + 2);
      if (hl >= sizeof header) hl = sizeof header - 1;
      continue;
    }
    if (!strncmp(line, "setup,", 6) || !line[0]) continue;
    char *fld[18];
    int nf = 0;
    for (char *p = line; nf < 18;) {
      fld[nf++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = 0;
      p = c + 1;
    }
    int st = 0;
    while (st < S_COUNT && strcmp(fld[0], side_setups[st].id)) st++;
    /* 17 fields: a file from before cpu_ns */
    if ((nf != 17 && nf != 18) || st == S_COUNT) {
      bad_line = (int)lineno;
      break;
    }
    unsigned k = (unsigned)strtoul(fld[1], NULL, 10);
    struct result *x = NULL;
    for (int i = 0; i < nresults && !x; i++)
      if (results[i].setup == st && results[i].k == k) x = &results[i];
    if (!x) {
      if (nresults == MAXRESULTS) {
        bad_line = (int)lineno;
        break;
      }
      x = new_result(st, k, strcmp(fld[2], "-") ? fld[2] : NULL);
    }
    long long start = strtoll(fld[5], NULL, 10), t = strtoll(fld[6], NULL, 10);
    if (!strcmp(fld[3], "window")) {
      x->t0 = 0;
      x->t1 = t;
      x->has_cpu = nf == 18 && fld[17][0];
      x->cpu_s = x->has_cpu ? (double)strtoll(fld[17], NULL, 10) / 1e9 : 0;
    } else if (!strcmp(fld[3], "run")) {
      struct coop_rt_task_info ti;
      memset(&ti, 0, sizeof ti);
      ti.t_started = start;
      ti.t_finished = start + t;
      ti.kills = (unsigned)strtoul(fld[14], NULL, 10);
      ti.forks = (unsigned)strtoul(fld[15], NULL, 10);
      add_run(x, &ti);
      x->r[x->nr - 1].checked = atoi(fld[13]);
    } else if (!strcmp(fld[3], "task")) {
      struct gfx g = {0};
      g.s = x->s;
      g.n = g.cap = x->ns;
      struct sample sm;
      memset(&sm, 0, sizeof sm);
      sm.t_release = start;
      sm.t_done = start + t;
      sm.exec_ns = strtoll(fld[7], NULL, 10);
      sm.gather_ns = strtoll(fld[8], NULL, 10);
      sm.t_next = start + strtoll(fld[9], NULL, 10);
      sm.in_run = atoi(fld[11]);
      sm.chk = atoi(fld[13]);
      sm.t_launch = start + strtoll(fld[16], NULL, 10);
      x->s = realloc(x->s, (x->ns + 1) * sizeof *x->s);
      if (!x->s) exit(1);
      x->s[x->ns++] = sm;
      (void)g;
    } else {
      bad_line = (int)lineno;
      break;
    }
  }
  fclose(f);
  if (bad_line) {
    fprintf(stderr, SB ": %s:%d: not a line of " SB "'s CSV\n", path, bad_line);
    return 1;
  }
  if (!nresults) {
    fprintf(stderr, SB ": %s: no results\n", path);
    return 1;
  }
  return 0;
}

static int plot(const char *png, const struct sopts *o, const char *what) {
  if (!have_gnuplot()) {
    printf(
        "png: not written: gnuplot is not installed (apt-get install gnuplot-nox); the CSV "
        "and Markdown files are (" SB " --report CSV redraws it from the CSV)\n");
    return 1;
  }
  FILE *p = popen("gnuplot", "w");
  if (!p) return 1;
  fprintf(p,
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1400,700 "
          "font ',10' } else { set terminal png size 1400,700 }\n"
          "set output '%s'\nset datafile missing '?'\n$d << EOD\n",
          png);
  for (int i = 0; i < nresults; i++) {
    const struct result *x = &results[i];
    char label[96];
    size_t j = 0;
    for (const char *c = x->name; *c && j + 1 < sizeof label; c++)
      label[j++] = (*c == '"' || *c == '\'') ? '-' : *c;
    label[j] = 0;
    struct gstat g;
    struct lstat l;
    char v[5][32];
    if (has_gfx(x)) gfx_stats(x, o, &g);
    double lmean;
    if (x->has_long) long_stats(x, &l);
    long_base(x, &lmean, NULL);
    double vals[5] = {has_gfx(x) ? g.p50 : NAN, has_gfx(x) ? g.p90 : NAN, has_gfx(x) ? g.p99 : NAN,
                      has_gfx(x) ? g.max : NAN, x->has_long ? l.mean / lmean : NAN};
    for (int k = 0; k < 5; k++)
      if (isnan(vals[k]))
        snprintf(v[k], 32, "?");
      else
        snprintf(v[k], 32, "%.6g", vals[k]);
    fprintf(p, "\"%s\" %s %s %s %s %s\n", label, v[0], v[1], v[2], v[3], v[4]);
  }
  fprintf(p,
          "EOD\n"
          "set multiplot layout 1,2 title 'coop-bench-side: matmul every %.4g ms beside %s'\n"
          "set style data histogram\nset style histogram clustered gap 1\n"
          "set style fill solid 0.8 border -1\nset xtics rotate by -30 scale 0\n"
          "set grid y\nset key top left\n"
          "set logscale y\nset ylabel 'graphics task latency, release -> done (ms)'\n"
          "plot $d using 2:xtic(1) title 'p50', '' using 3 title 'p90', '' using 4 title "
          "'p99', '' using 5 title 'max', %g with lines lw 2 dt 2 title 'P'\n"
          "unset logscale y\nset yrange [0:*]\n"
          "set ylabel 'long kernel: mean run time / alone'\n"
          "plot $d using 6:xtic(1) title 'slowdown', 1 with lines dt 2 title 'alone'\n"
          "unset multiplot\n",
          o->period_ms, what, o->period_ms);
  int rc = pclose(p);
  if (rc) printf("png: gnuplot failed (status %d); the CSV and Markdown files are written\n", rc);
  return rc != 0;
}

/* The CSV of the setups done so far, written again after each (run_phase
 * in side.c): a setup that then fails or never returns leaves the rows of
 * those before it, which --report draws. */
static const char *csv_path(const struct sopts *o) {
  return o->csv ? o->csv : "bench/out/side-cuda.csv";
}

int save_csv(const struct sopts *o) {
  const char *path = csv_path(o);
  make_parent(path);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, SB ": cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  write_csv(f, o);
  return fclose(f) != 0;
}

/* The tables on stdout, the CSV (with_csv: from this run), the Markdown
 * file and the PNG beside it. */
int emit(const struct sopts *o, int with_csv) {
  char base[1000], csv[1024], md[1024], png[1024];
  const char *path = csv_path(o);
  size_t len = strlen(path);
  int cut = len > 4 && !strcmp(path + len - 4, ".csv");
  snprintf(base, sizeof base, "%.*s", (int)(cut ? len - 4 : len), path);
  snprintf(csv, sizeof csv, "%s", path);
  snprintf(md, sizeof md, "%s.md", base);
  snprintf(png, sizeof png, "%s.png", base);
  FILE *so = stdout;
  tables(&so, 1, o);
  if (with_csv && save_csv(o)) return 1;
  make_parent(md);
  FILE *fm = fopen(md, "w");
  if (!fm) {
    fprintf(stderr, SB ": cannot write %s: %s\n", md, strerror(errno));
    return 1;
  }
  fprintf(fm,
          "# " SB
          ": one graphics-like kernel beside one long kernel\n\n```\n%s```\n\n"
          "CSV: `%s`; plot: `%s`.\n",
          header, csv, png);
  tables(&fm, 1, o);
  if (fclose(fm)) return 1;
  printf("\ncsv: %s\nmd: %s\n", csv, md);
  char t[160];
  snprintf(t, sizeof t, "%s", title);
  for (char *c = t; *c; c++)
    if (*c == '\'' || *c == '"') *c = '-';
  if (!plot(png, o, t)) printf("png: %s\n", png);
  return 0;
}
