/*
 * sring.h: the shared ring between a client and coopd, beside their socket
 * (PROTOCOL.md, "The shared ring"; docs/daemon.md, "The client's ring").
 * A frame without descriptors, small enough, is copied into a memfd both
 * map instead of crossing the socket: a peer that is spinning sees it with
 * one load, and one that sleeps is woken by a doorbell on the socket
 * (RING_BELL to coopd, RING_WAKE to the client). Frames with descriptors,
 * larger ones, and any that finds the ring full go by the socket.
 *
 * Two rings, one each way (`up`: client -> coopd, `down`: coopd -> client).
 * A record is u32 len, u32 sock_before, then a whole wire frame (len
 * bytes, its 16-byte header included), padded to 8 bytes; records wrap
 * around the end of `data`. `sock_before` counts the frames its writer had
 * sent on the socket before it, so that the reader keeps the writer's
 * order across the two channels:
 *   - a record is taken only once the socket frames before it have been
 *     (sock_before <= the reader's socket count);
 *   - before a socket frame is taken, the records written before it are
 *     (sock_before <= its index): they are in the ring by then, since a
 *     writer puts the record, then sends on the socket.
 *
 * Memory orders (two processes share the pages; every index a 32-bit
 * lock-free atomic, free-running modulo 2^32):
 *   - a record: its bytes, then tail stored seq_cst (a release); the
 *     reader loads tail with acquire and copies the record out, then
 *     stores head with release, which the writer loads with acquire
 *     before it reuses the room.
 *   - sleeping (a Dekker pair): the reader stores asleep = 1, then loads
 *     tail; the writer stores tail, then loads asleep; all seq_cst, so
 *     either the reader sees the record and does not sleep, or the writer
 *     sees the flag and rings. A doorbell that finds the record already
 *     taken costs one look.
 *
 * Distrust: each side keeps its own index of each ring (coop_sring_end.pos)
 * and never reads it back from the shared pages; the other side's index
 * is checked (at most COOP_SRING_DATA ahead or behind), a record's length
 * is checked before a byte of it is copied, and the copy is checked again
 * as a wire frame (coop_wire_hdr_decode, then the decoder) by its user.
 * The creator (coopd) seals the memfd against shrinking, so a client
 * cannot make coopd's next access fault.
 */
#ifndef COOP_SRING_H
#define COOP_SRING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "wire.h"

#define COOP_SRING_MAGIC 0x52494e47u     /* "RING" */
#define COOP_SRING_DATA (64u << 10)      /* each ring's bytes (a power of two) */
#define COOP_SRING_REC 8u                /* a record's header: len, sock_before */
#define COOP_SRING_FRAME_MAX (16u << 10) /* longer frames go by the socket */

struct coop_sring_dir {
  alignas(64) atomic_uint tail;   /* the writer's: bytes written */
  alignas(64) atomic_uint head;   /* the reader's: bytes taken */
  alignas(64) atomic_uint asleep; /* the reader's: 1 while it may block on the socket */
  alignas(64) uint8_t data[COOP_SRING_DATA];
};

struct coop_sring {
  uint32_t magic, size;       /* COOP_SRING_MAGIC, sizeof(struct coop_sring) */
  struct coop_sring_dir up;   /* client -> coopd */
  struct coop_sring_dir down; /* coopd -> client */
};

/* One side's end of one ring: pos is its own index (the writer's tail or
 * the reader's head), kept here and only stored to the shared pages. */
struct coop_sring_end {
  struct coop_sring_dir *d;
  uint32_t pos;
};

/* coopd: a new ring in a sealed memfd (close-on-exec), mapped at *r, both
 * readers marked asleep. Returns the memfd, or -1 (errno). */
int coop_sring_create(struct coop_sring **r);
/* The client: maps the memfd coopd sent, after checking its size and
 * magic. Returns the mapping, or NULL. */
struct coop_sring *coop_sring_map(int fd);
void coop_sring_unmap(struct coop_sring *r);
/* coopd, done with a ring: its pages freed (MADV_REMOVE), then unmapped.
 * coopd wrote them (the magic, the flags, its replies), so they were
 * charged to it, and the client's copy of the memfd kept them for as long
 * as it liked after the connection: 8 KiB a ring, 88 KiB with replies,
 * for every connection a user ever opened. The client's memfd keeps its
 * size and no page. */
void coop_sring_release(struct coop_sring *r);

/* The writer: appends a record of the frame's len bytes. 1 when written,
 * 0 when it does not fit now (or is shorter than a frame header or longer
 * than COOP_SRING_FRAME_MAX: it goes by the socket),
 * COOP_EPROTO when the reader's head is impossible. */
int coop_sring_put(struct coop_sring_end *w, const void *frame, uint32_t len, uint32_t sock_before);
/* The writer, after a put: whether the reader may be asleep (then ring). */
int coop_sring_reader_asleep(const struct coop_sring_end *w);

/* The reader: the next record's frame length and sock_before. 1 when
 * there is one, 0 when the ring is empty, COOP_EPROTO when the writer's
 * tail or the record's length is impossible. */
int coop_sring_peek(struct coop_sring_end *r, uint32_t *len, uint32_t *sock_before);
/* The reader: copies the record just peeked (len bytes) into dst and
 * frees its room. */
void coop_sring_take(struct coop_sring_end *r, void *dst, uint32_t len);
/* The reader: the next record, if it is due for a reader that has taken
 * sock_seen socket frames, copied into buf (COOP_SRING_FRAME_MAX bytes)
 * and its header decoded into *h (coop_wire_hdr_decode, and the payload's
 * length the record's). 1 when taken; 0 when none is due; COOP_EPROTO (or
 * the header's own error) when the ring or the frame is broken. */
int coop_sring_next(struct coop_sring_end *r, uint32_t sock_seen, uint8_t *buf,
                    struct coop_wire_hdr *h);
/* The reader, about to block on the socket: marks itself asleep, then
 * says whether a record came meanwhile (1: look again, do not block). */
int coop_sring_sleep(struct coop_sring_end *r);
/* The reader, no longer blocking. */
void coop_sring_awake(struct coop_sring_end *r);

/* Whether a record written after sock_before socket frames is due for a
 * reader that has taken sock_seen of them: sock_before <= sock_seen,
 * modulo 2^32. */
static inline int coop_sring_due(uint32_t sock_before, uint32_t sock_seen) {
  return (int32_t)(sock_before - sock_seen) <= 0;
}

#endif
