/*
 * test_graph.c: the graph readers and generators (apps/graph/graph.h).
 * Each format is parsed from small inline inputs into an exact CSR; each
 * kind of malformed input is refused with COOP_EFORMAT (or COOP_ETOOBIG
 * past a limit) and a message naming its line; read_fd works on pipes and
 * memfds; the in-tree example files (tests/data/graphs) are one graph in
 * three formats; the generators are deterministic, symmetric, simple,
 * connected where documented; and random mutations of valid inputs never
 * crash the readers nor yield an inconsistent CSR. Inputs are copied into
 * exact-size heap blocks so that AddressSanitizer sees any read past them.
 */
#define _GNU_SOURCE /* memfd_create */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph.h"
#include "check_run.h"
#include "xorshift.h"

#ifndef COOP_GRAPH_DATA
#define COOP_GRAPH_DATA "tests/data/graphs"
#endif

/* ---- helpers ---- */

/* For hot loops: ck_assert reports every call to the runner through a pipe
 * (a write(2) each), which dominates a loop of millions of checks. */
#define REQUIRE(cond, ...)                  \
  do {                                      \
    if (!(cond)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

static char err[256];

/* Reads len bytes of s (which may hold NULs) from an exact-size copy. */
static int read_n(const char *s, size_t len, enum coop_graph_format fmt, struct coop_graph *g) {
  char *copy = malloc(len ? len : 1);
  REQUIRE(copy, "out of memory");
  memcpy(copy, s, len);
  err[0] = 'X', err[1] = '\0'; /* must be cleared on success */
  int r = coop_graph_read_mem(copy, len, fmt, g, err, sizeof err);
  free(copy);
  return r;
}

static int read_s(const char *s, enum coop_graph_format fmt, struct coop_graph *g) {
  return read_n(s, strlen(s), fmt, g);
}

/* The CSR invariants every reader and generator must keep; 0 if they hold. */
static int csr_bad(const struct coop_graph *g) {
  if (!g->row || !g->col || !g->w) return 1;
  if (g->row[0] != 0 || g->row[g->n] != g->m) return 2;
  for (uint32_t v = 0; v < g->n; v++) {
    if (g->row[v] > g->row[v + 1]) return 3;
    for (uint32_t i = g->row[v]; i < g->row[v + 1]; i++) {
      if (g->col[i] >= g->n || g->w[i] == 0) return 4;
      if (i > g->row[v] && g->col[i] < g->col[i - 1]) return 5; /* sorted within a row */
    }
  }
  return 0;
}

static void expect_csr(const struct coop_graph *g, uint32_t n, uint32_t m, const uint32_t *row,
                       const uint32_t *col, const uint32_t *w) {
  ck_assert_int_eq(csr_bad(g), 0);
  ck_assert_uint_eq(g->n, n);
  ck_assert_uint_eq(g->m, m);
  for (uint32_t v = 0; v <= n; v++) ck_assert_uint_eq(g->row[v], row[v]);
  for (uint32_t i = 0; i < m; i++) {
    ck_assert_uint_eq(g->col[i], col[i]);
    ck_assert_uint_eq(g->w[i], w ? w[i] : 1u);
  }
}

static int same_graph(const struct coop_graph *a, const struct coop_graph *b) {
  return a->n == b->n && a->m == b->m &&
         !memcmp(a->row, b->row, ((size_t)a->n + 1) * sizeof *a->row) &&
         !memcmp(a->col, b->col, (size_t)a->m * sizeof *a->col) &&
         !memcmp(a->w, b->w, (size_t)a->m * sizeof *a->w);
}

/* Weight of u->v, or 0 if there is no such edge (rows are sorted). */
static uint32_t edge_w(const struct coop_graph *g, uint32_t u, uint32_t v) {
  uint32_t lo = g->row[u], hi = g->row[u + 1];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (g->col[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->row[u + 1] && g->col[lo] == v ? g->w[lo] : 0;
}

/* Symmetric with equal weights both ways, no self loops, no repeats. */
static void expect_simple_symmetric(const struct coop_graph *g) {
  ck_assert_int_eq(csr_bad(g), 0);
  for (uint32_t u = 0; u < g->n; u++)
    for (uint32_t i = g->row[u]; i < g->row[u + 1]; i++) {
      uint32_t v = g->col[i];
      REQUIRE(v != u, "self loop at %u", u);
      REQUIRE(i == g->row[u] || v > g->col[i - 1], "row %u: %u repeated or unsorted", u, v);
      REQUIRE(edge_w(g, v, u) == g->w[i], "%u->%u has no reverse of weight %u", u, v, g->w[i]);
    }
}

/* Eccentricity of src by BFS, or -1 if some vertex is unreachable. */
static long bfs_depth(const struct coop_graph *g, uint32_t src) {
  uint32_t *dist = malloc((size_t)g->n * sizeof *dist), *q = malloc((size_t)g->n * sizeof *q);
  REQUIRE(dist && q, "out of memory");
  memset(dist, 0xff, (size_t)g->n * sizeof *dist);
  size_t head = 0, tail = 0;
  dist[src] = 0;
  q[tail++] = src;
  long depth = 0;
  while (head < tail) {
    uint32_t u = q[head++];
    if (dist[u] > depth) depth = dist[u];
    for (uint32_t i = g->row[u]; i < g->row[u + 1]; i++)
      if (dist[g->col[i]] == UINT32_MAX) {
        dist[g->col[i]] = dist[u] + 1;
        q[tail++] = g->col[i];
      }
  }
  free(dist);
  free(q);
  return tail == g->n ? depth : -1;
}

/* ---- the formats ---- */

static const char dimacs_small[] =
    "c a small DIMACS file\n"
    "c self loop and a repeated arc kept as given\n"
    "p sp 4 5\n"
    "a 1 2 7\n"
    "a 2 1 7\n"
    "a 2 3 1\n"
    "a 4 4 2\n"
    "a 1 2 3\n";
static const uint32_t dimacs_row[] = {0, 2, 4, 4, 5}, dimacs_col[] = {1, 1, 0, 2, 3},
                      dimacs_w[] = {3, 7, 7, 1, 2};

START_TEST(dimacs_exact) {
  struct coop_graph g;
  ck_assert_int_eq(read_s(dimacs_small, COOP_GRAPH_DIMACS, &g), 0);
  ck_assert_str_eq(err, "");
  expect_csr(&g, 4, 5, dimacs_row, dimacs_col, dimacs_w);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s(dimacs_small, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 4, 5, dimacs_row, dimacs_col, dimacs_w);
  coop_graph_free(&g);
}
END_TEST

/* CRLF, tabs, blank lines, no final newline, a byte order mark: same graph. */
START_TEST(dimacs_lenient_layout) {
  static const char crlf[] =
      "\xef\xbb\xbf"
      "c crlf\r\n\r\np sp 4 5\r\na\t1 2 7\r\n  a 2 1 7  \r\na 2 3 1\r\n\r\na 4 4 2\r\na 1 2 03";
  struct coop_graph g;
  ck_assert_int_eq(read_s(crlf, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 4, 5, dimacs_row, dimacs_col, dimacs_w);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s("p sp 3 0\n", COOP_GRAPH_DIMACS, &g), 0); /* no arcs */
  ck_assert_uint_eq(g.n, 3);
  ck_assert_uint_eq(g.m, 0);
  ck_assert_int_eq(csr_bad(&g), 0);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s("p sp 1 1\na 1 1 4294967295\n", COOP_GRAPH_DIMACS, &g), 0);
  ck_assert_uint_eq(g.w[0], UINT32_MAX);
  coop_graph_free(&g);
}
END_TEST

START_TEST(mtx_symmetric_pattern) {
  static const char s[] =
      "%%MatrixMarket matrix coordinate pattern symmetric\n"
      "% comment\n"
      "%\n"
      "\n"
      "3 3 4\n"
      "1 1\n"
      "2 1\n"
      "3 1\n"
      "3 2\n";
  /* the diagonal entry once, every other entry both ways */
  static const uint32_t row[] = {0, 3, 5, 7}, col[] = {0, 1, 2, 0, 2, 0, 1};
  struct coop_graph g;
  ck_assert_int_eq(read_s(s, COOP_GRAPH_MTX, &g), 0);
  expect_csr(&g, 3, 7, row, col, NULL);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s(s, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 3, 7, row, col, NULL);
  coop_graph_free(&g);
}
END_TEST

START_TEST(mtx_general_integer) {
  static const char s[] =
      "%%MatrixMarket matrix coordinate integer general\n"
      "3 3 5\n"
      "1 2 -5\n"
      "2 3 0\n"
      "3 1 +7\n"
      "1 3 99999999999\n"
      "2 1 -0\n";
  /* |v|, 0 -> 1, saturated at 2^32 - 1; entry (i, j) is the edge i -> j */
  static const uint32_t row[] = {0, 2, 4, 5}, col[] = {1, 2, 0, 2, 0},
                        w[] = {5, UINT32_MAX, 1, 1, 7};
  struct coop_graph g;
  ck_assert_int_eq(read_s(s, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 3, 5, row, col, w);
  coop_graph_free(&g);
}
END_TEST

START_TEST(mtx_real_weights) {
  static const char s[] =
      "%%matrixmarket MATRIX Coordinate REAL General\r\n"
      "4 4 6\r\n"
      "1 2 0.2\r\n"
      "1 3 2.5\r\n"
      "1 4 -3.49\r\n"
      "2 1 1e3\r\n"
      "3 1 1.5E+400\r\n"
      "4 1 .75";
  static const uint32_t row[] = {0, 3, 4, 5, 6}, col[] = {1, 2, 3, 0, 0, 0},
                        w[] = {1, 3, 3, 1000, UINT32_MAX, 1};
  struct coop_graph g;
  ck_assert_int_eq(read_s(s, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 4, 6, row, col, w);
  coop_graph_free(&g);
  ck_assert_int_eq(
      read_s("%%MatrixMarket matrix coordinate real general\n2 2 0\n", COOP_GRAPH_AUTO, &g), 0);
  ck_assert_uint_eq(g.n, 2);
  ck_assert_uint_eq(g.m, 0);
  coop_graph_free(&g);
}
END_TEST

START_TEST(edge_list_exact) {
  static const char s[] =
      "# comment\n"
      "% also a comment\n"
      "\n"
      "0 1\n"
      "1 2\n"
      "2 0\n"
      "  3\t3  \n"
      "0 1\n";
  static const uint32_t row[] = {0, 2, 3, 4, 5}, col[] = {1, 1, 2, 0, 3};
  struct coop_graph g;
  ck_assert_int_eq(read_s(s, COOP_GRAPH_AUTO, &g), 0);
  expect_csr(&g, 4, 5, row, col, NULL);
  coop_graph_free(&g);
  static const char ws[] = "5 0 9\r\n0 5 1\r\n# isolated 1..4\r\n2 2 4";
  static const uint32_t wrow[] = {0, 1, 1, 2, 2, 2, 3}, wcol[] = {5, 2, 0}, ww[] = {1, 4, 9};
  ck_assert_int_eq(read_s(ws, COOP_GRAPH_EDGES, &g), 0);
  expect_csr(&g, 6, 3, wrow, wcol, ww);
  coop_graph_free(&g);
}
END_TEST

START_TEST(detect_format) {
  static const struct {
    const char *s;
    enum coop_graph_format f;
  } cases[] = {
      {"p sp 1 0\n", COOP_GRAPH_DIMACS},
      {"\n\nc x\np sp 1 0\n", COOP_GRAPH_DIMACS},
      {"a 1 2 3\n", COOP_GRAPH_DIMACS}, /* so that the DIMACS reader names the missing p */
      {"%%MatrixMarket matrix coordinate pattern general\n", COOP_GRAPH_MTX},
      {"%%MATRIXMARKET x", COOP_GRAPH_MTX},
      {"% comment\n0 1\n", COOP_GRAPH_EDGES},
      {"# comment\n0 1\n", COOP_GRAPH_EDGES},
      {"0 1\n", COOP_GRAPH_EDGES},
      {"", COOP_GRAPH_EDGES},
      {"pp 1\n", COOP_GRAPH_EDGES},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_int_eq(coop_graph_detect(cases[i].s, strlen(cases[i].s)), cases[i].f);
  ck_assert_str_eq(coop_graph_format_name(COOP_GRAPH_DIMACS), "dimacs");
  ck_assert_str_eq(coop_graph_format_name(COOP_GRAPH_MTX), "mtx");
  ck_assert_str_eq(coop_graph_format_name(COOP_GRAPH_EDGES), "edges");
}
END_TEST

/* ---- malformed inputs ---- */

#define MTX_PG "%%MatrixMarket matrix coordinate pattern general\n"
#define MTX_PS "%%MatrixMarket matrix coordinate pattern symmetric\n"

struct bad {
  enum coop_graph_format fmt;
  const char *s;
  size_t len; /* 0: strlen(s) */
  int code;
  const char *msg; /* the message starts with this */
};

static const struct bad bad_inputs[] = {
    /* DIMACS */
    {COOP_GRAPH_AUTO, "c x\na 1 2 3\n", 0, COOP_EFORMAT,
     "line 2: missing \"p sp N M\" before the first arc"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\np sp 2 1\na 1 2 1\n", 0, COOP_EFORMAT,
     "line 2: second \"p\" line (the first is line 1)"},
    {COOP_GRAPH_DIMACS, "p sp 5 1\nc\na 1 7 1\n", 0, COOP_EFORMAT,
     "line 3: vertex 7 out of range 1..5"},
    {COOP_GRAPH_DIMACS, "p sp 5 1\na 0 1 1\n", 0, COOP_EFORMAT,
     "line 2: vertex 0 out of range 1..5"},
    {COOP_GRAPH_DIMACS, "p sp 5 1\na 1 99999999999999999999999 1\n", 0, COOP_EFORMAT,
     "line 2: vertex 99999999999999999999999 out of range 1..5"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2 0\n", 0, COOP_EFORMAT, "line 2: weight 0 is not positive"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2 4294967296\n", 0, COOP_EFORMAT,
     "line 2: weight 4294967296 does not fit 32 bits"},
    {COOP_GRAPH_DIMACS, "p sp 2 2\na 1 2 1\n", 0, COOP_EFORMAT,
     "line 1: the \"p\" line declares 2 arcs, the file has 1"},
    {COOP_GRAPH_DIMACS, "c none\np sp 0 0\n", 0, COOP_EFORMAT,
     "line 2: 0 vertices (a graph needs at least one)"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2 1\na 2 1 1\n", 0, COOP_EFORMAT,
     "line 3: more arcs than the 1 the \"p\" line declared"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2 1 9\n", 0, COOP_EFORMAT,
     "line 2: expected \"a u v w\" (found more than 4 fields)"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2\n", 0, COOP_EFORMAT,
     "line 2: expected \"a u v w\" (found 3 fields)"},
    {COOP_GRAPH_DIMACS, "p max 2 1\n", 0, COOP_EFORMAT, "line 1: problem \"max\" is not \"sp\""},
    {COOP_GRAPH_DIMACS, "c\nc\np sp 2\n", 0, COOP_EFORMAT, "line 3: expected \"p sp N M\""},
    {COOP_GRAPH_DIMACS, "p sp -2 1\n", 0, COOP_EFORMAT, "line 1: expected \"p sp N M\""},
    {COOP_GRAPH_DIMACS, "p sp 2 1\nx 1 2 3\n", 0, COOP_EFORMAT, "line 2: unknown line \"x\""},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2x 1\n", 0, COOP_EFORMAT,
     "line 2: expected \"a u v w\": \"2x\" is not a number"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\na 1 2 1\0\n", 17, COOP_EFORMAT,
     "line 2: expected \"a u v w\": \"1\\x00\" is not a number"},
    {COOP_GRAPH_DIMACS, "p sp 2 1\n\0 1 2 1\n", 17, COOP_EFORMAT, "line 2: unknown line \"\\x00\""},
    {COOP_GRAPH_DIMACS, "c only comments\n", 0, COOP_EFORMAT, "end of file: no \"p sp N M\" line"},
    {COOP_GRAPH_DIMACS, "", 0, COOP_EFORMAT, "end of file: the input is empty (no graph in it)"},
    /* Matrix Market */
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 0,
     COOP_EFORMAT, "line 1: array (dense) format is not supported"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate complex general\n", 0, COOP_EFORMAT,
     "line 1: complex values are not supported"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate real hermitian\n", 0, COOP_EFORMAT,
     "line 1: hermitian matrices are not supported"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate integer skew-symmetric\n", 0, COOP_EFORMAT,
     "line 1: skew-symmetric matrices are not supported"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket vector coordinate real general\n", 0, COOP_EFORMAT,
     "line 1: object \"vector\" is not supported"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate double general\n", 0, COOP_EFORMAT,
     "line 1: field \"double\" is unknown"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate real\n", 0, COOP_EFORMAT,
     "line 1: banner has 4 words"},
    {COOP_GRAPH_MTX, "1 2\n", 0, COOP_EFORMAT, "line 1: expected the banner"},
    {COOP_GRAPH_MTX, "", 0, COOP_EFORMAT, "end of file: the input is empty (no graph in it)"},
    {COOP_GRAPH_AUTO, MTX_PG "2 3 1\n1 1\n", 0, COOP_EFORMAT,
     "line 2: the matrix is 2 x 3; a graph needs a square matrix"},
    {COOP_GRAPH_AUTO, MTX_PG "% c\n2 2\n", 0, COOP_EFORMAT,
     "line 3: expected the size line \"rows cols nnz\""},
    {COOP_GRAPH_AUTO, MTX_PG "% only comments\n", 0, COOP_EFORMAT, "end of file: no size line"},
    {COOP_GRAPH_AUTO, MTX_PG "2 2 1\n1 3\n", 0, COOP_EFORMAT, "line 3: column 3 out of range 1..2"},
    {COOP_GRAPH_AUTO, MTX_PG "2 2 1\n0 1\n", 0, COOP_EFORMAT, "line 3: row 0 out of range 1..2"},
    {COOP_GRAPH_AUTO, MTX_PS "2 2 1\n1 2\n", 0, COOP_EFORMAT,
     "line 3: entry (1, 2) is above the diagonal of a symmetric matrix"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 1.5\n", 0,
     COOP_EFORMAT, "line 3: value \"1.5\" is not an integer"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 nan\n", 0,
     COOP_EFORMAT, "line 3: value \"nan\" is not a real number"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1e\n", 0,
     COOP_EFORMAT, "line 3: value \"1e\" is not a real number"},
    {COOP_GRAPH_AUTO, "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\n", 0,
     COOP_EFORMAT, "line 3: expected \"i j v\" (found 2 fields)"},
    {COOP_GRAPH_AUTO, MTX_PG "2 2 1\n1 2 5\n", 0, COOP_EFORMAT,
     "line 3: expected \"i j\" (found more than 2 fields)"},
    {COOP_GRAPH_AUTO, MTX_PG "% c\n2 2 2\n1 2\n", 0, COOP_EFORMAT,
     "line 3: the size line declares 2 entries, the file has 1"},
    {COOP_GRAPH_AUTO, MTX_PG "0 0 0\n", 0, COOP_EFORMAT,
     "line 2: a 0 x 0 matrix (a graph needs at least one vertex)"},
    {COOP_GRAPH_AUTO, MTX_PG "2 2 1\n1 2\n% late comment\n2 1\n", 0, COOP_EFORMAT,
     "line 5: more entries than the 1 the size line declared"},
    /* edge lists */
    {COOP_GRAPH_AUTO, "0 1\n1 2 5\n", 0, COOP_EFORMAT, "line 2: a weight, but line 1 has none"},
    {COOP_GRAPH_AUTO, "# w\n0 1 5\n\n1 2\n", 0, COOP_EFORMAT,
     "line 4: no weight, but line 2 has one"},
    {COOP_GRAPH_AUTO, "0 1 0\n", 0, COOP_EFORMAT, "line 1: weight 0 is not positive"},
    {COOP_GRAPH_AUTO, "0 1 4294967296\n", 0, COOP_EFORMAT,
     "line 1: weight 4294967296 does not fit 32 bits"},
    {COOP_GRAPH_AUTO, "0 1\n7\n", 0, COOP_EFORMAT,
     "line 2: expected \"u v\" or \"u v w\" (found 1 fields)"},
    {COOP_GRAPH_AUTO, "0 1 2 3\n", 0, COOP_EFORMAT,
     "line 1: expected \"u v\" or \"u v w\" (found more than 3 fields)"},
    {COOP_GRAPH_AUTO, "0 -1\n", 0, COOP_EFORMAT, "line 1: \"-1\" is not a non-negative integer"},
    {COOP_GRAPH_AUTO, "# c\n\n0 1\r\n1 x\r\n", 0, COOP_EFORMAT,
     "line 4: \"x\" is not a non-negative integer"},
    /* an empty file once said "no edges (an edge list needs at least one)" */
    {COOP_GRAPH_AUTO, "", 0, COOP_EFORMAT, "end of file: the input is empty (no graph in it)"},
    {COOP_GRAPH_AUTO, "\xef\xbb\xbf \r\n\t\n", 0, COOP_EFORMAT,
     "end of file: the input is empty (no graph in it)"},
    {COOP_GRAPH_EDGES, "# nothing\n\n", 0, COOP_EFORMAT, "end of file: no edges"},
    /* a Matrix Market file read as an edge list: its banner a comment, its
     * size line an edge, once "line 3: no weight, but line 2 has one" */
    {COOP_GRAPH_EDGES, MTX_PG "3 3 2\n1 2\n2 3\n", 0, COOP_EFORMAT,
     "line 1: a Matrix Market banner: read this file as mtx (--graph-format mtx, or auto)"},
    /* limits */
    {COOP_GRAPH_DIMACS, "p sp 3000000000 1\n", 0, COOP_ETOOBIG,
     "line 1: 3000000000 vertices, at most 2147483647"},
    {COOP_GRAPH_DIMACS, "p sp 5 3000000000\n", 0, COOP_ETOOBIG,
     "line 1: 3000000000 arcs, at most 2147483648"},
    {COOP_GRAPH_DIMACS, "c\np sp 2000000 1\n", 0, COOP_ETOOBIG,
     "line 2: 2000000 vertices for 1 arcs"},
    {COOP_GRAPH_AUTO, MTX_PG "3000000000 3000000000 1\n", 0, COOP_ETOOBIG,
     "line 2: 3000000000 rows, at most 2147483647"},
    {COOP_GRAPH_AUTO, MTX_PG "5 5 2147483649\n", 0, COOP_ETOOBIG,
     "line 2: 2147483649 entries, at most 2147483648"},
    {COOP_GRAPH_AUTO, MTX_PG "2000000 2000000 1\n1 1\n", 0, COOP_ETOOBIG,
     "line 2: 2000000 rows for 1 entries"},
    {COOP_GRAPH_AUTO, "0 2147483647\n", 0, COOP_ETOOBIG,
     "line 1: vertex 2147483647 out of range 0..2147483646"},
    {COOP_GRAPH_AUTO, "0 1\n0 2000000\n1 2\n", 0, COOP_ETOOBIG,
     "line 2: vertex 2000000 with only 3 edges"},
};
#define NBAD (sizeof bad_inputs / sizeof bad_inputs[0])

START_TEST(malformed_inputs) {
  const struct bad *b = &bad_inputs[_i];
  struct coop_graph g;
  memset(&g, 0x5a, sizeof g);
  int r = read_n(b->s, b->len ? b->len : strlen(b->s), b->fmt, &g);
  ck_assert_msg(r == b->code, "input %d: returned %d (%s), expected %d; message \"%s\"", _i, r,
                coop_err_name(r), b->code, err);
  ck_assert_msg(strncmp(err, b->msg, strlen(b->msg)) == 0,
                "input %d: message \"%s\", expected it to start with \"%s\"", _i, err, b->msg);
  ck_assert_ptr_null(g.row); /* zeroed on failure: coop_graph_free is safe */
  ck_assert_uint_eq(g.n, 0);
  coop_graph_free(&g);
}
END_TEST

START_TEST(argument_errors) {
  struct coop_graph g;
  ck_assert_int_eq(coop_graph_read_mem("0 1\n", 4, COOP_GRAPH_EDGES, NULL, err, sizeof err),
                   COOP_EINVAL);
  ck_assert_int_eq(coop_graph_read_mem(NULL, 4, COOP_GRAPH_EDGES, &g, err, sizeof err),
                   COOP_EINVAL);
  ck_assert_int_eq(coop_graph_read_mem("0 1\n", 4, (enum coop_graph_format)9, &g, err, sizeof err),
                   COOP_EINVAL);
  /* no room for a message, or a tiny one: still the code, never an overflow */
  ck_assert_int_eq(coop_graph_read_mem("0 x\n", 4, COOP_GRAPH_EDGES, &g, NULL, 0), COOP_EFORMAT);
  char tiny[6];
  ck_assert_int_eq(coop_graph_read_mem("0 x\n", 4, COOP_GRAPH_EDGES, &g, tiny, sizeof tiny),
                   COOP_EFORMAT);
  ck_assert_str_eq(tiny, "line ");
  /* a long field is cut in the message */
  char longer[400];
  memset(longer, '7', sizeof longer);
  memcpy(longer, "0 x", 3);
  ck_assert_int_eq(read_n(longer, sizeof longer, COOP_GRAPH_EDGES, &g), COOP_EFORMAT);
  ck_assert_ptr_nonnull(strstr(err, "..."));
  ck_assert_int_eq(
      coop_graph_read_file("/nonexistent/graph.gr", COOP_GRAPH_AUTO, &g, err, sizeof err),
      COOP_EIO);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/graph.gr"));
  ck_assert_int_eq(coop_graph_read_fd(-1, COOP_GRAPH_AUTO, &g, err, sizeof err), COOP_EIO);
  ck_assert_str_eq(err, "cannot read it: Bad file descriptor");
  /* a directory: once "end of file: read failed after 0 bytes: Is a directory" */
  ck_assert_int_eq(coop_graph_read_file("/", COOP_GRAPH_AUTO, &g, err, sizeof err), COOP_EIO);
  ck_assert_str_eq(err, "cannot read it: Is a directory");
}
END_TEST

/* ---- descriptors and files ---- */

START_TEST(read_fd_pipe_small) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  ck_assert_int_eq(write(p[1], dimacs_small, strlen(dimacs_small)), (ssize_t)strlen(dimacs_small));
  close(p[1]);
  struct coop_graph g;
  ck_assert_int_eq(coop_graph_read_fd(p[0], COOP_GRAPH_AUTO, &g, err, sizeof err), 0);
  expect_csr(&g, 4, 5, dimacs_row, dimacs_col, dimacs_w);
  coop_graph_free(&g);
  close(p[0]);
}
END_TEST

/* More than a pipe holds, written by a child in small pieces: the reader
 * must grow its buffer and keep reading until EOF. */
START_TEST(read_fd_pipe_large) {
  const uint32_t nv = 50000;
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(p[0]);
    char line[64];
    for (uint32_t v = 0; v < nv; v++) {
      int k = snprintf(line, sizeof line, "%u %u %u\n", v, (v + 1) % nv, 1 + v % 9);
      if (write(p[1], line, (size_t)k) != k) _exit(1);
    }
    _exit(0);
  }
  close(p[1]);
  struct coop_graph g;
  ck_assert_int_eq(coop_graph_read_fd(p[0], COOP_GRAPH_AUTO, &g, err, sizeof err), 0);
  close(p[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ck_assert_int_eq(csr_bad(&g), 0);
  ck_assert_uint_eq(g.n, nv);
  ck_assert_uint_eq(g.m, nv);
  for (uint32_t v = 0; v < nv; v++) REQUIRE(edge_w(&g, v, (v + 1) % nv) == 1 + v % 9, "edge %u", v);
  coop_graph_free(&g);
}
END_TEST

START_TEST(read_fd_memfd) {
  static const char s[] = MTX_PS "3 3 4\n1 1\n2 1\n3 1\n3 2\n";
  int fd = memfd_create("graph", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0); /* the reader reads from where the fd is */
  struct coop_graph g;
  ck_assert_int_eq(coop_graph_read_fd(fd, COOP_GRAPH_AUTO, &g, err, sizeof err), 0);
  ck_assert_uint_eq(g.n, 3);
  ck_assert_uint_eq(g.m, 7);
  ck_assert_int_eq(csr_bad(&g), 0);
  coop_graph_free(&g);
  /* at the end now: nothing left, which is said as such */
  ck_assert_int_eq(coop_graph_read_fd(fd, COOP_GRAPH_MTX, &g, err, sizeof err), COOP_EFORMAT);
  ck_assert_str_eq(err, "end of file: the input is empty (no graph in it)");
  close(fd);
}
END_TEST

START_TEST(example_files_agree) {
  struct coop_graph gr, mtx, txt;
  ck_assert_msg(coop_graph_read_file(COOP_GRAPH_DATA "/grid8x6.gr", COOP_GRAPH_AUTO, &gr, err,
                                     sizeof err) == 0,
                "%s", err);
  ck_assert_msg(coop_graph_read_file(COOP_GRAPH_DATA "/grid8x6.mtx", COOP_GRAPH_AUTO, &mtx, err,
                                     sizeof err) == 0,
                "%s", err);
  ck_assert_msg(coop_graph_read_file(COOP_GRAPH_DATA "/grid8x6.txt", COOP_GRAPH_AUTO, &txt, err,
                                     sizeof err) == 0,
                "%s", err);
  ck_assert_uint_eq(gr.n, 48);
  ck_assert_uint_eq(gr.m, 134);
  ck_assert(same_graph(&gr, &mtx));
  ck_assert(same_graph(&gr, &txt));
  expect_simple_symmetric(&gr);
  ck_assert_int_ge(bfs_depth(&gr, 0), 12); /* connected, at least the grid's diameter */
  ck_assert_uint_eq(edge_w(&gr, 0, 1), 69);
  coop_graph_free(&gr);
  coop_graph_free(&mtx);
  coop_graph_free(&txt);
}
END_TEST

START_TEST(example_files_malformed) {
  struct coop_graph g;
  ck_assert_int_eq(
      coop_graph_read_file(COOP_GRAPH_DATA "/bad_count.gr", COOP_GRAPH_AUTO, &g, err, sizeof err),
      COOP_EFORMAT);
  ck_assert_str_eq(err, "line 2: the \"p\" line declares 4 arcs, the file has 3");
  ck_assert_int_eq(
      coop_graph_read_file(COOP_GRAPH_DATA "/bad_range.mtx", COOP_GRAPH_AUTO, &g, err, sizeof err),
      COOP_EFORMAT);
  ck_assert_str_eq(err, "line 6: row 4 out of range 1..3");
}
END_TEST

/* A generated graph written out in each format reads back identical. */
struct text {
  char *p;
  size_t len, cap;
};

static void put(struct text *t, const char *fmt, uint32_t a, uint32_t b, uint32_t c) {
  if (t->cap - t->len < 64) {
    t->cap = t->cap ? 2 * t->cap : 1 << 16;
    t->p = realloc(t->p, t->cap);
    REQUIRE(t->p, "out of memory");
  }
  t->len += (size_t)snprintf(t->p + t->len, t->cap - t->len, fmt, a, b, c);
}

START_TEST(generated_round_trip) {
  struct coop_graph g, back;
  ck_assert_int_eq(coop_graph_road(&g, 30, 20, 9), 0);
  struct text gr = {0}, mtx = {0}, el = {0};
  put(&gr, "c generated\np sp %u %u\n", g.n, g.m, 0); /* the last one unused */
  put(&mtx, "%%%%MatrixMarket matrix coordinate integer symmetric\n%u %u %u\n", g.n, g.n, g.m / 2);
  for (uint32_t u = 0; u < g.n; u++)
    for (uint32_t i = g.row[u]; i < g.row[u + 1]; i++) {
      put(&gr, "a %u %u %u\r\n", u + 1, g.col[i] + 1, g.w[i]);
      put(&el, "%u %u %u\n", u, g.col[i], g.w[i]);
      if (g.col[i] < u) put(&mtx, "%u %u %u\n", u + 1, g.col[i] + 1, g.w[i]);
    }
  const struct text *texts[] = {&gr, &mtx, &el};
  for (int k = 0; k < 3; k++) {
    ck_assert_msg(read_n(texts[k]->p, texts[k]->len, COOP_GRAPH_AUTO, &back) == 0, "%d: %s", k,
                  err);
    ck_assert(same_graph(&g, &back));
    coop_graph_free(&back);
    free(texts[k]->p);
  }
  coop_graph_free(&g);
}
END_TEST

/* ---- generators ---- */

/* `p sp 3 1` / `a 1 2 7` once gave color and mis a graph whose arc
 * goes one way; symmetrised, it has both, and repeats and loops are gone. */
START_TEST(symmetrise_one_way_arcs) {
  struct coop_graph g;
  ck_assert_int_eq(read_s("p sp 3 1\na 1 2 7\n", COOP_GRAPH_DIMACS, &g), 0);
  ck_assert_uint_eq(g.m, 1);
  ck_assert_int_eq(coop_graph_symmetrise(&g), 0);
  static const uint32_t row[] = {0, 1, 2, 2}, col[] = {1, 0}, w[] = {7, 7};
  expect_csr(&g, 3, 2, row, col, w);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s("0 1 5\n1 0 3\n1 1 9\n0 1 4\n2 0 8\n", COOP_GRAPH_EDGES, &g), 0);
  ck_assert_int_eq(coop_graph_symmetrise(&g), 0);
  static const uint32_t row2[] = {0, 2, 3, 4}, col2[] = {1, 2, 0, 0}, w2[] = {3, 8, 3, 8};
  expect_csr(&g, 3, 4, row2, col2, w2);
  coop_graph_free(&g);
}
END_TEST

/* A path of 2^31 + 2^31 - 1 = 2^32 - 1 reached the SSSP apps'
 * "unreached" value; the bound (each vertex's heaviest in-edge, summed)
 * sees it, and stays exact past 32 bits. */
START_TEST(path_bound) {
  struct coop_graph g;
  ck_assert_int_eq(read_s("p sp 3 2\na 1 2 2147483648\na 2 3 2147483647\n", COOP_GRAPH_DIMACS, &g),
                   0);
  ck_assert_uint_eq(coop_graph_path_bound(&g), 4294967295ull);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s("p sp 3 3\na 1 2 5\na 3 2 9\na 2 3 4\n", COOP_GRAPH_DIMACS, &g), 0);
  ck_assert_uint_eq(coop_graph_path_bound(&g), 9 + 4);
  coop_graph_free(&g);
  ck_assert_int_eq(read_s("0 1 4294967295\n1 2 4294967295\n2 3 4294967295\n", COOP_GRAPH_EDGES, &g),
                   0);
  ck_assert_uint_eq(coop_graph_path_bound(&g), 3ull * 4294967295ull);
  coop_graph_free(&g);
}
END_TEST

START_TEST(rmat_graph) {
  struct coop_graph a, b, c;
  ck_assert_int_eq(coop_graph_rmat(&a, 10, 8, 1), 0);
  ck_assert_int_eq(coop_graph_rmat(&b, 10, 8, 1), 0);
  ck_assert_int_eq(coop_graph_rmat(&c, 10, 8, 2), 0);
  ck_assert(same_graph(&a, &b));
  ck_assert(!same_graph(&a, &c));
  ck_assert_uint_eq(a.n, 1024);
  ck_assert_uint_le(a.m, 2 * 8 * 1024);
  ck_assert_uint_ge(a.m, 8 * 1024); /* dedup drops some, not most */
  expect_simple_symmetric(&a);
  uint32_t maxdeg = 0, isolated = 0;
  for (uint32_t v = 0; v < a.n; v++) {
    uint32_t d = a.row[v + 1] - a.row[v];
    if (d > maxdeg) maxdeg = d;
    isolated += d == 0;
  }
  for (uint32_t i = 0; i < a.m; i++) REQUIRE(a.w[i] >= 1 && a.w[i] <= 255, "weight %u", a.w[i]);
  ck_assert_uint_eq(a.row[1] - a.row[0], maxdeg); /* skewed: vertex 0 is the hub */
  ck_assert_uint_ge(maxdeg, 100);
  ck_assert_uint_gt(isolated, 0);
  coop_graph_free(&a);
  coop_graph_free(&b);
  coop_graph_free(&c);
  ck_assert_int_eq(coop_graph_rmat(&a, 1, 1, 7), 0);
  ck_assert_uint_eq(a.n, 2);
  expect_simple_symmetric(&a);
  coop_graph_free(&a);
}
END_TEST

START_TEST(road_graph) {
  const uint32_t W = 60, H = 40, n = W * H;
  struct coop_graph a, b, c;
  ck_assert_int_eq(coop_graph_road(&a, W, H, 3), 0);
  ck_assert_int_eq(coop_graph_road(&b, W, H, 3), 0);
  ck_assert_int_eq(coop_graph_road(&c, W, H, 4), 0);
  ck_assert(same_graph(&a, &b));
  ck_assert(!same_graph(&a, &c));
  ck_assert_uint_eq(a.n, n);
  ck_assert_uint_ge(a.m, 2 * (n - 1));
  ck_assert_uint_le(a.m, 2 * (2 * n - W - H));
  ck_assert_uint_lt(a.m, 2 * (2 * n - W - H)); /* some dropped */
  expect_simple_symmetric(&a);
  for (uint32_t v = 0; v < n; v++) {
    REQUIRE(a.row[v + 1] - a.row[v] <= 4, "vertex %u: degree %u", v, a.row[v + 1] - a.row[v]);
    for (uint32_t i = a.row[v]; i < a.row[v + 1]; i++) {
      uint32_t u = a.col[i], dx = u % W > v % W ? u % W - v % W : v % W - u % W,
               dy = u / W > v / W ? u / W - v / W : v / W - u / W;
      REQUIRE(dx + dy == 1, "%u-%u are not grid neighbours", v, u);
      REQUIRE(a.w[i] >= 1 && a.w[i] <= 1000, "weight %u", a.w[i]);
    }
  }
  long depth = bfs_depth(&a, 0);
  ck_assert_int_ge(depth, (long)(W + H - 2)); /* connected and deep */
  ck_assert_int_ge(bfs_depth(&c, n - 1), (long)(W + H - 2));
  coop_graph_free(&a);
  coop_graph_free(&b);
  coop_graph_free(&c);
  /* degenerate shapes: a single vertex, a path */
  ck_assert_int_eq(coop_graph_road(&a, 1, 1, 0), 0);
  ck_assert_uint_eq(a.n, 1);
  ck_assert_uint_eq(a.m, 0);
  ck_assert_int_eq(csr_bad(&a), 0);
  coop_graph_free(&a);
  ck_assert_int_eq(coop_graph_road(&a, 1, 50, 0), 0);
  ck_assert_uint_eq(a.m, 2 * 49);
  ck_assert_int_eq(bfs_depth(&a, 0), 49);
  coop_graph_free(&a);
}
END_TEST

START_TEST(circuit_graph) {
  const uint32_t n = 20000;
  struct coop_graph a, b, c, road;
  ck_assert_int_eq(coop_graph_circuit(&a, n, 5), 0);
  ck_assert_int_eq(coop_graph_circuit(&b, n, 5), 0);
  ck_assert_int_eq(coop_graph_circuit(&c, n, 6), 0);
  ck_assert(same_graph(&a, &b));
  ck_assert(!same_graph(&a, &c));
  ck_assert_uint_eq(a.n, n);
  expect_simple_symmetric(&a);
  for (uint32_t v = 0; v < n; v++) {
    uint32_t d = a.row[v + 1] - a.row[v];
    REQUIRE(d >= 2 && d <= 6, "vertex %u: degree %u", v, d);
  }
  for (uint32_t i = 0; i < a.m; i++) REQUIRE(a.w[i] >= 1 && a.w[i] <= 1000, "weight %u", a.w[i]);
  double avg = (double)a.m / n;
  ck_assert_msg(avg > 3.0 && avg < 4.5, "average degree %.2f", avg);
  /* connected, and wide and shallow next to a road grid of the same size */
  long depth = bfs_depth(&a, 0);
  ck_assert_int_gt(depth, 0);
  ck_assert_int_gt(bfs_depth(&c, n / 2), 0);
  ck_assert_int_eq(coop_graph_road(&road, 200, 100, 5), 0);
  ck_assert_msg(depth * 3 < bfs_depth(&road, 0), "circuit depth %ld", depth);
  coop_graph_free(&a);
  coop_graph_free(&b);
  coop_graph_free(&c);
  coop_graph_free(&road);
  for (uint32_t k = 1; k <= 600; k += k < 10 ? 1 : 97) { /* small and odd sizes */
    ck_assert_int_eq(coop_graph_circuit(&a, k, k), 0);
    ck_assert_uint_eq(a.n, k);
    expect_simple_symmetric(&a);
    ck_assert_int_ge(bfs_depth(&a, k - 1), 0);
    for (uint32_t v = 0; v < k; v++) {
      uint32_t d = a.row[v + 1] - a.row[v];
      REQUIRE(d <= 6 && d >= (k >= 3 ? 2u : k - 1), "n %u vertex %u: degree %u", k, v, d);
    }
    coop_graph_free(&a);
  }
}
END_TEST

START_TEST(generator_limits) {
  struct coop_graph g;
  ck_assert_int_eq(coop_graph_rmat(&g, 0, 8, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_rmat(&g, 10, 0, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_rmat(&g, 31, 1, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_rmat(&g, 30, 2, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_rmat(&g, 4, 1u << 30, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_rmat(&g, 2, UINT32_MAX, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_road(&g, 0, 5, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_road(&g, 5, 0, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_road(&g, 65536, 65536, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_road(&g, UINT32_MAX, UINT32_MAX, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_circuit(&g, 0, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_circuit(&g, (1u << 28) + 1, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_random(&g, 0, 5, 9, 1), COOP_EARGS);
  ck_assert_int_eq(coop_graph_random(&g, (1u << 28) + 1, 5, 9, 1), COOP_ETOOBIG);
  ck_assert_int_eq(coop_graph_random(&g, 5, UINT32_MAX, 9, 1), COOP_ETOOBIG);
  ck_assert_ptr_null(g.row);
}
END_TEST

/* ---- mutations ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return coop_xorshift64(&rng_state); }

static const char *const seeds[] = {
    dimacs_small,
    "c crlf\r\np sp 3 3\r\na 1 2 1\r\na 2 3 4294967295\r\na 3 1 9",
    MTX_PS "3 3 4\n1 1\n2 1\n3 1\n3 2\n",
    "%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 -5\n2 3 0\n3 1 7\n",
    "%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 3\n2 1 0.5\n3 1 2.5e1\n4 4 -1\n",
    "# edges\n0 1\n1 2\n2 0\n3 3\n",
    "0 1 5\r\n1 0 5\r\n% x\r\n2 1 1",
};
#define NSEEDS (sizeof seeds / sizeof seeds[0])
#define MUT_MAX 512

static size_t mutate(char *b, size_t n) {
  static const char interesting[] = "\0\n\r \t-+.e9019%#acp%%";
  size_t at = n ? rnd() % n : 0;
  switch (rnd() % 4) {
    case 0: /* bit flip */
      if (n) b[at] ^= (char)(1u << (rnd() % 8));
      return n;
    case 1: /* overwrite, often with a byte that matters to the grammar */
      if (n) b[at] = rnd() % 2 ? (char)rnd() : interesting[rnd() % (sizeof interesting - 1)];
      return n;
    case 2: /* insert */
      if (n == MUT_MAX) return n;
      memmove(b + at + 1, b + at, n - at);
      b[at] = rnd() % 2 ? (char)rnd() : interesting[rnd() % (sizeof interesting - 1)];
      return n + 1;
    default: /* delete */
      if (!n) return n;
      memmove(b + at, b + at + 1, n - at - 1);
      return n - 1;
  }
}

START_TEST(random_mutations) {
  const unsigned long runs = 200000;
  unsigned long ok = 0, codes[32] = {0};
  char buf[MUT_MAX];
  for (unsigned long i = 0; i < runs; i++) {
    size_t s = rnd() % NSEEDS, n = strlen(seeds[s]);
    memcpy(buf, seeds[s], n);
    for (unsigned k = 1 + rnd() % 4; k; k--) n = mutate(buf, n);
    enum coop_graph_format fmt = rnd() % 4 ? COOP_GRAPH_AUTO : (enum coop_graph_format)(rnd() % 4);
    struct coop_graph g;
    int r = read_n(buf, n, fmt, &g);
    if (r == 0) {
      ok++;
      REQUIRE(csr_bad(&g) == 0, "run %lu: inconsistent CSR (%d)", i, csr_bad(&g));
      REQUIRE(err[0] == '\0', "run %lu: message \"%s\" on success", i, err);
      coop_graph_free(&g);
    } else {
      REQUIRE(r == COOP_EFORMAT || r == COOP_ETOOBIG, "run %lu: returned %d", i, r);
      REQUIRE(!strncmp(err, "line ", 5) || !strncmp(err, "end of file: ", 13),
              "run %lu: message \"%s\"", i, err);
      REQUIRE(g.row == NULL && g.n == 0, "run %lu: graph not zeroed on failure", i);
      codes[-r % 32]++;
    }
  }
  /* the mutations reach both sides */
  ck_assert_uint_gt(ok, runs / 20);
  ck_assert_uint_gt(codes[-COOP_EFORMAT], runs / 4);
  printf("graph mutations: %lu runs, %lu parsed, %lu EFORMAT, %lu ETOOBIG\n", runs, ok,
         codes[-COOP_EFORMAT], codes[-COOP_ETOOBIG]);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("graph");
  TCase *f = tcase_create("formats");
  tcase_add_test(f, dimacs_exact);
  tcase_add_test(f, dimacs_lenient_layout);
  tcase_add_test(f, mtx_symmetric_pattern);
  tcase_add_test(f, mtx_general_integer);
  tcase_add_test(f, mtx_real_weights);
  tcase_add_test(f, edge_list_exact);
  tcase_add_test(f, detect_format);
  suite_add_tcase(s, f);
  TCase *b = tcase_create("malformed");
  tcase_add_loop_test(b, malformed_inputs, 0, (int)NBAD);
  tcase_add_test(b, argument_errors);
  suite_add_tcase(s, b);
  TCase *io = tcase_create("io");
  tcase_set_timeout(io, 60);
  tcase_add_test(io, read_fd_pipe_small);
  tcase_add_test(io, read_fd_pipe_large);
  tcase_add_test(io, read_fd_memfd);
  tcase_add_test(io, example_files_agree);
  tcase_add_test(io, example_files_malformed);
  tcase_add_test(io, generated_round_trip);
  tcase_add_test(io, symmetrise_one_way_arcs);
  tcase_add_test(io, path_bound);
  suite_add_tcase(s, io);
  TCase *gen = tcase_create("generators");
  tcase_set_timeout(gen, 120);
  tcase_add_test(gen, rmat_graph);
  tcase_add_test(gen, road_graph);
  tcase_add_test(gen, circuit_graph);
  tcase_add_test(gen, generator_limits);
  suite_add_tcase(s, gen);
  TCase *m = tcase_create("mutations");
  tcase_set_timeout(m, 240);
  tcase_add_test(m, random_mutations);
  suite_add_tcase(s, m);
  return s;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  return coop_test_run(srunner_create(suite()));
}
