/*
 * journal.c: see journal.h. All file I/O goes through libuv's fs calls: the
 * records are a line each, written synchronously on the loop thread as jobs
 * are accepted and finish (a write into the page cache); only the syncs of
 * A and F records run on libuv's work threads, one at a time.
 */
#include "journal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_util.h"
#include "log.h"

#define JOURNAL_HEADER "coop-journal 1"
#define JOURNAL_READ_MAX (16u << 20) /* a bigger file is not ours */
#define JOURNAL_LINE_MAX 160
#define JOURNAL_TMP ".tmp-" /* a rewrite's file: the journal's path, this, mkstemp's six */
#define JOURNAL_OPEN_FLAGS (O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
/* Blank lines written ahead of the records: appends fill space the file
 * already has (a full disk does not stop them), and the file grows by this
 * much at a time. */
#define JOURNAL_SLACK (64u << 10)

struct open_job {
  uint64_t id;
  uint32_t uid;
  char kernel[COOP_WIRE_NAME_MAX];
};

struct sync_req;

struct journal {
  uv_loop_t *loop;
  char path[1024];
  uv_file fd;     /* positional writes at `size`; -1: running without a journal */
  uint64_t size;  /* bytes of the file that hold whole records */
  uint64_t alloc; /* the file's length: the records, then blank lines */
  uint64_t mark;  /* every id given out is <= mark, and the file says so */
  uint64_t ahead; /* >= mark: the last N written, its sync maybe under way */
  int compacting; /* appends fail: every change compacts in place */
  struct journal_lost lost[JOURNAL_LOST_MAX]; /* oldest first */
  unsigned nlost;
  struct open_job *open; /* accepted, not finished */
  size_t nopen, cap;
  size_t appended;          /* bytes since the last rewrite */
  struct sync_req *syncing; /* the background sync in flight */
  int dirty;                /* records appended since it started */
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

static struct open_job *find_open(struct journal *jn, uint64_t id) {
  for (size_t i = jn->nopen; i-- > 0;) /* the newest are likelier to finish first */
    if (jn->open[i].id == id) return &jn->open[i];
  return NULL;
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
  struct open_job *o = find_open(jn, id);
  if (o) *o = jn->open[--jn->nopen];
}

/* ---- reading: every line is hostile until it parses ---- */

static int kernel_name_ok(const char *k) {
  size_t n = strlen(k);
  if (n == 0 || n >= COOP_WIRE_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(k[i] == '_' || (k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'z') ||
          (k[i] >= 'A' && k[i] <= 'Z')))
      return 0;
  return 1;
}

/* One line, NUL-terminated, without its newline: 0, or -1 if it is not a
 * record this file may hold. Job ids are 1..JOURNAL_ID_MAX; N may be 0. */
static int parse_line(struct journal *jn, char *line, uint64_t *max_id) {
  char *tok[5];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save))
    if (n < 5)
      tok[n++] = t;
    else
      return -1;
  uint64_t id, uid = 0;
  if (n < 2 || strlen(tok[0]) != 1 || coop__parse_u64(tok[1], JOURNAL_ID_MAX, &id)) return -1;
  char kind = tok[0][0];
  if (kind == 'A' || kind == 'L') {
    if (n != 4 || coop__parse_u64(tok[2], UINT32_MAX, &uid) || !kernel_name_ok(tok[3])) return -1;
  } else if (n != 2 || (kind != 'N' && kind != 'F')) {
    return -1;
  }
  if (id == 0 && kind != 'N') return -1;
  if (kind == 'A' && find_open(jn, id)) return -1; /* accepted twice */
  if (kind == 'A' && add_open(jn, id, (uint32_t)uid, tok[3])) return -1;
  if (kind == 'L') add_lost(jn, id, (uint32_t)uid, tok[3]);
  if (kind == 'F') drop_open(jn, id);
  if (id > *max_id) *max_id = id;
  return 0;
}

/* Only a regular file of coopd's uid that nobody else may write is read:
 * anything else at the path was put there by someone else (a FIFO would
 * block the start, a forged journal would be trusted). */
static int trust_file(const char *path, const uv_stat_t *st, char *err, size_t errlen) {
  const char *why = NULL;
  if ((st->st_mode & S_IFMT) != S_IFREG)
    why = "not a regular file";
  else if (st->st_uid != (uint64_t)geteuid())
    why = "owned by another user";
  else if (st->st_mode & 022)
    why = "writable by other users";
  if (!why) return 0;
  snprintf(err, errlen,
           "journal %s: %s (uid %llu, mode %06o); coopd does not trust it (remove it, or "
           "choose another [server] journal)",
           path, why, (unsigned long long)st->st_uid, (unsigned)st->st_mode);
  return -1;
}

/* The open refused with ELOOP (O_NOFOLLOW): a symlink at the path, maybe
 * another user's in a sticky directory. Said with its owner; never followed. */
static int refuse_link(struct journal *jn, char *err, size_t errlen) {
  uv_fs_t req;
  int r = uv_fs_lstat(jn->loop, &req, jn->path, NULL);
  int link = r == 0 && (req.statbuf.st_mode & S_IFMT) == S_IFLNK;
  unsigned long long uid = link ? req.statbuf.st_uid : 0;
  uv_fs_req_cleanup(&req);
  if (!link) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(UV_ELOOP)), -1;
  return snprintf(err, errlen,
                  "journal %s: a symbolic link (uid %llu); coopd does not follow one (remove it, "
                  "or choose another [server] journal)",
                  jn->path, uid),
         -1;
}

static int fstat_fd(uv_loop_t *loop, uv_file fd, uv_stat_t *st) {
  uv_fs_t req;
  int r = uv_fs_fstat(loop, &req, fd, NULL);
  if (r == 0) *st = req.statbuf;
  uv_fs_req_cleanup(&req);
  return r;
}

static void close_fd(uv_loop_t *loop, uv_file fd) {
  uv_fs_t req;
  uv_fs_close(loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
}

/* The whole file into a NUL-terminated buffer (*len bytes); *text NULL if
 * there is none. */
static int read_all(struct journal *jn, char **text, size_t *len, char *err, size_t errlen) {
  uv_fs_t req;
  uv_stat_t st = {0};
  *text = NULL;
  int fd = uv_fs_open(jn->loop, &req, jn->path, O_RDONLY | JOURNAL_OPEN_FLAGS, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd == UV_ENOENT) return 0;
  if (fd == UV_ELOOP) return refuse_link(jn, err, errlen);
  if (fd < 0) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(fd)), -1;
  int r = fstat_fd(jn->loop, fd, &st);
  if (r < 0 || trust_file(jn->path, &st, err, errlen)) {
    if (r < 0) snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(r));
    close_fd(jn->loop, fd);
    return -1;
  }
  char *b = malloc(JOURNAL_READ_MAX + 1);
  size_t n = 0;
  r = b ? 1 : UV_ENOMEM;
  while (r > 0 && n < JOURNAL_READ_MAX) {
    uv_buf_t ub = uv_buf_init(b + n, (unsigned)(JOURNAL_READ_MAX - n));
    r = uv_fs_read(jn->loop, &req, fd, &ub, 1, -1, NULL);
    uv_fs_req_cleanup(&req);
    if (r > 0) n += (size_t)r;
  }
  close_fd(jn->loop, fd);
  if (r < 0 || n == JOURNAL_READ_MAX) {
    free(b);
    snprintf(err, errlen, "journal %s: %s", jn->path,
             r < 0 ? uv_strerror(r) : "larger than 16 MiB: not a coopd journal");
    return -1;
  }
  b[n] = 0;
  *text = b;
  *len = n;
  return 0;
}

/* Records line by line; the header must come first (a file that is not a
 * journal is not overwritten). Returns the highest id named, or -1. */
static int parse_all(struct journal *jn, char *text, size_t len, uint64_t *max_id, char *err,
                     size_t errlen) {
  unsigned lineno = 0, bad = 0;
  for (size_t at = 0; at < len;) {
    char *l = text + at, *nl = memchr(l, '\n', len - at);
    size_t n = nl ? (size_t)(nl - l) : len - at;
    at += n + 1;
    l[n] = 0;
    if (++lineno == 1) {
      if (strcmp(l, JOURNAL_HEADER))
        return snprintf(err, errlen,
                        "journal %s: not a coop journal (its first line is not \"%s\"); remove it "
                        "or choose another [server] journal",
                        jn->path, JOURNAL_HEADER),
               -1;
      continue;
    }
    if (n == 0) continue; /* the blank lines written ahead */
    /* a NUL inside, an overlong line or a bad record: skipped, not trusted */
    if (strlen(l) == n && n < JOURNAL_LINE_MAX && parse_line(jn, l, max_id) == 0) continue;
    if (bad++ < 5) log_warn("journal %s:%u: malformed record, skipped", jn->path, lineno);
  }
  if (bad) log_warn("journal %s: %u malformed records skipped", jn->path, bad);
  return 0;
}

/* ---- the text of a compacted journal ---- */

static int fmt_rec(char *b, size_t cap, char kind, uint64_t id, uint32_t uid, const char *kernel) {
  return kernel ? snprintf(b, cap, "%c %llu %u %s\n", kind, (unsigned long long)id, uid, kernel)
                : snprintf(b, cap, "%c %llu\n", kind, (unsigned long long)id);
}

static size_t lost_len(const struct journal *jn, unsigned i) {
  return (size_t)fmt_rec(NULL, 0, 'L', jn->lost[i].id, jn->lost[i].uid, jn->lost[i].kernel);
}

static size_t open_len(const struct journal *jn, size_t i) {
  return (size_t)fmt_rec(NULL, 0, 'A', jn->open[i].id, jn->open[i].uid, jn->open[i].kernel);
}

/* Header, N, L and A records in at most cap bytes: when they do not fit,
 * the oldest L records go first, then the newest A records (the N mark is
 * what must survive). Then blank lines: up to cap, or slack of them when
 * cap is UINT64_MAX. malloc'ed text of *total bytes, *len of them records;
 * NULL if not even N fits. */
static char *compose(const struct journal *jn, uint64_t cap, size_t slack, size_t *len,
                     size_t *total) {
  char head[64];
  size_t need = (size_t)snprintf(head, sizeof head, JOURNAL_HEADER "\nN %llu\n",
                                 (unsigned long long)jn->ahead);
  size_t nl = 0, na = 0;
  for (unsigned i = 0; i < jn->nlost; i++) nl += lost_len(jn, i);
  for (size_t i = 0; i < jn->nopen; i++) na += open_len(jn, i);
  unsigned skip = 0;
  size_t keep = jn->nopen;
  while (need + na + nl > cap && skip < jn->nlost) nl -= lost_len(jn, skip++);
  while (need + na > cap && keep > 0) na -= open_len(jn, --keep);
  if (need > cap) return NULL;
  size_t t = cap == UINT64_MAX ? need + na + nl + slack : (size_t)cap;
  char *b = malloc(t + 1); /* + the NUL of the last snprintf */
  if (!b) return NULL;
  size_t at = (size_t)snprintf(b, need + 1, "%s", head);
  for (unsigned i = skip; i < jn->nlost; i++)
    at += (size_t)fmt_rec(b + at, JOURNAL_LINE_MAX, 'L', jn->lost[i].id, jn->lost[i].uid,
                          jn->lost[i].kernel);
  for (size_t i = 0; i < keep; i++)
    at += (size_t)fmt_rec(b + at, JOURNAL_LINE_MAX, 'A', jn->open[i].id, jn->open[i].uid,
                          jn->open[i].kernel);
  memset(b + at, '\n', t - at);
  *len = at;
  *total = t;
  return b;
}

/* ---- writing ---- */

/* All n bytes at offset off: 0 or a negative uv error. */
static int write_at(struct journal *jn, uv_file fd, const char *s, size_t n, uint64_t off) {
  while (n > 0) {
    uv_fs_t req;
    uv_buf_t b = uv_buf_init((char *)s, (unsigned)n);
    int r = uv_fs_write(jn->loop, &req, fd, &b, 1, (int64_t)off, NULL);
    uv_fs_req_cleanup(&req);
    if (r <= 0) return r < 0 ? r : UV_EIO;
    s += r, n -= (size_t)r, off += (uint64_t)r;
  }
  return 0;
}

static int sync_now(struct journal *jn, uv_file fd) {
  uv_fs_t req;
  int r = uv_fs_fdatasync(jn->loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
  return r;
}

/* path's directory into dir ("/" for a file at the root); its last
 * component (in path), or NULL where path has no '/'. */
static const char *dir_of(const char *path, char *dir, size_t n) {
  snprintf(dir, n, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) return NULL;
  slash[slash == dir] = 0;
  return path + (slash - dir) + 1;
}

/* The rename of a rewrite survives a power loss once its directory is
 * synced; a failure here only weakens that. */
static void sync_dir(struct journal *jn) {
  char dir[1024];
  if (!dir_of(jn->path, dir, sizeof dir)) return;
  uv_fs_t req;
  int fd = uv_fs_open(jn->loop, &req, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) return;
  uv_fs_fsync(jn->loop, &req, fd, NULL);
  uv_fs_req_cleanup(&req);
  close_fd(jn->loop, fd);
}

/* A new file: the composed text into path.tmp-XXXXXX (a name no one can
 * take first: in a sticky directory such as /tmp another user's file at a
 * fixed name could be neither replaced nor removed, and every rewrite
 * failed; mkstemp: O_EXCL, 0600), synced, renamed over the journal, which
 * then takes the appends. The old descriptor stays in use until all of it
 * worked. 0, or a negative uv error with err. */
static int rewrite(struct journal *jn, char *err, size_t errlen) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s" JOURNAL_TMP "XXXXXX", jn->path);
  uv_fs_t req;
  int fd = uv_fs_mkstemp(jn->loop, &req, tmp, NULL);
  if (fd >= 0) snprintf(tmp, sizeof tmp, "%s", req.path);
  uv_fs_req_cleanup(&req);
  if (fd < 0) return snprintf(err, errlen, "journal %s: %s", tmp, uv_strerror(fd)), fd;
  size_t len, total;
  char *text = compose(jn, UINT64_MAX, JOURNAL_SLACK, &len, &total);
  int r = text ? write_at(jn, fd, text, total, 0) : UV_ENOMEM;
  free(text);
  if (r == 0) r = sync_now(jn, fd);
  close_fd(jn->loop, fd);
  if (r == 0) r = uv_fs_rename(jn->loop, &req, tmp, jn->path, NULL), uv_fs_req_cleanup(&req);
  if (r < 0) {
    uv_fs_unlink(jn->loop, &req, tmp, NULL);
    uv_fs_req_cleanup(&req);
    return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(r)), r;
  }
  sync_dir(jn);
  fd = uv_fs_open(jn->loop, &req, jn->path, O_WRONLY | JOURNAL_OPEN_FLAGS, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) return snprintf(err, errlen, "journal %s: %s", jn->path, uv_strerror(fd)), fd;
  if (jn->fd >= 0) close_fd(jn->loop, jn->fd);
  jn->fd = fd;
  jn->size = len;
  jn->alloc = total;
  jn->appended = 0;
  jn->mark = jn->ahead; /* composed, synced */
  return 0;
}

/* The whole file written over from its start, in one write, its length
 * unchanged: blocks the file already has, so a full disk does not stop it.
 * 0 or a uv error. */
static int compact_in_place(struct journal *jn) {
  size_t len, total;
  char *text = compose(jn, jn->alloc, 0, &len, &total);
  if (!text) return UV_ENOSPC;
  int r = write_at(jn, jn->fd, text, total, 0);
  free(text);
  if (r == 0) r = sync_now(jn, jn->fd);
  if (r == 0) jn->size = len, jn->mark = jn->ahead;
  return r;
}

struct sync_req {
  uv_fs_t req;
  uv_loop_t *loop;
  struct journal *jn; /* NULL once the journal is closed */
  uv_file fd;         /* a duplicate: a rewrite may close the journal's own */
  uint64_t covers;    /* the N mark written before it began */
};

static void sync_later(struct journal *jn);

static void on_synced(uv_fs_t *req) {
  struct sync_req *s = req->data;
  struct journal *jn = s->jn;
  if (req->result < 0 && jn)
    log_warn("journal %s: sync failed: %s", jn->path, uv_strerror((int)req->result));
  if (req->result >= 0 && jn && s->covers > jn->mark) jn->mark = s->covers;
  uv_fs_req_cleanup(req);
  close_fd(s->loop, s->fd);
  free(s);
  if (!jn) return;
  jn->syncing = NULL;
  if (jn->dirty) sync_later(jn);
}

/* A and F records reach the disk in the background, one sync at a time:
 * records appended meanwhile wait for the next. */
static void sync_later(struct journal *jn) {
  if (jn->fd < 0) return;
  if (jn->syncing) {
    jn->dirty = 1;
    return;
  }
  jn->dirty = 0;
  struct sync_req *s = calloc(1, sizeof *s);
  if (!s) return;
  s->loop = jn->loop;
  s->jn = jn;
  s->covers = jn->ahead;
  s->fd = fcntl(jn->fd, F_DUPFD_CLOEXEC, 0);
  s->req.data = s;
  if (s->fd < 0 || uv_fs_fdatasync(jn->loop, &s->req, s->fd, on_synced)) {
    if (s->fd >= 0) close_fd(jn->loop, s->fd);
    free(s);
    return;
  }
  jn->syncing = s;
}

static void lost_journal(struct journal *jn, int r) {
  log_error(
      "journal %s: %s; running without a journal: lost jobs will not be reported after "
      "a crash, and job ids may repeat after a restart",
      jn->path, uv_strerror(r));
  if (jn->fd >= 0) close_fd(jn->loop, jn->fd);
  jn->fd = -1;
}

/* An append failed (r): keep the file true by compacting it in place, now
 * and at every change until appends work again. */
static void append_failed(struct journal *jn, int r) {
  if (!jn->compacting)
    log_warn("journal %s: write failed (%s); compacting it in place until writes work again",
             jn->path, uv_strerror(r));
  jn->compacting = 1;
  int c = compact_in_place(jn);
  if (c) lost_journal(jn, c);
}

/* More blank lines at the end, before the records reach it. */
static int extend(struct journal *jn) {
  char *pad = malloc(JOURNAL_SLACK);
  if (!pad) return UV_ENOMEM;
  memset(pad, '\n', JOURNAL_SLACK);
  int r = write_at(jn, jn->fd, pad, JOURNAL_SLACK, jn->alloc);
  free(pad);
  if (r == 0) jn->alloc += JOURNAL_SLACK;
  return r;
}

/* One record. sync: wait for the disk (the N mark). */
static void append(struct journal *jn, char kind, uint64_t id, uint32_t uid, const char *kernel,
                   int sync) {
  if (jn->fd < 0) return;
  char line[JOURNAL_LINE_MAX];
  int n = fmt_rec(line, sizeof line, kind, id, uid, kernel);
  int r = jn->size + (uint64_t)n > jn->alloc ? extend(jn) : 0;
  if (r == 0) r = write_at(jn, jn->fd, line, (size_t)n, jn->size);
  if (r == 0 && sync) r = sync_now(jn, jn->fd);
  if (r < 0) {
    append_failed(jn, r);
    return;
  }
  if (jn->compacting) log_info("journal %s: writes work again", jn->path);
  jn->compacting = 0;
  jn->size += (uint64_t)n;
  jn->appended += (size_t)n;
  if (!sync) sync_later(jn);
  char err[1200];
  if (jn->appended > JOURNAL_COMPACT_BYTES && rewrite(jn, err, sizeof err) < 0) {
    /* written over in place instead, its length kept: tried again after
     * as many appends, not at every one (a warning each, and a file that
     * grew for ever) */
    int c = compact_in_place(jn);
    log_warn("%s; %s", err, c ? "appending to the old file" : "compacted in place");
    jn->appended = 0;
  }
}

/* Before id is given out: the mark on disk must be past it. Half a block
 * before the mark the next one is written and synced in the background
 * (sync_later), so that the loop waits for the disk only where ids run
 * through half a block faster than a sync: an N synced on the loop at
 * every block held every client for the disk's time (11.5 ms in a flood
 * of jobs, seconds on a disk another user keeps busy). */
static void reserve(struct journal *jn, uint64_t id) {
  if (id > jn->mark && jn->ahead >= id && jn->fd >= 0 && sync_now(jn, jn->fd) == 0)
    jn->mark = jn->ahead;
  if (id > jn->mark) {
    jn->mark = jn->ahead = id + JOURNAL_ID_BLOCK;
    append(jn, 'N', jn->mark, 0, NULL, 1);
  } else if (jn->mark - id < JOURNAL_ID_BLOCK / 2 && jn->ahead == jn->mark) {
    jn->ahead = jn->mark + JOURNAL_ID_BLOCK;
    append(jn, 'N', jn->ahead, 0, NULL, 0);
  }
}

/* ---- API ---- */

static void journal_free(struct journal *jn) {
  if (jn->syncing) jn->syncing->jn = NULL;
  if (jn->fd >= 0) close_fd(jn->loop, jn->fd);
  free(jn->open);
  free(jn);
}

/* At start, when the rewrite failed (a full disk): the old file compacted
 * in place, or no journal at all. */
static void open_degraded(struct journal *jn, const char *why) {
  uv_fs_t req;
  uv_stat_t st = {0};
  int fd = uv_fs_open(jn->loop, &req, jn->path, O_WRONLY | JOURNAL_OPEN_FLAGS, 0, NULL);
  uv_fs_req_cleanup(&req);
  int r = fd < 0 ? fd : fstat_fd(jn->loop, fd, &st);
  if (fd >= 0) jn->fd = fd;
  /* the file read at the start's checks, not one put there since */
  char untrusted[1400];
  if (r == 0 && trust_file(jn->path, &st, untrusted, sizeof untrusted)) {
    log_error("%s", untrusted);
    r = UV_EPERM;
  }
  if (r == 0) {
    jn->alloc = st.st_size;
    jn->compacting = 1;
    r = compact_in_place(jn);
  }
  if (r == 0) {
    log_warn("%s; compacting the journal in place until writes work again", why);
    return;
  }
  log_error("%s", why);
  lost_journal(jn, r);
}

/* Removes the temporary files of rewrites that a crash cut short
 * (path.tmp-XXXXXX, coopd's own, regular): each crash would leave one. */
static void remove_leftovers(struct journal *jn) {
  char dir[1024];
  const char *base = dir_of(jn->path, dir, sizeof dir);
  if (!base || !*base) return;
  size_t bl = strlen(base), tl = strlen(JOURNAL_TMP);
  uv_fs_t req;
  uv_dirent_t e;
  if (uv_fs_scandir(jn->loop, &req, dir, 0, NULL) < 0) return uv_fs_req_cleanup(&req);
  while (uv_fs_scandir_next(&req, &e) != UV_EOF) {
    if (strncmp(e.name, base, bl) || strncmp(e.name + bl, JOURNAL_TMP, tl) ||
        strlen(e.name + bl + tl) != 6)
      continue;
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, e.name);
    uv_fs_t q;
    int r = uv_fs_lstat(jn->loop, &q, p, NULL);
    int ours = r == 0 && (q.statbuf.st_mode & S_IFMT) == S_IFREG && q.statbuf.st_uid == geteuid();
    uv_fs_req_cleanup(&q);
    if (ours) uv_fs_unlink(jn->loop, &q, p, NULL), uv_fs_req_cleanup(&q);
  }
  uv_fs_req_cleanup(&req);
}

int journal_open(struct journal **jp, uv_loop_t *loop, const char *path, uint64_t *last_id,
                 char *err, size_t errlen) {
  struct journal *jn = calloc(1, sizeof *jn);
  if (!jn) return snprintf(err, errlen, "out of memory"), -1;
  jn->loop = loop;
  jn->fd = -1;
  snprintf(jn->path, sizeof jn->path, "%s", path);
  char *text;
  size_t len = 0;
  uint64_t max_id = 0;
  if (read_all(jn, &text, &len, err, errlen) ||
      (text && parse_all(jn, text, len, &max_id, err, errlen))) {
    free(text);
    journal_free(jn);
    return -1;
  }
  free(text);
  for (size_t i = 0; i < jn->nopen; i++) /* accepted, never finished */
    add_lost(jn, jn->open[i].id, jn->open[i].uid, jn->open[i].kernel);
  unsigned now_lost = (unsigned)jn->nopen;
  jn->nopen = 0;
  *last_id = max_id; /* past every N mark: no id an earlier coopd gave is reused */
  jn->mark = jn->ahead = max_id + JOURNAL_ID_BLOCK;
  char why[1200];
  remove_leftovers(jn);
  if (rewrite(jn, why, sizeof why) < 0) open_degraded(jn, why);
  if (now_lost)
    log_warn(
        "journal: %u jobs of the previous coopd never finished; reported lost to their "
        "clients",
        now_lost);
  *jp = jn;
  return 0;
}

void journal_accepted(struct journal *jn, uint64_t id, uint32_t uid, const char *kernel) {
  if (!jn) return;
  reserve(jn, id);
  if (add_open(jn, id, uid, kernel)) return; /* out of memory: not remembered */
  if (jn->fd >= 0) append(jn, 'A', id, uid, kernel, 0);
}

void journal_finished(struct journal *jn, uint64_t id) {
  if (!jn) return;
  drop_open(jn, id);
  if (jn->fd >= 0) append(jn, 'F', id, 0, NULL, 0);
}

const struct journal_lost *journal_find_lost(const struct journal *jn, uint64_t id) {
  for (unsigned i = 0; jn && i < jn->nlost; i++)
    if (jn->lost[i].id == id) return &jn->lost[i];
  return NULL;
}

unsigned journal_nlost(const struct journal *jn) { return jn ? jn->nlost : 0; }

const char *journal_state(const struct journal *jn) {
  if (!jn) return "off";
  if (jn->fd < 0) return "off (cannot be written)";
  return jn->compacting ? "compacting in place (appends fail)" : "ok";
}

void journal_close(struct journal *jn, uint64_t last_id) {
  if (!jn) return;
  if (last_id > jn->ahead) jn->ahead = last_id;
  char err[1200];
  if (jn->fd >= 0 && rewrite(jn, err, sizeof err) < 0 && compact_in_place(jn)) log_error("%s", err);
  journal_free(jn);
}
