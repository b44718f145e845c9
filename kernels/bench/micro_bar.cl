/*
 * micro_bar.cl (coop-bench-micro): barrier and primitive latency.
 *
 * Cooperative: R rounds of a tiny step (a store per group) and the primitive
 * named by args[3]. Workgroup 0 stamps the device clock at the top of every
 * step (t[0..R]); a group that sees M != args[4] counts it in seen[] word 1.
 * args: t, seen, R, primitive, M.
 */
struct micro_bar_state {
  coop_u32 round;
};
void micro_bar_init(struct coop_ctx *c, struct micro_bar_state *s) { s->round = 0u; }
coop_u32 micro_bar_step(struct coop_ctx *c, struct micro_bar_state *s) {
  COOP_GLOBAL coop_u64 *t = (COOP_GLOBAL coop_u64 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_u32 *seen = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 1);
  coop_u32 rounds = coop_arg_u32(c, 2), prim = coop_arg_u32(c, 3);
  coop_u32 r = s->round, vid = coop_group_id(c);
  if (coop_local_id_c(c) == 0u) {
    if (vid == 0u) t[r] = coop_clock();
    seen[16u * vid] = r + 1u;
    if (coop_num_groups(c) != coop_arg_u32(c, 4)) seen[16u * vid + 1u] += 1u;
  }
  if (r == rounds) return COOP_DONE;
  s->round = r + 1u;
  return prim;
}
