/*
 * emit_source.c: prints the megakernel source that the runtime assembles for
 * two kernels written only against the dialect (no OpenCL-only builtins),
 * without opening a device. The CUDA compile test feeds it to nvcc: the
 * same device files must compile as OpenCL C and as CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "kernels.h"
#include "rt_internal.h"
#include "sweep_kernel.h"

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

static void add(struct coop_rt *rt, const char *name, int coop, const char *src) {
  struct coop__kernel *k = &rt->kernels[rt->nkernels++];
  snprintf(k->name, sizeof k->name, "%s", name);
  k->cooperative = coop;
  k->source = (char *)src;
}

/* Every kernel the tests and the applications register, in one program:
 * none may use a construct that only OpenCL C accepts. */
int main(void) {
  struct coop_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return 1;
  add(rt, "count", 1, coop_kernel);
  add(rt, "plain", 0, plain_kernel);
  add(rt, "ids", 0, k_ids);
  add(rt, "queue", 1, k_queue);
  add(rt, "sweep", 1, k_sweep);
  add(rt, "phases", 1, k_phases);
  add(rt, "forever", 1, k_forever);
  add(rt, "stopsweep", 1, coop_stopsweep_src);
  add(rt, "matmul", 0, coop_app_src_matmul_cl);
  for (unsigned i = 0; i < coop_napps && rt->nkernels < COOP__MAX_KERNELS; i++)
    add(rt, coop_apps[i]->kernel, 1, coop_apps[i]->source);
  char *src = coop__assemble_source(rt);
  if (!src) return 1;
  fputs(src, stdout);
  free(src);
  free(rt);
  return 0;
}
