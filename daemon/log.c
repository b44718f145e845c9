/* log.c: see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* atomics: a reload changes them on the loop thread while others log */
static atomic_int log_lv = LOG_LV_INFO, log_stderr = 1, log_syslog, log_journal;
static const char *const log_names[] = {"error", "warn", "info", "debug"};
/* syslog(3) priorities, which journald reads from a "<N>" prefix */
static const int log_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

int log_level_parse(const char *s) {
  for (int i = 0; i < 4; i++)
    if (strcmp(s, log_names[i]) == 0) return i;
  return strcmp(s, "warning") ? -1 : LOG_LV_WARN; /* syslog's and journalctl's word */
}

const char *log_level_name(int level) { return level >= 0 && level < 4 ? log_names[level] : "?"; }

int log_under_journal(void) {
  const char *js = getenv("JOURNAL_STREAM");
  struct stat st;
  unsigned long long dev, ino;
  if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
      (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
    return 1;
  const char *inv = getenv("INVOCATION_ID");
  return inv && *inv && !isatty(STDERR_FILENO);
}

void log_setup(int level, int use_stderr, int use_syslog) {
  static atomic_int checked;
  if (!atomic_exchange(&checked, 1)) atomic_store(&log_journal, log_under_journal());
  atomic_store(&log_lv, level);
  atomic_store(&log_stderr, use_stderr);
  if (use_syslog && !atomic_exchange(&log_syslog, 1)) openlog("coopd", LOG_PID, LOG_DAEMON);
  if (!use_syslog) atomic_store(&log_syslog, 0);
}

/* One "<N>" per line: journald splits a multi-line message (a compiler log)
 * into entries, and a line without the prefix would be logged at info. */
static void to_journal(int lv, const char *line) {
  char out[4096];
  size_t n = 0;
  for (const char *p = line; *p && n < sizeof out - 8;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    int w = snprintf(out + n, sizeof out - n, "<%d>%.*s\n", log_prio[lv], (int)len, p);
    if (w < 0 || (size_t)w >= sizeof out - n) break;
    n += (size_t)w;
    p += len + (nl != NULL);
  }
  fwrite(out, 1, n, stderr); /* one write: stdio locks the stream */
}

static void to_terminal(int lv, const char *line) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  /* one fprintf per line: stdio locks the stream, so threads do not mix */
  fprintf(stderr, "%04d-%02d-%02d %02d:%02d:%02d.%03ld coopd %s: %s\n", tm.tm_year + 1900,
          tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
          log_names[lv], line);
}

void log_msg(int lv, const char *fmt, ...) {
  if (lv > atomic_load(&log_lv)) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (atomic_load(&log_stderr)) (atomic_load(&log_journal) ? to_journal : to_terminal)(lv, line);
  if (atomic_load(&log_syslog)) syslog(log_prio[lv], "%s", line);
}

/* 0 when a datagram or stream socket at path takes a connection, as
 * syslog(3) tries them, else the errno of the last try. */
static int socket_reachable(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return ENAMETOOLONG;
  memcpy(a.sun_path, path, strlen(path) + 1);
  const int types[2] = {SOCK_DGRAM, SOCK_STREAM};
  int e = 0;
  for (int i = 0; i < 2; i++) {
    int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int r = connect(fd, (struct sockaddr *)&a, sizeof a);
    e = r ? errno : 0;
    close(fd);
    if (!r) return 0;
  }
  return e;
}

void log_syslog_check(void) {
  if (!atomic_load(&log_syslog)) return;
  const char *path = getenv("COOP_TEST_SYSLOG_PATH"); /* a test's hook */
  if (!path || !*path) path = _PATH_LOG;
  int e = socket_reachable(path);
  if (e)
    log_warn(
        "[log] syslog = yes, but %s: %s: no syslog daemon listens there; nothing reaches "
        "syslog, the log goes to stderr only",
        path, strerror(e));
}
