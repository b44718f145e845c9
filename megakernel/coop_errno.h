/*
 * coop_errno.h: the one list of coop error codes, shared by the runtime,
 * the daemon and libcoop. Functions return 0 or one of these (negative).
 * The X-macro generates the enum, coop_strerror() and coop_err_name().
 */
#ifndef COOP_ERRNO_H
#define COOP_ERRNO_H

#define COOP_ERRNO_MAP(XX)                                                                   \
  XX(EINVAL, -1, "invalid argument")                                                         \
  XX(ENOMEM, -2, "out of memory")                                                            \
  XX(ENODEV, -3, "no such OpenCL platform or device")                                        \
  XX(ENOSVM, -4,                                                                             \
     "device lacks fine-grained SVM buffers or SVM atomics; on NVIDIA use the CUDA backend") \
  XX(EBUILD, -5, "megakernel build failed; the compiler log says why")                       \
  XX(ECL, -6, "an OpenCL call failed")                                                       \
  XX(ETIMEDOUT, -7, "timed out")                                                             \
  XX(EBUSY, -8, "too many tasks in flight")                                                  \
  XX(ESTATE, -9, "not allowed in the runtime's current state")                               \
  XX(ENOKERNEL, -10, "no such kernel")                                                       \
  XX(EEXIST, -11, "a kernel of that name is already registered")                             \
  XX(EREFUSED, -12, "task refused by the scheduler")                                         \
  XX(ECANCELED, -13, "task cancelled")                                                       \
  XX(EDISCOVERY, -14, "occupancy discovery found no worker workgroup")                       \
  XX(ENOTASK, -15, "no such task (already released?)")

enum coop_errno {
#define COOP__ERR_ENUM(name, val, msg) COOP_##name = (val),
  COOP_ERRNO_MAP(COOP__ERR_ENUM)
#undef COOP__ERR_ENUM
};

const char *coop_strerror(int err);
const char *coop_err_name(int err);

#endif /* COOP_ERRNO_H */
