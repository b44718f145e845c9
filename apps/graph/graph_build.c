/*
 * graph_build.c: CSR construction from an edge list, shared by every reader
 * and generator, and the small random graphs the tests use.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

void coop_graph_free(struct coop_graph *g) {
  free(g->row);
  free(g->col);
  free(g->w);
  memset(g, 0, sizeof *g);
}

struct edge {
  uint32_t v, w;
};

static int edge_cmp(const void *a, const void *b) {
  const struct edge *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->w < y->w ? -1 : x->w > y->w;
}

int coop_graph_from_edges(struct coop_graph *g, uint32_t n, size_t ne, const uint32_t *src,
                          const uint32_t *dst, const uint32_t *w, int flags) {
  memset(g, 0, sizeof *g);
  size_t mult = (flags & COOP_GRAPH_SYMMETRIC) ? 2 : 1;
  if (ne > (UINT32_MAX - 1) / mult) return COOP_ETOOBIG;
  for (size_t i = 0; i < ne; i++)
    if (src[i] >= n || dst[i] >= n || (w && w[i] == 0)) return COOP_EARGS;
  size_t cap = ne * mult;
  uint32_t *row = calloc((size_t)n + 1, sizeof *row);
  struct edge *e = malloc((cap ? cap : 1) * sizeof *e);
  if (!row || !e) goto oom;
  /* counting sort by source */
  for (size_t i = 0; i < ne; i++) {
    row[src[i] + 1]++;
    if (mult == 2) row[dst[i] + 1]++;
  }
  for (uint32_t v = 0; v < n; v++) row[v + 1] += row[v];
  uint32_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
  if (!fill) goto oom;
  memcpy(fill, row, ((size_t)n + 1) * sizeof *fill);
  for (size_t i = 0; i < ne; i++) {
    uint32_t wt = w ? w[i] : 1u;
    e[fill[src[i]]++] = (struct edge){dst[i], wt};
    if (mult == 2) e[fill[dst[i]]++] = (struct edge){src[i], wt};
  }
  free(fill);
  /* sort each row by target (then weight), dedup in place if asked */
  uint32_t out = 0;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t b = row[v], end = row[v + 1];
    qsort(e + b, end - b, sizeof *e, edge_cmp);
    row[v] = out;
    for (uint32_t i = b; i < end; i++) {
      if (flags & COOP_GRAPH_DEDUP) {
        if (e[i].v == v) continue;                            /* self loop */
        if (out > row[v] && e[out - 1].v == e[i].v) continue; /* repeat: least weight first */
      }
      e[out++] = e[i];
    }
  }
  row[n] = out;
  g->n = n;
  g->m = out;
  g->row = row;
  g->col = malloc((out ? out : 1) * sizeof *g->col);
  g->w = malloc((out ? out : 1) * sizeof *g->w);
  if (!g->col || !g->w) {
    free(e);
    coop_graph_free(g);
    return COOP_ENOMEM;
  }
  for (uint32_t i = 0; i < out; i++) {
    g->col[i] = e[i].v;
    g->w[i] = e[i].w;
  }
  free(e);
  return 0;
oom:
  free(row);
  free(e);
  return COOP_ENOMEM;
}

int coop_graph_symmetrise(struct coop_graph *g) {
  size_t m = g->m;
  uint32_t *s = malloc((m ? m : 1) * sizeof *s), *d = malloc((m ? m : 1) * sizeof *d);
  struct coop_graph out;
  int r = COOP_ENOMEM;
  if (s && d) {
    for (uint32_t v = 0; v < g->n; v++)
      for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) s[e] = v, d[e] = g->col[e];
    r = coop_graph_from_edges(&out, g->n, m, s, d, g->w, COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP);
  }
  free(s);
  free(d);
  if (r) return r;
  coop_graph_free(g);
  *g = out;
  return 0;
}

uint64_t coop_graph_path_bound(const struct coop_graph *g) {
  uint32_t *heaviest = calloc(g->n ? g->n : 1, sizeof *heaviest);
  uint64_t sum = 0;
  if (!heaviest) { /* no memory for the tight bound: the loose one */
    for (uint32_t e = 0; e < g->m; e++) sum += g->w[e];
    return sum;
  }
  for (uint32_t e = 0; e < g->m; e++)
    if (g->w[e] > heaviest[g->col[e]]) heaviest[g->col[e]] = g->w[e];
  for (uint32_t v = 0; v < g->n; v++) sum += heaviest[v];
  free(heaviest);
  return sum;
}

/* splitmix64: small, seedable, good enough for test graphs */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int coop_graph_random(struct coop_graph *g, uint32_t n, uint32_t m, uint32_t maxw, uint64_t seed) {
  if (n == 0) return COOP_EARGS;
  /* unbounded, coopctl's --gen random:N:M asked for 48 GB at M = 2^32 - 1 */
  if (n > COOP_GRAPH_RANDOM_MAX_VERTICES || m > COOP_GRAPH_RANDOM_MAX_EDGES) return COOP_ETOOBIG;
  uint32_t *s = malloc((m ? m : 1) * sizeof *s), *d = malloc((m ? m : 1) * sizeof *d),
           *w = malloc((m ? m : 1) * sizeof *w);
  int r = COOP_ENOMEM;
  if (s && d && w) {
    uint64_t st = seed;
    for (uint32_t i = 0; i < m; i++) {
      s[i] = (uint32_t)(mix(&st) % n);
      d[i] = (uint32_t)(mix(&st) % n);
      w[i] = maxw > 1 ? 1u + (uint32_t)(mix(&st) % maxw) : 1u;
    }
    r = coop_graph_from_edges(g, n, m, s, d, w, COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP);
  }
  free(s);
  free(d);
  free(w);
  return r;
}
