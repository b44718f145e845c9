/*
 * device.h: the device thread. It alone owns the coop runtime (the
 * megakernel): it submits jobs' tasks, releases periodic instances on time,
 * polls for completions, copies buffers in and out, and hands finished jobs
 * back to the loop through a uv_async, so device work never blocks the
 * loop.
 */
#ifndef COOPD_DEVICE_H
#define COOPD_DEVICE_H

#include <uv.h>

#include "config.h"
#include "coop_rt.h"
#include "job.h"
#include "kernels.h"

struct dev;

/* Opens the device, registers the kernels, launches the megakernel (in the
 * calling thread, before the loop runs). on_done runs on the loop thread
 * for each job handed back. Returns 0 or a coop_errno with a message. */
int dev_open(struct dev **d, const struct config *c, const struct kset *ks, uv_loop_t *loop,
             void (*on_done)(struct job *j, void *user), void *user, char *err, size_t errlen);
int dev_start(struct dev *d);
/* Opens the configured device and builds (does not launch) a megakernel of
 * the kernels in ks. Blocking, thread-safe, and possible while another
 * megakernel runs: coopd calls it from a libuv work thread on SIGHUP. */
int dev_build(const struct config *c, const struct kset *ks, coop_rt **rt, char *err,
              size_t errlen);
/* Reload: drains the running megakernel (new jobs wait; running ones get
 * grace_ms, then are cancelled), closes it and launches `next` (built from
 * ks by dev_build; dev takes it). ks must stay alive until the next swap.
 * on_swapped(0 or error, message) runs on the loop when done; on error the
 * previous kernels run again (rebuilt), or the device is marked unavailable.
 * COOP_ESTATE if a swap is in progress or the device is stopping. */
int dev_swap(struct dev *d, coop_rt *next, const struct kset *ks, unsigned grace_ms,
             void (*on_swapped)(int err, const char *msg, void *user));
void dev_submit(struct dev *d, struct job *j);
void dev_cancel(struct dev *d, struct job *j);
/* Stop: running jobs get grace_ms to finish, then are cancelled; queued
 * ones are cancelled at once. Every job is handed back; then the runtime
 * closes and on_stopped runs on the loop. */
void dev_stop(struct dev *d, unsigned grace_ms, void (*on_stopped)(void *user));
/* Frees after on_stopped. */
void dev_free(struct dev *d);

const char *dev_name(const struct dev *d);
unsigned dev_compute_units(const struct dev *d);
unsigned dev_workers(const struct dev *d);
/* A job's kernel_index is recomputed by the device thread from its kernel
 * name when the job starts: the runtime registers a kset in its order. */

#endif /* COOPD_DEVICE_H */
