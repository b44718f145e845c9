/*
 * bufs.h: device buffers, the loop's side (docs/daemon.md, "Device
 * buffers"; PROTOCOL.md, BUF_CREATE). A client creates a buffer on a device
 * once and names it by id in any number of jobs, instead of sending its
 * bytes with each. The table here says whose each buffer is, what it
 * costs its user, and when it may go; the device thread does the copies
 * (dev_buf_op). Loop thread only.
 */
#ifndef COOPD_BUFS_H
#define COOPD_BUFS_H

#include <stdint.h>

#include "jobs.h"

struct daemon;
struct session;
struct uid_use;

struct dbuf {
  uint64_t id;
  uint32_t uid;
  uint8_t device, flags; /* COOP_BUFFER_* */
  uint64_t size;
  uint64_t arg, gen;     /* where it lives (dev_bufop), once ready */
  int ready;             /* created on the device: its id has been given out */
  int freed;             /* freed by its user, or its connection went: out of reach */
  unsigned users;        /* jobs queued or running that name it, and operations pending */
  struct session *owner; /* the connection that created it; NULL once gone (KEEP) */
  struct dbuf *next;
};

/* A new buffer of uid's (not ready), charged to u: its bytes and one of
 * its buffers. NULL when out of memory. */
struct dbuf *dbuf_new(struct daemon *dm, struct uid_use *u, struct session *owner, uint8_t device,
                      uint8_t flags, uint64_t size);
/* The bytes of uid's device buffers on device, until each is freed there
 * (those being made included); *others, the same of every other user's:
 * the room they leave uid (sess_bufs.c, room_refused). One walk. */
uint64_t dbuf_bytes_on(const struct daemon *dm, uint32_t uid, uint8_t device, uint64_t *others);
/* Buffer id for a client of uid: ready and not freed, or NULL with e set
 * (ENOJOB, worded the same whether no buffer has that id or another
 * user's does). */
struct dbuf *dbuf_lookup(struct daemon *dm, uint32_t uid, uint64_t id, struct job_err *e);
/* Out of reach from now on; freed on its device, and off its user's
 * counts, once no job or operation uses it. */
void dbuf_release(struct daemon *dm, struct dbuf *b);
/* One user fewer (a job handed back, an operation done): a released
 * buffer goes when it had the last. */
void dbuf_unuse(struct daemon *dm, struct dbuf *b);
/* A job handed back: its buffers' users. */
void dbuf_job_done(struct daemon *dm, struct job *j);
/* The connection s closes: its buffers go, but those it asked to keep
 * (COOP_BUFFER_KEEP), which any connection of its user may use and free. */
void dbuf_session_closed(struct daemon *dm, struct session *s);
/* At exit: every entry freed (the device processes take the memory). */
void dbuf_free_all(struct daemon *dm);

#endif /* COOPD_BUFS_H */
