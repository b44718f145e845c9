/*
 * confreload.h: SIGHUP's second half, the settings. coopd reads its
 * config file and flags again; the keys that only the loop thread reads
 * (config.c's key table marks them live: log, limits, max_clients,
 * hello_timeout_ms, grace_ms, the kernel directories that the kernel
 * reload then uses) take their new values at once; the others are fixed
 * into the device processes, the device threads or the listening socket,
 * and a change to them is logged as needing a restart.
 */
#ifndef COOPD_CONFRELOAD_H
#define COOPD_CONFRELOAD_H

#include "config.h"

/* Applies nc's live keys to run and logs each change; logs each changed key
 * that needs a restart (those keep their running value). Returns how many
 * changed keys need a restart. */
int confreload_apply(struct config *run, const struct config *nc);

#endif /* COOPD_CONFRELOAD_H */
