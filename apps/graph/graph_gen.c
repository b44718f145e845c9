/*
 * graph_gen.c: deterministic graph generators (graph.h) standing in for the
 * inputs of paper 004: R-MAT (rmat), a road-like grid (USA road, DIMACS) and
 * a circuit-like graph (G3_circuit, SuiteSparse). All are symmetric, without
 * self loops or repeated edges (COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP), and
 * depend only on their arguments: the random stream is splitmix64, never
 * rand(), so a seed gives the same arrays on every machine.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* ---- random numbers ---- */

struct rng {
  uint64_t s;
};

static void rng_seed(struct rng *r, uint64_t seed, uint64_t stream) {
  r->s = seed ^ (stream * 0xd1342543de82ef95ull);
}

static uint64_t rng_next(struct rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in 0..k-1 (k >= 1), by multiply-shift on the high 32 bits. */
static uint32_t rng_below(struct rng *r, uint32_t k) {
  return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)k) >> 32);
}

/* ---- edge arrays ---- */

struct elist {
  uint32_t *s, *d, *w;
  size_t n;
};

static int elist_alloc(struct elist *e, size_t cap) {
  if (!cap) cap = 1;
  e->n = 0;
  e->s = malloc(cap * sizeof *e->s);
  e->d = malloc(cap * sizeof *e->d);
  e->w = malloc(cap * sizeof *e->w);
  return e->s && e->d && e->w ? 0 : COOP_ENOMEM;
}

static void elist_free(struct elist *e) {
  free(e->s);
  free(e->d);
  free(e->w);
}

static void elist_add(struct elist *e, uint32_t s, uint32_t d, uint32_t w) {
  e->s[e->n] = s;
  e->d[e->n] = d;
  e->w[e->n] = w;
  e->n++;
}

static int elist_build(struct coop_graph *g, uint32_t n, struct elist *e) {
  int r =
      coop_graph_from_edges(g, n, e->n, e->s, e->d, e->w, COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP);
  elist_free(e);
  return r;
}

/* ---- R-MAT ---- */

int coop_graph_rmat(struct coop_graph *g, unsigned scale, unsigned edge_factor, uint64_t seed) {
  memset(g, 0, sizeof *g);
  if (scale == 0 || edge_factor == 0) return COOP_EARGS;
  if (scale > COOP_GRAPH_RMAT_MAX_SCALE) return COOP_ETOOBIG;
  uint64_t ne = (uint64_t)edge_factor << scale;
  if (ne > COOP_GRAPH_MAX_EDGES / 2) return COOP_ETOOBIG;
  struct elist e;
  if (elist_alloc(&e, (size_t)ne)) {
    elist_free(&e);
    return COOP_ENOMEM;
  }
  /* Quadrant thresholds out of 65536: a = 0.57, a+b = 0.76, a+b+c = 0.95.
   * Each 64-bit draw picks four levels, 16 bits each. */
  const uint32_t ta = 37356, tab = 49807, tabc = 62259;
  struct rng r;
  rng_seed(&r, seed, 1);
  for (uint64_t i = 0; i < ne; i++) {
    uint32_t u = 0, v = 0;
    uint64_t bits = 0;
    for (unsigned lvl = 0; lvl < scale; lvl++) {
      if (lvl % 4 == 0) bits = rng_next(&r);
      uint32_t x = (uint32_t)(bits & 0xffff);
      bits >>= 16;
      uint32_t bit = 1u << (scale - 1 - lvl);
      if (x >= tabc)
        u |= bit, v |= bit; /* d */
      else if (x >= tab)
        u |= bit; /* c */
      else if (x >= ta)
        v |= bit; /* b */
    }
    elist_add(&e, u, v, 1 + rng_below(&r, 255));
  }
  return elist_build(g, 1u << scale, &e);
}

/* ---- road-like grid ---- */

static uint32_t uf_find(uint32_t *parent, uint32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]]; /* path halving */
    x = parent[x];
  }
  return x;
}

int coop_graph_road(struct coop_graph *g, uint32_t width, uint32_t height, uint64_t seed) {
  memset(g, 0, sizeof *g);
  if (width == 0 || height == 0) return COOP_EARGS;
  uint64_t n64 = (uint64_t)width * height;
  if (n64 > COOP_GRAPH_ROAD_MAX_VERTICES) return COOP_ETOOBIG;
  uint32_t n = (uint32_t)n64;
  /* grid edge k: horizontal (k < nh) from x,y to x+1,y; else vertical to x,y+1 */
  size_t nh = (size_t)(width - 1) * height, ne = nh + (size_t)width * (height - 1);
  uint32_t *order = malloc((ne ? ne : 1) * sizeof *order);
  uint32_t *parent = malloc((size_t)n * sizeof *parent);
  uint8_t *tree = calloc(ne ? ne : 1, 1);
  struct elist e;
  int err = elist_alloc(&e, ne);
  if (err || !order || !parent || !tree) {
    free(order), free(parent), free(tree), elist_free(&e);
    return COOP_ENOMEM;
  }
  struct rng r;
  rng_seed(&r, seed, 2);
  /* A random spanning tree (Kruskal on a random edge order) keeps it connected. */
  for (size_t k = 0; k < ne; k++) order[k] = (uint32_t)k;
  for (size_t k = ne; k > 1; k--) {
    uint32_t j = rng_below(&r, (uint32_t)k);
    uint32_t t = order[k - 1];
    order[k - 1] = order[j];
    order[j] = t;
  }
  for (uint32_t v = 0; v < n; v++) parent[v] = v;
  for (size_t i = 0; i < ne; i++) {
    uint32_t k = order[i], a, b;
    if (k < nh)
      a = k / (width - 1) * width + k % (width - 1), b = a + 1;
    else
      a = k - (uint32_t)nh, b = a + width;
    uint32_t ra = uf_find(parent, a), rb = uf_find(parent, b);
    if (ra != rb) {
      parent[ra] = rb;
      tree[k] = 1;
    }
  }
  /* Every edge gets a weight; an edge off the tree is dropped with
   * probability COOP_GRAPH_ROAD_DROP_PERCENT / 100. */
  for (size_t k = 0; k < ne; k++) {
    uint32_t a, b;
    if (k < nh)
      a = (uint32_t)(k / (width - 1) * width + k % (width - 1)), b = a + 1;
    else
      a = (uint32_t)(k - nh), b = a + width;
    uint32_t w = 1 + rng_below(&r, 1000);
    int drop = rng_below(&r, 100) < COOP_GRAPH_ROAD_DROP_PERCENT;
    if (tree[k] || !drop) elist_add(&e, a, b, w);
  }
  free(order), free(parent), free(tree);
  return elist_build(g, n, &e);
}

/* ---- circuit-like ---- */

#define CIRCUIT_MAXDEG 6

struct circuit {
  uint32_t (*adj)[CIRCUIT_MAXDEG];
  uint8_t *deg, *target;
  struct elist e;
  struct rng r;
};

/* Adds u-v when both ends are below their target degree and the edge is new. */
static int circuit_link(struct circuit *c, uint32_t u, uint32_t v) {
  if (u == v || c->deg[u] >= c->target[u] || c->deg[v] >= c->target[v]) return 0;
  for (unsigned i = 0; i < c->deg[u]; i++)
    if (c->adj[u][i] == v) return 0;
  c->adj[u][c->deg[u]++] = v;
  c->adj[v][c->deg[v]++] = u;
  elist_add(&c->e, u, v, 1 + rng_below(&c->r, 1000));
  return 1;
}

int coop_graph_circuit(struct coop_graph *g, uint32_t n, uint64_t seed) {
  memset(g, 0, sizeof *g);
  if (n == 0) return COOP_EARGS;
  if (n > COOP_GRAPH_CIRCUIT_MAX_VERTICES) return COOP_ETOOBIG;
  const uint32_t csize = COOP_GRAPH_CIRCUIT_CLUSTER;
  struct circuit c = {0};
  c.adj = malloc((size_t)n * sizeof *c.adj);
  c.deg = calloc(n, 1);
  c.target = malloc(n);
  int err = elist_alloc(&c.e, (size_t)n * CIRCUIT_MAXDEG / 2);
  if (err || !c.adj || !c.deg || !c.target) {
    free(c.adj), free(c.deg), free(c.target), elist_free(&c.e);
    return COOP_ENOMEM;
  }
  rng_seed(&c.r, seed, 3);
  /* the ring 0-1-...-(n-1)-0 first: connected, degree >= 2 (n >= 3) */
  memset(c.target, CIRCUIT_MAXDEG, n);
  for (uint32_t v = 0; v < n; v++) circuit_link(&c, v, v + 1 < n ? v + 1 : 0);
  for (uint32_t v = 0; v < n; v++) c.target[v] = (uint8_t)(2 + rng_below(&c.r, 5));
  /* one chord from each cluster to a random other cluster: shallow */
  uint32_t nclusters = (n + csize - 1) / csize;
  if (nclusters >= 3)
    for (uint32_t k = 0; k < nclusters; k++) {
      uint32_t base = k * csize, size = n - base < csize ? n - base : csize;
      for (int tries = 0; tries < 8; tries++) {
        uint32_t other = rng_below(&c.r, nclusters - 1);
        other += other >= k; /* any cluster but k */
        uint32_t obase = other * csize, osize = n - obase < csize ? n - obase : csize;
        uint32_t u = base + rng_below(&c.r, size), v = obase + rng_below(&c.r, osize);
        if (circuit_link(&c, u, v)) break;
      }
    }
  /* local wiring: up to the target degree, to vertices 2..17 ids ahead in
   * the same cluster */
  for (uint32_t v = 0; v < n; v++) {
    uint32_t end = (v / csize + 1) * csize;
    if (end > n) end = n;
    for (int tries = 0; tries < 8 && c.deg[v] < c.target[v]; tries++) {
      uint32_t u = v + 2 + rng_below(&c.r, 16);
      if (u < end) circuit_link(&c, v, u);
    }
  }
  free(c.adj), free(c.deg), free(c.target);
  return elist_build(g, n, &c.e);
}
