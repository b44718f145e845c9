/*
 * side.c: coop-bench-side (issue 6 item 4): the same graphics-like kernel
 * (kernels/apps/matmul.cl) released every P beside the same long kernel
 * (an application of apps/ in the coop megakernel), in the setups
 * a user has today on an NVIDIA GPU and in ours, one after the other in one
 * run (side.h lists them; bench/README.md says why each is built as it is).
 *
 * Order: (0) the plain matmul alone, before anything else touches the GPU;
 * the child of (a) started (its context built and warmed up on the idle
 * GPU, then idle); the megakernel launched; the long kernel alone; (0c) the
 * coop task alone at each K; then (a), (b) and (c) at each K, each a window
 * of the long kernel back to back for at least --window seconds with the
 * graphics tasks released throughout.
 *
 * Every long-kernel run is checked against the CPU reference after its
 * window, and the first graphics task of every window writes a separate,
 * NaN-filled buffer that is checked against the CPU (exit status 1 if any
 * is wrong, or if a run or task fails). Nothing is asserted about time.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "side.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

/* ------------------------------------------------------------ samples */

/* ------------------------------------------------------------ options */

enum { S_ALONE, S_LONG, S_COOP_ALONE, S_PROCESS, S_STREAM, S_COOP, S_COUNT };
static const char *const setup_id[S_COUNT] = {"alone",   "long",   "coop-alone",
                                              "process", "stream", "coop"};

#define MAXK 16

struct sopts {
  double period_ms, window_s, exec_ms;
  const char *klist, *app, *csv, *report;
  long matrix, grid, local, scale, input, min_runs, device, timeout_s, launch_groups, carveout;
  long ahead_us;
  int query;
  unsigned setups; /* bit per S_* */
  char cmd[2048];
};

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
             "  (b)   stream      plain CUDA matmul on another stream of the long kernel's\n"
             "                    process (it fills the SM slots the megakernel leaves free)\n"
             "  (c)   coop        ours: a non-cooperative coop task of K groups, gathered\n"
             "                    from the cooperative long kernel\n"
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
             "  --setups LIST      which of alone,long,coop-alone,process,stream,coop\n"
             "                     (default all)\n"
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
    while (i < S_COUNT && (strlen(setup_id[i]) != len || strncmp(p, setup_id[i], len))) i++;
    if (i == S_COUNT)
      bad("--setups: '%s' names a setup other than alone, long, coop-alone, "
          "process, stream, coop",
          list);
    m |= 1u << i;
    p += len + (p[len] == ',');
  }
  if (!m) bad("--setups: '%s' names none", list);
  return m;
}

static int parse(int argc, char **argv, struct sopts *o) {
  static const struct option lo[] = {
      {"period", 1, 0, 'P'},       {"window", 1, 0, 'W'},
      {"exec-ms", 1, 0, 'E'},      {"k", 1, 0, 'k'},
      {"grid", 1, 0, 'g'},         {"matrix", 1, 0, 'm'},
      {"app", 1, 0, 'a'},          {"input", 1, 0, 'i'},
      {"scale", 1, 0, 'S'},        {"barrier", 1, 0, 'B'},
      {"min-runs", 1, 0, 'r'},     {"setups", 1, 0, 's'},
      {"local-size", 1, 0, 'l'},   {"launch-groups", 1, 0, 'L'},
      {"device", 1, 0, 'd'},       {"timeout", 1, 0, 't'},
      {"csv", 1, 0, 'o'},          {"source", 0, 0, 'X'},
      {"compile-only", 0, 0, 'C'}, {"report", 1, 0, 'R'},
      {"carveout", 1, 0, 'c'},     {"ahead", 1, 0, 'A'},
      {"help", 0, 0, 'h'},         {0, 0, 0, 0},
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

/* ------------------------------------------------------------ results */

struct run {
  int64_t t_started, t_finished;
  unsigned kills, forks, m_min;
  int checked;
};

struct result {
  int setup;
  unsigned k;
  char klabel[16];
  char name[64];
  int64_t t0, t1; /* the window, host clock */
  struct sample *s;
  size_t ns;
  struct run *r;
  size_t nr, capr;
  int has_long;
};

static struct result results[S_COUNT * MAXK];
static int nresults;

static void add_run(struct result *x, const struct coop_rt_task_info *ti) {
  if (x->nr == x->capr) {
    x->capr = x->capr ? 2 * x->capr : 32;
    x->r = realloc(x->r, x->capr * sizeof *x->r);
    if (!x->r) {
      fprintf(stderr, SB ": out of memory\n");
      exit(1);
    }
  }
  struct run *r = &x->r[x->nr++];
  memset(r, 0, sizeof *r);
  r->t_started = ti->t_started;
  r->t_finished = ti->t_finished;
  r->kills = ti->kills;
  r->forks = ti->forks;
  r->m_min = ti->m_min;
}

/* The tasks a setup's figures are taken over: not the check task, released
 * in the window and, beside a long kernel, during one of its runs. */
static int counted(const struct result *x, const struct sample *s) {
  return !s->chk && s->t_release >= x->t0 && s->t_release < x->t1 && (!x->has_long || s->in_run);
}

static void mark_in_run(struct result *x) {
  for (size_t i = 0; i < x->ns; i++) {
    struct sample *s = &x->s[i];
    s->in_run = 0;
    for (size_t j = 0; j < x->nr && !s->in_run; j++)
      s->in_run = s->t_release >= x->r[j].t_started && s->t_release < x->r[j].t_finished;
  }
}

static struct result *new_result(int setup, unsigned k, const char *klabel) {
  struct result *x = &results[nresults++];
  memset(x, 0, sizeof *x);
  x->setup = setup;
  x->k = k;
  snprintf(x->klabel, sizeof x->klabel, "%s", klabel ? klabel : "");
  switch (setup) {
    case S_ALONE:
      snprintf(x->name, sizeof x->name, "(0) matmul alone");
      break;
    case S_LONG:
      snprintf(x->name, sizeof x->name, "long kernel alone");
      break;
    case S_COOP_ALONE:
      snprintf(x->name, sizeof x->name, "(0c) coop task alone, K=%u (%s)", k, klabel);
      break;
    case S_PROCESS:
      snprintf(x->name, sizeof x->name, "(a) separate process");
      break;
    case S_STREAM:
      snprintf(x->name, sizeof x->name, "(b) same process, other stream");
      break;
    default:
      snprintf(x->name, sizeof x->name, "(c) coop, K=%u (%s)", k, klabel);
      break;
  }
  return x;
}

static void take_samples(struct result *x, struct gfx *g) {
  x->s = g->s;
  x->ns = g->n;
  g->s = NULL;
  g->n = g->cap = 0;
}

/* ---------------------------------------------------- the coop task */

struct coopgfx {
  coop_rt *rt;
  struct coop_matmul *mm;
  float *chk;
  unsigned k;
  int64_t timeout_ns;
  coop_task_id id;
  int64_t ahead_ns; /* gathering ahead of the next release (--ahead); 0: off */
};

static int c_reset(void *p) {
  struct coopgfx *c = p;
  memset(c->chk, 0xff, (size_t)c->mm->n * c->mm->n * sizeof(float));
  return 0;
}

static int c_launch(void *p, int chk, int64_t next_ns) {
  struct coopgfx *c = p;
  struct coop_rt_task_desc d = {.kernel = c->mm->kernel, .groups = c->k, .nargs = 5};
  if (c->ahead_ns > 0 && next_ns > 0) {
    d.next_ns = next_ns;
    d.ahead_ns = c->ahead_ns;
  }
  d.args[0] = coop_rt_buf_arg(c->rt, c->mm->a);
  d.args[1] = coop_rt_buf_arg(c->rt, c->mm->b);
  d.args[2] = coop_rt_buf_arg(c->rt, chk ? c->chk : c->mm->c);
  d.args[3] = c->mm->n;
  d.args[4] = c->mm->reps;
  int r = coop_rt_submit(c->rt, &d, &c->id);
  if (r) fprintf(stderr, SB ": submitting a matmul task: %s\n", coop_strerror(r));
  return r != 0;
}

/* Spins on the task's state (host memory), as plain_finish spins on
 * cuStreamQuery: coop_rt_wait's naps would add up to 500 us. */
static int c_finish(void *p, struct sample *s) {
  struct coopgfx *c = p;
  struct coop_rt_task_info ti;
  for (;;) {
    int r = coop_rt_task_info(c->rt, c->id, &ti);
    if (r) {
      fprintf(stderr, SB ": matmul task: %s\n", coop_strerror(r));
      return 1;
    }
    if (ti.state != COOP_TASK_PENDING && ti.state != COOP_TASK_RUNNING) break;
    if (now_ns() - s->t_launch > c->timeout_ns) {
      coop_rt_cancel(c->rt, c->id);
      coop_rt_wait(c->rt, c->id, -1);
      coop_rt_task_release(c->rt, c->id);
      fprintf(stderr, SB ": a matmul task of %u groups took longer than the timeout\n", c->k);
      return 1;
    }
  }
  s->t_done = now_ns();
  coop_rt_task_release(c->rt, c->id);
  if (ti.state != COOP_TASK_DONE) {
    fprintf(stderr, SB ": a matmul task of %u groups ended in state %d (refusal %d)\n", c->k,
            (int)ti.state, (int)ti.refusal);
    return 1;
  }
  s->exec_ns = ti.t_finished - ti.t_started;
  s->gather_ns = ti.gather_ns;
  return 0;
}

static int c_check(void *p, char *why, size_t len) {
  struct coopgfx *c = p;
  return side_mm_compare(c->chk, c->mm->ref, c->mm->n, why, len);
}

static struct task_ops coop_ops(struct coopgfx *c) {
  struct task_ops o = {c, c_reset, c_launch, c_finish, c_check};
  return o;
}

/* ------------------------------------------------ the child of (a) */

struct child {
  pid_t pid;
  int ctrl, data;
  char name[256];
};

/* A line from fd within timeout_ms (without the newline); 0 on EOF,
 * timeout or error. */
static int read_line_to(int fd, char *buf, size_t n, int timeout_ms) {
  size_t len = 0;
  int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;
  while (len + 1 < n) {
    int64_t left = (end - now_ns()) / 1000000;
    struct pollfd pf = {fd, POLLIN, 0};
    if (left <= 0 || poll(&pf, 1, (int)left) <= 0) break;
    ssize_t r = read(fd, buf + len, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (buf[len] == '\n') {
      buf[len] = 0;
      return 1;
    }
    len++;
  }
  buf[len] = 0;
  return 0;
}

static int child_spawn(struct child *c, const struct sopts *o, const struct plain *p) {
  memset(c, 0, sizeof *c);
  c->pid = -1;
  int cp[2], dp[2];
  if (pipe2(cp, O_CLOEXEC)) return 1;
  if (pipe2(dp, O_CLOEXEC)) {
    close(cp[0]);
    close(cp[1]);
    return 1;
  }
  char a[10][32];
  snprintf(a[0], 32, "%d", cp[0]);
  snprintf(a[1], 32, "%d", dp[1]);
  snprintf(a[2], 32, "%ld", o->device);
  snprintf(a[3], 32, "%u", p->n);
  snprintf(a[4], 32, "%u", p->reps);
  snprintf(a[5], 32, "%u", p->grid);
  snprintf(a[6], 32, "%u", p->local);
  snprintf(a[7], 32, "%lld", (long long)(o->period_ms * 1e6));
  snprintf(a[8], 32, "%ld", o->timeout_s);
  snprintf(a[9], 32, "%ld", o->carveout);
  char *argv[] = {SB, "--child", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], NULL};
  fflush(NULL);
  c->pid = fork();
  if (c->pid == 0) {
    fcntl(cp[0], F_SETFD, 0);
    fcntl(dp[1], F_SETFD, 0);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(cp[0]);
  close(dp[1]);
  c->ctrl = cp[1];
  c->data = dp[0];
  if (c->pid < 0) return 1;
  char line[512];
  if (!read_line_to(c->data, line, sizeof line, 120000) || strncmp(line, "ready ", 6)) {
    fprintf(stderr, SB ": the process of setup (a) did not start: %s\n",
            line[0] ? line : "(no answer in 120 s)");
    return 1;
  }
  snprintf(c->name, sizeof c->name, "%.255s", line + 6);
  return 0;
}

static int child_say(struct child *c, const char *what) {
  size_t len = strlen(what);
  return write(c->ctrl, what, len) != (ssize_t)len;
}

/* After "stop": the samples and the child's verdict. */
static int child_collect(struct child *c, struct result *x) {
  char line[512];
  size_t cap = 0;
  while (read_line_to(c->data, line, sizeof line, 60000)) {
    if (!strncmp(line, "end ", 4)) {
      int rc = atoi(line + 4);
      if (rc) fprintf(stderr, SB ": setup (a): the graphics process failed: %s\n", line + 6);
      return rc != 0;
    }
    struct sample s;
    memset(&s, 0, sizeof s);
    long long v[6];
    int chk;
    if (sscanf(line, "s %d %lld %lld %lld %lld %lld", &chk, &v[0], &v[1], &v[2], &v[3], &v[4]) != 6)
      continue;
    s.chk = chk;
    s.t_release = v[0];
    s.t_launch = v[1];
    s.t_done = v[2];
    s.exec_ns = v[3];
    s.t_next = v[4];
    if (x->ns == cap) {
      cap = cap ? 2 * cap : 256;
      x->s = realloc(x->s, cap * sizeof *x->s);
      if (!x->s) exit(1);
    }
    x->s[x->ns++] = s;
  }
  fprintf(stderr, SB ": setup (a): the graphics process did not report\n");
  return 1;
}

static int child_end(struct child *c) {
  if (c->pid <= 0) return 0;
  close(c->ctrl);
  close(c->data);
  int st = 0;
  waitpid(c->pid, &st, 0);
  c->pid = -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ windows */

struct bench {
  struct sopts *o;
  struct plain p;
  coop_rt *rt;
  unsigned workers;
  const struct coop_app *app;
  struct coop_app_input in;
  struct coop_matmul mm;
  float *chk;
  struct child child;
  double e_plain_ms, e_coop_all_ms;
  int64_t window_ns;
};

static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

/* Graphics alone: g released for the window, nothing else. */
static int gfx_alone(struct bench *b, struct result *x, const struct task_ops *ops) {
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

/* Checks every run's output (kept in outs) against the CPU; frees them. */
static int check_runs(struct bench *b, struct result *x, void **outs) {
  int rc = 0;
  for (size_t i = 0; i < x->nr; i++) {
    char why[256] = "";
    if (outs[i] && !rc && b->app->check(&b->in, outs[i], why, sizeof why)) {
      fprintf(stderr, SB ": %s: %s on %s, run %zu: WRONG RESULT: %s\n", x->name, b->app->name,
              b->in.label, i, why);
      rc = 1;
    }
    x->r[i].checked = outs[i] && !rc;
    free(outs[i]);
  }
  free(outs);
  return rc;
}

/* The long kernel back to back for the window (at least --min-runs runs),
 * the graphics tasks started by `start` and stopped by `stop` around it. */
struct gfx_ctl {
  int (*start)(struct bench *b, void *arg);
  int (*stop)(struct bench *b, void *arg, struct result *x);
  void *arg;
};

static int long_window(struct bench *b, struct result *x, const struct gfx_ctl *ctl) {
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
  rc |= check_runs(b, x, outs);
  mark_in_run(x);
  return rc;
}

/* (b) and (c): a graphics thread in this process. */
struct thread_arg {
  struct gfx g;
  struct task_ops ops;
};

static int th_start(struct bench *b, void *arg) {
  struct thread_arg *t = arg;
  return gfx_start(&t->g, &t->ops, (int64_t)(b->o->period_ms * 1e6));
}

static int th_stop(struct bench *b, void *arg, struct result *x) {
  (void)b;
  struct thread_arg *t = arg;
  int rc = gfx_stop(&t->g);
  if (rc) fprintf(stderr, SB ": %s: %s\n", x->name, t->g.why);
  take_samples(x, &t->g);
  gfx_free(&t->g);
  return rc;
}

/* (a): the child process. */
static int ch_start(struct bench *b, void *arg) {
  (void)arg;
  return child_say(&b->child, "go\n");
}

static int ch_stop(struct bench *b, void *arg, struct result *x) {
  (void)arg;
  if (child_say(&b->child, "stop\n")) return 1;
  return child_collect(&b->child, x);
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

/* Median execution time of 5 coop tasks of k groups on the idle
 * megakernel (after one unrecorded), ms. */
static int coop_measure(struct bench *b, unsigned k, double *ms) {
  struct coopgfx c = {b->rt, &b->mm, b->chk, k, (int64_t)b->o->timeout_s * 1000000000, 0, 0};
  struct series s = {0};
  for (int i = -1; i < 5; i++) {
    struct sample x;
    memset(&x, 0, sizeof x);
    x.t_launch = now_ns();
    if (c_launch(&c, 0, 0) || c_finish(&c, &x)) {
      series_free(&s);
      return 1;
    }
    if (i >= 0) push(&s, (double)x.exec_ns / 1e6);
  }
  *ms = quantile(&s, .5);
  series_free(&s);
  return 0;
}

/* ------------------------------------------------------------- header */

static char header[4096];

static void make_header(struct bench *b, const char *load, const char *date, unsigned *ks,
                        char labels[][16], int nk) {
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

/* ------------------------------------------------------------ report */

struct gstat {
  size_t n, nwin, miss;
  double p50, p90, p99, max, exec50, gather50, gather99, per50, permean, launch99;
};

static void gfx_stats(const struct result *x, const struct sopts *o, struct gstat *g) {
  struct series lat = {0}, ex = {0}, ga = {0}, per = {0}, la = {0};
  memset(g, 0, sizeof *g);
  int64_t P = (int64_t)(o->period_ms * 1e6);
  for (size_t i = 0; i < x->ns; i++) {
    const struct sample *s = &x->s[i];
    if (!s->chk && s->t_release >= x->t0 && s->t_release < x->t1) g->nwin++;
    if (!counted(x, s)) continue;
    g->n++;
    push(&lat, (double)(s->t_done - s->t_release) / 1e6);
    push(&ex, (double)s->exec_ns / 1e6);
    if (x->setup == S_COOP || x->setup == S_COOP_ALONE) push(&ga, (double)s->gather_ns / 1e6);
    push(&per, (double)(s->t_next - s->t_release) / 1e6);
    push(&la, (double)(s->t_launch - s->t_release) / 1e6);
    g->miss += s->t_done > s->t_release + P;
  }
  g->p50 = quantile(&lat, .5);
  g->p90 = quantile(&lat, .9);
  g->p99 = quantile(&lat, .99);
  g->max = quantile(&lat, 1);
  g->exec50 = quantile(&ex, .5);
  g->gather50 = quantile(&ga, .5);
  g->gather99 = quantile(&ga, .99);
  g->per50 = quantile(&per, .5);
  g->permean = mean_of(&per);
  g->launch99 = quantile(&la, .99);
  series_free(&la);
  series_free(&lat);
  series_free(&ex);
  series_free(&ga);
  series_free(&per);
}

struct lstat {
  size_t runs, checked;
  double p50, p10, p90, mean, rps;
  unsigned kills, forks;
};

static void long_stats(const struct result *x, struct lstat *l) {
  struct series t = {0};
  memset(l, 0, sizeof *l);
  for (size_t i = 0; i < x->nr; i++) {
    push(&t, (double)(x->r[i].t_finished - x->r[i].t_started) / 1e6);
    l->checked += (size_t)x->r[i].checked;
    l->kills += x->r[i].kills;
    l->forks += x->r[i].forks;
  }
  l->runs = x->nr;
  l->p50 = quantile(&t, .5);
  l->p10 = quantile(&t, .1);
  l->p90 = quantile(&t, .9);
  l->mean = mean_of(&t);
  l->rps = x->t1 > x->t0 ? (double)x->nr / ((double)(x->t1 - x->t0) / 1e9) : NAN;
  series_free(&t);
}

/* Per-run ratio range against the alone mean. */
static void run_ratio_range(const struct result *x, double alone_mean, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (size_t i = 0; i < x->nr; i++) {
    double r = (double)(x->r[i].t_finished - x->r[i].t_started) / 1e6 / alone_mean;
    if (r < *lo) *lo = r;
    if (r > *hi) *hi = r;
  }
  if (!x->nr) *lo = *hi = NAN;
}

static void fmt(char *d, size_t n, double v, const char *f) {
  if (isnan(v))
    snprintf(d, n, "-");
  else
    snprintf(d, n, f, v);
}

static const struct result *find_result(int setup) {
  for (int i = 0; i < nresults; i++)
    if (results[i].setup == setup) return &results[i];
  return NULL;
}

static int has_gfx(const struct result *x) { return x->setup != S_LONG; }

/* The tables, to each of the streams given. */
static void tables(FILE **fs, int nf, const struct sopts *o) {
  const struct result *alone = find_result(S_ALONE), *lalone = find_result(S_LONG);
  struct gstat ga;
  struct lstat la;
  if (alone) gfx_stats(alone, o, &ga);
  if (lalone) long_stats(lalone, &la);
  double base50 = alone ? ga.p50 : NAN, base99 = alone ? ga.p99 : NAN;
  double lmean = lalone ? la.mean : NAN, lrps = lalone ? la.rps : NAN;
  char b[16][32];
  for (int f = 0; f < nf; f++) {
    FILE *s = fs[f];
    fprintf(s,
            "\n### Side by side\n\n"
            "Graphics task latency = release -> the host sees it done (ms), over the tasks "
            "released during a long-kernel run (all tasks of the window for the alone "
            "rows); x alone = against (0). Long kernel: mean run time / alone, and "
            "throughput (runs/s over the window) alone / here.\n\n"
            "| setup | latency p50 | p90 | p99 | max | p50 x alone | p99 x alone | missed | "
            "period p50 | long kernel slowdown | throughput cost |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      struct gstat g;
      struct lstat l;
      if (has_gfx(x)) gfx_stats(x, o, &g);
      if (x->has_long) long_stats(x, &l);
      int G = has_gfx(x);
      fmt(b[0], 32, G ? g.p50 : NAN, "%.3f");
      fmt(b[1], 32, G ? g.p90 : NAN, "%.3f");
      fmt(b[2], 32, G ? g.p99 : NAN, "%.3f");
      fmt(b[3], 32, G ? g.max : NAN, "%.3f");
      fmt(b[4], 32, G ? g.p50 / base50 : NAN, "%.2f");
      fmt(b[5], 32, G ? g.p99 / base99 : NAN, "%.2f");
      if (G)
        snprintf(b[6], 32, "%zu / %zu", g.miss, g.n);
      else
        snprintf(b[6], 32, "-");
      fmt(b[7], 32, G ? g.per50 : NAN, "%.2f");
      fmt(b[8], 32, x->has_long ? l.mean / lmean : NAN, "%.3f");
      fmt(b[9], 32, x->has_long ? lrps / l.rps : NAN, "%.3f");
      fprintf(s, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x->name, b[0], b[1],
              b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9]);
    }
    fprintf(s,
            "\n### Graphics task (ms)\n\n"
            "tasks: counted (released during a long-kernel run) / released in the window "
            "(less the check task); exec: on the device (CUDA events around the launch; "
            "coop: started -> finished); gather: coop only (released -> gathered); "
            "period: r(i+1) - r(i) = max(P, response); missed: done after release + P; "
            "launch p99: release -> the launch or submit call (the host thread's wake-up).\n\n"
            "| setup | tasks | p50 | p90 | p99 | max | exec p50 | gather p50 | gather p99 | "
            "period p50 | period mean | missed | launch p99 |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      if (!has_gfx(x)) continue;
      struct gstat g;
      gfx_stats(x, o, &g);
      fmt(b[0], 32, g.p50, "%.3f");
      fmt(b[1], 32, g.p90, "%.3f");
      fmt(b[2], 32, g.p99, "%.3f");
      fmt(b[3], 32, g.max, "%.3f");
      fmt(b[4], 32, g.exec50, "%.3f");
      fmt(b[5], 32, g.gather50, "%.3f");
      fmt(b[6], 32, g.per50, "%.2f");
      fmt(b[7], 32, g.permean, "%.2f");
      fmt(b[8], 32, g.launch99, "%.3f");
      fmt(b[9], 32, g.gather99, "%.3f");
      fprintf(s, "| %s | %zu / %zu | %s | %s | %s | %s | %s | %s | %s | %s | %s | %zu | %s |\n",
              x->name, g.n, g.nwin, b[0], b[1], b[2], b[3], b[4], b[5], b[9], b[6], b[7], g.miss,
              b[8]);
    }
    fprintf(s,
            "\n### Long kernel (ms)\n\n"
            "run time = t_finished - t_started of the cooperative task (device clock); "
            "slowdown = mean / mean alone, with the range of run / mean alone; runs/s over "
            "the window (host gaps between runs included); checked: runs compared with the "
            "CPU reference.\n\n"
            "| setup | runs (checked) | p50 | p10 | p90 | mean | slowdown | per-run range | "
            "runs/s | kills / forks |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < nresults; i++) {
      const struct result *x = &results[i];
      if (!x->has_long) continue;
      struct lstat l;
      long_stats(x, &l);
      double lo, hi;
      run_ratio_range(x, lmean, &lo, &hi);
      fmt(b[0], 32, l.p50, "%.2f");
      fmt(b[1], 32, l.p10, "%.2f");
      fmt(b[2], 32, l.p90, "%.2f");
      fmt(b[3], 32, l.mean, "%.2f");
      fmt(b[4], 32, l.mean / lmean, "%.3f");
      if (isnan(lo))
        snprintf(b[5], 32, "-");
      else
        snprintf(b[5], 32, "%.3f - %.3f", lo, hi);
      fmt(b[6], 32, l.rps, "%.2f");
      fprintf(s, "| %s | %zu (%zu) | %s | %s | %s | %s | %s | %s | %s | %u / %u |\n", x->name,
              l.runs, l.checked, b[0], b[1], b[2], b[3], b[4], b[5], b[6], l.kills, l.forks);
    }
  }
}

static char title[160]; /* the plot's: "bfs on road-1024x1024" */

static void write_csv(FILE *f, const struct sopts *o) {
  int64_t P = (int64_t)(o->period_ms * 1e6);
  for (const char *l = header; *l;) {
    size_t len = strcspn(l, "\n");
    fprintf(f, "# %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
  fprintf(f, "# period_ns: %lld\n# title: %s\n", (long long)P, title);
  fprintf(f,
          "setup,k,klabel,kind,index,start_ns,time_ns,exec_ns,gather_ns,period_ns,missed,"
          "in_run,counted,check,kills,forks,launch_ns\n");
  for (int i = 0; i < nresults; i++) {
    const struct result *x = &results[i];
    const char *id = setup_id[x->setup], *kl = x->klabel[0] ? x->klabel : "-";
    fprintf(f, "%s,%u,%s,window,0,0,%lld,,,,,,,,,,\n", id, x->k, kl, (long long)(x->t1 - x->t0));
    for (size_t j = 0; j < x->nr; j++) {
      const struct run *r = &x->r[j];
      fprintf(f, "%s,%u,%s,run,%zu,%lld,%lld,,,,,,1,%d,%u,%u,\n", id, x->k, kl, j,
              (long long)(r->t_started - x->t0), (long long)(r->t_finished - r->t_started),
              r->checked, r->kills, r->forks);
    }
    for (size_t j = 0; j < x->ns; j++) {
      const struct sample *s = &x->s[j];
      fprintf(f, "%s,%u,%s,task,%zu,%lld,%lld,%lld,", id, x->k, kl, j,
              (long long)(s->t_release - x->t0), (long long)(s->t_done - s->t_release),
              (long long)s->exec_ns);
      if (x->setup == S_COOP || x->setup == S_COOP_ALONE)
        fprintf(f, "%lld", (long long)s->gather_ns);
      fprintf(f, ",%lld,%d,%d,%d,%d,,,%lld\n", (long long)(s->t_next - s->t_release),
              s->t_done > s->t_release + P, s->in_run, counted(x, s), s->chk,
              (long long)(s->t_launch - s->t_release));
    }
  }
}

/* --report: the results back from a CSV written by write_csv (times
 * relative to each window's start). 0, or 1 with a message. */
static int read_csv(const char *path, struct sopts *o) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, SB ": %s: %s\n", path, strerror(errno));
    return 1;
  }
  char line[4096];
  size_t hl = 0, lineno = 0;
  int bad_line = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = 0;
    if (!strncmp(line, "# period_ns: ", 13)) {
      o->period_ms = (double)strtoll(line + 13, NULL, 10) / 1e6;
      continue;
    }
    if (!strncmp(line, "# title: ", 9)) {
      snprintf(title, sizeof title, "%.159s", line + 9);
      continue;
    }
    if (!strncmp(line, "# ", 2)) {
      hl += (size_t)snprintf(header + hl, hl < sizeof header ? sizeof header - hl : 0, "%s\n",
                             line + 2);
      if (hl >= sizeof header) hl = sizeof header - 1;
      continue;
    }
    if (!strncmp(line, "setup,", 6) || !line[0]) continue;
    char *fld[17];
    int nf = 0;
    for (char *p = line; nf < 17;) {
      fld[nf++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = 0;
      p = c + 1;
    }
    int st = 0;
    while (st < S_COUNT && strcmp(fld[0], setup_id[st])) st++;
    if (nf != 17 || st == S_COUNT) {
      bad_line = (int)lineno;
      break;
    }
    unsigned k = (unsigned)strtoul(fld[1], NULL, 10);
    struct result *x = NULL;
    for (int i = 0; i < nresults && !x; i++)
      if (results[i].setup == st && results[i].k == k) x = &results[i];
    if (!x) {
      if (nresults == S_COUNT * MAXK) {
        bad_line = (int)lineno;
        break;
      }
      x = new_result(st, k, strcmp(fld[2], "-") ? fld[2] : NULL);
      x->has_long = st == S_LONG || st == S_PROCESS || st == S_STREAM || st == S_COOP;
    }
    long long start = strtoll(fld[5], NULL, 10), t = strtoll(fld[6], NULL, 10);
    if (!strcmp(fld[3], "window")) {
      x->t0 = 0;
      x->t1 = t;
    } else if (!strcmp(fld[3], "run")) {
      struct coop_rt_task_info ti;
      memset(&ti, 0, sizeof ti);
      ti.t_started = start;
      ti.t_finished = start + t;
      ti.kills = (unsigned)strtoul(fld[14], NULL, 10);
      ti.forks = (unsigned)strtoul(fld[15], NULL, 10);
      add_run(x, &ti);
      x->r[x->nr - 1].checked = atoi(fld[13]);
    } else if (!strcmp(fld[3], "task")) {
      struct gfx g = {0};
      g.s = x->s;
      g.n = g.cap = x->ns;
      struct sample sm;
      memset(&sm, 0, sizeof sm);
      sm.t_release = start;
      sm.t_done = start + t;
      sm.exec_ns = strtoll(fld[7], NULL, 10);
      sm.gather_ns = strtoll(fld[8], NULL, 10);
      sm.t_next = start + strtoll(fld[9], NULL, 10);
      sm.in_run = atoi(fld[11]);
      sm.chk = atoi(fld[13]);
      sm.t_launch = start + strtoll(fld[16], NULL, 10);
      x->s = realloc(x->s, (x->ns + 1) * sizeof *x->s);
      if (!x->s) exit(1);
      x->s[x->ns++] = sm;
      (void)g;
    } else {
      bad_line = (int)lineno;
      break;
    }
  }
  fclose(f);
  if (bad_line) {
    fprintf(stderr, SB ": %s:%d: not a line of " SB "'s CSV\n", path, bad_line);
    return 1;
  }
  if (!nresults) {
    fprintf(stderr, SB ": %s: no results\n", path);
    return 1;
  }
  return 0;
}

static int plot(const char *png, const struct sopts *o, const char *what) {
  if (!have_gnuplot()) {
    printf(
        "png: not written: gnuplot is not installed (apt-get install gnuplot-nox); the CSV "
        "and Markdown files are (" SB " --report CSV redraws it from the CSV)\n");
    return 1;
  }
  FILE *p = popen("gnuplot", "w");
  if (!p) return 1;
  const struct result *lalone = find_result(S_LONG);
  struct lstat la;
  if (lalone) long_stats(lalone, &la);
  fprintf(p,
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1400,700 "
          "font ',10' } else { set terminal png size 1400,700 }\n"
          "set output '%s'\nset datafile missing '?'\n$d << EOD\n",
          png);
  for (int i = 0; i < nresults; i++) {
    const struct result *x = &results[i];
    char label[96];
    size_t j = 0;
    for (const char *c = x->name; *c && j + 1 < sizeof label; c++)
      label[j++] = (*c == '"' || *c == '\'') ? '-' : *c;
    label[j] = 0;
    struct gstat g;
    struct lstat l;
    char v[5][32];
    if (has_gfx(x)) gfx_stats(x, o, &g);
    if (x->has_long) long_stats(x, &l);
    double vals[5] = {has_gfx(x) ? g.p50 : NAN, has_gfx(x) ? g.p90 : NAN, has_gfx(x) ? g.p99 : NAN,
                      has_gfx(x) ? g.max : NAN, x->has_long && lalone ? l.mean / la.mean : NAN};
    for (int k = 0; k < 5; k++)
      if (isnan(vals[k]))
        snprintf(v[k], 32, "?");
      else
        snprintf(v[k], 32, "%.6g", vals[k]);
    fprintf(p, "\"%s\" %s %s %s %s %s\n", label, v[0], v[1], v[2], v[3], v[4]);
  }
  fprintf(p,
          "EOD\n"
          "set multiplot layout 1,2 title 'coop-bench-side: matmul every %.4g ms beside %s'\n"
          "set style data histogram\nset style histogram clustered gap 1\n"
          "set style fill solid 0.8 border -1\nset xtics rotate by -30 scale 0\n"
          "set grid y\nset key top left\n"
          "set logscale y\nset ylabel 'graphics task latency, release -> done (ms)'\n"
          "plot $d using 2:xtic(1) title 'p50', '' using 3 title 'p90', '' using 4 title "
          "'p99', '' using 5 title 'max', %g with lines lw 2 dt 2 title 'P'\n"
          "unset logscale y\nset yrange [0:*]\n"
          "set ylabel 'long kernel: mean run time / alone'\n"
          "plot $d using 6:xtic(1) title 'slowdown', 1 with lines dt 2 title 'alone'\n"
          "unset multiplot\n",
          o->period_ms, what, o->period_ms);
  int rc = pclose(p);
  if (rc) printf("png: gnuplot failed (status %d); the CSV and Markdown files are written\n", rc);
  return rc != 0;
}

/* The tables on stdout, the CSV (with_csv: from this run), the Markdown
 * file and the PNG beside it. */
static int emit(const struct sopts *o, int with_csv) {
  char base[1000], csv[1024], md[1024], png[1024];
  const char *path = o->csv ? o->csv : "bench/out/side-cuda.csv";
  size_t len = strlen(path);
  int cut = len > 4 && !strcmp(path + len - 4, ".csv");
  snprintf(base, sizeof base, "%.*s", (int)(cut ? len - 4 : len), path);
  snprintf(csv, sizeof csv, "%s", path);
  snprintf(md, sizeof md, "%s.md", base);
  snprintf(png, sizeof png, "%s.png", base);
  FILE *so = stdout;
  tables(&so, 1, o);
  make_parent(md);
  FILE *fc = with_csv ? fopen(csv, "w") : NULL, *fm = fopen(md, "w");
  if ((with_csv && !fc) || !fm) {
    fprintf(stderr, SB ": cannot write %s: %s\n", !fm ? md : csv, strerror(errno));
    if (fc) fclose(fc);
    if (fm) fclose(fm);
    return 1;
  }
  if (fc) {
    write_csv(fc, o);
    if (fclose(fc)) return 1;
  }
  fprintf(fm,
          "# " SB
          ": one graphics-like kernel beside one long kernel\n\n```\n%s```\n\n"
          "CSV: `%s`; plot: `%s`.\n",
          header, csv, png);
  tables(&fm, 1, o);
  if (fclose(fm)) return 1;
  printf("\ncsv: %s\nmd: %s\n", csv, md);
  char t[160];
  snprintf(t, sizeof t, "%s", title);
  for (char *c = t; *c; c++)
    if (*c == '\'' || *c == '"') *c = '-';
  if (!plot(png, o, t)) printf("png: %s\n", png);
  return 0;
}

/* --------------------------------------------------------------- main */

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
  b.app = coop_app_find(o->app);
  int nin = coop_app_input_count(b.app, (unsigned)o->scale);
  if (o->input >= nin) {
    fprintf(stderr, SB ": --input %ld: %s has %d inputs (0..%d)\n", o->input, b.app->name, nin,
            nin - 1);
    return 2;
  }
  printf(SB ": generating %s input %ld at scale %ld\n", b.app->name, o->input, o->scale);
  fflush(stdout);
  int r = coop_app_input(b.app, (unsigned)o->input, (unsigned)o->scale, &b.in);
  if (r) {
    fprintf(stderr, SB ": input: %s\n", coop_strerror(r));
    return 1;
  }

  /* (0): the plain matmul alone, before anything else runs on the GPU */
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
  struct task_ops pops = side_plain_ops(&b.p);
  if (o->setups & (1u << S_ALONE)) {
    struct result *x = new_result(S_ALONE, 0, NULL);
    printf(SB ": %s ...\n", x->name);
    fflush(stdout);
    if (gfx_alone(&b, x, &pops)) {
      rc = 1;
      goto out;
    }
  }

  /* the child of (a), its context built and warmed up while the GPU is idle */
  if (o->setups & (1u << S_PROCESS)) {
    printf(SB ": starting the process of setup (a)\n");
    fflush(stdout);
    if (child_spawn(&b.child, o, &b.p)) {
      rc = 1;
      goto out;
    }
  }

  /* the megakernel: the long kernel's application and the matmul task */
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
  ro.arena_bytes = (size_t)512 << 20;
  r = coop_rt_open(&b.rt, &ro);
  if (!r) r = coop_rt_add_kernel(b.rt, b.app->kernel, 1, b.app->source);
  if (r >= 0) r = coop_matmul_register(b.rt);
  if (!r) r = coop_rt_launch(b.rt);
  if (r) {
    fprintf(stderr, SB ": megakernel: %s\n%s\n", coop_strerror(r),
            b.rt ? coop_rt_errmsg(b.rt) : "");
    rc = 1;
    goto out;
  }
  b.workers = coop_rt_workers(b.rt);
  if (strcmp(coop_rt_device_name(b.rt), b.p.name))
    fprintf(stderr, SB ": warning: the megakernel runs on '%s', the plain launches on '%s'\n",
            coop_rt_device_name(b.rt), b.p.name);
  if (b.child.pid > 0 && strcmp(b.child.name, b.p.name))
    fprintf(stderr, SB ": warning: the process of (a) runs on '%s'\n", b.child.name);
  unsigned ks[MAXK];
  char klabels[MAXK][16];
  int nk = k_list(o->klist, b.workers, ks, klabels);
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
  make_header(&b, load, date, ks, klabels, nk);
  printf("\n" SB "\n%s\n", header);
  fflush(stdout);

  /* the long kernel alone (one unrecorded, checked run first) */
  {
    struct result warm;
    memset(&warm, 0, sizeof warm);
    snprintf(warm.name, sizeof warm.name, "warm-up");
    struct sopts one = *o;
    one.min_runs = 1;
    b.o = &one;
    int64_t w = b.window_ns;
    b.window_ns = 0;
    rc = long_window(&b, &warm, NULL);
    b.o = o;
    b.window_ns = w;
    if (!rc && warm.nr)
      printf(SB ": one run of the long kernel alone: %.2f ms\n",
             (double)(warm.r[0].t_finished - warm.r[0].t_started) / 1e6);
    free(warm.r);
    if (rc) goto out;
  }
  if (o->setups & (1u << S_LONG)) {
    struct result *x = new_result(S_LONG, 0, NULL);
    printf(SB ": %s ...\n", x->name);
    fflush(stdout);
    if ((rc = long_window(&b, x, NULL))) goto out;
  }
  struct coopgfx cg[MAXK];
  for (int i = 0; i < nk; i++) {
    cg[i] = (struct coopgfx){b.rt,
                             &b.mm,
                             b.chk,
                             ks[i],
                             (int64_t)o->timeout_s * 1000000000,
                             0,
                             (int64_t)(o->ahead_us * 1000)};
    double ms;
    if (coop_measure(&b, ks[i], &ms)) { /* warm: the buffers migrate to the GPU */
      rc = 1;
      goto out;
    }
  }
  if (o->setups & (1u << S_COOP_ALONE))
    for (int i = 0; i < nk; i++) {
      struct result *x = new_result(S_COOP_ALONE, ks[i], klabels[i]);
      printf(SB ": %s ...\n", x->name);
      fflush(stdout);
      struct task_ops ops = coop_ops(&cg[i]);
      if ((rc = gfx_alone(&b, x, &ops))) goto out;
    }
  if (o->setups & (1u << S_PROCESS)) {
    struct result *x = new_result(S_PROCESS, 0, NULL);
    printf(SB ": %s ...\n", x->name);
    fflush(stdout);
    struct gfx_ctl ctl = {ch_start, ch_stop, NULL};
    rc = long_window(&b, x, &ctl);
    rc |= child_end(&b.child);
    if (rc) goto out;
  }
  if (o->setups & (1u << S_STREAM)) {
    struct result *x = new_result(S_STREAM, 0, NULL);
    printf(SB ": %s ...\n", x->name);
    fflush(stdout);
    struct thread_arg t = {.ops = pops};
    struct gfx_ctl ctl = {th_start, th_stop, &t};
    if ((rc = long_window(&b, x, &ctl))) goto out;
  }
  if (o->setups & (1u << S_COOP))
    for (int i = 0; i < nk; i++) {
      struct result *x = new_result(S_COOP, ks[i], klabels[i]);
      printf(SB ": %s ...\n", x->name);
      fflush(stdout);
      struct thread_arg t = {.ops = coop_ops(&cg[i])};
      struct gfx_ctl ctl = {th_start, th_stop, &t};
      if ((rc = long_window(&b, x, &ctl))) goto out;
    }

  /* report */
  snprintf(title, sizeof title, "%s on %s", b.app->name, b.in.label);
  rc = emit(o, 1);

out:
  if (b.child.pid > 0) child_end(&b.child);
  if (b.rt) {
    if (b.chk) coop_rt_free(b.rt, b.chk);
    coop_matmul_close(&b.mm);
    if (coop_rt_close(b.rt)) {
      fprintf(stderr, SB ": closing the megakernel failed\n");
      rc = 1;
    }
  }
  plain_close(&b.p); /* after the megakernel: freeing waits for the device */
  coop_app_input_free(&b.in);
  for (int i = 0; i < nresults; i++) {
    free(results[i].s);
    free(results[i].r);
  }
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--child")) return side_child_main(argc, argv);
  struct sopts o = {.period_ms = 16.7,
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
                    .setups = (1u << S_COUNT) - 1};
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof o.cmd; i++)
    len += (size_t)snprintf(o.cmd + len, sizeof o.cmd - len, "%s%s", i ? " " : "", argv[i]);
  int action = parse(argc, argv, &o);
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
    for (int i = 0; i < nresults; i++) {
      free(results[i].s);
      free(results[i].r);
    }
    return r ? 1 : 0;
  }
  int rc = run(&o);
  if (rc == 1) fprintf(stderr, SB ": FAILED\n");
  return rc;
}
