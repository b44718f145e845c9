/*
 * test_buffers.c: device buffers through coopd and libcoop (PROTOCOL.md,
 * "Device buffers"; docs/daemon.md): their life cycle, their owner, what
 * they cost their user, and what a device-process restart does to them;
 * and a client that floods coopd with requests it never reads the replies
 * of, beside one whose tasks must keep running.
 * Real daemons on PoCL; the sweep kernel (kernels/sweep.cl) adds `rounds`
 * to each of n words, so a buffer's contents tell how many jobs ran on it.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "coop.h"
#include "coop_util.h"
#include "daemon_harness.h"
#include "fuse_stall.h"
#include "wire.h"

/* The large jobs' bytes, a quarter of them under ThreadSanitizer: there
 * every byte the test and coopd touch is checked (a job of 80 MiB took 15
 * s), and a quarter is still more slices than the cases count on. */
#if defined(__SANITIZE_THREAD__)
#define LARGE(bytes) ((bytes) / 4)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LARGE(bytes) ((bytes) / 4)
#endif
#endif
#ifndef LARGE
#define LARGE(bytes) (bytes)
#endif

/* A coopd of the harness's (daemon_harness.h) whose socket a second uid
 * may reach (the owners test), with the settings extra (NULL-ended, or
 * NULL); with d->log set, its stderr goes there at debug level. Its task
 * bound is 120 s: a large job's copies under ThreadSanitizer on two loaded
 * cores (80 MiB each way) took a render past the default 5 s, and the
 * bound is not what these tests check. */
static void bufs_start(struct daemon_proc *d, const char *const *extra) {
  const char *sets[10] = {"server.socket_mode=0666", "jobs.task_max_ms=120000"};
  unsigned n = 2;
  if (d->log) sets[n++] = "log.level=debug";
  for (unsigned i = 0; extra && extra[i] && n < 9; i++) sets[n++] = extra[i];
  daemon_start_log(d, sets);
  chmod(d->dir, 0755);
}

static void bufs_stop(struct daemon_proc *d) { ck_assert_int_eq(daemon_stop(d), 0); }

static coop_conn *connect_to(const struct daemon_proc *d) {
  coop_conn *c = NULL;
  int e = coop_connect(&c, d->sock, "test_buffers");
  ck_assert_msg(e == 0, "connect: %s: %s", coop_err_name(e), coop_errmsg(NULL));
  return c;
}

/* A sweep of `rounds` over the first n words of device buffer b; waits
 * for it and returns its state (error into *err when given). */
static int sweep_on(coop_conn *c, uint64_t b, uint32_t n, uint32_t rounds, int *err) {
  coop_job *j = coop_job_new("sweep", 1);
  coop_job_cooperative(j, 1);
  coop_job_buffer(j, b);
  coop_job_u32(j, n);
  coop_job_u32(j, rounds);
  uint64_t id = 0;
  int e = coop_submit(c, j, &id);
  coop_job_free(j);
  if (e) {
    if (err) *err = e;
    return -1;
  }
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, id, 60000, &r), 0);
  int st = r.state;
  if (err) *err = r.error;
  coop_result_free(&r);
  return st;
}

static void words(uint32_t *w, size_t n, uint32_t base) {
  for (size_t i = 0; i < n; i++) w[i] = base + (uint32_t)i;
}

/* Every word of w[0..n) is base + i + add. A test only at a mismatch:
 * every passing ck_assert sends its place to check's parent process, and
 * a check of 2 MiB word by word took a second so. */
static void check_words(const uint32_t *w, size_t n, uint32_t base, uint32_t add) {
  for (size_t i = 0; i < n; i++)
    if (w[i] != base + (uint32_t)i + add)
      ck_abort_msg("word %zu: %u, want %u", i, w[i], base + (uint32_t)i + add);
}

/* How many of process pid's (0: this one's) descriptors are memfds named
 * `name`. */
static int memfds_of(pid_t pid, const char *name) {
  char want[96], path[64], link[128];
  snprintf(want, sizeof want, "/memfd:%s (deleted)", name);
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) {
    if (pid)
      snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    else
      snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(path, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = '\0';
    n += strcmp(link, want) == 0;
  }
  return n;
}

/* The seals of this process's memfd named `name` (the first), or -1. */
static int seals_of(const char *name) {
  char want[96], path[64], link[128];
  snprintf(want, sizeof want, "/memfd:%s (deleted)", name);
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(path, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = '\0';
    if (!strcmp(link, want)) return fcntl(fd, F_GET_SEALS);
  }
  return -1;
}

/* Create with contents, write a range, jobs on it one after another, read
 * back (inline and, above inline_max, by memfd), the range checks, free,
 * and every use after the free refused. Writes and reads above inline_max
 * go through one memfd the connection keeps (libcoop's coop_buffer.c: a
 * fresh one each time cost the kernel's page allocation on both sides,
 * 272 KB took 260 us where it now takes 130-180 on 2 cores), never reused
 * after a failure. */
START_TEST(life_cycle) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  enum { N = 4096 };
  static uint32_t w[N], back[N];
  words(w, N, 100);
  uint64_t b = 0;
  ck_assert_int_eq(coop_buffer_create(c, COOP_ANY_DEVICE, sizeof w, w, 0, &b), 0);
  ck_assert_uint_ne(b, 0);
  /* the first 16 words rewritten */
  uint32_t head[16];
  words(head, 16, 100);
  ck_assert_int_eq(coop_buffer_write(c, b, 0, head, sizeof head), 0);
  for (int k = 0; k < 3; k++) ck_assert_int_eq(sweep_on(c, b, N, 5, NULL), COOP_STATE_DONE);
  ck_assert_int_eq(coop_buffer_read(c, b, 0, back, sizeof back), 0);
  check_words(back, N, 100, 15);
  /* a range in the middle */
  uint32_t mid[4] = {0};
  ck_assert_int_eq(coop_buffer_read(c, b, 4 * 1000, mid, sizeof mid), 0);
  check_words(mid, 4, 1100, 15);
  /* outside the buffer: refused, nothing written */
  ck_assert_int_eq(coop_buffer_write(c, b, sizeof w - 4, head, 8), COOP_EINVAL);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "outside device buffer"));
  ck_assert_int_eq(coop_buffer_read(c, b, sizeof w + 4, mid, 4), COOP_EINVAL);
  ck_assert_int_eq(coop_buffer_read(c, b, (size_t)-8, mid, 16), COOP_EINVAL);
  /* the kernel's own rule (n*4 <= len(data)) holds for a device buffer */
  int err = 0;
  ck_assert_int_eq(sweep_on(c, b, N + 1, 1, &err), -1);
  ck_assert_int_eq(err, COOP_EARGS);
  /* a large one: 2 MiB, beyond inline_max both ways (memfds) */
  size_t big = 2u << 20;
  ck_assert_uint_gt(big, coop_info(c)->inline_max);
  uint32_t *bw = malloc(big), *bb = malloc(big);
  words(bw, big / 4, 7);
  uint64_t b2 = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, big, bw, 0, &b2), 0);
  ck_assert_int_eq(sweep_on(c, b2, (uint32_t)(big / 4), 2, NULL), COOP_STATE_DONE);
  ck_assert_int_eq(coop_buffer_read(c, b2, 0, bb, big), 0);
  check_words(bb, big / 4, 7, 2);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  for (int k = 0; k < 3; k++) { /* the kept memfd carries each op's own bytes */
    words(bw, big / 4, 1000u * (uint32_t)k);
    ck_assert_int_eq(coop_buffer_write(c, b2, 0, bw, big), 0);
    ck_assert_int_eq(coop_buffer_read(c, b2, 4, bb, big - 8), 0);
    check_words(bb, big / 4 - 2, 1000u * (uint32_t)k + 1, 0);
  }
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  /* sealed against shrinking: the device process may map it once (xmap.h) */
  ck_assert_int_ge(seals_of("coop-transfer"), 0);
  ck_assert(seals_of("coop-transfer") & F_SEAL_SHRINK);
  /* a failed op drops it: a late answer must not reach the next op's bytes */
  ck_assert_int_eq(coop_buffer_read(c, b2, 8, bb, big), COOP_EINVAL);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 0);
  ck_assert_int_eq(coop_buffer_read(c, b2, 0, bb, big), 0);
  check_words(bb, big / 4, 2000, 0);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  /* zeros when created without contents */
  uint64_t z = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, 64, NULL, 0, &z), 0);
  ck_assert_int_eq(coop_buffer_read(c, z, 0, mid, sizeof mid), 0);
  ck_assert(mid[0] == 0 && mid[1] == 0 && mid[2] == 0 && mid[3] == 0);
  /* freed: every use refused as for an id that never was */
  ck_assert_int_eq(coop_buffer_free(c, b), 0);
  ck_assert_int_eq(coop_buffer_read(c, b, 0, mid, 4), COOP_ENOJOB);
  ck_assert_int_eq(coop_buffer_write(c, b, 0, head, 4), COOP_ENOJOB);
  ck_assert_int_eq(coop_buffer_free(c, b), COOP_ENOJOB);
  ck_assert_int_eq(sweep_on(c, b, 16, 1, &err), -1);
  ck_assert_int_eq(err, COOP_ENOJOB);
  free(bw);
  free(bb);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A sweep of `rounds` over n words of device buffer b, its input `in`
 * (NULL: none) written into bytes at.. of b by the job and the same range
 * read into `out` (NULL: none) after it (coop_job_buffer_io). Submitted
 * only: *id. */
static int sweep_io(coop_conn *c, uint64_t b, uint32_t n, uint32_t rounds, size_t at,
                    const void *in, void *out, size_t len, uint64_t *id) {
  coop_job *j = coop_job_new("sweep", 1);
  coop_job_cooperative(j, 1);
  coop_job_buffer_io(j, b, at, in, out, len);
  coop_job_u32(j, n);
  coop_job_u32(j, rounds);
  int e = coop_submit(c, j, id);
  coop_job_free(j);
  return e;
}

static int wait_state(coop_conn *c, uint64_t id) {
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, id, 60000, &r), 0);
  int st = r.state;
  coop_result_free(&r);
  return st;
}

/* The render j, its buffers added, with n and one repetition: submitted
 * on c and freed, its id. */
static uint64_t render_go(coop_conn *c, coop_job *j, uint32_t n) {
  coop_job_u32(j, n);
  coop_job_u32(j, 1);
  uint64_t id = 0;
  ck_assert_int_eq(coop_submit(c, j, &id), 0);
  coop_job_free(j);
  return id;
}

/* A job that moves ranges of its device buffer (PROTOCOL.md, "Device
 * buffers", devbuf_io): the input lands before its task, the output is
 * the task's, read after it; through the connection's kept transfer memfd,
 * or a fresh one while a job holds that; ranges checked against the
 * buffer; a job that did not finish leaves the caller's memory alone. */
START_TEST(a_job_moves_its_ranges) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  enum { N = 70000 }; /* 280 KB: above inline_max, as a frame's */
  static uint32_t w[N], back[N], back2[N];
  words(w, N, 100);
  uint64_t b = 0, id = 0, id2 = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, NULL, 0, &b), 0);
  /* in and out: the task saw the input, the caller gets the task's output */
  ck_assert_int_eq(sweep_io(c, b, N, 3, 0, w, back, sizeof w, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  check_words(back, N, 100, 3);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  /* in only, in the middle; out only; then what stayed on the device */
  uint32_t mid[16];
  words(mid, 16, 5000);
  ck_assert_int_eq(sweep_io(c, b, N, 1, 4 * 100, mid, NULL, sizeof mid, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  memset(back, 0, sizeof back);
  ck_assert_int_eq(sweep_io(c, b, N, 1, 0, NULL, back, sizeof back, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  check_words(back, 100, 100, 5);
  check_words(back + 100, 16, 5000, 2);
  check_words(back + 116, N - 116, 216, 5);
  /* two in flight: the second takes a fresh memfd; each gets its own */
  words(w, N, 7);
  ck_assert_int_eq(sweep_io(c, b, N, 1, 0, w, back, sizeof w, &id), 0);
  words(w, N, 9000);
  uint64_t b2 = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, NULL, 0, &b2), 0);
  ck_assert_int_eq(sweep_io(c, b2, N, 2, 0, w, back2, sizeof w, &id2), 0);
  ck_assert_int_eq(wait_state(c, id2), COOP_STATE_DONE);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  check_words(back, N, 7, 1);
  check_words(back2, N, 9000, 2);
  /* and the kept one serves a buffer read again */
  ck_assert_int_eq(coop_buffer_read(c, b2, 0, back, sizeof back), 0);
  check_words(back, N, 9000, 2);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  /* coopd holds the connection's transfer memfd once (libcoop sent it by
   * XFER: the second job in a row to use it), and none of the ranges'
   * descriptors once their jobs ended, though it keeps the jobs for RESULT
   * (each held one: the daemon's descriptor table grew with a frame loop,
   * and each growth past a power of two stopped its loop for milliseconds) */
  ck_assert_int_eq(memfds_of(d.pid, "coop-transfer"), 1);
  ck_assert_int_eq(memfds_of(d.pid, "coop-buffer"), 0);
  /* outside the buffer: refused at submit, nothing run */
  ck_assert_int_eq(sweep_io(c, b, 16, 1, sizeof w - 8, mid, NULL, 16, &id), COOP_EINVAL);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "outside device buffer"));
  ck_assert_int_eq(sweep_io(c, b, 16, 1, (size_t)-8, NULL, back, 16, &id), COOP_EINVAL);
  /* the kernel's own rules hold for the buffer's whole size */
  ck_assert_int_eq(sweep_io(c, b, N + 1, 1, 0, mid, NULL, 16, &id), COOP_EARGS);
  /* the caller's own memfd (coop_job_buffer_io_fd): input at 4096 of it,
   * output into its start; sealed (mapped by the device process) or not */
  for (int sealed = 0; sealed < 2; sealed++) {
    int mfd = memfd_create("io-own", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_ge(mfd, 0);
    ck_assert_int_eq(ftruncate(mfd, 4096 + sizeof w), 0);
    if (sealed) ck_assert_int_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    words(w, N, 300u + (uint32_t)sealed);
    ck_assert_int_eq(pwrite(mfd, w, sizeof w, 4096), (ssize_t)sizeof w);
    coop_job *j = coop_job_new("sweep", 1);
    coop_job_cooperative(j, 1);
    coop_job_buffer_io_fd(j, b, 0, mfd, 4096, sizeof w, COOP_JOB_INOUT);
    coop_job_u32(j, N);
    coop_job_u32(j, 4);
    ck_assert_int_eq(coop_submit(c, j, &id), 0);
    coop_job_free(j);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    ck_assert_int_eq(pread(mfd, back, sizeof back, 4096), (ssize_t)sizeof back);
    check_words(back, N, 300u + (uint32_t)sealed, 4);
    close(mfd);
  }
  /* a frame loop of two memfds of its own, the render's input a and its
   * output c (b a device buffer): the first, used again, becomes the
   * connection's transfer memfd (XFER) and is named, not sent; the second
   * is sent; every frame gets a x b of its own a (on the old code the
   * fourth frame named the first and then registered the second in one
   * job, and read its input from the output's file) */
  {
    float fa[RN * RN], fb[RN * RN], want[RN * RN], got[RN * RN];
    render_inputs(fa, fb);
    uint64_t bb = 0, ba = 0, bc = 0;
    ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fb, fb, 0, &bb), 0);
    ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fa, NULL, 0, &ba), 0);
    ck_assert_int_eq(coop_buffer_create(c, 0, sizeof got, NULL, 0, &bc), 0);
    int in_fd = memfd_create("io-in", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int out_fd = memfd_create("io-out", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert(in_fd >= 0 && out_fd >= 0);
    ck_assert_int_eq(ftruncate(in_fd, sizeof fa), 0);
    ck_assert_int_eq(ftruncate(out_fd, sizeof got), 0);
    ck_assert_int_eq(fcntl(in_fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    for (int k = 0; k < 6; k++) {
      fa[0] = (float)k;
      matmul_ref(fa, fb, want);
      ck_assert_int_eq(pwrite(in_fd, fa, sizeof fa, 0), (ssize_t)sizeof fa);
      coop_job *j = coop_job_new("render", 1);
      coop_job_buffer_io_fd(j, ba, 0, in_fd, 0, sizeof fa, COOP_JOB_IN);
      coop_job_buffer(j, bb);
      coop_job_buffer_io_fd(j, bc, 0, out_fd, 0, sizeof got, COOP_JOB_OUT);
      ck_assert_int_eq(wait_state(c, render_go(c, j, RN)), COOP_STATE_DONE);
      ck_assert_int_eq(pread(out_fd, got, sizeof got, 0), (ssize_t)sizeof got);
      for (int i = 0; i < RN * RN; i++)
        ck_assert_msg(got[i] == want[i] || (got[i] - want[i]) * (got[i] - want[i]) < 1e-6f,
                      "frame %d, element %d: %g, want %g", k, i, (double)got[i], (double)want[i]);
    }
    close(in_fd);
    close(out_fd);
  }
  /* a memfd shorter than its range: refused by the setter */
  int small = memfd_create("io-small", MFD_CLOEXEC);
  ck_assert_int_eq(ftruncate(small, 64), 0);
  coop_job *sj = coop_job_new("sweep", 1);
  coop_job_buffer_io_fd(sj, b, 0, small, 32, 64, COOP_JOB_IN);
  ck_assert_int_eq(coop_submit(c, sj, &id), COOP_EINVAL);
  coop_job_free(sj);
  close(small);
  /* no bytes either way: refused by the setter */
  ck_assert_int_eq(sweep_io(c, b, N, 1, 0, NULL, NULL, 16, &id), COOP_EINVAL);
  /* a job cancelled before its end: the caller's memory untouched */
  memset(back, 0xab, sizeof back);
  ck_assert_int_eq(sweep_io(c, b, N, 100000000, 0, w, back, sizeof w, &id), 0);
  ck_assert_int_eq(coop_cancel(c, id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_CANCELLED);
  for (size_t i = 0; i < N; i++)
    if (back[i] != 0xababababu) ck_abort_msg("word %zu: %#x, want 0xabababab", i, back[i]);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* The connection's transfer memfd grows (a job bigger than it) after coopd
 * took it by XFER: coopd keeps the size XFER found (sealed against
 * shrinking, it is at least that), so a range inside it needs no fstat a
 * frame; a range past it is looked at again, and the grown file serves it;
 * then frames inside the old size again. */
START_TEST(a_grown_transfer_memfd_serves_its_new_ranges) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  enum { SMALL = 4096, BIG = 400000 }; /* words: 16 KB, then 1.6 MB past its 1 MiB */
  static uint32_t w[BIG], back[BIG];
  uint64_t b = 0, id = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, NULL, 0, &b), 0);
  for (int k = 0; k < 3; k++) { /* from the second on, the memfd is XFER's */
    words(w, SMALL, 10u + (uint32_t)k);
    ck_assert_int_eq(sweep_io(c, b, SMALL, 1, 0, w, back, SMALL * 4, &id), 0);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    check_words(back, SMALL, 10u + (uint32_t)k, 1);
  }
  words(w, BIG, 500);
  ck_assert_int_eq(sweep_io(c, b, BIG, 1, 0, w, back, sizeof w, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  check_words(back, BIG, 500, 1);
  words(w, SMALL, 20);
  ck_assert_int_eq(sweep_io(c, b, SMALL, 1, 0, w, back, SMALL * 4, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  check_words(back, SMALL, 20, 1);
  ck_assert_int_eq(memfds_of(0, "coop-transfer"), 1);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A frame of the render whose input and output move with it (a into ba,
 * c out of bc; b in bb): both ranges travel in the connection's one
 * transfer memfd. Submitted, its id; `reps` repetitions. */
static int frame_go(coop_conn *c, uint64_t ba, uint64_t bb, uint64_t bc, const float *a, float *o,
                    uint32_t reps, uint64_t *id) {
  coop_job *j = coop_job_new("render", 1);
  coop_job_buffer_io(j, ba, 0, a, NULL, RN * RN * sizeof *a);
  coop_job_buffer(j, bb);
  coop_job_buffer_io(j, bc, 0, NULL, o, RN * RN * sizeof *o);
  coop_job_u32(j, RN);
  coop_job_u32(j, reps);
  int e = coop_submit(c, j, id);
  coop_job_free(j);
  return e;
}

/* What /proc says coopd's descriptor n is ("" if none). */
static void fd_link(pid_t pid, int n, char *link, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, n);
  ssize_t k = readlink(path, link, len - 1);
  link[k > 0 ? k : 0] = '\0';
}

/* A frame of the render whose ranges move through the caller's own memfd
 * m (a at 0, c after it): submitted on c, its id. */
static int frame_go_fd(coop_conn *c, uint64_t ba, uint64_t bb, uint64_t bc, int m, uint64_t *id) {
  coop_job *j = coop_job_new("render", 1);
  size_t n = RN * RN * sizeof(float);
  coop_job_buffer_io_fd(j, ba, 0, m, 0, n, COOP_BUF_IN);
  coop_job_buffer(j, bb);
  coop_job_buffer_io_fd(j, bc, 0, m, n, n, COOP_BUF_OUT);
  coop_job_u32(j, RN);
  coop_job_u32(j, 1);
  int e = coop_submit(c, j, id);
  coop_job_free(j);
  return e;
}

/* Limits coopd's descriptors to those it holds now plus `room` free
 * numbers, submits one frame (through c's transfer memfd, or the caller's
 * own memfd m if m >= 0), and restores the limit. Checks that coopd's descriptor 0 is what
 * it was (the job's arguments not yet filled once had descriptor 0,
 * calloc's, which job_free closed). The table is counted from outside, so
 * a descriptor coopd (or a sanitizer's runtime) holds only for a moment
 * can make the count one too high or too low: the caller tries again. */
static int frame_in_a_full_table(struct daemon_proc *d, coop_conn *c, const uint64_t *b, int m,
                                 int room, float *a, float *o, uint64_t *id) {
  char fd0[256], fd0_after[256];
  fd_link(d->pid, 0, fd0, sizeof fd0);
  /* the limit: the first free number, or past the room-th free one (a
   * new descriptor takes the lowest free number below the limit) */
  int lim = 0;
  for (int free_seen = 0;; lim++) {
    char link[256];
    fd_link(d->pid, lim, link, sizeof link);
    if (!link[0] && free_seen++ == room) break;
  }
  struct rlimit rl, was;
  ck_assert_int_eq(prlimit(d->pid, RLIMIT_NOFILE, NULL, &was), 0);
  rl.rlim_cur = (rlim_t)lim;
  rl.rlim_max = was.rlim_max;
  ck_assert_int_eq(prlimit(d->pid, RLIMIT_NOFILE, &rl, NULL), 0);
  int e =
      m >= 0 ? frame_go_fd(c, b[0], b[1], b[2], m, id) : frame_go(c, b[0], b[1], b[2], a, o, 1, id);
  ck_assert_int_eq(prlimit(d->pid, RLIMIT_NOFILE, &was, NULL), 0);
  fd_link(d->pid, 0, fd0_after, sizeof fd0_after);
  ck_assert_str_eq(fd0_after, fd0);
  return e;
}

/* A frame's two ranges in the connection's transfer memfd: the job holds
 * a reference to the session's descriptor (fdref.h), no duplicate of it
 * (a fcntl and a close a frame), so a frame runs with coopd's descriptor
 * table full, and the memfd is closed once the connection and its last
 * job have let it go. Ranges in a memfd the SUBMIT carries share one
 * duplicate of it; with no descriptor left for that duplicate (EMFILE) the
 * job is refused as coopd being out of descriptors, and nothing else of
 * coopd's is closed. */
START_TEST(a_frames_ranges_share_the_transfer_memfd) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  static float fa[RN * RN], fb[RN * RN], want[RN * RN], got[RN * RN];
  render_inputs(fa, fb);
  uint64_t b[3] = {0}, id = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fa, NULL, 0, &b[0]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fb, fb, 0, &b[1]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof got, NULL, 0, &b[2]), 0);
  for (int k = 0; k < 4; k++) { /* from the second on, named by XFER */
    fa[0] = (float)k;
    matmul_ref(fa, fb, want);
    memset(got, 0, sizeof got);
    ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    for (int i = 0; i < RN * RN; i++)
      ck_assert_msg((got[i] - want[i]) * (got[i] - want[i]) < 1e-6f, "frame %d, element %d", k, i);
  }
  ck_assert_int_eq(memfds_of(d.pid, "coop-transfer"), 1);
  /* a long frame: while it runs, no more descriptors of the memfd */
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1u << 30, &id), 0);
  ck_assert_int_eq(memfds_of(d.pid, "coop-transfer"), 1);
  ck_assert_int_eq(coop_cancel(c, id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_CANCELLED);
  /* not one descriptor free in coopd's table: the frame still runs */
  int e = frame_in_a_full_table(&d, c, b, -1, 0, fa, got, &id);
  ck_assert_msg(e == 0, "a frame in a full table: %s: %s", coop_err_name(e), coop_errmsg(c));
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  for (int i = 0; i < RN * RN; i++)
    ck_assert_msg((got[i] - want[i]) * (got[i] - want[i]) < 1e-6f, "full table, element %d", i);
  /* a memfd of the caller's, carried by the SUBMIT (once for each range):
   * room for those, not for the job's duplicate (each attempt a fresh
   * memfd, so none is XFER's) */
  for (int attempt = 0; attempt < 8; attempt++) {
    int m = memfd_create("frame-own", MFD_CLOEXEC);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(ftruncate(m, 2 * (off_t)sizeof got), 0);
    e = frame_in_a_full_table(&d, c, b, m, 2, fa, got, &id);
    close(m);
    if (e == COOP_ELIMIT) break;
    if (e == 0)
      ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    else /* the table fuller than counted: the frame's second descriptor cut */
      ck_assert_msg(e == COOP_EINVAL && strstr(coop_errmsg(c), "must be a memfd"), "%s: %s",
                    coop_err_name(e), coop_errmsg(c));
    msleep(20);
  }
  ck_assert_msg(e == COOP_ELIMIT, "%s: %s", coop_err_name(e), coop_errmsg(c));
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "out of file descriptors"));
  /* and the next frame, with room again, runs */
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  /* a long frame, then the connection gone: its job keeps the memfd
   * until it ends (cancelled with its connection), then it is closed */
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1u << 30, &id), 0);
  coop_disconnect(c);
  for (int t = 0; t < 500 && memfds_of(d.pid, "coop-transfer") != 0; t++) msleep(10);
  ck_assert_int_eq(memfds_of(d.pid, "coop-transfer"), 0);
  bufs_stop(&d);
}
END_TEST

/* A render of n x n with its three buffers inline (c = a b into o):
 * submitted on c, its id. */
static uint64_t inline_render(coop_conn *c, const float *a, const float *b, float *o, uint32_t n) {
  coop_job *j = coop_job_new("render", 1);
  coop_job_buf_in(j, a, (size_t)n * n * sizeof *a);
  coop_job_buf_in(j, b, (size_t)n * n * sizeof *b);
  coop_job_buf_out(j, o, (size_t)n * n * sizeof *o);
  return render_go(c, j, n);
}

/* Jobs whose buffers travel inline: their bytes go to and from the device
 * process through one memfd coopd's device thread keeps (dev_stage.c),
 * not two fresh ones a job (their creation and page allocation were about
 * a fifth of a small inline job's round trip on 2 cores). */
START_TEST(inline_bytes_share_one_memfd) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  enum { RN8 = 8 };
  float a[RN8 * RN8], o[RN8 * RN8];
  for (int k = 0; k < 5; k++) {
    for (int i = 0; i < RN8 * RN8; i++) a[i] = (float)(k + 1), o[i] = 0;
    uint64_t id = inline_render(c, a, a, o, RN8);
    struct coop_result r;
    ck_assert_int_eq(coop_wait(c, id, -1, &r), 0);
    ck_assert_int_eq(r.state, COOP_STATE_DONE);
    coop_result_free(&r);
    /* c = a b, every element of a and b k + 1: each of c is n (k + 1)^2 */
    ck_assert_msg(o[0] == (float)(RN8 * (k + 1) * (k + 1)), "job %d: c[0] = %g", k, (double)o[0]);
  }
  ck_assert_int_eq(memfds_of(d.pid, "coopd-inline"), 1);
  ck_assert_int_eq(memfds_of(d.pid, "coopd-results"), 0);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* Freed with its connection unless kept; a kept one reaches any
 * connection of the same user; another user gets ENOJOB for both. */
START_TEST(owners_and_connections) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  uint32_t w[64], back[64];
  words(w, 64, 1);
  uint64_t plain = 0, kept = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, w, 0, &plain), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, w, COOP_BUFFER_KEEP, &kept), 0);
  if (geteuid() == 0) {
    fflush(NULL);
    pid_t kid = fork();
    if (kid == 0) {
      if (setgid(65534) || setuid(65534)) _exit(3);
      setenv("COOP_TRUST_ANY_SERVER", "1", 1);
      coop_conn *o = NULL;
      if (coop_connect(&o, d.sock, "other")) _exit(4);
      uint32_t x[4];
      if (coop_buffer_read(o, kept, 0, x, sizeof x) != COOP_ENOJOB) _exit(5);
      if (coop_buffer_write(o, plain, 0, x, sizeof x) != COOP_ENOJOB) _exit(6);
      if (coop_buffer_free(o, kept) != COOP_ENOJOB) _exit(7);
      /* the same words as for an id that names no buffer */
      if (!strstr(coop_errmsg(o), "no device buffer")) _exit(8);
      coop_job *j = coop_job_new("sweep", 1);
      coop_job_cooperative(j, 1);
      coop_job_buffer(j, kept);
      coop_job_u32(j, 4);
      coop_job_u32(j, 1);
      uint64_t id;
      int e = coop_submit(o, j, &id);
      coop_job_free(j);
      if (e != COOP_ENOJOB) _exit(9);
      /* nor may it move a range of the buffer */
      j = coop_job_new("sweep", 1);
      coop_job_cooperative(j, 1);
      coop_job_buffer_io(j, kept, 0, NULL, x, sizeof x);
      coop_job_u32(j, 4);
      coop_job_u32(j, 1);
      e = coop_submit(o, j, &id);
      coop_job_free(j);
      if (e != COOP_ENOJOB) _exit(10);
      coop_disconnect(o);
      _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(kid, &st, 0), kid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other user: status %d", st);
  }
  coop_disconnect(c);
  c = connect_to(&d);
  ck_assert_int_eq(coop_buffer_read(c, plain, 0, back, sizeof back), COOP_ENOJOB);
  ck_assert_int_eq(coop_buffer_read(c, kept, 0, back, sizeof back), 0);
  check_words(back, 64, 1, 0);
  ck_assert_int_eq(sweep_on(c, kept, 64, 3, NULL), COOP_STATE_DONE);
  ck_assert_int_eq(coop_buffer_free(c, kept), 0);
  ck_assert_int_eq(coop_buffer_read(c, kept, 0, back, sizeof back), COOP_ENOJOB);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A buffer's bytes count toward max_bytes_per_uid, and the count of
 * buffers toward max_buffers_per_uid; a free gives them back. */
START_TEST(counted_per_user) {
  const char *sets[] = {"limits.max_bytes_per_uid=1M", "limits.max_buffers_per_uid=3", NULL};
  struct daemon_proc d = {0};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  uint64_t a = 0, b = 0, x = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, 600u << 10, NULL, 0, &a), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 600u << 10, NULL, 0, &x), COOP_ELIMIT);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "max_bytes_per_uid"));
  /* a job's inline buffer counts against the same bytes */
  static uint8_t zeros[512u << 10];
  coop_job *j = coop_job_new("sweep", 1);
  coop_job_cooperative(j, 1);
  coop_job_buf_inout(j, zeros, sizeof zeros);
  coop_job_u32(j, 4);
  coop_job_u32(j, 1);
  ck_assert_int_eq(coop_submit(c, j, &x), COOP_ELIMIT);
  coop_job_free(j);
  ck_assert_int_eq(coop_buffer_create(c, 0, 64, NULL, 0, &b), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 64, NULL, 0, &x), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 64, NULL, 0, &x), COOP_ELIMIT);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "max_buffers_per_uid"));
  ck_assert_int_eq(coop_buffer_free(c, a), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 600u << 10, NULL, 0, &a), 0);
  /* larger than the arena: refused at once */
  ck_assert_int_eq(coop_buffer_free(c, a), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, (size_t)1 << 40, NULL, 0, &a), COOP_EINVAL);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A BUF_CREATE of *(uint64_t *)size bytes (as_user's body): the reply's
 * error code, 0 when the buffer was made. */
static void creates(struct conn *c, const void *size, void *out) {
  static union coop_msg m;
  m.buf_create =
      (struct coop_msg_buf_create){.size = *(const uint64_t *)size, .fd = COOP_WIRE_FD_NONE};
  uint16_t t = reply(c, send_msg(c, COOP_MSG_BUF_CREATE, &m, NULL, 0));
  *(int32_t *)out = t == COOP_MSG_BUFFER ? 0 : t == COOP_MSG_ERROR ? c->m.error.code : -1000;
}

/* That from nobody (uid 65534). */
static int nobody_creates(const struct daemon_proc *d, uint64_t size) {
  int32_t e = -2000;
  as_user(d, 65534, creates, &size, &e, sizeof e);
  return e;
}

/* Hardening: one user's device buffers fill the arena. Buffers stay until
 * freed: root made quarter-arena ones until refused and nobody's then
 * failed ENOMEM ("no room in the device arena"), as would any job of
 * nobody's with buffers. Now root's on a device take at most [limits]
 * max_buffer_percent_per_uid (50) of its room: its third is refused ELIMIT
 * naming the key, and nobody's is made. (An arena of 64 MiB: each buffer
 * is zeroed at its creation, 256 MiB of it took 10 s under TSan.) */
START_TEST(one_users_buffers_leave_room_for_others) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  /* device_mb 0: on CUDA too the room is the arena's */
  const char *sets[] = {"device.device_mb=0", "device.arena_mb=64", NULL};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  uint64_t id[8];
  unsigned made = 0;
  int e = 0;
  while (made < 8 && !(e = coop_buffer_create(c, 0, 16u << 20, NULL, 0, &id[made]))) made++;
  ck_assert_msg(e == COOP_ELIMIT, "root's buffer %u: %s (%s)", made + 1, coop_err_name(e),
                coop_errmsg(c));
  assert_has(coop_errmsg(c), "[limits] max_buffer_percent_per_uid");
  /* in KiB: a 1 MiB arena read "0 of 1 MiB" */
  assert_has(coop_errmsg(c), "(32768 of the 65536 KiB they leave; theirs hold 0 KiB)");
  ck_assert_uint_eq(made, 2);
  int theirs = nobody_creates(&d, 16u << 20);
  ck_assert_msg(theirs == 0, "nobody's buffer: %s", coop_err_name(theirs));
  ck_assert_int_eq(coop_buffer_free(c, id[0]), 0); /* the room comes back */
  ck_assert_int_eq(coop_buffer_create(c, 0, 16u << 20, NULL, 0, &id[0]), 0);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* as_user's body: device buffers kept past the connection (KEEP), of
 * size[0] bytes until one is refused, then of size[1] until one is; out:
 * how many of each were made, and the error that ended each run. */
struct fill {
  uint32_t made[2];
  int32_t err[2];
};

static void fills(struct conn *c, const void *arg, void *out) {
  const uint64_t *size = arg;
  struct fill f = {{0}, {0}};
  for (unsigned k = 0; k < 2; k++)
    while (f.made[k] < 64) {
      static union coop_msg m;
      m.buf_create = (struct coop_msg_buf_create){
          .size = size[k], .flags = COOP_BUFFER_KEEP, .fd = COOP_WIRE_FD_NONE};
      uint16_t t = reply(c, send_msg(c, COOP_MSG_BUF_CREATE, &m, NULL, 0));
      if (t != COOP_MSG_BUFFER) {
        f.err[k] = t == COOP_MSG_ERROR ? c->m.error.code : -1000;
        break;
      }
      f.made[k]++;
    }
  memcpy(out, &f, sizeof f);
}

/* as_user's body: the render arg, waited for, then a device buffer of 1
 * MiB; out: the render's state and error, and the create's error. */
static void renders_then_creates(struct conn *c, const void *arg, void *out) {
  int32_t r[3] = {-1, -1, -1};
  if (wait_job(c, submit(c, arg, NULL, 0), COOP_WAIT_FOREVER) == COOP_MSG_RESULT) {
    r[0] = c->m.result.state;
    r[1] = c->m.result.error;
  }
  uint64_t size = 1u << 20;
  creates(c, &size, &r[2]);
  memcpy(out, r, sizeof r);
}

/* Hardening: two users' device buffers fill the arena. Each user's share
 * was of the whole room: root made two of 16 MiB of the 64 MiB arena
 * (refused ELIMIT at its 50%), nobody 1 MiB ones until the arena was full
 * (31, then ENOMEM) and 256 KiB ones past that, and uid 65533, who held
 * none, then had its buffer of 1 MiB refused ENOMEM and its render (768
 * KiB of inline buffers) failed ENOMEM. A user's share is now of the room
 * the other users' buffers leave: nobody's 1 MiB buffers stop at 16 MiB
 * (half of the 32 root's leave), ELIMIT, and uid 65533's render ends DONE
 * and its buffer is made. */
START_TEST(two_users_buffers_leave_a_third_room) {
  if (geteuid() != 0) return; /* needs other uids: CI runs as root */
  struct daemon_proc d = {0};
  const char *sets[] = {"device.device_mb=0", "device.arena_mb=64", NULL};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  uint64_t id;
  ck_assert_int_eq(coop_buffer_create(c, 0, 16u << 20, NULL, 0, &id), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 16u << 20, NULL, 0, &id), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, 16u << 20, NULL, 0, &id), COOP_ELIMIT);
  const uint64_t sizes[2] = {1u << 20, 256u << 10};
  struct fill f;
  ck_assert_int_eq(as_user(&d, 65534, fills, sizes, &f, sizeof f), 0);
  union coop_msg m;
  render_ones(&m, 256);
  int32_t r[3];
  ck_assert_int_eq(as_user(&d, 65533, renders_then_creates, &m, r, sizeof r), 0);
  ck_assert_msg(r[0] == COOP_JOB_DONE, "uid 65533's render: %s, %s", coop_job_state_name(r[0]),
                coop_err_name(r[1]));
  ck_assert_msg(r[2] == 0, "uid 65533's buffer: %s", coop_err_name(r[2]));
  ck_assert_msg(f.made[0] == 16 && f.err[0] == COOP_ELIMIT && f.made[1] == 0,
                "nobody's buffers: %u of 1 MiB, then %s; %u of 256 KiB, then %s", f.made[0],
                coop_err_name(f.err[0]), f.made[1], coop_err_name(f.err[1]));
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* as_user's body: a device buffer of *(uint64_t *)arg bytes kept past the
 * connection (KEEP); out: the reply's error code, 0 when it was made. */
static void keeps_one(struct conn *c, const void *size, void *out) {
  static union coop_msg m;
  m.buf_create = (struct coop_msg_buf_create){
      .size = *(const uint64_t *)size, .flags = COOP_BUFFER_KEEP, .fd = COOP_WIRE_FD_NONE};
  uint16_t t = reply(c, send_msg(c, COOP_MSG_BUF_CREATE, &m, NULL, 0));
  *(int32_t *)out = t == COOP_MSG_BUFFER ? 0 : t == COOP_MSG_ERROR ? c->m.error.code : -1000;
}

/* as_user's body: the render arg, waited for 10 s at most; out: its state
 * then (QUEUED: it still waits). */
static void renders_10s(struct conn *c, const void *arg, void *out) {
  uint64_t id = submit(c, arg, NULL, 0);
  uint8_t st = wait_job(c, id, 10000) == COOP_MSG_RESULT ? c->m.result.state : job_state(c, id);
  memcpy(out, &st, sizeof st);
}

/* Hardening, the arena's room for jobs beside device buffers: nobody's
 * device buffer holds half the 1 MiB arena, root's holds half of what
 * nobody's leaves (256 KiB) and root's cooperative sweep copies 200 KiB
 * in: 456 KiB, within half the arena, so while uid 65533's render of 95
 * KiB, holding nothing, waited for room, nothing gave it room and it
 * waited for the sweep's end (here: for ever). A user's share of the arena
 * while another user's job waits is now of what the other users' jobs and
 * buffers leave (256 KiB for root): root's sweep is suspended, its copies
 * leave the arena, and the render ends DONE while the sweep has yet to
 * end. */
START_TEST(two_users_share_of_the_arena_leaves_a_third_room) {
  if (geteuid() != 0) return; /* needs other uids: CI runs as root */
  char logp[] = "/tmp/coopd-room3-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.arena_mb=1", "device.device_mb=0", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  uint64_t half = 512u << 10;
  int32_t e = -1;
  ck_assert_int_eq(as_user(&d, 65534, keeps_one, &half, &e, sizeof e), 0);
  ck_assert_int_eq(e, 0);
  struct conn c;
  open_hello(&c, &d);
  buf_create_raw(&c, 256u << 10);
  int fd = memfd_of(200u << 10);
  uint64_t sweep = sweep_submit(&c, NULL, (200u << 10) / 4, 100000000u, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  close(fd);
  wait_running(&c, sweep);
  union coop_msg m;
  render_ones(&m, 90);
  uint8_t st = 0;
  ck_assert_int_eq(as_user(&d, 65533, renders_10s, &m, &st, sizeof st), 0);
  if (st != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(st == COOP_JOB_DONE, "uid 65533's render is %s", coop_job_state_name(st));
  ck_assert_uint_lt(job_state(&c, sweep), COOP_JOB_DONE);
  ck_assert(log_has(logp, "its user's jobs and device buffers hold 456 KiB of the device arena"));
  cancel_ok(&c, sweep);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* The device process killed: every buffer it held is reported lost, to
 * its operations and to a job naming it, never read as zeros or stale
 * bytes; a new buffer works. */
START_TEST(lost_with_the_device_process) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  uint32_t w[64], back[64];
  words(w, 64, 9);
  uint64_t b = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, w, 0, &b), 0);
  pid_t dp = device_process(d.pid);
  ck_assert_int_gt(dp, 0);
  kill(dp, SIGKILL);
  /* the restart comes on the device thread's next pass: a job shows it */
  int err = 0, st = -1;
  for (int i = 0; i < 100; i++) {
    st = sweep_on(c, b, 64, 1, &err);
    if (st == COOP_STATE_FAILED) break;
    msleep(100);
  }
  ck_assert_int_eq(st, COOP_STATE_FAILED);
  ck_assert_int_eq(err, COOP_ELOST);
  ck_assert_int_eq(coop_buffer_read(c, b, 0, back, sizeof back), COOP_ELOST);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "lost"));
  ck_assert_int_eq(coop_buffer_write(c, b, 0, w, sizeof w), COOP_ELOST);
  ck_assert_int_eq(coop_buffer_free(c, b), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, w, 0, &b), 0);
  ck_assert_int_eq(sweep_on(c, b, 64, 2, NULL), COOP_STATE_DONE);
  ck_assert_int_eq(coop_buffer_read(c, b, 0, back, sizeof back), 0);
  check_words(back, 64, 9, 2);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A kernel reload in place ([kernels] reload_in_place, the default)
 * keeps the device process, and with it every device buffer: its bytes
 * read back as they were, and a cooperative job running on it across the
 * reload is carried (suspended and resumed, its buffer where it was) and
 * ends DONE. A reload in a new device process (reload_in_place = no, and
 * every reload before) cancels that job and loses the buffer, as a
 * restart does. */
static void across_a_reload(int in_place) {
  char logp[] = "/tmp/coopd-bufs-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  const char *extra[] = {in_place ? "kernels.reload_in_place=yes" : "kernels.reload_in_place=no",
                         "jobs.grace_ms=200", NULL};
  bufs_start(&d, extra);
  coop_conn *c = connect_to(&d);
  uint32_t w[64], back[64];
  words(w, 64, 5);
  uint64_t b = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, w, 0, &b), 0);
  ck_assert_int_eq(sweep_on(c, b, 64, 20000, NULL), COOP_STATE_DONE);
  /* timed once the megakernel is warm: the first sweep's time held its
   * relaunch after parking and its round trips, and a job sized from it
   * ended in 0.65 s, before the reload's build (ThreadSanitizer) */
  int64_t t0 = now_ms();
  ck_assert_int_eq(sweep_on(c, b, 64, 100000, NULL), COOP_STATE_DONE);
  /* rounds for about 4 s from it where the job must end DONE across the
   * reload in place; 30 s where a reload in a new process must cancel it
   * first: that reload builds a megakernel in a new device process before
   * its grace period starts, over 4 s on 2 busy cores under
   * ThreadSanitizer, and the job then ended before it */
  int64_t took = now_ms() - t0;
  double want = 100000.0 * (in_place ? 4000.0 : 30000.0) / (double)(took > 0 ? took : 1);
  uint32_t rounds = want > 5e7 ? 50000000u : want < 20000 ? 20000u : (uint32_t)want;
  coop_job *j = coop_job_new("sweep", 1);
  coop_job_cooperative(j, 1);
  coop_job_buffer(j, b);
  coop_job_u32(j, 64);
  coop_job_u32(j, rounds);
  uint64_t id = 0;
  ck_assert_int_eq(coop_submit(c, j, &id), 0);
  coop_job_free(j);
  msleep(200);
  kill(d.pid, SIGHUP);
  int done = 0;
  for (int i = 0; i < 2400 && !done; i++, msleep(50)) done = log_has(logp, "reload: done");
  if (!done) log_print(logp);
  ck_assert_msg(done, "the reload did not end");
  ck_assert_int_eq(log_has(logp, "reload: swapped in place in"), in_place);
  int st = wait_state(c, id);
  int e = coop_buffer_read(c, b, 0, back, sizeof back);
  if (!in_place) {
    ck_assert_int_eq(st, COOP_STATE_CANCELLED);
    ck_assert_int_eq(e, COOP_ELOST);
  } else {
    if (!log_has(logp, "suspended across the kernel reload (its buffers stay where they are)"))
      log_print(logp);
    ck_assert_msg(
        log_has(logp, "suspended across the kernel reload (its buffers stay where they are)"),
        "the sweep on the device buffer was not carried (ended before the reload?)");
    ck_assert_int_eq(st, COOP_STATE_DONE);
    ck_assert_msg(e == 0, "%s: %s", coop_err_name(e), coop_errmsg(c));
    check_words(back, 64, 5, 120000 + rounds);
    ck_assert_int_eq(sweep_on(c, b, 64, 2, NULL), COOP_STATE_DONE);
    ck_assert_int_eq(coop_buffer_read(c, b, 0, back, sizeof back), 0);
    check_words(back, 64, 5, 120002 + rounds);
  }
  coop_disconnect(c);
  bufs_stop(&d);
  unlink(logp);
}

START_TEST(kept_across_a_reload_in_place) { across_a_reload(1); }
END_TEST

START_TEST(lost_across_a_reload_in_a_new_process) { across_a_reload(0); }
END_TEST

/* rawpoke on a 64-byte device buffer of c's, 16 bytes into the guard
 * after it: FAILED EFAULT, the guard zone named; then inside it: DONE,
 * its bytes there to read (the breach reported once). */
static void pokes_past_then_inside(coop_conn *c) {
  uint64_t b = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, 64, NULL, 0, &b), 0);
  for (int k = 0; k < 2; k++) {
    coop_job *j = coop_job_new("rawpoke", 1);
    coop_job_buffer(j, b);
    coop_job_u32(j, k == 0 ? 16 + 4 : 16);
    uint64_t id;
    ck_assert_int_eq(coop_submit(c, j, &id), 0);
    coop_job_free(j);
    struct coop_result r;
    ck_assert_int_eq(coop_wait(c, id, 60000, &r), 0);
    if (k == 0) {
      ck_assert_msg(r.state == COOP_STATE_FAILED, "a poke past its buffer: state %d", r.state);
      ck_assert_int_eq(r.error, COOP_EFAULT);
      ck_assert_ptr_nonnull(strstr(r.message, "guard zone"));
    } else {
      ck_assert_msg(r.state == COOP_STATE_DONE, "%s", r.message);
    }
    coop_result_free(&r);
  }
  uint32_t got[16];
  ck_assert_int_eq(coop_buffer_read(c, b, 0, got, sizeof got), 0);
  for (int i = 0; i < 16; i++) ck_assert_uint_eq(got[i], 0xfeedfaceu);
  ck_assert_int_eq(coop_buffer_free(c, b), 0);
}

/* A kernel that writes past a device buffer (rawpoke: raw stores, no
 * views) fails EFAULT, as with a buffer sent with the job; the breach is
 * reported once: the buffer's next job, within bounds, is done, and its
 * bytes are there to read. */
START_TEST(guard_zone_of_a_device_buffer) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR, NULL};
  struct daemon_proc d = {0};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  pokes_past_then_inside(c);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* ---- a client that floods ---- */

struct flood {
  const char *sock;
  atomic_int stop;
  unsigned sent; /* SUBMITs written */
};

/* Connects, says HELLO, then writes render SUBMITs as fast as the socket
 * takes them and never reads a reply, until told to stop. */
static void *flood_main(void *arg) {
  struct flood *f = arg;
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", f->sock);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) return NULL;
  static union coop_msg m;
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
  snprintf(m.hello.name, sizeof m.hello.name, "flood");
  coop_wire_encode(&b, COOP_MSG_HELLO, 1, &m);
  static float a[64 * 64];
  memset(&m, 0, sizeof m);
  snprintf(m.submit.kernel, sizeof m.submit.kernel, "render");
  m.submit.groups = 1;
  m.submit.device = COOP_WIRE_ANY_DEVICE;
  m.submit.nargs = 5;
  for (int i = 0; i < 3; i++) {
    struct coop_wire_arg *x = &m.submit.args[i];
    x->type = COOP_ARG_BUF;
    x->dir = i < 2 ? COOP_BUF_IN : COOP_BUF_OUT;
    x->fd = COOP_WIRE_FD_NONE;
    x->size = sizeof a;
    x->data = i < 2 ? (const uint8_t *)a : NULL;
    x->data_len = i < 2 ? (uint32_t)sizeof a : 0;
  }
  m.submit.args[3] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = 64};
  m.submit.args[4] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = 1};
  for (uint32_t seq = 2; seq < 200; seq++) coop_wire_encode(&b, COOP_MSG_SUBMIT, seq, &m);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  size_t off = 0;
  while (!atomic_load(&f->stop)) {
    ssize_t n = send(fd, b.p + off, b.len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
      if (off == b.len) { /* again, from the first SUBMIT (HELLO is 29 bytes) */
        off = 29;
        f->sent += 198;
      }
    } else if (n < 0 && errno != EAGAIN) {
      break;
    } else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  coop_wire_buf_free(&b);
  close(fd);
  return NULL;
}

/* The render of a large job: a = in_fd (IN, or INOUT), b = 1.0 inline, c
 * = out_fd (OUT), n = 8: submitted on c, its id. */
static uint64_t large_render(coop_conn *c, int in_fd, size_t in_bytes, unsigned in_dir, int out_fd,
                             size_t out_bytes) {
  enum { R8 = 8 };
  float b[R8 * R8];
  for (int i = 0; i < R8 * R8; i++) b[i] = 1.0f;
  coop_job *j = coop_job_new("render", 1);
  coop_job_buf_fd(j, in_fd, in_bytes, in_dir);
  coop_job_buf_in(j, b, sizeof b);
  coop_job_buf_fd(j, out_fd, out_bytes, COOP_JOB_OUT);
  return render_go(c, j, R8);
}

/* A job whose buffers are large moves their bytes in slices, and a small
 * job submitted meanwhile runs between two (docs/daemon.md, "Large buffers
 * in slices"): the device thread staged a job's buffers in one request,
 * and everything queued after it waited for the whole copy (a frame beside
 * a bfs job of 30 MB lost up to 2.4 ms so on an H200). The large job's
 * bytes still arrive whole: its INOUT buffer comes back as it went (every
 * slice at its place), its OUT-only one as zeroes, and so does a later
 * job's OUT-only buffer where the first one's bytes were. */
START_TEST(a_small_job_goes_between_a_large_jobs_slices) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *big = connect_to(&d), *small = connect_to(&d);
  enum { R8 = 8 };
  const size_t in_bytes = LARGE(64u << 20), out_bytes = LARGE(16u << 20); /* 64, 16 slices */
  int in_fd = memfd_of(in_bytes), out_fd = memfd_of(out_bytes);
  uint32_t *in = mmap(NULL, in_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, in_fd, 0);
  uint8_t *out = mmap(NULL, out_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, out_fd, 0);
  ck_assert(in != MAP_FAILED && out != MAP_FAILED);
  for (size_t i = 0; i < in_bytes / 4; i++) in[i] = (uint32_t)(i * 2654435761u);
  for (int i = 0; i < R8 * R8; i++) in[i] = 0x3f800000u; /* 1.0f: what render reads */
  memset(out, 0xa5, out_bytes);
  float b[R8 * R8], o[R8 * R8];
  for (int i = 0; i < R8 * R8; i++) b[i] = 1.0f, o[i] = 0;
  uint64_t id_big = large_render(big, in_fd, in_bytes, COOP_JOB_INOUT, out_fd, out_bytes);
  uint64_t id_small = inline_render(small, b, b, o, R8);
  struct coop_result rs, rb;
  ck_assert_int_eq(coop_wait(small, id_small, 60000, &rs), 0);
  ck_assert_int_eq(coop_wait(big, id_big, 60000, &rb), 0);
  ck_assert_int_eq(rs.state, COOP_STATE_DONE);
  ck_assert_msg(rb.state == COOP_STATE_DONE, "the large job: %d (%s)", rb.state, rb.message);
  ck_assert(o[0] == (float)R8);
  /* queued after the large one, its task went to the device first */
  ck_assert_msg(rs.t.submitted < rb.t.submitted,
                "the small job's task was submitted %.3f ms after the large job's",
                (rs.t.submitted - rb.t.submitted) / 1e6);
  for (size_t i = R8 * R8; i < in_bytes / 4; i++)
    if (in[i] != (uint32_t)(i * 2654435761u))
      ck_abort_msg("word %zu of the INOUT buffer: %#x, want %#x", i, in[i],
                   (uint32_t)(i * 2654435761u));
  for (size_t i = R8 * R8 * 4; i < out_bytes; i++)
    if (out[i] != 0) ck_abort_msg("byte %zu of the OUT buffer: %#x", i, out[i]);
  ck_assert(((float *)out)[0] == (float)R8);
  coop_result_free(&rs);
  coop_result_free(&rb);
  /* a large OUT-only buffer where the INOUT one was: zeroes, not its
   * bytes (it is filled with zeroes by slices, not zeroed at its staging) */
  memset(in, 0xa5, in_bytes);
  coop_job *j = coop_job_new("render", 1);
  coop_job_buf_in(j, b, sizeof b);
  coop_job_buf_in(j, b, sizeof b);
  coop_job_buf_fd(j, in_fd, in_bytes, COOP_JOB_OUT);
  coop_job_u32(j, R8);
  coop_job_u32(j, 1);
  ck_assert_int_eq(coop_submit(big, j, &id_big), 0);
  coop_job_free(j);
  ck_assert_int_eq(coop_wait(big, id_big, 60000, &rb), 0);
  ck_assert_msg(rb.state == COOP_STATE_DONE, "the OUT-only job: %d (%s)", rb.state, rb.message);
  coop_result_free(&rb);
  ck_assert(((float *)in)[0] == (float)R8);
  for (size_t i = R8 * R8; i < in_bytes / 4; i++)
    if (in[i] != 0) ck_abort_msg("word %zu of the OUT-only buffer: %#x", i, in[i]);
  munmap(in, in_bytes);
  munmap(out, out_bytes);
  close(in_fd);
  close(out_fd);
  coop_disconnect(big);
  coop_disconnect(small);
  bufs_stop(&d);
}
END_TEST

/* A memfd of size bytes sealed against shrinking: one the device process
 * maps and pins (xmap.h). */
static int sealed_memfd(const char *name, off_t size) {
  int m = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ck_assert_int_ge(m, 0);
  ck_assert_int_eq(ftruncate(m, size), 0);
  ck_assert_int_eq(fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  return m;
}

/* Until device 0 is parked (device.park_ms after its last job): the
 * device process has let its mappings go. */
static void wait_parked(coop_conn *c) {
  struct coop_stats st;
  ck_assert_int_eq(coop_stats(c, &st), 0);
  for (int i = 0; i < 200 && !st.devs[0].parked; i++, msleep(25))
    ck_assert_int_eq(coop_stats(c, &st), 0);
  ck_assert_uint_eq(st.devs[0].parked, 1);
}

/* A job's range through the caller's sealed memfd: the device process
 * maps it at its first copy, and later copies name it without sending the
 * descriptor (devproc_msg.h, DP_FD_PINNED: by the shared channel). When
 * the megakernel parks its mappings go; a copy that names the file then
 * finds none, and the descriptor goes after all. Every frame's bytes are
 * its own throughout. */
START_TEST(a_mapped_memfd_is_named_and_sent_again_after_a_park) {
  struct daemon_proc d = {0};
  const char *sets[] = {"device.park_ms=50", NULL};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  enum { N = 70000 };
  static uint32_t w[N], back[N];
  uint64_t b = 0, id = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof w, NULL, 0, &b), 0);
  int mfd = sealed_memfd("io-named", sizeof w);
  for (uint32_t k = 0; k < 6; k++) {
    if (k == 3) wait_parked(c); /* the device process let its mappings go */
    words(w, N, 1000 * k);
    ck_assert_int_eq(pwrite(mfd, w, sizeof w, 0), (ssize_t)sizeof w);
    coop_job *j = coop_job_new("sweep", 1);
    coop_job_cooperative(j, 1);
    coop_job_buffer_io_fd(j, b, 0, mfd, 0, sizeof w, COOP_JOB_INOUT);
    coop_job_u32(j, N);
    coop_job_u32(j, k + 1);
    ck_assert_int_eq(coop_submit(c, j, &id), 0);
    coop_job_free(j);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    ck_assert_int_eq(pread(mfd, back, sizeof back, 0), (ssize_t)sizeof back);
    check_words(back, N, 1000 * k, k + 1);
  }
  close(mfd);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A frame of the render `reps` long whose ranges move through the
 * caller's memfd m (a at 0, c after it): submitted on c, its id. */
static int frame_reps_fd(coop_conn *c, const uint64_t *b, int m, uint32_t reps, uint64_t *id) {
  coop_job *j = coop_job_new("render", 1);
  size_t n = RN * RN * sizeof(float);
  coop_job_buffer_io_fd(j, b[0], 0, m, 0, n, COOP_BUF_IN);
  coop_job_buffer(j, b[1]);
  coop_job_buffer_io_fd(j, b[2], 0, m, n, n, COOP_BUF_OUT);
  coop_job_u32(j, RN);
  coop_job_u32(j, reps);
  int e = coop_submit(c, j, id);
  coop_job_free(j);
  return e;
}

/* Frame k of render through memfd m (a at 0 with fa[0] = k, c after it,
 * first filled with `mark`): done, and c is fa x fb. */
static void frame_round(coop_conn *c, const uint64_t *b, int m, float *fa, const float *fb,
                        const float *mark, int k) {
  static float want[RN * RN], got[RN * RN];
  const size_t n = sizeof want;
  uint64_t id = 0;
  fa[0] = (float)k;
  matmul_ref(fa, fb, want);
  ck_assert_int_eq(pwrite(m, fa, n, 0), (ssize_t)n);
  ck_assert_int_eq(pwrite(m, mark, n, (off_t)n), (ssize_t)n);
  ck_assert_int_eq(frame_reps_fd(c, b, m, 1, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  ck_assert_int_eq(pread(m, got, n, (off_t)n), (ssize_t)n);
  for (int i = 0; i < RN * RN; i++)
    ck_assert_msg((got[i] - want[i]) * (got[i] - want[i]) < 1e-6f, "frame %d, element %d", k, i);
}

/* A frame through memfd m cancelled while it runs: c, filled with `mark`,
 * is left as it was (PROTOCOL.md: only a DONE job's output comes back). */
static void frame_cancelled(coop_conn *c, const uint64_t *b, int m, const float *mark) {
  static float got[RN * RN];
  const size_t n = sizeof got;
  uint64_t id = 0;
  ck_assert_int_eq(pwrite(m, mark, n, (off_t)n), (ssize_t)n);
  ck_assert_int_eq(frame_reps_fd(c, b, m, 1u << 30, &id), 0);
  msleep(20);
  ck_assert_int_eq(coop_cancel(c, id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_CANCELLED);
  ck_assert_int_eq(pread(m, got, n, (off_t)n), (ssize_t)n);
  ck_assert_mem_eq(got, mark, n);
}

/* A frame's ranges go with its submit once the device process holds the
 * memfd mapped (docs/daemon.md, "A frame's ranges with its submit"): each
 * frame's output is its own input's, also after a park let the mapping go
 * (the front then copies them apart, and the file is mapped again); a
 * cancelled frame writes nothing into the descriptor (PROTOCOL.md: only a
 * DONE job's output comes back). */
START_TEST(a_frame_s_ranges_go_with_its_submit) {
  struct daemon_proc d = {0};
  const char *sets[] = {"device.park_ms=50", NULL};
  bufs_start(&d, sets);
  coop_conn *c = connect_to(&d);
  static float fa[RN * RN], fb[RN * RN], mark[RN * RN];
  const size_t n = sizeof fa;
  render_inputs(fa, fb);
  for (int i = 0; i < RN * RN; i++) mark[i] = -7.0f;
  uint64_t b[3] = {0};
  ck_assert_int_eq(coop_buffer_create(c, 0, n, NULL, 0, &b[0]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, n, fb, 0, &b[1]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, n, NULL, 0, &b[2]), 0);
  int m = sealed_memfd("frames", 2 * (off_t)n);
  for (int k = 0; k < 8; k++) {
    if (k == 4) wait_parked(c); /* the device process let its mappings go */
    frame_round(c, b, m, fa, fb, mark, k);
  }
  frame_cancelled(c, b, m, mark);
  close(m);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* The lines of coopd's trace at path (COOP_TRACE_FILE) whose out_with is
 * set: each with io_with set, out_sent = out_with, and submit_ret <=
 * out_sent <= out_took <= out_replied <= out_back <= seen (the copy out
 * came with the poll that found the task final: docs/daemon.md, "A
 * frame's ranges with its submit"). Their count; a line out of order
 * fails the test. */
static int trace_ended_at_a_poll(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static const char *const name[] = {"io_with",     "submit_ret", "out_sent", "out_took",
                                     "out_replied", "out_back",   "seen",     "out_with"};
  enum { NC = sizeof name / sizeof name[0] };
  int col[NC], found = 0;
  char line[4096];
  for (int k = 0; k < NC; k++) col[k] = -1;
  while (fgets(line, sizeof line, f)) {
    long long v[64];
    int nv = 0, header = !strncmp(line, "id,", 3);
    if (!header && (line[0] < '0' || line[0] > '9')) continue; /* buf, bufop, dpcall lines */
    char *save = NULL;
    for (char *t = strtok_r(line, ",\n", &save); t && nv < 64;
         t = strtok_r(NULL, ",\n", &save), nv++) {
      if (header) {
        for (int k = 0; k < NC; k++)
          if (!strcmp(t, name[k])) col[k] = nv;
      } else {
        v[nv] = strtoll(t, NULL, 10);
      }
    }
    if (header || col[NC - 1] < 0 || col[NC - 1] >= nv || v[col[NC - 1]] <= 0) continue;
    for (int k = 0; k < NC; k++) ck_assert_msg(col[k] >= 0 && col[k] < nv, "no %s column", name[k]);
    ck_assert_msg(v[col[0]] > 0, "out_with without io_with");
    ck_assert_msg(v[col[2]] == v[col[NC - 1]], "out_with is not out_sent");
    for (int k = 2; k < NC - 1; k++)
      ck_assert_msg(v[col[k]] >= v[col[k - 1]], "%s before %s", name[k], name[k - 1]);
    found++;
  }
  fclose(f);
  return found;
}

/* A frame beside a running job (DP_SUBMIT_IO answered before its end:
 * beside another run the device thread does not wait in it) is ended by
 * the device process at the poll that finds it final, its ranges out
 * copied there (docs/daemon.md, "A frame's ranges with its submit"):
 * coopd says so, each frame's output is its own input's, a frame
 * cancelled there writes nothing back (PROTOCOL.md), and a breach of a
 * guard zone there is still reported, once. */
START_TEST(a_frame_beside_a_job_ends_in_the_device_process) {
  char logp[] = "/tmp/coopd-beside-XXXXXX.log", tracep[] = "/tmp/coopd-beside-XXXXXX.csv";
  log_temp(logp);
  log_temp(tracep);
  struct daemon_proc d = {.log = logp};
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR, NULL};
  setenv("COOP_TRACE_FILE", tracep, 1);
  bufs_start(&d, sets);
  unsetenv("COOP_TRACE_FILE");
  coop_conn *c = connect_to(&d), *c2 = connect_to(&d);
  static float fa[RN * RN], fb[RN * RN], mark[RN * RN];
  const size_t n = sizeof fa;
  render_inputs(fa, fb);
  for (int i = 0; i < RN * RN; i++) mark[i] = -7.0f;
  uint64_t b[3] = {0}, sb = 0, sid = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, n, NULL, 0, &b[0]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, n, fb, 0, &b[1]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, n, NULL, 0, &b[2]), 0);
  ck_assert_int_eq(coop_buffer_create(c2, 0, 4096 * sizeof(uint32_t), NULL, 0, &sb), 0);
  coop_job *sw = coop_job_new("sweep", 1);
  coop_job_cooperative(sw, 1);
  coop_job_buffer(sw, sb);
  coop_job_u32(sw, 4096);
  coop_job_u32(sw, 0xffffffffu); /* runs until cancelled */
  ck_assert_int_eq(coop_submit(c2, sw, &sid), 0);
  coop_job_free(sw);
  int m = sealed_memfd("beside", 2 * (off_t)n);
  int ended = 0, k = 0;
  for (; k < 40 && (k < 6 || !ended); k++) {
    frame_round(c, b, m, fa, fb, mark, k);
    ended = log_count(logp, "its task ended in the device process at the poll");
  }
  if (!ended) log_print(logp);
  ck_assert_msg(ended >= 1, "no frame of %d beside the sweep ended in the device process", k);
  /* and its trace line says so, the copy out's stamps those of that poll */
  ck_assert_int_ge(trace_ended_at_a_poll(tracep), 1);
  frame_cancelled(c, b, m, mark);
  /* a breach beside the sweep: the device process leaves it whole for
   * DP_UNSTAGE, which reports it */
  pokes_past_then_inside(c);
  ck_assert_int_eq(coop_cancel(c2, sid), 0);
  ck_assert_int_eq(wait_state(c2, sid), COOP_STATE_CANCELLED);
  close(m);
  coop_disconnect(c2);
  coop_disconnect(c);
  bufs_stop(&d);
  unlink(logp);
  unlink(tracep);
}
END_TEST

/* A memfd of n bytes of 1.0f (render's input), mapped at *m. */
static int ones_memfd(size_t n, float **m) {
  int fd = memfd_of(n);
  *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert(*m != MAP_FAILED);
  for (size_t i = 0; i < n / 4; i++) (*m)[i] = 1.0f;
  return fd;
}

/* A client's descriptor cut short while its job fills from it: the slice
 * that reads past its end fails the job (EIO), and no task of it runs on
 * the room its slices did not fill. */
START_TEST(a_descriptor_cut_short_fails_the_fill) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  const size_t in_bytes = 64u << 20, out_bytes = 4u << 20;
  float *in;
  int in_fd = ones_memfd(in_bytes, &in), out_fd = memfd_of(out_bytes);
  uint64_t id = large_render(c, in_fd, in_bytes, COOP_JOB_IN, out_fd, out_bytes);
  ck_assert_int_eq(ftruncate(in_fd, 1u << 20), 0); /* a slice later reads past its end */
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, id, 60000, &r), 0);
  ck_assert_msg(r.state == COOP_STATE_FAILED && r.error == COOP_EIO, "state %d, error %d (%s)",
                r.state, r.error, r.message);
  ck_assert_ptr_nonnull(strstr(r.message, "declared size"));
  ck_assert_msg(r.t.started == 0, "its task ran");
  coop_result_free(&r);
  munmap(in, in_bytes);
  close(in_fd);
  close(out_fd);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* The device process lost under a slice (COOP_TEST_DIE_AT, armed from
 * the start, at the `nth` request of `op`): under a fill ("write") the
 * job never ran and runs again from its staging; under an emptying
 * ("read") its task ran and it runs again only where its buffers are
 * inputs and outputs (`inout` 0: DONE, every byte right), else it is lost
 * (its INOUT bytes in the caller's memfd may be half written). */
static void lost_in_a_slice(const char *op, unsigned nth, int inout) {
  char logp[] = "/tmp/coopd-slice-XXXXXX.log", mark[64], arm[72], env[128];
  log_temp(logp);
  snprintf(mark, sizeof mark, "%s.done", logp);
  snprintf(arm, sizeof arm, "%s.arm", mark);
  unlink(mark);
  FILE *a = fopen(arm, "w");
  ck_assert_ptr_nonnull(a);
  fclose(a);
  snprintf(env, sizeof env, "%s:%u:%s", op, nth, mark);
  ck_assert_int_eq(setenv("COOP_TEST_DIE_AT", env, 1), 0);
  struct daemon_proc d = {.log = logp};
  bufs_start(&d, NULL);
  unsetenv("COOP_TEST_DIE_AT");
  coop_conn *c = connect_to(&d);
  /* the writes are its IN slices and its OUT buffer's zeroes, the reads
   * its OUT (and INOUT) slices: a quarter of the IN bytes under TSan
   * still has the 5th write and 3rd read the cases die at */
  const size_t in_bytes = LARGE(16u << 20), out_bytes = 8u << 20;
  float *in;
  int in_fd = ones_memfd(in_bytes, &in), out_fd = memfd_of(out_bytes);
  uint64_t id =
      large_render(c, in_fd, in_bytes, inout ? COOP_JOB_INOUT : COOP_JOB_IN, out_fd, out_bytes);
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, id, 60000, &r), 0);
  if (access(mark, F_OK)) log_print(logp);
  ck_assert_msg(access(mark, F_OK) == 0, "the device process was never lost at %s %u", op, nth);
  if (inout) {
    ck_assert_msg(r.state == COOP_STATE_FAILED && r.error == COOP_ELOST, "state %d (%s)", r.state,
                  r.message);
  } else {
    ck_assert_msg(r.state == COOP_STATE_DONE, "state %d (%s)", r.state, r.message);
    float *out = mmap(NULL, out_bytes, PROT_READ, MAP_SHARED, out_fd, 0);
    ck_assert(out != MAP_FAILED);
    for (int i = 0; i < 64; i++) ck_assert(out[i] == 8.0f);
    for (size_t i = 64; i < out_bytes / 4; i++)
      if (out[i] != 0.0f) ck_abort_msg("float %zu of the output: %g", i, (double)out[i]);
    munmap(out, out_bytes);
  }
  coop_result_free(&r);
  /* the device serves on */
  id = large_render(c, in_fd, in_bytes, COOP_JOB_IN, out_fd, out_bytes);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  munmap(in, in_bytes);
  close(in_fd);
  close(out_fd);
  coop_disconnect(c);
  bufs_stop(&d);
  unlink(mark);
  unlink(arm);
  unlink(logp);
}

START_TEST(a_death_inside_a_fill_runs_the_job_again) { lost_in_a_slice("write", 5, 0); }
END_TEST

START_TEST(a_death_inside_an_emptying_runs_it_again_if_it_can) {
  lost_in_a_slice("read", 3, 0);
  lost_in_a_slice("read", 3, 1);
}
END_TEST

/* One client writes SUBMITs without ever reading a reply (its socket and
 * coopd's output to it fill up); another's tasks keep running, each within
 * a bound, and coopd answers as before once the flood stops. */
START_TEST(a_client_that_never_reads) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  struct flood f = {.sock = d.sock};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, flood_main, &f), 0);
  msleep(1000); /* its jobs run (up to max_jobs_per_client), its replies pile up */
  static float a[16 * 16], o[16 * 16];
  for (int i = 0; i < 16 * 16; i++) a[i] = 1.0f;
  int64_t worst = 0;
  for (int k = 0; k < 20; k++) {
    coop_job *j = coop_job_new("render", 1);
    coop_job_buf_in(j, a, sizeof a);
    coop_job_buf_in(j, a, sizeof a);
    coop_job_buf_out(j, o, sizeof o);
    coop_job_u32(j, 16);
    coop_job_u32(j, 1);
    int64_t t0 = coop__now_ns();
    uint64_t id;
    ck_assert_int_eq(coop_submit(c, j, &id), 0);
    coop_job_free(j);
    struct coop_result r;
    ck_assert_int_eq(coop_wait(c, id, 30000, &r), 0);
    int64_t dt = coop__now_ns() - t0;
    if (dt > worst) worst = dt;
    ck_assert_int_eq(r.state, COOP_STATE_DONE);
    ck_assert(o[0] == 16.0f);
    coop_result_free(&r);
  }
  atomic_store(&f.stop, 1);
  pthread_join(t, NULL);
  ck_assert_uint_gt(f.sent, 0);
  /* behind up to max_jobs_per_client renders of the flood: seconds at most
   * on 2 loaded cores, never the flood's whole backlog */
  ck_assert_msg(worst < 5000000000ll, "a task took %.0f ms beside the flood", worst / 1e6);
  struct coop_stats st;
  ck_assert_int_eq(coop_stats(c, &st), 0);
  coop_disconnect(c);
  bufs_stop(&d);
}
END_TEST

/* A client that submits one task every 50 ms (a frame loop): from its
 * third task on, coopd expects the next one a period later and has the
 * scheduler gather ahead for it. */
START_TEST(a_frame_loop_is_gathered_ahead) {
  char logp[] = "/tmp/coopd-frames-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  static float a[8 * 8], o[8 * 8];
  for (int k = 0; k < 10; k++) {
    int64_t t0 = coop__now_ns();
    coop_job *j = coop_job_new("render", 1);
    coop_job_buf_in(j, a, sizeof a);
    coop_job_buf_in(j, a, sizeof a);
    coop_job_buf_out(j, o, sizeof o);
    coop_job_u32(j, 8);
    coop_job_u32(j, 1);
    uint64_t id;
    ck_assert_int_eq(coop_submit(c, j, &id), 0);
    coop_job_free(j);
    struct coop_result r;
    ck_assert_int_eq(coop_wait(c, id, 30000, &r), 0);
    ck_assert_int_eq(r.state, COOP_STATE_DONE);
    coop_result_free(&r);
    int64_t left = t0 + 50000000 - coop__now_ns();
    if (left > 0) msleep((int)(left / 1000000));
  }
  coop_disconnect(c);
  bufs_stop(&d);
  FILE *f = fopen(logp, "r");
  ck_assert_ptr_nonnull(f);
  char line[512];
  int ahead = 0;
  while (fgets(line, sizeof line, f)) ahead += strstr(line, "gathered ahead") != NULL;
  fclose(f);
  unlink(logp);
  /* jobs 3..10 when every period holds; a loaded machine (CI, a sanitizer)
   * breaks some, and coopd then rightly expects nothing: at least one */
  ck_assert_msg(ahead >= 1, "%d of 10 jobs were gathered ahead", ahead);
}
END_TEST

/* The window lines of coopd's trace at path (docs/daemon.md, "The path of
 * one job, leg by leg"): "window,WHO,FROM,BEGAN", each begun at or after
 * its start and within 10 s of it. How many of WHO's (loop, device0). */
static int trace_windows(const char *path, const char *who) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char line[512], w[32];
  int n = 0, header = 0;
  while (fgets(line, sizeof line, f)) {
    long long from, began;
    if (!strcmp(line, "window,who,from,began\n")) {
      header = 1;
      continue;
    }
    if (strncmp(line, "window,", 7)) continue;
    ck_assert_msg(sscanf(line, "window,%31[a-z0-9],%lld,%lld", w, &from, &began) == 3,
                  "a malformed window line: %s", line);
    ck_assert_msg(from > 0 && began >= from && began - from < 10000000000LL,
                  "a window begun out of its time: %s", line);
    n += !strcmp(w, who);
  }
  fclose(f);
  ck_assert_msg(header, "no window header in the trace");
  return n;
}

/* A frame loop's SUBMIT checked ahead (docs/daemon.md, "Spinning"): at
 * each warm window's start coopd decodes and admits the connection's last
 * SUBMIT again, dry, and the device thread its start's checks and its
 * request's body (the frame's ranges go with its submit), to have that
 * path's code and data warm when the next one comes. Dry means nothing made, counted or sent: a
 * frame loop whose input buffer is freed between two frames has that check refused (the log says
 * so) and no ERROR reaches the client (coopd's log has one, the real SUBMIT's), whose next requests
 * are answered as they come, the SUBMIT that names the freed buffer with ENOJOB; the connection's
 * counts stay as they were (a frame after it runs, up to max_jobs_per_client = 1). */
START_TEST(a_frame_loops_submit_is_checked_ahead_dry) {
  char logp[] = "/tmp/coopd-dry-XXXXXX.log", tracep[] = "/tmp/coopd-dry-XXXXXX.csv";
  log_temp(logp);
  log_temp(tracep);
  struct daemon_proc d = {.log = logp};
  const char *sets[] = {"device.idle_spin_us=2000", "limits.max_jobs_per_client=1", NULL};
  setenv("COOP_TRACE_FILE", tracep, 1);
  bufs_start(&d, sets);
  unsetenv("COOP_TRACE_FILE");
  coop_conn *c = connect_to(&d);
  static float fa[RN * RN], fb[RN * RN], want[RN * RN], got[RN * RN];
  render_inputs(fa, fb);
  matmul_ref(fa, fb, want);
  uint64_t b[3] = {0}, id = 0;
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fa, NULL, 0, &b[0]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fb, fb, 0, &b[1]), 0);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof got, NULL, 0, &b[2]), 0);
  /* frames 100 ms apart (or 4 round trips on a slow build), until a
   * window's checks said "admitted" and the device thread ran its path dry (at most 60 frames) */
  int64_t t0 = coop__now_ns();
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  int64_t period = (coop__now_ns() - t0) * 4;
  if (period < 100000000) period = 100000000;
  int frames = 1, admitted = 0, dry = 0;
  int64_t next = t0 + period;
  for (; (admitted < 1 || dry < 1) && frames < 60; next += period) {
    int64_t now = coop__now_ns();
    if (next > now) msleep((int)((next - now) / 1000000));
    memset(got, 0, sizeof got);
    ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    for (int i = 0; i < RN * RN; i++)
      ck_assert_msg((got[i] - want[i]) * (got[i] - want[i]) < 1e-6f, "frame %d, element %d", frames,
                    i);
    frames++;
    admitted = log_count(logp, "checked ahead of its next frame: admitted");
    dry = log_count(logp, "the next frame's path run dry, as far as its request");
  }
  if (!admitted || !dry) log_print(logp);
  ck_assert_msg(admitted >= 1, "no SUBMIT checked ahead in %d frames", frames);
  ck_assert_msg(dry >= 1, "no frame's path run dry on the device thread in %d frames", frames);
  /* one more frame on time, its input freed right after its SUBMIT (the
   * job holds the buffer until it ends): the next window, a period on,
   * checks a SUBMIT that names a freed buffer, is refused, and says so
   * only in the log. A frame off its loop's grid (this process's sleep
   * woke 13 ms late on a loaded machine) has no window armed after it, so
   * nothing is checked ahead: then its buffer is made again and the next
   * frame on the grid tries (8 at most). */
  int refused = 0;
  for (int tries = 0; tries < 8; tries++, next += period) {
    int armed = log_count(logp, "a warm window armed for the next frame"), now_armed = 0;
    int64_t now = coop__now_ns();
    if (next > now) msleep((int)((next - now) / 1000000));
    ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
    ck_assert_int_eq(coop_buffer_free(c, b[0]), 0);
    ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
    for (int k = 0; k < 20 && !now_armed; k++, msleep(5))
      now_armed = log_count(logp, "a warm window armed for the next frame") > armed;
    if (now_armed) break;
    ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fa, NULL, 0, &b[0]), 0);
  }
  for (int k = 0; k < 40 && !refused; k++) {
    msleep((int)(period / 4000000));
    refused = log_count(logp, "checked ahead of its next frame: ENOJOB");
  }
  if (!refused) log_print(logp);
  ck_assert_msg(refused >= 1, "the check ahead of a freed buffer's frame was not refused");
  struct coop_stats st;
  ck_assert_int_eq(coop_stats(c, &st), 0); /* its own reply, no ERROR before it */
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), COOP_ENOJOB);
  /* one ERROR sent (coopd logs each at debug): that SUBMIT's */
  ck_assert_int_eq(log_count(logp, ": error ENOJOB: "), 1);
  ck_assert_int_eq(coop_buffer_create(c, 0, sizeof fa, NULL, 0, &b[0]), 0);
  ck_assert_int_eq(frame_go(c, b[0], b[1], b[2], fa, got, 1, &id), 0);
  ck_assert_int_eq(wait_state(c, id), COOP_STATE_DONE);
  for (int i = 0; i < RN * RN; i++)
    ck_assert_msg((got[i] - want[i]) * (got[i] - want[i]) < 1e-6f, "after, element %d", i);
  coop_disconnect(c);
  bufs_stop(&d);
  /* each window the loop and the device thread began is in the trace, with
   * how late it began (their lines at coopd's exit) */
  ck_assert_int_ge(trace_windows(tracep, "loop"), 1);
  ck_assert_int_ge(trace_windows(tracep, "device0"), 1);
  unlink(logp);
  unlink(tracep);
}
END_TEST

/* A large job's slices wait while a frame's task is in flight or due
 * (docs/daemon.md, "Large buffers in slices"): a slice holds the device
 * thread for its whole copy, and a frame whose task ended meanwhile was
 * seen up to half a millisecond late on an H200. Here a periodic job (a
 * frame loop) runs beside a fill of 64 slices (LARGE: 16 under TSan): the device thread says it
 * held them, and both jobs end whole (the holds are bounded: the large job's bytes all arrive). */
START_TEST(a_frame_holds_a_large_jobs_slices) {
  char logp[] = "/tmp/coopd-slices-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  bufs_start(&d, NULL);
  coop_conn *big = connect_to(&d), *frames = connect_to(&d);
  enum { R8 = 8 };
  const size_t in_bytes = LARGE(64u << 20), out_bytes = 1u << 20;
  int in_fd = memfd_of(in_bytes), out_fd = memfd_of(out_bytes);
  uint32_t *in = mmap(NULL, in_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, in_fd, 0);
  ck_assert(in != MAP_FAILED);
  for (size_t i = 0; i < in_bytes / 4; i++) in[i] = (uint32_t)(i * 2654435761u);
  for (int i = 0; i < R8 * R8; i++) in[i] = 0x3f800000u; /* 1.0f: what render reads */
  static float a[R8 * R8], o[R8 * R8];
  for (int i = 0; i < R8 * R8; i++) a[i] = 1.0f;
  coop_job *j = coop_job_new("render", 1);
  coop_job_buf_in(j, a, sizeof a);
  coop_job_buf_in(j, a, sizeof a);
  coop_job_buf_out(j, o, sizeof o);
  ck_assert_int_eq(coop_job_periodic(j, 2000, 100, 0, 0), 0); /* 200 ms of frames */
  uint64_t id_frames = render_go(frames, j, R8);
  uint64_t id_big = large_render(big, in_fd, in_bytes, COOP_JOB_INOUT, out_fd, out_bytes);
  struct coop_result rb, rf;
  ck_assert_int_eq(coop_wait(big, id_big, 60000, &rb), 0);
  ck_assert_int_eq(coop_wait(frames, id_frames, 60000, &rf), 0);
  ck_assert_msg(rb.state == COOP_STATE_DONE, "the large job: %d (%s)", rb.state, rb.message);
  ck_assert_msg(rf.state == COOP_STATE_DONE, "the frames: %d (%s)", rf.state, rf.message);
  ck_assert_uint_eq(rf.instances, 100);
  for (size_t i = R8 * R8; i < in_bytes / 4; i++)
    if (in[i] != (uint32_t)(i * 2654435761u))
      ck_abort_msg("word %zu of the INOUT buffer: %#x, want %#x", i, in[i],
                   (uint32_t)(i * 2654435761u));
  coop_result_free(&rb);
  coop_result_free(&rf);
  munmap(in, in_bytes);
  close(in_fd);
  close(out_fd);
  coop_disconnect(big);
  coop_disconnect(frames);
  bufs_stop(&d);
  int held = log_has(logp, "its slices held for a frame");
  unlink(logp);
  ck_assert_msg(held, "no slice of the large job was held for the frames");
}
END_TEST

/* A connection that sends 300 BUF_WRITEs at once: past 64 in flight they
 * are refused with ELIMIT (each holds a memfd and a place in the device
 * thread's queue); every one is answered, and the connection goes on. */
START_TEST(buffer_operations_bounded_per_connection) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  static union coop_msg m;
  m.buf_create = (struct coop_msg_buf_create){.size = 64, .fd = COOP_WIRE_FD_NONE};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, NULL, 0)), COOP_MSG_BUFFER);
  uint64_t id = c.m.buffer.buffer;
  struct coop_wire_buf b; /* the 300 in one write */
  coop_wire_buf_init(&b);
  static uint8_t bytes[64];
  for (uint32_t k = 0; k < 300; k++) {
    memset(&m, 0, sizeof m);
    m.buf_range = (struct coop_msg_buf_range){
        .buffer = id, .len = 64, .fd = COOP_WIRE_FD_NONE, .data = bytes, .data_len = 64};
    ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_BUF_WRITE, ++c.seq, &m), 0);
  }
  send_raw(&c, b.p, b.len, NULL, 0);
  coop_wire_buf_free(&b);
  unsigned ok = 0, limited = 0;
  for (int k = 0; k < 300 && read_frame(&c); k++) {
    ok += c.h.type == COOP_MSG_OK;
    limited += c.h.type == COOP_MSG_ERROR && c.m.error.code == COOP_ELIMIT;
  }
  ck_assert_uint_eq(ok + limited, 300);
  ck_assert_msg(limited > 0, "300 writes at once, none refused");
  ck_assert_uint_ge(ok, 64);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* nobody's (uid 65534) render of one workgroup, in a child that is
 * connected when this returns and submits once *go is written
 * (nobody_go); it writes when its render ended DONE (coop__now_ns) into a
 * pipe whose read end goes to *r, or exits non-zero. Connected first, so
 * that what the test sends between the two meets a render that comes at
 * once, not after a fork and a handshake: a 192 MiB create of zeros had
 * ended 1.1 ms before such a render on a loaded machine. */
static pid_t nobody_renders(const struct daemon_proc *d, int *r, int *go) {
  int pfd[2], gfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  ck_assert_int_eq(pipe(gfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid) {
    close(pfd[1]);
    close(gfd[0]);
    char ready;
    ck_assert_int_eq(read(pfd[0], &ready, 1), 1);
    *r = pfd[0];
    *go = gfd[1];
    return kid;
  }
  close(pfd[0]);
  close(gfd[1]);
  if (setgid(65534) || setuid(65534)) _exit(3);
  struct conn o;
  open_hello(&o, d);
  char b = 1;
  if (write(pfd[1], &b, 1) != 1 || read(gfd[0], &b, 1) != 1) _exit(6);
  uint64_t job = render_submit(&o, 1);
  if (!job || wait_job(&o, job, COOP_WAIT_FOREVER) != COOP_MSG_RESULT ||
      o.m.result.state != COOP_JOB_DONE)
    _exit(4);
  int64_t t = coop__now_ns();
  if (write(pfd[1], &t, sizeof t) != (ssize_t)sizeof t) _exit(5);
  _exit(0);
}

/* nobody_renders's child submits its render now. */
static void nobody_go(int go) {
  char b = 1;
  ck_assert_int_eq(write(go, &b, 1), 1);
  close(go);
}

/* When nobody_renders's child said its render ended (r closed after);
 * its exit checked. */
static int64_t nobody_rendered(pid_t kid, int r) {
  int64_t t = 0;
  ck_assert_int_eq(read(r, &t, sizeof t), (ssize_t)sizeof t);
  close(r);
  int st = 0;
  waitpid(kid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nobody's render failed (%d)", st);
  return t;
}

/* A BUF_WRITE of size bytes of fd into buffer id, its answer not read. */
static void buf_write_raw(struct conn *c, uint64_t id, uint64_t size, int fd) {
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_range = (struct coop_msg_buf_range){.buffer = id, .len = size, .fd = 0};
  send_msg(c, COOP_MSG_BUF_WRITE, &m, &fd, 1);
}

/* A memfd of size bytes with mark's n bytes at its start and at its end. */
static int marked_memfd(size_t size, const void *mark, size_t n) {
  int fd = memfd_of(size);
  ck_assert_int_eq(pwrite(fd, mark, n, 0), (ssize_t)n);
  ck_assert_int_eq(pwrite(fd, mark, n, (off_t)(size - n)), (ssize_t)n);
  return fd;
}

/* A BUF_READ of len bytes at offset of buffer id (inline) answers want. */
static void reads_back(struct conn *c, uint64_t id, uint64_t offset, const void *want,
                       uint32_t len) {
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_range = (struct coop_msg_buf_range){
      .buffer = id, .offset = offset, .len = len, .fd = COOP_WIRE_FD_NONE};
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_BUF_READ, &m, NULL, 0)), COOP_MSG_BUF_DATA);
  ck_assert_uint_eq(c->m.buf_data.data_len, len);
  ck_assert_int_eq(memcmp(c->m.buf_data.data, want, len), 0);
}

/* The next frame on c, an OK: when it came (coop__now_ns). */
static int64_t ok_at(struct conn *c, const char *what) {
  ck_assert_int_eq(read_frame(c), 1);
  ck_assert_msg(c->h.type == COOP_MSG_OK, "%s: %s", what,
                c->h.type == COOP_MSG_ERROR ? c->m.error.message : "not OK");
  return coop__now_ns();
}

/* Buffer operations in turns (dev_bufs.c): root queues 64 writes of a 64
 * MiB device buffer (LARGE: 16 under TSan), the most one connection may have in flight; another
 * user then renders. A pass did every operation queued before it took any
 * job, so the render waited for all 64 copies (and a user with 16
 * connections could queue 1024). Now a pass spends at most
 * DEV_BUFOP_PASS_NS on operations, then one of each user's, and takes its
 * jobs: the render ends with most of root's writes still to come; every
 * write is answered OK. */
START_TEST(buffer_operations_take_turns_with_other_users_jobs) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  enum { N = 64 };
  const size_t size = LARGE(64u << 20);
  uint64_t id = buf_create_raw(&c, size);
  int fd = memfd_of(size);
  int rfd, go;
  pid_t kid = nobody_renders(&d, &rfd, &go);
  for (int k = 0; k < N; k++) buf_write_raw(&c, id, size, fd);
  nobody_go(go);
  int64_t answered[N];
  for (int k = 0; k < N; k++) answered[k] = ok_at(&c, "a write");
  int64_t rendered = nobody_rendered(kid, rfd);
  int before = 0;
  for (int k = 0; k < N; k++) before += answered[k] < rendered;
  ck_assert_msg(before <= N / 2, "nobody's render ended after %d of root's %d writes", before, N);
  close(fd);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* A daemon whose user may fill 75% of its arena with device buffers, and
 * a connection to it (the large operations' tests). */
static void large_start(struct daemon_proc *d, struct conn *c) {
  const char *sets[] = {"limits.max_buffer_percent_per_uid=100", NULL};
  bufs_start(d, sets);
  open_hello(c, d);
}

/* Another user renders while the BUF_CREATE m (with nfds descriptors)
 * is done on c: the render must end before the create's answer comes.
 * The buffer's id. */
static uint64_t created_after_a_render(struct daemon_proc *d, struct conn *c,
                                       const union coop_msg *m, int *fds, unsigned nfds) {
  int rfd, go;
  pid_t kid = nobody_renders(d, &rfd, &go);
  send_msg(c, COOP_MSG_BUF_CREATE, m, fds, nfds);
  nobody_go(go);
  ck_assert_int_eq(read_frame(c), 1);
  ck_assert_msg(c->h.type == COOP_MSG_BUFFER, "the create: %s",
                c->h.type == COOP_MSG_ERROR ? c->m.error.message : "not BUFFER");
  int64_t created = coop__now_ns();
  uint64_t id = c->m.buffer.buffer;
  int64_t rendered = nobody_rendered(kid, rfd);
  ck_assert_msg(rendered < created, "nobody's render ended %.1f ms after root's create",
                (double)(rendered - created) / 1e6);
  return id;
}

/* One write of 192 MiB (of the default 256 MiB arena): it went in one
 * copy, and another user's render waited for all of it. Now it goes in
 * slices of 4 MiB, a pass stops between two once its 2 ms are spent, and
 * the render ends before the write is answered; the bytes arrive whole. */
START_TEST(a_large_write_goes_in_slices_between_other_users_jobs) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  struct conn c;
  large_start(&d, &c);
  const size_t size = LARGE(192u << 20);
  uint64_t id = buf_create_raw(&c, size);
  uint32_t mark[4] = {0x5ec00001u, 0x5ec00002u, 0x5ec00003u, 0x5ec00004u};
  int fd = marked_memfd(size, mark, sizeof mark);
  int rfd, go;
  pid_t kid = nobody_renders(&d, &rfd, &go);
  buf_write_raw(&c, id, size, fd);
  nobody_go(go);
  int64_t written = ok_at(&c, "the write");
  int64_t rendered = nobody_rendered(kid, rfd);
  ck_assert_msg(rendered < written, "nobody's render ended %.1f ms after root's write",
                (double)(rendered - written) / 1e6);
  reads_back(&c, id, size - sizeof mark, mark, sizeof mark); /* its last 16 bytes */
  close(fd);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* The same with the bytes given at the creation: a create with contents
 * was one copy, and nobody's render ended after it. Now the buffer is made
 * first and filled in slices, as a write; its bytes arrive whole. */
START_TEST(a_large_create_with_contents_goes_in_slices) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  struct conn c;
  large_start(&d, &c);
  const size_t size = LARGE(192u << 20);
  uint32_t mark[4] = {0x5ec00011u, 0x5ec00012u, 0x5ec00013u, 0x5ec00014u};
  int fd = marked_memfd(size, mark, sizeof mark);
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = size, .fd = 0};
  uint64_t id = created_after_a_render(&d, &c, &m, &fd, 1);
  reads_back(&c, id, 0, mark, sizeof mark); /* its first and last 16 bytes */
  reads_back(&c, id, size - sizeof mark, mark, sizeof mark);
  close(fd);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* The same without contents: a create of zeros was zeroed in one request
 * (the arena's memory set, or on CUDA the device zone's), and another
 * user's render waited for all of it. Now it is made first and zeroed in
 * slices, as a write of zeros; it reads back zeros. */
START_TEST(a_large_create_of_zeros_goes_in_slices) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  struct conn c;
  large_start(&d, &c);
  /* whole under ThreadSanitizer too: its quarter, zeroed by memset, was
   * done before the other user's render had started */
  const size_t size = 192u << 20;
  /* the arena's bytes at the buffer's two ends written first, as a user's
   * earlier buffer left them (inline: the marks alone) */
  uint64_t old = buf_create_raw(&c, size);
  static const uint32_t mark[4] = {0x5ec00021u, 0x5ec00022u, 0x5ec00023u, 0x5ec00024u};
  static union coop_msg m;
  for (int end = 0; end < 2; end++) {
    memset(&m, 0, sizeof m);
    m.buf_range = (struct coop_msg_buf_range){.buffer = old,
                                              .offset = end ? size - sizeof mark : 0,
                                              .len = sizeof mark,
                                              .fd = COOP_WIRE_FD_NONE,
                                              .data = (const uint8_t *)mark,
                                              .data_len = sizeof mark};
    ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_WRITE, &m, NULL, 0)), COOP_MSG_OK);
    reads_back(&c, old, m.buf_range.offset, mark, sizeof mark);
  }
  memset(&m, 0, sizeof m);
  m.buf_free = (struct coop_msg_buf_free){.buffer = old};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_FREE, &m, NULL, 0)), COOP_MSG_OK);
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = size, .fd = COOP_WIRE_FD_NONE};
  uint64_t id = created_after_a_render(&d, &c, &m, NULL, 0);
  static const uint32_t zeros[4];
  reads_back(&c, id, 0, zeros, sizeof zeros); /* where the old buffer's marks were */
  reads_back(&c, id, size - sizeof zeros, zeros, sizeof zeros);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* Whether c has a frame to read within ms milliseconds. */
static int frame_within(struct conn *c, int ms) {
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  return poll(&p, 1, ms) == 1;
}

/* A FUSE file of the test's own (fuse_stall.h) opened as fd, a daemon and
 * two connections to it; NULL (the test skipped, saying why) where this
 * machine cannot mount one. */
static struct fuse_stall *fuse_file_open(const char *test, struct daemon_proc *d, struct conn *c,
                                         struct conn *other, int *fd) {
  char why[160];
  struct fuse_stall *fs = fuse_stall_mount(1u << 20, why, sizeof why);
  if (!fs) {
    fprintf(stderr, "%s: skipped: %s\n", test, why);
    return NULL;
  }
  bufs_start(d, NULL);
  open_hello(c, d);
  open_hello(other, d);
  *fd = open(fuse_stall_path(fs), O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(*fd, 0);
  return fs;
}

/* A descriptor of a file that a process serves (FUSE; with
 * user_allow_other any user may mount one that coopd can read), which
 * stops answering once the client has opened it: coopd's loop called
 * fstat on it when a BUF_CREATE, a SUBMIT or an XFER came, and waited for
 * that process (5 s here; as long as it likes) while no other client was
 * served. Now such a file is refused, named, before anything of its
 * filesystem is called (fdio_client_file), and another connection's STATS
 * is answered at once. */
START_TEST(a_file_that_a_process_serves_is_refused_unread) {
  struct daemon_proc d = {0};
  struct conn c, other;
  int fd;
  struct fuse_stall *fs =
      fuse_file_open("a_file_that_a_process_serves_is_refused_unread", &d, &c, &other, &fd);
  if (!fs) return;
  fuse_stall_stop_answering(fs, 5000, 0);
  static union coop_msg m, st;
  memset(&st, 0, sizeof st);
  for (int k = 0; k < 3; k++) {
    uint16_t type = k == 0 ? COOP_MSG_BUF_CREATE : k == 1 ? COOP_MSG_SUBMIT : COOP_MSG_XFER;
    memset(&m, 0, sizeof m);
    if (k == 0) m.buf_create = (struct coop_msg_buf_create){.size = 4096, .fd = 0};
    if (k == 1) {
      submit_init(&m, "render", 1, 0);
      static const float ones[8 * 8];
      arg_buf(&m.submit, COOP_BUF_IN, NULL, sizeof ones, 0);
      arg_buf(&m.submit, COOP_BUF_IN, ones, sizeof ones, COOP_WIRE_FD_NONE);
      arg_buf(&m.submit, COOP_BUF_OUT, NULL, 8 * 8 * sizeof(float), COOP_WIRE_FD_NONE);
      arg_u32(&m.submit, 8);
      arg_u32(&m.submit, 1);
    }
    uint32_t seq = send_msg(&c, type, &m, &fd, 1);
    int64_t t0 = coop__now_ns();
    uint32_t sseq = send_msg(&other, COOP_MSG_STATS, &st, NULL, 0);
    ck_assert_msg(frame_within(&other, 1500),
                  "request %d: another client's STATS unanswered 1.5 s after a descriptor of a "
                  "stalled filesystem",
                  k);
    ck_assert_uint_eq(reply(&other, sseq), COOP_MSG_STATS_REPLY);
    ck_assert_int_lt(coop__now_ns() - t0, 1500000000);
    ck_assert_uint_eq(reply(&c, seq), COOP_MSG_ERROR);
    /* refused naming the filesystem; or, while the close of the one before
     * still waits on its thread, dropped unopened by the kernel (fdclose.h) */
    const char *e = c.m.error.message;
    ck_assert_msg(strstr(e, k == 1 ? "descriptor 0" : "fuse") || strstr(e, "missing") ||
                      strstr(e, "came with 0"),
                  "request %d: %s", k, e);
  }
  fuse_stall_unmount(fs); /* aborts the connection: our own close then waits for nothing */
  close(fd);
  conn_close(&other);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* The same file, its process answering nothing, a close's FLUSH included,
 * its descriptor sent with a STATS (a frame that takes none): coopd's loop
 * closed it, and a close waits for the flush, whoever closes it: another
 * connection's STATS was unanswered. Now it is closed on a thread of its
 * user's (fdclose.h), and while that close waits the user's descriptors
 * are dropped unopened: a BUF_CREATE from a memfd is refused as missing
 * its descriptor, and made once the filesystem has gone. */
START_TEST(a_descriptor_whose_close_waits_holds_no_one) {
  struct daemon_proc d = {0};
  struct conn c, other;
  int fd;
  struct fuse_stall *fs =
      fuse_file_open("a_descriptor_whose_close_waits_holds_no_one", &d, &c, &other, &fd);
  if (!fs) return;
  fuse_stall_stop_answering(fs, 5000, 1);
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  uint32_t seq = send_msg(&c, COOP_MSG_STATS, &m, &fd, 1);
  uint32_t sseq = send_msg(&other, COOP_MSG_STATS, &m, NULL, 0);
  ck_assert_msg(frame_within(&other, 1500),
                "another client's STATS unanswered 1.5 s after a descriptor whose close waits");
  ck_assert_uint_eq(reply(&other, sseq), COOP_MSG_STATS_REPLY);
  ck_assert_uint_eq(reply(&c, seq), COOP_MSG_STATS_REPLY);
  int mfd = memfd_of(4096);
  m.buf_create = (struct coop_msg_buf_create){.size = 4096, .fd = 0};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, &mfd, 1)), COOP_MSG_ERROR);
  ck_assert_msg(strstr(c.m.error.message, "missing"), "%s", c.m.error.message);
  fuse_stall_unmount(fs); /* aborts the connection: the waiting close returns */
  close(fd);
  uint16_t t = 0;
  for (int k = 0; k < 100 && t != COOP_MSG_BUFFER; k++, msleep(20))
    t = reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, &mfd, 1));
  ck_assert_uint_eq(t, COOP_MSG_BUFFER);
  close(mfd);
  conn_close(&other);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

/* A file that a client opened in a mount namespace of its own (a
 * container's: each of its mounts, a bind of the host's disk too, has an
 * id that coopd's mountinfo lacks) was refused as "of no filesystem this
 * process sees". Now its mount is looked for in the client's namespace
 * (/proc/PID/mountinfo): a ramfs file there is taken, and an overlay
 * there, which a user namespace may lay over a FUSE filesystem, is not.
 * In a child of the test's: a new mount namespace with a ramfs and a
 * read-only overlay of two of its folders, and its own connection. */
static int in_own_namespace(struct daemon_proc *d, char *why, size_t n) {
  char dir[] = "/tmp/coop-ns-XXXXXX", path[96];
  if (!mkdtemp(dir)) return snprintf(why, n, "mkdtemp: %s", strerror(errno)), 2;
  int rc = 2;
  if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
      mount("none", dir, "ramfs", 0, NULL)) {
    snprintf(why, n, "a mount namespace of its own: %s", strerror(errno));
    goto out;
  }
  rc = 1;
  static const char mark[] = "a container's file";
  snprintf(path, sizeof path, "%s/f", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  char opts[200];
  snprintf(opts, sizeof opts, "lowerdir=%s/a:%s/b", dir, dir);
  char a[96], b[96], o[96];
  snprintf(a, sizeof a, "%s/a", dir), snprintf(b, sizeof b, "%s/b", dir);
  snprintf(o, sizeof o, "%s/o", dir);
  if (fd < 0 || pwrite(fd, mark, sizeof mark, 0) != sizeof mark || ftruncate(fd, 4096) ||
      mkdir(a, 0700) || mkdir(b, 0700) || mkdir(o, 0700) ||
      mount("overlay", o, "overlay", MS_RDONLY, opts)) {
    snprintf(why, n, "setting up: %s", strerror(errno));
    goto out;
  }
  snprintf(path, sizeof path, "%s/a/g", dir);
  int g = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (g < 0 || ftruncate(g, 4096)) goto out;
  close(g);
  snprintf(path, sizeof path, "%s/o/g", dir);
  int ofd = open(path, O_RDONLY | O_CLOEXEC);
  struct conn c;
  open_hello(&c, d);
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = 4096, .fd = 0};
  if (reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, &fd, 1)) != COOP_MSG_BUFFER) {
    snprintf(why, n, "the ramfs file refused: %.150s", c.m.error.message);
    goto out;
  }
  uint64_t id = c.m.buffer.buffer;
  memset(&m, 0, sizeof m);
  m.buf_range =
      (struct coop_msg_buf_range){.buffer = id, .len = sizeof mark, .fd = COOP_WIRE_FD_NONE};
  if (reply(&c, send_msg(&c, COOP_MSG_BUF_READ, &m, NULL, 0)) != COOP_MSG_BUF_DATA ||
      memcmp(c.m.buf_data.data, mark, sizeof mark)) {
    snprintf(why, n, "the buffer does not hold the file's bytes");
    goto out;
  }
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = 4096, .fd = 0};
  if (ofd < 0 || reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, &ofd, 1)) != COOP_MSG_ERROR ||
      !strstr(c.m.error.message, "overlay")) {
    snprintf(why, n, "the overlay's file taken (%s)", ofd < 0 ? strerror(errno) : "");
    goto out;
  }
  conn_close(&c);
  rc = 0;
out:
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  return rc;
}

/* A file on a disk, written by a coopd that runs as root: BUF_READ into a
 * client's descriptor grows and writes the file as root, and a root
 * writer passes the disk's quotas and takes the blocks ext4 keeps for
 * root (of a 200 MiB ext4 filled as nobody, 41 MiB of root's 46 went into
 * nobody's files, and root's own writes then failed ENOSPC). Now a file
 * on a disk is refused, EPERM naming why, wherever coopd would write it
 * (BUF_READ, a job's OUT buffer, a frame's OUT range, XFER), while coopd
 * runs as root; it is still read (BUF_WRITE from it), and a memfd is
 * written as before. The file lies in the test's folder (the build's,
 * on a disk): where that is tmpfs or the test is not root, the refusal
 * does not apply and is not looked for. */
START_TEST(a_disk_file_is_not_written_by_a_root_coopd) {
  char path[] = "coop-disk-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  unlink(path);
  struct statfs fs;
  ck_assert_int_eq(fstatfs(fd, &fs), 0);
  if (geteuid() != 0 || fs.f_type == 0x01021994 /* tmpfs */ ||
      fs.f_type == 0x858458f6 /* ramfs */) {
    fprintf(stderr, "a_disk_file_is_not_written_by_a_root_coopd: skipped (not root, or no disk)\n");
    close(fd);
    return;
  }
  static const char mark[64] = "bytes a client wrote";
  ck_assert_int_eq(pwrite(fd, mark, sizeof mark, 0), (ssize_t)sizeof mark);
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  uint64_t id = buf_create_raw(&c, 4096);
  static union coop_msg m;
  /* read from it: taken */
  memset(&m, 0, sizeof m);
  m.buf_range = (struct coop_msg_buf_range){.buffer = id, .len = sizeof mark, .fd = 0};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_WRITE, &m, &fd, 1)), COOP_MSG_OK);
  /* written into: refused, each way */
  for (int k = 0; k < 4; k++) {
    uint16_t type = k == 0 ? COOP_MSG_BUF_READ : k == 2 ? COOP_MSG_XFER : COOP_MSG_SUBMIT;
    memset(&m, 0, sizeof m);
    if (k == 0) m.buf_range = (struct coop_msg_buf_range){.buffer = id, .len = 4096, .fd = 0};
    if (k == 1) {
      submit_init(&m, "render", 1, 0);
      static const float ones[8 * 8];
      arg_buf(&m.submit, COOP_BUF_IN, ones, sizeof ones, COOP_WIRE_FD_NONE);
      arg_buf(&m.submit, COOP_BUF_IN, ones, sizeof ones, COOP_WIRE_FD_NONE);
      arg_buf(&m.submit, COOP_BUF_OUT, NULL, sizeof mark, 0);
      arg_u32(&m.submit, 4);
      arg_u32(&m.submit, 1);
    }
    if (k == 3) { /* the render's output, a range of the device buffer, into the file */
      render_init(&m, 1);
      m.submit.args[2] = (struct coop_wire_arg){
          .type = COOP_ARG_DEVBUF_IO, .bits = id, .dir = COOP_BUF_OUT, .fd = 0, .size = 64};
      m.submit.args[3].bits = 4;
    }
    ck_assert_uint_eq(reply(&c, send_msg(&c, type, &m, &fd, 1)), COOP_MSG_ERROR);
    ck_assert_msg(c.m.error.code == COOP_EPERM && strstr(c.m.error.message, "on a disk") &&
                      strstr(c.m.error.message, "root's reserve"),
                  "request %d: %d %s", k, c.m.error.code, c.m.error.message);
  }
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  ck_assert_int_eq(st.st_size, sizeof mark); /* neither grown nor written */
  char back[sizeof mark];
  ck_assert_int_eq(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
  ck_assert_mem_eq(back, mark, sizeof mark);
  /* a memfd is written as before */
  int mfd = memfd_create("out", MFD_CLOEXEC);
  ck_assert_int_ge(mfd, 0);
  memset(&m, 0, sizeof m);
  m.buf_range = (struct coop_msg_buf_range){.buffer = id, .len = sizeof mark, .fd = 0};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_READ, &m, &mfd, 1)), COOP_MSG_BUF_DATA);
  ck_assert_int_eq(pread(mfd, back, sizeof back, 0), (ssize_t)sizeof back);
  ck_assert_mem_eq(back, mark, sizeof mark);
  close(mfd);
  close(fd);
  conn_close(&c);
  bufs_stop(&d);
}
END_TEST

START_TEST(a_file_of_the_clients_own_mount_namespace_is_taken) {
  struct daemon_proc d = {0};
  bufs_start(&d, NULL);
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    char why[200] = "";
    int rc = in_own_namespace(&d, why, sizeof why);
    ssize_t w = write(p[1], why, strlen(why) + 1);
    (void)w;
    _exit(rc);
  }
  close(p[1]);
  char why[200] = "";
  ssize_t r = read(p[0], why, sizeof why - 1);
  (void)r;
  close(p[0]);
  int st;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  ck_assert(WIFEXITED(st));
  if (WEXITSTATUS(st) == 2)
    fprintf(stderr, "a_file_of_the_clients_own_mount_namespace_is_taken: skipped: %s\n", why);
  else
    ck_assert_msg(WEXITSTATUS(st) == 0, "%s", why);
  bufs_stop(&d);
}
END_TEST

/* ---- threads that share one connection ---- */

struct sharer {
  coop_conn *c;
  int index, done;
};

/* A render of 8 x 8 of ones (rep 1): each output is 8. Odd k: the buffers
 * in memfds of the thread's own (frames with descriptors: by the socket);
 * even k: in memory (small frames: by the shared ring). */
static void *sharer_main(void *arg) {
  struct sharer *sh = arg;
  float a[64], o[64];
  for (int i = 0; i < 64; i++) a[i] = 1.0f;
  int fin = memfd_of(sizeof a), fout = memfd_of(sizeof o);
  if (fin < 0 || fout < 0 || pwrite(fin, a, sizeof a, 0) != (ssize_t)sizeof a) return NULL;
  for (int k = 0; k < 30; k++) {
    memset(o, 0, sizeof o);
    coop_job *j = coop_job_new("render", 1);
    if (k % 2) {
      coop_job_buf_fd(j, fin, sizeof a, COOP_JOB_IN);
      coop_job_buf_fd(j, fin, sizeof a, COOP_JOB_IN);
      coop_job_buf_fd(j, fout, sizeof o, COOP_JOB_OUT);
    } else {
      coop_job_buf_in(j, a, sizeof a);
      coop_job_buf_in(j, a, sizeof a);
      coop_job_buf_out(j, o, sizeof o);
    }
    coop_job_u32(j, 8);
    coop_job_u32(j, 1);
    uint64_t id;
    int e = coop_submit(sh->c, j, &id);
    coop_job_free(j);
    struct coop_result r;
    if (e || coop_wait(sh->c, id, 60000, &r)) break;
    int st = r.state;
    coop_result_free(&r);
    if (k % 2 && pread(fout, o, sizeof o, 0) != (ssize_t)sizeof o) break;
    if (st != COOP_STATE_DONE || o[0] != 8.0f || o[63] != 8.0f) break;
    sh->done++;
  }
  close(fin);
  close(fout);
  return NULL;
}

/* Four threads on one connection, each a mix of jobs whose requests go by
 * the shared ring and by the socket (descriptors): every job's result is
 * its own, in the order libcoop hands replies out across both channels
 * (PROTOCOL.md, "The shared ring"). */
START_TEST(threads_share_one_connection) {
  char logp[] = "/tmp/coopd-share-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  bufs_start(&d, NULL);
  coop_conn *c = connect_to(&d);
  /* coopd logs the ring once its OK is out: the client may be first */
  for (int i = 0; i < 500 && !log_has(logp, "a shared ring of"); i++) msleep(10);
  ck_assert(log_has(logp, "a shared ring of"));
  enum { T = 4 };
  struct sharer sh[T];
  pthread_t t[T];
  for (int i = 0; i < T; i++) {
    sh[i] = (struct sharer){.c = c, .index = i};
    ck_assert_int_eq(pthread_create(&t[i], NULL, sharer_main, &sh[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    ck_assert_msg(sh[i].done == 30, "thread %d: %d of 30 jobs right (%s)", i, sh[i].done,
                  coop_errmsg(c));
  }
  coop_disconnect(c);
  bufs_stop(&d);
  unlink(logp);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("buffers");
  TCase *tc = tcase_create("buffers");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, life_cycle);
  tcase_add_test(tc, a_job_moves_its_ranges);
  tcase_add_test(tc, a_frames_ranges_share_the_transfer_memfd);
  tcase_add_test(tc, a_grown_transfer_memfd_serves_its_new_ranges);
  tcase_add_test(tc, inline_bytes_share_one_memfd);
  tcase_add_test(tc, owners_and_connections);
  tcase_add_test(tc, counted_per_user);
  tcase_add_test(tc, lost_with_the_device_process);
  tcase_add_test(tc, guard_zone_of_a_device_buffer);
  tcase_add_test(tc, a_small_job_goes_between_a_large_jobs_slices);
  tcase_add_test(tc, a_frame_holds_a_large_jobs_slices);
  tcase_add_test(tc, a_mapped_memfd_is_named_and_sent_again_after_a_park);
  tcase_add_test(tc, a_frame_s_ranges_go_with_its_submit);
  tcase_add_test(tc, a_descriptor_cut_short_fails_the_fill);
  tcase_add_test(tc, a_client_that_never_reads);
  tcase_add_test(tc, a_frame_loop_is_gathered_ahead);
  tcase_add_test(tc, a_frame_loops_submit_is_checked_ahead_dry);
  tcase_add_test(tc, a_frame_beside_a_job_ends_in_the_device_process);
  tcase_add_test(tc, buffer_operations_bounded_per_connection);
  tcase_add_test(tc, buffer_operations_take_turns_with_other_users_jobs);
  tcase_add_test(tc, a_large_write_goes_in_slices_between_other_users_jobs);
  tcase_add_test(tc, a_large_create_with_contents_goes_in_slices);
  tcase_add_test(tc, a_large_create_of_zeros_goes_in_slices);
  tcase_add_test(tc, a_file_that_a_process_serves_is_refused_unread);
  tcase_add_test(tc, a_descriptor_whose_close_waits_holds_no_one);
  tcase_add_test(tc, a_file_of_the_clients_own_mount_namespace_is_taken);
  tcase_add_test(tc, a_disk_file_is_not_written_by_a_root_coopd);
  tcase_add_test(tc, one_users_buffers_leave_room_for_others);
  tcase_add_test(tc, two_users_buffers_leave_a_third_room);
  tcase_add_test(tc, two_users_share_of_the_arena_leaves_a_third_room);
  tcase_add_test(tc, threads_share_one_connection);
  suite_add_tcase(s, tc);
  /* The device process restarted or replaced under a buffer: the slowest
   * cases (a third of the suite's time on PoCL), run once, without the
   * spins (daemon_buffers_spinning runs the tcase above alone; its dead
   * peer while spinning is lost_with_the_device_process's). */
  tc = tcase_create("restarts");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, kept_across_a_reload_in_place);
  tcase_add_test(tc, lost_across_a_reload_in_a_new_process);
  tcase_add_test(tc, a_death_inside_a_fill_runs_the_job_again);
  tcase_add_test(tc, a_death_inside_an_emptying_runs_it_again_if_it_can);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  return coop_test_run(srunner_create(suite()));
}
