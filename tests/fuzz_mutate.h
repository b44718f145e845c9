/*
 * fuzz_mutate.h: the replay fuzzers' mutations of a text input
 * (fuzz_config.c, fuzz_graph.c): a bit flipped, a random byte, a word of
 * the grammar inserted, a range deleted, a run of one byte (where the
 * program names the bytes), a range duplicated. Each program keeps its
 * own xorshift state and words, so that its inputs stay deterministic.
 */
#ifndef COOP_FUZZ_MUTATE_H
#define COOP_FUZZ_MUTATE_H

#include <stdint.h>
#include <string.h>

#include "xorshift.h"

struct coop_mutator {
  const char *const *words; /* inserted whole; "\0" inserts one NUL byte */
  size_t nwords;
  size_t max;       /* the buffer's size: no input grows past it */
  size_t dup;       /* the longest range duplicated (a repeated line) */
  const char *runs; /* nruns bytes a run of 1 to 300 is made of (0: no runs) */
  size_t nruns;
  uint64_t *state;
};

/* One mutation of the n bytes at b; returns the new length. */
static inline size_t coop_mutate_once(const struct coop_mutator *m, char *b, size_t n) {
  size_t at = n ? coop_xorshift64(m->state) % n : 0;
  unsigned kind = (unsigned)(coop_xorshift64(m->state) % (m->nruns ? 6 : 5));
  if (kind == 4 && !m->nruns) kind = 5;
  switch (kind) {
    case 0: /* bit flip */
      if (n) b[at] ^= (char)(1u << (coop_xorshift64(m->state) % 8));
      return n;
    case 1: /* a random byte */
      if (n) b[at] = (char)coop_xorshift64(m->state);
      return n;
    case 2: { /* insert a word */
      const char *w = m->words[coop_xorshift64(m->state) % m->nwords];
      size_t len = w[0] ? strlen(w) : 1;
      if (n + len > m->max) return n;
      memmove(b + at + len, b + at, n - at);
      memcpy(b + at, w, len);
      return n + len;
    }
    case 3: { /* delete a range */
      size_t len = n - at < 8 ? n - at : 1 + coop_xorshift64(m->state) % 8;
      memmove(b + at, b + at + len, n - at - len);
      return n - len;
    }
    case 4: { /* a run of one byte: values and lines past their buffers */
      size_t len = 1 + coop_xorshift64(m->state) % 300;
      if (n + len > m->max) return n;
      memmove(b + at + len, b + at, n - at);
      memset(b + at, m->runs[coop_xorshift64(m->state) % m->nruns], len);
      return n + len;
    }
    default: { /* duplicate a range */
      size_t len = n - at < m->dup ? n - at : m->dup;
      if (n + len > m->max) return n;
      memmove(b + at + len, b + at, n - at);
      return n + len;
    }
  }
}

#endif /* COOP_FUZZ_MUTATE_H */
