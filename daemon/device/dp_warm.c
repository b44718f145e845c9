/*
 * dp_warm.c: see dp_warm.h.
 */
#include "dp_warm.h"

void dp_warm_note(struct dp_warm *w, uint64_t dev, uint64_t ino, const struct dp_buf_entry *b,
                  unsigned n) {
  w->dev = dev;
  w->ino = ino;
  w->n = n < DP_MAX_BUFS ? n : DP_MAX_BUFS;
  for (unsigned i = 0; i < w->n; i++)
    w->r[i] = (struct dp_warm_range){b[i].off, b[i].size, b[i].owner, b[i].in, b[i].out};
}

unsigned dp_warm_plan(const struct dp_warm *w, struct xmap *x, int in, int first, int64_t now,
                      struct dp_warm_read *out) {
  size_t most = first ? DP_WARM_WHOLE_MAX : DP_WARM_TOUCH;
  unsigned k = 0;
  for (unsigned i = 0; i < w->n; i++) {
    const struct dp_warm_range *r = &w->r[i];
    if (!(in ? r->in : r->out) || !r->size) continue;
    /* found again each time: a clear (the megakernel parked) unmaps it */
    uint8_t *m = xmap_find(x, (dev_t)w->dev, (ino_t)w->ino, r->off, r->size, now, r->owner);
    if (!m) continue;
    out[k++] = (struct dp_warm_read){m + r->off, r->size < most ? (size_t)r->size : most};
  }
  return k;
}
