/*
 * gate.cl (tests only: test_runtime registers it in process).
 *
 * A cooperative kernel whose steps end when the host says: in step s every
 * workgroup waits (returning COOP_CONTINUE: no primitive, the step again)
 * until the host's gate ctl[0] exceeds s, then ends the step with a
 * resizing barrier. Workgroup 0 says which step it is in (ctl[1] = s + 1,
 * before it waits) and records the M it sees once the gate is open
 * (rec[s]), so that a host can ask for a kill while every workgroup is
 * inside a step and see at which barrier the kill was made. Thread 0 reads
 * the gate for its group: a step's return value must be uniform. With
 * split != 0 workgroup 0 has a gate of its own, ctl[2], so that a host can
 * let it end a step last.
 *
 * args: ctl[3], rec[steps], steps, split.
 */
struct gate_state {
  coop_u32 s;
};
void gate_init(struct coop_ctx *c, struct gate_state *st) { st->s = 0u; }
coop_u32 gate_step(struct coop_ctx *c, struct gate_state *st) {
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_u32 *rec = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 1);
  coop_u32 steps = coop_arg_u32(c, 2), s = st->s;
  coop_u32 gate = coop_arg_u32(c, 3) != 0u && coop_group_id(c) == 0u ? 2u : 0u;
  if (s == steps) return COOP_DONE;
  COOP_LOCAL coop_u32 *b = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  if (coop_local_id_c(c) == 0u) {
    coop_u32 open = coop_ld_acq(&ctl[gate]) > s;
    if (coop_group_id(c) == 0u) {
      if (coop_ld_rlx(&ctl[1]) != s + 1u) coop_st_rel(&ctl[1], s + 1u);
      if (open) rec[s] = coop_num_groups(c);
    }
    b[0] = open;
  }
  coop_wg_barrier();
  coop_u32 open = b[0];
  coop_wg_barrier();
  if (!open) return COOP_CONTINUE;
  st->s = s + 1u;
  return COOP_RESIZING_BARRIER;
}
