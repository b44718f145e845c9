/*
 * cpu_pairs.c: coop-bench-cpu-pairs, which CPUs share a core. For every
 * pair of online CPUs, two threads pinned one to each pass a cache line
 * back and forth; the mean round trip is short (tens of ns) where both
 * CPUs are threads of one core (they share its L1 and L2), a few hundred
 * ns across cores. On a VM whose topology shows no SMT, this is the only
 * way to see which vCPUs the host runs on one core, and, run twice,
 * whether that stays (docs/daemon.md, "Spinning": where the spinning
 * threads run). Prints `a,b,trip_ns` for each pair, then the pairs under
 * half the median.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

/* the line passed back and forth, alone on its own 128 bytes (two lines:
 * the adjacent-line prefetcher pairs them) */
static _Alignas(128) atomic_uint line;
static _Alignas(128) atomic_int ready;

struct side {
  int cpu, first; /* first: starts each trip */
  unsigned trips;
  double ns; /* first side: the mean round trip */
  int err;
};

static void *run_side(void *p) {
  struct side *s = p;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(s->cpu, &set);
  s->err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  atomic_fetch_add(&ready, 1);
  while (atomic_load(&ready) < 2) { /* both pinned before the clock starts */
  }
  int64_t t0 = now_ns();
  for (unsigned i = 0; i < s->trips; i++) {
    unsigned ask = 2 * i + 1, answer = 2 * i + 2;
    if (s->first) {
      atomic_store_explicit(&line, ask, memory_order_release);
      while (atomic_load_explicit(&line, memory_order_acquire) != answer) {
      }
    } else {
      while (atomic_load_explicit(&line, memory_order_acquire) != ask) {
      }
      atomic_store_explicit(&line, answer, memory_order_release);
    }
  }
  s->ns = (double)(now_ns() - t0) / s->trips;
  return NULL;
}

/* The mean round trip between CPUs a and b, ns; negative: an error. */
static double trip(int a, int b, unsigned trips) {
  struct side x = {a, 1, trips, 0, 0}, y = {b, 0, trips, 0, 0};
  pthread_t tx, ty;
  atomic_store(&line, 0);
  atomic_store(&ready, 0);
  if (pthread_create(&tx, NULL, run_side, &x)) return -1;
  if (pthread_create(&ty, NULL, run_side, &y)) { /* x would wait for it for ever */
    fprintf(stderr, "coop-bench-cpu-pairs: cannot start a thread\n");
    exit(1);
  }
  pthread_join(tx, NULL);
  pthread_join(ty, NULL);
  return x.err || y.err ? -1 : x.ns;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: coop-bench-cpu-pairs [--trips N] [--help]\n"
          "\n"
          "For every pair of online CPUs (those this process may run on), the\n"
          "mean round trip of a cache line between two threads pinned one to\n"
          "each: tens of ns where the two are threads of one core, a few\n"
          "hundred across cores. Prints a,b,trip_ns for each pair (CSV, with a\n"
          "header), then the pairs under half the median: on a VM that shows no\n"
          "SMT, the vCPUs the host runs on one core at that moment.\n"
          "\n"
          "  --trips N   round trips a pair (default 20000; 16 CPUs: about 1 s)\n"
          "  --help      print this message and exit\n");
}

int main(int argc, char **argv) {
  static const struct option lo[] = {
      {"trips", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) bench_usage_error("coop-bench-cpu-pairs", "unknown option %s", bad);
  unsigned trips = 20000;
  for (int o; (o = getopt_long(argc, argv, "h", lo, NULL)) != -1;) {
    if (o == 't')
      trips = (unsigned)bench_parse_num("coop-bench-cpu-pairs", "trips", optarg, 1, 100000000);
    if (o == 'h') return usage(stdout), 0;
    if (o == '?') return usage(stderr), 2;
  }
  if (optind < argc)
    bench_usage_error("coop-bench-cpu-pairs", "unexpected argument %s", argv[optind]);
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine)) {
    perror("coop-bench-cpu-pairs: sched_getaffinity");
    return 1;
  }
  int cpus[CPU_SETSIZE], n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &mine)) cpus[n++] = c;
  if (n < 2) {
    fprintf(stderr, "coop-bench-cpu-pairs: this process may run on %d CPU: no pair\n", n);
    return 1;
  }
  struct series ns = {0};
  printf("a,b,trip_ns\n");
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double t = trip(cpus[i], cpus[j], trips);
      if (t < 0) {
        fprintf(stderr, "coop-bench-cpu-pairs: cannot pin a thread to CPU %d or %d\n", cpus[i],
                cpus[j]);
        return 1;
      }
      push(&ns, t);
      printf("%d,%d,%.0f\n", cpus[i], cpus[j], t);
    }
  double med = quantile(&ns, 0.5);
  fprintf(stderr, "%d CPUs, %zu pairs: round trip min %.0f, median %.0f, max %.0f ns; one core:", n,
          ns.n, min_of(&ns), med, max_of(&ns));
  size_t k = 0;
  int any = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++, k++)
      if (ns.v[k] < med / 2) {
        fprintf(stderr, " %d+%d (%.0f)", cpus[i], cpus[j], ns.v[k]);
        any = 1;
      }
  fprintf(stderr, "%s\n", any ? "" : " none");
  series_free(&ns);
  return 0;
}
