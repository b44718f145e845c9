/*
 * coopctl.c: the command-line client of coopd, on libcoop's public API.
 * Commands: submit, status, wait, cancel, stats, top, metrics
 * (coopctl_metrics.c), kernels, kernel and reload (coopctl_kernels.c), render (coopctl_render.c),
 * app (coopctl_app.c). Exit status: 0 success, 1 error (or a waited job that did not end done), 2
 * bad usage, 3 app --check found a difference from the CPU reference.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coopctl.h"

struct cmd {
  const char *name, *brief, *synopsis, *help;
  int (*fn)(struct ctl *x, int argc, char **argv);
};

static const struct cmd *find_cmd(const char *name);

/* ---- errors and usage ---- */

static const struct ctl *g_ctl; /* for ctl_fail's JSON */

/* {"error":{...}} on stdout with --json (docs/json.md, "Errors"). */
static void json_error(const char *what, int err, const char *m) {
  if (!g_ctl || !g_ctl->json) return;
  printf("{\"error\":{\"what\":");
  json_str(stdout, what);
  printf(",\"code\":%d,\"name\":", err);
  json_str(stdout, coop_err_name(err));
  printf(",\"text\":");
  json_str(stdout, coop_strerror(err));
  printf(",\"message\":");
  json_str(stdout, m);
  printf("}}\n");
}

int ctl_json_error(const char *what, int err, const char *m) {
  json_error(what, err, m);
  return 1;
}

int ctl_fail(const char *what, int err) {
  const char *m = coop_errmsg(NULL);
  if (ctl_message_says_it(err, m))
    fprintf(stderr, "coopctl: %s: %s\n", what, m);
  else
    fprintf(stderr, "coopctl: %s: %s%s%s\n", what, coop_strerror(err), *m ? ": " : "", m);
  json_error(what, err, m);
  return 1;
}

int ctl_error(const char *what, int err, const char *fmt, ...) {
  char m[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  fprintf(stderr, "coopctl: %s: %s\n", what, m);
  json_error(what, err, m);
  return 1;
}

static void print_synopsis(FILE *f, const struct cmd *c) {
  fprintf(f, "usage: coopctl [--socket PATH] [--json] %s\n", c->synopsis);
}

int ctl_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("coopctl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  const struct cmd *c = cmd ? find_cmd(cmd) : NULL;
  if (c) {
    print_synopsis(stderr, c);
    fprintf(stderr, "(coopctl %s --help for more)\n", c->name);
  } else {
    fputs("usage: coopctl [--socket PATH] [--json] COMMAND [ARGS...] (coopctl --help)\n", stderr);
  }
  return EXIT_USAGE;
}

/* ---- parsing ---- */

static int parse_uint(const char *s, uint64_t max, uint64_t *v) {
  if (!s || !*s || *s == '-' || *s == '+' || isspace((unsigned char)*s)) return -1;
  int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  char *end;
  errno = 0;
  unsigned long long x = strtoull(hex ? s + 2 : s, &end, hex ? 16 : 10);
  if (errno || *end || end == (hex ? s + 2 : s) || x > max) return -1;
  *v = x;
  return 0;
}

int parse_u32(const char *s, uint32_t *v) {
  uint64_t x;
  if (parse_uint(s, UINT32_MAX, &x)) return -1;
  *v = (uint32_t)x;
  return 0;
}

int parse_u64(const char *s, uint64_t *v) { return parse_uint(s, UINT64_MAX, v); }

int parse_i64(const char *s, int64_t *v) {
  uint64_t x;
  int neg = s && *s == '-';
  if (parse_uint(neg ? s + 1 : s, neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &x)) return -1;
  *v = neg ? (int64_t)(0 - x) : (int64_t)x;
  return 0;
}

int parse_double(const char *s, double *v) {
  if (!s || !*s || isspace((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (errno || *end) return -1;
  *v = x;
  return 0;
}

static int set_opt(const char *cmd, const struct opt *o, const char *eq, int argc, char **argv,
                   int *i) {
  if (o->flag) {
    if (eq) return ctl_usage(cmd, "--%s takes no value", o->name);
    *o->flag = 1;
    return 0;
  }
  if (eq) {
    *o->val = eq + 1;
  } else if (*i + 1 < argc) {
    *o->val = argv[++*i];
  } else {
    return ctl_usage(cmd, "--%s needs a value", o->name);
  }
  return 0;
}

static int cmd_help(const char *cmd) {
  const struct cmd *c = find_cmd(cmd);
  print_synopsis(stdout, c);
  printf("\n%s", c->help);
  return 1;
}

/* Levenshtein distance, capped: words longer than a command name are not
 * worth comparing (client input is anything). */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), row[33];
  if (la > 32 || lb > 32) return SIZE_MAX;
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb];
}

/* The option of opts nearest to a mistyped --NAME (len bytes), or NULL. */
static const char *near_opt(const char *a, size_t len, const struct opt *opts) {
  char w[33];
  if (len >= sizeof w) return NULL;
  memcpy(w, a, len);
  w[len] = '\0';
  const char *best = NULL;
  size_t d = SIZE_MAX;
  for (const struct opt *o = opts; o && o->name; o++) {
    size_t e = edit_distance(w, o->name);
    if (e < d) d = e, best = o->name;
  }
  return d <= 2 && d * 2 < len ? best : NULL;
}

/* --socket "": libcoop would take the default socket for it, and a script's
 * unset variable would reach another coopd than the one it meant. */
static int empty_socket(const char *cmd) {
  return ctl_usage(cmd, "--socket: an empty PATH (leave --socket out for the default)");
}

/* One --option: the command's, or a global one, or --help. */
static int take_opt(struct ctl *x, const char *cmd, const struct opt *opts, int argc, char **argv,
                    int *i) {
  const char *a = argv[*i] + 2, *eq = strchr(a, '=');
  size_t len = eq ? (size_t)(eq - a) : strlen(a);
  const struct opt glob[] = {{"socket", &x->socket, NULL}, {"json", NULL, &x->json}, {0}};
  if (len == 4 && !strncmp(a, "help", 4)) return cmd_help(cmd);
  for (int g = 0; g < 2; g++)
    for (const struct opt *o = g ? glob : opts; o && o->name; o++)
      if (strlen(o->name) == len && !strncmp(o->name, a, len)) {
        int r = set_opt(cmd, o, eq, argc, argv, i);
        if (!r && o->val == &x->socket && !*x->socket) return empty_socket(cmd);
        return r;
      }
  const char *near = near_opt(a, len, opts);
  if (near) return ctl_usage(cmd, "unknown option %s (did you mean --%s?)", argv[*i], near);
  return ctl_usage(cmd, "unknown option %s", argv[*i]);
}

/* "-5", "-.5", "-1e3": a value (a job id or a kernel's argument, which
 * then says what is wrong with it), not an option. */
static int negative_number(const char *a) {
  return a[0] == '-' && (isdigit((unsigned char)a[1]) || a[1] == '.');
}

int ctl_parse(struct ctl *x, const char *cmd, int argc, char **argv, const struct opt *opts,
              char **pos, int *npos, int maxpos) {
  int only_pos = 0;
  *npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r = 0;
    if (!only_pos && !strcmp(a, "--"))
      only_pos = 1;
    else if (!only_pos && !strcmp(a, "-h"))
      r = cmd_help(cmd);
    else if (!only_pos && a[0] == '-' && a[1] == '-')
      r = take_opt(x, cmd, opts, argc, argv, &i);
    else if (!only_pos && a[0] == '-' && a[1] && !negative_number(a))
      r = ctl_usage(cmd, "unknown option %s", a);
    else if (*npos == maxpos)
      r = ctl_usage(cmd, "unexpected argument %s", a);
    else
      pos[(*npos)++] = argv[i];
    if (r) return r;
  }
  return 0;
}

/* ---- shared helpers ---- */

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int ctl_writable(const char *cmd, const char *path) {
  struct stat st;
  int fd = -1, ok;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      errno = EISDIR, ok = 0;
    else if (!S_ISREG(st.st_mode)) /* a FIFO or a device: opening it may block */
      ok = access(path, W_OK) == 0;
    else if ((ok = (fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0)) /* not truncated */
      close(fd);
  } else if (errno == ENOENT) { /* created, and removed again: the directory takes files */
    if ((ok = (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) >= 0)) {
      close(fd);
      unlink(path);
    }
  } else {
    ok = 0;
  }
  if (ok) return 0;
  return ctl_error(cmd, COOP_EIO, "cannot write %s: %s (checked before running: nothing was run)",
                   path, strerror(errno));
}

/* fill into f, then closed: 0, or -1 with errno set (EIO when the stream
 * said nothing more). f is closed exactly once either way. */
static int save_stream(FILE *f, int (*fill)(FILE *f, void *arg), void *arg) {
  errno = 0;
  int r = fill(f, arg) || fflush(f) || ferror(f) ? -1 : 0, e = errno ? errno : EIO;
  if (fclose(f) && !r) r = -1, e = errno;
  errno = e;
  return r;
}

/* Through "DIR/.NAME.XXXXXX", renamed over path once whole; old: the file
 * replaced, whose owner and mode the new one keeps (NULL: path is new). */
static int save_renamed(const char *path, const struct stat *old, int (*fill)(FILE *f, void *arg),
                        void *arg) {
  char tmp[4096];
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  int dirlen = (int)(base - path);
  if (snprintf(tmp, sizeof tmp, "%.*s.%s.XXXXXX", dirlen, path, base) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  mode_t mask = umask(0);
  umask(mask);
  if (old && fchown(fd, old->st_uid, old->st_gid)) {
    /* only root may give the file away: a user's own file stays theirs */
  }
  FILE *f = NULL;
  int r = fchmod(fd, old ? old->st_mode & 07777 : 0666 & ~mask);
  if (!r && !(f = fdopen(fd, "w"))) r = -1;
  if (r) close(fd);
  if (!r) r = save_stream(f, fill, arg);
  if (!r && rename(tmp, path)) r = -1;
  if (r) {
    int e = errno;
    unlink(tmp);
    errno = e;
  }
  return r;
}

/* A link to a regular file: the file it names, saved as any regular file
 * (through a temporary file beside it, the link kept). Written through the
 * link in place, a failed write cut the file. The link is followed by
 * opening it for writing, as a write through it would: the kernel's
 * fs.protected_symlinks then refuses one another user left in a sticky
 * directory, which realpath, a mere readlink, followed (a root coopctl's
 * `--out /tmp/NAME` replaced whatever file nobody's link there named).
 * 1: not a regular file behind it (the caller writes in place). */
static int save_linked(const char *path, int (*fill)(FILE *f, void *arg), void *arg) {
  struct stat st;
  /* a FIFO (whose open without a reader fails ENXIO), a device, a
   * dangling link: written in place by the caller, the kernel's checks
   * at that open */
  if (stat(path, &st) || !S_ISREG(st.st_mode)) return 1;
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* no O_TRUNC: nothing written yet */
  if (fd < 0) return -1;
  char proc[64], real[4096];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? readlink(proc, real, sizeof real - 1) : 0;
  int e = errno;
  close(fd);
  if (n <= 0 || (size_t)n >= sizeof real - 1) return n < 0 ? (errno = e, -1) : 1;
  real[n] = '\0';
  return ctl_save(real, fill, arg);
}

int ctl_save(const char *path, int (*fill)(FILE *f, void *arg), void *arg) {
  struct stat st;
  int exists = lstat(path, &st) == 0;
  if (!exists && errno != ENOENT) return -1;
  int r = exists && S_ISLNK(st.st_mode) ? save_linked(path, fill, arg) : 1;
  if (r != 1) return r;
  if (exists && !S_ISREG(st.st_mode)) { /* a FIFO, a device, a dangling link: never replaced */
    FILE *f = fopen(path, "w");
    return f ? save_stream(f, fill, arg) : -1;
  }
  if (save_renamed(path, exists ? &st : NULL, fill, arg) == 0) return 0;
  if (!exists || (errno != EACCES && errno != EPERM && errno != EROFS)) return -1;
  /* a file this user may write in a directory they may not: in place, as
   * the only way left (ctl_writable let it through) */
  FILE *f = fopen(path, "w");
  return f ? save_stream(f, fill, arg) : -1;
}

int ctl_connect(struct ctl *x) {
  int e = coop_connect(&x->c, x->socket, "coopctl");
  return e ? ctl_fail("connect", e) : 0;
}

/* The width in columns of the terminal on fd, or 0 when it does not say. */
static unsigned columns(int fd) {
  struct winsize ws;
  return ioctl(fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

/* why: the daemon's answer to the last WAIT that timed out ("job 7 is
 * queued, waiting for a cooperative slot: ..."); while the job is queued
 * the line shows why it waits (a slot, its user's turn or share, room in
 * the arena, a suspension), cut to the terminal's width so that \r
 * rewrites the whole line. */
static void progress(struct ctl *x, uint64_t job, double el, int periodic, double expect_s,
                     const char *why) {
  struct coop_job_status *s = NULL;
  size_t n = 0;
  if (coop_status(x->c, job, &s, &n) || n != 1) {
    free(s);
    return;
  }
  char line[COOP_TEXT_MAX + 128];
  int len = snprintf(line, sizeof line, "job %llu: %s, %.1f", (unsigned long long)job,
                     coop_state_name(s->state), el);
  if (expect_s > 0) len += snprintf(line + len, sizeof line - len, " / %.1f", expect_s);
  len += snprintf(line + len, sizeof line - len, " s");
  if (periodic)
    len += snprintf(line + len, sizeof line - len, ", %u instances, %u misses", s->instances_done,
                    s->misses);
  const char *said = strstr(why, " is ");
  if (said && s->state == COOP_STATE_QUEUED) {
    said += 4;
    if (!strncmp(said, "queued, ", 8)) said += 8;
    snprintf(line + len, sizeof line - len, ", %s", said);
  }
  unsigned width = columns(STDERR_FILENO);
  int cols = (width > 1 ? (int)width : 80) - 1;
  if ((int)strlen(line) > cols) line[cols] = '\0';
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
  free(s);
}

int ctl_wait(struct ctl *x, uint64_t job, int timeout_ms, int periodic, double expect_s,
             struct coop_result *r) {
  if (!isatty(STDERR_FILENO)) return coop_wait(x->c, job, timeout_ms, r);
  double t0 = now_s();
  int shown = 0, e;
  for (;;) {
    int slice = shown ? 250 : 500;
    if (timeout_ms >= 0) {
      double left = timeout_ms - (now_s() - t0) * 1000;
      slice = left < slice ? (left > 0 ? (int)left : 0) : slice;
    }
    e = coop_wait(x->c, job, slice, r);
    if (e != COOP_ETIMEDOUT || (timeout_ms >= 0 && (now_s() - t0) * 1000 >= timeout_ms)) break;
    char why[COOP_TEXT_MAX];
    snprintf(why, sizeof why, "%s", coop_errmsg(NULL));
    progress(x, job, now_s() - t0, periodic, expect_s, why);
    shown = 1;
  }
  if (shown) fputs("\r\033[K", stderr);
  return e;
}

/* ", held by job 12 (spin) 2; another user's job 1": who holds the workers
 * of wg[0..nwg) other than job, from coop_top's lists; "" when none does. */
static void held_by(const struct coop_wg *wg, size_t nwg, const struct coop_topjob *tj, size_t ntj,
                    uint64_t job, char *b, size_t n) {
  size_t at = 0, other = 0;
  b[0] = 0;
  for (size_t i = 0; i < nwg; i++) other += wg[i].state == COOP_WORKER_OTHER;
  for (size_t k = 0; k < ntj && at < n; k++) {
    size_t c = 0;
    for (size_t i = 0; i < nwg; i++)
      c += tj[k].job != job && wg[i].job == tj[k].job &&
           (wg[i].state == COOP_WORKER_RUNNING || wg[i].state == COOP_WORKER_RESERVED);
    if (c)
      at += (size_t)snprintf(b + at, n - at, "%sjob %llu (%s) %zu", at ? "; " : ", held by ",
                             (unsigned long long)tj[k].job, tj[k].kernel, c);
  }
  if (other && at < n)
    snprintf(b + at, n - at, "%sanother user's job %zu", at ? "; " : ", held by ", other);
}

/* Why job, whose WAIT just timed out (said: that WAIT's answer, "job 7 is
 * queued, waiting for ..."), had not ended: its state, and, queued, what
 * it waited for; running, the workgroups it held and gave back at
 * offer_kill, or who held those it waited for (coop_top). A cooperative
 * kernel that reaches no offer_kill or resizing barrier keeps its
 * workgroups and sees no cancellation, and "timed out" alone did not tell
 * that job from one still waiting. Read before the job is cancelled; ""
 * when coopd no longer knows the job. */
const char *ctl_not_done(struct ctl *x, uint64_t job, const char *said) {
  static char why[COOP_TEXT_MAX + 512];
  struct coop_job_status *s = NULL;
  size_t n = 0;
  why[0] = 0;
  if (coop_status(x->c, job, &s, &n) || n != 1) {
    free(s);
    return why;
  }
  const char *is = strstr(said, " is "), *still = strstr(said, "still running, ");
  const char *pl = s->groups == 1 ? "" : "s";
  if (s->state == COOP_STATE_QUEUED || s->suspended) {
    if (is && !strncmp(is + 4, "queued, ", 8))
      snprintf(why, sizeof why, "; it was still queued, %s", is + 12);
    else if (is)
      snprintf(why, sizeof why, "; it was %s", is + 4);
    else
      snprintf(why, sizeof why, "; it was still queued, waiting for %u workgroup%s", s->groups, pl);
  } else if (s->state == COOP_STATE_RUNNING) {
    struct coop_wg *wg = NULL;
    struct coop_topjob *tj = NULL, *t = NULL;
    size_t nwg = 0, ntj = 0;
    if (!coop_top_device(x->c, (int)s->device, &wg, &nwg, &tj, &ntj))
      for (size_t i = 0; i < ntj && !t; i++)
        if (tj[i].job == job) t = &tj[i];
    unsigned held = t ? (s->cooperative ? t->m : t->workers) : 0;
    int len = 0;
    if (!held) {
      char who[COOP_TEXT_MAX];
      held_by(wg, nwg, tj, ntj, job, who, sizeof who);
      len = snprintf(why, sizeof why, "; it was still waiting for its %u workgroup%s%s", s->groups,
                     pl, who);
    } else if (s->cooperative) {
      len = snprintf(why, sizeof why,
                     "; it was running on %u of %u workgroup%s, %u given back at offer_kill, %u "
                     "forks (a cooperative kernel gives workgroups back, and sees a "
                     "cancellation, only at offer_kill or a resizing barrier)",
                     held, s->groups, pl, t->kills, t->forks);
    } else {
      len = snprintf(why, sizeof why,
                     "; it was running on %u workgroup%s (non-cooperative: it keeps them until it "
                     "returns)",
                     held, held == 1 ? "" : "s");
    }
    if (still && len > 0 && (size_t)len < sizeof why)
      snprintf(why + len, sizeof why - (size_t)len, ", %s", still + strlen("still running, "));
    free(wg);
    free(tj);
  }
  free(s);
  return why;
}

static int parse_job(const char *cmd, const char *s, uint64_t *job) {
  if (!s) return ctl_usage(cmd, "JOB is missing");
  if (parse_u64(s, job) || *job == 0) return ctl_usage(cmd, "bad job id %s", s);
  return 0;
}

/* ---- kernels, status, cancel, stats ---- */

static int cmd_status(struct ctl *x, int argc, char **argv) {
  char *pos[1];
  int npos, r = ctl_parse(x, "status", argc, argv, NULL, pos, &npos, 1);
  if (r) return r == 1 ? 0 : r;
  uint64_t job = 0;
  if (npos && (r = parse_job("status", pos[0], &job))) return r;
  if ((r = ctl_connect(x))) return r;
  struct coop_job_status *s;
  size_t n;
  int e = coop_status(x->c, job, &s, &n);
  if (e) return ctl_fail("status", e);
  print_status(x, s, n);
  free(s);
  return 0;
}

/* A job that has already ended is not cancelled: say how it ended, exit 1.
 * 0 when it has not (or its status is unknown: the CANCEL then says). */
static int cancel_finished(struct ctl *x, uint64_t job) {
  struct coop_job_status *s = NULL;
  size_t n = 0;
  if (coop_status(x->c, job, &s, &n) || n != 1 || s->state == COOP_STATE_QUEUED ||
      s->state == COOP_STATE_RUNNING) {
    free(s);
    return 0;
  }
  const char *st = coop_state_name(s->state);
  fprintf(stderr, "coopctl: cancel: job %llu has already finished (%s); nothing to cancel\n",
          (unsigned long long)job, st);
  if (x->json)
    printf("{\"job\":%llu,\"cancel\":\"finished\",\"state\":\"%s\"}\n", (unsigned long long)job,
           st);
  free(s);
  return 1;
}

static int cmd_cancel(struct ctl *x, int argc, char **argv) {
  char *pos[1];
  int npos, r = ctl_parse(x, "cancel", argc, argv, NULL, pos, &npos, 1);
  if (r) return r == 1 ? 0 : r;
  uint64_t job;
  if ((r = parse_job("cancel", npos ? pos[0] : NULL, &job))) return r;
  if ((r = ctl_connect(x))) return r;
  if ((r = cancel_finished(x, job))) return r;
  int e = coop_cancel(x->c, job);
  if (e) return ctl_fail("cancel", e);
  if (x->json)
    printf("{\"job\":%llu,\"cancel\":\"requested\"}\n", (unsigned long long)job);
  else
    printf("job %llu: cancellation requested\n", (unsigned long long)job);
  return 0;
}

/* Why job still waits, as a WAIT that times out says it (": job N is
 * suspended, moved to ..."), or "" (it ended meanwhile, or no answer). */
static const char *why_waiting(struct ctl *x, uint64_t job) {
  static char why[COOP_TEXT_MAX + 4];
  struct coop_result r;
  int e = coop_wait(x->c, job, 1, &r);
  if (e == 0) coop_result_free(&r);
  why[0] = 0;
  if (e == COOP_ETIMEDOUT && *coop_errmsg(NULL))
    snprintf(why, sizeof why, ": %s", coop_errmsg(NULL));
  return why;
}

/* migrate JOB DEVICE [--timeout MS]: asks, then follows the job's STATUS
 * until it runs on DEVICE again (not suspended), ends, or MS pass. */
static int cmd_migrate(struct ctl *x, int argc, char **argv) {
  char *pos[2];
  const char *tmo = NULL;
  const struct opt opts[] = {{"timeout", &tmo, NULL}, {NULL, NULL, NULL}};
  int npos, r = ctl_parse(x, "migrate", argc, argv, opts, pos, &npos, 2);
  if (r) return r == 1 ? 0 : r;
  uint64_t job;
  uint32_t dev, ms = 30000;
  if ((r = parse_job("migrate", npos ? pos[0] : NULL, &job))) return r;
  if (npos < 2 || parse_u32(pos[1], &dev)) return ctl_usage("migrate", "want JOB DEVICE");
  if (tmo && parse_u32(tmo, &ms)) return ctl_usage("migrate", "bad --timeout %s", tmo);
  if ((r = ctl_connect(x))) return r;
  double t0 = now_s();
  int e = coop_migrate(x->c, job, dev);
  if (e) return ctl_fail("migrate", e);
  const char *how = "asked";
  struct coop_job_status *s = NULL;
  size_t n = 0;
  for (;;) {
    free(s);
    s = NULL;
    if ((e = coop_status(x->c, job, &s, &n)) || n != 1) break;
    if (s->state != COOP_STATE_QUEUED && s->state != COOP_STATE_RUNNING) {
      how = "ended";
      break;
    }
    if (s->device == dev && !s->suspended) {
      how = s->state == COOP_STATE_RUNNING ? "running" : "queued";
      break;
    }
    if (now_s() - t0 >= ms / 1e3) {
      how = s->device == dev ? "suspended" : "moving";
      break;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  double took = (now_s() - t0) * 1e3;
  const char *st = s && n == 1 ? coop_state_name(s->state) : "unknown";
  if (x->json)
    printf("{\"job\":%llu,\"device\":%u,\"migrate\":\"%s\",\"state\":\"%s\",\"ms\":%.3f}\n",
           (unsigned long long)job, dev, how, st, took);
  else if (!strcmp(how, "running") || !strcmp(how, "queued"))
    printf("job %llu: %s on device %u after %.1f ms\n", (unsigned long long)job, how, dev, took);
  else if (!strcmp(how, "ended"))
    printf("job %llu: ended (%s) before it ran on device %u\n", (unsigned long long)job, st, dev);
  else
    printf("job %llu: asked to move to device %u; after %.1f ms it is still %s%s\n",
           (unsigned long long)job, dev, took, how, why_waiting(x, job));
  free(s);
  return 0;
}

static int cmd_stats(struct ctl *x, int argc, char **argv) {
  char *pos[1];
  int npos, r = ctl_parse(x, "stats", argc, argv, NULL, pos, &npos, 0);
  if (r) return r == 1 ? 0 : r;
  if ((r = ctl_connect(x))) return r;
  struct coop_stats s;
  struct coop_metrics m;
  int e = coop_metrics(x->c, &s, &m);
  if (e) return ctl_fail("stats", e);
  print_stats(x, &s, &m);
  return 0;
}

/* ---- wait ---- */

static int cmd_wait(struct ctl *x, int argc, char **argv) {
  const char *timeout = NULL;
  const struct opt o[] = {{"timeout", &timeout, NULL}, {0}};
  char *pos[1];
  int npos, r = ctl_parse(x, "wait", argc, argv, o, pos, &npos, 1);
  if (r) return r == 1 ? 0 : r;
  uint64_t job;
  uint32_t t = 0;
  if ((r = parse_job("wait", npos ? pos[0] : NULL, &job))) return r;
  if (timeout && (parse_u32(timeout, &t) || t > INT32_MAX))
    return ctl_usage("wait", "bad --timeout %s (ms)", timeout);
  if ((r = ctl_connect(x))) return r;
  struct coop_result res;
  int e = ctl_wait(x, job, timeout ? (int)t : -1, 0, 0, &res);
  if (e) return ctl_fail("wait", e);
  print_result(x, &res);
  r = res.state == COOP_STATE_DONE ? 0 : 1;
  coop_result_free(&res);
  return r;
}

int parse_device(const char *cmd, const char *s, int *dev) {
  uint32_t d = 0;
  *dev = COOP_ANY_DEVICE;
  if (!s) return 0;
  if (parse_u32(s, &d) || d >= COOP_MAX_DEVICES)
    return ctl_usage(cmd, "bad --device %s (0..%d)", s, COOP_MAX_DEVICES - 1);
  *dev = (int)d;
  return 0;
}

/* ---- top ---- */

static void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

/* Workgroups per line of the map: what fits the terminal beside the line's
 * label (a multiple of 8), or 64 when stdout is not a terminal. */
static unsigned map_width(int tty) {
  unsigned width = tty ? columns(STDOUT_FILENO) : 0;
  return width < 24 ? 64 : (width - 10) / 8 * 8;
}

/* One snapshot. TOP is asked last: a daemon older than TOP answers it with
 * ERROR EPROTO and closes the connection, so the snapshot goes on without
 * it, with a note, and later ones reconnect and no longer ask. */
static int top_once(struct ctl *x, int device, int first, int tty, int sort, int *no_top,
                    char *note, size_t len) {
  struct coop_stats s;
  struct coop_metrics m;
  struct coop_job_status *j = NULL;
  struct coop_wg *wg = NULL;
  struct coop_topjob *tj = NULL;
  size_t n = 0, nwg = 0, ntj = 0;
  int e, r;
  if (!x->c && (r = ctl_connect(x))) return r;
  if ((e = coop_metrics(x->c, &s, &m))) return ctl_fail("top: stats", e);
  if ((e = coop_status(x->c, 0, &j, &n))) return ctl_fail("top: status", e);
  if (!*no_top) {
    e = coop_top_device(x->c, device, &wg, &nwg, &tj, &ntj);
    if (e == COOP_EPROTO) {
      snprintf(note, len,
               "this coopd does not answer TOP (an older daemon?): no workgroup map (%s)",
               coop_errmsg(x->c));
      *no_top = 1;
      coop_disconnect(x->c); /* the daemon closes it after the error */
      x->c = NULL;
    } else if (e) {
      free(j);
      return ctl_fail("top: top", e);
    }
  }
  if (tty && !x->json)
    fputs("\033[H\033[2J", stdout);
  else if (!first && !x->json)
    putchar('\n');
  const struct top_view v = {.stats = &s,
                             .metrics = &m,
                             .sort = sort,
                             .status = j,
                             .nstatus = n,
                             .have_top = !*no_top,
                             .wg = wg,
                             .nwg = nwg,
                             .jobs = tj,
                             .njobs = ntj,
                             .note = note,
                             .device = device,
                             .map_width = map_width(tty)};
  print_top(x, &v);
  fflush(stdout);
  free(j);
  free(wg);
  free(tj);
  return 0;
}

static int cmd_top(struct ctl *x, int argc, char **argv) {
  const char *interval = NULL, *iterations = NULL, *device = NULL;
  const struct opt o[] = {{"interval", &interval, NULL},
                          {"iterations", &iterations, NULL},
                          {"device", &device, NULL},
                          {0}};
  char *pos[1];
  int npos, r = ctl_parse(x, "top", argc, argv, o, pos, &npos, 0);
  if (r) return r == 1 ? 0 : r;
  uint32_t ms = 1000, iters = 0;
  if (interval && (parse_u32(interval, &ms) || ms == 0))
    return ctl_usage("top", "bad --interval %s (ms > 0)", interval);
  if (iterations && (parse_u32(iterations, &iters) || iters == 0))
    return ctl_usage("top", "bad --iterations %s (> 0)", iterations);
  int dev;
  if ((r = parse_device("top", device, &dev))) return r;
  if (dev == COOP_ANY_DEVICE) dev = 0;
  if ((r = ctl_connect(x))) return r;
  int tty = isatty(STDOUT_FILENO), no_top = 0, sort = TOP_SORT_JOB;
  int keys = tty && !x->json && keys_open();
  char note[COOP_TEXT_MAX + 128] = "";
  for (uint32_t i = 0; !iters || i < iters; i++) {
    int k = 0;
    if (i && keys)
      k = keys_wait(ms);
    else if (i)
      sleep_ms(ms);
    if (k == 'q' || k == 'Q') break;
    if (k == 's' || k == 'S') sort = (sort + 1) % TOP_NSORT;
    if ((r = top_once(x, dev, i == 0, tty, sort, &no_top, note, sizeof note))) break;
    if (keys) printf("keys: q quit, s sort (now by %s)\n", top_sort_name(sort)), fflush(stdout);
  }
  if (keys) keys_close();
  return r;
}

/* ---- submit ---- */

struct sbuf {
  char *mem;
  size_t size;
  const char *path; /* write the output here after the job (out:, inout:) */
};

struct sargs {
  struct sbuf b[COOP_MAX_ARGS];
  unsigned nb;
  int outputs;
  uint64_t max_buf; /* in: and inout: files: at most this many bytes */
};

static void sargs_free(struct sargs *s) {
  for (unsigned i = 0; i < s->nb; i++) free(s->b[i].mem);
}

/* The largest buffer coopd would take: its device arena (device dev's, or
 * the largest when coopd picks one), above which it refuses any buffer. The
 * arena is not in HELLO: STATS says it, asked without a word on failure
 * (the submission then reports the connection). Without an answer, the
 * largest arena coopd allows ([device] arena_mb at most 65536). */
#define ARENA_MAX ((uint64_t)65536 << 20)
static uint64_t buffer_bound(struct ctl *x, int dev) {
  struct coop_stats st;
  struct coop_metrics m;
  uint64_t max = 0;
  if (!x->c && coop_connect(&x->c, x->socket, "coopctl")) x->c = NULL;
  if (!x->c || coop_metrics(x->c, &st, &m) || !m.available) return ARENA_MAX;
  for (uint32_t d = 0; d < st.ndevices && d < COOP_MAX_DEVICES; d++)
    if ((dev == COOP_ANY_DEVICE || (int)d == dev) && m.devs[d].arena_bytes > max)
      max = m.devs[d].arena_bytes;
  return max ? max : ARENA_MAX;
}

static int too_big(const char *arg, const char *more, uint64_t max) {
  return ctl_error("submit", COOP_ETOOBIG,
                   "%s: %s than %llu bytes, coopd's device arena (%llu MiB): a buffer must fit "
                   "it (nothing was run)",
                   arg, more, (unsigned long long)max, (unsigned long long)(max >> 20));
}

/* The whole file (arg: "in:PATH") into *mem, at most max bytes: a regular
 * file's size is checked before it is read, anything else (a FIFO, a
 * device) is read no further than max. 0, or 1 with the error printed. */
static int read_file(const char *arg, const char *path, uint64_t max, char **mem, size_t *size) {
  struct stat st;
  char *p = NULL, more[64];
  size_t n = 0, cap = 0, top = max < SIZE_MAX / 2 ? (size_t)max + 1 : SIZE_MAX / 2;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st)) goto fail;
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
    close(fd);
    snprintf(more, sizeof more, "%llu bytes, more", (unsigned long long)st.st_size);
    return too_big(arg, more, max);
  }
  for (;;) {
    if (n == cap) {
      if (cap == top) break; /* past max: refused below */
      size_t want = S_ISREG(st.st_mode) && !cap ? (size_t)st.st_size + 1 : cap ? cap * 2 : 65536;
      char *q = realloc(p, cap = want < top ? want : top);
      if (!q) goto fail;
      p = q;
    }
    ssize_t k = read(fd, p + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) goto fail;
    if (k == 0) break;
    n += (size_t)k;
  }
  close(fd);
  if (n > max) {
    free(p);
    return too_big(arg, "more", max);
  }
  if (n == 0) {
    free(p);
    return ctl_error("submit", COOP_EINVAL, "%s: empty file (a buffer needs at least one byte)",
                     arg);
  }
  *mem = p;
  *size = n;
  return 0;
fail:;
  int e = errno;
  if (fd >= 0) close(fd);
  free(p);
  return ctl_error("submit", COOP_EIO, "%s: %s", arg, strerror(e));
}

struct mem_out {
  const char *mem;
  size_t size;
};

static int fill_mem(FILE *f, void *arg) {
  const struct mem_out *m = arg;
  return fwrite(m->mem, 1, m->size, f) == m->size ? 0 : -1;
}

/* An out: or inout: buffer into path: a failed write leaves an existing
 * file as it was (ctl_save). */
static int write_file(const char *path, const char *mem, size_t size) {
  struct mem_out m = {mem, size};
  if (ctl_save(path, fill_mem, &m) == 0) return 0;
  return ctl_error("submit", COOP_EIO, "%s: %s (an existing file is left as it was)", path,
                   strerror(errno));
}

static int scalar_arg(coop_job *j, const char *t, const char *v) {
  uint32_t u32;
  uint64_t u64;
  int64_t i64;
  double d;
  /* the builder keeps its first error for coop_submit to report */
  if (!strcmp(t, "u32") && !parse_u32(v, &u32))
    coop_job_u32(j, u32);
  else if (!strcmp(t, "u64") && !parse_u64(v, &u64))
    coop_job_u64(j, u64);
  else if (!strcmp(t, "i64") && !parse_i64(v, &i64))
    coop_job_i64(j, i64);
  else if (!strcmp(t, "i32") && !parse_i64(v, &i64) && i64 >= INT32_MIN && i64 <= INT32_MAX)
    coop_job_i32(j, (int32_t)i64);
  else if (!strcmp(t, "f32") && !parse_double(v, &d) && (!isfinite(d) || isfinite((float)d)))
    coop_job_f32(j, (float)d); /* a finite value past FLT_MAX would become inf: refused */
  else if (!strcmp(t, "f64") && !parse_double(v, &d))
    coop_job_f64(j, d);
  else
    return -1;
  return 0;
}

/* in:PATH out:BYTES:PATH inout:PATH zeros:BYTES. 0, 1 (error), 2 (usage). */
static int buffer_arg(coop_job *j, struct sargs *s, const char *arg, const char *t, const char *v) {
  struct sbuf *b = &s->b[s->nb];
  uint64_t n;
  const char *colon = strchr(v, ':');
  if (!strcmp(t, "in") || !strcmp(t, "inout")) {
    if (read_file(arg, v, s->max_buf, &b->mem, &b->size)) return 1;
    b->path = strcmp(t, "inout") ? NULL : v;
  } else if (!strcmp(t, "out") || !strcmp(t, "zeros")) {
    int out = t[0] == 'o';
    char num[32];
    size_t len = out && colon ? (size_t)(colon - v) : strlen(v);
    if ((out && (!colon || !colon[1])) || len >= sizeof num) return -1;
    memcpy(num, v, len);
    num[len] = '\0';
    if (parse_u64(num, &n) || n == 0 || n > SIZE_MAX / 2 || !(b->mem = calloc(1, n))) return -1;
    b->size = n;
    b->path = out ? colon + 1 : NULL;
  } else {
    return -1;
  }
  s->nb++;
  s->outputs += b->path != NULL;
  if (!strcmp(t, "in") || !strcmp(t, "zeros"))
    coop_job_buf_in(j, b->mem, b->size);
  else if (!strcmp(t, "out"))
    coop_job_buf_out(j, b->mem, b->size);
  else
    coop_job_buf_inout(j, b->mem, b->size);
  return 0;
}

/* Whether ARG is a bare number (decimal, 0x hex, or a float): one whose
 * type the kernel's signature gives. */
static int bare_number(const char *arg) {
  char *end;
  if (!*arg || strchr(arg, ':')) return 0;
  (void)strtod(arg, &end); /* C's strtod reads 0x hex too */
  return !*end;
}

/* ARG i (from 0) of kernel k: TYPE:VALUE, or a bare number, which takes
 * the type k's signature declares there (k NULL: none was asked for). */
static int job_arg(coop_job *j, struct sargs *s, const char *arg, unsigned i,
                   const struct coop_kernel *k) {
  const char *colon = strchr(arg, ':');
  char t[8];
  size_t len = colon ? (size_t)(colon - arg) : 0;
  if (!colon && !bare_number(arg))
    return ctl_usage("submit", "bad argument %s (TYPE:VALUE, or a number)", arg);
  if (!colon && k && i < k->nargs && k->types[i] != COOP_TYPE_BUF) {
    const char *type = coop_type_name(k->types[i]);
    if (scalar_arg(j, type, arg) < 0)
      return ctl_usage("submit", "bad argument %s: %s's argument %u is %s", arg, k->name, i, type);
    return 0;
  }
  if (!colon && k)
    return ctl_usage(
        "submit", "bad argument %s: %s takes %s", arg, k->name,
        i < k->nargs ? "a buffer there (in:, out:, inout: or zeros:)" : "no argument there");
  if (!colon || len >= sizeof t) return ctl_usage("submit", "bad argument %s (TYPE:VALUE)", arg);
  memcpy(t, arg, len);
  t[len] = '\0';
  int r = scalar_arg(j, t, colon + 1);
  if (r < 0) r = buffer_arg(j, s, arg, t, colon + 1);
  if (r < 0) return ctl_usage("submit", "bad argument %s", arg);
  return r;
}

/* KERNEL's entry in coopd's list, asked once: *k is filled and *asked set
 * by the first call; 0, or 1 with the error printed. Connects. */
static int kernel_entry(struct ctl *x, const char *name, struct coop_kernel *k, int *asked) {
  if (*asked) return 0;
  int r = x->c ? 0 : ctl_connect(x);
  if (r) return r;
  struct coop_kernel *all = NULL;
  size_t n = 0, i = 0;
  int e = coop_kernels(x->c, &all, &n);
  if (e) return ctl_fail("submit: kernels", e);
  while (i < n && strcmp(all[i].name, name)) i++;
  if (i < n) *k = all[i];
  free(all);
  if (i == n)
    return ctl_error("submit", COOP_ENOKERNEL,
                     "coopd has no kernel %s (coopctl kernels lists them)", name);
  *asked = 1;
  return 0;
}

struct sopts {
  const char *wg, *period, *count, *duration, *deadline, *timeout, *device, *priority;
  int coop, query, wait;
};

/* --priority P: COOP_PRIORITY_MIN..COOP_PRIORITY_MAX (coopd decides what
 * this user may ask above 0). */
static int parse_priority(const char *s, int *p) {
  *p = 0;
  if (!s) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < COOP_PRIORITY_MIN || v > COOP_PRIORITY_MAX)
    return ctl_usage("submit", "bad --priority %s (%d..%d)", s, COOP_PRIORITY_MIN,
                     COOP_PRIORITY_MAX);
  *p = (int)v;
  return 0;
}

static int set_u32(const char *name, const char *s, uint32_t *v) {
  if (s && parse_u32(s, v)) return ctl_usage("submit", "bad --%s %s", name, s);
  return 0;
}

/* What coopd knows of KERNEL (*k, asked through kernel_entry unless
 * *asked) fills in what the command line left out: the kind (--coop
 * follows from it, and must match it when given). A cooperative kernel
 * without --wg goes with 0 groups, which coopd takes for every worker of
 * the device the job goes to (device 0's count sent to any device kept
 * the job off a device with fewer); another needs --wg. Connects. */
static int kernel_defaults(struct ctl *x, const char *name, int *coop, int have_wg,
                           struct coop_kernel *k, int *asked) {
  if (have_wg && *coop) return 0; /* coopd checks the kind */
  int r = kernel_entry(x, name, k, asked);
  if (r) return r;
  int kind = k->cooperative;
  if (*coop && !kind) return ctl_usage("submit", "%s is not cooperative: drop --coop", name);
  *coop = kind;
  if (have_wg) return 0;
  if (!kind) return ctl_usage("submit", "--wg N is required for %s (not cooperative)", name);
  return 0;
}

/* The job from the options and ARGs; 0, 1 or 2 as job_arg. */
static int build_job(struct ctl *x, const struct sopts *o, char **pos, int npos, struct sargs *s,
                     coop_job **out) {
  uint32_t wg = 0, period = 0, count = 0, duration = 0, deadline = 0;
  int coop = o->coop;
  int r = set_u32("wg", o->wg, &wg) || set_u32("period", o->period, &period) ||
                  set_u32("count", o->count, &count) ||
                  set_u32("duration", o->duration, &duration) ||
                  set_u32("deadline", o->deadline, &deadline)
              ? EXIT_USAGE
              : 0;
  if (r) return r;
  /* 0 is coopd's "the kernel's own width": one workgroup for a task,
   * which a --wg 0 did not ask for */
  if (o->wg && !wg)
    return ctl_usage("submit", "--wg 0: at least 1 (leave --wg out for every worker)");
  if (!period && (count || duration || deadline))
    return ctl_usage("submit", "--count, --duration and --deadline need --period");
  if (period && !count && !duration)
    return ctl_usage("submit", "--period needs --count or --duration");
  if (o->timeout && !o->wait)
    return ctl_usage("submit", "--timeout needs --wait (without it nothing is waited for)");
  int dev, prio;
  if ((r = parse_device("submit", o->device, &dev))) return r;
  if ((r = parse_priority(o->priority, &prio))) return r;
  coop_job *j = coop_job_new(pos[0], wg);
  if (!j) return ctl_fail("submit", COOP_ENOMEM);
  coop_job_query_barrier(j, o->query);
  coop_job_detached(j, !o->wait); /* coopctl exits: the job must not go with it */
  coop_job_periodic(j, period, count, duration, deadline);
  coop_job_device(j, dev);
  coop_job_priority(j, prio);
  /* the ARGs are checked first: a usage error needs no daemon (but for
   * bare numbers, whose types the kernel's signature gives) */
  struct coop_kernel k;
  int asked = 0, bare = 0;
  for (int i = 1; i < npos; i++) bare |= bare_number(pos[i]);
  if (bare) r = kernel_entry(x, pos[0], &k, &asked);
  for (int i = 1; i < npos && !s->max_buf; i++)
    if (!strncmp(pos[i], "in:", 3) || !strncmp(pos[i], "inout:", 6))
      s->max_buf = buffer_bound(x, dev);
  for (int i = 1; i < npos && !r; i++)
    r = job_arg(j, s, pos[i], (unsigned)i - 1, asked ? &k : NULL);
  if (!r && s->outputs && !o->wait) r = ctl_usage("submit", "out: and inout: ARGs need --wait");
  for (unsigned i = 0; !r && i < s->nb; i++)
    if (s->b[i].path) r = ctl_writable("submit", s->b[i].path);
  if (!r) r = kernel_defaults(x, pos[0], &coop, o->wg != NULL, &k, &asked);
  if (!r) coop_job_cooperative(j, coop), coop_job_groups(j, wg);
  if (r) coop_job_free(j);
  *out = r ? NULL : j;
  return r;
}

static int write_outputs(const struct sargs *s) {
  int r = 0;
  for (unsigned i = 0; i < s->nb; i++)
    if (s->b[i].path) r |= write_file(s->b[i].path, s->b[i].mem, s->b[i].size);
  return r;
}

static int submit_run(struct ctl *x, const struct sopts *o, coop_job *j, struct sargs *s) {
  uint32_t t = 0;
  if (o->timeout && (parse_u32(o->timeout, &t) || t > INT32_MAX))
    return ctl_usage("submit", "bad --timeout %s (ms)", o->timeout);
  int r = x->c ? 0 : ctl_connect(x);
  if (r) return r;
  uint64_t id;
  int e = coop_submit(x->c, j, &id);
  if (e) return ctl_fail("submit", e);
  if (!o->wait) {
    printf(x->json ? "{\"job\":%llu}\n" : "%llu\n", (unsigned long long)id);
    return 0;
  }
  struct coop_result res;
  e = ctl_wait(x, id, o->timeout ? (int)t : -1, o->period != NULL, 0, &res);
  if (e == COOP_ETIMEDOUT) { /* a job not detached would go with coopctl's connection anyway */
    char said[COOP_TEXT_MAX];
    snprintf(said, sizeof said, "%s", coop_errmsg(NULL));
    const char *why = ctl_not_done(x, id, said);
    coop_cancel(x->c, id);
    return ctl_error("wait", e,
                     "timed out after %u ms: job %llu cancelled (with --wait a job does "
                     "not outlive coopctl)%s",
                     t, (unsigned long long)id, why);
  }
  if (e) return ctl_fail("wait", e);
  print_result(x, &res);
  r = res.state == COOP_STATE_DONE ? write_outputs(s) : 1;
  coop_result_free(&res);
  return r;
}

static int cmd_submit(struct ctl *x, int argc, char **argv) {
  struct sopts o = {0};
  const struct opt opts[] = {{"wg", &o.wg, NULL},
                             {"coop", NULL, &o.coop},
                             {"query-barrier", NULL, &o.query},
                             {"wait", NULL, &o.wait},
                             {"timeout", &o.timeout, NULL},
                             {"period", &o.period, NULL},
                             {"count", &o.count, NULL},
                             {"duration", &o.duration, NULL},
                             {"deadline", &o.deadline, NULL},
                             {"device", &o.device, NULL},
                             {"priority", &o.priority, NULL},
                             {0}};
  char *pos[COOP_MAX_ARGS + 2];
  int npos, r = ctl_parse(x, "submit", argc, argv, opts, pos, &npos, COOP_MAX_ARGS + 2);
  if (r) return r == 1 ? 0 : r;
  if (npos < 1) return ctl_usage("submit", "KERNEL is missing");
  if (npos > COOP_MAX_ARGS + 1) return ctl_usage("submit", "at most %d ARGs", COOP_MAX_ARGS);
  struct sargs s = {0};
  coop_job *j = NULL;
  r = build_job(x, &o, pos, npos, &s, &j);
  if (!r) r = submit_run(x, &o, j, &s);
  coop_job_free(j);
  sargs_free(&s);
  return r;
}

/* ---- commands ---- */

static const struct cmd cmds[] = {
    {"kernels", "list the registered kernels", "kernels",
     "Lists the kernels coopd has registered, one per line:\n"
     "  NAME cooperative|noncooperative ARGS\n"
     "ARGS is the comma-separated signature, each argument NAME:TYPE (TYPE alone when the\n"
     "kernel names none; u32 i32 u64 i64 f32 f64 buf), or - for none. Indented lines below\n"
     "give the kernel's `//@coop require` rules, which coopd checks at every submission,\n"
     "and, for a kernel an author added, its author's uid.\n",
     cmd_kernels},
    {"kernel", "add or remove a kernel of your own (kernel authors)",
     "kernel add FILE | kernel remove NAME [--timeout MS]",
     "For the users [kernels] authors names in coopd.ini (docs/kernels.md, \"Adding a kernel\n"
     "without root\"). Waits until coopd has built its new kernel set, then prints the\n"
     "outcome; exit status 1 with coopd's message when it refused or did not build it.\n"
     "  add FILE      send FILE's source (its first line the //@coop directive) as a kernel,\n"
     "                or as the new version of your own kernel of its name; prints its\n"
     "                signature, or the checker's or compiler's log at FILE's lines\n"
     "  remove NAME   remove a kernel you added (root: anyone's)\n"
     "  --timeout MS  while another reload is in progress, or your last one ended less\n"
     "                than coopd's [kernels] author_reload_interval_ms ago (10 s by\n"
     "                default; root: none), ask again for at most MS (default: until it\n"
     "                is taken); coopd's reason is printed once on stderr\n",
     cmd_kernel},
    {"reload", "read the kernels again and build them (kernel authors, root)",
     "reload [--timeout MS]",
     "Asks coopd to read its kernels again (its directories and the authors') and build\n"
     "them, as SIGHUP does without reading the settings; waits for the outcome and prints\n"
     "it, with the compiler's log when the build failed (exit status 1).\n"
     "  --timeout MS  while another reload is in progress, or an author's last one ended\n"
     "                less than [kernels] author_reload_interval_ms ago, ask again for at\n"
     "                most MS (default: until it is taken)\n",
     cmd_reload},
    {"submit", "submit a job; print its id, or with --wait its result",
     "submit KERNEL [--wg N] [--coop] [--query-barrier] [--period US (--count N | --duration MS)"
     " [--deadline US]] [--device D] [--priority P] [--wait [--timeout MS]] [ARG...]",
     "Submits a job running KERNEL on N workgroups and prints its id, or with --wait its\n"
     "result (exit status 0 only if it ends done; a progress line on a terminal).\n"
     "  --wg N            N workgroups: at most N for a cooperative kernel (default: every\n"
     "                    worker of the device), exactly N for another (required)\n"
     "  --coop            optional: coopd knows each kernel's kind; given, it must match\n"
     "  --query-barrier   cooperative: the query variant of the resizing barrier\n"
     "  --period US       a periodic job: an instance every US microseconds, until\n"
     "  --count N         N instances and/or\n"
     "  --duration MS     MS milliseconds have passed (coopd refuses a period above its\n"
     "                    [jobs] max_period_ms, 1 s, and a series longer than\n"
     "                    max_series_ms, 1 h, by default)\n"
     "  --deadline US     an instance finishing later than release + US is a miss\n"
     "                    (coopd refuses US below its [jobs] min_deadline_us)\n"
     "  --device D        run on device D, and stay there (default: the least loaded one\n"
     "                    with N workers, which coopd may move to another while it\n"
     "                    waits)\n"
     "  --priority P      -100..100 (default 0); above 0 only as far as coopd's [limits]\n"
     "                    allow this user. A job that cannot get its workers has running\n"
     "                    cooperative jobs of lower priority suspended until it ends\n"
     "  --timeout MS      with --wait (refused without it): give up after MS milliseconds;\n"
     "                    the job is cancelled (exit 1), and the message says why it had\n"
     "                    not ended (queued, waiting for workgroups, or running on M of N)\n"
     "ARGs, in the kernel's argument order:\n"
     "  u32:V i32:V u64:V i64:V f32:V f64:V   scalars (integers in decimal or 0x hex; a\n"
     "                    value past the type's range, 1e40 for f32, is refused)\n"
     "  V                 a bare number: the scalar type the kernel declares there\n"
     "                    (coopctl asks coopd's kernel list; refused where it takes a\n"
     "                    buffer, or where V does not fit the type)\n"
     "  in:PATH           IN buffer holding the file's bytes (coopctl reads the file; at\n"
     "                    most the device arena's size, which coopd's buffers must fit)\n"
     "  out:BYTES:PATH    OUT buffer of BYTES, written to PATH when the job is done\n"
     "  inout:PATH        the file's bytes in, the buffer written back to PATH\n"
     "  zeros:BYTES       IN buffer of BYTES zero bytes\n"
     "out: and inout: need --wait; their PATHs are checked writable before the job is\n"
     "submitted. A regular file is written beside itself and renamed over (keeping its\n"
     "mode): a failed write leaves it as it was; a FIFO or a device is written in place.\n"
     "A negative number (-5) is a value, not an option; -- ends the options.\n"
     "Without --wait the job is detached: it goes on after\n"
     "coopctl exits, and `coopctl wait JOB` (any connection of the same user) reports it.\n"
     "With --wait it is cancelled if coopctl dies first.\n",
     cmd_submit},
    {"status", "show one job, or all jobs this user may see", "status [JOB]",
     "Shows one job, or every job this user may see (root: all), with its state\n"
     "(\"suspended\": a running cooperative job whose workgroups a job of higher priority\n"
     "or another user's share took; it resumes where it stopped), kernel, workgroups,\n"
     "priority, instances and deadline misses so far.\n",
     cmd_status},
    {"wait", "wait for a job and print its result", "wait JOB [--timeout MS]",
     "Waits for a job (up to MS milliseconds) and prints its result: state, gather and\n"
     "execution times, workgroup counts, instances. Exit status 0 only if it ended done.\n",
     cmd_wait},
    {"cancel", "cancel a job", "cancel JOB",
     "Asks coopd to cancel a job (wait JOB then says how it ended). A job that has\n"
     "already finished is left as it is: coopctl says how it ended and exits 1\n"
     "(--json: {\"job\":N,\"cancel\":\"finished\",\"state\":\"done\"}).\n",
     cmd_cancel},
    {"migrate", "move a cooperative job to another device", "migrate JOB DEVICE [--timeout MS]",
     "Moves a cooperative job (one task, no device buffers; running or waiting) to\n"
     "DEVICE: coopd suspends it where it runs, copies its state and its buffers over, and\n"
     "it resumes on DEVICE where it stopped once a cooperative slot is free there.\n"
     "coopctl then follows the job until it runs on DEVICE, ends, or MS milliseconds\n"
     "(default 30000; 0: do not wait) pass, and says which and how long it took (and,\n"
     "still waiting, why). A job moved by hand stays on DEVICE: it never moves by itself.\n"
     "Only the job's owner (or root) may move it. A user's moves are at least a second\n"
     "apart (root's are not bound): one asked sooner is refused EBUSY, saying when to\n"
     "ask again.\n",
     cmd_migrate},
    {"stats", "the daemon's counters and recent gather times", "stats",
     "The daemon's version and uptime, device, workers, clients, job counters, and the\n"
     "p50/p90/p99/max gather times of its recent non-cooperative task instances.\n",
     cmd_stats},
    {"top", "a live view of the device: workgroups, jobs, gather times",
     "top [--interval MS] [--iterations N] [--device D]",
     "A live view, refreshed every MS milliseconds (default 1000), N times (default: until\n"
     "interrupted), like nvtop; the map and the jobs are those of device D (default 0):\n"
     "  header     device, compute units, workers, clients, running and queued jobs, and\n"
     "             the p50/p90/p99/max gather times of recent non-cooperative tasks\n"
     "  map        one character per worker workgroup, in the megakernel's order\n"
     "             (64 a line, or as many as fit the terminal):\n"
     "               A-Z  runs a workgroup of that job (legend below the map)\n"
     "               a-z  reserved for that (cooperative) job: taken back, kept for its forks\n"
     "               #    another user's job    .  free\n"
     "               * ~  running / reserved, jobs past the 26th\n"
     "  jobs       JOB, WG (its letter), STATE, KERNEL, KIND (coop or noncoop), N (the\n"
     "             workgroups asked for), M (a cooperative job's active count now), WORKERS\n"
     "             (workgroups it holds now), KILLS, FORKS; queued jobs show - for those\n"
     "  UTIL%      the share of the device's worker workgroups the job holds now\n"
     "  arena      the device's buffer arena: used by its running jobs' buffers, free\n"
     "On a terminal, keys: q quits, s changes the jobs' order (job id, workers held, kernel).\n"
     "You see your own jobs (root: every job). A coopd older than the workgroup view gets\n"
     "a note instead of the map. On a terminal the screen is redrawn; otherwise snapshots\n"
     "follow each other. With --json, one JSON object per snapshot, a line each:\n"
     "{\"stats\":{...},\"jobs\":[queued and running jobs as status shows them],\n"
     " \"top\":{\"device\":0,\"map\":\"AAa#..\",\"workgroups\":[{\"state\":\"running\",\"job\":3},."
     "..],\n"
     "        "
     "\"jobs\":[{\"job\":3,\"mark\":\"A\",\"kernel\":...,\"cooperative\":true,\"groups\":4,\n"
     "                 \"m\":2,\"workers\":3,\"kills\":1,\"forks\":0},...]}}\n"
     "(\"top\":null and a \"note\" from an older coopd).\n",
     cmd_top},
    {"metrics", "the daemon's metrics in the Prometheus text format", "metrics [--out FILE]",
     "The daemon's counters in the Prometheus text exposition format (docs/cluster.md):\n"
     "jobs by state, finished jobs, clients, the watchdog's counts, and per device: workers,\n"
     "busy and lost workers, jobs, arena size and use, the gather time histogram\n"
     "(coop_gather_seconds) and deadline instances and misses.\n"
     "  --out FILE   write FILE instead of stdout: a regular file through a temporary file\n"
     "               and a rename (for node_exporter's textfile collector), a FIFO or a\n"
     "               device in place (never replaced)\n",
     cmd_metrics},
    {"render", "graphics-like periodic tasks: gather, execution, period",
     "render --class light|medium|heavy --wg K [--period MS] [--duration MS] --for SECONDS"
     " [--size N] [--device D]",
     "Graphics-like periodic tasks (FSE 2017 Sec. 5.2): light P=70 ms E=3 ms, medium P=40\n"
     "E=3, heavy P=40 E=10; --period and --duration override P and E (ms). Uses the\n"
     "non-cooperative kernel render (c = a x b for N x N floats, N default 48, repeated\n"
     "reps times). A probe with reps=1 calibrates reps so one task takes about E; then one\n"
     "periodic job (period P, deadline P, K workgroups) runs for SECONDS. Probes that\n"
     "disagree (reps=R taking over 3R times reps=1) run again, then get a warning. Prints\n"
     "the execution obtained against E (a warning when off by over 2x), gather time,\n"
     "execution time and achieved period (p50/p90/p99/max, ms), instances, deadline\n"
     "misses and reps, and checks the last c against the CPU (exit 1 on a mismatch).\n"
     "--device D runs the probes and the job on device D (default: the least loaded one).\n",
     cmd_render},
    {"app", "run an application (bfs, l-sssp, ..., game) and check it against the CPU",
     "app NAME [--graph FILE [--graph-format FMT] | --gen SPEC | --scale S --input I]"
     " [--source V | --sources V,V,...] [--groups N] [--device D]"
     " [--query-barrier | --original]"
     " [--out FILE [--binary]]"
     " [--check] [--timeout MS] | app --list",
     "Runs one of the applications of paper 004 Table 1 (and thesis 000's bc) as ONE\n"
     "cooperative job of its kernel (coopd loads them from kernels/apps/NAME.cl, installed\n"
     "in share/coop/kernels), on the same task description the in-process tests run.\n"
     "Buffers past the daemon's inline limit travel in memfds: coopd reads the input from\n"
     "them and writes the output back into them.\n"
     "  --list            the applications, their input, output and source of truth\n"
     "input (default: --input 0 --scale 0):\n"
     "  --graph FILE      graph apps: read FILE (- for stdin): DIMACS .gr, Matrix Market,\n"
     "                    or an edge list, detected from the content (docs/inputs.md)\n"
     "  --graph-format F  auto (default), dimacs, mtx or edges\n"
     "  --gen SPEC        graph apps: generate rmat:SCALE[:EF[:SEED]], road:WxH[:SEED],\n"
     "                    circuit:N[:SEED] or random:N:M[:MAXW[:SEED]] (SCALE 1..30,\n"
     "                    sizes >= 1; docs/inputs.md gives the upper bounds)\n"
     "  --input I         test input I of the application (as tests/test_apps.c runs them)\n"
     "  --scale S         ... at about 2^S times the test size (0..12)\n"
     "  --source V        bfs, l-sssp, p-sssp: the source vertex (default 0, but 1 for the\n"
     "                    test input split-n..., whose vertex 0 is isolated)\n"
     "  --sources V,V,... one job per source vertex (up to 4096), the graph uploaded once\n"
     "                    as device buffers: a line per source, then the total time\n"
     "run:\n"
     "  --groups N        N workgroups (default: every worker of the device)\n"
     "  --device D        run on device D (default: the daemon picks the least loaded one\n"
     "                    with N workers; N then defaults to device 0's workers)\n"
     "  --query-barrier   the query variant of the resizing barrier\n"
     "  --original        the original form (plain global barriers, no kill or fork)\n"
     "  --timeout MS      give up after MS milliseconds (coopctl cancels the job; exit 1);\n"
     "                    with --sources also while waiting for room to upload the input\n"
     "output:\n"
     "  --out FILE        write the output to FILE (- for stdout: the report then goes to\n"
     "                    stderr): text, one element per line in decimal (f32: %.9g), in\n"
     "                    the layout --list gives\n"
     "  --binary          ... as raw little-endian 4-byte elements instead\n"
     "  --check           compare the output with the CPU reference; a difference prints\n"
     "                    the first one and exits 3\n"
     "Prints the input, the job's result (as wait does; --json: one object with the job's\n"
     "fields, \"output\" and \"check\") and the check. Exit status: 0 done (and equal to the\n"
     "CPU reference with --check), 1 error (unreadable or malformed input, daemon error,\n"
     "the job did not end done), 2 bad usage (unknown NAME, --source out of range), 3 the\n"
     "output differs from the CPU reference.\n",
     cmd_app},
};

#define NCMDS (sizeof cmds / sizeof *cmds)

static const struct cmd *find_cmd(const char *name) {
  for (size_t i = 0; i < NCMDS; i++)
    if (!strcmp(cmds[i].name, name)) return &cmds[i];
  return NULL;
}

/* The command nearest to a mistyped one, if it is near enough to be the
 * one meant (at most 2 edits, and fewer than half the word's letters). */
static const char *did_you_mean(const char *word) {
  const char *best = NULL;
  size_t d = SIZE_MAX;
  for (size_t i = 0; i < NCMDS; i++) {
    size_t e = edit_distance(word, cmds[i].name);
    if (e < d) d = e, best = cmds[i].name;
  }
  return d <= 2 && d * 2 < strlen(word) ? best : NULL;
}

static int unknown_command(const char *word) {
  const char *near = did_you_mean(word);
  if (near) return ctl_usage(NULL, "unknown command %s (did you mean %s?)", word, near);
  return ctl_usage(NULL, "unknown command %s", word);
}

static void help(void) {
  char path[256];
  printf(
      "usage: coopctl [--socket PATH] [--json] COMMAND [ARGS...]\n"
      "       coopctl COMMAND --help\n\n"
      "Talks to coopd, the daemon that shares a GPU between cooperative kernels and\n"
      "short non-cooperative tasks.\n\ncommands:\n");
  for (size_t i = 0; i < NCMDS; i++) printf("  %-8s %s\n", cmds[i].name, cmds[i].brief);
  printf(
      "\noptions (before or after COMMAND):\n"
      "  --socket PATH  coopd's socket; default $COOP_SOCKET, else $XDG_RUNTIME_DIR/coop.sock\n"
      "                 where a socket is there (not for root), else /run/coop/coop.sock\n");
  if (coop_socket_path(NULL, path, sizeof path) == 0) printf("                 (here: %s)\n", path);
  printf(
      "  --json         print one JSON object (top: one per snapshot, a line each)\n"
      "  --help, -h     this help; COMMAND --help (or help COMMAND) explains a command\n"
      "  --             after COMMAND: the rest are arguments, not options (a negative\n"
      "                 number such as -5 is an argument anyway)\n"
      "  --version, -V  before COMMAND: coopctl's version (stats shows the daemon's)\n\n"
      "exit status: 0 success; 1 error, or a waited job that did not end done; 2 bad usage;\n"
      "             3 app --check: the output differs from the CPU reference\n");
}

/* coopctl help [COMMAND] */
static int help_command(int argc, char **argv) {
  if (argc < 2) return help(), 0;
  if (argc > 2) return ctl_usage(NULL, "help takes one COMMAND");
  if (!find_cmd(argv[1])) return unknown_command(argv[1]);
  cmd_help(argv[1]);
  return 0;
}

int main(int argc, char **argv) {
  struct ctl x = {0};
  g_ctl = &x;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help();
      return 0;
    } else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
      printf("coopctl %s\n", COOP_VERSION);
      return 0;
    } else if (!strcmp(a, "--json")) {
      x.json = 1;
    } else if (!strcmp(a, "--socket") && i + 1 < argc) {
      x.socket = argv[++i];
      if (!*x.socket) return empty_socket(NULL);
    } else if (!strncmp(a, "--socket=", 9)) {
      x.socket = a + 9;
      if (!*x.socket) return empty_socket(NULL);
    } else {
      return ctl_usage(NULL, "%s %s",
                       !strcmp(a, "--socket") ? "missing value for" : "unknown option", a);
    }
  }
  if (i == argc) return ctl_usage(NULL, "no COMMAND");
  if (!strcmp(argv[i], "help")) return help_command(argc - i, argv + i);
  const struct cmd *c = find_cmd(argv[i]);
  if (!c) return unknown_command(argv[i]);
  int r = c->fn(&x, argc - i, argv + i);
  coop_disconnect(x.c);
  return r;
}
