/* Job memory kept apart from the heap, its pages touched before a SUBMIT
 * needs them (docs/daemon.md, "A job's memory").
 *
 * A connection keeps up to max_finished_per_client finished jobs, so
 * until it holds that many every new job is 3 KB the heap never had: its
 * first touch on the SUBMIT's path was page faults, 15-35 us on a 2-core
 * VM (bench/RESULTS.md, "A job's memory apart from the heap"), and a job
 * made ahead from the heap only moved the faults into the next request's
 * decode, which took the chunk the job had. So jobs come from slabs of
 * their own, mapped with their pages populated when a spare runs low,
 * after a RESULT has gone (off the path), and a freed job goes back to
 * its slab's list. The loop thread alone makes and frees jobs. */
#ifndef COOPD_JOBPOOL_H
#define COOPD_JOBPOOL_H

#include <stddef.h>

/* Under AddressSanitizer jobs come from the heap, one allocation each, so
 * that a job used after its free is still caught: JOBPOOL_HEAP is 1. */
#if defined(__SANITIZE_ADDRESS__)
#define JOBPOOL_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JOBPOOL_HEAP 1
#endif
#endif
#ifndef JOBPOOL_HEAP
#define JOBPOOL_HEAP 0
#endif

struct job;

struct jobpool {
  struct job *free;      /* linked through job.next */
  unsigned nfree;        /* jobs on it */
  struct jp_slab *slabs; /* every slab mapped, for jobpool_free */
  size_t mapped;         /* bytes of slabs */
};

/* A zeroed job: from the free list, else from a slab mapped now. NULL
 * (errno ENOMEM) when no slab can be mapped. */
struct job *jobpool_get(struct jobpool *p);
/* j back on the free list; its fields are the caller's to have released. */
void jobpool_put(struct jobpool *p, struct job *j);
/* Off the path: a slab mapped ahead where fewer than JOBPOOL_LOW jobs are
 * free, so that the next SUBMITs find their memory touched. */
void jobpool_ahead(struct jobpool *p);
/* Every slab unmapped (coopd's end: no job is in use). */
void jobpool_free(struct jobpool *p);

#endif /* COOPD_JOBPOOL_H */
