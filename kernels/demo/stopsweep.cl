/*
 * stopsweep.cl: a cooperative sample kernel, used by coop-demo and by the
 * runtime's stress test (one source for both).
 *
 * Round after round, it adds 1 to every element of data[n], the elements
 * split by global id over the current workgroups, with a resizing barrier
 * after each round where the scheduler may take or give back workgroups.
 * Exact coverage (every element == rounds) needs contiguous ids and M stable
 * inside each resizing-barrier interval.
 *
 * It stops when asked: on ctl[0] != 0, workgroup 0 names a stop round two
 * ahead in ctl[1]; a resizing barrier lies between, so every workgroup sees
 * it by that round and all stop after the same one. Thread 0 reads ctl[1]
 * for its group, because a step's return value must be uniform.
 *
 * Workgroup 0 also publishes the M of each round in ctl[2], so a host can
 * watch the kernel shrink and grow back.
 *
 * Registered name: "stopsweep". args: data, n, ctl[3].
 */
struct stopsweep_state {
  coop_u32 round;
};
void stopsweep_init(struct coop_ctx *c, struct stopsweep_state *s) { s->round = 0u; }
coop_u32 stopsweep_step(struct coop_ctx *c, struct stopsweep_state *s) {
  COOP_GLOBAL coop_u32 *data = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  coop_u32 n = coop_arg_u32(c, 1);
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 2);
  COOP_LOCAL coop_u32 *b = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  if (coop_local_id_c(c) == 0u) {
    coop_u32 stop = coop_ld_rlx(&ctl[1]);
    if (stop == 0u && coop_group_id(c) == 0u && coop_ld_rlx(&ctl[0]) != 0u) {
      stop = s->round + 2u;
      coop_st_rlx(&ctl[1], stop);
    }
    b[0] = stop;
    if (coop_group_id(c) == 0u) coop_st_rlx(&ctl[2], coop_num_groups(c));
  }
  coop_wg_barrier();
  coop_u32 stop = b[0];
  coop_wg_barrier();
  if (stop != 0u && s->round == stop) return COOP_DONE;
  for (coop_u32 i = coop_global_id(c); i < n; i += coop_global_size(c)) data[i] += 1u;
  s->round++;
  return COOP_RESIZING_BARRIER;
}
