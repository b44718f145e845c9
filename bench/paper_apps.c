/*
 * paper_apps.c: the applications as coop-bench-paper drives them: one
 * megakernel per application (its kernel + the matmul graphics task), runs
 * checked against the CPU reference, the graphics task's calibration, the
 * K values of 004 Sec. 5.4 and the workload classes of Sec. 5.2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper.h"

const struct gclass gclasses[3] = {
    {"light", 70, 3, 1.04, "N/4"},
    {"medium", 40, 3, 1.08, "N/4"},
    {"heavy", 40, 10, 1.47, "N/2"},
};

const struct gclass *gclass_find(const char *name) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(gclasses[i].name, name)) return &gclasses[i];
  return NULL;
}

const char *const frac_label[NFRAC] = {"1", "N/4", "N/2", "N-1"};

int k_list(unsigned workers, unsigned *ks, unsigned *mask) {
  unsigned want[NFRAC] = {1, workers / 4, workers / 2, workers - 1};
  int n = 0;
  for (int j = 0; j < NFRAC; j++) {
    unsigned k = want[j] ? want[j] : 1;
    int i = 0;
    while (i < n && ks[i] != k) i++;
    if (i == n) {
      ks[n] = k;
      mask[n++] = 0;
    }
    mask[i] |= 1u << j;
  }
  return n;
}

void mask_label(unsigned mask, char *dst, size_t n) {
  size_t len = 0;
  dst[0] = 0;
  for (int j = 0; j < NFRAC; j++)
    if (mask & (1u << j))
      len +=
          (size_t)snprintf(dst + len, len < n ? n - len : 0, "%s%s", len ? "=" : "", frac_label[j]);
}

/* ------------------------------------------------------- selection */

int app_selected(const struct popts *o, const struct coop_app *a) {
  if (!o->apps) return 1;
  for (const char *p = o->apps; *p;) {
    size_t len = strcspn(p, ",");
    if ((strlen(a->name) == len && !strncmp(p, a->name, len)) ||
        (strlen(a->kernel) == len && !strncmp(p, a->kernel, len)))
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

int app_inputs(const struct popts *o, const struct coop_app *a) {
  int n = coop_app_input_count(a, (unsigned)o->scale);
  return o->max_inputs && n > o->max_inputs ? (int)o->max_inputs : n;
}

int app_uses_barriers(const struct coop_app *a) { return a->input == COOP_INPUT_GRAPH; }

/* ---------------------------------------------------------- runtime */

int app_open(struct appctx *x, const struct popts *o, const struct coop_app *a) {
  struct coop_rt_options ro;
  memset(x, 0, sizeof *x);
  x->o = o;
  x->a = a;
  coop_rt_options_init(&ro);
  ro.backend = o->backend;
  ro.local_size = (unsigned)o->local_size;
  ro.arena_bytes = (size_t)o->arena_mb << 20;
  int r = coop_rt_open(&x->rt, &ro);
  if (!r) r = coop_rt_add_kernel(x->rt, a->kernel, 1, a->source);
  if (r >= 0) r = coop_matmul_register(x->rt);
  if (!r) r = coop_rt_launch(x->rt);
  if (r) {
    fprintf(stderr, PB ": %s: %s\n%s\n", a->name, coop_strerror(r),
            x->rt ? coop_rt_errmsg(x->rt) : "");
    app_close(x);
    return 1;
  }
  x->workers = coop_rt_workers(x->rt);
  if (x->workers < 2) {
    fprintf(stderr,
            PB
            ": %s: %u worker: nothing can be shared (on PoCL, set "
            "POCL_MAX_PTHREAD_COUNT to 3 or more)\n",
            a->name, x->workers);
    app_close(x);
    return 1;
  }
  return 0;
}

void app_close(struct appctx *x) {
  coop_matmul_close(&x->mm);
  if (x->rt && coop_rt_close(x->rt))
    fprintf(stderr, PB ": %s: closing the runtime failed\n", x->a ? x->a->name : "?");
  x->rt = NULL;
}

/* The record's verdict: DONE, and no kill or fork in the original form. */
static int app_ended_well(struct appctx *x, const struct coop_app_input *in, unsigned mode,
                          const struct coop_rt_task_info *ti) {
  const char *form = mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative";
  if (ti->state != COOP_TASK_DONE) {
    fprintf(stderr, PB ": %s on %s (%s): ended in state %d\n", x->a->name, in->label, form,
            (int)ti->state);
    return 1;
  }
  if (mode == COOP_APP_MODE_ORIGINAL && (ti->kills || ti->forks)) {
    fprintf(stderr, PB ": %s on %s (original): %u kills, %u forks\n", x->a->name, in->label,
            ti->kills, ti->forks);
    return 1;
  }
  return 0;
}

int app_check(struct appctx *x, const struct coop_app_input *in, unsigned mode, const void *outp) {
  char why[256] = "";
  if (!x->a->check(in, outp, why, sizeof why)) return 0;
  fprintf(stderr, PB ": %s on %s (%s): WRONG RESULT: %s\n", x->a->name, in->label,
          mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative", why);
  return 1;
}

int app_run_only(struct appctx *x, const struct coop_app_input *in, unsigned mode, int query,
                 struct coop_rt_task_info *ti, double *ns, void **outp) {
  struct coop_app_opts ao = {.groups = x->workers,
                             .mode = mode,
                             .query_barrier = query,
                             .timeout_ms = (int)x->o->timeout_s * 1000};
  *outp = NULL;
  memset(ti, 0, sizeof *ti);
  int r = x->a->run(x->rt, in, &ao, outp, ti);
  if (r)
    fprintf(stderr, PB ": %s on %s (%s): %s\n", x->a->name, in->label,
            mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative", coop_strerror(r));
  *ns = (double)(ti->t_finished - ti->t_started);
  return r || app_ended_well(x, in, mode, ti);
}

int app_run(struct appctx *x, const struct coop_app_input *in, unsigned mode, int query,
            struct coop_rt_task_info *ti, double *ns) {
  void *outp;
  int r = app_run_only(x, in, mode, query, ti, ns, &outp);
  if (!r) r = app_check(x, in, mode, outp);
  free(outp);
  return r;
}

/* ------------------------------------------------- graphics task */

/* Median execution time of 5 tasks of k groups, us. */
static int gfx_measure(struct appctx *x, unsigned k, double *us) {
  struct series s = {0};
  int r = 0;
  for (int i = 0; i < 5 && !r; i++) {
    coop_task_id id;
    struct coop_rt_task_info ti;
    char why[200];
    r = coop_matmul_submit(&x->mm, k, &id);
    if (!r) r = coop_rt_wait(x->rt, id, (int)x->o->timeout_s * 1000);
    if (!r) r = coop_rt_task_info(x->rt, id, &ti);
    if (!r) r = coop_rt_task_release(x->rt, id);
    if (!r && ti.state != COOP_TASK_DONE) r = COOP_EFAILED;
    if (!r && (r = coop_matmul_check(&x->mm, why, sizeof why)))
      fprintf(stderr, PB ": %s: calibration: %s\n", x->a->name, why);
    if (!r) push(&s, (double)(ti.t_finished - ti.t_started) / 1e3);
  }
  *us = quantile(&s, .5);
  series_free(&s);
  return r;
}

int gfx_calibrate_one(const struct popts *o, coop_rt *rt) {
  if (o->calibrate) return o->calibrate == 2;
  return strcmp(coop_rt_backend(rt), "cuda") != 0;
}

/* reps for a task of about e_ms (see gfx_prepare) at the open size. */
static int gfx_reps(struct appctx *x, double e_ms) {
  unsigned k = gfx_calibrate_one(x->o, x->rt) ? 1 : x->workers;
  double target = e_ms * 1e3 * (double)(x->workers / k), us = 0;
  int r = coop_matmul_calibrate(&x->mm, k, target);
  if (!r) r = gfx_measure(x, k, &us);
  if (!r && us > 0) { /* one rescale: the first estimate is from a single run */
    double reps = round(x->mm.reps * target / us);
    x->mm.reps = reps < 1 ? 1u : reps > (1u << 24) ? (1u << 24) : (uint32_t)reps;
  }
  return r;
}

/* Opens the matmul at n = --matrix, or at 4N (at least 48) halved while
 * one repetition is more than a quarter of e_ms (so that reps can get
 * within 12% of it) and the rows stay at least max(48, N). */
static int gfx_open(struct appctx *x, double e_ms) {
  uint32_t n = x->o->matrix ? (uint32_t)x->o->matrix : 4 * x->workers, floor = x->workers;
  n = n < 48 ? 48 : n > 4096 ? 4096 : n;
  floor = floor < 48 ? 48 : floor;
  for (;;) {
    int r = coop_matmul_open(&x->mm, x->rt, n, 1);
    if (!r) r = gfx_reps(x, e_ms);
    if (r || x->o->matrix || x->mm.reps >= 4 || n / 2 < floor) return r;
    coop_matmul_close(&x->mm);
    n /= 2;
  }
}

int gfx_prepare(struct appctx *x, double e_ms, double *measured_ms) {
  double us = 0;
  int r = x->mm.rt ? gfx_reps(x, e_ms) : gfx_open(x, e_ms);
  if (!r) r = gfx_measure(x, x->workers, &us);
  if (r) {
    fprintf(stderr, PB ": %s: calibrating the matmul task: %s\n", x->a->name, coop_strerror(r));
    return 1;
  }
  *measured_ms = us / 1e3;
  return 0;
}
