/*
 * mis.c: host side of the Pannotia maximal independent set (see mis.cl):
 * priorities, buffers, the one cooperative task, and the check
 * (independent, maximal, and equal to a CPU run of the same rounds).
 */
#include <stdlib.h>

#include "app.h"

extern const char coop_app_src_mis_cl[];
extern const struct coop_app coop_app_mis;

enum { UNDECIDED = 0, IN = 1, OUT = 2 };

/* args: mode, row, col, prio, st (out), cand, flag[2], n (mis.cl) */
static int mis_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                       struct coop_app_task *t) {
  return coop_app_rounds_prepare(in, t, COOP_APP_OUT) ? 0 : t->err;
}

/* 1 = in the set; an undecided vertex (a bug) shows as 2 */
static int mis_collect(const struct coop_app_input *in, struct coop_app_task *t, void **out,
                       size_t *bytes) {
  uint32_t n = in->graph.n, *st = coop_app_task_take(t, t->out);
  if (!st) return COOP_ENOMEM;
  for (uint32_t v = 0; v < n; v++) st[v] = st[v] == IN ? 1u : st[v] == OUT ? 0u : 2u;
  *out = st;
  *bytes = (size_t)n * 4;
  return 0;
}

COOP_APP_RUN(mis_run, coop_app_mis);

/* An undecided vertex with a neighbour in the set leaves the race. */
static void mis_exclude(const struct coop_graph *g, uint32_t *st) {
  for (uint32_t v = 0; v < g->n; v++) {
    if (st[v] != UNDECIDED) continue;
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++)
      if (g->col[e] != v && st[g->col[e]] == IN) {
        st[v] = OUT;
        break;
      }
  }
}

/* The same rounds on the CPU: fills ref[n] with 1 (in) or 0. */
static int mis_reference(const struct coop_app_input *in, uint32_t *ref) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, *st = calloc(n ? n : 1, sizeof *st);
  unsigned char *cand = calloc(n ? n : 1, 1);
  int r = st && cand ? 0 : COOP_ENOMEM;
  while (r == 0 && coop_app_rounds_contest(g, st, UNDECIDED, cand)) {
    for (uint32_t v = 0; v < n; v++)
      if (st[v] == UNDECIDED && cand[v]) st[v] = IN;
    mis_exclude(g, st);
  }
  for (uint32_t v = 0; r == 0 && v < n; v++) ref[v] = st[v] == IN;
  free(st);
  free(cand);
  return r;
}

static int mis_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *set = out;
  for (uint32_t v = 0; v < g->n; v++) {
    if (set[v] > 1) {
      return coop_app_mismatch(why, len, "vertex %u is undecided (%u)", v, set[v]);
    }
    int covered = set[v];
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
      uint32_t u = g->col[e];
      if (u == v) continue;
      if (set[v] && set[u]) {
        return coop_app_mismatch(why, len, "not independent: edge %u-%u inside the set", v, u);
      }
      if (set[u] == 1) covered = 1;
    }
    if (!covered) {
      return coop_app_mismatch(
          why, len, "not maximal: vertex %u and all its neighbours are outside the set", v);
    }
  }
  uint32_t v, want;
  int r = coop_app_ref_diff(in, set, mis_reference, &v, &want);
  if (r == 1)
    r = coop_app_mismatch(why, len, "in_set[%u] = %u, expected %u (CPU run of the same rounds)", v,
                          set[v], want);
  return r;
}

const struct coop_app coop_app_mis = {
    .name = "mis",
    .kernel = "mis",
    .source = coop_app_src_mis_cl,
    .truth =
        "004 Table 1 mis (Pannotia, 3/3 barriers resizing): Luby-style maximal independent "
        "set, three resizing barriers per round",
    .input = COOP_INPUT_GRAPH,
    .run = COOP_APP_RUN_FN(mis_run),
    .check = mis_check,
    .make_input = NULL,
    .prepare = mis_prepare,
    .collect = mis_collect,
    .elem = COOP_APP_ELEM_U32,
    .output = "u32 in_set[n]: 1 = in the maximal independent set, 0 = not",
    .has_source = 0,
    .symmetric = 1,
};
