/*
 * native_cuda.c: the CUDA side of coop-bench-native: an application's
 * NAME.cl compiled alone with NVRTC into a plain CUDA cooperative kernel,
 * its task in device memory, cooperative launches timed with events.
 *
 * The source is the megakernel's own files, unchanged: the runtime's
 * embedded coop_limits.h, dialect.h, shared.h and api.h (coop__src_*), then a native
 * prelude for what the apps call of primitives.cl and barrier.cl (the
 * queue mutex of taskqueue.cl and coop_global_barrier, the latter a
 * cooperative_groups grid sync), the runtime's taskqueue.cl, the app's
 * NAME.cl (coop_app_src_NAME_cl, reached through coop_app.source), and an
 * entry point generated here that plays the runtime's role for one
 * workgroup: a coop_ctx over the hardware ids and a channel the host
 * filled, the task's arguments copied into workgroup memory (as the
 * megakernel's workgroups read them), NAME_init once, then NAME_step until COOP_DONE, a grid sync
 * at every global or resizing barrier, offer_kill never accepted and request_fork forking nothing
 * (both valid outcomes of the primitives, 004 Sec. 3.1). The NVRTC options are
 * megakernel/backends/cuda.c's, plus the include path that <cooperative_groups.h> needs.
 *
 * The driver and NVRTC are opened with dlopen (megakernel/backends/cuda_loader.h),
 * so that --help and --compile-only run where no driver is.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/cuda_loader.h"
#include "common.h"
#include "device/shared.h"
#include "native.h"

extern const char coop__src_coop_limits_h[], coop__src_dialect_h[], coop__src_shared_h[],
    coop__src_api_h[], coop__src_taskqueue_cl[]; /* cooprt: megakernel/device/ */

#ifndef COOP_NATIVE_CUDA_INCLUDE
#define COOP_NATIVE_CUDA_INCLUDE ""
#endif

/* ------------------------------------------------------------ source */

/* What the applications call of primitives.cl and barrier.cl, for a plain
 * cooperative launch: the runtime's test-and-set lock (taskqueue.cl's
 * queue mutexes), the workgroup broadcast, and coop_global_barrier as a
 * grid sync. The workgroup barrier first orders every thread's writes of
 * the step before the grid-wide one, as coop__after_step does. */
static const char prelude[] =
    "/* ---- coop-bench-native: prelude (instead of primitives.cl, barrier.cl) ---- */\n"
    "COOP_FN void coop__lock(COOP_GLOBAL coop_atomic_u32 *l) {\n"
    "  while (coop_xchg_acq(l, 1u) != 0u) {\n"
    "    while (coop_ld_rlx(l) != 0u) {\n"
    "    }\n"
    "  }\n"
    "}\n"
    "COOP_FN void coop__unlock(COOP_GLOBAL coop_atomic_u32 *l) { coop_st_rel(l, 0u); }\n"
    "COOP_FN coop_u32 coop__bcast(struct coop_ctx *c, coop_u32 v) {\n"
    "  coop_u32 k = c->bslot;\n"
    "  c->bslot = k ^ 1u;\n"
    "  if (c->lid == 0u) c->wl->decision[k] = v;\n"
    "  coop_wg_barrier();\n"
    "  return c->wl->decision[k];\n"
    "}\n"
    "COOP_FN void coop__native_grid_sync(void) { cooperative_groups::this_grid().sync(); }\n"
    "COOP_FN coop_u32 coop_global_barrier(struct coop_ctx *c) {\n"
    "  coop_wg_barrier();\n"
    "  coop__native_grid_sync();\n"
    "  return 0u;\n"
    "}\n";

void native_entry_name(const struct coop_app *a, char *buf, size_t n) {
  snprintf(buf, n, "native_%s", a->kernel);
}

char *native_source(const struct coop_app *a) {
  const char *k = a->kernel;
  char entry[2048];
  snprintf(entry, sizeof entry,
           "/* ---- coop-bench-native: entry point ---- */\n"
           "COOP_KERNEL_ENTRY void native_%s(COOP_GLOBAL struct coop_chan *ch,\n"
           "                                 COOP_GLOBAL struct coop_dev *dev,\n"
           "                                 COOP_GLOBAL coop_u8 *arena) {\n"
           "  COOP_SHARED_DECL struct coop_wgl wl;\n"
           "  struct coop_ctx c;\n"
           "  c.dev = dev;\n"
           "  c.ch = ch;\n"
           "  c.arena = arena;\n"
           "  c.wl = &wl;\n"
           "  c.self = 0;\n"
           "  c.pid = coop_hw_group_id();\n"
           "  c.vid = c.pid;\n"
           "  c.lid = coop_local_id();\n"
           "  c.lsize = coop_local_size();\n"
           "  c.forked = 0u;\n"
           "  c.left = 0u;\n"
           "  c.bslot = 0u;\n"
           /* the arguments in workgroup memory, as the megakernel's
            * workgroups have them (worker.cl, coop__next) */
           "  for (coop_u32 i = c.lid; i < 2u * COOP_MAX_ARGS; i += c.lsize)\n"
           "    wl.args[i] = dev->sched.t_payload[ch->task][i];\n"
           "  coop_wg_barrier();\n"
           "  struct %s_state s;\n"
           "  %s_init(&c, &s);\n"
           "  coop_wg_barrier();\n"
           /* A step's primitive is uniform per workgroup (the runtime's
            * coop__after_step relies on it too), so every thread takes
            * the same grid syncs. OFFER_KILL: never accepted; REQUEST_FORK:
            * k = 0. */
           "  for (;;) {\n"
           "    coop_u32 r = %s_step(&c, &s);\n"
           "    if (r & COOP_DONE) break;\n"
           "    if (r & (COOP_GLOBAL_BARRIER | COOP_RESIZING_BARRIER)) coop_global_barrier(&c);\n"
           "  }\n"
           "  coop_wg_barrier();\n"
           "}\n",
           k, k, k, k);
  size_t n = strlen(coop__src_coop_limits_h) + strlen(coop__src_dialect_h) +
             strlen(coop__src_shared_h) + strlen(coop__src_api_h) + strlen(prelude) +
             strlen(coop__src_taskqueue_cl) + strlen(a->source) + strlen(entry) + strlen(k) + 512;
  char *s = malloc(n);
  if (s)
    snprintf(s, n,
             "/* coop-bench-native: %s as a plain CUDA cooperative kernel */\n"
             "#include <cooperative_groups.h>\n"
             "%s\n%s\n%s\n%s\n%s\n%s\n/* ---- kernel %s ---- */\n%s\n%s",
             k, coop__src_coop_limits_h, coop__src_dialect_h, coop__src_shared_h, coop__src_api_h,
             prelude, coop__src_taskqueue_cl, k, a->source, entry);
  return s;
}

/* NVRTC's include path: $COOP_CUDA_INCLUDE (':'-separated) if set, else the
 * toolkit's include directories found at build time, $CUDA_HOME/include,
 * $CUDA_PATH/include and /usr/local/cuda/include; the existing ones (and
 * their cccl/ subdirectory, where CUDA 13 keeps libcu++), of which one
 * must hold cooperative_groups.h. */
#define NATIVE_MAX_INC 16
static char inc_opt[NATIVE_MAX_INC][1100];
static const char *inc_opts[NATIVE_MAX_INC];
static int n_inc;
static char inc_list[4096], inc_err[4096];
static pthread_once_t inc_once = PTHREAD_ONCE_INIT;

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void add_inc(const char *dir, size_t len) {
  char d[1024];
  if (len == 0 || len >= sizeof d - 8 || n_inc == NATIVE_MAX_INC) return;
  memcpy(d, dir, len);
  d[len] = 0;
  if (!is_dir(d)) return;
  for (int i = 0; i < n_inc; i++)
    if (!strcmp(inc_opt[i] + strlen("--include-path="), d)) return;
  snprintf(inc_opt[n_inc], sizeof inc_opt[n_inc], "--include-path=%s", d);
  inc_opts[n_inc] = inc_opt[n_inc];
  n_inc++;
  size_t l = strlen(inc_list);
  snprintf(inc_list + l, sizeof inc_list - l, "%s%s", l ? ":" : "", d);
}

static void add_inc_list(const char *list) {
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ":;");
    add_inc(p, len);
    p += len + (p[len] != 0);
  }
}

static void inc_load(void) {
  const char *env = getenv("COOP_CUDA_INCLUDE");
  char tried[2048];
  if (env && *env) {
    add_inc_list(env);
    snprintf(tried, sizeof tried, "COOP_CUDA_INCLUDE=%s", env);
  } else {
    add_inc_list(COOP_NATIVE_CUDA_INCLUDE);
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
    for (int i = 0; i < 2; i++)
      if (homes[i] && *homes[i]) {
        char d[1024];
        snprintf(d, sizeof d, "%s/include", homes[i]);
        add_inc(d, strlen(d));
      }
    add_inc("/usr/local/cuda/include", strlen("/usr/local/cuda/include"));
    snprintf(tried, sizeof tried,
             "the build's toolkit (%s), $CUDA_HOME/include, $CUDA_PATH/include, "
             "/usr/local/cuda/include",
             COOP_NATIVE_CUDA_INCLUDE[0] ? COOP_NATIVE_CUDA_INCLUDE : "none recorded");
  }
  int found = 0, n = n_inc;
  for (int i = 0; i < n; i++) {
    const char *d = inc_opt[i] + strlen("--include-path=");
    char p[1200];
    snprintf(p, sizeof p, "%s/cooperative_groups.h", d);
    found |= is_file(p);
    snprintf(p, sizeof p, "%s/cccl", d);
    add_inc(p, strlen(p));
  }
  if (!found)
    snprintf(
        inc_err, sizeof inc_err,
        "cooperative_groups.h not found for NVRTC (looked in: %.1500s; existing: %.1500s): set "
        "COOP_CUDA_INCLUDE to the CUDA toolkit's include directory, e.g. "
        "COOP_CUDA_INCLUDE=/usr/local/cuda/include",
        tried, inc_list[0] ? inc_list : "none");
}

const char *native_include_dirs(void) {
  pthread_once(&inc_once, inc_load);
  return inc_list[0] ? inc_list : "(none)";
}

/* NVRTC with cuda.c's options and the include path; *cubin malloc'ed. */
static int compile(const struct coop_app *a, const char *arch, char **cubin, size_t *bytes,
                   char *err, size_t errlen) {
  *cubin = NULL;
  *bytes = 0;
  const char *why = coop__cuda_nvrtc();
  if (why) {
    snprintf(err, errlen, "%s", why);
    return 1;
  }
  pthread_once(&inc_once, inc_load);
  if (inc_err[0]) {
    snprintf(err, errlen, "%s", inc_err);
    return 1;
  }
  char *src = native_source(a), name[128];
  if (!src) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  snprintf(name, sizeof name, "coop_native_%s.cu", a->kernel);
  nvrtcProgram prog;
  nvrtcResult r = coop__cu.nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
  free(src);
  if (r != NVRTC_SUCCESS) {
    snprintf(err, errlen, "nvrtcCreateProgram failed: %s", coop__cu.nvrtcGetErrorString(r));
    return 1;
  }
  char ga[48];
  snprintf(ga, sizeof ga, "--gpu-architecture=%s", arch);
  const char *opts[4 + NATIVE_MAX_INC] = {ga, "--std=c++17", "-default-device",
                                          "--extra-device-vectorization"};
  int nopts = 4;
  for (int i = 0; i < n_inc; i++) opts[nopts++] = inc_opts[i];
  r = coop__cu.nvrtcCompileProgram(prog, nopts, opts);
  if (r != NVRTC_SUCCESS) {
    char *log = coop__nvrtc_log(prog);
    fprintf(stderr, NB ": NVRTC log for %s:\n%s\n", a->name, log ? log : "(unavailable)");
    free(log);
    snprintf(err, errlen, "building the native %s failed: %s (include path: %s)", a->name,
             coop__cu.nvrtcGetErrorString(r), inc_list);
    coop__cu.nvrtcDestroyProgram(&prog);
    return 1;
  }
  size_t n = 0;
  coop__cu.nvrtcGetCUBINSize(prog, &n);
  *cubin = malloc(n ? n : 1);
  if (*cubin) coop__cu.nvrtcGetCUBIN(prog, *cubin);
  coop__cu.nvrtcDestroyProgram(&prog);
  if (!*cubin) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  *bytes = n;
  return 0;
}

int native_compile_only(const struct coop_app *a, const char *arch, size_t *cubin_bytes, char *err,
                        size_t errlen) {
  char *cubin = NULL;
  int r = compile(a, arch, &cubin, cubin_bytes, err, errlen);
  free(cubin);
  return r;
}

/* ------------------------------------------------------------ device */

static int cu_fail(char *err, size_t len, CUresult e, const char *what, int line) {
  const char *s = NULL;
  if (coop__cu.cuGetErrorString) coop__cu.cuGetErrorString(e, &s);
  snprintf(err, len, "%s failed: CUDA error %d (%s) (native_cuda.c:%d)", what, (int)e, s ? s : "?",
           line);
  return 1;
}

#define CK(d, call)                                                                        \
  do {                                                                                     \
    CUresult e_ = (call);                                                                  \
    if (e_ != CUDA_SUCCESS) return cu_fail((d)->err, sizeof(d)->err, e_, #call, __LINE__); \
  } while (0)

int native_dev_open(struct native_dev *d, int device) {
  memset(d, 0, sizeof *d);
  d->device = device;
  d->timeout_ns = (int64_t)120 * 1000000000;
  const char *why = coop__cuda_driver(1);
  if (why) {
    snprintf(d->err, sizeof d->err, "%s", why);
    return 1;
  }
  CK(d, coop__cu.cuInit(0));
  int count = 0;
  CK(d, coop__cu.cuDeviceGetCount(&count));
  if (device >= count) {
    snprintf(d->err, sizeof d->err, "no CUDA device %d (%d found)", device, count);
    return 1;
  }
  CUdevice dv;
  CK(d, coop__cu.cuDeviceGet(&dv, device));
  CK(d, coop__cu.cuDeviceGetName(d->name, (int)sizeof d->name, dv));
  coop__cu.cuDriverGetVersion(&d->driver);
  d->sms = coop__cuda_attr(dv, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d->cc_major = coop__cuda_attr(dv, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d->cc_minor = coop__cuda_attr(dv, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d->coop_launch = coop__cuda_attr(dv, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  if (!d->coop_launch) {
    snprintf(d->err, sizeof d->err, "%s cannot launch cooperative kernels", d->name);
    return 1;
  }
  CUcontext ctx;
  CK(d, coop__cu.cuDevicePrimaryCtxRetain(&ctx, dv));
  d->ctx = ctx;
  CK(d, coop__cu.cuCtxSetCurrent(ctx));
  CUstream s;
  CK(d, coop__cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  d->stream = s;
  CUevent e0, e1;
  CK(d, coop__cu.cuEventCreate(&e0, CU_EVENT_DEFAULT));
  d->ev0 = e0;
  CK(d, coop__cu.cuEventCreate(&e1, CU_EVENT_DEFAULT));
  d->ev1 = e1;
  return 0;
}

void native_dev_close(struct native_dev *d) {
  if (!d->ctx) return;
  coop__cu.cuCtxSetCurrent((CUcontext)d->ctx);
  if (d->stream) coop__cu.cuStreamSynchronize((CUstream)d->stream);
  if (d->ev0) coop__cu.cuEventDestroy((CUevent)d->ev0);
  if (d->ev1) coop__cu.cuEventDestroy((CUevent)d->ev1);
  if (d->stream) coop__cu.cuStreamDestroy((CUstream)d->stream);
  CUdevice dv;
  if (coop__cu.cuDeviceGet(&dv, d->device) == CUDA_SUCCESS) coop__cu.cuDevicePrimaryCtxRelease(dv);
  d->ctx = NULL;
}

int native_dev_prefetch(struct native_dev *d, void *p, size_t bytes) {
  CUstream s = (CUstream)d->stream;
  CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
#if CUDA_VERSION >= 13000
  CUmemLocation loc;
  memset(&loc, 0, sizeof loc);
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = d->device;
  CK(d, coop__cu.cuMemPrefetchAsync(ptr, bytes, loc, 0, s));
#else
  CUdevice dv;
  CK(d, coop__cu.cuDeviceGet(&dv, d->device));
  CK(d, coop__cu.cuMemPrefetchAsync(ptr, bytes, dv, s));
#endif
  CK(d, coop__cu.cuStreamSynchronize(s));
  return 0;
}

/* ------------------------------------------------------------ kernel */

int native_kernel_open(struct native_dev *d, struct native_kernel *k, const struct coop_app *a,
                       unsigned local, unsigned blocks) {
  memset(k, 0, sizeof *k);
  k->app = a;
  k->local = local;
  char arch[32], *cubin = NULL, entry[128];
  size_t bytes = 0;
  snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
  if (compile(a, arch, &cubin, &bytes, d->err, sizeof d->err)) return 1;
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
  CUmodule mod;
  CUresult e = coop__cu.cuModuleLoadData(&mod, cubin);
  free(cubin);
  if (e != CUDA_SUCCESS) return cu_fail(d->err, sizeof d->err, e, "cuModuleLoadData", __LINE__);
  k->mod = mod;
  native_entry_name(a, entry, sizeof entry);
  CUfunction fn;
  CK(d, coop__cu.cuModuleGetFunction(&fn, mod, entry));
  k->fn = fn;
  int maxt = 0;
  CK(d, coop__cu.cuFuncGetAttribute(&k->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
  CK(d, coop__cu.cuFuncGetAttribute(&k->shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
  CK(d, coop__cu.cuFuncGetAttribute(&k->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn));
  CK(d, coop__cu.cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
  if ((int)local > maxt) {
    snprintf(d->err, sizeof d->err,
             "native %s: local size %u is more than the kernel allows (%d threads at %d "
             "registers)",
             a->name, local, maxt, k->regs);
    return 1;
  }
  CK(d, coop__cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&k->blocks_per_sm, fn, (int)local, 0));
  unsigned bound = (unsigned)k->blocks_per_sm * (unsigned)d->sms;
  if (bound == 0) {
    snprintf(d->err, sizeof d->err, "native %s: no block of %u threads fits on an SM", a->name,
             local);
    return 1;
  }
  if (blocks > bound) {
    snprintf(d->err, sizeof d->err,
             "native %s: %u blocks asked for, at most %u (%d per SM x %d SMs) can be co-resident "
             "for a cooperative launch",
             a->name, blocks, bound, k->blocks_per_sm, d->sms);
    return 1;
  }
  k->blocks = blocks ? blocks : bound;
  return 0;
}

void native_kernel_close(struct native_dev *d, struct native_kernel *k) {
  if (k->mod && d->ctx) {
    coop__cu.cuCtxSetCurrent((CUcontext)d->ctx);
    coop__cu.cuModuleUnload((CUmodule)k->mod);
  }
  k->mod = k->fn = NULL;
}

/* -------------------------------------------------------------- task */

#define NATIVE_ALIGN 64u

int native_task_open(struct native_dev *d, struct native_task *nt, struct coop_app_task *t) {
  memset(nt, 0, sizeof *nt);
  nt->t = t;
  size_t at = 0;
  for (unsigned i = 0; i < t->nargs; i++) {
    if (!t->arg[i].buf) continue;
    nt->off[i] = at;
    at += (t->arg[i].size + NATIVE_ALIGN - 1) / NATIVE_ALIGN * NATIVE_ALIGN;
  }
  nt->arena_bytes = at ? at : NATIVE_ALIGN;
  if (!(nt->image = calloc(1, nt->arena_bytes))) {
    snprintf(d->err, sizeof d->err, "out of memory (%zu bytes of arena image)", nt->arena_bytes);
    return 1;
  }
  for (unsigned i = 0; i < t->nargs; i++)
    if (t->arg[i].buf && t->arg[i].init_len)
      memcpy(nt->image + nt->off[i], t->arg[i].init, t->arg[i].init_len);
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
  CUdeviceptr p;
  CK(d, coop__cu.cuMemAlloc(&p, nt->arena_bytes));
  nt->arena = p;
  CK(d, coop__cu.cuMemAlloc(&p, sizeof(struct coop_chan)));
  nt->chan = p;
  CK(d, coop__cu.cuMemAlloc(&p, sizeof(struct coop_dev)));
  nt->dev = p;
  CK(d, coop__cu.cuMemsetD8((CUdeviceptr)nt->dev, 0, sizeof(struct coop_dev)));
  return 0;
}

void native_task_close(struct native_dev *d, struct native_task *nt) {
  if (d->ctx) {
    coop__cu.cuCtxSetCurrent((CUcontext)d->ctx);
    uint64_t *ps[] = {&nt->arena, &nt->chan, &nt->dev};
    for (int i = 0; i < 3; i++)
      if (*ps[i]) coop__cu.cuMemFree((CUdeviceptr)*ps[i]);
  }
  free(nt->image);
  memset(nt, 0, sizeof *nt);
}

/* The channel as the runtime's scheduler would fill it for a task of
 * `groups` workgroups that is never resized, in task slot 0, and that
 * slot's args then lens (sched.t_payload[0], where kernels read them). */
static void fill_chan(struct coop_chan *ch, coop_u64 *payload, const struct coop_app_task *t,
                      unsigned groups, const size_t *off) {
  memset(ch, 0, sizeof *ch);
  memset(payload, 0, 2 * COOP_MAX_ARGS * sizeof *payload);
  ch->flags = COOP_TF_COOPERATIVE;
  ch->n_max = groups;
  ch->task = 0;
  for (unsigned i = 0; i < t->nargs && i < COOP_MAX_ARGS; i++) {
    payload[i] = t->arg[i].buf ? (coop_u64)off[i] : (coop_u64)t->arg[i].value;
    payload[COOP_MAX_ARGS + i] = t->arg[i].buf ? (coop_u64)t->arg[i].size : 0u;
  }
  atomic_store_explicit(&ch->m, groups, memory_order_relaxed); /* want_kill, n_resv: 0 */
}

static void nap_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

int native_task_run(struct native_dev *d, struct native_kernel *k, struct native_task *nt,
                    double *ns) {
  static struct coop_chan ch; /* about 9 KiB: not on the stack */
  coop_u64 payload[2 * COOP_MAX_ARGS];
  CUstream s = (CUstream)d->stream;
  if (nt->t->groups != k->blocks) {
    snprintf(d->err, sizeof d->err, "native %s: task prepared for %u groups, launch of %u",
             k->app->name, nt->t->groups, k->blocks);
    return 1;
  }
  fill_chan(&ch, payload, nt->t, k->blocks, nt->off);
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
  CK(d, coop__cu.cuMemcpyHtoD((CUdeviceptr)nt->arena, nt->image, nt->arena_bytes));
  CK(d, coop__cu.cuMemcpyHtoD((CUdeviceptr)nt->chan, &ch, sizeof ch));
  CK(d, coop__cu.cuMemcpyHtoD((CUdeviceptr)(nt->dev + offsetof(struct coop_dev, sched) +
                                            offsetof(struct coop_sched, t_payload)),
                              payload, sizeof payload));
  CUdeviceptr pc = (CUdeviceptr)nt->chan, pd = (CUdeviceptr)nt->dev, pa = (CUdeviceptr)nt->arena;
  void *params[] = {&pc, &pd, &pa};
  CK(d, coop__cu.cuEventRecord((CUevent)d->ev0, s));
  CK(d, coop__cu.cuLaunchCooperativeKernel((CUfunction)k->fn, k->blocks, 1, 1, k->local, 1, 1, 0, s,
                                           params));
  CK(d, coop__cu.cuEventRecord((CUevent)d->ev1, s));
  int64_t start = now_ns();
  CUresult e;
  while ((e = coop__cu.cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) {
    if (now_ns() - start > d->timeout_ns) {
      snprintf(d->err, sizeof d->err,
               "native %s did not finish within %lld s (%u blocks x %u threads); the kernel "
               "cannot be stopped, the process must exit",
               k->app->name, (long long)(d->timeout_ns / 1000000000), k->blocks, k->local);
      return 2;
    }
    nap_us(20);
  }
  if (e != CUDA_SUCCESS) return cu_fail(d->err, sizeof d->err, e, "the native kernel", __LINE__);
  float ms = 0;
  CK(d, coop__cu.cuEventElapsedTime(&ms, (CUevent)d->ev0, (CUevent)d->ev1));
  *ns = (double)ms * 1e6;
  return 0;
}

int native_task_trip(struct native_dev *d, struct native_kernel *k, struct native_task *nt,
                     double *ns) {
  CUstream s = (CUstream)d->stream;
  CUdeviceptr pc = (CUdeviceptr)nt->chan, pd = (CUdeviceptr)nt->dev, pa = (CUdeviceptr)nt->arena;
  void *params[] = {&pc, &pd, &pa};
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
  int64_t t0 = now_ns();
  CK(d, coop__cu.cuLaunchCooperativeKernel((CUfunction)k->fn, k->blocks, 1, 1, k->local, 1, 1, 0, s,
                                           params));
  CUresult e;
  while ((e = coop__cu.cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) {
    if (now_ns() - t0 > d->timeout_ns) {
      snprintf(d->err, sizeof d->err, "native %s: a launch did not finish", k->app->name);
      return 2;
    }
  }
  if (e != CUDA_SUCCESS) return cu_fail(d->err, sizeof d->err, e, "the native kernel", __LINE__);
  *ns = (double)(now_ns() - t0);
  return 0;
}

int native_task_read(struct native_dev *d, struct native_task *nt, struct coop_app_task *t,
                     unsigned *fault) {
  if (t->nargs != nt->t->nargs) {
    snprintf(d->err, sizeof d->err, "native %s: the task to read into has another layout",
             t->app->name);
    return 1;
  }
  for (unsigned i = 0; i < t->nargs; i++)
    if (t->arg[i].buf != nt->t->arg[i].buf || t->arg[i].size != nt->t->arg[i].size) {
      snprintf(d->err, sizeof d->err, "native %s: the task to read into has another layout",
               t->app->name);
      return 1;
    }
  CK(d, coop__cu.cuCtxSetCurrent((CUcontext)d->ctx));
  for (unsigned i = 0; i < t->nargs; i++)
    if (t->arg[i].buf && (t->arg[i].dir & COOP_APP_OUT) && t->arg[i].host)
      CK(d, coop__cu.cuMemcpyDtoH(t->arg[i].host, (CUdeviceptr)(nt->arena + nt->off[i]),
                                  t->arg[i].size));
  uint32_t f = 0;
  CK(d, coop__cu.cuMemcpyDtoH(&f, (CUdeviceptr)(nt->chan + offsetof(struct coop_chan, fault)),
                              sizeof f));
  *fault = f;
  return 0;
}
