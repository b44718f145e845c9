/*
 * test_daemon_limits.c: what a client can make coopd hold, one test each:
 * replies it does not read, connections per uid and the HELLO deadline,
 * users crowded out, descriptors, live and detached jobs per uid, inline
 * bytes, periodic records, the deadline floor.
 */
#define _GNU_SOURCE /* prlimit */
#include <check.h>
#include <dirent.h>
#include <grp.h> /* setgroups */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h> /* prlimit */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h> /* struct timeval */
#include <sys/wait.h>
#include <unistd.h>

#include "coop_util.h" /* coop__now_ns */
#include "wire.h"
#include "daemon_harness.h"

/* ---- limits: what a client can make coopd hold (docs/faults.md) ---- */

/* coopd's resident set, or its peak (VmHWM), in KiB. */
static long proc_kib(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  long kib = -1;
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') kib = atol(line + n + 1);
  fclose(f);
  ck_assert_int_ge(kib, 0);
  return kib;
}

/* CPU time coopd has used (user + system), in ms. */
static long cpu_ms(pid_t pid) {
  return (long)(cpu_ticks(pid) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* A shorter receive timeout: a test that expects coopd to close a
 * connection should fail in seconds, not in conn_open's 120 s. */
static void conn_timeout(struct conn *c, int seconds) {
  struct timeval tv = {seconds, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* The next frame is an ERROR with this code that says `says`, and then the
 * connection ends. */
static void expect_error_then_close(struct conn *c, int code, const char *says) {
  ck_assert_msg(read_frame(c), "no ERROR before the connection ended (or 10 s passed)");
  ck_assert_uint_eq(c->h.type, COOP_MSG_ERROR);
  ck_assert_msg(c->m.error.code == code, "want %s, got %s: %s", coop_err_name(code),
                coop_err_name(c->m.error.code), c->m.error.message);
  assert_has(c->m.error.message, says);
  ck_assert_int_eq(read_frame(c), 0);
}

/* render over inline buffers of the given sizes, n = 1 (the kernel's rules
 * want 4 bytes each): IN a and b (zeros), OUT c. */
static void render_sized(union coop_msg *m, uint32_t ab_bytes, uint32_t c_bytes, int detached) {
  static uint8_t zeros[COOP_WIRE_INLINE_MAX];
  submit_init(m, "render", 1, 0);
  if (detached) m->submit.flags |= COOP_SUBMIT_DETACHED;
  arg_buf(&m->submit, COOP_BUF_IN, zeros, ab_bytes, COOP_WIRE_FD_NONE);
  arg_buf(&m->submit, COOP_BUF_IN, zeros, ab_bytes, COOP_WIRE_FD_NONE);
  arg_buf(&m->submit, COOP_BUF_OUT, NULL, c_bytes, COOP_WIRE_FD_NONE);
  arg_u32(&m->submit, 1);
  arg_u32(&m->submit, 1);
}

/* Submits m and waits for it: DONE. The job's id. */
static uint64_t run_done(struct conn *c, const union coop_msg *m) {
  uint64_t j = submit(c, m, NULL, 0);
  ck_assert_msg(j != 0, "refused: %s", c->m.error.message);
  ck_assert_uint_eq(wait_job(c, j, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c->m.result.state == COOP_JOB_DONE, "job %llu: %s %s", (unsigned long long)j,
                coop_job_state_name(c->m.result.state), c->m.result.message);
  return j;
}

/* Until nothing is queued or running. */
static void wait_idle(struct conn *c) {
  for (int i = 0; i < 1200; i++, msleep(50)) {
    union coop_msg m;
    memset(&m, 0, sizeof m);
    ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
    if (c->m.stats.queued == 0 && c->m.stats.running == 0) return;
  }
  ck_abort_msg("jobs still queued or running after 60 s");
}

/* Another user (nobody) may connect: the tests that need one run as root
 * (as CI does); the socket is opened to it. 0 when not root. Call it after
 * a HELLO: coopd sets the socket's mode between bind and listen, and the
 * file exists from the bind on. */
static int other_user_possible(const struct daemon_proc *d, const char *test) {
  if (geteuid() != 0) {
    fprintf(stderr, "%s: not root, the other-user checks are skipped\n", test);
    return 0;
  }
  daemon_open_to_all(d);
  return 1;
}

static void become_nobody(void) {
  if (setgid(65534) || setuid(65534)) _exit(3);
}

static void child_ok(pid_t kid) {
  int st;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other user's process: status %d", st);
}

/* Unread replies: a client that kept about 32 MiB of replies pending while
 * reading steadily grew coopd by 1.95 GB a minute: the output buffer was
 * reset only when fully drained, so everything ever sent stayed. Now its
 * memory follows the bytes pending, and past 8 MiB pending no more requests
 * are read. */
START_TEST(unread_replies_stay_bounded) {
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  struct conn c, other;
  open_hello(&other, &d); /* first: coopd answers c's waiters before other's */
  open_hello(&c, &d);
  union coop_msg m;
  render_sized(&m, 4, 256u << 10, 0); /* its RESULT carries 256 KiB */
  uint64_t j = run_done(&c, &m);
  long before = proc_kib(d.pid, "VmRSS");
  memset(&m, 0, sizeof m);
  m.job.job = j;
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  enum { AHEAD = 160, STREAM = 1200 }; /* RESULTs: 40 MiB behind, 340 MiB through */
  for (int i = 0; i < AHEAD; i++) send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
  for (int i = 0; i < STREAM + AHEAD; i++) { /* one read, one more asked */
    ck_assert_int_eq(read_frame(&c), 1);
    ck_assert_uint_eq(c.h.type, COOP_MSG_RESULT);
    ck_assert_uint_eq(c.m.result.bufs[0].len, 256u << 10);
    if (i < STREAM) send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
  }
  long peak = proc_kib(d.pid, "VmHWM");
  ck_assert_msg(peak - before < 96 * 1024,
                "coopd grew by %ld KiB while streaming %d MiB to a client %d MiB behind",
                peak - before, (STREAM + AHEAD) / 4, AHEAD / 4);
  /* 300 WAITs on a running sweep whose RESULT carries 256 KiB: when it
   * ends, each RESULT is built only as c reads the ones before it
   * (session.c, SESS_RESULT_BEHIND). Built all at once, 75 MiB came in one
   * turn of the loop and the connection was dropped at 64 MiB, every
   * answer lost (a user's 16 such connections of 4096 WAITs took coopd to
   * 1 GiB, and held every other user's requests for seconds). */
  static uint32_t words[65536];
  uint64_t slow = sweep_submit(&c, words, 65536, 0xffffffffu, 1, -1);
  ck_assert_uint_ne(slow, 0);
  m.job.job = slow;
  uint32_t first = 0;
  for (int i = 0; i < 300; i++) {
    uint32_t seq = send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
    if (!first) first = seq;
  }
  ck_assert_uint_eq(reply(&other, send_msg(&other, COOP_MSG_STATS, &m, NULL, 0)),
                    COOP_MSG_STATS_REPLY); /* the WAITs are in before the CANCEL */
  before = proc_kib(d.pid, "VmHWM");
  /* c reads nothing until the job has ended, which other's RESULT says */
  uint32_t w = send_msg(&other, COOP_MSG_WAIT, &m, NULL, 0);
  ck_assert_uint_eq(reply(&other, send_msg(&other, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(reply(&other, w), COOP_MSG_RESULT);
  ck_assert_uint_eq(other.m.result.state, COOP_JOB_CANCELLED);
  render_check(&other, 1, 0, 0); /* coopd serves on */
  peak = proc_kib(d.pid, "VmHWM");
  ck_assert_msg(peak - before < 32 * 1024, "coopd grew by %ld KiB as 300 WAITs' job ended",
                peak - before);
  conn_timeout(&c, 30);
  for (int i = 0; i < 300; i++) {
    ck_assert_msg(read_frame(&c), "the connection closed after %d RESULTs of 300", i);
    ck_assert_uint_eq(c.h.type, COOP_MSG_RESULT);
    ck_assert_uint_eq(c.m.result.job, slow);
    ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
    ck_assert_uint_eq(c.m.result.bufs[0].len, sizeof words);
    ck_assert(c.h.seq >= first && c.h.seq < first + 300);
  }
  conn_close(&c);
  conn_close(&other);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* WAITs of a job already finished, from 8 connections of one user that
 * read nothing: each RESULT (256 KiB) was built as its WAIT was read,
 * until SESS_OUT_PAUSE (8 MiB) stopped the reading, so each connection
 * held 8 MiB of them built in a turn of the loop (16 connections: 128 MiB
 * while every other user's requests waited). Now a finished job's RESULT
 * waits, as a job's end does, while more than SESS_RESULT_BEHIND (1 MiB) of
 * replies is pending, and is built as the client reads: coopd grows by a
 * few MiB, not 64, and each connection then reads all 40 whole. */
START_TEST(waits_of_a_finished_job_wait_for_the_reader) {
  struct daemon_proc d = {.log = NULL};
  daemon_start_listening(&d, NULL);
  enum { N = 8, W = 40 };
  struct conn c[N];
  for (int i = 0; i < N; i++) open_hello(&c[i], &d);
  union coop_msg m;
  render_sized(&m, 4, 256u << 10, 0); /* its RESULT carries 256 KiB */
  uint64_t j = run_done(&c[0], &m);
  long before = proc_kib(d.pid, "VmHWM");
  memset(&m, 0, sizeof m);
  m.job.job = j;
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  for (int i = 0; i < N; i++)
    for (int k = 0; k < W; k++) send_msg(&c[i], COOP_MSG_WAIT, &m, NULL, 0);
  struct conn other;
  /* answered perhaps before coopd read every WAIT: a user's connections
   * share a turn of the loop (session.c, SESS_USER_PER_TURN) */
  open_hello(&other, &d);
  ck_assert_uint_eq(reply(&other, send_msg(&other, COOP_MSG_STATS, &m, NULL, 0)),
                    COOP_MSG_STATS_REPLY);
  /* every connection open until all are read: job j is c[0]'s, and a WAIT
   * read after c[0] closed is ENOJOB */
  for (int i = 0; i < N; i++) {
    conn_timeout(&c[i], 30);
    for (int k = 0; k < W; k++) {
      ck_assert_msg(read_frame(&c[i]), "connection %d closed after %d RESULTs of %d", i, k, W);
      ck_assert_msg(c[i].h.type == COOP_MSG_RESULT, "connection %d, reply %d: type %u (%s)", i, k,
                    c[i].h.type, c[i].h.type == COOP_MSG_ERROR ? c[i].m.error.message : "");
      ck_assert_uint_eq(c[i].m.result.bufs[0].len, 256u << 10);
    }
  }
  long peak = proc_kib(d.pid, "VmHWM"); /* the high-water mark: over all of it */
  fprintf(stderr,
          "coopd grew by %ld KiB for %d WAITs of a finished 256 KiB RESULT on %d connections\n",
          peak - before, N * W, N);
  ck_assert_msg(peak - before < 32 * 1024,
                "coopd grew by %ld KiB for %d unread connections' WAITs of a finished job",
                peak - before, N);
  for (int i = 0; i < N; i++) conn_close(&c[i]);
  conn_close(&other);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A periodic job's STARTED and FINISHED events, one pair an instance, go
 * to its user's subscribed connections at its end. All of them were
 * built in that turn of the loop, a system call an event: one user's 14
 * connections subscribed to 40000 instances and reading nothing held
 * every other user's requests 3 s (bench/RESULTS.md has the run; a test
 * of that size runs minutes on PoCL). Now they go as each client reads,
 * as RESULTs do (SESS_RESULT_BEHIND). Here a subscriber behind 1.5 MiB
 * of RESULTs it has not read when a 300-instance job ends: its events
 * wait, then come every one, in instance order, between those RESULTs and
 * its WAIT's of the job; another subscriber, not behind, gets them at once.
 * The live RELEASED and GATHERED, which the one behind subscribed to as
 * well, do not come to it at all: they were queued as they happened, a
 * megabyte or more a second for a subscriber that read nothing, up to
 * 64 MiB a connection (session_job_event). */
START_TEST(a_periodic_jobs_events_wait_for_the_reader) {
  struct daemon_proc d = {.log = NULL};
  daemon_start_listening(&d, NULL);
  enum { N = 300 };
  struct conn sub[2], c;
  union coop_msg m;
  open_hello(&c, &d);
  render_sized(&m, 4, 256u << 10, 0); /* its RESULT carries 256 KiB */
  uint64_t big = run_done(&c, &m);
  for (int i = 0; i < 2; i++) { /* after it: its events are not theirs */
    open_hello(&sub[i], &d);
    memset(&m, 0, sizeof m);
    m.subscribe.mask = (1u << COOP_EV_STARTED) | (1u << COOP_EV_FINISHED);
    if (i == 0) m.subscribe.mask |= (1u << COOP_EV_RELEASED) | (1u << COOP_EV_GATHERED);
    ck_assert_uint_eq(reply(&sub[i], send_msg(&sub[i], COOP_MSG_SUBSCRIBE, &m, NULL, 0)),
                      COOP_MSG_OK);
  }
  memset(&m, 0, sizeof m);
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  m.job.job = big;
  uint32_t bseq[6]; /* 1.5 MiB unread: behind */
  for (int k = 0; k < 6; k++) bseq[k] = send_msg(&sub[0], COOP_MSG_WAIT, &m, NULL, 0);
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  /* c's STATS does not mean sub[0]'s WAITs were all read: each 256 KiB
   * RESULT ends its connection's turn (SESS_TURN_BYTES), so they take a
   * turn each, and a loop thread that the spinning PoCL workers keep off
   * the cores for a millisecond read the last after the job's first
   * events (an EVENT before one of those RESULTs, in one run of many) */
  msleep(100);
  render_sized(&m, 4, 4, 0); /* after sub[0]'s WAITs: behind when it starts */
  m.submit.period_us = 1000;
  m.submit.count = N;
  uint64_t j = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(j, 0);
  memset(&m, 0, sizeof m);
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  m.job.job = j;
  uint32_t wseq = send_msg(&sub[0], COOP_MSG_WAIT, &m, NULL, 0);
  ck_assert_uint_eq(wait_job(&c, j, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  ck_assert_uint_eq(c.m.result.ninst, N);
  for (int i = 0; i < 2; i++) {
    conn_timeout(&sub[i], 30);
    for (int k = 0; i == 0 && k < 6; k++) { /* the RESULTs it was behind, then the events */
      ck_assert(read_frame(&sub[0]));
      ck_assert_uint_eq(sub[0].h.type, COOP_MSG_RESULT);
      ck_assert_uint_eq(sub[0].h.seq, bseq[k]);
    }
    for (uint32_t k = 0; k < 2u * N; k++) {
      ck_assert_msg(read_frame(&sub[i]), "subscriber %d closed after %u events", i, k);
      ck_assert_msg(sub[i].h.type == COOP_MSG_EVENT, "subscriber %d: frame %u of type %u", i, k,
                    sub[i].h.type);
      ck_assert_msg(sub[i].m.event.kind >= COOP_EV_STARTED,
                    "subscriber %d, behind: a live event of kind %u (instance %u)", i,
                    sub[i].m.event.kind, sub[i].m.event.instance);
      ck_assert_uint_eq(sub[i].m.event.job, j);
      ck_assert_uint_eq(sub[i].m.event.instance, k / 2);
      ck_assert_uint_eq(sub[i].m.event.kind, k % 2 ? COOP_EV_FINISHED : COOP_EV_STARTED);
    }
    if (i == 0) { /* and its WAIT's after them */
      ck_assert(read_frame(&sub[0]));
      ck_assert_uint_eq(sub[0].h.type, COOP_MSG_RESULT);
      ck_assert_uint_eq(sub[0].h.seq, wseq);
    }
    conn_close(&sub[i]);
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* One user's submit-and-cancel loop wrote an info line into coopd's log
 * (the journal, syslog) for every job, 200 a second from one connection.
 * Now a user's jobs' ends that are not done go at info 20 a 10 s window,
 * the rest at debug, and one info line says how many went so. */
START_TEST(one_users_job_ends_are_bounded_in_the_log) {
  char logp[] = "/tmp/coopd-log-ends-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t words[64];
  union coop_msg m;
  for (int i = 0; i < 60; i++) {
    uint64_t j = sweep_submit(&c, words, 64, 0xffffffffu, 1, -1);
    ck_assert_uint_ne(j, 0);
    memset(&m, 0, sizeof m);
    m.job.job = j;
    ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
    ck_assert_uint_eq(wait_job(&c, j, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  char want[64];
  snprintf(want, sizeof want, "(sweep, uid %u) cancelled", (unsigned)getuid());
  int n = 0;
  for (int i = 0; i < 100 && (n = log_count(logp, want)) < 20; i++) msleep(50);
  ck_assert_msg(n == 20, "%d of 60 cancelled jobs logged at info, 20 wanted", n);
  unlink(logp);
}
END_TEST

/* WAITs sent before their job ended are answered with its RESULT however
 * many of the connection's jobs end after it: with its RESULTs built as
 * the client reads (the client behind), max_finished_per_client (1 here)
 * trimmed the job as it ended, a newer render finished before it, and
 * the WAITs not yet answered got ENOJOB (5 of 10). The job is pinned
 * until the last is built, then goes. */
START_TEST(deferred_results_outlive_the_trim) {
  const char *sets[] = {"limits.max_finished_per_client=1", NULL};
  struct daemon_proc d = {.log = NULL};
  daemon_start_listening(&d, sets);
  struct conn c, other;
  open_hello(&other, &d);
  open_hello(&c, &d);
  static uint32_t words[65536]; /* its RESULT carries 256 KiB */
  uint64_t slow = sweep_submit(&c, words, 65536, 0xffffffffu, 1, -1);
  ck_assert_uint_ne(slow, 0);
  render_check(&c, 1, 0, 0); /* a newer job of c's, finished */
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = slow;
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  for (int i = 0; i < 10; i++) send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
  ck_assert_uint_eq(reply(&other, send_msg(&other, COOP_MSG_STATS, &m, NULL, 0)),
                    COOP_MSG_STATS_REPLY); /* the WAITs are in before the CANCEL */
  ck_assert_uint_eq(reply(&other, send_msg(&other, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  msleep(500); /* it ends, and is trimmed, while c reads nothing */
  conn_timeout(&c, 30);
  for (int i = 0; i < 10; i++) {
    ck_assert_int_eq(read_frame(&c), 1);
    ck_assert_msg(c.h.type == COOP_MSG_RESULT, "WAIT %d of 10: %s", i + 1,
                  c.h.type == COOP_MSG_ERROR ? c.m.error.message : "not a RESULT");
    ck_assert_uint_eq(c.m.result.job, slow);
    ck_assert_uint_eq(c.m.result.bufs[0].len, sizeof words);
  }
  /* then it is gone, as trimmed */
  ck_assert_uint_eq(wait_job(&c, slow, 0), COOP_MSG_ERROR);
  ck_assert_int_eq(c.m.error.code, COOP_ENOJOB);
  conn_close(&c);
  conn_close(&other);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Connections per uid: one uid opened 64 idle sockets and nobody (root
 * included) could connect. Now a user has at most max_clients_per_uid (16)
 * connections, root too, with an ERROR ELIMIT naming the key for the next;
 * and a connection that sends no HELLO within hello_timeout_ms (2 s) gets
 * ERROR ETIMEDOUT and is closed. Defaults throughout. */
START_TEST(connections_per_uid_and_hello_deadline) {
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  int two = other_user_possible(&d, "connections_per_uid_and_hello_deadline");
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = -1;
  if (two) {
    kid = fork();
    if (kid == 0) {
      become_nobody();
      static struct conn idle[17];
      int64_t t0 = now_ms();
      for (int i = 0; i < 17; i++) {
        if (conn_open(&idle[i], d.sock)) _exit(4);
        conn_timeout(&idle[i], 10);
      }
      expect_error_then_close(&idle[16], COOP_ELIMIT, "[limits] max_clients_per_uid");
      char go = 1;
      if (write(pfd[1], &go, 1) != 1) _exit(5);
      for (int i = 0; i < 16; i++)
        expect_error_then_close(&idle[i], COOP_ETIMEDOUT, "[server] hello_timeout_ms");
      int64_t took = now_ms() - t0;
      if (took < 1500 || took > 10000) _exit(6);
      struct conn again; /* the 16 are gone: room again */
      open_hello(&again, &d);
      _exit(0);
    }
    close(pfd[1]); /* so that a child that died reads as EOF here */
    char go;
    ck_assert_msg(read(pfd[0], &go, 1) == 1, "the other user's checks failed");
  }
  /* nobody holds 16 sockets; root still gets in, up to its own 16 */
  struct conn r, idle[14], over;
  open_hello(&r, &d);
  for (int i = 0; i < 14; i++) {
    ck_assert_int_eq(conn_open(&idle[i], d.sock), 0);
    conn_timeout(&idle[i], 10);
    if (i == 0) hello(&idle[0]); /* in time: it stays */
  }
  ck_assert_int_eq(conn_open(&over, d.sock), 0);
  conn_timeout(&over, 10);
  expect_error_then_close(&over, COOP_ELIMIT, "at most 16 connections per user");
  conn_close(&over);
  for (int i = 1; i < 14; i++) {
    expect_error_then_close(&idle[i], COOP_ETIMEDOUT, "no HELLO within 2000 ms");
    conn_close(&idle[i]);
  }
  union coop_msg m;
  memset(&m, 0, sizeof m);
  struct conn *stay[] = {&c, &r, &idle[0]}; /* those with a HELLO are served on */
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq(reply(stay[i], send_msg(stay[i], COOP_MSG_STATS, &m, NULL, 0)),
                      COOP_MSG_STATS_REPLY);
  if (two) child_ok(kid);
  close(pfd[0]);
  if (!two) close(pfd[1]);
  conn_close(&idle[0]);
  conn_close(&r);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A process in a user namespace reaches the socket with an id of its
 * owner's /etc/subuid range, each id a uid of its own: one user with a
 * range of 65536 ids had 65536 times every per-uid bound. Now the ids of a
 * range are one user, the range's first id (docs/daemon.md, "Users with
 * ranges of ids"): with 2 connections a user, the range's first id holds
 * 2 and its last id is refused, and so is an id of the owner's second
 * range (each range a user of its own made a user with N ranges N + 1
 * users); the id past the range is a user of its own, as is an id of
 * another owner's range. A line that is no range is skipped, logged. */
START_TEST(a_users_subordinate_ids_are_one_user) {
  if (geteuid() != 0) {
    fprintf(stderr, "a_users_subordinate_ids_are_one_user: not root, skipped\n");
    return;
  }
  char dir[] = "/tmp/coop-subids-XXXXXX", file[64], sets1[128],
       log[] = "/tmp/coop-subids-XXXXXX.log";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(chmod(dir, 0755), 0);
  snprintf(file, sizeof file, "%s/subuid", dir);
  file_write(file, "nobody:100000:65536\nnobody 200000 10\nnobody:300000:10\nalice:400000:10\n");
  ck_assert_int_eq(chmod(file, 0644), 0);
  snprintf(sets1, sizeof sets1, "limits.subordinate_ids=%s", file);
  const char *const sets[] = {"limits.max_clients_per_uid=2", sets1, NULL};
  log_temp(log);
  struct daemon_proc d = {.log = log};
  daemon_start_listening(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  daemon_open_to_all(&d);
  int ready[2], hold[2];
  ck_assert_int_eq(pipe(ready), 0);
  ck_assert_int_eq(pipe(hold), 0);
  pid_t first = fork();
  ck_assert_int_ge(first, 0);
  if (first == 0) { /* the range's first id: its two connections */
    close(hold[1]);
    if (setgroups(0, NULL) || setgid(100000) || setuid(100000)) _exit(3);
    struct conn a, b;
    open_hello(&a, &d);
    open_hello(&b, &d);
    char x = 1;
    if (write(ready[1], &x, 1) != 1) _exit(4);
    if (read(hold[0], &x, 1) < 0) _exit(5); /* EOF: the test is done */
    _exit(0);
  }
  close(hold[0]);
  char x;
  ck_assert_msg(read(ready[0], &x, 1) == 1, "the range's first id could not connect twice");
  /* the range's last id and an id of the owner's second range: the same
   * user, over its 2 */
  static const uid_t over[] = {165535, 300005};
  for (int i = 0; i < 2; i++) {
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
      if (setgroups(0, NULL) || setgid(over[i]) || setuid(over[i])) _exit(3);
      struct conn e;
      if (conn_open(&e, d.sock)) _exit(4);
      conn_timeout(&e, 10);
      expect_error_then_close(&e, COOP_ELIMIT, "[limits] max_clients_per_uid");
      _exit(0);
    }
    child_ok(kid);
  }
  /* past the range, and another owner's range: users of their own (as is
   * 200005: its line is no range) */
  static const uid_t own[] = {165536, 400001};
  for (int i = 0; i < 2; i++) {
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
      if (setgroups(0, NULL) || setgid(own[i]) || setuid(own[i])) _exit(3);
      struct conn e, f;
      open_hello(&e, &d);
      open_hello(&f, &d);
      _exit(0);
    }
    child_ok(kid);
  }
  close(hold[1]);
  child_ok(first);
  close(ready[0]);
  close(ready[1]);
  ck_assert_msg(log_has(log, "subuid:2: not OWNER:FIRST:COUNT: skipped"),
                "the line that is no range was not named");
  conn_close(&c);
  daemon_stop_ok(&d, log);
  unlink(log);
  unlink(file);
  rmdir(dir);
}
END_TEST

/* Four users with max_clients_per_uid idle connections each filled
 * max_clients, and everyone else was locked out, root included (no idle
 * timeout after HELLO). Now a connection of a user holding fewer gets in:
 * the user holding the most (at least two more) loses the connection that
 * costs it least, the one quiet longest (docs/daemon.md, "Connections").
 * Here max_clients = 6: root holds 4 (A with a job in flight, then D, C, B
 * in that order of activity), nobody 2; uid 65533 comes three times. */
START_TEST(crowded_out_users_still_get_in) {
  static const char *const sets[] = {"server.max_clients=6", "limits.max_clients_per_uid=4", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn a, b, c, dd;
  open_hello(&a, &d);
  if (!other_user_possible(&d, "crowded_out_users_still_get_in")) {
    conn_close(&a);
    ck_assert_int_eq(daemon_stop(&d), 0);
    return;
  }
  static uint32_t data[64];
  uint64_t job = sweep_submit(&a, data, 64, 100000000u, 1, -1); /* runs until cancelled */
  ck_assert_uint_ne(job, 0);
  struct conn *order[] = {&dd, &c, &b}; /* quiet longest first */
  for (int i = 0; i < 3; i++) {
    msleep(30); /* the loop's clock counts ms */
    open_hello(order[i], &d);
    conn_timeout(order[i], 10);
  }
  int ready[2], go_nobody[2], go[2], done[2];
  ck_assert_int_eq(pipe(ready), 0);
  ck_assert_int_eq(pipe(go_nobody), 0);
  pid_t nobody = fork();
  ck_assert_int_ge(nobody, 0);
  if (nobody == 0) { /* two connections, served throughout */
    become_nobody();
    struct conn e, f;
    open_hello(&e, &d);
    open_hello(&f, &d);
    char x = 1;
    if (write(ready[1], &x, 1) != 1) _exit(4);
    if (read(go_nobody[0], &x, 1) != 1) _exit(5);
    union coop_msg m;
    memset(&m, 0, sizeof m);
    if (reply(&e, send_msg(&e, COOP_MSG_STATS, &m, NULL, 0)) != COOP_MSG_STATS_REPLY) _exit(6);
    if (reply(&f, send_msg(&f, COOP_MSG_STATS, &m, NULL, 0)) != COOP_MSG_STATS_REPLY) _exit(7);
    _exit(0);
  }
  char x;
  close(ready[1]);
  ck_assert_msg(read(ready[0], &x, 1) == 1, "nobody's connections failed");
  /* made after nobody's fork: a write end it held would keep a read here
   * from ever seeing the newcomer's end */
  ck_assert_int_eq(pipe(go), 0);
  ck_assert_int_eq(pipe(done), 0);
  pid_t newcomer = fork(); /* tells by `done` when each connection is in */
  ck_assert_int_ge(newcomer, 0);
  if (newcomer == 0) {
    if (setgid(65533) || setuid(65533)) _exit(3);
    static struct conn n[3];
    for (int i = 0; i < 3; i++) {
      if (read(go[0], &x, 1) != 1) _exit(4);
      if (conn_open(&n[i], d.sock)) _exit(5);
      conn_timeout(&n[i], 10);
      if (i == 2) { /* 2 each now: nobody holds more; closed with no frame */
        if (read_frame(&n[i])) _exit(6);
      } else { /* a HELLO sent without ck_assert: the parent tells of a refusal */
        union coop_msg m;
        memset(&m, 0, sizeof m);
        m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
        struct coop_wire_buf w;
        coop_wire_buf_init(&w);
        if (coop_wire_encode(&w, COOP_MSG_HELLO, 1, &m) ||
            coop_wire_send(n[i].fd, w.p, w.len, NULL, 0, NULL) || !read_frame(&n[i]) ||
            n[i].h.type != COOP_MSG_WELCOME)
          _exit(7);
        coop_wire_buf_free(&w);
      }
      if (write(done[1], &x, 1) != 1) _exit(8);
    }
    _exit(0);
  }
  close(done[1]);
  const char *why = "closed to make room for another user";
  ck_assert_int_eq(write(go[1], &x, 1), 1);
  ck_assert_msg(read(done[0], &x, 1) == 1, "uid 65533 did not get in with max_clients reached");
  expect_error_then_close(&dd, COOP_ELIMIT, why); /* root's quietest idle one */
  conn_close(&dd);
  ck_assert_int_eq(write(go[1], &x, 1), 1);
  ck_assert_msg(read(done[0], &x, 1) == 1, "uid 65533's second connection did not get in");
  expect_error_then_close(&c, COOP_ELIMIT, "held 3 of them");
  conn_close(&c);
  ck_assert_int_eq(write(go[1], &x, 1), 1);
  ck_assert_msg(read(done[0], &x, 1) == 1, "uid 65533's third connection was not refused");
  child_ok(newcomer);
  /* root's busy connection and its most recent one are served on, and so
   * is nobody */
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_uint_eq(reply(&b, send_msg(&b, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  uint8_t st = job_state(&a, job);
  ck_assert_msg(st == COOP_JOB_RUNNING || st == COOP_JOB_QUEUED, "the sweep: %s",
                coop_job_state_name(st));
  ck_assert_int_eq(write(go_nobody[1], &x, 1), 1);
  child_ok(nobody);
  memset(&m, 0, sizeof m);
  m.job.job = job;
  ck_assert_uint_eq(reply(&a, send_msg(&a, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(&a, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  for (int i = 0; i < 2; i++) close(go[i]), close(go_nobody[i]), close(ready[i]);
  close(done[0]);
  conn_close(&b);
  conn_close(&a);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Out of descriptors: at `ulimit -n 1024`, with every descriptor taken, accept
 * failed with EMFILE and coopd busy-looped (475k log lines in 7 s) while
 * new clients hung. Now the spare descriptor is given up to accept each
 * one, tell it why and close it: the client hears at once, coopd stays
 * idle, the log says it once. coopd's limit is lowered to what it holds
 * plus a few (prlimit), which those few connections then take. */
/* Hardening: a coopd started from a shell kept the shell's soft limit of
 * descriptors (1024 on Debian, the hard one 524288), while one user's
 * [limits] let it hold thousands (connections, descriptors queued with
 * frames, jobs' buffers): one user could leave none for the others. coopd
 * now raises its soft limit to the hard one at start (here 256 -> the
 * test's hard limit) and says so. */
START_TEST(a_shells_descriptor_limit_is_raised) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  ck_assert_uint_gt(rl.rlim_max, 256); /* else there is nothing to raise */
  rlim_t hard = rl.rlim_max;
  rl.rlim_cur = 256; /* this test's process and the coopd it starts */
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  char logp[] = "/tmp/coopd-nofile-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  const char *sets[] = {"log.level=info", NULL};
  daemon_start_listening(&d, sets);
  struct rlimit now;
  ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, NULL, &now), 0);
  ck_assert_uint_eq(now.rlim_cur, hard);
  ck_assert_uint_eq(now.rlim_max, hard);
  ck_assert_int_eq(daemon_stop(&d), 0);
  ck_assert_int_eq(log_count(logp, "descriptors: soft limit 256 raised to the hard limit"), 1);
  unlink(logp);
}
END_TEST

START_TEST(out_of_descriptors_sheds_connections) {
  char logp[] = "/tmp/coopd-emfile-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  daemon_start_listening(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  char fdir[64];
  snprintf(fdir, sizeof fdir, "/proc/%d/fd", (int)d.pid);
  DIR *dir = opendir(fdir);
  ck_assert_ptr_nonnull(dir);
  static char used[4096]; /* coopd's descriptor numbers (inherited ones may sit high) */
  memset(used, 0, sizeof used);
  for (struct dirent *e; (e = readdir(dir));)
    if (e->d_name[0] != '.' && atoi(e->d_name) < (int)sizeof used) used[atoi(e->d_name)] = 1;
  closedir(dir);
  /* the lowest limit that leaves coopd exactly `room` numbers to open */
  const int room = 4;
  int lim = 0;
  for (int free_below = 0; free_below < room; lim++) free_below += !used[lim];
  struct rlimit rl, was;
  ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, NULL, &was), 0);
  rl.rlim_cur = (rlim_t)lim;
  rl.rlim_max = was.rlim_max;
  ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &rl, NULL), 0);
  /* Clients take what is left (room, unless coopd's own descriptors moved
   * meanwhile: its device process starts beside the loop), until one is
   * told that none is; then two more. */
  struct conn fill[14];
  int filled = 0, shed = 0;
  long cpu0 = cpu_ms(d.pid);
  int64_t t0 = now_ms();
  while (shed < 3) {
    struct conn x;
    ck_assert_int_eq(conn_open(&x, d.sock), 0);
    conn_timeout(&x, 10);
    union coop_msg m;
    memset(&m, 0, sizeof m);
    m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
    snprintf(m.hello.name, sizeof m.hello.name, "fill");
    struct coop_wire_buf b;
    coop_wire_buf_init(&b);
    ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_HELLO, ++x.seq, &m), 0);
    ssize_t sent = send(x.fd, b.p, b.len, MSG_NOSIGNAL); /* a refused one may be closed */
    (void)sent;
    coop_wire_buf_free(&b);
    ck_assert_msg(read_frame(&x), "no reply within 10 s (%d clients in, %d told)", filled, shed);
    if (x.h.type == COOP_MSG_WELCOME) {
      ck_assert_msg(shed == 0 && filled < 14, "%d clients in, %d told", filled, shed);
      fill[filled++] = x;
      continue;
    }
    ck_assert_uint_eq(x.h.type, COOP_MSG_ERROR);
    ck_assert_int_eq(x.m.error.code, COOP_ELIMIT);
    assert_has(x.m.error.message, "out of file descriptors");
    ck_assert_int_eq(read_frame(&x), 0);
    conn_close(&x);
    shed++;
  }
  ck_assert_int_ge(filled, 1);
  ck_assert_int_lt(now_ms() - t0, 5000);
  msleep(1000);
  long spent = cpu_ms(d.pid) - cpu0;
  ck_assert_msg(spent < 500, "coopd used %ld ms of CPU in about a second at EMFILE", spent);
  /* a round trip: coopd is serving, and has logged what it had to */
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  FILE *f = fopen(logp, "r");
  ck_assert_ptr_nonnull(f);
  char line[1024];
  int lines = 0;
  while (fgets(line, sizeof line, f)) {
    lines += strstr(line, "accept") != NULL;
  }
  fclose(f);
  ck_assert_msg(lines == 1, "%d log lines about accept (want one for three clients)", lines);
  ck_assert(log_has(logp, "Too many open files"));
  /* one leaves: the next one gets in */
  conn_close(&fill[0]);
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  {
    ck_assert_int_eq(conn_open(&fill[0], d.sock), 0);
    union coop_msg hm;
    memset(&hm, 0, sizeof hm);
    hm.hello.min_version = hm.hello.max_version = COOP_WIRE_VERSION;
    send_msg(&fill[0], COOP_MSG_HELLO, &hm, NULL, 0);
    uint16_t t = read_frame(&fill[0]) ? fill[0].h.type : 0;
    if (t != COOP_MSG_WELCOME) log_print(logp);
    ck_assert_msg(t == COOP_MSG_WELCOME, "after one left: type %u, %s (limit %d, %d in)", t,
                  t == COOP_MSG_ERROR ? fill[0].m.error.message : "", lim, filled);
  }
  for (int i = 0; i < filled; i++) conn_close(&fill[i]);
  conn_close(&c);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

static void cancel_job(struct conn *c, uint64_t job) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_CANCEL, &m, NULL, 0)), COOP_MSG_OK);
  ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c->m.result.state, COOP_JOB_CANCELLED);
}

/* Live jobs per uid: 64 DETACHED jobs per connection, conn_reconnect and
 * repeat: the per-client limit escaped across connections (384 unfinished
 * jobs of one uid, every task slot full). Now max_jobs_per_uid counts a
 * user's live jobs over all its connections, detached ones included; other
 * users are not affected. */
START_TEST(live_jobs_per_uid_across_connections) {
  const char *sets[] = {"limits.max_jobs_per_uid=4", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn a, b;
  open_hello(&a, &d);
  int two = other_user_possible(&d, "live_jobs_per_uid_across_connections");
  uint64_t ids[4];
  for (int i = 0; i < 3; i++) ck_assert_uint_ne(ids[i] = detached_sweep(&a), 0);
  conn_close(&a);
  open_hello(&a, &d); /* a new connection: the three still count */
  ck_assert_uint_ne(ids[3] = detached_sweep(&a), 0);
  expect_refusal(&a, detached_sweep(&a), COOP_ELIMIT, "[limits] max_jobs_per_uid");
  static uint32_t data[64];
  expect_refusal(&a, sweep_submit(&a, data, 64, 1, 1, -1), COOP_ELIMIT, "per user");
  open_hello(&b, &d);
  union coop_msg m;
  render_init(&m, 1);
  expect_refusal(&b, submit(&b, &m, NULL, 0), COOP_ELIMIT, "max_jobs_per_uid");
  if (two) {
    pid_t kid = fork();
    if (kid == 0) { /* another user runs as usual */
      become_nobody();
      struct conn o;
      open_hello(&o, &d);
      render_check(&o, 1, 0, 0);
      _exit(0);
    }
    child_ok(kid);
  }
  cancel_job(&b, ids[0]); /* one fewer live: room for one */
  render_check(&b, 1, 0, 0);
  for (int i = 1; i < 4; i++) cancel_job(&b, ids[i]);
  conn_close(&a);
  conn_close(&b);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Kept results per uid: another user submitted 1100 DETACHED jobs and
 * disconnected, and a victim's finished detached result was evicted (the 1024
 * cap was global). Now a user keeps at most max_detached_kept_per_uid, and
 * the global max_detached_kept drops only the oldest of the user whose job
 * joined. Here both are 2: the victim keeps its one, the attacker (5 jobs,
 * finishing without a client) keeps only its newest. */
START_TEST(detached_results_are_kept_per_uid) {
  const char *sets[] = {"limits.max_detached_kept_per_uid=2", "limits.max_detached_kept=2", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  int two = other_user_possible(&d, "detached_results_are_kept_per_uid");
  union coop_msg m;
  render_init(&m, 1);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  uint64_t victim = run_done(&c, &m);
  conn_close(&c); /* its result is kept */
  uint64_t theirs[5] = {0};
  if (two) {
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t kid = fork();
    if (kid == 0) {
      become_nobody();
      struct conn o;
      open_hello(&o, &d);
      union coop_msg x;
      render_sized(&x, 4, 4, 1);
      for (int i = 0; i < 5; i++)
        if (!(theirs[i] = submit(&o, &x, NULL, 0))) _exit(4);
      if (write(pfd[1], theirs, sizeof theirs) != sizeof theirs) _exit(5);
      _exit(0); /* gone before they finish */
    }
    child_ok(kid);
    ck_assert_int_eq(read(pfd[0], theirs, sizeof theirs), (ssize_t)sizeof theirs);
    close(pfd[0]);
    close(pfd[1]);
  }
  open_hello(&c, &d);
  wait_idle(&c);
  /* the victim's result, whole */
  ck_assert_uint_eq(wait_job(&c, victim, 1000), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  float a[RN * RN], b[RN * RN], want[RN * RN], got[RN * RN];
  render_inputs(a, b);
  matmul_ref(a, b, want);
  ck_assert_uint_eq(c.m.result.nbuf, 1);
  memcpy(got, c.m.result.bufs[0].data, sizeof got);
  for (int i = 0; i < RN * RN; i++) ck_assert_float_eq_tol(got[i], want[i], 1e-3f);
  /* the attacker's: its newest only (root sees every job) */
  for (int i = 0; two && i < 5; i++) {
    uint16_t t = wait_job(&c, theirs[i], 1000);
    ck_assert_uint_eq(t, i == 4 ? COOP_MSG_RESULT : COOP_MSG_ERROR);
    if (i < 4) ck_assert_int_eq(c.m.error.code, COOP_ENOJOB);
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Users at their bound fill max_detached_kept together: two users keep 2
 * each (max_detached_kept_per_uid 2, max_detached_kept 4), and a third
 * user's one detached result, kept as its client goes, was dropped at once:
 * the global bound dropped the oldest of the user whose job joined, however
 * few it kept. Now it drops the oldest of a user keeping more than that one
 * (the user keeping the most): the third keeps its result, one of the two
 * loses its oldest. */
START_TEST(full_detached_keeps_leave_a_new_user_room) {
  const char *sets[] = {"limits.max_detached_kept_per_uid=2", "limits.max_detached_kept=4", NULL};
  struct daemon_proc d = {.log = NULL};
  daemon_start_listening(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  if (!other_user_possible(&d, "full_detached_keeps_leave_a_new_user_room")) {
    conn_close(&c);
    ck_assert_int_eq(daemon_stop(&d), 0);
    return;
  }
  uint64_t theirs[2][2];
  for (int u = 0; u < 2; u++) {
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t kid = fork();
    if (kid == 0) {
      if (setgid(65533 + u) || setuid(65533 + u)) _exit(3);
      struct conn o;
      open_hello(&o, &d);
      union coop_msg x;
      render_init(&x, 1);
      x.submit.flags |= COOP_SUBMIT_DETACHED;
      for (int i = 0; i < 2; i++) theirs[u][i] = run_done(&o, &x);
      if (write(pfd[1], theirs[u], sizeof theirs[u]) != sizeof theirs[u]) _exit(5);
      _exit(0); /* gone: both results kept */
    }
    child_ok(kid);
    ck_assert_int_eq(read(pfd[0], theirs[u], sizeof theirs[u]), (ssize_t)sizeof theirs[u]);
    close(pfd[0]);
    close(pfd[1]);
  }
  union coop_msg m;
  render_init(&m, 1);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  uint64_t mine = run_done(&c, &m);
  conn_close(&c); /* root's one result joins the four kept */
  open_hello(&c, &d);
  ck_assert_uint_eq(wait_job(&c, mine, 1000), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  int gone = 0; /* root sees every job */
  for (int u = 0; u < 2; u++)
    for (int i = 0; i < 2; i++)
      if (wait_job(&c, theirs[u][i], 1000) == COOP_MSG_ERROR) {
        ck_assert_int_eq(c.m.error.code, COOP_ENOJOB);
        ck_assert_int_eq(i, 0); /* the oldest of theirs */
        gone++;
      }
  ck_assert_int_eq(gone, 1);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A user's kept results read by WAITs that wait for their reader (pinned:
 * dropped at their end) count as kept until then. max_detached_kept 2:
 * root keeps 2 of 256 KiB, a connection of root's WAITs for them and
 * reads nothing, and four users each keep 1 as their clients go. The
 * global bound dropped root's (the user keeping the most), and once those
 * were all pinned and dropping stopped at them: every later user's joined
 * with nothing dropped, 4 results kept of 2 once the WAITs ended. Now the
 * joining user's own go there, as before: 2 at most. */
START_TEST(pinned_keeps_leave_the_bound_in_force) {
  const char *sets[] = {"limits.max_detached_kept_per_uid=2", "limits.max_detached_kept=2", NULL};
  struct daemon_proc d = {.log = NULL};
  daemon_start_listening(&d, sets);
  struct conn c, r;
  open_hello(&c, &d);
  if (!other_user_possible(&d, "pinned_keeps_leave_the_bound_in_force")) {
    conn_close(&c);
    ck_assert_int_eq(daemon_stop(&d), 0);
    return;
  }
  union coop_msg m;
  render_sized(&m, 4, 256u << 10, 1);
  uint64_t mine[2] = {run_done(&c, &m), run_done(&c, &m)};
  conn_close(&c);
  open_hello(&r, &d); /* root's reader that reads nothing: its WAITs wait */
  memset(&m, 0, sizeof m);
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  for (int k = 0; k < 16; k++) {
    m.job.job = mine[k % 2];
    send_msg(&r, COOP_MSG_WAIT, &m, NULL, 0);
  }
  open_hello(&c, &d);
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  enum { U = 4 };
  uint64_t theirs[U];
  for (int u = 0; u < U; u++) {
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t kid = fork();
    if (kid == 0) {
      if (setgid(65530 + u) || setuid(65530 + u)) _exit(3);
      struct conn o;
      open_hello(&o, &d);
      union coop_msg x;
      render_sized(&x, 4, 4, 1);
      uint64_t j = run_done(&o, &x);
      if (write(pfd[1], &j, sizeof j) != sizeof j) _exit(5);
      _exit(0); /* gone: its result kept */
    }
    child_ok(kid);
    ck_assert_int_eq(read(pfd[0], &theirs[u], sizeof theirs[u]), (ssize_t)sizeof theirs[u]);
    close(pfd[0]);
    close(pfd[1]);
    ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  }
  conn_close(&r); /* the WAITs end: root's pinned results go */
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATS, &m, NULL, 0)), COOP_MSG_STATS_REPLY);
  int kept = 0; /* root sees every job */
  for (int u = 0; u < U; u++) {
    uint16_t t = wait_job(&c, theirs[u], 1000);
    if (t == COOP_MSG_ERROR) ck_assert_int_eq(c.m.error.code, COOP_ENOJOB);
    kept += t == COOP_MSG_RESULT;
  }
  for (int i = 0; i < 2; i++) kept += wait_job(&c, mine[i], 1000) == COOP_MSG_RESULT;
  ck_assert_msg(kept <= 2, "%d detached results kept, max_detached_kept is 2", kept);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Kept jobs waited for: DETACHED jobs waited for before the disconnect were
 * never capped (2560 kept, +664 MB with no client connected). They are kept
 * within max_detached_kept_per_uid (2 here) like the others: the oldest
 * go. */
START_TEST(detached_jobs_waited_for_are_capped) {
  const char *sets[] = {"limits.max_detached_kept_per_uid=2", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  render_sized(&m, 4, 4, 1);
  uint64_t ids[4];
  for (int i = 0; i < 4; i++) ids[i] = run_done(&c, &m);
  conn_close(&c);
  open_hello(&c, &d);
  for (int i = 0; i < 4; i++) {
    uint16_t t = wait_job(&c, ids[i], 1000);
    ck_assert_uint_eq(t, i < 2 ? COOP_MSG_ERROR : COOP_MSG_RESULT);
    if (i < 2) ck_assert_int_eq(c.m.error.code, COOP_ENOJOB);
  }
  memset(&m, 0, sizeof m); /* and STATUS lists just those two */
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATUS, &m, NULL, 0)), COOP_MSG_STATUS_REPLY);
  ck_assert_uint_eq(c.m.status_reply.n, 2);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Inline bytes per uid: finished jobs' inline bytes counted toward no
 * limit. Now a user's jobs in flight and the inline results kept for it
 * count toward max_bytes_per_uid (2 MiB here), over all its connections;
 * and a finished job no longer holds its inline IN copies. Each render
 * sends 2 x 256 KiB IN and keeps 256 KiB OUT: six fit (6 x 256 KiB kept +
 * 768 KiB in flight = 2 MiB), a seventh does not. Had the IN copies
 * stayed, the third would not. */
START_TEST(inline_bytes_count_per_uid) {
  const char *sets[] = {"limits.max_bytes_per_uid=2M", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn a, b;
  open_hello(&a, &d);
  open_hello(&b, &d);
  int two = other_user_possible(&d, "inline_bytes_count_per_uid");
  union coop_msg m;
  render_sized(&m, 256u << 10, 256u << 10, 0);
  for (int i = 0; i < 6; i++) run_done(&a, &m);
  expect_refusal(&a, submit(&a, &m, NULL, 0), COOP_ELIMIT, "[limits] max_bytes_per_uid");
  expect_refusal(&b, submit(&b, &m, NULL, 0), COOP_ELIMIT, "max_bytes_per_uid");
  if (two) {
    pid_t kid = fork();
    if (kid == 0) { /* another user's bytes are its own */
      become_nobody();
      struct conn o;
      open_hello(&o, &d);
      run_done(&o, &m);
      _exit(0);
    }
    child_ok(kid);
  }
  conn_close(&a); /* its results go: room again */
  union coop_msg s;
  memset(&s, 0, sizeof s);
  ck_assert_uint_eq(reply(&b, send_msg(&b, COOP_MSG_STATS, &s, NULL, 0)), COOP_MSG_STATS_REPLY);
  run_done(&b, &m);
  conn_close(&b);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Inline IN copies freed: 8 connections x 256 finished renders with
 * 3 x 256 KiB inline buffers took 1.58 GB, the IN copies kept with every
 * finished job. 120 finished renders with 2 x 256 KiB inline IN each (60
 * MiB of copies), all still kept for WAIT, now leave coopd's size as it
 * was. Defaults throughout. */
START_TEST(finished_jobs_free_inline_inputs) {
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
#ifdef __SANITIZE_ADDRESS__
  /* ASan keeps freed memory in quarantine, where coopd's size would count
   * it: this coopd reuses what it frees at once */
  const char *was = getenv("ASAN_OPTIONS");
  char *saved = was ? strdup(was) : NULL, opts[512];
  snprintf(opts, sizeof opts, "%s%squarantine_size_mb=0", was ? was : "", was && *was ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
  daemon_start_listening(&d, NULL);
#ifdef __SANITIZE_ADDRESS__
  if (saved)
    setenv("ASAN_OPTIONS", saved, 1);
  else
    unsetenv("ASAN_OPTIONS");
  free(saved);
#endif
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  render_sized(&m, 256u << 10, 4, 0);
  for (int i = 0; i < 8; i++) run_done(&c, &m); /* the allocator's pools settle */
  long before = proc_kib(d.pid, "VmRSS");
  uint64_t first = run_done(&c, &m);
  for (int i = 1; i < 120; i++) run_done(&c, &m);
  long after = proc_kib(d.pid, "VmRSS");
  ck_assert_msg(after - before < 24 * 1024,
                "coopd grew by %ld KiB with 120 finished renders (60 MiB of inline inputs)",
                after - before);
  ck_assert_uint_eq(wait_job(&c, first, 1000), COOP_MSG_RESULT); /* still kept */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* run_done, once coopd has seen a close that frees the room m needs:
 * while it is refused with ELIMIT, again (2 s at most). */
static uint64_t run_done_when_room(struct conn *c, const union coop_msg *m) {
  uint64_t j = 0;
  for (int i = 0; i < 100 && !(j = submit(c, m, NULL, 0)); i++) {
    ck_assert_int_eq(c->m.error.code, COOP_ELIMIT);
    msleep(20);
  }
  ck_assert_msg(j != 0, "refused: %s", c->m.error.message);
  ck_assert_uint_eq(wait_job(c, j, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c->m.result.state, COOP_JOB_DONE);
  return j;
}

/* A periodic render over tiny inline buffers (4 bytes each), n = 1. */
static void periodic_tiny(union coop_msg *m, uint32_t period_us, uint32_t count) {
  render_sized(m, 4, 4, 0);
  m->submit.period_us = period_us;
  m->submit.count = count;
}

/* The instance records of a periodic job (64 bytes each in coopd, 4 MiB
 * for 65536 instances; RESULT carries every one) counted toward no limit:
 * finished renders of 65536 instances kept about 2.3 MB each. Now they
 * count toward max_bytes_per_uid (1000 KiB here) like the buffers: from
 * the SUBMIT on, the records it may need; once finished, those of the
 * instances it ran, none lost. A 768 KiB render fits beside 4096 kept
 * records (256 KiB) only once their connection closes. */
START_TEST(periodic_records_count_per_uid) {
  const char *sets[] = {"limits.max_bytes_per_uid=1000K", NULL};
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, sets);
  struct conn a, b;
  open_hello(&a, &d);
  open_hello(&b, &d);
  union coop_msg m, big;
  periodic_tiny(&m, 100, COOP_WIRE_MAX_INST); /* 4 MiB of records */
  expect_refusal(&a, submit(&a, &m, NULL, 0), COOP_ELIMIT, "[limits] max_bytes_per_uid");
  assert_has(a.m.error.message, "64 bytes per instance");

  periodic_tiny(&m, 100, 4096);
  uint64_t j = run_done(&a, &m);
  ck_assert_uint_eq(a.m.result.ninst, 4096);
  render_sized(&big, 256u << 10, 256u << 10, 0); /* 768 KiB in flight */
  expect_refusal(&b, submit(&b, &big, NULL, 0), COOP_ELIMIT, "max_bytes_per_uid");
  ck_assert_uint_eq(wait_job(&a, j, 1000), COOP_MSG_RESULT); /* kept whole */
  ck_assert_uint_eq(a.m.result.ninst, 4096);
  conn_close(&a); /* its results go: room again (once coopd has seen the close) */
  run_done_when_room(&b, &big);
  conn_close(&b);

  /* cancelled early, a job keeps the records of what it ran, not of the
   * 12000 instances it asked room for (750 KiB: with them kept, the 768
   * KiB render would not fit) */
  open_hello(&a, &d);
  periodic_tiny(&m, 1000, 12000);
  for (int i = 0; i < 100 && !(j = submit(&a, &m, NULL, 0)); i++) msleep(20); /* b's close */
  ck_assert_msg(j != 0, "refused: %s", a.m.error.message);
  msleep(100);
  cancel_job(&a, j);
  ck_assert_uint_lt(a.m.result.ninst, 1000);
  run_done(&a, &big);
  conn_close(&a);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A deadline of 1 us, which no instance meets, added 2000 misses in 2 s to
 * the device's coop_deadline_misses_total, the admin's count for every
 * user. Now a deadline below [jobs] min_deadline_us (100 us by default) is
 * refused, periodic or not; the floor itself, and no deadline, are taken,
 * and the refusals count as no miss. */
START_TEST(deadline_below_the_floor_is_refused) {
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  periodic_tiny(&m, 1000, 3);
  m.submit.deadline_us = 1;
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EINVAL, "[jobs] min_deadline_us = 100 us");
  render_sized(&m, 4, 4, 0); /* a single task */
  m.submit.deadline_us = 99;
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EINVAL, "min_deadline_us");
  m.submit.deadline_us = 100;
  run_done(&c, &m);
  m.submit.deadline_us = 0;
  run_done(&c, &m);
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.submitted, 2);
  ck_assert_uint_eq(st.met[0].deadline_instances, 1);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A periodic job keeps what it was given between its instances (its
 * buffers' copies in the arena, a cooperative slot, the megakernel awake),
 * and only each instance was bounded: a DETACHED one of a 71-minute
 * period and 65536 instances held them for years doing nothing (another
 * user's render waited for room until root cancelled it; another user's
 * sweep for a slot; the megakernel never parked). Now a period above
 * [jobs] max_period_ms (1 s) and a series spanning more than
 * max_series_ms (1 h) from its first instance to its last are refused;
 * a series within both runs. */
START_TEST(a_periodic_jobs_span_is_bounded) {
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  periodic_tiny(&m, 0xffffffffu, 2);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EINVAL, "[jobs] max_period_ms = 1000 ms");
  periodic_tiny(&m, 1000000, 3602); /* 3601 s from the first to the last */
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EINVAL,
                 "3602 instances every 1000000 us last 3601 s; [jobs] max_series_ms allows 3600 s");
  periodic_tiny(&m, 1000000, 0);
  m.submit.duration_ms = 4000000;
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EINVAL, "max_series_ms");
  periodic_tiny(&m, 200000, 3); /* within both: runs */
  run_done(&c, &m);
  ck_assert_uint_eq(c.m.result.ninst, 3);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* What another user's doing cost coopd's loop: `what` took `beside`
 * ticks beside `by`, `alone` without; within half again plus 15 ticks
 * (10 ms each) of it, said either way. */
static void loop_cost_within(const char *what, const char *by, long alone, long beside) {
  fprintf(stderr, "coopd's loop for %s: %ld ticks alone, %ld beside %s\n", what, alone, beside, by);
  ck_assert_msg(beside < alone + 15 + alone / 2,
                "%s cost coopd's loop %ld ticks beside %s, %ld without", what, beside, by, alone);
}

/* The loop's ticks for `n` of root's tiny renders, one after another. */
static long renders_ticks(pid_t coopd, struct conn *c, int n) {
  union coop_msg m;
  render_sized(&m, 4, 4, 0);
  long t0 = (long)thread_ticks(coopd, coopd); /* coopd's loop: its main thread */
  for (int i = 0; i < n; i++) run_done(c, &m);
  return (long)thread_ticks(coopd, coopd) - t0;
}

/* nobody's 16 connections with 4096 WAITs each pending on its own
 * periodic job (a tiny render once a second); the child stays until
 * killed, once it has written 1 on *ready. */
static pid_t nobody_waits(const struct daemon_proc *d) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) _exit(3);
    static struct conn c[16];
    union coop_msg m;
    periodic_tiny(&m, 1000000, 3600);
    for (int i = 0; i < 16; i++) open_hello(&c[i], d);
    uint64_t job = submit(&c[0], &m, NULL, 0);
    if (!job) _exit(4);
    union coop_msg w;
    memset(&w, 0, sizeof w);
    w.job.job = job;
    w.job.timeout_ms = COOP_WAIT_FOREVER;
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 4096; k++) send_msg(&c[i], COOP_MSG_WAIT, &w, NULL, 0);
    /* every WAIT read: a STATS on each connection is answered after them */
    for (int i = 0; i < 16; i++) reply(&c[i], send_msg(&c[i], COOP_MSG_STATS, NULL, NULL, 0));
    char one = 1;
    if (write(pfd[1], &one, 1) != 1) _exit(5);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  char one = 0;
  ck_assert_int_eq(read(pfd[0], &one, 1), 1);
  close(pfd[0]);
  return kid;
}

/* A job's end walked every session's pending WAITs, another user's too,
 * although a WAIT is only of a job its user may see: nobody's 65536
 * WAITs (16 connections of 4096) on its own idle job cost coopd's loop
 * 0.6-1.2 ms at each of root's job ends. Now a session that may not see
 * the job is passed over: root's 400 renders cost the loop about what
 * they cost without nobody's WAITs. */
START_TEST(another_users_waits_cost_no_job_end) {
  if (geteuid() != 0) return;           /* needs a second uid: CI runs as root */
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  long alone = renders_ticks(d.pid, &c, 400);
  pid_t kid = nobody_waits(&d);
  long beside = renders_ticks(d.pid, &c, 400);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  loop_cost_within("root's 400 renders", "another user's 65536 WAITs", alone, beside);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* One of nobody_keeps' connections, in a thread of its own: `type` with
 * job 0 (STATUS: every job of its user's), 1024 in a write, the replies
 * read before the next write, until the process is killed. */
struct nobody_flood {
  struct conn *c;
  uint16_t type;
};

static void *nobody_flood_main(void *arg) {
  const struct nobody_flood *f = arg;
  union coop_msg m;
  memset(&m, 0, sizeof m);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  for (;;) {
    b.len = 0;
    for (int i = 0; i < 1024; i++)
      if (coop_wire_encode(&b, f->type, ++f->c->seq, &m)) _exit(7);
    send_raw(f->c, b.p, b.len, NULL, 0);
    for (int i = 0; i < 1024; i++)
      if (!read_frame(f->c)) _exit(8);
  }
  return NULL;
}

/* nobody's `conns` connections keep `per` finished renders each (tiny,
 * run 32 at a time), then each floods `flood` (0: none: nobody_flood);
 * the child stays until killed. */
static pid_t nobody_keeps(const struct daemon_proc *d, int conns, int per, uint16_t flood) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) _exit(3);
    static struct conn c[16];
    union coop_msg m;
    render_sized(&m, 4, 4, 0);
    for (int i = 0; i < conns; i++) {
      open_hello(&c[i], d);
      for (int k = 0; k < per; k += 32) {
        uint32_t seqs[32];
        for (int q = 0; q < 32; q++) seqs[q] = send_msg(&c[i], COOP_MSG_SUBMIT, &m, NULL, 0);
        for (int q = 0; q < 32; q++) {
          if (reply(&c[i], seqs[q]) != COOP_MSG_ACCEPTED) _exit(4);
          seqs[q] = wait_send(&c[i], c[i].m.job.job, COOP_WAIT_FOREVER);
        }
        for (int q = 0; q < 32; q++) /* in the order the jobs end */
          if (!read_frame(&c[i]) || c[i].h.type != COOP_MSG_RESULT) _exit(5);
      }
    }
    static struct nobody_flood f[16];
    for (int i = 0; i < conns && flood; i++) {
      f[i] = (struct nobody_flood){&c[i], flood};
      pthread_t t;
      if (pthread_create(&t, NULL, nobody_flood_main, &f[i])) _exit(9);
    }
    char one = 1;
    if (write(pfd[1], &one, 1) != 1) _exit(6);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  char one = 0;
  ck_assert_int_eq(read(pfd[0], &one, 1), 1);
  close(pfd[0]);
  return kid;
}

/* The loop's ticks for n requests of one type (n a multiple of 1024),
 * sent 1024 in a write, their replies read before the next write. */
static long requests_ticks(pid_t coopd, struct conn *c, uint16_t type, const union coop_msg *m,
                           int n) {
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  long t0 = (long)thread_ticks(coopd, coopd);
  for (int k = 0; k < n; k += 1024) {
    b.len = 0;
    for (int i = 0; i < 1024; i++) ck_assert_int_eq(coop_wire_encode(&b, type, ++c->seq, m), 0);
    send_raw(c, b.p, b.len, NULL, 0);
    for (int i = 0; i < 1024; i++) ck_assert(read_frame(c));
  }
  coop_wire_buf_free(&b);
  return (long)thread_ticks(coopd, coopd) - t0;
}

/* A WAIT, STATUS or CANCEL found its job by a walk of every job, every
 * user's finished ones too: nobody kept 4096 (16 connections of 256)
 * and flooded STATUS of an id no one has from each, and root's STATUS
 * of its own job took 64 ms at the median, 0.14 ms alone (2.3 ms beside
 * the same flood without the kept jobs). Now a table of ids: root's
 * 20480 lookups cost the loop about what they cost before nobody kept
 * anything. */
START_TEST(a_lookup_walks_no_other_users_jobs) {
  if (geteuid() != 0) return;           /* needs a second uid: CI runs as root */
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = 1ull << 40; /* no one's: ENOJOB */
  long alone = requests_ticks(d.pid, &c, COOP_MSG_STATUS, &m, 20480);
  pid_t kid = nobody_keeps(&d, 8, 256, 0);
  long beside = requests_ticks(d.pid, &c, COOP_MSG_STATUS, &m, 20480);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  loop_cost_within("root's 20480 lookups", "another user's 2048 finished jobs", alone, beside);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* STATS counted the queued and running jobs, the instances of periodic
 * ones and the arena's use by three walks of every job, every user's
 * finished ones too: nobody kept 4096 and flooded STATS from 16
 * connections, and root's STATUS took 102 ms at the median (6.7 ms
 * beside the same flood without the kept jobs). Now the walks are of
 * the jobs not yet finished: root's STATS cost the loop about what they
 * cost before nobody kept anything, and count what they did. */
START_TEST(stats_walks_no_finished_jobs) {
  if (geteuid() != 0) return;           /* needs a second uid: CI runs as root */
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  long alone = requests_ticks(d.pid, &c, COOP_MSG_STATS, &m, 10240);
  pid_t kid = nobody_keeps(&d, 8, 256, 0);
  long beside = requests_ticks(d.pid, &c, COOP_MSG_STATS, &m, 10240);
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.queued + st.running, 0);
  ck_assert_uint_ge(st.done, 2048);
  periodic_tiny(&m, 1000000, 3600);
  uint64_t j = submit(&c, &m, NULL, 0); /* a live job is still counted */
  ck_assert_uint_ne(j, 0);
  st = stats(&c);
  ck_assert_uint_eq(st.queued + st.running, 1);
  cancel_ok(&c, j);
  ck_assert_uint_eq(wait_job(&c, j, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  loop_cost_within("root's 10240 STATS", "another user's 2048 finished jobs", alone, beside);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A connection answered 64 frames a turn whatever their replies cost:
 * nobody kept 4096 finished jobs (16 connections of 256) and each
 * connection flooded STATUS of all its user's jobs (1024 records, 80 KiB
 * a reply), and root's STATUS of its own job took 376 ms at the median
 * (0.08 ms alone). Now a connection's turn also ends once its replies
 * pass SESS_TURN_BYTES (64 KiB): beside 8 such connections root's STATUS
 * takes a few ms at the median. */
START_TEST(a_turns_replies_are_bounded) {
  if (geteuid() != 0) return;           /* needs a second uid: CI runs as root */
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  render_sized(&m, 4, 4, 0);
  uint64_t job = run_done(&c, &m);
  pid_t kid = nobody_keeps(&d, 8, 256, COOP_MSG_STATUS);
  msleep(200);
  int64_t took[41];
  long t0 = (long)thread_ticks(d.pid, d.pid);
  for (int i = 0; i < 41; i++) {
    int64_t at = coop__now_ns();
    memset(&m, 0, sizeof m);
    m.job.job = job;
    ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_STATUS, &m, NULL, 0)), COOP_MSG_STATUS_REPLY);
    took[i] = coop__now_ns() - at;
    msleep(10);
  }
  long ticks = (long)thread_ticks(d.pid, d.pid) - t0;
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  for (int i = 1; i < 41; i++) /* insertion sort: the median */
    for (int k = i; k > 0 && took[k] < took[k - 1]; k--) {
      int64_t x = took[k];
      took[k] = took[k - 1], took[k - 1] = x;
    }
  fprintf(stderr,
          "root's STATUS beside 8 floods of STATUS of 2048 jobs: %.2f ms median, %.2f worst "
          "(coopd's loop: %ld ticks)\n",
          took[20] / 1e6, took[40] / 1e6, ticks);
  ck_assert_msg(ticks > 20, "the flood did not keep coopd's loop busy: %ld ticks", ticks);
  ck_assert_msg(took[20] < 20000000, "root's STATUS took %.1f ms at the median", took[20] / 1e6);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A job's end walked every WAIT of every session that may see it to
 * find its own: nobody's 61440 WAITs (15 connections of 4096) on its idle
 * periodic job cost coopd's loop about 1 ms at each of nobody's own
 * renders' ends, and beside a 16th connection running renders root's
 * STATUS waited up to 1.2 s (0.1 ms at the median). Now each job keeps
 * its WAITs: nobody's 256 renders cost the loop about what root's cost. */
START_TEST(a_jobs_end_walks_only_its_own_waits) {
  if (geteuid() != 0) return;           /* needs a second uid: CI runs as root */
  struct daemon_proc d = {.log = NULL}; /* stderr as it is */
  daemon_start_listening(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  long alone = renders_ticks(d.pid, &c, 256);
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) _exit(3);
    static struct conn s[16];
    union coop_msg m;
    periodic_tiny(&m, 1000000, 3600);
    for (int i = 0; i < 16; i++) open_hello(&s[i], &d);
    uint64_t idle = submit(&s[0], &m, NULL, 0);
    if (!idle) _exit(4);
    for (int i = 0; i < 15; i++)
      for (int k = 0; k < 4096; k++) wait_send(&s[i], idle, COOP_WAIT_FOREVER);
    /* every WAIT read: a STATS on each connection is answered after them */
    for (int i = 0; i < 15; i++) reply(&s[i], send_msg(&s[i], COOP_MSG_STATS, NULL, NULL, 0));
    char one = 1;
    if (write(pfd[1], &one, 1) != 1) _exit(5);
    render_sized(&m, 4, 4, 0);
    for (int k = 0; k < 256; k++) {
      uint64_t j = submit(&s[15], &m, NULL, 0);
      if (!j || wait_job(&s[15], j, COOP_WAIT_FOREVER) != COOP_MSG_RESULT) _exit(6);
    }
    if (write(pfd[1], &one, 1) != 1) _exit(7);
    pause();
    _exit(0);
  }
  close(pfd[1]);
  char one = 0;
  ck_assert_int_eq(read(pfd[0], &one, 1), 1);
  long t0 = (long)thread_ticks(d.pid, d.pid);
  ck_assert_int_eq(read(pfd[0], &one, 1), 1);
  long beside = (long)thread_ticks(d.pid, d.pid) - t0;
  close(pfd[0]);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  /* alone: root's 256 renders; beside: nobody's, beside its own WAITs */
  loop_cost_within("256 renders", "their user's 61440 WAITs (nobody's; alone: root's)", alone,
                   beside);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

void daemon_limits_cases(Suite *s) {
  TCase *t = tcase_create("limits");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, unread_replies_stay_bounded);
  tcase_add_test(t, waits_of_a_finished_job_wait_for_the_reader);
  tcase_add_test(t, a_periodic_jobs_events_wait_for_the_reader);
  tcase_add_test(t, one_users_job_ends_are_bounded_in_the_log);
  tcase_add_test(t, deferred_results_outlive_the_trim);
  tcase_add_test(t, connections_per_uid_and_hello_deadline);
  tcase_add_test(t, crowded_out_users_still_get_in);
  tcase_add_test(t, a_users_subordinate_ids_are_one_user);
  tcase_add_test(t, out_of_descriptors_sheds_connections);
  tcase_add_test(t, a_shells_descriptor_limit_is_raised);
  tcase_add_test(t, live_jobs_per_uid_across_connections);
  tcase_add_test(t, detached_results_are_kept_per_uid);
  tcase_add_test(t, full_detached_keeps_leave_a_new_user_room);
  tcase_add_test(t, pinned_keeps_leave_the_bound_in_force);
  tcase_add_test(t, detached_jobs_waited_for_are_capped);
  tcase_add_test(t, inline_bytes_count_per_uid);
  tcase_add_test(t, finished_jobs_free_inline_inputs);
  tcase_add_test(t, periodic_records_count_per_uid);
  tcase_add_test(t, deadline_below_the_floor_is_refused);
  tcase_add_test(t, a_periodic_jobs_span_is_bounded);
  tcase_add_test(t, another_users_waits_cost_no_job_end);
  tcase_add_test(t, a_lookup_walks_no_other_users_jobs);
  tcase_add_test(t, stats_walks_no_finished_jobs);
  tcase_add_test(t, a_turns_replies_are_bounded);
  tcase_add_test(t, a_jobs_end_walks_only_its_own_waits);
  suite_add_tcase(s, t);
}
