/*
 * coop_rt.h: the megakernel runtime, host side. Used in-process by tests and
 * the demo, and by the daemon. All functions return 0 or a negative
 * coop_errno code (coop_strerror() names it); coop_rt_errmsg() adds detail.
 *
 * Life cycle: coop_rt_open -> coop_rt_add_kernel (any number) ->
 * coop_rt_launch -> coop_rt_submit / wait / task_info -> coop_rt_close.
 * Submission, waiting and task calls are thread-safe once launched.
 */
#ifndef COOP_RT_H
#define COOP_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coop_errno.h"
#include "coop_limits.h"

/* The runtime's spelling of COOP_MAX_ARGS (coop_limits.h). */
#define COOP_RT_MAX_ARGS COOP_MAX_ARGS

typedef struct coop_rt coop_rt;

struct coop_rt_options {
  const char *backend;          /* "opencl", "cuda", or NULL / "auto": an OpenCL
                                   GPU with fine-grained SVM and SVM atomics,
                                   else CUDA, else any OpenCL device (PoCL) */
  const char *platform;         /* substring of the platform name, or NULL */
  int platform_index;           /* or index; -1 = first that has a usable device */
  const char *device;           /* substring of the device name, or NULL */
  int device_index;             /* or index within the platform; -1 = first */
  unsigned local_size;          /* threads per workgroup; 0 = the backend's
                                   (CUDA 256, OpenCL 64: bench/HISTORY.md) */
  unsigned launch_groups;       /* hardware workgroups launched; 0 = the
                                   occupancy bound where the backend knows it
                                   (CUDA), else 2 x CU + 1 */
  unsigned discovery_window_ms; /* close the poll after no growth this long */
  size_t arena_bytes;           /* SVM arena for task buffers (default 64 MiB) */
  size_t device_bytes;          /* CUDA: device memory for coop_rt_alloc_device
                                   besides the arena (default 0: none) */
  unsigned test_hide_svm;       /* test hook: 1 = pretend no fine-grained buffers,
                                   2 = pretend no SVM atomics */
  void *cuda_context;           /* CUDA: run in this CUcontext (e.g. a green
                                   context's, cuCtxFromGreenCtx) instead of the
                                   device's primary context; the caller's, alive
                                   until coop_rt_close. NULL: the primary one */
  unsigned cuda_context_sms;    /* with cuda_context: the SMs it may use (the
                                   occupancy bound's multiplier); 0: the device's */
  unsigned max_registers;       /* CUDA: registers per thread the compiler may use
                                   (NVRTC --maxrregcount), 0 = its own choice; a
                                   lower cap widens the launch, and what does not
                                   fit spills to local memory (coop_rt_width's
                                   spill_bytes). OpenCL has no such option. */
};

void coop_rt_options_init(struct coop_rt_options *o);

/* Selects and checks the device. On failure *rt may still be set: read
 * coop_rt_errmsg() then coop_rt_close() it. */
int coop_rt_open(coop_rt **rt, const struct coop_rt_options *o);
const char *coop_rt_errmsg(const coop_rt *rt);
const char *coop_rt_device_name(const coop_rt *rt);
const char *coop_rt_backend(const coop_rt *rt);      /* "opencl" or "cuda" */
const char *coop_rt_backend_note(const coop_rt *rt); /* why that one */
/* 1 if `name` ("auto", "opencl", "cuda") can be asked for in this build. */
int coop_rt_backend_built(const char *name);
/* The backends built in, comma-separated, in auto's order: "opencl, cuda". */
const char *coop_rt_backends_built(void);
unsigned coop_rt_compute_units(const coop_rt *rt);

/* Registers kernel NAME (a C identifier shorter than COOP_NAME_MAX bytes)
 * written against megakernel/device/api.h; returns its index (>= 0). Only
 * before launch. */
int coop_rt_add_kernel(coop_rt *rt, const char *name, int cooperative, const char *source);
int coop_rt_kernel_index(const coop_rt *rt, const char *name);

/* Assembles and builds the megakernel without launching it (the build log
 * is in coop_rt_errmsg on COOP_EBUILD). Needs no free device: a daemon
 * builds its next megakernel while the current one runs. After it, no
 * kernel may be added. */
int coop_rt_build(coop_rt *rt);
/* Builds (unless built), launches, runs discovery, calibrates the clock. */
int coop_rt_launch(coop_rt *rt);
/* Everything of coop_rt_launch before the megakernel starts: the build,
 * the launch shape, the mailbox and the arena. Buffers may then be
 * allocated and filled (coop_rt_alloc, coop_rt_share_copy) while no
 * kernel runs; coop_rt_launch goes on from there. */
int coop_rt_prepare(coop_rt *rt);
/* A prepared runtime, not launched: room for nbufs buffers of `bytes` in
 * all placed on the device ahead of their allocation (the arena hands out
 * its first bytes first). A kernel reload does this while the jobs it will
 * carry still run, so that their staging only copies (CUDA: the managed
 * pages made on the device, 3 ms for 250 MB). COOP_ESTATE once launched. */
int coop_rt_arena_warm(coop_rt *rt, size_t bytes, unsigned nbufs);

/* Memory of the device that two processes on it both reach: a kernel
 * reload carries a suspended job's buffers from the old device process
 * to the new one through one (docs/daemon.md, "Kernel reload"), on the
 * device, where a copy through host memory crossed the bus twice.
 * coop_rt_share_alloc makes one of n bytes and fills *h, which the other
 * process passes to coop_rt_share_open. CUDA: device memory and its IPC
 * handle; a backend whose arena is host memory (OpenCL): a memfd, which
 * the other process opens through /proc (same user). At most
 * COOP_RT_SHARES per runtime; COOP_ENOMEM when none is left or the device
 * is full, COOP_EPERM where the other process cannot reach it. */
#define COOP_RT_SHARES 16
struct coop_rt_share {
  uint64_t bytes;
  int32_t pid, fd; /* the host kind: the memfd, in the process that made it */
  uint8_t ipc[64]; /* the device kind: the backend's handle (CUipcMemHandle) */
};
int coop_rt_share_alloc(coop_rt *rt, size_t n, struct coop_rt_share *h, void **p);
int coop_rt_share_open(coop_rt *rt, const struct coop_rt_share *h, void **p);
/* n bytes between a share of this runtime and a buffer of its arena (one
 * of dst, src in each), while the megakernel runs or before it: on the
 * device where the backend can. Done when it returns. COOP_EINVAL where
 * either range is not wholly inside what it should be. */
int coop_rt_share_copy(coop_rt *rt, void *dst, const void *src, size_t n);
/* The share at p let go (freed, or closed where opened). COOP_ESTATE
 * while the megakernel runs on a backend whose free would wait for it
 * (CUDA): it goes at coop_rt_close. */
int coop_rt_share_free(coop_rt *rt, void *p);
/* The megakernel's width (docs/kernels.md, "The megakernel's width"):
 * every registered kernel is compiled into one function, so the launch is
 * bounded by its heaviest member. coop_rt_kernel_width builds the
 * megakernel with kernel `index` alone (the same assembly, a one-kernel
 * list) and says what that would cost and allow; index -1 gives the
 * merged megakernel's own figures (after coop_rt_build). A lone build is
 * made at the first call and kept: it takes about as long as the merged
 * build (seconds), so nothing calls it unless asked. One that fails (a
 * device compiler can refuse a kernel alone) is not an error: measured is
 * 0 and note says why. -1: the backend cannot tell (OpenCL has no
 * register count nor occupancy bound). Returns 0, COOP_EINVAL or
 * COOP_ESTATE (index -1 before the build), COOP_ENOMEM. */
struct coop_rt_width {
  char name[COOP_NAME_MAX]; /* the kernel's; "" for the merged megakernel */
  int measured;             /* 1: the figures below; 0: note says why not */
  int regs;                 /* registers per thread */
  int shared_bytes;         /* static shared (OpenCL: local) memory per workgroup */
  int local_bytes;          /* local (OpenCL: private) memory per thread: CUDA's
                               stack frame, spills included */
  int spill_bytes;          /* of it, registers spilled (CUDA) */
  int max_local_size;       /* the most threads per workgroup it allows (OpenCL) */
  int per_cu;               /* workgroups of the launch's local size one SM holds */
  int groups;               /* per_cu x compute units: the launch it would allow */
  char bound[24];           /* what bounds per_cu: "registers", "shared memory",
                               "threads per SM", "blocks per SM"; "" */
  char note[128];           /* why not measured, or "" */
};
int coop_rt_kernel_width(coop_rt *rt, int index, struct coop_rt_width *out);
/* Of kernels[0..n) (each measured alone), the one that bounds the merged
 * launch: the lowest per_cu (then the most registers, then the most
 * shared memory), or -1 when none has figures. Pure: the daemon calls it on
 * widths a device process sent. */
int coop_rt_width_bound(const struct coop_rt_width *kernels, int n);
/* 1 when a is measured and as wide as b (the same occupancy, registers and
 * shared memory): a kernel that ties with the bound. */
int coop_rt_width_as_wide(const struct coop_rt_width *a, const struct coop_rt_width *b);
/* One line for a log or a table: "56 registers/thread, 4144 B shared/block,
 * 80 B local/thread (0 B spilled): 4 blocks/SM, 528 workgroups (registers)",
 * "n/a" where a figure is -1, or "not measured: NOTE". Returns buf. */
char *coop_rt_width_text(const struct coop_rt_width *w, char *buf, size_t len);

/* The launch shape: workgroups launched (known after launch when the
 * options left it 0) and threads per workgroup (known after open). */
unsigned coop_rt_launched_groups(const coop_rt *rt);
unsigned coop_rt_local_size(const coop_rt *rt);
unsigned coop_rt_participants(const coop_rt *rt); /* scheduler + workers */
unsigned coop_rt_workers(const coop_rt *rt);
double coop_rt_tick_ns(const coop_rt *rt); /* device clock period, ns */
/* Refits the device clock to CLOCK_MONOTONIC (runtime.c, "the device
 * clock"): at most once a second, a few pings; call it from the thread that
 * submits and polls, between tasks' checks. 1 if the new point showed the
 * old fit had drifted, else 0. */
int coop_rt_refit(coop_rt *rt);
/* Benchmarks: one ping's round trip (host -> scheduler -> host), in ns, the
 * floor under any dispatch; -1 if the scheduler does not answer within 1 s.
 * Not concurrently with coop_rt_refit. */
int64_t coop_rt_ping_ns(coop_rt *rt);
/* Benchmarks: a megakernel built with COOP_DEVICE_DEFINES=COOP_PROF stores
 * its passes and the device ns spent in each of their steps; copies up to
 * n of those totals (passes first) to out and returns how many, 0 if none
 * was stored. */
int coop_rt_sched_profile(coop_rt *rt, uint64_t *out, int n);

/* Task buffers live in the SVM arena: host pointer for the host, and a
 * 64-bit argument value (an arena offset) for the kernel. A buffer comes
 * zeroed and fenced by guard zones; coop_rt_free returns COOP_EFAULT when a
 * guard was overwritten (something wrote outside the buffer), COOP_EINVAL
 * for a pointer that is not a buffer, else 0. coop_rt_buf_len: the size
 * asked for, 0 for a pointer that is not a buffer. */
void *coop_rt_alloc(coop_rt *rt, size_t bytes);
/* As coop_rt_alloc, but not zeroed: for a buffer whose every byte the
 * caller writes before any task or host reads it (a job's IN data copied
 * over the whole of it). Zeroing a large buffer goes by the
 * copy engine a MiB a call (140 ms for 500 MB on an H200), and the copy
 * that follows writes it all again. */
void *coop_rt_alloc_filled(coop_rt *rt, size_t bytes);
/* As coop_rt_alloc_filled, its bytes copied from host memory src, into
 * *out: a small buffer's data goes in the same copy as its guards (one
 * copy-engine call where there would be two, about 10 us each on an
 * H200), a large one's by coop_rt_arena_copy. 0; COOP_ENOMEM where the
 * arena has no room (as coop_rt_alloc's NULL), COOP_EINVAL for bad
 * arguments, or the copy's error (nothing stays allocated then). */
int coop_rt_alloc_from(coop_rt *rt, size_t bytes, const void *src, void **out);
/* As coop_rt_alloc, for a buffer the host reads (or writes) between
 * tasks, a small result above all: its pages stay in host memory and the
 * device reaches them over the bus. A coop_rt_alloc buffer is placed for
 * the device: where the arena is CUDA managed memory, each host read of
 * it moves its page to the host and the next task's write moves it back,
 * hundreds of us each, until the driver settles it (bench/RESULTS.md,
 * "Tails: the first tasks"). Takes whole pages of 64 KiB, guards
 * included, on every backend; freed with coop_rt_free. Where the arena
 * is host memory already (OpenCL), placed as any other buffer. */
void *coop_rt_alloc_host(coop_rt *rt, size_t bytes);
/* As coop_rt_alloc, in device memory where the backend has it (CUDA,
 * coop_rt_options.device_bytes) and it has room, else in the arena: for a
 * buffer whose bytes the host moves only by coop_rt_arena_copy (a frame's
 * input and output, a client's device buffer). The copy engine moves 272
 * KB to or from device memory in 11-13 us warm and 40-44 cold against
 * managed memory's 14-17 and 55-73 (H200; bench/RESULTS.md, "Device memory for
 * the buffers the host only copies"). The host must not read or write
 * it directly: on CUDA it is not host memory. coop_rt_buf_in_device: 1
 * where a buffer lies in that memory. */
void *coop_rt_alloc_device(coop_rt *rt, size_t bytes);
/* As coop_rt_alloc_device, not zeroed (as coop_rt_alloc_filled): a
 * buffer whose every byte the caller copies in first. */
void *coop_rt_alloc_device_filled(coop_rt *rt, size_t bytes);
int coop_rt_buf_in_device(const coop_rt *rt, const void *p);
int coop_rt_free(coop_rt *rt, void *p);
/* A job's n (at most COOP_MAX_ARGS) buffers made together: out[k] of
 * bytes[k] bytes, its data copied from src[k] where src and src[k] are
 * given (as coop_rt_alloc_from), else zeroed. Where the arena wants the
 * copy engine, those whose footprints, guards included, come to at most
 * 64 KiB in order are placed side by side and made in one copy, not one
 * each; the others as coop_rt_alloc_from or coop_rt_alloc would. 0;
 * COOP_ENOMEM, COOP_EINVAL (a size 0, bad arguments), or a copy's error,
 * nothing allocated then. Each is an ordinary buffer afterwards. */
int coop_rt_alloc_group(coop_rt *rt, unsigned n, const size_t *bytes, const void *const *src,
                        void **out);
/* n (at most COOP_MAX_ARGS) buffers freed together, the first len[k]
 * bytes of p[k] copied out to host memory dst[k] first where dst and
 * dst[k] are given; where the arena wants the copy engine and the small
 * ones lie within 64 KiB, those read and checked in one copy, not one or
 * two each. Every
 * buffer named is freed. 0; COOP_EINVAL when a p[k] is not a buffer (or
 * named twice), else COOP_EIO when a copy out failed or len[k] passes
 * the buffer's size, else COOP_EFAULT when a guard zone was overwritten;
 * *breach (where given): the first k whose guards were, or -1. */
int coop_rt_free_group(coop_rt *rt, unsigned n, void *const *p, void *const *dst, const size_t *len,
                       int *breach);
/* As coop_rt_free's check of the guard zones, the buffer kept: a device
 * buffer that outlives the job that used it (0, COOP_EFAULT, COOP_EINVAL).
 * A breach found is reported once: the guards are filled again. */
int coop_rt_buf_check(coop_rt *rt, const void *p);
/* As coop_rt_buf_check, the guard zones left as found: a breach is still
 * there for the check that reports it. */
int coop_rt_buf_intact(coop_rt *rt, const void *p);
uint64_t coop_rt_buf_arg(const coop_rt *rt, const void *p);
uint64_t coop_rt_buf_len(coop_rt *rt, const void *p);
/* The host pointer of the buffer whose argument value is arg, or NULL when
 * no buffer starts there (a device process gets only argument values). */
void *coop_rt_buf_host(coop_rt *rt, uint64_t arg);
/* n bytes from host memory src into a buffer's memory at dst (to_arena),
 * or from a buffer's memory src to host memory dst, while the megakernel
 * runs: by the device's copy engine where the arena is memory the host
 * would fault on page by page (CUDA managed memory), whatever n, unless
 * the buffer was placed in host memory (coop_rt_alloc_host); else memcpy.
 * 0, or COOP_EINVAL when the arena side is not in the arena, or a coop
 * code. coop_rt_arena_direct: 1 when plain host reads and writes of the
 * arena's device buffers cost no more (no copy engine: the arena is host
 * memory, as PoCL's). */
int coop_rt_arena_copy(coop_rt *rt, void *dst, const void *src, size_t n, int to_arena);
int coop_rt_arena_direct(const coop_rt *rt);
/* n bytes of a buffer's memory at dst zeroed while the megakernel runs, as
 * coop_rt_arena_copy would write them from host zeros (by the copy engine
 * where it moves the arena's bytes: a memset is a kernel, arena.c). 0, or
 * COOP_EINVAL when dst is not in the arena, or a coop code. */
int coop_rt_arena_zero(coop_rt *rt, void *dst, size_t n);
/* A few bytes moved by the copy engine, as coop_rt_arena_copy moves a
 * buffer's, so that a copy that follows within a few hundred microseconds
 * does not pay the path's wake-up after an idle spell (a frame's input,
 * 16 ms after the last frame). Thread rules as coop_rt_arena_copy. 0, or
 * COOP_EINVAL where copies are the host's (nothing to warm), or a coop
 * code. */
int coop_rt_copy_warm(coop_rt *rt);
/* The same, the bytes read from `host` (at most `bytes` of it, and at
 * most 1 MiB): the pages a copy that follows will read, page-locked
 * (coop_rt_host_register) or the runtime's own. Nothing is written there:
 * the bytes go to the runtime's own device memory. host NULL:
 * coop_rt_copy_warm. */
int coop_rt_copy_warm_from(coop_rt *rt, const void *host, size_t bytes);
/* n bytes from one buffer's memory (src) into another's (dst), both in the
 * arena, while the megakernel runs: on the device where the arena lives
 * there (CUDA: a device-to-device copy, at the device memory's speed, not
 * the host link's, and for any size: a host copy would move the pages to
 * the host), else memcpy. Done when it returns. 0 or a coop code. */
int coop_rt_arena_dup(coop_rt *rt, void *dst, const void *src, size_t n);
/* n bytes of host memory for coop_rt_arena_copy's host side, which the
 * copy engine reaches at full speed (CUDA: page-locked; a pageable buffer
 * was copied through the driver's staging at about a fifth of it), or
 * NULL. It lives until coop_rt_close, which frees it once the megakernel
 * has ended (freeing page-locked memory while it runs would wait for it):
 * allocate it once. */
void *coop_rt_host_buffer(coop_rt *rt, size_t n);
/* n bytes of host memory at p (page-aligned: a mapping) made memory the
 * copy engine reaches at full speed, until coop_rt_host_unregister: 0, or
 * COOP_EINVAL where the backend has no such thing (its arena copies are
 * the host's own: nothing to gain) or it failed. */
int coop_rt_host_register(coop_rt *rt, void *p, size_t n);
void coop_rt_host_unregister(coop_rt *rt, void *p);

struct coop_rt_task_desc {
  int kernel;      /* from coop_rt_add_kernel */
  unsigned groups; /* N (cooperative) or K */
  int cooperative;
  int query_barrier; /* resizing barrier: 1 = query variant, 0 = plain */
  unsigned nargs;
  uint64_t args[COOP_RT_MAX_ARGS];
  /* Byte length of each buffer argument: the most the kernel's
   * bounds-checked views (device/api.h) may reach. 0 = the size of the
   * arena buffer whose coop_rt_buf_arg is args[i], if any (so in-process
   * callers need not fill it); a daemon sets every buffer's length. */
  uint64_t lens[COOP_RT_MAX_ARGS];
  /* When the task is due, CLOCK_MONOTONIC ns; 0: none. Of the tasks
   * waiting for workgroups, the scheduler gathers the one with the earliest
   * deadline first (tasks without one after, in submission order). */
  int64_t deadline_ns;
  /* Gathering ahead, for a periodic task: when its next instance will be
   * submitted, CLOCK_MONOTONIC ns; 0: none. From next_ns - ahead_ns until
   * that instance (the next task of this kernel and size) starts, at most
   * until next_ns + ahead_ns, the scheduler keeps this task's groups of
   * workers free, taking them from cooperative kernels at their next
   * offer_kill or resizing barrier, so that the instance does not wait for
   * them. ahead_ns: 0 = COOP_RT_AHEAD_NS, at most COOP_RT_AHEAD_MAX_NS.
   * Ignored for cooperative tasks. */
  int64_t next_ns;
  int64_t ahead_ns;
  /* A cooperative task: the most workgroups it may hold, 0 = groups (N).
   * coop_rt_cap changes it while the task runs. */
  unsigned cap;
};
/* 500 us: longer than most steps of bfs between two resizing barriers on
 * the H100 (gather p99 0.2-0.5 ms without gathering ahead: bench/HISTORY.md,
 * "Gathering ahead") */
#define COOP_RT_AHEAD_NS 500000ll
#define COOP_RT_AHEAD_MAX_NS 1000000000ll /* 1 s */

typedef uint32_t coop_task_id;

int coop_rt_submit(coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id);
/* A range moved with a task (coop_rt_submit_io): `bytes` from host memory
 * `host` into the arena at `arena` before the task runs (in), or from the
 * arena back into `host` after its end (out). `arena` lies inside the
 * arena (a buffer of coop_rt_alloc, or past its start); `host` is best
 * memory of coop_rt_host_buffer or coop_rt_host_register: other memory is
 * copied by the calling threads, as coop_rt_arena_copy copies. */
struct coop_rt_io {
  void *host;
  void *arena;
  size_t bytes;
};
#define COOP_RT_IO_MAX 8 /* ranges each way */
/* coop_rt_submit, with the task's input copied in before it and its
 * output copied out after it: by the calling threads (the task submitted
 * behind its input gate, then the copies in while the device takes and
 * starts it, then the gate opened: docs/scheduler.md, "The input gate";
 * the copies out by the coop_rt_wait or coop_rt_task_release that sees
 * the end), or with COOP_RT_IO=device ordered by the device where
 * it can (CUDA: the copies in and the submit's publication on one stream,
 * the wait for the task's final state and the copies out on another;
 * measured slower: docs/kernels.md, "Copies ordered with a task"). The
 * ranges out are copied at any final state (a failed or cancelled task's
 * bytes, whatever they hold); they are in `host` once coop_rt_wait returns
 * 0. COOP_EINVAL: more than COOP_RT_IO_MAX ranges a way, a cooperative task
 * (a suspension would end it half done), a range outside the arena or with
 * no host memory. */
int coop_rt_submit_io(coop_rt *rt, const struct coop_rt_task_desc *d, const struct coop_rt_io *in,
                      unsigned nin, const struct coop_rt_io *out, unsigned nout, coop_task_id *id);
/* timeout_ms < 0 waits forever. 0 when the task reached a final state
 * (and, for coop_rt_submit_io's, its ranges out are copied; a copy's
 * failure is its code: a copy in that failed leaves the task CANCELLED and
 * copies nothing out). */
int coop_rt_wait(coop_rt *rt, coop_task_id id, int timeout_ms);
int coop_rt_cancel(coop_rt *rt, coop_task_id id);
/* A cooperative task's cap (task_desc.cap) from now on: 0 lifts it. A
 * lower cap takes workgroups back at the kernel's next offer_kill or
 * resizing barrier, never its last; a higher one lets it fork up to the
 * cap again (device/scheduler.cl, "Caps"). Ignored for other tasks. */
int coop_rt_cap(coop_rt *rt, coop_task_id id, unsigned cap);
/* Suspends a running or queued cooperative task (device/scheduler.cl,
 * "Suspension"): every workgroup but 0 leaves at its next offer_kill or
 * resizing barrier, then workgroup 0, at its first primitive once alone,
 * saves its thread 0's state struct and leaves; the task ends SUSPENDED
 * (coop_rt_wait returns, coop_rt_task_info says so), or DONE if it ended
 * first. Resumed, workgroup 0's threads all start from that state, as a
 * forked workgroup's do from its forker's; scratch memory is not saved. A
 * kernel that never shrinks (global barriers only) is never suspended: it
 * runs to its end. */
int coop_rt_suspend(coop_rt *rt, coop_task_id id);
/* A SUSPENDED task again, on this runtime, as a new task (*id): its
 * workgroup 0 starts from the saved state, on the same arguments (its
 * buffers are where they were), and grows by forks. The suspended task's
 * id is released. */
int coop_rt_resume(coop_rt *rt, coop_task_id suspended, coop_task_id *id);
/* To resume on another runtime (another megakernel, another device): the
 * saved state's size (coop_rt_state_bytes), the SUSPENDED task's state
 * copied out, and a task submitted as d describes (its buffers already
 * copied into this runtime's arena) that starts from such a state. */
size_t coop_rt_state_bytes(const coop_rt *rt);
int coop_rt_saved_state(coop_rt *rt, coop_task_id suspended, void *out, size_t len);
int coop_rt_submit_resumed(coop_rt *rt, const struct coop_rt_task_desc *d, const void *state,
                           size_t len, coop_task_id *id);

enum coop_task_state {
  COOP_TASK_PENDING = 0,
  COOP_TASK_RUNNING,
  COOP_TASK_DONE,
  COOP_TASK_CANCELLED,
  COOP_TASK_REFUSED,
  COOP_TASK_SUSPENDED /* coop_rt_suspend: coop_rt_resume runs it on */
};

/* Why the scheduler refused a task (values of device/shared.h COOP_TR_*). */
enum coop_refusal {
  COOP_REFUSE_NONE = 0,
  COOP_REFUSE_BAD_KERNEL = 1,
  COOP_REFUSE_TOO_MANY_GROUPS = 2, /* more than the workers discovery found */
  COOP_REFUSE_ZERO_GROUPS = 3,
  COOP_REFUSE_KIND = 4 /* cooperative flag does not match the kernel */
};

struct coop_rt_task_info {
  enum coop_task_state state;
  enum coop_refusal refusal; /* when refused */
  /* CLOCK_MONOTONIC nanoseconds; device events converted from the device
   * clock through the calibration made at launch. While the task is
   * pending, t_released is set once the scheduler has taken it; while it
   * runs, t_released, t_gathered and gather_ns are set; the rest (and 0
   * fields) once final. */
  int64_t t_submitted, t_released, t_gathered, t_started, t_finished;
  int64_t gather_ns; /* gathered - released, both device clock (runtime.c gather_ns) */
  unsigned m_initial, m_min, m_max, kills, forks, resizes;
  /* Once final: 0, or which view accessed out of bounds (the kernel was
   * kept inside its buffers; the result is not to be trusted): argument
   * index + 1, or COOP_RT_FAULT_SCRATCH for the workgroup's scratch. */
  unsigned fault;
  /* Once final: its workgroups whose worker came straight from a
   * cooperative kernel's leaving workgroup, not through the scheduler
   * (docs/scheduler.md, "Handing workers over"). */
  unsigned joined;
  /* Once final, the kill cascade of a kernel without barriers
   * (docs/scheduler.md, "Kills without a barrier"): of its kills, those
   * that a kill above took in the same lock hold; its workgroups' waits at
   * an offer that ended without a kill (a bound, a withdrawn request, a
   * cancel, arrivals at a barrier). */
  unsigned kills_taken, kill_waits;
};
#define COOP_RT_FAULT_SCRATCH 0x100u

int coop_rt_task_info(coop_rt *rt, coop_task_id id, struct coop_rt_task_info *info);
/* Live view, for monitoring only: what the scheduler last published (every
 * few scheduler passes). A running task's active count M (K for a
 * non-cooperative one), the workgroups it holds, kills and forks so far. */
struct coop_rt_live {
  unsigned m, workers, kills, forks;
};
int coop_rt_task_live(coop_rt *rt, coop_task_id id, struct coop_rt_live *l);
/* Who holds each worker workgroup: owner[i] (worker i, i < n) is 0 when it
 * is free, else the id of the task it works for; reserved[i] is 1 when it
 * is only reserved for that task's forks. Returns the number filled
 * (at most coop_rt_workers()). */
int coop_rt_view(coop_rt *rt, coop_task_id *owner, uint8_t *reserved, unsigned n);

/* Diagnostics for a task that does not finish: writes what the host can
 * see of the running megakernel to f (the scheduler's state, each task's
 * record, and, where the backend can read device memory while the kernel
 * runs, every channel and worker). Racy snapshot; never for control. */
int coop_rt_dump(coop_rt *rt, FILE *f);

/* Parking (docs/scheduler.md, "Idle parking"). An idle megakernel still
 * spins: PoCL's threads take CPU cores, a GPU's scheduler workgroup takes
 * time slices from every other process on that GPU. coop_rt_park, with no
 * task slot in use (else COOP_EBUSY), stops it and waits for it to leave
 * the device; the build, the arena (its allocations stay valid), the task
 * slots and the clock calibration are kept. coop_rt_unpark launches it
 * again (discovery included: the worker count may differ, see
 * coop_rt_workers). While parked coop_rt_submit answers COOP_ESTATE. */
int coop_rt_park(coop_rt *rt);
int coop_rt_unpark(coop_rt *rt);
int coop_rt_parked(const coop_rt *rt);

/* Rebuilding in place (docs/scheduler.md, "Rebuilding in place"): a new
 * kernel set for a launched runtime, without a second context or a copy of
 * any buffer. coop_rt_next_open, coop_rt_next_add_kernel as
 * coop_rt_add_kernel, then coop_rt_next_build: it compiles on the calling
 * thread while the megakernel runs on (one build at a time; the log in
 * coop_rt_next_errmsg on COOP_EBUILD) and loads nothing into the device's
 * context. Once the megakernel is parked (coop_rt_park) with no task slot
 * in use, coop_rt_next_swap makes the new set the runtime's (n is freed;
 * on an error it stays the caller's) and coop_rt_unpark launches it, at
 * the width its program allows, discovery included. The arena and every
 * allocation in it stay valid, as do the clock fit and the task ids to
 * come; a kernel's index is its index in the new set. A task suspended
 * before the swap (coop_rt_saved_state, then coop_rt_task_release) runs on
 * after it through coop_rt_submit_resumed, its kernel named by that new
 * index. coop_rt_next_free lets a next set go unused. Swap from the thread
 * that submits, as for park. */
typedef struct coop_rt_next coop_rt_next;
int coop_rt_next_open(coop_rt *rt, coop_rt_next **out);
int coop_rt_next_add_kernel(coop_rt_next *n, const char *name, int cooperative, const char *source);
int coop_rt_next_kernel_index(const coop_rt_next *n, const char *name);
int coop_rt_next_build(coop_rt *rt, coop_rt_next *n);
const char *coop_rt_next_errmsg(const coop_rt_next *n);
int coop_rt_next_swap(coop_rt *rt, coop_rt_next *n);
void coop_rt_next_free(coop_rt *rt, coop_rt_next *n);

/* Frees the task slot once it is final. */
int coop_rt_task_release(coop_rt *rt, coop_task_id id);

/* Stops the megakernel (queued tasks cancelled, running kernels cancelled at
 * their next primitive), waits for it to exit, frees everything. */
int coop_rt_close(coop_rt *rt);

#endif /* COOP_RT_H */
