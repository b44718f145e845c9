/* sdnotify.c: see sdnotify.h. */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* NOTIFY_SOCKET is a path, or "@name" for the abstract namespace. */
static int notify_addr(const char *e, struct sockaddr_un *a, socklen_t *len) {
  size_t n = strlen(e);
  if ((e[0] != '/' && e[0] != '@') || n < 2 || n >= sizeof a->sun_path) return -EINVAL;
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  memcpy(a->sun_path, e, n);
  if (e[0] == '@') a->sun_path[0] = '\0';
  *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
  return 0;
}

int sdnotify(const char *state) {
  const char *e = getenv("NOTIFY_SOCKET");
  if (!e || !*e) return 1;
  struct sockaddr_un a;
  socklen_t len;
  int r = notify_addr(e, &a, &len);
  if (r) return r;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  /* the credentials that systemd checks (NotifyAccess=main) come with it */
  ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, len);
  r = w < 0 ? -errno : 0;
  close(fd);
  return r;
}

int sdnotify_reloading(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char m[80];
  snprintf(m, sizeof m, "RELOADING=1\nMONOTONIC_USEC=%llu",
           (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000);
  return sdnotify(m);
}
