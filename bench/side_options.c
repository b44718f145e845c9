/*
 * side_options.c: coop-bench-side's command line: --help, the options and
 * their checks, the K list and the setups named (side_setups.c's ids).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coopd_jobs.h"
#include "side_setup.h"

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
             "  (g)   coopd       a frame client of a coopd started here: every frame its\n"
             "                    input written into a device buffer, the matmul submitted\n"
             "                    through libcoop, its output read back; alone, then beside\n"
             "                    the long kernel run as coopd jobs by a second client (and\n"
             "                    the long kernel alone there); ratios against those rows\n"
             "The plain matmul is the same source compiled alone with NVRTC through\n"
             "device/dialect.h; n and reps are calibrated so that it takes E on the idle GPU\n"
             "with G blocks. Per setup: task latency (release -> the host sees it done)\n"
             "p50/p90/p99/max, execution, gather (coop), achieved period, deadline misses\n"
             "(done after release + P), and the long kernel's run time, slowdown and\n"
             "throughput against running alone. The long kernel's runs (see --check-all)\n"
             "and the first task of every window are checked against the CPU. Timing is\n"
             "never asserted.\n"
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
             "  --coopd-frame HOW  (g): iofd (default): each frame is one job on device\n"
             "                     buffers that writes its input into one and reads its\n"
             "                     output from another itself, through a memfd of the\n"
             "                     client's in which it produces the input and reads the\n"
             "                     output (coop_job_buffer_io_fd: one request each way,\n"
             "                     no copy in the client, as the plain setups' page-locked\n"
             "                     buffers); io: the same with libcoop copying the bytes\n"
             "                     (coop_job_buffer_io); buffers: each frame writes its\n"
             "                     input into a device buffer, submits, waits and reads\n"
             "                     its output back (three requests); job: each frame is\n"
             "                     one job that carries its input and brings its output\n"
             "                     back in its RESULT (b stays on the device always)\n"
             "  --coopd-spin-us US (g): how long the frame client's waits spin before they\n"
             "                     sleep (coop_set_spin; default 1000000, the most: it\n"
             "                     spins until its answers come, as the plain setups\n"
             "                     spin on cuStreamQuery and (c) on its task's record;\n"
             "                     0: libcoop's default, asleep in poll)\n"
             "  --coopd-client-trace FILE (g): one CSV line per frame, the client's\n"
             "                     stamps (CLOCK_MONOTONIC ns, as coopd's COOP_TRACE_FILE):\n"
             "                     job id, release, submit called and returned, wait\n"
             "                     called and returned; bench/side_client_legs.sh joins\n"
             "                     it with coopd's trace\n"
             "  --coopd-priority P (g): each frame's job at priority P (coop_job_priority;\n"
             "                     default 0; the bench's coopd allows up to P): above\n"
             "                     the long kernel's jobs (0), a frame of K = N has the\n"
             "                     running one suspended until it ends (docs/daemon.md,\n"
             "                     \"Priority\"), where at priority 0 it waits for it\n"
             "  --frame-io         every frame also copies the matmul's input a (n x n\n"
             "                     floats) to the device before it and its output back\n"
             "                     after it, as the frame client (g) always does: plain\n"
             "                     CUDA from and to page-locked memory on the task's\n"
             "                     stream, coop by coop_rt_arena_copy; the latency counts\n"
             "                     them, exec does not (default: off, (g) alone moves\n"
             "                     its bytes)\n"
             "  --min-runs R       long-kernel runs per window at least (default 3)\n"
             "  --check-all        check every long-kernel run against the CPU; by default\n"
             "                     the first and the last of a window, the resized ones,\n"
             "                     then others while checking has taken less than the\n"
             "                     window (at least 1 s)\n"
             "  --setups LIST      which of alone,long,coop-alone,process,stream,coop,prio,\n"
             "                     coop-alone-ahead0,coop-ahead0 (as coop-alone and coop\n"
             "                     with --ahead 0), green,mps,coopd, or all (default: all\n"
             "                     but the ahead0 ones, green, mps and coopd)\n"
             "  --green-sms K      (e): the matmul's SMs (default: the smallest of 8, 16,\n"
             "                     32, 64 whose latency p50 alone there is within P)\n"
             "  --local-size L     threads per workgroup, both forms (default 64)\n"
             "  --launch-groups W  workgroups the megakernel launches (default: the\n"
             "                     runtime's, 2 x SMs + 1)\n"
             "  --max-registers N  CUDA: the megakernel's register cap, this process's and\n"
             "                     (g)'s coopd ([device] max_registers); the build may\n"
             "                     go lower for room or width (docs/kernels.md, \"The\n"
             "                     megakernel's width\"; default: the runtime's, none,\n"
             "                     and coopd's)\n"
             "  --carveout PCT     the plain kernel's preferred shared-memory carveout, 0\n"
             "                     (most L1) to 100 (default: the driver's choice)\n"
             "  --device I         CUDA device index (default 0)\n"
             "  --coopd PATH       (g): the coopd binary (default: coopd beside this one)\n"
             "  --coopd-set SECTION.KEY=VALUE (g): a setting of coopd's, after the bench's\n"
             "                     own (which it so overrides); up to 4, each its own\n"
             "                     option (an A/B of one binary: bench/frame_hold_gpu.sh\n"
             "                     --old-set)\n"
             "  --timeout S        seconds one run or task may take (default 120)\n"
             "  --csv FILE         CSV output, written again after each setup (a run cut short\n"
             "                     keeps the setups done: --report draws them); the .md and\n"
             "                     .png go beside it at the end (FILE less .csv)\n"
             "  --source           print the standalone matmul source and exit\n"
             "  --compile-only     build it with NVRTC for sm_90 (no GPU needed) and exit\n"
             "  --report CSV       no run: the tables, .md and .png again from a CSV of this\n"
             "                     bench (written beside it; no GPU needed)\n"
             "  --help             this text\n"
             "Exit status: 0; 1 on a failed or wrong run or task (or no usable GPU); 2 on a\n"
             "bad command line.\n");
}

#define bad(...) bench_usage_error(SB, __VA_ARGS__)
#define parse_num(name, s, lo, hi) bench_parse_num(SB, name, s, lo, hi)

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
int side_k_list(const char *list, unsigned workers, unsigned *ks, char labels[][16]) {
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
          "process, stream, coop, prio, coop-alone-ahead0, coop-ahead0, green, mps, coopd",
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
      {"max-registers", 1, 0, 'M'},
      {"device", 1, 0, 'd'},
      {"timeout", 1, 0, 't'},
      {"csv", 1, 0, 'o'},
      {"source", 0, 0, 'X'},
      {"compile-only", 0, 0, 'C'},
      {"report", 1, 0, 'R'},
      {"carveout", 1, 0, 'c'},
      {"ahead", 1, 0, 'A'},
      {"green-sms", 1, 0, 'G'},
      {"coopd", 1, 0, 'D'},
      {"frame-io", 0, 0, 'I'},
      {"coopd-frame", 1, 0, 'J'},
      {"coopd-spin-us", 1, 0, 'Q'},
      {"coopd-priority", 1, 0, 'Y'},
      {"coopd-client-trace", 1, 0, 'T'},
      {"coopd-set", 1, 0, 'Z'},
      {"check-all", 0, 0, 'K'},
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
      case 'K':
        o->check_all = 1;
        break;
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
      case 'M':
        o->max_registers = parse_num("max-registers", optarg, 16, 255);
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
      case 'D':
        o->coopd = optarg;
        break;
      case 'I':
        o->frame_io = 1;
        break;
      case 'Q':
        o->coopd_spin_us = parse_num("coopd-spin-us", optarg, 0, 1000000);
        break;
      case 'Y':
        o->coopd_priority = parse_num("coopd-priority", optarg, 0, 100);
        break;
      case 'T':
        o->coopd_client_trace = optarg;
        break;
      case 'Z': {
        const char *eq = strchr(optarg, '='), *dot = strchr(optarg, '.');
        if (!eq || !dot || dot > eq || dot == optarg || eq == dot + 1)
          bad("--coopd-set: '%s' is not SECTION.KEY=VALUE", optarg);
        if (o->ncoopd_sets == SIDE_COOPD_SETS) bad("--coopd-set: at most %d", SIDE_COOPD_SETS);
        o->coopd_sets[o->ncoopd_sets++] = optarg;
        break;
      }
      case 'J':
        if (!strcmp(optarg, "job"))
          o->coopd_frame = DFRAME_JOB;
        else if (!strcmp(optarg, "buffers"))
          o->coopd_frame = DFRAME_BUFFERS;
        else if (!strcmp(optarg, "io"))
          o->coopd_frame = DFRAME_IO;
        else if (!strcmp(optarg, "iofd"))
          o->coopd_frame = DFRAME_IO_FD;
        else
          bad("--coopd-frame: '%s' is none of iofd, io, buffers and job", optarg);
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
  if (side_k_list(o->klist, 0, ks, labels) <= 0)
    bad("--k: '%s' is not a list of numbers, N, N/D or N-D (at most 16)", o->klist);
  if (!coop_app_find(o->app)) bad("--app: no application '%s' in this build", o->app);
  return action;
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
                      .coopd_spin_us = 1000000,
                      .coopd_frame = DFRAME_IO_FD,
                      .query = 1,
                      .setups = default_setups()};
}
