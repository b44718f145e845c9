/*
 * metrics_http.c: GET /metrics over HTTP (metrics_http.h), the text
 * `coopctl metrics` prints (protocol/coop_prom.h), for a Prometheus server
 * that scrapes over the network rather than running a command.
 *
 * Whoever can reach the port may send anything, so the server is the
 * smallest that answers a scraper: one request per connection
 * (Connection: close), no body read, GET /metrics only (404 for another
 * path, 405 for another method, 400 for what is not a request line). The
 * request head must fit HTTP_MAX_REQUEST bytes (431 otherwise) and come
 * whole within [metrics] request_timeout_ms of the accept; each connection
 * lives at most [metrics] timeout_ms from accept to close, so a client that
 * sends nothing, or a byte a second, holds a slot that long only. After the
 * answer, what the client still sends is read and dropped until it closes:
 * closing with unread bytes would send a reset, which may destroy the
 * answer before the client has read it.
 *
 * Slots: at most [metrics] max_connections are open at once, and at most
 * max_connections_per_peer from one address. A connection that would pass
 * either takes the slot of the oldest idle one in its way (one of that
 * address's, or any): idle is still waiting for its request head, or
 * answered with the whole answer handed to the kernel, so nothing is lost
 * but a peer's chance to keep a slot it does not use. 16 idle connections
 * from one address once held every slot until their timeout and every
 * scrape got 503 (docs/daemon.md, "Metrics over HTTP"). Only when every
 * slot in the way is busy writing an answer is the newcomer told 503.
 */
#define _GNU_SOURCE /* memmem */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "coop_prom.h"
#include "daemon.h"
#include "log.h"

#define HTTP_MAX_REQUEST 8192u /* the request line and headers */
#define HTTP_BACKLOG 16

/* A peer's address without its port: what max_connections_per_peer counts. */
struct peer {
  int family; /* AF_INET, AF_INET6; 0 when unknown (each such one counts alone) */
  unsigned char addr[16];
};

struct http_conn {
  uv_tcp_t tcp;
  uv_timer_t deadline;
  uv_write_t wr;
  uv_shutdown_t sd;
  struct metrics_http *srv;
  struct http_conn *prev, *next; /* newest first */
  char *resp;                    /* the answer, head and body; freed with the connection */
  size_t len;                    /* request bytes so far */
  uint64_t accepted;             /* uv_now at the accept */
  struct peer peer;
  int answered, written, closing, handles;
  char req[HTTP_MAX_REQUEST];
};

struct metrics_http {
  struct daemon *dm;
  uv_tcp_t listener;
  struct http_conn *conns;
  unsigned nconns;
};

static struct metrics_http srv; /* one per coopd; loop thread only */
static int srv_on;

/* ---- connections ---- */

static void on_conn_closed(uv_handle_t *h) {
  struct http_conn *c = h->data;
  if (--c->handles) return;
  free(c->resp);
  free(c);
}

static void conn_close(struct http_conn *c) {
  if (c->closing) return;
  c->closing = 1;
  if (c->prev)
    c->prev->next = c->next;
  else
    c->srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->srv->nconns--;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
  uv_close((uv_handle_t *)&c->deadline, on_conn_closed);
}

static void on_deadline(uv_timer_t *t) {
  struct http_conn *c = t->data;
  log_debug("metrics: a connection %s; closed",
            c->answered ? "did not close within timeout_ms"
                        : "sent no whole request within request_timeout_ms");
  conn_close(c);
}

/* The timer for what c waits for now: its request head within
 * request_timeout_ms of the accept, and its close within timeout_ms. */
static void arm_deadline(struct http_conn *c) {
  const struct config *cfg = &c->srv->dm->cfg;
  uint64_t at = c->accepted + cfg->metrics_timeout_ms;
  if (!c->answered && cfg->metrics_request_ms < cfg->metrics_timeout_ms)
    at = c->accepted + cfg->metrics_request_ms;
  uint64_t now = uv_now(c->tcp.loop);
  uv_timer_start(&c->deadline, on_deadline, at > now ? at - now : 0, 0);
}

/* ---- the answer ---- */

/* The Prometheus text of STATS, as `coopctl metrics` writes it: into
 * *body (malloc'd), its length returned; -1 if out of memory. */
static long metrics_text(struct daemon *dm, char **body) {
  static struct coop_msg_stats_reply st; /* large; loop thread only */
  static struct coop_stats s;
  static struct coop_metrics m;
  session_stats(dm, SESSION_VIEWER_ANYONE, &st);
  memset(&s, 0, sizeof s);
  coop__stats_from_wire(&s, &st);
  coop__metrics_from_wire(&m, &st);
  size_t n = 0;
  FILE *f = open_memstream(body, &n);
  if (!f) return -1;
  coop__prom_write(f, &s, &m);
  if (fclose(f)) return free(*body), *body = NULL, -1;
  return (long)n;
}

static void on_shutdown(uv_shutdown_t *r, int status) { (void)r, (void)status; }

static void on_written(uv_write_t *w, int status) {
  struct http_conn *c = w->data;
  if (status < 0 || c->closing) return conn_close(c);
  c->written = 1; /* all in the kernel's hands: a newcomer may take the slot */
  /* our FIN: the client reads to the end, then closes, and we see EOF */
  c->sd.data = c;
  if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown)) conn_close(c);
}

/* Queues status, extra head lines and body (NULL: a one-line reason). */
static void answer(struct http_conn *c, int code, const char *reason, const char *type,
                   const char *extra, char *body, size_t blen) {
  char head[256];
  if (!body) {
    body = strdup(reason);
    blen = body ? strlen(body) : 0;
  }
  int h = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n%s\r\n",
                   code, reason, type, blen, extra);
  c->answered = 1;
  arm_deadline(c); /* now the close is what it waits for */
  c->resp = malloc((size_t)h + blen);
  if (!c->resp || !body) {
    free(body);
    return conn_close(c);
  }
  memcpy(c->resp, head, (size_t)h);
  memcpy(c->resp + h, body, blen);
  free(body);
  uv_buf_t b = uv_buf_init(c->resp, (unsigned)((size_t)h + blen));
  c->wr.data = c;
  if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written)) conn_close(c);
  log_debug("metrics: HTTP %d", code);
}

#define TEXT "text/plain; charset=utf-8"

/* The request line "METHOD TARGET HTTP/1.x" of a complete head. */
static void serve(struct http_conn *c) {
  char *eol = memchr(c->req, '\n', c->len);
  *eol = '\0';
  if (eol > c->req && eol[-1] == '\r') eol[-1] = '\0';
  char *target = strchr(c->req, ' ');
  char *version = target ? strchr(target + 1, ' ') : NULL;
  if (!version || strncmp(version + 1, "HTTP/1.", 7) || target == c->req || target + 1 == version)
    return answer(c, 400, "Bad Request", TEXT, "", NULL, 0);
  *target++ = '\0';
  *version = '\0';
  if (strcmp(c->req, "GET"))
    return answer(c, 405, "Method Not Allowed", TEXT, "Allow: GET\r\n", NULL, 0);
  size_t path = strcspn(target, "?");
  if (path != 8 || strncmp(target, "/metrics", 8))
    return answer(c, 404, "Not Found", TEXT, "", NULL, 0);
  char *body = NULL;
  long n = metrics_text(c->srv->dm, &body);
  if (n < 0) return answer(c, 500, "Internal Server Error", TEXT, "", NULL, 0);
  answer(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", "", body, (size_t)n);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *b) {
  static char drain[4096]; /* what comes after the answer is dropped */
  struct http_conn *c = h->data;
  (void)want;
  if (c->answered)
    *b = uv_buf_init(drain, sizeof drain);
  else
    *b = uv_buf_init(c->req + c->len, (unsigned)(HTTP_MAX_REQUEST - c->len));
}

static int head_complete(const struct http_conn *c) {
  return memmem(c->req, c->len, "\r\n\r\n", 4) || memmem(c->req, c->len, "\n\n", 2);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  struct http_conn *c = s->data;
  (void)b;
  if (n < 0) return conn_close(c); /* EOF or an error; either way, done */
  if (c->answered || n == 0) return;
  c->len += (size_t)n;
  if (head_complete(c)) return serve(c);
  if (c->len == HTTP_MAX_REQUEST)
    answer(c, 431, "Request Header Fields Too Large", TEXT, "", NULL, 0);
}

/* ---- accepting ---- */

static void peer_of(uv_tcp_t *t, struct peer *p) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  memset(p, 0, sizeof *p);
  if (uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len)) return;
  if (ss.ss_family == AF_INET) {
    p->family = AF_INET;
    memcpy(p->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
  } else if (ss.ss_family == AF_INET6) {
    p->family = AF_INET6;
    memcpy(p->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
  }
}

static int same_peer(const struct peer *a, const struct peer *b) {
  return a->family && a->family == b->family && !memcmp(a->addr, b->addr, sizeof a->addr);
}

/* Whether c's slot may go to a newcomer: c waits for its request head, or
 * its whole answer is written (what it still owes is its close). */
static int idle(const struct http_conn *c) { return !c->answered || c->written; }

/* Makes room for a connection from p: 0, with the oldest idle connection
 * in the way closed while there is one (p's own while p holds
 * max_connections_per_peer, else any while all max_connections are open;
 * more than one only after SIGHUP lowered a limit); -1 when every one in
 * the way is writing its answer. */
static int make_room(struct metrics_http *m, const struct peer *p) {
  const struct config *cfg = &m->dm->cfg;
  for (;;) {
    unsigned mine = 0;
    struct http_conn *old_mine = NULL, *old_any = NULL;
    for (struct http_conn *c = m->conns; c; c = c->next) { /* newest first */
      int same = same_peer(&c->peer, p);
      mine += same;
      if (idle(c)) {
        old_any = c;
        if (same) old_mine = c;
      }
    }
    struct http_conn *victim;
    const char *why;
    if (mine >= cfg->metrics_max_per_peer)
      victim = old_mine, why = "max_connections_per_peer";
    else if (m->nconns >= cfg->metrics_max_connections)
      victim = old_any, why = "max_connections";
    else
      return 0;
    if (!victim) {
      log_debug("metrics: %s reached, none idle; a connection refused", why);
      return -1;
    }
    log_debug("metrics: %s reached; the oldest idle connection (%s) closed for a new one", why,
              victim->answered ? "answered" : "no request yet");
    if (victim->written) { /* what it sent since is dropped: the close is a FIN, not a reset */
      static char drop[4096];
      uv_os_fd_t fd;
      if (uv_fileno((uv_handle_t *)&victim->tcp, &fd) == 0)
        for (int i = 0; i < 4 && recv(fd, drop, sizeof drop, MSG_DONTWAIT) > 0; i++) continue;
    }
    conn_close(victim);
  }
}

/* No room: told so in one write, if the socket takes it, and
 * closed at once, holding nothing. What the request has already brought is
 * read first (up to a few KiB), so that the close is a FIN, not a reset
 * that could destroy the 503 before the client reads it. */
static void on_busy_closed(uv_handle_t *h) { free(h); }
static void refuse_busy(uv_tcp_t *t) {
  static const char busy[] =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  static char drop[4096];
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)t, &fd) == 0)
    for (int i = 0; i < 4 && recv(fd, drop, sizeof drop, MSG_DONTWAIT) > 0; i++) continue;
  uv_buf_t b = uv_buf_init((char *)busy, sizeof busy - 1);
  uv_try_write((uv_stream_t *)t, &b, 1);
  uv_close((uv_handle_t *)t, on_busy_closed);
}

static void take(struct metrics_http *m, struct http_conn *c) {
  c->srv = m;
  c->tcp.data = c->deadline.data = c;
  c->handles = 2;
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  m->nconns++;
  c->accepted = uv_now(c->tcp.loop);
  arm_deadline(c);
  /* A scraper's request has usually come with its connection: read now, it
   * is answered before the rest of this accept burst could take its slot. */
  uv_os_fd_t fd;
  ssize_t n = uv_fileno((uv_handle_t *)&c->tcp, &fd)
                  ? -1
                  : recv(fd, c->req, HTTP_MAX_REQUEST, MSG_DONTWAIT);
  if (n > 0) {
    c->len = (size_t)n;
    if (head_complete(c))
      serve(c);
    else if (c->len == HTTP_MAX_REQUEST)
      answer(c, 431, "Request Header Fields Too Large", TEXT, "", NULL, 0);
  }
  if (!c->closing && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read)) conn_close(c);
}

static void on_connection(uv_stream_t *l, int status) {
  struct metrics_http *m = l->data;
  if (status < 0) return log_warn("metrics: accept: %s", uv_strerror(status));
  struct http_conn *c = calloc(1, sizeof *c);
  uv_tcp_t *t = c ? &c->tcp : malloc(sizeof *t);
  if (!t) return; /* libuv keeps it queued until memory comes back */
  uv_tcp_init(l->loop, t);
  if (uv_accept(l, (uv_stream_t *)t) || !c) return refuse_busy(t);
  peer_of(t, &c->peer);
  /* c's tcp is its first member: freeing the handle frees c */
  if (make_room(m, &c->peer)) return refuse_busy(t);
  uv_timer_init(l->loop, &c->deadline);
  take(m, c);
}

/* ---- the listener ---- */

static void log_listening(const struct metrics_http *m) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char host[64] = "?";
  int port = 0;
  if (uv_tcp_getsockname(&m->listener, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&ss, host + 1, sizeof host - 2);
      host[0] = '[';
      strcat(host, "]");
      port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
      uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
      port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
  }
  const struct config *c = &m->dm->cfg;
  log_info(
      "metrics: serving http://%s:%d/metrics (at most %u connections, %u from one address; "
      "%u ms each, %u ms to send the request)",
      host, port, c->metrics_max_connections, c->metrics_max_per_peer, c->metrics_timeout_ms,
      c->metrics_request_ms);
}

int metrics_http_start(struct daemon *dm, char *err, size_t errlen) {
  struct sockaddr_storage ss;
  int r = config_metrics_addr(&dm->cfg, &ss, err, errlen);
  if (r) return r < 0 ? -1 : 0;
  memset(&srv, 0, sizeof srv);
  srv.dm = dm;
  uv_tcp_init(dm->loop, &srv.listener);
  srv.listener.data = &srv;
  srv_on = 1;
  unsigned flags = ss.ss_family == AF_INET6 ? UV_TCP_IPV6ONLY : 0;
  if ((r = uv_tcp_bind(&srv.listener, (struct sockaddr *)&ss, flags)) == 0)
    r = uv_listen((uv_stream_t *)&srv.listener, HTTP_BACKLOG, on_connection);
  if (r) {
    snprintf(err, errlen, "[metrics] listen: cannot listen on %s: %s", dm->cfg.metrics_listen,
             uv_strerror(r));
    metrics_http_stop(dm);
    return -1;
  }
  log_listening(&srv);
  return 0;
}

void metrics_http_stop(struct daemon *dm) {
  (void)dm;
  if (!srv_on) return;
  srv_on = 0;
  uv_close((uv_handle_t *)&srv.listener, NULL);
  while (srv.conns) conn_close(srv.conns);
}
