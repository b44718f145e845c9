/*
 * color.c: host side of the Pannotia graph colouring (see color.cl):
 * priorities, buffers, the one cooperative task, and the check (a proper
 * colouring of every vertex, equal to a CPU run of the same rounds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_color_cl[];
extern const struct coop_app coop_app_color;

#define NONE 0xffffffffu

static int color_run(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
                     void **out, struct coop_rt_task_info *info) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, m = g->m;
  *out = NULL;
  if (n == 0) return COOP_EINVAL;
  uint32_t *row = coop_rt_alloc(rt, ((size_t)n + 1) * 4),
           *col = coop_rt_alloc(rt, (m ? m : 1) * 4ul), *prio = coop_rt_alloc(rt, (size_t)n * 4),
           *colour = coop_rt_alloc(rt, (size_t)n * 4), *cand = coop_rt_alloc(rt, (size_t)n * 4),
           *flag = coop_rt_alloc(rt, 2 * 4);
  uint32_t *res = malloc((size_t)n * 4);
  int r = COOP_ENOMEM;
  if (row && col && prio && colour && cand && flag && res) {
    memcpy(row, g->row, ((size_t)n + 1) * 4);
    memcpy(col, g->col, (size_t)m * 4);
    for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
    memset(colour, 0xff, (size_t)n * 4);
    uint64_t args[8] = {o->mode,
                        coop_rt_buf_arg(rt, row),
                        coop_rt_buf_arg(rt, col),
                        coop_rt_buf_arg(rt, prio),
                        coop_rt_buf_arg(rt, colour),
                        coop_rt_buf_arg(rt, cand),
                        coop_rt_buf_arg(rt, flag),
                        n};
    r = coop_app_submit_wait(rt, &coop_app_color, o, 8, args, info);
    if (!r) {
      memcpy(res, colour, (size_t)n * 4);
      *out = res;
      res = NULL;
    }
  }
  free(res);
  coop_rt_free(rt, row);
  coop_rt_free(rt, col);
  coop_rt_free(rt, prio);
  coop_rt_free(rt, colour);
  coop_rt_free(rt, cand);
  coop_rt_free(rt, flag);
  return r;
}

/* The same rounds on the CPU: fills ref[n]. */
static int color_reference(const struct coop_graph *g, uint32_t *ref) {
  uint32_t n = g->n;
  uint32_t *prio = malloc((size_t)n * 4);
  unsigned char *cand = malloc(n ? n : 1);
  if (!prio || !cand) {
    free(prio);
    free(cand);
    return COOP_ENOMEM;
  }
  for (uint32_t v = 0; v < n; v++) {
    prio[v] = coop_app_prio(v);
    ref[v] = NONE;
  }
  for (uint32_t round = 0, more = 1; more; round++) {
    more = 0;
    for (uint32_t v = 0; v < n; v++) {
      if (ref[v] != NONE) continue;
      more = 1;
      cand[v] = 1;
      for (uint32_t e = g->row[v]; e < g->row[v + 1] && cand[v]; e++) {
        uint32_t u = g->col[e];
        if (u != v && ref[u] == NONE && coop_app_beats(prio, u, v)) cand[v] = 0;
      }
    }
    for (uint32_t v = 0; v < n; v++)
      if (ref[v] == NONE && cand[v]) ref[v] = round;
  }
  free(prio);
  free(cand);
  return 0;
}

static int color_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *colour = out;
  for (uint32_t v = 0; v < g->n; v++) {
    if (colour[v] == NONE) {
      snprintf(why, len, "vertex %u is not coloured", v);
      return COOP_EMISMATCH;
    }
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
      uint32_t u = g->col[e];
      if (u != v && colour[u] == colour[v]) {
        snprintf(why, len, "edge %u-%u: both ends have colour %u", v, u, colour[v]);
        return COOP_EMISMATCH;
      }
    }
  }
  uint32_t *ref = malloc((g->n ? g->n : 1) * sizeof *ref);
  if (!ref) return COOP_ENOMEM;
  int r = color_reference(g, ref);
  for (uint32_t v = 0; !r && v < g->n; v++)
    if (colour[v] != ref[v]) {
      snprintf(why, len, "colour[%u] = %u, expected %u (CPU run of the same rounds)", v, colour[v],
               ref[v]);
      r = COOP_EMISMATCH;
    }
  free(ref);
  return r;
}

const struct coop_app coop_app_color = {
    .name = "color",
    .kernel = "color",
    .source = coop_app_src_color_cl,
    .truth =
        "004 Table 1 color (Pannotia, 2/2 barriers resizing): Jones-Plassmann colouring, "
        "two resizing barriers per round",
    .input = COOP_INPUT_GRAPH,
    .run = color_run,
    .check = color_check,
    .make_input = NULL,
};
