/*
 * color.c: host side of the Pannotia graph colouring (see color.cl):
 * priorities, buffers, the one cooperative task, and the check (a proper
 * colouring of every vertex, equal to a CPU run of the same rounds).
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_color_cl[];
extern const struct coop_app coop_app_color;

#define NONE 0xffffffffu

/* args: mode, row, col, prio, colour (out), cand, flag[2], n (color.cl) */
static int color_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                         struct coop_app_task *t) {
  uint32_t *colour = coop_app_rounds_prepare(in, t, COOP_APP_INOUT);
  if (!colour) return t->err;
  memset(colour, 0xff, (size_t)in->graph.n * 4);
  return 0;
}

COOP_APP_RUN(color_run, coop_app_color);

/* The same rounds on the CPU: fills ref[n]. */
static int color_reference(const struct coop_app_input *in, uint32_t *ref) {
  const struct coop_graph *g = &in->graph;
  unsigned char *cand = malloc(g->n ? g->n : 1);
  if (!cand) return COOP_ENOMEM;
  for (uint32_t v = 0; v < g->n; v++) ref[v] = NONE;
  for (uint32_t round = 0; coop_app_rounds_contest(g, ref, NONE, cand); round++)
    for (uint32_t v = 0; v < g->n; v++)
      if (ref[v] == NONE && cand[v]) ref[v] = round;
  free(cand);
  return 0;
}

static int color_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *colour = out;
  for (uint32_t v = 0; v < g->n; v++) {
    if (colour[v] == NONE) {
      return coop_app_mismatch(why, len, "vertex %u is not coloured", v);
    }
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
      uint32_t u = g->col[e];
      if (u != v && colour[u] == colour[v]) {
        return coop_app_mismatch(why, len, "edge %u-%u: both ends have colour %u", v, u, colour[v]);
      }
    }
  }
  uint32_t v, want;
  int r = coop_app_ref_diff(in, colour, color_reference, &v, &want);
  if (r == 1)
    r = coop_app_mismatch(why, len, "colour[%u] = %u, expected %u (CPU run of the same rounds)", v,
                          colour[v], want);
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
