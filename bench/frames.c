/*
 * frames.c: coop-bench-frames, a frame client through coopd. A renderer
 * that lives outside coopd, as every user does: each frame it writes fresh
 * input into a device buffer (coop_buffer_write), submits the frame's task
 * naming its device buffers, waits for it and reads the output back
 * (coop_buffer_read), one frame every period. Measured alone, then beside
 * a long cooperative kernel that another client of the same coopd keeps
 * running (bfs, one job after the other, its graph uploaded once as device
 * buffers).
 *
 *   coop-bench-frames --socket PATH [--exec-ms E[,E...]] [--fps F] [--seconds S]
 *                     [--groups K] [--n N] [--scale S] [--input I]
 *                     [--coopd-pid PID] [--csv FILE]
 *
 * The frame's task is render (kernels/render.cl: c = a x b, n x n floats,
 * `reps` times), its reps calibrated through coopd so that one task takes
 * E ms on K workgroups. A frame's latency is its release to the output
 * read back; a miss is a frame done later than its release plus the
 * period. The long kernel's slowdown is the mean of its jobs' executions
 * beside the frames over their mean alone. With --coopd-pid, the CPU
 * coopd and its device process spent per frame in the window beside the
 * long kernel (their utime + stime, /proc).
 *
 * Prints a table and, with --csv, one row per (task size, setup).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "bench_commit.h"
#include "common.h"
#include "coop.h"
#include "coopd_jobs.h"
#include "coopd_proc.h"

#define FB "coop-bench-frames"

struct fopts {
  const char *sock, *csv;
  double exec_ms[8];
  unsigned nexec, groups, n, seconds, scale, input;
  double fps;
  long coopd_pid;
};

static int long_query; /* --query-barrier */

static int usage(FILE *f, int rc) {
  fprintf(f, "usage: " FB
             " --socket PATH [--exec-ms E[,E...]] [--fps F] [--seconds S]\n"
             "                         [--groups K] [--n N] [--scale S] [--input I]\n"
             "                         [--coopd-pid PID] [--csv FILE] [--query-barrier]\n"
             "A frame client through coopd: every 1/F s (default 60 fps) it writes a\n"
             "frame's input into a device buffer, runs render (n x n, default 64, on K\n"
             "workgroups, default 1) calibrated to E ms (default 2; a list runs each),\n"
             "and reads the output back; S seconds (default 5) alone, then beside bfs\n"
             "(test input I at scale S, default 1 and 12: road 1024 x 1024) that another\n"
             "connection keeps running. Prints latency p50/p90/p99 and against alone,\n"
             "gather, misses, the long kernel's slowdown and, with --coopd-pid, the CPU\n"
             "coopd and its device process spent per frame. --query-barrier: bfs with the\n"
             "query variant of the resizing barrier.\n");
  return rc;
}

/* ---- the frame's task ---- */

/* render's a: all ones but its first row, which says which frame it is */
struct frame {
  struct dframe d;
  float *in;
};

static int frame_open(struct frame *f, coop_conn *c, uint32_t n, uint32_t groups) {
  size_t count = (size_t)n * n;
  f->in = malloc(count * sizeof(float));
  if (!f->in) return COOP_ENOMEM;
  for (size_t i = 0; i < count; i++) f->in[i] = 1.0f;
  return dframe_open(&f->d, c, "render", n, groups, f->in, f->in);
}

/* One frame: fresh input (its first row says which frame), the task, the
 * output back; the result's times into *r (freed here on failure). */
static int frame_run(struct frame *f, uint32_t k, struct coop_result *r) {
  struct dframe *d = &f->d;
  for (uint32_t i = 0; i < d->n; i++) f->in[i] = (float)(k % 7 + 1);
  uint64_t id;
  int e = dframe_submit(d, f->in, d->o, &id);
  if (!e) e = dframe_finish(d, id, d->o, 60000, r);
  if (e) {
    fprintf(stderr, FB ": frame %u: %s: %s\n", k, coop_strerror(e), coop_errmsg(d->c));
    return 1;
  }
  /* c[0][0] = row 0 of a (all k%7+1) . column 0 of b (ones) = n * (k%7+1) */
  if (d->out[0] != (float)d->n * (float)(k % 7 + 1)) {
    fprintf(stderr, FB ": frame %u: output %g, want %g\n", k, d->out[0],
            (float)d->n * (float)(k % 7 + 1));
    coop_result_free(r);
    return 1;
  }
  return 0;
}

/* reps so that one task takes about ms milliseconds (executions measured
 * by the device, median of 5). */
static int calibrate(struct frame *f, double ms) {
  f->d.reps = 1;
  for (int round = 0; round < 2; round++) {
    struct series s = {0};
    for (uint32_t i = 0; i < 5; i++) {
      struct coop_result r;
      if (frame_run(f, i, &r)) return 1;
      push(&s, (double)r.t.exec_ns);
      coop_result_free(&r);
    }
    double one = quantile(&s, 0.5) / f->d.reps;
    series_free(&s);
    if (one <= 0) one = 1000;
    double reps = ms * 1e6 / one;
    f->d.reps = reps < 1 ? 1 : reps > 1e6 ? 1000000 : (uint32_t)(reps + 0.5);
  }
  return 0;
}

/* ---- frames at a period ---- */

struct fstats {
  struct series lat, gather;       /* ms */
  struct series write, task, read; /* the frame's legs, ms */
  unsigned frames, misses;
};

static void sleep_until(int64_t t) {
  for (;;) {
    int64_t left = t - now_ns();
    if (left <= 0) return;
    if (left < 200000) continue; /* the last 200 us spun */
    int64_t nap = left - 200000;
    struct timespec ts = {(time_t)(nap / 1000000000), (long)(nap % 1000000000)};
    nanosleep(&ts, NULL);
  }
}

static int frames(struct frame *f, int64_t period, unsigned seconds, struct fstats *st) {
  memset(st, 0, sizeof *st);
  int64_t next = now_ns(), end = next + (int64_t)seconds * 1000000000;
  for (uint32_t k = 0; next < end; k++) {
    sleep_until(next);
    struct coop_result r;
    if (frame_run(f, k, &r)) return 1;
    int64_t done = now_ns();
    push(&st->lat, (double)(done - next) / 1e6);
    if (r.t.gather_ns >= 0) push(&st->gather, (double)r.t.gather_ns / 1e6);
    push(&st->write, (double)f->d.t_write / 1e6);
    push(&st->task, (double)f->d.t_task / 1e6);
    push(&st->read, (double)f->d.t_read / 1e6);
    coop_result_free(&r);
    st->frames++;
    st->misses += done > next + period;
    next += period;
    if (done > next) next = done; /* one frame at a time */
  }
  return 0;
}

/* The long kernel's mean execution over its runs since the last clear, ms. */
static double long_mean_ms(const struct dlong *l) {
  double sum = 0;
  for (size_t i = 0; i < l->nruns; i++) sum += (double)l->runs[i].exec_ns / 1e6;
  return l->nruns ? sum / (double)l->nruns : 0;
}

/* ---- the run ---- */

static void row(FILE *csv, const struct fopts *o, double ms, const char *setup,
                const struct fstats *s, const struct fstats *alone, double slow, double cpu_us,
                uint32_t reps) {
  double p50 = quantile(&s->lat, 0.5), p90 = quantile(&s->lat, 0.9), p99 = quantile(&s->lat, 0.99);
  double a50 = quantile(&alone->lat, 0.5), a99 = quantile(&alone->lat, 0.99);
  printf(
      "%-7.2f %-8s %7u %9.3f %9.3f %9.3f %7.2fx %7.2fx %9.3f %9.3f %7u %8.3f %9.1f   %.3f "
      "%.3f %.3f\n",
      ms, setup, s->frames, p50, p90, p99, p50 / a50, p99 / a99, quantile(&s->gather, 0.5),
      quantile(&s->gather, 0.99), s->misses, slow, cpu_us, quantile(&s->write, 0.5),
      quantile(&s->task, 0.5), quantile(&s->read, 0.5));
  if (csv)
    fprintf(csv, "%.3f,%s,%u,%u,%u,%.4f,%.4f,%.4f,%.3f,%.3f,%.4f,%.4f,%u,%.4f,%.1f,%s\n", ms, setup,
            reps, o->groups, s->frames, p50, p90, p99, p50 / a50, p99 / a99,
            quantile(&s->gather, 0.5), quantile(&s->gather, 0.99), s->misses, slow, cpu_us,
            COOP_BENCH_COMMIT);
}

static int run(const struct fopts *o) {
  coop_conn *c;
  int e = coop_connect(&c, o->sock, FB);
  if (e) return fprintf(stderr, FB ": %s: %s\n", coop_strerror(e), coop_errmsg(NULL)), 1;
  struct frame f;
  if ((e = frame_open(&f, c, o->n, o->groups)))
    return fprintf(stderr, FB ": buffers: %s\n", coop_strerror(e)), 1;
  struct coop_app_input in;
  const struct coop_app *bfs = coop_app_find("bfs");
  if (!bfs || (e = coop_app_input(bfs, o->input, o->scale, &in)))
    return fprintf(stderr, FB ": bfs input: %s\n", coop_strerror(bfs ? e : COOP_EINVAL)), 1;
  struct dlong l;
  if ((e = dlong_open(&l, o->sock, FB "-long", bfs, &in, long_query)))
    return fprintf(stderr, FB ": bfs: %s: %s\n", coop_strerror(e), coop_errmsg(l.c)), 1;
  for (int i = 0; i < 3; i++)
    if ((e = dlong_job(&l))) return fprintf(stderr, FB ": bfs: %s\n", coop_strerror(e)), 1;
  double alone_long = long_mean_ms(&l);
  FILE *csv = o->csv ? fopen(o->csv, "w") : NULL;
  if (csv)
    fprintf(csv,
            "exec_ms,setup,reps,groups,frames,p50_ms,p90_ms,p99_ms,p50_vs_alone,"
            "p99_vs_alone,gather_p50_ms,gather_p99_ms,misses,long_slowdown,cpu_us_per_frame,"
            "commit\n");
  struct machine m;
  machine_of(&m);
  printf(FB
         ": %s, %s, commit %s; device %s (%s), %u workers; %.0f fps, %u s each; render "
         "n %u on %u workgroups; bfs (%s) alone %.2f ms\n",
         m.host, m.cpu, COOP_BENCH_COMMIT, coop_info(c)->device, coop_info(c)->backend,
         coop_info(c)->workers, o->fps, o->seconds, o->n, o->groups, in.label, alone_long);
  printf("%-7s %-8s %7s %9s %9s %9s %8s %8s %9s %9s %7s %8s %9s   %s\n", "task_ms", "setup",
         "frames", "p50_ms", "p90_ms", "p99_ms", "p50/al", "p99/al", "gath50", "gath99", "misses",
         "long_x", "cpu_us/f", "p50 ms: write task read");
  int64_t period = (int64_t)(1e9 / o->fps);
  int rc = 0;
  for (unsigned x = 0; x < o->nexec && !rc; x++) {
    if (calibrate(&f, o->exec_ms[x])) return 1;
    struct fstats alone, beside;
    if (frames(&f, period, o->seconds, &alone)) return 1;
    dlong_clear(&l);
    if (dlong_start(&l)) return 1;
    sleep(1);
    double cpu0 = coopd_cpu_s(o->coopd_pid);
    rc = frames(&f, period, o->seconds, &beside);
    double cpu = coopd_cpu_s(o->coopd_pid) - cpu0;
    if ((e = dlong_stop(&l))) return fprintf(stderr, FB ": bfs: %s\n", coop_strerror(e)), 1;
    if (rc) break;
    double slow = l.nruns ? long_mean_ms(&l) / alone_long : 0;
    row(csv, o, o->exec_ms[x], "alone", &alone, &alone, 0, 0, f.d.reps);
    row(csv, o, o->exec_ms[x], "bfs", &beside, &alone, slow,
        o->coopd_pid > 0 ? cpu * 1e6 / beside.frames : 0, f.d.reps);
    struct fstats *both[] = {&alone, &beside};
    for (int k = 0; k < 2; k++) {
      series_free(&both[k]->lat), series_free(&both[k]->gather), series_free(&both[k]->write);
      series_free(&both[k]->task), series_free(&both[k]->read);
    }
  }
  if (csv) fclose(csv);
  dlong_close(&l);
  coop_app_input_free(&in);
  dframe_close(&f.d);
  free(f.in);
  coop_disconnect(c);
  return rc;
}

int main(int argc, char **argv) {
  static const struct option lo[] = {{"socket", required_argument, 0, 's'},
                                     {"exec-ms", required_argument, 0, 'e'},
                                     {"fps", required_argument, 0, 'f'},
                                     {"seconds", required_argument, 0, 'S'},
                                     {"groups", required_argument, 0, 'g'},
                                     {"n", required_argument, 0, 'n'},
                                     {"scale", required_argument, 0, 'c'},
                                     {"input", required_argument, 0, 'i'},
                                     {"coopd-pid", required_argument, 0, 'p'},
                                     {"csv", required_argument, 0, 'C'},
                                     {"query-barrier", no_argument, 0, 'q'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  struct fopts o = {.exec_ms = {2},
                    .nexec = 1,
                    .groups = 1,
                    .n = 64,
                    .seconds = 5,
                    .scale = 12,
                    .input = 1,
                    .fps = 60};
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) return fprintf(stderr, FB ": spell out %s\n", bad), usage(stderr, 2);
  for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    char *end = NULL;
    switch (ch) {
      case 's':
        o.sock = optarg;
        break;
      case 'e':
        o.nexec = 0;
        for (char *p = optarg; *p && o.nexec < 8; p = *end ? end + 1 : end) {
          o.exec_ms[o.nexec] = strtod(p, &end);
          if (end == p || o.exec_ms[o.nexec] <= 0) return usage(stderr, 2);
          o.nexec++;
        }
        break;
      case 'f':
        o.fps = strtod(optarg, NULL);
        break;
      case 'S':
        o.seconds = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'g':
        o.groups = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'n':
        o.n = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'c':
        o.scale = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'i':
        o.input = (unsigned)strtoul(optarg, NULL, 10);
        break;
      case 'p':
        o.coopd_pid = strtol(optarg, NULL, 10);
        break;
      case 'C':
        o.csv = optarg;
        break;
      case 'q':
        long_query = 1;
        break;
      case 'h':
        return usage(stdout, 0);
      default:
        return usage(stderr, 2);
    }
  }
  if (!o.sock || o.fps <= 0 || !o.seconds || !o.groups || o.n < 8 || o.n > 256 || o.scale > 12)
    return usage(stderr, 2);
  return run(&o);
}
