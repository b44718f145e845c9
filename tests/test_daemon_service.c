/*
 * test_daemon_service.c: coopd as a system service: several devices
 * ([device] devices: two megakernels on PoCL's one device), systemd
 * (readiness and reload notifications, socket activation, journald
 * priorities in the log) and GET /metrics over HTTP ([metrics] listen).
 */
#include <check.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h> /* struct timeval */
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* ---- several devices ([device] devices; two megakernels on PoCL) ---- */

static void top_of(struct conn *c, uint8_t device, uint16_t want) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.top_req.device = device;
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_TOP, &m, NULL, 0)), want);
}

/* A job names its device, or goes to the least loaded one; each device has
 * its own megakernel, workers, TOP and STATS record. */
START_TEST(devices_named_and_least_loaded) {
  /* Two megakernels on PoCL's one device by default; COOP_TEST_DEVICES=0,1
   * on a machine with two GPUs (on CUDA with max_workgroups = 2 as well) */
  static char devs[64];
  snprintf(devs, sizeof devs, "device.devices=%.40s",
           getenv("COOP_TEST_DEVICES") ? getenv("COOP_TEST_DEVICES") : "0,0");
  const char *sets[] = {devs, "device.max_workgroups=2", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  ck_assert_uint_eq(c.m.welcome.ndevices, 2);
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.ndevices, 2);
  uint32_t w = st.devs[0].workers;
  ck_assert_uint_ge(w, 1);
  ck_assert_uint_ge(st.devs[1].workers, 1);

  submit_device = 1; /* named: on device 1, and right */
  render_check(&c, 1, 0, 0);
  ck_assert_uint_eq(c.m.result.device, 1);
  submit_device = 2; /* no such device */
  expect_error(&c, render_submit(&c, 1), COOP_EINVAL);
  submit_device = COOP_WIRE_ANY_DEVICE;

  uint32_t data[256] = {0}; /* any: both idle, so device 0; then the other */
  uint64_t sj = sweep_submit(&c, data, 256, 100000000, w, -1);
  ck_assert_uint_ne(sj, 0);
  wait_running(&c, sj);
  st = stats(&c);
  ck_assert_uint_eq(st.devs[0].jobs, 1);
  ck_assert_uint_eq(st.devs[1].jobs, 0);
  render_check(&c, 1, 0, 0);
  ck_assert_uint_eq(c.m.result.device, 1);
  /* left to coopd, a cooperative job's width is that of the device it
   * goes to (device 1, the least loaded), not device 0's */
  uint64_t oj = sweep_submit_own(&c, data, 64, 2);
  ck_assert_msg(oj != 0, "%s", c.m.error.message);
  ck_assert_uint_eq(job_status(&c, oj).groups, st.devs[1].workers);
  ck_assert_uint_eq(wait_job(&c, oj, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.device, 1);
  top_of(&c, 1, COOP_MSG_TOP_REPLY);
  top_of(&c, 2, COOP_MSG_ERROR);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = sj;
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&c, sj, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  ck_assert_uint_eq(c.m.result.device, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* ---- systemd ---- */

/* How a systemd-run coopd is started here: stderr into log, and as the
 * service manager would set it up: NOTIFY_SOCKET (inherited from the
 * test), JOURNAL_STREAM naming the log file (journal), and the listening
 * socket lfd passed as descriptor 3 (LISTEN_FDS=1, LISTEN_PID=coopd's). */
struct sd_run {
  const char *log;
  int journal; /* 1: JOURNAL_STREAM is the log; 0: a stream that is not stderr */
  int lfd;     /* -1: none */
};

static pid_t sd_spawn(const struct sd_run *r, const char *const *args) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid) return pid;
  if (!freopen(r->log, "w", stderr)) _exit(126);
  struct stat st;
  char js[64] = "0:0";
  if (r->journal && fstat(2, &st) == 0)
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
  setenv("JOURNAL_STREAM", js, 1);
  unsetenv("INVOCATION_ID"); /* the test may itself run as a service */
  if (r->lfd >= 0) {
    if (r->lfd != 3 && (dup2(r->lfd, 3) < 0 || close(r->lfd) < 0)) _exit(125);
    char pid_s[32];
    snprintf(pid_s, sizeof pid_s, "%d", (int)getpid()); /* exec keeps it */
    setenv("LISTEN_PID", pid_s, 1);
    setenv("LISTEN_FDS", "1", 1);
  }
  const char *argv[24] = {COOPD_PATH, "--kernels", KERNEL_DIR};
  int n = 3;
  static char backend[64];
  if (getenv("COOP_BACKEND")) {
    snprintf(backend, sizeof backend, "device.backend=%.40s", getenv("COOP_BACKEND"));
    argv[n++] = "--set";
    argv[n++] = backend;
  }
  for (int i = 0; args[i] && n < 23; i++) argv[n++] = args[i];
  argv[n] = NULL;
  execv(COOPD_PATH, (char *const *)argv);
  _exit(127);
}

/* The next notification that contains want, into got: 1, or 0 after
 * timeout_s without one. */
static int notify_wait(int ns, const char *want, char *got, size_t len, int timeout_s) {
  time_t end = time(NULL) + timeout_s;
  while (time(NULL) < end) {
    struct timeval tv = {1, 0};
    setsockopt(ns, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(ns, got, len - 1, 0);
    if (n < 0) continue;
    got[n] = '\0';
    if (strstr(got, want)) return 1;
  }
  return 0;
}

/* A datagram socket at path, as systemd's notify socket. */
static int notify_socket(const char *path) {
  int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(ns, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  ck_assert_int_eq(bind(ns, (struct sockaddr *)&a, sizeof a), 0);
  return ns;
}

static int exit_status(pid_t pid, int signal_it) {
  if (signal_it) kill(pid, SIGTERM);
  int st;
  for (int i = 0; i < 1200; i++, msleep(50))
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* Type=notify: READY=1 once the socket accepts; SIGHUP gives RELOADING=1
 * (with MONOTONIC_USEC) then READY=1, applies the settings that may change
 * (max_clients here) and names those that need a restart (arena_mb);
 * SIGTERM gives STOPPING=1. Outside the journal, lines carry the date. The
 * old coopd sent nothing and reloaded the kernels only. [log] syslog = yes
 * with no syslog daemon on its socket is said once at start and once at
 * the reload (it was taken silently: every line lost), and so is --socket
 * overriding the file's [server] socket (the file's edit did nothing, and
 * nothing said so: coopd.service passes --socket). */
START_TEST(systemd_notify_ready_and_reload) {
  char dir[] = "/tmp/coopd-sd-XXXXXX", ini[96], nsp[96], logp[96], sock[96], got[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(ini, sizeof ini, "%s/coopd.ini", dir);
  snprintf(nsp, sizeof nsp, "%s/notify", dir);
  snprintf(logp, sizeof logp, "%s/coopd.log", dir);
  snprintf(sock, sizeof sock, "%s/coop.sock", dir);
  file_write(ini,
             "[device]\narena_mb = 64\n[server]\nmax_clients = 64\njournal = off\n"
             "socket = /run/elsewhere.sock\n"
             "[log]\nsyslog = yes\n");
  int ns = notify_socket(nsp);
  setenv("NOTIFY_SOCKET", nsp, 1);
  char nolog[96];
  snprintf(nolog, sizeof nolog, "%s/no-syslog", dir); /* not /dev/log: a host may have one */
  setenv("COOP_TEST_SYSLOG_PATH", nolog, 1);
  struct sd_run r = {.log = logp, .journal = 0, .lfd = -1};
  const char *args[] = {"--config", ini, "--socket", sock, NULL};
  pid_t pid = sd_spawn(&r, args);
  int ok = notify_wait(ns, "READY=1", got, sizeof got, 60);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 within 60 s");
  assert_has(got, "STATUS=listening on ");
  char nosys[160];
  snprintf(nosys, sizeof nosys, "[log] syslog = yes, but %s: No such file", nolog);
  ck_assert_int_eq(log_count(logp, nosys), 1);
  char over[400];
  snprintf(over, sizeof over,
           "[server] socket = \"%s\" from the command line (--socket), overriding "
           "\"/run/elsewhere.sock\" in %s",
           sock, ini);
  ck_assert_int_eq(log_count(logp, over), 1);
  struct conn c;
  ck_assert_int_eq(conn_open(&c, sock), 0); /* ready means accepting */
  hello(&c);
  conn_close(&c);

  file_write(ini,
             "[device]\narena_mb = 128\n[server]\nmax_clients = 1\njournal = off\n"
             "socket = /run/elsewhere.sock\n"
             "[log]\nsyslog = yes\n");
  kill(pid, SIGHUP);
  ck_assert_msg(notify_wait(ns, "RELOADING=1", got, sizeof got, 30), "no RELOADING=1");
  assert_has(got, "MONOTONIC_USEC=");
  ok = notify_wait(ns, "READY=1", got, sizeof got, 120);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 after the reload");
  ck_assert(log_has(logp, "[server] max_clients: 64 -> 1"));
  ck_assert(log_has(logp, "[device] arena_mb changed (64 -> 128): needs a restart"));
  ck_assert_int_eq(log_count(logp, nosys), 2);
  ck_assert_int_eq(log_count(logp, over), 2);
  /* max_clients = 1 holds: a second client is turned away */
  struct conn c2;
  ck_assert_int_eq(conn_open(&c, sock), 0);
  hello(&c);
  ck_assert_int_eq(conn_open(&c2, sock), 0);
  /* refused at accept: an ERROR, then closed. Nothing is sent on it, since
   * coopd may already have closed it (a HELLO would then fail with EPIPE) */
  unsigned frames = 0;
  while (read_frame(&c2)) {
    ck_assert_uint_eq(c2.h.type, COOP_MSG_ERROR);
    frames++;
  }
  ck_assert_uint_le(frames, 1);
  conn_close(&c2);
  conn_close(&c);

  ck_assert_int_eq(exit_status(pid, 1), 0);
  ck_assert_msg(notify_wait(ns, "STOPPING=1", got, sizeof got, 5), "no STOPPING=1");
  /* not the journal (JOURNAL_STREAM names another file): dated lines */
  ck_assert(!log_has(logp, "<6>"));
  ck_assert(log_has(logp, " coopd info: listening on "));
  char year[8];
  time_t now = time(NULL);
  strftime(year, sizeof year, "\n%Y-", localtime(&now));
  ck_assert_msg(log_has(logp, year), "no date in the log");
  close(ns);
  unsetenv("NOTIFY_SOCKET");
  unsetenv("COOP_TEST_SYSLOG_PATH");
  unlink(nsp), unlink(ini), unlink(logp), rmdir(dir);
}
END_TEST

/* coop.socket: coopd serves on the listening socket passed as descriptor 3
 * (LISTEN_FDS/LISTEN_PID) instead of binding --socket, and leaves the
 * socket file to systemd when it stops. The old coopd bound --socket and
 * nobody answered on the passed one. */
START_TEST(systemd_socket_activation) {
  char dir[] = "/tmp/coopd-sa-XXXXXX", act[96], unused[96], logp[96];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(act, sizeof act, "%s/act.sock", dir);
  snprintf(unused, sizeof unused, "%s/unused.sock", dir);
  snprintf(logp, sizeof logp, "%s/coopd.log", dir);
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0); /* blocking, as systemd passes it */
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", act);
  ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(lfd, 16), 0);
  struct sd_run r = {.log = logp, .journal = 0, .lfd = lfd};
  const char *args[] = {"--socket", unused, "--set", "server.journal=off", NULL};
  pid_t pid = sd_spawn(&r, args);
  int i;
  for (i = 0; i < 1200 && !log_has(logp, "listening on"); i++) {
    int st;
    ck_assert_msg(waitpid(pid, &st, WNOHANG) == 0, "coopd exited at start-up");
    msleep(50);
  }
  if (i == 1200) log_print(logp);
  ck_assert_msg(log_has(logp, "listening on"), "coopd did not start within 60 s");
  assert_has(act, dir);
  ck_assert_msg(log_has(logp, "socket activation"), "not the passed socket");
  ck_assert_int_ne(access(unused, F_OK), 0); /* it did not bind its own */
  struct conn c;
  ck_assert_int_eq(conn_open(&c, act), 0);
  struct timeval tv = {20, 0};
  setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  hello(&c);
  conn_close(&c);
  ck_assert_int_eq(exit_status(pid, 1), 0);
  ck_assert_int_eq(access(act, F_OK), 0); /* systemd's, still there */
  close(lfd);
  unlink(act), unlink(logp), rmdir(dir);
}
END_TEST

/* Under the journal (JOURNAL_STREAM is stderr) every line starts with its
 * syslog priority and has no date; a job's submission and end are one line
 * each at info, a connection is at debug. The old coopd dated every line,
 * and logged jobs at debug and connections at info. */
START_TEST(systemd_journal_log_prefixes) {
  char dir[] = "/tmp/coopd-jl-XXXXXX", logp[96], sock[96];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(logp, sizeof logp, "%s/coopd.log", dir);
  snprintf(sock, sizeof sock, "%s/coop.sock", dir);
  struct sd_run r = {.log = logp, .journal = 1, .lfd = -1};
  const char *args[] = {"--socket",           sock, "--log-level", "debug", "--set",
                        "server.journal=off", NULL};
  pid_t pid = sd_spawn(&r, args);
  for (int i = 0; i < 1200 && access(sock, F_OK); i++) msleep(50);
  struct conn c;
  ck_assert_int_eq(conn_open(&c, sock), 0);
  hello(&c);
  uint32_t data[256] = {0};
  uint64_t job = sweep_submit(&c, data, 256, 1, 1, -1);
  ck_assert_uint_gt(job, 0);
  ck_assert_uint_eq(wait_job(&c, job, 60000), COOP_MSG_RESULT);
  conn_close(&c);
  ck_assert_int_eq(exit_status(pid, 1), 0);
  char want[128];
  ck_assert(log_has(logp, "<6>listening on "));
  ck_assert(log_has(logp, "<7>client "));
  ck_assert(log_has(logp, " connected\n"));
  /* a job's submission and its end when done: debug lines (sess_jobs.c) */
  snprintf(want, sizeof want, "<7>job %llu submitted: sweep x1 cooperative on device 0",
           (unsigned long long)job);
  ck_assert_msg(log_has(logp, want), "no \"%s\"", want);
  snprintf(want, sizeof want, "<7>job %llu (sweep, uid %u) done\n", (unsigned long long)job,
           (unsigned)getuid());
  ck_assert_msg(log_has(logp, want), "no \"%s\"", want);
  ck_assert(!log_has(logp, " coopd info: "));
  ck_assert(!log_has(logp, " coopd debug: "));
  unlink(logp), rmdir(dir);
}
END_TEST

/* Every line a line of its own with its priority: a reload's outcome
 * reaches systemd as STATUS= with READY=1 (a failed one said nothing but
 * READY=1), and under the journal every line of stderr, the compiler's own
 * ("1 error generated.", written by the device process) included, starts
 * with "<N>" (it had none, so journald logged it at info with no source). */
START_TEST(systemd_reload_status_and_compiler_lines) {
  char dir[] = "/tmp/coopd-rs-XXXXXX", logp[96], sock[96], nsp[96], kd[96], path[160], got[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(logp, sizeof logp, "%s/coopd.log", dir);
  snprintf(sock, sizeof sock, "%s/coop.sock", dir);
  snprintf(nsp, sizeof nsp, "%s/notify", dir);
  snprintf(kd, sizeof kd, "%s/kernels", dir);
  ck_assert_int_eq(mkdir(kd, 0755), 0);
  snprintf(path, sizeof path, "%s/render.cl", kd);
  file_copy(KERNEL_DIR "/render.cl", path);
  int ns = notify_socket(nsp);
  setenv("NOTIFY_SOCKET", nsp, 1);
  struct sd_run r = {.log = logp, .journal = 1, .lfd = -1};
  char cfg[96];
  snprintf(cfg, sizeof cfg, "%s/coopd.ini", dir);
  file_write(cfg, "[jobs]\ngrace_ms = 5000\n");
  const char *args[] = {"--socket", sock,    "--kernels",          kd,  "--config",
                        cfg,        "--set", "server.journal=off", NULL};
  pid_t pid = sd_spawn(&r, args);
  int ok = notify_wait(ns, "READY=1", got, sizeof got, 60);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 within 60 s");

  kill(pid, SIGHUP); /* a good reload */
  ck_assert_msg(notify_wait(ns, "RELOADING=1", got, sizeof got, 30), "no RELOADING=1");
  ok = notify_wait(ns, "READY=1", got, sizeof got, 120);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 after the reload");
  assert_has(got, "STATUS=reload ok: 1 kernels");
  ck_assert_ptr_null(strstr(got, "settings refused"));

  /* a settings file refused: its STATUS said "reload ok", the edit ignored */
  file_write(cfg, "[jobs]\ncheckpoint_ms = 50\n");
  kill(pid, SIGHUP);
  ck_assert_msg(notify_wait(ns, "RELOADING=1", got, sizeof got, 30), "no RELOADING=1");
  ok = notify_wait(ns, "READY=1", got, sizeof got, 120);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 after the reload with refused settings");
  assert_has(got, "STATUS=reload ok: 1 kernels; settings refused, the running ones stay: ");
  assert_has(got, "checkpoint_ms");
  file_write(cfg, "[jobs]\ngrace_ms = 5000\n");

  snprintf(path, sizeof path, "%s/bad.cl", kd); /* a bad one */
  file_write(path,
             "//@coop name=bad kind=noncooperative args=buf\n"
             "void bad(struct coop_ctx *c) { not_declared_here(c); }\n");
  kill(pid, SIGHUP);
  ck_assert_msg(notify_wait(ns, "RELOADING=1", got, sizeof got, 30), "no RELOADING=1");
  ok = notify_wait(ns, "READY=1", got, sizeof got, 120);
  if (!ok) log_print(logp);
  ck_assert_msg(ok, "no READY=1 after the failed reload");
  assert_has(got, "STATUS=reload failed: ");
  assert_has(got, "the previous kernels still run");
  ck_assert_ptr_null(strchr(strstr(got, "STATUS="), '\n')); /* one line */
  ck_assert_int_eq(exit_status(pid, 1), 0);
  close(ns);
  unsetenv("NOTIFY_SOCKET");

  ck_assert(log_has(logp, "not_declared_here"));
  FILE *f = fopen(logp, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    int prefixed = line[0] == '<' && line[1] >= '0' && line[1] <= '7' && line[2] == '>';
    if (!prefixed) log_print(logp);
    ck_assert_msg(prefixed, "line %d has no <N> prefix: %s", n, line);
  }
  fclose(f);
  ck_assert_int_gt(n, 3);
  unlink(path);
  snprintf(path, sizeof path, "%s/render.cl", kd);
  unlink(path);
  rmdir(kd);
  unlink(logp), unlink(nsp), rmdir(dir);
}
END_TEST

/* ---- GET /metrics over HTTP ([metrics] listen) ---- */

/* The port coopd logged for [metrics] listen = 127.0.0.1:0 (it logs
 * after creating its socket: waited for), or 0 if none within 10 s. */
static int metrics_port(const char *logp) {
  for (int i = 0; i < 200; i++, msleep(50)) {
    FILE *f = fopen(logp, "r");
    if (!f) continue;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strstr(buf, "metrics: serving http://127.0.0.1:");
    if (p) return atoi(p + strlen("metrics: serving http://127.0.0.1:"));
  }
  return 0;
}

/* A connection to 127.0.0.1:port from the loopback address src (another
 * peer to coopd: the whole of 127.0.0.0/8 is this host's), or from
 * 127.0.0.1 when src is NULL. */
static int http_open_from(int port, const char *src) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  if (src) {
    struct sockaddr_in b = {.sin_family = AF_INET};
    ck_assert_int_eq(inet_pton(AF_INET, src, &b.sin_addr), 1);
    ck_assert_msg(bind(fd, (struct sockaddr *)&b, sizeof b) == 0, "bind %s: %s", src,
                  strerror(errno));
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect 127.0.0.1:%d: %s", port,
                strerror(errno));
  struct timeval tv = {10, 0}; /* a silent coopd fails the test, not hangs it */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static int http_open(int port) { return http_open_from(port, NULL); }

/* Everything until coopd closes: the length, -1 on a timeout. */
static long http_read_all(int fd, char *out, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t k = read(fd, out + n, cap - 1 - n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == ECONNRESET) break;
    if (k < 0) return -1;
    if (k == 0 || (n += (size_t)k) == cap - 1) break;
  }
  out[n] = 0;
  return (long)n;
}

/* One request (n bytes, sent as is) from src (http_open_from), the whole
 * answer into out (static, NUL-terminated); its status code. */
static int http_ask_from(int port, const char *src, const char *req, size_t n, char **out) {
  static char buf[1 << 17];
  int fd = http_open_from(port, src);
  ck_assert_int_eq(write(fd, req, n), (ssize_t)n);
  long got = http_read_all(fd, buf, sizeof buf);
  close(fd);
  ck_assert_msg(got > 0, "no answer to %.40s", req);
  int code = 0;
  ck_assert_msg(sscanf(buf, "HTTP/1.1 %d ", &code) == 1, "not an HTTP answer: %.80s", buf);
  *out = buf;
  return code;
}

/* A scrape as Prometheus sends it, sent by its length. */
#define GET_METRICS "GET /metrics HTTP/1.0\r\n\r\n"

static int http_ask(int port, const char *req, size_t n, char **out) {
  return http_ask_from(port, NULL, req, n, out);
}

static int http_get(int port, const char *text, char **out) {
  return http_ask(port, text, strlen(text), out);
}

/* The body of a 200 answer to GET /metrics, its head checked. */
static const char *scrape(int port) {
  char *r;
  ck_assert_int_eq(http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r), 200);
  assert_has(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n");
  assert_has(r, "\r\nConnection: close\r\n");
  char *body = strstr(r, "\r\n\r\n");
  ck_assert_ptr_nonnull(body);
  body += 4;
  const char *cl = strstr(r, "\r\nContent-Length: ");
  ck_assert_ptr_nonnull(cl);
  ck_assert_uint_eq(strtoul(cl + 18, NULL, 10), strlen(body));
  return body;
}

/* The text through tests/prom_check.py, where python3 was found. */
static void prom_parses(const char *text) {
#ifdef COOP_PYTHON
  FILE *p = popen(COOP_PYTHON " " PROM_CHECK
                              " --require coop_info --require coop_jobs_finished_total"
                              " --require coop_gather_seconds --require coop_device_workers_busy"
                              " >&2",
                  "w");
  ck_assert_ptr_nonnull(p);
  fputs(text, p);
  ck_assert_msg(pclose(p) == 0, "prom_check.py refused coopd's /metrics:\n%s", text);
#else
  (void)text;
#endif
}

/* TCP sockets in LISTEN state that process pid holds (its descriptors'
 * inodes looked up in /proc/net/tcp and tcp6). */
static int tcp_listeners(pid_t pid) {
  char path[64], link[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *dir = opendir(path);
  ck_assert_ptr_nonnull(dir);
  unsigned long inodes[256];
  int ni = 0, n = 0;
  for (struct dirent *e; (e = readdir(dir)) && ni < 256;) {
    char fdp[400];
    snprintf(fdp, sizeof fdp, "%s/%s", path, e->d_name);
    ssize_t k = readlink(fdp, link, sizeof link - 1);
    if (k > 0 && (link[k] = 0, sscanf(link, "socket:[%lu]", &inodes[ni]) == 1)) ni++;
  }
  closedir(dir);
  const char *tabs[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  for (int t = 0; t < 2; t++) {
    FILE *f = fopen(tabs[t], "r");
    if (!f) continue;
    char line[512];
    while (fgets(line, sizeof line, f)) {
      unsigned st;
      unsigned long ino;
      if (sscanf(line, " %*d: %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) != 2) continue;
      for (int i = 0; i < ni; i++) n += st == 0x0A && inodes[i] == ino;
    }
    fclose(f);
  }
  return n;
}

/* A connection that sends head (may be "") and then nothing: coopd closes
 * it after timeout_ms without a word. The milliseconds it took. */
static int64_t closed_silent_after(int port, const char *head) {
  int fd = http_open(port);
  int64_t t0 = now_ms();
  if (*head) ck_assert_int_eq(write(fd, head, strlen(head)), (ssize_t)strlen(head));
  char buf[256];
  ck_assert_int_eq(http_read_all(fd, buf, sizeof buf), 0);
  close(fd);
  return now_ms() - t0;
}

/* Whether coopd has closed fd (EOF or a reset within ms). */
static int http_closed_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, ms) != 1) return 0;
  char b[256];
  ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno == ECONNRESET);
}

/* With [metrics] listen set, coopd answers GET /metrics with
 * the Prometheus text `coopctl metrics` prints (the counters move with a
 * job), and nothing else: 404, 405, 400, 431 for a head over 8 KiB; a
 * client that sends nothing or half a head is closed after timeout_ms;
 * more than max_connections at once are told 503. Before this, [metrics]
 * was an unknown key and coopd refused to start. */
START_TEST(metrics_served_over_http) {
  char logp[] = "/tmp/coopd-metrics-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"metrics.listen=127.0.0.1:0", "metrics.timeout_ms=700",
                        "metrics.max_connections=3", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  int port = metrics_port(logp);
  if (!port) log_print(logp);
  ck_assert_int_gt(port, 0);
  ck_assert_int_eq(tcp_listeners(d.pid), 1);

  const char *m0 = scrape(port);
  prom_parses(m0);
  assert_has(m0, "\ncoop_jobs_finished_total{state=\"done\"} 0\n");
  assert_has(m0, "\ncoop_gather_seconds_count{device=\"0\"} 0\n");
  struct conn c;
  open_hello(&c, &d);
  render_check(&c, 1, 0, 0);
  const char *m1 = scrape(port);
  prom_parses(m1);
  assert_has(m1, "\ncoop_jobs_submitted_total 1\n");
  assert_has(m1, "\ncoop_jobs_finished_total{state=\"done\"} 1\n");
  assert_has(m1, "\ncoop_gather_seconds_count{device=\"0\"} 1\n");
  assert_has(scrape(port), "\ncoop_clients 1\n"); /* c; an HTTP client is none */

  char *r;
  ck_assert_int_eq(http_get(port, "GET /metrics?name[]=x HTTP/1.0\r\n\r\n", &r), 200);
  ck_assert_int_eq(http_get(port, "GET / HTTP/1.1\r\n\r\n", &r), 404);
  ck_assert_int_eq(http_get(port, "GET /metricsx HTTP/1.1\r\n\r\n", &r), 404);
  ck_assert_int_eq(http_get(port, "GET /metrics/../x HTTP/1.1\r\n\r\n", &r), 404);
  ck_assert_int_eq(http_get(port, "POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", &r),
                   405);
  assert_has(r, "\r\nAllow: GET\r\n");
  ck_assert_int_eq(http_get(port, "HEAD /metrics HTTP/1.1\r\n\r\n", &r), 405);
  ck_assert_int_eq(http_get(port, "GET /metrics\r\n\r\n", &r), 400);
  ck_assert_int_eq(http_get(port, "\x01\x02\x03 \xff\n\n", &r), 400);
  ck_assert_int_eq(http_get(port, "GET /metrics SSH-2.0\r\n\r\n", &r), 400);
  static char big[9000]; /* a head that never ends within 8 KiB */
  memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
  memset(big + 26, 'a', sizeof big - 26);
  ck_assert_int_eq(http_ask(port, big, sizeof big, &r), 431);

  /* nothing, or half a head: closed after timeout_ms (700), unanswered */
  int64_t t = closed_silent_after(port, "");
  ck_assert_msg(t >= 600 && t < 5000, "a silent client was closed after %lld ms", (long long)t);
  t = closed_silent_after(port, "GET /metrics HTTP/1.1\r\nHost:");
  ck_assert_msg(t >= 600 && t < 5000, "half a head was closed after %lld ms", (long long)t);

  /* 3 connections at once at most, from 3 addresses that send nothing: a
   * 4th takes the oldest one's slot, the others wait for their deadline */
  int held[3];
  const char *from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
  for (int i = 0; i < 3; i++, msleep(20)) held[i] = http_open_from(port, from[i]);
  msleep(100); /* accepted: all 3 slots taken */
  ck_assert_int_eq(http_get(port, "GET /metrics HTTP/1.1\r\n\r\n", &r), 200);
  ck_assert_msg(http_closed_within(held[0], 0), "the oldest idle connection kept its slot");
  char buf[64];
  for (int i = 1; i < 3; i++) {
    ck_assert_int_eq(http_read_all(held[i], buf, sizeof buf), 0);
    close(held[i]);
  }
  close(held[0]);
  scrape(port);

  ck_assert_uint_eq(stats(&c).submitted, 1); /* the socket's clients are served on */
  conn_close(&c);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

/* 16 connections from one address that send nothing held every slot of
 * /metrics (8) for timeout_ms, and each scrape meanwhile got 503; renewed
 * as they closed, they kept it at 100% 503. Now one address holds
 * max_connections_per_peer (2) at most, a newcomer takes the slot of the
 * oldest idle connection in its way, and a connection without a whole
 * request after request_timeout_ms (1 s here; the whole life is 20 s) is
 * closed, even one that sends a byte now and then. */
START_TEST(metrics_idle_peers_cannot_starve_scrapes) {
  char logp[] = "/tmp/coopd-metrics-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"metrics.listen=127.0.0.1:0", "metrics.timeout_ms=20000",
                        "metrics.request_timeout_ms=1000", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  int port = metrics_port(logp);
  if (!port) log_print(logp);
  ck_assert_int_gt(port, 0);

  /* 16 idle from 127.0.0.1: a scrape from there and one from elsewhere
   * are both answered at once */
  int idle[16];
  for (int i = 0; i < 16; i++) idle[i] = http_open(port);
  msleep(200);
  int left = 0;
  for (int i = 0; i < 16; i++) left += !http_closed_within(idle[i], 0);
  ck_assert_int_le(left, 2);
  int64_t t0 = now_ms();
  scrape(port);
  char *r;
  ck_assert_int_eq(http_ask_from(port, "127.0.0.2", GET_METRICS, strlen(GET_METRICS), &r), 200);
  ck_assert_msg(now_ms() - t0 < 900, "two scrapes took %lld ms", (long long)(now_ms() - t0));
  /* the idle ones left are closed at request_timeout_ms, not timeout_ms */
  for (int i = 0; i < 16; i++) {
    ck_assert_msg(http_closed_within(idle[i], 3000), "idle connection %d still open after 3 s", i);
    close(idle[i]);
  }
  ck_assert_msg(now_ms() - t0 < 3000, "idle connections closed after %lld ms",
                (long long)(now_ms() - t0));

  /* 8 idle from 8 addresses fill every slot: a ninth address is answered */
  char addr[8][16];
  for (int i = 0; i < 8; i++) {
    snprintf(addr[i], sizeof addr[i], "127.0.1.%d", i + 1);
    idle[i] = http_open_from(port, addr[i]);
  }
  msleep(200);
  ck_assert_int_eq(http_ask_from(port, "127.0.1.9", GET_METRICS, strlen(GET_METRICS), &r), 200);
  ck_assert_msg(http_closed_within(idle[0], 0), "the oldest idle connection kept its slot");
  for (int i = 1; i < 8; i++) close(idle[i]);
  close(idle[0]);

  /* a byte every 100 ms is no request: closed after about 1 s */
  int fd = http_open(port);
  t0 = now_ms();
  const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
  int closed = 0;
  for (const char *p = req; *p && !closed; p++) {
    if (send(fd, p, 1, MSG_NOSIGNAL) != 1) break;
    closed = http_closed_within(fd, 100);
  }
  for (int i = 0; i < 50 && !closed; i++) closed = http_closed_within(fd, 100);
  int64_t t = now_ms() - t0;
  close(fd);
  ck_assert_msg(closed && t >= 900 && t < 3000, "a trickling client was closed after %lld ms",
                (long long)t);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

/* Without [metrics] listen (the default) coopd holds no TCP listener; the
 * count is the one that saw the listener above. */
START_TEST(metrics_http_off_by_default) {
  char logp[] = "/tmp/coopd-metrics-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_listening(&d, sets);
  msleep(200);
  ck_assert_int_eq(tcp_listeners(d.pid), 0);
  ck_assert_msg(!log_has(logp, "metrics: serving"), "coopd serves metrics unasked");
  ck_assert_msg(log_has(logp, "listening on"), "the log is not the daemon's");
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

void daemon_service_cases(Suite *s) {
  TCase *t = tcase_create("devices");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, devices_named_and_least_loaded);
  suite_add_tcase(s, t);
  t = tcase_create("systemd");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, systemd_notify_ready_and_reload);
  tcase_add_test(t, systemd_socket_activation);
  tcase_add_test(t, systemd_journal_log_prefixes);
  tcase_add_test(t, systemd_reload_status_and_compiler_lines);
  suite_add_tcase(s, t);
  t = tcase_create("metrics_http");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, metrics_served_over_http);
  tcase_add_test(t, metrics_idle_peers_cannot_starve_scrapes);
  tcase_add_test(t, metrics_http_off_by_default);
  suite_add_tcase(s, t);
}
