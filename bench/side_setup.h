/*
 * side_setup.h: what coop-bench-side's setups share: the options, the
 * results, the bench (the GPU objects every setup runs against), the
 * windows (the long kernel back to back with the graphics tasks beside it),
 * the second process, and the table of setups (side_setups.c), one file
 * per setup (side_setup_*.c) behind it.
 */
#ifndef COOP_BENCH_SIDE_SETUP_H
#define COOP_BENCH_SIDE_SETUP_H

#include <stdio.h>
#include <sys/types.h>

#include "app.h"
#include "side.h"

#define MAXK 16

/* Setup indices: the order of side_setups[] and of the rows; the CSV names
 * them by side_setups[i].id. New setups go at the end. */
enum {
  S_ALONE,
  S_LONG,
  S_COOP_ALONE,
  S_PROCESS,
  S_STREAM,
  S_COOP,
  S_PRIO,
  S_COOP_ALONE_AHEAD0,
  S_COOP_AHEAD0,
  S_GREEN,
  S_GREEN_LONG,
  S_MPS,
  S_MPS_SPLIT,
  S_COOPD,
  S_COOPD_ALONE,
  S_COOPD_LONG,
  S_COUNT
};

struct sopts {
  double period_ms, window_s, exec_ms;
  const char *klist, *app, *csv, *report;
  long matrix, grid, local, scale, input, min_runs, device, timeout_s, launch_groups, carveout;
  long max_registers;       /* --max-registers: 0, the runtime's and coopd's own */
  long ahead_us, green_sms; /* green_sms 0: chosen */
  const char *coopd;        /* the coopd setup's daemon; NULL: the one beside this binary */
  int query;
  int check_all;                  /* --check-all: every long-kernel run checked */
  int frame_io;                   /* --frame-io: every frame moves its input in and output out */
  int coopd_frame;                /* --coopd-frame: how (g)'s frame goes (dframe.how) */
  long coopd_spin_us;             /* --coopd-spin-us: (g)'s client's wait (coop_set_spin) */
  const char *coopd_client_trace; /* --coopd-client-trace: (g)'s frames' client stamps */
  long coopd_priority;            /* --coopd-priority: (g)'s frames' (coop_job_priority) */
#define SIDE_COOPD_SETS 4
  const char *coopd_sets[SIDE_COOPD_SETS]; /* --coopd-set: (g)'s coopd's --set, after the bench's */
  unsigned ncoopd_sets;
  unsigned setups; /* bit per S_* */
  char cmd[2048];
  int argc; /* the command line, for the processes that parse it again */
  char **argv;
};

void side_defaults(struct sopts *o);
/* The command line into o: 0 (run), 1 --source, 2 --compile-only, 3
 * --report; exits 2 on a bad one. */
int side_parse(int argc, char **argv, struct sopts *o);
/* The K of a --k list against N workers (N = 0: its syntax only) into
 * ks[] and their spellings into labels[]; the count of distinct K, or -1
 * for a bad list. */
int side_k_list(const char *list, unsigned workers, unsigned *ks, char labels[][16]);

/* ------------------------------------------------------------ results */

struct run {
  int64_t t_started, t_finished;
  unsigned kills, forks, m_min;
  unsigned taken, waits; /* coop_rt_task_info.kills_taken, kill_waits */
  int checked;
};

/* One row: a setup at one K (coop), SM count (green) or limit (mps). */
struct result {
  int setup;
  unsigned k;
  char klabel[16];
  char name[64];
  int64_t t0, t1; /* the window, host clock */
  struct sample *s;
  size_t ns;
  struct run *r;
  size_t nr, capr;
  int has_long;
  int has_cpu;  /* cpu_s was measured (the coopd rows) */
  double cpu_s; /* CPU that coopd and its device process spent over the window, s */
};

#define MAXRESULTS (S_COUNT * MAXK)
extern struct result results[MAXRESULTS];
extern int nresults;
extern char header[4096]; /* the run's description, atop the tables and the CSV */
extern char title[160];   /* the plot's: "bfs on road-1024x1024" */

/* A new row (exits when the table is full); its name from the setup's. */
struct result *new_result(int setup, unsigned k, const char *klabel);
void add_run(struct result *x, const struct coop_rt_task_info *ti);
void mark_in_run(struct result *x);
void take_samples(struct result *x, struct gfx *g);
/* The tasks a row's figures are taken over. */
int counted(const struct result *x, const struct sample *s);
void free_results(void);

/* side_report.c: the tables on stdout, the CSV, .md and .png; --report. */
int emit(const struct sopts *o, int with_csv);
int save_csv(const struct sopts *o); /* the CSV so far, after each setup */
int read_csv(const char *path, struct sopts *o);

/* ------------------------------------------------------- the coop task */

struct coopgfx {
  coop_rt *rt;
  struct coop_matmul *mm;
  float *chk;
  unsigned k;
  int64_t timeout_ns;
  coop_task_id id;
  int64_t ahead_ns;     /* gathering ahead of the next release (--ahead); 0: off */
  void *io_in, *io_out; /* --frame-io: a's bytes in, the output's out (host); NULL: none */
  float *out;           /* the task in flight's output buffer */
};

struct task_ops coop_ops(struct coopgfx *c);

/* ------------------------------------------- the second process (a) */

/* The bench run again as a second process (SB --child ...), the plain
 * matmul released every P there; "go" and "stop" over a pipe, the samples
 * back over another. env: variables set in it only (NULL-terminated
 * "NAME=VALUE" strings, or NULL). */
struct child {
  pid_t pid;
  int ctrl, data;
  char name[256];
};

/* SB MODE CTRL_FD DATA_FD ARGS... with env; waits for its "ready NAME"
 * (what: the process, for the messages). */
int child_exec(struct child *c, const char *mode, char *const *args, char *const *env,
               const char *what);
int child_spawn(struct child *c, const struct sopts *o, const struct plain *p, char *const *env);
int child_say(struct child *c, const char *what);
int child_collect(struct child *c, struct result *x);
int child_end(struct child *c);
/* This process's environment with env's "NAME=VALUE" strings in place of
 * (or beside) its own, built before a fork for execve: a malloc'ed array,
 * the strings not copied. */
char **side_child_env(char *const *env);
/* A line from fd within timeout_ms (without the newline); 0 on EOF,
 * timeout or error. */
int read_line_to(int fd, char *buf, size_t n, int timeout_ms);

/* ------------------------------------------------------------ windows */

struct bench {
  struct sopts *o;
  struct plain p;
  coop_rt *rt;
  unsigned workers;
  const struct coop_app *app;
  struct coop_app_input in;
  struct coop_matmul mm;
  float *chk;
  void *io_in, *io_out; /* --frame-io: coop_rt_host_buffer's, for (c); else NULL */
  struct child child;   /* (a)'s, started before the megakernel */
  double e_plain_ms, e_coop_all_ms;
  int64_t window_ns;
  unsigned ks[MAXK]; /* the K of --k against the megakernel's workers */
  char klabels[MAXK][16];
  int nk;
  struct coopgfx cg[MAXK];
  int no_plain;      /* no CUDA driver (the PoCL test hook): SETUP_CUDA setups skipped */
  unsigned launched; /* the megakernel's workgroups, for a coopd launched alike */
  void *cuda_ctx;    /* the megakernel's CUcontext (green), NULL: the primary one */
  unsigned cuda_sms; /* its SMs */
};

/* The graphics tasks started by `start` and stopped by `stop` around a
 * window of the long kernel. */
struct gfx_ctl {
  int (*start)(struct bench *b, void *arg);
  int (*stop)(struct bench *b, void *arg, struct result *x);
  void *arg;
};

/* Graphics alone: ops released for the window, nothing else. */
int gfx_alone(struct bench *b, struct result *x, const struct task_ops *ops);
/* The long kernel back to back for the window (at least --min-runs runs),
 * its runs checked (side_check_runs); ctl (or NULL) around it. */
int long_window(struct bench *b, struct result *x, const struct gfx_ctl *ctl);
/* Checks the runs' outputs (outs[i] for x->r[i], NULL: not kept) against
 * the CPU after the window (x->t0, x->t1), sets their checked flags and
 * frees outs and them: the first and the last run, then those the
 * scheduler resized (a kill or a fork), then the others, until checking
 * has taken as long as the window (at least 1 s), or all of them with
 * --check-all. A GPU runs game's input in 3 ms and its CPU reference takes
 * a third of a second: a 2 s window's 600 runs would take minutes to
 * check. 1 if a checked output was wrong. */
int side_check_runs(struct bench *b, struct result *x, void **outs);
/* A graphics thread in this process, as ctl's arg. */
struct thread_arg {
  struct gfx g;
  struct task_ops ops;
};
int th_start(struct bench *b, void *arg);
int th_stop(struct bench *b, void *arg, struct result *x);
/* Median execution time of 5 coop tasks of k groups, idle megakernel, ms. */
int coop_measure(struct bench *b, unsigned k, double *ms);
/* The long kernel's input (b->app, b->in): 0, 1, or 2 for a bad --input. */
int side_input(struct bench *b);
/* The megakernel with the long kernel's application (and with_matmul: the
 * matmul task) launched: b->rt, b->workers. 0 or 1 (the message printed). */
int side_megakernel(struct bench *b, int with_matmul);
/* One run of the long kernel alone, checked, not recorded. */
int side_long_warm_up(struct bench *b);
/* "SB: NAME ..." on stdout, flushed. */
void say_start(const struct result *x);
/* "SB: NAME: skipped: WHY" on stdout: a setup this machine cannot run. */
void say_skip(const char *name, const char *why);

/* ------------------------------------------------------ the setups */

enum {
  SETUP_IDLE_GPU = 256, /* runs first, before the megakernel is launched */
  SETUP_LONG = 1,       /* the long kernel runs in its window: slowdown columns */
  SETUP_NO_GFX = 2,     /* no graphics task (the long kernel alone) */
  SETUP_GATHER = 4,     /* a coop task: the gather column */
  SETUP_PER_K = 8,      /* one row per K of --k */
  SETUP_CUDA = 16,      /* plain CUDA objects of its own (not the PoCL test hook's stub) */
  SETUP_EXTRA = 32,     /* not in the default --setups (named, or "all") */
  SETUP_HIDDEN = 64,    /* a row another setup makes; not named in --setups */
  SETUP_OWN_LONG = 128, /* its long kernel in processes of its own: runs after the
                           megakernel of this process is closed */
};

struct side_setup {
  const char *id;    /* --setups and the CSV's setup column */
  const char *label; /* the row's name (the K follows for SETUP_PER_K) */
  const char *desc;  /* --help's line */
  unsigned flags;
  /* Before the megakernel is launched (or NULL): (a)'s process. */
  int (*prepare)(struct bench *b);
  /* Its rows (new_result): 0, or 1 on a failed or wrong run or task. A
   * setup that cannot run here prints say_skip and returns 0. */
  int (*run)(struct bench *b, int setup);
  /* The rows its ratios are against: the latency's (the row of this setup
   * at the same K; 0 = S_ALONE, (0)) and the long kernel's (0: S_LONG).
   * A setup whose own path differs from this process's megakernel is
   * measured against itself without the other kernel. */
  int gfx_base, long_base;
};

extern const struct side_setup side_setups[S_COUNT];

int setup_alone_run(struct bench *b, int setup);
int setup_long_run(struct bench *b, int setup);
int setup_coop_alone_run(struct bench *b, int setup);
int setup_slice_prepare(struct bench *b);
int setup_slice_run(struct bench *b, int setup);
int setup_stream_run(struct bench *b, int setup);
int setup_coop_run(struct bench *b, int setup);
int setup_green_run(struct bench *b, int setup);
int setup_mps_run(struct bench *b, int setup);
int setup_coopd_run(struct bench *b, int setup);
/* mps's long-kernel process: SB --long-child CTRL_FD DATA_FD OPTIONS... */
int side_long_child_main(int argc, char **argv);

#endif /* COOP_BENCH_SIDE_SETUP_H */
