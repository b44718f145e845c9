/*
 * scalars.cl (tests only: test_runtime registers it in process).
 *
 * The typed scalar accessors (docs/kernels.md, "Arguments"): an f32, an
 * i64 and an f64 read back as integers a test can check exactly.
 * args: dst, f32, i64, f64. dst[0] = f32 * 4, dst[1] and dst[2] = the
 * i64's high and low halves (its sign kept by the shift), dst[3] = f64 * 8,
 * dst[4] = 1 where the device has doubles (COOP_HAS_F64), else 0.
 */
void scalars(struct coop_ctx *c) {
  coop_buf_u32 dst = coop_arg_buf_u32(c, 0);
  if (coop_group_id(c) != 0u || coop_local_id_c(c) != 0u) return;
  coop_i64 i = coop_arg_i64(c, 2);
  coop_at(dst, 0) = (coop_u32)(coop_i32)(coop_arg_f32(c, 1) * 4.0f);
  coop_at(dst, 1) = (coop_u32)(i >> 32);
  coop_at(dst, 2) = (coop_u32)i;
#if COOP_HAS_F64
  coop_at(dst, 3) = (coop_u32)(coop_i32)(coop_arg_f64(c, 3) * 8.0);
  coop_at(dst, 4) = 1u;
#endif
}
