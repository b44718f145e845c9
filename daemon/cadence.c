/*
 * cadence.c: a frame loop's period and grid (cadence.h).
 */
#include "cadence.h"

#include <stdlib.h>

static int agree(int64_t a, int64_t b) { return b > 0 && llabs(a - b) * 8 <= b; }

/* The grid point nearest `now`, counting skipped frames; 0 when it is
 * more than CADENCE_MAX_SKIP periods past the one due. */
static int64_t nearest_point(const struct cadence *c, int64_t now) {
  int64_t late = now - c->grid;
  if (late <= c->period / 2) return c->grid;
  int64_t n = (late + c->period / 2) / c->period; /* periods past the due point */
  return n > CADENCE_MAX_SKIP ? 0 : c->grid + n * c->period;
}

/* How far off its grid point a frame may come and still count as on it
 * for a phase step and for the other guess (cadence.h, alt): 1/64 of the
 * period, 0.26 ms at 60 fps. */
static int64_t step_tol(const struct cadence *c) { return c->period / 64; }

/* Whether frame `now`, `err` from its grid point, shows that the loop
 * stepped its phase: it came one period after the last frame (within
 * 1/64), and both were off their points by more than that, the same way.
 * A loop that keeps its rate and moves its phase (a frame clock restarted
 * from a late frame's end, a new vsync lock, coop-bench-side's check frame
 * at a window's start) would otherwise be followed by a quarter of the
 * step a frame, and the period moved by a sixteenth: at 60 fps a step of
 * 2 ms had the frames after it expected up to 0.85 ms late and then up to
 * 0.7 ms early for six frames, past their warm windows (bench/RESULTS.md,
 * "A frame loop's phase moved"). Jitter seldom gives two such frames in a
 * row, and a jump there costs no more than the jitter. */
static int stepped(const struct cadence *c, int64_t now, int64_t err) {
  int64_t tol = step_tol(c);
  return llabs(now - c->at - c->period) <= tol && llabs(err) > tol && llabs(c->err) > tol &&
         (err < 0) == (c->err < 0);
}

/* With a period known: the frame is on the grid or off it; returns the
 * next frame's due point, or 0 when the grid is dropped. */
static int64_t on_grid(struct cadence *c, int64_t now) {
  int64_t point = nearest_point(c, now);
  if (!point) return 0;
  int64_t err = now - point;
  if (stepped(c, now, err)) { /* the grid moves to the frames: the step was no rate error */
    c->period -= c->dperiod;
    c->dperiod = c->err = 0;
    c->off = 0;
    return now + c->period;
  }
  c->err = err;
  c->dperiod = 0;
  /* off: either a hiccup (the next on the grid) or the first frame of a
   * step (the next a period after it), not known until the next comes */
  if (llabs(err) > step_tol(c)) c->alt = now + c->period;
  if (llabs(err) * 8 <= c->period) {
    c->off = 0;
    c->dperiod = err / 16; /* the period too: a learned one is off by its intervals' jitter */
    c->period += c->dperiod;
    return point + err / 4 + c->period;
  }
  if (++c->off >= 2) return 0;
  return point + c->period; /* one late (or early) frame: the next is still due on the grid */
}

int64_t cadence_arrive(struct cadence *c, int64_t now, int same) {
  c->alt = 0;
  if (!same || !c->at || now <= c->at) {
    *c = (struct cadence){.at = now};
    return 0;
  }
  int64_t gap = now - c->at;
  /* two intervals that agree with each other but not with the period: the
   * loop changed its rate (or now skips every other frame) */
  if (c->period && agree(gap, c->interval) && !agree(gap, c->period)) c->period = 0;
  int64_t next = c->period ? on_grid(c, now) : 0;
  if (!next) { /* none known, or just dropped: two agreeing intervals make one */
    c->period = c->dperiod = c->err = 0;
    c->off = 0;
    if (gap >= CADENCE_MIN_NS && gap <= CADENCE_MAX_NS && agree(gap, c->interval)) {
      c->period = gap;
      next = now + gap;
    }
  }
  if (!next || llabs(c->alt - next) * 4 > c->period) c->alt = 0;
  c->grid = next;
  c->interval = gap;
  c->at = now;
  return next;
}

int64_t cadence_frame_start(int64_t burst_at, int64_t now, int64_t max_lead, int64_t *lead) {
  if (burst_at <= 0 || burst_at > now || now - burst_at >= max_lead) {
    *lead = 0;
    return now;
  }
  *lead = now - burst_at;
  return burst_at;
}
