/*
 * paper_graphics.c: periodic graphics-like tasks beside an application
 * (004 Sec. 5.4). A thread releases one matmul task of K workgroups every
 * period P; a task that is not done by the next release delays it (the next
 * one is released when it finishes: one frame at a time). Each product is
 * checked on the CPU. Meanwhile the main thread runs the application back
 * to back in a "window", each run checked, and the samples released while a
 * run was in progress are the ones reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "paper.h"

static void gfx_push(struct gfx *g, const struct gfx_sample *s) {
  pthread_mutex_lock(&g->mu);
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 128;
    struct gfx_sample *p = realloc(g->s, cap * sizeof *p);
    if (!p) {
      fprintf(stderr, PB ": out of memory\n");
      exit(1);
    }
    g->s = p;
    g->cap = cap;
  }
  g->s[g->n++] = *s;
  pthread_mutex_unlock(&g->mu);
}

/* One task: submit, wait, read its record, check its product. */
static int gfx_task(struct gfx *g, struct gfx_sample *s) {
  struct appctx *x = g->x;
  coop_task_id id;
  memset(s, 0, sizeof *s);
  s->t_submit = now_ns();
  int r = coop_matmul_submit(&x->mm, g->k, &id);
  if (!r) r = coop_rt_wait(x->rt, id, (int)x->o->timeout_s * 1000);
  s->t_done = now_ns();
  if (!r) r = coop_rt_task_info(x->rt, id, &s->ti);
  if (!r) r = coop_rt_task_release(x->rt, id);
  if (!r && s->ti.state != COOP_TASK_DONE) r = COOP_EFAILED;
  if (r) {
    snprintf(g->why, sizeof g->why, "matmul task of %u groups: %s", g->k, coop_strerror(r));
    return r;
  }
  return coop_matmul_check(&x->mm, g->why, sizeof g->why);
}

static struct timespec abs_time(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  return ts;
}

/* Sleeps until t or stop; 1 if stopped. Called with g->mu held. */
static int sleep_until(struct gfx *g, int64_t t) {
  struct timespec ts = abs_time(t);
  while (!g->stop && now_ns() < t)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) == ETIMEDOUT) break;
  return g->stop;
}

static void *gfx_loop(void *p) {
  struct gfx *g = p;
  int64_t next = now_ns();
  pthread_mutex_lock(&g->mu);
  while (!sleep_until(g, next)) {
    pthread_mutex_unlock(&g->mu);
    struct gfx_sample s;
    int r = gfx_task(g, &s);
    s.t_release = next;
    next += g->period_ns;
    if (s.t_done > next) next = s.t_done;
    s.t_next = next;
    if (!r) gfx_push(g, &s);
    pthread_mutex_lock(&g->mu);
    if (r) {
      g->err = r;
      break;
    }
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

int gfx_start(struct gfx *g, struct appctx *x, unsigned k, double period_ms) {
  memset(g, 0, sizeof *g);
  g->x = x;
  g->k = k;
  g->period_ns = (int64_t)(period_ms * 1e6);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&g->mu, NULL);
  if (pthread_create(&g->th, NULL, gfx_loop, g)) {
    fprintf(stderr, PB ": cannot start the graphics thread\n");
    return 1;
  }
  g->started = 1;
  return 0;
}

int gfx_stop(struct gfx *g) {
  if (!g->started) return 1;
  pthread_mutex_lock(&g->mu);
  g->stop = 1;
  pthread_cond_signal(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->th, NULL);
  g->started = 0;
  if (g->err) fprintf(stderr, PB ": %s: %s\n", g->x->a->name, g->why);
  return g->err ? 1 : 0;
}

void gfx_free(struct gfx *g) {
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g->s);
  g->s = NULL;
  g->n = g->cap = 0;
}

/* ------------------------------------------------------------ windows */

static void add_run(struct window *w, const struct coop_rt_task_info *ti, double ns, void *out,
                    unsigned workers) {
  if (w->runs == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 32;
    w->span = realloc(w->span, w->cap * sizeof *w->span);
    w->outs = realloc(w->outs, w->cap * sizeof *w->outs);
    w->touched = realloc(w->touched, w->cap);
    if (!w->span || !w->outs || !w->touched) {
      fprintf(stderr, PB ": out of memory\n");
      exit(1);
    }
  }
  w->span[w->runs][0] = ti->t_started;
  w->span[w->runs][1] = ti->t_finished;
  w->outs[w->runs] = out;
  w->touched[w->runs] = ti->kills || ti->forks || ti->m_initial < workers;
  w->ntouched += w->touched[w->runs];
  w->runs++;
  push(&w->app_ns, ns);
}

int in_window(const struct gfx_sample *s, const struct window *w) {
  return s->t_release >= w->t0 && s->t_release < w->t1;
}

/* Whether t lies in one of w's runs: they are back to back, so their
 * starts are in order; binary search for the last run starting at or
 * before t. */
static int in_some_run(const struct window *w, int64_t t) {
  size_t lo = 0, hi = w->runs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w->span[mid][0] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && t < w->span[lo - 1][1];
}

size_t mark_in_app(struct gfx *g, const struct window *w) {
  size_t in = 0;
  pthread_mutex_lock(&g->mu);
  for (size_t i = 0; i < g->n; i++) {
    if (!g->s[i].in_app) g->s[i].in_app = in_some_run(w, g->s[i].ti.t_released);
    in += (size_t)g->s[i].in_app;
  }
  pthread_mutex_unlock(&g->mu);
  return in;
}

static int window_done(const struct window_spec *ws, struct gfx *g, struct window *w) {
  double ms = (double)(now_ns() - w->t0) / 1e6;
  if (ms >= ws->max_ms) return 1;
  if ((long)w->runs < ws->min_runs || ms < ws->min_ms) return 0;
  return !g || ws->min_in_app <= 0 || (long)mark_in_app(g, w) >= ws->min_in_app;
}

/* Checks run i's output (once) and frees it; 0 if correct. */
static int check_run(struct appctx *x, const struct window_spec *ws, struct window *w, size_t i) {
  if (!w->outs[i]) return 0;
  int rc = app_check(x, ws->in, COOP_APP_MODE_COOPERATIVE, w->outs[i]);
  free(w->outs[i]);
  w->outs[i] = NULL;
  w->checked++;
  w->touched_checked += w->touched[i];
  return rc;
}

/* In the order and within the time paper.h describes; 0 if all the
 * checked outputs were correct. */
static int window_check(struct appctx *x, const struct window_spec *ws, struct window *w) {
  int64_t start = now_ns(), budget = w->t1 - w->t0 > 1000000000 ? w->t1 - w->t0 : 1000000000;
  int rc = w->runs ? check_run(x, ws, w, 0) | check_run(x, ws, w, w->runs - 1) : 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (size_t i = 0; i < w->runs && !rc; i++) {
      if (!x->o->check_all && now_ns() - start >= budget) return 0;
      if (w->touched[i] == !pass) rc = check_run(x, ws, w, i);
    }
  return rc;
}

int window_run(struct appctx *x, const struct window_spec *ws, struct gfx *g, struct window *w) {
  memset(w, 0, sizeof *w);
  w->t0 = now_ns();
  int rc = 0;
  do {
    struct coop_rt_task_info ti;
    double ns;
    void *out = NULL;
    rc = app_run_only(x, ws->in, COOP_APP_MODE_COOPERATIVE, ws->query, &ti, &ns, &out);
    if (rc) free(out);
    if (!rc) add_run(w, &ti, ns, out, x->workers);
  } while (!rc && !window_done(ws, g, w));
  w->t1 = now_ns();
  rc |= window_check(x, ws, w);
  if (rc) window_free(w);
  return rc;
}

void window_free(struct window *w) {
  for (size_t i = 0; i < w->runs && w->outs; i++) free(w->outs[i]);
  series_free(&w->app_ns);
  free(w->span);
  free(w->outs);
  free(w->touched);
  memset(w, 0, sizeof *w);
}
