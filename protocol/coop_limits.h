/*
 * coop_limits.h: the limits that the device code, the runtime, the daemon,
 * the wire protocol and libcoop share, each under one name.
 *
 * Plain #defines and nothing else (no includes, no casts, no C-only
 * syntax): it is valid C11, OpenCL C and CUDA, so the megakernel's device
 * sources take it too (source.c puts it first in the assembled source,
 * before shared.h). Installed beside coop.h, which includes it: the public
 * names are the ones libcoop has always had. The values are part of the
 * protocol (a peer refuses a message past them): never lower one.
 */
#ifndef COOP_LIMITS_H
#define COOP_LIMITS_H

#define COOP_NAME_MAX 64         /* kernel, client, backend names: < 64 bytes */
#define COOP_TEXT_MAX 1024       /* messages and device names: < 1024 bytes */
#define COOP_MAX_ARGS 16         /* arguments of one kernel: a task's 64-bit slots */
#define COOP_MAX_KERNELS 64      /* kernels one megakernel (one device) holds */
#define COOP_MAX_DEVICES 8       /* devices of one daemon */
#define COOP_MAX_INSTANCES 65536 /* instances of one periodic job */
#define COOP_MAX_BOUNDS 32       /* upper bounds of the gather histogram */
#define COOP_PRIORITY_MIN (-100) /* a job's priority: COOP_PRIORITY_MIN.. */
#define COOP_PRIORITY_MAX 100    /* ..COOP_PRIORITY_MAX, 0 by default */
#define COOP_SOURCE_MAX 262144   /* the source of a kernel an author adds: bytes */

#endif /* COOP_LIMITS_H */
