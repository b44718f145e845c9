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
#include "job.h"
#include "kernels.h"

struct dev;

/* Opens the device, registers the kernels, launches the megakernel (in the
 * calling thread, before the loop runs). on_done runs on the loop thread
 * for each job handed back. Returns 0 or a coop_errno with a message. */
int dev_open(struct dev **d, const struct config *c, const struct kset *ks, uv_loop_t *loop,
             void (*on_done)(struct job *j, void *user), void *user, char *err, size_t errlen);
int dev_start(struct dev *d);
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
/* A job's kernel_index is the kernel's position in the kset given to
 * dev_open: the runtime registers them in that order. */

#endif /* COOPD_DEVICE_H */
