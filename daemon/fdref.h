/*
 * fdref.h: a descriptor shared between a connection and the jobs that name
 * it, closed by whichever lets it go last. A frame client's transfer memfd
 * (XFER) is named by every frame's job; a duplicate per job was a
 * fcntl(F_DUPFD) on the loop's path and a close on the device thread's,
 * each frame, and the fcntl alone took 4.3 us after a frame's idle spell
 * on an H200 (bench/RESULTS.md, "A warm copy engine"). A job holds a
 * reference instead.
 *
 * Any thread may hold or drop a reference it owns: the count is atomic,
 * and the drop that takes it to zero (acq_rel: every holder's use of the
 * descriptor before its drop happens before the close) returns the
 * descriptor for its caller to close.
 */
#ifndef COOPD_FDREF_H
#define COOPD_FDREF_H

#include <stdatomic.h>

struct fdref {
  atomic_uint refs;
  int fd;
};

/* A reference to fd (taken: the last drop closes it), or NULL out of memory. */
struct fdref *fdref_new(int fd);
/* One more reference, for a holder that already has one. */
void fdref_hold(struct fdref *r);
/* Lets one reference go: the descriptor, to close, when it was the last
 * (r then freed), else -1. */
int fdref_drop(struct fdref *r);

#endif /* COOPD_FDREF_H */
