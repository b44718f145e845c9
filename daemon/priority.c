/*
 * priority.c: see priority.h. priority_users is a list of entries
 * "WHO:N" separated by spaces or commas; WHO is a user name, a uid, or
 * @GROUP (a group name or gid), N is 0..COOP_PRIORITY_MAX. A user may ask
 * the highest N of the entries naming it or one of its groups, and never
 * less than max_priority. Names are looked up when a job asks for more
 * than max_priority (the loop thread, once per such SUBMIT): a user added
 * to a group counts from its next job, as for the socket's permissions.
 */
#define _GNU_SOURCE /* getgrouplist */
#include "priority.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "wire.h"

#define PRIO_MAX_GROUPS 256

/* The next entry of *s: WHO into who, N into *n. 1, 0 at the end, -1 when
 * it does not parse. */
static int next_entry(const char **s, char *who, size_t wholen, long *n) {
  const char *p = *s + strspn(*s, " ,\t");
  if (!*p) return 0;
  size_t len = strcspn(p, " ,\t");
  *s = p + len;
  const char *colon = memchr(p, ':', len);
  if (!colon || colon == p || (size_t)(colon - p) >= wholen) return -1;
  memcpy(who, p, (size_t)(colon - p));
  who[colon - p] = '\0';
  char num[16];
  size_t nl = len - (size_t)(colon - p) - 1;
  if (nl == 0 || nl >= sizeof num) return -1;
  memcpy(num, colon + 1, nl);
  num[nl] = '\0';
  char *end;
  *n = strtol(num, &end, 10);
  if (*end || *n < 0 || *n > COOP_PRIORITY_MAX) return -1;
  return 1;
}

int priority_check(const char *spec, char *err, size_t errlen) {
  char who[128];
  long n;
  int r;
  const char *s = spec;
  while ((r = next_entry(&s, who, sizeof who, &n)) > 0)
    if (!strcmp(who, "@")) r = -1;
  if (r < 0) {
    snprintf(err, errlen,
             "[limits] priority_users: \"%s\": want entries NAME:N, UID:N or @GROUP:N "
             "(N 0..%d) separated by spaces or commas",
             spec, COOP_PRIORITY_MAX);
    return -1;
  }
  return 0;
}

static int all_digits(const char *s) { return *s && strspn(s, "0123456789") == strlen(s); }

/* Whether WHO (no @) names uid. */
static int names_user(const char *who, uint32_t uid, const struct passwd *pw) {
  if (all_digits(who)) return strtoul(who, NULL, 10) == uid;
  return pw && !strcmp(pw->pw_name, who);
}

/* Whether GROUP names one of the gids. */
static int names_group(const char *group, const gid_t *gids, int ngids) {
  gid_t g;
  if (all_digits(group)) {
    g = (gid_t)strtoul(group, NULL, 10);
  } else {
    struct group *gr = getgrnam(group);
    if (!gr) return 0;
    g = gr->gr_gid;
  }
  for (int i = 0; i < ngids; i++)
    if (gids[i] == g) return 1;
  return 0;
}

int priority_max(const struct config *c, uint32_t uid) {
  int best = (int)c->max_priority;
  if (!c->priority_users[0]) return best;
  struct passwd *pw = getpwuid(uid);
  gid_t gids[PRIO_MAX_GROUPS];
  int ngids = 0;
  if (pw) {
    ngids = PRIO_MAX_GROUPS;
    if (getgrouplist(pw->pw_name, pw->pw_gid, gids, &ngids) < 0) ngids = PRIO_MAX_GROUPS;
  }
  char who[128];
  long n;
  const char *s = c->priority_users;
  while (next_entry(&s, who, sizeof who, &n) > 0) {
    int match = who[0] == '@' ? names_group(who + 1, gids, ngids) : names_user(who, uid, pw);
    if (match && n > best) best = (int)n;
  }
  return best;
}
