/*
 * graph.h: directed graphs in compressed sparse row form, as the graph
 * applications (docs/apps/) read them: their builders, readers and generators.
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
/* g with both directions of every edge, no self loops and no repeats (the
 * least weight kept): what an algorithm on undirected graphs (color, mis)
 * needs whatever the file gave. On error g is unchanged. */
int coop_graph_symmetrise(struct coop_graph *g);
/* An upper bound on the length of every shortest path of g: the sum over
 * the vertices of their heaviest in-edge (a shortest path is simple, and
 * enters each of its vertices at most once). Exact to 64 bits. */
uint64_t coop_graph_path_bound(const struct coop_graph *g);

/* A uniformly random graph, for tests: n vertices, about m undirected edges,
 * weights in 1..maxw (1 when maxw <= 1). Deterministic in seed. n = 0 is
 * COOP_EARGS; n > COOP_GRAPH_RANDOM_MAX_VERTICES or m >
 * COOP_GRAPH_RANDOM_MAX_EDGES COOP_ETOOBIG. */
int coop_graph_random(struct coop_graph *g, uint32_t n, uint32_t m, uint32_t maxw, uint64_t seed);

/* ---- readers (graph_read.c) ----
 * Every reader accepts any bytes without crashing: CRLF line endings, a
 * missing final newline and a UTF-8 byte order mark are fine; blanks are
 * spaces and tabs; a NUL or any other stray byte in a data line is an error.
 * Self loops and repeated edges are kept as the file gives them (no
 * COOP_GRAPH_DEDUP): an application that needs a simple graph (mis, color)
 * must skip col == v itself. Weights: DIMACS and weighted edge lists need an
 * integer 1..2^32-1; Matrix Market integer and real values v give the weight
 * round(|v|), at least 1 and saturated at 2^32-1 (pattern gives 1). Matrix
 * Market entry (i, j) is the edge i-1 -> j-1; symmetric files must list the
 * lower triangle only and get both directions (a diagonal entry once).
 * Limits (COOP_ETOOBIG): n <= COOP_GRAPH_MAX_VERTICES, stored edges <=
 * COOP_GRAPH_MAX_EDGES, and n <= 2 * (edges in the file) +
 * COOP_GRAPH_MAX_ISOLATED. Errors: COOP_EFORMAT (malformed), COOP_ENOMEM,
 * COOP_EIO (open/read), COOP_EINVAL (NULL graph). On error *g is zeroed.
 * docs/inputs.md has the full rules. */
enum coop_graph_format {
  COOP_GRAPH_AUTO = 0, /* from the content: "p sp" / "%%MatrixMarket" / else edge list */
  COOP_GRAPH_DIMACS,   /* 9th DIMACS challenge .gr: "p sp N M", "a u v w", 1-based */
  COOP_GRAPH_MTX,      /* Matrix Market coordinate, pattern/integer/real, general/symmetric */
  COOP_GRAPH_EDGES,    /* "u v [w]" per line, 0-based, '#' or '%' comments */
};
int coop_graph_read_fd(int fd, enum coop_graph_format fmt, struct coop_graph *g, char *err,
                       size_t errlen);
int coop_graph_read_mem(const char *data, size_t len, enum coop_graph_format fmt,
                        struct coop_graph *g, char *err, size_t errlen);
int coop_graph_read_file(const char *path, enum coop_graph_format fmt, struct coop_graph *g,
                         char *err, size_t errlen);

/* ---- generators (graph_gen.c), all deterministic in seed ----
 * All three are symmetric, with no self loops and no repeated edges
 * (COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP; both directions have the same
 * weight). COOP_EARGS for a zero size, COOP_ETOOBIG past the limits below. */
/* R-MAT (Chakrabarti et al.; a=0.57 b=c=0.19 d=0.05): 2^scale vertices,
 * edge_factor * 2^scale undirected edges drawn, weights 1..255; self loops
 * and repeats are then dropped, so m <= 2 * edge_factor * 2^scale. Vertex
 * ids are not permuted: vertex 0 is the hub. 1 <= scale <= 30,
 * edge_factor * 2^scale <= 2^30. */
int coop_graph_rmat(struct coop_graph *g, unsigned scale, unsigned edge_factor, uint64_t seed);
/* Road-like: a width x height grid (vertex x + y * width), 4-neighbour edges
 * with weights 1..1000; each edge outside a random spanning tree is dropped
 * with probability COOP_GRAPH_ROAD_DROP_PERCENT %, so the graph stays
 * connected: long diameter, degree <= 4, 2 * (n - 1) <= m <= 2 * (2 * width *
 * height - width - height) (stands in for USA road). width * height <= 2^29. */
int coop_graph_road(struct coop_graph *g, uint32_t width, uint32_t height, uint64_t seed);
/* Circuit-like: wide and shallow, mostly local sparse connections with
 * degree 2..6 on a ring of clusters (stands in for G3_circuit). A ring
 * 0-1-...-(n-1)-0 through all vertices (connected; degree >= 2 when n >= 3),
 * clusters of COOP_GRAPH_CIRCUIT_CLUSTER consecutive ids each with one chord
 * to a random other cluster, then links to vertices 2..17 ids ahead in the
 * same cluster up to a random target degree 2..6; weights 1..1000.
 * n <= 2^28. */
int coop_graph_circuit(struct coop_graph *g, uint32_t n, uint64_t seed);

/* ---- additions ---- */
#define COOP_GRAPH_MAX_VERTICES 2147483647u /* n < 2^31 */
#define COOP_GRAPH_MAX_EDGES 2147483648u    /* stored (directed) edges <= 2^31 */
#define COOP_GRAPH_MAX_ISOLATED 1048576u    /* see the readers' limits above */
#define COOP_GRAPH_RMAT_MAX_SCALE 30u
#define COOP_GRAPH_ROAD_MAX_VERTICES (1u << 29)
#define COOP_GRAPH_ROAD_DROP_PERCENT 25u
#define COOP_GRAPH_CIRCUIT_MAX_VERTICES (1u << 28)
#define COOP_GRAPH_CIRCUIT_CLUSTER 256u
#define COOP_GRAPH_RANDOM_MAX_VERTICES (1u << 28)
#define COOP_GRAPH_RANDOM_MAX_EDGES (1u << 29) /* drawn: at most 2^30 stored */

/* The format COOP_GRAPH_AUTO picks: COOP_GRAPH_MTX when the data starts with
 * "%%MatrixMarket" (any case), COOP_GRAPH_DIMACS when its first non-blank
 * line starts with 'c', or with "p" or "a" then a blank, else
 * COOP_GRAPH_EDGES. */
enum coop_graph_format coop_graph_detect(const char *data, size_t len);
/* "auto", "dimacs", "mtx", "edges". */
const char *coop_graph_format_name(enum coop_graph_format fmt);

#endif /* COOP_GRAPH_H */
