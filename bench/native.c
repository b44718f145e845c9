/*
 * native.c: coop-bench-native: every cooperative application of
 * apps/ against its native baseline, on an NVIDIA GPU.
 *
 * Native: the app's NAME.cl, unchanged, compiled alone with NVRTC into a
 * plain CUDA cooperative kernel (native_cuda.c): its barriers are
 * cooperative_groups grid syncs, offer_kill and request_fork do nothing,
 * and it is launched with cuLaunchCooperativeKernel at the occupancy bound
 * (blocks per SM x SMs, at --local-size threads), on the task the app
 * describes (coop_app_task_prepare, the original form: plain global
 * barriers) in device memory. Timed with events around the launch; every
 * run's output is read back and checked against the CPU reference (struct
 * memo: an output identical to one that passed is not checked again).
 *
 * Coop: the same task on the coop megakernel of this process (the app's
 * run, coop_app_run_local, step for step: coop_run), the original form on
 * all W workers (the same algorithm as the native kernel) and the
 * cooperative form on W/4, W/2 and W: t_finished - t_started of the task's
 * record, every run checked.
 *
 * The megakernel occupies the whole GPU while it is open, so per job (an
 * app at one scale) the native runs come first, then a runtime is opened
 * for that app alone, its runs made, and closed again.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "device/shared.h" /* COOP_MAX_WG */
#include "native.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

#define MAX_RUNS 1000
#define MAX_INPUTS 16

/* ------------------------------------------------------------ options */

struct nopts {
  char apps[1024];   /* comma list; empty: every app */
  long scale, input; /* -1: the default plan */
  long runs, local, coop_local, blocks, device, timeout_s, max_registers;
  const char *csv, *backend, *arch;
  int no_coop, prefetch, query;
  char cmd[2048];
};

static void usage(FILE *f) {
  fprintf(f, "usage: " NB
             " [options]\n"
             "Every cooperative application of apps/ against its native baseline,\n"
             "on an NVIDIA GPU:\n"
             "  native     the app's NAME.cl, unchanged, compiled alone with NVRTC (the\n"
             "             runtime's dialect.h, shared.h, api.h and taskqueue.cl, a prelude\n"
             "             whose coop_global_barrier is a cooperative_groups grid sync) into\n"
             "             a plain CUDA cooperative kernel: the task's arguments copied into\n"
             "             workgroup memory (as the megakernel's workgroups read them), then\n"
             "             NAME_init, then NAME_step until DONE, a grid sync at every global\n"
             "             or resizing barrier, offer_kill never accepted, request_fork\n"
             "             forking nothing. Original form (plain\n"
             "             global barriers), launched with cuLaunchCooperativeKernel at the\n"
             "             occupancy bound (blocks/SM x SMs) on the app's task in device\n"
             "             memory; time from CUDA events around the launch.\n"
             "  original   the same task on the coop megakernel (as the app's run submits it:\n"
             "             coop_app_run_local), original form, all W workers\n"
             "  coop       the cooperative form on the megakernel at W/4, W/2 and W groups\n"
             "             (coop times: the task's record, first workgroup in -> last out)\n"
             "Each: the median of --runs runs after one warm-up, buffers reset before each,\n"
             "every run's output checked against the CPU reference (warm-up too; an output\n"
             "identical byte for byte to one of the same input that passed counts as checked).\n"
             "Default plan: bfs on road-1024x1024 (scale 12, input 1), then every\n"
             "application on each of its scale-6 inputs. --scale or --input replace the\n"
             "plan by: each selected application at scale S (default 6), input I (default\n"
             "all); --app alone narrows the default plan (bfs's road run stays when bfs is\n"
             "selected).\n"
             "Output: per job the native kernel (registers, static shared bytes, local bytes,\n"
             "blocks/SM, launch) and a table of median ms and coop/native ratios on stdout;\n"
             "a CSV with one row per sample (default bench/out/native-cuda.csv).\n"
             "Options:\n"
             "  --app NAME         an application (by name or kernel); repeatable, or a\n"
             "                     comma list (default: all)\n"
             "  --scale S          input scale 0..12 for every selected app\n"
             "  --input I          only input I of each selected app\n"
             "  --runs N           measured runs per form (default 5)\n"
             "  --local-size L     threads per block, native and megakernel (default 256)\n"
             "  --coop-local-size L  the megakernel's local size (default: --local-size)\n"
             "  --blocks B         native launch of B blocks instead of the occupancy bound\n"
             "  --backend NAME     the megakernel's backend: auto, opencl or cuda (default:\n"
             "                     $COOP_BACKEND, else cuda)\n"
             "  --barrier B        plain or query: the cooperative form's resizing barrier\n"
             "                     (default query)\n"
             "  --coop-prefetch    also prefetch the coop task's buffers (managed memory,\n"
             "                     filled by the copy engine as the app's run fills them)\n"
             "                     to the GPU before the submit (default: no prefetch, as\n"
             "                     the app's run does)\n"
             "  --max-registers R  the megakernel's register cap per thread (CUDA), as\n"
             "                     coopd's [device] max_registers (whose default is 80);\n"
             "                     default 0: the runtime's, uncapped\n"
             "  --no-coop          native runs only (no megakernel)\n"
             "  --device I         CUDA device index (default 0)\n"
             "  --timeout S        seconds one run may take (default 120)\n"
             "  --csv FILE         CSV output (default bench/out/native-cuda.csv)\n"
             "  --source           print the native source of each selected app and exit\n"
             "  --barriers         instead of the applications: a plain grid sync's cost\n"
             "                     (coop-bench-micro's barrier task compiled natively) at\n"
             "                     1, 2, 4, ... blocks up to the occupancy bound and at 2 x SMs,\n"
             "                     local sizes 64 and 256 (--local-size: that one only);\n"
             "                     then a no-op launch's round trip (launch -> the host sees\n"
             "                     it done) at 1 block and the bound, --local-size threads\n"
             "  --compile-only     compile each selected app's native source with NVRTC for\n"
             "                     --arch and exit (no GPU needed, only libnvrtc and the\n"
             "                     toolkit's headers)\n"
             "  --arch SM          architecture for --compile-only (default sm_90)\n"
             "  --help             this text\n"
             "Environment: COOP_BACKEND; COOP_NVRTC (the NVRTC library to try first);\n"
             "COOP_CUDA_INCLUDE (':'-separated include directories for NVRTC, one holding\n"
             "cooperative_groups.h; default: the build's CUDA toolkit, $CUDA_HOME/include,\n"
             "$CUDA_PATH/include, /usr/local/cuda/include).\n"
             "Exit status: 0; 1 on a wrong result, a failed run, or no usable GPU; 2 on a\n"
             "bad command line.\n");
}

#define bad(...) bench_usage_error(NB, __VA_ARGS__)
#define parse_num(name, s, lo, hi) bench_parse_num(NB, name, s, lo, hi)

static int app_selected(const struct nopts *o, const struct coop_app *a) {
  if (!o->apps[0]) return 1;
  for (const char *p = o->apps; *p;) {
    size_t len = strcspn(p, ",");
    if ((strlen(a->name) == len && !strncmp(p, a->name, len)) ||
        (strlen(a->kernel) == len && !strncmp(p, a->kernel, len)))
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static void check_apps(const char *list) {
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), p);
    if (!len) bad("--app: an empty name in '%s'", list);
    if (!coop_app_find(name)) bad("--app: no application '%s' in this build", name);
    p += len + (p[len] == ',');
  }
}

enum { ACT_RUN, ACT_SOURCE, ACT_COMPILE, ACT_BARRIERS };

static int parse(int argc, char **argv, struct nopts *o) {
  static const struct option lo[] = {
      {"app", 1, 0, 'a'},           {"scale", 1, 0, 'S'},         {"input", 1, 0, 'i'},
      {"runs", 1, 0, 'r'},          {"local-size", 1, 0, 'l'},    {"coop-local-size", 1, 0, 'L'},
      {"blocks", 1, 0, 'B'},        {"backend", 1, 0, 'b'},       {"barrier", 1, 0, 'q'},
      {"coop-prefetch", 0, 0, 'p'}, {"no-coop", 0, 0, 'n'},       {"device", 1, 0, 'd'},
      {"timeout", 1, 0, 't'},       {"csv", 1, 0, 'o'},           {"source", 0, 0, 'X'},
      {"compile-only", 0, 0, 'C'},  {"barriers", 0, 0, 'G'},      {"arch", 1, 0, 'A'},
      {"help", 0, 0, 'h'},          {"max-registers", 1, 0, 'R'}, {0, 0, 0, 0}};
  int ch, action = ACT_RUN;
  opterr = 0;
  const char *inexact = inexact_option(argc, argv, lo);
  if (inexact) bad("unknown option '%s'", inexact);
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (ch) {
      case 'h':
        usage(stdout);
        exit(0);
      case 'a': {
        check_apps(optarg);
        size_t l = strlen(o->apps);
        if (l + strlen(optarg) + 2 > sizeof o->apps) bad("--app: too many names%s", "");
        snprintf(o->apps + l, sizeof o->apps - l, "%s%s", l ? "," : "", optarg);
        break;
      }
      case 'S':
        o->scale = parse_num("scale", optarg, 0, 12);
        break;
      case 'i':
        o->input = parse_num("input", optarg, 0, MAX_INPUTS - 1);
        break;
      case 'r':
        o->runs = parse_num("runs", optarg, 1, MAX_RUNS);
        break;
      case 'l':
        o->local = parse_num("local-size", optarg, 32, 1024);
        if (o->local & (o->local - 1)) bad("--local-size: '%s' is not a power of two", optarg);
        break;
      case 'L':
        o->coop_local = parse_num("coop-local-size", optarg, 32, 1024);
        if (o->coop_local & (o->coop_local - 1))
          bad("--coop-local-size: '%s' is not a power of two", optarg);
        break;
      case 'B':
        o->blocks = parse_num("blocks", optarg, 1, 1 << 20);
        break;
      case 'b':
        if (strcmp(optarg, "auto") && strcmp(optarg, "opencl") && strcmp(optarg, "cuda"))
          bad("--backend: '%s' is not auto, opencl or cuda", optarg);
        o->backend = optarg;
        break;
      case 'q':
        if (strcmp(optarg, "plain") && strcmp(optarg, "query"))
          bad("--barrier: '%s' is not plain or query", optarg);
        o->query = !strcmp(optarg, "query");
        break;
      case 'p':
        o->prefetch = 1;
        break;
      case 'n':
        o->no_coop = 1;
        break;
      case 'R':
        o->max_registers = parse_num("max-registers", optarg, 0, 255);
        break;
      case 'd':
        o->device = parse_num("device", optarg, 0, 1024);
        break;
      case 't':
        o->timeout_s = parse_num("timeout", optarg, 1, 86400);
        break;
      case 'o':
        o->csv = optarg;
        break;
      case 'X':
        action = ACT_SOURCE;
        break;
      case 'G':
        action = ACT_BARRIERS;
        break;
      case 'C':
        action = ACT_COMPILE;
        break;
      case 'A':
        if (strncmp(optarg, "sm_", 3) && strncmp(optarg, "compute_", 8))
          bad("--arch: '%s' is not sm_XY or compute_XY", optarg);
        o->arch = optarg;
        break;
      default:
        bad("unknown option or missing value%s", "");
    }
  }
  if (optind != argc) bad("unexpected argument '%s'", argv[optind]);
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof o->cmd; i++)
    len += (size_t)snprintf(o->cmd + len, sizeof o->cmd - len, "%s%s", i ? " " : "", argv[i]);
  return action;
}

/* ------------------------------------------------------------ plan */

struct job {
  const struct coop_app *a;
  unsigned scale;
  int input; /* -1: all */
};

static int make_plan(const struct nopts *o, struct job *jobs, int max) {
  int n = 0;
  int custom = o->scale >= 0 || o->input >= 0;
  const struct coop_app *bfs = coop_app_find("bfs");
  if (!custom && bfs && app_selected(o, bfs) && n < max)
    jobs[n++] = (struct job){bfs, 12, 1}; /* road 1024 x 1024 */
  for (unsigned i = 0; i < coop_napps && n < max; i++)
    if (app_selected(o, coop_apps[i]))
      jobs[n++] = (struct job){coop_apps[i], o->scale >= 0 ? (unsigned)o->scale : 6u,
                               o->input >= 0 ? (int)o->input : -1};
  return n;
}

/* ------------------------------------------------------------ output */

static FILE *csv;

static void put_comment(FILE *f, const char *h) {
  for (const char *l = h; *l;) {
    size_t len = strcspn(l, "\n");
    if (len) fprintf(f, "# %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
}

/* Printed on stdout and, as a comment, in the CSV. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fputs(buf, stdout);
  if (csv) put_comment(csv, buf);
  fflush(stdout);
}

static void csv_row(const struct coop_app *a, const struct coop_app_input *in, unsigned scale,
                    const char *form, unsigned groups, unsigned local, int run, double ns,
                    const struct coop_rt_task_info *ti) {
  if (!csv) return;
  fprintf(csv, "%s,%s,%u,%s,%u,%u,%d,%.0f,%u,%u,%u\n", a->name, in->label, scale, form, groups,
          local, run, ns, ti ? ti->kills : 0u, ti ? ti->forks : 0u, ti ? ti->m_min : groups);
}

/* ------------------------------------------------------------ results */

enum { F_NATIVE, F_ORIG_W, F_COOP_W4, F_COOP_W2, F_COOP_W, F_COUNT };
static const char *const form_head[F_COUNT] = {"native", "orig@W", "coop@W/4", "coop@W/2",
                                               "coop@W"};

struct row {
  char label[64];
  double ms[F_COUNT]; /* NAN: not run (or failed) */
  unsigned groups[F_COUNT];
};

struct bench {
  struct nopts *o;
  struct native_dev d;
  int have_dev;
  int wrong; /* some output check failed */
};

/* The first output of an input that passed the check: a later output
 * identical to it byte for byte is right without the CPU reference again
 * (game's takes a minute at scale 6); any other output is checked. */
struct memo {
  void *out;
  size_t bytes;
};

static void memo_free(struct memo *m) {
  free(m->out);
  m->out = NULL;
  m->bytes = 0;
}

static int check_out(struct bench *b, const struct coop_app *a, const struct coop_app_input *in,
                     struct memo *m, const char *form, unsigned groups, int run, const void *out,
                     size_t bytes) {
  char why[256] = "";
  if (m->out && bytes == m->bytes && !memcmp(out, m->out, bytes)) return 0;
  if (!a->check(in, out, why, sizeof why)) {
    if (!m->out && (m->out = malloc(bytes ? bytes : 1))) {
      memcpy(m->out, out, bytes);
      m->bytes = bytes;
    }
    return 0;
  }
  fprintf(stderr, NB ": %s on %s, %s at %u groups, run %d: WRONG RESULT: %s\n", a->name, in->label,
          form, groups, run, why);
  b->wrong = 1;
  return 1;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n ? v[(n - 1) / 2] : NAN;
}

/* ------------------------------------------------------------ native */

/* The native runs of one input: *ms the median, NAN on a wrong result.
 * 0; 1 on a failure that ends the bench. */
static int native_input(struct bench *b, struct native_kernel *k, const struct coop_app_input *in,
                        unsigned scale, struct memo *m, double *ms) {
  const struct coop_app *a = k->app;
  struct coop_app_opts ao = {.groups = k->blocks, .mode = COOP_APP_MODE_ORIGINAL};
  struct coop_app_task t;
  struct native_task nt;
  double v[MAX_RUNS];
  int nv = 0, wrong = 0;
  *ms = NAN;
  int r = coop_app_task_prepare(&t, a, in, &ao, k->blocks);
  if (r) {
    fprintf(stderr, NB ": %s on %s: preparing the task: %s\n", a->name, in->label,
            coop_strerror(r));
    return 1;
  }
  if (native_task_open(&b->d, &nt, &t)) {
    fprintf(stderr, NB ": %s on %s: %s\n", a->name, in->label, b->d.err);
    native_task_close(&b->d, &nt);
    coop_app_task_free(&t);
    return 1;
  }
  int rc = 0;
  for (int i = -1; i < b->o->runs && !rc; i++) {
    double ns = 0;
    int e = native_task_run(&b->d, k, &nt, &ns);
    if (e) {
      fprintf(stderr, NB ": %s on %s: %s\n", a->name, in->label, b->d.err);
      if (e == 2) exit(1); /* a kernel still runs on the GPU */
      rc = 1;
      break;
    }
    struct coop_app_task t2;
    unsigned fault = 0;
    void *out = NULL;
    size_t bytes = 0;
    r = coop_app_task_prepare(&t2, a, in, &ao, k->blocks);
    if (r) {
      fprintf(stderr, NB ": %s on %s: preparing the task: %s\n", a->name, in->label,
              coop_strerror(r));
      rc = 1;
      break;
    }
    if (native_task_read(&b->d, &nt, &t2, &fault)) {
      fprintf(stderr, NB ": %s on %s: %s\n", a->name, in->label, b->d.err);
      rc = 1;
    } else if (fault) {
      fprintf(stderr, NB ": %s on %s, native, run %d: a view faulted (tag %u): WRONG RESULT\n",
              a->name, in->label, i, fault);
      b->wrong = wrong = 1;
    } else if ((r = coop_app_task_collect(&t2, in, &out, &bytes))) {
      fprintf(stderr, NB ": %s on %s: collecting the output: %s\n", a->name, in->label,
              coop_strerror(r));
      rc = 1;
    } else {
      wrong |= check_out(b, a, in, m, "native", k->blocks, i, out, bytes);
    }
    free(out);
    coop_app_task_free(&t2);
    if (!rc && i >= 0) {
      v[nv++] = ns;
      csv_row(a, in, scale, "native", k->blocks, k->local, i, ns, NULL);
    }
  }
  native_task_close(&b->d, &nt);
  coop_app_task_free(&t);
  if (!rc && !wrong) *ms = median(v, nv) / 1e6;
  return rc;
}

/* ------------------------------------------------------------ coop */

/* --coop-prefetch: a filled buffer prefetched to the GPU (managed memory). */
struct prefetch {
  struct bench *b;
  const struct coop_app *a;
};

static int prefetch_filled(void *user, void *buf, size_t size) {
  struct prefetch *pf = user;
  if (!native_dev_prefetch(&pf->b->d, buf, size)) return 0;
  fprintf(stderr, NB ": %s: --coop-prefetch: %s (is the arena managed memory?)\n", pf->a->name,
          pf->b->d.err);
  return COOP_EFAILED;
}

/* app->run, i.e. coop_app_run_local (every app's run is that), with two
 * things the app's run does not give: the output's size (*bytes, for
 * struct memo) and, with --coop-prefetch, the buffers prefetched to the
 * GPU after they were filled. */
static int coop_run(struct bench *b, coop_rt *rt, const struct coop_app *a,
                    const struct coop_app_input *in, const struct coop_app_opts *o, void **out,
                    size_t *bytes, struct coop_rt_task_info *info) {
  *out = NULL;
  *bytes = 0;
  struct coop_app_task t;
  int r = coop_app_task_prepare(&t, a, in, o, o->groups ? o->groups : coop_rt_workers(rt));
  if (r) return r;
  struct prefetch pf = {b, a};
  r = coop_app_task_run(rt, a, &t, o, b->o->prefetch ? prefetch_filled : NULL, &pf, info);
  if (r == 0) r = coop_app_task_collect(&t, in, out, bytes);
  coop_app_task_free(&t);
  return r;
}

/* One form at `groups` on the megakernel: *ms the median, NAN on a wrong
 * result. 0; 1 on a failed run. */
static int coop_form(struct bench *b, coop_rt *rt, const struct coop_app *a,
                     const struct coop_app_input *in, unsigned scale, struct memo *m, unsigned mode,
                     unsigned groups, double *ms) {
  const char *form = mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative";
  struct coop_app_opts ao = {.groups = groups,
                             .mode = mode,
                             .query_barrier = b->o->query,
                             .timeout_ms = (int)b->o->timeout_s * 1000};
  double v[MAX_RUNS];
  int nv = 0, wrong = 0;
  *ms = NAN;
  for (int i = -1; i < b->o->runs; i++) {
    struct coop_rt_task_info ti;
    void *out = NULL;
    size_t bytes = 0;
    memset(&ti, 0, sizeof ti);
    int r = coop_run(b, rt, a, in, &ao, &out, &bytes, &ti);
    if (!r && ti.state != COOP_TASK_DONE) r = COOP_EFAILED;
    if (r) {
      fprintf(stderr, NB ": %s on %s, %s at %u groups: %s\n", a->name, in->label, form, groups,
              coop_strerror(r));
      free(out);
      if (r == COOP_EFAULT) {
        b->wrong = 1;
        continue;
      }
      return 1;
    }
    wrong |= check_out(b, a, in, m, form, groups, i, out, bytes);
    free(out);
    double ns = (double)(ti.t_finished - ti.t_started);
    if (i >= 0) {
      v[nv++] = ns;
      csv_row(a, in, scale, form, groups, (unsigned)(b->o->coop_local), i, ns, &ti);
    }
  }
  if (!wrong && nv == b->o->runs) *ms = median(v, nv) / 1e6;
  return 0;
}

/* The arena a job's runtime needs: the largest task of its inputs at the
 * most groups any launch can have, with the arena's guards, plus room. */
static size_t arena_for(const struct coop_app *a, struct coop_app_input *ins, int n) {
  size_t most = 0;
  struct coop_app_opts ao = {.groups = COOP_MAX_WG, .mode = COOP_APP_MODE_COOPERATIVE};
  for (int i = 0; i < n; i++) {
    struct coop_app_task t;
    if (coop_app_task_prepare(&t, a, &ins[i], &ao, COOP_MAX_WG)) continue;
    size_t sum = 0;
    for (unsigned j = 0; j < t.nargs; j++)
      if (t.arg[j].buf) sum += (t.arg[j].size + 63) / 64 * 64 + 2 * 64;
    coop_app_task_free(&t);
    if (sum > most) most = sum;
  }
  size_t bytes = most + most / 4 + ((size_t)16 << 20);
  return bytes < ((size_t)64 << 20) ? ((size_t)64 << 20) : bytes;
}

/* ------------------------------------------------------------ jobs */

static void print_table(const struct job *j, const struct row *rows, int n, int coop,
                        unsigned workers, int64_t took_ns) {
  if (coop)
    printf("\n%s, scale %u: median ms (W = %u workers; the job took %.0f s)\n", j->a->name,
           j->scale, workers, (double)took_ns / 1e9);
  else
    printf("\n%s, scale %u: median ms (the job took %.0f s)\n", j->a->name, j->scale,
           (double)took_ns / 1e9);
  printf("%-24s", "input");
  for (int f = 0; f < F_COUNT; f++)
    if (f == F_NATIVE || coop) printf(" %10s", form_head[f]);
  if (coop) printf(" %11s %11s", "orig/native", "coop/native");
  printf("\n");
  for (int i = 0; i < n; i++) {
    const struct row *r = &rows[i];
    printf("%-24s", r->label);
    for (int f = 0; f < F_COUNT; f++)
      if (f == F_NATIVE || coop) {
        if (isnan(r->ms[f]))
          printf(" %10s", "-");
        else
          printf(" %10.3f", r->ms[f]);
      }
    if (coop) {
      double n0 = r->ms[F_NATIVE];
      printf(" %11.2f %11.2f", r->ms[F_ORIG_W] / n0, r->ms[F_COOP_W] / n0);
    }
    printf("\n");
  }
  if (coop) {
    printf("groups:");
    for (int f = 0; f < F_COUNT; f++) printf(" %s=%u", form_head[f], n ? rows[0].groups[f] : 0u);
    printf("\n");
  }
  fflush(stdout);
}

static int run_job(struct bench *b, const struct job *j, struct native_kernel *k) {
  const struct nopts *o = b->o;
  const struct coop_app *a = j->a;
  struct coop_app_input ins[MAX_INPUTS];
  struct row rows[MAX_INPUTS];
  struct memo memos[MAX_INPUTS];
  int64_t t0 = now_ns();
  int count = coop_app_input_count(a, j->scale), n = 0, rc = 0;
  if (count > MAX_INPUTS) count = MAX_INPUTS;
  if (j->input >= count) {
    printf("\n%s, scale %u: no input %d (it has %d): skipped\n", a->name, j->scale, j->input,
           count);
    return 0;
  }
  memset(rows, 0, sizeof rows);
  memset(memos, 0, sizeof memos);
  for (int i = 0; i < count; i++) {
    if (j->input >= 0 && i != j->input) continue;
    int r = coop_app_input(a, (unsigned)i, j->scale, &ins[n]);
    if (r) {
      fprintf(stderr, NB ": %s: input %d at scale %u: %s\n", a->name, i, j->scale,
              coop_strerror(r));
      rc = 1;
      break;
    }
    snprintf(rows[n].label, sizeof rows[n].label, "%s", ins[n].label);
    for (int f = 0; f < F_COUNT; f++) rows[n].ms[f] = NAN;
    n++;
  }
  /* native */
  for (int i = 0; i < n && !rc; i++) {
    rows[i].groups[F_NATIVE] = k->blocks;
    if (a->input == COOP_INPUT_GRAPH)
      note("%s on %s (%u vertices, %u edges), native: %u blocks x %u threads\n", a->name,
           ins[i].label, ins[i].graph.n, ins[i].graph.m, k->blocks, k->local);
    else
      note("%s on %s, native: %u blocks x %u threads\n", a->name, ins[i].label, k->blocks,
           k->local);
    rc = native_input(b, k, &ins[i], j->scale, &memos[i], &rows[i].ms[F_NATIVE]);
  }
  /* coop: a runtime of this app alone, for this job */
  unsigned workers = 0;
  if (!rc && !o->no_coop) {
    struct coop_rt_options ro;
    coop_rt *rt = NULL;
    coop_rt_options_init(&ro);
    ro.backend = o->backend;
    ro.local_size = (unsigned)o->coop_local;
    ro.device_index = (int)o->device;
    ro.arena_bytes = arena_for(a, ins, n);
    ro.max_registers = (unsigned)o->max_registers;
    int r = coop_rt_open(&rt, &ro);
    if (!r) r = coop_rt_add_kernel(rt, a->kernel, 1, a->source);
    if (r >= 0) r = coop_rt_launch(rt);
    if (r) {
      fprintf(stderr, NB ": %s: the megakernel: %s\n%s\n", a->name, coop_strerror(r),
              rt ? coop_rt_errmsg(rt) : "");
      rc = 1;
    } else {
      workers = coop_rt_workers(rt);
      note(
          "megakernel for %s: backend %s (%s), %s, launched %u workgroups, %u workers, local "
          "size %u, arena %zu MiB%s\n",
          a->name, coop_rt_backend(rt), coop_rt_backend_note(rt), coop_rt_device_name(rt),
          coop_rt_launched_groups(rt), workers, (unsigned)o->coop_local, ro.arena_bytes >> 20,
          o->prefetch ? ", buffers prefetched to the GPU" : "");
      unsigned g[F_COUNT] = {0, workers, workers / 4 ? workers / 4 : 1,
                             workers / 2 ? workers / 2 : 1, workers};
      for (int i = 0; i < n && !rc; i++)
        for (int f = F_ORIG_W; f < F_COUNT && !rc; f++) {
          rows[i].groups[f] = g[f];
          rc = coop_form(b, rt, a, &ins[i], j->scale, &memos[i],
                         f == F_ORIG_W ? COOP_APP_MODE_ORIGINAL : COOP_APP_MODE_COOPERATIVE, g[f],
                         &rows[i].ms[f]);
        }
    }
    if (rt && coop_rt_close(rt)) {
      fprintf(stderr, NB ": %s: closing the megakernel failed\n", a->name);
      rc = 1;
    }
  }
  if (n) print_table(j, rows, n, !o->no_coop && workers > 0, workers, now_ns() - t0);
  for (int i = 0; i < n; i++) {
    coop_app_input_free(&ins[i]);
    memo_free(&memos[i]);
  }
  return rc;
}

/* ------------------------------------------------------------ main */

static int compile_only(const struct nopts *o) {
  const char *arch = o->arch ? o->arch : "sm_90";
  int rc = 0;
  printf("NVRTC include path: %s\n", native_include_dirs());
  for (unsigned i = 0; i < coop_napps; i++) {
    const struct coop_app *a = coop_apps[i];
    if (!app_selected(o, a)) continue;
    char err[1024] = "";
    size_t bytes = 0;
    if (native_compile_only(a, arch, &bytes, err, sizeof err)) {
      fprintf(stderr, NB ": %s: %s\n", a->name, err);
      rc = 1;
    } else {
      printf("%-8s native_%s for %s: ok, cubin %zu bytes\n", a->name, a->kernel, arch, bytes);
    }
  }
  return rc;
}

static int print_sources(const struct nopts *o) {
  for (unsigned i = 0; i < coop_napps; i++) {
    if (!app_selected(o, coop_apps[i])) continue;
    char *s = native_source(coop_apps[i]);
    if (!s) return 1;
    fputs(s, stdout);
    free(s);
  }
  return 0;
}

static FILE *open_csv(const char *path) {
  make_parent(path);
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, NB ": %s: %s\n", path, strerror(errno));
  return f;
}

int main(int argc, char **argv) {
  struct nopts o = {.scale = -1,
                    .input = -1,
                    .runs = 5,
                    .local = 256,
                    .timeout_s = 120,
                    .query = 1,
                    .backend = getenv("COOP_BACKEND")};
  if (o.backend && !*o.backend) o.backend = NULL;
  int action = parse(argc, argv, &o);
  if (!o.backend) o.backend = "cuda";
  if (!o.coop_local) o.coop_local = o.local;
  if (action == ACT_SOURCE) return print_sources(&o) ? 1 : 0;
  if (action == ACT_COMPILE) return compile_only(&o) ? 1 : 0;

  struct bench b;
  int rc = 0;
  memset(&b, 0, sizeof b);
  b.o = &o;
  if (native_dev_open(&b.d, (int)o.device)) {
    fprintf(stderr, NB ": %s\n", b.d.err);
    return 1;
  }
  b.d.timeout_ns = (int64_t)o.timeout_s * 1000000000;
  const char *path = o.csv ? o.csv : "bench/out/native-cuda.csv";
  if (!(csv = open_csv(path))) {
    native_dev_close(&b.d);
    return 1;
  }
  char date[64], load[64];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  load_avg(load, sizeof load);
  struct machine mc;
  machine_of(&mc);
  note(NB
       "\n"
       "machine: %s, %s, %s, %ld cores online, load average %s at start\n"
       "device: %s, %d SMs, compute capability %d.%d, CUDA driver %d.%d\n"
       "commit: %s (at build time); run %s\n"
       "native: NVRTC, include path %s; local size %ld%s\n"
       "megakernel: %s; backend %s, local size %ld, %s resizing barrier%s\n"
       "runs: median of %ld after 1 warm-up, every output checked (identical outputs once)\n"
       "command: %s\n",
       mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), load, b.d.name, b.d.sms,
       b.d.cc_major, b.d.cc_minor, b.d.driver / 1000, b.d.driver % 1000 / 10, COOP_BENCH_COMMIT,
       date, native_include_dirs(), o.local, o.blocks ? ", fixed block count" : "",
       o.no_coop ? "not run (--no-coop)" : "run per job", o.backend, o.coop_local,
       o.query ? "query" : "plain", o.prefetch ? ", buffers prefetched" : "", o.runs, o.cmd);
  printf("csv: %s\n", path);
  if (action == ACT_BARRIERS) {
    unsigned both[] = {64u, 256u}, one[] = {(unsigned)o.local};
    int given = o.local != 256; /* --local-size given: that one only */
    rc = native_barriers(&b.d, given ? one : both, given ? 1 : 2, csv);
    if (!rc) rc = native_launch_trips(&b.d, (unsigned)o.local, csv);
    if (rc) fprintf(stderr, NB ": %s\n", b.d.err);
    fclose(csv);
    native_dev_close(&b.d);
    return rc;
  }
  fprintf(csv, "app,input,scale,form,groups,local_size,run,time_ns,kills,forks,m_min\n");

  struct job jobs[64];
  int njobs = make_plan(&o, jobs, 64);
  struct native_kernel kernels[64];
  memset(kernels, 0, sizeof kernels);
  for (int i = 0; i < njobs && !rc; i++) {
    const struct coop_app *a = jobs[i].a;
    unsigned ai = 0;
    while (ai < coop_napps && coop_apps[ai] != a) ai++;
    struct native_kernel *k = &kernels[ai];
    if (!k->fn) {
      if (native_kernel_open(&b.d, k, a, (unsigned)o.local, (unsigned)o.blocks)) {
        fprintf(stderr, NB ": %s\n", b.d.err);
        rc = 1;
        break;
      }
      note(
          "\nnative %s: %d registers, %d bytes static shared, %d bytes local per thread, %d "
          "blocks/SM x %d SMs at %u threads: launch of %u blocks\n",
          a->name, k->regs, k->shared_bytes, k->local_bytes, k->blocks_per_sm, b.d.sms, k->local,
          k->blocks);
    }
    rc = run_job(&b, &jobs[i], k);
  }
  for (unsigned i = 0; i < coop_napps && i < 64; i++) native_kernel_close(&b.d, &kernels[i]);
  native_dev_close(&b.d);
  if (csv && fclose(csv)) rc = 1;
  if (b.wrong) fprintf(stderr, NB ": WRONG RESULTS (see above)\n");
  if (rc) fprintf(stderr, NB ": FAILED\n");
  return rc || b.wrong ? 1 : 0;
}
