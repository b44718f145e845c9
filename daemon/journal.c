/*
 * journal.c: see journal.h. All file I/O goes through libuv's synchronous
 * fs calls (no callback): the records are a line each, written on the loop
 * thread as jobs are accepted and finish.
 */
#include "journal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define JOURNAL_HEADER "coop-journal 1"
#define JOURNAL_READ_MAX (16u << 20) /* a bigger file is not ours: start afresh */

struct open_job {
  uint64_t id;
  uint32_t uid;
  char kernel[COOP_WIRE_NAME_MAX];
};

struct journal {
  uv_loop_t *loop;
  char path[1024];
  uv_file fd; /* appending; -1 after a write error */
  uint64_t last_id;
  struct journal_lost lost[JOURNAL_LOST_MAX]; /* oldest first */
  unsigned nlost;
  struct open_job *open; /* accepted, not finished */
  size_t nopen, cap;
  size_t appended; /* bytes since the last rewrite */
};

/* ---- records in memory ---- */

static void add_lost(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel) {
  if (jn->nlost == JOURNAL_LOST_MAX) {
    memmove(jn->lost, jn->lost + 1, (JOURNAL_LOST_MAX - 1) * sizeof jn->lost[0]);
    jn->nlost--;
  }
  struct journal_lost *l = &jn->lost[jn->nlost++];
  l->id = id;
  l->uid = uid;
  snprintf(l->kernel, sizeof l->kernel, "%s", kernel);
}

static int add_open(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel) {
  if (jn->nopen == jn->cap) {
    size_t cap = jn->cap ? jn->cap * 2 : 64;
    struct open_job *p = realloc(jn->open, cap * sizeof *p);
    if (!p) return -1;
    jn->open = p;
    jn->cap = cap;
  }
  struct open_job *o = &jn->open[jn->nopen++];
  o->id = id;
  o->uid = uid;
  snprintf(o->kernel, sizeof o->kernel, "%s", kernel);
  return 0;
}

static void drop_open(struct journal *jn, uint64_t id) {
  for (size_t i = jn->nopen; i-- > 0;) /* the newest are likelier to finish first */
    if (jn->open[i].id == id) {
      jn->open[i] = jn->open[--jn->nopen];
      return;
    }
}

/* ---- reading ---- */

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end) return -1;
  *out = v;
  return 0;
}

static int kernel_name_ok(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n >= COOP_WIRE_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(k[i] == '_' || (k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'z') ||
          (k[i] >= 'A' && k[i] <= 'Z')))
      return 0;
  return 1;
}

/* One line (NUL-terminated, no newline). 0, or -1 if malformed. */
static int parse_line(struct journal *jn, char *line) {
  char *tok[5];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save))
    if (n < 5)
      tok[n++] = t;
    else
      return -1;
  uint64_t id, uid = 0;
  if (n < 2 || strlen(tok[0]) != 1 || parse_u64(tok[1], &id)) return -1;
  char kind = tok[0][0];
  if (kind == 'A' || kind == 'L') {
    if (n != 4 || parse_u64(tok[2], &uid) || uid > UINT32_MAX || !kernel_name_ok(tok[3])) return -1;
  } else if (n != 2 || (kind != 'N' && kind != 'F')) {
    return -1;
  }
  if (id > jn->last_id) jn->last_id = id;
  if (kind == 'A') return add_open(jn, id, (uint32_t)uid, tok[3]);
  if (kind == 'L') add_lost(jn, id, (uint32_t)uid, tok[3]);
  if (kind == 'F') drop_open(jn, id);
  return 0;
}

/* The whole file into a NUL-terminated buffer; *text NULL if there is none. */
static int read_all(struct journal *jn, char **text, char *err, size_t errlen) {
  uv_fs_t req;
  *text = NULL;
  int fd = uv_fs_open(jn->loop, &req, jn->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd == UV_ENOENT) return 0;
  if (fd < 0) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(fd)), -1;
  char *b = malloc(JOURNAL_READ_MAX + 1);
  size_t len = 0;
  int r = b ? 1 : UV_ENOMEM;
  while (r > 0 && len < JOURNAL_READ_MAX) {
    uv_buf_t ub = uv_buf_init(b + len, (unsigned)(JOURNAL_READ_MAX - len));
    r = uv_fs_read(jn->loop, &req, fd, &ub, 1, -1, NULL);
    uv_fs_req_cleanup(&req);
    if (r > 0) len += (size_t)r;
  }
  uv_fs_close(jn->loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
  if (r < 0) {
    free(b);
    return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(r)), -1;
  }
  if (len == JOURNAL_READ_MAX) {
    log_warn("journal %s is larger than %u bytes: not coopd's, starting a new one", jn->path,
             JOURNAL_READ_MAX);
    free(b);
    return 0;
  }
  b[len] = 0;
  *text = b;
  return 0;
}

static void parse_all(struct journal *jn, char *text) {
  unsigned lineno = 0, bad = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (++lineno == 1) {
      if (strcmp(l, JOURNAL_HEADER)) {
        log_warn("journal %s: not a coop journal (first line); starting a new one", jn->path);
        return;
      }
      continue;
    }
    if (parse_line(jn, l) && bad++ < 5)
      log_warn("journal %s:%u: malformed record, skipped", jn->path, lineno);
  }
}

/* ---- writing ---- */

static int write_fd(struct journal *jn, uv_file fd, const char *s, size_t n) {
  uv_fs_t req;
  uv_buf_t b = uv_buf_init((char *)s, (unsigned)n);
  int r = uv_fs_write(jn->loop, &req, fd, &b, 1, -1, NULL);
  uv_fs_req_cleanup(&req);
  return r == (int)n ? 0 : -1;
}

/* One record; its length, or -1. */
static int write_rec(struct journal *jn, uv_file fd, char kind, uint64_t id, uint32_t uid,
                     const char *kernel) {
  char line[160];
  int n = kernel ? snprintf(line, sizeof line, "%c %llu %u %s\n", kind, (unsigned long long)id, uid,
                            kernel)
                 : snprintf(line, sizeof line, "%c %llu\n", kind, (unsigned long long)id);
  return write_fd(jn, fd, line, (size_t)n) ? -1 : n;
}

/* Rewrites the file: header, N, L records, A records of open jobs; then
 * appends go to the new file. */
static int rewrite(struct journal *jn, char *err, size_t errlen) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", jn->path);
  uv_fs_t req;
  int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC;
  int fd = uv_fs_open(jn->loop, &req, tmp, flags, 0600, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) return snprintf(err, errlen, "journal %s: %s", tmp, uv_strerror(fd)), -1;
  int bad = write_fd(jn, fd, JOURNAL_HEADER "\n", sizeof JOURNAL_HEADER);
  bad |= write_rec(jn, fd, 'N', jn->last_id, 0, NULL) < 0;
  for (unsigned i = 0; i < jn->nlost; i++)
    bad |= write_rec(jn, fd, 'L', jn->lost[i].id, jn->lost[i].uid, jn->lost[i].kernel) < 0;
  for (size_t i = 0; i < jn->nopen; i++)
    bad |= write_rec(jn, fd, 'A', jn->open[i].id, jn->open[i].uid, jn->open[i].kernel) < 0;
  uv_fs_close(jn->loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
  int r = bad ? UV_EIO : uv_fs_rename(jn->loop, &req, tmp, jn->path, NULL);
  uv_fs_req_cleanup(&req);
  if (r < 0) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(r)), -1;
  if (jn->fd >= 0) {
    uv_fs_close(jn->loop, &req, jn->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  jn->fd =
      uv_fs_open(jn->loop, &req, jn->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (jn->fd < 0) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(jn->fd)), -1;
  jn->appended = 0;
  return 0;
}

static void append(struct journal *jn, char kind, uint64_t id, uint32_t uid, const char *kernel) {
  if (jn->fd < 0) return;
  int n = write_rec(jn, jn->fd, kind, id, uid, kernel);
  if (n < 0) {
    log_error("journal %s: write failed; lost jobs will not be reported after a crash", jn->path);
    uv_fs_t req;
    uv_fs_close(jn->loop, &req, jn->fd, NULL);
    uv_fs_req_cleanup(&req);
    jn->fd = -1;
    return;
  }
  jn->appended += (size_t)n;
  char err[1200];
  if (jn->appended > JOURNAL_COMPACT_BYTES && rewrite(jn, err, sizeof err))
    log_error("%s; lost jobs will not be reported after a crash", err);
}

/* ---- API ---- */

int journal_open(struct journal **jp, uv_loop_t *loop, const char *path, uint64_t *last_id,
                 char *err, size_t errlen) {
  struct journal *jn = calloc(1, sizeof *jn);
  if (!jn) return snprintf(err, errlen, "out of memory"), -1;
  jn->loop = loop;
  jn->fd = -1;
  snprintf(jn->path, sizeof jn->path, "%s", path);
  char *text;
  if (read_all(jn, &text, err, errlen)) {
    free(jn);
    return -1;
  }
  if (text) parse_all(jn, text);
  free(text);
  for (size_t i = 0; i < jn->nopen; i++) /* accepted, never finished */
    add_lost(jn, jn->open[i].id, jn->open[i].uid, jn->open[i].kernel);
  unsigned now_lost = (unsigned)jn->nopen;
  jn->nopen = 0;
  if (rewrite(jn, err, errlen)) {
    if (jn->fd >= 0) {
      uv_fs_t req;
      uv_fs_close(loop, &req, jn->fd, NULL);
      uv_fs_req_cleanup(&req);
    }
    free(jn->open);
    free(jn);
    return -1;
  }
  if (now_lost)
    log_warn(
        "journal: %u jobs of the previous coopd never finished; reported lost to their "
        "clients",
        now_lost);
  *last_id = jn->last_id;
  *jp = jn;
  return 0;
}

void journal_accepted(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel) {
  if (!jn) return;
  if (id > jn->last_id) jn->last_id = id;
  if (add_open(jn, id, uid, kernel)) return; /* out of memory: not remembered */
  append(jn, 'A', id, uid, kernel);
}

void journal_finished(struct journal *jn, uint64_t id) {
  if (!jn) return;
  drop_open(jn, id);
  append(jn, 'F', id, 0, NULL);
}

const struct journal_lost *journal_find_lost(const struct journal *jn, uint64_t id) {
  for (unsigned i = 0; jn && i < jn->nlost; i++)
    if (jn->lost[i].id == id) return &jn->lost[i];
  return NULL;
}

unsigned journal_nlost(const struct journal *jn) { return jn ? jn->nlost : 0; }

void journal_close(struct journal *jn, uint64_t last_id) {
  if (!jn) return;
  if (last_id > jn->last_id) jn->last_id = last_id;
  char err[1200];
  if (jn->fd >= 0 && rewrite(jn, err, sizeof err)) log_error("%s", err);
  if (jn->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(jn->loop, &req, jn->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  free(jn->open);
  free(jn);
}
