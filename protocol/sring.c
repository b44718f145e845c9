/* sring.c: the shared ring between a client and coopd (sring.h). */
#define _GNU_SOURCE
#include "sring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_errno.h"
#include "wire.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the ring's indices are shared between processes");
_Static_assert((COOP_SRING_DATA & (COOP_SRING_DATA - 1)) == 0, "a power of two");
_Static_assert(COOP_SRING_FRAME_MAX + COOP_SRING_REC + 8 <= COOP_SRING_DATA, "a record fits");

#define MASK (COOP_SRING_DATA - 1u)

static uint32_t padded(uint32_t len) { return COOP_SRING_REC + ((len + 7u) & ~7u); }

/* Copies n bytes in or out at ring offset pos, around the end. */
static void copy_in(struct coop_sring_dir *d, uint32_t pos, const void *src, uint32_t n) {
  uint32_t at = pos & MASK, first = COOP_SRING_DATA - at < n ? COOP_SRING_DATA - at : n;
  memcpy(d->data + at, src, first);
  memcpy(d->data, (const uint8_t *)src + first, n - first);
}

static void copy_out(const struct coop_sring_dir *d, uint32_t pos, void *dst, uint32_t n) {
  uint32_t at = pos & MASK, first = COOP_SRING_DATA - at < n ? COOP_SRING_DATA - at : n;
  memcpy(dst, d->data + at, first);
  memcpy((uint8_t *)dst + first, d->data, n - first);
}

int coop_sring_create(struct coop_sring **r) {
  int fd = memfd_create("coop-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  void *m = MAP_FAILED;
  if (ftruncate(fd, sizeof **r) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    m = mmap(NULL, sizeof **r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    close(fd);
    return errno = e, -1;
  }
  *r = m; /* zero-filled: every index 0 */
  (*r)->magic = COOP_SRING_MAGIC;
  (*r)->size = sizeof **r;
  atomic_store(&(*r)->up.asleep, 1u);
  atomic_store(&(*r)->down.asleep, 1u);
  return fd;
}

struct coop_sring *coop_sring_map(int fd) {
  struct stat st;
  if (fstat(fd, &st) || st.st_size != (off_t)sizeof(struct coop_sring)) return NULL;
  struct coop_sring *r =
      mmap(NULL, sizeof(struct coop_sring), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (r == MAP_FAILED) return NULL;
  if (r->magic != COOP_SRING_MAGIC || r->size != sizeof *r) {
    munmap(r, sizeof *r);
    return NULL;
  }
  return r;
}

void coop_sring_unmap(struct coop_sring *r) {
  if (r) munmap(r, sizeof *r);
}

void coop_sring_release(struct coop_sring *r) {
  if (!r) return;
  (void)madvise(r, sizeof *r, MADV_REMOVE); /* the memfd is not write-sealed: a hole punch */
  munmap(r, sizeof *r);
}

int coop_sring_put(struct coop_sring_end *w, const void *frame, uint32_t len,
                   uint32_t sock_before) {
  if (len < COOP_WIRE_HDR || len > COOP_SRING_FRAME_MAX) return 0; /* no frame, or the socket's */
  uint32_t head = atomic_load_explicit(&w->d->head, memory_order_acquire);
  uint32_t used = w->pos - head, need = padded(len);
  if (used > COOP_SRING_DATA) return COOP_EPROTO;
  if (COOP_SRING_DATA - used < need) return 0;
  uint32_t rec[2] = {len, sock_before};
  copy_in(w->d, w->pos, rec, sizeof rec);
  copy_in(w->d, w->pos + COOP_SRING_REC, frame, len);
  w->pos += need;
  atomic_store(&w->d->tail, w->pos); /* seq_cst: a release, and the Dekker pair's store */
  return 1;
}

int coop_sring_reader_asleep(const struct coop_sring_end *w) {
  return atomic_load(&w->d->asleep) != 0u; /* seq_cst: after the tail's store */
}

int coop_sring_peek(struct coop_sring_end *r, uint32_t *len, uint32_t *sock_before) {
  uint32_t tail = atomic_load_explicit(&r->d->tail, memory_order_acquire);
  uint32_t avail = tail - r->pos;
  if (avail == 0) return 0;
  if (avail > COOP_SRING_DATA || avail < COOP_SRING_REC) return COOP_EPROTO;
  uint32_t rec[2];
  copy_out(r->d, r->pos, rec, sizeof rec); /* once: the writer may change the pages */
  if (rec[0] < COOP_WIRE_HDR || rec[0] > COOP_SRING_FRAME_MAX || padded(rec[0]) > avail)
    return COOP_EPROTO;
  *len = rec[0];
  *sock_before = rec[1];
  return 1;
}

void coop_sring_take(struct coop_sring_end *r, void *dst, uint32_t len) {
  copy_out(r->d, r->pos + COOP_SRING_REC, dst, len);
  r->pos += padded(len);
  atomic_store_explicit(&r->d->head, r->pos, memory_order_release);
}

int coop_sring_next(struct coop_sring_end *r, uint32_t sock_seen, uint8_t *buf,
                    struct coop_wire_hdr *h) {
  uint32_t len, before;
  int k = coop_sring_peek(r, &len, &before);
  if (k <= 0) return k;
  /* due only after the socket frames written before it */
  if (!coop_sring_due(before, sock_seen)) return 0;
  /* a copy: the writer may change the pages */
  coop_sring_take(r, buf, len);
  int e = coop_wire_hdr_decode(buf, h);
  if (!e && h->len != len - COOP_WIRE_HDR) e = COOP_EPROTO;
  return e ? e : 1;
}

int coop_sring_sleep(struct coop_sring_end *r) {
  atomic_store(&r->d->asleep, 1u);           /* seq_cst */
  return atomic_load(&r->d->tail) != r->pos; /* seq_cst */
}

void coop_sring_awake(struct coop_sring_end *r) {
  /* stored only when set: a loop that spins calls this every turn, and a
   * store would take the line from the writer each time */
  if (atomic_load_explicit(&r->d->asleep, memory_order_relaxed))
    atomic_store_explicit(&r->d->asleep, 0u, memory_order_relaxed);
}
