/*
 * priority.h: the priorities a user may give its jobs (docs/daemon.md,
 * "Priority"): [limits] max_priority for every uid, more for the users and
 * groups priority_users names.
 */
#ifndef COOPD_PRIORITY_H
#define COOPD_PRIORITY_H

#include <stddef.h>
#include <stdint.h>

struct config;

/* Whether spec ([limits] priority_users) parses: 0, or -1 with why in err. */
int priority_check(const char *spec, char *err, size_t errlen);
/* The highest priority uid may ask under c: max_priority, or the highest
 * entry of priority_users naming uid, its name or one of its groups. */
int priority_max(const struct config *c, uint32_t uid);

#endif /* COOPD_PRIORITY_H */
