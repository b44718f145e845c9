/*
 * dev_internal.h: what the files of the device thread share (device.c
 * says which holds what): a device (struct dev) and the runs of its jobs
 * (struct run). Device thread only, but for the fields marked otherwise.
 */
#ifndef COOPD_DEV_INTERNAL_H
#define COOPD_DEV_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "coop_rt.h"
#include "device.h"
#include "devproc.h"

#define DEV_WAIT_NS 50000000L     /* longest dp_wait: the watchdog's granularity */
#define DEV_NEXT_POLL_NS 2000000L /* a build in place is looked at this often */
enum { NEXT_IDLE = 0, NEXT_ASKED = 10, NEXT_BUILDING, NEXT_BUILT, NEXT_UNAVAILABLE };
/* [device] idle_spin_us = -1 on a GPU: a client submitting one job after
 * another sends the next within about 50 us of the last RESULT */
#define DEV_IDLE_SPIN_NS 200000L
#define DP_WAIT_MAX 128    /* tasks one dp_wait watches (DP_POLL_MAX) */
#define DEV_MAX_INFLIGHT 8 /* instances of one periodic job in flight at once */
/* the bytes of a large buffer one request moves: other jobs' work goes
 * between two (docs/daemon.md, "Large buffers in slices") */
#define DEV_SLICE (1u << 20)
/* a slice is held while a short task is in flight or a frame is due, for
 * at most this long in a row (dev_run.c, slice_held); its time, until one
 * is measured, is guessed as DEV_SLICE_GUESS_NS */
#define DEV_SLICE_HOLD_NS 2000000L
#define DEV_SLICE_GUESS_NS 500000L
/* the live view's refresh period while jobs run (TOP, whose default
 * interval is 1 s). Each refresh is a DP_VIEW round trip that holds the
 * device thread 100 us to 2.6 ms while the device process's thread wakes,
 * and a frame that came meanwhile waited for it (bench/RESULTS.md, "The
 * live view held for a frame" and "The live view every 100 ms") */
#define DEV_VIEW_NS 100000000L
#define DEV_MAX_HOLDS 64     /* users remembered for having caused a restart */
#define DEV_MAX_RERUNS 2     /* runs again a job lost to restarts may have */
#define DEV_MAX_RERUNS_S "2" /* the same, for messages */
/* job.suspended_for beside a priority: suspended for another user's
 * share (dev_prio.c), or back from a checkpoint after a restart
 * (dev_ckpt.c) */
#define DEV_FOR_SHARE INT32_MIN
#define DEV_FOR_RESTART (INT32_MIN + 1)
#define DEV_FOR_MOVE (INT32_MIN + 2) /* moved from another device (dev_move.c) */
/* its buffers moved out of the arena for another user's job that waits
 * for room (dev_room.c); resumed, they found no room there yet (any
 * suspended job whose buffers were out) */
#define DEV_FOR_ROOM (INT32_MIN + 3)
#define DEV_FOR_ROOM_BACK (INT32_MIN + 4)
/* its device process died as it resumed: it resumes where it was
 * suspended in the next (dev_carry.c, resume_again) */
#define DEV_FOR_RESTART_AT (INT32_MIN + 5)
/* A job that gave its room back runs this long at least before it gives it
 * again: a user that asked for room and left at once, again and again,
 * had another's job copied out and in (up to the arena each way, on the
 * device thread) as often as it liked. */
#define DEV_ROOM_GAP_NS 1000000000L
/* A job that resumed runs this long at least before it is suspended for
 * another user's share again: a user that took its share and let it go at
 * once, again and again, had another's job suspended and resumed (a save,
 * a resume and a step's work lost each time) as often as it liked. */
#define DEV_SHARE_GAP_NS 1000000000L

/* Device-thread bookkeeping of a job it runs. */
struct run {
  struct job *j;
  int64_t t0, next_release; /* CLOCK_MONOTONIC ns */
  uint32_t released;        /* instances released so far */
  coop_task_id task[DEV_MAX_INFLIGHT];
  uint32_t task_inst[DEV_MAX_INFLIGHT];
  uint8_t task_seen[DEV_MAX_INFLIGHT]; /* events already sent: 1 << COOP_EV_* */
  int64_t task_ran[DEV_MAX_INFLIGHT];  /* when a poll first saw it running (host ns), or 0 */
  int64_t task_next[DEV_MAX_INFLIGHT]; /* the next_ns its task was given (gathering ahead), or 0 */
  unsigned ninflight;
  int64_t started_ns;
  int64_t cancel_seen; /* when the device thread first saw j->cancel */
  int watchdog;        /* cancelled by watchdog_ms: its RESULT says so */
  /* its device process was lost inside a request after its task may have
   * run (a DP_SUBMIT, which may carry the task's whole run; the unstage
   * that copies its results back): a restart runs the job again only by
   * dev__runs_again's rules, never as fresh */
  int lost_running;
  coop_task_id release; /* a one-task job's ended task, released with its unstage */
  int ended, breach;    /* its end done with its submit (dp_submit_end): the breach, or -1, */
  struct coop_rt_task_info end_info; /* and its final info, */
  int64_t end_seen;                  /* and when the device process saw it final (0: unknown) */
  /* its ranges (job_arg.io_*) go with its submit (dev__io_with_submit):
   * io_submit, the ranges in not copied yet; io_out_done, the ranges out
   * came back with the submit's reply (its end) */
  int io_submit, io_out_done;
  int io_with; /* its ranges went with its submit: the device process copies them out at its end */
  unsigned cap, cap_told; /* a cooperative job's cap (dev_slots.c), and what its task was told */
  /* across a reload (dev_carry.c): 1 asked to suspend, 2 carried (off
   * d->runs, its saved state and buffers in these memfds) */
  int moving, state_fd, carry_fd;
  /* or its buffers, carried on the device: in a share of the new device
   * process at this address (0: none), then staged there before its
   * launch (carry_staged: that process) */
  uint64_t carry_share;
  struct dp *carry_staged;
  /* priority (dev_prio.c): asked to suspend for a job of higher priority
   * or another user's share (for which: its job's suspended_for);
   * suspended since (its job back in coop_wait, this run its dev_run);
   * to be resumed by its next pass; a non-cooperative run that had
   * cooperative jobs suspended for its workers (they wait until it ends) */
  int suspending;
  int64_t suspend_asked_at; /* when suspending was set (coop_staying) */
  int64_t suspended_at;
  int resuming, preempting;
  /* suspended with its buffers out of the arena, it found no room to
   * resume at d->room_seq: not tried again until that changes (dev_room.c) */
  int room_wait;
  uint64_t room_seq;
  /* suspended (or suspending) for a priority or a share, its copies are
   * to leave the arena for a job waiting for room all the same (dev_room.c) */
  int room_out;
  /* when it last resumed with its buffers back from a memfd: it gives no
   * room again before DEV_ROOM_GAP_NS have passed (dev_room.c) */
  int64_t room_back_at;
  /* when it last resumed: the share suspends it again DEV_SHARE_GAP_NS
   * later at the soonest (dev_prio.c) */
  int64_t resumed_at;
  /* checkpoints (dev_ckpt.c): asked to suspend for one (when: asked_at);
   * the last one's state and buffers (memfds, or -1) and when it was
   * taken (host ns); the pair the one before used, written over by the
   * next (its pages already there) */
  int ckpting, ckpt_state_fd, ckpt_buf_fd, spare_state_fd, spare_buf_fd;
  int64_t ckpt_at, ckpt_asked_at;
  /* a restart found it suspended since then (0: running): the work lost
   * ends there, not at the restart (dev__ckpt_restore) */
  int64_t lost_from;
  /* its snapshot in the arena (0: none) of snap_bytes, and a drain in
   * progress: the snapshot into the pending pair of memfds, drained bytes
   * so far, since when (host ns) */
  uint64_t snap_arg, snap_bytes, drained;
  int draining, pend_state_fd, pend_buf_fd;
  int64_t drain_t0;
  int migrating; /* asked to suspend to move to another device (dev_move.c) */
  /* a task suspended and resumed (dev__segment_end): how many times, and
   * its first task's times and initial width, for the job's RESULT */
  unsigned segs;
  struct coop_wire_times first;
  uint32_t first_m;
  /* large buffers in slices (dev_stage.c, dev__slice): its sliced IN ones
   * being filled before its first release, its OUT ones emptied after its
   * end (emptied: all of them, then), the next slice's argument and offset */
  int filling, emptying, emptied;
  unsigned slice_arg;
  uint64_t slice_at;
  /* its slices held (dev_run.c, slice_held): since when (0: not held),
   * and when the pass should look again */
  int64_t slice_held_since, slice_wake;
  struct run *next;
};

/* A user whose jobs made the device restart (dev_hold.c). */
struct dev_hold {
  uint32_t uid;
  unsigned restarts;   /* caused, counted since it was last forgiven */
  int64_t last, until; /* the last one; its jobs wait until then */
};

/* A frame loop's warm window (dev_warm.c): from..until (until 0: a free
 * entry), the loop's uid and connection (struct job, conn), whether it has begun, and a copy of
 * the loop's last frame's job, its pointers cleared, whose start's checks
 * and request run dry at the window's start (dev_run.c, dev__warm_path). */
struct dev_warm {
  int64_t from, until;
  uint32_t uid;
  uint64_t conn;
  int on;
  struct job *job;
};
/* Windows a device keeps at once, and of one uid (as struct dev_pre's) */
#define DEV_WARM_MAX 8
#define DEV_WARM_PER_UID 2

/* A hold asked of the scheduler (dev_holds.c): whose chain (a periodic
 * job's id, or a frame loop's), its user, until when (0: a free entry). */
struct dev_hold_ask {
  uint64_t chain;
  uint32_t uid;
  int64_t until;
};
/* Holds the scheduler arms at once (megakernel/device/shared.h,
 * COOP_HOLDS), and those one uid's tasks may ask for at a time. */
#define DEV_HOLD_ASKS 16
#define DEV_HOLDS_PER_UID 4

/* A frame loop's window of suspension ahead (dev_prio.c): when its next
 * task is expected (0: the entry is free; the window is at -/+
 * pre_ahead_ns), its priority and workgroups, whose loop it is (its
 * client's uid and connection: a task of theirs ends it), and on: it has had
 * a job suspended, which stays so until that task is submitted or the
 * window ends. */
struct dev_pre {
  int64_t at;
  int32_t priority;
  uint32_t groups, uid;
  uint64_t conn;
  int on;
};
/* Windows a device keeps at once, and of one uid: one user's loops leave
 * room for others'. */
#define DEV_PRE_MAX 8
#define DEV_PRE_PER_UID 2

struct dev {
  struct dp *rt;     /* the device process; NULL while it restarts or is broken */
  int64_t wait_ns;   /* DEV_WAIT_NS (tests: COOP_TEST_DEV_WAIT_MS) */
  _Atomic int rt_up; /* rt != NULL, for the loop (dev_watch_get): set with rt */
  const struct config *cfg;
  const struct kset *ks; /* the kernels of rt: device thread (and dev_swap's caller) */
  uv_async_t async;
  /* dev__announce: set (seq_cst) after work for the loop is queued, taken
   * by dev_poll or on_async; loop_spin: the loop's loopspin.spinning, or
   * NULL (dev_set_loop_spin) */
  atomic_int announced;
  const atomic_int *loop_spin;
  /* dev__prewake: set (seq_cst) when a hand-back is near, taken by
   * on_async, which asks the loop to spin (hooks->expect_soon) */
  atomic_int prewake;
  struct dev_event *ev; /* under mu: events for the loop, in order */
  size_t nev, cap_ev;
  void (*on_stopped)(struct dev *, void *);
  int index;                     /* the device index it was opened with */
  unsigned place;                /* its number among the daemon's devices (dev_open) */
  char logname[24];              /* "device N", N its place among the daemon's: for the log */
  const struct dev_hooks *hooks; /* its jobs and events go up through these, with user */
  void *user;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct job *in_head, *in_tail;                      /* linked through job->dev_next */
  struct dev_bufop *bufin_head, *bufin_tail, *bufout; /* under mu: device buffers' operations */
  uint64_t gen; /* the device process's number: dev__launch counts them (dev_bufs.c) */
  struct job *out_head, *out_tail;
  int stopping, stopped;         /* under mu */
  int64_t stop_deadline;         /* under mu */
  int stop_now;                  /* device thread: snapshot of stopping */
  int64_t stop_at;               /* device thread: snapshot of stop_deadline */
  _Atomic unsigned cus, workers; /* set at each launch, read by the loop */
  struct run *runs;              /* device thread only */
  struct run *carried;           /* runs suspended across a reload (dev_carry.c) */
  int fresh; /* device thread: the last dp_wait read every task in flight (poll_tasks) */
  /* under mu: a restart or a reload's launch writes them, the loop copies
   * them (dev_name) */
  char name[256];
  char backend[16];
  char backend_note[1024]; /* which backend and why (coop_rt_backend_note) */
  /* kernel reload, under mu: requested by dev_swap, done by the device */
  struct dp *swap_rt;
  const struct kset *swap_ks;
  int swapping, swap_done, swap_err;
  int64_t swap_deadline;
  char swap_msg[2048];
  void (*on_swapped)(int err, const char *msg, void *user);
  int swap_now;      /* device thread: snapshot of swapping */
  int64_t swap_at;   /* device thread: snapshot of swap_deadline */
  int swap_prepared; /* device thread: swap_rt's arena made (1) or tried (-1) */
  /* Rebuilding in place (dev_next_build), under mu: next_state is
   * NEXT_IDLE, NEXT_ASKED (the device thread starts the build), NEXT_BUILDING
   * (it polls the build), NEXT_BUILT, NEXT_UNAVAILABLE, or a coop error;
   * next_cv wakes the reload's work thread when it is one of the last
   * three. swap_inplace: the swap in progress is of that set (swap_rt
   * NULL); swap_rebuilt: a restart meanwhile built it into a new device
   * process, which the swap then only adopts. */
  int next_state, next_drop, swap_inplace, swap_rebuilt;
  const struct kset *next_ks;
  char next_msg[8192];
  pthread_cond_t next_cv;
  char broken[512];          /* device thread: why no runtime is running, or "" */
  struct dev_view view;      /* under mu: the last snapshot (TOP) */
  struct dev_view next_view; /* device thread: the one being built */
  int64_t view_at;           /* device thread: when it was last built */
  uint64_t view_of;          /* device thread: the gen it was read from (0: no runtime) */
  int view_busy;             /* device thread: the view published shows a job or an owner */
  struct job *coop_wait_head, *coop_wait_tail; /* device thread: see the top */
  /* device thread: jobs waiting for their user's turn (dev_turns.c); the
   * last pass left buffer operations for the next (dev_bufs.c) */
  struct job *turn_head, *turn_tail;
  int bufops_left;
  /* device thread: jobs waiting for room in the arena (dev_room.c); a run
   * ended, or a waiting job left, since they were last tried */
  struct job *room_head, *room_tail;
  int room_freed;
  uint64_t room_seq; /* counts the room_freed set, for suspended runs' tries */
  /* device thread: the arena bytes each user's device buffers hold in the
   * device process of generation bufuse_gen (dev_bufs.c), for the room's
   * share (dev_room.c); a user whose entry falls to 0 leaves the table */
  struct dev_bufuse {
    uint32_t uid;
    uint64_t bytes;
  } * bufuse;
  unsigned nbufuse, capbufuse;
  uint64_t bufuse_gen;
  /* device thread: each user's tasks' worker time beyond its share
   * ([jobs] task_percent_per_uid, dev_turns.c), at most DEV_SHARE_USERS */
  struct dev_share {
    uint32_t uid;
    int64_t at;   /* when debt was last brought up to date (host ns) */
    int64_t debt; /* worker-ns taken beyond the share, decaying at the share's rate */
  } share[64];
  unsigned nshare;
  struct {
    uint32_t uid;
    uint64_t at; /* serve_seq when this user last started a cooperative job */
  } served[64];
  unsigned nserved;
  uint64_t serve_seq;
  /* bumped when the slot queue or the cooperative runs change; the waiting
   * jobs' places were last published at places_seq, for places_workers */
  uint64_t slots_seq, places_seq, caps_seq;
  _Atomic unsigned free_slots; /* device thread -> others: dev_free_slots (dev_move.c) */
  /* device thread -> loop: the arena bytes jobs' copies hold and wait for
   * (dev_room_taken, dev_room.c) */
  _Atomic uint64_t room_taken;
  unsigned places_workers, caps_workers;
  /* watchdog */
  char restart_why[256]; /* device thread: set to restart the device process */
  uint64_t hung_job;     /* device thread: the job that caused it, or 0 */
  _Atomic uint32_t gather_timeouts, hung;
  char watch_last[COOP_WIRE_TEXT_MAX]; /* under mu */
  /* under mu: the same event for users other than watch_uid (whose job it
   * names) and root: no other user's job id, kernel or uid */
  char watch_public[COOP_WIRE_TEXT_MAX];
  uint32_t watch_uid;
  /* idle parking (see the top): device thread, parked mirrored for stats */
  int kick; /* eventfd: new work for the device thread; ends the child's dp_wait */
  /* in_wait: 1 while the device thread is in a request the child may wait
   * in for the kick (DP_WAIT, DP_SUBMIT's wait): only then is the eventfd
   * written (dev__kick, dev__wait_begin); kick_pending: it was written
   * since the device thread last drained it (take_new) */
  _Atomic int in_wait, kick_pending;
  /* the idle spin (device.c, spin_for_work): work_seq counts kicks (any
   * thread); the rest is the device thread's */
  _Atomic unsigned work_seq;
  unsigned seen_seq;            /* work_seq when the last pass took its work */
  _Atomic int64_t idle_spin_ns; /* [device] idle_spin_us, resolved at launch (dev_idle_spin_ns) */
  int64_t spin_until;           /* the last hand-back + idle_spin_ns */
  int64_t slice_ns[2];          /* the last slices' time out [0] and in [1] (a running mean) */
  /* warm ahead (dev_warm.c): a window per frame loop whose last frame
   * ended; the end the device process was last told to spin to (0: none) */
  struct dev_warm warm[DEV_WARM_MAX];
  int64_t warm_told;
  const struct dp *warm_rt; /* the device process warm_told was told to */
  /* suspending ahead (dev_prio.c): a window per frame loop, of those
   * whose last task ended (at most DEV_PRE_MAX) */
  struct dev_pre pre[DEV_PRE_MAX];
  struct dev_hold_ask hold_asks[DEV_HOLD_ASKS]; /* dev_holds.c */
  int hold_refusing;                            /* the last ask was refused (logged once) */
  int64_t pre_ahead_ns; /* DEV_PRE_AHEAD_NS (tests: COOP_TEST_PRE_AHEAD_MS) */
  int inl_fd;           /* the kept memfd of jobs' inline bytes (dev_stage.c), or -1 */
  uint64_t inl_size;    /* its size */
  int zero_fd;          /* DEV_SLICE zero bytes, sealed against resizing (dev_stage.c), or -1 */
  int parked;
  int64_t idle_since; /* when the device last had a run or a waiting job */
  _Atomic uint32_t parked_pub, parks;
  _Atomic int64_t unpark_ns; /* the last relaunch's cost */
  /* held back after a restart (dev_hold.c): device thread */
  struct dev_hold holds[DEV_MAX_HOLDS];
  unsigned nholds;
  struct job *held_head, *held_tail; /* their jobs, in order */
  /* device thread: dp_view's answer for dev__build_view and the watchdog's
   * holders(); too large for the stack, and a static array would be shared
   * by the threads of several devices */
  coop_task_id wg_owner[COOP_WIRE_MAX_WG];
  uint8_t wg_resv[COOP_WIRE_MAX_WG];
};

static inline int dev__periodic(const struct job *j) { return j->period_us != 0; }
/* [device] arena_mb in bytes. */
static inline uint64_t dev__arena_bytes(const struct dev *d) {
  return (uint64_t)d->cfg->arena_mb << 20;
}
static inline int dev__is_coop(const struct job *j) {
  return !!(j->flags & COOP_SUBMIT_COOPERATIVE);
}
/* j at the end of the job queue head..tail (linked by dev_next). */
static inline void dev__jobq_push(struct job **head, struct job **tail, struct job *j) {
  j->dev_next = NULL;
  if (*tail)
    (*tail)->dev_next = j;
  else
    *head = j;
  *tail = j;
}

/* device.c */
/* New work for the device thread (any thread): counted in work_seq and,
 * while the device thread waits in its device process, written to the
 * kick eventfd, which ends that wait at once. */
void dev__kick(struct dev *d);
/* Around a request in which the device process may wait for the kick
 * (device thread): from begin, kicks are written to the eventfd, and work
 * that came since the pass took its queues kicks it at once. */
void dev__wait_begin(struct dev *d);
void dev__wait_end(struct dev *d);
/* A job or a buffer operation answered: the next is likely within
 * idle_spin_ns, so the device thread watches for it that long before it
 * sleeps (device.c, spin_for_work). */
void dev__spin_after(struct dev *d);
/* Whether work waits for the device thread's next pass: a job or a buffer
 * operation queued, a stop or a swap asked for (takes the mutex). */
int dev__new_work(struct dev *d);
/* A suspended job (its run in j->dev_run) or a waiting one, from another
 * device thread: queued in d's in queue, it waits first in d's slot queue
 * (take_new). index: d's place in the daemon's devices (job.device).
 * -1 when d is stopping (the job stays the caller's). */
int dev__adopt(struct dev *d, struct job *j, unsigned index);
/* Jobs waiting here for room that another device's arena has now move
 * there (dev_move.c). */
void dev__move_room_waiters(struct dev *d);
/* j, not started (waiting for room, or held back), handed to the device
 * MIGRATE asked for: 1, or 0 where no move is asked (dev_move.c). */
int dev__move_queued(struct dev *d, struct job *j);
/* A finished job back to the loop (the out queue and the uv_async). */
void dev__hand_back(struct dev *d, struct job *j);
/* A job cancelled before it ran (its client, or a stop: then the message
 * says the daemon is shutting down, else why), handed back. */
void dev__cancel_queued(struct dev *d, struct job *j, const char *why);
/* Launches the megakernel of rt and makes it d's (it takes rt on success):
 * 0, or a coop code with a message in err. */
int dev__launch(struct dev *d, struct dp *rt, char *err, size_t errlen);

/* dev_run.c */
/* The job fails with code and the message fmt, ... (its client's text). */
void dev__fail(struct job *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Work for the loop is queued (under mu): tells it, by the flag it reads
 * every turn while it spins (dev_poll), else by uv_async_send. Any
 * thread. */
void dev__announce(struct dev *d);
void dev__prewake(struct dev *d);
/* A job whose turn has come: resolved, its buffers staged, a run of it
 * started; or handed back failed. */
void dev__start_now(struct dev *d, struct job *j);
/* Whether r's task may be asked to suspend now (for a priority, a share,
 * a checkpoint or a move): a one-task cooperative job whose task has been
 * seen running, not being cancelled, and that nothing else is suspending
 * or resuming (a reload's carry, a priority, a checkpoint, a move: two at
 * once left one's flag set on a task the other resumed). */
int dev__may_suspend(const struct run *r);
/* r's task is SUSPENDED and about to be released: its counters merged
 * into the job's, and its times kept if it was the first (the RESULT of a
 * resumed job counts from its first task; record). */
void dev__segment_end(struct dev *d, struct run *r);
/* One pass over a run: cancel, watchdog, release, poll. 1 when finished. */
int dev__step_run(struct dev *d, struct run *r, int64_t now, int64_t *wake);
/* j's kernel looked up in d's set and admitted there: 0, or j failed. */
int dev__resolve(struct dev *d, struct job *j);
/* The frame path of job j (a copy of its loop's last frame's: struct dev_warm) run
 * dry at its warm window's start: its checks at the start, its task's
 * description and its request's body built and dropped; nothing sent,
 * nothing changed (docs/daemon.md, "Spinning"). 1 when it got as far as
 * the request (a frame whose ranges go with its submit), else 0. */
int dev__warm_path(struct dev *d, const struct job *j);

/* dev_holds.c: next_ns, the time of job j's next task, when j's user may
 * ask a hold for it (its chain's, or one of DEV_HOLDS_PER_UID), noted;
 * else 0: the next task gathers as it comes. */
int64_t dev__hold_ask(struct dev *d, const struct job *j, int64_t next_ns);

/* dev_warm.c: job j's loop's window for its next frame (j handed back);
 * the pass's part (begins, spins, ends windows; the wake no later than the
 * next start); the wake no later than the next window's start; the end of
 * the earliest-beginning window that overlaps a..b (its start in *from if
 * not NULL), 0: none; every window and its job's copy freed. */
void dev__warm_arm(struct dev *d, const struct job *j);
void dev__warm_ahead(struct dev *d, int64_t now, int64_t *wake);
void dev__warm_due(const struct dev *d, int64_t now, int64_t *wake);
int64_t dev__warm_within(const struct dev *d, int64_t a, int64_t b, int64_t *from);
void dev__warm_free(struct dev *d);
/* The task that runs j (its kernel, size, arguments, cap). */
void dev__task_desc(struct dev *d, const struct job *j, const struct run *r,
                    struct coop_rt_task_desc *td);

/* dev_carry.c: a reload in progress: ask r's task to suspend if the job
 * may be carried across it; its task SUSPENDED: its state and buffers out
 * (0: carried, off d->runs; -1: the job failed); after the swap: every
 * carried run resumed in the new device process, or failed. */
void dev__carry_request(struct dev *d, struct run *r);
/* A reload seen: its new device process prepared now, while the jobs it
 * will carry still run (once per reload; see swap_prepared). */
void dev__carry_prepare(struct dev *d);
int dev__carry_out(struct dev *d, struct run *r, const char *where);
/* The device process a reload's carried buffers go to on the device (its
 * shares), or NULL: none is ready (a move to another device, or no reload). */
struct dp *dev__carry_into(struct dev *d);
/* A suspended job waiting in coop_wait: its buffers copied out of the
 * device process into a share of `into` (r->carry_share; NULL: none) or
 * else r->carry_fd, freed there: 0, or -1 (the job failed; where: "across
 * the kernel reload", "for its move to another device"). */
int dev__carry_waiting(struct dev *d, struct run *r, const char *where, struct dp *into);
void dev__carry_in(struct dev *d);
/* Before the swap: each suspended job waiting in coop_wait has its
 * buffers copied out of the old device process (or fails, when the new
 * set changed its kernel). */
void dev__carry_suspended(struct dev *d);
/* Before next's launch: next's arena prepared and the buffers carried in
 * its shares staged there, the shares freed (after the launch a free
 * would wait for the megakernel). soft: while the old device process
 * still closes, when next's arena may not fit yet: what fails is left
 * for a second call, once the old one is gone, which fails the job
 * instead. Returns how many runs still have their buffers in a share. */
int dev__carry_prestage(struct dev *d, struct dp *next, int soft);
/* Whether r's buffers left the device process for the reload (a memfd or
 * a share of the next one): a restart of the old one loses nothing. */
int dev__carried(const struct run *r);
/* r's carried buffers let go: the memfd closed, the share freed. */
void dev__carry_drop(struct dev *d, struct run *r);
/* A suspended run's task again from its saved state (r->state_fd), its
 * buffers staged first if they were carried (r->carry_fd): 0, or the
 * coop code (the job failed with it); with DEV_RESUME_MAY_WAIT in how,
 * DEV_ROOM_WAIT where they found no room that a run's end may make
 * (nothing changed); with DEV_RESUME_MAY_LOSE, where the device process
 * died under it (the job not failed), DEV_RESUME_AGAIN when its state and
 * buffers were in memfds (its job back in coop_wait, first, suspended as
 * it was, with r as its dev_run: resume_again in dev_carry.c), else DEV_RESUME_LOST
 * (the restart takes the run). */
int dev__resume_run(struct dev *d, struct run *r, int how);
/* r's task again from the state in state_fd, its buffers where they are
 * (in this device process): 0, or a coop code (nothing changed). */
int dev__resume_task(struct dev *d, struct run *r, int state_fd);
/* A run ended (or was lost): the job's final state, its buffers back, and
 * the job handed back. */
void dev__finish_job(struct dev *d, struct run *r);
/* The same where the restart may take the job instead (the device
 * thread's pass): 1 when its device process died under the unstage and
 * dev__runs_again holds, the run kept (it stays in d->runs for
 * dev__restart, next in the pass), else 0, the job finished. */
int dev__finish_or_keep(struct dev *d, struct run *r);

/* dev_ckpt.c */
/* Each buffer of j (not device buffers) at its offset in the memfd fd, in
 * argument order, into b: copied in (in = 1) or out (in = 0; the memfd
 * is sized). fd -1: laid out only. Returns how many. */
unsigned dev__carry_bufs(struct job *j, struct dp_buf *b, int fd, int in);
/* The bytes of j's buffers (not device buffers): what its staging copies
 * into the arena, and dev__carry_bufs lays out. */
uint64_t dev__buf_bytes(const struct job *j);
/* The kernel arguments of j's buffers (not device buffers) from the args
 * dp_stage set in b, laid out as dev__carry_bufs does. */
void dev__staged_args(struct job *j, const struct dp_buf *b);
/* Asks r's task to suspend for a checkpoint when [jobs] checkpoint_ms
 * has passed since its last one (or its start). */
void dev__ckpt_request(struct dev *d, struct run *r, int64_t now);
/* r's task, asked by dev__ckpt_request, is SUSPENDED: its state and
 * buffers copied out (the run's new checkpoint) and the task resumed at
 * once. 0, or -1: the job failed (its run ended), or the device process
 * died (the run left for the restart). */
int dev__ckpt_take(struct dev *d, struct run *r);
/* A drain in progress (r->draining): the next DEV_DRAIN_CHUNK bytes of
 * r's snapshot into its pending memfd, the pair made the checkpoint when
 * the last is there; *wake set to now while more remain. */
#define DEV_DRAIN_CHUNK (4u << 20) /* about 2 ms of the device thread on an H200 */
void dev__ckpt_drain(struct dev *d, struct run *r, int64_t now, int64_t *wake);
/* r's task leaves the device (it ends, is suspended or carried): its
 * snapshot freed in the arena, a drain abandoned (the last checkpoint
 * stays). dev__ckpt_forget: the same where the arena is already gone (a
 * restart), nothing asked of the device process. */
void dev__ckpt_drop(struct dev *d, struct run *r);
void dev__ckpt_forget(struct run *r);
/* The arena is full for a staging of `need` bytes: every run's snapshot
 * dropped (drains in progress abandoned), so that the staging may be
 * tried again; how many were freed (0: trying again is no use). None is
 * dropped for a staging that would not fit the arena without them. */
unsigned dev__ckpt_evict(struct dev *d, uint64_t need);
/* The bytes of n buffers to stage. */
uint64_t dev__dp_bytes(const struct dp_buf *b, unsigned n);
/* Why r may not resume after a device restart (a phrase for its job's
 * message), or NULL when it may: the cause, cancelled or failed, its
 * DEV_MAX_RERUNS spent, a stop. */
const char *dev__restart_refused(struct dev *d, const struct run *r);
/* r's job back in coop_wait, first, suspended (job.suspended_for why)
 * after a device restart, to resume in the next device process: the
 * restart charged (DEV_MAX_RERUNS) and counted in its RESULT's message
 * (restores and lost_ns counted first where it resumes from a checkpoint). */
void dev__wait_after_restart(struct dev *d, struct run *r, int64_t now, int32_t why);
/* A run the restart took: 1 when it will resume from its last checkpoint
 * (its job back in coop_wait, first, as a suspended job whose state and
 * buffers are copies of the checkpoint's), else 0. */
int dev__ckpt_restore(struct dev *d, struct run *r, int64_t now);
/* Why r may not resume from a checkpoint after a restart (a phrase for
 * its job's message: it has none, dev__restart_refused's, or a reload
 * about to swap), or NULL when it may (dev_ckpt.c). */
const char *dev__ckpt_refused(struct dev *d, const struct run *r);
/* A run done with: its descriptors closed, freed. */
void dev__run_free(struct run *r);

/* dev_move.c */
/* r's job asked to move (job.move_to): its task asked to suspend once it
 * runs and nothing else suspends it. */
/* j's move to `to` (at index), asked: 0, or -1 where one is asked already
 * (jobs.h, move_to: taken from 0 by compare and swap, then move_dev, then
 * the index). Loop or device thread. */
int dev__move_claim(struct job *j, struct dev *to, unsigned index);
/* The index + 1 of the device j moves to, once a move is wholly asked
 * (0: none, or one still being asked). */
unsigned dev__move_asked(const struct job *j);
void dev__move_request(struct dev *d, struct run *r);
/* r, suspended and carried out (dev__carry_out), off d->runs: handed to
 * the device its job moves to. */
void dev__move_out(struct dev *d, struct run *r);
/* The jobs waiting in coop_wait that move: asked to (MIGRATE), or
 * suspended while another device has a free slot (hooks->move_target):
 * their buffers out, handed over. Then d's free slots published. */
void dev__move_waiting(struct dev *d);

/* dev_prio.c */
/* How long before (and after) a frame loop's expected task the jobs it
 * would suspend are suspended (dev__preempt_arm): gathering ahead's window
 * (docs/scheduler.md, "Gathering ahead", COOP_RT_AHEAD_NS). A frame off
 * its grid by more is preempted as it comes, as before. */
#define DEV_PRE_AHEAD_NS 500000LL
/* Suspends what a waiting job of higher priority, a non-cooperative run
 * of higher priority that lacks workers, or a user below its share of the
 * slots needs: one cooperative run at a time per need. */
void dev__preempt(struct dev *d);
/* The same for r alone, before its task is submitted (none in flight): the
 * suspension asked first, its workgroups come free while the submit is on
 * its way, instead of after it and the rest of the pass (the task's gather
 * shorter by both). */
void dev__preempt_before_submit(struct dev *d, struct run *r);
/* r's task, asked to suspend by dev__preempt, is SUSPENDED: its state
 * saved, the task released, its job back in coop_wait (first) with r as
 * its dev_run. 0, or -1: the job failed (r stays on d->runs, finished). */
int dev__suspend_out(struct dev *d, struct run *r);
/* Asks r's task to suspend for `p` (a priority or DEV_FOR_*), logged with
 * why; nothing if the runtime refuses (the next pass asks again). */
void dev__suspend(struct dev *d, struct run *r, int32_t p, const char *why);
/* Whether a job of priority p waits for a non-cooperative run of higher
 * priority that had cooperative jobs suspended, or for a frame loop's
 * next task whose window is open (DEV_SLOT_PRIORITY; a cooperative run's
 * first task is not submitted meanwhile, dev__step_run). */
int dev__prio_blocked(const struct dev *d, int32_t p);
/* A job handed back: if it is a frame loop's (a one-task job whose next
 * task is expected, j->next_ns), the window around that task in which
 * what it will need is suspended ahead. */
void dev__preempt_arm(struct dev *d, const struct job *j);
/* The pass's part of suspending ahead: inside the window, what the
 * expected task will lack is suspended; *wake no later than the window's
 * start, or its end. */
void dev__preempt_ahead(struct dev *d, int64_t now, int64_t *wake);
/* *wake no later than the start of the window ahead of a frame loop's next
 * task, when that is still to come. */
void dev__preempt_due(const struct dev *d, int64_t now, int64_t *wake);
/* *wake no later than the start of the next window ahead of a frame (its
 * warming, its suspending ahead) still to come (device.c). */
void dev__windows_due(const struct dev *d, int64_t now, int64_t *wake);
/* A suspended job that leaves coop_wait without running again (cancelled,
 * a stop, a restart that took its buffers, a reload that changed its
 * kernel): its run finished with j's state as set (or CANCELLED). */
void dev__drop_suspended(struct dev *d, struct job *j);
/* A run taken from coop_wait to run on (dev_slots.c put it back on
 * d->runs, `resuming`): its task again from the saved state. 0, -1: the
 * job failed, or DEV_ROOM_WAIT: its buffers found no room, and its job is
 * back in coop_wait, first, with r as its dev_run (r to leave d->runs),
 * DEV_RESUME_AGAIN: the same where the device process died under it, or
 * DEV_RESUME_LOST: it died under it and took the buffers (r stays on
 * d->runs for the restart). */
int dev__resume_suspended(struct dev *d, struct run *r);
/* The device process is gone with the buffers of the suspended jobs that
 * were not carried: their runs back on d->runs, to be lost or run again
 * from the start with the others (dev__restart). */
void dev__unsuspend_lost(struct dev *d);

/* dev_watch.c */
/* A job a restart took that can run again from the start, as if new
 * (one task, only inputs and outputs, not the cause, not cancelled or
 * failed, not yet run again DEV_MAX_RERUNS times). */
int dev__runs_again(const struct dev *d, const struct run *r);

/* Whether this restart counts against job j's DEV_MAX_RERUNS: unless
 * another job is known to have caused it (the watchdog's hung job). The
 * bound is there for a job that crashes its device itself; charged for
 * every restart, a checkpointed or rerun job of one user failed ELOST at
 * the third restart another user's hung jobs caused. */
int dev__restart_charged(const struct dev *d, const struct job *j);

/* dev_stage.c */
/* Arena copies of the job's buffers, IN data copied in: 0; the code the
 * job failed with; or COOP_ELOST, the job not failed, when the device
 * process died under the request (nothing of it ran: the restart runs it). */
int dev__stage_in(struct dev *d, struct job *j);
/* OUT data back when `out` (but a sliced buffer's where `emptied`: its
 * bytes went by dev__slice), every arena copy freed, and the ended task
 * `release` (0: none) given back to the runtime, in one request: 0, or
 * COOP_ELOST, the job not failed, when the device process died under it
 * (the caller fails it, or lets a restart run it again); other failures
 * fail the job. */
int dev__unstage(struct dev *d, struct job *j, int out, int emptied, coop_task_id release);
/* Whether j has a buffer whose bytes in direction dir (COOP_BUF_IN, _OUT)
 * move in slices: large ones are staged as room only, then filled by
 * dev__slice (with their IN data, or zeroes); OUT ones emptied by it, then
 * left out of the unstage (`emptied`). */
int dev__sliced(const struct job *j, unsigned dir);
/* The next slice in direction `in` (1: into the arena, 0: back out) from
 * r->slice_arg, r->slice_at: 1 while more are left, 0 when all are
 * through; COOP_ELOST, the job not failed, when the device process died
 * under it; else the code the job failed with. */
int dev__slice(struct dev *d, struct run *r, int in);
/* A memfd of DEV_SLICE zero bytes, sealed against shrinking and growing
 * (the device process may pin it: xmap.h), or -1: where a large buffer
 * without IN data gets its zeroes from, a slice at a time. */
int dev__zeros_make(void);
/* The same for a job whose end the device process did with its submit
 * (dp_submit_end): nothing to ask it, the breach it found (-1: none). */
void dev__unstage_ended(struct job *j, int breach);

/* dev_bufs.c */
/* The arena bytes uid's device buffers hold on d's device process now
 * (on CUDA those in the device zone beside it do not count). */
uint64_t dev__bufs_in_arena(const struct dev *d, uint32_t uid);
/* The same for every user. */
uint64_t dev__bufs_in_arena_all(const struct dev *d);
/* The device buffers' operations queued so far, done in order and handed
 * back (take_new, before the jobs): all of them, or (all = 0) in turns
 * between users, those left past DEV_BUFOP_PASS_NS kept for the next pass. */
void dev__do_bufops(struct dev *d, int all);
/* A job's device buffers still on this device process: 0, or the job
 * failed with COOP_ELOST. */
int dev__check_bufs(struct dev *d, struct job *j);
/* The ranges of device buffers the job moves (job_arg.io_*): written from
 * its client's descriptors (`in`: before its first task), or read into
 * them (after its last, once it is done). 0; the code the job failed with;
 * or COOP_ELOST, the job not failed, when the device process died. Before
 * the first OUT copy it wakes a sleeping loop for the hand-back that
 * follows (dev__prewake). */
int dev__io(struct dev *d, struct job *j, int in);
/* Whether job j's ranges may go with its one task's submit (dp_submit_io):
 * a one-task job, not cooperative, every range of one file that the device
 * process holds mapped. b (COOP_RT_MAX_ARGS entries), n: those ranges, where
 * not NULL. */
int dev__io_with_submit(struct dev *d, const struct job *j, struct dp_buf *b, unsigned *n);
/* The trace's stamps of the last request to the device process
 * (dp_last_call) as job j's copy in (io_*) or out (out_*). */
void dev__trace_copy(struct dev *d, struct job *j, int in);
/* The same with a call's stamps t (dp_last_call's order). */
void dev__trace_copy_at(struct job *j, int in, const int64_t t[4]);

/* dev_slots.c */
/* Why a cooperative job waits for a slot (job.slot_why): every slot is
 * held; its user holds its share; the last free slot is kept for a user
 * holding none; a reload drains the device. */
#define DEV_SLOT_FULL 1u
#define DEV_SLOT_SHARE 2u
#define DEV_SLOT_KEPT 3u
#define DEV_SLOT_RELOAD 4u
#define DEV_SLOT_PRIORITY 5u
/* a job that is not cooperative, waiting for its user's turn (dev_turns.c):
 * slot_count is [jobs] tasks_per_uid, slot_mine its user's jobs running */
#define DEV_SLOT_TURN 6u
/* a task held for its user's share of the device's worker time (dev_turns.c):
 * slot_count is [jobs] task_percent_per_uid, slot_mine the ms it waits yet */
#define DEV_SLOT_TASKSHARE 7u
/* a job waiting for room in the arena (dev_room.c): slot_count is [device]
 * arena_mb, slot_held the KiB the runs' copies hold, slot_mine its own KiB */
#define DEV_SLOT_ROOM 8u
/* a job held back while another user's waits for room (dev_room.c):
 * slot_count is [limits] max_buffer_percent_per_uid, slot_held the KiB its
 * user's runs hold, slot_mine that share's KiB */
#define DEV_SLOT_ROOM_SHARE 9u
/* the same as DEV_SLOT_TURN for the workgroups its user's jobs hold
 * (dev_turns.c, DEV_TURN_DEPTH): slot_count is the workers, slot_held the
 * workgroups of its user's slot_mine jobs */
#define DEV_SLOT_TURN_WIDE 10u
/* a periodic cooperative job whose user runs one here already (dev_slots.c,
 * runs_periodic) */
#define DEV_SLOT_PERIODIC 11u
/* A job taken from the in queue (or after a restart) to start: a
 * cooperative one through the slots' queue, any other at once. */
void dev__start_job(struct dev *d, struct job *j);
/* Starts the waiting cooperative jobs that may start; hands back the ones
 * cancelled (or all, at a stop) while waiting. */
void dev__pump_coop_wait(struct dev *d);
/* j first in coop_wait: a suspended job, which ran before any waiting one
 * (suspended here, back from a checkpoint, or moved here). */
void dev__coop_wait_push_front(struct dev *d, struct job *j);
/* *p (a link of coop_wait) taken off the queue. */
void dev__coop_wait_remove(struct dev *d, struct job **p);
/* The running cooperative jobs (of uid, unless NULL) and the workers they
 * may hold together (coop_slots); the users whose cooperative jobs run or
 * wait; a user's share of the slots. */
unsigned dev__coop_running(const struct dev *d, const uint32_t *uid);
/* The runs (of uid, unless NULL) that are cooperative (coop = 1) or not. */
unsigned dev__runs_of(const struct dev *d, const uint32_t *uid, int coop);
unsigned dev__coop_slots(const struct dev *d);
unsigned dev__coop_share(const struct dev *d);
/* Whether job j is periodic and cooperative and its user runs such a job
 * here already: it waits for that one, not for a slot (DEV_SLOT_PERIODIC),
 * and nothing is suspended for it. */
int dev__periodic_held(const struct dev *d, const struct job *j);

/* dev_turns.c */
/* A job that is not cooperative, about to start: 1 if it waits instead,
 * its user running [jobs] tasks_per_uid such jobs here already (or others
 * waiting before it), 0 to start it now. */
int dev__turn_waits(struct dev *d, struct job *j);
/* Whether run r may put one more instance in flight beside the ones it
 * has: a periodic job's instances together hold at most DEV_TURN_DEPTH
 * times the workers in workgroups, as a user's jobs do (dev_turns.c). */
int dev__turn_room(const struct dev *d, const struct run *r);
/* dev_room.c. dev__stage_in's answer for a job that waits for room. */
#define DEV_ROOM_WAIT 1
/* dev__resume_run's answer where the device process died under it. */
#define DEV_RESUME_LOST 2
/* dev__resume_run's answer where the device process died under it and the
 * job is back in coop_wait, suspended as it was (resume_again, dev_carry.c). */
#define DEV_RESUME_AGAIN 3
/* dev__resume_run's `how`: it may answer DEV_ROOM_WAIT; and DEV_RESUME_LOST
 * or DEV_RESUME_AGAIN. */
#define DEV_RESUME_MAY_WAIT 1
#define DEV_RESUME_MAY_LOSE 2
/* Whether j, about to be staged, is held back: another user's job waits
 * for room within its user's share and j's user's runs hold their share
 * of the arena. */
int dev__room_gated(struct dev *d, struct job *j);
/* After j found no room: whether a run's end may make it (other runs hold
 * arena copies, and j's bytes do not pass the arena's); then j's WAIT
 * says so. */
int dev__room_later(struct dev *d, struct job *j);
/* The arena bytes the copies of d's jobs hold (running, or suspended
 * there): room that comes back as they end. */
uint64_t dev__room_held(const struct dev *d);
/* j waits for room (its run freed, nothing of it on the device). */
void dev__room_wait(struct dev *d, struct job *j);
/* Tries the waiting jobs again, in order, where a run ended or a waiting
 * one left since; cancels the cancelled ones. First moves out of the arena
 * the buffers of the jobs suspended for room (dev__room_preempt). */
void dev__pump_room(struct dev *d);
/* What dev_room_taken reads, published after a pass. */
void dev__room_publish(struct dev *d);
/* For the job waiting for room of the highest priority: a cooperative job
 * of lower priority, or, while that job's user stays within [limits]
 * max_buffer_percent_per_uid of the arena, one of another user past it,
 * is suspended (one at a time) for its buffers to leave the arena. */
void dev__room_preempt(struct dev *d);
/* Whether suspended j, its buffers out of the arena, stays suspended for
 * now: it found no room and no run ended since, or another user's job
 * waits for room and j's user would pass its share with j back. */
int dev__room_holds(const struct dev *d, const struct job *j);
/* Run r's next task, not cooperative: 1 if it is held back now, its user's
 * tasks having taken more than [jobs] task_percent_per_uid of the device's
 * worker time while another user's cooperative job runs or waits here
 * (*wake then no later than when the share allows it), else 0. */
int dev__share_holds(struct dev *d, struct run *r, int64_t now, int64_t *wake);
/* A task of j (not cooperative) that ran groups workgroups from started
 * to finished (host ns), and, where next_ns is not 0, held them after it
 * for its user's next task due then (gathering ahead): charged to its
 * user's share. */
void dev__share_charge(struct dev *d, const struct job *j, unsigned groups, int64_t started,
                       int64_t finished, int64_t next_ns);
/* Starts, in order, the waiting ones whose user may run one more; hands
 * back the ones cancelled (or all, at a stop) while waiting. */
void dev__pump_turns(struct dev *d);

/* dev_watch.c */
/* The watchdog's look at one run. */
void dev__watch_run(struct dev *d, struct run *r, int64_t now);
/* The device process died or a kernel hung: kill it, fail the jobs that
 * were on it, start a new one. */
void dev__restart(struct dev *d);

/* dev_hold.c */
/* uid's job made the device restart: holds its jobs back for longer each
 * time; returns how long (ms). */
int64_t dev__hold(struct dev *d, uint32_t uid, int64_t now);
/* The restarts uid caused since it was last forgiven. */
unsigned dev__hold_restarts(struct dev *d, uint32_t uid);
/* Whether uid's jobs wait now. */
int dev__held(struct dev *d, uint32_t uid, int64_t now);
/* A job of a held user, queued in order. */
void dev__queue_held(struct dev *d, struct job *j);
/* Starts the held jobs whose users' time is over, hands back the ones
 * cancelled (or all, at a stop); lowers *wake to the next end of a hold. */
void dev__pump_held(struct dev *d, int64_t now, int64_t *wake);

/* dev_view.c */
/* The live view for TOP, from the device process at most every
 * DEV_VIEW_NS; an idle device's at once, without a request. */
void dev__build_view(struct dev *d, int64_t now);

#endif /* COOPD_DEV_INTERNAL_H */
