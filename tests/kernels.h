/* kernels.h: purpose-built test kernels, one per rule of 004 Sec. 3.1. Each
 * records what happened into buffers the test then checks on the host. */
#ifndef COOP_TEST_KERNELS_H
#define COOP_TEST_KERNELS_H

/* Non-cooperative: each of the K groups marks itself and the M it saw. */
static const char *k_ids =
    "void ids(struct coop_ctx *c) {\n"
    "  COOP_GLOBAL coop_atomic_u32 *o = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);\n"
    "  if (coop_local_id_c(c) == 0u) {\n"
    "    coop_fadd(&o[2u * coop_group_id(c)], 1u);\n"
    "    coop_st_rlx(&o[2u * coop_group_id(c) + 1u], coop_num_groups(c));\n"
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
    "struct queue_state { coop_u32 sig; coop_u32 owner; coop_u32 lidmark; coop_u32 taken; };\n"
    "void queue_init(struct coop_ctx *c, struct queue_state *s) {\n"
    "  s->sig = 0u; s->owner = coop_group_id(c); s->lidmark = coop_local_id_c(c); s->taken = 0u;\n"
    "}\n"
    "coop_u32 queue_step(struct coop_ctx *c, struct queue_state *s) {\n"
    "  COOP_GLOBAL coop_atomic_u32 *done = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);\n"
    "  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 1);\n"
    "  coop_u32 nitems = coop_arg_u32(c, 2), n = coop_arg_u32(c, 3);\n"
    "  COOP_GLOBAL coop_atomic_u32 *ctl = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);\n"
    "  COOP_LOCAL coop_u32 *tk = (COOP_LOCAL coop_u32 *)coop_scratch(c);\n"
    "  coop_u32 m = coop_num_groups(c), lid = coop_local_id_c(c), vid = coop_group_id(c);\n"
    "  if (s->owner != vid) {\n"
    "    if (s->lidmark != 0u) coop_fadd(&err[2], 1u);\n"
    "    if (lid == 0u && (!coop_is_forked(c) || s->sig != ((s->owner * 2654435761u ^ s->taken) + "
    "0x9e3779b9u)))\n"
    "      coop_fadd(&err[3], 1u);\n"
    "    if (lid == 0u) coop_fadd(&err[4], 1u);\n"
    "  }\n"
    "  if (lid == 0u) {\n"
    "    if (vid >= m) coop_fadd(&err[0], 1u);\n"
    "    if (m > n) coop_fadd(&err[1], 1u);\n"
    "    if (vid == 0u) coop_fadd(&err[5], 1u);\n"
    "    tk[0] = coop_fadd(&done[nitems], 1u);\n"
    "    tk[1] = coop_ld_rlx(&ctl[0]);\n"
    "  }\n"
    "  coop_wg_barrier();\n"
    "  coop_u32 t = tk[0], stop = tk[1];\n"
    "  coop_wg_barrier();\n"
    "  s->owner = vid;\n"
    "  s->lidmark = lid;\n"
    "  if (t >= nitems && !stop) {\n"
    "    s->sig = (vid * 2654435761u ^ s->taken) + 0x9e3779b9u;\n"
    "    return COOP_OFFER_KILL | COOP_REQUEST_FORK;\n"
    "  }\n"
    "  if (t >= nitems && vid == 0u && lid == 0u)\n"
    "    coop_fadd(&err[6], 1u);\n"
    "  if (t >= nitems) return COOP_DONE;\n"
    "  if (lid == 0u) coop_fadd(&done[t], 1u);\n"
    "  for (volatile coop_u32 k = 0; k < 2000u; k++) { }\n"
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
    "struct sweep_state { coop_u32 round; };\n"
    "void sweep_init(struct coop_ctx *c, struct sweep_state *s) { s->round = 0u; }\n"
    "coop_u32 sweep_step(struct coop_ctx *c, struct sweep_state *s) {\n"
    "  COOP_GLOBAL coop_u32 *data = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);\n"
    "  coop_u32 n = coop_arg_u32(c, 1), rounds = coop_arg_u32(c, 2);\n"
    "  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 3);\n"
    "  COOP_GLOBAL coop_atomic_u32 *cnt = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 4);\n"
    "  coop_u32 r = s->round, lid = coop_local_id_c(c);\n"
    "  if (r == rounds) return COOP_DONE;\n"
    "  coop_u32 m0 = coop_num_groups(c);\n"
    "  if (lid == 0u && r > 0u && coop_group_id(c) == 0u) {\n"
    "    coop_u32 got = coop_ld_rlx(&cnt[2u * (r - 1u)]);\n"
    "    coop_u32 saw = coop_ld_rlx(&cnt[2u * (r - 1u) + 1u]);\n"
    "    if (got != saw) coop_fadd(&err[2], 1u);\n"
    "  }\n"
    "  for (coop_u32 i = coop_global_id(c); i < n; i += coop_global_size(c)) data[i] += 1u;\n"
    "  if (lid == 0u) {\n"
    "    if (coop_num_groups(c) != m0) coop_fadd(&err[0], 1u);\n"
    "    if (coop_group_id(c) >= m0) coop_fadd(&err[1], 1u);\n"
    "    coop_fadd(&cnt[2u * r], 1u);\n"
    "    coop_st_rlx(&cnt[2u * r + 1u], m0);\n"
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
    "struct phases_state { coop_u32 phase; coop_u32 step; };\n"
    "void phases_init(struct coop_ctx *c, struct phases_state *s) { s->phase = 1u; s->step = 1u; "
    "}\n"
    "coop_u32 phases_step(struct coop_ctx *c, struct phases_state *s) {\n"
    "  COOP_GLOBAL coop_atomic_u32 *flag = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 0);\n"
    "  COOP_GLOBAL coop_atomic_u32 *err = (COOP_GLOBAL coop_atomic_u32 *)coop_arg_buf(c, 1);\n"
    "  coop_u32 phases = coop_arg_u32(c, 2), lid = coop_local_id_c(c);\n"
    "  if (s->step == 0u) { s->step = 1u; return COOP_OFFER_KILL | COOP_REQUEST_FORK; }\n"
    "  if (s->step == 1u) {\n"
    "    if (s->phase > phases) return COOP_DONE;\n"
    "    if (lid == 0u) coop_st_rlx(&flag[coop_group_id(c)], s->phase);\n"
    "    s->step = 2u;\n"
    "    return COOP_GLOBAL_BARRIER;\n"
    "  }\n"
    "  coop_u32 m = coop_num_groups(c);\n"
    "  if (lid == 0u)\n"
    "    for (coop_u32 v = 0u; v < m; v++)\n"
    "      if (coop_ld_rlx(&flag[v]) != s->phase)\n"
    "        coop_fadd(&err[0], 1u);\n"
    "  s->phase++;\n"
    "  s->step = 0u;\n"
    "  return COOP_GLOBAL_BARRIER;\n"
    "}\n";

/* Cooperative kernel that never ends on its own: for shutdown tests. */
static const char *k_forever =
    "struct forever_state { coop_u32 x; };\n"
    "void forever_init(struct coop_ctx *c, struct forever_state *s) { s->x = 0u; }\n"
    "coop_u32 forever_step(struct coop_ctx *c, struct forever_state *s) {\n"
    "  s->x++;\n"
    "  return COOP_RESIZING_BARRIER;\n"
    "}\n";

/* Isolation (views and guard zones): dst[i] = 7 for i < n through a view,
 * and scratch[m] = 1 through a scratch view; rawpoke the same through the
 * raw pointer. args: dst, n, m. */
static const char *k_viewpoke =
    "void viewpoke(struct coop_ctx *c) {\n"
    "  coop_buf_u32 dst = coop_arg_buf_u32(c, 0);\n"
    "  coop_lbuf_u32 sc = coop_scratch_u32(c);\n"
    "  coop_u32 n = coop_arg_u32(c, 1), m = coop_arg_u32(c, 2);\n"
    "  if (coop_group_id(c) != 0u || coop_local_id_c(c) != 0u) return;\n"
    "  for (coop_u32 i = 0u; i < n; i++) coop_at(dst, i) = 7u;\n"
    "  if (m) coop_at(sc, m) = 1u;\n"
    "}\n";
static const char *k_rawpoke =
    "void rawpoke(struct coop_ctx *c) {\n"
    "  COOP_GLOBAL coop_u32 *dst = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);\n"
    "  coop_u32 n = coop_arg_u32(c, 1);\n"
    "  if (coop_group_id(c) != 0u || coop_local_id_c(c) != 0u) return;\n"
    "  for (coop_u32 i = 0u; i < n; i++) dst[i] = 7u;\n"
    "}\n";

#endif
