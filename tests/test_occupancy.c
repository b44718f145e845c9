/*
 * test_occupancy.c: the CUDA launch's arithmetic (megakernel/occupancy.h)
 * on an H200's SM (65536 registers, 2048 threads, 32 blocks, 228 KiB of
 * shared memory, 1 KiB a block for the system; 132 SMs): the blocks each
 * resource allows, the bound named, and the launch one block short where
 * the megakernel would fill every SM (an arena copy into managed memory
 * never returned then: docs/kernels.md, "The megakernel's width").
 */
#include <check.h>
#include <string.h>

#include "check_run.h"
#include "occupancy.h"

static const struct coop__sm h200 = {
    .regfile = 65536, .threads = 2048, .blocks = 32, .shared = 233472, .block_sys = 1024};
enum { SMS = 132 };

static unsigned launch(int regs, int smem, unsigned local_size, struct coop__occ *o) {
  coop__occupancy(&h200, local_size, regs, smem, o);
  return coop__launch_groups(o, o->lim, SMS);
}

/* Every SM's registers taken: one block fewer than 4 x 132. */
START_TEST(full_register_file_leaves_one_block) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(64, 4144, 256, &o), 527);
  ck_assert_uint_eq(o.lim, 4);
  ck_assert_str_eq(o.bound, "registers");
  ck_assert_int_eq(o.full, 1);
  /* 60 registers round up to 64 in a warp's allocation (units of 256): full too */
  ck_assert_uint_eq(launch(60, 4144, 256, &o), 527);
  /* 56 do not (7 x 256 a warp): 8192 registers left, room */
  ck_assert_uint_eq(launch(56, 4144, 256, &o), 528);
}
END_TEST

/* Room left (4096 registers or more): the whole bound, as before. */
START_TEST(room_left_launches_the_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(96, 4144, 256, &o), 264);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(80, 4144, 256, &o), 396);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(40, 16, 256, &o), 792);
  ck_assert_uint_eq(o.lim, 6);
}
END_TEST

/* Threads or block slots as the bound: full when they are all taken. */
START_TEST(threads_and_blocks_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(16, 0, 1024, &o), 2 * SMS - 1); /* 2 x 1024 threads */
  ck_assert_str_eq(o.bound, "threads per SM");
  ck_assert_uint_eq(launch(16, 0, 32, &o), 32 * SMS - 1); /* 32 blocks of a warp */
  ck_assert_str_eq(o.bound, "blocks per SM");
  ck_assert_uint_eq(launch(32, 0, 512, &o), 4 * SMS - 1); /* 4 x 512 threads: full */
}
END_TEST

/* Shared memory as the bound, with room and without. */
START_TEST(shared_memory_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(32, 100 * 1024, 256, &o), 2 * SMS); /* 26 KiB left */
  ck_assert_str_eq(o.bound, "shared memory");
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(32, 113 * 1024, 256, &o), 2 * SMS - 1); /* 0 B left */
  ck_assert_int_eq(o.full, 1);
}
END_TEST

/* A launch below the bound (the occupancy API said fewer) keeps its count. */
START_TEST(below_the_bound_untouched) {
  struct coop__occ o;
  coop__occupancy(&h200, 256, 64, 4144, &o);
  ck_assert_uint_eq(coop__launch_groups(&o, 3, SMS), 3 * SMS);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("occupancy");
  TCase *t = tcase_create("occupancy");
  tcase_add_test(t, full_register_file_leaves_one_block);
  tcase_add_test(t, room_left_launches_the_bound);
  tcase_add_test(t, threads_and_blocks_bound);
  tcase_add_test(t, shared_memory_bound);
  tcase_add_test(t, below_the_bound_untouched);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
