/*
 * test_game_split.c: game's searches stopped for a kill keep what they
 * found (game.cl, game_give_split). The megakernel is built with
 * GAME_TEST_STOPS (COOP_DEVICE_DEFINES), so that in every leaf task some
 * grandchildren stop at once as if the workgroup were wanted, without
 * waiting for kills to land mid-search: the tasks are split into their
 * children (ctl[3] counts the records they take), the records run out
 * (the tasks then go back whole), and every value must still be the
 * CPU's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check_run.h"

extern const struct coop_app coop_app_game;

/* game.cl's nodes, and ctl: [0] records used by the tree, [1] tasks
 * outstanding, [2] overflow, [3] records past nodecap used by splits */
enum { ARG_NODES = 1, ARG_CTL = 4 };

START_TEST(stopped_searches_split_their_tasks) {
  const struct coop_app *a = &coop_app_game;
  ck_assert_int_eq(setenv("COOP_DEVICE_DEFINES", "GAME_TEST_STOPS=3", 1), 0);
  struct coop_rt_options ro;
  coop_rt_options_init(&ro);
  ro.backend = getenv("COOP_BACKEND");
  const char *ls = getenv("COOP_LOCAL_SIZE");
  ro.local_size = ls ? (unsigned)atoi(ls) : 32; /* fewer threads than 49 grandchildren */
  coop_rt *rt = NULL;
  int r = coop_rt_open(&rt, &ro);
  ck_assert_msg(r == 0, "open: %s: %s", coop_strerror(r), rt ? coop_rt_errmsg(rt) : "");
  ck_assert_int_ge(coop_rt_add_kernel(rt, a->kernel, 1, a->source), 0);
  r = coop_rt_launch(rt);
  ck_assert_msg(r == 0, "launch: %s: %s", coop_strerror(r), coop_rt_errmsg(rt));
  uint32_t split_total = 0, full = 0;
  int n = coop_app_input_count(a, 0);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    struct coop_app_input in;
    ck_assert_int_eq(coop_app_input(a, (unsigned)i, 0, &in), 0);
    struct coop_app_opts o = {.groups = coop_rt_workers(rt),
                              .mode = COOP_APP_MODE_COOPERATIVE,
                              .query_barrier = 0,
                              .timeout_ms = 300000};
    struct coop_app_task t;
    ck_assert_int_eq(coop_app_task_prepare(&t, a, &in, &o, o.groups), 0);
    uint32_t nodecap = (uint32_t)t.arg[t.nargs - 1].value;            /* game.cl's last argument */
    uint32_t room = (uint32_t)(t.arg[ARG_NODES].size / 32) - nodecap; /* the splits' */
    struct coop_rt_task_info ti;
    r = coop_app_task_run(rt, a, &t, &o, NULL, NULL, &ti);
    ck_assert_msg(r == 0, "%s: %s", in.label, coop_strerror(r));
    const uint32_t *ctl = t.arg[ARG_CTL].host;
    ck_assert_msg(ctl[2] == 0 && ctl[1] == 0, "%s: overflow %#x, %u tasks left", in.label, ctl[2],
                  ctl[1]);
    ck_assert_uint_le(ctl[0], nodecap);
    ck_assert_uint_le(ctl[3], room);
    split_total += ctl[3];
    if (ctl[3] + 7 > room) full++; /* too few left for a split: tasks went back whole */
    void *out = NULL;
    size_t bytes = 0;
    ck_assert_int_eq(coop_app_task_collect(&t, &in, &out, &bytes), 0);
    char why[256] = "";
    r = a->check(&in, out, why, sizeof why);
    ck_assert_msg(r == 0, "%s, searches stopped: %s", in.label, why);
    fprintf(stderr, "game on %s: %u of %u records past the tree taken by splits\n", in.label,
            ctl[3], room);
    free(out);
    coop_app_task_free(&t);
    coop_app_input_free(&in);
  }
  ck_assert_msg(split_total > 0, "no task was split: the stopped searches' values were lost");
  ck_assert_msg(full > 0, "the node records never ran short: tasks never went back whole");
  ck_assert_int_eq(coop_rt_close(rt), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("game_split");
  TCase *t = tcase_create("game_split");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, stopped_searches_split_their_tasks);
  suite_add_tcase(s, t);
  return coop_test_run(srunner_create(s));
}
