/* devproc_shm.c: the shared-memory channel beside the device process's
 * socket (devproc_shm.h). */
#define _GNU_SOURCE
#include "devproc_shm.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
               "the shared channel's flags are shared between processes");

int dp_shm_create(struct dp_shm **sh) {
  int fd = memfd_create("coopd-shm", MFD_CLOEXEC);
  if (fd < 0) return -1;
  void *m = MAP_FAILED;
  if (ftruncate(fd, sizeof **sh) == 0)
    m = mmap(NULL, sizeof **sh, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    close(fd);
    return errno = e, -1;
  }
  *sh = m; /* zero-filled: every seq 0, nobody asleep */
  return fd;
}

struct dp_shm *dp_shm_map(int fd) {
  struct stat st;
  if (fstat(fd, &st) || st.st_size != (off_t)sizeof(struct dp_shm)) return NULL;
  void *m = mmap(NULL, sizeof(struct dp_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? NULL : m;
}

void dp_shm_unmap(struct dp_shm *sh) {
  if (sh) munmap(sh, sizeof *sh);
}

int dp_shm_ring(int fd) {
  char b = 0;
  ssize_t n;
  do n = send(fd, &b, DP_DOORBELL_LEN, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == DP_DOORBELL_LEN ? 0 : -1;
}

int dp_shm_copy(void *dst, size_t cap, const void *src, uint32_t len) {
  if (len == 0 || len > cap) return -1;
  memcpy(dst, src, len);
  return 0;
}

int64_t dp_shm_window(int64_t until, int64_t *told, int64_t now, int64_t spin_end, int64_t max_ns) {
  if (until == *told || until <= now) return spin_end;
  *told = until;
  int64_t end = until - now < max_ns ? until : now + max_ns;
  return end > spin_end ? end : spin_end;
}
