/* config.c: see config.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ini.h>
#include <netinet/in.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coop_rt.h"
#include "log.h"
#include "priority.h"
#include "wire.h"

#ifndef COOP_KERNEL_DIR
#define COOP_KERNEL_DIR "/usr/local/share/coop/kernels"
#endif

static void copy(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s); }

/* Added kernels live in coopd's state directory: systemd's StateDirectory=
 * (the first of $STATE_DIRECTORY), /var/lib/coop for root, else the
 * user's XDG state directory. */
static void default_authored_dir(char *d, size_t n) {
  const char *sd = getenv("STATE_DIRECTORY"), *xs = getenv("XDG_STATE_HOME"),
             *home = getenv("HOME");
  if (sd && sd[0] == '/')
    snprintf(d, n, "%.*s/kernels", (int)strcspn(sd, ":"), sd);
  else if (geteuid() == 0 || !((xs && xs[0] == '/') || (home && home[0] == '/')))
    snprintf(d, n, "/var/lib/coop/kernels");
  else if (xs && xs[0] == '/')
    snprintf(d, n, "%s/coop/kernels", xs);
  else
    snprintf(d, n, "%s/.local/state/coop/kernels", home);
}

void config_defaults(struct config *c) {
  memset(c, 0, sizeof *c);
  copy(c->backend, sizeof c->backend, "auto");
  c->platform_index = -1;
  c->device_index = -1;
  c->arena_mb = 256;
  c->device_mb = 256;
  c->park_ms = 100;
  c->reload_in_place = 1;
  c->idle_spin_us = -1;
  c->warm_early_us = 1000;
  c->max_registers = CONFIG_MAX_REGISTERS;
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if (geteuid() != 0 && xdg && *xdg)
    snprintf(c->socket, sizeof c->socket, "%s/coop.sock", xdg);
  else
    copy(c->socket, sizeof c->socket, "/run/coop/coop.sock");
  c->socket_mode = 0660;
  c->max_clients = 64;
  c->hello_timeout_ms = 2000;
  copy(c->kernel_dirs, sizeof c->kernel_dirs, COOP_KERNEL_DIR);
  default_authored_dir(c->authored_dir, sizeof c->authored_dir);
  c->max_kernels_per_author = 16;
  c->author_reload_interval_ms = 10000;
  c->author_build_ms = 60000;
  c->max_source_bytes = 64u << 10;
  c->max_jobs_per_client = 64;
  c->max_bytes_per_client = 256ull << 20;
  c->max_finished_per_client = 256;
  c->max_clients_per_uid = 16;
  c->max_jobs_per_uid = 128;
  c->max_bytes_per_uid = 512ull << 20;
  c->max_detached_kept_per_uid = 256;
  c->max_detached_kept = 1024;
  c->max_buffers_per_uid = 256;
  copy(c->subordinate_ids, sizeof c->subordinate_ids, "/etc/subuid");
  c->max_buffer_percent_per_uid = 50;
  c->max_warm_percent_per_uid = 25;
  c->log_level = LOG_LV_INFO;
  c->grace_ms = 5000;
  c->gather_budget_ms = 10000;
  c->hang_ms = 5000;
  c->task_max_ms = 5000; /* how it was chosen: docs/daemon.md, "Execution bound" */
  c->restart_hold_ms = 1000;
  c->snapshot_percent = 25;
  c->reserve_percent = 50;
  c->tasks_per_uid = 4;
  c->task_percent_per_uid = 60;
  c->min_deadline_us = 100;
  c->undated_due_ms = 50;
  c->max_period_ms = 1000;
  c->max_series_ms = 3600000;
  c->metrics_max_connections = 8;
  c->metrics_max_per_peer = 2;
  c->metrics_timeout_ms = 5000;
  c->metrics_request_ms = 2000;
}

static int parse_uint(const char *v, unsigned long long max, int base, unsigned long long *out) {
  char *end;
  errno = 0;
  if (*v == '-' || *v == '\0') return -1;
  unsigned long long x = strtoull(v, &end, base);
  if (errno || *end != '\0' || x > max) return -1;
  *out = x;
  return 0;
}

static int parse_bool(const char *v, int *out) {
  if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1")) return *out = 1, 0;
  if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0")) return *out = 0, 0;
  return -1;
}

/* One table row per key (struct config_key): how it parses, where it goes,
 * the largest value. K_LIVE: SIGHUP applies a change at once, since only
 * the loop thread reads the key (confreload.c). The others need a restart,
 * and why: [device] is the
 * device processes' megakernels; socket, socket_mode and journal are
 * opened at start; the device threads read park_ms, watchdog_ms,
 * gather_budget_ms, hang_ms, task_max_ms, reserve_percent, tasks_per_uid and
 * task_percent_per_uid without a lock; [metrics]'
 * listener is bound at start. */
enum kind { K_STR, K_UINT, K_INT, K_OCTAL, K_BYTES, K_LEVEL, K_BOOL, K_TYPE = 15, K_LIVE = 16 };
#define F(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
static const struct config_key keys[] = {
    {"device", "backend", K_STR, F(backend), 0},
    {"device", "devices", K_STR, F(devices), 0},
    {"device", "platform", K_STR, F(platform), 0},
    {"device", "device", K_STR, F(device), 0},
    {"device", "platform_index", K_INT, F(platform_index), 64},
    {"device", "device_index", K_INT, F(device_index), 64},
    {"device", "local_size", K_UINT, F(local_size), 1024},
    {"device", "max_workgroups", K_UINT, F(max_workgroups), 1088},
    {"device", "arena_mb", K_UINT, F(arena_mb), 1u << 16},
    {"device", "device_mb", K_UINT, F(device_mb), 1u << 16},
    {"device", "park_ms", K_UINT, F(park_ms), 1u << 31},
    {"device", "max_registers", K_UINT, F(max_registers), 255},
    {"device", "kernel_widths", K_BOOL, F(kernel_widths), 0},
    {"device", "idle_spin_us", K_INT, F(idle_spin_us), 100000},
    {"device", "warm_early_us", K_UINT, F(warm_early_us), 100000},
    {"server", "socket", K_STR, F(socket), 0},
    {"server", "socket_mode", K_OCTAL, F(socket_mode), 0777},
    {"server", "journal", K_STR, F(journal), 0},
    {"server", "max_clients", K_UINT | K_LIVE, F(max_clients), 100000},
    {"server", "hello_timeout_ms", K_UINT | K_LIVE, F(hello_timeout_ms), 1u << 31},
    {"kernels", "dirs", K_STR | K_LIVE, F(kernel_dirs), 0},
    {"kernels", "reload_in_place", K_BOOL | K_LIVE, F(reload_in_place), 0},
    {"kernels", "authors", K_STR | K_LIVE, F(authors), 0},
    {"kernels", "authored_dir", K_STR, F(authored_dir), 0},
    {"kernels", "max_per_author", K_UINT | K_LIVE, F(max_kernels_per_author), 1024},
    {"kernels", "author_reload_interval_ms", K_UINT | K_LIVE, F(author_reload_interval_ms),
     3600000},
    {"kernels", "author_build_ms", K_UINT | K_LIVE, F(author_build_ms), 600000},
    {"kernels", "max_source_bytes", K_BYTES | K_LIVE, F(max_source_bytes), COOP_WIRE_SOURCE_MAX},
    {"limits", "max_jobs_per_client", K_UINT | K_LIVE, F(max_jobs_per_client), 1u << 20},
    {"limits", "max_bytes_per_client", K_BYTES | K_LIVE, F(max_bytes_per_client), 1ull << 40},
    {"limits", "max_finished_per_client", K_UINT | K_LIVE, F(max_finished_per_client), 1u << 20},
    {"limits", "max_clients_per_uid", K_UINT | K_LIVE, F(max_clients_per_uid), 100000},
    {"limits", "max_jobs_per_uid", K_UINT | K_LIVE, F(max_jobs_per_uid), 1u << 20},
    {"limits", "max_bytes_per_uid", K_BYTES | K_LIVE, F(max_bytes_per_uid), 1ull << 40},
    {"limits", "max_detached_kept_per_uid", K_UINT | K_LIVE, F(max_detached_kept_per_uid),
     1u << 20},
    {"limits", "max_detached_kept", K_UINT | K_LIVE, F(max_detached_kept), 1u << 20},
    {"limits", "max_buffers_per_uid", K_UINT | K_LIVE, F(max_buffers_per_uid), 1u << 20},
    {"limits", "max_buffer_percent_per_uid", K_UINT | K_LIVE, F(max_buffer_percent_per_uid), 100},
    {"limits", "max_warm_percent_per_uid", K_UINT | K_LIVE, F(max_warm_percent_per_uid), 100},
    {"limits", "max_priority", K_UINT | K_LIVE, F(max_priority), COOP_PRIORITY_MAX},
    {"limits", "priority_users", K_STR | K_LIVE, F(priority_users), 0},
    {"limits", "subordinate_ids", K_STR | K_LIVE, F(subordinate_ids), 0},
    {"log", "level", K_LEVEL | K_LIVE, F(log_level), 0},
    {"log", "syslog", K_BOOL | K_LIVE, F(log_syslog), 0},
    {"jobs", "watchdog_ms", K_UINT, F(watchdog_ms), 1u << 31},
    {"jobs", "grace_ms", K_UINT | K_LIVE, F(grace_ms), 1u << 31},
    {"jobs", "gather_budget_ms", K_UINT, F(gather_budget_ms), 1u << 31},
    {"jobs", "hang_ms", K_UINT, F(hang_ms), 1u << 31},
    {"jobs", "task_max_ms", K_UINT, F(task_max_ms), 1u << 31},
    {"jobs", "restart_hold_ms", K_UINT, F(restart_hold_ms), 3600000u},
    {"jobs", "checkpoint_ms", K_UINT, F(checkpoint_ms), 86400000u},
    {"jobs", "checkpoint_snapshot_percent", K_UINT, F(snapshot_percent), 100},
    {"jobs", "reserve_percent", K_UINT, F(reserve_percent), 100},
    {"jobs", "tasks_per_uid", K_UINT, F(tasks_per_uid), 1u << 20},
    {"jobs", "task_percent_per_uid", K_UINT, F(task_percent_per_uid), 100},
    {"jobs", "min_deadline_us", K_UINT | K_LIVE, F(min_deadline_us), 1000000},
    {"jobs", "undated_due_ms", K_UINT | K_LIVE, F(undated_due_ms), 3600000},
    {"jobs", "max_period_ms", K_UINT | K_LIVE, F(max_period_ms), 4294967},
    {"jobs", "max_series_ms", K_UINT | K_LIVE, F(max_series_ms), 4294967295u},
    {"metrics", "listen", K_STR, F(metrics_listen), 0},
    {"metrics", "allow_remote", K_BOOL, F(metrics_allow_remote), 0},
    {"metrics", "max_connections", K_UINT | K_LIVE, F(metrics_max_connections), 1024},
    {"metrics", "max_connections_per_peer", K_UINT | K_LIVE, F(metrics_max_per_peer), 1024},
    {"metrics", "timeout_ms", K_UINT | K_LIVE, F(metrics_timeout_ms), 600000},
    {"metrics", "request_timeout_ms", K_UINT | K_LIVE, F(metrics_request_ms), 600000},
};
#undef F

int config_key_live(const struct config_key *k) { return !!(k->kind & K_LIVE); }

const struct config_key *config_keys(size_t *n) {
  *n = sizeof keys / sizeof keys[0];
  return keys;
}

int config_key_differs(const struct config_key *k, const struct config *a, const struct config *b) {
  const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;
  return (k->kind & K_TYPE) == K_STR ? strcmp(x, y) != 0 : memcmp(x, y, k->size) != 0;
}

void config_key_show(const struct config_key *k, const struct config *c, char *b, size_t n) {
  const char *p = (const char *)c + k->off;
  int i, type = k->kind & K_TYPE;
  unsigned u;
  unsigned long long ull;
  switch (k->kind & K_TYPE) {
    case K_STR:
      snprintf(b, n, "\"%s\"", p);
      return;
    case K_INT:
    case K_LEVEL:
    case K_BOOL:
      memcpy(&i, p, sizeof i);
      if (type == K_LEVEL) snprintf(b, n, "%s", log_level_name(i));
      if (type == K_BOOL) snprintf(b, n, "%s", i ? "yes" : "no");
      if (type == K_INT) snprintf(b, n, "%d", i);
      return;
    case K_UINT:
    case K_OCTAL:
      memcpy(&u, p, sizeof u);
      snprintf(b, n, type == K_OCTAL ? "%04o" : "%u", u);
      return;
    case K_BYTES:
      memcpy(&ull, p, sizeof ull);
      snprintf(b, n, "%llu", ull);
      return;
  }
}

/* "64M", "1G", "4096": bytes. */
static int parse_bytes(const char *v, unsigned long long *out) {
  char num[64];
  size_t n = strlen(v);
  if (n == 0 || n >= sizeof num) return -1;
  memcpy(num, v, n + 1);
  unsigned shift = 0;
  char u = num[n - 1];
  if (u == 'K' || u == 'k') shift = 10;
  if (u == 'M' || u == 'm') shift = 20;
  if (u == 'G' || u == 'g') shift = 30;
  if (shift) num[n - 1] = '\0';
  unsigned long long x;
  if (parse_uint(num, ULLONG_MAX >> shift, 10, &x)) return -1;
  *out = x << shift;
  return 0;
}

static int set_key(struct config *c, const struct config_key *k, const char *v) {
  char *p = (char *)c + k->off;
  unsigned long long x;
  switch (k->kind & K_TYPE) {
    case K_STR:
      if (strlen(v) >= k->size) return -1;
      memcpy(p, v, strlen(v) + 1);
      return 0;
    case K_UINT:
      if (parse_uint(v, k->max, 10, &x)) return -1;
      *(unsigned *)p = (unsigned)x;
      return 0;
    case K_OCTAL:
      if (parse_uint(v, k->max, 8, &x)) return -1;
      *(unsigned *)p = (unsigned)x;
      return 0;
    case K_INT:
      if (!strcmp(v, "-1")) return *(int *)p = -1, 0;
      if (parse_uint(v, k->max, 10, &x)) return -1;
      *(int *)p = (int)x;
      return 0;
    case K_BYTES:
      if (parse_bytes(v, &x) || x > k->max) return -1;
      *(unsigned long long *)p = x;
      return 0;
    case K_LEVEL:
      return (*(int *)p = log_level_parse(v)) < 0 ? -1 : 0;
    case K_BOOL:
      return parse_bool(v, (int *)p);
  }
  return -1;
}

/* What a numeric key takes, from its table row, for the refusal: an
 * operator who wrote arena_mb = 100000 learns the bound, not only that the
 * value is bad. Empty for the other kinds: their words are in their names. */
static void key_range(const struct config_key *k, char *b, size_t n) {
  unsigned long long m = k->max;
  const char *unit = "";
  switch (k->kind & K_TYPE) {
    case K_UINT:
      snprintf(b, n, " (want 0..%llu)", m);
      return;
    case K_INT:
      snprintf(b, n, " (want -1 or 0..%llu)", m);
      return;
    case K_OCTAL:
      snprintf(b, n, " (want an octal mode 0..%04llo)", m);
      return;
    case K_BYTES:
      for (const char *u = "KMG"; *u && m && m % 1024 == 0; u++) m /= 1024, unit = u;
      snprintf(b, n, " (want 0..%llu%.1s bytes, with an optional K, M or G)", m, unit);
      return;
  }
  b[0] = '\0';
}

const struct config_key *config_key_find(const char *section, const char *name) {
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name)) return &keys[i];
  return NULL;
}

struct file_key {
  const char *section, *name;
  char *value;
  size_t n;
  int found;
};

static int on_file_key(void *user, const char *section, const char *name, const char *value) {
  struct file_key *f = user;
  if (!strcmp(f->section, section) && !strcmp(f->name, name))
    f->found = 1, snprintf(f->value, f->n, "%s", value); /* the last one counts, as in a load */
  return 1;
}

int config_file_sets(const char *path, const char *section, const char *name, char *value,
                     size_t n) {
  struct file_key f = {section, name, value, n, 0};
  return ini_parse(path, on_file_key, &f) < 0 ? -1 : f.found;
}

/* [device] backend takes one of three words: any other is a value the key
 * cannot take, refused where it is set (--backend and --set are bad usage,
 * exit 2, as coopd --help says), not later among the checks across keys. */
static int backend_word(const char *section, const char *key, const char *v, char *err,
                        size_t errlen) {
  if (strcmp(section, "device") || strcmp(key, "backend") || !strcmp(v, "auto") ||
      !strcmp(v, "opencl") || !strcmp(v, "cuda"))
    return 0;
  snprintf(err, errlen, "[device] backend: \"%s\" is not one of auto, opencl, cuda", v);
  return -1;
}

int config_set(struct config *c, const char *section, const char *key, const char *value, char *err,
               size_t errlen) {
  if (backend_word(section, key, value, err, errlen)) return -1;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (strcmp(keys[i].section, section) || strcmp(keys[i].name, key)) continue;
    if (set_key(c, &keys[i], value) == 0) return 0;
    char range[96];
    key_range(&keys[i], range, sizeof range);
    snprintf(err, errlen, "[%s] %s: bad value \"%s\"%s", section, key, value, range);
    return -1;
  }
  snprintf(err, errlen, "unknown key [%s] %s", section, key);
  return -1;
}

struct load_ctx {
  struct config *c;
  char *err;
  size_t errlen;
  int failed;
};

static int on_key(void *user, const char *section, const char *name, const char *value) {
  struct load_ctx *l = user;
  if (l->failed) return 0;
  if (config_set(l->c, section, name, value, l->err, l->errlen)) {
    l->failed = 1;
    return 0; /* inih: non-zero = ok; 0 stops with this line's number */
  }
  return 1;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen) {
  struct load_ctx l = {c, err, errlen, 0};
  char what[512] = "";
  l.err = what;
  l.errlen = sizeof what;
  /* inih's ini_parse takes a read error for the end of the file: a
   * directory (EISDIR) would pass as an empty file, i.e. the defaults */
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  errno = 0;
  int r = ini_parse_file(f, on_key, &l), e = errno, bad = ferror(f);
  fclose(f);
  if (bad) {
    snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e ? e : EIO));
    return -1;
  }
  if (r == -2) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  if (r > 0) {
    snprintf(err, errlen, "%s:%d: %s", path, r, l.failed ? what : "syntax error");
    return -1;
  }
  return 0;
}

int config_load_string(struct config *c, const char *name, const char *text, char *err,
                       size_t errlen) {
  struct load_ctx l = {c, err, errlen, 0};
  char what[512] = "";
  l.err = what;
  l.errlen = sizeof what;
  int r = ini_parse_string(text, on_key, &l); /* no file: never -1 */
  if (r == -2) {
    snprintf(err, errlen, "%s: out of memory", name);
    return -1;
  }
  if (r > 0) {
    snprintf(err, errlen, "%s:%d: %s", name, r, l.failed ? what : "syntax error");
    return -1;
  }
  return 0;
}

int config_validate(const struct config *c, char *err, size_t errlen) {
  /* its word was checked where it was set (backend_word) */
  if (!coop_rt_backend_built(c->backend)) {
    snprintf(err, errlen, "[device] backend: \"%s\" is not built in (this coopd has: %s)",
             c->backend, coop_rt_backends_built());
    return -1;
  }
  int idx[COOP_WIRE_MAX_DEVICES];
  if (config_devices(c, idx, COOP_WIRE_MAX_DEVICES) < 0) {
    snprintf(err, errlen,
             "[device] devices: \"%s\": want empty, all, or up to %u device indices 0..63 "
             "separated by commas",
             c->devices, COOP_WIRE_MAX_DEVICES);
    return -1;
  }
  if (c->checkpoint_ms && c->checkpoint_ms < 100) {
    snprintf(err, errlen,
             "[jobs] checkpoint_ms: %u is too short: 0 (no checkpoints) or at least 100 ms",
             c->checkpoint_ms);
    return -1;
  }
  if (c->local_size & (c->local_size - 1)) {
    snprintf(err, errlen, "[device] local_size: %u is not a power of two (or 0: the backend's)",
             c->local_size);
    return -1;
  }
  /* below 16 NVRTC refuses the cap, or every kernel spills (the runtime
   * alone takes 56 on sm_90: docs/kernels.md, "The megakernel's width") */
  if (c->max_registers && c->max_registers < 16) {
    snprintf(err, errlen, "[device] max_registers: %u: want 0 (no cap) or 16..255",
             c->max_registers);
    return -1;
  }
  if (c->socket[0] != '/') {
    snprintf(err, errlen, "[server] socket: \"%s\" must be an absolute path", c->socket);
    return -1;
  }
  if (c->journal[0] && c->journal[0] != '/' && strcmp(c->journal, "off")) {
    snprintf(err, errlen, "[server] journal: \"%s\" must be an absolute path or off", c->journal);
    return -1;
  }
  if (c->kernel_dirs[0] == '\0') {
    snprintf(err, errlen, "[kernels] dirs: empty; name at least one directory");
    return -1;
  }
  if (c->authored_dir[0] != '/') {
    snprintf(err, errlen, "[kernels] authored_dir: \"%s\" must be an absolute path",
             c->authored_dir);
    return -1;
  }
  /* Each key by its name and section: "max_jobs_per_client, max_clients
   * and arena_mb must be > 0" left the one at 0, and where it goes, to
   * guess. */
  const struct {
    const char *key;
    unsigned long long v;
  } nonzero[] = {
      {"[kernels] max_source_bytes", c->max_source_bytes},
      {"[limits] max_jobs_per_client", c->max_jobs_per_client},
      {"[server] max_clients", c->max_clients},
      {"[device] arena_mb", c->arena_mb},
      {"[limits] max_clients_per_uid", c->max_clients_per_uid},
      {"[limits] max_jobs_per_uid", c->max_jobs_per_uid},
      {"[limits] max_bytes_per_uid", c->max_bytes_per_uid},
      {"[metrics] max_connections", c->metrics_max_connections},
      {"[metrics] timeout_ms", c->metrics_timeout_ms},
      {"[metrics] max_connections_per_peer", c->metrics_max_per_peer},
      {"[metrics] request_timeout_ms", c->metrics_request_ms},
  };
  for (size_t i = 0; i < sizeof nonzero / sizeof nonzero[0]; i++)
    if (nonzero[i].v == 0) {
      snprintf(err, errlen, "%s: 0 is not allowed (want at least 1)", nonzero[i].key);
      return -1;
    }
  if (priority_check(c->priority_users, err, errlen)) return -1;
  if (c->subordinate_ids[0] && c->subordinate_ids[0] != '/' && strcmp(c->subordinate_ids, "off")) {
    snprintf(err, errlen, "[limits] subordinate_ids: \"%s\" must be an absolute path or off",
             c->subordinate_ids);
    return -1;
  }
  struct sockaddr_storage ss;
  return config_metrics_addr(c, &ss, err, errlen) < 0 ? -1 : 0;
}

/* "ADDR:PORT" split at its last colon; ADDR may be "[v6]". 0, or -1. */
static int split_hostport(const char *s, char *host, size_t hostlen, unsigned *port) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s) return -1;
  size_t n = (size_t)(colon - s);
  if (s[0] == '[') {
    if (n < 3 || s[n - 1] != ']') return -1;
    s++, n -= 2;
  }
  unsigned long long p;
  if (n >= hostlen || parse_uint(colon + 1, 65535, 10, &p)) return -1;
  memcpy(host, s, n);
  host[n] = '\0';
  *port = (unsigned)p;
  return 0;
}

/* Whether a parsed address reaches this host only. */
static int is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
  return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

int config_metrics_addr(const struct config *c, struct sockaddr_storage *ss, char *err,
                        size_t errlen) {
  if (!c->metrics_listen[0]) return 1;
  char host[64];
  unsigned port;
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  int ok = split_hostport(c->metrics_listen, host, sizeof host, &port) == 0;
  if (ok && !strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
  if (ok && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
  } else if (ok && c->metrics_listen[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
  } else {
    snprintf(err, errlen,
             "[metrics] listen: \"%s\": want ADDR:PORT with a numeric IPv4 address, [IPv6] or "
             "localhost, and a port 0..65535 (e.g. 127.0.0.1:9464), or empty for off",
             c->metrics_listen);
    return -1;
  }
  if (!c->metrics_allow_remote && !is_loopback(ss)) {
    snprintf(err, errlen,
             "[metrics] listen: \"%s\" is not a loopback address: /metrics has no "
             "authentication; set [metrics] allow_remote = yes to serve it beyond this host",
             c->metrics_listen);
    return -1;
  }
  return 0;
}

int config_devices(const struct config *c, int *idx, unsigned max) {
  if (!c->devices[0]) return idx[0] = c->device_index, 1;
  if (!strcmp(c->devices, "all")) return 0;
  unsigned n = 0;
  for (const char *p = c->devices; *p;) {
    char *end;
    if (*p < '0' || *p > '9' || n == max) return -1;
    unsigned long v = strtoul(p, &end, 10);
    if (v > 63 || (*end && *end != ',') || (*end == ',' && !end[1])) return -1;
    idx[n++] = (int)v;
    p = *end ? end + 1 : end;
  }
  return n ? (int)n : -1;
}

void config_print(const struct config *c, void (*line)(const char *)) {
  char b[3000];
  snprintf(b, sizeof b,
           "device: backend=%s devices=%s platform=\"%s\" device=\"%s\" local_size=%u "
           "max_registers=%u%s kernel_widths=%s arena_mb=%u device_mb=%u park_ms=%u",
           c->backend, c->devices[0] ? c->devices : "(one)", c->platform, c->device, c->local_size,
           c->max_registers, c->max_registers ? "" : " (no cap)", c->kernel_widths ? "yes" : "no",
           c->arena_mb, c->device_mb, c->park_ms);
  line(b);
  snprintf(b, sizeof b, "server: socket=%s mode=%04o max_clients=%u journal=%s", c->socket,
           c->socket_mode, c->max_clients, c->journal[0] ? c->journal : "(socket).jobs");
  line(b);
  snprintf(b, sizeof b, "kernels: reload_in_place=%s dirs=%s", c->reload_in_place ? "yes" : "no",
           c->kernel_dirs);
  line(b);
  snprintf(b, sizeof b,
           "kernel authors: authors=\"%s\" authored_dir=%s max_per_author=%u "
           "max_source_bytes=%llu author_reload_interval_ms=%u author_build_ms=%u",
           c->authors, c->authored_dir, c->max_kernels_per_author, c->max_source_bytes,
           c->author_reload_interval_ms, c->author_build_ms);
  line(b);
  snprintf(b, sizeof b,
           "limits: jobs=%u bytes=%llu; jobs: watchdog_ms=%u grace_ms=%u gather_budget_ms=%u "
           "hang_ms=%u task_max_ms=%u restart_hold_ms=%u checkpoint_ms=%u "
           "checkpoint_snapshot_percent=%u",
           c->max_jobs_per_client, c->max_bytes_per_client, c->watchdog_ms, c->grace_ms,
           c->gather_budget_ms, c->hang_ms, c->task_max_ms, c->restart_hold_ms, c->checkpoint_ms,
           c->snapshot_percent);
  line(b);
  snprintf(b, sizeof b,
           "limits per uid: clients=%u jobs=%u bytes=%llu detached_kept=%u (all users %u) "
           "buffers=%u buffer_percent=%u warm_percent=%u max_priority=%u priority_users=\"%s\" "
           "subordinate_ids=%s; server: hello_timeout_ms=%u",
           c->max_clients_per_uid, c->max_jobs_per_uid, c->max_bytes_per_uid,
           c->max_detached_kept_per_uid, c->max_detached_kept, c->max_buffers_per_uid,
           c->max_buffer_percent_per_uid, c->max_warm_percent_per_uid, c->max_priority,
           c->priority_users, c->subordinate_ids[0] ? c->subordinate_ids : "off",
           c->hello_timeout_ms);
  line(b);
  snprintf(b, sizeof b,
           "jobs: reserve_percent=%u tasks_per_uid=%u task_percent_per_uid=%u min_deadline_us=%u "
           "undated_due_ms=%u max_period_ms=%u max_series_ms=%u",
           c->reserve_percent, c->tasks_per_uid, c->task_percent_per_uid, c->min_deadline_us,
           c->undated_due_ms, c->max_period_ms, c->max_series_ms);
  line(b);
  snprintf(b, sizeof b,
           "metrics: listen=%s allow_remote=%s max_connections=%u timeout_ms=%u "
           "max_connections_per_peer=%u request_timeout_ms=%u",
           c->metrics_listen[0] ? c->metrics_listen : "(off)",
           c->metrics_allow_remote ? "yes" : "no", c->metrics_max_connections,
           c->metrics_timeout_ms, c->metrics_max_per_peer, c->metrics_request_ms);
  line(b);
}
