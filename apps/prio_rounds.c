/*
 * prio_rounds.c: what color and mis (the Pannotia apps that run rounds of
 * priority contests) share on the host: the vertex priorities, their task's
 * arguments, and the contest of one round for their CPU references.
 */
#include "app.h"

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

/* as the kernels' coop_prio_beats (device/api.h) */
int coop_app_beats(uint32_t u, uint32_t v) {
  uint32_t pu = coop_app_prio(u), pv = coop_app_prio(v);
  return pu > pv || (pu == pv && u > v);
}

uint32_t *coop_app_rounds_prepare(const struct coop_app_input *in, struct coop_app_task *t,
                                  enum coop_app_dir dir) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n;
  if (n == 0) {
    t->err = COOP_EINVAL;
    return NULL;
  }
  coop_app_task_csr(t, g);
  uint32_t *prio = coop_app_task_buf(t, COOP_APP_IN, (size_t)n * 4),
           *state = coop_app_task_buf(t, dir, (size_t)n * 4);
  t->out = t->nargs - 1;
  coop_app_task_scratch(t, (size_t)n * 4);
  coop_app_task_scratch(t, 2 * 4);
  coop_app_task_u32(t, n);
  if (t->err) return NULL;
  for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
  return state;
}

int coop_app_rounds_contest(const struct coop_graph *g, const uint32_t *state, uint32_t open,
                            unsigned char *cand) {
  int any = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    if (state[v] != open) continue;
    any = 1;
    cand[v] = 1;
    for (uint32_t e = g->row[v]; e < g->row[v + 1] && cand[v]; e++) {
      uint32_t u = g->col[e];
      if (u != v && state[u] == open && coop_app_beats(u, v)) cand[v] = 0;
    }
  }
  return any;
}
