/*
 * log.h: coopd's log, with levels, to stderr and optionally syslog.
 * Thread-safe (one write per line); the device thread logs too.
 *
 * Under systemd (stderr is the journal's stream) each line starts with its
 * syslog priority, "<6>...", which journald takes as the entry's priority,
 * and carries no date (the journal has one); otherwise lines carry the date
 * and time and the level's name.
 */
#ifndef COOPD_LOG_H
#define COOPD_LOG_H

enum log_level { LOG_LV_ERROR = 0, LOG_LV_WARN, LOG_LV_INFO, LOG_LV_DEBUG };

/* Parses "error", "warn" (or "warning"), "info", "debug"; -1 if none. */
int log_level_parse(const char *s);
const char *log_level_name(int level);
/* May be called again (SIGHUP) to change the level or syslog. */
void log_setup(int level, int use_stderr, int use_syslog);
/* With syslog on, a warning when nothing listens on syslog's socket
 * (/dev/log): syslog(3) drops every line without a word (a container, a
 * host without a syslog daemon). Called once at start and at each reload,
 * not per line. COOP_TEST_SYSLOG_PATH names another socket (tests). */
void log_syslog_check(void);
/* Whether stderr goes to the journal: JOURNAL_STREAM names stderr's device
 * and inode (systemd.exec(5)), or INVOCATION_ID is set (a systemd service)
 * and stderr is not a terminal. log_setup() checks it once. */
int log_under_journal(void);
void log_msg(int lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LV_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LV_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LV_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LV_DEBUG, __VA_ARGS__)

#endif /* COOPD_LOG_H */
