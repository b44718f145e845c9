/* sched_prof.h: the scheduler's profile of a megakernel built with
 * COOP_DEVICE_DEFINES=COOP_PROF or COOP_PROF_TASKS (docs/scheduler.md,
 * "Profile"), printed for coop-bench-micro and coop-bench-suspend. */
#ifndef COOP_BENCH_SCHED_PROF_H
#define COOP_BENCH_SCHED_PROF_H

#include "coop_rt.h"

/* One line of the totals so far; nothing when the megakernel was built
 * without either (or with COOP_PROF_SUSPEND, whose slots mean else). */
void sched_prof_print(coop_rt *rt);

#endif
