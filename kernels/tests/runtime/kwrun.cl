/*
 * kwrun.cl (tests only: test_runtime and emit_source register it in process).
 *
 * The kill cascade's take of the waiters below a kill, a word of their bits
 * at a time (device/primitives.cl, coop__kwait_take_run), on words of the
 * test's own: case i runs on words[w i], ..., words[w i + w - 1] from id
 * cases[2i] down, taking at most cases[2i + 1]; out[i] is how many it took.
 * Thread 0 of one group, the cases in turn.
 * args: words, cases, out, ncases, w
 */
void kwrun(struct coop_ctx *c) {
  COOP_GLOBAL coop_atomic_u32 *words = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  coop_buf_u32 cases = coop_arg_buf_u32(c, 1), out = coop_arg_buf_u32(c, 2);
  coop_u32 n = coop_arg_u32(c, 3), w = coop_arg_u32(c, 4);
  if (coop_local_id_c(c) != 0u) return;
  for (coop_u32 i = 0u; i < n; i++)
    coop_at(out, i) = coop__kwait_take_run(words + (coop_u64)w * i, coop_at(cases, 2u * i),
                                           coop_at(cases, 2u * i + 1u));
}
