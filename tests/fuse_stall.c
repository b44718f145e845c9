/*
 * fuse_stall.c: see fuse_stall.h. The kernel's FUSE protocol
 * (linux/fuse.h), the few requests a lookup, an open, fstat and reads
 * make; no libfuse. Attributes and entries are never cached (valid 0
 * s), so that each fstat asks.
 */
#define _GNU_SOURCE
#include "fuse_stall.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct fuse_stall {
  int fd;
  size_t size;
  char dir[64], path[80];
  pid_t server;
  _Atomic int64_t until_ns; /* no answer before this (CLOCK_MONOTONIC) */
  atomic_int flush;         /* FLUSH and RELEASE wait too */
  atomic_uint requests;
};

static void answer(struct fuse_stall *f, uint64_t unique, int error, const void *body, size_t n) {
  struct fuse_out_header h = {.len = (uint32_t)(sizeof h + n), .error = error, .unique = unique};
  uint8_t buf[sizeof h + 65536];
  if (n > 65536) n = 65536, h.len = (uint32_t)(sizeof h + n);
  memcpy(buf, &h, sizeof h);
  if (n) memcpy(buf + sizeof h, body, n);
  if (write(f->fd, buf, h.len) < 0) return; /* the connection went */
}

static void attr_of(const struct fuse_stall *f, uint64_t node, struct fuse_attr *a) {
  memset(a, 0, sizeof *a);
  a->ino = node;
  a->nlink = 1;
  a->blksize = 4096;
  if (node == FUSE_ROOT_ID) {
    a->mode = S_IFDIR | 0755;
  } else {
    a->mode = S_IFREG | 0644;
    a->size = f->size;
    a->blocks = (f->size + 511) / 512;
  }
}

static void serve(struct fuse_stall *f, const struct fuse_in_header *in, const uint8_t *arg) {
  switch (in->opcode) {
    case FUSE_INIT: {
      const struct fuse_init_in *i = (const void *)arg;
      struct fuse_init_out o = {
          .major = FUSE_KERNEL_VERSION,
          .minor = i->minor < FUSE_KERNEL_MINOR_VERSION ? i->minor : FUSE_KERNEL_MINOR_VERSION,
          .max_readahead = i->max_readahead,
          .max_background = 16,
          .congestion_threshold = 12,
          .max_write = 65536,
          .time_gran = 1};
      return answer(f, in->unique, 0, &o, sizeof o);
    }
    case FUSE_LOOKUP: {
      if (in->nodeid != FUSE_ROOT_ID || strcmp((const char *)arg, "f"))
        return answer(f, in->unique, -ENOENT, NULL, 0);
      struct fuse_entry_out e = {.nodeid = 2, .generation = 1};
      attr_of(f, 2, &e.attr);
      return answer(f, in->unique, 0, &e, sizeof e);
    }
    case FUSE_GETATTR: {
      struct fuse_attr_out a = {0};
      attr_of(f, in->nodeid, &a.attr);
      return answer(f, in->unique, 0, &a, sizeof a);
    }
    case FUSE_OPEN: {
      struct fuse_open_out o = {.fh = 1, .open_flags = FOPEN_DIRECT_IO};
      return answer(f, in->unique, 0, &o, sizeof o);
    }
    case FUSE_READ: {
      const struct fuse_read_in *r = (const void *)arg;
      static uint8_t data[65536];
      size_t n = r->offset >= f->size ? 0 : f->size - r->offset;
      if (n > r->size) n = r->size;
      if (n > sizeof data) n = sizeof data;
      for (size_t k = 0; k < n; k++) data[k] = (uint8_t)(r->offset + k);
      return answer(f, in->unique, 0, data, n);
    }
    case FUSE_FLUSH:
    case FUSE_RELEASE:
    case FUSE_DESTROY:
      return answer(f, in->unique, 0, NULL, 0);
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
      return; /* no answer */
    default:
      return answer(f, in->unique, -ENOSYS, NULL, 0);
  }
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void serve_main(struct fuse_stall *f) {
  size_t cap = 1u << 20;
  uint8_t *buf = malloc(cap);
  for (;;) {
    ssize_t n = buf ? read(f->fd, buf, cap) : -1;
    if (n < 0 && (errno == EINTR || errno == ENOENT)) continue;
    if (n < (ssize_t)sizeof(struct fuse_in_header)) break; /* unmounted or aborted */
    const struct fuse_in_header *in = (const void *)buf;
    atomic_fetch_add(&f->requests, 1);
    /* a close of the file waits for its FLUSH, whoever closes it */
    int closing = in->opcode == FUSE_FLUSH || in->opcode == FUSE_RELEASE;
    int64_t wait = closing && !atomic_load(&f->flush) ? 0 : atomic_load(&f->until_ns) - now_ns();
    if (wait > 0) { /* left waiting */
      struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
      while (nanosleep(&ts, &ts) && errno == EINTR) {
      }
    }
    serve(f, in, buf + sizeof *in);
  }
  free(buf);
}

/* The server is a process of its own, its state shared: a close of the
 * file by this process, at its exit too, is answered by a process that is
 * still there. */
struct fuse_stall *fuse_stall_mount(size_t size, char *why, size_t whylen) {
  struct fuse_stall *f =
      mmap(NULL, sizeof *f, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (f == MAP_FAILED) return snprintf(why, whylen, "out of memory"), NULL;
  f->size = size;
  f->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (f->fd < 0) {
    snprintf(why, whylen, "/dev/fuse: %s", strerror(errno));
    munmap(f, sizeof *f);
    return NULL;
  }
  snprintf(f->dir, sizeof f->dir, "/tmp/coop-fuse.XXXXXX");
  char opts[160];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", f->fd);
  if (!mkdtemp(f->dir) || mount("coop-fuse-test", f->dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
    snprintf(why, whylen, "mount fuse at %s: %s", f->dir, strerror(errno));
    rmdir(f->dir);
    close(f->fd);
    munmap(f, sizeof *f);
    return NULL;
  }
  snprintf(f->path, sizeof f->path, "%s/f", f->dir);
  pid_t parent = getpid();
  pid_t pid = fork(); /* not into f->server, which the child shares */
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* after its parent's files are closed */
    if (getppid() == parent) serve_main(f);
    _exit(0);
  }
  f->server = pid;
  if (pid < 0) {
    snprintf(why, whylen, "fork: %s", strerror(errno));
    umount2(f->dir, MNT_DETACH);
    rmdir(f->dir);
    close(f->fd);
    munmap(f, sizeof *f);
    return NULL;
  }
  return f;
}

const char *fuse_stall_path(const struct fuse_stall *f) { return f->path; }
void fuse_stall_stop_answering(struct fuse_stall *f, unsigned ms, int flush) {
  atomic_store(&f->flush, flush);
  atomic_store(&f->until_ns, now_ns() + (int64_t)ms * 1000000);
}
unsigned fuse_stall_requests(const struct fuse_stall *f) { return atomic_load(&f->requests); }

void fuse_stall_unmount(struct fuse_stall *f) {
  umount2(f->dir, MNT_DETACH);
  /* the server's close of the device, the last, aborts the connection:
   * calls still waiting fail (ENOTCONN) */
  close(f->fd);
  kill(f->server, SIGKILL);
  waitpid(f->server, NULL, 0);
  rmdir(f->dir);
  munmap(f, sizeof *f);
}
