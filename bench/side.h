/*
 * side.h: coop-bench-side (bench/README.md), one graphics-like kernel beside
 * one long kernel on an NVIDIA GPU, in the setups a user has today and in
 * ours, side by side in one run:
 *
 *   (0)  the graphics kernel alone on an idle GPU (plain CUDA launch)
 *   long the long kernel alone (the application in the coop megakernel)
 *   (0c) the graphics kernel as a coop task of K groups, idle megakernel
 *   (a)  plain CUDA in a separate process beside the long kernel: the
 *        driver time-slices between the two contexts
 *   (b)  plain CUDA on another stream of the long kernel's process
 *   (c)  ours: the graphics kernel is a non-cooperative coop task that
 *        gathers K workgroups from the cooperative long kernel
 *   (d)  as (b) on the highest-priority stream
 *   (e)  CUDA green contexts: the two kernels on disjoint sets of SMs
 *   (f)  MPS: the two kernels in two client processes of one MPS server
 *   (g)  through coopd: a client writes the graphics kernel's input into a
 *        device buffer, submits it through libcoop and reads its output
 *        back every frame, beside the long kernel as a coopd job
 *
 * side_setups.c holds the table of setups, one file each; side_setup.h
 * what they share. This header: the plain launches and the release loop.
 *
 * The graphics kernel is kernels/apps/matmul.cl in every setup: for the
 * plain launches it is compiled alone with NVRTC through the same
 * portability header (device/dialect.h) and a coop_ctx of its own
 * (side_cuda.c). bench/README.md says what each setup measures and why.
 */
#ifndef COOP_BENCH_SIDE_H
#define COOP_BENCH_SIDE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define SB "coop-bench-side"

/* ----------------------------------------- the matmul's data and check */

/* The inputs of apps/matmul.c (coop_matmul_open), the same
 * formula: a[i] = (i*7+3)%7 - 3, b[i] = (i*5+1)%7 - 3; every product and
 * sum is exact in float, so a device result equals ref bit for bit. */
void side_mm_inputs(float *a, float *b, uint32_t n);
void side_mm_ref(const float *a, const float *b, float *ref, uint32_t n);
/* 0 if c == ref bit for bit, else 1 and the first difference in why. */
int side_mm_compare(const float *c, const float *ref, uint32_t n, char *why, size_t len);

/* ----------------------------------- plain CUDA (side_cuda.c, dlopen) */

/* The standalone source: dialect.h, a coop_ctx shim, matmul.cl, an entry
 * point coop_side_matmul(a, b, c, n, reps). malloc'ed. */
char *side_plain_source(void);
/* Compiles it with NVRTC for arch (e.g. "sm_90"); needs no GPU. 0 or 1
 * (the log on stderr). */
int side_compile_only(const char *arch);

struct plain {
  int device;
  unsigned grid, local;
  uint32_t n, reps;
  size_t bytes;
  float *ref; /* CPU result */
  char name[256];
  int sms, cc_major, cc_minor, driver;
  int prio, prio_least, prio_greatest; /* the stream's, and the context's range */
  int own_ctx;                         /* the primary context, retained here */
  /* CUDA objects, opaque here */
  void *ctx, *mod, *fn, *stream, *ev0, *ev1;
  uint64_t a, b, c, chk; /* device pointers */
  int io;                /* set before plain_data: every launch moves a in and its output out */
  void *io_in, *io_out;  /* page-locked host copies of a and the output (io) */
  int64_t timeout_ns;    /* plain_finish gives up after this long (default 120 s) */
  char err[512];
};

/* Context (the device's primary one: the same as the coop runtime's in
 * this process), the kernel built and loaded, a non-blocking stream of the
 * highest priority, two events. */
int plain_open(struct plain *p, int device, unsigned local);
/* The same in the context ctx (a green context's, as a CUcontext), which
 * the caller keeps alive until plain_close; NULL: the primary one. */
int plain_open_ctx(struct plain *p, int device, unsigned local, void *ctx);
/* No context current in the calling thread: a green context may be
 * current in only one thread at a time. */
void plain_unbind(void);
/* The stream again (after the work on it is done): the highest priority
 * of the context, or (highest = 0) the default priority, as a plain
 * cuStreamCreate gives. */
int plain_stream(struct plain *p, int highest);
/* The kernel's preferred shared-memory carveout, percent of the unified
 * L1/shared memory that is shared (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_
 * MEMORY_CARVEOUT); < 0 leaves the driver's default. */
int plain_carveout(struct plain *p, int pct);
/* Device buffers for n x n, inputs uploaded, CPU reference computed. */
int plain_data(struct plain *p, uint32_t n);
/* One launch of grid x local threads; chk: into the check buffer. With io,
 * a copied in from io_in before it and its output to io_out after it, on
 * the same stream (outside the events: exec is the kernel's). */
int plain_launch(struct plain *p, int chk);
/* Spins (cuStreamQuery) until the launch is done; *exec_ns from the events. */
int plain_finish(struct plain *p, int64_t *exec_ns);
int plain_reset_chk(struct plain *p); /* NaN the check buffer */
int plain_check(struct plain *p, char *why, size_t len);
/* Median exec time of `runs` launches (after one unrecorded), ns. */
int plain_measure(struct plain *p, int runs, double *ns);
void plain_close(struct plain *p);

/* ------------------------------------------------- periodic releases */

/* One graphics task. Host CLOCK_MONOTONIC ns (the same clock in every
 * process): its release (when it was due), the launch or submit call, the
 * moment the host saw it done, and the next release (release + P, or its
 * finish if later: one frame at a time). exec: the kernel's time on the
 * device (CUDA events around the launch; coop: t_finished - t_started);
 * gather: coop only, released -> gathered. */
struct sample {
  int64_t t_release, t_launch, t_done, t_next;
  int64_t exec_ns, gather_ns;
  int64_t nap_end; /* when the loop's last nap before the release ended (0: none, or not
                    * known: setup (a)'s samples, --report's) */
  int chk;         /* the window's first task: into the check buffer, left out of the figures */
  int in_run;      /* released while a run of the long kernel was in progress */
};

struct task_ops {
  void *ctx;
  int (*reset_chk)(void *ctx);
  /* next_ns: when the task after this one is released if this one is on
   * time (CLOCK_MONOTONIC ns), for gathering ahead */
  int (*launch)(void *ctx, int chk, int64_t next_ns);
  int (*finish)(void *ctx, struct sample *s); /* sets t_done, exec_ns, gather_ns */
  int (*check)(void *ctx, char *why, size_t len);
};

struct gfx {
  struct task_ops ops;
  int64_t period_ns;
  atomic_int stop;
  int err;
  char why[512];
  struct sample *s;
  size_t n, cap;
  pthread_t th;
  int started;
};

/* The loop itself (in the calling thread): the check buffer reset, then a
 * task at every release until g->stop; the first task goes into the check
 * buffer and is checked. 0, or 1 with g->why. */
int gfx_loop(struct gfx *g);
int gfx_start(struct gfx *g, const struct task_ops *ops, int64_t period_ns); /* a thread */
/* The plain launch as task ops (ctx = p). */
struct task_ops side_plain_ops(struct plain *p);
int gfx_stop(struct gfx *g); /* stops, joins; g->err */
void gfx_free(struct gfx *g);

/* (a): the child process (coop-bench-side --child ...). */
int side_child_main(int argc, char **argv);

#endif /* COOP_BENCH_SIDE_H */
