/*
 * micro_nop.cl (coop-bench-micro): dispatch latency.
 *
 * Non-cooperative no-op: each group's thread 0 stores the task's tag, so the
 * host can tell that all K groups ran. args: out, tag.
 */
void micro_nop(struct coop_ctx *c) {
  COOP_GLOBAL coop_u32 *o = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  if (coop_local_id_c(c) == 0u) o[16u * coop_group_id(c)] = coop_arg_u32(c, 1);
}
