/*
 * priority.c: see priority.h. priority_users is a list of entries "WHO:N"
 * separated by spaces or commas; WHO is a user name, a uid, or @GROUP (a
 * group name or gid; authors.c, who_parse), N is 0..COOP_PRIORITY_MAX. A
 * user may ask the highest N of the entries naming it or one of its
 * groups, and never less than max_priority.
 */
#include "priority.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authors.h"
#include "wire.h"

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
  if (*end || *n < 0 || *n > COOP_PRIORITY_MAX || !strcmp(who, "@")) return -1;
  return 1;
}

static int bad_spec(const char *spec, char *err, size_t errlen) {
  snprintf(err, errlen,
           "[limits] priority_users: \"%s\": want entries NAME:N, UID:N or @GROUP:N "
           "(N 0..%d) separated by spaces or commas",
           spec, COOP_PRIORITY_MAX);
  return -1;
}

int priority_check(const char *spec, char *err, size_t errlen) {
  char who[128];
  long n;
  int r;
  const char *s = spec;
  while ((r = next_entry(&s, who, sizeof who, &n)) > 0) {
  }
  return r < 0 ? bad_spec(spec, err, errlen) : 0;
}

int priority_parse(struct priority_rules *p, const char *spec, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  char who[128];
  long n;
  int r;
  const char *s = spec;
  while ((r = next_entry(&s, who, sizeof who, &n)) > 0) {
    if (p->n == PRIORITY_MAX_RULES) {
      snprintf(err, errlen, "[limits] priority_users: more than %u entries", PRIORITY_MAX_RULES);
      r = -2;
      break;
    }
    if (who_parse(who, "[limits] priority_users", &p->r[p->n].group, &p->r[p->n].id, err, errlen)) {
      r = -2;
      break;
    }
    p->r[p->n++].most = (int)n;
  }
  if (r == -1) bad_spec(spec, err, errlen);
  if (r < 0) memset(p, 0, sizeof *p);
  return r < 0 ? -1 : 0;
}

int priority_max(const struct priority_rules *p, unsigned max_priority, int fd, uint32_t uid) {
  int best = (int)max_priority;
  for (unsigned i = 0; i < p->n; i++)
    if (p->r[i].most > best && (p->r[i].group ? peer_in_group(fd, p->r[i].id) : p->r[i].id == uid))
      best = p->r[i].most;
  return best;
}
