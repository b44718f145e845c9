/*
 * lsssp.c: host side of the Lonestar GPU worklist SSSP (lsssp.cl): run on
 * the runtime, check against the CPU reference (dijkstra.c). Output:
 * uint32_t dist[n], 0xFFFFFFFF for vertices the source does not reach.
 * Shortest distances are unique, so the check is exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_lsssp_cl[];
extern const struct coop_app coop_app_lsssp;

#define INF 0xFFFFFFFFu

/* args: mode, row, col, w, dist (out), worklist 0 (holds the source),
 * worklist 1, size[2] = {1, 0}, stamp (zeroed), n (lsssp.cl) */
static int lsssp_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                         struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  if (in->kind != COOP_INPUT_GRAPH || g->n == 0 || in->source >= g->n) return COOP_EINVAL;
  int e = coop_app_sssp_admit(in, NULL, 0);
  if (e) return e;
  size_t n = g->n, m = g->m;
  coop_app_task_csr(t, g);
  coop_app_task_ref(t, g->w, m * 4, (m ? m : 1) * 4);
  uint32_t *dist = coop_app_task_buf(t, COOP_APP_INOUT, n * 4);
  t->out = t->nargs - 1;
  uint32_t *q0 = coop_app_task_buf(t, COOP_APP_IN, n * 4);
  coop_app_task_scratch(t, n * 4);
  uint32_t *size = coop_app_task_buf(t, COOP_APP_IN, 2 * 4);
  coop_app_task_scratch(t, n * 4);
  coop_app_task_u32(t, (uint32_t)n);
  if (t->err) return t->err;
  memset(dist, 0xff, n * 4);
  dist[in->source] = 0;
  q0[0] = in->source;
  size[0] = 1;
  size[1] = 0;
  return 0;
}

COOP_APP_RUN(lsssp_run, coop_app_lsssp);

static int lsssp_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const uint32_t *got = out;
  uint32_t v, want;
  int r = coop_app_sssp_admit(in, why, len); /* what prepare refuses */
  if (r == 0) r = coop_app_ref_diff(in, got, coop_app_dijkstra, &v, &want);
  if (r == COOP_ENOMEM) snprintf(why, len, "l-sssp reference: out of memory");
  if (r == 1)
    r = coop_app_mismatch(why, len, "dist[%u] = %lld, expected %lld (-1: unreached)", v,
                          got[v] == INF ? -1ll : (long long)got[v],
                          want == INF ? -1ll : (long long)want);
  return r;
}

const struct coop_app coop_app_lsssp = {
    .name = "l-sssp",
    .kernel = "lsssp",
    .source = coop_app_src_lsssp_cl,
    .truth =
        "004 Table 1 (thesis 000 Table 5.2 SSSP_lonestar): Lonestar GPU worklist "
        "Bellman-Ford SSSP, 2 of 2 global barriers made resizing, no kill/fork",
    .input = COOP_INPUT_GRAPH,
    .run = COOP_APP_RUN_FN(lsssp_run),
    .check = lsssp_check,
    .make_input = NULL,
    .prepare = lsssp_prepare,
    .collect = NULL,
    .elem = COOP_APP_ELEM_U32,
    .output = "u32 dist[n]: shortest distance from the source, 4294967295 = unreached",
    .has_source = 1,
    .admit = coop_app_sssp_admit,
};
