/*
 * kstore.h: the kernels authors added, kept in a directory of coopd's own
 * ([kernels] authored_dir; docs/kernels.md, "Adding a kernel without
 * root"). Kernel NAME is two files there, both named from the validated
 * kernel name only (never from what a client sends otherwise):
 *   NAME.cl     the source exactly as the author sent it (so that its
 *               lines are the author's lines);
 *   NAME.owner  one line "UID FILE": its author's uid, and the name the
 *               author gave the file, which messages name it by.
 * The directory is created 0700 and must stay owned by coopd's user and
 * closed to everyone else: a file another user could put there would be
 * compiled as someone's kernel. Writes go to a temporary name first and
 * are renamed into place, so a crash leaves the old kernel or the new one.
 */
#ifndef COOPD_KSTORE_H
#define COOPD_KSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "kset.h"

/* Creates dir (and its parent) 0700 if missing; 0 when it is a directory
 * owned by this process's user with no access for group or others, else
 * -1 with why. */
int kstore_prepare(const char *dir, char *err, size_t errlen);

/* Appends every kernel of dir to s, with its owner and its author's file
 * name. A kernel that does not load (a shipped kernel took its name since,
 * a file lost its pair) is logged and left out: an author's file never
 * stops coopd or a reload. A missing dir holds none. 0, or -1 with err
 * (the directory cannot be trusted or read). */
int kstore_load(struct kset *s, const char *dir, char *err, size_t errlen);

/* Stores kernel `name` of owner (source of len bytes, file: the author's
 * name for it), replacing one of that name. 0, or -1 with err. */
int kstore_write(const char *dir, const char *name, uint32_t owner, const char *file,
                 const char *src, size_t len, char *err, size_t errlen);

/* Whether kernel `name` is stored (its source is there): 1, *owner the
 * uid its NAME.owner names; -1 when that is not readable; 0: not stored. */
int kstore_has(const char *dir, const char *name, uint32_t *owner);

/* Removes kernel `name`. 0, or -1 with err. */
int kstore_remove(const char *dir, const char *name, char *err, size_t errlen);

#endif /* COOPD_KSTORE_H */
