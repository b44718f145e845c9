/* paths.c: see paths.h. */
#define _DEFAULT_SOURCE /* realpath */
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

#define STICKY 01000 /* S_ISVTX, which strict POSIX headers leave out */

static int stat_path(uv_loop_t *loop, const char *path, int follow, uv_stat_t *st) {
  uv_fs_t req;
  int r = follow ? uv_fs_stat(loop, &req, path, NULL) : uv_fs_lstat(loop, &req, path, NULL);
  if (r == 0) *st = req.statbuf;
  uv_fs_req_cleanup(&req);
  return r;
}

/* "/a/b/c" -> "/a/b"; "/c" -> "/". */
static void dir_of(const char *path, char *dir, size_t len) {
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) slash[slash == dir] = '\0';
}

/* Why dir, as stat'd in st, would let another user replace what is in it
 * (OpenSSH's StrictModes rule), or NULL: it must be a directory owned by
 * root or by coopd's uid, and writable by no one else (group or others)
 * unless it has the sticky bit, as /tmp has: there no one removes or
 * renames another's files. */
static const char *unsafe_dir(const uv_stat_t *st) {
  if ((st->st_mode & S_IFMT) != S_IFDIR) return "not a directory";
  if (st->st_uid != 0 && st->st_uid != (uint64_t)geteuid()) return "owned by another user";
  if (st->st_mode & STICKY) return NULL;
  if (st->st_mode & S_IWOTH) return "writable by every user without the sticky bit";
  if (st->st_mode & S_IWGRP) return "writable by its group without the sticky bit";
  return NULL;
}

/* Every directory above path's own, "/" included, in the order of the
 * walk down: / and /a of /a/b/file; with follow, each as stat sees it (a
 * symlink as its target). 0, or -1 with err naming the first unsafe one.
 * One writable by others could have the directory below it renamed away
 * and another put in its place, with a server of theirs listening at the
 * socket's path (docs/daemon.md, "Sockets"). */
static int check_above(uv_loop_t *loop, const char *path, const char *what, const char *dir,
                       char *err, size_t errlen) {
  char up[1024];
  size_t n = strlen(dir);
  if (n >= sizeof up) return snprintf(err, errlen, "%s %s: path too long", what, path), -1;
  for (size_t i = 0; i < n; i++) {
    if (dir[i] != '/' || (i > 0 && dir[i - 1] == '/')) continue;
    memcpy(up, dir, i ? i : 1); /* the prefix before this slash; "/" for the first */
    up[i ? i : 1] = '\0';
    uv_stat_t st = {0};
    int r = stat_path(loop, up, 1, &st);
    if (r < 0)
      return snprintf(err, errlen, "%s %s: directory %s: %s", what, path, up, uv_strerror(r)), -1;
    const char *why = unsafe_dir(&st);
    if (!why) continue;
    snprintf(err, errlen,
             "%s %s: the directory %s above it is %s (uid %llu, mode %04o): another user could "
             "move the %s's directory aside and put one of theirs in its place; put the %s "
             "under directories that only root or coopd's user can write, such as /run/coop "
             "or $XDG_RUNTIME_DIR",
             what, path, up, why, (unsigned long long)st.st_uid, (unsigned)(st.st_mode & 07777),
             what, what);
    return -1;
  }
  return 0;
}

int paths_check_dir(uv_loop_t *loop, const char *path, const char *what, char *err, size_t errlen) {
  char dir[1024], real[PATH_MAX];
  dir_of(path, dir, sizeof dir);
  /* the directories above, as named, before anything is created there */
  if (check_above(loop, path, what, dir, err, errlen)) return -1;
  uv_stat_t st = {0};
  int r = stat_path(loop, dir, 1, &st);
  if (r == UV_ENOENT) { /* /run/coop before systemd's RuntimeDirectory made it, say */
    uv_fs_t req;
    r = uv_fs_mkdir(loop, &req, dir, 0755, NULL);
    uv_fs_req_cleanup(&req);
    if (r == 0) log_info("created the %s's directory %s (mode 0755)", what, dir);
    if (r == 0 || r == UV_EEXIST) r = stat_path(loop, dir, 1, &st);
  }
  if (r < 0) return snprintf(err, errlen, "%s directory %s: %s", what, dir, uv_strerror(r)), -1;
  const char *why = unsafe_dir(&st);
  if (why) {
    snprintf(err, errlen,
             "%s %s: its directory %s is %s (uid %llu, mode %04o): another user could replace "
             "coopd's files there; put it in a directory that coopd's user owns, such as "
             "/run/coop or $XDG_RUNTIME_DIR",
             what, path, dir, why, (unsigned long long)st.st_uid, (unsigned)(st.st_mode & 07777));
    return -1;
  }
  /* and as they are: a symlink on the way (/var/run -> /run) leads
   * through directories that the walk above did not see */
  if (!realpath(dir, real))
    return snprintf(err, errlen, "%s directory %s: %s", what, dir, strerror(errno)), -1;
  return check_above(loop, path, what, real, err, errlen);
}

/* Whether a server accepts connections at path. */
static int answers(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1; /* cannot tell: assume so, remove nothing */
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  int r = connect(fd, (struct sockaddr *)&a, sizeof a);
  int e = errno;
  close(fd);
  return r == 0 || e != ECONNREFUSED;
}

int paths_claim_socket(uv_loop_t *loop, const char *path, char *err, size_t errlen) {
  uv_stat_t st = {0};
  int r = stat_path(loop, path, 0, &st);
  if (r == UV_ENOENT) return 0;
  if (r < 0) return snprintf(err, errlen, "socket %s: %s", path, uv_strerror(r)), -1;
  if ((st.st_mode & S_IFMT) != S_IFSOCK)
    return snprintf(err, errlen,
                    "socket %s: something that is not a socket is there (mode %06o, uid %llu); "
                    "coopd removes only a stale socket",
                    path, (unsigned)st.st_mode, (unsigned long long)st.st_uid),
           -1;
  if (answers(path))
    return snprintf(err, errlen,
                    "%s: another coopd is listening there (or another program: the socket "
                    "belongs to uid %llu); stop it, or choose another --socket",
                    path, (unsigned long long)st.st_uid),
           -1;
  /* In a sticky directory (/tmp) another user may have bound it first: a
   * coopd run by root could remove it, but the name is theirs to keep. */
  if (st.st_uid != (uint64_t)geteuid())
    return snprintf(err, errlen,
                    "socket %s: a socket of another user (uid %llu) is there, no one listening; "
                    "coopd removes only a stale socket of its own user's (uid %llu): remove it, "
                    "or choose another --socket",
                    path, (unsigned long long)st.st_uid, (unsigned long long)geteuid()),
           -1;
  uv_fs_t req;
  r = uv_fs_unlink(loop, &req, path, NULL);
  uv_fs_req_cleanup(&req);
  if (r < 0)
    return snprintf(err, errlen, "stale socket %s (uid %llu): %s", path,
                    (unsigned long long)st.st_uid, uv_strerror(r)),
           -1;
  log_info("removed the stale socket %s", path);
  return 0;
}
