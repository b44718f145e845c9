/*
 * nvrtc_compile.c: compiles a megakernel source (stdin) with NVRTC and the
 * options the CUDA backend uses (megakernel/backends/cuda.c), for sm_90 unless
 * given another architecture. Needs the toolkit's NVRTC, not a GPU: the
 * test that the device sources are one dialect runs on CI machines that
 * have the toolkit.
 */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const char *arch = argc > 1 ? argv[1] : "--gpu-architecture=sm_90";
  size_t cap = 1 << 20, n = 0;
  char *src = malloc(cap);
  for (size_t r; src && (r = fread(src + n, 1, cap - n - 1, stdin)) > 0;) {
    n += r;
    if (n + 1 == cap) src = realloc(src, cap *= 2);
  }
  if (!src) return 2;
  src[n] = 0;
  nvrtcProgram p;
  if (nvrtcCreateProgram(&p, src, "coop_megakernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return 2;
  const char *opts[] = {arch, "--std=c++17", "-default-device"};
  nvrtcResult r = nvrtcCompileProgram(p, 3, opts);
  size_t ln = 0;
  nvrtcGetProgramLogSize(p, &ln);
  char *log = malloc(ln + 1);
  if (log && nvrtcGetProgramLog(p, log) == NVRTC_SUCCESS && ln > 1) fputs(log, stderr);
  free(log);
  nvrtcDestroyProgram(&p);
  free(src);
  if (r != NVRTC_SUCCESS) fprintf(stderr, "NVRTC: %s\n", nvrtcGetErrorString(r));
  return r == NVRTC_SUCCESS ? 0 : 1;
}
