/*
 * metrics_http.h: coopd's optional HTTP endpoint for Prometheus, GET
 * /metrics on [metrics] listen (off by default). Loop thread only.
 */
#ifndef COOPD_METRICS_HTTP_H
#define COOPD_METRICS_HTTP_H

#include <stddef.h>

struct daemon;

/* Binds and listens when [metrics] listen is set (0 at once when it is
 * not). 0, or -1 with a message in err. */
int metrics_http_start(struct daemon *dm, char *err, size_t errlen);
/* Closes the listener and every connection (at the daemon's stop). */
void metrics_http_stop(struct daemon *dm);

#endif /* COOPD_METRICS_HTTP_H */
