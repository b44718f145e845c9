/*
 * sess_ring.c: a connection's shared ring (protocol/sring.h; docs/daemon.md,
 * "The client's ring"): RING_OPEN hands the client a sealed memfd with two
 * rings, and the loop looks at every connection's ring each turn while it
 * spins, so that a client's request reaches a spinning loop without a
 * system call on either side. What goes in and out by the ring is
 * session.c's (sess_ring_input, sess_route): the same frames, decoded and
 * answered as the socket's. Loop thread only.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "session.h"

void sess_ring_open(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                    unsigned nfds) {
  (void)m, (void)fds, (void)nfds;
  if (s->ring) return sess_error(s, seq, COOP_EINVAL, "this connection has its ring already");
  /* The OK carries the memfd: it goes out now, so nothing may be queued
   * before it (a client that asks at the handshake, as libcoop does, has
   * nothing queued). */
  if (s->out_off < s->out.len)
    return sess_error(s, seq, COOP_EBUSY, "replies are queued on this connection: ask again");
  struct coop_sring *r;
  int fd = coop_sring_create(&r);
  if (fd < 0) return sess_error(s, seq, COOP_ENOMEM, "cannot make a ring: %s", strerror(errno));
  /* out is empty: the OK is built there, and sent with the descriptor */
  s->out.len = s->out_off = 0;
  size_t sent = 0;
  int e = coop_wire_encode(&s->out, COOP_MSG_OK, seq, NULL);
  if (!e) e = coop_wire_send(s->fd, s->out.p, s->out.len, &fd, 1, &sent);
  close(fd);
  if (!e && sent == 0) e = COOP_EBUSY; /* a full socket: nothing went */
  if (e) {
    s->out.len = 0;
    s->out.err = 0;
    coop_sring_release(r);
    return sess_error(s, seq, e, "cannot hand the ring over: %s", coop_strerror(e));
  }
  /* the descriptor went with the first byte; the rest of a partial send
   * waits in out like any reply */
  s->out_off = sent;
  s->ring = r;
  s->up = (struct coop_sring_end){&r->up, 0};
  s->down = (struct coop_sring_end){&r->down, 0};
  s->sock_out++;
  sess_flush(s);
  log_debug("client %u/%s: a shared ring of %zu bytes", s->pid, s->name, sizeof *r);
}

/* RING_BELL: the records before it were answered before it (sess_frames). */
void sess_ring_bell(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                    unsigned nfds) {
  (void)s, (void)seq, (void)m, (void)fds, (void)nfds;
}

/* Its pages freed (coop_sring_release), but at a stop while the client
 * has not taken every reply: the stop's last frames (the replies queued
 * at it, ERROR ESHUTDOWN) went by the ring, and a client reading after
 * the stop found a ring of zeros, that is broken, instead of them. The
 * pages then stay with the client's memfd: at most one ring's for each
 * connection open at the stop, once. */
void sess_ring_free(struct session *s) {
  if (!s->ring) return;
  uint32_t head = atomic_load_explicit(&s->down.d->head, memory_order_acquire);
  if (s->dm->stopping && head != s->down.pos)
    coop_sring_unmap(s->ring);
  else
    coop_sring_release(s->ring);
  s->ring = NULL;
}

void session_poll_rings(struct daemon *dm, int spinning) {
  struct session *next;
  for (struct session *s = dm->sessions; s; s = next) {
    next = s->next; /* s may close: it leaves the list, and is freed later */
    /* with no ring: socket frames left from the last turn (sess_frames) */
    if ((!s->ring && !s->input_more) || s->closing) continue;
    if (s->ring && !spinning)
      coop_sring_sleep(&s->up); /* then the last look below */
    else if (s->ring)
      coop_sring_awake(&s->up);
    sess_input(s);
  }
}
