/*
 * side.c: coop-bench-side (issue 6 item 4): the same graphics-like kernel
 * (kernels/apps/matmul.cl) released every P beside the same long kernel
 * (an application of apps/ in the coop megakernel), in the setups
 * a user has today on an NVIDIA GPU and in ours, one after the other in one
 * run (side.h lists them; bench/README.md says why each is built as it is).
 *
 * This file: the options, the calibration, the header and the frame that
 * runs the setups of side_setups.c in its order. (0) the plain matmul
 * alone, before anything else touches the GPU; the child of (a) started
 * (its context built and warmed up on the idle GPU, then idle); the
 * megakernel launched; then every setup beside it in the table's order
 * (the long kernel alone; (0c) the coop task alone at each K; (a), (b), (c)
 * at each K, (d)), each a window of the long kernel back to back for at
 * least --window seconds with the graphics tasks released throughout;
 * then the megakernel closed and the setups whose long kernel runs
 * elsewhere ((e) green contexts, (f) MPS).
 *
 * Every long-kernel run is checked against the CPU reference after its
 * window, and the first graphics task of every window writes a separate,
 * NaN-filled buffer that is checked against the CPU (exit status 1 if any
 * is wrong, or if a run or task fails). Nothing is asserted about time.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "side_setup.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

/* ------------------------------------------------------------ options */

static void usage(FILE *f) {
  fprintf(f, "usage: " SB
             " [options]\n"
             "One graphics-like kernel (kernels/apps/matmul.cl) released every P beside\n"
             "one long kernel (an application of apps/ in the coop megakernel),\n"
             "on an NVIDIA GPU (CUDA backend), in one run:\n"
             "  (0)   alone       the matmul as a plain CUDA kernel on the idle GPU\n"
             "  long  long        the long kernel alone, back to back\n"
             "  (0c)  coop-alone  the matmul as a coop task of K groups, idle megakernel\n"
             "  (a)   process     plain CUDA matmul from a second process beside the long\n"
             "                    kernel (the driver time-slices between the contexts)\n"
             "  (b)   stream      plain CUDA matmul on another stream (default priority) of\n"
             "                    the long kernel's process (it fills the SM slots the\n"
             "                    megakernel leaves free)\n"
             "  (c)   coop        ours: a non-cooperative coop task of K groups, gathered\n"
             "                    from the cooperative long kernel\n"
             "  (d)   prio        as (b), on the context's highest-priority stream\n"
             "  (e)   green       CUDA green contexts: the matmul on k SMs, the long kernel\n"
             "                    (a megakernel of its own) on the others; also the long\n"
             "                    kernel alone there; needs a 12.4+ driver (else skipped)\n"
             "  (f)   mps         MPS: the long kernel and the matmul as two client\n"
             "                    processes of an MPS daemon started (and stopped) here,\n"
             "                    with no limits and with 90/10 active threads; needs\n"
             "                    nvidia-cuda-mps-control on PATH (else skipped)\n"
             "The plain matmul is the same source compiled alone with NVRTC through\n"
             "device/dialect.h; n and reps are calibrated so that it takes E on the idle GPU\n"
             "with G blocks. Per setup: task latency (release -> the host sees it done)\n"
             "p50/p90/p99/max, execution, gather (coop), achieved period, deadline misses\n"
             "(done after release + P), and the long kernel's run time, slowdown and\n"
             "throughput against running alone. Every long-kernel run and the first task of\n"
             "every window are checked against the CPU. Timing is never asserted.\n"
             "Output: header and tables on stdout; bench/out/side-cuda.csv (every sample),\n"
             ".md (the tables) and .png (gnuplot, if installed).\n"
             "Options:\n"
             "  --period MS        release period P (default 16.7: 60 fps)\n"
             "  --window S         each window lasts at least S seconds (default 3)\n"
             "  --exec-ms E        the matmul's target time alone, plain, G blocks (default 2)\n"
             "  --k LIST           K for (0c) and (c), comma-separated: a number, N, N/D or\n"
             "                     N-D, N the megakernel's workers (default N/2)\n"
             "  --grid G           blocks of the plain launch (default 2 x SMs, the workers\n"
             "                     the megakernel's default launch gets)\n"
             "  --matrix N         matmul size (default 4G, at least 48, halved while one\n"
             "                     repetition takes more than E / 4)\n"
             "  --app NAME         the long kernel's application (default bfs)\n"
             "  --input I          its input index (default 1: the road graph)\n"
             "  --scale S          input scale 0..12 (default 12: road 1024 x 1024)\n"
             "  --barrier B        plain or query: the resizing barrier (default query)\n"
             "  --ahead US         (c): gather each task's K groups from US before its next\n"
             "                     release until it starts (coop_rt_task_desc.next_ns;\n"
             "                     default 500, 0 = off: gathered only once released)\n"
             "  --min-runs R       long-kernel runs per window at least (default 3)\n"
             "  --setups LIST      which of alone,long,coop-alone,process,stream,coop,prio,\n"
             "                     coop-alone-ahead0,coop-ahead0 (as coop-alone and coop\n"
             "                     with --ahead 0), green,mps, or all (default: all but\n"
             "                     the ahead0 ones, green and mps)\n"
             "  --green-sms K      (e): the matmul's SMs (default: the smallest of 8, 16,\n"
             "                     32, 64 whose latency p50 alone there is within P)\n"
             "  --local-size L     threads per workgroup, both forms (default 64)\n"
             "  --launch-groups W  workgroups the megakernel launches (default: the\n"
             "                     runtime's, 2 x SMs + 1)\n"
             "  --carveout PCT     the plain kernel's preferred shared-memory carveout, 0\n"
             "                     (most L1) to 100 (default: the driver's choice)\n"
             "  --device I         CUDA device index (default 0)\n"
             "  --timeout S        seconds one run or task may take (default 120)\n"
             "  --csv FILE         CSV output; the .md and .png go beside it (FILE less .csv)\n"
             "  --source           print the standalone matmul source and exit\n"
             "  --compile-only     build it with NVRTC for sm_90 (no GPU needed) and exit\n"
             "  --report CSV       no run: the tables, .md and .png again from a CSV of this\n"
             "                     bench (written beside it; no GPU needed)\n"
             "  --help             this text\n"
             "Exit status: 0; 1 on a failed or wrong run or task (or no usable GPU); 2 on a\n"
             "bad command line.\n");
}

static void bad(const char *fmt, const char *a) {
  fprintf(stderr, SB ": ");
  fprintf(stderr, fmt, a);
  fprintf(stderr, "\ntry: " SB " --help\n");
  exit(2);
}

static long parse_num(const char *name, const char *s, long lo, long hi) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    char m[128];
    snprintf(m, sizeof m, "--%s: '%%s' is not an integer in %ld..%ld", name, lo, hi);
    bad(m, s);
  }
  return v;
}

static double parse_real(const char *name, const char *s, double lo, double hi) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) {
    char m[128];
    snprintf(m, sizeof m, "--%s: '%%s' is not a number in [%g, %g]", name, lo, hi);
    bad(m, s);
  }
  return v;
}

/* One K token against N workers: "12", "N", "N/4", "N-1". 0 if bad. */
static unsigned k_value(const char *t, size_t len, unsigned workers) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return 0;
  memcpy(buf, t, len);
  buf[len] = 0;
  char *end = NULL;
  if (buf[0] != 'N') {
    long v = strtol(buf, &end, 10);
    return *end || v < 1 || v > 100000 ? 0 : (unsigned)v;
  }
  if (!buf[1]) return workers ? workers : 1;
  if (buf[1] != '/' && buf[1] != '-') return 0;
  long d = strtol(buf + 2, &end, 10);
  if (*end || d < 1 || d > 100000 || end == buf + 2) return 0;
  if (!workers) return 1; /* syntax check only */
  long v = buf[1] == '/' ? (long)workers / d : (long)workers - d;
  return v < 1 ? 1u : (unsigned)v;
}

/* K list against N (N = 0: syntax only); returns the count of distinct K. */
static int k_list(const char *list, unsigned workers, unsigned *ks, char labels[][16]) {
  int n = 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    unsigned k = k_value(p, len, workers);
    if (!k) return -1;
    if (workers && k > workers) k = workers;
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= ks[i] == k;
    if (!dup) {
      if (n == MAXK) return -1;
      ks[n] = k;
      snprintf(labels[n], 16, "%.*s", (int)(len < 15 ? len : 15), p);
      n++;
    }
    p += len + (p[len] == ',');
  }
  return n;
}

static unsigned setups_of(const char *list) {
  unsigned m = 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    int i = 0;
    if (len == 3 && !strncmp(p, "all", 3)) {
      for (i = 0; i < S_COUNT; i++)
        if (!(side_setups[i].flags & SETUP_HIDDEN)) m |= 1u << i;
      p += len + (p[len] == ',');
      continue;
    }
    while (i < S_COUNT && ((side_setups[i].flags & SETUP_HIDDEN) ||
                           strlen(side_setups[i].id) != len || strncmp(p, side_setups[i].id, len)))
      i++;
    if (i == S_COUNT)
      bad("--setups: '%s' names a setup other than all, alone, long, coop-alone, "
          "process, stream, coop, prio, coop-alone-ahead0, coop-ahead0, green, mps",
          list);
    m |= 1u << i;
    p += len + (p[len] == ',');
  }
  if (!m) bad("--setups: '%s' names none", list);
  return m;
}

/* The setups run when --setups is not given. */
static unsigned default_setups(void) {
  unsigned m = 0;
  for (int i = 0; i < S_COUNT; i++)
    if (!(side_setups[i].flags & (SETUP_HIDDEN | SETUP_EXTRA))) m |= 1u << i;
  return m;
}

int side_parse(int argc, char **argv, struct sopts *o) {
  static const struct option lo[] = {
      {"period", 1, 0, 'P'},
      {"window", 1, 0, 'W'},
      {"exec-ms", 1, 0, 'E'},
      {"k", 1, 0, 'k'},
      {"grid", 1, 0, 'g'},
      {"matrix", 1, 0, 'm'},
      {"app", 1, 0, 'a'},
      {"input", 1, 0, 'i'},
      {"scale", 1, 0, 'S'},
      {"barrier", 1, 0, 'B'},
      {"min-runs", 1, 0, 'r'},
      {"setups", 1, 0, 's'},
      {"local-size", 1, 0, 'l'},
      {"launch-groups", 1, 0, 'L'},
      {"device", 1, 0, 'd'},
      {"timeout", 1, 0, 't'},
      {"csv", 1, 0, 'o'},
      {"source", 0, 0, 'X'},
      {"compile-only", 0, 0, 'C'},
      {"report", 1, 0, 'R'},
      {"carveout", 1, 0, 'c'},
      {"ahead", 1, 0, 'A'},
      {"green-sms", 1, 0, 'G'},
      {"help", 0, 0, 'h'},
      {0, 0, 0, 0},
  };
  int ch, action = 0;
  opterr = 0;
  const char *inexact = inexact_option(argc, argv, lo);
  if (inexact) bad("unknown option '%s'", inexact);
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
      case 'h':
        usage(stdout);
        exit(0);
      case 'P':
        o->period_ms = parse_real("period", optarg, 0.1, 10000);
        break;
      case 'W':
        o->window_s = parse_real("window", optarg, 0.1, 600);
        break;
      case 'E':
        o->exec_ms = parse_real("exec-ms", optarg, 0.01, 10000);
        break;
      case 'k':
        o->klist = optarg;
        break;
      case 'g':
        o->grid = parse_num("grid", optarg, 1, 1 << 20);
        break;
      case 'm':
        o->matrix = parse_num("matrix", optarg, 48, 4096);
        break;
      case 'a':
        o->app = optarg;
        break;
      case 'i':
        o->input = parse_num("input", optarg, 0, 1000);
        break;
      case 'S':
        o->scale = parse_num("scale", optarg, 0, 12);
        break;
      case 'B':
        if (strcmp(optarg, "plain") && strcmp(optarg, "query"))
          bad("--barrier: '%s' is not plain or query", optarg);
        o->query = !strcmp(optarg, "query");
        break;
      case 'r':
        o->min_runs = parse_num("min-runs", optarg, 1, 100000);
        break;
      case 's':
        o->setups = setups_of(optarg);
        break;
      case 'l':
        o->local = parse_num("local-size", optarg, 32, 1024);
        break;
      case 'L':
        o->launch_groups = parse_num("launch-groups", optarg, 2, 1 << 20);
        break;
      case 'd':
        o->device = parse_num("device", optarg, 0, 1024);
        break;
      case 'A':
        o->ahead_us = parse_num("ahead", optarg, 0, 1000000);
        break;
      case 'G':
        o->green_sms = parse_num("green-sms", optarg, 1, 100000);
        break;
      case 'c':
        o->carveout = parse_num("carveout", optarg, 0, 100);
        break;
      case 't':
        o->timeout_s = parse_num("timeout", optarg, 1, 86400);
        break;
      case 'o':
        o->csv = optarg;
        break;
      case 'X':
        action = 1;
        break;
      case 'C':
        action = 2;
        break;
      case 'R':
        o->report = optarg;
        action = 3;
        break;
      default:
        bad("unknown option or missing value%s", "");
    }
  }
  if (optind != argc) bad("unexpected argument '%s'", argv[optind]);
  unsigned ks[MAXK];
  char labels[MAXK][16];
  if (k_list(o->klist, 0, ks, labels) <= 0)
    bad("--k: '%s' is not a list of numbers, N, N/D or N-D (at most 16)", o->klist);
  if (!coop_app_find(o->app)) bad("--app: no application '%s' in this build", o->app);
  return action;
}

/* -------------------------------------------------------- calibration */

/* n = --matrix, or 4G (at least 48) halved while reps < 4 and n / 2 >=
 * max(48, G); reps so that one plain launch of G blocks takes E, from one
 * repetition's median, then rescaled once from the median of 5. */
static int calibrate(struct bench *b) {
  struct plain *p = &b->p;
  const struct sopts *o = b->o;
  uint32_t n = o->matrix ? (uint32_t)o->matrix : 4 * p->grid;
  n = n < 48 ? 48 : n > 4096 ? 4096 : n;
  uint32_t floor = p->grid < 48 ? 48 : p->grid;
  double target = o->exec_ms * 1e6;
  for (;;) {
    double ns = 0;
    if (plain_data(p, n)) return 1;
    p->reps = 1;
    if (plain_measure(p, 3, &ns)) return 1;
    double reps = ns > 0 ? round(target / ns) : 1;
    p->reps = reps < 1 ? 1u : reps > (1 << 24) ? (1u << 24) : (uint32_t)reps;
    if (p->reps < 4 && !o->matrix && n / 2 >= floor) {
      n /= 2;
      continue;
    }
    if (plain_measure(p, 5, &ns)) return 1;
    if (ns > 0) {
      reps = round(p->reps * target / ns);
      p->reps = reps < 1 ? 1u : reps > (1 << 24) ? (1u << 24) : (uint32_t)reps;
    }
    if (plain_measure(p, 5, &ns)) return 1;
    b->e_plain_ms = ns / 1e6;
    return 0;
  }
}

/* ------------------------------------------------------------- header */

static void make_header(struct bench *b, const char *load, const char *date) {
  unsigned *ks = b->ks;
  char(*labels)[16] = b->klabels;
  int nk = b->nk;
  const struct sopts *o = b->o;
  char kstr[256] = "", carve[32] = "driver default";
  if (o->carveout >= 0) snprintf(carve, sizeof carve, "%ld%% shared", o->carveout);
  struct machine mc;
  machine_of(&mc);
  for (int i = 0; i < nk; i++)
    snprintf(kstr + strlen(kstr), sizeof kstr - strlen(kstr), "%s%u (%s)", i ? ", " : "", ks[i],
             labels[i]);
  snprintf(header, sizeof header,
           "machine: %s, %s, %s, %ld cores online, load average %s at start\n"
           "device: %s, %d SMs, compute capability %d.%d, CUDA driver %d.%d\n"
           "backend: %s (%s)\n"
           "megakernel: launched %u workgroups, %u participants (1 scheduler + %u workers), "
           "local size %ld, device clock %.4f ns/tick\n"
           "commit: %s (at build time); run %s\n"
           "graphics task: matmul.cl, n %u, reps %u; plain launch %u blocks x %ld threads "
           "(carveout %s): %.3f ms alone (target E %.3g ms); coop task on all %u workers: "
           "%.3f ms\n"
           "period P %.4g ms, window >= %.4g s, K = %s, gathering ahead %ld us\n"
           "long kernel: %s (cooperative form, %s resizing barrier) on %s (%u vertices, %u "
           "edges), all %u workers, back to back, >= %ld runs per window\n"
           "command: %s\n",
           mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), load, b->p.name, b->p.sms,
           b->p.cc_major, b->p.cc_minor, b->p.driver / 1000, b->p.driver % 1000 / 10,
           coop_rt_backend(b->rt), coop_rt_backend_note(b->rt), coop_rt_launched_groups(b->rt),
           coop_rt_participants(b->rt), b->workers, o->local, coop_rt_tick_ns(b->rt),
           COOP_BENCH_COMMIT, date, b->p.n, b->p.reps, b->p.grid, o->local, carve, b->e_plain_ms,
           o->exec_ms, b->workers, b->e_coop_all_ms, o->period_ms, o->window_s, kstr, o->ahead_us,
           b->app->name, o->query ? "query" : "plain", b->in.label, b->in.graph.n, b->in.graph.m,
           b->workers, o->min_runs, o->cmd);
}

/* --------------------------------------------------------------- main */

static int selected(const struct sopts *o, int i) { return (o->setups >> i) & 1u; }

/* Each selected setup of one phase, in the table's order. */
static int run_phase(struct bench *b, unsigned with, unsigned without) {
  for (int i = 0; i < S_COUNT; i++) {
    const struct side_setup *s = &side_setups[i];
    if (!selected(b->o, i) || !s->run || (s->flags & with) != with || (s->flags & without))
      continue;
    if (s->run(b, i)) return 1;
  }
  return 0;
}

/* The megakernel's matmul buffers and the megakernel itself, closed (the
 * setups with processes of their own run on a GPU without it). */
static int close_megakernel(struct bench *b) {
  if (!b->rt) return 0;
  if (b->chk) coop_rt_free(b->rt, b->chk);
  b->chk = NULL;
  coop_matmul_close(&b->mm);
  int r = coop_rt_close(b->rt);
  b->rt = NULL;
  if (r) fprintf(stderr, SB ": closing the megakernel failed\n");
  return r != 0;
}

static int run(struct sopts *o) {
  struct bench b;
  memset(&b, 0, sizeof b);
  b.o = o;
  b.window_ns = (int64_t)(o->window_s * 1e9);
  b.child.pid = -1;
  int rc = 0;
  char load[64], date[64];
  load_avg(load, sizeof load);
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  signal(SIGPIPE, SIG_IGN);

  /* the long kernel's input first: a bad one fails before the GPU is used */
  int r = side_input(&b);
  if (r) return r;

  /* the plain matmul, calibrated, and (0) before anything else runs on the GPU */
  if (plain_open(&b.p, (int)o->device, (unsigned)o->local)) {
    fprintf(stderr, SB ": plain CUDA: %s\n", b.p.err);
    plain_close(&b.p);
    coop_app_input_free(&b.in);
    return 1;
  }
  b.p.grid = o->grid ? (unsigned)o->grid : 2u * (unsigned)b.p.sms;
  b.p.timeout_ns = (int64_t)o->timeout_s * 1000000000;
  if (plain_carveout(&b.p, (int)o->carveout)) {
    fprintf(stderr, SB ": --carveout: %s\n", b.p.err);
    rc = 1;
    goto out;
  }
  printf(SB ": %s, %d SMs; calibrating the plain matmul (%u blocks)\n", b.p.name, b.p.sms,
         b.p.grid);
  fflush(stdout);
  if (calibrate(&b)) {
    fprintf(stderr, SB ": calibration: %s\n", b.p.err);
    rc = 1;
    goto out;
  }
  printf(SB ": matmul n %u, reps %u: %.3f ms alone\n", b.p.n, b.p.reps, b.e_plain_ms);
  fflush(stdout);
  if ((rc = run_phase(&b, SETUP_IDLE_GPU, 0))) goto out;

  /* what must be ready before the megakernel: (a)'s process, its context
   * built and warmed up while the GPU is idle */
  for (int i = 0; i < S_COUNT; i++)
    if (selected(o, i) && side_setups[i].prepare && (rc = side_setups[i].prepare(&b))) goto out;

  /* the megakernel: the long kernel's application and the matmul task */
  if ((rc = side_megakernel(&b, 1))) goto out;
  if (strcmp(coop_rt_device_name(b.rt), b.p.name))
    fprintf(stderr, SB ": warning: the megakernel runs on '%s', the plain launches on '%s'\n",
            coop_rt_device_name(b.rt), b.p.name);
  if (b.child.pid > 0 && strcmp(b.child.name, b.p.name))
    fprintf(stderr, SB ": warning: the process of (a) runs on '%s'\n", b.child.name);
  b.nk = k_list(o->klist, b.workers, b.ks, b.klabels);
  r = coop_matmul_open(&b.mm, b.rt, b.p.n, b.p.reps);
  b.chk = r ? NULL : coop_rt_alloc(b.rt, b.p.bytes);
  if (r || !b.chk) {
    fprintf(stderr, SB ": matmul buffers: %s\n", coop_strerror(r ? r : COOP_ENOMEM));
    rc = 1;
    goto out;
  }
  if (memcmp(b.mm.ref, b.p.ref, b.p.bytes)) {
    fprintf(stderr, SB ": internal: the plain and the coop matmul inputs differ\n");
    rc = 1;
    goto out;
  }
  if (coop_measure(&b, b.workers, &b.e_coop_all_ms)) {
    rc = 1;
    goto out;
  }
  make_header(&b, load, date);
  printf("\n" SB "\n%s\n", header);
  fflush(stdout);
  if ((rc = side_long_warm_up(&b))) goto out;
  for (int i = 0; i < b.nk; i++) {
    b.cg[i] = (struct coopgfx){b.rt,
                               &b.mm,
                               b.chk,
                               b.ks[i],
                               (int64_t)o->timeout_s * 1000000000,
                               0,
                               (int64_t)(o->ahead_us * 1000)};
    double ms;
    if (coop_measure(&b, b.ks[i], &ms)) { /* warm: the buffers migrate to the GPU */
      rc = 1;
      goto out;
    }
  }

  /* the setups beside this process's megakernel, then those whose long
   * kernel runs in processes of their own, on a GPU without it */
  if ((rc = run_phase(&b, 0, SETUP_IDLE_GPU | SETUP_OWN_LONG))) goto out;
  for (int i = 0; i < S_COUNT; i++)
    if (selected(o, i) && (side_setups[i].flags & SETUP_OWN_LONG)) {
      if ((rc = close_megakernel(&b))) goto out;
      break;
    }
  if ((rc = run_phase(&b, SETUP_OWN_LONG, 0))) goto out;

  /* report */
  snprintf(title, sizeof title, "%s on %s", b.app->name, b.in.label);
  rc = emit(o, 1);

out:
  if (b.child.pid > 0) child_end(&b.child);
  rc |= close_megakernel(&b);
  plain_close(&b.p); /* after the megakernel: freeing waits for the device */
  coop_app_input_free(&b.in);
  free_results();
  return rc;
}

void side_defaults(struct sopts *o) {
  *o = (struct sopts){.period_ms = 16.7,
                      .window_s = 3,
                      .exec_ms = 2,
                      .klist = "N/2",
                      .app = "bfs",
                      .input = 1,
                      .scale = 12,
                      .min_runs = 3,
                      .local = 64,
                      .timeout_s = 120,
                      .carveout = -1,
                      .ahead_us = 500,
                      .query = 1,
                      .setups = default_setups()};
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--child")) return side_child_main(argc, argv);
  if (argc > 1 && !strcmp(argv[1], "--long-child")) return side_long_child_main(argc, argv);
  struct sopts o;
  side_defaults(&o);
  o.argc = argc;
  o.argv = argv;
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof o.cmd; i++)
    len += (size_t)snprintf(o.cmd + len, sizeof o.cmd - len, "%s%s", i ? " " : "", argv[i]);
  int action = side_parse(argc, argv, &o);
  if (action == 1) {
    char *s = side_plain_source();
    if (!s) return 1;
    fputs(s, stdout);
    free(s);
    return 0;
  }
  if (action == 2) {
    int r = side_compile_only("sm_90");
    if (!r) printf(SB ": the standalone matmul builds with NVRTC for sm_90\n");
    return r ? 1 : 0;
  }
  if (action == 3) {
    o.csv = o.report;
    int r = read_csv(o.report, &o) || emit(&o, 0);
    free_results();
    return r ? 1 : 0;
  }
  int rc = run(&o);
  if (rc == 1) fprintf(stderr, SB ": FAILED\n");
  return rc;
}
