/* listen_fds.c: see listen_fds.h. */
#include "listen_fds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_FDS_START 3 /* SD_LISTEN_FDS_START */

static int env_number(const char *name, unsigned long *out) {
  const char *v = getenv(name);
  char *end;
  if (!v || *v < '0' || *v > '9') return -1;
  errno = 0;
  *out = strtoul(v, &end, 10);
  return errno || *end ? -1 : 0;
}

/* What coopd can serve on: a listening Unix stream socket. */
static int check_socket(int fd, char *path, size_t pathlen, char *err, size_t errlen) {
  struct stat st;
  int type = 0, acc = 0;
  socklen_t l1 = sizeof type, l2 = sizeof acc;
  struct sockaddr_un a;
  socklen_t al = sizeof a;
  memset(&a, 0, sizeof a);
  if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
      getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l2) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &al) < 0)
    return snprintf(err, errlen, "socket activation: descriptor %d is not a socket", fd), -1;
  if (a.sun_family != AF_UNIX || type != SOCK_STREAM || !acc)
    return snprintf(err, errlen,
                    "socket activation: descriptor %d is not a listening Unix stream socket "
                    "(coop.socket wants ListenStream=/path)",
                    fd),
           -1;
  /* a path-bound socket's name is NUL-terminated within al; abstract starts with NUL */
  size_t n =
      al > offsetof(struct sockaddr_un, sun_path) ? al - offsetof(struct sockaddr_un, sun_path) : 0;
  if (n && a.sun_path[0] && n < pathlen) {
    memcpy(path, a.sun_path, n);
    path[n] = '\0';
  }
  return 0;
}

int listen_fds_take(char *path, size_t pathlen, char *err, size_t errlen) {
  unsigned long pid, n;
  if (pathlen) path[0] = '\0';
  int mine = env_number("LISTEN_PID", &pid) == 0 && pid == (unsigned long)getpid();
  int have = env_number("LISTEN_FDS", &n) == 0;
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (!mine || !have || n == 0) return -1;
  if (n != 1)
    return snprintf(err, errlen, "socket activation: %lu sockets passed; coopd serves one", n), -2;
  int fd = LISTEN_FDS_START;
  if (check_socket(fd, path, pathlen, err, errlen)) return -2;
  int fl = fcntl(fd, F_GETFL);
  /* the accept loop runs until EAGAIN: a blocking socket would stall it */
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
    return snprintf(err, errlen, "socket activation: descriptor %d: %s", fd, strerror(errno)), -2;
  return fd;
}
