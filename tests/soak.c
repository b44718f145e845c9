/*
 * soak.c: coop-soak, a bounded soak test of coopd through libcoop.
 *
 * It starts its own coopd (socket and log in a temporary directory), or
 * uses the one at --socket, and runs --clients client threads plus one
 * "graphics" thread for --seconds. Each client loops at random: connect;
 * submit `render` tasks (single, or periodic with a count and a deadline)
 * and cooperative `sweep` jobs (random groups, rounds, query barrier), some
 * of them DETACHED; wait for some, cancel some, ask STATUS, STATS, wait
 * again for finished ones; then end the session gracefully (wait for
 * everything) or abruptly (close with jobs in flight, then look at the
 * orphans from a new connection). The graphics thread keeps periodic render
 * jobs going, the way a compositor would.
 *
 * Invariants (each failure names one, and the seed):
 *   ledger       every job the daemon ACCEPTED (ids unique) gets exactly one
 *                final state through WAIT while its client is connected, the
 *                same in every later WAIT and STATUS; never REFUSED or FAILED
 *                (every job is valid); CANCELLED only if the soak asked;
 *   results      a DONE job's output equals the CPU reference exactly; a job
 *                that did not end DONE leaves the caller's memory untouched;
 *   detached     a DETACHED job survives its client's disconnect and is
 *                waitable from a new connection of the same uid;
 *   orphans      a non-detached job of a closed connection ends CANCELLED
 *                (or DONE, if it finished first) or is gone;
 *   requests     valid requests get their replies, not errors;
 *   no deadlock  every call has a timeout; a watchdog fails the run after
 *                STALL_MS without a job finishing;
 *   descriptors  coopd's /proc/PID/fd count is back to its start-up value
 *                once every client has gone;
 *   memory       coopd's VmRSS after the run is within a stated bound of
 *                its VmRSS after the warm-up phase (see check_memory);
 *   stats        STATS answers, and its counters match the ledger;
 *   shutdown     (own daemon) SIGTERM makes coopd exit 0.
 *
 * A seed fixes each thread's random stream, so a replay repeats the mix
 * (kinds, sizes, flags, the order of operations); what a choice lands on
 * (which job is still running when it is cancelled, say) depends on the
 * daemon's timing, which no seed fixes.
 */
#define _GNU_SOURCE /* mkdtemp, readlinkat, struct ucred */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coop.h"
#include "coopd_argv.h"

#define MAX_CLIENTS 60          /* coopd's default max_clients is 64: leave room */
#define MAX_OUTSTANDING 12      /* per session, well under max_jobs_per_client */
#define MAX_SESSION_JOBS 64     /* well under max_finished_per_client (256) */
#define CALL_TIMEOUT_MS 30000   /* any request but WAIT */
#define FINAL_WAIT_MS 90000     /* a job must end this soon once waited for */
#define STALL_MS 60000          /* the watchdog: no job finished for this long */
#define START_TIMEOUT_MS 120000 /* coopd's discovery and build */
#define SETTLE_MS 10000         /* descriptors closing after the last client */
#define QUIESCE_MS 45000        /* jobs of gone clients ending (before STALL_MS) */
#define SENTINEL (-12345.0f)    /* render's c before the job: no product reaches it */

/* ---- state shared by the threads ---- */

struct opts {
  unsigned seconds, clients;
  uint64_t seed;
  const char *socket;
};

/* What a client thread is doing, for the watchdog's dump. */
struct client {
  unsigned index;
  int graphics;
  uint64_t rng;
  int64_t end_ms;
  pthread_t th;
  _Atomic(const char *) doing;
  atomic_ullong job;
  atomic_llong since_ms;
};

static struct {
  struct opts o;
  char sock[108], dir[64], log[128];
  pid_t child; /* our coopd, or 0 */
  pid_t dpid;  /* the daemon's pid (ours, or SO_PEERCRED's) */
  uint32_t workers, inline_max;
  atomic_int stop;      /* a failure: everyone winds down */
  atomic_long progress; /* jobs seen finished (and quiescing steps): the watchdog's pulse */
  atomic_int wd_quit;
  pthread_mutex_t mu; /* failure[], the id set */
  char failure[1024];
  struct client cl[MAX_CLIENTS + 1];
  atomic_uint ncl; /* threads started in this phase */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The ledger's counters, over the whole run. */
static struct {
  atomic_ulong accepted, done, cancelled, refused, failed;
  atomic_ulong unknown;        /* orphans gone before anyone saw their final state */
  atomic_ulong orphans;        /* non-detached jobs left by an abrupt disconnect */
  atomic_ulong detached;       /* DETACHED jobs accepted */
  atomic_ulong detached_memfd; /* ... of which passed a buffer as a memfd */
  atomic_ulong reclaimed, checked, untouched, rewaits, cancels, statuses;
  atomic_ulong sessions, abrupt;
} L;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void msleep(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static int stopped(void) { return atomic_load(&g.stop); }

static void dump_clients(void);

/* The first failure is the one reported; the others go to stderr too. A
 * hang also shows what every client was doing. */
static void fail(const char *invariant, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const char *invariant, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&g.mu);
  int first = !g.failure[0];
  if (first) snprintf(g.failure, sizeof g.failure, "invariant \"%s\": %s", invariant, msg);
  pthread_mutex_unlock(&g.mu);
  fprintf(stderr, "coop-soak: FAIL [%s] %s\n", invariant, msg);
  atomic_store(&g.stop, 1);
  if (first && !strcmp(invariant, "no deadlock")) dump_clients();
}

/* A request without a reply is a hang; any other error a broken request. */
static const char *invariant_of(int e) { return e == COOP_ETIMEDOUT ? "no deadlock" : "requests"; }

static void doing(struct client *cl, const char *what, uint64_t job) {
  atomic_store(&cl->doing, what);
  atomic_store(&cl->job, job);
  atomic_store(&cl->since_ms, now_ms());
}

static void pulse(void) { atomic_fetch_add(&g.progress, 1); }

/* ---- random choices (xorshift64*, one stream per thread) ---- */

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static uint32_t below(uint64_t *s, uint32_t n) { return (uint32_t)(rnd(s) % n); }
static uint32_t range(uint64_t *s, uint32_t lo, uint32_t hi) { return lo + below(s, hi - lo + 1); }
static int chance(uint64_t *s, unsigned pct) { return below(s, 100) < pct; }

/* ---- job ids: each ACCEPTED id must be new ---- */

static uint8_t *idset;
static size_t idset_bytes;

static int id_is_new(uint64_t id) {
  pthread_mutex_lock(&g.mu);
  size_t byte = (size_t)(id / 8);
  if (byte >= idset_bytes) {
    size_t n = idset_bytes ? idset_bytes : 4096;
    while (n <= byte) n *= 2;
    uint8_t *p = realloc(idset, n);
    if (p) {
      memset(p + idset_bytes, 0, n - idset_bytes);
      idset = p;
      idset_bytes = n;
    }
  }
  int fresh = byte < idset_bytes && !(idset[byte] & (1u << (id % 8)));
  if (fresh) idset[byte] |= (uint8_t)(1u << (id % 8));
  pthread_mutex_unlock(&g.mu);
  return fresh;
}

/* ---- the daemon's process: descriptors, memory, log ---- */

struct fdset {
  int n;
  int fd[256];
  char target[256][80];
};

/* coopd's descriptors now; -1 when /proc/PID/fd cannot be read. */
static int fd_snapshot(struct fdset *s) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)g.dpid);
  DIR *d = opendir(path);
  if (!d) return -1;
  s->n = 0;
  int total = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (total++ >= 256) continue;
    s->fd[s->n] = atoi(e->d_name);
    ssize_t k = readlinkat(dirfd(d), e->d_name, s->target[s->n], sizeof s->target[0] - 1);
    s->target[s->n][k > 0 ? k : 0] = '\0';
    s->n++;
  }
  closedir(d);
  return total;
}

/* VmRSS of coopd, KiB; -1 when unreadable. */
static long rss_kib(void) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)g.dpid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
  fclose(f);
  return kib;
}

/* The last lines of our coopd's log, for a failure report. */
static void print_log_tail(int lines) {
  if (!g.log[0]) return;
  FILE *f = fopen(g.log, "r");
  if (!f) return;
  static char ring[64][512];
  int n = 0;
  while (fgets(ring[n % 64], sizeof ring[0], f)) n++;
  fclose(f);
  if (lines > 64) lines = 64;
  fprintf(stderr, "---- the last lines of %s ----\n", g.log);
  for (int i = n > lines ? n - lines : 0; i < n; i++) fputs(ring[i % 64], stderr);
  fprintf(stderr, "----\n");
}

/* coopd's pid, from the socket itself (for --socket). */
static pid_t peer_pid(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  struct ucred cr = {0};
  socklen_t len = sizeof cr;
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
    cr.pid = 0;
  if (fd >= 0) close(fd);
  return cr.pid;
}

static void daemon_exec(void) {
  if (!freopen(g.log, "w", stderr) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(126);
  const char *argv[16];
  argv[coop_test_coopd_argv(argv, COOPD_PATH, g.sock, KERNEL_DIR, "info")] = NULL;
  execv(COOPD_PATH, (char *const *)argv);
  _exit(127);
}

/* Starts coopd on a socket in a new temporary directory. 0 or -1. */
static int daemon_start(void) {
  snprintf(g.dir, sizeof g.dir, "/tmp/coop-soak-XXXXXX");
  if (!mkdtemp(g.dir)) return perror("coop-soak: mkdtemp"), -1;
  snprintf(g.sock, sizeof g.sock, "%s/coop.sock", g.dir);
  snprintf(g.log, sizeof g.log, "%s/coopd.log", g.dir);
  fflush(NULL);
  g.child = fork();
  if (g.child < 0) return perror("coop-soak: fork"), -1;
  if (g.child == 0) daemon_exec();
  g.dpid = g.child;
  for (int64_t t0 = now_ms(); now_ms() - t0 < START_TIMEOUT_MS; msleep(50)) {
    if (access(g.sock, F_OK) == 0) return 0;
    int st;
    if (waitpid(g.child, &st, WNOHANG) == g.child) {
      g.child = 0;
      fprintf(stderr, "coop-soak: coopd exited at start-up (status 0x%x)\n", st);
      return -1;
    }
  }
  fprintf(stderr, "coop-soak: coopd made no socket within %d s\n", START_TIMEOUT_MS / 1000);
  return -1;
}

/* SIGTERM and the exit status (128 + signal if killed); -1 if it hangs. */
static int daemon_stop(int timeout_ms) {
  if (!g.child) return 0;
  kill(g.child, SIGTERM);
  for (int64_t t0 = now_ms(); now_ms() - t0 < timeout_ms; msleep(20)) {
    int st;
    if (waitpid(g.child, &st, WNOHANG) == g.child) {
      g.child = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
  }
  kill(g.child, SIGKILL);
  waitpid(g.child, NULL, 0);
  g.child = 0;
  return -1;
}

/* ---- jobs and their CPU references ---- */

enum kind { K_RENDER, K_SWEEP };

struct rec {
  uint64_t id;
  enum kind kind;
  int detached, query, cancel_sent;
  uint32_t groups, n, iters; /* iters: render's reps, sweep's rounds */
  uint32_t period_us, count, deadline_us;
  float *a, *b, *c;      /* render: inputs; c, the output, starts as SENTINEL */
  uint32_t *data, *init; /* sweep: the INOUT buffer and its first contents */
  int status_final;      /* a final state that STATUS showed, or 0 */
  int final;             /* the final state WAIT returned, or 0 */
};

static void rec_free(struct rec *r) {
  if (!r) return;
  free(r->a);
  free(r->b);
  free(r->c);
  free(r->data);
  free(r->init);
  free(r);
}

static const char *rec_desc(const struct rec *r, char *buf, size_t len) {
  if (r->kind == K_RENDER)
    snprintf(buf, len, "render n %u reps %u groups %u period %u us count %u deadline %u us%s", r->n,
             r->iters, r->groups, r->period_us, r->count, r->deadline_us,
             r->detached ? " detached" : "");
  else
    snprintf(buf, len, "sweep n %u rounds %u groups %u%s%s", r->n, r->iters, r->groups,
             r->query ? " query-barrier" : "", r->detached ? " detached" : "");
  return buf;
}

/* Small integers in [-3, 3]: every product and partial sum of an n <= 128
 * dot product is an integer below 2^24, exact in binary32, so the device's
 * result is exact whatever its summation order or FMA contraction and is
 * compared bit for bit (==) with the CPU's. */
static struct rec *render_new(uint64_t *s, int periodic, int detached, uint32_t nmax) {
  struct rec *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->kind = K_RENDER;
  r->detached = detached;
  r->n = range(s, 4, nmax);
  r->iters = range(s, 1, 3);
  r->groups = range(s, 1, g.workers);
  if (periodic) {
    r->period_us = range(s, 2000, 20000);
    r->count = range(s, 2, 12);
    r->deadline_us = chance(s, 50) ? r->period_us : 0;
  }
  size_t nn = (size_t)r->n * r->n;
  r->a = malloc(nn * sizeof(float));
  r->b = malloc(nn * sizeof(float));
  r->c = malloc(nn * sizeof(float));
  if (!r->a || !r->b || !r->c) return rec_free(r), NULL;
  for (size_t i = 0; i < nn; i++) {
    r->a[i] = (float)((int)below(s, 7) - 3);
    r->b[i] = (float)((int)below(s, 7) - 3);
    r->c[i] = SENTINEL;
  }
  return r;
}

/* Mostly small inline buffers; a quarter above inline_max (256 KiB), which
 * libcoop sends as a memfd; some long sweeps to be cancelled mid-run. */
static struct rec *sweep_new(uint64_t *s, int detached) {
  struct rec *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->kind = K_SWEEP;
  r->detached = detached;
  r->query = chance(s, 40);
  r->groups = range(s, 1, g.workers);
  r->n = chance(s, 25) ? range(s, 65537, 100000) : range(s, 1, detached ? 4096 : 16384);
  r->iters = chance(s, 15) ? range(s, 100, 400) : range(s, 1, 40);
  r->data = malloc(r->n * sizeof(uint32_t));
  r->init = malloc(r->n * sizeof(uint32_t));
  if (!r->data || !r->init) return rec_free(r), NULL;
  for (uint32_t i = 0; i < r->n; i++) r->data[i] = r->init[i] = (uint32_t)rnd(s);
  return r;
}

static coop_job *rec_job(const struct rec *r) {
  coop_job *j = coop_job_new(r->kind == K_RENDER ? "render" : "sweep", r->groups);
  if (!j) return NULL;
  coop_job_detached(j, r->detached);
  if (r->kind == K_RENDER) {
    size_t bytes = (size_t)r->n * r->n * sizeof(float);
    coop_job_buf_in(j, r->a, bytes);
    coop_job_buf_in(j, r->b, bytes);
    coop_job_buf_out(j, r->c, bytes);
    coop_job_u32(j, r->n);
    coop_job_u32(j, r->iters);
    if (r->period_us) coop_job_periodic(j, r->period_us, r->count, 0, r->deadline_us);
  } else {
    coop_job_cooperative(j, 1);
    coop_job_query_barrier(j, r->query);
    coop_job_buf_inout(j, r->data, r->n * sizeof(uint32_t));
    coop_job_u32(j, r->n);
    coop_job_u32(j, r->iters);
  }
  return j;
}

/* c == a x b, computed here in the kernel's order (exact: see render_new). */
static int render_matches(const struct rec *r, uint32_t *at) {
  uint32_t n = r->n;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < n; k++) acc += r->a[i * n + k] * r->b[k * n + j];
      if (r->c[i * n + j] != acc) return *at = i * n + j, 0;
    }
  return 1;
}

static int sweep_matches(const struct rec *r, uint32_t *at) {
  for (uint32_t i = 0; i < r->n; i++)
    if (r->data[i] != r->init[i] + r->iters) return *at = i, 0;
  return 1;
}

/* libcoop writes outputs only for DONE jobs (coop.h). */
static int untouched(const struct rec *r) {
  if (r->kind == K_SWEEP) return memcmp(r->data, r->init, r->n * sizeof(uint32_t)) == 0;
  for (size_t i = 0; i < (size_t)r->n * r->n; i++)
    if (r->c[i] != SENTINEL) return 0;
  return 1;
}

/* ---- the ledger ---- */

static int is_final(int st) { return st >= COOP_STATE_DONE && st <= COOP_STATE_FAILED; }

static void ledger_count(int st) {
  atomic_ulong *c[] = {&L.done, &L.cancelled, &L.refused, &L.failed};
  atomic_fetch_add(c[st - COOP_STATE_DONE], 1);
  pulse();
}

/* A DONE job's periodic bookkeeping and workgroup counts. */
static void check_done_shape(const struct rec *r, const struct coop_result *res) {
  char d[160];
  if (r->period_us && (res->instances != r->count || res->ninst != r->count))
    fail("results", "job %" PRIu64 " (%s): DONE with %u instances (%u records), not %u", r->id,
         rec_desc(r, d, sizeof d), res->instances, res->ninst, r->count);
  for (uint32_t i = 0; r->period_us && i < res->ninst; i++)
    if (res->inst[i].state != COOP_STATE_DONE)
      fail("results", "job %" PRIu64 " (%s): DONE but instance %u is %s", r->id,
           rec_desc(r, d, sizeof d), i, coop_state_name(res->inst[i].state));
  if (r->kind == K_SWEEP && (res->m_initial < 1 || res->m_max > r->groups))
    fail("results", "job %" PRIu64 " (%s): M initial %u, max %u for %u groups", r->id,
         rec_desc(r, d, sizeof d), res->m_initial, res->m_max, r->groups);
}

/* The output of a job that its own connection waited for. */
static void check_output(const struct rec *r, const struct coop_result *res) {
  char d[160];
  uint32_t at = 0;
  if (res->state == COOP_STATE_DONE) {
    check_done_shape(r, res);
    int ok = r->kind == K_RENDER ? render_matches(r, &at) : sweep_matches(r, &at);
    if (!ok && r->kind == K_RENDER)
      fail("results", "job %" PRIu64 " (%s): c[%u] = %g, the CPU says otherwise", r->id,
           rec_desc(r, d, sizeof d), at, (double)r->c[at]);
    if (!ok && r->kind == K_SWEEP)
      fail("results", "job %" PRIu64 " (%s): data[%u] = %u, want %u + %u", r->id,
           rec_desc(r, d, sizeof d), at, r->data[at], r->init[at], r->iters);
    atomic_fetch_add(&L.checked, 1);
  } else if (!untouched(r)) {
    fail("results", "job %" PRIu64 " (%s) ended %s but its output memory was written", r->id,
         rec_desc(r, d, sizeof d), coop_state_name(res->state));
  } else {
    atomic_fetch_add(&L.untouched, 1);
  }
}

/* A RESULT for r (first or repeated): the state rules of the ledger.
 * Returns 1 when this is r's first final state. */
static int ledger_result(struct rec *r, const struct coop_result *res) {
  char d[160];
  rec_desc(r, d, sizeof d);
  if (res->job != r->id || !is_final(res->state)) {
    fail("ledger",
         "WAIT for job %" PRIu64 " (%s) returned a RESULT for job %" PRIu64
         " in state %s (%d), not a final state (%s)",
         r->id, d, res->job, coop_state_name(res->state), res->state, res->message);
    return 0;
  }
  int st = res->state;
  if ((r->final && r->final != st) || (r->status_final && r->status_final != st))
    fail("ledger", "job %" PRIu64 " (%s): final state %s, earlier %s", r->id, d,
         coop_state_name(st), coop_state_name(r->final ? r->final : r->status_final));
  if (st == COOP_STATE_REFUSED || st == COOP_STATE_FAILED)
    fail("ledger", "job %" PRIu64 " (%s) ended %s: %s (%s); every soak job is valid", r->id, d,
         coop_state_name(st), res->message, coop_err_name(res->error));
  if (st == COOP_STATE_CANCELLED && !r->cancel_sent)
    fail("ledger", "job %" PRIu64 " (%s) ended CANCELLED (%s) though nobody cancelled it", r->id, d,
         res->message);
  if (r->final) return 0;
  r->final = st;
  ledger_count(st);
  return 1;
}

/* ---- one client session (one connection) ---- */

struct session {
  struct client *cl;
  coop_conn *c;
  struct rec *jobs[MAX_SESSION_JOBS];
  unsigned njobs, outstanding;
};

static int connect_as(struct client *cl, coop_conn **c, const char *role) {
  char name[32];
  snprintf(name, sizeof name, "soak-%u-%s", cl->index, role);
  doing(cl, "connect", 0);
  int e = coop_connect(c, g.sock, name);
  if (e) {
    fail(invariant_of(e), "client %u: connect: %s (%s)", cl->index, coop_strerror(e),
         coop_errmsg(NULL));
    return e;
  }
  coop_set_timeout(*c, CALL_TIMEOUT_MS);
  return 0;
}

static void request_failed(struct session *s, const char *what, uint64_t job, int e) {
  fail(invariant_of(e), "client %u: %s of job %" PRIu64 ": %s (%s)", s->cl->index, what, job,
       coop_strerror(e), coop_errmsg(s->c));
}

/* A RESULT on the submitting connection: ledger and output. */
static void got_result(struct session *s, struct rec *r, const struct coop_result *res) {
  if (ledger_result(r, res)) {
    s->outstanding--;
    check_output(r, res);
  }
}

static struct rec *pick(struct session *s, int want_outstanding) {
  if (!s->njobs) return NULL;
  unsigned start = below(&s->cl->rng, s->njobs);
  for (unsigned i = 0; i < s->njobs; i++) {
    struct rec *r = s->jobs[(start + i) % s->njobs];
    if (want_outstanding < 0 || want_outstanding == !r->final) return r;
  }
  return NULL;
}

static void submit_rec(struct session *s, struct rec *r) {
  char d[160];
  coop_job *j = rec_job(r);
  uint64_t id = 0;
  doing(s->cl, "submit", 0);
  int e = j ? coop_submit(s->c, j, &id) : COOP_ENOMEM;
  coop_job_free(j);
  if (e) {
    fail(invariant_of(e), "client %u: SUBMIT %s: %s (%s)", s->cl->index, rec_desc(r, d, sizeof d),
         coop_strerror(e), coop_errmsg(s->c));
    rec_free(r);
    return;
  }
  if (id == 0 || !id_is_new(id))
    fail("ledger", "SUBMIT %s: ACCEPTED job id %" PRIu64 ", which is 0 or was given before",
         rec_desc(r, d, sizeof d), id);
  r->id = id;
  s->jobs[s->njobs++] = r;
  s->outstanding++;
  atomic_fetch_add(&L.accepted, 1);
  if (r->detached) atomic_fetch_add(&L.detached, 1);
  if (r->detached && r->kind == K_SWEEP && r->n * sizeof(uint32_t) > g.inline_max)
    atomic_fetch_add(&L.detached_memfd, 1);
}

/* Detached jobs stay small: coopd keeps up to 1024 finished ones (see
 * check_memory). */
static void op_submit(struct session *s) {
  uint64_t *rng = &s->cl->rng;
  if (s->outstanding >= MAX_OUTSTANDING || s->njobs >= MAX_SESSION_JOBS) return;
  int detached = chance(rng, 15);
  uint32_t p = below(rng, 100);
  struct rec *r = p < 30   ? render_new(rng, 0, detached, detached ? 32 : 96)
                  : p < 50 ? render_new(rng, 1, detached, detached ? 32 : 64)
                           : sweep_new(rng, detached);
  if (!r) return fail("requests", "client %u: out of memory", s->cl->index);
  submit_rec(s, r);
}

static void op_wait(struct session *s) {
  struct rec *r = pick(s, 1);
  if (!r) return;
  uint32_t p = below(&s->cl->rng, 3);
  int timeout = p == 0 ? 0 : p == 1 ? (int)range(&s->cl->rng, 1, 50) : 2000;
  struct coop_result res;
  doing(s->cl, "wait", r->id);
  int e = coop_wait(s->c, r->id, timeout, &res);
  if (e == 0) got_result(s, r, &res), coop_result_free(&res);
  if (e && e != COOP_ETIMEDOUT) request_failed(s, "WAIT", r->id, e);
}

/* A finished job asked again: the same final state (exactly one). */
static void op_rewait(struct session *s) {
  struct rec *r = pick(s, 0);
  if (!r) return;
  struct coop_result res;
  doing(s->cl, "wait again", r->id);
  int e = coop_wait(s->c, r->id, 0, &res);
  if (e) return request_failed(s, "second WAIT", r->id, e);
  ledger_result(r, &res);
  coop_result_free(&res);
  atomic_fetch_add(&L.rewaits, 1);
}

static void op_cancel(struct session *s) {
  struct rec *r = pick(s, chance(&s->cl->rng, 90) ? 1 : -1);
  if (!r) return;
  doing(s->cl, "cancel", r->id);
  r->cancel_sent = 1; /* before: the daemon may act before the reply */
  int e = coop_cancel(s->c, r->id);
  if (e) return request_failed(s, "CANCEL", r->id, e);
  atomic_fetch_add(&L.cancels, 1);
}

static void check_status(struct session *s, struct rec *r, const struct coop_job_status *st) {
  char d[160];
  int coop = r->kind == K_SWEEP;
  if (st->job != r->id || strcmp(st->kernel, coop ? "sweep" : "render") ||
      st->groups != r->groups || st->cooperative != coop || st->query_barrier != r->query ||
      st->state < COOP_STATE_QUEUED || st->state > COOP_STATE_FAILED)
    return fail("requests",
                "STATUS of job %" PRIu64 " (%s): job %" PRIu64 " %s x%u coop %d query %d state %d",
                r->id, rec_desc(r, d, sizeof d), st->job, st->kernel, st->groups, st->cooperative,
                st->query_barrier, st->state);
  if (r->final && st->state != r->final)
    fail("ledger", "job %" PRIu64 " (%s): WAIT said %s, then STATUS %s", r->id,
         rec_desc(r, d, sizeof d), coop_state_name(r->final), coop_state_name(st->state));
  if (is_final(st->state) && !r->final && !r->status_final) r->status_final = st->state;
  if (st->instances_done > (r->count ? r->count : 1))
    fail("ledger", "job %" PRIu64 " (%s): %u instances done", r->id, rec_desc(r, d, sizeof d),
         st->instances_done);
}

static void op_status(struct session *s) {
  struct rec *r = pick(s, -1);
  if (!r) return;
  struct coop_job_status *list = NULL;
  size_t n = 0;
  doing(s->cl, "status", r->id);
  int e = coop_status(s->c, r->id, &list, &n);
  if (e) return request_failed(s, "STATUS", r->id, e);
  if (n != 1)
    fail("requests", "STATUS of job %" PRIu64 ": %zu records", r->id, n);
  else
    check_status(s, r, &list[0]);
  free(list);
  atomic_fetch_add(&L.statuses, 1);
}

/* STATUS of every job: ours still in flight must be listed (unless the
 * list is full: at most 1024 records). */
static void op_status_all(struct session *s) {
  struct coop_job_status *list = NULL;
  size_t n = 0;
  doing(s->cl, "status all", 0);
  int e = coop_status(s->c, 0, &list, &n);
  if (e) return request_failed(s, "STATUS", 0, e);
  for (unsigned i = 0; i < s->njobs && n < 1024; i++) {
    const struct rec *r = s->jobs[i];
    size_t k = 0;
    while (k < n && list[k].job != r->id) k++;
    if (!r->final && k == n)
      fail("ledger", "job %" PRIu64 " in flight is missing from STATUS of all jobs (%zu listed)",
           r->id, n);
  }
  free(list);
}

static void op_stats(struct session *s) {
  struct coop_stats st;
  doing(s->cl, "stats", 0);
  int e = coop_stats(s->c, &st);
  if (e) return request_failed(s, "STATS", 0, e);
  if (st.workers != g.workers)
    fail("stats", "STATS says %u workers, WELCOME said %u", st.workers, g.workers);
}

static void random_op(struct session *s) {
  uint32_t p = below(&s->cl->rng, 100);
  if (p < 35)
    op_submit(s);
  else if (p < 60)
    op_wait(s);
  else if (p < 68)
    op_cancel(s);
  else if (p < 78)
    op_status(s);
  else if (p < 82)
    op_status_all(s);
  else if (p < 86)
    op_stats(s);
  else if (p < 93)
    op_rewait(s);
  else
    msleep((int)range(&s->cl->rng, 1, 20));
}

/* The graphics client: one periodic render job at a time (a frame every
 * 4-16 ms, deadline one period), waited for; now and then cancelled. */
static void graphics_op(struct session *s) {
  uint64_t *rng = &s->cl->rng;
  if (s->outstanding == 0 && s->njobs < MAX_SESSION_JOBS) {
    struct rec *r = render_new(rng, 1, 0, 48);
    if (!r) return fail("requests", "graphics client: out of memory");
    r->period_us = range(rng, 4000, 16000);
    r->deadline_us = r->period_us;
    r->count = range(rng, 5, 30);
    return submit_rec(s, r);
  }
  if (chance(rng, 10)) {
    msleep((int)range(rng, 1, 40));
    return op_cancel(s);
  }
  op_wait(s);
}

/* Waits in 1 s slices (so that a failure elsewhere stops it) until the job
 * ends: 0 with *res, COOP_ENOJOB..., or ETIMEDOUT after FINAL_WAIT_MS
 * (then failed). */
static int wait_final(struct client *cl, coop_conn *c, struct rec *r, struct coop_result *res) {
  char d[160];
  int64_t until = now_ms() + FINAL_WAIT_MS;
  for (;;) {
    doing(cl, "wait for the end", r->id);
    int e = coop_wait(c, r->id, 1000, res);
    if (e != COOP_ETIMEDOUT || stopped()) return e;
    if (now_ms() > until) {
      fail("no deadlock", "job %" PRIu64 " (%s) not finished %d s after its client began waiting",
           r->id, rec_desc(r, d, sizeof d), FINAL_WAIT_MS / 1000);
      return e;
    }
  }
}

static void end_gracefully(struct session *s) {
  for (unsigned i = 0; i < s->njobs && !stopped(); i++) {
    struct rec *r = s->jobs[i];
    if (r->final) continue;
    struct coop_result res;
    int e = wait_final(s->cl, s->c, r, &res);
    if (e == 0) got_result(s, r, &res), coop_result_free(&res);
    if (e && !stopped()) request_failed(s, "WAIT", r->id, e);
  }
  coop_disconnect(s->c);
}

/* A DETACHED job after its client closed: still there, not cancelled by
 * the close. (Its output cannot be checked here: libcoop writes outputs
 * only into the memory of the connection that submitted the job.) */
static void reclaim_detached(struct client *cl, coop_conn *c, struct rec *r) {
  struct coop_result res;
  int e = wait_final(cl, c, r, &res);
  if (e && !stopped())
    fail("detached", "job %" PRIu64 " (detached) not waitable from a new connection: %s (%s)",
         r->id, coop_strerror(e), coop_errmsg(c));
  if (e) return;
  ledger_result(r, &res);
  coop_result_free(&res);
  atomic_fetch_add(&L.reclaimed, 1);
}

/* A non-detached job after its client closed: the daemon cancels it
 * (unless it finished first) and forgets it once finished. */
static void reclaim_orphan(struct client *cl, coop_conn *c, struct rec *r) {
  char d[160];
  struct coop_result res;
  atomic_fetch_add(&L.orphans, 1);
  int e = wait_final(cl, c, r, &res);
  if (e == COOP_ENOJOB) atomic_fetch_add(&L.unknown, 1);
  if (e == COOP_ENOJOB || stopped()) return;
  if (e)
    return fail("orphans", "job %" PRIu64 ": WAIT from a new connection: %s", r->id,
                coop_strerror(e));
  if (res.state != COOP_STATE_CANCELLED && res.state != COOP_STATE_DONE)
    fail("orphans", "job %" PRIu64 " (%s) of a closed connection ended %s: %s", r->id,
         rec_desc(r, d, sizeof d), coop_state_name(res.state), res.message);
  r->cancel_sent = 1; /* the close is a cancellation */
  ledger_result(r, &res);
  coop_result_free(&res);
}

/* Closes with jobs in flight (sometimes a fresh burst of them), then looks
 * at them from a new connection. */
static void end_abruptly(struct session *s) {
  atomic_fetch_add(&L.abrupt, 1);
  if (chance(&s->cl->rng, 50))
    for (unsigned k = range(&s->cl->rng, 1, 4); k-- && !stopped();) op_submit(s);
  doing(s->cl, "disconnect", 0);
  coop_disconnect(s->c);
  if (!s->outstanding || stopped()) return;
  coop_conn *c;
  if (connect_as(s->cl, &c, "reclaim")) return;
  for (unsigned i = 0; i < s->njobs && !stopped(); i++) {
    struct rec *r = s->jobs[i];
    if (r->final) continue;
    if (r->detached)
      reclaim_detached(s->cl, c, r);
    else
      reclaim_orphan(s->cl, c, r);
  }
  coop_disconnect(c);
}

static void session_run(struct client *cl) {
  struct session s = {.cl = cl};
  if (connect_as(cl, &s.c, cl->graphics ? "graphics" : "client")) return;
  atomic_fetch_add(&L.sessions, 1);
  unsigned ops = cl->graphics ? range(&cl->rng, 4, 20) : range(&cl->rng, 5, 40);
  for (unsigned i = 0; i < ops && !stopped() && now_ms() < cl->end_ms; i++)
    cl->graphics ? graphics_op(&s) : random_op(&s);
  if (!stopped() && (cl->graphics || s.outstanding == 0 || chance(&cl->rng, 60)))
    end_gracefully(&s);
  else
    end_abruptly(&s);
  for (unsigned i = 0; i < s.njobs; i++) rec_free(s.jobs[i]);
}

static void *client_main(void *arg) {
  struct client *cl = arg;
  while (!stopped() && now_ms() < cl->end_ms) session_run(cl);
  doing(cl, "done", 0);
  return NULL;
}

/* ---- the watchdog ---- */

static void dump_clients(void) {
  int64_t t = now_ms();
  fprintf(stderr, "coop-soak: what each client is doing:\n");
  for (unsigned i = 0; i < atomic_load(&g.ncl); i++) { /* atomics only: the phase may end */
    struct client *cl = &g.cl[i];
    const char *what = atomic_load(&cl->doing);
    fprintf(stderr, "  client %u%s: %s, job %llu, for %lld ms\n", i,
            i == g.o.clients ? " (graphics)" : "", what ? what : "-",
            (unsigned long long)atomic_load(&cl->job), (long long)(t - atomic_load(&cl->since_ms)));
  }
}

static void stall(void) {
  fail("no deadlock", "no job finished for %d s (seed %" PRIu64 ")", STALL_MS / 1000, g.o.seed);
  print_log_tail(40);
  if (g.child) kill(g.child, SIGKILL);
  fprintf(stderr, "coop-soak: FAILED (%s); daemon log kept in %s\n", g.failure,
          g.log[0] ? g.log : "(not ours)");
  _exit(1); /* the clients may be blocked in calls */
}

static void *watchdog(void *arg) {
  long last = -1;
  int64_t since = now_ms();
  while (!atomic_load(&g.wd_quit)) {
    msleep(200);
    long p = atomic_load(&g.progress);
    if (p != last) {
      last = p;
      since = now_ms();
    } else if (now_ms() - since > STALL_MS) {
      stall();
    }
  }
  return NULL;
}

/* ---- phases and the final checks ---- */

static void run_phase(unsigned seconds, unsigned phase) {
  int64_t end = now_ms() + (int64_t)seconds * 1000;
  unsigned n = 0;
  for (; n < g.o.clients + 1; n++) {
    struct client *cl = &g.cl[n];
    cl->index = n;
    cl->graphics = n == g.o.clients;
    cl->rng = splitmix(g.o.seed ^ ((uint64_t)phase << 32) ^ n) | 1;
    cl->end_ms = end;
    doing(cl, "start", 0);
    if (pthread_create(&cl->th, NULL, client_main, cl)) {
      fail("requests", "cannot start client thread %u", n);
      break;
    }
    atomic_store(&g.ncl, n + 1);
  }
  for (unsigned i = 0; i < n; i++) pthread_join(g.cl[i].th, NULL);
}

/* The jobs that have not finished, for a failure message. */
static const char *unfinished(coop_conn *c, char *buf, size_t len) {
  struct coop_job_status *list = NULL;
  size_t n = 0, at = 0;
  buf[0] = '\0';
  if (coop_status(c, 0, &list, &n)) return buf;
  for (size_t i = 0, shown = 0; i < n && shown < 5 && at < len; i++)
    if (!is_final(list[i].state))
      at += (size_t)snprintf(buf + at, len - at, "%s job %" PRIu64 " (%s) %s", shown++ ? "," : ":",
                             list[i].job, list[i].kernel, coop_state_name(list[i].state));
  free(list);
  return buf;
}

/* Until no job is queued or running and we are coopd's only client;
 * *st is the last STATS. */
static int quiesce(struct coop_stats *st) {
  coop_conn *c = NULL;
  int e = coop_connect(&c, g.sock, "soak-check");
  if (e) return fail("stats", "connect: %s (%s)", coop_strerror(e), coop_errmsg(NULL)), e;
  coop_set_timeout(c, CALL_TIMEOUT_MS);
  uint64_t last = UINT64_MAX;
  for (int64_t t0 = now_ms();; msleep(50)) {
    if ((e = coop_stats(c, st))) {
      fail("stats", "STATS: %s (%s)", coop_strerror(e), coop_errmsg(c));
      break;
    }
    uint64_t left = (uint64_t)st->queued + st->running + st->clients;
    if (left != last) pulse();
    last = left;
    if (st->queued == 0 && st->running == 0 && (st->clients == 1 || g.o.socket)) break;
    if (now_ms() - t0 > QUIESCE_MS) {
      e = COOP_ETIMEDOUT;
      char stuck[300];
      fail("no deadlock", "%u jobs queued, %u running, %u clients %d s after the clients ended%s",
           st->queued, st->running, st->clients - 1, QUIESCE_MS / 1000,
           unfinished(c, stuck, sizeof stuck));
      break;
    }
  }
  coop_disconnect(c);
  return e;
}

/* Descriptors: back to the start-up count once every client has gone (a
 * closed connection's descriptor is closed by the loop a moment later:
 * settle). The extra ones are named. */
static void check_descriptors(const struct fdset *base, int base_n) {
  static struct fdset now;
  int n = -1;
  for (int64_t t0 = now_ms(); now_ms() - t0 < SETTLE_MS; msleep(100))
    if ((n = fd_snapshot(&now)) == base_n) break;
  if (n < 0 || base_n < 0) {
    printf("coop-soak: descriptors: /proc/%d/fd unreadable, not checked\n", (int)g.dpid);
    return;
  }
  printf("coop-soak: descriptors: %d after start-up, %d at the end\n", base_n, n);
  if (n == base_n) return;
  char extra[600] = "";
  size_t len = 0;
  for (int i = 0, shown = 0; i < now.n && shown < 6; i++) {
    int k = 0;
    while (k < base->n && !(base->fd[k] == now.fd[i] && !strcmp(base->target[k], now.target[i])))
      k++;
    if (k < base->n) continue;
    len += (size_t)snprintf(extra + len, sizeof extra - len, "%s%d -> %s", shown++ ? ", " : "",
                            now.fd[i], now.target[i]);
    if (len >= sizeof extra) break;
  }
  /* a hint for the reader: coopd keeps finished detached jobs (up to 1024) */
  fail("descriptors",
       "coopd holds %d descriptors with no client, %d after start-up; new: %s%s (this run's "
       "DETACHED jobs with a memfd buffer: %lu)",
       n, base_n, extra, n - base_n > 6 ? ", ..." : "", L.detached_memfd + 0ul);
}

/* Memory. Compared with VmRSS after the warm-up phase (quiesced too), not
 * with start-up: the first jobs grow the heap to its working size (malloc
 * keeps freed memory: arenas per thread, the mmap threshold that rises
 * after large frees, fragmentation; PoCL allocates on its first kernels),
 * none of which is a leak. After warm-up a leak grows with the number of
 * jobs (about 5000 a minute on PoCL with 2 cores, each with KiBs to tens
 * of KiB of buffers): 60 s catches a leak of a job's buffers, 600 s one of
 * about 1 KiB a job. Seen on PoCL: +1 to +7 MiB over 60 to 600 s, about
 * what the detached jobs below account for.
 * The bound: RSS_SLACK_KIB for allocator noise, plus what coopd keeps by
 * design: up to 1024 finished DETACHED jobs without a client (their inputs
 * and outputs; session.c SESS_DETACHED_KEPT), at most DETACHED_KIB each
 * since detached jobs here are small: render n <= 32 (12 KiB of buffers),
 * sweep n <= 4096 (16 KiB) or a memfd (none), plus the job's record. */
#define RSS_SLACK_KIB (16 * 1024L)
#define DETACHED_KIB 20L
static void check_memory(long warm_kib, long end_kib, unsigned long detached_after_warmup) {
  if (warm_kib < 0 || end_kib < 0) {
    printf("coop-soak: memory: /proc/%d/status unreadable, not checked\n", (int)g.dpid);
    return;
  }
#ifdef __SANITIZE_ADDRESS__ /* coopd is built like this program */
  printf(
      "coop-soak: memory: VmRSS %ld KiB after warm-up, %ld KiB at the end; not checked under "
      "AddressSanitizer (its quarantine holds freed memory; LeakSanitizer checks coopd at its "
      "exit, see shutdown)\n",
      warm_kib, end_kib);
  return;
#endif
  unsigned long kept = detached_after_warmup < 1024 ? detached_after_warmup : 1024;
  long bound = RSS_SLACK_KIB + (long)kept * DETACHED_KIB;
  printf("coop-soak: memory: VmRSS %ld KiB after warm-up, %ld KiB at the end (%+ld; bound %+ld)\n",
         warm_kib, end_kib, end_kib - warm_kib, bound);
  if (end_kib - warm_kib > bound)
    fail("memory",
         "coopd's VmRSS grew by %ld KiB after warm-up (bound %ld KiB: %ld of slack + %lu "
         "kept detached jobs x %ld KiB)",
         end_kib - warm_kib, bound, RSS_SLACK_KIB, kept, DETACHED_KIB);
}

/* The daemon's counters against the ledger: exact with our own daemon;
 * with --socket other clients may add jobs, so only lower bounds. */
static void check_stats(const struct coop_stats *s0, const struct coop_stats *s1) {
  uint64_t sub = s1->submitted - s0->submitted;
  uint64_t got[4] = {s1->done - s0->done, s1->cancelled - s0->cancelled, s1->refused - s0->refused,
                     s1->failed - s0->failed};
  uint64_t want[4] = {L.done, L.cancelled, L.refused, L.failed};
  const char *name[4] = {"done", "cancelled", "refused", "failed"};
  uint64_t unknown = L.unknown, accepted = L.accepted;
  printf("coop-soak: stats: submitted %" PRIu64 " (ledger %" PRIu64 "), done %" PRIu64
         ", cancelled %" PRIu64 ", refused %" PRIu64 ", failed %" PRIu64 "\n",
         sub, accepted, got[0], got[1], got[2], got[3]);
  int own = !g.o.socket;
  if (own ? sub != accepted : sub < accepted)
    fail("stats", "coopd counts %" PRIu64 " jobs submitted, the ledger %" PRIu64, sub, accepted);
  if (own && got[0] + got[1] + got[2] + got[3] != sub)
    fail("stats", "submitted %" PRIu64 " != done + cancelled + refused + failed %" PRIu64, sub,
         got[0] + got[1] + got[2] + got[3]);
  for (int i = 0; i < 4; i++)
    if (got[i] < want[i] || (own && got[i] > want[i] + unknown))
      fail("stats",
           "coopd counts %" PRIu64 " %s, the ledger %" PRIu64 " (+ up to %" PRIu64
           " orphans of unknown state)",
           got[i], name[i], want[i], unknown);
}

static int stats_now(struct coop_stats *st) {
  coop_conn *c = NULL;
  int e = coop_connect(&c, g.sock, "soak-check");
  if (!e) e = coop_stats(c, st);
  if (e) fail("stats", "STATS: %s (%s)", coop_strerror(e), coop_errmsg(c));
  coop_disconnect(c);
  return e;
}

/* Connects once: the workers (groups 1..workers), and the kernels. */
static int probe(void) {
  coop_conn *c = NULL;
  int e = coop_connect(&c, g.sock, "soak-probe");
  if (e) return fprintf(stderr, "coop-soak: connect: %s\n", coop_errmsg(NULL)), e;
  const struct coop_info *in = coop_info(c);
  g.workers = in->workers;
  g.inline_max = in->inline_max;
  printf("coop-soak: coopd %s, %s on \"%s\": %u compute units, %u workers\n", in->daemon_version,
         in->backend, in->device, in->compute_units, in->workers);
  struct coop_kernel *ks = NULL;
  size_t n = 0, found = 0;
  e = coop_kernels(c, &ks, &n);
  for (size_t i = 0; !e && i < n; i++)
    found += (!strcmp(ks[i].name, "render") && !ks[i].cooperative && ks[i].nargs == 5) +
             (!strcmp(ks[i].name, "sweep") && ks[i].cooperative && ks[i].nargs == 3);
  free(ks);
  coop_disconnect(c);
  if (!e && (found != 2 || g.workers == 0)) e = COOP_ENOKERNEL;
  if (e) fprintf(stderr, "coop-soak: coopd lacks the kernels render and sweep, or workers\n");
  return e;
}

/* ---- the command line ---- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: coop-soak [--seconds N] [--clients C] [--seed S] [--socket PATH] [--help]\n"
          "Soak test of coopd through libcoop. Starts its own coopd (%s, kernels from\n"
          "%s; socket and log in a new /tmp/coop-soak-* directory;\n"
          "COOP_BACKEND=B adds --set device.backend=B), or uses the one at --socket. C client\n"
          "threads plus one graphics thread connect, submit render tasks (single and periodic)\n"
          "and cooperative sweep jobs, some detached, wait, cancel, ask STATUS and STATS, and\n"
          "disconnect gracefully or with jobs in flight, for N seconds: the first sixth (3 to\n"
          "60 s) is a warm-up, after which coopd's memory is measured. Checked: every accepted\n"
          "job gets exactly one final state and DONE outputs match the CPU; detached jobs\n"
          "survive their client; no call or job hangs (a watchdog fails the run after %d s\n"
          "without a job finishing); at the end coopd has its start-up descriptor count, its\n"
          "VmRSS is within a bound of the post-warm-up value, STATS agrees with the ledger,\n"
          "and (own coopd) SIGTERM makes it exit 0. With --socket the descriptor and memory\n"
          "checks assume no other client, and STATS is only checked for lower bounds.\n"
          "  --seconds N    run time (default 60, at least 2)\n"
          "  --clients C    client threads (default 8, 1..%d)\n"
          "  --seed S       random seed (default: from the clock); printed, so that a failure\n"
          "                 can be replayed: the same mix of jobs and operations, though not\n"
          "                 the same timing\n"
          "  --socket PATH  use this coopd instead of starting one (it is not stopped)\n"
          "Exit status: 0 all invariants hold; 1 one broke (named on stderr, with the seed;\n"
          "the daemon log is kept); 2 bad usage.\n",
          COOPD_PATH, KERNEL_DIR, STALL_MS / 1000, MAX_CLIENTS);
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || !*s || *end || *s == '-' || v > max) return -1;
  *out = v;
  return 0;
}

/* 0: go on; otherwise the exit status. */
static int parse_args(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
      {"seconds", required_argument, 0, 'n'}, {"clients", required_argument, 0, 'c'},
      {"seed", required_argument, 0, 's'},    {"socket", required_argument, 0, 'S'},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  *o =
      (struct opts){.seconds = 60, .clients = 8, .seed = splitmix((uint64_t)time(NULL) ^ getpid())};
  for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
    unsigned long long v = 0;
    int bad = 0;
    if (ch == 'h') return usage(stdout), -1;
    if (ch == 'n' && !(bad = parse_uint(optarg, 1u << 20, &v) || v < 2)) o->seconds = (unsigned)v;
    if (ch == 'c' && !(bad = parse_uint(optarg, MAX_CLIENTS, &v) || v < 1))
      o->clients = (unsigned)v;
    if (ch == 's' && !(bad = parse_uint(optarg, UINT64_MAX, &v))) o->seed = v;
    if (ch == 'S') o->socket = optarg;
    if (ch == '?' || bad) {
      if (bad) fprintf(stderr, "coop-soak: bad value \"%s\"\n", optarg);
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) return fprintf(stderr, "coop-soak: unexpected \"%s\"\n", argv[optind]), 2;
  return 0;
}

/* ---- main ---- */

/* Our temporary directory: the log, and whatever coopd left there (its
 * socket, its journal). */
static void remove_dir(void) {
  DIR *d = opendir(g.dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
  if (d) closedir(d);
  rmdir(g.dir);
}

static int finish(int code) {
  atomic_store(&g.wd_quit, 1);
  if (g.child) {
    int st = daemon_stop(60000);
    if (st < 0) fail("shutdown", "coopd did not exit within 60 s of SIGTERM");
    if (st > 0)
      fail("shutdown", "coopd exited with status %d after SIGTERM%s", st,
           st == 23 ? " (LeakSanitizer's: leaks, see the log)" : "");
  }
  if (g.failure[0]) {
    print_log_tail(40);
    fprintf(stderr,
            "coop-soak: FAILED: %s\ncoop-soak: seed %" PRIu64 " (replay: coop-soak --seed %" PRIu64
            " --seconds %u --clients %u)%s%s\n",
            g.failure, g.o.seed, g.o.seed, g.o.seconds, g.o.clients,
            g.log[0] ? "; daemon log kept in " : "", g.log);
    return 1;
  }
  if (g.log[0]) remove_dir();
  return code;
}

static void print_ledger(const char *when) {
  printf(
      "coop-soak: %s: %lu sessions (%lu abrupt), %lu jobs accepted (%lu detached): %lu done, "
      "%lu cancelled, %lu refused, %lu failed; %lu outputs checked, %lu untouched; %lu orphans "
      "(%lu gone unseen), %lu detached reclaimed; %lu cancels, %lu statuses, %lu re-waits\n",
      when, L.sessions + 0ul, L.abrupt + 0ul, L.accepted + 0ul, L.detached + 0ul, L.done + 0ul,
      L.cancelled + 0ul, L.refused + 0ul, L.failed + 0ul, L.checked + 0ul, L.untouched + 0ul,
      L.orphans + 0ul, L.unknown + 0ul, L.reclaimed + 0ul, L.cancels + 0ul, L.statuses + 0ul,
      L.rewaits + 0ul);
}

/* Warm-up, then the measured phase, each ended by a quiescent point. */
static void soak(const struct fdset *base, int base_n, const struct coop_stats *s0) {
  unsigned warm = g.o.seconds / 6 < 3 ? 3 : g.o.seconds / 6 > 60 ? 60 : g.o.seconds / 6;
  if (warm >= g.o.seconds) warm = g.o.seconds / 2;
  int64_t t0 = now_ms();
  run_phase(warm, 0);
  struct coop_stats st;
  if (stopped() || quiesce(&st)) return;
  long warm_kib = rss_kib();
  unsigned long detached0 = L.detached;
  print_ledger("warm-up");
  run_phase(g.o.seconds - warm, 1);
  if (stopped() || quiesce(&st)) return;
  print_ledger("end");
  check_descriptors(base, base_n);
  check_memory(warm_kib, rss_kib(), L.detached - detached0);
  if (!stats_now(&st)) check_stats(s0, &st);
  printf("coop-soak: ran %.1f s\n", (double)(now_ms() - t0) / 1000);
}

int main(int argc, char **argv) {
  int r = parse_args(argc, argv, &g.o);
  if (r) return r < 0 ? 0 : r;
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, NULL, _IOLBF, 0); /* in order with stderr in ctest's log */
  printf("coop-soak: seed %" PRIu64 ", %u s, %u clients + 1 graphics\n", g.o.seed, g.o.seconds,
         g.o.clients);
  if (g.o.socket)
    snprintf(g.sock, sizeof g.sock, "%s", g.o.socket);
  else if (daemon_start())
    return fail("start-up", "coopd did not start"), finish(1);
  if (probe()) return fail("start-up", "coopd's WELCOME or KERNELS"), finish(1);
  if (!g.dpid) g.dpid = peer_pid(g.sock);
  static struct fdset base;
  msleep(200); /* the probe's connection closing */
  int base_n = fd_snapshot(&base);
  struct coop_stats s0;
  if (stats_now(&s0)) return finish(1);
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);
  soak(&base, base_n, &s0);
  atomic_store(&g.wd_quit, 1);
  pthread_join(wd, NULL);
  return finish(0);
}
