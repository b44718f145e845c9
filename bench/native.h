/*
 * native.h: coop-bench-native, every cooperative application of
 * apps/ against its native baseline: the same device source
 * (NAME.cl) compiled alone with NVRTC into a plain CUDA cooperative kernel
 * (grid-wide barriers from cooperative_groups, launched with
 * cuLaunchCooperativeKernel at the occupancy bound), beside the coop
 * megakernel running the same task (native.c). native_cuda.c holds the
 * CUDA side: the driver and NVRTC (dlopen), the source, the launches.
 */
#ifndef COOP_BENCH_NATIVE_H
#define COOP_BENCH_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app.h"

#define NB "coop-bench-native"

/* ------------------------------------------------------------ source */

/* The native source of app a: <cooperative_groups.h>, the runtime's
 * dialect.h, shared.h and api.h, the native prelude (what the apps call
 * of primitives.cl and barrier.cl), taskqueue.cl, NAME.cl, and the entry
 * native_KERNEL(ch, dev, arena). malloc'ed, NULL when out of memory. */
char *native_source(const struct coop_app *a);
/* The entry point's name: "native_" + a->kernel. */
void native_entry_name(const struct coop_app *a, char *buf, size_t n);
/* Compiles the native source of a with NVRTC for arch ("sm_90"); no GPU
 * needed. 0, or 1 with the reason in err (the NVRTC log on stderr). On
 * success *cubin_bytes says how large the cubin was. */
int native_compile_only(const struct coop_app *a, const char *arch, size_t *cubin_bytes, char *err,
                        size_t errlen);
/* The include directories NVRTC is given (for messages). */
const char *native_include_dirs(void);

/* ------------------------------------------------------------ device */

struct native_dev {
  int device;
  char name[256];
  int sms, cc_major, cc_minor, driver;
  int coop_launch; /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  int64_t timeout_ns;
  /* CUDA objects, opaque here */
  void *ctx, *stream, *ev0, *ev1;
  char err[1024];
};

/* The device's primary context (the one the coop runtime of this process
 * uses too), a stream, two events. 0 or 1 (err). */
int native_dev_open(struct native_dev *d, int device);
void native_dev_close(struct native_dev *d);
/* Prefetches managed memory [p, p + bytes) to the device (the coop
 * runtime's arena buffers); 0 or 1 (err). */
int native_dev_prefetch(struct native_dev *d, void *p, size_t bytes);

/* One app's kernel, built for the device and loaded. */
struct native_kernel {
  const struct coop_app *app;
  void *mod, *fn;
  int regs, shared_bytes, local_bytes; /* static shared memory; local (spill) per thread */
  int blocks_per_sm;                   /* occupancy bound at `local` threads */
  unsigned local, blocks;              /* the launch: blocks x local */
};

/* Compiles (sm_XY of the device), loads, reads the attributes and the
 * occupancy at local threads per block. blocks = blocks_per_sm x SMs, or
 * `blocks` when nonzero (refused above the co-residency bound). */
int native_kernel_open(struct native_dev *d, struct native_kernel *k, const struct coop_app *a,
                       unsigned local, unsigned blocks);
void native_kernel_close(struct native_dev *d, struct native_kernel *k);

/* A task (prepared for k->blocks groups) in device memory: one arena of
 * its buffers at 64-byte aligned offsets, a channel, a zeroed coop_dev. */
struct native_task {
  struct coop_app_task *t;
  size_t arena_bytes;
  size_t off[COOP_RT_MAX_ARGS];
  unsigned char *image;      /* the arena's initial contents, host side */
  uint64_t arena, chan, dev; /* device pointers */
};

int native_task_open(struct native_dev *d, struct native_task *nt, struct coop_app_task *t);
void native_task_close(struct native_dev *d, struct native_task *nt);
/* Resets the buffers and the channel, launches k once (cooperative launch),
 * waits (at most d->timeout_ns), *ns from the events around the launch.
 * 0; 1 on an error (err); 2 when the kernel did not finish in time (it
 * cannot be stopped: the process must exit). */
int native_task_run(struct native_dev *d, struct native_kernel *k, struct native_task *nt,
                    double *ns);
/* The OUT and INOUT buffers back into the host copies of t, a task
 * prepared like nt's (same layout; a fresh one per run, since collect may
 * take its buffers); *fault the channel's fault word (a view's
 * out-of-bounds access). 0 or 1 (err). */
int native_task_read(struct native_dev *d, struct native_task *nt, struct coop_app_task *t,
                     unsigned *fault);

/* ------------------------------------------------------------ --barriers */

/* A plain grid sync's cost per shape (native_barrier.c): a table on stdout,
 * one CSV row per sample. 0, or 1 with the reason in d->err. */
/* After one native_task_run: a launch of the same task again, the host
 * spinning on cuStreamQuery until it is done; host ns, launch included. */
int native_task_trip(struct native_dev *d, struct native_kernel *k, struct native_task *nt,
                     double *ns);
/* coop-bench-native --barriers: a plain launch's round trip (a no-op kernel,
 * launch -> done seen by the host) at 1 block and the occupancy bound, the
 * floor of coop-bench-micro's dispatch round trip. */
int native_launch_trips(struct native_dev *d, unsigned local, FILE *csv);
int native_barriers(struct native_dev *d, const unsigned *locals, int nlocals, FILE *csv);

#endif /* COOP_BENCH_NATIVE_H */
