/*
 * inputs.c: the test inputs of every application. Graph applications share
 * one set, the generators that stand in for the papers' inputs (004 Sec. 5:
 * rmat, USA road, G3_circuit; docs/inputs.md) at test size, plus a graph
 * with isolated vertices and two components (unreached vertices). `scale`
 * > 0 makes them larger for benchmarks (about 2^scale times).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define NGRAPHS 4

int coop_app_graph_inputs(unsigned scale) { return NGRAPHS; }

/* Two random components and isolated vertices (every 9th vertex). */
static int split_graph(struct coop_graph *g, uint32_t n, uint32_t m, uint64_t seed) {
  uint32_t *s = malloc(m * sizeof *s), *d = malloc(m * sizeof *d), *w = malloc(m * sizeof *w);
  int r = COOP_ENOMEM;
  if (s && d && w) {
    uint64_t x = seed;
    uint32_t e = 0;
    while (e < m) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      uint32_t a = (uint32_t)(x >> 33) % n, b = (uint32_t)(x >> 13) % n;
      if (a % 9 == 0 || b % 9 == 0 || (a < n / 2) != (b < n / 2)) continue;
      s[e] = a;
      d[e] = b;
      w[e++] = 1 + (uint32_t)(x >> 58);
    }
    r = coop_graph_from_edges(g, n, m, s, d, w, COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP);
  }
  free(s);
  free(d);
  free(w);
  return r;
}

int coop_app_graph_input(unsigned i, unsigned scale, struct coop_app_input *in) {
  memset(in, 0, sizeof *in);
  in->kind = COOP_INPUT_GRAPH;
  if (scale > 12) scale = 12;
  uint32_t f = 1u << scale;
  int r;
  switch (i) {
    case 0: /* power law, short diameter, hubs */
      r = coop_graph_rmat(&in->graph, 8 + scale, 4, 42);
      snprintf(in->label, sizeof in->label, "rmat-s%u", 8 + scale);
      break;
    case 1: { /* long diameter: many barriers */
      uint32_t side = 16u << (scale / 2);
      r = coop_graph_road(&in->graph, side, side, 7);
      snprintf(in->label, sizeof in->label, "road-%ux%u", side, side);
      break;
    }
    case 2: /* wide and shallow */
      r = coop_graph_circuit(&in->graph, 400 * f, 11);
      snprintf(in->label, sizeof in->label, "circuit-n%u", 400 * f);
      break;
    case 3:
      r = split_graph(&in->graph, 250 * f, 700 * f, 7 + scale);
      snprintf(in->label, sizeof in->label, "split-n%u", 250 * f);
      in->source = 1; /* not 0: that one is isolated */
      break;
    default:
      return COOP_EINVAL;
  }
  return r;
}

int coop_app_input_count(const struct coop_app *a, unsigned scale) {
  if (a->input == COOP_INPUT_GRAPH) return coop_app_graph_inputs(scale);
  return a->make_input ? a->make_input(0, scale, NULL) : 0;
}

int coop_app_input(const struct coop_app *a, unsigned i, unsigned scale,
                   struct coop_app_input *in) {
  if (a->input == COOP_INPUT_GRAPH) return coop_app_graph_input(i, scale, in);
  memset(in, 0, sizeof *in);
  return a->make_input ? a->make_input(i, scale, in) : COOP_EINVAL;
}

void coop_app_input_free(struct coop_app_input *in) {
  coop_graph_free(&in->graph);
  free(in->data);
  memset(in, 0, sizeof *in);
}

int coop_app_fit_input(const struct coop_app *a, struct coop_app_input *in, char *why, size_t len) {
  if (why && len) why[0] = '\0';
  if (a->input == COOP_INPUT_GRAPH && a->symmetric) {
    int r = coop_graph_symmetrise(&in->graph);
    if (r) {
      if (why && len) snprintf(why, len, "cannot add the reverse edges: %s", coop_strerror(r));
      return r;
    }
  }
  return a->admit ? a->admit(in, why, len) : 0;
}

int coop_app_sssp_admit(const struct coop_app_input *in, char *why, size_t len) {
  uint64_t bound = coop_graph_path_bound(&in->graph);
  if (bound < 0xffffffffull) return 0;
  if (why && len)
    snprintf(why, len,
             "paths can be as long as %llu (each vertex's heaviest in-edge, summed), and "
             "distances are 32-bit with 4294967295 meaning unreached: lighter weights, please",
             (unsigned long long)bound);
  return COOP_ETOOBIG;
}
