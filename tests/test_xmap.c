/*
 * test_xmap.c: the device process's mappings of clients' transfer memfds
 * (daemon/device/xmap.h). Pinning is a counter here (on a GPU it is
 * cuMemHostRegister): a memfd sealed against shrinking is mapped and
 * pinned once and then reused, its bytes shared both ways; an unsealed
 * one, a range past the end, or no regular file is never mapped; a pin
 * that fails is remembered; and nothing is unpinned but by clear (CUDA's
 * unpin waits for a device the megakernel never lets go idle): a file
 * that grew past its mapping is mapped again in another slot while its
 * owner's share allows; one more than the slots is read and written
 * instead until a clear; one user holds at most its share of the slots; forget unmaps without
 * unpinning. And the seal does what the mapping needs: the client can no longer shrink the file
 * under it. And a copy warm-up's plan (daemon/device/dp_warm.h) reads the
 * last frame's ranges through those mappings: whole at a window's first,
 * a few bytes later, the way asked for, nothing once the file is unmapped.
 */
#define _GNU_SOURCE /* memfd_create */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"
#include "dp_warm.h"
#include "xmap.h"

#define MIB (1u << 20)
#define T0 1000000000LL

struct pins {
  int pinned, unpinned, fail;
};

static int pin(void *arg, void *p, size_t n) {
  struct pins *c = arg;
  (void)p, (void)n;
  if (c->fail) return -1;
  c->pinned++;
  return 0;
}

static void unpin(void *arg, void *p) {
  (void)p;
  ((struct pins *)arg)->unpinned++;
}

/* A memfd of n bytes, byte i = i * 7, sealed against shrinking or not. */
static int memfd(size_t n, int sealed) {
  int fd = memfd_create("xmap-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
  uint8_t buf[4096];
  for (size_t off = 0; off < n; off += sizeof buf) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)((off + i) * 7);
    size_t k = n - off < sizeof buf ? n - off : sizeof buf;
    ck_assert_int_eq(pwrite(fd, buf, k, (off_t)off), (ssize_t)k);
  }
  if (sealed) ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  return fd;
}

START_TEST(a_sealed_memfd_is_mapped_and_pinned_once) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd = memfd(MIB, 1);
  uint8_t *m = xmap_get(&x, fd, 4096, 65536, T0, 1);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(c.pinned, 1);
  for (size_t i = 4096; i < 4096 + 65536; i++)
    if (m[i] != (uint8_t)(i * 7)) ck_abort_msg("byte %zu: %u", i, m[i]);
  /* the other way: what is written through the mapping is the file's */
  memset(m + 8192, 0xab, 100);
  uint8_t back[100];
  ck_assert_int_eq(pread(fd, back, sizeof back, 8192), (ssize_t)sizeof back);
  for (size_t i = 0; i < sizeof back; i++) ck_assert_uint_eq(back[i], 0xab);
  /* again, through another descriptor of the same file (the next request's) */
  int fd2 = dup(fd);
  ck_assert_ptr_eq(xmap_get(&x, fd2, 0, MIB, T0 + 1, 1), m);
  ck_assert_int_eq(c.pinned, 1);
  /* the seal holds: the client cannot shrink the file under the mapping */
  ck_assert_int_eq(ftruncate(fd, 4096), -1);
  ck_assert_int_eq(errno, EPERM);
  xmap_clear(&x);
  ck_assert_int_eq(c.unpinned, 1);
  close(fd), close(fd2);
}
END_TEST

START_TEST(what_is_never_mapped) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int open_fd = memfd(MIB, 0); /* may shrink: a SIGBUS waiting to happen */
  ck_assert_ptr_null(xmap_get(&x, open_fd, 0, 4096, T0, 1));
  int fd = memfd(MIB, 1);
  ck_assert_ptr_null(xmap_get(&x, fd, MIB - 100, 101, T0, 1)); /* past the end */
  ck_assert_ptr_null(xmap_get(&x, fd, MIB + 1, 0, T0, 1));
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  ck_assert_ptr_null(xmap_get(&x, p[0], 0, 1, T0, 1)); /* no regular file */
  int big = memfd(XMAP_MAX + 4096, 1);                 /* larger than any kept one */
  ck_assert_ptr_null(xmap_get(&x, big, 0, 4096, T0, 1));
  ck_assert_int_eq(c.pinned, 0);
  xmap_clear(&x);
  close(open_fd), close(fd), close(p[0]), close(p[1]), close(big);
}
END_TEST

/* A hugetlbfs memfd, sealed against shrinking, is never mapped: a hole
 * punched under the seal gives its huge pages back, another file takes
 * them, and the next fault through the kept mapping was SIGBUS in the
 * device process. With no huge pages to be had its mmap fails anyway, so
 * the test asks the kernel for two (as root) and gives them back. */
START_TEST(a_hugetlb_memfd_is_never_mapped) {
  const char *knob = "/proc/sys/vm/nr_hugepages";
  char was[32] = "";
  int k = open(knob, O_RDWR | O_CLOEXEC), raised = 0, mapped = 0;
  ssize_t got = k >= 0 ? pread(k, was, sizeof was - 1, 0) : -1;
  if (got > 0 && atoi(was) < 2) raised = pwrite(k, "2\n", 2, 0) == 2;
  int fd = memfd_create("xmap-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
  if (fd >= 0 && ftruncate(fd, 2 * MIB) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0) {
    void *probe = mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (probe == MAP_FAILED)
      fprintf(stderr, "a_hugetlb_memfd_is_never_mapped: no huge page to map here\n");
    else
      munmap(probe, 2 * MIB);
    struct pins c = {0};
    struct xmap x;
    xmap_init(&x, pin, unpin, &c);
    mapped = xmap_get(&x, fd, 0, 4096, T0, 1) != NULL || c.pinned != 0;
    xmap_clear(&x);
  }
  if (fd >= 0) close(fd);
  /* the pages given back before any assertion (a failed one ends the test) */
  if (raised) ck_assert_int_eq(pwrite(k, was, (size_t)got, 0), got);
  if (k >= 0) close(k);
  ck_assert_msg(!mapped, "a hugetlbfs memfd was mapped");
}
END_TEST

/* A file that grew past its mapping is mapped again whole in another slot
 * at once (a frame client's transfer memfd grows when its job moves input
 * and output: read and written through the bounce instead, its frames took
 * 0.12 ms longer on an H200), the old mapping kept pinned until the next
 * clear; once its owner's share is taken, a further growth is read and
 * written instead until the clear. */
START_TEST(a_file_that_grew_is_mapped_again) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd = memfd(65536, 1);
  uint8_t *m0 = xmap_get(&x, fd, 0, 65536, T0, 1);
  ck_assert_ptr_nonnull(m0);
  ck_assert_int_eq(ftruncate(fd, 4 * 65536), 0); /* growing is allowed */
  uint8_t *m1 = xmap_get(&x, fd, 3 * 65536, 65536, T0 + 1, 1);
  ck_assert_ptr_nonnull(m1);
  ck_assert_ptr_ne(m1, m0);
  ck_assert_int_eq(c.pinned, 2);
  ck_assert_int_eq(c.unpinned, 0);                             /* the old one stays pinned */
  m1[4 * 65536 - 1] = 5;                                       /* the whole new length is mapped */
  ck_assert_ptr_eq(xmap_get(&x, fd, 0, 65536, T0 + 2, 1), m1); /* the new one serves all */
  /* growing on until its share is taken: then read and written instead */
  size_t len = 4 * 65536;
  uint8_t *last = m1;
  for (int held = 2; held <= XMAP_PER_OWNER; held++) {
    len *= 2;
    ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
    uint8_t *m = xmap_get(&x, fd, len - 65536, 65536, T0 + 3 + held, 1);
    if (held < XMAP_PER_OWNER) {
      ck_assert_ptr_nonnull(m);
      last = m;
    } else {
      ck_assert_ptr_null(m);
    }
  }
  ck_assert_ptr_eq(xmap_get(&x, fd, 0, 65536, T0 + 100, 1), last); /* within it: still there */
  ck_assert_int_eq(c.pinned, XMAP_PER_OWNER);
  ck_assert_int_eq(c.unpinned, 0);
  xmap_clear(&x); /* the megakernel parked */
  ck_assert_int_eq(c.unpinned, XMAP_PER_OWNER);
  uint8_t *m = xmap_get(&x, fd, len - 65536, 65536, T0 + 101, 1);
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(c.pinned, XMAP_PER_OWNER + 1);
  m[len - 1] = 5;
  xmap_clear(&x);
  close(fd);
}
END_TEST

/* A file named by its identity (the request carries no descriptor:
 * devproc_msg.h, DP_FD_PINNED) is found only as mapped for the same owner,
 * within its mapping, and never after the clear or once it grew into
 * another slot; nothing is mapped or pinned by a look. */
START_TEST(a_mapped_file_is_found_by_its_identity) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd = memfd(65536, 1);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino, 0, 4096, T0, 1)); /* not yet mapped */
  uint8_t *m = xmap_get(&x, fd, 0, 4096, T0, 1);
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_eq(xmap_find(&x, st.st_dev, st.st_ino, 4096, 4096, T0 + 1, 1), m);
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino, 0, 4096, T0 + 1, 2)); /* another owner */
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino, 65000, 1000, T0 + 1, 1)); /* past it */
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino + 1, 0, 1, T0 + 1, 1));
  /* grown and mapped again: the old mapping is out of reach, the new one found */
  ck_assert_int_eq(ftruncate(fd, 2 * 65536), 0);
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino, 65536, 4096, T0 + 2, 1));
  uint8_t *m2 = xmap_get(&x, fd, 65536, 4096, T0 + 2, 1);
  ck_assert_ptr_nonnull(m2);
  ck_assert_ptr_eq(xmap_find(&x, st.st_dev, st.st_ino, 0, 4096, T0 + 3, 1), m2);
  ck_assert_int_eq(c.pinned, 2);
  xmap_clear(&x);
  ck_assert_ptr_null(xmap_find(&x, st.st_dev, st.st_ino, 0, 4096, T0 + 4, 1));
  close(fd);
}
END_TEST

START_TEST(a_failed_pin_is_remembered) {
  struct pins c = {.fail = 1};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd = memfd(65536, 1);
  ck_assert_ptr_null(xmap_get(&x, fd, 0, 4096, T0, 1));
  c.fail = 0;
  ck_assert_ptr_null(xmap_get(&x, fd, 0, 4096, T0 + 1, 1)); /* not tried again */
  ck_assert_int_eq(c.pinned, 0);
  xmap_clear(&x);
  ck_assert_int_eq(c.unpinned, 0);
  close(fd);
}
END_TEST

START_TEST(nothing_is_unpinned_but_by_a_clear) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd[XMAP_SLOTS + 1];
  uint8_t *m[XMAP_SLOTS + 1];
  for (int i = 0; i <= XMAP_SLOTS; i++) fd[i] = memfd(65536, 1);
  for (int i = 0; i < XMAP_SLOTS; i++) {
    m[i] = xmap_get(&x, fd[i], 0, 4096, T0 + i, (uint32_t)i + 1); /* four users */
    ck_assert_ptr_nonnull(m[i]);
  }
  /* one more than the slots, however long the others have been idle: read
   * and written instead, nothing unpinned */
  ck_assert_ptr_null(xmap_get(&x, fd[XMAP_SLOTS], 0, 4096, T0 + 3600 * 1000000000LL, 9));
  ck_assert_int_eq(c.unpinned, 0);
  for (int i = 0; i < XMAP_SLOTS; i++)
    ck_assert_ptr_eq(xmap_get(&x, fd[i], 0, 4096, T0 + 3600 * 1000000000LL + i, (uint32_t)i + 1),
                     m[i]);
  ck_assert_int_eq(c.pinned, XMAP_SLOTS);
  xmap_clear(&x);
  ck_assert_int_eq(c.unpinned, XMAP_SLOTS);
  ck_assert_ptr_nonnull(xmap_get(&x, fd[XMAP_SLOTS], 0, 4096, T0 + 1, 1)); /* room again */
  /* forget: unmapped, not unpinned (the runtime closed) */
  xmap_forget(&x);
  ck_assert_int_eq(c.unpinned, XMAP_SLOTS);
  ck_assert_int_eq(c.pinned, XMAP_SLOTS + 1);
  for (int i = 0; i <= XMAP_SLOTS; i++) close(fd[i]);
}
END_TEST

/* One client's uid holds at most XMAP_PER_OWNER slots: its next file is
 * read and written instead (nothing pinned), and another user's still
 * maps; a clear gives the share back. */
START_TEST(one_owner_holds_at_most_its_share) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd[XMAP_PER_OWNER + 2];
  for (int i = 0; i < XMAP_PER_OWNER + 2; i++) fd[i] = memfd(65536, 1);
  for (int i = 0; i < XMAP_PER_OWNER; i++)
    ck_assert_ptr_nonnull(xmap_get(&x, fd[i], 0, 4096, T0 + i, 7));
  ck_assert_ptr_null(xmap_get(&x, fd[XMAP_PER_OWNER], 0, 4096, T0 + 10, 7)); /* its share taken */
  ck_assert_int_eq(c.pinned, XMAP_PER_OWNER);
  ck_assert_ptr_nonnull(xmap_get(&x, fd[XMAP_PER_OWNER + 1], 0, 4096, T0 + 11, 8)); /* another's */
  ck_assert_ptr_nonnull(xmap_get(&x, fd[0], 0, 4096, T0 + 12, 7)); /* its own mapped one: still */
  xmap_clear(&x);
  ck_assert_ptr_nonnull(xmap_get(&x, fd[XMAP_PER_OWNER], 0, 4096, T0 + 13, 7));
  xmap_clear(&x);
  ck_assert_int_eq(c.unpinned, c.pinned);
  for (int i = 0; i < XMAP_PER_OWNER + 2; i++) close(fd[i]);
}
END_TEST

/* A frame's ranges as DP_SUBMIT_IO names them: input at 4096 (300000
 * bytes, more than a whole warm-up's), output at 2 MiB (8000); a warm-up
 * reads them where the file is mapped, never more than its most. */
START_TEST(a_warm_up_reads_the_last_frames_ranges) {
  struct pins c = {0};
  struct xmap x;
  xmap_init(&x, pin, unpin, &c);
  int fd = memfd(4 * MIB, 1);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  struct dp_warm w = {0};
  struct dp_warm_read rd[DP_MAX_BUFS];
  /* nothing noted: nothing to read (the runtime's own bytes serve) */
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 0);
  struct dp_buf_entry b[3] = {
      {.size = 3 * MIB / 2, .off = 4096, .in = 1, .owner = 1},
      {.size = 8000, .off = 2 * MIB, .out = 1, .owner = 1},
      {.size = 0, .off = 0, .in = 1, .owner = 1}, /* empty: nothing of it */
  };
  dp_warm_note(&w, (uint64_t)st.st_dev, (uint64_t)st.st_ino, b, 3);
  /* not mapped yet: nothing (a warm-up never maps a file) */
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 0);
  uint8_t *m = xmap_get(&x, fd, 0, 4 * MIB, T0, 1);
  ck_assert_ptr_nonnull(m);
  /* a window's first, the way in: the input range from its start, whole
   * up to the most */
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 1);
  ck_assert_ptr_eq(rd[0].p, m + 4096);
  ck_assert_uint_eq(rd[0].bytes, DP_WARM_WHOLE_MAX);
  ck_assert_uint_eq(rd[0].p[0], (uint8_t)(4096 * 7));
  /* a later one: a few bytes of it */
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 0, T0, rd), 1);
  ck_assert_ptr_eq(rd[0].p, m + 4096);
  ck_assert_uint_eq(rd[0].bytes, DP_WARM_TOUCH);
  /* the way out: the output range, whole where it is smaller than the most */
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 0, 1, T0, rd), 1);
  ck_assert_ptr_eq(rd[0].p, m + 2 * MIB);
  ck_assert_uint_eq(rd[0].bytes, 8000);
  /* another owner's ranges in the same file are not found for this one */
  b[0].owner = 2;
  dp_warm_note(&w, (uint64_t)st.st_dev, (uint64_t)st.st_ino, b, 1);
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 0);
  b[0].owner = 1;
  dp_warm_note(&w, (uint64_t)st.st_dev, (uint64_t)st.st_ino, b, 2);
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 1);
  /* several ranges in: whole up to the most over all of them, a few bytes
   * of each past it */
  struct dp_buf_entry three[3] = {
      {.size = 600u << 10, .off = 0, .in = 1, .owner = 1},
      {.size = 600u << 10, .off = 1u << 20, .in = 1, .owner = 1},
      {.size = 100u << 10, .off = 2u << 20, .in = 1, .owner = 1},
  };
  dp_warm_note(&w, (uint64_t)st.st_dev, (uint64_t)st.st_ino, three, 3);
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 3);
  ck_assert_uint_eq(rd[0].bytes, 600u << 10);
  ck_assert_uint_eq(rd[1].bytes, DP_WARM_WHOLE_MAX - (600u << 10));
  ck_assert_uint_eq(rd[2].bytes, DP_WARM_TOUCH);
  ck_assert_ptr_eq(rd[2].p, m + (2u << 20));
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 0, T0, rd), 3);
  for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(rd[i].bytes, DP_WARM_TOUCH);
  /* the mapping cleared (the megakernel parked): nothing until mapped again */
  xmap_clear(&x);
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 1, 1, T0, rd), 0);
  ck_assert_uint_eq(dp_warm_plan(&w, &x, 0, 0, T0, rd), 0);
  close(fd);
  xmap_forget(&x);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("xmap");
  TCase *t = tcase_create("xmap");
  tcase_add_test(t, a_sealed_memfd_is_mapped_and_pinned_once);
  tcase_add_test(t, what_is_never_mapped);
  tcase_add_test(t, a_hugetlb_memfd_is_never_mapped);
  tcase_add_test(t, a_file_that_grew_is_mapped_again);
  tcase_add_test(t, a_mapped_file_is_found_by_its_identity);
  tcase_add_test(t, a_failed_pin_is_remembered);
  tcase_add_test(t, nothing_is_unpinned_but_by_a_clear);
  tcase_add_test(t, one_owner_holds_at_most_its_share);
  tcase_add_test(t, a_warm_up_reads_the_last_frames_ranges);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
