/*
 * paths.h: where coopd puts its files (issue 20 #10). The socket and the
 * journal must live in a directory that no other user can write to, or
 * another user could put a socket there first (and receive the clients'
 * data), a FIFO (and block coopd's start) or a forged journal.
 */
#ifndef COOPD_PATHS_H
#define COOPD_PATHS_H

#include <stddef.h>
#include <uv.h>

/* The directory of path (a file coopd creates): it must be owned by root or
 * by coopd's uid, and not writable by every user unless it has the sticky
 * bit (as /tmp has: there no one removes or renames another's files). A
 * missing directory (a component under an existing one) is created, mode
 * 0755. what names the file in the message ("socket"). 0, or -1 with err. */
int paths_check_dir(uv_loop_t *loop, const char *path, const char *what, char *err, size_t errlen);

/* Before the bind: whatever is at the socket path. Nothing: 0. A socket
 * no one listens on (a coopd that died): removed, 0. A socket someone
 * listens on, or anything that is not a socket: -1 with err, and it is
 * left as it is. */
int paths_claim_socket(uv_loop_t *loop, const char *path, char *err, size_t errlen);

#endif /* COOPD_PATHS_H */
