/*
 * side_child.c: coop-bench-side's second process, the bench itself run
 * again with --child (side_gfx.c's side_child_main): the plain matmul
 * built, loaded and warmed up there, then released every P between "go"
 * and "stop", its samples sent back over a pipe. Setup (a) runs it beside
 * the megakernel of this process (the driver time-slices between the two
 * contexts); mps runs it as an MPS client, with an environment of its own.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "side_setup.h"

extern char **environ;

/* This process's environment with env's "NAME=VALUE" strings in place of
 * (or beside) its own: built before fork, for execve. malloc'ed array,
 * the strings not copied. */
char **side_child_env(char *const *env) {
  size_t n = 0, m = 0;
  while (environ && environ[n]) n++;
  while (env && env[m]) m++;
  char **e = malloc((n + m + 1) * sizeof *e);
  if (!e) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int replaced = 0;
    for (size_t j = 0; j < m && !replaced; j++) {
      size_t len = strcspn(env[j], "=");
      replaced = !strncmp(environ[i], env[j], len) && environ[i][len] == '=';
    }
    if (!replaced) e[k++] = environ[i];
  }
  for (size_t j = 0; j < m; j++) e[k++] = env[j];
  e[k] = NULL;
  return e;
}

/* A line from fd within timeout_ms (without the newline); 0 on EOF,
 * timeout or error. */
int read_line_to(int fd, char *buf, size_t n, int timeout_ms) {
  size_t len = 0;
  int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;
  while (len + 1 < n) {
    int64_t left = (end - now_ns()) / 1000000;
    struct pollfd pf = {fd, POLLIN, 0};
    if (left <= 0 || poll(&pf, 1, (int)left) <= 0) break;
    ssize_t r = read(fd, buf + len, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (buf[len] == '\n') {
      buf[len] = 0;
      return 1;
    }
    len++;
  }
  buf[len] = 0;
  return 0;
}

int child_exec(struct child *c, const char *mode, char *const *args, char *const *env,
               const char *what) {
  memset(c, 0, sizeof *c);
  c->pid = -1;
  c->ctrl = c->data = -1;
  int cp[2], dp[2];
  if (pipe2(cp, O_CLOEXEC)) return 1;
  if (pipe2(dp, O_CLOEXEC)) {
    close(cp[0]);
    close(cp[1]);
    return 1;
  }
  size_t na = 0;
  while (args && args[na]) na++;
  char fds[2][32];
  snprintf(fds[0], 32, "%d", cp[0]);
  snprintf(fds[1], 32, "%d", dp[1]);
  char **argv = malloc((na + 5) * sizeof *argv);
  char **envp = side_child_env(env);
  if (!argv || !envp) {
    free(argv);
    free(envp);
    close(cp[0]);
    close(cp[1]);
    close(dp[0]);
    close(dp[1]);
    fprintf(stderr, SB ": out of memory\n");
    return 1;
  }
  argv[0] = SB;
  argv[1] = (char *)mode;
  argv[2] = fds[0];
  argv[3] = fds[1];
  for (size_t i = 0; i < na; i++) argv[4 + i] = args[i];
  argv[4 + na] = NULL;
  fflush(NULL);
  c->pid = fork();
  if (c->pid == 0) {
    fcntl(cp[0], F_SETFD, 0);
    fcntl(dp[1], F_SETFD, 0);
    execve("/proc/self/exe", argv, envp);
    _exit(127);
  }
  int fork_errno = errno;
  free(argv);
  free(envp);
  close(cp[0]);
  close(dp[1]);
  c->ctrl = cp[1];
  c->data = dp[0];
  if (c->pid < 0) {
    fprintf(stderr, SB ": %s: fork: %s\n", what, strerror(fork_errno));
    return 1;
  }
  char line[512];
  if (!read_line_to(c->data, line, sizeof line, 300000) || strncmp(line, "ready ", 6)) {
    fprintf(stderr, SB ": %s did not start: %s\n", what, line[0] ? line : "(no answer in 300 s)");
    return 1;
  }
  snprintf(c->name, sizeof c->name, "%.255s", line + 6);
  return 0;
}

int child_spawn(struct child *c, const struct sopts *o, const struct plain *p, char *const *env) {
  char a[9][32];
  snprintf(a[0], 32, "%ld", o->device);
  snprintf(a[1], 32, "%u", p->n);
  snprintf(a[2], 32, "%u", p->reps);
  snprintf(a[3], 32, "%u", p->grid);
  snprintf(a[4], 32, "%u", p->local);
  snprintf(a[5], 32, "%lld", (long long)(o->period_ms * 1e6));
  snprintf(a[6], 32, "%ld", o->timeout_s);
  snprintf(a[7], 32, "%ld", o->carveout);
  snprintf(a[8], 32, "%d", p->io);
  char *args[] = {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], NULL};
  return child_exec(c, "--child", args, env, "the matmul's process");
}

int child_say(struct child *c, const char *what) {
  size_t len = strlen(what);
  return write(c->ctrl, what, len) != (ssize_t)len;
}

/* After "stop": the samples and the child's verdict. */
int child_collect(struct child *c, struct result *x) {
  char line[512];
  size_t cap = 0;
  while (read_line_to(c->data, line, sizeof line, 60000)) {
    if (!strncmp(line, "end ", 4)) {
      int rc = atoi(line + 4);
      if (rc) fprintf(stderr, SB ": %s: the matmul's process failed: %s\n", x->name, line + 6);
      return rc != 0;
    }
    struct sample s;
    memset(&s, 0, sizeof s);
    long long v[6];
    int chk;
    if (sscanf(line, "s %d %lld %lld %lld %lld %lld", &chk, &v[0], &v[1], &v[2], &v[3], &v[4]) != 6)
      continue;
    s.chk = chk;
    s.t_release = v[0];
    s.t_launch = v[1];
    s.t_done = v[2];
    s.exec_ns = v[3];
    s.t_next = v[4];
    if (x->ns == cap) {
      cap = cap ? 2 * cap : 256;
      x->s = realloc(x->s, cap * sizeof *x->s);
      if (!x->s) exit(1);
    }
    x->s[x->ns++] = s;
  }
  fprintf(stderr, SB ": %s: the matmul's process did not report\n", x->name);
  return 1;
}

int child_end(struct child *c) {
  if (c->pid <= 0) return 0;
  if (c->ctrl >= 0) close(c->ctrl);
  if (c->data >= 0) close(c->data);
  c->ctrl = c->data = -1;
  /* it ends on the closed pipe; one stuck (in the driver) is killed after 60 s */
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 6000 && (r = waitpid(c->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
  if (r == 0) {
    fprintf(stderr, SB ": process %d did not end within 60 s of its pipes closing: killed\n",
            (int)c->pid);
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &st, 0);
    st = 1;
  }
  c->pid = -1;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
