/* childlog.c: see childlog.h. */
#define _GNU_SOURCE
#include "childlog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* One relayed stream: its pipe's read end and the partial line so far. A
 * line longer than the buffer goes out in pieces, each with the prefix. */
struct stream {
  int fd;
  char prio;
  size_t len;
  char buf[1024];
};

static pthread_t relay_thread;
static int out_fd = -1; /* the journal's stream, as stderr was at start */

/* One write per line: coopd's own lines (log.c) are whole writes too, so
 * the two never interleave within a line. */
static void emit(char prio, const char *s, size_t n) {
  char line[sizeof((struct stream *)0)->buf + 8];
  if (n && s[n - 1] == '\n') n--;
  line[0] = '<', line[1] = prio, line[2] = '>';
  memcpy(line + 3, s, n);
  line[3 + n] = '\n';
  for (size_t at = 0, len = n + 4; at < len;) {
    ssize_t w = write(out_fd, line + at, len - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    at += (size_t)w;
  }
}

/* Reads what is there; 0 at end of file. */
static int pump(struct stream *s) {
  ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
  if (n < 0 && errno == EINTR) return 1;
  if (n <= 0) {
    if (s->len) emit(s->prio, s->buf, s->len);
    s->len = 0;
    return 0;
  }
  s->len += (size_t)n;
  size_t start = 0;
  for (size_t i = 0; i < s->len; i++)
    if (s->buf[i] == '\n') {
      emit(s->prio, s->buf + start, i + 1 - start);
      start = i + 1;
    }
  if (start == 0 && s->len == sizeof s->buf) start = s->len, emit(s->prio, s->buf, s->len);
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
  return 1;
}

static void *relay(void *arg) {
  struct stream *st = arg; /* [0] stdout, [1] stderr */
  int open_n = 2;
  struct pollfd pf[2] = {{st[0].fd, POLLIN, 0}, {st[1].fd, POLLIN, 0}};
  while (open_n) {
    if (poll(pf, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++)
      if (pf[i].fd >= 0 && pf[i].revents && !pump(&st[i])) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_n--;
      }
  }
  return NULL;
}

/* At exit: stdio's buffers into the pipes, the pipes' write ends closed
 * (descriptors 1 and 2 become /dev/null), then the relay drains them. At
 * most 500 ms: a copy of a write end that some library made would keep the
 * relay reading, and the front waits for this process to exit. */
static void at_exit(void) {
  fflush(stdout);
  fflush(stderr);
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) return;
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  close(null);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 500000000;
  if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  pthread_timedjoin_np(relay_thread, NULL, &until);
}

int childlog_start(void) {
  static struct stream st[2];
  if (out_fd >= 0 || !log_under_journal()) return 0;
  int p[2][2];
  if (pipe2(p[0], O_CLOEXEC)) return -errno;
  if (pipe2(p[1], O_CLOEXEC)) {
    int e = errno;
    close(p[0][0]), close(p[0][1]);
    return -e;
  }
  out_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  int old_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  st[0] = (struct stream){.fd = p[0][0], .prio = '6'};
  st[1] = (struct stream){.fd = p[1][0], .prio = '4'};
  fflush(stdout);
  fflush(stderr);
  int e = out_fd < 0 || old_out < 0 || dup2(p[0][1], STDOUT_FILENO) < 0 ||
          dup2(p[1][1], STDERR_FILENO) < 0;
  close(p[0][1]), close(p[1][1]);
  if (!e) e = pthread_create(&relay_thread, NULL, relay, st);
  if (e) { /* as they were */
    if (old_out >= 0) dup2(old_out, STDOUT_FILENO), close(old_out);
    if (out_fd >= 0) dup2(out_fd, STDERR_FILENO), close(out_fd);
    out_fd = -1;
    close(p[0][0]), close(p[1][0]);
    return -EIO;
  }
  close(old_out);
  setvbuf(stdout, NULL, _IOLBF, 0); /* a kernel's printf reaches the journal as it comes */
  atexit(at_exit);
  return 0;
}
