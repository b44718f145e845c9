/* Job memory in slabs of its own (jobpool.h). */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_POPULATE */
#include "jobpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jobs.h"

/* 64 jobs a slab: 197 KB, one mapping per 64 jobs kept or in flight; a
 * spare of at least 8 so that a burst of SUBMITs between two RESULTs
 * finds them touched too. */
#define JOBPOOL_SLAB 64
#define JOBPOOL_LOW 8

struct jp_slab {
  struct jp_slab *next;
  size_t len;
};

/* The slab's header, then its jobs at the job's alignment. */
static size_t jobs_at(void) {
  size_t a = _Alignof(struct job);
  return (sizeof(struct jp_slab) + a - 1) / a * a;
}

static int map_slab(struct jobpool *p) {
  size_t len = jobs_at() + (size_t)JOBPOOL_SLAB * sizeof(struct job);
  /* the pages made here in one call (MAP_POPULATE), not by a fault at
   * each job's first touch; the free list's links below touch them too */
  void *m =
      mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (m == MAP_FAILED) return -ENOMEM;
  struct jp_slab *s = m;
  s->next = p->slabs;
  s->len = len;
  p->slabs = s;
  p->mapped += len;
  struct job *jobs = (struct job *)((char *)m + jobs_at());
  for (unsigned i = JOBPOOL_SLAB; i-- > 0;) {
    jobs[i].next = p->free;
    p->free = &jobs[i];
  }
  p->nfree += JOBPOOL_SLAB;
  return 0;
}

struct job *jobpool_get(struct jobpool *p) {
  if (JOBPOOL_HEAP) return calloc(1, sizeof(struct job));
  if (!p->free && map_slab(p)) {
    errno = ENOMEM;
    return NULL;
  }
  struct job *j = p->free;
  p->free = j->next;
  p->nfree--;
  memset(j, 0, sizeof *j);
  return j;
}

void jobpool_put(struct jobpool *p, struct job *j) {
  if (JOBPOOL_HEAP) {
    free(j);
    return;
  }
  j->next = p->free;
  p->free = j;
  p->nfree++;
}

void jobpool_ahead(struct jobpool *p) {
  if (!JOBPOOL_HEAP && p->nfree < JOBPOOL_LOW) (void)map_slab(p);
}

void jobpool_free(struct jobpool *p) {
  while (p->slabs) {
    struct jp_slab *s = p->slabs;
    p->slabs = s->next;
    munmap(s, s->len);
  }
  memset(p, 0, sizeof *p);
}
