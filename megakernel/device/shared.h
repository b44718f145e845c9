//@needs dialect.h
/*
 * shared.h: every structure that the host and the megakernel both read.
 *
 * One definition, compiled as host C11, OpenCL C and CUDA. Only fixed-width
 * types; 64-bit fields sit at 8-byte offsets. The host checks the layout
 * assumptions it relies on with static asserts (runtime.c).
 *
 * Two memories:
 *   struct coop_mailbox   host-visible (fine-grained SVM): the only memory the
 *                         host touches while the megakernel runs, and which
 *                         only the scheduler workgroup polls.
 *   struct coop_dev       device memory: scheduler context, workers, channels.
 *                         Workers spin only here.
 */
#ifndef COOP_SHARED_H
#define COOP_SHARED_H

#ifndef COOP_DIALECT_H /* already inlined when the host assembles the source */
#include "dialect.h"
#endif
#ifndef COOP_LIMITS_H /* likewise (protocol/coop_limits.h: COOP_MAX_ARGS) */
#include "coop_limits.h"
#endif

#define COOP_ABI 14u
#define COOP_TRANSMIT_BYTES 256 /* largest transmitted state struct */
#define COOP_RING 256           /* task slots, and the submit ring */
#define COOP_MAX_CHANNELS 16    /* kernels running at once */
#define COOP_HOLDS 16           /* windows of gathering ahead armed at once */
#define COOP_RING_WORDS 4u      /* words of a submit ring entry (coop__ring_words) */
#define COOP_PROF_SLOTS 18      /* mailbox.prof: passes, then steps or trace marks */
#define COOP_MAX_WG 1088        /* participating workgroups (H100: 8 x 132 + margin) */
#define COOP_SPREAD_SMS 256     /* SM ids told apart by the spread order (more wrap) */
#define COOP_SPREAD_RANKS 64    /* workgroups per SM told apart (H100: at most 32) */
#define COOP_SPREAD_CLS 4       /* an SM's sub-partitions: its warp schedulers */

/* Task slot states (coop_task_rec.state). The host owns a FREE slot, fills
 * it, stores SUBMITTED (release) and pushes the slot on the ring. From then
 * on the scheduler owns it until it stores a final state (DONE, CANCELLED,
 * REFUSED) with release; the host reads results after an acquire of that. */
#define COOP_TS_FREE 0u
#define COOP_TS_SUBMITTED 1u
#define COOP_TS_QUEUED 2u /* scheduler has it, gathering workgroups */
#define COOP_TS_RUNNING 3u
#define COOP_TS_DONE 4u
#define COOP_TS_CANCELLED 5u
#define COOP_TS_REFUSED 6u   /* invalid request, see status */
#define COOP_TS_SUSPENDED 7u /* final: workgroup 0's state saved (scheduler.cl, "Suspension") */

/* Task flags. */
#define COOP_TF_COOPERATIVE 1u
#define COOP_TF_QUERY_BARRIER 2u /* resizing barrier uses the query variant */
#define COOP_TF_RESUME 4u        /* workgroup 0 starts from the record's resume_state */
#define COOP_TF_GATED 8u         /* not cooperative: its workers wait at the record's gate */

/* A task's input gate (coop_task_rec.gate; docs/scheduler.md, "The input
 * gate"): 0 while the host still copies the task's input in, then OPEN, or
 * FAILED where a copy failed (the task ends CANCELLED). */
#define COOP_GATE_SHUT 0u
#define COOP_GATE_OPEN 1u
#define COOP_GATE_FAILED 2u

/* A saved state: the kernel's state struct, then one word of how it was
 * saved (COOP_RS_*), which the host keeps with it (coop_rt_state_bytes). */
#define COOP_RESUME_WORDS (COOP_TRANSMIT_BYTES / 8 + 1)
#define COOP_RS_WIDE 1u /* saved right after a resizing barrier or a fork: a resume may fork */

/* Refusal reasons (coop_task_rec.status when REFUSED). */
#define COOP_TR_OK 0u
#define COOP_TR_BAD_KERNEL 1u
#define COOP_TR_TOO_MANY_GROUPS 2u
#define COOP_TR_ZERO_GROUPS 3u
#define COOP_TR_KIND 4u /* cooperative flag does not match the kernel */

struct coop_task_rec {
  /* The first four words, 16-byte aligned, are what the scheduler reads of
   * a running task when cancel_seq moves: one vector load (step 2). */
  coop_atomic_u32 state;
  coop_atomic_u32 cancel; /* host -> scheduler: 1 = cancel requested */
  /* host -> scheduler: the most workgroups this cooperative task may hold,
   * 0 = N (scheduler.cl, "Caps"). Written with the task, and while it
   * runs followed by a move of cancel_seq (release), like cancel. */
  coop_atomic_u32 cap;
  /* host -> scheduler: 1 = suspend (scheduler.cl, "Suspension"); written
   * like cancel. */
  coop_atomic_u32 suspend;
  coop_u32 kid; /* index into the registered kernel table */
  coop_u32 flags;
  coop_u32 groups; /* N (cooperative maximum) or K (non-cooperative) */
  coop_u32 status;
  coop_u64 args[COOP_MAX_ARGS];
  /* Byte length of each buffer argument (0 for scalars): what the kernel's
   * bounds-checked views (api.h) allow. Set by the host with the args. */
  coop_u64 lens[COOP_MAX_ARGS];
  /* When it is due: host CLOCK_MONOTONIC ns, 0 = none. The scheduler only
   * compares deadlines with one another (earliest first), never with its
   * own clock, so the two clocks need not agree. The scheduler takes it
   * (>> 8), with kid, flags and groups, from the ring entry; these copies
   * are the host's (the dump). */
  coop_u64 deadline;
  /* Gathering ahead (scheduler.cl): a window round the time this task's
   * next instance is due, device clock ticks, hold_from < hold_to; 0 =
   * none. Once this task has started, the scheduler keeps `groups` workers
   * free inside the window, for the next instance. Read once, at intake. */
  coop_u64 hold_from, hold_to;
  /* Results, device clock ticks. released and gathered are written by the
   * scheduler before RUNNING; the rest by the kernel's last workgroup out,
   * before the final state (worker.cl, coop__publish). released: scheduler
   * took the task; gathered: all workgroups it starts with were free and
   * assigned; started: first workgroup entered the kernel; finished: last
   * workgroup left it. */
  coop_u64 t_released, t_gathered, t_started, t_finished;
  coop_u32 m_initial, m_min, m_max, kills;
  coop_u32 forks, resizes;
  /* Out-of-bounds access: 0, else the tag of the last view that faulted
   * (argument index + 1, or COOP_FAULT_SCRATCH). Written with the results,
   * as is joined: its workgroups whose worker came straight from another
   * kernel's leaving workgroup (scheduler.cl, "Handing workers over");
   * and of its kills those a kill above it took in the same lock hold,
   * and its waits at an offer that ended without a kill (primitives.cl,
   * the kill cascade). */
  coop_u32 fault, joined, kills_taken, kill_waits;
  /* host -> the task's workgroup 0: COOP_GATE_*, SHUT from the submit of a
   * COOP_TF_GATED task until its input is in (release, system scope) */
  coop_atomic_u32 gate;
  coop_u32 pad_kw;
  /* Live view while it runs (coopctl top), published by the scheduler
   * every COOP_VIEW_PASSES passes with relaxed system-scope stores:
   * monitoring only, never used to synchronise. */
  coop_atomic_u32 live_m, live_workers, live_kills, live_forks;
  /* A SUSPENDED task's workgroup 0's thread-0 state (written before the
   * final state), and, for a task with COOP_TF_RESUME, the state its
   * workgroup 0 starts from (written by the host with the task); its
   * last word is COOP_RS_* (the record's size stays a multiple of 16,
   * for the vector load above). */
  coop_u64 resume_state[COOP_RESUME_WORDS];
};

/* mailbox.cancel_seq: bits 31..10 count the host's requests to tasks
 * (cancel, cap, suspend), bits 9..2 are the latest one's slot, bits 1..0
 * what it asked (docs/scheduler.md, step 2). The host moves it with one
 * compare-and-swap, so the three fields are one single-copy atomic word. */
#define COOP_CTL_SEQ_SHIFT 10u
#define COOP_CTL_SEQ_ONE (1u << COOP_CTL_SEQ_SHIFT)
#define COOP_CTL_CANCEL 1u
#define COOP_CTL_CAP 2u
#define COOP_CTL_SUSPEND 3u
#define COOP_CTL_WORD(seq_of, slot, op) \
  (((((seq_of) >> COOP_CTL_SEQ_SHIFT) + 1u) << COOP_CTL_SEQ_SHIFT) | ((slot) << 2) | (op))
#define COOP_CTL_SLOT(w) (((w) >> 2) & 0xffu)
#define COOP_CTL_OP(w) ((w)&3u)

struct coop_mailbox {
  coop_u32 abi;
  coop_u32 launched; /* hardware workgroups launched */
  /* discovery: the first participant mirrors the count here and closes the
   * poll when the host says so (the host sees the count stop growing). */
  coop_atomic_u32 disc_seen;
  coop_atomic_u32 disc_close;
  coop_atomic_u32 participants; /* final count, published by the scheduler */
  coop_atomic_u32 sched_state;  /* 0 starting, 1 running, 2 exited */
  coop_atomic_u32 pong;         /* clock calibration: the scheduler's answer to ping */
  coop_u32 pad0;
  coop_u64 pong_clock;
  coop_u32 pad1[2];
  /* The doorbell: the host's four words the scheduler reads every pass,
   * one 16-byte load (coop_sys_ld4_rlx). The H100 serves a thread's loads
   * of host memory about one at a time, ~0.6 us each: one
   * vector load, not four. */
  coop_atomic_u32 ping;     /* clock calibration: host bumps it */
  coop_atomic_u32 shutdown; /* host -> scheduler */
  coop_atomic_u32 sub_head; /* host -> scheduler: ring entries written */
  /* host -> scheduler: moved (release) after each cancel, cap or suspend
   * is written in a record, so that the scheduler reads tasks' flags only
   * when one changed; it also names the latest of them (COOP_CTL_*), so
   * that a pass that finds exactly one new reads no record at all. */
  coop_atomic_u32 cancel_seq;
  /* Entry index % COOP_RING, 16 bytes (coop__ring_words): the slot and what
   * the scheduler needs to queue the task (kernel, flags, size, deadline),
   * each word tagged with the index's lap. The scheduler loads the next
   * entry with the doorbell, before its acquire, and takes it if every
   * word carries the lap: a task is queued without loading its record
   * (3.2 us on the H100). */
  coop_atomic_u32 ring[COOP_RING][COOP_RING_WORDS];
  struct coop_task_rec tasks[COOP_RING];
  /* Live view: per participant (index pid, 1..workers), 0 when free, else
   * the task slot + 1 it works for, with COOP_VIEW_RESERVED when it is
   * reserved for that task's forks. Same publication rules as live_*. */
  coop_atomic_u32 wg_view[COOP_MAX_WG];
  /* Built with COOP_PROF (COOP_DEVICE_DEFINES): the scheduler's passes
   * (prof[0]) and the device ns spent in each step of them (prof[1..]),
   * totals, stored every COOP_PROF_EVERY passes; zero otherwise. */
  coop_u64 prof[COOP_PROF_SLOTS];
};
#define COOP_VIEW_RESERVED 0x80000000u
/* A lap tag never 0 until 2^24 laps (a zeroed ring is never taken as new). */
#define COOP_RING_TAG(i) ((((i) / COOP_RING) + 1u) & 0xffffffu)
#define COOP_RING_ENTRY(slot, i) ((slot) | (COOP_RING_TAG(i) << 8))
#define COOP_RING_SLOT(e) ((e)&0xffu)
/* Words 1.. of an entry carry the lap's low 4 bits (bits 0-3). A word the
 * scheduler loads for index i holds lap i's value or the one before it,
 * never older: it acquired sub_head past the previous lap's entry before
 * (read-read coherence and happens-before). So a 4-bit tag tells the two
 * apart, and word 0's 24 bits tell a zeroed ring from lap 16's. */
#define COOP_RING_TAG4(i) (COOP_RING_TAG(i) & 0xfu)
/* The spread order's sub-partition classes (discovery.cl, coop__spread):
 * how many there are for workgroups of nw warps (an SM's four warp
 * schedulers each take the warps of slots s with s % 4 = their index;
 * a workgroup's warps take consecutive slots), and the rank on its SM of
 * the ticket that is the j-th of class c there, where m[k] tickets of
 * class k came to that SM: the classes taken in turn (class 0, 1, ...,
 * then each again while it has tickets left), so that ranks are dense
 * (0 .. the SM's count - 1) and an SM's first workers are of different
 * classes where it has them. */
COOP_FN coop_u32 coop__sp_classes(coop_u32 nw) { return nw == 1u ? 4u : nw == 2u ? 2u : 1u; }
COOP_FN coop_u32 coop__sp_rank(const coop_u32 *m, coop_u32 ncls, coop_u32 j, coop_u32 c) {
  coop_u32 r = 0u;
  for (coop_u32 k = 0u; k < ncls; k++) {
    r += m[k] < j ? m[k] : j;   /* its turns before j */
    if (k < c && m[k] > j) r++; /* turn j, the classes before c */
  }
  return r;
}

/* Word 1: tag | kid << 4 | flags << 11 | COOP_RING_HOLD | groups << 16,
 * kid clamped to 127 and groups to 65535 (both still refused:
 * COOP_MAX_KERNELS and COOP_MAX_WG are smaller). COOP_RING_HOLD: the
 * record has a gathering-ahead window, read at intake. Words 2 and 3: the
 * deadline >> 8 (56 bits, 28 a word), so deadlines compare at 256 ns. */
#define COOP_RING_HOLD 0x8000u
#define COOP_RING_FLAGS 0xfu /* task flags that fit in word 1 */

COOP_FN void coop__ring_words(coop_u32 *w, coop_u32 slot, coop_u32 i, coop_u32 kid, coop_u32 flags,
                              coop_u32 groups, coop_u64 deadline, coop_u32 hold) {
  coop_u32 t4 = COOP_RING_TAG4(i);
  coop_u64 q = deadline == 0u ? 0u : (deadline >> 8) ? (deadline >> 8) : 1u;
  w[0] = COOP_RING_ENTRY(slot, i);
  w[1] = t4 | (kid < 0x7fu ? kid : 0x7fu) << 4 | (flags & COOP_RING_FLAGS) << 11 |
         (hold ? COOP_RING_HOLD : 0u) | (groups < 0xffffu ? groups : 0xffffu) << 16;
  w[2] = t4 | (coop_u32)(q & 0xfffffffu) << 4;
  w[3] = t4 | (coop_u32)(q >> 28) << 4;
}

/* Word 1's fields, and the deadline of words 2 and 3 (>> 8, as compared). */
#define COOP_RING_KID(e) (((e)[1] >> 4) & 0x7fu)
#define COOP_RING_TFLAGS(e) (((e)[1] >> 11) & COOP_RING_FLAGS)
#define COOP_RING_GROUPS(e) ((e)[1] >> 16)
#define COOP_RING_DEADLINE(e) ((coop_u64)((e)[3] >> 4) << 28 | (coop_u64)((e)[2] >> 4))
#define COOP_VIEW_PASSES 64u
#define COOP_PROF_EVERY 1024u

/* Worker states (coop_worker.state): the assignment handshake
 * (docs/scheduler.md section 2).
 *   IDLE --(scheduler, its helpers or a forking workgroup: payload, then a
 *           release fence and a relaxed store of ASSIGNED)--> ASSIGNED
 *   ASSIGNED --(worker: results, then store RETURNED release)--> RETURNED
 *   ASSIGNED --(worker handed over to a waiting task: its own payload,
 *               relaxed)--> ASSIGNED
 *   RETURNED --(scheduler's reap, relaxed)--> IDLE
 *   IDLE --(scheduler at shutdown, release)--> EXIT
 * The worker spins on its own state only (device memory): relaxed loads,
 * then one acquire fence once it reads ASSIGNED or EXIT. */
#define COOP_WS_IDLE 0u
#define COOP_WS_ASSIGNED 1u
#define COOP_WS_RETURNED 2u
#define COOP_WS_EXIT 3u

/* Why a worker returned (coop_worker.reason). */
#define COOP_WR_FINISHED 1u /* the kernel returned COOP_DONE / ended */
#define COOP_WR_KILLED 2u   /* accepted offer_kill or resizing kill */
#define COOP_WR_LAST 4u     /* bit: this workgroup was the kernel's last alive */
/* coop_chan.handed: the kernel's last workgroup's worker was handed over */
#define COOP_HANDED_LAST 0x80000000u

/* Who may write a running task's record (coop_chan.rec; worker.cl,
 * "Completion"): the scheduler until it has stored RUNNING (STARTING),
 * then anyone who moves OPEN to VIEWING (the scheduler's live view) or to
 * CLOSED (the last workgroup out, which then publishes the results). */
#define COOP_REC_STARTING 0u
#define COOP_REC_OPEN 1u
#define COOP_REC_VIEWING 2u
#define COOP_REC_CLOSED 3u

struct coop_worker {
  coop_atomic_u32 state;
  coop_u32 chan;       /* payload: channel of the kernel to run */
  coop_u32 vid;        /* payload: cooperative group id */
  coop_u32 forked;     /* payload: 1 = start after a fork with transmit[] */
  coop_u32 reason;     /* result */
  coop_u32 gen;        /* payload: the barrier episode it starts in */
  coop_u32 base[2];    /* payload: the bases of the next episodes on each count word */
  coop_u64 t_gathered; /* payload: the channel's t_gathered (initial workers) */
  coop_u64 transmit[COOP_TRANSMIT_BYTES / 8];
};

/* What a workgroup's barrier wait returns (barrier.cl): go on, leave
 * (removed by a resize), or leave (cancelled). */
#define COOP_BF_NONE 0u
#define COOP_BF_GO 2u
#define COOP_BF_KILL 3u
/* The barrier words (barrier.cl), one definition for the device and for
 * the host's dump. Episodes use two count words in turn (bar_arrive for
 * even ones, bar_arrive_odd for odd ones); each is a counter that every
 * episode adds exactly COOP__BAR_EP to in all, so that it reaches the episode's target (its
 * base + COOP__BAR_EP) at the last arrival and not before: the workgroups
 * spin on the word they add to. A held episode (a resize is due) is
 * COOP__BAR_HOLD short until the master releases it, and its release adds
 * COOP__BAR_HELD more, so that a released slave tells a held episode from a
 * plain one by how far the word is past its target (barrier.cl, "Ranges").
 * bar_rel = generation << 11 | M: a held episode's outcome. */
#define COOP__BAR_EP 8192u
#define COOP__BAR_HOLD 2048u
#define COOP__BAR_HELD 16384u
/* What a cancellation adds to both count words (barrier.cl, coop__bar_spin) */
#define COOP__BAR_CANCEL (1u << 30)
/* The count word of episode e */
#define COOP__BAR_WORD(ch, e) (((e)&1u) ? &(ch)->bar_arrive_odd : &(ch)->bar_arrive)
#define COOP__REL_SHIFT 11u
#define COOP__REL_M(v) ((v) & ((1u << COOP__REL_SHIFT) - 1u))
#if COOP_MAX_WG >= 2048
#error "COOP_MAX_WG must stay below 2048: barrier.cl packs M into 11 bits"
#endif
/* The ranges barrier.cl relies on ("Ranges"), N at most COOP_MAX_WG - 1:
 * a held episode complete (t - H) below any incomplete plain one's count
 * after the master's arrival (t - N + 1); the next episode's count above
 * its base even when held (EP - 2N - H > 0); a held release past any plain
 * one however late it is read (X - N - H >= EP). */
#if COOP__BAR_HOLD < COOP_MAX_WG || COOP__BAR_EP <= 2u * COOP_MAX_WG + COOP__BAR_HOLD || \
    COOP__BAR_HELD < COOP__BAR_EP + COOP_MAX_WG + COOP__BAR_HOLD
#error "the barrier's COOP__BAR_* constants no longer keep its ranges apart for COOP_MAX_WG"
#endif
/* A hand-over ticket (coop_chan.ticket, below) keeps its next id in 16
 * bits under the size: the adds past the size, every leaving workgroup's
 * until the handoff words are cleared and one of each that read them
 * before, and the scheduler's fill (at most its free workers), stay below
 * size + 3 COOP_MAX_WG, so the next id never carries into the size. */
#if 4 * COOP_MAX_WG > 0xffff
#error "COOP_MAX_WG too large for the hand-over ticket's 16-bit next id"
#endif

/* One channel per running kernel. Fields above `lock` are written by the
 * scheduler before the first workgroup is assigned and never change while
 * the kernel runs, but gate, fault and the profile's t_kill_* words. Fields
 * marked (L) change only with `lock` held; they may be read without it as
 * a hint (fast paths: relaxed loads, acquire in the scheduler's;
 * docs/scheduler.md section 3). */
struct coop_chan {
  coop_u32 kid;
  coop_u32 flags;
  coop_u32 n_max;      /* N: the most workgroups the kernel may have */
  coop_u32 task;       /* task slot */
  coop_u64 t_gathered; /* the record's t_gathered, for the last workgroup out */
  /* COOP_PROF_SUSPEND (scheduler.cl, "Profile"): the master's arrival at
   * the episode whose held release made a suspension's kills, and when it
   * saw that episode complete; the last workgroup out copies them to
   * mailbox.prof and zeroes them */
  coop_u64 t_kill_arrive, t_kill_held;
  coop_u32 m0; /* M at the start: the master's first count (barrier.cl) */
  /* COOP_GATE_*: the record's gate as workgroup 0 read it, for the
   * others (SHUT from the start until then; COOP_TF_GATED only) */
  coop_atomic_u32 gate;
  coop_atomic_u32 fault; /* a view's tag after an out-of-bounds access; relaxed */
  coop_atomic_u32 pad_fault;
  coop_atomic_u32 lock;
  coop_atomic_u32 m;         /* (L) M, the active count */
  coop_atomic_u32 want_kill; /* (L) scheduler: surrender this many */
  coop_atomic_u32 n_resv;    /* (L) reserved workers ready for a fork */
  coop_atomic_u32 alive;     /* workgroups inside; atomic add/sub (no lock for -) */
  coop_atomic_u32 killed;    /* (L) kills accepted since the start */
  coop_atomic_u32 forked;    /* (L) workgroups forked since the start */
  coop_atomic_u32 resizes;   /* resizing-barrier episodes */
  coop_atomic_u32 ep_killed; /* (L) plain resizing barrier: kills this episode */
  coop_atomic_u32 ep_hold;   /* (L, plain variant; the query variant's lock-free guard)
                              * this episode is held for a resize (barrier.cl) */
  /* Changes of M by kills and forks outside a resize, per episode modulo 4
   * (barrier.cl, "The master's count"); atomic adds. */
  coop_atomic_u32 bar_delta[4];
  coop_atomic_u32 cancel;    /* scheduler -> kernel: leave at the next primitive */
  coop_atomic_u32 suspend;   /* scheduler -> kernel: shrink to workgroup 0, save, leave */
  coop_atomic_u32 suspended; /* workgroup 0 saved its state and left: SUSPENDED */
  coop_u64 saved[COOP_TRANSMIT_BYTES / 8]; /* ... that state (thread 0's), for the record */
  coop_u32 saved_how;                      /* ... and how (COOP_RS_*), likewise */
  coop_atomic_u32 m_min;                   /* (L) */
  coop_atomic_u32 m_max;                   /* (L) */
  /* A task started before it had all its workers (scheduler.cl, "Handing
   * workers over"): handoff, on a running kernel's channel, is 1 + the
   * channel whose task its leaving workgroups' workers may join (0: none;
   * release by the scheduler, read relaxed then an acquire fence); ticket,
   * on that task's channel, is its size << 16 | the next group id to give
   * (an id below the size is valid; the scheduler's release store, then
   * acq_rel adds by whoever takes ids); handed and handed_kills count the
   * workgroups of this channel whose workers went on so, and of them the
   * killed ones (relaxed adds; COOP_HANDED_LAST: the kernel's last one
   * was among them); t_full is when the task's last id was taken. */
  coop_atomic_u32 handoff;
  coop_atomic_u32 ticket;
  coop_atomic_u32 handed;
  coop_atomic_u32 handed_kills;
  coop_atomic_u32 joined; /* ids of this channel's task taken by handed-over workers */
  coop_atomic_u32 pad_joined;
  coop_u64 t_full;
  /* Who may write the task record (COOP_REC_*; worker.cl, "Completion"). */
  coop_atomic_u32 rec;
  /* min over the workgroups it started with of (start - t_gathered),
   * device clock ticks, at most 2^32 - 1: a relaxed atomic min by each,
   * right after its assignment and its input gate (worker.cl, coop__took). */
  coop_atomic_u32 start_min;
  /* Barrier words (barrier.cl), each on its own 128-byte line: episodes
   * use the two count words in turn, every workgroup adding to one and
   * spinning on it while the next episode's first add goes to the other;
   * bar_rel is read only after a held episode's release. */
  coop_u32 pad_bar0[32];
  coop_atomic_u32 bar_arrive; /* the count of even episodes */
  coop_u32 pad_bar1[31];
  coop_atomic_u32 bar_arrive_odd; /* the count of odd episodes */
  coop_u32 pad_bar2[31];
  coop_atomic_u32 bar_rel; /* a held episode's outcome: generation << 11 | M' */
  coop_u32 pad_bar3[31];
  coop_u32 resv[COOP_MAX_WG];   /* (L) worker ids reserved for a fork */
  coop_u32 pid_of[COOP_MAX_WG]; /* (L) id -> worker; entries < M are current */
  /* The kill cascade (primitives.cl): bit vid is set (atomic or) by
   * workgroup vid while it waits at its offer, and cleared (atomic and,
   * with the lock held) by it as its wait ends, or by the kill above it
   * that takes it too: for it, its bit cleared under the lock is its kill.
   * All clear whenever no workgroup waits. */
  coop_atomic_u32 kwait[(COOP_MAX_WG + 31) / 32];
  coop_atomic_u32 taken; /* (L) kills made by the kill above (relaxed) */
  coop_atomic_u32 waits; /* waits at an offer ended without a kill (relaxed adds) */
};

/* Scheduler context: private to the scheduler workgroup (thread 0). */
#define COOP_SW_FREE 0xffffffffu
#define COOP_SW_RESERVED 0xfffffffeu
struct coop_sched {
  coop_u32 nworkers; /* participants - 1 */
  coop_u32 nfree;
  coop_u32 sub_tail;
  coop_u32 q_head, q_tail; /* pending tasks: earliest deadline first, else FIFO */
  /* Channels running a task (bit c), and those of them whose task is
   * cooperative: a pass's loops over channels read one word, not one per
   * channel (16 loads of scheduler memory were 3 us of each pass on the
   * H100). */
  coop_u32 busy, coopm;
  coop_u32 susm; /* channels whose kernel is suspending: its workgroup 0 leaves too */
  /* A task started before it had all its workers ("Handing workers
   * over"): 1 + its channel (0: none), the ids this thread gave it itself;
   * workers handed over that the counts below have not met yet (owed:
   * added once the task has every id; seen: met in the channels' handed) */
  coop_u32 pend, pend_own, handed_owed, handed_seen;
  coop_u32 chan_handed[COOP_MAX_CHANNELS];       /* coop_chan.handed as last read */
  coop_u32 chan_handed_kills[COOP_MAX_CHANNELS]; /* ... handed_kills */
  coop_u32 chan_killed_reaped[COOP_MAX_CHANNELS];
  coop_u32 chan_resv[COOP_MAX_CHANNELS];    /* reserved workers we think it holds */
  coop_u32 chan_workers[COOP_MAX_CHANNELS]; /* workers assigned, not yet reaped */
  coop_u32 chan_last[COOP_MAX_CHANNELS];    /* the last workgroup has left */
  coop_u32 chan_cap[COOP_MAX_CHANNELS];     /* the most workgroups it may hold ("Caps") */
  coop_u32 queue[COOP_RING];
  coop_u64 q_deadline[COOP_RING]; /* queue[i]'s deadline, copied at intake */
  coop_u32 wstat[COOP_MAX_WG];    /* FREE, RESERVED or channel index */
  coop_u32 wpub[COOP_MAX_WG];     /* what wg_view last got, so only changes are written */
  /* what a channel's record last got in live_m, live_workers, live_kills,
   * live_forks; live_m COOP_SW_FREE (no M is): nothing since its start */
  coop_u32 chan_pub[COOP_MAX_CHANNELS][4];
  coop_u32 view_pass;
  coop_u32 reaped; /* workers reaped, ever: compared with dev.returned */
  /* A task's kernel, kind and size, copied from its record at intake with its
   * deadline, indexed by slot: serving the queue reads no host memory. */
  coop_u32 t_kid[COOP_RING];
  coop_u32 t_flags[COOP_RING];
  coop_u32 t_groups[COOP_RING];
  /* ... mailbox.cancel_seq as read two passes before its intake (which
   * reads no cancel flag: the flag is read at the head only if the
   * sequence has moved since; docs/scheduler.md, step 3), and whether
   * QUEUED was stored (only for a task not started in the pass that took
   * it in). */
  coop_u32 t_cseq[COOP_RING];
  coop_u32 t_queued[COOP_RING];
  coop_u64 t_hold_from[COOP_RING]; /* the record's window, copied at intake */
  coop_u64 t_hold_to[COOP_RING];
  /* Each task's args then lens (buffer lengths, bytes: the views), where
   * its kernel's workgroups copy them (worker.cl, coop__next). Copied from the record at
   * intake by the helpers, while thread 0 queues the task from its ring
   * entry, or at the start by thread 0 when there are no helpers. They stay until the slot's next
   * intake: the host reuses a slot only once the task is final, which its last workgroup out writes
   * after every workgroup's last read (worker.cl, "Completion"). A start copies nothing.
   */
  coop_u64 t_payload[COOP_RING][2u * COOP_MAX_ARGS];
  /* Holds armed by started tasks (scheduler.cl, "Gathering ahead"): entry
   * h keeps hold_n workers free from hold_from to hold_to for the next
   * task of kernel hold_kid and that size. Bit h of holds: armed. */
  coop_u64 hold_from[COOP_HOLDS], hold_to[COOP_HOLDS];
  coop_u32 hold_n[COOP_HOLDS], hold_kid[COOP_HOLDS];
  coop_u32 holds;
  coop_u32 cseq;      /* mailbox.cancel_seq as read this pass */
  coop_u32 cseq_prev; /* ... the pass before (the intake's t_cseq) */
  coop_u32 cseq_seen; /* ... when running tasks' flags were last read */
  coop_u32 pass;      /* passes, for the live view's rate */
  /* Helper warps (scheduler.cl): thread 0 zeroes help_done, then stores
   * an order (op, slot, chan, n and a count, packed: COOP_HELP_WORD) in
   * help_gen (release); each helper acquires help_gen, carries out its
   * share, and adds 1 to help_done (release), which thread 0 acquires
   * before it uses the result or posts the next order. */
  coop_atomic_u32 help_gen;
  coop_atomic_u32 help_done;
  coop_atomic_u32 help_ticket; /* START: group ids handed out */
  coop_u32 nhelpers;           /* helper threads; 0: thread 0 does it all */
  coop_u32 help_pending;       /* an order is out and not yet waited for */
  /* Built with COOP_PROF_TASKS: the clock at each trace mark of the pass
   * in progress (scheduler.cl, "Profile"); untouched otherwise. */
  coop_u64 trace[COOP_PROF_SLOTS];
};

struct coop_dev {
  /* Where out-of-bounds view accesses of every kernel land: garbage that no
   * job owns (api.h). 64 bytes, so any element type fits. */
  coop_u64 sink[8];
  coop_atomic_u32 disc_lock;
  coop_atomic_u32 disc_open;
  coop_atomic_u32 disc_count;
  coop_atomic_u32 abi_ok;
  /* Workers that stored RETURNED, ever (a release add after that store).
   * The scheduler scans worker states only while it has reaped fewer:
   * an idle pass reads this one word, not every worker's state. */
  coop_atomic_u32 returned;
  /* The spread order (discovery.cl, CUDA): each ticket's SM, then the
   * worker id it is given; disc_mapped is stored (release) once given. */
  coop_atomic_u32 disc_mapped;
  coop_u32 disc_sm[COOP_MAX_WG];
  coop_u32 disc_pid[COOP_MAX_WG];
  /* tickets seen of each sub-partition class on each SM (discovery.cl) */
  coop_u32 spread_cls[COOP_SPREAD_SMS * COOP_SPREAD_CLS];
  coop_u32 spread_rank[COOP_SPREAD_RANKS]; /* tickets of each rank, then its first id */
  struct coop_sched sched;
  struct coop_chan chan[COOP_MAX_CHANNELS];
  struct coop_worker w[COOP_MAX_WG];
};

#endif /* COOP_SHARED_H */
