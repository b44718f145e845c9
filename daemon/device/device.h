/*
 * device.h: the device thread. It alone owns the coop runtime (the
 * megakernel): it submits jobs' tasks, releases periodic instances on time,
 * polls for completions, copies buffers in and out, and hands finished jobs
 * back to the loop through a uv_async, so device work never blocks the
 * loop.
 */
#ifndef COOPD_DEVICE_H
#define COOPD_DEVICE_H

#include <stdatomic.h>
#include <uv.h>

#include "config.h"
#include "devproc.h"
#include "jobs.h"
#include "kset.h"

struct dev;

/* An event seen while a job runs (RELEASED, GATHERED), handed to the loop
 * before the job itself: STARTED and FINISHED are known only at the end
 * (a task's start is the earliest of its workgroups' starts). */
struct dev_event {
  uint64_t job;
  uint32_t uid, instance;
  uint8_t kind; /* COOP_EV_RELEASED or COOP_EV_GATHERED */
  int64_t t_ns, gather_ns;
};

/* What the device thread hands the layer above, on its loop: each job it
 * hands back, each event of a running job. coopd's sessions pass theirs
 * (session_job_done, session_job_event); the device layer knows nothing
 * above it but these. */
struct dev_hooks {
  void (*job_done)(void *user, struct job *j);
  void (*job_event)(void *user, const struct dev_event *e);
  /* Called on from's device thread, not the loop: where a suspended
   * cooperative job j waiting on from may move now, a device with a free
   * cooperative slot (dev_free_slots): its index in the daemon's devices
   * and *to, or -1 to stay. It may read only what dev_free_slots and
   * dev_workers publish. */
  int (*move_target)(void *user, struct dev *from, const struct job *j, struct dev **to);
  /* On the loop: a job is handed back within about ns (its output being
   * copied): the loop should poll, not sleep, until then (dev__prewake). */
  void (*expect_soon)(void *user, int64_t ns);
  /* Called on from's device thread: where job j, waiting on from for room
   * in its arena for bytes of copies and never started, may move now, a
   * device whose arena has that room (dev_room_taken) and j's workers: its
   * index and *to, or -1 to stay. It may read only what dev_room_taken and
   * dev_workers publish, and counts the bytes there (dev_room_reserve). */
  int (*room_target)(void *user, struct dev *from, const struct job *j, uint64_t bytes,
                     struct dev **to);
};

/* Opens the device, registers the kernels, launches the megakernel (in the
 * calling thread, before the loop runs). On loop, each job handed back
 * goes to hooks->job_done and each event to hooks->job_event, with user;
 * on_stopped and on_swapped get user too. place: its number among the
 * daemon's devices (job.device, and "device N" in the log); index: the
 * backend's device it opens (-1: the backend's choice). Returns 0 or a
 * coop_errno with a message. */
int dev_open(struct dev **d, const struct config *c, unsigned place, int index,
             const struct kset *ks, uv_loop_t *loop, const struct dev_hooks *hooks, void *user,
             char *err, size_t errlen);
int dev_start(struct dev *d);
/* Starts a device process (devproc.h) that opens the configured device and
 * builds (does not launch) a megakernel of the kernels in ks. Blocking,
 * thread-safe, and possible while another megakernel runs: coopd calls it
 * from a libuv work thread on SIGHUP. */
int dev_build(const struct config *c, int index, const struct kset *ks, struct dp **rt, char *err,
              size_t errlen);
/* ks built as dev_build builds it, in a device process thrown away at
 * once, within [kernels] author_build_ms (dp_check). Blocking. */
int dev_check_build(const struct config *c, int index, const struct kset *ks, char *err,
                    size_t errlen);
/* Rebuilding in place (docs/daemon.md, "Kernel reload"): ks built by this
 * device's own device process, beside its running megakernel, with no
 * second process or context (dp_next_build). Blocking: the reload's work
 * thread waits here while the device thread starts the build and watches
 * it. 0 when built (then dev_swap with next NULL swaps it in, or
 * dev_next_cancel lets it go), DEV_NOT_IN_PLACE where it cannot be built
 * so (no device process runs, the device is stopping or swapping:
 * dev_build then), else the error, the compiler log in msg. */
#define DEV_NOT_IN_PLACE 1
int dev_next_build(struct dev *d, const struct kset *ks, char *msg, size_t len);
void dev_next_cancel(struct dev *d);
/* The device index this dev was opened with (config_devices). */
int dev_index(const struct dev *d);
/* Reload: drains the running megakernel (new jobs wait; running ones get
 * grace_ms, then are cancelled), closes it and launches `next` (built from
 * ks by dev_build; dev takes it), or with next NULL swaps in the set
 * dev_next_build built in place. ks must stay alive until the next swap.
 * on_swapped(0 or error, message) runs on the loop when done; on error the
 * previous kernels run again (rebuilt), or the device is marked unavailable.
 * COOP_ESTATE if a swap is in progress or the device is stopping. */
int dev_swap(struct dev *d, struct dp *next, const struct kset *ks, unsigned grace_ms,
             void (*on_swapped)(int err, const char *msg, void *user));
void dev_submit(struct dev *d, struct job *j);
/* The loop's spin (loopspin.h, `spinning`): while it reads nonzero the
 * loop calls dev_poll every turn, so the device thread announces finished
 * jobs, events and buffer answers by a flag, not by waking the loop with
 * uv_async (a system call on each side). Set before dev_start; unset, the
 * uv_async always. */
void dev_set_loop_spin(struct dev *d, const atomic_int *spinning);
/* On the loop: what the device thread announced (as its uv_async would). */
void dev_poll(struct dev *d);

/* Device buffers (dev_bufs.c; docs/daemon.md, "Device buffers"): one
 * operation on the device's arena, done by the device thread before the
 * jobs it takes in the same pass, so a job submitted after a write sees
 * the bytes written. `done` runs on the loop. The bytes come from, or go
 * to, fd (at offset 0; CREATE: -1 for zeros). A buffer lives on the device
 * process that created it (gen): after a restart or a reload it is gone,
 * and every later operation on it fails with COOP_ELOST. */
enum dev_buf_kind { DEV_BUF_CREATE = 1, DEV_BUF_WRITE, DEV_BUF_READ, DEV_BUF_FREE };
struct dev_bufop {
  int kind;
  uint64_t size;   /* CREATE: the buffer's; WRITE, READ: the range's */
  uint64_t at;     /* WRITE, READ: where in the buffer */
  uint64_t arg;    /* the buffer (CREATE sets it): its argument value */
  uint64_t gen;    /* the device process it lives on (CREATE sets it) */
  int fd;          /* closed by the device thread once done */
  uint32_t owner;  /* uid + 1 of the client it is for (xmap.h: pinned files per owner) */
  uint64_t copied; /* WRITE, READ, a filling CREATE: the bytes copied so far (device thread: in
                      slices, dev_bufs.c) */
  int filling;     /* CREATE with contents: made, its bytes coming in slices (dev_bufs.c) */
  int err;         /* the result: 0 or a coop code, with message */
  char message[160];
  void (*done)(struct dev_bufop *op);
  void *user;
  struct buf_trace tr;    /* COOP_TRACE_FILE's stamps (trace.h) */
  struct dev_bufop *next; /* device.c's queues */
};
void dev_buf_op(struct dev *d, struct dev_bufop *op);
/* Any thread: 1 with why job j (not yet handed back) waits for a
 * cooperative slot written to buf ("waiting for a cooperative slot: 2 jobs
 * ahead of it; ..."), 0 when it does not wait for one. */
int dev_slot_wait(const struct job *j, char *buf, size_t n);
/* Why a running cooperative job holds fewer workgroups than it asked for
 * (docs/daemon.md, "Cooperative slots"): 1 with the text in buf, else 0. */
int dev_slot_cap(const struct job *j, char *buf, size_t n);
void dev_cancel(struct dev *d, struct job *j);
/* MIGRATE (loop): j, running or waiting on `from`, moves to `to` (at
 * `index` in the daemon's devices): from's device thread suspends it
 * there (once it runs), copies its saved state and its buffers out, and
 * hands it to to's, which resumes it when a slot is free. The caller
 * checked that it may move (cooperative, one task, no device buffers). */
/* 0, or -1 where a move of j is already asked (by the loop or by its
 * device thread: the caller answers so). */
int dev_migrate(struct dev *from, struct job *j, struct dev *to, unsigned index);
/* Cooperative slots free on d with no job waiting for them, as its device
 * thread last published (any thread). */
unsigned dev_free_slots(const struct dev *d);
/* The arena bytes that d's jobs' copies hold, and those of the jobs
 * waiting there for room, as its device thread last published (any
 * thread; device buffers not counted): what a new job's copies would find
 * taken (docs/daemon.md, "Room in the arena"). */
uint64_t dev_room_taken(const struct dev *d);
/* Counts bytes more in what dev_room_taken says, until d's next pass
 * publishes what its jobs take (a job moving there for room). */
void dev_room_reserve(struct dev *d, uint64_t bytes);
/* Stop: running jobs get grace_ms to finish, then are cancelled; queued
 * ones are cancelled at once. Every job is handed back; then the runtime
 * closes and on_stopped runs on the loop. */
void dev_stop(struct dev *d, unsigned grace_ms, void (*on_stopped)(struct dev *d, void *user));
/* Frees after on_stopped. */
void dev_free(struct dev *d);

/* The live view for TOP: refreshed by the device thread every
 * DEV_VIEW_NS while jobs run, from what the scheduler publishes; an idle
 * device's at once, with no owner. */
#define DEV_VIEW_JOBS 64
struct dev_view_job {
  uint64_t job;
  uint32_t uid;
  char kernel[COOP_WIRE_NAME_MAX];
  uint8_t cooperative;
  uint32_t groups, m, workers, kills, forks;
  int32_t priority;
};
struct dev_view {
  unsigned nwg;
  uint64_t wg_job[COOP_WIRE_MAX_WG]; /* 0: free */
  uint32_t wg_uid[COOP_WIRE_MAX_WG];
  uint8_t wg_reserved[COOP_WIRE_MAX_WG];
  unsigned njobs;
  struct dev_view_job jobs[DEV_VIEW_JOBS];
};
void dev_view_get(struct dev *d, struct dev_view *v);

/* The watchdog (docs/faults.md): tasks failed after waiting
 * [jobs] gather_budget_ms for workgroups, jobs failed because their kernel
 * was still running hang_ms after its cancellation (each restarted the
 * device), the workers out of service while the device restarts, and the
 * latest event in words. */
struct dev_watch {
  uint32_t gather_timeouts, hung, lost_workers;
  char last[COOP_WIRE_TEXT_MAX];
};
/* last: the event as viewer may read it (root, or the user whose job it
 * names: all of it; anyone else: with no other user's job, kernel or uid) */
void dev_watch_get(struct dev *d, uint32_t viewer, struct dev_watch *w);

/* Copies (a restart or a reload sets them again on the device thread):
 * the device's name, its backend ("opencl" or "cuda") and why that one. */
void dev_name(struct dev *d, char *out, size_t len);
void dev_backend(struct dev *d, char *out, size_t len);
void dev_backend_note(struct dev *d, char *out, size_t len);
unsigned dev_compute_units(const struct dev *d);
unsigned dev_workers(const struct dev *d);
/* Idle parking (device.c): 1 while the megakernel is parked; how many
 * times it parked; what the last relaunch cost (ns, 0 before the first). */
unsigned dev_parked(const struct dev *d);
unsigned dev_parks(const struct dev *d);
int64_t dev_unpark_ns(const struct dev *d);
/* [device] idle_spin_us as this device's backend resolved it, ns: how
 * long its threads, and the loop for it (loopspin.h), watch for the next
 * job after one (0: they sleep at once). */
int64_t dev_idle_spin_ns(const struct dev *d);
/* Warm ahead (device.c): the window around a frame loop's next task,
 * expected at next_ns (or at alt_ns, when not 0: after a frame off the
 * loop's grid, both), its frame's work beginning lead_ns before (a buffer
 * write), in which this device's threads and the loop spin; 0 when there
 * is none (no idle spin here, or no guess). */
int dev_warm_window(const struct dev *d, int64_t next_ns, int64_t alt_ns, int64_t lead_ns,
                    int64_t *from, int64_t *to);
/* Told, on the device thread, when it begins a warm window: the device's
 * place among the daemon's (dev_open), when the window was to begin and
 * when it began (the trace's window lines). Set once, before any device
 * thread starts; NULL: none. */
typedef void (*dev_window_hook)(int device, int64_t from, int64_t began);
void dev_set_window_hook(dev_window_hook hook);
/* A job's kernel_index is recomputed by the device thread from its kernel
 * name when the job starts: the runtime registers a kset in its order. */

#endif /* COOPD_DEVICE_H */
