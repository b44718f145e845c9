/*
 * emit_source.c: prints the megakernel source that the runtime assembles for
 * two kernels written only against the dialect (no OpenCL-only builtins),
 * without opening a device. The CUDA compile test feeds it to nvcc: the
 * same device files must compile as OpenCL C and as CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

static const char *coop_kernel =
    "struct count_state { coop_u32 round; };\n"
    "COOP_FN void count_init(struct coop_ctx *c, struct count_state *s) { s->round = 0u; }\n"
    "COOP_FN coop_u32 count_step(struct coop_ctx *c, struct count_state *s) {\n"
    "  COOP_GLOBAL coop_atomic_u32 *n = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);\n"
    "  if (s->round++ == coop_arg_u32(c, 1)) return COOP_DONE;\n"
    "  if (coop_local_id_c(c) == 0u) coop_fadd(n, 1u);\n"
    "  return COOP_RESIZING_BARRIER;\n"
    "}\n";
static const char *plain_kernel =
    "COOP_FN void plain(struct coop_ctx *c) {\n"
    "  COOP_GLOBAL coop_u32 *o = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);\n"
    "  o[coop_global_id(c)] = coop_num_groups(c);\n"
    "}\n";

int main(void) {
  struct coop_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return 1;
  snprintf(rt->kernels[0].name, sizeof rt->kernels[0].name, "count");
  rt->kernels[0].cooperative = 1;
  rt->kernels[0].source = (char *)coop_kernel;
  snprintf(rt->kernels[1].name, sizeof rt->kernels[1].name, "plain");
  rt->kernels[1].source = (char *)plain_kernel;
  rt->nkernels = 2;
  char *src = coop__assemble_source(rt);
  if (!src) return 1;
  fputs(src, stdout);
  free(src);
  free(rt);
  return 0;
}
