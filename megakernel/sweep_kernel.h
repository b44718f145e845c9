/*
 * sweep_kernel.h: a cooperative sample kernel, used by coop-demo and by the
 * stress test (one source for both).
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
#ifndef COOP_SWEEP_KERNEL_H
#define COOP_SWEEP_KERNEL_H

static const char *coop_stopsweep_src =
    "struct stopsweep_state { uint round; };\n"
    "void stopsweep_init(struct coop_ctx *c, struct stopsweep_state *s) { s->round = 0u; }\n"
    "uint stopsweep_step(struct coop_ctx *c, struct stopsweep_state *s) {\n"
    "  global uint *data = (global uint *)coop_arg_buf(c, 0);\n"
    "  uint n = coop_arg_u32(c, 1);\n"
    "  global atomic_uint *ctl = (global atomic_uint *)coop_arg_buf(c, 2);\n"
    "  local uint *b = (local uint *)coop_scratch(c);\n"
    "  if (coop_local_id_c(c) == 0u) {\n"
    "    uint stop = atomic_load_explicit(&ctl[1], memory_order_relaxed, memory_scope_device);\n"
    "    if (stop == 0u && coop_group_id(c) == 0u &&\n"
    "        atomic_load_explicit(&ctl[0], memory_order_relaxed, memory_scope_device) != 0u) {\n"
    "      stop = s->round + 2u;\n"
    "      atomic_store_explicit(&ctl[1], stop, memory_order_relaxed, memory_scope_device);\n"
    "    }\n"
    "    b[0] = stop;\n"
    "    if (coop_group_id(c) == 0u)\n"
    "      atomic_store_explicit(&ctl[2], coop_num_groups(c), memory_order_relaxed, "
    "memory_scope_device);\n"
    "  }\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  uint stop = b[0];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (stop != 0u && s->round == stop) return COOP_DONE;\n"
    "  for (uint i = coop_global_id(c); i < n; i += coop_global_size(c)) data[i] += 1u;\n"
    "  s->round++;\n"
    "  return COOP_RESIZING_BARRIER;\n"
    "}\n";

#endif /* COOP_SWEEP_KERNEL_H */
