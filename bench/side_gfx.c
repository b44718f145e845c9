/*
 * side_gfx.c: the periodic graphics tasks of coop-bench-side, the same loop
 * for every setup (plain CUDA or a coop task, this process or the child of
 * setup (a)), and the child process itself.
 *
 * Releases: task i is due at r_i; the next at r_i + P, or when task i
 * finishes if that is later (one frame at a time, as coop-bench-paper). The
 * thread sleeps until SPIN_NS before a release and spins the rest, so that
 * the launch follows the release within microseconds in every setup; it
 * spins while a task runs too (cuStreamQuery, or the coop task's state),
 * so the host sees the end within microseconds whatever the setup.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "side.h"

static void push_sample(struct gfx *g, const struct sample *s) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 256;
    struct sample *p = realloc(g->s, cap * sizeof *p);
    if (!p) {
      fprintf(stderr, SB ": out of memory\n");
      exit(1);
    }
    g->s = p;
    g->cap = cap;
  }
  g->s[g->n++] = *s;
}

/* How long before a release the thread stops napping: with 300 us, 1 to
 * 3 frames in 100 of every setup, coop or plain, launched 50-470 us late
 * (a nap that overran on the lent VMs), and one such frame was a 1 s
 * window's p99 (bench/RESULTS.md, "Small buffers by the copy engine"). */
#define SPIN_NS 1000000

/* Until t, or g->stop (then 1): naps of at most 2 ms up to SPIN_NS before
 * t, then spins; *nap_end: when the last nap ended (0: none), so that the
 * report can tell a launch late for a nap that overran from one late for
 * a spin the thread was taken off. */
static int wait_until(struct gfx *g, int64_t t, int64_t *nap_end) {
  *nap_end = 0;
  for (;;) {
    if (atomic_load(&g->stop)) return 1;
    int64_t now = now_ns(), left = t - now;
    if (left <= 0) return 0;
    if (left <= SPIN_NS) continue;
    int64_t nap = left - SPIN_NS < 2000000 ? left - SPIN_NS : 2000000;
    struct timespec ts = {(time_t)(nap / 1000000000), (long)(nap % 1000000000)};
    nanosleep(&ts, NULL);
    *nap_end = now_ns();
  }
}

int gfx_loop(struct gfx *g) {
  if (g->ops.reset_chk(g->ops.ctx)) {
    snprintf(g->why, sizeof g->why, "resetting the check buffer failed");
    return g->err = 1;
  }
  int64_t next = now_ns(), nap_end;
  for (size_t i = 0; !wait_until(g, next, &nap_end); i++) {
    struct sample s;
    memset(&s, 0, sizeof s);
    s.nap_end = nap_end;
    s.t_release = next;
    s.chk = i == 0;
    s.t_launch = now_ns();
    if (g->ops.launch(g->ops.ctx, s.chk, next + g->period_ns) || g->ops.finish(g->ops.ctx, &s)) {
      snprintf(g->why, sizeof g->why, "graphics task %zu failed", i);
      return g->err = 1;
    }
    if (s.chk && g->ops.check(g->ops.ctx, g->why, sizeof g->why)) return g->err = 1;
    next += g->period_ns;
    if (s.t_done > next) next = s.t_done;
    s.t_next = next;
    push_sample(g, &s);
  }
  return 0;
}

static void *gfx_thread(void *p) {
  gfx_loop(p);
  return NULL;
}

int gfx_start(struct gfx *g, const struct task_ops *ops, int64_t period_ns) {
  memset(g, 0, sizeof *g);
  g->ops = *ops;
  g->period_ns = period_ns;
  atomic_init(&g->stop, 0);
  if (pthread_create(&g->th, NULL, gfx_thread, g)) {
    fprintf(stderr, SB ": cannot start the graphics thread\n");
    return 1;
  }
  g->started = 1;
  return 0;
}

int gfx_stop(struct gfx *g) {
  if (!g->started) return 1;
  atomic_store(&g->stop, 1);
  pthread_join(g->th, NULL);
  g->started = 0;
  return g->err;
}

void gfx_free(struct gfx *g) {
  free(g->s);
  g->s = NULL;
  g->n = g->cap = 0;
}

/* ------------------------------------------------- the child of (a) */

/* The plain task's ops, shared with side.c through these wrappers. */
static int p_reset(void *c) { return plain_reset_chk(c); }
static int p_launch(void *c, int chk, int64_t next_ns) {
  (void)next_ns; /* a plain launch has no gather */
  return plain_launch(c, chk);
}
static int p_finish(void *c, struct sample *s) {
  struct plain *p = c;
  int r = plain_finish(p, &s->exec_ns);
  s->t_done = now_ns();
  if (r) fprintf(stderr, SB ": %s\n", p->err);
  return r;
}
static int p_check(void *c, char *why, size_t len) { return plain_check(c, why, len); }

static const struct task_ops plain_ops_tmpl = {NULL, p_reset, p_launch, p_finish, p_check};

struct task_ops side_plain_ops(struct plain *p) {
  struct task_ops o = plain_ops_tmpl;
  o.ctx = p;
  return o;
}

/* A line from fd (blocking), without the newline; 0 at EOF or error. */
static int read_line(int fd, char *buf, size_t n) {
  size_t len = 0;
  while (len + 1 < n) {
    ssize_t r = read(fd, buf + len, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (buf[len] == '\n') break;
    len++;
  }
  buf[len] = 0;
  return len > 0;
}

struct stopper {
  int fd;
  struct gfx *g;
};

/* Sets g->stop at "stop" or EOF on the control pipe. */
static void *stop_reader(void *p) {
  struct stopper *st = p;
  char line[64];
  while (read_line(st->fd, line, sizeof line) && strcmp(line, "stop")) {
  }
  atomic_store(&st->g->stop, 1);
  return NULL;
}

/* coop-bench-side --child CTRL_FD DATA_FD DEVICE N REPS GRID LOCAL PERIOD_NS TIMEOUT_S CARVEOUT IO
 * Protocol on DATA_FD: "ready NAME" once the kernel is built, loaded and
 * warmed up (or "end 1 why"); after "go" on CTRL_FD the periodic loop until
 * "stop" (or EOF); then one line per task, "s chk t_release t_launch t_done
 * exec_ns t_next", and "end RC why". */
int side_child_main(int argc, char **argv) {
  if (argc != 13) {
    fprintf(stderr, SB " --child: internal use only (setup (a))\n");
    return 2;
  }
  int ctrl = atoi(argv[2]), data = atoi(argv[3]), device = atoi(argv[4]);
  uint32_t n = (uint32_t)strtoul(argv[5], NULL, 10), reps = (uint32_t)strtoul(argv[6], NULL, 10);
  unsigned grid = (unsigned)strtoul(argv[7], NULL, 10),
           local = (unsigned)strtoul(argv[8], NULL, 10);
  int64_t period = strtoll(argv[9], NULL, 10), timeout_s = strtoll(argv[10], NULL, 10);
  FILE *out = fdopen(data, "w");
  if (!out) return 1;
  struct plain p;
  int rc = plain_open(&p, device, local);
  if (timeout_s > 0) p.timeout_ns = timeout_s * 1000000000;
  p.io = atoi(argv[12]) != 0;
  if (!rc) rc = plain_carveout(&p, atoi(argv[11]));
  if (!rc) rc = plain_data(&p, n);
  if (!rc) {
    p.grid = grid;
    p.reps = reps;
    double ns;
    rc = plain_measure(&p, 3, &ns); /* warm-up */
  }
  if (rc) {
    fprintf(out, "end 1 %s\n", p.err);
    fclose(out);
    plain_close(&p);
    return 1;
  }
  fprintf(out, "ready %s\n", p.name);
  fflush(out);
  char line[64];
  if (!read_line(ctrl, line, sizeof line) || strcmp(line, "go")) {
    plain_close(&p);
    fclose(out);
    return 1;
  }
  struct gfx g;
  memset(&g, 0, sizeof g);
  g.ops = side_plain_ops(&p);
  g.period_ns = period;
  atomic_init(&g.stop, 0);
  struct stopper st = {ctrl, &g};
  pthread_t th;
  if (pthread_create(&th, NULL, stop_reader, &st)) {
    fprintf(out, "end 1 cannot start a thread\n");
    fclose(out);
    return 1;
  }
  rc = gfx_loop(&g);
  atomic_store(&g.stop, 1);
  pthread_join(th, NULL);
  for (size_t i = 0; i < g.n; i++) {
    const struct sample *s = &g.s[i];
    fprintf(out, "s %d %lld %lld %lld %lld %lld\n", s->chk, (long long)s->t_release,
            (long long)s->t_launch, (long long)s->t_done, (long long)s->exec_ns,
            (long long)s->t_next);
  }
  for (char *c = g.why; *c; c++)
    if (*c == '\n') *c = ' ';
  fprintf(out, "end %d %s\n", rc, rc ? g.why : "ok");
  fclose(out);
  gfx_free(&g);
  plain_close(&p);
  return rc;
}
