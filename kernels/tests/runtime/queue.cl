/*
 * queue.cl (tests only: test_runtime and emit_source register it in process).
 *
 * Cooperative work queue: every step takes one ticket and marks item
 * done[ticket] (no item may be lost or done twice), then offers a kill and
 * asks for a fork. A group whose state names another owner was just forked
 * and checks what it was given. Checks, counted into err[]:
 *   err[0]: a group saw vid >= M (ids not contiguous, or kill order broken)
 *   err[1]: M > N
 *   err[2]: a forked group's threads did not all get thread 0's state
 *   err[3]: transmitted signature wrong (state not transmitted whole)
 *   err[4]: forked groups seen (count), err[5]: steps by group 0,
 *   err[6]: times group 0 reached the end (1: it was never killed)
 * When the items run out the kernel keeps offering kills and forks until the
 * host sets ctl[0], so that a test can wait for churn to have happened.
 * args: done, err, nitems, N, ctl
 */
struct queue_state {
  coop_u32 sig;
  coop_u32 owner;
  coop_u32 lidmark;
  coop_u32 taken;
};
void queue_init(struct coop_ctx *c, struct queue_state *s) {
  s->sig = 0u;
  s->owner = coop_group_id(c);
  s->lidmark = coop_local_id_c(c);
  s->taken = 0u;
}
coop_u32 queue_step(struct coop_ctx *c, struct queue_state *s) {
  COOP_GLOBAL coop_atomic_u32 *done = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);
  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 1);
  coop_u32 nitems = coop_arg_u32(c, 2), n = coop_arg_u32(c, 3);
  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);
  COOP_LOCAL coop_u32 *tk = (COOP_LOCAL coop_u32 *)coop_scratch(c);
  coop_u32 m = coop_num_groups(c), lid = coop_local_id_c(c), vid = coop_group_id(c);
  if (s->owner != vid) {
    if (s->lidmark != 0u) coop_fadd(&err[2], 1u);
    if (lid == 0u &&
        (!coop_is_forked(c) || s->sig != ((s->owner * 2654435761u ^ s->taken) + 0x9e3779b9u)))
      coop_fadd(&err[3], 1u);
    if (lid == 0u) coop_fadd(&err[4], 1u);
  }
  if (lid == 0u) {
    if (vid >= m) coop_fadd(&err[0], 1u);
    if (m > n) coop_fadd(&err[1], 1u);
    if (vid == 0u) coop_fadd(&err[5], 1u);
    tk[0] = coop_fadd(&done[nitems], 1u);
    tk[1] = coop_ld_rlx(&ctl[0]);
  }
  coop_wg_barrier();
  coop_u32 t = tk[0], stop = tk[1];
  coop_wg_barrier();
  s->owner = vid;
  s->lidmark = lid;
  if (t >= nitems && !stop) {
    s->sig = (vid * 2654435761u ^ s->taken) + 0x9e3779b9u;
    return COOP_OFFER_KILL | COOP_REQUEST_FORK;
  }
  if (t >= nitems && vid == 0u && lid == 0u) coop_fadd(&err[6], 1u);
  if (t >= nitems) return COOP_DONE;
  if (lid == 0u) coop_fadd(&done[t], 1u);
  for (volatile coop_u32 k = 0; k < 2000u; k++) {
  }
  s->taken = t;
  s->sig = (vid * 2654435761u ^ t) + 0x9e3779b9u;
  return COOP_OFFER_KILL | COOP_REQUEST_FORK;
}
