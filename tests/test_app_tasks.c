/*
 * test_app_tasks.c: every application's task description (app.h: prepare)
 * against the //@coop signature on the first line of its kernel file, which
 * is what coopd checks a submission against: same kernel name, cooperative,
 * and one argument of the right type per slot, for each of its test inputs
 * and several group counts. Links coopapphost (no runtime, run is NULL):
 * what coopctl links. No device.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check_run.h"

/* The directive's name, kind and argument types ('u' u32, 'U' u64, 'b'
 * buf) from the first line of src. */
static void directive(const char *src, char *name, size_t nlen, int *coop, char *types,
                      size_t tlen) {
  const char *eol = strchr(src, '\n');
  ck_assert_msg(!strncmp(src, "//@coop ", 8) && eol, "no //@coop first line");
  char line[256];
  ck_assert_uint_lt((size_t)(eol - src), sizeof line);
  memcpy(line, src, (size_t)(eol - src));
  line[eol - src] = '\0';
  *name = '\0';
  *coop = -1;
  *types = '\0';
  for (char *save = NULL, *t = strtok_r(line + 8, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    if (!strncmp(t, "name=", 5)) {
      snprintf(name, nlen, "%s", t + 5);
    } else if (!strncmp(t, "kind=", 5)) {
      *coop = !strcmp(t + 5, "cooperative");
    } else if (!strncmp(t, "args=", 5)) {
      size_t n = 0;
      for (char *s2 = NULL, *a = strtok_r(t + 5, ",", &s2); a; a = strtok_r(NULL, ",", &s2)) {
        ck_assert_uint_lt(n + 1, tlen);
        if (strchr(a, ':')) a = strchr(a, ':') + 1; /* a named argument, NAME:TYPE */
        types[n++] = !strcmp(a, "u32")                                 ? 'u'
                     : !strcmp(a, "u64")                               ? 'U'
                     : !strncmp(a, "buf", 3) && (!a[3] || a[3] == '<') ? 'b'
                                                                       : '?';
      }
      types[n] = '\0';
    } else {
      ck_abort_msg("unknown directive key %s", t);
    }
  }
}

START_TEST(task_matches_signature) {
  const struct coop_app *a = coop_apps[_i];
  char name[64], types[COOP_RT_MAX_ARGS + 2];
  int coop;
  directive(a->source, name, sizeof name, &coop, types, sizeof types);
  ck_assert_str_eq(name, a->kernel);
  ck_assert_int_eq(coop, 1);
  ck_assert_ptr_null(a->run); /* coopapphost: no runtime */
  ck_assert_ptr_nonnull(a->prepare);
  ck_assert_ptr_eq(coop_app_find(a->name), a);
  ck_assert_ptr_eq(coop_app_find(a->kernel), a);
  int n = coop_app_input_count(a, 0);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    struct coop_app_input in;
    ck_assert_int_eq(coop_app_input(a, (unsigned)i, 0, &in), 0);
    const unsigned groups[3] = {1, 3, 64};
    for (int g = 0; g < 3; g++)
      for (unsigned mode = 0; mode < 2; mode++) {
        struct coop_app_opts o = {.groups = groups[g], .mode = mode};
        struct coop_app_task t;
        int r = coop_app_task_prepare(&t, a, &in, &o, groups[g]);
        ck_assert_msg(r == 0, "%s on %s: prepare: %s", a->name, in.label, coop_strerror(r));
        ck_assert_uint_eq(t.groups, groups[g]);
        ck_assert_uint_eq(t.nargs, strlen(types));
        ck_assert_msg(!t.arg[0].buf && t.arg[0].value == mode, "%s: arg 0 is not the mode",
                      a->name);
        for (unsigned k = 0; k < t.nargs; k++) {
          const struct coop_app_arg *x = &t.arg[k];
          char want = types[k], got = x->buf ? 'b' : x->type == COOP_APP_U64 ? 'U' : 'u';
          ck_assert_msg(got == want, "%s: argument %u is %c, the kernel file says %c", a->name, k,
                        got, want);
          if (!x->buf) continue;
          ck_assert_uint_gt(x->size, 0);
          ck_assert_uint_le(x->init_len, x->size);
          if (x->dir & COOP_APP_OUT) ck_assert_ptr_nonnull(x->host);
          if (x->init_len) ck_assert_ptr_nonnull(x->init);
        }
        coop_app_task_free(&t);
      }
    if (a->has_source) { /* a source out of range is refused */
      struct coop_app_opts o = {.groups = 2, .mode = 1};
      struct coop_app_task t;
      in.source = in.graph.n;
      ck_assert_int_eq(coop_app_task_prepare(&t, a, &in, &o, 2), COOP_EINVAL);
    }
    coop_app_input_free(&in);
  }
}
END_TEST

/* Inputs from files that the apps once could not take as they were.
 * An arc given one way reaches color and mis in both directions; an SSSP
 * input whose paths can reach 2^32 - 1 (the "unreached" value) is refused
 * alike by coop_app_fit_input, by prepare and by the check's reference. */
START_TEST(inputs_fit_their_apps) {
  char why[256];
  for (unsigned i = 0; i < coop_napps; i++) {
    const struct coop_app *a = coop_apps[i];
    if (a->input != COOP_INPUT_GRAPH) continue;
    struct coop_app_input in = {.kind = COOP_INPUT_GRAPH};
    ck_assert_int_eq(coop_graph_read_file(COOP_GRAPH_DATA "/one_way.gr", COOP_GRAPH_AUTO, &in.graph,
                                          why, sizeof why),
                     0);
    ck_assert_int_eq(coop_app_fit_input(a, &in, why, sizeof why), 0);
    ck_assert_uint_eq(in.graph.m, a->symmetric ? 2 : 1);
    coop_graph_free(&in.graph);
    ck_assert_int_eq(coop_graph_read_file(COOP_GRAPH_DATA "/long_paths.gr", COOP_GRAPH_AUTO,
                                          &in.graph, why, sizeof why),
                     0);
    int want = a->admit ? COOP_ETOOBIG : 0;
    ck_assert_int_eq(coop_app_fit_input(a, &in, why, sizeof why), want);
    if (want) {
      ck_assert_msg(strstr(why, "as long as 4294967295"), "%s: %s", a->name, why);
      struct coop_app_opts o = {.groups = 2, .mode = 1};
      struct coop_app_task t;
      ck_assert_int_eq(coop_app_task_prepare(&t, a, &in, &o, 2), COOP_ETOOBIG);
      static const uint32_t dist[3] = {0, 2147483648u, 0xffffffffu};
      why[0] = 0;
      ck_assert_int_eq(a->check(&in, dist, why, sizeof why), COOP_ETOOBIG);
      ck_assert_msg(strstr(why, "as long as"), "%s: check: %s", a->name, why);
      in.graph.w[1] = 2147483646u; /* one shorter: taken */
      ck_assert_int_eq(coop_app_fit_input(a, &in, why, sizeof why), 0);
      ck_assert_int_eq(coop_app_task_prepare(&t, a, &in, &o, 2), 0);
      coop_app_task_free(&t);
    }
    coop_graph_free(&in.graph);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("app_tasks");
  TCase *t = tcase_create("signatures");
  tcase_set_timeout(t, 120);
  tcase_add_loop_test(t, task_matches_signature, 0, (int)coop_napps);
  suite_add_tcase(s, t);
  t = tcase_create("inputs");
  tcase_add_test(t, inputs_fit_their_apps);
  suite_add_tcase(s, t);
  return coop_test_run(srunner_create(s));
}
