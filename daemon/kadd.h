/*
 * kadd.h: kernel authors' requests (PROTOCOL.md, "Kernel authors"):
 * KERNEL_ADD, KERNEL_REMOVE and RELOAD, each answered by KERNEL_DONE once
 * the reload it starts has ended. Who may: [kernels] authors (authors.h)
 * add, replace and remove their own kernels; root may remove any. Names
 * are unique across shipped kernels and every author's. Loop thread only.
 */
#ifndef COOPD_KADD_H
#define COOPD_KADD_H

#include "daemon.h"

/* The reload carrying req has ended (err 0: done; else why, with log):
 * answers its client, if still connected, and logs the outcome with the
 * uid. Frees req. */
void kadd_done(struct daemon *dm, struct reload_req *req, int err, const char *log);

#endif /* COOPD_KADD_H */
