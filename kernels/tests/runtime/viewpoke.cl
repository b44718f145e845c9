/*
 * viewpoke.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Isolation (views and guard zones): dst[i] = 7 for i < n through a view,
 * and scratch[m] = 1 through a scratch view. args: dst, n, m.
 */
void viewpoke(struct coop_ctx *c) {
  coop_buf_u32 dst = coop_arg_buf_u32(c, 0);
  coop_lbuf_u32 sc = coop_scratch_u32(c);
  coop_u32 n = coop_arg_u32(c, 1), m = coop_arg_u32(c, 2);
  if (coop_group_id(c) != 0u || coop_local_id_c(c) != 0u) return;
  for (coop_u32 i = 0u; i < n; i++) coop_at(dst, i) = 7u;
  if (m) coop_at(sc, m) = 1u;
}
