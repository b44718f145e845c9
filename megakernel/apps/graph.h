/*
 * graph.h: directed graphs in compressed sparse row form, as the graph
 * applications (issue 4) read them: their builders, readers and generators.
 *
 * An undirected input is stored with both directions of every edge. Weights
 * are positive 32-bit integers; an input without weights gets weight 1 on
 * every edge, so `w` is never NULL. Vertices are 0..n-1 (file formats that
 * count from 1 are shifted on reading).
 *
 * Functions return 0 or a negative coop_errno code; readers also write a
 * one-line reason ("line 12: vertex 7 out of range 1..5") into err.
 */
#ifndef COOP_GRAPH_H
#define COOP_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "coop_errno.h"

struct coop_graph {
  uint32_t n;    /* vertices */
  uint32_t m;    /* directed edges stored */
  uint32_t *row; /* n + 1 offsets into col/w; row[n] == m */
  uint32_t *col; /* m edge targets, sorted within each row */
  uint32_t *w;   /* m edge weights, >= 1 */
};

/* Edges given as parallel arrays; w may be NULL (weight 1). */
enum {
  COOP_GRAPH_SYMMETRIC = 1, /* add the reverse of every edge */
  COOP_GRAPH_DEDUP = 2,     /* drop self loops and repeated edges (keeps the least weight) */
};
int coop_graph_from_edges(struct coop_graph *g, uint32_t n, size_t ne, const uint32_t *src,
                          const uint32_t *dst, const uint32_t *w, int flags);
void coop_graph_free(struct coop_graph *g);

/* A uniformly random graph, for tests: n vertices, about m undirected edges,
 * weights in 1..maxw (1 when maxw <= 1). Deterministic in seed. */
int coop_graph_random(struct coop_graph *g, uint32_t n, uint32_t m, uint32_t maxw, uint64_t seed);

/* ---- readers (graph_read.c) ---- */
enum coop_graph_format {
  COOP_GRAPH_AUTO = 0, /* from the content: "p sp" / "%%MatrixMarket" / else edge list */
  COOP_GRAPH_DIMACS,   /* 9th DIMACS challenge .gr: "p sp N M", "a u v w", 1-based */
  COOP_GRAPH_MTX,      /* Matrix Market coordinate, pattern/integer/real, general/symmetric */
  COOP_GRAPH_EDGES,    /* "u v [w]" per line, 0-based, '#' comments */
};
int coop_graph_read_fd(int fd, enum coop_graph_format fmt, struct coop_graph *g, char *err,
                       size_t errlen);
int coop_graph_read_mem(const char *data, size_t len, enum coop_graph_format fmt,
                        struct coop_graph *g, char *err, size_t errlen);
int coop_graph_read_file(const char *path, enum coop_graph_format fmt, struct coop_graph *g,
                         char *err, size_t errlen);

/* ---- generators (graph_gen.c), all deterministic in seed ---- */
/* R-MAT (Chakrabarti et al.; a=0.57 b=c=0.19 d=0.05): 2^scale vertices,
 * edge_factor * 2^scale undirected edges, weights 1..255. */
int coop_graph_rmat(struct coop_graph *g, unsigned scale, unsigned edge_factor, uint64_t seed);
/* Road-like: a width x height grid, 4-neighbour edges with weights 1..1000,
 * a few edges removed: long diameter, degree <= 4 (stands in for USA road). */
int coop_graph_road(struct coop_graph *g, uint32_t width, uint32_t height, uint64_t seed);
/* Circuit-like: wide and shallow, mostly local sparse connections with
 * degree 2..6 on a ring of clusters (stands in for G3_circuit). */
int coop_graph_circuit(struct coop_graph *g, uint32_t n, uint64_t seed);

#endif /* COOP_GRAPH_H */
