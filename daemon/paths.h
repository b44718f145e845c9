/*
 * paths.h: where coopd puts its files (docs/faults.md, "Resources a client
 * can exhaust, and coopd's own files", row 10). The socket and the
 * journal must live in a directory that no other user can write to, or
 * another user could put a socket there first (and receive the clients'
 * data), a FIFO (and block coopd's start) or a forged journal.
 */
#ifndef COOPD_PATHS_H
#define COOPD_PATHS_H

#include <stddef.h>
#include <uv.h>

/* The directory of path (a file coopd creates) and every directory above
 * it, as named and as realpath resolves them: each must be owned by root or
 * by coopd's uid, and writable by no other user (group or others) unless it
 * has the sticky bit (as /tmp has: there no one removes or renames
 * another's files). Above the socket's directory this is what keeps
 * another user from renaming that directory away and putting their own
 * server at the path. A missing directory (a component under an existing
 * one) is created, mode 0755, once those above it are found safe. what
 * names the file in the message ("socket"). 0, or -1 with err naming the
 * offending directory. */
int paths_check_dir(uv_loop_t *loop, const char *path, const char *what, char *err, size_t errlen);

/* Before the bind: whatever is at the socket path (never followed: a
 * symlink is not a socket). Nothing: 0. A socket of coopd's user that no
 * one listens on (a coopd that died): removed, 0. A socket someone listens
 * on, another user's socket, or anything that is not a socket: -1 with err
 * naming the path and its owner, and it is left as it is. */
int paths_claim_socket(uv_loop_t *loop, const char *path, char *err, size_t errlen);

#endif /* COOPD_PATHS_H */
