/*
 * side_window.c: the windows every setup of coop-bench-side is measured
 * in: the graphics task alone for --window seconds, or the long kernel
 * back to back for --window seconds (at least --min-runs runs, checked
 * against the CPU as side_check_runs says) with the graphics tasks
 * released beside it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "side_setup.h"

int side_input(struct bench *b) {
  const struct sopts *o = b->o;
  b->app = coop_app_find(o->app);
  int nin = coop_app_input_count(b->app, (unsigned)o->scale);
  if (o->input >= nin) {
    fprintf(stderr, SB ": --input %ld: %s has %d inputs (0..%d)\n", o->input, b->app->name, nin,
            nin - 1);
    return 2;
  }
  printf(SB ": generating %s input %ld at scale %ld\n", b->app->name, o->input, o->scale);
  fflush(stdout);
  int r = coop_app_input(b->app, (unsigned)o->input, (unsigned)o->scale, &b->in);
  if (r) {
    fprintf(stderr, SB ": input: %s\n", coop_strerror(r));
    return 1;
  }
  return 0;
}

int side_megakernel(struct bench *b, int with_matmul) {
  const struct sopts *o = b->o;
  struct coop_rt_options ro;
  coop_rt_options_init(&ro);
  /* test hook: COOP_SIDE_BACKEND=opencl runs the megakernel on PoCL, to
   * exercise the harness without a GPU (the plain launches still need a
   * libcuda.so.1: a stub). Not for measurements. */
  const char *be = getenv("COOP_SIDE_BACKEND");
  ro.backend = be && *be ? be : "cuda";
  ro.device_index = (int)o->device;
  ro.local_size = (unsigned)o->local;
  ro.launch_groups = (unsigned)o->launch_groups;
  ro.max_registers = (unsigned)o->max_registers;
  ro.arena_bytes = (size_t)512 << 20;
  ro.device_bytes = (size_t)64 << 20; /* the matmul's buffers (apps/matmul.c) */
  if (b->cuda_ctx) { /* a green context: its SMs bound the launch, --launch-groups does not */
    ro.cuda_context = b->cuda_ctx;
    ro.cuda_context_sms = b->cuda_sms;
    ro.launch_groups = 0;
  }
  int r = coop_rt_open(&b->rt, &ro);
  if (!r) r = coop_rt_add_kernel(b->rt, b->app->kernel, 1, b->app->source);
  if (r >= 0 && with_matmul) r = coop_matmul_register(b->rt);
  if (r >= 0) r = coop_rt_launch(b->rt);
  if (r) {
    fprintf(stderr, SB ": megakernel: %s\n%s\n", coop_strerror(r),
            b->rt ? coop_rt_errmsg(b->rt) : "");
    return 1;
  }
  b->workers = coop_rt_workers(b->rt);
  if (!b->cuda_ctx) b->launched = coop_rt_launched_groups(b->rt); /* not a green context's */
  return 0;
}

int side_long_warm_up(struct bench *b) {
  struct result warm;
  memset(&warm, 0, sizeof warm);
  snprintf(warm.name, sizeof warm.name, "warm-up");
  struct sopts one = *b->o, *o = b->o;
  one.min_runs = 1;
  b->o = &one;
  int64_t w = b->window_ns;
  b->window_ns = 0;
  int rc = long_window(b, &warm, NULL);
  b->o = o;
  b->window_ns = w;
  if (!rc && warm.nr)
    printf(SB ": one run of the long kernel alone: %.2f ms\n",
           (double)(warm.r[0].t_finished - warm.r[0].t_started) / 1e6);
  free(warm.r);
  return rc;
}

void say_start(const struct result *x) {
  printf(SB ": %s ...\n", x->name);
  fflush(stdout);
}

void say_skip(const char *name, const char *why) {
  printf(SB ": %s: skipped: %s\n", name, why);
  fflush(stdout);
}

static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

int gfx_alone(struct bench *b, struct result *x, const struct task_ops *ops) {
  struct gfx g;
  x->t0 = now_ns();
  if (gfx_start(&g, ops, (int64_t)(b->o->period_ms * 1e6))) return 1;
  nap_ms(b->o->window_s * 1e3);
  x->t1 = now_ns();
  int rc = gfx_stop(&g);
  if (rc) fprintf(stderr, SB ": %s: %s\n", x->name, g.why);
  take_samples(x, &g);
  gfx_free(&g);
  return rc;
}

/* Run i's output checked (once, if kept) and freed; 0 if correct. */
static int check_run(struct bench *b, struct result *x, void **outs, size_t i) {
  if (!outs[i]) return 0;
  char why[256] = "";
  int rc = b->app->check(&b->in, outs[i], why, sizeof why) != 0;
  if (rc)
    fprintf(stderr, SB ": %s: %s on %s, run %zu: WRONG RESULT: %s\n", x->name, b->app->name,
            b->in.label, i, why);
  x->r[i].checked = !rc;
  free(outs[i]);
  outs[i] = NULL;
  return rc;
}

/* The order and the time side_setup.h gives: the first and the last run,
 * those the scheduler resized, then the others. */
int side_check_runs(struct bench *b, struct result *x, void **outs) {
  int64_t start = now_ns(), window = x->t1 - x->t0;
  int64_t budget = window > 1000000000 ? window : 1000000000;
  int rc = x->nr ? check_run(b, x, outs, 0) | check_run(b, x, outs, x->nr - 1) : 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (size_t i = 0; i < x->nr && !rc; i++) {
      if (!b->o->check_all && now_ns() - start >= budget) break;
      int resized = x->r[i].kills || x->r[i].forks;
      if (resized == !pass) rc = check_run(b, x, outs, i);
    }
  for (size_t i = 0; i < x->nr; i++) free(outs[i]);
  free(outs);
  return rc;
}

int long_window(struct bench *b, struct result *x, const struct gfx_ctl *ctl) {
  const struct sopts *o = b->o;
  x->has_long = 1;
  size_t cap = 64;
  void **outs = calloc(cap, sizeof *outs);
  if (!outs) return 1;
  x->t0 = now_ns();
  int rc = ctl && ctl->start(b, ctl->arg);
  while (!rc) {
    struct coop_app_opts ao = {.groups = b->workers,
                               .mode = COOP_APP_MODE_COOPERATIVE,
                               .query_barrier = o->query,
                               .timeout_ms = (int)o->timeout_s * 1000};
    struct coop_rt_task_info ti;
    void *out = NULL;
    memset(&ti, 0, sizeof ti);
    int r = b->app->run(b->rt, &b->in, &ao, &out, &ti);
    if (!r && ti.state != COOP_TASK_DONE) r = COOP_EFAILED;
    if (r) {
      fprintf(stderr, SB ": %s: %s on %s: %s\n", x->name, b->app->name, b->in.label,
              coop_strerror(r));
      free(out);
      rc = 1;
      break;
    }
    if (x->nr == cap) {
      cap *= 2;
      outs = realloc(outs, cap * sizeof *outs);
      if (!outs) exit(1);
    }
    outs[x->nr] = out;
    add_run(x, &ti);
    if ((long)x->nr >= o->min_runs && now_ns() - x->t0 >= b->window_ns) break;
  }
  x->t1 = now_ns();
  if (ctl) rc |= ctl->stop(b, ctl->arg, x);
  rc |= side_check_runs(b, x, outs);
  mark_in_run(x);
  return rc;
}

int th_start(struct bench *b, void *arg) {
  struct thread_arg *t = arg;
  return gfx_start(&t->g, &t->ops, (int64_t)(b->o->period_ms * 1e6));
}

int th_stop(struct bench *b, void *arg, struct result *x) {
  (void)b;
  struct thread_arg *t = arg;
  int rc = gfx_stop(&t->g);
  if (rc) fprintf(stderr, SB ": %s: %s\n", x->name, t->g.why);
  take_samples(x, &t->g);
  gfx_free(&t->g);
  return rc;
}

/* Median execution time of 5 coop tasks of k groups on the idle
 * megakernel (after one unrecorded), ms. */
int coop_measure(struct bench *b, unsigned k, double *ms) {
  struct coopgfx c = {b->rt, &b->mm, b->chk, k,    (int64_t)b->o->timeout_s * 1000000000,
                      0,     0,      NULL,   NULL, NULL};
  struct task_ops ops = coop_ops(&c);
  struct series s = {0};
  for (int i = -1; i < 5; i++) {
    struct sample x;
    memset(&x, 0, sizeof x);
    x.t_launch = now_ns();
    if (ops.launch(ops.ctx, 0, 0) || ops.finish(ops.ctx, &x)) {
      series_free(&s);
      return 1;
    }
    if (i >= 0) push(&s, (double)x.exec_ns / 1e6);
  }
  *ms = quantile(&s, .5);
  series_free(&s);
  return 0;
}
