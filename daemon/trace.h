/*
 * trace.h: the path of one job through coopd, stamped leg by leg, for
 * coop-bench-rtt --trace (docs/daemon.md, "The path of one job, leg by
 * leg"). Off unless the environment names a file (COOP_TRACE_FILE): then
 * each job's stamps, ns of CLOCK_MONOTONIC like the device's times in
 * struct coop_wire_times, go there as one line when its first RESULT is
 * sent. A benchmark aid: the line is written with stdio on the loop
 * thread, which costs microseconds per job while tracing; off, each stamp
 * is one test of a flag that never changes after start.
 */
#ifndef COOPD_TRACE_H
#define COOPD_TRACE_H

#include <stdint.h>

#include "coop_util.h" /* coop__now_ns */

/* The stamps, in the order of the line (0: did not happen). The loop
 * thread writes recv, admitted, queued, accepted, wait, loop_got and
 * result_sent; the device thread the others, before it hands the job
 * back (struct job's ownership, jobs.h). */
/* clang-format off */
#define COOP_TRACE_MAP(XX)                                                                     \
  XX(recv)          /* the loop read the SUBMIT's last bytes */                                \
  XX(admitted)      /* admission done, the job made */                                         \
  XX(queued)        /* dev_submit called (after the journal and the log line) */              \
  XX(accepted)      /* ACCEPTED about to be written */                                         \
  XX(wait)          /* the loop read the WAIT for it (the first) */                            \
  XX(taken)         /* the device thread took it from its queue (take_new) */                  \
  XX(io_sent)       /* a job moving its bytes (devbuf_io): its IN copy's request sent */       \
  XX(io_took)       /* the device process took that request */                                 \
  XX(io_replied)    /* the device process sent its reply, the bytes in */                      \
  XX(io_back)       /* the device thread read the reply */                                     \
  XX(staged)        /* its buffers in the arena (dp_stage returned) */                         \
  XX(submit_ret)    /* dp_submit returned (the runtime stamped t.submitted inside it) */       \
  XX(dp_seen)       /* the device process saw it final inside DP_SUBMIT's wait (else 0) */     \
  XX(seen)          /* the device thread found it final (the poll before step_run) */          \
  XX(task_released) /* dp_task_release returned */                                             \
  XX(out_sent)      /* its OUT copy's request sent (devbuf_io), as io_sent..io_back */         \
  XX(out_took)                                                                                 \
  XX(out_replied)                                                                              \
  XX(out_back)                                                                                 \
  XX(unstaged)      /* OUT data back, arena copies freed (dp_unstage returned) */              \
  XX(handed_back)   /* into the device's out queue, uv_async_send next */                      \
  XX(loop_got)      /* the loop took it (on_async, before session_job_done) */                 \
  XX(result_sent)   /* the RESULT built, sess_send (encode, write) next */              \
  XX(preempt)       /* a run of lower priority asked to suspend for it (dev_prio.c) */  \
  XX(loop_spun)     /* the loop spun when it took the SUBMIT: since when (loopspin.since) */ \
  XX(io_with)       /* its ranges went with its submit (DP_SUBMIT_IO): that request's send; \
                     * io_* are its stamps (the copies in, the task, its wait inside), and \
                     * out_* too where the ranges out came back with it (else 0: apart) */ \
  XX(decoded)       /* sess_submit entered: the frame decoded (recv -> admitted's first part) */ \
  XX(checked)       /* its buffers found and its admission checks passed; the job's making next */ \
  XX(expected)      /* warm ahead's guess at this SUBMIT's arrival, from its connection's last \
                     * frame (sess_jobs.c, expected_next; 0: none): beside recv, how far off */ \
  XX(out_with)      /* its ranges out came back with the poll that found it final (the device \
                     * process ended it: dp_task_ended): that request's send; out_* are its \
                     * stamps (else 0) */
/* clang-format on */

struct job_trace {
#define COOP_TRACE_FIELD(name) int64_t name;
  COOP_TRACE_MAP(COOP_TRACE_FIELD)
#undef COOP_TRACE_FIELD
  int written; /* its line is out */
};

/* Set once at start (trace_open), before any thread but the loop runs. */
extern int coopd_tracing;

/* Stamps a job's trace field now, when tracing. */
#define TRACE_STAMP(j, name)                          \
  do {                                                \
    if (coopd_tracing) (j)->tr.name = coop__now_ns(); \
  } while (0)
/* The same, with a stamp already taken. */
#define TRACE_SET(j, name, t)              \
  do {                                     \
    if (coopd_tracing) (j)->tr.name = (t); \
  } while (0)

/* A job's line, taken before its RESULT is sent: a failed send may close
 * the session and free the job. */
struct trace_rec {
  uint64_t id;
  uint8_t state;
  struct job_trace tr;
  int64_t t[5]; /* the job's COOP_STAMPS_MAP times */
};

/* A client's BUF_CREATE, BUF_WRITE or BUF_READ, stamped likewise: one
 * line "buf,KIND,BYTES,..." per operation when it is answered, after a
 * header "bufop,kind,bytes,..." naming the stamps, then warm_from and
 * warm_until (a reader of the jobs' lines skips both: neither starts with
 * a job id). The loop writes recv,
 * queued, loop_got and answered; the device thread taken, copy_start,
 * copy_end and handed_back (struct dev_bufop's ownership, device.h). */
/* clang-format off */
#define COOP_BUFTRACE_MAP(XX)                                                                  \
  XX(recv)          /* the loop has the request (decoded, before its checks) */               \
  XX(queued)        /* dev_buf_op called (the memfd made or taken) */                        \
  XX(taken)         /* the device thread took it (dev__do_bufops) */                         \
  XX(copy_start)    /* the device process asked (dp_copy, dp_stage) */                      \
  XX(copy_end)      /* its answer back: the bytes moved */                                   \
  XX(handed_back)   /* into the device's done list, the announce next */                      \
  XX(loop_got)      /* the loop took it (on_done) */                                          \
  XX(answered)      /* its reply encoded and written (sess_send returned) */
/* clang-format on */

struct buf_trace {
#define COOP_TRACE_FIELD(name) int64_t name;
  COOP_BUFTRACE_MAP(COOP_TRACE_FIELD)
#undef COOP_TRACE_FIELD
  /* beside the path, as the device thread took it: its warm window for
   * the next frame (dev_warm.c), 0 when none was armed */
  int64_t warm_from, warm_until;
};

struct job;
/* Opens $COOP_TRACE_FILE for appending, if set; 0, or -1 with err set. */
int trace_open(char *err, unsigned errlen);
/* Job j's line into *rec, result_sent stamped now; 0 when not tracing or
 * its line is out already (a second WAIT). Loop thread. */
int trace_take(struct job *j, struct trace_rec *rec);
/* The line of trace_take into the file. */
void trace_write(const struct trace_rec *rec);
/* A buffer operation's line (kind: "create", "write" or "read"); nothing
 * when not tracing. Loop thread. */
void trace_buf_write(const char *kind, uint64_t bytes, const struct buf_trace *t);
/* A device process request that held its device thread TRACE_CALL_MIN_NS
 * or more (dp_set_call_hook): its op (a name of static storage) and
 * times, kept in memory and written before the loop's next job or buffer
 * line, or at exit. Any device thread. */
#define TRACE_CALL_MIN_NS 100000
void trace_call_write(const char *op, const int64_t t[4]);
/* A frame's warm window begun (docs/daemon.md, "Spinning"): when it was to
 * begin and when its thread began it, the loop's (device < 0) or device
 * N's thread's; a line "window,WHO,FROM,BEGAN" (WHO: loop, device0, ...),
 * kept in memory and written as trace_call_write's. Any thread. */
void trace_window_write(int device, int64_t from, int64_t began);

#endif /* COOPD_TRACE_H */
