/*
 * coop_kernels.c: kernels with their argument names and rules
 * (coop_kernels_info) and their buffers' element types (coop_kernels_elems), and kernel authors'
 * requests (coop_kernel_add, coop_kernel_remove, coop_reload; PROTOCOL.md, "Kernel authors"), which
 * wait for the reload they start: a build takes seconds to minutes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_internal.h"

/* A reload's answer comes when it has ended, however long the build: the
 * daemon always answers, and closes the connection if it cannot. */
#define KERNEL_WAIT_FOREVER (-1)

static void copy_info(struct coop_kernel_info *d, const struct coop_wire_kernel *s) {
  memset(d, 0, sizeof *d);
  snprintf(d->k.name, sizeof d->k.name, "%s", s->name);
  d->k.cooperative = s->cooperative;
  d->k.nargs = s->nargs;
  d->owner = s->owner;
  for (unsigned a = 0; a < s->nargs && a < COOP_MAX_ARGS; a++) {
    d->k.types[a] = s->types[a];
    snprintf(d->argnames[a], sizeof d->argnames[a], "%s", s->argnames[a]);
  }
  d->nrules = s->nrules;
  for (unsigned r = 0; r < s->nrules && r < 16; r++)
    snprintf(d->rules[r], sizeof d->rules[r], "%s", s->rules[r]);
}

static void copy_elems(void *d, const struct coop_wire_kernel *s) {
  struct coop_kernel_elems *e = d;
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", s->name);
  e->nargs = s->nargs;
  for (unsigned a = 0; a < s->nargs && a < COOP_MAX_ARGS; a++) e->elems[a] = s->elems[a];
}

static void copy_info_rec(void *d, const struct coop_wire_kernel *s) { copy_info(d, s); }

/* KERNELS, each record of the list copied by copy into an array of
 * elements of size bytes. */
static int kernel_list(coop_conn *c, size_t size,
                       void (*copy)(void *, const struct coop_wire_kernel *), void **list,
                       size_t *n) {
  coop__clear_msg();
  if (!c || !list || !n) return coop__fail(COOP_EINVAL, "kernels: no connection or list");
  *list = NULL;
  *n = 0;
  union coop_msg r;
  struct coop_frame *f = NULL;
  int e = coop__request(c, COOP_MSG_KERNELS, NULL, NULL, 0, coop__timeout(c), COOP_MSG_KERNEL_LIST,
                        &r, &f);
  char *l = NULL;
  if (!e && r.kernels.n && !(l = calloc(r.kernels.n, size)))
    e = coop__fail(COOP_ENOMEM, "out of memory");
  uint32_t off = 0;
  struct coop_wire_kernel *k = malloc(sizeof *k); /* 3 KiB: not on a caller's small stack */
  if (!e && !k) e = coop__fail(COOP_ENOMEM, "out of memory");
  for (uint32_t i = 0; !e && i < r.kernels.n; i++) {
    if (coop_wire_kernel_next(&r.kernels, &off, k))
      e = coop__fail(COOP_EPROTO, "bad kernel record");
    else
      copy(l + i * size, k);
  }
  free(k);
  coop__frame_free(f);
  if (e) return free(l), e;
  *list = l;
  *n = r.kernels.n;
  return 0;
}

int coop_kernels_info(coop_conn *c, struct coop_kernel_info **list, size_t *n) {
  void *l = NULL;
  int e = kernel_list(c, sizeof **list, copy_info_rec, list ? &l : NULL, n); /* NULL: EINVAL */
  if (list) *list = l;
  return e;
}

int coop_kernels_elems(coop_conn *c, struct coop_kernel_elems **list, size_t *n) {
  void *l = NULL;
  int e = kernel_list(c, sizeof **list, copy_elems, list ? &l : NULL, n); /* NULL: EINVAL */
  if (list) *list = l;
  return e;
}

/* The length of a log's first line (the log is not terminated). */
static int first_line(const uint8_t *log, uint32_t len) {
  const uint8_t *nl = len ? memchr(log, '\n', len) : NULL;
  return (int)(nl ? (uint32_t)(nl - log) : len);
}

/* One request answered by KERNEL_DONE: its outcome, the log into *log. */
static int kernel_request(coop_conn *c, uint16_t type, const union coop_msg *q,
                          struct coop_kernel_info *info, char **log) {
  if (log) *log = NULL;
  union coop_msg *r = malloc(sizeof *r);
  if (!r) return coop__fail(COOP_ENOMEM, "out of memory");
  struct coop_frame *f = NULL;
  int e = coop__request(c, type, q, NULL, 0, KERNEL_WAIT_FOREVER, COOP_MSG_KERNEL_DONE, r, &f);
  if (!e) {
    const struct coop_msg_kernel_done *d = &r->kernel_done;
    e = d->error;
    if (e) /* the first line in the message, the whole log beside it */
      coop__fail(e, "%.*s", first_line(d->log, d->log_len), (const char *)d->log);
    if (e && log && d->log_len && (*log = malloc(d->log_len + 1))) {
      memcpy(*log, d->log, d->log_len);
      (*log)[d->log_len] = '\0';
    }
    if (!e && info && d->has_kernel) copy_info(info, &d->kernel);
  }
  coop__frame_free(f);
  free(r);
  return e;
}

int coop_kernel_add(coop_conn *c, const char *file, const char *source, size_t len,
                    struct coop_kernel_info *info, char **log) {
  coop__clear_msg();
  if (log) *log = NULL;
  if (!c || !file || (!source && len))
    return coop__fail(COOP_EINVAL, "kernel add: no connection, file or source");
  if (strlen(file) >= COOP_NAME_MAX)
    return coop__fail(COOP_EINVAL, "kernel add: the file name %s is %zu bytes (at most %d)", file,
                      strlen(file), COOP_NAME_MAX - 1);
  if (len > COOP_SOURCE_MAX)
    return coop__fail(COOP_ETOOBIG, "kernel add: %s is %zu bytes; the protocol takes at most %u",
                      file, len, COOP_SOURCE_MAX);
  union coop_msg *q = calloc(1, sizeof *q);
  if (!q) return coop__fail(COOP_ENOMEM, "out of memory");
  snprintf(q->kernel_add.file, sizeof q->kernel_add.file, "%s", file);
  q->kernel_add.source = (const uint8_t *)source;
  q->kernel_add.source_len = (uint32_t)len;
  int e = kernel_request(c, COOP_MSG_KERNEL_ADD, q, info, log);
  free(q);
  return e;
}

int coop_kernel_remove(coop_conn *c, const char *name, char **log) {
  coop__clear_msg();
  if (log) *log = NULL;
  if (!c || !name || strlen(name) >= COOP_NAME_MAX)
    return coop__fail(COOP_EINVAL, "kernel remove: no connection, or a bad name");
  union coop_msg *q = calloc(1, sizeof *q);
  if (!q) return coop__fail(COOP_ENOMEM, "out of memory");
  snprintf(q->kernel_remove.name, sizeof q->kernel_remove.name, "%s", name);
  int e = kernel_request(c, COOP_MSG_KERNEL_REMOVE, q, NULL, log);
  free(q);
  return e;
}

int coop_reload(coop_conn *c, char **log) {
  coop__clear_msg();
  if (log) *log = NULL;
  if (!c) return coop__fail(COOP_EINVAL, "reload: no connection");
  return kernel_request(c, COOP_MSG_RELOAD, NULL, NULL, log);
}
