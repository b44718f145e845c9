/*
 * paper.h: coop-bench-paper, the experiments of paper 004 Sec. 5 on the
 * megakernel runtime and the applications of apps/:
 *
 *   overhead    Table 2: original vs cooperative form, no multitasking
 *   responsive  Figure 5: gather and execution time of graphics-like tasks
 *               of K workgroups while an application runs
 *   multitask   Figure 6 / Table 3: the application's slowdown, the
 *               achieved period and the deadline misses of periodic
 *               light / medium / heavy graphics tasks
 *
 * Every application gets its own megakernel (the application's kernel and
 * the matmul graphics task, as in 004 Sec. 4), on all workers. Timing is
 * reported, never asserted; a wrong result is an error (exit status 1).
 */
#ifndef COOP_BENCH_PAPER_H
#define COOP_BENCH_PAPER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app.h"
#include "common.h"

#define PB "coop-bench-paper"
#define NFRAC 4 /* K = 1, N/4, N/2, N-1 */

/* ------------------------------------------------------------ options */

enum experiment { EXP_OVERHEAD, EXP_RESPONSIVE, EXP_MULTITASK };

struct popts {
  enum experiment exp;
  const char *backend, *csv, *apps, *cls;
  long runs, samples, periods, local_size, max_inputs, matrix, timeout_s, scale;
  long arena_mb; /* the runtime's arena for task buffers */
  double time_scale;
  int quick, barrier; /* barrier: bit 0 plain, bit 1 query */
  int calibrate;      /* 0 auto, 1 all workers, 2 one workgroup */
  int check_all;      /* check every run of a window, whatever it costs */
  char cmd[2048];     /* the command line, before getopt permutes argv */
};

int paper_parse(int argc, char **argv, struct popts *o);
const char *exp_name(enum experiment e);

/* -------------------------------------------------------------- report */

struct out {
  FILE *csv, *md;
  char csv_path[1024], md_path[1024], png_path[1024];
  char header[4096], cmd[2048];
};

/* Opens the CSV and MD files of experiment e on backend (paths from
 * o->csv or bench/out/EXP-BACKEND.*), writes the header to stdout, and as
 * comments to the CSV. */
int out_open(struct out *w, const struct popts *o, coop_rt *rt, unsigned workers);
int out_close(struct out *w);
/* The header as a Markdown block, and the command line. */
void md_header(struct out *w, const char *title);
/* Runs gnuplot on the script in `script` (it writes w->png_path); says how
 * to install gnuplot when it is missing. 0 if the PNG was written. */
int plot(const struct out *w, const char *script);
/* A string for gnuplot's single-quoted literals and Markdown cells. */
void plain_label(char *dst, size_t n, const char *src);

/* ----------------------------------------------------- applications */

struct appctx {
  const struct popts *o;
  const struct coop_app *a;
  coop_rt *rt;
  unsigned workers;
  struct coop_matmul mm;
};

/* Whether an application is selected by --apps. */
int app_selected(const struct popts *o, const struct coop_app *a);
/* Its inputs at --scale, capped by --max-inputs. */
int app_inputs(const struct popts *o, const struct coop_app *a);
/* 1 for the graph applications (resizing barriers), 0 for work stealing. */
int app_uses_barriers(const struct coop_app *a);
/* A megakernel holding a's kernel and the matmul task, launched. */
int app_open(struct appctx *x, const struct popts *o, const struct coop_app *a);
void app_close(struct appctx *x);
/* One run of the application on in with every worker; checks the result
 * against the CPU reference. 0 if it ran and was correct; else the error is
 * printed and 1 returned. *ns gets t_finished - t_started. */
int app_run(struct appctx *x, const struct coop_app_input *in, unsigned mode, int query,
            struct coop_rt_task_info *ti, double *ns);
/* The same in two halves, for windows that check after the last run: the
 * run (its output in *outp, malloc'ed, to be checked and freed), and the
 * check (0 if correct, else printed and 1). */
int app_run_only(struct appctx *x, const struct coop_app_input *in, unsigned mode, int query,
                 struct coop_rt_task_info *ti, double *ns, void **outp);
int app_check(struct appctx *x, const struct coop_app_input *in, unsigned mode, const void *outp);
/* The matmul task for this runtime, calibrated (coop_matmul_calibrate,
 * then rescaled once from the median of 5 runs) so that one task takes
 * about e_ms on all N workers of the idle megakernel, or, with
 * gfx_calibrate_one, N x e_ms on one workgroup (the same work if it scales
 * linearly). The first call opens it: n from --matrix, or 4N (at least 48,
 * so that every group has rows at every K), halved while one repetition
 * takes more than e_ms / 4 and n / 2 >= max(48, N); later calls keep n (a
 * longer E gets more repetitions). *measured_ms gets the median of 5 runs
 * on all N workers after calibration. */
int gfx_prepare(struct appctx *x, double e_ms, double *measured_ms);
/* --calibrate one, or auto on a backend other than cuda (a CPU device,
 * where a task on all workers waits for OS time slices). */
int gfx_calibrate_one(const struct popts *o, coop_rt *rt);

/* K = 1, N/4, N/2, N-1 (at least 1), deduplicated: ks[i] with mask[i] the
 * fractions that map to it (bit j for frac_label[j]). Returns the count. */
int k_list(unsigned workers, unsigned *ks, unsigned *mask);
extern const char *const frac_label[NFRAC];
/* "1=N/4=N/2" for a mask. */
void mask_label(unsigned mask, char *dst, size_t n);

/* ---------------------------------------------------- graphics tasks */

/* One graphics task, host CLOCK_MONOTONIC: its release (the time it was
 * due), the next release, which was due at release + P or, if the task was
 * not done by then, at its finish (so next - release is the period it
 * achieved, even for the last task of a window), the call to coop_rt_submit
 * (the thread wakes up a little after the release) and coop_rt_wait's
 * return; and the runtime's record. */
struct gfx_sample {
  int64_t t_release, t_next, t_submit, t_done;
  struct coop_rt_task_info ti;
  int in_app; /* released while an application run was in progress */
};

/* A thread releasing one matmul task of K groups every period (the next
 * release waits for the previous task: at max(release + P, finish)). */
struct gfx {
  struct appctx *x;
  unsigned k;
  int64_t period_ns;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, err, started;
  char why[256];
  struct gfx_sample *s;
  size_t n, cap;
};

int gfx_start(struct gfx *g, struct appctx *x, unsigned k, double period_ms);
/* Stops and joins; 0 unless a task failed or computed a wrong product. */
int gfx_stop(struct gfx *g);
void gfx_free(struct gfx *g);

/* The application run back to back beside g (or alone: g NULL) until at
 * least min_runs runs, min_ms of time and (with g) min_in_app graphics
 * tasks released during runs, or max_ms has passed (then at least one
 * run). The outputs are checked after the last run, so that the gaps
 * between runs stay short: the first and the last run, then every run the
 * scheduler resized (a kill or a fork, or started on fewer than N groups:
 * the runs multitasking touched), then the others, until checking has
 * taken as long as the window itself (at least 1 s), or all of them with
 * --check-all. A GPU runs a scale-0 input in about a millisecond, and some
 * CPU references (game, octree) take 10 to 1000 ms: checking every run
 * would take minutes per window. A wrong result is an error (1). */
struct window {
  struct series app_ns; /* t_finished - t_started of each run */
  int64_t (*span)[2];   /* each run's [t_started, t_finished) */
  void **outs;          /* each run's output, until checked */
  unsigned char *touched;
  size_t runs, cap;
  size_t checked, ntouched, touched_checked;
  int64_t t0, t1; /* host clock at start and end */
};

struct window_spec {
  const struct coop_app_input *in;
  int query;
  long min_runs, min_in_app;
  double min_ms, max_ms;
};

int window_run(struct appctx *x, const struct window_spec *ws, struct gfx *g, struct window *w);
void window_free(struct window *w);
/* Marks g's samples released during one of w's runs; returns how many. */
size_t mark_in_app(struct gfx *g, const struct window *w);
/* Whether s was released within w (host clock): the tasks that the period
 * and the deadline misses are taken over. */
int in_window(const struct gfx_sample *s, const struct window *w);

/* ------------------------------------------------------- experiments */

int run_overhead(const struct popts *o);
int run_responsive(const struct popts *o);
int run_multitask(const struct popts *o);

/* Graphics workload classes of 004 Sec. 5.2 and the figures of Table 3. */
struct gclass {
  const char *name;
  double period_ms, exec_ms; /* P, E (before --time-scale) */
  double paper_slowdown;     /* 004 Table 3, cooperative */
  const char *paper_k;       /* the resources it used */
};
extern const struct gclass gclasses[3];
const struct gclass *gclass_find(const char *name);

#endif /* COOP_BENCH_PAPER_H */
