/*
 * side.c: coop-bench-side (bench/README.md): the same graphics-like kernel
 * (kernels/apps/matmul.cl) released every P beside the same long kernel
 * (an application of apps/ in the coop megakernel), in the setups
 * a user has today on an NVIDIA GPU and in ours, one after the other in one
 * run (side.h lists them; bench/README.md says why each is built as it is).
 *
 * This file: the calibration, the header and the frame that runs the
 * setups of side_setups.c in its order (side_options.c: the options). (0) the plain matmul
 * alone, before anything else touches the GPU; the child of (a) started
 * (its context built and warmed up on the idle GPU, then idle); the
 * megakernel launched; then every setup beside it in the table's order
 * (the long kernel alone; (0c) the coop task alone at each K; (a), (b), (c)
 * at each K, (d)), each a window of the long kernel back to back for at
 * least --window seconds with the graphics tasks released throughout;
 * then the megakernel closed and the setups whose long kernel runs
 * elsewhere ((e) green contexts, (f) MPS, (g) a coopd).
 *
 * The long kernel's runs are checked against the CPU reference after
 * their window (side_check_runs: every run unless checking would outlast
 * the window), and the first graphics task of every window writes a separate,
 * NaN-filled buffer that is checked against the CPU (exit status 1 if any
 * is wrong, or if a run or task fails). Nothing is asserted about time.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "side_setup.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

/* -------------------------------------------------------- calibration */

/* n = --matrix, or 4G (at least 48) halved while reps < 4 and n / 2 >=
 * max(48, G); reps so that one plain launch of G blocks takes E, from one
 * repetition's median, then rescaled once from the median of 5. */
static int calibrate(struct bench *b) {
  struct plain *p = &b->p;
  const struct sopts *o = b->o;
  uint32_t n = o->matrix ? (uint32_t)o->matrix : 4 * p->grid;
  n = n < 48 ? 48 : n > 4096 ? 4096 : n;
  uint32_t floor = p->grid < 48 ? 48 : p->grid;
  double target = o->exec_ms * 1e6;
  for (;;) {
    double ns = 0;
    if (plain_data(p, n)) return 1;
    p->reps = 1;
    if (plain_measure(p, 3, &ns)) return 1;
    double reps = ns > 0 ? round(target / ns) : 1;
    p->reps = reps < 1 ? 1u : reps > (1 << 24) ? (1u << 24) : (uint32_t)reps;
    if (p->reps < 4 && !o->matrix && n / 2 >= floor) {
      n /= 2;
      continue;
    }
    if (plain_measure(p, 5, &ns)) return 1;
    if (ns > 0) {
      reps = round(p->reps * target / ns);
      p->reps = reps < 1 ? 1u : reps > (1 << 24) ? (1u << 24) : (uint32_t)reps;
    }
    if (plain_measure(p, 5, &ns)) return 1;
    b->e_plain_ms = ns / 1e6;
    return 0;
  }
}

/* ------------------------------------------------------------- header */

static void make_header(struct bench *b, const char *load, const char *date) {
  unsigned *ks = b->ks;
  char(*labels)[16] = b->klabels;
  int nk = b->nk;
  const struct sopts *o = b->o;
  char kstr[256] = "", carve[32] = "driver default";
  if (o->carveout >= 0) snprintf(carve, sizeof carve, "%ld%% shared", o->carveout);
  struct machine mc;
  machine_of(&mc);
  for (int i = 0; i < nk; i++)
    snprintf(kstr + strlen(kstr), sizeof kstr - strlen(kstr), "%s%u (%s)", i ? ", " : "", ks[i],
             labels[i]);
  snprintf(header, sizeof header,
           "machine: %s, %s, %s, %ld cores online, load average %s at start\n"
           "device: %s, %d SMs, compute capability %d.%d, CUDA driver %d.%d\n"
           "backend: %s (%s)\n"
           "megakernel: launched %u workgroups, %u participants (1 scheduler + %u workers), "
           "local size %ld, device clock %.4f ns/tick\n"
           "commit: %s (at build time); run %s\n"
           "graphics task: matmul.cl, n %u, reps %u; plain launch %u blocks x %ld threads "
           "(carveout %s): %.3f ms alone (target E %.3g ms); coop task on all %u workers: "
           "%.3f ms\n"
           "period P %.4g ms, window >= %.4g s, K = %s, gathering ahead %ld us%s\n"
           "long kernel: %s (cooperative form, %s resizing barrier) on %s (%u vertices, %u "
           "edges), all %u workers, back to back, >= %ld runs per window\n"
           "command: %s\n",
           mc.host, mc.arch, mc.cpu, sysconf(_SC_NPROCESSORS_ONLN), load, b->p.name, b->p.sms,
           b->p.cc_major, b->p.cc_minor, b->p.driver / 1000, b->p.driver % 1000 / 10,
           coop_rt_backend(b->rt), coop_rt_backend_note(b->rt), coop_rt_launched_groups(b->rt),
           coop_rt_participants(b->rt), b->workers, o->local, coop_rt_tick_ns(b->rt),
           COOP_BENCH_COMMIT, date, b->p.n, b->p.reps, b->p.grid, o->local, carve, b->e_plain_ms,
           o->exec_ms, b->workers, b->e_coop_all_ms, o->period_ms, o->window_s, kstr, o->ahead_us,
           o->frame_io ? "; every frame copies a in and its output out (--frame-io)" : "",
           b->app->name, o->query ? "query" : "plain", b->in.label, b->in.graph.n, b->in.graph.m,
           b->workers, o->min_runs, o->cmd);
}

/* --------------------------------------------------------------- main */

static int selected(const struct sopts *o, int i) { return (o->setups >> i) & 1u; }

/* A setup with plain CUDA launches where there is no driver: said so. */
static int skip_plain(const struct bench *b, int i) {
  if (!b->no_plain || !(side_setups[i].flags & SETUP_CUDA)) return 0;
  say_skip(side_setups[i].label, "no CUDA driver (the PoCL test hook)");
  return 1;
}

/* Each selected setup of one phase, in the table's order. */
static int run_phase(struct bench *b, unsigned with, unsigned without) {
  for (int i = 0; i < S_COUNT; i++) {
    const struct side_setup *s = &side_setups[i];
    if (!selected(b->o, i) || !s->run || (s->flags & with) != with || (s->flags & without) ||
        skip_plain(b, i))
      continue;
    int r = s->run(b, i);
    if (save_csv(b->o) || r) return 1;
  }
  return 0;
}

/* The megakernel's matmul buffers and the megakernel itself, closed (the
 * setups with processes of their own run on a GPU without it). */
static int close_megakernel(struct bench *b) {
  if (!b->rt) return 0;
  if (b->chk) coop_rt_free(b->rt, b->chk);
  b->chk = NULL;
  coop_matmul_close(&b->mm);
  int r = coop_rt_close(b->rt);
  b->rt = NULL;
  b->io_in = b->io_out = NULL; /* its host buffers: closed with it */
  if (r) fprintf(stderr, SB ": closing the megakernel failed\n");
  return r != 0;
}

/* The plain matmul opened and calibrated. Without a driver, under the
 * test hook (COOP_SIDE_BACKEND other than cuda), the setups that need it
 * are skipped and the coop task is calibrated instead (coop_only_matmul). */
static int plain_start(struct bench *b) {
  const struct sopts *o = b->o;
  struct plain *p = &b->p;
  if (plain_open(p, (int)o->device, (unsigned)o->local)) {
    const char *be = getenv("COOP_SIDE_BACKEND");
    fprintf(stderr, SB ": plain CUDA: %s\n", p->err);
    if (!be || !*be || !strcmp(be, "cuda")) return 1;
    printf(SB ": no CUDA driver: the setups with plain CUDA launches are skipped\n");
    snprintf(p->name, sizeof p->name, "none (no CUDA driver)");
    b->no_plain = 1;
    return 0;
  }
  p->grid = o->grid ? (unsigned)o->grid : 2u * (unsigned)p->sms;
  p->io = o->frame_io;
  p->timeout_ns = (int64_t)o->timeout_s * 1000000000;
  if (plain_carveout(p, (int)o->carveout)) {
    fprintf(stderr, SB ": --carveout: %s\n", p->err);
    return 1;
  }
  printf(SB ": %s, %d SMs; calibrating the plain matmul (%u blocks)\n", p->name, p->sms, p->grid);
  fflush(stdout);
  if (calibrate(b)) {
    fprintf(stderr, SB ": calibration: %s\n", p->err);
    return 1;
  }
  printf(SB ": matmul n %u, reps %u: %.3f ms alone\n", p->n, p->reps, b->e_plain_ms);
  fflush(stdout);
  return 0;
}

/* Without the plain matmul: n = --matrix (default 48) and reps such that
 * the coop task takes E on every worker, into b->p as the plain
 * calibration leaves them (n, reps, bytes, the CPU reference). */
static int coop_only_matmul(struct bench *b) {
  struct plain *p = &b->p;
  p->n = b->o->matrix ? (uint32_t)b->o->matrix : 48;
  p->bytes = (size_t)p->n * p->n * sizeof(float);
  struct coop_matmul mm;
  int r = coop_matmul_open(&mm, b->rt, p->n, 1), opened = !r;
  if (!r) r = coop_matmul_calibrate(&mm, b->workers, b->o->exec_ms * 1e3);
  p->reps = mm.reps;
  p->ref = r ? NULL : malloc(p->bytes);
  if (p->ref) memcpy(p->ref, mm.ref, p->bytes);
  if (opened) coop_matmul_close(&mm);
  if (r || !p->ref) {
    fprintf(stderr, SB ": matmul calibration: %s\n", coop_strerror(r ? r : COOP_ENOMEM));
    return 1;
  }
  b->e_plain_ms = NAN;
  printf(SB ": matmul n %u, reps %u (the coop task on every worker)\n", p->n, p->reps);
  fflush(stdout);
  return 0;
}

static int run(struct sopts *o) {
  struct bench b;
  memset(&b, 0, sizeof b);
  b.o = o;
  b.window_ns = (int64_t)(o->window_s * 1e9);
  b.child.pid = -1;
  int rc = 0;
  char load[64], date[64];
  load_avg(load, sizeof load);
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  signal(SIGPIPE, SIG_IGN);

  /* the long kernel's input first: a bad one fails before the GPU is used */
  int r = side_input(&b);
  if (r) return r;

  /* the plain matmul, calibrated, and (0) before anything else runs on the GPU */
  if ((rc = plain_start(&b))) goto out;
  if ((rc = run_phase(&b, SETUP_IDLE_GPU, 0))) goto out;

  /* what must be ready before the megakernel: (a)'s process, its context
   * built and warmed up while the GPU is idle */
  for (int i = 0; i < S_COUNT; i++)
    if (selected(o, i) && side_setups[i].prepare && !skip_plain(&b, i) &&
        (rc = side_setups[i].prepare(&b)))
      goto out;

  /* the megakernel: the long kernel's application and the matmul task */
  if ((rc = side_megakernel(&b, 1))) goto out;
  if (b.no_plain && (rc = coop_only_matmul(&b))) goto out;
  if (!b.no_plain && strcmp(coop_rt_device_name(b.rt), b.p.name))
    fprintf(stderr, SB ": warning: the megakernel runs on '%s', the plain launches on '%s'\n",
            coop_rt_device_name(b.rt), b.p.name);
  if (b.child.pid > 0 && strcmp(b.child.name, b.p.name))
    fprintf(stderr, SB ": warning: the process of (a) runs on '%s'\n", b.child.name);
  b.nk = side_k_list(o->klist, b.workers, b.ks, b.klabels);
  r = coop_matmul_open(&b.mm, b.rt, b.p.n, b.p.reps);
  b.chk = r ? NULL : coop_rt_alloc_device(b.rt, b.p.bytes);
  if (r || !b.chk) {
    fprintf(stderr, SB ": matmul buffers: %s\n", coop_strerror(r ? r : COOP_ENOMEM));
    rc = 1;
    goto out;
  }
  if (o->frame_io) { /* a's bytes as every frame sends them */
    b.io_in = coop_rt_host_buffer(b.rt, b.p.bytes);
    b.io_out = coop_rt_host_buffer(b.rt, b.p.bytes);
    r = !b.io_in || !b.io_out ? COOP_ENOMEM
                              : coop_rt_arena_copy(b.rt, b.io_in, b.mm.a, b.p.bytes, 0);
    if (r) {
      fprintf(stderr, SB ": --frame-io buffers: %s\n", coop_strerror(r));
      rc = 1;
      goto out;
    }
  }
  if (memcmp(b.mm.ref, b.p.ref, b.p.bytes)) {
    fprintf(stderr, SB ": internal: the plain and the coop matmul inputs differ\n");
    rc = 1;
    goto out;
  }
  if (coop_measure(&b, b.workers, &b.e_coop_all_ms)) {
    rc = 1;
    goto out;
  }
  make_header(&b, load, date);
  printf("\n" SB "\n%s\n", header);
  fflush(stdout);
  if ((rc = side_long_warm_up(&b))) goto out;
  for (int i = 0; i < b.nk; i++) {
    b.cg[i] = (struct coopgfx){b.rt,
                               &b.mm,
                               b.chk,
                               b.ks[i],
                               (int64_t)o->timeout_s * 1000000000,
                               0,
                               (int64_t)(o->ahead_us * 1000),
                               b.io_in,
                               b.io_out,
                               NULL};
    double ms;
    if (coop_measure(&b, b.ks[i], &ms)) { /* warm: the buffers migrate to the GPU */
      rc = 1;
      goto out;
    }
  }

  /* the setups beside this process's megakernel, then those whose long
   * kernel runs in processes of their own, on a GPU without it */
  if ((rc = run_phase(&b, 0, SETUP_IDLE_GPU | SETUP_OWN_LONG))) goto out;
  for (int i = 0; i < S_COUNT; i++)
    if (selected(o, i) && (side_setups[i].flags & SETUP_OWN_LONG)) {
      if ((rc = close_megakernel(&b))) goto out;
      break;
    }
  if ((rc = run_phase(&b, SETUP_OWN_LONG, 0))) goto out;

  /* report */
  snprintf(title, sizeof title, "%s on %s", b.app->name, b.in.label);
  rc = emit(o, 1);

out:
  if (b.child.pid > 0) child_end(&b.child);
  rc |= close_megakernel(&b);
  plain_close(&b.p); /* after the megakernel: freeing waits for the device */
  coop_app_input_free(&b.in);
  free_results();
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--child")) return side_child_main(argc, argv);
  if (argc > 1 && !strcmp(argv[1], "--long-child")) return side_long_child_main(argc, argv);
  struct sopts o;
  side_defaults(&o);
  o.argc = argc;
  o.argv = argv;
  size_t len = 0;
  for (int i = 0; i < argc && len < sizeof o.cmd; i++)
    len += (size_t)snprintf(o.cmd + len, sizeof o.cmd - len, "%s%s", i ? " " : "", argv[i]);
  int action = side_parse(argc, argv, &o);
  if (action == 1) {
    char *s = side_plain_source();
    if (!s) return 1;
    fputs(s, stdout);
    free(s);
    return 0;
  }
  if (action == 2) {
    int r = side_compile_only("sm_90");
    if (!r) printf(SB ": the standalone matmul builds with NVRTC for sm_90\n");
    return r ? 1 : 0;
  }
  if (action == 3) {
    o.csv = o.report;
    int r = read_csv(o.report, &o) || emit(&o, 0);
    free_results();
    return r ? 1 : 0;
  }
  int rc = run(&o);
  if (rc == 1) fprintf(stderr, SB ": FAILED\n");
  return rc;
}
