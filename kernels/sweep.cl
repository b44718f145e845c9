//@coop name=sweep kind=cooperative args=data:buf<u32>,n:u32,rounds:u32
//@coop require n*4 <= len(data)
/*
 * sweep.cl: a cooperative sample kernel. For `rounds` rounds it adds 1 to
 * every element of data[n] (a u32 array), the elements split by global id
 * over the current workgroups, with a resizing barrier after each round
 * where the scheduler may take workgroups for other tasks or give them back.
 * At the end every element has grown by exactly `rounds`: that needs
 * contiguous ids and M stable between resizing barriers (004 Sec. 3.2).
 * A cancelled round leaves at its barrier (coop_poll_cancel), however
 * large n is.
 * args: data (inout), n, rounds
 */
struct sweep_state {
  coop_u32 round;
};

void sweep_init(struct coop_ctx *c, struct sweep_state *s) { s->round = 0u; }

coop_u32 sweep_step(struct coop_ctx *c, struct sweep_state *s) {
  coop_buf_u32 data = coop_arg_buf_u32(c, 0);
  coop_u32 n = coop_arg_u32(c, 1), rounds = coop_arg_u32(c, 2);
  if (s->round == rounds) return COOP_DONE;
  coop_u32 work = 0u;
  for (coop_u32 i = coop_global_id(c); i < n; i += coop_global_size(c)) {
    if (coop_poll_cancel(c, &work, 1u)) break;
    coop_at(data, i) += 1u;
  }
  s->round++;
  return COOP_RESIZING_BARRIER;
}
