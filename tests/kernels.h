/* kernels.h: purpose-built test kernels, one per rule of 004 Sec. 3.1. Each
 * records what happened into buffers the test then checks on the host. */
#ifndef COOP_TEST_KERNELS_H
#define COOP_TEST_KERNELS_H

/* Non-cooperative: each of the K groups marks itself and the M it saw. */
static const char *k_ids =
    "void ids(struct coop_ctx *c) {\n"
    "  global atomic_uint *o = (global atomic_uint *)coop_arg_buf(c, 0);\n"
    "  if (coop_local_id_c(c) == 0u) {\n"
    "    atomic_fetch_add_explicit(&o[2u * coop_group_id(c)], 1u, memory_order_relaxed,"
    " memory_scope_device);\n"
    "    atomic_store_explicit(&o[2u * coop_group_id(c) + 1u], coop_num_groups(c),"
    " memory_order_relaxed, memory_scope_device);\n"
    "  }\n"
    "}\n";

/* Cooperative work queue: every step takes one ticket and marks item
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
 * args: done, err, nitems, N, ctl */
static const char *k_queue =
    "struct queue_state { uint sig; uint owner; uint lidmark; uint taken; };\n"
    "void queue_init(struct coop_ctx *c, struct queue_state *s) {\n"
    "  s->sig = 0u; s->owner = coop_group_id(c); s->lidmark = coop_local_id_c(c); s->taken = 0u;\n"
    "}\n"
    "uint queue_step(struct coop_ctx *c, struct queue_state *s) {\n"
    "  global atomic_uint *done = (global atomic_uint *)coop_arg_buf(c, 0);\n"
    "  global atomic_uint *err = (global atomic_uint *)coop_arg_buf(c, 1);\n"
    "  uint nitems = coop_arg_u32(c, 2), n = coop_arg_u32(c, 3);\n"
    "  global atomic_uint *ctl = (global atomic_uint *)coop_arg_buf(c, 4);\n"
    "  local uint *tk = (local uint *)coop_scratch(c);\n"
    "  uint m = coop_num_groups(c), lid = coop_local_id_c(c), vid = coop_group_id(c);\n"
    "  if (s->owner != vid) {\n" /* a state from another group: we were just forked */
    "    if (s->lidmark != 0u) atomic_fetch_add_explicit(&err[2], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    if (lid == 0u && (!coop_is_forked(c) || s->sig != ((s->owner * 2654435761u ^ s->taken) + "
    "0x9e3779b9u)))\n"
    "      atomic_fetch_add_explicit(&err[3], 1u, memory_order_relaxed, memory_scope_device);\n"
    "    if (lid == 0u) atomic_fetch_add_explicit(&err[4], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "  }\n"
    "  if (lid == 0u) {\n"
    "    if (vid >= m) atomic_fetch_add_explicit(&err[0], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    if (m > n) atomic_fetch_add_explicit(&err[1], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    if (vid == 0u) atomic_fetch_add_explicit(&err[5], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    tk[0] = atomic_fetch_add_explicit(&done[nitems], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    tk[1] = atomic_load_explicit(&ctl[0], memory_order_relaxed, memory_scope_device);\n"
    "  }\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  uint t = tk[0], stop = tk[1];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  s->owner = vid;\n"
    "  s->lidmark = lid;\n"
    "  if (t >= nitems && !stop) {\n" /* idle until stopped: sign the state as ours */
    "    s->sig = (vid * 2654435761u ^ s->taken) + 0x9e3779b9u;\n"
    "    return COOP_OFFER_KILL | COOP_REQUEST_FORK;\n"
    "  }\n"
    "  if (t >= nitems && vid == 0u && lid == 0u)\n"
    "    atomic_fetch_add_explicit(&err[6], 1u, memory_order_relaxed, memory_scope_device);\n"
    "  if (t >= nitems) return COOP_DONE;\n"
    "  if (lid == 0u) atomic_fetch_add_explicit(&done[t], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "  for (volatile uint k = 0; k < 2000u; k++) { }\n"
    "  s->taken = t;\n"
    "  s->sig = (vid * 2654435761u ^ t) + 0x9e3779b9u;\n"
    "  return COOP_OFFER_KILL | COOP_REQUEST_FORK;\n"
    "}\n";

/* Cooperative sweep with resizing barriers: round r adds 1 to every element,
 * the elements split by global id over the current M. Exact coverage needs
 * contiguous ids and M stable inside each resizing-barrier interval.
 *   err[0]: M changed inside a step (an interval)
 *   err[1]: group id >= M
 *   err[2]: the groups counted in interval r differ from the M they saw
 * args: data, n, rounds, err, cnt (per round) */
static const char *k_sweep =
    "struct sweep_state { uint round; };\n"
    "void sweep_init(struct coop_ctx *c, struct sweep_state *s) { s->round = 0u; }\n"
    "uint sweep_step(struct coop_ctx *c, struct sweep_state *s) {\n"
    "  global uint *data = (global uint *)coop_arg_buf(c, 0);\n"
    "  uint n = coop_arg_u32(c, 1), rounds = coop_arg_u32(c, 2);\n"
    "  global atomic_uint *err = (global atomic_uint *)coop_arg_buf(c, 3);\n"
    "  global atomic_uint *cnt = (global atomic_uint *)coop_arg_buf(c, 4);\n"
    "  uint r = s->round, lid = coop_local_id_c(c);\n"
    "  if (r == rounds) return COOP_DONE;\n"
    "  uint m0 = coop_num_groups(c);\n"
    "  if (lid == 0u && r > 0u && coop_group_id(c) == 0u) {\n"
    "    uint got = atomic_load_explicit(&cnt[2u * (r - 1u)], memory_order_relaxed, "
    "memory_scope_device);\n"
    "    uint saw = atomic_load_explicit(&cnt[2u * (r - 1u) + 1u], memory_order_relaxed, "
    "memory_scope_device);\n"
    "    if (got != saw) atomic_fetch_add_explicit(&err[2], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "  }\n"
    "  for (uint i = coop_global_id(c); i < n; i += coop_global_size(c)) data[i] += 1u;\n"
    "  if (lid == 0u) {\n"
    "    if (coop_num_groups(c) != m0) atomic_fetch_add_explicit(&err[0], 1u, "
    "memory_order_relaxed, memory_scope_device);\n"
    "    if (coop_group_id(c) >= m0) atomic_fetch_add_explicit(&err[1], 1u, memory_order_relaxed, "
    "memory_scope_device);\n"
    "    atomic_fetch_add_explicit(&cnt[2u * r], 1u, memory_order_relaxed, memory_scope_device);\n"
    "    atomic_store_explicit(&cnt[2u * r + 1u], m0, memory_order_relaxed, memory_scope_device);\n"
    "  }\n"
    "  s->round = r + 1u;\n"
    "  return COOP_RESIZING_BARRIER;\n"
    "}\n";

/* Cooperative phases with a plain global barrier while groups come and go
 * (kills and forks at a separate step, as in 004 Fig. 3's two barriers):
 *   step 0: offer_kill | request_fork
 *   step 1: flag[vid] := phase;        global barrier
 *   step 2: every id < M has flag == phase, else err[0]++; global barrier
 * args: flags, err, phases */
static const char *k_phases =
    "struct phases_state { uint phase; uint step; };\n"
    "void phases_init(struct coop_ctx *c, struct phases_state *s) { s->phase = 1u; s->step = 1u; "
    "}\n"
    "uint phases_step(struct coop_ctx *c, struct phases_state *s) {\n"
    "  global atomic_uint *flag = (global atomic_uint *)coop_arg_buf(c, 0);\n"
    "  global atomic_uint *err = (global atomic_uint *)coop_arg_buf(c, 1);\n"
    "  uint phases = coop_arg_u32(c, 2), lid = coop_local_id_c(c);\n"
    "  if (s->step == 0u) { s->step = 1u; return COOP_OFFER_KILL | COOP_REQUEST_FORK; }\n"
    "  if (s->step == 1u) {\n"
    "    if (s->phase > phases) return COOP_DONE;\n"
    "    if (lid == 0u) atomic_store_explicit(&flag[coop_group_id(c)], s->phase, "
    "memory_order_relaxed, memory_scope_device);\n"
    "    s->step = 2u;\n"
    "    return COOP_GLOBAL_BARRIER;\n"
    "  }\n"
    "  uint m = coop_num_groups(c);\n"
    "  if (lid == 0u)\n"
    "    for (uint v = 0u; v < m; v++)\n"
    "      if (atomic_load_explicit(&flag[v], memory_order_relaxed, memory_scope_device) != "
    "s->phase)\n"
    "        atomic_fetch_add_explicit(&err[0], 1u, memory_order_relaxed, memory_scope_device);\n"
    "  s->phase++;\n"
    "  s->step = 0u;\n"
    "  return COOP_GLOBAL_BARRIER;\n"
    "}\n";

/* Cooperative kernel that never ends on its own: for shutdown tests. */
static const char *k_forever =
    "struct forever_state { uint x; };\n"
    "void forever_init(struct coop_ctx *c, struct forever_state *s) { s->x = 0u; }\n"
    "uint forever_step(struct coop_ctx *c, struct forever_state *s) {\n"
    "  s->x++;\n"
    "  return COOP_RESIZING_BARRIER;\n"
    "}\n";

#endif
