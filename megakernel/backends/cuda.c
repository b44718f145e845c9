/*
 * cuda.c: the CUDA backend (NVIDIA GPUs), driver API and NVRTC.
 *
 * Why CUDA at all: NVIDIA's OpenCL has no fine-grained SVM and no SVM
 * atomics, and mapped buffers do not carry values to a running kernel
 * (FACTS.md), so the megakernel cannot talk to the host there.
 *
 * Why NVRTC at start-up rather than nvcc at build time: the megakernel is
 * assembled at launch from the registered kernels (coopd loads them from a
 * directory, and reloads them on SIGHUP), exactly as OpenCL's
 * clBuildProgram builds it; the same device sources go to either compiler
 * unchanged (device/dialect.h), and the target architecture is the one of
 * the device actually opened.
 *
 * Memory:
 *   mailbox  page-locked host memory mapped into the device
 *            (cuMemHostAlloc DEVICEMAP): the host and the scheduler block
 *            exchange system-scope acquire/release atomics through it; only
 *            the scheduler polls it (FACTS.md: 3 us round trip that way,
 *            261 us when every block polls host memory);
 *   arena    managed memory (cuMemAllocManaged): task buffers, which the
 *            host fills before a submit's release and reads after the
 *            task's final state (acquire); on devices with concurrent
 *            managed access the pages migrate to the GPU on first touch, so
 *            kernels work on device memory;
 *   dev      device memory: the scheduler context, channels, workers.
 * Every op makes the primary context current first: ops come from
 * different threads (coopd builds on a work thread, launches on its device
 * thread), never two at once (backend.h).
 *
 * The driver (libcuda.so.1) and NVRTC are opened with dlopen at the first
 * open, not linked (cuda_loader.h says why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_io.h"
#include "cuda_loader.h"
#include "cubin.h"
#include "occupancy.h"
#include "rt_internal.h"

#define CU_LANES 4

struct cu_be {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUmodule module;
  CUfunction fn;
  CUdeviceptr devmem;
  char *cubin; /* built, not yet loaded: see cu_build */
  int cc_major, cc_minor, concurrent_managed;
  int launched;
  int own_ctx; /* the primary context, retained here */
  /* what ptxas said of the built megakernel (cu_width before the load);
   * regs -1: it said nothing */
  struct coop_rt_width built;
  int no_verbose;       /* this NVRTC refused --ptxas-options: no figures before a load */
  char cap_note[128];   /* what the cap step did to the built megakernel (cu_compile_more) */
  void *warm_src;       /* cu_copy_warm's page-locked bytes, or NULL until its first */
  CUdeviceptr warm_dst; /* and its managed (or device) bytes */
  CUdeviceptr warm_far; /* CU_WARM_FROM_MAX bytes of device memory: a warm-up from a
                         * caller's pages lands there (0 until the first) */
  int far_failed;       /* they could not be had: such warm-ups are plain ones */
  int warm_failed;      /* they could not be had: not asked again */
  /* cu_copy_arena's page-locked room for a small copy (CU_STAGE_BYTES),
   * made at the first; stage_mu: one copy through it at a time */
  void *stage;
  pthread_mutex_t stage_mu;
  int stage_failed;
  /* the copy lanes (lane_copy): non-blocking streams, lanes of them made
   * at open (0: none, the legacy stream); lane_mu[i]: one copy on lane i */
  CUstream lane[CU_LANES];
  pthread_mutex_t lane_mu[CU_LANES];
  int lanes;
  struct cu_io *io; /* coop_rt_submit_io's streams (cuda_io.c), made at its first */
};

static int cu_fail(struct coop_rt *rt, CUresult e, const char *what, int line) {
  const char *s = NULL;
  if (coop__cu.cuGetErrorString) coop__cu.cuGetErrorString(e, &s);
  coop__rt_msg(rt, "%s failed: CUDA error %d (%s) (cuda.c:%d)", what, (int)e, s ? s : "?", line);
  return e == CUDA_ERROR_OUT_OF_MEMORY ? COOP_ENOMEM : COOP_ECL;
}

#define CU_CHECK(rt, call)                                             \
  do {                                                                 \
    CUresult e_ = (call);                                              \
    if (e_ != CUDA_SUCCESS) return cu_fail((rt), e_, #call, __LINE__); \
  } while (0)

/* The copy lanes. The host's copies between host memory and the arena
 * (cu_copy_arena, its stage, the warm-up) each take the first lane free,
 * and return once their stream is through, so a thread's copies keep
 * their order. Two threads' copies so run side by side, on streams the
 * driver gives different copy engines: on the legacy stream, where they
 * all went before, a frame's 272 KB waited behind whatever another thread
 * had queued there first (a kernel's megabytes of input, in one process),
 * up to a millisecond on an H200 (bench/RESULTS.md, "Copies on lanes").
 * None made (a stream refused, a driver without asynchronous copies, or
 * COOP_CUDA_LANES=0): the legacy stream, synchronous, as before. */
static void make_lanes(struct cu_be *b) {
  const char *n = getenv("COOP_CUDA_LANES"); /* a benchmark's knob: 0 to CU_LANES */
  int want = n && *n >= '0' && *n <= '0' + CU_LANES && !n[1] ? *n - '0' : CU_LANES;
  if (!coop__cuda_io()) return;
  while (b->lanes < want &&
         coop__cu.cuStreamCreate(&b->lane[b->lanes], CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS)
    b->lanes++;
}

/* bytes between host and dev (to_dev: host -> dev) on the first free lane,
 * else lane 0 once free; synchronous. */
static CUresult lane_copy(struct cu_be *b, void *host, CUdeviceptr dev, size_t bytes, int to_dev) {
  if (!b->lanes)
    return to_dev ? coop__cu.cuMemcpyHtoD(dev, host, bytes)
                  : coop__cu.cuMemcpyDtoH(host, dev, bytes);
  int i = 0;
  while (i < b->lanes && pthread_mutex_trylock(&b->lane_mu[i])) i++;
  if (i == b->lanes) pthread_mutex_lock(&b->lane_mu[i = 0]);
  CUresult r = to_dev ? coop__cu.cuMemcpyHtoDAsync(dev, host, bytes, b->lane[i])
                      : coop__cu.cuMemcpyDtoHAsync(host, dev, bytes, b->lane[i]);
  CUresult w =
      coop__cu.cuStreamSynchronize(b->lane[i]); /* after a refusal too: nothing left on it */
  pthread_mutex_unlock(&b->lane_mu[i]);
  return r != CUDA_SUCCESS ? r : w;
}

static int cu_open(struct coop_rt *rt, const struct coop_rt_options *o) {
  struct cu_be *b = calloc(1, sizeof *b);
  if (!b) return COOP_ENOMEM;
  pthread_mutex_init(&b->stage_mu, NULL);
  for (int i = 0; i < CU_LANES; i++) pthread_mutex_init(&b->lane_mu[i], NULL);
  rt->be = b;
  const char *why = coop__cuda_driver(0);
  if (!why) why = coop__cuda_nvrtc();
  if (why) {
    coop__rt_msg(rt, "CUDA backend unavailable: %s", why);
    return COOP_ENODEV;
  }
  CUresult e = coop__cu.cuInit(0);
  if (e != CUDA_SUCCESS) {
    cu_fail(rt, e, "cuInit (is the NVIDIA driver loaded?)", __LINE__);
    return COOP_ENODEV;
  }
  int n = 0;
  CU_CHECK(rt, coop__cu.cuDeviceGetCount(&n));
  for (int i = 0; i < n; i++) {
    CUdevice d;
    CU_CHECK(rt, coop__cu.cuDeviceGet(&d, i));
    CU_CHECK(rt, coop__cu.cuDeviceGetName(rt->device_name, (int)sizeof rt->device_name, d));
    if (o->device_index >= 0 && o->device_index != i) continue;
    if (o->device && !strstr(rt->device_name, o->device)) continue;
    if (!coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) ||
        !coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)) {
      coop__rt_msg(rt,
                   "CUDA device '%s' cannot run the megakernel: it lacks unified addressing "
                   "or mapped host memory, through which the host and the running "
                   "megakernel communicate",
                   rt->device_name);
      return COOP_ENOSVM;
    }
    b->dev = d;
    b->cc_major = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    b->cc_minor = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    b->concurrent_managed = coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS);
    if (b->cc_major < 7) {
      coop__rt_msg(rt,
                   "CUDA device '%s' has compute capability %d.%d; the scoped atomics "
                   "of the megakernel need 7.0 or later",
                   rt->device_name, b->cc_major, b->cc_minor);
      return COOP_ENODEV;
    }
    rt->compute_units = (unsigned)coop__cuda_attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    if (o->cuda_context) {
      /* the caller's context (a green context's: fewer SMs) */
      b->ctx = (CUcontext)o->cuda_context;
      if (o->cuda_context_sms) rt->compute_units = o->cuda_context_sms;
    } else {
      CU_CHECK(rt, coop__cu.cuDevicePrimaryCtxRetain(&b->ctx, d));
      b->own_ctx = 1;
    }
    CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
    CU_CHECK(rt, coop__cu.cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING));
    make_lanes(b);
    return 0;
  }
  coop__rt_msg(rt, "no CUDA device matches device %s/%d (%d found)", o->device ? o->device : "*",
               o->device_index, n);
  return COOP_ENODEV;
}

static void *cu_alloc_shared(struct coop_rt *rt, size_t bytes) {
  struct cu_be *b = rt->be;
  void *p = NULL;
  if (coop__cu.cuCtxSetCurrent(b->ctx) != CUDA_SUCCESS ||
      coop__cu.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
          CUDA_SUCCESS)
    return NULL;
  memset(p, 0, bytes);
  return p; /* unified addressing: the same address on the device */
}

static void cu_free_shared(struct coop_rt *rt, void *p) {
  struct cu_be *b = rt->be;
  if (!p) return;
  coop__cu.cuCtxSetCurrent(b->ctx);
  coop__cu.cuMemFreeHost(p);
}

/* Where the arena's managed pages start (a benchmark's knob,
 * COOP_CUDA_ARENA; bench/RESULTS.md "Tails: the first tasks"): unset or
 * "host", where they are first touched; "device", prefetched to the
 * GPU; "advise", also preferred there and mapped by the CPU. Measured on
 * an H200: prefetching changes nothing (a page the host touches again
 * moves back), and "advise" makes every task that the host's check of its
 * output follows take ~0.5 ms. */
/* The managed pages [p, p + bytes) made on b's device by a prefetch on the
 * default stream, waited for where `wait` (only while no kernel runs: the
 * megakernel would hold the wait). */
static CUresult to_device(struct cu_be *b, CUdeviceptr p, size_t bytes, int wait) {
  CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = (int)b->dev};
  CUresult e = coop__cu.cuMemPrefetchAsync(p, bytes, dev, 0, NULL);
  return e == CUDA_SUCCESS && wait ? coop__cu.cuStreamSynchronize(NULL) : e;
}

static void arena_placement(struct cu_be *b, CUdeviceptr p, size_t bytes) {
  const char *how = getenv("COOP_CUDA_ARENA");
  if (!how || !strcmp(how, "host")) return;
  if (!strcmp(how, "advise")) {
    CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = (int)b->dev};
    CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    coop__cu.cuMemAdvise(p, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev);
    coop__cu.cuMemAdvise(p, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, cpu);
  }
  /* best effort: a failed prefetch leaves the pages to migrate on use */
  (void)to_device(b, p, bytes, 1);
}

static void *cu_alloc_arena(struct coop_rt *rt, size_t bytes) {
  struct cu_be *b = rt->be;
  if (!b->concurrent_managed) return cu_alloc_shared(rt, bytes); /* host memory: slow but right */
  CUdeviceptr p = 0;
  if (coop__cu.cuCtxSetCurrent(b->ctx) != CUDA_SUCCESS ||
      coop__cu.cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
    return NULL;
  /* Not zeroed here: every block is zeroed as it is handed out (arena.c),
   * and the host's memset of the whole arena was most of a launch, each
   * page a fault: 2.2 s of a kernel reload's swap with a 4 GiB arena on an
   * H200 (bench/RESULTS.md, "A kernel reload through a running bfs"). */
  arena_placement(b, p, bytes);
  return (void *)(uintptr_t)p;
}

/* A buffer the host reads after every task (a small result) kept in host
 * memory, the GPU reaching it over the bus: left to the driver, its page
 * moves to the host at each read and back at the next task's write, each
 * move a fault of hundreds of us, until the driver's thrashing heuristic
 * settles it where this puts it from the start (bench/RESULTS.md, "Tails:
 * the first tasks"). Advice only, no migration now: the host's zeroing
 * of the buffer, which follows, brings its pages home. */
static int cu_place_host(struct coop_rt *rt, void *p, size_t bytes, int on) {
  struct cu_be *b = rt->be;
  if (!b->concurrent_managed) return 0; /* the arena is pinned host memory already */
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)p;
  CUmemLocation dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = (int)b->dev};
  CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (on) {
    CU_CHECK(rt, coop__cu.cuMemAdvise(d, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu));
    CU_CHECK(rt, coop__cu.cuMemAdvise(d, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, dev));
  } else {
    CU_CHECK(rt, coop__cu.cuMemAdvise(d, bytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, cpu));
    CU_CHECK(rt, coop__cu.cuMemAdvise(d, bytes, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev));
  }
  return 0;
}

static void cu_free_arena(struct coop_rt *rt, void *p) {
  struct cu_be *b = rt->be;
  if (!p) return;
  if (!b->concurrent_managed) return cu_free_shared(rt, p);
  coop__cu.cuCtxSetCurrent(b->ctx);
  coop__cu.cuMemFree((CUdeviceptr)(uintptr_t)p);
}

/* The device zone (arena.c, "Two zones"): plain device memory, which the
 * copy engine fills faster than managed pages (bench/RESULTS.md, "Device
 * memory for the buffers the host only copies"). Allocated before the
 * launch and freed after the megakernel's end: cuMemFree waits for the
 * device. */
static void *cu_alloc_zone(struct coop_rt *rt, size_t bytes) {
  struct cu_be *b = rt->be;
  CUdeviceptr p = 0;
  if (coop__cu.cuCtxSetCurrent(b->ctx) != CUDA_SUCCESS ||
      coop__cu.cuMemAlloc(&p, bytes) != CUDA_SUCCESS)
    return NULL;
  return (void *)(uintptr_t)p;
}

static void cu_free_zone(struct coop_rt *rt, void *p) {
  struct cu_be *b = rt->be;
  coop__cu.cuCtxSetCurrent(b->ctx);
  coop__cu.cuMemFree((CUdeviceptr)(uintptr_t)p);
}

static int cu_alloc_dev(struct coop_rt *rt, size_t bytes) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (!b->devmem) CU_CHECK(rt, coop__cu.cuMemAlloc(&b->devmem, bytes)); /* else a relaunch: reuse */
  CU_CHECK(rt, coop__cu.cuMemsetD8(b->devmem, 0, bytes));
  return 0;
}

static int cu_write_dev(struct coop_rt *rt, size_t offset, const void *src, size_t bytes) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  CU_CHECK(rt, coop__cu.cuMemcpyHtoD(b->devmem + offset, src, bytes));
  return 0;
}

#define CU_STAGE_BYTES (COOP__ARENA_ONE_COPY + 2u * COOP__ARENA_GUARD)

/* A small arena copy through the page-locked stage, where its host side
 * is pageable memory (a block's footprint image, a guard's canaries, a
 * caller's few bytes): from pageable memory the driver stages the bytes
 * itself. 0 when done; 1 when the stage is busy or could not be had (the
 * caller copies directly), or a coop code. */
static int cu_copy_staged(struct coop_rt *rt, void *dst, const void *src, size_t bytes,
                          int to_arena) {
  struct cu_be *b = rt->be;
  if (b->stage_failed || pthread_mutex_trylock(&b->stage_mu)) return 1;
  if (!b->stage && coop__cu.cuMemHostAlloc(&b->stage, CU_STAGE_BYTES, 0) != CUDA_SUCCESS) {
    b->stage = NULL;
    b->stage_failed = 1;
    pthread_mutex_unlock(&b->stage_mu);
    return 1;
  }
  CUresult r;
  if (to_arena) {
    memcpy(b->stage, src, bytes);
    r = lane_copy(b, b->stage, (CUdeviceptr)(uintptr_t)dst, bytes, 1);
  } else {
    r = lane_copy(b, b->stage, (CUdeviceptr)(uintptr_t)src, bytes, 0);
    if (r == CUDA_SUCCESS) memcpy(dst, b->stage, bytes);
  }
  pthread_mutex_unlock(&b->stage_mu);
  CU_CHECK(rt, r);
  return 0;
}

/* An arena copy on a copy lane (lane_copy), a stream not ordered after
 * the megakernel's: it does not wait for the kernel, and
 * the copy engine moves the bytes where the host would take a page fault
 * per page of managed memory that lives on the GPU. */
static int cu_copy_arena(struct coop_rt *rt, void *dst, const void *src, size_t bytes,
                         int to_arena) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (bytes <= CU_STAGE_BYTES && cu_copy_staged(rt, dst, src, bytes, to_arena) == 0) return 0;
  if (to_arena)
    CU_CHECK(rt, lane_copy(b, (void *)src, (CUdeviceptr)(uintptr_t)dst, bytes, 1));
  else
    CU_CHECK(rt, lane_copy(b, dst, (CUdeviceptr)(uintptr_t)src, bytes, 0));
  return 0;
}

/* Arena to arena on the device (a checkpoint's snapshot of a suspended
 * task's buffers). A device-to-device copy returns before it is done, so
 * the legacy stream is synchronized: the copy is there when this returns,
 * and the megakernel's non-blocking stream is not waited for. */
static int cu_dup_arena(struct coop_rt *rt, void *dst, const void *src, size_t bytes) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  CU_CHECK(rt,
           coop__cu.cuMemcpyDtoD((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes));
  CU_CHECK(rt, coop__cu.cuStreamSynchronize(NULL));
  return 0;
}

/* A share (share.c): device memory another process maps by its IPC
 * handle. Plain device memory, not managed: managed memory has no handle.
 * Freeing either end waits for the device (coop_rt_share_free says when). */
static int cu_share_alloc(struct coop_rt *rt, size_t bytes, void **p, uint8_t ipc[64]) {
  struct cu_be *b = rt->be;
  CUdeviceptr d = 0;
  CUipcMemHandle h;
  _Static_assert(sizeof h == 64, "CUipcMemHandle is CU_IPC_HANDLE_SIZE bytes");
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (coop__cu.cuMemAlloc(&d, bytes) != CUDA_SUCCESS) return COOP_ENOMEM;
  if (coop__cu.cuIpcGetMemHandle(&h, d) != CUDA_SUCCESS) {
    coop__cu.cuMemFree(d);
    coop__rt_msg(rt, "cuIpcGetMemHandle failed: no shared device memory here");
    return COOP_EPERM;
  }
  memcpy(ipc, &h, sizeof h);
  *p = (void *)(uintptr_t)d;
  return 0;
}

static int cu_share_open(struct coop_rt *rt, const uint8_t ipc[64], void **p) {
  struct cu_be *b = rt->be;
  CUdeviceptr d = 0;
  CUipcMemHandle h;
  memcpy(&h, ipc, sizeof h);
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (coop__cu.cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
    return COOP_EPERM;
  *p = (void *)(uintptr_t)d;
  return 0;
}

static void cu_share_release(struct coop_rt *rt, void *p, int opened) {
  struct cu_be *b = rt->be;
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)p;
  if (coop__cu.cuCtxSetCurrent(b->ctx) != CUDA_SUCCESS) return;
  if (opened)
    coop__cu.cuIpcCloseMemHandle(d);
  else
    coop__cu.cuMemFree(d);
}

/* Into the arena, the managed pages are first made on the device in one
 * go (a prefetch): a prepared arena has none yet, and the copy engine's
 * first touch made them a fault at a time (a reload's 250 MB of carried
 * buffers: about 15 ms). Out of it, a plain device-to-device copy. */
static int cu_share_copy(struct coop_rt *rt, void *dst, const void *src, size_t bytes,
                         int to_arena) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  /* best effort: without it the copy faults the pages in */
  if (to_arena && b->concurrent_managed) (void)to_device(b, (CUdeviceptr)(uintptr_t)dst, bytes, 0);
  return cu_dup_arena(rt, dst, src, bytes);
}

/* The managed pages made on the device before the megakernel starts (no
 * kernel runs: the default stream's wait is the prefetch's own). */
static int cu_warm_arena(struct coop_rt *rt, void *p, size_t bytes) {
  struct cu_be *b = rt->be;
  if (!b->concurrent_managed) return 0; /* host memory (cu_alloc_arena) */
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  CU_CHECK(rt, to_device(b, (CUdeviceptr)(uintptr_t)p, bytes, 1));
  return 0;
}

/* Page-locked host memory: the copy engine writes and reads it directly. */
static void *cu_alloc_host(struct coop_rt *rt, size_t bytes) {
  struct cu_be *b = rt->be;
  void *p = NULL;
  if (coop__cu.cuCtxSetCurrent(b->ctx) != CUDA_SUCCESS ||
      coop__cu.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
    return NULL;
  return p;
}

/* A copy engine's transfer of CU_WARM_BYTES, host to the arena's kind of
 * memory (managed), on a copy lane as cu_copy_arena's (lane 0 where one
 * thread copies, as in the device process). On an H200 a
 * 272 KB copy into managed memory took 65-75 us p50 when it was the first
 * in 16 ms, against 17-19 us back to back, whether or not the host's
 * thread had spun meanwhile and a kernel ran; a 64-byte copy 0 to 300 us
 * before it brought it to 20 us (bench/RESULTS.md, "A warm copy
 * engine"). The two small buffers are made at the first call. From a
 * caller's pages (`host`), the bytes go to device memory of the backend's
 * own (made at the first such call, kept to the close): the pages the
 * frame's copy will read are then the ones the engine last read. */
#define CU_WARM_BYTES 64
#define CU_WARM_FROM_MAX (1u << 20)
static int cu_copy_warm_from(struct cu_be *b, struct coop_rt *rt, const void *host, size_t bytes) {
  if (!b->warm_far && coop__cu.cuMemAlloc(&b->warm_far, CU_WARM_FROM_MAX) != CUDA_SUCCESS) {
    b->warm_far = 0;
    b->far_failed = 1;
    return 1;
  }
  size_t n = bytes < CU_WARM_FROM_MAX ? bytes : CU_WARM_FROM_MAX;
  CU_CHECK(rt, lane_copy(b, (void *)host, b->warm_far, n, 1));
  return 0;
}

static int cu_copy_warm(struct coop_rt *rt, const void *host, size_t bytes) {
  struct cu_be *b = rt->be;
  if (b->warm_failed) return COOP_EINVAL;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  if (host && bytes && !b->far_failed) {
    int r = cu_copy_warm_from(b, rt, host, bytes);
    if (r != 1) return r; /* else the plain warm-up */
  }
  if (!b->warm_src) {
    void *src = NULL;
    CUdeviceptr dst = 0;
    CUresult e = coop__cu.cuMemHostAlloc(&src, 4096, CU_MEMHOSTALLOC_PORTABLE);
    if (e == CUDA_SUCCESS)
      e = b->concurrent_managed ? coop__cu.cuMemAllocManaged(&dst, 4096, CU_MEM_ATTACH_GLOBAL)
                                : coop__cu.cuMemAlloc(&dst, 4096);
    if (e != CUDA_SUCCESS) {
      if (src) coop__cu.cuMemFreeHost(src);
      b->warm_failed = 1; /* not tried again every 100 us */
      return cu_fail(rt, e, "allocating the copy warm-up's buffers", __LINE__);
    }
    memset(src, 0, 4096);
    if (b->concurrent_managed) (void)to_device(b, dst, 4096, 0); /* where the arena's pages are */
    b->warm_src = src;
    b->warm_dst = dst;
  }
  CU_CHECK(rt, lane_copy(b, b->warm_src, b->warm_dst, CU_WARM_BYTES, 1));
  return 0;
}

/* Host memory page-locked in place (cuMemHostRegister): the copy engine
 * then reads and writes it directly, as the runtime's own pinned memory. */
static int cu_host_register(struct coop_rt *rt, void *p, size_t bytes) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  CU_CHECK(rt, coop__cu.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE));
  return 0;
}

static void cu_host_unregister(struct coop_rt *rt, void *p) {
  struct cu_be *b = rt->be;
  if (coop__cu.cuCtxSetCurrent(b->ctx) == CUDA_SUCCESS) coop__cu.cuMemHostUnregister(p);
}

/* A snapshot of device memory while the megakernel runs, for coop_rt_dump.
 * The synchronous copy goes on the legacy stream, which is not ordered
 * after the megakernel's non-blocking stream, so it does not wait for the
 * kernel to end. Racy by nature: diagnostics only. */
static int cu_read_dev(struct coop_rt *rt, void *dst, size_t bytes) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  CU_CHECK(rt, coop__cu.cuMemcpyDtoH(dst, b->devmem, bytes));
  return 0;
}

/* ptxas's report of coop_megakernel (--ptxas-options=--verbose), read
 * from the compiler log: registers, static shared memory, the stack frame
 * (local memory per thread, spills included) and the spill stores. The
 * width of a build that is never loaded comes from here: loading it
 * (cuModuleLoadData) would wait for a running megakernel (cu_load). A
 * figure the log does not give stays -1. */
static void ptxas_figures(const char *log, struct coop_rt_width *w) {
  w->regs = w->shared_bytes = w->local_bytes = w->spill_bytes = -1;
  const char *p = log ? strstr(log, "Function properties for coop_megakernel\n") : NULL;
  if (!p) return;
  p = strchr(p, '\n') + 1;
  int frame, spill;
  const char *f = strstr(p, "bytes stack frame");
  if (f && sscanf(p, "ptxas . %d bytes stack frame, %d bytes spill stores", &frame, &spill) == 2)
    w->local_bytes = frame, w->spill_bytes = spill;
  const char *u = strstr(p, "Used ");
  if (u && sscanf(u, "Used %d registers", &w->regs) != 1) w->regs = -1;
  const char *eol = u ? strchr(u, '\n') : NULL, *sm = u ? strstr(u, " bytes smem") : NULL;
  if (sm && (!eol || sm < eol)) {
    const char *d = sm;
    while (d > u && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d < sm) w->shared_bytes = atoi(d);
  }
}

/* NVRTC on src with the backend's options and a register cap of cap (0:
 * none): the cubin (malloc'ed) unless cubin is NULL, and ptxas's figures.
 * On failure the first lines of the log in err. */
static int cu_compile_cap(struct coop_rt *rt, const char *src, unsigned cap, char **cubin,
                          struct coop_rt_width *w, char *err, size_t errlen) {
  struct cu_be *b = rt->be;
  nvrtcProgram prog;
  if (coop__cu.nvrtcCreateProgram(&prog, src, "coop_megakernel.cu", 0, NULL, NULL) !=
      NVRTC_SUCCESS) {
    snprintf(err, errlen, "nvrtcCreateProgram failed");
    return COOP_ENOMEM;
  }
  char arch[48], regs[40];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", b->cc_major, b->cc_minor);
  snprintf(regs, sizeof regs, "--maxrregcount=%u", cap);
  const char *opts[8] = {arch, "--std=c++17", "-default-device", "--extra-device-vectorization"};
  int n = 4;
  if (cap) opts[n++] = regs;
  int verbose = !b->no_verbose;
  if (verbose) opts[n++] = "--ptxas-options=--verbose";
  nvrtcResult r = coop__cu.nvrtcCompileProgram(prog, n, opts);
  if (r == NVRTC_ERROR_INVALID_OPTION && verbose) {
    /* an NVRTC without --ptxas-options: figures only from a loaded module */
    b->no_verbose = 1;
    verbose = 0;
    coop__cu.nvrtcDestroyProgram(&prog);
    if (coop__cu.nvrtcCreateProgram(&prog, src, "coop_megakernel.cu", 0, NULL, NULL) !=
        NVRTC_SUCCESS) {
      snprintf(err, errlen, "nvrtcCreateProgram failed");
      return COOP_ENOMEM;
    }
    r = coop__cu.nvrtcCompileProgram(prog, n - 1, opts);
  }
  char *log = coop__nvrtc_log(prog);
  if (r != NVRTC_SUCCESS) {
    snprintf(err, errlen, "megakernel build failed (%s). Compiler log:\n%s",
             coop__cu.nvrtcGetErrorString(r), log ? log : "(unavailable)");
    free(log);
    coop__cu.nvrtcDestroyProgram(&prog);
    return COOP_EBUILD;
  }
  ptxas_figures(verbose ? log : NULL, w);
  free(log);
  /* No figures in the log: NVRTC served the program from its cache
   * without running ptxas (seen on the H200: every build after a first
   * identical one), and then they come from the cubin itself. Without
   * them a build made under the cap was taken (80 registers, 3 blocks an
   * SM) where the uncapped one fitted 5. */
  char *bin = NULL;
  size_t sz = 0;
  if (cubin || w->regs < 0) {
    coop__cu.nvrtcGetCUBINSize(prog, &sz);
    bin = malloc(sz ? sz : 1);
    if (!bin) {
      coop__cu.nvrtcDestroyProgram(&prog);
      snprintf(err, errlen, "out of memory");
      return COOP_ENOMEM;
    }
    coop__cu.nvrtcGetCUBIN(prog, bin);
  }
  coop__cu.nvrtcDestroyProgram(&prog);
  struct coop__cubin_figures f;
  if (w->regs < 0 && coop__cubin_figures(bin, sz, "coop_megakernel", &f) == 0) {
    w->regs = f.regs;
    w->shared_bytes = f.shared_bytes;
    w->local_bytes = f.frame_bytes;
  }
  if (cubin)
    *cubin = bin;
  else
    free(bin);
  return 0;
}

/* One SM's limits from the device attributes. */
static void cu_sm(const struct cu_be *b, struct coop__sm *sm) {
  *sm = (struct coop__sm){
      .regfile =
          (unsigned)coop__cuda_attr(b->dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
      .threads =
          (unsigned)coop__cuda_attr(b->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
      .blocks =
          (unsigned)coop__cuda_attr(b->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
      .shared = (unsigned)coop__cuda_attr(b->dev,
                                          CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
      .block_sys = b->cc_major >= 8 ? 1024u : 0u,
      .parts = 4u}; /* from sm_70 on (older devices are refused at open) */
}

/* src compiled under the register cap rt->max_registers, which is an upper
 * bound only: given --maxrregcount=N, ptxas spends up to N registers even
 * on code that needs fewer without it (on an H200 at a cap of 80, render
 * alone took 72 registers instead of 40, and fitted 3 blocks an SM instead
 * of 6). So the build without a cap is kept where it fits under the cap,
 * and the capped build is made only where it does not (or where ptxas gave
 * no figures to tell). */
static int cu_compile_capped(struct coop_rt *rt, const char *src, char **cubin,
                             struct coop_rt_width *w, char *err, size_t errlen) {
  unsigned cap = rt->max_registers;
  struct cu_be *b = rt->be;
  if (!cap || b->no_verbose) /* no cap, or no figures to compare with it */
    return cu_compile_cap(rt, src, cap, cubin, w, err, errlen);
  int r = cu_compile_cap(rt, src, 0, cubin, w, err, errlen);
  if (r || (w->regs >= 0 && (unsigned)w->regs <= cap)) return r;
  if (cubin) {
    free(*cubin);
    *cubin = NULL;
  }
  return cu_compile_cap(rt, src, cap, cubin, w, err, errlen);
}

/* The workgroups a build of w's registers and shared memory launches on
 * this device, at most COOP_MAX_WG. */
static unsigned cu_width_of(const struct coop_rt *rt, const struct coop__sm *sm,
                            const struct coop_rt_width *w) {
  struct coop__occ o;
  coop__occupancy(sm, rt->local_size, w->regs, w->shared_bytes, &o);
  unsigned g = coop__launch_groups(&o, o.lim, rt->compute_units);
  return g < COOP_MAX_WG ? g : COOP_MAX_WG;
}

/* Where a lower register cap fits one more block an SM (with the room)
 * and so launches more workgroups, a build under it, kept only if ptxas
 * spilled nothing: ptxas, uncapped, spends registers it could do without.
 * Otherwise the build before stands (game's megakernel: 127 registers a
 * thread, 8 blocks of 64 threads an SM after the room's cap of 120; 10
 * fit at 96, where NVRTC 13.0 spills 32 B). */
static int cu_compile_more(struct coop_rt *rt, const char *src, const struct coop__sm *sm,
                           char **cubin, struct coop_rt_width *w, char *note, size_t notelen) {
  unsigned cap = coop__more_cap(sm, rt->local_size, w->regs, w->shared_bytes);
  if (note) note[0] = '\0';
  if (!cap) return 0;
  struct coop_rt_width m = *w;
  char *mcubin = NULL, err[256];
  int r = cu_compile_cap(rt, src, cap, cubin ? &mcubin : NULL, &m, err, sizeof err);
  /* no spill: as ptxas said, or where NVRTC's cache gave no log, a stack
   * frame (spills included) no larger than the build before's */
  int spilled =
      m.spill_bytes < 0 ? m.local_bytes < 0 || m.local_bytes > w->local_bytes : m.spill_bytes != 0;
  unsigned before = cu_width_of(rt, sm, w), after = r || m.regs <= 0 ? 0 : cu_width_of(rt, sm, &m);
  if (r || spilled || after <= before) {
    /* a failed try costs nothing: the build before stands (the launch
     * line says why, so that a narrower launch than expected is explained) */
    if (note && (r || m.regs <= 0))
      snprintf(note, notelen, "not under %u registers: that build failed", cap);
    else if (note && spilled && m.spill_bytes >= 0)
      snprintf(note, notelen, "not under %u registers: %d B spilled", cap, m.spill_bytes);
    else if (note && spilled)
      snprintf(note, notelen, "not under %u registers: stack frame %d B against %d", cap,
               m.local_bytes, w->local_bytes);
    else if (note)
      snprintf(note, notelen, "not under %u registers: no wider (%u workgroups)", cap, after);
    free(mcubin);
    return 0;
  }
  if (note)
    snprintf(note, notelen, "built under %u registers (%d before): %u workgroups, not %u", cap,
             w->regs, after, before);
  if (cubin) {
    free(*cubin);
    *cubin = mcubin;
  }
  *w = m;
  return 0;
}

/* As cu_compile_capped, and where its blocks would take every register of
 * an SM, made again under the cap that keeps as many blocks an SM and
 * leaves the driver's kernels their room on each (occupancy.c: a copy
 * into the arena never returned without it); then, where a cap without
 * spills launches more workgroups, under that one (cu_compile_more). */
static int cu_compile(struct coop_rt *rt, const char *src, char **cubin, struct coop_rt_width *w,
                      char *note, size_t notelen, char *err, size_t errlen) {
  int r = cu_compile_capped(rt, src, cubin, w, err, errlen);
  if (r || w->regs <= 0 || w->shared_bytes < 0) return r;
  struct coop__sm sm;
  cu_sm(rt->be, &sm);
  unsigned room = coop__room_cap(&sm, rt->local_size, w->regs, w->shared_bytes);
  if (room) {
    if (cubin) {
      free(*cubin);
      *cubin = NULL;
    }
    r = cu_compile_cap(rt, src, room, cubin, w, err, errlen);
    if (r || w->regs <= 0 || w->shared_bytes < 0) return r;
  }
  return cu_compile_more(rt, src, &sm, cubin, w, note, notelen);
}

static int cu_build(struct coop_rt *rt, const char *src, const char *options) {
  struct cu_be *b = rt->be;
  (void)options; /* OpenCL's; NVRTC gets its own */
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  char *cubin = NULL;
  int r = cu_compile(rt, src, &cubin, &b->built, b->cap_note, sizeof b->cap_note, rt->msg,
                     sizeof rt->msg);
  if (r) return r;
  free(b->cubin);
  b->cubin = cubin;
  return 0;
}

/* backend.h, rebuilding in place: the next cubin and what ptxas said of
 * it, compiled while the megakernel runs; swapped in while it is parked,
 * when unloading the old module waits for nothing. */
struct cu_next {
  char *cubin;
  struct coop_rt_width built;
  char cap_note[128];
};

static int cu_build_next(struct coop_rt *rt, const char *src, void **next, char *err,
                         size_t errlen) {
  struct cu_next *n = calloc(1, sizeof *n);
  if (!n) {
    snprintf(err, errlen, "out of memory");
    return COOP_ENOMEM;
  }
  int r = cu_compile(rt, src, &n->cubin, &n->built, n->cap_note, sizeof n->cap_note, err, errlen);
  if (r) {
    free(n);
    return r;
  }
  *next = n;
  return 0;
}

static void cu_free_next(struct coop_rt *rt, void *next) {
  (void)rt;
  struct cu_next *n = next;
  if (n) free(n->cubin);
  free(n);
}

static void cu_swap_next(struct coop_rt *rt, void *next) {
  struct cu_be *b = rt->be;
  struct cu_next *n = next;
  if (b->module && coop__cu.cuCtxSetCurrent(b->ctx) == CUDA_SUCCESS)
    coop__cu.cuModuleUnload(b->module);
  b->module = NULL;
  b->fn = NULL;
  free(b->cubin);
  b->cubin = n->cubin; /* loaded at the next launch (cu_load) */
  b->built = n->built;
  memcpy(b->cap_note, n->cap_note, sizeof b->cap_note);
  free(n);
}

/* The module is loaded at launch, not at build: cuModuleLoadData waits for
 * the device's work to drain, holding the context's lock, and coopd builds
 * a reloaded kernel set while the old megakernel, which never drains until
 * told to, still runs (SIGHUP). Seen on the H100: the reload hung. */
static int cu_load(struct coop_rt *rt) {
  struct cu_be *b = rt->be;
  if (b->module) return 0;
  if (!b->cubin) {
    coop__rt_msg(rt, "megakernel not built");
    return COOP_ESTATE;
  }
  CUresult e = coop__cu.cuModuleLoadData(&b->module, b->cubin);
  free(b->cubin);
  b->cubin = NULL;
  if (e != CUDA_SUCCESS) return cu_fail(rt, e, "cuModuleLoadData", __LINE__);
  CU_CHECK(rt, coop__cu.cuModuleGetFunction(&b->fn, b->module, "coop_megakernel"));
  return 0;
}

/* The occupancy of a block of local_size threads at regs registers and
 * smem bytes of static shared memory on one SM (occupancy.c). */
static void cu_limits(const struct cu_be *b, unsigned local_size, int regs, int smem,
                      struct coop__occ *l) {
  struct coop__sm sm;
  cu_sm(b, &sm);
  coop__occupancy(&sm, local_size, regs, smem, l);
}

/* The occupancy API's bound for the merged megakernel, and which resource
 * sets it (cu_limits). Registers grow with every kernel coopd loads: the
 * merged kernel is as heavy as its heaviest member (coop_rt_kernel_width
 * says which). */
static int cu_occupancy(struct coop_rt *rt, unsigned local_size, unsigned *groups, char *why,
                        size_t len) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  int r = cu_load(rt);
  if (r) return r;
  int per_sm = 0, regs = 0, smem = 0;
  CU_CHECK(
      rt, coop__cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, b->fn, (int)local_size, 0));
  coop__cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, b->fn);
  coop__cu.cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, b->fn);
  struct coop__occ l;
  cu_limits(b, local_size, regs, smem, &l);
  *groups = coop__launch_groups(&l, (unsigned)per_sm, rt->compute_units);
  char less[64] = "";
  if (*groups < (unsigned)per_sm * rt->compute_units)
    snprintf(less, sizeof less, " less %u (room for the driver's kernels)",
             (unsigned)per_sm * rt->compute_units - *groups);
  snprintf(why, len,
           "%d per SM x %u SMs%s, bound by %s; %d registers/thread allow %u, %d B shared/block "
           "allow %u, threads allow %u, blocks %u%s%s",
           per_sm, rt->compute_units, less,
           (unsigned)per_sm == l.lim ? l.bound : "the occupancy API", regs, l.regs, smem, l.smem,
           l.threads, l.blocks, b->cap_note[0] ? "; " : "", b->cap_note);
  return 0;
}

/* The width of the built megakernel (src NULL) or of src built on the side
 * (backend.h). Once the megakernel is loaded its figures are the driver's
 * (CU_FUNC_ATTRIBUTE_*, cuOccupancyMaxActiveBlocksPerMultiprocessor);
 * before, and for every lone build, ptxas's (ptxas_figures) with the
 * occupancy worked out by cu_limits: nothing is loaded, so a reload's
 * build and coopd --check-config beside a running megakernel never wait
 * for it. */
static int cu_width(struct coop_rt *rt, const char *src, struct coop_rt_width *w) {
  struct cu_be *b = rt->be;
  if (src) {
    char err[160];
    int r = cu_compile(rt, src, NULL, w, NULL, 0, err, sizeof err);
    if (r == COOP_ENOMEM) return r;
    if (r) {
      err[strcspn(err, "\n")] = '\0';
      snprintf(w->note, sizeof w->note, "%.120s", err);
      return 0;
    }
  } else if (b->fn) {
    int per_sm = 0;
    coop__cu.cuCtxSetCurrent(b->ctx);
    coop__cu.cuFuncGetAttribute(&w->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, b->fn);
    coop__cu.cuFuncGetAttribute(&w->shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, b->fn);
    coop__cu.cuFuncGetAttribute(&w->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, b->fn);
    w->spill_bytes = b->built.spill_bytes;
    if (coop__cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, b->fn, (int)rt->local_size,
                                                             0) != CUDA_SUCCESS)
      per_sm = -1;
    struct coop__occ l;
    cu_limits(b, rt->local_size, w->regs, w->shared_bytes, &l);
    w->measured = 1;
    w->per_cu = per_sm;
    w->groups = per_sm < 0 ? -1 : (int)coop__launch_groups(&l, (unsigned)per_sm, rt->compute_units);
    snprintf(w->bound, sizeof w->bound, "%s",
             per_sm >= 0 && (unsigned)per_sm == l.lim ? l.bound : "");
    return 0;
  } else {
    struct coop_rt_width keep = *w;
    *w = b->built;
    memcpy(w->name, keep.name, sizeof w->name);
    w->max_local_size = -1;
  }
  if (w->regs < 0 || w->shared_bytes < 0) {
    snprintf(w->note, sizeof w->note, "%s",
             b->no_verbose ? "this NVRTC gives no ptxas figures (--ptxas-options)"
                           : "ptxas's report not found in the compiler log");
    w->measured = 0;
    return 0;
  }
  struct coop__occ l;
  cu_limits(b, rt->local_size, w->regs, w->shared_bytes, &l);
  w->measured = 1;
  w->note[0] = '\0';
  w->per_cu = (int)l.lim;
  w->groups = (int)coop__launch_groups(&l, l.lim, rt->compute_units);
  snprintf(w->bound, sizeof w->bound, "%s", l.bound);
  return 0;
}

static int cu_launch(struct coop_rt *rt, unsigned groups, unsigned local_size) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  int r = cu_load(rt);
  if (r) return r;
  CUdeviceptr mb = (CUdeviceptr)(uintptr_t)rt->mb, arena = (CUdeviceptr)(uintptr_t)rt->arena;
  void *params[] = {&mb, &b->devmem, &arena};
  CU_CHECK(rt, coop__cu.cuLaunchKernel(b->fn, groups, 1, 1, local_size, 1, 1, 0, b->stream, params,
                                       NULL));
  b->launched = 1;
  return 0;
}

static int cu_wait_exit(struct coop_rt *rt) {
  struct cu_be *b = rt->be;
  if (!b->launched) return 0;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  b->launched = 0;
  CU_CHECK(rt, coop__cu.cuStreamSynchronize(b->stream));
  return 0;
}

/* backend.h, queue_io and io_drain (cuda_io.c) */
static int cu_queue_io(struct coop_rt *rt, const struct coop__io_plan *p) {
  struct cu_be *b = rt->be;
  CU_CHECK(rt, coop__cu.cuCtxSetCurrent(b->ctx));
  return coop__cu_queue_io(rt, &b->io, p);
}

static void cu_io_drain(struct coop_rt *rt) {
  struct cu_be *b = rt->be;
  if (coop__cu.cuCtxSetCurrent(b->ctx) == CUDA_SUCCESS) coop__cu_io_drain(&b->io, 0);
}

static void cu_close(struct coop_rt *rt) {
  struct cu_be *b = rt->be;
  if (!b) return;
  free(b->cubin);
  if (b->ctx) {
    coop__cu.cuCtxSetCurrent(b->ctx);
    coop__cu_io_drain(&b->io, 1);
    if (b->module) coop__cu.cuModuleUnload(b->module);
    if (b->devmem) coop__cu.cuMemFree(b->devmem);
    if (b->warm_dst) coop__cu.cuMemFree(b->warm_dst);
    if (b->warm_far) coop__cu.cuMemFree(b->warm_far);
    if (b->warm_src) coop__cu.cuMemFreeHost(b->warm_src);
    if (b->stage) coop__cu.cuMemFreeHost(b->stage);
    if (b->stream) coop__cu.cuStreamDestroy(b->stream);
    for (int i = 0; i < b->lanes; i++) coop__cu.cuStreamDestroy(b->lane[i]);
    if (b->own_ctx) coop__cu.cuDevicePrimaryCtxRelease(b->dev);
  }
  pthread_mutex_destroy(&b->stage_mu);
  for (int i = 0; i < CU_LANES; i++) pthread_mutex_destroy(&b->lane_mu[i]);
  free(b);
  rt->be = NULL;
}

const struct coop__backend_ops coop__cuda_ops = {
    .name = "cuda",
    .default_local_size = 256,
    .clock_ns_per_tick = 1.0, /* %globaltimer counts ns (dialect.h) */
    .open = cu_open,
    .alloc_shared = cu_alloc_shared,
    .free_shared = cu_free_shared,
    .alloc_arena = cu_alloc_arena,
    .copy_arena = cu_copy_arena,
    .dup_arena = cu_dup_arena,
    .share_alloc = cu_share_alloc,
    .share_open = cu_share_open,
    .share_release = cu_share_release,
    .share_copy = cu_share_copy,
    .place_host = cu_place_host,
    .warm_arena = cu_warm_arena,
    .alloc_host = cu_alloc_host,
    .free_host = cu_free_shared, /* cuMemFreeHost, as for the mailbox */
    .copy_warm = cu_copy_warm,
    .queue_io = cu_queue_io,
    .io_drain = cu_io_drain,
    .host_register = cu_host_register,
    .host_unregister = cu_host_unregister,
    .free_arena = cu_free_arena,
    .alloc_zone = cu_alloc_zone,
    .free_zone = cu_free_zone,
    .alloc_dev = cu_alloc_dev,
    .write_dev = cu_write_dev,
    .read_dev = cu_read_dev,
    .build = cu_build,
    .build_next = cu_build_next,
    .swap_next = cu_swap_next,
    .free_next = cu_free_next,
    .occupancy = cu_occupancy,
    .width = cu_width,
    .launch = cu_launch,
    .wait_exit = cu_wait_exit,
    .close = cu_close,
};
