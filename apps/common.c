/*
 * common.c: what every application's host side shares: lookup by name and
 * the Pannotia priorities. (The submit-and-wait of its one cooperative task
 * is in local.c, with the runtime.)
 */
#include <string.h>

#include "app.h"

const struct coop_app *coop_app_find(const char *name) {
  for (unsigned i = 0; i < coop_napps; i++)
    if (!strcmp(coop_apps[i]->name, name) || !strcmp(coop_apps[i]->kernel, name))
      return coop_apps[i];
  return NULL;
}

/* Pannotia draws a random value per vertex; here a hash of the id
 * (murmur3's finaliser), so that runs and the reference agree. */
uint32_t coop_app_prio(uint32_t v) {
  uint32_t x = v * 0x9e3779b9u + 0x7f4a7c15u;
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

int coop_app_beats(const uint32_t *prio, uint32_t u, uint32_t v) {
  return prio[u] > prio[v] || (prio[u] == prio[v] && u > v);
}
