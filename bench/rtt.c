/*
 * rtt.c: coop-bench-rtt, what a client waits for one small task through
 * coopd: SUBMIT of a non-cooperative render (n x n, one rep, K workgroups)
 * to the return of its WAIT, sequentially, a given number of times. It
 * measures the whole dispatch path (socket, device thread, device process,
 * megakernel, hand-back); compare two coopd builds on the same machine in
 * one sitting, e.g. before and after the device process (issue 19 item 3).
 *
 *   coop-bench-rtt --socket PATH [--runs N] [--n N] [--groups K] [--label L]
 *
 * Prints a CSV header and one row: label, runs, median, p10, p90, max (us),
 * machine, commit.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_commit.h"
#include "common.h"
#include "coop.h"

static int usage(FILE *f, int rc) {
  fprintf(f,
          "usage: coop-bench-rtt --socket PATH [--runs N] [--n N] [--groups K] [--label L]\n"
          "Submits N (default 500) renders of n x n (default 8) on K (default 1) workgroups\n"
          "to the coopd at PATH one after the other and prints the SUBMIT -> WAIT\n"
          "round trip (median, p10, p90, max in us) as CSV.\n");
  return rc;
}

int main(int argc, char **argv) {
  static const struct option lo[] = {{"socket", required_argument, 0, 's'},
                                     {"runs", required_argument, 0, 'r'},
                                     {"n", required_argument, 0, 'n'},
                                     {"groups", required_argument, 0, 'g'},
                                     {"label", required_argument, 0, 'l'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  const char *sock = NULL, *label = "coopd";
  unsigned runs = 500, n = 8, groups = 1;
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) return fprintf(stderr, "coop-bench-rtt: spell out %s\n", bad), usage(stderr, 2);
  for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    switch (ch) {
      case 's':
        sock = optarg;
        break;
      case 'r':
        runs = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'n':
        n = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'g':
        groups = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'l':
        label = optarg;
        break;
      case 'h':
        return usage(stdout, 0);
      default:
        return usage(stderr, 2);
    }
  }
  if (!sock || !runs || !n || n > 1024 || !groups) return usage(stderr, 2);
  coop_conn *c;
  int e = coop_connect(&c, sock, "coop-bench-rtt");
  if (e) return fprintf(stderr, "coop-bench-rtt: %s\n", coop_strerror(e)), 1;
  size_t bytes = (size_t)n * n * sizeof(float);
  float *a = calloc((size_t)n * n, sizeof *a), *o = calloc((size_t)n * n, sizeof *o);
  if (!a || !o) return 1;
  for (size_t i = 0; i < (size_t)n * n; i++) a[i] = 1.0f;
  struct series s = {0};
  for (unsigned i = 0; i < runs + 10; i++) { /* 10 warm-up rounds */
    coop_job *j = coop_job_new("render", groups);
    coop_job_buf_in(j, a, bytes);
    coop_job_buf_in(j, a, bytes);
    coop_job_buf_out(j, o, bytes);
    coop_job_u32(j, n);
    coop_job_u32(j, 1);
    int64_t t0 = now_ns();
    uint64_t id;
    struct coop_result r;
    e = coop_submit(c, j, &id);
    if (!e) e = coop_wait(c, id, -1, &r);
    int64_t t1 = now_ns();
    coop_job_free(j);
    if (e) return fprintf(stderr, "coop-bench-rtt: %s\n", coop_strerror(e)), 1;
    if (r.state != COOP_STATE_DONE || o[0] != (float)n)
      return fprintf(stderr, "coop-bench-rtt: render failed: %s\n", r.message), 1;
    coop_result_free(&r);
    if (i >= 10) push(&s, (double)(t1 - t0) / 1e3);
  }
  struct machine m;
  machine_of(&m);
  printf("label,runs,n,groups,median_us,p10_us,p90_us,max_us,host,cpu,commit\n");
  printf("%s,%u,%u,%u,%.1f,%.1f,%.1f,%.1f,%s,\"%s\",%s\n", label, runs, n, groups,
         quantile(&s, 0.5), quantile(&s, 0.1), quantile(&s, 0.9), max_of(&s), m.host, m.cpu,
         COOP_BENCH_COMMIT);
  series_free(&s);
  free(a);
  free(o);
  coop_disconnect(c);
  return 0;
}
