/*
 * micro.c: microbenchmarks of the megakernel runtime (bench/README.md,
 * coop-bench-micro), on whatever backend coop_rt_open picks.
 *
 *   1. dispatch: a no-op non-cooperative task of K = 1 and K = W (all
 *      workers) workgroups on an otherwise idle megakernel, split into the
 *      runtime's timestamps: submit -> released (host to scheduler),
 *      released -> gathered, gathered -> started (scheduler to worker),
 *      started -> finished, and the host's round trip, from just before
 *      coop_rt_submit to the return of coop_rt_wait.
 *   2. barriers: a cooperative kernel of R rounds of (tiny step + barrier),
 *      with global_barrier, resizing_global_barrier and its query variant,
 *      at M = 1, 2, 4, ... and all workers. Workgroup 0 reads the device
 *      clock at the top of every step, so each barrier is one sample;
 *      without a device clock only (t_finished - t_started) / R is left.
 *
 * Timing is reported, never asserted. Every task must end DONE, and its
 * kernel must have run on the groups it asked for, or the exit status is 1.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* gethostname (CMake defines it too) */
#endif
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "sched_prof.h"
#include "coop_rt.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

#define WAIT_MS 120000 /* a task that takes longer is hung: dump and fail */
#define WARMUP 10      /* unrecorded dispatches before each K (cold caches) */
#define SLOT 16u       /* u32 per group in result buffers: 64 B, no false sharing */

/* kernels/bench/micro_nop.cl and micro_bar.cl, embedded by bench/CMakeLists.txt */
extern const char coop_bench_src_micro_nop_cl[], coop_bench_src_micro_bar_cl[];

/* ------------------------------------------------------------- options */

struct opts {
  const char *backend, *csv;
  long reps, rounds, tasks, local_size;
  int quick, out_arena;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: coop-bench-micro [options]\n"
          "Microbenchmarks of the megakernel runtime: dispatch latency of a no-op task\n"
          "(1 and all workgroups) and barrier latency against M (global, resizing,\n"
          "resizing with query). Prints median/p10/p90/p99/p99.9/max; writes every\n"
          "sample to a CSV file. Timing is never asserted; the exit status is 1 if a task\n"
          "did not finish DONE or did not run on the groups it asked for.\n"
          "  --backend NAME    auto, opencl or cuda (default: $COOP_BACKEND, else auto)\n"
          "  --reps N          dispatches per size (default 1000; --quick 200)\n"
          "  --rounds R        barriers per cooperative task, >= 2 (default 1000;\n"
          "                    --quick 200)\n"
          "  --tasks T         cooperative tasks per variant and M (default 5;\n"
          "                    --quick 2)\n"
          "  --local-size L    threads per workgroup, a power of two up to 1024\n"
          "                    (default: the runtime's, 256 on CUDA, 64 on OpenCL)\n"
          "  --out-buffer W    where the no-op task's result goes, which the host\n"
          "                    checks after each task: host (coop_rt_alloc_host,\n"
          "                    the default) or arena (coop_rt_alloc: on CUDA its\n"
          "                    page moves at each check until the driver settles it)\n"
          "  --csv FILE        CSV output (default bench/out/micro-BACKEND.csv,\n"
          "                    relative to the working directory; created)\n"
          "  --quick           the smaller defaults above (< 2 min on PoCL, 4 CUs)\n"
          "  --help            this text\n"
          "Environment: COOP_BACKEND; POCL_MAX_PTHREAD_COUNT sets PoCL's compute units.\n");
}

/* Strict decimal in [lo, hi]; else a message and exit 2. */
#define parse_num(name, s, lo, hi) bench_parse_num("coop-bench-micro", name, s, lo, hi)

static void parse_args(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
      {"backend", 1, 0, 'b'},    {"reps", 1, 0, 'r'}, {"rounds", 1, 0, 'R'}, {"tasks", 1, 0, 't'},
      {"local-size", 1, 0, 'l'}, {"csv", 1, 0, 'c'},  {"quick", 0, 0, 'q'},  {"help", 0, 0, 'h'},
      {"out-buffer", 1, 0, 'o'}, {0, 0, 0, 0}};
  long reps = 0, rounds = 0, tasks = 0; /* 0: not given, take the mode's default */
  int ch;
  opterr = 0; /* our own message below */
  const char *inexact = inexact_option(argc, argv, lo);
  if (inexact) {
    fprintf(stderr, "coop-bench-micro: unknown option '%s'\ntry: coop-bench-micro --help\n",
            inexact);
    exit(2);
  }
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    if (ch == 'b') o->backend = optarg;
    if (ch == 'r') reps = parse_num("reps", optarg, 1, 10000000);
    if (ch == 'R') rounds = parse_num("rounds", optarg, 2, 1000000); /* t[] in the arena */
    if (ch == 't') tasks = parse_num("tasks", optarg, 1, 100000);
    if (ch == 'l') o->local_size = parse_num("local-size", optarg, 1, 1024);
    if (ch == 'l' && (o->local_size & (o->local_size - 1))) { /* the runtime's rule, said now */
      fprintf(stderr, "coop-bench-micro: --local-size: %s is not a power of two\n", optarg);
      exit(2);
    }
    if (ch == 'c') o->csv = optarg;
    if (ch == 'q') o->quick = 1;
    if (ch == 'o' && strcmp(optarg, "host") && strcmp(optarg, "arena")) {
      fprintf(stderr, "coop-bench-micro: --out-buffer: '%s' is not host or arena\n", optarg);
      exit(2);
    }
    if (ch == 'o') o->out_arena = !strcmp(optarg, "arena");
    if (ch == 'h') {
      usage(stdout);
      exit(0);
    }
    if (ch == '?') {
      fprintf(stderr, "coop-bench-micro: unknown option or missing value: '%s'\n",
              argv[optind - 1]);
      fprintf(stderr, "try: coop-bench-micro --help\n");
      exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "coop-bench-micro: unexpected argument '%s'\n", argv[optind]);
    fprintf(stderr, "try: coop-bench-micro --help\n");
    exit(2);
  }
  if (o->backend && strcmp(o->backend, "auto") && strcmp(o->backend, "opencl") &&
      strcmp(o->backend, "cuda")) {
    fprintf(stderr, "coop-bench-micro: --backend: '%s' is not auto, opencl or cuda\n", o->backend);
    exit(2);
  }
  o->reps = reps ? reps : o->quick ? 200 : 1000;
  o->rounds = rounds ? rounds : o->quick ? 200 : 1000;
  o->tasks = tasks ? tasks : o->quick ? 2 : 5;
}

/* ------------------------------------------------------------ samples */

/* Nearest rank: the smallest sample with at least p of them at or below. */
static double rank(const double *v, size_t n, double p) {
  size_t i = (size_t)ceil(p * (double)n);
  return v[i ? i - 1 : 0];
}

struct stats {
  size_t n;
  double med, p10, p90, p99, p999, max;
};

static struct stats stats_of(struct series *s) {
  struct stats t = {s->n, NAN, NAN, NAN, NAN, NAN, NAN};
  if (!s->n) return t;
  qsort(s->v, s->n, sizeof *s->v, cmp_dbl);
  t.med = rank(s->v, s->n, .5);
  t.p10 = rank(s->v, s->n, .1);
  t.p90 = rank(s->v, s->n, .9);
  t.p99 = rank(s->v, s->n, .99);
  t.p999 = rank(s->v, s->n, .999);
  t.max = s->v[s->n - 1];
  return t;
}

static void print_stats(struct stats t, double unit) {
  printf(" %7zu %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f", t.n, t.med / unit, t.p10 / unit, t.p90 / unit,
         t.p99 / unit, t.p999 / unit, t.max / unit);
}

/* ------------------------------------------------------------- machine */

/* ---------------------------------------------------------------- bench */

struct bench {
  struct opts o;
  coop_rt *rt;
  FILE *csv;
  const char *backend;
  int knop, kbar;
  unsigned workers;
};

static void csv_row(struct bench *b, const char *section, const char *quantity, const char *variant,
                    unsigned groups, long task, long index, double ns) {
  fprintf(b->csv, "%s,%s,%s,%s,%u,%ld,%ld,%.1f\n", b->backend, section, quantity, variant, groups,
          task, index, ns);
}

/* The report's header, one string: printed on stdout and, as comments, at
 * the top of the CSV file. */
static void make_header(struct bench *b, char *h, size_t n) {
  char date[64], cus[64] = "";
  struct machine mc;
  machine_of(&mc);
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
  const char *pocl = getenv("POCL_MAX_PTHREAD_COUNT");
  if (pocl && !strcmp(b->backend, "opencl"))
    snprintf(cus, sizeof cus, " (POCL_MAX_PTHREAD_COUNT=%s)", pocl);
  snprintf(h, n,
           "machine: %s, %s, %s, %ld cores online\n"
           "device: %s\n"
           "backend: %s (%s)\n"
           "compute units %u%s, launched %u workgroups, %u participants (1 scheduler + %u "
           "workers), local size %u, device clock %.4f ns/tick\n"
           "commit: %s (at build time); run %s\n"
           "mode: %s; reps %ld, rounds %ld, tasks %ld\n",
           mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), coop_rt_device_name(b->rt),
           b->backend, coop_rt_backend_note(b->rt), coop_rt_compute_units(b->rt), cus,
           coop_rt_launched_groups(b->rt), coop_rt_participants(b->rt), b->workers,
           coop_rt_local_size(b->rt), coop_rt_tick_ns(b->rt), COOP_BENCH_COMMIT, date,
           b->o.quick ? "quick" : "full", b->o.reps, b->o.rounds, b->o.tasks);
}

/* Each line of h, after "# ". */
static void put_comment(FILE *f, const char *h) {
  for (const char *l = h; *l;) {
    size_t len = strcspn(l, "\n");
    fprintf(f, "# %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
}

/* Waits for a task and reads its record; 0 if it ended DONE. */
static int finish(struct bench *b, coop_task_id id, int timeout_ms, struct coop_rt_task_info *ti) {
  int r = coop_rt_wait(b->rt, id, timeout_ms);
  if (r) {
    fprintf(stderr, "coop-bench-micro: wait: %s\n", coop_strerror(r));
    coop_rt_dump(b->rt, stderr);
    return r;
  }
  r = coop_rt_task_info(b->rt, id, ti);
  coop_rt_task_release(b->rt, id);
  if (!r && ti->state != COOP_TASK_DONE) {
    fprintf(stderr, "coop-bench-micro: task ended in state %d (refusal %d), not DONE\n",
            (int)ti->state, (int)ti->refusal);
    return COOP_EINVAL;
  }
  return r;
}

static int submit(struct bench *b, const struct coop_rt_task_desc *d, coop_task_id *id) {
  int r = coop_rt_submit(b->rt, d, id);
  if (r) fprintf(stderr, "coop-bench-micro: submit: %s\n", coop_strerror(r));
  return r;
}

/* ------------------------------------------------------------ dispatch */

/* Which clock each quantity reads: D_REL and D_BACK compare the host clock
 * with device events mapped to it by the runtime's launch-time calibration,
 * so they carry that mapping's error e, with opposite signs: D_HOST, their
 * sum, does not. D_GATH, D_START, D_RUN are device clock alone; D_TRIP and
 * D_HOST host clock alone. */
enum { D_REL, D_GATH, D_START, D_RUN, D_BACK, D_HOST, D_TRIP, D_N };
static const char *const d_csv[D_N] = {
    "submit_released",        "released_gathered", "gathered_started",    "started_finished",
    "finished_wait_returned", "host_legs",         "submit_wait_returned"};
static const char *const d_label[D_N] = {
    "submit -> released (host->sched) *",  "released -> gathered",
    "gathered -> started (sched->worker)", "started -> finished (kernel)",
    "finished -> wait returns *",          "both * (trip - released..finished)",
    "submit -> wait returns (round trip)"};

/* One no-op task of k groups, tagged; fills v[D_N] in ns. */
static int dispatch_once(struct bench *b, uint32_t *out, unsigned k, uint32_t tag, double *v) {
  struct coop_rt_task_desc d = {.kernel = b->knop, .groups = k, .nargs = 2};
  d.args[0] = coop_rt_buf_arg(b->rt, out);
  d.args[1] = tag;
  coop_task_id id;
  struct coop_rt_task_info ti;
  int64_t t0 = now_ns();
  if (submit(b, &d, &id)) return 1;
  int r = finish(b, id, WAIT_MS, &ti);
  int64_t t1 = now_ns();
  if (r) return 1;
  for (unsigned g = 0; g < k; g++)
    if (out[SLOT * g] != tag) {
      fprintf(stderr, "coop-bench-micro: no-op task of %u groups: group %u did not run\n", k, g);
      return 1;
    }
  v[D_REL] = (double)(ti.t_released - ti.t_submitted);
  v[D_GATH] = (double)ti.gather_ns; /* device clock at both ends: no calibration error */
  v[D_START] = (double)(ti.t_started - ti.t_gathered);
  v[D_RUN] = (double)(ti.t_finished - ti.t_started);
  v[D_BACK] = (double)(t1 - ti.t_finished);
  v[D_HOST] = v[D_REL] + v[D_BACK];
  v[D_TRIP] = (double)(t1 - t0);
  return 0;
}

/* If the calibration error e (mapped device time - true time) was constant,
 * released >= submitted and finished <= wait's return bound it:
 * -min(finished -> wait returns) <= e <= min(submit -> released). An empty
 * interval means it drifted during the run. */
static void print_offset(struct series *s) {
  double lo = INFINITY, hi = INFINITY;
  for (size_t i = 0; i < s[D_REL].n; i++) {
    hi = fmin(hi, s[D_REL].v[i]);
    lo = fmin(lo, s[D_BACK].v[i]);
  }
  printf("%-36s %5s  calibration error e, if constant, in [%.3f, %.3f]%s\n", "", "", -lo / 1e3,
         hi / 1e3, -lo > hi ? " (empty: it drifted)" : "");
}

static int bench_dispatch(struct bench *b, unsigned k, uint32_t *out, uint32_t *tag) {
  struct series s[D_N];
  double v[D_N];
  int rc = 0;
  memset(s, 0, sizeof s);
  for (long i = 0; i < WARMUP + b->o.reps && !rc; i++) {
    rc = dispatch_once(b, out, k, ++*tag, v);
    for (int q = 0; q < D_N && !rc && i >= WARMUP; q++) {
      push(&s[q], v[q]);
      csv_row(b, "dispatch", d_csv[q], "-", k, i - WARMUP, 0, v[q]);
    }
  }
  for (int q = 0; q < D_N && !rc; q++) {
    printf("%-36s %5u", d_label[q], k);
    print_stats(stats_of(&s[q]), 1e3);
    printf("\n");
  }
  if (!rc) print_offset(s); /* minima: sorting did not change them */
  for (int q = 0; q < D_N; q++) free(s[q].v);
  return rc;
}

/* The floor under every dispatch: the host bumps ping, the scheduler's
 * next pass answers; host clock alone. */
static int bench_ping(struct bench *b) {
  struct series s = {0};
  for (long i = 0; i < WARMUP + b->o.reps; i++) {
    int64_t ns = coop_rt_ping_ns(b->rt);
    if (ns < 0) {
      fprintf(stderr, "coop-bench-micro: the scheduler did not answer a ping\n");
      free(s.v);
      return 1;
    }
    if (i < WARMUP) continue;
    push(&s, (double)ns);
    csv_row(b, "dispatch", "ping_round_trip", "-", 0, i - WARMUP, 0, (double)ns);
  }
  printf("%-36s %5s", "ping: host -> scheduler -> host", "-");
  print_stats(stats_of(&s), 1e3);
  printf("\n");
  free(s.v);
  return 0;
}

static int run_dispatch(struct bench *b) {
  size_t bytes = (size_t)b->workers * SLOT * sizeof(uint32_t);
  uint32_t *out = b->o.out_arena ? coop_rt_alloc(b->rt, bytes) : coop_rt_alloc_host(b->rt, bytes);
  uint32_t tag = 0;
  if (!out) return 1;
  printf("\nDispatch: a no-op non-cooperative task of K groups on an idle megakernel, us\n");
  printf("(its result, checked by the host after each task, in a buffer of %s)\n",
         b->o.out_arena ? "coop_rt_alloc, placed for the device" : "coop_rt_alloc_host");
  printf("(%ld per K after %d unrecorded; 'submit' is the host's clock before coop_rt_submit\n",
         b->o.reps, WARMUP);
  printf("for the round trip, the runtime's t_submitted otherwise; * = host clock against\n");
  printf("device events mapped by the launch-time calibration: both carry its error e)\n");
  printf("%-36s %5s %7s %9s %9s %9s %9s %9s %9s\n", "quantity", "K", "n", "median", "p10", "p90",
         "p99", "p99.9", "max");
  int rc = bench_dispatch(b, 1, out, &tag);
  sched_prof_print(b->rt); /* totals so far: K = 1 alone, then again with the rest */
  if (!rc && b->workers > 1) rc = bench_dispatch(b, b->workers, out, &tag);
  if (!rc) rc = bench_ping(b);
  sched_prof_print(b->rt);
  coop_rt_free(b->rt, out);
  return rc;
}

/* ------------------------------------------------------------ barriers */

struct variant {
  const char *name;
  uint32_t prim;
  int query;
};
static const struct variant variants[] = {
    {"global", 8u /* COOP_GLOBAL_BARRIER */, 0},
    {"resizing", 16u /* COOP_RESIZING_BARRIER */, 0},
    {"resizing_query", 16u, 1},
};

struct bar_samples {
  struct series each, mean, host; /* ns per barrier */
};

/* Checks that all m groups ran every round at width m; 0 if so. */
static int check_bar(const uint32_t *seen, unsigned m, long rounds,
                     const struct coop_rt_task_info *ti) {
  for (unsigned g = 0; g < m; g++)
    if (seen[SLOT * g] != (uint32_t)rounds + 1u || seen[SLOT * g + 1]) {
      fprintf(stderr,
              "coop-bench-micro: barrier task M=%u: group %u saw %u rounds, %u at another M\n", m,
              g, seen[SLOT * g], seen[SLOT * g + 1]);
      return 1;
    }
  if (ti->m_initial != m || ti->m_min != m || ti->m_max != m) {
    fprintf(stderr, "coop-bench-micro: barrier task M=%u ran at M %u (min %u, max %u)\n", m,
            ti->m_initial, ti->m_min, ti->m_max);
    return 1;
  }
  return 0;
}

/* COOP_DEVICE_DEFINES=COOP_PROF_BAR (docs/scheduler.md, "Profile"): the
 * step loop's legs of workgroups 0 (the master) and 1, ns per step, the
 * cycles converted by the ratio of the device clock to the cycles over
 * the same span. */
static void bar_prof_print(struct bench *b, const struct variant *va, unsigned m, long task) {
  static const char *const leg[] = {"loop", "step", "arrive", "wait", "after"};
  const char *defs = getenv("COOP_DEVICE_DEFINES");
  uint64_t p[16];
  if (!defs || !strstr(defs, "COOP_PROF_BAR") || coop_rt_sched_profile(b->rt, p, 16) != 16) return;
  for (unsigned g = 0; g < 2 && g < m; g++) {
    const uint64_t *q = p + 1 + 7 * g;
    double ns = (double)(q[6] >> 32) * coop_rt_tick_ns(b->rt), cyc = (double)(q[6] & 0xffffffffu);
    if (!q[5] || cyc <= 0) continue;
    double per = ns / cyc / (double)q[5], sum = 0;
    printf("legs %s M=%u task %ld wg %u (%llu steps, %.3f ns/cycle):", va->name, m, task, g,
           (unsigned long long)q[5], ns / cyc);
    for (int k = 0; k < 5; k++) {
      printf(" %s %.0f", leg[k], (double)q[k] * per);
      sum += (double)q[k] * per;
    }
    printf(" = %.0f ns\n", sum);
  }
}

/* One task of R barriers at width m; appends its samples. Barrier 0 (from
 * step 0 to step 1) is left out: it also absorbs the groups' start skew. */
static int bar_task(struct bench *b, const struct variant *va, unsigned m, long task, uint64_t *t,
                    uint32_t *seen, struct bar_samples *bs) {
  long R = b->o.rounds;
  memset(t, 0, (size_t)(R + 1) * sizeof *t);
  memset(seen, 0, (size_t)b->workers * SLOT * sizeof *seen);
  struct coop_rt_task_desc d = {
      .kernel = b->kbar, .groups = m, .cooperative = 1, .query_barrier = va->query, .nargs = 5};
  d.args[0] = coop_rt_buf_arg(b->rt, t);
  d.args[1] = coop_rt_buf_arg(b->rt, seen);
  d.args[2] = (uint64_t)R;
  d.args[3] = va->prim;
  d.args[4] = m;
  coop_task_id id;
  struct coop_rt_task_info ti;
  /* PoCL on few cores: a barrier can wait for an OS time slice (ms) */
  int timeout = WAIT_MS + (int)(R < 100000 ? R : 100000) * 20;
  if (submit(b, &d, &id) || finish(b, id, timeout, &ti) || check_bar(seen, m, R, &ti)) return 1;
  bar_prof_print(b, va, m, task);
  double tick = coop_rt_tick_ns(b->rt), host = (double)(ti.t_finished - ti.t_started) / (double)R;
  push(&bs->host, host);
  csv_row(b, "barrier", "host_mean", va->name, m, task, 0, host);
  if (t[1] == 0 || tick <= 0.0) return 0; /* no device clock: host figure only */
  for (long r = 1; r < R; r++) {
    double ns = (double)(int64_t)(t[r + 1] - t[r]) * tick;
    push(&bs->each, ns);
    csv_row(b, "barrier", "per_barrier", va->name, m, task, r, ns);
  }
  double mean = (double)(int64_t)(t[R] - t[1]) * tick / (double)(R - 1);
  push(&bs->mean, mean);
  csv_row(b, "barrier", "device_mean", va->name, m, task, 0, mean);
  return 0;
}

static int bench_barrier(struct bench *b, const struct variant *va, unsigned m, uint64_t *t,
                         uint32_t *seen) {
  struct bar_samples bs;
  memset(&bs, 0, sizeof bs);
  int rc = 0;
  for (long k = 0; k < b->o.tasks && !rc; k++) rc = bar_task(b, va, m, k, t, seen, &bs);
  if (!rc) {
    struct stats mean = stats_of(&bs.mean), host = stats_of(&bs.host);
    printf("%-15s %5u", va->name, m);
    print_stats(stats_of(bs.each.n ? &bs.each : &bs.host), 1.0);
    printf(" %9.1f %9.1f\n", mean.med, host.med);
  }
  free(bs.each.v);
  free(bs.mean.v);
  free(bs.host.v);
  return rc;
}

/* M = 1, 2, 4, ... below W, then W. */
static unsigned next_m(unsigned m, unsigned w) { return m >= w ? 0 : 2 * m < w ? 2 * m : w; }

static int run_barriers(struct bench *b) {
  uint64_t *t = coop_rt_alloc(b->rt, (size_t)(b->o.rounds + 1) * sizeof *t);
  uint32_t *seen = coop_rt_alloc(b->rt, (size_t)b->workers * SLOT * sizeof *seen);
  if (!t || !seen) {
    fprintf(stderr, "coop-bench-micro: arena too small for %ld rounds\n", b->o.rounds);
    return 1;
  }
  printf(
      "\nBarriers: R = %ld rounds of (a store per group + barrier), %ld tasks per row, ns "
      "per barrier\n",
      b->o.rounds, b->o.tasks);
  printf(
      "(n, median..max: each barrier, device clock of workgroup 0, barrier 0 left out;\n"
      " without a device clock, per task (t_finished - t_started) / R;\n"
      " dev_mean: median over tasks of (t[R] - t[1]) / (R - 1); host: of (t_finished - "
      "t_started) / R)\n");
  printf("%-15s %5s %7s %9s %9s %9s %9s %9s %9s %9s %9s\n", "variant", "M", "n", "median", "p10",
         "p90", "p99", "p99.9", "max", "dev_mean", "host");
  int rc = 0;
  for (size_t v = 0; v < sizeof variants / sizeof variants[0] && !rc; v++)
    for (unsigned m = 1; m && !rc; m = next_m(m, b->workers))
      rc = bench_barrier(b, &variants[v], m, t, seen);
  coop_rt_free(b->rt, t);
  coop_rt_free(b->rt, seen);
  return rc;
}

/* ----------------------------------------------------------------- main */

static FILE *open_csv(struct bench *b, const char *header) {
  char def[256];
  snprintf(def, sizeof def, "bench/out/micro-%s.csv", b->backend);
  const char *path = b->o.csv ? b->o.csv : def;
  make_parent(path);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "coop-bench-micro: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  printf("csv: %s\n", path);
  put_comment(f, header);
  fprintf(f, "backend,section,quantity,variant,groups,task,index,value_ns\n");
  return f;
}

static int open_rt(struct bench *b) {
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  o.backend = b->o.backend;
  o.local_size = (unsigned)b->o.local_size;
  int r = coop_rt_open(&b->rt, &o);
  b->knop = r ? r : coop_rt_add_kernel(b->rt, "micro_nop", 0, coop_bench_src_micro_nop_cl);
  b->kbar = b->knop < 0 ? b->knop
                        : coop_rt_add_kernel(b->rt, "micro_bar", 1, coop_bench_src_micro_bar_cl);
  r = b->kbar < 0 ? b->kbar : coop_rt_launch(b->rt);
  if (r) {
    fprintf(stderr, "coop-bench-micro: %s\n%s\n", coop_strerror(r),
            b->rt ? coop_rt_errmsg(b->rt) : "");
    return 1;
  }
  b->workers = coop_rt_workers(b->rt);
  b->backend = coop_rt_backend(b->rt);
  return 0;
}

int main(int argc, char **argv) {
  struct bench b = {.o = {.local_size = 0}};
  char header[4096];
  b.o.backend = getenv("COOP_BACKEND");
  if (b.o.backend && !*b.o.backend) b.o.backend = NULL;
  parse_args(argc, argv, &b.o);
  int rc = open_rt(&b);
  if (!rc) {
    make_header(&b, header, sizeof header);
    printf("coop-bench-micro\n%s", header);
    if (!(b.csv = open_csv(&b, header))) rc = 1;
  }
  if (!rc) rc = run_dispatch(&b);
  if (!rc) rc = run_barriers(&b);
  if (b.csv && fclose(b.csv)) rc = 1;
  if (b.rt && coop_rt_close(b.rt)) rc = 1;
  if (rc) fprintf(stderr, "coop-bench-micro: FAILED\n");
  return rc ? 1 : 0;
}
