/* How many blocks of the megakernel one SM holds, and how many to launch:
 * the arithmetic of the CUDA occupancy API, free of the driver so that a
 * test can check it (docs/kernels.md, "The megakernel's width"). */
#ifndef COOP_OCCUPANCY_H
#define COOP_OCCUPANCY_H

/* One SM's limits, as the device attributes give them. */
struct coop__sm {
  unsigned regfile;   /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  unsigned threads;   /* MAX_THREADS_PER_MULTIPROCESSOR */
  unsigned blocks;    /* MAX_BLOCKS_PER_MULTIPROCESSOR */
  unsigned shared;    /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, bytes */
  unsigned block_sys; /* shared memory the system takes per block (1 KiB from sm_80) */
  unsigned parts;     /* sub-partitions, each with regfile / parts of the registers
                         for its own warps (4 on every sm_70+); 0 is taken as 1 */
};

struct coop__occ {
  unsigned regs, smem, threads, blocks; /* blocks per SM each resource allows */
  unsigned lim;                         /* the smallest of them */
  const char *bound;                    /* its name */
  int full; /* lim blocks leave no room on the SM for a small kernel (occupancy.c) */
};

/* The blocks of local_size threads one SM holds at regs registers per
 * thread and smem bytes of static shared memory per block. */
void coop__occupancy(const struct coop__sm *sm, unsigned local_size, int regs, int smem,
                     struct coop__occ *o);
/* The workgroups to launch for per_sm blocks an SM on sms SMs: all of
 * them, or one block fewer on every SM where per_sm is the bound and fills
 * the SM (one SM short where a block alone fills it). */
unsigned coop__launch_groups(const struct coop__occ *o, unsigned per_sm, unsigned sms);
/* The register cap under which a build of regs registers a thread, bound
 * by registers and filling the SM at its lim blocks, keeps lim blocks or
 * more and leaves the room occupancy.c names on every SM; 0 where there is none
 * (not full, another bound, or more than a quarter of the registers to
 * give up). */
unsigned coop__room_cap(const struct coop__sm *sm, unsigned local_size, int regs, int smem);
/* The highest register cap (a multiple of 8, at least three quarters of
 * regs) under which an SM holds more blocks than at regs, with the room
 * left; 0 where registers are not the bound or no such cap exists. Whether
 * it is worth a build (it may spill) is the caller's to find out. */
unsigned coop__more_cap(const struct coop__sm *sm, unsigned local_size, int regs, int smem);

#endif
