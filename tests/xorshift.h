/*
 * xorshift.h: the tests' and the replay fuzzers' pseudo-random numbers:
 * Marsaglia's xorshift64 (13, 7, 17) on a state the caller keeps, so that
 * each program's sequence, and the inputs it draws, stay deterministic.
 */
#ifndef COOP_XORSHIFT_H
#define COOP_XORSHIFT_H

#include <stdint.h>

static inline uint64_t coop_xorshift64(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

#endif /* COOP_XORSHIFT_H */
