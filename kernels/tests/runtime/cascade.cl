/*
 * cascade.cl (tests only: test_runtime registers it in process).
 *
 * A cooperative kernel without barriers that offers a kill after every
 * step, for the kill cascade (docs/scheduler.md, "Kills without a
 * barrier"). Its top workgroup (id n - 1) stays in its first step
 * (returning COOP_CONTINUE: no primitive) until the host opens ctl[0];
 * then it takes a number from the shared sequence ctl[3] into ctl[2] and
 * offers. Every other workgroup but 0 takes a number from ctl[3] into
 * last[id] at every step, so that a host can see whether a workgroup
 * wanted below the top ran steps after the top's last one (a suspension
 * takes all of them but 0), and that none steps any more while they
 * wait. All end once the host sets ctl[1]. Thread 0 decides for its
 * group: a step's return must be uniform.
 *
 * args: ctl[4], last[n], n.
 */
struct cascade_state {
  coop_u32 s;
};
void cascade_init(struct coop_ctx *c, struct cascade_state *st) { st->s = 0u; }
coop_u32 cascade_step(struct coop_ctx *c, struct cascade_state *st) {
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_u32 *last = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 1);
  coop_u32 n = coop_arg_u32(c, 2), id = coop_group_id(c);
  COOP_LOCAL coop_u32 *b = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  if (coop_local_id_c(c) == 0u) {
    coop_u32 r = COOP_OFFER_KILL;
    if (coop_ld_acq(&ctl[1]) != 0u)
      r = COOP_DONE;
    else if (id + 1u == n && st->s == 0u)
      r = coop_ld_acq(&ctl[0]) != 0u ? COOP_OFFER_KILL : COOP_CONTINUE;
    if (r == COOP_OFFER_KILL && id != 0u) {
      coop_u32 t = coop_fadd(&ctl[3], 1u);
      if (id + 1u == n && st->s == 0u)
        coop_st_rel(&ctl[2], t);
      else if (id < n)
        last[id] = t;
    }
    b[0] = r;
  }
  coop_wg_barrier();
  coop_u32 r = b[0];
  coop_wg_barrier();
  if (r == COOP_OFFER_KILL && id + 1u == n) st->s = 1u;
  return r;
}
