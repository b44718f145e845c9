//@coop name=nop kind=noncooperative args=out:buf,tag:u32
/*
 * nop.cl: the dispatch probe of coop-bench-rtt --nop, a task that does
 * next to nothing: thread 0 of each workgroup stores the tag at word
 * 16 x its workgroup id of out (through the view: a short out costs a
 * fault, never a stray write), so that the client can tell that all K
 * workgroups ran. The render, by contrast, spends about 17 us of the
 * GPU's time on 8 x 8 pixels; this measures the path alone, as
 * coop-bench-micro's micro_nop does in process. Not installed: a coopd
 * that should serve it names this directory in --kernels.
 * args: out, tag
 */
void nop(struct coop_ctx *c) {
  coop_buf_u32 o = coop_arg_buf_u32(c, 0);
  if (coop_local_id_c(c) == 0u) coop_at(o, 16u * coop_group_id(c)) = coop_arg_u32(c, 1);
}
