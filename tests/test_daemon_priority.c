/*
 * test_daemon_priority.c: job priorities and the cooperative jobs they
 * suspend (docs/daemon.md, "Priority"): the bounds a user may ask, a task
 * of higher priority that needs every worker, a cooperative job of higher
 * priority that finds every slot held, and a user above its share of the
 * slots while another user waits. Each suspended job resumes where it
 * stopped, and its result is checked word by word.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* Bounds: above 0 only as far as [limits] allows the uid (by name, uid
 * or group; the highest entry naming it: not another user's, not a group
 * it is not in); anyone lower; outside -100..100 never. */
START_TEST(priority_bounds_are_the_administrators) {
  char users[96];
  snprintf(users, sizeof users, "limits.priority_users=daemon:90, %u:7 @nogroup:50",
           (unsigned)getuid());
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, "limits.max_priority=2",
                        users, NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[64];
  uint64_t ok = sweep_at(&c, data, 64, 0, 10, 0, 1, 7);
  ck_assert_msg(ok != 0, "priority 7 refused: %s", c.m.error.message);
  ck_assert_int_eq(job_status(&c, ok).priority, 7);
  ck_assert_uint_eq(sweep_at(&c, data, 64, 0, 10, 0, 1, 8), 0);
  ck_assert_int_eq(c.m.error.code, COOP_EPERM);
  assert_has(c.m.error.message, "this user may ask at most 7");
  uint64_t low = sweep_at(&c, data, 64, 0, 10, 0, 1, COOP_PRIORITY_MIN);
  ck_assert_msg(low != 0, "priority -100 refused: %s", c.m.error.message);
  ck_assert_uint_eq(sweep_at(&c, data, 64, 0, 10, 0, 1, COOP_PRIORITY_MAX + 1), 0);
  ck_assert_int_eq(c.m.error.code, COOP_EINVAL);
  ck_assert_uint_eq(sweep_at(&c, data, 64, 0, 10, 0, 1, INT32_MIN), 0);
  ck_assert_int_eq(c.m.error.code, COOP_EINVAL);
  ck_assert_uint_eq(wait_job(&c, ok, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(wait_job(&c, low, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A render of priority 5 on every one of c's w workers, done (task i of
 * its test, for the messages). Returns its job, c.m its RESULT. */
static uint64_t render_at_5(struct conn *c, uint32_t w, int i) {
  union coop_msg m;
  render_init(&m, w);
  m.submit.priority = 5;
  uint64_t task = submit(c, &m, NULL, 0);
  ck_assert_msg(task != 0, "task %d refused: %s", i, c->m.error.message);
  ck_assert_uint_eq(wait_job(c, task, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c->m.result.state == COOP_JOB_DONE, "task %d: %s", i, c->m.result.message);
  return task;
}

/* A sweep of priority 0 on every worker of c's coopd (about 3 s, seed
 * `seed`, data[256]), running; then a render of priority 5 on every worker,
 * done. *low: the sweep's job; returns the render's, c.m its RESULT. */
static uint64_t task_beside_sweep(struct conn *c, uint32_t *data, uint32_t seed, uint32_t rounds,
                                  uint64_t *low) {
  uint32_t w = c->m.welcome.workers;
  ck_assert_uint_ge(w, 2);
  *low = sweep_at(c, data, 256, seed, rounds, kticks_10ms(c, w), w, 0);
  ck_assert_uint_ne(*low, 0);
  wait_running(c, *low);
  return render_at_5(c, w, 0);
}

/* A coopd for the tests below, never parked (a park's timer would wake
 * the device thread too), logging to logp (made here), on five workgroups;
 * env=val in its environment while it starts (a COOP_TEST_ knob). */
static void start_unparked(struct daemon_proc *d, char *logp, const char *env, const char *val) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "limits.max_priority=10",
                        "device.max_workgroups=5",
                        "device.park_ms=0",
                        "log.level=info",
                        NULL};
  log_temp(logp);
  *d = (struct daemon_proc){.log = logp};
  setenv(env, val, 1);
  daemon_start_log(d, sets);
  unsetenv(env);
}

/* A non-cooperative task of priority 5 that needs every worker, beside a
 * cooperative sweep of priority 0 on every worker: the sweep keeps one
 * workgroup at its barriers, so the task waited until the sweep ended (or
 * its gather budget ran out). Now the sweep is suspended, the task runs at
 * once, and the sweep resumes and ends right. The suspension is asked
 * before the task is submitted (the device thread's log says so): the
 * sweep's workgroups come free while the submit is on its way. Before, it
 * was asked after the submit and the rest of the device thread's pass. */
START_TEST(a_task_of_higher_priority_suspends_a_cooperative_job) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "limits.max_priority=10", "device.max_workgroups=5", "log.level=debug",
                        NULL};
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[256];
  uint32_t rounds = 300; /* about 3 s */
  uint64_t low;
  uint32_t w = c.m.welcome.workers;
  int64_t t0 = now_ms();
  uint64_t task = task_beside_sweep(&c, data, 11, rounds, &low);
  int64_t took = now_ms() - t0, task_end = c.m.result.t.finished;
  fprintf(stderr, "the sweep and the priority task on %u workers beside it: %lld ms\n", w,
          (long long)took);
  sweep_check(&c, low, 256, 11, rounds);
  ck_assert_int_lt(task_end, c.m.result.t.finished); /* not waited for */
  if (!log_has(d.log, "suspending it: job") || !log_has(d.log, "resumed")) {
    log_print(d.log);
    ck_abort_msg("the sweep was not suspended and resumed");
  }
  char submitted[64];
  snprintf(submitted, sizeof submitted, "job %llu (render): task 0 submitted",
           (unsigned long long)task);
  long asked = log_offset(d.log, "suspending it: job"), sent = log_offset(d.log, submitted);
  if (sent < 0 || asked > sent) log_print(d.log);
  ck_assert_int_ge(sent, 0);
  ck_assert_int_lt(asked, sent);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* The same with the device thread's passes 30 s apart when nothing wakes
 * it (COOP_TEST_DEV_WAIT_MS): the sweep must resume as the task ends, not
 * at the next timed pass. Before, a pass that ended the task left the
 * sweep waiting until then (DEV_WAIT_NS, 50 ms; here 30 s), the device
 * idle: a bfs suspended for each frame of a 60 fps client of higher
 * priority resumed 50 ms after each frame. */
START_TEST(a_suspended_job_resumes_as_the_task_ends) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  start_unparked(&d, logp, "COOP_TEST_DEV_WAIT_MS", "30000");
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[256];
  uint32_t rounds = 300; /* about 3 s */
  uint64_t low;
  task_beside_sweep(&c, data, 3, rounds, &low);
  int64_t t0 = now_ms();
  sweep_check(&c, low, 256, 3, rounds);
  int64_t took = now_ms() - t0;
  fprintf(stderr, "the sweep ended %lld ms after the task of priority 5\n", (long long)took);
  if (!log_has(d.log, "resumed") || took >= 15000) log_print(d.log);
  ck_assert_msg(log_has(d.log, "resumed"), "the sweep was not suspended and resumed");
  ck_assert_msg(took < 15000, "the sweep ended %lld ms after the task (its rest: about 3 s)",
                (long long)took);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* A frame loop: render tasks of priority 5 on every worker, one every
 * 300 ms from one connection, beside a sweep of priority 0 on every
 * worker. Once coopd has learned the loop's period (sess_jobs.c), the
 * sweep is suspended ahead of each next task, before it is submitted
 * (the log says "ahead of a task of priority 5"), and resumes after it;
 * every task runs, and the sweep ends right. Before, each task had the
 * sweep suspended only once it came, and waited for the suspension. The
 * window is 60 ms either side here (COOP_TEST_PRE_AHEAD_MS), not 0.5: this
 * loop's frames on a loaded 2-core machine are off their grid by
 * milliseconds, and one that comes before its window is preempted as it
 * comes (the first run of this test met the window once in 12 frames,
 * the third never). */
START_TEST(a_frame_loop_of_higher_priority_suspends_ahead) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  start_unparked(&d, logp, "COOP_TEST_PRE_AHEAD_MS", "60");
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[256];
  uint32_t w = c.m.welcome.workers, rounds = 800; /* about 8 s alone */
  uint64_t low = sweep_at(&c, data, 256, 9, rounds, kticks_10ms(&c, w), w, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  int64_t t0 = now_ms();
  int ahead = 0;
  for (int i = 0; i < 12 && !ahead; i++) {
    int64_t due = t0 + 300 * i, now = now_ms();
    if (due > now) msleep((int)(due - now));
    render_at_5(&c, w, i);
    ahead = log_has(d.log, "ahead of a task of priority 5");
  }
  if (!ahead) log_print(d.log);
  ck_assert_msg(ahead, "the sweep was never suspended ahead of the loop's next task");
  sweep_check(&c, low, 256, 9, rounds);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* Six renders of priority 5 on every worker (w), one every `period` ms on
 * c, and a sweep of priority 0 on every worker (data[256], seed 9, rounds
 * of about 10 ms) submitted on cs `before` ms ahead of the sixth. Returns
 * the sweep's job; *frame_end: when the sixth render finished (its
 * RESULT's times); *frame: its job. */
static uint64_t frames_and_a_sweep(struct conn *c, struct conn *cs, uint32_t *data, uint32_t rounds,
                                   int period, int before, int64_t *frame_end, uint64_t *frame) {
  uint32_t w = c->m.welcome.workers, kt = kticks_10ms(c, w);
  int64_t t0 = now_ms();
  uint64_t low = 0;
  for (int i = 0; i < 6; i++) {
    int64_t due = t0 + (int64_t)period * i, now = now_ms();
    if (i == 5) {
      if (due - before > now) msleep((int)(due - before - now));
      low = sweep_at(cs, data, 256, 9, rounds, kt, w, 0);
      ck_assert_uint_ne(low, 0);
      now = now_ms();
    }
    if (due > now) msleep((int)(due - now));
    *frame = render_at_5(c, w, i);
    *frame_end = c->m.result.t.finished;
  }
  return low;
}

/* A cooperative job submitted inside the window before a frame loop's next
 * task waits for that task: it starts once the task has ended. Before, it
 * started in the window, and was suspended ahead of the task at the
 * window's next pass if it was running by then; on the H200 a bfs job
 * whose buffers were still filling in slices started just as the task
 * came, and the task waited for its suspension (a frame in three beside
 * back-to-back bfs jobs). The window is 100 ms either side here
 * (COOP_TEST_PRE_AHEAD_MS); the sweep comes 50 ms before the sixth task is
 * due, and its first start must come after that task's end. */
START_TEST(a_job_submitted_in_a_frames_window_waits_for_the_frame) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  start_unparked(&d, logp, "COOP_TEST_PRE_AHEAD_MS", "100");
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[256];
  uint32_t rounds = 20;
  int64_t frame_end = 0;
  uint64_t frame = 0, low = frames_and_a_sweep(&c, &c, data, rounds, 300, 50, &frame_end, &frame);
  sweep_check(&c, low, 256, 9, rounds);
  int64_t started = c.m.result.t.started;
  if (started < frame_end) log_print(d.log);
  ck_assert_msg(started >= frame_end,
                "the sweep started %.1f ms before the end of the task whose window it came in",
                (double)(frame_end - started) / 1e6);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* The coopd of the window tests below, and two connections (the frame
 * loop's, a long job's): windows of 200 ms either side of a frame loop's
 * next task (COOP_TEST_PRE_AHEAD_MS; a reply of the device process on a
 * loaded 2-core host may wait up to 180 ms for its clock's refit,
 * megakernel/runtime.c, coop_rt_refit), and the device thread's passes 30
 * s apart when nothing wakes it (COOP_TEST_DEV_WAIT_MS), so that a wait
 * that overran a window's start lasts until the task comes. */
static void start_windows(struct daemon_proc *d, char *logp, struct conn *c, struct conn *c2) {
  setenv("COOP_TEST_DEV_WAIT_MS", "30000", 1);
  start_unparked(d, logp, "COOP_TEST_PRE_AHEAD_MS", "200");
  unsetenv("COOP_TEST_DEV_WAIT_MS");
  open_hello(c, d);
  open_hello(c2, d);
}

/* A cooperative job that starts alone on the device between two tasks of
 * a frame loop, before the next one's window: the device thread waits for
 * its end inside its submit, and that wait now ends at the window's
 * start, so the job is suspended ahead of the task, not as it comes.
 * Before, the wait ran on to the task's own submit, which then suspended
 * it ("job N of priority 5 needs") and waited for that (on an H200 a frame
 * in three beside back-to-back bfs jobs). Frames 600 ms apart in
 * start_windows' coopd (with 20 ms windows the window's start was missed
 * once in CI); the sweep (about 400 ms) comes 235 ms before the sixth task
 * is due, from a connection of its own, as a long job's client. */
START_TEST(a_job_started_between_frames_is_suspended_ahead_of_the_next) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  struct conn c, c2;
  start_windows(&d, logp, &c, &c2);
  static uint32_t data[256];
  uint32_t rounds = 40;
  int64_t frame_end = 0;
  uint64_t frame = 0, low = frames_and_a_sweep(&c, &c2, data, rounds, 600, 235, &frame_end, &frame);
  char needs[96];
  snprintf(needs, sizeof needs, "job %llu of priority 5 needs", (unsigned long long)frame);
  int late = log_has(d.log, needs);
  if (late) log_print(d.log);
  ck_assert_msg(!late, "the sweep was suspended only as the task came, not ahead of it");
  sweep_check(&c2, low, 256, 9, rounds);
  conn_close(&c2);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* Two frame loops: one of priority 5 on every worker (frames 600 ms
 * apart), another client's of priority 0 on one workgroup between them
 * (300 ms later each time), beside a sweep of priority 0 on every worker.
 * The device kept one window of suspension ahead: each loop's frame, as it
 * ended, replaced the other's window before it opened, so the loop of
 * priority 5 never had one, and each of its tasks had the sweep suspended
 * only as it came ("job N of priority 5 needs"). Now each loop (a client's
 * uid and process) keeps its own: of the last four frames of priority 5,
 * at most one had to ask as it came. */
START_TEST(a_lower_frame_loop_leaves_a_higher_ones_window) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  struct conn c, c2;
  start_windows(&d, logp, &c, &c2);
  static uint32_t data[256];
  uint32_t w = c.m.welcome.workers;
  uint64_t low = sweep_at(&c2, data, 256, 9, 100000000u, kticks_10ms(&c, w), w, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  enum { N = 9, PERIOD = 600 };
  int64_t t0 = now_ms() + 100;
  pid_t kid = loop_child(&d, t0 + PERIOD / 2, PERIOD, N);
  uint64_t frame[N];
  for (int i = 0; i < N; i++) {
    int64_t due = t0 + (int64_t)PERIOD * i, now = now_ms();
    if (due > now) msleep((int)(due - now));
    frame[i] = render_at_5(&c, w, i);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(kid, &status, 0), kid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the loop of priority 0 failed");
  int asked = 0;
  for (int i = N - 4; i < N; i++) {
    char needs[96];
    snprintf(needs, sizeof needs, "job %llu of priority 5 needs", (unsigned long long)frame[i]);
    asked += log_has(d.log, needs);
  }
  if (asked > 1) log_print(d.log);
  ck_assert_msg(asked <= 1,
                "%d of the last 4 frames of priority 5 had the sweep suspended as they came",
                asked);
  cancel_ok(&c2, low);
  ck_assert_uint_eq(wait_job(&c2, low, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  conn_close(&c2);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* A slowsweep of priority 0 on `groups` workers whose data (data[0..256)
 * = 9 + i) is the start of a memfd of `bytes`: over 1 MiB, the job's
 * buffer fills in slices before its first start (dev_stage.c). */
static uint64_t big_sweep(struct conn *c, int fd, size_t bytes, uint32_t rounds, uint32_t kticks,
                          uint32_t groups) {
  uint32_t init[256];
  for (uint32_t i = 0; i < 256; i++) init[i] = 9 + i;
  ck_assert_int_eq(pwrite(fd, init, sizeof init, 0), (ssize_t)sizeof init);
  union coop_msg m;
  submit_init(&m, "slowsweep", groups, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, NULL, bytes, 0);
  arg_u32(&m.submit, 256);
  arg_u32(&m.submit, rounds);
  arg_u32(&m.submit, kticks);
  return submit(c, &m, &fd, 1);
}

/* A cooperative job whose buffer was still filling in slices when a frame
 * loop's window opened waits for that frame (above) and starts in the
 * pass that sees the frame end. That pass had set its wake before the
 * frame's end armed the next windows, and the job's submit (a one-task
 * job alone on the device waits for its end inside it) waited up to that
 * stale wake: with passes 30 s apart (start_windows), until
 * the next frame's own submit, which then had the job suspended as it came
 * ("job N of priority 5 needs"); on an H200 a frame in ten beside
 * back-to-back bfs jobs. Now the submit's wait ends at the next window's
 * start, and the job is suspended ahead of the next frame. Frames 600 ms
 * apart in start_windows' coopd; the sweep, 64 MiB in a memfd, comes 205
 * ms before the sixth frame is due, its fill running into that frame's
 * window. */
START_TEST(a_job_started_as_a_frame_ends_is_suspended_ahead_of_the_next) {
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  struct daemon_proc d;
  struct conn c, c2;
  start_windows(&d, logp, &c, &c2);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 100; /* about 1 s */
  size_t bytes = (size_t)64 << 20;
  int fd = memfd_of(bytes);
  uint64_t low = 0, next = 0;
  int64_t t0 = now_ms(), sixth_end = 0;
  for (int i = 0; i < 7; i++) {
    int64_t due = t0 + 600 * i, now = now_ms();
    if (i == 5) {
      if (due - 205 > now) msleep((int)(due - 205 - now));
      low = big_sweep(&c2, fd, bytes, rounds, kt, w);
      ck_assert_msg(low != 0, "the sweep was refused: %s", c2.m.error.message);
      now = now_ms();
    }
    if (due > now) msleep((int)(due - now));
    next = render_at_5(&c, w, i);
    if (i == 5) sixth_end = c.m.result.t.finished;
  }
  char needs[96];
  snprintf(needs, sizeof needs, "job %llu of priority 5 needs", (unsigned long long)next);
  int late = log_has(d.log, needs);
  ck_assert_uint_eq(wait_job(&c2, low, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c2.m.result.state == COOP_JOB_DONE, "the sweep: %s", c2.m.result.message);
  fprintf(stderr, "the sweep started %.1f ms after the sixth frame's end\n",
          (double)(c2.m.result.t.started - sixth_end) / 1e6);
  if (late) log_print(d.log);
  ck_assert_msg(!late, "the sweep was suspended only as the seventh frame came, not ahead of it");
  uint32_t got[256];
  ck_assert_int_eq(pread(fd, got, sizeof got, 0), (ssize_t)sizeof got);
  for (uint32_t i = 0; i < 256; i++) ck_assert_uint_eq(got[i], 9 + i + rounds);
  close(fd);
  conn_close(&c2);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* One cooperative slot, held by a long sweep of priority 0; a sweep of
 * priority 3 comes: the first is suspended (STATUS and WAIT say so), the
 * second runs and ends while the first waits, then the first resumes and
 * ends right. Before, the second waited for the first to end. */
START_TEST(a_cooperative_job_of_higher_priority_takes_the_slot) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "limits.max_priority=10",
                        "jobs.reserve_percent=100",
                        "device.max_workgroups=5",
                        "log.level=info",
                        NULL};
  char logp[] = "/tmp/coopd-priority-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 300; /* about 3 s */
  static uint32_t a[256], b[256];
  uint64_t low = sweep_at(&c, a, 256, 5, rounds, kt, w, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  uint64_t high = sweep_at(&c, b, 256, 1000, rounds / 4 + 1, kt, w, 3);
  ck_assert_uint_ne(high, 0);
  if (!seen_suspended(&c, low)) {
    log_print(logp);
    ck_abort_msg("the sweep of priority 0 was never suspended");
  }
  wait_running(&c, high);
  char why[COOP_WIRE_TEXT_MAX];
  wait_says(&c, low, 0, why, sizeof why);
  fprintf(stderr, "low: %s\n", why);
  assert_has(why, "suspended for a job of priority 3");
  ck_assert_int_eq(job_status(&c, low).state, COOP_JOB_RUNNING);
  sweep_check(&c, high, 256, 1000, rounds / 4 + 1);
  int64_t high_end = c.m.result.t.finished;
  sweep_check(&c, low, 256, 5, rounds);
  ck_assert_int_lt(high_end, c.m.result.t.finished); /* not behind the first */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* A child as nobody (uid 65534) with an endless slowsweep on one
 * workgroup, until killed; *job: its id. */
static pid_t nobody_sweep(struct daemon_proc *d, uint64_t *job) {
  static uint32_t data[64];
  union coop_msg m;
  submit_init(&m, "slowsweep", 1, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, data, sizeof data, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 0xffffffffu);
  arg_u32(&m.submit, 0);
  return nobody_submit(d, &m, job);
}

/* Room by priority (docs/daemon.md, "Room in the arena"): a sweep of
 * priority 0 holds 600 KiB of a 1 MiB arena; a render of priority 3 (469
 * KiB) waited for the sweep's end. Now the sweep is suspended and its
 * buffer moved out of the arena: the render ends DONE while the sweep has
 * yet to end, and the sweep, resumed, ends with every round. One user: a
 * priority, not a share. */
START_TEST(a_job_of_higher_priority_gets_room) {
  const char *sets[] = {"device.arena_mb=1", "limits.max_priority=5", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  enum { WORDS = (600u << 10) / 4, N = 200 };
  uint32_t rounds;
  int fd = sweep_memfd(&c, WORDS, 3000, &rounds);
  uint64_t sweep = sweep_submit(&c, NULL, WORDS, rounds, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  wait_running(&c, sweep);
  union coop_msg m;
  render_ones(&m, N);
  m.submit.priority = 3;
  uint64_t r = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(r, 0);
  ck_assert_uint_eq(wait_job(&c, r, 15000), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_lt(job_state(&c, sweep), COOP_JOB_DONE);
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  sweep_memfd_check(fd, WORDS, rounds);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A daemon of four workers (so four cooperative slots), every slot
 * takeable (reserve_percent 0), open to all, with `set` too where not
 * NULL, its log at info in logp (a template) where not NULL, else on
 * stderr; c open as root. */
static void four_slots_log(struct daemon_proc *d, struct conn *c, char *logp, const char *set) {
  const char *sets[6] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                         "jobs.reserve_percent=0", "device.max_workgroups=5"};
  unsigned n = 3;
  if (logp) {
    log_temp(logp);
    sets[n++] = "log.level=info";
  }
  if (set) sets[n++] = set;
  *d = (struct daemon_proc){.log = logp};
  daemon_start_log(d, sets);
  daemon_open_to_all(d);
  open_hello(c, d);
  ck_assert_uint_eq(c->m.welcome.workers, 4);
}

static void four_slots(struct daemon_proc *d, struct conn *c) { four_slots_log(d, c, NULL, NULL); }

/* Endless sweeps on data[from..n-1] into mine[], each running before the
 * next is submitted: what the four-slot tests' first user holds. */
static void endless_sweeps(struct conn *c, uint32_t (*data)[64], uint64_t *mine, int from, int n) {
  for (int i = from; i < n; i++) {
    mine[i] = sweep_at(c, data[i], 64, 0, 0xffffffffu, 0, 1, 0);
    ck_assert_uint_ne(mine[i], 0);
    wait_running(c, mine[i]);
  }
}

/* The end of a test of the four slots: root's three jobs cancelled (each
 * ends CANCELLED), nobody's two children killed, the daemon stopped. */
static void share_end(struct daemon_proc *d, struct conn *c, const uint64_t *mine,
                      const pid_t *kids, int nkids) {
  for (int i = 0; i < 3; i++) {
    cancel_ok(c, mine[i]);
    ck_assert_uint_eq(wait_job(c, mine[i], COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_uint_eq(c->m.result.state, COOP_JOB_CANCELLED);
  }
  for (int i = 0; i < nkids; i++) {
    kill(kids[i], SIGKILL);
    waitpid(kids[i], NULL, 0);
  }
  conn_close(c);
  ck_assert_int_eq(daemon_stop(d), 0);
}

/* A periodic cooperative sweep of one round every 200 ms, 50 of them, on
 * data (64 words), at priority p: the job. */
static uint64_t periodic_sweep(struct conn *c, uint32_t *data, int32_t p) {
  union coop_msg m;
  submit_init(&m, "slowsweep", 1, 1);
  m.submit.priority = p;
  arg_buf(&m.submit, COOP_BUF_INOUT, data, 64 * 4, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 1);
  arg_u32(&m.submit, 0);
  m.submit.period_us = 200000;
  m.submit.count = 50;
  uint64_t job = submit(c, &m, NULL, 0);
  ck_assert_msg(job != 0, "a periodic sweep refused: %s", c->m.error.message);
  return job;
}

/* Four slots; root, alone, takes three (the fourth is kept for a user
 * holding none), nobody takes the fourth. nobody's second job finds every
 * slot held while root holds more than its share (2): root's newest is
 * suspended and nobody's second runs. Before, it waited for one of root's
 * endless sweeps to end. Cancelling the suspended job ends it CANCELLED. */
START_TEST(a_user_above_its_share_is_suspended) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  struct conn c;
  four_slots(&d, &c);
  static uint32_t data[3][64];
  uint64_t mine[3];
  endless_sweeps(&c, data, mine, 0, 3);
  uint64_t t1, t2;
  pid_t k1 = nobody_sweep(&d, &t1);
  wait_running(&c, t1);
  pid_t k2 = nobody_sweep(&d, &t2);
  ck_assert_msg(seen_suspended(&c, mine[2]), "root's newest sweep was never suspended");
  wait_running(&c, t2);
  ck_assert(!job_status(&c, mine[0]).suspended && !job_status(&c, mine[1]).suspended);
  char why[COOP_WIRE_TEXT_MAX];
  wait_says(&c, mine[2], 0, why, sizeof why);
  assert_has(why, "its user held more than its share");
  share_end(&d, &c, mine, (pid_t[]){k1, k2}, 2);
}
END_TEST

/* Four slots again. A periodic cooperative job is never suspended (its
 * instances are not), so the share could not take back the slots a
 * user's periodic sweeps held: root's three (one round every 200 ms, 50
 * of them) held three slots, nobody's sweep took the fourth, and nobody's
 * second waited for a series of root's to end (10 s here; up to [jobs]
 * max_series_ms, an hour). Now a user runs one periodic cooperative job at
 * a time on a device: root's second and third wait, saying why, and both
 * of nobody's sweeps run. */
START_TEST(a_users_periodic_cooperative_jobs_run_one_at_a_time) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  struct conn c;
  four_slots(&d, &c);
  static uint32_t data[3][64];
  uint64_t mine[3];
  for (int i = 0; i < 3; i++) mine[i] = periodic_sweep(&c, data[i], 0);
  wait_running(&c, mine[0]);
  uint64_t t1, t2;
  pid_t k1 = nobody_sweep(&d, &t1);
  wait_running(&c, t1);
  pid_t k2 = nobody_sweep(&d, &t2);
  wait_running(&c, t2);
  ck_assert_uint_eq(job_state(&c, mine[0]), COOP_JOB_RUNNING); /* its series goes on */
  for (int i = 1; i < 3; i++) {
    char why[COOP_WIRE_TEXT_MAX];
    wait_says(&c, mine[i], 0, why, sizeof why);
    assert_has(why, "its user runs a periodic cooperative job here already");
  }
  share_end(&d, &c, mine, (pid_t[]){k1, k2}, 2);
}
END_TEST

/* A periodic cooperative job whose user runs another waits for that one,
 * not for a slot, so nothing is suspended for it. Every slot held (root's
 * periodic sweep and two endless ones, nobody's sweep), root's second
 * periodic sweep came at priority 5: each pass found it blocked and
 * suspended the newest job below 5 for it, whose slot it could not take,
 * and that job took it back, over and over. Now none is suspended, and its
 * WAIT says what it waits for. */
START_TEST(a_periodic_job_waiting_for_its_own_suspends_no_one) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-periodic-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  four_slots_log(&d, &c, logp, "limits.max_priority=5");
  static uint32_t data[4][64];
  uint64_t mine[3];
  mine[0] = periodic_sweep(&c, data[0], 0);
  wait_running(&c, mine[0]);
  endless_sweeps(&c, data, mine, 1, 3);
  uint64_t t1;
  pid_t k1 = nobody_sweep(&d, &t1);
  wait_running(&c, t1);
  uint64_t second = periodic_sweep(&c, data[3], 5);
  msleep(2000);
  int suspended = log_count(logp, "waits for a cooperative slot");
  char why[COOP_WIRE_TEXT_MAX];
  wait_says(&c, second, 0, why, sizeof why);
  assert_has(why, "its user runs a periodic cooperative job here already");
  if (suspended) log_print(logp);
  ck_assert_msg(suspended == 0, "%d suspensions in 2 s for a job that waits for its own",
                suspended);
  cancel_ok(&c, second);
  ck_assert_uint_eq(wait_job(&c, second, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  share_end(&d, &c, mine, &k1, 1);
  unlink(logp);
}
END_TEST

/* The same four slots, root's newest a slowsweep whose rounds each take
 * about 5 s (a step that long: a hostile input to a shipped kernel, or a
 * spinning one): suspended for nobody's second job, it leaves only when
 * its round ends, and while it counted as leaving no other run was
 * suspended for anyone: nobody's job waited for that round. Now a
 * suspension not done 200 ms after it was asked counts for nothing: root's
 * next newest is suspended too, and nobody's second runs within a second. */
START_TEST(a_suspension_that_does_not_land_holds_no_one) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  struct conn c;
  four_slots(&d, &c);
  uint32_t kt = kticks_10ms(&c, 1);
  static uint32_t data[3][64];
  uint64_t mine[3];
  for (int i = 0; i < 3; i++) {
    mine[i] = sweep_at(&c, data[i], 64, 0, i < 2 ? 0xffffffffu : 1, i < 2 ? 0 : 500 * kt, 1, 0);
    ck_assert_uint_ne(mine[i], 0);
    wait_running(&c, mine[i]);
  }
  uint64_t t1, t2;
  pid_t k1 = nobody_sweep(&d, &t1);
  wait_running(&c, t1);
  int64_t t0 = now_ms();
  pid_t k2 = nobody_sweep(&d, &t2);
  uint8_t st = COOP_JOB_QUEUED;
  while (st == COOP_JOB_QUEUED && now_ms() - t0 < 2500) st = job_state(&c, t2), msleep(20);
  int64_t waited = now_ms() - t0;
  ck_assert_msg(st == COOP_JOB_RUNNING && waited < 1000,
                "nobody's second sweep %s after %lld ms (root's newest in a 5 s round)",
                coop_job_state_name(st), (long long)waited);
  ck_assert(job_status(&c, mine[1]).suspended);
  for (int i = 0; i < 3; i++) {
    cancel_ok(&c, mine[i]);
    ck_assert_uint_eq(wait_job(&c, mine[i], COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  }
  kill(k1, SIGKILL), kill(k2, SIGKILL);
  waitpid(k1, NULL, 0), waitpid(k2, NULL, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* nobody's churn (as_user): for 2 s, two endless slowsweeps submitted,
 * the second waited for until it runs (3 s at most), both cancelled; out:
 * the pairs, and the longest wait of a second in ms. */
static void churn_pairs(struct conn *c, const void *arg, void *out) {
  (void)arg;
  static uint32_t data[2][64];
  int n[2] = {0, 0};
  for (int64_t t0 = now_ms(); now_ms() - t0 < 2000; n[0]++) {
    uint64_t j[2];
    for (int i = 0; i < 2; i++)
      if (!(j[i] = sweep_at(c, data[i], 64, 0, 0xffffffffu, 0, 1, 0))) _exit(1);
    int64_t t1 = now_ms();
    while (job_state(c, j[1]) == COOP_JOB_QUEUED && now_ms() - t1 < 3000) msleep(5);
    if (now_ms() - t1 > n[1]) n[1] = (int)(now_ms() - t1);
    for (int i = 0; i < 2; i++) {
      cancel_ok(c, j[i]);
      if (wait_job(c, j[i], COOP_WAIT_FOREVER) != COOP_MSG_RESULT) _exit(1);
    }
  }
  memcpy(out, n, sizeof n);
}

/* Four slots, root's three endless sweeps. nobody loops: two sweeps
 * (its share), the second waited for until it runs, both cancelled. Each
 * pair had root's newest suspended for the share, and it resumed as the
 * pair ended: 2 s of pairs suspended it 52-62 times, each a save, a
 * resume and a step lost to root, at no cost to nobody. Now none of a
 * user's jobs is suspended for a share within DEV_SHARE_GAP_NS (1 s) of
 * one of them resuming (a suspension that does not land in 200 ms may add
 * one): nobody's second waits that long at most. */
START_TEST(share_suspensions_of_a_job_are_a_gap_apart) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-churn-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  four_slots_log(&d, &c, logp, NULL);
  static uint32_t data[3][64];
  uint64_t mine[3];
  endless_sweeps(&c, data, mine, 0, 3);
  int got[2] = {0, 0}; /* pairs, longest wait */
  ck_assert_int_eq(as_user(&d, 65534, churn_pairs, NULL, got, sizeof got), 0);
  int suspended = log_count(logp, "its user holds more than its share");
  if (suspended > 6) log_print(logp);
  ck_assert_msg(suspended >= 1 && suspended <= 6, "%d share suspensions for %d pairs in 2 s",
                suspended, got[0]);
  ck_assert_msg(got[1] < 2500, "nobody's second sweep waited %d ms for its share", got[1]);
  share_end(&d, &c, mine, NULL, 0);
  unlink(logp);
}
END_TEST

void daemon_priority_cases(Suite *s) {
  TCase *t = tcase_create("priority");
  tcase_set_timeout(t, 240);
  tcase_add_test(t, priority_bounds_are_the_administrators);
  tcase_add_test(t, a_task_of_higher_priority_suspends_a_cooperative_job);
  tcase_add_test(t, a_suspended_job_resumes_as_the_task_ends);
  tcase_add_test(t, a_frame_loop_of_higher_priority_suspends_ahead);
  tcase_add_test(t, a_job_submitted_in_a_frames_window_waits_for_the_frame);
  tcase_add_test(t, a_job_started_as_a_frame_ends_is_suspended_ahead_of_the_next);
  tcase_add_test(t, a_job_started_between_frames_is_suspended_ahead_of_the_next);
  tcase_add_test(t, a_lower_frame_loop_leaves_a_higher_ones_window);
  tcase_add_test(t, a_cooperative_job_of_higher_priority_takes_the_slot);
  tcase_add_test(t, a_job_of_higher_priority_gets_room);
  suite_add_tcase(s, t);
  t = tcase_create("priority_share"); /* four workers: POCL_MAX_PTHREAD_COUNT=5 */
  tcase_set_timeout(t, 240);
  tcase_add_test(t, a_user_above_its_share_is_suspended);
  tcase_add_test(t, a_users_periodic_cooperative_jobs_run_one_at_a_time);
  tcase_add_test(t, a_periodic_job_waiting_for_its_own_suspends_no_one);
  tcase_add_test(t, a_suspension_that_does_not_land_holds_no_one);
  tcase_add_test(t, share_suspensions_of_a_job_are_a_gap_apart);
  suite_add_tcase(s, t);
}
