//@coop name=slowsweep kind=cooperative args=data:buf,n:u32,rounds:u32,kticks:u32
//@coop require n*4 <= len(data)
/*
 * slowsweep.cl (tests only): sweep.cl whose rounds each last at least
 * kticks x 1024 ticks of the device clock, so that a job of R rounds runs
 * for a bounded time however fast the device is (PoCL on a loaded CPU runs
 * plain sweep rounds anywhere from 1 us to 10 ms). Every element of data[n]
 * grows by exactly `rounds`: a suspension that lost or repeated a round
 * shows. The wait is per work-item and decides nothing: the step's return
 * depends on the round alone, which every work-item agrees on. In a
 * directory of its own: with the kernels of tests/daemon in the same
 * megakernel, PoCL's work-group compiler failed on it (ParallelRegion).
 * args: data (inout), n, rounds, kticks
 */
struct slowsweep_state {
  coop_u32 round;
};

void slowsweep_init(struct coop_ctx *c, struct slowsweep_state *s) { s->round = 0u; }

coop_u32 slowsweep_step(struct coop_ctx *c, struct slowsweep_state *s) {
  coop_buf_u32 data = coop_arg_buf_u32(c, 0);
  coop_u32 n = coop_arg_u32(c, 1), rounds = coop_arg_u32(c, 2);
  if (s->round == rounds) return COOP_DONE;
  coop_u64 ticks = COOP_HAVE_CLOCK ? (coop_u64)coop_arg_u32(c, 3) << 10 : 0u;
  coop_u64 t0 = coop_clock();
  /* the wait first, computing something (as spin.cl does): an empty wait
   * after the loop made PoCL's work-group compiler fail (ParallelRegion) */
  coop_u32 x = 0u;
  while (coop_clock() - t0 < ticks) x = x * 1664525u + 1013904223u;
  for (coop_u32 i = coop_global_id(c); i < n; i += coop_global_size(c))
    coop_at(data, i) += 1u + (x & 0u);
  s->round++;
  return COOP_RESIZING_BARRIER;
}
