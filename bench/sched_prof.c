/* sched_prof.c: see sched_prof.h. */
#include "sched_prof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A megakernel built with COOP_DEVICE_DEFINES=COOP_PROF: where the
 * scheduler's passes went (device clock): p, the slots (p[0] the passes)
 * over some span, printed under `what`. */
static const char *const step[] = {"host words", "cancels", "intake", "forks",
                                   "reap",       "serve",   "offer",  "view"};
enum { N = 1 + sizeof step / sizeof *step };

static void print_steps(coop_rt *rt, const char *what, const uint64_t *p) {
  if (!p[0]) return;
  double us = coop_rt_tick_ns(rt) / 1e3 / (double)p[0], total = 0;
  for (int k = 1; k < N; k++) total += (double)p[k];
  printf("%-36s %llu passes, mean %.3f us:", what, (unsigned long long)p[0], total * us);
  for (int k = 1; k < N; k++) printf(" %s %.3f", step[k - 1], (double)p[k] * us);
  printf("\n");
}

/* 1 when the megakernel was built with COOP_PROF alone (the per-step sums) */
static int prof_steps(void) {
  const char *defs = getenv("COOP_DEVICE_DEFINES");
  return defs && strstr(defs, "COOP_PROF") && !strstr(defs, "COOP_PROF_SUSPEND") &&
         !strstr(defs, "COOP_PROF_TASKS") && !strstr(defs, "COOP_PROF_BAR") &&
         !strstr(defs, "COOP_PROF_KILLS");
}

int sched_prof_snap(coop_rt *rt, uint64_t snap[SCHED_PROF_SLOTS]) {
  memset(snap, 0, SCHED_PROF_SLOTS * sizeof *snap);
  return prof_steps() && coop_rt_sched_profile(rt, snap, N) == N;
}

void sched_prof_print_since(coop_rt *rt, const char *what, const uint64_t snap[SCHED_PROF_SLOTS]) {
  uint64_t now[SCHED_PROF_SLOTS], d[SCHED_PROF_SLOTS];
  if (!sched_prof_snap(rt, now)) return;
  for (int k = 0; k < N; k++) d[k] = now[k] - snap[k];
  print_steps(rt, what, d);
}

/* COOP_PROF_KILLS's slots (scheduler.cl, coop__prof_kills) */
enum { NK = 13 };

int sched_prof_kills_snap(coop_rt *rt, uint64_t snap[SCHED_PROF_SLOTS]) {
  const char *defs = getenv("COOP_DEVICE_DEFINES");
  memset(snap, 0, SCHED_PROF_SLOTS * sizeof *snap);
  if (!defs || !strstr(defs, "COOP_PROF_KILLS")) return 0;
  coop_rt_sched_profile(rt, snap, NK); /* fills snap even while the count is 0 */
  return 1;
}

void sched_prof_kills_since(coop_rt *rt, const char *what, const uint64_t snap[SCHED_PROF_SLOTS]) {
  uint64_t now[SCHED_PROF_SLOTS];
  if (!sched_prof_kills_snap(rt, now)) return;
  double tick_us = coop_rt_tick_ns(rt) / 1e3;
  uint64_t n = now[0] - snap[0];
  double us = n ? tick_us / (double)n : 0.0;
  printf(
      "%s: %llu tasks started before they had their workers (COOP_PROF_KILLS), mean us from "
      "the first pass that saw one pending: an id taken %.1f, half of them %.1f, all %.1f; "
      "the longest so far %.1f\n",
      what, (unsigned long long)n, (double)(now[1] - snap[1]) * us, (double)(now[2] - snap[2]) * us,
      (double)(now[3] - snap[3]) * us, (double)now[4] * tick_us);
  /* the kills a workgroup's own offer made (primitives.cl, coop__prof_top) */
  uint64_t tops = now[5] - snap[5], late = now[8] - snap[8];
  if (!tops) return;
  double late_us = late ? tick_us / (double)late : 0.0;
  printf(
      "%s: %llu kills made by an offer, mean %.1f us after the request, %.1f workgroups each; "
      "%llu of them over 100 us: mean %.1f us, %.1f workgroups each, the killer's last step "
      "%.1f us, %llu found the top at their offer\n",
      what, (unsigned long long)tops, (double)(now[6] - snap[6]) * tick_us / (double)tops,
      (double)(now[7] - snap[7]) / (double)tops, (unsigned long long)late,
      (double)(now[9] - snap[9]) * late_us,
      late ? (double)(now[10] - snap[10]) / (double)late : 0.0,
      (double)(now[11] - snap[11]) * late_us, (unsigned long long)(now[12] - snap[12]));
}

void sched_prof_print(coop_rt *rt) {
  /* COOP_PROF_TASKS: the passes that started a task, from trace mark k - 1 to k */
  static const char *const mark[] = {"host words", "released", "validated",  "intake done",
                                     "reap etc.",  "head",     "gathered",   "id map",
                                     "release",    "RUNNING",  "serve done", "pass end"};
  const char *defs = getenv("COOP_DEVICE_DEFINES");
  /* their slots: coop-bench-suspend's, coop-bench-micro's barriers */
  if (defs && (strstr(defs, "COOP_PROF_SUSPEND") || strstr(defs, "COOP_PROF_BAR"))) return;
  int traced = defs && strstr(defs, "COOP_PROF_TASKS");
  enum { NT = 1 + sizeof mark / sizeof *mark };
  uint64_t p[NT];
  int n = traced ? NT : N;
  if (coop_rt_sched_profile(rt, p, n) != n) return;
  if (traced) {
    double us = coop_rt_tick_ns(rt) / 1e3 / (double)p[0];
    printf("%-36s %llu passes that started a task, mean us from the mark before:",
           "scheduler trace (COOP_PROF_TASKS)", (unsigned long long)p[0]);
    for (int k = 1; k < NT; k++) printf(" %s %.3f", mark[k - 1], (double)p[k] * us);
    printf("\n");
    return;
  }
  print_steps(rt, "scheduler profile (COOP_PROF)", p);
}
