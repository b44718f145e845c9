/*
 * rebuild.c: rebuilding in place (coop_rt.h, coop_rt_next_*;
 * docs/scheduler.md, "Rebuilding in place").
 *
 * A new kernel set for a runtime that runs: compiled beside its megakernel
 * (on any thread: the backend's build_next touches nothing the megakernel
 * uses and loads nothing into the device's context), then, once the
 * megakernel is parked, swapped in. The context, the arena with every
 * buffer in it, the task slots and the clock fit stay; only the program
 * and the kernel table change, and the next unpark launches the new
 * program at the shape it allows. Where a new process would build instead
 * (a second context on a GPU), its context and build take time slices
 * from the running megakernel, and the buffers of the jobs it carries
 * must be copied across.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct coop_rt_next {
  struct coop__kernel kernels[COOP_MAX_KERNELS];
  int nkernels;
  void *built; /* the backend's (build_next), NULL until built */
  char msg[16384];
};

int coop_rt_next_open(coop_rt *rt, coop_rt_next **out) {
  if (!out) return COOP_EINVAL;
  *out = NULL;
  if (!rt || !rt->be) return COOP_EINVAL;
  if (!rt->ops->build_next) return COOP_ESTATE; /* a backend that cannot */
  *out = calloc(1, sizeof **out);
  return *out ? 0 : COOP_ENOMEM;
}

int coop_rt_next_add_kernel(coop_rt_next *n, const char *name, int cooperative,
                            const char *source) {
  if (!n) return COOP_EINVAL;
  if (n->built) return COOP_ESTATE;
  return coop__kernel_add(n->kernels, &n->nkernels, name, cooperative, source);
}

const char *coop_rt_next_errmsg(const coop_rt_next *n) { return n ? n->msg : "no next build"; }

int coop_rt_next_kernel_index(const coop_rt_next *n, const char *name) {
  for (int i = 0; n && name && i < n->nkernels; i++)
    if (strcmp(n->kernels[i].name, name) == 0) return i;
  return COOP_ENOKERNEL;
}

int coop_rt_next_build(coop_rt *rt, coop_rt_next *n) {
  if (!rt || !rt->be || !n) return COOP_EINVAL;
  if (n->built) return 0;
  if (n->nkernels == 0) {
    snprintf(n->msg, sizeof n->msg, "no kernel registered");
    return COOP_EINVAL;
  }
  int r = coop__kernels_check(n->kernels, n->nkernels, n->msg, sizeof n->msg);
  if (r) return r;
  char *src = coop__assemble_kernels(n->kernels, n->nkernels);
  if (!src) return COOP_ENOMEM;
  r = rt->ops->build_next(rt, src, &n->built, n->msg, sizeof n->msg);
  free(src);
  return r;
}

int coop_rt_next_swap(coop_rt *rt, coop_rt_next *n) {
  if (!rt || !rt->be || !n) return COOP_EINVAL;
  if (!n->built || !rt->parked || rt->exited) return COOP_ESTATE;
  /* a record in use names a kernel by its index in the old table */
  pthread_mutex_lock(&rt->lock);
  int busy = 0;
  for (unsigned s = 0; s < COOP_RING; s++) busy |= rt->gen[s] & 1u; /* odd = in use */
  pthread_mutex_unlock(&rt->lock);
  if (busy) return COOP_EBUSY;
  rt->ops->swap_next(rt, n->built);
  for (int i = 0; i < rt->nkernels; i++) free(rt->kernels[i].source);
  memcpy(rt->kernels, n->kernels, sizeof rt->kernels);
  rt->nkernels = n->nkernels;
  memset(rt->width_made, 0, sizeof rt->width_made); /* lone builds of the old table's */
  rt->reshape = 1;
  free(n);
  return 0;
}

void coop_rt_next_free(coop_rt *rt, coop_rt_next *n) {
  if (!n) return;
  if (n->built && rt && rt->ops && rt->ops->free_next) rt->ops->free_next(rt, n->built);
  for (int i = 0; i < n->nkernels; i++) free(n->kernels[i].source);
  free(n);
}
