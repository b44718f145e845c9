/*
 * daemon_harness.h: what every part of test_daemon uses: a coopd of its
 * own on a socket in a temporary directory (daemon_*), its log and other
 * files (log_*, file_*, kernels_dir_*), a raw protocol client (struct conn:
 * conn_*, send_msg, reply, hello; the raw codec, so that malformed input
 * can be sent too), jobs (submit_*, arg_*, render_*, sweep_*, job_*,
 * wait_*) and the processes and clocks the tests look at. The parts
 * themselves, one file per concern, add their cases to the one suite
 * (test_daemon.c).
 */
#ifndef COOP_DAEMON_HARNESS_H
#define COOP_DAEMON_HARNESS_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"

/* ---- the parts of the suite (test_daemon_*.c) ---- */

/* Each adds its cases to s. The integration case t, which test_daemon.c
 * makes, holds basics' tests and then the faults' watchdog, arena and
 * crash tests. */
void daemon_basics_cases(TCase *t);
void daemon_faults_cases(Suite *s, TCase *t);
void daemon_isolation_cases(Suite *s); /* isolation, slots, task_bound, cancel */
void daemon_parking_cases(Suite *s);
void daemon_service_cases(Suite *s); /* devices, systemd, metrics_http */
void daemon_state_cases(Suite *s);
void daemon_limits_cases(Suite *s);
void daemon_priority_cases(Suite *s); /* priority */
void daemon_suspend_cases(Suite *s);  /* checkpoints, migrate */
void daemon_authors_cases(Suite *s);  /* kernel authors */
void daemon_ring_cases(Suite *s);     /* the shared ring */

/* ---- a daemon ---- */

struct daemon_proc {
  pid_t pid;
  char dir[64], sock[128];
  const char *log; /* when set, the daemon's stderr goes to this file */
};

/* Starts coopd on d->sock with extra --set flags; waits until its socket
 * answers. d->log must be set (or NULL) by the caller. */
void daemon_spawn(struct daemon_proc *d, const char *const *sets);

/* The same in a new temporary directory. */
void daemon_start_log(struct daemon_proc *d, const char *const *sets);

/* SIGTERM (unless already sent) and the exit status. */
int daemon_wait(struct daemon_proc *d, int signal_it);

int daemon_stop(struct daemon_proc *d);

void daemon_start(struct daemon_proc *d, const char *const *sets);

/* Stops d, which must exit 0; its log (at path) is shown if it did not. */
void daemon_stop_ok(struct daemon_proc *d, const char *path);

/* daemon_start_log (d->log set, or NULL), then daemon_wait_listening
 * (daemon_harness.c says why). */
void daemon_start_listening(struct daemon_proc *d, const char *const *sets);

/* d's socket (and its directory) open to every user: a second uid's
 * clients (nobody's) may connect. */
void daemon_open_to_all(const struct daemon_proc *d);

/* ---- files and logs ---- */

/* Creates the empty file for a daemon's log: path ends in XXXXXX.log. */
void log_temp(char *path);

/* Whether the file contains s (the daemon's log). */
int log_has(const char *path, const char *s);
/* Where s first occurs in the log at path (its first 256 KiB), or -1. */
long log_offset(const char *path, const char *s);
/* How many times s occurs in the log at path (its first 256 KiB). */
int log_count(const char *path, const char *s);

/* On a failure: the daemon's log, the last of it. */
void log_print(const char *path);

void file_write(const char *path, const char *text);

void file_copy(const char *from, const char *to);

/* kdir (a mkdtemp template) made, with the shipped render.cl and sweep.cl
 * in it: for tests that put other kernels beside them. */
void kernels_dir_make(char *kdir);

/* The copies kernels_dir_make made, and kdir (empty by then: the test
 * removes what it added). */
void kernels_dir_remove(const char *kdir);

/* A memfd of size bytes (zeros). */
int memfd_of(size_t size);

/* ---- a raw client ---- */

struct conn {
  int fd;
  uint32_t seq;
  struct coop_wire_reader rd;
  uint8_t *payload; /* of the last frame read (owned copy) */
  struct coop_wire_hdr h;
  union coop_msg m;
  int events; /* EVENT frames skipped while waiting for a reply */
};

int conn_open(struct conn *c, const char *path);

void conn_close(struct conn *c);

void send_raw(struct conn *c, const uint8_t *b, size_t n, const int *fds, unsigned nfds);

uint32_t send_msg(struct conn *c, uint16_t type, const union coop_msg *m, const int *fds,
                  unsigned nfds);

/* Next frame: 1, or 0 on EOF / error. Decoded into c->m. */
int read_frame(struct conn *c);

/* The reply to seq (events before it are counted and skipped). */
uint16_t reply(struct conn *c, uint32_t seq);

void hello(struct conn *c);

void open_hello(struct conn *c, const struct daemon_proc *d);

/* conn_open and hello, retried while a restarted coopd's stale socket is
 * still there. */
void conn_reconnect(struct conn *c, const struct daemon_proc *d);

/* ---- jobs ---- */

void arg_u32(struct coop_msg_submit *s, uint32_t v);

void arg_buf(struct coop_msg_submit *s, uint8_t dir, const void *data, uint64_t size, uint8_t fd);

extern uint8_t submit_device; /* what submit_init asks for */

void submit_init(union coop_msg *m, const char *kernel, uint32_t groups, int coop);

/* SUBMIT; returns the job id, or 0 with c->m.error holding the refusal. */
uint64_t submit(struct conn *c, const union coop_msg *m, const int *fds, unsigned nfds);

/* A WAIT for job sent, its reply not read: its seq (reply(c, seq) later). */
uint32_t wait_send(struct conn *c, uint64_t job, uint32_t timeout_ms);
uint16_t wait_job(struct conn *c, uint64_t job, uint32_t timeout_ms);

void expect_error(struct conn *c, uint64_t job, int code);

void assert_has(const char *text, const char *want);

/* A refusal with its code and a piece of its message. */
void expect_refusal(struct conn *c, uint64_t job, int code, const char *says);

#define RN 24 /* render matrix size */

void matmul_ref(const float *a, const float *b, float *o);

void render_inputs(float *a, float *b);

/* A render job (periodic when period_us) with inline buffers, checked. */
void render_check(struct conn *c, uint32_t groups, uint32_t period_us, uint32_t count);

/* A valid render SUBMIT with inline buffers (one task, not checked). */
void render_init(union coop_msg *m, uint32_t groups);
/* The same for n x n inputs a and b (the caller's, alive until the send). */
void render_init_n(union coop_msg *m, uint32_t groups, const float *a, const float *b, uint32_t n);

/* render_init_n on one workgroup, a and b both n x n ones (n <= 256): the
 * renders the tests size to take room in the arena (3 x n^2 x 4 bytes). */
void render_ones(union coop_msg *m, uint32_t n);

uint64_t render_submit(struct conn *c, uint32_t groups);

/* Whether the daemon lists a kernel of this name (KERNELS). */
int has_kernel(struct conn *c, const char *name);

/* The daemon's STATS. */
struct coop_msg_stats_reply stats(struct conn *c);

/* Submits sweep over n u32 (inline INOUT from data) for rounds. */
uint64_t sweep_submit(struct conn *c, uint32_t *data, uint32_t n, uint32_t rounds, uint32_t groups,
                      int fd);
/* The same (inline), its kind and width left to coopd: OWN_KIND, 0 groups. */
uint64_t sweep_submit_own(struct conn *c, uint32_t *data, uint32_t n, uint32_t rounds);
/* A memfd of `words` u32 (too large to go inline) for sweep_submit, and
 * in *rounds how many rounds of a sweep of one workgroup over it take
 * about ms milliseconds (10 timed ones, at least 20); the memfd then holds
 * 0, 1, 2, ... */
int sweep_memfd(struct conn *c, uint32_t words, double ms, uint32_t *rounds);
/* Every word i of such a memfd is i + rounds; it is closed. */
void sweep_memfd_check(int fd, uint32_t words, uint32_t rounds);

/* A WAIT of job for timeout_ms that must time out (the job has not ended):
 * its message ("job 7 is queued, waiting for ...") into buf. */
void wait_says(struct conn *c, uint64_t job, uint32_t timeout_ms, char *buf, size_t n);

/* Until such a WAIT of job says `what` (100 WAITs of 20 ms at most): its
 * last message in said. */
void waits_for(struct conn *c, uint64_t job, const char *what, char *said, size_t n);

/* A device buffer of size bytes for c (BUF_CREATE, no contents): its id. */
uint64_t buf_create_raw(struct conn *c, uint64_t size);

/* A DETACHED sweep of one workgroup that runs until cancelled. */
uint64_t detached_sweep(struct conn *c);

/* A job's state as STATUS reports it, and its whole record. */
uint8_t job_state(struct conn *c, uint64_t job);
/* Its state once ended, asked every 10 ms for at most ms (a job another
 * connection waits for); the last one seen if it has not ended by then. */
uint8_t state_when_ended(struct conn *c, uint64_t job, uint32_t ms);
/* A CANCEL of job, answered OK. */
void cancel_ok(struct conn *c, uint64_t job);
struct coop_wire_status job_status(struct conn *c, uint64_t job);

/* body(c, arg, out) in a child as uid (root only: its groups dropped) on a
 * connection c of its own to d; the n bytes body leaves in out come back
 * to the caller's out once the child exits (its status: the child's 3 for
 * a uid it could not take, 4 for a pipe it could not write). */
struct conn;
typedef void (*as_user_fn)(struct conn *c, const void *arg, void *out);
int as_user(const struct daemon_proc *d, uid_t uid, as_user_fn body, const void *arg, void *out,
            size_t n);

/* A child as nobody (uid 65534) that submits m on a connection of its own
 * and keeps it, and so the job (unless DETACHED), until killed; *job: the
 * job's id. Needs root. */
pid_t nobody_submit(struct daemon_proc *d, const union coop_msg *m, uint64_t *job);
/* The same with fd (>= 0) sent with the SUBMIT, as its descriptor 0. */
pid_t nobody_submit_fd(struct daemon_proc *d, const union coop_msg *m, int fd, uint64_t *job);
/* A frame loop of another client, in a child process on a connection of
 * its own: n renders of priority 0 on one workgroup, the i-th at
 * start_ms + i * period_ms (now_ms's clock); the child exits 0 when every
 * render ended DONE, 1 at the first that did not. */
pid_t loop_child(const struct daemon_proc *d, int64_t start_ms, int period_ms, int n);
/* The same as uid (root only; uid_t -1: the caller's); the child exits 3
 * if it could not take it. */
pid_t loop_child_as(const struct daemon_proc *d, uid_t uid, int64_t start_ms, int period_ms, int n);
/* loops such loops in one child process, one a connection (at most 16):
 * each period every connection's render is submitted, then each waited
 * for. */
pid_t loops_child_as(const struct daemon_proc *d, uid_t uid, int loops, int64_t start_ms,
                     int period_ms, int n);

/* Waits until the job is RUNNING (its task submitted to the megakernel),
 * then a little more so that its workgroups are on the device. */
void wait_running(struct conn *c, uint64_t job);

/* ---- processes and time ---- */

void msleep(int ms);

int64_t now_ms(void);

/* The children of parent (at most max), and their names (comm) if names
 * is not NULL; how many. */
unsigned children_of(pid_t parent, pid_t *kids, char (*names)[32], unsigned max);
/* The device process of a coopd (devproc.h): its child named coopd-device. */
pid_t device_process(pid_t coopd);

/* CPU time (user + system) a process has used, in clock ticks, from /proc. */
unsigned long long cpu_ticks(pid_t pid);
/* The same for one thread of it (tid == pid: its main thread). */
unsigned long long thread_ticks(pid_t pid, pid_t tid);

/* ---- slowsweep jobs (kernels/tests/priority) ---- */

/* A slowsweep over n words starting at base + i, of `rounds` rounds of at
 * least kticks x 1024 device clock ticks each, on up to `groups`
 * workgroups, at priority p: the job, or 0 (c->m the ERROR). */
uint64_t sweep_at(struct conn *c, uint32_t *data, uint32_t n, uint32_t base, uint32_t rounds,
                  uint32_t kticks, uint32_t groups, int32_t p);
/* Its RESULT: DONE, every word base + i + rounds (a suspension that lost
 * or repeated a round would show). c->m holds the RESULT after. */
void sweep_check(struct conn *c, uint64_t job, uint32_t n, uint32_t base, uint32_t rounds);
/* kticks for rounds of about 10 ms on `groups` workgroups. */
uint32_t kticks_10ms(struct conn *c, uint32_t groups);
/* Waits (at most 30 s) until job's STATUS says suspended; 1 if it did. */
int seen_suspended(struct conn *c, uint64_t job);

#endif /* COOP_DAEMON_HARNESS_H */
