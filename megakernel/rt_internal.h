/* rt_internal.h: the runtime's private state, shared by runtime.c,
 * source.c, arena.c and the backends. */
#ifndef COOP_RT_INTERNAL_H
#define COOP_RT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "coop_rt.h"
#include "coop_util.h" /* coop__now_ns */
#include "device/shared.h"

struct coop__kernel {
  char name[COOP_NAME_MAX];
  int cooperative;
  char *source;
};

/* One task buffer: data at [off, off + len), len the request rounded up
 * to 64 bytes, req the request; a guard zone of COOP__ARENA_GUARD bytes
 * on each side (arena.c). A buffer placed in host memory
 * (coop_rt_alloc_host) takes whole pages of COOP__ARENA_HOST_PAGE bytes,
 * guards included, so that its placement is no other buffer's. */
#define COOP__ARENA_GUARD 64u
#define COOP__ARENA_HOST_PAGE (64u << 10)
/* Where the arena wants the copy engine (coop_rt_arena_direct), a block
 * whose footprint, guards included, is at most this many bytes is filled
 * and checked in one copy of the whole footprint (arena.c). */
#define COOP__ARENA_ONE_COPY (64u << 10)
struct coop__arena_block {
  size_t off, len, req;
  int host; /* placed in host memory (coop_rt_alloc_host) */
};

/* A buffer of coop_rt_host_buffer (arena.c). */
struct coop__host_buf {
  void *p;
  int backend; /* from ops->alloc_host, else malloc */
  struct coop__host_buf *next;
};

struct coop_rt {
  const struct coop__backend_ops *ops;
  void *be; /* backend private */
  char msg[16384];
  char device_name[256];
  unsigned compute_units;
  /* a bound the backend knows on the workgroups that can run at once (0:
   * none): discovery closes once it has seen that many (runtime.c,
   * discover) instead of waiting out its window */
  unsigned co_resident_max;
  unsigned local_size, launch_groups, window_ms;
  unsigned max_registers; /* coop_rt_options.max_registers */
  int built, launched, exited;
  int parked; /* the megakernel left the device; coop_rt_unpark relaunches it */
  /* coop_rt_next_swap: the next unpark launches a new program, whose
   * shape is chosen again (unless launch_fixed: the options named it) and
   * found by a discovery of its own */
  int reshape, launch_fixed;
  size_t note_shape;       /* where launch_shape's part of backend_note starts (0: none yet) */
  int cl_gpu_only;         /* backend auto, first pass: no CPU OpenCL device */
  char backend_note[1024]; /* which backend, and why; after launch also the shape */

  struct coop__kernel kernels[COOP_MAX_KERNELS];
  int nkernels;
  /* coop_rt_kernel_width's lone builds, made once each */
  struct coop_rt_width widths[COOP_MAX_KERNELS];
  uint8_t width_made[COOP_MAX_KERNELS];

  struct coop_mailbox *mb; /* shared */
  uint8_t *arena;          /* shared */
  size_t arena_bytes;
  /* The device zone (arena.c, "Two zones"): device memory past the
   * arena in the blocks' offsets, NULL where there is none */
  uint8_t *zone;
  size_t zone_bytes;
  struct coop__arena_block *blocks;
  size_t nblocks, cap_blocks;
  uint64_t canary_key; /* guard zones' canaries (arena.c) */

  unsigned participants;
  /* clock fit (runtime.c, calibrate and coop_rt_refit):
   * ns = ref_ns + (ticks - ref_ticks) * tick_ns, the line through the
   * anchor (the first calibration's tightest ping) and the latest refit */
  double tick_ns;
  int64_t ref_ns;
  uint64_t ref_ticks;
  int64_t anchor_ns, anchor_rtt;
  uint64_t anchor_ticks;
  int64_t best_rtt;       /* the tightest round trip seen: what "unloaded" is */
  int64_t fit_at, fit_ok; /* host ns of the last refit tried, and made */
  uint64_t fits, drifts;

  /* coop_rt_share_*: p NULL where free (share.c) */
  struct coop__share {
    uint8_t *p;
    size_t n;
    int opened; /* another process's */
    int fd;     /* the host kind's memfd, else -1 */
  } shares[COOP_RT_SHARES];

  pthread_mutex_t lock; /* slots, ring, arena */
  /* coop_rt_host_buffer's, freed at close (lock) */
  struct coop__host_buf *host_bufs;
  uint32_t sub_head; /* host copy of mb->sub_head */
  uint32_t gen[COOP_RING];
  int64_t submitted_ns[COOP_RING];
  /* Copies ordered with a task (io.c). pub_pending: the device writes
   * mb->sub_head = pub_head after a task's copies in, and no other submit
   * publishes until it has (lock). Per slot: io_state (IO_* in io.c),
   * for the device's way the value it writes into io_flags[slot] after
   * the copies out (io_flags: shared memory, COOP_RING words, made at the
   * first such submit), for the host's way the ranges to copy out, and
   * the first error of either. */
  int pub_pending;
  uint32_t pub_head;
  _Atomic uint32_t *io_flags;
  uint32_t io_next;
  _Atomic int io_state[COOP_RING];
  uint32_t io_seq[COOP_RING];
  int io_err[COOP_RING];
  unsigned io_nout[COOP_RING];
  struct coop_rt_io io_out[COOP_RING][COOP_RT_IO_MAX];
};

void coop__rt_msg(struct coop_rt *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* runtime.c: ns of sleep, through interruptions */
void coop__sleep_ns(long ns);

/* runtime.c: kernel `name` added to kernels[0..*n) (coop_rt_add_kernel's
 * checks): its index, or a coop code */
int coop__kernel_add(struct coop__kernel *kernels, int *n, const char *name, int cooperative,
                     const char *source);
/* runtime.c: the first of kernels[0..n) that coop_kernel_check refuses,
 * told in msg (COOP_EBUILD), else 0 */
int coop__kernels_check(const struct coop__kernel *kernels, int n, char *msg, size_t len);
/* source.c: the megakernel of rt's kernels, or of kernels[0..n) alone */
char *coop__assemble_source(const struct coop_rt *rt);
char *coop__assemble_kernels(const struct coop__kernel *kernels, int n);
/* runtime.c: the compiler options of every build (the lone ones too) */
#define COOP__BUILD_OPTIONS "-cl-std=CL3.0"
/* arena.c */
void coop__arena_init(struct coop_rt *rt);
void coop__arena_fini(struct coop_rt *rt);
/* arena.c: every coop_rt_host_buffer freed, at close (no megakernel runs) */
void coop__host_bufs_free(struct coop_rt *rt);
/* share.c: every share let go, at close (no megakernel runs) */
void coop__shares_fini(struct coop_rt *rt);
/* arena.c: the requested size of the buffer whose argument value is arg
 * (rt->lock held), 0 where no buffer starts there */
uint64_t coop__arena_len_at(const struct coop_rt *rt, uint64_t arg);
/* arena.c: [p, p + n) inside the arena or inside the device zone, p
 * before its end */
int coop__arena_has(const struct coop_rt *rt, const void *p, size_t n);
/* runtime.c: coop_rt_submit with a task's copies (io.c): with the plan's
 * ranges set, the ring entry published by the backend's queue_io after
 * the copies in (1 when the backend cannot: nothing was submitted), or
 * with host set by the submit itself, the ranges out kept for io.c */
struct coop__io_plan;
enum { COOP__IO_NONE, COOP__IO_DEVICE, COOP__IO_HOST, COOP__IO_COPYING, COOP__IO_DONE };
int coop__rt_submit_io(struct coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id,
                       struct coop__io_plan *p, int host);
/* io.c: a final task's copies out done (or waited for) before deadline
 * (CLOCK_MONOTONIC ns): 0, their error, or COOP_ETIMEDOUT */
int coop__io_finish(struct coop_rt *rt, unsigned slot, int64_t deadline);
/* io.c, a test's hook: how long a gated task's gate stays shut before its
 * copies in begin (0, the default: none), so that a test sees its
 * workers wait there */
extern long coop__io_gate_hold_ns;
/* io.c, a test's hook: an error the copies in fail with instead (0: none) */
extern int coop__io_gate_fail;
/* io.c: no submit publishes until the device has published the last
 * task with copies (lock held): 0 or COOP_ETIMEDOUT */
int coop__io_settle(struct coop_rt *rt);
/* io.c: at close, the megakernel gone: the device's copies drained, the
 * flags freed */
void coop__io_close(struct coop_rt *rt);

#endif /* COOP_RT_INTERNAL_H */
