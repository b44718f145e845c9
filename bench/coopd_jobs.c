/* coopd_jobs.c: see coopd_jobs.h. */
#define _GNU_SOURCE /* memfd_create */
#include "coopd_jobs.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

/* ------------------------------------------------------------- a frame */

int dframe_open(struct dframe *f, coop_conn *c, const char *kernel, uint32_t n, uint32_t groups,
                const float *a0, const float *b0) {
  memset(f, 0, sizeof *f);
  f->c = c;
  f->kernel = kernel;
  f->n = n;
  f->groups = groups;
  f->reps = 1;
  f->bytes = (size_t)n * n * sizeof(float);
  f->out = malloc(f->bytes);
  if (!f->out) return COOP_ENOMEM;
  int e = coop_buffer_create(c, 0, f->bytes, a0, 0, &f->a);
  if (!e) e = coop_buffer_create(c, 0, f->bytes, b0, 0, &f->b);
  if (!e) e = coop_buffer_create(c, 0, f->bytes, NULL, 0, &f->o);
  return e;
}

int dframe_how(struct dframe *f, int how, const float *a0) {
  f->how = how;
  if (how != DFRAME_IO_FD || f->iomap) return 0;
  f->io_out = (f->bytes + 4095) & ~(size_t)4095;
  f->iolen = f->io_out + f->bytes;
  f->iofd = memfd_create("coop-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (f->iofd < 0 || ftruncate(f->iofd, (off_t)f->iolen) ||
      fcntl(f->iofd, F_ADD_SEALS, F_SEAL_SHRINK)) /* coopd may map and pin it */
    return COOP_EIO;
  void *m = mmap(NULL, f->iolen, PROT_READ | PROT_WRITE, MAP_SHARED, f->iofd, 0);
  if (m == MAP_FAILED) return COOP_EIO;
  f->iomap = m;
  memcpy(f->iomap, a0, f->bytes);
  f->out_own = f->out;
  f->out = (float *)(void *)(f->iomap + f->io_out);
  return 0;
}

float *dframe_input(struct dframe *f) {
  return f->how == DFRAME_IO_FD ? (float *)(void *)f->iomap : NULL;
}

/* The job of a frame: a new one each frame, but for DFRAME_IO_FD's, whose
 * description (the memfd's ranges, the buffers, n, reps) does not change
 * from one frame to the next: that one is kept (f->job). */
static int frame_job(struct dframe *f, const float *in, uint64_t out, coop_job **jp) {
  uint64_t key[3] = {out, f->reps, (uint64_t)(uint32_t)f->priority};
  *jp = f->job;
  if (f->job && !memcmp(key, f->job_key, sizeof key)) return 0;
  coop_job_free(f->job);
  f->job = *jp = NULL;
  coop_job *j = coop_job_new(f->kernel, f->groups);
  if (!j) return COOP_ENOMEM;
  if (f->how == DFRAME_JOB)
    coop_job_buf_in(j, in, f->bytes);
  else if (f->how == DFRAME_IO)
    coop_job_buffer_io(j, f->a, 0, in, NULL, f->bytes);
  else if (f->how == DFRAME_IO_FD)
    coop_job_buffer_io_fd(j, f->a, 0, f->iofd, 0, f->bytes, COOP_JOB_IN);
  else
    coop_job_buffer(j, f->a);
  coop_job_buffer(j, f->b);
  if (f->how == DFRAME_JOB)
    coop_job_buf_out(j, f->out, f->bytes);
  else if (f->how == DFRAME_IO)
    coop_job_buffer_io(j, out, 0, NULL, f->out, f->bytes);
  else if (f->how == DFRAME_IO_FD)
    coop_job_buffer_io_fd(j, out, 0, f->iofd, f->io_out, f->bytes, COOP_JOB_OUT);
  else
    coop_job_buffer(j, out);
  coop_job_u32(j, f->n);
  coop_job_u32(j, f->reps);
  int e = f->priority ? coop_job_priority(j, f->priority) : 0;
  if (e) {
    coop_job_free(j);
    return e;
  }
  if (f->how == DFRAME_IO_FD) {
    f->job = j;
    memcpy(f->job_key, key, sizeof key);
  }
  *jp = j;
  return 0;
}

int dframe_submit(struct dframe *f, const float *in, uint64_t out, uint64_t *id) {
  int64_t t0 = now_ns();
  int e = f->how == DFRAME_BUFFERS ? coop_buffer_write(f->c, f->a, 0, in, f->bytes) : 0;
  f->t_write = now_ns() - t0;
  if (f->how == DFRAME_IO_FD && in != dframe_input(f)) memcpy(f->iomap, in, f->bytes);
  coop_job *j = NULL;
  if (!e) e = frame_job(f, in, out, &j);
  if (!e) e = coop_submit(f->c, j, id);
  if (j != f->job) coop_job_free(j);
  return e;
}

int dframe_finish(struct dframe *f, uint64_t id, uint64_t out, int timeout_ms,
                  struct coop_result *r) {
  int64_t t1 = now_ns();
  int e = coop_wait(f->c, id, timeout_ms, r);
  if (e) return e;
  int64_t t2 = now_ns();
  f->t_task = t2 - t1;
  if (r->state != COOP_STATE_DONE) {
    fprintf(stderr, "%s task: %s: %s\n", f->kernel, coop_state_name(r->state), r->message);
    coop_result_free(r);
    return COOP_EFAILED;
  }
  /* a read runs beside any job: only after the wait is the output this
   * frame's (DFRAME_JOB, DFRAME_IO: its RESULT brought it into f->out) */
  e = f->how == DFRAME_BUFFERS ? coop_buffer_read(f->c, out, 0, f->out, f->bytes) : 0;
  f->t_read = now_ns() - t2;
  if (e) coop_result_free(r);
  return e;
}

void dframe_close(struct dframe *f) {
  coop_job_free(f->job);
  /* the buffers go with the connection; an explicit free keeps a shared one clean */
  if (f->c && f->a) coop_buffer_free(f->c, f->a);
  if (f->c && f->b) coop_buffer_free(f->c, f->b);
  if (f->c && f->o) coop_buffer_free(f->c, f->o);
  if (f->iomap) {
    munmap(f->iomap, f->iolen);
    f->out = f->out_own;
  }
  if (f->iomap || f->iofd > 0) close(f->iofd);
  free(f->out);
  memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------- the long kernel */

int dlong_open(struct dlong *l, const char *sock, const char *name, const struct coop_app *a,
               const struct coop_app_input *in, int query) {
  memset(l, 0, sizeof *l);
  l->a = a;
  l->in = in;
  l->query = query;
  l->timeout_ms = 600000;
  atomic_init(&l->stop, 0);
  int e = coop_connect(&l->c, sock, name);
  if (e) return e;
  struct coop_app_opts o = {.mode = COOP_APP_MODE_COOPERATIVE};
  e = coop_app_task_prepare(&l->t, a, in, &o, coop_info(l->c)->workers);
  size_t zsize = 0;
  for (unsigned i = 0; !e && i < l->t.nargs; i++) {
    const struct coop_app_arg *g = &l->t.arg[i];
    if (g->buf && g->dir == COOP_APP_SCRATCH && g->size > zsize) zsize = g->size;
    /* the graph (borrowed IN buffers): uploaded once, as a client keeps its data */
    if (g->buf && g->dir == COOP_APP_IN && !g->host && g->init && g->init_len == g->size)
      e = coop_buffer_create(l->c, 0, g->size, g->init, 0, &l->devbuf[i]);
  }
  if (!e && zsize && !(l->zeros = calloc(1, zsize))) e = COOP_ENOMEM;
  return e;
}

/* The job of the task l->t: device buffers where uploaded, the rest inline. */
static coop_job *long_desc(const struct dlong *l) {
  const struct coop_app_task *t = &l->t;
  coop_job *j = coop_job_new(l->a->kernel, t->groups);
  coop_job_cooperative(j, 1);
  coop_job_query_barrier(j, l->query);
  for (unsigned i = 0; i < t->nargs; i++) {
    const struct coop_app_arg *g = &t->arg[i];
    if (l->devbuf[i])
      coop_job_buffer(j, l->devbuf[i]);
    else if (!g->buf)
      g->type == COOP_APP_U64 ? coop_job_u64(j, g->value) : coop_job_u32(j, (uint32_t)g->value);
    else if (g->dir == COOP_APP_SCRATCH)
      coop_job_buf_in(j, l->zeros, g->size);
    else if (g->dir == COOP_APP_OUT)
      coop_job_buf_out(j, g->host, g->size);
    else if (g->dir == COOP_APP_INOUT)
      coop_job_buf_inout(j, g->host, g->size);
    else
      coop_job_buf_in(j, g->init, g->size); /* the task's own IN buffers: whole */
  }
  return j;
}

static void add_run(struct dlong *l, const struct coop_result *r, void *out) {
  if (l->nruns == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 32;
    l->runs = realloc(l->runs, l->cap * sizeof *l->runs);
    if (!l->runs) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
  }
  l->runs[l->nruns++] = (struct dlong_run){r->t.started, r->t.finished, r->t.exec_ns, r->kills,
                                           r->forks,     r->m_min,      out};
}

int dlong_job(struct dlong *l) {
  /* a fresh task each run: the last one's output is in its INOUT buffers
   * (bfs's levels), and a run started from it would have nothing to do */
  struct coop_app_opts o = {.mode = COOP_APP_MODE_COOPERATIVE, .query_barrier = l->query};
  coop_app_task_free(&l->t);
  int e = coop_app_task_prepare(&l->t, l->a, l->in, &o, coop_info(l->c)->workers);
  if (e) return e;
  coop_job *j = long_desc(l);
  uint64_t id;
  e = coop_submit(l->c, j, &id);
  coop_job_free(j);
  struct coop_result r;
  if (!e) e = coop_wait(l->c, id, l->timeout_ms, &r);
  if (e) return e;
  void *out = NULL;
  size_t bytes = 0;
  if (r.state != COOP_STATE_DONE) {
    fprintf(stderr, "%s job: %s: %s\n", l->a->name, coop_state_name(r.state), r.message);
    e = COOP_EFAILED;
  } else if (l->keep_outputs) {
    e = coop_app_task_collect(&l->t, l->in, &out, &bytes);
  }
  if (!e) add_run(l, &r, out);
  coop_result_free(&r);
  return e;
}

static void *long_main(void *p) {
  struct dlong *l = p;
  while (!atomic_load(&l->stop) && !(l->err = dlong_job(l))) {
  }
  return NULL;
}

int dlong_start(struct dlong *l) {
  atomic_store(&l->stop, 0);
  l->err = 0;
  if (pthread_create(&l->th, NULL, long_main, l)) return COOP_ENOMEM;
  l->started = 1;
  return 0;
}

int dlong_stop(struct dlong *l) {
  if (!l->started) return 0;
  atomic_store(&l->stop, 1);
  pthread_join(l->th, NULL);
  l->started = 0;
  return l->err;
}

void dlong_clear(struct dlong *l) {
  for (size_t i = 0; i < l->nruns; i++) free(l->runs[i].out);
  l->nruns = 0;
}

void dlong_close(struct dlong *l) {
  dlong_stop(l);
  dlong_clear(l);
  free(l->runs);
  coop_app_task_free(&l->t);
  free(l->zeros);
  coop_disconnect(l->c);
  memset(l, 0, sizeof *l);
}
