/*
 * fuse_stall.h: a one-file FUSE filesystem served by a child of the test,
 * which can stop answering (tests only). A client may hand coopd a
 * descriptor of a file on a filesystem that a process of its own serves
 * (FUSE, with user_allow_other); every call that reaches that filesystem
 * (fstat, read) then waits for that process for as long as it likes.
 */
#ifndef COOP_TEST_FUSE_STALL_H
#define COOP_TEST_FUSE_STALL_H

#include <stddef.h>

struct fuse_stall;

/* Mounts the filesystem at a new directory under /tmp, its one file "f"
 * of `size` bytes (each byte its offset's low 8 bits). NULL, with why
 * filled, where this machine cannot (no /dev/fuse, no right to mount). */
struct fuse_stall *fuse_stall_mount(size_t size, char *why, size_t whylen);
/* The file's path. */
const char *fuse_stall_path(const struct fuse_stall *f);
/* For the next ms milliseconds no request is answered, but FLUSH and
 * RELEASE (a close's) unless `flush`: the first waits that long, and those
 * after it behind it (bounded, so that a test that fails does not leave a
 * call waiting for ever). */
void fuse_stall_stop_answering(struct fuse_stall *f, unsigned ms, int flush);
/* Requests answered or left waiting since the mount. */
unsigned fuse_stall_requests(const struct fuse_stall *f);
/* Aborts the connection (every waiting call fails), unmounts, frees. */
void fuse_stall_unmount(struct fuse_stall *f);

#endif
