/*
 * trace.c: see trace.h. One line per job, comma separated: a header line
 * (id, state, then every stamp's name) each time coopd opens the file, so
 * that a reader finds the columns by name and several coopds may append
 * to one file.
 */
#include "trace.h"

#include <errno.h>
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
  flockfile(trace_file); /* one line whole: device threads write dpcall lines */
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
  flockfile(trace_file);
  fprintf(trace_file, "buf,%s,%llu", kind, (unsigned long long)bytes);
#define TR(name) fprintf(trace_file, ",%lld", (long long)t->name);
  COOP_BUFTRACE_MAP(TR)
#undef TR
  fprintf(trace_file, ",%lld,%lld\n", (long long)t->warm_from, (long long)t->warm_until);
  funlockfile(trace_file);
}

void trace_call_write(const char *op, const int64_t t[4]) {
  fprintf(trace_file, "dpcall,%s,%lld,%lld,%lld,%lld\n", op, (long long)t[0], (long long)t[1],
          (long long)t[2], (long long)t[3]); /* one call: stdio locks the file for it */
}
