/*
 * test_loopspin.c: the loop's bounded spin (daemon/loopspin.h) and its
 * half of the hand-back's Dekker pair (docs/daemon.md, "Spinning"): while
 * the idle handle is active `spinning` reads 1 and the turn hook runs every
 * turn; the stop clears `spinning` and then runs the hook once more; a hook
 * that asks for more spin in that last look keeps the loop spinning, and
 * one whose spin is over by then leaves `spinning` clear. Then
 * a producer thread announces items as a device thread does
 * (dev__announce: its flag, then `spinning`, uv_async only when clear)
 * while the loop's spins start and stop under it: every item is taken,
 * none waits for a later wake. A window armed ahead (loopspin_at) calls the
 * window hook once, at its start, before the spin it begins.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "check_run.h"
#include "coop_util.h"
#include "loopspin.h"

struct probe {
  struct loopspin ls;
  unsigned turns, looks_clear; /* hook calls; those with spinning clear */
  int extend;                  /* the last look asks for this much more spin, once */
};

static void count_turn(void *arg) {
  struct probe *p = arg;
  p->turns++;
  if (atomic_load(&p->ls.spinning)) return;
  p->looks_clear++;
  if (p->extend) {
    loopspin_for(&p->ls, p->extend);
    p->extend = 0;
  }
}

/* The spin stopped, its handles closed, and the loop with them. */
static void loop_end(uv_loop_t *loop, struct loopspin *ls) {
  loopspin_stop(ls); /* closes the window's handle and its timerfd */
  uv_close((uv_handle_t *)&ls->idle, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(ls->tfd, -1);
  ck_assert_int_eq(uv_loop_close(loop), 0);
}

START_TEST(spins_then_stops_with_a_last_look) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  struct probe p = {0};
  loopspin_init(&p.ls, &loop);
  loopspin_on_turn(&p.ls, count_turn, &p);
  ck_assert_int_eq(atomic_load(&p.ls.spinning), 0);
  int64_t t0 = coop__now_ns();
  loopspin_for(&p.ls, 2000000);
  ck_assert_int_eq(atomic_load(&p.ls.spinning), 1);
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the idle handle stopped */
  int64_t took = coop__now_ns() - t0;
  ck_assert_int_ge(took, 2000000);
  ck_assert_int_eq(atomic_load(&p.ls.spinning), 0);
  ck_assert_uint_gt(p.turns, 10);
  ck_assert_uint_eq(p.looks_clear, 1); /* exactly one look after the clear */
  /* the last look asks for 3 ms more: the loop spins on, then stops */
  p.turns = p.looks_clear = 0;
  p.extend = 3000000;
  t0 = coop__now_ns();
  loopspin_for(&p.ls, 1000000);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_ge(coop__now_ns() - t0, 4000000);
  ck_assert_uint_eq(p.looks_clear, 2);
  ck_assert_int_eq(atomic_load(&p.ls.spinning), 0);
  /* the last look asks for a spin that is over before the look returns
   * (1 ns; a look slowed by a sanitizer outlasts a real one): the handle
   * stops, and the flag must not stay set behind it, or a device thread
   * reading it would announce to a loop asleep in epoll_wait (the
   * frame loop's hand-back that waited 30 s under ThreadSanitizer) */
  p.turns = p.looks_clear = 0;
  p.extend = 1;
  loopspin_for(&p.ls, 1000000);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(atomic_load(&p.ls.spinning), 0);
  ck_assert_uint_eq(p.looks_clear, 2); /* and one more look behind the clear */
  loop_end(&loop, &p.ls);
}
END_TEST

/* ---- a window armed ahead ---- */

struct win {
  struct loopspin ls;
  unsigned calls;
  int64_t at;           /* the hook's call */
  int64_t first;        /* the first call since it was set to 0 */
  int spinning_at_call; /* the flag then: 0, the spin not yet begun */
  const void *keys[4];  /* the keys of the first four calls */
  int64_t froms[4];     /* and the starts they were armed for */
};

static void on_window(void *arg, const void *key, int64_t from) {
  struct win *w = arg;
  if (w->calls < 4) w->keys[w->calls] = key, w->froms[w->calls] = from;
  w->calls++;
  w->at = coop__now_ns();
  if (!w->first) w->first = w->at;
  w->spinning_at_call = atomic_load(&w->ls.spinning);
}

/* A loop, and its spin with on_window as its window hook. */
static void win_open(uv_loop_t *loop, struct win *w) {
  ck_assert_int_eq(uv_loop_init(loop), 0);
  loopspin_init(&w->ls, loop);
  loopspin_on_window(&w->ls, on_window, w);
}

START_TEST(a_window_calls_its_hook_at_its_start) {
  uv_loop_t loop;
  struct win w = {0};
  win_open(&loop, &w);
  /* a plain spin is no window: no call */
  loopspin_for(&w.ls, 1000000);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_uint_eq(w.calls, 0);
  /* a window 20 ms on, 5 ms long: one call, at its start, before its spin */
  int64_t t0 = coop__now_ns(), from = t0 + 20000000, to = from + 5000000;
  loopspin_at(&w.ls, &w, from, to);
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the window's spin is over */
  ck_assert_uint_eq(w.calls, 1);
  ck_assert_ptr_eq(w.keys[0], &w);
  ck_assert_int_eq(w.froms[0], from); /* the trace's window line: how late it began */
  ck_assert_int_eq(w.spinning_at_call, 0);
  ck_assert_int_ge(w.at, from);
  ck_assert_int_lt(w.at, to);
  ck_assert_int_ge(coop__now_ns(), to);
  loop_end(&loop, &w.ls);
}
END_TEST

/* Two connections' windows that begin together: the hook once for each,
 * with its key, so that each connection's own preparation runs (sess_jobs.c,
 * session_warm_frame). A hook called once, without the key, left the loop
 * to guess which frames were due from a fixed lead, and a window opened
 * early (over both of a frame loop's guesses) got none. */
START_TEST(each_window_begun_calls_its_hook_with_its_key) {
  uv_loop_t loop;
  struct win w = {0};
  win_open(&loop, &w);
  static const int a = 1, b = 2;
  int64_t from = coop__now_ns() + 20000000;
  loopspin_at(&w.ls, &a, from, from + 2000000);
  loopspin_at(&w.ls, &b, from, from + 3000000);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_uint_eq(w.calls, 2);
  ck_assert((w.keys[0] == &a && w.keys[1] == &b) || (w.keys[0] == &b && w.keys[1] == &a));
  loop_end(&loop, &w.ls);
}
END_TEST

/* Windows armed at every phase of a millisecond begin at their start, not
 * before it: with a libuv timer (milliseconds of a truncated loop time)
 * they began up to 1 ms early. A key's new window replaces its last; two
 * keys' windows are both served. How late the thread wakes is the
 * scheduler's (milliseconds on a loaded machine): not bounded here. */
START_TEST(windows_begin_at_their_start_whatever_its_phase) {
  uv_loop_t loop;
  struct win w = {0};
  win_open(&loop, &w);
  ck_assert_int_ge(w.ls.tfd, 0);
  int a, b; /* two frame loops' keys */
  for (unsigned i = 0; i < 24; i++) {
    int64_t from = coop__now_ns() + 2000000 + (int64_t)(i * 41667u), to = from + 3000000;
    if (i % 3 == 1) loopspin_at(&w.ls, &a, from + 1500000, to); /* replaced below */
    if (i % 3 == 2) loopspin_at(&w.ls, &b, from - 500000, to);  /* another's: served too */
    loopspin_at(&w.ls, &a, from, to);
    int64_t armed = coop__now_ns(), want = i % 3 == 2 ? from - 500000 : from;
    unsigned calls = w.calls;
    w.first = 0;
    uv_run(&loop, UV_RUN_DEFAULT);
    /* armed after its start (this thread was away 2 ms on a loaded
     * machine): a window begun is a spin at once, no call (loopspin.h) */
    if (armed >= from) continue;
    /* two windows begun by the time a late wake looks are served by one call */
    ck_assert_uint_ge(w.calls, calls + 1);
    ck_assert_uint_le(w.calls, calls + (i % 3 == 2 ? 2u : 1u));
    ck_assert_uint_eq(w.ls.nwin, 0);
    ck_assert_msg(w.first >= want, "window %u began %lld ns before its start", i,
                  (long long)(want - w.first));
    ck_assert_int_ge(w.at, from);
  }
  loop_end(&loop, &w.ls);
}
END_TEST

/* A frame that came before its window began left the window armed; the
 * next frame's window, armed then, must not be dropped for it (the old
 * rule, one window, a later one ignored while a sooner was armed, left
 * that next frame to find the loop asleep). Its window replaces the
 * frame's own. */
START_TEST(a_frames_next_window_replaces_its_unused_one) {
  uv_loop_t loop;
  struct win w = {0};
  win_open(&loop, &w);
  int s; /* the frame loop's key */
  int64_t now = coop__now_ns();
  loopspin_at(&w.ls, &s, now + 3000000, now + 4000000); /* frame N's window */
  /* frame N comes now, early: frame N+1's window, 10 ms on */
  int64_t from = now + 10000000, to = from + 1000000;
  loopspin_at(&w.ls, &s, from, to);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_uint_eq(w.calls, 1); /* frame N's window: not served */
  ck_assert_int_ge(w.at, from);
  ck_assert_int_ge(coop__now_ns(), to);
  /* LOOPSPIN_WINDOWS keys armed, then one that begins later than all: not
   * armed; one that begins sooner: armed in place of the latest */
  int keys[LOOPSPIN_WINDOWS + 2];
  now = coop__now_ns();
  for (unsigned i = 0; i < LOOPSPIN_WINDOWS; i++)
    loopspin_at(&w.ls, &keys[i], now + 3000000 + i * 100000, now + 6000000);
  ck_assert_uint_eq(w.ls.nwin, LOOPSPIN_WINDOWS);
  loopspin_at(&w.ls, &keys[LOOPSPIN_WINDOWS], now + 5000000, now + 6000000);
  ck_assert_uint_eq(w.ls.nwin, LOOPSPIN_WINDOWS);
  for (unsigned i = 0; i < w.ls.nwin; i++)
    ck_assert_ptr_ne(w.ls.win[i].key, &keys[LOOPSPIN_WINDOWS]);
  loopspin_at(&w.ls, &keys[LOOPSPIN_WINDOWS + 1], now + 2000000, now + 6000000);
  unsigned found = 0;
  for (unsigned i = 0; i < w.ls.nwin; i++) {
    found += w.ls.win[i].key == &keys[LOOPSPIN_WINDOWS + 1];
    ck_assert_ptr_ne(w.ls.win[i].key, &keys[LOOPSPIN_WINDOWS - 1]); /* the latest, gone */
  }
  ck_assert_uint_eq(found, 1);
  loopspin_drop(&w.ls, &keys[0]); /* its connection closed */
  ck_assert_uint_eq(w.ls.nwin, LOOPSPIN_WINDOWS - 1);
  for (unsigned i = 0; i < w.ls.nwin; i++) ck_assert_ptr_ne(w.ls.win[i].key, &keys[0]);
  loopspin_drop(&w.ls, &keys[0]); /* none: nothing */
  ck_assert_uint_eq(w.ls.nwin, LOOPSPIN_WINDOWS - 1);
  w.calls = 0;
  uv_run(&loop, UV_RUN_DEFAULT); /* every armed window served */
  ck_assert_uint_ge(w.calls, 1);
  ck_assert_uint_eq(w.ls.nwin, 0);
  loop_end(&loop, &w.ls);
}
END_TEST

/* ---- the pair, under a producer ---- */

#define ITEMS 20000u

struct pair {
  struct loopspin ls;
  uv_async_t async;
  uv_timer_t tick; /* ends the test once the producer is done */
  atomic_int announced;
  atomic_uint produced, taken; /* the "queue": items announced; items the loop took */
  atomic_int done;
  unsigned lost; /* producer: items the loop had not taken 20 ms after their announce */
};

/* As on_async: the flag cleared, then the queue taken; and, as a RESULT
 * does, a short spin after it, so that spins stop all the time, at random
 * points between the producer's announces. */
static void take(struct pair *p) {
  atomic_store(&p->announced, 0);
  atomic_store(&p->taken, atomic_load(&p->produced));
  loopspin_for(&p->ls, (int64_t)(rand() % 40) * 1000);
}

static void pair_turn(void *arg) {
  struct pair *p = arg;
  if (atomic_load(&p->announced)) take(p);
}

static void on_pair_async(uv_async_t *a) { take(a->data); }

static void on_tick(uv_timer_t *t) {
  struct pair *p = t->data;
  if (!atomic_load(&p->done)) return;
  uv_close((uv_handle_t *)&p->async, NULL);
  uv_close((uv_handle_t *)t, NULL);
}

/* A device thread's side: queue, then dev__announce (the flag, then
 * `spinning`; uv_async only when clear), then wait for the loop to take
 * it. Nothing else wakes the loop (the tick is 1 s), so an announce lost
 * in the loop's stop shows as an item not taken. */
static void *producer(void *arg) {
  struct pair *p = arg;
  for (unsigned i = 1; i <= ITEMS; i++) {
    struct timespec ts = {0, (rand() % 60) * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&p->produced, i);
    atomic_store(&p->announced, 1);
    if (!atomic_load(&p->ls.spinning)) uv_async_send(&p->async);
    int64_t until = coop__now_ns() + 20000000;
    while (atomic_load(&p->taken) != i && coop__now_ns() < until) {
    }
    if (atomic_load(&p->taken) != i) {
      p->lost++;
      uv_async_send(&p->async); /* on with the test */
      while (atomic_load(&p->taken) != i) {
      }
    }
  }
  atomic_store(&p->done, 1);
  return NULL;
}

START_TEST(no_announce_is_lost) {
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  static struct pair p;
  memset(&p, 0, sizeof p);
  loopspin_init(&p.ls, &loop);
  loopspin_on_turn(&p.ls, pair_turn, &p);
  ck_assert_int_eq(uv_async_init(&loop, &p.async, on_pair_async), 0);
  p.async.data = &p;
  uv_timer_init(&loop, &p.tick);
  p.tick.data = &p;
  uv_timer_start(&p.tick, on_tick, 1000, 1000);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, producer, &p), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  pthread_join(th, NULL);
  ck_assert_uint_eq(atomic_load(&p.taken), ITEMS);
  ck_assert_uint_eq(p.lost, 0);
  loop_end(&loop, &p.ls);
}
END_TEST

int main(void) {
  Suite *s = suite_create("loopspin");
  TCase *c = tcase_create("spin");
  tcase_set_timeout(c, 60);
  tcase_add_test(c, spins_then_stops_with_a_last_look);
  tcase_add_test(c, no_announce_is_lost);
  tcase_add_test(c, a_window_calls_its_hook_at_its_start);
  tcase_add_test(c, each_window_begun_calls_its_hook_with_its_key);
  tcase_add_test(c, windows_begin_at_their_start_whatever_its_phase);
  tcase_add_test(c, a_frames_next_window_replaces_its_unused_one);
  suite_add_tcase(s, c);
  return coop_test_run(srunner_create(s));
}
