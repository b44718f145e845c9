/*
 * offerspin.cl (tests only: test_runtime registers it in process).
 *
 * Cooperative kernel that never ends on its own and offers a kill after
 * every step, with no barrier. Suspended, it saves its state after an
 * offer_kill, where no fork may start: its resume starts on workgroup 0
 * alone, not on every free worker (scheduler.cl, "Suspension").
 */
struct offerspin_state {
  coop_u32 x;
};
void offerspin_init(struct coop_ctx *c, struct offerspin_state *s) { s->x = 0u; }
coop_u32 offerspin_step(struct coop_ctx *c, struct offerspin_state *s) {
  s->x++;
  return COOP_OFFER_KILL;
}
