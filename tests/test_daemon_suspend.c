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
 * much work the restart cost. Before, it failed with ELOST. */
START_TEST(a_restart_resumes_from_the_last_checkpoint) {
  char logp[] = "/tmp/coopd-ckpt-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" PRIORITY_KERNEL_DIR,
                        "jobs.checkpoint_ms=200", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, kt = kticks_10ms(&c, w), rounds = 300;
  static uint32_t data[256];
  uint64_t job = sweep_at(&c, data, 256, 7, rounds, kt, w, 0);
  ck_assert_uint_ne(job, 0);
  wait_running(&c, job);
  msleep(1000);
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
END_TEST

void daemon_suspend_cases(Suite *s) {
  TCase *t = tcase_create("checkpoints");
  tcase_set_timeout(t, 240);
  tcase_add_test(t, a_restart_resumes_from_the_last_checkpoint);
  suite_add_tcase(s, t);
}
