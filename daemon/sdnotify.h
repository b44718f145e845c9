/*
 * sdnotify.h: systemd's readiness protocol (sd_notify(3)), written out
 * rather than linked from libsystemd: it is one datagram to the socket
 * named by NOTIFY_SOCKET, and coopd then needs no library that a machine
 * without systemd would lack. Without NOTIFY_SOCKET every call does nothing.
 */
#ifndef COOPD_SDNOTIFY_H
#define COOPD_SDNOTIFY_H

/* Sends state ("READY=1", "STOPPING=1", "STATUS=...", newline-separated
 * assignments). 0 sent; 1 no NOTIFY_SOCKET; a negative errno on failure. */
int sdnotify(const char *state);
/* "RELOADING=1" with MONOTONIC_USEC (systemd 253 wants both); READY=1
 * ends the reload. */
int sdnotify_reloading(void);

#endif /* COOPD_SDNOTIFY_H */
