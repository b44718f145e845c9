/*
 * server.c: the listening Unix socket.
 *
 * Sockets are driven by uv_poll_t over non-blocking descriptors rather than
 * uv_pipe_t: clients pass memfd descriptors with SCM_RIGHTS, and libuv's
 * IPC pipes only accept stream handles (TCP, pipes) as passed descriptors.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

static void on_listen(uv_poll_t *p, int status, int events) {
  struct daemon *dm = p->data;
  if (status < 0) {
    log_error("listening socket: %s", uv_strerror(status));
    return;
  }
  for (;;) {
    int fd = accept4(dm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        log_warn("accept: %s", strerror(errno));
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    session_accept(dm, fd);
  }
}

/* A socket file left by a daemon that died: nobody answers a connect. */
static int stale(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1); /* length checked by the caller */
  int r = connect(fd, (struct sockaddr *)&a, sizeof a);
  int e = errno;
  close(fd);
  return r < 0 && e == ECONNREFUSED;
}

static void start_polling(struct daemon *dm, int fd) {
  dm->listen_fd = fd;
  uv_poll_init(dm->loop, &dm->listen_poll, fd);
  dm->listen_poll.data = dm;
  uv_poll_start(&dm->listen_poll, UV_READABLE, on_listen);
  dm->listening = 1;
}

int server_listen(struct daemon *dm, char *err, size_t errlen) {
  /* socket activation (listen_fds.h): systemd bound it, set its mode */
  if (dm->listen_inherited) return start_polling(dm, dm->listen_fd), 0;
  const char *path = dm->cfg.socket;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path)
    return snprintf(err, errlen, "socket path too long: %s", path), -1;
  memcpy(a.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return snprintf(err, errlen, "socket: %s", strerror(errno)), -1;
  /* bind creates the file with umask applied; chmod below sets the mode */
  int r = bind(fd, (struct sockaddr *)&a, sizeof a);
  if (r < 0 && errno == EADDRINUSE && stale(path)) {
    log_info("removing stale socket %s", path);
    unlink(path);
    r = bind(fd, (struct sockaddr *)&a, sizeof a);
  }
  if (r < 0) {
    int e = errno;
    close(fd);
    if (e == EADDRINUSE)
      return snprintf(err, errlen, "%s: another coopd is listening there", path), -1;
    return snprintf(err, errlen, "bind %s: %s", path, strerror(e)), -1;
  }
  if (chmod(path, dm->cfg.socket_mode) < 0 || listen(fd, 64) < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    unlink(path);
    return -1;
  }
  start_polling(dm, fd);
  return 0;
}

static void on_listen_closed(uv_handle_t *h) {
  struct daemon *dm = h->data;
  close(dm->listen_fd);
  dm->listen_fd = -1;
}

void server_stop_listening(struct daemon *dm) {
  if (!dm->listening) return;
  dm->listening = 0;
  uv_poll_stop(&dm->listen_poll);
  uv_close((uv_handle_t *)&dm->listen_poll, on_listen_closed);
  /* systemd's socket outlives coopd: a connect meanwhile starts it again */
  if (!dm->listen_inherited) unlink(dm->cfg.socket);
}
