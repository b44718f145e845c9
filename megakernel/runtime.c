/*
 * runtime.c: the host side of the megakernel: life cycle, discovery and
 * clock calibration, task submission and results.
 *
 * Host <-> scheduler handshakes (all on the mailbox, C11 atomics here,
 * system-scope atomics on the device):
 *   submit:   fill task record; state := SUBMITTED (release);
 *             ring[head % RING] := slot, kernel, flags, size, deadline
 *             and whether the record has a window, each word tagged
 *             with head's lap;
 *             sub_head := head + 1 (release); for a task with copies
 *             the device's way (io.c, COOP_RT_IO=device) written by the
 *             copy stream after the copies in, and by no other submit
 *             until that value is seen.
 *   result:   wait until state is final (acquire), then read the record.
 *   cancel:   task.cancel := 1 (release), then cancel_seq := its count + 1,
 *             the slot and CANCEL (release; one compare-and-swap, doorbell_ctl);
 *             the scheduler passes it on.
 *   cap:      task.cap := k, then cancel_seq as a cancel's (CAP).
 *   suspend:  task.suspend := 1, then cancel_seq as a cancel's (SUSPEND); resume
 *             submits a new record with COOP_TF_RESUME and the suspended
 *             one's state (scheduler.cl, "Suspension").
 *   shutdown: mailbox.shutdown := 1 (release); wait for the kernel to exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coop_schema.h"
#include "kernel_check.h"
#include "rt_internal.h"

_Static_assert(sizeof(struct coop_task_rec) % 8 == 0, "task record must keep 8-byte alignment");
_Static_assert(offsetof(struct coop_task_rec, args) == 32, "task record layout changed");
/* the scheduler loads state, cancel, cap and suspend of a running task as
 * one 16-byte vector (scheduler.cl, step 2) */
_Static_assert(offsetof(struct coop_task_rec, cancel) == 4 &&
                   offsetof(struct coop_task_rec, cap) == 8 &&
                   offsetof(struct coop_task_rec, suspend) == 12 &&
                   sizeof(struct coop_task_rec) % 16 == 0,
               "task record: state, cancel, cap, suspend first, records 16-byte aligned");
/* the scheduler copies a task's args and lens as one run of words */
_Static_assert(offsetof(struct coop_task_rec, lens) ==
                   offsetof(struct coop_task_rec, args) + sizeof(uint64_t) * COOP_MAX_ARGS,
               "task record: lens must follow args");
/* the scheduler loads the doorbell, and each ring entry, as one 16-byte
 * vector (scheduler.cl, step 1) */
_Static_assert(
    offsetof(struct coop_mailbox, ping) % 16 == 0 &&
        offsetof(struct coop_mailbox, shutdown) == offsetof(struct coop_mailbox, ping) + 4 &&
        offsetof(struct coop_mailbox, sub_head) == offsetof(struct coop_mailbox, ping) + 8 &&
        offsetof(struct coop_mailbox, cancel_seq) == offsetof(struct coop_mailbox, ping) + 12,
    "mailbox: the doorbell must be ping, shutdown, sub_head, cancel_seq, 16-byte aligned");
_Static_assert(offsetof(struct coop_mailbox, ring) % 16 == 0 &&
                   sizeof(((struct coop_mailbox *)0)->ring[0]) == 16,
               "mailbox: ring entries must be 16 bytes, 16-byte aligned");

_Static_assert(offsetof(struct coop_mailbox, pong_clock) % 8 == 0, "mailbox layout");
_Static_assert(offsetof(struct coop_mailbox, tasks) % 16 == 0, "mailbox layout");
_Static_assert(offsetof(struct coop_mailbox, prof) % 8 == 0, "mailbox layout");
_Static_assert(COOP_RING <= 256, "a ring entry holds the slot in 8 bits");
_Static_assert(COOP_REFUSE_BAD_KERNEL == COOP_TR_BAD_KERNEL &&
                   COOP_REFUSE_TOO_MANY_GROUPS == COOP_TR_TOO_MANY_GROUPS &&
                   COOP_REFUSE_ZERO_GROUPS == COOP_TR_ZERO_GROUPS &&
                   COOP_REFUSE_KIND == COOP_TR_KIND,
               "refusal codes");

#define SLOT(id) ((id)&0xffu)
_Static_assert(COOP_MAX_KERNELS < 0x7f, "a ring entry's kid (shared.h) tells every kernel apart");
#define GEN(id) ((id) >> 8)

void coop__rt_msg(struct coop_rt *rt, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt->msg, sizeof rt->msg, fmt, ap);
  va_end(ap);
}

void coop__sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000, ns % 1000000000};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

void coop_rt_options_init(struct coop_rt_options *o) {
  memset(o, 0, sizeof *o);
  o->platform_index = -1;
  o->device_index = -1;
  o->discovery_window_ms = 200;
  o->arena_bytes = (size_t)64 << 20;
}

/* The backends built in, in auto's order of preference. */
static const struct coop__backend_ops *const backends[] = {
#ifdef COOP_HAVE_OPENCL
    &coop__opencl_ops,
#endif
#ifdef COOP_HAVE_CUDA
    &coop__cuda_ops,
#endif
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

static int try_backend(coop_rt *rt, const struct coop__backend_ops *ops,
                       const struct coop_rt_options *o) {
  rt->ops = ops;
  rt->msg[0] = 0;
  int r = ops->open(rt, o);
  if (r && rt->be) {
    ops->close(rt);
    rt->be = NULL;
  }
  return r;
}

/* auto: an OpenCL GPU with what the megakernel needs, else CUDA, else any
 * OpenCL device (PoCL); each refusal's reason goes into the note. */
static int open_backend(coop_rt *rt, const struct coop_rt_options *o) {
  const char *want = o->backend && strcmp(o->backend, "auto") ? o->backend : NULL;
  char why[2048] = "";
  int r = COOP_ENODEV;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < NBACKENDS; i++) {
      const struct coop__backend_ops *ops = backends[i];
      if (want && strcmp(want, ops->name)) continue;
      int cl = !strcmp(ops->name, "opencl");
      if (!want && pass == 1 && !cl) continue; /* second pass: OpenCL CPU devices */
      rt->cl_gpu_only = !want && pass == 0 && cl;
      r = try_backend(rt, ops, o);
      if (r == 0) {
        snprintf(rt->backend_note, sizeof rt->backend_note, "%s on '%.200s'%s%s%.700s", ops->name,
                 rt->device_name, want ? " (as configured)" : " (auto)", why[0] ? "; " : "", why);
        return 0;
      }
      size_t n = strlen(why);
      snprintf(why + n, sizeof why - n, "%s%s%s: %.600s", n ? "; " : "not ", ops->name,
               rt->cl_gpu_only ? " GPU" : "", rt->msg);
    }
    if (want) break;
  }
  if (!why[0]) {
    char built[64] = "";
    for (size_t i = 0; i < NBACKENDS; i++)
      snprintf(built + strlen(built), sizeof built - strlen(built), "%s%s", i ? ", " : "",
               backends[i]->name);
    coop__rt_msg(rt, "backend '%s' is not built in (this build has: %s)", want ? want : "auto",
                 built[0] ? built : "none");
    return COOP_ENODEV;
  }
  coop__rt_msg(rt, "no usable device: %s", why);
  return r;
}

int coop_rt_open(coop_rt **out, const struct coop_rt_options *o) {
  if (!out) return COOP_EINVAL;
  *out = NULL;
  struct coop_rt_options def;
  if (!o) {
    coop_rt_options_init(&def);
    o = &def;
  }
  coop_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return COOP_ENOMEM;
  *out = rt;
  pthread_mutex_init(&rt->lock, NULL);
  coop__arena_init(rt);
  if (o->local_size > 1024 || (o->local_size & (o->local_size - 1))) {
    coop__rt_msg(rt, "local_size %u: must be a power of two in [1, 1024], or 0 for the default",
                 o->local_size);
    return COOP_EINVAL;
  }
  rt->window_ms = o->discovery_window_ms ? o->discovery_window_ms : 200;
  rt->arena_bytes = o->arena_bytes ? o->arena_bytes : ((size_t)64 << 20);
  /* COOP_DEVICE_ZONE=0: no device zone whatever the options (a
   * benchmark's A/B: bench/RESULTS.md, "Device memory for the buffers the
   * host only copies") */
  const char *zone = getenv("COOP_DEVICE_ZONE");
  rt->zone_bytes = zone && !strcmp(zone, "0") ? 0 : o->device_bytes;
  int r = open_backend(rt, o);
  if (r) return r;
  rt->local_size = o->local_size ? o->local_size : rt->ops->default_local_size;
  rt->launch_groups = o->launch_groups; /* 0: chosen at launch (launch_shape) */
  rt->launch_fixed = o->launch_groups != 0;
  rt->max_registers = o->max_registers;
  if (o->launch_groups && (rt->launch_groups < 2 || rt->launch_groups > COOP_MAX_WG)) {
    coop__rt_msg(rt, "launch_groups %u: must be in [2, %u]", rt->launch_groups, COOP_MAX_WG);
    return COOP_EINVAL;
  }
  return 0;
}

const char *coop_rt_errmsg(const coop_rt *rt) { return rt ? rt->msg : "no runtime"; }
const char *coop_rt_device_name(const coop_rt *rt) { return rt->device_name; }
const char *coop_rt_backend(const coop_rt *rt) { return rt->ops ? rt->ops->name : "none"; }
const char *coop_rt_backend_note(const coop_rt *rt) { return rt->backend_note; }

int coop_rt_backend_built(const char *name) {
  if (!name) return 0;
  if (!strcmp(name, "auto")) return NBACKENDS > 0;
  for (size_t i = 0; i < NBACKENDS; i++)
    if (!strcmp(name, backends[i]->name)) return 1;
  return 0;
}

const char *coop_rt_backends_built(void) {
  static const char *const list =
      ""
#if defined(COOP_HAVE_OPENCL) && defined(COOP_HAVE_CUDA)
      "opencl, cuda"
#elif defined(COOP_HAVE_OPENCL)
      "opencl"
#elif defined(COOP_HAVE_CUDA)
      "cuda"
#endif
      ;
  return list;
}
unsigned coop_rt_compute_units(const coop_rt *rt) { return rt->compute_units; }
unsigned coop_rt_launched_groups(const coop_rt *rt) { return rt->launch_groups; }
unsigned coop_rt_local_size(const coop_rt *rt) { return rt->local_size; }
unsigned coop_rt_participants(const coop_rt *rt) { return rt->participants; }
unsigned coop_rt_workers(const coop_rt *rt) { return rt->participants ? rt->participants - 1 : 0; }
double coop_rt_tick_ns(const coop_rt *rt) { return rt->tick_ns; }

/* < COOP_NAME_MAX, as coopd's directive and the wire allow: a name of 48
 * to 63 bytes passed coopd's checks and then failed its build with
 * nothing but "invalid argument" */
static int valid_name(const char *s) { return s && strlen(s) < COOP_NAME_MAX && coop__is_ident(s); }

int coop__kernel_add(struct coop__kernel *kernels, int *n, const char *name, int cooperative,
                     const char *source) {
  if (!source || !valid_name(name)) return COOP_EINVAL;
  for (int i = 0; i < *n; i++)
    if (strcmp(kernels[i].name, name) == 0) return COOP_EEXIST;
  if (*n == COOP_MAX_KERNELS) return COOP_ENOMEM;
  struct coop__kernel *k = &kernels[*n];
  k->source = strdup(source);
  if (!k->source) return COOP_ENOMEM;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->cooperative = cooperative ? 1 : 0;
  return (*n)++;
}

int coop_rt_add_kernel(coop_rt *rt, const char *name, int cooperative, const char *source) {
  if (!rt) return COOP_EINVAL;
  if (rt->launched || rt->built) return COOP_ESTATE;
  return coop__kernel_add(rt->kernels, &rt->nkernels, name, cooperative, source);
}

int coop_rt_kernel_index(const coop_rt *rt, const char *name) {
  for (int i = 0; rt && name && i < rt->nkernels; i++)
    if (strcmp(rt->kernels[i].name, name) == 0) return i;
  return COOP_ENOKERNEL;
}

/* Discovery's initial state, written before every launch: `groups`
 * launched, the poll open (device memory, zeroed but for this), nothing
 * seen or closed yet (mailbox). discover() then runs the host's side of the
 * poll, discovery.cl the device's. */
static int discovery_open(coop_rt *rt, unsigned groups) {
  struct coop_mailbox *mb = rt->mb;
  mb->launched = groups;
  atomic_store_explicit(&mb->disc_seen, 0, memory_order_relaxed);
  atomic_store_explicit(&mb->disc_close, 0, memory_order_relaxed);
  uint32_t open = 1;
  return rt->ops->write_dev(rt, offsetof(struct coop_dev, disc_open), &open, sizeof open);
}

/* Discovery, host half: close the poll once the count stopped growing for
 * the window (thesis 000 Sec. 3.6.4: CPU runtimes need this pause), or at
 * once when every workgroup launched, or as many as the backend knows can
 * run at once (co_resident_max: PoCL's compute units), has arrived: every
 * start of coopd on PoCL waited the whole window (200 ms), its tests
 * hundreds of times. */
static int discover(coop_rt *rt) {
  struct coop_mailbox *mb = rt->mb;
  uint32_t seen = 0;
  int64_t changed = coop__now_ns(), deadline = changed + (int64_t)60 * 1000000000;
  for (;;) {
    uint32_t n = atomic_load_explicit(&mb->disc_seen, memory_order_acquire);
    int64_t now = coop__now_ns();
    if (n != seen) {
      seen = n;
      changed = now;
    }
    if (n >= mb->launched || (rt->co_resident_max && n >= rt->co_resident_max) ||
        atomic_load_explicit(&mb->sched_state, memory_order_acquire))
      break;
    if (n > 0 && now - changed > (int64_t)rt->window_ms * 1000000) break;
    if (now > deadline) {
      coop__rt_msg(rt, "discovery: no workgroup started within 60 s");
      return COOP_EDISCOVERY;
    }
    coop__sleep_ns(200000);
  }
  atomic_store_explicit(&mb->disc_close, 1, memory_order_release);
  while (atomic_load_explicit(&mb->sched_state, memory_order_acquire) == 0) {
    if (coop__now_ns() > deadline) {
      coop__rt_msg(rt, "discovery: the scheduler did not start");
      return COOP_EDISCOVERY;
    }
    coop__sleep_ns(100000);
  }
  rt->participants = atomic_load_explicit(&mb->participants, memory_order_acquire);
  if (rt->participants < 2) {
    coop__rt_msg(rt, "discovery found %u co-occupant workgroup(s); need a scheduler and a worker",
                 rt->participants);
    return COOP_EDISCOVERY;
  }
  return 0;
}

/* ---- the device clock, fitted to CLOCK_MONOTONIC ----
 *
 * Device ticks (TSC on PoCL, %globaltimer on CUDA) become host ns through a
 * line. One point of it is a ping: the host notes its clock, the scheduler
 * answers with its own, the host notes its clock again; the device's
 * reading lies somewhere in that round trip, so the point's error is half
 * of it. Under CPU load a round trip can take milliseconds (the host thread
 * or PoCL's scheduler thread descheduled), so:
 *   - each point is the tightest of several pings;
 *   - the first calibration fits two points 50 ms apart (one point at
 *     the backend's nominal rate where it has one), and each refit
 *     (at most once per COOP_RT_REFIT_NS, from coop_rt_refit) fits the line
 *     through the anchor (the first point) and a new one: the baseline
 *     grows, so the slope's error (rtt_anchor + rtt_new) / 2 / baseline
 *     shrinks with time, where a fixed 50 ms fit made a 12 ms job last
 *     1093 ms after a loaded start (docs/scheduler.md, "7. Timestamps");
 *   - a refit whose tightest ping is far looser than the tightest ever seen
 *     (the host is loaded now) and that the line explains within that
 *     round trip is not used, unless no fit was made for
 *     COOP_RT_REFIT_STALE_NS;
 *   - a new point further from the old line than its round trip plus
 *     COOP_RT_DRIFT_NS is counted as drift; a device clock that went back
 *     (a relaunch that reset it) restarts the line at the new point.
 * The daemon also clamps each job's times to what the host itself saw
 * (daemon/device/dev_run.c, record), so that no fit can report an impossible
 * order. */

#define COOP_RT_PING_NS 20000000ll /* a refit's ping not answered in 20 ms is dropped */
/* Calibration waits longer: with PoCL's threads on a loaded host the
 * scheduler thread may not run for tens of ms, and without a first fit
 * every time would be 0. */
#define COOP_RT_CALIB_PING_NS 2000000000ll
#define COOP_RT_REFIT_NS 1000000000ll        /* refit at most once a second */
#define COOP_RT_REFIT_STALE_NS 30000000000ll /* then take a loose point anyway */
#define COOP_RT_DRIFT_NS 100000ll

/* One ping: the scheduler answers with its clock. Returns the round trip,
 * or -1 if no answer came within wait_ns. */
static int64_t ping(coop_rt *rt, int64_t wait_ns, int64_t *mid, uint64_t *dev) {
  struct coop_mailbox *mb = rt->mb;
  uint32_t p = atomic_load_explicit(&mb->ping, memory_order_relaxed) + 1;
  int64_t t0 = coop__now_ns(), t1;
  atomic_store_explicit(&mb->ping, p, memory_order_release);
  while (atomic_load_explicit(&mb->pong, memory_order_acquire) != p)
    if (coop__now_ns() - t0 > wait_ns) return -1;
  t1 = coop__now_ns();
  *mid = t0 + (t1 - t0) / 2;
  *dev = mb->pong_clock;
  return t1 - t0;
}

/* The tightest of n pings: its round trip, or -1 if none was answered. */
static int64_t best_ping(coop_rt *rt, int n, int64_t wait_ns, int64_t *mid, uint64_t *dev) {
  int64_t best = -1;
  for (int i = 0; i < n; i++) {
    int64_t m;
    uint64_t d;
    int64_t rtt = ping(rt, wait_ns, &m, &d);
    if (rtt < 0) break; /* the scheduler does not answer: do not wait 20 ms n times */
    if (best < 0 || rtt < best) {
      best = rtt;
      *mid = m;
      *dev = d;
    }
  }
  return best;
}

/* The first fit: two tightest-of-33 points 50 ms apart; or, where the
 * backend knows the clock's rate (CUDA's %globaltimer counts ns), one
 * point at that rate. That sleep was most of a launch on a GPU (50 of its
 * 51 ms, every start, restart and reload); the refits a second on (from
 * the anchor, coop_rt_refit) correct the rate either way. */
static void calibrate(coop_rt *rt) {
  int64_t m0 = 0, m1 = 0;
  uint64_t d0 = 0, d1 = 0;
  int64_t r0 = best_ping(rt, 33, COOP_RT_CALIB_PING_NS, &m0, &d0), r1 = r0;
  double nominal = rt->ops->clock_ns_per_tick;
  if (nominal > 0.0) {
    m1 = m0;
    d1 = d0;
    rt->tick_ns = r0 >= 0 && d0 ? nominal : 0.0;
  } else {
    coop__sleep_ns(50000000);
    r1 = best_ping(rt, 33, COOP_RT_CALIB_PING_NS, &m1, &d1);
    rt->tick_ns = r0 >= 0 && r1 >= 0 && d1 > d0 ? (double)(m1 - m0) / (double)(d1 - d0) : 0.0;
  }
  rt->anchor_ns = m0;
  rt->anchor_ticks = d0;
  rt->anchor_rtt = r0;
  rt->ref_ns = m1;
  rt->ref_ticks = d1;
  rt->best_rtt = r0 < r1 ? r0 : r1;
  rt->fit_at = rt->fit_ok = m1;
  rt->fits = 1;
}

static int64_t to_ns(const coop_rt *rt, uint64_t ticks) {
  if (!ticks || rt->tick_ns == 0.0) return 0;
  return rt->ref_ns + (int64_t)((double)((int64_t)(ticks - rt->ref_ticks)) * rt->tick_ns);
}

/* The inverse, for times the scheduler compares with its own clock (the
 * windows of gathering ahead): 0 without a fit, else at least 1. */
static uint64_t to_ticks(const coop_rt *rt, int64_t ns) {
  if (rt->tick_ns == 0.0) return 0;
  int64_t t = (int64_t)rt->ref_ticks + (int64_t)((double)(ns - rt->ref_ns) / rt->tick_ns);
  return t > 0 ? (uint64_t)t : 1u;
}

/* Gathering ahead (device/scheduler.cl): the window round the next
 * instance's time, next_ns -/+ ahead. Under a loaded host the fit is off by
 * up to a ping's round trip (milliseconds), which moves the window by as
 * much: the cost is a hold too early or too late, never a wrong result. */
static void hold_window(const coop_rt *rt, const struct coop_rt_task_desc *d,
                        struct coop_task_rec *t) {
  t->hold_from = t->hold_to = 0;
  if (d->next_ns <= 0) return;
  int64_t ahead = d->ahead_ns > 0 ? d->ahead_ns : COOP_RT_AHEAD_NS;
  if (ahead > COOP_RT_AHEAD_MAX_NS) ahead = COOP_RT_AHEAD_MAX_NS;
  uint64_t from = to_ticks(rt, d->next_ns - ahead), to = to_ticks(rt, d->next_ns + ahead);
  if (from == 0u || to <= from) return;
  t->hold_from = from;
  t->hold_to = to;
}

/* Gather time, the figure coop exists to keep short: from the scheduler
 * taking a task (t_released, stamped at intake) until every workgroup it
 * starts with is free and assigned (t_gathered, stamped as it starts), both
 * on the device clock in the task record (device/shared.h, written by
 * device/scheduler.cl). Whoever reports a gather time (coop_rt_task_info,
 * and through it coopd, libcoop and the benchmarks) has it from here.
 * 0 until gathered. */
static int64_t gather_ns(const coop_rt *rt, const struct coop_task_rec *t) {
  if (!t->t_gathered) return 0;
  return (int64_t)((double)(t->t_gathered - t->t_released) * rt->tick_ns);
}

int64_t coop_rt_ping_ns(coop_rt *rt) {
  int64_t mid;
  uint64_t dev;
  if (!rt || !rt->launched || rt->parked || rt->exited) return -1;
  return ping(rt, 1000000000ll, &mid, &dev);
}

int coop_rt_sched_profile(coop_rt *rt, uint64_t *out, int n) {
  if (!rt || !rt->mb || n <= 0) return 0;
  if (n > COOP_PROF_SLOTS) n = COOP_PROF_SLOTS;
  for (int i = 0; i < n; i++) out[i] = ((volatile uint64_t *)rt->mb->prof)[i];
  return out[0] ? n : 0; /* prof[0], the passes: 0 until the first store */
}

int coop_rt_refit(coop_rt *rt) {
  if (!rt || !rt->launched || rt->parked || rt->exited || rt->tick_ns == 0.0) return 0;
  int64_t now = coop__now_ns();
  if (now - rt->fit_at < COOP_RT_REFIT_NS) return 0;
  rt->fit_at = now;
  int64_t mid = 0;
  uint64_t dev = 0;
  int64_t rtt = best_ping(rt, 9, COOP_RT_PING_NS, &mid, &dev);
  if (rtt < 0) return 0;
  if (rtt < rt->best_rtt) rt->best_rtt = rtt;
  int back = dev <= rt->ref_ticks; /* a relaunch reset the clock */
  int64_t err = back ? INT64_MAX : mid - to_ns(rt, dev);
  if (err < 0) err = -err;
  int drift = back || err > rtt + COOP_RT_DRIFT_NS;
  /* A loose point (the host is loaded now) that the line explains within
   * its own round trip would only blur the line: kept out, unless the line
   * is stale. One the line does not explain is used however loose. */
  if (!drift && rtt > 4 * rt->best_rtt + 20000 && mid - rt->fit_ok < COOP_RT_REFIT_STALE_NS)
    return 0;
  if (back) { /* a new line from here, at the old slope */
    rt->anchor_ns = mid;
    rt->anchor_ticks = dev;
    rt->anchor_rtt = rtt;
  } else if (dev > rt->anchor_ticks && mid > rt->anchor_ns) {
    rt->tick_ns = (double)(mid - rt->anchor_ns) / (double)(dev - rt->anchor_ticks);
  }
  rt->ref_ns = mid;
  rt->ref_ticks = dev;
  rt->fit_ok = mid;
  rt->fits++;
  rt->drifts += (uint64_t)drift;
  return drift;
}

int coop__kernels_check(const struct coop__kernel *kernels, int n, char *msg, size_t len) {
  for (int i = 0; i < n; i++) {
    const struct coop__kernel *k = &kernels[i];
    char why[512];
    if (!coop_kernel_check(k->name, k->cooperative, k->source, why, sizeof why)) continue;
    /* coopd opens each kernel with #line 1 "FILE" (daemon/device/devproc.c):
     * then name the file, as the compiler would */
    const char *f = !strncmp(k->source, "#line 1 \"", 9) ? k->source + 9 : NULL;
    int fl = f ? (int)strcspn(f, "\"\n") : 0;
    if (f && f[fl] == '"')
      snprintf(msg, len, "%.*s:1: %s", fl, f, why);
    else
      snprintf(msg, len, "kernel %s: %s", k->name, why);
    return COOP_EBUILD;
  }
  return 0;
}

int coop_rt_build(coop_rt *rt) {
  if (!rt || !rt->be) return COOP_EINVAL;
  if (rt->launched) return COOP_ESTATE;
  if (rt->built) return 0;
  if (rt->nkernels == 0) {
    coop__rt_msg(rt, "no kernel registered");
    return COOP_EINVAL;
  }
  int c = coop__kernels_check(rt->kernels, rt->nkernels, rt->msg, sizeof rt->msg);
  if (c) return c;
  char *src = coop__assemble_source(rt);
  if (!src) return COOP_ENOMEM;
  const char *dump = getenv("COOP_DUMP_SOURCE"); /* debugging: the assembled source */
  if (dump) {
    FILE *f = fopen(dump, "w");
    if (f) {
      fputs(src, f);
      fclose(f);
    }
  }
  int r = rt->ops->build(rt, src, COOP__BUILD_OPTIONS);
  free(src);
  if (r) return r;
  rt->built = 1;
  return 0;
}

static void width_unknown(struct coop_rt_width *w, const char *note) {
  char name[sizeof w->name];
  memcpy(name, w->name, sizeof name);
  memset(w, 0, sizeof *w);
  memcpy(w->name, name, sizeof name);
  w->regs = w->shared_bytes = w->local_bytes = w->spill_bytes = -1;
  w->max_local_size = w->per_cu = w->groups = -1;
  snprintf(w->note, sizeof w->note, "%s", note);
}

int coop_rt_kernel_width(coop_rt *rt, int index, struct coop_rt_width *out) {
  if (!rt || !rt->be || !out || index < -1 || index >= rt->nkernels) return COOP_EINVAL;
  if (index == -1) {
    if (!rt->built) return COOP_ESTATE;
    memset(out, 0, sizeof *out);
    width_unknown(out, "");
    if (!rt->ops->width) return 0;
    int r = rt->ops->width(rt, NULL, out);
    out->name[0] = '\0';
    return r;
  }
  struct coop_rt_width *w = &rt->widths[index];
  if (!rt->width_made[index]) {
    memset(w, 0, sizeof *w);
    memcpy(w->name, rt->kernels[index].name, sizeof w->name);
    width_unknown(w, rt->ops->width ? "" : "the backend cannot tell");
    if (rt->ops->width) {
      char *src = coop__assemble_kernels(&rt->kernels[index], 1);
      if (!src) return COOP_ENOMEM;
      int r = rt->ops->width(rt, src, w);
      free(src);
      if (r) return r;
      memcpy(w->name, rt->kernels[index].name, sizeof w->name);
    }
    rt->width_made[index] = 1;
  }
  *out = *w;
  return 0;
}

int coop_rt_width_bound(const struct coop_rt_width *k, int n) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (!k[i].measured || k[i].per_cu < 0) continue;
    if (best < 0 || k[i].per_cu < k[best].per_cu ||
        (k[i].per_cu == k[best].per_cu &&
         (k[i].regs > k[best].regs ||
          (k[i].regs == k[best].regs && k[i].shared_bytes > k[best].shared_bytes))))
      best = i;
  }
  return best;
}

int coop_rt_width_as_wide(const struct coop_rt_width *a, const struct coop_rt_width *b) {
  return a->measured && b->measured && a->per_cu == b->per_cu && a->regs == b->regs &&
         a->shared_bytes == b->shared_bytes;
}

static void fig(char *b, size_t n, int v, const char *unit) {
  if (v < 0)
    snprintf(b, n, "n/a %s", unit);
  else
    snprintf(b, n, "%d %s", v, unit);
}

char *coop_rt_width_text(const struct coop_rt_width *w, char *buf, size_t len) {
  if (!w->measured) {
    snprintf(buf, len, "not measured: %s", w->note[0] ? w->note : "unknown");
    return buf;
  }
  char regs[48], sh[48], loc[48], occ[96] = "";
  fig(regs, sizeof regs, w->regs, "registers/thread");
  fig(sh, sizeof sh, w->shared_bytes, "B shared/block");
  fig(loc, sizeof loc, w->local_bytes, "B local/thread");
  if (w->per_cu >= 0)
    snprintf(occ, sizeof occ, "%d blocks/SM, %d workgroups%s%s%s", w->per_cu, w->groups,
             w->bound[0] ? " (" : "", w->bound, w->bound[0] ? ")" : "");
  else if (w->max_local_size > 0)
    snprintf(occ, sizeof occ, "occupancy n/a, at most %d threads/workgroup", w->max_local_size);
  else
    snprintf(occ, sizeof occ, "occupancy n/a");
  char spill[40] = "";
  if (w->spill_bytes >= 0) snprintf(spill, sizeof spill, " (%d B spilled)", w->spill_bytes);
  snprintf(buf, len, "%s, %s, %s%s: %s", regs, sh, loc, spill, occ);
  return buf;
}

/* How many workgroups to launch when the options left it to the runtime:
 * all that the device can hold at once for this megakernel at this local
 * size (CUDA's occupancy bound, capped at COOP_MAX_WG), else 2 x CU + 1;
 * discovery then keeps those that really run at once. The backend note
 * gains the shape and what bounds it, for the log and `coopctl stats`. */
static int launch_shape(coop_rt *rt) {
  unsigned occ = 0;
  char why[512] = "";
  if (rt->ops->occupancy) {
    int r = rt->ops->occupancy(rt, rt->local_size, &occ, why, sizeof why);
    if (r) return r;
  }
  if (rt->note_shape) rt->backend_note[rt->note_shape] = '\0'; /* a reshape: the new one */
  int chosen = rt->launch_groups == 0;
  if (chosen) {
    rt->launch_groups = occ ? occ : 2 * rt->compute_units + 1;
    if (rt->launch_groups > COOP_MAX_WG) rt->launch_groups = COOP_MAX_WG;
    if (rt->launch_groups < 2) rt->launch_groups = 2;
  }
  size_t n = strlen(rt->backend_note);
  rt->note_shape = n;
  snprintf(rt->backend_note + n, sizeof rt->backend_note - n, "; launch %u x %u (%s%s%s%s)",
           rt->launch_groups, rt->local_size,
           !chosen ? "as configured"
           : occ   ? "occupancy bound"
                   : "2 x compute units + 1",
           chosen && occ > COOP_MAX_WG ? ", capped at COOP_MAX_WG" : "", why[0] ? ": " : "", why);
  return 0;
}

int coop_rt_prepare(coop_rt *rt) {
  if (!rt || !rt->be) return COOP_EINVAL;
  if (rt->launched) return COOP_ESTATE;
  if (rt->arena) return 0; /* prepared */
  if (!rt->mb) {           /* else a call before failed at the arena: the shape is chosen */
    int r = coop_rt_build(rt);
    if (r) return r;
    r = launch_shape(rt);
    if (r) return r;
    rt->mb = rt->ops->alloc_shared(rt, sizeof *rt->mb);
  }
  rt->arena = !rt->mb                ? NULL
              : rt->ops->alloc_arena ? rt->ops->alloc_arena(rt, rt->arena_bytes)
                                     : rt->ops->alloc_shared(rt, rt->arena_bytes);
  if (!rt->mb || !rt->arena) {
    coop__rt_msg(rt, "cannot allocate %zu bytes of fine-grained SVM", rt->arena_bytes);
    return COOP_ENOMEM;
  }
  /* the device zone (arena.c, "Two zones"): none where the backend has no
   * such memory, or could not give it (coop_rt_alloc_device falls back) */
  if (!rt->ops->alloc_zone || !rt->zone_bytes ||
      !(rt->zone = rt->ops->alloc_zone(rt, rt->zone_bytes)))
    rt->zone_bytes = 0;
  rt->mb->abi = COOP_ABI;
  return 0;
}

int coop_rt_launch(coop_rt *rt) {
  int r = coop_rt_prepare(rt);
  if (r) return r;
  r = rt->ops->alloc_dev(rt, sizeof(struct coop_dev));
  if (!r) r = discovery_open(rt, rt->launch_groups);
  if (r) return r;
  r = rt->ops->launch(rt, rt->launch_groups, rt->local_size);
  if (r) return r;
  rt->launched = 1;
  r = discover(rt);
  if (r) return r;
  calibrate(rt);
  return 0;
}

static struct coop_task_rec *rec(coop_rt *rt, coop_task_id id) {
  if (!rt || !rt->mb || SLOT(id) >= COOP_RING || rt->gen[SLOT(id)] != GEN(id) || GEN(id) == 0)
    return NULL;
  return &rt->mb->tasks[SLOT(id)];
}

static int coop__rt_submit(coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id,
                           uint32_t more_flags, const uint64_t *state, struct coop__io_plan *io,
                           int host);

int coop_rt_submit(coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id) {
  return coop__rt_submit(rt, d, id, 0, NULL, NULL, 0);
}

int coop__rt_submit_io(coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id,
                       struct coop__io_plan *p, int host) {
  return coop__rt_submit(rt, d, id, 0, NULL, p, host);
}

/* Lock held: the ring entry just written (at rt->sub_head - 1, slot's
 * record) published. Plainly, or with copies (io.c): the host's way keeps
 * the ranges out for the wait that sees the end; the device's publishes it
 * after the copies in (queue_io), and until it has no other submit
 * publishes (coop__io_settle): the ring is read in order. 1 or an error:
 * the device could not take the copies, nothing was published. */
static int publish(coop_rt *rt, uint32_t slot, struct coop__io_plan *io, int host) {
  rt->io_err[slot] = 0;
  if (io && !host && !rt->io_flags)
    rt->io_flags = rt->ops->alloc_shared(rt, COOP_RING * sizeof *rt->io_flags);
  if (io && !host && rt->io_flags) {
    uint32_t seq = ++rt->io_next ? rt->io_next : ++rt->io_next; /* never 0, the zeroed flag */
    io->pub = &rt->mb->sub_head;
    io->pub_val = rt->sub_head;
    io->state = &rt->mb->tasks[slot].state;
    io->final = COOP_TS_DONE; /* and every later state: all final */
    io->flag = &rt->io_flags[slot];
    io->flag_val = seq;
    rt->io_seq[slot] = seq;
    atomic_store_explicit(&rt->io_state[slot], COOP__IO_DEVICE, memory_order_relaxed);
    int q = rt->ops->queue_io(rt, io);
    if (q) return q;
    rt->pub_pending = 1;
    rt->pub_head = rt->sub_head;
    return 0;
  }
  if (io && !host) return 1; /* no shared memory for the flags: the host's way */
  int kept = io && io->nout;
  if (kept) {
    rt->io_nout[slot] = io->nout;
    memcpy(rt->io_out[slot], io->out, io->nout * sizeof *io->out);
  }
  atomic_store_explicit(&rt->io_state[slot], kept ? COOP__IO_HOST : COOP__IO_NONE,
                        memory_order_relaxed);
  atomic_store_explicit(&rt->mb->sub_head, rt->sub_head, memory_order_release);
  return 0;
}

/* more_flags, state: a resumed task's (coop_rt_resume); io, host: a task's
 * copies (coop__rt_submit_io). */
static int coop__rt_submit(coop_rt *rt, const struct coop_rt_task_desc *d, coop_task_id *id,
                           uint32_t more_flags, const uint64_t *state, struct coop__io_plan *io,
                           int host) {
  if (!rt || !d || !id || d->nargs > COOP_MAX_ARGS) return COOP_EINVAL;
  if (!rt->launched || rt->exited || rt->parked) return COOP_ESTATE;
  if (d->kernel < 0 || d->kernel >= rt->nkernels) return COOP_ENOKERNEL;
  pthread_mutex_lock(&rt->lock);
  int settled = coop__io_settle(rt);
  if (settled) {
    pthread_mutex_unlock(&rt->lock);
    return settled;
  }
  uint32_t slot = 0;
  while (slot < COOP_RING && (rt->gen[slot] & 1u)) slot++; /* odd generation = in use */
  if (slot == COOP_RING) {
    pthread_mutex_unlock(&rt->lock);
    return COOP_EBUSY;
  }
  rt->gen[slot]++;
  struct coop_task_rec *t = &rt->mb->tasks[slot];
  t->kid = (uint32_t)d->kernel;
  t->flags = (d->cooperative ? COOP_TF_COOPERATIVE : 0) |
             (d->query_barrier ? COOP_TF_QUERY_BARRIER : 0) |
             (io && io->gated ? COOP_TF_GATED : 0) | more_flags;
  t->groups = d->groups;
  t->status = 0;
  memset(t->args, 0, sizeof t->args);
  memcpy(t->args, d->args, d->nargs * sizeof d->args[0]);
  memset(t->lens, 0, sizeof t->lens);
  for (unsigned i = 0; i < d->nargs; i++)
    t->lens[i] = d->lens[i] ? d->lens[i] : coop__arena_len_at(rt, d->args[i]);
  t->deadline = d->deadline_ns > 0 ? (uint64_t)d->deadline_ns : 0;
  hold_window(rt, d, t);
  t->fault = 0;
  t->joined = 0;
  t->kills_taken = t->kill_waits = 0;
  atomic_store_explicit(&t->gate, COOP_GATE_SHUT, memory_order_relaxed);
  t->t_released = t->t_gathered = t->t_started = t->t_finished = 0;
  t->m_initial = t->m_min = t->m_max = t->kills = t->forks = t->resizes = 0;
  atomic_store_explicit(&t->live_m, 0, memory_order_relaxed);
  atomic_store_explicit(&t->live_workers, 0, memory_order_relaxed);
  atomic_store_explicit(&t->live_kills, 0, memory_order_relaxed);
  atomic_store_explicit(&t->live_forks, 0, memory_order_relaxed);
  atomic_store_explicit(&t->cancel, 0, memory_order_relaxed);
  atomic_store_explicit(&t->cap, d->cap, memory_order_relaxed);
  atomic_store_explicit(&t->suspend, 0, memory_order_relaxed);
  if (state) memcpy(t->resume_state, state, sizeof t->resume_state);
  atomic_store_explicit(&t->state, COOP_TS_SUBMITTED, memory_order_release);
  rt->submitted_ns[slot] = coop__now_ns();
  uint32_t w[COOP_RING_WORDS];
  coop__ring_words(w, slot, rt->sub_head, t->kid, t->flags, t->groups, t->deadline,
                   t->hold_to != 0);
  for (unsigned k = 0; k < COOP_RING_WORDS; k++)
    atomic_store_explicit(&rt->mb->ring[rt->sub_head % COOP_RING][k], w[k], memory_order_relaxed);
  rt->sub_head++;
  int e = publish(rt, slot, io, host);
  if (e) { /* nothing published: the entry is overwritten by the next */
    rt->sub_head--;
    atomic_store_explicit(&t->state, COOP_TS_FREE, memory_order_relaxed);
    atomic_store_explicit(&rt->io_state[slot], COOP__IO_NONE, memory_order_relaxed);
    rt->gen[slot]++;
    pthread_mutex_unlock(&rt->lock);
    return e;
  }
  *id = (rt->gen[slot] << 8) | slot;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

static int final_state(uint32_t s) { return s >= COOP_TS_DONE; }

/* coop_rt_wait: spin on the record for the first COOP_WAIT_SPIN_NS (a
 * short task's end is seen within one load of host memory), then sleep,
 * the nap doubling up to COOP_WAIT_NAP_MAX_NS: a long task costs a few
 * thousand wakeups a second at most, and is seen that late at worst. */
#define COOP_WAIT_SPIN_NS 200000L
#define COOP_WAIT_NAP0_NS 10000L
#define COOP_WAIT_NAP_MAX_NS 200000L

int coop_rt_wait(coop_rt *rt, coop_task_id id, int timeout_ms) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t) return COOP_ENOTASK;
  int64_t start = coop__now_ns();
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : start + (int64_t)timeout_ms * 1000000;
  long nap = COOP_WAIT_NAP0_NS;
  while (!final_state(atomic_load_explicit(&t->state, memory_order_acquire))) {
    int64_t now = coop__now_ns();
    if (now > deadline) return COOP_ETIMEDOUT;
    if (now - start < COOP_WAIT_SPIN_NS) continue; /* a short task: seen within a load */
    coop__sleep_ns(nap);
    if (nap < COOP_WAIT_NAP_MAX_NS) nap *= 2;
  }
  return coop__io_finish(rt, SLOT(id), deadline);
}

/* After a request is written in task id's record: the doorbell's
 * cancel_seq moves (release), naming the request (COOP_CTL_*). The
 * scheduler reads records' flags only when it moved, and none at all when
 * it moved by one request that it names: a cancel or a suspension then
 * reaches the channel without a round trip to the record (docs/scheduler.md,
 * step 2). Several threads may ask at once: one compare-and-swap. */
static void doorbell_ctl(coop_rt *rt, coop_task_id id, uint32_t op) {
  uint32_t old = atomic_load_explicit(&rt->mb->cancel_seq, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&rt->mb->cancel_seq, &old,
                                                COOP_CTL_WORD(old, (uint32_t)SLOT(id), op),
                                                memory_order_release, memory_order_relaxed)) {
  }
}

int coop_rt_cancel(coop_rt *rt, coop_task_id id) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t) return COOP_ENOTASK;
  atomic_store_explicit(&t->cancel, 1, memory_order_release);
  doorbell_ctl(rt, id, COOP_CTL_CANCEL);
  return 0;
}

int coop_rt_cap(coop_rt *rt, coop_task_id id, unsigned cap) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t) return COOP_ENOTASK;
  atomic_store_explicit(&t->cap, cap, memory_order_relaxed);
  doorbell_ctl(rt, id, COOP_CTL_CAP); /* the scheduler reads the record's cap then */
  return 0;
}

int coop_rt_suspend(coop_rt *rt, coop_task_id id) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t) return COOP_ENOTASK;
  if (!(t->flags & COOP_TF_COOPERATIVE)) return COOP_EINVAL;
  if (final_state(atomic_load_explicit(&t->state, memory_order_acquire))) return COOP_ESTATE;
  atomic_store_explicit(&t->suspend, 1, memory_order_relaxed);
  doorbell_ctl(rt, id, COOP_CTL_SUSPEND);
  return 0;
}

/* The task that resumes a SUSPENDED record t: its kernel, size, flags and
 * arguments. */
static void resumed_desc(const struct coop_task_rec *t, struct coop_rt_task_desc *d) {
  memset(d, 0, sizeof *d);
  d->kernel = (int)t->kid;
  d->groups = t->groups;
  d->cooperative = 1;
  d->query_barrier = !!(t->flags & COOP_TF_QUERY_BARRIER);
  d->nargs = COOP_MAX_ARGS;
  memcpy(d->args, t->args, sizeof d->args);
  memcpy(d->lens, t->lens, sizeof d->lens);
}

int coop_rt_resume(coop_rt *rt, coop_task_id suspended, coop_task_id *id) {
  struct coop_task_rec *t = rec(rt, suspended);
  if (!t || !id) return t ? COOP_EINVAL : COOP_ENOTASK;
  if (atomic_load_explicit(&t->state, memory_order_acquire) != COOP_TS_SUSPENDED)
    return COOP_ESTATE;
  struct coop_rt_task_desc d;
  resumed_desc(t, &d);
  int r = coop__rt_submit(rt, &d, id, COOP_TF_RESUME, t->resume_state, NULL, 0);
  return r ? r : coop_rt_task_release(rt, suspended);
}

size_t coop_rt_state_bytes(const coop_rt *rt) { return rt ? COOP_RESUME_WORDS * 8 : 0; }

int coop_rt_saved_state(coop_rt *rt, coop_task_id suspended, void *out, size_t len) {
  struct coop_task_rec *t = rec(rt, suspended);
  if (!t || !out) return t ? COOP_EINVAL : COOP_ENOTASK;
  if (len != COOP_RESUME_WORDS * 8) return COOP_EINVAL;
  if (atomic_load_explicit(&t->state, memory_order_acquire) != COOP_TS_SUSPENDED)
    return COOP_ESTATE;
  memcpy(out, t->resume_state, len);
  return 0;
}

int coop_rt_submit_resumed(coop_rt *rt, const struct coop_rt_task_desc *d, const void *state,
                           size_t len, coop_task_id *id) {
  if (!rt || !d || !state || !id || !d->cooperative) return COOP_EINVAL;
  if (len != COOP_RESUME_WORDS * 8) return COOP_EINVAL;
  uint64_t st[COOP_RESUME_WORDS];
  memcpy(st, state, len);
  return coop__rt_submit(rt, d, id, COOP_TF_RESUME, st, NULL, 0);
}

int coop_rt_task_info(coop_rt *rt, coop_task_id id, struct coop_rt_task_info *info) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t || !info) return t ? COOP_EINVAL : COOP_ENOTASK;
  memset(info, 0, sizeof *info);
  uint32_t s = atomic_load_explicit(&t->state, memory_order_acquire);
  info->t_submitted = rt->submitted_ns[SLOT(id)];
  switch (s) {
    case COOP_TS_QUEUED: /* t_released was written before this state (release) */
      info->state = COOP_TASK_PENDING;
      info->t_released = to_ns(rt, t->t_released);
      return 0;
    case COOP_TS_RUNNING: /* and t_gathered before this one */
      info->state = COOP_TASK_RUNNING;
      info->t_released = to_ns(rt, t->t_released);
      info->t_gathered = to_ns(rt, t->t_gathered);
      info->gather_ns = gather_ns(rt, t);
      return 0;
    case COOP_TS_DONE:
      info->state = COOP_TASK_DONE;
      break;
    case COOP_TS_CANCELLED:
      info->state = COOP_TASK_CANCELLED;
      break;
    case COOP_TS_SUSPENDED:
      info->state = COOP_TASK_SUSPENDED;
      break;
    case COOP_TS_REFUSED:
      info->state = COOP_TASK_REFUSED;
      info->refusal = (enum coop_refusal)t->status;
      return 0;
    default:
      info->state = COOP_TASK_PENDING;
      return 0;
  }
#define TO_NS(name) info->t_##name = to_ns(rt, t->t_##name);
  COOP_DEVICE_STAMPS_MAP(TO_NS) /* coop_schema.h */
#undef TO_NS
  info->gather_ns = gather_ns(rt, t);
#define COPY(kind, name, rule) info->name = t->name;
  COOP_COUNTERS_MAP(COPY)
#undef COPY
  info->fault = t->fault;
  info->joined = t->joined;
  info->kills_taken = t->kills_taken;
  info->kill_waits = t->kill_waits;
  return 0;
}

int coop_rt_task_live(coop_rt *rt, coop_task_id id, struct coop_rt_live *l) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t || !l) return t ? COOP_EINVAL : COOP_ENOTASK;
  l->m = atomic_load_explicit(&t->live_m, memory_order_relaxed);
  l->workers = atomic_load_explicit(&t->live_workers, memory_order_relaxed);
  l->kills = atomic_load_explicit(&t->live_kills, memory_order_relaxed);
  l->forks = atomic_load_explicit(&t->live_forks, memory_order_relaxed);
  return 0;
}

int coop_rt_view(coop_rt *rt, coop_task_id *owner, uint8_t *reserved, unsigned n) {
  if (!rt || !rt->mb || !owner || !reserved) return COOP_EINVAL;
  unsigned w = coop_rt_workers(rt);
  if (n > w) n = w;
  pthread_mutex_lock(&rt->lock); /* gen[] */
  for (unsigned i = 0; i < n; i++) {
    uint32_t v = atomic_load_explicit(&rt->mb->wg_view[i + 1], memory_order_relaxed);
    uint32_t slot = (v & ~COOP_VIEW_RESERVED) - 1u;
    owner[i] = v && slot < COOP_RING ? (rt->gen[slot] << 8) | slot : 0;
    reserved[i] = (v & COOP_VIEW_RESERVED) ? 1 : 0;
  }
  pthread_mutex_unlock(&rt->lock);
  return (int)n;
}

/* How long a release waits for a final task's copies out on the device
 * (a few hundred microseconds for megabytes): past it the device is lost */
#define COOP_RELEASE_IO_NS 10000000000ll

int coop_rt_task_release(coop_rt *rt, coop_task_id id) {
  struct coop_task_rec *t = rec(rt, id);
  if (!t) return COOP_ENOTASK;
  if (!final_state(atomic_load_explicit(&t->state, memory_order_acquire))) return COOP_ESTATE;
  /* its copies out done first: the device's wait reads the state word */
  if (coop__io_finish(rt, SLOT(id), coop__now_ns() + COOP_RELEASE_IO_NS) == COOP_ETIMEDOUT)
    return COOP_ETIMEDOUT;
  pthread_mutex_lock(&rt->lock);
  atomic_store_explicit(&rt->io_state[SLOT(id)], COOP__IO_NONE, memory_order_relaxed);
  atomic_store_explicit(&t->state, COOP_TS_FREE, memory_order_relaxed);
  rt->gen[SLOT(id)]++;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

int coop_rt_parked(const coop_rt *rt) { return rt && rt->parked; }

int coop_rt_park(coop_rt *rt) {
  if (!rt || !rt->be) return COOP_EINVAL;
  if (!rt->launched || rt->exited || rt->parked) return COOP_ESTATE;
  pthread_mutex_lock(&rt->lock);
  int busy = 0;
  for (unsigned s = 0; s < COOP_RING; s++) busy |= rt->gen[s] & 1u; /* odd = in use */
  pthread_mutex_unlock(&rt->lock);
  if (busy) return COOP_EBUSY;
  /* The scheduler sees shutdown with nothing queued or running: it releases
   * every worker with EXIT and leaves; the kernel ends. */
  atomic_store_explicit(&rt->mb->shutdown, 1, memory_order_release);
  int r = rt->ops->wait_exit(rt);
  if (r) {
    rt->exited = 1; /* unknown state: only coop_rt_close from here */
    return r;
  }
  rt->parked = 1;
  return 0;
}

int coop_rt_unpark(coop_rt *rt) {
  if (!rt || !rt->be) return COOP_EINVAL;
  if (!rt->parked || rt->exited) return COOP_ESTATE;
  struct coop_mailbox *mb = rt->mb;
  /* The kernel has ended (wait_exit): nothing else touches the mailbox. The
   * scheduler starts from zeroed device memory, so its ring tail is 0 again
   * and so must the host's head be; task records stay (every slot is free),
   * as do ping and pong (the scheduler reads the current ping at start). */
  atomic_store_explicit(&mb->shutdown, 0, memory_order_relaxed);
  atomic_store_explicit(&mb->participants, 0, memory_order_relaxed);
  atomic_store_explicit(&mb->sched_state, 0, memory_order_relaxed);
  atomic_store_explicit(&mb->sub_head, 0, memory_order_relaxed);
  memset((void *)mb->wg_view, 0, sizeof mb->wg_view);
  /* ring entries of the last launch carry the laps its indices reached:
   * index 0 again must not find its old entry taken for a new one */
  memset((void *)mb->ring, 0, sizeof mb->ring);
  rt->sub_head = 0;
  rt->pub_pending = 0; /* every slot free: each task's publication landed */
  /* Launch just the participants the first discovery found: when all of
   * them join, the poll closes at once instead of after a window with no
   * newcomer (PoCL: 200 ms against 2 ms). Fewer may join (the device is
   * shared): discovery's window still decides, as at the first launch. */
  int r = 0;
  unsigned groups = rt->participants;
  if (rt->reshape) { /* a new program (coop_rt_next_swap): its own shape */
    unsigned was = rt->launch_groups;
    rt->reshape = 0;
    if (!rt->launch_fixed) rt->launch_groups = 0;
    r = launch_shape(rt);
    /* the same shape holds the same participants; another is discovered
     * afresh, its window included */
    if (rt->launch_groups != was) groups = rt->launch_groups;
  }
  if (r == 0) r = rt->ops->alloc_dev(rt, sizeof(struct coop_dev));
  if (r == 0) r = discovery_open(rt, groups);
  if (r == 0) r = rt->ops->launch(rt, mb->launched, rt->local_size);
  if (r == 0) r = discover(rt);
  rt->parked = 0; /* on failure too: coop_rt_close then stops what did start */
  if (r) return r;
  return 0;
}

int coop_rt_close(coop_rt *rt) {
  if (!rt) return 0;
  int r = 0;
  if (rt->launched && !rt->exited && !rt->parked) {
    atomic_store_explicit(&rt->mb->shutdown, 1, memory_order_release);
    /* discovery may still be waiting for the host: let it finish */
    atomic_store_explicit(&rt->mb->disc_close, 1, memory_order_release);
    r = rt->ops->wait_exit(rt);
    rt->exited = 1;
  }
  if (rt->be) {
    coop__shares_fini(rt); /* the megakernel is gone: nothing waits */
    if (rt->mb) coop__io_close(rt);
    coop__host_bufs_free(rt); /* after the copies queued into them */
    rt->ops->free_shared(rt, rt->mb);
    if (rt->zone) rt->ops->free_zone(rt, rt->zone);
    if (rt->ops->free_arena)
      rt->ops->free_arena(rt, rt->arena);
    else
      rt->ops->free_shared(rt, rt->arena);
    rt->ops->close(rt);
  }
  coop__host_bufs_free(rt); /* without a backend: malloc's only */
  coop__arena_fini(rt);
  for (int i = 0; i < rt->nkernels; i++) free(rt->kernels[i].source);
  pthread_mutex_destroy(&rt->lock);
  free(rt);
  return r;
}
