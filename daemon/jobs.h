/*
 * jobs.h: a client job (a task, or a periodic series of task instances),
 * and the daemon's table of them (jobs.c): who may see which, admission
 * (job_admit, the one place that decides whether a request may run), the
 * finished-job counters and the gather statistics.
 *
 * Ownership: the loop thread creates a job and hands it to the device
 * thread (dev_submit); from then until the device thread posts it back as
 * finished, only the device thread writes the result fields below, and the
 * loop reads only the fields marked (imm), the atomics, and the periodic
 * instances that instances_done publishes (inst_order). After the
 * hand-back the loop owns it all again.
 */
#ifndef COOPD_JOBS_H
#define COOPD_JOBS_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace.h"
#include "wire.h"

struct daemon;
struct dbuf;
struct dev;
struct fdref;
struct kdef;
struct session;
struct uid_use;

struct job_arg {
  uint8_t type, dir;
  uint64_t bits; /* scalars */
  uint64_t size; /* buffers */
  int fd;        /* memfd buffer, or -1 */
  uint8_t *data; /* inline: IN bytes from the client, then OUT bytes back; an IN-only
                  * copy is freed when the job finishes (session_job_done) */
  uint64_t dev;  /* device thread: the arena copy's argument value + 1; 0: none */
  /* a device buffer (bufs.h; type COOP_ARG_BUF, dir 0: nothing staged):
   * its id (0: not one), where it lives (argument value, device process) */
  uint64_t devbuf_id, devbuf_arg, devbuf_gen;
  struct dbuf *devbuf; /* loop: the table's entry, its users counting this job */
  /* a device buffer's range moved with the job (COOP_ARG_DEVBUF_IO;
   * dev_bufs.c, dev__io): bytes io_at..+io_len of the buffer written from the
   * client's descriptor at io_off before the first task (io_dir IN), read
   * into it after the last (OUT); io_fd1: that descriptor + 1, 0: none.
   * Ranges of one job that name one descriptor (a frame's input and output
   * in the connection's transfer memfd) share it: io_owns is 1 on the
   * first, which lets it go (job_io_fds): io_ref's reference when it names
   * the connection's transfer memfd (fdref.h), else a duplicate of the
   * frame's descriptor, closed. io_ino, io_devno: the
   * file's identity, the session's for its transfer memfd, else learned
   * by the device thread's first copy (0: not yet), so that a copy
   * through it needs no fstat */
  int io_fd1;
  uint8_t io_dir, io_owns;
  struct fdref *io_ref;
  uint64_t io_at, io_len, io_off;
  uint64_t io_ino, io_devno;
};

struct waiter;

struct job {
  /* (imm) set before dev_submit */
  uint64_t id;
  uint32_t uid, pid;
  /* its connection's serial (struct session): a frame loop is a
   * connection's (sess_jobs.c, expected_next), and what is kept per loop
   * (warm windows, windows of suspension ahead, holds) is kept per
   * connection: one process may run many loops, one a connection */
  uint64_t conn;
  int kernel_index; /* in the device's runtime */
  char kernel[COOP_WIRE_NAME_MAX];
  uint8_t flags;
  /* its kernel reaches buffers only through views (kset.h, kdef.views):
   * its device buffers' guard zones are checked when freed, not after
   * each task (dev_stage.c) */
  uint8_t views;
  uint32_t groups, period_us, count, duration_ms, deadline_us;
  int32_t priority; /* the SUBMIT's, within what its user may ask (priority.h) */
  unsigned nargs;
  struct job_arg args[COOP_WIRE_MAX_ARGS];
  /* a one-task job: when its client's next task like it is expected
   * (CLOCK_MONOTONIC ns; 0: none), learned from its submissions
   * (sess_jobs.c, expected_next): the scheduler gathers ahead for it */
  int64_t next_ns;
  int64_t next_lead_ns; /* and how long before then that task's frame begins (its
                         * client's first request after a pause: a buffer write):
                         * the warm window opens that much sooner (device.c) */
  int64_t next_alt_ns;  /* the other guess after a frame off its loop's grid (cadence.h,
                         * alt), or 0: the warm window covers both */
  uint8_t no_warm;      /* its user is over its share of warm windows (users.c,
                         * uid_warm_grant): neither the loop nor the device opens one
                         * for its next frame; set before dev_submit */
  uint64_t bytes;       /* charged to the owner and its uid: every buffer's size and the
                         * instance records (job_inst_bytes) while in flight; once finished
                         * (loop), the inline bytes and the records it still holds */

  /* shared: written by either thread with atomics */
  _Atomic uint8_t state;           /* enum coop_job_state */
  _Atomic uint32_t instances_done; /* for STATUS while it runs */
  _Atomic uint32_t misses_so_far;
  atomic_int cancel; /* loop -> device */
  /* device -> loop, while it waits for a cooperative slot (dev_slot_wait):
   * its place in the slot queue + 1 (0: not waiting for one), the slots,
   * those held, those held by its own user, and why (DEV_SLOT_*). For the
   * eye: the loop may read a mix of two updates. */
  _Atomic uint32_t slot_ahead, slot_count, slot_held, slot_mine;
  _Atomic uint8_t slot_why;
  /* device -> loop, while it runs: the cap on its workgroups (0: none) and
   * the users whose cooperative jobs share the width (dev_slot_cap) */
  _Atomic uint32_t slot_cap, slot_users;
  /* device -> loop: 1 while its cooperative task is suspended for a job of
   * higher priority or another user's share (dev_prio.c), and the
   * priority of the job it was suspended for */
  _Atomic uint8_t suspended;
  _Atomic int32_t suspended_for;
  /* where it is: an index into the daemon's devs[], set before dev_submit
   * and stored again by the device thread that hands it to another device
   * (dev_move.c) */
  _Atomic uint8_t device;
  /* loop -> device (MIGRATE) or device -> itself (a suspended job moved
   * to an idle device): the device to move to (its index + 1; 0: none),
   * and its dev. A writer first takes move_to from 0 to JOB_MOVE_CLAIMED
   * (compare and swap: the loop and the device thread may both want to
   * move a suspended job, and before, one's move_dev could pair with the
   * other's index), then stores move_dev, then move_to (seq_cst); a
   * reader treats JOB_MOVE_CLAIMED as no move yet, and reads move_dev
   * after move_to (dev_move.c, dev__move_claim) */
  _Atomic uint8_t move_to;
  struct dev *_Atomic move_dev;
#define JOB_MOVE_CLAIMED 0xffu
  /* loop (MIGRATE): moved by hand, it stays where its user put it and
   * never moves by itself (dev_move.c) */
  _Atomic uint8_t moved_by_hand;
  uint8_t counted_dev; /* loop: the device whose dev_jobs counts it */
  /* (imm) its SUBMIT named its device: it never moves by itself */
  uint8_t device_named;
  /* device thread: it moved once to a device with room for it, and moves
   * for room no more (dev_move.c) */
  uint8_t moved_for_room;

  /* result: device thread until hand-back */
  int32_t error;
  char message[256];
  struct coop_wire_times t;
  uint32_t m_initial, m_min, m_max, kills, forks, resizes;
  uint32_t misses;
  struct coop_wire_inst *inst; /* periodic jobs: every instance */
  uint32_t ninst;
  uint8_t reruns;                 /* run again after a device restart took it (from the start or
                                   * from a checkpoint) */
  uint32_t checkpoints, restores; /* checkpoints taken; resumed from one (dev_ckpt.c) */
  uint32_t restarts_survived;     /* restarts it resumed after: from a checkpoint, or from
                                   * where it was suspended (dev__wait_after_restart) */
  int64_t lost_ns;                /* the work those resumptions did again */
  uint32_t *inst_order;           /* periodic jobs: inst[] indices in the order the instances
                                   * ended; each is set, with its inst[] entry, before
                                   * instances_done counts it, so the loop may read the
                                   * first instances_done while the job runs */

  /* loop thread only */
  struct session *owner;               /* NULL once its client has gone */
  struct job *next;                    /* in the daemon's job list, newest first */
  struct job **pprev;                  /* the pointer to it there: unlinked at once (jobs_link) */
  struct job *id_next, **id_pprev;     /* in its bucket of daemon.job_ids */
  struct job *live_next, **live_pprev; /* in daemon.live until it finishes (NULL since) */
  struct waiter *waiters;              /* its WAITs pending (session.h), newest first */
  /* its owner's jobs, oldest first (session.h, jobs): the oldest finished
   * one is found without a walk of every job (sess_jobs.c, trim_finished) */
  struct job *s_next, **s_pprev;
  /* periodic: its instances and misses in the counters so far */
  uint32_t inst_counted, misses_counted;
  /* device.c's queues (under its mutex) */
  struct job *dev_next;
  struct run *dev_run; /* device thread: its suspended run, while it waits to resume */
  int finished;        /* handed back */
  /* RESULTs of its WAITs not yet built (sess_jobs.c, defer_result): while
   * any, job_drop only dooms it, and the last job_unpin drops it; a
   * doomed job is found by no lookup. Loop thread only. */
  unsigned pins;
  int doomed;

  /* COOP_TRACE_FILE only (trace.h): each field written by one thread,
   * trace.h says which; the device's before the hand-back */
  struct job_trace tr;
};

/* j's descriptors closed, its memory freed and j back to dm's jobpool. */
void job_free(struct daemon *dm, struct job *j);
/* The descriptors j's ranges own (job_arg.io_owns), taken out of j into
 * fds (room for COOP_WIRE_MAX_ARGS): the caller closes them. A range's
 * reference to its connection's transfer memfd is dropped, its descriptor
 * among them only when that was the last. Returns how many. */
unsigned job_io_fds(struct job *j, int *fds);
/* Whether j's arguments name device buffers (bufs.h): they stay on their
 * device, so such a job is neither carried, checkpointed nor moved. */
int job_has_devbufs(const struct job *j);

/* ---- admission ---- */

/* A job's request as admission sees it: a SUBMIT at the edge (the loop),
 * or a queued job about to start (the device thread), whose kernel set a
 * reload may have replaced and whose device a restart may have shrunk. */
enum job_at { JOB_AT_SUBMIT, JOB_AT_START };
struct job_req {
  const char *kernel; /* the name asked for */
  uint8_t flags;      /* COOP_SUBMIT_* */
  uint32_t groups, period_us, count, duration_ms, deadline_us;
  unsigned nargs;
  struct job_req_arg {
    uint8_t type, dir;
    uint64_t bits; /* scalars */
    uint64_t size; /* buffers */
    int fd;        /* buffers: the frame's descriptor index, or -1 (inline) */
    int fd_ok;     /* that descriptor is a regular file of at least size bytes (1), not (0),
                    * or one on a disk that coopd as root may not write (FDIO_DISK) */
    int devbuf;    /* a device buffer: its bytes are already counted */
  } args[COOP_WIRE_MAX_ARGS];
  uint64_t arena_bytes;     /* a buffer's largest size (the arena) */
  uint32_t min_deadline_us; /* [jobs] min_deadline_us: a shorter deadline is refused */
  uint32_t max_period_ms;   /* [jobs] max_period_ms: a longer period is refused (0: any) */
  uint32_t max_series_ms;   /* [jobs] max_series_ms: a longer periodic series too (0: any) */
};
/* Why a job may not run or be seen: the code and the message its client
 * gets (0: it may). */
struct job_err {
  int code;
  char message[COOP_WIRE_TEXT_MAX];
};
/* Fills e (its message from fmt) and returns code: a refusal, as the
 * checks below and the session's admission (sess_jobs.c) make them. */
int job_refuse(struct job_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether r may run kernel k (NULL: none of that name) on a device of
 * `workers` usable workers: the kernel's kind and signature, the groups,
 * the periodic settings, the buffers and the kernel's own rules
 * (require.h). At JOB_AT_SUBMIT it also sums the buffer bytes (*bytes)
 * and the inline OUT bytes (*inline_out). 0, or a coop code with e set. */
int job_admit(const struct kdef *k, const struct job_req *r, unsigned workers, enum job_at at,
              struct job_err *e, uint64_t *bytes, uint64_t *inline_out);
/* Whether a job of `groups` fits `workers` usable workers now: a
 * cooperative one needs one (it starts on what is free), any other all of
 * its groups. */
int job_fits(unsigned workers, unsigned groups, int cooperative);
/* The bytes of the per-instance records a periodic job of these settings
 * holds (COOP_WIRE_MAX_INST at most; 0 for a single task): RESULT carries
 * every instance, so they stay with the job until it is dropped, and count
 * toward its owner's bytes like its buffers (docs/daemon.md, "Limits"). */
uint64_t job_inst_bytes(uint32_t period_us, uint32_t count, uint32_t duration_ms);
/* r from a SUBMIT (fds: the frame's descriptors, nfds of them; pid: the
 * client's process, fdio_client_file's). */
void job_req_from_submit(struct job_req *r, const struct coop_msg_submit *m, const int *fds,
                         unsigned nfds, uint32_t pid);
/* r from a job (its request as submitted). */
void job_req_from_job(struct job_req *r, const struct job *j);

/* ---- the table (struct daemon's jobs, newest first) ---- */

/* Whether a client of uid may see (STATUS, WAIT, CANCEL) job j. */
int job_may_see(uint32_t uid, const struct job *j);
/* The state STATS and STATUS show: an end only once the loop has the job
 * back (its RESULT can be sent); until then a job the device thread has
 * ended still counts as running. */
uint8_t job_state_shown(const struct job *j);
/* Job id for a client of uid: the job, or NULL with e set (ENOJOB, worded
 * the same whether no job has that id or another user's does; ELOST for
 * a job an earlier coopd lost, from the journal). */
struct job *job_lookup(struct daemon *dm, uint32_t uid, uint64_t id, struct job_err *e);
/* Puts a new job at the head of the table (newest first). */
void jobs_link(struct daemon *dm, struct job *j);
/* Job j is finished (handed back): out of the live jobs STATS counts. */
void jobs_finished(struct daemon *dm, struct job *j);
/* Takes a finished job out of the table and frees it, off its user's
 * counts. */
void job_drop(struct daemon *dm, struct job *j);
/* One of j's deferred RESULTs built: a doomed j goes with its last. */
void job_unpin(struct daemon *dm, struct job *j);
/* Frees a finished job already out of the table, off its user's counts. */
void job_release(struct daemon *dm, struct job *j);
/* n of u's jobs have just become kept (finished, DETACHED, their client
 * gone): drops u's oldest beyond the caps. */
void jobs_keep(struct daemon *dm, struct uid_use *u, unsigned n);
/* A finished job into the counters, the gather samples and the metrics. */
void jobs_count_finished(struct daemon *dm, struct job *j);
/* A periodic job's instances that ended since the last call (running or
 * finished) into the gather samples and the metrics: STATS and /metrics
 * show a periodic job's instances as they end, not all at its end. */
void jobs_count_instances(struct daemon *dm, struct job *j);
/* STATS' job counts and gather percentiles. */
void jobs_stats(struct daemon *dm, struct coop_msg_stats_reply *st);

#endif /* COOPD_JOBS_H */
