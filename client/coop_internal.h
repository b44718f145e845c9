/*
 * coop_internal.h: what libcoop's source files share (not installed).
 *
 * client.c owns the connection: the socket, the request/reply engine and
 * event dispatch. coop_job.c builds SUBMITs (buffer placement, memfds) and
 * writes jobs' output back; coop_requests.c sends the other requests and
 * turns their replies into the public structs (coop_copy.h: field by field
 * from the schema's lists).
 */
#ifndef COOP_INTERNAL_H
#define COOP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "coop.h"
#include "sring.h"
#include "wire.h"

/* A TIMES field of the schema (coop_copy.h's COOP__COPY_TIMES). */
static inline void coop__copy_times(struct coop_times *d, const struct coop_wire_times *s) {
#define COOP__COPY_TIME(name) d->name = s->name;
  COOP_TIMES_MAP(COOP__COPY_TIME)
#undef COOP__COPY_TIME
}

/* A frame taken off the socket; payload is our own copy (the reader's
 * buffer moves on), so decoded pointers stay valid while the frame lives. */
struct coop_frame {
  struct coop_frame *next;
  struct coop_wire_hdr h;
  uint8_t *payload;
  int fd; /* a descriptor that came with it (RING_OPEN's OK), or -1 */
};

/* An OUT or INOUT buffer of a submitted job, to fill when its RESULT comes. */
struct coop_outbuf {
  uint8_t arg; /* argument index */
  void *mem;
  size_t size;
  int fd;     /* memfd, or -1 when it travels inline or is a range (io) */
  uint8_t io; /* a device buffer's range (coop_job_buffer_io): at `off` of the job's
               * transfer memfd (coop_pending) */
  uint64_t off;
};

struct coop_pending {
  struct coop_pending *next;
  uint64_t job;
  unsigned n;
  struct coop_outbuf b[COOP_WIRE_MAX_ARGS];
  /* the memfd of the job's ranges: the connection's (xfer: held until the
   * RESULT, mapped at iomem) or its own (iofd, or -1) */
  int xfer, iofd;
  const uint8_t *iomem;
};

struct coop_waiter; /* client.c: a request waiting for its reply */

struct coop_conn {
  int fd;
  pthread_mutex_t mu;      /* everything below except rd and rbuf */
  pthread_mutex_t send_mu; /* whole frames go out one at a time */
  pthread_cond_t cv;       /* a reply arrived, or the reader role is free */
  uint32_t next_seq;
  int reading;     /* a thread is receiving (it alone uses rd) */
  int dispatching; /* a thread is calling the event callback */
  int dead;        /* sticky error: the connection is unusable */
  char dead_msg[COOP_WIRE_TEXT_MAX];
  struct coop_waiter *waiters;
  struct coop_frame *ev_head, *ev_tail;
  coop_event_fn ev_fn;
  void *ev_user;
  struct coop_wire_reader rd;
  uint8_t *rbuf;
  struct coop_pending *pending; /* jobs with output to write back */
  struct coop_info info;
  int timeout_ms;
  _Atomic unsigned spin_us; /* coop_set_spin: read by the reader unlocked */
  /* coop_buffer.c: the transfer memfd kept for buffer writes and reads
   * and a job's ranges of device buffers (-1: none yet), its size, its
   * mapping here, and whether an op or a job holds it (one at a time:
   * coop__xfer_take; a job from its SUBMIT until its RESULT, which may
   * be taken by another thread, hence a flag and not a mutex) */
  int xfd;
  dev_t xfd_dev; /* its identity, looked up once when it is made (io_fd_name) */
  ino_t xfd_ino;
  size_t xsize;
  uint8_t *xmem;
  size_t xmapped;
  atomic_int xbusy;
  /* coop_job.c: the memfd coopd holds as this connection's transfer memfd
   * (XFER; xreg: one was sent), which a job's ranges then name without
   * sending it; and the first memfd of the last job that moved ranges (a
   * memfd two jobs in a row use is sent by XFER). xreg_mu: held from a
   * job's XFER to its SUBMIT, so that another thread's XFER cannot come
   * between them. */
  pthread_mutex_t xreg_mu;
  int xreg, xlast;
  dev_t xreg_dev, xlast_dev;
  ino_t xreg_ino, xlast_ino;
  /* the shared ring coopd handed over at the handshake (protocol/sring.h),
   * or NULL: up is written under send_mu, down read by the reader; the
   * frames sent on and taken from the socket order the two channels */
  struct coop_sring *ring;
  struct coop_sring_end up, down;
  uint32_t sock_out;           /* send_mu */
  uint32_t sock_in;            /* the reader's */
  uint8_t bell[COOP_WIRE_HDR]; /* a RING_BELL frame */
  /* client.c: the last SUBMIT encoded and its frame (mu), sent again with
   * a new seq while the SUBMITs stay the same (coop__encode_request) */
  struct coop_msg_submit *sub_msg;
  struct coop_wire_buf sub_frame;
};

/* client.c */
/* Sets this thread's message (coop_errmsg); returns err for tail calls. */
int coop__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void coop__clear_msg(void);
/* Sends m as a request of `type` with descriptors fds and waits up to
 * timeout_ms (negative: forever) for the reply. An ERROR reply returns its
 * code (message kept); any type other than `want` is COOP_EPROTO. On 0 the
 * reply is decoded into *reply and *frame holds the bytes its pointers
 * point into (coop__frame_free). */
int coop__request(coop_conn *c, uint16_t type, const union coop_msg *m, const int *fds,
                  unsigned nfds, int timeout_ms, uint16_t want, union coop_msg *reply,
                  struct coop_frame **frame);
/* Encodes request m into b (empty) with seq, as coop_wire_encode does; a
 * SUBMIT equal to the last one kept is that one's frame (mu held). */
int coop__encode_request(coop_conn *c, struct coop_wire_buf *b, uint16_t type, uint32_t seq,
                         const union coop_msg *m);
void coop__frame_free(struct coop_frame *f);
/* The connection's reply timeout (coop_set_timeout). */
int coop__timeout(coop_conn *c);

/* coop_buffer.c */
/* The connection's transfer memfd, at least n bytes long and mapped at
 * *mem, held by the caller until coop__xfer_give; or -1 when another op
 * or job holds it (or it cannot be had): then use a fresh memfd. */
int coop__xfer_take(coop_conn *c, size_t n, uint8_t **mem);
/* Given back; after a failure (`failed`) dropped: a request that timed
 * out may still be served, and its late bytes must not land in the next
 * op's. */
void coop__xfer_give(coop_conn *c, int failed);
/* A fresh memfd of n bytes holding data (NULL: zeros), or a negative code. */
int coop__memfd_of(const void *data, size_t n);

/* coop_job.c */
int coop__result_writeback(coop_conn *c, const struct coop_msg_result *r);
void coop__pending_free_all(coop_conn *c);

#endif /* COOP_INTERNAL_H */
