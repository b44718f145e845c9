/*
 * dp_ends.h: how long a one-task job of a kernel and width last ran, from
 * its workgroups gathered to its end (the device's stamps), so that the
 * next one's end is waited for by spinning just before it rather than by
 * a nap that overshoots it (devproc_child.c, wait_for; devproc.c,
 * call_shm). A frame loop runs the same task every frame. Not from its
 * submit: a frame that waited for a suspension beside a cooperative job
 * (tens to a hundred microseconds more) would move the next frame's
 * expected end, alone, past its real one, into a nap; counted from the
 * submit, the gather's own wait only starts the spin early. Direct-mapped:
 * a kind whose slot another took is not known (no end expected), and a
 * wrong guess costs at most DP_END_SPIN_MAX_NS of spinning. Each side
 * keeps its own; one thread each.
 *
 * The tasks in flight are kept too (by task slot, id & 0xff, as the
 * front's info cache): when each is due, so that a wait for any of them
 * (DP_WAIT: a frame beside a running job, where DP_SUBMIT does not wait)
 * expects the earliest, and its run is noted when a wait or a poll first
 * finds it done.
 */
#ifndef COOPD_DP_ENDS_H
#define COOPD_DP_ENDS_H

#include <stdint.h>

#include "coop_rt.h" /* coop_task_id, struct coop_rt_task_info */

/* Spin from DP_END_LEAD_NS before the expected end, for at most
 * DP_END_SPIN_MAX_NS past it */
#define DP_END_LEAD_NS 150000L
#define DP_END_SPIN_MAX_NS 500000L
/* The loop is asked to wake this long before the expected end (the front,
 * dp_on_near_end): an event loop asleep in epoll_wait took up to 300 us
 * to wake for a uv_async on an H200, and one woken only DP_END_LEAD_NS
 * ahead was still asleep at the hand-back in a frame in ten (2 ms frames:
 * 50-470 us late; bench/RESULTS.md, "Where the last suspensions and the
 * late ends came from"). */
#define DP_WAKE_LEAD_NS 450000L

#define DP_END_SLOTS 64u

struct dp_ends {
  struct {
    int kernel;
    unsigned groups;
    int64_t ns; /* 0: none */
  } slot[DP_END_SLOTS];
  struct {
    coop_task_id id;
    int kernel;
    unsigned groups;
    int64_t due;   /* CLOCK_MONOTONIC ns; 0: not known */
    uint8_t live;  /* submitted, its run not yet noted */
    uint8_t frame; /* submitted in a frame's warm window */
  } task[256];
};

/* The last run of kernel at groups, gathered -> end, ns; 0 when not known. */
int64_t dp_ends_expect(const struct dp_ends *e, int kernel, unsigned groups);
/* Its run took ns (the device's t_finished - t_gathered). */
void dp_ends_note(struct dp_ends *e, int kernel, unsigned groups, int64_t ns);
/* Task id of kernel at groups submitted at `now`: when it is due. */
void dp_ends_submitted(struct dp_ends *e, coop_task_id id, int kernel, unsigned groups, int64_t now,
                       int frame);
/* The earliest due of the tasks ids[0..n) still live (0: none known);
 * *frame: whether that one was a frame's. */
int64_t dp_ends_due(const struct dp_ends *e, const coop_task_id *ids, unsigned n, int *frame);
/* What a reply said of task id: done, its run is noted (once). */
void dp_ends_seen(struct dp_ends *e, coop_task_id id, const struct coop_rt_task_info *ti);

#endif /* COOPD_DP_ENDS_H */
