/*
 * side_setup_slice.c: coop-bench-side's setup (a), driver time slicing:
 * the plain matmul from a second process (side_child.c) beside the long
 * kernel. Two contexts on one GPU without MPS take turns in time slices,
 * so the matmul waits for the long kernel's slice to end. The process is
 * started, and its context built and warmed up, before the megakernel is
 * launched, while the GPU is idle.
 */
#include <stdio.h>

#include "side_setup.h"

int setup_slice_prepare(struct bench *b) {
  printf(SB ": starting the process of setup (a)\n");
  fflush(stdout);
  return child_spawn(&b->child, b->o, &b->p, NULL);
}

static int ch_start(struct bench *b, void *arg) {
  (void)arg;
  return child_say(&b->child, "go\n");
}

static int ch_stop(struct bench *b, void *arg, struct result *x) {
  (void)arg;
  if (child_say(&b->child, "stop\n")) return 1;
  return child_collect(&b->child, x);
}

int setup_slice_run(struct bench *b, int setup) {
  struct result *x = new_result(setup, 0, NULL);
  say_start(x);
  struct gfx_ctl ctl = {ch_start, ch_stop, NULL};
  int rc = long_window(b, x, &ctl);
  rc |= child_end(&b->child);
  return rc;
}
