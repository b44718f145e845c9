/*
 * plain.cl (tests only: emit_source registers it for the CUDA compile test).
 *
 * A non-cooperative kernel declared COOP_FN: o[global id] = M. args: o.
 */
COOP_FN void plain(struct coop_ctx *c) {
  COOP_GLOBAL coop_u32 *o = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  o[coop_global_id(c)] = coop_num_groups(c);
}
