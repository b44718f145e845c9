/*
 * dialect.h: the few constructs that differ between OpenCL C 3.0 and CUDA.
 *
 * Every device-side file of coop (runtime, barriers, applications) is written
 * once against these macros. This file is the only place that knows which
 * compiler is reading it. Host C code includes it too (through shared.h), so
 * that the structures shared with the device have one definition.
 *
 * Memory orders: every atomic names its order and scope explicitly.
 *   coop_*      device scope: communication between workgroups.
 *   coop_sys_*  system scope: communication with the host through SVM /
 *               mapped host memory. Only the scheduler workgroup uses these
 *               in spin loops (FACTS.md: polling host memory from every
 *               workgroup costs ~100x on a GPU).
 * PoCL lacks memory_scope_all_svm_devices; there the device scope is used,
 * which is correct on a CPU device (host and device are the same cores).
 */
#ifndef COOP_DIALECT_H
#define COOP_DIALECT_H

#if defined(__OPENCL_VERSION__)
/* ---------------------------------------------------------------- OpenCL C */
#define COOP_DEVICE 1
typedef uint coop_u32;
typedef int coop_i32;
typedef ulong coop_u64;
typedef long coop_i64;
typedef atomic_uint coop_atomic_u32;
#define COOP_GLOBAL global
#define COOP_LOCAL local       /* pointer qualifier */
#define COOP_SHARED_DECL local /* declaration of workgroup memory */
#define COOP_FN static inline
/* For code run by thread 0 alone, with spin loops and no barrier: kept out of
 * line so that PoCL's barrier-region analysis sees one call, not its CFG. */
#define COOP_FN0 static __attribute__((noinline))
#define COOP__CALLS_BY_VALUE 0
#define COOP_KERNEL_ENTRY kernel

#if defined(__opencl_c_atomic_scope_all_devices)
#define COOP__SYS_SCOPE memory_scope_all_svm_devices
#else
#define COOP__SYS_SCOPE memory_scope_device
#endif

#define coop_ld_acq(p) atomic_load_explicit((p), memory_order_acquire, memory_scope_device)
#define coop_ld_rlx(p) atomic_load_explicit((p), memory_order_relaxed, memory_scope_device)
#define coop_st_rel(p, v) atomic_store_explicit((p), (v), memory_order_release, memory_scope_device)
#define coop_st_rlx(p, v) atomic_store_explicit((p), (v), memory_order_relaxed, memory_scope_device)
/* Fences (device scope): relaxed loads then coop_fence_acq() acquire what
 * every one of them read; coop_fence_rel() then relaxed stores release to
 * each. One fence for many flags instead of one per flag. */
#define coop_fence_acq() \
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device)
#define COOP_FENCE_ACQ_LIGHT 0 /* the barrier acquires with a load (barrier.cl) */
#define coop_fence_rel() \
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device)
#define coop_fadd(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define coop_fsub(p, v) \
  atomic_fetch_sub_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define coop_fadd_rel(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_release, memory_scope_device)
#define coop_fadd_rlx(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_relaxed, memory_scope_device)
#define coop_xchg_acq(p, v) \
  atomic_exchange_explicit((p), (v), memory_order_acquire, memory_scope_device)
#define coop_cas(p, expp, v)                                                      \
  atomic_compare_exchange_strong_explicit((p), (expp), (v), memory_order_acq_rel, \
                                          memory_order_acquire, memory_scope_device)
/* relaxed: a count's guard that orders nothing (barrier.cl, a hold's
 * claim), in flight with the atomics after it */
#define coop_cas_rlx(p, expp, v)                                                  \
  atomic_compare_exchange_strong_explicit((p), (expp), (v), memory_order_relaxed, \
                                          memory_order_relaxed, memory_scope_device)
#define coop_fmin(p, v) \
  atomic_fetch_min_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define coop_fmax(p, v) \
  atomic_fetch_max_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define coop_fmin_rlx(p, v) \
  atomic_fetch_min_explicit((p), (v), memory_order_relaxed, memory_scope_device)
#define coop_for(p, v) atomic_fetch_or_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
#define coop_fand(p, v) \
  atomic_fetch_and_explicit((p), (v), memory_order_acq_rel, memory_scope_device)
/* Bit casts between coop_u32 and float (for CAS loops on floats). */
#define coop_u2f(u) as_float((coop_u32)(u))
#define coop_f2u(f) as_uint((float)(f))
/* Doubles are optional in OpenCL C 3.0 (the __opencl_c_fp64 feature) */
#if defined(__opencl_c_fp64) || defined(cl_khr_fp64)
#define COOP_HAS_F64 1
#define coop_u2d(u) as_double((coop_u64)(u))
#endif
#define coop_sys_ld_acq(p) atomic_load_explicit((p), memory_order_acquire, COOP__SYS_SCOPE)
/* Relaxed system-scope loads then one coop_sys_fence_acq(): an acquire
 * load holds back every later load until it is done, so host words read
 * each with acquire cost one bus round trip apiece. */
#define coop_sys_ld_rlx(p) atomic_load_explicit((p), memory_order_relaxed, COOP__SYS_SCOPE)
#define coop_sys_fence_acq() \
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, COOP__SYS_SCOPE)
/* Both ways: every earlier store reaches host memory before later ones */
#define coop_sys_fence_acq_rel() \
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acq_rel, COOP__SYS_SCOPE)
/* Four relaxed system-scope loads of p[0..3] (16-byte aligned) into o[]:
 * one vector load on CUDA (below), four here. */
#define coop_sys_ld4_rlx(p, o)         \
  do {                                 \
    (o)[0] = coop_sys_ld_rlx((p));     \
    (o)[1] = coop_sys_ld_rlx((p) + 1); \
    (o)[2] = coop_sys_ld_rlx((p) + 2); \
    (o)[3] = coop_sys_ld_rlx((p) + 3); \
  } while (0)
#define coop_sys_st_rel(p, v) atomic_store_explicit((p), (v), memory_order_release, COOP__SYS_SCOPE)
#define coop_sys_st_rlx(p, v) atomic_store_explicit((p), (v), memory_order_relaxed, COOP__SYS_SCOPE)
#define coop_sys_fadd(p, v) \
  atomic_fetch_add_explicit((p), (v), memory_order_acq_rel, COOP__SYS_SCOPE)

#define coop_local_id() ((coop_u32)get_local_id(0))
#define coop_local_size() ((coop_u32)get_local_size(0))
#define coop_hw_group_id() ((coop_u32)get_group_id(0))
#define coop_hw_num_groups() ((coop_u32)get_num_groups(0))
/* A workgroup barrier that also orders global memory within the workgroup:
 * it carries the acquire done by thread 0 to the other threads (hb is
 * transitive), which is how every handshake below broadcasts. */
#define coop_wg_barrier() barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)
/* A pause of about ns nanoseconds in a spin loop: nothing here, as OpenCL
 * C has no sleep; a PoCL workgroup is a CPU thread that the OS time-shares
 * with the others (FACTS.md). */
#define coop_nap(ns) ((void)0)

/* Device clock in ticks. On PoCL the kernel is x86 code and the cycle
 * counter is the invariant TSC, the same clock the host reads. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_readcyclecounter)
#define COOP_HAVE_CLOCK 1
#define coop_clock() ((coop_u64)__builtin_readcyclecounter())
#endif
#endif
#ifndef COOP_HAVE_CLOCK
#define COOP_HAVE_CLOCK 0
#define coop_clock() ((coop_u64)0)
#endif

#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
/* ------------------------------------------------------------------- CUDA */
#define COOP_DEVICE 1
typedef unsigned int coop_u32;
typedef int coop_i32;
typedef unsigned long long coop_u64;
typedef long long coop_i64;
typedef unsigned int coop_atomic_u32;
#define COOP_GLOBAL
#define COOP_LOCAL
#define COOP_SHARED_DECL __shared__
#define COOP_FN static __device__ inline
#define COOP_FN0 static __device__ __noinline__
/* The step loop's calls out of line take the context by value and the
 * state from workgroup memory (primitives.cl, "Calls out of line") */
#define COOP__CALLS_BY_VALUE 1
#define COOP_KERNEL_ENTRY extern "C" __global__

#define COOP__ORD_ACQ __ATOMIC_ACQUIRE
#define coop_ld_acq(p) __nv_atomic_load_n((p), __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE)
#define coop_ld_rlx(p) __nv_atomic_load_n((p), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)
#define coop_st_rel(p, v) \
  __nv_atomic_store_n((p), (v), __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE)
#define coop_st_rlx(p, v) \
  __nv_atomic_store_n((p), (v), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)
/* Fences as acq_rel, which is both: NVRTC lowers an acquire-only or a
 * release-only fence to fence.sc, the costlier sequentially consistent
 * one, and an acq_rel fence to fence.acq_rel, which is MEMBAR.ALL.GPU (a
 * wait for every store of the thread to reach L2) and the L1 invalidation
 * (CCTL.IVALL). From PTX 8.6 (CUDA 12.8) on sm_90, fence.acquire.gpu, in
 * inline PTX, is the acquire alone: the invalidation, no MEMBAR
 * (docs/scheduler.md section 6, "The acquire"); COOP_FENCE_ACQ_LIGHT says
 * so to the barrier, which then acquires with it instead of a load. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define COOP_FENCE_ACQ_LIGHT 1
#define coop_fence_acq() asm volatile("fence.acquire.gpu;" ::: "memory")
#else
#define COOP_FENCE_ACQ_LIGHT 0
#define coop_fence_acq() __nv_atomic_thread_fence(__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#endif
#define coop_fence_rel() __nv_atomic_thread_fence(__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_fadd(p, v) \
  __nv_atomic_fetch_add((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_fsub(p, v) \
  __nv_atomic_fetch_sub((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_fadd_rel(p, v) \
  __nv_atomic_fetch_add((p), (v), __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE)
#define coop_fadd_rlx(p, v) \
  __nv_atomic_fetch_add((p), (v), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)
#define coop_xchg_acq(p, v) \
  __nv_atomic_exchange_n((p), (v), __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE)
#define coop_cas(p, expp, v)                                                   \
  __nv_atomic_compare_exchange_n((p), (expp), (v), false, __NV_ATOMIC_ACQ_REL, \
                                 __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE)
#define coop_cas_rlx(p, expp, v)                                               \
  __nv_atomic_compare_exchange_n((p), (expp), (v), false, __NV_ATOMIC_RELAXED, \
                                 __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)
#define coop_fmin(p, v) \
  __nv_atomic_fetch_min((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_fmax(p, v) \
  __nv_atomic_fetch_max((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
/* relaxed, result unused: a reduction the thread does not wait for */
#define coop_fmin_rlx(p, v) \
  __nv_atomic_fetch_min((p), (v), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE)
#define coop_for(p, v) __nv_atomic_fetch_or((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_fand(p, v) \
  __nv_atomic_fetch_and((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE)
#define coop_u2f(u) __uint_as_float((coop_u32)(u))
#define coop_f2u(f) __float_as_uint((float)(f))
#define COOP_HAS_F64 1
#define coop_u2d(u) __longlong_as_double((long long)(u))
#define coop_sys_ld_acq(p) __nv_atomic_load_n((p), __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_SYSTEM)
#define coop_sys_ld_rlx(p) __nv_atomic_load_n((p), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_SYSTEM)
/* The light one where there is (above): fence.acq_rel.sys is
 * MEMBAR.ALL.SYS, which waits for the thread's stores to host memory */
#if COOP_FENCE_ACQ_LIGHT
#define coop_sys_fence_acq() asm volatile("fence.acquire.sys;" ::: "memory")
#else
#define coop_sys_fence_acq() __nv_atomic_thread_fence(__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_SYSTEM)
#endif
#define coop_sys_fence_acq_rel() \
  __nv_atomic_thread_fence(__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_SYSTEM)
#define coop_sys_st_rel(p, v) \
  __nv_atomic_store_n((p), (v), __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_SYSTEM)
#define coop_sys_fadd(p, v) \
  __nv_atomic_fetch_add((p), (v), __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_SYSTEM)
#define coop_sys_st_rlx(p, v) \
  __nv_atomic_store_n((p), (v), __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_SYSTEM)

/* One 16-byte load, each word a relaxed system-scope load (PTX gives each
 * element its own single-copy atomicity, nothing across them): the H100
 * serves a thread's loads of host memory about one at a time,
 * so four words cost one transaction, not four. */
COOP_FN void coop__sys_ld4(const coop_atomic_u32 *p, coop_u32 *o) {
  asm volatile("ld.relaxed.sys.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(o[0]), "=r"(o[1]), "=r"(o[2]), "=r"(o[3])
               : "l"(p)
               : "memory");
}
#define coop_sys_ld4_rlx(p, o) coop__sys_ld4((p), (o))

#define coop_local_id() ((coop_u32)threadIdx.x)
#define coop_local_size() ((coop_u32)blockDim.x)
#define coop_hw_group_id() ((coop_u32)blockIdx.x)
#define coop_hw_num_groups() ((coop_u32)gridDim.x)
#define coop_wg_barrier() __syncthreads()
/* Warps are scheduled independently, so threads of the scheduler's
 * workgroup past its first warp may spin on device memory while thread 0
 * runs the scheduler (scheduler.cl, "Helper warps"). Not so on PoCL, which
 * runs a workgroup's work-items one after the other between barriers. */
#define COOP_SCHED_HELPERS 1
#define coop_nap(ns) __nanosleep(ns)
/* The SM a workgroup runs on, for the spread order (discovery.cl). */
#define COOP_HAVE_SMID 1
COOP_FN coop_u32 coop_smid(void) {
  coop_u32 s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
/* The warp slot of the calling thread's warp on its SM: the sub-partition
 * (warp scheduler) that issues it is the slot modulo 4 (discovery.cl). */
COOP_FN coop_u32 coop_warp_slot(void) {
  coop_u32 w;
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
  return w;
}
#define COOP_HAVE_CLOCK 1
COOP_FN coop_u64 coop_clock(void) {
  coop_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

#else
/* ------------------------------------------------------------ host C11 */
#include <stdatomic.h>
#include <stdint.h>
typedef uint32_t coop_u32;
typedef int32_t coop_i32;
typedef uint64_t coop_u64;
typedef int64_t coop_i64;
typedef _Atomic uint32_t coop_atomic_u32;
#define COOP_FN static inline
#endif

/* How long a device spin naps between two looks (coop_nap; CUDA only):
 * idle workers, and workgroups waiting for discovery's spread order. It
 * bounds what a nap adds to gathered -> started; 0, 100 and 1000 ns
 * measured alike on the H100 (bench/HISTORY.md, "Spins that keep L1"). */
#ifndef COOP_IDLE_NAP_NS
#define COOP_IDLE_NAP_NS 100u
#endif

#endif /* COOP_DIALECT_H */
