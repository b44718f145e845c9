/*
 * sweep.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Cooperative sweep with resizing barriers: round r adds 1 to every element,
 * the elements split by global id over the current M. Exact coverage needs
 * contiguous ids and M stable inside each resizing-barrier interval.
 *   err[0]: M changed inside a step (an interval)
 *   err[1]: group id >= M
 *   err[2]: the groups counted in interval r differ from the M they saw
 * args: data, n, rounds, err, cnt (per round)
 */
struct sweep_state {
  coop_u32 round;
};
void sweep_init(struct coop_ctx *c, struct sweep_state *s) { s->round = 0u; }
coop_u32 sweep_step(struct coop_ctx *c, struct sweep_state *s) {
  COOP_GLOBAL coop_u32 *data = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  coop_u32 n = coop_arg_u32(c, 1), rounds = coop_arg_u32(c, 2);
  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);
  COOP_GLOBAL coop_atomic_u32 *cnt = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  coop_u32 r = s->round, lid = coop_local_id_c(c);
  if (r == rounds) return COOP_DONE;
  coop_u32 m0 = coop_num_groups(c);
  if (lid == 0u && r > 0u && coop_group_id(c) == 0u) {
    coop_u32 got = coop_ld_rlx(&cnt[2u * (r - 1u)]);
    coop_u32 saw = coop_ld_rlx(&cnt[2u * (r - 1u) + 1u]);
    if (got != saw) coop_fadd(&err[2], 1u);
  }
  for (coop_u32 i = coop_global_id(c); i < n; i += coop_global_size(c)) data[i] += 1u;
  if (lid == 0u) {
    if (coop_num_groups(c) != m0) coop_fadd(&err[0], 1u);
    if (coop_group_id(c) >= m0) coop_fadd(&err[1], 1u);
    coop_fadd(&cnt[2u * r], 1u);
    coop_st_rlx(&cnt[2u * r + 1u], m0);
  }
  s->round = r + 1u;
  return COOP_RESIZING_BARRIER;
}
