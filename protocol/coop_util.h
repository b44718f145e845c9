/*
 * coop_util.h: the small helpers every part of coop needs once: the
 * runtime, the daemon, the tests and bench (all link coopproto). Internal
 * (coop__): not part of libcoop's API.
 */
#ifndef COOP_UTIL_H
#define COOP_UTIL_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns: the clock the runtime, coopd and the device
 * clock's fit all stamp with. */
int64_t coop__now_ns(void);

/* 1 if s is a C identifier ([A-Za-z_][A-Za-z0-9_]*, so not empty): what a
 * kernel, an argument or a source may be named. */
int coop__is_ident(const char *s);

/* Decimal digits only (no sign, no space, not empty) of a value <= max:
 * 0 with *out set, or -1. Unlike strtoull it never saturates. */
int coop__parse_u64(const char *s, uint64_t max, uint64_t *out);

#endif /* COOP_UTIL_H */
