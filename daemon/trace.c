/*
 * trace.c: see trace.h. One line per job, comma separated: a header line
 * (id, state, then every stamp's name) each time coopd opens the file, so
 * that a reader finds the columns by name and several coopds may append
 * to one file.
 */
#include "trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_schema.h"
#include "jobs.h"

#define ONE(name) +1
_Static_assert(sizeof((struct trace_rec *)0)->t / sizeof(int64_t) == 0 COOP_STAMPS_MAP(ONE),
               "trace_rec holds every stamp of the job's times");
#undef ONE

int coopd_tracing;
static FILE *trace_file;

/* dpcall lines wait in memory for the loop's next line (trace_write,
 * trace_buf_write) or coopd's exit: a device thread's own write to the
 * line-buffered file, a system call, came between a frame's request and
 * its next stamp, 17-20 us at p50 on an H200 (bench/RESULTS.md, "The
 * trace's own cost on a frame's path"). Two halves: the device threads
 * fill one (calls_mu) while a flusher writes the other (flush_mu); a
 * thread that finds its half full flushes it itself. */
#define TRACE_CALLS 1024
struct call_line {
  const char *op; /* devproc_msg.c's table: static; NULL: a window's line */
  int64_t t[4];
  int device; /* a window's: -1 the loop's, else its device's place */
};
static struct call_line calls[2][TRACE_CALLS];
static unsigned calls_n, calls_cur; /* under calls_mu: calls[calls_cur][0..calls_n) */
static pthread_mutex_t calls_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;

static void calls_flush(void) {
  pthread_mutex_lock(&flush_mu);
  pthread_mutex_lock(&calls_mu);
  unsigned n = calls_n, half = calls_cur;
  calls_cur ^= 1u;
  calls_n = 0;
  pthread_mutex_unlock(&calls_mu);
  if (n) flockfile(trace_file);
  for (unsigned i = 0; i < n; i++) {
    const struct call_line *c = &calls[half][i];
    if (!c->op && c->device < 0)
      fprintf(trace_file, "window,loop,%lld,%lld\n", (long long)c->t[0], (long long)c->t[1]);
    else if (!c->op)
      fprintf(trace_file, "window,device%d,%lld,%lld\n", c->device, (long long)c->t[0],
              (long long)c->t[1]);
    else
      fprintf(trace_file, "dpcall,%s,%lld,%lld,%lld,%lld\n", c->op, (long long)c->t[0],
              (long long)c->t[1], (long long)c->t[2], (long long)c->t[3]);
  }
  if (n) funlockfile(trace_file);
  pthread_mutex_unlock(&flush_mu);
}

int trace_open(char *err, unsigned errlen) {
  const char *path = getenv("COOP_TRACE_FILE");
  if (!path || !*path) return 0;
  trace_file = fopen(path, "ae");
  if (!trace_file) {
    snprintf(err, errlen, "COOP_TRACE_FILE %s: %s", path, strerror(errno));
    return -1;
  }
  setvbuf(trace_file, NULL, _IOLBF, 0); /* a reader sees whole lines as jobs end */
  fprintf(trace_file, "id,state");
#define NAME(name) fprintf(trace_file, ",%s", #name);
  COOP_TRACE_MAP(NAME)
  COOP_STAMPS_MAP(NAME) /* the job's times (coop_schema.h) */
  fprintf(trace_file, "\n");
  fprintf(trace_file, "bufop,kind,bytes");
  COOP_BUFTRACE_MAP(NAME)
#undef NAME
  fprintf(trace_file, ",warm_from,warm_until\n");
  fprintf(trace_file, "dpcall,op,sent,took,replied,back\n");
  fprintf(trace_file, "window,who,from,began\n");
  atexit(calls_flush); /* before stdio's own flush at exit */
  coopd_tracing = 1;
  return 0;
}

int trace_take(struct job *j, struct trace_rec *rec) {
  if (!trace_file || j->tr.written) return 0;
  j->tr.written = 1;
  j->tr.result_sent = coop__now_ns();
  rec->id = j->id;
  rec->state = atomic_load(&j->state);
  rec->tr = j->tr;
  unsigned i = 0;
#define T(name) rec->t[i++] = j->t.name;
  COOP_STAMPS_MAP(T)
#undef T
  return 1;
}

void trace_write(const struct trace_rec *rec) {
  calls_flush();
  flockfile(trace_file); /* one line whole: a device thread may flush dpcall lines */
  fprintf(trace_file, "%llu,%u", (unsigned long long)rec->id, (unsigned)rec->state);
#define TR(name) fprintf(trace_file, ",%lld", (long long)rec->tr.name);
  COOP_TRACE_MAP(TR)
#undef TR
  for (unsigned i = 0; i < sizeof rec->t / sizeof *rec->t; i++)
    fprintf(trace_file, ",%lld", (long long)rec->t[i]);
  fprintf(trace_file, "\n");
  funlockfile(trace_file);
}

void trace_buf_write(const char *kind, uint64_t bytes, const struct buf_trace *t) {
  if (!trace_file) return;
  calls_flush();
  flockfile(trace_file);
  fprintf(trace_file, "buf,%s,%llu", kind, (unsigned long long)bytes);
#define TR(name) fprintf(trace_file, ",%lld", (long long)t->name);
  COOP_BUFTRACE_MAP(TR)
#undef TR
  fprintf(trace_file, ",%lld,%lld\n", (long long)t->warm_from, (long long)t->warm_until);
  funlockfile(trace_file);
}

static void call_keep(const struct call_line *line) {
  for (;;) {
    pthread_mutex_lock(&calls_mu);
    if (calls_n < TRACE_CALLS) {
      calls[calls_cur][calls_n++] = *line;
      pthread_mutex_unlock(&calls_mu);
      return;
    }
    pthread_mutex_unlock(&calls_mu);
    calls_flush(); /* a half full: rare (a large job's slices, no job ending) */
  }
}

void trace_call_write(const char *op, const int64_t t[4]) {
  struct call_line c = {.op = op};
  memcpy(c.t, t, sizeof c.t);
  call_keep(&c);
}

void trace_window_write(int device, int64_t from, int64_t began) {
  if (!trace_file) return;
  call_keep(&(struct call_line){.t = {from, began}, .device = device < 0 ? -1 : device});
}
