/*
 * fuzz_graph.c: fuzz target for the graph readers (apps/graph/graph.h).
 *
 * The input is a file's bytes. It is read as each format (auto, DIMACS,
 * Matrix Market, edge list). On success the CSR must be consistent (row
 * monotone from 0 to m, every target < n and sorted within its row, every
 * weight >= 1) and the message empty; on failure the code is COOP_EFORMAT
 * or COOP_ETOOBIG, the message names a line or the end of the file, and the
 * graph is zeroed. Reading with COOP_GRAPH_AUTO must give what reading with
 * the format coop_graph_detect names gives.
 *
 * Built with -DCOOP_FUZZ_STANDALONE it has a main() that replays a seed
 * corpus (valid inputs of each format) and deterministic mutations of it,
 * so every build runs the target, or writes that corpus for libFuzzer
 * (--write-corpus DIR); tests/data/graphs is a second seed directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "fuzz_mutate.h"
#include "xorshift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, int fmt, const char *msg) {
  fprintf(stderr, "fuzz_graph: %s (format %s; message \"%s\")\n", what,
          coop_graph_format_name((enum coop_graph_format)fmt), msg);
  abort();
}

static unsigned long nparsed, nrefused;

static void check_graph(const struct coop_graph *g, int fmt, const char *msg) {
  if (!g->row || !g->col || !g->w) fail("missing arrays", fmt, msg);
  if (g->row[0] != 0 || g->row[g->n] != g->m) fail("row[0] or row[n] wrong", fmt, msg);
  for (uint32_t v = 0; v < g->n; v++) {
    if (g->row[v] > g->row[v + 1]) fail("row not monotone", fmt, msg);
    for (uint32_t i = g->row[v]; i < g->row[v + 1]; i++) {
      if (g->col[i] >= g->n) fail("target out of range", fmt, msg);
      if (g->w[i] == 0) fail("zero weight", fmt, msg);
      if (i > g->row[v] && g->col[i] < g->col[i - 1]) fail("row not sorted", fmt, msg);
    }
  }
  if (msg[0]) fail("message on success", fmt, msg);
}

static int same(const struct coop_graph *a, const struct coop_graph *b) {
  return a->n == b->n && a->m == b->m &&
         !memcmp(a->row, b->row, ((size_t)a->n + 1) * sizeof *a->row) &&
         !memcmp(a->col, b->col, (size_t)a->m * sizeof *a->col) &&
         !memcmp(a->w, b->w, (size_t)a->m * sizeof *a->w);
}

/* For the regression replay (fuzz_replay.c): what the reader makes of
 * the input with auto-detection, in one line: the detected format, then
 * "ok n=N m=M" or the error and its message. */
void fuzz_verdict(const uint8_t *data, size_t size, char *out, size_t outlen);
void fuzz_verdict(const uint8_t *data, size_t size, char *out, size_t outlen) {
  struct coop_graph g;
  char msg[256];
  const char *p = (const char *)data;
  int r = coop_graph_read_mem(p, size, COOP_GRAPH_AUTO, &g, msg, sizeof msg);
  const char *fmt = coop_graph_format_name(coop_graph_detect(p, size));
  if (r == 0)
    snprintf(out, outlen, "%s ok n=%u m=%u", fmt, (unsigned)g.n, (unsigned)g.m);
  else
    snprintf(out, outlen, "%s %s: %s", fmt, coop_err_name(r), msg);
  coop_graph_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *p = (const char *)data;
  struct coop_graph g[4];
  int r[4];
  for (int f = 0; f < 4; f++) {
    char msg[256];
    memset(msg, 'X', sizeof msg); /* must be written in every case */
    r[f] = coop_graph_read_mem(p, size, (enum coop_graph_format)f, &g[f], msg, sizeof msg);
    if (memchr(msg, '\0', sizeof msg) == NULL) fail("message not terminated", f, "");
    if (r[f] == 0) {
      nparsed++;
      check_graph(&g[f], f, msg);
    } else {
      nrefused++;
      if (r[f] != COOP_EFORMAT && r[f] != COOP_ETOOBIG) fail("unexpected error code", f, msg);
      if (strncmp(msg, "line ", 5) && strncmp(msg, "end of file: ", 13))
        fail("message names no line", f, msg);
      if (g[f].row || g[f].col || g[f].w || g[f].n || g[f].m) fail("graph not zeroed", f, msg);
    }
  }
  int d = (int)coop_graph_detect(p, size);
  if (r[0] != r[d] || (r[0] == 0 && !same(&g[0], &g[d])))
    fail("auto differs from the detected format", d, "");
  for (int f = 0; f < 4; f++) coop_graph_free(&g[f]);
  return 0;
}

#ifdef COOP_FUZZ_STANDALONE
#include <sys/stat.h>
#include <time.h>

static const char *const seeds[] = {
    "c a small DIMACS file\np sp 4 5\na 1 2 7\na 2 1 7\na 2 3 1\na 4 4 2\na 1 2 3\n",
    "c crlf\r\np sp 3 3\r\na 1 2 1\r\na 2 3 4294967295\r\na 3 1 9",
    "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 4\n1 1\n2 1\n3 1\n3 2\n",
    "%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 -5\n2 3 0\n3 1 7\n",
    "%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 0.5\n3 1 2.5e1\n4 4 -1\n",
    "# edges\n0 1\n1 2\n2 0\n3 3\n",
    "0 1 5\r\n1 0 5\r\n% x\r\n2 1 1",
};
#define NSEEDS (sizeof seeds / sizeof seeds[0])
#define MAX_INPUT 4096

static int write_corpus(const char *dir) {
  mkdir(dir, 0755); /* may exist already */
  for (unsigned i = 0; i < NSEEDS; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%02u", dir, i);
    FILE *f = fopen(path, "wb");
    size_t n = strlen(seeds[i]);
    if (!f || fwrite(seeds[i], 1, n, f) != n || fclose(f)) {
      perror(path);
      return 1;
    }
  }
  printf("fuzz_graph: wrote %u seeds to %s\n", (unsigned)NSEEDS, dir);
  return 0;
}

/* ---- deterministic mutations ---- */

static uint64_t rs = 0x2545f4914f6cdd1du;
static uint64_t rnd(void) { return coop_xorshift64(&rs); }

/* Bytes and words that matter to the grammars. */
static const char *const words[] = {"\n",
                                    "\r\n",
                                    " ",
                                    "\t",
                                    "\0",
                                    "-",
                                    ".",
                                    "e",
                                    "0",
                                    "1",
                                    "9",
                                    "%",
                                    "#",
                                    "c ",
                                    "p sp ",
                                    "a ",
                                    "4294967296",
                                    "2147483647",
                                    "99999999999999999999",
                                    "symmetric",
                                    "general",
                                    "pattern",
                                    "real",
                                    "integer",
                                    "1e999"};
#define NWORDS (sizeof words / sizeof words[0])

static const struct coop_mutator mut = {words, NWORDS, MAX_INPUT, 32, NULL, 0, &rs};

static void run_exact(const char *b, size_t n) {
  uint8_t *copy = malloc(n ? n : 1); /* exact size, for AddressSanitizer */
  if (!copy) abort();
  memcpy(copy, b, n);
  LLVMFuzzerTestOneInput(copy, n);
  free(copy);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write-corpus")) return write_corpus(argv[2]);
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, "usage: %s [N] | --write-corpus DIR\n", argv[0]);
    return 2;
  }
  unsigned long runs = argc == 2 ? strtoul(argv[1], NULL, 10) : 200000;
  static char buf[MAX_INPUT];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned i = 0; i < NSEEDS; i++) run_exact(seeds[i], strlen(seeds[i]));
  for (unsigned long i = 0; i < runs; i++) {
    unsigned s = (unsigned)(rnd() % NSEEDS);
    size_t n = strlen(seeds[s]);
    memcpy(buf, seeds[s], n);
    for (unsigned k = 1 + rnd() % 4; k; k--) n = coop_mutate_once(&mut, buf, n);
    run_exact(buf, n);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf(
      "fuzz_graph: %u seeds and %lu mutations in %.2f s (%.0f exec/s): %lu reads parsed, "
      "%lu refused\n",
      (unsigned)NSEEDS, runs, secs, (double)(runs + NSEEDS) / (secs > 0 ? secs : 1e-9), nparsed,
      nrefused);
  return 0;
}
#endif
