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

struct coop_kernel_def;

struct kdef {
  char name[COOP_WIRE_NAME_MAX];
  int cooperative;
  unsigned nargs;
  uint8_t types[COOP_WIRE_MAX_ARGS];     /* enum coop_arg_type */
  char argnames[COOP_WIRE_MAX_ARGS][32]; /* "" when unnamed */
  uint8_t elems[COOP_WIRE_MAX_ARGS];     /* enum coop_elem_type: buf<T>'s T */
  struct req_rule rules[KDEF_MAX_RULES];
  unsigned nrules;
  char *source;
  /* the functions its source defines at file scope (coop_kernel_defs),
   * sorted by name (coop_kernel_defs_sort),
   * read once at its add: the next kernel's check against every kernel of
   * the set (kset.c, check_clash) reads no source again */
  struct coop_kernel_def *defs;
  int ndefs;
  char path[1024]; /* what messages name it by: its file, or an author's name for it */
  uint32_t owner;  /* KDEF_SHIPPED, or the uid of the author who added it (kstore.h) */
  /* every buffer and scratch access through a view (kviews.h): required
   * of an author's kernel, found or not in a shipped one. Its tasks
   * cannot write past a buffer (a view sends such a write to its sink),
   * so the guard zones of the device buffers they use are not read after
   * each task: on a GPU that read moved the page the buffer's edge shares
   * with its guard to the host, and the next task faulted it back,
   * hundreds of microseconds of every frame (docs/daemon.md, "Device
   * buffers") */
  int views;
};
#define KDEF_SHIPPED 0xffffffffu

struct kset {
  struct kdef *k;
  unsigned n;
};

/* Loads dirs (colon-separated). On error returns -1 with a message naming
 * the file and the problem; s is then empty. */
int kset_load(struct kset *s, const char *dirs, char *err, size_t errlen);
void kset_free(struct kset *s);
/* Adds one kernel from its source (taken: freed on error too): parsed,
 * checked as kset_load checks a file (an author's also by kviews.h), and
 * refused if its name is taken. Messages start with "PATH:LINE: " (path:
 * what to name it by). 0, or -1 with err; with dup set, a name taken is
 * -2 and *dup the kernel that has it. */
int kset_add_source(struct kset *s, const char *path, char *src, uint32_t owner,
                    const struct kdef **dup, char *err, size_t errlen);
/* A kernel file's source (at most 1 MiB), opened without blocking or
 * following a symlink: 0 with *src (malloc'd, NUL-terminated), 1 when it
 * is no regular file (skipped, with a warning), or -1 with err. */
int kset_read_file(const char *path, char **src, char *err, size_t errlen);
/* The kernel at i removed (its source freed); the others keep their order. */
void kset_remove(struct kset *s, unsigned i);
const struct kdef *kset_find(const struct kset *s, const char *name);
/* 1 when s holds a kernel an author added. */
int kset_authored(const struct kset *s);
/* The authors' kernels that a failed build's log names as compilers name
 * a file (FILE:LINE or FILE(LINE), where a line or a word starts), other
 * than the one named keep (NULL: none) and those running (NULL: none)
 * holds as they are, removed from s and each logged with the log's line:
 * a kernel stored long ago that no longer builds (the rules or the
 * compiler changed since) costs only itself, never the other authors'
 * kernels. An ADD passes the running set: a kernel that builds there
 * fails now for the newcomer (one that defines its function's name
 * before it), and the ADD fails, not it. How many were removed: 0 when
 * the log names none. */
unsigned kset_drop_failing(struct kset *s, const char *log, const char *keep,
                           const struct kset *running);
/* 0 when scalars bits[] and buffer lengths lens[] meet every rule of k;
 * else -1 with the first broken rule and its values in why. */
int kdef_admit(const struct kdef *k, const uint64_t *bits, const uint64_t *lens, char *why,
               size_t whylen);

#endif /* COOPD_KSET_H */
