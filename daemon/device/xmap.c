/*
 * xmap.c: see xmap.h.
 */
#define _GNU_SOURCE /* F_GET_SEALS */
#include "xmap.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

void xmap_init(struct xmap *x, int (*pin)(void *, void *, size_t), void (*unpin)(void *, void *),
               void *arg) {
  memset(x, 0, sizeof *x);
  x->pin = pin;
  x->unpin = unpin;
  x->arg = arg;
}

static void drop(struct xmap *x, struct xmap_slot *s) {
  if (s->p) {
    if (x->unpin) x->unpin(x->arg, s->p);
    munmap(s->p, s->len);
  }
  memset(s, 0, sizeof *s);
}

/* The file mapped and pinned into slot s, or s remembered as not mappable. */
static void map(struct xmap *x, struct xmap_slot *s, int fd, const struct stat *st, int64_t now) {
  s->dev = st->st_dev;
  s->ino = st->st_ino;
  s->used = now;
  s->len = (size_t)st->st_size;
  void *p = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    s->p = NULL;
    return;
  }
  if (x->pin && x->pin(x->arg, p, s->len)) {
    munmap(p, s->len);
    s->p = NULL;
    return;
  }
  s->p = p;
}

uint8_t *xmap_get(struct xmap *x, int fd, uint64_t off, uint64_t n, int64_t now, uint32_t owner) {
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      (uint64_t)st.st_size > XMAP_MAX || off > (uint64_t)st.st_size ||
      n > (uint64_t)st.st_size - off)
    return NULL;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return NULL; /* truncation: SIGBUS here */
  struct xmap_slot *s = NULL, *free_slot = NULL;
  unsigned held = 0; /* slots of this owner */
  for (unsigned i = 0; i < XMAP_SLOTS; i++) {
    struct xmap_slot *t = &x->slot[i];
    if (t->used && t->dev == st.st_dev && t->ino == st.st_ino && t->owner == owner) s = t;
    if (!t->used && !free_slot) free_slot = t;
    held += t->used && t->owner == owner;
  }
  /* it grew past its mapping: mapped again whole in another slot if the
   * owner's share allows; the old mapping stays pinned, out of reach,
   * until the next clear (unpinning it would wait for the device) */
  if (s && s->p && s->len < off + n && free_slot && held < XMAP_PER_OWNER) {
    s->dev = 0;
    s->ino = 0;
    s = NULL;
  }
  /* full, or the owner's share taken: nothing goes while the kernel runs */
  if (!s && (!free_slot || held >= XMAP_PER_OWNER)) return NULL;
  if (!s) {
    /* shmem only, asked once, as the file is mapped (a file found mapped
     * passed it): a hugetlbfs memfd's hole, punched under the sealed size,
     * gives its pages and their reservation back, and the next fault here
     * (the free huge pages taken meanwhile) was SIGBUS, the device process
     * lost with every user's buffers. Read and written instead, a hole
     * reads as zeros. */
    struct statfs sf;
    if (fstatfs(fd, &sf) || sf.f_type != TMPFS_MAGIC) return NULL;
    map(x, s = free_slot, fd, &st, now);
    s->owner = owner;
  }
  s->used = now;
  /* it grew past its mapping and the owner's share is taken: read and
   * written instead until the next clear */
  return s->p && s->len >= off + n ? s->p : NULL;
}

uint8_t *xmap_find(struct xmap *x, dev_t dev, ino_t ino, uint64_t off, uint64_t n, int64_t now,
                   uint32_t owner) {
  for (unsigned i = 0; i < XMAP_SLOTS; i++) {
    struct xmap_slot *s = &x->slot[i];
    if (!s->used || !s->p || s->dev != dev || s->ino != ino || s->owner != owner) continue;
    if (off > s->len || n > s->len - off) return NULL;
    s->used = now;
    return s->p;
  }
  return NULL;
}

void xmap_clear(struct xmap *x) {
  for (unsigned i = 0; i < XMAP_SLOTS; i++) drop(x, &x->slot[i]);
}

void xmap_forget(struct xmap *x) {
  x->unpin = NULL; /* the runtime that pinned them has closed, and its registrations with it */
  xmap_clear(x);
}
