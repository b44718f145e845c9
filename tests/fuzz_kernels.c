/*
 * fuzz_kernels.c: every shipped kernel under hostile submissions, in process.
 *
 * A client of coopd controls a job's scalars, its buffer sizes and its
 * buffer contents. The kernels index through bounds-checked views
 * (megakernel/device/api.h), so whatever the client sends, a job must stay
 * inside its own buffers: an out-of-range index lands in the sink and the
 * task reports `fault`. This tool checks exactly that, for every kernel file
 * with a `//@coop name=... kind=... args=...` first line in
 * kernels/ and kernels/apps/ (and in --extra-kernels
 * directories: a kernel there replaces a shipped one of the same name, so an
 * old or deliberately unchecked version runs against the same generator),
 * all registered in ONE megakernel:
 *
 *   - batches of 1..3 concurrent tasks, each a kernel (round robin for the
 *     first, random for the others) with random groups (1..workers; now and
 *     then 0, too many, or the wrong cooperative flag: those must be
 *     refused); either synthetic (adversarial buffer sizes, 1, 3, 4, 64
 *     bytes, a few KiB or matching a size scalar; contents zero, random
 *     words, garbage indices, CSR-like runs, floats; scalars by role, below)
 *     or plausible (a real task of the application, app.h's prepare on its
 *     test inputs, run as it is, when it must finish without a fault, or
 *     mutated: a buffer truncated, words corrupted, a scalar replaced);
 *   - tasks are classified by the kernel's `//@coop require` rules, checked
 *     as coopd checks them (daemon/require.c): most are generated again until
 *     coopd would admit them, --beyond percent (default 25) go past them, as
 *     an in-process caller may: the views must hold there too;
 *   - "victim" buffers with a known pattern between all the fuzzed buffers,
 *     plus one for the whole run;
 *   - every task is waited for with a timeout, then cancelled (cooperative
 *     kernels leave at their next primitive, render polls its cancel flag);
 *   - after each batch: every victim unchanged, coop_rt_free of every
 *     buffer 0 (no guard zone overwritten).
 *
 * Argument roles. Loop-count scalars must stay small, or a run would not end
 * (a kernel is cancelled only at its primitives and where it polls: the
 * shipped ones poll in their data-driven loops, docs/kernels.md
 * "Cancellation inside a step", a test kernel may not). The roles of the
 * shipped kernels are in `profiles` below (a kernel not listed gets roles
 * from its argument names). Some hazards are denial of service, not memory
 * safety, and the default generator steers around the worst of them (--wild
 * does not):
 *   - a step whose loop bound comes from buffer data (an edge range
 *     row[v]..row[v+1], a worklist size, a node's depth) can run up to 2^32
 *     iterations, and an out-of-range read returns whatever the sink last
 *     received (any value, written by any job);
 *   - the work-stealing kernels (octree, game) keep mutexes, queue heads and
 *     pending counts in client buffers: a nonzero lock word spins until
 *     the task is cancelled, and pending counts that never reach 0 keep
 *     it running until then; so their control buffers stay as the
 *     application made them (zero in synthetic tasks) and their mode stays
 *     nonzero when mutated.
 * A task that does not end even after its cancellation is reported as stuck
 * (saying whether coopd would have admitted it); the run goes on in a fresh
 * process (the megakernel cannot be stopped), and a kernel stuck twice
 * (--quarantine N) is left out for the rest of the run. Stuck tasks fail the run only with
 * --strict, and then only those coopd would admit.
 *
 * The megakernel runs in a child process: a kernel that is not memory safe
 * may crash it. A crash is a failure; its kernel is left out (when several
 * tasks ran, the rest of the run has one task per batch to find it). Exit
 * status: 0 when every batch passed; 1 on a guard breach, a changed victim,
 * a crash, a valid task that faulted or a bad submission that was not
 * refused; 2 on a usage or setup error. A failure names its batch: --seed S
 * --batch B --iters 1 generates it again.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "coop_rt.h"
#include "require.h" /* coopd's admission rules (daemon/require.c) */

#ifndef COOP_SOURCE_DIR
#define COOP_SOURCE_DIR "."
#endif

#define MAX_KERNELS 48
#define MAX_DIRS 8
#define MAX_BATCH 4
#define MAX_INPUTS 4
#define EXIT_STUCK 3
#define EXIT_SETUP 2
#define MAX_RULES 16

/* ------------------------------------------------------------ options */

static struct {
  uint64_t seed;
  uint64_t iters; /* batches */
  double seconds; /* > 0: run until then (iters ignored unless given too) */
  int iters_given;
  uint64_t first; /* first batch index (--batch B replays batch B) */
  const char *dirs[MAX_DIRS];
  int ndirs;
  const char *extra[MAX_DIRS];
  int nextra;
  const char *only;
  unsigned concurrency;
  int soft_ms, plausible_ms, grace_ms;
  int wild, strict, verbose, nofork;
  unsigned beyond_pct; /* tasks that break the require rules on purpose */
  unsigned quarantine; /* stuck tasks of a kernel before it is left out */
  double time_cap;     /* default run: stop starting batches after this */
} opt;

/* ------------------------------------------------------------ kernels */

enum { T_U32 = 1, T_I32, T_U64, T_I64, T_F32, T_F64, T_BUF };
static const char *const type_names[] = {NULL, "u32", "i32", "u64", "i64", "f32", "f64", "buf"};

struct kernel {
  char name[64];
  char path[PATH_MAX];
  int coop;
  unsigned nargs;
  uint8_t type[COOP_RT_MAX_ARGS];
  char argname[COOP_RT_MAX_ARGS][32];
  /* roles, one per argument. Scalars: p free (any value, 0, 2^31,
   * 0xffffffff), m mode (any), M mode, nonzero unless the app's own,
   * n size (<= sizecap, around the buffers' element counts), l loop count
   * (0..loopcap), L loop count (1..loopcap), k kept (the app's value; in a
   * synthetic task: the group count). Buffers: d data (any words), x
   * indices (words <= a bound around the buffer sizes), z control (zero
   * in a synthetic task, the app's contents otherwise; never truncated or
   * corrupted). */
  char role[COOP_RT_MAX_ARGS + 1];
  uint32_t sizecap;
  unsigned loopcap;
  int plausible_only;               /* synthetic tasks would spin: plausible ones only */
  struct req_rule rules[MAX_RULES]; /* the //@coop require lines, as coopd checks them */
  unsigned nrules;
  char *src;
  const struct coop_app *app;
};

static struct kernel kernels[MAX_KERNELS];
static int nkernels;

static const struct profile {
  const char *kernel, *roles;
  uint32_t sizecap;
  unsigned loopcap;
  int plausible_only;
} profiles[] = {
    /* data, n, rounds */
    {"sweep", "dnl", 1u << 14, 3, 0},
    /* a, b, c, n, reps: n^3 work per rep */
    {"render", "dddnl", 80, 2, 0},
    /* mode, row, col, level, wl0, wl1, size[2], n */
    {"bfs", "mxxdxxxn", 4096, 0, 0},
    /* mode, row, col, w, dist, wl0, wl1, size[2], stamp, n */
    {"lsssp", "mxxddxxxdn", 4096, 0, 0},
    /* mode, row, col, dist, sigma, delta, bc, flag, n, S (batches), B (batch size), scale */
    {"bc", "mxxddddxnlLd", 2048, 4, 0},
    /* mode, row, col, prio, colour, cand, flag[2], n */
    {"color", "mxxddxxn", 4096, 0, 0},
    {"mis", "mxxddxxn", 4096, 0, 0},
    /* mode, in_row, in_src, in_w, d, nd, flag[2], n */
    {"psssp", "mxxddxxn", 4096, 0, 0},
    /* mode, pts, perm0, perm1, out, nodes, ctl, items, n, thresh, maxdepth, nq, qcap, nodecap:
     * queue and node capacities kept (past the buffers, a task id or a node record would
     * come from the sink, and a node's depth bounds a loop) */
    {"octree", "Mdxxdzzznplkkk", 4096, 6, 0},
    /* mode, nodes, acc, result, ctl, items, depth, split, nq, qcap, nodecap: node records
     * hold a ply, and depth - ply below 0 is a search of unbounded depth (also past the
     * explicit stack of GAME_MAX_DEPTH + 1 entries): plausible tasks only */
    {"game", "Mzzdzzllkkk", 4096, 5, 1},
};

static const char *const loop_words[] = {"reps",  "rounds", "iters",  "iterations", "steps",
                                         "depth", "levels", "loops",  "passes",     "maxdepth",
                                         "batch", "times",  "repeat", "count",      NULL};

static int is_loop_name(const char *s) {
  for (int i = 0; loop_words[i]; i++)
    if (strstr(s, loop_words[i])) return 1;
  return 0;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_kernels: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(EXIT_SETUP);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  for (size_t r; b && (r = fread(b + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) {
      char *q = realloc(b, 2 * cap + 1);
      if (!q) {
        free(b);
        b = NULL;
        break;
      }
      b = q;
      cap *= 2;
    }
  }
  fclose(f);
  if (b) b[n] = '\0';
  return b;
}

/* The first line's directive; 0, or -1 (not a kernel file: skipped), with
 * a message for one that starts //@coop but does not parse. */
static int parse_kernel(struct kernel *k, const char *src, char *why, size_t whylen) {
  if (strncmp(src, "//@coop ", 8)) return snprintf(why, whylen, "no //@coop first line"), -1;
  char line[1024];
  size_t l = strcspn(src, "\r\n");
  if (l >= sizeof line) return snprintf(why, whylen, "directive too long"), -1;
  memcpy(line, src + 8, l - 8);
  line[l - 8] = '\0';
  int have = 0;
  for (char *s1 = NULL, *t = strtok_r(line, " \t", &s1); t; t = strtok_r(NULL, " \t", &s1)) {
    if (!strncmp(t, "name=", 5)) {
      snprintf(k->name, sizeof k->name, "%s", t + 5);
      have |= 1;
    } else if (!strncmp(t, "kind=", 5)) {
      k->coop = !strcmp(t + 5, "cooperative");
      if (!k->coop && strcmp(t + 5, "noncooperative"))
        return snprintf(why, whylen, "bad kind %s", t + 5), -1;
      have |= 2;
    } else if (!strncmp(t, "args=", 5)) {
      k->nargs = 0;
      for (char *s2 = NULL, *a = strtok_r(t + 5, ",", &s2); a; a = strtok_r(NULL, ",", &s2)) {
        if (k->nargs == COOP_RT_MAX_ARGS) return snprintf(why, whylen, "too many arguments"), -1;
        char *colon = strchr(a, ':');
        k->argname[k->nargs][0] = '\0';
        if (colon) {
          *colon = '\0';
          snprintf(k->argname[k->nargs], sizeof k->argname[0], "%s", a);
          a = colon + 1;
        }
        if (!strncmp(a, "buf<", 4)) a[3] = '\0'; /* an element type: buf<f32> */
        unsigned ty = 0;
        for (unsigned i = 1; i <= T_BUF; i++)
          if (!strcmp(a, type_names[i])) ty = i;
        if (!ty) return snprintf(why, whylen, "unknown argument type %s", a), -1;
        k->type[k->nargs++] = (uint8_t)ty;
      }
      have |= 4;
    }
  }
  if (have != 7) return snprintf(why, whylen, "the directive needs name=, kind= and args="), -1;
  return 0;
}

/* The lines after the first that start with "//@coop require ". */
static int parse_rules(struct kernel *k, const char *src, char *why, size_t whylen) {
  for (const char *line = strchr(src, '\n'); line; line = strchr(line, '\n')) {
    line++;
    if (strncmp(line, "//@coop require ", 16)) continue;
    char text[REQ_MAX_TEXT + 1];
    size_t l = strcspn(line + 16, "\r\n");
    if (l > REQ_MAX_TEXT || k->nrules == MAX_RULES)
      return snprintf(why, whylen, "rule too long, or too many"), -1;
    memcpy(text, line + 16, l);
    text[l] = '\0';
    char err[200];
    if (req_compile(&k->rules[k->nrules], text, (const char(*)[32])k->argname, k->type, k->nargs,
                    err, sizeof err))
      return snprintf(why, whylen, "require %.*s: %.*s", 80, text, 100, err), -1;
    k->nrules++;
  }
  return 0;
}

static void assign_roles(struct kernel *k) {
  k->sizecap = 4096;
  k->loopcap = 3;
  k->plausible_only = 0;
  const struct profile *p = NULL;
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
    if (!strcmp(profiles[i].kernel, k->name)) p = &profiles[i];
  if (p && strlen(p->roles) == k->nargs) {
    int ok = 1;
    for (unsigned i = 0; i < k->nargs; i++)
      ok &= (k->type[i] == T_BUF) == (strchr("dxz", p->roles[i]) != NULL);
    if (ok) {
      snprintf(k->role, sizeof k->role, "%s", p->roles);
      k->sizecap = p->sizecap;
      k->loopcap = p->loopcap ? p->loopcap : 3;
      k->plausible_only = p->plausible_only;
      return;
    }
  }
  if (p)
    printf("note: %s: the signature no longer matches the profile; roles from argument names\n",
           k->name);
  for (unsigned i = 0; i < k->nargs; i++) {
    const char *n = k->argname[i];
    if (k->type[i] == T_BUF)
      k->role[i] = 'x';
    else if (!strcmp(n, "mode"))
      k->role[i] = 'm';
    else if (is_loop_name(n))
      k->role[i] = 'l';
    else
      k->role[i] = 'n';
  }
  k->role[k->nargs] = '\0';
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_dir(const char *dir, int extra) {
  DIR *d = opendir(dir);
  if (!d) die("%s: %s", dir, strerror(errno));
  char *names[256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    size_t l = strlen(e->d_name);
    if (l > 3 && !strcmp(e->d_name + l - 3, ".cl")) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  for (int i = 0; i < n; i++) {
    struct kernel k;
    memset(&k, 0, sizeof k);
    snprintf(k.path, sizeof k.path, "%s/%s", dir, names[i]);
    free(names[i]);
    char *src = read_all(k.path), why[200];
    if (!src) die("%s: %s", k.path, strerror(errno));
    if (parse_kernel(&k, src, why, sizeof why)) {
      if (!strncmp(src, "//@coop ", 8)) die("%s: %s", k.path, why);
      free(src); /* not a coopd kernel file (no directive) */
      continue;
    }
    if (parse_rules(&k, src, why, sizeof why)) die("%s: %s", k.path, why);
    k.src = src;
    assign_roles(&k);
    int at = nkernels;
    for (int j = 0; j < nkernels; j++)
      if (!strcmp(kernels[j].name, k.name)) at = j;
    if (at < nkernels) {
      if (!extra) die("kernel %s defined twice (%s, %s)", k.name, kernels[at].path, k.path);
      printf("note: %s from %s replaces %s\n", k.name, k.path, kernels[at].path);
      free(kernels[at].src);
    } else if (nkernels == MAX_KERNELS) {
      die("more than %d kernels", MAX_KERNELS);
    } else {
      nkernels++;
    }
    kernels[at] = k;
  }
}

static int selected(const char *name) {
  if (!opt.only) return 1;
  size_t l = strlen(name);
  for (const char *p = opt.only; *p;) {
    size_t m = strcspn(p, ",");
    if (m == l && !strncmp(p, name, l)) return 1;
    p += m + (p[m] == ',');
  }
  return 0;
}

/* ------------------------------------------------------------ shared state */

struct kstats {
  uint64_t tasks, synthetic, plausible, clean, beyond, done, done_fault, cancelled, cancelled_fault,
      refused, refused_expected, stuck, stuck_admitted, crash, breach, victim, clean_fault,
      not_refused;
};

struct shared {
  uint64_t next_batch; /* the first batch not finished */
  int inflight[MAX_BATCH], ninflight;
  int stuck[MAX_BATCH], nstuck;
  int quarantined[MAX_KERNELS];
  struct kstats ks[MAX_KERNELS];
  uint64_t batches, victim_events, breach_events;
  int failed;
  int solo; /* after a crash among several tasks: one task per batch, to name the kernel */
  int stuck_admitted; /* the last stuck batch had a task coopd would admit */
  uint64_t crashes;
};

static struct shared *sh;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ random */

struct rng {
  uint64_t s;
};

static uint64_t rnext(struct rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t r32(struct rng *r) { return (uint32_t)(rnext(r) >> 32); }
static uint32_t rbelow(struct rng *r, uint32_t n) { return n ? (uint32_t)(rnext(r) % n) : 0; }
static int rpct(struct rng *r, unsigned pct) { return rbelow(r, 100) < pct; }

static uint32_t victim_word(uint64_t key, size_t i) {
  struct rng r = {key ^ (uint64_t)i * 0xd1b54a32d192ed03ull};
  return r32(&r);
}

/* ------------------------------------------------------------ task specs */

struct tspec {
  int k; /* index into kernels[] */
  unsigned groups;
  int coop, query;
  int expect_refusal;
  int plausible, clean;
  int admitted; /* coopd would run it: the kernel's require rules hold */
  unsigned nargs;
  uint64_t scalar[COOP_RT_MAX_ARGS];
  size_t size[COOP_RT_MAX_ARGS];
  uint8_t *init[COOP_RT_MAX_ARGS];
  /* run time */
  void *buf[COOP_RT_MAX_ARGS];
  coop_task_id id;
  int submitted, final;
  struct coop_rt_task_info info;
};

static unsigned workers;

static void spec_free(struct tspec *t) {
  for (unsigned i = 0; i < t->nargs; i++) free(t->init[i]);
  memset(t->init, 0, sizeof t->init);
}

static void describe(const struct tspec *t, char *out, size_t len) {
  const struct kernel *k = &kernels[t->k];
  int o = snprintf(out, len, "%s %s%s%s groups=%u%s%s args:", k->name,
                   t->plausible ? "plausible" : "synthetic", t->clean ? " (unmutated)" : "",
                   t->admitted ? "" : " (past the rules)", t->groups, t->coop ? " coop" : "",
                   t->query ? " query" : "");
  for (unsigned i = 0; i < t->nargs && o > 0 && (size_t)o < len; i++) {
    const char *n = k->argname[i][0] ? k->argname[i] : "";
    if (k->type[i] == T_BUF)
      o += snprintf(out + o, len - (size_t)o, " %s[%zuB]", n, t->size[i]);
    else
      o += snprintf(out + o, len - (size_t)o, " %s%s0x%" PRIx64, n, *n ? "=" : "", t->scalar[i]);
  }
}

/* Scalars by role (struct kernel). base: the task's size scale; sizes: the
 * byte sizes of its nb buffers; groups: the task's group count. */
static uint64_t pick_scalar(struct rng *r, const struct kernel *k, unsigned i, char role,
                            uint32_t base, const size_t *sizes, unsigned nb, unsigned groups) {
  int wide = k->type[i] == T_U64 || k->type[i] == T_I64 || k->type[i] == T_F64;
  if (opt.wild && role != 'k') role = 'p';
  switch (role) {
    case 'm':
      return rpct(r, 45) ? 0 : rpct(r, 80) ? 1 : r32(r);
    case 'M':
      return rpct(r, 80) ? 1 : (r32(r) | 1u);
    case 'l':
    case 'L': {
      unsigned lo = role == 'L' ? 1 : 0;
      return lo + rbelow(r, k->loopcap - lo + 1);
    }
    case 'k':
      return groups;
    case 'n': {
      uint64_t v;
      uint32_t e = nb ? (uint32_t)(sizes[rbelow(r, nb)] / 4) : base;
      switch (rbelow(r, 10)) {
        case 0:
          v = 0;
          break;
        case 1:
          v = 1 + rbelow(r, 3);
          break;
        case 2:
          v = base;
          break;
        case 3:
          v = base + 1;
          break;
        case 4:
          v = e;
          break;
        case 5:
          v = e ? e - 1 : 0;
          break;
        case 6:
          v = e + 1 + rbelow(r, 8);
          break;
        case 7:
          v = 2ull * e + rbelow(r, 64);
          break;
        case 8:
          v = rbelow(r, 4 * e + 64);
          break;
        default:
          v = rbelow(r, k->sizecap + 1);
          break;
      }
      return v > k->sizecap ? k->sizecap : v;
    }
    default: { /* p */
      static const uint64_t special[] = {0,          1,          2,          3,
                                         0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
      switch (rbelow(r, 6)) {
        case 0:
        case 1:
          return special[rbelow(r, 8)];
        case 2:
          return rbelow(r, 65);
        case 3:
          return base + rbelow(r, 3);
        case 4:
          return wide ? rnext(r) : r32(r);
        default:
          return wide && rpct(r, 50) ? (1ull << 63) | rbelow(r, 4) : r32(r);
      }
    }
  }
}

/* Buffer contents by role. bound: the largest "index" value for x. */
static void fill(struct rng *r, uint8_t *b, size_t size, char role, uint32_t bound) {
  size_t nw = size / 4;
  uint32_t *w = malloc((nw + 1) * 4);
  if (!w) return;
  if (opt.wild && role != 'z') role = 'd';
  unsigned mode = role == 'z' ? 0 : role == 'x' ? rbelow(r, 6) : rbelow(r, 11);
  uint32_t c = rbelow(r, bound + 1), acc = rbelow(r, 4);
  for (size_t i = 0; i <= nw; i++) {
    float f;
    switch (mode) {
      case 0: /* zero */
        w[i] = 0;
        break;
      case 1: /* garbage indices */
        w[i] = rbelow(r, bound + 1);
        break;
      case 2: /* CSR-like: non-decreasing offsets */
        w[i] = acc;
        acc += rbelow(r, 5);
        if (acc > bound) acc = bound;
        break;
      case 3: /* identity */
        w[i] = (uint32_t)i;
        break;
      case 4: /* one value */
        w[i] = c;
        break;
      case 5: /* nearly valid */
        w[i] = rpct(r, 90) ? (uint32_t)i : rbelow(r, bound + 1);
        break;
      case 6: /* any words */
      case 7:
        w[i] = r32(r);
        break;
      case 8: /* floats in [0, 1) */
        f = (float)r32(r) / 4294967296.0f;
        memcpy(&w[i], &f, 4);
        break;
      case 9: /* floats in (-1e4, 1e4) */
        f = ((float)r32(r) / 2147483648.0f - 1.0f) * 1e4f;
        memcpy(&w[i], &f, 4);
        break;
      default:
        w[i] = 0xffffffffu;
        break;
    }
  }
  memcpy(b, w, size); /* a tail of 1..3 bytes takes the next word's first bytes */
  free(w);
}

static size_t pick_size(struct rng *r, uint32_t base) {
  size_t s;
  switch (rbelow(r, 14)) {
    case 0:
      s = 1;
      break;
    case 1:
      s = 3;
      break;
    case 2:
      s = 4;
      break;
    case 3:
      s = 8;
      break;
    case 4:
      s = 64;
      break;
    case 5:
      s = 4ull * base;
      break;
    case 6:
      s = 4ull * (base + 1);
      break;
    case 7:
      s = 4ull * base - 1;
      break;
    case 8:
      s = 12ull * base;
      break;
    case 9:
      s = 4ull * base * base;
      break;
    case 10:
      s = 1 + rbelow(r, 4096);
      break;
    case 11:
      s = 1 + rbelow(r, 16384);
      break;
    default:
      s = 4ull * base + rbelow(r, 9) * 4;
      break;
  }
  if (s == 0 || s > (1u << 16)) s = 1 + rbelow(r, 256);
  return s;
}

static unsigned pick_groups(struct rng *r, struct tspec *t) {
  unsigned g = 1 + rbelow(r, workers);
  if (rpct(r, 2)) {
    t->expect_refusal = 1;
    return rpct(r, 50) ? 0 : workers + 1 + rbelow(r, 4);
  }
  return g;
}

static void synthetic(struct rng *r, struct tspec *t) {
  const struct kernel *k = &kernels[t->k];
  static const uint32_t bases[] = {0, 1, 2, 3, 5, 7, 16, 31, 64, 100, 255, 256, 1000};
  uint32_t base = bases[rbelow(r, sizeof bases / sizeof bases[0])];
  if (base > k->sizecap) base = k->sizecap;
  size_t sizes[COOP_RT_MAX_ARGS];
  unsigned nb = 0;
  size_t maxw = base;
  for (unsigned i = 0; i < k->nargs; i++)
    if (k->type[i] == T_BUF) {
      t->size[i] = pick_size(r, base);
      sizes[nb++] = t->size[i];
      if (t->size[i] / 4 > maxw) maxw = t->size[i] / 4;
    }
  uint32_t bound = (uint32_t)(2 * maxw + 8);
  for (unsigned i = 0; i < k->nargs; i++) {
    if (k->type[i] == T_BUF) {
      t->init[i] = calloc(1, t->size[i]);
      if (t->init[i]) fill(r, t->init[i], t->size[i], k->role[i], bound);
    } else {
      t->scalar[i] = pick_scalar(r, k, i, k->role[i], base, sizes, nb, t->groups);
    }
  }
}

/* Test inputs of the applications, per kernel, made once per process. */
static struct coop_app_input inputs[MAX_KERNELS][MAX_INPUTS];
static int ninputs[MAX_KERNELS];

static int plausible(struct rng *r, struct tspec *t) {
  struct kernel *k = &kernels[t->k];
  const struct coop_app *a = k->app;
  if (!a) return -1;
  if (ninputs[t->k] == 0) {
    int n = coop_app_input_count(a, 0);
    for (int i = 0; i < n && i < MAX_INPUTS; i++)
      if (coop_app_input(a, (unsigned)i, 0, &inputs[t->k][ninputs[t->k]]) == 0) ninputs[t->k]++;
    if (ninputs[t->k] == 0) ninputs[t->k] = -1;
  }
  if (ninputs[t->k] < 0) return -1;
  struct coop_app_input in = inputs[t->k][rbelow(r, (uint32_t)ninputs[t->k])];
  /* small enough for a CPU device: fewer points, a shallower search */
  if (in.kind == COOP_INPUT_POINTS && in.count > 3000) in.count = 500 + rbelow(r, 2500);
  if (in.kind == COOP_INPUT_GAME) in.param = 2 + rbelow(r, 4);
  struct coop_app_opts o = {
      .groups = t->groups,
      .mode = rpct(r, 30) ? COOP_APP_MODE_ORIGINAL : COOP_APP_MODE_COOPERATIVE,
      .query_barrier = t->query,
      .timeout_ms = -1};
  struct coop_app_task at;
  if (coop_app_task_prepare(&at, a, &in, &o, t->groups ? t->groups : 1)) return -1;
  int ok = at.nargs == k->nargs;
  for (unsigned i = 0; ok && i < at.nargs; i++) {
    ok = at.arg[i].buf == (k->type[i] == T_BUF);
    if (!ok) break;
    if (at.arg[i].buf) {
      t->size[i] = at.arg[i].size;
      t->init[i] = calloc(1, t->size[i]);
      if (!t->init[i]) ok = 0;
      if (ok && at.arg[i].init_len) memcpy(t->init[i], at.arg[i].init, at.arg[i].init_len);
    } else {
      t->scalar[i] = at.arg[i].value;
    }
  }
  coop_app_task_free(&at);
  if (!ok) {
    spec_free(t);
    return -1;
  }
  t->plausible = 1;
  t->clean = rpct(r, 30) && !t->expect_refusal;
  if (t->clean) return 0;
  /* mutations */
  size_t sizes[COOP_RT_MAX_ARGS];
  unsigned nb = 0;
  size_t maxw = 0;
  for (unsigned i = 0; i < k->nargs; i++)
    if (k->type[i] == T_BUF) {
      sizes[nb++] = t->size[i];
      if (t->size[i] / 4 > maxw) maxw = t->size[i] / 4;
    }
  uint32_t bound = (uint32_t)(2 * maxw + 8), base = (uint32_t)(maxw > 4096 ? 4096 : maxw);
  unsigned nmut = 1 + rbelow(r, 3);
  for (unsigned m = 0; m < nmut; m++) {
    unsigned i = rbelow(r, k->nargs);
    char role = opt.wild ? (k->type[i] == T_BUF ? 'd' : 'p') : k->role[i];
    if (role == 'z' || role == 'k') continue;
    if (k->type[i] != T_BUF) {
      t->scalar[i] = pick_scalar(r, k, i, role, base, sizes, nb, t->groups);
    } else if (rpct(r, 50)) { /* truncate */
      static const size_t small[] = {1, 3, 4, 8, 64};
      size_t s = rpct(r, 40) ? small[rbelow(r, 5)] : 1 + rbelow(r, (uint32_t)t->size[i]);
      if (s < t->size[i]) t->size[i] = s;
    } else { /* corrupt words */
      size_t nw = t->size[i] / 4;
      unsigned nc = 1 + rbelow(r, 8);
      for (unsigned c = 0; c < nc && nw; c++) {
        uint32_t v = role == 'x' ? rbelow(r, bound + 1) : r32(r);
        memcpy(t->init[i] + 4 * rbelow(r, (uint32_t)nw), &v, 4);
      }
    }
  }
  /* mode M: nonzero once anything else was changed (see the top of the file) */
  for (unsigned i = 0; i < k->nargs; i++)
    if (k->role[i] == 'M' && t->scalar[i] == 0 && !opt.wild) t->scalar[i] = 1;
  return 0;
}

/* ------------------------------------------------------------ the child */

static coop_rt *rt;
static int kidx[MAX_KERNELS]; /* kernels[i] -> rt kernel index, -1 if not registered */
static int active[MAX_KERNELS], nactive;

struct victim {
  uint32_t *p;
  size_t size;
  uint64_t key;
  int left, right; /* buffer (task * 16 + arg) on each side, -1 none */
};

static void stat_fail(void) { sh->failed = 1; }

static int admitted(const struct tspec *t) {
  const struct kernel *k = &kernels[t->k];
  uint64_t lens[COOP_RT_MAX_ARGS] = {0};
  for (unsigned i = 0; i < k->nargs; i++)
    if (k->type[i] == T_BUF) lens[i] = t->size[i];
  char why[256];
  for (unsigned i = 0; i < k->nrules; i++)
    if (req_check(&k->rules[i], (const char(*)[32])k->argname, k->type, t->scalar, lens, why,
                  sizeof why))
      return 0;
  return 1;
}

/* Most tasks are what coopd would admit (the kernel's require rules hold:
 * generated again until they do); the others go past the rules, as an
 * in-process caller may: the views must hold there too. */
static void make_task(struct rng *r, struct tspec *t, int k) {
  struct kernel *kk = &kernels[k];
  int beyond = opt.wild || rpct(r, opt.beyond_pct);
  for (int attempt = 0; attempt < 64; attempt++) {
    if (attempt) spec_free(t);
    memset(t, 0, sizeof *t);
    t->k = k;
    t->nargs = kk->nargs;
    t->coop = kk->coop;
    t->groups = pick_groups(r, t);
    if (rpct(r, 1)) { /* the wrong kind: refused */
      t->coop = !t->coop;
      t->expect_refusal = 1;
    }
    t->query = t->coop && rpct(r, 30);
    int want_plausible = kk->app && (kk->plausible_only || rpct(r, 40));
    if (!(want_plausible && plausible(r, t) == 0)) synthetic(r, t);
    t->admitted = admitted(t);
    if (t->admitted || beyond) break;
  }
}

static void print_task(const char *what, const struct tspec *t, uint64_t batch) {
  char d[1024];
  describe(t, d, sizeof d);
  printf("%s: batch %" PRIu64 " (--seed %" PRIu64 " --batch %" PRIu64 "): %s\n", what, batch,
         opt.seed, batch, d);
}

static void run_batch(uint64_t b, uint32_t *keep, size_t keep_size, uint64_t keep_key) {
  struct rng r = {opt.seed * 0x2545f4914f6cdd1dull ^ (b + 1) * 0x9e3779b97f4a7c15ull};
  rnext(&r);
  unsigned n = 1;
  if (opt.concurrency > 1 && rpct(&r, 50)) n = 2 + rbelow(&r, opt.concurrency - 1);
  if (sh->solo) n = 1;
  struct tspec ts[MAX_BATCH];
  sh->ninflight = 0;
  for (unsigned i = 0; i < n; i++) {
    int k = i == 0 ? active[b % (uint64_t)nactive] : active[rbelow(&r, (uint32_t)nactive)];
    make_task(&r, &ts[i], k);
    sh->inflight[sh->ninflight++] = k;
  }
  /* the layout: victim, buffer, victim, buffer, ..., victim */
  struct victim vs[MAX_BATCH * COOP_RT_MAX_ARGS + 1];
  unsigned nv = 0;
  int ok = 1, prev = -1;
  for (unsigned i = 0; i < n && ok; i++)
    for (unsigned a = 0; a < ts[i].nargs && ok; a++) {
      if (kernels[ts[i].k].type[a] != T_BUF) continue;
      struct victim *v = &vs[nv];
      v->size = 64 + 4 * rbelow(&r, 256);
      v->key = rnext(&r);
      v->left = prev;
      v->right = (int)(i * 16 + a);
      v->p = coop_rt_alloc(rt, v->size);
      if (!v->p) {
        ok = 0;
        break;
      }
      for (size_t w = 0; w < v->size / 4; w++) v->p[w] = victim_word(v->key, w);
      nv++;
      ts[i].buf[a] = coop_rt_alloc(rt, ts[i].size[a]);
      if (!ts[i].buf[a]) {
        ok = 0;
        break;
      }
      if (ts[i].init[a]) memcpy(ts[i].buf[a], ts[i].init[a], ts[i].size[a]);
      prev = (int)(i * 16 + a);
    }
  if (ok && prev >= 0) {
    struct victim *v = &vs[nv];
    v->size = 64 + 4 * rbelow(&r, 256);
    v->key = rnext(&r);
    v->left = prev;
    v->right = -1;
    v->p = coop_rt_alloc(rt, v->size);
    if (v->p) {
      for (size_t w = 0; w < v->size / 4; w++) v->p[w] = victim_word(v->key, w);
      nv++;
    } else {
      ok = 0;
    }
  }
  if (!ok) {
    printf("batch %" PRIu64 ": arena full, skipped\n", b);
  }
  /* submit */
  double t0 = now_s(), limit[MAX_BATCH] = {0};
  for (unsigned i = 0; i < n && ok; i++) {
    struct tspec *t = &ts[i];
    struct kernel *k = &kernels[t->k];
    struct coop_rt_task_desc d = {.kernel = kidx[t->k],
                                  .groups = t->groups,
                                  .cooperative = t->coop,
                                  .query_barrier = t->query,
                                  .nargs = t->nargs};
    for (unsigned a = 0; a < t->nargs; a++)
      d.args[a] = k->type[a] == T_BUF ? coop_rt_buf_arg(rt, t->buf[a]) : t->scalar[a];
    int rc = coop_rt_submit(rt, &d, &t->id);
    if (rc) {
      print_task("submit failed", t, b);
      printf("  %s\n", coop_strerror(rc));
      stat_fail();
      continue;
    }
    t->submitted = 1;
    struct kstats *s = &sh->ks[t->k];
    s->tasks++;
    if (t->plausible)
      s->plausible++;
    else
      s->synthetic++;
    if (t->clean) s->clean++;
    if (!t->admitted) s->beyond++;
    /* an unmutated task must finish; a mutated one may well never end */
    limit[i] = t0 + (t->clean       ? opt.plausible_ms
                     : t->plausible ? 4 * opt.soft_ms
                                    : opt.soft_ms) /
                        1000.0;
    if (opt.verbose) print_task("task", t, b);
  }
  /* wait: each task until its deadline (the shortest first), then cancel it;
   * then the grace period for the cancelled ones */
  for (int phase = 0; phase < 2; phase++) {
    double grace_end = now_s() + opt.grace_ms / 1000.0;
    int waited[MAX_BATCH] = {0};
    for (unsigned done = 0; done < n; done++) {
      int i = -1;
      for (unsigned j = 0; j < n; j++)
        if (ts[j].submitted && !ts[j].final && !waited[j] && (i < 0 || limit[j] < limit[i]))
          i = (int)j;
      if (i < 0) break;
      struct tspec *t = &ts[i];
      waited[i] = 1;
      double left = (phase == 0 ? limit[i] : grace_end) - now_s();
      if (coop_rt_wait(rt, t->id, left > 0 ? (int)(left * 1000) + 1 : 0) == 0)
        t->final = 1;
      else if (phase == 0)
        coop_rt_cancel(rt, t->id);
    }
    int pending = 0;
    for (unsigned i = 0; i < n; i++) pending |= ts[i].submitted && !ts[i].final;
    if (!pending) break;
    if (phase == 1) { /* stuck: this process cannot go on */
      sh->nstuck = 0;
      sh->stuck_admitted = 0;
      for (unsigned i = 0; i < n; i++)
        if (ts[i].submitted && !ts[i].final) {
          print_task(ts[i].admitted ? "STUCK (not finished after cancel; coopd would admit it)"
                                    : "STUCK (not finished after cancel; past the require rules)",
                     &ts[i], b);
          sh->ks[ts[i].k].stuck++;
          if (ts[i].admitted) {
            sh->ks[ts[i].k].stuck_admitted++;
            sh->stuck_admitted = 1;
          }
          sh->stuck[sh->nstuck++] = ts[i].k;
        }
      fflush(stdout);
      if (opt.verbose) coop_rt_dump(rt, stderr);
      sh->next_batch = b + 1;
      _exit(EXIT_STUCK);
    }
  }
  for (unsigned i = 0; i < n; i++) {
    struct tspec *t = &ts[i];
    if (!t->submitted) continue;
    struct kstats *s = &sh->ks[t->k];
    coop_rt_task_info(rt, t->id, &t->info);
    coop_rt_task_release(rt, t->id);
    switch (t->info.state) {
      case COOP_TASK_DONE:
        if (t->info.fault)
          s->done_fault++;
        else
          s->done++;
        if (t->clean && t->info.fault) {
          print_task("FAIL: a valid task faulted", t, b);
          printf("  fault = 0x%x\n", t->info.fault);
          s->clean_fault++;
          stat_fail();
        }
        break;
      case COOP_TASK_CANCELLED:
        if (t->info.fault)
          s->cancelled_fault++;
        else
          s->cancelled++;
        break;
      case COOP_TASK_REFUSED:
        s->refused++;
        if (t->expect_refusal)
          s->refused_expected++;
        else if (opt.verbose)
          print_task("refused", t, b);
        break;
      default:
        break;
    }
    if (t->expect_refusal && t->info.state != COOP_TASK_REFUSED) {
      print_task("FAIL: a bad submission was not refused", t, b);
      s->not_refused++;
      stat_fail();
    }
  }
  /* the checks: victims, then every guard */
  for (unsigned v = 0; v < nv; v++) {
    size_t bad = SIZE_MAX, nbad = 0;
    for (size_t w = 0; w < vs[v].size / 4; w++)
      if (vs[v].p[w] != victim_word(vs[v].key, w)) {
        if (bad == SIZE_MAX) bad = w;
        nbad++;
      }
    if (bad != SIZE_MAX) {
      printf("FAIL: victim %u (%zu bytes) changed: %zu words, first at byte %zu (0x%08x)\n", v,
             vs[v].size, nbad, bad * 4, vs[v].p[bad]);
      for (int side = 0; side < 2; side++) {
        int nb = side ? vs[v].right : vs[v].left;
        if (nb < 0) continue;
        const struct tspec *t = &ts[nb / 16];
        printf("  %s neighbour: argument %d of ", side ? "right" : "left", nb % 16);
        print_task("task", t, b);
      }
      for (unsigned i = 0; i < n; i++) sh->ks[ts[i].k].victim++;
      sh->victim_events++;
      stat_fail();
    }
  }
  for (size_t w = 0; w < keep_size / 4; w++)
    if (keep[w] != victim_word(keep_key, w)) {
      printf("FAIL: the run's long-lived victim changed at byte %zu (batch %" PRIu64 ")\n", w * 4,
             b);
      for (unsigned i = 0; i < n; i++) print_task("  in the batch", &ts[i], b);
      for (size_t x = 0; x < keep_size / 4; x++) keep[x] = victim_word(keep_key, x);
      sh->victim_events++;
      stat_fail();
      break;
    }
  for (unsigned i = 0; i < n; i++)
    for (unsigned a = 0; a < ts[i].nargs; a++) {
      if (!ts[i].buf[a]) continue;
      int rc = coop_rt_free(rt, ts[i].buf[a]);
      if (rc) {
        char what[256]; /* the writer may be this task or a neighbour that ran past */
        snprintf(what, sizeof what,
                 "FAIL: coop_rt_free = %d (%s): a guard breached around argument %u of", rc,
                 coop_strerror(rc), a);
        print_task(what, &ts[i], b);
        printf("  task state %d, fault 0x%x\n", ts[i].info.state, ts[i].info.fault);
        sh->ks[ts[i].k].breach++;
        sh->breach_events++;
        stat_fail();
      }
    }
  for (unsigned v = 0; v < nv; v++) {
    int rc = coop_rt_free(rt, vs[v].p);
    if (rc) {
      printf("FAIL: coop_rt_free = %d (%s): a guard breached around victim %u (batch %" PRIu64
             ")\n",
             rc, coop_strerror(rc), v, b);
      sh->breach_events++;
      stat_fail();
    }
  }
  for (unsigned i = 0; i < n; i++) spec_free(&ts[i]);
  sh->ninflight = 0;
  sh->batches++;
  double took = now_s() - t0;
  if (opt.verbose || took > 2.0) {
    printf("batch %" PRIu64 " took %.1f s:", b, took);
    for (unsigned i = 0; i < n; i++)
      printf(" %s%s(%s)", kernels[ts[i].k].name, ts[i].plausible ? "/plausible" : "",
             ts[i].info.state == COOP_TASK_DONE        ? "done"
             : ts[i].info.state == COOP_TASK_CANCELLED ? "cancelled"
             : ts[i].info.state == COOP_TASK_REFUSED   ? "refused"
                                                       : "?");
    printf("\n");
  }
}

static int child(uint64_t from, uint64_t to, double deadline) {
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  o.backend = getenv("COOP_BACKEND");
  const char *ls = getenv("COOP_LOCAL_SIZE");
  o.local_size = ls ? (unsigned)atoi(ls) : 16;
  int rc = coop_rt_open(&rt, &o);
  if (rc) {
    fprintf(stderr, "open: %s: %s\n", coop_strerror(rc), rt ? coop_rt_errmsg(rt) : "");
    return EXIT_SETUP;
  }
  /* Quarantined kernels stay registered: the same source is the same
   * program, which PoCL's kernel cache then has already (a fresh compile of
   * every kernel takes half a minute on two cores). */
  nactive = 0;
  int nreg = 0;
  for (int i = 0; i < nkernels; i++) {
    kidx[i] = -1;
    if (!selected(kernels[i].name)) continue;
    kidx[i] = coop_rt_add_kernel(rt, kernels[i].name, kernels[i].coop, kernels[i].src);
    if (kidx[i] < 0) {
      fprintf(stderr, "add_kernel %s: %s\n", kernels[i].name, coop_strerror(kidx[i]));
      return EXIT_SETUP;
    }
    nreg++;
    if (!sh->quarantined[i]) active[nactive++] = i;
  }
  if (nactive == 0) {
    coop_rt_close(rt);
    sh->next_batch = to;
    return 0;
  }
  double t0 = now_s();
  rc = coop_rt_launch(rt);
  if (rc) {
    fprintf(stderr, "launch: %s: %s\n", coop_strerror(rc), coop_rt_errmsg(rt));
    return EXIT_SETUP;
  }
  workers = coop_rt_workers(rt);
  printf(
      "megakernel: %d kernels (%d fuzzed) on %s (%s), %u workers, local size %u, built and "
      "launched in %.1f s; batches %" PRIu64 "..\n",
      nreg, nactive, coop_rt_device_name(rt), coop_rt_backend(rt), workers, o.local_size,
      now_s() - t0, from);
  fflush(stdout);
  /* one victim for the whole run, before every batch's buffers */
  size_t keep_size = 4096;
  uint64_t keep_key = opt.seed ^ 0x5eed;
  uint32_t *keep = coop_rt_alloc(rt, keep_size);
  if (!keep) return EXIT_SETUP;
  for (size_t w = 0; w < keep_size / 4; w++) keep[w] = victim_word(keep_key, w);
  for (uint64_t b = from; b < to && now_s() < deadline; b++) {
    run_batch(b, keep, keep_size, keep_key);
    sh->next_batch = b + 1;
    fflush(stdout);
  }
  if (coop_rt_free(rt, keep)) {
    printf("FAIL: the run's long-lived victim's guard was breached\n");
    stat_fail();
  }
  for (int i = 0; i < nkernels; i++)
    for (int j = 0; j < (ninputs[i] > 0 ? ninputs[i] : 0); j++) coop_app_input_free(&inputs[i][j]);
  rc = coop_rt_close(rt);
  if (rc) {
    printf("close: %s\n", coop_strerror(rc));
    return EXIT_SETUP;
  }
  return 0;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f) {
  fprintf(f,
          "usage: fuzz_kernels [--seed S] [--iters N] [--seconds T] [--batch B]\n"
          "                    [--kernels DIR]... [--extra-kernels DIR]... [--only K1,K2]\n"
          "                    [--concurrency C] [--timeout-ms MS] [--plausible-ms MS]\n"
          "                    [--grace-ms MS] [--beyond PCT] [--quarantine N] [--wild]\n"
          "                    [--strict] [--no-fork] [--verbose]\n"
          "Fuzzes every kernel file with a //@coop first line (default directories: the\n"
          "source tree's kernels and kernels/apps) with hostile submissions\n"
          "and checks that no job writes outside its buffers. Environment: COOP_FUZZ_SEED,\n"
          "COOP_FUZZ_ITERS, COOP_FUZZ_SECONDS, COOP_FUZZ_EXTRA_KERNELS (a directory),\n"
          "COOP_FUZZ_TIME_SCALE (multiplies the timeouts: compute-sanitizer), COOP_BACKEND,\n"
          "COOP_LOCAL_SIZE. --batch B runs the batches from B on (with --iters 1: batch B\n"
          "alone, as a failure message names it). --no-fork runs in this process (a stuck\n"
          "task or a crash then ends the run).\n");
}

static const char *need(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    usage(stderr);
    exit(EXIT_SETUP);
  }
  return argv[++*i];
}

static void print_summary(double elapsed) {
  printf("\n%-8s %5s %5s %5s %5s %5s %5s %5s %6s %5s %5s %5s %5s %5s %6s %6s\n", "kernel", "tasks",
         "synth", "plaus", "clean", "past", "done", "d+flt", "cancel", "c+flt", "refus", "stuck",
         "s/adm", "crash", "breach", "victim");
  struct kstats tot;
  memset(&tot, 0, sizeof tot);
  for (int i = 0; i < nkernels; i++) {
    const struct kstats *s = &sh->ks[i];
    if (!selected(kernels[i].name)) continue;
    printf("%-8s %5" PRIu64 " %5" PRIu64 " %5" PRIu64 " %5" PRIu64 " %5" PRIu64 " %5" PRIu64
           " %5" PRIu64 " %6" PRIu64 " %5" PRIu64 " %5" PRIu64 " %5" PRIu64 " %5" PRIu64
           " %5" PRIu64 " %6" PRIu64 " %6" PRIu64 "%s\n",
           kernels[i].name, s->tasks, s->synthetic, s->plausible, s->clean, s->beyond, s->done,
           s->done_fault, s->cancelled, s->cancelled_fault, s->refused, s->stuck, s->stuck_admitted,
           s->crash, s->breach, s->victim, sh->quarantined[i] ? "  (quarantined)" : "");
    const uint64_t *a = (const uint64_t *)s;
    uint64_t *t = (uint64_t *)&tot;
    for (size_t j = 0; j < sizeof tot / sizeof(uint64_t); j++) t[j] += a[j];
  }
  printf(
      "columns: past = tasks that break the kernel's require rules (coopd would refuse them); "
      "d+flt, c+flt = done, cancelled with info.fault set; s/adm = stuck tasks that coopd would "
      "admit\n");
  printf("total: %" PRIu64 " batches, %" PRIu64 " tasks in %.1f s (seed %" PRIu64 "): %" PRIu64
         " done (%" PRIu64 " with a fault), %" PRIu64 " cancelled (%" PRIu64
         " with a fault), %" PRIu64 " refused (%" PRIu64 " on purpose), %" PRIu64 " stuck (%" PRIu64
         " admissible), %" PRIu64 " crashes, %" PRIu64 " guard breaches, %" PRIu64
         " victims changed, %" PRIu64 " valid tasks faulted, %" PRIu64
         " bad submissions accepted\n",
         sh->batches, tot.tasks, elapsed, opt.seed, tot.done + tot.done_fault, tot.done_fault,
         tot.cancelled + tot.cancelled_fault, tot.cancelled_fault, tot.refused,
         tot.refused_expected, tot.stuck, tot.stuck_admitted, sh->crashes, sh->breach_events,
         sh->victim_events, tot.clean_fault, tot.not_refused);
}

int main(int argc, char **argv) {
  opt.seed = getenv("COOP_FUZZ_SEED") ? strtoull(getenv("COOP_FUZZ_SEED"), NULL, 0) : 1;
  opt.iters = 200;
  if (getenv("COOP_FUZZ_ITERS")) {
    opt.iters = strtoull(getenv("COOP_FUZZ_ITERS"), NULL, 0);
    opt.iters_given = 1;
  }
  if (getenv("COOP_FUZZ_SECONDS")) opt.seconds = atof(getenv("COOP_FUZZ_SECONDS"));
  if (getenv("COOP_FUZZ_EXTRA_KERNELS"))
    opt.extra[opt.nextra++] = getenv("COOP_FUZZ_EXTRA_KERNELS");
  opt.concurrency = 3;
  opt.beyond_pct = 25;
  opt.quarantine = 2;
  opt.soft_ms = 500;
  opt.plausible_ms = 20000;
  opt.grace_ms = 3000;
  opt.time_cap = 45;
  if (getenv("COOP_FUZZ_TIME_SCALE")) { /* a slow device, compute-sanitizer */
    double f = atof(getenv("COOP_FUZZ_TIME_SCALE"));
    if (f > 0) {
      opt.soft_ms = (int)(opt.soft_ms * f);
      opt.plausible_ms = (int)(opt.plausible_ms * f);
      opt.grace_ms = (int)(opt.grace_ms * f);
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--seed")) {
      opt.seed = strtoull(need(argc, argv, &i), NULL, 0);
    } else if (!strcmp(a, "--iters")) {
      opt.iters = strtoull(need(argc, argv, &i), NULL, 0);
      opt.iters_given = 1;
    } else if (!strcmp(a, "--seconds")) {
      opt.seconds = atof(need(argc, argv, &i));
    } else if (!strcmp(a, "--batch")) {
      opt.first = strtoull(need(argc, argv, &i), NULL, 0);
    } else if (!strcmp(a, "--kernels")) {
      if (opt.ndirs == MAX_DIRS) die("too many --kernels");
      opt.dirs[opt.ndirs++] = need(argc, argv, &i);
    } else if (!strcmp(a, "--extra-kernels")) {
      if (opt.nextra == MAX_DIRS) die("too many --extra-kernels");
      opt.extra[opt.nextra++] = need(argc, argv, &i);
    } else if (!strcmp(a, "--only")) {
      opt.only = need(argc, argv, &i);
    } else if (!strcmp(a, "--concurrency")) {
      opt.concurrency = (unsigned)atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--timeout-ms")) {
      opt.soft_ms = atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--plausible-ms")) {
      opt.plausible_ms = atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--grace-ms")) {
      opt.grace_ms = atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--beyond")) {
      opt.beyond_pct = (unsigned)atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--quarantine")) {
      opt.quarantine = (unsigned)atoi(need(argc, argv, &i));
    } else if (!strcmp(a, "--wild")) {
      opt.wild = 1;
    } else if (!strcmp(a, "--strict")) {
      opt.strict = 1;
    } else if (!strcmp(a, "--no-fork")) {
      opt.nofork = 1;
    } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
      opt.verbose = 1;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return EXIT_SETUP;
    }
  }
  if (opt.concurrency < 1) opt.concurrency = 1;
  if (opt.concurrency > MAX_BATCH) opt.concurrency = MAX_BATCH;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (opt.ndirs == 0) {
    opt.dirs[opt.ndirs++] = COOP_SOURCE_DIR "/kernels";
    opt.dirs[opt.ndirs++] = COOP_SOURCE_DIR "/kernels/apps";
  }
  for (int i = 0; i < opt.ndirs; i++) load_dir(opt.dirs[i], 0);
  for (int i = 0; i < opt.nextra; i++) load_dir(opt.extra[i], 1);
  int nsel = 0;
  for (int i = 0; i < nkernels; i++) {
    kernels[i].app = coop_app_find(kernels[i].name);
    if (kernels[i].app && strcmp(kernels[i].app->kernel, kernels[i].name)) kernels[i].app = NULL;
    if (!selected(kernels[i].name)) continue;
    nsel++;
    printf("kernel %-8s %-14s roles %-16s %s%s\n", kernels[i].name,
           kernels[i].coop ? "cooperative" : "noncooperative", kernels[i].role, kernels[i].path,
           kernels[i].app ? "" : " (no application: synthetic tasks only)");
  }
  if (nsel == 0) die("no kernel to fuzz");

  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) die("mmap: %s", strerror(errno));
  memset(sh, 0, sizeof *sh);
  double t0 = now_s();
  int timed = opt.seconds > 0;
  /* the default run (ctest) is also bounded in time; --iters alone is not */
  double deadline = timed ? t0 + opt.seconds : opt.iters_given ? 1e300 : t0 + opt.time_cap;
  uint64_t end = timed && !opt.iters_given ? UINT64_MAX : opt.first + opt.iters;
  printf("seed %" PRIu64 ", %s%s\n", opt.seed, opt.wild ? "wild, " : "",
         timed ? "timed run" : "fixed batches");
  sh->next_batch = opt.first;
  unsigned restarts = 0;
  int setup_error = 0;
  while (sh->next_batch < end && now_s() < deadline) {
    if (opt.nofork) {
      int rc = child(sh->next_batch, end, deadline);
      if (rc) setup_error = 1;
      break;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) exit(child(sh->next_batch, end, deadline)); /* exit: LeakSanitizer runs */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) break;
    if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SETUP) {
      printf("setup error in the child (see above)\n");
      setup_error = 1;
      break;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_STUCK) {
      for (int i = 0; i < sh->nstuck; i++)
        if (sh->ks[sh->stuck[i]].stuck >= opt.quarantine) sh->quarantined[sh->stuck[i]] = 1;
      if (opt.strict && sh->stuck_admitted) sh->failed = 1;
    } else { /* a crash: a signal, or a sanitizer's exit */
      if (WIFSIGNALED(st))
        printf("FAIL: the megakernel process died of signal %d (%s) in batch %" PRIu64 ", running:",
               WTERMSIG(st), strsignal(WTERMSIG(st)), sh->next_batch);
      else
        printf("FAIL: the megakernel process exited with status %d in batch %" PRIu64 ", running:",
               WEXITSTATUS(st), sh->next_batch);
      for (int i = 0; i < sh->ninflight; i++) printf(" %s", kernels[sh->inflight[i]].name);
      printf("\n");
      if (sh->ninflight == 1) { /* that kernel did it */
        sh->ks[sh->inflight[0]].crash++;
        sh->quarantined[sh->inflight[0]] = 1;
      } else if (!sh->solo) {
        printf("the rest of the run: one task per batch\n");
        sh->solo = 1;
      }
      sh->crashes++;
      sh->failed = 1;
      sh->next_batch++;
    }
    for (int i = 0; i < nkernels; i++)
      if (sh->quarantined[i] == 1 && selected(kernels[i].name)) {
        printf("quarantined for the rest of the run: %s\n", kernels[i].name);
        sh->quarantined[i] = 2;
      }
    if (++restarts > (opt.quarantine + 1) * (unsigned)nkernels + 2) {
      printf("too many restarts\n");
      sh->failed = 1;
      break;
    }
  }
  if (!timed && !opt.iters_given && sh->next_batch < end && !setup_error)
    printf("note: stopped at batch %" PRIu64 " of %" PRIu64 " after %.0f s (time cap)\n",
           sh->next_batch, end, opt.time_cap);
  print_summary(now_s() - t0);
  int rc = setup_error ? EXIT_SETUP : sh->failed ? 1 : 0;
  printf("%s\n", rc == 0 ? "PASS" : rc == 1 ? "FAIL" : "ERROR");
  return rc;
}
