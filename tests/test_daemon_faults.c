/*
 * test_daemon_faults.c: what goes wrong on the device and how coopd gets
 * over it: the watchdog (a kernel that never yields, [jobs] watchdog_ms),
 * a full arena, coopd itself killed and restarted (its journal): the rest
 * of the integration case; and device restarts that a user's job caused
 * (the restarts case: the victims' tasks run again, the culprit is held
 * back).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* ---- watchdog (kernels/tests/daemon/spin.cl: a kernel that never yields) ---- */

static uint64_t spin_submit(struct conn *c, uint32_t groups, uint32_t kticks) {
  union coop_msg m;
  submit_init(&m, "spin", groups, 1);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, 4, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, kticks);
  uint64_t job = submit(c, &m, NULL, 0);
  ck_assert_msg(job != 0, "spin refused: %s", c->m.error.message);
  return job;
}

/* kticks for a spin of about ms, from a timed short one (the device clock's
 * rate is not known to clients; a loaded machine can only make the short
 * one look longer, and so the long one shorter by the start-up delay). */
static uint32_t spin_calibrate(struct conn *c, uint32_t w, unsigned ms) {
  uint32_t k = 256;
  for (;;) {
    uint64_t job = spin_submit(c, w, k);
    ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_uint_eq(c->m.result.state, COOP_JOB_DONE);
    int64_t ns = c->m.result.t.exec_ns;
    if (ns > 600000000 || k >= (1u << 24)) {
      double want = (double)k * ms * 1e6 / (double)ns;
      return want > 4e9 ? 4000000000u : (uint32_t)want + 1;
    }
    k *= 8;
  }
}

/* A cooperative kernel that reaches no primitive: a task waiting for its
 * workgroups fails after gather_budget_ms naming it; cancelled, it is
 * declared hung after hang_ms, and coopd restarts the device process to
 * take its workgroups back: work goes on at once. */
START_TEST(watchdog_names_a_kernel_that_never_yields) {
  char logp[] = "/tmp/coopd-watchdog-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR,
                        "jobs.gather_budget_ms=1500", "jobs.hang_ms=1000", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  /* 15 s: the checks below need about 3 s of it; the rest is margin for a
   * calibration that load made look slow (it fell short once in CI) */
  uint32_t k = spin_calibrate(&c, w, 15000);
  uint64_t spin = spin_submit(&c, w, k);
  wait_running(&c, spin);
  char name[128];
  snprintf(name, sizeof name, "job %llu (spin, cooperative, did not offer kills when asked) %u",
           (unsigned long long)spin, w);

  uint64_t r = render_submit(&c, 1); /* waits for a worker the spin never gives */
  ck_assert_uint_ne(r, 0);
  ck_assert_uint_eq(wait_job(&c, r, 20000), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_EHUNG);
  assert_has(c.m.result.message, name);

  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = spin;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&c, spin, 20000), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_EHUNG);
  assert_has(c.m.result.message, "kernel spin still ran");
  assert_has(c.m.result.message, "restarted the device");

  /* the device process was killed and a new one launched: every worker
   * serves again at once, long before the spin would have returned */
  struct coop_msg_stats_reply st = stats(&c);
  for (int i = 0; i < 1200 && !strstr(st.watchdog, "restarted"); i++, msleep(50)) st = stats(&c);
  ck_assert_uint_eq(st.gather_timeouts, 1);
  ck_assert_uint_eq(st.hung, 1);
  ck_assert_uint_eq(st.lost_workers, 0);
  assert_has(st.watchdog, "restarted");
  ck_assert_msg(log_has(logp, "restarting it"), "the restart was not logged");
  render_check(&c, w, 0, 0); /* every worker serves again */
  conn_close(&c);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

/* SIGTERM with a kernel that never yields: coopd kills its device process
 * after grace_ms + hang_ms, tells its client, and exits 0 at once. */
START_TEST(stop_kills_a_hung_kernel) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR, "jobs.grace_ms=300",
                        "jobs.hang_ms=700", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  uint64_t spin = spin_submit(&c, w, spin_calibrate(&c, w, 120000));
  wait_running(&c, spin);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kill(d.pid, SIGTERM);
  /* the client hears of it: the job's failure (WAIT), or the shutdown */
  uint16_t t = wait_job(&c, spin, COOP_WAIT_FOREVER);
  ck_assert(t == COOP_MSG_RESULT || t == COOP_MSG_ERROR || t == 0);
  if (t == COOP_MSG_RESULT) ck_assert_int_eq(c.m.result.error, COOP_EHUNG);
  ck_assert_int_eq(daemon_wait(&d, 0), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 8); /* neither the spin's 120 s nor the hard stop */
  conn_close(&c);
}
END_TEST

/* [jobs] watchdog_ms: a cooperative job that runs past it is cancelled (it
 * leaves at its next primitive), its RESULT says why and coopd logs it;
 * jobs that end sooner are left alone, and the workers all come back. */
START_TEST(watchdog_ms_cancels_a_long_job) {
  char logp[] = "/tmp/coopd-watchdog-ms-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"jobs.watchdog_ms=2000", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;

  render_check(&c, w, 0, 0); /* short jobs: milliseconds, far from 2 s */
  uint32_t data[64];
  for (uint32_t i = 0; i < 64; i++) data[i] = i;
  uint64_t quick = sweep_submit(&c, data, 64, 100, w, -1);
  ck_assert_uint_ne(quick, 0);
  ck_assert_uint_eq(wait_job(&c, quick, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  uint32_t got[64];
  memcpy(got, c.m.result.bufs[0].data, sizeof got);
  for (uint32_t i = 0; i < 64; i++) ck_assert_uint_eq(got[i], i + 100);

  /* a sweep of 10^8 rounds would take hours */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint64_t slow = sweep_submit(&c, data, 64, 100000000u, w, -1);
  ck_assert_uint_ne(slow, 0);
  ck_assert_uint_eq(wait_job(&c, slow, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  ck_assert_int_eq(c.m.result.error, COOP_ECANCELED);
  assert_has(c.m.result.message, "cancelled by the watchdog");
  assert_has(c.m.result.message, "watchdog_ms = 2000 ms");
  int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  ck_assert_int_ge(ms, 2000); /* not before its budget (no upper bound: load) */
  char line[128];
  snprintf(line, sizeof line, "job %llu (sweep) ran past the watchdog budget of 2000 ms",
           (unsigned long long)slow);
  for (int i = 0; i < 100 && !log_has(logp, line); i++) msleep(50);
  ck_assert_msg(log_has(logp, line), "the log lacks \"%s\"", line);

  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.done, 2);
  ck_assert_uint_eq(st.cancelled, 1);
  ck_assert_uint_eq(st.hung, 0); /* it left at a primitive: nothing lost */
  ck_assert_uint_eq(st.lost_workers, 0);
  render_check(&c, w, 0, 0); /* every worker serves again */
  conn_close(&c);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

/* A job whose buffers do not fit the arena beside a running job's waits
 * for the room (docs/daemon.md, "Room in the arena"), where it failed
 * ENOMEM ("raise [device] arena_mb"). Arena 1 MiB: a running sweep holds
 * 600 KiB; a render of 3 x 160 KiB (n = 200) fits alone, not beside it: it
 * is QUEUED, its WAIT names the room, and once the sweep is cancelled it
 * runs, DONE and right; a device buffer asked meanwhile is refused ENOMEM
 * saying that the room is the jobs', and of four more renders the last
 * waits for its turn (the waiting ones count toward tasks_per_uid). Beside a device buffer of 700
 * KiB, with no job running, nothing that ends would make room: the render fails ENOMEM at once. */
START_TEST(full_arena) {
  /* device_mb = 0: on CUDA too the device buffers go into the arena */
  const char *sets[] = {"device.arena_mb=1", "device.device_mb=0",
                        "limits.max_buffer_percent_per_uid=100", NULL};
  struct daemon_proc d = {0};
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  int fd = memfd_of(600u << 10);
  uint64_t sweep = sweep_submit(&c, NULL, (600u << 10) / 4, 100000000u, w, fd);
  ck_assert_uint_ne(sweep, 0);
  close(fd);
  wait_running(&c, sweep);

  enum { N = 200 };
  union coop_msg m;
  render_ones(&m, N);
  uint64_t r = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(r, 0);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, r, "waiting for room", said, sizeof said); /* not ended: it failed before */
  assert_has(said, "waiting for room in the device arena: its buffers (469 KiB) do not fit");
  ck_assert_uint_eq(job_state(&c, r), COOP_JOB_QUEUED);
  /* a device buffer is answered at once: no room now (EBUSY: ask again),
   * and why */
  union coop_msg bc;
  memset(&bc, 0, sizeof bc);
  bc.buf_create = (struct coop_msg_buf_create){.size = 500u << 10, .fd = COOP_WIRE_FD_NONE};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &bc, NULL, 0)), COOP_MSG_ERROR);
  ck_assert_int_eq(c.m.error.code, COOP_EBUSY);
  assert_has(c.m.error.message, "in the device arena now: the jobs there hold 600 KiB of it");
  /* four more: jobs waiting for room count toward the user's turns (4), so
   * the last waits for its turn, not with the others for room */
  uint64_t more[4];
  for (int i = 0; i < 4; i++) ck_assert_uint_ne(more[i] = submit(&c, &m, NULL, 0), 0);
  waits_for(&c, more[3], "waiting for its turn", said, sizeof said);
  assert_has(said, "waiting for its turn: its user runs 4 jobs");

  union coop_msg k;
  memset(&k, 0, sizeof k);
  k.job.job = sweep;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &k, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);

  for (int i = 0; i < 4; i++) { /* the room came back */
    ck_assert_uint_eq(wait_job(&c, more[i], COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  }
  ck_assert_uint_eq(wait_job(&c, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.nbuf, 1);
  ck_assert_uint_eq(c.m.result.bufs[0].len, N * N * sizeof(float));
  static float got[N * N]; /* the wire's bytes need not be aligned for floats */
  memcpy(got, c.m.result.bufs[0].data, sizeof got);
  for (int i = 0; i < N * N; i++) ck_assert_float_eq(got[i], (float)N);

  buf_create_raw(&c, 700u << 10);
  r = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(r, 0);
  ck_assert_uint_eq(wait_job(&c, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_ENOMEM);
  assert_has(c.m.result.message, "arena_mb");
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A coopd with a 1 MiB arena whose running sweep holds 600 KiB of it, and
 * a render (n = 200: 469 KiB of buffers) that waits for the room; *sweep
 * and *r their ids. */
static void room_taken(struct daemon_proc *d, const char *const *sets, struct conn *c,
                       uint64_t *sweep, uint64_t *r) {
  daemon_start(d, sets);
  open_hello(c, d);
  int fd = memfd_of(600u << 10);
  *sweep = sweep_submit(c, NULL, (600u << 10) / 4, 100000000u, 1, fd);
  ck_assert_uint_ne(*sweep, 0);
  close(fd);
  wait_running(c, *sweep);
  enum { N = 200 };
  static float a[N * N];
  union coop_msg m;
  render_init_n(&m, 1, a, a, N);
  ck_assert_uint_ne(*r = submit(c, &m, NULL, 0), 0);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(c, *r, "waiting for room", said, sizeof said);
}

/* A stop (SIGTERM) while a job waits for room in the arena: it is
 * CANCELLED at once, not kept for the room, and coopd exits 0 within the
 * running sweep's grace (docs/daemon.md, "Room in the arena"). */
START_TEST(a_stop_cancels_a_job_waiting_for_room) {
  const char *sets[] = {"device.arena_mb=1", "jobs.grace_ms=300", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint64_t sweep, r;
  room_taken(&d, sets, &c, &sweep, &r);
  int64_t t0 = now_ms();
  kill(d.pid, SIGTERM);
  uint16_t t = wait_job(&c, r, COOP_WAIT_FOREVER); /* its end, or the shutdown */
  ck_assert(t == COOP_MSG_RESULT || t == COOP_MSG_ERROR || t == 0);
  if (t == COOP_MSG_RESULT) ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  ck_assert_int_eq(daemon_wait(&d, 0), 0);
  ck_assert_int_lt(now_ms() - t0, 8000);
  conn_close(&c);
}
END_TEST

/* A kernel reload (in place: the sweep suspended, carried and resumed)
 * while a job waits for room: the job keeps waiting through it, and runs
 * once the sweep ends. */
START_TEST(a_reload_keeps_a_job_waiting_for_room) {
  const char *sets[] = {"device.arena_mb=1", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint64_t sweep, r;
  room_taken(&d, sets, &c, &sweep, &r);
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, r, "waiting for room", said, sizeof said);
  ck_assert_uint_eq(job_state(&c, sweep), COOP_JOB_RUNNING);
  union coop_msg k;
  memset(&k, 0, sizeof k);
  k.job.job = sweep;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &k, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&c, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* src's whole text into dst, with the first `from` replaced by `to` (NULL:
 * as it is). */
static void copy_kernel(const char *src, const char *dst, const char *from, const char *to) {
  static char text[1 << 16];
  FILE *f = fopen(src, "rb");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = from ? strstr(text, from) : NULL;
  ck_assert(!from || at);
  FILE *o = fopen(dst, "wb");
  ck_assert_ptr_nonnull(o);
  if (at) {
    fwrite(text, 1, (size_t)(at - text), o);
    fputs(to, o);
    fputs(at + strlen(from), o);
  } else {
    fputs(text, o);
  }
  fclose(o);
}

/* A reload while jobs wait, for room or a slot (their arguments checked
 * against the old set): one whose kernel the new set removed fails ENOKERNEL, one
 * whose kernel changed its signature EARGS, when they come to start;
 * neither runs the new kernel on the old arguments. The running sweep,
 * its kernel removed, is cancelled (docs/daemon.md, "Kernel reload"). */
START_TEST(a_reload_refuses_queued_jobs_whose_kernel_changed) {
  char kd[] = "/tmp/coopd-kdir-XXXXXX", path[64], dirs[64];
  ck_assert_ptr_nonnull(mkdtemp(kd));
  snprintf(path, sizeof path, "%s/render.cl", kd);
  copy_kernel(KERNEL_DIR "/render.cl", path, NULL, NULL);
  snprintf(path, sizeof path, "%s/sweep.cl", kd);
  copy_kernel(KERNEL_DIR "/sweep.cl", path, NULL, NULL);
  snprintf(dirs, sizeof dirs, "kernels.dirs=%s", kd);
  const char *sets[] = {"device.arena_mb=1", dirs, NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint64_t sweep, r;
  room_taken(&d, sets, &c, &sweep, &r); /* the sweep holds 600 KiB, the render waits */
  int fd = memfd_of(500u << 10);
  uint64_t s2 = sweep_submit(&c, NULL, (500u << 10) / 4, 10, 1, fd);
  close(fd);
  ck_assert_uint_ne(s2, 0);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, s2, "is queued, waiting for", said, sizeof said); /* a slot: the sweep's */
  ck_assert_msg(strstr(said, "is queued, waiting for"), "%s", said);
  /* the new set: no sweep, a render with one argument more */
  ck_assert_int_eq(unlink(path), 0);
  snprintf(path, sizeof path, "%s/render.cl", kd);
  copy_kernel(KERNEL_DIR "/render.cl", path, "reps:u32", "reps:u32,spare:u32");
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0)), COOP_MSG_KERNEL_DONE);
  ck_assert_msg(c.m.kernel_done.error == 0, "reload: %.*s", (int)c.m.kernel_done.log_len,
                (const char *)c.m.kernel_done.log);
  ck_assert_uint_eq(wait_job(&c, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.error, COOP_EARGS);
  assert_has(c.m.result.message, "kernel render changed its signature in a reload");
  ck_assert_uint_eq(wait_job(&c, s2, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.error, COOP_ENOKERNEL);
  assert_has(c.m.result.message, "kernel sweep is gone");
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  snprintf(path, sizeof path, "%s/render.cl", kd);
  unlink(path);
  rmdir(kd);
}
END_TEST

/* ---- crash and restart (daemon/journal.h) ---- */

/* The error a request about a job gets (STATUS, WAIT or CANCEL). */
static int job_request_error(struct conn *c, uint16_t type, uint64_t job) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  m.job.timeout_ms = 1000;
  if (reply(c, send_msg(c, type, &m, NULL, 0)) != COOP_MSG_ERROR) return 0;
  return c->m.error.code;
}

/* STATUS, WAIT and CANCEL of the job *arg as another user: their errors. */
static void ask_lost(struct conn *c, const void *arg, void *out) {
  uint64_t job = *(const uint64_t *)arg;
  int *codes = out;
  codes[0] = job_request_error(c, COOP_MSG_STATUS, job);
  codes[1] = job_request_error(c, COOP_MSG_WAIT, job);
  codes[2] = job_request_error(c, COOP_MSG_CANCEL, job);
}

/* coopd killed with jobs in flight: a waiting client hears EOF at once, not
 * a hang; the next coopd removes the stale socket, answers ELOST for those
 * jobs (remembered across a further clean restart) to their user only
 * (another user's STATUS, WAIT, CANCEL: ENOJOB, as for any id it cannot
 * see), and never reuses ids. Its journal is its own: mode 0600. */
START_TEST(crash_then_restart) {
  struct daemon_proc d;
  daemon_start(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  render_check(&c, 1, 0, 0);
  uint64_t done = c.m.result.job;
  uint32_t data[256] = {0};
  uint64_t sj = sweep_submit(&c, data, 256, 100000000, w, -1);
  ck_assert_uint_ne(sj, 0);
  wait_running(&c, sj);
  uint32_t seq = wait_send(&c, sj, COOP_WAIT_FOREVER);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kill(d.pid, SIGKILL);
  ck_assert_uint_eq(reply(&c, seq), 0); /* EOF */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5);
  conn_close(&c);
  int st;
  ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
  char journal[sizeof d.sock + 8];
  snprintf(journal, sizeof journal, "%s.jobs", d.sock);
  struct stat js;
  ck_assert_int_eq(stat(journal, &js), 0);
  ck_assert_msg((js.st_mode & 07777) == 0600, "the journal's mode is %o", js.st_mode & 07777);

  for (int round = 0; round < 2; round++) { /* after the crash, then after a clean stop */
    daemon_spawn(&d, NULL);
    conn_reconnect(&c, &d);
    ck_assert_int_eq(job_request_error(&c, COOP_MSG_STATUS, sj), COOP_ELOST);
    /* coop_strerror's words first, so coopctl says them once */
    ck_assert_msg(!strncmp(c.m.error.message, "the job was lost: job ", 22), "%s",
                  c.m.error.message);
    assert_has(c.m.error.message, "(sweep): an earlier coopd stopped");
    ck_assert_int_eq(job_request_error(&c, COOP_MSG_WAIT, sj), COOP_ELOST);
    ck_assert_int_eq(job_request_error(&c, COOP_MSG_CANCEL, sj), COOP_ELOST);
    int theirs[3] = {0};
    daemon_open_to_all(&d);
    ck_assert_int_eq(as_user(&d, 65534, ask_lost, &sj, theirs, sizeof theirs), 0);
    for (int i = 0; i < 3; i++)
      ck_assert_msg(theirs[i] == COOP_ENOJOB, "another user's request %d: %d", i, theirs[i]);
    ck_assert_int_eq(job_request_error(&c, COOP_MSG_STATUS, done), COOP_ENOJOB);
    uint64_t next = render_submit(&c, 1);
    ck_assert_uint_gt(next, sj); /* ids continue */
    ck_assert_uint_eq(wait_job(&c, next, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
    conn_close(&c);
    if (round == 0) {
      kill(d.pid, SIGTERM);
      ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
      ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
  }
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* ---- restarts that a user's job caused ---- */

/* A render of reps repetitions on one workgroup, submitted. */
static uint64_t render_reps(struct conn *c, uint32_t reps) {
  union coop_msg m;
  render_init(&m, 1);
  m.submit.args[4].bits = reps;
  return submit(c, &m, NULL, 0);
}

/* coopd with the test kernels, hang_ms 300, restart_hold_ms as hold (its
 * log at d->log, info), open to every user; c connected as root, with at
 * least two workers. */
static void restart_daemon(struct daemon_proc *d, struct conn *c, const char *hold) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR,
                        "jobs.hang_ms=300",
                        "jobs.task_max_ms=0",
                        hold,
                        "log.level=info",
                        NULL};
  daemon_start_log(d, sets);
  daemon_open_to_all(d);
  open_hello(c, d);
  ck_assert_uint_ge(c->m.welcome.workers, 2);
}

/* The reps of a render that runs about `seconds` on one workgroup: reps
 * doubled until one run executes 100 ms on the device (its exec time, not
 * the round trip), then scaled. */
static uint32_t render_reps_for_s(struct conn *c, double seconds) {
  uint32_t reps = 256;
  int64_t took = 0;
  for (; reps < (1u << 30); reps *= 2) {
    uint64_t cal = render_reps(c, reps);
    ck_assert_uint_eq(wait_job(c, cal, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_uint_eq(c->m.result.state, COOP_JOB_DONE);
    if ((took = c->m.result.t.exec_ns) >= 100000000) break;
  }
  return (uint32_t)((double)reps * seconds * 1e9 / (double)(took > 0 ? took : 1));
}

/* The victim's render v ended DONE, its product right (its log at logp
 * printed if not). */
static void victim_right(struct conn *c, uint64_t v, const char *logp, const char *what) {
  ck_assert_uint_eq(wait_job(c, v, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c->m.result.state != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(c->m.result.state == COOP_JOB_DONE, "%s: %s %s", what,
                coop_job_state_name(c->m.result.state), c->m.result.message);
  float a[RN * RN], b[RN * RN], want[RN * RN], got[RN * RN];
  render_inputs(a, b);
  matmul_ref(a, b, want);
  ck_assert_uint_eq(c->m.result.bufs[0].len, sizeof got);
  memcpy(got, c->m.result.bufs[0].data, sizeof got);
  for (int i = 0; i < RN * RN; i++) ck_assert_float_eq_tol(got[i], want[i], 1e-3f);
}

/* Fork: uid 65534 connects, submits the hog on one workgroup and waits for
 * it to run; returns once it runs, the child keeping the connection (and
 * so the job) until killed: its job is then cancelled, which the hog never
 * notices. The child's pid. */
static pid_t hog_as_nobody(struct daemon_proc *d) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    close(pfd[0]);
    if (setgid(65534) || setuid(65534)) _exit(3);
    struct conn a;
    open_hello(&a, d);
    union coop_msg m;
    submit_init(&m, "hog", 1, 0);
    arg_buf(&m.submit, COOP_BUF_OUT, NULL, 4, COOP_WIRE_FD_NONE);
    arg_u32(&m.submit, 0xffffffffu);
    uint64_t x = submit(&a, &m, NULL, 0);
    if (!x) _exit(4);
    wait_running(&a, x);
    if (write(pfd[1], &x, sizeof x) != sizeof x) _exit(5);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  uint64_t x = 0;
  ssize_t n = read(pfd[0], &x, sizeof x);
  close(pfd[0]);
  ck_assert_msg(n == (ssize_t)sizeof x, "the hog's client failed");
  return kid;
}

/* A job of another user that makes the device restart costs a victim's
 * render nothing: its buffers were only inputs and outputs, so it runs
 * again from the start and its result is right (the old coopd failed it
 * with ELOST). The user who caused the restart is held back: its next job
 * waits (QUEUED) for a second, the watchdog's event says so, then runs. */
START_TEST(restart_reruns_victims_and_holds_the_culprit) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-hold-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  struct conn c;
  restart_daemon(&d, &c, "jobs.restart_hold_ms=5000");
  uint32_t reps = render_reps_for_s(&c, 4); /* the victim: a render of about 4 s */
  pid_t hog = hog_as_nobody(&d);
  uint64_t v = render_reps(&c, reps);
  ck_assert_uint_ne(v, 0);
  wait_running(&c, v);
  kill(hog, SIGKILL); /* its job cancelled: the device restarts hang_ms later */
  waitpid(hog, NULL, 0);
  struct coop_msg_stats_reply st = stats(&c);
  for (int i = 0; i < 400 && !strstr(st.watchdog, "held back"); i++, msleep(25)) st = stats(&c);
  ck_assert_uint_eq(st.hung, 1);
  assert_has(st.watchdog, "uid 65534 held back 5000 ms");
  /* a third user's STATS: the event without the culprit's job, kernel or
   * uid (root and the culprit read all of it) */
  pid_t third = fork();
  ck_assert_int_ge(third, 0);
  if (third == 0) {
    if (setgid(65533) || setuid(65533)) _exit(3);
    struct conn t;
    open_hello(&t, &d);
    struct coop_msg_stats_reply ts = stats(&t);
    if (strstr(ts.watchdog, "hog") || strstr(ts.watchdog, "65534")) _exit(4);
    if (!strstr(ts.watchdog, "another user's job still ran after its cancellation")) _exit(5);
    _exit(0);
  }
  int tst = 0;
  ck_assert_int_eq(waitpid(third, &tst, 0), third);
  ck_assert_msg(WIFEXITED(tst) && WEXITSTATUS(tst) == 0,
                "a third user's STATS named the culprit's job or missed the event (%d)", tst);

  /* the culprit's next job waits out its hold (5 s), root's does not */
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(3);
    struct conn o;
    open_hello(&o, &d);
    uint64_t j = render_reps(&o, 1);
    if (!j) _exit(4);
    msleep(500);
    int64_t out[2] = {job_state(&o, j), -1};
    if (wait_job(&o, j, COOP_WAIT_FOREVER) == COOP_MSG_RESULT)
      out[1] = o.m.result.state == COOP_JOB_DONE;
    if (write(pfd[1], out, sizeof out) != sizeof out) _exit(6);
    _exit(0);
  }
  render_check(&c, 1, 0, 0);
  int64_t out[2];
  ck_assert_int_eq(read(pfd[0], out, sizeof out), (ssize_t)sizeof out);
  waitpid(kid, NULL, 0);
  close(pfd[0]), close(pfd[1]);
  ck_assert_int_eq(out[0], COOP_JOB_QUEUED);
  ck_assert_msg(out[1] == 1, "the held job did not run");

  /* the victim ran again from the start, and its result is right */
  victim_right(&c, v, logp, "the victim");
  if (!log_has(logp, "1 to run again")) log_print(logp);
  ck_assert(log_has(logp, "1 to run again"));
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* Three restarts in a row, each another user's hog's (cancelled, it ran
 * on): the victim's render runs again after each and ends right. A job may
 * be run again only DEV_MAX_RERUNS (2) times, a bound for a job that
 * crashes its device itself; it was charged for every restart, so the
 * third another user caused failed the victim with ELOST. */
START_TEST(restarts_others_cause_cost_a_victim_nothing) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-thrice-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  struct conn c;
  restart_daemon(&d, &c, "jobs.restart_hold_ms=0");
  /* about 4 s, as the victim above: each restart runs it again, and a
   * round (the hog's start, its kill, the restart) on a loaded machine
   * outlasted a 2 s one, which ended before the next round saw it run */
  uint64_t v = render_reps(&c, render_reps_for_s(&c, 4));
  ck_assert_uint_ne(v, 0);
  for (unsigned k = 1; k <= 3; k++) {
    pid_t hog = hog_as_nobody(&d);
    wait_running(&c, v);
    kill(hog, SIGKILL); /* its job cancelled: the device restarts hang_ms later */
    waitpid(hog, NULL, 0);
    struct coop_msg_stats_reply st = stats(&c);
    for (int i = 0; i < 800 && st.hung < k; i++, msleep(25)) st = stats(&c);
    ck_assert_uint_eq(st.hung, k);
  }
  victim_right(&c, v, logp, "the victim after three restarts");
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* A reload whose drain ends in a restart (a hog that ignores its
 * cancellation) brings the device back with the reload's new kernel set,
 * not with the old set built again and then swapped out: the log says so,
 * the reload ends, and the new kernel runs. The old coopd rebuilt and
 * relaunched the old set first (seconds more, with the device's workers
 * reported lost meanwhile). Built in a new device process ([kernels]
 * reload_in_place = no), the device comes back with that one; built in
 * place, the set is built again into the process that replaces the one
 * killed, and the swap only adopts it. */
static void restart_during_a_reload(int in_place) {
  char kdir[64] = "/tmp/coopd-kernels-XXXXXX", set[160], logp[128];
  kernels_dir_make(kdir);
  snprintf(set, sizeof set, "kernels.dirs=%s:%s", kdir, TEST_KERNEL_DIR);
  snprintf(logp, sizeof logp, "%s/coopd.log", kdir);
  const char *sets[] = {set,
                        "jobs.grace_ms=300",
                        "jobs.hang_ms=300",
                        "jobs.task_max_ms=0",
                        "log.level=info",
                        in_place ? "kernels.reload_in_place=yes" : "kernels.reload_in_place=no",
                        NULL};
  /* in place, the set built in the process the restart kills is built
   * again into the new one */
  const char *says = in_place ? "the reload's new kernel set is built into the new device process"
                              : "the reload's new megakernel replaces the one killed";
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  submit_init(&m, "hog", 1, 0);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, 4, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 0xffffffffu); /* hours, and deaf to its cancellation */
  uint64_t x = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(x, 0);
  wait_running(&c, x);
  char extra[160];
  snprintf(extra, sizeof extra, "%s/extra.cl", kdir);
  file_write(extra,
             "//@coop name=extra kind=noncooperative args=buf\n"
             "void extra(struct coop_ctx *c) {\n"
             "  COOP_GLOBAL coop_u32 *o = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);\n"
             "  if (coop_local_id_c(c) == 0u) o[coop_group_id(c)] = 7u + coop_group_id(c);\n"
             "}\n");
  kill(d.pid, SIGHUP);
  int done = 0;
  for (int i = 0; i < 2400 && !done; i++, msleep(50)) done = log_has(logp, "reload: done");
  if (!done || !log_has(logp, says)) log_print(logp);
  ck_assert_msg(done, "the reload did not end");
  ck_assert_msg(log_has(logp, says), "the log does not say: %s", says);
  ck_assert_uint_eq(wait_job(&c, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.error, COOP_EHUNG);
  ck_assert(has_kernel(&c, "extra"));
  submit_init(&m, "extra", 2, 0);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, 8, COOP_WIRE_FD_NONE);
  uint64_t job = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(job, 0);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  uint32_t o[2];
  memcpy(o, c.m.result.bufs[0].data, sizeof o);
  ck_assert_uint_eq(o[0], 7);
  ck_assert_uint_eq(o[1], 8);
  render_check(&c, 1, 0, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(extra), unlink(logp);
  kernels_dir_remove(kdir);
}

START_TEST(restart_during_a_reload_takes_the_new_kernels) { restart_during_a_reload(1); }
END_TEST

START_TEST(restart_during_a_reload_of_a_new_process_takes_it) { restart_during_a_reload(0); }
END_TEST

/* A coopd on d, its log at logp (made here), whose device process is armed
 * from the start with COOP_TEST_DIE_AT="WHAT:PATH" (what: "OP:N", as
 * devproc_child.c reads it), PATH written into mark (64 bytes): the log's
 * name + ".done", its ".arm" made; spin_any: with COOP_TEST_SPIN_ANY too. */
static void start_armed(const char *what, int spin_any, struct daemon_proc *d, char *logp,
                        char *mark) {
  char arm[80], env[128];
  log_temp(logp);
  snprintf(mark, 64, "%s.done", logp);
  snprintf(arm, sizeof arm, "%s.arm", mark);
  unlink(mark);
  FILE *a = fopen(arm, "w"); /* armed from the start */
  ck_assert_ptr_nonnull(a);
  fclose(a);
  snprintf(env, sizeof env, "%s:%s", what, mark);
  ck_assert_int_eq(setenv("COOP_TEST_DIE_AT", env, 1), 0);
  if (spin_any) ck_assert_int_eq(setenv("COOP_TEST_SPIN_ANY", "1", 1), 0);
  const char *sets[] = {"log.level=info", NULL};
  d->log = logp;
  daemon_start_log(d, sets);
  unsetenv("COOP_TEST_DIE_AT");
  unsetenv("COOP_TEST_SPIN_ANY");
}

/* start_armed's files gone: mark, its .arm, the log. */
static void forget_armed(const char *logp, const char *mark) {
  char arm[80];
  snprintf(arm, sizeof arm, "%s.arm", mark);
  unlink(mark);
  unlink(arm);
  unlink(logp);
}

/* The device process is lost inside its first request of OP
 * (COOP_TEST_DIE_AT, armed from the start): "submit", "stage" and
 * "unstage", it dies as the request arrives; "~submit", it garbles the reply, writing
 * through the shared channel a length past the reply, as a corrupted
 * process might, which coopd must refuse before it reads past. Each time
 * coopd restarts it and the render, whose buffers are only inputs and
 * outputs, runs again and ends right (before, a loss inside the submit,
 * which carries a short task's whole run, failed the job with "could not
 * submit: the job was lost", one while staged with "the device process
 * died while the job was staged", and one while its results were copied
 * back, "unstage", with "could not write a result back"); the device
 * serves on. said: in
 * the log; again: the restart's count of what runs again. */
static void lost_at(const char *op, const char *said, const char *again) {
  char logp[] = "/tmp/coopd-lostat-XXXXXX.log", mark[64], what[32];
  snprintf(what, sizeof what, "%s:1", op);
  struct daemon_proc d;
  start_armed(what, 0, &d, logp, mark);
  struct conn c;
  open_hello(&c, &d);
  render_check(&c, 1, 0, 0); /* DONE, every pixel right */
  if (access(mark, F_OK) || !log_has(logp, said) || !log_has(logp, again)) log_print(logp);
  ck_assert_msg(access(mark, F_OK) == 0, "the device process was never lost at %s", op);
  ck_assert_msg(log_has(logp, said), "no \"%s\" in the log", said);
  ck_assert_msg(log_has(logp, again), "no \"%s\" in the log", again);
  render_check(&c, 1, 0, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  forget_armed(logp, mark);
}

START_TEST(a_death_inside_a_submit_runs_the_task_again) {
  lost_at("submit", "killed by signal 9", "restarting it (0 other jobs lost, 1 to run again");
}
END_TEST

START_TEST(a_death_while_staged_runs_the_job_again) {
  lost_at("stage", "killed by signal 9", "restarting it (0 other jobs lost, 0 to run again");
}
END_TEST

START_TEST(a_death_inside_an_unstage_runs_the_job_again) {
  lost_at("unstage", "killed by signal 9", "restarting it (0 other jobs lost, 1 to run again");
}
END_TEST

START_TEST(a_garbled_shared_channel_costs_a_restart) {
  lost_at("~submit", "sent a malformed reply (its length past the shared channel)",
          "restarting it (0 other jobs lost, 1 to run again");
}
END_TEST

/* A waiting request's reply read without its doorbell (docs/daemon.md,
 * "Spinning"): with every spin on, as on a GPU (COOP_TEST_SPIN_ANY), the
 * device process (COOP_TEST_DIE_AT="!OP:N:PATH") holds its replies to OP
 * from the Nth on 3 ms (its own wake late) and writes the first of them
 * that finds the front asleep without ringing it, as if the front's wake
 * came very late too. The front, which spins from 150 us before the wait's
 * budget ends and then looks every 1 ms, rung or not, reads it there.
 * Before, it slept on until DP_CALL_MS (20 s) and killed the device
 * process as stuck. A coopd so armed on d (start_armed: log at logp;
 * mark, the file the drop creates). */
static void start_without_a_bell(const char *op, unsigned nth, struct daemon_proc *d, char *logp,
                                 char *mark) {
  char what[32];
  snprintf(what, sizeof what, "!%s:%u", op, nth);
  start_armed(what, 1, d, logp, mark);
}

/* The end of start_without_a_bell's coopd: the doorbell was dropped, and
 * the device process never taken for stuck. */
static void stop_without_a_bell(struct daemon_proc *d, struct conn *c, char *logp, char *mark) {
  if (access(mark, F_OK) || log_has(logp, "stopped answering")) log_print(logp);
  ck_assert_msg(access(mark, F_OK) == 0, "no reply found the front asleep");
  ck_assert_msg(!log_has(logp, "stopped answering"), "the device process was taken for stuck");
  conn_close(c);
  ck_assert_int_eq(daemon_stop(d), 0);
  forget_armed(logp, mark);
}

/* DP_WAIT: a sweep whose wait lost its doorbell, cancelled a second later,
 * ends CANCELLED within seconds (before: 19 s). */
START_TEST(a_waits_reply_is_read_at_its_budget_without_its_doorbell) {
  char logp[] = "/tmp/coopd-nobell-XXXXXX.log", mark[64];
  struct daemon_proc d;
  start_without_a_bell("wait", 1, &d, logp, mark);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[64];
  uint64_t j = sweep_submit(&c, data, 64, 100000000u, 1, -1);
  ck_assert_uint_ne(j, 0);
  int dropped = 0;
  for (int i = 0; i < 200 && !dropped; i++, msleep(50)) dropped = access(mark, F_OK) == 0;
  ck_assert_msg(dropped, "no DP_WAIT reply found the front asleep in 10 s");
  msleep(1000);
  int64_t t0 = now_ms();
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = j;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&c, j, 30000), COOP_MSG_RESULT);
  int64_t ms = now_ms() - t0;
  ck_assert_msg(c.m.result.state == COOP_JOB_CANCELLED, "%s", c.m.result.message);
  ck_assert_msg(ms <= 10000, "the cancel took %lld ms", (long long)ms);
  render_check(&c, 1, 0, 0);
  stop_without_a_bell(&d, &c, logp, mark);
}
END_TEST

/* DP_SUBMIT that waits for its task's end (a one-task job alone): a render
 * whose submit lost its doorbell ends right within seconds (before: 20 s,
 * and a restart that ran it again). From the second on, when the front
 * expects the render's end from the first: held 3 ms, the reply comes
 * after the front's spin at that end, and the front, asleep again, wakes
 * at the wait's budget's end (once it slept on to DP_CALL_MS there, under
 * ThreadSanitizer). */
START_TEST(a_submits_reply_is_read_at_its_budget_without_its_doorbell) {
  char logp[] = "/tmp/coopd-nobell-XXXXXX.log", mark[64];
  struct daemon_proc d;
  start_without_a_bell("submit", 2, &d, logp, mark);
  struct conn c;
  open_hello(&c, &d);
  int64_t t0 = now_ms();
  for (int i = 0; i < 20 && access(mark, F_OK); i++) render_check(&c, 1, 0, 0);
  int64_t ms = now_ms() - t0;
  ck_assert_msg(ms <= 10000, "the renders took %lld ms", (long long)ms);
  stop_without_a_bell(&d, &c, logp, mark);
}
END_TEST

/* A render waits for room beside a running sweep's 300 KiB and a device
 * buffer of 400 KiB (arena 1 MiB). The buffer's free makes the room: the
 * render runs then, while the sweep still runs. Before, only a run's end
 * tried it again: it waited for the sweep. */
START_TEST(a_buffers_free_makes_room_for_a_waiting_job) {
  const char *sets[] = {"device.arena_mb=1", "device.device_mb=0", NULL}; /* as full_arena */
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint64_t buf = buf_create_raw(&c, 400u << 10);
  int fd = memfd_of(300u << 10);
  uint64_t sweep = sweep_submit(&c, NULL, (300u << 10) / 4, 100000000u, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  wait_running(&c, sweep);
  enum { N = 200 };
  union coop_msg m;
  render_ones(&m, N);
  uint64_t r = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(r, 0);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, r, "waiting for room", said, sizeof said);
  memset(&m, 0, sizeof m);
  m.buf_free.buffer = buf;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_FREE, &m, NULL, 0)), COOP_MSG_OK);
  uint8_t st = state_when_ended(&c, r, 10000);
  ck_assert_msg(st == COOP_JOB_DONE, "the render is %s", coop_job_state_name(st));
  ck_assert_uint_eq(job_state(&c, sweep), COOP_JOB_RUNNING);
  cancel_ok(&c, sweep);
  close(fd);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A client's memfd cut short after its SUBMIT, while the job waits for a
 * cooperative slot (one: another sweep holds it): when the job starts,
 * its buffer cannot be read to its declared size. It fails EIO, saying
 * so; coopd never maps a client's memfd, so nothing dies of SIGBUS. Both
 * sizes: one copy (4 KiB), and one staged in slices (2 MiB). The next
 * job runs. */
START_TEST(a_memfd_cut_short_fails_its_job) {
  const char *sets[] = {"jobs.reserve_percent=100", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[64];
  const uint32_t words[] = {1024, 512u << 10};
  for (int k = 0; k < 2; k++) {
    uint64_t holder = sweep_submit(&c, data, 64, 100000000u, 1, -1);
    ck_assert_uint_ne(holder, 0);
    wait_running(&c, holder);
    int fd = memfd_of(words[k] * 4u);
    uint64_t cut = sweep_submit(&c, NULL, words[k], 1, 1, fd);
    ck_assert_uint_ne(cut, 0);
    ck_assert_uint_eq(job_state(&c, cut), COOP_JOB_QUEUED); /* behind the holder */
    ck_assert_int_eq(ftruncate(fd, 100), 0);
    cancel_ok(&c, holder);
    ck_assert_uint_eq(wait_job(&c, cut, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_FAILED, "%u words: %s %s", words[k],
                  coop_job_state_name(c.m.result.state), c.m.result.message);
    ck_assert_int_eq(c.m.result.error, COOP_EIO);
    assert_has(c.m.result.message, "could not read a buffer's descriptor to its declared size");
    close(fd);
  }
  uint64_t next = sweep_submit(&c, data, 64, 3, 1, -1);
  ck_assert_uint_eq(wait_job(&c, next, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* t: the integration case, after daemon_basics_cases' tests. */
void daemon_faults_cases(Suite *s, TCase *t) {
  tcase_add_test(t, watchdog_names_a_kernel_that_never_yields);
  tcase_add_test(t, stop_kills_a_hung_kernel);
  tcase_add_test(t, watchdog_ms_cancels_a_long_job);
  tcase_add_test(t, full_arena);
  tcase_add_test(t, a_stop_cancels_a_job_waiting_for_room);
  tcase_add_test(t, a_reload_keeps_a_job_waiting_for_room);
  tcase_add_test(t, a_reload_refuses_queued_jobs_whose_kernel_changed);
  tcase_add_test(t, a_memfd_cut_short_fails_its_job);
  tcase_add_test(t, a_buffers_free_makes_room_for_a_waiting_job);
  tcase_add_test(t, crash_then_restart);
  t = tcase_create("restarts");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, restart_reruns_victims_and_holds_the_culprit);
  tcase_add_test(t, restarts_others_cause_cost_a_victim_nothing);
  tcase_add_test(t, restart_during_a_reload_takes_the_new_kernels);
  tcase_add_test(t, restart_during_a_reload_of_a_new_process_takes_it);
  tcase_add_test(t, a_death_inside_a_submit_runs_the_task_again);
  tcase_add_test(t, a_death_while_staged_runs_the_job_again);
  tcase_add_test(t, a_death_inside_an_unstage_runs_the_job_again);
  tcase_add_test(t, a_garbled_shared_channel_costs_a_restart);
  tcase_add_test(t, a_waits_reply_is_read_at_its_budget_without_its_doorbell);
  tcase_add_test(t, a_submits_reply_is_read_at_its_budget_without_its_doorbell);
  suite_add_tcase(s, t);
}
