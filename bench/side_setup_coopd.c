/*
 * side_setup_coopd.c: coop-bench-side's setup (g), a frame client through
 * coopd, as a user outside the daemon runs one. The bench starts a coopd
 * of its own (coopd_proc.h) whose megakernel is launched like this
 * process's (the same local size and workgroups, arena, backend; never
 * parked, as this process's never is) and holds only the two kernels: the
 * matmul (kernels/apps/matmul.cl, the source the coop task runs, under a
 * //@coop line) and the long kernel's application. This process's
 * megakernel is closed first: on a GPU the two would time-slice.
 *
 * The frame client is a connection of this process: every frame writes
 * the matmul's input a into a persistent device buffer
 * (coop_buffer_write), submits the matmul of K groups naming its device
 * buffers, waits, and reads the output back (coop_buffer_read); the
 * latency runs from the release to the output read. The long kernel is
 * the same application on the same input as (c), as cooperative coopd
 * jobs one after the other from a second connection, its graph uploaded
 * once (coopd_jobs.h), its runs checked against the CPU (side_check_runs).
 *
 * Rows: the long kernel alone in coopd, then per K the frame client alone
 * and beside the long kernel. Each row's ratios are against the row with
 * one thing fewer (side_setups.c): the frame client beside bfs against
 * the frame client alone (what sharing costs), the frame client alone
 * against (0), the long kernel in coopd against the long kernel alone in
 * this process. Gather is coopd's gather_ns (device clock, released ->
 * gathered). The frame rows also carry the CPU time coopd and its device
 * process spent over the window (coopd_cpu_s).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coopd_jobs.h"
#include "coopd_proc.h"
#include "side_setup.h"

/* The matmul as coopd loads it: render.cl's signature and checks. */
static const char matmul_head[] =
    "//@coop name=matmul kind=noncooperative args=a:buf,b:buf,c:buf,n:u32,reps:u32\n"
    "//@coop require n*n*4 <= len(a)\n"
    "//@coop require n*n*4 <= len(b)\n"
    "//@coop require n*n*4 <= len(c)";

/* ------------------------------------------------------- the frame client */

struct cframe {
  struct dframe d;
  float *a0, *b0;   /* side_mm_inputs */
  const float *ref; /* the CPU's product of a0 and b0 */
  uint64_t chk;     /* the check task's output buffer */
  uint64_t id, out; /* the frame in flight and its output buffer */
  uint32_t frame;
  float delta; /* added to a[0] by the frame in flight */
  int timeout_ms;
  FILE *trace;                   /* --coopd-client-trace */
  int64_t t_submit, t_submitted; /* the frame in flight's coop_submit call and return */
};

/* The check buffer NaN-filled, so that only the check task can pass. */
static int f_reset(void *p) {
  struct cframe *f = p;
  memset(f->d.out, 0xff, f->d.bytes);
  return coop_buffer_write(f->d.c, f->chk, 0, f->d.out, f->d.bytes) != 0;
}

/* A fresh a every frame: a0 with its first element moved by 1..4, so that
 * the output's first element says the write landed before the task; the
 * check task's a is a0 itself. */
static int f_launch(void *p, int chk, int64_t next_ns) {
  (void)next_ns; /* coopd's frame client does not gather ahead */
  struct cframe *f = p;
  f->delta = chk ? 0.0f : (float)(1 + f->frame % 4);
  f->frame++;
  f->out = chk ? f->chk : f->d.o;
  float *in = dframe_input(&f->d); /* --coopd-frame iofd: produced in place */
  int e;
  f->t_submit = now_ns();
  if (in) {
    in[0] = f->a0[0] + f->delta;
    e = dframe_submit(&f->d, in, f->out, &f->id);
  } else {
    float a00 = f->a0[0];
    f->a0[0] = a00 + f->delta;
    e = dframe_submit(&f->d, f->a0, f->out, &f->id);
    f->a0[0] = a00;
  }
  f->t_submitted = now_ns();
  if (e)
    fprintf(stderr, SB ": (g) frame %u: %s: %s\n", f->frame, coop_strerror(e), coop_errmsg(f->d.c));
  return e != 0;
}

static int f_finish(void *p, struct sample *s) {
  struct cframe *f = p;
  struct coop_result r;
  int64_t t_wait = now_ns();
  int e = dframe_finish(&f->d, f->id, f->out, f->timeout_ms, &r);
  s->t_done = now_ns();
  if (f->trace && !e)
    fprintf(f->trace, "%llu,%lld,%lld,%lld,%lld,%lld,%lld,%d\n", (unsigned long long)f->id,
            (long long)s->t_release, (long long)s->t_launch, (long long)f->t_submit,
            (long long)f->t_submitted, (long long)t_wait, (long long)s->t_done, s->chk);
  if (e) {
    fprintf(stderr, SB ": (g) frame %u: %s: %s\n", f->frame, coop_strerror(e), coop_errmsg(f->d.c));
    return 1;
  }
  s->exec_ns = r.t.exec_ns;
  s->gather_ns = r.t.gather_ns;
  coop_result_free(&r);
  /* c[0][0] = sum_k a[0][k] b[k][0]: moving a[0][0] by delta moves it by
   * delta * b[0][0], exactly (small integers in float) */
  float want = f->ref[0] + f->delta * f->b0[0];
  if (memcmp(&f->d.out[0], &want, sizeof want)) {
    fprintf(stderr, SB ": (g) frame %u: c[0] = %g, expected %g: not this frame's output\n",
            f->frame, (double)f->d.out[0], (double)want);
    return 1;
  }
  return 0;
}

static int f_check(void *p, char *why, size_t len) {
  struct cframe *f = p;
  return side_mm_compare(f->d.out, f->ref, f->d.n, why, len);
}

static int cframe_open(struct cframe *f, const struct bench *b, coop_conn *c) {
  memset(f, 0, sizeof *f);
  uint32_t n = b->p.n;
  size_t bytes = (size_t)n * n * sizeof(float);
  f->a0 = malloc(bytes);
  f->b0 = malloc(bytes);
  if (!f->a0 || !f->b0) return COOP_ENOMEM;
  side_mm_inputs(f->a0, f->b0, n);
  f->ref = b->p.ref;
  f->timeout_ms = (int)b->o->timeout_s * 1000;
  int e = dframe_open(&f->d, c, "matmul", n, 1, f->a0, f->b0);
  if (!e) e = dframe_how(&f->d, b->o->coopd_frame, f->a0);
  if (!e) e = coop_buffer_create(c, 0, bytes, NULL, 0, &f->chk);
  f->d.reps = b->p.reps;
  f->d.priority = (int)b->o->coopd_priority;
  if (!e && b->o->coopd_client_trace) {
    f->trace = fopen(b->o->coopd_client_trace, "w");
    if (!f->trace) return COOP_EIO;
    fprintf(f->trace, "id,release,launch,submit,submitted,wait,done,chk\n");
  }
  return e;
}

static void cframe_close(struct cframe *f) {
  if (f->trace) fclose(f->trace);
  if (f->chk) coop_buffer_free(f->d.c, f->chk);
  dframe_close(&f->d);
  free(f->a0);
  free(f->b0);
}

/* ------------------------------------------------------------ the daemon */

/* coopd with the two kernels, its megakernel launched like this process's. */
static int start_coopd(struct bench *b, struct coopd_proc *d) {
  const struct sopts *o = b->o;
  char path[4096];
  if (o->coopd)
    snprintf(path, sizeof path, "%s", o->coopd);
  else if (exe_sibling("coopd", path, sizeof path)) {
    fprintf(stderr, SB ": (g): cannot find coopd beside this binary: name it with --coopd\n");
    return 1;
  }
  const char *be = getenv("COOP_SIDE_BACKEND"); /* the test hook, as side_megakernel */
  char backend[64], local[64], groups[64], device[64], prio[64], regs[64];
  snprintf(backend, sizeof backend, "device.backend=%.40s", be && *be ? be : "cuda");
  snprintf(local, sizeof local, "device.local_size=%ld", o->local);
  snprintf(groups, sizeof groups, "device.max_workgroups=%u", b->launched);
  snprintf(device, sizeof device, "device.device_index=%ld", o->device);
  snprintf(prio, sizeof prio, "limits.max_priority=%ld", o->coopd_priority); /* 0: the default */
  snprintf(regs, sizeof regs, "device.max_registers=%ld", o->max_registers);
  int cuda = !be || !*be || !strcmp(be, "cuda");
  const char *sets[10 + SIDE_COOPD_SETS];
  int n = 0;
  sets[n++] = backend;
  sets[n++] = local;
  sets[n++] = groups;
  sets[n++] = "device.arena_mb=512";
  sets[n++] = "device.park_ms=0"; /* this process's megakernel never parks */
  sets[n++] = prio;
  if (cuda) sets[n++] = device;
  if (o->max_registers) sets[n++] = regs; /* else coopd's default */
  for (unsigned i = 0; i < o->ncoopd_sets; i++) sets[n++] = o->coopd_sets[i]; /* theirs win */
  sets[n] = NULL;
  printf(SB ": (g): starting %s\n", path);
  fflush(stdout);
  if (coopd_dir(d) || coopd_kernel_file(d, "matmul", matmul_head, coop_app_src_matmul_cl) ||
      coopd_kernel_file(d, b->app->kernel, NULL, b->app->source))
    return 1;
  return coopd_start(d, path, sets, (int)o->timeout_s * 1000);
}

/* What the run is against, into the header (the CSV's and the .md's). */
static void describe(const struct bench *b, coop_conn *c) {
  const struct coop_info *in = coop_info(c);
  size_t len = strlen(header);
  snprintf(header + len, sizeof header - len,
           "coopd (g): %s on %s (%s), %u workers (this process's megakernel: %u), local size "
           "%ld; each frame %s %zu bytes in and %zu out; its waits spin up to %ld us; "
           "its priority %ld (the long kernel's jobs: 0)\n",
           in->daemon_version, in->device, in->backend, in->workers, b->workers, b->o->local,
           b->o->coopd_frame == DFRAME_JOB ? "is one job (--coopd-frame job), its SUBMIT and "
                                             "RESULT carrying"
           : b->o->coopd_frame == DFRAME_IO
               ? "is one job on device buffers that moves (--coopd-frame io, devbuf_io)"
           : b->o->coopd_frame == DFRAME_IO_FD
               ? "is one job on device buffers that moves through a memfd of the client's, "
                 "its input produced there (--coopd-frame iofd, devbuf_io),"
               : "moves through device buffers (BUF_WRITE, BUF_READ)",
           (size_t)b->p.n * b->p.n * sizeof(float), (size_t)b->p.n * b->p.n * sizeof(float),
           b->o->coopd_spin_us, b->o->coopd_priority);
  for (unsigned i = 0; i < b->o->ncoopd_sets; i++) { /* --coopd-set, in the header too */
    size_t at = strlen(header);
    snprintf(header + at, sizeof header - at, "%s%s%s",
             i ? ", " : "coopd (g) settings: ", b->o->coopd_sets[i],
             i + 1 == b->o->ncoopd_sets ? "\n" : "");
  }
  printf(SB ": %s", header + len);
  if (in->workers != b->workers)
    fprintf(stderr, SB ": warning: coopd has %u workers, this process's megakernel had %u\n",
            in->workers, b->workers);
}

/* -------------------------------------------------------------- windows */

/* The long kernel's runs of one window into x, checked (side_check_runs;
 * their outputs freed), and which tasks were released during one. */
static int take_runs(struct bench *b, struct result *x, struct dlong *l) {
  void **outs = calloc(l->nruns + 1, sizeof *outs);
  if (!outs) return 1;
  for (size_t i = 0; i < l->nruns; i++) {
    struct dlong_run *r = &l->runs[i];
    struct coop_rt_task_info ti;
    memset(&ti, 0, sizeof ti);
    ti.t_started = r->started; /* coopd's CLOCK_MONOTONIC, the samples' clock */
    ti.t_finished = r->finished;
    ti.kills = r->kills;
    ti.forks = r->forks;
    ti.m_min = r->m_min;
    add_run(x, &ti);
    outs[i] = r->out;
    r->out = NULL;
  }
  dlong_clear(l);
  int rc = side_check_runs(b, x, outs);
  mark_in_run(x);
  return rc;
}

/* The long kernel as coopd jobs back to back for the window (at least
 * --min-runs), ctl's frames beside it (or none). */
static int long_jobs(struct bench *b, struct result *x, struct dlong *l,
                     const struct gfx_ctl *ctl) {
  dlong_clear(l);
  x->t0 = now_ns();
  int rc = ctl && ctl->start(b, ctl->arg);
  while (!rc) {
    int e = dlong_job(l);
    if (e) {
      fprintf(stderr, SB ": %s: %s on %s: %s\n", x->name, b->app->name, b->in.label,
              coop_strerror(e));
      rc = 1;
    } else if ((long)l->nruns >= b->o->min_runs && now_ns() - x->t0 >= b->window_ns)
      break;
  }
  x->t1 = now_ns();
  if (ctl) rc |= ctl->stop(b, ctl->arg, x);
  return take_runs(b, x, l) | rc;
}

/* The frame client at one K, alone and beside the long kernel; coopd's CPU
 * over each window. */
static int frame_rows(struct bench *b, int k, struct cframe *f, struct dlong *l, long pid) {
  f->d.groups = b->ks[k];
  struct thread_arg t = {.ops = {f, f_reset, f_launch, f_finish, f_check}};
  struct result *x = new_result(S_COOPD_ALONE, b->ks[k], b->klabels[k]);
  say_start(x);
  double cpu0 = coopd_cpu_s(pid);
  int rc = gfx_alone(b, x, &t.ops);
  x->cpu_s = coopd_cpu_s(pid) - cpu0;
  x->has_cpu = 1;
  if (rc) return 1;
  x = new_result(S_COOPD, b->ks[k], b->klabels[k]);
  say_start(x);
  struct gfx_ctl ctl = {th_start, th_stop, &t};
  cpu0 = coopd_cpu_s(pid);
  rc = long_jobs(b, x, l, &ctl);
  x->cpu_s = coopd_cpu_s(pid) - cpu0;
  x->has_cpu = 1;
  return rc;
}

/* The rows, against a running coopd. */
static int rows(struct bench *b, const struct coopd_proc *d) {
  coop_conn *c = NULL;
  struct dlong l;
  struct cframe f;
  memset(&l, 0, sizeof l);
  memset(&f, 0, sizeof f);
  int e = coop_connect(&c, d->sock, SB " frames");
  if (!e) coop_set_spin(c, (unsigned)b->o->coopd_spin_us); /* its waits as the others' */
  if (!e) e = cframe_open(&f, b, c);
  if (!e) e = dlong_open(&l, d->sock, SB " long", b->app, &b->in, b->o->query);
  if (e) fprintf(stderr, SB ": (g): %s: %s\n", coop_strerror(e), coop_errmsg(l.c ? l.c : c));
  int rc = e != 0;
  if (!rc) {
    describe(b, c);
    l.keep_outputs = 1;
    l.timeout_ms = (int)b->o->timeout_s * 1000;
    rc = dlong_job(&l) != 0; /* warm-up: the graph's first touch, not recorded */
  }
  if (!rc) {
    struct result *x = new_result(S_COOPD_LONG, 0, NULL);
    say_start(x);
    rc = long_jobs(b, x, &l, NULL);
  }
  for (int k = 0; k < b->nk && !rc; k++) {
    if (b->ks[k] > coop_info(c)->workers) b->ks[k] = coop_info(c)->workers;
    rc = frame_rows(b, k, &f, &l, (long)d->pid);
  }
  dlong_close(&l);
  cframe_close(&f);
  coop_disconnect(c);
  return rc;
}

int setup_coopd_run(struct bench *b, int setup) {
  (void)setup;
  struct coopd_proc d;
  memset(&d, 0, sizeof d);
  int rc = start_coopd(b, &d);
  if (!rc) rc = rows(b, &d);
  rc |= coopd_stop(&d, rc);
  return rc;
}
