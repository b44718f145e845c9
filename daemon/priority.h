/*
 * priority.h: the priorities a user may give its jobs (docs/daemon.md,
 * "Priority"): [limits] max_priority for every uid, more for the users and
 * groups priority_users names. Names are looked up when the settings are
 * read (at start and on SIGHUP), never while a client waits: a user's
 * groups come from its socket, as for kernel authors (authors.h).
 */
#ifndef COOPD_PRIORITY_H
#define COOPD_PRIORITY_H

#include <stddef.h>
#include <stdint.h>

#define PRIORITY_MAX_RULES 64

struct priority_rules {
  unsigned n;
  struct {
    int group;   /* id is a gid */
    uint32_t id; /* else a uid */
    int most;    /* the priority it may ask */
  } r[PRIORITY_MAX_RULES];
};

/* Whether spec ([limits] priority_users) parses, names unresolved (the
 * settings' own check): 0, or -1 with why in err. */
int priority_check(const char *spec, char *err, size_t errlen);
/* spec into p, names looked up: 0, or -1 with err (p then empty). */
int priority_parse(struct priority_rules *p, const char *spec, char *err, size_t errlen);
/* The highest priority the peer of socket fd (uid) may ask: max_priority,
 * or the highest rule naming its uid, its primary or a supplementary
 * group. */
int priority_max(const struct priority_rules *p, unsigned max_priority, int fd, uint32_t uid);

#endif /* COOPD_PRIORITY_H */
