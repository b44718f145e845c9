/* cuda_loader.c: see cuda_loader.h. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_loader.h"

#define COOP__STR(x) #x
#define COOP__XSTR(x) COOP__STR(x)

struct coop__cuda_api coop__cu;

/* Why a load failed: the first reason, empty when it did not. */
struct why {
  char s[512];
};
static struct why cu_err, cu_bench_err, cu_io_err, nv_err;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT, nv_once = PTHREAD_ONCE_INIT;

static void resolve(void *h, const char *name, void **slot, struct why *err) {
  *slot = dlsym(h, name);
  if (!*slot && !err->s[0]) snprintf(err->s, sizeof err->s, "symbol %s not found", name);
}

static void cu_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(cu_err.s, sizeof cu_err.s, "no NVIDIA driver library (libcuda.so.1): %s", dlerror());
    return;
  }
#define COOP__RESOLVE_CU(f) resolve(h, COOP__XSTR(f), (void **)&coop__cu.f, &cu_err);
#define COOP__RESOLVE_CU_BENCH(f) resolve(h, COOP__XSTR(f), (void **)&coop__cu.f, &cu_bench_err);
  COOP__CU_FNS(COOP__RESOLVE_CU)
  COOP__CU_BENCH_FNS(COOP__RESOLVE_CU_BENCH)
#define COOP__RESOLVE_CU_IO(f) resolve(h, COOP__XSTR(f), (void **)&coop__cu.f, &cu_io_err);
  COOP__CU_IO_FNS(COOP__RESOLVE_CU_IO)
}

static void nv_load(void) {
  const char *tries[] = {getenv("COOP_NVRTC"), "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                         "libnvrtc.so.11.2"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof tries / sizeof tries[0] && !h; i++)
    if (tries[i]) h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(nv_err.s, sizeof nv_err.s,
             "no NVRTC library (libnvrtc.so*; set COOP_NVRTC to its path): %s", dlerror());
    return;
  }
#define COOP__RESOLVE_NV(f) resolve(h, COOP__XSTR(f), (void **)&coop__cu.f, &nv_err);
  COOP__NVRTC_FNS(COOP__RESOLVE_NV)
}

const char *coop__cuda_driver(int bench) {
  pthread_once(&cu_once, cu_load);
  if (cu_err.s[0]) return cu_err.s;
  if (bench && cu_bench_err.s[0]) return cu_bench_err.s;
  return bench && cu_io_err.s[0] ? cu_io_err.s : NULL;
}

int coop__cuda_io(void) { return !cu_err.s[0] && !cu_io_err.s[0]; }

const char *coop__cuda_nvrtc(void) {
  pthread_once(&nv_once, nv_load);
  return nv_err.s[0] ? nv_err.s : NULL;
}

int coop__cuda_attr(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  coop__cu.cuDeviceGetAttribute(&v, a, d);
  return v;
}

char *coop__nvrtc_log(nvrtcProgram prog) {
  size_t n = 0;
  coop__cu.nvrtcGetProgramLogSize(prog, &n);
  char *log = malloc(n + 1);
  if (log) {
    coop__cu.nvrtcGetProgramLog(prog, log);
    log[n] = 0;
  }
  return log;
}
