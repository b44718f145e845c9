/*
 * listen_fds.h: socket activation (sd_listen_fds(3)), written out rather
 * than linked from libsystemd (see sdnotify.h). systemd (coop.socket) binds
 * the socket and passes it as descriptor 3 with LISTEN_FDS=1 and
 * LISTEN_PID=<coopd's pid>; coopd then accepts on it instead of binding.
 */
#ifndef COOPD_LISTEN_FDS_H
#define COOPD_LISTEN_FDS_H

#include <stddef.h>

/* The passed listening socket, checked (a listening AF_UNIX stream socket)
 * and made non-blocking and close-on-exec; its path in path (empty when
 * unnamed or abstract). -1 when none was passed (no LISTEN_PID, or another
 * process's); -2 with a message in err when one was passed but is unusable.
 * Unsets LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES, so that the device
 * processes coopd starts do not take it for theirs. */
int listen_fds_take(char *path, size_t pathlen, char *err, size_t errlen);

#endif /* COOPD_LISTEN_FDS_H */
