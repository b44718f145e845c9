/*
 * lsssp.c: host side of the Lonestar GPU worklist SSSP (lsssp.cl): run on
 * the runtime, CPU reference (Dijkstra with a binary heap), check. Output:
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
  coop_app_task_ref(t, g->row, (n + 1) * 4, (n + 1) * 4);
  coop_app_task_ref(t, g->col, m * 4, (m ? m : 1) * 4);
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

/* Dijkstra with a binary min-heap of (distance, vertex), lazy deletion:
 * at most m + 1 entries. Distances in 64 bits: no overflow on long paths. */
struct item {
  uint64_t d;
  uint32_t v;
};

static void heap_push(struct item *h, size_t *len, struct item x) {
  size_t i = (*len)++;
  while (i > 0 && h[(i - 1) / 2].d > x.d) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = x;
}

static struct item heap_pop(struct item *h, size_t *len) {
  struct item top = h[0], x = h[--*len];
  size_t i = 0;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= *len) break;
    if (k + 1 < *len && h[k + 1].d < h[k].d) k++;
    if (h[k].d >= x.d) break;
    h[i] = h[k];
    i = k;
  }
  if (*len) h[i] = x;
  return top;
}

static int dijkstra(const struct coop_graph *g, uint32_t src, uint64_t *dist) {
  struct item *h = malloc(((size_t)g->m + 1) * sizeof *h);
  if (!h) return COOP_ENOMEM;
  for (uint32_t v = 0; v < g->n; v++) dist[v] = UINT64_MAX;
  size_t len = 0;
  dist[src] = 0;
  heap_push(h, &len, (struct item){0, src});
  while (len) {
    struct item x = heap_pop(h, &len);
    if (x.d != dist[x.v]) continue; /* stale */
    for (uint32_t e = g->row[x.v]; e < g->row[x.v + 1]; e++) {
      uint64_t nd = x.d + g->w[e];
      uint32_t u = g->col[e];
      if (nd < dist[u]) {
        dist[u] = nd;
        heap_push(h, &len, (struct item){nd, u});
      }
    }
  }
  free(h);
  return 0;
}

static int lsssp_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const uint32_t *got = out;
  int e = coop_app_sssp_admit(in, why, len); /* what prepare refuses */
  if (e) return e;
  uint64_t *ref = malloc((size_t)g->n * sizeof *ref);
  if (!ref || dijkstra(g, in->source, ref)) {
    free(ref);
    snprintf(why, len, "l-sssp reference: out of memory");
    return COOP_ENOMEM;
  }
  int r = 0;
  for (uint32_t v = 0; v < g->n && r == 0; v++) {
    /* the device's distances are 32-bit: a longer one cannot be represented */
    uint64_t want = ref[v] >= INF ? INF : ref[v];
    if (got[v] != want) {
      snprintf(why, len, "dist[%u] = %lld, expected %lld (-1: unreached)", v,
               got[v] == INF ? -1ll : (long long)got[v], want == INF ? -1ll : (long long)want);
      r = COOP_EMISMATCH;
    }
  }
  free(ref);
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
