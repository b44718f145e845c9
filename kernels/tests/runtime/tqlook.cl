/*
 * tqlook.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Non-cooperative, one group: ROUNDS pops through the workgroup's look at
 * the task queues (device/taskqueue.cl: coop_tq_look, coop_tq_first,
 * coop_tq_pop_or_steal_from, or with how 1 coop_tq_pop_or_steal_looked).
 * Round r stores the offset the look found (out[2r], nq: none) and the
 * task popped (out[2r + 1]).
 * args: qctl, items, out, nq, qcap, self, outstanding, rounds, how
 */
void tqlook(struct coop_ctx *c) {
  coop_buf_atomic_u32 qctl = coop_arg_buf_atomic_u32(c, 0);
  coop_buf_u32 items = coop_arg_buf_u32(c, 1), out = coop_arg_buf_u32(c, 2);
  coop_u32 nq = coop_arg_u32(c, 3), qcap = coop_arg_u32(c, 4), self = coop_arg_u32(c, 5);
  coop_buf_atomic_u32 outstanding = coop_arg_buf_atomic_u32(c, 6);
  coop_u32 rounds = coop_arg_u32(c, 7), how = coop_arg_u32(c, 8), lid = coop_local_id_c(c),
           lsize = coop_local_size_c(c);
  coop_lbuf_u32 look;
  coop_sub(look, coop_scratch_u32(c), 0u, COOP_TQ_LOOKERS);
  for (coop_u32 r = 0u; r < rounds; r++) {
    coop_tq_look(qctl, nq, self, lid, lsize, look);
    coop_wg_barrier();
    if (lid == 0u) {
      coop_u32 from = coop_tq_first(look, nq, lsize);
      coop_at(out, 2u * r) = from;
      coop_at(out, 2u * r + 1u) =
          how ? coop_tq_pop_or_steal_looked(c, qctl, outstanding, items, nq, qcap, self, look,
                                            lsize)
              : coop_tq_pop_or_steal_from(c, qctl, outstanding, items, nq, qcap, self, from);
    }
    coop_wg_barrier(); /* the pop's queue words before the next look */
  }
}
