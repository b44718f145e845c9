/* confreload.c: see confreload.h. */
#include "confreload.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

enum kind { STR, UINT, INT, OCTAL, ULL, LEVEL, BOOL };
struct rkey {
  const char *section, *name;
  enum kind kind;
  size_t off, size;
  int live; /* read by the loop thread only: safe to change while running */
};
#define F(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
/* Restart keys and why: [device] and arena_mb are the device processes'
 * megakernels; socket, socket_mode and journal are opened at start; the
 * device threads read watchdog_ms, gather_budget_ms, hang_ms and
 * reserve_percent without a lock; [metrics]' listener is bound at start. */
static const struct rkey rkeys[] = {
    {"device", "backend", STR, F(backend), 0},
    {"device", "devices", STR, F(devices), 0},
    {"device", "platform", STR, F(platform), 0},
    {"device", "device", STR, F(device), 0},
    {"device", "platform_index", INT, F(platform_index), 0},
    {"device", "device_index", INT, F(device_index), 0},
    {"device", "local_size", UINT, F(local_size), 0},
    {"device", "max_workgroups", UINT, F(max_workgroups), 0},
    {"device", "arena_mb", UINT, F(arena_mb), 0},
    {"server", "socket", STR, F(socket), 0},
    {"server", "socket_mode", OCTAL, F(socket_mode), 0},
    {"server", "journal", STR, F(journal), 0},
    {"server", "max_clients", UINT, F(max_clients), 1},
    {"kernels", "dirs", STR, F(kernel_dirs), 1},
    {"limits", "max_jobs_per_client", UINT, F(max_jobs_per_client), 1},
    {"limits", "max_bytes_per_client", ULL, F(max_bytes_per_client), 1},
    {"limits", "max_finished_per_client", UINT, F(max_finished_per_client), 1},
    {"log", "level", LEVEL, F(log_level), 1},
    {"log", "syslog", BOOL, F(log_syslog), 1},
    {"jobs", "watchdog_ms", UINT, F(watchdog_ms), 0},
    {"jobs", "grace_ms", UINT, F(grace_ms), 1},
    {"jobs", "gather_budget_ms", UINT, F(gather_budget_ms), 0},
    {"jobs", "hang_ms", UINT, F(hang_ms), 0},
    {"jobs", "reserve_percent", UINT, F(reserve_percent), 0},
    {"metrics", "listen", STR, F(metrics_listen), 0},
    {"metrics", "allow_remote", BOOL, F(metrics_allow_remote), 0},
    {"metrics", "max_connections", UINT, F(metrics_max_connections), 1},
    {"metrics", "timeout_ms", UINT, F(metrics_timeout_ms), 1},
};
#undef F

static void show(const struct rkey *k, const struct config *c, char *b, size_t n) {
  const char *p = (const char *)c + k->off;
  int i;
  unsigned u;
  unsigned long long ull;
  switch (k->kind) {
    case STR:
      snprintf(b, n, "\"%s\"", p);
      return;
    case INT:
    case LEVEL:
    case BOOL:
      memcpy(&i, p, sizeof i);
      if (k->kind == LEVEL) snprintf(b, n, "%s", log_level_name(i));
      if (k->kind == BOOL) snprintf(b, n, "%s", i ? "yes" : "no");
      if (k->kind == INT) snprintf(b, n, "%d", i);
      return;
    case UINT:
    case OCTAL:
      memcpy(&u, p, sizeof u);
      snprintf(b, n, k->kind == OCTAL ? "%04o" : "%u", u);
      return;
    case ULL:
      memcpy(&ull, p, sizeof ull);
      snprintf(b, n, "%llu", ull);
      return;
  }
}

int confreload_apply(struct config *run, const struct config *nc) {
  int restart = 0;
  /* compared as bytes: config_defaults() zeroes the struct, so the bytes
   * past a string's NUL are zero in both */
  for (size_t i = 0; i < sizeof rkeys / sizeof rkeys[0]; i++) {
    const struct rkey *k = &rkeys[i];
    char *cur = (char *)run + k->off;
    const char *want = (const char *)nc + k->off;
    if (k->kind == STR ? !strcmp(cur, want) : !memcmp(cur, want, k->size)) continue;
    char was[1100], now[1100];
    show(k, run, was, sizeof was);
    show(k, nc, now, sizeof now);
    if (!k->live) {
      restart++;
      log_warn("SIGHUP: [%s] %s changed (%s -> %s): needs a restart; %s stays until then",
               k->section, k->name, was, now, was);
      continue;
    }
    memcpy(cur, want, k->size);
    log_info("SIGHUP: [%s] %s: %s -> %s", k->section, k->name, was, now);
  }
  log_setup(run->log_level, 1, run->log_syslog);
  /* a key this table does not know yet (added to config.h since) is not
   * applied, and not left unsaid either */
  struct config all;
  memcpy(&all, run, sizeof all);
  for (size_t i = 0; i < sizeof rkeys / sizeof rkeys[0]; i++)
    memcpy((char *)&all + rkeys[i].off, (const char *)nc + rkeys[i].off, rkeys[i].size);
  if (memcmp(&all, nc, sizeof all)) {
    restart++;
    log_warn("SIGHUP: other settings changed too (see coopd --check-config): they need a restart");
  }
  return restart;
}
