/*
 * session.h: what the files of a client connection share: session.c
 * (framing, the handshake deadline, the dispatch table, life cycle),
 * sess_jobs.c (SUBMIT, WAIT, CANCEL, STATUS, and finished jobs' RESULTs and
 * events) and sess_info.c (HELLO, STATS, TOP, KERNELS, SUBSCRIBE). Loop
 * thread only.
 */
#ifndef COOPD_SESSION_H
#define COOPD_SESSION_H

#include <stdint.h>
#include <uv.h>

#include "cadence.h"
#include "daemon.h"
#include "sring.h"
#include "wire.h"

#define SESS_INLINE_OUT_MAX (1u << 20)
#define SESS_MAX_WAITERS 4096u /* WAITs pending on one connection */
/* a user's (not root's) MIGRATEs move a job once in this many ms at most */
#define SESS_MOVE_GAP_MS 1000u
/* Device buffer operations in flight on one connection: each holds a memfd
 * and a place in the device thread's queue until done (sess_bufs.c). */
#define SESS_MAX_BUFOPS 64u
#define SESS_WARM_FRAME_MAX 1024u /* a SUBMIT kept for its dry run: larger ones are not */

struct waiter {
  uv_timer_t timer; /* unused when waiting forever */
  struct session *s;
  uint64_t job;
  struct job *j; /* in the session's ready list: the job, pinned (job_unpin) */
  uint32_t seq;
  int timed;
  int events;                   /* in the ready list: j's STARTED/FINISHED events, not a RESULT */
  uint32_t ev_from;             /* ... from this instance on */
  struct waiter *next, **pprev; /* in the session's list: O(1) removal */
  /* pending: in its job's list (job.waiters), so that a job's end finds
   * its own WAITs without a walk of every WAIT of its user's */
  struct waiter *j_next, **j_pprev;
};

struct session {
  struct daemon *dm;
  struct uid_use *use; /* its user's counts */
  int fd;
  uv_poll_t poll;
  uv_timer_t hello_timer; /* the handshake deadline */
  int handles;            /* of the two above, not yet closed: free at 0 */
  int events;
  int stalled; /* whole frames wait in rd while the replies drain */
  /* input was left for the loop's next turn (sess_frames' share of a
   * turn taken: ring records, or whole socket frames read): the socket is
   * not read until it is answered */
  int input_more;
  /* the bytes of replies encoded since this turn's frames began
   * (sess_frames): past SESS_TURN_BYTES the rest waits a turn too */
  size_t turn_bytes;
  /* socket frames and ring records answered since then (user_may) */
  unsigned turn_taken;
  struct coop_wire_reader rd;
  struct coop_wire_buf out;
  size_t out_off;
  uint32_t uid, pid;
  uint64_t serial;    /* this connection among all of coopd's: a frame loop's (struct job, conn) */
  uint64_t active_ms; /* the loop's time of its last request (or accept) */
  int64_t rx_ns;      /* COOP_TRACE_FILE only: when the last read returned (trace.h) */
  char name[COOP_WIRE_NAME_MAX];
  int hello;
  int closing;
  unsigned inflight, finished;
  uint64_t bytes; /* buffer bytes of its jobs in flight */
  /* the jobs it owns (job.owner), oldest first: job.s_next, s_pprev */
  struct job *jobs, **jobs_tail;
  uint32_t sub_mask;
  /* live RELEASED and GATHERED events not sent: the client was behind
   * (sess_jobs.c, session_job_event) */
  uint64_t ev_dropped;
  struct waiter *waiters;
  /* WAITs pending, and those whose job has ended with their RESULTs not
   * built yet (ready, oldest first): built as the client reads the
   * replies before them (sess_jobs.c, defer_result) */
  unsigned nwaiters;
  struct waiter *ready, *ready_last;
  struct sess_bufop *bufops; /* device buffer operations not yet answered */
  unsigned nbufops;
  /* its last one-task job's kernel, groups and device, and the cadence of
   * such jobs: a frame loop's period (sess_jobs.c, expected_next) */
  struct {
    char kernel[COOP_WIRE_NAME_MAX];
    uint32_t groups;
    uint8_t device;
    struct cadence cad;
    /* the start of its current burst of requests (the first after a
     * pause of SESS_BURST_GAP_NS: a frame's buffer write comes before its
     * SUBMIT) and its last request's arrival or reply's departure (warm
     * ahead: device.c) */
    int64_t burst_at, last_io;
  } last_task;
  /* its shared ring, once it asked for one (sess_ring.c), and the frames
   * taken from and queued to its socket: the order across the two
   * channels (sring.h). down_used: the client wrote a record, so it has
   * the ring mapped, and replies may go by it; down_off: its reader's head
   * was impossible, and replies go by the socket from then on. */
  struct coop_sring *ring;
  struct coop_sring_end up, down;
  uint32_t sock_in, sock_out;
  int down_used, down_off;
  /* its transfer memfd (XFER, sess_bufs.c), NULL: none: what a devbuf_io
   * argument names by COOP_WIRE_FD_XFER, so that its SUBMIT carries no
   * descriptor and may go by the ring. Shared with the jobs that name it
   * (fdref.h): closed when the connection and those jobs let it go. */
  struct fdref *xfer;
  /* what XFER's fstat said of it: its identity, for each job's copies
   * (job_arg.io_ino: the device thread's fstat spared), and its size,
   * kept only when it is sealed against shrinking (else 0): a range inside
   * it needs no fstat a frame (io_range) */
  uint64_t xfer_ino, xfer_devno, xfer_size;
  /* a frame loop's: when its next SUBMIT is expected (its last job's
   * next_ns; 0: none), and the job memory made and zeroed for it at the
   * window's start (session_warm_frame), which sess_make_job takes */
  int64_t frame_next_ns;
  struct job *spare;
  /* its last SUBMIT that came without descriptors, as it came (header,
   * then payload; warm_len 0: none; at most SESS_WARM_FRAME_MAX bytes):
   * run through decode and admission, dry, at a frame loop's window's
   * start (session_warm_frame) */
  uint8_t *warm_frame;
  uint32_t warm_len;
  struct session *next;
};

/* session.c */
void sess_send(struct session *s, uint16_t type, uint32_t seq, const union coop_msg *m);
/* As sess_send without the flush: the many frames of one turn (a finished
 * periodic job's events) go in one write, not a system call each. */
void sess_queue(struct session *s, uint16_t type, uint32_t seq, const union coop_msg *m);
/* Sends what out holds, as far as the socket takes it; closes the
 * connection on a failure or too much unread. */
void sess_flush(struct session *s);
/* An ERROR reply (logged at debug). */
void sess_error(struct session *s, uint32_t seq, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sess_close(struct session *s);
/* closing: 0 open, 1 to close, 2 to close once the last ERROR is out,
 * 3 closed (the handle is closing; never downgraded). */
void sess_close_after_error(struct session *s);
/* An ERROR that ends the connection (then sess_close_after_error): sent by
 * the socket, never the ring, whose pages coopd frees as the connection
 * goes: a client found zeros there instead of why it was closed. */
void sess_error_last(struct session *s, uint32_t seq, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers what the connection sent that is due, from its ring and from
 * frames already read off its socket, unless it waits for its replies to
 * drain (the loop's look at every ring while it spins: sess_ring.c). */
void sess_input(struct session *s);
/* The RESULT of job j, a reply to seq. */
void sess_send_result(struct session *s, uint32_t seq, struct job *j);
/* Whether the replies pending are past SESS_RESULT_BEHIND: a RESULT that
 * comes unasked then waits for the client to read them (defer_result). */
int sess_behind(const struct session *s);
/* The RESULTs of s->ready, built and sent while the client keeps up
 * (sess_behind false). */
void sess_results_ready(struct session *s);
/* The descriptor a devbuf_io argument names: one of its frame's fds, or
 * the connection's transfer memfd (COOP_WIRE_FD_XFER); -1 if none. */
int sess_io_fd(const struct session *s, const struct coop_wire_arg *a, const int *fds,
               unsigned nfds);
/* A job for SUBMIT m of kernel k; takes the frame's descriptors it uses
 * (sets them to -1 in fds). NULL when out of memory. */
struct job *sess_make_job(struct session *s, const struct coop_msg_submit *m, const struct kdef *k,
                          int *fds, uint64_t bytes);

/* The connection's last SUBMIT without descriptors decoded and checked
 * again, dry: nothing made, sent or counted (a frame loop's window,
 * session_warm_frame). 0 if it would be admitted now, 1 if none is kept,
 * else the code its refusal would carry. */
int sess_submit_dry(struct session *s);
/* A request's handler (the dispatch table, session.c): the decoded
 * message, and the frame's descriptors (one taken is set to -1). */
typedef void sess_handler(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                          unsigned nfds);

/* sess_jobs.c */
sess_handler sess_submit, sess_wait, sess_cancel, sess_status, sess_migrate;
/* Job j becomes s's (its owner, at the end of s's jobs); and no longer. */
void sess_own(struct session *s, struct job *j);
void sess_disown(struct session *s, struct job *j);
void sess_waiter_free(struct waiter *w);
void sess_waiter_remove(struct session *s, struct waiter *w);

/* sess_bufs.c */
sess_handler sess_buf_create, sess_buf_write, sess_buf_read, sess_buf_free, sess_xfer;
/* Lets the connection's transfer memfd go (closed unless a job holds it). */
void sess_xfer_drop(struct session *s);
/* The connection closes: its operations in flight go unanswered, its
 * buffers are freed but those it asked to keep. */
void sess_bufs_closed(struct session *s);

/* sess_ring.c */
sess_handler sess_ring_open, sess_ring_bell;
/* The connection is gone: its ring let go (sess_ring.c says when its
 * pages are freed). */
void sess_ring_free(struct session *s);

/* sess_info.c */
sess_handler sess_hello, sess_stats, sess_top, sess_kernels, sess_subscribe;
/* A kernel's KERNEL_LIST record: its signature, argument names and rules. */
void kdef_wire(const struct kdef *k, struct coop_wire_kernel *w);

/* kadd.c: kernel authors' requests */
sess_handler sess_kernel_add, sess_kernel_remove, sess_reload;

#endif /* COOPD_SESSION_H */
