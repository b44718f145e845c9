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

/* A warm window (docs/daemon.md, "Spinning") has three of coopd's threads
 * spin for a guess at a user's next frame: a frame loop of a few hundred
 * frames a second had them spin for ever. So a user's windows may take
 * percent of the time: a budget that fills at that rate, up to percent of
 * UID_WARM_SPAN_NS, and a window is granted while it is not owed (it may
 * then go below 0 by that window, which later time pays back). A window is
 * charged only the time past the user's windows granted before (the same
 * threads spin for both: a loop of 1000 frames a second has windows longer
 * than its period). A new entry starts full. */
#define UID_WARM_SPAN_NS 1000000000LL
int uid_warm_grant(struct uid_use *u, int64_t now, int64_t from, int64_t to, unsigned percent) {
  if (percent >= 100) return 1;
  int64_t cap = UID_WARM_SPAN_NS / 100 * percent;
  if (!u->warm_at)
    u->warm_left = cap;
  else if (now > u->warm_at)
    u->warm_left += (now - u->warm_at) / 100 * percent;
  if (u->warm_left > cap) u->warm_left = cap;
  u->warm_at = now;
  if (!percent || u->warm_left < 0) return 0;
  if (from < u->warm_to) from = u->warm_to;
  if (to > from) u->warm_left -= to - from;
  if (to > u->warm_to) u->warm_to = to;
  return 1;
}

void uid_put(struct daemon *dm, struct uid_use *u) {
  if (!u || u->conns || u->live || u->kept || u->bufs || u->bytes ||
      u->reload_next > coop__now_ns())
    return;
  for (struct uid_use **p = &dm->uids; *p; p = &(*p)->next)
    if (*p == u) {
      *p = u->next;
      free(u);
      return;
    }
}
