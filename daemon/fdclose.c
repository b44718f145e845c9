/* fdclose.c: see fdclose.h. */
#include "fdclose.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fdio.h"
#include "log.h"

/* A user's descriptors waiting for its closer thread. The list and every
 * count are under `lock`; the loop adds, the thread takes. */
struct closer {
  uint32_t uid;
  unsigned n, cap;
  int *fds;
  struct closer *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct closer *closers; /* users with a thread running */

static struct closer *find(uint32_t uid) {
  struct closer *c = closers;
  while (c && c->uid != uid) c = c->next;
  return c;
}

/* Closes the user's descriptors until none is left, then goes. */
static void *closer_main(void *arg) {
  struct closer *c = arg;
  pthread_mutex_lock(&lock);
  while (c->n) {
    int fd = c->fds[0];
    for (unsigned i = 1; i < c->n; i++) c->fds[i - 1] = c->fds[i];
    c->n--;
    pthread_mutex_unlock(&lock);
    close(fd); /* may wait as long as the file's filesystem likes */
    pthread_mutex_lock(&lock);
  }
  for (struct closer **p = &closers; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  pthread_mutex_unlock(&lock);
  free(c->fds);
  free(c);
  return NULL;
}

void fdclose_client(int fd, uint32_t uid, uint32_t pid) {
  if (fd < 0) return;
  if (fdio_closes_at_once(fd, pid)) {
    close(fd);
    return;
  }
  pthread_mutex_lock(&lock);
  struct closer *c = find(uid);
  int fresh = !c;
  if (fresh && (c = calloc(1, sizeof *c))) c->uid = uid;
  if (c && c->n == c->cap) {
    unsigned cap = c->cap ? 2 * c->cap : 8;
    int *t = realloc(c->fds, cap * sizeof *t);
    if (t) c->fds = t, c->cap = cap;
  }
  int queued = c && c->n < c->cap;
  if (queued) c->fds[c->n++] = fd;
  pthread_t t;
  pthread_attr_t a;
  if (queued && fresh) {
    c->next = closers;
    closers = c;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, closer_main, c)) { /* no thread: closed here after all */
      closers = c->next;
      queued = 0;
    }
    pthread_attr_destroy(&a);
  }
  pthread_mutex_unlock(&lock);
  if (!queued) {
    if (fresh && c) free(c->fds), free(c);
    log_warn(
        "uid %u: a descriptor of a file another process serves is closed on the loop "
        "(out of memory or threads)",
        uid);
    close(fd);
  }
}

int fdclose_pending(uint32_t uid) {
  pthread_mutex_lock(&lock);
  int n = find(uid) != NULL;
  pthread_mutex_unlock(&lock);
  return n;
}
