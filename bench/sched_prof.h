/* sched_prof.h: the scheduler's profile of a megakernel built with
 * COOP_DEVICE_DEFINES=COOP_PROF or COOP_PROF_TASKS (docs/scheduler.md,
 * "Profile"), printed for coop-bench-micro and coop-bench-suspend. */
#ifndef COOP_BENCH_SCHED_PROF_H
#define COOP_BENCH_SCHED_PROF_H

#include <stdint.h>

#include "coop_rt.h"

/* One line of the totals so far; nothing when the megakernel was built
 * without either (or with COOP_PROF_SUSPEND, whose slots mean else). */
void sched_prof_print(coop_rt *rt);
/* COOP_PROF alone: the slots now into snap (1), else 0 (all zero); and
 * one line of what the passes since that snapshot spent, under `what`.
 * The megakernel stores its sums every COOP_PROF_EVERY passes, so a span
 * is counted to within that many passes at each end. */
#define SCHED_PROF_SLOTS 16
int sched_prof_snap(coop_rt *rt, uint64_t snap[SCHED_PROF_SLOTS]);
void sched_prof_print_since(coop_rt *rt, const char *what, const uint64_t snap[SCHED_PROF_SLOTS]);
/* COOP_PROF_KILLS (a megakernel built with it alone): the slots now into
 * snap (1), else 0; and one line of how the tasks that started before
 * they had all their workers got the rest since that snapshot. */
int sched_prof_kills_snap(coop_rt *rt, uint64_t snap[SCHED_PROF_SLOTS]);
void sched_prof_kills_since(coop_rt *rt, const char *what, const uint64_t snap[SCHED_PROF_SLOTS]);

#endif
