/*
 * test_client.c: libcoop against a fake coopd, and coopctl's command line.
 *
 * The fake daemon is a thread listening on a Unix socket in a temporary
 * directory; each test gives it a script that speaks the protocol with the
 * codec (protocol/wire.h) and checks what libcoop sent, including the bytes
 * of memfd buffers. A script records its first failed check in the fake,
 * which the test asserts after joining the thread. Suites: "libcoop"
 * (ctest client_lib) and "coopctl" (ctest coopctl_usage, which needs
 * COOPCTL = the built coopctl).
 */
#define _GNU_SOURCE /* mkdtemp, setenv */
#include <check.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coop.h"
#include "sring.h"
#include "wire.h"
#include "check_run.h"

/* ---- the fake daemon ---- */

struct fconn {
  int fd;
  struct coop_wire_reader rd;
};

/* One received frame, decoded; pointers in m point into p. */
struct fframe {
  struct coop_wire_hdr h;
  uint8_t *p;
  int fds[COOP_WIRE_MAX_FDS];
  unsigned nfds;
  union coop_msg m;
};

struct fake;
typedef void (*script_fn)(struct fake *f, struct fconn *c);

struct fake {
  char dir[32], path[64];
  int lfd;
  pthread_t th;
  script_fn script;
  uint32_t inline_max;
  char hello_name[COOP_WIRE_NAME_MAX];
  char fail[512];
};

static void fk_failf(struct fake *f, int line, const char *what) {
  if (!f->fail[0]) snprintf(f->fail, sizeof f->fail, "fake daemon, line %d: %s", line, what);
}
#define FK(f, cond)                              \
  do {                                           \
    if (!(cond)) fk_failf((f), __LINE__, #cond); \
  } while (0)

static void ff_free(struct fframe *fr) {
  for (unsigned i = 0; i < fr->nfds; i++) close(fr->fds[i]);
  fr->nfds = 0;
  free(fr->p);
  fr->p = NULL;
}

/* The next frame, decoded; 0 on EOF, a decode error or 10 s of silence. */
static int fk_next(struct fconn *c, struct fframe *fr) {
  memset(fr, 0, sizeof *fr);
  for (;;) {
    const uint8_t *payload;
    int r = coop_wire_reader_next(&c->rd, &fr->h, &payload, fr->fds, &fr->nfds);
    if (r < 0) return 0;
    if (r == 1) {
      fr->p = malloc(fr->h.len + 1);
      memcpy(fr->p, payload, fr->h.len);
      return coop_wire_decode(&fr->h, fr->p, &fr->m) == 0;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) return 0;
    uint8_t buf[65536];
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nfds = 0;
    long n = coop_wire_recv(c->fd, buf, sizeof buf, fds, &nfds);
    if (n <= 0 || coop_wire_reader_feed(&c->rd, buf, (size_t)n, fds, nfds)) return 0;
  }
}

/* A frame of `type` is next, or the script fails. */
static int fk_expect(struct fake *f, struct fconn *c, struct fframe *fr, uint16_t type) {
  int ok = fk_next(c, fr) && fr->h.type == type;
  if (!ok) fk_failf(f, __LINE__, coop_wire_type_name(type));
  return ok;
}

/* Sends one frame; version patched into the header when not 0. */
static void fk_send_v(struct fconn *c, uint16_t type, uint32_t seq, const union coop_msg *m,
                      uint16_t version) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  ck_assert_int_eq(coop_wire_encode(&b, type, seq, m), 0);
  if (version) {
    b.p[4] = (uint8_t)(version >> 8);
    b.p[5] = (uint8_t)version;
  }
  ck_assert_int_eq(coop_wire_send(c->fd, b.p, b.len, NULL, 0, NULL), 0);
  coop_wire_buf_free(&b);
}

static void fk_send(struct fconn *c, uint16_t type, uint32_t seq, const union coop_msg *m) {
  fk_send_v(c, type, seq, m, 0);
}

/* The SUBMIT fr accepted as job `job`, and fr freed. */
static void fk_accept(struct fconn *c, struct fframe *fr, uint64_t job) {
  union coop_msg m = {0};
  m.job.job = job;
  fk_send(c, COOP_MSG_ACCEPTED, fr->h.seq, &m);
  ff_free(fr);
}

static void fk_error(struct fconn *c, uint32_t seq, int code, const char *msg) {
  union coop_msg m = {0};
  m.error.code = code;
  snprintf(m.error.message, sizeof m.error.message, "%s", msg);
  fk_send(c, COOP_MSG_ERROR, seq, &m);
}

static void fk_ok(struct fconn *c, uint32_t seq) {
  union coop_msg m = {0};
  fk_send(c, COOP_MSG_OK, seq, &m);
}

/* HELLO answered WELCOME (version patched in when not 0). */
static void fk_hello_welcome(struct fake *f, struct fconn *c, uint16_t version) {
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_HELLO)) return;
  FK(f, fr.m.hello.min_version == COOP_WIRE_VERSION && fr.m.hello.max_version == COOP_WIRE_VERSION);
  snprintf(f->hello_name, sizeof f->hello_name, "%s", fr.m.hello.name);
  union coop_msg m = {0};
  struct coop_msg_welcome *w = &m.welcome;
  w->version = COOP_WIRE_VERSION;
  w->ndevices = 1;
  strcpy(w->daemon_version, "0.1-fake");
  strcpy(w->backend, "opencl");
  strcpy(w->device, "Fake GPU");
  w->compute_units = 4;
  w->workers = 7;
  w->max_payload = COOP_WIRE_MAX_PAYLOAD;
  w->inline_max = f->inline_max ? f->inline_max : COOP_WIRE_INLINE_MAX;
  w->uid = (uint32_t)getuid();
  w->pid = 4242;
  fk_send_v(c, COOP_MSG_WELCOME, fr.h.seq, &m, version);
  ff_free(&fr);
}

static void fk_welcome_v(struct fake *f, struct fconn *c, uint16_t version) {
  struct fframe fr;
  fk_hello_welcome(f, c, version);
  /* libcoop asks for the shared ring next; this daemon speaks by the
   * socket alone, and refuses: the client goes on without (coopd's ring
   * is test_buffers' ring case) */
  if (version || !fk_expect(f, c, &fr, COOP_MSG_RING_OPEN)) return;
  fk_error(c, fr.h.seq, COOP_EINVAL, "no ring here");
  ff_free(&fr);
}

static void fk_welcome(struct fake *f, struct fconn *c) { fk_welcome_v(f, c, 0); }

static void *fake_main(void *arg) {
  struct fake *f = arg;
  struct fconn c = {.fd = accept(f->lfd, NULL, NULL)};
  coop_wire_reader_init(&c.rd);
  if (c.fd < 0) {
    fk_failf(f, __LINE__, "accept");
    return NULL;
  }
  f->script(f, &c);
  coop_wire_reader_free(&c.rd);
  close(c.fd);
  return NULL;
}

static void fake_listen(struct fake *f) {
  strcpy(f->dir, "/tmp/coop-test.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(f->dir));
  snprintf(f->path, sizeof f->path, "%s/coop.sock", f->dir);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", f->path);
  f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(f->lfd, 0);
  ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(f->lfd, 4), 0);
}

static void fake_start(struct fake *f, script_fn script) {
  memset(f, 0, sizeof *f);
  fake_listen(f);
  f->script = script;
  ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

/* Joins the script and asserts it found nothing wrong. */
static void fake_end(struct fake *f) {
  pthread_join(f->th, NULL);
  close(f->lfd);
  unlink(f->path);
  rmdir(f->dir);
  ck_assert_msg(!f->fail[0], "%s", f->fail);
}

static coop_conn *connect_ok(struct fake *f) {
  coop_conn *c;
  int e = coop_connect(&c, f->path, "test");
  ck_assert_msg(e == 0, "connect: %s: %s", coop_strerror(e), coop_errmsg(NULL));
  return c;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* coopd frees a ring's pages as it closes a connection, and sends the
 * ERROR that says why by the socket (session.c, sess_error_last): here the
 * ring is granted, then let go so, then ELIMIT sent unasked. libcoop read
 * the zeros as a broken ring, EPROTO; it now reads the socket alone once
 * the ring's magic is zero (client.c, ring_let_go). */
static void script_ring_let_go(struct fake *f, struct fconn *c) {
  fk_hello_welcome(f, c, 0); /* the ring granted below */
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_RING_OPEN)) return;
  struct coop_sring *ring = NULL;
  int fd = coop_sring_create(&ring);
  FK(f, fd >= 0);
  if (fd < 0) return;
  union coop_msg m = {0};
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  FK(f, coop_wire_encode(&b, COOP_MSG_OK, fr.h.seq, &m) == 0);
  FK(f, coop_wire_send(c->fd, b.p, b.len, &fd, 1, NULL) == 0);
  coop_wire_buf_free(&b);
  close(fd);
  ff_free(&fr);
  /* a record the client takes, so that its place in the ring is past 0 */
  union coop_msg ev = {0};
  ev.event.job = 1;
  ev.event.kind = COOP_EV_RELEASED;
  ev.event.state = COOP_JOB_RUNNING;
  struct coop_wire_buf e;
  coop_wire_buf_init(&e);
  FK(f, coop_wire_encode(&e, COOP_MSG_EVENT, 0, &ev) == 0);
  struct coop_sring_end w = {&ring->down, 0};
  FK(f, coop_sring_put(&w, e.p, (uint32_t)e.len, 0) == 1);
  coop_wire_buf_free(&e);
  fk_send(c, COOP_MSG_RING_WAKE, 0, NULL);
  sleep_ms(300); /* the client reads it */
  coop_sring_release(ring);
  fk_error(c, 0, COOP_ELIMIT, "closed to make room for another user");
  if (fk_next(c, &fr)) ff_free(&fr); /* the client's next request, then closed */
}

START_TEST(a_ring_let_go_leaves_the_socket) {
  struct fake f;
  fake_start(&f, script_ring_let_go);
  coop_conn *c = connect_ok(&f);
  ck_assert_int_ge(coop_poll_events(c, 250), 0); /* takes the ring's record */
  sleep_ms(400);                                 /* the ring let go, the ERROR sent */
  struct coop_stats st;
  int e = coop_stats(c, &st);
  ck_assert_msg(e == COOP_ELIMIT, "%s: %s", coop_err_name(e), coop_errmsg(c));
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "closed to make room"));
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

/* ---- handshake, versions, socket paths ---- */

static void s_welcome_then_eof(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  FK(f, !fk_next(c, &fr)); /* the client disconnects */
}

START_TEST(handshake) {
  struct fake f;
  fake_start(&f, s_welcome_then_eof);
  coop_conn *c = connect_ok(&f);
  const struct coop_info *i = coop_info(c);
  ck_assert_uint_eq(i->version, COOP_WIRE_VERSION);
  ck_assert_uint_eq(i->ndevices, 1);
  ck_assert_str_eq(i->device, "Fake GPU");
  ck_assert_str_eq(i->backend, "opencl");
  ck_assert_str_eq(i->daemon_version, "0.1-fake");
  ck_assert_uint_eq(i->compute_units, 4);
  ck_assert_uint_eq(i->workers, 7);
  ck_assert_uint_eq(i->inline_max, COOP_WIRE_INLINE_MAX);
  ck_assert_uint_eq(i->pid, 4242);
  coop_disconnect(c);
  fake_end(&f);
  ck_assert_str_eq(f.hello_name, "test");
}
END_TEST

static void s_refuse_version(struct fake *f, struct fconn *c) {
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_HELLO)) return;
  snprintf(f->hello_name, sizeof f->hello_name, "%s", fr.m.hello.name);
  fk_error(c, fr.h.seq, COOP_EVERSION, "this coopd speaks protocol version 2");
  ff_free(&fr);
}

static void s_welcome_next(struct fake *f, struct fconn *c) {
  fk_welcome_v(f, c, COOP_WIRE_VERSION + 1);
}

START_TEST(version_refused) {
  struct fake f;
  fake_start(&f, s_refuse_version);
  coop_conn *c = (coop_conn *)&f; /* must be reset to NULL */
  ck_assert_int_eq(coop_connect(&c, f.path, NULL), COOP_EVERSION);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(coop_errmsg(NULL), "this coopd speaks protocol version 2");
  fake_end(&f);
  ck_assert_str_eq(f.hello_name, "libcoop");
  /* a reply framed in another version */
  fake_start(&f, s_welcome_next);
  ck_assert_int_eq(coop_connect(&c, f.path, NULL), COOP_EVERSION);
  char want[32];
  snprintf(want, sizeof want, "version %u", COOP_WIRE_VERSION + 1);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(NULL), want));
  fake_end(&f);
}
END_TEST

START_TEST(socket_paths) {
  char p[256];
  setenv("COOP_SOCKET", "/env/coop.sock", 1);
  setenv("XDG_RUNTIME_DIR", "/xdg", 1);
  ck_assert_int_eq(coop_socket_path("/arg.sock", p, sizeof p), 0);
  ck_assert_str_eq(p, "/arg.sock");
  ck_assert_int_eq(coop_socket_path(NULL, p, sizeof p), 0);
  ck_assert_str_eq(p, "/env/coop.sock");
  unsetenv("COOP_SOCKET");
  ck_assert_int_eq(coop_socket_path(NULL, p, sizeof p), 0);
  ck_assert_str_eq(p, "/run/coop/coop.sock"); /* no socket at /xdg: the system's */
  unsetenv("XDG_RUNTIME_DIR");
  ck_assert_int_eq(coop_socket_path(NULL, p, sizeof p), 0);
  ck_assert_str_eq(p, "/run/coop/coop.sock");
  ck_assert_int_eq(coop_socket_path("/arg.sock", p, 5), COOP_EINVAL);

  /* connecting follows the same order */
  struct fake f;
  fake_start(&f, s_welcome_then_eof);
  setenv("COOP_SOCKET", f.path, 1);
  coop_conn *c;
  ck_assert_int_eq(coop_connect(&c, "/nonexistent/coop.sock", NULL), COOP_ECONN);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(NULL), "/nonexistent/coop.sock"));
  c = connect_ok(&f);
  coop_disconnect(c);
  fake_end(&f);
  if (geteuid() != 0) { /* the default: $XDG_RUNTIME_DIR/coop.sock */
    unsetenv("COOP_SOCKET");
    fake_start(&f, s_welcome_then_eof);
    setenv("XDG_RUNTIME_DIR", f.dir, 1);
    ck_assert_int_eq(coop_connect(&c, NULL, NULL), 0);
    coop_disconnect(c);
    fake_end(&f);
  }
}
END_TEST

/* A user whose login sets XDG_RUNTIME_DIR (pam_systemd) was sent to
 * $XDG_RUNTIME_DIR/coop.sock, where nothing listened, and never reached the
 * system coopd: "cannot connect to /run/user/UID/coop.sock". Now that path
 * is taken where a socket is there (the user's own coopd), else the
 * system's. As nobody (root never looks there); root only. */
START_TEST(a_users_runtime_dir_without_a_socket_means_the_systems) {
  if (geteuid() != 0) return;
  char dir[] = "/tmp/coop-xdg-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(chmod(dir, 0777), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(2);
    unsetenv("COOP_SOCKET");
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char p[256], own[100];
    if (coop_socket_path(NULL, p, sizeof p) || strcmp(p, "/run/coop/coop.sock")) _exit(3);
    snprintf(own, sizeof own, "%s/coop.sock", dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", own);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a)) _exit(4);
    if (coop_socket_path(NULL, p, sizeof p) || strcmp(p, own)) _exit(5);
    unlink(own);
    _exit(0);
  }
  int st;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  rmdir(dir);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                "as nobody: status %d (3: a runtime dir without a socket was taken; 5: its socket "
                "was not)",
                WEXITSTATUS(st));
}
END_TEST

/* ---- who the server is ---- */

/* A server listening as uid 65534 (nobody) at a path in its own
 * directory, as another user could put one at the socket's path: a child
 * process that tells, one byte per connection on tally, 'S' when nothing
 * came before the client hung up, 'H' when it answered a HELLO, 'F'
 * otherwise. Root only. */
struct foreign {
  pid_t pid;
  int tally;
  char dir[32], path[64];
};

static void foreign_start(struct foreign *x) {
  strcpy(x->dir, "/tmp/coop-test.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(x->dir));
  ck_assert_int_eq(chown(x->dir, 65534, 65534), 0);
  ck_assert_int_eq(chmod(x->dir, 0755), 0);
  snprintf(x->path, sizeof x->path, "%s/coop.sock", x->dir);
  int tally[2], ready[2];
  ck_assert_int_eq(pipe(tally), 0);
  ck_assert_int_eq(pipe(ready), 0);
  x->pid = fork();
  ck_assert_int_ge(x->pid, 0);
  if (x->pid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(3);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", x->path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || chmod(x->path, 0666) ||
        listen(lfd, 4) || write(ready[1], "r", 1) != 1)
      _exit(4);
    for (;;) {
      struct fconn c = {.fd = accept(lfd, NULL, NULL)};
      if (c.fd < 0) _exit(5);
      coop_wire_reader_init(&c.rd);
      struct pollfd p = {.fd = c.fd, .events = POLLIN};
      char b, t = 'F';
      if (poll(&p, 1, 10000) == 1 && recv(c.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) t = 'S';
      if (t == 'F') {
        struct fake f;
        memset(&f, 0, sizeof f);
        fk_welcome(&f, &c);
        if (!f.fail[0]) t = 'H';
      }
      if (write(tally[1], &t, 1) != 1) _exit(6);
      coop_wire_reader_free(&c.rd);
      close(c.fd);
    }
  }
  close(tally[1]);
  close(ready[1]);
  char r;
  ck_assert_msg(read(ready[0], &r, 1) == 1, "the server as uid 65534 did not start");
  close(ready[0]);
  x->tally = tally[0];
}

/* What the server saw of the next connection. */
static char foreign_saw(struct foreign *x) {
  struct pollfd p = {.fd = x->tally, .events = POLLIN};
  char t = 0;
  if (poll(&p, 1, 15000) != 1 || read(x->tally, &t, 1) != 1) return 0;
  return t;
}

static void foreign_end(struct foreign *x) {
  kill(x->pid, SIGKILL);
  waitpid(x->pid, NULL, 0);
  close(x->tally);
  unlink(x->path);
  rmdir(x->dir);
}

/* coop_connect as uid (a child process): its result. */
static int connect_as(uid_t uid, const char *path) {
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgid(uid) || setuid(uid)) _exit(3);
    coop_conn *c;
    int e = coop_connect(&c, path, NULL);
    coop_disconnect(c);
    _exit(e == 0 ? 0 : e == COOP_EUNTRUSTED ? 1 : 2);
  }
  int st;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  ck_assert(WIFEXITED(st));
  return WEXITSTATUS(st) == 0 ? 0 : WEXITSTATUS(st) == 1 ? COOP_EUNTRUSTED : -1000;
}

/* A server of another user at the socket's path (through a directory above
 * it that the user could write) was handed the HELLO, then the jobs'
 * inline data and memfds. Now libcoop asks the kernel who listens
 * (SO_PEERCRED) and sends nothing unless it is root, the caller, or
 * coopd's service user (COOP_SERVER_USER, else "coop");
 * COOP_TRUST_ANY_SERVER=1 turns that off. */
START_TEST(untrusted_server_refused) {
  if (geteuid() != 0) {
    fprintf(stderr, "untrusted_server_refused: not root (a server of uid 65534), skipped\n");
    return;
  }
  unsetenv("COOP_SERVER_USER");
  unsetenv("COOP_TRUST_ANY_SERVER");
  struct foreign x;
  foreign_start(&x);
  coop_conn *c = (coop_conn *)&x; /* must be reset to NULL */
  ck_assert_int_eq(coop_connect(&c, x.path, NULL), COOP_EUNTRUSTED);
  ck_assert_ptr_null(c);
  const char *m = coop_errmsg(NULL);
  ck_assert_msg(
      strstr(m, x.path) && strstr(m, "runs as uid 65534") && strstr(m, "COOP_SERVER_USER=65534"),
      "%s", m);
  ck_assert_int_eq(foreign_saw(&x), 'S');                       /* not even the HELLO */
  ck_assert_int_eq(connect_as(65533, x.path), COOP_EUNTRUSTED); /* another user too */
  ck_assert_int_eq(foreign_saw(&x), 'S');
  ck_assert_int_eq(connect_as(65534, x.path), 0); /* its own user trusts it */
  ck_assert_int_eq(foreign_saw(&x), 'H');

  setenv("COOP_SERVER_USER", "65534", 1); /* coopd's service user, by uid */
  c = NULL;
  int e = coop_connect(&c, x.path, NULL);
  ck_assert_msg(e == 0, "%s: %s", coop_err_name(e), coop_errmsg(NULL));
  coop_disconnect(c);
  ck_assert_int_eq(foreign_saw(&x), 'H');
  struct passwd *pw = getpwuid(65534);
  if (pw) { /* and by name */
    setenv("COOP_SERVER_USER", pw->pw_name, 1);
    ck_assert_int_eq(coop_connect(&c, x.path, NULL), 0);
    coop_disconnect(c);
    ck_assert_int_eq(foreign_saw(&x), 'H');
  }
  setenv("COOP_SERVER_USER", "65533", 1); /* another one */
  ck_assert_int_eq(coop_connect(&c, x.path, NULL), COOP_EUNTRUSTED);
  ck_assert_msg(strstr(coop_errmsg(NULL), "service user 65533 (uid 65533)"), "%s",
                coop_errmsg(NULL));
  ck_assert_int_eq(foreign_saw(&x), 'S');
  unsetenv("COOP_SERVER_USER");

  setenv("COOP_TRUST_ANY_SERVER", "1", 1);
  ck_assert_int_eq(coop_connect(&c, x.path, NULL), 0);
  coop_disconnect(c);
  ck_assert_int_eq(foreign_saw(&x), 'H');
  setenv("COOP_TRUST_ANY_SERVER", "0", 1); /* only 1 turns the check off */
  ck_assert_int_eq(coop_connect(&c, x.path, NULL), COOP_EUNTRUSTED);
  ck_assert_int_eq(foreign_saw(&x), 'S');
  unsetenv("COOP_TRUST_ANY_SERVER");
  foreign_end(&x);
}
END_TEST

/* ---- submit and results ---- */

#define BIG_IN 5000  /* > the fake's inline_max: a memfd */
#define BIG_IO 3000  /* INOUT, memfd */
#define SMALL_IN 100 /* inline */
#define SMALL_OUT 64 /* inline */

static uint8_t pat(size_t i, unsigned k) { return (uint8_t)(i * 7 + k * 31 + 1); }

static int pat_ok(const uint8_t *p, size_t n, unsigned k) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pat(i, k)) return 0;
  return 1;
}

static int memfd_has(int fd, size_t n, unsigned k) {
  struct stat st;
  uint8_t *b = malloc(n);
  int ok = fstat(fd, &st) == 0 && (size_t)st.st_size == n && pread(fd, b, n, 0) == (ssize_t)n &&
           pat_ok(b, n, k);
  free(b);
  return ok;
}

static void memfd_fill(int fd, size_t n, unsigned k) {
  uint8_t *b = malloc(n);
  for (size_t i = 0; i < n; i++) b[i] = pat(i, k);
  ck_assert_int_eq(pwrite(fd, b, n, 0), (ssize_t)n);
  free(b);
}

/* Checks the SUBMIT of submit_and_wait(), writes INOUT's new bytes. */
static void check_submit(struct fake *f, struct fframe *fr) {
  const struct coop_msg_submit *s = &fr->m.submit;
  FK(f, !strcmp(s->kernel, "mix") && s->groups == 3 && s->flags == COOP_SUBMIT_COOPERATIVE);
  FK(f, s->period_us == 40000 && s->count == 3 && s->duration_ms == 0 && s->deadline_us == 40000);
  FK(f, s->nargs == 7 && fr->nfds == 2);
  if (f->fail[0] || s->nargs != 7 || fr->nfds != 2) return;
  const struct coop_wire_arg *a = s->args;
  float f32 = 1.5f;
  uint32_t bits;
  memcpy(&bits, &f32, sizeof bits);
  FK(f, a[0].type == COOP_ARG_U32 && a[0].bits == 7);
  FK(f, a[1].type == COOP_ARG_F32 && a[1].bits == bits);
  FK(f, a[2].type == COOP_ARG_BUF && a[2].dir == COOP_BUF_IN && a[2].fd == COOP_WIRE_FD_NONE);
  FK(f, a[2].size == SMALL_IN && a[2].data_len == SMALL_IN && pat_ok(a[2].data, SMALL_IN, 1));
  FK(f, a[3].type == COOP_ARG_BUF && a[3].dir == COOP_BUF_IN && a[3].fd < fr->nfds);
  FK(f, a[3].size == BIG_IN && memfd_has(fr->fds[a[3].fd], BIG_IN, 2));
  FK(f, a[4].dir == COOP_BUF_OUT && a[4].fd == COOP_WIRE_FD_NONE && a[4].data_len == 0);
  FK(f, a[5].dir == COOP_BUF_INOUT && a[5].fd < fr->nfds && a[5].size == BIG_IO);
  FK(f, a[5].fd < fr->nfds && memfd_has(fr->fds[a[5].fd], BIG_IO, 3));
  FK(f, a[6].type == COOP_ARG_I64 && a[6].bits == (uint64_t)-5);
  if (!f->fail[0]) memfd_fill(fr->fds[a[5].fd], BIG_IO, 4); /* in place, before RESULT */
}

static void send_result(struct fconn *c, uint32_t seq, uint64_t job, uint8_t state) {
  union coop_msg m = {0};
  struct coop_msg_result *r = &m.result;
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  for (uint32_t i = 0; i < 3; i++) {
    struct coop_wire_inst in = {.state = COOP_JOB_DONE,
                                .t = {.released = 1000 + i, .gather_ns = 10 + i, .exec_ns = 20}};
    ck_assert_int_eq(coop_wire_inst_put(&recs, &in), 0);
  }
  uint8_t out[SMALL_OUT];
  for (size_t i = 0; i < sizeof out; i++) out[i] = pat(i, 5);
  *r = (struct coop_msg_result){.job = job,
                                .state = state,
                                .t = {.gather_ns = 123, .exec_ns = 456},
                                .m_initial = 3,
                                .kills = 2,
                                .instances = 3,
                                .misses = 1,
                                .ninst = 3,
                                .inst = recs.p,
                                .nbuf = 1};
  r->bufs[0] = (struct coop_wire_outbuf){.arg = 4, .data = out, .len = sizeof out};
  fk_send(c, COOP_MSG_RESULT, seq, &m);
  coop_wire_buf_free(&recs);
}

/* SUBMIT -> ACCEPTED 42, WAIT -> RESULT; then the same for a cancelled job. */
static void s_submit(struct fake *f, struct fconn *c) {
  f->inline_max = 1024;
  fk_welcome(f, c);
  for (int round = 0; round < 2; round++) {
    struct fframe fr;
    if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
    check_submit(f, &fr);
    union coop_msg m = {0};
    m.job.job = 42 + round;
    fk_send(c, COOP_MSG_ACCEPTED, fr.h.seq, &m);
    ff_free(&fr);
    if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
    FK(f, fr.m.job.job == (uint64_t)(42 + round) && fr.m.job.timeout_ms == COOP_WAIT_FOREVER);
    send_result(c, fr.h.seq, 42 + round, round ? COOP_JOB_CANCELLED : COOP_JOB_DONE);
    ff_free(&fr);
  }
}

struct bufs {
  uint8_t small_in[SMALL_IN], big_in[BIG_IN], out[SMALL_OUT], io[BIG_IO];
};

static coop_job *mix_job(struct bufs *b) {
  for (size_t i = 0; i < SMALL_IN; i++) b->small_in[i] = pat(i, 1);
  for (size_t i = 0; i < BIG_IN; i++) b->big_in[i] = pat(i, 2);
  for (size_t i = 0; i < BIG_IO; i++) b->io[i] = pat(i, 3);
  memset(b->out, 0xee, sizeof b->out);
  coop_job *j = coop_job_new("mix", 3);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(coop_job_cooperative(j, 1), 0);
  ck_assert_int_eq(coop_job_periodic(j, 40000, 3, 0, 40000), 0);
  ck_assert_int_eq(coop_job_u32(j, 7), 0);
  ck_assert_int_eq(coop_job_f32(j, 1.5f), 0);
  ck_assert_int_eq(coop_job_buf_in(j, b->small_in, SMALL_IN), 0);
  ck_assert_int_eq(coop_job_buf_in(j, b->big_in, BIG_IN), 0);
  ck_assert_int_eq(coop_job_buf_out(j, b->out, SMALL_OUT), 0);
  ck_assert_int_eq(coop_job_buf_inout(j, b->io, BIG_IO), 0);
  ck_assert_int_eq(coop_job_i64(j, -5), 0);
  return j;
}

/* An IN buffer sent in a memfd leaves its all-zero pages as holes (a
 * page written costs the kernel its allocation): pages 0, 1 and 3 zero,
 * page 2 and the tail not. The bytes read back are the caller's. */
#define SPARSE_N (4 * 4096 + 100)

static void sparse_fill(uint8_t *b) {
  memset(b, 0, SPARSE_N);
  b[2 * 4096 + 17] = 9;
  b[SPARSE_N - 1] = 7;
}

static void s_sparse(struct fake *f, struct fconn *c) {
  f->inline_max = 1024; /* the buffer goes in a memfd */
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
  const struct coop_wire_arg *a = fr.m.submit.args;
  FK(f, fr.m.submit.nargs == 1 && fr.nfds == 1 && a[0].fd == 0 && a[0].size == SPARSE_N);
  /* coop_job_new's defaults: the kernel's own kind, and the groups given */
  FK(f, fr.m.submit.flags == COOP_SUBMIT_OWN_KIND && fr.m.submit.groups == 1);
  if (!f->fail[0]) {
    int fd = fr.fds[0];
    uint8_t want[SPARSE_N], got[SPARSE_N];
    sparse_fill(want);
    FK(f, pread(fd, got, SPARSE_N, 0) == SPARSE_N && !memcmp(got, want, SPARSE_N));
    FK(f, lseek(fd, 0, SEEK_DATA) == 2 * 4096);        /* pages 0 and 1: a hole */
    FK(f, lseek(fd, 2 * 4096, SEEK_HOLE) == 3 * 4096); /* page 3: a hole */
    FK(f, lseek(fd, 3 * 4096, SEEK_DATA) == 4 * 4096); /* the tail: data */
  }
  fk_accept(c, &fr, 5);
}

START_TEST(submit_memfd_leaves_zero_pages_as_holes) {
  struct fake f;
  fake_start(&f, s_sparse);
  coop_conn *c = connect_ok(&f);
  static uint8_t b[SPARSE_N];
  sparse_fill(b);
  coop_job *j = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_buf_in(j, b, SPARSE_N), 0);
  uint64_t id;
  ck_assert_int_eq(coop_submit(c, j, &id), 0);
  ck_assert_uint_eq(id, 5);
  coop_job_free(j);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

START_TEST(submit_inline_and_memfd) {
  struct fake f;
  fake_start(&f, s_submit);
  coop_conn *c = connect_ok(&f);
  struct bufs *b = calloc(1, sizeof *b);
  coop_job *j = mix_job(b);
  uint64_t id;
  ck_assert_int_eq(coop_submit(c, j, &id), 0);
  ck_assert_uint_eq(id, 42);
  /* IN data is copied at submit: changing it now changes nothing */
  memset(b->small_in, 0, SMALL_IN);
  struct coop_result r;
  int e = coop_wait(c, id, -1, &r);
  ck_assert_msg(e == 0, "wait: %s: %s", coop_strerror(e), coop_errmsg(c));
  ck_assert_int_eq(r.state, COOP_STATE_DONE);
  ck_assert_int_eq(r.t.gather_ns, 123);
  ck_assert_int_eq(r.t.exec_ns, 456);
  ck_assert_uint_eq(r.m_initial, 3);
  ck_assert_uint_eq(r.kills, 2);
  ck_assert_uint_eq(r.misses, 1);
  ck_assert_uint_eq(r.ninst, 3);
  ck_assert_int_eq(r.inst[2].t.released, 1002);
  ck_assert_int_eq(r.inst[1].t.gather_ns, 11);
  ck_assert(pat_ok(b->out, SMALL_OUT, 5)); /* inline OUT from the RESULT */
  ck_assert(pat_ok(b->io, BIG_IO, 4));     /* INOUT read back from the memfd */
  coop_result_free(&r);

  /* a job that did not end done leaves the caller's memory alone */
  coop_job_free(j);
  j = mix_job(b); /* fresh buffers */
  ck_assert_int_eq(coop_submit(c, j, &id), 0);
  ck_assert_int_eq(coop_wait(c, id, -1, &r), 0);
  ck_assert_int_eq(r.state, COOP_STATE_CANCELLED);
  ck_assert(pat_ok(b->io, BIG_IO, 3));
  ck_assert_uint_eq(b->out[0], 0xee);
  coop_result_free(&r);
  coop_job_free(j);
  coop_disconnect(c);
  free(b);
  fake_end(&f);
}
END_TEST

/* libcoop keeps the last SUBMIT's frame and sends it again, with the new
 * seq, for a SUBMIT equal to it (client.c, coop__encode_request): each of
 * these is answered by its own seq (a frame sent with the old one would
 * leave its coop_submit waiting), carries the scalar it was given, and a
 * job with inline bytes carries the bytes of its submit, not those its
 * pointer held the time before. */
static void s_resubmits(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  static const uint64_t bits[] = {7, 7, 7, 7, 8, 7};
  uint32_t last_seq = 0;
  for (unsigned k = 0; k < 6; k++) {
    struct fframe fr;
    if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
    const struct coop_msg_submit *s = &fr.m.submit;
    FK(f, fr.h.seq != last_seq);
    last_seq = fr.h.seq;
    FK(f, s->args[0].bits == bits[k]);
    if (k < 2) /* the inline job: "A..." then "B..." from one pointer */
      FK(f, s->nargs == 2 && s->args[1].data_len == 8 && s->args[1].data[0] == 'A' + k);
    else
      FK(f, s->nargs == 1);
    fk_accept(c, &fr, 100 + k);
  }
}

START_TEST(resubmits_carry_their_own_seq_and_bytes) {
  struct fake f;
  fake_start(&f, s_resubmits);
  coop_conn *c = connect_ok(&f);
  char in[8];
  coop_job *inl = coop_job_new("k", 1), *j7 = coop_job_new("k", 1), *j8 = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_u32(inl, 7), 0);
  ck_assert_int_eq(coop_job_buf_in(inl, in, sizeof in), 0);
  ck_assert_int_eq(coop_job_u32(j7, 7), 0);
  ck_assert_int_eq(coop_job_u32(j8, 8), 0);
  const coop_job *order[] = {inl, inl, j7, j7, j8, j7};
  for (unsigned k = 0; k < 6; k++) {
    memset(in, 'A' + (int)k, sizeof in);
    uint64_t id = 0;
    int e = coop_submit(c, order[k], &id);
    ck_assert_msg(e == 0, "submit %u: %s: %s", k, coop_strerror(e), coop_errmsg(c));
    ck_assert_uint_eq(id, 100 + k);
  }
  coop_job_free(inl);
  coop_job_free(j7);
  coop_job_free(j8);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

START_TEST(job_builder_errors) {
  coop_job *j = coop_job_new("", 1);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(coop_submit(NULL, j, NULL), COOP_EINVAL);
  coop_job_free(j);
  j = coop_job_new("k", 1);
  for (int i = 0; i < COOP_MAX_ARGS; i++) ck_assert_int_eq(coop_job_u32(j, (uint32_t)i), 0);
  ck_assert_int_eq(coop_job_u32(j, 99), COOP_EARGS);
  ck_assert_int_eq(coop_job_buf_out(j, NULL, 0), COOP_EINVAL);
  ck_assert_int_eq(coop_job_periodic(j, 1000, 0, 0, 0), COOP_EINVAL);
  coop_job_free(j);
  /* coop_job_buf_fd: a regular file of at least size bytes, a direction */
  int fd = memfd_create("t", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, 64), 0);
  j = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_buf_fd(j, fd, 64, COOP_JOB_INOUT), 0);
  ck_assert_int_eq(coop_job_buf_fd(j, fd, 65, COOP_JOB_IN), COOP_EINVAL);
  coop_job_free(j);
  j = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_buf_fd(j, fd, 64, 0), COOP_EINVAL);
  coop_job_free(j);
  j = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_buf_fd(j, -1, 64, COOP_JOB_OUT), COOP_EINVAL);
  coop_job_free(j);
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  j = coop_job_new("k", 1);
  ck_assert_int_eq(coop_job_buf_fd(j, p[0], 1, COOP_JOB_IN), COOP_EINVAL); /* not a file */
  coop_job_free(j);
  close(p[0]);
  close(p[1]);
  close(fd);
}
END_TEST

/* ---- errors ---- */

static void s_errors(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
  fk_error(c, fr.h.seq, COOP_ENOKERNEL, "no kernel named \"nope\"");
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
  FK(f, fr.m.job.timeout_ms == 50);
  fk_error(c, fr.h.seq, COOP_ETIMEDOUT, "job 9 still running");
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_CANCEL)) return;
  fk_error(c, fr.h.seq, COOP_EPERM, "job 9 belongs to uid 7");
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_STATS)) return;
  fk_ok(c, fr.h.seq); /* the wrong reply type */
  ff_free(&fr);
  FK(f, !fk_next(c, &fr));
}

START_TEST(error_frames) {
  struct fake f;
  fake_start(&f, s_errors);
  coop_conn *c = connect_ok(&f);
  coop_job *j = coop_job_new("nope", 1);
  uint64_t id;
  ck_assert_int_eq(coop_submit(c, j, &id), COOP_ENOKERNEL);
  ck_assert_str_eq(coop_errmsg(c), "no kernel named \"nope\"");
  coop_job_free(j);
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, 9, 50, &r), COOP_ETIMEDOUT);
  ck_assert_str_eq(coop_errmsg(c), "job 9 still running");
  ck_assert_int_eq(coop_cancel(c, 9), COOP_EPERM);
  ck_assert_str_eq(coop_errmsg(c), "job 9 belongs to uid 7");
  struct coop_stats st;
  ck_assert_int_eq(coop_stats(c, &st), COOP_EPROTO);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

/* ---- events ---- */

static void send_event(struct fconn *c, uint64_t job, uint8_t kind, uint32_t inst) {
  union coop_msg m = {0};
  m.event =
      (struct coop_msg_event){.job = job,
                              .kind = kind,
                              .state = kind == COOP_EV_FINISHED ? COOP_JOB_DONE : COOP_JOB_RUNNING,
                              .instance = inst,
                              .t_ns = 1000 * kind,
                              .gather_ns = kind >= COOP_EV_GATHERED ? 77 : -1};
  fk_send(c, COOP_MSG_EVENT, 0, &m);
}

static void s_events(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBSCRIBE)) return;
  FK(f, fr.m.subscribe.mask == COOP_EV_ALL);
  fk_ok(c, fr.h.seq);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
  for (uint8_t k = COOP_EV_RELEASED; k <= COOP_EV_FINISHED; k++) send_event(c, 5, k, 0);
  send_result(c, fr.h.seq, 5, COOP_JOB_DONE);
  ff_free(&fr);
  sleep_ms(100); /* while the client polls */
  send_event(c, 6, COOP_EV_FINISHED, 2);
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBSCRIBE)) return;
  FK(f, fr.m.subscribe.mask == 0);
  fk_ok(c, fr.h.seq);
  ff_free(&fr);
  send_event(c, 7, COOP_EV_FINISHED, 0); /* after unsubscribing: not dispatched */
  if (!fk_expect(f, c, &fr, COOP_MSG_STATS)) return;
  union coop_msg m = {0};
  strcpy(m.stats.device, "Fake GPU");
  fk_send(c, COOP_MSG_STATS_REPLY, fr.h.seq, &m);
  ff_free(&fr);
  FK(f, !fk_next(c, &fr)); /* open until the client disconnects */
}

struct seen {
  int n;
  struct coop_event ev[8];
};

static void on_event(const struct coop_event *ev, void *user) {
  struct seen *s = user;
  if (s->n < 8) s->ev[s->n] = *ev;
  s->n++;
}

START_TEST(events_while_waiting) {
  struct fake f;
  fake_start(&f, s_events);
  coop_conn *c = connect_ok(&f);
  struct seen s = {0};
  ck_assert_int_eq(coop_subscribe(c, COOP_EVENTS_ALL, on_event, &s), 0);
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, 5, -1, &r), 0);
  coop_result_free(&r);
  ck_assert_int_eq(s.n, 4);
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(s.ev[k].kind, COOP_EVENT_RELEASED + k);
    ck_assert_uint_eq(s.ev[k].job, 5);
  }
  ck_assert_int_eq(s.ev[0].gather_ns, -1);
  ck_assert_int_eq(s.ev[3].gather_ns, 77);
  ck_assert_int_eq(s.ev[3].state, COOP_STATE_DONE);
  ck_assert_int_eq(coop_poll_events(c, 5000), 1);
  ck_assert_uint_eq(s.ev[4].job, 6);
  ck_assert_uint_eq(s.ev[4].instance, 2);
  ck_assert_int_eq(coop_subscribe(c, 0, NULL, NULL), 0);
  struct coop_stats st;
  ck_assert_int_eq(coop_stats(c, &st), 0);
  ck_assert_int_eq(coop_poll_events(c, 50), 0);
  ck_assert_int_eq(s.n, 5);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

/* ---- replies out of order ---- */

static void reply_status(struct fconn *c, uint32_t seq, uint64_t job) {
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  struct coop_wire_status s = {.job = job, .state = COOP_JOB_RUNNING, .groups = 2};
  snprintf(s.kernel, sizeof s.kernel, "k%llu", (unsigned long long)job);
  ck_assert_int_eq(coop_wire_status_put(&recs, &s), 0);
  union coop_msg m = {0};
  m.status_reply = (struct coop_msg_status_reply){.n = 1, .recs = recs.p, .recs_len = recs.len};
  fk_send(c, COOP_MSG_STATUS_REPLY, seq, &m);
  coop_wire_buf_free(&recs);
}

/* Two STATUS requests in flight: answered last first. */
static void s_out_of_order(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe a, b;
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS) || !fk_expect(f, c, &b, COOP_MSG_STATUS)) return;
  FK(f, a.h.seq != b.h.seq);
  reply_status(c, b.h.seq, b.m.job.job);
  sleep_ms(50);
  reply_status(c, a.h.seq, a.m.job.job);
  ff_free(&a);
  ff_free(&b);
  /* a late reply (its request gave up) must not be taken for the next */
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS)) return;
  sleep_ms(400);
  reply_status(c, a.h.seq, a.m.job.job);
  if (!fk_expect(f, c, &b, COOP_MSG_STATUS)) return;
  reply_status(c, b.h.seq, b.m.job.job);
  ff_free(&a);
  ff_free(&b);
}

struct asker {
  coop_conn *c;
  uint64_t job;
  int err;
  char kernel[COOP_NAME_MAX];
};

static void *ask_status(void *arg) {
  struct asker *a = arg;
  struct coop_job_status *s;
  size_t n;
  a->err = coop_status(a->c, a->job, &s, &n);
  if (!a->err && n == 1) snprintf(a->kernel, sizeof a->kernel, "%s", s->kernel);
  if (!a->err) free(s);
  return NULL;
}

START_TEST(replies_out_of_order) {
  struct fake f;
  fake_start(&f, s_out_of_order);
  coop_conn *c = connect_ok(&f);
  struct asker a = {c, 11, -99, ""}, b = {c, 22, -99, ""};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, ask_status, &a);
  sleep_ms(50); /* so that a's request goes first */
  pthread_create(&tb, NULL, ask_status, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  ck_assert_int_eq(a.err, 0);
  ck_assert_int_eq(b.err, 0);
  ck_assert_str_eq(a.kernel, "k11");
  ck_assert_str_eq(b.kernel, "k22");
  /* single thread: a timed-out request, then the next gets its own reply */
  coop_set_timeout(c, 150);
  struct coop_job_status *s;
  size_t n;
  ck_assert_int_eq(coop_status(c, 33, &s, &n), COOP_ETIMEDOUT);
  coop_set_timeout(c, 5000);
  ck_assert_int_eq(coop_status(c, 44, &s, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(s[0].job, 44);
  free(s);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

/* coop_set_spin: replies within the spin, after it (the reader then
 * sleeps), none at all; the spin never outlasts the request's timeout. */
static void s_spin(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe a;
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS)) return;
  reply_status(c, a.h.seq, a.m.job.job); /* at once: within the spin */
  ff_free(&a);
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS)) return;
  sleep_ms(50); /* long after a 1 ms spin */
  reply_status(c, a.h.seq, a.m.job.job);
  ff_free(&a);
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS)) return; /* never answered */
  ff_free(&a);
  if (!fk_expect(f, c, &a, COOP_MSG_STATUS)) return;
  reply_status(c, a.h.seq, a.m.job.job);
  ff_free(&a);
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(spin_before_sleep) {
  struct fake f;
  fake_start(&f, s_spin);
  setenv("COOP_SPIN_US", "1000", 1); /* read at connect */
  coop_conn *c = connect_ok(&f);
  unsetenv("COOP_SPIN_US");
  struct coop_job_status *s;
  size_t n;
  for (uint64_t job = 1; job <= 2; job++) {
    ck_assert_int_eq(coop_status(c, job, &s, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(s[0].job, job);
    free(s);
  }
  coop_set_spin(c, 5000000); /* more than the most: 1 s */
  coop_set_timeout(c, 150);
  int64_t t0 = mono_ms();
  ck_assert_int_eq(coop_status(c, 3, &s, &n), COOP_ETIMEDOUT);
  int64_t took_ms = mono_ms() - t0;
  ck_assert_msg(took_ms >= 140 && took_ms < 700, "a 150 ms timeout took %lld ms with a 1 s spin",
                (long long)took_ms);
  coop_set_timeout(c, 5000);
  ck_assert_int_eq(coop_status(c, 4, &s, &n), 0);
  ck_assert_uint_eq(s[0].job, 4);
  free(s);
  coop_disconnect(c);
  fake_end(&f);
}
END_TEST

/* ---- the daemon going away ---- */

static void s_close_on_status(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (fk_expect(f, c, &fr, COOP_MSG_STATUS)) ff_free(&fr);
}

static void s_shutdown(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
  fk_error(c, 0, COOP_ESHUTDOWN, "coopd is shutting down");
  ff_free(&fr);
}

/* coopd closes an idle connection with an ERROR that says why (evicted
 * at max_clients, refused at max_clients_per_uid, a shutdown). */
static void s_close_with_error(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  fk_error(c, 0, COOP_ELIMIT, "closed: evicted");
}

START_TEST(daemon_closes) {
  struct fake f;
  fake_start(&f, s_close_on_status);
  coop_conn *c = connect_ok(&f);
  struct coop_job_status *s;
  size_t n;
  ck_assert_int_eq(coop_status(c, 0, &s, &n), COOP_ECLOSED);
  ck_assert_int_eq(coop_cancel(c, 1), COOP_ECLOSED); /* and stays closed */
  coop_disconnect(c);
  fake_end(&f);

  fake_start(&f, s_shutdown);
  c = connect_ok(&f);
  struct coop_result r;
  ck_assert_int_eq(coop_wait(c, 1, -1, &r), COOP_ESHUTDOWN);
  ck_assert_str_eq(coop_errmsg(c), "coopd is shutting down");
  coop_disconnect(c);
  fake_end(&f);

  /* the ERROR and the close came before the request was sent: its send
   * fails (EPIPE), and the ERROR waiting to be read says why; it was
   * ECLOSED with no word (at connect: "too many clients, or shutting
   * down?", where coopd had said max_clients_per_uid) */
  fake_start(&f, s_close_with_error);
  c = connect_ok(&f);
  fake_end(&f); /* the fake has closed */
  ck_assert_int_eq(coop_status(c, 0, &s, &n), COOP_ELIMIT);
  ck_assert_str_eq(coop_errmsg(c), "closed: evicted");
  coop_disconnect(c);
}
END_TEST

/* ---- top ---- */

#define TOP_WGS 70 /* more than one line of the map (64) */

/* TOP_REPLY: workgroups A A a # B, then free ones; jobs 3 (bfs,
 * cooperative, M 2 of 4) and 4 (render). */
static void reply_top(struct fconn *c, uint32_t seq) {
  struct coop_wire_buf w, j;
  coop_wire_buf_init(&w), coop_wire_buf_init(&j);
  const struct coop_wire_wg wg[] = {{COOP_WG_RUNNING, 3},
                                    {COOP_WG_RUNNING, 3},
                                    {COOP_WG_RESERVED, 3},
                                    {COOP_WG_OTHER, 0},
                                    {COOP_WG_RUNNING, 4}};
  for (unsigned i = 0; i < TOP_WGS; i++) {
    struct coop_wire_wg free_wg = {COOP_WG_FREE, 0};
    ck_assert_int_eq(coop_wire_wg_put(&w, i < 5 ? &wg[i] : &free_wg), 0);
  }
  const struct coop_wire_topjob tj[] = {{3, "bfs", 1, 4, 2, 3, 5, 1, 7},
                                        {4, "render", 0, 1, 1, 1, 0, 0, -2}};
  for (unsigned i = 0; i < 2; i++) ck_assert_int_eq(coop_wire_topjob_put(&j, &tj[i]), 0);
  union coop_msg m = {0};
  m.top = (struct coop_msg_top_reply){TOP_WGS, w.p, (uint32_t)w.len, 2, j.p, (uint32_t)j.len};
  fk_send(c, COOP_MSG_TOP_REPLY, seq, &m);
  coop_wire_buf_free(&w), coop_wire_buf_free(&j);
}

static void s_top(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  FK(f, fr.h.len == 1 && fr.m.top_req.device == 0); /* coop_top: device 0 */
  reply_top(c, fr.h.seq);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  union coop_msg m = {0}; /* an empty view */
  fk_send(c, COOP_MSG_TOP_REPLY, fr.h.seq, &m);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  fk_error(c, fr.h.seq, COOP_EBUSY, "try again");
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  fk_ok(c, fr.h.seq); /* the wrong reply type */
  ff_free(&fr);
  FK(f, !fk_next(c, &fr));
}

START_TEST(top_request) {
  struct fake f;
  fake_start(&f, s_top);
  coop_conn *c = connect_ok(&f);
  struct coop_wg *wg = (struct coop_wg *)&f;
  struct coop_topjob *tj = (struct coop_topjob *)&f;
  size_t nwg = 99, ntj = 99;
  ck_assert_int_eq(coop_top(NULL, &wg, &nwg, &tj, &ntj), COOP_EINVAL);
  ck_assert_int_eq(coop_top(c, &wg, NULL, &tj, &ntj), COOP_EINVAL);
  ck_assert_int_eq(coop_top(c, &wg, &nwg, NULL, &ntj), COOP_EINVAL);
  /* no list to fill: refused before anything is sent (the fake answers
   * TOP only), not a list allocated and lost */
  ck_assert_int_eq(coop_kernels_info(c, NULL, &nwg), COOP_EINVAL);
  ck_assert_int_eq(coop_kernels_elems(c, NULL, &nwg), COOP_EINVAL);
  int e = coop_top(c, &wg, &nwg, &tj, &ntj);
  ck_assert_msg(e == 0, "top: %s: %s", coop_strerror(e), coop_errmsg(c));
  ck_assert_uint_eq(nwg, TOP_WGS);
  ck_assert_int_eq(wg[0].state, COOP_WORKER_RUNNING);
  ck_assert_uint_eq(wg[0].job, 3);
  ck_assert_int_eq(wg[2].state, COOP_WORKER_RESERVED);
  ck_assert_uint_eq(wg[2].job, 3);
  ck_assert_int_eq(wg[3].state, COOP_WORKER_OTHER);
  ck_assert_uint_eq(wg[3].job, 0);
  ck_assert_uint_eq(wg[4].job, 4);
  ck_assert_int_eq(wg[TOP_WGS - 1].state, COOP_WORKER_FREE);
  ck_assert_uint_eq(ntj, 2);
  ck_assert_uint_eq(tj[0].job, 3);
  ck_assert_str_eq(tj[0].kernel, "bfs");
  ck_assert_int_eq(tj[0].cooperative, 1);
  ck_assert_uint_eq(tj[0].groups, 4);
  ck_assert_uint_eq(tj[0].m, 2);
  ck_assert_uint_eq(tj[0].workers, 3);
  ck_assert_uint_eq(tj[0].kills, 5);
  ck_assert_uint_eq(tj[0].forks, 1);
  ck_assert_int_eq(tj[0].priority, 7);
  ck_assert_str_eq(tj[1].kernel, "render");
  ck_assert_int_eq(tj[1].cooperative, 0);
  ck_assert_int_eq(tj[1].priority, -2);
  free(wg);
  free(tj);
  /* nothing on the device: empty lists */
  ck_assert_int_eq(coop_top(c, &wg, &nwg, &tj, &ntj), 0);
  ck_assert_ptr_null(wg);
  ck_assert_ptr_null(tj);
  ck_assert_uint_eq(nwg, 0);
  ck_assert_uint_eq(ntj, 0);
  /* the daemon's ERROR, then a reply of the wrong type */
  ck_assert_int_eq(coop_top(c, &wg, &nwg, &tj, &ntj), COOP_EBUSY);
  ck_assert_str_eq(coop_errmsg(c), "try again");
  ck_assert_ptr_null(wg);
  ck_assert_ptr_null(tj);
  ck_assert_int_eq(coop_top(c, &wg, &nwg, &tj, &ntj), COOP_EPROTO);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(c), "TOP_REPLY"));
  coop_disconnect(c);
  fake_end(&f);
  ck_assert_str_eq(coop_worker_state_name(COOP_WORKER_RESERVED), "reserved");
  ck_assert_str_eq(coop_worker_state_name(4), "unknown");
}
END_TEST

/* ---- coopctl ---- */

/* Runs coopctl with args (NULL-terminated); its stdout into out (if not
 * NULL). Returns the exit status. */
/* coopctl ARGS: its exit status, its stdout in out and its stderr in err
 * (either NULL: not kept). */
static int coopctl_io(char *out, size_t outlen, char *err, size_t errlen, const char *const *args) {
  const char *bin = getenv("COOPCTL");
  ck_assert_msg(bin != NULL, "COOPCTL is not set");
  char tmp[] = "/tmp/coopctl-out.XXXXXX", tmp2[] = "/tmp/coopctl-err.XXXXXX";
  int fd = mkstemp(tmp), efd = mkstemp(tmp2);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_ge(efd, 0);
  pid_t pid = fork();
  if (pid == 0) {
    const char *argv[32] = {bin};
    for (int i = 0; args[i] && i < 30; i++) argv[i + 1] = args[i];
    dup2(fd, 1);
    dup2(efd, 2);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  if (out) {
    ssize_t n = pread(fd, out, outlen - 1, 0);
    out[n > 0 ? n : 0] = '\0';
  }
  if (err) {
    ssize_t n = pread(efd, err, errlen - 1, 0);
    err[n > 0 ? n : 0] = '\0';
  }
  close(fd);
  close(efd);
  unlink(tmp);
  unlink(tmp2);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int coopctl(char *out, size_t outlen, const char *const *args) {
  return coopctl_io(out, outlen, NULL, 0, args);
}

#define USAGE(...)                                                                   \
  do {                                                                               \
    const char *const a_[] = {__VA_ARGS__, NULL};                                    \
    ck_assert_msg(coopctl(NULL, 0, a_) == 2, "not a usage error: %s", #__VA_ARGS__); \
  } while (0)

START_TEST(coopctl_bad_usage) {
  const char *const none[] = {NULL};
  ck_assert_int_eq(coopctl(NULL, 0, none), 2);
  USAGE("frobnicate");
  USAGE("--bogus", "kernels");
  USAGE("--socket");
  /* an empty PATH is no socket (libcoop took it for the default one) */
  USAGE("--socket=", "stats");
  USAGE("--socket", "", "stats");
  USAGE("stats", "--socket=");
  USAGE("kernels", "extra");
  USAGE("kernels", "--wat");
  USAGE("submit");
  USAGE("submit", "k", "--wg", "x");
  USAGE("submit", "k", "--wg");
  USAGE("submit", "k", "--wg", "1", "bogus:1");
  USAGE("submit", "k", "--wg", "1", "u32:-1");
  USAGE("submit", "k", "--wg", "1", "i32:3000000000");
  USAGE("submit", "k", "--wg", "1", "f32:abc");
  USAGE("submit", "k", "--wg", "1", "noColon");
  USAGE("submit", "k", "--wg", "1", "out:8:/tmp/x");
  USAGE("submit", "k", "--wg", "1", "out:0:/tmp/x", "--wait");
  USAGE("submit", "k", "--wg", "1", "zeros:0");
  USAGE("submit", "k", "--wg", "1", "--count", "3");
  USAGE("submit", "k", "--wg", "1", "--period", "1000");
  USAGE("submit", "k", "--wg", "1", "--coop=yes");
  USAGE("submit", "k", "--wg", "0");
  USAGE("status", "x");
  USAGE("status", "1", "2");
  USAGE("wait");
  USAGE("wait", "0");
  USAGE("wait", "1", "--timeout", "-5");
  USAGE("cancel");
  USAGE("stats", "1");
  USAGE("top", "--interval", "0");
  USAGE("top", "--iterations", "x");
  USAGE("top", "--iterations", "0");
  USAGE("top", "--interval");
  USAGE("top", "extra");
  USAGE("render", "--class", "ultra", "--wg", "1", "--for", "1");
  USAGE("render", "--class", "light", "--wg", "1");
  USAGE("render", "--class", "light", "--wg", "0", "--for", "1");
  USAGE("render", "--class", "light", "--wg", "1", "--for", "-1");
  USAGE("render", "--class", "light", "--wg", "1", "--for", "1", "--size", "0");
}
END_TEST

START_TEST(coopctl_help) {
  char all[8192], out[8192];
  const char *const h[] = {"--help", NULL};
  ck_assert_int_eq(coopctl(all, sizeof all, h), 0);
  ck_assert_ptr_nonnull(strstr(all, "usage: coopctl"));
  const char *cmds[] = {"kernels", "submit", "status", "wait", "cancel", "stats", "top", "render"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    ck_assert_ptr_nonnull(strstr(all, cmds[i]));
    const char *const ch[] = {cmds[i], "--help", NULL};
    ck_assert_int_eq(coopctl(out, sizeof out, ch), 0);
    ck_assert_ptr_nonnull(strstr(out, cmds[i]));
  }
  const char *const down[] = {"--socket", "/nonexistent/coop.sock", "stats", NULL};
  ck_assert_int_eq(coopctl(NULL, 0, down), 1);
}
END_TEST

/* KERNELS answered: render (not cooperative), sweep (cooperative), and k,
 * whose kind is `k_coop`. */
static void fk_kernels(struct fake *f, struct fconn *c, int k_coop) {
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_KERNELS)) return;
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  struct coop_wire_kernel k1 = {
      .name = "render", .owner = COOP_WIRE_SHIPPED, .nargs = 5, .types = {7, 7, 7, 1, 1}};
  struct coop_wire_kernel k2 = {.name = "sweep",
                                .cooperative = 1,
                                .owner = COOP_WIRE_SHIPPED,
                                .nargs = 3,
                                .types = {7, 1, 1}};
  struct coop_wire_kernel k3 = {.name = "k",
                                .cooperative = (uint8_t)k_coop,
                                .owner = COOP_WIRE_SHIPPED,
                                .nargs = 3,
                                .types = {7, 7, 1}};
  coop_wire_kernel_put(&recs, &k1);
  coop_wire_kernel_put(&recs, &k2);
  coop_wire_kernel_put(&recs, &k3);
  union coop_msg m = {0};
  m.kernels = (struct coop_msg_kernel_list){.n = 3, .recs = recs.p, .recs_len = recs.len};
  fk_send(c, COOP_MSG_KERNEL_LIST, fr.h.seq, &m);
  coop_wire_buf_free(&recs);
  ff_free(&fr);
}

static void s_kernels(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  fk_kernels(f, c, 0);
}

START_TEST(coopctl_kernels) {
  struct fake f;
  fake_start(&f, s_kernels);
  char out[4096];
  const char *const a[] = {"--socket", f.path, "kernels", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  ck_assert_str_eq(out,
                   "render noncooperative buf,buf,buf,u32,u32\n"
                   "sweep cooperative buf,u32,u32\n"
                   "k noncooperative buf,buf,u32\n");
  ck_assert_str_eq(f.hello_name, "coopctl");
}
END_TEST

/* submit --wait with in:, out: and u32: ARGs; the output lands in a file.
 * coopctl asks STATS for the arena (an in: file's bound) and, without
 * --coop, for k's kind first. */
static void s_submit_files(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_STATS)) return; /* the arena bounds an in: file */
  union coop_msg st = {0};
  fk_send(c, COOP_MSG_STATS_REPLY, fr.h.seq, &st);
  ff_free(&fr);
  fk_kernels(f, c, 0);
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
  const struct coop_msg_submit *s = &fr.m.submit;
  FK(f, s->nargs == 3 && s->args[0].size == 5 && !memcmp(s->args[0].data, "hello", 5));
  FK(f, s->args[1].dir == COOP_BUF_OUT && s->args[1].size == 4 && s->args[2].bits == 9);
  union coop_msg m = {0};
  m.job.job = 3;
  fk_send(c, COOP_MSG_ACCEPTED, fr.h.seq, &m);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
  memset(&m, 0, sizeof m);
  m.result = (struct coop_msg_result){.job = 3, .state = COOP_JOB_DONE, .nbuf = 1};
  m.result.bufs[0] = (struct coop_wire_outbuf){.arg = 1, .data = (const uint8_t *)"OUT!", .len = 4};
  fk_send(c, COOP_MSG_RESULT, fr.h.seq, &m);
  ff_free(&fr);
}

START_TEST(coopctl_submit_wait) {
  struct fake f;
  fake_start(&f, s_submit_files);
  char in[256], outp[256], arg_in[300], arg_out[300], out[8192];
  snprintf(in, sizeof in, "%s/in.bin", f.dir);
  snprintf(outp, sizeof outp, "%s/out.bin", f.dir);
  FILE *fp = fopen(in, "wb");
  fputs("hello", fp);
  fclose(fp);
  snprintf(arg_in, sizeof arg_in, "in:%s", in);
  snprintf(arg_out, sizeof arg_out, "out:4:%s", outp);
  const char *const a[] = {"--json", "--socket", f.path, "submit", "k",     "--wg",
                           "2",      "--wait",   arg_in, arg_out,  "u32:9", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"state\":\"done\""));
  char got[8] = {0};
  fp = fopen(outp, "rb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fread(got, 1, sizeof got, fp), 4);
  fclose(fp);
  ck_assert_str_eq(got, "OUT!");
  unlink(in);
  unlink(outp);
  fake_end(&f);
}
END_TEST

/* A job lost when its device process died: coopd's message already begins
 * "the job was lost", and wait printed libcoop's text for ELOST before it,
 * so the line said it was lost twice. */
static void s_wait_lost(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
  union coop_msg m = {0};
  m.result = (struct coop_msg_result){.job = 9, .state = COOP_JOB_FAILED, .error = COOP_ELOST};
  snprintf(m.result.message, sizeof m.result.message, "%s",
           "the job was lost: coopd restarted the device (its device process killed by signal "
           "9); submit it again");
  fk_send(c, COOP_MSG_RESULT, fr.h.seq, &m);
  ff_free(&fr);
}

START_TEST(coopctl_wait_says_lost_once) {
  struct fake f;
  fake_start(&f, s_wait_lost);
  char out[4096];
  const char *const a[] = {"--socket", f.path, "wait", "9", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 1);
  fake_end(&f);
  const char *lost = strstr(out, "was lost");
  ck_assert_msg(lost && !strstr(lost + 1, "was lost") && !strstr(out, "or its device process"),
                "%s", out);
  ck_assert_msg(strstr(out, "  error      ELOST: the job was lost: coopd restarted the device"),
                "%s", out);
}
END_TEST

/* Without --wait the job is detached (it must outlive coopctl). */
static void s_submit_detached(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
  FK(f, fr.m.submit.flags == (COOP_SUBMIT_DETACHED | COOP_SUBMIT_COOPERATIVE));
  FK(f, fr.m.submit.nargs == 2 && fr.m.submit.args[1].type == COOP_ARG_I32 &&
            fr.m.submit.args[1].bits == 0xffffffffu);
  fk_accept(c, &fr, 77);
}

START_TEST(coopctl_submit_detached) {
  struct fake f;
  fake_start(&f, s_submit_detached);
  char out[256];
  const char *const a[] = {"--socket", f.path,   "submit",   "k",      "--wg",
                           "1",        "--coop", "zeros:16", "i32:-1", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  ck_assert_str_eq(out, "77\n");
}
END_TEST

/* Neither --coop nor --wg: coopctl asks coopd for k's kind (cooperative
 * here) and submits it cooperative on every worker of the device it goes
 * to: 0 groups, which coopd fills in (WELCOME's 7 were device 0's). */
static void s_submit_defaults(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  fk_kernels(f, c, 1);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_SUBMIT)) return;
  FK(f, fr.m.submit.flags == (COOP_SUBMIT_DETACHED | COOP_SUBMIT_COOPERATIVE));
  FK(f, fr.m.submit.groups == 0);
  fk_accept(c, &fr, 78);
}

START_TEST(coopctl_submit_defaults) {
  struct fake f;
  fake_start(&f, s_submit_defaults);
  char out[256];
  const char *const a[] = {"--socket", f.path, "submit", "k", "zeros:16", "i32:-1", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  ck_assert_str_eq(out, "78\n");
}
END_TEST

/* top's STATS and STATUS: jobs 3 and 4 running, 5 queued, 2 done. */
static void reply_top_stats(struct fconn *c, uint32_t seq) {
  union coop_msg m = {0};
  struct coop_msg_stats_reply *s = &m.stats;
  strcpy(s->backend, "opencl");
  strcpy(s->device, "Fake GPU");
  s->compute_units = 4, s->workers = TOP_WGS, s->clients = 2, s->queued = 1, s->running = 2;
  s->submitted = 4, s->done = 1, s->samples = 10;
  s->gather_p50 = 1500, s->gather_p90 = 2500000, s->gather_p99 = 3000000, s->gather_max = 999;
  fk_send(c, COOP_MSG_STATS_REPLY, seq, &m);
}

static void reply_top_status(struct fconn *c, uint32_t seq) {
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  const struct coop_wire_status st[] = {
      {.job = 2, .state = COOP_JOB_DONE, .kernel = "old", .groups = 1},
      {.job = 3, .state = COOP_JOB_RUNNING, .flags = 1, .kernel = "bfs", .groups = 4},
      {.job = 4, .state = COOP_JOB_RUNNING, .kernel = "render", .groups = 1},
      {.job = 5, .state = COOP_JOB_QUEUED, .flags = 1, .kernel = "sweep", .groups = 8}};
  for (unsigned i = 0; i < 4; i++) ck_assert_int_eq(coop_wire_status_put(&recs, &st[i]), 0);
  union coop_msg m = {0};
  m.status_reply = (struct coop_msg_status_reply){4, recs.p, (uint32_t)recs.len};
  fk_send(c, COOP_MSG_STATUS_REPLY, seq, &m);
  coop_wire_buf_free(&recs);
}

/* One snapshot's requests: STATS, STATUS (every job) and, unless old,
 * TOP; an old daemon answers TOP as a daemon that does not know the type
 * does: ERROR EPROTO, then it closes the connection. */
static void top_snapshot(struct fake *f, struct fconn *c, int old) {
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_STATS)) return;
  reply_top_stats(c, fr.h.seq);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_STATUS)) return;
  FK(f, fr.m.job.job == 0);
  reply_top_status(c, fr.h.seq);
  ff_free(&fr);
  if (old == 2) return; /* knows TOP is not worth asking */
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  if (old)
    fk_error(c, fr.h.seq, COOP_EPROTO, "bad UNKNOWN frame: malformed message");
  else
    reply_top(c, fr.h.seq);
  ff_free(&fr);
}

static void s_top_snapshots(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  for (int i = 0; i < 2 && !f->fail[0]; i++) top_snapshot(f, c, 0);
  struct fframe fr;
  FK(f, !fk_next(c, &fr));
}

static const char top_text[] =
    "coopd     (an older daemon: no version or uptime)\n"
    "device    Fake GPU (opencl), 4 compute units, 70 workers\n"
    "clients   2\n"
    "jobs      2 running, 1 queued\n"
    "total     4 submitted, 1 done, 0 cancelled, 0 refused, 0 failed\n"
    "gather    p50 1.500 us, p90 2.500 ms, p99 3.000 ms, max 999 ns (last 10 non-cooperative "
    "tasks)\n"
    "watchdog  0 gather timeouts, 0 hung, 0 workers lost\n"
    "\n"
    "workers   70: 3 running, 1 reserved, 1 another user's, 65 free\n"
    "       0  AAa#B...........................................................\n"
    "      64  ......\n"
    "legend    A job 3 bfs  B job 4 render\n"
    "          a-z reserved for A-Z, # another user's, . free\n"
    "\n"
    "JOB      WG STATE     KERNEL               KIND     PRI      N      M WORKERS UTIL%  KILLS  "
    "FORKS\n"
    "3        A  running   bfs                  coop       7      4      2       3   4.3      5    "
    "  "
    "1\n"
    "4        B  running   render               noncoop   -2      1      1       1   1.4      0    "
    "  "
    "0\n"
    "5        -  queued    sweep                coop       0      8      -       -     -      -    "
    "  "
    "-\n";

START_TEST(coopctl_top) {
  struct fake f;
  fake_start(&f, s_top_snapshots);
  static char out[16384];
  const char *const a[] = {"--socket", f.path,         "top", "--interval",
                           "10",       "--iterations", "2",   NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  char want[sizeof top_text * 2 + 1];
  snprintf(want, sizeof want, "%s\n%s", top_text, top_text); /* snapshots, a blank line apart */
  ck_assert_str_eq(out, want);

  fake_start(&f, s_top_snapshots);
  const char *const j[] = {"--json",       "--socket",       f.path, "top",
                           "--interval=1", "--iterations=2", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, j), 0);
  fake_end(&f);
  char *second = strchr(out, '\n');
  ck_assert_ptr_nonnull(second);
  ck_assert_ptr_nonnull(strchr(second + 1, '\n'));
  ck_assert_str_eq(strchr(second + 1, '\n') + 1, ""); /* two lines, one object each */
  ck_assert(!strncmp(
      out, "{\"stats\":{\"daemon_version\":null,\"uptime_ns\":null,\"backend\":\"opencl\"", 67));
  ck_assert_ptr_nonnull(strstr(out, "\"map\":\"AAa#B....."));
  ck_assert_ptr_nonnull(strstr(out,
                               "\"workgroups\":[{\"state\":\"running\",\"job\":3},"
                               "{\"state\":\"running\",\"job\":3},{\"state\":\"reserved\","
                               "\"job\":3},{\"state\":\"other\",\"job\":null},"));
  ck_assert_ptr_nonnull(strstr(
      out,
      "\"jobs\":[{\"job\":3,\"mark\":\"A\",\"kernel\":\"bfs\","
      "\"cooperative\":true,\"groups\":4,\"m\":2,\"workers\":3,"
      "\"util_percent\":4.3,\"kills\":5,\"forks\":1,\"priority\":7},{\"job\":4,\"mark\":\"B\""));
  ck_assert_ptr_nonnull(strstr(out, "\"job\":5,\"state\":\"queued\""));
  ck_assert_ptr_null(strstr(out, "\"job\":2,")); /* done: not shown */
  ck_assert_ptr_null(strstr(out, "\"note\""));
}
END_TEST

/* 28 jobs of one workgroup each, the last also with a reserved one: the
 * letters run out after Z. */
static void s_top_many(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  struct fframe fr;
  if (!fk_expect(f, c, &fr, COOP_MSG_STATS)) return;
  reply_top_stats(c, fr.h.seq);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_STATUS)) return;
  union coop_msg m = {0}; /* no status records */
  fk_send(c, COOP_MSG_STATUS_REPLY, fr.h.seq, &m);
  ff_free(&fr);
  if (!fk_expect(f, c, &fr, COOP_MSG_TOP)) return;
  struct coop_wire_buf w, j;
  coop_wire_buf_init(&w), coop_wire_buf_init(&j);
  for (uint64_t i = 1; i <= 28; i++) {
    struct coop_wire_wg wg = {COOP_WG_RUNNING, 100 + i};
    struct coop_wire_topjob tj = {.job = 100 + i, .kernel = "k", .groups = 1, .m = 1, .workers = 1};
    coop_wire_wg_put(&w, &wg), coop_wire_topjob_put(&j, &tj);
  }
  struct coop_wire_wg r = {COOP_WG_RESERVED, 128}, o = {COOP_WG_OTHER, 0};
  coop_wire_wg_put(&w, &r), coop_wire_wg_put(&w, &o);
  m.top = (struct coop_msg_top_reply){30, w.p, (uint32_t)w.len, 28, j.p, (uint32_t)j.len};
  fk_send(c, COOP_MSG_TOP_REPLY, fr.h.seq, &m);
  coop_wire_buf_free(&w), coop_wire_buf_free(&j);
  ff_free(&fr);
}

START_TEST(coopctl_top_many_jobs) {
  struct fake f;
  fake_start(&f, s_top_many);
  static char out[16384];
  const char *const a[] = {"--socket", f.path, "top", "--iterations", "1", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  ck_assert_msg(strstr(out, "       0  ABCDEFGHIJKLMNOPQRSTUVWXYZ**~#\n") != NULL, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "Z job 126 k\n"));
  ck_assert_ptr_nonnull(strstr(out, ", * ~ jobs past Z\n"));
  ck_assert_ptr_nonnull(strstr(out, "\n128      *  running   k "));
}
END_TEST

/* coopctl before a server of another user: exit 1, and the error says so. */
START_TEST(coopctl_untrusted_server) {
  if (geteuid() != 0) {
    fprintf(stderr, "coopctl_untrusted_server: not root (a server of uid 65534), skipped\n");
    return;
  }
  unsetenv("COOP_SERVER_USER");
  unsetenv("COOP_TRUST_ANY_SERVER");
  struct foreign x;
  foreign_start(&x);
  static char out[4096];
  const char *const a[] = {"--json", "--socket", x.path, "stats", NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 1);
  ck_assert_msg(strstr(out, "\"name\":\"EUNTRUSTED\"") && strstr(out, "runs as uid 65534"), "%s",
                out);
  ck_assert_int_eq(foreign_saw(&x), 'S');
  foreign_end(&x);
}
END_TEST

/* A coopd older than TOP: the first snapshot's TOP gets ERROR EPROTO and
 * the connection is closed; top notes it, reconnects, and asks no more. */
static void s_top_old_daemon(struct fake *f, struct fconn *c) {
  fk_welcome(f, c);
  top_snapshot(f, c, 1);
  shutdown(c->fd, SHUT_RDWR);
  struct fconn c2 = {.fd = accept(f->lfd, NULL, NULL)};
  coop_wire_reader_init(&c2.rd);
  FK(f, c2.fd >= 0);
  if (c2.fd >= 0) {
    fk_welcome(f, &c2);
    top_snapshot(f, &c2, 2);
    struct fframe fr;
    FK(f, !fk_next(&c2, &fr)); /* no TOP, and then EOF */
    close(c2.fd);
  }
  coop_wire_reader_free(&c2.rd);
}

START_TEST(coopctl_top_old_daemon) {
  struct fake f;
  fake_start(&f, s_top_old_daemon);
  static char out[16384];
  const char *const a[] = {"--socket", f.path,         "top", "--interval",
                           "10",       "--iterations", "2",   NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, a), 0);
  fake_end(&f);
  const char *note =
      "note: this coopd does not answer TOP (an older daemon?): no workgroup map (bad UNKNOWN "
      "frame: malformed message)\n\n"
      "JOB      WG STATE     KERNEL               KIND     PRI      N      M WORKERS UTIL%  KILLS  "
      "FORKS\n"
      "3        -  running   bfs                  coop       0      4      -       -     -      -  "
      "    "
      "-\n"
      "4        -  running   render               noncoop    0      1      -       -     -      -  "
      "    "
      "-\n"
      "5        -  queued    sweep                coop       0      8      -       -     -      -  "
      "    "
      "-\n";
  char *first = strstr(out, note);
  ck_assert_msg(first != NULL, "no note in:\n%s", out);
  ck_assert_ptr_nonnull(strstr(first + 1, note)); /* in both snapshots */
  ck_assert_ptr_nonnull(strstr(out, "device    Fake GPU (opencl)"));

  fake_start(&f, s_top_old_daemon);
  const char *const j[] = {"--json", "--socket",     f.path, "top", "--interval",
                           "10",     "--iterations", "2",    NULL};
  ck_assert_int_eq(coopctl(out, sizeof out, j), 0);
  fake_end(&f);
  ck_assert_ptr_nonnull(strstr(out, "\"top\":null,\"note\":\"this coopd does not answer TOP"));
  ck_assert_ptr_nonnull(strstr(out, "\"job\":5,\"state\":\"queued\""));
}
END_TEST

/* coopctl render against a fake coopd whose task times it chooses: every
 * SUBMIT of render (n = 4) is answered with a RESULT whose execution time
 * depends on reps (the probes) or is fixed (the periodic job, 5 instances,
 * c = a x b as the CPU computes it). Incoherent: reps = 1 takes 0.15 ms
 * but reps = 20 takes 101 ms, and the periodic tasks 0.16 ms; coherent:
 * 0.15 ms a rep, and 3 ms tasks. */
static void s_render(struct fake *f, struct fconn *c, int incoherent) {
  fk_welcome(f, c);
  struct fframe fr;
  for (uint64_t job = 1; fk_next(c, &fr); job++) { /* until coopctl goes */
    const struct coop_msg_submit *s = &fr.m.submit;
    FK(f, fr.h.type == COOP_MSG_SUBMIT && s->nargs == 5 && s->args[3].bits == 4 &&
              s->args[0].data_len == 64 && s->args[1].data_len == 64);
    if (f->fail[0]) {
      ff_free(&fr);
      return;
    }
    float a[16], b[16], prod[16];
    memcpy(a, s->args[0].data, sizeof a);
    memcpy(b, s->args[1].data, sizeof b);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        float acc = 0.0f;
        for (int k = 0; k < 4; k++) acc += a[i * 4 + k] * b[k * 4 + j];
        prod[i * 4 + j] = acc;
      }
    uint32_t reps = (uint32_t)s->args[4].bits;
    int periodic = s->period_us != 0;
    int64_t exec = periodic     ? (incoherent ? 160000 : 3000000)
                   : reps == 1  ? 150000
                   : incoherent ? 101000000
                                : (int64_t)reps * 150000;
    union coop_msg m = {0};
    m.job.job = job;
    fk_send(c, COOP_MSG_ACCEPTED, fr.h.seq, &m);
    ff_free(&fr);
    if (!fk_expect(f, c, &fr, COOP_MSG_WAIT)) return;
    struct coop_wire_buf recs;
    coop_wire_buf_init(&recs);
    int64_t t0 = 1000000000;
    struct coop_wire_times t = {.submitted = t0,
                                .released = t0,
                                .gathered = t0 + 1000,
                                .started = t0 + 2000,
                                .finished = t0 + 2000 + exec,
                                .gather_ns = 1000,
                                .exec_ns = exec};
    uint32_t ninst = periodic ? 5 : 0;
    for (uint32_t i = 0; i < ninst; i++) {
      struct coop_wire_inst in = {.state = COOP_JOB_DONE, .t = t};
      int64_t d = (int64_t)i * 40000000;
      in.t.submitted += d, in.t.released += d, in.t.gathered += d, in.t.started += d;
      in.t.finished += d;
      ck_assert_int_eq(coop_wire_inst_put(&recs, &in), 0);
    }
    memset(&m, 0, sizeof m);
    m.result = (struct coop_msg_result){.job = job,
                                        .state = COOP_JOB_DONE,
                                        .t = t,
                                        .instances = periodic ? ninst : 1,
                                        .ninst = ninst,
                                        .inst = recs.p,
                                        .nbuf = 1};
    m.result.bufs[0] =
        (struct coop_wire_outbuf){.arg = 2, .data = (const uint8_t *)prod, .len = sizeof prod};
    fk_send(c, COOP_MSG_RESULT, fr.h.seq, &m);
    coop_wire_buf_free(&recs);
    ff_free(&fr);
  }
}
static void s_render_incoherent(struct fake *f, struct fconn *c) { s_render(f, c, 1); }
static void s_render_coherent(struct fake *f, struct fconn *c) { s_render(f, c, 0); }

START_TEST(coopctl_render_calibration) {
  struct fake f;
  static char out[8192], err[8192];
  fake_start(&f, s_render_incoherent);
  const char *const a[] = {"--socket", f.path,  "render", "--class", "medium", "--wg",
                           "1",        "--for", "0.2",    "--size",  "4",      NULL};
  ck_assert_int_eq(coopctl_io(out, sizeof out, err, sizeof err, a), 0);
  fake_end(&f);
  /* calibrated twice, then said so, and said what the tasks lasted */
  ck_assert_msg(strstr(err,
                       "incoherent calibration: reps=1 took 0.150 ms but reps=20 took "
                       "101.000 ms (673 times as long, not at most 20): calibrating again") &&
                    strstr(err, "WARNING: the calibration is still incoherent") &&
                    strstr(err,
                           "WARNING: the tasks lasted 0.160 ms (execution p50), not the "
                           "medium class's 3.000 ms"),
                "stderr: %s", err);
  ck_assert_msg(strstr(out, "class     medium: execution target 3.000 ms, obtained 0.160 ms (p50)"),
                "stdout: %s", out);
  ck_assert_ptr_nonnull(strstr(out, "so reps 1 (INCOHERENT: see the warnings)"));

  fake_start(&f, s_render_incoherent);
  const char *const j[] = {"--json", "--socket", f.path, "render", "--class", "medium", "--wg",
                           "1",      "--for",    "0.2",  "--size", "4",       NULL};
  ck_assert_int_eq(coopctl_io(out, sizeof out, NULL, 0, j), 0);
  fake_end(&f);
  ck_assert_msg(
      strstr(out, "\"calibration\":\"incoherent\"") && strstr(out, "\"exec_obtained_ms\":0.160000"),
      "%s", out);

  fake_start(&f, s_render_coherent); /* 20 reps take 20 times one: no word */
  ck_assert_int_eq(coopctl_io(out, sizeof out, err, sizeof err, a), 0);
  fake_end(&f);
  ck_assert_msg(err[0] == '\0', "stderr: %s", err);
  ck_assert_msg(strstr(out, "so reps 20\n") &&
                    strstr(out, "execution target 3.000 ms, obtained 3.000 ms (p50)"),
                "stdout: %s", out);
}
END_TEST

/* The message nobody gets connecting to path (mode 0660), into msg; the
 * child's exit status. */
static int refused_as_nobody(const char *path, char *msg, size_t len) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    coop_conn *c;
    if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) _exit(3);
    int e = coop_connect(&c, path, NULL);
    const char *m = coop_errmsg(NULL);
    if (write(p[1], m, strlen(m)) < 0) _exit(4);
    _exit(e == COOP_ECONN ? 0 : 5);
  }
  close(p[1]);
  ssize_t n = 0, k;
  while ((k = read(p[0], msg + n, len - 1 - (size_t)n)) > 0) n += k;
  msg[n] = '\0';
  close(p[0]);
  int wst;
  waitpid(pid, &wst, 0);
  return wst;
}

/* A socket that refuses this user: the message names the socket's group,
 * and no longer asks whether coopd runs; a socket of group root (coopd
 * started by root by hand) says so instead of advising to join root
 * ("usermod -aG root USER"). Needs root (to become nobody). */
START_TEST(socket_permission_names_the_group) {
  ck_assert_ptr_null(strstr(coop_strerror(COOP_ECONN), "running"));
  coop_conn *c;
  ck_assert_int_eq(coop_connect(&c, "/nonexistent/coop.sock", NULL), COOP_ECONN);
  ck_assert_ptr_nonnull(strstr(coop_errmsg(NULL), "is coopd running?"));
  if (geteuid() != 0) {
    fprintf(stderr, "socket_permission_names_the_group: not root: the refused connect skipped\n");
    return;
  }
  struct fake f;
  memset(&f, 0, sizeof f);
  fake_listen(&f);
  ck_assert_int_eq(chmod(f.dir, 0755), 0);
  ck_assert_int_eq(chmod(f.path, 0660), 0);
  char msg[1024];
  ck_assert_int_eq(chown(f.path, 0, 0), 0);
  int wst = refused_as_nobody(f.path, msg, sizeof msg);
  ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child: %d, %s", wst, msg);
  ck_assert_msg(strstr(msg, "permission denied") && strstr(msg, "is for group root (coopd") &&
                    strstr(msg, "mode 0660") && !strstr(msg, "usermod") && !strstr(msg, "running"),
                "the message: %s", msg);
  ck_assert_int_eq(chown(f.path, 0, 1), 0); /* a group nobody is not in */
  struct group *g = getgrgid(1);
  char want[128];
  snprintf(want, sizeof want, "is for the members of group %s; join it", g ? g->gr_name : "1");
  wst = refused_as_nobody(f.path, msg, sizeof msg);
  close(f.lfd);
  unlink(f.path);
  rmdir(f.dir);
  ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child: %d, %s", wst, msg);
  ck_assert_msg(strstr(msg, "permission denied") && strstr(msg, want) && strstr(msg, "mode 0660") &&
                    !strstr(msg, "running"),
                "the message: %s", msg);
}
END_TEST

/* A directory above the socket that refuses this user (/run/coop is mode
 * 0750, group coop under systemd): the message names the directory and its
 * group, as the socket's own refusal does, where it said only that "a
 * directory above the socket does not let this user through". Needs root. */
START_TEST(directory_permission_names_the_group) {
  if (geteuid() != 0) {
    fprintf(stderr, "directory_permission_names_the_group: not root: skipped\n");
    return;
  }
  struct fake f;
  memset(&f, 0, sizeof f);
  fake_listen(&f);
  ck_assert_int_eq(chmod(f.path, 0666), 0);
  ck_assert_int_eq(chown(f.dir, 0, 1), 0); /* a group nobody is not in */
  ck_assert_int_eq(chmod(f.dir, 0750), 0);
  struct group *g = getgrgid(1);
  char want[256], msg[1024];
  snprintf(want, sizeof want,
           "the directory %s above it (mode 0750) lets through only its owner and the members "
           "of group %s; join it (usermod -aG %s USER",
           f.dir, g ? g->gr_name : "1", g ? g->gr_name : "1");
  int wst = refused_as_nobody(f.path, msg, sizeof msg);
  ck_assert_int_eq(chmod(f.dir, 0700), 0); /* its owner's only: no group to name */
  int wst2 = refused_as_nobody(f.path, msg + strlen(msg) + 1, sizeof msg - strlen(msg) - 1);
  const char *msg2 = msg + strlen(msg) + 1;
  close(f.lfd);
  unlink(f.path);
  rmdir(f.dir);
  ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child: %d, %s", wst, msg);
  ck_assert_msg(strstr(msg, "permission denied") && strstr(msg, want) && !strstr(msg, "running"),
                "the message: %s", msg);
  ck_assert_msg(WIFEXITED(wst2) && WEXITSTATUS(wst2) == 0, "child: %d, %s", wst2, msg2);
  ck_assert_msg(strstr(msg2,
                       "(mode 0700) lets only its owner (uid 0) through; ask the "
                       "administrator") &&
                    !strstr(msg2, "usermod"),
                "the message: %s", msg2);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("libcoop");
  TCase *t = tcase_create("fake_daemon");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, handshake);
  tcase_add_test(t, version_refused);
  tcase_add_test(t, socket_paths);
  tcase_add_test(t, a_users_runtime_dir_without_a_socket_means_the_systems);
  tcase_add_test(t, socket_permission_names_the_group);
  tcase_add_test(t, directory_permission_names_the_group);
  tcase_add_test(t, submit_inline_and_memfd);
  tcase_add_test(t, resubmits_carry_their_own_seq_and_bytes);
  tcase_add_test(t, submit_memfd_leaves_zero_pages_as_holes);
  tcase_add_test(t, job_builder_errors);
  tcase_add_test(t, error_frames);
  tcase_add_test(t, events_while_waiting);
  tcase_add_test(t, replies_out_of_order);
  tcase_add_test(t, spin_before_sleep);
  tcase_add_test(t, daemon_closes);
  tcase_add_test(t, top_request);
  tcase_add_test(t, a_ring_let_go_leaves_the_socket);
  tcase_add_test(t, untrusted_server_refused);
  suite_add_tcase(s, t);
  return s;
}

static Suite *ctl_suite(void) {
  Suite *s = suite_create("coopctl");
  TCase *t = tcase_create("cli");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, coopctl_bad_usage);
  tcase_add_test(t, coopctl_help);
  tcase_add_test(t, coopctl_kernels);
  tcase_add_test(t, coopctl_submit_wait);
  tcase_add_test(t, coopctl_wait_says_lost_once);
  tcase_add_test(t, coopctl_submit_detached);
  tcase_add_test(t, coopctl_submit_defaults);
  tcase_add_test(t, coopctl_top);
  tcase_add_test(t, coopctl_top_old_daemon);
  tcase_add_test(t, coopctl_top_many_jobs);
  tcase_add_test(t, coopctl_untrusted_server);
  tcase_add_test(t, coopctl_render_calibration);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_add_suite(sr, ctl_suite());
  return coop_test_run(sr);
}
