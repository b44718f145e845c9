/*
 * cuda_io.h: the CUDA backend's copies ordered with a task (backend.h,
 * queue_io and io_drain; megakernel/io.c says what they are for), for
 * cuda.c: its own streams and state, made at the first task that has
 * copies, in the backend's context.
 */
#ifndef COOP_CUDA_IO_H
#define COOP_CUDA_IO_H

#include "cuda_loader.h"

struct coop_rt;
struct coop__io_plan;
struct cu_io;

/* As backend.h's queue_io, *io made at the first call (in ctx, current). */
int coop__cu_queue_io(struct coop_rt *rt, struct cu_io **io, const struct coop__io_plan *p);
/* As io_drain: every queued copy done; then, with done, *io let go. */
void coop__cu_io_drain(struct cu_io **io, int done);

#endif /* COOP_CUDA_IO_H */
