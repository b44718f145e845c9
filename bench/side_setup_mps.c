/*
 * side_setup_mps.c: coop-bench-side's setup (f), MPS. The long kernel and
 * the matmul run as two client processes of one MPS server, so their
 * kernels share the SMs at once instead of taking turns in time slices as
 * in (a): once with no limits, once with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
 * 90 for the long kernel's process and 10 for the matmul's.
 *
 * The bench starts its own control daemon, never the machine's: fresh
 * CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY under a mkdtemp
 * directory, `nvidia-cuda-mps-control -d` with them, and `echo quit |
 * nvidia-cuda-mps-control` at the end, on the error paths and on SIGINT,
 * SIGTERM and SIGHUP too. The compute mode is left as it is. Without
 * nvidia-cuda-mps-control on PATH the setup is skipped with a line that
 * says so.
 *
 * Both clients are this bench again: the matmul's is (a)'s process
 * (--child); the long kernel's is --long-child, which parses the same
 * command line, generates the input, launches its own megakernel and runs
 * the long kernel back to back between "go" and the end of its window,
 * its runs checked (side_check_runs), then reports its runs. This process's megakernel is
 * closed before (it would time-slice against the MPS server); its plain
 * CUDA context stays, idle.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "side_setup.h"

#define MPS_CONTROL "nvidia-cuda-mps-control"

/* ------------------------------------------------------ the daemon */

/* Everything the quit needs, built before the daemon starts: the signal
 * handler only forks and execs (both async-signal-safe). */
static struct {
  char control[4096]; /* nvidia-cuda-mps-control's path */
  char dir[256], pipe_env[400], log_env[400];
  char *quit_argv[4];
  char *quit_env[4];
  volatile sig_atomic_t running;
  struct sigaction old[3];
} mps;

static const int mps_signals[3] = {SIGINT, SIGTERM, SIGHUP};

/* The program's path on PATH, or 0. */
static int on_path(const char *prog, char *out, size_t n) {
  const char *path = getenv("PATH");
  for (const char *p = path ? path : ""; *p;) {
    size_t len = strcspn(p, ":");
    if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, p, prog) < n && !access(out, X_OK))
      return 1;
    p += len + (p[len] == ':');
  }
  return 0;
}

/* `echo quit | nvidia-cuda-mps-control` with the daemon's directories; 0
 * if it said so. Async-signal-safe when wait is 0. */
static int mps_quit(int wait) {
  if (!mps.running) return 0;
  mps.running = 0;
  pid_t pid = fork();
  if (pid == 0) {
    execve("/bin/sh", mps.quit_argv, mps.quit_env);
    _exit(127);
  }
  if (pid < 0 || !wait) return pid < 0;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void mps_on_signal(int sig) {
  mps_quit(0);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void mps_at_exit(void) { mps_quit(1); }

/* rm -rf the directory (the pipes and the logs). */
static void mps_remove_dir(void) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/rm", "rm", "-rf", "--", mps.dir, (char *)NULL);
    _exit(127);
  }
  if (pid > 0) waitpid(pid, NULL, 0);
}

/* The daemon started; 0, 1 on failure (said), -1 if there is no
 * nvidia-cuda-mps-control (why in why). */
static int mps_start(char *why, size_t n) {
  static int at_exit;
  if (!on_path(MPS_CONTROL, mps.control, sizeof mps.control)) {
    snprintf(why, n, "no " MPS_CONTROL " on PATH");
    return -1;
  }
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp || strlen(tmp) > 64) tmp = "/tmp"; /* the pipes' socket paths are short */
  snprintf(mps.dir, sizeof mps.dir, "%s/coop-side-mps-XXXXXX", tmp);
  if (!mkdtemp(mps.dir)) {
    fprintf(stderr, SB ": mps: mkdtemp %s: %s\n", mps.dir, strerror(errno));
    return 1;
  }
  char pipe_dir[300], log_dir[300];
  snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", mps.dir);
  snprintf(log_dir, sizeof log_dir, "%s/log", mps.dir);
  if (mkdir(pipe_dir, 0700) || mkdir(log_dir, 0700)) {
    fprintf(stderr, SB ": mps: mkdir under %s: %s\n", mps.dir, strerror(errno));
    mps_remove_dir();
    return 1;
  }
  snprintf(mps.pipe_env, sizeof mps.pipe_env, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
  snprintf(mps.log_env, sizeof mps.log_env, "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
  static char cmd[4200];
  snprintf(cmd, sizeof cmd, "echo quit | '%s'", mps.control);
  mps.quit_argv[0] = "sh";
  mps.quit_argv[1] = "-c";
  mps.quit_argv[2] = cmd;
  mps.quit_argv[3] = NULL;
  mps.quit_env[0] = mps.pipe_env;
  mps.quit_env[1] = mps.log_env;
  mps.quit_env[2] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  mps.quit_env[3] = NULL;

  /* the handlers before the daemon: a signal in between still quits it */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = mps_on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) sigaction(mps_signals[i], &sa, &mps.old[i]);
  if (!at_exit) at_exit = !atexit(mps_at_exit);

  char *env[] = {mps.pipe_env, mps.log_env, NULL};
  char *argv[] = {MPS_CONTROL, "-d", NULL};
  char **envp = side_child_env(env);
  if (!envp) {
    fprintf(stderr, SB ": out of memory\n");
    for (int i = 0; i < 3; i++) sigaction(mps_signals[i], &mps.old[i], NULL);
    mps_remove_dir();
    return 1;
  }
  fflush(NULL);
  mps.running = 1;
  pid_t pid = fork();
  if (pid == 0) {
    execve(mps.control, argv, envp);
    _exit(127);
  }
  free(envp);
  int st = 0;
  if (pid > 0)
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, SB ": mps: '%s -d' failed (%s %d); logs in %s\n", mps.control,
            pid < 0 ? "fork" : "status", pid < 0 ? errno : st, log_dir);
    mps_quit(1); /* in case it started after all */
    for (int i = 0; i < 3; i++) sigaction(mps_signals[i], &mps.old[i], NULL);
    return 1;
  }
  printf(SB ": mps: control daemon started (%s -d), pipes and logs under %s\n", mps.control,
         mps.dir);
  fflush(stdout);
  return 0;
}

/* Quits the daemon, restores the handlers; the directory removed unless
 * keep (a failure: its logs say why). */
static int mps_stop(int keep) {
  int rc = mps_quit(1);
  if (rc) fprintf(stderr, SB ": mps: 'echo quit | %s' failed\n", mps.control);
  for (int i = 0; i < 3; i++) sigaction(mps_signals[i], &mps.old[i], NULL);
  if (keep || rc)
    printf(SB ": mps: logs kept in %s/log\n", mps.dir);
  else
    mps_remove_dir();
  return rc;
}

/* ------------------------------------------------ one row, two clients */

/* The long kernel's runs from its process: "w T0 T1" (its window), "r
 * T_STARTED T_FINISHED KILLS FORKS CHECKED" per run, then "end RC WHY". */
static int long_collect(struct child *c, struct result *x, int64_t timeout_ms) {
  char line[512];
  while (read_line_to(c->data, line, sizeof line, (int)timeout_ms)) {
    long long v[5];
    int chk;
    if (!strncmp(line, "end ", 4)) {
      int rc = atoi(line + 4);
      if (rc) fprintf(stderr, SB ": %s: the long kernel's process failed: %s\n", x->name, line + 6);
      return rc != 0;
    }
    if (sscanf(line, "w %lld %lld", &v[0], &v[1]) == 2) {
      x->t0 = v[0];
      x->t1 = v[1];
    } else if (sscanf(line, "r %lld %lld %lld %lld %d", &v[0], &v[1], &v[2], &v[3], &chk) == 5) {
      struct coop_rt_task_info ti;
      memset(&ti, 0, sizeof ti);
      ti.t_started = v[0];
      ti.t_finished = v[1];
      ti.kills = (unsigned)v[2];
      ti.forks = (unsigned)v[3];
      add_run(x, &ti);
      x->r[x->nr - 1].checked = chk;
    }
  }
  fprintf(stderr, SB ": %s: the long kernel's process did not report\n", x->name);
  return 1;
}

static int mps_row(struct bench *b, int setup, int split) {
  const struct sopts *o = b->o;
  struct result *x = new_result(setup, split ? 10 : 0, split ? "90/10" : "none");
  char *long_env[] = {mps.pipe_env, mps.log_env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=90", NULL};
  char *task_env[] = {mps.pipe_env, mps.log_env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10", NULL};
  if (!split) long_env[2] = task_env[2] = NULL;
  printf(SB ": %s: starting the two client processes\n", x->name);
  fflush(stdout);
  struct child lc, tc;
  memset(&tc, 0, sizeof tc);
  tc.pid = -1;
  int rc = child_exec(&lc, "--long-child", o->argv + 1, long_env, "the long kernel's process");
  if (!rc) rc = child_spawn(&tc, o, &b->p, task_env);
  if (rc) {
    /* a client that cannot start under MPS (no MPS here, a refused
     * server): the setup cannot run, nothing was measured */
    child_end(&tc);
    child_end(&lc);
    return -1;
  }
  {
    say_start(x);
    rc = child_say(&tc, "go\n") || child_say(&lc, "go\n");
    int64_t limit = (int64_t)(o->window_s * 1e3) + (int64_t)(o->min_runs + 1) * o->timeout_s * 1000;
    if (!rc) rc = long_collect(&lc, x, limit);
    rc |= child_say(&tc, "stop\n") || child_collect(&tc, x);
    if (!x->t1) x->t0 = x->t1 = now_ns(); /* no window reported: nothing counted */
    mark_in_run(x);
  }
  rc |= child_end(&tc);
  rc |= child_end(&lc);
  return rc;
}

int setup_mps_run(struct bench *b, int setup) {
  char why[256];
  int r = mps_start(why, sizeof why);
  if (r < 0) {
    say_skip(side_setups[setup].label, why);
    say_skip(side_setups[S_MPS_SPLIT].label, why);
    return 0;
  }
  if (r) return 1;
  int which = setup, rc = mps_row(b, setup, 0);
  if (!rc) rc = mps_row(b, which = S_MPS_SPLIT, 1);
  if (mps_stop(rc != 0) && !rc) rc = 1;
  if (rc < 0) {
    nresults--; /* the row of what did not run: the last one, empty */
    char why2[600];
    snprintf(why2, sizeof why2, "a client process did not start under MPS (above; logs in %s/log)",
             mps.dir);
    say_skip(side_setups[which].label, why2);
    if (which == setup) say_skip(side_setups[S_MPS_SPLIT].label, "not tried");
    return 0;
  }
  return rc;
}

/* -------------------------------------------- the long kernel's client */

int side_long_child_main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, SB " --long-child: internal use only (setup mps)\n");
    return 2;
  }
  int ctrl = atoi(argv[2]);
  FILE *out = fdopen(atoi(argv[3]), "w");
  if (!out) return 1;
  /* the parent's command line again, its own name first */
  argv[3] = argv[0];
  struct sopts o;
  side_defaults(&o);
  side_parse(argc - 3, argv + 3, &o);
  struct bench b;
  memset(&b, 0, sizeof b);
  b.o = &o;
  b.window_ns = (int64_t)(o.window_s * 1e9);
  /* its stdout is the parent's: what it says goes to stderr */
  int so = dup(1);
  if (so >= 0) dup2(2, 1);
  int rc = side_input(&b) != 0;
  if (!rc) rc = side_megakernel(&b, 0);
  if (!rc) rc = side_long_warm_up(&b);
  fflush(stdout);
  if (so >= 0) {
    dup2(so, 1);
    close(so);
  }
  char line[64];
  struct result x;
  memset(&x, 0, sizeof x);
  snprintf(x.name, sizeof x.name, "long kernel (MPS client)");
  if (rc) {
    fprintf(out, "end 1 the long kernel did not start (its messages are above)\n");
  } else {
    fprintf(out, "ready %s\n", coop_rt_device_name(b.rt));
    fflush(out);
    if (!read_line_to(ctrl, line, sizeof line, 600000) || strcmp(line, "go")) {
      rc = 1;
      fprintf(out, "end 1 no go\n");
    } else {
      rc = long_window(&b, &x, NULL);
      fprintf(out, "w %lld %lld\n", (long long)x.t0, (long long)x.t1);
      for (size_t i = 0; i < x.nr; i++)
        fprintf(out, "r %lld %lld %u %u %d\n", (long long)x.r[i].t_started,
                (long long)x.r[i].t_finished, x.r[i].kills, x.r[i].forks, x.r[i].checked);
      fprintf(out, "end %d %s\n", rc, rc ? "a run failed or was wrong (above)" : "ok");
    }
  }
  fclose(out);
  free(x.r);
  if (b.rt && coop_rt_close(b.rt)) rc = 1;
  coop_app_input_free(&b.in);
  return rc;
}
