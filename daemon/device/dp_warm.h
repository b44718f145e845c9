/*
 * dp_warm.h: what a copy warm-up in the device process reads
 * (docs/daemon.md, "Spinning"). Inside a frame's warm window the device
 * process has the copy engine move a few bytes every DP_COPY_WARM_NS, so
 * that the frame's copies do not pay the engine's wake-up after 16 ms
 * idle (devproc_child.c, copy_warm). Which pages those bytes come from
 * matters too: on an H200 a cold 272 KB copy into device memory took
 * 20-23 us p50 after 64 bytes from its own first page 100 us before it,
 * 26-28 after 64 bytes from other pages (the runtime's own, as before),
 * 16 after its whole range (bench/RESULTS.md, "A warm-up from the
 * frame's own pages"). So a warm-up reads the last frame's ranges,
 * as DP_SUBMIT_IO named them, where their file is still mapped and
 * pinned here (xmap.h): the window's first warm-up the ranges whole (up to
 * DP_WARM_WHOLE_MAX in all, DP_WARM_TOUCH bytes of each past it: a few
 * hundred microseconds before the frame, the engine is not to be busy
 * with them when the frame's copy comes), later ones DP_WARM_TOUCH bytes
 * of each, which keeps a warm-up from holding the engine then.
 * Reads only: the runtime copies them into memory of its own
 * (coop_rt_copy_warm_from); the client's file is never written.
 * Single-threaded (the device process's one thread).
 */
#ifndef COOPD_DP_WARM_H
#define COOPD_DP_WARM_H

#include <stddef.h>
#include <stdint.h>

#include "devproc_msg.h" /* struct dp_buf_entry, DP_MAX_BUFS */
#include "xmap.h"

#define DP_WARM_WHOLE_MAX (1u << 20) /* coop_rt_copy_warm_from's most */
#define DP_WARM_TOUCH 64u

/* The last frame's ranges as DP_SUBMIT_IO named them: its file's
 * identity, and each range (off, size, owner, in, out are read). */
struct dp_warm {
  uint64_t dev, ino;
  unsigned n;
  struct dp_buf_entry r[DP_MAX_BUFS];
};

/* What one warm-up reads: bytes at p, in the file's pinned mapping. */
struct dp_warm_read {
  const uint8_t *p;
  size_t bytes;
};

/* Notes DP_SUBMIT_IO's ranges (n of b, of the file dev, ino). */
void dp_warm_note(struct dp_warm *w, uint64_t dev, uint64_t ino, const struct dp_buf_entry *b,
                  unsigned n);
/* The reads of one warm-up of the noted ranges of way `in` (1: in, 0:
 * out), the window's first (`first`: whole) or a later one, into out (at
 * most DP_MAX_BUFS): how many. 0 when none is noted or their file is no
 * longer mapped in x (then the runtime's own bytes serve). */
unsigned dp_warm_plan(const struct dp_warm *w, struct xmap *x, int in, int first, int64_t now,
                      struct dp_warm_read *out);

#endif /* COOPD_DP_WARM_H */
