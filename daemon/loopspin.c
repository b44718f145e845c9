/*
 * loopspin.c: see loopspin.h.
 */
#include "loopspin.h"

#include "coop_util.h"

static void on_idle(uv_idle_t *h) {
  struct loopspin *ls = h->data;
  if (coop__now_ns() >= ls->until) uv_idle_stop(h);
}

void loopspin_init(struct loopspin *ls, uv_loop_t *loop) {
  ls->until = 0;
  ls->ready = uv_idle_init(loop, &ls->idle) == 0;
  ls->idle.data = ls;
}

void loopspin_for(struct loopspin *ls, int64_t ns) {
  if (!ls->ready || ns <= 0) return;
  int64_t until = coop__now_ns() + ns;
  if (until > ls->until) ls->until = until;
  uv_idle_start(&ls->idle, on_idle); /* already active: nothing */
}

void loopspin_stop(struct loopspin *ls) {
  if (!ls->ready) return;
  ls->ready = 0;
  uv_idle_stop(&ls->idle);
}
