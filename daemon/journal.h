/*
 * journal.h: what coopd remembers across a crash (issue 7, docs/faults.md).
 *
 * A job lives in coopd's memory and on the device; neither survives coopd.
 * coopd does not resume jobs after a restart (their buffers, their place in
 * a periodic series and the device state are gone); it reports them lost.
 * To do that it appends one line per accepted job and one per finished job
 * to a small file; the next coopd reads it at start: a job accepted and
 * never finished was lost, and STATUS, WAIT and CANCEL of its id answer
 * ELOST (to its owner, or root) instead of ENOJOB. Job ids also continue
 * from the last one, so an old id never names a new job.
 *
 * The file is text, one record per line, read with distrust (a bad line is
 * skipped with a warning, never trusted):
 *     coop-journal 1          first line
 *     N <last id>             the last job id given out
 *     A <id> <uid> <kernel>   accepted
 *     F <id>                  finished (any final state)
 *     L <id> <uid> <kernel>   lost in an earlier crash, kept for reconnecting
 *                             clients (the newest JOURNAL_LOST_MAX)
 * At start, and whenever appends pass JOURNAL_COMPACT_BYTES, it is rewritten
 * (a temporary file renamed over it) with N, the L records and one A record
 * per job still open. Writes are not fsync'ed: a crash of coopd keeps what
 * the kernel has; a crash of the machine loses the jobs anyway.
 */
#ifndef COOPD_JOURNAL_H
#define COOPD_JOURNAL_H

#include <stdint.h>
#include <uv.h>

#include "wire.h"

#define JOURNAL_LOST_MAX 1024
#define JOURNAL_COMPACT_BYTES (1u << 20)

struct journal;

struct journal_lost {
  uint64_t id;
  uint32_t uid;
  char kernel[COOP_WIRE_NAME_MAX];
};

/* Opens the journal at path (creating it, mode 0600; a symlink is refused),
 * reads what an earlier coopd left, and rewrites it. *last_id gets the
 * last job id given out (0 for a new journal). Returns 0 or -1 with err. */
int journal_open(struct journal **jp, uv_loop_t *loop, const char *path, uint64_t *last_id,
                 char *err, size_t errlen);
void journal_accepted(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel);
void journal_finished(struct journal *jn, uint64_t id);
/* The lost job with this id, or NULL. */
const struct journal_lost *journal_find_lost(const struct journal *jn, uint64_t id);
unsigned journal_nlost(const struct journal *jn);
/* At a clean stop: every job has finished; records the last id, frees. */
void journal_close(struct journal *jn, uint64_t last_id);

#endif /* COOPD_JOURNAL_H */
