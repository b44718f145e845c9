/*
 * emit_source.c: prints the megakernel source that the runtime assembles for
 * every kernel of the tests and the applications, and for the kernel files
 * named on the command line (coopd's, with their //@coop header, each
 * opened by a #line naming it), without
 * opening a device. The CUDA compile test feeds it to NVRTC: the same
 * device files must compile as OpenCL C and as CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "rt_internal.h"
#include "test_kernels.h"

static void add(struct coop_rt *rt, const char *name, int coop, const char *src) {
  struct coop__kernel *k = &rt->kernels[rt->nkernels++];
  snprintf(k->name, sizeof k->name, "%s", name);
  k->cooperative = coop;
  k->source = (char *)src;
}

/* A coopd kernel file: "//@coop name=NAME kind=KIND ..." on its first line
 * (daemon/kset.c has the full parser; this needs the name and kind). */
static int add_file(struct coop_rt *rt, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return -1;
  }
  static char bufs[8][65536];
  static int nb;
  /* opened by a #line that names the file, as coopd does
   * (daemon/device/devproc.c), so that the compiler's log names it */
  char *b = nb < 8 ? bufs[nb] : NULL;
  int hl = b ? snprintf(b, 1024, "#line 1 \"%s\"\n", path) : 0;
  size_t n = b && hl < 1024 ? fread(b + hl, 1, sizeof bufs[0] - 1 - (size_t)hl, f) : 0;
  fclose(f);
  if (!n || n == sizeof bufs[0] - 1 - (size_t)hl) {
    fprintf(stderr, "%s: empty, too large, or too many files\n", path);
    return -1;
  }
  b[hl + n] = 0;
  nb++;
  b += hl;
  const char *name = strstr(b, "name="), *kind = strstr(b, "kind=");
  const char *eol = strchr(b, '\n');
  if (strncmp(b, "//@coop ", 8) || !name || !kind || !eol || name > eol || kind > eol) {
    fprintf(stderr, "%s: no //@coop header with name= and kind=\n", path);
    return -1;
  }
  struct coop__kernel *k = &rt->kernels[rt->nkernels++];
  size_t len = strcspn(name + 5, " \n");
  snprintf(k->name, sizeof k->name, "%.*s", (int)(len < 63 ? len : 63), name + 5);
  k->cooperative = !strncmp(kind + 5, "cooperative", 11);
  k->source = b - hl;
  return 0;
}

/* Every kernel the tests and the applications register, in one program:
 * none may use a construct that only OpenCL C accepts. With file
 * arguments, those kernels alone (their names may be the tests' too). */
int main(int argc, char **argv) {
  struct coop_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return 1;
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      if (rt->nkernels == COOP_MAX_KERNELS || add_file(rt, argv[i])) return 1;
    goto emit;
  }
  add(rt, "count", 1, coop_test_src_count_cl);
  add(rt, "plain", 0, coop_test_src_plain_cl);
  add(rt, "ids", 0, k_ids);
  add(rt, "queue", 1, k_queue);
  add(rt, "sweep", 1, k_sweep);
  add(rt, "phases", 1, k_phases);
  add(rt, "forever", 1, k_forever);
  add(rt, "viewpoke", 0, k_viewpoke);
  add(rt, "rawpoke", 0, k_rawpoke);
  add(rt, "offerspin", 1, k_offerspin);
  add(rt, "gate", 1, k_gate);
  add(rt, "cascade", 1, k_cascade);
  add(rt, "longstep", 1, k_longstep);
  add(rt, "tqlook", 0, k_tqlook);
  add(rt, "kwrun", 0, k_kwrun);
  add(rt, "divided", 1, k_divided);
  add(rt, "stopsweep", 1, coop_stopsweep_src);
  add(rt, "matmul", 0, coop_app_src_matmul_cl);
  for (unsigned i = 0; i < coop_napps && rt->nkernels < COOP_MAX_KERNELS; i++)
    add(rt, coop_apps[i]->kernel, 1, coop_apps[i]->source);
emit:;
  char *src = coop__assemble_source(rt);
  if (!src) return 1;
  fputs(src, stdout);
  free(src);
  free(rt);
  return 0;
}
