/* log.c: see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static int log_lv = LOG_LV_INFO, log_stderr = 1, log_syslog;
static const char *const log_names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *s) {
  for (int i = 0; i < 4; i++)
    if (strcmp(s, log_names[i]) == 0) return i;
  return -1;
}

void log_setup(int level, int use_stderr, int use_syslog) {
  log_lv = level;
  log_stderr = use_stderr;
  log_syslog = use_syslog;
  if (use_syslog) openlog("coopd", LOG_PID, LOG_DAEMON);
}

void log_msg(int lv, const char *fmt, ...) {
  if (lv > log_lv) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (log_stderr) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    /* one fprintf per line: stdio locks the stream, so threads do not mix */
    fprintf(stderr, "%02d:%02d:%02d.%03ld coopd %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000, log_names[lv], line);
  }
  if (log_syslog) {
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    syslog(prio[lv], "%s", line);
  }
}
