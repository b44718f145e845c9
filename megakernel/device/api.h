//@needs dialect.h shared.h
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
#define COOP__PB_LEGS 5 /* COOP_PROF_BAR: the step loop's legs (primitives.cl) */
struct coop_wgl {
  /* decision: coop__bcast's two slots, used in turn */
  coop_u32 cmd, chan, vid, forked, decision[2];
  /* thread 0's (barrier.cl): the barrier episode it is in and the bases
   * of the next episodes on each count word; the master's count of the
   * episode and its resizing-barrier episodes; a hold or an offer to make
   * before the next arrival; the channel's n_max and query flag, copied at
   * the start (a load from the channel after a barrier's acquire fence
   * goes to L2); the suspension flag the master read at its last arrival;
   * the want_kill a slave of the query barrier read before its step's
   * workgroup barrier (coop__after_step) */
  coop_u32 gen, base[2], m_ep, resizes, hold_next, n_max, query, sus, want_pre;
  /* thread 0's: the device clock at its last offer_kill of a step without
   * a barrier, or at the task's start (0: no clock), for the kill
   * cascade's wait (primitives.cl) */
  coop_u64 t_offer;
#ifdef COOP_PROF_BAR
  /* thread 0's profile of the step loop (primitives.cl, COOP__PB) */
  coop_u64 pb_t, pb[COOP__PB_LEGS], pb_n, pb_t0, pb_c0;
#endif
#ifdef COOP_PROF_SUSPEND
  coop_u64 t_arrive; /* the master's: its last arrival (barrier.cl) */
#endif
  /* The task's arguments then lens, copied from sched.t_payload when the
   * workgroup takes the task (worker.cl, coop__next): read from device
   * memory, an argument cost a kernel two dependent L2 round trips
   * (ch->task, then the payload) after every barrier, whose acquire fence
   * empties the SM's L1 (docs/scheduler.md, "Arguments") */
  coop_u64 args[2 * COOP_MAX_ARGS];
  /* thread 0's copy of the kernel's state for a call out of line
   * (primitives.cl, "Calls out of line"; CUDA only) */
  coop_u64 st[COOP_TRANSMIT_BYTES / 8];
  coop_u64 scratch[COOP_SCRATCH_BYTES / 8];
  coop_u64 sink[2]; /* where an out-of-bounds scratch access lands (views below) */
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
  coop_u32 left;      /* 1 once killed or cancelled: the workgroup must return */
  coop_u32 suspended; /* 1 once workgroup 0 saved its state (scheduler.cl, "Suspension") */
  coop_u32 bslot;     /* coop__bcast's next slot of wl->decision */
#ifdef COOP_PROF_KILLS
  COOP_GLOBAL struct coop_mailbox *mb; /* the profile's slots (primitives.cl, coop__prof_top) */
#endif
};

/* Cooperative meanings of the OpenCL work-item functions (004 Sec. 3.1):
 * num_groups is M, the current active count; stable inside a resizing
 * barrier interval when the kernel uses only resizing barriers. Relaxed
 * (docs/scheduler.md, ch.m): kernels read it in loops, and on CUDA an
 * acquire load empties the SM's L1. */
COOP_FN coop_u32 coop_group_id(const struct coop_ctx *c) { return c->vid; }
COOP_FN coop_u32 coop_num_groups(const struct coop_ctx *c) { return coop_ld_rlx(&c->ch->m); }
COOP_FN coop_u32 coop_local_id_c(const struct coop_ctx *c) { return c->lid; }
COOP_FN coop_u32 coop_local_size_c(const struct coop_ctx *c) { return c->lsize; }
COOP_FN coop_u32 coop_global_id(const struct coop_ctx *c) { return c->vid * c->lsize + c->lid; }
COOP_FN coop_u32 coop_global_size(const struct coop_ctx *c) {
  return coop_num_groups(c) * c->lsize;
}
/* The paper's query(): how many workgroups the scheduler wants back. */
COOP_FN coop_u32 coop_query(const struct coop_ctx *c) { return coop_ld_rlx(&c->ch->want_kill); }
COOP_FN coop_u32 coop_is_forked(const struct coop_ctx *c) { return c->forked; }
/* 1 once the task was cancelled (its client, the watchdog, a stop). A
 * cooperative kernel leaves at its next primitive by itself; a
 * non-cooperative one cannot be preempted, so one whose running time a
 * client's scalar sets (render's reps) polls this and returns. Relaxed:
 * only promptness depends on it. */
COOP_FN coop_u32 coop_cancel_requested(const struct coop_ctx *c) {
  return coop_ld_rlx(&c->ch->cancel);
}

/* Long steps (docs/kernels.md, "Long steps"; docs/scheduler.md, "Kills
 * without a barrier"). A kernel without barriers gives workgroups back only
 * at offer_kill, so a gather waits for the steps the wanted workgroups are
 * in. coop_kill_wanted is 1 when this workgroup is one of those the
 * scheduler wants back now (want_kill of them, from id M-1 down; workgroup
 * 0 never): its next offer_kill will take it. A step that can put its
 * unfinished work back (a task on a queue) may end early on it. A hint: a
 * kill withdrawn makes a step end early for nothing, one read late makes
 * it run on to the next poll, never a wrong kill (coop__kill_locked decides
 * under the lock). Relaxed loads but M's, an acquire (below); only while a
 * kill is wanted.
 * COOP_YIELD_HINT=0 (COOP_DEVICE_DEFINES) answers 0 always. */
#ifndef COOP_YIELD_HINT
#define COOP_YIELD_HINT 1
#endif
COOP_FN coop_u32 coop_kill_wanted(const struct coop_ctx *c) {
#if COOP_YIELD_HINT
  if (c->vid == 0u || coop_ld_rlx(&c->ch->want_kill) == 0u) return 0u;
  /* a kill stores want_kill, then M with release (coop__kill_locked): M
   * acquired first, want_kill read after it is as new or newer, so a kill
   * read by halves only narrows the range (the old want_kill beside the
   * new M would name the workgroup below it) */
  coop_u32 m = coop_ld_acq(&c->ch->m), want = coop_ld_rlx(&c->ch->want_kill);
  return c->vid < m && c->vid + want >= m ? 1u : 0u;
#else
  (void)c;
  return 0u;
#endif
}

/* Cancellation inside a step (docs/kernels.md, "Cancellation inside a
 * step"). A loop whose trip count client data sets (a CSR edge range, a
 * worklist, a search) cannot wait for the step's primitive: a hostile
 * graph makes one step run for hours, and coopd would restart the device,
 * and with it every other user's job, to get the workgroups back. Such a
 * loop polls: coop_poll_cancel(c, &n, k) before k more iterations, n a
 * counter of the thread's (0 at the start; nested loops share one). It
 * loads the flag once the count reaches COOP_POLL_EVERY, so that few
 * iterations pass between two loads and a valid input pays an add and a
 * test. On 1 the caller leaves its loop and the step returns the
 * primitive it would have returned, where the workgroup leaves (its
 * results are discarded: the task ends CANCELLED). After a 1 the next call
 * loads again and answers 1 too, so an enclosing loop that polls with the
 * same counter leaves at its next iteration. The answer is the thread's:
 * threads may leave at different iterations, so it must not pick the
 * step's return value (that must be uniform).
 *
 * An inner loop with a cheap body polls once per chunk of at most
 * COOP_POLL_EVERY iterations (coop_poll_chunk gives the chunk's end), not
 * on every iteration: a test inside the loop slowed bfs's edge loop by
 * 40 % on PoCL, the chunked loop by nothing measurable. */
#ifndef COOP_POLL_EVERY
#define COOP_POLL_EVERY 1024u
#endif
/* Both polls: yield also answers 1 while coop_kill_wanted. */
COOP_FN coop_u32 coop__poll(const struct coop_ctx *c, coop_u32 *n, coop_u32 k, coop_u32 yield) {
  *n += k;
  if (*n < COOP_POLL_EVERY) return 0u;
  if (!coop_cancel_requested(c) && !(yield && coop_kill_wanted(c))) {
    *n = 0u;
    return 0u;
  }
  *n = COOP_POLL_EVERY; /* the next call loads again; the flag stays set */
  return 1u;
}
COOP_FN coop_u32 coop_poll_cancel(const struct coop_ctx *c, coop_u32 *n, coop_u32 k) {
  return coop__poll(c, n, k, 0u);
}
/* coop_poll_cancel that also answers 1 while coop_kill_wanted: for a loop
 * whose step can give its work back and end early. Once it answered 1 the
 * next call loads again (a withdrawn kill answers 0 there). */
COOP_FN coop_u32 coop_poll_yield(const struct coop_ctx *c, coop_u32 *n, coop_u32 k) {
  return coop__poll(c, n, k, 1u);
}
/* The end of the next chunk of a loop at i that runs to end (i < end). */
COOP_FN coop_u32 coop_poll_chunk(coop_u32 i, coop_u32 end) {
  return end - i > COOP_POLL_EVERY ? i + COOP_POLL_EVERY : end;
}

/* Arguments: 64-bit slots; buffers travel as offsets into the arena, so the
 * same value means the same buffer on every backend. Slot i < COOP_MAX_ARGS
 * is argument i, slot COOP_MAX_ARGS + i its length, read from the
 * workgroup's copy (wl->args). */
COOP_FN coop_u64 coop__arg(const struct coop_ctx *c, coop_u32 i) { return c->wl->args[i]; }
COOP_FN coop_u64 coop_arg_u64(const struct coop_ctx *c, coop_u32 i) { return coop__arg(c, i); }
COOP_FN coop_u32 coop_arg_u32(const struct coop_ctx *c, coop_u32 i) {
  return (coop_u32)coop__arg(c, i);
}
COOP_FN coop_i32 coop_arg_i32(const struct coop_ctx *c, coop_u32 i) {
  return (coop_i32)(coop_u32)coop__arg(c, i);
}
COOP_FN coop_i64 coop_arg_i64(const struct coop_ctx *c, coop_u32 i) {
  return (coop_i64)coop__arg(c, i);
}
/* An f32 travels as its bits in the slot's low half, an f64 as its bits
 * (coop_job_f32, coop_job_f64); doubles only where the device has them. */
COOP_FN float coop_arg_f32(const struct coop_ctx *c, coop_u32 i) {
  return coop_u2f((coop_u32)coop__arg(c, i));
}
#if COOP_HAS_F64
COOP_FN double coop_arg_f64(const struct coop_ctx *c, coop_u32 i) {
  return coop_u2d(coop__arg(c, i));
}
#endif
/* Unchecked: the raw address of buffer argument i. Shipped kernels never
 * use these two (ctest kernels_use_views, tests/kernels_use_views.cmake,
 * fails if one does):
 * they index through the views below, so that no client scalar or client
 * data can move an access outside the job's own buffers. */
COOP_FN COOP_GLOBAL void *coop_arg_buf(const struct coop_ctx *c, coop_u32 i) {
  return (COOP_GLOBAL void *)(c->arena + coop__arg(c, i));
}
COOP_FN COOP_LOCAL void *coop_scratch(const struct coop_ctx *c) {
  return (COOP_LOCAL void *)c->wl->scratch;
}

/*
 * Bounds-checked views (docs/kernels.md, "Buffers"). A view is a typed
 * pointer plus its length in elements, taken from the length the host gave
 * for that argument (coop_task_rec.lens: the job's buffer size, never a
 * client scalar). coop_at(v, i) is element i as an lvalue and coop_ptr(v, i)
 * its address (for atomics). An index outside [0, n) does not touch memory
 * outside the view: the access goes to a per-device sink (per-workgroup for
 * scratch), whose contents are garbage, and the kernel's channel records the
 * fault (relaxed store, device scope, before the workgroup's decrement of
 * alive; the kernel's last workgroup out reads it after its own decrement
 * and copies it into the record before the final state, and the host then
 * fails the job with EFAULT).
 * The kernel keeps running: it may loop or compute nonsense, but only over
 * its own buffers and the sink.
 *
 * coop_ptr evaluates v and i twice: pass side-effect-free expressions.
 * coop_sub(dst, v, off, cnt) narrows v to elements [off, off + cnt), clamped
 * to v: a sub-view can never be larger than its parent.
 */
#define COOP_FAULT_SCRATCH 0x100u /* coop_chan.fault for a scratch view */

COOP_FN void coop__oob(COOP_GLOBAL coop_atomic_u32 *fault, coop_u32 tag) {
  coop_st_rlx(fault, tag);
}

#define COOP__VIEW(NAME, SPACE, T)      \
  typedef struct {                      \
    SPACE T *p;                         \
    SPACE T *sink;                      \
    COOP_GLOBAL coop_atomic_u32 *fault; \
    coop_u64 n;                         \
    coop_u32 tag;                       \
  } NAME;
COOP__VIEW(coop_buf_u32, COOP_GLOBAL, coop_u32)
COOP__VIEW(coop_buf_i32, COOP_GLOBAL, coop_i32)
COOP__VIEW(coop_buf_f32, COOP_GLOBAL, float)
COOP__VIEW(coop_buf_u64, COOP_GLOBAL, coop_u64)
COOP__VIEW(coop_buf_atomic_u32, COOP_GLOBAL, coop_atomic_u32)
COOP__VIEW(coop_lbuf_u32, COOP_LOCAL, coop_u32)
COOP__VIEW(coop_lbuf_i32, COOP_LOCAL, coop_i32)

#define coop_ptr(v, i) \
  ((coop_u64)(i) < (v).n ? (v).p + (coop_u64)(i) : (coop__oob((v).fault, (v).tag), (v).sink))
#define coop_at(v, i) (*coop_ptr(v, i))
#define coop_len(v) ((v).n)
#define coop_sub(dst, v, off, cnt)            \
  do {                                        \
    (dst) = (v);                              \
    coop_u64 coop__o = (coop_u64)(off);       \
    coop_u64 coop__c = (coop_u64)(cnt);       \
    if (coop__o > (dst).n) coop__o = (dst).n; \
    (dst).p += coop__o;                       \
    (dst).n -= coop__o;                       \
    if (coop__c < (dst).n) (dst).n = coop__c; \
  } while (0)

/* min(x, len) for a loop bound read from client data (a CSR row end, a
 * worklist size, a depth in a node record), cut to the length of the view
 * the loop walks or the range the algorithm has. The views bound the
 * memory, this bounds one loop's trip count by the buffers' sizes; nested
 * loops still multiply (every worklist entry may name the vertex with
 * every edge), so such loops also poll coop_poll_cancel, which bounds the
 * time a cancelled step runs on. For valid data it never binds. */
COOP_FN coop_u32 coop_cap(coop_u32 x, coop_u64 len) {
  return (coop_u64)x < len ? x : (coop_u32)len;
}

/* coop_cap(x, coop_len(v)) for a bound that valid data never makes longer
 * than view v (a CSR row's end against the edge array, a worklist's size
 * against the worklist): a cut records a fault on v, as an index past it
 * would, so the job ends EFAULT naming v's argument. Cut silently, a CSR
 * whose row ends passed its edge array ran DONE on the edges that fitted,
 * its answer wrong with no error. Evaluates v twice. */
#define coop_cap_at(v, x) coop__cap_at((x), (v).n, (v).fault, (v).tag)
COOP_FN coop_u32 coop__cap_at(coop_u32 x, coop_u64 len, COOP_GLOBAL coop_atomic_u32 *fault,
                              coop_u32 tag) {
  if ((coop_u64)x <= len) return x;
  coop__oob(fault, tag);
  return (coop_u32)len;
}

/* Views of buffer argument i (a buffer the host sized) and of the scratch. */
#define COOP__ARG_VIEW(FN, NAME, T)                              \
  COOP_FN NAME FN(const struct coop_ctx *c, coop_u32 i) {        \
    NAME v;                                                      \
    v.p = (COOP_GLOBAL T *)(c->arena + coop__arg(c, i));         \
    v.sink = (COOP_GLOBAL T *)c->dev->sink;                      \
    v.fault = &c->ch->fault;                                     \
    v.n = coop__arg(c, COOP_MAX_ARGS + i) / (coop_u64)sizeof(T); \
    v.tag = i + 1u;                                              \
    return v;                                                    \
  }
COOP__ARG_VIEW(coop_arg_buf_u32, coop_buf_u32, coop_u32)
COOP__ARG_VIEW(coop_arg_buf_i32, coop_buf_i32, coop_i32)
COOP__ARG_VIEW(coop_arg_buf_f32, coop_buf_f32, float)
COOP__ARG_VIEW(coop_arg_buf_u64, coop_buf_u64, coop_u64)
COOP__ARG_VIEW(coop_arg_buf_atomic_u32, coop_buf_atomic_u32, coop_atomic_u32)

#define COOP__SCRATCH_VIEW(FN, NAME, T)       \
  COOP_FN NAME FN(const struct coop_ctx *c) { \
    NAME v;                                   \
    v.p = (COOP_LOCAL T *)c->wl->scratch;     \
    v.sink = (COOP_LOCAL T *)c->wl->sink;     \
    v.fault = &c->ch->fault;                  \
    v.n = COOP_SCRATCH_BYTES / sizeof(T);     \
    v.tag = COOP_FAULT_SCRATCH;               \
    return v;                                 \
  }
COOP__SCRATCH_VIEW(coop_scratch_u32, coop_lbuf_u32, coop_u32)
COOP__SCRATCH_VIEW(coop_scratch_i32, coop_lbuf_i32, coop_i32)

/* Whether vertex u beats v under per-vertex priorities prio: the larger
 * priority wins, a tie goes to the larger id, so exactly one of two distinct
 * vertices wins. The symmetry breaking of Jones-Plassmann colouring and
 * Luby's independent sets (apps color and mis, whose hosts compute the same
 * with coop_app_beats); kept here, the one file every kernel gets, so that
 * two kernels loaded side by side do not define it twice. */
COOP_FN coop_u32 coop_prio_beats(coop_buf_u32 prio, coop_u32 u, coop_u32 v) {
  coop_u32 pu = coop_at(prio, u), pv = coop_at(prio, v);
  return pu > pv || (pu == pv && u > v);
}

/* The word at p as thread 0 reads it (relaxed), for every thread of the
 * workgroup: a decision made on it, such as returning COOP_DONE, is then
 * uniform across the workgroup. Every thread of the workgroup must call it:
 * it passes two workgroup barriers, and it uses the scratch's first word. */
COOP_FN coop_u32 coop_wg_ld_rlx(const struct coop_ctx *c, COOP_GLOBAL coop_atomic_u32 *p) {
  coop_lbuf_u32 b = coop_scratch_u32(c);
  if (coop_local_id_c(c) == 0u) coop_at(b, 0u) = coop_ld_rlx(p);
  coop_wg_barrier();
  coop_u32 v = coop_at(b, 0u);
  coop_wg_barrier(); /* nobody rewrites the word before all have read it */
  return v;
}

#endif /* COOP_API_H */
