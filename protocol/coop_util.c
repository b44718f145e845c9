/* coop_util.c: see coop_util.h. */
#include "coop_util.h"

#include <time.h>

int64_t coop__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

int coop__is_ident(const char *s) {
  if (!ident_start(*s)) return 0;
  for (; *s; s++)
    if (!ident_start(*s) && !(*s >= '0' && *s <= '9')) return 0;
  return 1;
}

int coop__parse_u64(const char *s, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (!*s) return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    unsigned d = (unsigned)(*s - '0');
    if (v > (max - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}
