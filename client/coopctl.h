/*
 * coopctl.h: what coopctl's source files share. coopctl is written on
 * libcoop's public API (coop.h) only.
 */
#ifndef COOPCTL_H
#define COOPCTL_H

#include <stdint.h>
#include <stdio.h>

#include "coop.h"

#define EXIT_USAGE 2

struct ctl {
  const char *socket; /* --socket, or NULL */
  int json;           /* --json */
  coop_conn *c;
};

/* One command-line option of a command: --name, with a value or a flag. */
struct opt {
  const char *name;
  const char **val; /* option with a value */
  int *flag;        /* option without one */
};

/* coopctl.c */
/* Options (the command's, plus --json and --socket) anywhere in argv[1..],
 * other words into pos[] (at most maxpos). 0, or 1 after --help (printed),
 * or EXIT_USAGE after printing the problem and the command's usage. */
int ctl_parse(struct ctl *x, const char *cmd, int argc, char **argv, const struct opt *opts,
              char **pos, int *npos, int maxpos);
int ctl_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "coopctl: what: strerror: message"; returns 1. */
int ctl_fail(const char *what, int err);
/* With --json, ctl_fail's {"error":...} object with message m; nothing
 * on stderr (the caller said it). Returns 1. */
int ctl_json_error(const char *what, int err, const char *m);
/* An error coopctl found itself (a file, an input): "coopctl: what: MSG"
 * on stderr and, with --json, the same {"error":...} as ctl_fail's, err
 * a COOP_E* code; returns 1. */
int ctl_error(const char *what, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes a whole file that fill produces (0, or -1 with errno set): a
 * regular file or a missing path through a temporary file in the same
 * directory renamed over it (the original's mode kept), so that a failed
 * write leaves the original whole and a reader never sees half of it;
 * anything else (a FIFO, a device, a symbolic link such as /dev/stdout) is
 * opened and written in place, never replaced. -1 leaves errno set. */
int ctl_save(const char *path, int (*fill)(FILE *f, void *arg), void *arg);
int ctl_connect(struct ctl *x);
/* Whether coopctl may write path, an output it writes once a job is done:
 * checked before the job runs, so that a mistyped path does not cost the
 * whole run. An existing file is opened (not truncated); a new one is
 * created and removed again. 0, or 1 with "coopctl: cmd: cannot write
 * ..." printed. */
int ctl_writable(const char *cmd, const char *path);
int parse_u32(const char *s, uint32_t *v);
int parse_u64(const char *s, uint64_t *v);
int parse_i64(const char *s, int64_t *v);
int parse_double(const char *s, double *v);
/* --device of CMD: *dev = the index in s, or COOP_ANY_DEVICE when s is NULL.
 * 0, or EXIT_USAGE after printing the problem. coopd checks the index
 * against the devices it has. */
int parse_device(const char *cmd, const char *s, int *dev);
double now_s(void);
/* Waits for a job; on a TTY (stderr) with a progress line after 0.5 s that
 * shows the elapsed time and the state (and instances when periodic).
 * timeout_ms < 0: forever. Returns coop_wait's result. */
int ctl_wait(struct ctl *x, uint64_t job, int timeout_ms, int periodic, double expect_s,
             struct coop_result *r);
/* Why job, whose WAIT just timed out with the answer said, has not ended:
 * "; it was still queued, waiting for ..." or "; it was running on M of its
 * N workgroups, ...", to follow "timed out"; "" when coopd does not say. */
const char *ctl_not_done(struct ctl *x, uint64_t job, const char *said);

/* coopctl_out.c: text and JSON output */
void json_str(FILE *f, const char *s);
/* Whether the daemon's message about err already says what coop_strerror
 * does (it begins with the same words up to the first ':', as "the job was
 * lost: coopd restarted the device ..."): then the message alone is
 * printed, where a line said "lost" twice. */
int ctl_message_says_it(int err, const char *message);
void print_result(const struct ctl *x, const struct coop_result *r);
void json_result_fields(FILE *f, const struct coop_result *r);
/* el: the kernels' element types (coop_kernels_elems), matched by name;
 * NULL and 0 where they could not be had */
void print_kernels(const struct ctl *x, const struct coop_kernel_info *k, size_t n,
                   const struct coop_kernel_elems *el, size_t nel);
/* kernel add's outcome: the kernel as coopd now runs it. */
void print_added(const struct ctl *x, const struct coop_kernel_info *k,
                 const struct coop_kernel_elems *el, size_t nel);
void print_status(const struct ctl *x, const struct coop_job_status *s, size_t n);
void print_stats(const struct ctl *x, const struct coop_stats *s, const struct coop_metrics *m);
/* One snapshot of top: STATS, STATUS (every job) and, from a daemon that
 * answers it, TOP. */
enum { TOP_SORT_JOB, TOP_SORT_WORKERS, TOP_SORT_KERNEL, TOP_NSORT };
const char *top_sort_name(int sort);
struct top_view {
  const struct coop_stats *stats;
  const struct coop_metrics *metrics; /* .available 0 from an older coopd */
  int sort;                           /* the jobs table's order: TOP_SORT_* */
  const struct coop_job_status *status;
  size_t nstatus;
  int have_top; /* the daemon answered TOP: wg and jobs below are valid */
  const struct coop_wg *wg;
  size_t nwg;
  const struct coop_topjob *jobs;
  size_t njobs;
  const char *note;   /* why there is no TOP part, or "" */
  int device;         /* whose workgroups wg and jobs are (top --device) */
  unsigned map_width; /* workgroups per line of the map */
};
void print_top(const struct ctl *x, const struct top_view *v);
/* Nearest-rank percentile (p in 0..100) of v[0..n) sorted ascending. */
double percentile(const double *v, size_t n, double p);
void sort_doubles(double *v, size_t n);

/* coopctl_keys.c: top's keys. keys_open: 1 if stdin is a terminal, now
 * read key by key (restored at exit); keys_wait: the key pressed within ms,
 * or 0. */
int keys_open(void);
int keys_wait(unsigned ms);
void keys_close(void);

/* coopctl_metrics.c */
int cmd_metrics(struct ctl *x, int argc, char **argv);
/* coopctl_kernels.c */
int cmd_kernels(struct ctl *x, int argc, char **argv);
int cmd_kernel(struct ctl *x, int argc, char **argv);
int cmd_reload(struct ctl *x, int argc, char **argv);

/* coopctl_render.c */
int cmd_render(struct ctl *x, int argc, char **argv);

/* coopctl_app.c */
int cmd_app(struct ctl *x, int argc, char **argv);

#endif /* COOPCTL_H */
