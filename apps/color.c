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

/* args: mode, row, col, prio, colour (out), cand, flag[2], n (color.cl) */
static int color_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                         struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, m = g->m;
  if (n == 0) return COOP_EINVAL;
  coop_app_task_ref(t, g->row, ((size_t)n + 1) * 4, ((size_t)n + 1) * 4);
  coop_app_task_ref(t, g->col, (size_t)m * 4, (m ? m : 1) * 4ul);
  uint32_t *prio = coop_app_task_buf(t, COOP_APP_IN, (size_t)n * 4),
           *colour = coop_app_task_buf(t, COOP_APP_INOUT, (size_t)n * 4);
  t->out = t->nargs - 1;
  coop_app_task_scratch(t, (size_t)n * 4);
  coop_app_task_scratch(t, 2 * 4);
  coop_app_task_u32(t, n);
  if (t->err) return t->err;
  for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
  memset(colour, 0xff, (size_t)n * 4);
  return 0;
}

COOP_APP_RUN(color_run, coop_app_color);

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
    .run = COOP_APP_RUN_FN(color_run),
    .check = color_check,
    .make_input = NULL,
    .prepare = color_prepare,
    .collect = NULL,
    .elem = COOP_APP_ELEM_U32,
    .output = "u32 colour[n]: the round in which the vertex was coloured, from 0",
    .has_source = 0,
    .symmetric = 1,
};
