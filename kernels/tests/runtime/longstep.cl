/*
 * longstep.cl (tests only: test_runtime registers it in process).
 *
 * A cooperative kernel without barriers whose steps are long, for
 * coop_kill_wanted and coop_poll_yield (docs/kernels.md, "Long steps").
 * Every workgroup but 0 adds one to ctl[2] as its first step begins, then
 * spins in each step until the host opens ctl[0] or sets ctl[1], or until
 * coop_poll_yield answers 1: then it sets gave[id] and the step offers a
 * kill at once. Workgroup 0 only offers, and counts in ctl[3] the steps in
 * which coop_kill_wanted answered 1 to it (it never may). All end once the
 * host sets ctl[1]. Thread 0 decides for its group: a step's return must
 * be uniform.
 *
 * args: ctl[4], gave[n], n.
 */
struct longstep_state {
  coop_u32 begun;
};
void longstep_init(struct coop_ctx *c, struct longstep_state *st) { st->begun = 0u; }
coop_u32 longstep_step(struct coop_ctx *c, struct longstep_state *st) {
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_atomic_u32 *gave = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 1);
  coop_u32 n = coop_arg_u32(c, 2), id = coop_group_id(c);
  COOP_LOCAL coop_u32 *b = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  if (coop_local_id_c(c) == 0u) {
    coop_u32 r = COOP_OFFER_KILL, polls = 0u;
    if (id == 0u && coop_kill_wanted(c)) coop_fadd(&ctl[3], 1u);
    if (id != 0u && st->begun == 0u) coop_fadd(&ctl[2], 1u);
    while (id != 0u && coop_ld_acq(&ctl[0]) == 0u && coop_ld_acq(&ctl[1]) == 0u)
      if (coop_poll_yield(c, &polls, COOP_POLL_EVERY)) {
        if (id < n) coop_st_rel(&gave[id], 1u);
        break;
      }
    if (coop_ld_acq(&ctl[1]) != 0u) r = COOP_DONE;
    b[0] = r;
  }
  coop_wg_barrier();
  coop_u32 r = b[0];
  coop_wg_barrier();
  st->begun = 1u;
  return r;
}
