/*
 * rawpoke.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Isolation (views and guard zones): viewpoke's dst[i] = 7 for i < n
 * through the raw pointer, past any view. args: dst, n.
 */
void rawpoke(struct coop_ctx *c) {
  COOP_GLOBAL coop_u32 *dst = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  coop_u32 n = coop_arg_u32(c, 1);
  if (coop_group_id(c) != 0u || coop_local_id_c(c) != 0u) return;
  for (coop_u32 i = 0u; i < n; i++) dst[i] = 7u;
}
