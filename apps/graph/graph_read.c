/*
 * graph_read.c: the graph readers (graph.h): DIMACS .gr, Matrix Market
 * coordinate and plain edge lists, from memory, a descriptor or a path.
 *
 * The whole input is held in memory and parsed line by line with explicit
 * bounds (it is never NUL-terminated and may contain any byte). Each reader
 * collects edges into growable arrays and hands them to
 * coop_graph_from_edges. Every refusal names the line (or "end of file") and
 * the reason; a fault found only at the end that one line caused (a count
 * the header declared, a vertex id far past the others) names that line.
 * The rules are documented in graph.h and docs/inputs.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph.h"

/* ---- errors ---- */

struct ctx {
  char *err;
  size_t errlen;
};

/* The message after PREFIX ("line N: ", "end of file: " or nothing),
 * cut to the caller's buffer. */
static int vfail(struct ctx *c, int code, const char *prefix, const char *fmt, va_list ap) {
  if (c->err && c->errlen) {
    int k = snprintf(c->err, c->errlen, "%s", prefix);
    if (k >= 0 && (size_t)k < c->errlen) vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
  }
  return code;
}

/* A refusal at LINE (0: at the end of the input). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
fail(struct ctx *c, int code, unsigned long line, const char *fmt, ...) {
  char prefix[32] = "end of file: ";
  if (line) snprintf(prefix, sizeof prefix, "line %lu: ", line);
  va_list ap;
  va_start(ap, fmt);
  int r = vfail(c, code, prefix, fmt, ap);
  va_end(ap);
  return r;
}

/* A refusal of the input as a whole (memory, the read): no line to name. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail_input(struct ctx *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfail(c, code, "", fmt, ap);
  va_end(ap);
  return r;
}

/* ---- lines and fields ---- */

struct src {
  const char *p;
  size_t len, pos;
  unsigned long line; /* number of the line last returned, from 1 */
};

struct line {
  const char *s;
  size_t n;
};

/* The next line without its '\n'; 0 at the end of the input. */
static int next_line(struct src *s, struct line *l) {
  if (s->pos >= s->len) return 0;
  const char *b = s->p + s->pos;
  const char *nl = memchr(b, '\n', s->len - s->pos);
  l->s = b;
  l->n = nl ? (size_t)(nl - b) : s->len - s->pos;
  s->pos += l->n + (nl != NULL);
  s->line++;
  return 1;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

/* First byte that is not a blank, or -1 for a blank line. */
static int first_char(const struct line *l) {
  for (size_t i = 0; i < l->n; i++)
    if (!is_space(l->s[i])) return (unsigned char)l->s[i];
  return -1;
}

struct tok {
  const char *s;
  size_t n;
};

/* Splits a line into at most max fields; returns how many there are, or
 * max + 1 when there are more (the caller reports the count as "more"). */
static size_t fields(const struct line *l, struct tok *t, size_t max) {
  size_t k = 0, i = 0;
  for (;;) {
    while (i < l->n && is_space(l->s[i])) i++;
    if (i == l->n) return k;
    if (k == max) return max + 1;
    t[k].s = l->s + i;
    while (i < l->n && !is_space(l->s[i])) i++;
    t[k].n = (size_t)(l->s + i - t[k].s);
    k++;
  }
}

/* A field as text for a message: at most 24 bytes, unprintable bytes as \xNN. */
struct shown {
  char s[24 * 4 + 8];
};

static struct shown show(const struct tok *t) {
  struct shown o;
  size_t k = 0;
  for (size_t i = 0; i < t->n && i < 24; i++) {
    unsigned char ch = (unsigned char)t->s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
      o.s[k++] = (char)ch;
    else
      k += (size_t)snprintf(o.s + k, sizeof o.s - k, "\\x%02x", ch);
  }
  if (t->n > 24) memcpy(o.s + k, "...", 3), k += 3;
  o.s[k] = '\0';
  return o;
}

static int tok_is(const struct tok *t, const char *word) {
  size_t n = strlen(word);
  return t->n == n && memcmp(t->s, word, n) == 0;
}

static int tok_is_nocase(const struct tok *t, const char *word) {
  size_t n = strlen(word);
  if (t->n != n) return 0;
  for (size_t i = 0; i < n; i++) {
    char a = t->s[i], b = word[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

/* Decimal digits only; the value saturates at UINT64_MAX. 0 if not a number. */
static int parse_u64(const struct tok *t, uint64_t *v) {
  if (t->n == 0) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i < t->n; i++) {
    unsigned d = (unsigned)(unsigned char)t->s[i] - '0';
    if (d > 9) return 0;
    x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
  }
  *v = x;
  return 1;
}

/* ---- collected edges ---- */

struct edges {
  uint32_t *s, *d, *w; /* w NULL while the input has no weights */
  size_t n, cap;
  int weighted;
};

static int edges_grow(struct edges *e, size_t want) {
  if (want <= e->cap) return 0;
  size_t cap = e->cap ? e->cap : 1024;
  while (cap < want) cap *= 2;
  uint32_t *s = realloc(e->s, cap * sizeof *s);
  if (!s) return COOP_ENOMEM;
  e->s = s;
  uint32_t *d = realloc(e->d, cap * sizeof *d);
  if (!d) return COOP_ENOMEM;
  e->d = d;
  if (e->weighted) {
    uint32_t *w = realloc(e->w, cap * sizeof *w);
    if (!w) return COOP_ENOMEM;
    e->w = w;
  }
  e->cap = cap;
  return 0;
}

static int edges_push(struct edges *e, uint32_t s, uint32_t d, uint32_t w) {
  if (e->n >= COOP_GRAPH_MAX_EDGES) return COOP_ETOOBIG;
  if (e->n == e->cap) {
    int r = edges_grow(e, e->n + 1);
    if (r) return r;
  }
  e->s[e->n] = s;
  e->d[e->n] = d;
  if (e->weighted) e->w[e->n] = w;
  e->n++;
  return 0;
}

static void edges_free(struct edges *e) {
  free(e->s);
  free(e->d);
  free(e->w);
}

/* A push failure at a line: out of memory, or past the edge limit. */
static int push_failed(struct ctx *c, int r, unsigned long line) {
  if (r == COOP_ETOOBIG)
    return fail(c, r, line, "more than %lu edges", (unsigned long)COOP_GRAPH_MAX_EDGES);
  return fail(c, r, line, "out of memory");
}

/* Refuses a vertex count far larger than the edges can touch: a few bytes
 * of header could otherwise ask for gigabytes of CSR offsets. */
static int too_sparse(uint64_t n, uint64_t edges) {
  return n > 2 * edges + COOP_GRAPH_MAX_ISOLATED;
}

static int build(struct ctx *c, struct coop_graph *g, uint32_t n, struct edges *e) {
  int r = coop_graph_from_edges(g, n, e->n, e->s, e->d, e->weighted ? e->w : NULL, 0);
  if (r == COOP_ENOMEM) return fail(c, r, 0, "out of memory building the graph");
  if (r) return fail(c, r, 0, "cannot build the graph (%s)", coop_strerror(r));
  return 0;
}

/* A reservation for an input of len bytes that declares `declared` edges:
 * no more than the bytes could hold, so a lying header costs nothing. */
static int reserve(struct edges *e, uint64_t declared, size_t len, size_t min_line) {
  uint64_t fit = len / min_line + 1;
  return edges_grow(e, (size_t)(declared < fit ? declared : fit));
}

/* ---- DIMACS .gr ---- */

static int read_dimacs(struct ctx *c, struct src *s, struct coop_graph *g) {
  struct edges e = {.weighted = 1};
  struct line l;
  struct tok t[5];
  unsigned long pline = 0;
  uint32_t n = 0;
  uint64_t m = 0;
  int r = 0;
  while (next_line(s, &l)) {
    int ch = first_char(&l);
    if (ch == -1 || ch == 'c') continue;
    size_t k = fields(&l, t, 4);
    if (ch == 'p' && tok_is(&t[0], "p")) {
      if (pline) {
        r = fail(c, COOP_EFORMAT, s->line, "second \"p\" line (the first is line %lu)", pline);
        goto out;
      }
      if (k >= 2 && !tok_is(&t[1], "sp")) {
        r = fail(c, COOP_EFORMAT, s->line, "problem \"%s\" is not \"sp\" (expected \"p sp N M\")",
                 show(&t[1]).s);
        goto out;
      }
      uint64_t nn, mm;
      if (k != 4 || !parse_u64(&t[2], &nn) || !parse_u64(&t[3], &mm)) {
        r = fail(c, COOP_EFORMAT, s->line, "expected \"p sp N M\"");
        goto out;
      }
      if (nn == 0) { /* no application runs on it; refused here, where the line is known */
        r = fail(c, COOP_EFORMAT, s->line, "0 vertices (a graph needs at least one)");
        goto out;
      }
      if (nn > COOP_GRAPH_MAX_VERTICES) {
        r = fail(c, COOP_ETOOBIG, s->line, "%s vertices, at most %lu", show(&t[2]).s,
                 (unsigned long)COOP_GRAPH_MAX_VERTICES);
        goto out;
      }
      if (mm > COOP_GRAPH_MAX_EDGES) {
        r = fail(c, COOP_ETOOBIG, s->line, "%s arcs, at most %lu", show(&t[3]).s,
                 (unsigned long)COOP_GRAPH_MAX_EDGES);
        goto out;
      }
      if (too_sparse(nn, mm)) {
        r = fail(c, COOP_ETOOBIG, s->line,
                 "%s vertices for %s arcs: more than 2 * arcs + %lu vertices is refused",
                 show(&t[2]).s, show(&t[3]).s, (unsigned long)COOP_GRAPH_MAX_ISOLATED);
        goto out;
      }
      pline = s->line;
      n = (uint32_t)nn;
      m = mm;
      if ((r = reserve(&e, m, s->len - s->pos, 8))) {
        r = fail(c, r, s->line, "out of memory");
        goto out;
      }
      continue;
    }
    if (ch == 'a' && tok_is(&t[0], "a")) {
      if (!pline) {
        r = fail(c, COOP_EFORMAT, s->line, "missing \"p sp N M\" before the first arc");
        goto out;
      }
      if (k != 4) {
        r = fail(c, COOP_EFORMAT, s->line, "expected \"a u v w\" (found %s%zu fields)",
                 k > 4 ? "more than " : "", k > 4 ? (size_t)4 : k);
        goto out;
      }
      uint64_t v[3];
      for (int i = 0; i < 3; i++)
        if (!parse_u64(&t[1 + i], &v[i])) {
          r = fail(c, COOP_EFORMAT, s->line, "expected \"a u v w\": \"%s\" is not a number",
                   show(&t[1 + i]).s);
          goto out;
        }
      for (int i = 0; i < 2; i++)
        if (v[i] < 1 || v[i] > n) {
          r = fail(c, COOP_EFORMAT, s->line, "vertex %s out of range 1..%u", show(&t[1 + i]).s, n);
          goto out;
        }
      if (v[2] == 0 || v[2] > UINT32_MAX) {
        r = fail(c, COOP_EFORMAT, s->line, "weight %s %s", show(&t[3]).s,
                 v[2] ? "does not fit 32 bits" : "is not positive");
        goto out;
      }
      if (e.n == m) {
        r = fail(c, COOP_EFORMAT, s->line, "more arcs than the %lu the \"p\" line declared",
                 (unsigned long)m);
        goto out;
      }
      if ((r = edges_push(&e, (uint32_t)v[0] - 1, (uint32_t)v[1] - 1, (uint32_t)v[2]))) {
        r = push_failed(c, r, s->line);
        goto out;
      }
      continue;
    }
    r = fail(c, COOP_EFORMAT, s->line, "unknown line \"%s\" (expected c, p or a lines)",
             show(&t[0]).s);
    goto out;
  }
  if (!pline)
    r = fail(c, COOP_EFORMAT, 0, "no \"p sp N M\" line");
  else if (e.n != m)
    r = fail(c, COOP_EFORMAT, pline, "the \"p\" line declares %lu arcs, the file has %zu",
             (unsigned long)m, e.n);
  else
    r = build(c, g, n, &e);
out:
  edges_free(&e);
  return r;
}

/* ---- Matrix Market ---- */

enum mtx_field { MTX_PATTERN, MTX_INTEGER, MTX_REAL };

/* Weight rule for a value of magnitude a: round to nearest, at least 1,
 * at most UINT32_MAX. */
static uint32_t weight_of(double a) {
  if (a != a) return 1u; /* not reached: the syntax check refuses nan */
  if (a < 0) a = -a;
  if (a >= 4294967294.5) return UINT32_MAX;
  uint32_t w = (uint32_t)(a + 0.5);
  return w ? w : 1u;
}

/* Integer value: optional sign, digits; the weight is |v| (0 -> 1), saturated. */
static int mtx_int_weight(const struct tok *t, uint32_t *w) {
  struct tok d = *t;
  if (d.n && (d.s[0] == '-' || d.s[0] == '+')) d.s++, d.n--;
  uint64_t v;
  if (!parse_u64(&d, &v)) return 0;
  *w = v == 0 ? 1u : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  return 1;
}

/* Real value: [+-]digits[.digits][(e|E)[+-]digits] (or .digits); no inf/nan/hex. */
static int mtx_real_weight(const struct tok *t, uint32_t *w) {
  size_t i = 0, n = t->n, digits = 0;
  const char *s = t->s;
  char buf[128];
  if (n == 0 || n >= sizeof buf) return 0;
  if (s[i] == '+' || s[i] == '-') i++;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  }
  if (!digits) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t ed = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, ed++;
    if (!ed) return 0;
  }
  if (i != n) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  *w = weight_of(strtod(buf, NULL)); /* overflow gives HUGE_VAL: the largest weight */
  return 1;
}

static int read_mtx(struct ctx *c, struct src *s, struct coop_graph *g) {
  struct edges e = {0};
  struct line l;
  struct tok t[6];
  int r = 0, symmetric = 0;
  enum mtx_field field = MTX_PATTERN;
  if (!next_line(s, &l)) return fail(c, COOP_EFORMAT, 0, "no \"%%%%MatrixMarket\" banner");
  size_t k = fields(&l, t, 5);
  if (k == 0 || !tok_is_nocase(&t[0], "%%MatrixMarket"))
    return fail(c, COOP_EFORMAT, s->line,
                "expected the banner \"%%%%MatrixMarket matrix coordinate FIELD SYMMETRY\"");
  if (k != 5)
    return fail(c, COOP_EFORMAT, s->line,
                "banner has %s%zu words, expected \"%%%%MatrixMarket matrix coordinate FIELD "
                "SYMMETRY\"",
                k > 5 ? "more than " : "", k > 5 ? (size_t)5 : k);
  if (!tok_is_nocase(&t[1], "matrix"))
    return fail(c, COOP_EFORMAT, s->line, "object \"%s\" is not supported (only \"matrix\")",
                show(&t[1]).s);
  if (tok_is_nocase(&t[2], "array"))
    return fail(c, COOP_EFORMAT, s->line,
                "array (dense) format is not supported: a graph needs \"coordinate\"");
  if (!tok_is_nocase(&t[2], "coordinate"))
    return fail(c, COOP_EFORMAT, s->line, "format \"%s\" is unknown (expected \"coordinate\")",
                show(&t[2]).s);
  if (tok_is_nocase(&t[3], "pattern"))
    field = MTX_PATTERN;
  else if (tok_is_nocase(&t[3], "integer"))
    field = MTX_INTEGER;
  else if (tok_is_nocase(&t[3], "real"))
    field = MTX_REAL;
  else if (tok_is_nocase(&t[3], "complex"))
    return fail(c, COOP_EFORMAT, s->line,
                "complex values are not supported (pattern, integer or real)");
  else
    return fail(c, COOP_EFORMAT, s->line,
                "field \"%s\" is unknown (expected pattern, integer or real)", show(&t[3]).s);
  if (tok_is_nocase(&t[4], "general"))
    symmetric = 0;
  else if (tok_is_nocase(&t[4], "symmetric"))
    symmetric = 1;
  else if (tok_is_nocase(&t[4], "hermitian"))
    return fail(c, COOP_EFORMAT, s->line,
                "hermitian matrices are not supported (general or symmetric)");
  else if (tok_is_nocase(&t[4], "skew-symmetric"))
    return fail(c, COOP_EFORMAT, s->line,
                "skew-symmetric matrices are not supported (general or symmetric)");
  else
    return fail(c, COOP_EFORMAT, s->line,
                "symmetry \"%s\" is unknown (expected general or symmetric)", show(&t[4]).s);

  /* the size line, after comments and blank lines */
  uint64_t rows = 0, cols = 0, nnz = 0;
  for (;;) {
    if (!next_line(s, &l)) return fail(c, COOP_EFORMAT, 0, "no size line \"rows cols nnz\"");
    int ch = first_char(&l);
    if (ch == -1 || ch == '%') continue;
    k = fields(&l, t, 3);
    if (k != 3 || !parse_u64(&t[0], &rows) || !parse_u64(&t[1], &cols) || !parse_u64(&t[2], &nnz))
      return fail(c, COOP_EFORMAT, s->line, "expected the size line \"rows cols nnz\"");
    break;
  }
  unsigned long sline = s->line;
  if (rows != cols)
    return fail(c, COOP_EFORMAT, sline, "the matrix is %s x %s; a graph needs a square matrix",
                show(&t[0]).s, show(&t[1]).s);
  if (rows == 0)
    return fail(c, COOP_EFORMAT, sline, "a 0 x 0 matrix (a graph needs at least one vertex)");
  if (rows > COOP_GRAPH_MAX_VERTICES)
    return fail(c, COOP_ETOOBIG, sline, "%s rows, at most %lu", show(&t[0]).s,
                (unsigned long)COOP_GRAPH_MAX_VERTICES);
  if (nnz > COOP_GRAPH_MAX_EDGES)
    return fail(c, COOP_ETOOBIG, sline, "%s entries, at most %lu", show(&t[2]).s,
                (unsigned long)COOP_GRAPH_MAX_EDGES);
  if (too_sparse(rows, nnz))
    return fail(c, COOP_ETOOBIG, sline,
                "%s rows for %s entries: more than 2 * entries + %lu rows is refused",
                show(&t[0]).s, show(&t[2]).s, (unsigned long)COOP_GRAPH_MAX_ISOLATED);
  uint32_t n = (uint32_t)rows;
  e.weighted = field != MTX_PATTERN;
  if ((r = reserve(&e, symmetric ? 2 * nnz : nnz, s->len - s->pos, 4)))
    return fail(c, r, sline, "out of memory");

  const char *shape = field == MTX_PATTERN ? "i j" : "i j v";
  size_t want = field == MTX_PATTERN ? 2 : 3;
  uint64_t seen = 0;
  while (next_line(s, &l)) {
    int ch = first_char(&l);
    if (ch == -1 || ch == '%') continue;
    k = fields(&l, t, want);
    if (k != want) {
      r = fail(c, COOP_EFORMAT, s->line, "expected \"%s\" (found %s%zu fields)", shape,
               k > want ? "more than " : "", k > want ? want : k);
      goto out;
    }
    uint64_t ij[2];
    for (int i = 0; i < 2; i++)
      if (!parse_u64(&t[i], &ij[i])) {
        r = fail(c, COOP_EFORMAT, s->line, "expected \"%s\": \"%s\" is not a number", shape,
                 show(&t[i]).s);
        goto out;
      }
    for (int i = 0; i < 2; i++)
      if (ij[i] < 1 || ij[i] > n) {
        r = fail(c, COOP_EFORMAT, s->line, "%s %s out of range 1..%u", i ? "column" : "row",
                 show(&t[i]).s, n);
        goto out;
      }
    uint32_t w = 1;
    if (field == MTX_INTEGER && !mtx_int_weight(&t[2], &w)) {
      r = fail(c, COOP_EFORMAT, s->line, "value \"%s\" is not an integer", show(&t[2]).s);
      goto out;
    }
    if (field == MTX_REAL && !mtx_real_weight(&t[2], &w)) {
      r = fail(c, COOP_EFORMAT, s->line, "value \"%s\" is not a real number", show(&t[2]).s);
      goto out;
    }
    if (symmetric && ij[0] < ij[1]) {
      r = fail(c, COOP_EFORMAT, s->line,
               "entry (%s, %s) is above the diagonal of a symmetric matrix", show(&t[0]).s,
               show(&t[1]).s);
      goto out;
    }
    if (seen == nnz) {
      r = fail(c, COOP_EFORMAT, s->line, "more entries than the %lu the size line declared",
               (unsigned long)nnz);
      goto out;
    }
    seen++;
    uint32_t i = (uint32_t)ij[0] - 1, j = (uint32_t)ij[1] - 1;
    if ((r = edges_push(&e, i, j, w)) || (symmetric && i != j && (r = edges_push(&e, j, i, w)))) {
      r = push_failed(c, r, s->line);
      goto out;
    }
  }
  if (seen != nnz)
    r = fail(c, COOP_EFORMAT, sline, "the size line declares %lu entries, the file has %lu",
             (unsigned long)nnz, (unsigned long)seen);
  else
    r = build(c, g, n, &e);
out:
  edges_free(&e);
  return r;
}

/* ---- edge list ---- */

static int read_edges(struct ctx *c, struct src *s, struct coop_graph *g) {
  struct edges e = {.weighted = 1};
  struct line l;
  struct tok t[3];
  unsigned long first = 0;   /* first edge line: it decides whether there are weights */
  unsigned long maxline = 0; /* the line of the largest vertex id */
  int r = 0, weighted = 0;
  uint64_t maxv = 0;
  while (next_line(s, &l)) {
    int ch = first_char(&l);
    /* a Matrix Market file read as an edge list: its banner would be a
     * comment here, and its size line an edge with a weight */
    if (s->line == 1 && ch == '%' && fields(&l, t, 1) >= 1 &&
        tok_is_nocase(&t[0], "%%MatrixMarket")) {
      r = fail(c, COOP_EFORMAT, s->line,
               "a Matrix Market banner: read this file as mtx (--graph-format mtx, or auto)");
      goto out;
    }
    if (ch == -1 || ch == '#' || ch == '%') continue;
    size_t k = fields(&l, t, 3);
    if (k < 2 || k > 3) {
      r = fail(c, COOP_EFORMAT, s->line, "expected \"u v\" or \"u v w\" (found %s%zu fields)",
               k > 3 ? "more than " : "", k > 3 ? (size_t)3 : k);
      goto out;
    }
    if (!first) {
      first = s->line;
      weighted = k == 3;
    } else if ((k == 3) != weighted) {
      r = fail(c, COOP_EFORMAT, s->line,
               weighted ? "no weight, but line %lu has one (give every edge a weight or none)"
                        : "a weight, but line %lu has none (give every edge a weight or none)",
               first);
      goto out;
    }
    uint64_t v[3] = {0, 0, 1};
    for (size_t i = 0; i < k; i++)
      if (!parse_u64(&t[i], &v[i])) {
        r = fail(c, COOP_EFORMAT, s->line, "\"%s\" is not a non-negative integer", show(&t[i]).s);
        goto out;
      }
    for (int i = 0; i < 2; i++)
      if (v[i] >= COOP_GRAPH_MAX_VERTICES) {
        r = fail(c, COOP_ETOOBIG, s->line, "vertex %s out of range 0..%lu", show(&t[i]).s,
                 (unsigned long)COOP_GRAPH_MAX_VERTICES - 1);
        goto out;
      }
    if (v[2] == 0 || v[2] > UINT32_MAX) {
      r = fail(c, COOP_EFORMAT, s->line, "weight %s %s", show(&t[2]).s,
               v[2] ? "does not fit 32 bits" : "is not positive");
      goto out;
    }
    if (v[0] > maxv || v[1] > maxv || !maxline) maxline = s->line;
    if (v[0] > maxv) maxv = v[0];
    if (v[1] > maxv) maxv = v[1];
    if ((r = edges_push(&e, (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2]))) {
      r = push_failed(c, r, s->line);
      goto out;
    }
  }
  if (!first) {
    r = fail(c, COOP_EFORMAT, 0, "no edges (an edge list needs at least one)");
    goto out;
  }
  if (too_sparse(maxv + 1, e.n)) {
    r = fail(c, COOP_ETOOBIG, maxline,
             "vertex %lu with only %zu edges: more than 2 * edges + %lu vertices is refused",
             (unsigned long)maxv, e.n, (unsigned long)COOP_GRAPH_MAX_ISOLATED);
    goto out;
  }
  e.weighted = weighted;
  r = build(c, g, (uint32_t)(maxv + 1), &e);
out:
  edges_free(&e);
  return r;
}

/* ---- entry points ---- */

static int starts_nocase(const char *p, size_t len, const char *word) {
  struct tok t = {p, strlen(word)};
  return len >= t.n && tok_is_nocase(&t, word);
}

enum coop_graph_format coop_graph_detect(const char *data, size_t len) {
  if (!data) return COOP_GRAPH_EDGES;
  if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) data += 3, len -= 3;
  if (starts_nocase(data, len, "%%MatrixMarket")) return COOP_GRAPH_MTX;
  struct src s = {data, len, 0, 0};
  struct line l;
  while (next_line(&s, &l)) {
    int ch = first_char(&l);
    if (ch == -1) continue;
    if (ch != 'c' && ch != 'p' && ch != 'a') return COOP_GRAPH_EDGES;
    /* a DIMACS line type followed by a blank or the end of the line */
    size_t i = 0;
    while (is_space(l.s[i])) i++;
    if (ch == 'c' || i + 1 == l.n || is_space(l.s[i + 1])) return COOP_GRAPH_DIMACS;
    return COOP_GRAPH_EDGES;
  }
  return COOP_GRAPH_EDGES;
}

const char *coop_graph_format_name(enum coop_graph_format fmt) {
  switch (fmt) {
    case COOP_GRAPH_AUTO:
      return "auto";
    case COOP_GRAPH_DIMACS:
      return "dimacs";
    case COOP_GRAPH_MTX:
      return "mtx";
    case COOP_GRAPH_EDGES:
      return "edges";
  }
  return "unknown";
}

int coop_graph_read_mem(const char *data, size_t len, enum coop_graph_format fmt,
                        struct coop_graph *g, char *err, size_t errlen) {
  struct ctx c = {err, errlen};
  if (err && errlen) err[0] = '\0';
  if (!g) return fail_input(&c, COOP_EINVAL, "no graph to fill");
  memset(g, 0, sizeof *g);
  if (!data && len) return fail_input(&c, COOP_EINVAL, "no data");
  if (!data) data = "";
  if (fmt == COOP_GRAPH_AUTO) fmt = coop_graph_detect(data, len); /* skips the BOM itself */
  if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) data += 3, len -= 3; /* UTF-8 BOM */
  size_t blank = 0;
  while (blank < len && (is_space(data[blank]) || data[blank] == '\n')) blank++;
  if (blank == len) return fail(&c, COOP_EFORMAT, 0, "the input is empty (no graph in it)");
  struct src s = {data, len, 0, 0};
  switch (fmt) {
    case COOP_GRAPH_DIMACS:
      return read_dimacs(&c, &s, g);
    case COOP_GRAPH_MTX:
      return read_mtx(&c, &s, g);
    case COOP_GRAPH_EDGES:
      return read_edges(&c, &s, g);
    case COOP_GRAPH_AUTO:
      break;
  }
  return fail_input(&c, COOP_EINVAL, "unknown format %d", (int)fmt);
}

int coop_graph_read_fd(int fd, enum coop_graph_format fmt, struct coop_graph *g, char *err,
                       size_t errlen) {
  struct ctx c = {err, errlen};
  if (err && errlen) err[0] = '\0';
  if (g) memset(g, 0, sizeof *g);
  struct stat st;
  size_t cap = 1 << 16, len = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size < SIZE_MAX / 2)
    cap = (size_t)st.st_size + 1; /* one more byte, to see the end in one read */
  char *buf = malloc(cap);
  if (!buf) return fail_input(&c, COOP_ENOMEM, "out of memory reading the input");
  for (;;) {
    if (len == cap) {
      if (cap > SIZE_MAX / 2) {
        free(buf);
        return fail_input(&c, COOP_ETOOBIG, "input too large");
      }
      char *b = realloc(buf, cap * 2);
      if (!b) {
        free(buf);
        return fail_input(&c, COOP_ENOMEM, "out of memory reading the input (%zu bytes)", len);
      }
      buf = b;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + len, cap - len);
    if (k > 0) {
      len += (size_t)k;
      continue;
    }
    if (k == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) { /* a non-blocking descriptor: wait */
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    int e = errno;
    free(buf);
    if (len == 0) return fail_input(&c, COOP_EIO, "cannot read it: %s", strerror(e));
    return fail_input(&c, COOP_EIO, "read failed after %zu bytes: %s", len, strerror(e));
  }
  int r = coop_graph_read_mem(buf, len, fmt, g, err, errlen);
  free(buf);
  return r;
}

int coop_graph_read_file(const char *path, enum coop_graph_format fmt, struct coop_graph *g,
                         char *err, size_t errlen) {
  struct ctx c = {err, errlen};
  if (g) memset(g, 0, sizeof *g);
  if (!path) return fail_input(&c, COOP_EINVAL, "no path");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(e));
    return COOP_EIO;
  }
  int r = coop_graph_read_fd(fd, fmt, g, err, errlen);
  close(fd);
  return r;
}
