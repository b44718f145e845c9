/*
 * users.c: what each uid holds in coopd (struct uid_use, daemon.h),
 * counted over all its connections so that reconnecting escapes no limit
 * (docs/faults.md, "Resources a client can exhaust", rows 4 and 6-9). An
 * entry lives while any count is non-zero.
 */
#include <stdlib.h>

#include "daemon.h"

struct uid_use *uid_find(struct daemon *dm, uint32_t uid) {
  for (struct uid_use *u = dm->uids; u; u = u->next)
    if (u->uid == uid) return u;
  return NULL;
}

struct uid_use *uid_get(struct daemon *dm, uint32_t uid) {
  struct uid_use *u = uid_find(dm, uid);
  if (u) return u;
  u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->uid = uid;
  u->next = dm->uids;
  dm->uids = u;
  return u;
}

void uid_put(struct daemon *dm, struct uid_use *u) {
  if (!u || u->conns || u->live || u->kept || u->bufs || u->bytes) return;
  for (struct uid_use **p = &dm->uids; *p; p = &(*p)->next)
    if (*p == u) {
      *p = u->next;
      free(u);
      return;
    }
}
