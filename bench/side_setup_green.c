/*
 * side_setup_green.c: coop-bench-side's setup (e), CUDA green contexts
 * (driver API, CUDA 12.4+): the GPU's SMs split in two, the matmul in a
 * green context of k SMs and the long kernel (a megakernel of its own) in
 * a green context of the others, so neither can take the other's SMs. The
 * price is paid all the time: the long kernel runs on fewer SMs even when
 * no matmul is due, which the row "long kernel alone on the other SMs"
 * shows (its slowdown is against the whole GPU).
 *
 * k: --green-sms K, or the smallest of 8, 16, 32, 64 whose matmul, released
 * every P alone on its green context (the long kernel's megakernel closed),
 * has a latency p50 within P, the deadline a miss is counted against; the
 * split rounds k up to the granularity the driver reports
 * (minSmPartitionSize, smCoscheduledAlignment), and the rows give the
 * count it made. The split is cuDevSmResourceSplitByCount (one group of k,
 * the rest in the remainder), each part a descriptor
 * (cuDevResourceGenerateDesc) and a green context (cuGreenCtxCreate with
 * CU_GREEN_CTX_DEFAULT_STREAM), used as a CUcontext (cuCtxFromGreenCtx) by
 * the plain launches and by the megakernel (coop_rt_options.cuda_context).
 *
 * The entry points are looked up in the driver at run time: a driver
 * without them, or one that refuses the split, skips the setup with a
 * line that says why.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_loader.h"
#include "side_setup.h"

static struct {
  __typeof__(&cuDeviceGetDevResource) get_resource;
  __typeof__(&cuDevSmResourceSplitByCount) split;
  __typeof__(&cuDevResourceGenerateDesc) desc;
  __typeof__(&cuGreenCtxCreate) create;
  __typeof__(&cuGreenCtxDestroy) destroy;
  __typeof__(&cuCtxFromGreenCtx) to_ctx;
} gc;

/* The entry points; NULL, or what is missing. */
static const char *resolve(char *why, size_t n) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, n, "no libcuda.so.1: %s", dlerror());
    return why;
  }
  const char *names[] = {"cuDeviceGetDevResource",    "cuDevSmResourceSplitByCount",
                         "cuDevResourceGenerateDesc", "cuGreenCtxCreate",
                         "cuGreenCtxDestroy",         "cuCtxFromGreenCtx"};
  void **slots[] = {(void **)&gc.get_resource, (void **)&gc.split,   (void **)&gc.desc,
                    (void **)&gc.create,       (void **)&gc.destroy, (void **)&gc.to_ctx};
  for (int i = 0; i < 6; i++)
    if (!(*slots[i] = dlsym(h, names[i]))) {
      snprintf(why, n, "the driver has no green contexts (%s missing; CUDA 12.4+ needed)",
               names[i]);
      return why;
    }
  return NULL; /* h stays open: the process keeps libcuda anyway */
}

static int gfail(CUresult e, const char *what, char *why, size_t n) {
  const char *s = NULL;
  if (coop__cu.cuGetErrorString) coop__cu.cuGetErrorString(e, &s);
  snprintf(why, n, "%s failed: CUDA error %d (%s)", what, (int)e, s ? s : "?");
  return 1;
}

#define GK(call, what)                                           \
  do {                                                           \
    CUresult e_ = (call);                                        \
    if (e_ != CUDA_SUCCESS) return gfail(e_, what, why, whylen); \
  } while (0)

/* The two green contexts: the matmul's (k SMs asked) and the rest. */
struct split {
  CUgreenCtx g[2];
  CUcontext ctx[2];
  unsigned sms[2]; /* 0: the matmul's, 1: the long kernel's */
};

static void split_free(struct split *s) {
  for (int i = 0; i < 2; i++)
    if (s->g[i]) gc.destroy(s->g[i]);
  memset(s, 0, sizeof *s);
}

static int split_make(int device, unsigned k, struct split *s, char *why, size_t whylen) {
  memset(s, 0, sizeof *s);
  CUdevice d;
  GK(coop__cu.cuDeviceGet(&d, device), "cuDeviceGet");
  CUdevResource all, part, rest;
  memset(&all, 0, sizeof all);
  memset(&part, 0, sizeof part);
  memset(&rest, 0, sizeof rest);
  GK(gc.get_resource(d, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource(SM)");
  unsigned groups = 1;
  GK(gc.split(&part, &groups, &all, &rest, 0, k), "cuDevSmResourceSplitByCount");
  if (groups != 1 || !rest.sm.smCount) {
    snprintf(why, whylen, "splitting %u SMs for the matmul left %u groups, %u SMs over", k, groups,
             rest.sm.smCount);
    return 1;
  }
  CUdevResource *res[2] = {&part, &rest};
  for (int i = 0; i < 2; i++) {
    CUdevResourceDesc desc;
    GK(gc.desc(&desc, res[i], 1), "cuDevResourceGenerateDesc");
    GK(gc.create(&s->g[i], desc, d, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
    GK(gc.to_ctx(&s->ctx[i], s->g[i]), "cuCtxFromGreenCtx");
    s->sms[i] = res[i]->sm.smCount;
  }
  return 0;
}

/* The matmul opened in the matmul's green context, the same size as the
 * calibrated one. */
static int task_open(struct bench *b, struct split *s, struct plain *tp, char *why, size_t n) {
  int rc = plain_open_ctx(tp, (int)b->o->device, b->p.local, s->ctx[0]);
  if (!rc) rc = plain_carveout(tp, (int)b->o->carveout);
  tp->io = b->p.io;
  if (!rc) rc = plain_data(tp, b->p.n);
  if (!rc) {
    tp->grid = b->p.grid;
    tp->reps = b->p.reps;
    tp->timeout_ns = b->p.timeout_ns;
  }
  if (rc) snprintf(why, n, "the matmul in a green context: %.400s", tp->err);
  plain_unbind(); /* the graphics thread makes it current there */
  return rc;
}

/* The matmul's latency p50 alone on s's k SMs, released every P for a
 * second (or --window if shorter), ms. */
static int task_p50(struct bench *b, struct split *s, double *p50, char *why, size_t n) {
  struct plain tp;
  if (task_open(b, s, &tp, why, n)) {
    plain_close(&tp);
    return 1;
  }
  struct sopts one = *b->o, *o = b->o;
  one.window_s = o->window_s < 1 ? o->window_s : 1;
  b->o = &one;
  struct result x;
  memset(&x, 0, sizeof x);
  snprintf(x.name, sizeof x.name, "(e) matmul alone on %u SMs", s->sms[0]);
  struct task_ops ops = side_plain_ops(&tp);
  int rc = gfx_alone(b, &x, &ops);
  b->o = o;
  struct series lat = {0};
  for (size_t i = 0; i < x.ns; i++)
    if (!x.s[i].chk) push(&lat, (double)(x.s[i].t_done - x.s[i].t_release) / 1e6);
  *p50 = quantile(&lat, .5);
  series_free(&lat);
  free(x.s);
  plain_close(&tp);
  if (rc) snprintf(why, n, "the matmul alone in a green context failed (above)");
  return rc;
}

/* The device's SMs and the split's granularity, as the driver reports them. */
static int granularity(int device, CUdevSmResource *sm, char *why, size_t whylen) {
  CUdevice d;
  CUdevResource all;
  memset(&all, 0, sizeof all);
  GK(coop__cu.cuDeviceGet(&d, device), "cuDeviceGet");
  GK(gc.get_resource(d, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource(SM)");
  *sm = all.sm;
  return 0;
}

/* k rounded up to what a split can make: at least the minimum partition,
 * a multiple of the co-scheduling alignment. */
static unsigned round_k(unsigned k, const CUdevSmResource *sm) {
  if (k < sm->minSmPartitionSize) k = sm->minSmPartitionSize;
  unsigned a = sm->smCoscheduledAlignment ? sm->smCoscheduledAlignment : 1;
  return (k + a - 1) / a * a;
}

/* k: --green-sms, or the smallest candidate whose p50 alone is within P. */
static int choose(struct bench *b, unsigned *k, char *why, size_t n) {
  static const unsigned cand[] = {8, 16, 32, 64};
  CUdevSmResource sm;
  if (granularity((int)b->o->device, &sm, why, n)) return 1;
  printf(SB ": (e) green contexts: %u SMs; a split takes at least %u SMs, in multiples of %u\n",
         sm.smCount, sm.minSmPartitionSize, sm.smCoscheduledAlignment);
  *k = 0;
  if (b->o->green_sms) {
    *k = (unsigned)b->o->green_sms;
    printf(SB ": (e) green contexts: the matmul on %u SMs (--green-sms)\n", *k);
    return 0;
  }
  double P = b->o->period_ms;
  for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
    unsigned want = round_k(cand[i], &sm);
    if (want >= sm.smCount || want <= *k) continue; /* too many, or tried */
    struct split s;
    double p50 = 0;
    int rc = split_make((int)b->o->device, want, &s, why, n);
    if (!rc) rc = task_p50(b, &s, &p50, why, n);
    unsigned got = s.sms[0];
    split_free(&s);
    if (rc) return 1;
    *k = want;
    printf(SB
           ": (e) green contexts: the matmul alone on %u SMs (asked %u): latency p50 %.3f ms, "
           "%s P = %.4g ms\n",
           got, want, p50, p50 <= P ? "within" : "over", P);
    fflush(stdout);
    if (p50 <= P) return 0;
  }
  if (!*k) {
    snprintf(why, n, "the GPU has %u SMs, too few to split off %u", sm.smCount,
             round_k(cand[0], &sm));
    return 1;
  }
  printf(SB ": (e) green contexts: no candidate met P; the largest tried, %u SMs asked\n", *k);
  return 0;
}

static int green(struct bench *b, int setup, char *why, size_t whylen) {
  unsigned k = 0;
  if (choose(b, &k, why, whylen)) return -1;
  struct split s;
  struct plain tp;
  memset(&tp, 0, sizeof tp);
  if (split_make((int)b->o->device, k, &s, why, whylen) || task_open(b, &s, &tp, why, whylen)) {
    plain_close(&tp);
    split_free(&s);
    return -1;
  }
  printf(SB ": (e) green contexts: the matmul on %u SMs, the long kernel on %u\n", s.sms[0],
         s.sms[1]);
  fflush(stdout);
  char label[16];
  snprintf(label, sizeof label, "long on %u", s.sms[1]);
  b->cuda_ctx = s.ctx[1];
  b->cuda_sms = s.sms[1];
  int rc = side_megakernel(b, 0);
  if (rc) {
    /* the driver refused the megakernel there: the setup cannot run */
    snprintf(why, whylen, "the megakernel did not launch in the green context of %u SMs (above)",
             s.sms[1]);
    rc = -1;
  } else {
    printf(SB ": (e) megakernel on the long kernel's green context: %u launched, %u workers\n",
           coop_rt_launched_groups(b->rt), b->workers);
    rc = side_long_warm_up(b);
  }
  if (!rc) {
    struct result *x = new_result(S_GREEN_LONG, s.sms[0], label);
    say_start(x);
    rc = long_window(b, x, NULL);
  }
  if (!rc) {
    struct result *x = new_result(setup, s.sms[0], label);
    say_start(x);
    struct thread_arg t = {.ops = side_plain_ops(&tp)};
    struct gfx_ctl ctl = {th_start, th_stop, &t};
    rc = long_window(b, x, &ctl);
  }
  if (b->rt && coop_rt_close(b->rt)) {
    fprintf(stderr, SB ": (e) closing the megakernel failed\n");
    if (!rc) rc = 1;
  }
  b->rt = NULL;
  b->cuda_ctx = NULL;
  b->cuda_sms = 0;
  plain_close(&tp);
  split_free(&s);
  return rc;
}

int setup_green_run(struct bench *b, int setup) {
  char why[512] = "";
  if (resolve(why, sizeof why)) {
    say_skip(side_setups[setup].label, why);
    return 0;
  }
  int rc = green(b, setup, why, sizeof why);
  if (rc < 0) {
    /* the driver refused the split or the contexts: not this bench's fault */
    say_skip(side_setups[setup].label, why);
    return 0;
  }
  return rc;
}
