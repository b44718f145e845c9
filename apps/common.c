/*
 * common.c: what every application's host side shares: lookup by name.
 * (The submit-and-wait of its one cooperative task is in local.c, with the
 * runtime; the checks' helpers are in check.c.)
 */
#include <string.h>

#include "app.h"

const struct coop_app *coop_app_find(const char *name) {
  for (unsigned i = 0; i < coop_napps; i++)
    if (!strcmp(coop_apps[i]->name, name) || !strcmp(coop_apps[i]->kernel, name))
      return coop_apps[i];
  return NULL;
}
