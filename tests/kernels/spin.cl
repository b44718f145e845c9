//@coop name=spin kind=cooperative args=buf,u32
/*
 * spin.cl (tests only): a cooperative kernel that misbehaves on purpose, for
 * the watchdog tests. Its first step loops `kiters` thousand times in every
 * work-item and reaches no primitive meanwhile, so its workgroups neither
 * give workers back nor see a cancellation until the loop ends; then it
 * returns. Each work-item adds what it computed to out[0] (an atomic), so
 * the loop is not optimised away.
 * args: out (a u32), kiters
 */
struct spin_state {
  coop_u32 done;
};

void spin_init(struct coop_ctx *c, struct spin_state *s) { s->done = 0u; }

coop_u32 spin_step(struct coop_ctx *c, struct spin_state *s) {
  if (s->done) return COOP_DONE;
  COOP_GLOBAL coop_atomic_u32 *out = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  coop_u32 k = coop_arg_u32(c, 1), x = coop_global_id(c) + 1u;
  for (coop_u32 i = 0u; i < k; i++)
    for (coop_u32 j = 0u; j < 1000u; j++) x = x * 1664525u + 1013904223u;
  coop_fadd(&out[0], x);
  s->done = 1u;
  return COOP_CONTINUE;
}
