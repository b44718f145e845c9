/*
 * side_setup_coop.c: coop-bench-side's own setups: (0c) the matmul as a
 * coop task of K groups on the idle megakernel, and (c) the same task
 * beside the long kernel, gathering its K workgroups from the cooperative
 * long kernel (from --ahead before its release, or only once released
 * with --ahead 0; the *-ahead0 setups run the latter beside the former in
 * one run). One row per K of --k.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_prof.h"
#include "side_setup.h"

/* The check buffer is a device buffer: reset and read by the copy engine,
 * as the plain setups' is by cuMemsetD32Async and cuMemcpyDtoHAsync, not
 * by host accesses that move its pages (docs/kernels.md, "Host side"). */
static int c_reset(void *p) {
  struct coopgfx *c = p;
  size_t bytes = (size_t)c->mm->n * c->mm->n * sizeof(float);
  uint8_t *h = malloc(bytes);
  if (!h) return 1;
  memset(h, 0xff, bytes);
  int r = coop_rt_arena_copy(c->rt, c->chk, h, bytes, 1);
  free(h);
  return r != 0;
}

static int c_launch(void *p, int chk, int64_t next_ns) {
  struct coopgfx *c = p;
  struct coop_rt_task_desc d = {.kernel = c->mm->kernel, .groups = c->k, .nargs = 5};
  if (c->ahead_ns > 0 && next_ns > 0) {
    d.next_ns = next_ns;
    d.ahead_ns = c->ahead_ns;
  }
  d.args[0] = coop_rt_buf_arg(c->rt, c->mm->a);
  d.args[1] = coop_rt_buf_arg(c->rt, c->mm->b);
  c->out = chk ? c->chk : c->mm->c;
  d.args[2] = coop_rt_buf_arg(c->rt, c->out);
  d.args[3] = c->mm->n;
  d.args[4] = c->mm->reps;
  /* --frame-io: the input in and the output out with the task
   * (coop_rt_submit_io; COOP_RT_IO=device: ordered by the device, as a
   * stream orders a plain client's copies) */
  size_t bytes = (size_t)c->mm->n * c->mm->n * sizeof(float);
  struct coop_rt_io in = {c->io_in, c->mm->a, bytes}, out = {c->io_out, c->out, bytes};
  int r = c->io_in ? coop_rt_submit_io(c->rt, &d, &in, 1, &out, 1, &c->id)
                   : coop_rt_submit(c->rt, &d, &c->id);
  if (r) fprintf(stderr, SB ": submitting a matmul task: %s\n", coop_strerror(r));
  return r != 0;
}

/* Spins on the task's state (host memory), as plain_finish spins on
 * cuStreamQuery: coop_rt_wait's naps would add up to 500 us. */
static int c_finish(void *p, struct sample *s) {
  struct coopgfx *c = p;
  struct coop_rt_task_info ti;
  for (;;) {
    int r = coop_rt_task_info(c->rt, c->id, &ti);
    if (r) {
      fprintf(stderr, SB ": matmul task: %s\n", coop_strerror(r));
      return 1;
    }
    if (ti.state != COOP_TASK_PENDING && ti.state != COOP_TASK_RUNNING) break;
    if (now_ns() - s->t_launch > c->timeout_ns) {
      coop_rt_cancel(c->rt, c->id);
      coop_rt_wait(c->rt, c->id, -1);
      coop_rt_task_release(c->rt, c->id);
      fprintf(stderr, SB ": a matmul task of %u groups took longer than the timeout\n", c->k);
      return 1;
    }
  }
  int r = c->io_out ? coop_rt_wait(c->rt, c->id, -1) : 0; /* its output out: microseconds */
  s->t_done = now_ns();
  coop_rt_task_release(c->rt, c->id);
  if (r) {
    fprintf(stderr, SB ": --frame-io: the output's copy: %s\n", coop_strerror(r));
    return 1;
  }
  if (ti.state != COOP_TASK_DONE) {
    fprintf(stderr, SB ": a matmul task of %u groups ended in state %d (refusal %d)\n", c->k,
            (int)ti.state, (int)ti.refusal);
    return 1;
  }
  s->exec_ns = ti.t_finished - ti.t_started;
  s->gather_ns = ti.gather_ns;
  return 0;
}

static int c_check(void *p, char *why, size_t len) {
  struct coopgfx *c = p;
  /* --frame-io: what the last frame moved out (every frame's a is a0, so
   * every frame's output is the reference), else the check task's */
  if (c->io_out) return side_mm_compare(c->io_out, c->mm->ref, c->mm->n, why, len);
  size_t bytes = (size_t)c->mm->n * c->mm->n * sizeof(float);
  float *got = malloc(bytes);
  int r = got ? coop_rt_arena_copy(c->rt, got, c->chk, bytes, 0) : COOP_ENOMEM;
  if (r)
    snprintf(why, len, "reading the check buffer: %s", coop_strerror(r));
  else
    r = side_mm_compare(got, c->mm->ref, c->mm->n, why, len);
  free(got);
  return r != 0;
}

struct task_ops coop_ops(struct coopgfx *c) {
  struct task_ops o = {c, c_reset, c_launch, c_finish, c_check};
  return o;
}

/* The task of the i-th K; the *-ahead0 setups' gathered only once released. */
static struct coopgfx *task_of(struct bench *b, int setup, int i, struct coopgfx *c) {
  *c = b->cg[i];
  if (setup == S_COOP_ALONE_AHEAD0 || setup == S_COOP_AHEAD0) c->ahead_ns = 0;
  return c;
}

int setup_coop_alone_run(struct bench *b, int setup) {
  for (int i = 0; i < b->nk; i++) {
    struct result *x = new_result(setup, b->ks[i], b->klabels[i]);
    say_start(x);
    struct coopgfx c;
    struct task_ops ops = coop_ops(task_of(b, setup, i, &c));
    if (gfx_alone(b, x, &ops)) return 1;
  }
  return 0;
}

int setup_coop_run(struct bench *b, int setup) {
  for (int i = 0; i < b->nk; i++) {
    struct result *x = new_result(setup, b->ks[i], b->klabels[i]);
    say_start(x);
    struct coopgfx c;
    struct thread_arg t = {.ops = coop_ops(task_of(b, setup, i, &c))};
    struct gfx_ctl ctl = {th_start, th_stop, &t};
    uint64_t snap[SCHED_PROF_SLOTS];
    sched_prof_kills_snap(b->rt, snap);
    if (long_window(b, x, &ctl)) return 1;
    sched_prof_kills_since(b->rt, x->name, snap);
  }
  return 0;
}
