/*
 * loopspin.c: see loopspin.h.
 */
#include "loopspin.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include "coop_util.h"

static void on_idle(uv_idle_t *h) {
  struct loopspin *ls = h->data;
  if (ls->turn) ls->turn(ls->turn_arg);
  if (!ls->ready || coop__now_ns() < ls->until) return;
  /* Stopping: the flag cleared first, then one more look, so that work a
   * device thread announced while it still read the flag set is taken
   * now; later work wakes the loop by uv_async (dev__announce). The look
   * may call loopspin_for, which sets the flag again: the spin then goes
   * on (below). The handle never stops with the flag set: a device thread
   * that read it would announce to a loop asleep in epoll_wait, and its
   * work would wait for an unrelated wake. */
  for (;;) {
    atomic_store(&ls->spinning, 0);
    int64_t until = ls->until;
    if (ls->turn) ls->turn(ls->turn_arg);
    /* that look asked for more: the spin goes on, and the loop takes a
     * turn first, even if what it asked has passed already (a ring's
     * records left for the next turn, sess_ring_input: looking again here
     * at once kept the loop from its other handles while they came) */
    if (ls->ready && (coop__now_ns() < ls->until || ls->until != until)) {
      atomic_store(&ls->spinning, 1);
      return;
    }
    if (!atomic_load_explicit(&ls->spinning, memory_order_relaxed)) break; /* loop thread's own */
  }
  uv_idle_stop(h);
  ls->since = 0;
}

static void on_timer(uv_poll_t *t, int status, int events);

/* The timerfd armed at the earliest window's start (disarmed: none). */
static void arm(struct loopspin *ls) {
  int64_t first = 0;
  for (unsigned i = 0; i < ls->nwin; i++)
    if (!first || ls->win[i].from < first) first = ls->win[i].from;
  struct itimerspec at = {.it_value = {first / 1000000000, first % 1000000000}};
  if (timerfd_settime(ls->tfd, TFD_TIMER_ABSTIME, &at, NULL) != 0) return;
  if (first)
    uv_poll_start(&ls->timer, UV_READABLE, on_timer);
  else
    uv_poll_stop(&ls->timer);
}

/* The windows begun by now: their hook, then the spin to the last end of
 * them; the timer on to the next. */
static void on_timer(uv_poll_t *t, int status, int events) {
  struct loopspin *ls = t->data;
  (void)status, (void)events;
  uint64_t fired;
  if (read(ls->tfd, &fired, sizeof fired) < 0) return; /* not yet: re-armed since */
  int64_t now = coop__now_ns(), to = 0;
  struct loopspin_window begun[LOOPSPIN_WINDOWS];
  unsigned nbegun = 0;
  for (unsigned i = 0; i < ls->nwin;) {
    if (ls->win[i].from > now) {
      i++;
      continue;
    }
    if (ls->win[i].to > to) to = ls->win[i].to;
    begun[nbegun++] = ls->win[i];
    ls->win[i] = ls->win[--ls->nwin];
  }
  arm(ls);
  if (!to) return;
  for (unsigned i = 0; ls->window && i < nbegun; i++)
    ls->window(ls->window_arg, begun[i].key, begun[i].from);
  loopspin_for(ls, to - coop__now_ns());
}

void loopspin_init(struct loopspin *ls, uv_loop_t *loop) {
  ls->until = ls->since = 0;
  ls->nwin = 0;
  atomic_init(&ls->spinning, 0);
  ls->turn = NULL;
  ls->turn_arg = NULL;
  ls->window = NULL;
  ls->window_arg = NULL;
  ls->ready = uv_idle_init(loop, &ls->idle) == 0;
  ls->idle.data = ls;
  ls->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (ls->tfd >= 0 && uv_poll_init(loop, &ls->timer, ls->tfd) != 0) {
    close(ls->tfd);
    ls->tfd = -1;
  }
  ls->timer.data = ls;
}

void loopspin_for(struct loopspin *ls, int64_t ns) {
  if (!ls->ready || ns <= 0) return;
  int64_t now = coop__now_ns(), until = now + ns;
  if (until > ls->until) ls->until = until;
  if (!uv_is_active((uv_handle_t *)&ls->idle)) ls->since = now;
  atomic_store(&ls->spinning, 1);    /* the idle handle runs on the next turn */
  uv_idle_start(&ls->idle, on_idle); /* already active: nothing */
}

void loopspin_on_turn(struct loopspin *ls, void (*fn)(void *), void *arg) {
  ls->turn = fn;
  ls->turn_arg = arg;
}

void loopspin_on_window(struct loopspin *ls, void (*fn)(void *, const void *, int64_t), void *arg) {
  ls->window = fn;
  ls->window_arg = arg;
}

/* key's window's index, or nwin if it has none. */
static unsigned find(const struct loopspin *ls, const void *key) {
  unsigned i = 0;
  while (i < ls->nwin && ls->win[i].key != key) i++;
  return i;
}

/* Window i no longer armed (a window is armed only with a timerfd), the
 * timer on to the earliest left. */
static void forget(struct loopspin *ls, unsigned i) {
  ls->win[i] = ls->win[--ls->nwin];
  arm(ls);
}

void loopspin_at(struct loopspin *ls, const void *key, int64_t from, int64_t to) {
  int64_t now = coop__now_ns();
  if (!ls->ready || to <= now) return;
  unsigned i = find(ls, key);
  if (from <= now) { /* begun: no window, the spin now */
    if (i < ls->nwin) forget(ls, i);
    loopspin_for(ls, to - now);
    return;
  }
  if (ls->tfd < 0) return;
  if (i == ls->nwin && ls->nwin == LOOPSPIN_WINDOWS) { /* full: the latest to begin goes */
    unsigned last = 0;
    for (unsigned k = 1; k < ls->nwin; k++)
      if (ls->win[k].from > ls->win[last].from) last = k;
    if (ls->win[last].from <= from) return;
    i = last;
  }
  if (i == ls->nwin) ls->nwin++;
  ls->win[i] = (struct loopspin_window){key, from, to};
  arm(ls);
}

void loopspin_drop(struct loopspin *ls, const void *key) {
  unsigned i = find(ls, key);
  if (i < ls->nwin) forget(ls, i);
}

static void on_timer_closed(uv_handle_t *h) {
  struct loopspin *ls = h->data;
  close(ls->tfd);
  ls->tfd = -1;
}

void loopspin_stop(struct loopspin *ls) {
  if (!ls->ready) return;
  ls->ready = 0;
  ls->nwin = 0;
  atomic_store(&ls->spinning, 0);
  uv_idle_stop(&ls->idle);
  if (ls->tfd >= 0 && !uv_is_closing((uv_handle_t *)&ls->timer))
    uv_close((uv_handle_t *)&ls->timer, on_timer_closed);
}
