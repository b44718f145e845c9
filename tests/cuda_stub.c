/*
 * cuda_stub.c: a stand-in for the NVIDIA driver (built as libcuda.so.1 in
 * a folder of its own, found through LD_LIBRARY_PATH), so that the CUDA
 * backend's build path runs where there is no GPU: one device with an
 * H200's attributes (sm_90, 132 SMs, 64 Ki registers, 2048 threads and 32
 * blocks an SM), host memory for device memory, modules that load and
 * launches that fail. NVRTC, the real one, compiles. The last module
 * image loaded is kept for the test to read (coop_stub_last_image).
 *
 * NVRTC opens the driver too and asks its version; it gets 13.0 and no
 * export tables. Entry points whose outputs nothing here reads answer
 * CUDA_SUCCESS through one function (stub_ok) under each name.
 */
#include <cuda.h>
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STUB_STR(x) #x
#define STUB_XSTR(x) STUB_STR(x)

int stub_ok(void);
int stub_ok(void) { return CUDA_SUCCESS; }
/* NAME, as cuda.h spells it (cuMemFree -> cuMemFree_v2), an alias of stub_ok */
#define STUB_OK(f)                                                                      \
  __asm__(".globl " STUB_XSTR(f) "\n.type " STUB_XSTR(f) ",@function\n.set " STUB_XSTR( \
      f) ", stub_ok");
STUB_OK(cuDevicePrimaryCtxRelease)
STUB_OK(cuCtxSetCurrent)
STUB_OK(cuStreamDestroy)
STUB_OK(cuStreamSynchronize)
STUB_OK(cuMemFreeHost)
STUB_OK(cuMemHostRegister)
STUB_OK(cuMemHostUnregister)
STUB_OK(cuMemPrefetchAsync)
STUB_OK(cuMemAdvise)
STUB_OK(cuIpcGetMemHandle)
STUB_OK(cuIpcOpenMemHandle)
STUB_OK(cuIpcCloseMemHandle)
STUB_OK(cuModuleUnload)
STUB_OK(cuCtxGetStreamPriorityRange)
STUB_OK(cuStreamGetPriority)
STUB_OK(cuStreamQuery)
STUB_OK(cuEventDestroy)
STUB_OK(cuEventRecord)
STUB_OK(cuEventElapsedTime)
STUB_OK(cuMemsetD32Async)
STUB_OK(cuFuncSetAttribute)
STUB_OK(cuStreamWriteValue32)
STUB_OK(cuStreamWaitValue32)
STUB_OK(cuPointerGetAttribute)

CUresult cuInit(unsigned flags) {
  (void)flags;
  return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuGetExportTable(const void **t, const CUuuid *id) {
  (void)t, (void)id;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  (void)e;
  *s = "refused by the stub driver";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *d, int i) {
  *d = i;
  return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  strncpy(name, "stub H200", (size_t)len);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *v = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *v = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *v = 1;
      break;
    default:
      *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)(uintptr_t)0x1000;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)(uintptr_t)0x2000;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int prio) {
  (void)prio;
  return cuStreamCreate(s, flags);
}
CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)(uintptr_t)0x3000;
  return CUDA_SUCCESS;
}

/* memory: the host's, never freed (a test opens one runtime) */
static void *stub_alloc(size_t n) { return calloc(1, n ? n : 1); }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  *p = stub_alloc(n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
  (void)flags;
  *p = (CUdeviceptr)(uintptr_t)stub_alloc(n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) { return cuMemAllocManaged(p, n, 0); }
CUresult cuMemFree(CUdeviceptr p) {
  (void)p;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)p, v, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) {
  (void)st;
  return cuMemcpyHtoD(d, s, n);
}
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) {
  (void)st;
  return cuMemcpyDtoH(d, s, n);
}

/* modules: the image kept (its length from the ELF header: a cubin's
 * section headers come last), one function, no launch */
static void *last_image;
static size_t last_len;
const void *coop_stub_last_image(size_t *len);
const void *coop_stub_last_image(size_t *len) {
  *len = last_len;
  return last_image;
}
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  const Elf64_Ehdr *h = image;
  if (memcmp(h->e_ident, ELFMAG, SELFMAG)) return CUDA_ERROR_INVALID_IMAGE;
  size_t n = (size_t)h->e_shoff + (size_t)h->e_shnum * h->e_shentsize;
  free(last_image);
  last_image = malloc(n);
  if (!last_image) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(last_image, image, n);
  last_len = n;
  *m = (CUmodule)(uintptr_t)0x4000;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m, (void)name;
  *f = (CUfunction)(uintptr_t)0x5000;
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  (void)a, (void)f;
  *v = 0;
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int bs, size_t sm) {
  (void)f, (void)bs, (void)sm;
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **x) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)s, (void)p,
      (void)x;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned sh, CUstream s, void **p) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, NULL);
}
