/*
 * test_daemon_isolation.c: one user against another (docs/faults.md,
 * "Isolation"): the attacks, one test each (the isolation case); a hostile
 * bfs cancelled in time (cancel); [jobs] task_max_ms, and EHUNG that names
 * no other user's job (task_bound); cooperative slots shared between
 * users (slots).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "daemon_harness.h"

/* ---- isolation: the attacks of docs/faults.md "Isolation between users" ---- */

static const char *const iso_sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR,
                                       "jobs.gather_budget_ms=4000", "jobs.hang_ms=1500", NULL};

/* A sweep over n u32 whose values start at base + i, running about 4 s
 * (rounds calibrated once with a short run): the victim. */
static uint32_t victim_rounds;

static uint64_t victim_sweep(struct conn *c, uint32_t *data, uint32_t n, uint32_t base,
                             uint32_t groups) {
  uint64_t job;
  if (!victim_rounds) {
    static uint32_t probe[4096];
    job = sweep_submit(c, probe, n, 2000, groups, -1);
    ck_assert_uint_ne(job, 0);
    ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    double per = (double)c->m.result.t.exec_ns / 2000.0;
    double want = 4e9 / (per > 1.0 ? per : 1.0);
    victim_rounds = want > 1e8 ? 100000000u : want < 2000 ? 2000u : (uint32_t)want;
  }
  for (uint32_t i = 0; i < n; i++) data[i] = base + i;
  job = sweep_submit(c, data, n, victim_rounds, groups, -1);
  ck_assert_msg(job != 0, "victim refused: %s", c->m.error.message);
  return job;
}

static void victim_check(struct conn *c, uint64_t job, uint32_t n, uint32_t base) {
  ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  struct coop_msg_result *r = &c->m.result;
  ck_assert_msg(r->state == COOP_JOB_DONE, "victim: %s %s", coop_job_state_name(r->state),
                r->message);
  ck_assert_uint_eq(r->nbuf, 1);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t got; /* the wire's bytes need not be aligned for words */
    memcpy(&got, r->bufs[0].data + 4 * i, 4);
    if (got != base + i + victim_rounds) ck_abort_msg("victim word %u is %08x", i, got);
  }
}

/* coopd with iso_sets and a first client, c: the workers it has. */
static uint32_t iso_open(struct daemon_proc *d, struct conn *c) {
  daemon_start(d, iso_sets);
  open_hello(c, d);
  return c->m.welcome.workers;
}

/* The attacks' stage: a daemon with the test kernels, a victim's
 * connection running a sweep over vn words from 0x5ec00000 (running when
 * this returns), and an attacker's connection. The victim's job id. */
static uint64_t iso_stage(struct daemon_proc *d, struct conn *victim, struct conn *attacker,
                          uint32_t *vdata, uint32_t vn) {
  iso_open(d, victim);
  open_hello(attacker, d);
  uint64_t v = victim_sweep(victim, vdata, vn, 0x5ec00000u, 1);
  wait_running(victim, v);
  return v;
}

/* The victim's data intact after the attack, both clients gone, coopd
 * stopped cleanly: how each attack of iso_stage ends. */
static void iso_end(struct daemon_proc *d, struct conn *victim, struct conn *attacker, uint64_t v,
                    uint32_t vn) {
  victim_check(victim, v, vn, 0x5ec00000u);
  conn_close(attacker);
  conn_close(victim);
  ck_assert_int_eq(daemon_stop(d), 0);
}

/* oob (kernels/tests/daemon/oob.cl: views, no rule) over the attacker's 64-byte
 * src and an OUT buffer of out_bytes (inline, or the memfd fd), n words:
 * the job's id. */
static uint64_t oob_submit(struct conn *a, uint32_t out_bytes, int fd, uint32_t n) {
  static uint32_t src[16];
  union coop_msg m;
  submit_init(&m, "oob", 1, 0);
  arg_buf(&m.submit, COOP_BUF_IN, src, sizeof src, COOP_WIRE_FD_NONE);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, out_bytes, fd >= 0 ? 0 : COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, n);
  uint64_t x = submit(a, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
  ck_assert_msg(x != 0, "oob refused: %s", a->m.error.message);
  return x;
}

/* Row 1: `coopctl submit sweep --wg 1 --coop zeros:64 u32:0xffffffff u32:1`
 * killed coopd (SIGSEGV in the megakernel). Now refused at the edge by
 * sweep's rule, naming it; and coopd serves on. */
START_TEST(attack_sweep_n_past_its_buffer) {
  struct daemon_proc d;
  daemon_start(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t zeros[16];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, zeros, sizeof zeros, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 0xffffffffu);
  arg_u32(&m.submit, 1);
  expect_refusal(&c, submit(&c, &m, NULL, 0), COOP_EARGS, "n*4 <= len(data)");
  assert_has(c.m.error.message, "n = 4294967295");
  assert_has(c.m.error.message, "len(data) = 64");
  uint32_t data[64];
  victim_rounds = 5; /* coopd serves on: a short sweep, nothing beside it to outlast */
  uint64_t v = victim_sweep(&c, data, 64, 1000, 1);
  victim_check(&c, v, 64, 1000);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Rows 2 and 3: a job whose n points past its buffers, beside another
 * user's running job. sweep and render refuse it at admission; oob (no rule,
 * views only) runs, is stopped at its buffers' ends and fails with EFAULT:
 * the victim's data is neither changed nor read back. */
START_TEST(attack_neighbour_buffers) {
  struct daemon_proc d;
  struct conn c, a;
  enum { VN = 256 };
  static uint32_t vdata[VN];
  uint64_t v = iso_stage(&d, &c, &a, vdata, VN);

  static uint32_t small[16];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1); /* row 2 through sweep */
  arg_buf(&m.submit, COOP_BUF_INOUT, small, sizeof small, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 1u << 20);
  arg_u32(&m.submit, 1);
  expect_refusal(&a, submit(&a, &m, NULL, 0), COOP_EARGS, "n*4 <= len(data)");

  static float fa[16], fb[160 * 160];
  render_init(&m, 1); /* row 3 through render: 64-byte a, n = 160 */
  m.submit.args[0].data = (const uint8_t *)fa;
  m.submit.args[0].size = m.submit.args[0].data_len = sizeof fa;
  m.submit.args[1].data = (const uint8_t *)fb;
  m.submit.args[1].size = m.submit.args[1].data_len = sizeof fb;
  m.submit.args[2].size = sizeof fb;
  m.submit.args[3].bits = 160;
  expect_refusal(&a, submit(&a, &m, NULL, 0), COOP_EARGS, "n*n*4 <= len(a)");

  /* The same attack through a kernel without rules: the views stop it. */
  uint64_t x = oob_submit(&a, 8192 * 4, -1, 1u << 20);
  ck_assert_uint_eq(wait_job(&a, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(a.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(a.m.result.error, COOP_EFAULT);
  assert_has(a.m.result.message, "out of bounds");
  iso_end(&d, &c, &a, v, VN);
}
END_TEST

/* Row 3, read side: oob copies up to n words of a 64-byte src beside a
 * running job whose words are 0x5ec00000 + i + round: the attacker gets its
 * output back (EFAULT keeps it), and none of it is the victim's. */
START_TEST(attack_reads_nothing_of_others) {
  struct daemon_proc d;
  struct conn c, a;
  enum { VN = 4096 };
  static uint32_t vdata[VN];
  uint64_t v = iso_stage(&d, &c, &a, vdata, VN);
  int fd = memfd_of(VN * 4 * 4);
  uint64_t x = oob_submit(&a, VN * 4 * 4, fd, VN * 4);
  ck_assert_uint_eq(wait_job(&a, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(a.m.result.error, COOP_EFAULT);
  static uint32_t got[VN * 4];
  ck_assert_int_eq(pread(fd, got, sizeof got, 0), (ssize_t)sizeof got);
  for (unsigned i = 0; i < VN * 4; i++)
    ck_assert_msg(got[i] - 1u < 0x5ec00000u || got[i] - 1u > 0x5ec00000u + VN + victim_rounds,
                  "word %u of the attacker's output is the victim's: %08x", i, got[i]);
  for (unsigned i = 0; i < 16; i++) ck_assert_uint_eq(got[i], 1); /* its own src, + 1 */
  close(fd);
  iso_end(&d, &c, &a, v, VN);
}
END_TEST

/* Item 2: a kernel that writes past its buffer without views lands in the
 * guard zone; the job fails with EFAULT and the log names it. */
START_TEST(guard_zone_breach_fails_the_job) {
  char logp[] = "/tmp/coopd-guard-XXXXXX.log";
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, iso_sets);
  struct conn c;
  open_hello(&c, &d);
  union coop_msg m;
  submit_init(&m, "rawpoke", 1, 0);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, 64, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 16 + 4); /* 16 bytes into the guard after it */
  uint64_t x = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(x, 0);
  ck_assert_uint_eq(wait_job(&c, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_EFAULT);
  assert_has(c.m.result.message, "guard zone");
  /* within bounds: fine */
  m.submit.args[1].bits = 16;
  x = submit(&c, &m, NULL, 0);
  ck_assert_uint_eq(wait_job(&c, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.nbuf, 1);
  uint32_t got[16];
  memcpy(got, c.m.result.bufs[0].data, sizeof got);
  for (int i = 0; i < 16; i++) ck_assert_uint_eq(got[i], 0xfeedfaceu);
  conn_close(&c);
  int rc = daemon_stop(&d);
  ck_assert_msg(log_has(logp, "guard zone of buffer argument 0 was overwritten"),
                "the breach was not logged");
  if (rc) log_print(logp);
  ck_assert_int_eq(rc, 0);
  unlink(logp);
}
END_TEST

/* Row 4: render with reps = 0xffffffff on every worker, then disconnect,
 * left the device unusable until coopd restarted. render now polls its
 * cancellation: the workers come back, nothing is declared hung. */
START_TEST(attack_endless_render_then_leave) {
  struct daemon_proc d;
  struct conn a, c;
  uint32_t w = iso_open(&d, &a);
  union coop_msg m;
  render_init(&m, w);
  m.submit.args[4].bits = 0xffffffffu;
  uint64_t x = submit(&a, &m, NULL, 0);
  ck_assert_uint_ne(x, 0);
  wait_running(&a, x);
  conn_close(&a); /* its jobs are cancelled */
  open_hello(&c, &d);
  render_check(&c, w, 0, 0); /* every worker serves again */
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.hung, 0);
  ck_assert_uint_eq(st.lost_workers, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Row 5: three detached cooperative sweeps of one workgroup each pinned
 * every worker (a cooperative kernel keeps its last), and every other
 * user's render failed EHUNG. Cooperative jobs now run on the workers left
 * after the reserve; the rest wait, and the render runs. */
START_TEST(attack_cooperative_jobs_pin_every_worker) {
  struct daemon_proc d;
  struct conn a, c;
  uint32_t w = iso_open(&d, &a);
  ck_assert_uint_ge(w, 2);
  uint64_t s[3];
  for (int i = 0; i < 3; i++) ck_assert_uint_ne(s[i] = detached_sweep(&a), 0);
  wait_running(&a, s[0]);
  conn_close(&a);
  open_hello(&c, &d);
  render_check(&c, (w + 1) / 2, 0, 0); /* the reserve: half the workers */
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.gather_timeouts, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Item 3: the megakernel's process dies (SIGKILL: a crash, the OOM
 * killer; PoCL's LLVM catches a SIGSEGV sent from outside): only the jobs
 * on it are lost (ELOST), coopd itself runs on, and the device serves again
 * within seconds, in a new process. */
START_TEST(device_process_crash_costs_its_jobs_only) {
  struct daemon_proc d;
  struct conn c;
  uint32_t w = iso_open(&d, &c);
  static uint32_t data[256];
  uint64_t v = victim_sweep(&c, data, 256, 0, 1);
  wait_running(&c, v);
  pid_t child = device_process(d.pid);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(kill(child, SIGKILL), 0);
  ck_assert_uint_eq(wait_job(&c, v, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_ELOST);
  assert_has(c.m.result.message, "signal 9");
  render_check(&c, w, 0, 0); /* the restarted device serves */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "device process crash to a served render: %.2f s\n",
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 60);
  ck_assert_int_ne(device_process(d.pid), child);
  ck_assert_int_eq(kill(d.pid, 0), 0); /* coopd itself never went down */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Item 3: a non-cooperative kernel that never polls its cancellation
 * (hog) holds every worker; its client leaves; hang_ms later coopd kills
 * the device process. The hog's job is the only one that fails (EHUNG):
 * a render that was waiting for workgroups (never gathered) runs on the
 * new device process, and no worker stays out of service. */
START_TEST(hung_kernel_restarts_its_device) {
  struct daemon_proc d;
  struct conn a, c;
  uint32_t w = iso_open(&d, &a);
  union coop_msg m;
  submit_init(&m, "hog", w, 0);
  arg_buf(&m.submit, COOP_BUF_OUT, NULL, 4, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 0xffffffffu); /* hours */
  uint64_t x = submit(&a, &m, NULL, 0);
  ck_assert_uint_ne(x, 0);
  wait_running(&a, x);
  conn_close(&a); /* cancelled: the hog does not notice */
  open_hello(&c, &d);
  render_check(&c, w, 0, 0); /* waits for the restart, then runs */
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.hung, 1);
  ck_assert_uint_eq(st.lost_workers, 0);
  assert_has(st.watchdog, "restarted");
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* What a TOP shows a client: workgroups running (with a job id), other
 * (another user's), free; its job records and their ids. */
struct top_seen {
  uint32_t running, other, free, njobs;
  uint64_t any_job; /* a job id shown, in a workgroup or a record */
};

static void top_look(struct conn *c, const void *arg, void *out) {
  (void)arg;
  struct top_seen *t = out;
  memset(t, 0, sizeof *t);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_TOP, &m, NULL, 0)), COOP_MSG_TOP_REPLY);
  uint32_t off = 0;
  for (uint32_t i = 0; i < c->m.top.nwg; i++) {
    struct coop_wire_wg g;
    ck_assert_int_eq(coop_wire_wg_next(&c->m.top, &off, &g), 0);
    t->running += g.state == COOP_WG_RUNNING;
    t->other += g.state == COOP_WG_OTHER;
    t->free += g.state == COOP_WG_FREE;
    if (g.job) t->any_job = g.job;
  }
  t->njobs = c->m.top.njobs;
  off = 0;
  for (uint32_t i = 0; i < t->njobs; i++) {
    struct coop_wire_topjob j;
    ck_assert_int_eq(coop_wire_topjob_next(&c->m.top, &off, &j), 0);
    if (j.job) t->any_job = j.job;
  }
}

/* Privacy: root's sweep on every worker. Another user's TOP shows every
 * workgroup as "other" with no job id and no job record; root's own shows
 * its job on every workgroup. */
START_TEST(top_shows_no_other_users_job) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  daemon_start(&d, NULL);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  static uint32_t data[512];
  uint64_t job = sweep_submit(&c, data, 512, 100000000u, w, -1);
  ck_assert_uint_ne(job, 0);
  wait_running(&c, job);
  struct top_seen mine, theirs;
  for (int i = 0; i < 300; i++, msleep(10)) { /* the live view, every 100 ms */
    top_look(&c, NULL, &mine);
    if (mine.running == w) break;
  }
  ck_assert_uint_eq(mine.running, w);
  ck_assert_uint_eq(mine.njobs, 1);
  ck_assert_uint_eq(mine.any_job, job);
  ck_assert_int_eq(as_user(&d, 65534, top_look, NULL, &theirs, sizeof theirs), 0);
  ck_assert_uint_eq(theirs.other, w);
  ck_assert_uint_eq(theirs.running, 0);
  ck_assert_uint_eq(theirs.njobs, 0);
  ck_assert_uint_eq(theirs.any_job, 0);
  cancel_ok(&c, job);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A HELLO name with a newline and an escape once forged log lines.
 * coopd logs it with '?' for every byte outside printable ASCII. */
START_TEST(hello_name_cannot_forge_log_lines) {
  char logp[] = "/tmp/coopd-name-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"log.level=debug", NULL}; /* connections are logged at debug */
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  struct conn c;
  ck_assert_int_eq(conn_open(&c, d.sock), 0);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.hello.min_version = m.hello.max_version = COOP_WIRE_VERSION;
  snprintf(m.hello.name, sizeof m.hello.name, "evil\n00:00:00.000 coopd info: FORGED\x1b[2J");
  ck_assert_uint_eq(reply(&c, send_msg(&c, COOP_MSG_HELLO, &m, NULL, 0)), COOP_MSG_WELCOME);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  for (int i = 0; i < 100 && !log_has(logp, "evil?00:00:00.000 coopd info: FORGED?[2J"); i++)
    msleep(50);
  ck_assert_msg(log_has(logp, "evil?00:00:00.000 coopd info: FORGED?[2J"), "name not escaped");
  ck_assert_msg(!log_has(logp, "\n00:00:00.000 coopd info: FORGED"), "a forged line");
  ck_assert_msg(!log_has(logp, "\x1b"), "an escape reached the log");
  unlink(logp);
}
END_TEST

/* A connection's WAITs are bounded (3M of them took
 * 560 MB): 4096 pending, the next gets ELIMIT at once. And a job that ends
 * answers its waiters in one walk of the list (20k WAITs behind 200k froze
 * the loop for 352 s): cancelled, the job answers all 4096 at once. */
START_TEST(waiters_are_bounded) {
  struct daemon_proc d;
  daemon_start(&d, iso_sets);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[64];
  /* 2^32 - 1 rounds: one workgroup runs 10^8 in seconds */
  uint64_t slow = sweep_submit(&c, data, 64, 0xffffffffu, 1, -1);
  ck_assert_uint_ne(slow, 0);
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.timeout_ms = COOP_WAIT_FOREVER;
  m.job.job = slow;
  uint32_t first = 0;
  for (int i = 0; i < 4096; i++) {
    uint32_t seq = send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
    if (!first) first = seq;
  }
  uint32_t over = send_msg(&c, COOP_MSG_WAIT, &m, NULL, 0);
  ck_assert_uint_eq(reply(&c, over), COOP_MSG_ERROR); /* the only reply so far */
  ck_assert_int_eq(c.m.error.code, COOP_ELIMIT);
  assert_has(c.m.error.message, "at most 4096 WAITs pending");
  uint32_t cancel = send_msg(&c, COOP_MSG_CANCEL, &m, NULL, 0);
  unsigned results = 0, ok = 0;
  while (results < 4096 || !ok) {
    ck_assert_int_eq(read_frame(&c), 1);
    if (c.h.seq == cancel) {
      ck_assert_uint_eq(c.h.type, COOP_MSG_OK);
      ok = 1;
      continue;
    }
    ck_assert_uint_eq(c.h.type, COOP_MSG_RESULT);
    ck_assert_uint_eq(c.m.result.job, slow);
    ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
    ck_assert(c.h.seq >= first && c.h.seq < over);
    results++;
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* ---- cancel: a shipped kernel's data-driven loops poll their cancellation ---- */

/* A memfd of size bytes holding n words w (the rest zero). */
static int memfd_words(size_t size, uint32_t w, size_t n) {
  int fd = memfd_of(size);
  static uint32_t chunk[16384];
  for (size_t i = 0; i < 16384; i++) chunk[i] = w;
  for (size_t at = 0; at < n; at += 16384) {
    size_t k = n - at < 16384 ? n - at : 16384;
    ck_assert_int_eq(pwrite(fd, chunk, k * 4, (off_t)(at * 4)), (ssize_t)(k * 4));
  }
  return fd;
}

/* The shipped bfs on a CSR whose worklist holds 65536 copies of a
 * vertex owning 4M edges (every require rule met, every index in range)
 * visits 2.7e11 edges in one step and reaches no primitive. Cancelled, it
 * ran on until hang_ms, and coopd restarted the device, taking another
 * client's periodic render with it (ELOST). bfs's loops now poll their
 * cancellation: the job ends CANCELLED within 2 s, the render ends DONE,
 * nothing is declared hung and every worker serves. */
START_TEST(attack_hostile_bfs_is_cancelled) {
  enum { HN = 65536, HM = 4 << 20 };
  char kdir[] = "/tmp/coopd-bfs-XXXXXX", path[128], set[160];
  ck_assert_ptr_nonnull(mkdtemp(kdir));
  snprintf(path, sizeof path, "%s/bfs.cl", kdir);
  file_copy(KERNEL_DIR "/apps/bfs.cl", path); /* the shipped kernel, alone beside render */
  snprintf(set, sizeof set, "kernels.dirs=%s:%s", KERNEL_DIR, kdir);
  const char *sets[] = {set, "jobs.gather_budget_ms=4000", "jobs.hang_ms=1500", NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  struct conn a, v;
  open_hello(&a, &d);
  uint32_t w = a.m.welcome.workers;
  open_hello(&v, &d);

  /* the victim: a render every 100 ms for 3 s, on one worker */
  union coop_msg m;
  render_init(&m, 1);
  m.submit.period_us = m.submit.deadline_us = 100000;
  m.submit.count = 30;
  uint64_t r = submit(&v, &m, NULL, 0);
  ck_assert_msg(r != 0, "render refused: %s", v.m.error.message);

  /* row[0] = 0, row[1..n] = m: vertex 0 owns every edge, and every edge
   * leads back to it (reached: each visit is two loads); q0 = n zeros */
  int fds[5] = {memfd_words((HN + 1) * 4u, HM, HN + 1), memfd_of(HM * 4u),
                memfd_words(HN * 4u, 0xffffffffu, HN), memfd_of(HN * 4u), memfd_of(HN * 4u)};
  ck_assert_int_eq(pwrite(fds[0], &(uint32_t){0}, 4, 0), 4);
  ck_assert_int_eq(pwrite(fds[2], &(uint32_t){0}, 4, 0), 4); /* lev[0] = 0 */
  static const uint32_t size[2] = {HN, 0};
  submit_init(&m, "bfs", 1, 1);
  arg_u32(&m.submit, 1); /* cooperative form: resizing barriers */
  arg_buf(&m.submit, COOP_BUF_IN, NULL, (HN + 1) * 4u, 0);
  arg_buf(&m.submit, COOP_BUF_IN, NULL, HM * 4u, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, NULL, HN * 4u, 2);
  arg_buf(&m.submit, COOP_BUF_INOUT, NULL, HN * 4u, 3);
  arg_buf(&m.submit, COOP_BUF_INOUT, NULL, HN * 4u, 4);
  arg_buf(&m.submit, COOP_BUF_INOUT, size, sizeof size, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, HN);
  uint64_t x = submit(&a, &m, fds, 5);
  ck_assert_msg(x != 0, "bfs refused: %s", a.m.error.message);
  wait_running(&a, x); /* and 300 ms: deep in its first step */

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cancel_ok(&a, x);
  ck_assert_uint_eq(wait_job(&a, x, 20000), COOP_MSG_RESULT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  /* bench/RESULTS.md quotes this line */
  fprintf(stderr, "hostile bfs: CANCEL -> RESULT %s (%s) in %.1f ms\n",
          coop_job_state_name(a.m.result.state), coop_err_name(a.m.result.error), ms);
  ck_assert_msg(a.m.result.state == COOP_JOB_CANCELLED, "bfs ended %s: %s",
                coop_job_state_name(a.m.result.state), a.m.result.message);
  ck_assert_int_eq(a.m.result.error, COOP_ECANCELED);
  ck_assert_msg(ms < 2000.0, "bfs took %.0f ms to end after its CANCEL", ms);

  ck_assert_uint_eq(wait_job(&v, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(v.m.result.state == COOP_JOB_DONE, "the victim's render ended %s: %s",
                coop_job_state_name(v.m.result.state), v.m.result.message);
  ck_assert_uint_eq(v.m.result.instances, 30);
  struct coop_msg_stats_reply st = stats(&v);
  ck_assert_uint_eq(st.hung, 0);
  ck_assert_uint_eq(st.lost_workers, 0);
  render_check(&v, w, 0, 0); /* every worker serves */
  for (int i = 0; i < 5; i++) close(fds[i]);
  conn_close(&a);
  conn_close(&v);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(path);
  rmdir(kdir);
}
END_TEST

/* ---- [jobs] task_max_ms: a non-cooperative task's execution bound ---- */

/* A render of root's on every worker that would run for ever (reps =
 * 2^32 - 1), DETACHED, its connection then closed: the job id. */
static uint64_t endless_render_detached(const struct daemon_proc *d, uint32_t w) {
  struct conn a;
  open_hello(&a, d);
  union coop_msg m;
  render_init(&m, w);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  m.submit.args[4].bits = 0xffffffffu;
  uint64_t x = submit(&a, &m, NULL, 0);
  ck_assert_msg(x != 0, "render refused: %s", a.m.error.message);
  wait_running(&a, x);
  conn_close(&a); /* detached: it runs on */
  return x;
}

/* d started with sets (its log into d->log, if set), its socket open to a
 * second user, and root's first connection c: the workers. */
static uint32_t open_to_nobody(struct daemon_proc *d, const char *const *sets, struct conn *c) {
  daemon_start_log(d, sets);
  daemon_open_to_all(d);
  open_hello(c, d);
  return c->m.welcome.workers;
}

/* What a client of uid 65534 (nobody) saw of one render on w workers. */
struct seen_result {
  uint8_t state;
  int32_t error;
  int64_t submitted, finished; /* its task's, to the device and back (host ns) */
  char message[sizeof(((struct coop_msg_result *)0)->message)];
};

/* A render on *(uint32_t *)w workers, waited for (as_user's body). */
static void renders(struct conn *c, const void *w, void *out) {
  struct seen_result *s = out;
  uint64_t job = render_submit(c, *(const uint32_t *)w);
  if (!job) _exit(4);
  if (wait_job(c, job, COOP_WAIT_FOREVER) != COOP_MSG_RESULT) _exit(5);
  s->state = c->m.result.state;
  s->error = c->m.result.error;
  s->submitted = c->m.result.t.submitted;
  s->finished = c->m.result.t.finished;
  snprintf(s->message, sizeof s->message, "%s", c->m.result.message);
  conn_close(c);
}

static struct seen_result render_as_nobody(const struct daemon_proc *d, uint32_t w) {
  struct seen_result s = {0};
  as_user(d, 65534, renders, &w, &s, sizeof s);
  return s;
}

/* Root's render with reps = 2^32 - 1 on every worker, DETACHED and
 * left, held the device until coopd stopped (no watchdog by default), and
 * every other user's task failed EHUNG. With task_max_ms = 1500 it is
 * cancelled past the bound, its RESULT says why (ETIMEDOUT), and nobody's
 * render on every worker runs; render polls its cancellation, so nothing
 * is declared hung. The bound is per instance: a periodic render of 2.4 s
 * in all, each instance short, ends DONE. */
START_TEST(task_max_ms_ends_a_detached_render) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-task-max-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"jobs.task_max_ms=1500", "jobs.gather_budget_ms=8000", NULL};
  struct daemon_proc d = {.log = logp};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  render_check(&c, 1, 20000, 120); /* 2.4 s of instances, none near 1.5 s */

  uint64_t x = endless_render_detached(&d, w);
  struct seen_result b = render_as_nobody(&d, w);
  ck_assert_msg(b.state == COOP_JOB_DONE, "nobody's render ended %s (%d): %s",
                coop_job_state_name(b.state), b.error, b.message);

  ck_assert_uint_eq(wait_job(&c, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_FAILED);
  ck_assert_int_eq(c.m.result.error, COOP_ETIMEDOUT);
  assert_has(c.m.result.message, "kernel render ran past the [jobs] task_max_ms bound of 1500 ms");
  char line[128];
  snprintf(line, sizeof line, "job %llu (render, uid 0): a task ran", (unsigned long long)x);
  for (int i = 0; i < 100 && !log_has(logp, line); i++) msleep(50);
  ck_assert_msg(log_has(logp, line), "the log lacks \"%s\"", line);
  struct coop_msg_stats_reply st = stats(&c);
  ck_assert_uint_eq(st.hung, 0); /* render returned at its next row */
  ck_assert_uint_eq(st.lost_workers, 0);
  conn_close(&c);
  daemon_stop_ok(&d, logp);
  unlink(logp);
}
END_TEST

/* The EHUNG of a task that waited for workers named the holder's
 * job id and kernel to any user, which ENOJOB otherwise hides. Now another
 * user's holder is "another user's job"; the holder's own user (root here,
 * who may see every job) still gets its id and kernel. task_max_ms = 0:
 * the bound is off, so the holder stays until cancelled. */
START_TEST(ehung_names_no_other_users_job) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.task_max_ms=0", "jobs.gather_budget_ms=1000", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  uint64_t x = endless_render_detached(&d, w);
  char holder[64];
  snprintf(holder, sizeof holder, "job %llu", (unsigned long long)x);

  struct seen_result b = render_as_nobody(&d, w);
  ck_assert_msg(b.state == COOP_JOB_FAILED && b.error == COOP_EHUNG,
                "nobody's render ended %s (%d): %s", coop_job_state_name(b.state), b.error,
                b.message);
  assert_has(b.message, "held by another user's job (non-cooperative, still running)");
  ck_assert_msg(!strstr(b.message, holder), "\"%s\" names root's %s", b.message, holder);
  ck_assert_msg(!strstr(b.message, "render"), "\"%s\" names root's kernel", b.message);

  uint64_t r = render_submit(&c, w); /* root's own: named */
  ck_assert_uint_ne(r, 0);
  ck_assert_uint_eq(wait_job(&c, r, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.error, COOP_EHUNG);
  char named[128];
  snprintf(named, sizeof named, "held by %s (render, non-cooperative, still running)", holder);
  assert_has(c.m.result.message, named);

  cancel_ok(&c, x);
  ck_assert_uint_eq(wait_job(&c, x, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* m, a render whose reps are its argument 4, set to about ns a run: the
 * fastest of `probes` runs of `probe` reps alone gives a rep's time, and
 * the reps then stay within probe..max. */
static void render_reps_for(struct conn *c, union coop_msg *m, uint32_t probe, int probes,
                            double ns, uint32_t max) {
  m->submit.args[4].bits = probe;
  double per = 0;
  for (int k = 0; k < probes; k++) {
    uint64_t job = submit(c, m, NULL, 0);
    ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    double p = (double)c->m.result.t.exec_ns / probe;
    if (k == 0 || p < per) per = p;
  }
  double want = ns / (per > 1.0 ? per : 1.0);
  m->submit.args[4].bits = want < probe ? probe : want > max ? max : (uint32_t)want;
}

/* Hardening, turns: root submits 24 renders on every worker; nobody then
 * submits one. The megakernel serves its queue in order, so nobody's
 * render waited for all 24 of root's (a 20 ms render waited 0.9 s behind
 * 60). Now root runs at most [jobs] tasks_per_uid (4) such jobs at once,
 * holding at most twice the workers' workgroups (DEV_TURN_DEPTH: two of
 * these; before it, four), and the rest wait in coopd: nobody's render
 * ends DONE, sent to the device while at most 2 of root's were there
 * unfinished (whenever its client got to submit it: on a loaded machine
 * root's ran on meanwhile), and a WAIT of root's last says why it waits.
 * Every one of root's ends DONE. */
START_TEST(a_flood_of_tasks_queues_no_other_user_behind_it) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, NULL, &c);
  union coop_msg m;
  render_init(&m, w);
  render_reps_for(&c, &m, 4, 1, 20e6, 100000); /* about 20 ms a render */
  enum { N = 24 };
  uint64_t flood[N];
  for (int i = 0; i < N; i++) {
    flood[i] = submit(&c, &m, NULL, 0);
    ck_assert_msg(flood[i] != 0, "render %d refused: %s", i, c.m.error.message);
  }
  char said[COOP_WIRE_TEXT_MAX]; /* once the device thread has taken it */
  for (int i = 0; i < 200; i++) {
    wait_says(&c, flood[N - 1], 0, said, sizeof said);
    if (strstr(said, "waiting for its turn")) break;
    msleep(10);
  }
  char wide[256];
  snprintf(wide, sizeof wide,
           "is queued, waiting for its turn: its user's 2 jobs on the device that are not "
           "cooperative hold %u workgroups, and with it would hold more than twice the "
           "megakernel's %u workers",
           2 * w, w);
  assert_has(said, wide);
  struct seen_result b = render_as_nobody(&d, w);
  ck_assert_msg(b.state == COOP_JOB_DONE, "nobody's render ended %s (%d): %s",
                coop_job_state_name(b.state), b.error, b.message);
  int ahead = 0; /* root's tasks on the device, not yet ended, when nobody's went there */
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq(wait_job(&c, flood[i], COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's render %d: %s", i, c.m.result.message);
    ahead += c.m.result.t.submitted < b.submitted && c.m.result.t.finished > b.submitted;
  }
  /* 2, and one more for the device clock's fit to the host's */
  ck_assert_msg(ahead <= 3, "nobody's render went to the device behind %d of root's", ahead);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* ---- cooperative slots between users ---- */

/* A child as nobody (uid 65534) that submits a sweep of `rounds` on one
 * workgroup and keeps its connection, and so the job, until stop_nobody;
 * *job gets the job's id. */
static pid_t nobody_sweep(struct daemon_proc *d, uint32_t rounds, uint64_t *job) {
  static uint32_t data[64];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, data, sizeof data, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, rounds);
  return nobody_submit(d, &m, job);
}

/* Its connection closes: a job of it not DETACHED goes with it. */
static void stop_nobody(pid_t kid) {
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
}

/* A daemon with a 1 MiB arena open to all, c open as root, and root's
 * render of 599 KiB (3 x 226^2 x 4 bytes) running until cancelled: its id. */
static uint64_t arena_held(struct daemon_proc *d, struct conn *c) {
  const char *sets[] = {"device.arena_mb=1", NULL};
  daemon_start(d, sets);
  daemon_open_to_all(d);
  open_hello(c, d);
  union coop_msg m;
  render_ones(&m, 226);
  m.submit.args[4].bits = 1u << 20; /* reps: until cancelled */
  uint64_t hold = submit(c, &m, NULL, 0);
  ck_assert_uint_ne(hold, 0);
  wait_running(c, hold);
  return hold;
}

/* Hardening, the arena: a job's buffers are copied into the arena while it
 * runs, and root's running job held 600 KiB of a 1 MiB arena: nobody's
 * render of 480 KiB, which fits the arena alone, failed ENOMEM ("raise
 * [device] arena_mb"). Now it waits for the room (docs/daemon.md, "Room in
 * the arena"), and while it waits root, past [limits]
 * max_buffer_percent_per_uid (50%) of the arena, starts no job with
 * buffers: root's small render, which would fit the 424 KiB left, waits
 * too, so that the room root's job gives back goes to nobody's. Root's
 * holder is a long render (a task: it cannot be suspended, so nobody's
 * waits for its end; a cooperative one gives its room back, below). */
START_TEST(one_users_running_jobs_leave_room_for_others) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  struct conn c;
  uint64_t hold = arena_held(&d, &c);
  enum { N = 200, SMALL = 64 };
  union coop_msg m;

  render_ones(&m, N);
  uint64_t theirs;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, theirs, "waiting for room", said, sizeof said);
  assert_has(said, "waiting for room in the device arena: its buffers (469 KiB)");
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_QUEUED);

  render_ones(&m, SMALL);
  uint64_t mine = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(mine, 0);
  waits_for(&c, mine, "waiting for room", said, sizeof said);
  ck_assert_uint_eq(job_state(&c, mine), COOP_JOB_QUEUED);
  assert_has(said,
             "another user's job waits for room there, and its user's running jobs and "
             "device buffers hold 599 KiB of it, past [limits] max_buffer_percent_per_uid = 50%");

  cancel_ok(&c, hold);
  ck_assert_uint_eq(wait_job(&c, hold, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(wait_job(&c, mine, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's small render: %s", c.m.result.message);
  uint8_t st = state_when_ended(&c, theirs, 4000);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's render is %s", coop_job_state_name(st));
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* The same hold, nobody's jobs too large: a render of 542 KiB (past
 * nobody's own share of 512 KiB, though the arena alone would hold it)
 * waited for room, and root, past its share, started nothing with buffers
 * for as long (its small render queued while nobody's waited); and a
 * render of 1178 KiB, more than the whole arena, waited too instead of
 * failing. Now a waiter past its own user's share holds no one back, and
 * one whose bytes pass the arena's fails ENOMEM at once (docs/daemon.md,
 * "Room in the arena"). */
START_TEST(a_job_too_large_for_its_share_holds_no_one_back) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  struct conn c;
  uint64_t hold = arena_held(&d, &c);
  enum { PAST = 215, BIG = 220, SMALL = 64 }; /* 3 n^2 x 4 bytes */
  union coop_msg m;

  render_ones(&m, BIG);
  int out = memfd_of(800u << 10); /* the output, 800 KiB: 189 + 189 + 800 */
  m.submit.args[2].size = 800u << 10;
  m.submit.args[2].fd = 0;
  uint64_t huge;
  pid_t kid = nobody_submit_fd(&d, &m, out, &huge);
  close(out);
  uint8_t st = state_when_ended(&c, huge, 3000);
  ck_assert_msg(st == COOP_JOB_FAILED, "nobody's render of 1178 KiB is %s",
                coop_job_state_name(st));
  stop_nobody(kid);

  render_ones(&m, PAST);
  uint64_t theirs;
  kid = nobody_submit(&d, &m, &theirs);
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, theirs, "waiting for room", said, sizeof said);
  render_ones(&m, SMALL);
  uint64_t mine = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(mine, 0);
  st = state_when_ended(&c, mine, 3000);
  ck_assert_msg(st == COOP_JOB_DONE, "root's small render is %s", coop_job_state_name(st));
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_QUEUED);

  cancel_ok(&c, hold);
  st = state_when_ended(&c, theirs, 4000);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's render is %s", coop_job_state_name(st));
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* m: a render of n x n on one workgroup whose reps make it last about ns
 * on this machine (one rep timed first, on c). */
static void render_lasting(struct conn *c, union coop_msg *m, uint32_t n, double ns) {
  render_ones(m, n);
  uint64_t probe = submit(c, m, NULL, 0);
  ck_assert_uint_eq(wait_job(c, probe, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  double rep = (double)c->m.result.t.exec_ns;
  m->submit.args[4].bits = (uint32_t)(ns / (rep > 1e5 ? rep : 1e5)) + 1;
}

/* Hardening, the arena: root's cooperative sweep of about 4 s holds 600
 * KiB of a 1 MiB arena, past [limits] max_buffer_percent_per_uid (50%);
 * nobody's render of 469 KiB (about 1.5 s) waited for the sweep's end.
 * Now the sweep is suspended, its buffers move out of the arena to host
 * memory, nobody's render runs, and the sweep, whose buffers do not fit
 * beside the render's, says so while it waits, then resumes where it
 * stopped (docs/daemon.md, "Room in the arena"): nobody's render is DONE
 * while the sweep has yet to end, and the sweep ends DONE with every
 * round, although the device process is killed while it waits (its
 * state and buffers were out of it). */
START_TEST(a_users_cooperative_job_gives_its_room_back) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-room-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.arena_mb=1", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  enum { WORDS = (600u << 10) / 4, N = 200 };
  uint32_t rounds;
  int fd = sweep_memfd(&c, WORDS, 4000, &rounds);
  union coop_msg m;
  render_lasting(&c, &m, N, 1.5e9);

  uint64_t sweep = sweep_submit(&c, NULL, WORDS, rounds, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  wait_running(&c, sweep);
  uint64_t theirs;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  /* nobody's render runs; the sweep, suspended, waits for room to resume */
  char said[COOP_WIRE_TEXT_MAX];
  waits_for(&c, sweep, "waiting for room in the device arena to resume", said, sizeof said);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_RUNNING);
  /* its state and buffers are out of the device process: a crash of it
   * costs the sweep nothing (the render, inputs only, runs again) */
  ck_assert_int_eq(kill(device_process(d.pid), SIGKILL), 0);
  uint8_t st = state_when_ended(&c, theirs, 15000);
  uint8_t sweep_st = job_state(&c, sweep);
  if (st != COOP_JOB_DONE || sweep_st >= COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's render is %s", coop_job_state_name(st));
  ck_assert_msg(sweep_st < COOP_JOB_DONE, "root's sweep of %u rounds ended first", rounds);
  const char *out = "moved out of the device arena to make room for a job waiting there";
  ck_assert_int_eq(log_count(logp, out), 1);
  ck_assert(log_has(logp, "0 other jobs lost, 1 to run again"));
  /* nobody asks again at once: the sweep, just resumed, runs a second
   * (DEV_ROOM_GAP_NS) before it gives its room again; before, each such
   * request had its 600 KiB copied out and in at once, as often as asked */
  uint64_t again;
  pid_t kid2 = nobody_submit(&d, &m, &again);
  msleep(300);
  ck_assert_uint_eq(job_state(&c, again), COOP_JOB_QUEUED);
  ck_assert_int_eq(log_count(logp, out), 1);
  st = state_when_ended(&c, again, 15000);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's second render is %s", coop_job_state_name(st));
  stop_nobody(kid2);

  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  const struct coop_msg_result *r = &c.m.result;
  fprintf(stderr, "root's sweep of %u rounds: %.0f ms\n", rounds, (double)r->t.exec_ns / 1e6);
  ck_assert_msg(r->state == COOP_JOB_DONE, "root's sweep: %s %s", coop_job_state_name(r->state),
                r->message);
  sweep_memfd_check(fd, WORDS, rounds);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* as_user's body: the render arg, and while it runs a device buffer of 4
 * KiB kept past the connection (KEEP); out: the render's id once it ended
 * DONE, else 0. */
static void render_beside_a_kept_buffer(struct conn *o, const void *arg, void *out) {
  uint64_t theirs = submit(o, arg, NULL, 0), done = 0;
  while (job_state(o, theirs) == COOP_JOB_QUEUED) msleep(10);
  union coop_msg b;
  memset(&b, 0, sizeof b);
  b.buf_create.flags = COOP_BUFFER_KEEP;
  b.buf_create.size = 4u << 10;
  b.buf_create.fd = COOP_WIRE_FD_NONE;
  if (reply(o, send_msg(o, COOP_MSG_BUF_CREATE, &b, NULL, 0)) == COOP_MSG_BUFFER &&
      wait_job(o, theirs, COOP_WAIT_FOREVER) == COOP_MSG_RESULT &&
      o->m.result.state == COOP_JOB_DONE)
    done = theirs;
  memcpy(out, &done, sizeof done);
}

/* Hardening, the arena: as above, and while nobody's render runs nobody
 * makes a device buffer of 4 KiB (kept past its connection). It went first fit, past the render's
 * copy, and left no 600 KiB gap in the arena once the render ended: root's
 * sweep, moved out to make room, failed ENOMEM "could not resume it" with
 * every round it had run lost. A device buffer goes last fit now, at the
 * top of the arena (megakernel/arena.c, alloc_device): the sweep comes
 * back and ends DONE with every round. */
START_TEST(another_users_small_buffer_leaves_a_moved_job_its_way_back) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-room-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.arena_mb=1", "device.device_mb=0", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  enum { WORDS = (600u << 10) / 4, N = 200 };
  uint32_t rounds;
  int fd = sweep_memfd(&c, WORDS, 3000, &rounds);
  union coop_msg m;
  render_lasting(&c, &m, N, 1e9);
  uint64_t sweep = sweep_submit(&c, NULL, WORDS, rounds, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  wait_running(&c, sweep);
  uint64_t theirs = 0; /* returns once the render is DONE, the buffer kept */
  ck_assert_int_eq(as_user(&d, 65534, render_beside_a_kept_buffer, &m, &theirs, sizeof theirs), 0);
  ck_assert_uint_ne(theirs, 0);
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  const struct coop_msg_result *r = &c.m.result;
  if (r->state != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(r->state == COOP_JOB_DONE, "root's sweep: %s %s", coop_job_state_name(r->state),
                r->message);
  int moved = log_count(logp, "moved out of the device arena to make room");
  if (moved != 1) { /* coopd's account of the arena, for the failure */
    fprintf(stderr, "root's sweep of %u rounds: %.0f ms, %u kills; nobody's render %llu\n", rounds,
            (double)r->t.exec_ns / 1e6, r->kills, (unsigned long long)theirs);
    log_print(logp);
  }
  ck_assert_int_eq(moved, 1);
  sweep_memfd_check(fd, WORDS, rounds);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* Hardening, the arena with device buffers: root holds a device buffer of
 * 400 KiB and runs a cooperative sweep whose copies take 300 KiB of a 1
 * MiB arena; nobody's render of 469 KiB waits for room. Root's copies
 * alone (300 KiB) were within [limits] max_buffer_percent_per_uid (50%),
 * so nothing gave room and the render waited for the sweep's end (here:
 * never). Now root's device buffer counts toward its share (700 KiB):
 * the sweep is suspended, its copies leave the arena, and nobody's render
 * runs and ends DONE while the sweep has yet to end (docs/daemon.md, "Room
 * in the arena"). device_mb = 0: on CUDA too the buffer goes into the
 * arena (one in the zone beside it takes none of the arena, and does not
 * count). */
START_TEST(a_users_device_buffers_count_toward_its_room) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-room-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.arena_mb=1", "device.device_mb=0", "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  buf_create_raw(&c, 400u << 10);
  int fd = memfd_of(300u << 10);
  uint64_t sweep = sweep_submit(&c, NULL, (300u << 10) / 4, 100000000u, 1, fd);
  ck_assert_uint_ne(sweep, 0);
  close(fd);
  wait_running(&c, sweep);
  enum { N = 200 };
  union coop_msg m;
  render_ones(&m, N);
  uint64_t theirs;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  uint8_t st = state_when_ended(&c, theirs, 10000);
  if (st != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's render is %s", coop_job_state_name(st));
  ck_assert_uint_lt(job_state(&c, sweep), COOP_JOB_DONE);
  ck_assert(log_has(logp, "its user's jobs and device buffers hold 700 KiB of the device arena"));
  cancel_ok(&c, sweep);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* The same with root's sweep of 600 KiB already suspended (for root's own
 * job of higher priority on the one cooperative slot): its copies stayed
 * in the arena, and nobody's render of 469 KiB waited as long as root's
 * second job ran. Now the suspended sweep's buffers leave the arena at
 * once; nobody's render runs and ends DONE while root's jobs are still
 * there, and the sweep resumes once the slot is free. */
START_TEST(a_suspended_job_gives_its_room_back) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  char logp[] = "/tmp/coopd-room-XXXXXX.log";
  log_temp(logp);
  const char *sets[] = {"device.arena_mb=1", "jobs.reserve_percent=100", "limits.max_priority=10",
                        "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  enum { WORDS = (600u << 10) / 4, N = 200 };
  int fd = memfd_of(WORDS * 4u);
  uint64_t low = sweep_submit(&c, NULL, WORDS, 100000000u, 1, fd);
  ck_assert_uint_ne(low, 0);
  wait_running(&c, low);
  static uint32_t small[64];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1);
  m.submit.priority = 5;
  arg_buf(&m.submit, COOP_BUF_INOUT, small, sizeof small, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 100000000u);
  uint64_t high = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(high, 0);
  ck_assert(seen_suspended(&c, low));
  wait_running(&c, high);

  render_ones(&m, N);
  uint64_t theirs;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  uint8_t st = state_when_ended(&c, theirs, 15000);
  if (st != COOP_JOB_DONE) log_print(logp);
  ck_assert_msg(st == COOP_JOB_DONE, "nobody's render is %s", coop_job_state_name(st));
  ck_assert_uint_eq(job_state(&c, high), COOP_JOB_RUNNING);
  ck_assert(job_status(&c, low).suspended);
  ck_assert(log_has(logp, "moved out of the device arena to make room for a job waiting there"));

  cancel_ok(&c, high);
  int resumed = 0; /* its buffers back in the arena */
  for (int i = 0; i < 3000 && !resumed; i++) {
    struct coop_wire_status ls = job_status(&c, low);
    resumed = !ls.suspended && ls.state == COOP_JOB_RUNNING;
    if (!resumed) msleep(10);
  }
  ck_assert_msg(resumed, "root's low sweep never resumed");
  cancel_ok(&c, low);
  ck_assert_uint_eq(wait_job(&c, low, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_int_eq(c.m.result.state, COOP_JOB_CANCELLED);
  close(fd);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(logp);
}
END_TEST

/* Item 4, fairness: root queues three cooperative sweeps, nobody one after
 * them. When root's running sweep ends, the free slot goes to nobody, who
 * runs none yet, not to root's next in line (FIFO would). */
START_TEST(cooperative_slots_are_shared_between_users) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  /* reserve_percent = 100: one cooperative slot, whatever the device */
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR, "jobs.reserve_percent=100",
                        NULL};
  struct daemon_proc d;
  daemon_start(&d, sets);
  daemon_open_to_all(&d);
  struct conn c;
  open_hello(&c, &d);
  static uint32_t data[64];
  uint64_t first = victim_sweep(&c, data, 64, 0, 1); /* about 4 s */
  /* On the device before the others arrive: had the device thread taken
   * all four in one pass, nobody's (never served) would rightly go first. */
  wait_running(&c, first);
  uint64_t next = sweep_submit(&c, data, 64, 100000000u, 1, -1);
  uint64_t last = sweep_submit(&c, data, 64, 100000000u, 1, -1);
  ck_assert(first && next && last);
  uint64_t theirs;
  pid_t kid = nobody_sweep(&d, 100000000u, &theirs);
  ck_assert_uint_eq(job_state(&c, next), COOP_JOB_QUEUED);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_QUEUED);
  ck_assert_uint_eq(wait_job(&c, first, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
  uint8_t st = COOP_JOB_QUEUED;
  for (int i = 0; i < 600 && st == COOP_JOB_QUEUED; i++, msleep(50)) st = job_state(&c, theirs);
  ck_assert_uint_eq(st, COOP_JOB_RUNNING);
  ck_assert_uint_eq(job_state(&c, next), COOP_JOB_QUEUED);
  ck_assert_uint_eq(job_state(&c, last), COOP_JOB_QUEUED);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A DETACHED cooperative sweep of one workgroup with 2^32 - 1 rounds: it
 * holds its slot for the rest of the test. */
static uint64_t endless_sweep(struct conn *c) {
  static uint32_t data[64];
  union coop_msg m;
  submit_init(&m, "sweep", 1, 1);
  m.submit.flags |= COOP_SUBMIT_DETACHED;
  arg_buf(&m.submit, COOP_BUF_INOUT, data, sizeof data, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 0xffffffffu);
  return submit(c, &m, NULL, 0);
}

/* coopd for two users (root and nobody): the socket open to both. */
static void two_user_start(struct daemon_proc *d, const char *reserve) {
  /* a launch of at most 5 groups (4 workers): the tests hold every slot
   * with a job each, on PoCL's 2 workers as on a GPU's hundreds */
  const char *sets[] = {"kernels.dirs=" KERNEL_DIR ":" TEST_KERNEL_DIR, reserve,
                        "device.max_workgroups=5", NULL};
  daemon_start(d, sets);
  daemon_open_to_all(d);
}

/* Hardening, slots: root's endless detached sweep holds the only slot
 * (another user's bfs timed out, or waited 542 s, told nothing). The
 * other user, nobody, queues two; each WAIT that times out says the job
 * waits for a cooperative slot, how many jobs go before it, and that
 * other users hold the slot. Root's own queued job is told that the slot
 * is its own. Fair order: nobody's first (it holds none), then root's
 * (served longest ago), then nobody's second. */
START_TEST(cooperative_wait_says_why_and_how_many_ahead) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  two_user_start(&d, "jobs.reserve_percent=100"); /* one cooperative slot */
  struct conn c;
  open_hello(&c, &d);
  uint64_t held = endless_sweep(&c);
  ck_assert_uint_ne(held, 0);
  wait_running(&c, held);
  static uint32_t data[64];
  uint64_t mine = sweep_submit(&c, data, 64, 1000, 1, -1);
  ck_assert_uint_ne(mine, 0);
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t kid = fork();
  if (kid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(3);
    struct conn o;
    open_hello(&o, &d);
    char said[2][COOP_WIRE_TEXT_MAX];
    uint64_t b1 = sweep_submit(&o, data, 64, 1000, 1, -1);
    uint64_t b2 = sweep_submit(&o, data, 64, 1000, 1, -1);
    if (!b1 || !b2) _exit(4);
    wait_says(&o, b1, 300, said[0], sizeof said[0]);
    wait_says(&o, b2, 0, said[1], sizeof said[1]);
    if (write(pfd[1], said, sizeof said) != (ssize_t)sizeof said) _exit(5);
    pause(); /* keeps the connection, and so the jobs, until killed */
    _exit(0);
  }
  char said[2][COOP_WIRE_TEXT_MAX];
  ck_assert_int_eq(read(pfd[0], said, sizeof said), (ssize_t)sizeof said);
  fprintf(stderr, "nobody's first: %s\nnobody's second: %s\n", said[0], said[1]);
  assert_has(said[0], "is queued, waiting for a cooperative slot: 0 jobs ahead of it");
  assert_has(said[0], "1 of 1 slot held, 1 by other users");
  assert_has(said[1], "waiting for a cooperative slot: 2 jobs ahead of it");
  char own[COOP_WIRE_TEXT_MAX];
  wait_says(&c, mine, 0, own, sizeof own);
  fprintf(stderr, "root's second: %s\n", own);
  assert_has(own, "waiting for a cooperative slot: 1 job ahead of it");
  assert_has(own, "1 of 1 slot held, 0 by other users");
  wait_says(&c, held, 0, own, sizeof own); /* running: no slot to wait for */
  assert_has(own, "still running");
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  close(pfd[0]);
  close(pfd[1]);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, slots: with every worker a cooperative slot (reserve_percent
 * = 0, at least two), root alone queues one endless detached sweep per
 * slot. It took every slot, and another user's job then waited for as
 * long as they ran. Now the last free slot is kept for a user who holds
 * none: root runs all but one (its last one is told why it waits), and
 * nobody's sweep starts at once on the kept slot. */
START_TEST(one_user_cannot_take_every_cooperative_slot) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  two_user_start(&d, "jobs.reserve_percent=0");
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  ck_assert_uint_ge(w, 2);
  ck_assert_uint_le(w, 64);
  uint64_t s[64];
  for (uint32_t i = 0; i < w; i++) ck_assert_uint_ne(s[i] = endless_sweep(&c), 0);
  wait_running(&c, s[0]);
  msleep(500); /* every one that may start has started */
  unsigned running = 0;
  for (uint32_t i = 0; i < w; i++) running += job_state(&c, s[i]) == COOP_JOB_RUNNING;
  ck_assert_uint_eq(running, w - 1);
  char why[COOP_WIRE_TEXT_MAX];
  wait_says(&c, s[w - 1], 0, why, sizeof why);
  fprintf(stderr, "root's last: %s\n", why);
  assert_has(why, "the last free slot is kept for a user who holds none");
  uint64_t theirs;
  pid_t kid = nobody_sweep(&d, 0xffffffffu, &theirs);
  uint8_t st = COOP_JOB_QUEUED;
  for (int i = 0; i < 100 && st == COOP_JOB_QUEUED; i++, msleep(50)) st = job_state(&c, theirs);
  ck_assert_uint_eq(st, COOP_JOB_RUNNING);
  ck_assert_uint_eq(job_state(&c, s[w - 1]), COOP_JOB_QUEUED); /* every slot held now */
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, slots: root's endless sweep on every worker holds the only
 * slot, and once nobody's job waits for it, it kept every worker for as
 * long as it ran. Now it is held at root's share of the width,
 * floor(workers / 2 users), at its next resizing barrier; a WAIT says so;
 * once nobody's job is gone the WAIT says nothing of it and the sweep
 * grows back (its result's M and forks tell). */
START_TEST(a_waiting_user_shrinks_the_holder) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d;
  two_user_start(&d, "jobs.reserve_percent=100"); /* one cooperative slot */
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers, share = w / 2 ? w / 2 : 1;
  ck_assert_uint_ge(w, 2);
  static uint32_t data[64];
  union coop_msg m;
  submit_init(&m, "sweep", w, 1);
  arg_buf(&m.submit, COOP_BUF_INOUT, data, sizeof data, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 64);
  arg_u32(&m.submit, 0xffffffffu);
  uint64_t v = submit(&c, &m, NULL, 0);
  ck_assert_uint_ne(v, 0);
  wait_running(&c, v);
  msleep(300);
  uint64_t theirs;
  pid_t kid = nobody_sweep(&d, 1000, &theirs);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_QUEUED); /* root may see its state */
  char why[COOP_WIRE_TEXT_MAX], want[96];
  wait_says(&c, v, 300, why, sizeof why);
  fprintf(stderr, "root's sweep: %s\n", why);
  snprintf(want, sizeof want, "held at %u workgroup", share);
  assert_has(why, want);
  assert_has(why, "while 2 users' cooperative jobs share the device");
  msleep(500);      /* held at the share for a while */
  stop_nobody(kid); /* nobody's queued job goes with its connection */
  for (int i = 0; i < 100; i++, msleep(50)) {
    wait_says(&c, v, 0, why, sizeof why);
    if (!strstr(why, "held at")) break;
  }
  assert_has(why, "still running");
  ck_assert_ptr_null(strstr(why, "held at"));
  msleep(500); /* alone again: free to grow back */
  cancel_ok(&c, v);
  ck_assert_uint_eq(wait_job(&c, v, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c.m.result.state, COOP_JOB_CANCELLED);
  const struct coop_msg_result *r = &c.m.result;
  fprintf(stderr, "root's sweep: M %u..%u, %u kills, %u forks\n", r->m_min, r->m_max, r->kills,
          r->forks);
  ck_assert_uint_eq(r->m_max, w);
  ck_assert_uint_le(r->m_min, share);
  ck_assert_uint_ge(r->forks, w - share); /* grew back once alone */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, the tasks' share: nobody runs a cooperative sweep; root
 * then submits renders of every worker but the sweep's one, 24 at once
 * ([jobs] tasks_per_uid keeps 4 in flight, so the queue never empties).
 * Nothing bounded what root's tasks took: the sweep was held at one
 * workgroup for as long as they came (root's renders ran nearly all the
 * time). Now, while another user's cooperative job runs, a user's tasks
 * together take at most [jobs] task_percent_per_uid of the device's worker
 * time (here 30), after a burst: from 0.5 s after root's first render
 * starts, its renders run at most 45% of the time; every one ends DONE,
 * and a WAIT of a held one says why. */
START_TEST(a_users_tasks_take_at_most_their_share_beside_another_users_kernel) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.task_percent_per_uid=20", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  ck_assert_uint_ge(w, 2);
  union coop_msg m;
  render_init(&m, w - 1); /* the sweep keeps its workgroup 0 */
  /* about 20 ms a render, from the faster of two probes, alone (nothing
   * held yet): a render just after the launch can run four times slower
   * on PoCL, and renders a quarter as long ended within the burst (a rep
   * 42 us in the probe, 19 in the flood) */
  render_reps_for(&c, &m, 4, 2, 20e6, 100000);
  uint64_t theirs;
  pid_t kid = nobody_sweep(&d, 100000000u, &theirs);
  wait_running(&c, theirs); /* root's renders before it would run unbounded */
  enum { N = 48 };
  uint64_t flood[N];
  for (int i = 0; i < N; i++) {
    flood[i] = submit(&c, &m, NULL, 0);
    ck_assert_msg(flood[i] != 0, "render %d refused: %s", i, c.m.error.message);
  }
  int said_why = 0;
  char said[COOP_WIRE_TEXT_MAX];
  for (int k = 0; k < 300 && !said_why; k++) {
    for (int i = 0; i < N && !said_why; i++) {
      if (wait_job(&c, flood[i], 0) != COOP_MSG_ERROR) continue; /* ended */
      snprintf(said, sizeof said, "%s", c.m.error.message);
      said_why = strstr(said, "waiting for its user's share of the device") != NULL;
    }
    if (!said_why) msleep(10);
  }
  ck_assert_msg(said_why, "no render of root's said it waits for its share");
  assert_has(said, "[jobs] task_percent_per_uid = 20%");
  /* Renders shorter than the probe said (PoCL's speed changes from one
   * moment to the next) may all end within the burst: another flood
   * then follows the last at once, up to three more, so the window past
   * the burst is at least 0.5 s whatever a render took. */
  enum { ROUNDS = 4 };
  int64_t from = INT64_MAX, to = 0, start[ROUNDS * N], end[ROUNDS * N];
  int n = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (round > 0) {
      if (to - from > 1000000000) break; /* 0.5 s of burst and 0.5 past it */
      for (int i = 0; i < N; i++) {
        flood[i] = submit(&c, &m, NULL, 0);
        ck_assert_msg(flood[i] != 0, "render %d refused: %s", i, c.m.error.message);
      }
    }
    for (int i = 0; i < N; i++, n++) {
      ck_assert_uint_eq(wait_job(&c, flood[i], COOP_WAIT_FOREVER), COOP_MSG_RESULT);
      ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's render %d: %s", n,
                    c.m.result.message);
      start[n] = c.m.result.t.started;
      end[n] = c.m.result.t.finished;
      if (start[n] < from) from = start[n];
      if (end[n] > to) to = end[n];
    }
  }
  stop_nobody(kid);
  from += 500000000; /* past the burst */
  ck_assert_msg(to - from > 500000000, "root's renders ended %.0f ms after the burst",
                (double)(to - from) / 1e6);
  int64_t busy = 0; /* in from..to; root's renders run one at a time (every worker but one) */
  for (int i = 0; i < n; i++) {
    int64_t a = start[i] > from ? start[i] : from, b = end[i] < to ? end[i] : to;
    if (b > a) busy += b - a;
  }
  double share = (double)busy * (w - 1) / w / (double)(to - from); /* of the worker time */
  fprintf(stderr, "root's renders took %.0f%% of %u workers' %.0f ms\n", share * 100, w,
          (double)(to - from) / 1e6);
  ck_assert_msg(share <= 0.32,
                "root's renders took %.0f%% of the worker time beside nobody's sweep", share * 100);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, deadlines: nobody runs a periodic render on every worker
 * whose instances take longer than its period (about 4 ms each, every
 * 1 ms). Each instance went to the megakernel due at its release plus the
 * period while up to 8 of them waited there, and a task without a
 * deadline (root's render on one workgroup) never reached the queue's
 * head: root's renders waited seconds and failed EHUNG once
 * gather_budget_ms passed, and their cancellation, which the scheduler
 * takes only at the head, was then called a hang: the device restarted
 * (nobody's job lost with it) and root's jobs were held back. Now an
 * instance released a period or more after its place carries no
 * deadline, and a task still queued is not called hung. */
START_TEST(a_periodic_job_behind_its_period_starves_no_one) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.gather_budget_ms=3000", "jobs.hang_ms=1000", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  union coop_msg m;
  render_init(&m, w);
  render_reps_for(&c, &m, 8, 1, 4e6, 1000000); /* about 4 ms an instance */
  m.submit.period_us = 1000;
  m.submit.count = 60000;
  uint64_t theirs;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  wait_running(&c, theirs);
  int64_t worst = 0;
  for (int k = 0; k < 5; k++) {
    union coop_msg r;
    render_init(&r, 1);
    int64_t t0 = now_ms();
    uint64_t job = submit(&c, &r, NULL, 0);
    ck_assert_uint_ne(job, 0);
    ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's render %d beside the periodic job: %s",
                  k, c.m.result.message);
    if (now_ms() - t0 > worst) worst = now_ms() - t0;
  }
  fprintf(stderr, "root's renders beside a periodic job behind its period: the worst %lld ms\n",
          (long long)worst);
  ck_assert_msg(worst < 1500, "a render of root's took %lld ms", (long long)worst);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_RUNNING); /* no restart took it */
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A child of root's that keeps `depth` jobs of m in flight on a
 * connection of its own, submitting one as each ends, until killed. */
static pid_t keep_in_flight(struct daemon_proc *d, const union coop_msg *m, unsigned depth) {
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid) return kid;
  struct conn c;
  open_hello(&c, d);
  uint64_t ring[16];
  unsigned head = 0, tail = 0;
  for (;;) {
    while (tail - head < depth && tail - head < 16) {
      union coop_msg x = *m;
      uint64_t job = submit(&c, &x, NULL, 0);
      if (!job) _exit(3);
      ring[tail++ % 16] = job;
    }
    if (wait_job(&c, ring[head++ % 16], COOP_WAIT_FOREVER) != COOP_MSG_RESULT) _exit(4);
  }
}

/* Hardening, deadlines: root keeps eight one-instance periodic renders of
 * every worker in flight (period 100 ms, count 1: each due 100 ms after
 * its release, and none ever behind its period, the one case that dropped
 * a periodic instance's deadline), within every bound ([jobs]
 * tasks_per_uid, two whole-device tasks ahead). The scheduler serves the
 * earliest deadline first and a task without one counted as the latest:
 * at every choice one of root's was queued and went ahead of nobody's
 * plain render, which waited until its gather budget ran out (EHUNG) or
 * for a gap the machine happened to leave (1.5-8.8 s beside 100-300-rep
 * renders). Now a task without a deadline is due [jobs] undated_due_ms
 * (50 ms) after its submit: nobody's render goes ahead of root's once its
 * due time comes. */
START_TEST(a_stream_of_deadlines_starves_no_one) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.gather_budget_ms=4000", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  union coop_msg m;
  render_init(&m, w);
  render_reps_for(&c, &m, 512, 2, 300e6, 1000000); /* about 300 ms a render */
  uint64_t probe = submit(&c, &m, NULL, 0);
  ck_assert_uint_eq(wait_job(&c, probe, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  int64_t e_ms = c.m.result.t.exec_ns / 1000000; /* E: one alone */
  m.submit.period_us = 100000;
  m.submit.count = 1;
  pid_t kid = keep_in_flight(&d, &m, 8);
  msleep(300); /* the stream under way */
  struct seen_result b = render_as_nobody(&d, w);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  ck_assert_msg(b.state == COOP_JOB_DONE, "nobody's render beside root's stream ended %s (%d): %s",
                coop_job_state_name(b.state), b.error, b.message);
  int64_t ms = (b.finished - b.submitted) / 1000000;
  fprintf(stderr,
          "nobody's render beside root's stream of deadlines: %lld ms on the device (E %lld ms)\n",
          (long long)ms, (long long)e_ms);
  /* 50 ms to its due time, the one of root's running and the one due
   * sooner, then its own run: about 3 E; before, 7-9 s (24-30 E) or
   * EHUNG */
  ck_assert_msg(ms < 6 * e_ms + 200,
                "nobody's render waited %lld ms behind root's deadlines (E %lld)", (long long)ms,
                (long long)e_ms);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, the turns: nobody's render on every worker, periodic every
 * 1 ms, its instances about 20 ms (E, measured on root's own run of it).
 * Behind its period it kept eight instances in flight (DEV_MAX_INFLIGHT),
 * seven queued ahead of any task another user submitted, where a user's
 * jobs may keep two whole-device tasks ahead (dev_turns.c): root's render
 * on one workgroup waited about seven E (7.1 and 7.7 in two runs). Now a
 * periodic job's instances in flight hold at most twice the workers:
 * root's waits about two (2.0, 2.75). The median of five renders is
 * judged: one render slowed by the machine says nothing of the turns.
 * _i = 1: four such jobs of nobody's, each of half the workers (E: one
 * instance alone, beside nothing). Counted a job at a time, each kept
 * instances of twice the workers in flight: sixteen halves, eight E ahead
 * of root's render; now all four together hold twice the workers. */
START_TEST(a_periodic_job_behind_its_period_keeps_two_ahead) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, NULL, &c);
  int jobs = _i ? 4 : 1;
  uint32_t groups = _i ? (w / 2 ? w / 2 : 1) : w;
  union coop_msg m;
  render_init(&m, groups);
  render_reps_for(&c, &m, 64, 2, 20e6, 10000000); /* about 20 ms an instance */
  int64_t t0, e = 0; /* an instance, as a client sees it: the slower of two */
  for (int k = 0; k < 2; k++) {
    t0 = now_ms();
    uint64_t probe = submit(&c, &m, NULL, 0);
    ck_assert_uint_eq(wait_job(&c, probe, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    if (now_ms() - t0 > e) e = now_ms() - t0;
  }
  m.submit.period_us = 1000;
  m.submit.count = 60000;
  uint64_t theirs;
  pid_t kids[4];
  for (int k = 0; k < jobs; k++) {
    kids[k] = nobody_submit(&d, &m, &theirs);
    wait_running(&c, theirs);
  }
  enum { R = 5 };
  int64_t took[R];
  for (int k = 0; k < R; k++) {
    union coop_msg r;
    render_init(&r, 1);
    t0 = now_ms();
    uint64_t job = submit(&c, &r, NULL, 0);
    ck_assert_uint_ne(job, 0);
    ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
    ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's render %d: %s", k, c.m.result.message);
    took[k] = now_ms() - t0;
  }
  qsort(took, R, sizeof took[0], cmp_i64);
  fprintf(stderr,
          "root's renders beside %d periodic job%s of %u workgroups, %lld ms instances: the "
          "median %lld ms, the worst %lld ms\n",
          jobs, jobs > 1 ? "s" : "", groups, (long long)e, (long long)took[R / 2],
          (long long)took[R - 1]);
  /* One job: before, 7.1-7.7 E; now 2.0-3.1 E (on a loaded machine too).
   * Four jobs: before, 10.4-10.7 E; now 2.0-3.2 E, and 4.9 once in a
   * clean-clone suite where E, measured before the load came, was low.
   * Each bound lies between the two. */
  int64_t halves = _i ? 14 : 9;
  ck_assert_msg(took[R / 2] < halves * (e > 0 ? e : 1) / 2,
                "root's renders took %lld ms at the median, %.1f instances", (long long)took[R / 2],
                (double)took[R / 2] / (double)(e > 0 ? e : 1));
  for (int k = 0; k < jobs; k++) stop_nobody(kids[k]);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening, the watchdog: nobody runs an endless render on every worker
 * and queues a second; root's render waits behind that one in the
 * megakernel's queue, and root cancels it. The scheduler takes a
 * cancellation at the queue's head, so the task stayed queued, and
 * hang_ms (here 500 ms) later the watchdog called it hung: the device
 * restarted, nobody's running render was lost, and root was held back for
 * a restart it did not cause. Now a cancelled task still queued is not
 * called hung before 2 hang_ms + gather_budget_ms (3 s here) have passed:
 * 1.5 s on, nobody's render runs and root's waits; once nobody's second
 * fails its gather (gather_budget_ms, 2 s) root's reaches the head and
 * ends CANCELLED. */
START_TEST(a_cancelled_task_still_queued_is_not_called_hung) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.hang_ms=500", "jobs.task_max_ms=60000", "jobs.gather_budget_ms=2000",
                        NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  union coop_msg m;
  render_init(&m, w);
  m.submit.args[4].bits = 0xffffffffu; /* until its connection closes */
  uint64_t theirs, second;
  pid_t kid = nobody_submit(&d, &m, &theirs);
  wait_running(&c, theirs);
  render_init(&m, w);
  pid_t kid2 = nobody_submit(&d, &m, &second);
  msleep(100); /* at the queue's head, waiting for every worker */
  union coop_msg r;
  render_init(&r, 1);
  uint64_t job = submit(&c, &r, NULL, 0);
  ck_assert_uint_ne(job, 0);
  msleep(100); /* queued behind nobody's second */
  ck_assert_msg(wait_job(&c, job, 0) != COOP_MSG_RESULT, "root's render did not wait");
  cancel_ok(&c, job);
  msleep(1500);
  ck_assert_msg(wait_job(&c, job, 0) != COOP_MSG_RESULT, "root's cancelled render ended %s: %s",
                coop_job_state_name(c.m.result.state), c.m.result.message);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_RUNNING); /* no restart took it */
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_CANCELLED, "root's cancelled render ended %s: %s",
                coop_job_state_name(c.m.result.state), c.m.result.message);
  ck_assert_uint_eq(job_state(&c, theirs), COOP_JOB_RUNNING);
  stop_nobody(kid2);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Hardening: a user's holds ahead count toward its share. The scheduler
 * gathers a periodic task's workers ahead of each instance (docs/
 * scheduler.md, "Gathering ahead"): it keeps them free from COOP_RT_AHEAD_NS
 * (0.5 ms) before each release, taken from the cooperative kernels beside
 * it, until the instance starts. A periodic render of every worker but
 * one, a task of microseconds every 2 ms, so held them for a quarter of
 * the time while only its tasks' runs were charged to its share: even at
 * 1% it was never held back, and its instances came on time. Now the
 * hold after each task counts too (an instance already late has none:
 * its window is over), so past the burst most of them wait for the share
 * and come late. */
START_TEST(a_users_holds_ahead_count_toward_its_share) {
  if (geteuid() != 0) return; /* needs a second uid: CI runs as root */
  const char *sets[] = {"jobs.task_percent_per_uid=1", NULL};
  struct daemon_proc d = {0};
  struct conn c;
  uint32_t w = open_to_nobody(&d, sets, &c);
  ck_assert_uint_ge(w, 2);
  uint64_t theirs;
  pid_t kid = nobody_sweep(&d, 100000000u, &theirs);
  wait_running(&c, theirs); /* its sweep on the device */
  enum { N = 8, COUNT = 400, PERIOD_US = 2000 };
  static float a[N * N];
  union coop_msg m;
  render_init_n(&m, w - 1, a, a, N); /* the sweep keeps its workgroup 0 */
  m.submit.period_us = PERIOD_US;
  m.submit.count = COUNT;
  uint64_t job = submit(&c, &m, NULL, 0);
  ck_assert_msg(job != 0, "refused: %s", c.m.error.message);
  ck_assert_uint_eq(wait_job(&c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "%s", c.m.result.message);
  ck_assert_uint_eq(c.m.result.ninst, COUNT);
  int64_t t0 = 0;
  unsigned on_time = 0; /* released within 1 ms of its place in the period */
  for (uint32_t i = 0; i < COUNT; i++) {
    struct coop_wire_inst in;
    ck_assert_int_eq(coop_wire_inst_get(&c.m.result, i, &in), 0);
    if (i == 0) t0 = in.t.released;
    on_time += in.t.released - (t0 + (int64_t)i * PERIOD_US * 1000) <= 1000000;
  }
  fprintf(stderr, "%u of %d instances every %d us on time beside nobody's sweep\n", on_time, COUNT,
          PERIOD_US);
  ck_assert_msg(on_time < COUNT / 4,
                "root's periodic render was not held for its share: %u of %d "
                "instances on time",
                on_time, COUNT);
  stop_nobody(kid);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

void daemon_isolation_cases(Suite *s) {
  TCase *t = tcase_create("isolation");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, attack_sweep_n_past_its_buffer);
  tcase_add_test(t, attack_neighbour_buffers);
  tcase_add_test(t, attack_reads_nothing_of_others);
  tcase_add_test(t, guard_zone_breach_fails_the_job);
  tcase_add_test(t, attack_endless_render_then_leave);
  tcase_add_test(t, attack_cooperative_jobs_pin_every_worker);
  tcase_add_test(t, hello_name_cannot_forge_log_lines);
  tcase_add_test(t, top_shows_no_other_users_job);
  tcase_add_test(t, waiters_are_bounded);
  tcase_add_test(t, device_process_crash_costs_its_jobs_only);
  tcase_add_test(t, hung_kernel_restarts_its_device);
  tcase_add_test(t, one_users_running_jobs_leave_room_for_others);
  tcase_add_test(t, a_job_too_large_for_its_share_holds_no_one_back);
  tcase_add_test(t, a_users_cooperative_job_gives_its_room_back);
  tcase_add_test(t, another_users_small_buffer_leaves_a_moved_job_its_way_back);
  tcase_add_test(t, a_users_device_buffers_count_toward_its_room);
  tcase_add_test(t, a_suspended_job_gives_its_room_back);
  suite_add_tcase(s, t);
  t = tcase_create("slots");
  suite_add_tcase(s, t);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, cooperative_slots_are_shared_between_users);
  tcase_add_test(t, cooperative_wait_says_why_and_how_many_ahead);
  tcase_add_test(t, a_waiting_user_shrinks_the_holder);
  tcase_add_test(t, one_user_cannot_take_every_cooperative_slot);
  t = tcase_create("task_bound");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, task_max_ms_ends_a_detached_render);
  tcase_add_test(t, ehung_names_no_other_users_job);
  tcase_add_test(t, a_flood_of_tasks_queues_no_other_user_behind_it);
  tcase_add_test(t, a_users_tasks_take_at_most_their_share_beside_another_users_kernel);
  tcase_add_test(t, a_users_holds_ahead_count_toward_its_share);
  tcase_add_test(t, a_periodic_job_behind_its_period_starves_no_one);
  tcase_add_test(t, a_stream_of_deadlines_starves_no_one);
  tcase_add_test(t, a_cancelled_task_still_queued_is_not_called_hung);
  tcase_add_loop_test(t, a_periodic_job_behind_its_period_keeps_two_ahead, 0, 2);
  suite_add_tcase(s, t);
  t = tcase_create("cancel");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, attack_hostile_bfs_is_cancelled);
  suite_add_tcase(s, t);
}
