/*
 * arena.c: task buffers, sub-allocated from one SVM allocation made at
 * launch. One allocation means the megakernel needs no new SVM pointers
 * after launch, arguments can be offsets (the same on every backend), and
 * closing frees every buffer at once. First fit over a sorted block list;
 * the caller holds rt->lock.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define ALIGN 64

void coop__arena_init(struct coop_rt *rt) {
  rt->nblocks = 0;
  rt->cap_blocks = 0;
  rt->blocks = NULL;
}

void coop__arena_fini(struct coop_rt *rt) {
  free(rt->blocks);
  rt->blocks = NULL;
  rt->nblocks = rt->cap_blocks = 0;
}

static int insert(struct coop_rt *rt, size_t at, size_t off, size_t len) {
  if (rt->nblocks == rt->cap_blocks) {
    size_t cap = rt->cap_blocks ? rt->cap_blocks * 2 : 32;
    struct coop__arena_block *nb = realloc(rt->blocks, cap * sizeof *nb);
    if (!nb) return -1;
    rt->blocks = nb;
    rt->cap_blocks = cap;
  }
  memmove(rt->blocks + at + 1, rt->blocks + at, (rt->nblocks - at) * sizeof *rt->blocks);
  rt->blocks[at] = (struct coop__arena_block){off, len, 1};
  rt->nblocks++;
  return 0;
}

void *coop_rt_alloc(coop_rt *rt, size_t bytes) {
  if (!rt || !rt->arena || bytes == 0) return NULL;
  size_t len = (bytes + ALIGN - 1) / ALIGN * ALIGN;
  void *res = NULL;
  pthread_mutex_lock(&rt->lock);
  size_t prev_end = 0;
  for (size_t i = 0; i <= rt->nblocks; i++) {
    size_t next = i < rt->nblocks ? rt->blocks[i].off : rt->arena_bytes;
    if (next - prev_end >= len) {
      if (insert(rt, i, prev_end, len) == 0) res = rt->arena + prev_end;
      break;
    }
    if (i < rt->nblocks) prev_end = rt->blocks[i].off + rt->blocks[i].len;
  }
  pthread_mutex_unlock(&rt->lock);
  if (res) memset(res, 0, bytes);
  return res;
}

void coop_rt_free(coop_rt *rt, void *p) {
  if (!rt || !p) return;
  size_t off = (size_t)((uint8_t *)p - rt->arena);
  pthread_mutex_lock(&rt->lock);
  for (size_t i = 0; i < rt->nblocks; i++) {
    if (rt->blocks[i].off == off) {
      memmove(rt->blocks + i, rt->blocks + i + 1, (rt->nblocks - i - 1) * sizeof *rt->blocks);
      rt->nblocks--;
      break;
    }
  }
  pthread_mutex_unlock(&rt->lock);
}

uint64_t coop_rt_buf_arg(const coop_rt *rt, const void *p) {
  return (uint64_t)((const uint8_t *)p - rt->arena);
}
