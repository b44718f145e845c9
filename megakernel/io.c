/*
 * io.c: copies ordered with a task (coop_rt_submit_io; docs/kernels.md,
 * "Copies ordered with a task").
 *
 * A frame's task moves its input in and its output out. The host's way
 * (the default) does it in the calling threads: the copies in, then the
 * submit; the copies out by the wait that sees the end, before it
 * returns. The device's way (COOP_RT_IO=device, where the backend has a
 * queue and the host memory is the copy engine's) queues all of it at
 * once: the copies in, then the ring entry's publication (mb->sub_head
 * written by the device after the copies, so the scheduler takes the task
 * the moment its input is there); on a second queue a wait for the task's
 * final state, the copies out, then a flag in shared memory that
 * coop_rt_wait spins on. Measured, it was the slower of the two
 * (device_chosen).
 *
 * Per slot, io_state (rt_internal.h): NONE, no copies; DEVICE, the flag
 * io_flags[slot] == io_seq[slot] says the copies out are done; HOST, the
 * ranges io_out[slot] are still to copy; COPYING, a thread copies them;
 * DONE, they are there (io_err[slot]: their error). Set at the submit
 * under rt->lock, before the task is published; moved on by whichever
 * thread first sees the end (compare-and-swap); back to NONE at release.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* How long a submit waits for the device to publish the task before it
 * (its copies in: a few hundred microseconds for megabytes) */
#define COOP_IO_SETTLE_NS 2000000000ll

static int ranges_ok(const coop_rt *rt, const struct coop_rt_io *r, unsigned n) {
  if (n > COOP_RT_IO_MAX || (n && !r)) return 0;
  for (unsigned i = 0; i < n; i++)
    if (!r[i].host || !coop__arena_has(rt, r[i].arena, r[i].bytes)) return 0;
  return 1;
}

/* COOP_RT_IO=device: the device's way where it has one. Not the default:
 * on an H200 a frame's 272 KB went from the device process's request to
 * the scheduler's release in 45 us p50 that way, against 33 us copied by
 * the calling thread first (the copy into managed memory, the stream's
 * write of the head and the scheduler's next look at it:
 * bench/RESULTS.md, "A frame's ranges with its submit"). */
static int device_chosen(void) {
  const char *e = getenv("COOP_RT_IO");
  return e && !strcmp(e, "device");
}

long coop__io_gate_hold_ns;
int coop__io_gate_fail;

/* A gated task's gate (shared.h, COOP_GATE_*), opened once its copies in
 * are there (release, system scope: the copies before it; the copy engine's
 * are done when lane_copy returns). A failed copy: no copies out, the wait
 * and the release return its error, and the task, its input not all there,
 * ends CANCELLED (worker.cl, coop__gate). */
static void gate_open(coop_rt *rt, coop_task_id id, int err) {
  unsigned slot = (unsigned)(id & 0xffu);
  if (err) {
    rt->io_err[slot] = err;
    atomic_store_explicit(&rt->io_state[slot], COOP__IO_DONE, memory_order_relaxed);
  }
  atomic_store_explicit(&rt->mb->tasks[slot].gate, err ? COOP_GATE_FAILED : COOP_GATE_OPEN,
                        memory_order_release);
}

int coop_rt_submit_io(coop_rt *rt, const struct coop_rt_task_desc *d, const struct coop_rt_io *in,
                      unsigned nin, const struct coop_rt_io *out, unsigned nout, coop_task_id *id) {
  if (!rt || !d || !id || !rt->arena || d->cooperative) return COOP_EINVAL;
  if (!ranges_ok(rt, in, nin) || !ranges_ok(rt, out, nout)) return COOP_EINVAL;
  struct coop__io_plan p = {.in = in, .out = out, .nin = nin, .nout = nout};
  if (rt->ops && rt->ops->queue_io && device_chosen()) {
    int r = coop__rt_submit_io(rt, d, id, &p, 0);
    if (r != 1) return r;
  }
  if (!nin) return coop__rt_submit_io(rt, d, id, &p, 1);
  /* The host's way: the task first, behind its gate, then the copies in
   * while the scheduler takes, gathers and starts it, then the gate
   * opened. Copied first, a frame's 272 KB (13-14 us on an H200) came
   * before all of that. */
  p.gated = 1;
  int r = coop__rt_submit_io(rt, d, id, &p, 1);
  if (r) return r;
  if (coop__io_gate_hold_ns) coop__sleep_ns(coop__io_gate_hold_ns);
  int e = coop__io_gate_fail;
  for (unsigned i = 0; i < nin && !e; i++)
    e = coop_rt_arena_copy(rt, in[i].arena, in[i].host, in[i].bytes, 1);
  gate_open(rt, *id, e);
  return 0;
}

/* The host's way: slot's ranges out copied by this thread. */
static int copy_out(coop_rt *rt, unsigned slot) {
  int e = 0;
  for (unsigned i = 0; i < rt->io_nout[slot] && !e; i++) {
    const struct coop_rt_io *o = &rt->io_out[slot][i];
    e = coop_rt_arena_copy(rt, o->host, o->arena, o->bytes, 0);
  }
  return e;
}

int coop__io_finish(coop_rt *rt, unsigned slot, int64_t deadline) {
  _Atomic int *st = &rt->io_state[slot];
  for (;;) {
    int s = atomic_load_explicit(st, memory_order_acquire);
    if (s == COOP__IO_NONE || s == COOP__IO_DONE) return rt->io_err[slot];
    if (s == COOP__IO_DEVICE &&
        atomic_load_explicit(&rt->io_flags[slot], memory_order_acquire) == rt->io_seq[slot]) {
      atomic_store_explicit(st, COOP__IO_DONE, memory_order_release);
      return 0;
    }
    if (s == COOP__IO_HOST &&
        atomic_compare_exchange_strong_explicit(st, &s, COOP__IO_COPYING, memory_order_acquire,
                                                memory_order_acquire)) {
      rt->io_err[slot] = copy_out(rt, slot);
      atomic_store_explicit(st, COOP__IO_DONE, memory_order_release);
      return rt->io_err[slot];
    }
    if (coop__now_ns() > deadline) return COOP_ETIMEDOUT;
  }
}

int coop__io_settle(coop_rt *rt) {
  if (!rt->pub_pending) return 0;
  int64_t until = coop__now_ns() + COOP_IO_SETTLE_NS;
  while (atomic_load_explicit(&rt->mb->sub_head, memory_order_acquire) != rt->pub_head)
    if (coop__now_ns() > until) return COOP_ETIMEDOUT;
  rt->pub_pending = 0;
  return 0;
}

void coop__io_close(coop_rt *rt) {
  if (!rt->io_flags) return;
  /* The megakernel has left: a task with copies on the device that never
   * ended gets a final state here, so that the device's wait for it ends,
   * and the queues are drained before the memory they name goes. */
  for (unsigned s = 0; s < COOP_RING; s++) {
    struct coop_task_rec *t = &rt->mb->tasks[s];
    if (atomic_load_explicit(&rt->io_state[s], memory_order_relaxed) == COOP__IO_DEVICE &&
        atomic_load_explicit(&t->state, memory_order_relaxed) < COOP_TS_DONE)
      atomic_store_explicit(&t->state, COOP_TS_CANCELLED, memory_order_release);
  }
  if (rt->ops->io_drain) rt->ops->io_drain(rt);
  rt->ops->free_shared(rt, (void *)rt->io_flags);
  rt->io_flags = NULL;
}
