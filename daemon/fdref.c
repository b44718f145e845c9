/*
 * fdref.c: see fdref.h.
 */
#include "fdref.h"

#include <stdlib.h>

struct fdref *fdref_new(int fd) {
  struct fdref *r = malloc(sizeof *r);
  if (!r) return NULL;
  atomic_init(&r->refs, 1);
  r->fd = fd;
  return r;
}

void fdref_hold(struct fdref *r) {
  /* relaxed: the holder's own reference keeps r alive meanwhile */
  atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

int fdref_drop(struct fdref *r) {
  if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1) return -1;
  int fd = r->fd;
  free(r);
  return fd;
}
