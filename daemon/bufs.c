/* bufs.c: the table of device buffers (bufs.h). */
#include "bufs.h"

#include <stdio.h>
#include <stdlib.h>

#include "daemon.h"
#include "log.h"

struct dbuf *dbuf_new(struct daemon *dm, struct uid_use *u, struct session *owner, uint8_t device,
                      uint8_t flags, uint64_t size) {
  struct dbuf *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->id = ++dm->next_buf;
  b->uid = u->uid;
  b->device = device;
  b->flags = flags;
  b->size = size;
  b->owner = owner;
  b->next = dm->bufs;
  dm->bufs = b;
  u->bufs++;
  u->bytes += size;
  return b;
}

uint64_t dbuf_bytes_on(const struct daemon *dm, uint32_t uid, uint8_t device, uint64_t *others) {
  uint64_t n[2] = {0, 0}; /* uid's, the others' */
  for (const struct dbuf *b = dm->bufs; b; b = b->next)
    if (b->device == device) n[b->uid != uid] += b->size;
  *others = n[1];
  return n[0];
}

struct dbuf *dbuf_lookup(struct daemon *dm, uint32_t uid, uint64_t id, struct job_err *e) {
  for (struct dbuf *b = dm->bufs; b; b = b->next)
    if (b->id == id && b->uid == uid && b->ready && !b->freed) return b;
  e->code = COOP_ENOJOB;
  snprintf(e->message, sizeof e->message, "no device buffer %llu of yours", (unsigned long long)id);
  return NULL;
}

static void on_freed(struct dev_bufop *op) { free(op); }

/* Off the table and its user's counts, and (if it was made) off the
 * device. */
static void drop(struct daemon *dm, struct dbuf *b) {
  for (struct dbuf **p = &dm->bufs; *p; p = &(*p)->next)
    if (*p == b) {
      *p = b->next;
      break;
    }
  struct uid_use *u = uid_find(dm, b->uid);
  if (u) {
    u->bufs--;
    u->bytes -= b->size;
    uid_put(dm, u);
  }
  /* at a stop the device threads are gone, and their arenas with them */
  struct dev_bufop *op = b->ready && !dm->stopping ? calloc(1, sizeof *op) : NULL;
  if (op) {
    op->kind = DEV_BUF_FREE;
    op->arg = b->arg;
    op->gen = b->gen;
    op->size = b->size; /* off its user's arena bytes there (dev_bufs.c) */
    op->owner = b->uid + 1;
    op->fd = -1;
    op->done = on_freed;
    dev_buf_op(dm->devs[b->device], op);
  } else if (b->ready && !dm->stopping) {
    log_warn(
        "device buffer %llu: out of memory to free it: its arena block stays until the "
        "device process is replaced",
        (unsigned long long)b->id);
  }
  free(b);
}

void dbuf_release(struct daemon *dm, struct dbuf *b) {
  if (b->freed) return;
  b->freed = 1;
  if (!b->users) drop(dm, b);
}

void dbuf_unuse(struct daemon *dm, struct dbuf *b) {
  if (--b->users == 0 && b->freed) drop(dm, b);
}

void dbuf_job_done(struct daemon *dm, struct job *j) {
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].devbuf) {
      dbuf_unuse(dm, j->args[i].devbuf);
      j->args[i].devbuf = NULL;
    }
}

void dbuf_session_closed(struct daemon *dm, struct session *s) {
  for (struct dbuf *b = dm->bufs, *n; b; b = n) {
    n = b->next; /* release may drop b, never another entry */
    if (b->owner != s) continue;
    b->owner = NULL;
    if (!(b->flags & COOP_BUFFER_KEEP)) dbuf_release(dm, b);
  }
}

void dbuf_free_all(struct daemon *dm) {
  while (dm->bufs) {
    struct dbuf *b = dm->bufs;
    dm->bufs = b->next;
    free(b);
  }
}
