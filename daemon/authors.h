/*
 * authors.h: who may add kernels ([kernels] authors): a list of user names,
 * uids and @groups, separated by commas or spaces; empty (the default):
 * nobody. Names are looked up when the settings are read (at start and on
 * SIGHUP), never while a client waits: a user's groups come from its
 * socket (SO_PEERCRED, SO_PEERGROUPS), not from a directory service. Root
 * may remove any author's kernel, but adds only if listed, like anyone.
 */
#ifndef COOPD_AUTHORS_H
#define COOPD_AUTHORS_H

#include <stddef.h>
#include <stdint.h>

#define AUTHORS_MAX 64

struct authors {
  unsigned nuids, ngids;
  uint32_t uids[AUTHORS_MAX];
  uint32_t gids[AUTHORS_MAX];
};

/* spec into a: 0, or -1 with err naming the user or group unknown. */
int authors_parse(struct authors *a, const char *spec, char *err, size_t errlen);

/* Whether the peer of socket fd (uid) may add kernels: its uid is listed,
 * or its primary or a supplementary group. */
int authors_allow(const struct authors *a, int fd, uint32_t uid);

/* One entry of such a list (of the setting `key`, for err): "NAME", "UID",
 * "@GROUP" or "@GID", looked up now: *group, *id. 0, or -1 with err
 * naming the user or group unknown. */
int who_parse(const char *t, const char *key, int *group, uint32_t *id, char *err, size_t errlen);
/* Whether the peer of socket fd is in group gid: its primary group or a
 * supplementary one, as the kernel recorded them when it connected. */
int peer_in_group(int fd, uint32_t gid);

#endif /* COOPD_AUTHORS_H */
