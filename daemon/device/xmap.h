/*
 * xmap.h: a client's transfer memfd, mapped and pinned once, in the
 * device process (docs/daemon.md, "Device buffers", the transfer memfd).
 * A frame client writes and reads its device buffers through one kept
 * memfd (libcoop's transfer memfd). The device process used to read it
 * into its page-locked bounce buffer and have the copy engine move that
 * on, every frame, and the reverse for a read. Mapped once and pinned in
 * place (the runtime's coop_rt_host_register), the client's pages are
 * what the copy engine reads and writes: one copy of the bytes on the
 * host fewer each way.
 *
 * Only a memfd sealed against shrinking (F_SEAL_SHRINK) is mapped: a
 * client that truncated a file the device process had mapped would kill
 * it with SIGBUS, and every other user's jobs with it. At most XMAP_SLOTS
 * files are kept, each of at most XMAP_MAX bytes.
 *
 * Nothing is unpinned while the megakernel runs: CUDA's
 * cuMemHostUnregister waits for the device, which a persistent kernel
 * never lets go idle, and the device process hung until it was killed
 * (an H200, a fifth client's transfer memfd evicting the least recently
 * used one: bench/RESULTS.md, "Many sources through coopd"). So a full
 * map maps no more (the file is read and written instead), nor does one
 * whose owner holds XMAP_PER_OWNER slots already; a file that
 * grew past its mapping is mapped again whole in another slot, the old
 * mapping kept pinned and out of reach, while its owner's share allows
 * (else it is read and written instead); and the mappings go
 * only with xmap_clear, which the device process calls once the
 * megakernel has left (parked), or with xmap_forget after the runtime
 * closed. A file that cannot be mapped or pinned is remembered as such
 * (its slot holds no mapping) and not tried again until a clear.
 * Single-threaded (the device process's one thread).
 */
#ifndef COOPD_XMAP_H
#define COOPD_XMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At most XMAP_SLOTS x XMAP_MAX bytes of host memory pinned (512 MiB): a
 * frame client holds its transfer memfd and its own memfds of input and
 * output (coop_job_buffer_io_fd), and one grown file holds two slots. */
#define XMAP_SLOTS 8
#define XMAP_PER_OWNER 4     /* of them one client's uid may hold */
#define XMAP_MAX (64u << 20) /* libcoop keeps transfer memfds up to this */

struct xmap_slot {
  dev_t dev;
  ino_t ino;
  uint8_t *p;     /* the mapping, pinned; NULL: this file cannot be (remembered) */
  size_t len;     /* its length (the file's size when mapped) */
  int64_t used;   /* the last look that found it, CLOCK_MONOTONIC ns; 0: a free slot */
  uint32_t owner; /* whose file it is (uid + 1; 0: coopd's own) */
};

struct xmap {
  struct xmap_slot slot[XMAP_SLOTS];
  /* pins len bytes at p: 0, else the mapping is not used; and undoes it */
  int (*pin)(void *arg, void *p, size_t len);
  void (*unpin)(void *arg, void *p);
  void *arg;
};

void xmap_init(struct xmap *x, int (*pin)(void *, void *, size_t), void (*unpin)(void *, void *),
               void *arg);
/* The pinned mapping of the file fd, whose bytes off..off+n it holds (the
 * pointer is the file's byte 0), or NULL: then read and write fd instead.
 * owner: uid + 1 of the client whose descriptor it is (0: coopd's own);
 * a file of an owner that holds XMAP_PER_OWNER slots already is not
 * mapped, so that one user cannot take every slot from the others until
 * the next clear. */
uint8_t *xmap_get(struct xmap *x, int fd, uint64_t off, uint64_t n, int64_t now, uint32_t owner);
/* The mapping of the file (dev, ino) that xmap_get mapped for `owner`, if
 * it holds bytes off..off+n, or NULL: a request that names a file by its
 * identity instead of a descriptor (devproc_msg.h, DP_FD_PINNED). The
 * mapping holds the file, so no other file has its identity meanwhile. */
uint8_t *xmap_find(struct xmap *x, dev_t dev, ino_t ino, uint64_t off, uint64_t n, int64_t now,
                   uint32_t owner);
/* Every mapping unpinned and unmapped: only while no kernel runs (the
 * runtime parked). */
void xmap_clear(struct xmap *x);
/* Every mapping unmapped, not unpinned: after the runtime closed. */
void xmap_forget(struct xmap *x);

#endif /* COOPD_XMAP_H */
