/*
 * coopctl_keys.c: top's keys (q quits, s changes the order of the jobs),
 * read from a terminal in non-canonical mode between refreshes. Signals
 * stay on (Ctrl-C still stops top); the terminal's settings come back at
 * exit, and on SIGINT/SIGTERM, which would otherwise leave the shell
 * without echo.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "coopctl.h"

static struct termios saved;
static volatile sig_atomic_t raw_on;

static void restore(void) {
  if (raw_on) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
  raw_on = 0;
}

static void on_signal(int sig) {
  restore(); /* tcsetattr is async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

int keys_open(void) {
  if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved)) return 0;
  struct termios t = saved;
  t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
  t.c_cc[VMIN] = 0;
  t.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSANOW, &t)) return 0;
  raw_on = 1;
  atexit(restore);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  return 1;
}

void keys_close(void) { restore(); }

int keys_wait(unsigned ms) {
  double end = now_s() + ms / 1000.0;
  for (;;) {
    double left = end - now_s();
    if (left <= 0) return 0;
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    int n = poll(&p, 1, (int)(left * 1000) + 1);
    if (n < 0 && errno != EINTR) return 0;
    if (n <= 0) continue;
    unsigned char c;
    ssize_t r = read(STDIN_FILENO, &c, 1);
    if (r == 1) return c;
    if (r <= 0) { /* a hang-up: no more keys, wait out the interval */
      poll(NULL, 0, (int)(left * 1000) + 1);
      return 0;
    }
  }
}
