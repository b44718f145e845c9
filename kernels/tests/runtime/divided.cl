/*
 * divided.cl (tests only: test_runtime and emit_source register it in process).
 *
 * A step whose return differs between the threads of a workgroup, as it
 * does when they load, at different times, a word that a client writes
 * meanwhile (a device buffer written while its job runs). Thread 0's
 * return decides for the whole workgroup (docs/kernels.md, "Rules for a
 * step"). At step 1:
 *   mode 0: thread 0 asks for a global barrier, every other thread returns
 *           COOP_DONE: all go on, and each runs `steps` steps;
 *   mode 1: thread 0 returns COOP_DONE, every other thread asks for the
 *           barrier: all leave after step 1.
 * Every step writes the count of steps its thread has run to
 * out[global id].
 * args: out (a word per thread of the task), mode, steps
 */
struct divided_state {
  coop_u32 n;
};
void divided_init(struct coop_ctx *c, struct divided_state *s) {
  (void)c;
  s->n = 0u;
}
coop_u32 divided_step(struct coop_ctx *c, struct divided_state *s) {
  COOP_GLOBAL coop_u32 *out = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);
  coop_u32 mode = coop_arg_u32(c, 1), zero = coop_local_id_c(c) == 0u;
  s->n++;
  out[coop_global_id(c)] = s->n;
  if (s->n >= coop_arg_u32(c, 2)) return COOP_DONE;
  if (s->n == 1u && (mode == 0u ? !zero : zero)) return COOP_DONE;
  return COOP_GLOBAL_BARRIER;
}
