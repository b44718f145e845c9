/*
 * mis.c: host side of the Pannotia maximal independent set (see mis.cl):
 * priorities, buffers, the one cooperative task, and the check
 * (independent, maximal, and equal to a CPU run of the same rounds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_mis_cl[];
extern const struct coop_app coop_app_mis;

enum { UNDECIDED = 0, IN = 1, OUT = 2 };

/* args: mode, row, col, prio, st (out), cand, flag[2], n (mis.cl) */
static int mis_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                       struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, m = g->m;
  if (n == 0) return COOP_EINVAL;
  coop_app_task_ref(t, g->row, ((size_t)n + 1) * 4, ((size_t)n + 1) * 4);
  coop_app_task_ref(t, g->col, (size_t)m * 4, (m ? m : 1) * 4ul);
  uint32_t *prio = coop_app_task_buf(t, COOP_APP_IN, (size_t)n * 4);
  coop_app_task_buf(t, COOP_APP_OUT, (size_t)n * 4);
  t->out = t->nargs - 1;
  coop_app_task_scratch(t, (size_t)n * 4);
  coop_app_task_scratch(t, 2 * 4);
  coop_app_task_u32(t, n);
  if (t->err) return t->err;
  for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
  return 0;
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

/* The same rounds on the CPU: fills ref[n] with 1 (in) or 0. */
static int mis_reference(const struct coop_graph *g, uint32_t *ref) {
  uint32_t n = g->n;
  uint32_t *prio = malloc((n ? n : 1) * sizeof *prio);
  unsigned char *st = calloc(n ? n : 1, 1), *cand = calloc(n ? n : 1, 1);
  int r = COOP_ENOMEM;
  if (prio && st && cand) {
    for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
    for (int more = 1; more;) {
      more = 0;
      for (uint32_t v = 0; v < n; v++) {
        if (st[v] != UNDECIDED) continue;
        more = 1;
        cand[v] = 1;
        for (uint32_t e = g->row[v]; e < g->row[v + 1] && cand[v]; e++) {
          uint32_t u = g->col[e];
          if (u != v && st[u] == UNDECIDED && coop_app_beats(prio, u, v)) cand[v] = 0;
        }
      }
      for (uint32_t v = 0; v < n; v++)
        if (st[v] == UNDECIDED && cand[v]) st[v] = IN;
      for (uint32_t v = 0; v < n; v++) {
        if (st[v] != UNDECIDED) continue;
        for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++)
          if (g->col[e] != v && st[g->col[e]] == IN) {
            st[v] = OUT;
            break;
          }
      }
    }
    for (uint32_t v = 0; v < n; v++) ref[v] = st[v] == IN;
    r = 0;
  }
  free(prio);
  free(st);
  free(cand);
  return r;
}

static int mis_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *set = out;
  for (uint32_t v = 0; v < g->n; v++) {
    if (set[v] > 1) {
      snprintf(why, len, "vertex %u is undecided (%u)", v, set[v]);
      return COOP_EMISMATCH;
    }
    int covered = set[v];
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
      uint32_t u = g->col[e];
      if (u == v) continue;
      if (set[v] && set[u]) {
        snprintf(why, len, "not independent: edge %u-%u inside the set", v, u);
        return COOP_EMISMATCH;
      }
      if (set[u] == 1) covered = 1;
    }
    if (!covered) {
      snprintf(why, len, "not maximal: vertex %u and all its neighbours are outside the set", v);
      return COOP_EMISMATCH;
    }
  }
  uint32_t *ref = malloc((g->n ? g->n : 1) * sizeof *ref);
  if (!ref) return COOP_ENOMEM;
  int r = mis_reference(g, ref);
  for (uint32_t v = 0; !r && v < g->n; v++)
    if (set[v] != ref[v]) {
      snprintf(why, len, "in_set[%u] = %u, expected %u (CPU run of the same rounds)", v, set[v],
               ref[v]);
      r = COOP_EMISMATCH;
    }
  free(ref);
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
