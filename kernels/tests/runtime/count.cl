/*
 * count.cl (tests only: emit_source registers it for the CUDA compile test).
 *
 * A cooperative kernel with COOP_FN step functions: adds 1 to n[0] once
 * per workgroup and round, with a resizing barrier after each round.
 * args: n, rounds.
 */
struct count_state {
  coop_u32 round;
};
COOP_FN void count_init(struct coop_ctx *c, struct count_state *s) { s->round = 0u; }
COOP_FN coop_u32 count_step(struct coop_ctx *c, struct count_state *s) {
  COOP_GLOBAL coop_atomic_u32 *n = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  if (s->round++ == coop_arg_u32(c, 1)) return COOP_DONE;
  if (coop_local_id_c(c) == 0u) coop_fadd(n, 1u);
  return COOP_RESIZING_BARRIER;
}
