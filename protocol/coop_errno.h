/*
 * coop_errno.h: the one list of coop error codes, shared by the runtime,
 * the daemon, the wire protocol (ERROR frames carry them) and libcoop.
 * The values are part of the protocol: never renumber them. Functions return
 * 0 or one of these (negative). The X-macro generates the enum, coop_strerror() and
 * coop_err_name().
 */
#ifndef COOP_ERRNO_H
#define COOP_ERRNO_H

#define COOP_ERRNO_MAP(XX)                                                                     \
  XX(EINVAL, -1, "invalid argument")                                                           \
  XX(ENOMEM, -2, "out of memory")                                                              \
  XX(ENODEV, -3, "no such OpenCL platform or device")                                          \
  XX(ENOSVM, -4,                                                                               \
     "device lacks fine-grained SVM buffers or SVM atomics; on NVIDIA use the CUDA backend")   \
  XX(EBUILD, -5, "megakernel build failed; the compiler log says why")                         \
  XX(ECL, -6, "an OpenCL call failed")                                                         \
  XX(ETIMEDOUT, -7, "timed out")                                                               \
  XX(EBUSY, -8, "too many tasks in flight")                                                    \
  XX(ESTATE, -9, "not allowed in the runtime's current state")                                 \
  XX(ENOKERNEL, -10, "no such kernel")                                                         \
  XX(EEXIST, -11, "a kernel of that name is already registered")                               \
  XX(EREFUSED, -12, "task refused by the scheduler")                                           \
  XX(ECANCELED, -13, "task cancelled")                                                         \
  XX(EDISCOVERY, -14, "occupancy discovery found no worker workgroup")                         \
  XX(ENOTASK, -15, "no such task (already released?)")                                         \
  XX(EPROTO, -16, "malformed message")                                                         \
  XX(EVERSION, -17, "unsupported protocol version")                                            \
  XX(ETOOBIG, -18, "message or buffer larger than the limit")                                  \
  XX(ELIMIT, -19, "limit reached")                                                             \
  XX(EPERM, -20, "not allowed")                                                                \
  XX(ENOJOB, -21, "no such job")                                                               \
  XX(EARGS, -22, "arguments do not match the kernel's signature")                              \
  XX(ECONN, -23, "cannot reach the daemon")                                                    \
  XX(ECLOSED, -24, "the daemon closed the connection")                                         \
  XX(ESHUTDOWN, -25, "the daemon is shutting down")                                            \
  XX(EIO, -26, "input/output error")                                                           \
  XX(EFAILED, -27, "the job failed on the device")                                             \
  XX(EFORMAT, -28, "malformed input file")                                                     \
  XX(EMISMATCH, -29, "result differs from the CPU reference")                                  \
  XX(EHUNG, -30, "a kernel kept its workgroups: it reached no offer_kill or resizing barrier") \
  XX(ELOST, -31,                                                                               \
     "the job was lost: coopd or its device process stopped before it finished; submit it "    \
     "again")                                                                                  \
  XX(EFAULT, -32, "the kernel accessed memory outside its job's buffers")                      \
  XX(EUNTRUSTED, -33,                                                                          \
     "the server at the socket runs as a user libcoop does not trust (not root, coopd's "      \
     "service user or you)")

enum coop_errno {
#define COOP__ERR_ENUM(name, val, msg) COOP_##name = (val),
  COOP_ERRNO_MAP(COOP__ERR_ENUM)
#undef COOP__ERR_ENUM
};

const char *coop_strerror(int err);
const char *coop_err_name(int err);

#endif /* COOP_ERRNO_H */
