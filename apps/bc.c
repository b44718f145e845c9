/*
 * bc.c: host side of the Pannotia betweenness centrality (bc.cl): run on
 * the runtime, CPU reference (Brandes in double precision, sigma in long
 * double for its range), check.
 *
 * Sources: vertices 0..S-1, S = in->param if nonzero (at most n), else
 * min(n, 32), to keep the test time bounded; the reference uses the same.
 * The kernel traverses them in batches of B = min(S, 2^20 / n) (at least 1):
 * B rows of n for dist, sigma, delta and the per-level scale, at most 4 MiB
 * each.
 * Output: float bc[n], bc[v] = sum over those sources s != v of
 * delta_s(v), unnormalised (not halved for undirected graphs).
 *
 * The float result depends on the order of the atomic sigma adds and of the
 * sums, so the check has a tolerance (derived below), plus two exact
 * properties that do not depend on rounding: bc[v] is 0 exactly when the
 * reference is 0 (every term of the sums is positive), and the sum of all
 * bc equals sum over s, t of (dist(s, t) - 1) (every shortest s-t path has
 * dist - 1 interior vertices), an integer computed from BFS alone, within
 * the same relative tolerance.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_bc_cl[];
extern const struct coop_app coop_app_bc;

#define INF 0xFFFFFFFFu

static uint32_t bc_sources(const struct coop_app_input *in) {
  uint32_t n = in->graph.n;
  if (in->param) return in->param < n ? in->param : n;
  return n < 32 ? n : 32;
}

static uint32_t bc_batch_size(uint32_t n, uint32_t nsrc) {
  uint32_t b = (1u << 20) / n;
  if (b > nsrc) b = nsrc;
  return b ? b : 1u;
}

/* args: mode, row, col, dist, sigma, delta (B rows of n each), bc (out,
 * zeroed), flag[n+1], n, S, B, scale (B rows of n) (bc.cl) */
static int bc_prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                      struct coop_app_task *t) {
  const struct coop_graph *g = &in->graph;
  if (in->kind != COOP_INPUT_GRAPH || g->n == 0 || g->n == INF) return COOP_EINVAL;
  size_t n = g->n;
  uint32_t nsrc = bc_sources(in), nb = bc_batch_size(g->n, nsrc);
  coop_app_task_csr(t, g);
  coop_app_task_scratch(t, nb * n * 4);
  coop_app_task_scratch(t, nb * n * 4);
  coop_app_task_scratch(t, nb * n * 4);
  coop_app_task_buf(t, COOP_APP_OUT, n * 4); /* 0.0f is all zero bits */
  t->out = t->nargs - 1;
  coop_app_task_scratch(t, (n + 1) * 4);
  coop_app_task_u32(t, (uint32_t)n);
  coop_app_task_u32(t, nsrc);
  coop_app_task_u32(t, nb);
  coop_app_task_scratch(t, nb * n * 4);
  return t->err;
}

COOP_APP_RUN(bc_run, coop_app_bc);

struct bc_ref {
  double *bc;
  double paths;     /* sum over s, t reached, t != s, of dist(s, t) - 1 */
  uint32_t depth;   /* deepest BFS level over all sources */
  double sigma_max; /* most shortest paths from a source to one vertex */
};

/* Brandes over the sources 0..S-1, in double precision. Sigma, the number
 * of shortest paths, is a long double: it passes a double's 1.8e308 between
 * opposite corners of a 512 x 512 grid; x86's long double reaches 1e4932. */
static int bc_reference(const struct coop_graph *g, uint32_t nsrc, struct bc_ref *ref) {
  uint32_t n = g->n, *dist = malloc(n * sizeof *dist), *order = malloc(n * sizeof *order);
  long double *sigma = malloc(n * sizeof *sigma);
  double *delta = malloc(n * sizeof *delta);
  ref->bc = calloc(n, sizeof *ref->bc);
  ref->paths = 0.0;
  ref->depth = 0;
  ref->sigma_max = 0.0;
  int r = COOP_ENOMEM;
  if (dist && order && sigma && delta && ref->bc) {
    for (uint32_t s = 0; s < nsrc; s++) {
      for (uint32_t v = 0; v < n; v++) {
        dist[v] = INF;
        sigma[v] = 0.0;
        delta[v] = 0.0;
      }
      size_t head = 0, tail = 0;
      dist[s] = 0;
      sigma[s] = 1.0;
      order[tail++] = s;
      while (head < tail) { /* BFS; order is by nondecreasing level */
        uint32_t v = order[head++];
        if (dist[v] > ref->depth) ref->depth = dist[v];
        if (v != s) ref->paths += dist[v] - 1.0;
        if (sigma[v] > ref->sigma_max) ref->sigma_max = (double)sigma[v];
        for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
          uint32_t w = g->col[e];
          if (dist[w] == INF) {
            dist[w] = dist[v] + 1;
            order[tail++] = w;
          }
          if (dist[w] == dist[v] + 1) sigma[w] += sigma[v];
        }
      }
      while (tail > 0) { /* dependencies, deepest first */
        uint32_t v = order[--tail];
        for (uint32_t e = g->row[v]; e < g->row[v + 1]; e++) {
          uint32_t w = g->col[e];
          if (dist[w] == dist[v] + 1) delta[v] += (double)(sigma[v] / sigma[w]) * (1.0 + delta[w]);
        }
        if (v != s) ref->bc[v] += delta[v];
      }
    }
    r = 0;
  }
  free(dist);
  free(order);
  free(sigma);
  free(delta);
  if (r) {
    free(ref->bc);
    ref->bc = NULL;
  }
  return r;
}

static int bc_check(const struct coop_app_input *in, const void *out, char *why, size_t len) {
  const struct coop_graph *g = &in->graph;
  const float *got = out;
  uint32_t nsrc = bc_sources(in), maxdeg = 0;
  struct bc_ref ref;
  if (bc_reference(g, nsrc, &ref)) {
    snprintf(why, len, "bc reference: out of memory");
    return COOP_ENOMEM;
  }
  for (uint32_t v = 0; v < g->n; v++)
    if (g->row[v + 1] - g->row[v] > maxdeg) maxdeg = g->row[v + 1] - g->row[v];
  /* Tolerance. Every term of every sum is positive, so relative errors do
   * not cancel and add up; u = 2^-24 (float rounding), d the depth.
   * sigma: integer sums, exact while below 2^24. Above (a 16x16 grid has
   * C(30,15) ~ 1.6e8 paths), a vertex at level L adds up to maxdeg - 1
   * roundings to the error of its predecessors' sigmas, so its relative
   * error is at most s = d (maxdeg - 1) u.
   * delta: a term sigma_v / sigma_w * (1 + delta_w) adds 3 roundings and the
   * error 2 s of the two sigmas to that of delta_w, the sum of at most
   * maxdeg terms adds maxdeg roundings, so by induction over the levels
   * delta is within d (maxdeg + 3) u + 2 d s; the sum over nsrc sources adds
   * nsrc roundings. A factor 2 covers second-order terms. (This bound
   * caught a real race: on the H100 a missing workgroup barrier before a
   * step's end was published left bc 2.7e-4 off on road-16x16.) */
  double u = ldexp(1.0, -24), d = ref.depth;
  double s = ref.sigma_max < 16777216.0 ? 0.0 : d * (maxdeg > 1 ? maxdeg - 1.0 : 1.0) * u;
  double tol = 2.0 * (u * (nsrc + d * (maxdeg + 3.0)) + 2.0 * d * s);
  if (tol < 1e-6) tol = 1e-6;
  int r = 0;
  double sum = 0.0;
  for (uint32_t v = 0; v < g->n && r == 0; v++) {
    double x = got[v], want = ref.bc[v];
    sum += x;
    if (!isfinite(x) || (want == 0.0) != (x == 0.0) || fabs(x - want) > tol * want) {
      r = coop_app_mismatch(why, len, "bc[%u] = %.9g, expected %.9g (relative tolerance %.3g)", v,
                            x, want, tol);
    }
  }
  if (r == 0 && fabs(sum - ref.paths) > tol * ref.paths) {
    r = coop_app_mismatch(why, len,
                          "sum of bc = %.9g, expected %.0f (interior vertices of shortest paths)",
                          sum, ref.paths);
  }
  free(ref.bc);
  return r;
}

const struct coop_app coop_app_bc = {
    .name = "bc",
    .kernel = "bc",
    .source = coop_app_src_bc_cl,
    .truth =
        "thesis 000 Table 5.2 / 004 Sec. 5: Pannotia betweenness centrality (Brandes), "
        "all global barriers made resizing (the prototype: 3 of 6), no kill/fork",
    .input = COOP_INPUT_GRAPH,
    .run = COOP_APP_RUN_FN(bc_run),
    .check = bc_check,
    .make_input = NULL,
    .prepare = bc_prepare,
    .collect = NULL,
    .elem = COOP_APP_ELEM_F32,
    .output = "f32 bc[n]: betweenness over the sources 0..S-1 (S = min(n, 32)), unnormalised",
    .has_source = 0,
};
