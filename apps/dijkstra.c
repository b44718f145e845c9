/*
 * dijkstra.c: the CPU reference of the SSSP apps (l-sssp, p-sssp): Dijkstra
 * with a binary min-heap of (distance, vertex) and lazy deletion, so at most
 * m + 1 entries. Shortest distances are unique, so both apps' checks are
 * exact against it.
 */
#include <stdlib.h>

#include "app.h"

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

/* Distances in 64 bits: no overflow on long paths. */
static int dijkstra64(const struct coop_graph *g, uint32_t src, uint64_t *dist) {
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

int coop_app_dijkstra(const struct coop_app_input *in, uint32_t *dist) {
  const struct coop_graph *g = &in->graph;
  uint64_t *d = malloc((g->n ? g->n : 1) * sizeof *d);
  int r = d ? dijkstra64(g, in->source, d) : COOP_ENOMEM;
  /* admitted: every path is shorter than 0xFFFFFFFF, which means unreached;
   * saturating below it keeps an impossible overflow from reading as such */
  for (uint32_t v = 0; r == 0 && v < g->n; v++)
    dist[v] = d[v] == UINT64_MAX ? 0xFFFFFFFFu : d[v] >= 0xFFFFFFFFu ? 0xFFFFFFFEu : (uint32_t)d[v];
  free(d);
  return r;
}
