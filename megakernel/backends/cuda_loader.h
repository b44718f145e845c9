/*
 * cuda_loader.h: the CUDA driver (libcuda.so.1) and NVRTC, opened with
 * dlopen at first use and resolved by name into one table, coop__cu. The
 * CUDA backend (cuda.c) and the CUDA benchmarks (bench/native_cuda.c,
 * bench/side_cuda.c) all call the driver and NVRTC through it.
 *
 * Why dlopen rather than linking: a build with the toolkit must still run,
 * and pass every other test, on a machine without an NVIDIA driver (CI),
 * and NVRTC's soname changes with each toolkit. The toolkit's headers give
 * the prototypes. COOP_NVRTC names the NVRTC library to try first.
 */
#ifndef COOP_CUDA_LOADER_H
#define COOP_CUDA_LOADER_H

#include <cuda.h>
#include <nvrtc.h>

/* The entry points, resolved by name: cuda.h maps some names to versioned
 * symbols (cuMemAlloc -> cuMemAlloc_v2), which the macro expansion in both
 * the member names and the dlsym strings follows. COOP__CU_FNS: what the
 * runtime calls, so a driver without one of them cannot run coop;
 * COOP__CU_BENCH_FNS: what only the benchmarks call (events, cooperative
 * launches, stream priorities), required only by coop__cuda_driver(1);
 * COOP__CU_IO_FNS: what the runtime uses where the driver has it, and the
 * benchmarks require. */
// clang-format off
#define COOP__CU_FNS(X) \
  X(cuInit) \
  X(cuDeviceGetCount) \
  X(cuDeviceGet) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuMemHostAlloc) \
  X(cuMemFreeHost) \
  X(cuMemHostRegister) \
  X(cuMemHostUnregister) \
  X(cuMemAllocManaged) \
  X(cuMemPrefetchAsync) \
  X(cuMemAdvise) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemsetD8) \
  X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) \
  X(cuMemcpyDtoD) \
  X(cuIpcGetMemHandle) \
  X(cuIpcOpenMemHandle) \
  X(cuIpcCloseMemHandle) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuFuncGetAttribute) \
  X(cuLaunchKernel) \
  X(cuGetErrorString)
#define COOP__CU_BENCH_FNS(X) \
  X(cuDriverGetVersion) \
  X(cuCtxGetStreamPriorityRange) \
  X(cuStreamCreateWithPriority) \
  X(cuStreamGetPriority) \
  X(cuStreamQuery) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventElapsedTime) \
  X(cuMemsetD32Async) \
  X(cuFuncSetAttribute) \
  X(cuLaunchCooperativeKernel)
#define COOP__CU_IO_FNS(X) \
  X(cuMemcpyDtoHAsync) \
  X(cuMemcpyHtoDAsync) \
  X(cuStreamWriteValue32) \
  X(cuStreamWaitValue32) \
  X(cuPointerGetAttribute)
#define COOP__NVRTC_FNS(X) \
  X(nvrtcCreateProgram) \
  X(nvrtcCompileProgram) \
  X(nvrtcGetProgramLogSize) \
  X(nvrtcGetProgramLog) \
  X(nvrtcGetCUBINSize) \
  X(nvrtcGetCUBIN) \
  X(nvrtcDestroyProgram) \
  X(nvrtcGetErrorString)
// clang-format on
#define COOP__CU_MEMBER(f) __typeof__(&f) f;

struct coop__cuda_api {
  COOP__CU_FNS(COOP__CU_MEMBER)
  COOP__CU_BENCH_FNS(COOP__CU_MEMBER)
  COOP__CU_IO_FNS(COOP__CU_MEMBER)
  COOP__NVRTC_FNS(COOP__CU_MEMBER)
};
extern struct coop__cuda_api coop__cu;

/* Opens the driver (once, from any thread). Returns NULL when every entry
 * point the runtime calls is there (with bench, the benchmarks' too),
 * else why not. */
const char *coop__cuda_driver(int bench);
/* After coop__cuda_driver: 1 when the driver has every entry point of
 * COOP__CU_IO_FNS (asynchronous copies, stream memory operations: the
 * copies ordered with a task, cuda_io.c; the benchmarks' streams), else 0. */
int coop__cuda_io(void);
/* Opens NVRTC (once, from any thread): COOP_NVRTC, then the sonames of
 * recent toolkits. Returns NULL, or why not. */
const char *coop__cuda_nvrtc(void);

/* A device attribute, 0 if the driver cannot tell. */
int coop__cuda_attr(CUdevice d, CUdevice_attribute a);
/* The compiler log of prog, NUL-terminated (malloc'ed; NULL if out of
 * memory): what each NVRTC user prints when a build fails. */
char *coop__nvrtc_log(nvrtcProgram prog);

#endif /* COOP_CUDA_LOADER_H */
