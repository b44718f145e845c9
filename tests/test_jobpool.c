/*
 * test_jobpool.c: job memory in slabs of its own (daemon/jobpool.h;
 * docs/daemon.md, "A job's memory"): every job comes zeroed, even one
 * given back dirty; jobs made ahead have their pages resident before any
 * job is touched; jobs given back are used again before any new mapping.
 * Under AddressSanitizer jobs come from the heap: only the first holds.
 */
#define _GNU_SOURCE /* mincore */
#include <check.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_run.h"
#include "jobpool.h"
#include "jobs.h"

static int all_zero(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return 0;
  return 1;
}

/* Whether every page under [p, p + n) is resident. */
static int resident(const void *p, size_t n) {
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1), e = (uintptr_t)p + n;
  unsigned char v[64];
  size_t np = (e - a + (size_t)pg - 1) / (size_t)pg;
  ck_assert_uint_le(np, sizeof v);
  ck_assert_int_eq(mincore((void *)a, e - a, v), 0);
  for (size_t i = 0; i < np; i++)
    if (!(v[i] & 1)) return 0;
  return 1;
}

START_TEST(a_job_comes_zeroed_even_one_given_back_dirty) {
  struct jobpool p = {0};
  for (int round = 0; round < 3; round++) {
    struct job *j = jobpool_get(&p);
    ck_assert_ptr_nonnull(j);
    ck_assert(all_zero(j, sizeof *j));
    memset(j, 0xa5, sizeof *j);
    jobpool_put(&p, j);
  }
  jobpool_free(&p);
}
END_TEST

START_TEST(jobs_made_ahead_are_resident_before_their_first_touch) {
  if (JOBPOOL_HEAP) return;
  struct jobpool p = {0};
  jobpool_ahead(&p);
  ck_assert_uint_ge(p.nfree, 8);
  ck_assert_uint_gt(p.mapped, 0);
  /* nothing has touched them: only the mapping's populate made the pages */
  for (struct job *j = p.free; j; j = j->next) ck_assert(resident(j, sizeof *j));
  size_t mapped = p.mapped;
  jobpool_ahead(&p); /* enough are free: no second slab */
  ck_assert_uint_eq(p.mapped, mapped);
  jobpool_free(&p);
  ck_assert_uint_eq(p.mapped, 0);
}
END_TEST

START_TEST(jobs_given_back_are_used_before_a_new_mapping) {
  if (JOBPOOL_HEAP) return;
  struct jobpool p = {0};
  enum { N = 200 };
  static struct job *j[N];
  for (int i = 0; i < N; i++) {
    j[i] = jobpool_get(&p);
    ck_assert_ptr_nonnull(j[i]);
    for (int k = 0; k < i; k++) ck_assert_ptr_ne(j[i], j[k]);
  }
  size_t mapped = p.mapped;
  ck_assert_uint_ge(mapped, N * sizeof(struct job));
  for (int i = 0; i < N; i++) jobpool_put(&p, j[i]);
  ck_assert_uint_eq(p.nfree * sizeof(struct job) >= N * sizeof(struct job), 1);
  for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(jobpool_get(&p));
  ck_assert_uint_eq(p.mapped, mapped);
  jobpool_free(&p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jobpool");
  TCase *c = tcase_create("jobpool");
  tcase_add_test(c, a_job_comes_zeroed_even_one_given_back_dirty);
  tcase_add_test(c, jobs_made_ahead_are_resident_before_their_first_touch);
  tcase_add_test(c, jobs_given_back_are_used_before_a_new_mapping);
  suite_add_tcase(s, c);
  return coop_test_run(srunner_create(s));
}
