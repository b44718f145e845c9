/*
 * phases.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Cooperative phases with a plain global barrier while groups come and go
 * (kills and forks at a separate step, as in 004 Fig. 3's two barriers):
 *   step 0: offer_kill | request_fork
 *   step 1: flag[vid] := phase;        global barrier
 *   step 2: every id < M has flag == phase, else err[0]++; global barrier
 * args: flags, err, phases
 */
struct phases_state {
  coop_u32 phase;
  coop_u32 step;
};
void phases_init(struct coop_ctx *c, struct phases_state *s) {
  s->phase = 1u;
  s->step = 1u;
}
coop_u32 phases_step(struct coop_ctx *c, struct phases_state *s) {
  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 1);
  coop_u32 phases = coop_arg_u32(c, 2), lid = coop_local_id_c(c);
  if (s->step == 0u) {
    s->step = 1u;
    return COOP_OFFER_KILL | COOP_REQUEST_FORK;
  }
  if (s->step == 1u) {
    if (s->phase > phases) return COOP_DONE;
    if (lid == 0u) coop_st_rlx(&flag[coop_group_id(c)], s->phase);
    s->step = 2u;
    return COOP_GLOBAL_BARRIER;
  }
  coop_u32 m = coop_num_groups(c);
  if (lid == 0u)
    for (coop_u32 v = 0u; v < m; v++)
      if (coop_ld_rlx(&flag[v]) != s->phase) coop_fadd(&err[0], 1u);
  s->phase++;
  s->step = 0u;
  return COOP_GLOBAL_BARRIER;
}
