/*
 * dev_warm.c: warm ahead, the device thread's side (docs/daemon.md,
 * "Spinning").
 *
 * A frame loop's next task is expected at j->next_ns (gathering ahead's
 * guess, sess_jobs.c): 16 ms after this one, when every thread on its path
 * sleeps, and a GPU's path then wakes four of them in turn (the loop, this
 * thread, the device process, the loop again), hundreds of microseconds in
 * all on a VM where a warm path takes tens (bench/RESULTS.md, "Idle spins
 * on the daemon path"). So from DEV_WARM_SPINS idle spins before that
 * time, and before the frame's first request where that comes sooner
 * (j->next_lead_ns: its buffer write), to as many idle spins after it,
 * this thread spins instead of sleeping, keeps the device process spinning
 * (dp_set_warm, and a request if none is due), and the loop spins too
 * (loopspin_at, armed by the loop from the same guess). After a frame off
 * the loop's grid the window covers both guesses, the grid's and a phase
 * step's (cadence.h, alt; at most a quarter period apart): the first frame
 * after a step came cold, 0.46-0.72 ms where a warm one takes 0.36
 * (bench/RESULTS.md, "A frame loop's phase moved"). A wrong guess costs
 * one window of spinning.
 *
 * The wakes that begin a window (the loop's timerfd, this thread's timed
 * wait or a DP_WAIT whose budget ends there) are late on a VM: on an
 * H200's, beside bfs, up to 1.3 ms, 163-1173 us at p99 for this thread's
 * pass, and a window opened only DEV_WARM_SPINS idle spins ahead began
 * after its frame's SUBMIT was due in 10 frames of 1137. So it opens
 * [device] warm_early_us (1 ms) earlier still (bench/RESULTS.md, "A
 * frame's window opened ahead of a late wake").
 *
 * Each frame loop (its client's connection: one process may run many) has
 * a window of its own (struct dev_warm, DEV_WARM_MAX a device,
 * DEV_WARM_PER_UID a uid), as the
 * loop's side has (loopspin.c): with one window a device, each frame's end
 * replaced the window another loop's frame was waiting for, before it
 * opened, so that of two loops on one device neither had a warm frame
 * (test two_frame_loops_each_have_their_window). Which loop may have
 * windows at all, and how many, is its user's share (users.c). Device
 * thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "coop_util.h"
#include "dev_internal.h"
#include "devproc.h"
#include "log.h"

#define DEV_WARM_SPINS 2
int dev_warm_window(const struct dev *d, int64_t next_ns, int64_t alt_ns, int64_t lead_ns,
                    int64_t *from, int64_t *to) {
  int64_t spin = atomic_load_explicit(&d->idle_spin_ns, memory_order_relaxed);
  if (!spin || !next_ns) return 0;
  int64_t first = alt_ns && alt_ns < next_ns ? alt_ns : next_ns;
  int64_t last = alt_ns > next_ns ? alt_ns : next_ns;
  *from = first - lead_ns - DEV_WARM_SPINS * spin - (int64_t)d->cfg->warm_early_us * 1000;
  *to = last + DEV_WARM_SPINS * spin;
  return 1;
}

static dev_window_hook window_hook; /* dev_set_window_hook: set once, before any device thread */

void dev_set_window_hook(dev_window_hook hook) { window_hook = hook; }

/* What the path's dry run reads of job j (dev__warm_path), copied into w:
 * its fields fixed before dev_submit and its arguments (the device
 * thread's own fields of them with them), each pointer cleared. The rest
 * stays zero: the copy is no job anyone holds. */
static void keep_job(struct dev_warm *w, const struct job *j) {
  if (!w->job && !(w->job = malloc(sizeof *w->job))) return;
  struct job *c = w->job;
  memset(c, 0, sizeof *c);
  c->id = j->id;
  c->uid = j->uid;
  c->pid = j->pid;
  c->conn = j->conn;
  c->kernel_index = j->kernel_index;
  memcpy(c->kernel, j->kernel, sizeof c->kernel);
  c->flags = j->flags;
  c->views = j->views;
  c->groups = j->groups;
  c->period_us = j->period_us;
  c->count = j->count;
  c->duration_ms = j->duration_ms;
  c->deadline_us = j->deadline_us;
  c->priority = j->priority;
  c->nargs = j->nargs;
  for (unsigned i = 0; i < j->nargs; i++) {
    c->args[i] = j->args[i];
    c->args[i].data = NULL;
    c->args[i].devbuf = NULL;
    c->args[i].io_ref = NULL;
  }
}

static int same_loop(const struct dev_warm *w, const struct job *j) {
  return w->until && w->conn == j->conn;
}

/* The entry for j's loop's window beginning at `from`: its own, else a
 * free one, else, where j's user has DEV_WARM_PER_UID already, the one of
 * them that begins last, else the one that begins last if after `from`;
 * NULL: none for j (every entry is another loop's, due sooner). */
static struct dev_warm *warm_slot(struct dev *d, const struct job *j, int64_t from) {
  struct dev_warm *free = NULL, *mine = NULL, *latest = NULL;
  unsigned of_uid = 0;
  for (struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++) {
    if (same_loop(w, j)) return w;
    if (!w->until) {
      if (!free) free = w;
      continue;
    }
    if (w->uid == j->uid && (of_uid++, !mine || w->from > mine->from)) mine = w;
    if (!latest || w->from > latest->from) latest = w;
  }
  if (of_uid >= DEV_WARM_PER_UID) return mine;
  if (free) return free;
  return latest && latest->from > from ? latest : NULL;
}

void dev__warm_arm(struct dev *d, const struct job *j) {
  int64_t from, until;
  if (!j->next_ns || j->no_warm ||
      !dev_warm_window(d, j->next_ns, j->next_alt_ns, j->next_lead_ns, &from, &until))
    return;
  struct dev_warm *w = warm_slot(d, j, from);
  if (!w) {
    log_debug("%s: no warm window for job %llu's next frame: the device's are other loops'",
              d->logname, (unsigned long long)j->id);
    return;
  }
  w->from = from;
  w->until = until;
  w->uid = j->uid;
  w->conn = j->conn;
  w->on = 0;
  keep_job(w, j);
  log_debug(
      "%s: a warm window armed for the next frame, from %.0f us before it (%.0f us before "
      "its start)",
      d->logname, (double)(j->next_ns - from) / 1e3,
      (double)(j->next_ns - j->next_lead_ns - from) / 1e3);
}

/* Window w has begun (now): the device process told, the path run dry. */
static void warm_begin(struct dev *d, struct dev_warm *w, int64_t now) {
  w->on = 1;
  if (window_hook) window_hook((int)d->place, w->from, now);
  log_debug("%s: warm ahead of the next frame, for %.0f us", d->logname,
            (double)(w->until - now) / 1e3);
  if (d->runs) return; /* the next DP_WAIT carries the window */
  /* nothing due: the device process, likely asleep in recvmsg, learns of
   * the window only if told (dp_wake: through the shared channel, without
   * waiting for its wake-up, which took 150-250 us on an H200). Without it
   * it learned of the window from the frame's own request, and an idle
   * device's frame paid that process's wake-up and a cold copy engine:
   * 130-160 us where 20-25 was warm (bench/RESULTS.md, "The device process
   * woken for a frame's window") */
  if (dp_wake(d->rt) == 0) log_debug("%s: the device process told of the window", d->logname);
  if (w->job && dev__warm_path(d, w->job))
    log_debug("%s: the next frame's path run dry, as far as its request", d->logname);
}

/* The pass's part: a window over is dropped, the next wake is no later
 * than the first window's start, and inside any window everything spins
 * until the last open one's end (dp_set_warm carries that end). */
void dev__warm_ahead(struct dev *d, int64_t now, int64_t *wake) {
  if (!d->rt) return;
  int64_t open_until = 0;
  for (struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++) {
    if (!w->until) continue;
    if (now >= w->until) { /* over (its job's copy kept for the entry's next loop) */
      w->until = 0;
      w->on = 0;
      continue;
    }
    if (now < w->from) {
      if (w->from < *wake) *wake = w->from;
      continue;
    }
    if (w->until > open_until) open_until = w->until;
  }
  /* the device process spins to the last open end, or sleeps; one started
   * since (a restart, a reload's) is told afresh */
  if (open_until != d->warm_told || d->rt != d->warm_rt) {
    d->warm_told = open_until;
    d->warm_rt = d->rt;
    dp_set_warm(d->rt, open_until);
  }
  if (!open_until) return;
  if (open_until < *wake) *wake = open_until;
  if (d->spin_until < open_until) d->spin_until = open_until;
  for (struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++)
    if (w->until && !w->on && now >= w->from) warm_begin(d, w, now);
}

void dev__warm_due(const struct dev *d, int64_t now, int64_t *wake) {
  for (const struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++)
    if (w->until && now < w->from && w->from < *wake) *wake = w->from;
}

int64_t dev__warm_within(const struct dev *d, int64_t a, int64_t b, int64_t *from) {
  const struct dev_warm *first = NULL;
  for (const struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++)
    if (w->until && w->until > a && w->from < b && (!first || w->from < first->from)) first = w;
  if (!first) return 0;
  if (from) *from = first->from;
  return first->until;
}

void dev__warm_free(struct dev *d) {
  for (struct dev_warm *w = d->warm; w < d->warm + DEV_WARM_MAX; w++) {
    free(w->job);
    w->job = NULL;
    w->until = 0;
  }
}
