/* authors.c: see authors.h. */
#define _GNU_SOURCE /* struct ucred, SO_PEERGROUPS */
#include "authors.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A uid or gid written as digits. 0, or -1. */
static int numeric(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || v >= 0xffffffffull || *s == '-') return -1;
  *out = (uint32_t)v;
  return 0;
}

int who_parse(const char *t, const char *key, int *group, uint32_t *id, char *err, size_t errlen) {
  *group = t[0] == '@';
  const char *n = t + *group;
  if (numeric(n, id) == 0) return 0;
  struct group *g = *group ? getgrnam(n) : NULL;
  struct passwd *p = *group ? NULL : getpwnam(n);
  if (!g && !p)
    return snprintf(err, errlen, "%s: no %s named \"%s\"", key, *group ? "group" : "user", n), -1;
  *id = g ? (uint32_t)g->gr_gid : (uint32_t)p->pw_uid;
  return 0;
}

static int add_one(struct authors *a, const char *t, char *err, size_t errlen) {
  int group;
  uint32_t id;
  if (who_parse(t, "[kernels] authors", &group, &id, err, errlen)) return -1;
  unsigned *cnt = group ? &a->ngids : &a->nuids;
  if (*cnt == AUTHORS_MAX)
    return snprintf(err, errlen, "[kernels] authors: more than %u %s", AUTHORS_MAX,
                    group ? "groups" : "users"),
           -1;
  (group ? a->gids : a->uids)[(*cnt)++] = id;
  return 0;
}

int authors_parse(struct authors *a, const char *spec, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  char *buf = strdup(spec);
  if (!buf) return snprintf(err, errlen, "out of memory"), -1;
  int r = 0;
  for (char *save = NULL, *t = strtok_r(buf, ", \t", &save); t && !r;
       t = strtok_r(NULL, ", \t", &save))
    r = add_one(a, t, err, errlen);
  free(buf);
  if (r) memset(a, 0, sizeof *a);
  return r;
}

static int has(const uint32_t *v, unsigned n, uint32_t x) {
  for (unsigned i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}

int peer_in_group(int fd, uint32_t gid) {
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.gid == gid) return 1;
  /* the groups the peer had when it connected, as the kernel recorded them */
  gid_t g[256];
  len = sizeof g;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) return 0;
  for (size_t i = 0; i < len / sizeof *g; i++)
    if ((uint32_t)g[i] == gid) return 1;
  return 0;
}

int authors_allow(const struct authors *a, int fd, uint32_t uid) {
  if (has(a->uids, a->nuids, uid)) return 1;
  for (unsigned i = 0; i < a->ngids; i++)
    if (peer_in_group(fd, a->gids[i])) return 1;
  return 0;
}
