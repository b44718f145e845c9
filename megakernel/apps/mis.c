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

static int mis_run(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
                   void **out, struct coop_rt_task_info *info) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, m = g->m;
  *out = NULL;
  if (n == 0) return COOP_EINVAL;
  uint32_t *row = coop_rt_alloc(rt, ((size_t)n + 1) * 4),
           *col = coop_rt_alloc(rt, (m ? m : 1) * 4ul), *prio = coop_rt_alloc(rt, (size_t)n * 4),
           *st = coop_rt_alloc(rt, (size_t)n * 4), *cand = coop_rt_alloc(rt, (size_t)n * 4),
           *flag = coop_rt_alloc(rt, 2 * 4);
  uint32_t *res = malloc((size_t)n * 4);
  int r = COOP_ENOMEM;
  if (row && col && prio && st && cand && flag && res) {
    memcpy(row, g->row, ((size_t)n + 1) * 4);
    memcpy(col, g->col, (size_t)m * 4);
    for (uint32_t v = 0; v < n; v++) prio[v] = coop_app_prio(v);
    uint64_t args[8] = {o->mode,
                        coop_rt_buf_arg(rt, row),
                        coop_rt_buf_arg(rt, col),
                        coop_rt_buf_arg(rt, prio),
                        coop_rt_buf_arg(rt, st),
                        coop_rt_buf_arg(rt, cand),
                        coop_rt_buf_arg(rt, flag),
                        n};
    r = coop_app_submit_wait(rt, &coop_app_mis, o, 8, args, info);
    if (!r) {
      /* 1 = in the set; an undecided vertex (a bug) shows as 2 */
      for (uint32_t v = 0; v < n; v++) res[v] = st[v] == IN ? 1u : st[v] == OUT ? 0u : 2u;
      *out = res;
      res = NULL;
    }
  }
  free(res);
  coop_rt_free(rt, row);
  coop_rt_free(rt, col);
  coop_rt_free(rt, prio);
  coop_rt_free(rt, st);
  coop_rt_free(rt, cand);
  coop_rt_free(rt, flag);
  return r;
}

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
    .run = mis_run,
    .check = mis_check,
    .make_input = NULL,
};
