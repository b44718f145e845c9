/*
 * kset.h: the kernel set (struct kset), coopd's registry of kernels. coopd loads every *.cl file of
 * the configured directories; each starts with a directive line
 *   //@coop name=NAME kind=cooperative|noncooperative args=[ARG:]TYPE,...
 * (TYPE: u32 i32 u64 i64 f32 f64 buf; ARG an optional name), which gives
 * the kernel's name, its kind, and the signature the daemon checks every
 * submission against; then any number of admission rules, one a line,
 *   //@coop require n*4 <= len(data)
 * (require.h), checked against every submission's scalars and buffer sizes.
 * The sources themselves follow docs/kernels.md.
 */
#ifndef COOPD_KSET_H
#define COOPD_KSET_H

#include <stddef.h>
#include <stdint.h>

#include "require.h"
#include "wire.h"

#define KDEF_MAX_RULES 16

struct kdef {
  char name[COOP_WIRE_NAME_MAX];
  int cooperative;
  unsigned nargs;
  uint8_t types[COOP_WIRE_MAX_ARGS];     /* enum coop_arg_type */
  char argnames[COOP_WIRE_MAX_ARGS][32]; /* "" when unnamed */
  struct req_rule rules[KDEF_MAX_RULES];
  unsigned nrules;
  char *source;
  char path[1024];
};

struct kset {
  struct kdef *k;
  unsigned n;
};

/* Loads dirs (colon-separated). On error returns -1 with a message naming
 * the file and the problem; s is then empty. */
int kset_load(struct kset *s, const char *dirs, char *err, size_t errlen);
void kset_free(struct kset *s);
const struct kdef *kset_find(const struct kset *s, const char *name);
/* 0 when scalars bits[] and buffer lengths lens[] meet every rule of k;
 * else -1 with the first broken rule and its values in why. */
int kdef_admit(const struct kdef *k, const uint64_t *bits, const uint64_t *lens, char *why,
               size_t whylen);

#endif /* COOPD_KSET_H */
