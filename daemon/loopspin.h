/*
 * loopspin.h: the loop's bounded spin. After the loop hands a job to a
 * device thread, and after it sends a job's RESULT, the next event it
 * waits for (the hand-back's uv_async, the client's next SUBMIT) comes
 * within tens of microseconds when the device is a GPU and the client
 * submits one small task after another; a loop woken from epoll_wait costs
 * several of them (bench/RESULTS.md, "Idle spins on the daemon path").
 * For that long ([device] idle_spin_us, as the device resolved it) an
 * active uv_idle handle keeps uv_run polling without sleeping; then it
 * stops itself. And a frame loop's next task, expected 16 ms on, finds
 * the loop spinning if loopspin_at armed a window around it (warm ahead:
 * docs/daemon.md, "Spinning"), and a `window` hook at the window's start.
 * While it spins, the loop also calls a
 * `turn` hook every turn, and `spinning` (read by device threads) says so:
 * a device thread then announces finished work by a flag the hook reads
 * instead of waking the loop with uv_async (device.h, dev_poll). Loop
 * thread only, but for `spinning`.
 */
#ifndef COOPD_LOOPSPIN_H
#define COOPD_LOOPSPIN_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#define LOOPSPIN_WINDOWS 16 /* windows armed at once: one a frame loop */

struct loopspin {
  uv_idle_t idle;
  /* the windows armed (loopspin_at), one per key, in no order; a timerfd
   * armed at the earliest start to the nanosecond, watched by a poll
   * handle (tfd -1: none could be made, no window is armed) */
  struct loopspin_window {
    const void *key; /* its owner's (a session): only compared */
    int64_t from, to;
  } win[LOOPSPIN_WINDOWS];
  unsigned nwin;
  int tfd;
  uv_poll_t timer;
  int64_t until; /* CLOCK_MONOTONIC ns; the idle handle stops itself after it */
  int64_t since; /* when the current spin began (0: none; a trace's loop_spun) */
  int ready;     /* initialised, and not closing */
  /* 1 only while the idle handle is active, so that `turn` runs every
   * turn; seq_cst: its clear, then turn's last look, pairs with a device
   * thread's flag, then its read of this (dev__announce) */
  atomic_int spinning;
  void (*turn)(void *arg);
  void *turn_arg;
  void (*window)(void *arg, const void *key, int64_t from);
  void *window_arg;
};

void loopspin_init(struct loopspin *ls, uv_loop_t *loop);
/* Keeps the loop polling for ns more from now (0: nothing). */
void loopspin_for(struct loopspin *ls, int64_t ns);
/* Keeps the loop polling from `from` to `to` (CLOCK_MONOTONIC ns): `key`'s
 * window (a frame loop's next frame), which replaces key's last one. One
 * window per key: a frame that came before its window began (early, or
 * its window late) left that window armed, and the one-window rule of
 * old (a later window ignored while a sooner one was armed) dropped the
 * next frame's window. With LOOPSPIN_WINDOWS armed, a new one replaces
 * the latest to begin if it begins sooner, else it is not armed. The
 * window begins at `from`, not before, and as soon after as the thread wakes: a
 * timerfd, not a libuv timer, whose milliseconds (its loop time truncated,
 * its epoll timeout in ms) began windows up to 1 ms early, while a quarter
 * of a frame client's SUBMITs, inside their windows, found the loop asleep
 * (bench/RESULTS.md, "A warm-up from the frame's own pages"). Without a
 * timerfd: no window, only the spins asked for. A window whose `from` has
 * passed already is no window either: the spin to `to` starts at once,
 * without the window hook. */
void loopspin_at(struct loopspin *ls, const void *key, int64_t from, int64_t to);
/* key's window, if one is armed, is not (its connection closed). */
void loopspin_drop(struct loopspin *ls, const void *key);
/* fn(arg) on every turn while the loop spins, and once more when it stops. */
void loopspin_on_turn(struct loopspin *ls, void (*fn)(void *), void *arg);
/* fn(arg, key, from) when the window loopspin_at armed for key from
 * `from` begins (its timer), before the spin, once for each window begun:
 * the loop's own preparation for the request expected in it (a frame's job
 * made ahead, its SUBMIT checked dry: sess_jobs.c, session_warm_frame), and
 * the trace's line of how late it began. */
void loopspin_on_window(struct loopspin *ls, void (*fn)(void *, const void *, int64_t), void *arg);
/* At the stop, before uv_walk closes every handle: no spin starts again;
 * the window's poll handle is closed here, its timerfd with it. */
void loopspin_stop(struct loopspin *ls);

#endif /* COOPD_LOOPSPIN_H */
