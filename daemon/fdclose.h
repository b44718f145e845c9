/*
 * fdclose.h: letting go of clients' descriptors without waiting for their
 * filesystems (docs/daemon.md, "Descriptors from clients"). A close of a
 * descriptor asks its file's filesystem to flush and waits for the
 * answer, and a filesystem that a process serves (FUSE) answers when that
 * process likes; coopd's loop must not wait for a client. Descriptors
 * that cannot wait (fdio_closes_at_once) are closed at once; the others
 * go to a thread of their user's, which closes them one after another.
 * While one of a user's waits, the loop reads that user's connections
 * without taking their descriptors (the kernel drops them unopened, with
 * no flush), so that one user holds at most one thread and what a read
 * brought (sess_read).
 */
#ifndef COOPD_FDCLOSE_H
#define COOPD_FDCLOSE_H

#include <stdint.h>

/* Closes fd, a descriptor that uid's client (process pid) sent, now or
 * on uid's thread. */
void fdclose_client(int fd, uint32_t uid, uint32_t pid);
/* 1 while a close of one of uid's descriptors is waiting (or queued). */
int fdclose_pending(uint32_t uid);

#endif /* COOPD_FDCLOSE_H */
