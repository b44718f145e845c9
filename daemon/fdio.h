/*
 * fdio.h: whole reads and writes of a descriptor at an offset, for job
 * buffers in memfds (a client's, or one coopd made). pread/pwrite, retried
 * on EINTR and short counts; never mmap: a client that truncates its memfd
 * would raise SIGBUS in whoever mapped it.
 */
#ifndef COOPD_FDIO_H
#define COOPD_FDIO_H

#include <stdint.h>

/* 0, or -1 on an error or an end of file before n bytes. */
int fdio_pread(int fd, void *p, uint64_t n, uint64_t at);
int fdio_pwrite(int fd, const void *p, uint64_t n, uint64_t at);

#endif /* COOPD_FDIO_H */
