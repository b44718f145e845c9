/*
 * subids.h: subordinate user ids (docs/daemon.md, "Users with ranges of
 * ids"). /etc/subuid gives users ranges of ids for their user namespaces
 * (rootless containers: newuidmap maps them). A process in such a
 * namespace reaches coopd's socket with an id of its owner's range, each
 * id a uid of its own to SO_PEERCRED, so one user with a range of 65536
 * ids had 65536 times every per-uid bound. coopd takes every id of a range
 * as one user, and every range of one owner (as the file names it) too:
 * the first id of the owner's first range in the file. That user's
 * connections, jobs, bytes, slots and priority are counted, owned and
 * shown as that id's.
 *
 * Not the range's owner: the owner may be root (a container manager's
 * ranges are root's), whose uid sees every job, and counting a range with
 * its owner would let a container's processes use up the owner's own
 * bounds (max_clients_per_uid), locking the owner out.
 */
#ifndef COOPD_SUBIDS_H
#define COOPD_SUBIDS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SUBIDS_MAX_BYTES (16u << 20) /* the file; /etc/subuid of 100k users is ~3 MiB */

struct subid_range {
  uint32_t first, count;
  uint32_t user; /* the first id of its owner's first range in the file */
};

struct subids {
  unsigned n;
  /* by first id where no two overlap (sorted: each connection's look is a
   * binary search, not a walk of every user's range); else in the file's
   * order, where the first range holding an id counts */
  struct subid_range *r;
  int sorted;
};

/* [limits] subordinate_ids: the file at path ("" or "off": none) read
 * into s. A missing file is no ranges, and so is one coopd may not read
 * (a warning says so). The file must be root's or coopd's
 * user's and writable by no one else, in directories no other user can
 * write (paths.h): a user who could edit it could take their range out.
 * A line that is not OWNER:FIRST:COUNT (newuidmap cannot use it either),
 * or whose range holds id 0 or runs past 2^32, is skipped with a warning.
 * 0, or -1 with err (s then empty). */
int subids_read(uv_loop_t *loop, struct subids *s, const char *path, char *err, size_t errlen);
void subids_free(struct subids *s);

/* The user coopd takes uid for: the user of the first range holding it,
 * else uid itself. */
uint32_t subids_user(const struct subids *s, uint32_t uid);

#endif /* COOPD_SUBIDS_H */
