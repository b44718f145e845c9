//@coop name=hog kind=noncooperative args=out:buf,kticks:u32
/*
 * hog.cl (tests only): a non-cooperative kernel that busy-waits kticks x 1024
 * ticks of the device clock and never polls its cancellation, as a kernel
 * written without coop_cancel_requested would: cancelled, it keeps its
 * workgroups, and the device-process tests check that coopd kills and
 * restarts the device rather than losing them. args: out (a u32), kticks
 */
void hog(struct coop_ctx *c) {
  coop_buf_atomic_u32 out = coop_arg_buf_atomic_u32(c, 0);
  coop_u64 ticks = COOP_HAVE_CLOCK ? (coop_u64)coop_arg_u32(c, 1) << 10 : 0u;
  coop_u64 t0 = coop_clock();
  coop_u32 x = coop_group_id(c) + 1u;
  while (coop_clock() - t0 < ticks) x = x * 1664525u + 1013904223u;
  coop_fadd(coop_ptr(out, 0), x);
}
