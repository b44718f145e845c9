/*
 * devproc.h: a device process, the coop runtime of one device in a child of
 * coopd (docs/daemon.md, "Processes").
 *
 * The megakernel runs client kernels over client data; on PoCL it runs in
 * the process that launched it. So coopd keeps it out of its own address
 * space, as MPS keeps its GPU servers apart from its control daemon: the
 * front process (socket, sessions, journal, job table, device threads)
 * drives each runtime through this proxy, and the child (`coopd
 * --device-process FD`, devproc_child.c) owns it. When a child dies, or a
 * kernel hangs and the device thread kills it, only the jobs on that
 * device are lost; the device thread starts a new child.
 *
 * Each call is one request and one reply over a SOCK_SEQPACKET pair, made by
 * one thread at a time. Buffers never cross the socket: the child reads a
 * job's IN data from a memfd and writes OUT data into one (pread/pwrite,
 * never mmap). Every call returns 0 or a negative coop code, and
 * COOP_ELOST once the child has died or stopped answering (the proxy then
 * kills it): from then on the device thread restarts the device.
 */
#ifndef COOPD_DEVPROC_H
#define COOPD_DEVPROC_H

#include <stddef.h>
#include <stdint.h>

#include "coop_rt.h"

struct config;
struct kset;
struct dp;

/* Spawns the child, opens the device `index`, registers ks's kernels and
 * builds the megakernel (no launch). On failure *p is NULL and err says
 * why (the compiler log for a build error). */
int dp_build(struct dp **p, const struct config *c, int index, const struct kset *ks, char *err,
             size_t errlen);
/* ks built as dp_build builds it, in a device process thrown away at
 * once (reload.c: a set that holds an author's kernel is built so before
 * it is built in place): the process is the first the OOM killer takes,
 * and a build longer than build_ms (0: DP_BUILD_MS) is stopped. 0, or
 * the error with err saying why. */
int dp_check(const struct config *c, int index, const struct kset *ks, unsigned build_ms, char *err,
             size_t errlen);
/* The build's widths (coop_rt_width), up to max: [0] the merged
 * megakernel's, then, where [device] kernel_widths measured them (in a
 * device process of their own, at dp_build), each kernel's alone in ks's
 * order. dp_build logs them, and the kernel that bounds the launch; the
 * backend note carries a summary. Returns how many. */
#define DP_WIDTHS_MAX (COOP_MAX_KERNELS + 1) /* the merged megakernel and each kernel */
unsigned dp_widths(const struct dp *p, struct coop_rt_width *out, unsigned max);
/* Launches the megakernel (discovery) in a built child. */
int dp_launch(struct dp *p, char *err, size_t errlen);
/* Idle parking (coop_rt_park): the megakernel leaves the device, the
 * child and its build stay; dp_unpark relaunches it (discovery: read
 * dp_workers again). COOP_EBUSY: a task slot is still in use. */
int dp_park(struct dp *p);
/* How long a park may take before the child counts as stuck. Parking comes
 * only when the device is idle, but the megakernel must leave first: on a
 * loaded CPU device (PoCL beside a reload's compile) that took over 2 s,
 * and a child killed then is a restart, its kernels built again. */
#define DP_PARK_MS 15000u
int dp_unpark(struct dp *p, char *err, size_t errlen);
/* Rebuilding in place (docs/daemon.md, "Kernel reload"): ks built by
 * the running child, on a thread of its own while it answers on, with no
 * second process or context (coop_rt_next_*). dp_next_build starts it;
 * dp_next_poll says 1 once built, 0 while building, or the error (the
 * compiler log in err); dp_next_swap parks the megakernel, swaps the set
 * in and relaunches it (discovery: read dp_workers again), and reads the
 * new build's width (logged as dp_build's is; c, index and ks as dp_build's);
 * dp_next_drop lets an unused one go (waiting for its build). */
int dp_next_build(struct dp *p, const struct kset *ks, char *err, size_t errlen);
int dp_next_poll(struct dp *p, char *err, size_t errlen);
int dp_next_swap(struct dp *p, const struct config *c, int index, const struct kset *ks, char *err,
                 size_t errlen);
void dp_next_drop(struct dp *p);
/* Asks the child to close the runtime and exit; kills it after wait_ms
 * (DP_CLOSE_MS: a megakernel that has not exited by then never will).
 * Frees p. 1 when it had to be killed. */
#define DP_CLOSE_MS 2000u
int dp_close(struct dp *p, unsigned wait_ms);
/* Kills the child at once (a hung kernel), reaps it, frees p. */
void dp_kill(struct dp *p);
/* 1 while the child answers; 0 once a call found it dead. */
int dp_alive(const struct dp *p);
/* How it died, once dp_alive is 0: "killed by signal 11", "exited 1". */
const char *dp_death(const struct dp *p);

const char *dp_device_name(const struct dp *p);
const char *dp_backend(const struct dp *p);
const char *dp_backend_note(const struct dp *p);
unsigned dp_compute_units(const struct dp *p);
unsigned dp_workers(const struct dp *p);

/* A buffer's in for dp_stage: room for IN data that dp_copy requests
 * bring next, in slices (docs/daemon.md, "Large buffers in slices"):
 * allocated as filled (not zeroed) and not read. No task runs on it before
 * every slice is in; a job whose slice failed is freed unrun, and the next
 * allocation of that memory zeroes it. */
#define DP_IN_LATER 2
/* A job's buffers in the arena (see coop_rt.h), moved in one request each
 * way. size: bytes; fd, off: where the bytes are (a client's memfd, or one
 * coopd filled with inline data), or fd -1; in / out: copy in at staging,
 * out at unstaging; arg: the kernel argument value, set by dp_stage. */
struct dp_buf {
  uint64_t size, arg, off;
  uint64_t at; /* dp_copy: where in the buffer */
  int fd, in, out;
  int keep;       /* dp_unstage: a device buffer, checked but not freed */
  uint64_t share; /* not 0: the bytes are at this address of a share of that process
                   * (dp_share, dp_share_open), not in fd */
  uint32_t owner; /* uid + 1 of the client whose descriptor fd is, 0: coopd's (xmap.h) */
  int zero;       /* dp_copy into the buffer: zeros, no descriptor (fd -1) */
  /* dp_copy: fd's file (st_ino, st_dev), when the caller knows it (ino not
   * 0); else dp_copy looks (fstat) and fills them in */
  uint64_t ino, devno;
};
/* Allocates every buffer (zeroed) and copies the IN ones in (in ==
 * DP_IN_LATER: allocated only, its bytes come by dp_copy next). On failure
 * (COOP_ENOMEM: the arena is full; COOP_EIO: a descriptor was short)
 * nothing stays allocated. */
int dp_stage(struct dp *p, struct dp_buf *b, unsigned n);
/* Releases the ended task `release` (0: none; as dp_task_release), then
 * copies the OUT ones out and frees every buffer. *breach: the first whose
 * guard zone was overwritten (arena.c), or -1. COOP_EIO: a write failed. */
int dp_unstage(struct dp *p, const struct dp_buf *b, unsigned n, coop_task_id release, int *breach);
/* Device buffers: size bytes between the descriptor fd (at off) and the
 * buffer arg (at `at`), into the buffer when `in`, else out of it.
 * COOP_EINVAL: no such buffer, or the range is not inside it; COOP_EIO:
 * the descriptor was short or could not be written. */
int dp_copy(struct dp *p, struct dp_buf *b, int in);
/* Buffers copied on the device into one buffer `to` (a checkpoint's
 * snapshot, dev_ckpt.c): b[i].size bytes of the buffer b[i].arg to `to` at
 * b[i].at (coop_rt_arena_dup); each source's guard zones checked, as
 * dp_unstage's keep. *breach: the first breached source, or -1. COOP_EINVAL:
 * a buffer that is not one, or a range outside `to`. */
int dp_dup(struct dp *p, uint64_t to, const struct dp_buf *b, unsigned n, int *breach);

/* Submits a task; its info as the child last read it is in the cache
 * (dp_task_info answers it with no request). With wait_ns > 0 the child
 * first waits, in the same request, until the task is final, the kick fd is
 * written, or wait_ns passed (as dp_wait): a one-task job alone on the
 * device is submitted and seen ended in one round trip (docs/daemon.md,
 * the path of one job). */
int dp_submit(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns, coop_task_id *id);
/* As dp_submit with a wait, for a task whose job needs nothing copied back
 * (its buffers are device buffers: bit i of devbufs for argument i): if it
 * ends within the wait, the device process also releases it and checks
 * the guard zones of those buffers, as dp_unstage would, in the same
 * request. *ended: 1 then, with *breach the first breached device buffer
 * (in argument order among them) or -1, and *info its final info (the
 * device process has forgotten the task: only this tells its end); else 0
 * and the task is the caller's to release, unless a later dp_poll or
 * dp_wait finds it ended there (dp_task_ended: a task that is not
 * cooperative, its reply come before its end). */
int dp_submit_end(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns,
                  uint64_t devbufs, coop_task_id *id, int *ended, int *breach,
                  struct coop_rt_task_info *info);
/* A one-task job's ranges moved with its task (dp_submit_io), all of one
 * file (b[0]'s ino, devno), which the device process holds mapped
 * (dp_io_mapped). After the call: unmapped, it no longer did and nothing
 * was submitted (the caller moves the ranges itself, by dp_copy, and
 * submits again); out_done, the task ended DONE within the wait and the
 * ranges out are in the file. */
struct dp_io {
  const struct dp_buf *b;
  unsigned n;
  int unmapped, out_done;
};
/* Whether the device process holds the file (devno, ino) of owner mapped,
 * as far as this side knows (dp_copy learned it). */
int dp_io_mapped(const struct dp *p, uint64_t devno, uint64_t ino, uint32_t owner);
/* As dp_submit_end (ended NULL: as dp_submit), with io's ranges in copied
 * before the task on the device (DP_SUBMIT_IO, coop_rt_submit_io) and,
 * once it ended DONE within the wait, its ranges out: one request where
 * dp_copy, dp_submit_end and dp_copy made three. io NULL: dp_submit_end. */
int dp_submit_io(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns, uint64_t devbufs,
                 struct dp_io *io, coop_task_id *id, int *ended, int *breach,
                 struct coop_rt_task_info *info);
/* dp_submit_io's request body for d and io built and dropped, nothing
 * sent: its code and the tables it reads warmed (docs/daemon.md,
 * "Spinning"). Returns the body's length. */
size_t dp_submit_io_dry(const struct dp *p, const struct coop_rt_task_desc *d,
                        const struct dp_io *io);
/* Whether the host side may spin for a device of this backend ("cuda",
 * "opencl"): a GPU's megakernel needs no CPU core, PoCL's takes every one.
 * The one test behind each spin on the device side: the device thread's
 * idle spin, the device process's in DP_WAIT, the front's for a reply
 * (docs/daemon.md, "Spinning"). */
int dp_backend_spins(const char *backend);
/* When the device process saw the task of the last dp_submit(_end) final
 * inside its wait (CLOCK_MONOTONIC ns), or 0: the trace's dp_seen. */
int64_t dp_end_seen(const struct dp *p);
/* The last request's times (CLOCK_MONOTONIC ns): sent, taken by the
 * device process, its reply sent there, the reply read here (the trace's
 * legs of a copy, dev_bufs.c); 0 where unknown. */
void dp_last_call(const struct dp *p, int64_t t[4]);
/* A request that took min_ns or more, told with its op's name and
 * dp_last_call's times, on the thread that made it (the trace's dpcall
 * lines: what held a device thread). Set once, before any device thread
 * starts; NULL: none. */
typedef void (*dp_call_hook)(const char *op, const int64_t t[4]);
void dp_set_call_hook(dp_call_hook hook, int64_t min_ns);
/* Fetches the infos of tasks ids[0..n) in one request (per DP_POLL_MAX);
 * until the next dp_poll, dp_task_info answers those from what it got. */
int dp_poll(struct dp *p, const coop_task_id *ids, unsigned n);
/* As dp_poll, but the child first waits (spinning when `spin`, then
 * sleeping) until one of the tasks changed state since it last answered for
 * it, the kick fd was written, or budget_ns passed: the device thread
 * learns of a finished task within microseconds without polling on a
 * timer. The caller spins only while a short task is in flight: a long
 * cooperative kernel alone ends late and rarely, and spinning a
 * millisecond on every change beside it cost 7 ms of CPU per frame of a
 * 60 fps client. */
int dp_wait(struct dp *p, const coop_task_id *ids, unsigned n, int64_t budget_ns, int spin);
/* Gives the child the front's kick eventfd (non-blocking): a write to it
 * ends the child's dp_wait at once. After each reply the child watches
 * its socket for the next request this long before it sleeps in recvmsg
 * (0: at once). */
int dp_set_kick(struct dp *p, int fd, int64_t idle_spin_ns);
/* The warm window (device.c, "warm ahead"): until `until` (CLOCK_MONOTONIC
 * ns; 0: none) the front spins for every reply, and the child, told in
 * each request, spins where it would sleep: in DP_WAIT, and for the next
 * request after its reply. A GPU backend only (PoCL's cores are its
 * megakernel's): elsewhere the front does not spin and the child's idle
 * spin is 0, and the child's wait spins only while a short task is in
 * flight, as before. */
void dp_set_warm(struct dp *p, int64_t until);
/* The warm window's end (dp_set_warm) told to a child that may sleep in
 * recvmsg, which then spins for the next request until then and warms
 * the copy engine: through the shared channel without a reply (a
 * doorbell if the child sleeps), else an empty request (a DP_POLL of no
 * task: dp_poll of no task sends nothing). 0 or a negative code. */
int dp_wake(struct dp *p);
/* fn(arg), on the calling thread, when a wait for a reply (DP_SUBMIT's,
 * DP_WAIT's) comes within DP_WAKE_LEAD_NS of its task's expected end
 * (dp_ends.h): the end, and a hand-back, are near (device.c wakes the loop
 * then: dev__prewake). NULL: nothing. */
void dp_on_near_end(struct dp *p, void (*fn)(void *arg), void *arg);
int dp_task_info(struct dp *p, coop_task_id id, struct coop_rt_task_info *info);
/* 1 when a dp_poll or dp_wait reply said the child ended task id itself
 * (dp_submit_end asked it to, and its reply came before the end):
 * released there, its guard zones whole, a DONE task's ranges out copied
 * (dp_submit_io's); dp_task_info still answers its final info. t (or
 * NULL): that call's stamps, as dp_last_call's. */
int dp_task_ended(const struct dp *p, coop_task_id id, int64_t t[4]);
int dp_task_live(struct dp *p, coop_task_id id, struct coop_rt_live *l);
int dp_cancel(struct dp *p, coop_task_id id);
/* A running cooperative task's cap on its workgroups (coop_rt_cap). */
int dp_cap(struct dp *p, coop_task_id id, unsigned cap);
/* Suspension (coop_rt_suspend), a SUSPENDED task's saved state into fd
 * (coop_rt_saved_state), and a task resumed from the state in fd
 * (coop_rt_submit_resumed): a job carried across a reload. */
int dp_suspend(struct dp *p, coop_task_id id);
int dp_saved(struct dp *p, coop_task_id id, int fd);
int dp_resume(struct dp *p, const struct coop_rt_task_desc *d, int fd, coop_task_id *id);
int dp_task_release(struct dp *p, coop_task_id id);
/* A kernel reload's carried buffers on the device (dev_carry.c): a share
 * made in the new device process (dp_share: *addr its address there, *h
 * its handle) and opened in the old one (dp_share_open: *addr its address
 * there); the old one unstages the buffers into it (a dp_buf's `share`);
 * the new one, prepared (its arena, no launch: dp_prepare, err as
 * dp_launch's; room for nbufs buffers of `bytes` placed on the device
 * ahead, coop_rt_arena_warm), stages them from it, and frees it
 * (dp_share_free: before the launch, else at close). COOP_EPERM or
 * COOP_ENOMEM: no share, the bytes go through a descriptor as before. */
int dp_prepare(struct dp *p, uint64_t bytes, unsigned nbufs, char *err, size_t errlen);
int dp_share(struct dp *p, uint64_t bytes, struct coop_rt_share *h, uint64_t *addr);
int dp_share_open(struct dp *p, const struct coop_rt_share *h, uint64_t *addr);
int dp_share_free(struct dp *p, uint64_t addr);
/* As coop_rt_view; returns the number filled or a negative code. */
int dp_view(struct dp *p, coop_task_id *owner, uint8_t *reserved, unsigned n);

/* The child's side: serves requests on fd until it closes. coopd's main
 * calls it for `--device-process FD`. */
int dp_child_main(int fd);

#endif /* COOPD_DEVPROC_H */
