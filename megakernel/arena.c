/*
 * arena.c: task buffers, sub-allocated from one SVM allocation made at
 * launch. One allocation means the megakernel needs no new SVM pointers
 * after launch, arguments can be offsets (the same on every backend), and
 * closing frees every buffer at once. First fit over a sorted block list;
 * the caller holds rt->lock.
 *
 * Isolation between jobs (docs/faults.md, "Isolation"): every block is
 * fenced by a guard zone on each side, [guard][data][guard], filled with a
 * canary derived from a per-runtime secret and the block's offset, so a
 * kernel cannot forge it by writing a constant. coop_rt_free checks both
 * guards and returns COOP_EFAULT on a breach: the job that owned the block
 * wrote outside it (kernels index through bounds-checked views, so only a
 * kernel that uses the raw coop_arg_buf can). A block is zeroed, guards
 * excepted, before it is handed out again; coop_rt_alloc_filled's only to
 * its alignment past its size, its caller writing the rest first.
 *
 * Two zones. Where the backend has device memory the host never touches
 * (CUDA, alloc_zone), a second range, the device zone, holds the buffers
 * of coop_rt_alloc_device: the copy engine moves a frame's bytes into
 * device memory faster than into managed pages (coop_rt.h). A block's
 * offset is then a place in one space of both, the arena's bytes first
 * and the zone's after them (at, off_of); its argument value stays its
 * address less the arena's, which for the zone is a 64-bit difference
 * that wraps, so that the kernel's `arena + argument` is its address
 * whichever allocation holds it (device/api.h). A block never spans the
 * two.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define ALIGN 64
#define GUARD COOP__ARENA_GUARD

void coop__arena_init(struct coop_rt *rt) {
  rt->nblocks = 0;
  rt->cap_blocks = 0;
  rt->blocks = NULL;
  /* Not a cryptographic secret, but not guessable from outside either: the
   * clock at launch and the runtime's address, mixed (splitmix64). */
  uint64_t z = (uint64_t)coop__now_ns() ^ (uint64_t)(uintptr_t)rt;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  rt->canary_key = z ^ (z >> 31);
}

void coop__arena_fini(struct coop_rt *rt) {
  free(rt->blocks);
  rt->blocks = NULL;
  rt->nblocks = rt->cap_blocks = 0;
}

/* The address of offset off (the arena's, or past it the zone's). */
static uint8_t *at(const struct coop_rt *rt, size_t off) {
  return off < rt->arena_bytes ? rt->arena + off : rt->zone + (off - rt->arena_bytes);
}

/* The offset of address p, or SIZE_MAX where neither range holds it. */
static size_t off_of(const struct coop_rt *rt, const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (rt->arena && a - (uintptr_t)rt->arena < rt->arena_bytes) return a - (uintptr_t)rt->arena;
  if (rt->zone && a - (uintptr_t)rt->zone < rt->zone_bytes)
    return rt->arena_bytes + (a - (uintptr_t)rt->zone);
  return SIZE_MAX;
}

/* The offset of the buffer whose argument value is arg (coop_rt_buf_arg). */
static size_t arg_off(const struct coop_rt *rt, uint64_t arg) {
  return off_of(rt, (const void *)((uintptr_t)rt->arena + (uintptr_t)arg));
}

static int in_zone(const struct coop_rt *rt, size_t off) { return off >= rt->arena_bytes; }

static uint64_t canary(const struct coop_rt *rt, size_t at) {
  return rt->canary_key ^ ((uint64_t)at * 0x9e3779b97f4a7c15ull);
}

/* Whether the host itself reads and writes block b (its data and its
 * guards): a block placed in host memory, or any block where the arena is
 * memory the host reaches as cheaply (coop_rt_arena_direct). Else the copy
 * engine does, whatever the size: where the arena is CUDA managed memory,
 * a host access moves the page to the host and the device's next access
 * faults it back, tens of us inside the task; and a page that goes back
 * and forth so at every task is soon pinned in host memory by the
 * driver's thrashing heuristic, until the heuristic's epoch (2 s) ends:
 * bfs's worklist counters, 8 bytes the host filled at every run, then
 * went over the bus for a whole run, 133 ms instead of 35 (bench/RESULTS.md,
 * "Small buffers by the copy engine"). */
static int by_host(const struct coop_rt *rt, const struct coop__arena_block *b) {
  return b->host || coop_rt_arena_direct(rt);
}

/* A block the copy engine fills and checks whole: one call for its
 * footprint where guards and zeros would take three (about 10 us each). */
static int one_copy(const struct coop_rt *rt, const struct coop__arena_block *b) {
  return !by_host(rt, b) && b->len + 2 * GUARD <= COOP__ARENA_ONE_COPY;
}

/* n bytes from host memory src to the arena at p, at an edge of block b
 * (a guard, or the bytes past a filled buffer's end): by the same hand as
 * its guards. */
static void edge_write(struct coop_rt *rt, uint8_t *p, const void *src, size_t n,
                       const struct coop__arena_block *b) {
  if (by_host(rt, b))
    memcpy(p, src, n);
  else
    rt->ops->copy_arena(rt, p, src, n, 1);
}

/* The canaries of the guard at arena offset `at`, into g[GUARD / 8]. */
static void canaries(const struct coop_rt *rt, size_t at, uint64_t *g) {
  for (size_t i = 0; i < GUARD / 8; i++) g[i] = canary(rt, at + 8 * i);
}

/* Whether g[GUARD / 8], read from the guard at arena offset `at`, is whole. */
static int canaries_ok(const struct coop_rt *rt, size_t at, const uint64_t *g) {
  for (size_t i = 0; i < GUARD / 8; i++)
    if (g[i] != canary(rt, at + 8 * i)) return 0;
  return 1;
}

static void guard_fill(struct coop_rt *rt, size_t where, const struct coop__arena_block *b) {
  uint64_t g[GUARD / 8];
  canaries(rt, where, g);
  edge_write(rt, at(rt, where), g, GUARD, b);
}

static int guard_ok(const struct coop_rt *rt, size_t where, const struct coop__arena_block *b) {
  uint64_t g[GUARD / 8];
  if (by_host(rt, b))
    memcpy(g, at(rt, where), GUARD);
  else if (rt->ops->copy_arena((struct coop_rt *)rt, g, at(rt, where), GUARD, 0))
    return 0;
  return canaries_ok(rt, where, g);
}

/* Both of block b's guards: filled, or checked (1 when both are whole). */
static void guards_fill(struct coop_rt *rt, const struct coop__arena_block *b) {
  guard_fill(rt, b->off - GUARD, b);
  guard_fill(rt, b->off + b->len, b);
}

/* Block b's footprint [guard][len][guard] as one copy writes it, into f
 * (host memory, zeroed, 8-byte aligned): the guards' canaries, and between
 * them `bytes` of src where src is given (len: a multiple of ALIGN). */
static void foot_fill(const struct coop_rt *rt, const struct coop__arena_block *b, uint8_t *f,
                      const void *src, size_t bytes) {
  canaries(rt, b->off - GUARD, (uint64_t *)f);
  if (src) memcpy(f + GUARD, src, bytes);
  canaries(rt, b->off + b->len, (uint64_t *)(f + GUARD + b->len));
}

/* Whether both of block b's guards are whole in f, its footprint as one
 * copy read it. */
static int foot_ok(const struct coop_rt *rt, const struct coop__arena_block *b, const uint8_t *f) {
  return canaries_ok(rt, b->off - GUARD, (const uint64_t *)f) &&
         canaries_ok(rt, b->off + b->len, (const uint64_t *)(f + GUARD + b->len));
}

static int guards_ok(const struct coop_rt *rt, const struct coop__arena_block *b) {
  size_t foot = b->len + 2 * GUARD, lo = b->off - GUARD;
  uint8_t *f = one_copy(rt, b) ? malloc(foot) : NULL; /* the footprint read in one copy */
  int read = f && !rt->ops->copy_arena((struct coop_rt *)rt, f, at(rt, lo), foot, 0);
  int ok = read && foot_ok(rt, b, f);
  free(f);
  if (read) return ok;
  return guard_ok(rt, lo, b) && guard_ok(rt, b->off + b->len, b);
}

/* len bytes of the arena at p zeroed: large buffers by the copy engine
 * where the arena wants it (coop_rt_arena_copy), from a MiB of zeros (500
 * MB took 140 ms on an H200). Not cuMemsetD8: a memset is a kernel, which
 * beside the megakernel gets only the room left for the driver's kernels
 * (occupancy.c); zeroing a 500 MB buffer so while bfs was staged through
 * coopd lost the device process (H200), where the copy engine's zeros did
 * not. */
static const uint8_t zeros_mib[1u << 20];

static void arena_zero(struct coop_rt *rt, uint8_t *p, const struct coop__arena_block *b) {
  size_t len = b->len;
  if (by_host(rt, b)) {
    memset(p, 0, len);
    return;
  }
  for (size_t at = 0; at < len; at += sizeof zeros_mib)
    rt->ops->copy_arena(rt, p + at, zeros_mib,
                        len - at < sizeof zeros_mib ? len - at : sizeof zeros_mib, 1);
}

/* A new block's memory: its guards filled, and zeroed (`zero`), or only
 * past `bytes` (the caller writes the rest first). One copy of the whole
 * footprint where one_copy (zeros where the caller writes anyway), with
 * the data from src in it where given: 1 then, else the caller writes it. */
static int fresh(struct coop_rt *rt, const struct coop__arena_block *b, size_t bytes, int zero,
                 const void *src) {
  uint8_t *p = at(rt, b->off);
  /* NULL when out of memory: then guard by guard */
  uint8_t *f = one_copy(rt, b) ? calloc(1, b->len + 2 * GUARD) : NULL;
  if (f) foot_fill(rt, b, f, src, bytes);
  int done = f && !rt->ops->copy_arena(rt, p - GUARD, f, b->len + 2 * GUARD, 1);
  free(f);
  if (done) return src != NULL;
  static const uint8_t zeros[COOP__ARENA_HOST_PAGE];
  if (zero)
    arena_zero(rt, p, b);
  else if (b->len > bytes) /* fewer than ALIGN, or what rounds it to pages */
    edge_write(rt, p + bytes, zeros, b->len - bytes, b);
  guards_fill(rt, b);
  return 0;
}

/* n blocks b[0..n) into the sorted list at index `at`, in order. */
static int insert(struct coop_rt *rt, size_t at, const struct coop__arena_block *b, size_t n) {
  if (rt->nblocks + n > rt->cap_blocks) {
    size_t cap = rt->cap_blocks ? rt->cap_blocks : 32;
    while (cap < rt->nblocks + n) cap *= 2;
    struct coop__arena_block *nb = realloc(rt->blocks, cap * sizeof *nb);
    if (!nb) return -1;
    rt->blocks = nb;
    rt->cap_blocks = cap;
  }
  memmove(rt->blocks + at + n, rt->blocks + at, (rt->nblocks - at) * sizeof *rt->blocks);
  memcpy(rt->blocks + at, b, n * sizeof *b);
  rt->nblocks += n;
  return 0;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* rt->lock held. The first gap of `need` bytes starting on a multiple of
 * `page`, in the arena or (zone) in the device zone: its start in *start
 * and the list index of the block after it, or -1 when there is none. */
static long gap(const struct coop_rt *rt, int zone, size_t need, size_t page, size_t *start) {
  size_t lo = zone ? rt->arena_bytes : 0, hi = zone ? lo + rt->zone_bytes : rt->arena_bytes;
  size_t i = 0, prev_end = lo;
  while (i < rt->nblocks && rt->blocks[i].off < lo) i++;
  for (;; i++) {
    int last = i == rt->nblocks || rt->blocks[i].off >= hi;
    size_t next = last ? hi : rt->blocks[i].off - GUARD;
    *start = round_up(prev_end, page);
    if (*start <= next && next - *start >= need) return (long)i;
    if (last) return -1;
    prev_end = rt->blocks[i].off + rt->blocks[i].len + GUARD;
  }
}

/* rt->lock held. As gap, the last gap that holds `need` bytes, *start at
 * its top (the block ends where the gap does, on a multiple of `page`). */
static long gap_top(const struct coop_rt *rt, int zone, size_t need, size_t page, size_t *start) {
  size_t lo = zone ? rt->arena_bytes : 0, hi = zone ? lo + rt->zone_bytes : rt->arena_bytes;
  size_t i = 0, prev_end = lo, al = page > ALIGN ? page : ALIGN; /* as a first fit's start */
  long found = -1;
  while (i < rt->nblocks && rt->blocks[i].off < lo) i++;
  for (;; i++) {
    int last = i == rt->nblocks || rt->blocks[i].off >= hi;
    size_t next = last ? hi : rt->blocks[i].off - GUARD;
    size_t top = next >= need ? (next - need) / al * al : 0;
    if (next >= need && top >= round_up(prev_end, page)) {
      *start = top;
      found = (long)i;
    }
    if (last) return found;
    prev_end = rt->blocks[i].off + rt->blocks[i].len + GUARD;
  }
}

#define AT_ZONE 1u /* in the device zone */
#define AT_TOP 2u  /* last fit: see alloc_device */

/* rt->lock held. Where block b goes, first fit (or, AT_TOP, last): b->off
 * and b->len set, its index in the list returned, or -1 when no gap holds
 * it. A block in host memory starts on a page and ends on one, guards
 * included. */
static long place(const struct coop_rt *rt, unsigned where, size_t bytes,
                  struct coop__arena_block *b) {
  size_t len = round_up(bytes, ALIGN);
  size_t page = b->host ? COOP__ARENA_HOST_PAGE : 1;
  size_t need = round_up(len + 2 * GUARD, page), start; /* footprint: [guard][len][guard] */
  int zone = (where & AT_ZONE) != 0;
  long i =
      where & AT_TOP ? gap_top(rt, zone, need, page, &start) : gap(rt, zone, need, page, &start);
  if (i >= 0) {
    b->off = start + GUARD;
    b->len = need - 2 * GUARD;
  }
  return i;
}

/* *copied, where given: src's bytes are in the buffer already (fresh).
 * where: AT_ZONE, in the device zone (never with host); AT_TOP, last fit. */
static void *alloc(coop_rt *rt, size_t bytes, int zero, int host, unsigned where, const void *src,
                   int *copied) {
  int zone = (where & AT_ZONE) != 0;
  if (!rt || !rt->arena || bytes == 0 || bytes > (zone ? rt->zone_bytes : rt->arena_bytes))
    return NULL;
  struct coop__arena_block b = {.req = bytes, .host = host};
  void *res = NULL;
  pthread_mutex_lock(&rt->lock);
  long i = place(rt, where, bytes, &b);
  uint8_t *foot = i >= 0 ? at(rt, b.off - GUARD) : NULL; /* its footprint, guards included */
  int placed = i >= 0 && b.host && rt->ops->place_host;
  if (placed && rt->ops->place_host(rt, foot, b.len + 2 * GUARD, 1)) i = -1, placed = 0;
  if (i >= 0 && insert(rt, (size_t)i, &b, 1) != 0) {
    if (placed) rt->ops->place_host(rt, foot, b.len + 2 * GUARD, 0); /* no block there after all */
    i = -1;
  }
  if (i >= 0) {
    res = at(rt, b.off);
    /* Zeroed before reuse: nothing of an earlier job survives (the caller
     * of coop_rt_alloc_filled writes every byte first). The tail past
     * `bytes` is zeroed either way. */
    int in = fresh(rt, &b, bytes, zero, src);
    if (copied) *copied = in;
  }
  pthread_mutex_unlock(&rt->lock);
  return res;
}

void *coop_rt_alloc(coop_rt *rt, size_t bytes) { return alloc(rt, bytes, 1, 0, 0, NULL, NULL); }

/* In the zone where there is one and it has room, else in the arena;
 * last fit in either. Such a buffer outlives jobs (coopd's device
 * buffers): first fit put one between jobs' copies, and a 4 KiB one that
 * landed past a 469 KiB copy left no 600 KiB gap in a 1 MiB arena once
 * that copy went, so a job moved out to make room failed to come back
 * (docs/daemon.md, "Room in the arena"). At the top they stay apart from
 * the copies that come and go at the bottom. */
static void *alloc_device(coop_rt *rt, size_t bytes, int zero) {
  void *p = rt && rt->zone ? alloc(rt, bytes, zero, 0, AT_ZONE | AT_TOP, NULL, NULL) : NULL;
  return p ? p : alloc(rt, bytes, zero, 0, AT_TOP, NULL, NULL);
}

void *coop_rt_alloc_device(coop_rt *rt, size_t bytes) { return alloc_device(rt, bytes, 1); }

void *coop_rt_alloc_device_filled(coop_rt *rt, size_t bytes) { return alloc_device(rt, bytes, 0); }

int coop_rt_buf_in_device(const coop_rt *rt, const void *p) {
  if (!rt || !p || !rt->zone) return 0;
  size_t off = off_of(rt, p);
  return off != SIZE_MAX && in_zone(rt, off);
}

int coop_rt_arena_warm(coop_rt *rt, size_t bytes, unsigned nbufs) {
  if (!rt || !rt->arena) return COOP_EINVAL;
  if (rt->launched) return COOP_ESTATE; /* the backend waits for the device */
  if (!rt->ops->warm_arena || bytes == 0) return 0;
  /* each block: its data rounded up to ALIGN, a guard on either side */
  size_t per = 2 * (size_t)GUARD + ALIGN, cap = rt->arena_bytes;
  size_t n = bytes >= cap || nbufs > (cap - bytes) / per ? cap : bytes + (size_t)nbufs * per;
  return rt->ops->warm_arena(rt, rt->arena, n);
}

void *coop_rt_alloc_filled(coop_rt *rt, size_t bytes) {
  return alloc(rt, bytes, 0, 0, 0, NULL, NULL);
}

/* A large buffer's data is copied after rt->lock is let go: hundreds of
 * ms for a big one, which no other thread of the runtime waits out. */
int coop_rt_alloc_from(coop_rt *rt, size_t bytes, const void *src, void **out) {
  if (!out) return COOP_EINVAL;
  *out = NULL;
  if (!src) return COOP_EINVAL;
  int copied = 0;
  void *p = alloc(rt, bytes, 0, 0, 0, src, &copied);
  if (!p) return COOP_ENOMEM;
  int e = copied ? 0 : coop_rt_arena_copy(rt, p, src, bytes, 1);
  if (e) {
    coop_rt_free(rt, p);
    return e;
  }
  *out = p;
  return 0;
}

void *coop_rt_alloc_host(coop_rt *rt, size_t bytes) {
  return alloc(rt, bytes, 1, 1, 0, NULL, NULL);
}

/* rt->lock held. The list index of the block starting at offset off, or
 * -1 when none does. */
static long find(const struct coop_rt *rt, size_t off) {
  size_t lo = 0, hi = rt->nblocks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rt->blocks[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < rt->nblocks && rt->blocks[lo].off == off ? (long)lo : -1;
}

/* rt->lock held. Block i out of the list. */
static void remove_at(struct coop_rt *rt, size_t i) {
  const struct coop__arena_block *b = &rt->blocks[i];
  if (b->host && rt->ops->place_host) /* what comes next at its place goes where its use puts it */
    rt->ops->place_host(rt, at(rt, b->off - GUARD), b->len + 2 * GUARD, 0);
  memmove(rt->blocks + i, rt->blocks + i + 1, (rt->nblocks - i - 1) * sizeof *rt->blocks);
  rt->nblocks--;
}

int coop_rt_free(coop_rt *rt, void *p) {
  if (!rt || !p) return 0;
  if (!rt->arena) return COOP_EINVAL;
  int r = COOP_EINVAL;
  pthread_mutex_lock(&rt->lock);
  long i = find(rt, off_of(rt, p));
  if (i >= 0) {
    r = guards_ok(rt, &rt->blocks[i]) ? 0 : COOP_EFAULT;
    remove_at(rt, (size_t)i);
  }
  pthread_mutex_unlock(&rt->lock);
  return r;
}

/* A job's buffers as a group (coop_rt_alloc_group, coop_rt_free_group):
 * where the arena wants the copy engine, the footprints of small ones side
 * by side move in one copy each way, where one buffer at a time took one
 * copy each to be made and one more each to be checked or read (about 20
 * us a copy beside a running megakernel on an H200). */
static int group_in_one_copy(const struct coop_rt *rt, size_t span) {
  return !coop_rt_arena_direct(rt) && span <= COOP__ARENA_ONE_COPY;
}

/* The footprint of a buffer of `bytes`, guards included. */
static size_t foot_of(size_t bytes) { return round_up(bytes, ALIGN) + 2 * GUARD; }

/* rt->lock held. The group's buffers k with in[k] placed side by side in
 * one gap, into the list, their footprints' image in img (guards'
 * canaries, src's data, zeros) moved in one copy. 0; 1 when no gap holds
 * them all; COOP_ENOMEM, COOP_EIO (nothing stays in the list then). */
static int group_place(struct coop_rt *rt, unsigned n, const size_t *bytes, const void *const *src,
                       const uint8_t *in, uint8_t *img, size_t span, void **out) {
  struct coop__arena_block b[COOP_MAX_ARGS] = {{0}};
  unsigned m = 0;
  size_t start, pos = 0;
  long i = gap(rt, 0, span, 1, &start);
  if (i < 0) return 1;
  for (unsigned k = 0; k < n; k++) {
    if (!in[k]) continue;
    b[m] = (struct coop__arena_block){.req = bytes[k], .len = round_up(bytes[k], ALIGN)};
    b[m].off = start + pos + GUARD;
    foot_fill(rt, &b[m], img + pos, src ? src[k] : NULL, bytes[k]);
    out[k] = at(rt, b[m].off);
    pos += b[m++].len + 2 * GUARD;
  }
  int e = insert(rt, (size_t)i, b, m) ? COOP_ENOMEM : 0;
  if (!e && rt->ops->copy_arena(rt, at(rt, start), img, span, 1) != 0) {
    memmove(rt->blocks + i, rt->blocks + i + m, (rt->nblocks - (size_t)i - m) * sizeof *rt->blocks);
    rt->nblocks -= m;
    e = COOP_EIO;
  }
  for (unsigned k = 0; e && k < n; k++)
    if (in[k]) out[k] = NULL; /* no buffer there */
  return e;
}

/* Buffer k of a group on its own (coop_rt_alloc_from, coop_rt_alloc). */
static int alloc_one(coop_rt *rt, size_t bytes, const void *src, void **out) {
  if (src) return coop_rt_alloc_from(rt, bytes, src, out);
  return (*out = coop_rt_alloc(rt, bytes)) ? 0 : COOP_ENOMEM;
}

int coop_rt_alloc_group(coop_rt *rt, unsigned n, const size_t *bytes, const void *const *src,
                        void **out) {
  if (!rt || !rt->arena || !bytes || !out || n == 0 || n > COOP_MAX_ARGS) return COOP_EINVAL;
  uint8_t in[COOP_MAX_ARGS] = {0}; /* in the one copy: those that fit, in order */
  size_t span = 0;
  for (unsigned k = 0; k < n; k++) out[k] = NULL;
  for (unsigned k = 0; k < n; k++) {
    if (bytes[k] == 0) return COOP_EINVAL;
    if (bytes[k] <= COOP__ARENA_ONE_COPY && group_in_one_copy(rt, span + foot_of(bytes[k]))) {
      in[k] = 1;
      span += foot_of(bytes[k]);
    }
  }
  uint8_t *img = span ? calloc(1, span) : NULL;
  int e = 0;
  if (img) {
    pthread_mutex_lock(&rt->lock);
    e = group_place(rt, n, bytes, src, in, img, span, out);
    pthread_mutex_unlock(&rt->lock);
    free(img);
  }
  if (!img || e == 1) { /* no memory for the image, or no one gap: each where it fits */
    memset(in, 0, sizeof in);
    memset(out, 0, n * sizeof *out);
    e = 0;
  }
  for (unsigned k = 0; k < n && !e; k++)
    if (!in[k]) e = alloc_one(rt, bytes[k], src ? src[k] : NULL, &out[k]);
  if (e)
    for (unsigned k = 0; k < n; k++) {
      if (out[k]) coop_rt_free(rt, out[k]);
      out[k] = NULL;
    }
  return e;
}

/* rt->lock held. Block b's guards whole, read from img (the span from
 * arena offset lo) where given, else by guards_ok; its first len bytes
 * into dst where dst is given. Returns COOP_EIO where they could not be
 * read, else 0; *ok the guards. */
static int group_out(struct coop_rt *rt, const struct coop__arena_block *b, const uint8_t *img,
                     size_t lo, void *dst, size_t len, int *ok) {
  int e = 0;
  if (dst && len > b->req)
    e = COOP_EIO; /* past the buffer */
  else if (dst && img)
    memcpy(dst, img + (b->off - lo), len);
  else if (dst && by_host(rt, b))
    memcpy(dst, at(rt, b->off), len);
  else if (dst && len && rt->ops->copy_arena(rt, dst, at(rt, b->off), len, 0))
    e = COOP_EIO;
  *ok = img ? foot_ok(rt, b, img + (b->off - GUARD - lo)) : guards_ok(rt, b);
  return e;
}

int coop_rt_free_group(coop_rt *rt, unsigned n, void *const *p, void *const *dst, const size_t *len,
                       int *breach) {
  int none;
  if (!breach) breach = &none;
  *breach = -1;
  if (!rt || !rt->arena || !p || n == 0 || n > COOP_MAX_ARGS) return COOP_EINVAL;
  struct coop__arena_block b[COOP_MAX_ARGS];
  int found[COOP_MAX_ARGS], small[COOP_MAX_ARGS], einval = 0, eio = 0;
  size_t lo = SIZE_MAX, hi = 0; /* the span of the small ones, read in one copy */
  pthread_mutex_lock(&rt->lock);
  for (unsigned k = 0; k < n; k++) {
    long i = p[k] ? find(rt, off_of(rt, p[k])) : -1;
    found[k] = i >= 0;
    small[k] = 0;
    if (!found[k]) continue;
    b[k] = rt->blocks[i];
    small[k] = one_copy(rt, &b[k]) && !in_zone(rt, b[k].off); /* the span: the arena's */
    if (!small[k]) continue;
    if (b[k].off - GUARD < lo) lo = b[k].off - GUARD;
    if (b[k].off + b[k].len + GUARD > hi) hi = b[k].off + b[k].len + GUARD;
  }
  uint8_t *img = hi > lo && group_in_one_copy(rt, hi - lo) ? malloc(hi - lo) : NULL;
  if (img && rt->ops->copy_arena(rt, img, at(rt, lo), hi - lo, 0)) { /* each on its own */
    free(img);
    img = NULL;
  }
  for (unsigned k = 0; k < n; k++) {
    int ok = 1;
    if (!found[k]) {
      einval = 1;
      continue;
    }
    eio |= group_out(rt, &b[k], small[k] ? img : NULL, lo, dst ? dst[k] : NULL, len ? len[k] : 0,
                     &ok) != 0;
    if (!ok && *breach < 0) *breach = (int)k;
  }
  for (unsigned k = 0; k < n; k++) {
    long i = found[k] ? find(rt, b[k].off) : -1;
    if (i >= 0)
      remove_at(rt, (size_t)i);
    else
      einval |= found[k]; /* named twice */
  }
  pthread_mutex_unlock(&rt->lock);
  free(img);
  return einval ? COOP_EINVAL : eio ? COOP_EIO : *breach >= 0 ? COOP_EFAULT : 0;
}

static int buf_guards(coop_rt *rt, const void *p, int rearm) {
  if (!rt || !p || !rt->arena) return COOP_EINVAL;
  size_t off = off_of(rt, p);
  int r = COOP_EINVAL;
  pthread_mutex_lock(&rt->lock);
  long i = find(rt, off);
  if (i >= 0) {
    struct coop__arena_block b = rt->blocks[i];
    r = guards_ok(rt, &b) ? 0 : COOP_EFAULT;
    if (r && rearm) guards_fill(rt, &b); /* found once: armed again for the buffer's next job */
  }
  pthread_mutex_unlock(&rt->lock);
  return r;
}

int coop_rt_buf_check(coop_rt *rt, const void *p) { return buf_guards(rt, p, 1); }

int coop_rt_buf_intact(coop_rt *rt, const void *p) { return buf_guards(rt, p, 0); }

/* The address less the arena's, wrapping (the zone may lie below it). */
uint64_t coop_rt_buf_arg(const coop_rt *rt, const void *p) {
  return (uint64_t)((uintptr_t)p - (uintptr_t)rt->arena);
}

/* rt->lock held. The requested size of the block whose argument value is
 * arg, or 0 when no block starts there (the argument is not a buffer). */
uint64_t coop__arena_len_at(const struct coop_rt *rt, uint64_t arg) {
  long i = find(rt, arg_off(rt, arg));
  return i >= 0 ? rt->blocks[i].req : 0;
}

uint64_t coop_rt_buf_len(coop_rt *rt, const void *p) {
  if (!rt || !p || !rt->arena) return 0;
  pthread_mutex_lock(&rt->lock);
  uint64_t n = coop__arena_len_at(rt, coop_rt_buf_arg(rt, p));
  pthread_mutex_unlock(&rt->lock);
  return n;
}

void *coop_rt_buf_host(coop_rt *rt, uint64_t arg) {
  if (!rt || !rt->arena) return NULL;
  pthread_mutex_lock(&rt->lock);
  int is_buf = coop__arena_len_at(rt, arg) != 0;
  pthread_mutex_unlock(&rt->lock);
  return is_buf ? at(rt, arg_off(rt, arg)) : NULL;
}

int coop_rt_arena_direct(const coop_rt *rt) { return !rt || !rt->ops || !rt->ops->copy_arena; }

/* rt->lock held. Whether arena byte `off` lies in the footprint of a block
 * placed in host memory (coop_rt_alloc_host). */
static int in_host_block(const struct coop_rt *rt, size_t off) {
  size_t lo = 0, hi = rt->nblocks; /* the first block that starts past off */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rt->blocks[mid].off - GUARD <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  const struct coop__arena_block *b = lo ? &rt->blocks[lo - 1] : NULL;
  return b && b->host && off < b->off + b->len + GUARD;
}

void *coop_rt_host_buffer(coop_rt *rt, size_t n) {
  if (!rt || !n) return NULL;
  struct coop__host_buf *h = malloc(sizeof *h);
  if (!h) return NULL;
  h->backend = rt->ops && rt->ops->alloc_host && rt->ops->free_host;
  h->p = h->backend ? rt->ops->alloc_host(rt, n) : NULL;
  if (!h->p) h->backend = 0, h->p = malloc(n);
  if (!h->p) {
    free(h);
    return NULL;
  }
  pthread_mutex_lock(&rt->lock);
  h->next = rt->host_bufs;
  rt->host_bufs = h;
  pthread_mutex_unlock(&rt->lock);
  return h->p;
}

/* At close, once the megakernel has ended: freeing page-locked memory
 * while it runs would wait for it (the driver waits for the device). */
void coop__host_bufs_free(coop_rt *rt) {
  struct coop__host_buf *h = rt->host_bufs, *next;
  rt->host_bufs = NULL;
  for (; h; h = next) {
    next = h->next;
    if (h->backend)
      rt->ops->free_host(rt, h->p);
    else
      free(h->p);
    free(h);
  }
}

int coop_rt_host_register(coop_rt *rt, void *p, size_t n) {
  if (!rt || !rt->ops || !rt->ops->host_register || !p || !n) return COOP_EINVAL;
  return rt->ops->host_register(rt, p, n);
}

void coop_rt_host_unregister(coop_rt *rt, void *p) {
  if (rt && rt->ops && rt->ops->host_unregister && p) rt->ops->host_unregister(rt, p);
}

int coop__arena_has(const struct coop_rt *rt, const void *p, size_t n) {
  size_t off = off_of(rt, p);
  if (off == SIZE_MAX) return 0;
  size_t end = in_zone(rt, off) ? rt->arena_bytes + rt->zone_bytes : rt->arena_bytes;
  return n <= end - off;
}

int coop_rt_arena_copy(coop_rt *rt, void *dst, const void *src, size_t n, int to_arena) {
  if (!rt || !rt->arena) return COOP_EINVAL;
  if (n == 0) return 0;
  const uint8_t *a = to_arena ? dst : src;
  if (!coop__arena_has(rt, a, n)) return COOP_EINVAL;
  int host = coop_rt_arena_direct(rt);
  if (!host) {
    pthread_mutex_lock(&rt->lock);
    host = in_host_block(rt, off_of(rt, a));
    pthread_mutex_unlock(&rt->lock);
  }
  if (host) {
    memcpy(dst, src, n);
    return 0;
  }
  return rt->ops->copy_arena(rt, dst, src, n, to_arena);
}

int coop_rt_arena_zero(coop_rt *rt, void *dst, size_t n) {
  if (!rt || !rt->arena) return COOP_EINVAL;
  if (!coop__arena_has(rt, dst, n)) return COOP_EINVAL;
  if (coop_rt_arena_direct(rt)) {
    memset(dst, 0, n);
    return 0;
  }
  for (size_t at = 0; at < n; at += sizeof zeros_mib) {
    int e = coop_rt_arena_copy(rt, (uint8_t *)dst + at, zeros_mib,
                               n - at < sizeof zeros_mib ? n - at : sizeof zeros_mib, 1);
    if (e) return e;
  }
  return 0;
}

int coop_rt_copy_warm(coop_rt *rt) { return coop_rt_copy_warm_from(rt, NULL, 0); }

int coop_rt_copy_warm_from(coop_rt *rt, const void *host, size_t bytes) {
  if (!rt || !rt->ops || !rt->ops->copy_warm) return COOP_EINVAL;
  return rt->ops->copy_warm(rt, host, host ? bytes : 0);
}

int coop_rt_arena_dup(coop_rt *rt, void *dst, const void *src, size_t n) {
  if (!rt || !rt->arena) return COOP_EINVAL;
  if (n == 0) return 0;
  if (!rt->ops || !rt->ops->dup_arena) { /* the host reaches the arena as cheaply */
    memcpy(dst, src, n);
    return 0;
  }
  /* whatever the size: a host copy would move the pages of both to the host */
  return rt->ops->dup_arena(rt, dst, src, n);
}
