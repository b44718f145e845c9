/*
 * bfs.c: host side of the Lonestar GPU style BFS (bfs.cl): run on the
 * runtime, CPU reference, check. Output: uint32_t level[n], 0xFFFFFFFF for
 * vertices the source does not reach. The levels are unique, so the check
 * is exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_bfs_cl[];
extern const struct coop_app coop_app_bfs;

#define UNREACHED 0xFFFFFFFFu

static int bfs_run(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
                   void **out, struct coop_rt_task_info *info) {
  const struct coop_graph *g = &in->graph;
  *out = NULL;
  if (in->kind != COOP_INPUT_GRAPH || g->n == 0 || in->source >= g->n) return COOP_EINVAL;
  size_t n = g->n, m = g->m;
  uint32_t *row = coop_rt_alloc(rt, (n + 1) * 4), *col = coop_rt_alloc(rt, (m ? m : 1) * 4);
  uint32_t *lev = coop_rt_alloc(rt, n * 4), *q0 = coop_rt_alloc(rt, n * 4);
  uint32_t *q1 = coop_rt_alloc(rt, n * 4), *size = coop_rt_alloc(rt, 2 * 4);
  int r = COOP_ENOMEM;
  if (row && col && lev && q0 && q1 && size) {
    memcpy(row, g->row, (n + 1) * 4);
    memcpy(col, g->col, m * 4);
    memset(lev, 0xff, n * 4);
    lev[in->source] = 0;
    q0[0] = in->source;
    size[0] = 1;
    size[1] = 0;
    uint64_t args[8] = {o->mode,
                        coop_rt_buf_arg(rt, row),
                        coop_rt_buf_arg(rt, col),
                        coop_rt_buf_arg(rt, lev),
                        coop_rt_buf_arg(rt, q0),
                        coop_rt_buf_arg(rt, q1),
                        coop_rt_buf_arg(rt, size),
                        n};
    r = coop_app_submit_wait(rt, &coop_app_bfs, o, 8, args, info);
    if (r == 0) {
      *out = malloc(n * 4);
      if (*out)
        memcpy(*out, lev, n * 4);
      else
        r = COOP_ENOMEM;
    }
  }
  coop_rt_free(rt, row);
  coop_rt_free(rt, col);
  coop_rt_free(rt, lev);
  coop_rt_free(rt, q0);
  coop_rt_free(rt, q1);
  coop_rt_free(rt, size);
  return r;
}

/* Sequential BFS with a FIFO queue. */
static int bfs_reference(const struct coop_graph *g, uint32_t src, uint32_t *lev) {
  uint32_t *q = malloc((size_t)g->n * sizeof *q);
  if (!q) return COOP_ENOMEM;
  for (uint32_t v = 0; v < g->n; v++) lev[v] = UNREACHED;
  size_t head = 0, tail = 0;
  lev[src] = 0;
  q[tail++] = src;
  while (head < tail) {
    uint32_t v = q[head++];
    for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
      uint32_t u = g->col[e];
      if (lev[u] == UNREACHED) {
        lev[u] = lev[v] + 1;
        q[tail++] = u;
      }
    }
  }
  free(q);
  return 0;
}

static int bfs_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *got = out;
  uint32_t *ref = malloc((size_t)g->n * sizeof *ref);
  if (!ref || bfs_reference(g, in->source, ref)) {
    free(ref);
    snprintf(why, len, "bfs reference: out of memory");
    return COOP_ENOMEM;
  }
  int r = 0;
  for (uint32_t v = 0; v < g->n && r == 0; v++)
    if (got[v] != ref[v]) {
      snprintf(why, len, "level[%u] = %d, expected %d (-1: unreached)", v, (int)got[v],
               (int)ref[v]);
      r = COOP_EMISMATCH;
    }
  free(ref);
  return r;
}

const struct coop_app coop_app_bfs = {
    .name = "bfs",
    .kernel = "bfs",
    .source = coop_app_src_bfs_cl,
    .truth =
        "004 Table 1 / Fig. 3-4 (thesis 000 Table 5.2): Lonestar GPU worklist BFS, "
        "2 of 2 global barriers made resizing, no kill/fork",
    .input = COOP_INPUT_GRAPH,
    .run = bfs_run,
    .check = bfs_check,
    .make_input = NULL,
};
