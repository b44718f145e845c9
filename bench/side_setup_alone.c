/*
 * side_setup_alone.c: coop-bench-side's baselines: (0) the plain matmul
 * alone on the idle GPU (before anything else runs there: the latency
 * every other row is divided by), and the long kernel alone, back to back
 * (the run time every slowdown is against).
 */
#include "side_setup.h"

int setup_alone_run(struct bench *b, int setup) {
  struct result *x = new_result(setup, 0, NULL);
  say_start(x);
  struct task_ops ops = side_plain_ops(&b->p);
  return gfx_alone(b, x, &ops);
}

int setup_long_run(struct bench *b, int setup) {
  struct result *x = new_result(setup, 0, NULL);
  say_start(x);
  return long_window(b, x, NULL);
}
