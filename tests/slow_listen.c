/* slow_listen.c: an LD_PRELOAD shim for test_daemon's
 * socket_answers_once_it_appears. listen() waits 300 ms before the real
 * one, so that a daemon whose socket file appears at bind(), before it
 * listens, shows a window in which a client finds the file and is refused
 * (ECONNREFUSED). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <time.h>

int listen(int fd, int backlog) {
  int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
  struct timespec ts = {0, 300000000};
  nanosleep(&ts, NULL);
  return real ? real(fd, backlog) : -1;
}
