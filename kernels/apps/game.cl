//@coop name=game kind=cooperative args=mode:u32,nodes:buf<u32>,acc:buf<u32>,res:buf<u32>,ctl:buf<u32>,items:buf<u32>,depth:u32,split:u32,nq:u32,qcap:u32,nodecap:u32
//@coop require nodecap*32 <= len(nodes)
//@coop require nodecap*8 <= len(acc)
//@coop require (4+nq*4)*4 <= len(ctl)
//@coop require nq*qcap*4 <= len(items)
//@coop require depth <= 16
//@coop require split <= depth
//@coop require nq >= 1
//@coop require qcap >= 1
//@coop require nodecap >= 1
/*
 * game.cl: game-tree search with work stealing (004 Table 1 "game"):
 * depth-limited negamax of Connect Four positions (7 columns x 6 rows,
 * bitboards of 7 bits per column: 6 cells and a sentinel).
 *
 * The top of every position's tree, down to the split depth `split`, is
 * made of tree nodes, each a task. A task at a node above the split depth
 * creates its children (atomic node counter) and pushes them; a task at the
 * split depth is searched by its workgroup: each thread takes one of the 49
 * grandchildren and searches it sequentially (an explicit-stack negamax),
 * and thread 0 combines the two plies. A finished node passes its value up
 * with atomics: an atomic max of the negated value into the parent, and a
 * pending-children counter, so that the last child to finish completes the
 * parent, up to the root, whose value is the result. Terminal positions (a
 * four for the player who just moved, or a full board) and the horizon are
 * resolved where they are met, at every level.
 *
 * Each of the N requested groups owns one mutex-guarded queue (the task
 * queues of device/taskqueue.cl); a group pops its own queue (LIFO) and
 * steals from all N others (FIFO), also the queues of killed groups,
 * the queues looked at by the whole workgroup first (coop_tq_look: thread
 * 0 alone peeked at up to N of them one round trip each), and taken from
 * those only (coop_tq_pop_or_steal_looked: a steal that lost its queue to
 * another went on to every queue after it, one round trip each). A
 * mutex is held only inside one call of thread 0, never across a step
 * boundary. Cooperative form (004 Sec. 3.2): each step is one iteration of
 * the main loop, ending with offer_kill and request_fork (the top of the
 * next iteration); the queue id is read after the fork point. Nothing is
 * transmitted but the flag below.
 *
 * A search step is long (49 sequential searches in one workgroup), and a
 * kernel without barriers gives workgroups back only at offer_kill. So in
 * the cooperative form a search polls coop_poll_yield: a workgroup the
 * scheduler wants back (coop_kill_wanted) stops searching, pushes its task
 * back on its own queue (a survivor steals it, or it pops it again) and
 * offers at once (docs/kernels.md, "Long steps"). The work done on that
 * task is lost. Two rules keep the search making progress: a step gives its
 * task back only when its queue has room for it (coop_tq_room, checked
 * before the search), and at most GAME_GIVE_MAX steps in a row (state.gave:
 * a workgroup whose kill does not come searches through then). Allowed
 * once only (GAME_GIVE_MAX=1 in COOP_DEVICE_DEFINES: a one-bit flag), a
 * wanted workgroup whose wait at its offer ended would search through its
 * next step and hold up the kills below it. The count costs registers:
 * ptxas gives game's megakernel 127 a thread with it, 96 with the flag;
 * the room's cap makes it 119 (8 blocks of 64 threads an SM), and 10
 * would fit under 96, where NVRTC 13.0 spills (docs/kernels.md, "The
 * megakernel's width").
 *
 * args: 0 mode, 1 nodes (u32 x GAME_NODE_WORDS x nodecap), 2 acc (atomics:
 *       pending children, best child value (biased), per node), 3 result
 *       (i32 per position, stored as u32), 4 ctl (atomics: [0] nodes used,
 *       [1] tasks outstanding, [2] overflow, then 4 per queue: lock, head,
 *       tail, unused), 5 queue items (u32 x nq x qcap), 6 depth, 7 split,
 *       8 nq, 9 qcap (power of two), 10 nodecap
 * node record: cur (lo, hi: stones of the side to move), mask (lo, hi: all
 * stones), parent (~0 for a root), ply (from the root), position, unused
 *
 * The require lines are checked at admission; every buffer and scratch
 * access goes through a view, so a parent, a position or a queue word of a
 * hostile client (past its buffer) faults the job instead of reaching other
 * memory, and game_search bounds its own stack.
 */
#define GAME_NODE_WORDS 8u
#define GAME_NONE COOP_TQ_NONE
#define GAME_END COOP_TQ_END
#define GAME_CTL_QUEUES 4u
#define GAME_MAX_DEPTH 16u
#define GAME_WIN 100000
#define GAME_NEG_INF (-2147483647)
#define GAME_BIAS 0x80000000u
/* scratch words */
#define GAME_S_GRAND 0u   /* 49 grandchild values */
#define GAME_S_DIRECT 49u /* 7 children: 0 searched below, 1 resolved, 2 illegal */
#define GAME_S_DVAL 56u   /* 7 resolved child values */
#define GAME_S_TASK 63u
/* A search's iterations count this much each in coop_poll_*: a flag load
 * every 16. A search to depth 3 (scale 2's) is about 400 iterations, and
 * a step of them took most of a millisecond on an H200: counted one each,
 * no search ever reached COOP_POLL_EVERY, and a wanted workgroup searched
 * on. */
#ifndef GAME_POLL_K
#define GAME_POLL_K (COOP_POLL_EVERY / 16u + 1u)
#endif
#ifndef GAME_GIVE_MAX
#define GAME_GIVE_MAX 8 /* steps in a row that may give their task back */
#endif
#define GAME_S_MAY 64u  /* 1: this step's search may give its task back */
#define GAME_S_GAVE 65u /* set by a thread whose search stopped for a kill */
#define GAME_S_LOOK 66u /* COOP_TQ_LOOKERS words: coop_tq_look's */
/* How a step finds its task (COOP_DEVICE_DEFINES): 2, the queues the
 * workgroup's look saw non-empty only (coop_tq_pop_or_steal_looked); 1,
 * the nearest of them, then every queue after it one by one; 0, thread 0
 * peeks at every queue alone. */
#ifndef GAME_LOOK
#define GAME_LOOK 2
#endif
/* GAME_SKIP_WANTED=1 (COOP_DEVICE_DEFINES): a step begun while its
 * workgroup is wanted takes no task and offers at once, where a task taken
 * then is searched until the next poll (or through, after GAME_GIVE_MAX
 * give-backs in a row). Workgroup 0 is never wanted, so the search goes
 * on. Off: on an H200 beside a 0.3 ms task game paid 1.039-1.058x with it
 * against 1.064-1.079x without, beside a 2 ms task 1.188-1.270x against
 * 1.067-1.217x (bench/RESULTS.md, "Beside game under every setup"). */
#ifndef GAME_SKIP_WANTED
#define GAME_SKIP_WANTED 0
#endif

struct game_state {
  coop_u32 gave; /* steps in a row that gave their task back (004 Table 1 transmits nothing) */
};

/* Thread 0: whether this step may give its task back (GAME_GIVE_MAX). */
COOP_FN coop_u32 game_may_give(const struct game_state *s) {
#if GAME_GIVE_MAX > 1
  return s->gave < (coop_u32)GAME_GIVE_MAX;
#else
  return !s->gave;
#endif
}

/* The count after a step that gave its task back or not (see above). */
COOP_FN coop_u32 game_gave(const struct game_state *s, coop_u32 gave) {
#if GAME_GIVE_MAX > 1
  return gave ? s->gave + 1u : 0u;
#else
  (void)s;
  return gave;
#endif
}

void game_init(struct coop_ctx *c, struct game_state *s) { s->gave = 0u; }

/* ------------------------------------------------------------ the game */

COOP_FN coop_u64 game_top(coop_u32 col) { return (coop_u64)1 << (5u + 7u * col); }
COOP_FN coop_u64 game_bottom(coop_u32 col) { return (coop_u64)1 << (7u * col); }

COOP_FN coop_u32 game_popcount(coop_u64 x) {
  x = x - ((x >> 1) & (coop_u64)0x5555555555555555);
  x = (x & (coop_u64)0x3333333333333333) + ((x >> 2) & (coop_u64)0x3333333333333333);
  x = (x + (x >> 4)) & (coop_u64)0x0f0f0f0f0f0f0f0f;
  return (coop_u32)((x * (coop_u64)0x0101010101010101) >> 56);
}

COOP_FN coop_u32 game_four(coop_u64 b) {
  coop_u64 m = b & (b >> 7); /* horizontal */
  if (m & (m >> 14)) return 1u;
  m = b & (b >> 6); /* diagonal \ */
  if (m & (m >> 12)) return 1u;
  m = b & (b >> 8); /* diagonal / */
  if (m & (m >> 16)) return 1u;
  m = b & (b >> 1); /* vertical */
  return (m & (m >> 2)) ? 1u : 0u;
}

/* Static evaluation for the side to move: the number of four-windows
 * through each cell (3..13) summed over own stones minus the opponent's,
 * through the four bit planes of those weights. */
COOP_FN coop_i32 game_eval(coop_u64 cur, coop_u64 mask) {
  coop_u64 opp = cur ^ mask;
  coop_u64 w1 = (coop_u64)0xb402d5ab402d, w2 = (coop_u64)0x8490c6630921,
           w4 = (coop_u64)0x799a15a8599e, w8 = (coop_u64)0x61e3c78600;
  coop_i32 s = (coop_i32)game_popcount(cur & w1) - (coop_i32)game_popcount(opp & w1);
  s += 2 * ((coop_i32)game_popcount(cur & w2) - (coop_i32)game_popcount(opp & w2));
  s += 4 * ((coop_i32)game_popcount(cur & w4) - (coop_i32)game_popcount(opp & w4));
  s += 8 * ((coop_i32)game_popcount(cur & w8) - (coop_i32)game_popcount(opp & w8));
  return s;
}

/* Resolves a node without looking at its children: the player who just
 * moved has four (the side to move lost), a full board (draw), or the
 * horizon (static evaluation). Returns 1 and the value, or 0. */
COOP_FN coop_u32 game_static(coop_u64 cur, coop_u64 mask, coop_u32 depth, coop_i32 *v) {
  if (game_four(cur ^ mask)) {
    *v = -(GAME_WIN + (coop_i32)depth);
    return 1u;
  }
  if (game_popcount(mask) == 42u) {
    *v = 0;
    return 1u;
  }
  if (depth == 0u) {
    *v = game_eval(cur, mask);
    return 1u;
  }
  return 0u;
}

/* Sequential negamax to `depth` (<= GAME_MAX_DEPTH), explicit stack. The
 * client's depth sets its length (7^14 positions at the largest), so it
 * polls the cancellation (coop_poll_cancel) and, cancelled, returns a
 * value nobody will read. may_yield: it polls coop_poll_yield instead, and
 * sets *stopped when it stops early (cancelled or its workgroup wanted). */
COOP_FN coop_i32 game_search(const struct coop_ctx *c, coop_u64 cur, coop_u64 mask, coop_u32 depth,
                             coop_u32 may_yield, coop_u32 *stopped) {
  coop_u64 sc[GAME_MAX_DEPTH + 1u], sm[GAME_MAX_DEPTH + 1u];
  coop_i32 sb[GAME_MAX_DEPTH + 1u];
  coop_u32 sj[GAME_MAX_DEPTH + 1u];
  coop_i32 v = 0;
  /* the stack has room for GAME_MAX_DEPTH: a deeper search (the require
   * lines are coopd's; the in-process runtime checks none) must not run
   * past it */
  if (depth > GAME_MAX_DEPTH) depth = GAME_MAX_DEPTH;
  if (game_static(cur, mask, depth, &v)) return v;
  coop_u32 lvl = 0u, work = 0u;
  sc[0] = cur;
  sm[0] = mask;
  sb[0] = GAME_NEG_INF;
  sj[0] = 0u;
  for (;;) {
    if (may_yield ? coop_poll_yield(c, &work, GAME_POLL_K)
                  : coop_poll_cancel(c, &work, GAME_POLL_K)) {
      *stopped = 1u;
      return v;
    }
    coop_u32 j = sj[lvl];
    while (j < 7u && (sm[lvl] & game_top(j))) j++;
    if (j == 7u) { /* every move of this level searched */
      v = sb[lvl];
      if (lvl == 0u) return v;
      lvl--;
      if (-v > sb[lvl]) sb[lvl] = -v;
      continue;
    }
    sj[lvl] = j + 1u;
    coop_u64 nc = sc[lvl] ^ sm[lvl], nm = sm[lvl] | (sm[lvl] + game_bottom(j));
    if (game_static(nc, nm, depth - lvl - 1u, &v)) {
      if (-v > sb[lvl]) sb[lvl] = -v;
      continue;
    }
    lvl++;
    sc[lvl] = nc;
    sm[lvl] = nm;
    sb[lvl] = GAME_NEG_INF;
    sj[lvl] = 0u;
  }
}

/* ------------------------------------------------------------ tasks */

/* Thread 0: node t has value v; pass it up while this is the last child. */
COOP_FN0 void game_complete(coop_buf_u32 nodes, coop_buf_atomic_u32 acc, coop_buf_atomic_u32 res,
                            coop_u32 t, coop_i32 v) {
  /* client data (a cycle of parents) must not lengthen the walk past the
   * node records a path to the root can visit (the views bound the memory) */
  for (coop_u64 hop = 0u; hop <= coop_len(nodes) / GAME_NODE_WORDS; hop++) {
    coop_buf_u32 rec;
    coop_sub(rec, nodes, (coop_u64)GAME_NODE_WORDS * t, GAME_NODE_WORDS);
    coop_u32 par = coop_at(rec, 4);
    if (par == GAME_NONE) {
      coop_u32 pos = coop_at(rec, 6);
      coop_st_rlx(coop_ptr(res, pos), (coop_u32)v);
      return;
    }
    coop_u64 pa = 2u * (coop_u64)par; /* acc[pa]: pending children, acc[pa + 1]: best */
    coop_fmax(coop_ptr(acc, pa + 1u), (coop_u32)(-v) ^ GAME_BIAS);
    if (coop_fsub(coop_ptr(acc, pa), 1u) != 1u) return; /* siblings still running */
    v = (coop_i32)(coop_ld_acq(coop_ptr(acc, pa + 1u)) ^ GAME_BIAS);
    t = par;
  }
}

/* Thread 0: creates the children of node t (not resolved, above the split
 * depth) and pushes them on queue q. */
COOP_FN0 void game_expand(const struct coop_ctx *c, coop_buf_u32 nodes, coop_buf_atomic_u32 acc,
                          coop_buf_atomic_u32 ctl, coop_buf_u32 items, coop_u32 qcap,
                          coop_u32 nodecap, coop_u32 q, coop_u32 t) {
  coop_buf_u32 rec;
  coop_sub(rec, nodes, (coop_u64)GAME_NODE_WORDS * t, GAME_NODE_WORDS);
  coop_u64 cur = (coop_u64)coop_at(rec, 0) | (coop_u64)coop_at(rec, 1) << 32;
  coop_u64 mask = (coop_u64)coop_at(rec, 2) | (coop_u64)coop_at(rec, 3) << 32;
  coop_u32 k = 0u;
  for (coop_u32 j = 0u; j < 7u; j++) k += (mask & game_top(j)) ? 0u : 1u;
  coop_u32 first = coop_fadd(coop_ptr(ctl, 0), k);
  if (first + k > nodecap) { /* out of node records: the check reports it */
    coop_for(coop_ptr(ctl, 2), 1u);
    return;
  }
  coop_u32 i = first;
  for (coop_u32 j = 0u; j < 7u; j++)
    if (!(mask & game_top(j))) {
      coop_u64 nc = cur ^ mask, nm = mask | (mask + game_bottom(j));
      coop_buf_u32 ch;
      coop_sub(ch, nodes, (coop_u64)GAME_NODE_WORDS * i, GAME_NODE_WORDS);
      i++;
      coop_at(ch, 0) = (coop_u32)nc;
      coop_at(ch, 1) = (coop_u32)(nc >> 32);
      coop_at(ch, 2) = (coop_u32)nm;
      coop_at(ch, 3) = (coop_u32)(nm >> 32);
      coop_at(ch, 4) = t;
      coop_at(ch, 5) = coop_at(rec, 5) + 1u;
      coop_at(ch, 6) = coop_at(rec, 6);
      coop_at(ch, 7) = 0u;
    }
  coop_st_rlx(coop_ptr(acc, 2u * (coop_u64)t), k); /* published by the push's release */
  coop_fadd(coop_ptr(ctl, 1), k); /* before the push: outstanding must not reach 0 early */
  coop_buf_atomic_u32 qctl;
  coop_sub(qctl, ctl, GAME_CTL_QUEUES, coop_len(ctl));
  coop_u32 pushed = coop_tq_push(c, qctl, items, qcap, q, first, k);
  if (pushed < k) {
    coop_for(coop_ptr(ctl, 2), 2u); /* queue full */
    coop_fsub(coop_ptr(ctl, 1), k - pushed);
  }
}

/* One iteration of the main loop: take a task (pop or steal), process it.
 * The barriers are unconditional (PoCL's work-item loops want every thread
 * to pass the same barriers on every step); each phase's work is guarded.
 * Cancellation: thread 0 takes no task once the task is cancelled and the
 * step returns COOP_DONE (the original form's COOP_CONTINUE is no
 * primitive, where the runtime would see it); game_search polls too. */
coop_u32 game_step(struct coop_ctx *c, struct game_state *s) {
  coop_buf_u32 nodes = coop_arg_buf_u32(c, 1);
  coop_buf_atomic_u32 acc = coop_arg_buf_atomic_u32(c, 2), res = coop_arg_buf_atomic_u32(c, 3);
  coop_buf_atomic_u32 ctl = coop_arg_buf_atomic_u32(c, 4);
  coop_buf_u32 items = coop_arg_buf_u32(c, 5);
  coop_u32 depth = coop_arg_u32(c, 6), split = coop_arg_u32(c, 7);
  coop_u32 nq = coop_arg_u32(c, 8), qcap = coop_arg_u32(c, 9), nodecap = coop_arg_u32(c, 10);
  coop_u32 lid = coop_local_id_c(c), lsize = coop_local_size_c(c);
  coop_lbuf_i32 sh = coop_scratch_i32(c);
  coop_u32 q = coop_group_id(c); /* after the fork point: a forked group uses its own queue */

  coop_wg_barrier(); /* scratch of the previous step is free again */
  coop_buf_atomic_u32 qctl;
  coop_sub(qctl, ctl, GAME_CTL_QUEUES, coop_len(ctl));
  /* the queues looked at by the workgroup, not one by one by thread 0:
   * with one queue a workgroup, 1055 on an H200 at 64 threads */
  coop_lbuf_u32 look;
  coop_sub(look, coop_scratch_u32(c), GAME_S_LOOK, COOP_TQ_LOOKERS);
  if (GAME_LOOK) coop_tq_look(qctl, nq, q, lid, lsize, look);
  coop_wg_barrier();
  if (lid == 0u) {
    coop_buf_atomic_u32 outstanding;
    coop_sub(outstanding, ctl, 1u, 1u);
    coop_u32 wanted = GAME_SKIP_WANTED && coop_arg_u32(c, 0) != 0u && coop_kill_wanted(c);
    coop_u32 t = GAME_NONE; /* a wanted step's (GAME_SKIP_WANTED) */
    if (coop_cancel_requested(c))
      t = GAME_END;
    else if (!wanted)
      t = GAME_LOOK == 2
              ? coop_tq_pop_or_steal_looked(c, qctl, outstanding, items, nq, qcap, q, look, lsize)
              : coop_tq_pop_or_steal_from(c, qctl, outstanding, items, nq, qcap, q,
                                          GAME_LOOK ? coop_tq_first(look, nq, lsize) : 0u);
    coop_at(sh, GAME_S_TASK) = (coop_i32)t;
    coop_at(sh, GAME_S_MAY) =
        (coop_i32)(coop_arg_u32(c, 0) != 0u && game_may_give(s) && coop_tq_room(qctl, qcap, q));
    coop_at(sh, GAME_S_GAVE) = 0;
  }
  coop_wg_barrier();
  coop_u32 t = (coop_u32)coop_at(sh, GAME_S_TASK), may = (coop_u32)coop_at(sh, GAME_S_MAY);
  coop_u32 valid = t != GAME_NONE && t != GAME_END;
  coop_u64 cur = 0u, mask = 0u;
  coop_u32 ply = 0u;
  if (valid) {
    coop_buf_u32 rec;
    coop_sub(rec, nodes, (coop_u64)GAME_NODE_WORDS * t, GAME_NODE_WORDS);
    cur = (coop_u64)coop_at(rec, 0) | (coop_u64)coop_at(rec, 1) << 32;
    mask = (coop_u64)coop_at(rec, 2) | (coop_u64)coop_at(rec, 3) << 32;
    ply = coop_at(rec, 5);
  }
  /* remaining depth; a ply past depth (only a client's node record has one) is the horizon */
  coop_u32 r = ply < depth ? depth - ply : 0u;
  coop_i32 v = 0;
  coop_u32 resolved = valid ? game_static(cur, mask, r, &v) : 0u;
  coop_u32 expand = valid && !resolved && ply < split;
  coop_u32 search = valid && !resolved && ply >= split;

  /* search: thread i takes grandchild (j, k) = (i / 7, i % 7) */
  for (coop_u32 i = lid; search && i < 49u; i += lsize) {
    coop_u32 j = i / 7u, k = i % 7u;
    coop_i32 g = GAME_NEG_INF, cv = 0;
    if (!(mask & game_top(j))) {
      coop_u64 cc = cur ^ mask, cm = mask | (mask + game_bottom(j));
      coop_u32 direct = game_static(cc, cm, r - 1u, &cv);
      if (k == 0u) {
        coop_at(sh, GAME_S_DIRECT + j) = (coop_i32)direct;
        coop_at(sh, GAME_S_DVAL + j) = cv;
      }
      coop_u32 stopped = 0u;
      if (!direct && !(cm & game_top(k)))
        g = game_search(c, cc ^ cm, cm | (cm + game_bottom(k)), r - 2u, may, &stopped);
      if (stopped) coop_at(sh, GAME_S_GAVE) = 1; /* every writer stores 1 */
    } else if (k == 0u) {
      coop_at(sh, GAME_S_DIRECT + j) = 2;
    }
    coop_at(sh, GAME_S_GRAND + i) = g;
  }
  coop_wg_barrier();
  /* a search stopped early gives its task back, unfinished: still outstanding */
  coop_u32 gave = search && may && coop_at(sh, GAME_S_GAVE) != 0;
  if (lid == 0u && gave && coop_tq_push(c, qctl, items, qcap, q, t, 1u) == 0u &&
      !coop_cancel_requested(c)) {
    coop_for(coop_ptr(ctl, 2), 2u); /* queue full after all (a client's queue words) */
    coop_fsub(coop_ptr(ctl, 1), 1u);
  }
  s->gave = game_gave(s, gave);
  search = search && !gave;
  if (lid == 0u && search) { /* combine the two plies */
    v = GAME_NEG_INF;
    for (coop_u32 j = 0u; j < 7u; j++) {
      coop_i32 d = coop_at(sh, GAME_S_DIRECT + j), vj = coop_at(sh, GAME_S_DVAL + j);
      if (d == 2) continue;
      if (d == 0) {
        vj = GAME_NEG_INF;
        for (coop_u32 k = 0u; k < 7u; k++) {
          coop_i32 g = coop_at(sh, GAME_S_GRAND + 7u * j + k);
          if (g != GAME_NEG_INF && -g > vj) vj = -g;
        }
      }
      if (-vj > v) v = -vj;
    }
  }
  if (lid == 0u && expand) game_expand(c, nodes, acc, ctl, items, qcap, nodecap, q, t);
  if (lid == 0u && (resolved || search)) game_complete(nodes, acc, res, t, v);
  if (lid == 0u && valid && !gave) coop_fsub(coop_ptr(ctl, 1), 1u); /* this task is done */
  if (t == GAME_END) return COOP_DONE;
  /* the original form (mode 0) never offers a kill nor asks for a fork */
  return coop_arg_u32(c, 0) == 0u ? COOP_CONTINUE : (COOP_OFFER_KILL | COOP_REQUEST_FORK);
}
