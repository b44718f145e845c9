/* A kernel's figures read from a CUDA cubin (an ELF file), for when the
 * compiler's log gives none: NVRTC serves a program it compiled before
 * from its cache without running ptxas, and then --ptxas-options=--verbose
 * prints nothing (docs/kernels.md, "The megakernel's width"). Free of the
 * driver, so that a test can check it on a cubin it builds. */
#ifndef COOP_CUBIN_H
#define COOP_CUBIN_H

#include <stddef.h>

struct coop__cubin_figures {
  int regs;         /* registers per thread, -1 if not found */
  int shared_bytes; /* static shared memory per block, -1 if not found */
  int frame_bytes;  /* the stack frame per thread, -1 if not found */
};

/* The figures of the kernel named fn in the cubin at [p, p + len): the
 * register count from the .nv.info attribute EIATTR_REGCOUNT (else the
 * high byte of its .text section's sh_info), the stack frame from
 * EIATTR_FRAME_SIZE, the static shared memory from the size of its
 * .nv.shared section (0 without one). Every offset is bounds-checked; 0,
 * or -1 (COOP_EINVAL) if p is no 64-bit little-endian ELF naming fn. */
int coop__cubin_figures(const void *p, size_t len, const char *fn, struct coop__cubin_figures *out);

/* The attribute codes of .nv.info that coop__cubin_figures reads, and the
 * format byte of a value that carries a size (EIFMT_SVAL). */
#define COOP_EIFMT_NVAL 0x01
#define COOP_EIFMT_BVAL 0x02
#define COOP_EIFMT_HVAL 0x03
#define COOP_EIFMT_SVAL 0x04
#define COOP_EIATTR_FRAME_SIZE 0x11
#define COOP_EIATTR_REGCOUNT 0x2f

#endif
