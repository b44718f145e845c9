/*
 * side_setup_stream.c: coop-bench-side's setups on another stream of the
 * long kernel's own process and context: (b) a non-blocking stream of the
 * default priority, what a program gets from a plain stream, and (d) prio,
 * the stream of the highest priority the context offers
 * (cuCtxGetStreamPriorityRange). Either way the matmul's blocks only start
 * where the megakernel leaves SM slots free; the priority decides which
 * pending blocks the hardware starts first, it does not preempt running
 * ones.
 */
#include <stdio.h>

#include "side_setup.h"

static int on_stream(struct bench *b, int setup, int highest) {
  struct result *x = new_result(setup, 0, NULL);
  if (plain_stream(&b->p, highest)) {
    fprintf(stderr, SB ": %s: %s\n", x->name, b->p.err);
    return 1;
  }
  printf(SB ": %s: stream priority %d (the context's range: %d, least, to %d, greatest)\n", x->name,
         b->p.prio, b->p.prio_least, b->p.prio_greatest);
  say_start(x);
  struct thread_arg t = {.ops = side_plain_ops(&b->p)};
  struct gfx_ctl ctl = {th_start, th_stop, &t};
  return long_window(b, x, &ctl);
}

int setup_stream_run(struct bench *b, int setup) { return on_stream(b, setup, setup == S_PRIO); }
