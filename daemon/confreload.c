/* confreload.c: see confreload.h. */
#include "confreload.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

/* A key's value as a log line shows it. */
static void show(const struct config_key *k, const struct config *c, char *b, size_t n) {
  const char *p = (const char *)c + k->off;
  int i;
  unsigned u;
  unsigned long long ull;
  switch (k->kind) {
    case CONFIG_STR:
      snprintf(b, n, "\"%s\"", p);
      return;
    case CONFIG_INT:
    case CONFIG_LEVEL:
    case CONFIG_BOOL:
      memcpy(&i, p, sizeof i);
      if (k->kind == CONFIG_LEVEL) snprintf(b, n, "%s", log_level_name(i));
      if (k->kind == CONFIG_BOOL) snprintf(b, n, "%s", i ? "yes" : "no");
      if (k->kind == CONFIG_INT) snprintf(b, n, "%d", i);
      return;
    case CONFIG_UINT:
    case CONFIG_OCTAL:
      memcpy(&u, p, sizeof u);
      snprintf(b, n, k->kind == CONFIG_OCTAL ? "%04o" : "%u", u);
      return;
    case CONFIG_BYTES:
      memcpy(&ull, p, sizeof ull);
      snprintf(b, n, "%llu", ull);
      return;
  }
}

int confreload_apply(struct config *run, const struct config *nc) {
  int restart = 0;
  size_t nkeys;
  const struct config_key *keys = config_keys(&nkeys);
  /* compared as bytes: config_defaults() zeroes the struct, so the bytes
   * past a string's NUL are zero in both */
  for (size_t i = 0; i < nkeys; i++) {
    const struct config_key *k = &keys[i];
    char *cur = (char *)run + k->off;
    const char *want = (const char *)nc + k->off;
    if (k->kind == CONFIG_STR ? !strcmp(cur, want) : !memcmp(cur, want, k->size)) continue;
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
  /* a field of struct config that the key table lacks is not applied,
   * and not left unsaid either */
  struct config all;
  memcpy(&all, run, sizeof all);
  for (size_t i = 0; i < nkeys; i++)
    memcpy((char *)&all + keys[i].off, (const char *)nc + keys[i].off, keys[i].size);
  if (memcmp(&all, nc, sizeof all)) {
    restart++;
    log_warn("SIGHUP: other settings changed too (see coopd --check-config): they need a restart");
  }
  return restart;
}
