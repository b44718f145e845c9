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
 * charged its time less its overlap with the span of the user's last
 * granted (the same threads spin for both: a loop of 1000 frames a second
 * has windows longer than its period). Before, it was charged only its
 * time past the end of the user's latest window, so a window earlier than
 * that (another loop of the user's, out of phase with a slow one) cost
 * nothing. A new entry starts full, and an entry that had a window stays
 * (uid_put): a reconnection refilled it. */
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
  int64_t charge = to > from ? to - from : 0;
  if (from < u->warm_to && to > u->warm_from) { /* the overlap is paid: one span now */
    int64_t lo = from > u->warm_from ? from : u->warm_from, hi = to < u->warm_to ? to : u->warm_to;
    charge -= hi - lo;
    if (u->warm_from < from) from = u->warm_from;
    if (u->warm_to > to) to = u->warm_to;
  }
  u->warm_left -= charge;
  u->warm_from = from;
  u->warm_to = to;
  return 1;
}

void uid_put(struct daemon *dm, struct uid_use *u) {
  /* one that had a warm window stays (uid_warm_grant): bounded by the
   * machine's users, as their budgets are */
  if (!u || u->conns || u->live || u->kept || u->bufs || u->bytes || u->warm_at ||
      u->reload_next > coop__now_ns())
    return;
  for (struct uid_use **p = &dm->uids; *p; p = &(*p)->next)
    if (*p == u) {
      *p = u->next;
      free(u);
      return;
    }
}
