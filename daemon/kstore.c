/* kstore.c: see kstore.h. */
#include "kstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_util.h"
#include "log.h"

int kstore_prepare(const char *dir, char *err, size_t errlen) {
  char parent[1024];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    if (mkdir(parent, 0700) && errno != EEXIST)
      return snprintf(err, errlen, "%s: %s", parent, strerror(errno)), -1;
  }
  if (mkdir(dir, 0700) && errno != EEXIST)
    return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
  struct stat st;
  if (lstat(dir, &st)) return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
  if (!S_ISDIR(st.st_mode)) return snprintf(err, errlen, "%s: not a directory", dir), -1;
  if (st.st_uid != geteuid() || (st.st_mode & 077))
    return snprintf(err, errlen,
                    "%s: must be owned by coopd's user (uid %u) with mode 0700 (it is uid %u, "
                    "mode %04o)",
                    dir, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777)),
           -1;
  return 0;
}

/* NAME.owner: "UID FILE". 0, or -1. */
static int read_owner(const char *dir, const char *name, uint32_t *uid, char *file, size_t len) {
  char path[1200], line[256];
  snprintf(path, sizeof path, "%s/%s.owner", dir, name);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, line, sizeof line - 1);
  close(fd);
  if (n <= 0) return -1;
  line[n] = '\0';
  unsigned long long u;
  int at = 0;
  if (sscanf(line, "%llu %n", &u, &at) != 1 || u >= 0xffffffffull || !at) return -1;
  line[strcspn(line, "\n")] = '\0';
  snprintf(file, len, "%s", line + at);
  *uid = (uint32_t)u;
  return file[0] ? 0 : -1;
}

/* One stored kernel into s; a failure is logged, not returned. */
static void load_stored(struct kset *s, const char *dir, const char *name) {
  char path[1200], file[COOP_NAME_MAX + 8], err[1400];
  uint32_t uid;
  if (read_owner(dir, name, &uid, file, sizeof file)) {
    log_warn("authored kernel %s/%s.cl has no readable %s.owner: left out", dir, name, name);
    return;
  }
  snprintf(path, sizeof path, "%s/%s.cl", dir, name);
  char *src;
  if (kset_read_file(path, &src, err, sizeof err)) {
    log_warn("authored kernel %s: %s: left out", path, err);
    return;
  }
  if (kset_add_source(s, file, src, uid, NULL, err, sizeof err)) {
    log_warn("authored kernel %s (uid %u): %s: left out", path, (unsigned)uid, err);
    return;
  }
  struct kdef *k = &s->k[s->n - 1];
  if (strcmp(k->name, name)) { /* renamed by hand: the file name is the key */
    log_warn("authored kernel %s declares name=%s: left out", path, k->name);
    kset_remove(s, s->n - 1);
  }
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int kstore_load(struct kset *s, const char *dir, char *err, size_t errlen) {
  struct stat st;
  if (lstat(dir, &st) && errno == ENOENT) return 0;
  if (kstore_prepare(dir, err, errlen)) return -1;
  DIR *d = opendir(dir);
  if (!d) return snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1;
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 3, ".cl") || l - 3 >= COOP_NAME_MAX) continue;
    char **nn = realloc(names, (n + 1) * sizeof *nn);
    if (!nn) break;
    names = nn;
    if (!(names[n] = strndup(e->d_name, l - 3))) break;
    if (coop__is_ident(names[n]))
      n++; /* a temporary (.NAME...) or a stray file is not one */
    else
      free(names[n]);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names); /* reproducible kernel order */
  for (size_t i = 0; i < n; i++) {
    load_stored(s, dir, names[i]);
    free(names[i]);
  }
  free(names);
  return 0;
}

/* dir/NAME.ext with bytes, through a temporary name and a rename. */
static int put_file(const char *dir, const char *name, const char *ext, const char *b, size_t len,
                    char *err, size_t errlen) {
  char tmp[1200], path[1200];
  snprintf(tmp, sizeof tmp, "%s/.%s.%s.tmp", dir, name, ext);
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), -1;
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, b + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int e = done < len ? errno : 0;
  if (!e && fsync(fd)) e = errno;
  close(fd);
  if (!e && rename(tmp, path)) e = errno;
  if (e) {
    unlink(tmp);
    return snprintf(err, errlen, "%s: %s", path, strerror(e ? e : EIO)), -1;
  }
  return 0;
}

int kstore_write(const char *dir, const char *name, uint32_t owner, const char *file,
                 const char *src, size_t len, char *err, size_t errlen) {
  char line[COOP_NAME_MAX + 32];
  int n = snprintf(line, sizeof line, "%u %s\n", (unsigned)owner, file);
  if (kstore_prepare(dir, err, errlen)) return -1;
  /* the owner first: a crash between the two leaves a stray .owner, never
   * a source without its owner */
  return put_file(dir, name, "owner", line, (size_t)n, err, errlen) ||
                 put_file(dir, name, "cl", src, len, err, errlen)
             ? -1
             : 0;
}

int kstore_has(const char *dir, const char *name, uint32_t *owner) {
  char path[1200], file[COOP_NAME_MAX + 8];
  snprintf(path, sizeof path, "%s/%s.cl", dir, name);
  if (access(path, F_OK)) return 0;
  return read_owner(dir, name, owner, file, sizeof file) ? -1 : 1;
}

int kstore_remove(const char *dir, const char *name, char *err, size_t errlen) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s.cl", dir, name);
  if (unlink(path) && errno != ENOENT)
    return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
  snprintf(path, sizeof path, "%s/%s.owner", dir, name);
  unlink(path);
  return 0;
}
