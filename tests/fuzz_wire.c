/*
 * fuzz_wire.c: fuzz target for the wire codec (protocol/wire.h).
 *
 * Input: byte 0 sets the largest chunk (1..256 bytes), byte 1 seeds the
 * chunk sizes and which chunks carry a descriptor; the rest is a byte
 * stream. (a) The stream goes through a frame reader in those chunks; every
 * frame is decoded, its records iterated, and the decoded message must
 * re-encode to exactly the payload it came from, which must decode and
 * re-encode to the same bytes again (encode(decode(x)) is a fixed point).
 * Every descriptor fed to the reader must be closed by the end (by the
 * reader or by us, after it handed it out). (b) The stream is decoded
 * directly as a payload of every type, with the same checks on success.
 *
 * Built with -DCOOP_FUZZ_STANDALONE it has a main() that replays a seed
 * corpus (a valid frame and a valid payload of each type, built with the
 * encoder) and deterministic mutations of it, so every build runs the
 * target, or writes that corpus for libFuzzer (--write-corpus DIR).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"
#include "wire_types.h"
#include "xorshift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t types[] = COOP_TEST_MSG_TYPES;
#define NTYPES (sizeof types / sizeof types[0])

static void fail(const char *what, uint16_t type) {
  fprintf(stderr, "fuzz_wire: %s (type %u %s)\n", what, type, coop_wire_type_name(type));
  abort();
}

/* How far inputs got, for the standalone summary. */
static unsigned long nframes, nvalid;

/* The decoder validated every record, so iterating them must not fail. */
static void iterate(uint16_t type, const union coop_msg *m) {
  uint32_t off = 0;
  if (type == COOP_MSG_STATUS_REPLY) {
    for (uint32_t i = 0; i < m->status_reply.n; i++) {
      struct coop_wire_status s;
      if (coop_wire_status_next(&m->status_reply, &off, &s) || strlen(s.kernel) >= 64)
        fail("status record", type);
    }
    if (off != m->status_reply.recs_len) fail("status records length", type);
  } else if (type == COOP_MSG_KERNEL_LIST) {
    for (uint32_t i = 0; i < m->kernels.n; i++) {
      struct coop_wire_kernel k;
      if (coop_wire_kernel_next(&m->kernels, &off, &k) || k.nargs > COOP_WIRE_MAX_ARGS)
        fail("kernel record", type);
    }
    if (off != m->kernels.recs_len) fail("kernel records length", type);
  } else if (type == COOP_MSG_RESULT) {
    for (uint32_t i = 0; i < m->result.ninst; i++) {
      struct coop_wire_inst in;
      if (coop_wire_inst_get(&m->result, i, &in)) fail("instance record", type);
    }
  } else if (type == COOP_MSG_TOP_REPLY) {
    for (uint32_t i = 0; i < m->top.nwg; i++) {
      struct coop_wire_wg w;
      if (coop_wire_wg_next(&m->top, &off, &w) || w.state > COOP_WG_OTHER ||
          ((w.state == COOP_WG_FREE || w.state == COOP_WG_OTHER) && w.job))
        fail("workgroup record", type);
    }
    if (off != m->top.wgs_len) fail("workgroup records length", type);
    off = 0;
    for (uint32_t i = 0; i < m->top.njobs; i++) {
      struct coop_wire_topjob j;
      if (coop_wire_topjob_next(&m->top, &off, &j) || j.cooperative > 1 || strlen(j.kernel) >= 64)
        fail("top job record", type);
    }
    if (off != m->top.jobs_len) fail("top job records length", type);
  }
}

/* A decoded message re-encodes to the payload it came from, and that
 * re-encoding decodes and re-encodes to itself. */
static void check_decoded(uint16_t type, uint32_t seq, const uint8_t *p, uint32_t len,
                          const union coop_msg *m) {
  struct coop_wire_buf a, b;
  struct coop_wire_hdr h;
  union coop_msg again;
  nvalid++;
  iterate(type, m);
  coop_wire_buf_init(&a);
  coop_wire_buf_init(&b);
  if (coop_wire_encode(&a, type, seq, m)) fail("a decoded message does not encode", type);
  if (a.len != COOP_WIRE_HDR + len || (len && memcmp(a.p + COOP_WIRE_HDR, p, len)))
    fail("the re-encoding differs from the input", type);
  if (coop_wire_hdr_decode(a.p, &h) || h.type != type || h.seq != seq || h.len != len)
    fail("bad header on the re-encoding", type);
  if (coop_wire_decode(&h, a.p + COOP_WIRE_HDR, &again)) fail("re-encoding undecodable", type);
  if (coop_wire_encode(&b, type, seq, &again) || b.len != a.len || memcmp(a.p, b.p, a.len))
    fail("encode(decode(x)) is not a fixed point", type);
  coop_wire_buf_free(&a);
  coop_wire_buf_free(&b);
}

static void try_payload(uint16_t type, uint32_t seq, const uint8_t *p, size_t n) {
  if (n > COOP_WIRE_MAX_PAYLOAD) return;
  struct coop_wire_hdr h = {COOP_WIRE_VERSION, type, seq, (uint32_t)n};
  union coop_msg m;
  int r = coop_wire_decode(&h, p, &m);
  if (r == 0)
    check_decoded(type, seq, p, (uint32_t)n, &m);
  else if (r != COOP_EPROTO && r != COOP_ETOOBIG)
    fail("unexpected decode error", type);
}

/* Descriptors handed to the reader, to check that none is left open. */
#define MAX_TRACKED 256
static int tracked[MAX_TRACKED];
static unsigned ntracked;

static int new_fd(void) {
  static int base = -1;
  if (base < 0) base = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (base < 0 || ntracked == MAX_TRACKED) return -1;
  int fd = fcntl(base, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0) tracked[ntracked++] = fd;
  return fd;
}

static void check_closed(void) {
  for (unsigned i = 0; i < ntracked; i++)
    if (fcntl(tracked[i], F_GETFD) != -1 || errno != EBADF) fail("a descriptor leaked", 0);
  ntracked = 0;
}

/* Takes every whole frame; < 0 once the reader has failed. */
static int drain(struct coop_wire_reader *r) {
  struct coop_wire_hdr h;
  const uint8_t *p;
  int fds[COOP_WIRE_MAX_FDS], k;
  unsigned nfds;
  while ((k = coop_wire_reader_next(r, &h, &p, fds, &nfds)) == 1) {
    nframes++;
    if (nfds > COOP_WIRE_MAX_FDS) fail("too many descriptors", h.type);
    for (unsigned i = 0; i < nfds; i++) close(fds[i]);
    try_payload(h.type, h.seq, p, h.len);
  }
  return k;
}

static void fuzz_reader(const uint8_t *data, size_t size, unsigned maxchunk, uint32_t rng) {
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  for (size_t pos = 0; pos < size;) {
    rng = rng * 1103515245u + 12345u;
    size_t n = 1 + (rng >> 16) % maxchunk;
    if (n > size - pos) n = size - pos;
    int fd = (rng >> 8) % 8 == 0 ? new_fd() : -1;
    int err = coop_wire_reader_feed(&r, data + pos, n, &fd, fd >= 0);
    pos += n;
    if (err || drain(&r) < 0) break;
  }
  coop_wire_reader_free(&r);
  check_closed();
}

/* For the regression replay (fuzz_replay.c): what a receiver makes of the
 * input's stream (the bytes after the two control bytes), fed in one piece
 * with no descriptors, in one line: each whole frame as TYPE:RESULT (TYPE
 * with /vN when its version is not ours, which the reader leaves to the
 * caller; RESULT ok or the decoder's error), then "| end" when every byte
 * was taken, "| partial N" when N bytes wait for the rest of a frame, or
 * "| ERROR" when the reader failed (a bad header: sticky). */
void fuzz_verdict(const uint8_t *data, size_t size, char *out, size_t outlen);
void fuzz_verdict(const uint8_t *data, size_t size, char *out, size_t outlen) {
  size_t at = 0, used = 0;
  out[0] = '\0';
  if (size < 2) {
    snprintf(out, outlen, "too short");
    return;
  }
  data += 2, size -= 2;
  struct coop_wire_reader r;
  coop_wire_reader_init(&r);
  int k = coop_wire_reader_feed(&r, data, size, NULL, 0);
  struct coop_wire_hdr h;
  const uint8_t *p;
  while (k == 0 && (k = coop_wire_reader_next(&r, &h, &p, NULL, NULL)) == 1) {
    union coop_msg m;
    int e = coop_wire_decode(&h, p, &m);
    used += COOP_WIRE_HDR + h.len;
    char v[16] = "";
    if (h.version != COOP_WIRE_VERSION) snprintf(v, sizeof v, "/v%u", h.version);
    at += (size_t)snprintf(out + at, outlen - at, "%s%s:%s ", coop_wire_type_name(h.type), v,
                           e ? coop_err_name(e) : "ok");
    if (at >= outlen) at = outlen - 1;
    k = 0;
  }
  if (k < 0)
    snprintf(out + at, outlen - at, "| %s", coop_err_name(k));
  else if (used < size)
    snprintf(out + at, outlen - at, "| partial %zu", size - used);
  else
    snprintf(out + at, outlen - at, "| end");
  coop_wire_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  fuzz_reader(data + 2, size - 2, 1u + data[0], data[1] * 2654435761u + 1u);
  for (size_t i = 0; i < NTYPES; i++) try_payload(types[i], 7, data + 2, size - 2);
  return 0;
}

#ifdef COOP_FUZZ_STANDALONE
#include <sys/stat.h>
#include <time.h>

/* ---- the seed corpus: one valid message of each type ---- */

struct seedrecs {
  struct coop_wire_buf status, kernels, inst, wgs, jobs;
};

static void seed_records(union coop_msg *m, uint16_t type, struct seedrecs *r) {
  if (type == COOP_MSG_STATUS_REPLY) {
    struct coop_wire_status s = {.job = 3, .state = COOP_JOB_RUNNING, .flags = 1, .kernel = "k"};
    coop_wire_status_put(&r->status, &s);
    s.state = COOP_JOB_DONE;
    coop_wire_status_put(&r->status, &s);
    m->status_reply = (struct coop_msg_status_reply){2, r->status.p, (uint32_t)r->status.len};
  } else if (type == COOP_MSG_KERNEL_LIST) {
    struct coop_wire_kernel k = {.name = "sweep", .cooperative = 1, .nargs = 3, .types = {7, 1, 6}};
    coop_wire_kernel_put(&r->kernels, &k);
    m->kernels = (struct coop_msg_kernel_list){1, r->kernels.p, (uint32_t)r->kernels.len};
  } else if (type == COOP_MSG_RESULT) {
    struct coop_wire_inst in = {COOP_JOB_DONE, {1, 2, 3, 4, 5, 6, 7}};
    coop_wire_inst_put(&r->inst, &in);
    coop_wire_inst_put(&r->inst, &in);
    m->result = (struct coop_msg_result){.job = 9, .state = COOP_JOB_DONE, .message = "ok"};
    m->result.t = in.t;
    m->result.ninst = 2, m->result.inst = r->inst.p, m->result.nbuf = 1;
    m->result.bufs[0] = (struct coop_wire_outbuf){1, (const uint8_t *)"out", 3};
  } else if (type == COOP_MSG_TOP_REPLY) {
    /* every workgroup state, a cooperative job and a non-cooperative one */
    const struct coop_wire_wg w[] = {{COOP_WG_RUNNING, 3},
                                     {COOP_WG_RESERVED, 3},
                                     {COOP_WG_OTHER, 0},
                                     {COOP_WG_FREE, 0},
                                     {COOP_WG_RUNNING, 4}};
    for (unsigned i = 0; i < sizeof w / sizeof w[0]; i++) coop_wire_wg_put(&r->wgs, &w[i]);
    struct coop_wire_topjob j = {3, "bfs", 1, 4, 1, 2, 3, 1, 2};
    coop_wire_topjob_put(&r->jobs, &j);
    j = (struct coop_wire_topjob){4, "render", 0, 1, 1, 1, 0, 0, -3};
    coop_wire_topjob_put(&r->jobs, &j);
    m->top = (struct coop_msg_top_reply){5, r->wgs.p,  (uint32_t)r->wgs.len,
                                         2, r->jobs.p, (uint32_t)r->jobs.len};
  }
}

static void seed_msg(union coop_msg *m, uint16_t type, struct seedrecs *r) {
  static const uint8_t in[4] = {1, 2, 3, 4};
  memset(m, 0, sizeof *m);
  switch (type) {
    case COOP_MSG_HELLO:
      m->hello = (struct coop_msg_hello){1, 1, "coopctl"};
      break;
    case COOP_MSG_WELCOME:
      m->welcome = (struct coop_msg_welcome){1, "0.1.0", "opencl", "pocl", 2, 4, 1, 1, 0, 1, 1};
      break;
    case COOP_MSG_SUBMIT:
      m->submit = (struct coop_msg_submit){.kernel = "sweep", .flags = 1, .groups = 2, .nargs = 3};
      m->submit.args[0] = (struct coop_wire_arg){.type = COOP_ARG_U32, .bits = 5};
      m->submit.args[1] = (struct coop_wire_arg){.type = COOP_ARG_BUF,
                                                 .dir = COOP_BUF_IN,
                                                 .fd = 255,
                                                 .size = 4,
                                                 .data = in,
                                                 .data_len = 4};
      m->submit.args[2] =
          (struct coop_wire_arg){.type = COOP_ARG_BUF, .dir = COOP_BUF_OUT, .fd = 0, .size = 64};
      for (unsigned i = 3; i < COOP_WIRE_MAX_ARGS; i++) /* at the limit */
        m->submit.args[i] = (struct coop_wire_arg){.type = COOP_ARG_I64, .bits = i};
      m->submit.nargs = COOP_WIRE_MAX_ARGS;
      break;
    case COOP_MSG_WAIT:
      m->job = (struct coop_msg_job){1, 100};
      break;
    case COOP_MSG_STATUS:
    case COOP_MSG_CANCEL:
    case COOP_MSG_ACCEPTED:
      m->job.job = 1;
      break;
    case COOP_MSG_SUBSCRIBE:
      m->subscribe.mask = COOP_EV_ALL;
      break;
    case COOP_MSG_ERROR:
      m->error = (struct coop_msg_error){COOP_ENOJOB, "no such job"};
      break;
    case COOP_MSG_STATS_REPLY:
      m->stats = (struct coop_msg_stats_reply){
          .backend = "opencl", .device = "pocl", .workers = 4, .done = 5};
      m->stats.gather_p50 = m->stats.gather_max = -1;
      m->stats.ndevices = 1;
      m->stats.devs[0] = (struct coop_wire_devinfo){"pocl", "opencl", 2, 4, 0, 1, 1, 3, 25000000};
      break;
    case COOP_MSG_EVENT:
      m->event = (struct coop_msg_event){1, COOP_EV_GATHERED, COOP_JOB_RUNNING, 0, 100, 20};
      break;
    default:
      seed_records(m, type, r);
  }
}

struct corpus {
  uint8_t *in[2 * NTYPES + 1];
  size_t len[2 * NTYPES + 1];
  unsigned n;
};

static void corpus_add(struct corpus *c, const uint8_t *p, size_t n, uint8_t b0, uint8_t b1) {
  uint8_t *s = malloc(n + 2);
  if (!s) abort();
  s[0] = b0, s[1] = b1;
  memcpy(s + 2, p, n);
  c->in[c->n] = s;
  c->len[c->n++] = n + 2;
}

/* Each frame, each payload alone, and every frame back to back. */
static void corpus_build(struct corpus *c) {
  struct coop_wire_buf all;
  coop_wire_buf_init(&all);
  c->n = 0;
  for (size_t i = 0; i < NTYPES; i++) {
    struct seedrecs r = {0};
    union coop_msg m;
    struct coop_wire_buf one;
    coop_wire_buf_init(&one);
    seed_msg(&m, types[i], &r);
    if (coop_wire_encode(&one, types[i], (uint32_t)i, &m) ||
        coop_wire_encode(&all, types[i], (uint32_t)i, &m))
      fail("seed does not encode", types[i]);
    corpus_add(c, one.p, one.len, 255, (uint8_t)i);
    corpus_add(c, one.p + COOP_WIRE_HDR, one.len - COOP_WIRE_HDR, 15, (uint8_t)(i * 7));
    coop_wire_buf_free(&one);
    coop_wire_buf_free(&r.status), coop_wire_buf_free(&r.kernels), coop_wire_buf_free(&r.inst);
    coop_wire_buf_free(&r.wgs), coop_wire_buf_free(&r.jobs);
  }
  corpus_add(c, all.p, all.len, 31, 1);
  coop_wire_buf_free(&all);
}

static int write_corpus(const struct corpus *c, const char *dir) {
  mkdir(dir, 0755); /* may exist already */
  for (unsigned i = 0; i < c->n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%02u", dir, i);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(c->in[i], 1, c->len[i], f) != c->len[i] || fclose(f)) {
      perror(path);
      return 1;
    }
  }
  printf("fuzz_wire: wrote %u seeds to %s\n", c->n, dir);
  return 0;
}

/* ---- deterministic mutations ---- */

static uint64_t rs = 0x2545f4914f6cdd1du;
static uint64_t rnd(void) { return coop_xorshift64(&rs); }

/* Values that sit on the decoder's limits, written as big-endian u32s
 * (over counts and lengths) or u8s (over enums). */
static const uint32_t edges[] = {
    0,      1,      2,       7,       8,           15,          16,         17,    63,
    64,     255,    256,     257,     1024,        1025,        65535,      65536, 65537,
    262144, 262145, 4194304, 4194305, 0x7fffffffu, 0x80000000u, 0xffffffffu};
#define NEDGES (sizeof edges / sizeof edges[0])
#define MAX_INPUT 65536

static size_t mutate_once(uint8_t *b, size_t n, const struct corpus *c) {
  size_t at = n ? rnd() % n : 0;
  uint32_t v = edges[rnd() % NEDGES];
  switch (rnd() % 6) {
    case 0: /* bit flip */
      if (n) b[at] ^= (uint8_t)(1u << (rnd() % 8));
      return n;
    case 1: /* a byte on an edge */
      if (n) b[at] = (uint8_t)v;
      return n;
    case 2: /* a u32 on an edge */
      for (unsigned i = 0; i < 4 && at + i < n; i++) b[at + i] = (uint8_t)(v >> (24 - 8 * i));
      return n;
    case 3: /* truncation */
      return at;
    case 4: { /* splice: our head, another seed's tail */
      unsigned s = (unsigned)(rnd() % c->n);
      size_t from = rnd() % c->len[s], take = c->len[s] - from;
      if (take > MAX_INPUT - at) take = MAX_INPUT - at;
      memcpy(b + at, c->in[s] + from, take);
      return at + take;
    }
    default: { /* duplicate a range (a repeated record or frame) */
      size_t len = n - at < 64 ? n - at : 64;
      if (n + len > MAX_INPUT) return n;
      memmove(b + at + len, b + at, n - at);
      return n + len;
    }
  }
}

int main(int argc, char **argv) {
  int write_seeds = argc == 3 && !strcmp(argv[1], "--write-corpus");
  if (!write_seeds && (argc > 2 || (argc == 2 && argv[1][0] == '-'))) {
    fprintf(stderr, "usage: %s [N] | --write-corpus DIR\n", argv[0]);
    return 2;
  }
  struct corpus c;
  corpus_build(&c);
  if (write_seeds) { /* the seeds are freed on every path (LeakSanitizer) */
    int r = write_corpus(&c, argv[2]);
    for (unsigned i = 0; i < c.n; i++) free(c.in[i]);
    return r;
  }
  unsigned long runs = argc == 2 ? strtoul(argv[1], NULL, 10) : 200000;
  static uint8_t buf[MAX_INPUT];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned i = 0; i < c.n; i++) LLVMFuzzerTestOneInput(c.in[i], c.len[i]);
  for (unsigned long i = 0; i < runs; i++) {
    unsigned s = (unsigned)(rnd() % c.n);
    size_t n = c.len[s];
    memcpy(buf, c.in[s], n);
    for (unsigned k = 1 + rnd() % 4; k; k--) n = mutate_once(buf, n, &c);
    LLVMFuzzerTestOneInput(buf, n);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf(
      "fuzz_wire: %u seeds and %lu mutations in %.2f s (%.0f exec/s): %lu frames read, "
      "%lu payloads decoded and re-encoded\n",
      c.n, runs, secs, (double)(runs + c.n) / (secs > 0 ? secs : 1e-9), nframes, nvalid);
  for (unsigned i = 0; i < c.n; i++) free(c.in[i]);
  return 0;
}
#endif
