/*
 * journal.h: what coopd remembers across a crash (docs/faults.md, "Daemon
 * crash, stop and reload").
 *
 * A job lives in coopd's memory and on the device; neither survives coopd.
 * coopd does not resume jobs after a restart (their buffers, their place in
 * a periodic series and the device state are gone); it reports them lost.
 * To do that it appends one line per accepted job and one per finished job
 * to a small file; the next coopd reads it at start: a job accepted and
 * never finished was lost, and STATUS, WAIT and CANCEL of its id answer
 * ELOST (to its owner, or root) instead of ENOJOB. Job ids also continue
 * after every id an earlier coopd may have given out, so an old id never
 * names a new job.
 *
 * The file is text, one record per line, read with distrust (docs/faults.md,
 * "Resources a client can exhaust", row 10: the file must be a regular file
 * of coopd's uid that no one else may write; a line that does not parse
 * strictly, or names job 0 or an id past JOURNAL_ID_MAX, is logged and
 * skipped, never trusted):
 *     coop-journal 1          first line
 *     N <id>                  ids up to this one may have been given out
 *     A <id> <uid> <kernel>   accepted
 *     F <id>                  finished (any final state)
 *     L <id> <uid> <kernel>   lost in an earlier crash, kept for reconnecting
 *                             clients (the newest JOURNAL_LOST_MAX)
 *
 * Ids are reserved ahead in blocks (the same table, row 11): no id past
 * the last N known synced is given out, so that ids stay unique even when
 * later records never reach the disk. Half a block before it, an N record
 * JOURNAL_ID_BLOCK further is appended and synced in the background, as
 * A and F records are (a libuv work thread, one sync at a time); the loop
 * thread waits for a sync only where ids come faster than one (half a
 * block of jobs within a sync's time), and for a rewrite's (below, once
 * per JOURNAL_COMPACT_BYTES of records). Before, every block's N was
 * synced on the loop (test_journal.c).
 *
 * At start, and whenever appends pass JOURNAL_COMPACT_BYTES, it is rewritten
 * (a temporary file of mkstemp's name beside it, synced, renamed over it)
 * with N, the L records and one A record per job still open. A rewrite
 * that fails compacts the file in place instead, and is tried again after
 * as many appends; a start removes coopd's own temporary files that a
 * crash left.
 *
 * A journal that cannot be written (a full disk) does not stop coopd: when
 * an append fails, the file is compacted in place (written over from its
 * start, never longer than it was, so no new disk block is needed) and
 * every later change does the same until appends work again; a finished
 * job is therefore not reported lost after a crash, and the N mark stays.
 * If even that fails coopd runs without a journal, and says so in its log.
 */
#ifndef COOPD_JOURNAL_H
#define COOPD_JOURNAL_H

#include <stdint.h>
#include <uv.h>

#include "wire.h"

#define JOURNAL_LOST_MAX 1024
#define JOURNAL_COMPACT_BYTES (1u << 20)
#define JOURNAL_ID_BLOCK 4096u
#define JOURNAL_ID_MAX (1ull << 53) /* a larger id is forged: ids grow by one per job */

struct journal;

struct journal_lost {
  uint64_t id;
  uint32_t uid;
  char kernel[COOP_WIRE_NAME_MAX];
};

/* Opens the journal at path (creating it, mode 0600), reads what an earlier
 * coopd left, and rewrites it. *last_id gets the id after which new ones
 * start (0 for a new journal). Returns 0, or -1 with err when the file is
 * not one coopd may trust (a symlink, a FIFO or other non-regular file,
 * another uid's, writable by others, not a journal): coopd refuses to start
 * then. A journal that cannot be written is not an error (see above). */
int journal_open(struct journal **jp, uv_loop_t *loop, const char *path, uint64_t *last_id,
                 char *err, size_t errlen);
void journal_accepted(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel);
void journal_finished(struct journal *jn, uint64_t id);
/* The lost job with this id, or NULL. */
const struct journal_lost *journal_find_lost(const struct journal *jn, uint64_t id);
unsigned journal_nlost(const struct journal *jn);
/* "ok", "compacting in place (appends fail)" or "off (cannot be written)". */
const char *journal_state(const struct journal *jn);
/* At a clean stop: every job has finished; records the last id, frees. */
void journal_close(struct journal *jn, uint64_t last_id);

#endif /* COOPD_JOURNAL_H */
