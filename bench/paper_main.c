/*
 * paper_main.c: coop-bench-paper's command line and main. The experiments
 * are in paper_overhead.c (004 Table 2), paper_responsive.c (Figure 5) and
 * paper_multitask.c (Figure 6 / Table 3); paper.h says what each measures.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper.h"

static void usage(FILE *f) {
  fprintf(f, "usage: " PB
             " overhead|responsive|multitask [options]\n"
             "The experiments of paper 004 Sec. 5 on every application of apps/\n"
             "(one megakernel per application: its kernel + the matmul graphics task):\n"
             "  overhead    Table 2: original vs cooperative form on every worker, no other\n"
             "              task; per input the median times and slowdown = coop/original\n"
             "              (median of the per-run ratios, min and max); geometric mean and\n"
             "              max over all applications and inputs\n"
             "  responsive  Figure 5: periodic matmul tasks of K = 1, N/4, N/2, N-1 groups\n"
             "              while the cooperative form runs, with the plain and the query\n"
             "              resizing barrier; gather and execution time p50/p90/p99/max\n"
             "  multitask   Figure 6 / Table 3: light (P 70 ms, E 3), medium (40, 3) and\n"
             "              heavy (40, 10) tasks every P on K groups; the application's\n"
             "              slowdown against running alone, the achieved period (median\n"
             "              interval between finishes), deadline misses (finish > release\n"
             "              + P), against the kernel-level preemption model P/(P-E)\n"
             "E is calibrated (coop_matmul_calibrate, then rescaled once) so that one task\n"
             "on all N workers of the idle megakernel takes E, as 004 Sec. 5.2 measured it,\n"
             "or (--calibrate one) so that it takes N x E on one workgroup.\n"
             "Every application result is checked against its CPU reference (exit 1 if\n"
             "wrong), and every matmul product too. Timing is never asserted.\n"
             "Output: a header and tables on stdout; bench/out/EXP-BACKEND.csv (every\n"
             "sample), .md (the tables) and .png (gnuplot, if installed).\n"
             "Options:\n"
             "  --backend NAME     auto, opencl or cuda (default: $COOP_BACKEND, else auto)\n"
             "  --quick            fewer runs and samples (each experiment < 10 min on PoCL\n"
             "                     with 4 compute units on 2 cores)\n"
             "  --runs R           overhead: runs of each form (default 10, quick 3);\n"
             "                     multitask: runs alone and at least per window (same)\n"
             "  --samples S        responsive: tasks released during application runs per\n"
             "                     configuration (default 50, quick 10)\n"
             "  --periods W        multitask: a window lasts at least W periods (default 25,\n"
             "                     quick 8)\n"
             "  --scale S          input size, 0..12 (default 0, the test inputs)\n"
             "  --apps LIST        comma-separated application names (default: all)\n"
             "  --max-inputs N     at most N inputs per application (default: all)\n"
             "  --class NAME       responsive: light, medium or heavy (default medium)\n"
             "  --barrier B        plain, query or both: the resizing-barrier variant of the\n"
             "                     graph applications (default: responsive both, multitask\n"
             "                     query); the work-stealing ones have none\n"
             "  --time-scale F     multiply every P and E by F (default 1; the model\n"
             "                     P/(P-E) does not change)\n"
             "  --calibrate C      auto, all or one: E on all N workers, or N x E on one\n"
             "                     workgroup (auto: all on cuda, one on opencl, where on a\n"
             "                     CPU a task on all workers waits for OS time slices)\n"
             "  --matrix N         matmul size (default 4 x workers, at least 48, halved\n"
             "                     while one repetition takes more than E / 4)\n"
             "  --local-size L     threads per workgroup (default 64)\n"
             "  --arena-mb M       the runtime's arena for task buffers, MiB (default 64 up to\n"
             "                     scale 2, doubled for each scale above up to 8192)\n"
             "  --check-all        responsive, multitask: check every run's output; by default\n"
             "                     the first, the last and those the scheduler resized come\n"
             "                     first, and checking stops when it has taken as long as\n"
             "                     the window (>= 1 s); the counts are reported\n"
             "  --timeout S        seconds one application run or task may take (default 600)\n"
             "  --csv FILE         CSV output; the .md and .png go beside it (FILE less .csv)\n"
             "  --help             this text\n"
             "Environment: COOP_BACKEND; POCL_MAX_PTHREAD_COUNT sets PoCL's compute units.\n"
             "Exit status: 0, 1 on a failed or wrong run, 2 on a bad command line.\n");
}

#define bad(...) bench_usage_error(PB, __VA_ARGS__)

#define parse_num(name, s, lo, hi) bench_parse_num(PB, name, s, lo, hi)

static double parse_real(const char *name, const char *s) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v > 0 && v <= 1000))
    bad("--%s: '%s' is not in (0, 1000]", name, s);
  return v;
}

static int barrier_of(const char *s) {
  if (!strcmp(s, "plain")) return 1;
  if (!strcmp(s, "query")) return 2;
  if (!strcmp(s, "both")) return 3;
  bad("--barrier: '%s' is not plain, query or both%s", s, "");
  return 0;
}

static int calibrate_of(const char *s) {
  if (!strcmp(s, "auto")) return 0;
  if (!strcmp(s, "all")) return 1;
  if (!strcmp(s, "one")) return 2;
  bad("--calibrate: '%s' is not auto, all or one%s", s, "");
  return 0;
}

static void option(struct popts *o, int ch, const char *arg) {
  if (ch == 'b') o->backend = arg;
  if (ch == 'q') o->quick = 1;
  if (ch == 'r') o->runs = parse_num("runs", arg, 1, 100000);
  if (ch == 's') o->samples = parse_num("samples", arg, 1, 1000000);
  if (ch == 'p') o->periods = parse_num("periods", arg, 1, 100000);
  if (ch == 'S') o->scale = parse_num("scale", arg, 0, 12);
  if (ch == 'a') o->apps = arg;
  if (ch == 'i') o->max_inputs = parse_num("max-inputs", arg, 1, 1000);
  if (ch == 'c') o->cls = arg;
  if (ch == 'B') o->barrier = barrier_of(arg);
  if (ch == 'C') o->calibrate = calibrate_of(arg);
  if (ch == 'K') o->check_all = 1;
  if (ch == 'T') o->time_scale = parse_real("time-scale", arg);
  if (ch == 'm') o->matrix = parse_num("matrix", arg, 1, 4096);
  if (ch == 'l') o->local_size = parse_num("local-size", arg, 1, 1024);
  if (ch == 'A') o->arena_mb = parse_num("arena-mb", arg, 1, 65536);
  if (ch == 't') o->timeout_s = parse_num("timeout", arg, 1, 86400);
  if (ch == 'o') o->csv = arg;
  if (ch == '?' || ch == ':') bad("unknown option or missing value%s%s", "", "");
}

static void defaults(struct popts *o) {
  if (!o->runs) o->runs = o->quick ? 3 : 10;
  if (!o->samples) o->samples = o->quick ? 10 : 50;
  if (!o->periods) o->periods = o->quick ? 8 : 25;
  /* 64 MiB holds every input up to scale 2; inputs grow about 2^scale
   * (octree at scale 6: 1.9 M points) */
  if (!o->arena_mb) o->arena_mb = 64L << (o->scale > 2 ? (o->scale < 9 ? o->scale : 9) - 2 : 0);
  if (!o->barrier) o->barrier = o->exp == EXP_RESPONSIVE ? 3 : 2;
  if (o->exp == EXP_OVERHEAD && o->barrier == 3)
    bad("overhead: --barrier is plain or query (one variant)%s%s", "", "");
  if (!o->cls) o->cls = "medium";
  if (!gclass_find(o->cls)) bad("--class: '%s' is not light, medium or heavy%s", o->cls, "");
  if (o->backend && strcmp(o->backend, "auto") && strcmp(o->backend, "opencl") &&
      strcmp(o->backend, "cuda"))
    bad("--backend: '%s' is not auto, opencl or cuda%s", o->backend, "");
}

static enum experiment exp_of(const char *s) {
  if (!strcmp(s, "overhead")) return EXP_OVERHEAD;
  if (!strcmp(s, "responsive")) return EXP_RESPONSIVE;
  if (!strcmp(s, "multitask")) return EXP_MULTITASK;
  bad("'%s' is not an experiment (overhead, responsive, multitask)%s", s, "");
  return EXP_OVERHEAD;
}

int paper_parse(int argc, char **argv, struct popts *o) {
  static const struct option lo[] = {{"backend", 1, 0, 'b'},    {"quick", 0, 0, 'q'},
                                     {"runs", 1, 0, 'r'},       {"samples", 1, 0, 's'},
                                     {"periods", 1, 0, 'p'},    {"scale", 1, 0, 'S'},
                                     {"apps", 1, 0, 'a'},       {"max-inputs", 1, 0, 'i'},
                                     {"class", 1, 0, 'c'},      {"barrier", 1, 0, 'B'},
                                     {"time-scale", 1, 0, 'T'}, {"matrix", 1, 0, 'm'},
                                     {"local-size", 1, 0, 'l'}, {"arena-mb", 1, 0, 'A'},
                                     {"timeout", 1, 0, 't'},    {"csv", 1, 0, 'o'},
                                     {"calibrate", 1, 0, 'C'},  {"check-all", 0, 0, 'K'},
                                     {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
  int ch;
  opterr = 0;
  const char *inexact = inexact_option(argc, argv, lo);
  if (inexact) bad("unknown option '%s'%s", inexact, "");
  while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    if (ch == 'h') {
      usage(stdout);
      exit(0);
    }
    option(o, ch, optarg);
  }
  if (optind != argc - 1) bad("name one experiment: overhead, responsive or multitask%s%s", "", "");
  o->exp = exp_of(argv[optind]);
  defaults(o);
  return 0;
}

const char *exp_name(enum experiment e) {
  return e == EXP_OVERHEAD ? "overhead" : e == EXP_RESPONSIVE ? "responsive" : "multitask";
}

int main(int argc, char **argv) {
  struct popts o = {.local_size = 64, .timeout_s = 600, .time_scale = 1.0};
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof o.cmd; i++)
    len += (size_t)snprintf(o.cmd + len, sizeof o.cmd - len, "%s%s", i ? " " : "", argv[i]);
  o.backend = getenv("COOP_BACKEND");
  if (o.backend && !*o.backend) o.backend = NULL;
  paper_parse(argc, argv, &o);
  int rc = o.exp == EXP_OVERHEAD     ? run_overhead(&o)
           : o.exp == EXP_RESPONSIVE ? run_responsive(&o)
                                     : run_multitask(&o);
  if (rc) fprintf(stderr, PB " %s: FAILED\n", exp_name(o.exp));
  return rc ? 1 : 0;
}
