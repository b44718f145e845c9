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
};

struct coop_app {
  const char *name;           /* as users type it: "l-sssp" */
  const char *kernel;         /* registered kernel name: "lsssp" */
  const char *source;         /* NAME.cl, embedded by CMake as coop_app_src_NAME_cl */
  const char *truth;          /* source of truth in the papers, for docs and --help */
  enum coop_input_kind input; /* what it reads */
  /* Allocates its buffers in the arena, submits ONE cooperative task of
   * kernel `kernel`, waits for it, copies the output into *out (malloc'ed,
   * layout app-defined) and frees its buffers. *info gets the task's info.
   * Returns 0 or a negative coop_errno (COOP_ETIMEDOUT if the wait timed out). */
  int (*run)(coop_rt *rt, const struct coop_app_input *in, const struct coop_app_opts *o,
             void **out, struct coop_rt_task_info *info);
  /* Checks out against the CPU reference: 0 if correct, else a negative
   * code and the first difference in why ("dist[17] = 9, expected 7"). */
  int (*check)(const struct coop_app_input *in, const void *out, char *why, size_t len);
  /* Test inputs for non-graph apps (graph apps get the shared graph set):
   * fills *in for index i < count at size `scale` (0 = test size); returns
   * the number of inputs when in is NULL. NULL for graph apps. */
  int (*make_input)(unsigned i, unsigned scale, struct coop_app_input *in);
};

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

/* Submit helper for apps: one cooperative task of a's kernel with o's
 * groups and barrier variant, args[0] = o->mode; waits, fills *info,
 * releases the task. Returns 0, COOP_ETIMEDOUT, or the task's failure
 * (COOP_ECANCELED, COOP_EREFUSED). */
int coop_app_submit_wait(coop_rt *rt, const struct coop_app *a, const struct coop_app_opts *o,
                         unsigned nargs, const uint64_t *args, struct coop_rt_task_info *info);

/* Deterministic vertex priorities for the Pannotia apps (color, mis), the
 * same on the host and in the kernels' buffers: a hash of the id; u beats v
 * with the larger priority, ties to the larger id. */
uint32_t coop_app_prio(uint32_t v);
int coop_app_beats(const uint32_t *prio, uint32_t u, uint32_t v);

/* matmul.c: the graphics-like task of 004 Sec. 5.4, non-cooperative. */
extern const char coop_app_src_matmul_cl[];
struct coop_matmul {
  coop_rt *rt;
  int kernel;
  uint32_t n, reps;
  float *a, *b, *c; /* arena */
  float *ref;       /* CPU result */
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
