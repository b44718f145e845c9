/*
 * multitask.c: the applications' checks under multitasking: a thread
 * that keeps taking K workgroups away from whatever cooperative kernel runs,
 * by submitting non-cooperative matmul tasks of K groups one after another.
 * Each product is checked, so a task that ran on a group still owned by the
 * cooperative kernel (or vice versa) shows up as a wrong result here or
 * there.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"

struct coop_multitask {
  coop_rt *rt;
  unsigned k, gap_us;
  struct coop_matmul mm;
  pthread_t th;
  atomic_int stop;
  int ran, err;
  char why[160];
};

static void *loop(void *p) {
  struct coop_multitask *mt = p;
  while (!atomic_load(&mt->stop)) {
    coop_task_id id;
    int r = coop_matmul_submit(&mt->mm, mt->k, &id);
    if (r == 0) r = coop_rt_wait(mt->rt, id, 120000);
    struct coop_rt_task_info ti = {0};
    if (r == 0) r = coop_rt_task_info(mt->rt, id, &ti);
    if (r == 0) coop_rt_task_release(mt->rt, id);
    if (r == 0 && ti.state != COOP_TASK_DONE) r = COOP_EFAILED;
    if (r == 0)
      r = coop_matmul_check(&mt->mm, mt->why, sizeof mt->why);
    else
      snprintf(mt->why, sizeof mt->why, "matmul task of %u groups: %s", mt->k, coop_strerror(r));
    if (r) {
      mt->err = r;
      break;
    }
    mt->ran++;
    struct timespec ts = {0, (long)mt->gap_us * 1000};
    if (mt->gap_us) nanosleep(&ts, NULL);
  }
  return NULL;
}

int coop_multitask_start(struct coop_multitask **out, coop_rt *rt, unsigned k, unsigned gap_us) {
  struct coop_multitask *mt = calloc(1, sizeof *mt);
  if (!mt) return COOP_ENOMEM;
  mt->rt = rt;
  mt->k = k;
  mt->gap_us = gap_us;
  int r = coop_matmul_open(&mt->mm, rt, 24, 1);
  if (r) {
    free(mt);
    return r;
  }
  if (pthread_create(&mt->th, NULL, loop, mt)) {
    coop_matmul_close(&mt->mm);
    free(mt);
    return COOP_ENOMEM;
  }
  *out = mt;
  return 0;
}

int coop_multitask_stop(struct coop_multitask *mt, char *why, size_t len) {
  atomic_store(&mt->stop, 1);
  pthread_join(mt->th, NULL);
  int r = mt->err ? mt->err : mt->ran;
  if (mt->err && why) snprintf(why, len, "%s", mt->why);
  coop_matmul_close(&mt->mm);
  free(mt);
  return r;
}
