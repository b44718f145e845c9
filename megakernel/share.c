/*
 * share.c: memory of the device that two processes on it both reach
 * (coop_rt_share_*, coop_rt.h). A kernel reload carries a suspended job's
 * buffers from the old device process to the new one through a share,
 * copied on the device both ways (docs/daemon.md, "Kernel reload").
 *
 * Two kinds. Where the backend has device memory with an inter-process
 * handle (CUDA: cuMemAlloc and cuIpcGetMemHandle), its share_* ops. Where
 * the arena is host memory (OpenCL's fine-grained SVM), a memfd mapped in
 * both, which the other process opens as /proc/PID/fd/FD: the same user's
 * processes may, and a failure there leaves the caller its other way
 * (the bytes through a descriptor coopd passes).
 *
 * The table rt->shares bounds what one runtime holds and lets
 * coop_rt_share_copy check both ranges: the device process is told
 * addresses by coopd, and trusts them no further than an argument.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

static struct coop__share *free_slot(coop_rt *rt) {
  for (unsigned i = 0; i < COOP_RT_SHARES; i++)
    if (!rt->shares[i].p) return &rt->shares[i];
  return NULL;
}

/* The share holding [p, p + n), or NULL. */
static struct coop__share *holding(coop_rt *rt, const void *p, size_t n) {
  const uint8_t *b = p;
  for (unsigned i = 0; i < COOP_RT_SHARES; i++) {
    struct coop__share *s = &rt->shares[i];
    if (s->p && b >= s->p && (size_t)(b - s->p) <= s->n && n <= s->n - (size_t)(b - s->p)) return s;
  }
  return NULL;
}

static void *map_fd(int fd, size_t n) {
  void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? NULL : m;
}

static int host_alloc(size_t n, struct coop__share *s) {
  int fd = memfd_create("coop-share", MFD_CLOEXEC);
  if (fd < 0) return COOP_ENOMEM;
  void *m = ftruncate(fd, (off_t)n) == 0 ? map_fd(fd, n) : NULL;
  if (!m) {
    close(fd);
    return COOP_ENOMEM;
  }
  s->p = m;
  s->fd = fd;
  return 0;
}

static int host_open(const struct coop_rt_share *h, struct coop__share *s) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h->pid, (int)h->fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return COOP_EPERM;
  struct stat st;
  void *m = fstat(fd, &st) == 0 && (uint64_t)st.st_size >= h->bytes ? map_fd(fd, h->bytes) : NULL;
  if (!m) {
    close(fd);
    return COOP_EINVAL; /* not the memfd the handle names */
  }
  s->p = m;
  s->fd = fd;
  return 0;
}

int coop_rt_share_alloc(coop_rt *rt, size_t n, struct coop_rt_share *h, void **p) {
  if (!rt || !rt->be || !h || !p || n == 0) return COOP_EINVAL;
  memset(h, 0, sizeof *h);
  struct coop__share *s = free_slot(rt);
  if (!s) return COOP_ENOMEM;
  int e;
  if (rt->ops->share_alloc) {
    void *d = NULL;
    e = rt->ops->share_alloc(rt, n, &d, h->ipc);
    s->p = e ? NULL : d;
    s->fd = -1;
  } else {
    e = host_alloc(n, s);
    h->pid = (int32_t)getpid();
    h->fd = s->fd;
  }
  if (e) return e;
  s->n = n;
  s->opened = 0;
  h->bytes = n;
  *p = s->p;
  return 0;
}

int coop_rt_share_open(coop_rt *rt, const struct coop_rt_share *h, void **p) {
  if (!rt || !rt->be || !h || !p || h->bytes == 0) return COOP_EINVAL;
  struct coop__share *s = free_slot(rt);
  if (!s) return COOP_ENOMEM;
  int e;
  if (rt->ops->share_open) {
    void *d = NULL;
    e = rt->ops->share_open(rt, h->ipc, &d);
    s->p = e ? NULL : d;
    s->fd = -1;
  } else {
    e = host_open(h, s);
  }
  if (e) return e;
  s->n = (size_t)h->bytes;
  s->opened = 1;
  *p = s->p;
  return 0;
}

int coop_rt_share_copy(coop_rt *rt, void *dst, const void *src, size_t n) {
  if (!rt || !dst || !src) return COOP_EINVAL;
  if (n == 0) return 0;
  int out = holding(rt, dst, n) && coop__arena_has(rt, src, n);
  if (!out && !(holding(rt, src, n) && coop__arena_has(rt, dst, n))) return COOP_EINVAL;
  if (rt->ops->share_copy) return rt->ops->share_copy(rt, dst, src, n, !out);
  memcpy(dst, src, n); /* the host kind: both are host memory */
  return 0;
}

static void release(coop_rt *rt, struct coop__share *s) {
  if (rt->ops->share_release)
    rt->ops->share_release(rt, s->p, s->opened);
  else
    munmap(s->p, s->n);
  if (s->fd >= 0) close(s->fd);
  memset(s, 0, sizeof *s);
}

int coop_rt_share_free(coop_rt *rt, void *p) {
  if (!rt || !p) return COOP_EINVAL;
  struct coop__share *s = holding(rt, p, 0);
  if (!s || s->p != p) return COOP_EINVAL;
  /* cuMemFree and cuIpcCloseMemHandle wait for the device, which the
   * running megakernel never leaves idle */
  int running = rt->launched && !rt->exited && !rt->parked;
  if (rt->ops->share_release && running) return COOP_ESTATE;
  release(rt, s);
  return 0;
}

void coop__shares_fini(coop_rt *rt) {
  for (unsigned i = 0; i < COOP_RT_SHARES; i++)
    if (rt->shares[i].p) release(rt, &rt->shares[i]);
}
