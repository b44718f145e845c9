/*
 * opencl.c: the OpenCL backend. Needs OpenCL 2.0+ with fine-grained SVM
 * buffers and SVM atomics (PoCL, Intel, AMD): the host and the running
 * megakernel talk through atomics on SVM. NVIDIA's OpenCL has neither, so
 * such a device is refused with a message naming what lacks (FACTS.md).
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct cl_be {
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_command_queue queue;
  cl_program program;
  cl_kernel kernel;
  cl_mem dev;
  cl_event run;
};

#define CL_CHECK(rt, call)                                                                   \
  do {                                                                                       \
    cl_int e_ = (call);                                                                      \
    if (e_ != CL_SUCCESS) {                                                                  \
      coop__rt_msg((rt), "%s failed with OpenCL error %d (%s:%d)", #call, (int)e_, __func__, \
                   __LINE__);                                                                \
      return COOP_ECL;                                                                       \
    }                                                                                        \
  } while (0)

static void info_str(cl_device_id d, cl_device_info what, char *buf, size_t len) {
  buf[0] = 0;
  clGetDeviceInfo(d, what, len, buf, NULL);
  buf[len - 1] = 0;
}

/* Refuses a device lacking what the megakernel needs; says what and why. */
static int check_caps(struct coop_rt *rt, cl_device_id d, unsigned hide) {
  cl_device_svm_capabilities caps = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS)
    caps = 0;
  if (hide == 1) caps &= ~(cl_device_svm_capabilities)CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
  if (hide == 2) caps &= ~(cl_device_svm_capabilities)CL_DEVICE_SVM_ATOMICS;
  int fg = (caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
  int at = (caps & CL_DEVICE_SVM_ATOMICS) != 0;
  if (fg && at) return 0;
  coop__rt_msg(rt,
               "device '%s' cannot run the megakernel: it lacks %s%s%s. The host and the "
               "running megakernel communicate through atomics on fine-grained SVM. On NVIDIA "
               "GPUs use the CUDA backend; elsewhere pick a device that has them (PoCL does).",
               rt->device_name,
               fg ? "" : "fine-grained SVM buffers (CL_DEVICE_SVM_FINE_GRAIN_BUFFER)",
               (!fg && !at) ? " and " : "", at ? "" : "SVM atomics (CL_DEVICE_SVM_ATOMICS)");
  return COOP_ENOSVM;
}

static int pick_device(struct coop_rt *rt, struct cl_be *b, const struct coop_rt_options *o) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
    coop__rt_msg(rt, "no OpenCL platform found (is an ICD such as pocl-opencl-icd installed?)");
    return COOP_ENODEV;
  }
  for (cl_uint p = 0; p < np; p++) {
    char pname[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    if (o->platform_index >= 0 && (cl_uint)o->platform_index != p) continue;
    if (o->platform && !strstr(pname, o->platform)) continue;
    cl_device_id devs[16];
    cl_uint nd = 0;
    cl_device_type want =
        rt->cl_gpu_only ? (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) : CL_DEVICE_TYPE_ALL;
    if (clGetDeviceIDs(plats[p], want, 16, devs, &nd) != CL_SUCCESS) continue;
    for (cl_uint d = 0; d < nd; d++) {
      info_str(devs[d], CL_DEVICE_NAME, rt->device_name, sizeof rt->device_name);
      if (o->device_index >= 0 && (cl_uint)o->device_index != d) continue;
      if (o->device && !strstr(rt->device_name, o->device)) continue;
      b->platform = plats[p];
      b->device = devs[d];
      return 0;
    }
  }
  coop__rt_msg(rt, "no OpenCL device matches platform %s/%d, device %s/%d",
               o->platform ? o->platform : "*", o->platform_index, o->device ? o->device : "*",
               o->device_index);
  return COOP_ENODEV;
}

static int cl_open(struct coop_rt *rt, const struct coop_rt_options *o) {
  struct cl_be *b = calloc(1, sizeof *b);
  if (!b) return COOP_ENOMEM;
  rt->be = b;
  int r = pick_device(rt, b, o);
  if (r) return r;
  r = check_caps(rt, b->device, o->test_hide_svm);
  if (r) return r;
  cl_uint cu = 0;
  CL_CHECK(rt, clGetDeviceInfo(b->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL));
  rt->compute_units = cu;
  /* PoCL's CPU drivers run each workgroup to its end on one thread of a
   * compute unit: at most cu run at once (test_runtime.c,
   * discovery_finds_occupancy), so discovery need not wait out its window
   * once it has seen cu. Other OpenCL devices keep the window. */
  cl_device_type type = 0;
  char pname[256] = "";
  if (clGetDeviceInfo(b->device, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
      clGetPlatformInfo(b->platform, CL_PLATFORM_NAME, sizeof pname, pname, NULL) == CL_SUCCESS &&
      (type & CL_DEVICE_TYPE_CPU) && strstr(pname, "Portable Computing Language"))
    rt->co_resident_max = cu;
  cl_int e;
  b->ctx = clCreateContext(NULL, 1, &b->device, NULL, NULL, &e);
  CL_CHECK(rt, e);
  b->queue = clCreateCommandQueueWithProperties(b->ctx, b->device, NULL, &e);
  CL_CHECK(rt, e);
  return 0;
}

/* The arena: fine-grained SVM, as the mailbox (cl_alloc_shared), but not
 * zeroed here. Every
 * block is zeroed as it is handed out, or written whole (arena.c), and a
 * memset of the whole arena touched every page of it: 4.6 s of a launch
 * with a 4 GiB arena on two cores (bench/RESULTS.md, "A kernel reload's
 * carried buffers on the device"), as the CUDA backend once did. */
static void *cl_alloc_arena(struct coop_rt *rt, size_t bytes) {
  struct cl_be *b = rt->be;
  return clSVMAlloc(b->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS,
                    bytes, 0);
}

static void *cl_alloc_shared(struct coop_rt *rt, size_t bytes) {
  void *p = cl_alloc_arena(rt, bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

static void cl_free_shared(struct coop_rt *rt, void *p) {
  struct cl_be *b = rt->be;
  if (p) clSVMFree(b->ctx, p);
}

static int cl_alloc_dev(struct coop_rt *rt, size_t bytes) {
  struct cl_be *b = rt->be;
  cl_int e;
  if (!b->dev) { /* else a relaunch after parking: the same buffer, zeroed again */
    b->dev = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    CL_CHECK(rt, e);
  }
  cl_uchar zero = 0;
  CL_CHECK(rt, clEnqueueFillBuffer(b->queue, b->dev, &zero, 1, 0, bytes, 0, NULL, NULL));
  return 0;
}

/* Blocking, and after the fill above (in-order queue). */
static int cl_write_dev(struct coop_rt *rt, size_t offset, const void *src, size_t bytes) {
  struct cl_be *b = rt->be;
  CL_CHECK(rt, clEnqueueWriteBuffer(b->queue, b->dev, CL_TRUE, offset, bytes, src, 0, NULL, NULL));
  return 0;
}

/* src built into a program of its own and its megakernel: 0, or the
 * build log (or the failing call) in err. */
static int cl_compile(struct cl_be *b, const char *src, const char *options, cl_program *pp,
                      cl_kernel *kp, char *err, size_t errlen) {
  cl_int e;
  cl_program p = clCreateProgramWithSource(b->ctx, 1, &src, NULL, &e);
  if (!p) {
    snprintf(err, errlen, "clCreateProgramWithSource failed with OpenCL error %d", (int)e);
    return COOP_ECL;
  }
  e = clBuildProgram(p, 1, &b->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, b->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
      clGetProgramBuildInfo(p, b->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
      log[n] = 0;
    }
    snprintf(err, errlen, "megakernel build failed (OpenCL error %d). Compiler log:\n%s", (int)e,
             log ? log : "(unavailable)");
    free(log);
    clReleaseProgram(p);
    return COOP_EBUILD;
  }
  cl_kernel k = clCreateKernel(p, "coop_megakernel", &e);
  if (!k) {
    snprintf(err, errlen, "clCreateKernel failed with OpenCL error %d", (int)e);
    clReleaseProgram(p);
    return COOP_ECL;
  }
  *pp = p;
  *kp = k;
  return 0;
}

static int cl_build(struct coop_rt *rt, const char *src, const char *options) {
  struct cl_be *b = rt->be;
  return cl_compile(b, src, options, &b->program, &b->kernel, rt->msg, sizeof rt->msg);
}

/* backend.h, rebuilding in place: OpenCL builds a program beside the one
 * that runs (its calls are thread-safe); the swap releases the old one. */
struct cl_next {
  cl_program program;
  cl_kernel kernel;
};

static int cl_build_next(struct coop_rt *rt, const char *src, void **next, char *err,
                         size_t errlen) {
  struct cl_next *n = calloc(1, sizeof *n);
  if (!n) {
    snprintf(err, errlen, "out of memory");
    return COOP_ENOMEM;
  }
  int r = cl_compile(rt->be, src, COOP__BUILD_OPTIONS, &n->program, &n->kernel, err, errlen);
  if (r) {
    free(n);
    return r;
  }
  *next = n;
  return 0;
}

static void cl_free_next(struct coop_rt *rt, void *next) {
  (void)rt;
  struct cl_next *n = next;
  if (n && n->kernel) clReleaseKernel(n->kernel);
  if (n && n->program) clReleaseProgram(n->program);
  free(n);
}

static void cl_swap_next(struct coop_rt *rt, void *next) {
  struct cl_be *b = rt->be;
  struct cl_next *n = next;
  if (b->kernel) clReleaseKernel(b->kernel);
  if (b->program) clReleaseProgram(b->program);
  b->program = n->program;
  b->kernel = n->kernel;
  free(n);
}

/* What OpenCL tells of a built kernel: local memory per workgroup,
 * private memory per work-item and the largest workgroup it allows.
 * Nothing about registers or how many workgroups a compute unit holds
 * (OpenCL has no occupancy query): those stay -1. */
static void kernel_figures(cl_kernel k, cl_device_id d, struct coop_rt_width *w) {
  cl_ulong lm = 0, pm = 0;
  size_t wg = 0;
  if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL) == CL_SUCCESS)
    w->shared_bytes = (int)lm;
  if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof pm, &pm, NULL) ==
      CL_SUCCESS)
    w->local_bytes = (int)pm;
  if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS)
    w->max_local_size = (int)wg;
  w->measured = 1;
}

/* backend.h: the built megakernel's figures, or src's built into a
 * program of its own (about as long as the megakernel's build: 0.7 s a
 * kernel with PoCL on two cores) and released. PoCL refuses some kernel
 * sets that it builds whole or the other way round (its work-group
 * compiler), so a lone build that fails says so in the note and is no
 * error. */
static int cl_width(struct coop_rt *rt, const char *src, struct coop_rt_width *w) {
  struct cl_be *b = rt->be;
  if (!src) {
    if (b->kernel) kernel_figures(b->kernel, b->device, w);
    return 0;
  }
  cl_int e;
  cl_program p = clCreateProgramWithSource(b->ctx, 1, &src, NULL, &e);
  if (!p) {
    snprintf(w->note, sizeof w->note, "clCreateProgramWithSource: OpenCL error %d", (int)e);
    return 0;
  }
  e = clBuildProgram(p, 1, &b->device, COOP__BUILD_OPTIONS, NULL, NULL);
  cl_kernel k = e == CL_SUCCESS ? clCreateKernel(p, "coop_megakernel", &e) : NULL;
  if (k) {
    kernel_figures(k, b->device, w);
    clReleaseKernel(k);
  } else {
    snprintf(w->note, sizeof w->note, "does not build alone (OpenCL error %d)", (int)e);
  }
  clReleaseProgram(p);
  return 0;
}

static int cl_launch(struct coop_rt *rt, unsigned groups, unsigned local_size) {
  struct cl_be *b = rt->be;
  CL_CHECK(rt, clSetKernelArgSVMPointer(b->kernel, 0, rt->mb));
  CL_CHECK(rt, clSetKernelArg(b->kernel, 1, sizeof b->dev, &b->dev));
  CL_CHECK(rt, clSetKernelArgSVMPointer(b->kernel, 2, rt->arena));
  size_t global = (size_t)groups * local_size, local = local_size;
  CL_CHECK(rt,
           clEnqueueNDRangeKernel(b->queue, b->kernel, 1, NULL, &global, &local, 0, NULL, &b->run));
  CL_CHECK(rt, clFlush(b->queue));
  return 0;
}

static int cl_wait_exit(struct coop_rt *rt) {
  struct cl_be *b = rt->be;
  if (!b->run) return 0;
  cl_int e = clWaitForEvents(1, &b->run);
  clReleaseEvent(b->run);
  b->run = NULL;
  CL_CHECK(rt, e);
  return 0;
}

static void cl_close(struct coop_rt *rt) {
  struct cl_be *b = rt->be;
  if (!b) return;
  if (b->kernel) clReleaseKernel(b->kernel);
  if (b->program) clReleaseProgram(b->program);
  if (b->dev) clReleaseMemObject(b->dev);
  if (b->queue) clReleaseCommandQueue(b->queue);
  if (b->ctx) clReleaseContext(b->ctx);
  free(b);
  rt->be = NULL;
}

const struct coop__backend_ops coop__opencl_ops = {
    .name = "opencl",
    .default_local_size = 64,
    .open = cl_open,
    .alloc_shared = cl_alloc_shared,
    .free_shared = cl_free_shared,
    .alloc_arena = cl_alloc_arena,
    .free_arena = cl_free_shared,
    .alloc_dev = cl_alloc_dev,
    .write_dev = cl_write_dev,
    .build = cl_build,
    .build_next = cl_build_next,
    .swap_next = cl_swap_next,
    .free_next = cl_free_next,
    .width = cl_width,
    .launch = cl_launch,
    .wait_exit = cl_wait_exit,
    .close = cl_close,
};
