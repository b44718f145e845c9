/*
 * fdio.h: whole reads and writes of a descriptor at an offset, for job
 * buffers in memfds (a client's, or one coopd made). pread/pwrite, retried
 * on EINTR and short counts; never mmap: a client that truncates its memfd
 * would raise SIGBUS in whoever mapped it.
 */
#ifndef COOPD_FDIO_H
#define COOPD_FDIO_H

#include <stddef.h>
#include <stdint.h>

struct stat;

/* A client's descriptor, before anything looks at its file: 0 with *st
 * filled when it is a regular file that no process serves (a memfd or
 * another file of tmpfs, or a file of a local disk's filesystem), else -1
 * (*why: what it is). pid: the client's process (its connection's peer),
 * whose mount namespace is looked in for a mount coopd's lacks (0: none).
 * fstat, a read or a mapping of a file that a process serves (FUSE, with
 * user_allow_other; a network filesystem) waits for that process, and
 * coopd's loop or device process with it, as long as it likes; the kind
 * is read where only the kernel answers: the memfd's seals,
 * /proc/self/fdinfo and /proc/PID/mountinfo (docs/daemon.md,
 * "Descriptors from clients"). */
int fdio_client_file(int fd, uint32_t pid, struct stat *st, char *why, size_t whylen);

/* As fdio_client_file, for a file coopd will write: FDIO_DISK (*why
 * saying so) where the file is on a disk (not tmpfs, ramfs or
 * hugetlbfs) and this process writes with privileges its clients may lack
 * (fdio_privileged): the blocks the write takes would pass the disk's
 * quotas and the reserve a disk keeps for root (docs/daemon.md,
 * "Descriptors from clients"). */
#define FDIO_DISK (-2)
/* What such a refusal says of the file, and what to do instead */
#define FDIO_DISK_WHY "which coopd, run as root, would fill past its quotas and root's reserve"
#define FDIO_DISK_DO \
  "pass a memfd or a tmpfs file (or run coopd as its service user, coopd.service)"
int fdio_client_out(int fd, uint32_t pid, struct stat *st, char *why, size_t whylen);

/* 1 when this process writes past quotas and root's reserve of a disk
 * (it runs as root, or has CAP_SYS_RESOURCE): coopd started as root,
 * not as its service user. Looked at once. */
int fdio_privileged(void);

/* 1 when closing fd cannot wait for another process: a memfd or tmpfs
 * file, a pipe, an anonymous inode (eventfd ...), a file of a local
 * disk's filesystem; else 0 (a close asks the file's filesystem to flush,
 * and one that a process serves answers when it likes; the last close of
 * a socket with SO_LINGER waits out its linger: fdclose.h).
 * Looks as fdio_client_file does. */
int fdio_closes_at_once(int fd, uint32_t pid);

/* 0, or -1 on an error or an end of file before n bytes. */
int fdio_pread(int fd, void *p, uint64_t n, uint64_t at);
int fdio_pwrite(int fd, const void *p, uint64_t n, uint64_t at);

#endif /* COOPD_FDIO_H */
