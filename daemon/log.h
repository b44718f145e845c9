/*
 * log.h: coopd's log, with levels, to stderr and optionally syslog.
 * Thread-safe (one write per line); the device thread logs too.
 */
#ifndef COOPD_LOG_H
#define COOPD_LOG_H

enum log_level { LOG_LV_ERROR = 0, LOG_LV_WARN, LOG_LV_INFO, LOG_LV_DEBUG };

/* Parses "error", "warn", "info", "debug"; -1 if none. */
int log_level_parse(const char *s);
void log_setup(int level, int use_stderr, int use_syslog);
void log_msg(int lv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LV_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LV_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LV_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LV_DEBUG, __VA_ARGS__)

#endif /* COOPD_LOG_H */
