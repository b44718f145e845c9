/*
 * cadence.h: a frame loop's period, learned from when its tasks arrive.
 * A renderer submits one task per frame with fresh input, and says
 * nothing of when the next comes; the scheduler holds workgroups free
 * from just before the next frame if it knows (docs/scheduler.md,
 * "Gathering ahead"). Two intervals within 1/8 of each other, between
 * 1 ms and 1 s, are taken as a period; from then on the frames are
 * expected on a grid, one period apart, so that a frame that comes late
 * (a client's hiccup) or not at all (a skipped frame) does not lose the
 * period: the one after it is still expected on the grid. The grid
 * follows the arrivals by a quarter of each on-grid frame's error, and
 * the period by a sixteenth of it (a second-order loop, stable: its
 * error shrinks by about 0.87 a frame). Without the second, a period
 * learned from two intervals kept their jitter: off by d, the grid ran
 * 4 d behind the frames, 0.4 to 0.8 ms on a GPU where the warm window
 * before a frame is 0.4 ms (bench/RESULTS.md, "Where a frame's write
 * waits"). Two frames in a row off the grid the same way, one period
 * apart (within 1/64), move the grid to them at once: the loop stepped
 * its phase, not its rate. Two frames in a row off the grid by more than
 * 1/8 of the period otherwise, a pause of more than CADENCE_MAX_SKIP periods,
 * or two intervals that agree with each other but not with the period (a
 * new rate) drop it, and two agreeing intervals learn it again. Pure
 * arithmetic on CLOCK_MONOTONIC nanoseconds: no clock read here.
 */
#ifndef COOPD_CADENCE_H
#define COOPD_CADENCE_H

#include <stdint.h>

#define CADENCE_MIN_NS 1000000LL    /* shorter intervals are no frame loop's */
#define CADENCE_MAX_NS 1000000000LL /* nor longer ones */
#define CADENCE_MAX_SKIP 4          /* frames that may be skipped on the grid */

struct cadence {
  int64_t at;       /* the last arrival, or 0 */
  int64_t interval; /* the interval before it, or 0 */
  int64_t period;   /* the learned period, or 0 */
  int64_t grid;     /* when the next frame is due on the grid (period != 0) */
  int64_t err;      /* the last frame's arrival less its grid point */
  int64_t dperiod;  /* the period's change at that frame */
  unsigned off;     /* frames in a row off the grid */
  int64_t alt;      /* after a frame off the grid: when the next comes if that one
                     * stepped the loop's phase (the grid's guess being the hiccup's),
                     * or 0 (on the grid, or the two further apart than a quarter
                     * period): the warm window covers both (docs/daemon.md) */
};

/* A frame arrived at `now`; `same` is 0 when it is not like the last (its
 * kernel, size or device differ): the cadence starts again. Returns when
 * the next is expected, or 0 when no period is known; c->alt the other
 * guess, if any. */
int64_t cadence_arrive(struct cadence *c, int64_t now, int same);

/* The start of a frame whose task arrives at `now`: its burst's first
 * request (burst_at: a buffer write before the SUBMIT, sess_jobs.c) when
 * that came at most max_lead before, else `now`; *lead the start -> now.
 * The cadence runs on starts: they follow the client's clock, where a
 * SUBMIT's arrival also moves with how long its frame's write took. */
int64_t cadence_frame_start(int64_t burst_at, int64_t now, int64_t max_lead, int64_t *lead);

#endif
