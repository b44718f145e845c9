/*
 * server.c: the listening Unix socket.
 *
 * Sockets are driven by uv_poll_t over non-blocking descriptors rather than
 * uv_pipe_t: clients pass memfd descriptors with SCM_RIGHTS, and libuv's
 * IPC pipes only accept stream handles (TCP, pipes) as passed descriptors.
 *
 * Out of descriptors: accept fails with EMFILE while the connection stays
 * in the backlog, and the level-triggered poll would call us again at once
 * (a busy loop, a log line each time, the client hanging). So coopd keeps
 * one spare descriptor open (/dev/null) and, on EMFILE or ENFILE, closes
 * it, accepts, tells that client why and closes it, and opens the spare
 * again (the trick libuv's own uv_accept uses). The unit file raises
 * LimitNOFILE so that this is rare.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

#define SERVER_LOG_MS 10000 /* at most one "out of descriptors" line per 10 s */
#define SERVER_PAUSE_MS 100 /* accepting pauses this long when it cannot go on */

/* The spare descriptor (see the top). -1 if even that cannot be had. */
static int open_spare(void) { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

static void on_listen(uv_poll_t *p, int status, int events);

static void on_accept_pause(uv_timer_t *t) {
  struct daemon *dm = t->data;
  if (!dm->listening) return;
  if (dm->spare_fd < 0) dm->spare_fd = open_spare();
  uv_poll_start(&dm->listen_poll, UV_READABLE, on_listen);
}

/* Accepting stops for SERVER_PAUSE_MS: the listening socket is
 * level-triggered, so returning with a connection still queued would only
 * bring us back at once, a busy loop (docs/faults.md, "Resources a client
 * can exhaust", row 5). */
static void pause_accepting(struct daemon *dm) {
  uv_poll_stop(&dm->listen_poll);
  uv_timer_start(&dm->accept_pause, on_accept_pause, SERVER_PAUSE_MS, 0);
}

/* accept failed with EMFILE or ENFILE. The spare descriptor is given up
 * to accept the waiting connection, which is told why and closed, then
 * taken again: the client hears at once rather than hanging in the
 * backlog, and the loop does not spin. The log says so once per
 * SERVER_LOG_MS. Returns 1 to go on accepting, 0 if accepting paused. */
static int shed(struct daemon *dm, int err) {
  int closed = 0;
  if (dm->spare_fd >= 0) {
    close(dm->spare_fd);
    dm->spare_fd = -1;
    int fd = accept4(dm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      session_refuse(fd, COOP_ELIMIT,
                     "coopd is out of file descriptors; try again later (its administrator "
                     "should raise LimitNOFILE)");
      dm->shed++;
      closed = 1;
    }
    dm->spare_fd = open_spare(); /* a device thread may have taken the slot */
  }
  uint64_t now = uv_now(dm->loop) + 1; /* 0: never logged */
  if (!dm->shed_logged_ms || now - dm->shed_logged_ms >= SERVER_LOG_MS) {
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_NOFILE, &rl);
    log_warn(
        "accept: %s: new connections are closed at once (%llu so far); raise the descriptor "
        "limit (LimitNOFILE= in coopd.service, ulimit -n; now %llu)",
        strerror(err), (unsigned long long)dm->shed, (unsigned long long)rl.rlim_cur);
    dm->shed_logged_ms = now;
  }
  if (closed && dm->spare_fd >= 0) return 1;
  pause_accepting(dm);
  return 0;
}

static void on_listen(uv_poll_t *p, int status, int events) {
  struct daemon *dm = p->data;
  if (status < 0) {
    log_error("listening socket: %s", uv_strerror(status));
    return;
  }
  for (;;) {
    int fd = accept4(dm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      session_accept(dm, fd);
      continue;
    }
    int e = errno;
    if (e == EINTR || e == ECONNABORTED) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) return;
    if (e == EMFILE || e == ENFILE) {
      if (shed(dm, e)) continue;
      return;
    }
    /* ENOBUFS, ENOMEM...: would repeat at once; pause, say so once */
    uint64_t now = uv_now(dm->loop) + 1;
    if (!dm->shed_logged_ms || now - dm->shed_logged_ms >= SERVER_LOG_MS) {
      log_warn("accept: %s: accepting paused for %u ms", strerror(e), SERVER_PAUSE_MS);
      dm->shed_logged_ms = now;
    }
    pause_accepting(dm);
    return;
  }
}

/* A socket file left by a daemon that died: nobody answers a connect. Only
 * a socket of coopd's own user, not through a symlink: what came in the
 * path's place since paths_claim_socket looked may be another user's. */
static int stale(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) return 0;
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
  dm->spare_fd = open_spare();
  if (dm->spare_fd < 0)
    log_warn("no spare descriptor (%s): at EMFILE accepting pauses", strerror(errno));
  uv_timer_init(dm->loop, &dm->accept_pause);
  dm->accept_pause.data = dm;
  uv_poll_init(dm->loop, &dm->listen_poll, fd);
  dm->listen_poll.data = dm;
  uv_poll_start(&dm->listen_poll, UV_READABLE, on_listen);
  dm->listening = 1;
}

/* A socket bound at `at`, its mode set, listening: 0 or an errno. */
static int bind_listen(const char *at, unsigned mode, int *fdp) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, at, strlen(at) + 1); /* length checked by the caller */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  /* bind creates the file with umask applied; chmod sets the mode */
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    int e = errno;
    close(fd);
    return e;
  }
  if (chmod(at, mode) < 0 || listen(fd, 64) < 0) {
    int e = errno;
    close(fd);
    unlink(at);
    return e;
  }
  *fdp = fd;
  return 0;
}

/* The socket file just linked into place: its directory, held open, and
 * its device and inode, so that the stop removes this file and no other.
 * By the stop the name may be another's: the directory renamed and another
 * put at its path, or the file replaced (docs/daemon.md, "Sockets"). A
 * directory that cannot be opened leaves the stop to the path, as before. */
static void remember_socket(struct daemon *dm, const char *path) {
  char dir[sizeof dm->cfg.socket];
  const char *slash = strrchr(path, '/'); /* the path is absolute (config.c) */
  size_t n = slash && slash > path ? (size_t)(slash - path) : 1;
  memcpy(dir, path, n);
  dir[n] = '\0';
  snprintf(dm->sock_name, sizeof dm->sock_name, "%s", slash ? slash + 1 : path);
  dm->sock_dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (dm->sock_dir_fd >= 0 &&
      fstatat(dm->sock_dir_fd, dm->sock_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    dm->sock_dev = (uint64_t)st.st_dev;
    dm->sock_ino = (uint64_t)st.st_ino;
    return;
  }
  log_warn("socket %s: %s: at the stop it is removed by its path", path, strerror(errno));
  if (dm->sock_dir_fd >= 0) close(dm->sock_dir_fd);
  dm->sock_dir_fd = -1;
}

/* The stop: the socket file goes only if it is still the one bound, in
 * the directory it was bound in (wherever that directory is now). */
static void remove_socket(struct daemon *dm) {
  const char *path = dm->cfg.socket;
  if (dm->sock_dir_fd < 0) {
    unlink(path);
    return;
  }
  struct stat st;
  if (fstatat(dm->sock_dir_fd, dm->sock_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno != ENOENT) log_warn("socket %s: %s: not removed", path, strerror(errno));
  } else if ((uint64_t)st.st_dev != dm->sock_dev || (uint64_t)st.st_ino != dm->sock_ino) {
    log_warn(
        "socket %s: not removed: the file there is not the socket coopd bound (mode %06o, "
        "uid %llu); something replaced it",
        path, (unsigned)st.st_mode, (unsigned long long)st.st_uid);
  } else if (unlinkat(dm->sock_dir_fd, dm->sock_name, 0) < 0) {
    log_warn("socket %s: %s: not removed", path, strerror(errno));
  }
  close(dm->sock_dir_fd);
  dm->sock_dir_fd = -1;
}

/* Whether the temporary name beside the socket may be bound: nothing
 * there, or a socket of coopd's user left by a coopd that had this pid and
 * died (removed). In a sticky directory (/tmp) another user may have put a
 * file of theirs at the name, its pid guessed: never removed, and the
 * socket is bound in place instead. */
static int tmp_free(const char *tmp) {
  struct stat st;
  if (lstat(tmp, &st) < 0) return 1;
  if (S_ISSOCK(st.st_mode) && st.st_uid == geteuid()) return unlink(tmp) == 0;
  log_warn(
      "socket %s: a file of uid %llu is there (mode %06o), not a socket coopd left: left "
      "alone, the socket bound at its path directly",
      tmp, (unsigned long long)st.st_uid, (unsigned)st.st_mode);
  return 0;
}

/* The socket file appears only once it accepts: bound and listening under
 * a name beside it (path.PID), then linked into place. Bound in place, a
 * client that saw the file between bind and listen got ECONNREFUSED (a
 * test's client did, in CI, and its test hung; 2026-11-25). link, not
 * rename: it fails on another coopd's live socket instead of taking its
 * name. A path too long for the temporary name, or one whose temporary
 * name another user holds, is bound in place. */
int server_listen(struct daemon *dm, char *err, size_t errlen) {
  /* socket activation (listen_fds.h): systemd bound it, set its mode */
  if (dm->listen_inherited) return start_polling(dm, dm->listen_fd), 0;
  const char *path = dm->cfg.socket;
  char tmp[sizeof((struct sockaddr_un *)0)->sun_path];
  if (strlen(path) >= sizeof tmp)
    return snprintf(err, errlen, "socket path too long: %s", path), -1;
  int n = snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
  int in_place = n < 0 || (size_t)n >= sizeof tmp || !tmp_free(tmp);
  const char *at = in_place ? path : tmp;
  int fd = -1, e = bind_listen(at, dm->cfg.socket_mode, &fd);
  if (in_place && e == EADDRINUSE && stale(path)) {
    log_info("removing stale socket %s", path);
    unlink(path);
    e = bind_listen(at, dm->cfg.socket_mode, &fd);
  }
  if (e == EADDRINUSE) return snprintf(err, errlen, "%s: another coopd is listening there", at), -1;
  if (e) return snprintf(err, errlen, "bind %s: %s", at, strerror(e)), -1;
  if (!in_place) {
    e = link(tmp, path) < 0 ? errno : 0;
    if (e == EEXIST && stale(path)) {
      log_info("removing stale socket %s", path);
      unlink(path);
      e = link(tmp, path) < 0 ? errno : 0;
    }
    if (e && e != EEXIST) /* a file system without hard links */
      e = rename(tmp, path) < 0 ? errno : 0;
    unlink(tmp);
    if (e) {
      close(fd);
      if (e == EEXIST)
        return snprintf(err, errlen, "%s: another coopd is listening there", path), -1;
      return snprintf(err, errlen, "socket %s: %s", path, strerror(e)), -1;
    }
  }
  remember_socket(dm, path);
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
  uv_timer_stop(&dm->accept_pause);
  uv_close((uv_handle_t *)&dm->accept_pause, NULL);
  if (dm->spare_fd >= 0) close(dm->spare_fd);
  dm->spare_fd = -1;
  /* systemd's socket outlives coopd: a connect meanwhile starts it again */
  if (!dm->listen_inherited) remove_socket(dm);
}
