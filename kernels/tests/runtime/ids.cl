/*
 * ids.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Non-cooperative: each of the K groups marks itself and the M it saw.
 */
void ids(struct coop_ctx *c) {
  COOP_GLOBAL coop_atomic_u32 *o = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  if (coop_local_id_c(c) == 0u) {
    coop_fadd(&o[2u * coop_group_id(c)], 1u);
    coop_st_rlx(&o[2u * coop_group_id(c) + 1u], coop_num_groups(c));
  }
}
