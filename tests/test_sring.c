/*
 * test_sring.c: the shared ring between a client and coopd (protocol/sring.h;
 * PROTOCOL.md, "The shared ring"). Frames go in and come out byte for byte,
 * with their sock_before, in records padded to 8 bytes; they wrap around the
 * end of the data and around 2^32 of the indices; a full ring refuses a put
 * until a take makes room. Each side distrusts the other: a writer's tail or
 * record length that cannot be, or a reader's head that cannot be, is a
 * protocol error before a byte is copied. The sleep flag is a Dekker pair, so
 * a writer in another process that rings only when the reader is asleep
 * never leaves it blocked with a record waiting. The memfd is sealed, and
 * mapping one of the wrong size or magic is refused.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "coop_errno.h"
#include "sring.h"
#include "wire.h"
#include "xorshift.h"

#define MASK (COOP_SRING_DATA - 1u)

static uint8_t in[COOP_SRING_FRAME_MAX], out[COOP_SRING_FRAME_MAX];

static struct coop_sring *new_ring(int *fdp) {
  struct coop_sring *r = NULL;
  int fd = coop_sring_create(&r);
  ck_assert_int_ge(fd, 0);
  ck_assert_ptr_nonnull(r);
  if (fdp)
    *fdp = fd;
  else
    close(fd);
  return r;
}

/* len bytes that only seed makes */
static void pattern(uint8_t *b, uint32_t len, uint64_t seed) {
  uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull | 1;
  for (uint32_t i = 0; i < len; i++) b[i] = (uint8_t)coop_xorshift64(&s);
}

/* Both ends of d at index p, as if p bytes had gone through. */
static void start_at(struct coop_sring_dir *d, uint32_t p, struct coop_sring_end *w,
                     struct coop_sring_end *rd) {
  atomic_store(&d->tail, p);
  atomic_store(&d->head, p);
  *w = (struct coop_sring_end){d, p};
  *rd = (struct coop_sring_end){d, p};
}

/* Peeks the next record, expecting it to be len bytes of pattern(seed) after
 * sock_before sb, takes it, and checks that the room came back. */
static void take_expect(struct coop_sring_end *rd, uint32_t len, uint32_t sb, uint64_t seed,
                        uint32_t rec) {
  uint32_t n = 0, got_sb = 0, before = rd->pos;
  ck_assert_int_eq(coop_sring_peek(rd, &n, &got_sb), 1);
  ck_assert_uint_eq(n, len);
  ck_assert_uint_eq(got_sb, sb);
  memset(out, 0xa5, sizeof out);
  coop_sring_take(rd, out, n);
  pattern(in, len, seed);
  ck_assert_mem_eq(out, in, len);
  if (len < sizeof out) ck_assert_uint_eq(out[len], 0xa5); /* not the padding */
  ck_assert_uint_eq(rd->pos, before + rec);
  ck_assert_uint_eq(atomic_load(&rd->d->head), rd->pos);
}

START_TEST(frames_round_trip_in_padded_records) {
  static const uint32_t len[] = {16, 17, 23, 24, 100, 1023, 4096, COOP_SRING_FRAME_MAX};
  static const uint32_t rec[] = {24, 32, 32, 32, 112, 1032, 4104, COOP_SRING_FRAME_MAX + 8};
  enum { N = sizeof len / sizeof len[0] };
  struct coop_sring *r = new_ring(NULL);
  struct coop_sring_end w = {&r->down, 0}, rd = {&r->down, 0};
  uint32_t at = 0;
  for (uint32_t i = 0; i < N; i++) {
    pattern(in, len[i], i);
    ck_assert_int_eq(coop_sring_put(&w, in, len[i], i * 0x2468acefu), 1);
    at += rec[i];
    ck_assert_uint_eq(w.pos, at);
    ck_assert_uint_eq(atomic_load(&r->down.tail), at);
  }
  for (uint32_t i = 0; i < N; i++) take_expect(&rd, len[i], i * 0x2468acefu, i, rec[i]);
  uint32_t n, sb;
  ck_assert_int_eq(coop_sring_peek(&rd, &n, &sb), 0);
  ck_assert_uint_eq(atomic_load(&r->up.tail), 0); /* the other ring untouched */
  coop_sring_unmap(r);
}
END_TEST

/* Record seq's frame length: odd, mostly short, one in eight up to the
 * longest. */
static uint32_t odd_len(uint32_t seq) {
  uint64_t s = (seq + 7) * 0xd1b54a32d192ed03ull | 1;
  uint64_t x = coop_xorshift64(&s);
  uint32_t max = x % 8 ? 600 : COOP_SRING_FRAME_MAX;
  return (16 + (uint32_t)(x / 8 % (max - 16))) | 1u;
}

static uint32_t rec_of(uint32_t len) { return COOP_SRING_REC + (len + 7) / 8 * 8; }

/* Puts record seq: 1 when written, 0 when the room left is too small. */
static int put_seq(struct coop_sring_end *w, uint32_t seq) {
  uint32_t len = odd_len(seq), before = w->pos;
  uint32_t room = COOP_SRING_DATA - (w->pos - atomic_load(&w->d->head));
  pattern(in, len, seq);
  int rc = coop_sring_put(w, in, len, seq);
  ck_assert_int_eq(rc, room >= rec_of(len));
  ck_assert_uint_eq(w->pos, before + (rc ? rec_of(len) : 0));
  return rc;
}

/* Puts 1 to 6 and takes 1 to 5 at a time until 12 rings' worth went through from
 * index start; every record checked. */
static void pump(uint32_t start) {
  struct coop_sring *r = new_ring(NULL);
  struct coop_sring_end w, rd;
  start_at(&r->up, start, &w, &rd);
  uint64_t pace = 88172645463325252ull;
  uint32_t put = 0, got = 0, full = 0;
  while (rd.pos - start < 12 * COOP_SRING_DATA) {
    for (int k = (int)(coop_xorshift64(&pace) % 6); k >= 0; k--, put++)
      if (!put_seq(&w, put)) {
        full++;
        break;
      }
    for (int k = (int)(coop_xorshift64(&pace) % 5); k >= 0 && got < put; k--, got++)
      take_expect(&rd, odd_len(got), got, got, rec_of(odd_len(got)));
  }
  for (; got < put; got++) take_expect(&rd, odd_len(got), got, got, rec_of(odd_len(got)));
  uint32_t n, sb;
  ck_assert_int_eq(coop_sring_peek(&rd, &n, &sb), 0);
  ck_assert_uint_eq(rd.pos, w.pos);
  ck_assert_uint_gt(put, 500);
  ck_assert_uint_gt(full, 10); /* it was full now and then */
  coop_sring_unmap(r);
}

START_TEST(records_wrap_around_the_data) { pump(0); }
END_TEST

/* The same across 2^32 of the indices: they are free-running. */
START_TEST(records_wrap_around_the_indices) { pump(0u - 3 * COOP_SRING_DATA); }
END_TEST

START_TEST(a_full_ring_refuses_until_a_take) {
  struct coop_sring *r = new_ring(NULL);
  struct coop_sring_end w = {&r->up, 0}, rd = {&r->up, 0};
  pattern(in, COOP_SRING_FRAME_MAX, 1);
  ck_assert_int_eq(coop_sring_put(&w, in, COOP_SRING_FRAME_MAX + 1, 0), 0); /* too long */
  ck_assert_uint_eq(w.pos, 0);
  for (uint32_t i = 0; i < 3; i++)
    ck_assert_int_eq(coop_sring_put(&w, in, COOP_SRING_FRAME_MAX, i), 1);
  ck_assert_int_eq(coop_sring_put(&w, in, COOP_SRING_FRAME_MAX, 3), 0);
  uint32_t left = COOP_SRING_DATA - 3 * (COOP_SRING_FRAME_MAX + 8); /* 16360 */
  ck_assert_int_eq(coop_sring_put(&w, in, left - 7, 3), 0);         /* 8 + 16360 */
  ck_assert_int_eq(coop_sring_put(&w, in, left - 8, 3), 1);         /* just fits */
  ck_assert_uint_eq(w.pos, COOP_SRING_DATA);
  ck_assert_int_eq(coop_sring_put(&w, in, COOP_WIRE_HDR, 4), 0);
  ck_assert_uint_eq(w.pos, COOP_SRING_DATA);
  ck_assert_uint_eq(atomic_load(&r->up.tail), COOP_SRING_DATA);
  take_expect(&rd, COOP_SRING_FRAME_MAX, 0, 1, COOP_SRING_FRAME_MAX + 8);
  ck_assert_int_eq(coop_sring_put(&w, in, COOP_SRING_FRAME_MAX, 4), 1);
  ck_assert_int_eq(coop_sring_put(&w, in, COOP_WIRE_HDR, 5), 0);
  coop_sring_unmap(r);
}
END_TEST

/* Reader's end at p; the writer's tail p + ahead, a record header {len, 7}
 * at p. */
static int peek_hostile(struct coop_sring_dir *d, uint32_t p, uint32_t ahead, uint32_t len) {
  uint32_t hdr[2] = {len, 7}, n = 0, sb = 0;
  memset(d->data, 0, sizeof d->data);
  memcpy(d->data + (p & MASK), hdr, sizeof hdr);
  atomic_store(&d->head, p);
  atomic_store(&d->tail, p + ahead);
  struct coop_sring_end rd = {d, p};
  int rc = coop_sring_peek(&rd, &n, &sb);
  ck_assert_uint_eq(rd.pos, p);
  if (rc == 1) ck_assert_msg(n == len && sb == 7, "peeked %u, %u", n, sb);
  return rc;
}

static const uint32_t some_p[] = {0, 4096, COOP_SRING_DATA - 8, 0u - 8};

START_TEST(a_hostile_writer_is_refused) {
  static const struct {
    uint32_t ahead, len;
    int want;
  } t[] = {
      {COOP_SRING_DATA + 8, 16, COOP_EPROTO}, /* more than the ring ahead */
      {COOP_SRING_DATA + 1, 16, COOP_EPROTO},
      {0u - 8, 16, COOP_EPROTO}, /* behind the reader */
      {1, 16, COOP_EPROTO},      /* less than a record's header */
      {7, 16, COOP_EPROTO},
      {8, 16, COOP_EPROTO}, /* a header, no frame */
      {COOP_SRING_DATA, COOP_WIRE_HDR - 1, COOP_EPROTO},
      {COOP_SRING_DATA, 0, COOP_EPROTO},
      {COOP_SRING_DATA, COOP_SRING_FRAME_MAX + 1, COOP_EPROTO},
      {COOP_SRING_DATA, 0xffffffffu, COOP_EPROTO},
      {108, 100, COOP_EPROTO}, /* the padding is part of the record */
      {111, 100, COOP_EPROTO},
      {112, 100, 1},
      {24, 16, 1},
      {COOP_SRING_DATA, 16, 1}, /* a full ring */
      {COOP_SRING_DATA, COOP_SRING_FRAME_MAX, 1},
      {0, 16, 0}, /* empty */
  };
  struct coop_sring *r = new_ring(NULL);
  for (unsigned i = 0; i < sizeof some_p / sizeof some_p[0]; i++)
    for (unsigned j = 0; j < sizeof t / sizeof t[0]; j++)
      ck_assert_msg(peek_hostile(&r->up, some_p[i], t[j].ahead, t[j].len) == t[j].want,
                    "pos %u, tail %u ahead, len %u: want %d", some_p[i], t[j].ahead, t[j].len,
                    t[j].want);
  coop_sring_unmap(r);
}
END_TEST

/* Writer's end at p, the reader's head at p - behind: a 16-byte put. */
static int put_hostile(struct coop_sring_dir *d, uint32_t p, uint32_t behind) {
  atomic_store(&d->tail, p);
  atomic_store(&d->head, p - behind);
  struct coop_sring_end w = {d, p};
  pattern(in, COOP_WIRE_HDR, 0);
  int rc = coop_sring_put(&w, in, COOP_WIRE_HDR, 0);
  ck_assert_uint_eq(w.pos, p + (rc == 1 ? 24 : 0));
  ck_assert_uint_eq(atomic_load(&d->tail), w.pos);
  return rc;
}

START_TEST(a_hostile_reader_is_refused) {
  static const struct {
    uint32_t behind;
    int want;
  } t[] = {
      {COOP_SRING_DATA + 8, COOP_EPROTO}, /* more than the ring behind */
      {COOP_SRING_DATA + 1, COOP_EPROTO},
      {0u - 8, COOP_EPROTO}, /* ahead of the writer */
      {0u - 1, COOP_EPROTO},
      {COOP_SRING_DATA, 0}, /* full */
      {COOP_SRING_DATA - 23, 0},
      {COOP_SRING_DATA - 24, 1},
      {0, 1},
  };
  struct coop_sring *r = new_ring(NULL);
  for (unsigned i = 0; i < sizeof some_p / sizeof some_p[0]; i++)
    for (unsigned j = 0; j < sizeof t / sizeof t[0]; j++)
      ck_assert_msg(put_hostile(&r->down, some_p[i], t[j].behind) == t[j].want,
                    "pos %u, head %u behind: want %d", some_p[i], t[j].behind, t[j].want);
  coop_sring_unmap(r);
}
END_TEST

START_TEST(the_sleep_flag) {
  struct coop_sring *r = new_ring(NULL);
  struct coop_sring_end w = {&r->up, 0}, rd = {&r->up, 0}, w2 = {&r->down, 0};
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 1); /* both, from the start */
  ck_assert_int_eq(coop_sring_reader_asleep(&w2), 1);
  coop_sring_awake(&rd);
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 0);
  ck_assert_int_eq(coop_sring_reader_asleep(&w2), 1);
  ck_assert_int_eq(coop_sring_sleep(&rd), 0); /* empty: block */
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 1);
  coop_sring_awake(&rd);
  pattern(in, 40, 3);
  ck_assert_int_eq(coop_sring_put(&w, in, 40, 0), 1);
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 0);
  ck_assert_int_eq(coop_sring_sleep(&rd), 1); /* a record: look again */
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 1);
  coop_sring_awake(&rd);
  take_expect(&rd, 40, 0, 3, 48);
  ck_assert_int_eq(coop_sring_sleep(&rd), 0);
  ck_assert_int_eq(coop_sring_reader_asleep(&w), 1);
  coop_sring_unmap(r);
}
END_TEST

START_TEST(due_is_modulo_2_32) {
  ck_assert_int_eq(coop_sring_due(5, 5), 1);
  ck_assert_int_eq(coop_sring_due(4, 5), 1);
  ck_assert_int_eq(coop_sring_due(6, 5), 0);
  ck_assert_int_eq(coop_sring_due(0xffffffffu, 2), 1);
  ck_assert_int_eq(coop_sring_due(2, 0xffffffffu), 0);
  ck_assert_int_eq(coop_sring_due(0, 0x7fffffffu), 1);
}
END_TEST

/* A memfd of size bytes, magic and size fields as given. */
static int fake_memfd(size_t size, uint32_t magic, uint32_t size_field) {
  int fd = memfd_create("fake-ring", MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  uint32_t head[2] = {magic, size_field};
  ck_assert_int_eq(pwrite(fd, head, sizeof head, 0), (ssize_t)sizeof head);
  return fd;
}

static void map_refused(size_t size, uint32_t magic, uint32_t size_field) {
  int fd = fake_memfd(size, magic, size_field);
  ck_assert_ptr_null(coop_sring_map(fd));
  close(fd);
}

START_TEST(the_memfd_is_sealed_and_checked) {
  int fd;
  struct coop_sring *r = new_ring(&fd);
  ck_assert_uint_eq(r->magic, COOP_SRING_MAGIC);
  ck_assert_uint_eq(r->size, sizeof *r);
  ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  errno = 0;
  ck_assert_int_eq(ftruncate(fd, sizeof *r - 4096), -1);
  ck_assert_int_eq(errno, EPERM);
  errno = 0;
  ck_assert_int_eq(ftruncate(fd, sizeof *r + 4096), -1);
  ck_assert_int_eq(errno, EPERM);
  struct coop_sring *m = coop_sring_map(fd);
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_ne(m, r);
  struct coop_sring_end w = {&r->down, 0}, rd = {&m->down, 0};
  pattern(in, 333, 9);
  ck_assert_int_eq(coop_sring_put(&w, in, 333, 12), 1);
  take_expect(&rd, 333, 12, 9, 344);
  ck_assert_uint_eq(atomic_load(&r->down.head), 344);
  coop_sring_unmap(m);
  coop_sring_unmap(r);
  close(fd);
  map_refused(sizeof *r, 0, sizeof *r);
  map_refused(sizeof *r, COOP_SRING_MAGIC, sizeof *r - 8);
  map_refused(sizeof *r - 8, COOP_SRING_MAGIC, sizeof *r);
  map_refused(sizeof *r + 4096, COOP_SRING_MAGIC, sizeof *r);
  int ok = fake_memfd(sizeof *r, COOP_SRING_MAGIC, sizeof *r); /* the fakes' own check */
  m = coop_sring_map(ok);
  ck_assert_ptr_nonnull(m);
  coop_sring_unmap(m);
  close(ok);
}
END_TEST

enum { RECORDS = 20000 };

static uint32_t seq_len(uint32_t seq) { return COOP_WIRE_HDR + seq % 7 * 4; }

/* The writer waits, half the time, until the reader has taken all: the
 * next record then races the reader going to sleep, and a wake-up lost
 * there is never made up by a later record's bell. Each side pauses a
 * random while (up to about a microsecond) at its end of the race, so that
 * the two meet at every distance. A Dekker pair broken on x86 (either
 * side's store, then load, not seq_cst) lost no wake-up in 20 runs of a
 * writer that never waited, and one in 19 or 20 runs of 20 of this one. */
static void pace_writer(const struct coop_sring_end *w, uint64_t *pace) {
  uint64_t x = coop_xorshift64(pace);
  if (x & 1)
    while (atomic_load(&w->d->head) != w->pos) sched_yield();
  for (volatile uint32_t i = (uint32_t)(x >> 1) % 512; i; i--) continue;
}

/* The other process's writer: each record its sequence number, repeated;
 * a byte on bell when the reader may be asleep. */
static void write_all(struct coop_sring_dir *d, int bell) {
  struct coop_sring_end w = {d, 0};
  uint64_t pace = 2463534242ull;
  uint32_t f[COOP_WIRE_HDR / 4 + 6];
  for (uint32_t seq = 0; seq < RECORDS; seq++) {
    for (unsigned i = 0; i < sizeof f / sizeof f[0]; i++) f[i] = seq;
    int rc;
    while ((rc = coop_sring_put(&w, f, seq_len(seq), 0)) == 0) sched_yield();
    if (rc != 1) _exit(2);
    if (coop_sring_reader_asleep(&w) && send(bell, "b", 1, MSG_NOSIGNAL) != 1) _exit(3);
    pace_writer(&w, &pace);
  }
  _exit(0);
}

/* Takes record seq. No ck_assert on the way when all is well: each one
 * writes to check's pipe, and would make the reader the slower side. */
static void check_seq(struct coop_sring_end *rd, uint32_t seq) {
  uint32_t n = 0, sb = 1, f[COOP_WIRE_HDR / 4 + 6];
  int rc = coop_sring_peek(rd, &n, &sb);
  if (rc != 1 || n != seq_len(seq) || sb != 0)
    ck_abort_msg("record %u: peek %d, len %u, sock_before %u", seq, rc, n, sb);
  coop_sring_take(rd, f, n);
  for (unsigned i = 0; i < n / 4; i++)
    if (f[i] != seq) ck_abort_msg("record %u: word %u is %u", seq, i, f[i]);
}

/* Blocks on the bell, as a reader with nothing in the ring: it sleeps only
 * while records are still to come, so the writer is still there. */
static void wait_bell(int bell, uint32_t seq) {
  struct pollfd p = {bell, POLLIN, 0};
  ck_assert_msg(poll(&p, 1, 2000) == 1, "a lost wake-up: record %u never rang", seq);
  char b[256];
  ssize_t k;
  while ((k = recv(bell, b, sizeof b, MSG_DONTWAIT)) > 0) continue;
  ck_assert_msg(k < 0, "the writer left before record %u", seq); /* then status */
}

static void read_all(struct coop_sring_end *rd, int bell) {
  uint64_t pace = 88172645463325252ull;
  for (uint32_t seq = 0; seq < RECORDS;) {
    uint32_t n, sb;
    if (coop_sring_peek(rd, &n, &sb) != 0) {
      check_seq(rd, seq++);
      continue;
    }
    for (volatile uint32_t i = coop_xorshift64(&pace) % 512; i; i--) continue;
    if (!coop_sring_sleep(rd)) wait_bell(bell, seq);
    coop_sring_awake(rd);
  }
}

START_TEST(no_wake_up_is_lost_between_processes) {
  struct coop_sring *r = new_ring(NULL);
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  pid_t parent = getpid(), kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed reader leaves no spinner */
    if (getppid() != parent) _exit(4);
    close(sv[0]);
    write_all(&r->up, sv[1]);
  }
  close(sv[1]);
  struct coop_sring_end rd = {&r->up, 0};
  read_all(&rd, sv[0]);
  int st = 0;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer: status %#x", st);
  uint32_t n, sb;
  ck_assert_int_eq(coop_sring_peek(&rd, &n, &sb), 0);
  close(sv[0]);
  coop_sring_unmap(r);
}
END_TEST

/* coop_sring_next, the readers' one call: a record written after 3 socket
 * frames waits (0, and stays) while the reader has taken 2, comes out as a
 * checked frame once it has taken 3; a record whose frame header is not a
 * frame's, or whose payload length is not the record's, is an error. */
START_TEST(next_takes_only_what_is_due) {
  struct coop_sring *r = new_ring(NULL);
  struct coop_sring_end w, rd;
  start_at(&r->up, 0, &w, &rd);
  struct coop_wire_buf b;
  coop_wire_buf_init(&b);
  ck_assert_int_eq(coop_wire_encode(&b, COOP_MSG_STATS, 7, NULL), 0);
  ck_assert_int_eq(coop_sring_put(&w, b.p, (uint32_t)b.len, 3), 1);
  struct coop_wire_hdr h;
  for (int i = 0; i < 3; i++) ck_assert_int_eq(coop_sring_next(&rd, 2, out, &h), 0);
  ck_assert_uint_eq(rd.pos, 0);
  ck_assert_int_eq(coop_sring_next(&rd, 3, out, &h), 1);
  ck_assert_uint_eq(h.type, COOP_MSG_STATS);
  ck_assert_uint_eq(h.seq, 7);
  ck_assert_int_eq(coop_sring_next(&rd, 3, out, &h), 0); /* empty */
  memcpy(in, b.p, b.len);
  in[0] ^= 0xff; /* no magic */
  ck_assert_int_eq(coop_sring_put(&w, in, (uint32_t)b.len, 0), 1);
  ck_assert_int_eq(coop_sring_next(&rd, 3, out, &h), COOP_EPROTO);
  memcpy(in, b.p, b.len);
  in[15] = 4; /* a payload of 4 in a record of none */
  ck_assert_int_eq(coop_sring_put(&w, in, (uint32_t)b.len, 0), 1);
  ck_assert_int_eq(coop_sring_next(&rd, 3, out, &h), COOP_EPROTO);
  coop_wire_buf_free(&b);
  coop_sring_unmap(r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sring");
  TCase *c = tcase_create("ring");
  tcase_add_test(c, frames_round_trip_in_padded_records);
  tcase_add_test(c, records_wrap_around_the_data);
  tcase_add_test(c, records_wrap_around_the_indices);
  tcase_add_test(c, a_full_ring_refuses_until_a_take);
  tcase_add_test(c, a_hostile_writer_is_refused);
  tcase_add_test(c, a_hostile_reader_is_refused);
  tcase_add_test(c, the_sleep_flag);
  tcase_add_test(c, due_is_modulo_2_32);
  tcase_add_test(c, next_takes_only_what_is_due);
  tcase_add_test(c, the_memfd_is_sealed_and_checked);
  tcase_add_test(c, no_wake_up_is_lost_between_processes);
  tcase_set_timeout(c, 30);
  suite_add_tcase(s, c);
  return coop_test_run(srunner_create(s));
}
