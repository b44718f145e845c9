/*
 * common.h: what every benchmark of bench/ shares: samples and their
 * statistics, the monotonic clock, the machine's description for headers,
 * and the rule that options are spelled out in full.
 */
#ifndef COOP_BENCH_COMMON_H
#define COOP_BENCH_COMMON_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h> /* ROW_ADD */

#include "coop_util.h"

/* ------------------------------------------------------------ samples */

struct series {
  double *v;
  size_t n, cap;
};

void push(struct series *s, double x); /* exits 1 when out of memory */
void series_free(struct series *s);
/* Nearest rank on a sorted copy: the smallest sample with at least q of
 * them at or below it; q in [0, 1]; NAN when empty. */
double quantile(const struct series *s, double q);
double mean_of(const struct series *s);
double max_of(const struct series *s);
double min_of(const struct series *s);
int cmp_dbl(const void *a, const void *b); /* qsort order of doubles */

/* v->rows (a growing array of v->n elements, v->cap allocated) with room
 * for one more; exits 1 when out of memory. */
void *grow_rows(void *rows, size_t n, size_t *cap, size_t size);
/* &v->rows[v->n++], zeroed. */
#define ROW_ADD(v)                                                         \
  ((v)->rows = grow_rows((v)->rows, (v)->n, &(v)->cap, sizeof *(v)->rows), \
   memset(&(v)->rows[(v)->n], 0, sizeof *(v)->rows), &(v)->rows[(v)->n++])

/* ------------------------------------------------------------ machine */

/* CLOCK_MONOTONIC in ns, bench's short name for coop_util.h's one clock. */
static inline int64_t now_ns(void) { return coop__now_ns(); }
/* What a header says of the machine: host name, uname's machine, and
 * /proc/cpuinfo's model name ("unknown" for any it cannot read). */
struct machine {
  char host[256], arch[65], cpu[256];
};
void machine_of(struct machine *m);
void load_avg(char *out, size_t n); /* /proc/loadavg: others' load shows */

/* ------------------------------------------------------------- files */

void make_parent(const char *path); /* mkdir -p of path's directory part */
int have_gnuplot(void);             /* gnuplot on $PATH */

/* getopt_long takes any unambiguous prefix (--rep for --reps). The first
 * argument that is not exactly one of lo's names, or NULL: refuse it, so
 * that a command line in RESULTS.md means one thing. */
const char *inexact_option(int argc, char **argv, const struct option *lo);

/* A bad command line: "PROG: MESSAGE" and "try: PROG --help" on stderr,
 * then exit status 2. */
void bench_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Option --name's value s as a whole number in lo..hi, else a usage
 * error. */
long bench_parse_num(const char *prog, const char *name, const char *s, long lo, long hi);

#endif /* COOP_BENCH_COMMON_H */
