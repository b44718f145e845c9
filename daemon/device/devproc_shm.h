/*
 * devproc_shm.h: a shared-memory channel between coopd's device thread
 * and its device process, beside their socket (docs/daemon.md, "The
 * shared channel"). A request without descriptors, and its reply, are copied
 * through a memfd both map instead of crossing the socket; a side that is
 * spinning sees the other's message with one load, and one that sleeps is
 * woken by a doorbell, a one-byte message on the socket. Requests that
 * carry descriptors still go by the socket, as do their replies.
 *
 * One request and one reply at a time, as on the socket: the front writes
 * req, then req_seq; the child copies req out, serves it, writes rep and
 * then rep_seq = req_seq. Either reader copies a message out of the
 * shared pages before it checks it (devproc_msg.c): the other side may
 * write them at any time.
 *
 * Memory orders (the two processes share the pages; every flag a 32-bit
 * lock-free atomic, system scope):
 *   - a message: its bytes and len, then its seq stored with release; the
 *     reader loads seq with acquire, then copies.
 *   - sleeping (a Dekker pair): the sleeper stores its asleep flag, then
 *     loads the seq it waits for; the writer stores the seq, then loads the
 *     flag; all four seq_cst, so at least one side sees the other's store:
 *     either the sleeper sees the message and does not sleep, or the
 *     writer sees the flag and rings. A doorbell rung for a sleeper that
 *     found the message anyway stays in the socket and costs one extra
 *     look at the shared channel later: a reader takes any one-byte message as
 *     "look again".
 *   - a warm window told without a request (dp_wake) is the same pair: the
 *     front stores warm_until, then loads child_asleep and rings if set; the
 *     child stores child_asleep, then loads req_seq and warm_until, and
 *     sleeps only if neither is new (all seq_cst). The child reads
 *     warm_until as it reads a request's: bounded (DP_WARM_MAX_NS) before
 *     it is used.
 */
#ifndef COOPD_DEVPROC_SHM_H
#define COOPD_DEVPROC_SHM_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "devproc_msg.h"

/* A doorbell's length: no request or reply is this short (each has a
 * header of several words). */
#define DP_DOORBELL_LEN 1

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "a shared warm_until is lock-free");

struct dp_shm {
  alignas(64) atomic_uint req_seq;      /* front: the request's number, once written */
  atomic_uint req_len;                  /* relaxed: ordered by req_seq */
  alignas(64) atomic_uint rep_seq;      /* child: req_seq of the request answered */
  atomic_uint rep_len;                  /* relaxed: ordered by rep_seq */
  alignas(64) atomic_uint child_asleep; /* child: 1 while it may block on the socket */
  alignas(64) atomic_uint front_asleep; /* front: 1 while it may block on the socket */
  /* front: a warm window's end (CLOCK_MONOTONIC ns) told without a request
   * (dp_wake): the child spins for its next request until then */
  alignas(64) atomic_llong warm_until;
  alignas(64) struct dp_req req;
  alignas(64) struct dp_rep rep;
};

/* The front: a new shared channel in a memfd (close-on-exec), mapped at *sh.
 * Returns the memfd, or -1 (errno). */
int dp_shm_create(struct dp_shm **sh);

/* The child: maps the memfd the front sent, after checking its size.
 * Returns the mapping, or NULL. */
struct dp_shm *dp_shm_map(int fd);

void dp_shm_unmap(struct dp_shm *sh);

/* Rings the peer on the socket fd: 0, or -1 (errno). */
int dp_shm_ring(int fd);

/* The child: where its spin for the next request ends, given a warm
 * window the front told ending at `until` (warm_until, read once): at
 * `until`, or max_ns after now where that comes first, when the window
 * is still open and new (not *told: each is taken once, so a wild stamp
 * costs one max_ns at most) and that is later than spin_end (0: it was
 * about to sleep); else spin_end. *told becomes `until` once taken. */
int64_t dp_shm_window(int64_t until, int64_t *told, int64_t now, int64_t spin_end, int64_t max_ns);

/* Copies a message of len bytes into dst (cap bytes) from the shared
 * src, where len was read once: 0, or -1 when len is 0 or past cap. */
int dp_shm_copy(void *dst, size_t cap, const void *src, uint32_t len);

#endif
