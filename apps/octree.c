/*
 * octree.c: host side of the octree work-stealing application (004 Table 1,
 * after Cederman and Tsigas' octree partitioning): inputs (uniform,
 * clustered with duplicates, a spherical shell), the run, and the check
 * against a CPU construction.
 *
 * Input: in->data = float x, y, z per point in [0, 1)^3, in->count points,
 * in->param = thresh | maxdepth << 16.
 * Output (u32): [0] node count, [1] overflow flags, then the node records
 * (OCTREE_NODE_WORDS each: parent, depth, path, begin, end, nchild), then the
 * permuted point indices (in->count): leaf [begin, end) holds its points.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "app.h"

extern const char coop_app_src_octree_cl[];
extern const struct coop_app coop_app_octree;

#define NODE_WORDS 6u /* OCTREE_NODE_WORDS in octree.cl */
#define CTL_QUEUES 4u /* OCTREE_CTL_QUEUES */
#define NONE 0xffffffffu
#define MAX_DEPTH 10u /* 3 bits of path per level in a u32 */

static uint32_t thresh_of(const struct coop_app_input *in) { return in->param & 0xffffu; }
static uint32_t maxdepth_of(const struct coop_app_input *in) { return in->param >> 16; }

/* Internal nodes of one depth hold disjoint sets of more than thresh points. */
static size_t node_bound(uint32_t n, uint32_t thresh, uint32_t maxdepth) {
  size_t per = n / ((size_t)thresh + 1), internal = 0, level = 1;
  for (uint32_t d = 0; d < maxdepth; d++) {
    internal += level < per ? level : per;
    level *= 8;
  }
  return 1 + 8 * (internal ? internal : 1);
}

/* args: mode, pts, perm0 (identity), perm1, res (out), nodes (out, the
 * root), ctl (out), items (queue 0 holds the root), n, thresh, maxdepth,
 * nq, qcap, nodecap (octree.cl) */
enum { ARG_RES = 4, ARG_NODES = 5, ARG_CTL = 6 };

static int prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                   struct coop_app_task *t) {
  uint32_t n = in->count, thresh = thresh_of(in), maxdepth = maxdepth_of(in);
  if (in->kind != COOP_INPUT_POINTS || n == 0 || in->bytes < (size_t)n * 3 * sizeof(float) ||
      maxdepth > MAX_DEPTH)
    return COOP_EINVAL;
  uint32_t nq = t->groups;
  /* A queue is a stack for its owner (depth first): it holds about 7 nodes
   * per level. Stealing only takes from it, and the id's next holder after a
   * kill goes on with the same stack, so 16 per level is ample; a push that
   * does not fit is reported (overflow flag 2), never lost silently. */
  size_t nodecap = node_bound(n, thresh, maxdepth), qcap = 1, qwant = 16 * ((size_t)maxdepth + 2);
  while (qcap < nodecap && qcap < qwant) qcap *= 2;
  if (nq == 0 || nodecap > 0xfffffff0u || qcap * nq > 0xffffffffu) return COOP_EINVAL;

  coop_app_task_ref(t, in->data, (size_t)n * 3 * sizeof(float), (size_t)n * 3 * sizeof(float));
  uint32_t *perm0 = coop_app_task_buf(t, COOP_APP_IN, (size_t)n * 4);
  coop_app_task_scratch(t, (size_t)n * 4);
  uint32_t *res = coop_app_task_buf(t, COOP_APP_INOUT, (size_t)n * 4);
  uint32_t *nodes = coop_app_task_buf(t, COOP_APP_INOUT, nodecap * NODE_WORDS * 4);
  uint32_t *ctl = coop_app_task_buf(t, COOP_APP_INOUT, (CTL_QUEUES + 4 * (size_t)nq) * 4);
  uint32_t *items = coop_app_task_buf(t, COOP_APP_IN, qcap * nq * 4);
  coop_app_task_u32(t, n);
  coop_app_task_u32(t, thresh);
  coop_app_task_u32(t, maxdepth);
  coop_app_task_u32(t, nq);
  coop_app_task_u32(t, (uint32_t)qcap);
  coop_app_task_u32(t, (uint32_t)nodecap);
  if (t->err) return t->err;
  for (uint32_t i = 0; i < n; i++) perm0[i] = i;
  memset(res, 0xff, (size_t)n * 4);
  uint32_t root[NODE_WORDS] = {NONE, 0, 0, 0, n, NONE};
  memcpy(nodes, root, sizeof root);
  ctl[0] = 1;              /* nodes used */
  ctl[1] = 1;              /* pending: the root */
  ctl[CTL_QUEUES + 2] = 1; /* queue 0: tail = 1, holding node 0 */
  items[0] = 0;
  return 0;
}

/* [0] node count, [1] overflow flags, the node records, the permutation */
static int collect(const struct coop_app_input *in, struct coop_app_task *t, void **out,
                   size_t *bytes) {
  uint32_t n = in->count, nodecap = (uint32_t)(t->arg[ARG_NODES].size / (NODE_WORDS * 4));
  const uint32_t *ctl = t->arg[ARG_CTL].host, *nodes = t->arg[ARG_NODES].host,
                 *res = t->arg[ARG_RES].host;
  uint32_t used = ctl[0] < nodecap ? ctl[0] : nodecap;
  size_t size = (2 + (size_t)used * NODE_WORDS + n) * 4;
  uint32_t *b = malloc(size);
  if (!b) return COOP_ENOMEM;
  b[0] = used;
  b[1] = ctl[2] | (ctl[0] > nodecap ? 4u : 0u) | (ctl[1] != 0 ? 8u : 0u);
  memcpy(b + 2, nodes, (size_t)used * NODE_WORDS * 4);
  memcpy(b + 2 + (size_t)used * NODE_WORDS, res, (size_t)n * 4);
  *out = b;
  *bytes = size;
  return 0;
}

COOP_APP_RUN(run, coop_app_octree);

/* ------------------------------------------------------------ reference */

struct ref_node {
  uint64_t key; /* depth << 32 | path */
  uint32_t begin, end, leaf;
};

static uint64_t key_of(uint32_t depth, uint32_t path) { return (uint64_t)depth << 32 | path; }

static int cmp_node(const void *a, const void *b) {
  uint64_t x = ((const struct ref_node *)a)->key, y = ((const struct ref_node *)b)->key;
  return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The cell of (depth, path): integer coordinates at side 2^-depth. */
static void cell_of(uint32_t depth, uint32_t path, uint32_t ijk[3]) {
  ijk[0] = ijk[1] = ijk[2] = 0;
  for (uint32_t l = 0; l < depth; l++) {
    uint32_t o = (path >> (3 * (depth - 1 - l))) & 7;
    for (int a = 0; a < 3; a++) ijk[a] = 2 * ijk[a] + ((o >> a) & 1);
  }
}

/* Sequential construction: same split rule, only non-empty children; the
 * partition is stable (any order within a leaf would do: leaves are
 * compared as sets). Returns the node count, nodes sorted by key, and the
 * permutation in *perm. */
static int build_ref(const float *pts, uint32_t n, uint32_t thresh, uint32_t maxdepth,
                     struct ref_node **nodes_out, size_t *count, uint32_t **perm_out) {
  size_t cap = node_bound(n, thresh, maxdepth), used = 0, top = 0;
  struct ref_node *nodes = malloc(cap * sizeof *nodes);
  uint32_t *perm = malloc((size_t)n * 4), *tmp = malloc((size_t)n * 4);
  size_t *stack = malloc(cap * sizeof *stack);
  if (!nodes || !perm || !tmp || !stack) {
    free(nodes);
    free(perm);
    free(tmp);
    free(stack);
    return COOP_ENOMEM;
  }
  for (uint32_t i = 0; i < n; i++) perm[i] = i;
  nodes[used++] = (struct ref_node){key_of(0, 0), 0, n, 0};
  stack[top++] = 0;
  while (top > 0) {
    struct ref_node *nd = &nodes[stack[--top]];
    uint32_t depth = (uint32_t)(nd->key >> 32), path = (uint32_t)nd->key;
    if (nd->end - nd->begin <= thresh || depth >= maxdepth) {
      nd->leaf = 1;
      continue;
    }
    uint32_t ijk[3], cnt[8] = {0}, start[9];
    cell_of(depth, path, ijk);
    float half = 1.0f / (float)(1u << (depth + 1)), mid[3];
    for (int a = 0; a < 3; a++) mid[a] = (float)(2 * ijk[a] + 1) * half;
    for (uint32_t i = nd->begin; i < nd->end; i++) {
      const float *p = &pts[3 * (size_t)perm[i]];
      uint32_t o = (p[0] >= mid[0]) | (p[1] >= mid[1]) << 1 | (p[2] >= mid[2]) << 2;
      tmp[i] = o;
      cnt[o]++;
    }
    start[0] = nd->begin;
    for (int o = 0; o < 8; o++) start[o + 1] = start[o] + cnt[o];
    uint32_t cur[8], b = nd->begin, e = nd->end;
    memcpy(cur, start, sizeof cur);
    uint32_t *part = malloc((size_t)(e - b) * 4);
    if (!part) {
      free(nodes);
      free(perm);
      free(tmp);
      free(stack);
      return COOP_ENOMEM;
    }
    for (uint32_t i = b; i < e; i++) part[cur[tmp[i]]++ - b] = perm[i];
    memcpy(perm + b, part, (size_t)(e - b) * 4);
    free(part);
    for (uint32_t o = 0; o < 8; o++)
      if (cnt[o]) {
        if (used == cap) abort(); /* node_bound is a bound */
        nodes[used] =
            (struct ref_node){key_of(depth + 1, path << 3 | o), start[o], start[o + 1], 0};
        stack[top++] = used++;
      }
  }
  free(tmp);
  free(stack);
  qsort(nodes, used, sizeof *nodes, cmp_node);
  *nodes_out = nodes;
  *count = used;
  *perm_out = perm;
  return 0;
}

#define FAIL(...)                                 \
  do {                                            \
    r = coop_app_mismatch(why, len, __VA_ARGS__); \
    goto done;                                    \
  } while (0)

static int check(const struct coop_app_input *in, const void *outp, char *why, size_t len) {
  const uint32_t *o = outp;
  const float *pts = in->data;
  uint32_t n = in->count, thresh = thresh_of(in), maxdepth = maxdepth_of(in);
  struct ref_node *ref = NULL;
  uint32_t *rperm = NULL, *cover = calloc(n, 4), *seen = calloc(n, 4), *nch = NULL, *sa = NULL,
           *sb = NULL;
  uint8_t *matched = NULL;
  size_t nref = 0;
  int r = build_ref(pts, n, thresh, maxdepth, &ref, &nref, &rperm);
  if (r == 0 && (!cover || !seen)) r = COOP_ENOMEM;
  if (r) {
    snprintf(why, len, "octree check: %s", coop_strerror(r));
    goto done;
  }
  uint32_t nn = o[0];
  const uint32_t *nodes = o + 2, *perm = o + 2 + (size_t)nn * NODE_WORDS;
  if (o[1]) FAIL("octree: overflow flags %#x (1 node records, 2 queue, 4 count, 8 pending)", o[1]);
  if (nn != nref) FAIL("octree: %u nodes, expected %zu", nn, nref);
  nch = calloc(nn, 4);
  matched = calloc(nref, 1);
  sa = malloc((size_t)n * 4);
  sb = malloc((size_t)n * 4);
  if (!nch || !matched || !sa || !sb) FAIL("octree check: out of memory");
  for (uint32_t i = 0; i < nn; i++) {
    const uint32_t *nd = nodes + (size_t)i * NODE_WORDS;
    uint32_t par = nd[0], depth = nd[1], path = nd[2], b = nd[3], e = nd[4], k = nd[5];
    if (k == NONE) FAIL("octree: node %u never processed", i);
    if (depth > maxdepth || path >> (3 * depth) || b >= e || e > n)
      FAIL("octree: node %u malformed (depth %u, path %#x, [%u, %u))", i, depth, path, b, e);
    if (i == 0 && (par != NONE || depth || b || e != n)) FAIL("octree: node 0 is not the root");
    if (i > 0) {
      if (par >= nn) FAIL("octree: node %u has parent %u of %u", i, par, nn);
      const uint32_t *pn = nodes + (size_t)par * NODE_WORDS;
      if (pn[1] + 1 != depth || pn[2] != path >> 3 || b < pn[3] || e > pn[4])
        FAIL("octree: node %u (depth %u, path %#x) is not a child of node %u (depth %u, path %#x)",
             i, depth, path, par, pn[1], pn[2]);
      nch[par]++;
    }
    struct ref_node key = {key_of(depth, path), 0, 0, 0};
    struct ref_node *m = bsearch(&key, ref, nref, sizeof *ref, cmp_node);
    if (!m) FAIL("octree: node %u (depth %u, path %#x) is not in the CPU tree", i, depth, path);
    if (matched[m - ref]++) FAIL("octree: node (depth %u, path %#x) appears twice", depth, path);
    if (m->begin != b || m->end != e || m->leaf != (k == 0))
      FAIL("octree: node (depth %u, path %#x) = [%u, %u) %s, expected [%u, %u) %s", depth, path, b,
           e, k ? "internal" : "leaf", m->begin, m->end, m->leaf ? "leaf" : "internal");
    if (k == 0) {
      if (e - b > thresh && depth < maxdepth)
        FAIL("octree: leaf %u holds %u > %u points at depth %u", i, e - b, thresh, depth);
      uint32_t ijk[3];
      cell_of(depth, path, ijk);
      float side = 1.0f / (float)(1u << depth);
      for (uint32_t j = b; j < e; j++) {
        if (cover[j]++) FAIL("octree: position %u is in two leaves", j);
        uint32_t p = perm[j];
        if (p >= n) FAIL("octree: perm[%u] = %u", j, p);
        if (seen[p]++) FAIL("octree: point %u in two leaves", p);
        for (int a = 0; a < 3; a++) {
          float x = pts[3 * (size_t)p + a];
          if (!(x >= (float)ijk[a] * side && x < (float)(ijk[a] + 1) * side))
            FAIL("octree: point %u (%c = %g) outside leaf %u (depth %u, path %#x)", p, "xyz"[a],
                 (double)x, i, depth, path);
        }
      }
      /* the same set of points as the CPU's leaf */
      memcpy(sa, perm + b, (size_t)(e - b) * 4);
      memcpy(sb, rperm + b, (size_t)(e - b) * 4);
      qsort(sa, e - b, 4, cmp_u32);
      qsort(sb, e - b, 4, cmp_u32);
      if (memcmp(sa, sb, (size_t)(e - b) * 4))
        FAIL("octree: leaf (depth %u, path %#x) holds other points than the CPU's", depth, path);
    }
  }
  /* children partition their parent's range: the CPU tree's do (same
   * ranges, checked above), and every internal node has as many recorded
   * children as it says */
  for (uint32_t i = 0; i < nn; i++)
    if (nodes[(size_t)i * NODE_WORDS + 5] != nch[i])
      FAIL("octree: node %u says %u children, has %u", i, nodes[(size_t)i * NODE_WORDS + 5],
           nch[i]);
  for (uint32_t j = 0; j < n; j++)
    if (!cover[j]) FAIL("octree: position %u in no leaf", j);
done:
  free(ref);
  free(rperm);
  free(cover);
  free(seen);
  free(nch);
  free(matched);
  free(sa);
  free(sb);
  return r;
}

/* ------------------------------------------------------------ inputs */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }

static double rng_gauss(uint64_t *s) { /* Box-Muller */
  double u = rng_unit(s), v = rng_unit(s);
  return sqrt(-2.0 * log(u > 0 ? u : 0x1p-53)) * cos(6.283185307179586 * v);
}

/* stores x if it is a float in [0, 1) */
static int put(float *p, double x) {
  float f = (float)x;
  if (!(f >= 0.0f && f < 1.0f)) return 0;
  *p = f;
  return 1;
}

static int make_input(unsigned i, unsigned scale, struct coop_app_input *in) {
  if (!in) return 3;
  uint32_t f = 1u << (scale > 8 ? 8 : scale), n, thresh, maxdepth;
  uint64_t seed = 0x0c7ee + i * 1000003ull + scale;
  switch (i) {
    case 0:
      n = 30000 * f, thresh = 12, maxdepth = 8;
      break;
    case 1:
      n = 40000 * f, thresh = 16, maxdepth = 9;
      break;
    case 2:
      n = 30000 * f, thresh = 8, maxdepth = 10;
      break;
    default:
      return COOP_EINVAL;
  }
  memset(in, 0, sizeof *in);
  float *p = malloc((size_t)n * 3 * sizeof *p);
  if (!p) return COOP_ENOMEM;
  double cx[6], cy[6], cz[6], sg[6];
  for (int k = 0; k < 6; k++) {
    cx[k] = 0.15 + 0.7 * rng_unit(&seed);
    cy[k] = 0.15 + 0.7 * rng_unit(&seed);
    cz[k] = 0.15 + 0.7 * rng_unit(&seed);
    sg[k] = 0.01 + 0.06 * rng_unit(&seed);
  }
  for (uint32_t j = 0; j < n; j++) {
    float *q = p + 3 * (size_t)j;
    if (i == 0) { /* uniform */
      for (int a = 0; a < 3; a++) q[a] = (float)(rng_next(&seed) >> 40) * 0x1p-24f;
    } else if (i == 1) { /* Gaussian clusters; every 25th point on one spot */
      if (j % 25 == 0) {
        q[0] = 0.3125f, q[1] = 0.6875f, q[2] = 0.4375f;
        continue;
      }
      int k = (int)(rng_next(&seed) % 6);
      while (!put(&q[0], cx[k] + sg[k] * rng_gauss(&seed)) ||
             !put(&q[1], cy[k] + sg[k] * rng_gauss(&seed)) ||
             !put(&q[2], cz[k] + sg[k] * rng_gauss(&seed))) {
      }
    } else { /* a spherical shell of radius 0.4 around the centre, slightly thick */
      double v[3], l;
      do {
        for (int a = 0; a < 3; a++) v[a] = rng_gauss(&seed);
        l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
      } while (l < 1e-9);
      double rad = 0.4 + 0.01 * rng_gauss(&seed);
      for (int a = 0; a < 3; a++) q[a] = (float)(0.5 + rad * v[a] / l);
    }
  }
  static const char *names[3] = {"uniform", "clustered", "shell"};
  snprintf(in->label, sizeof in->label, "%s-n%u-t%u", names[i], n, thresh);
  in->kind = COOP_INPUT_POINTS;
  in->data = p;
  in->bytes = (size_t)n * 3 * sizeof *p;
  in->count = n;
  in->param = thresh | maxdepth << 16;
  return 0;
}

const struct coop_app coop_app_octree = {
    .name = "octree",
    .kernel = "octree",
    .source = coop_app_src_octree_cl,
    .truth =
        "004 Sec. 3.2 and Table 1 (octree: work stealing, offer_kill + request_fork at the top "
        "of the main loop, nothing transmitted); Cederman and Tsigas' octree partitioning",
    .input = COOP_INPUT_POINTS,
    .run = COOP_APP_RUN_FN(run),
    .check = check,
    .make_input = make_input,
    .prepare = prepare,
    .collect = collect,
    .elem = COOP_APP_ELEM_U32,
    .output =
        "u32: [0] node count C, [1] overflow flags (0), C node records of 6 words (parent, "
        "depth, path, begin, end, children), then the n point indices, leaf by leaf",
    .has_source = 0,
};
