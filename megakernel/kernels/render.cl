//@coop name=render kind=noncooperative args=buf,buf,buf,u32,u32
/*
 * render.cl: the graphics-like task of 004 Sec. 5.4, a matrix product.
 * c = a x b for n x n floats, rows split over the task's K workgroups,
 * computed `reps` times (same result each time) so that a client can scale
 * one task's execution time to its class (coopctl render calibrates reps).
 * args: a (in), b (in), c (out), n, reps
 */
void render(struct coop_ctx *c) {
  COOP_GLOBAL const float *a = (COOP_GLOBAL const float *)coop_arg_buf(c, 0);
  COOP_GLOBAL const float *b = (COOP_GLOBAL const float *)coop_arg_buf(c, 1);
  COOP_GLOBAL float *o = (COOP_GLOBAL float *)coop_arg_buf(c, 2);
  coop_u32 n = coop_arg_u32(c, 3), reps = coop_arg_u32(c, 4);
  for (coop_u32 rep = 0u; rep < reps; rep++)
    for (coop_u32 r = coop_group_id(c); r < n; r += coop_num_groups(c))
      for (coop_u32 j = coop_local_id_c(c); j < n; j += coop_local_size_c(c)) {
        float acc = 0.0f;
        for (coop_u32 k = 0u; k < n; k++) acc += a[r * n + k] * b[k * n + j];
        o[r * n + j] = acc;
      }
}
