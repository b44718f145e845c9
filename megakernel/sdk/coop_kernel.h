/*
 * coop_kernel.h: everything a kernel for coop may use, in the order in
 * which the runtime assembles it before the registered kernels (the
 * //@needs lines of megakernel/device/). A kernel file never includes it:
 * the runtime builds one program from the kernels' text and its own. It is
 * for checking a kernel without a device and for editors, as
 *     clang -x cl -cl-std=CL3.0 -fsyntax-only -include coop/kernel/coop_kernel.h mine.cl
 * (docs/kernels.md, "The kernel SDK").
 */
#ifndef COOP_KERNEL_H
#define COOP_KERNEL_H
/* clang names the OpenCL C version __OPENCL_C_VERSION__ and sets
 * __OPENCL_VERSION__ only for a device target, which dialect.h tests. */
#if defined(__OPENCL_C_VERSION__) && !defined(__OPENCL_VERSION__)
#define __OPENCL_VERSION__ __OPENCL_C_VERSION__
#endif
#include "coop_limits.h"
#include "dialect.h"
#include "shared.h"
#include "api.h"
#include "primitives.cl"
#include "barrier.cl"
#include "taskqueue.cl"
#endif /* COOP_KERNEL_H */
