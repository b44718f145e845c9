/* confreload.c: see confreload.h. */
#include "confreload.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

int confreload_apply(struct config *run, const struct config *nc) {
  int restart = 0;
  size_t nkeys;
  const struct config_key *keys = config_keys(&nkeys);
  for (size_t i = 0; i < nkeys; i++) {
    const struct config_key *k = &keys[i];
    if (!config_key_differs(k, run, nc)) continue;
    char was[1100], now[1100];
    config_key_show(k, run, was, sizeof was);
    config_key_show(k, nc, now, sizeof now);
    if (!config_key_live(k)) {
      restart++;
      log_warn("SIGHUP: [%s] %s changed (%s -> %s): needs a restart; %s stays until then",
               k->section, k->name, was, now, was);
      continue;
    }
    memcpy((char *)run + k->off, (const char *)nc + k->off, k->size);
    log_info("SIGHUP: [%s] %s: %s -> %s", k->section, k->name, was, now);
  }
  log_setup(run->log_level, 1, run->log_syslog);
  /* a field of struct config that the key table lacks is not applied,
   * and not left unsaid either; compared as bytes: config_defaults()
   * zeroes the struct, so the bytes past a string's NUL are zero in both */
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
