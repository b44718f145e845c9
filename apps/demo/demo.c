/*
 * demo.c: the megakernel in-process (until coopd exists): a cooperative
 * kernel sharing the device with periodic graphics-like tasks, and the
 * gather times of those tasks. Checks the cooperative kernel's result
 * against a CPU reference.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coop_rt.h"

/* kernels/demo/stopsweep.cl and render.cl, embedded by apps/demo/CMakeLists.txt */
extern const char coop_demo_src_stopsweep_cl[], coop_demo_src_render_cl[];

static void usage(FILE *f) {
  fprintf(f,
          "usage: coop-demo [--tasks N] [--period MS] [--wg K] [--size N]\n"
          "Runs the megakernel on the default OpenCL device (PoCL): a cooperative kernel\n"
          "sweeping an array with a resizing barrier per round until the tasks end,\n"
          "and N periodic matrix multiplications (graphics-like tasks) asking for K\n"
          "workgroups each\n"
          "(default: half the workers). Prints each task's gather time and execution\n"
          "time, their p50/p90/max, and checks both kernels' results on the CPU.\n"
          "  --tasks N    periodic tasks (default 20)\n"
          "  --period MS  period between task releases (default 50)\n"
          "  --wg K       workgroups per task (default workers/2, at least 1)\n"
          "  --size N     matrix size (default 48)\n"

          "Environment: POCL_MAX_PTHREAD_COUNT sets PoCL's compute units.\n");
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double pct(int64_t *v, int n, double p) {
  if (n == 0) return 0;
  int i = (int)ceil(p * n) - 1;
  if (i < 0) i = 0;
  return (double)v[i] / 1000.0;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  int ntasks = 20, period = 50, wg = 0, size = 48;
  static const struct option lo[] = {{"tasks", 1, 0, 't'}, {"period", 1, 0, 'p'}, {"wg", 1, 0, 'w'},
                                     {"size", 1, 0, 's'},  {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    char *end = NULL;
    long v = (ch == 'h' || ch == '?') ? 0 : strtol(optarg, &end, 10);
    if (ch == 'h') {
      usage(stdout);
      return 0;
    }
    if (ch == '?' || !end || *end || v <= 0 || v > 1000000) {
      if (ch != '?')
        fprintf(stderr, "coop-demo: bad value '%s' for --%s\n", optarg,
                ch == 't'   ? "tasks"
                : ch == 'p' ? "period"
                : ch == 'w' ? "wg"
                            : "size");
      usage(stderr);
      return 2;
    }
    if (ch == 't') ntasks = (int)v;
    if (ch == 'p') period = (int)v;
    if (ch == 'w') wg = (int)v;
    if (ch == 's') size = (int)v;
  }
  if (ntasks > 200) ntasks = 200;

  coop_rt *rt;
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  o.backend = getenv("COOP_BACKEND");
  o.local_size = 16;
  int r = coop_rt_open(&rt, &o);
  int ksweep = r ? r : coop_rt_add_kernel(rt, "stopsweep", 1, coop_demo_src_stopsweep_cl);
  int krender = ksweep < 0 ? ksweep : coop_rt_add_kernel(rt, "render", 0, coop_demo_src_render_cl);
  r = krender < 0 ? krender : coop_rt_launch(rt);
  if (r) {
    fprintf(stderr, "coop-demo: %s\n%s\n", coop_strerror(r), coop_rt_errmsg(rt));
    coop_rt_close(rt);
    return 1;
  }
  unsigned workers = coop_rt_workers(rt);
  if (wg == 0) wg = workers / 2 ? (int)workers / 2 : 1;
  if ((unsigned)wg > workers - (workers > 1)) {
    fprintf(stderr, "coop-demo: --wg %d: at most %u (the cooperative kernel keeps one)\n", wg,
            workers - (workers > 1));
    coop_rt_close(rt);
    return 2;
  }
  printf(
      "device: %s, %u compute units; launched %u workgroups, discovery found %u co-occupant\n"
      "(1 scheduler + %u workers); device clock %.3f ns/tick\n",
      coop_rt_device_name(rt), coop_rt_compute_units(rt), coop_rt_launched_groups(rt),
      coop_rt_participants(rt), workers, coop_rt_tick_ns(rt));

  unsigned n = 1 << 14;
  uint32_t *data = coop_rt_alloc(rt, n * sizeof *data);
  size_t msz = (size_t)size * size * sizeof(float);
  float *a = coop_rt_alloc(rt, msz), *b = coop_rt_alloc(rt, msz), *c = coop_rt_alloc(rt, msz);
  /* the host's copies: filled there and moved by coop_rt_arena_copy, which
   * leaves the buffers' pages where the GPU uses them (docs/kernels.md,
   * "Host side": a host access to CUDA managed memory moves the page) */
  float *ha = malloc(msz), *hb = malloc(msz), *hc = malloc(msz);
  if (!data || !a || !b || !c || !ha || !hb || !hc) {
    fprintf(stderr, "coop-demo: out of memory\n");
    coop_rt_close(rt);
    return 1;
  }
  for (int i = 0; i < size * size; i++) {
    ha[i] = (float)(i % 7);
    hb[i] = (float)(i % 5);
  }
  if (coop_rt_arena_copy(rt, a, ha, msz, 1) || coop_rt_arena_copy(rt, b, hb, msz, 1)) {
    fprintf(stderr, "coop-demo: copying the render's inputs failed\n");
    coop_rt_close(rt);
    return 1;
  }
  struct coop_rt_task_desc cd = {
      .kernel = ksweep, .groups = workers, .cooperative = 1, .query_barrier = 1, .nargs = 3};
  cd.args[0] = coop_rt_buf_arg(rt, data);
  cd.args[1] = n;
  uint32_t *ctl = coop_rt_alloc(rt, 3 * sizeof *ctl);
  cd.args[2] = coop_rt_buf_arg(rt, ctl);
  coop_task_id cid;
  r = coop_rt_submit(rt, &cd, &cid);
  if (r) {
    fprintf(stderr, "coop-demo: submit: %s\n", coop_strerror(r));
    coop_rt_close(rt);
    return 1;
  }
  printf(
      "cooperative kernel 'stopsweep' on up to %u workgroups; %d tasks 'render' (%dx%d matmul)"
      " every %d ms on %d workgroups\n\n",
      workers, ntasks, size, size, period, wg);
  printf("%4s %12s %12s\n", "task", "gather_us", "exec_us");
  int64_t gath[200], exec[200];
  int ok = 1, done = 0;
  for (int i = 0; i < ntasks; i++) {
    struct coop_rt_task_desc rd = {.kernel = krender, .groups = (unsigned)wg, .nargs = 4};
    rd.args[0] = coop_rt_buf_arg(rt, a);
    rd.args[1] = coop_rt_buf_arg(rt, b);
    rd.args[2] = coop_rt_buf_arg(rt, c);
    rd.args[3] = (uint64_t)size;
    coop_task_id tid;
    struct coop_rt_task_info ti;
    if (coop_rt_submit(rt, &rd, &tid) || coop_rt_wait(rt, tid, 60000) ||
        coop_rt_task_info(rt, tid, &ti) || ti.state != COOP_TASK_DONE) {
      fprintf(stderr, "coop-demo: task %d failed\n", i);
      ok = 0;
      break;
    }
    if (coop_rt_arena_copy(rt, hc, c, msz, 0)) {
      fprintf(stderr, "coop-demo: reading render %d's output failed\n", i);
      ok = 0;
    }
    for (int x = 0; x < size && ok; x += 7) {
      float ref = 0;
      for (int k = 0; k < size; k++) ref += ha[x * size + k] * hb[k * size + x];
      if (hc[x * size + x] != ref) {
        fprintf(stderr, "coop-demo: render %d: c[%d][%d] = %g, CPU says %g\n", i, x, x,
                hc[x * size + x], ref);
        ok = 0;
      }
    }
    gath[done] = ti.gather_ns;
    exec[done] = ti.t_finished - ti.t_started;
    printf("%4d %12.1f %12.1f\n", i, ti.gather_ns / 1000.0, exec[done] / 1000.0);
    done++;
    coop_rt_task_release(rt, tid);
    sleep_ms(period);
  }
  struct coop_rt_task_info ci;
  __atomic_store_n(&ctl[0], 1u, __ATOMIC_RELEASE); /* ask the kernel to stop */
  if (coop_rt_wait(rt, cid, 120000) || coop_rt_task_info(rt, cid, &ci) ||
      ci.state != COOP_TASK_DONE) {
    fprintf(stderr, "coop-demo: the cooperative kernel did not finish\n");
    ok = 0;
  }
  /* Every element was covered once per round: ids contiguous and M stable
   * inside each resizing-barrier interval, whatever the kills and forks. */
  uint32_t v0 = data[0];
  if (v0 != ctl[1]) ok = 0;
  for (unsigned i = 0; i < n; i++)
    if (data[i] != v0) {
      if (ok)
        fprintf(stderr, "coop-demo: sweep: element %u saw %u rounds, element 0 saw %u\n", i,
                data[i], v0);
      ok = 0;
    }
  qsort(gath, done, sizeof *gath, cmp_i64);
  qsort(exec, done, sizeof *exec, cmp_i64);
  printf("\ngather time us: p50 %.1f  p90 %.1f  max %.1f   (n=%d)\n", pct(gath, done, .5),
         pct(gath, done, .9), pct(gath, done, 1), done);
  printf("exec time us:   p50 %.1f  p90 %.1f  max %.1f\n", pct(exec, done, .5), pct(exec, done, .9),
         pct(exec, done, 1));
  printf(
      "cooperative kernel: stopped after %u rounds; M from %u down to %u, up to %u; %u kills, "
      "%u forks, %u resizing barriers\n",
      v0, ci.m_initial, ci.m_min, ci.m_max, ci.kills, ci.forks, ci.resizes);
  printf("results checked against the CPU: %s\n", ok ? "OK" : "MISMATCH");
  free(ha);
  free(hb);
  free(hc);
  r = coop_rt_close(rt);
  return ok && !r ? 0 : 1;
}
