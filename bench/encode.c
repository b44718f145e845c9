/*
 * encode.c: coop-bench-encode, what libcoop's encoding of a frame client's
 * SUBMIT costs, and what sending the kept frame again costs instead
 * (docs/daemon.md, "The client's ring": the last SUBMIT kept). The message
 * is the one coop-bench-side's frame client (g) sends every frame: a
 * matmul's input range and output range of device buffers in the
 * connection's transfer memfd, a second device buffer, n and reps.
 *
 *   coop-bench-encode [--runs N] [--every-us US] [--label L]
 *
 * Each run times one call of each way, in turns: "encode" (coop_wire_encode
 * and its check, as every SUBMIT was built before a frame was kept) and
 * "kept" (libcoop's coop__encode_request with the last SUBMIT's frame
 * kept: the compare, the copy, the new seq), and "none" (the two clock
 * reads around nothing: the floor). --every-us (default 16667, 60
 * fps): each call comes that long after the last, the thread asleep in
 * between, as a frame client's does; 0: back to back (hot). Prints CSV: a
 * header, then a row per way: label, way, runs, p50, p90, p99, max (us),
 * every_us, machine, commit. Each kept frame is checked against the
 * encoder's own (untimed): exit status 1 when they differ.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_commit.h"
#include "common.h"
#include "coop_internal.h"
#include "wire.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: coop-bench-encode [--runs N] [--every-us US] [--label L]\n"
          "Times libcoop's encoding of a frame client's SUBMIT (\"encode\") against the\n"
          "frame of the last SUBMIT sent again (\"kept\") and the clock's own cost\n"
          "(\"none\"), N runs of each in turns (default 500),\n"
          "one call every US us (default 16667: 60 fps, asleep in between; 0: back to\n"
          "back), and prints p50, p90, p99 and max in us as CSV.\n");
}

/* coop-bench-side's frame (g): 264 x 264 floats in, the same out. */
static void frame_submit(struct coop_msg_submit *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->kernel, sizeof s->kernel, "matmul");
  s->groups = 543;
  s->device = COOP_WIRE_ANY_DEVICE;
  s->nargs = 5;
  struct coop_wire_arg *a = s->args;
  const uint64_t bytes = 264 * 264 * 4;
  a[0] = (struct coop_wire_arg){.type = COOP_ARG_DEVBUF_IO,
                                .bits = 1,
                                .dir = COOP_BUF_IN,
                                .fd = COOP_WIRE_FD_XFER,
                                .size = bytes};
  a[1] = (struct coop_wire_arg){.type = COOP_ARG_DEVBUF, .bits = 2};
  a[2] = (struct coop_wire_arg){.type = COOP_ARG_DEVBUF_IO,
                                .bits = 3,
                                .dir = COOP_BUF_OUT,
                                .fd = COOP_WIRE_FD_XFER,
                                .size = bytes,
                                .off = bytes};
  a[3] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = 264};
  a[4] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = 1};
}

static void sleep_until(int64_t t) {
  struct timespec ts = {t / 1000000000, t % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* One call of way k (0: encode, 1: kept, 2: none), timed; exits on an
 * error. */
static double one(coop_conn *c, const union coop_msg *m, uint32_t seq, int k) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  int64_t t0 = now_ns();
  int e = k == 2 ? 0
          : k    ? coop__encode_request(c, &b, COOP_MSG_SUBMIT, seq, m)
                 : coop_wire_encode(&b, COOP_MSG_SUBMIT, seq, m);
  int64_t t1 = now_ns();
  if (e) {
    fprintf(stderr, "coop-bench-encode: %s\n", coop_strerror(e));
    exit(1);
  }
  struct coop_wire_buf fresh; /* what was timed is what the encoder writes */
  coop_wire_buf_init(&fresh);
  if (k == 1 && (coop_wire_encode(&fresh, COOP_MSG_SUBMIT, seq, m) || fresh.len != b.len ||
                 memcmp(fresh.p, b.p, b.len))) {
    fprintf(stderr, "coop-bench-encode: the kept frame (seq %u) is not the SUBMIT's encoding\n",
            seq);
    exit(1);
  }
  coop_wire_buf_free(&fresh);
  coop_wire_buf_free(&b);
  return (double)(t1 - t0) / 1e3;
}

int main(int argc, char **argv) {
  static const struct option lo[] = {{"runs", required_argument, 0, 'r'},
                                     {"every-us", required_argument, 0, 'e'},
                                     {"label", required_argument, 0, 'l'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  const char *bad = inexact_option(argc, argv, lo), *label = "encode";
  if (bad) bench_usage_error("coop-bench-encode", "unknown option %s", bad);
  long runs = 500, every_us = 16667;
  for (int o; (o = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    if (o == 'r') runs = bench_parse_num("coop-bench-encode", "runs", optarg, 1, 1000000);
    if (o == 'e') every_us = bench_parse_num("coop-bench-encode", "every-us", optarg, 0, 10000000);
    if (o == 'l') label = optarg;
    if (o == 'h') return usage(stdout), 0;
    if (o == '?') return usage(stderr), 2;
  }
  if (optind < argc) bench_usage_error("coop-bench-encode", "unexpected argument %s", argv[optind]);
  coop_conn *c = calloc(1, sizeof *c); /* only its kept SUBMIT is used */
  union coop_msg *m = calloc(1, sizeof *m);
  if (!c || !m) return 1;
  frame_submit(&m->submit);
  one(c, m, 1, 1); /* the first SUBMIT: kept from then on */
  struct series s[3] = {{0}};
  int64_t next = now_ns();
  for (long i = 0; i < 3 * runs; i++) {
    if (every_us) sleep_until(next += every_us * 1000);
    push(&s[i % 3], one(c, m, (uint32_t)i + 2, (int)(i % 3)));
  }
  struct machine mc;
  machine_of(&mc);
  printf("label,way,runs,p50_us,p90_us,p99_us,max_us,every_us,host,cpu,commit\n");
  static const char *const way[3] = {"encode", "kept", "none"};
  for (int k = 0; k < 3; k++) {
    printf("%s,%s,%ld,%.2f,%.2f,%.2f,%.2f,%ld,%s,\"%s\",%s\n", label, way[k], runs,
           quantile(&s[k], 0.5), quantile(&s[k], 0.9), quantile(&s[k], 0.99), max_of(&s[k]),
           every_us, mc.host, mc.cpu, COOP_BENCH_COMMIT);
    series_free(&s[k]);
  }
  free(c->sub_msg);
  coop_wire_buf_free(&c->sub_frame);
  free(c);
  free(m);
  return 0;
}
