/*
 * check_run.h: the end of every check-based test's main: run the suites of
 * sr (CK_RUN_SUITE / CK_RUN_CASE pick among them), free it, and give the
 * exit status.
 */
#ifndef COOP_CHECK_RUN_H
#define COOP_CHECK_RUN_H

#include <check.h>

/* EXIT_SUCCESS when no test failed, else EXIT_FAILURE. */
int coop_test_run(SRunner *sr);

#endif /* COOP_CHECK_RUN_H */
