/* fdio.c: see fdio.h. */
#define _GNU_SOURCE /* F_GET_SEALS */
#include "fdio.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Filesystems whose files only the kernel serves. The last, overlay,
 * only where coopd's own namespace holds the mount: a user namespace may
 * mount an overlay over a FUSE filesystem (on_local_fs). */
static const char *const local_fs[] = {"tmpfs", "ramfs", "hugetlbfs", "ext2", "ext3",
                                       "ext4",  "xfs",   "btrfs",     "f2fs", "overlay"};
#define N_LOCAL_FS (sizeof local_fs / sizeof *local_fs)
/* the lines of a client's mountinfo looked through (a container has tens) */
#define FDIO_PEER_MOUNTS_MAX 1024u

/* The mount id of fd's file (/proc/self/fdinfo), or -1. */
static long mount_id(int fd) {
  char path[48], buf[512];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(path, "re");
  long id = -1;
  while (f && fgets(buf, sizeof buf, f))
    if (sscanf(buf, "mnt_id: %ld", &id) == 1) break;
  if (f) fclose(f);
  return id;
}

/* The type of mount id in the mountinfo file `path` ("ID PARENT ... -
 * TYPE SOURCE OPTIONS"), among its first `most` lines, into type; 0 or
 * -1. */
static int mount_type(const char *path, long id, char *type, size_t n, unsigned most) {
  FILE *f = fopen(path, "re");
  char *line = NULL;
  size_t cap = 0;
  int found = -1;
  for (unsigned seen = 0; f && found && seen < most && getline(&line, &cap, f) > 0; seen++) {
    char *dash = strstr(line, " - ");
    if (strtol(line, NULL, 10) != id || !dash) continue;
    size_t k = strcspn(dash + 3, " \n");
    snprintf(type, n, "%.*s", (int)k, dash + 3);
    found = 0;
  }
  free(line);
  if (f) fclose(f);
  return found;
}

static int listed(const char *type, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(type, local_fs[i])) return 1;
  return 0;
}

/* Whether fd's file is of a filesystem in local_fs (type filled). A mount
 * that coopd's namespace lacks is looked for in the mount namespace of
 * process pid (the client's: a container's has mounts of its own, each
 * with an id of its own); mount ids are the system's, and an open file
 * keeps its mount, so whichever process's list names the id tells its
 * type. A mount there may be a user namespace's: tmpfs, ramfs or an
 * overlay, which may lie over a FUSE filesystem (so not that). */
static int on_local_fs(int fd, uint32_t pid, char *type, size_t n) {
  long id = mount_id(fd);
  if (id < 0) return 0;
  if (!mount_type("/proc/self/mountinfo", id, type, n, UINT_MAX)) return listed(type, N_LOCAL_FS);
  /* the client's own list is as long as it makes it (a user namespace
   * may hold many thousands of mounts), and it is read on the loop */
  char path[48];
  snprintf(path, sizeof path, "/proc/%u/mountinfo", pid);
  return pid && !mount_type(path, id, type, n, FDIO_PEER_MOUNTS_MAX) &&
         listed(type, N_LOCAL_FS - 1);
}

int fdio_closes_at_once(int fd, uint32_t pid) {
  if (fcntl(fd, F_GET_SEALS) >= 0) return 1;
  char path[48], link[64], type[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n < 0) return 0;
  link[n] = '\0';
  /* not a socket: the last close of one with SO_LINGER waits out its
   * linger for unsent bytes, and a client may close its own copy first */
  if (!strncmp(link, "pipe:", 5) || !strncmp(link, "anon_inode:", 11)) return 1;
  return on_local_fs(fd, pid, type, sizeof type);
}

int fdio_privileged(void) {
  static int known = -1;
  if (known < 0) {
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct c[2];
    int res = syscall(SYS_capget, &h, c) == 0 &&
              (c[CAP_SYS_RESOURCE / 32].effective >> (CAP_SYS_RESOURCE % 32)) & 1u;
    known = res || geteuid() == 0; /* a root fsuid takes a disk's reserve for root */
  }
  return known;
}

/* The memory filesystems of local_fs: their writes take no disk blocks */
static int in_memory(const char *type) {
  return !strcmp(type, "tmpfs") || !strcmp(type, "ramfs") || !strcmp(type, "hugetlbfs");
}

static int client_file(int fd, uint32_t pid, int out, struct stat *st, char *why, size_t whylen) {
  char type[64] = "";
  /* a memfd or a tmpfs file (shmem) answers F_GET_SEALS, others EINVAL,
   * without their filesystem's code */
  int shmem = fcntl(fd, F_GET_SEALS) >= 0;
  if (!shmem && !on_local_fs(fd, pid, type, sizeof type)) {
    if (type[0])
      snprintf(why, whylen, "a file of a %s filesystem, which a process may serve", type);
    else
      snprintf(why, whylen, "not a file (or of no filesystem this process sees)");
    return -1;
  }
  if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
    snprintf(why, whylen, "not a regular file");
    return -1;
  }
  if (out && !shmem && !in_memory(type) && fdio_privileged()) {
    snprintf(why, whylen, "a file on a disk (%s), " FDIO_DISK_WHY, type);
    return FDIO_DISK;
  }
  return 0;
}

int fdio_client_file(int fd, uint32_t pid, struct stat *st, char *why, size_t whylen) {
  return client_file(fd, pid, 0, st, why, whylen);
}

int fdio_client_out(int fd, uint32_t pid, struct stat *st, char *why, size_t whylen) {
  return client_file(fd, pid, 1, st, why, whylen);
}

int fdio_pread(int fd, void *p, uint64_t n, uint64_t at) {
  for (uint64_t off = 0; off < n;) {
    ssize_t r = pread(fd, (char *)p + off, n - off, (off_t)(at + off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    off += (uint64_t)r;
  }
  return 0;
}

int fdio_pwrite(int fd, const void *p, uint64_t n, uint64_t at) {
  for (uint64_t off = 0; off < n;) {
    ssize_t r = pwrite(fd, (const char *)p + off, n - off, (off_t)(at + off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    off += (uint64_t)r;
  }
  return 0;
}
