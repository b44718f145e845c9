/*
 * rtt.c: coop-bench-rtt, what a client waits for one small task through
 * coopd: SUBMIT of a non-cooperative render (n x n, one rep, K workgroups)
 * to the return of its WAIT, sequentially, a given number of times. It
 * measures the whole dispatch path (socket, device thread, device process,
 * megakernel, hand-back); compare two coopd builds on the same machine in
 * one sitting, e.g. before and after the device process (bench/HISTORY.md,
 * "Isolation").
 *
 *   coop-bench-rtt --socket PATH [--runs N] [--n N] [--groups K] [--label L]
 *                  [--resident [--frame|--frame-io]] [--nop] [--spin-us US] [--every-us US]
 *                  [--trace FILE]
 *
 * Prints a CSV header and one row: label, runs, median, p10, p90, max (us),
 * machine, commit, p99 (us), whether the buffers were resident, the
 * kernel, the client's spin (us), and with --frame the medians of its
 * write and its read (us).
 *
 * --nop: the task is nop (kernels/probe/nop.cl: each workgroup stores
 * one word) in place of the render, whose 8 x 8 pixels take about 17 us
 * of the GPU's time on one workgroup: the dispatch path alone, as
 * coop-bench-micro and a plain CUDA launch measure it. The coopd needs
 * kernels/probe among its kernel directories. --spin-us: the client's
 * coop_set_spin. --every-us: a run starts every US us (as a frame loop's
 * would, 16667 at 60 fps), not as soon as the last one ended: each then
 * finds coopd's threads asleep, as a frame does.
 *
 * --resident: the render's three buffers are device buffers (PROTOCOL.md,
 * "Device buffers"), created once before the runs; each job names them and
 * carries no bytes, and its output stays on the device (read back once at
 * the end, to check it). The path of a task on data that lives on the
 * device, as a frame loop or a query service would run it. --frame: each
 * run is a frame of a frame client (coop-bench-side's setup g): the first
 * input written into its device buffer (coop_buffer_write, 4 n^2 bytes:
 * n = 264 is that setup's 278784), the render, and the output read back
 * (coop_buffer_read); the round trip counts all three. --frame-io: the
 * same frame as one job that moves its input and output itself
 * (coop_job_buffer_io: one request each way).
 *
 * --trace FILE: FILE is the coopd's COOP_TRACE_FILE (docs/daemon.md, "The
 * path of one job, leg by leg"). The bench stamps each job's send and
 * receive (CLOCK_MONOTONIC, like coopd's stamps), reads coopd's line for
 * each job after the runs, and prints every leg's median, p90 and p99 (us)
 * as a table and as CSV rows, after the row above. It fails (exit 1) when
 * a job's stamp is missing or a leg runs backwards: a trace with a hole
 * would add up to a wrong picture.
 */
#include <getopt.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_commit.h"
#include "common.h"
#include "coop.h"

#define RB "coop-bench-rtt"
/* Strict decimal in [lo, hi]; else a message and exit 2 (strtoul read
 * "-1" as 2^32 - 1 runs, "5x" as 5 and "abc" as 0). */
#define parse_num(name, s, lo, hi) bench_parse_num(RB, name, s, lo, hi)

static int usage(FILE *f, int rc) {
  fprintf(f,
          "usage: coop-bench-rtt --socket PATH [--runs N] [--n N] [--groups K|all] [--label L]\n"
          "                      [--resident [--frame|--frame-io]] [--nop] [--spin-us US]\n"
          "                      [--every-us US]\n"
          "                      [--trace FILE]\n"
          "Submits N (default 500) renders of n x n (default 8) on K (default 1; all: every\n"
          "worker) workgroups\n"
          "to the coopd at PATH one after the other and prints the SUBMIT -> WAIT\n"
          "round trip (median, p10, p90, max in us) as CSV.\n"
          "  --resident    the buffers are device buffers, created once: each job carries\n"
          "                no bytes (coop_buffer_create, coop_job_buffer)\n"
          "  --frame       with --resident: each run also writes the first input\n"
          "                (coop_buffer_write) before its submit and reads the output\n"
          "                back (coop_buffer_read) after its wait, as a frame client;\n"
          "                the row adds the medians of the write and the read\n"
          "  --frame-io    with --resident: the same frame as one job that writes the\n"
          "                input and reads the output itself (coop_job_buffer_io)\n"
          "  --nop         the task is nop (each workgroup stores one word), not the\n"
          "                render: the dispatch path alone; coopd must load kernels/probe\n"
          "  --spin-us US  the client watches the socket US us before it sleeps for a\n"
          "                reply (coop_set_spin; default: COOP_SPIN_US, else 0)\n"
          "  --every-us US a run starts every US us (16667: 60 fps), not at once after the\n"
          "                last: each finds coopd's threads asleep, as a frame does\n"
          "  --trace FILE  FILE is the COOP_TRACE_FILE the coopd at PATH writes: after the\n"
          "                runs, print where each round trip went, leg by leg (median, p90,\n"
          "                p99 in us, a table and CSV rows); exit 1 if a job's stamp is\n"
          "                missing or out of order\n");
  return rc;
}

/* ---- --trace ---- */

/* The stamps of one round trip, in the order its critical path passes
 * them: the client's own (c_send, c_recv) around coopd's (its
 * COOP_TRACE_FILE columns of these names). */
static const char *const chain[] = {
    "c_send",        "recv",     "admitted",    "queued",   "taken",       "staged",
    "submitted",     "released", "gathered",    "started",  "finished",    "seen",
    "task_released", "unstaged", "handed_back", "loop_got", "result_sent", "c_recv"};
#define NCHAIN (sizeof chain / sizeof *chain)
static const char *const leg_what[NCHAIN - 1] = {
    "the SUBMIT over the socket, until coopd's read returns",
    "decode, admission, the job made",
    "the journal, the log line",
    "dev_submit, the device thread's wake, take_new",
    "resolve, the buffers staged (device process round trip)",
    "dp_submit to the runtime's submit stamp (device process)",
    "the scheduler releases it (device stamp)",
    "its workgroups gathered (device stamp)",
    "started (device stamp)",
    "the task runs (device stamp)",
    "until the device thread sees it final (dp_wait, dp_poll)",
    "dp_task_release (device process round trip)",
    "OUT data back, arena freed: dp_unstage (device process round trip)",
    "memfds closed, the out queue",
    "uv_async_send until the loop's on_async",
    "session_job_done, the RESULT built",
    "RESULT encoded, written, over the socket; libcoop's decode and copy-out"};
/* Off the critical path, beside it: [from, to). */
static const char *const side[][3] = {
    {"recv", "decoded", "admission: the frame decoded, sess_submit entered"},
    {"decoded", "checked", "admission: its buffers found, its checks"},
    {"checked", "admitted", "admission: the job made"},
    {"staged", "submit_ret", "dp_submit's whole round trip"},
    {"taken", "io_sent", "a job moving its bytes: until its IN copy's request"},
    {"io_sent", "io_took", "that request reaching the device process"},
    {"io_took", "io_replied", "the device process copies the IN bytes"},
    {"io_replied", "io_back", "its reply reaching the device thread"},
    {"io_back", "staged", "the rest of the staging"},
    {"task_released", "out_sent", "until the OUT copy's request"},
    {"out_sent", "out_took", "that request reaching the device process"},
    {"out_took", "out_replied", "the device process copies the OUT bytes"},
    {"out_replied", "out_back", "its reply reaching the device thread"},
    {"out_back", "unstaged", "the rest of the unstaging"},
    {"finished", "dp_seen", "the device process sees it final (DP_SUBMIT's wait; device stamp)"},
    {"dp_seen", "seen", "DP_SUBMIT's end: released, refit, reply over the socket"},
    {"recv", "accepted", "the SUBMIT handled, up to the write of ACCEPTED"},
    {"accepted", "c_accepted", "ACCEPTED over the socket, coop_submit returns"},
    {"c_accepted", "wait", "coop_wait's WAIT until coopd read it"},
    {"wait", "result_sent", "WAIT read until the RESULT is built"}};
#define NSIDE (sizeof side / sizeof *side)

struct tjob {
  uint64_t id;
  int64_t c_send, c_accepted, c_recv;
  int64_t *v; /* coopd's columns, by name index in names[]; NULL until its line is read */
};

/* The stamp of name for job j: the client's, else coopd's column; -1 when
 * the trace has no such column. */
static int64_t stamp(const struct tjob *j, char **names, unsigned nnames, const char *name) {
  if (!strcmp(name, "c_send")) return j->c_send;
  if (!strcmp(name, "c_accepted")) return j->c_accepted;
  if (!strcmp(name, "c_recv")) return j->c_recv;
  for (unsigned i = 0; i < nnames; i++)
    if (!strcmp(names[i], name)) return j->v ? j->v[i] : 0;
  return -1;
}

/* Reads coopd's trace lines of jobs[] (the last line of each id: a file
 * that several coopds appended to holds each id's newest last). Columns by
 * the header's names; every coopd that opens the file writes one, all the
 * same. Returns the columns' names (*nnames) or NULL. */
static char **read_trace(const char *path, struct tjob *jobs, unsigned n, unsigned *nnames) {
  FILE *f = fopen(path, "r");
  if (!f) return fprintf(stderr, "coop-bench-rtt: %s: cannot read\n", path), NULL;
  char line[4096];
  char **names = NULL;
  *nnames = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "id,", 3)) {
      if (names) continue; /* the same header again */
      unsigned k = 0;
      for (char *p = line; p; p = strchr(p, ',')) p += *p == ',', k++;
      names = calloc(k, sizeof *names);
      if (!names) break;
      char *save = NULL;
      for (char *t = strtok_r(line, ",", &save); t && *nnames < k; t = strtok_r(NULL, ",", &save))
        names[(*nnames)++] = strdup(t);
      continue;
    }
    if (!names) continue;
    uint64_t id = strtoull(line, NULL, 10);
    struct tjob *j = NULL;
    for (unsigned i = 0; i < n && !j; i++)
      if (jobs[i].id == id) j = &jobs[i];
    if (!j) continue;
    if (!j->v) j->v = calloc(*nnames, sizeof *j->v);
    if (!j->v) break;
    char *p = line;
    for (unsigned c = 0; c < *nnames; c++) {
      j->v[c] = strtoll(p, &p, 10);
      if (*p != ',') { /* a short line: the rest stays 0 (missing) */
        for (unsigned r = c + 1; r < *nnames; r++) j->v[r] = 0;
        break;
      }
      p++;
    }
  }
  fclose(f);
  if (!names)
    fprintf(stderr, "coop-bench-rtt: %s: no trace header (is it the coopd's COOP_TRACE_FILE?)\n",
            path);
  return names;
}

static void leg_row(const char *name, const char *what, struct series *s, int csv) {
  if (csv)
    printf("%s,%.2f,%.2f,%.2f,%zu\n", name, quantile(s, 0.5), quantile(s, 0.9), quantile(s, 0.99),
           s->n);
  else
    printf("  %-30s %9.2f %9.2f %9.2f  %s\n", name, quantile(s, 0.5), quantile(s, 0.9),
           quantile(s, 0.99), what);
}

/* The legs of jobs[], a table and CSV rows. 0, or 1 with the first hole
 * named on stderr. */
static int trace_report(const char *path, struct tjob *jobs, unsigned n) {
  unsigned nnames;
  char **names;
  /* coopd writes a job's line just after its RESULT: the last may lag */
  for (unsigned tries = 0;; tries++) {
    names = read_trace(path, jobs, n, &nnames);
    if (!names) return 1;
    unsigned have = 0;
    while (have < n && jobs[have].v) have++;
    if (have == n || tries == 100) break;
    for (unsigned i = 0; i < nnames; i++) free(names[i]);
    free(names);
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  int bad = 0;
  struct series legs[NCHAIN - 1] = {{0}}, sides[NSIDE] = {{0}}, rtt = {0}, sum = {0};
  unsigned wait_bound = 0, clamped = 0;
  for (unsigned i = 0; i < n && !bad; i++) {
    const struct tjob *j = &jobs[i];
    if (!j->v) {
      fprintf(stderr, "coop-bench-rtt: job %" PRIu64 " has no line in %s\n", j->id, path);
      bad = 1;
      break;
    }
    int64_t t[NCHAIN], total = 0;
    for (unsigned k = 0; k < NCHAIN && !bad; k++) {
      t[k] = stamp(j, names, nnames, chain[k]);
      if (t[k] <= 0) {
        fprintf(stderr, "coop-bench-rtt: job %" PRIu64 ": stamp %s %s\n", j->id, chain[k],
                t[k] < 0 ? "is not in the trace" : "is missing");
        bad = 1;
      } else if (k && t[k] < t[k - 1]) {
        fprintf(stderr, "coop-bench-rtt: job %" PRIu64 ": %s is %.3f us before %s\n", j->id,
                chain[k], (double)(t[k - 1] - t[k]) / 1e3, chain[k - 1]);
        bad = 1;
      }
    }
    if (bad) break;
    for (unsigned k = 1; k < NCHAIN; k++) {
      push(&legs[k - 1], (double)(t[k] - t[k - 1]) / 1e3);
      total += t[k] - t[k - 1];
    }
    push(&sum, (double)total / 1e3);
    push(&rtt, (double)(j->c_recv - j->c_send) / 1e3);
    if (total > j->c_recv - j->c_send) {
      fprintf(stderr, "coop-bench-rtt: job %" PRIu64 ": the legs add up past the round trip\n",
              j->id);
      bad = 1;
    }
    for (unsigned k = 0; k < NSIDE; k++) {
      int64_t a = stamp(j, names, nnames, side[k][0]), b = stamp(j, names, nnames, side[k][1]);
      if (a > 0 && b > 0) push(&sides[k], (double)(b - a) / 1e3);
    }
    int64_t w = stamp(j, names, nnames, "wait");
    if (w > 0 && w > stamp(j, names, nnames, "loop_got")) wait_bound++;
    if (stamp(j, names, nnames, "finished") == stamp(j, names, nnames, "seen")) clamped++;
  }
  if (!bad) {
    double med_sum = 0;
    for (unsigned k = 0; k < NCHAIN - 1; k++) med_sum += quantile(&legs[k], 0.5);
    printf("\nwhere one round trip goes (%u jobs, us; stamps CLOCK_MONOTONIC, %s):\n", n, path);
    printf("  %-30s %9s %9s %9s  %s\n", "leg", "median", "p90", "p99", "what");
    char name[96];
    for (unsigned k = 0; k < NCHAIN - 1; k++) {
      snprintf(name, sizeof name, "%s->%s", chain[k], chain[k + 1]);
      leg_row(name, leg_what[k], &legs[k], 0);
    }
    printf("  %-30s %9.2f %9s %9s  %s\n", "sum of the leg medians", med_sum, "", "",
           "(medians do not add up exactly)");
    leg_row("sum of the legs, per job", "c_send->c_recv through every stamp", &sum, 0);
    leg_row("round trip (measured)", "coop_submit + coop_wait", &rtt, 0);
    printf("  beside the path:\n");
    for (unsigned k = 0; k < NSIDE; k++) {
      snprintf(name, sizeof name, "%s->%s", side[k][0], side[k][1]);
      leg_row(name, side[k][2], &sides[k], 0);
    }
    printf(
        "  the WAIT came after the loop got the job in %u of %u jobs (the RESULT then waits\n"
        "  for it: loop_got->result_sent holds the client's ACCEPTED->WAIT turn)\n",
        wait_bound, n);
    if (clamped)
      printf(
          "  finished == seen in %u of %u jobs: the device clock's fit put the task's end\n"
          "  after the host saw it, and coopd moved the device stamps back into\n"
          "  submitted..seen (dev_run.c, host_order): their gaps are the device's, the\n"
          "  split of submitted->seen between the device legs is as good as the fit\n",
          clamped, n);
    printf("\ntrace_leg,median_us,p90_us,p99_us,jobs\n");
    for (unsigned k = 0; k < NCHAIN - 1; k++) {
      snprintf(name, sizeof name, "%s->%s", chain[k], chain[k + 1]);
      leg_row(name, NULL, &legs[k], 1);
    }
    leg_row("sum_of_legs", NULL, &sum, 1);
    leg_row("round_trip", NULL, &rtt, 1);
    for (unsigned k = 0; k < NSIDE; k++) {
      snprintf(name, sizeof name, "side:%s->%s", side[k][0], side[k][1]);
      leg_row(name, NULL, &sides[k], 1);
    }
  }
  for (unsigned k = 0; k < NCHAIN - 1; k++) series_free(&legs[k]);
  for (unsigned k = 0; k < NSIDE; k++) series_free(&sides[k]);
  series_free(&rtt);
  series_free(&sum);
  for (unsigned i = 0; i < nnames; i++) free(names[i]);
  free(names);
  return bad;
}

/* The render of n x n, one rep: its two inputs and its output inline, or
 * the device buffers dev[0..2]. */
static coop_job *render_job(const uint64_t *dev, const float *a, float *o, size_t bytes,
                            unsigned groups, unsigned n, int io) {
  coop_job *j = coop_job_new("render", groups);
  if (dev && io) { /* --frame-io: a written, the output read, by the job */
    coop_job_buffer_io(j, dev[0], 0, a, NULL, bytes);
    coop_job_buffer(j, dev[1]);
    coop_job_buffer_io(j, dev[2], 0, NULL, o, bytes);
  } else if (dev) {
    for (unsigned k = 0; k < 3; k++) coop_job_buffer(j, dev[k]);
  } else {
    coop_job_buf_in(j, a, bytes);
    coop_job_buf_in(j, a, bytes);
    coop_job_buf_out(j, o, bytes);
  }
  coop_job_u32(j, n);
  coop_job_u32(j, 1);
  return j;
}

/* nop on K workgroups, each storing tag at word 16 x its id of the
 * output: the device buffer dev, or o inline. */
static coop_job *nop_job(uint64_t dev, float *o, size_t bytes, unsigned groups, unsigned tag) {
  coop_job *j = coop_job_new("nop", groups);
  if (dev)
    coop_job_buffer(j, dev);
  else
    coop_job_buf_out(j, o, bytes);
  coop_job_u32(j, tag);
  return j;
}

/* The task's output is what it must be: the render's first pixel (n), or
 * nop's tag from every workgroup. */
static int output_ok(const float *o, int nop, unsigned groups, unsigned n, unsigned tag) {
  if (!nop) return o[0] == (float)n;
  const uint32_t *w = (const uint32_t *)(const void *)o;
  for (unsigned g = 0; g < groups; g++)
    if (w[16u * g] != tag) return 0;
  return 1;
}

/* libcoop's default spin: COOP_SPIN_US, as coop_connect reads it. */
static unsigned long env_spin_us(void) {
  const char *s = getenv("COOP_SPIN_US");
  return s && *s >= '0' && *s <= '9' ? strtoul(s, NULL, 10) : 0;
}

int main(int argc, char **argv) {
  static const struct option lo[] = {
      {"socket", required_argument, 0, 's'},  {"runs", required_argument, 0, 'r'},
      {"n", required_argument, 0, 'n'},       {"groups", required_argument, 0, 'g'},
      {"label", required_argument, 0, 'l'},   {"trace", required_argument, 0, 't'},
      {"resident", no_argument, 0, 'R'},      {"frame", no_argument, 0, 'F'},
      {"frame-io", no_argument, 0, 'O'},      {"nop", no_argument, 0, 'N'},
      {"spin-us", required_argument, 0, 'S'}, {"every-us", required_argument, 0, 'E'},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  const char *sock = NULL, *label = "coopd", *trace = NULL;
  unsigned runs = 500, n = 8, groups = 1;
  int resident = 0, frame = 0, frame_io = 0, nop = 0;
  long spin_us = -1; /* -1: libcoop's default */
  long every_us = 0;
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) return fprintf(stderr, "coop-bench-rtt: spell out %s\n", bad), usage(stderr, 2);
  for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    switch (ch) {
      case 's':
        sock = optarg;
        break;
      case 'r':
        runs = (unsigned)parse_num("runs", optarg, 1, 10000000);
        break;
      case 'n':
        n = (unsigned)parse_num("n", optarg, 1, 1024);
        break;
      case 'g': /* "all": every worker of device 0 */
        groups =
            strcmp(optarg, "all") ? (unsigned)parse_num("groups", optarg, 1, 1 << 20) : UINT32_MAX;
        break;
      case 'l':
        label = optarg;
        break;
      case 't':
        trace = optarg;
        break;
      case 'R':
        resident = 1;
        break;
      case 'F':
        frame = 1;
        break;
      case 'O':
        frame_io = 1;
        break;
      case 'N':
        nop = 1;
        break;
      case 'E':
        every_us = parse_num("every-us", optarg, 0, 10000000);
        break;
      case 'S':
        spin_us = parse_num("spin-us", optarg, 0, 1000000);
        break;
      case 'h':
        return usage(stdout, 0);
      default:
        return usage(stderr, 2);
    }
  }
  if (!sock) bench_usage_error(RB, "--socket PATH is required");
  if ((frame || frame_io) && (!resident || nop))
    bench_usage_error(RB, "--frame and --frame-io need --resident, and not --nop");
  if (frame && frame_io) bench_usage_error(RB, "--frame or --frame-io, not both");
  if (optind < argc) bench_usage_error(RB, "unexpected argument '%s'", argv[optind]);
  coop_conn *c;
  int e = coop_connect(&c, sock, "coop-bench-rtt");
  if (e) return fprintf(stderr, "coop-bench-rtt: %s\n", coop_strerror(e)), 1;
  if (spin_us >= 0) coop_set_spin(c, (unsigned)spin_us);
  if (groups == UINT32_MAX) groups = coop_info(c)->workers;
  if (nop) n = 4 * (unsigned)ceil(sqrt(groups)); /* n^2 floats hold 16 words per workgroup */
  size_t bytes = (size_t)n * n * sizeof(float);
  float *a = calloc((size_t)n * n, sizeof *a), *o = calloc((size_t)n * n, sizeof *o);
  if (!a || !o) return 1;
  for (size_t i = 0; i < (size_t)n * n; i++) a[i] = 1.0f;
  uint64_t dev[3] = {0}; /* --resident: a, b, out */
  for (unsigned k = 0; resident && k < (nop ? 1u : 3u) && !e; k++)
    e = coop_buffer_create(c, 0, bytes, k < 2 ? a : NULL, 0, &dev[k]);
  if (e) return fprintf(stderr, "coop-bench-rtt: buffers: %s\n", coop_strerror(e)), 1;
  struct series s = {0}, sw = {0}, sr = {0}; /* round trips; --frame: writes, reads */
  struct tjob *tj = trace ? calloc(runs, sizeof *tj) : NULL;
  if (trace && !tj) return 1;
  int64_t next_start = now_ns();
  for (unsigned i = 0; i < runs + 10; i++) { /* 10 warm-up rounds */
    if (every_us) {                          /* --every-us: this run's start */
      struct timespec ts = {next_start / 1000000000, next_start % 1000000000};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
      }
      next_start += every_us * 1000;
    }
    coop_job *j = nop ? nop_job(resident ? dev[0] : 0, o, bytes, groups, i + 1)
                      : render_job(resident ? dev : NULL, a, o, bytes, groups, n, frame_io);
    int64_t t0 = now_ns();
    uint64_t id;
    struct coop_result r;
    e = frame ? coop_buffer_write(c, dev[0], 0, a, bytes) : 0;
    int64_t tw = now_ns();
    if (!e) e = coop_submit(c, j, &id);
    int64_t ta = now_ns();
    if (!e) e = coop_wait(c, id, -1, &r);
    int64_t tr = now_ns();
    if (!e && frame) e = coop_buffer_read(c, dev[2], 0, o, bytes);
    int64_t t1 = now_ns();
    coop_job_free(j);
    if (e) return fprintf(stderr, "coop-bench-rtt: %s\n", coop_strerror(e)), 1;
    if (r.state != COOP_STATE_DONE ||
        ((!resident || frame || frame_io) && !output_ok(o, nop, groups, n, i + 1)))
      return fprintf(stderr, "coop-bench-rtt: the task failed: %s\n", r.message), 1;
    coop_result_free(&r);
    if (i >= 10) push(&s, (double)(t1 - t0) / 1e3);
    if (i >= 10 && frame) push(&sw, (double)(tw - t0) / 1e3), push(&sr, (double)(t1 - tr) / 1e3);
    if (tj && i >= 10) tj[i - 10] = (struct tjob){id, tw, ta, tr, NULL}; /* the job's own legs */
  }
  if (resident) { /* the output, once: the jobs really ran */
    e = coop_buffer_read(c, dev[nop ? 0 : 2], 0, o, bytes);
    if (e || !output_ok(o, nop, groups, n, runs + 10))
      return fprintf(stderr, "coop-bench-rtt: the resident output is wrong (%s)\n",
                     e ? coop_strerror(e) : "a value"),
             1;
    for (unsigned k = 0; k < (nop ? 1u : 3u); k++) coop_buffer_free(c, dev[k]);
  }
  struct machine m;
  machine_of(&m);
  printf(
      "label,runs,n,groups,median_us,p10_us,p90_us,max_us,host,cpu,commit,p99_us,resident,"
      "kernel,spin_us,every_us%s\n",
      frame ? ",write_p50_us,read_p50_us" : "");
  printf("%s,%u,%u,%u,%.1f,%.1f,%.1f,%.1f,%s,\"%s\",%s,%.1f,%d,%s,%ld,%ld", label, runs, n, groups,
         quantile(&s, 0.5), quantile(&s, 0.1), quantile(&s, 0.9), max_of(&s), m.host, m.cpu,
         COOP_BENCH_COMMIT, quantile(&s, 0.99), resident, nop ? "nop" : "render",
         spin_us < 0 ? (long)env_spin_us() : spin_us, every_us);
  if (frame) printf(",%.1f,%.1f", quantile(&sw, 0.5), quantile(&sr, 0.5));
  printf("\n");
  series_free(&s);
  series_free(&sw);
  series_free(&sr);
  int rc = 0;
  if (tj) {
    fflush(stdout);
    rc = trace_report(trace, tj, runs);
    for (unsigned i = 0; i < runs; i++) free(tj[i].v);
    free(tj);
  }
  free(a);
  free(o);
  coop_disconnect(c);
  return rc;
}
