/*
 * coopd_jobs.h: what the benchmarks that go through coopd share about the
 * jobs they run there (coop-bench-frames, coop-bench-side's coopd setup):
 *
 *   a frame   a client's periodic task on device buffers: its input
 *             written into a persistent buffer (coop_buffer_write), the
 *             task submitted naming the buffers, its output read back
 *             (coop_buffer_read), timed leg by leg;
 *   the long kernel   an application (bfs) run as cooperative coopd jobs
 *             one after the other on a connection of its own, its input
 *             uploaded once as device buffers.
 */
#ifndef COOP_BENCH_COOPD_JOBS_H
#define COOP_BENCH_COOPD_JOBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "app.h"
#include "coop.h"

/* ------------------------------------------------------------- a frame */

/* A kernel of arguments (a, b, c, n, reps), c = a x b on n x n floats:
 * render (kernels/render.cl) or matmul (kernels/apps/matmul.cl). */
struct dframe {
  coop_conn *c;
  const char *kernel;
  uint32_t n, reps, groups;
  size_t bytes;                    /* n * n floats */
  uint64_t a, b, o;                /* device buffers: the inputs and the output */
  float *out;                      /* the output read back */
  int64_t t_write, t_task, t_read; /* the last frame's legs, ns */
  /* DFRAME_BUFFERS (dframe_open's): written into a, the job, read back
   * from out, three requests; DFRAME_JOB: a frame is one job, its input
   * sent with it (coop_job_buf_in) and its output back in its RESULT
   * (coop_job_buf_out), only b on the device; DFRAME_IO: one job on the
   * three device buffers that writes a and reads out itself
   * (coop_job_buffer_io); DFRAME_IO_FD: the same through a memfd of this
   * process's (coop_job_buffer_io_fd): the input produced in its mapping
   * (dframe_input), the output read there, no copy here */
  int how;
  int priority;   /* each frame's job's (coop_job_priority); 0 by default */
  int iofd;       /* DFRAME_IO_FD: the memfd, input at 0, output at io_out */
  uint8_t *iomap; /* its mapping */
  size_t iolen, io_out;
  float *out_own; /* the malloc'd out, while out points into iomap */
  /* DFRAME_IO_FD: the frame's job, described once and submitted every
   * frame as a renderer keeps its command buffer (a description may be
   * submitted again: coop.h), described again when its output buffer, reps
   * or priority change; job_key says for which */
  coop_job *job;
  uint64_t job_key[3];
};
enum { DFRAME_BUFFERS, DFRAME_JOB, DFRAME_IO, DFRAME_IO_FD };

/* How its frames go (after dframe_open); DFRAME_IO_FD makes the memfd,
 * its input half holding a0. 0 or a coop_errno. */
int dframe_how(struct dframe *f, int how, const float *a0);
/* Where to produce the next frame's input without a copy (DFRAME_IO_FD:
 * the memfd's mapping), or NULL: pass it to dframe_submit. */
float *dframe_input(struct dframe *f);

/* Buffers a and b (holding a0, b0) and o; 0 or a coop_errno. */
int dframe_open(struct dframe *f, coop_conn *c, const char *kernel, uint32_t n, uint32_t groups,
                const float *a0, const float *b0);
/* in (n x n floats) into a, then the task submitted with its output into
 * out (f->o or another buffer of the same size); *id the job. DFRAME_JOB:
 * in and the output travel with the job (out is not used); DFRAME_IO: the
 * job writes in and reads out itself. */
int dframe_submit(struct dframe *f, const float *in, uint64_t out, uint64_t *id);
/* Waits for the job, reads out back into f->out. *r is the job's result
 * (coop_result_free it after a 0 return). 0, a coop_errno, or COOP_EFAILED
 * if it did not end DONE (the message on stderr). */
int dframe_finish(struct dframe *f, uint64_t id, uint64_t out, int timeout_ms,
                  struct coop_result *r);
void dframe_close(struct dframe *f);

/* ------------------------------------------------------- the long kernel */

struct dlong_run {
  int64_t started, finished, exec_ns; /* coopd's CLOCK_MONOTONIC; device clock */
  uint32_t kills, forks, m_min;
  void *out; /* the application's output (keep_outputs), for its check */
};

struct dlong {
  coop_conn *c;
  const struct coop_app *a;
  const struct coop_app_input *in; /* the caller's, kept until dlong_close */
  struct coop_app_task t;
  uint64_t devbuf[COOP_MAX_ARGS]; /* the input's borrowed IN buffers, uploaded once */
  void *zeros;                    /* the scratch buffers' contents */
  int query, keep_outputs, timeout_ms;
  struct dlong_run *runs;
  size_t nruns, cap;
  pthread_t th;
  int started;
  atomic_int stop;
  int err;
};

/* Its own connection to sock (client name `name`), a's task on in, its
 * borrowed inputs uploaded. 0 or a coop_errno (coop_errmsg(l->c)). */
int dlong_open(struct dlong *l, const char *sock, const char *name, const struct coop_app *a,
               const struct coop_app_input *in, int query);
/* One job on every worker, waited for; its run appended to l->runs. */
int dlong_job(struct dlong *l);
/* Jobs back to back in a thread until dlong_stop, which joins it and
 * returns the first error (0). */
int dlong_start(struct dlong *l);
int dlong_stop(struct dlong *l);
/* Forgets the runs (their outputs freed). */
void dlong_clear(struct dlong *l);
void dlong_close(struct dlong *l);

#endif /* COOP_BENCH_COOPD_JOBS_H */
