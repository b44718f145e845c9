/*
 * test_apps.c: every application on every test input, checked against its
 * CPU reference, in its original form, in its cooperative form with both
 * resizing-barrier variants, and under multitasking: while a thread keeps
 * taking K = 1, W/4, W/2 and W-1 workgroups for non-cooperative matmul tasks
 * (each of those checked too), and suspended and resumed at random steps
 * (coop_rt_suspend). ctest runs one application per process
 * (COOP_APP=name) so that each megakernel holds one application.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check_run.h"

static coop_rt *open_rt(const struct coop_app *a) {
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  o.backend = getenv("COOP_BACKEND"); /* scripts/test --backend cuda */
  const char *ls = getenv("COOP_LOCAL_SIZE");
  o.local_size = ls ? (unsigned)atoi(ls) : 32;
  coop_rt *rt = NULL;
  int r = coop_rt_open(&rt, &o);
  ck_assert_msg(r == 0, "open: %s: %s", coop_strerror(r), rt ? coop_rt_errmsg(rt) : "");
  ck_assert_int_ge(coop_rt_add_kernel(rt, a->kernel, 1, a->source), 0);
  ck_assert_int_eq(coop_matmul_register(rt), 0);
  r = coop_rt_launch(rt);
  ck_assert_msg(r == 0, "launch: %s: %s", coop_strerror(r), coop_rt_errmsg(rt));
  ck_assert_uint_ge(coop_rt_workers(rt), 2);
  return rt;
}

/* Runs once and checks; returns the task's info. */
static struct coop_rt_task_info run_suspended(coop_rt *rt, const struct coop_app *a,
                                              const struct coop_app_input *in, unsigned mode,
                                              int query, const char *what, unsigned every_us,
                                              unsigned *suspensions) {
  struct coop_app_opts o = {.groups = coop_rt_workers(rt),
                            .mode = mode,
                            .query_barrier = query,
                            .timeout_ms = 300000,
                            .suspend_every_us = every_us,
                            .suspensions = suspensions};
  void *out = NULL;
  struct coop_rt_task_info ti;
  memset(&ti, 0, sizeof ti);
  int r = a->run(rt, in, &o, &out, &ti);
  ck_assert_msg(r == 0, "%s on %s (%s): %s", a->name, in->label, what, coop_strerror(r));
  char why[256] = "";
  r = a->check(in, out, why, sizeof why);
  ck_assert_msg(r == 0, "%s on %s (%s): %s", a->name, in->label, what, why);
  free(out);
  ck_assert_int_eq(ti.state, COOP_TASK_DONE);
  if (mode == COOP_APP_MODE_ORIGINAL) {
    /* the original form never offers a kill or asks for a fork */
    ck_assert_uint_eq(ti.kills, 0);
    ck_assert_uint_eq(ti.forks, 0);
  }
  return ti;
}

static struct coop_rt_task_info run_check(coop_rt *rt, const struct coop_app *a,
                                          const struct coop_app_input *in, unsigned mode, int query,
                                          const char *what) {
  return run_suspended(rt, a, in, mode, query, what, 0, NULL);
}

START_TEST(app_runs) {
  const struct coop_app *a = coop_apps[_i];
  const char *only = getenv("COOP_APP");
  if (only && strcmp(only, a->name) && strcmp(only, a->kernel)) return;
  coop_rt *rt = open_rt(a);
  unsigned w = coop_rt_workers(rt);
  unsigned ks[4] = {1, w / 4 ? w / 4 : 1, w / 2 ? w / 2 : 1, w - 1};
  int n = coop_app_input_count(a, 0), shared = 0, mt_runs = 0;
  unsigned suspensions = 0;
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    struct coop_app_input in;
    int r = coop_app_input(a, (unsigned)i, 0, &in);
    ck_assert_msg(r == 0, "input %d: %s", i, coop_strerror(r));
    run_check(rt, a, &in, COOP_APP_MODE_ORIGINAL, 0, "original");
    run_check(rt, a, &in, COOP_APP_MODE_COOPERATIVE, 0, "cooperative, plain barrier");
    run_check(rt, a, &in, COOP_APP_MODE_COOPERATIVE, 1, "cooperative, query barrier");
    /* suspended and resumed at random steps, about every 2 ms (each
     * barrier variant), and still right */
    run_suspended(rt, a, &in, COOP_APP_MODE_COOPERATIVE, i & 1, "suspended and resumed", 2000,
                  &suspensions);
    for (int j = 0; j < 4; j++) {
      struct coop_multitask *mt;
      ck_assert_int_eq(coop_multitask_start(&mt, rt, ks[j], 200), 0);
      char what[64];
      snprintf(what, sizeof what, "multitasking, K = %u", ks[j]);
      struct coop_rt_task_info ti = run_check(rt, a, &in, COOP_APP_MODE_COOPERATIVE, j & 1, what);
      char why[160] = "";
      int ran = coop_multitask_stop(mt, why, sizeof why);
      ck_assert_msg(ran >= 0, "%s on %s (%s): %s", a->name, in.label, what, why);
      mt_runs += ran;
      if (ti.kills > 0 || ti.m_min < w || ti.m_initial < w) shared++;
    }
    coop_app_input_free(&in);
  }
  /* the matmul tasks must have got workgroups from the application at least
   * once: its cooperative form gives them back */
  ck_assert_msg(shared > 0, "%s never gave a workgroup to the %d matmul tasks", a->name, mt_runs);
  fprintf(stderr, "%s: %u suspensions over %d inputs, every result right\n", a->name, suspensions,
          n);
  ck_assert_int_eq(coop_rt_close(rt), 0);
}
END_TEST

/* A CSR whose rows end past its edge array (cut to one edge): each graph
 * application's job fails with a fault. Its loops cut such a bound
 * silently, so the job ended DONE on the edges that fitted, its answer
 * wrong with no error (megakernel/device/api.h, coop_cap_at). */
START_TEST(app_faults_on_rows_past_the_edges) {
  const struct coop_app *a = coop_apps[_i];
  const char *only = getenv("COOP_APP");
  if (only && strcmp(only, a->name) && strcmp(only, a->kernel)) return;
  /* psssp's host side transposes the graph, so its kernel gets a
   * consistent CSR from any input: tests/python/test_client.py gives its
   * kernel such rows through coopd */
  if (a->input != COOP_INPUT_GRAPH || !strcmp(a->kernel, "psssp")) return;
  coop_rt *rt = open_rt(a);
  struct coop_app_input in;
  ck_assert_int_eq(coop_app_input(a, 0, 0, &in), 0);
  uint32_t m = in.graph.m;
  ck_assert_uint_gt(m, 1);
  in.graph.m = 1;
  for (int query = 0; query < 2; query++) {
    struct coop_app_opts o = {.groups = coop_rt_workers(rt),
                              .mode = COOP_APP_MODE_COOPERATIVE,
                              .query_barrier = query,
                              .timeout_ms = 300000};
    void *out = NULL;
    struct coop_rt_task_info ti;
    memset(&ti, 0, sizeof ti);
    int r = a->run(rt, &in, &o, &out, &ti);
    free(out);
    ck_assert_msg(r == COOP_EFAULT || ti.fault != 0,
                  "%s on %s, its rows past its one edge: %s, state %d, fault %u", a->name, in.label,
                  coop_strerror(r), (int)ti.state, ti.fault);
  }
  in.graph.m = m;
  coop_app_input_free(&in);
  ck_assert_int_eq(coop_rt_close(rt), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("apps");
  TCase *t = tcase_create("apps");
  tcase_set_timeout(t, 1200);
  tcase_add_loop_test(t, app_runs, 0, (int)coop_napps);
  tcase_add_loop_test(t, app_faults_on_rows_past_the_edges, 0, (int)coop_napps);
  suite_add_tcase(s, t);
  return coop_test_run(srunner_create(s));
}
