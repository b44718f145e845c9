/*
 * task.c: an application's task as data (app.h): the builders its prepare
 * calls, and what both executors share (prepare with the mode first,
 * collect, free). No runtime here: coopapphost and coopapps both have it.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"

static struct coop_app_arg *next_arg(struct coop_app_task *t) {
  if (t->err) return NULL;
  if (t->nargs == COOP_RT_MAX_ARGS) {
    t->err = COOP_EARGS;
    return NULL;
  }
  struct coop_app_arg *a = &t->arg[t->nargs];
  memset(a, 0, sizeof *a);
  return a;
}

int coop_app_task_u32(struct coop_app_task *t, uint32_t v) {
  struct coop_app_arg *a = next_arg(t);
  if (!a) return t->err;
  a->type = COOP_APP_U32;
  a->value = v;
  t->nargs++;
  return 0;
}

void *coop_app_task_buf(struct coop_app_task *t, enum coop_app_dir dir, size_t size) {
  struct coop_app_arg *a = next_arg(t);
  if (!a) return NULL;
  if (size == 0 || dir == COOP_APP_SCRATCH) {
    t->err = COOP_EINVAL;
    return NULL;
  }
  if (!(a->host = calloc(1, size))) {
    t->err = COOP_ENOMEM;
    return NULL;
  }
  a->buf = 1;
  a->dir = dir;
  a->size = size;
  if (dir & COOP_APP_IN) {
    a->init = a->host;
    a->init_len = size;
  }
  t->nargs++;
  return a->host;
}

int coop_app_task_ref(struct coop_app_task *t, const void *data, size_t len, size_t size) {
  struct coop_app_arg *a = next_arg(t);
  if (!a) return t->err;
  if (size == 0 || len > size || (len && !data)) return t->err = COOP_EINVAL;
  a->buf = 1;
  a->dir = COOP_APP_IN;
  a->size = size;
  a->init = data;
  a->init_len = len;
  t->nargs++;
  return 0;
}

int coop_app_task_csr(struct coop_app_task *t, const struct coop_graph *g) {
  size_t n = g->n, m = g->m;
  coop_app_task_ref(t, g->row, (n + 1) * 4, (n + 1) * 4);
  return coop_app_task_ref(t, g->col, m * 4, (m ? m : 1) * 4); /* no edges: still a buffer */
}

int coop_app_task_scratch(struct coop_app_task *t, size_t size) {
  struct coop_app_arg *a = next_arg(t);
  if (!a) return t->err;
  if (size == 0) return t->err = COOP_EINVAL;
  a->buf = 1;
  a->dir = COOP_APP_SCRATCH;
  a->size = size;
  t->nargs++;
  return 0;
}

void *coop_app_task_take(struct coop_app_task *t, unsigned i) {
  if (i >= t->nargs) return NULL;
  void *p = t->arg[i].host;
  t->arg[i].host = NULL;
  t->arg[i].init = NULL;
  t->arg[i].init_len = 0;
  return p;
}

void coop_app_task_free(struct coop_app_task *t) {
  for (unsigned i = 0; i < t->nargs; i++) free(t->arg[i].host);
  memset(t, 0, sizeof *t);
}

int coop_app_task_prepare(struct coop_app_task *t, const struct coop_app *a,
                          const struct coop_app_input *in, const struct coop_app_opts *o,
                          uint32_t groups) {
  memset(t, 0, sizeof *t);
  t->app = a;
  t->groups = groups;
  int r = a->prepare ? coop_app_task_u32(t, o->mode) : COOP_EINVAL;
  if (r == 0) r = a->prepare(in, o, t);
  if (r == 0) r = t->err;
  if (r == 0 && !a->collect &&
      (t->out >= t->nargs || !t->arg[t->out].buf || !(t->arg[t->out].dir & COOP_APP_OUT)))
    r = COOP_EINVAL; /* the app names no output */
  if (r) coop_app_task_free(t);
  return r;
}

int coop_app_task_collect(struct coop_app_task *t, const struct coop_app_input *in, void **out,
                          size_t *bytes) {
  *out = NULL;
  *bytes = 0;
  if (t->app->collect) return t->app->collect(in, t, out, bytes);
  size_t size = t->arg[t->out].size;
  if (!(*out = coop_app_task_take(t, t->out))) return COOP_ENOMEM;
  *bytes = size;
  return 0;
}
