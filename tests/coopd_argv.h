/*
 * coopd_argv.h: the command line of a coopd that a test starts itself
 * (test_daemon, coop-soak).
 */
#ifndef COOP_COOPD_ARGV_H
#define COOP_COOPD_ARGV_H

/* A test that starts a coopd is built with both paths (tests/CMakeLists.txt). */
#ifndef COOP_COOPD_ARGV_SELF
#ifndef COOPD_PATH
#error "COOPD_PATH must name the coopd binary"
#endif
#ifndef KERNEL_DIR
#error "KERNEL_DIR must name the kernel directory"
#endif
#endif

/* Fills argv with `coopd --socket sock --kernels kernels --log-level
 * level`, then `--set device.backend=B` when COOP_BACKEND=B is set in the
 * environment (scripts/test --backend cuda: the same tests through that
 * backend). Returns the count, at most 9; the caller appends its own and
 * the NULL. */
int coop_test_coopd_argv(const char **argv, const char *coopd, const char *sock,
                         const char *kernels, const char *level);

#endif /* COOP_COOPD_ARGV_H */
