//@coop name=oob kind=noncooperative args=src:buf,dst:buf,n:u32
/*
 * oob.cl (tests only): dst[i] = src[i] + 1 for i < n, through the
 * bounds-checked views and with no require rule, so that a client's n can
 * point past either buffer: the isolation tests check that such a job fails
 * with EFAULT and that no other job's buffer is read or written.
 * args: src (in), dst (out), n
 */
void oob(struct coop_ctx *c) {
  coop_buf_u32 src = coop_arg_buf_u32(c, 0), dst = coop_arg_buf_u32(c, 1);
  coop_u32 n = coop_arg_u32(c, 2);
  for (coop_u32 i = coop_group_id(c) * coop_local_size_c(c) + coop_local_id_c(c); i < n;
       i += coop_num_groups(c) * coop_local_size_c(c))
    coop_at(dst, i) = coop_at(src, i) + 1u;
}
