/*
 * app.h: the blocking applications of paper 004 Table 1 (plus thesis 000's
 * bc) as tests, benchmarks and the daemon drive them. One file pair per
 * application: NAME.cl (device code, one cooperative kernel, written against
 * megakernel/device/api.h and dialect.h so that it also compiles as CUDA)
 * and NAME.c (host side: run on a launched runtime, CPU reference, check),
 * which defines `const struct coop_app coop_app_NAME`.
 *
 * Both forms of 004 Table 2 come from the same kernel, chosen by its first
 * argument `mode` (COOP_APP_MODE_*): the original form uses plain global
 * barriers and never calls offer_kill or request_fork; the cooperative form
 * uses the primitives of 004 Sec. 3.2 / Table 1.
 *
 * An application describes its task once (prepare: the kernel's arguments,
 * scalars and host buffers; collect: the output from the buffers' final
 * contents), and two executors run that description: coop_app_run_local()
 * on an in-process runtime (every app's run, so test_apps and bench/), and
 * coopctl's through coopd with libcoop (client/coopctl_app.c). NAME.cl's
 * first line, `//@coop name=KERNEL kind=cooperative args=u32,...`, is the
 * kernel's signature for coopd's loader (docs/kernels.md); in-process it is
 * a comment.
 *
 * Two libraries hold the host sides: coopapps (with the runtime: run,
 * matmul, multitask) and coopapphost (no runtime: descriptions, CPU
 * references, inputs, graphs; run is NULL there), which coopctl links.
 */
#ifndef COOP_APP_H
#define COOP_APP_H

#include <stddef.h>
#include <stdint.h>

#include "coop_rt.h"
#include "graph.h"

#define COOP_APP_MODE_ORIGINAL 0u
#define COOP_APP_MODE_COOPERATIVE 1u

enum coop_input_kind { COOP_INPUT_GRAPH = 1, COOP_INPUT_POINTS, COOP_INPUT_GAME };

struct coop_app_input {
  enum coop_input_kind kind;
  char label[64];          /* for messages: "random-n64", "rmat-s10" */
  struct coop_graph graph; /* GRAPH */
  uint32_t source;         /* GRAPH: source vertex where the app has one */
  void *data;              /* POINTS, GAME: layout defined by the app */
  size_t bytes;
  uint32_t count; /* POINTS: points; GAME: positions */
  uint32_t param; /* app-defined (game: search depth) */
};

struct coop_app_opts {
  unsigned groups;   /* N, workgroups requested; 0 = every worker */
  unsigned mode;     /* COOP_APP_MODE_ORIGINAL or _COOPERATIVE */
  int query_barrier; /* resizing-barrier variant (cooperative form) */
  int timeout_ms;    /* for the wait; < 0 waits forever */
  /* In-process only: suspend the task about every this many us (a random
   * 0..2x), resume it each time (coop_rt_suspend; a test of suspension),
   * counting them in *suspensions; 0: never. */
  unsigned suspend_every_us;
  unsigned *suspensions;
  /* ... and with this, each suspension's timings (coop-bench-suspend):
   * request -> SUSPENDED, and resume -> every requested workgroup running
   * again (the live view; -1 if the task ended first), ns; at most cap. */
  struct coop_app_suspend_log {
    /* request -> SUSPENDED seen; of it, request -> the last workgroup out
     * (its device stamp, t_finished); resume -> full width */
    int64_t *suspend_ns, *left_ns, *regrow_ns;
    /* with a megakernel built with COOP_PROF_SUSPEND (scheduler.cl,
     * "Profile"), else NULL or left -1: the scheduler passing the
     * suspension on -> its next reap of a worker, and -> the last
     * workgroup out, ns of the device clock */
    int64_t *reaped_ns, *last_ns;
    /* with COOP_PROF_SUSPEND too: request -> the host sees the scheduler's
     * count of suspensions passed on move (mailbox.prof[0]): the pass-on
     * on the host's clock alone, within a store's way to host memory */
    int64_t *passon_ns;
    /* and the pass that passed it on: its start -> the pass-on, ns of the
     * device clock (what of the wait was inside that pass) */
    int64_t *inpass_ns;
    /* and that pass's legs (COOP_APP_SUSPEND_LEGS per suspension, ns of
     * the device clock, -1 where a stamp is missing): its start -> the
     * doorbell's acquire fence done, -> step 2 begins (the ping's answer;
     * the intake, forks and reap came here before 2026-11-30), -> the
     * record's words in, -> the pass-on */
    int64_t *legs_ns;
    unsigned n, cap;
    /* preempt_groups > 0: right after each suspension request, a
     * non-cooperative task of kernel preempt_kernel (arguments: the
     * buffer argument preempt_out, a tag) on that many workgroups is
     * submitted and waited for, as coopd submits a task of higher
     * priority that needs the workers (docs/daemon.md, "Priority");
     * gather_ns gets its gather (released -> gathered, the device's
     * clock) and request_gathered_ns request -> gathered (host clock) */
    unsigned preempt_groups;
    int preempt_kernel;
    uint64_t preempt_out;
    int64_t *gather_ns, *request_gathered_ns;
    /* with COOP_PROF_SUSPEND: the passes the scheduler began between the
     * pass-on and that next reap, the longest of them but the reap's own,
     * that pass's start -> its reap, and the reap itself (ns) */
    int64_t *reap_passes, *reap_longest_ns, *reap_pass_ns, *reap_ns;
    /* ... and that longest pass's steps 1 to 8 (scheduler.cl, "Profile";
     * COOP_APP_SUSPEND_STEPS per suspension, ns) */
    int64_t *long_steps_ns;
    /* ... and from the pass-on: -> the barrier's master arrives at the
     * episode whose release makes the kills, and -> it sees that episode
     * complete; that -> the last workgroup out (ns, -1 where a stamp is
     * missing or out of order) */
    int64_t *kill_arrive_ns, *kill_held_ns, *kill_out_ns;
    /* with preempt_groups: of that task's workgroups, those whose worker
     * came straight from a leaving workgroup (coop_rt_task_info.joined) */
    int64_t *joined;
  } * suspend_log;
};
#define COOP_APP_SUSPEND_LEGS 4
#define COOP_APP_PROF_SLOTS 18 /* mailbox.prof's slots under COOP_PROF_SUSPEND */
#define COOP_APP_SUSPEND_STEPS 8

/* ---- a task, described once (task.c) ---- */

enum coop_app_dir {
  COOP_APP_SCRATCH = 0, /* zeroed on the device, neither filled nor read back */
  COOP_APP_IN = 1,      /* filled from the host */
  COOP_APP_OUT = 2,     /* zeroed on the device, read back */
  COOP_APP_INOUT = 3,   /* filled from the host, read back */
};

/* Scalar types, numbered as coop.h's enum coop_type (the args= names). */
enum coop_app_type { COOP_APP_U32 = 1, COOP_APP_U64 = 3 };

/* One kernel argument: a scalar, or a buffer with its host side. */
struct coop_app_arg {
  int buf;               /* 1: a buffer (args= buf); 0: a scalar */
  int type;              /* scalar: enum coop_app_type */
  uint64_t value;        /* scalar */
  enum coop_app_dir dir; /* buffer */
  size_t size;           /* buffer bytes, > 0 */
  const void *init;      /* IN, INOUT: its first init_len bytes; the rest starts zeroed */
  size_t init_len;
  void *host; /* the task's own size bytes (init points here), or NULL for a borrowed IN
               * buffer and scratch: OUT and INOUT get their final contents here */
};

struct coop_app_task {
  const struct coop_app *app;
  uint32_t groups; /* N, as the executor resolved it (o->groups, or every worker) */
  unsigned nargs;
  struct coop_app_arg arg[COOP_RT_MAX_ARGS]; /* arg[0]: the mode */
  unsigned out; /* the buffer that is the output, when the app has no collect */
  int err;      /* the first error of a builder below, returned by coop_app_task_prepare */
};

/* Element types of an application's output, for coopctl's text output. */
enum coop_app_elem { COOP_APP_ELEM_U32 = 1, COOP_APP_ELEM_I32, COOP_APP_ELEM_F32 };

struct coop_app {
  const char *name;           /* as users type it: "l-sssp" */
  const char *kernel;         /* registered kernel name: "lsssp" */
  const char *source;         /* NAME.cl, embedded by CMake as coop_app_src_NAME_cl */
  const char *truth;          /* source of truth in the papers, for docs and --help */
  enum coop_input_kind input; /* what it reads */
  /* Runs the task in process: coop_app_run_local() (arena buffers, ONE
   * cooperative task of kernel `kernel`, wait, output copied out, buffers
   * freed): *out is malloc'ed (layout app-defined), *info the task's info.
   * Returns 0 or a negative coop_errno (COOP_ETIMEDOUT if the wait timed out).
   * NULL in coopapphost. */
  int (*run)(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
             void **out, struct coop_rt_task_info *info);
  /* Checks out against the CPU reference: 0 if correct, else a negative
   * code and the first difference in why ("dist[17] = 9, expected 7"). */
  int (*check)(const struct coop_app_input *in, const void *out, char *why, size_t len);
  /* Test inputs for non-graph apps (graph apps get the shared graph set):
   * fills *in for index i < count at size `scale` (0 = test size); returns
   * the number of inputs when in is NULL. NULL for graph apps. */
  int (*make_input)(unsigned i, unsigned scale, struct coop_app_input *in);
  /* The task: appends the kernel's arguments after the mode (t->arg[0],
   * already there) with the builders below, t->groups being N. Returns 0 or
   * a negative code (COOP_EINVAL for an input it cannot take). */
  int (*prepare)(const struct coop_app_input *in, const struct coop_app_opts *o,
                 struct coop_app_task *t);
  /* The output from the buffers' final contents: *out malloc'ed, *bytes its
   * size (may take a buffer with coop_app_task_take). NULL: the buffer
   * t->out is the output. */
  int (*collect)(const struct coop_app_input *in, struct coop_app_task *t, void **out,
                 size_t *bytes);
  enum coop_app_elem elem; /* the output's elements */
  const char *output;      /* the output's layout, for --help and docs */
  int has_source;          /* GRAPH: it starts from in->source */
  /* GRAPH: an algorithm for undirected graphs (color, mis): its input gets
   * both directions of every edge (coop_app_fit_input). A file may give an
   * arc one way only; the kernel would then see an edge from one end and
   * not the other, and return a colouring or set that is not valid. */
  int symmetric;
  /* Whether the app can run this input: 0, or a negative code (COOP_ETOOBIG)
   * and why. prepare and check refuse what it refuses. NULL: any input. */
  int (*admit)(const struct coop_app_input *in, char *why, size_t len);
};

/* Task builders for prepare. Each appends one argument; the first error is
 * kept in t->err (and the builders do nothing after it). */
int coop_app_task_u32(struct coop_app_task *t, uint32_t v);
/* A buffer with its own zeroed host copy, returned for prepare to fill
 * (IN, INOUT) or for the executor to fill (OUT, INOUT); NULL on error. */
void *coop_app_task_buf(struct coop_app_task *t, enum coop_app_dir dir, size_t size);
/* An IN buffer of size bytes whose first len come from data, which is
 * borrowed: it must outlive the task (an input's graph, say). */
int coop_app_task_ref(struct coop_app_task *t, const void *data, size_t len, size_t size);
/* The graph's row[n+1] and col[m] as two borrowed IN buffers (the graph apps'
 * first two arguments after the mode). */
int coop_app_task_csr(struct coop_app_task *t, const struct coop_graph *g);
int coop_app_task_scratch(struct coop_app_task *t, size_t size);
/* The host copy of argument i, now the caller's (free()), or NULL. */
void *coop_app_task_take(struct coop_app_task *t, unsigned i);

/* For executors: an empty task of a with arg[0] = o->mode, then a->prepare.
 * 0, or an error with t freed. */
int coop_app_task_prepare(struct coop_app_task *t, const struct coop_app *a,
                          const struct coop_app_input *in, const struct coop_app_opts *o,
                          uint32_t groups);
/* After the run: a->collect, or the buffer t->out taken. */
int coop_app_task_collect(struct coop_app_task *t, const struct coop_app_input *in, void **out,
                          size_t *bytes);
void coop_app_task_free(struct coop_app_task *t);

/* The in-process executor (local.c, coopapps only): prepare with groups =
 * o->groups or every worker, coop_app_task_run, collect. Every app's run. */
int coop_app_run_local(const struct coop_app *a, coop_rt *rt, const struct coop_app_input *in,
                       const struct coop_app_opts *o, void **out, struct coop_rt_task_info *info);
/* Its middle, for executors that need more around it (coop-bench-native):
 * the prepared task t's buffers allocated in the arena (zeroed) and their
 * IN bytes copied in by coop_rt_arena_copy (the copy engine where host
 * writes would fault page by page), each then handed to `filled` if given
 * (0 to go on), coop_app_submit_wait, OUT/INOUT copied back the same
 * way, the buffers freed. 0 or a coop code. */
int coop_app_task_run(coop_rt *rt, const struct coop_app *a, struct coop_app_task *t,
                      const struct coop_app_opts *o,
                      int (*filled)(void *user, void *buf, size_t size), void *user,
                      struct coop_rt_task_info *info);

/* In NAME.c: `COOP_APP_RUN(fn, coop_app_NAME);` defines fn, the app's run,
 * on the in-process executor; `.run = COOP_APP_RUN_FN(fn)`. coopapphost
 * compiles the apps with COOP_APP_HOST_ONLY: no run, no runtime. (Both
 * forms end in a declaration of the app, which takes the semicolon.) */
#ifndef COOP_APP_HOST_ONLY
#define COOP_APP_RUN(fn, app)                                                                \
  static int fn(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o, \
                void **out, struct coop_rt_task_info *info) {                                \
    return coop_app_run_local(&app, rt, in, o, out, info);                                   \
  }                                                                                          \
  extern const struct coop_app app
#define COOP_APP_RUN_FN(fn) fn
#else
#define COOP_APP_RUN(fn, app) extern const struct coop_app app
#define COOP_APP_RUN_FN(fn) NULL
#endif

/* registry.c (generated): the applications present in this build. */
extern const struct coop_app *const coop_apps[];
extern const unsigned coop_napps;
const struct coop_app *coop_app_find(const char *name); /* by name or kernel */

/* inputs.c */
int coop_app_graph_inputs(unsigned scale); /* count */
int coop_app_graph_input(unsigned i, unsigned scale, struct coop_app_input *in);
int coop_app_input_count(const struct coop_app *a, unsigned scale);
int coop_app_input(const struct coop_app *a, unsigned i, unsigned scale, struct coop_app_input *in);
void coop_app_input_free(struct coop_app_input *in);
/* An input from outside (a file, a generator) made fit for a: symmetrised
 * when a->symmetric, then a->admit. 0, or a negative code and why. */
int coop_app_fit_input(const struct coop_app *a, struct coop_app_input *in, char *why, size_t len);
/* The SSSP apps' admit: their distances are 32-bit with 4294967295 meaning
 * unreached, so an input whose paths could reach that (coop_graph_path_bound)
 * is refused, with COOP_ETOOBIG. */
int coop_app_sssp_admit(const struct coop_app_input *in, char *why, size_t len);

/* Submit helper for apps: one cooperative task of a's kernel with o's
 * groups and barrier variant, args[0] = o->mode; waits, fills *info,
 * releases the task. Returns 0, COOP_ETIMEDOUT, or the task's failure
 * (COOP_ECANCELED, COOP_EREFUSED). */
int coop_app_submit_wait(coop_rt *rt, const struct coop_app *a, const struct coop_app_opts *o,
                         unsigned nargs, const uint64_t *args, struct coop_rt_task_info *info);

/* check.c: what the checks share. A check's verdict: why from fmt, and
 * COOP_EMISMATCH to return. */
int coop_app_mismatch(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A CPU reference of a graph app whose output is one u32 per vertex: fills
 * ref[in->graph.n]; 0 or a negative code. */
typedef int coop_app_reference_fn(const struct coop_app_input *in, uint32_t *ref);
/* got[n] against reference(in): 0 if they agree, 1 with the first
 * difference at *v (the reference's value in *want), or the reference's
 * error (COOP_ENOMEM). Writes no why: the caller words the difference. */
int coop_app_ref_diff(const struct coop_app_input *in, const uint32_t *got,
                      coop_app_reference_fn *reference, uint32_t *v, uint32_t *want);

/* dijkstra.c: the SSSP apps' reference (l-sssp, p-sssp): shortest distances
 * from in->source, 0xFFFFFFFF for unreached. Computed in 64 bits; the input
 * must be admitted (coop_app_sssp_admit), so that every distance fits. */
int coop_app_dijkstra(const struct coop_app_input *in, uint32_t *dist);

/* prio_rounds.c: color and mis, the Pannotia apps that run rounds of
 * priority contests. Deterministic vertex priorities, the same on the host
 * and in the kernels' buffers: a hash of the id; u beats v with the larger
 * priority, ties to the larger id. */
uint32_t coop_app_prio(uint32_t v);
int coop_app_beats(uint32_t u, uint32_t v);
/* Their task (both kernels take mode, row, col, prio, state[n] (the
 * output), cand[n], flag[2], n): appends all but the mode, state with
 * direction dir, and returns state's host copy, or NULL with t->err. */
uint32_t *coop_app_rounds_prepare(const struct coop_app_input *in, struct coop_app_task *t,
                                  enum coop_app_dir dir);
/* One round's contest on the CPU (the kernels' phase 0): for each vertex v
 * with state[v] == open, cand[v] = whether v beats every neighbour that is
 * also open (other entries untouched). Returns whether any vertex was open. */
int coop_app_rounds_contest(const struct coop_graph *g, const uint32_t *state, uint32_t open,
                            unsigned char *cand);

/* matmul.c: the graphics-like task of 004 Sec. 5.4, non-cooperative. */
extern const char coop_app_src_matmul_cl[];
struct coop_matmul {
  coop_rt *rt;
  int kernel;
  uint32_t n, reps;
  float *a, *b, *c; /* arena */
  float *ref;       /* CPU result */
  float *host;      /* n x n in host memory: a, b and c move through it by
                     * coop_rt_arena_copy, never by host accesses to the arena */
};
int coop_matmul_register(coop_rt *rt); /* before launch */
int coop_matmul_open(struct coop_matmul *mm, coop_rt *rt, uint32_t n, uint32_t reps);
void coop_matmul_close(struct coop_matmul *mm);
int coop_matmul_submit(struct coop_matmul *mm, unsigned groups, coop_task_id *id);
int coop_matmul_check(const struct coop_matmul *mm, char *why, size_t len);
/* Picks reps so that one task on `groups` workgroups takes about target_us. */
int coop_matmul_calibrate(struct coop_matmul *mm, unsigned groups, double target_us);

/* multitask.c: a thread that keeps submitting matmul tasks of K groups,
 * waiting for each and checking its result, until stopped. */
struct coop_multitask;
int coop_multitask_start(struct coop_multitask **mt, coop_rt *rt, unsigned k, unsigned gap_us);
/* Stops and joins; returns the number of tasks that ran, or a negative
 * code if one failed or computed a wrong product (why says which). */
int coop_multitask_stop(struct coop_multitask *mt, char *why, size_t len);

#endif /* COOP_APP_H */
