/*
 * matmul.cl: the graphics-like task of 004 Sec. 5.4, non-cooperative.
 * c = a x b for n x n floats, rows split over the task's K workgroups,
 * computed `reps` times (the same result each time) so that its duration
 * can be calibrated to a target on the running device.
 * args: a (in), b (in), c (out), n, reps. Every access goes through a
 * view: an n too large for the buffers faults the task instead of reaching
 * other memory. A non-cooperative kernel is never preempted, so, like
 * render, a cancelled matmul returns within a rep or a row (workgroups
 * without a row still run every rep: they check too).
 */
void matmul(struct coop_ctx *c) {
  coop_buf_f32 a = coop_arg_buf_f32(c, 0), b = coop_arg_buf_f32(c, 1), o = coop_arg_buf_f32(c, 2);
  coop_u32 n = coop_arg_u32(c, 3), reps = coop_arg_u32(c, 4);
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
