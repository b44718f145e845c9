/*
 * render.cl: coop-demo's non-cooperative, graphics-like task.
 *
 * C = A x B for n x n floats, rows split over the task's K workgroups.
 * Registered name: "render". args: a, b, c, n.
 */
void render(struct coop_ctx *c) {
  COOP_GLOBAL const float *a = (COOP_GLOBAL const float *)coop_arg_buf(c, 0);
  COOP_GLOBAL const float *b = (COOP_GLOBAL const float *)coop_arg_buf(c, 1);
  COOP_GLOBAL float *o = (COOP_GLOBAL float *)coop_arg_buf(c, 2);
  coop_u32 n = coop_arg_u32(c, 3);
  for (coop_u32 r = coop_group_id(c); r < n; r += coop_num_groups(c))
    for (coop_u32 j = coop_local_id_c(c); j < n; j += coop_local_size_c(c)) {
      float acc = 0.0f;
      for (coop_u32 k = 0; k < n; k++) acc += a[r * n + k] * b[k * n + j];
      o[r * n + j] = acc;
    }
}
