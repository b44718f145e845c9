/* coopd_proc.c: see coopd_proc.h. */
#define _GNU_SOURCE /* mkdtemp */
#include "coopd_proc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_SETS 24

int coopd_dir(struct coopd_proc *d) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/coop-bench-XXXXXX");
  if (!mkdtemp(d->dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(d->sock, sizeof d->sock, "%s/coop.sock", d->dir);
  snprintf(d->log, sizeof d->log, "%s/coopd.log", d->dir);
  snprintf(d->kdir, sizeof d->kdir, "%s/kernels", d->dir);
  if (mkdir(d->kdir, 0700)) {
    perror(d->kdir);
    return 1;
  }
  return 0;
}

int coopd_kernel_file(const struct coopd_proc *d, const char *name, const char *head,
                      const char *source) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s.cl", d->kdir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  if (head) fprintf(f, "%s\n", head);
  fputs(source, f);
  return fclose(f) != 0;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

/* In the child: the log as stdout and stderr, then coopd. */
static void child_exec(const struct coopd_proc *d, const char *path, char **argv) {
  if (!freopen(d->log, "w", stderr) || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(126);
  execv(path, argv);
  fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
  fflush(stderr); /* _exit flushes nothing, and the reopened stderr may buffer */
  _exit(127);
}

int coopd_start(struct coopd_proc *d, const char *path, const char *const *sets, int timeout_ms) {
  char *argv[8 + 2 * MAX_SETS + 1];
  int n = 0;
  argv[n++] = (char *)path;
  argv[n++] = "--socket";
  argv[n++] = d->sock;
  argv[n++] = "--kernels";
  argv[n++] = d->kdir;
  argv[n++] = "--log-level";
  /* COOP_LOG_LEVEL, as coopd's own environment would say (its log is
   * d->log, kept when coopd_stop is asked to) */
  const char *level = getenv("COOP_LOG_LEVEL");
  argv[n++] = (char *)(level && *level ? level : "warn");
  /* the journal is for recovering jobs after a crash: a bench has none to recover */
  static char journal[] = "server.journal=off";
  argv[n++] = "--set";
  argv[n++] = journal;
  for (int i = 0; sets && sets[i] && i < MAX_SETS - 1; i++) {
    argv[n++] = "--set";
    argv[n++] = (char *)sets[i];
  }
  argv[n] = NULL;
  fflush(NULL);
  d->pid = fork();
  if (d->pid < 0) {
    perror("fork");
    return 1;
  }
  if (d->pid == 0) child_exec(d, path, argv);
  for (int64_t t0 = now_ns(); now_ns() - t0 < (int64_t)timeout_ms * 1000000; nap_ms(50)) {
    if (!access(d->sock, F_OK)) return 0;
    int st;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
      d->pid = 0;
      fprintf(stderr, "coopd exited at start-up (status 0x%x)\n", st);
      coopd_log_tail(d, stderr, 20);
      return 1;
    }
  }
  fprintf(stderr, "coopd made no socket within %d s\n", timeout_ms / 1000);
  coopd_log_tail(d, stderr, 20);
  return 1;
}

static void remove_dir(const struct coopd_proc *d) {
  DIR *k = opendir(d->kdir);
  for (struct dirent *e; k && (e = readdir(k));) {
    if (e->d_name[0] == '.') continue;
    char p[400];
    snprintf(p, sizeof p, "%s/%s", d->kdir, e->d_name);
    unlink(p);
  }
  if (k) closedir(k);
  rmdir(d->kdir);
  unlink(d->log);
  unlink(d->sock);
  rmdir(d->dir);
}

int coopd_stop(struct coopd_proc *d, int keep_log) {
  int rc = 0;
  if (d->pid > 0) {
    kill(d->pid, SIGTERM);
    int st = 0, done = 0;
    for (int i = 0; i < 600 && !done; i++) {
      done = waitpid(d->pid, &st, WNOHANG) == d->pid;
      if (!done) nap_ms(50);
    }
    if (!done) {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, &st, 0);
    }
    rc = !(done && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    d->pid = 0;
  }
  if (keep_log || rc)
    fprintf(stderr, "coopd's log: %s\n", d->log);
  else if (d->dir[0])
    remove_dir(d);
  return rc;
}

void coopd_log_tail(const struct coopd_proc *d, FILE *f, int lines) {
  FILE *l = fopen(d->log, "r");
  if (!l) return;
  /* about `lines` lines from the end: the last bytes, from a line's start */
  long back = 160L * lines;
  if (fseek(l, -back, SEEK_END))
    rewind(l); /* a shorter log: all of it */
  else
    for (int ch; (ch = fgetc(l)) != EOF && ch != '\n';) {
    }
  fprintf(f, "---- the end of %s ----\n", d->log);
  char buf[512];
  while (fgets(buf, sizeof buf, l)) fputs(buf, f);
  fclose(l);
}

/* utime + stime of one process, clock ticks; its parent into *ppid. */
static double cpu_ticks(long pid, long *ppid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* after the command's closing parenthesis: the command may hold spaces */
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  long pp = 0;
  if (p) sscanf(p + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &pp, &ut, &st);
  if (ppid) *ppid = pp;
  return (double)(ut + st);
}

double coopd_cpu_s(long pid) {
  if (pid <= 0) return 0;
  double t = cpu_ticks(pid, NULL);
  /* the device process is coopd's child: found by its parent in /proc */
  DIR *d = opendir("/proc");
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    long ppid = 0;
    double c = cpu_ticks(atol(e->d_name), &ppid);
    if (ppid == pid) t += c;
  }
  if (d) closedir(d);
  return t / (double)sysconf(_SC_CLK_TCK);
}

int exe_sibling(const char *name, char *out, size_t n) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return 1;
  *slash = '\0';
  return (size_t)snprintf(out, n, "%s/%s", self, name) >= n;
}
