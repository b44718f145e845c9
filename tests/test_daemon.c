/*
 * test_daemon.c: integration tests of a real coopd on PoCL, spoken to with
 * the raw protocol codec (so that malformed input can be sent too). Each
 * test starts its own daemon on a socket in a temporary directory. This
 * file puts the suite together: one part per concern (test_daemon_*.c),
 * each adding its cases, over what they share (daemon_harness.h); ctest
 * runs one case at a time (CK_RUN_CASE, tests/CMakeLists.txt).
 */
#include <check.h>
#include <signal.h>

#include "check_run.h"
#include "daemon_harness.h"

static Suite *suite(void) {
  Suite *s = suite_create("daemon");
  TCase *t = tcase_create("integration");
  tcase_set_timeout(t, 300);
  suite_add_tcase(s, t);
  daemon_basics_cases(t);
  daemon_faults_cases(s, t); /* the rest of integration; restarts */
  daemon_isolation_cases(s); /* isolation, slots, task_bound, cancel */
  daemon_priority_cases(s);
  daemon_suspend_cases(s); /* checkpoints, migrate */
  daemon_parking_cases(s);
  daemon_service_cases(s); /* devices, systemd, metrics_http */
  daemon_state_cases(s);
  daemon_limits_cases(s);
  daemon_authors_cases(s);
  daemon_ring_cases(s);
  return s;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  return coop_test_run(srunner_create(suite()));
}
