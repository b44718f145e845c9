/*
 * backend.h: what the runtime needs from a device API, as one ops table.
 * opencl.c and cuda.c fill it. Threading: every op is called from
 * the thread that owns the coop_rt during open/launch/close; none is called
 * while another runs. Errors: 0 or a negative coop_errno, with detail
 * written through coop__rt_msg().
 */
#ifndef COOP_BACKEND_H
#define COOP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct coop_rt;
struct coop_rt_options;
struct coop_rt_width;
struct coop_rt_io;

/* A task's copies for queue_io: what runtime.c and io.c fill in. */
struct coop__io_plan {
  const struct coop_rt_io *in, *out;
  unsigned nin, nout;
  void *pub; /* u32 words of shared memory (alloc_shared) */
  uint32_t pub_val;
  void *state;
  uint32_t final;
  void *flag;
  uint32_t flag_val;
  int gated; /* the host's way: published COOP_TF_GATED, its gate opened after the copies in */
};

struct coop__backend_ops {
  const char *name;
  unsigned default_local_size; /* threads per workgroup when the options say 0 */
  /* The device clock's nominal ns per tick, or 0 where it is not known
   * (PoCL's TSC): then the launch fits it over 50 ms (runtime.c,
   * calibrate). */
  double clock_ns_per_tick;
  /* Pick and check the device; fill rt->device_name, rt->compute_units. */
  int (*open)(struct coop_rt *rt, const struct coop_rt_options *o);
  /* Host-visible memory the running kernel and the host share with atomics
   * (fine-grained SVM). Zeroed. */
  void *(*alloc_shared)(struct coop_rt *rt, size_t bytes);
  void (*free_shared)(struct coop_rt *rt, void *p);
  /* Optional: the task-buffer arena, host-visible but best placed for the
   * device (CUDA: managed memory). NULL: alloc_shared / free_shared. */
  void *(*alloc_arena)(struct coop_rt *rt, size_t bytes);
  void (*free_arena)(struct coop_rt *rt, void *p);
  /* Optional: device memory the host never touches but by copy_arena,
   * for coop_rt_alloc_device (arena.c, "Two zones"); allocated with the
   * arena and freed with it, no kernel running. NULL: no such memory
   * (OpenCL's buffers are host memory: nothing to gain). */
  void *(*alloc_zone)(struct coop_rt *rt, size_t bytes);
  void (*free_zone)(struct coop_rt *rt, void *p);
  /* Optional: copy bytes from host memory into arena memory (to_arena) or
   * back, by the device's copy engine, while the megakernel runs. NULL:
   * the host copies (OpenCL's fine-grained SVM is host memory). CUDA: a
   * host copy into managed pages that live on the GPU faults page by page
   * (272 KB took 2 ms on an H200). */
  int (*copy_arena)(struct coop_rt *rt, void *dst, const void *src, size_t bytes, int to_arena);
  /* Optional: copy bytes from one part of the arena to another on the
   * device, while the megakernel runs, and return once they are there.
   * NULL: the host copies (coop_rt_arena_dup). */
  int (*dup_arena)(struct coop_rt *rt, void *dst, const void *src, size_t bytes);
  /* Optional: the arena's bytes [p, p + bytes), whole pages, placed in
   * host memory and reached by the device over the bus (on), or left
   * where their use puts them again (off), for coop_rt_alloc_host. NULL:
   * the arena is host memory already (OpenCL's fine-grained SVM). */
  int (*place_host)(struct coop_rt *rt, void *p, size_t bytes, int on);
  /* Optional: the arena's bytes [p, p + bytes) placed on the device now,
   * before any kernel runs, and returned once they are there. NULL: the
   * arena's pages need no placing (OpenCL). */
  int (*warm_arena)(struct coop_rt *rt, void *p, size_t bytes);
  /* Optional: device memory another process opens by the handle ipc
   * (coop_rt_share_alloc / _open), and its release (opened: a mapping of
   * another's). NULL: the arena is host memory, and a memfd serves
   * (share.c). Copies to and from it go by share_copy. */
  int (*share_alloc)(struct coop_rt *rt, size_t bytes, void **p, uint8_t ipc[64]);
  int (*share_open)(struct coop_rt *rt, const uint8_t ipc[64], void **p);
  void (*share_release)(struct coop_rt *rt, void *p, int opened);
  /* With share_alloc: a share's bytes into the arena (to_arena) or out of
   * it, done when it returns. NULL: memcpy (the host kind). */
  int (*share_copy)(struct coop_rt *rt, void *dst, const void *src, size_t bytes, int to_arena);
  /* Optional: a copy of a few bytes by the copy engine, from pinned host
   * memory into memory of the arena's kind, done when it returns, so that
   * a copy soon after it does not pay the path's wake-up
   * (coop_rt_copy_warm); from `host` (bytes > 0, at most what the
   * backend keeps room for) where the copy to come reads those pages
   * (coop_rt_copy_warm_from). NULL: nothing to warm (the host copies). */
  int (*copy_warm)(struct coop_rt *rt, const void *host, size_t bytes);
  /* Optional: a task's copies queued on the device, returning at once
   * (coop_rt_submit_io): the ranges in, then *pub = pub_val (the
   * submit's publication); on another queue, once *state >= final, the
   * ranges out, then *flag = flag_val. 1: not possible for these ranges
   * (host memory the device cannot reach at once): nothing was queued.
   * NULL: never possible (the runtime copies on the host). */
  int (*queue_io)(struct coop_rt *rt, const struct coop__io_plan *p);
  /* With queue_io: every queued copy done (at close, once every task it
   * waits for is final), before the memory it names is freed. */
  void (*io_drain)(struct coop_rt *rt);
  /* optional: host memory the copy engine reaches at full speed (pinned),
   * for coop_rt_host_buffer; NULL: malloc. free_host, with it: frees
   * such memory (at close, the megakernel ended) */
  void *(*alloc_host)(struct coop_rt *rt, size_t bytes);
  void (*free_host)(struct coop_rt *rt, void *p);
  /* Optional: host memory someone else allocated (a client's mapped
   * memfd) made such memory until host_unregister, for
   * coop_rt_host_register; NULL: not possible (nothing to gain) */
  int (*host_register)(struct coop_rt *rt, void *p, size_t bytes);
  void (*host_unregister)(struct coop_rt *rt, void *p);
  /* Device memory for the scheduler context, zeroed; one per runtime. A
   * second call (a relaunch after parking) zeroes the same memory again. */
  int (*alloc_dev)(struct coop_rt *rt, size_t bytes);
  /* Copy bytes from the host into that memory at offset, before a launch
   * (what the runtime's device state does not start at zero with). */
  int (*write_dev)(struct coop_rt *rt, size_t offset, const void *src, size_t bytes);
  /* Optional: copy the device memory while the megakernel runs (diagnostics,
   * coop_rt_dump). NULL where the device API cannot (OpenCL's in-order
   * queue would wait for the megakernel). */
  int (*read_dev)(struct coop_rt *rt, void *dst, size_t bytes);
  /* Build `src`; on failure the compiler log goes to the rt message. */
  int (*build)(struct coop_rt *rt, const char *src, const char *options);
  /* Optional, after build: how many workgroups of local_size the device
   * can hold at once for this megakernel (the occupancy bound), and in why
   * what bounds it (registers, shared memory, threads or blocks per
   * multiprocessor). NULL where the API cannot say (OpenCL): the runtime
   * then launches 2 x CU + 1 and discovery finds what ran. */
  int (*occupancy)(struct coop_rt *rt, unsigned local_size, unsigned *groups, char *why,
                   size_t len);
  /* Optional: the width of a megakernel (struct coop_rt_width, without
   * name): src NULL, the one built (its occupancy at rt->local_size);
   * else src built on the side into a program of its own that nothing
   * launches, with the build's options (rt->max_registers included), then
   * freed. Runs beside a running megakernel: it loads nothing into the
   * device's context (CUDA: cuModuleLoadData would wait for the megakernel
   * to end). A build that fails is not an error: w->measured 0 and a note.
   * NULL: nothing is known ("n/a"). */
  int (*width)(struct coop_rt *rt, const char *src, struct coop_rt_width *w);
  /* Rebuilding in place (rebuild.c): build_next builds src beside the
   * running megakernel, on any thread, into *next without touching the
   * program it runs and loading nothing into the device's context (CUDA:
   * the cubin, loaded at the next launch); on failure the log goes to err.
   * swap_next, with the megakernel parked, lets the current program go and
   * makes next the one the next launch runs; free_next lets an unused
   * next go. */
  int (*build_next)(struct coop_rt *rt, const char *src, void **next, char *err, size_t errlen);
  void (*swap_next)(struct coop_rt *rt, void *next);
  void (*free_next)(struct coop_rt *rt, void *next);
  /* Launch the megakernel (mailbox, dev, arena) and return at once. */
  int (*launch)(struct coop_rt *rt, unsigned groups, unsigned local_size);
  /* Block until the megakernel has exited. */
  int (*wait_exit)(struct coop_rt *rt);
  void (*close)(struct coop_rt *rt);
};

extern const struct coop__backend_ops coop__opencl_ops;
extern const struct coop__backend_ops coop__cuda_ops;

#endif /* COOP_BACKEND_H */
