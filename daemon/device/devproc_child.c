/*
 * devproc_child.c: the device process (devproc.h). `coopd --device-process
 * FD` lands here: it owns one coop runtime and answers the front process's
 * requests on FD until that closes, then closes the runtime and exits.
 * It holds nothing else: no client socket, no journal, no other
 * descriptor (all closed at start).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "childlog.h"
#include "coop_util.h"
#include "devproc.h"
#include "devproc_shm.h"
#include "dp_ends.h"
#include "fdio.h"
#include "devproc_msg.h"
#include "wire.h"
#include "dp_warm.h"
#include "xmap.h"

_Static_assert(COOP_WIRE_MAX_WG <= DP_VIEW_MAX, "a view fits a reply");

struct child {
  coop_rt *rt;
  /* DP_NEXT_BUILD's set (rebuilding in place), NULL if none; its build
   * runs on next_th until next_done (release), with next_err its result */
  coop_rt_next *next;
  pthread_t next_th;
  atomic_int next_done;
  int next_err, next_joined;
  int kick;              /* DP_KICKFD's eventfd (non-blocking), or -1 */
  long spin_ns;          /* DP_WAIT's spin: DP_SPIN_NS on a GPU, 0 on the CPU (PoCL) */
  int64_t idle_spin_ns;  /* DP_KICKFD's a: after a reply, the next request's spin */
  uint8_t reported[256]; /* per task slot: the state last answered + 1 (0: none) */
  struct dp_shm *shm;    /* DP_SHM's channel (devproc_shm.h), or NULL */
  uint32_t shm_seen;     /* the last request taken from it (its req_seq) */
  int64_t warm_until;    /* the last request's warm window's end (dp_req.warm_until) */
  int64_t told_until;    /* the last window told without a request (shm_window) */
  int64_t copied_at;     /* the last request taken or copy warm-up's end (copy_warm) */
  int64_t warmed_for;    /* the window (its end) of the last warm-up */
  int64_t submitted_for; /* the window (its end) of the last DP_SUBMIT (copy_warm) */
  /* a one-task job's run as DP_SUBMIT last saw it: when the next one's
   * end is due (wait_for) */
  struct dp_ends ends;
  struct dp_warm warm; /* the last DP_SUBMIT_IO's ranges: what copy_warm reads */
  /* per task slot: a task the front asked to have ended here (dp_req.id)
   * whose DP_SUBMIT reply came before its end: ended at the first DP_POLL
   * or DP_WAIT reply that finds it final (end_seen) */
  struct pend {
    coop_task_id id; /* 0: none */
    uint64_t mask;   /* the device buffers among args (dp_req.a) */
    unsigned nargs, nout;
    uint64_t args[COOP_RT_MAX_ARGS];
    /* DP_SUBMIT_IO's ranges out, found again at the end as DP_READ finds
     * them (buf_range, file_range: checked against the buffer and the
     * owner's mapping then), not kept as pointers across requests */
    uint64_t dev, ino;
    struct dp_buf_entry out[COOP_RT_IO_MAX];
  } pend[256];
};

/* DP_WAIT's spin, then its naps (see wait_for). */
#define DP_SPIN_NS 1000000L
#define DP_NAP0_NS 5000L
#define DP_NAP_MAX_NS 100000L
#define DP_WARM_MAX_NS 10000000L /* the longest warm window honoured */

static void devinfo(coop_rt *rt, struct dp_devinfo *d) {
  snprintf(d->name, sizeof d->name, "%s", coop_rt_device_name(rt));
  snprintf(d->backend, sizeof d->backend, "%s", coop_rt_backend(rt));
  snprintf(d->note, sizeof d->note, "%s", coop_rt_backend_note(rt));
  d->cus = coop_rt_compute_units(rt);
  d->workers = coop_rt_workers(rt);
}

/* DP_OPEN's answer to a front of another build (dp_req_check). */
static void another_build(struct dp_rep *r) {
  snprintf(r->u.text, sizeof r->u.text,
           "the device process is another build of coopd than the one running (was it "
           "replaced on disk?): restart coopd");
}

/* A client's transfer memfd, mapped and pinned once (xmap.h): the copy
 * engine reads and writes its pages, with no bounce. Set up with the
 * runtime (do_open), cleared when the megakernel parks, forgotten once
 * the runtime has closed. */
static struct xmap xm;
/* Pinned where the arena is the copy engine's; where the host's own
 * copies fill it (PoCL: coop_rt_arena_direct) the mapping serves as it
 * is, with nothing to pin. */
static int xm_pin(void *rt, void *p, size_t n) {
  return coop_rt_arena_direct(rt) ? 0 : coop_rt_host_register(rt, p, n);
}
static void xm_unpin(void *rt, void *p) { coop_rt_host_unregister(rt, p); }

/* Tests only: COOP_TEST_CRASH_BUILD="WORD:PATH" kills this process
 * (SIGKILL, as a compiler that crashes) when a kernel it is given to build
 * holds WORD while the file PATH exists: a source that builds until
 * something outside it changes (test_daemon_authors.c). */
static void test_crash_build(const char *src) {
  const char *v = getenv("COOP_TEST_CRASH_BUILD");
  char word[64], path[256];
  if (v && sscanf(v, "%63[^:]:%255s", word, path) == 2 && strstr(src, word) &&
      access(path, F_OK) == 0)
    kill(getpid(), SIGKILL);
}

/* n kernels from the memfd sfd (devproc.c writes them: u32 cooperative,
 * u32 name length, u64 source length, name, source), each given to add:
 * 0, or the first error (COOP_EIO: the file was not as written). */
static int read_kernels(int sfd, uint32_t n, int (*add)(void *, const char *, int, const char *),
                        void *to) {
  uint64_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    struct {
      uint32_t coop, nlen;
      uint64_t slen;
    } h;
    if (fdio_pread(sfd, &h, sizeof h, off) || h.nlen > 255 || h.slen > (1u << 20)) return COOP_EIO;
    off += sizeof h;
    char *name = malloc(h.nlen + 1), *src = malloc(h.slen + 1);
    int e = !name || !src || fdio_pread(sfd, name, h.nlen, off) ||
                    fdio_pread(sfd, src, h.slen, off + h.nlen)
                ? COOP_EIO
                : 0;
    if (e == 0) {
      name[h.nlen] = src[h.slen] = '\0';
      off += h.nlen + h.slen;
      test_crash_build(src);
      int k = add(to, name, (int)h.coop, src);
      if (k < 0) e = k;
    }
    free(name); /* the runtime keeps its own copies */
    free(src);
    if (e) return e;
  }
  return 0;
}

static int add_to_rt(void *rt, const char *name, int coop, const char *src) {
  return coop_rt_add_kernel(rt, name, coop, src);
}
static int add_to_next(void *n, const char *name, int coop, const char *src) {
  return coop_rt_next_add_kernel(n, name, coop, src);
}

/* OPEN: the options, then the kernels from the memfd (read_kernels). */
static int do_open(struct child *ch, const struct dp_req *q, int sfd, struct dp_rep *r) {
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  const struct dp_open_args *a = &q->u.open; /* its layout stamp checked: dp_req_check */
  o.backend = a->backend[0] ? a->backend : NULL;
  o.platform = a->platform[0] ? a->platform : NULL;
  o.device = a->device[0] ? a->device : NULL;
  o.platform_index = a->platform_index;
  o.device_index = a->device_index;
  o.local_size = a->local_size;
  o.launch_groups = a->launch_groups;
  o.arena_bytes = a->arena_bytes;
  o.device_bytes = a->device_bytes;
  o.max_registers = a->max_registers;
  int e = coop_rt_open(&ch->rt, &o);
  if (e == 0) xmap_init(&xm, xm_pin, xm_unpin, ch->rt);
  if (e == 0) e = read_kernels(sfd, a->nkernels, add_to_rt, ch->rt);
  if (e == 0 && !a->widths_only) e = coop_rt_build(ch->rt);
  if (e && ch->rt) snprintf(r->u.text, sizeof r->u.text, "%s", coop_rt_errmsg(ch->rt));
  if (e == 0) devinfo(ch->rt, &r->u.dev);
  return e;
}

/* fd_copy's host buffer for the copy engine: the runtime's
 * (coop_rt_host_buffer), freed with it at DP_CLOSE. */
#define DP_BOUNCE (16u << 20) /* a 1 MiB one spent more on the calls than the bytes */
static uint8_t *bounce_buf;
static uint8_t *bounce(coop_rt *rt) {
  if (!bounce_buf) bounce_buf = coop_rt_host_buffer(rt, DP_BOUNCE);
  return bounce_buf;
}

/* Whether a copy goes through the file's mapping: wherever this process
 * holds one (the copy engine reads the pinned pages; on PoCL a read
 * spared). */
static int via_map(void) { return xm.arg != 0; }

/* n bytes between a file's mapping at m and arena memory at p: into the
 * arena where `in`, else out of it. 0, or -1. */
static int map_copy(coop_rt *rt, uint8_t *m, uint8_t *p, uint64_t n, int in) {
  return coop_rt_arena_copy(rt, in ? p : m, in ? m : p, n, in) ? -1 : 0;
}

/* n bytes between descriptor fd at off and arena memory at p, into the
 * arena where `in`, else out of it, not through a mapping of the file:
 * where host accesses to the arena do as well as the copy engine
 * (coop_rt_arena_direct: host memory), straight; else (CUDA managed
 * memory, which the host would fault on page by page) through the bounce
 * buffer and the device's copy engine (coop_rt_arena_copy), a chunk at a
 * time. 0, or -1. */
static int fd_copy_unmapped(coop_rt *rt, int fd, uint8_t *p, uint64_t n, uint64_t off, int in) {
  if (coop_rt_arena_direct(rt)) return in ? fdio_pread(fd, p, n, off) : fdio_pwrite(fd, p, n, off);
  uint8_t *b = bounce(rt);
  for (uint64_t at = 0; at < n; at += DP_BOUNCE) {
    size_t k = n - at < DP_BOUNCE ? (size_t)(n - at) : DP_BOUNCE;
    int bad =
        !b || (in ? fdio_pread(fd, b, k, off + at) || coop_rt_arena_copy(rt, p + at, b, k, 1)
                  : coop_rt_arena_copy(rt, b, p + at, k, 0) || fdio_pwrite(fd, b, k, off + at));
    if (bad) return -1;
  }
  return 0;
}

/* Where bytes [off, off + n) of descriptor fd are in this process's
 * mapping of it (xmap.h, via_map), or NULL where it holds none. */
static uint8_t *map_at(int fd, uint64_t off, uint64_t n, uint32_t owner) {
  uint8_t *m = via_map() ? xmap_get(&xm, fd, off, n, coop__now_ns(), owner) : NULL;
  return m ? m + off : NULL;
}

/* As fd_copy_unmapped, through the file's mapping where this process
 * holds one (map_at: *mapped, where given, says so). */
static int fd_copy(coop_rt *rt, int fd, uint8_t *p, uint64_t n, uint64_t off, uint32_t owner,
                   int in, uint32_t *mapped) {
  uint8_t *m = map_at(fd, off, n, owner);
  if (mapped) *mapped = m != NULL;
  if (m) return map_copy(rt, m, p, n, in);
  return fd_copy_unmapped(rt, fd, p, n, off, in);
}

/* map_at for buffer d of a request, whose descriptor is fds[d->fd]. */
static uint8_t *map_of(const struct dp_buf_entry *d, const int *fds, unsigned nfds) {
  int32_t f = d->fd;
  return f >= 0 && (unsigned)f < nfds ? map_at(fds[f], d->off, d->size, d->owner) : NULL;
}

/* A small buffer's bytes on their way between a descriptor not mapped
 * here and the group's one copy (coop_rt_alloc_group, _free_group): room
 * for its n bytes in the bounce buffer, of which the same request has
 * taken *used; NULL when the buffer is not small or no room is left.
 * (Through fd_copy_unmapped each took a copy of its own, and a small job
 * of three buffers five copies to be staged: bench/RESULTS.md, "A small
 * job's buffers in one copy each way".) */
#define DP_SMALL (64u << 10) /* the most the arena moves in one copy */
static uint8_t *scratch(coop_rt *rt, uint64_t n, uint64_t *used) {
  uint8_t *b = bounce(rt);
  if (!b || n > DP_SMALL || n > DP_BOUNCE - *used) return NULL;
  uint8_t *p = b + *used;
  *used += (n + 63u) & ~(uint64_t)63u;
  return p;
}

/* Where buffer d's IN data comes from when it is made with the job's
 * others: its descriptor's mapping here, else, for a small one, its bytes
 * read into the scratch room; NULL (made on its own) for one filled later
 * (DP_IN_LATER), from a share, too large, or where the read failed (*bad
 * then). A buffer without IN data is made in the group, zeroed. */
static const uint8_t *stage_src(coop_rt *rt, const struct dp_buf_entry *d, const int *fds,
                                unsigned nfds, uint64_t *used, int *bad) {
  if (d->in != 1) return NULL;
  const uint8_t *m = map_of(d, fds, nfds);
  if (m || d->fd < 0 || (unsigned)d->fd >= nfds) return m;
  uint8_t *p = scratch(rt, d->size, used);
  if (p && fdio_pread(fds[d->fd], p, d->size, d->off)) *bad = 1;
  return p;
}

/* DP_STAGE: every buffer allocated, IN data read from its descriptor (a
 * DP_IN_LATER one's comes by DP_WRITE next); on any failure nothing stays
 * allocated. A buffer is zeroed unless its IN data covers it (a short read
 * fails the stage, and the next allocation of that memory zeroes it).
 * Those made from host data (stage_src) or zeroed go together: a small
 * job's in one copy (docs/daemon.md, "Large buffers in slices"). A
 * device buffer (`keep`: it outlives its job) goes alone, into device
 * memory where the runtime has a device zone (coop_rt_alloc_device): the
 * host only copies its bytes (docs/daemon.md, "Device buffers"). */
static int do_stage(coop_rt *rt, const struct dp_bufs *b, const int *fds, unsigned nfds,
                    uint64_t *args) {
  if (b->n > DP_MAX_BUFS) return COOP_EPROTO;
  size_t gb[DP_MAX_BUFS];
  const void *gs[DP_MAX_BUFS];
  void *gp[DP_MAX_BUFS], *p[DP_MAX_BUFS] = {0};
  unsigned gi[DP_MAX_BUFS], ng = 0;
  uint64_t used = 0;
  int bad = 0;
  for (unsigned i = 0; i < b->n && !bad; i++) {
    if (b->b[i].keep) continue; /* alone, below */
    const uint8_t *src = stage_src(rt, &b->b[i], fds, nfds, &used, &bad);
    if (!b->b[i].size || (!src && b->b[i].in)) continue;
    gi[ng] = i;
    gb[ng] = b->b[i].size;
    gs[ng++] = src;
  }
  if (bad) return COOP_EIO; /* a short read */
  int e = ng ? coop_rt_alloc_group(rt, ng, gb, gs, gp) : 0;
  if (e) return e == COOP_ENOMEM ? COOP_ENOMEM : COOP_EIO; /* a copy's error: as a short read */
  for (unsigned k = 0; k < ng; k++) p[gi[k]] = gp[k];
  for (unsigned i = 0; i < b->n && !e; i++) {
    const struct dp_buf_entry *d = &b->b[i];
    if (p[i]) continue; /* made in the group */
    p[i] = !d->size   ? NULL
           : !d->keep ? coop_rt_alloc_filled(rt, d->size)
           : d->in    ? coop_rt_alloc_device_filled(rt, d->size) /* its IN data covers it */
                      : coop_rt_alloc_device(rt, d->size);
    const uint8_t *m = d->keep && d->in == 1 ? map_of(d, fds, nfds) : NULL;
    if (!p[i]) {
      e = COOP_ENOMEM;
    } else if (d->in == DP_IN_LATER || (d->keep && !d->in && d->fd != DP_FD_SHARE)) {
      /* filled by DP_WRITE next; or a device buffer without IN data, zeroed */
    } else if (m) {
      if (coop_rt_arena_copy(rt, p[i], m, d->size, 1)) e = COOP_EIO;
    } else if (d->fd == DP_FD_SHARE) {
      if (coop_rt_share_copy(rt, p[i], (void *)(uintptr_t)d->at, d->size)) e = COOP_EIO;
    } else if (d->fd < 0 || (unsigned)d->fd >= nfds ||
               /* stage_src found no mapping: not looked for again */
               fd_copy_unmapped(rt, fds[d->fd], p[i], d->size, d->off, 1)) {
      e = COOP_EIO;
    }
  }
  for (unsigned i = 0; i < b->n; i++) {
    if (e && p[i]) coop_rt_free(rt, p[i]);
    args[i] = !e && p[i] ? coop_rt_buf_arg(rt, p[i]) : 0;
  }
  return e;
}

/* DP_UNSTAGE: OUT data written, every buffer freed (together, the OUT
 * bytes of those with a mapping here, or small, copied out with them:
 * coop_rt_free_group, the small ones' through the scratch room and
 * written to their descriptors after), a device buffer's guards checked;
 * *breach: the first whose guard zone was overwritten, or -1. */
static int do_unstage(coop_rt *rt, const struct dp_bufs *b, const int *fds, unsigned nfds,
                      int *breach) {
  if (b->n > DP_MAX_BUFS) return COOP_EPROTO;
  int e = 0;
  void *fp[DP_MAX_BUFS], *fdst[DP_MAX_BUFS];
  size_t fl[DP_MAX_BUFS];
  unsigned fi[DP_MAX_BUFS], nf = 0;
  uint8_t *via[DP_MAX_BUFS] = {0}; /* the scratch room a small one's bytes go through */
  uint64_t used = 0;
  *breach = -1;
  for (unsigned i = 0; i < b->n; i++) {
    const struct dp_buf_entry *d = &b->b[i];
    void *p = coop_rt_buf_host(rt, d->arg);
    if (!p) {
      e = COOP_EINVAL;
      continue;
    }
    int32_t f = d->fd;
    uint8_t *m = d->out && !d->keep ? map_of(d, fds, nfds) : NULL; /* out with the group */
    if (d->out && !d->keep && !m && f >= 0 && (unsigned)f < nfds)
      m = via[i] = scratch(rt, d->size, &used);
    if (!d->out || m) {
      /* nothing to copy here */
    } else if (f == DP_FD_SHARE) {
      if (coop_rt_buf_len(rt, p) < d->size ||
          coop_rt_share_copy(rt, (void *)(uintptr_t)d->at, p, d->size))
        e = COOP_EIO;
    } else if (f < 0 || (unsigned)f >= nfds || coop_rt_buf_len(rt, p) < d->size ||
               /* map_of found no mapping: not looked for again */
               fd_copy_unmapped(rt, fds[f], p, d->size, d->off, 0)) {
      e = COOP_EIO;
    }
    if (!d->keep) {
      fi[nf] = i;
      fp[nf] = p;
      fdst[nf] = m;
      fl[nf++] = m ? d->size : 0;
    } else if (d->keep == 1 && coop_rt_buf_check(rt, p) == COOP_EFAULT && *breach < 0) {
      *breach = (int)i;
    }
  }
  int br = -1, r = nf ? coop_rt_free_group(rt, nf, fp, fdst, fl, &br) : 0;
  if (br >= 0 && (*breach < 0 || (int)fi[br] < *breach)) *breach = (int)fi[br];
  if ((r == COOP_EIO || r == COOP_EINVAL) && !e) e = COOP_EIO;
  for (unsigned i = 0; i < b->n && !e; i++)
    if (via[i] && fdio_pwrite(fds[b->b[i].fd], via[i], b->b[i].size, b->b[i].off)) e = COOP_EIO;
  return e;
}

/* DP_PREPARE and the shares (DP_SHARE, _OPEN, _FREE): a kernel reload's
 * carried buffers go from the old device process to the new one through
 * device memory both reach, staged into the new arena before its
 * megakernel starts (docs/daemon.md, "Kernel reload"). 1 where op was
 * one of them. */
static int share_op(coop_rt *rt, const struct dp_req *q, struct dp_rep *r) {
  void *p = NULL;
  switch (q->op) {
    case DP_PREPARE: /* a: bytes, b: buffers to place on the device ahead */
      r->err = coop_rt_prepare(rt);
      if (r->err == 0 && q->a && q->a <= SIZE_MAX && q->b <= UINT_MAX)
        (void)coop_rt_arena_warm(rt, (size_t)q->a,
                                 (unsigned)q->b); /* a hint: staging works without */
      if (r->err) snprintf(r->u.text, sizeof r->u.text, "%s", coop_rt_errmsg(rt));
      return 1;
    case DP_SHARE:
      r->err =
          q->a > SIZE_MAX ? COOP_EINVAL : coop_rt_share_alloc(rt, (size_t)q->a, &r->u.share, &p);
      r->a = (uintptr_t)p;
      return 1;
    case DP_SHARE_OPEN:
      r->err = coop_rt_share_open(rt, &q->u.share, &p);
      r->a = (uintptr_t)p;
      return 1;
    case DP_SHARE_FREE:
      r->err = coop_rt_share_free(rt, (void *)(uintptr_t)q->a);
      return 1;
    default:
      return 0;
  }
}

/* DP_SAVED and DP_RESUME: a suspended task's saved state to fd, or a task
 * resumed from the state in fd (a job carried across a reload, dev_carry.c). */
static int saved_state(coop_rt *rt, const struct dp_req *q, int fd, struct dp_rep *r) {
  size_t n = coop_rt_state_bytes(rt);
  void *st = malloc(n ? n : 1);
  if (!st) return COOP_ENOMEM;
  int e;
  if (q->op == DP_SAVED) {
    e = coop_rt_saved_state(rt, q->id, st, n);
    if (e == 0 && fdio_pwrite(fd, st, n, 0)) e = COOP_EIO;
    r->a = n;
  } else {
    coop_task_id id = 0;
    e = fdio_pread(fd, st, n, 0) ? COOP_EIO : coop_rt_submit_resumed(rt, &q->u.desc, st, n, &id);
    r->a = id;
  }
  free(st);
  return e;
}

/* Entry e's range of its buffer, checked against the buffer here (where
 * the arena is, whatever the front believed): its start, or NULL. */
static uint8_t *buf_range(coop_rt *rt, const struct dp_buf_entry *e) {
  uint8_t *p = coop_rt_buf_host(rt, e->arg);
  uint64_t len = p ? coop_rt_buf_len(rt, p) : 0;
  return p && e->at <= len && e->size <= len - e->at ? p + e->at : NULL;
}

/* Entry e's range of the file (dev, ino) this process holds mapped for
 * e's owner (xmap_find): its start in the mapping, or NULL when it is not
 * mapped here. */
static uint8_t *file_range(uint64_t dev, uint64_t ino, const struct dp_buf_entry *e) {
  uint8_t *m =
      xm.arg ? xmap_find(&xm, (dev_t)dev, (ino_t)ino, e->off, e->size, coop__now_ns(), e->owner)
             : NULL;
  return m ? m + e->off : NULL;
}

/* DP_WRITE and DP_READ: one range of a device buffer from or to a
 * descriptor, or a file mapped here named by its identity (q->a, q->b:
 * DP_FD_PINNED), or zeros (DP_WRITE with DP_FD_ZERO); the range is checked against the buffer here,
 * where the arena is, whatever the front believed. *mapped: the copy went through the file's
 * mapping (0 with DP_FD_PINNED: it is not mapped, and nothing was copied). */
static int do_copy(coop_rt *rt, const struct dp_req *q, const int *fds, unsigned nfds, int in,
                   uint32_t *mapped) {
  const struct dp_bufs *b = &q->u.bufs;
  *mapped = 0;
  if (b->n != 1) return COOP_EPROTO;
  uint8_t *p = buf_range(rt, &b->b[0]);
  if (!p) return COOP_EINVAL;
  int32_t f = b->b[0].fd;
  uint64_t n = b->b[0].size;
  if (f == DP_FD_ZERO) return !in ? COOP_EPROTO : coop_rt_arena_zero(rt, p, n) ? COOP_EIO : 0;
  if (f == DP_FD_PINNED) {
    uint8_t *m = file_range(q->a, q->b, &b->b[0]);
    if (!m) return 0;
    *mapped = 1;
    return map_copy(rt, m, p, n, in) ? COOP_EIO : 0;
  }
  if (f < 0 || (unsigned)f >= nfds) return COOP_EIO;
  return fd_copy(rt, fds[f], p, n, b->b[0].off, b->b[0].owner, in, mapped) ? COOP_EIO : 0;
}

/* DP_DUP: buffers into one buffer at offsets, on the device; every range
 * checked here first, where the arena is. *breach as do_unstage's. */
static int do_dup(coop_rt *rt, uint64_t to, const struct dp_bufs *b, int *breach) {
  if (b->n == 0 || b->n > DP_MAX_BUFS) return COOP_EPROTO;
  uint8_t *d = coop_rt_buf_host(rt, to);
  uint64_t dlen = d ? coop_rt_buf_len(rt, d) : 0;
  *breach = -1;
  for (unsigned i = 0; i < b->n; i++) {
    const uint8_t *s = coop_rt_buf_host(rt, b->b[i].arg);
    uint64_t n = b->b[i].size, at = b->b[i].at;
    if (!d || !s || s == d || n > coop_rt_buf_len(rt, s) || at > dlen || n > dlen - at)
      return COOP_EINVAL;
  }
  for (unsigned i = 0; i < b->n; i++) {
    const uint8_t *s = coop_rt_buf_host(rt, b->b[i].arg);
    int e = coop_rt_arena_dup(rt, d + b->b[i].at, s, b->b[i].size);
    if (e) return e;
    if (coop_rt_buf_check(rt, s) == COOP_EFAULT && *breach < 0) *breach = (int)i;
  }
  return 0;
}

/* 1 if the front wrote the kick eventfd (and takes the count). */
static int kicked(struct child *ch) {
  uint64_t v;
  return ch->kick >= 0 && read(ch->kick, &v, sizeof v) == (ssize_t)sizeof v;
}

/* 1 if a task's state differs from what this process last answered. */
static int changed(struct child *ch, const struct dp_poll_ids *p, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    struct coop_rt_task_info ti;
    if (coop_rt_task_info(ch->rt, p->id[i], &ti)) return 1; /* gone: let the front look */
    if ((unsigned)ti.state + 1u != ch->reported[p->id[i] & 0xffu]) return 1;
  }
  return 0;
}

/* 1 once the task DP_SUBMIT waits for is final (or gone). */
static int ended(struct child *ch, const void *arg) {
  struct coop_rt_task_info ti;
  return coop_rt_task_info(ch->rt, *(const coop_task_id *)arg, &ti) || ti.state >= COOP_TASK_DONE;
}

/* DP_WAIT's condition: a task's state differs from what was answered. */
static int any_changed(struct child *ch, const void *arg) {
  const struct dp_poll_ids *p = arg;
  return changed(ch, p, p->n < DP_POLL_MAX ? p->n : DP_POLL_MAX);
}

/* Inside the front's warm window (dp_set_warm): a GPU's spinning takes no
 * core from its megakernel, so only there (idle_spin_ns, the GPU's
 * sign). */
static int warm(const struct child *ch, const struct dp_req *q) {
  return ch->idle_spin_ns && q->warm_until > coop__now_ns();
}

/* A warm-up from the pages the next frame's copies will read (dp_warm.h),
 * of way `in`, the window's `first` or a later one; else, or with
 * COOP_WARM_RANGES=0 (a benchmark's A/B knob), the runtime's own bytes.
 * Best effort: a failure only leaves the engine cold. */
static void warm_from_ranges(struct child *ch, int in, int first) {
  static int off = -1;
  if (off < 0) off = getenv("COOP_WARM_RANGES") && !strcmp(getenv("COOP_WARM_RANGES"), "0");
  struct dp_warm_read rd[DP_MAX_BUFS];
  unsigned n = off || !xm.arg ? 0 : dp_warm_plan(&ch->warm, &xm, in, first, coop__now_ns(), rd);
  for (unsigned i = 0; i < n; i++) (void)coop_rt_copy_warm_from(ch->rt, rd[i].p, rd[i].bytes);
  if (!n) (void)coop_rt_copy_warm(ch->rt);
}

/* The copy engine kept warm through a warm window (docs/daemon.md,
 * "Spinning"): a frame's first copy, 16 ms after the last frame's, took
 * 65-75 us on an H200 instead of 17-20, unless any copy came up to 300 us
 * before it (bench/RESULTS.md, "A warm copy engine"). So while this
 * process waits in a window, for the next request (next_request) or for
 * a task in flight to end (wait_for: a frame beside a running job), it
 * has the runtime move bytes, from the pages the frame's copies will read
 * where it knows them (warm_from_ranges): at once when the window is new
 * (that first one pays the wake-up, hundreds of microseconds before the
 * frame is due, and reads the ranges whole: 16 us for 272 KB), then
 * whenever DP_COPY_WARM_NS passed without a request or another (a few
 * bytes of each, a few microseconds, which a request that comes meanwhile
 * waits for), until a task is submitted in the window (the frame's,
 * whose input is in by then: one more warm-up would only delay the sight
 * of its end in its wait; its output's copy, 0.3 ms after its input on
 * the H200, found the engine warm without one). Outside a window,
 * nothing: no frame is due. */
#define DP_COPY_WARM_NS 100000L
static void copy_warm(struct child *ch, int64_t now) {
  if (!ch->rt || now >= ch->warm_until || ch->submitted_for == ch->warm_until) return;
  if (ch->warmed_for == ch->warm_until && now - ch->copied_at < DP_COPY_WARM_NS) return;
  int first = ch->warmed_for != ch->warm_until;
  ch->warmed_for = ch->warm_until;
  warm_from_ranges(ch, 1, first);
  ch->copied_at = coop__now_ns();
}

/* DP_WAIT and DP_SUBMIT's wait: completion without timed polling from the
 * front, until done(ch, arg), the kick, or budget ns. The task records are
 * in host memory, so a change is one load away: spin for DP_SPIN_NS (a
 * short task's end is seen within microseconds; only on a GPU, where the
 * spinning takes no core from the megakernel as on PoCL, and only when
 * `spin`: for DP_WAIT, when the front says a short task is in flight),
 * then sleep in ppoll on the kick eventfd, the nap doubling from
 * DP_NAP0_NS to DP_NAP_MAX_NS (a long task costs ~10^4 cheap wakeups a
 * second at most). New work for the front's device thread (a submission,
 * a cancel, a stop) writes the eventfd and ends the wait at once.
 *
 * `due` (CLOCK_MONOTONIC ns; 0: none) is when the task waited for should
 * end (the earliest of them for DP_WAIT), from the last run of its kind
 * (dp_ends.h): a 2 ms frame's end,
 * past the spin, was seen 206 us p50 after it on an H200 (a nap of up to
 * DP_NAP_MAX_NS, then the wake-up of a thread asleep in ppoll), and its
 * output's copy found the copy engine cold again (43 us against 20;
 * bench/RESULTS.md, "The end of a frame's task, expected"). So on a GPU
 * the naps stop DP_END_LEAD_NS before that, the wait spins from there for
 * at most DP_END_SPIN_MAX_NS past it, and, for a frame's task (`warm`), it
 * moves a few bytes there once for the output's copy. */
static void wait_for(struct child *ch, int (*done)(struct child *, const void *), const void *arg,
                     int64_t budget, int spin, int64_t due, int warm) {
  int64_t t0 = coop__now_ns(), end = t0 + budget;
  int64_t near = due && ch->spin_ns ? due - DP_END_LEAD_NS : 0;
  long nap = DP_NAP0_NS;
  for (unsigned spins = 0;; spins++) {
    if (done(ch, arg)) return;
    int64_t now = coop__now_ns();
    if (now >= end) return;
    copy_warm(ch, now);
    int at_end = near && now >= near && now - near < DP_END_LEAD_NS + DP_END_SPIN_MAX_NS;
    if (at_end && warm && ch->rt) {
      warm_from_ranges(ch, 0, 0); /* once: its output's pages */
      warm = 0;
    }
    if ((spin && now - t0 < ch->spin_ns) || at_end) {
      if ((spins & 63u) == 0u && kicked(ch)) return;
      continue;
    }
    if (kicked(ch)) return;
    int64_t left = end - now < nap ? end - now : nap;
    if (near > now && near - now < left) left = near - now; /* awake at the lead */
    struct timespec ts = {0, left};
    struct pollfd pf = {ch->kick, POLLIN, 0};
    if (ch->kick >= 0)
      ppoll(&pf, 1, &ts, NULL);
    else
      nanosleep(&ts, NULL);
    if (nap < DP_NAP_MAX_NS) nap *= 2;
  }
}

/* A one-task job's end, in DP_SUBMIT's reply (the front asked: it needs
 * nothing copied back): the task released, and the guard zones of its
 * device buffers (the args of bits `mask`) checked, as DP_UNSTAGE would. */
/* The first of the device buffers among args[0..nargs) (bits of mask)
 * whose guard zone was overwritten, counting those buffers; -1: none.
 * `peek`: the zones left as found (coop_rt_buf_intact), else armed again
 * (coop_rt_buf_check: a breach is reported once). */
static int guards_breach(coop_rt *rt, const uint64_t *args, unsigned nargs, uint64_t mask,
                         int peek) {
  int breach = -1;
  for (unsigned i = 0, k = 0; i < nargs && i < 64; i++) {
    if (!((mask >> i) & 1u)) continue;
    void *p = coop_rt_buf_host(rt, args[i]);
    int e = p ? peek ? coop_rt_buf_intact(rt, p) : coop_rt_buf_check(rt, p) : 0;
    if (e == COOP_EFAULT && breach < 0) breach = (int)k;
    k++;
  }
  return breach;
}

static void end_task(coop_rt *rt, const struct coop_rt_task_desc *d, uint64_t mask, coop_task_id id,
                     struct dp_rep *r) {
  coop_rt_task_release(rt, id);
  int breach = guards_breach(rt, d->args, d->nargs, mask, 0);
  r->n = DP_ENDED | (uint32_t)(breach + 1) << 8;
}

/* A task the front asked to have ended here, its DP_SUBMIT answered
 * before its end (beside another run its wait is 0): kept, so that the
 * reply that first finds it final ends it here (end_seen), its ranges out
 * copied, rather than the front's DP_READ and DP_UNSTAGE after that
 * reply, two round trips more (docs/daemon.md, "A frame's ranges with its
 * submit"). Not a cooperative task: a SUSPENDED one's record is read after
 * it. */
static void keep_pending(struct child *ch, const struct dp_req *q,
                         const struct coop_rt_task_desc *d, coop_task_id id) {
  struct pend *p = &ch->pend[id & 0xffu];
  p->id = 0;
  if (!q->id || d->cooperative) return;
  p->mask = q->a;
  p->nargs = d->nargs < COOP_RT_MAX_ARGS ? d->nargs : COOP_RT_MAX_ARGS;
  memcpy(p->args, d->args, p->nargs * sizeof *p->args);
  p->nout = 0;
  if (q->op == DP_SUBMIT_IO) {
    const struct dp_submit_io *io = &q->u.sio;
    p->dev = io->dev;
    p->ino = io->ino;
    for (uint32_t i = 0; i < io->n && i < DP_MAX_BUFS; i++)
      if (io->b[i].out) {
        if (p->nout == COOP_RT_IO_MAX) return; /* more than submit_io takes: not kept */
        p->out[p->nout++] = io->b[i];
      }
  }
  p->id = id;
}

/* Task id, final as ti says: ended here if it was kept for that (its ranges
 * out copied if it ended DONE, the task released). 1 when ended; 0 when
 * not, or left to the front: a guard zone overwritten (DP_UNSTAGE says
 * which) or a copy that failed (DP_READ says why). */
static int end_seen(struct child *ch, coop_task_id id, const struct coop_rt_task_info *ti) {
  struct pend *p = &ch->pend[id & 0xffu];
  if (p->id != id || ti->state < COOP_TASK_DONE || ti->state == COOP_TASK_SUSPENDED) return 0;
  p->id = 0;
  if (guards_breach(ch->rt, p->args, p->nargs, p->mask, 1) >= 0) return 0; /* DP_UNSTAGE's */
  int e = 0;
  for (unsigned i = 0; ti->state == COOP_TASK_DONE && i < p->nout && !e; i++) {
    uint8_t *b = buf_range(ch->rt, &p->out[i]), *m = file_range(p->dev, p->ino, &p->out[i]);
    e = b && m ? coop_rt_arena_copy(ch->rt, m, b, p->out[i].size, 0) : COOP_EINVAL;
  }
  if (e) return 0; /* DP_READ's, which maps the file again or says why */
  coop_rt_task_release(ch->rt, id);
  return 1;
}

/* DP_SUBMIT and DP_SUBMIT_IO, the task submitted: its end waited for (q->b
 * ns at most), its info in the reply; once it ended DONE, the ranges out
 * (DP_SUBMIT_IO) copied; with q->id, once ended, the task ended here
 * (end_task). */
static void submitted(struct child *ch, const struct dp_req *q, const struct coop_rt_task_desc *d,
                      coop_task_id id, const struct coop_rt_io *out, unsigned nout,
                      struct dp_rep *r) {
  coop_rt *rt = ch->rt;
  dp_ends_submitted(&ch->ends, id, d->kernel, d->groups, coop__now_ns(), warm(ch, q));
  int frame;
  int64_t due = dp_ends_due(&ch->ends, &id, 1, &frame);
  if (q->b) wait_for(ch, ended, &id, q->b < 1000000000u ? (int64_t)q->b : 0, 1, due, frame);
  int64_t seen = coop__now_ns();
  coop_rt_refit(rt);                              /* as DP_POLL: the times below use the fit */
  if (coop_rt_task_info(rt, id, &r->u.info) == 0) /* the front caches it */
    ch->reported[id & 0xffu] = (uint8_t)(r->u.info.state + 1);
  int64_t after = seen - r->u.info.t_submitted;
  if (q->b && r->u.info.state >= COOP_TASK_DONE && after > 0 && after < UINT32_MAX)
    r->seen_after = (uint32_t)after;
  dp_ends_seen(&ch->ends, id, &r->u.info);
  /* only a DONE task's output, as DP_READ after it (PROTOCOL.md); a copy
   * that fails is left to the front's DP_READ, which says why */
  if (nout && r->u.info.state == COOP_TASK_DONE) {
    int e = 0;
    for (unsigned i = 0; i < nout && !e; i++)
      e = coop_rt_arena_copy(rt, out[i].host, out[i].arena, out[i].bytes, 0);
    if (!e) r->n |= DP_IO_OUT;
  }
  if (q->id && r->u.info.state >= COOP_TASK_DONE) {
    uint32_t io = r->n & DP_IO_OUT;
    end_task(rt, d, q->a, id, r);
    r->n |= io;
  } else {
    keep_pending(ch, q, d, id);
  }
}

/* DP_SUBMIT_IO: the ranges, each checked against its buffer here (where
 * the arena is) and found in the file's mapping; the ranges in ordered
 * before the task (coop_rt_submit_io), the ranges out copied by
 * `submitted` once it ended DONE. The file not mapped here: nothing
 * submitted, DP_IO_UNMAPPED (the front moves the ranges itself). */
static void submit_io(struct child *ch, const struct dp_req *q, struct dp_rep *r) {
  const struct dp_submit_io *s = &q->u.sio;
  coop_rt *rt = ch->rt;
  struct coop_rt_io in[COOP_RT_IO_MAX], out[COOP_RT_IO_MAX];
  unsigned nin = 0, nout = 0;
  for (uint32_t i = 0; i < s->n; i++) {
    const struct dp_buf_entry *e = &s->b[i];
    uint8_t *p = buf_range(rt, e);
    if (!p) {
      r->err = COOP_EINVAL;
      return;
    }
    uint8_t *m = file_range(s->dev, s->ino, e);
    if (!m || (e->in && nin == COOP_RT_IO_MAX) || (e->out && nout == COOP_RT_IO_MAX)) {
      memset(&r->u.info, 0, sizeof r->u.info);
      r->n = DP_IO_UNMAPPED;
      return;
    }
    if (e->in) in[nin++] = (struct coop_rt_io){m, p, e->size};
    if (e->out) out[nout++] = (struct coop_rt_io){m, p, e->size};
  }
  dp_warm_note(&ch->warm, s->dev, s->ino, s->b, s->n);
  coop_task_id id = 0;
  r->err = coop_rt_submit_io(rt, &s->desc, in, nin, NULL, 0, &id);
  r->a = id;
  if (!r->err) submitted(ch, q, &s->desc, id, out, nout, r);
}

/* DP_POLL and DP_WAIT's reply: every task's info, noted as answered. */
static void poll_reply(struct child *ch, const struct dp_poll_ids *p, unsigned n,
                       struct dp_rep *r) {
  struct coop_rt_task_info *ti = r->u.infos;
  r->a = 0; /* bit i: task i ended here (end_seen) */
  for (unsigned i = 0; i < n; i++) {
    if (coop_rt_task_info(ch->rt, p->id[i], &ti[i])) memset(&ti[i], 0, sizeof ti[i]);
    ch->reported[p->id[i] & 0xffu] = (uint8_t)(ti[i].state + 1);
    dp_ends_seen(&ch->ends, p->id[i], &ti[i]);
    if (i < 64 && end_seen(ch, p->id[i], &ti[i])) r->a |= 1ull << i;
  }
  r->n = n;
}

/* DP_WIDTH's reply: the merged megakernel's width (not measured where
 * this process only measures widths: nothing was built), then, when
 * asked, each kernel's alone. A lone build that fails is a width not
 * measured, never an error. */
static int widths_reply(coop_rt *rt, int lone, struct dp_rep *r) {
  struct coop_rt_width *w = r->u.widths;
  int e = coop_rt_kernel_width(rt, -1, &w[0]);
  if (e == COOP_ESTATE) {
    memset(&w[0], 0, sizeof w[0]);
    snprintf(w[0].note, sizeof w[0].note, "not built here");
  } else if (e) {
    return e;
  }
  r->n = 1;
  for (int i = 0; lone && r->n < DP_WIDTHS_MAX; i++) {
    e = coop_rt_kernel_width(rt, i, &w[r->n]);
    if (e == COOP_EINVAL) break; /* past the last kernel */
    if (e) return e;
    r->n++;
  }
  return 0;
}

/* DP_LAUNCH's and DP_UNPARK's reply: the runtime's message on error,
 * else the device's info. */
static void started(coop_rt *rt, int err, struct dp_rep *r) {
  r->err = err;
  if (err)
    snprintf(r->u.text, sizeof r->u.text, "%s", coop_rt_errmsg(rt));
  else
    devinfo(rt, &r->u.dev);
}

/* ---- rebuilding in place (coop_rt_next_*, docs/daemon.md "Kernel reload") */

static coop_rt *next_rt; /* the runtime the build thread builds for (the child's one) */

static void *next_main(void *arg) {
  struct child *ch = arg;
  ch->next_err = coop_rt_next_build(next_rt, ch->next);
  atomic_store_explicit(&ch->next_done, 1, memory_order_release);
  return NULL;
}

/* The build thread's end, once (it has ended or is waited for). */
static void next_join(struct child *ch) {
  if (!ch->next || ch->next_joined) return;
  pthread_join(ch->next_th, NULL);
  ch->next_joined = 1;
}

static void next_drop(struct child *ch) {
  next_join(ch);
  coop_rt_next_free(ch->rt, ch->next);
  ch->next = NULL;
}

/* DP_NEXT_BUILD: the kernels read here, the build on a thread of its own,
 * so that this process answers on (the running megakernel's jobs). */
static int next_build(struct child *ch, uint32_t nkernels, int sfd, struct dp_rep *r) {
  if (ch->next) return COOP_ESTATE;
  int e = coop_rt_next_open(ch->rt, &ch->next);
  if (e == 0) e = read_kernels(sfd, nkernels, add_to_next, ch->next);
  ch->next_err = 0;
  ch->next_joined = 0;
  atomic_store(&ch->next_done, 0);
  next_rt = ch->rt;
  if (e == 0 && pthread_create(&ch->next_th, NULL, next_main, ch)) e = COOP_ENOMEM;
  if (e) {
    snprintf(r->u.text, sizeof r->u.text, "%s",
             ch->next ? coop_rt_next_errmsg(ch->next) : "the next build could not start");
    ch->next_joined = 1; /* no thread */
    next_drop(ch);
  }
  return e;
}

/* DP_NEXT_POLL: rep.n 1 once built, 0 while building; the build's error. */
static int next_poll(struct child *ch, struct dp_rep *r) {
  if (!ch->next) return COOP_ESTATE;
  if (!atomic_load_explicit(&ch->next_done, memory_order_acquire)) return 0;
  next_join(ch);
  if (ch->next_err) {
    snprintf(r->u.text, sizeof r->u.text, "%s", coop_rt_next_errmsg(ch->next));
    return ch->next_err;
  }
  r->n = 1;
  return 0;
}

/* DP_NEXT_SWAP: the megakernel parked (unless it is), the built set swapped
 * in, and launched: what LAUNCH answers. A swap refused (a task record in
 * use) relaunches the old program and says why. */
static void next_swap(struct child *ch, struct dp_rep *r) {
  coop_rt *rt = ch->rt;
  if (!ch->next || !atomic_load_explicit(&ch->next_done, memory_order_acquire) || ch->next_err) {
    r->err = COOP_ESTATE;
    snprintf(r->u.text, sizeof r->u.text, "no next kernel set built");
    return;
  }
  next_join(ch);
  int e = coop_rt_parked(rt) ? 0 : coop_rt_park(rt);
  if (e) {
    r->err = e;
    snprintf(r->u.text, sizeof r->u.text, "the megakernel could not be parked: %s",
             coop_rt_errmsg(rt));
    return;
  }
  xmap_clear(&xm); /* the megakernel has left: unpinning waits for nothing */
  e = coop_rt_next_swap(rt, ch->next);
  if (e == 0) {
    ch->next = NULL; /* the runtime's now */
    started(rt, coop_rt_unpark(rt), r);
    return;
  }
  int back = coop_rt_unpark(rt);
  r->err = e;
  snprintf(r->u.text, sizeof r->u.text, "the swap was refused (%s); the old megakernel %s",
           coop_strerror(e), back ? "did not relaunch" : "runs again");
}

/* Tests only: COOP_TEST_DIE_AT="OP:N:PATH" kills this process (SIGKILL,
 * as a crash would) as its Nth request of op OP (its name in dp_ops)
 * arrives once the file PATH.arm exists (the test makes it when the job it
 * watches is where it wants it), once over every device process of the
 * test: the death creates PATH, and none comes while PATH exists.
 * tests/test_daemon_suspend.c kills it so in the middle of a checkpoint.
 * With OP written "~OP" it does not die but garbles its next reply through
 * the shared channel (a length past the reply, as a corrupted device
 * process might write); written "!OP", each reply to OP through the
 * shared channel after that comes 3 ms late (the child's own wake late),
 * and the first that finds the front asleep goes without its doorbell, as
 * if the front's wake came very late too, and creates PATH:
 * test_daemon_faults.c. */
static int garble_next;
static uint32_t bell_drop_op; /* "!OP": OP's number; 0: none */
static char test_path[256];   /* PATH */

/* PATH created, and 1, unless it exists: an earlier device process of the
 * test took the fault already. */
static int test_path_made(void) {
  int fd = open(test_path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

static void test_die_at(uint32_t op) {
  static int armed = -1;
  static unsigned left;
  static char name[16], arm[272];
  if (armed < 0) {
    const char *v = getenv("COOP_TEST_DIE_AT");
    armed = v && sscanf(v, "%15[^:]:%u:%255s", name, &left, test_path) == 3 && left > 0;
    snprintf(arm, sizeof arm, "%s.arm", test_path);
  }
  const struct dp_op_entry *e = armed ? dp_op_entry(op) : NULL;
  int garble = name[0] == '~', drop = name[0] == '!';
  if (!e || strcmp(e->name, name + (garble || drop)) || access(arm, F_OK) || --left) return;
  armed = 0;
  if (drop) { /* PATH made where the doorbell is dropped (bell_dropped) */
    bell_drop_op = op;
    return;
  }
  if (!test_path_made()) return;
  if (garble)
    garble_next = 1;
  else
    kill(getpid(), SIGKILL);
}

/* test_die_at's "!OP": a reply to op held 3 ms before it is written. */
static void bell_drop_delay(uint32_t op) {
  if (!bell_drop_op || op != bell_drop_op) return;
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
}

/* test_die_at's "!OP": whether this reply to op, which would ring the
 * front, goes without its doorbell (once over every device process of the
 * test, as a death). */
static int bell_dropped(uint32_t op) {
  if (!bell_drop_op || op != bell_drop_op) return 0;
  bell_drop_op = 0;
  return test_path_made();
}

/* One well-formed request (dp_req_check): its answer in r, whose body
 * dp_rep_len sizes from the op's entry. */
static void serve(struct child *ch, const struct dp_req *q, const int *fds, unsigned nfds,
                  struct dp_rep *r) {
  int rfd = nfds ? fds[0] : -1;
  coop_rt *rt = ch->rt;
  r->err = 0;
  test_die_at(q->op);
  if (q->op == DP_SHM) { /* the device need not be open */
    dp_shm_unmap(ch->shm);
    ch->shm = dp_shm_map(rfd);
    if (ch->shm) ch->shm_seen = atomic_load(&ch->shm->req_seq); /* nothing is in it yet */
    r->n = ch->shm != NULL;
    return;
  }
  if (!rt && q->op != DP_OPEN && q->op != DP_CLOSE) {
    r->err = COOP_ESTATE;
    return;
  }
  if (share_op(rt, q, r)) return;
  switch (q->op) {
    case DP_OPEN:
      r->err = rt || rfd < 0 ? COOP_ESTATE : do_open(ch, q, rfd, r);
      return;
    case DP_LAUNCH:
      started(rt, coop_rt_launch(rt), r);
      return;
    case DP_WIDTH:
      r->err = widths_reply(rt, q->a != 0, r);
      return;
    case DP_PARK: {
      /* tests only: a megakernel slow to leave (a loaded CPU device) */
      const char *delay = getenv("COOP_TEST_PARK_DELAY_MS");
      if (delay) {
        long ms = strtol(delay, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        if (ms > 0) nanosleep(&ts, NULL);
      }
      r->err = coop_rt_park(rt);
      if (r->err == 0) xmap_clear(&xm); /* the megakernel has left: unpinning waits for nothing */
      return;
    }
    case DP_UNPARK:
      started(rt, coop_rt_unpark(rt), r);
      return;
    case DP_NEXT_BUILD:
      r->err =
          rfd < 0 || q->a > COOP_MAX_KERNELS ? COOP_EINVAL : next_build(ch, (uint32_t)q->a, rfd, r);
      return;
    case DP_NEXT_POLL:
      r->err = next_poll(ch, r);
      return;
    case DP_NEXT_SWAP:
      next_swap(ch, r);
      return;
    case DP_NEXT_DROP:
      next_drop(ch);
      return;
    case DP_SUBMIT: {
      coop_task_id id = 0;
      r->err = coop_rt_submit(rt, &q->u.desc, &id);
      r->a = id;
      if (!r->err) submitted(ch, q, &q->u.desc, id, NULL, 0, r);
      return;
    }
    case DP_SUBMIT_IO:
      submit_io(ch, q, r);
      return;
    case DP_INFO:
      r->err = coop_rt_task_info(rt, q->id, &r->u.info);
      return;
    case DP_LIVE:
      r->err = coop_rt_task_live(rt, q->id, &r->u.live);
      return;
    case DP_CANCEL:
      r->err = coop_rt_cancel(rt, q->id);
      return;
    case DP_CAP:
      r->err = coop_rt_cap(rt, q->id, q->a > UINT32_MAX ? 0 : (unsigned)q->a);
      return;
    case DP_SUSPEND:
      r->err = coop_rt_suspend(rt, q->id);
      return;
    case DP_SAVED:
    case DP_RESUME:
      r->err = nfds == 1 ? saved_state(rt, q, fds[0], r) : COOP_EINVAL;
      return;
    case DP_RELEASE:
      r->err = coop_rt_task_release(rt, q->id);
      return;
    case DP_VIEW: {
      unsigned n = q->a < COOP_WIRE_MAX_WG ? (unsigned)q->a : COOP_WIRE_MAX_WG;
      static coop_task_id owner[COOP_WIRE_MAX_WG];
      static uint8_t resv[COOP_WIRE_MAX_WG];
      int got = coop_rt_view(rt, owner, resv, n);
      if (got < 0) {
        r->err = got;
        return;
      }
      r->n = (uint32_t)got;
      memcpy(r->u.view, owner, (size_t)got * sizeof owner[0]);
      memcpy(r->u.view + (size_t)got * sizeof owner[0], resv, (size_t)got);
      return;
    }
    case DP_POLL:
    case DP_WAIT: {
      unsigned n = q->u.poll.n; /* at most DP_POLL_MAX: dp_req_check */
      coop_rt_refit(rt);        /* at most once a second; the times below use it */
      int frame;
      int64_t due = dp_ends_due(&ch->ends, q->u.poll.id, n, &frame);
      if (q->op == DP_WAIT)
        wait_for(ch, any_changed, &q->u.poll, q->a < 1000000000u ? (int64_t)q->a : 0,
                 q->b != 0 || warm(ch, q), due, frame);
      poll_reply(ch, &q->u.poll, n, r);
      return;
    }
    case DP_KICKFD:
      if (rfd < 0) {
        r->err = COOP_EINVAL;
        return;
      }
      if (ch->kick >= 0) close(ch->kick);
      ch->kick = dup(rfd); /* the request's own copy is closed after it */
      ch->idle_spin_ns = q->a < 1000000000u ? (int64_t)q->a : 0;
      ch->spin_ns = dp_backend_spins(coop_rt_backend(rt)) ? DP_SPIN_NS : 0;
      return;
    case DP_STAGE:
      r->err = do_stage(rt, &q->u.bufs, fds, nfds, r->u.args);
      if (r->err == 0) r->n = q->u.bufs.n; /* one arg per buffer */
      return;
    case DP_WRITE:
    case DP_READ:
      r->err = do_copy(rt, q, fds, nfds, q->op == DP_WRITE, &r->n);
      return;
    case DP_DUP: {
      int breach = -1;
      r->err = do_dup(rt, q->a, &q->u.bufs, &breach);
      r->n = (uint32_t)(breach + 1);
      return;
    }
    case DP_UNSTAGE: {
      int breach = -1;
      if (q->id) coop_rt_task_release(rt, q->id); /* the front's dp_unstage, release */
      r->err = do_unstage(rt, &q->u.bufs, fds, nfds, &breach);
      r->n = (uint32_t)(breach + 1);
      return;
    }
    default:
      r->err = COOP_EPROTO;
      return;
  }
}

/* The front process decides when this one ends: not the terminal's or
 * systemd's signals (sent to the whole group), and never later than the
 * front itself. Set again after the runtime's start: the OpenCL compiler
 * (LLVM) installs handlers of its own for these when it first runs. */
static void quiet_signals(void) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
}

/* A new request in the shared channel, copied into q (devproc_shm.h): its
 * length, or 0 when there is none. */
static ssize_t shm_take(struct child *ch, struct dp_req *q, int *cut) {
  if (!ch->shm) return 0;
  /* seq_cst, not only acquire: before sleeping this load is one side of
   * the Dekker pair (devproc_shm.h); on x86 the same plain load */
  unsigned s = atomic_load(&ch->shm->req_seq);
  if (s == ch->shm_seen) return 0;
  ch->shm_seen = s;
  uint32_t n = atomic_load_explicit(&ch->shm->req_len, memory_order_relaxed);
  *cut = dp_shm_copy(q, sizeof *q, &ch->shm->req, n) != 0; /* refused as too long */
  return *cut ? (ssize_t)sizeof *q : (ssize_t)n;
}

/* A warm window the front told without a request (dp_wake; devproc_shm.h):
 * the spin's new end (dp_shm_window), spin_end where none is new and
 * open. Its end becomes the window the copy engine is kept warm for
 * (copy_warm), as a request's would. */
static int64_t shm_window(struct child *ch, int64_t spin_end) {
  if (!ch->shm || !ch->idle_spin_ns) return spin_end;
  int64_t until = (int64_t)atomic_load(&ch->shm->warm_until);
  int64_t told = ch->told_until;
  spin_end = dp_shm_window(until, &ch->told_until, coop__now_ns(), spin_end, DP_WARM_MAX_NS);
  if (ch->told_until != told) ch->warm_until = until;
  return spin_end;
}

/* A doorbell read where a request was due: look at the shared channel again. */
static int doorbell(ssize_t n, int *fds, unsigned *nfds) {
  if (n != DP_DOORBELL_LEN) return 0;
  for (unsigned i = 0; i < *nfds; i++) close(fds[i]);
  *nfds = 0;
  return 1;
}

/* The next request. For idle_spin_ns after the last reply the shared
 * channel is watched without sleeping (and every 16th look the socket,
 * which carries only requests with descriptors): a job's request comes
 * within tens of microseconds of the last one's reply when a client
 * submits one after another, and recvmsg woken from sleep costs several
 * of them (the trace's "the request reaching the runtime";
 * bench/RESULTS.md). Then it sleeps on the socket, where the front rings
 * it (devproc_shm.h). *via_shm: the request came through the channel, and
 * so goes its reply. */
static ssize_t next_request(struct child *ch, int fd, struct dp_req *q, int *fds, unsigned *nfds,
                            int *cut, int64_t spin_end, int *via_shm) {
  *nfds = 0;
  *cut = 0;
  for (;;) {
    for (unsigned i = 0; spin_end; i++) {
      int64_t now = coop__now_ns();
      if (now >= spin_end) break;
      ssize_t n = shm_take(ch, q, cut);
      if (n) return *via_shm = 1, n;
      copy_warm(ch, now);
      if (i % 16u) continue; /* the socket only carries requests with descriptors */
      spin_end = shm_window(ch, spin_end);
      n = dp_recv(fd, q, sizeof *q, MSG_DONTWAIT, fds, nfds, cut);
      if (doorbell(n, fds, nfds)) continue;
      if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return n;
    }
    for (;;) {
      if (ch->shm) atomic_store(&ch->shm->child_asleep, 1); /* seq_cst: then req_seq, warm_until */
      ssize_t n = shm_take(ch, q, cut);
      if (n)
        *via_shm = 1;
      else if ((spin_end = shm_window(ch, 0)) == 0)
        n = dp_recv(fd, q, sizeof *q, 0, fds, nfds, cut);
      if (ch->shm) atomic_store(&ch->shm->child_asleep, 0);
      if (spin_end && !*via_shm) break; /* a window told: spin in it */
      if (*via_shm || !doorbell(n, fds, nfds)) return n;
    }
  }
}

/* The reply r of len bytes to a request from the shared channel; the front is
 * rung if it went to sleep on the socket (the Dekker pair). */
static void shm_reply(struct child *ch, int fd, const struct dp_rep *r, size_t len) {
  bell_drop_delay(r->op);
  memcpy(&ch->shm->rep, r, len);
  if (garble_next) /* test_die_at */
    garble_next = 0, len = sizeof *r + 1;
  atomic_store_explicit(&ch->shm->rep_len, (unsigned)len, memory_order_relaxed);
  atomic_store(&ch->shm->rep_seq, ch->shm_seen); /* seq_cst: then front_asleep */
  if (atomic_load(&ch->shm->front_asleep) && !bell_dropped(r->op)) dp_shm_ring(fd);
}

int dp_child_main(int fd) {
  quiet_signals();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_NAME, "coopd-device");
  /* its naps end when asked, not up to the default 50 us later (the
   * kernel's timer slack): a task's end is seen after the nap it fell in
   * (wait_for) */
  prctl(PR_SET_TIMERSLACK, 1000UL);
  if (fd != 3 && dup2(fd, 3) == 3) fd = 3;
  close_range(4, ~0u, 0);
  childlog_start();             /* the libraries' own lines, prefixed for the journal */
  if (getppid() == 1) return 1; /* the front died before the prctl */
  static struct child ch = {.kick = -1};
  static struct dp_req q;
  static struct dp_rep r;
  int64_t spin_end = 0;
  for (;;) {
    int fds[DP_MAX_FDS];
    unsigned nfds;
    int cut;
    int via_shm = 0;
    q.op = 0; /* a message too short to hold one names none */
    ssize_t n = next_request(&ch, fd, &q, fds, &nfds, &cut, spin_end, &via_shm);
    if (n <= 0) break; /* the front closed its end: exit */
    memset(&r, 0, DP_REP_HDR);
    r.t_took = ch.copied_at = coop__now_ns();
    ch.warm_until = q.warm_until;
    r.op = q.op;
    r.u.text[0] = '\0';
    const char *why = "longer than any request, or too many descriptors";
    int bad = cut ? COOP_EPROTO : dp_req_check(&q, (size_t)n, nfds, &why);
    if (bad) {
      /* refused before any of its fields is read: answered, and said */
      r.err = bad;
      if (bad == COOP_EVERSION) another_build(&r);
      fprintf(stderr, "refused a request (op %u, %zd bytes, %u descriptors): %s\n", q.op, n, nfds,
              why);
    } else if (q.op == DP_CLOSE) {
      /* not unpinned first: that waits for the device, which the running
       * megakernel keeps busy (xmap.h); the closed runtime's context
       * takes its registrations with it */
      next_drop(&ch); /* a build in flight ends first: it reads the runtime */
      r.err = ch.rt ? coop_rt_close(ch.rt) : 0;
      ch.rt = NULL;
      bounce_buf = NULL; /* closed with it */
      xmap_forget(&xm);
      xmap_init(&xm, NULL, NULL, NULL);
    } else {
      /* before its serve: the submit's own wait for its task warms nothing */
      if (q.op == DP_SUBMIT) /* the window's task, its input copied before (copy_warm) */
        ch.submitted_for = ch.warm_until;
      serve(&ch, &q, fds, nfds, &r);
      if (q.op == DP_OPEN || q.op == DP_LAUNCH) quiet_signals();
    }
    for (unsigned i = 0; i < nfds; i++) close(fds[i]);
    if (r.err) r.u.text[DP_TEXT_MAX - 1] = '\0';
    size_t len = dp_rep_len(&r);
    if (!len) { /* a count its entry does not allow: a fault here, said as one */
      r.err = COOP_EPROTO;
      r.u.text[0] = '\0';
      len = DP_REP_HDR;
    }
    r.t_replied = coop__now_ns();
    if (via_shm)
      shm_reply(&ch, fd, &r, len);
    else
      dp_send(fd, &r, len, NULL, 0);
    if (q.op == DP_CLOSE && !bad) return 0;
    spin_end = ch.idle_spin_ns ? coop__now_ns() + ch.idle_spin_ns : 0;
    /* the warm window, at most DP_WARM_MAX_NS ahead: a wild stamp cannot
     * keep this process spinning */
    if (spin_end && q.warm_until > spin_end)
      spin_end =
          q.warm_until - spin_end < DP_WARM_MAX_NS ? q.warm_until : spin_end + DP_WARM_MAX_NS;
  }
  next_drop(&ch);
  if (ch.rt) coop_rt_close(ch.rt);
  xmap_forget(&xm);
  return 0;
}
