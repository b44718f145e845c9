/* The occupancy arithmetic (occupancy.h): each per-SM limit worked out as
 * the CUDA occupancy API does (registers are allocated per warp in units
 * of 256; each block costs block_sys bytes of shared memory beside its
 * own), and the room the launch leaves for the driver's own kernels. */
#include "occupancy.h"

/* Room on one SM for a small kernel beside the megakernel. The driver runs
 * kernels of its own for some operations on the megakernel's context:
 * with every SM's register file taken by the megakernel (4 blocks of 256
 * threads at 64 registers on an H200) an arena copy into managed memory
 * (cuMemcpyHtoD, as the staging of a buffer and its zeroing do) never
 * returned and the device process was killed as hung; with 3 blocks of 80
 * registers (4096 registers left) it returned. So where lim blocks would
 * fill an SM's registers, threads, block slots or shared memory, the
 * launch is one block short of lim x SMs, and that SM keeps a whole
 * block's room. The smallest room seen to suffice, 4096 registers, is the
 * threshold; 128 threads and one block slot go with it. */
#define ROOM_REGS 4096u
#define ROOM_THREADS 128u

static int room(const struct coop__sm *sm, unsigned local_size, unsigned reg_block, unsigned smem,
                unsigned lim) {
  return sm->regfile >= lim * reg_block + ROOM_REGS &&
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
  o->regs = reg_unit && warps ? sm->regfile / (reg_unit * warps) : sm->blocks;
  o->smem = sh ? sm->shared / sh : sm->blocks;
  o->bound = "threads per SM";
  o->lim = o->threads;
  if (o->blocks < o->lim) o->lim = o->blocks, o->bound = "blocks per SM";
  if (o->regs < o->lim) o->lim = o->regs, o->bound = "registers";
  if (o->smem < o->lim) o->lim = o->smem, o->bound = "shared memory";
  o->full = !room(sm, local_size, reg_unit * warps, sh - sm->block_sys, o->lim);
}

unsigned coop__launch_groups(const struct coop__occ *o, unsigned per_sm, unsigned sms) {
  unsigned g = per_sm * sms;
  return per_sm == o->lim && o->full && g > 2 ? g - 1 : g;
}
