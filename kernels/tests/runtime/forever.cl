/*
 * forever.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Cooperative kernel that never ends on its own: for shutdown tests.
 */
struct forever_state {
  coop_u32 x;
};
void forever_init(struct coop_ctx *c, struct forever_state *s) { s->x = 0u; }
coop_u32 forever_step(struct coop_ctx *c, struct forever_state *s) {
  s->x++;
  return COOP_RESIZING_BARRIER;
}
