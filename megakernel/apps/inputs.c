/*
 * inputs.c: the test inputs of every application. Graph applications share
 * one set of graphs, chosen for shapes that stress different things: a
 * random graph (short diameter, many vertices per level), a path with
 * shortcuts (long diameter: many barriers), a graph with isolated vertices
 * and several components (unreached vertices). `scale` > 0 makes them
 * larger for benchmarks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define NGRAPHS 3

int coop_app_graph_inputs(unsigned scale) { return NGRAPHS; }

/* A path 0-1-...-n-1 with weights varying along it, plus a few long chords:
 * diameter about n/4, so traversals need many levels. */
static int path_graph(struct coop_graph *g, uint32_t n) {
  uint32_t ne = n - 1 + n / 16, *s = malloc(ne * sizeof *s), *d = malloc(ne * sizeof *d),
           *w = malloc(ne * sizeof *w);
  int r = COOP_ENOMEM;
  if (s && d && w) {
    uint32_t e = 0;
    for (uint32_t v = 0; v + 1 < n; v++, e++) {
      s[e] = v;
      d[e] = v + 1;
      w[e] = 1 + (v * 7) % 5;
    }
    for (uint32_t i = 0; i < n / 16; i++, e++) {
      s[e] = (i * 37) % n;
      d[e] = (i * 37 + n / 4) % n;
      w[e] = 3 + i % 11;
    }
    r = coop_graph_from_edges(g, n, e, s, d, w, COOP_GRAPH_SYMMETRIC | COOP_GRAPH_DEDUP);
  }
  free(s);
  free(d);
  free(w);
  return r;
}

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
  uint32_t f = 1u << (scale > 8 ? 8 : scale);
  int r;
  switch (i) {
    case 0:
      r = coop_graph_random(&in->graph, 300 * f, 1200 * f, 100, 42 + scale);
      snprintf(in->label, sizeof in->label, "random-n%u", 300 * f);
      break;
    case 1:
      r = path_graph(&in->graph, 400 * f);
      snprintf(in->label, sizeof in->label, "path-n%u", 400 * f);
      break;
    case 2:
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
