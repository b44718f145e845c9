/*
 * coopd_proc.h: what the benchmarks that go through coopd share about the
 * daemon's processes: a coopd of their own (started on a socket in a fresh
 * directory, stopped at the end) and the CPU that coopd and its device
 * process spend, from /proc.
 */
#ifndef COOP_BENCH_COOPD_PROC_H
#define COOP_BENCH_COOPD_PROC_H

#include <stdio.h>
#include <sys/types.h>

struct coopd_proc {
  pid_t pid;
  char dir[64];   /* mkdtemp: the socket, the log, the kernels given to it */
  char sock[128]; /* dir/coop.sock */
  char log[128];  /* dir/coopd.log: its stderr and stdout */
  char kdir[128]; /* dir/kernels: coopd_kernel_file writes here */
};

/* A fresh directory for the daemon (before coopd_start): 0 or 1. */
int coopd_dir(struct coopd_proc *d);
/* The kernel file NAME.cl in d->kdir: head (a //@coop line, or NULL) then
 * source. 0 or 1. */
int coopd_kernel_file(const struct coopd_proc *d, const char *name, const char *head,
                      const char *source);
/* Starts coopd (the binary at path) with --socket d->sock --kernels
 * d->kdir, --log-level warn, no journal, then each "SECTION.KEY=VALUE" of
 * sets (NULL-terminated) as a --set; waits up to timeout_ms for its socket.
 * 0, or 1 with what went wrong on stderr (and the log's tail). */
int coopd_start(struct coopd_proc *d, const char *path, const char *const *sets, int timeout_ms);
/* SIGTERM, waits up to 30 s (then SIGKILL); removes the directory unless
 * keep_log. 0 if coopd exited 0. */
int coopd_stop(struct coopd_proc *d, int keep_log);
/* About the last `lines` lines of the daemon's log to f. */
void coopd_log_tail(const struct coopd_proc *d, FILE *f, int lines);

/* CPU seconds (utime + stime) that pid and its children have spent so far:
 * coopd and its device process. 0 when pid <= 0 or /proc has no such
 * process. */
double coopd_cpu_s(long pid);

/* The path of a program next to this binary (/proc/self/exe's directory),
 * into out; 0, or 1 if it cannot be read. */
int exe_sibling(const char *name, char *out, size_t n);

#endif /* COOP_BENCH_COOPD_PROC_H */
