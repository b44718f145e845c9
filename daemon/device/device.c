/*
 * device.c: see device.h.
 *
 * Two queues under one mutex: `in` (loop -> device: new jobs), and `out`
 * (device -> loop: finished jobs), the latter announced by dev__announce:
 * uv_async_send, or while the loop spins a flag it reads every turn.
 * Cancellation is a flag on the job (atomic), seen by the device thread on
 * its next pass. The device thread sleeps on a condition variable when it
 * has nothing in flight; with tasks in flight it waits in the device
 * process (dp_wait), which spins on the task records (host memory) and
 * then sleeps, and answers as soon as one changes state: a finished task
 * is handed back within microseconds, with no timer. Whoever gives the
 * device thread new work (dev_submit, dev_cancel, dev_stop, dev_swap)
 * signals the condition variable and writes the kick eventfd, which ends
 * a dp_wait at once.
 *
 * The other concerns of the device thread each have a file (dev_internal.h
 * holds what they share): dev_run.c a job's run (start, submit, record,
 * finish), dev_stage.c its buffers, dev_slots.c the cooperative slots,
 * dev_watch.c the watchdog and restarts, dev_view.c the live view (TOP),
 * dev_carry.c the cooperative jobs carried across a reload, dev_prio.c the
 * cooperative jobs suspended for a job of higher priority or a share,
 * dev_ckpt.c their checkpoints and what a restart resumes from them.
 *
 * Kernel reload (dev_swap): the next megakernel is built elsewhere (a libuv
 * work thread, dev_build) while this one runs. The swap itself happens here:
 *   SWAP_REQUESTED: new jobs stay queued in `in`; running cooperative jobs
 *                   whose kernel stays are suspended and carried across
 *                   (dev_carry.c); the other running jobs get the grace
 *                   period to finish, then are cancelled;
 *   no runs left:   the old runtime closes, the new one launches (discovery);
 *                   if that fails, the old kernel set is built and launched
 *                   again; if even that fails the device is marked broken and
 *                   every job fails with a message saying so;
 *   then            queued jobs start again, each kernel resolved by name in
 *                   the new set (a kernel gone or with a new signature fails
 *                   that job), and on_swapped runs on the loop.
 *
 * Idle parking (docs/scheduler.md, "Idle parking"). With no run and no
 * job waiting for [device] park_ms, the device thread parks the megakernel
 * (dp_park: it leaves the device, the build and the arena stay), and
 * sleeps on the condition variable with no timeout. The next job is staged
 * as usual and, before its first submission, the megakernel is launched
 * again (dp_unpark: discovery, tens of ms on PoCL; the cost is logged and
 * in STATS). A failed relaunch restarts the device as a crash would.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "device.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "coop_rt.h"
#include "coop_util.h"
#include "devproc.h"
#include "dp_ends.h"
#include "fdio.h"
#include "dev_internal.h"
#include "log.h"

/* ---- loop side ---- */

static void on_async(uv_async_t *a) {
  struct dev *d = a->data;
  if (atomic_exchange(&d->prewake, 0) && d->hooks->expect_soon) /* the end's lead, then the copy */
    d->hooks->expect_soon(d->user, DP_WAKE_LEAD_NS + dev_idle_spin_ns(d));
  atomic_store(&d->announced, 0); /* before the queues: a later announce is seen again */
  pthread_mutex_lock(&d->mu);
  /* events and finished jobs taken together: a job's events were queued
   * before it, so they are all here when it is, and go out first */
  struct dev_event *ev = d->ev;
  size_t nev = d->nev;
  d->ev = NULL;
  d->nev = d->cap_ev = 0;
  struct job *j = d->out_head;
  d->out_head = d->out_tail = NULL;
  struct dev_bufop *op = d->bufout;
  d->bufout = NULL;
  int stopped = d->stopped;
  int swapped = d->swap_done, swap_err = d->swap_err;
  char swap_msg[sizeof d->swap_msg];
  memcpy(swap_msg, d->swap_msg, sizeof swap_msg);
  d->swap_done = 0;
  pthread_mutex_unlock(&d->mu);
  if (swapped && d->on_swapped) d->on_swapped(swap_err, swap_msg, d->user);
  for (size_t i = 0; i < nev; i++) d->hooks->job_event(d->user, &ev[i]);
  free(ev);
  while (op) { /* before the jobs: a job's RESULT never overtakes a write's OK */
    struct dev_bufop *n = op->next;
    op->done(op);
    op = n;
  }
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    TRACE_STAMP(j, loop_got);
    d->hooks->job_done(d->user, j);
    j = n;
  }
  if (stopped && d->on_stopped) {
    void (*cb)(struct dev *, void *) = d->on_stopped;
    d->on_stopped = NULL;
    cb(d, d->user);
  }
}

/* The flag, then the loop's: a Dekker pair with the loop's stop of its
 * spin (loopspin.c, on_idle: its flag cleared, then a last dev_poll), so
 * the loop either takes this work in that look or gets the uv_async. */
void dev__announce(struct dev *d) {
  atomic_store(&d->announced, 1);
  if (!d->loop_spin || !atomic_load(d->loop_spin)) uv_async_send(&d->async);
}

/* A job's hand-back is near (its task's end expected: near_end; its
 * output's copy next): a loop asleep in epoll_wait takes 21-24 us p50 to
 * wake for it on an H200, p90 up to 200 (2 ms frames, bench/RESULTS.md,
 * "The end of a frame's task, expected"), so it is woken now, its wake-up
 * beside the end and the copy, and spins until the hand-back
 * (hooks->expect_soon); a loop that spins already spins on as long. */
void dev__prewake(struct dev *d) {
  /* no idle spin (a CPU device: its megakernel needs the cores): nothing */
  if (!d->loop_spin || !dev_idle_spin_ns(d)) return;
  atomic_store(&d->prewake, 1);
  /* a loop that spins already sees it at its next turn (dev_poll) and
   * spins on until the hand-back: at 0.3 ms a frame's end comes after the
   * spin that followed its SUBMIT */
  dev__announce(d);
}

void dev_poll(struct dev *d) {
  if (atomic_load(&d->announced)) on_async(&d->async);
}

void dev_set_loop_spin(struct dev *d, const atomic_int *spinning) { d->loop_spin = spinning; }

/* The kick eventfd written, and noted for take_new to drain. */
static void kick_fd(struct dev *d) {
  atomic_store(&d->kick_pending, 1);
  uint64_t one = 1;
  ssize_t n = write(d->kick, &one, sizeof one); /* EAGAIN: already pending */
  (void)n;
}

/* Wakes the device thread wherever it waits: spinning on work_seq, on the
 * condition variable (nothing in flight) or in the device process's
 * dp_wait. work_seq, then in_wait; dev__wait_begin stores in_wait, then reads
 * work_seq; all seq_cst (a Dekker pair): either the device thread sees
 * the new count before it waits, or this sees it waiting and writes the
 * eventfd. A device thread that spins or runs a pass gets no eventfd: the
 * eventfd write (a system call here, its read one there) is saved. */
void dev__kick(struct dev *d) {
  atomic_fetch_add(&d->work_seq, 1); /* spin_for_work reads it */
  if (atomic_load(&d->in_wait)) kick_fd(d);
}

void dev__wait_begin(struct dev *d) {
  atomic_store(&d->in_wait, 1);
  if (atomic_load(&d->work_seq) != d->seen_seq) kick_fd(d); /* came before the flag */
}

void dev__wait_end(struct dev *d) { atomic_store(&d->in_wait, 0); }

/* j at the end of d's in queue, its condition variable signalled; d->mu
 * held (the caller kicks once it unlocks). */
static void enqueue_locked(struct dev *d, struct job *j) {
  dev__jobq_push(&d->in_head, &d->in_tail, j);
  pthread_cond_signal(&d->cv);
}

void dev_submit(struct dev *d, struct job *j) {
  atomic_store(&j->state, COOP_JOB_QUEUED);
  pthread_mutex_lock(&d->mu);
  enqueue_locked(d, j);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
}

/* The device thread woken for a flag set on a job (cancel, move_to). */
static void wake(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
}

void dev_cancel(struct dev *d, struct job *j) {
  atomic_store(&j->cancel, 1);
  wake(d);
}

int dev_migrate(struct dev *from, struct job *j, struct dev *to, unsigned index) {
  if (dev__move_claim(j, to, index)) return -1;
  atomic_store(&j->moved_by_hand, 1);
  wake(from);
  return 0;
}

int dev__adopt(struct dev *d, struct job *j, unsigned index) {
  pthread_mutex_lock(&d->mu);
  if (d->stopping) { /* its thread may be gone before it takes the job */
    pthread_mutex_unlock(&d->mu);
    return -1;
  }
  j->device = (uint8_t)index; /* before the link: see dev_move.c */
  if (j->dev_run) {
    atomic_store(&j->suspended_for, DEV_FOR_MOVE);
    atomic_store(&j->suspended, 1);
  }
  enqueue_locked(d, j);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
  return 0;
}

/* A job moved here with its suspended run (dev__adopt): first in the slot
 * queue, as a job suspended here would be (dev__suspend_out). */
static void adopt_suspended(struct dev *d, struct job *j) {
  dev__coop_wait_push_front(d, j);
  log_info("job %llu (%s): moved here, suspended; it resumes when a slot is free",
           (unsigned long long)j->id, j->kernel);
}

void dev_stop(struct dev *d, unsigned grace_ms, void (*on_stopped)(struct dev *, void *)) {
  pthread_mutex_lock(&d->mu);
  d->on_stopped = on_stopped;
  d->stopping = 1;
  d->stop_deadline = coop__now_ns() + (int64_t)grace_ms * 1000000;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
}

/* ---- device side ---- */

void dev__hand_back(struct dev *d, struct job *j) {
  /* the client's memfds are written back (or not wanted): a finished job
   * kept for a later WAIT must not hold them open. Nor its ranges'
   * descriptors (devbuf_io): a frame loop's finished jobs held one each, and
   * every time the daemon's descriptor table grew past a power of two the
   * kernel's expansion (an RCU grace period, the process being threaded)
   * stopped the loop for 5 to 14 ms (bench/RESULTS.md, "A frame in one
   * request each way"). Both are taken out of the job here and closed
   * once it is announced: a close is a system call that the RESULT need
   * not wait for */
  dev__warm_arm(d, j); /* its ranges' descriptors still in it, for the window's copy */
  int io[2 * COOP_WIRE_MAX_ARGS];
  unsigned nio = job_io_fds(j, io);
  for (unsigned i = 0; i < j->nargs; i++) {
    if (j->args[i].fd >= 0) {
      io[nio++] = j->args[i].fd;
      j->args[i].fd = -1;
    }
  }
  TRACE_STAMP(j, handed_back); /* before the loop may see it */
  dev__spin_after(d);
  dev__preempt_arm(d, j);
  pthread_mutex_lock(&d->mu);
  j->dev_next = NULL;
  if (d->out_tail)
    d->out_tail->dev_next = j;
  else
    d->out_head = j;
  d->out_tail = j;
  pthread_mutex_unlock(&d->mu);
  dev__announce(d);
  for (unsigned i = 0; i < nio; i++) close(io[i]);
}

void dev__cancel_queued(struct dev *d, struct job *j, const char *why) {
  atomic_store(&j->state, COOP_JOB_CANCELLED);
  j->error = COOP_ECANCELED;
  snprintf(j->message, sizeof j->message, "%s",
           d->stop_now ? "cancelled: the daemon is shutting down" : why);
  dev__hand_back(d, j);
}

static void take_new(struct dev *d) {
  /* The kicks so far announce what this pass takes: spent now, so that only
   * later work ends the device process's waits (a kick left from the job
   * this pass submits ended its DP_SUBMIT wait at once, and its end took
   * two more round trips). Only written while the device thread waited
   * (dev__kick), so usually there is none to read. */
  d->seen_seq = atomic_load_explicit(&d->work_seq, memory_order_acquire);
  if (atomic_exchange(&d->kick_pending, 0)) {
    uint64_t spent;
    ssize_t got = read(d->kick, &spent, sizeof spent);
    (void)got;
  }
  dev__do_bufops(d, 0); /* first: a job submitted after a write's OK sees its bytes */
  pthread_mutex_lock(&d->mu);
  d->stop_now = d->stopping;
  d->stop_at = d->stop_deadline;
  d->swap_now = d->swapping;
  d->swap_at = d->swap_deadline;
  struct job *j = NULL;
  if (!d->swapping || d->stopping) { /* a reload keeps new jobs queued */
    j = d->in_head;
    d->in_head = d->in_tail = NULL;
  }
  pthread_mutex_unlock(&d->mu);
  int64_t taken = coopd_tracing ? coop__now_ns() : 0;
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    TRACE_SET(j, taken, taken);
    if (j->dev_run) { /* moved from another device: the slot queue cancels it if need be */
      adopt_suspended(d, j);
    } else if (d->stop_now || atomic_load(&j->cancel)) {
      dev__cancel_queued(d, j, "cancelled");
    } else if (d->held_head || dev__held(d, j->uid, coop__now_ns())) {
      dev__queue_held(d, j); /* behind the held ones: pump_held keeps the order */
    } else {
      dev__start_job(d, j);
    }
    j = n;
  }
}

void dev__spin_after(struct dev *d) {
  int64_t spin = atomic_load_explicit(&d->idle_spin_ns, memory_order_relaxed);
  if (spin) d->spin_until = coop__now_ns() + spin;
}

/* Within idle_spin_ns of a job's hand-back (or a buffer operation's end) the device thread watches
 * work_seq instead of sleeping: a client that submits its next job on
 * the last one's RESULT does so within tens of microseconds, and a thread
 * woken on the condition variable costs several of them (the trace's "the
 * device thread's wake"). A kick that came since take_new ends it; one
 * whose work that pass already took costs one empty pass. */
static int spin_for_work(struct dev *d, int64_t wake) {
  int64_t end = d->spin_until < wake ? d->spin_until : wake;
  while (coop__now_ns() < end)
    if (atomic_load_explicit(&d->work_seq, memory_order_acquire) != d->seen_seq) return 1;
  return 0;
}

static void wait_for_work(struct dev *d, int64_t wake) {
  if (d->spin_until && spin_for_work(d, wake)) return;
  pthread_mutex_lock(&d->mu);
  /* a build in place asked for, or a built one given up, is work too */
  int takes =
      (d->in_head && !d->swapping) || d->bufin_head || d->next_state == NEXT_ASKED || d->next_drop;
  if (!takes && !(d->stopping && !d->runs) && !(d->swapping && !d->runs)) {
    if (!d->runs && !d->in_head && !d->coop_wait_head && !d->held_head && !d->turn_head &&
        !d->room_head && wake == INT64_MAX) {
      pthread_cond_wait(&d->cv, &d->mu);
    } else if (wake > coop__now_ns()) { /* the cv waits on CLOCK_MONOTONIC too */
      struct timespec ts = {wake / 1000000000, wake % 1000000000};
      pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    }
  }
  pthread_mutex_unlock(&d->mu);
}

/* At a stop: the device process closes the runtime (the megakernel
 * exits); one whose kernel never returns is killed after DP_CLOSE_MS. */
static void close_runtime(struct dev *d) {
  if (d->rt && dp_close(d->rt, DP_CLOSE_MS))
    log_warn("the megakernel did not exit within %u ms: its device process was killed",
             DP_CLOSE_MS);
  d->rt = NULL;
  atomic_store_explicit(&d->rt_up, 0, memory_order_release); /* dev_watch_get says why */
}

/* One request for the infos of every task in flight: the pass below reads
 * them from the proxy's cache (devproc.h), not one request per task. */
static void poll_tasks(struct dev *d) {
  if (d->fresh) { /* the dp_wait that ended the last pass read them all */
    d->fresh = 0;
    return;
  }
  coop_task_id ids[256]; /* the runtime has 256 task slots (shared.h); 2 KiB, per thread */
  unsigned n = 0;
  for (struct run *r = d->runs; r; r = r->next)
    for (unsigned i = 0; i < r->ninflight && n < 256; i++) ids[n++] = r->task[i];
  if (n && d->rt) dp_poll(d->rt, ids, n);
}

/* Relaunches a parked megakernel before a run's first submission. */
static void unpark(struct dev *d) {
  int64_t t0 = coop__now_ns();
  char err[1024];
  int e = dp_unpark(d->rt, err, sizeof err);
  d->parked = 0;
  atomic_store(&d->parked_pub, 0);
  if (e) {
    snprintf(d->restart_why, sizeof d->restart_why, "its relaunch after parking failed: %.200s",
             err);
    return;
  }
  atomic_store(&d->workers, dp_workers(d->rt));
  atomic_store(&d->unpark_ns, coop__now_ns() - t0);
  log_debug("%s: relaunched after parking in %.3f ms, %u workers", d->logname,
            (double)(coop__now_ns() - t0) / 1e6, dp_workers(d->rt));
}

/* Parks the megakernel once the device has been idle for park_ms; else
 * lowers *wake to that moment. Every pass that does not park lowers it,
 * busy or not: the pass that ends a reload, a restart or the last run may
 * be the last one before wait_for_work, and a wake of INT64_MAX there
 * would leave the megakernel spinning until the next job (the idle
 * megakernel never parked again after a reload). */
static void maybe_park(struct dev *d, int64_t now, int64_t *wake) {
  pthread_mutex_lock(&d->mu);
  int busy = d->in_head || d->swapping || d->stopping;
  pthread_mutex_unlock(&d->mu);
  if (busy || d->runs || d->coop_wait_head || d->restart_why[0]) d->idle_since = now;
  if (d->parked || !d->rt || !d->cfg->park_ms) return;
  int64_t at = d->idle_since + (int64_t)d->cfg->park_ms * 1000000;
  if (busy || d->runs || d->coop_wait_head || now < at) {
    if (!d->runs && at < *wake) *wake = at; /* a run's passes come anyway */
    return;
  }
  int e = dp_park(d->rt);
  if (e == COOP_ELOST) return; /* the next pass restarts the device */
  if (e) {
    log_warn("%s: could not park the megakernel: %s", d->logname, coop_strerror(e));
    d->idle_since = now; /* try again a period later */
    return;
  }
  d->parked = 1;
  /* the count before the flag: STATS loads the flag first, so a reader
   * that sees it parked sees this park counted (published the other way
   * round, a STATS between the two said parked with 0 parks) */
  atomic_fetch_add(&d->parks, 1);
  atomic_store(&d->parked_pub, 1);
  log_debug("%s: idle for %u ms: the megakernel is parked", d->logname, d->cfg->park_ms);
}

/* Something for the next pass that the kick announced: a job, a stop, a
 * reload request. */
int dev__new_work(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  int w = (d->in_head && !d->swapping) || d->bufin_head || d->stopping != d->stop_now ||
          d->swapping != d->swap_now || (d->stopping && d->stop_deadline != d->stop_at);
  pthread_mutex_unlock(&d->mu);
  return w;
}

/* The tasks in flight. */
static unsigned nrun(const struct dev *d) {
  unsigned n = 0;
  for (const struct run *r = d->runs; r; r = r->next) n += r->ninflight;
  return n;
}

/* Whether a non-cooperative task is in flight (dp_wait spins only then). */
static int short_inflight(const struct dev *d) {
  for (const struct run *r = d->runs; r; r = r->next)
    if (r->ninflight && !(r->j->flags & COOP_SUBMIT_COOPERATIVE)) return 1;
  return 0;
}

/* Tasks in flight: the device process waits for one of them to change
 * (dp_wait), for the kick, or until wake (a periodic release), at most
 * DEV_WAIT_NS so the watchdog's checks still run. */
static void wait_in_flight(struct dev *d, int64_t wake) {
  coop_task_id ids[DP_WAIT_MAX]; /* 1 KiB on this device's thread */
  unsigned n = 0;
  for (struct run *r = d->runs; r; r = r->next)
    for (unsigned i = 0; i < r->ninflight && n < DP_WAIT_MAX; i++) ids[n++] = r->task[i];
  int64_t now = coop__now_ns(), budget = wake - now;
  if (budget > d->wait_ns) budget = d->wait_ns;
  if (budget <= 0) return;
  /* a lost child shows in dp_alive on the next pass */
  dev__wait_begin(d);
  d->fresh = dp_wait(d->rt, ids, n, budget, short_inflight(d)) == 0 && n == nrun(d);
  dev__wait_end(d);
}

/* The start of a window ahead of a frame (warming ahead, above; suspending
 * ahead, dev_prio.c) as the latest wake: a one-task job alone on the device
 * waits for its end inside its submit, up to the pass's wake, and a bfs job
 * that started between two frames held the device thread there through
 * the next frame's windows, neither warmed nor suspended ahead, until the
 * frame's own submit woke it; the frame then waited for the suspension (a
 * frame in three beside back-to-back bfs jobs on an H200: bench/RESULTS.md,
 * "A start's id map in batches"). Called at the pass's start and again at
 * each such submit (dev_run.c), which may follow a frame's end in the same
 * pass: that end armed the next windows after the pass's wake was set. */
void dev__windows_due(const struct dev *d, int64_t now, int64_t *wake) {
  dev__warm_due(d, now, wake);
  dev__preempt_due(d, now, wake);
}

static void do_swap(struct dev *d);
static int next_step(struct dev *d, int64_t now, int64_t *wake);

static void *dev_main(void *arg) {
  struct dev *d = arg;
  /* its naps (a reply's, up to an expected end: devproc.c) end when asked,
   * not up to the default 50 us later, as the device process's
   * (devproc_child.c): with the default, a 2 ms frame's end was seen 55 to
   * 255 us after the device process saw it in a frame in eight on an H200
   * (bench/RESULTS.md, "Where the last suspensions and the late ends came
   * from") */
  prctl(PR_SET_TIMERSLACK, 1000UL);
  for (;;) {
    take_new(d);
    dev__carry_prepare(d); /* before this pass asks any job to suspend for the swap */
    /* after take_new, which may have just held a job: its wake counts */
    int64_t held_wake = INT64_MAX; /* the next end of a hold (dev_hold.c) */
    dev__pump_held(d, coop__now_ns(), &held_wake);
    dev__pump_room(d);
    dev__pump_coop_wait(d);
    dev__pump_turns(d);
    if (d->parked && d->runs) unpark(d);
    poll_tasks(d);
    int64_t now = coop__now_ns(), wake = now + d->wait_ns;
    if (held_wake < wake) wake = held_wake; /* a one-task job's submit waits until then at most */
    /* and until the next window's start: a long job's submit waits for its
     * task's end (submit_wait_ns, dev_run.c) */
    dev__windows_due(d, now, &wake);
    int building = next_step(d, now, &wake);
    int suspended = 0, ended = 0;
    for (struct run **p = &d->runs; *p;) {
      struct run *r = *p;
      int s = dev__step_run(d, r, now, &wake);
      if (s == 2) { /* suspended: it waits for the new megakernel (dev_carry.c) */
        *p = r->next;
        r->next = d->carried;
        d->carried = r;
      } else if (s == 4) { /* suspended: to another device (dev_move.c) */
        *p = r->next;
        dev__move_out(d, r);
      } else if (s == 3) { /* suspended: its job waits for a slot again (dev_prio.c) */
        *p = r->next;
        r->next = NULL;
        suspended = 1;
      } else if (s == 5) { /* no room to resume: its job waits again (dev_room.c) */
        *p = r->next;
        r->next = NULL;
      } else if (s) {
        if (dev__finish_or_keep(d, r)) {
          p = &r->next; /* its device process died under its unstage: dev__restart below */
        } else {
          *p = r->next;
          dev__run_free(r);
          ended = 1;
        }
      } else {
        p = &r->next;
      }
    }
    /* What it was suspended for starts now, not a pass later; and what
     * waited for the workers or the slot of a run that ended (a job
     * suspended for a task of higher priority, a cooperative job waiting
     * for a slot) starts in the next pass, at once: with nothing else in
     * flight the thread slept until DEV_WAIT_NS, and a bfs suspended for
     * each 60 fps frame of higher priority resumed 50 ms after it, with
     * the device idle in between. */
    if (suspended || ended) {
      d->room_freed = 1;
      d->room_seq++;
      dev__pump_room(d);
      dev__pump_coop_wait(d);
      dev__pump_turns(d);
      wake = now;
    }
    /* a job waiting for room that another device has goes there first:
     * cheaper than the suspension and the copies out that would make the
     * room here (dev_room.c) */
    dev__move_room_waiters(d);
    /* what a waiting job, or a task submitted in this pass, lacks is
     * suspended now: the next pass may be DEV_WAIT_NS away (dev_prio.c) */
    dev__preempt(d);
    dev__preempt_ahead(d, now, &wake);
    dev__move_waiting(d); /* after the suspensions: one may move to an idle device now */
    dev__room_publish(d);
    if (d->restart_why[0] || (d->rt && !dp_alive(d->rt))) dev__restart(d);
    if (!d->runs && !d->coop_wait_head && !d->turn_head && !d->room_head && !building)
      wake = INT64_MAX; /* nothing to poll */
    if (held_wake < wake) wake = held_wake;
    maybe_park(d, now, &wake);
    dev__warm_ahead(d, coop__now_ns(), &wake);
    dev__build_view(d, now);
    pthread_mutex_lock(&d->mu);
    int swap = d->swapping && !d->runs;
    pthread_mutex_unlock(&d->mu);
    if (swap) { /* a new megakernel: the next pass looks at it afresh (when to park it) */
      do_swap(d);
      continue;
    }
    pthread_mutex_lock(&d->mu);
    int done = d->stopping && !d->runs && !d->in_head && !d->coop_wait_head && !d->held_head &&
               !d->turn_head && !d->room_head;
    pthread_mutex_unlock(&d->mu);
    if (done) break;
    if (d->runs && d->rt && dp_alive(d->rt) && !dev__new_work(d))
      wait_in_flight(d, wake);
    else
      wait_for_work(d, wake);
  }
  close_runtime(d);
  dev__do_bufops(d, 1); /* the last ones fail: no answer is lost */
  pthread_mutex_lock(&d->mu);
  d->stopped = 1;
  if (d->next_state == NEXT_ASKED || d->next_state == NEXT_BUILDING) {
    d->next_state = NEXT_UNAVAILABLE; /* dev_next_build's waiter goes on */
    pthread_cond_broadcast(&d->next_cv);
  }
  pthread_mutex_unlock(&d->mu);
  dev__announce(d);
  return NULL;
}

int dev_index(const struct dev *d) { return d->index; }

int dev_build(const struct config *c, int index, const struct kset *ks, struct dp **rtp, char *err,
              size_t errlen) {
  return dp_build(rtp, c, index, ks, err, errlen);
}

int dev_check_build(const struct config *c, int index, const struct kset *ks, char *err,
                    size_t errlen) {
  return dp_check(c, index, ks, c->author_build_ms, err, errlen);
}

/* [device] idle_spin_us: -1 lets the backend choose: a GPU's spinning
 * threads take no core from its megakernel, a CPU device's (PoCL) do. */
static int64_t idle_spin_ns(const struct config *c, const char *backend) {
  if (c->idle_spin_us >= 0) return (int64_t)c->idle_spin_us * 1000;
  return dp_backend_spins(backend) ? DEV_IDLE_SPIN_NS : 0;
}

/* What a launch (or a swap in place) tells of rt's megakernel, for the
 * loop (WELCOME, STATS) and the device thread. */
static void launched(struct dev *d, struct dp *rt) {
  /* under mu: a restart or a reload launches on the device thread while
   * the loop copies these for WELCOME and STATS (dev_name) */
  pthread_mutex_lock(&d->mu);
  snprintf(d->name, sizeof d->name, "%s", dp_device_name(rt));
  snprintf(d->backend, sizeof d->backend, "%s", dp_backend(rt));
  snprintf(d->backend_note, sizeof d->backend_note, "%s", dp_backend_note(rt));
  pthread_mutex_unlock(&d->mu);
  atomic_store(&d->cus, dp_compute_units(rt));
  atomic_store(&d->workers, dp_workers(rt));
  d->broken[0] = 0;
  d->parked = 0; /* a new device process starts launched */
  atomic_store(&d->parked_pub, 0);
}

/* A one-task job's end is near (dp_on_near_end): a loop asleep is woken
 * now, so that it polls when the job comes back about DP_WAKE_LEAD_NS on. */
static void near_end(void *arg) { dev__prewake(arg); }

int dev__launch(struct dev *d, struct dp *rt, char *err, size_t errlen) {
  int e = dp_launch(rt, err, errlen);
  if (e == 0) atomic_store(&d->idle_spin_ns, idle_spin_ns(d->cfg, dp_backend(rt)));
  if (e == 0) e = dp_set_kick(rt, d->kick, atomic_load(&d->idle_spin_ns));
  if (e) return e;
  dp_on_near_end(rt, near_end, d);
  d->rt = rt;
  d->gen++; /* the device buffers of the one before are gone (dev_bufs.c) */
  atomic_store_explicit(&d->rt_up, 1, memory_order_release); /* dev_watch_get says why */
  launched(d, rt);
  return 0;
}

unsigned dev_parked(const struct dev *d) { return atomic_load(&d->parked_pub); }
unsigned dev_parks(const struct dev *d) { return atomic_load(&d->parks); }
int64_t dev_unpark_ns(const struct dev *d) { return atomic_load(&d->unpark_ns); }
int64_t dev_idle_spin_ns(const struct dev *d) { return atomic_load(&d->idle_spin_ns); }

/* The old device process closed on a thread of its own once its
 * megakernel has left the device (dp_park): its teardown, tens of ms of
 * freeing its context, overlaps the new one's staging and launch. */
struct closer {
  struct dp *old; /* NULL once joined, or where none was started */
  int64_t ns;     /* how long its close took */
  pthread_t th;
};

static void *close_main(void *arg) {
  struct closer *c = arg;
  int64_t t0 = coop__now_ns();
  if (dp_close(c->old, DP_CLOSE_MS))
    log_warn("the old device process did not exit within %u ms: it was killed", DP_CLOSE_MS);
  c->ns = coop__now_ns() - t0;
  return NULL;
}

static void closer_join(struct dev *d, struct closer *c) {
  if (!c->old) return;
  pthread_join(c->th, NULL);
  c->old = NULL;
  log_info("%s: reload: the old device process closed in %.0f ms, beside the swap", d->logname,
           (double)c->ns / 1e6);
}

/* The swap's legs: the old megakernel leaves, the carried buffers are
 * staged into next, next launches; the old process closes in c, which
 * the caller joins once the carried jobs run on. 0, or the launch's
 * error (msg). */
static int swap_legs(struct dev *d, struct dp *next, struct closer *c, char *msg, size_t len) {
  int64_t t0 = coop__now_ns();
  c->old = d->rt;
  int left = d->parked || (d->rt && dp_park(d->rt) == 0);
  if (c->old && left && pthread_create(&c->th, NULL, close_main, c) == 0) {
    d->rt = NULL;
    atomic_store_explicit(&d->rt_up, 0, memory_order_release);
  } else {
    c->old = NULL;
    close_runtime(d);
  }
  int64_t t1 = coop__now_ns();
  /* beside the old process's teardown, where next's arena fits beside
   * the old one's; what it could not stage, once the old one is gone */
  if (dev__carry_prestage(d, next, c->old != NULL)) {
    closer_join(d, c);
    dev__carry_prestage(d, next, 0);
  }
  int64_t t2 = coop__now_ns();
  int e = dev__launch(d, next, msg, len);
  /* the swap's legs, each bounded (DP_PARK_MS or DP_CLOSE_MS, the
   * launch's discovery): a slow reload says which one it was */
  log_info("%s: reload: the old megakernel left the device in %.0f ms, the new one %s in %.0f ms",
           d->logname, (double)(t1 - t0) / 1e6, e ? "failed" : "launched",
           (double)(coop__now_ns() - t2) / 1e6);
  return e;
}

/* The swap of a set built in place (dev_next_build): the megakernel
 * parked, the new program in, relaunched, in the same device process; the
 * carried jobs' buffers stay where they are. A restart meanwhile built the
 * set into a new device process (swap_rebuilt): nothing left to do. On a
 * failure the device restarts with the old set, and the carried jobs,
 * whose buffers were in the process it replaces, are lost. 0, or the
 * error (msg). */
static int swap_in_place(struct dev *d, const struct kset *ks, char *msg, size_t len) {
  if (d->swap_rebuilt) return 0;
  int64_t t0 = coop__now_ns();
  int e = d->rt ? dp_next_swap(d->rt, d->cfg, d->index, ks, msg, len) : COOP_ELOST;
  if (e == COOP_ELOST && !d->rt) snprintf(msg, len, "no device process runs");
  if (e == 0) {
    launched(d, d->rt); /* its device buffers stay: d->gen as it was */
    log_info(
        "%s: reload: swapped in place in %.1f ms (the megakernel parked, the new program "
        "in, relaunched on %u workers)",
        d->logname, (double)(coop__now_ns() - t0) / 1e6, dp_workers(d->rt));
    return 0;
  }
  if (d->rt) dp_next_drop(d->rt);
  while (d->carried) { /* their buffers go with the process */
    struct run *r = d->carried;
    d->carried = r->next;
    dev__fail(r->j, COOP_ELOST, "could not resume it after the kernel reload: %.200s", msg);
    if (r->state_fd >= 0) close(r->state_fd);
    r->state_fd = -1;
    dev__finish_job(d, r);
    dev__run_free(r);
  }
  snprintf(d->restart_why, sizeof d->restart_why, "the reload's swap in place failed: %.200s", msg);
  return e;
}

/* Device thread, no job running: the old megakernel goes, the new one
 * comes (see the top of this file). */
static void do_swap(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  struct dp *next = d->swap_rt;
  const struct kset *ks = d->swap_ks, *old_ks = d->ks;
  int stopping = d->stopping, inplace = d->swap_inplace;
  pthread_mutex_unlock(&d->mu);
  char msg[sizeof d->swap_msg] = "";
  int e = 0;
  struct closer c = {0};
  if (stopping) {
    if (next) dp_close(next, DP_CLOSE_MS);
    if (inplace && d->rt) dp_next_drop(d->rt);
    e = COOP_ESHUTDOWN;
    snprintf(msg, sizeof msg, "the daemon is shutting down");
  } else if (inplace) {
    dev__carry_suspended(d); /* those whose kernel changed are cancelled */
    e = swap_in_place(d, ks, msg, sizeof msg);
    if (e == 0) d->ks = ks;
  } else {
    dev__carry_suspended(d); /* their buffers out of the old device process first */
    e = swap_legs(d, next, &c, msg, sizeof msg);
    if (e) closer_join(d, &c); /* the old set comes back: the old process must be gone */
    if (e == 0) {
      d->ks = ks;
    } else {
      dp_close(next, DP_CLOSE_MS);
      struct dp *again = NULL;
      char err2[1024];
      int e2 = dev_build(d->cfg, d->index, old_ks, &again, err2, sizeof err2);
      if (e2 == 0) {
        e2 = dev__launch(d, again, err2, sizeof err2);
        if (e2) dp_close(again, DP_CLOSE_MS);
      }
      if (e2) {
        snprintf(d->broken, sizeof d->broken, "relaunch after a failed reload: %.400s", err2);
        log_error("the device is unavailable: %s", d->broken);
      }
    }
  }
  d->idle_since = coop__now_ns(); /* the new megakernel parks park_ms from now */
  pthread_mutex_lock(&d->mu);
  d->swapping = 0;
  d->swap_prepared = 0;
  d->swap_inplace = 0;
  d->swap_rebuilt = 0;
  d->next_state = NEXT_IDLE;
  d->swap_rt = NULL;
  d->swap_ks = NULL;
  d->swap_done = 1;
  d->swap_err = e;
  memcpy(d->swap_msg, msg, sizeof msg);
  pthread_mutex_unlock(&d->mu);
  dev__carry_in(d); /* the jobs suspended across it run on */
  dev__announce(d);
  closer_join(d, &c);
}

int dev_next_build(struct dev *d, const struct kset *ks, char *msg, size_t len) {
  pthread_mutex_lock(&d->mu);
  if (!atomic_load_explicit(&d->rt_up, memory_order_acquire) || d->stopping || d->swapping ||
      d->next_state != NEXT_IDLE) {
    pthread_mutex_unlock(&d->mu);
    return DEV_NOT_IN_PLACE;
  }
  d->next_ks = ks;
  d->next_state = NEXT_ASKED;
  d->next_msg[0] = '\0';
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
  pthread_mutex_lock(&d->mu);
  while (d->next_state == NEXT_ASKED || d->next_state == NEXT_BUILDING)
    pthread_cond_wait(&d->next_cv, &d->mu);
  int st = d->next_state;
  if (st != NEXT_BUILT) {
    snprintf(msg, len, "%s", d->next_msg);
    d->next_state = NEXT_IDLE;
  }
  pthread_mutex_unlock(&d->mu);
  return st == NEXT_BUILT ? 0 : st == NEXT_UNAVAILABLE ? DEV_NOT_IN_PLACE : st;
}

void dev_next_cancel(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  if (d->next_state == NEXT_BUILT && !d->swapping) {
    d->next_state = NEXT_IDLE;
    d->next_drop = 1;
    pthread_cond_signal(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
  dev__kick(d);
}

/* Device thread, every pass: a build in place asked for is started, one
 * under way looked at (every DEV_NEXT_POLL_NS: *wake), and its end told to
 * dev_next_build's waiter; a built set given up is let go. Returns 1 while
 * it builds. */
static int next_step(struct dev *d, int64_t now, int64_t *wake) {
  pthread_mutex_lock(&d->mu);
  int st = d->next_state, drop = d->next_drop;
  const struct kset *ks = d->next_ks;
  d->next_drop = 0;
  pthread_mutex_unlock(&d->mu);
  if (drop && d->rt) dp_next_drop(d->rt);
  if (st != NEXT_ASKED && st != NEXT_BUILDING) return 0;
  char msg[sizeof d->next_msg] = "";
  int ns;
  if (!d->rt || !dp_alive(d->rt) || d->stop_now) {
    ns = NEXT_UNAVAILABLE; /* the reload builds a new device process instead */
  } else if (st == NEXT_ASKED) {
    int e = dp_next_build(d->rt, ks, msg, sizeof msg);
    ns = e ? e : NEXT_BUILDING;
  } else {
    int p = dp_next_poll(d->rt, msg, sizeof msg);
    ns = p < 0 ? p : p ? NEXT_BUILT : NEXT_BUILDING;
  }
  if (ns < 0 && d->rt && dp_alive(d->rt)) dp_next_drop(d->rt); /* the failed one */
  if (ns == COOP_ELOST) ns = NEXT_UNAVAILABLE; /* died meanwhile: a restart follows */
  if (ns == NEXT_BUILDING && now + DEV_NEXT_POLL_NS < *wake) *wake = now + DEV_NEXT_POLL_NS;
  pthread_mutex_lock(&d->mu);
  d->next_state = ns;
  snprintf(d->next_msg, sizeof d->next_msg, "%s", msg);
  if (ns != NEXT_BUILDING) pthread_cond_broadcast(&d->next_cv);
  pthread_mutex_unlock(&d->mu);
  return ns == NEXT_BUILDING;
}

int dev_swap(struct dev *d, struct dp *next, const struct kset *ks, unsigned grace_ms,
             void (*on_swapped)(int err, const char *msg, void *user)) {
  pthread_mutex_lock(&d->mu);
  int busy = d->swapping || d->stopping || (!next && d->next_state != NEXT_BUILT);
  if (!busy) {
    d->swap_rt = next;
    d->swap_inplace = next == NULL;
    d->swap_ks = ks;
    d->swapping = 1;
    d->swap_deadline = coop__now_ns() + (int64_t)grace_ms * 1000000;
    d->on_swapped = on_swapped;
    pthread_cond_signal(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
  if (!busy) dev__kick(d);
  return busy ? COOP_ESTATE : 0;
}

int dev_open(struct dev **dp, const struct config *c, unsigned place, int index,
             const struct kset *ks, uv_loop_t *loop, const struct dev_hooks *hooks, void *user,
             char *err, size_t errlen) {
  struct dev *d = calloc(1, sizeof *d);
  if (!d) return COOP_ENOMEM;
  pthread_mutex_init(&d->mu, NULL); /* before dev__launch, which takes it */
  d->cfg = c;
  d->index = index;
  d->place = place;
  snprintf(d->logname, sizeof d->logname, "device %u", place);
  d->ks = ks;
  d->wait_ns = DEV_WAIT_NS;
  /* tests only: passes this far apart show what a pass that did not come
   * leaves waiting (test_daemon_priority) */
  const char *tw = getenv("COOP_TEST_DEV_WAIT_MS");
  if (tw && atol(tw) > 0) d->wait_ns = atol(tw) * 1000000L;
  /* tests only: a window of suspension ahead wider than a test's frames'
   * jitter on a loaded machine (dev_prio.c) */
  d->pre_ahead_ns = DEV_PRE_AHEAD_NS;
  const char *ta = getenv("COOP_TEST_PRE_AHEAD_MS");
  if (ta && atol(ta) > 0) d->pre_ahead_ns = atol(ta) * 1000000L;
  d->hooks = hooks;
  d->user = user;
  /* made now, not at the first inline job: it lives as long as the device
   * (dev_stage.c), one of coopd's descriptors from its start */
  d->inl_fd = memfd_create("coopd-inline", MFD_CLOEXEC);
  d->zero_fd = dev__zeros_make(); /* the same: large buffers' zeroes */
  d->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (d->kick < 0) {
    snprintf(err, errlen, "eventfd: %s", strerror(errno));
    if (d->inl_fd >= 0) close(d->inl_fd);
    if (d->zero_fd >= 0) close(d->zero_fd);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return COOP_ENOMEM;
  }
  struct dp *rt = NULL;
  int e = dev_build(c, index, ks, &rt, err, errlen);
  if (e == 0) {
    e = dev__launch(d, rt, err, errlen);
    if (e) dp_close(rt, DP_CLOSE_MS);
  }
  if (e) {
    close(d->kick);
    if (d->inl_fd >= 0) close(d->inl_fd);
    if (d->zero_fd >= 0) close(d->zero_fd);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return e;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&d->next_cv, NULL);
  uv_async_init(loop, &d->async, on_async);
  d->async.data = d;
  dev__build_view(d, coop__now_ns()); /* TOP has a view before the first client comes */
  *dp = d;
  return 0;
}

int dev_start(struct dev *d) {
  int e = pthread_create(&d->thread, NULL, dev_main, d);
  if (e) return COOP_ENOMEM;
  pthread_setname_np(d->thread, "coopd-device");
  return 0;
}

static void on_async_closed(uv_handle_t *h) { free(h->data); }

void dev_free(struct dev *d) {
  pthread_join(d->thread, NULL);
  close(d->kick);
  if (d->inl_fd >= 0) close(d->inl_fd);
  if (d->zero_fd >= 0) close(d->zero_fd);
  free(d->ev);
  dev__warm_free(d);
  free(d->bufuse);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  pthread_cond_destroy(&d->next_cv);
  uv_close((uv_handle_t *)&d->async, on_async_closed);
}

static void copy_text(struct dev *d, const char *text, char *out, size_t len) {
  pthread_mutex_lock(&d->mu); /* dev__launch writes them under it */
  snprintf(out, len, "%s", text);
  pthread_mutex_unlock(&d->mu);
}
void dev_name(struct dev *d, char *out, size_t len) { copy_text(d, d->name, out, len); }
void dev_backend(struct dev *d, char *out, size_t len) { copy_text(d, d->backend, out, len); }
void dev_backend_note(struct dev *d, char *out, size_t len) {
  copy_text(d, d->backend_note, out, len);
}
unsigned dev_compute_units(const struct dev *d) { return atomic_load(&d->cus); }
unsigned dev_workers(const struct dev *d) { return atomic_load(&d->workers); }
