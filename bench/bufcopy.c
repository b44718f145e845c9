/*
 * bufcopy.c: coop-bench-bufcopy, what large device-buffer copies through
 * coopd cost, and what they cost a frame client beside them
 * (docs/daemon.md, "Device buffers": writes and reads go in slices, and a
 * device pass spends a bounded time on them before its jobs).
 *
 * Three phases against one coopd, one after the other:
 *   copies  a device buffer of BYTES made with its contents (and freed),
 *           then BYTES written into one and read back, COPIES of each, one
 *           at a time (each read checked against its write);
 *   frames  a small render (n x n, device buffers, one workgroup) submitted
 *           and waited for, FRAMES of them back to back, alone;
 *   beside  the same frames while a second connection writes BYTES into
 *           its own device buffer back to back, without a pause.
 * Prints CSV: label, phase, runs, bytes, p50, p90, p99, max (us), GB/s
 * (copies: per copy at its p50; beside: of the writes that ran beside the
 * frames), host, commit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_commit.h"
#include "common.h"
#include "coop.h"

static int usage(FILE *f, int rc) {
  fprintf(f,
          "usage: coop-bench-bufcopy --socket PATH [--bytes N] [--copies N] [--frames N]\n"
          "                          [--n N] [--label L]\n"
          "Large device-buffer copies through the coopd at PATH, and a frame client\n"
          "beside them: a device buffer of BYTES (default 67108864) made with its\n"
          "contents, BYTES written into one and read back, COPIES (default 20) times\n"
          "each; FRAMES (default 500) renders of n x n (default 64) on device buffers\n"
          "back to back, alone and while a second connection writes BYTES into its own\n"
          "buffer without a pause. Prints CSV:\n"
          "label, phase (create, write, read, frames, beside, beside_writes), runs, bytes,\n"
          "p50, p90, p99, max (us), GB/s, host, commit.\n");
  return rc;
}

static const char *prog = "coop-bench-bufcopy";

static void die(const char *what, int e) {
  fprintf(stderr, "%s: %s: %s\n", prog, what, coop_strerror(e));
  exit(1);
}

static const char *label = "coopd";

static void row(const char *phase, const struct series *s, size_t bytes, double gbps) {
  struct machine m;
  machine_of(&m);
  printf("%s,%s,%zu,%zu,%.1f,%.1f,%.1f,%.1f,%.3f,%s,%s\n", label, phase, s->n, bytes,
         quantile(s, 0.5), quantile(s, 0.9), quantile(s, 0.99), max_of(s), gbps, m.host,
         COOP_BENCH_COMMIT);
}

/* ------------------------------------------------------------- copies */

static void copies(coop_conn *c, size_t bytes, unsigned n) {
  uint32_t *w = malloc(bytes), *r = malloc(bytes);
  if (!w || !r) exit(1);
  uint64_t id;
  int e = coop_buffer_create(c, 0, bytes, NULL, 0, &id);
  if (e) die("buffer", e);
  struct series sw = {0}, sr = {0}, sc = {0};
  for (unsigned i = 0; i < n; i++) { /* a buffer made with its contents, then freed */
    uint64_t other;
    int64_t t0 = now_ns();
    if ((e = coop_buffer_create(c, 0, bytes, w, 0, &other))) die("create", e);
    push(&sc, (double)(now_ns() - t0) / 1e3);
    coop_buffer_free(c, other);
  }
  row("create", &sc, bytes, (double)bytes / quantile(&sc, 0.5) / 1e3);
  series_free(&sc);
  for (unsigned i = 0; i < n; i++) {
    for (size_t k = 0; k < bytes / 4; k++) w[k] = (uint32_t)(k * 2654435761u) ^ i;
    int64_t t0 = now_ns();
    if ((e = coop_buffer_write(c, id, 0, w, bytes))) die("write", e);
    int64_t t1 = now_ns();
    if ((e = coop_buffer_read(c, id, 0, r, bytes))) die("read", e);
    int64_t t2 = now_ns();
    if (memcmp(w, r, bytes)) fprintf(stderr, "%s: copy %u read back wrong\n", prog, i), exit(1);
    push(&sw, (double)(t1 - t0) / 1e3);
    push(&sr, (double)(t2 - t1) / 1e3);
  }
  row("write", &sw, bytes, (double)bytes / quantile(&sw, 0.5) / 1e3);
  row("read", &sr, bytes, (double)bytes / quantile(&sr, 0.5) / 1e3);
  coop_buffer_free(c, id);
  series_free(&sw);
  series_free(&sr);
  free(w);
  free(r);
}

/* ------------------------------------------------------------- frames */

/* n x n render on device buffers dev[0..2]; the round trip of each. */
static void frames(coop_conn *c, const uint64_t *dev, unsigned n, unsigned runs, struct series *s) {
  for (unsigned i = 0; i < runs; i++) {
    coop_job *j = coop_job_new("render", 1);
    for (unsigned k = 0; k < 3; k++) coop_job_buffer(j, dev[k]);
    coop_job_u32(j, n);
    coop_job_u32(j, 1);
    uint64_t id;
    struct coop_result r;
    int64_t t0 = now_ns();
    int e = coop_submit(c, j, &id);
    if (!e) e = coop_wait(c, id, -1, &r);
    int64_t t1 = now_ns();
    coop_job_free(j);
    if (e) die("frame", e);
    if (r.state != COOP_STATE_DONE)
      fprintf(stderr, "%s: a frame failed: %s\n", prog, r.message), exit(1);
    coop_result_free(&r);
    push(s, (double)(t1 - t0) / 1e3);
  }
}

/* The writer beside the frames: its own connection and buffer, writes
 * back to back until told to stop. */
struct writer {
  const char *sock;
  size_t bytes;
  atomic_int stop;
  atomic_size_t done; /* writes answered, for the frames' thread */
  struct series took; /* us a write; read after the join */
};

static void *writer_main(void *arg) {
  struct writer *w = arg;
  coop_conn *c;
  int e = coop_connect(&c, w->sock, "coop-bench-bufcopy writer");
  if (e) die("connect", e);
  void *b = calloc(1, w->bytes);
  uint64_t id;
  if (!b) exit(1);
  if ((e = coop_buffer_create(c, 0, w->bytes, NULL, 0, &id))) die("buffer", e);
  while (!atomic_load(&w->stop)) {
    int64_t t0 = now_ns();
    if ((e = coop_buffer_write(c, id, 0, b, w->bytes))) die("write", e);
    push(&w->took, (double)(now_ns() - t0) / 1e3);
    atomic_fetch_add(&w->done, 1);
  }
  coop_buffer_free(c, id);
  coop_disconnect(c);
  free(b);
  return NULL;
}

int main(int argc, char **argv) {
  static const struct option lo[] = {
      {"socket", required_argument, 0, 's'}, {"bytes", required_argument, 0, 'b'},
      {"copies", required_argument, 0, 'c'}, {"frames", required_argument, 0, 'f'},
      {"n", required_argument, 0, 'n'},      {"label", required_argument, 0, 'l'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  const char *sock = NULL;
  size_t bytes = 64u << 20;
  unsigned ncopies = 20, nframes = 500, n = 64;
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) bench_usage_error(prog, "spell out %s", bad);
  for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    switch (ch) {
      case 's':
        sock = optarg;
        break;
      case 'b':
        bytes = (size_t)bench_parse_num(prog, "--bytes", optarg, 4, 1l << 30) & ~(size_t)3;
        break;
      case 'c':
        ncopies = (unsigned)bench_parse_num(prog, "--copies", optarg, 1, 100000);
        break;
      case 'f':
        nframes = (unsigned)bench_parse_num(prog, "--frames", optarg, 1, 1000000);
        break;
      case 'n':
        n = (unsigned)bench_parse_num(prog, "--n", optarg, 1, 1024);
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
  if (!sock || optind < argc) return usage(stderr, 2);
  coop_conn *c;
  int e = coop_connect(&c, sock, "coop-bench-bufcopy");
  if (e) die("connect", e);
  printf("label,phase,runs,bytes,p50_us,p90_us,p99_us,max_us,gbps,host,commit\n");
  copies(c, bytes, ncopies);

  size_t fb = (size_t)n * n * sizeof(float);
  float *a = malloc(fb);
  if (!a) return 1;
  for (size_t i = 0; i < (size_t)n * n; i++) a[i] = 1.0f;
  uint64_t dev[3];
  for (unsigned k = 0; k < 3; k++)
    if ((e = coop_buffer_create(c, 0, fb, k < 2 ? a : NULL, 0, &dev[k]))) die("buffer", e);
  struct series alone = {0}, beside = {0};
  frames(c, dev, n, 10, &alone); /* warm-up */
  series_free(&alone);
  frames(c, dev, n, nframes, &alone);
  row("frames", &alone, fb, 0);

  struct writer w = {.sock = sock, .bytes = bytes};
  pthread_t t;
  if (pthread_create(&t, NULL, writer_main, &w)) return 1;
  while (atomic_load(&w.done) < 1) { /* the writer under way */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  int64_t t0 = now_ns();
  size_t before = atomic_load(&w.done);
  frames(c, dev, n, nframes, &beside);
  double secs = (double)(now_ns() - t0) / 1e9;
  size_t during = atomic_load(&w.done) - before; /* writes ended while the frames ran */
  atomic_store(&w.stop, 1);
  pthread_join(t, NULL);
  row("beside", &beside, fb, 0);
  row("beside_writes", &w.took, bytes, (double)during * (double)bytes / secs / 1e9);
  for (unsigned k = 0; k < 3; k++) coop_buffer_free(c, dev[k]);
  series_free(&alone);
  series_free(&beside);
  series_free(&w.took);
  free(a);
  coop_disconnect(c);
  return 0;
}
