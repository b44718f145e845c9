/* The occupancy arithmetic (occupancy.h): each per-SM limit worked out as
 * the CUDA occupancy API does (registers are allocated per warp in units
 * of 256, from the register file of the sub-partition the warp runs on;
 * each block costs block_sys bytes of shared memory beside its own), and
 * the room the launch leaves for the driver's own kernels. Counting the
 * SM's registers as one pool instead promised a 9th block of 64 threads
 * at 104 registers (18 warps of 3328) where the sub-partitions hold 4
 * such warps each: the H200 launched 8 (docs/kernels.md, "A cap that fits
 * one more block"). */
#include "occupancy.h"

#include <string.h>

/* Room on every SM for a small kernel beside the megakernel. The driver
 * runs kernels of its own for some operations on the megakernel's context:
 * a copy into managed memory (cuMemcpyHtoD into the arena, as the staging
 * of a buffer, its zeroing and its guards do) never returns while the
 * megakernel's blocks take a whole SM's registers, threads, block slots or
 * shared memory. Seen on an H200 (docs/kernels.md, "The megakernel's
 * width"): 4 blocks of 256 threads at 64 registers hung the device
 * process's staging; 8 blocks of 64 threads at 127 registers (128 a
 * thread in a warp's allocation) hung the first arena copy, launched one
 * block short (one SM with room) or 7 x 132 + 1 (one SM full), and it
 * returned with 6 x 132 + 1 blocks or under a cap of 120 registers (8
 * blocks an SM, 4096 registers left on each). So where lim blocks fill an
 * SM, a build bound by registers is made again under a cap that leaves
 * the room at lim blocks or more (coop__room_cap), and any other full
 * launch takes one block fewer on every SM. The smallest room seen to suffice,
 * 4096 registers, is the threshold (1024 on each sub-partition, where
 * the warps at 120 registers were 4 a sub-partition); 128 threads and one
 * block slot go with it. It is the driver's room, not a plain kernel's: a
 * 64-thread block at 32 registers did not start beside those 8 blocks, and
 * did under 112 registers (2048 free a sub-partition). */
#define ROOM_REGS 4096u
#define ROOM_THREADS 128u

/* The SM's sub-partitions: the warp schedulers, each with its own share
 * of the register file for the warps it runs (as cuda_occupancy.h models
 * it). */
static unsigned nparts(const struct coop__sm *sm) { return sm->parts ? sm->parts : 1u; }

/* The warps of `blocks` blocks on the SM's busiest sub-partition: an
 * uneven count puts one more warp on some of them. */
static unsigned part_warps(const struct coop__sm *sm, unsigned warps, unsigned blocks) {
  return (blocks * warps + nparts(sm) - 1u) / nparts(sm);
}

/* The room left on every sub-partition of an SM holding lim blocks. */
static int room(const struct coop__sm *sm, unsigned local_size, unsigned reg_unit, unsigned smem,
                unsigned lim) {
  unsigned parts = nparts(sm), warps = (local_size + 31u) / 32u;
  return sm->regfile / parts >= part_warps(sm, warps, lim) * reg_unit + ROOM_REGS / parts &&
         sm->threads >= lim * local_size + ROOM_THREADS && sm->blocks > lim &&
         sm->shared >= lim * (smem + sm->block_sys) + sm->block_sys;
}

void coop__occupancy(const struct coop__sm *sm, unsigned local_size, int regs, int smem,
                     struct coop__occ *o) {
  unsigned warps = (local_size + 31u) / 32u;
  unsigned reg_unit = regs > 0 ? ((unsigned)regs * 32u + 255u) / 256u * 256u : 0u;
  unsigned sh = (smem > 0 ? (unsigned)smem : 0u) + sm->block_sys;
  o->threads = local_size ? sm->threads / local_size : 0;
  o->blocks = sm->blocks;
  unsigned parts = nparts(sm);
  /* whole warps on each sub-partition's registers, then whole blocks */
  o->regs = reg_unit && warps ? sm->regfile / parts / reg_unit * parts / warps : sm->blocks;
  o->smem = sh ? sm->shared / sh : sm->blocks;
  o->bound = "threads per SM";
  o->lim = o->threads;
  if (o->blocks < o->lim) o->lim = o->blocks, o->bound = "blocks per SM";
  if (o->regs < o->lim) o->lim = o->regs, o->bound = "registers";
  if (o->smem < o->lim) o->lim = o->smem, o->bound = "shared memory";
  o->full = !room(sm, local_size, reg_unit, sh - sm->block_sys, o->lim);
}

unsigned coop__launch_groups(const struct coop__occ *o, unsigned per_sm, unsigned sms) {
  if (per_sm != o->lim || !o->full) return per_sm * sms;
  /* one block, filling the SM: nothing smaller; one SM keeps the room */
  return per_sm > 1 ? (per_sm - 1) * sms : sms > 2 ? sms - 1 : sms;
}

/* The highest register cap at or below `from` and below regs (multiples
 * of 8) under which an SM holds `blocks` or more with the room left, down
 * to a quarter fewer registers than regs: below that, spills would cost
 * more than the block an SM gains or keeps. 0 if none. */
static unsigned cap_down(const struct coop__sm *sm, unsigned local_size, int regs, int smem,
                         unsigned from, unsigned blocks) {
  if (regs <= 0) return 0;
  unsigned below = ((unsigned)regs - 1u) / 8u * 8u;
  struct coop__occ c;
  for (unsigned cap = from < below ? from / 8u * 8u : below;
       cap >= 16u && cap * 4u >= (unsigned)regs * 3u; cap -= 8u) {
    coop__occupancy(sm, local_size, (int)cap, smem, &c);
    if (c.lim >= blocks && !c.full) return cap;
  }
  return 0;
}

unsigned coop__room_cap(const struct coop__sm *sm, unsigned local_size, int regs, int smem) {
  struct coop__occ o;
  coop__occupancy(sm, local_size, regs, smem, &o);
  if (!o.full || strcmp(o.bound, "registers") || !o.lim || !local_size) return 0;
  unsigned warps = (local_size + 31u) / 32u, parts = nparts(sm);
  if (sm->regfile < ROOM_REGS) return 0;
  /* a warp's registers in units of 256: the most that leaves the room on
   * the busiest sub-partition at lim blocks, and below it (a lower cap can
   * fit more blocks and fill the SM again) */
  unsigned per_warp =
      (sm->regfile / parts - ROOM_REGS / parts) / part_warps(sm, warps, o.lim) / 256u * 256u;
  return cap_down(sm, local_size, regs, smem, per_warp / 32u, o.lim);
}

unsigned coop__more_cap(const struct coop__sm *sm, unsigned local_size, int regs, int smem) {
  struct coop__occ o;
  coop__occupancy(sm, local_size, regs, smem, &o);
  if (strcmp(o.bound, "registers") || !local_size) return 0;
  return cap_down(sm, local_size, regs, smem, (unsigned)-1, o.lim + 1u);
}
