/*
 * common.c: what every application's host side shares: lookup by name and
 * the submit-and-wait of its one cooperative task.
 */
#include <string.h>

#include "app.h"

const struct coop_app *coop_app_find(const char *name) {
  for (unsigned i = 0; i < coop_napps; i++)
    if (!strcmp(coop_apps[i]->name, name) || !strcmp(coop_apps[i]->kernel, name))
      return coop_apps[i];
  return NULL;
}

int coop_app_submit_wait(coop_rt *rt, const struct coop_app *a, const struct coop_app_opts *o,
                         unsigned nargs, const uint64_t *args, struct coop_rt_task_info *info) {
  if (nargs == 0 || nargs > COOP_RT_MAX_ARGS || args[0] != o->mode) return COOP_EINVAL;
  int k = coop_rt_kernel_index(rt, a->kernel);
  if (k < 0) return k;
  struct coop_rt_task_desc d = {.kernel = k,
                                .groups = o->groups ? o->groups : coop_rt_workers(rt),
                                .cooperative = 1,
                                .query_barrier = o->query_barrier,
                                .nargs = nargs};
  memcpy(d.args, args, nargs * sizeof *args);
  coop_task_id id;
  int r = coop_rt_submit(rt, &d, &id);
  if (r) return r;
  r = coop_rt_wait(rt, id, o->timeout_ms);
  if (r) {
    /* still running: cancel, and wait for the cancellation to land so that
     * the caller may free the task's buffers */
    coop_rt_cancel(rt, id);
    coop_rt_wait(rt, id, -1);
  }
  struct coop_rt_task_info ti;
  int ri = coop_rt_task_info(rt, id, &ti);
  coop_rt_task_release(rt, id);
  if (r) return r;
  if (ri) return ri;
  if (info) *info = ti;
  if (ti.state == COOP_TASK_REFUSED) return COOP_EREFUSED;
  if (ti.state == COOP_TASK_CANCELLED) return COOP_ECANCELED;
  return 0;
}

/* Pannotia draws a random value per vertex; here a hash of the id
 * (murmur3's finaliser), so that runs and the reference agree. */
uint32_t coop_app_prio(uint32_t v) {
  uint32_t x = v * 0x9e3779b9u + 0x7f4a7c15u;
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

int coop_app_beats(const uint32_t *prio, uint32_t u, uint32_t v) {
  return prio[u] > prio[v] || (prio[u] == prio[v] && u > v);
}
