/*
 * test_cadence.c: a frame loop's period and grid (daemon/cadence.h;
 * docs/daemon.md, "Device buffers", a frame loop). Arrival times are made
 * up here, so every case is exact: a steady loop is expected from its
 * third frame on; a late frame, a skipped one, jitter and a slow drift
 * keep the period, and a period learned off is corrected; a moved phase
 * moves the grid, and a frame off the grid names the other guess (never
 * more than a quarter period from the grid's); two frames off the grid not
 * a period apart, a long pause, a new rate or another kernel drop it; a
 * loop that is no loop is never expected.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "cadence.h"
#include "check_run.h"

#define MS 1000000LL
#define T0 (5000 * MS) /* any CLOCK_MONOTONIC time but 0 */

/* Frames arriving at `at` (ms after T0); next[i] what the cadence expected
 * after frame i, in ns. */
static void arrive_all(struct cadence *c, const double *at, int n, int64_t *next) {
  for (int i = 0; i < n; i++) next[i] = cadence_arrive(c, T0 + (int64_t)(at[i] * MS), 1);
}

/* within 1/8 of a 100 ms period of where the next frame comes */
static int expects(int64_t next, double at_ms) {
  return next && llabs(next - (T0 + (int64_t)(at_ms * MS))) * 8 <= 100 * MS;
}

/* A period learned from two intervals carries their jitter: here 100.5
 * ms for a 100 ms loop. The grid follows the frames by a quarter of each
 * error and the period by a sixteenth: within 20 frames the next frame is
 * expected within 0.25 ms. With the period fixed, the grid ran 4 x 0.5 =
 * 2 ms behind the frames for ever, and a warm window opened 0.4 ms before
 * the expected frame came after it (bench/RESULTS.md, "Where a frame's
 * write waits"). */
START_TEST(a_period_learned_off_by_its_jitter_is_corrected) {
  enum { N = 40 };
  struct cadence c = {0};
  double at[N];
  int64_t next[N];
  at[0] = 0, at[1] = 100.3, at[2] = 200.8; /* intervals 100.3 and 100.5 */
  for (int i = 3; i < N; i++) at[i] = 100.0 * i;
  arrive_all(&c, at, N, next);
  for (int i = 2; i < N - 1; i++) ck_assert_msg(next[i], "frame %d: none expected", i);
  for (int i = 20; i < N - 1; i++) {
    double off = (double)(next[i] - (T0 + (int64_t)(at[i + 1] * MS))) / MS;
    ck_assert_msg(off > -0.25 && off < 0.25, "frame %d: the next expected %+.3f ms from it", i,
                  off);
  }
}
END_TEST

/* The cadence runs on frames' starts (cadence_frame_start), not their
 * SUBMITs. A frame loop on a 100 ms grid whose SUBMIT comes 0.08 or 0.45
 * ms after its buffer write (a GPU's write with coopd's threads warm or
 * asleep), in no order: the next frame's start is expected within 0.25
 * ms, where a grid of the SUBMITs was off by up to the leads' difference
 * and the warm window before the next write (0.4 ms) missed it. A burst
 * that began too long before (a stale one) is no frame's start. */
START_TEST(frames_are_expected_by_their_starts) {
  enum { N = 30 };
  static const double lead_ms[N] = {0.08, 0.45, 0.45, 0.08, 0.45, 0.08, 0.08, 0.08, 0.45, 0.45,
                                    0.08, 0.45, 0.08, 0.45, 0.45, 0.45, 0.08, 0.08, 0.45, 0.08,
                                    0.45, 0.08, 0.08, 0.45, 0.45, 0.08, 0.45, 0.08, 0.08, 0.45};
  struct cadence c = {0};
  for (int i = 0; i < N - 1; i++) {
    int64_t write = T0 + (int64_t)(100.0 * i * MS), lead = -1;
    int64_t submit = write + (int64_t)(lead_ms[i] * MS);
    int64_t start = cadence_frame_start(write, submit, 5 * MS, &lead);
    ck_assert_int_eq(start, write);
    ck_assert_int_eq(lead, submit - write);
    int64_t next = cadence_arrive(&c, start, 1);
    if (i < 2) continue;
    double off = (double)(next - (write + 100 * MS)) / MS;
    ck_assert_msg(off > -0.25 && off < 0.25, "frame %d: its next start expected %+.3f ms off", i,
                  off);
  }
  int64_t lead = -1;
  ck_assert_int_eq(cadence_frame_start(T0, T0 + 5 * MS, 5 * MS, &lead), T0 + 5 * MS);
  ck_assert_int_eq(lead, 0);
  ck_assert_int_eq(cadence_frame_start(0, T0, 5 * MS, &lead), T0);      /* no burst yet */
  ck_assert_int_eq(cadence_frame_start(T0 + 1, T0, 5 * MS, &lead), T0); /* none before now */
  ck_assert_int_eq(lead, 0);
}
END_TEST

START_TEST(a_steady_loop_is_expected_from_its_third_frame) {
  struct cadence c = {0};
  double at[10];
  int64_t next[10];
  for (int i = 0; i < 10; i++) at[i] = 100.0 * i;
  arrive_all(&c, at, 10, next);
  ck_assert_int_eq(next[0], 0); /* one arrival: no interval */
  ck_assert_int_eq(next[1], 0); /* one interval: nothing to agree with */
  for (int i = 2; i < 10; i++) ck_assert_int_eq(next[i], T0 + (int64_t)(at[i] + 100) * MS);
}
END_TEST

/* The failure this grid fixes: a frame 17 ms late, then the loop catching
 * up on its own grid (117 ms, then 83 ms). The intervals alone lost the
 * period for two frames; the grid loses none. */
START_TEST(a_late_frame_keeps_the_period) {
  struct cadence c = {0};
  const double at[] = {0, 100, 200, 300, 417, 500, 600, 700};
  int64_t next[8];
  arrive_all(&c, at, 8, next);
  for (int i = 2; i < 8; i++)
    ck_assert_msg(expects(next[i], 100.0 * (i + 1)), "frame %d: next at %.1f ms", i,
                  next[i] ? (double)(next[i] - T0) / MS : -1.0);
}
END_TEST

START_TEST(a_skipped_frame_keeps_the_period) {
  struct cadence c = {0};
  const double at[] = {0, 100, 200, 300, 500, 600, 900, 1000};
  int64_t next[8];
  arrive_all(&c, at, 8, next);
  for (int i = 2; i < 8; i++) ck_assert_msg(expects(next[i], at[i] + 100), "frame %d", i);
}
END_TEST

/* +-6 ms of jitter around a 100 ms grid, and a grid that drifts by 1 ms a
 * frame (a client clock 1% slow): once two intervals agree (the fourth
 * frame here), expected every time, and near the frame, not off by the
 * accumulated drift. */
START_TEST(jitter_and_drift_are_followed) {
  static const double jit[] = {0, 6, -5, -5, -6, 5, -2, 6, -6, 1, 4, -4, 0, 6, -5, 2, -3, 5};
  enum { N = sizeof jit / sizeof jit[0] };
  struct cadence c = {0};
  double at[N];
  int64_t next[N];
  for (int i = 0; i < N; i++) at[i] = 101.0 * i + jit[i];
  arrive_all(&c, at, N, next);
  ck_assert_int_eq(next[2], 0); /* 107 then 90 ms: no agreement yet */
  for (int i = 3; i < N - 1; i++)
    ck_assert_msg(expects(next[i], 101.0 * (i + 1)), "frame %d: next at %.1f ms, the frame at %.1f",
                  i, next[i] ? (double)(next[i] - T0) / MS : -1.0, at[i + 1]);
}
END_TEST

START_TEST(two_frames_off_the_grid_drop_it) {
  struct cadence c = {0};
  const double at[] = {0, 100, 200, 300, 340, 371, 430};
  int64_t next[7];
  arrive_all(&c, at, 7, next);
  ck_assert(expects(next[3], 400));
  ck_assert_int_ne(next[4], 0); /* one off: the grid still holds */
  ck_assert_int_eq(next[5], 0); /* the second off: dropped */
  ck_assert_int_eq(c.period, 0);
  ck_assert_int_eq(next[6], 0); /* 59 ms after 31: no period yet */
}
END_TEST

/* A loop that keeps its rate and steps its phase, at frame 4: `step` ms
 * (a frame clock restarted from a late frame's end: later; coop-bench-
 * side's frame thread starting a window with its check frame: earlier).
 * The next frame is expected within `within` ms from frame 5 on (the
 * second one off the old grid). Returns the first frame expected further
 * off, or 0. */
static int step_followed(double period, double step, double within) {
  struct cadence c = {0};
  for (int i = 0; i < 12; i++) {
    double at = period * i + (i >= 4 ? step : 0);
    int64_t next = cadence_arrive(&c, T0 + (int64_t)(at * MS), 1);
    double want = at + period;
    if (i >= 5 && (!next || llabs(next - (T0 + (int64_t)(want * MS))) > (int64_t)(within * MS)))
      return i;
  }
  return 0;
}

/* Before, a step past 1/8 of the period dropped the grid at its second
 * frame (the next one unexpected, the one after learned again), and a
 * smaller one was followed by a quarter of it a frame, its period moved
 * too: a 2.07 ms step at 60 fps had frames 6 and 7 expected 0.85 and 0.37
 * ms late and frames 9 to 12 0.3 to 0.7 ms early, each past the warm
 * window's 0.4 ms. */
START_TEST(a_moved_phase_keeps_the_period) {
  ck_assert_int_eq(step_followed(100, 30, 0.5), 0);  /* later, past 1/8 */
  ck_assert_int_eq(step_followed(100, -20, 0.5), 0); /* earlier, past 1/8 */
  ck_assert_int_eq(step_followed(100, -10, 0.5), 0); /* earlier, within 1/8 */
  ck_assert_int_eq(step_followed(16.7, -2.07, 0.1), 0);
  ck_assert_int_eq(step_followed(16.7, 1.3, 0.1), 0);
  /* and the period is kept: a step is no rate error */
  struct cadence c = {0};
  for (int i = 0; i < 8; i++)
    cadence_arrive(&c, T0 + (int64_t)((100.0 * i + (i >= 4 ? -10 : 0)) * MS), 1);
  ck_assert_int_eq(c.period, 100 * MS);
}
END_TEST

/* After the first frame off the grid the next is either on it (a hiccup)
 * or a period after that frame (a step): the grid's guess stays the first,
 * and alt names the second, so that the warm window covers both; the first
 * frame after a step came cold before (its guess the old grid's). None on
 * the grid, none for a frame off by more than a quarter period, none once
 * the step is followed. */
START_TEST(a_frame_off_the_grid_names_the_other_guess) {
  struct cadence c = {0};
  const double P = 16.7;
  for (int i = 0; i < 4; i++) {
    cadence_arrive(&c, T0 + (int64_t)(P * i * MS), 1);
    ck_assert_int_eq(c.alt, 0);
  }
  int64_t at = T0 + (int64_t)((P * 4 - 2.07) * MS); /* 2.07 ms early */
  int64_t next = cadence_arrive(&c, at, 1);
  ck_assert_msg(llabs(next - (T0 + (int64_t)(P * 5 * MS))) < MS, "the grid's guess %.2f ms off",
                (double)(next - (T0 + (int64_t)(P * 5 * MS))) / MS);
  ck_assert_int_eq(c.alt, at + (int64_t)(P * MS));
  next = cadence_arrive(&c, at + (int64_t)(P * MS), 1); /* it was a step */
  ck_assert_int_eq(next, at + 2 * (int64_t)(P * MS));
  ck_assert_int_eq(c.alt, 0);
  /* a hiccup: the next back on the grid, alt gone with it */
  struct cadence h = {0};
  for (int i = 0; i < 4; i++) cadence_arrive(&h, T0 + (int64_t)(P * i * MS), 1);
  cadence_arrive(&h, T0 + (int64_t)((P * 4 + 3) * MS), 1); /* past 1/8: the grid stays */
  ck_assert_int_ne(h.alt, 0);
  cadence_arrive(&h, T0 + (int64_t)(P * 5 * MS), 1);
  ck_assert_int_eq(h.alt, 0);
  /* 6 ms off: more than a quarter period from the grid's guess */
  struct cadence f = {0};
  for (int i = 0; i < 4; i++) cadence_arrive(&f, T0 + (int64_t)(P * i * MS), 1);
  cadence_arrive(&f, T0 + (int64_t)((P * 4 - 6) * MS), 1);
  ck_assert_int_eq(f.alt, 0);
}
END_TEST

/* Whatever a client's frames do (jitter up to half a period, steps,
 * skips, pauses; arrivals from a fixed pseudo-random sequence), the other
 * guess is at most a quarter period from the grid's, and only beside one:
 * a client cannot widen coopd's warm windows past that. */
START_TEST(the_other_guess_stays_within_a_quarter_period) {
  struct cadence c = {0};
  uint64_t x = 88172645463325252ULL; /* xorshift64 */
  int64_t t = T0, period = 16700000, alts = 0;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int64_t r = (int64_t)(x % 1000);
    int64_t jitter = r < 700   ? (r % 40) * 10000 - 200000   /* +-0.2 ms */
                     : r < 900 ? (r % 200) * 83500 - 8350000 /* +-half a period */
                               : 0;
    if (r >= 990) t += period * (int64_t)(r % 7); /* a skip or a pause */
    t += period;
    int64_t next = cadence_arrive(&c, t + jitter, 1);
    if (c.alt) {
      alts++;
      ck_assert_msg(next != 0, "frame %d: an other guess without a guess", i);
      ck_assert_msg(llabs(c.alt - next) * 4 <= c.period, "frame %d: %.3f ms apart, period %.3f", i,
                    (double)(c.alt - next) / MS, (double)c.period / MS);
    }
  }
  ck_assert_int_gt(alts, 0); /* the case was met */
}
END_TEST

START_TEST(a_long_pause_drops_the_grid) {
  struct cadence c = {0};
  const double at[] = {0, 100, 200, 300, 900, 1000, 1100};
  int64_t next[7];
  arrive_all(&c, at, 7, next);
  ck_assert_int_eq(next[4], 0); /* 6 periods later */
  ck_assert_int_eq(next[5], 0); /* 100 after 600: learning again */
  ck_assert(expects(next[6], 1200));
}
END_TEST

/* From 100 ms to 50 ms frames: every other one lands on the old grid, but
 * two 50 ms intervals agree and are taken as the new period. */
START_TEST(a_new_rate_is_learned) {
  struct cadence c = {0};
  const double at[] = {0, 100, 200, 300, 350, 400, 450, 500, 550};
  int64_t next[9];
  arrive_all(&c, at, 9, next);
  ck_assert_int_eq(c.period, 50 * MS);
  for (int i = 5; i < 9; i++)
    ck_assert_msg(next[i] && llabs(next[i] - (T0 + (int64_t)(at[i] + 50) * MS)) * 8 <= 50 * MS,
                  "frame %d", i);
}
END_TEST

START_TEST(another_task_starts_again) {
  struct cadence c = {0};
  for (int i = 0; i < 5; i++) cadence_arrive(&c, T0 + i * 100 * MS, 1);
  ck_assert_int_ne(c.period, 0);
  ck_assert_int_eq(cadence_arrive(&c, T0 + 500 * MS, 0), 0);
  ck_assert_int_eq(c.period, 0);
  ck_assert_int_eq(cadence_arrive(&c, T0 + 600 * MS, 1), 0);
  ck_assert_int_ne(cadence_arrive(&c, T0 + 700 * MS, 1), 0);
}
END_TEST

/* Intervals that never agree within 1/8 (each 1.3x the last, then back),
 * and ones outside 1 ms .. 1 s: never taken as a loop. */
START_TEST(no_loop_is_never_expected) {
  struct cadence c = {0};
  int64_t t = T0, gap = 2 * MS;
  for (int i = 0; i < 40; i++) {
    ck_assert_int_eq(cadence_arrive(&c, t, 1), 0);
    gap = gap * 13 / 10;
    if (gap > 400 * MS) gap = 2 * MS;
    t += gap;
  }
  struct cadence fast = {0}, slow = {0};
  for (int i = 0; i < 10; i++) {
    ck_assert_int_eq(cadence_arrive(&fast, T0 + i * MS / 2, 1), 0);
    ck_assert_int_eq(cadence_arrive(&slow, T0 + i * 2000 * MS, 1), 0);
  }
  ck_assert_int_eq(cadence_arrive(&c, t, 1) >= 0, 1);
  ck_assert_int_eq(cadence_arrive(&c, t, 1), 0); /* a clock that stands still */
}
END_TEST

int main(void) {
  Suite *s = suite_create("cadence");
  TCase *c = tcase_create("cadence");
  tcase_add_test(c, a_steady_loop_is_expected_from_its_third_frame);
  tcase_add_test(c, a_period_learned_off_by_its_jitter_is_corrected);
  tcase_add_test(c, frames_are_expected_by_their_starts);
  tcase_add_test(c, a_late_frame_keeps_the_period);
  tcase_add_test(c, a_skipped_frame_keeps_the_period);
  tcase_add_test(c, jitter_and_drift_are_followed);
  tcase_add_test(c, two_frames_off_the_grid_drop_it);
  tcase_add_test(c, a_moved_phase_keeps_the_period);
  tcase_add_test(c, a_frame_off_the_grid_names_the_other_guess);
  tcase_add_test(c, the_other_guess_stays_within_a_quarter_period);
  tcase_add_test(c, a_long_pause_drops_the_grid);
  tcase_add_test(c, a_new_rate_is_learned);
  tcase_add_test(c, another_task_starts_again);
  tcase_add_test(c, no_loop_is_never_expected);
  suite_add_tcase(s, c);
  return coop_test_run(srunner_create(s));
}
