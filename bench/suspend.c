/*
 * suspend.c (coop-bench-suspend): what suspending a cooperative kernel
 * costs (docs/scheduler.md, "Suspension"). An application (default bfs)
 * runs at full width on one input (default road 1024 x 1024) and is
 * suspended about every --every-us and resumed each time; per suspension:
 * request -> SUSPENDED (every workgroup off the device, its state saved),
 * and resume -> every requested workgroup running again. Beside them, the
 * application's step on that input (an uninterrupted run: execution time
 * / resizing barriers), so that the suspension reads in steps. Every run
 * is checked against the CPU reference. CSV rows on stdout after the
 * table. Timing is never asserted. With --preempt 1 each suspension is
 * followed at once by a no-op task on every worker (kernels/bench/
 * micro_nop.cl), as coopd submits a task of higher priority that needs
 * them (docs/daemon.md, "Priority"): its gather is that target's figure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "sched_prof.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

extern const char coop_bench_src_micro_nop_cl[]; /* bench_kernels.c (bench/CMakeLists.txt) */

/* p50 / p99 / max of the v[i] >= 0, each divided by div, then unit (and
 * the count), into s; "-" if none. */
static void pct_of(const int64_t *v, unsigned n, double div, const char *unit, char *s,
                   size_t len) {
  struct series x = {0};
  for (unsigned i = 0; i < n; i++)
    if (v[i] >= 0) push(&x, (double)v[i] / div);
  if (!x.n)
    snprintf(s, len, "-");
  else
    snprintf(s, len, "%.1f / %.1f / %.1f%s (%zu)", quantile(&x, 0.5), quantile(&x, 0.99),
             max_of(&x), unit, x.n);
  series_free(&x);
}

/* ns as us (the benchmarks' quantile, common.h); -1 entries (not
 * measured, or the task ended first) left out */
static void pct(const int64_t *v, unsigned n, char *s, size_t len) {
  pct_of(v, n, 1e3, " us", s, len);
}

/* The pass that passed each suspension on, leg by leg (apps/local.c). */
static void print_legs(const int64_t *legs, unsigned n) {
  static const char *what[COOP_APP_SUSPEND_LEGS] = {
      "its start -> the doorbell's acquire fence done", "-> step 2 begins",
      "-> the record's words in", "-> passed on (cap, suspend)"};
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  for (unsigned k = 0; v && k < COOP_APP_SUSPEND_LEGS; k++) {
    char s[96];
    for (unsigned i = 0; i < n; i++) v[i] = legs[i * COOP_APP_SUSPEND_LEGS + k];
    pct(v, n, s, sizeof s);
    printf("        %s: %s\n", what[k], s);
  }
  free(v);
}

/* --raw: one row a suspension, so that a distribution's shape (one step
 * or two) shows where its percentiles do not */
static int write_raw(const char *path, const struct coop_app_suspend_log *log, const int64_t *sus,
                     const int64_t *left, const int64_t *passon, const int64_t *inpass,
                     const int64_t *last, const int64_t *karrive, const int64_t *kheld,
                     const int64_t *kout) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "coop-bench-suspend: %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(f,
          "request_suspended,request_last_out,request_passon,pass_begins_passon,"
          "passon_last_out,passon_kill_arrive,passon_kill_held,held_last_out\n");
  for (unsigned i = 0; i < log->n; i++)
    fprintf(f, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", (long long)sus[i], (long long)left[i],
            (long long)passon[i], (long long)inpass[i], (long long)last[i], (long long)karrive[i],
            (long long)kheld[i], (long long)kout[i]);
  if (fclose(f)) {
    fprintf(stderr, "coop-bench-suspend: %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

static int usage(FILE *f, int rc) {
  fprintf(f,
          "usage: coop-bench-suspend [--app NAME] [--input I] [--scale S] [--runs N]\n"
          "                          [--every-us US] [--query 0|1] [--preempt 0|1]\n"
          "                          [--backend NAME] [--raw FILE]\n"
          "Suspends and resumes a cooperative application as it runs (default bfs on\n"
          "road 1024 x 1024: --input 1 --scale 12) about every US microseconds (default\n"
          "20000), N runs (default 5), each checked; prints request -> suspended and\n"
          "resume -> full width again (p50 / p99 / max), and the application's step.\n"
          "--query 1: the query variant of the resizing barrier (default: the plain one).\n"
          "--preempt 1: right after each suspension request, a no-op task on every worker\n"
          "(as a task of higher priority through coopd); prints its gather (released ->\n"
          "gathered), request -> gathered, and how many of its workgroups joined straight\n"
          "from a leaving one (docs/scheduler.md, \"Handing workers over\").\n"
          "With COOP_DEVICE_DEFINES=COOP_PROF, where the scheduler's passes went: idle\n"
          "(200 ms), during the uninterrupted run, during the runs with suspensions, and\n"
          "over the whole run.\n"
          "With COOP_DEVICE_DEFINES=COOP_PROF_SUSPEND in the environment it also prints,\n"
          "from the device's clock, the scheduler passing the suspension on -> its next\n"
          "reap of a worker (the first to leave) and -> the last workgroup out (and of\n"
          "it, -> the barrier's master arriving at the episode of the kills, -> that\n"
          "episode complete, and that -> the last out), and on the host's clock alone\n"
          "request -> the host sees the scheduler pass it on.\n"
          "--raw FILE: every suspension's figures, ns, as CSV (-1 where not measured).\n");
  return rc;
}

int main(int argc, char **argv) {
  const char *name = "bfs", *backend = getenv("COOP_BACKEND"), *raw = NULL;
  unsigned input = 1, scale = 12, runs = 5, every = 20000;
  int query = 0, preempt = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--help")) return usage(stdout, 0);
    if (!v) return usage(stderr, 2);
    if (!strcmp(argv[i], "--app"))
      name = v;
    else if (!strcmp(argv[i], "--input"))
      input = (unsigned)atoi(v);
    else if (!strcmp(argv[i], "--scale"))
      scale = (unsigned)atoi(v);
    else if (!strcmp(argv[i], "--runs"))
      runs = (unsigned)atoi(v);
    else if (!strcmp(argv[i], "--query"))
      query = atoi(v);
    else if (!strcmp(argv[i], "--preempt"))
      preempt = atoi(v);
    else if (!strcmp(argv[i], "--every-us"))
      every = (unsigned)atoi(v);
    else if (!strcmp(argv[i], "--backend"))
      backend = v;
    else if (!strcmp(argv[i], "--raw"))
      raw = v;
    else
      return usage(stderr, 2);
    i++;
  }
  const struct coop_app *a = coop_app_find(name);
  if (!a || !runs || !every || (preempt != 0 && preempt != 1)) return usage(stderr, 2);
  struct coop_rt_options ro;
  coop_rt_options_init(&ro);
  ro.backend = backend;
  coop_rt *rt = NULL;
  int r = coop_rt_open(&rt, &ro);
  if (!r) r = coop_rt_add_kernel(rt, a->kernel, 1, a->source) < 0;
  int knop =
      !r && preempt ? coop_rt_add_kernel(rt, "micro_nop", 0, coop_bench_src_micro_nop_cl) : 0;
  if (knop < 0) r = knop;
  if (!r) r = coop_rt_launch(rt);
  if (r) {
    fprintf(stderr, "coop-bench-suspend: %s\n", rt ? coop_rt_errmsg(rt) : coop_strerror(r));
    return 1;
  }
  struct coop_app_input in;
  if ((r = coop_app_input(a, input, scale, &in))) {
    fprintf(stderr, "coop-bench-suspend: input %u: %s\n", input, coop_strerror(r));
    return 1;
  }
  unsigned w = coop_rt_workers(rt), cap = runs * 10000u;
  int64_t *sus = calloc(cap, sizeof *sus), *grow = calloc(cap, sizeof *grow),
          *left = calloc(cap, sizeof *left), *reaped = calloc(cap, sizeof *reaped),
          *last = calloc(cap, sizeof *last), *passon = calloc(cap, sizeof *passon),
          *inpass = calloc(cap, sizeof *inpass),
          *legs = calloc((size_t)cap * COOP_APP_SUSPEND_LEGS, sizeof *legs),
          *gather = calloc(cap, sizeof *gather), *reqg = calloc(cap, sizeof *reqg),
          *rpasses = calloc(cap, sizeof *rpasses), *rlong = calloc(cap, sizeof *rlong),
          *rpass = calloc(cap, sizeof *rpass), *rreap = calloc(cap, sizeof *rreap),
          *lsteps = calloc((size_t)cap * COOP_APP_SUSPEND_STEPS, sizeof *lsteps),
          *karrive = calloc(cap, sizeof *karrive), *kheld = calloc(cap, sizeof *kheld),
          *kout = calloc(cap, sizeof *kout), *joined = calloc(cap, sizeof *joined);
  /* the no-op's output: thread 0 of each group stores at 16 x its id */
  void *nop_out = preempt ? coop_rt_alloc(rt, (size_t)w * 16u * sizeof(uint32_t)) : NULL;
  if (preempt && !nop_out) {
    fprintf(stderr, "coop-bench-suspend: no room for the no-op task's output\n");
    return 1;
  }
  /* the device's own stamps only from a megakernel built to take them */
  const char *defs = getenv("COOP_DEVICE_DEFINES");
  int prof = defs && strstr(defs, "COOP_PROF_SUSPEND");
  struct coop_app_suspend_log log = {sus,
                                     left,
                                     grow,
                                     prof ? reaped : NULL,
                                     prof ? last : NULL,
                                     prof ? passon : NULL,
                                     prof ? inpass : NULL,
                                     prof ? legs : NULL,
                                     0,
                                     cap,
                                     preempt ? w : 0u,
                                     knop,
                                     preempt ? coop_rt_buf_arg(rt, nop_out) : 0u,
                                     gather,
                                     reqg,
                                     prof ? rpasses : NULL,
                                     prof ? rlong : NULL,
                                     prof ? rpass : NULL,
                                     prof ? rreap : NULL,
                                     prof ? lsteps : NULL,
                                     prof ? karrive : NULL,
                                     prof ? kheld : NULL,
                                     prof ? kout : NULL,
                                     joined};
  double step_us = 0;
  unsigned total = 0;
  /* COOP_PROF: the passes of an idle megakernel (200 ms), of the
   * uninterrupted run, and of the runs with suspensions, apart */
  uint64_t snap[SCHED_PROF_SLOTS];
  if (sched_prof_snap(rt, snap)) {
    struct timespec idle = {0, 200000000};
    nanosleep(&idle, NULL);
    sched_prof_print_since(rt, "  passes, idle (200 ms)", snap);
  }
  for (unsigned k = 0;
       k <= runs && sus && grow && left && reaped && last && passon && inpass && legs && gather &&
       reqg && rpasses && rlong && rpass && rreap && lsteps && karrive && kheld && kout;
       k++) {
    if (k <= 1) sched_prof_snap(rt, snap);
    unsigned n = 0; /* run 0: uninterrupted, for the step */
    struct coop_app_opts o = {.groups = w,
                              .mode = COOP_APP_MODE_COOPERATIVE,
                              .query_barrier = query,
                              .timeout_ms = 600000,
                              .suspend_every_us = k ? every : 0,
                              .suspensions = &n,
                              .suspend_log = &log};
    void *out = NULL;
    struct coop_rt_task_info ti;
    char why[256] = "";
    r = a->run(rt, &in, &o, &out, &ti);
    if (!r) r = a->check(&in, out, why, sizeof why) ? COOP_EFAULT : 0;
    free(out);
    if (r) {
      fprintf(stderr, "coop-bench-suspend: run %u: %s %s\n", k, coop_strerror(r), why);
      return 1;
    }
    if (!k) step_us = ti.resizes ? (double)(ti.t_finished - ti.t_started) / 1e3 / ti.resizes : 0;
    if (!k) sched_prof_print_since(rt, "  passes, the uninterrupted run", snap);
    total += n;
  }
  sched_prof_print_since(rt, "  passes, the runs with suspensions", snap);
  char s1[96], s2[96], s3[96], s4[96], s5[96], s6[96], s7[96];
  struct machine mc;
  machine_of(&mc);
  const char *pocl = getenv("POCL_MAX_PTHREAD_COUNT");
  printf(
      "machine: %s, %s, %s, %ld cores online; %u compute units%s%s; commit %s (at build "
      "time)\n",
      mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), coop_rt_compute_units(rt),
      pocl ? ", POCL_MAX_PTHREAD_COUNT=" : "", pocl ? pocl : "", COOP_BENCH_COMMIT);
  printf("coop-bench-suspend: %s on %s, %s, %u workers, %s resizing barrier, every ~%u us\n",
         a->name, in.label, coop_rt_device_name(rt), w, query ? "query" : "plain", every);
  printf("  step (uninterrupted run: execution / resizing barriers): %.1f us\n", step_us);
  pct(sus, log.n, s1, sizeof s1);
  pct(grow, log.n, s2, sizeof s2);
  pct(left, log.n, s3, sizeof s3);
  pct(reaped, log.n, s4, sizeof s4);
  pct(last, log.n, s5, sizeof s5);
  pct(passon, log.n, s6, sizeof s6);
  pct(inpass, log.n, s7, sizeof s7);
  printf("  %u suspensions in %u runs, every result right\n", total, runs);
  printf("  request -> suspended (p50 / p99 / max): %s\n", s1);
  printf("    of it, request -> the last workgroup out (device stamp): %s\n", s3);
  if (prof) { /* COOP_DEVICE_DEFINES=COOP_PROF_SUSPEND */
    printf(
        "    request -> the host sees the scheduler pass it on (one clock): %s\n"
        "      of it, inside the pass that passes it on (device clock): %s\n",
        s6, s7);
    print_legs(legs, log.n);
    printf(
        "    scheduler passes it on -> its next reap of a worker: %s\n"
        "    scheduler passes it on -> the last workgroup out: %s\n",
        s4, s5);
    /* on the device's clock alone: no fitted line between the host's
     * clock and the device's, whose offset differs from lease to lease */
    int64_t *whole = calloc(log.n ? log.n : 1, sizeof *whole);
    if (whole) {
      for (unsigned i = 0; i < log.n; i++)
        whole[i] = inpass[i] >= 0 && last[i] >= 0 ? inpass[i] + last[i] : -1;
      char ws[96];
      pct(whole, log.n, ws, sizeof ws);
      printf("    the pass that passes it on begins -> the last workgroup out (device clock): %s\n",
             ws);
      free(whole);
    }
    static const char *kwhat[3] = {"-> the barrier's master arrives at the episode of the kills",
                                   "-> it sees that episode complete, held",
                                   "that -> the last workgroup out"};
    int64_t *kv[3] = {karrive, kheld, kout};
    for (unsigned i = 0; i < 3; i++) {
      char ks[96];
      pct(kv[i], log.n, ks, sizeof ks);
      printf("      %s: %s\n", kwhat[i], ks);
    }
    char r1[96], r2[96], r3[96], r4[96];
    pct_of(rpasses, log.n, 1, "", r1, sizeof r1);
    pct(rlong, log.n, r2, sizeof r2);
    pct(rpass, log.n, r3, sizeof r3);
    pct(rreap, log.n, r4, sizeof r4);
    printf(
        "      passes begun before that reap: %s\n"
        "      the longest of them but the reap's own: %s\n"
        "      the reap's own pass, its start -> the reap: %s; the reap: %s\n",
        r1, r2, r3, r4);
    printf("      the longest's steps 1-8, p50 us:");
    for (unsigned k = 0; k < COOP_APP_SUSPEND_STEPS; k++) {
      struct series x = {0};
      for (unsigned i = 0; i < log.n; i++)
        if (lsteps[i * COOP_APP_SUSPEND_STEPS + k] >= 0)
          push(&x, (double)lsteps[i * COOP_APP_SUSPEND_STEPS + k] / 1e3);
      if (x.n)
        printf(" %.1f", quantile(&x, 0.5));
      else
        printf(" -");
      series_free(&x);
    }
    printf("\n");
  }
  if (preempt) {
    char g1[96], g2[96], g3[96];
    pct(gather, log.n, g1, sizeof g1);
    pct(reqg, log.n, g2, sizeof g2);
    pct_of(joined, log.n, 1, "", g3, sizeof g3);
    printf(
        "  a no-op task on every worker, submitted right after the request: gather (released\n"
        "  -> gathered, device clock) %s; request -> gathered %s;\n"
        "  of its %u workgroups, those whose worker came straight from a leaving one: %s\n",
        g1, g2, w, g3);
  }
  printf("  resume -> full width (p50 / p99 / max): %s\n", s2);
  sched_prof_print(rt); /* under COOP_PROF: the passes during the run */
  if (raw && write_raw(raw, &log, sus, left, passon, inpass, last, karrive, kheld, kout)) return 1;
  printf(
      "app,input,workers,step_us,suspensions,suspend,regrow,left\n%s,%s,%u,%.1f,%u,\"%s\",\"%s\","
      "\"%s\"\n",
      a->name, in.label, w, step_us, total, s1, s2, s3);
  coop_app_input_free(&in);
  free(sus);
  free(grow);
  free(left);
  free(reaped);
  free(rpasses);
  free(rlong);
  free(rpass);
  free(rreap);
  free(lsteps);
  free(karrive);
  free(kheld);
  free(kout);
  free(last);
  free(passon);
  free(inpass);
  free(legs);
  free(gather);
  free(joined);
  free(reqg);
  int rc = coop_rt_close(rt) ? 1 : 0;
  if (!total) { /* one worker (PoCL with 2 compute units): nothing to suspend it from */
    fprintf(stderr,
            "coop-bench-suspend: no suspension was measured (%u workers): nothing above "
            "is a figure\n",
            w);
    rc = 1;
  }
  return rc;
}
