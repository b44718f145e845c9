/*
 * copies.c: coop-bench-copies, what one copy between page-locked host
 * memory and the GPU costs, by the kind of device memory it lands in and
 * the way it is made; CUDA only, the driver API alone (no megakernel).
 *
 * The host side is a memfd mapped and page-locked in place
 * (cuMemHostRegister), as coopd's device process holds a client's frame
 * file. The device side is one of: managed memory prefetched to the GPU
 * (what the runtime's arena is, megakernel/backends/cuda.c), the same
 * advised to stay on the GPU, or device memory (cuMemAlloc). The ways: a
 * synchronous copy on the legacy stream either way, and an asynchronous
 * copy on a non-blocking stream followed by its synchronize (the runtime's
 * copy lanes). Each is timed warm (back to back) and cold (after a sleep
 * of --cold-us, the gap between two frames of a 60 fps loop), with the GPU
 * idle and with a one-block kernel polling a word of mapped host memory,
 * as the megakernel's scheduler does; then cold copies on the lanes with a
 * warm-up --warm-us before them (what coopd's device process does in a
 * frame's window), by what the warm-up reads. bench/RESULTS.md, "Copies on lanes".
 */
#define _GNU_SOURCE /* memfd_create */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backends/cuda_loader.h"
#include "common.h"

#ifdef COOP_BENCH_COMMIT_H
#include "bench_commit.h" /* written at build time by bench/CMakeLists.txt */
#endif
#ifndef COOP_BENCH_COMMIT
#define COOP_BENCH_COMMIT "unknown"
#endif

#define CB "coop-bench-copies"

/* The spinning kernel: one warp reads a word of mapped host memory until it
 * is not 0 (PTX, JIT-compiled by the driver). */
static const char spin_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 flag) {\n"
    "  .reg .u64 %rd<2>; .reg .u32 %r<2>; .reg .pred %p;\n"
    "  ld.param.u64 %rd1, [flag];\n"
    "L: ld.volatile.global.u32 %r1, [%rd1];\n"
    "  setp.eq.u32 %p, %r1, 0;\n"
    "  @%p bra L;\n"
    "  ret;\n}\n";

struct opts {
  size_t bytes;
  long copies, cold_us, warm_us, device;
  const char *csv;
};

struct gpu {
  CUdevice dev;
  CUcontext ctx;
  CUstream lane;
  char *host; /* 2 x bytes, page-locked: the source, then the destination */
  size_t hlen;
  CUdeviceptr mem[3]; /* by kind */
  CUfunction spin;
  CUmodule mod;
  volatile unsigned *flag; /* mapped host memory: the kernel stops at 1 */
  CUstream spin_s;
  char *warm_host;      /* 4096 page-locked bytes apart from the copy's (a warm-up's "elsewhere") */
  CUdeviceptr warm_dev; /* 4096 bytes of device memory they go to */
  CUdeviceptr scratch;  /* bytes of device memory: a warm-up of the copy's whole range */
};

static const char *kinds[] = {"managed", "managed, preferred on the GPU", "device memory"};
/* What comes --warm-us before a cold copy, each a host -> device copy on
 * the non-blocking stream (a warm-up reads host memory, never writes the
 * copy's: in coopd the host side is a client's file). */
static const char *warmups[] = {"none", "64 B from other pages", "64 B from the copy's first page",
                                "the copy's whole host range"};
static const char *ways[] = {"host -> device, legacy stream", "device -> host, legacy stream",
                             "host -> device, non-blocking stream + synchronize",
                             "device -> host, non-blocking stream + synchronize"};

#define CK(call)                                                                       \
  do {                                                                                 \
    CUresult e_ = (call);                                                              \
    if (e_ != CUDA_SUCCESS) {                                                          \
      const char *s_ = NULL;                                                           \
      coop__cu.cuGetErrorString(e_, &s_);                                              \
      fprintf(stderr, CB ": %s: CUDA error %d (%s)\n", #call, (int)e_, s_ ? s_ : "?"); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

static void usage(FILE *f) {
  fprintf(f, "usage: " CB
             " [options]\n"
             "One copy of BYTES between page-locked host memory (a registered memfd)\n"
             "and the GPU at a time: into and out of managed memory (prefetched to the\n"
             "GPU), managed memory advised to stay there, and device memory; on the\n"
             "legacy stream and on a non-blocking stream; warm (back to back) and\n"
             "cold (after a sleep); the GPU idle and beside a kernel that polls mapped\n"
             "host memory. Prints p50, p90 and max in us; CUDA only.\n"
             "  --bytes N      bytes a copy (default 278784, a 264 x 264 float matrix)\n"
             "  --copies N     copies timed per row (default 100)\n"
             "  --cold-us N    the sleep before each cold copy (default 16000)\n"
             "  --warm-us N    the rows warmed ahead: a warm-up this long before the\n"
             "                 cold copy (64 B from other pages, 64 B from the copy's\n"
             "                 own, the copy's whole host range; default 100)\n"
             "  --device N     CUDA device index (default 0)\n"
             "  --csv FILE     one line per row (default bench/out/copies.csv)\n"
             "  --help         this text\n");
}

static void parse(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
      {"bytes", 1, 0, 'b'}, {"copies", 1, 0, 'n'}, {"cold-us", 1, 0, 'c'}, {"device", 1, 0, 'd'},
      {"csv", 1, 0, 'o'},   {"help", 0, 0, 'h'},   {"warm-us", 1, 0, 'w'}, {0, 0, 0, 0}};
  const char *bad = inexact_option(argc, argv, lo);
  if (bad) bench_usage_error(CB, "unknown option %s", bad);
  *o = (struct opts){278784, 100, 16000, 100, 0, "bench/out/copies.csv"};
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) switch (c) {
      case 'b':
        o->bytes = (size_t)bench_parse_num(CB, "bytes", optarg, 4, 1L << 30);
        break;
      case 'n':
        o->copies = bench_parse_num(CB, "copies", optarg, 1, 100000);
        break;
      case 'c':
        o->cold_us = bench_parse_num(CB, "cold-us", optarg, 0, 10000000);
        break;
      case 'w':
        o->warm_us = bench_parse_num(CB, "warm-us", optarg, 0, 1000000);
        break;
      case 'd':
        o->device = bench_parse_num(CB, "device", optarg, 0, 63);
        break;
      case 'o':
        o->csv = optarg;
        break;
      case 'h':
        usage(stdout);
        exit(0);
      default:
        bench_usage_error(CB, "bad option");
    }
  if (optind < argc) bench_usage_error(CB, "unexpected argument %s", argv[optind]);
}

static int setup(struct gpu *g, const struct opts *o) {
  const char *why = coop__cuda_driver(0);
  if (!why && !coop__cuda_io()) why = "the driver lacks asynchronous copies";
  if (why) {
    fprintf(stderr, CB ": CUDA unavailable: %s\n", why);
    return 1;
  }
  CK(coop__cu.cuInit(0));
  CK(coop__cu.cuDeviceGet(&g->dev, (int)o->device));
  CK(coop__cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev));
  CK(coop__cu.cuCtxSetCurrent(g->ctx));
  g->hlen = (2 * o->bytes + 4095) & ~(size_t)4095;
  int fd = memfd_create("coop-bench-copies", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)g->hlen)) return perror(CB ": memfd"), 1;
  g->host = mmap(NULL, g->hlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (g->host == MAP_FAILED) return perror(CB ": mmap"), 1;
  memset(g->host, 1, g->hlen);
  CK(coop__cu.cuMemHostRegister(g->host, g->hlen, CU_MEMHOSTREGISTER_PORTABLE));
  CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = (int)g->dev};
  for (int k = 0; k < 2; k++) {
    CK(coop__cu.cuMemAllocManaged(&g->mem[k], o->bytes, CU_MEM_ATTACH_GLOBAL));
    if (k == 1)
      CK(coop__cu.cuMemAdvise(g->mem[k], o->bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu));
    CK(coop__cu.cuMemPrefetchAsync(g->mem[k], o->bytes, gpu, 0, NULL));
  }
  CK(coop__cu.cuMemAlloc(&g->mem[2], o->bytes));
  CK(coop__cu.cuStreamSynchronize(NULL));
  CK(coop__cu.cuStreamCreate(&g->lane, CU_STREAM_NON_BLOCKING));
  CK(coop__cu.cuStreamCreate(&g->spin_s, CU_STREAM_NON_BLOCKING));
  CK(coop__cu.cuModuleLoadData(&g->mod, spin_ptx));
  CK(coop__cu.cuModuleGetFunction(&g->spin, g->mod, "spin"));
  void *f = NULL;
  CK(coop__cu.cuMemHostAlloc(&f, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  g->flag = f;
  *g->flag = 0;
  void *w = NULL;
  CK(coop__cu.cuMemHostAlloc(&w, 4096, CU_MEMHOSTALLOC_PORTABLE));
  g->warm_host = w;
  CK(coop__cu.cuMemAlloc(&g->warm_dev, 4096));
  CK(coop__cu.cuMemAlloc(&g->scratch, o->bytes));
  return 0;
}

static CUresult copy_once(struct gpu *g, int way, CUdeviceptr d, size_t bytes) {
  CUresult e;
  switch (way) {
    case 0:
      return coop__cu.cuMemcpyHtoD(d, g->host, bytes);
    case 1:
      return coop__cu.cuMemcpyDtoH(g->host + bytes, d, bytes);
    case 2:
      e = coop__cu.cuMemcpyHtoDAsync(d, g->host, bytes, g->lane);
      return e == CUDA_SUCCESS ? coop__cu.cuStreamSynchronize(g->lane) : e;
    default:
      e = coop__cu.cuMemcpyDtoHAsync(g->host + bytes, d, bytes, g->lane);
      return e == CUDA_SUCCESS ? coop__cu.cuStreamSynchronize(g->lane) : e;
  }
}

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, us % 1000000 * 1000};
  while (nanosleep(&t, &t)) continue;
}

/* Warm-up w (warmups[]) for a copy whose host side is `host`. */
static CUresult warm_up(struct gpu *g, int w, const char *host, size_t bytes) {
  const char *src = w == 1 ? g->warm_host : host;
  CUdeviceptr dst = w == 3 ? g->scratch : g->warm_dev;
  CUresult e = coop__cu.cuMemcpyHtoDAsync(dst, src, w == 3 ? bytes : 64, g->lane);
  return e == CUDA_SUCCESS ? coop__cu.cuStreamSynchronize(g->lane) : e;
}

/* One row: o->copies copies of one kind, way and warmth. */
static int row(struct gpu *g, const struct opts *o, FILE *csv, int spinning, int cold, int kind,
               int way, int warm) {
  struct series s = {0};
  long ahead = warm && o->warm_us < o->cold_us ? o->warm_us : 0;
  for (long i = 0; i < o->copies; i++) {
    if (cold) sleep_us(o->cold_us - ahead);
    if (warm) {
      CK(warm_up(g, warm, way == 1 || way == 3 ? g->host + o->bytes : g->host, o->bytes));
      int64_t until = now_ns() + ahead * 1000; /* spun: a sleep this short overshoots */
      while (now_ns() < until) continue;
    }
    int64_t t0 = now_ns();
    CK(copy_once(g, way, g->mem[kind], o->bytes));
    push(&s, (double)(now_ns() - t0) / 1e3);
  }
  double p50 = quantile(&s, 0.5), p90 = quantile(&s, 0.9), mx = max_of(&s);
  printf("| %s | %s | %s | %s | %s | %.1f | %.1f | %.1f |\n", spinning ? "polling kernel" : "idle",
         cold ? "cold" : "warm", warmups[warm], ways[way], kinds[kind], p50, p90, mx);
  if (csv)
    fprintf(csv, "%s,%s,\"%s\",\"%s\",\"%s\",%zu,%ld,%.2f,%.2f,%.2f\n",
            spinning ? "polling" : "idle", cold ? "cold" : "warm", warmups[warm], ways[way],
            kinds[kind], o->bytes, o->copies, p50, p90, mx);
  series_free(&s);
  return 0;
}

int main(int argc, char **argv) {
  struct opts o;
  parse(argc, argv, &o);
  struct gpu g;
  memset(&g, 0, sizeof g);
  if (setup(&g, &o)) return 1;
  char name[256] = "?", date[64];
  coop__cu.cuDeviceGetName(name, (int)sizeof name, g.dev);
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  struct machine mc;
  machine_of(&mc);
  make_parent(o.csv);
  FILE *csv = fopen(o.csv, "w");
  if (!csv) fprintf(stderr, CB ": %s: cannot write; the table only\n", o.csv);
  printf(
      "machine: %s, %s, %s\ndevice: %s\ncommit: %s (at build time); run %s\n"
      "%zu bytes a copy, %ld copies a row, cold: %ld us of sleep before each;"
      " warmed: the warm-up %ld us before the copy\n\n"
      "| GPU | copy | warm-up | way | device side | p50 us | p90 us | max us |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
      mc.host, mc.arch, mc.cpu, name, COOP_BENCH_COMMIT, date, o.bytes, o.copies, o.cold_us,
      o.warm_us);
  if (csv)
    fprintf(csv,
            "# %s; %s; commit %s; "
            "%s\ngpu,copy,warmup,way,device_side,bytes,copies,p50_us,p90_us,max_us\n",
            mc.host, name, COOP_BENCH_COMMIT, date);
  int rc = 0;
  for (int spinning = 0; spinning < 2 && !rc; spinning++) {
    if (spinning) {
      void *args[] = {(void *)&g.flag};
      CK(coop__cu.cuLaunchKernel(g.spin, 1, 1, 1, 32, 1, 1, 0, g.spin_s, args, NULL));
    }
    for (int cold = 0; cold < 2 && !rc; cold++)
      for (int way = 0; way < 4 && !rc; way++)
        for (int kind = 0; kind < 3 && !rc; kind++)
          rc = row(&g, &o, csv, spinning, cold, kind, way, 0);
    /* cold copies warmed ahead, into device memory (coopd's device buffers) */
    for (int way = 2; way < 4 && !rc; way++)
      for (int w = 1; w < 4 && !rc; w++) rc = row(&g, &o, csv, spinning, 1, 2, way, w);
    if (spinning) {
      *g.flag = 1;
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
      CK(coop__cu.cuStreamSynchronize(g.spin_s));
    }
  }
  if (csv) fclose(csv);
  return rc;
}
