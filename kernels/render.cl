//@coop name=render kind=noncooperative args=a:buf<f32>,b:buf<f32>,c:buf<f32>,n:u32,reps:u32
//@coop require n*n*4 <= len(a)
//@coop require n*n*4 <= len(b)
//@coop require n*n*4 <= len(c)
/*
 * render.cl: the graphics-like task of 004 Sec. 5.4, a matrix product.
 * c = a x b for n x n floats, rows split over the task's K workgroups,
 * computed `reps` times (same result each time) so that a client can scale
 * one task's execution time to its class (coopctl render calibrates reps).
 * args: a (in), b (in), c (out), n, reps. The require lines are checked at
 * admission; the views keep every access inside the buffers regardless.
 */
void render(struct coop_ctx *c) {
  coop_buf_f32 a = coop_arg_buf_f32(c, 0), b = coop_arg_buf_f32(c, 1), o = coop_arg_buf_f32(c, 2);
  coop_u32 n = coop_arg_u32(c, 3), reps = coop_arg_u32(c, 4);
  /* A cancelled render returns within a rep or a row: reps is the client's,
   * and a non-cooperative kernel cannot otherwise be stopped (coopd would
   * restart the device to get its workgroups back). Workgroups without a
   * row still run every rep: they check too. */
  for (coop_u32 rep = 0u; rep < reps; rep++) {
    if (coop_cancel_requested(c)) return;
    for (coop_u32 r = coop_group_id(c); r < n; r += coop_num_groups(c)) {
      if (coop_cancel_requested(c)) return;
      for (coop_u32 j = coop_local_id_c(c); j < n; j += coop_local_size_c(c)) {
        float acc = 0.0f;
        for (coop_u32 k = 0u; k < n; k++)
          acc += coop_at(a, (coop_u64)r * n + k) * coop_at(b, (coop_u64)k * n + j);
        coop_at(o, (coop_u64)r * n + j) = acc;
      }
    }
  }
}
