/*
 * test_trace.c: coopd's trace file (daemon/trace.h; docs/daemon.md, "The
 * path of one job, leg by leg"): a device thread's line for a slow device
 * process request is not written by that thread but before the loop's
 * next line, and however many come, from however many threads, each is
 * written once, whole.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "trace.h"

static char path[] = "/tmp/coop-trace-XXXXXX";

static void trace_setup(void) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  setenv("COOP_TRACE_FILE", path, 1);
  char err[256];
  ck_assert_int_eq(trace_open(err, sizeof err), 0);
  ck_assert_int_eq(coopd_tracing, 1);
}

/* The file as it is on disk now: the lines stdio has written. */
static char *file_text(void) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static unsigned count(const char *text, const char *what) {
  unsigned n = 0;
  for (const char *p = text; (p = strstr(p, what)); p++) n++;
  return n;
}

START_TEST(a_requests_line_waits_for_the_loops_next_line) {
  trace_setup();
  const int64_t t[4] = {100, 200, 300, 400};
  trace_call_write("submit-io", t); /* as a device thread, after its request */
  ck_assert_uint_eq(count(file_text(), "dpcall,submit-io"), 0);
  struct buf_trace bt = {0};
  trace_buf_write("write", 8, &bt); /* the loop's next line */
  const char *text = file_text();
  const char *call = strstr(text, "dpcall,submit-io,100,200,300,400\n");
  ck_assert_ptr_nonnull(call);
  ck_assert_ptr_nonnull(strstr(call, "buf,write,8")); /* before it */
  unlink(path);
}
END_TEST

/* A frame's warm window begun: its line names the loop or the device by
 * its place, waits in memory as a request's does, and the header names its
 * columns. */
START_TEST(a_windows_line_names_its_thread) {
  trace_setup();
  trace_window_write(-1, 1000, 1250);
  trace_window_write(1, 2000, 2100);
  ck_assert_uint_eq(count(file_text(), "\nwindow,loop,"), 0);
  struct buf_trace bt = {0};
  trace_buf_write("read", 1, &bt);
  const char *text = file_text();
  ck_assert_uint_eq(count(text, "\nwindow,who,from,began\n"), 1);
  ck_assert_uint_eq(count(text, "\nwindow,loop,1000,1250\n"), 1);
  ck_assert_uint_eq(count(text, "\nwindow,device1,2000,2100\n"), 1);
  unlink(path);
}
END_TEST

#define PER_THREAD 1500 /* two threads: past the 1024 a half holds */

static void *writer(void *arg) {
  int64_t base = *(const int64_t *)arg;
  for (int64_t i = 0; i < PER_THREAD; i++) {
    const int64_t t[4] = {base + i, 1, 2, 3};
    trace_call_write("write", t);
  }
  return NULL;
}

START_TEST(every_requests_line_is_written_once) {
  trace_setup();
  pthread_t th[2];
  int64_t base[2] = {1000000, 2000000};
  for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, writer, &base[k]), 0);
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  struct buf_trace bt = {0};
  trace_buf_write("read", 1, &bt);
  const char *text = file_text();
  ck_assert_uint_eq(count(text, "\ndpcall,write,"), 2 * PER_THREAD);
  for (int k = 0; k < 2; k++)
    for (int64_t i = 0; i < PER_THREAD; i += 97) {
      char line[64];
      snprintf(line, sizeof line, "\ndpcall,write,%lld,1,2,3\n", (long long)(base[k] + i));
      ck_assert_msg(count(text, line) == 1, "line %s", line + 1);
    }
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("trace");
  TCase *c = tcase_create("trace");
  tcase_add_test(c, a_requests_line_waits_for_the_loops_next_line);
  tcase_add_test(c, every_requests_line_is_written_once);
  tcase_add_test(c, a_windows_line_names_its_thread);
  suite_add_tcase(s, c);
  return coop_test_run(srunner_create(s));
}
