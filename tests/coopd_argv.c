/* coopd_argv.c: see coopd_argv.h. */
#include <stdio.h>
#include <stdlib.h>

#define COOP_COOPD_ARGV_SELF /* the paths come as arguments here */
#include "coopd_argv.h"

int coop_test_coopd_argv(const char **argv, const char *coopd, const char *sock,
                         const char *kernels, const char *level) {
  int n = 0;
  argv[n++] = coopd;
  argv[n++] = "--socket";
  argv[n++] = sock;
  argv[n++] = "--kernels";
  argv[n++] = kernels;
  argv[n++] = "--log-level";
  /* COOP_TEST_LOG_LEVEL: every test daemon's level, to read a failing
   * test's log in full (its widths, its device process's restarts) */
  argv[n++] = getenv("COOP_TEST_LOG_LEVEL") ? getenv("COOP_TEST_LOG_LEVEL") : level;
  static char backend[64]; /* the argv outlives this call: execv reads it */
  if (getenv("COOP_BACKEND")) {
    snprintf(backend, sizeof backend, "device.backend=%.40s", getenv("COOP_BACKEND"));
    argv[n++] = "--set";
    argv[n++] = backend;
  }
  return n;
}
