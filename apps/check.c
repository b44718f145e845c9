/*
 * check.c: what the applications' checks share: the verdict line, and the
 * comparison of an output of one word per vertex with a CPU reference.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

int coop_app_mismatch(char *why, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
  return COOP_EMISMATCH;
}

int coop_app_ref_diff(const struct coop_app_input *in, const uint32_t *got,
                      coop_app_reference_fn *reference, uint32_t *v, uint32_t *want) {
  uint32_t n = in->graph.n, *ref = malloc((n ? n : 1) * sizeof *ref);
  if (!ref) return COOP_ENOMEM;
  int r = reference(in, ref);
  for (uint32_t i = 0; r == 0 && i < n; i++)
    if (got[i] != ref[i]) {
      *v = i;
      *want = ref[i];
      r = 1;
    }
  free(ref);
  return r;
}
