/*
 * api.h: what a kernel written for coop sees (see docs/kernels.md).
 *
 * A non-cooperative kernel NAME is one function, run once by each of its K
 * workgroups:
 *     void NAME(struct coop_ctx *c);
 *
 * A cooperative kernel NAME is a step function over an explicit transmitted
 * state (the paper's transmit-annotated variables, gathered in one struct):
 *     struct NAME_state { ... };              at most COOP_TRANSMIT_BYTES
 *     void NAME_init(struct coop_ctx *c, struct NAME_state *s);
 *     coop_u32 NAME_step(struct coop_ctx *c, struct NAME_state *s);
 * The runtime calls init once in each initial workgroup, then step until a
 * step returns COOP_DONE. A step returns the primitive to execute at its end:
 * COOP_OFFER_KILL, COOP_REQUEST_FORK (both may be or-ed: kill is offered
 * first), COOP_GLOBAL_BARRIER or COOP_RESIZING_BARRIER, or COOP_CONTINUE for
 * none. Workgroups forked by request_fork or a resizing barrier start right
 * after that primitive, that is at the next step, with the state of thread 0
 * of the forking workgroup (workgroup 0 for a resizing barrier). Because the
 * primitives sit between steps, the step function and everything it calls
 * are ordinary functions: no jumps into loop bodies, no restriction to the
 * entry function. coop_global_barrier() may also be called directly from
 * any depth, by all workgroups (a kernel-level function).
 */
#ifndef COOP_API_H
#define COOP_API_H

#define COOP_CONTINUE 0u
#define COOP_DONE 1u
#define COOP_OFFER_KILL 2u
#define COOP_REQUEST_FORK 4u
#define COOP_GLOBAL_BARRIER 8u
#define COOP_RESIZING_BARRIER 16u

#define COOP_SCRATCH_BYTES 4096

typedef unsigned char coop_u8;

/* Workgroup-local state of the runtime: broadcasts from thread 0, and the
 * scratch memory kernels may use (OpenCL allows local declarations only in
 * the kernel entry function, which is the megakernel's). */
struct coop_wgl {
  coop_u32 cmd, chan, vid, forked, decision, pad;
  coop_u64 scratch[COOP_SCRATCH_BYTES / 8];
};

struct coop_ctx {
  COOP_GLOBAL struct coop_dev *dev;
  COOP_GLOBAL struct coop_chan *ch;
  COOP_GLOBAL coop_u8 *arena;
  COOP_LOCAL struct coop_wgl *wl;
  COOP_GLOBAL struct coop_worker *self;
  coop_u32 pid; /* participant id of the hardware workgroup */
  coop_u32 vid; /* the kernel's view: group id */
  coop_u32 lid, lsize;
  coop_u32 forked;
  coop_u32 left; /* 1 once killed or cancelled: the workgroup must return */
};

/* Cooperative meanings of the OpenCL work-item functions (004 Sec. 3.1):
 * num_groups is M, the current active count; stable inside a resizing
 * barrier interval when the kernel uses only resizing barriers. */
COOP_FN coop_u32 coop_group_id(const struct coop_ctx *c) { return c->vid; }
COOP_FN coop_u32 coop_num_groups(const struct coop_ctx *c) { return coop_ld_acq(&c->ch->m); }
COOP_FN coop_u32 coop_local_id_c(const struct coop_ctx *c) { return c->lid; }
COOP_FN coop_u32 coop_local_size_c(const struct coop_ctx *c) { return c->lsize; }
COOP_FN coop_u32 coop_global_id(const struct coop_ctx *c) { return c->vid * c->lsize + c->lid; }
COOP_FN coop_u32 coop_global_size(const struct coop_ctx *c) {
  return coop_num_groups(c) * c->lsize;
}
/* The paper's query(): how many workgroups the scheduler wants back. */
COOP_FN coop_u32 coop_query(const struct coop_ctx *c) { return coop_ld_acq(&c->ch->want_kill); }
COOP_FN coop_u32 coop_is_forked(const struct coop_ctx *c) { return c->forked; }

/* Arguments: 64-bit slots; buffers travel as offsets into the arena, so the
 * same value means the same buffer on every backend. */
COOP_FN coop_u64 coop_arg_u64(const struct coop_ctx *c, coop_u32 i) { return c->ch->args[i]; }
COOP_FN coop_u32 coop_arg_u32(const struct coop_ctx *c, coop_u32 i) {
  return (coop_u32)c->ch->args[i];
}
COOP_FN coop_i32 coop_arg_i32(const struct coop_ctx *c, coop_u32 i) {
  return (coop_i32)(coop_u32)c->ch->args[i];
}
COOP_FN COOP_GLOBAL void *coop_arg_buf(const struct coop_ctx *c, coop_u32 i) {
  return (COOP_GLOBAL void *)(c->arena + c->ch->args[i]);
}
COOP_FN COOP_LOCAL void *coop_scratch(const struct coop_ctx *c) {
  return (COOP_LOCAL void *)c->wl->scratch;
}

#endif /* COOP_API_H */
