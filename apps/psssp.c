/*
 * psssp.c: host side of the Pannotia SSSP (see psssp.cl): the transposed
 * graph (the kernel pulls over in-edges), buffers, the one cooperative task,
 * and the check against Dijkstra on the CPU (dijkstra.c).
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_psssp_cl[];
extern const struct coop_app coop_app_psssp;

#define INF 0xffffffffu

/* in-edges of g: row[n+1] (zeroed), src[m], w[m] */
static int transpose(const struct coop_graph *g, uint32_t *row, uint32_t *src, uint32_t *w) {
  uint32_t n = g->n, *pos = malloc(((size_t)n + 1) * sizeof *pos);
  if (!pos) return COOP_ENOMEM;
  for (uint32_t e = 0; e < g->m; e++) row[g->col[e] + 1]++;
  for (uint32_t v = 0; v < n; v++) row[v + 1] += row[v];
  memcpy(pos, row, ((size_t)n + 1) * sizeof *pos);
  for (uint32_t u = 0; u < n; u++)
    for (uint32_t e = g->row[u]; e < g->row[u + 1]; e++) {
      uint32_t k = pos[g->col[e]]++;
      src[k] = u;
      w[k] = g->w[e];
    }
  free(pos);
  return 0;
}

/* args: mode, in_row, in_src, in_w (the transposed graph), d (out), nd,
 * flag[2], n (psssp.cl) */
static int psssp_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                         struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  uint32_t n = g->n, m = g->m;
  if (n == 0 || in->source >= n) return COOP_EINVAL;
  int e = coop_app_sssp_admit(in, NULL, 0);
  if (e) return e;
  uint32_t *row = coop_app_task_buf(t, COOP_APP_IN, ((size_t)n + 1) * 4),
           *src = coop_app_task_buf(t, COOP_APP_IN, (m ? m : 1) * 4ul),
           *w = coop_app_task_buf(t, COOP_APP_IN, (m ? m : 1) * 4ul),
           *d = coop_app_task_buf(t, COOP_APP_INOUT, (size_t)n * 4);
  t->out = t->nargs - 1;
  uint32_t *nd = coop_app_task_buf(t, COOP_APP_IN, (size_t)n * 4);
  coop_app_task_scratch(t, 2 * 4);
  coop_app_task_u32(t, n);
  if (t->err) return t->err;
  int r = transpose(g, row, src, w);
  if (r) return r;
  memset(d, 0xff, (size_t)n * 4);
  d[in->source] = 0;
  memcpy(nd, d, (size_t)n * 4);
  return 0;
}

COOP_APP_RUN(psssp_run, coop_app_psssp);

static int psssp_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const uint32_t *d = out;
  uint32_t v, want;
  int r = coop_app_sssp_admit(in, why, len); /* what prepare refuses */
  if (r == 0) r = coop_app_ref_diff(in, d, coop_app_dijkstra, &v, &want);
  if (r == 1)
    r = coop_app_mismatch(why, len, "dist[%u] = %u, expected %u (Dijkstra from %u)", v, d[v], want,
                          in->source);
  return r;
}

const struct coop_app coop_app_psssp = {
    .name = "p-sssp",
    .kernel = "psssp",
    .source = coop_app_src_psssp_cl,
    .truth =
        "004 Table 1 p-sssp (Pannotia, 3/3 barriers resizing): Bellman-Ford as a (min,+) "
        "matrix-vector product, three resizing barriers per round",
    .input = COOP_INPUT_GRAPH,
    .run = COOP_APP_RUN_FN(psssp_run),
    .check = psssp_check,
    .make_input = NULL,
    .prepare = psssp_prepare,
    .collect = NULL,
    .elem = COOP_APP_ELEM_U32,
    .output = "u32 dist[n]: shortest distance from the source, 4294967295 = unreached",
    .has_source = 1,
    .admit = coop_app_sssp_admit,
};
