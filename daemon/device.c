/*
 * device.c: see device.h.
 *
 * Two queues under one mutex: `in` (loop -> device: new jobs), and `out`
 * (device -> loop: finished jobs), the latter announced by uv_async_send.
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
 * Kernel reload (dev_swap): the next megakernel is built elsewhere (a libuv
 * work thread, dev_build) while this one runs. The swap itself happens here:
 *   SWAP_REQUESTED: new jobs stay queued in `in`; running jobs get the grace
 *                   period to finish, then are cancelled;
 *   no runs left:   the old runtime closes, the new one launches (discovery);
 *                   if that fails, the old kernel set is built and launched
 *                   again; if even that fails the device is marked broken and
 *                   every job fails with a message saying so;
 *   then            queued jobs start again, each kernel resolved by name in
 *                   the new set (a kernel gone or with a new signature fails
 *                   that job), and on_swapped runs on the loop.
 *
 * Watchdog (docs/faults.md). A workgroup cannot be preempted: a kernel that
 * reaches no offer_kill or resizing barrier keeps its workgroups until it
 * returns by itself. What the device thread does about it:
 *   a task waiting for workgroups longer than [jobs] gather_budget_ms fails
 *     with COOP_EHUNG, its message naming the jobs that hold the workers
 *     (holders()), and is cancelled (it leaves the scheduler's queue);
 *   a job cancelled (by its client, watchdog_ms, a stop or a reload) whose
 *     tasks still run hang_ms later fails with COOP_EHUNG, and the device
 *     is restarted: its device process (devproc.h) is killed, every other
 *     job on it fails with COOP_ELOST, and a new one is built and launched.
 *     The same happens when the device process dies by itself (a crash in a
 *     kernel on PoCL, the driver). Jobs not yet on the device wait.
 *
 * Cooperative slots (docs/faults.md, "Isolation"). A running cooperative
 * kernel keeps at least one workgroup: the scheduler never asks for its
 * last. So cooperative jobs could pin every worker at M = 1 and starve
 * every non-cooperative task. They therefore run on at most coop_slots()
 * workers: the usable ones less [jobs] reserve_percent of them (rounded
 * up), at least one. Beyond that a cooperative job waits in `coop_wait`
 * and a waiting job starts only while its user runs fewer than an even
 * share of the slots (slots / users with cooperative jobs running or
 * waiting, at least 1). Of the jobs that may start, the one whose user runs
 * the fewest goes first, then the one whose user was served longest ago,
 * then the oldest: one user's queue cannot take every slot while another's
 * waits. Device thread only.
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
#include <time.h>
#include <unistd.h>

#include "coop_rt.h"
#include "devproc.h"
#include "fdio.h"
#include "log.h"

#define DEV_WAIT_NS 50000000L /* longest dp_wait: the watchdog's granularity */
#define DP_WAIT_MAX 128       /* tasks one dp_wait watches (DP_POLL_MAX) */
#define DEV_MAX_INFLIGHT 8    /* instances of one periodic job in flight at once */
#define DEV_VIEW_NS 10000000L /* the live view's refresh period (TOP) */

/* Device-thread bookkeeping of a job it runs. */
struct run {
  struct job *j;
  int64_t t0, next_release; /* CLOCK_MONOTONIC ns */
  uint32_t released;        /* instances released so far */
  coop_task_id task[DEV_MAX_INFLIGHT];
  uint32_t task_inst[DEV_MAX_INFLIGHT];
  uint8_t task_seen[DEV_MAX_INFLIGHT]; /* events already sent: 1 << COOP_EV_* */
  unsigned ninflight;
  int64_t started_ns;
  int64_t cancel_seen; /* when the device thread first saw j->cancel */
  int watchdog;        /* cancelled by watchdog_ms: its RESULT says so */
  struct run *next;
};

struct dev {
  struct dp *rt; /* the device process; NULL while it restarts or is broken */
  const struct config *cfg;
  const struct kset *ks; /* the kernels of rt: device thread (and dev_swap's caller) */
  uv_async_t async;
  void (*on_done)(struct job *, void *);
  void (*on_event)(const struct dev_event *, void *);
  struct dev_event *ev; /* under mu: events for the loop, in order */
  size_t nev, cap_ev;
  void (*on_stopped)(struct dev *, void *);
  int index; /* the device index it was opened with */
  void *user;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct job *in_head, *in_tail; /* linked through job->dev_next */
  struct job *out_head, *out_tail;
  int stopping, stopped;         /* under mu */
  int64_t stop_deadline;         /* under mu */
  int stop_now;                  /* device thread: snapshot of stopping */
  int64_t stop_at;               /* device thread: snapshot of stop_deadline */
  _Atomic unsigned cus, workers; /* set at each launch, read by the loop */
  struct run *runs;              /* device thread only */
  char name[256];
  char backend[16];
  char backend_note[1024]; /* which backend and why (coop_rt_backend_note) */
  /* kernel reload, under mu: requested by dev_swap, done by the device */
  struct dp *swap_rt;
  const struct kset *swap_ks;
  int swapping, swap_done, swap_err;
  int64_t swap_deadline;
  char swap_msg[2048];
  void (*on_swapped)(int err, const char *msg, void *user);
  int swap_now;                                /* device thread: snapshot of swapping */
  int64_t swap_at;                             /* device thread: snapshot of swap_deadline */
  char broken[512];                            /* device thread: why no runtime is running, or "" */
  struct dev_view view;                        /* under mu: the last snapshot (TOP) */
  struct dev_view next_view;                   /* device thread: the one being built */
  int64_t view_at;                             /* device thread: when it was last built */
  struct job *coop_wait_head, *coop_wait_tail; /* device thread: see the top */
  struct {
    uint32_t uid;
    uint64_t at; /* serve_seq when this user last started a cooperative job */
  } served[64];
  unsigned nserved;
  uint64_t serve_seq;
  /* watchdog */
  char restart_why[256]; /* device thread: set to restart the device process */
  uint64_t hung_job;     /* device thread: the job that caused it, or 0 */
  _Atomic uint32_t gather_timeouts, hung;
  char watch_last[COOP_WIRE_TEXT_MAX]; /* under mu */
  /* idle parking (see the top): device thread, parked mirrored for stats */
  int kick; /* eventfd: new work for the device thread; ends the child's dp_wait */
  int parked;
  int64_t idle_since; /* when the device last had a run or a waiting job */
  _Atomic uint32_t parked_pub, parks;
  _Atomic int64_t unpark_ns; /* the last relaunch's cost */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void job_free(struct job *j) {
  if (!j) return;
  for (unsigned i = 0; i < j->nargs; i++) {
    if (j->args[i].fd >= 0) close(j->args[i].fd);
    free(j->args[i].data);
  }
  free(j->inst);
  free(j);
}

/* ---- loop side ---- */

static void on_async(uv_async_t *a) {
  struct dev *d = a->data;
  pthread_mutex_lock(&d->mu);
  /* events and finished jobs taken together: a job's events were queued
   * before it, so they are all here when it is, and go out first */
  struct dev_event *ev = d->ev;
  size_t nev = d->nev;
  d->ev = NULL;
  d->nev = d->cap_ev = 0;
  struct job *j = d->out_head;
  d->out_head = d->out_tail = NULL;
  int stopped = d->stopped;
  int swapped = d->swap_done, swap_err = d->swap_err;
  char swap_msg[sizeof d->swap_msg];
  memcpy(swap_msg, d->swap_msg, sizeof swap_msg);
  d->swap_done = 0;
  pthread_mutex_unlock(&d->mu);
  if (swapped && d->on_swapped) d->on_swapped(swap_err, swap_msg, d->user);
  for (size_t i = 0; i < nev; i++) d->on_event(&ev[i], d->user);
  free(ev);
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    d->on_done(j, d->user);
    j = n;
  }
  if (stopped && d->on_stopped) {
    void (*cb)(struct dev *, void *) = d->on_stopped;
    d->on_stopped = NULL;
    cb(d, d->user);
  }
}

/* Wakes the device thread wherever it waits: on the condition variable
 * (nothing in flight) or in the device process's dp_wait. */
static void kick(struct dev *d) {
  uint64_t one = 1;
  ssize_t n = write(d->kick, &one, sizeof one); /* EAGAIN: already pending */
  (void)n;
}

void dev_submit(struct dev *d, struct job *j) {
  atomic_store(&j->state, COOP_JOB_QUEUED);
  pthread_mutex_lock(&d->mu);
  j->dev_next = NULL;
  if (d->in_tail)
    d->in_tail->dev_next = j;
  else
    d->in_head = j;
  d->in_tail = j;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  kick(d);
}

void dev_cancel(struct dev *d, struct job *j) {
  atomic_store(&j->cancel, 1);
  pthread_mutex_lock(&d->mu);
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  kick(d);
}

void dev_stop(struct dev *d, unsigned grace_ms, void (*on_stopped)(struct dev *, void *)) {
  pthread_mutex_lock(&d->mu);
  d->on_stopped = on_stopped;
  d->stopping = 1;
  d->stop_deadline = now_ns() + (int64_t)grace_ms * 1000000;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  kick(d);
}

/* ---- device side ---- */

static void hand_back(struct dev *d, struct job *j) {
  /* the client's memfds are written back (or not wanted): a finished job
   * kept for a later WAIT (DETACHED) must not hold them open */
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].fd >= 0) {
      close(j->args[i].fd);
      j->args[i].fd = -1;
    }
  pthread_mutex_lock(&d->mu);
  j->dev_next = NULL;
  if (d->out_tail)
    d->out_tail->dev_next = j;
  else
    d->out_head = j;
  d->out_tail = j;
  pthread_mutex_unlock(&d->mu);
  uv_async_send(&d->async);
}

static void fail(struct job *j, int code, const char *fmt, const char *what) {
  j->error = code;
  snprintf(j->message, sizeof j->message, fmt, what);
  atomic_store(&j->state, COOP_JOB_FAILED);
}

/* A task whose bounds-checked views caught an access outside its buffers
 * (device/api.h): nothing outside the job was touched, but its output is
 * garbage, so the job fails with EFAULT, naming the argument. */
static void fault(struct dev *d, struct job *j, unsigned tag) {
  if (j->error == COOP_EFAULT) return;
  char what[64];
  const struct kdef *k = kset_find(d->ks, j->kernel);
  if (tag == COOP_RT_FAULT_SCRATCH)
    snprintf(what, sizeof what, "its workgroup scratch memory");
  else if (k && tag - 1 < k->nargs && k->argnames[tag - 1][0])
    snprintf(what, sizeof what, "buffer argument %u (%s)", tag - 1, k->argnames[tag - 1]);
  else
    snprintf(what, sizeof what, "buffer argument %u", tag - 1);
  log_warn("job %llu (%s, uid %u): out-of-bounds access to %s stopped", (unsigned long long)j->id,
           j->kernel, j->uid, what);
  char msg[sizeof j->message];
  snprintf(msg, sizeof msg,
           "kernel %s indexed %s out of bounds (the access was kept inside the job's buffers; "
           "check the arguments against the data)",
           j->kernel, what);
  fail(j, COOP_EFAULT, "%s", msg);
}

/* A memfd of n zero bytes, for the device process to write results into.
 * -1 on failure. */
static int memfd_sized(uint64_t n) {
  int fd = memfd_create("coopd-results", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)n)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The job's buffers as the device process moves them (dp_buf), in argument
 * order: a client's memfd where it sent one, else `inl`, one memfd for all
 * the inline bytes (IN data at staging, room for OUT data at unstaging),
 * each buffer at its offset there. Returns how many; *inl_len their total. */
static unsigned job_bufs(struct job *j, struct dp_buf *b, int inl, int out, uint64_t *inl_len) {
  unsigned n = 0;
  *inl_len = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF) continue;
    struct dp_buf *x = &b[n++];
    x->size = a->size;
    x->arg = a->dev ? a->dev - 1 : 0;
    x->in = !out && (a->dir & COOP_BUF_IN);
    x->out = out && (a->dir & COOP_BUF_OUT);
    x->fd = a->fd >= 0 ? a->fd : inl;
    x->off = 0;
    if (a->fd < 0 && (x->in || x->out)) {
      x->off = *inl_len;
      *inl_len += a->size;
    }
  }
  return n;
}

/* Arena copies of the job's buffers, IN data copied in by the device
 * process in one request. 0 or -1 (failed). */
static int stage_in(struct dev *d, struct job *j) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  uint64_t inl_len;
  unsigned n = job_bufs(j, b, -1, 0, &inl_len);
  if (!n) return 0;
  int inl = -1;
  if (inl_len) { /* the inline IN bytes, one after another */
    inl = memfd_create("coopd-inline", MFD_CLOEXEC);
    int bad = inl < 0;
    uint64_t at = 0;
    for (unsigned i = 0; !bad && i < j->nargs; i++) {
      const struct job_arg *a = &j->args[i];
      if (a->type != COOP_ARG_BUF || a->fd >= 0 || !(a->dir & COOP_BUF_IN)) continue;
      bad = fdio_pwrite(inl, a->data, a->size, at);
      at += a->size;
    }
    if (bad) {
      if (inl >= 0) close(inl);
      fail(j, COOP_ENOMEM, "%s", "could not stage the inline buffers");
      return -1;
    }
    n = job_bufs(j, b, inl, 0, &inl_len);
  }
  int e = dp_stage(d->rt, b, n);
  if (inl >= 0) close(inl);
  if (e == COOP_ENOMEM) {
    fail(j, COOP_ENOMEM, "no room for the buffers in the device arena (%s)",
         "raise [device] arena_mb");
    return -1;
  }
  if (e) {
    fail(j, e, "%s",
         e == COOP_ELOST ? "the device process died while the job was staged"
                         : "could not read a buffer's descriptor to its declared size");
    return -1;
  }
  for (unsigned i = 0, k = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF) j->args[i].dev = b[k++].arg + 1;
  return 0;
}

/* OUT data back (when `out`: into the client's memfd, or into a[i].data
 * for RESULT) and every arena copy freed, in one request. A guard zone
 * found overwritten (arena.c) means the kernel wrote outside this job's
 * buffers: the job fails with EFAULT and the log names it (the views keep
 * shipped kernels from ever getting here). */
static void unstage(struct dev *d, struct job *j, int out) {
  struct dp_buf b[COOP_WIRE_MAX_ARGS];
  uint64_t inl_len;
  unsigned n = job_bufs(j, b, -1, out, &inl_len);
  int any = 0;
  for (unsigned i = 0; i < j->nargs; i++) any |= j->args[i].dev != 0;
  if (!n || !any || !d->rt) {
    for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
    return;
  }
  int inl = inl_len ? memfd_sized(inl_len) : -1;
  if (inl_len && inl < 0) {
    out = 0;
    if (j->error == 0) fail(j, COOP_ENOMEM, "%s", "could not copy a result back");
  }
  n = job_bufs(j, b, inl, out, &inl_len);
  int breach = -1;
  int e = dp_unstage(d->rt, b, n, &breach);
  for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0;
  if (e && j->error == 0)
    fail(j, e == COOP_ELOST ? e : COOP_EIO, "%s", "could not write a result back");
  for (unsigned i = 0, k = 0; e == 0 && inl >= 0 && i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->type != COOP_ARG_BUF) continue;
    const struct dp_buf *x = &b[k++];
    if (!x->out || a->fd >= 0) continue;
    free(a->data);
    a->data = malloc(a->size);
    if (!a->data || fdio_pread(inl, a->data, a->size, x->off)) {
      free(a->data);
      a->data = NULL;
      if (j->error == 0) fail(j, COOP_ENOMEM, "%s", "could not copy a result back");
    }
  }
  if (inl >= 0) close(inl);
  if (breach < 0) return;
  unsigned argi = 0;
  for (unsigned i = 0, k = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF && k++ == (unsigned)breach) argi = i;
  log_error("job %llu (%s, uid %u): the guard zone of buffer argument %u was overwritten",
            (unsigned long long)j->id, j->kernel, j->uid, argi);
  if (j->error == COOP_EFAULT) return; /* the views' message says more */
  char msg[sizeof j->message];
  snprintf(msg, sizeof msg,
           "kernel %s wrote outside buffer argument %u (its guard zone was overwritten); the "
           "result is not to be trusted",
           j->kernel, argi);
  fail(j, COOP_EFAULT, "%s", msg);
}

static int submit_instance(struct dev *d, struct run *r) {
  struct job *j = r->j;
  struct coop_rt_task_desc td = {.kernel = j->kernel_index,
                                 .groups = j->groups,
                                 .cooperative = !!(j->flags & COOP_SUBMIT_COOPERATIVE),
                                 .query_barrier = !!(j->flags & COOP_SUBMIT_QUERY_BARRIER),
                                 .nargs = j->nargs};
  for (unsigned i = 0; i < j->nargs; i++) {
    int buf = j->args[i].type == COOP_ARG_BUF;
    td.args[i] = buf ? j->args[i].dev - 1 : j->args[i].bits;
    /* The views' bound: the client's declared size, never a scalar. A
     * scalar's length is 1 so that the runtime does not look it up. */
    td.lens[i] = buf ? j->args[i].size : 1;
  }
  /* due: its deadline after release, else (periodic) its next release */
  uint64_t due_us = j->deadline_us ? j->deadline_us : j->period_us;
  if (due_us) td.deadline_ns = now_ns() + (int64_t)due_us * 1000;
  coop_task_id id;
  int e = dp_submit(d->rt, &td, &id);
  if (e) return e;
  r->task[r->ninflight] = id;
  r->task_inst[r->ninflight] = r->released++;
  r->task_seen[r->ninflight] = 0;
  r->ninflight++;
  return 0;
}

static int periodic(const struct job *j) { return j->period_us != 0; }

static void push_event(struct dev *d, const struct job *j, uint32_t inst, uint8_t kind, int64_t t,
                       int64_t gather_ns) {
  pthread_mutex_lock(&d->mu);
  if (d->nev == d->cap_ev) {
    size_t cap = d->cap_ev ? d->cap_ev * 2 : 16;
    struct dev_event *p = realloc(d->ev, cap * sizeof *p);
    if (!p) { /* events are best effort: the RESULT still has every time */
      pthread_mutex_unlock(&d->mu);
      return;
    }
    d->ev = p;
    d->cap_ev = cap;
  }
  d->ev[d->nev++] = (struct dev_event){j->id, j->uid, inst, kind, t, gather_ns};
  pthread_mutex_unlock(&d->mu);
  uv_async_send(&d->async);
}

/* RELEASED and GATHERED as soon as the task record shows them (or, for a
 * task that finished between two polls, just before its end). */
static void live_events(struct dev *d, struct run *r, unsigned slot,
                        const struct coop_rt_task_info *ti) {
  uint8_t *seen = &r->task_seen[slot];
  if (ti->t_released && !(*seen & (1u << COOP_EV_RELEASED))) {
    *seen |= 1u << COOP_EV_RELEASED;
    push_event(d, r->j, r->task_inst[slot], COOP_EV_RELEASED, ti->t_released, -1);
  }
  if (ti->t_gathered && !(*seen & (1u << COOP_EV_GATHERED))) {
    *seen |= 1u << COOP_EV_GATHERED;
    push_event(d, r->j, r->task_inst[slot], COOP_EV_GATHERED, ti->t_gathered, ti->gather_ns);
  }
}

/* Whether a periodic job has released everything it will. */
static int releases_done(const struct run *r) {
  const struct job *j = r->j;
  if (atomic_load(&j->cancel)) return 1;
  if (!periodic(j)) return r->released == 1;
  if (j->count && r->released >= j->count) return 1;
  if (j->duration_ms &&
      (int64_t)r->released * j->period_us * 1000 >= (int64_t)j->duration_ms * 1000000)
    return 1;
  return 0;
}

/* The job's kernel in the running set, by name: after a reload the index
 * the loop computed may name another kernel, or none. 0 or -1 (failed). */
static int resolve(struct dev *d, struct job *j) {
  if (d->broken[0]) {
    fail(j, COOP_EFAILED, "the device is unavailable: %.200s", d->broken);
    return -1;
  }
  const struct kdef *k = kset_find(d->ks, j->kernel);
  if (!k) {
    fail(j, COOP_ENOKERNEL, "kernel %s is gone: the daemon reloaded its kernels", j->kernel);
    return -1;
  }
  int same = k->nargs == j->nargs && !!k->cooperative == !!(j->flags & COOP_SUBMIT_COOPERATIVE);
  for (unsigned i = 0; same && i < j->nargs; i++) same = k->types[i] == j->args[i].type;
  if (!same) {
    fail(j, COOP_EARGS, "kernel %s changed its signature in a reload", j->kernel);
    return -1;
  }
  uint64_t bits[COOP_WIRE_MAX_ARGS] = {0}, lens[COOP_WIRE_MAX_ARGS] = {0};
  for (unsigned i = 0; i < j->nargs; i++) {
    bits[i] = j->args[i].bits;
    lens[i] = j->args[i].type == COOP_ARG_BUF ? j->args[i].size : 0;
  }
  char why[256];
  if (kdef_admit(k, bits, lens, why, sizeof why)) { /* a reload may add rules */
    fail(j, COOP_EARGS, "%s", why);
    return -1;
  }
  if (!dev_fits(d, j->groups, k->cooperative)) { /* the relaunch found fewer workers */
    j->error = COOP_EINVAL;
    snprintf(j->message, sizeof j->message,
             "asks for %u workgroups, but the device has %u workers since its restart", j->groups,
             atomic_load(&d->workers));
    atomic_store(&j->state, COOP_JOB_FAILED);
    return -1;
  }
  j->kernel_index = (int)(k - d->ks->k); /* registered in kset order */
  return 0;
}

static int is_coop(const struct job *j) { return !!(j->flags & COOP_SUBMIT_COOPERATIVE); }

/* Workers cooperative jobs may run on together (see the top). */
static unsigned coop_slots(const struct dev *d) {
  unsigned usable = atomic_load(&d->workers);
  unsigned reserve = (usable * d->cfg->reserve_percent + 99) / 100;
  return usable > reserve ? usable - reserve : 1;
}

static unsigned coop_running(const struct dev *d, const uint32_t *uid) {
  unsigned n = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    n += is_coop(r->j) && (!uid || r->j->uid == *uid);
  return n;
}

static void add_user(uint32_t *users, unsigned *nu, uint32_t uid) {
  unsigned i = 0;
  while (i < *nu && users[i] != uid) i++;
  if (i == *nu && *nu < 64) users[(*nu)++] = uid;
}

/* An even share of the slots among the users with cooperative jobs. */
static unsigned coop_share(const struct dev *d) {
  uint32_t users[64];
  unsigned nu = 0;
  for (const struct run *r = d->runs; r; r = r->next)
    if (is_coop(r->j)) add_user(users, &nu, r->j->uid);
  for (const struct job *j = d->coop_wait_head; j; j = j->dev_next) add_user(users, &nu, j->uid);
  unsigned share = nu ? coop_slots(d) / nu : coop_slots(d);
  return share ? share : 1;
}

static void start_now(struct dev *d, struct job *j);

/* When uid last started a cooperative job here (0: never), and noting that
 * it does now: ties between users go to the one served longest ago. */
static uint64_t last_served(const struct dev *d, uint32_t uid) {
  for (unsigned i = 0; i < d->nserved; i++)
    if (d->served[i].uid == uid) return d->served[i].at;
  return 0;
}

static void note_served(struct dev *d, uint32_t uid) {
  unsigned i = 0, oldest = 0;
  while (i < d->nserved && d->served[i].uid != uid) {
    if (d->served[i].at < d->served[oldest].at) oldest = i;
    i++;
  }
  if (i == d->nserved) i = d->nserved < 64 ? d->nserved++ : oldest; /* forget the oldest */
  d->served[i].uid = uid;
  d->served[i].at = ++d->serve_seq;
}

static void start_job(struct dev *d, struct job *j) {
  if (is_coop(j)) { /* through the queue: it decides in FIFO and fair order */
    if (d->coop_wait_tail)
      d->coop_wait_tail->dev_next = j;
    else
      d->coop_wait_head = j;
    d->coop_wait_tail = j;
    j->dev_next = NULL;
    return;
  }
  start_now(d, j);
}

/* Starts the waiting cooperative jobs that may start; hands back the ones
 * cancelled (or all, at a stop) while waiting. */
static void pump_coop_wait(struct dev *d) {
  for (;;) {
    struct job **best = NULL;
    unsigned share = coop_share(d), running = coop_running(d, NULL), best_n = 0;
    uint64_t best_at = 0;
    for (struct job **p = &d->coop_wait_head; *p; p = &(*p)->dev_next) {
      struct job *j = *p;
      if (d->stop_now || atomic_load(&j->cancel)) {
        best = p;
        break;
      }
      if (d->swap_now || running >= coop_slots(d)) continue;
      unsigned mine = coop_running(d, &j->uid);
      uint64_t at = last_served(d, j->uid);
      if (mine < share && (!best || mine < best_n || (mine == best_n && at < best_at)))
        best = p, best_n = mine, best_at = at;
    }
    if (!best) return;
    struct job *j = *best;
    *best = j->dev_next;
    if (d->coop_wait_tail == j) {
      d->coop_wait_tail = NULL;
      for (struct job *q = d->coop_wait_head; q; q = q->dev_next) d->coop_wait_tail = q;
    }
    j->dev_next = NULL;
    if (d->stop_now || atomic_load(&j->cancel)) {
      atomic_store(&j->state, COOP_JOB_CANCELLED);
      j->error = COOP_ECANCELED;
      snprintf(j->message, sizeof j->message, "%s",
               d->stop_now ? "cancelled: the daemon is shutting down"
                           : "cancelled while waiting for a cooperative slot");
      hand_back(d, j);
    } else {
      note_served(d, j->uid);
      start_now(d, j);
    }
  }
}

static void start_now(struct dev *d, struct job *j) {
  if (resolve(d, j)) {
    hand_back(d, j);
    return;
  }
  struct run *r = calloc(1, sizeof *r);
  if (!r) {
    fail(j, COOP_ENOMEM, "%s", "out of memory");
    hand_back(d, j);
    return;
  }
  r->j = j;
  r->t0 = r->next_release = now_ns();
  j->m_min = UINT32_MAX;
  j->t.gather_ns = j->t.exec_ns = -1;
  if (periodic(j)) {
    uint64_t n = j->count ? j->count : (uint64_t)j->duration_ms * 1000 / j->period_us + 1;
    j->inst = calloc(n, sizeof *j->inst);
    if (!j->inst) {
      fail(j, COOP_ENOMEM, "%s", "out of memory");
      free(r);
      hand_back(d, j);
      return;
    }
  }
  if (stage_in(d, j)) {
    free(r);
    hand_back(d, j);
    return;
  }
  r->next = d->runs;
  d->runs = r;
}

/* A task's times in the order the host saw them. The device stamps
 * released, gathered, started and finished with its own clock, mapped to
 * the host's by a fit (runtime.c, "the device clock"); submitted and `seen`
 * (now, after the task was seen final) are the host's own. However far a
 * fit is off, submitted <= released <= gathered <= started <= finished <=
 * seen holds, so queued, execution and total stay inside the host's
 * interval (a loaded start once made a 12 ms job 1093 ms long; issue 20).
 * Times not stamped (0) stay 0. */
static void host_order(struct coop_wire_times *t, int64_t seen) {
  int64_t *v[] = {&t->released, &t->gathered, &t->started, &t->finished};
  int64_t lo = t->submitted;
  for (unsigned i = 0; i < 4; i++) {
    if (!*v[i]) continue;
    if (*v[i] < lo) *v[i] = lo;
    if (*v[i] > seen) *v[i] = seen;
    lo = *v[i];
  }
}

/* A task that reached a final state: its times into the job. */
static void record(struct dev *d, struct run *r, unsigned slot) {
  struct job *j = r->j;
  struct coop_rt_task_info ti;
  coop_task_id id = r->task[slot];
  dp_task_info(d->rt, id, &ti);
  dp_task_release(d->rt, id);
  live_events(d, r, slot, &ti);
  struct coop_wire_times t = {.gather_ns = -1, .exec_ns = -1};
#define FROM_INFO(name) t.name = ti.t_##name;
  COOP_STAMPS_MAP(FROM_INFO) /* coop_schema.h */
#undef FROM_INFO
  uint8_t st = ti.state == COOP_TASK_DONE        ? COOP_JOB_DONE
               : ti.state == COOP_TASK_CANCELLED ? COOP_JOB_CANCELLED
                                                 : COOP_JOB_REFUSED;
  host_order(&t, now_ns());
  if (st == COOP_JOB_DONE || (st == COOP_JOB_CANCELLED && ti.t_gathered)) {
    t.gather_ns = ti.gather_ns < 0 ? 0 : ti.gather_ns;
    if (t.gather_ns > t.finished - t.released) t.gather_ns = t.finished - t.released;
    t.exec_ns = t.started ? t.finished - t.started : 0;
  }
  if (ti.fault) fault(d, j, ti.fault);
  if (st == COOP_JOB_REFUSED && j->error == 0) {
    j->error = COOP_EREFUSED;
    snprintf(j->message, sizeof j->message, "refused by the scheduler (reason %d)", ti.refusal);
  }
  if (st == COOP_JOB_DONE && j->deadline_us &&
      ti.t_finished - ti.t_released > (int64_t)j->deadline_us * 1000) {
    j->misses++;
    atomic_store(&j->misses_so_far, j->misses);
  }
  j->t = t; /* the job's times: its last instance's (periodic: see inst[]) */
#define MERGE(kind, name, rule) COOP_MERGE_##rule(j->name, ti.name);
  COOP_COUNTERS_MAP(MERGE)
#undef MERGE
  if (periodic(j)) {
    struct coop_wire_inst *in = &j->inst[r->task_inst[slot]];
    in->state = st;
    in->t = t;
    if (r->task_inst[slot] + 1 > j->ninst) j->ninst = r->task_inst[slot] + 1;
  } else if (atomic_load(&j->state) != COOP_JOB_FAILED) { /* keep a failure's reason */
    atomic_store(&j->state, st);
  }
  atomic_fetch_add(&j->instances_done, 1);
  r->ninflight--;
  r->task[slot] = r->task[r->ninflight];
  r->task_inst[slot] = r->task_inst[r->ninflight];
  r->task_seen[slot] = r->task_seen[r->ninflight];
}

static void finish_job(struct dev *d, struct run *r) {
  struct job *j = r->j;
  if (j->m_min == UINT32_MAX) j->m_min = 0;
  uint8_t now = atomic_load(&j->state);
  if (now == COOP_JOB_FAILED) {
    /* keep the failure */
  } else if (r->released == 0 || (!periodic(j) && now < COOP_JOB_DONE)) {
    /* never released, or lost while still queued */
    atomic_store(&j->state, COOP_JOB_CANCELLED);
  } else if (periodic(j)) {
    uint8_t st = COOP_JOB_DONE;
    for (uint32_t i = 0; i < j->ninst; i++)
      if (j->inst[i].state != COOP_JOB_DONE) st = j->inst[i].state;
    if (atomic_load(&j->cancel)) st = COOP_JOB_CANCELLED;
    atomic_store(&j->state, st);
    if (j->ninst) j->t.submitted = j->inst[0].t.submitted;
  }
  if (atomic_load(&j->state) == COOP_JOB_CANCELLED && j->error == 0) {
    j->error = COOP_ECANCELED;
    if (r->watchdog) /* else its client could not tell this from its own CANCEL */
      snprintf(j->message, sizeof j->message,
               "cancelled by the watchdog: it ran longer than [jobs] watchdog_ms = %u ms",
               d->cfg->watchdog_ms);
    else
      snprintf(j->message, sizeof j->message, "%s",
               d->stop_now   ? "cancelled: the daemon is shutting down"
               : d->swap_now ? "cancelled: the daemon reloaded its kernels (grace period over)"
                             : "cancelled");
  }
  /* A job the views stopped still gets its own output back: it can only
   * hold what the job read from its own buffers and the sink. */
  unstage(d, j, atomic_load(&j->state) == COOP_JOB_DONE || j->error == COOP_EFAULT);
  hand_back(d, j);
}

/* ---- watchdog (see the top of this file) ---- */

static void watch_event(struct dev *d, const char *fmt, ...) {
  char b[COOP_WIRE_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  log_warn("watchdog: %s", b);
  pthread_mutex_lock(&d->mu);
  memcpy(d->watch_last, b, sizeof b);
  pthread_mutex_unlock(&d->mu);
}

/* Workers owned now by any of tasks[0..n), from the scheduler's view. */
static unsigned count_owned(const coop_task_id *owner, unsigned nwg, const coop_task_id *tasks,
                            unsigned n) {
  unsigned c = 0;
  for (unsigned i = 0; i < nwg; i++)
    for (unsigned t = 0; t < n; t++) c += owner[i] && owner[i] == tasks[t];
  return c;
}

/* Who holds the workers, in words, for a task that waited too long:
 * cooperative jobs first (they were asked to give workers back and did
 * not reach offer_kill), then non-cooperative tasks (which keep theirs
 * until they end). */
static void holders(struct dev *d, char *out, size_t len) {
  static coop_task_id owner[COOP_WIRE_MAX_WG];
  static uint8_t resv[COOP_WIRE_MAX_WG];
  int n = dp_view(d->rt, owner, resv, COOP_WIRE_MAX_WG);
  unsigned nwg = n > 0 ? (unsigned)n : 0;
  size_t at = 0;
  out[0] = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (struct run *r = d->runs; r; r = r->next) {
      int coop = !!(r->j->flags & COOP_SUBMIT_COOPERATIVE);
      unsigned c = count_owned(owner, nwg, r->task, r->ninflight);
      if (!c || coop != (pass == 0) || at >= len) continue;
      /* A cooperative kernel holding more than one workgroup per task was
       * asked for them and reached no offer_kill or resizing barrier; at
       * one it is at its minimum, which the scheduler never takes. */
      const char *why = c > r->ninflight ? "cooperative, did not offer kills when asked"
                                         : "cooperative, at its last workgroup";
      at += (size_t)snprintf(out + at, len - at, "%sjob %llu (%s, %s) %u", at ? "; " : "",
                             (unsigned long long)r->j->id, r->j->kernel,
                             coop ? why : "non-cooperative, still running", c);
    }
  }
  if (!out[0]) snprintf(out, len, "no job (the scheduler is serving earlier tasks)");
}

/* A task of r waited gather_budget_ms for its workgroups: the job fails. */
static void gather_timeout(struct dev *d, struct run *r, int64_t waited_ns) {
  struct job *j = r->j;
  char who[200];
  holders(d, who, sizeof who);
  j->error = COOP_EHUNG;
  snprintf(j->message, sizeof j->message, "waited %lld ms for %u workgroups; held by %s",
           (long long)(waited_ns / 1000000), j->groups, who);
  atomic_store(&j->state, COOP_JOB_FAILED);
  atomic_store(&j->cancel, 1);
  atomic_fetch_add(&d->gather_timeouts, 1);
  watch_event(d, "job %llu (%s) failed: %s", (unsigned long long)j->id, j->kernel, j->message);
}

/* r was cancelled hang_ms ago and still has tasks on the device: no way
 * to take its workgroups back but to end the device process. Its job fails
 * with EHUNG; dev_main then restarts the device (restart_device). */
static void declare_hung(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  atomic_fetch_add(&d->hung, 1);
  if (atomic_load(&j->state) != COOP_JOB_FAILED) {
    j->error = COOP_EHUNG;
    snprintf(j->message, sizeof j->message,
             "kernel %s still ran %lld ms after its cancellation: it reached no offer_kill or "
             "resizing barrier; coopd restarted the device to take its workgroups back",
             j->kernel, (long long)((now - r->cancel_seen) / 1000000));
    atomic_store(&j->state, COOP_JOB_FAILED);
  }
  if (!d->restart_why[0]) {
    snprintf(d->restart_why, sizeof d->restart_why,
             "job %llu (%s) still ran %u ms after its cancellation", (unsigned long long)j->id,
             j->kernel, d->cfg->hang_ms);
    d->hung_job = j->id;
  }
}

/* The watchdog's look at one run. */
static void watch_run(struct dev *d, struct run *r, int64_t now) {
  struct job *j = r->j;
  if (atomic_load(&j->cancel)) {
    if (!r->cancel_seen) r->cancel_seen = now;
    if (d->cfg->hang_ms && r->ninflight &&
        now - r->cancel_seen > (int64_t)d->cfg->hang_ms * 1000000)
      declare_hung(d, r, now);
    return;
  }
  if (!d->cfg->gather_budget_ms) return;
  for (unsigned i = 0; i < r->ninflight; i++) {
    struct coop_rt_task_info ti;
    if (dp_task_info(d->rt, r->task[i], &ti) == 0 && ti.state == COOP_TASK_PENDING &&
        now - ti.t_submitted > (int64_t)d->cfg->gather_budget_ms * 1000000) {
      gather_timeout(d, r, now - ti.t_submitted);
      break;
    }
  }
}

void dev_watch_get(struct dev *d, struct dev_watch *w) {
  w->gather_timeouts = atomic_load(&d->gather_timeouts);
  w->hung = atomic_load(&d->hung);
  w->lost_workers = d->rt ? 0 : atomic_load(&d->workers); /* while it restarts */
  pthread_mutex_lock(&d->mu);
  memcpy(w->last, d->watch_last, sizeof w->last);
  pthread_mutex_unlock(&d->mu);
}

int dev_fits(const struct dev *d, unsigned groups, int cooperative) {
  unsigned usable = atomic_load(&d->workers);
  return usable > 0 && (cooperative || groups <= usable);
}

/* One pass over a run: cancel, watchdog, release, poll. 1 when finished. */
static int step_run(struct dev *d, struct run *r, int64_t now, int64_t *wake) {
  struct job *j = r->j;
  if (d->stop_now && now >= d->stop_at) atomic_store(&j->cancel, 1);
  if (d->swap_now && now >= d->swap_at) atomic_store(&j->cancel, 1);
  if (d->cfg->watchdog_ms && r->started_ns &&
      now - r->started_ns > (int64_t)d->cfg->watchdog_ms * 1000000 && !atomic_load(&j->cancel)) {
    log_warn("job %llu (%s) ran past the watchdog budget of %u ms: cancelling",
             (unsigned long long)j->id, j->kernel, d->cfg->watchdog_ms);
    atomic_store(&j->cancel, 1);
    r->watchdog = 1;
  }
  if (atomic_load(&j->cancel))
    for (unsigned i = 0; i < r->ninflight; i++) dp_cancel(d->rt, r->task[i]);
  while (!releases_done(r) && now >= r->next_release && r->ninflight < DEV_MAX_INFLIGHT) {
    int e = submit_instance(d, r);
    if (e == COOP_EBUSY) break; /* no free slot: try on the next pass */
    if (e) {
      fail(j, e, "could not submit: %s", coop_strerror(e));
      atomic_store(&j->cancel, 1);
      break;
    }
    atomic_store(&j->state, COOP_JOB_RUNNING);
    if (!r->started_ns) r->started_ns = now;
    r->next_release = r->t0 + (int64_t)r->released * j->period_us * 1000;
  }
  if (!releases_done(r) && r->next_release < *wake) *wake = r->next_release;
  for (unsigned i = 0; i < r->ninflight;) {
    struct coop_rt_task_info ti;
    if (dp_task_info(d->rt, r->task[i], &ti) == 0 && ti.state >= COOP_TASK_DONE) {
      record(d, r, i); /* moves the last slot into i */
    } else {
      live_events(d, r, i, &ti);
      i++;
    }
  }
  watch_run(d, r, now); /* after the poll: only tasks still on the device */
  return releases_done(r) && r->ninflight == 0;
}

static void take_new(struct dev *d) {
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
  while (j) {
    struct job *n = j->dev_next;
    j->dev_next = NULL;
    if (d->stop_now || atomic_load(&j->cancel)) {
      atomic_store(&j->state, COOP_JOB_CANCELLED);
      j->error = COOP_ECANCELED;
      snprintf(j->message, sizeof j->message, "%s",
               d->stop_now ? "cancelled: the daemon is shutting down" : "cancelled");
      hand_back(d, j);
    } else {
      start_job(d, j);
    }
    j = n;
  }
}

static void wait_for_work(struct dev *d, int64_t wake) {
  pthread_mutex_lock(&d->mu);
  int takes = d->in_head && !d->swapping;
  if (!takes && !(d->stopping && !d->runs) && !(d->swapping && !d->runs)) {
    if (!d->runs && !d->in_head && !d->coop_wait_head && wake == INT64_MAX) {
      pthread_cond_wait(&d->cv, &d->mu);
    } else {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
      if (wake > now) {
        int64_t t = wake;
        ts.tv_sec = t / 1000000000;
        ts.tv_nsec = t % 1000000000;
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
      }
    }
  }
  pthread_mutex_unlock(&d->mu);
}

/* The live view from the runtime's: workgroup owners and each running
 * task's M, mapped to jobs through the runs' task ids. */
static void build_view(struct dev *d, int64_t now) {
  if (d->runs && now - d->view_at < DEV_VIEW_NS) return; /* idle: always fresh */
  d->view_at = now;
  struct dev_view *v = &d->next_view;
  static coop_task_id owner[COOP_WIRE_MAX_WG];
  v->nwg = 0;
  v->njobs = 0;
  if (d->rt) {
    int n = dp_view(d->rt, owner, v->wg_reserved, COOP_WIRE_MAX_WG);
    v->nwg = n > 0 ? (unsigned)n : 0;
  }
  for (unsigned i = 0; i < v->nwg; i++) {
    v->wg_job[i] = 0;
    v->wg_uid[i] = 0;
  }
  for (struct run *r = d->runs; r; r = r->next) {
    struct job *j = r->j;
    struct dev_view_job *vj = v->njobs < DEV_VIEW_JOBS ? &v->jobs[v->njobs] : NULL;
    if (vj && r->ninflight) {
      memset(vj, 0, sizeof *vj);
      vj->job = j->id;
      vj->uid = j->uid;
      snprintf(vj->kernel, sizeof vj->kernel, "%s", j->kernel);
      vj->cooperative = !!(j->flags & COOP_SUBMIT_COOPERATIVE);
      vj->groups = j->groups;
      v->njobs++;
    } else {
      vj = NULL;
    }
    for (unsigned t = 0; t < r->ninflight; t++) {
      struct coop_rt_live l;
      if (vj && dp_task_live(d->rt, r->task[t], &l) == 0) {
        vj->m += l.m; /* a periodic job: its instances together */
        vj->workers += l.workers;
        vj->kills += l.kills;
        vj->forks += l.forks;
      }
      for (unsigned i = 0; i < v->nwg; i++)
        if (owner[i] == r->task[t]) {
          v->wg_job[i] = j->id;
          v->wg_uid[i] = j->uid;
        }
    }
  }
  pthread_mutex_lock(&d->mu);
  d->view.nwg = v->nwg;
  memcpy(d->view.wg_job, v->wg_job, v->nwg * sizeof v->wg_job[0]);
  memcpy(d->view.wg_uid, v->wg_uid, v->nwg * sizeof v->wg_uid[0]);
  memcpy(d->view.wg_reserved, v->wg_reserved, v->nwg);
  d->view.njobs = v->njobs;
  memcpy(d->view.jobs, v->jobs, v->njobs * sizeof v->jobs[0]);
  pthread_mutex_unlock(&d->mu);
}

void dev_view_get(struct dev *d, struct dev_view *v) {
  pthread_mutex_lock(&d->mu);
  v->nwg = d->view.nwg;
  memcpy(v->wg_job, d->view.wg_job, v->nwg * sizeof v->wg_job[0]);
  memcpy(v->wg_uid, d->view.wg_uid, v->nwg * sizeof v->wg_uid[0]);
  memcpy(v->wg_reserved, d->view.wg_reserved, v->nwg);
  v->njobs = d->view.njobs;
  memcpy(v->jobs, d->view.jobs, v->njobs * sizeof v->jobs[0]);
  pthread_mutex_unlock(&d->mu);
}

static void do_swap(struct dev *d);

/* At a stop: the device process closes the runtime (the megakernel
 * exits); one whose kernel never returns is killed after DP_CLOSE_MS. */
static void close_runtime(struct dev *d) {
  if (d->rt && dp_close(d->rt, DP_CLOSE_MS))
    log_warn("the megakernel did not exit within %u ms: its device process was killed",
             DP_CLOSE_MS);
  d->rt = NULL;
}

static int launch(struct dev *d, struct dp *rt, char *err, size_t errlen);

/* A one-task job whose task no workgroup ever touched (the last poll saw it
 * waiting): nothing of it ran, so after a restart it can run as if new. */
static int never_gathered(const struct run *r) {
  if (periodic(r->j) || r->j->error || r->released > 1) return 0;
  for (unsigned i = 0; i < r->ninflight; i++)
    if (r->task_seen[i] & (1u << COOP_EV_GATHERED)) return 0;
  return 1;
}

/* The device process died, or a hung kernel made dev_main ask for this:
 * kill it, fail every job that was on it (ELOST; the hung one keeps its
 * EHUNG), then build and launch a new one with the same kernels. Jobs not
 * yet on the device (queued, waiting for a cooperative slot) stay and run
 * on the new one. */
static void restart_device(struct dev *d) {
  char why[300];
  if (d->restart_why[0])
    snprintf(why, sizeof why, "%s", d->restart_why);
  else
    snprintf(why, sizeof why, "its device process %s", d->rt ? dp_death(d->rt) : "is gone");
  unsigned nlost = 0;
  for (struct run *r = d->runs; r; r = r->next)
    nlost += r->j->id != d->hung_job && !never_gathered(r);
  char label[32];
  snprintf(label, sizeof label, d->index < 0 ? "the device" : "device %d", d->index);
  log_error("%s: %s: restarting it (%u other jobs lost)", label, why, nlost);
  if (d->rt) dp_kill(d->rt);
  d->rt = NULL;
  d->parked = 0;
  atomic_store(&d->parked_pub, 0);
  struct job *again = NULL; /* jobs that never got a workgroup: run them anew */
  while (d->runs) {
    struct run *r = d->runs;
    struct job *j = r->j;
    d->runs = r->next;
    for (unsigned i = 0; i < j->nargs; i++) j->args[i].dev = 0; /* the arena is gone */
    if (never_gathered(r)) {
      atomic_store(&j->state, COOP_JOB_QUEUED);
      free(r);
      j->dev_next = again;
      again = j;
      continue;
    }
    if (j->error != COOP_EHUNG) {
      j->error = COOP_ELOST;
      snprintf(j->message, sizeof j->message,
               "the job was lost: coopd restarted %s (%.160s); submit it again", label, why);
      atomic_store(&j->state, COOP_JOB_FAILED);
    }
    r->ninflight = 0;
    finish_job(d, r);
    free(r);
  }
  d->restart_why[0] = '\0';
  d->hung_job = 0;
  if (d->stop_now) return; /* closing anyway */
  struct dp *rt = NULL;
  char err[1024];
  int e = dp_build(&rt, d->cfg, d->index, d->ks, err, sizeof err);
  if (e == 0 && (e = launch(d, rt, err, sizeof err)) != 0) dp_close(rt, DP_CLOSE_MS);
  if (e) {
    snprintf(d->broken, sizeof d->broken, "restart after %.200s: %.250s", why, err);
    log_error("the device is unavailable: %s", d->broken);
  }
  watch_event(d, "%s restarted: %.200s", label, why);
  while (again) { /* their IN data is still the client's (memfd or inline copy) */
    struct job *j = again;
    again = j->dev_next;
    j->dev_next = NULL;
    start_job(d, j);
  }
}

/* One request for the infos of every task in flight: the pass below reads
 * them from the proxy's cache (devproc.h), not one request per task. */
static void poll_tasks(struct dev *d) {
  static coop_task_id ids[256]; /* the runtime has 256 task slots (shared.h) */
  unsigned n = 0;
  for (struct run *r = d->runs; r; r = r->next)
    for (unsigned i = 0; i < r->ninflight && n < 256; i++) ids[n++] = r->task[i];
  if (n && d->rt) dp_poll(d->rt, ids, n);
}

/* Relaunches a parked megakernel before a run's first submission. */
static void unpark(struct dev *d) {
  int64_t t0 = now_ns();
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
  atomic_store(&d->unpark_ns, now_ns() - t0);
  log_debug("device %d: relaunched after parking in %.3f ms, %u workers", d->index,
            (double)(now_ns() - t0) / 1e6, dp_workers(d->rt));
}

/* Parks the megakernel once the device has been idle for park_ms; else
 * lowers *wake to that moment. */
static void maybe_park(struct dev *d, int64_t now, int64_t *wake) {
  pthread_mutex_lock(&d->mu);
  int busy = d->in_head || d->swapping || d->stopping;
  pthread_mutex_unlock(&d->mu);
  if (busy || d->runs || d->coop_wait_head || d->restart_why[0]) d->idle_since = now;
  if (d->parked || !d->rt || !d->cfg->park_ms || busy || d->runs || d->coop_wait_head) return;
  int64_t at = d->idle_since + (int64_t)d->cfg->park_ms * 1000000;
  if (now < at) {
    if (at < *wake) *wake = at;
    return;
  }
  int e = dp_park(d->rt);
  if (e == COOP_ELOST) return; /* the next pass restarts the device */
  if (e) {
    log_warn("device %d: could not park the megakernel: %s", d->index, coop_strerror(e));
    d->idle_since = now; /* try again a period later */
    return;
  }
  d->parked = 1;
  atomic_store(&d->parked_pub, 1);
  atomic_fetch_add(&d->parks, 1);
  log_debug("device %d: idle for %u ms: the megakernel is parked", d->index, d->cfg->park_ms);
}

/* Something for the next pass that the kick announced: a job, a stop, a
 * reload request. */
static int new_work(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  int w = (d->in_head && !d->swapping) || d->stopping != d->stop_now ||
          d->swapping != d->swap_now || (d->stopping && d->stop_deadline != d->stop_at);
  pthread_mutex_unlock(&d->mu);
  return w;
}

/* Tasks in flight: the device process waits for one of them to change
 * (dp_wait), for the kick, or until wake (a periodic release), at most
 * DEV_WAIT_NS so the watchdog's checks still run. */
static void wait_in_flight(struct dev *d, int64_t wake) {
  static coop_task_id ids[DP_WAIT_MAX];
  unsigned n = 0;
  for (struct run *r = d->runs; r; r = r->next)
    for (unsigned i = 0; i < r->ninflight && n < DP_WAIT_MAX; i++) ids[n++] = r->task[i];
  int64_t now = now_ns(), budget = wake - now;
  if (budget > DEV_WAIT_NS) budget = DEV_WAIT_NS;
  if (budget <= 0) return;
  dp_wait(d->rt, ids, n, budget); /* a lost child shows in dp_alive on the next pass */
}

static void *dev_main(void *arg) {
  struct dev *d = arg;
  for (;;) {
    take_new(d);
    pump_coop_wait(d);
    if (d->parked && d->runs) unpark(d);
    poll_tasks(d);
    int64_t now = now_ns(), wake = now + DEV_WAIT_NS;
    for (struct run **p = &d->runs; *p;) {
      struct run *r = *p;
      if (step_run(d, r, now, &wake)) {
        *p = r->next;
        finish_job(d, r);
        free(r);
      } else {
        p = &r->next;
      }
    }
    if (d->restart_why[0] || (d->rt && !dp_alive(d->rt))) restart_device(d);
    if (!d->runs && !d->coop_wait_head) wake = INT64_MAX; /* nothing to poll */
    maybe_park(d, now, &wake);
    build_view(d, now);
    pthread_mutex_lock(&d->mu);
    int swap = d->swapping && !d->runs;
    pthread_mutex_unlock(&d->mu);
    if (swap) do_swap(d);
    pthread_mutex_lock(&d->mu);
    int done = d->stopping && !d->runs && !d->in_head && !d->coop_wait_head;
    pthread_mutex_unlock(&d->mu);
    if (done) break;
    if (d->runs && d->rt && dp_alive(d->rt) && !new_work(d))
      wait_in_flight(d, wake);
    else
      wait_for_work(d, wake);
  }
  close_runtime(d);
  pthread_mutex_lock(&d->mu);
  d->stopped = 1;
  pthread_mutex_unlock(&d->mu);
  uv_async_send(&d->async);
  return NULL;
}

int dev_index(const struct dev *d) { return d->index; }

int dev_build(const struct config *c, int index, const struct kset *ks, struct dp **rtp, char *err,
              size_t errlen) {
  return dp_build(rtp, c, index, ks, err, errlen);
}

static int launch(struct dev *d, struct dp *rt, char *err, size_t errlen) {
  int e = dp_launch(rt, err, errlen);
  if (e == 0) e = dp_set_kick(rt, d->kick);
  if (e) return e;
  d->rt = rt;
  snprintf(d->name, sizeof d->name, "%s", dp_device_name(rt));
  snprintf(d->backend, sizeof d->backend, "%s", dp_backend(rt));
  snprintf(d->backend_note, sizeof d->backend_note, "%s", dp_backend_note(rt));
  atomic_store(&d->cus, dp_compute_units(rt));
  atomic_store(&d->workers, dp_workers(rt));
  d->broken[0] = 0;
  d->parked = 0; /* a new device process starts launched */
  atomic_store(&d->parked_pub, 0);
  return 0;
}

unsigned dev_parked(const struct dev *d) { return atomic_load(&d->parked_pub); }
unsigned dev_parks(const struct dev *d) { return atomic_load(&d->parks); }
int64_t dev_unpark_ns(const struct dev *d) { return atomic_load(&d->unpark_ns); }

/* Device thread, no job running: the old megakernel goes, the new one
 * comes (see the top of this file). */
static void do_swap(struct dev *d) {
  pthread_mutex_lock(&d->mu);
  struct dp *next = d->swap_rt;
  const struct kset *ks = d->swap_ks, *old_ks = d->ks;
  int stopping = d->stopping;
  pthread_mutex_unlock(&d->mu);
  char msg[sizeof d->swap_msg] = "";
  int e = 0;
  if (stopping) {
    dp_close(next, DP_CLOSE_MS);
    e = COOP_ESHUTDOWN;
    snprintf(msg, sizeof msg, "the daemon is shutting down");
  } else {
    close_runtime(d);
    e = launch(d, next, msg, sizeof msg);
    if (e == 0) {
      d->ks = ks;
    } else {
      dp_close(next, DP_CLOSE_MS);
      struct dp *again = NULL;
      char err2[1024];
      int e2 = dev_build(d->cfg, d->index, old_ks, &again, err2, sizeof err2);
      if (e2 == 0) {
        e2 = launch(d, again, err2, sizeof err2);
        if (e2) dp_close(again, DP_CLOSE_MS);
      }
      if (e2) {
        snprintf(d->broken, sizeof d->broken, "relaunch after a failed reload: %.400s", err2);
        log_error("the device is unavailable: %s", d->broken);
      }
    }
  }
  pthread_mutex_lock(&d->mu);
  d->swapping = 0;
  d->swap_rt = NULL;
  d->swap_ks = NULL;
  d->swap_done = 1;
  d->swap_err = e;
  memcpy(d->swap_msg, msg, sizeof msg);
  pthread_mutex_unlock(&d->mu);
  uv_async_send(&d->async);
}

int dev_swap(struct dev *d, struct dp *next, const struct kset *ks, unsigned grace_ms,
             void (*on_swapped)(int err, const char *msg, void *user)) {
  pthread_mutex_lock(&d->mu);
  int busy = d->swapping || d->stopping;
  if (!busy) {
    d->swap_rt = next;
    d->swap_ks = ks;
    d->swapping = 1;
    d->swap_deadline = now_ns() + (int64_t)grace_ms * 1000000;
    d->on_swapped = on_swapped;
    pthread_cond_signal(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
  if (!busy) kick(d);
  return busy ? COOP_ESTATE : 0;
}

int dev_open(struct dev **dp, const struct config *c, int index, const struct kset *ks,
             uv_loop_t *loop, void (*on_done)(struct job *, void *),
             void (*on_event)(const struct dev_event *, void *), void *user, char *err,
             size_t errlen) {
  struct dev *d = calloc(1, sizeof *d);
  if (!d) return COOP_ENOMEM;
  d->cfg = c;
  d->index = index;
  d->ks = ks;
  d->on_done = on_done;
  d->on_event = on_event;
  d->user = user;
  d->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (d->kick < 0) {
    snprintf(err, errlen, "eventfd: %s", strerror(errno));
    free(d);
    return COOP_ENOMEM;
  }
  struct dp *rt = NULL;
  int e = dev_build(c, index, ks, &rt, err, errlen);
  if (e == 0) {
    e = launch(d, rt, err, errlen);
    if (e) dp_close(rt, DP_CLOSE_MS);
  }
  if (e) {
    close(d->kick);
    free(d);
    return e;
  }
  pthread_mutex_init(&d->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cv, &ca);
  pthread_condattr_destroy(&ca);
  uv_async_init(loop, &d->async, on_async);
  d->async.data = d;
  build_view(d, now_ns()); /* TOP has a view before the first client comes */
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
  free(d->ev);
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  uv_close((uv_handle_t *)&d->async, on_async_closed);
}

const char *dev_name(const struct dev *d) { return d->name; }
const char *dev_backend(const struct dev *d) { return d->backend; }
const char *dev_backend_note(const struct dev *d) { return d->backend_note; }
unsigned dev_compute_units(const struct dev *d) { return atomic_load(&d->cus); }
unsigned dev_workers(const struct dev *d) { return atomic_load(&d->workers); }
