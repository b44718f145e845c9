//@coop name=rawpoke kind=noncooperative args=dst:buf,n:u32
/*
 * rawpoke.cl (tests only): writes 0xfeedface to dst[0..n) through the raw,
 * unchecked coop_arg_buf, as a kernel written without views would: an n past
 * the buffer overwrites the arena's guard zone after it, which coopd finds
 * when the job ends (the job fails with EFAULT, the log names it).
 * args: dst (out), n
 */
void rawpoke(struct coop_ctx *c) {
  COOP_GLOBAL coop_u32 *dst = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  coop_u32 n = coop_arg_u32(c, 1);
  if (coop_group_id(c) == 0u)
    for (coop_u32 i = coop_local_id_c(c); i < n; i += coop_local_size_c(c)) dst[i] = 0xfeedfaceu;
}
