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

static int lsssp_run(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
                     void **out, struct coop_rt_task_info *info) {
  const struct coop_graph *g = &in->graph;
  *out = NULL;
  if (in->kind != COOP_INPUT_GRAPH || g->n == 0 || in->source >= g->n) return COOP_EINVAL;
  size_t n = g->n, m = g->m;
  uint32_t *row = coop_rt_alloc(rt, (n + 1) * 4), *col = coop_rt_alloc(rt, (m ? m : 1) * 4);
  uint32_t *w = coop_rt_alloc(rt, (m ? m : 1) * 4), *dist = coop_rt_alloc(rt, n * 4);
  uint32_t *q0 = coop_rt_alloc(rt, n * 4), *q1 = coop_rt_alloc(rt, n * 4);
  uint32_t *size = coop_rt_alloc(rt, 2 * 4), *stamp = coop_rt_alloc(rt, n * 4);
  int r = COOP_ENOMEM;
  if (row && col && w && dist && q0 && q1 && size && stamp) {
    memcpy(row, g->row, (n + 1) * 4);
    memcpy(col, g->col, m * 4);
    memcpy(w, g->w, m * 4);
    memset(dist, 0xff, n * 4);
    memset(stamp, 0, n * 4);
    dist[in->source] = 0;
    q0[0] = in->source;
    size[0] = 1;
    size[1] = 0;
    uint64_t args[10] = {o->mode,
                         coop_rt_buf_arg(rt, row),
                         coop_rt_buf_arg(rt, col),
                         coop_rt_buf_arg(rt, w),
                         coop_rt_buf_arg(rt, dist),
                         coop_rt_buf_arg(rt, q0),
                         coop_rt_buf_arg(rt, q1),
                         coop_rt_buf_arg(rt, size),
                         coop_rt_buf_arg(rt, stamp),
                         n};
    r = coop_app_submit_wait(rt, &coop_app_lsssp, o, 10, args, info);
    if (r == 0) {
      *out = malloc(n * 4);
      if (*out)
        memcpy(*out, dist, n * 4);
      else
        r = COOP_ENOMEM;
    }
  }
  coop_rt_free(rt, row);
  coop_rt_free(rt, col);
  coop_rt_free(rt, w);
  coop_rt_free(rt, dist);
  coop_rt_free(rt, q0);
  coop_rt_free(rt, q1);
  coop_rt_free(rt, size);
  coop_rt_free(rt, stamp);
  return r;
}

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
    .run = lsssp_run,
    .check = lsssp_check,
    .make_input = NULL,
};
