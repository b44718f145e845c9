/* fdio.c: see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int fdio_pread(int fd, void *p, uint64_t n, uint64_t at) {
  for (uint64_t off = 0; off < n;) {
    ssize_t r = pread(fd, (char *)p + off, n - off, (off_t)(at + off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    off += (uint64_t)r;
  }
  return 0;
}

int fdio_pwrite(int fd, const void *p, uint64_t n, uint64_t at) {
  for (uint64_t off = 0; off < n;) {
    ssize_t r = pwrite(fd, (const char *)p + off, n - off, (off_t)(at + off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    off += (uint64_t)r;
  }
  return 0;
}
