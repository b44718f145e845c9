/*
 * side_cuda.c: the plain CUDA side of coop-bench-side: the matmul of
 * kernels/apps/matmul.cl compiled on its own with NVRTC, launched on a
 * stream of the device's primary context, and the matmul's inputs, CPU
 * reference and check.
 *
 * The same source as the coop task, unchanged: the runtime's embedded
 * dialect.h (coop__src_dialect_h, the portability header every device file
 * is written against), then, instead of api.h, a coop_ctx of its own whose
 * accessors (coop_group_id, coop_num_groups, coop_local_id_c,
 * coop_local_size_c, coop_arg_u32, coop_arg_buf) read the hardware's block
 * and thread ids and the kernel's parameters, then matmul.cl
 * (coop_app_src_matmul_cl), then an entry point that fills the context and
 * calls matmul(). The NVRTC options are megakernel/backends/cuda.c's.
 *
 * The driver and NVRTC are opened with dlopen (megakernel/backends/cuda_loader.h),
 * so that the binary runs --help and --compile-only where no driver is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda_loader.h"
#include "side.h"

extern const char coop__src_dialect_h[];    /* cooprt: device/dialect.h */
extern const char coop_app_src_matmul_cl[]; /* coopapps: kernels/apps/matmul.cl */

/* ------------------------------------------------------ matmul data */

void side_mm_inputs(float *a, float *b, uint32_t n) {
  for (size_t i = 0; i < (size_t)n * n; i++) {
    a[i] = (float)((int)((i * 7 + 3) % 7) - 3);
    b[i] = (float)((int)((i * 5 + 1) % 7) - 3);
  }
}

void side_mm_ref(const float *a, const float *b, float *ref, uint32_t n) {
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < n; k++) acc += a[(size_t)r * n + k] * b[(size_t)k * n + j];
      ref[(size_t)r * n + j] = acc;
    }
}

int side_mm_compare(const float *c, const float *ref, uint32_t n, char *why, size_t len) {
  for (size_t i = 0; i < (size_t)n * n; i++)
    if (memcmp(&c[i], &ref[i], sizeof(float)) != 0) {
      snprintf(why, len, "matmul c[%zu] = %g, expected %g", i, (double)c[i], (double)ref[i]);
      return 1;
    }
  return 0;
}

/* ----------------------------------------------------------- source */

static const char shim[] =
    "/* coop-bench-side: kernels/apps/matmul.cl as a plain kernel. A coop_ctx\n"
    " * of its own instead of api.h's: the hardware's ids and the parameters. */\n"
    "struct coop_ctx { coop_u64 args[5], lens[5]; coop_u32 vid, ngroups, lid, lsize; };\n"
    "COOP_FN coop_u32 coop_group_id(const struct coop_ctx *c) { return c->vid; }\n"
    "COOP_FN coop_u32 coop_num_groups(const struct coop_ctx *c) { return c->ngroups; }\n"
    "COOP_FN coop_u32 coop_local_id_c(const struct coop_ctx *c) { return c->lid; }\n"
    "COOP_FN coop_u32 coop_local_size_c(const struct coop_ctx *c) { return c->lsize; }\n"
    "/* a plain launch is never cancelled: the kernel's checks read 0 */\n"
    "COOP_FN coop_u32 coop_cancel_requested(const struct coop_ctx *c) { return c ? 0u : 0u; }\n"
    "COOP_FN coop_u32 coop_arg_u32(const struct coop_ctx *c, coop_u32 i) {\n"
    "  return (coop_u32)c->args[i];\n"
    "}\n"
    "COOP_FN COOP_GLOBAL void *coop_arg_buf(const struct coop_ctx *c, coop_u32 i) {\n"
    "  return (COOP_GLOBAL void *)c->args[i];\n"
    "}\n"
    "/* api.h's bounds-checked float view, with the same check (so both forms\n"
    " * do the same work); an index outside goes to a sink, as there. */\n"
    "__device__ float coop__side_sink[16];\n"
    "typedef struct { COOP_GLOBAL float *p; coop_u64 n; } coop_buf_f32;\n"
    "COOP_FN coop_buf_f32 coop_arg_buf_f32(const struct coop_ctx *c, coop_u32 i) {\n"
    "  coop_buf_f32 v;\n"
    "  v.p = (COOP_GLOBAL float *)c->args[i];\n"
    "  v.n = c->lens[i] / sizeof(float);\n"
    "  return v;\n"
    "}\n"
    "#define coop_at(v, i) \\\n"
    "  (*((coop_u64)(i) < (v).n ? (v).p + (coop_u64)(i) : coop__side_sink))\n";

static const char entry[] =
    "COOP_KERNEL_ENTRY void coop_side_matmul(const float *a, const float *b, float *o,\n"
    "                                        coop_u32 n, coop_u32 reps) {\n"
    "  struct coop_ctx c;\n"
    "  c.args[0] = (coop_u64)a;\n"
    "  c.args[1] = (coop_u64)b;\n"
    "  c.args[2] = (coop_u64)o;\n"
    "  c.args[3] = n;\n"
    "  c.args[4] = reps;\n"
    "  c.lens[0] = c.lens[1] = c.lens[2] = (coop_u64)n * n * sizeof(float);\n"
    "  c.lens[3] = c.lens[4] = 0u;\n"
    "  c.vid = coop_hw_group_id();\n"
    "  c.ngroups = coop_hw_num_groups();\n"
    "  c.lid = coop_local_id();\n"
    "  c.lsize = coop_local_size();\n"
    "  matmul(&c);\n"
    "}\n";

char *side_plain_source(void) {
  size_t n = strlen(coop__src_dialect_h) + strlen(shim) + strlen(coop_app_src_matmul_cl) +
             strlen(entry) + 8;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s\n%s\n%s\n%s", coop__src_dialect_h, shim, coop_app_src_matmul_cl, entry);
  return s;
}

/* NVRTC with cuda.c's options; *cubin malloc'ed. */
static int compile(const char *arch, char **cubin, char *err, size_t errlen) {
  const char *why = coop__cuda_nvrtc();
  if (why) {
    snprintf(err, errlen, "%s", why);
    return 1;
  }
  char *src = side_plain_source();
  if (!src) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  nvrtcProgram prog;
  if (coop__cu.nvrtcCreateProgram(&prog, src, "coop_side_matmul.cu", 0, NULL, NULL) !=
      NVRTC_SUCCESS) {
    free(src);
    snprintf(err, errlen, "nvrtcCreateProgram failed");
    return 1;
  }
  free(src);
  char a[48];
  snprintf(a, sizeof a, "--gpu-architecture=%s", arch);
  const char *opts[] = {a, "--std=c++17", "-default-device", "--extra-device-vectorization"};
  nvrtcResult r = coop__cu.nvrtcCompileProgram(prog, 4, opts);
  if (r != NVRTC_SUCCESS) {
    char *log = coop__nvrtc_log(prog);
    fprintf(stderr, SB ": NVRTC log:\n%s\n", log ? log : "(unavailable)");
    free(log);
    snprintf(err, errlen, "building the standalone matmul failed: %s",
             coop__cu.nvrtcGetErrorString(r));
    coop__cu.nvrtcDestroyProgram(&prog);
    return 1;
  }
  size_t n = 0;
  coop__cu.nvrtcGetCUBINSize(prog, &n);
  *cubin = malloc(n ? n : 1);
  if (*cubin) coop__cu.nvrtcGetCUBIN(prog, *cubin);
  coop__cu.nvrtcDestroyProgram(&prog);
  if (!*cubin) snprintf(err, errlen, "out of memory");
  return *cubin ? 0 : 1;
}

int side_compile_only(const char *arch) {
  char *cubin = NULL, err[512] = "";
  int r = compile(arch, &cubin, err, sizeof err);
  free(cubin);
  if (r) fprintf(stderr, SB ": %s\n", err);
  return r;
}

/* ------------------------------------------------------------ plain */

static int cu_fail(struct plain *p, CUresult e, const char *what, int line) {
  const char *s = NULL;
  if (coop__cu.cuGetErrorString) coop__cu.cuGetErrorString(e, &s);
  snprintf(p->err, sizeof p->err, "%s failed: CUDA error %d (%s) (side_cuda.c:%d)", what, (int)e,
           s ? s : "?", line);
  return 1;
}

#define CK(p, call)                                                   \
  do {                                                                \
    CUresult e_ = (call);                                             \
    if (e_ != CUDA_SUCCESS) return cu_fail((p), e_, #call, __LINE__); \
  } while (0)

int plain_open(struct plain *p, int device, unsigned local) {
  return plain_open_ctx(p, device, local, NULL);
}

int plain_open_ctx(struct plain *p, int device, unsigned local, void *ctx_in) {
  memset(p, 0, sizeof *p);
  p->timeout_ns = (int64_t)120 * 1000000000;
  p->device = device;
  p->local = local;
  const char *why = coop__cuda_driver(1);
  if (why) {
    snprintf(p->err, sizeof p->err, "%s", why);
    return 1;
  }
  CK(p, coop__cu.cuInit(0));
  int count = 0;
  CK(p, coop__cu.cuDeviceGetCount(&count));
  if (device >= count) {
    snprintf(p->err, sizeof p->err, "no CUDA device %d (%d found)", device, count);
    return 1;
  }
  CUdevice d;
  CK(p, coop__cu.cuDeviceGet(&d, device));
  CK(p, coop__cu.cuDeviceGetName(p->name, (int)sizeof p->name, d));
  coop__cu.cuDriverGetVersion(&p->driver);
  p->sms = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->cc_major = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p->cc_minor = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  CUcontext ctx = (CUcontext)ctx_in;
  if (!ctx) {
    CK(p, coop__cu.cuDevicePrimaryCtxRetain(&ctx, d));
    p->own_ctx = 1;
  }
  p->ctx = ctx;
  CK(p, coop__cu.cuCtxSetCurrent(ctx));
  char arch[32], *cubin = NULL;
  snprintf(arch, sizeof arch, "sm_%d%d", p->cc_major, p->cc_minor);
  if (compile(arch, &cubin, p->err, sizeof p->err)) return 1;
  CUmodule mod;
  CUresult e = coop__cu.cuModuleLoadData(&mod, cubin);
  free(cubin);
  if (e != CUDA_SUCCESS) return cu_fail(p, e, "cuModuleLoadData", __LINE__);
  p->mod = mod;
  CUfunction fn;
  CK(p, coop__cu.cuModuleGetFunction(&fn, mod, "coop_side_matmul"));
  p->fn = fn;
  CK(p, coop__cu.cuCtxGetStreamPriorityRange(&p->prio_least, &p->prio_greatest));
  CUstream s;
  CK(p, coop__cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, p->prio_greatest));
  p->stream = s;
  p->prio = p->prio_greatest;
  CUevent e0, e1;
  CK(p, coop__cu.cuEventCreate(&e0, CU_EVENT_DEFAULT));
  p->ev0 = e0;
  CK(p, coop__cu.cuEventCreate(&e1, CU_EVENT_DEFAULT));
  p->ev1 = e1;
  return 0;
}

int plain_stream(struct plain *p, int highest) {
  CK(p, coop__cu.cuCtxSetCurrent((CUcontext)p->ctx));
  CK(p, coop__cu.cuStreamSynchronize((CUstream)p->stream));
  CUstream s;
  if (highest)
    CK(p, coop__cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, p->prio_greatest));
  else
    CK(p, coop__cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int prio = 0;
  CUresult e = coop__cu.cuStreamGetPriority(s, &prio);
  if (e != CUDA_SUCCESS) {
    coop__cu.cuStreamDestroy(s);
    return cu_fail(p, e, "cuStreamGetPriority", __LINE__);
  }
  CK(p, coop__cu.cuStreamDestroy((CUstream)p->stream));
  p->stream = s;
  p->prio = prio;
  return 0;
}

int plain_carveout(struct plain *p, int pct) {
  if (pct < 0) return 0;
  CK(p, coop__cu.cuCtxSetCurrent((CUcontext)p->ctx));
  CK(p, coop__cu.cuFuncSetAttribute((CUfunction)p->fn,
                                    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct));
  return 0;
}

static void free_data(struct plain *p) {
  if (p->ctx) coop__cu.cuCtxSetCurrent((CUcontext)p->ctx);
  uint64_t *bufs[] = {&p->a, &p->b, &p->c, &p->chk};
  for (int i = 0; i < 4; i++) {
    if (*bufs[i]) coop__cu.cuMemFree((CUdeviceptr)*bufs[i]);
    *bufs[i] = 0;
  }
  void **host[] = {&p->io_in, &p->io_out};
  for (int i = 0; i < 2; i++) {
    if (*host[i]) coop__cu.cuMemFreeHost(*host[i]);
    *host[i] = NULL;
  }
  free(p->ref);
  p->ref = NULL;
}

int plain_data(struct plain *p, uint32_t n) {
  free_data(p);
  p->n = n;
  p->reps = 1;
  p->bytes = (size_t)n * n * sizeof(float);
  float *a = malloc(p->bytes), *b = malloc(p->bytes);
  p->ref = malloc(p->bytes);
  if (!a || !b || !p->ref) {
    free(a);
    free(b);
    snprintf(p->err, sizeof p->err, "out of memory");
    return 1;
  }
  side_mm_inputs(a, b, n);
  side_mm_ref(a, b, p->ref, n);
  CUresult e = coop__cu.cuCtxSetCurrent((CUcontext)p->ctx);
  CUdeviceptr d[4] = {0};
  for (int i = 0; i < 4 && e == CUDA_SUCCESS; i++) e = coop__cu.cuMemAlloc(&d[i], p->bytes);
  p->a = d[0], p->b = d[1], p->c = d[2], p->chk = d[3];
  if (e == CUDA_SUCCESS) e = coop__cu.cuMemcpyHtoD(d[0], a, p->bytes);
  if (e == CUDA_SUCCESS) e = coop__cu.cuMemcpyHtoD(d[1], b, p->bytes);
  /* --frame-io: a frame's input from page-locked memory, the fastest a
   * plain CUDA client has, and its output into such memory */
  if (e == CUDA_SUCCESS && p->io) e = coop__cu.cuMemHostAlloc(&p->io_in, p->bytes, 0);
  if (e == CUDA_SUCCESS && p->io) e = coop__cu.cuMemHostAlloc(&p->io_out, p->bytes, 0);
  if (e == CUDA_SUCCESS && p->io) memcpy(p->io_in, a, p->bytes);
  free(a);
  free(b);
  if (e != CUDA_SUCCESS) return cu_fail(p, e, "allocating and uploading the matmul", __LINE__);
  return plain_reset_chk(p);
}

int plain_reset_chk(struct plain *p) {
  CUstream s = (CUstream)p->stream;
  CK(p, coop__cu.cuCtxSetCurrent((CUcontext)p->ctx));
  CK(p, coop__cu.cuMemsetD32Async((CUdeviceptr)p->chk, 0xffffffffu, p->bytes / 4, s));
  CK(p, coop__cu.cuStreamSynchronize(s));
  return 0;
}

int plain_launch(struct plain *p, int chk) {
  CUstream s = (CUstream)p->stream;
  CUdeviceptr a = (CUdeviceptr)p->a, b = (CUdeviceptr)p->b, c = (CUdeviceptr)(chk ? p->chk : p->c);
  unsigned n = p->n, reps = p->reps;
  void *params[] = {&a, &b, &c, &n, &reps};
  CK(p, coop__cu.cuCtxSetCurrent((CUcontext)p->ctx));
  if (p->io) CK(p, coop__cu.cuMemcpyHtoDAsync(a, p->io_in, p->bytes, s));
  CK(p, coop__cu.cuEventRecord((CUevent)p->ev0, s));
  CK(p,
     coop__cu.cuLaunchKernel((CUfunction)p->fn, p->grid, 1, 1, p->local, 1, 1, 0, s, params, NULL));
  CK(p, coop__cu.cuEventRecord((CUevent)p->ev1, s));
  if (p->io) CK(p, coop__cu.cuMemcpyDtoHAsync(p->io_out, c, p->bytes, s));
  return 0;
}

int plain_finish(struct plain *p, int64_t *exec_ns) {
  CUstream s = (CUstream)p->stream;
  CUresult e;
  int64_t start = now_ns();
  while ((e = coop__cu.cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
    if (now_ns() - start > p->timeout_ns) {
      snprintf(p->err, sizeof p->err,
               "a plain matmul launch did not finish within %lld s (no SM slot free for it?)",
               (long long)(p->timeout_ns / 1000000000));
      return 1;
    }
  if (e != CUDA_SUCCESS) return cu_fail(p, e, "cuStreamQuery", __LINE__);
  float ms = 0;
  CK(p, coop__cu.cuEventElapsedTime(&ms, (CUevent)p->ev0, (CUevent)p->ev1));
  *exec_ns = (int64_t)((double)ms * 1e6);
  return 0;
}

int plain_check(struct plain *p, char *why, size_t len) {
  float *c = malloc(p->bytes);
  if (!c) {
    snprintf(why, len, "out of memory");
    return 1;
  }
  CUstream s = (CUstream)p->stream;
  CUresult e = coop__cu.cuCtxSetCurrent((CUcontext)p->ctx);
  if (e == CUDA_SUCCESS) e = coop__cu.cuMemcpyDtoHAsync(c, (CUdeviceptr)p->chk, p->bytes, s);
  if (e == CUDA_SUCCESS) e = coop__cu.cuStreamSynchronize(s);
  int r = 0;
  if (e != CUDA_SUCCESS) {
    cu_fail(p, e, "reading the check buffer", __LINE__);
    snprintf(why, len, "%s", p->err);
    r = 1;
  } else {
    r = side_mm_compare(c, p->ref, p->n, why, len);
    /* --frame-io: also what the last frame moved out (its a is the same) */
    if (!r && p->io) r = side_mm_compare(p->io_out, p->ref, p->n, why, len);
  }
  free(c);
  return r;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

int plain_measure(struct plain *p, int runs, double *ns) {
  int64_t v[64];
  if (runs > 64) runs = 64;
  for (int i = -1; i < runs; i++) {
    int64_t e = 0;
    if (plain_launch(p, 0) || plain_finish(p, &e)) return 1;
    if (i >= 0) v[i] = e;
  }
  qsort(v, (size_t)runs, sizeof v[0], cmp_i64);
  *ns = (double)v[(runs - 1) / 2];
  return 0;
}

void plain_close(struct plain *p) {
  if (!p->ctx) {
    free(p->ref);
    p->ref = NULL;
    return;
  }
  coop__cu.cuCtxSetCurrent((CUcontext)p->ctx);
  if (p->stream) coop__cu.cuStreamSynchronize((CUstream)p->stream);
  free_data(p);
  if (p->ev0) coop__cu.cuEventDestroy((CUevent)p->ev0);
  if (p->ev1) coop__cu.cuEventDestroy((CUevent)p->ev1);
  if (p->stream) coop__cu.cuStreamDestroy((CUstream)p->stream);
  if (p->mod) coop__cu.cuModuleUnload((CUmodule)p->mod);
  CUdevice d;
  if (p->own_ctx && coop__cu.cuDeviceGet(&d, p->device) == CUDA_SUCCESS)
    coop__cu.cuDevicePrimaryCtxRelease(d);
  p->ctx = NULL;
}

void plain_unbind(void) {
  if (coop__cu.cuCtxSetCurrent) coop__cu.cuCtxSetCurrent(NULL);
}
