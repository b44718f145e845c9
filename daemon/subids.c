/* subids.c: see subids.h. */
#include "subids.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "paths.h"

#define WARN_LINES 8 /* a broken file's first lines named, the rest counted */

/* A decimal number of at most 10 digits that fits 32 bits, whole: 0 and
 * *v, or -1. */
static int number(const char *p, size_t len, uint32_t *v) {
  if (len == 0 || len > 10) return -1;
  uint64_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    n = n * 10 + (uint64_t)(p[i] - '0');
  }
  if (n > UINT32_MAX) return -1;
  *v = (uint32_t)n;
  return 0;
}

/* One line, OWNER:FIRST:COUNT: 1 and *r, 0 for a line with nothing to
 * take (empty, a comment), -1 with why. */
static int parse_line(const char *p, size_t len, struct subid_range *r, const char **why) {
  if (len == 0 || p[0] == '#') return 0;
  const char *c1 = memchr(p, ':', len);
  const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - p)) : NULL;
  *why = "not OWNER:FIRST:COUNT";
  if (!c1 || c1 == p || !c2 || number(c1 + 1, (size_t)(c2 - c1 - 1), &r->first) ||
      number(c2 + 1, len - (size_t)(c2 + 1 - p), &r->count))
    return -1;
  *why = "a range that holds id 0 (root), is empty, or runs past the last id";
  if (r->first == 0 || r->count == 0 || (uint64_t)r->first + r->count > UINT32_MAX) return -1;
  return 1;
}

/* A range's owner as written (the text before its first colon), and the
 * range's place in the file. */
struct owner {
  const char *name;
  size_t len;
  unsigned i;
};

static int same_owner(const struct owner *a, const struct owner *b) {
  return a->len == b->len && !memcmp(a->name, b->name, a->len);
}

static int by_owner_then_place(const void *a, const void *b) {
  const struct owner *x = a, *y = b;
  int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
  if (c || x->len != y->len) return c ? c : x->len < y->len ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Every range of one owner is one user, the first id of that owner's
 * first range in the file: usermod --add-subuids gives a user a second
 * line, and each range a user of its own made a user with N ranges N + 1
 * users. Owners compare as written (a name and its uid's number are two):
 * shadow's tools write names. */
static void join_owners(struct subids *s, struct owner *o) {
  qsort(o, s->n, sizeof *o, by_owner_then_place);
  for (unsigned k = 0, g = 0; k < s->n; k++) {
    if (!same_owner(&o[g], &o[k])) g = k; /* a new owner: o[g] is its first range in the file */
    s->r[o[k].i].user = s->r[o[g].i].first;
  }
}

static int by_first(const void *a, const void *b) {
  const struct subid_range *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

/* s's ranges by first id, when no two overlap: which comes first in the
 * file then decides nothing, and subids_user searches instead of walking
 * (it runs at every accept, on the loop). Overlapping ranges stay in the
 * file's order, and a warning says so. */
static void sort_disjoint(struct subids *s, const char *path) {
  struct subid_range *c = malloc(s->n * sizeof *c);
  if (!c) return; /* the walk, as for overlapping ranges */
  memcpy(c, s->r, s->n * sizeof *c);
  qsort(c, s->n, sizeof *c, by_first);
  unsigned k = 1;
  while (k < s->n && (uint64_t)c[k - 1].first + c[k - 1].count <= c[k].first) k++;
  if (k < s->n) {
    log_warn(
        "%s: ranges overlap (ids %u and up): of those holding an id, the first in the file "
        "counts",
        path, c[k].first);
    free(c);
    return;
  }
  free(s->r);
  s->r = c;
  s->sorted = 1;
}

static int parse(struct subids *s, const char *path, const char *text, size_t len) {
  unsigned lines = 0, bad = 0, cap = 0;
  struct owner *o = NULL;
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
    struct subid_range r;
    const char *why = NULL;
    int got = parse_line(text + at, n, &r, &why);
    lines++;
    at += n + 1;
    if (got < 0 && ++bad <= WARN_LINES)
      log_warn("%s:%u: %s: skipped (its user's ids count as their own)", path, lines, why);
    if (got <= 0) continue;
    if (s->n == cap) {
      cap = cap ? 2 * cap : 64;
      struct subid_range *nr = realloc(s->r, cap * sizeof *nr);
      struct owner *no = nr ? realloc(o, cap * sizeof *no) : NULL;
      if (nr) s->r = nr;
      if (!no) return free(o), -1;
      o = no;
    }
    const char *line = text + at - n - 1;
    o[s->n] = (struct owner){line, (size_t)((const char *)memchr(line, ':', n) - line), s->n};
    s->r[s->n++] = r;
  }
  if (bad > WARN_LINES) log_warn("%s: %u more lines skipped", path, bad - WARN_LINES);
  if (s->n) join_owners(s, o);
  free(o);
  if (s->n) sort_disjoint(s, path);
  return 0;
}

/* Why the file st describes (r: its stat's result) could be changed by
 * another user or is no file to read, or NULL. */
static const char *unsafe_file(int r, const uv_stat_t *st) {
  return r < 0                                                  ? uv_strerror(r)
         : (st->st_mode & S_IFMT) != S_IFREG                    ? "not a regular file"
         : st->st_uid != 0 && st->st_uid != (uint64_t)geteuid() ? "owned by another user"
         : st->st_mode & (S_IWGRP | S_IWOTH)                    ? "writable by others"
         : st->st_size > SUBIDS_MAX_BYTES                       ? "larger than 16 MiB"
                                                                : NULL;
}

static int refuse(const char *path, const char *why, const uv_stat_t *st, char *err,
                  size_t errlen) {
  snprintf(err, errlen,
           "[limits] subordinate_ids: %s: %s (uid %llu, mode %04o): a user who could change it "
           "could take their range out of it; it must be root's, writable by root alone",
           path, why, (unsigned long long)st->st_uid, (unsigned)(st->st_mode & 07777));
  return -1;
}

/* A file coopd may not read (a service kept away from /etc, say): no
 * ranges, with a warning, if it is one no other user could have put there
 * (1); else the refusal (-1). */
static int unreadable(uv_loop_t *loop, const char *path, int open_r, char *err, size_t errlen) {
  uv_fs_t req;
  int r = uv_fs_lstat(loop, &req, path, NULL);
  uv_stat_t st = req.statbuf;
  uv_fs_req_cleanup(&req);
  const char *why = r == 0 ? unsafe_file(r, &st) : NULL;
  if (why) return refuse(path, why, &st, err, errlen);
  if (paths_check_dir(loop, path, "[limits] subordinate_ids file", err, errlen)) return -1;
  log_warn("[limits] subordinate_ids: %s: %s: no ranges read, each id counts as a user of its own",
           path, uv_strerror(open_r));
  return 1;
}

/* The whole file at path into *buf (NUL-terminated), checked as
 * subids.h says: 0, 1 when there are no ranges to read (no file, or one
 * coopd may not read), -1 with err. */
static int slurp(uv_loop_t *loop, const char *path, char **buf, size_t *len, char *err,
                 size_t errlen) {
  uv_fs_t req;
  int fd = uv_fs_open(loop, &req, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd == UV_ENOENT) return 1;
  if (fd == UV_EACCES || fd == UV_EPERM) return unreadable(loop, path, fd, err, errlen);
  if (fd < 0) return snprintf(err, errlen, "%s: %s", path, uv_strerror(fd)), -1;
  int r = uv_fs_fstat(loop, &req, fd, NULL);
  uv_stat_t st = req.statbuf;
  uv_fs_req_cleanup(&req);
  const char *why = unsafe_file(r, &st);
  if (why) {
    uv_fs_close(loop, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    return refuse(path, why, &st, err, errlen);
  }
  *buf = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (*buf && got < (size_t)st.st_size) {
    uv_buf_t b = uv_buf_init(*buf + got, (unsigned)((size_t)st.st_size - got));
    r = uv_fs_read(loop, &req, fd, &b, 1, -1, NULL);
    uv_fs_req_cleanup(&req);
    if (r <= 0) break; /* shorter than fstat said: what was read */
    got += (size_t)r;
  }
  uv_fs_close(loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
  if (!*buf) return snprintf(err, errlen, "%s: out of memory", path), -1;
  if (r < 0) {
    free(*buf);
    return snprintf(err, errlen, "%s: %s", path, uv_strerror(r)), -1;
  }
  (*buf)[got] = '\0';
  *len = got;
  return 0;
}

int subids_read(uv_loop_t *loop, struct subids *s, const char *path, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (!path[0] || !strcmp(path, "off")) return 0;
  char *text = NULL;
  size_t len = 0;
  int r = slurp(loop, path, &text, &len, err, errlen);
  if (r > 0) return 0; /* no file, or one coopd may not read: no ranges */
  if (r == 0) r = paths_check_dir(loop, path, "[limits] subordinate_ids file", err, errlen);
  if (r == 0 && parse(s, path, text, len)) {
    snprintf(err, errlen, "%s: out of memory", path);
    r = -1;
  }
  free(text);
  if (r) subids_free(s);
  return r ? -1 : 0;
}

void subids_free(struct subids *s) {
  free(s->r);
  memset(s, 0, sizeof *s);
}

uint32_t subids_user(const struct subids *s, uint32_t uid) {
  if (s->sorted) { /* the last range whose first id is at most uid */
    unsigned lo = 0, hi = s->n;
    while (hi - lo > 1) {
      unsigned mid = lo + (hi - lo) / 2;
      if (s->r[mid].first <= uid)
        lo = mid;
      else
        hi = mid;
    }
    return s->n && uid - s->r[lo].first < s->r[lo].count ? s->r[lo].user : uid;
  }
  for (unsigned i = 0; i < s->n; i++)
    if (uid - s->r[i].first < s->r[i].count) return s->r[i].user;
  return uid;
}
