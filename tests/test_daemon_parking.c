/*
 * test_daemon_parking.c: idle parking: an idle megakernel leaves the
 * device and comes back for the next job; jobs back to back do not park
 * it, a reload parks it again, and a slow park is not a restart.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* cpu_ticks (daemon_harness.h) in seconds. */
static double cpu_seconds(pid_t pid) {
  return (double)cpu_ticks(pid) / (double)sysconf(_SC_CLK_TCK);
}

/* Idle parking: an idle coopd spun a CPU core (PoCL: 54 to 97%). With
 * park_ms = 50 the megakernel leaves the device once idle: STATS says
 * parked and the device process uses (almost) no CPU; the next job
 * relaunches it and runs correctly, and it parks again afterwards. */
START_TEST(idle_megakernel_parks) {
  const char *sets[] = {"device.park_ms=50", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  struct coop_msg_stats_reply st = stats(&c);
  for (int i = 0; i < 200 && !st.devs[0].parked; i++, msleep(25)) st = stats(&c);
  ck_assert_uint_eq(st.devs[0].parked, 1);
  ck_assert_uint_ge(st.devs[0].parks, 1);
  pid_t dp = device_process(d.pid);
  double c0 = cpu_seconds(dp);
  msleep(1500);
  double used = cpu_seconds(dp) - c0;
  ck_assert_msg(used < 0.1, "a parked device process used %.2f s of CPU in 1.5 s", used);
  ck_assert_uint_eq(stats(&c).devs[0].parked, 1);
  /* the next job relaunches the megakernel, and its result is right */
  render_check(&c, 1, 0, 0);
  static uint32_t data[64];
  for (uint32_t i = 0; i < 64; i++) data[i] = i;
  uint64_t job = sweep_submit(&c, data, 64, 100, 2, -1);
  ck_assert_uint_ne(job, 0);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  for (uint32_t i = 0; i < 64; i++) {
    uint32_t got;
    memcpy(&got, c.m.result.bufs[0].data + 4 * i, 4);
    ck_assert_uint_eq(got, i + 100);
  }
  st = stats(&c);
  ck_assert_int_gt(st.devs[0].unpark_ns, 0);
  uint32_t parks = st.devs[0].parks;
  for (int i = 0; i < 200 && st.devs[0].parks == parks; i++, msleep(25)) st = stats(&c);
  ck_assert_uint_gt(st.devs[0].parks, parks); /* idle again: parked again */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Jobs back to back, each begun and ended within one pass of the device
 * thread (a one-task job alone on the device: its end comes with its
 * submit), keep the megakernel up: the device is idle park_ms after the
 * last job, not after its start. Before, every such job was followed by a
 * park, and the next one paid the relaunch (about 0.6 ms on the H100). */
START_TEST(back_to_back_jobs_do_not_park) {
  const char *sets[] = {"device.park_ms=400", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  msleep(1000);              /* idle since the start: it parks now, so its idle time is old */
  render_check(&c, 1, 0, 0); /* relaunches it */
  uint32_t parks = stats(&c).devs[0].parks;
  for (int i = 0; i < 20; i++) {
    render_check(&c, 1, 0, 0);
    msleep(50); /* far below park_ms */
  }
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_msg(st.devs[0].parks == parks, "parked %u times between jobs 50 ms apart",
                st.devs[0].parks - parks);
  ck_assert_uint_eq(st.devs[0].parked, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* After a reload the new megakernel parks as the old one did, and a
 * parked device process spends no CPU. The old coopd never parked again
 * after a successful reload: the pass that swapped had no wake time, and
 * the device thread slept until the next job with the megakernel spinning
 * (docs/faults.md, "Reload and service"). */
START_TEST(parks_again_after_a_reload) {
  char logp[] = "/tmp/coopd-park-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.park_ms=50", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  struct coop_msg_stats_reply st = stats(&c);
  for (int i = 0; i < 400 && !st.devs[0].parked; i++, msleep(25)) st = stats(&c);
  ck_assert_uint_eq(st.devs[0].parked, 1);
  for (int round = 1; round <= 2; round++) {
    uint32_t parks = st.devs[0].parks;
    kill(d.pid, SIGHUP);
    int done = 0;
    for (int i = 0; i < 2400 && done < round; i++, msleep(50))
      done = log_count(logp, "reload: done");
    if (done < round) log_print(logp);
    ck_assert_int_eq(done, round);
    st = stats(&c);
    for (int i = 0; i < 400 && !(st.devs[0].parked && st.devs[0].parks > parks); i++, msleep(25))
      st = stats(&c);
    if (!st.devs[0].parked) log_print(logp);
    ck_assert_msg(st.devs[0].parked, "reload %d: the megakernel did not park within 10 s", round);
    ck_assert_uint_gt(st.devs[0].parks, parks);
    pid_t dp = device_process(d.pid);
    double c0 = cpu_seconds(dp);
    msleep(1000);
    double used = cpu_seconds(dp) - c0;
    ck_assert_msg(used < 0.1, "reload %d: the device process used %.2f s of CPU in 1 s", round,
                  used);
  }
  render_check(&c, 1, 0, 0); /* the new megakernel relaunches and serves */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* A park that takes 3 s (COOP_TEST_PARK_DELAY_MS: a megakernel slow to
 * leave a loaded CPU device) parks: the old coopd gave a park 2 s, then
 * killed the device process and restarted it, its kernels built again
 * (and its next park met the same fate). */
START_TEST(a_slow_park_is_not_a_restart) {
  char logp[] = "/tmp/coopd-slowpark-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.park_ms=50", "log.level=info", NULL};
  setenv("COOP_TEST_PARK_DELAY_MS", "3000", 1);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  unsetenv("COOP_TEST_PARK_DELAY_MS");
  struct conn c;
  open_hello(&c, &d);
  struct coop_msg_stats_reply st = stats(&c);
  for (int i = 0; i < 400 && !st.devs[0].parked; i++, msleep(25)) st = stats(&c);
  if (!st.devs[0].parked || log_has(logp, "restarting")) log_print(logp);
  ck_assert_msg(st.devs[0].parked, "not parked 10 s after a 3 s park began");
  ck_assert_msg(!log_has(logp, "restarting"), "the slow park restarted the device");
  ck_assert_uint_eq(st.lost_workers, 0);
  render_check(&c, 1, 0, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

void daemon_parking_cases(Suite *s) {
  TCase *t = tcase_create("parking");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, idle_megakernel_parks);
  tcase_add_test(t, back_to_back_jobs_do_not_park);
  tcase_add_test(t, parks_again_after_a_reload);
  tcase_add_test(t, a_slow_park_is_not_a_restart);
  suite_add_tcase(s, t);
}
