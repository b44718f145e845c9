/*
 * coop_buffer.c: device buffers (coop.h; PROTOCOL.md, "Device buffers"):
 * BUF_CREATE, BUF_WRITE, BUF_READ, BUF_FREE. Bytes up to the daemon's
 * inline_max travel inside the frame, larger ones in a memfd.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_internal.h"

int coop__memfd_of(const void *data, size_t n) {
  int fd = memfd_create("coop-buffer", MFD_CLOEXEC);
  if (fd < 0) return coop__fail(COOP_EIO, "memfd_create: %s", strerror(errno));
  if (ftruncate(fd, (off_t)n) < 0) {
    close(fd);
    return coop__fail(COOP_EIO, "memfd of %zu bytes: %s", n, strerror(errno));
  }
  for (size_t off = 0; data && off < n;) {
    ssize_t k = pwrite(fd, (const char *)data + off, n - off, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      close(fd);
      return coop__fail(COOP_EIO, "memfd write: %s", strerror(errno));
    }
    off += (size_t)k;
  }
  return fd;
}

/* The bytes of a buffer write or read too large to go inline, and the
 * ranges a job moves (coop_job_buffer_io), travel in a memfd. A fresh one
 * costs its size twice more: the kernel allocates and zeroes each page at
 * its first write, in this process for a write, in the device process for
 * a read. So each connection keeps one, mapped here (the bytes go in and
 * out by memcpy, no system call), used by one op or job at a time, grown
 * as needed up to XFER_KEEP_MAX. */
#define XFER_KEEP_MAX (64u << 20)
#define XFER_STEP (1u << 20)
_Static_assert(XFER_KEEP_MAX % XFER_STEP == 0 &&
                   ((XFER_KEEP_MAX / XFER_STEP) & (XFER_KEEP_MAX / XFER_STEP - 1)) == 0,
               "the kept memfd's steps reach XFER_KEEP_MAX exactly");

static void xfer_drop(coop_conn *c) {
  if (c->xmem) munmap(c->xmem, c->xmapped);
  if (c->xfd >= 0) close(c->xfd);
  c->xmem = NULL;
  c->xmapped = 0;
  c->xfd = -1;
  c->xsize = 0;
}

/* The kept memfd made, grown to n and mapped (the caller holds it). */
static int xfer_ready(coop_conn *c, size_t n) {
  if (c->xfd < 0) {
    /* sealed against shrinking: coopd's device process may then map it
     * once and have the copy engine read and write its pages (docs/
     * daemon.md, "Device buffers"); it may still grow */
    c->xfd = memfd_create("coop-transfer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (c->xfd < 0) return -1;
    fcntl(c->xfd, F_ADD_SEALS, F_SEAL_SHRINK);
    struct stat st;
    if (fstat(c->xfd, &st)) return -1;
    c->xfd_dev = st.st_dev;
    c->xfd_ino = st.st_ino;
  }
  if (n > c->xsize) {
    /* in steps of powers of two from 1 MiB: each growth costs a mapping
     * here and, in coopd's device process, a pinned mapping it keeps
     * until the megakernel parks (xmap.h) */
    size_t want = XFER_STEP; /* n <= XFER_KEEP_MAX, itself a power of two */
    while (want < n) want *= 2;
    if (ftruncate(c->xfd, (off_t)want)) return -1;
    c->xsize = want;
  }
  if (c->xmapped < c->xsize) {
    if (c->xmem) munmap(c->xmem, c->xmapped);
    c->xmapped = 0;
    c->xmem = mmap(NULL, c->xsize, PROT_READ | PROT_WRITE, MAP_SHARED, c->xfd, 0);
    if (c->xmem == MAP_FAILED) return c->xmem = NULL, -1;
    c->xmapped = c->xsize;
  }
  return 0;
}

int coop__xfer_take(coop_conn *c, size_t n, uint8_t **mem) {
  int idle = 0;
  if (n > XFER_KEEP_MAX || !atomic_compare_exchange_strong(&c->xbusy, &idle, 1)) return -1;
  if (xfer_ready(c, n ? n : 1)) {
    xfer_drop(c);
    atomic_store(&c->xbusy, 0);
    return -1;
  }
  *mem = c->xmem;
  return c->xfd;
}

void coop__xfer_give(coop_conn *c, int failed) {
  if (failed) xfer_drop(c);
  atomic_store(&c->xbusy, 0);
}

/* A memfd of at least n bytes, data (if any) at 0: the kept one
 * (*kept = 1; held until xfer_put) or a fresh one. */
static int xfer_get(coop_conn *c, const void *data, size_t n, int *kept) {
  uint8_t *mem;
  int fd = coop__xfer_take(c, n, &mem);
  *kept = fd >= 0;
  if (fd < 0) return coop__memfd_of(data, n);
  if (data && n) memcpy(mem, data, n);
  return fd;
}

static void xfer_put(coop_conn *c, int fd, int kept, int failed) {
  if (kept)
    coop__xfer_give(c, failed);
  else
    close(fd);
}

static int inline_ok(const coop_conn *c, size_t n) {
  return n <= c->info.inline_max && n + 4096u <= c->info.max_payload;
}

/* One request whose bytes go inline or (fd >= 0) by descriptor. */
static int request(coop_conn *c, uint16_t type, union coop_msg *m, int fd, uint16_t want,
                   union coop_msg *reply, struct coop_frame **f) {
  int e = coop__request(c, type, m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, coop__timeout(c), want,
                        reply, f);
  return e;
}

int coop_buffer_create(coop_conn *c, int device, size_t size, const void *data, unsigned flags,
                       uint64_t *buffer) {
  coop__clear_msg();
  if (!c || !buffer || size == 0)
    return coop__fail(COOP_EINVAL, "buffer create: no connection or id, or size 0");
  if (flags & ~COOP_BUFFER_FLAGS_ALL) return coop__fail(COOP_EINVAL, "unknown buffer flags");
  if (device != COOP_ANY_DEVICE && (device < 0 || device >= (int)COOP_MAX_DEVICES))
    return coop__fail(COOP_EINVAL, "device %d: want 0..%u or COOP_ANY_DEVICE", device,
                      COOP_MAX_DEVICES - 1);
  union coop_msg *m = calloc(2, sizeof *m); /* request and reply: large */
  if (!m) return coop__fail(COOP_ENOMEM, "out of memory");
  m[0].buf_create.device = device == COOP_ANY_DEVICE ? COOP_WIRE_ANY_DEVICE : (uint8_t)device;
  m[0].buf_create.flags = (uint8_t)flags;
  m[0].buf_create.size = size;
  m[0].buf_create.fd = COOP_WIRE_FD_NONE;
  int fd = -1, kept = 0;
  if (data && inline_ok(c, size)) {
    m[0].buf_create.data = data;
    m[0].buf_create.data_len = (uint32_t)size;
  } else if (data) { /* as a write's: the kept memfd, which the device process pins once */
    fd = xfer_get(c, data, size, &kept);
    if (fd < 0) return free(m), fd;
    m[0].buf_create.fd = 0;
  }
  struct coop_frame *f = NULL;
  int e = request(c, COOP_MSG_BUF_CREATE, &m[0], fd, COOP_MSG_BUFFER, &m[1], &f);
  if (fd >= 0) xfer_put(c, fd, kept, e != 0);
  if (!e) *buffer = m[1].buffer.buffer;
  coop__frame_free(f);
  free(m);
  return e;
}

int coop_buffer_write(coop_conn *c, uint64_t buffer, size_t offset, const void *data, size_t len) {
  coop__clear_msg();
  if (!c || (!data && len)) return coop__fail(COOP_EINVAL, "buffer write: no connection or data");
  union coop_msg *m = calloc(2, sizeof *m); /* request and reply: large */
  if (!m) return coop__fail(COOP_ENOMEM, "out of memory");
  m[0].buf_range = (struct coop_msg_buf_range){
      .buffer = buffer, .offset = offset, .len = len, .fd = COOP_WIRE_FD_NONE};
  int fd = -1, kept = 0;
  if (inline_ok(c, len)) {
    m[0].buf_range.data = data;
    m[0].buf_range.data_len = (uint32_t)len;
  } else {
    fd = xfer_get(c, data, len, &kept);
    if (fd < 0) return free(m), fd;
    m[0].buf_range.fd = 0;
  }
  struct coop_frame *f = NULL;
  int e = request(c, COOP_MSG_BUF_WRITE, &m[0], fd, COOP_MSG_OK, &m[1], &f);
  if (fd >= 0) xfer_put(c, fd, kept, e != 0);
  coop__frame_free(f);
  free(m);
  return e;
}

int coop_buffer_read(coop_conn *c, uint64_t buffer, size_t offset, void *out, size_t len) {
  coop__clear_msg();
  if (!c || (!out && len)) return coop__fail(COOP_EINVAL, "buffer read: no connection or memory");
  union coop_msg *m = calloc(2, sizeof *m); /* request and reply: large */
  if (!m) return coop__fail(COOP_ENOMEM, "out of memory");
  m[0].buf_range = (struct coop_msg_buf_range){
      .buffer = buffer, .offset = offset, .len = len, .fd = COOP_WIRE_FD_NONE};
  int fd = -1, kept = 0;
  if (!inline_ok(c, len)) {
    fd = xfer_get(c, NULL, len, &kept);
    if (fd < 0) return free(m), fd;
    m[0].buf_range.fd = 0;
  }
  struct coop_frame *f = NULL;
  int e = request(c, COOP_MSG_BUF_READ, &m[0], fd, COOP_MSG_BUF_DATA, &m[1], &f);
  if (!e && fd < 0 && m[1].buf_data.data_len != len)
    e = coop__fail(COOP_EPROTO, "BUF_DATA carries %u bytes, not %zu", m[1].buf_data.data_len, len);
  if (!e && fd < 0 && len) memcpy(out, m[1].buf_data.data, len);
  if (!e && kept && len) memcpy(out, c->xmem, len); /* the kept one is mapped */
  for (size_t off = 0; !e && fd >= 0 && !kept && off < len;) {
    ssize_t k = pread(fd, (char *)out + off, len - off, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) e = coop__fail(COOP_EIO, "memfd read: %s", k ? strerror(errno) : "short");
    if (k > 0) off += (size_t)k;
  }
  if (fd >= 0) xfer_put(c, fd, kept, e != 0);
  coop__frame_free(f);
  free(m);
  return e;
}

int coop_buffer_free(coop_conn *c, uint64_t buffer) {
  coop__clear_msg();
  if (!c) return coop__fail(COOP_EINVAL, "buffer free: no connection");
  union coop_msg *m = calloc(2, sizeof *m); /* request and reply: large */
  if (!m) return coop__fail(COOP_ENOMEM, "out of memory");
  m[0].buf_free.buffer = buffer;
  struct coop_frame *f = NULL;
  int e = request(c, COOP_MSG_BUF_FREE, &m[0], -1, COOP_MSG_OK, &m[1], &f);
  coop__frame_free(f);
  free(m);
  return e;
}
