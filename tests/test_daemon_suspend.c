/*
 * test_daemon_suspend.c: cooperative jobs that outlive where they ran
 * (docs/daemon.md, "Checkpoints" and "Moving jobs between devices"): a
 * checkpointed sweep resumes from its last checkpoint after its device
 * process dies, and a sweep moves to another device (by hand, and by
 * itself once suspended while another device is idle). Each result is
 * checked word by word: a resumption that lost or repeated a round shows.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* A sweep of about 3 s (INOUT buffer: the old coopd could not run it again
 * from the start) with checkpoints every 200 ms; its device process is
 * killed after 1 s. The sweep resumes from its last checkpoint in the new
 * device process, ends DONE with every word right, and its RESULT says how
 * much work the restart cost. Before, it failed with ELOST.
 * With a snapshot (the default), the checkpoint's copy to host memory is
 * drained while the sweep runs on, after a copy on the device; the log says
 * both. Before, the sweep was suspended for the whole copy to host memory,
 * as it still is with checkpoint_snapshot_percent = 0. */
static void restart_case(int snapshot) {
  char logp[] = "/tmp/coopd-ckpt-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {
      "kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, "jobs.checkpoint_ms=200",
      "log.level=debug",
      snapshot ? "jobs.checkpoint_snapshot_percent=25" : "jobs.checkpoint_snapshot_percent=0",
      NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 300;
  static uint32_t data[256];
  uint64_t job = sweep_at(&c, data, 256, 7, rounds, kt, w, 0);
  ck_assert_uint_ne(job, 0);
  wait_running(&c, job);
  /* the sweep's own first checkpoint taken (the probe before it may have
   * had some): drained, or, copied while suspended, logged once, done */
  char taken[128];
  snprintf(taken, sizeof taken,
           snapshot ? "job %llu (slowsweep): checkpoint 1: 1024 bytes drained in"
                    : "job %llu (slowsweep): checkpoint 1: suspended",
           (unsigned long long)job);
  for (int i = 0; i < 1000 && !log_has(logp, taken); i++) msleep(10);
  if (!log_has(logp, taken)) {
    log_print(logp);
    ck_abort_msg("no checkpoint within 10 s (no \"%s\" in the log)", taken);
  }
  /* the sweep ran while its snapshot drained: it was off the device only
   * for the copy on it */
  ck_assert_int_eq(log_has(logp, "copied on the device in"), snapshot);
  msleep(300); /* the work after it is lost */
  pid_t dp = device_process(d.pid);
  ck_assert_int_gt(dp, 0);
  ck_assert_int_eq(kill(dp, SIGKILL), 0);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_DONE) log_print(logp);
  sweep_check(&c, job, 256, 7, rounds);
  fprintf(stderr, "after the restart: %s\n", c.m.result.message);
  assert_has(c.m.result.message, "resumed from its last checkpoint after 1 device restart");
  assert_has(c.m.result.message, "ms of work lost");
  if (!log_has(logp, "1 to resume from a checkpoint")) log_print(logp);
  ck_assert(log_has(logp, "1 to resume from a checkpoint"));
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}

START_TEST(a_restart_resumes_from_the_last_checkpoint) { restart_case(1); }
END_TEST

/* The device processes of coopd d killed (both devices'). */
static void kill_device_processes(pid_t coopd) {
  pid_t kids[64];
  char names[64][32];
  unsigned n = children_of(coopd, kids, names, 64);
  for (unsigned i = 0; i < n; i++)
    if (!strcmp(names[i], "coopd-device")) ck_assert_int_eq(kill(kids[i], SIGKILL), 0);
}

/* The device process dies in the middle of a checkpoint, at its Nth
 * request of `op` (COOP_TEST_DIE_AT, devproc_child.c) once the sweep's
 * first checkpoint is taken: while the sweep's state is saved ("saved"),
 * while its buffers are copied on the device ("dup"), while it is resumed
 * ("resume"), or while its snapshot drains ("read"). The sweep resumes
 * from the checkpoint before and ends DONE with every word right. Before,
 * a death while the state was saved or the task resumed failed the job
 * ("could not resume it after a checkpoint"), and its checkpoint was never
 * used. With kill_first, the device process is killed once the checkpoint
 * is taken, and the one that replaces it dies at its Nth `op` instead:
 * the sweep resumes from the checkpoint after two restarts. */
static void die_in_checkpoint(const char *op, unsigned n, int kill_first) {
  char logp[] = "/tmp/coopd-ckdie-XXXXXX.log", mark[64], arm[72], env[128];
  log_temp(logp);
  snprintf(mark, sizeof mark, "%s.died", logp);
  snprintf(arm, sizeof arm, "%s.arm", mark);
  unlink(mark);
  unlink(arm);
  snprintf(env, sizeof env, "%s:%u:%s", op, n, mark);
  ck_assert_int_eq(setenv("COOP_TEST_DIE_AT", env, 1), 0);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "jobs.checkpoint_ms=200", "log.level=debug", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  unsetenv("COOP_TEST_DIE_AT");
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 200;
  static uint32_t data[256];
  uint64_t job = sweep_at(&c, data, 256, 7, rounds, kt, w, 0);
  ck_assert_uint_ne(job, 0);
  char taken[96]; /* the sweep's own first checkpoint, not the probe's */
  snprintf(taken, sizeof taken, "job %llu (slowsweep): checkpoint 1: 1024 bytes drained in",
           (unsigned long long)job);
  for (int i = 0; i < 1000 && !log_has(logp, taken); i++) msleep(10);
  if (!log_has(logp, taken)) log_print(logp);
  ck_assert_msg(log_has(logp, taken), "no \"%s\" in the log", taken);
  if (kill_first) kill_device_processes(d.pid);
  FILE *a = fopen(arm, "w"); /* the device process dies at its next `op` from now */
  ck_assert_ptr_nonnull(a);
  fclose(a);
  /* with kill_first, a render that waits for the successor: taken into
   * its runs before the sweep is resumed there, after the sweep's run */
  union coop_msg m;
  render_ones(&m, 64);
  uint64_t render = kill_first ? submit(&c, &m, NULL, 0) : 0;
  ck_assert(!kill_first || render != 0);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_DONE || access(mark, F_OK)) log_print(logp);
  ck_assert_msg(access(mark, F_OK) == 0, "the device process never died at %s %u", op, n);
  sweep_check(&c, job, 256, 7, rounds);
  assert_has(c.m.result.message, kill_first
                                     ? "resumed from its last checkpoint after 2 device restarts"
                                     : "resumed from its last checkpoint after 1 device restart");
  if (render) { /* run again after the second death, or lost: answered either way */
    ck_assert_uint_eq(wait_job(&c, render, 30000), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_DONE || c.m.result.error == COOP_ELOST, "render: %s",
                  c.m.result.message);
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(mark);
  unlink(arm);
  unlink(logp);
}

/* Snapshots give way: in an arena of 1 MiB a checkpointed sweep of 200
 * KiB holds a snapshot as large; a render of three 225 KiB buffers then
 * finds no room but for the snapshot. It is freed, the render runs, and the
 * sweep's checkpoints go on (copied while suspended while the render holds
 * the room, then into a new snapshot) and it ends right. Before, the
 * render failed with ENOMEM: one user's checkpoints cost another user's
 * job. A device buffer that no arena without the snapshot could hold
 * (900 KiB beside the sweep's 200 KiB) freed it too, for nothing, as
 * often as asked; now it is refused with the snapshot kept. */
START_TEST(a_snapshot_gives_way_to_a_jobs_buffers) {
  char logp[] = "/tmp/coopd-ckevict-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "jobs.checkpoint_ms=200",
                        "device.arena_mb=1",
                        "device.device_mb=0",
                        "limits.max_buffer_percent_per_uid=100",
                        "log.level=debug",
                        NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 250;
  enum { SN = 51200 }; /* 200 KiB */
  static uint32_t data[SN];
  uint64_t job = sweep_at(&c, data, SN, 3, rounds, kt, w, 0);
  ck_assert_uint_ne(job, 0);
  char drained[96]; /* its own first checkpoint's snapshot is there */
  snprintf(drained, sizeof drained, "job %llu (slowsweep): checkpoint 1: %u bytes drained in",
           (unsigned long long)job, (unsigned)sizeof data);
  for (int i = 0; i < 1000 && !log_has(logp, drained); i++) msleep(10);
  if (!log_has(logp, drained)) log_print(logp);
  ck_assert_msg(log_has(logp, drained), "no \"%s\" in the log", drained);
  /* a device buffer no arena without the snapshot could hold (the sweep's
   * 200 KiB copy is there): refused, the snapshot kept */
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = 900u << 10, .fd = COOP_WIRE_FD_NONE};
  uint16_t t = reply(&c, send_msg(&c, COOP_MSG_BUF_CREATE, &m, NULL, 0));
  ck_assert_uint_eq(t, COOP_MSG_ERROR);
  ck_assert_msg(c.m.error.code == COOP_ENOMEM || c.m.error.code == COOP_EBUSY, "%s",
                c.m.error.message); /* EBUSY: "ask again as they end" */
  ck_assert(!log_has(logp, "checkpoint snapshot freed"));
  enum { RN2 = 240 }; /* 3 x 230400 bytes: more than the room left */
  render_ones(&m, RN2);
  uint64_t task = submit(&c, &m, NULL, 0);
  ck_assert_msg(task != 0, "render refused: %s", c.m.error.message);
  ck_assert_uint_eq(wait_job(&c, task, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "render: %s", c.m.result.message);
  ck_assert(log_has(logp, "checkpoint snapshot freed for a job's buffers"));
  sweep_check(&c, job, SN, 3, rounds);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

START_TEST(a_death_while_the_state_is_saved) { die_in_checkpoint("saved", 1, 0); }
END_TEST

START_TEST(a_death_while_the_buffers_are_copied_on_the_device) { die_in_checkpoint("dup", 1, 0); }
END_TEST

START_TEST(a_death_while_the_task_resumes) { die_in_checkpoint("resume", 1, 0); }
END_TEST

START_TEST(a_death_while_the_snapshot_drains) { die_in_checkpoint("read", 1, 0); }
END_TEST

/* One cooperative slot: a checkpointed sweep of priority 0 is suspended
 * for one of priority 3 (until cancelled), and its device process killed
 * 1 s later. It resumes from its last checkpoint, every word right, and
 * its RESULT counts as lost only the work between that checkpoint and its
 * suspension (under 800 ms here: checkpoints 200 ms apart). Before, the
 * whole second it waited suspended counted ("1229 ms of work lost"). */
START_TEST(work_lost_ends_at_the_suspension) {
  char logp[] = "/tmp/coopd-ckpt-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "jobs.checkpoint_ms=200",
                        "limits.max_priority=10",
                        "jobs.reserve_percent=100",
                        "device.max_workgroups=5",
                        "log.level=debug",
                        NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 100;
  static uint32_t a[256], b[256];
  uint64_t low = sweep_at(&c, a, 256, 7, rounds, kt, w, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  char taken[96];
  snprintf(taken, sizeof taken, "job %llu (slowsweep): checkpoint 1:", (unsigned long long)low);
  for (int i = 0; i < 1000 && !log_has(logp, taken); i++) msleep(10);
  ck_assert_msg(log_has(logp, taken), "no checkpoint within 10 s");
  uint64_t high = sweep_at(&c, b, 256, 1000, 1000000, kt, w, 3); /* until cancelled */
  ck_assert_uint_ne(high, 0);
  ck_assert(seen_suspended(&c, low));
  msleep(1000);
  ck_assert_int_eq(kill(device_process(d.pid), SIGKILL), 0);
  ck_assert(seen_suspended(&c, low)); /* back in line, from its checkpoint */
  cancel_ok(&c, high);
  sweep_check(&c, low, 256, 7, rounds);
  const char *m = strstr(c.m.result.message, "restart: ");
  ck_assert_msg(m, "%s", c.m.result.message);
  long lost = atol(m + strlen("restart: "));
  fprintf(stderr, "after a second suspended: %s\n", c.m.result.message);
  ck_assert_msg(lost < 800, "%s", c.m.result.message);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

START_TEST(a_restart_resumes_from_a_checkpoint_copied_while_suspended) { restart_case(0); }
END_TEST

/* MIGRATE job to device: the reply's type (c->m the ERROR if refused). */
static uint16_t migrate(struct conn *c, uint64_t job, uint8_t device) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.migrate.job = job;
  m.migrate.device = device;
  return reply(c, send_msg(c, COOP_MSG_MIGRATE, &m, NULL, 0));
}

static void refused(struct conn *c, uint16_t type, int code, const char *says) {
  ck_assert_uint_eq(type, COOP_MSG_ERROR);
  ck_assert_int_eq(c->m.error.code, code);
  assert_has(c->m.error.message, says);
}

/* Waits (at most 30 s) until job's STATUS puts it on device and not
 * suspended; 1 if it did. */
static int seen_on(struct conn *c, uint64_t job, unsigned device) {
  for (int i = 0; i < 3000; i++) {
    struct coop_wire_status st = job_status(c, job);
    if (st.device == device && !st.suspended && st.state == COOP_JOB_RUNNING) return 1;
    if (st.state >= COOP_JOB_DONE) return 0;
    msleep(10);
  }
  return 0;
}

/* Two megakernels on PoCL's one device by default; COOP_TEST_DEVICES=0,1
 * on a machine with two GPUs (CUDA runs one megakernel a GPU). */
static const char *two_devices(void) {
  static char devs[64];
  snprintf(devs, sizeof devs, "device.devices=%.40s",
           getenv("COOP_TEST_DEVICES") ? getenv("COOP_TEST_DEVICES") : "0,0");
  return devs;
}

/* A checkpointed sweep on device 1 of two (`devices = 0,0`) whose device
 * process is killed three times: it resumes from its checkpoint after the
 * first two, and the third loses it (a job runs again after 2 restarts at
 * most). Its ELOST now says why its checkpoint was not used, and names
 * device 1, where it ran; the log no longer counts it among those to
 * resume. Before: "the job was lost: coopd restarted device 0 (its device
 * process killed by signal 9); submit it again" (the device's index on
 * PoCL, not its number), the log saying "1 to resume from a checkpoint". */
START_TEST(a_checkpoint_not_used_says_why) {
  char logp[] = "/tmp/coopd-ckpt3-XXXXXX.log", restarted[64];
  log_temp(logp);
  /* on one GPU (a GPU backend, COOP_TEST_DEVICES unset) the one device,
   * which clients' messages call "the device": a second megakernel there
   * is refused, and coopd exited at start-up */
  const char *be = getenv("COOP_BACKEND");
  int two = !be || !strcmp(be, "opencl") || getenv("COOP_TEST_DEVICES");
  unsigned dev = two ? 1 : 0;
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "jobs.checkpoint_ms=100", "log.level=debug", two ? two_devices() : NULL,
                        NULL};
  snprintf(restarted, sizeof restarted, "watchdog: device %u restarted", dev);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  submit_device = two ? 1 : COOP_WIRE_ANY_DEVICE;
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w);
  static uint32_t data[256];
  uint64_t job = sweep_at(&c, data, 256, 7, 100000, kt, w, 0); /* until lost */
  ck_assert_uint_ne(job, 0);
  /* a checkpoint counts once its snapshot drained: a kill as it drained
   * lost the job with no checkpoint to resume from */
  char taken[96];
  snprintf(taken, sizeof taken, "job %llu (slowsweep): checkpoint 1: 1024 bytes drained in",
           (unsigned long long)job);
  for (int i = 0; i < 1000 && !log_has(logp, taken); i++) msleep(10);
  ck_assert_msg(log_has(logp, taken), "no checkpoint within 10 s");
  /* each time once device 1's restart is done: a device process killed
   * while it builds leaves its device unavailable; and once the job has
   * taken a checkpoint in the new one, so that it runs there: a kill as
   * it was resumed lost it (a_death_as_a_restored_job_resumes) */
  for (int k = 1; k <= 2; k++) {
    kill_device_processes(d.pid);
    for (int i = 0; i < 1000 && log_count(logp, "resumes from its checkpoint of") < k; i++)
      msleep(10);
    int ckpts = log_count(logp, " bytes drained in "); /* the probe's and the sweep's so far */
    if (!seen_on(&c, job, dev)) log_print(logp);
    ck_assert_msg(job_status(&c, job).device == dev, "not resumed after restart %d", k);
    for (int i = 0; i < 1000 && log_count(logp, restarted) < k; i++) msleep(10);
    for (int i = 0; i < 1000 && log_count(logp, " bytes drained in ") <= ckpts; i++) msleep(10);
    ck_assert_msg(log_count(logp, " bytes drained in ") > ckpts, "no checkpoint after restart %d",
                  k);
  }
  kill_device_processes(d.pid);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_FAILED) log_print(logp);
  ck_assert_int_eq(c.m.result.error, COOP_ELOST);
  assert_has(c.m.result.message,
             two ? "coopd restarted device 1 (" : "coopd restarted the device (");
  assert_has(c.m.result.message,
             "its last checkpoint was not used: it had been resumed or run again after 2 "
             "device restarts already");
  ck_assert(log_has(logp, "restarting it (1 other jobs lost, 0 to run again, 0 to resume"));
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* The device process dies as a job restored from its checkpoint is
 * resumed into it: a checkpointed sweep's device process is killed, and
 * its successor dies at its first "resume" request (COOP_TEST_DIE_AT,
 * armed once the first death is done), the restored sweep's. The sweep
 * goes back to wait with the checkpoint's copies it was resumed from, the
 * next device process resumes it from them, and it ends DONE with every
 * word right. Before, it failed at once, "could not resume it: the job
 * was lost: ...", its checkpoint never looked at (once in a clean-clone
 * suite, where a_checkpoint_not_used_says_why killed the device process
 * within the resume). A render submitted after the first kill, in the
 * successor's runs after the sweep's, is answered too: the step that
 * took the sweep back to wait once cut the runs after it from the list,
 * and the render was never answered. */
START_TEST(a_death_as_a_restored_job_resumes) { die_in_checkpoint("resume", 1, 1); }
END_TEST

/* A sweep of about 3 s on device 0, moved by MIGRATE to device 1 while it
 * runs: STATUS puts it on device 1, running, and it ends there (RESULT's
 * device) with every word right. What may not move is refused with why. */
START_TEST(migrate_moves_a_running_sweep) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, two_devices(),
                        "log.level=debug", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  ck_assert_uint_eq(c.m.welcome.ndevices, 2);
  submit_device = 0;
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 300;
  static uint32_t data[256];
  uint64_t job = sweep_at(&c, data, 256, 3, rounds, kt, w, 0);
  ck_assert_uint_ne(job, 0);
  wait_running(&c, job);
  ck_assert_uint_eq(job_status(&c, job).device, 0);
  refused(&c, migrate(&c, job, 2), COOP_EINVAL, "no device 2");
  refused(&c, migrate(&c, job, 0), COOP_ESTATE, "already on device 0");
  refused(&c, migrate(&c, job + 1000, 1), COOP_ENOJOB, "");
  int64_t t0 = now_ms();
  ck_assert_uint_eq(migrate(&c, job, 1), COOP_MSG_OK);
  if (!seen_on(&c, job, 1)) {
    log_print(logp);
    ck_abort_msg("the sweep never ran on device 1");
  }
  fprintf(stderr, "running on device 1 %lld ms after MIGRATE\n", (long long)(now_ms() - t0));
  sweep_check(&c, job, 256, 3, rounds);
  ck_assert_uint_eq(c.m.result.device, 1);
  /* a task cannot move; neither can a job that has ended */
  union coop_msg m;
  render_init(&m, 1);
  m.submit.args[4].bits = 1u << 20; /* long enough to be asked while it runs */
  uint64_t task = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(task, 0);
  refused(&c, migrate(&c, task, 1), COOP_ESTATE, "only a cooperative job can move");
  cancel_ok(&c, task); /* asked: its seconds of rendering are not needed */
  ck_assert_uint_eq(wait_job(&c, task, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  refused(&c, migrate(&c, job, 0), COOP_ESTATE, "it has ended");
  ck_assert(log_has(logp, "moved here, suspended"));
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* As nobody: a sweep on device 0 moved to device 1, then back as soon as
 * it runs there, then cancelled; each MIGRATE's code (0: OK) and the second's words. */
struct two_moves {
  int first, second;
  int64_t apart_ms; /* between the two MIGRATEs */
  char said[256];
};
static void moves_twice(struct conn *c, const void *arg, void *out) {
  (void)arg;
  struct two_moves *t = out;
  static uint32_t data[64];
  uint64_t job = sweep_submit(c, data, 64, 100000000u, 1, -1); /* until cancelled */
  ck_assert_uint_ne(job, 0);
  wait_running(c, job);
  int64_t t0 = now_ms();
  t->first = migrate(c, job, 1) == COOP_MSG_OK ? 0 : c->m.error.code;
  ck_assert(seen_on(c, job, 1));
  t->apart_ms = now_ms() - t0;
  t->second = migrate(c, job, 0) == COOP_MSG_OK ? 0 : c->m.error.code;
  if (t->second) snprintf(t->said, sizeof t->said, "%.200s", c->m.error.message);
  cancel_ok(c, job);
}

/* A user's MIGRATEs of one job back and forth between two devices: each
 * copies the job's buffers off one device and onto another between other
 * users' jobs (a 128 MiB sweep: 85-270 ms of each device thread a move),
 * and nothing spaced them. Now a user's jobs move by hand once a second
 * at most (root's are not bound): the second, as soon as the job runs on
 * device 1, is EBUSY and says when to ask again. */
START_TEST(a_users_moves_are_spaced) {
  if (geteuid() != 0) return; /* needs another uid: CI runs as root */
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, two_devices(), NULL};
  struct daemon_proc d = {0};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  submit_device = 0;
  struct two_moves t = {0};
  as_user(&d, 65534, moves_twice, NULL, &t, sizeof t);
  submit_device = COOP_WIRE_ANY_DEVICE;
  ck_assert_int_eq(t.first, 0);
  if (t.apart_ms >= 1000) { /* a machine so slow that the move took the gap */
    fprintf(stderr, "a_users_moves_are_spaced: the move took %lld ms\n", (long long)t.apart_ms);
    ck_assert_int_eq(t.second, 0);
  } else {
    ck_assert_int_eq(t.second, COOP_EBUSY);
    assert_has(t.said, "a user's jobs move by hand once every 1000 ms at most; ask again in");
  }
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A coopd on two devices of one cooperative slot each, priorities up to
 * 10, logging at info into logp (a template, made here); c open, jobs for
 * device 0. The workers; *kt the kticks of a 10 ms round. */
static uint32_t one_slot_each(struct daemon_proc *d, char *logp, struct conn *c, uint32_t *kt) {
  log_temp(logp);
  d->log = logp;
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        two_devices(),
                        "limits.max_priority=10",
                        "jobs.reserve_percent=100",
                        "device.max_workgroups=5",
                        "log.level=info",
                        NULL};
  daemon_start_log(d, sets);
  open_hello(c, d);
  submit_device = 0;
  uint32_t w = c->m.welcome.workers;
  *kt = kticks_10ms(c, w);
  return w;
}

/* One cooperative slot per device. A sweep of priority 0 for any device
 * runs on device 0 (both idle: the first); a sweep of priority 3 named for
 * device 0 has it suspended. Device 1 is idle, so the suspended sweep
 * moves there by itself and resumes at once: it ends on device 1
 * (RESULT), before the second would have let it resume on device 0, and
 * both results are right. Before, it waited on device 0 until the second
 * ended. A sweep that named device 0 stays there, suspended, as its user
 * asked (a_named_suspended_job_stays). */
START_TEST(a_suspended_job_moves_to_an_idle_device) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  uint32_t kt, w = one_slot_each(&d, logp, &c, &kt), rounds = 150;
  static uint32_t a[256], b[256];
  submit_device = COOP_WIRE_ANY_DEVICE;
  uint64_t low = sweep_at(&c, a, 256, 5, rounds, kt, w, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  ck_assert_uint_eq(job_status(&c, low).device, 0);
  submit_device = 0;
  uint64_t high = sweep_at(&c, b, 256, 1000, rounds, kt, w, 3);
  ck_assert_uint_ne(high, 0);
  if (!seen_on(&c, low, 1)) {
    log_print(logp);
    ck_abort_msg("the suspended sweep never ran on device 1");
  }
  sweep_check(&c, low, 256, 5, rounds);
  ck_assert_uint_eq(c.m.result.device, 1);
  int64_t low_end = c.m.result.t.finished;
  sweep_check(&c, high, 256, 1000, rounds);
  ck_assert_uint_eq(c.m.result.device, 0);
  fprintf(stderr, "low ended %lld ms before high\n",
          (long long)((c.m.result.t.finished - low_end) / 1000000));
  if (!log_has(logp, "it moves there")) log_print(logp);
  ck_assert(log_has(logp, "it moves there"));
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* One slot per device. A sweep of priority 0 runs on device 1 until
 * cancelled; one of priority 5 on device 0 is moved there by MIGRATE. It
 * has its priority there: the sweep of priority 0 is suspended for it,
 * and it runs on device 1 and ends with every word right. Before, it
 * waited suspended behind the lower one for as long as that ran (here 30
 * s, until the test gave up): a suspended job never had anything
 * suspended for it. */
START_TEST(a_moved_job_keeps_its_priority) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  uint32_t kt, w = one_slot_each(&d, logp, &c, &kt), rounds = 100;
  static uint32_t a[256], b[256];
  submit_device = 1;
  uint64_t low = sweep_at(&c, a, 256, 5, 1000000, kt, w, 0); /* until cancelled */
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  submit_device = 0;
  uint64_t high = sweep_at(&c, b, 256, 1000, rounds, kt, w, 5);
  ck_assert_uint_ne(high, 0);
  wait_running(&c, high);
  ck_assert_uint_eq(migrate(&c, high, 1), COOP_MSG_OK);
  int64_t t0 = now_ms();
  if (!seen_on(&c, high, 1)) log_print(logp);
  ck_assert_msg(job_status(&c, high).device == 1 && job_status(&c, low).suspended,
                "the sweep of priority 5 waited on device 1 behind the one of priority 0");
  fprintf(stderr, "running on device 1 %lld ms after MIGRATE\n", (long long)(now_ms() - t0));
  sweep_check(&c, high, 256, 1000, rounds);
  ck_assert_uint_eq(c.m.result.device, 1);
  cancel_ok(&c, low);
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* As above, but the sweep of priority 0 names device 0: suspended there,
 * it stays (before, it moved to device 1 by itself, away from the device
 * its user asked for) and resumes on device 0 once the second has ended. */
START_TEST(a_named_suspended_job_stays) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  uint32_t kt, w = one_slot_each(&d, logp, &c, &kt), rounds = 150;
  static uint32_t a[256], b[256];
  uint64_t low = sweep_at(&c, a, 256, 5, rounds, kt, w, 0); /* submit_device 0 */
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  uint64_t high = sweep_at(&c, b, 256, 1000, rounds, kt, w, 3);
  ck_assert_uint_ne(high, 0);
  ck_assert(seen_suspended(&c, low));
  sweep_check(&c, high, 256, 1000, rounds);
  int64_t high_end = c.m.result.t.finished;
  sweep_check(&c, low, 256, 5, rounds);
  if (c.m.result.device != 0) log_print(logp);
  ck_assert_uint_eq(c.m.result.device, 0);
  ck_assert_int_ge(c.m.result.t.finished, high_end);
  ck_assert(!log_has(logp, "it moves there"));
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* As above, but the sweep of priority 0 works on a device buffer of
 * device 0: it is suspended there and stays, since its buffer cannot go
 * with it (MIGRATE refuses it so). It resumes on device 0 once the second
 * ends, and the buffer holds every round. Before, it moved to device 1 by
 * itself, where its argument named no buffer of its own. */
START_TEST(a_suspended_job_on_device_buffers_stays) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  struct daemon_proc d;
  struct conn c;
  uint32_t kt, w = one_slot_each(&d, logp, &c, &kt), rounds = 150;
  uint64_t buf = buf_create_raw(&c, 1024); /* zeroed, on device 0 */
  union coop_msg m;
  submit_init(&m, "slowsweep", w, 1);
  m.submit.args[m.submit.nargs++] = (struct coop_wire_arg){.type = COOP_ARG_DEVBUF, .bits = buf};
  arg_u32(&m.submit, 256);
  arg_u32(&m.submit, rounds);
  arg_u32(&m.submit, kt);
  m.submit.device = COOP_WIRE_ANY_DEVICE; /* its buffer's: device 0, not named */
  uint64_t low = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  static uint32_t b[256];
  uint64_t high = sweep_at(&c, b, 256, 1000, rounds, kt, w, 3);
  ck_assert_uint_ne(high, 0);
  ck_assert(seen_suspended(&c, low));
  sweep_check(&c, high, 256, 1000, rounds);
  ck_assert_uint_eq(c.m.result.device, 0);
  int64_t high_end = c.m.result.t.finished;
  ck_assert_uint_eq(wait_job(&c, low, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s %s", coop_job_state_name(c.m.result.state),
                c.m.result.message);
  ck_assert_uint_eq(c.m.result.device, 0);
  ck_assert_int_ge(c.m.result.t.finished, high_end);
  ck_assert(!log_has(logp, "it moves there"));
  static union coop_msg q;
  memset(&q, 0, sizeof q);
  q.buf_range =
      (struct coop_msg_buf_range){.buffer = buf, .offset = 0, .len = 1024, .fd = COOP_WIRE_FD_NONE};
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_BUF_READ, &q, NULL, 0)), COOP_MSG_BUF_DATA);
  ck_assert_uint_eq(c.m.buf_data.data_len, 1024);
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t got;
    memcpy(&got, c.m.buf_data.data + 4 * i, 4);
    ck_assert_msg(got == rounds, "word %u is %u, want %u", i, got, rounds);
  }
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* One slot per device. Sweep B runs on device 1; sweep A, moved there by
 * MIGRATE, waits suspended for B's slot, its state and buffers out of any
 * device process. A reload then changes slowsweep's source (2 a round):
 * B, whose kernel changed, is cancelled after the grace period, and so is
 * A, with why. Before, A was resumed from its saved state in the changed
 * kernel and ended DONE with words the old kernel never wrote. */
START_TEST(a_reload_that_changes_a_moved_jobs_kernel_ends_it) {
  char logp[] = "/tmp/coopd-migrate-XXXXXX.log";
  log_temp(logp);
  char kdir[] = "/tmp/coop-kernels-XXXXXX", ks[300], kset[340];
  kernels_dir_make(kdir);
  snprintf(ks, sizeof ks, "%s/slowsweep.cl", kdir);
  file_copy(PRIORITY_KERNEL_DIR "/slowsweep.cl", ks);
  snprintf(kset, sizeof kset, "kernels.dirs=%s", kdir);
  const char *sets[] = {kset,
                        two_devices(),
                        "jobs.reserve_percent=100",
                        "jobs.grace_ms=300",
                        "device.max_workgroups=5",
                        "log.level=info",
                        NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  submit_device = 1;
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 3000;
  static uint32_t a[256], b[256];
  uint64_t jb = sweep_at(&c, b, 256, 7, rounds, kt, w, 0);
  ck_assert_uint_ne(jb, 0);
  wait_running(&c, jb);
  submit_device = 0;
  uint64_t ja = sweep_at(&c, a, 256, 5, rounds, kt, w, 0);
  ck_assert_uint_ne(ja, 0);
  wait_running(&c, ja);
  ck_assert_uint_eq(migrate(&c, ja, 1), COOP_MSG_OK);
  int there = 0;
  for (int i = 0; i < 3000 && !there; i++) {
    struct coop_wire_status st = job_status(&c, ja);
    there = st.device == 1 && st.suspended && log_has(logp, "moved here, suspended");
    if (!there) msleep(10);
  }
  if (!there) log_print(logp);
  ck_assert_msg(there, "sweep A never waited suspended on device 1");
  char said[COOP_WIRE_TEXT_MAX]; /* it said "suspended for a job of priority -2147483646" */
  wait_says(&c, ja, 100, said, sizeof said);
  assert_has(said,
             "suspended, moved to this device: it resumes where it stopped when a "
             "cooperative slot is free here");

  static char text[1 << 14];
  FILE *f = fopen(ks, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  char *add = strstr(text, "+= 1u +");
  ck_assert_ptr_nonnull(add);
  add[3] = '2';
  file_write(ks, text);
  kill(d.pid, SIGHUP);

  ck_assert_uint_eq(wait_job(&c, ja, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  if (c.m.result.state != COOP_JOB_CANCELLED) log_print(logp);
  ck_assert_msg(c.m.result.state == COOP_JOB_CANCELLED, "sweep A: %s %s",
                coop_job_state_name(c.m.result.state), c.m.result.message);
  assert_has(c.m.result.message, "the new set changed or removed its kernel");
  ck_assert_uint_eq(wait_job(&c, jb, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.state, COOP_JOB_CANCELLED);
  submit_device = COOP_WIRE_ANY_DEVICE;
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(ks);
  kernels_dir_remove(kdir);
  unlink(logp);
}
END_TEST

/* Two devices of a 1 MiB arena each. Device 0 runs one long render whose
 * copies hold 599 KiB; device 1 two sweeps (one runs, one waits for its
 * slot) of 1 KiB each. A render of 469 KiB for any device went to device
 * 0, the one with fewer jobs, and waited there for room for as long as the
 * long render ran (until [jobs] task_max_ms ended it). Now it goes to
 * device 1, where its copies fit, and ends there while the long render
 * runs on. */
START_TEST(a_job_goes_to_the_device_with_room) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, two_devices(),
                        "device.arena_mb=1", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  enum { HOLD = 226, N = 200 }; /* 3 x 226^2 x 4 bytes: 599 KiB; 3 x 200^2 x 4: 469 KiB */
  union coop_msg m;
  submit_device = 0;
  render_ones(&m, HOLD);
  m.submit.args[4].bits = 1u << 20; /* reps: until cancelled */
  uint64_t hold = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(hold, 0);
  wait_running(&c, hold);
  submit_device = 1;
  static uint32_t s1[256], s2[256];
  uint64_t run = sweep_submit(&c, s1, 256, 100000000u, 1, -1);
  uint64_t waiting = sweep_submit(&c, s2, 256, 100000000u, 1, -1);
  ck_assert(run && waiting);
  wait_running(&c, run);
  submit_device = COOP_WIRE_ANY_DEVICE;
  render_ones(&m, N);
  uint64_t job = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(job, 0);
  uint16_t t = wait_job(&c, job, 20000);
  ck_assert_msg(t == COOP_MSG_RESULT, "the render did not end in 20 s: %s",
                t == COOP_MSG_ERROR ? c.m.error.message : "");
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.device, 1);
  ck_assert_uint_eq(job_state(&c, hold), COOP_JOB_RUNNING); /* task_max_ms (5 s) ends it */
  conn_close(&c);                                           /* its jobs go with it */
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Two devices of 1 MiB arenas, each with a render of 599 KiB until
 * cancelled (the one on device 0 until [jobs] task_max_ms, 5 s, ends it). A
 * render of 469 KiB for any device finds room on neither and waits on
 * device 0 (the first of two as loaded), and another named for device 0
 * waits there behind it. Device 1's render is cancelled:
 * the waiting render waited on device 0 for as long as its render ran,
 * device 1 idle meanwhile. Now it moves to device 1 and ends there while
 * device 0's render runs on. A job whose SUBMIT named its device stays,
 * unless MIGRATE moves it. */
START_TEST(a_job_waiting_for_room_moves_to_a_device_with_it) {
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR, two_devices(),
                        "device.arena_mb=1", "log.level=info", NULL};
  char logp[] = "/tmp/coopd-roommove-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  enum { HOLD = 226, N = 200 }; /* 3 x 226^2 x 4 bytes: 599 KiB; 3 x 200^2 x 4: 469 KiB */
  union coop_msg m;
  uint64_t hold[2];
  for (unsigned i = 0; i < 2; i++) {
    submit_device = (uint8_t)i;
    render_ones(&m, HOLD);
    m.submit.args[4].bits = 1u << 20; /* reps: until cancelled */
    hold[i] = submit(&c, &m, NULL, 0);
    ck_assert_uint_ne(hold[i], 0);
    wait_running(&c, hold[i]);
  }
  submit_device = COOP_WIRE_ANY_DEVICE; /* to device 0: as loaded as 1, the first */
  render_ones(&m, N);
  uint64_t job = submit(&c, &m, NULL, 0);
  submit_device = 0; /* named: it stays */
  render_ones(&m, N);
  uint64_t named = submit(&c, &m, NULL, 0);
  ck_assert(named && job);
  char said[256];
  waits_for(&c, job, "waiting for room in the device arena", said, sizeof said);
  ck_assert_msg(strstr(said, "waiting for room"), "%s", said);
  ck_assert_uint_eq(job_status(&c, job).device, 0);
  cancel_ok(&c, hold[1]);
  uint16_t t = wait_job(&c, job, 20000);
  ck_assert_msg(t == COOP_MSG_RESULT, "the render did not end in 20 s: %s",
                t == COOP_MSG_ERROR ? c.m.error.message : "");
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  if (c.m.result.device != 1) log_print(logp);
  ck_assert_uint_eq(c.m.result.device, 1);
  ck_assert_uint_eq(job_state(&c, hold[0]), COOP_JOB_RUNNING);
  struct coop_wire_status st = job_status(&c, named);
  ck_assert_uint_eq(st.device, 0);
  ck_assert_uint_eq(st.state, COOP_JOB_QUEUED);
  ck_assert(log_has(logp, "room in device 1's: it moves there"));
  /* a sweep named for device 0 waits there for room too; MIGRATE sends it
   * to device 1, where it ends while device 0's render runs on. Before, it
   * was answered OK and stayed, until that render ended (4.7 s) and it
   * ran on device 0 */
  enum { WORDS = 120000 }; /* 469 KiB */
  int fd = memfd_of((size_t)WORDS * 4);
  uint64_t sw = sweep_submit(&c, NULL, WORDS, 3, 1, fd);
  ck_assert_uint_ne(sw, 0);
  waits_for(&c, sw, "waiting for room in the device arena", said, sizeof said);
  ck_assert_uint_eq(migrate(&c, sw, 1), COOP_MSG_OK);
  t = wait_job(&c, sw, 20000);
  ck_assert_uint_eq(t, COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.device, 1);
  ck_assert_uint_eq(job_state(&c, hold[0]), COOP_JOB_RUNNING);
  uint32_t word;
  ck_assert_int_eq(pread(fd, &word, 4, 4 * (WORDS - 1)), 4);
  ck_assert_uint_eq(word, 3);
  close(fd);
  conn_close(&c); /* its jobs go with it */
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

void daemon_suspend_cases(Suite *s) {
  TCase *t = tcase_create("checkpoints");
  tcase_set_timeout(t, 240);
  tcase_add_test(t, a_restart_resumes_from_the_last_checkpoint);
  tcase_add_test(t, a_restart_resumes_from_a_checkpoint_copied_while_suspended);
  tcase_add_test(t, a_snapshot_gives_way_to_a_jobs_buffers);
  tcase_add_test(t, a_death_while_the_state_is_saved);
  tcase_add_test(t, a_death_while_the_buffers_are_copied_on_the_device);
  tcase_add_test(t, a_death_while_the_task_resumes);
  tcase_add_test(t, a_death_while_the_snapshot_drains);
  tcase_add_test(t, a_checkpoint_not_used_says_why);
  tcase_add_test(t, a_death_as_a_restored_job_resumes);
  tcase_add_test(t, work_lost_ends_at_the_suspension);
  suite_add_tcase(s, t);
  t = tcase_create("migrate"); /* two megakernels on PoCL's one device */
  tcase_set_timeout(t, 240);
  tcase_add_test(t, migrate_moves_a_running_sweep);
  tcase_add_test(t, a_users_moves_are_spaced);
  tcase_add_test(t, a_suspended_job_moves_to_an_idle_device);
  tcase_add_test(t, a_named_suspended_job_stays);
  tcase_add_test(t, a_moved_job_keeps_its_priority);
  tcase_add_test(t, a_suspended_job_on_device_buffers_stays);
  tcase_add_test(t, a_reload_that_changes_a_moved_jobs_kernel_ends_it);
  tcase_add_test(t, a_job_goes_to_the_device_with_room);
  tcase_add_test(t, a_job_waiting_for_room_moves_to_a_device_with_it);
  suite_add_tcase(s, t);
}
