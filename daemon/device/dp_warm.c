/*
 * dp_warm.c: see dp_warm.h.
 */
#include "dp_warm.h"

#include <string.h>

void dp_warm_note(struct dp_warm *w, uint64_t dev, uint64_t ino, const struct dp_buf_entry *b,
                  unsigned n) {
  w->dev = dev;
  w->ino = ino;
  w->n = n < DP_MAX_BUFS ? n : DP_MAX_BUFS;
  memcpy(w->r, b, w->n * sizeof *b);
}

unsigned dp_warm_plan(const struct dp_warm *w, struct xmap *x, int in, int first, int64_t now,
                      struct dp_warm_read *out) {
  size_t left = first ? DP_WARM_WHOLE_MAX : 0; /* the whole reads', over all ranges */
  unsigned k = 0;
  for (unsigned i = 0; i < w->n; i++) {
    const struct dp_buf_entry *r = &w->r[i];
    if (!(in ? r->in : r->out) || !r->size) continue;
    /* found again each time: a clear (the megakernel parked) unmaps it */
    uint8_t *m = xmap_find(x, (dev_t)w->dev, (ino_t)w->ino, r->off, r->size, now, r->owner);
    if (!m) continue;
    size_t most = left > DP_WARM_TOUCH ? left : DP_WARM_TOUCH; /* a few bytes past the whole's */
    size_t n = r->size < most ? (size_t)r->size : most;
    left -= n < left ? n : left;
    out[k++] = (struct dp_warm_read){m + r->off, n};
  }
  return k;
}
