/*
 * loopspin.h: the loop's bounded spin. After the loop hands a job to a
 * device thread, and after it sends a job's RESULT, the next event it
 * waits for (the hand-back's uv_async, the client's next SUBMIT) comes
 * within tens of microseconds when the device is a GPU and the client
 * submits one small task after another; a loop woken from epoll_wait costs
 * several of them (bench/RESULTS.md, "Idle spins on the daemon path").
 * For that long ([device] idle_spin_us, as the device resolved it) an
 * active uv_idle handle keeps uv_run polling without sleeping; then it
 * stops itself. Loop thread only.
 */
#ifndef COOPD_LOOPSPIN_H
#define COOPD_LOOPSPIN_H

#include <stdint.h>
#include <uv.h>

struct loopspin {
  uv_idle_t idle;
  int64_t until; /* CLOCK_MONOTONIC ns; the handle stops itself after it */
  int ready;     /* initialised, and not closing */
};

void loopspin_init(struct loopspin *ls, uv_loop_t *loop);
/* Keeps the loop polling for ns more from now (0: nothing). */
void loopspin_for(struct loopspin *ls, int64_t ns);
/* At the stop, before uv_walk closes every handle: no spin starts again. */
void loopspin_stop(struct loopspin *ls);

#endif /* COOPD_LOOPSPIN_H */
