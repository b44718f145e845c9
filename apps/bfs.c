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

/* args: mode, row, col, level (out), worklist 0 (holds the source),
 * worklist 1, size[2] = {1, 0}, n (bfs.cl) */
static int bfs_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                       struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  if (in->kind != COOP_INPUT_GRAPH || g->n == 0 || in->source >= g->n) return COOP_EINVAL;
  size_t n = g->n;
  coop_app_task_csr(t, g);
  uint32_t *lev = coop_app_task_buf(t, COOP_APP_INOUT, n * 4);
  t->out = t->nargs - 1;
  uint32_t *q0 = coop_app_task_buf(t, COOP_APP_IN, n * 4);
  coop_app_task_scratch(t, n * 4);
  uint32_t *size = coop_app_task_buf(t, COOP_APP_IN, 2 * 4);
  coop_app_task_u32(t, (uint32_t)n);
  if (t->err) return t->err;
  memset(lev, 0xff, n * 4);
  lev[in->source] = 0;
  q0[0] = in->source;
  size[0] = 1;
  size[1] = 0;
  return 0;
}

COOP_APP_RUN(bfs_run, coop_app_bfs);

/* Sequential BFS with a FIFO queue. */
static int bfs_reference(const struct coop_app_input *in, uint32_t *lev) {
  const struct coop_graph *g = &in->graph;
  uint32_t src = in->source;
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
  const uint32_t *got = out;
  uint32_t v, want;
  int r = coop_app_ref_diff(in, got, bfs_reference, &v, &want);
  if (r == COOP_ENOMEM) snprintf(why, len, "bfs reference: out of memory");
  if (r == 1)
    r = coop_app_mismatch(why, len, "level[%u] = %d, expected %d (-1: unreached)", v, (int)got[v],
                          (int)want);
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
    .run = COOP_APP_RUN_FN(bfs_run),
    .check = bfs_check,
    .make_input = NULL,
    .prepare = bfs_prepare,
    .collect = NULL,
    .elem = COOP_APP_ELEM_U32,
    .output = "u32 level[n]: BFS level from the source, 4294967295 = unreached",
    .has_source = 1,
};
