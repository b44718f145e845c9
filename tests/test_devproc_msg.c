/*
 * test_devproc_msg.c: the device process's message layer
 * (daemon/device/devproc_msg.h): every op's entry round-trips through a
 * socket pair, request and reply, at the ends of its counts; a short, a
 * long, an unknown op, a count that disagrees with the length and a wrong
 * number of descriptors are each refused. Messages under check end where
 * an inaccessible page begins, so any read past them faults: the checks
 * refuse before they read what is not there. Then a real device process
 * (coopd --device-process, no device opened) answers malformed requests
 * with EPROTO, logs why, and goes on serving, by its socket and by its
 * shared channel (devproc_shm.h).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "coop_errno.h"
#include "devproc_shm.h"
#include "devproc_msg.h"
#include "dp_ends.h"

/* ---- helpers ---- */

/* Room for the largest message, then a page that faults when touched. */
static uint8_t *guard_base;
static size_t guard_room;

static void guard_setup(void) {
  long pg = sysconf(_SC_PAGESIZE);
  size_t big =
      sizeof(struct dp_rep) > sizeof(struct dp_req) ? sizeof(struct dp_rep) : sizeof(struct dp_req);
  guard_room = (big + 2 + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
  guard_base = mmap(NULL, guard_room + (size_t)pg, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(guard_base, MAP_FAILED);
  ck_assert_int_eq(mprotect(guard_base + guard_room, (size_t)pg, PROT_NONE), 0);
}

static void guard_teardown(void) { munmap(guard_base, guard_room + (size_t)sysconf(_SC_PAGESIZE)); }

/* len bytes of m (len may exceed what m holds: the rest are zeros), placed
 * so that they end at the inaccessible page. */
static const void *at_edge(const void *m, size_t have, size_t len) {
  uint8_t *d = guard_base + guard_room - len;
  memset(d, 0, len);
  memcpy(d, m, have < len ? have : len);
  return d;
}

static int req_check(const struct dp_req *q, size_t len, unsigned nfds) {
  const char *why = NULL;
  int e = dp_req_check(at_edge(q, sizeof *q, len), len, nfds, &why);
  if (e) ck_assert_ptr_nonnull(why);
  return e;
}

static int rep_check(uint32_t op, const struct dp_rep *r, size_t len) {
  const char *why = NULL;
  int e = dp_rep_check(op, at_edge(r, sizeof *r, len), len, &why);
  if (e) ck_assert_ptr_nonnull(why);
  return e;
}

/* A well-formed request for op with `count` items (where it has a list). */
static void make_req(struct dp_req *q, uint32_t op, uint32_t count) {
  memset(q, 0, sizeof *q);
  q->op = op;
  q->id = 7;
  q->a = 1;
  q->b = 2;
  if (op == DP_OPEN) q->u.open.layout = DP_LAYOUT;
  const struct dp_op_entry *e = dp_op_entry(op);
  if (e && e->req.item) memcpy(&q->u, &count, sizeof count);
}

static void make_rep(struct dp_rep *r, uint32_t op, uint32_t n) {
  memset(r, 0, sizeof *r);
  r->op = op;
  r->n = n;
  r->a = 9;
}

static int devnull(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  return fd;
}

/* Sends len bytes of m with nfds descriptors over a fresh pair; what
 * arrives (length, descriptors, cut) into the out parameters. */
static ssize_t through(const void *m, size_t len, unsigned nfds, void *buf, size_t cap,
                       unsigned *got_fds, int *cut) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  int fds[DP_MAX_FDS + 4];
  for (unsigned i = 0; i < nfds; i++) fds[i] = devnull();
  /* dp_send refuses more than DP_MAX_FDS: a larger set goes by hand */
  if (nfds <= DP_MAX_FDS) {
    ck_assert_int_eq(dp_send(sv[0], m, len, fds, nfds), (ssize_t)len);
  } else {
    char cbuf[CMSG_SPACE(sizeof fds)];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {(void *)m, len};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf,
                        .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    ck_assert_int_eq(sendmsg(sv[0], &mh, 0), (ssize_t)len);
  }
  for (unsigned i = 0; i < nfds; i++) close(fds[i]);
  int in[DP_MAX_FDS];
  *got_fds = 0;
  ssize_t n = dp_recv(sv[1], buf, cap, 0, in, got_fds, cut);
  for (unsigned i = 0; i < *got_fds; i++) close(in[i]);
  close(sv[0]);
  close(sv[1]);
  return n;
}

/* ---- every entry round-trips ---- */

START_TEST(every_op_round_trips) {
  static struct dp_req q, got;
  static struct dp_rep r, rgot;
  for (uint32_t op = 1; op < DP_NOPS; op++) {
    const struct dp_op_entry *e = dp_op_entry(op);
    ck_assert_msg(e && e->name && e->name[0], "op %u has an entry", op);
    ck_assert_uint_le(e->fds_min, e->fds_max);
    ck_assert_uint_le(e->fds_max, DP_MAX_FDS);
    uint32_t counts[2] = {e->req.items_min, e->req.items_max};
    for (unsigned k = 0; k < 2; k++) {
      make_req(&q, op, counts[k]);
      size_t len = dp_req_len(&q);
      ck_assert_uint_eq(len, DP_REQ_HDR + e->req.len + (size_t)counts[k] * e->req.item);
      ck_assert_uint_le(len, sizeof q);
      for (unsigned nfds = e->fds_min; nfds <= e->fds_max; nfds++) {
        unsigned got_fds;
        int cut;
        memset(&got, 0xa5, sizeof got);
        ssize_t n = through(&q, len, nfds, &got, sizeof got, &got_fds, &cut);
        ck_assert_int_eq(n, (ssize_t)len);
        ck_assert_uint_eq(got_fds, nfds);
        ck_assert_int_eq(cut, 0);
        ck_assert_int_eq(req_check(&got, (size_t)n, got_fds), 0);
        ck_assert_mem_eq(&got, &q, len);
      }
    }
    /* the reply: success at the ends of its count, then an error */
    uint32_t rcounts[2] = {e->rep.items_min, e->rep.items_max};
    for (unsigned k = 0; k < 2; k++) {
      make_rep(&r, op, rcounts[k]);
      size_t len = dp_rep_len(&r);
      ck_assert_uint_eq(len, DP_REP_HDR + e->rep.len + (size_t)rcounts[k] * e->rep.item);
      ck_assert_uint_le(len, sizeof r);
      unsigned got_fds;
      int cut;
      ssize_t n = through(&r, len, 0, &rgot, sizeof rgot, &got_fds, &cut);
      ck_assert_int_eq(n, (ssize_t)len);
      ck_assert_int_eq(cut, 0);
      ck_assert_int_eq(rep_check(op, &rgot, (size_t)n), 0);
    }
    make_rep(&r, op, 0);
    r.err = COOP_EINVAL;
    snprintf(r.u.text, sizeof r.u.text, "what went wrong");
    size_t len = dp_rep_len(&r);
    ck_assert_uint_eq(len, DP_REP_HDR + (e->text ? strlen("what went wrong") + 1 : 0));
    ck_assert_int_eq(rep_check(op, &r, len), 0);
    r.u.text[0] = '\0';
    ck_assert_uint_eq(dp_rep_len(&r), DP_REP_HDR);
    ck_assert_int_eq(rep_check(op, &r, DP_REP_HDR), 0);
  }
}
END_TEST

/* The hot ops carry only what they need. */
START_TEST(hot_ops_are_small) {
  static struct dp_req q;
  static struct dp_rep r;
  make_req(&q, DP_WAIT, 1);
  ck_assert_uint_eq(dp_req_len(&q), DP_REQ_HDR + 2 * sizeof(uint32_t));
  make_rep(&r, DP_WAIT, 1);
  ck_assert_uint_eq(dp_rep_len(&r), DP_REP_HDR + sizeof(struct coop_rt_task_info));
  make_req(&q, DP_SUBMIT, 0);
  ck_assert_uint_eq(dp_req_len(&q), DP_REQ_HDR + sizeof(struct coop_rt_task_desc));
  make_rep(&r, DP_SUBMIT, DP_ENDED);
  ck_assert_uint_eq(dp_rep_len(&r), DP_REP_HDR + sizeof(struct coop_rt_task_info));
  make_req(&q, DP_SUBMIT_IO, 2); /* a frame: its range in, its range out */
  ck_assert_uint_eq(dp_req_len(&q), DP_REQ_HDR + offsetof(struct dp_submit_io, b) +
                                        2 * sizeof(struct dp_buf_entry));
  make_req(&q, DP_CANCEL, 0);
  ck_assert_uint_eq(dp_req_len(&q), DP_REQ_HDR);
}
END_TEST

/* ---- requests refused ---- */

START_TEST(short_requests_are_refused) {
  static struct dp_req q;
  for (size_t len = 0; len < DP_REQ_HDR; len++) {
    make_req(&q, DP_CANCEL, 0);
    ck_assert_int_eq(req_check(&q, len, 0), COOP_EPROTO);
  }
  for (uint32_t op = 1; op < DP_NOPS; op++) {
    const struct dp_op_entry *e = &dp_ops[op];
    make_req(&q, op, e->req.items_min);
    size_t len = dp_req_len(&q);
    if (len > DP_REQ_HDR) ck_assert_int_eq(req_check(&q, len - 1, e->fds_min), COOP_EPROTO);
    if (e->req.item) { /* a list one item short of its count */
      make_req(&q, op, e->req.items_max);
      ck_assert_int_eq(req_check(&q, dp_req_len(&q) - e->req.item, e->fds_min), COOP_EPROTO);
    }
  }
}
END_TEST

START_TEST(long_requests_are_refused) {
  static struct dp_req q;
  for (uint32_t op = 1; op < DP_NOPS; op++) {
    const struct dp_op_entry *e = &dp_ops[op];
    make_req(&q, op, e->req.items_max);
    size_t len = dp_req_len(&q);
    ck_assert_int_eq(req_check(&q, len + 1, e->fds_min), COOP_EPROTO);
    if (e->req.item) {
      /* one item more than the count says, and a count past the most */
      make_req(&q, op, e->req.items_min);
      ck_assert_int_eq(req_check(&q, dp_req_len(&q) + e->req.item, e->fds_min), COOP_EPROTO);
      make_req(&q, op, e->req.items_max + 1);
      ck_assert_uint_eq(dp_req_len(&q), 0);
      ck_assert_int_eq(req_check(&q, DP_REQ_HDR + e->req.len + e->req.item, e->fds_min),
                       COOP_EPROTO);
    }
  }
  /* longer than any request: cut at the receiver */
  static uint8_t big[sizeof(struct dp_req) + 64];
  unsigned got_fds;
  int cut;
  make_req(&q, DP_CANCEL, 0);
  memcpy(big, &q, DP_REQ_HDR);
  ck_assert_int_eq(through(big, sizeof big, 0, &q, sizeof q, &got_fds, &cut), (ssize_t)sizeof q);
  ck_assert_int_eq(cut, 1);
}
END_TEST

START_TEST(unknown_ops_are_refused) {
  static struct dp_req q;
  const uint32_t bad[] = {0, DP_NOPS, DP_NOPS + 1, 0x7fffffffu, 0xffffffffu};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    make_req(&q, DP_CANCEL, 0);
    q.op = bad[i];
    ck_assert_ptr_null(dp_op_entry(bad[i]));
    ck_assert_uint_eq(dp_req_len(&q), 0);
    ck_assert_int_eq(req_check(&q, DP_REQ_HDR, 0), COOP_EPROTO);
    ck_assert_int_eq(req_check(&q, sizeof q, 0), COOP_EPROTO);
  }
}
END_TEST

START_TEST(wrong_descriptor_counts_are_refused) {
  static struct dp_req q;
  for (uint32_t op = 1; op < DP_NOPS; op++) {
    const struct dp_op_entry *e = &dp_ops[op];
    make_req(&q, op, e->req.items_min);
    size_t len = dp_req_len(&q);
    ck_assert_int_eq(req_check(&q, len, e->fds_max + 1u), COOP_EPROTO);
    if (e->fds_min) ck_assert_int_eq(req_check(&q, len, e->fds_min - 1u), COOP_EPROTO);
  }
  /* more descriptors than a request may carry: cut, and none kept */
  unsigned got_fds;
  int cut;
  make_req(&q, DP_STAGE, 0);
  static struct dp_req got;
  ck_assert_int_eq(through(&q, dp_req_len(&q), DP_MAX_FDS + 2, &got, sizeof got, &got_fds, &cut),
                   (ssize_t)dp_req_len(&q));
  ck_assert_int_eq(cut, 1);
  ck_assert_uint_le(got_fds, DP_MAX_FDS);
}
END_TEST

START_TEST(another_build_is_told_so) {
  static struct dp_req q;
  make_req(&q, DP_OPEN, 0);
  q.u.open.layout = DP_LAYOUT ^ 1u;
  /* its OPEN may be longer or shorter too: the stamp is checked first */
  size_t len = dp_req_len(&q);
  ck_assert_int_eq(req_check(&q, len, 1), COOP_EVERSION);
  ck_assert_int_eq(req_check(&q, len - 8, 1), COOP_EVERSION);
  ck_assert_int_eq(req_check(&q, DP_REQ_HDR + 4, 1), COOP_EVERSION);
  ck_assert_int_eq(req_check(&q, DP_REQ_HDR + 3, 1), COOP_EPROTO);
}
END_TEST

/* ---- replies refused ---- */

START_TEST(malformed_replies_are_refused) {
  static struct dp_rep r;
  for (size_t len = 0; len < DP_REP_HDR; len++) {
    make_rep(&r, DP_CANCEL, 0);
    ck_assert_int_eq(rep_check(DP_CANCEL, &r, len), COOP_EPROTO);
  }
  for (uint32_t op = 1; op < DP_NOPS; op++) {
    const struct dp_op_entry *e = &dp_ops[op];
    make_rep(&r, op, e->rep.items_min);
    size_t len = dp_rep_len(&r);
    ck_assert_int_eq(rep_check(op, &r, len + 1), COOP_EPROTO);
    if (len > DP_REP_HDR) ck_assert_int_eq(rep_check(op, &r, len - 1), COOP_EPROTO);
    /* a reply to another op, and to no op */
    ck_assert_int_eq(rep_check(op % (DP_NOPS - 1) + 1, &r, len), COOP_EPROTO);
    ck_assert_int_eq(rep_check(DP_NOPS, &r, len), COOP_EPROTO);
    if (e->rep.item) { /* rep.n disagrees with the length, or is past the most */
      make_rep(&r, op, 2);
      len = dp_rep_len(&r);
      r.n = 3;
      ck_assert_int_eq(rep_check(op, &r, len), COOP_EPROTO);
      r.n = e->rep.items_max + 1;
      ck_assert_uint_eq(dp_rep_len(&r), 0);
      ck_assert_int_eq(rep_check(op, &r, DP_REP_HDR + (size_t)r.n * e->rep.item), COOP_EPROTO);
    }
    /* an error: a message only where the op may carry one, terminated */
    make_rep(&r, op, 0);
    r.err = COOP_EIO;
    memset(r.u.text, 'x', 8);
    ck_assert_int_eq(rep_check(op, &r, DP_REP_HDR + 8), COOP_EPROTO);
    r.u.text[7] = '\0';
    ck_assert_int_eq(rep_check(op, &r, DP_REP_HDR + 8), e->text ? 0 : COOP_EPROTO);
  }
}
END_TEST

/* ---- a device process ---- */

struct child {
  pid_t pid;
  int fd;  /* our end of its socket */
  int log; /* its stderr: a memfd */
};

static struct child child_start(void) {
  struct child c;
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  c.log = memfd_create("devproc-log", MFD_CLOEXEC);
  ck_assert_int_ge(c.log, 0);
  c.pid = fork();
  ck_assert_int_ge(c.pid, 0);
  if (c.pid == 0) {
    dup2(sv[1], 3);
    dup2(c.log, 2);
    execl(COOPD_PATH, "coopd", "--device-process", "3", (char *)NULL);
    _exit(127);
  }
  close(sv[1]);
  c.fd = sv[0];
  return c;
}

/* One request of len bytes (nfds descriptors of /dev/null): the reply's
 * error, the reply checked as coopd checks it. */
static int ask(const struct child *c, const void *m, size_t len, unsigned nfds, uint32_t op,
               struct dp_rep *r) {
  int fds[DP_MAX_FDS] = {0};
  for (unsigned i = 0; i < nfds; i++) fds[i] = devnull();
  ck_assert_int_eq(dp_send(c->fd, m, len, fds, nfds), (ssize_t)len);
  for (unsigned i = 0; i < nfds; i++) close(fds[i]);
  int cut;
  ssize_t n = dp_recv(c->fd, r, sizeof *r, 0, NULL, NULL, &cut);
  ck_assert_int_ge(n, (ssize_t)DP_REP_HDR);
  ck_assert_int_eq(cut, 0);
  if (r->err && (size_t)n == DP_REP_HDR) r->u.text[0] = '\0';
  if (dp_op_entry(op)) ck_assert_int_eq(dp_rep_check(op, r, (size_t)n, NULL), 0);
  return r->err;
}

/* coopd --device-process with args, its stdin /dev/null and fd 3 (when
 * `pipe3`) one end of a pipe: its exit status; its stderr into err. */
static int run_by_hand(const char *const *args, unsigned nargs, int pipe3, char *err,
                       size_t errlen) {
  int ep[2], p3[2];
  ck_assert_int_eq(pipe(ep), 0);
  ck_assert_int_eq(pipe(p3), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(ep[1], 2);
    if (pipe3) dup2(p3[0], 3);
    const char *argv[6] = {"coopd", "--device-process"};
    for (unsigned i = 0; i < nargs && i < 3; i++) argv[2 + i] = args[i];
    execv(COOPD_PATH, (char *const *)argv);
    _exit(127);
  }
  close(ep[1]);
  close(p3[0]);
  close(p3[1]);
  ssize_t n = 0, k;
  while ((k = read(ep[0], err + n, errlen - 1 - (size_t)n)) > 0) n += k;
  err[n < 0 ? 0 : n] = '\0';
  close(ep[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The flag is coopd's own: a value that is not its socket pair's end
 * (not a number, a descriptor not open, a pipe, none, one too many) is
 * refused with exit 2 and a line that says so, where `abc` (read as 0,
 * stdin) and `7` exited 0 in silence, having served nothing. */
START_TEST(device_process_by_hand_is_refused) {
  static const struct {
    const char *args[2];
    unsigned n;
    int pipe3;
  } cases[] = {{{"abc"}, 1, 0}, {{"7"}, 1, 0},  {{"3"}, 1, 1},  {{"-1"}, 1, 0},
               {{""}, 1, 0},    {{NULL}, 0, 0}, {{"3x"}, 1, 0}, {{"3", "4"}, 2, 0}};
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[1024];
    int rc = run_by_hand(cases[i].args, cases[i].n, cases[i].pipe3, err, sizeof err);
    ck_assert_msg(rc == 2, "case %u: exit %d", i, rc);
    ck_assert_msg(strstr(err, "not run by hand") != NULL, "case %u: %s", i, err);
  }
}
END_TEST

START_TEST(device_process_refuses_and_goes_on) {
  static struct dp_req q;
  static struct dp_rep r;
  struct child c = child_start();
  /* well-formed, before any OPEN: the device is not there yet */
  make_req(&q, DP_CANCEL, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 0, DP_CANCEL, &r), COOP_ESTATE);
  /* short, long, unknown, a count that disagrees, a missing descriptor */
  ck_assert_int_eq(ask(&c, &q, DP_REQ_HDR - 1, 0, DP_CANCEL, &r), COOP_EPROTO);
  ck_assert_int_eq(ask(&c, &q, DP_REQ_HDR + 1, 0, DP_CANCEL, &r), COOP_EPROTO);
  make_req(&q, DP_NOPS, 0);
  ck_assert_int_eq(ask(&c, &q, DP_REQ_HDR, 0, DP_NOPS, &r), COOP_EPROTO);
  ck_assert_uint_eq(r.op, DP_NOPS);
  make_req(&q, DP_POLL, 3);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q) - sizeof(uint32_t), 0, DP_POLL, &r), COOP_EPROTO);
  make_req(&q, DP_KICKFD, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 0, DP_KICKFD, &r), COOP_EPROTO);
  make_req(&q, DP_INFO, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 1, DP_INFO, &r), COOP_EPROTO);
  /* another build's OPEN is told so, in words */
  make_req(&q, DP_OPEN, 0);
  q.u.open.layout = DP_LAYOUT + 1;
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 1, DP_OPEN, &r), COOP_EVERSION);
  ck_assert_ptr_nonnull(strstr(r.u.text, "another build of coopd"));
  /* still serving: a close ends it cleanly */
  make_req(&q, DP_POLL, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 0, DP_POLL, &r), COOP_ESTATE);
  make_req(&q, DP_CLOSE, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 0, DP_CLOSE, &r), 0);
  int st;
  ck_assert_int_eq(waitpid(c.pid, &st, 0), c.pid);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(c.fd);
  /* and said why, each time */
  char log[8192] = {0};
  ck_assert_int_ge(pread(c.log, log, sizeof log - 1, 0), 0);
  close(c.log);
  unsigned said = 0;
  for (const char *l = log; (l = strstr(l, "refused a request")); l++) said++;
  ck_assert_uint_eq(said, 7);
  ck_assert_ptr_nonnull(strstr(log, "unknown op"));
  ck_assert_ptr_nonnull(strstr(log, "descriptors"));
}
END_TEST

/* Waits up to 5 s for *flag to read want. */
static int flag_becomes(atomic_uint *flag, unsigned want) {
  for (int i = 0; i < 5000 && atomic_load(flag) != want; i++) usleep(1000);
  return atomic_load(flag) == want;
}

/* No message waiting on our end of the socket (it may have closed). */
static int socket_quiet(const struct child *c) {
  char b;
  return recv(c->fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) <= 0;
}

/* A request of len bytes through the shared channel, as coopd's front sends one,
 * after the child went to sleep on its socket (so it must be rung). With
 * sleep, we sleep too and must be rung for the reply; else we spin and the
 * child must not ring. The reply's error, checked as coopd checks it. */
static int shm_ask(const struct child *c, struct dp_shm *sh, const struct dp_req *q, uint32_t len,
                   uint32_t op, int sleep, struct dp_rep *r) {
  static uint32_t seq;
  ck_assert(flag_becomes(&sh->child_asleep, 1));
  atomic_store(&sh->front_asleep, (unsigned)sleep); /* before: the ring is then certain */
  memcpy(&sh->req, q, len < sizeof *q ? len : sizeof *q);
  atomic_store_explicit(&sh->req_len, len, memory_order_relaxed);
  atomic_store(&sh->req_seq, ++seq);
  ck_assert_uint_eq(atomic_load(&sh->child_asleep), 1);
  ck_assert_int_eq(dp_shm_ring(c->fd), 0);
  if (sleep) {
    struct pollfd pf = {c->fd, POLLIN, 0};
    ck_assert_int_eq(poll(&pf, 1, 5000), 1);
    char bell[8];
    ck_assert_int_eq(recv(c->fd, bell, sizeof bell, 0), DP_DOORBELL_LEN);
    atomic_store(&sh->front_asleep, 0);
  }
  ck_assert(flag_becomes(&sh->rep_seq, seq));
  ck_assert_msg(socket_quiet(c), "call %u", seq); /* rung once when asleep, never when spinning */
  uint32_t n = atomic_load_explicit(&sh->rep_len, memory_order_relaxed);
  ck_assert_int_eq(dp_shm_copy(r, sizeof *r, &sh->rep, n), 0);
  ck_assert_uint_ge(n, DP_REP_HDR);
  if (r->err && n == DP_REP_HDR) r->u.text[0] = '\0';
  if (dp_op_entry(op)) ck_assert_int_eq(dp_rep_check(op, r, n, NULL), 0);
  ck_assert_uint_eq(r->op, op);
  return r->err;
}

START_TEST(device_process_serves_its_shared_channel) {
  static struct dp_req q;
  static struct dp_rep r;
  struct child c = child_start();
  /* a descriptor that is not a shared channel (its size): refused, nothing mapped */
  make_req(&q, DP_SHM, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 1, DP_SHM, &r), 0);
  ck_assert_uint_eq(r.n, 0);
  struct dp_shm *sh;
  int mfd = dp_shm_create(&sh);
  ck_assert_int_ge(mfd, 0);
  ck_assert_int_eq(dp_send(c.fd, &q, dp_req_len(&q), &mfd, 1), (ssize_t)dp_req_len(&q));
  int cut;
  ck_assert_int_eq(dp_recv(c.fd, &r, sizeof r, 0, NULL, NULL, &cut), (ssize_t)DP_REP_HDR);
  ck_assert_int_eq(r.err, 0);
  ck_assert_uint_eq(r.n, 1);
  /* served through it, the child rung awake, and ringing us when we sleep */
  make_req(&q, DP_CANCEL, 0);
  ck_assert_int_eq(shm_ask(&c, sh, &q, (uint32_t)dp_req_len(&q), DP_CANCEL, 1, &r), COOP_ESTATE);
  ck_assert_int_eq(shm_ask(&c, sh, &q, (uint32_t)dp_req_len(&q), DP_CANCEL, 0, &r), COOP_ESTATE);
  /* a stale doorbell, with nothing new in the shared channel: neither served nor refused */
  ck_assert_int_eq(dp_shm_ring(c.fd), 0);
  /* refused as on the socket: short, and a length past the request */
  ck_assert_int_eq(shm_ask(&c, sh, &q, DP_REQ_HDR - 1, DP_CANCEL, 1, &r), COOP_EPROTO);
  ck_assert_int_eq(shm_ask(&c, sh, &q, sizeof q + 1, 0, 0, &r), COOP_EPROTO);
  /* the socket still serves requests (those with descriptors use it) */
  make_req(&q, DP_INFO, 0);
  ck_assert_int_eq(ask(&c, &q, dp_req_len(&q), 1, DP_INFO, &r), COOP_EPROTO);
  make_req(&q, DP_POLL, 0);
  ck_assert_int_eq(shm_ask(&c, sh, &q, (uint32_t)dp_req_len(&q), DP_POLL, 1, &r), COOP_ESTATE);
  make_req(&q, DP_CLOSE, 0);
  ck_assert_int_eq(shm_ask(&c, sh, &q, (uint32_t)dp_req_len(&q), DP_CLOSE, 0, &r), 0);
  int st;
  ck_assert_int_eq(waitpid(c.pid, &st, 0), c.pid);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(c.fd);
  close(mfd);
  dp_shm_unmap(sh);
  char log[8192] = {0};
  ck_assert_int_ge(pread(c.log, log, sizeof log - 1, 0), 0);
  close(c.log);
  unsigned said = 0;
  for (const char *l = log; (l = strstr(l, "refused a request")); l++) said++;
  ck_assert_uint_eq(said, 3); /* the short, the long, the descriptor */
}
END_TEST

/* A one-task job's expected run (dp_ends.h): known only for the kernel and
 * width it was noted for, the last note winning; a kind that takes the
 * same slot makes the other unknown (0: no end expected), never another
 * kind's length; a run noted as 0 or less is none. */
START_TEST(an_expected_end_is_its_own_kinds) {
  static struct dp_ends e; /* zeroed: nothing known */
  ck_assert_int_eq(dp_ends_expect(&e, 0, 0), 0);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 0);
  dp_ends_note(&e, 3, 1087, 2000000);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 2000000);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1086), 0);
  ck_assert_int_eq(dp_ends_expect(&e, 4, 1087), 0);
  dp_ends_note(&e, 3, 1087, 1900000);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1900000);
  /* every kind of kernel 3 and widths 1087 + 64 k shares one slot:
   * the first found there is another kind */
  int clash = -1;
  for (unsigned g = 1088; g < 1087 + 64 * DP_END_SLOTS && clash < 0; g++) {
    dp_ends_note(&e, 3, g, 5);
    if (dp_ends_expect(&e, 3, 1087) == 0)
      clash = (int)g;
    else
      ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1900000);
  }
  ck_assert_int_gt(clash, 0);
  ck_assert_int_eq(dp_ends_expect(&e, 3, (unsigned)clash), 5);
  dp_ends_note(&e, 3, (unsigned)clash, -7);
  ck_assert_int_eq(dp_ends_expect(&e, 3, (unsigned)clash), 0);
  /* tasks in flight: each due its kind's last run after its submit; a
   * wait expects the earliest live one; a reply that finds one done notes
   * its run (gathered -> finished) once and drops it */
  int frame = -1;
  dp_ends_note(&e, 3, 1087, 1900000);             /* its slot back from the clash */
  dp_ends_submitted(&e, 0x101, 3, 1087, 1000, 1); /* due 1000 + 1900000 */
  dp_ends_submitted(&e, 0x102, 9, 4, 2000, 0);    /* no run known: no due */
  coop_task_id ids[3] = {0x101, 0x102, 0x201};    /* 0x201: another task's slot */
  ck_assert_int_eq(dp_ends_due(&e, ids, 3, &frame), 1901000);
  ck_assert_int_eq(frame, 1);
  struct coop_rt_task_info ti;
  memset(&ti, 0, sizeof ti);
  ti.state = COOP_TASK_RUNNING;
  dp_ends_seen(&e, 0x101, &ti); /* not done: still due */
  ck_assert_int_eq(dp_ends_due(&e, ids, 3, &frame), 1901000);
  ti.state = COOP_TASK_DONE;
  ti.t_gathered = 5000;
  ti.t_finished = 5000 + 1700000;
  dp_ends_seen(&e, 0x201, &ti); /* not the task in that slot: nothing */
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1900000);
  dp_ends_seen(&e, 0x101, &ti);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1700000);
  ck_assert_int_eq(dp_ends_due(&e, ids, 3, &frame), 0); /* none live with a due */
  ti.t_finished = 5000 + 1;
  dp_ends_seen(&e, 0x101, &ti); /* seen again: noted once */
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1700000);
  dp_ends_submitted(&e, 0x103, 3, 1087, 10, 0);
  ck_assert_int_eq(dp_ends_due(&e, (coop_task_id[]){0x103}, 1, &frame), 1700010);
  ck_assert_int_eq(frame, 0);
  ti.state = COOP_TASK_CANCELLED; /* a run that did not end as itself: not noted */
  ti.t_finished = 5000 + 3;
  dp_ends_seen(&e, 0x103, &ti);
  ck_assert_int_eq(dp_ends_expect(&e, 3, 1087), 1700000);
  ck_assert_int_eq(dp_ends_due(&e, (coop_task_id[]){0x103}, 1, &frame), 0);
}
END_TEST

/* A warm window told through the shared channel (dp_wake; the child's
 * dp_shm_window): the spin runs to the window's end when it is new and
 * open, never shorter than it was, at most max_ns on (a wild stamp), and
 * each window once: one already taken, or over, leaves the spin as it
 * was, so the child sleeps again. */
START_TEST(a_told_window_is_taken_once_and_bounded) {
  const int64_t now = 1000000000, max = 10000000;
  int64_t told = 0;
  /* none told (0), or one over: as it was, asleep (0) or spinning */
  ck_assert_int_eq(dp_shm_window(0, &told, now, 0, max), 0);
  ck_assert_int_eq(dp_shm_window(now - 5, &told, now, 0, max), 0);
  ck_assert_int_eq(dp_shm_window(now, &told, now, now + 7, max), now + 7);
  ck_assert_int_eq(told, 0);
  /* a new one: to its end, from sleep or from a shorter spin */
  ck_assert_int_eq(dp_shm_window(now + 400000, &told, now, 0, max), now + 400000);
  ck_assert_int_eq(told, now + 400000);
  /* taken: the same window again leaves the spin as it was (asleep stays asleep) */
  ck_assert_int_eq(dp_shm_window(now + 400000, &told, now + 1, 0, max), 0);
  ck_assert_int_eq(dp_shm_window(now + 400000, &told, now + 1, now + 9, max), now + 9);
  /* a later one inside a longer spin: taken, the spin kept */
  ck_assert_int_eq(dp_shm_window(now + 500000, &told, now, now + 900000, max), now + 900000);
  ck_assert_int_eq(told, now + 500000);
  /* a wild one: max_ns at most, and once */
  ck_assert_int_eq(dp_shm_window(now + 3 * max, &told, now, 0, max), now + max);
  ck_assert_int_eq(dp_shm_window(now + 3 * max, &told, now + max, 0, max), 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("devproc_msg");
  TCase *c = tcase_create("layer");
  tcase_add_checked_fixture(c, guard_setup, guard_teardown);
  tcase_add_test(c, every_op_round_trips);
  tcase_add_test(c, hot_ops_are_small);
  tcase_add_test(c, short_requests_are_refused);
  tcase_add_test(c, long_requests_are_refused);
  tcase_add_test(c, unknown_ops_are_refused);
  tcase_add_test(c, wrong_descriptor_counts_are_refused);
  tcase_add_test(c, another_build_is_told_so);
  tcase_add_test(c, malformed_replies_are_refused);
  tcase_add_test(c, an_expected_end_is_its_own_kinds);
  tcase_add_test(c, a_told_window_is_taken_once_and_bounded);
  suite_add_tcase(s, c);
  TCase *d = tcase_create("device_process");
  tcase_set_timeout(d, 30);
  tcase_add_test(d, device_process_refuses_and_goes_on);
  tcase_add_test(d, device_process_by_hand_is_refused);
  tcase_add_test(d, device_process_serves_its_shared_channel);
  suite_add_tcase(s, d);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
