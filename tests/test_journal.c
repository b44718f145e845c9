/*
 * test_journal.c: the journal's id marks (daemon/journal.h): every id
 * given out is at most an N mark the file holds, and the loop thread
 * waits for no sync of one while ids come no faster than a sync (the
 * next mark is written half a block ahead and synced in the background).
 * fdatasync is the test's own here, to count who calls it.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "check_run.h"
#include "journal.h"

static pthread_t loop_thread;
static atomic_int loop_syncs, syncs;

/* libuv's fs calls come here: the executable's definition is the one its
 * calls bind to. */
int fdatasync(int fd) {
  atomic_fetch_add(&syncs, 1);
  if (pthread_equal(pthread_self(), loop_thread)) atomic_fetch_add(&loop_syncs, 1);
  return (int)syscall(SYS_fdatasync, fd);
}

/* The journal's records read so far: where the next one starts, and the
 * largest N mark. Records are written in place over the blank lines the
 * file holds ahead of them (journal.c), so a read goes on from the last
 * whole record to the first blank line: each byte is read once. */
struct reader {
  const char *path;
  long off;
  uint64_t mark;
};

static uint64_t file_mark(struct reader *r) {
  FILE *f = fopen(r->path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, r->off, SEEK_SET), 0);
  char line[200];
  unsigned long long n;
  while (fgets(line, sizeof line, f) && line[0] != '\n' && strchr(line, '\n')) {
    r->off += (long)strlen(line);
    if (sscanf(line, "N %llu", &n) == 1 && n > r->mark) r->mark = n;
  }
  fclose(f);
  return r->mark;
}

START_TEST(ids_come_below_a_mark_synced_off_the_loop) {
  char dir[] = "/tmp/coop-journal-XXXXXX", path[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/jobs", dir);
  uv_loop_t loop;
  uv_loop_init(&loop);
  loop_thread = pthread_self();
  struct journal *jn;
  uint64_t last = 1;
  char err[256];
  ck_assert_int_eq(journal_open(&jn, &loop, path, &last, err, sizeof err), 0);
  ck_assert_uint_eq(last, 0);
  ck_assert_int_gt(atomic_load(&syncs), 0); /* the start's rewrite: our fdatasync is called */
  atomic_store(&loop_syncs, 0);
  struct reader rd = {.path = path};
  const uint64_t n = 3 * JOURNAL_ID_BLOCK + 100;
  for (uint64_t id = 1; id <= n; id++) {
    journal_accepted(jn, id, 0, "k");
    ck_assert_uint_ge(file_mark(&rd), id);
    if (id % 256 == 0) uv_run(&loop, UV_RUN_DEFAULT); /* the background syncs end */
    journal_finished(jn, id);
  }
  ck_assert_msg(atomic_load(&loop_syncs) == 0,
                "%d syncs on the loop thread for %llu ids (marks every %u)",
                atomic_load(&loop_syncs), (unsigned long long)n, JOURNAL_ID_BLOCK);
  /* ids faster than a sync: the loop waits, the mark still holds them */
  for (uint64_t id = n + 1; id <= n + JOURNAL_ID_BLOCK + 10; id++) {
    journal_accepted(jn, id, 0, "k");
    ck_assert_uint_ge(file_mark(&rd), id);
    journal_finished(jn, id);
  }
  journal_close(jn, n + JOURNAL_ID_BLOCK + 10);
  uv_run(&loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  uv_loop_init(&loop);
  ck_assert_int_eq(journal_open(&jn, &loop, path, &last, err, sizeof err), 0);
  ck_assert_uint_ge(last, n + JOURNAL_ID_BLOCK + 10); /* no id again after a restart */
  journal_close(jn, last);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  unlink(path);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("journal");
  TCase *tc = tcase_create("journal");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, ids_come_below_a_mark_synced_off_the_loop);
  suite_add_tcase(s, tc);
  return coop_test_run(srunner_create(s));
}
