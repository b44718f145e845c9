//@coop name=spin kind=cooperative args=buf,u32
/*
 * spin.cl (tests only): a cooperative kernel that misbehaves on purpose, for
 * the watchdog tests. Its first step busy-waits `kticks` x 1024 ticks of the
 * device clock in every work-item and reaches no primitive meanwhile, so its
 * workgroups neither give workers back nor see a cancellation until then;
 * then it returns. A clock, not an iteration count, so that a loaded machine
 * stretches it no more than the wall time it was calibrated in. Without a
 * device clock it returns at once (and the watchdog tests fail, as they
 * should, rather than hang). Each work-item adds what it computed to out[0].
 * args: out (a u32), kticks
 */
struct spin_state {
  coop_u32 done;
};

void spin_init(struct coop_ctx *c, struct spin_state *s) { s->done = 0u; }

coop_u32 spin_step(struct coop_ctx *c, struct spin_state *s) {
  if (s->done) return COOP_DONE;
  COOP_GLOBAL coop_atomic_u32 *out = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  coop_u64 ticks = COOP_HAVE_CLOCK ? (coop_u64)coop_arg_u32(c, 1) << 10 : 0u;
  coop_u64 t0 = coop_clock();
  coop_u32 x = coop_global_id(c) + 1u;
  while (coop_clock() - t0 < ticks) x = x * 1664525u + 1013904223u;
  coop_fadd(&out[0], x);
  s->done = 1u;
  return COOP_CONTINUE;
}
