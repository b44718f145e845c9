/*
 * native_barrier.c: coop-bench-native --barriers: what a plain CUDA grid
 * sync costs at each launch shape, the floor coop's barriers are compared
 * with (coop-bench-micro measures those, same GPU, same batch:
 * bench/native_gpu.sh).
 *
 * The kernel is coop-bench-micro's barrier task (R rounds of a store per
 * group, workgroup 0 stamping the device clock at the top of every step),
 * with the mode first as the apps have it, compiled and launched as every
 * native baseline is (native_cuda.c): each COOP_GLOBAL_BARRIER a step
 * returns becomes a cooperative_groups grid sync. Per shape: the median,
 * p10 and p90 over the R - 1 gaps between stamps (the first round, which
 * absorbs the blocks' start, left out) of each of T launches, and the
 * median per launch of (t[R] - t[1]) / (R - 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"

#define NB_ROUNDS 1000u
#define NB_TASKS 3

static const char src_bar[] =
    "//@coop name=nbar kind=cooperative args=mode:u32,t:buf,seen:buf,rounds:u32,prim:u32,m:u32\n"
    "struct nbar_state { coop_u32 round; };\n"
    "COOP_FN void nbar_init(struct coop_ctx *c, struct nbar_state *s) { (void)c; s->round = 0u; "
    "}\n"
    "COOP_FN coop_u32 nbar_step(struct coop_ctx *c, struct nbar_state *s) {\n"
    "  coop_buf_u64 t = coop_arg_buf_u64(c, 1);\n"
    "  coop_buf_u32 seen = coop_arg_buf_u32(c, 2);\n"
    "  coop_u32 rounds = coop_arg_u32(c, 3), prim = coop_arg_u32(c, 4);\n"
    "  coop_u32 r = s->round, vid = coop_group_id(c);\n"
    "  if (coop_local_id_c(c) == 0u) {\n"
    "    if (vid == 0u) coop_at(t, r) = coop_clock();\n"
    "    coop_at(seen, 16u * vid) = r + 1u;\n"
    "    if (coop_num_groups(c) != coop_arg_u32(c, 5)) coop_at(seen, 16u * vid + 1u) += 1u;\n"
    "  }\n"
    "  if (r == rounds) return COOP_DONE;\n"
    "  s->round = r + 1u;\n"
    "  return prim;\n"
    "}\n";

static int bar_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                       struct coop_app_task *t) {
  (void)in;
  (void)o;
  coop_app_task_buf(t, COOP_APP_OUT, (NB_ROUNDS + 1u) * sizeof(uint64_t));
  coop_app_task_buf(t, COOP_APP_OUT, (size_t)t->groups * 16u * sizeof(uint32_t));
  coop_app_task_u32(t, NB_ROUNDS);
  coop_app_task_u32(t, 8u); /* COOP_GLOBAL_BARRIER */
  coop_app_task_u32(t, t->groups);
  t->out = 1; /* the stamps */
  return t->err;
}

static const struct coop_app bar_app = {
    .name = "grid-sync",
    .kernel = "nbar",
    .source = src_bar,
    .truth = "coop-bench-micro's barrier task",
    .prepare = bar_prepare,
};

static int cmp_d(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* One shape: T launches of `blocks` x k->local; 0, or 1 on an error. */
static int shape(struct native_dev *d, struct native_kernel *k, unsigned blocks, FILE *csv) {
  double gaps[NB_TASKS * NB_ROUNDS], means[NB_TASKS];
  int ng = 0;
  k->blocks = blocks;
  for (int task = 0; task < NB_TASKS; task++) {
    struct coop_app_task t;
    struct coop_app_input in = {0};
    struct coop_app_opts o = {.groups = blocks};
    if (coop_app_task_prepare(&t, &bar_app, &in, &o, blocks)) {
      snprintf(d->err, sizeof d->err, "cannot prepare the barrier task");
      return 1;
    }
    struct native_task nt;
    double ns = 0;
    unsigned fault = 0;
    int r = native_task_open(d, &nt, &t);
    if (!r) r = native_task_run(d, k, &nt, &ns);
    if (!r) r = native_task_read(d, &nt, &t, &fault);
    if (!r) {
      const uint64_t *ts = t.arg[1].host;
      const uint32_t *seen = t.arg[2].host;
      for (unsigned g = 0; g < blocks && !r; g++)
        if (seen[16u * g] != NB_ROUNDS + 1u || seen[16u * g + 1u] != 0u) {
          snprintf(d->err, sizeof d->err,
                   "grid-sync %u x %u: block %u saw %u rounds, %u at another M", blocks, k->local,
                   g, seen[16u * g], seen[16u * g + 1u]);
          r = 1;
        }
      for (unsigned i = 1; i < NB_ROUNDS && !r; i++) {
        gaps[ng++] = (double)(ts[i + 1] - ts[i]);
        if (csv)
          fprintf(csv, "grid_sync,per_barrier,%u,%u,%d,%u,%.0f\n", blocks, k->local, task, i,
                  (double)(ts[i + 1] - ts[i]));
      }
      if (!r) means[task] = (double)(ts[NB_ROUNDS] - ts[1]) / (NB_ROUNDS - 1u);
      if (!r && fault) {
        snprintf(d->err, sizeof d->err, "grid-sync: a view faulted (%u)", fault);
        r = 1;
      }
    }
    native_task_close(d, &nt);
    coop_app_task_free(&t);
    if (r) return r;
  }
  qsort(gaps, (size_t)ng, sizeof *gaps, cmp_d);
  qsort(means, NB_TASKS, sizeof *means, cmp_d);
  printf("%-10u %6u %8d %10.0f %10.0f %10.0f %10.0f %10.0f\n", blocks, k->local, ng, gaps[ng / 2],
         gaps[ng / 10], gaps[ng * 9 / 10], gaps[ng - 1], means[NB_TASKS / 2]);
  return 0;
}

int native_barriers(struct native_dev *d, const unsigned *locals, int nlocals, FILE *csv) {
  printf(
      "\ngrid sync (cooperative_groups), %u rounds of (a store per block + grid sync), %d "
      "launches per shape; ns per barrier from block 0's %%globaltimer, round 0 left out\n",
      NB_ROUNDS, NB_TASKS);
  printf("%-10s %6s %8s %10s %10s %10s %10s %10s\n", "blocks", "local", "n", "median", "p10", "p90",
         "max", "dev_mean");
  if (csv) fprintf(csv, "form,quantity,blocks,local,task,index,value_ns\n");
  for (int l = 0; l < nlocals; l++) {
    struct native_kernel k;
    if (native_kernel_open(d, &k, &bar_app, locals[l], 0)) return 1;
    unsigned bound = k.blocks; /* the occupancy bound */
    int r = 0;
    for (unsigned m = 1; !r; m = m * 2 > bound && m < bound ? bound : m * 2) {
      r = shape(d, &k, m, csv);
      if (m == bound) break;
    }
    /* the shapes of the table: 2 x SMs (+ 0) and the bound */
    if (!r && 2u * (unsigned)d->sms < bound) r = shape(d, &k, 2u * (unsigned)d->sms, csv);
    native_kernel_close(d, &k);
    if (r) return 1;
  }
  return 0;
}

/* ------------------------------------------- a plain launch's round trip */
#define NT_TRIPS 200

static const char src_nop[] =
    "//@coop name=nnop kind=cooperative args=mode:u32,out:buf\n"
    "struct nnop_state { coop_u32 unused; };\n"
    "COOP_FN void nnop_init(struct coop_ctx *c, struct nnop_state *s) { (void)c; s->unused = 0u; "
    "}\n"
    "COOP_FN coop_u32 nnop_step(struct coop_ctx *c, struct nnop_state *s) {\n"
    "  (void)s;\n"
    "  coop_buf_u32 out = coop_arg_buf_u32(c, 1);\n"
    "  if (coop_local_id_c(c) == 0u) coop_at(out, coop_group_id(c)) = 1u;\n"
    "  return COOP_DONE;\n"
    "}\n";

static int nop_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                       struct coop_app_task *t) {
  (void)in;
  (void)o;
  coop_app_task_buf(t, COOP_APP_OUT, (size_t)t->groups * sizeof(uint32_t));
  t->out = 1;
  return t->err;
}

static const struct coop_app nop_app = {
    .name = "no-op",
    .kernel = "nnop",
    .source = src_nop,
    .truth = "coop-bench-micro's no-op task",
    .prepare = nop_prepare,
};

static int trips(struct native_dev *d, struct native_kernel *k, unsigned blocks, FILE *csv) {
  double v[NT_TRIPS], ns = 0;
  struct coop_app_task t;
  struct coop_app_input in = {0};
  struct coop_app_opts o = {.groups = blocks};
  k->blocks = blocks;
  if (coop_app_task_prepare(&t, &nop_app, &in, &o, blocks)) {
    snprintf(d->err, sizeof d->err, "cannot prepare the no-op task");
    return 1;
  }
  struct native_task nt;
  unsigned fault = 0;
  int r = native_task_open(d, &nt, &t);
  if (!r) r = native_task_run(d, k, &nt, &ns); /* warm-up; the channel goes over once */
  for (int i = 0; i < NT_TRIPS && !r; i++) {
    r = native_task_trip(d, k, &nt, &v[i]);
    if (!r && csv)
      fprintf(csv, "plain_launch,round_trip,%u,%u,0,%d,%.0f\n", blocks, k->local, i, v[i]);
  }
  if (!r) r = native_task_read(d, &nt, &t, &fault);
  const uint32_t *out = t.arg[1].host;
  for (unsigned g = 0; g < blocks && !r; g++)
    if (out[g] != 1u) {
      snprintf(d->err, sizeof d->err, "no-op %u x %u: block %u did not run", blocks, k->local, g);
      r = 1;
    }
  native_task_close(d, &nt);
  coop_app_task_free(&t);
  if (r) return r;
  qsort(v, NT_TRIPS, sizeof *v, cmp_d);
  printf("%-10u %6u %8d %10.0f %10.0f %10.0f %10.0f\n", blocks, k->local, NT_TRIPS, v[NT_TRIPS / 2],
         v[NT_TRIPS / 10], v[NT_TRIPS * 9 / 10], v[NT_TRIPS - 1]);
  return 0;
}

int native_launch_trips(struct native_dev *d, unsigned local, FILE *csv) {
  printf(
      "\nplain launch round trip: a no-op cooperative kernel, cuLaunchCooperativeKernel -> "
      "cuStreamQuery done (the host spinning), %d launches, ns\n",
      NT_TRIPS);
  printf("%-10s %6s %8s %10s %10s %10s %10s\n", "blocks", "local", "n", "median", "p10", "p90",
         "max");
  struct native_kernel k;
  if (native_kernel_open(d, &k, &nop_app, local, 0)) return 1;
  unsigned bound = k.blocks;
  int r = trips(d, &k, 1u, csv);
  if (!r) r = trips(d, &k, bound, csv);
  native_kernel_close(d, &k);
  return r;
}
