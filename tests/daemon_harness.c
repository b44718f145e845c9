/*
 * daemon_harness.c: what every part of test_daemon uses (daemon_harness.h):
 * a coopd of its own, its files and log, a raw protocol client, jobs, and
 * the processes and clocks the tests look at.
 */
#define _GNU_SOURCE /* memfd_create, mkstemps */
#include <check.h>
#include <dirent.h>
#include <grp.h> /* setgroups */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h> /* struct timeval */
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coop_util.h" /* coop__now_ns: the clock coopd stamps jobs with */
#include "wire.h"
#include "coopd_argv.h"
#include "daemon_harness.h"

/* ---- a daemon ---- */

enum { POLL_MS = 5 }; /* a start's and a stop's poll */

void daemon_spawn(struct daemon_proc *d, const char *const *sets) {
  d->pid = fork();
  ck_assert_int_ge(d->pid, 0);
  if (d->pid == 0) {
    if (d->log) {
      FILE *f = freopen(d->log, "w", stderr);
      if (!f) _exit(126);
    }
    const char *argv[32];
    int n = coop_test_coopd_argv(argv, COOPD_PATH, d->sock, KERNEL_DIR, "warn");
    for (int i = 0; sets && sets[i] && n < 30; i++) {
      argv[n++] = "--set";
      argv[n++] = sets[i];
    }
    argv[n] = NULL;
    execv(COOPD_PATH, (char *const *)argv);
    _exit(127);
  }
  /* discovery and the build take a few seconds; a fine poll, since every
   * test case pays its lateness */
  for (int64_t t0 = now_ms(); now_ms() - t0 < 60000; msleep(POLL_MS)) {
    if (access(d->sock, F_OK) == 0) return;
    int st;
    ck_assert_msg(waitpid(d->pid, &st, WNOHANG) == 0, "coopd exited at start-up");
  }
  ck_abort_msg("coopd did not create its socket within 60 s");
}

void daemon_start_log(struct daemon_proc *d, const char *const *sets) {
  snprintf(d->dir, sizeof d->dir, "/tmp/coopd-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d->dir));
  snprintf(d->sock, sizeof d->sock, "%s/coop.sock", d->dir);
  daemon_spawn(d, sets);
}

int daemon_wait(struct daemon_proc *d, int signal_it) {
  if (signal_it) kill(d->pid, SIGTERM);
  int st = 0;
  for (int64_t t0 = now_ms(); now_ms() - t0 < 60000; msleep(POLL_MS)) {
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
      char journal[160];
      snprintf(journal, sizeof journal, "%s.jobs", d->sock);
      unlink(journal);
      rmdir(d->dir);
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
  }
  kill(d->pid, SIGKILL);
  waitpid(d->pid, &st, 0);
  ck_abort_msg("coopd did not exit within 60 s of SIGTERM");
  return -1;
}

int daemon_stop(struct daemon_proc *d) { return daemon_wait(d, 1); }

void daemon_start(struct daemon_proc *d, const char *const *sets) {
  d->log = NULL;
  daemon_start_log(d, sets);
}

void daemon_stop_ok(struct daemon_proc *d, const char *path) {
  int rc = daemon_stop(d);
  if (rc) log_print(path);
  ck_assert_int_eq(rc, 0);
}

/* daemon_spawn returns once the socket file exists, which is from the
 * bind on; connections are refused (ECONNREFUSED) until the listen just
 * after it. These tests connect at once, from several processes: they
 * wait for the listen. */
static void daemon_wait_listening(const struct daemon_proc *d) {
  for (int64_t t0 = now_ms(); now_ms() - t0 < 10000; msleep(POLL_MS)) {
    struct conn c;
    int r = conn_open(&c, d->sock), e = errno;
    close(c.fd);
    if (r == 0) return;
    ck_assert_msg(e == ECONNREFUSED, "connect %s: %s", d->sock, strerror(e));
  }
  ck_abort_msg("coopd did not listen within 10 s of creating its socket");
}

void daemon_start_listening(struct daemon_proc *d, const char *const *sets) {
  daemon_start_log(d, sets);
  daemon_wait_listening(d);
}

/* ---- files and logs ---- */

void log_temp(char *path) {
  int fd = mkstemps(path, 4);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

int log_count(const char *path, const char *s) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  static char buf[1 << 18];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  int count = 0;
  for (const char *p = buf; (p = strstr(p, s)) != NULL; p += strlen(s)) count++;
  return count;
}

int log_has(const char *path, const char *s) { return log_count(path, s) > 0; }

long log_offset(const char *path, const char *s) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static char buf[1 << 18];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strstr(buf, s);
  return p ? (long)(p - buf) : -1;
}

void log_print(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  static char buf[8192];
  fseek(f, 0, SEEK_END);
  long end = ftell(f);
  fseek(f, end > (long)sizeof buf - 1 ? end - (long)sizeof buf + 1 : 0, SEEK_SET);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  fprintf(stderr, "--- coopd log (%s), last %zu bytes:\n%s---\n", path, n, buf);
}

void file_write(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

void file_copy(const char *from, const char *to) {
  FILE *f = fopen(from, "r");
  ck_assert_ptr_nonnull(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  file_write(to, buf);
}

static const char *const shipped_kernels[] = {"render.cl", "sweep.cl"};

void kernels_dir_make(char *kdir) {
  ck_assert_ptr_nonnull(mkdtemp(kdir));
  for (int i = 0; i < 2; i++) {
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/%s", KERNEL_DIR, shipped_kernels[i]);
    snprintf(to, sizeof to, "%s/%s", kdir, shipped_kernels[i]);
    file_copy(from, to);
  }
}

void kernels_dir_remove(const char *kdir) {
  for (int i = 0; i < 2; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", kdir, shipped_kernels[i]);
    unlink(path);
  }
  rmdir(kdir);
}

int memfd_of(size_t size) {
  int fd = memfd_create("buf", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  return fd;
}

/* ---- a raw client ---- */

int conn_open(struct conn *c, const char *path) {
  memset(c, 0, sizeof *c);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) return -1;
  struct timeval tv = {120, 0}; /* no test waits forever on a silent daemon */
  setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  coop_wire_reader_init(&c->rd);
  return 0;
}

void conn_close(struct conn *c) {
  close(c->fd);
  coop_wire_reader_free(&c->rd);
  free(c->payload);
  c->payload = NULL;
}

void send_raw(struct conn *c, const uint8_t *b, size_t n, const int *fds, unsigned nfds) {
  size_t sent = 0;
  ck_assert_int_eq(coop_wire_send(c->fd, b, n, fds, nfds, &sent), 0);
  ck_assert_uint_eq(sent, n);
}

uint32_t send_msg(struct conn *c, uint16_t type, const union coop_msg *m, const int *fds,
                  unsigned nfds) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  uint32_t seq = ++c->seq;
  ck_assert_int_eq(coop_wire_encode(&b, type, seq, m), 0);
  send_raw(c, b.p, b.len, fds, nfds);
  coop_wire_buf_free(&b);
  return seq;
}

int read_frame(struct conn *c) {
  for (;;) {
    const uint8_t *p;
    int fds[COOP_WIRE_MAX_FDS];
    unsigned nf = 0;
    int r = coop_wire_reader_next(&c->rd, &c->h, &p, fds, &nf);
    ck_assert_int_ge(r, 0);
    if (r == 1) {
      free(c->payload);
      c->payload = malloc(c->h.len + 1);
      memcpy(c->payload, p, c->h.len);
      ck_assert_int_eq(coop_wire_decode(&c->h, c->payload, &c->m), 0);
      return 1;
    }
    uint8_t buf[65536];
    unsigned nfds = COOP_WIRE_MAX_FDS;
    long n = coop_wire_recv(c->fd, buf, sizeof buf, fds, &nfds);
    if (n <= 0) return 0;
    ck_assert_int_eq(coop_wire_reader_feed(&c->rd, buf, (size_t)n, fds, nfds), 0);
  }
}

uint16_t reply(struct conn *c, uint32_t seq) {
  while (read_frame(c)) {
    if (c->h.type == COOP_MSG_EVENT) {
      c->events++;
      continue;
    }
    ck_assert_uint_eq(c->h.seq, seq);
    return c->h.type;
  }
  return 0; /* closed */
}

void hello(struct conn *c) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
  snprintf(m.hello.name, sizeof m.hello.name, "test_daemon");
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_HELLO, &m, NULL, 0)), COOP_MSG_WELCOME);
  ck_assert_uint_gt(c->m.welcome.workers, 0);
}

void open_hello(struct conn *c, const struct daemon_proc *d) {
  ck_assert_int_eq(conn_open(c, d->sock), 0);
  hello(c);
}

void conn_reconnect(struct conn *c, const struct daemon_proc *d) {
  for (int i = 0; i < 1200; i++, msleep(50)) /* the stale socket is there at first */
    if (conn_open(c, d->sock) == 0) {
      hello(c);
      return;
    } else
      conn_close(c);
  ck_abort_msg("the restarted coopd never answered");
}

/* ---- jobs ---- */

void arg_u32(struct coop_msg_submit *s, uint32_t v) {
  struct coop_wire_arg *a = &s->args[s->nargs++];
  a->type = COOP_ARG_U32;
  a->bits = v;
}

void arg_buf(struct coop_msg_submit *s, uint8_t dir, const void *data, uint64_t size, uint8_t fd) {
  struct coop_wire_arg *a = &s->args[s->nargs++];
  a->type = COOP_ARG_BUF;
  a->dir = dir;
  a->size = size;
  a->fd = fd;
  if (fd == COOP_WIRE_FD_NONE && (dir & COOP_BUF_IN)) {
    a->data = data;
    a->data_len = (uint32_t)size;
  }
}

uint8_t submit_device = COOP_WIRE_ANY_DEVICE;

void submit_init(union coop_msg *m, const char *kernel, uint32_t groups, int coop) {
  memset(m, 0, sizeof *m);
  m->submit.device = submit_device;
  snprintf(m->submit.kernel, sizeof m->submit.kernel, "%s", kernel);
  m->submit.groups = groups;
  m->submit.flags = coop ? COOP_SUBMIT_COOPERATIVE : 0;
}

uint64_t submit(struct conn *c, const union coop_msg *m, const int *fds, unsigned nfds) {
  uint16_t t = reply(c, send_msg(c, COOP_MSG_SUBMIT, m, fds, nfds));
  if (t == COOP_MSG_ERROR) return 0;
  ck_assert_uint_eq(t, COOP_MSG_ACCEPTED);
  return c->m.job.job;
}

uint32_t wait_send(struct conn *c, uint64_t job, uint32_t timeout_ms) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  m.job.timeout_ms = timeout_ms;
  return send_msg(c, COOP_MSG_WAIT, &m, NULL, 0);
}

uint16_t wait_job(struct conn *c, uint64_t job, uint32_t timeout_ms) {
  uint16_t t = reply(c, wait_send(c, job, timeout_ms));
  /* a poll's ETIMEDOUT is its expected answer: printed, hundreds of
   * them hid a failing test's assertion from a CI log's excerpt */
  if (t == COOP_MSG_ERROR && !(timeout_ms == 0 && c->m.error.code == COOP_ETIMEDOUT))
    fprintf(stderr, "WAIT %llu: %s: %s\n", (unsigned long long)job, coop_err_name(c->m.error.code),
            c->m.error.message);
  return t;
}

void expect_error(struct conn *c, uint64_t job, int code) {
  ck_assert_uint_eq(job, 0);
  ck_assert_uint_eq(c->h.type, COOP_MSG_ERROR);
  ck_assert_msg(c->m.error.code == code, "want %s, got %s: %s", coop_err_name(code),
                coop_err_name(c->m.error.code), c->m.error.message);
  ck_assert_uint_gt(strlen(c->m.error.message), 0);
}

void assert_has(const char *text, const char *want) {
  ck_assert_msg(strstr(text, want) != NULL, "\"%s\" lacks \"%s\"", text, want);
}

void expect_refusal(struct conn *c, uint64_t job, int code, const char *says) {
  expect_error(c, job, code);
  assert_has(c->m.error.message, says);
}

void matmul_ref(const float *a, const float *b, float *o) {
  for (int r = 0; r < RN; r++)
    for (int j = 0; j < RN; j++) {
      float acc = 0.0f;
      for (int k = 0; k < RN; k++) acc += a[r * RN + k] * b[k * RN + j];
      o[r * RN + j] = acc;
    }
}

void render_inputs(float *a, float *b) {
  for (int i = 0; i < RN * RN; i++) {
    a[i] = (float)((i * 7) % 11) / 4.0f;
    b[i] = (float)((i * 5) % 13) / 8.0f;
  }
}

void render_check(struct conn *c, uint32_t groups, uint32_t period_us, uint32_t count) {
  float a[RN * RN], b[RN * RN], want[RN * RN];
  render_inputs(a, b);
  matmul_ref(a, b, want);
  union coop_msg m;
  render_init_n(&m, groups, a, b, RN);
  m.submit.period_us = period_us;
  m.submit.count = count;
  m.submit.deadline_us = period_us;
  uint64_t job = submit(c, &m, NULL, 0);
  ck_assert_msg(job != 0, "render refused: %s", c->m.error.message);
  ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  struct coop_msg_result *r = &c->m.result;
  ck_assert_msg(r->state == COOP_JOB_DONE, "render: %s %s", coop_job_state_name(r->state),
                r->message);
  ck_assert_uint_eq(r->nbuf, 1);
  ck_assert_uint_eq(r->bufs[0].arg, 2);
  ck_assert_uint_eq(r->bufs[0].len, sizeof want);
  float got[RN * RN];
  memcpy(got, r->bufs[0].data, sizeof got);
  for (int i = 0; i < RN * RN; i++) ck_assert_float_eq_tol(got[i], want[i], 1e-3f);
  if (period_us) {
    ck_assert_uint_eq(r->ninst, count);
    ck_assert_uint_eq(r->instances, count);
    for (uint32_t i = 0; i < count; i++) {
      struct coop_wire_inst in;
      ck_assert_int_eq(coop_wire_inst_get(r, i, &in), 0);
      ck_assert_uint_eq(in.state, COOP_JOB_DONE);
      ck_assert_int_ge(in.t.gather_ns, 0);
      ck_assert_int_le(in.t.released, in.t.gathered);
      ck_assert_int_le(in.t.gathered, in.t.started);
      ck_assert_int_le(in.t.started, in.t.finished);
    }
  } else {
    ck_assert_int_ge(r->t.gather_ns, 0);
    ck_assert_int_ge(r->t.exec_ns, 0);
  }
}

void render_init_n(union coop_msg *m, uint32_t groups, const float *a, const float *b, uint32_t n) {
  size_t bytes = (size_t)n * n * sizeof(float);
  submit_init(m, "render", groups, 0);
  arg_buf(&m->submit, COOP_BUF_IN, a, bytes, COOP_WIRE_FD_NONE);
  arg_buf(&m->submit, COOP_BUF_IN, b, bytes, COOP_WIRE_FD_NONE);
  arg_buf(&m->submit, COOP_BUF_OUT, NULL, bytes, COOP_WIRE_FD_NONE);
  arg_u32(&m->submit, n);
  arg_u32(&m->submit, 1);
}

void render_ones(union coop_msg *m, uint32_t n) {
  enum { MAX = 256 };
  static float ones[MAX * MAX];
  ck_assert_uint_le(n, MAX);
  if (ones[0] != 1.0f)
    for (size_t i = 0; i < MAX * MAX; i++) ones[i] = 1.0f;
  render_init_n(m, 1, ones, ones, n);
}

void render_init(union coop_msg *m, uint32_t groups) {
  static float a[RN * RN], b[RN * RN];
  render_inputs(a, b);
  render_init_n(m, groups, a, b, RN);
}

uint64_t render_submit(struct conn *c, uint32_t groups) {
  union coop_msg m;
  render_init(&m, groups);
  return submit(c, &m, NULL, 0);
}

int has_kernel(struct conn *c, const char *name) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_KERNELS, &m, NULL, 0)), COOP_MSG_KERNEL_LIST);
  uint32_t off = 0;
  int found = 0;
  for (uint32_t i = 0; i < c->m.kernels.n; i++) {
    struct coop_wire_kernel k;
    ck_assert_int_eq(coop_wire_kernel_next(&c->m.kernels, &off, &k), 0);
    found |= !strcmp(k.name, name);
  }
  return found;
}

struct coop_msg_stats_reply stats(struct conn *c) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  return c->m.stats;
}

/* A cooperative sweep's SUBMIT: n u32 inline from data, or (fd >= 0) in
 * the frame's first descriptor. */
static void sweep_init(union coop_msg *m, uint32_t *data, uint32_t n, uint32_t rounds,
                       uint32_t groups, int fd) {
  submit_init(m, "sweep", groups, 1);
  if (fd >= 0)
    arg_buf(&m->submit, COOP_BUF_INOUT, NULL, n * 4u, 0);
  else
    arg_buf(&m->submit, COOP_BUF_INOUT, data, n * 4u, COOP_WIRE_FD_NONE);
  arg_u32(&m->submit, n);
  arg_u32(&m->submit, rounds);
}

uint64_t sweep_submit(struct conn *c, uint32_t *data, uint32_t n, uint32_t rounds, uint32_t groups,
                      int fd) {
  union coop_msg m;
  sweep_init(&m, data, n, rounds, groups, fd);
  return submit(c, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
}

uint64_t sweep_submit_own(struct conn *c, uint32_t *data, uint32_t n, uint32_t rounds) {
  union coop_msg m;
  sweep_init(&m, data, n, rounds, 0, -1);
  m.submit.flags = COOP_SUBMIT_OWN_KIND;
  return submit(c, &m, NULL, 0);
}

/* Timed twice, the faster taken: the first sweep of a coopd often runs on
 * a megakernel just unparked and on pages not yet touched, and a round
 * timed there made the sweep end long before ms (a test that needs it
 * running while another user's job comes saw it DONE first). */
int sweep_memfd(struct conn *c, uint32_t words, double ms, uint32_t *rounds) {
  int fd = memfd_of((size_t)words * 4);
  double per = 0;
  for (int i = 0; i < 2; i++) {
    uint64_t job = sweep_submit(c, NULL, words, 10, 1, fd);
    ck_assert_uint_ne(job, 0);
    ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    double took = (double)c->m.result.t.exec_ns / 10;
    if (i == 0 || took < per) per = took;
  }
  *rounds = (uint32_t)(ms * 1e6 / (per > 1e4 ? per : 1e4)) + 20;
  uint32_t *w = malloc((size_t)words * 4);
  ck_assert_ptr_nonnull(w);
  for (uint32_t i = 0; i < words; i++) w[i] = i;
  ck_assert_int_eq(pwrite(fd, w, (size_t)words * 4, 0), (ssize_t)words * 4);
  free(w);
  return fd;
}

void sweep_memfd_check(int fd, uint32_t words, uint32_t rounds) {
  uint32_t *w = malloc((size_t)words * 4);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(pread(fd, w, (size_t)words * 4, 0), (ssize_t)words * 4);
  close(fd);
  for (uint32_t i = 0; i < words; i++)
    ck_assert_msg(w[i] == i + rounds, "word %u is %u, want %u", i, w[i], i + rounds);
  free(w);
}

uint64_t detached_sweep(struct conn *c) {
  static uint32_t data[64];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  arg_buf(&m.submit, COOP_BUF_INOUT, data, sizeof data, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 100000000u);
  return submit(c, &m, NULL, 0);
}

struct coop_wire_status job_status(struct conn *c, uint64_t job) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_STATUS, &m, NULL, 0)), COOP_MSG_STATUS_REPLY);
  struct coop_wire_status st;
  uint32_t off = 0;
  ck_assert_uint_eq(c->m.status_reply.n, 1);
  ck_assert_int_eq(coop_wire_status_next(&c->m.status_reply, &off, &st), 0);
  return st;
}

uint8_t job_state(struct conn *c, uint64_t job) { return job_status(c, job).state; }

uint8_t state_when_ended(struct conn *c, uint64_t job, uint32_t ms) {
  uint8_t st = job_state(c, job);
  for (uint32_t t = 0; t < ms && st < COOP_JOB_DONE; t += 10, msleep(10)) st = job_state(c, job);
  return st;
}

void cancel_ok(struct conn *c, uint64_t job) {
  union coop_msg k;
  memset(&k, 0, sizeof k);
  k.job.job = job;
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_CANCEL, &k, NULL, 0)), COOP_MSG_OK);
}

void daemon_open_to_all(const struct daemon_proc *d) {
  ck_assert_int_eq(chmod(d->dir, 0755), 0);
  ck_assert_int_eq(chmod(d->sock, 0666), 0);
}

void wait_says(struct conn *c, uint64_t job, uint32_t timeout_ms, char *buf, size_t n) {
  ck_assert_uint_eq(wait_job(c, job, timeout_ms), COOP_MSG_ERROR);
  ck_assert_int_eq(c->m.error.code, COOP_ETIMEDOUT);
  snprintf(buf, n, "%s", c->m.error.message);
}

void waits_for(struct conn *c, uint64_t job, const char *what, char *said, size_t n) {
  said[0] = '\0';
  for (int i = 0; i < 100 && !strstr(said, what); i++) wait_says(c, job, 20, said, n);
}

uint64_t buf_create_raw(struct conn *c, uint64_t size) {
  static union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_create = (struct coop_msg_buf_create){.size = size, .fd = COOP_WIRE_FD_NONE};
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_BUF_CREATE, &m, NULL, 0)), COOP_MSG_BUFFER);
  return c->m.buffer.buffer;
}

int as_user(const struct daemon_proc *d, uid_t uid, as_user_fn body, const void *arg, void *out,
            size_t n) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    close(pfd[0]);
    if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) _exit(3);
    struct conn c;
    open_hello(&c, d);
    body(&c, arg, out);
    _exit(write(pfd[1], out, n) == (ssize_t)n ? 0 : 4);
  }
  close(pfd[1]);
  ssize_t got = read(pfd[0], out, n);
  close(pfd[0]);
  int st = 0;
  waitpid(kid, &st, 0);
  ck_assert_msg(got == (ssize_t)n, "uid %u's child wrote nothing back (status %d)", (unsigned)uid,
                st);
  return st;
}

pid_t nobody_submit(struct daemon_proc *d, const union coop_msg *m, uint64_t *job) {
  return nobody_submit_fd(d, m, -1, job);
}

pid_t nobody_submit_fd(struct daemon_proc *d, const union coop_msg *m, int fd, uint64_t *job) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  if (kid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(3);
    struct conn o;
    open_hello(&o, d);
    uint64_t theirs = submit(&o, m, fd >= 0 ? &fd : NULL, fd >= 0);
    if (write(pfd[1], &theirs, sizeof theirs) != sizeof theirs) _exit(4);
    pause();
    _exit(0);
  }
  *job = 0;
  close(pfd[1]); /* a child that failed before its write: the read ends */
  ck_assert_int_eq(read(pfd[0], job, sizeof *job), (ssize_t)sizeof *job);
  close(pfd[0]);
  ck_assert_uint_ne(*job, 0);
  return kid;
}

pid_t loop_child(const struct daemon_proc *d, int64_t start_ms, int period_ms, int n) {
  return loop_child_as(d, (uid_t)-1, start_ms, period_ms, n);
}

pid_t loop_child_as(const struct daemon_proc *d, uid_t uid, int64_t start_ms, int period_ms,
                    int n) {
  return loops_child_as(d, uid, 1, start_ms, period_ms, n);
}

pid_t loops_child_as(const struct daemon_proc *d, uid_t uid, int loops, int64_t start_ms,
                     int period_ms, int n) {
  ck_assert_int_le(loops, 16);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid) return kid;
  if (uid != (uid_t)-1 && (setgroups(0, NULL) || setgid(uid) || setuid(uid))) _exit(3);
  static struct conn c[16];
  for (int k = 0; k < loops; k++) open_hello(&c[k], d);
  for (int i = 0; i < n; i++) {
    int64_t due = start_ms + (int64_t)period_ms * i, now = now_ms();
    if (due > now) msleep((int)(due - now));
    uint64_t task[16];
    for (int k = 0; k < loops; k++) {
      union coop_msg m;
      render_init(&m, 1);
      if (!(task[k] = submit(&c[k], &m, NULL, 0))) _exit(1);
    }
    for (int k = 0; k < loops; k++)
      if (wait_job(&c[k], task[k], COOP_WAIT_FOREVER) != COOP_MSG_RESULT ||
          c[k].m.result.state != COOP_JOB_DONE)
        _exit(1);
  }
  for (int k = 0; k < loops; k++) conn_close(&c[k]);
  _exit(0);
}

void wait_running(struct conn *c, uint64_t job) {
  for (int i = 0; i < 2400; i++) {
    uint8_t st = job_state(c, job);
    if (st == COOP_JOB_RUNNING) {
      msleep(300);
      return;
    }
    ck_assert_msg(st < COOP_JOB_DONE, "job %llu ended (%s) before it was seen running",
                  (unsigned long long)job, coop_job_state_name(st));
    msleep(50);
  }
  ck_abort_msg("job %llu never started running", (unsigned long long)job);
}

/* ---- processes and time ---- */

void msleep(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

int64_t now_ms(void) { return coop__now_ns() / 1000000; }

unsigned children_of(pid_t parent, pid_t *kids, char (*names)[32], unsigned max) {
  DIR *dir = opendir("/proc");
  ck_assert_ptr_nonnull(dir);
  unsigned n = 0;
  for (struct dirent *e; n < max && (e = readdir(dir));) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    int ppid = 0;
    if (!lp || !rp || sscanf(rp + 2, "%*c %d", &ppid) != 1 || ppid != parent) continue;
    if (names) snprintf(names[n], sizeof names[n], "%.*s", (int)(rp - lp - 1), lp + 1);
    kids[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(dir);
  return n;
}

pid_t device_process(pid_t coopd) {
  for (int tries = 0; tries < 200; tries++, msleep(50)) {
    pid_t kids[64];
    char names[64][32];
    unsigned n = children_of(coopd, kids, names, 64);
    for (unsigned i = 0; i < n; i++)
      if (!strcmp(names[i], "coopd-device")) return kids[i];
  }
  ck_abort_msg("coopd %d has no device process", (int)coopd);
  return 0;
}

/* user + system ticks of a /proc stat file (a process's or a thread's) */
static unsigned long long stat_ticks(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold spaces */
  ck_assert_ptr_nonnull(p);
  unsigned long long ut = 0, st = 0;
  /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt
   * majflt cmajflt utime stime */
  ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st),
                   2);
  return ut + st;
}

unsigned long long cpu_ticks(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  return stat_ticks(path);
}

unsigned long long thread_ticks(pid_t pid, pid_t tid) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
  return stat_ticks(path);
}

/* ---- slowsweep jobs (kernels/tests/priority) ---- */

/* A slowsweep (kernels/tests/priority) over n words starting at base + i,
 * of `rounds` rounds of at least kticks x 1024 device clock ticks each, on
 * up to `groups` workgroups, at priority p. */
uint64_t sweep_at(struct conn *c, uint32_t *data, uint32_t n, uint32_t base, uint32_t rounds,
                  uint32_t kticks, uint32_t groups, int32_t p) {
  for (uint32_t i = 0; i < n; i++) data[i] = base + i;
  union coop_msg m;
  submit_init(&m, "slowsweep", groups, 1);
  m.submit.priority = p;
  arg_buf(&m.submit, COOP_BUF_INOUT, data, n * 4u, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, n);
  arg_u32(&m.submit, rounds);
  arg_u32(&m.submit, kticks);
  return submit(c, &m, NULL, 0);
}

/* Its RESULT: DONE, every word base + i + rounds (a suspension that lost
 * or repeated a round would show). */
void sweep_check(struct conn *c, uint64_t job, uint32_t n, uint32_t base, uint32_t rounds) {
  ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  const struct coop_msg_result *r = &c->m.result;
  ck_assert_msg(r->state == COOP_JOB_DONE, "sweep %llu: %s %s", (unsigned long long)job,
                coop_job_state_name(r->state), r->message);
  ck_assert_uint_eq(r->nbuf, 1);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t got;
    memcpy(&got, r->bufs[0].data + 4 * i, 4);
    if (got != base + i + rounds) /* a test per word costs a message to check's parent */
      ck_abort_msg("sweep %llu word %u is %u, want %u", (unsigned long long)job, i, got,
                   base + i + rounds);
  }
}

/* kticks for rounds of about 10 ms: the device clock's rate is not known
 * to clients, so from 8 rounds of 1024 kticks, timed by the device. */
uint32_t kticks_10ms(struct conn *c, uint32_t groups) {
  static uint32_t probe[64];
  uint64_t job = sweep_at(c, probe, 64, 0, 8, 1024, groups, 0);
  ck_assert_uint_ne(job, 0);
  sweep_check(c, job, 64, 0, 8);
  double per = (double)c->m.result.t.exec_ns / 8; /* ns a round of 1024 kticks */
  double k = 1024.0 * 10e6 / (per > 1000 ? per : 1000);
  uint32_t kt = k < 1 ? 1u : k > 1e6 ? 1000000u : (uint32_t)k;
  fprintf(stderr, "slowsweep: %.0f ns a round of 1024 kticks; %u kticks for 10 ms\n", per, kt);
  return kt;
}

/* Waits (at most 30 s) until job's STATUS says suspended; 1 if it did. */
int seen_suspended(struct conn *c, uint64_t job) {
  for (int i = 0; i < 3000; i++) {
    struct coop_wire_status st = job_status(c, job);
    if (st.suspended) return 1;
    if (st.state >= COOP_JOB_DONE) return 0;
    msleep(10);
  }
  return 0;
}
