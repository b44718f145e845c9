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
#include <unistd.h>

#include "coop_internal.h"

/* A memfd of n bytes holding data (NULL: zeros), or a negative code. */
static int memfd_of(const void *data, size_t n) {
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

/* The bytes of a buffer write or read too large to go inline travel in a
 * memfd. A fresh one costs its size twice more: the kernel allocates and
 * zeroes each page at its first write, in this process for a write, in
 * the device process for a read. So each connection keeps one, used by
 * one op at a time (xmu, tried: an op that finds it busy makes a fresh
 * one), grown as needed up to XFER_KEEP_MAX. After any failure it is
 * dropped: a request that timed out may still be served, and its late
 * bytes must not land in the next op's. */
#define XFER_KEEP_MAX (64u << 20)

/* A memfd of at least n bytes, data (if any) at 0: the kept one
 * (*kept = 1; xmu held until xfer_put) or a fresh one. */
static int xfer_get(coop_conn *c, const void *data, size_t n, int *kept) {
  *kept = 0;
  if (n > XFER_KEEP_MAX || pthread_mutex_trylock(&c->xmu)) return memfd_of(data, n);
  if (c->xfd < 0) {
    /* sealed against shrinking: coopd's device process may then map it
     * once and have the copy engine read and write its pages (docs/
     * daemon.md, "Device buffers"); it may still grow */
    c->xfd = memfd_create("coop-transfer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (c->xfd >= 0) fcntl(c->xfd, F_ADD_SEALS, F_SEAL_SHRINK);
    c->xsize = 0;
  }
  if (c->xfd >= 0 && n > c->xsize && ftruncate(c->xfd, (off_t)n) == 0) c->xsize = n;
  int ok = c->xfd >= 0 && c->xsize >= n;
  for (size_t off = 0; ok && data && off < n;) {
    ssize_t k = pwrite(c->xfd, (const char *)data + off, n - off, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    ok = k > 0;
    off += ok ? (size_t)k : 0;
  }
  if (ok) return *kept = 1, c->xfd;
  if (c->xfd >= 0) close(c->xfd);
  c->xfd = -1;
  pthread_mutex_unlock(&c->xmu);
  return memfd_of(data, n);
}

static void xfer_put(coop_conn *c, int fd, int kept, int failed) {
  if (!kept) {
    close(fd);
    return;
  }
  if (failed) { /* see above: never reused after a failure */
    close(c->xfd);
    c->xfd = -1;
  }
  pthread_mutex_unlock(&c->xmu);
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
  int fd = -1;
  if (data && inline_ok(c, size)) {
    m[0].buf_create.data = data;
    m[0].buf_create.data_len = (uint32_t)size;
  } else if (data) {
    fd = memfd_of(data, size);
    if (fd < 0) return free(m), fd;
    m[0].buf_create.fd = 0;
  }
  struct coop_frame *f = NULL;
  int e = request(c, COOP_MSG_BUF_CREATE, &m[0], fd, COOP_MSG_BUFFER, &m[1], &f);
  if (fd >= 0) close(fd);
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
  for (size_t off = 0; !e && fd >= 0 && off < len;) {
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
